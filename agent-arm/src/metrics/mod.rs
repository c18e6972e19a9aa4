//! `GET /metrics` (docs/metrics.md): every counter a snapshot can read, and the agent's
//! own health, for the Prometheus a platform team already runs.
//!
//! Owns: how samples are named ([`names`]), one scrape's reading ([`scrape`],
//! [`counters`], [`roles`], [`ovs_levels`], [`ethtool_prio`]) in one of two text formats
//! ([`mod@format`]), the encoded names and labels of the counter tree kept across scrapes
//! ([`layout`], [`template`]) and the HTTP listener ([`serve`], with its pre-authentication
//! pool [`preauth`]); the agent's own registry it serves is [`crate::telemetry`]'s. Must not touch: how counters are read (the probe's `Sampler`, its
//! ethtool ioctl and the storage engine do that) or what a gRPC call does.

mod counters;
mod ethtool_prio;
mod format;
mod layout;
mod names;
mod ovs_levels;
mod preauth;
mod roles;
pub(crate) mod scrape;
pub(crate) mod serve;
mod template;
