//! The "still to undo" part of a failed change's message: the objects a rollback could not
//! remove, each cause said once. When SNAP is away every step fails alike, and listing the
//! objects one by one with their causes repeated "cannot connect to JSON-RPC socket" once
//! per object after the failure had already said it.

use super::backend::BackendError;
use super::desired::Key;
use crate::errors::error_chain;

/// `left` as "A, B (cause); C (other cause)": the objects grouped by the cause of their
/// failure, in the order they failed, and "(the same cause)" for a group whose cause the
/// failure's own text `said` already holds. The cause is the backend's error below the
/// operation (the operation names differ per object; the reason they failed does not).
pub(super) fn still_to_undo(left: &[(Key, BackendError)], said: &str) -> String {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (key, err) in left {
        let cause = match &err.source {
            Some(source) => error_chain(source.as_ref()),
            None => err.operation.clone(),
        };
        match groups.iter_mut().find(|(c, _)| *c == cause) {
            Some((_, keys)) => keys.push(key.to_string()),
            None => groups.push((cause, vec![key.to_string()])),
        }
    }
    groups
        .into_iter()
        .map(|(cause, keys)| {
            let cause = if !said.is_empty() && said.contains(&cause) {
                "the same cause"
            } else {
                &cause
            };
            format!("{} ({cause})", keys.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::super::backend::FailureKind;
    use super::*;

    fn unreachable(operation: &str) -> BackendError {
        BackendError::new(
            FailureKind::Unavailable,
            operation,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "cannot connect to JSON-RPC socket /run/snap.sock",
            ),
        )
    }

    #[test]
    fn steps_that_failed_alike_share_one_cause_and_a_repeated_cause_is_not_said_again() {
        let said = unreachable("bdev_nvme_get_controllers r0").describe();
        let left = vec![
            (
                Key::Subsystem("nqn.2022-10.io.nvda.nvme:0".to_owned()),
                unreachable("rpc_get_methods"),
            ),
            (
                Key::Remote("r0".to_owned()),
                unreachable("bdev_nvme_get_controllers r0"),
            ),
            (
                Key::Remote("r1".to_owned()),
                BackendError::plain(FailureKind::Busy, "r1 is in use"),
            ),
        ];
        let text = still_to_undo(&left, &said);
        assert_eq!(
            text,
            "subsystems/nqn.2022-10.io.nvda.nvme:0, remoteControllers/r0 (the same cause); \
             remoteControllers/r1 (r1 is in use)"
        );
        assert!(!text.contains("cannot connect"), "{text}");
        // Without a failure text to lean on (a deadline), the cause is said once.
        let text = still_to_undo(&left[..2], "");
        assert_eq!(text.matches("cannot connect").count(), 1, "{text}");
    }
}
