//! Why the serving checks could not start (a check that fails is a problem in the report,
//! not an error): the plan, its serving URL, or the CA certificate to trust.

use std::path::PathBuf;

use super::plan::PlanErrors;

/// Why [`super::serving::check_serving_command`] or [`super::serving::http_client`] has no
/// report: each a usage problem (`dpuctl` exits 2), said with what to correct.
#[derive(Debug, thiserror::Error)]
pub enum ServingError {
    /// The plan could not be loaded.
    #[error(transparent)]
    Plan(#[from] PlanErrors),
    /// Neither the caller nor the plan gives a URL to check.
    #[error(
        "{}: no serving URL; give --url, or serving.url or serving.ingress_host in the plan",
        plan.display()
    )]
    NoUrl {
        /// The plan file.
        plan: PathBuf,
    },
    /// The URL is not http or https.
    #[error("{0:?} is not an http(s) URL")]
    NotHttp(String),
    /// The CA certificate file could not be read.
    #[error("cannot read --ca {}", path.display())]
    ReadCa {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The CA certificate file is not PEM.
    #[error("--ca {}: not a PEM certificate", path.display())]
    NotPem {
        /// The file.
        path: PathBuf,
        /// reqwest's reason.
        #[source]
        source: reqwest::Error,
    },
    /// The CA certificate file holds no certificate.
    #[error("--ca {}: no certificate in it", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
}
