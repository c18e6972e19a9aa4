//! The lines `dpuctl` prints for an error that ends the run: the error with its causes on
//! one line, each said once, and for an agent that could not be dialled one hint line that
//! says what to do next.

use dpu_host::agent::connect::ConnectError;
use dpu_host::agent::dial_cause::DialCause;
use dpu_host::agent::session::AgentError;
use dpu_host::param::ParamError;
use dpu_host::prove::QosRefusal;

mod param_flags;

/// The stderr lines for `err`: `dpuctl: error: …` and, when the cause has an obvious next
/// step, `dpuctl: hint: …`. The chain is [`dpu_probe::error_chain`], which leaves out a
/// cause whose text the line already says (tonic and hyper repeat their inner error's text
/// in their own, which printed "No such file or directory" twice).
pub(crate) fn error_lines(err: &anyhow::Error) -> Vec<String> {
    let mut lines = vec![format!("dpuctl: error: {}", with_flags(err))];
    if let Some(cause) = dial_cause(err) {
        lines.push(format!("dpuctl: hint: {}", hint(&cause)));
    }
    if let Some(command) = command_to_run(err) {
        lines.push(format!("dpuctl: hint: {command}"));
    }
    lines
}

/// The dpuctl command that does what the library says is missing, for the errors whose
/// next step is one (the library says what is missing; only dpuctl knows its commands).
fn command_to_run(err: &anyhow::Error) -> Option<String> {
    err.chain()
        .find_map(|link| match link.downcast_ref::<QosRefusal>()? {
            QosRefusal::NoLimit { volume } => Some(format!(
                "set one with `dpuctl storage qos {volume} --read-mbps N`"
            )),
            _ => None,
        })
}

/// The chain's text with a library [`ParamError`]'s sentence, wherever it is in the
/// chain, said with the flags the user typed (`block size` → `--bs`,
/// [`param_flags`]).
fn with_flags(err: &anyhow::Error) -> String {
    let mut text = dpu_probe::error_chain(err.as_ref());
    for param in err
        .chain()
        .filter_map(|link| link.downcast_ref::<ParamError>())
    {
        text = text.replacen(&param.to_string(), &param_flags::render(param), 1);
    }
    text
}

/// The dial cause anywhere in the chain: a session's [`AgentError`] or a one-off
/// [`ConnectError`], under any context a command added.
fn dial_cause(err: &anyhow::Error) -> Option<DialCause> {
    err.chain().find_map(|link| {
        link.downcast_ref::<AgentError>()
            .and_then(AgentError::dial_cause)
            .or_else(|| {
                link.downcast_ref::<ConnectError>()
                    .and_then(ConnectError::cause)
            })
    })
}

