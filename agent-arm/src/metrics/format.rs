//! The two text formats a scrape can be answered in, and how a scraper asks for one. A
//! leaf of its own: the scrape, the reading and the layout all name it, and none of them
//! should import another for it.

use prometheus_client::encoding::prometheus_text;

/// The two text formats a scraper may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// OpenMetrics 1.0: `# UNIT`, counters as `_total` samples of a family, `# EOF`.
    OpenMetrics,
    /// Prometheus text 0.0.4, for scrapers and tools that do not ask for OpenMetrics.
    Text,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it names it at all
    /// (Prometheus lists it first), else the text format.
    pub(crate) fn from_accept(accept: Option<&str>) -> Self {
        match accept {
            Some(accept) if accept.contains("application/openmetrics-text") => Self::OpenMetrics,
            _ => Self::Text,
        }
    }

    /// The answer's `Content-Type`.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Self::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Self::Text => prometheus_text::CONTENT_TYPE,
        }
    }
}
