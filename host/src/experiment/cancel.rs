//! The stop flag of a run: set by the CLI's SIGINT/SIGTERM handler (or a test), read by
//! the runner between trials and by a running measurement, which kills its command.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Set from a signal handler (or a test) to stop a run between trials; the running
/// measurement checks it too and kills its command.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Asks the run to stop.
    pub fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was asked for.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
