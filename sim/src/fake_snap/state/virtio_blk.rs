//! virtio-blk emulation in both dialects: a PCI virtio block device on one of the table's
//! virtio-blk functions (`emulation_type` `VBLK`, as NVIDIA's live-upgrade script filters
//! `emulation_function_list`), backed by one bdev.
//!
//! - mlnx_snap 3: `controller_virtio_blk_create` / `_delete` and `controller_list` entries of
//!   `type` `virtio_blk`, with the keys snap-rdma's own `rpc/snap_rpc.py` sends and the answers
//!   its method pages show (`"VblkEmu0"`, `true`).
//! - DOCA SNAP 4: `virtio_blk_controller_create` / `_destroy` / `_list`. **UNVERIFIED**: keys are
//!   the CLI flags of NVIDIA's live-upgrade and lab scripts, the list entry is what the
//!   live-upgrade script reads, and the create answer (the name, as SNAP 3 answers) is a guess.
//!
//! Refusals (UNVERIFIED wording and codes, as for NVMe): an unknown bdev (-19), a bdev another
//! controller or a namespace uses (-16: SPDK lets one module claim a bdev), a function that is
//! not a virtio-blk one (-19) or is in use (-17), a taken name (-17).

use serde_json::{json, Value};

use super::decode::{opt, req, spdk_decode, Args, Ty};
use super::nvme::{find_in, is_vblk, Function};
use super::{
    err, Config, FakePf, FakeSnapState, FakeVirtioBlk, RpcError, EBUSY, EEXIST, EINVAL, ENODEV,
};

/// Queues when `num_queues` is not given (UNVERIFIED, SNAP's default is unpublished).
const DEFAULT_QUEUES: u32 = 4;
/// Entries per queue when none is given (UNVERIFIED).
const DEFAULT_QUEUE_SIZE: u32 = 128;
/// `size_max` / `seg_max` the list reports when none is given (UNVERIFIED).
const DEFAULT_SIZE_MAX: u32 = 65536;
const DEFAULT_SEG_MAX: u32 = 32;

/// Every virtio-blk function of the table, PFs and their VFs, labelled `vblk-…` so they
/// never share a label with the NVMe functions of the same index.
pub(super) fn vblk_functions(table: &[FakePf]) -> Vec<Function> {
    let mut out = Vec::new();
    for pf in table.iter().filter(|pf| is_vblk(&pf.emulation_type)) {
        out.push(Function {
            label: format!("vblk-pf{}", pf.pf_index),
            pci_bdf: pf.pci_bdf.clone(),
            vhca_id: pf.vhca_id,
            vuid: pf.vuid.clone(),
        });
        for vf in &pf.vfs {
            out.push(Function {
                label: format!("vblk-pf{}vf{}", pf.pf_index, vf.vf_index),
                pci_bdf: vf.pci_bdf.clone(),
                vhca_id: vf.vhca_id,
                vuid: vf.vuid.clone(),
            });
        }
    }
    out
}

impl FakePf {
    /// A static virtio-blk PF with two VFs, for tables that emulate virtio-blk too:
    /// `03:00.{4 + pf}`, VFs `03:{0e + pf}.{0,1}`, VUIDs `MT2334XZ0001VBLKS0D0F{4 + pf}`
    /// (`…VF1`, `…VF2`). UNVERIFIED: made up in the shape of the NVMe table.
    pub fn virtio_blk(pf_index: u32) -> Self {
        let vuid = format!("MT2334XZ0001VBLKS0D0F{}", pf_index + 4);
        Self {
            hotplugged: false,
            emulation_type: "VBLK".to_owned(),
            pf_index,
            pci_bdf: format!("03:00.{}", pf_index + 4),
            vhca_id: 10 + pf_index,
            vfs: (0..2_u32)
                .map(|vf| super::FakeVf {
                    vf_index: vf,
                    pci_bdf: format!("03:{:02x}.{vf}", 0x0e + pf_index),
                    vhca_id: 120 + pf_index * 2 + vf,
                    vuid: format!("{vuid}VF{}", vf + 1),
                })
                .collect(),
            vuid,
        }
    }
}

impl FakeSnapState {
    /// The virtio-blk controller using `function`, if any.
    pub(super) fn vblk_user_of(&self, function: &str) -> Option<&str> {
        self.virtio_blk
            .iter()
            .find(|(_, c)| c.function == function)
            .map(|(id, _)| id.as_str())
    }

    /// Refuses a bdev that does not exist or that a controller or namespace already uses.
    fn claim_bdev(&self, bdev: &str) -> Result<(), RpcError> {
        if !self.bdevs.contains_key(bdev) {
            return err(ENODEV, format!("bdev {bdev} not found: No such device"));
        }
        if let Some((name, _)) = self.virtio_blk.iter().find(|(_, c)| c.bdev == bdev) {
            return err(
                EBUSY,
                format!("bdev {bdev} is in use by virtio-blk controller {name}"),
            );
        }
        let by_namespace = self.subsystems.iter().find_map(|(nqn, s)| {
            s.namespaces
                .iter()
                .find(|(_, ns)| ns.bdev == bdev)
                .map(|(nsid, _)| format!("{nqn} namespace {nsid}"))
        });
        match by_namespace {
            Some(user) => err(EBUSY, format!("bdev {bdev} is in use by {user}")),
            None => Ok(()),
        }
    }