/// One sentence: what is wrong and what to do about it.
fn hint(cause: &DialCause) -> String {
    match cause {
        DialCause::SocketMissing { socket } => format!(
            "there is no socket at {}: start dpu-agent (on the DPU, or here for the lab), \
             or point --agent or DPUCTL_AGENT at the socket it listens on",
            socket.display()
        ),
        DialCause::PermissionDenied {
            socket,
            group: Some(group),
        } => format!(
            "{} refuses this user: its permissions let its owner and the group {group:?} \
             connect; add this user to {group:?} (then log in again) or run as a member",
            socket.display()
        ),
        DialCause::PermissionDenied {
            socket,
            group: None,
        } => format!(
            "{} refuses this user: check the socket's permissions and the group it belongs \
             to (ls -l), and that this user is a member",
            socket.display()
        ),
        DialCause::Refused { agent } if agent.starts_with("unix:") => format!(
            "nothing is listening at {agent}: the socket is left from an agent that \
             stopped; start dpu-agent, or point --agent or DPUCTL_AGENT at the socket it \
             listens on"
        ),
        DialCause::Refused { agent } => format!(
            "nothing is listening at {agent}: the agent is not running there, or it \
             listens on another address or port (--agent, DPUCTL_AGENT)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn each_dial_cause_has_its_next_step() {
        let socket = PathBuf::from("/run/dpu-agent/dpu-agent.sock");
        let missing = hint(&DialCause::SocketMissing {
            socket: socket.clone(),
        });
        assert!(missing.contains("start dpu-agent"), "{missing}");
        assert!(missing.contains("--agent") && missing.contains("DPUCTL_AGENT"));
        let denied = hint(&DialCause::PermissionDenied {
            socket: socket.clone(),
            group: Some("dpu-agent".to_owned()),
        });
        assert!(denied.contains("group \"dpu-agent\""), "{denied}");
        let denied = hint(&DialCause::PermissionDenied {
            socket,
            group: None,
        });
        assert!(denied.contains("permissions"), "{denied}");
        let refused = hint(&DialCause::Refused {
            agent: "tcp:10.0.0.2:50051".to_owned(),
        });
        assert!(refused.contains("nothing is listening at tcp:10.0.0.2:50051"));
    }

    #[test]
    fn a_parameter_error_is_said_with_flags_under_any_context() {
        use dpu_host::param::Field;
        let param = ParamError::new(Field::Trials)
            .field(Field::Trials)
            .text(" must be 1 to 8, not 9");
        let err = anyhow::Error::from(param).context("cannot prove storage");
        let lines = error_lines(&err);
        assert_eq!(
            lines,
            ["dpuctl: error: cannot prove storage: --trials must be 1 to 8, not 9"]
        );
        // Control: an error that only looks like one is left as it is.
        let plain = anyhow::anyhow!("trials must be 1 to 8, not 9");
        assert_eq!(
            error_lines(&plain),
            ["dpuctl: error: trials must be 1 to 8, not 9"]
        );
    }

    #[test]
    fn a_proof_error_whose_next_step_is_a_parameter_says_its_flag() {
        use dpu_host::param::Field;
        use dpu_host::prove::{binding::BindError, ProveError};
        // As the binding says it: several disks, the next step is to name one as the device.
        let err = anyhow::Error::from(ProveError::from(BindError::Several {
            volume: "v".to_owned(),
            disks: "nvme0n1, nvme1n1".to_owned(),
            next: ParamError::new(Field::Device)
                .text("pass one with ")
                .field(Field::Device),
        }));
        assert_eq!(
            error_lines(&err),
            [
                "dpuctl: error: several disks on this host carry volume v's identity \
              (nvme0n1, nvme1n1): pass one with --device"
            ]
        );
    }

    #[test]
    fn a_volume_without_a_limit_gets_the_command_that_sets_one() {
        use dpu_host::prove::ProveError;
        let err = anyhow::Error::from(ProveError::from(QosRefusal::NoLimit {
            volume: "vol0".to_owned(),
        }));
        let lines = error_lines(&err);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            lines[1],
            "dpuctl: hint: set one with `dpuctl storage qos vol0 --read-mbps N`"
        );
        // Control: another refusal has no command to suggest.
        let err = anyhow::Error::from(ProveError::from(QosRefusal::NotReported {
            volume: "vol0".to_owned(),
        }));
        assert_eq!(error_lines(&err).len(), 1);
    }

    #[tokio::test]
    async fn an_unreachable_agent_is_said_once_with_a_hint() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("nobody.sock");
        let agent = dpu_host::agent::session::AgentConnection::new(
            dpu_proto::Endpoint::Unix(socket.clone()),
            None,
            std::time::Duration::from_secs(2),
        );
        let err = anyhow::Error::from(agent.channel().await.expect_err("no agent"))
            .context("cannot list the bridges");
        let lines = error_lines(&err);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with(&format!(
                "dpuctl: error: cannot list the bridges: cannot reach the agent at unix:{}",
                socket.display()
            )),
            "{lines:?}"
        );
        assert_eq!(
            lines[0].matches("No such file or directory").count(),
            1,
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("dpuctl: hint: there is no socket at"),
            "{lines:?}"
        );
        // An error with no dial in it gets no hint.
        assert_eq!(error_lines(&anyhow::anyhow!("bad flag")).len(), 1);
    }
}
