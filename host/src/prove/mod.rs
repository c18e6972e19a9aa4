//! `dpuctl prove ...`: before/after counter accounting on both sides that proves traffic
//! went through the DPU offload, or says which expectation failed and what that means.
//! The engine ([`crate::accounting`]) is shared by every proof; each proof only chooses its
//! workload and its expectations, and returns a [`ProofReport`] (rendering and the exit
//! code are the caller's).

pub mod binding;
pub mod error;
pub mod html;
pub mod qos;
pub mod qos_judge;
pub mod qos_report;
pub mod report;
pub mod storage;
pub mod switch;
pub mod textfile;
pub mod upcalls;
pub mod witness;

pub use error::{ProveError, QosRefusal};
pub use qos::QosParams;
pub use qos_report::QosReport;
pub use report::{ProofReport, TrialSummary};
pub use storage::{StorageParams, StorageWaiver};
pub use switch::{ForwardingLevel, Receiver, SwitchParams};
