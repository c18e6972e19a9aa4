//! The spare descriptors the accept loops ([`crate::edge::accept`]) hold in reserve: when accept
//! fails for lack of descriptors, one spare is closed to make room, and the connection
//! accepted that way holds a [`ReserveSlot`] that reopens the spare when it closes. Apart
//! from the accept loops so that a connection ([`crate::edge::conn`]) can hold its slot without
//! importing the loops that make connections.

use std::fs::File;
use std::sync::{Arc, Mutex, PoisonError};

/// Spare descriptors held to make room when accept fails with EMFILE/ENFILE.
pub(crate) const RESERVE_FDS: usize = 2;

/// Spare descriptors, closed to make room when accept runs out of them.
#[derive(Debug)]
pub(crate) struct FdReserve {
    spare: Mutex<Vec<File>>,
}

impl FdReserve {
    pub(crate) fn new() -> Arc<Self> {
        let reserve = Arc::new(Self {
            spare: Mutex::new(Vec::with_capacity(RESERVE_FDS)),
        });
        reserve.refill();
        reserve
    }

    /// Closes one spare; the returned slot reopens it when dropped.
    pub(crate) fn release(self: &Arc<Self>) -> Option<ReserveSlot> {
        let file = self
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()?;
        drop(file);
        Some(ReserveSlot {
            reserve: Arc::clone(self),
        })
    }

    /// Reopens spares closed earlier (a reopen can fail while descriptors are short).
    pub(crate) fn refill(&self) {
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        while spare.len() < RESERVE_FDS {
            match File::open("/dev/null") {
                Ok(file) => spare.push(file),
                Err(_) => break,
            }
        }
    }
}

/// A spare descriptor lent out; it is reopened when this is dropped.
#[derive(Debug)]
pub(crate) struct ReserveSlot {
    reserve: Arc<FdReserve>,
}

impl Drop for ReserveSlot {
    fn drop(&mut self) {
        self.reserve.refill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_spare_is_reopened_when_its_connection_closes() {
        let reserve = FdReserve::new();
        let count = |r: &FdReserve| r.spare.lock().map(|s| s.len()).unwrap_or(0);
        assert_eq!(count(&reserve), RESERVE_FDS);
        let slot = reserve.release().expect("a spare");
        assert_eq!(count(&reserve), RESERVE_FDS - 1);
        drop(slot);
        assert_eq!(count(&reserve), RESERVE_FDS);
    }
}
