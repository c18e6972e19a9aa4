//! [`DcbNetlink`]: a blocking `NETLINK_ROUTE` socket for DCB requests, and the one
//! exchange they go through (send with a fresh sequence number, read whole datagrams until
//! the ack, decode the answer), on the reply reader shared with the route and RDMA
//! sockets. Blocking for the reason those are: callers gather facts in `spawn_blocking`,
//! and the kernel answers at once.

use std::fmt;

use netlink_sys::protocols::NETLINK_ROUTE;

use super::config::DcbConfig;
use super::decode::dcb_config_from_message;
use super::error::DcbError;
use super::request::{validate_ifname, IeeeGetRequest};
use crate::netlink::{KernelSocket, NetlinkAccess, NetlinkError};
use crate::SysRoot;

/// A socket for DCB requests in the network namespace it was opened in. Reading needs no
/// privilege: the kernel's `dcb_doit` asks for `CAP_NET_ADMIN` only on `RTM_SETDCB`
/// ([`set_ieee_pfc`](Self::set_ieee_pfc), the one set this crate sends).
pub struct DcbNetlink {
    pub(super) kernel: KernelSocket,
}

impl fmt::Debug for DcbNetlink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DcbNetlink")
            .field("kernel", &self.kernel)
            .finish_non_exhaustive()
    }
}

impl DcbNetlink {
    /// Opens and binds the socket in the calling thread's namespace.
    pub fn open() -> Result<Self, NetlinkError> {
        Self::open_via(&NetlinkAccess::Live)
    }

    /// A socket on `access`: the live kernel ([`open`](Self::open)) or a capture's
    /// recording.
    pub fn open_via(access: &NetlinkAccess) -> Result<Self, NetlinkError> {
        Ok(Self {
            kernel: KernelSocket::open_via(access, NETLINK_ROUTE, 8 * 1024)?,
        })
    }

    /// The IEEE 802.1Qaz configuration of `ifname` (`DCB_CMD_IEEE_GET`): ETS, PFC and the
    /// APP table. An interface without DCB is [`DcbError::NotSupported`].
    pub fn ieee_config(&mut self, ifname: &str) -> Result<DcbConfig, DcbError> {
        let request = IeeeGetRequest::new(ifname)?;
        let name = format!("RTM_GETDCB DCB_CMD_IEEE_GET of {ifname}");
        let answers = self
            .exchange(&name, &request)
            .map_err(|source| classify(ifname, source))?;
        let mut answers = answers.into_iter();
        match (answers.next(), answers.next()) {
            (Some(config), None) if config.ifname == ifname => Ok(config),
            (Some(config), None) => Err(DcbError::Unexpected {
                ifname: ifname.to_owned(),
                detail: format!("the answer describes {}", config.ifname),
            }),
            (None, _) => Err(DcbError::Unexpected {
                ifname: ifname.to_owned(),
                detail: "no RTM_GETDCB answer before the ack".to_owned(),
            }),
            (Some(_), Some(_)) => Err(DcbError::Unexpected {
                ifname: ifname.to_owned(),
                detail: "several RTM_GETDCB answers".to_owned(),
            }),
        }
    }

    fn exchange(
        &mut self,
        request: &str,
        message: &IeeeGetRequest,
    ) -> Result<Vec<DcbConfig>, NetlinkError> {
        self.kernel
            .exchange(request, |seq| message.encode(seq), dcb_config_from_message)
    }
}

/// The kernel's "no DCB here" answers become [`DcbError::NotSupported`]: `EOPNOTSUPP`
/// (the device has no `dcbnl_ops`) and `EINVAL` (the driver refuses the command).
fn classify(ifname: &str, source: NetlinkError) -> DcbError {
    let not_supported = matches!(
        source.raw_os_error(),
        Some(libc::EOPNOTSUPP) | Some(libc::EINVAL)
    );
    match (not_supported, &source) {
        (true, NetlinkError::Kernel { .. }) => DcbError::NotSupported {
            ifname: ifname.to_owned(),
            source: std::io::Error::from_raw_os_error(source.raw_os_error().unwrap_or_default()),
        },
        _ => DcbError::Netlink {
            ifname: ifname.to_owned(),
            source,
        },
    }
}

/// The DCB configuration of `ifname` when `root` is the live system (`/`) or a capture
/// with a netlink recording (answered from it); otherwise [`DcbError::NotLive`], because
/// a fixture tree or a mounted image has no driver to ask (the rule `rdma::netlink`
/// follows for hardware counters). The name is validated first.
pub fn read_dcb_config(root: &SysRoot, ifname: &str) -> Result<DcbConfig, DcbError> {
    validate_ifname(ifname)?;
    let access = NetlinkAccess::for_root(root);
    if !access.answers_requests() {
        return Err(DcbError::NotLive {
            root: root.path().display().to_string(),
        });
    }
    let mut socket = DcbNetlink::open_via(&access).map_err(|source| DcbError::Netlink {
        ifname: ifname.to_owned(),
        source,
    })?;
    socket.ieee_config(ifname)
}
