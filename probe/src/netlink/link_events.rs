//! [`LinkEvents`], what a link watch saw since it was last asked. A leaf because the trait
//! that reports it ([`RouteStats::link_events`](super::RouteStats::link_events)), the
//! watch that produces it (`monitor.rs`) and the name map that acts on it
//! ([`LinkNames`](super::LinkNames)) all need it.

/// What [`RouteStats::link_events`](super::RouteStats::link_events) saw since it was last asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkEvents {
    /// Watching, and no link was added, removed, renamed or changed.
    Quiet,
    /// Link notifications arrived: a link was added, removed, renamed or changed state.
    Changed,
    /// Notifications were lost (the queue overflowed, `ENOBUFS`): anything may have
    /// changed.
    Overflowed,
    /// Nobody can tell: the reader does not watch link changes (the trait's default), or
    /// the watch has only just started.
    Unknown,
}
