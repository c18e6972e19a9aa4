//! [`SnapError`] and its classification into what the agent maps to API errors.

use std::path::PathBuf;

/// Why a SNAP/SPDK call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapError {
    /// The JSON-RPC call failed (socket missing, refused, timed out, or an error reply).
    #[error("SNAP/SPDK JSON-RPC on {} failed", socket.display())]
    Rpc {
        /// The socket that was called.
        socket: PathBuf,
        /// The transport or server error.
        #[source]
        source: dpu_jsonrpc::Error,
    },
    /// The request asks for something this SNAP dialect cannot carry (no key for it in its
    /// methods), so nothing was sent: better refused than silently dropped.
    #[error("{dialect} cannot {what}")]
    Unsupported {
        /// `DOCA SNAP 4`, `mlnx_snap 3`.
        dialect: &'static str,
        /// What it cannot do, e.g. "set a namespace NGUID".
        what: String,
    },
}

/// What kind of refusal or failure a [`SnapError`] is, decided from SNAP's own code and
/// message, so callers can map it (e.g. to gRPC `AlreadyExists`, `NotFound`,
/// `FailedPrecondition`, `Unavailable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapErrorKind {
    /// The object (bdev, subsystem, namespace, controller) already exists or is already
    /// attached.
    AlreadyExists,
    /// The named object does not exist.
    NotFound,
    /// The object is in the wrong state: busy, in use, or not suspended.
    Busy,
    /// The peer does not implement the method (-32601): wrong dialect or version.
    MethodNotFound,
    /// The object exists with other settings (SPDK's -22 "A controller named X already
    /// exists, but uses a different subnqn"): not the object asked for, so never "done".
    Conflict,
    /// The peer rejected the params (-32602).
    InvalidParams,
    /// The peer could not decode the params (SPDK's -32603 "spdk_json_decode_object
    /// failed"): a key or type this SNAP/SPDK release does not take, i.e. a version mismatch
    /// between the agent and the peer, not a server fault.
    ParamsRejected,
    /// SNAP was unreachable, the connection broke, or the call ran past its deadline.
    Transient,
    /// The dialect cannot carry what was asked ([`SnapError::Unsupported`]); nothing was
    /// sent.
    Unsupported,
    /// Anything else (other server refusals, undecodable results, protocol errors).
    Other,
}

impl SnapError {
    /// True when SNAP may simply not be up (yet) and a retry could succeed; the agent reports
    /// such errors as the backend being unavailable.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Rpc { source, .. } => source.is_transient(),
            Self::Unsupported { .. } => false,
        }
    }

    /// The JSON-RPC error code SNAP answered with, if it refused the call.
    pub fn code(&self) -> Option<i64> {
        match self {
            Self::Rpc {
                source: dpu_jsonrpc::Error::Rpc { code, .. },
                ..
            } => Some(*code),
            _ => None,
        }
    }

    /// SNAP's own error message, if it refused the call.
    pub fn message(&self) -> Option<&str> {
        match self {
            Self::Rpc {
                source: dpu_jsonrpc::Error::Rpc { message, .. },
                ..
            } => Some(message),
            _ => None,
        }
    }

    /// Classifies the failure; message matching covers SPDK's and SNAP's usual wording and
    /// the negative errno codes (-EEXIST, -ENOENT/-ENODEV, -EBUSY) SPDK sometimes sends.
    pub fn kind(&self) -> SnapErrorKind {
        if self.is_transient() {
            return SnapErrorKind::Transient;
        }
        if matches!(self, Self::Unsupported { .. }) {
            return SnapErrorKind::Unsupported;
        }
        let (Some(code), Some(message)) = (self.code(), self.message()) else {
            return SnapErrorKind::Other;
        };
        let message = message.to_ascii_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| message.contains(n));
        if code == -32601 {
            SnapErrorKind::MethodNotFound
        } else if code == -32603 && has(&["decode"]) {
            SnapErrorKind::ParamsRejected
        } else if has(&["already exists, but", "already exists but"]) {
            SnapErrorKind::Conflict
        } else if code == -114
            || has(&[
                "already exist",
                "already attached",
                "file exists",
                "duplicate",
            ])
            || code == -17
        {
            SnapErrorKind::AlreadyExists
        } else if has(&["not found", "does not exist", "no such", "not exist"])
            || code == -2
            || code == -19
        {
            SnapErrorKind::NotFound
        } else if has(&["busy", "not suspended", "in use", "still attached"]) || code == -16 {
            SnapErrorKind::Busy
        } else if code == -32602 {
            SnapErrorKind::InvalidParams
        } else {
            SnapErrorKind::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(code: i64, message: &str) -> SnapError {
        SnapError::Rpc {
            socket: PathBuf::from("/s"),
            source: dpu_jsonrpc::Error::Rpc {
                method: "m".to_owned(),
                code,
                message: message.to_owned(),
                data: None,
            },
        }
    }

    #[test]
    fn classifies_by_message_and_code() {
        let kind = |c, m| refused(c, m).kind();
        assert_eq!(
            kind(-32602, "Bdev Nvme0 already exists"),
            SnapErrorKind::AlreadyExists
        );
        assert_eq!(kind(-17, "File exists"), SnapErrorKind::AlreadyExists);
        assert_eq!(kind(-32602, "bdev foo not found"), SnapErrorKind::NotFound);
        assert_eq!(kind(-19, "No such device"), SnapErrorKind::NotFound);
        assert_eq!(kind(-1, "Controller is not suspended"), SnapErrorKind::Busy);
        assert_eq!(
            kind(-32601, "Method not found"),
            SnapErrorKind::MethodNotFound
        );
        assert_eq!(
            kind(-32602, "Invalid parameters"),
            SnapErrorKind::InvalidParams
        );
        assert_eq!(kind(-1, "weird"), SnapErrorKind::Other);
        // SPDK v24.01's own texts (module/bdev/nvme/bdev_nvme_rpc.c, lib/bdev/bdev_rpc.c).
        assert_eq!(
            kind(-32603, "spdk_json_decode_object failed"),
            SnapErrorKind::ParamsRejected
        );
        assert_eq!(
            kind(
                -114,
                "A controller named r0 already exists with the specified network path\n"
            ),
            SnapErrorKind::AlreadyExists
        );
        assert_eq!(
            kind(
                -22,
                "A controller named r0 already exists, but uses a different subnqn (nqn.x)\n"
            ),
            SnapErrorKind::Conflict
        );
        assert_eq!(
            kind(22, "Controller r0 does not exist"),
            SnapErrorKind::NotFound
        );
        assert_eq!(refused(-1, "weird").message(), Some("weird"));
        assert_eq!(refused(-1, "weird").code(), Some(-1));
    }
}
