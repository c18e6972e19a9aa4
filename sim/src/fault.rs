//! Faults on demand: the same faults the test tiers stage, so users can test their
//! alerting and automation against them. A fault of the machine is a change to its sys
//! tree (a link that goes down, a PCIe link that trains at half width, counters reset as a
//! driver reload resets them); a fault of SNAP or of the agent is applied by the running
//! [`Simulation`](crate::Simulation), which holds them.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::host_disk::HostPath;

/// One fault, or the end of one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The netdev goes down (operstate, carrier) and so does the RDMA port on it.
    LinkDown(String),
    /// The netdev and its RDMA port come back.
    LinkUp(String),
    /// Every PCIe link of the machine trains at half its width (x8 of x16).
    PcieDegrade,
    /// Every PCIe link is back at its full width.
    PcieRestore,
    /// Every RDMA port and netdev counter reads 0 again, as after a driver reload.
    CounterReset,
    /// SNAP accepts calls and answers none.
    SnapHang,
    /// SNAP answers again.
    SnapResume,
    /// SNAP restarts and loses everything it was told, as the real one does.
    SnapRestart,
    /// The agent stops (SIGSTOP): it holds its socket and answers nothing.
    AgentStop,
    /// The agent runs again (SIGCONT).
    AgentResume,
    /// The host's reads of its disk take this path from now on (a node started with a
    /// host disk): through the emulation, over the host's own RDMA port to the target,
    /// or to a disk that is not the volume.
    HostPath(HostPath),
    /// The QoS limit SNAP holds on the host disk's volume is enforced on the disk
    /// (`true`, the default) or not, while SNAP still reports it (`false`): a limit that
    /// is set and not held.
    Qos(bool),
}

/// What is wrong with a fault request or its application.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    /// The words name no fault.
    #[error("unknown fault {given:?}; one of: {}", Fault::USAGE.join(", "))]
    Unknown {
        /// What was asked for.
        given: String,
    },
    /// A link fault without an interface, or with one the machine does not have.
    #[error("{fault} needs an interface of this machine ({}), got {given:?}", have.join(", "))]
    NoSuchInterface {
        /// The fault.
        fault: &'static str,
        /// The interface given (empty when none was).
        given: String,
        /// The interfaces the machine has.
        have: Vec<String>,
    },
    /// `host-path` without one of the paths.
    #[error("host-path needs one of {}, got {given:?}", HostPath::ALL.map(|(name, _)| name).join(", "))]
    NoSuchHostPath {
        /// What was given (empty when nothing was).
        given: String,
    },
    /// `qos` without `enforced` or `unenforced`.
    #[error("qos needs enforced or unenforced, got {given:?}")]
    NoSuchQos {
        /// What was given (empty when nothing was).
        given: String,
    },
    /// A file of the tree could not be changed.
    #[error("cannot change {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

impl Fault {
    /// Every fault as it is written on the command line.
    pub const USAGE: [&'static str; 12] = [
        "link-down IFNAME",
        "link-up IFNAME",
        "pcie-degrade",
        "pcie-restore",
        "counter-reset",
        "snap-hang",
        "snap-resume",
        "snap-restart",
        "agent-stop",
        "agent-resume",
        "host-path emulated|host-rdma|local",
        "qos enforced|unenforced",
    ];