    /// The virtio-blk function `a` addresses, free.
    fn free_vblk_function(&self, config: &Config, a: &Args<'_>) -> Result<Function, RpcError> {
        let function = find_in(vblk_functions(&config.functions), "virtio-blk", a)?;
        if let Some(user) = self.vblk_user_of(&function.label) {
            return err(
                EEXIST,
                format!(
                    "A controller already exists on function {} ({}): {user}",
                    function.label, function.pci_bdf
                ),
            );
        }
        Ok(function)
    }

    /// SNAP 4 `virtio_blk_controller_create {ctrl?, pf_id?, vf_id?, pci_bdf?, vuid?,
    /// vhca_id?, bdev?, num_queues?, queue_size?, size_max?, seg_max?, serial?, suspended?,
    /// force_in_order?, admin_q?, live_update_listener?, read_only?, vblk_id?}` → the name.
    /// Without `ctrl` SNAP names it `VblkCtrl<n>`. All UNVERIFIED (module doc).
    pub(super) fn vblk_create4(
        &mut self,
        config: &Config,
        p: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let a = spdk_decode(
            p,
            &[
                opt("ctrl", Ty::Str),
                opt("pf_id", Ty::U32),
                opt("vf_id", Ty::U32),
                opt("pci_bdf", Ty::Str),
                opt("vuid", Ty::Str),
                opt("vhca_id", Ty::U32),
                opt("bdev", Ty::Str),
                opt("num_queues", Ty::U32),
                opt("queue_size", Ty::U32),
                opt("size_max", Ty::U32),
                opt("seg_max", Ty::U32),
                opt("serial", Ty::Str),
                opt("suspended", Ty::Bool),
                opt("force_in_order", Ty::Bool),
                opt("admin_q", Ty::Bool),
                opt("live_update_listener", Ty::Bool),
                opt("read_only", Ty::Bool),
                opt("vblk_id", Ty::U32),
            ],
        )?;
        if let Some(name) = a.str("ctrl") {
            if self.virtio_blk.contains_key(name) || self.controllers.contains_key(name) {
                return err(EEXIST, format!("Controller {name} already exists"));
            }
        }
        let function = self.free_vblk_function(config, &a)?;
        let bdev = a.s("bdev");
        if !bdev.is_empty() && bdev != "none" {
            self.claim_bdev(&bdev)?;
        }
        let name = match a.string("ctrl") {
            Some(name) => name,
            None => self.next_vblk_name("VblkCtrl", ""),
        };
        self.insert_vblk(&name, function, &a, "queue_size", None);
        Ok(json!(name))
    }

    fn insert_vblk(
        &mut self,
        name: &str,
        function: Function,
        a: &Args<'_>,
        queue_key: &str,
        emulation_manager: Option<String>,
    ) {
        let bdev = a.s("bdev");
        self.virtio_blk.insert(
            name.to_owned(),
            FakeVirtioBlk {
                function: function.label,
                pci_bdf: function.pci_bdf,
                vhca_id: function.vhca_id,
                vuid: function.vuid,
                bdev: if bdev == "none" { String::new() } else { bdev },
                num_queues: a.u32("num_queues").unwrap_or(DEFAULT_QUEUES),
                queue_size: a.u32(queue_key).unwrap_or(DEFAULT_QUEUE_SIZE),
                serial: a.s("serial"),
                emulation_manager,
            },
        );
    }

    /// A free name `{prefix}<n>{suffix}`.
    fn next_vblk_name(&self, prefix: &str, suffix: &str) -> String {
        (0_u32..)
            .map(|n| format!("{prefix}{n}{suffix}"))
            .find(|name| !self.virtio_blk.contains_key(name))
            .unwrap_or_default()
    }

