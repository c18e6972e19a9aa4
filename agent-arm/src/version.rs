//! The agent's version string, reported by `--version` and by `Inventory.GetSystem`.

/// Crate version; the release process stamps the same number into the package.
pub(crate) const AGENT_VERSION: &str = env!("CARGO_PKG_VERSION");
