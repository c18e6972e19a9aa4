//! Why a proof could not be run or finished, typed, so a caller can tell a parameter
//! (fix the command) from an agent that failed (look at the DPU) from a read or send that
//! failed (look at this host), and every cause is kept as the error's source.
//!
//! A proof that ran and judged returns a report with a verdict, never one of these.

use std::io;
use std::net::Ipv4Addr;

use dpu_proto::names::NameError;

use super::binding::BindError;
use crate::agent::session::AgentError;
use crate::param::ParamError;
use crate::storage_read::ReadError;

/// Why a proof (`storage::run`, `switch::run`, `qos::run`) stopped without a verdict.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    /// A parameter that cannot be run, named by its field; checked before anything is
    /// dialled or read.
    #[error("{0}")]
    Param(#[from] ParamError),
    /// An interface name the proof would pass on that is not one.
    #[error("{0}")]
    Name(#[from] NameError),
    /// The agent could not be reached, or a call failed (the error says which call and
    /// keeps the agent's status).
    #[error("{0}")]
    Agent(#[from] AgentError),
    /// The far end's agent, the second witness, could not be reached.
    #[error("the far end's agent at {endpoint}")]
    FarEnd {
        /// The far end's agent as given.
        endpoint: String,
        /// Why it could not be reached.
        #[source]
        source: AgentError,
    },
    /// The host's device could not be bound to the DPU volume: reading it would count
    /// something else. Boxed: it is the largest of these, and every proof step returns one.
    #[error("{0}")]
    Bind(#[source] Box<BindError>),
    /// The agent has no remote-controller volume to prove with.
    #[error("the agent has no remote-controller volume: attach or expose one first")]
    NoVolume,
    /// The volume asked for is not among the agent's.
    #[error("{volume}: the agent has no such volume (it has: {known})")]
    NoSuchVolume {
        /// The volume asked for, as `volumes/NAME`.
        volume: String,
        /// The agent's volumes, comma-separated.
        known: String,
    },
    /// No volume was named and the agent has several.
    #[error("the agent has several volumes ({known}): name one")]
    SeveralVolumes {
        /// The agent's volumes, comma-separated.
        known: String,
    },
    /// The read of the host's device failed (the error says the path and keeps the
    /// operating system's error).
    #[error("{0}")]
    Read(#[from] ReadError),
    /// The blocking thread the read ran on panicked or was cancelled.
    #[error("the read thread failed")]
    ReadThread(#[source] tokio::task::JoinError),
    /// The workload's UDP socket could not be opened.
    #[error("cannot open a UDP socket")]
    Socket(#[source] io::Error),
    /// The workload's UDP socket could not be connected to the peer.
    #[error("no route to {peer}")]
    NoRoute {
        /// The peer the packets go to.
        peer: Ipv4Addr,
        /// The connect's error.
        #[source]
        source: io::Error,
    },
    /// The socket's own address (the flows' 5-tuple) could not be read.
    #[error("cannot read the UDP socket's own address")]
    LocalAddress(#[source] io::Error),
    /// A packet of the workload could not be sent.
    #[error("sending packet {sent} to {peer}")]
    Send {
        /// How many had been sent.
        sent: u64,
        /// The peer.
        peer: Ipv4Addr,
        /// The send's error.
        #[source]
        source: io::Error,
    },
    /// The QoS proof: a refusal about the volume's limits, before anything is read.
    #[error("{0}")]
    Qos(#[from] QosRefusal),
    /// The QoS proof was interrupted (Ctrl-C, SIGTERM).
    #[error("interrupted ({why})")]
    Interrupted {
        /// What interrupted it.
        why: String,
    },
    /// The QoS proof stopped after it had lifted the limit, which was set back.
    #[error(
        "the proof stopped; the QoS limit of {volume} it had lifted for {seconds:.1} s was \
         set back to {original}"
    )]
    StoppedAfterLift {
        /// The volume.
        volume: String,
        /// How long the limit was lifted.
        seconds: f64,
        /// The limit set back, as SPDK's keys.
        original: String,
        /// Why the proof stopped.
        #[source]
        source: Box<ProveError>,
    },
    /// The QoS proof lifted the limit and could not set it back: the user must.
    #[error(
        "{volume}: the QoS limit was lifted by the proof and could NOT be set back: set it \
         with `dpuctl storage qos {volume} ...` ({original})"
    )]
    NotSetBack {
        /// The volume.
        volume: String,
        /// The limit to set back, as SPDK's keys.
        original: String,
        /// Why setting it back failed.
        #[source]
        source: Box<ProveError>,
    },
}

impl From<BindError> for ProveError {
    fn from(err: BindError) -> Self {
        ProveError::Bind(Box::new(err))
    }
}

/// Why the QoS proof refuses a volume's limits, in the agent's own terms.
#[derive(Debug, thiserror::Error)]
pub enum QosRefusal {
    /// Nothing to prove.
    #[error(
        "{volume} has no QoS limit in the agent's desired state: nothing to prove (set a \
         read limit on it first)"
    )]
    NoLimit {
        /// The volume.
        volume: String,
    },
    /// The backend has no QoS, so nothing in force to measure against.
    #[error(
        "the agent does not report the limits in force on {volume} (its backend has no \
         QoS, as the kernel backend has none): nothing to measure against"
    )]
    NotReported {
        /// The volume.
        volume: String,
    },
    /// The limit in force is not the one asked for.
    #[error(
        "{volume}: the limit in force ({applied}) is not the one asked for ({desired}): the \
         agent has not applied it, or it was changed on the backend behind the agent's back; \
         reconcile first"
    )]
    Differs {
        /// The volume.
        volume: String,
        /// In force, as SPDK's keys.
        applied: String,
        /// Asked for, as SPDK's keys.
        desired: String,
    },
    /// Reads cannot prove a write limit.
    #[error(
        "{volume} has only a write limit ({limits}): the QoS proof reads, and a write limit \
         cannot be proven by reads"
    )]
    WriteOnly {
        /// The volume.
        volume: String,
        /// Its limits, as SPDK's keys.
        limits: String,
    },
    /// A changed limit did not show in force in time.
    #[error(
        "{volume}: the agent did not report {wanted} in force within {within_secs} s (it \
         reports {reported})"
    )]
    NotApplied {
        /// The volume.
        volume: String,
        /// The limit set, as SPDK's keys.
        wanted: String,
        /// How long it was given.
        within_secs: u64,
        /// What the agent reported last.
        reported: String,
    },
    /// After the proof, the original limit is not in force.
    #[error("{volume}: after the proof the agent reports {reported} in force, not the original {original}")]
    NotRestored {
        /// The volume.
        volume: String,
        /// What the agent reports.
        reported: String,
        /// The limit that should be in force.
        original: String,
    },
}
