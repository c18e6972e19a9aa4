//! [`measure`] hands the proof its own errors back unchanged: a failed reading as the
//! observer's error, a failed trial as the workload's, each with its cause.

use std::num::NonZeroU32;
use std::time::{Duration, SystemTime};

use dpu_probe::snapshot::{ReadReport, Snapshot};

use super::*;

/// Why a reading failed: which one.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("reading {0} failed")]
struct ReadingFailed(usize);

/// A proof's own error, as a proof's [`crate::prove::ProveError`] is.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum ProofFailed {
    #[error(transparent)]
    Reading(#[from] ReadingFailed),
    #[error("trial {0} failed")]
    Trial(usize),
}

/// Empty readings, the `fail_at`-th (from 0) failing.
struct Readings {
    taken: usize,
    fail_at: Option<usize>,
}

fn empty() -> Snapshot {
    Snapshot {
        taken_at: SystemTime::UNIX_EPOCH,
        monotonic_start: Duration::ZERO,
        monotonic_end: Duration::ZERO,
        boot_id: None,
        samples: Vec::new(),
        errors: Vec::new(),
        read: ReadReport::default(),
    }
}

impl Observe for Readings {
    type Error = ReadingFailed;

    async fn observe(&mut self) -> Result<Observation, ReadingFailed> {
        let i = self.taken;
        self.taken += 1;
        if self.fail_at == Some(i) {
            return Err(ReadingFailed(i));
        }
        Ok(Observation {
            host: empty(),
            dpu: empty(),
            far_end: None,
        })
    }
}

const NO_WAIT: Timing = Timing {
    idle: Duration::ZERO,
    settle: Duration::ZERO,
};

async fn run(fail_reading: Option<usize>, fail_trial: Option<usize>) -> Result<usize, ProofFailed> {
    let mut readings = Readings {
        taken: 0,
        fail_at: fail_reading,
    };
    let three = NonZeroU32::new(3).expect("3");
    let trials = measure(
        &mut readings,
        NO_WAIT,
        async { Ok::<(), ProofFailed>(()) },
        three,
        |i| async move {
            if fail_trial == Some(i) {
                Err(ProofFailed::Trial(i))
            } else {
                Ok(i)
            }
        },
    )
    .await?;
    Ok(trials.runs().len())
}

#[tokio::test]
async fn a_failed_reading_comes_back_as_the_observers_error() {
    // Reading 2 is the first trial's before-reading.
    assert_eq!(
        run(Some(2), None).await,
        Err(ProofFailed::Reading(ReadingFailed(2)))
    );
    // Control: nothing failing runs all three trials.
    assert_eq!(run(None, None).await, Ok(3));
}

#[tokio::test]
async fn a_failed_trial_comes_back_as_the_workloads_error() {
    assert_eq!(run(None, Some(1)).await, Err(ProofFailed::Trial(1)));
}
