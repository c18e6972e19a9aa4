//! [`EthtoolNetlink`]: a blocking `NETLINK_GENERIC` socket with the `ethtool` family
//! resolved, on the request/answer loop shared with the route, RDMA and DCB sockets.
//! Blocking for the reason those are: the kernel answers at once, and the experiment
//! that calls it is synchronous between trials.

use std::fmt;
use std::io;
use std::path::Path;

use netlink_sys::protocols::NETLINK_GENERIC;

use super::abi;
use super::decode::{family_id_from_message, rings_from_message, RingSizes};
use super::error::EthtoolError;
use super::message::{GenlRequest, Ring};
use crate::dcb::ifname_problem;
use crate::netlink::{open_in_netns, KernelSocket, NetlinkError};

/// What a request does, for errors.
const READING: &str = "reading ring sizes";
const SETTING: &str = "setting ring sizes";

/// A socket for ethtool netlink requests in the namespace it was opened in. Reading
/// rings needs no privilege; setting them needs `CAP_NET_ADMIN` (`GENL_UNS_ADMIN_PERM`).
pub struct EthtoolNetlink {
    kernel: KernelSocket,
    family: u16,
}

impl fmt::Debug for EthtoolNetlink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EthtoolNetlink")
            .field("family", &self.family)
            .finish_non_exhaustive()
    }
}

impl EthtoolNetlink {
    /// Opens the socket in the calling thread's namespace and resolves the `ethtool`
    /// family by name through the generic netlink controller.
    pub fn open() -> Result<Self, EthtoolError> {
        let kernel = KernelSocket::open(NETLINK_GENERIC, 4096)
            .map_err(|source| EthtoolError::Family { source })?;
        Self::with_socket(kernel)
    }

    /// [`open`](Self::open) in the network namespace at `path` (`/run/netns/NAME`): the
    /// socket is created by a helper thread there, the caller's thread never moves.
    pub fn open_in_netns(path: impl AsRef<Path>) -> Result<Self, EthtoolError> {
        let kernel = open_in_netns(path.as_ref().to_owned(), |_| {
            KernelSocket::open(NETLINK_GENERIC, 4096)
        })
        .map_err(|source| EthtoolError::Family { source })?;
        Self::with_socket(kernel)
    }

    fn with_socket(mut kernel: KernelSocket) -> Result<Self, EthtoolError> {
        let request = GenlRequest::family_by_name(abi::ETHTOOL_GENL_NAME);
        let ids = kernel
            .exchange(
                "CTRL_CMD_GETFAMILY ethtool",
                |seq| request.encode(seq),
                family_id_from_message,
            )
            .map_err(|source| EthtoolError::Family { source })?;
        let family = ids.into_iter().next().ok_or_else(|| EthtoolError::Family {
            source: NetlinkError::Receive {
                request: "CTRL_CMD_GETFAMILY ethtool".to_owned(),
                source: io::Error::new(io::ErrorKind::InvalidData, "no family in the answer"),
            },
        })?;
        Ok(Self { kernel, family })
    }

    /// The ring sizes of `ifname` and the driver's maxima (`ETHTOOL_MSG_RINGS_GET`, what
    /// `ethtool -g IF` prints).
    pub fn rings(&mut self, ifname: &str) -> Result<RingSizes, EthtoolError> {
        check_name(ifname)?;
        let request = GenlRequest::rings_get(self.family, ifname);
        let name = format!("ETHTOOL_MSG_RINGS_GET {ifname}");
        let answers = self
            .kernel
            .exchange(&name, |seq| request.encode(seq), rings_from_message)
            .map_err(|source| classify(ifname, READING, source))?;
        let unexpected = |detail: String| EthtoolError::Unexpected {
            ifname: ifname.to_owned(),
            detail,
        };
        let mut answers = answers.into_iter();
        match (answers.next(), answers.next()) {
            (Some(answer), None) if answer.family != self.family => Err(unexpected(format!(
                "the answer is of family {}, not ethtool's {}",
                answer.family, self.family
            ))),
            (Some(answer), None) if answer.rings.ifname != ifname => Err(unexpected(format!(
                "the answer describes {}",
                answer.rings.ifname
            ))),
            (Some(answer), None) => Ok(answer.rings),
            (None, _) => Err(unexpected("no rings reply before the ack".to_owned())),
            (Some(_), Some(_)) => Err(unexpected("several rings replies".to_owned())),
        }
    }

    /// Sets one ring of `ifname` to `size` descriptors (`ETHTOOL_MSG_RINGS_SET`, what
    /// `ethtool -G IF rx N` sends). The kernel checks `size` against the driver's maximum
    /// itself (`EINVAL` with an extended ack); callers check first for a better message.
    pub fn set_ring(&mut self, ifname: &str, ring: Ring, size: u32) -> Result<(), EthtoolError> {
        check_name(ifname)?;
        let request = GenlRequest::rings_set(self.family, ifname, ring, size);
        let name = format!("ETHTOOL_MSG_RINGS_SET {ifname} {} {size}", ring.name());
        self.kernel
            .exchange(&name, |seq| request.encode(seq), |_| Ok(None::<()>))
            .map(drop)
            .map_err(|source| classify(ifname, SETTING, source))
    }
}

/// The driver's "no ring operations" (`EOPNOTSUPP`) becomes [`EthtoolError::NotSupported`].
fn classify(ifname: &str, what: &'static str, source: NetlinkError) -> EthtoolError {
    match (&source, source.raw_os_error()) {
        (NetlinkError::Kernel { .. }, Some(errno)) if errno == libc::EOPNOTSUPP => {
            EthtoolError::NotSupported {
                ifname: ifname.to_owned(),
                what,
                source: io::Error::from_raw_os_error(errno),
            }
        }
        _ => EthtoolError::Netlink {
            ifname: ifname.to_owned(),
            what,
            source,
        },
    }
}

fn check_name(ifname: &str) -> Result<(), EthtoolError> {
    match ifname_problem(ifname) {
        Some(reason) => Err(EthtoolError::InvalidName {
            ifname: ifname.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}
