//! The default placement's mild priority: reads at nice −10 where the process may.
//!
//! On a busy DPU the pollers (SPDK reactors, OVS-DOCA PMD threads) spin at normal
//! priority, and a reading thread at normal priority waits for them mid-window: the
//! representor-heavy snapshot then took 10x the shell's time instead of 20x, and more
//! than half the snapshots were read again. At nice −10 the scheduler gives a reading
//! thread about nine times a poller's share, so its few milliseconds of reads run almost
//! at once, and the pollers lose next to nothing (docs/counters.md, "The read window").
//! `SCHED_FIFO` stays for `[counters] priority = "high"`.
//!
//! Where the process may not lower a nice value (no `CAP_SYS_NICE`, an `RLIMIT_NICE`
//! that does not allow −10), the reads run at normal priority, and that is logged once:
//! never a silent downgrade, never an error for a default.

use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;

/// The nice value reading threads take by default.
pub const DEFAULT_READ_NICE: libc::c_int = -10;

/// Set once the kernel refused [`DEFAULT_READ_NICE`]: not asked again.
static REFUSED: AtomicBool = AtomicBool::new(false);

/// The calling thread's id as `setpriority` takes it.
fn thread_id() -> Result<libc::id_t, Errno> {
    libc::id_t::try_from(nix::unistd::gettid().as_raw()).map_err(|_| Errno::ESRCH)
}

/// The calling thread's nice value.
pub(super) fn current_nice() -> Result<libc::c_int, Errno> {
    let tid = thread_id()?;
    Errno::clear();
    // SAFETY: getpriority takes plain integers and touches no memory of ours.
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) };
    // -1 is both a nice value and the error return: errno tells them apart.
    if nice == -1 && Errno::last_raw() != 0 {
        return Err(Errno::last());
    }
    Ok(nice)
}

/// Sets the calling thread's nice value (`PRIO_PROCESS` with a thread id applies to that
/// thread only, on Linux).
fn set_nice(nice: libc::c_int) -> Result<(), Errno> {
    let tid = thread_id()?;
    // SAFETY: setpriority takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Errno::last())
    }
}

/// Records a refusal and logs it, the first time only.
fn refused(error: Errno) {
    if !REFUSED.swap(true, Ordering::Relaxed) {
        tracing::info!(
            %error,
            nice = DEFAULT_READ_NICE,
            "counter reads run at normal priority: lowering their nice value was refused (it needs CAP_SYS_NICE or an RLIMIT_NICE that allows it); on a busy DPU give the agent [counters] priority = \"high\" and cpus off the pollers' cores"
        );
    }
}

/// Gives the calling thread [`DEFAULT_READ_NICE`] for good: a sampler's own reading
/// thread, when it starts. Refused: stays as it is (logged once).
pub(super) fn raise_for_good() {
    if REFUSED.load(Ordering::Relaxed) {
        return;
    }
    if let Err(error) = set_nice(DEFAULT_READ_NICE) {
        refused(error);
    }
}

/// [`DEFAULT_READ_NICE`] on the calling thread while it is held, its own nice value again
/// when dropped: for a snapshot read on the caller's thread (an agent's pool thread must
/// not stay raised).
#[derive(Debug)]
pub(super) struct RaisedWhileHeld {
    previous: libc::c_int,
}

impl RaisedWhileHeld {
    /// Raises the calling thread; `None` when it already runs at least that high, or the
    /// kernel refused (logged once, and not asked again).
    pub(super) fn raise() -> Option<Self> {
        if REFUSED.load(Ordering::Relaxed) {
            return None;
        }
        let previous = current_nice().ok()?;
        if previous <= DEFAULT_READ_NICE {
            return None;
        }
        match set_nice(DEFAULT_READ_NICE) {
            Ok(()) => Some(Self { previous }),
            Err(error) => {
                refused(error);
                None
            }
        }
    }
}

impl Drop for RaisedWhileHeld {
    fn drop(&mut self) {
        // Raising a nice value back is always permitted.
        if let Err(error) = set_nice(self.previous) {
            tracing::warn!(%error, nice = self.previous, "cannot restore a thread's nice value after a counter read");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this process may lower a nice value (root or `CAP_SYS_NICE` here); the
    /// tests that need it say so and skip otherwise (a failure under
    /// `DPU_TESTS_STRICT=1`).
    fn may_lower_nice() -> bool {
        let may = std::thread::spawn(|| set_nice(DEFAULT_READ_NICE).is_ok())
            .join()
            .expect("probe thread");
        if !may {
            assert!(
                std::env::var_os("DPU_TESTS_STRICT").is_none(),
                "DPU_TESTS_STRICT: this process may not lower a nice value"
            );
            eprintln!("SKIPPED: this process may not lower a nice value (no CAP_SYS_NICE)");
        }
        may
    }

    #[test]
    fn a_caller_thread_is_raised_while_held_and_restored_after() {
        if !may_lower_nice() {
            return;
        }
        std::thread::spawn(|| {
            set_nice(3).expect("a higher nice value is always allowed");
            {
                let held = RaisedWhileHeld::raise().expect("raised");
                assert_eq!(current_nice(), Ok(DEFAULT_READ_NICE));
                assert_eq!(held.previous, 3);
            }
            assert_eq!(current_nice(), Ok(3), "restored");
            // Already higher than the default: left alone, and restored to itself.
            set_nice(-15).expect("root may");
            assert!(RaisedWhileHeld::raise().is_none());
            assert_eq!(current_nice(), Ok(-15));
        })
        .join()
        .expect("test thread");
    }

    #[test]
    fn the_samplers_threads_read_at_it_and_the_callers_thread_is_left_as_it_was() {
        if !may_lower_nice() {
            return;
        }
        use super::super::read_threads::ReadThreads;
        use super::super::{ReadPlacement, ReadPriority, Sampler};
        let kept =
            |placement: ReadPlacement| ReadThreads::new(placement).start(0, current_nice).wait();
        assert_eq!(kept(ReadPlacement::default()), Ok(DEFAULT_READ_NICE));
        let high = ReadPlacement {
            cpus: None,
            priority: ReadPriority::High,
        };
        assert_ne!(
            kept(high),
            Ok(DEFAULT_READ_NICE),
            "high is not the mild default"
        );
        std::thread::spawn(|| {
            set_nice(2).expect("a higher nice value is always allowed");
            let dir = tempfile::tempdir().expect("tempdir");
            let mut sampler = Sampler::new(crate::SysRoot::new(dir.path()));
            let _ = sampler.snapshot(&[]);
            assert_eq!(current_nice(), Ok(2), "the caller's nice value is restored");
        })
        .join()
        .expect("test thread");
    }

    #[test]
    fn a_reading_thread_keeps_the_default_nice() {
        if !may_lower_nice() {
            return;
        }
        let nice = std::thread::spawn(|| {
            raise_for_good();
            current_nice()
        })
        .join()
        .expect("thread");
        assert_eq!(nice, Ok(DEFAULT_READ_NICE));
    }
}
