//! Where a sampler's reads run: a CPU set and a scheduling class for its reading threads.
//!
//! A BlueField is never idle: SNAP's SPDK reactors and OVS-DOCA's PMD threads busy-poll
//! the cores they own. A reading thread that shares a core with one of them is switched
//! out mid-window at the scheduler's whim, and the snapshot's skew then holds a stranger's
//! time slice. Giving the reads a core the pollers do not own (`[counters] cpus`) and a
//! class that is not preempted by them (`[counters] priority = "high"`: `SCHED_FIFO`, or
//! nice −20 where real-time is not permitted) keeps the window short under load. Both are
//! checked where they are configured, so a placement the kernel refuses is an error at
//! start, not a silent no-op.

use std::fmt;
use std::str::FromStr;

use nix::errno::Errno;
use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// The scheduling class of the reading threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReadPriority {
    /// The default time-sharing class, at nice −10 where the process may lower a nice
    /// value ([`DEFAULT_READ_NICE`](super::DEFAULT_READ_NICE)), as it is otherwise.
    #[default]
    Normal,
    /// Not preempted by time-sharing tasks: `SCHED_FIFO` at the lowest real-time
    /// priority, else nice −20.
    High,
}

impl FromStr for ReadPriority {
    type Err = PlacementError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "normal" => Ok(Self::Normal),
            "high" => Ok(Self::High),
            other => Err(PlacementError::Priority {
                text: other.to_owned(),
            }),
        }
    }
}

impl fmt::Display for ReadPriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Normal => "normal",
            Self::High => "high",
        })
    }
}

/// Most CPU numbers a list may name: what the kernel's `cpu_set_t` holds.
const MAX_CPU: usize = CpuSet::count() - 1;

/// CPUs in the kernel's cpulist syntax (`0`, `0-3`, `0,2,4-5`), as `taskset -c` and
/// `isolcpus=` write them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(Vec<usize>);

impl CpuList {
    /// The CPU numbers, ascending, each once.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }
}

impl FromStr for CpuList {
    type Err = PlacementError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: String| PlacementError::CpuList {
            text: text.to_owned(),
            reason,
        };
        let number = |part: &str| -> Result<usize, PlacementError> {
            let cpu: usize = part
                .trim()
                .parse()
                .map_err(|_| invalid(format!("{part:?} is not a CPU number")))?;
            if cpu > MAX_CPU {
                return Err(invalid(format!("CPU {cpu} is above {MAX_CPU}")));
            }
            Ok(cpu)
        };
        let mut cpus = Vec::new();
        for part in text.split(',') {
            match part.split_once('-') {
                Some((first, last)) => {
                    let (first, last) = (number(first)?, number(last)?);
                    if first > last {
                        return Err(invalid(format!("the range {part:?} runs backwards")));
                    }
                    cpus.extend(first..=last);
                }
                None => cpus.push(number(part)?),
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(Self(cpus))
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text: Vec<String> = self.0.iter().map(usize::to_string).collect();
        f.write_str(&text.join(","))
    }
}

/// Where the reading threads run. The default (every CPU, normal priority) changes
/// nothing: reads then run on the calling thread as well.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadPlacement {
    /// The CPUs the reading threads may run on; `None` for whatever the process may use.
    pub cpus: Option<CpuList>,
    /// Their scheduling class.
    pub priority: ReadPriority,
}

/// A placement that cannot be written or applied.
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// The CPU list does not parse.
    #[error("invalid CPU list {text:?} (expected the cpulist form, e.g. \"0\", \"0-3\" or \"0,2\"): {reason}")]
    CpuList {
        /// The list as written.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Not a priority name.
    #[error("invalid read priority {text:?}: expected \"normal\" or \"high\"")]
    Priority {
        /// The name as written.
        text: String,
    },
    /// The kernel refused the CPU set (none of them online, or outside the process's
    /// cgroup cpuset).
    #[error("cannot run the counter reads on CPUs {cpus}: sched_setaffinity refused them (are they online and in this process's cpuset?)")]
    Affinity {
        /// The CPUs asked for.
        cpus: CpuList,
        /// The kernel's answer.
        #[source]
        source: Errno,
    },
    /// Neither real-time scheduling nor a negative nice value is permitted.
    #[error("cannot give the counter reads a high priority: SCHED_FIFO was refused ({fifo}) and so was nice -20; the agent needs CAP_SYS_NICE (or a RLIMIT_RTPRIO/RLIMIT_NICE that allows it), or [counters] priority = \"normal\"")]
    HighPriority {
        /// Why `SCHED_FIFO` was refused.
        fifo: Errno,
        /// Why nice −20 was refused.
        #[source]
        nice: Errno,
    },
}

