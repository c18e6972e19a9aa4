//! How a run reaches an agent: a foundation every product stands on (proofs, the
//! checklist, the fleet, the demo), never a product itself.
//!
//! [`connect`] dials a Unix socket or TCP (with mutual TLS when given the files);
//! [`session`] holds one run's [`session::AgentConnection`] (one channel, TLS read once) and
//! the machine it reads; [`health`] is what `dpu health` and `fleet health` judge;
//! [`dial_cause`] says why a dial failed in terms an operator can act on.

pub mod connect;
pub mod dial_cause;
pub mod health;
pub mod session;
