//! The I/O counters of the agent's storage volumes as probe samples, for both readers of
//! counters: `Counters.Snapshot` and `/metrics`. One function, so both agree on which
//! volumes "every volume" means and on the counters' names and units.

use dpu_probe::snapshot::{Sample, Source, SourceErrorKind, Unit};

use crate::storage::backend::FailureKind;
use crate::storage::StorageEngine;

/// A volume whose counters could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VolumeReadError {
    /// `volumes/{id}`; empty when the volumes could not even be listed.
    pub(crate) object: String,
    /// The backend's answer.
    pub(crate) message: String,
    /// [`SourceErrorKind::NotFound`] only for a volume the backend does not have and the
    /// agent does not manage (a typo); one the agent manages but cannot read now (its
    /// remote controller reconnecting) is unreadable.
    pub(crate) kind: SourceErrorKind,
}

/// The 64-bit I/O counters of the requested volumes (`None`: every volume the agent
/// manages: those backing a live namespace and every volume of a live remote
/// controller), from the storage backend (SPDK `bdev_get_iostat`, or `/sys/block` stats).
pub(crate) async fn read(
    storage: &StorageEngine,
    wanted: &[Option<String>],
) -> (Vec<Sample>, Vec<VolumeReadError>) {
    let (remotes, backing) = {
        let doc = storage.snapshot().await;
        let backing: Vec<String> = doc
            .namespaces
            .values()
            .flat_map(|m| m.values())
            .filter_map(|e| e.live().map(|ns| ns.volume.clone()))
            .collect();
        (doc.remotes.clone(), backing)
    };
    let mut ids: Vec<String> = wanted.iter().flatten().cloned().collect();
    let (mut samples, mut errors) = (Vec::new(), Vec::new());
    if wanted.iter().any(Option::is_none) {
        ids.extend(backing.iter().cloned());
        match storage.volumes().await {
            Ok(all) => ids.extend(all.into_iter().map(|v| v.id).filter(|id| {
                remotes.iter().any(|(remote, e)| {
                    e.live().is_some() && crate::storage::desired::belongs_to(id, remote)
                })
            })),
            // "Every volume" with the backend down is not "no volumes": an empty answer
            // would read as no I/O.
            Err(e) => errors.push(VolumeReadError {
                object: String::new(),
                message: format!("cannot list the volumes: {}", e.describe()),
                kind: SourceErrorKind::Unreadable,
            }),
        }
    }
    ids.sort();
    ids.dedup();
    for id in ids {
        let object = format!("volumes/{id}");
        match storage.volume_io(&id).await {
            Ok(io) => {
                let sample = |counter: &'static str, value: u64, unit: Unit| {
                    Sample::cumulative(Source::Volume, object.clone(), counter, value, unit)
                };
                samples.extend([
                    sample("bytes_read", io.bytes_read, Unit::Bytes),
                    sample("read_ops", io.read_ops, Unit::Operations),
                    sample("bytes_written", io.bytes_written, Unit::Bytes),
                    sample("write_ops", io.write_ops, Unit::Operations),
                ]);
            }
            Err(e) => errors.push(VolumeReadError {
                message: format!("volume {object}: {}", e.describe()),
                object,
                kind: error_kind(e.kind, managed(&id, &remotes, &backing)),
            }),
        }
    }
    (samples, errors)
}

/// Whether the agent manages volume `id`: it backs a live namespace, or belongs to a
/// remote controller of the desired document (connected or not).
fn managed<T>(
    id: &str,
    remotes: &std::collections::BTreeMap<String, T>,
    backing: &[String],
) -> bool {
    backing.iter().any(|b| b == id)
        || remotes
            .keys()
            .any(|remote| crate::storage::desired::belongs_to(id, remote))
}

/// What a failed volume read is: not found only when the backend has no such volume and
/// the agent does not manage one by that id.
fn error_kind(failure: FailureKind, managed: bool) -> SourceErrorKind {
    if failure == FailureKind::NotFound && !managed {
        SourceErrorKind::NotFound
    } else {
        SourceErrorKind::Unreadable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unmanaged_volume_the_backend_lacks_is_not_found() {
        assert_eq!(
            error_kind(FailureKind::NotFound, false),
            SourceErrorKind::NotFound
        );
        assert_eq!(
            error_kind(FailureKind::NotFound, true),
            SourceErrorKind::Unreadable,
            "a managed remote's volume while it reconnects"
        );
        assert_eq!(
            error_kind(FailureKind::Unavailable, false),
            SourceErrorKind::Unreadable
        );
        let remotes: std::collections::BTreeMap<String, ()> = [("r0".to_owned(), ())].into();
        assert!(managed("r0n1", &remotes, &[]));
        assert!(managed("Malloc0", &remotes, &["Malloc0".to_owned()]));
        assert!(!managed("r9n1", &remotes, &[]));
    }
}
