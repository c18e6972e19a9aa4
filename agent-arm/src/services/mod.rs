//! The gRPC services. Each handler follows one order: trace (a span per call, opened by
//! the server's `trace_fn`), authorize (the policy gate arrives with the security work;
//! today every caller that can reach a listener is trusted, which is why Unix sockets are
//! created 0660), delegate to a backend or reader, and map the error to a `Status`.

mod convert;
mod counters;
mod fabric;
mod inventory;
pub(crate) mod status;
mod storage;
mod switch;

pub(crate) use counters::CountersService;
pub(crate) use inventory::InventoryService;
pub(crate) use storage::StorageService;
pub(crate) use switch::SwitchService;
