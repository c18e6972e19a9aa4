//! Bounds on the work one `Counters` request can cause, checked before the work is done.
//!
//! A selector is a few bytes on the wire but can expand to every object of a family, and
//! before these bounds 80 KB of repeated `{netdev:{}}` selectors made the agent build a
//! gigabyte-sized answer only for the response cap to refuse it afterwards. So: the
//! selector count is capped before anything is decoded further, repeats are dropped, the
//! answer's size is estimated from the objects each selector expands to (directory
//! listings, no counter read) and refused over the response limit, and once read the
//! snapshot is measured again before it is turned into a second, wire-shaped copy.

use dpu_probe::counters::CounterSelector;
use dpu_probe::snapshot::Snapshot;
use dpu_probe::SysRoot;
use tonic::Status;

use crate::services::status::{invalid, too_much};

/// Most selectors one `SnapshotRequest` or `WatchRequest` may carry. Each selector names
/// one object (`rdma:mlx5_0/1`, `netdev:pf0hpf`) or a whole family (`netdev` for every
/// netdev), so a proof sends a handful and even a per-object list of every port and
/// representor of a fully used BlueField-3 (two uplinks, their host PFs and up to 127 VF
/// representors each) fits; anything larger is what the family selectors are for. The
/// cap bounds per request the names checked and the objects read one by one, and is
/// checked before any selector is looked at.
pub(crate) const MAX_SELECTORS: usize = 256;

/// Refuses a request with more than [`MAX_SELECTORS`] selectors, naming the field and the
/// limit.
pub(crate) fn check_count(count: usize) -> Result<(), Status> {
    if count > MAX_SELECTORS {
        return Err(invalid(
            "selectors",
            format!(
                "{count} selectors, at most {MAX_SELECTORS} per request; an empty selector \
                 or one with empty fields reads every object of its family"
            ),
        ));
    }
    Ok(())
}

/// Drops repeated items, keeping the first of each in order. Quadratic, which is fine
/// for at most [`MAX_SELECTORS`] items and needs nothing but `PartialEq`.
pub(crate) fn dedup<T: PartialEq>(items: &mut Vec<T>) {
    let mut kept: Vec<T> = Vec::with_capacity(items.len());
    for item in items.drain(..) {
        if !kept.contains(&item) {
            kept.push(item);
        }
    }
    *items = kept;
}

/// Upper bounds of one object's share of an encoded `CounterSnapshot`, per object kind.
/// A sample costs about 32 bytes of framing and numbers plus its source, object and
/// counter names (~60 bytes): a netdev has about 30 counters (stats64 and the offload
/// xstats), an RDMA port up to ~130 (IB PMA `counters/` and `hw_counters/` on ConnectX-7),
/// a device's own `hw_counters/` a few dozen, a block device 17. A named object that does
/// not exist costs one source error, well under these.
const NETDEV_BYTES: usize = 4 << 10;
const RDMA_PORT_BYTES: usize = 16 << 10;
const RDMA_DEVICE_BYTES: usize = 4 << 10;
const BLOCK_BYTES: usize = 2 << 10;
/// tc filters per interface are not known before the dump; one interface's share is
/// counted at this much, and the built snapshot is measured before it is sent.
const TC_BYTES: usize = 16 << 10;

/// What a request is expected to produce: objects read and bytes encoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Estimate {
    pub(crate) objects: usize,
    pub(crate) bytes: usize,
}

impl Estimate {
    fn add(&mut self, objects: usize, bytes_each: usize) {
        self.objects = self.objects.saturating_add(objects);
        self.bytes = self
            .bytes
            .saturating_add(objects.saturating_mul(bytes_each));
    }
}

/// Entries of a directory; 0 when it cannot be listed (the probe then reports why).
fn entries(path: &std::path::Path) -> usize {
    std::fs::read_dir(path).map_or(0, Iterator::count)
}

/// The objects the selectors expand to, from directory listings only (no counter file is
/// opened): every netdev under `class/net`, every port of every RDMA device, every block
/// device. An empty list is what the probe reads for it, [`CounterSelector::defaults`].
pub(crate) fn estimate(root: &SysRoot, selectors: &[CounterSelector]) -> Estimate {
    let defaults;
    let selectors = if selectors.is_empty() {
        defaults = CounterSelector::defaults();
        &defaults
    } else {
        selectors
    };
    let ib = root.sys("class/infiniband");
    let ports = |device: &str| entries(&ib.join(device).join("ports"));
    let mut out = Estimate::default();
    for selector in selectors {
        match selector {
            CounterSelector::Netdev { ifname: None } => {
                out.add(entries(&root.sys("class/net")), NETDEV_BYTES);
            }
            CounterSelector::Netdev { ifname: Some(_) } => out.add(1, NETDEV_BYTES),
            CounterSelector::Tc { .. } => out.add(1, TC_BYTES),
            CounterSelector::Block { device: None } => {
                out.add(entries(&root.sys("block")), BLOCK_BYTES);
            }
            CounterSelector::Block { device: Some(_) } => out.add(1, BLOCK_BYTES),
            CounterSelector::Rdma {
                device: Some(_),
                port: Some(_),
            } => out.add(1, RDMA_PORT_BYTES),
            CounterSelector::Rdma {
                device: Some(device),
                port: None,
            } => {
                out.add(1, RDMA_DEVICE_BYTES);
                out.add(ports(device), RDMA_PORT_BYTES);
            }
            CounterSelector::Rdma { device: None, .. } => {
                for device in std::fs::read_dir(&ib).into_iter().flatten().flatten() {
                    out.add(1, RDMA_DEVICE_BYTES);
                    out.add(
                        ports(&device.file_name().to_string_lossy()),
                        RDMA_PORT_BYTES,
                    );
                }
            }
        }
    }
    out
}

