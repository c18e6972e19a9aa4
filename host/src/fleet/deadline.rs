//! How long a fleet command may take on each node: the fleet's policy, in one place.
//! A node that hangs must not hold the report, and a proof that moves real traffic needs
//! far longer than a call that only reads: so each kind of work has its own default, and
//! a proof's runner waits a little past the deadline the host's own dpuctl enforces, so a
//! proof stopped there reads as "ran past its deadline" rather than as a lost node.

use std::time::Duration;

use super::runner::RunOptions;

/// The default deadline of a proof on a host: it moves real traffic.
pub const PROOF_DEADLINE: Duration = Duration::from_secs(600);

/// The default deadline of an A/B/A experiment on a host: every trial of every phase,
/// each a benchmark run (5 trials × 3 phases of a 20 s perftest run is 5 minutes; an
/// nccl-tests sweep takes longer).
pub const EXPERIMENT_DEADLINE: Duration = Duration::from_secs(3600);

/// How long past a proof's deadline the runner waits for the host's dpuctl, which stops
/// the proof at the deadline itself, to say so.
pub const PROOF_GRACE: Duration = Duration::from_secs(15);

/// The default deadline of read-only calls: this many times the per-call timeout (dial,
/// one RPC, a retry's worth).
pub const CALLS_PER_DEADLINE: u32 = 3;

/// The default per-node probe timeout of the RoCE pair tests.
pub const PAIRS_PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// What a fleet command does on each node, which decides its default deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Agent calls that only read (health, info, check, counters).
    Calls,
    /// A proof run on the host itself, moving traffic.
    Proof,
    /// An A/B/A experiment run on the host itself: many benchmark runs.
    Experiment,
}

/// Why run options cannot be formed; the field named as the library knows it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunOptionsError {
    /// `parallel` was 0.
    #[error("parallel must be at least 1")]
    NoParallelism,
    /// `deadline` was zero.
    #[error("the deadline must be positive")]
    ZeroDeadline,
}

impl RunOptions {
    /// The options of a fleet command doing `workload` on each node: `parallel` nodes at
    /// once, `deadline` per node (default: [`PROOF_DEADLINE`] for a proof,
    /// [`EXPERIMENT_DEADLINE`] for an experiment,
    /// [`CALLS_PER_DEADLINE`] call timeouts for calls), each call bounded by
    /// `call_timeout` but never past the deadline.
    pub fn for_workload(
        workload: Workload,
        parallel: usize,
        deadline: Option<Duration>,
        call_timeout: Duration,
    ) -> Result<Self, RunOptionsError> {
        if parallel == 0 {
            return Err(RunOptionsError::NoParallelism);
        }
        let deadline = match (deadline, workload) {
            (Some(d), _) if d.is_zero() => return Err(RunOptionsError::ZeroDeadline),
            (Some(d), _) => d,
            (None, Workload::Proof) => PROOF_DEADLINE,
            (None, Workload::Experiment) => EXPERIMENT_DEADLINE,
            (None, Workload::Calls) => call_timeout * CALLS_PER_DEADLINE,
        };
        Ok(Self {
            parallel,
            deadline,
            call_timeout: call_timeout.min(deadline),
        })
    }

    /// The runner's options for a proof whose host enforces [`Self::deadline`] itself:
    /// the same, with [`PROOF_GRACE`] more for the host to report the stop.
    pub fn with_proof_grace(&self) -> Self {
        Self {
            deadline: self.deadline + PROOF_GRACE,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALL: Duration = Duration::from_secs(5);

    #[test]
    fn each_workload_has_its_default_deadline() {
        let calls = RunOptions::for_workload(Workload::Calls, 8, None, CALL).expect("ok");
        assert_eq!(calls.deadline, CALL * 3);
        assert_eq!(calls.call_timeout, CALL);
        let proof = RunOptions::for_workload(Workload::Proof, 8, None, CALL).expect("ok");
        assert_eq!(proof.deadline, PROOF_DEADLINE);
        assert_eq!(
            proof.with_proof_grace().deadline,
            PROOF_DEADLINE + PROOF_GRACE
        );
    }

    #[test]
    fn a_call_never_outlives_a_short_deadline() {
        let short = Duration::from_secs(2);
        let options = RunOptions::for_workload(Workload::Calls, 1, Some(short), CALL).expect("ok");
        assert_eq!((options.deadline, options.call_timeout), (short, short));
    }

    #[test]
    fn no_parallelism_and_a_zero_deadline_are_refused() {
        assert_eq!(
            RunOptions::for_workload(Workload::Calls, 0, None, CALL).err(),
            Some(RunOptionsError::NoParallelism)
        );
        assert_eq!(
            RunOptions::for_workload(Workload::Proof, 4, Some(Duration::ZERO), CALL).err(),
            Some(RunOptionsError::ZeroDeadline)
        );
    }
}