    /// SNAP 4 `virtio_blk_controller_destroy {ctrl, force?}` → `true` (UNVERIFIED key).
    pub(super) fn vblk_destroy4(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, &[req("ctrl", Ty::Str), opt("force", Ty::Bool)])?;
        let name = a.s("ctrl");
        self.virtio_blk
            .remove(&name)
            .ok_or((ENODEV, format!("Controller {name} not found")))?;
        Ok(json!(true))
    }

    /// SNAP 4 `virtio_blk_controller_list {ctrl?}`: the fields NVIDIA's live-upgrade script
    /// reads (`ctrl_id, vhca_id, num_queues, queue_size, seg_max, size_max, vblk_id, bdev`
    /// — `"none"` without one — and the flags it copies). No run state (none is published).
    pub(super) fn vblk_list4(&self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, &[opt("ctrl", Ty::Str)])?;
        if let Some(name) = a.str("ctrl") {
            if !self.virtio_blk.contains_key(name) {
                return err(ENODEV, format!("Controller {name} not found"));
            }
        }
        let list = self
            .virtio_blk
            .iter()
            .filter(|(name, _)| a.str("ctrl").is_none_or(|want| want == name.as_str()))
            .enumerate()
            .map(|(vblk_id, (name, c))| {
                let bdev = if c.bdev.is_empty() { "none" } else { &c.bdev };
                json!({"ctrl_id": name, "vhca_id": c.vhca_id, "num_queues": c.num_queues,
                       "queue_size": c.queue_size, "seg_max": DEFAULT_SEG_MAX,
                       "size_max": DEFAULT_SIZE_MAX, "vblk_id": vblk_id, "bdev": bdev,
                       "force_in_order": false, "admin_q": false,
                       "dbg_local_optimized": false, "indirect_desc": false,
                       "read_only": false})
            });
        Ok(Value::Array(list.collect()))
    }

    /// mlnx_snap 3 `controller_virtio_blk_create {emulation_manager, bdev_type, bdev?,
    /// pci_bdf?, pf_id?, vf_id?, vuid?, num_queues?, queue_depth?, size_max?, seg_max?,
    /// serial?, force_in_order?, suspend?, recover?, mem?, admin_q?}` (snap_rpc.py's keys) →
    /// the name, `VblkEmu<n>` plus the function (`VblkEmu0pf0`, the bdev_list page's name).
    /// Only one of `pci_bdf`, `pf_id` and `vuid` (snap_rpc.py's own check).
    pub(super) fn vblk_create3(
        &mut self,
        config: &Config,
        p: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let a = spdk_decode(
            p,
            &[
                req("emulation_manager", Ty::Str),
                req("bdev_type", Ty::OneOf(&["spdk", "none"])),
                opt("bdev", Ty::Str),
                opt("pci_bdf", Ty::Str),
                opt("pf_id", Ty::U32),
                opt("vf_id", Ty::U32),
                opt("vuid", Ty::Str),
                opt("num_queues", Ty::U32),
                opt("queue_depth", Ty::U32),
                opt("size_max", Ty::U32),
                opt("seg_max", Ty::U32),
                opt("serial", Ty::Str),
                opt("force_in_order", Ty::Bool),
                opt("suspend", Ty::Bool),
                opt("recover", Ty::Bool),
                opt("mem", Ty::OneOf(&["static", "pool"])),
                opt("admin_q", Ty::Bool),
            ],
        )?;
        let manager = a.s("emulation_manager");
        if !config.managers.iter().any(|m| {
            m.emulation_manager == manager && m.supported_types.iter().any(|t| t == "virtio_blk")
        }) {
            return err(
                ENODEV,
                format!("Emulation manager {manager} not found: No such device"),
            );
        }
        let ways = [a.has("pci_bdf"), a.has("pf_id"), a.has("vuid")];
        if ways.iter().filter(|w| **w).count() > 1 {
            return err(
                EINVAL,
                "Invalid argument: only one of pci_bdf, pf_id and vuid can be configured",
            );
        }
        let function = self.free_vblk_function(config, &a)?;
        let bdev = a.s("bdev");
        if a.str("bdev_type") == Some("spdk") {
            if bdev.is_empty() {
                return err(EINVAL, "Invalid argument: bdev_type spdk needs a bdev");
            }
            self.claim_bdev(&bdev)?;
        }
        let label = function.label.trim_start_matches("vblk-").to_owned();
        let name = self.next_vblk_name("VblkEmu", &label);
        self.insert_vblk(&name, function, &a, "queue_depth", Some(manager));
        Ok(json!(name))
    }

    /// mlnx_snap 3 `controller_virtio_blk_delete {name | vuid, force?}` → `true`.
    pub(super) fn vblk_delete3(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(
            p,
            &[
                opt("name", Ty::Str),
                opt("vuid", Ty::Str),
                opt("force", Ty::Bool),
            ],
        )?;
        let name = match (a.string("name"), a.str("vuid")) {
            (Some(name), None) => name,
            (None, Some(vuid)) => self
                .virtio_blk
                .iter()
                .find(|(_, c)| c.vuid == vuid)
                .map(|(name, _)| name.clone())
                .ok_or((ENODEV, format!("No controller on vuid {vuid}: not found")))?,
            _ => {
                return err(
                    EINVAL,
                    "Invalid argument: exactly one of name and vuid must be configured",
                )
            }
        };
        self.virtio_blk
            .remove(&name)
            .ok_or((ENODEV, format!("Controller {name} not found")))?;
        Ok(json!(true))
    }

    /// The virtio-blk entries of SNAP 3 `controller_list` (its method page's example:
    /// `{name, emulation_manager, type: "virtio_blk", pci_index, pci_bdf}`).
    pub(super) fn vblk_list3(&self) -> Vec<Value> {
        self.virtio_blk
            .iter()
            .map(|(name, c)| {
                let pci_index: u32 = c
                    .function
                    .trim_start_matches("vblk-pf")
                    .split("vf")
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_default();
                json!({"name": name, "emulation_manager": c.emulation_manager,
                       "type": "virtio_blk", "pci_index": pci_index, "pci_bdf": c.pci_bdf})
            })
            .collect()
    }
}
