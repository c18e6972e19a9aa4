//! Which machine a simulation builds: the sys tree of each node, by name.

use std::fmt;
use std::io;
use std::path::Path;
use std::str::FromStr;

use crate::fixture;

/// A simulated machine. Each is one of the fixture trees the test tiers already read
/// (`docs/reference/rdma-bluefield.md` formats), so what the simulator shows is what the
/// tests hold the agent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// The Arm side of a BlueField-3 in DPU mode: uplink `p0`, host-PF representor
    /// `pf0hpf`, VF representor `pf0vf0`, RDMA `mlx5_0`, NVMe `nvme0n1`.
    #[default]
    Bluefield3,
    /// The Arm side of a BlueField-2 in DPU mode: uplinks `p0` and `p1`, host-PF
    /// representors `pf0hpf` and `pf1hpf`, RDMA `mlx5_0` and `mlx5_1` (a ConnectX-6 Dx,
    /// `15b3:a2d6`), NVMe `nvme0n1`: for automation that must handle the older card's two
    /// ports and its model name.
    Bluefield2,
    /// The x86 GPU server a BlueField-3 sits in (host side): PFs `ens1f0np0` and
    /// `ens1f1np1`, RDMA `mlx5_0` (active) and `mlx5_1` (down), a ConnectX-7, the SNAP
    /// NVMe function.
    GpuServer,
}

impl Profile {
    /// Every profile, by the name `--profile` takes.
    pub const ALL: [(&'static str, Profile); 3] = [
        ("bluefield3", Profile::Bluefield3),
        ("bluefield2", Profile::Bluefield2),
        ("gpu-server", Profile::GpuServer),
    ];

    /// The name `--profile` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bluefield3 => "bluefield3",
            Self::Bluefield2 => "bluefield2",
            Self::GpuServer => "gpu-server",
        }
    }

    /// Writes this machine's tree under `root` (`sys/`, `proc/`, `etc/`).
    pub fn build(self, root: &Path) -> io::Result<()> {
        match self {
            Self::Bluefield3 => fixture::bluefield3_dpu(root),
            Self::Bluefield2 => fixture::bluefield2_dpu(root),
            Self::GpuServer => fixture::bluefield3_host(root),
        }
    }

    /// The RDMA port whose counters a read through a simulated volume moves (NVMe-oF
    /// reads arrive on it): device and port. On every profile the first port of the first
    /// device (a BlueField-2's `mlx5_1` is the second uplink, not storage's).
    pub(crate) fn storage_port(self) -> (&'static str, u32) {
        ("mlx5_0", 1)
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--profile` that names no simulated machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no simulated machine is called {given:?}; one of: {}", known())]
pub struct UnknownProfile {
    /// What was asked for.
    pub given: String,
}

fn known() -> String {
    Profile::ALL
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Profile {
    type Err = UnknownProfile;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Profile::ALL
            .iter()
            .find(|(name, _)| *name == s)
            .map(|(_, profile)| *profile)
            .ok_or_else(|| UnknownProfile {
                given: s.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_by_name_and_an_unknown_one_lists_the_known() {
        for (name, profile) in Profile::ALL {
            assert_eq!(name.parse::<Profile>(), Ok(profile));
            assert_eq!(profile.to_string(), name);
        }
        let err = "bluefield4".parse::<Profile>().expect_err("not simulated");
        assert_eq!(
            err.to_string(),
            "no simulated machine is called \"bluefield4\"; one of: bluefield3, bluefield2, gpu-server"
        );
    }
}