/// Refuses, before anything is read, a request whose answer is expected to exceed
/// `limit` bytes (the agent's `max_response_bytes`, which the encoder would enforce only
/// after the whole answer was built).
pub(crate) fn check_estimate(
    root: &SysRoot,
    selectors: &[CounterSelector],
    limit: usize,
) -> Result<(), Status> {
    let estimate = estimate(root, selectors);
    if estimate.bytes > limit {
        return Err(too_much(
            "selectors",
            format!(
                "these selectors expand to {} objects, an answer of about {} MiB, over the \
                 agent's response limit of {} MiB; name fewer objects or narrower families",
                estimate.objects,
                estimate.bytes >> 20,
                limit >> 20
            ),
        ));
    }
    Ok(())
}

/// The encoded size of a snapshot, from its samples and errors, without encoding it.
pub(crate) fn encoded_size(snapshot: &Snapshot) -> usize {
    // Framing, the numeric fields and the source name of one sample or error.
    const FIXED: usize = 48;
    let samples: usize = snapshot
        .samples
        .iter()
        .map(|s| FIXED + s.key.object.len() + s.key.counter.len())
        .sum();
    let errors: usize = snapshot
        .errors
        .iter()
        .map(|e| FIXED + 2 * e.object.len() + e.message.len())
        .sum();
    samples.saturating_add(errors)
}

/// Refuses a snapshot that came out larger than `limit` (tc filters, or objects that
/// appeared since the estimate), before its wire copy is made.
pub(crate) fn check_built(snapshot: &Snapshot, limit: usize) -> Result<(), Status> {
    let size = encoded_size(snapshot);
    if size > limit {
        return Err(too_much(
            "selectors",
            format!(
                "the snapshot holds {} samples, about {} MiB, over the agent's response \
                 limit of {} MiB; name fewer objects",
                snapshot.samples.len(),
                size >> 20,
                limit >> 20
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn netdev(name: Option<&str>) -> CounterSelector {
        CounterSelector::Netdev {
            ifname: name.map(str::to_owned),
        }
    }

    #[test]
    fn the_count_is_capped_naming_the_field_and_the_limit() {
        assert!(check_count(MAX_SELECTORS).is_ok());
        let err = check_count(20_000).expect_err("over the cap");
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(err
            .message()
            .starts_with("selectors: 20000 selectors, at most 256"));
    }

    #[test]
    fn repeats_are_dropped_keeping_order() {
        let mut selectors = vec![
            netdev(None),
            netdev(Some("p0")),
            netdev(None),
            netdev(Some("p0")),
        ];
        dedup(&mut selectors);
        assert_eq!(selectors, [netdev(None), netdev(Some("p0"))]);
    }

    #[test]
    fn families_expand_to_the_objects_listed_and_a_big_answer_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..10 {
            std::fs::create_dir_all(dir.path().join(format!("sys/class/net/eth{i}")))
                .expect("mkdir");
        }
        for port in ["1", "2"] {
            std::fs::create_dir_all(
                dir.path()
                    .join(format!("sys/class/infiniband/mlx5_0/ports/{port}")),
            )
            .expect("mkdir");
        }
        let root = SysRoot::new(dir.path());
        let all = estimate(&root, &[netdev(None)]);
        assert_eq!(
            all,
            Estimate {
                objects: 10,
                bytes: 10 * NETDEV_BYTES
            }
        );
        let rdma = estimate(
            &root,
            &[CounterSelector::Rdma {
                device: None,
                port: None,
            }],
        );
        assert_eq!(rdma.objects, 3);
        // The defaults: every netdev, both ports and the device, no block devices.
        assert_eq!(estimate(&root, &[]).objects, 13);
        assert!(check_estimate(&root, &[netdev(None)], 64 << 20).is_ok());
        let err = check_estimate(&root, &[netdev(None)], 16 << 10).expect_err("too big");
        assert_eq!(err.code(), tonic::Code::ResourceExhausted);
        assert!(
            err.message().starts_with("selectors: "),
            "{}",
            err.message()
        );
        assert!(err.message().contains("10 objects"), "{}", err.message());
    }
}