impl ReadPlacement {
    /// Whether this placement changes nothing.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Applies the placement to the calling thread. Used by each reading thread when it
    /// starts, and by [`ReadPlacement::check`].
    pub fn apply_to_current_thread(&self) -> Result<(), PlacementError> {
        if let Some(cpus) = &self.cpus {
            let mut set = CpuSet::new();
            for &cpu in cpus.cpus() {
                set.set(cpu).map_err(|source| PlacementError::Affinity {
                    cpus: cpus.clone(),
                    source,
                })?;
            }
            // Pid 0 is the calling thread.
            sched_setaffinity(Pid::from_raw(0), &set).map_err(|source| {
                PlacementError::Affinity {
                    cpus: cpus.clone(),
                    source,
                }
            })?;
        }
        if self.priority == ReadPriority::High {
            if let Err(fifo) = set_fifo() {
                set_nice(-20).map_err(|nice| PlacementError::HighPriority { fifo, nice })?;
            }
        }
        Ok(())
    }

    /// Checks that the kernel accepts this placement, on a scratch thread so the caller's
    /// own thread is left as it was: what a configuration is checked with at start.
    pub fn check(&self) -> Result<(), PlacementError> {
        let placement = self.clone();
        std::thread::scope(|scope| {
            scope
                .spawn(move || placement.apply_to_current_thread())
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

/// `SCHED_FIFO` at priority 1 for the calling thread: above every time-sharing task,
/// below every other real-time one (the kernel's own threads, an RT reactor).
fn set_fifo() -> Result<(), Errno> {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: `param` is a valid, initialised sched_param that outlives the call; pid 0
    // names the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Errno::last())
    }
}

/// Sets the calling thread's nice value (on Linux, `PRIO_PROCESS` with a thread id
/// applies to that thread only).
fn set_nice(nice: libc::c_int) -> Result<(), Errno> {
    let tid = nix::unistd::gettid().as_raw();
    let tid = libc::id_t::try_from(tid).map_err(|_| Errno::ESRCH)?;
    // SAFETY: setpriority takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Errno::last())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_like_the_kernels_and_bad_ones_name_the_problem() {
        let list: CpuList = "4-5,0,2,4".parse().expect("list");
        assert_eq!(list.cpus(), [0, 2, 4, 5]);
        assert_eq!(list.to_string(), "0,2,4,5");
        for (text, wanted) in [
            ("", "\"\" is not a CPU number"),
            ("a", "\"a\" is not a CPU number"),
            ("3-1", "runs backwards"),
            ("0,", "\"\" is not a CPU number"),
            ("99999", "is above"),
        ] {
            let err = text.parse::<CpuList>().expect_err(text).to_string();
            assert!(err.contains(wanted), "{text:?}: {err}");
            assert!(err.contains(&format!("{text:?}")), "names the list: {err}");
        }
    }

    #[test]
    fn priorities_are_named_and_unknown_ones_refused() {
        assert_eq!(
            "high".parse::<ReadPriority>().expect("high"),
            ReadPriority::High
        );
        assert_eq!(
            "normal".parse::<ReadPriority>().expect("normal"),
            ReadPriority::Normal
        );
        let err = "realtime".parse::<ReadPriority>().expect_err("unknown");
        assert!(err.to_string().contains("\"realtime\""), "{err}");
        assert!(ReadPlacement::default().is_default());
    }

    #[test]
    fn the_default_placement_applies_everywhere_and_a_cpu_the_machine_lacks_is_refused() {
        ReadPlacement::default().check().expect("nothing to change");
        let cpu0 = ReadPlacement {
            cpus: Some("0".parse().expect("list")),
            priority: ReadPriority::Normal,
        };
        cpu0.check()
            .expect("CPU 0 exists and this process may use it");
        let absent = ReadPlacement {
            cpus: Some(MAX_CPU.to_string().parse().expect("list")),
            priority: ReadPriority::Normal,
        };
        let err = absent.check().expect_err("no such CPU online");
        assert!(
            matches!(err, PlacementError::Affinity { .. }),
            "{err}: {err:?}"
        );
    }

    #[test]
    fn high_priority_is_applied_or_refused_clearly() {
        let high = ReadPlacement {
            cpus: None,
            priority: ReadPriority::High,
        };
        // As root (CI) it is applied; without CAP_SYS_NICE and an RLIMIT_RTPRIO of 0 it
        // must be refused with the remedy named, never ignored.
        match high.check() {
            Ok(()) => {}
            Err(e) => assert!(e.to_string().contains("CAP_SYS_NICE"), "{e}"),
        }
    }
}