    /// The fault `words` name (`["link-down", "p0"]`), checked against the machine under
    /// `root` (an interface must be one it has).
    pub fn parse(words: &[String], root: &Path) -> Result<Self, FaultError> {
        let first = words.first().map(String::as_str).unwrap_or_default();
        let rest = &words[words.len().min(1)..];
        let plain = |fault: Fault| {
            if rest.is_empty() {
                Ok(fault)
            } else {
                Err(FaultError::Unknown {
                    given: words.join(" "),
                })
            }
        };
        match first {
            "link-down" | "link-up" => {
                let name: &'static str = if first == "link-down" {
                    "link-down"
                } else {
                    "link-up"
                };
                let have = interfaces(root);
                let given = rest.first().cloned().unwrap_or_default();
                if rest.len() != 1 || !have.contains(&given) {
                    return Err(FaultError::NoSuchInterface {
                        fault: name,
                        given,
                        have,
                    });
                }
                Ok(if first == "link-down" {
                    Fault::LinkDown(given)
                } else {
                    Fault::LinkUp(given)
                })
            }
            "pcie-degrade" => plain(Fault::PcieDegrade),
            "pcie-restore" => plain(Fault::PcieRestore),
            "counter-reset" => plain(Fault::CounterReset),
            "snap-hang" => plain(Fault::SnapHang),
            "snap-resume" => plain(Fault::SnapResume),
            "snap-restart" => plain(Fault::SnapRestart),
            "agent-stop" => plain(Fault::AgentStop),
            "agent-resume" => plain(Fault::AgentResume),
            "host-path" => match rest {
                [word] => HostPath::parse(word).map(Fault::HostPath).ok_or_else(|| {
                    FaultError::NoSuchHostPath {
                        given: word.clone(),
                    }
                }),
                _ => Err(FaultError::NoSuchHostPath {
                    given: rest.join(" "),
                }),
            },
            "qos" => match rest {
                [word] if word == "enforced" => Ok(Fault::Qos(true)),
                [word] if word == "unenforced" => Ok(Fault::Qos(false)),
                _ => Err(FaultError::NoSuchQos {
                    given: rest.join(" "),
                }),
            },
            _ => Err(FaultError::Unknown {
                given: words.join(" "),
            }),
        }
    }

    /// The fault as words, as [`Fault::parse`] reads them back.
    pub fn words(&self) -> Vec<String> {
        let word = |w: &str| vec![w.to_owned()];
        match self {
            Self::LinkDown(ifname) => vec!["link-down".to_owned(), ifname.clone()],
            Self::LinkUp(ifname) => vec!["link-up".to_owned(), ifname.clone()],
            Self::PcieDegrade => word("pcie-degrade"),
            Self::PcieRestore => word("pcie-restore"),
            Self::CounterReset => word("counter-reset"),
            Self::SnapHang => word("snap-hang"),
            Self::SnapResume => word("snap-resume"),
            Self::SnapRestart => word("snap-restart"),
            Self::AgentStop => word("agent-stop"),
            Self::AgentResume => word("agent-resume"),
            Self::HostPath(path) => vec!["host-path".to_owned(), path.name().to_owned()],
            Self::Qos(enforced) => vec![
                "qos".to_owned(),
                if *enforced { "enforced" } else { "unenforced" }.to_owned(),
            ],
        }
    }

    /// Applies a fault of the machine to its tree under `root`; returns `false` for a
    /// fault of SNAP or of the agent, which the running simulation applies.
    pub fn apply_to_tree(&self, root: &Path) -> Result<bool, FaultError> {
        match self {
            Self::LinkDown(ifname) => set_link(root, ifname, false)?,
            Self::LinkUp(ifname) => set_link(root, ifname, true)?,
            Self::PcieDegrade => set_pcie_width(root, 2)?,
            Self::PcieRestore => set_pcie_width(root, 1)?,
            Self::CounterReset => reset_counters(root)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The netdevs of the machine under `root`, sorted.
fn interfaces(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(root.join("sys/class/net"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

fn write(path: &Path, text: &str) -> Result<(), FaultError> {
    fs::write(path, text).map_err(|source| FaultError::Write {
        path: path.to_owned(),
        source,
    })
}

/// The netdev's operstate and carrier, and the state of every RDMA port whose GID table
/// names the netdev (the RoCE port on it).
fn set_link(root: &Path, ifname: &str, up: bool) -> Result<(), FaultError> {
    let dir = root.join("sys/class/net").join(ifname);
    write(&dir.join("operstate"), if up { "up\n" } else { "down\n" })?;
    write(&dir.join("carrier"), if up { "1\n" } else { "0\n" })?;
    for port in ports_on(root, ifname) {
        let (state, phys) = if up {
            ("4: ACTIVE\n", "5: LinkUp\n")
        } else {
            ("1: DOWN\n", "3: Disabled\n")
        };
        write(&port.join("state"), state)?;
        write(&port.join("phys_state"), phys)?;
    }
    Ok(())
}

/// The RDMA port directories whose `gid_attrs/ndevs/*` name `ifname`.
fn ports_on(root: &Path, ifname: &str) -> Vec<PathBuf> {
    let mut ports = Vec::new();
    let ib = root.join("sys/class/infiniband");
    for device in fs::read_dir(&ib)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
    {
        let port_dir = device.path().join("ports");
        for port in fs::read_dir(&port_dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
        {
            let ndevs = port.path().join("gid_attrs/ndevs");
            let on = fs::read_dir(&ndevs)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .any(|gid| fs::read_to_string(gid.path()).is_ok_and(|name| name.trim() == ifname));
            if on {
                ports.push(port.path());
            }
        }
    }
    ports.sort();
    ports
}

/// Every PCI function with a link trains at `max / divisor` lanes.
fn set_pcie_width(root: &Path, divisor: u32) -> Result<(), FaultError> {
    let devices = root.join("sys/bus/pci/devices");
    for function in fs::read_dir(&devices)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
    {
        let dir = function.path();
        let Some(max) = fs::read_to_string(dir.join("max_link_width"))
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
        else {
            continue;
        };
        write(
            &dir.join("current_link_width"),
            &format!("{}\n", (max / divisor).max(1)),
        )?;
    }
    Ok(())
}

/// Every RDMA port counter (`counters/`, `hw_counters/`) and netdev statistic reads 0.
fn reset_counters(root: &Path) -> Result<(), FaultError> {
    let mut dirs = Vec::new();
    let ib = root.join("sys/class/infiniband");
    for device in fs::read_dir(&ib)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
    {
        for port in fs::read_dir(device.path().join("ports"))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
        {
            dirs.push(port.path().join("counters"));
            dirs.push(port.path().join("hw_counters"));
        }
    }
    for ifname in interfaces(root) {
        dirs.push(root.join("sys/class/net").join(ifname).join("statistics"));
    }
    for dir in dirs {
        for file in fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
        {
            if file.path().is_file() {
                write(&file.path(), "0\n")?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn read(root: &Path, rel: &str) -> String {
        fs::read_to_string(root.join(rel))
            .expect(rel)
            .trim()
            .to_owned()
    }

    #[test]
    fn faults_parse_back_from_their_words_and_bad_ones_name_the_choices() {
        let (_dir, root) = fixture::bluefield3_tempdir();
        for usage in Fault::USAGE {
            let text = usage
                .replace("IFNAME", "p0")
                .replace("emulated|host-rdma|local", "host-rdma")
                .replace("enforced|unenforced", "unenforced");
            let fault = Fault::parse(&words(&text), &root).expect(&text);
            assert_eq!(fault.words(), words(&text));
        }
        let err = Fault::parse(&words("link-down p9"), &root).expect_err("no p9");
        assert!(
            err.to_string().contains("got \"p9\"") && err.to_string().contains("pf0hpf"),
            "{err}"
        );
        let err = Fault::parse(&words("link-down"), &root).expect_err("no interface");
        assert!(err.to_string().contains("needs an interface"), "{err}");
        let err = Fault::parse(&words("melt"), &root).expect_err("unknown");
        assert!(err.to_string().contains("snap-restart"), "{err}");
        let err = Fault::parse(&words("host-path fabric"), &root).expect_err("no such path");
        assert!(
            err.to_string().contains("emulated, host-rdma, local")
                && err.to_string().contains("\"fabric\""),
            "{err}"
        );
        let err = Fault::parse(&words("host-path"), &root).expect_err("no path");
        assert!(err.to_string().contains("host-path needs one of"), "{err}");
        assert_eq!(
            Fault::parse(&words("qos enforced"), &root).expect("enforced"),
            Fault::Qos(true)
        );
        let err = Fault::parse(&words("qos off"), &root).expect_err("no such word");
        assert!(
            err.to_string().contains("enforced or unenforced") && err.to_string().contains("off"),
            "{err}"
        );
        let err = Fault::parse(&words("snap-hang now"), &root).expect_err("extra word");
        assert!(err.to_string().contains("unknown fault"), "{err}");
    }

    #[test]
    fn a_link_goes_down_with_its_rdma_port_and_comes_back() {
        let (_dir, root) = fixture::bluefield3_tempdir();
        let port = "sys/class/infiniband/mlx5_0/ports/1";
        assert!(Fault::LinkDown("p0".into())
            .apply_to_tree(&root)
            .expect("down"));
        assert_eq!(read(&root, "sys/class/net/p0/operstate"), "down");
        assert_eq!(read(&root, "sys/class/net/p0/carrier"), "0");
        assert_eq!(read(&root, &format!("{port}/state")), "1: DOWN");
        // Another interface is untouched.
        assert_eq!(read(&root, "sys/class/net/pf0hpf/operstate"), "up");
        Fault::LinkUp("p0".into()).apply_to_tree(&root).expect("up");
        assert_eq!(read(&root, "sys/class/net/p0/operstate"), "up");
        assert_eq!(read(&root, &format!("{port}/state")), "4: ACTIVE");
    }

    #[test]
    fn pcie_trains_at_half_width_and_counters_reset_to_zero() {
        let (_dir, root) = fixture::bluefield3_tempdir();
        let width = "sys/bus/pci/devices/0000:03:00.0/current_link_width";
        Fault::PcieDegrade.apply_to_tree(&root).expect("degrade");
        assert_eq!(read(&root, width), "8");
        Fault::PcieRestore.apply_to_tree(&root).expect("restore");
        assert_eq!(read(&root, width), "16");
        Fault::CounterReset.apply_to_tree(&root).expect("reset");
        assert_eq!(read(&root, "sys/class/net/p0/statistics/rx_bytes"), "0");
        assert_eq!(
            read(
                &root,
                "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data"
            ),
            "0"
        );
        assert!(!Fault::SnapHang
            .apply_to_tree(&root)
            .expect("not a tree fault"));
    }
}
