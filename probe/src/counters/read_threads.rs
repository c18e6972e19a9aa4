//! A sampler's own reading threads, started once and kept: a thread started per snapshot
//! costs its stack's mapping, page faults and unmapping every time (a fifth of a large
//! snapshot's time, measured), and on a busy machine a new thread waits for a CPU like
//! any other. Each thread is placed once, when it starts (see [`ReadPlacement`]).
//!
//! Work is handed over by value: a job owns what it reads (the objects' kept
//! directories) and hands it back with the result, so no descriptor is shared between
//! threads and nothing borrowed crosses one.

use std::sync::mpsc;

use nix::sys::resource::{getrusage, UsageWho};

use super::placement::{ReadPlacement, ReadPriority};

/// A job for a reading thread.
type Job = Box<dyn FnOnce() + Send>;

/// One kept thread: the sending half of its job queue. The thread ends when this is
/// dropped (its queue closes).
#[derive(Debug)]
struct Worker {
    jobs: mpsc::Sender<Job>,
}

/// The reading threads of one sampler, started on first use.
#[derive(Debug, Default)]
pub(super) struct ReadThreads {
    placement: ReadPlacement,
    workers: Vec<Worker>,
}

/// A job's result, not yet collected.
#[derive(Debug)]
pub(super) struct Pending<T>(Result<mpsc::Receiver<T>, T>);

impl<T> Pending<T> {
    /// Waits for the job's result.
    pub(super) fn wait(self) -> T {
        match self.0 {
            Ok(receiver) => receiver.recv().unwrap_or_else(|_| {
                // The thread ran the job and died without answering: only a panic in
                // the job does that, and the panic has been printed.
                panic!("a counter-reading thread panicked")
            }),
            Err(done) => done,
        }
    }
}

impl ReadThreads {
    /// Threads that will be placed as `placement` says.
    pub(super) fn new(placement: ReadPlacement) -> Self {
        Self {
            placement,
            workers: Vec::new(),
        }
    }

    /// The placement the threads get.
    pub(super) fn placement(&self) -> &ReadPlacement {
        &self.placement
    }

    /// Runs `job` on reading thread `index` (started now if it is not running yet) and
    /// returns at once; [`Pending::wait`] gives the result. When no thread can be started
    /// (the process's thread limit), the job runs here, before this returns.
    pub(super) fn start<T, F>(&mut self, index: usize, job: F) -> Pending<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        while self.workers.len() <= index {
            match self.spawn() {
                Some(worker) => self.workers.push(worker),
                None => return Pending(Err(job())),
            }
        }
        let (reply, result) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            // The caller may have stopped waiting (it panicked): nothing to do then.
            let _ = reply.send(job());
        });
        match self.workers[index].jobs.send(job) {
            Ok(()) => Pending(Ok(result)),
            Err(mpsc::SendError(job)) => {
                // The thread is gone: replace it next time, and run this job here.
                self.workers.truncate(index);
                job();
                Pending(Ok(result))
            }
        }
    }

    fn spawn(&self) -> Option<Worker> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let placement = self.placement.clone();
        let index = self.workers.len();
        std::thread::Builder::new()
            .name(format!("dpu-counters-{index}"))
            // Reads need little stack: a few buffers and a path for an error message.
            .stack_size(256 * 1024)
            .spawn(move || {
                if let Err(e) = placement.apply_to_current_thread() {
                    // Checked when the placement was configured; a CPU taken offline
                    // since is the remaining way here. Read unplaced rather than not at all.
                    tracing::warn!(error = %e, "counter-reading thread runs unplaced");
                }
                if placement.priority == ReadPriority::Normal {
                    super::mild_nice::raise_for_good();
                }
                while let Ok(job) = queue.recv() {
                    // A job that panics drops its reply, so its waiter panics in turn;
                    // the thread itself goes on serving.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            })
            .ok()
            .map(|_| Worker { jobs })
    }
}

/// The calling thread's involuntary context switches so far (`RUSAGE_THREAD`): when the
/// count grows across a read, another task took the CPU mid-read. `None` where the kernel
/// does not say.
pub(super) fn involuntary_switches() -> Option<i64> {
    getrusage(UsageWho::RUSAGE_THREAD)
        .ok()
        .map(|usage| usage.involuntary_context_switches())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_on_kept_threads_and_hand_their_results_back() {
        let mut threads = ReadThreads::default();
        let here = std::thread::current().id();
        let first = threads.start(0, move || std::thread::current().id());
        let second = threads.start(1, || std::thread::current().id());
        let (a, b) = (first.wait(), second.wait());
        assert_ne!(a, here);
        assert_ne!(a, b, "two threads");
        let again = threads.start(0, || std::thread::current().id()).wait();
        assert_eq!(again, a, "the thread was kept");
        assert_eq!(threads.workers.len(), 2);
    }

    #[test]
    fn a_panicking_job_reaches_its_waiter_and_the_thread_goes_on() {
        let mut threads = ReadThreads::default();
        let lost = threads.start(0, || -> u32 { panic!("boom") });
        let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| lost.wait()));
        assert!(waited.is_err(), "the panic reaches the waiter");
        assert_eq!(threads.start(0, || 7).wait(), 7);
        assert_eq!(threads.workers.len(), 1);
    }

    #[test]
    fn the_thread_count_of_context_switches_is_read() {
        assert!(involuntary_switches().is_some_and(|n| n >= 0));
    }
}
