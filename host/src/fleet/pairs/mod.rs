//! RoCE between host pairs of the fleet (`dpuctl fleet roce pairs`): a [`plan`] of pairs
//! (ring, all-pairs, within or across a label's groups) in rounds where no host is in two
//! tests at once; each host's RDMA port and line rate read once over ssh ([`host_port`]); each
//! run made by `dpuctl roce perf` on its client host over ssh ([`remote_perf`],
//! `crate::remote::watched`), so its path is decided by the client's RDMA counters through the one
//! accounting engine; a [`judge`]ment of each run against the line rate; and the
//! [`isolate`]ion of slow nodes from slow links, all in one [`report`].

pub mod host_port;
pub mod isolate;
pub mod judge;
pub mod params;
pub mod pattern;
pub mod plan;
pub mod remote_perf;
pub mod report;
pub mod run;

pub use run::run;
