//! DOCA SNAP 4's NVMe emulation methods. SNAP's source is not public: keys and reply shapes
//! follow NVIDIA's public clients (S-DPF `snap_rpc.go` and its test data, the S-LU
//! live-upgrade script, S-PERF/S-LAB CLI invocations; see the audit). Every handler says
//! what is UNVERIFIED. Decode failures answer like SPDK's bdev handlers (-32603
//! "spdk_json_decode_object failed"; UNVERIFIED for SNAP's own handlers). Refusal codes and
//! texts are the fake's own (UNVERIFIED: SNAP's wording is unpublished); they are worded
//! for the agent's classifier ("not found", "already exists", "busy"/"in use",
//! "not suspended").

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::decode::{opt, req, spdk_decode, Args, Ty};
use super::{
    err, random_uuid, Config, FakeController, FakeNamespace, FakePf, FakeSnapState, FakeSubsystem,
    RpcError, EBUSY, EEXIST, EINVAL, ENODEV, ENOENT, INVALID_STATE,
};

/// `nn`/`mnan` when `nvme_subsystem_create` gives none (S-DPF's captured list shows 1024;
/// UNVERIFIED as SNAP's default).
pub(super) const DEFAULT_NN: u32 = 1024;
/// Serial number when none is given (S-DPF's captured list, made by a client that sends
/// only `nqn`, shows `MNC12`; UNVERIFIED as SNAP's default).
pub(super) const DEFAULT_SN: &str = "MNC12";
/// Model number when none is given (same capture; UNVERIFIED).
pub(super) const DEFAULT_MN: &str = "BlueField NVMe SNAP Controller";
/// Controller queues when `num_queues` is not given, and the maximum reported
/// (`max_queues`) (S-DPF capture: 16 and 32; UNVERIFIED).
pub(super) const DEFAULT_QUEUES: u32 = 16;
pub(super) const MAX_QUEUES: u32 = 32;
/// `mdts` when not given (S-DPF capture: 7; UNVERIFIED).
pub(super) const DEFAULT_MDTS: u32 = 7;

/// One emulation function found in the table.
#[derive(Debug, Clone)]
pub(super) struct Function {
    pub(super) label: String,
    pub(super) pci_bdf: String,
    pub(super) vhca_id: u32,
    pub(super) vuid: String,
}

/// Every NVMe function of the table, PFs and their VFs.
pub(super) fn nvme_functions(table: &[FakePf]) -> Vec<Function> {
    let mut out = Vec::new();
    for pf in table
        .iter()
        .filter(|pf| pf.emulation_type.eq_ignore_ascii_case("nvme"))
    {
        out.push(Function {
            label: format!("pf{}", pf.pf_index),
            pci_bdf: pf.pci_bdf.clone(),
            vhca_id: pf.vhca_id,
            vuid: pf.vuid.clone(),
        });
        for vf in &pf.vfs {
            out.push(Function {
                label: format!("pf{}vf{}", pf.pf_index, vf.vf_index),
                pci_bdf: vf.pci_bdf.clone(),
                vhca_id: vf.vhca_id,
                vuid: vf.vuid.clone(),
            });
        }
    }
    out
}

/// Finds the function the params address: `pci_bdf` (`bb:dd.f` exactly as the table has
/// it, so a PCI domain `0000:` finds nothing), `vuid`, `vhca_id`, or `pf_id` (+ `vf_id`,
/// 0-based). Every key given must name the same function. UNVERIFIED: whether SNAP allows
/// several at once, and its refusal wording.
pub(super) fn find_function(table: &[FakePf], a: &Args<'_>) -> Result<Function, RpcError> {
    find_in(nvme_functions(table), "NVMe", a)
}

/// [`find_function`] among `functions`, of the emulation type `kind` names (for messages).
pub(super) fn find_in(
    functions: Vec<Function>,
    kind: &str,
    a: &Args<'_>,
) -> Result<Function, RpcError> {
    let mut found: Option<Function> = None;
    let mut pick = |what: String, hit: Option<&Function>| -> Result<(), RpcError> {
        let Some(hit) = hit else {
            return err(
                ENODEV,
                format!("No such device: no {kind} emulation function with {what}"),
            );
        };
        match &found {
            Some(f) if f.label != hit.label => err(
                EINVAL,
                format!(
                    "Invalid argument: {what} is function {}, not {}",
                    hit.label, f.label
                ),
            ),
            _ => {
                found = Some(hit.clone());
                Ok(())
            }
        }
    };
    if let Some(bdf) = a.str("pci_bdf") {
        pick(
            format!("pci_bdf {bdf}"),
            functions.iter().find(|f| f.pci_bdf == bdf),
        )?;
    }
    if let Some(vuid) = a.str("vuid") {
        pick(
            format!("vuid {vuid}"),
            functions.iter().find(|f| f.vuid == vuid),
        )?;
    }
    if let Some(vhca) = a.u32("vhca_id") {
        pick(
            format!("vhca_id {vhca}"),
            functions.iter().find(|f| f.vhca_id == vhca),
        )?;
    }
    match (a.u32("pf_id"), a.u32("vf_id")) {
        (Some(pf), vf) => {
            let label = match vf {
                Some(vf) => format!("pf{pf}vf{vf}"),
                None => format!("pf{pf}"),
            };
            let what = match vf {
                Some(vf) => format!("pf_id {pf} vf_id {vf}"),
                None => format!("pf_id {pf}"),
            };
            pick(
                what,
                functions
                    .iter()
                    .find(|f| f.label.trim_start_matches("vblk-") == label),
            )?;
        }
        (None, Some(_)) => return err(EINVAL, "Invalid argument: vf_id needs pf_id"),
        (None, None) => {}
    }
    found.ok_or((
        EINVAL,
        "Invalid argument: no emulation function given (pci_bdf, vuid, vhca_id or pf_id)"
            .to_owned(),
    ))
}

impl FakeSnapState {
    /// The controller using `function`, if any.
    pub(super) fn user_of(&self, function: &str) -> Option<&str> {
        self.controllers
            .iter()
            .find(|(_, c)| c.function == function)
            .map(|(id, _)| id.as_str())
    }

    /// `nvme_subsystem_create {nqn, serial_number?, model_number?, nn?, mnan?}`.
    /// UNVERIFIED: `serial_number`/`model_number` as JSON keys (CLI `-sn`/`-mn`,
    /// `--model_number`); `nn`/`mnan` (CLI `-nn`/`-mnan`); the defaults (S-DPF capture);
    /// the refusals of a serial over 20 or a model over 40 bytes (NVMe's field sizes), of
    /// `nn` 0 and of `mnan` above `nn`. The SNAP 3 keys `number_namespaces` and
    /// `maximum_namespaces` are unknown keys here.
    pub(super) fn subsystem_create(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(
            p,
            &[
                req("nqn", Ty::Str),
                opt("serial_number", Ty::Str),
                opt("model_number", Ty::Str),
                opt("nn", Ty::U32),
                opt("mnan", Ty::U32),
            ],
        )?;
        let nqn = a.s("nqn");
        let sub = new_subsystem(
            a.string("serial_number")
                .unwrap_or_else(|| DEFAULT_SN.to_owned()),
            a.string("model_number")
                .unwrap_or_else(|| DEFAULT_MN.to_owned()),
            a.u32("nn"),
            a.u32("mnan"),
        )?;
        if self.subsystems.contains_key(&nqn) {
            return err(EEXIST, format!("Subsystem {nqn} already exists"));
        }
        self.subsystems.insert(nqn, sub);
        Ok(json!(true))
    }

    /// `nvme_subsystem_destroy {nqn}` (no `force`): refused while controllers or
    /// namespaces remain (UNVERIFIED: S-DPF's comment suggests a non-forced destroy refuses
    /// leftovers; which leftovers is not known).
    pub(super) fn subsystem_destroy(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, &[req("nqn", Ty::Str)])?;
        let nqn = a.s("nqn");
        let Some(sub) = self.subsystems.get(&nqn) else {
            return err(ENODEV, format!("Subsystem {nqn} not found"));
        };
        if self.controllers.values().any(|c| c.nqn == nqn) {
            return err(
                EBUSY,
                format!("Subsystem {nqn} is busy: controllers still exist"),
            );
        }
        if !sub.namespaces.is_empty() {
            return err(
                EBUSY,
                format!("Subsystem {nqn} is busy: namespaces still exist"),
            );
        }
        self.subsystems.remove(&nqn);
        Ok(json!(true))
    }

    /// `nvme_subsystem_list` (no params): S-DPF's shape, `[{nqn, sn, mn, nn, mnan,
    /// controllers: [{ctrl_id, vhca_id, nqn, plugged, state, num_queues, max_queues, mdts,
    /// namespaces: [{nsid, bdev, uuid}]}], namespaces: [{nsid, bdev, nqn, uuid, ready,
    /// "max inflights per weight", controllers: [{ctrl_id}]}]}]`. Controller `state` is
    /// `STARTED` when running (S-DPF) and `SUSPENDED` when suspended (UNVERIFIED: a guess).
    /// `ready` is the string `Yes`/`No` (S-DPF shows `"No"`; UNVERIFIED meaning: here, whether
    /// the backing bdev still exists).
    pub(super) fn subsystem_list(
        &self,
        config: &Config,
        p: Option<&Value>,
    ) -> Result<Value, RpcError> {
        spdk_decode(p, &[])?;
        let list = self.subsystems.iter().map(|(nqn, sub)| {
            let controllers: Vec<Value> = self
                .controllers
                .iter()
                .filter(|(_, c)| &c.nqn == nqn)
                .map(|(id, c)| {
                    let mut entry = json!({"ctrl_id": id, "vhca_id": c.vhca_id, "nqn": nqn,
                           "plugged": true,
                           "state": if c.suspended { "SUSPENDED" } else { "STARTED" },
                           "num_queues": c.num_queues, "max_queues": MAX_QUEUES,
                           "mdts": c.mdts, "namespaces": self.ctrl_namespaces(c)});
                    if config.hide_controller_state {
                        entry.as_object_mut().map(|m| m.remove("state"));
                    }
                    entry
                })
                .collect();
            let namespaces: Vec<Value> = sub
                .namespaces
                .iter()
                .map(|(nsid, ns)| {
                    let ready = if self.bdevs.contains_key(&ns.bdev) {
                        "Yes"
                    } else {
                        "No"
                    };
                    json!({"nsid": nsid, "bdev": ns.bdev, "nqn": nqn, "uuid": ns.uuid,
                           "ready": ready, "max inflights per weight": 65535,
                           "controllers": ns.controllers.iter()
                               .map(|c| json!({"ctrl_id": c})).collect::<Vec<_>>()})
                })
                .collect();
            json!({"nqn": nqn, "sn": sub.serial_number, "mn": sub.model_number, "nn": sub.nn,
                   "mnan": sub.mnan, "controllers": controllers, "namespaces": namespaces})
        });
        Ok(Value::Array(list.collect()))
    }

    /// `[{nsid, bdev, uuid}]` of a controller's attached namespaces.
    fn ctrl_namespaces(&self, c: &FakeController) -> Vec<Value> {
        let sub = self.subsystems.get(&c.nqn);
        c.namespaces
            .iter()
            .map(|nsid| {
                let ns = sub.and_then(|s| s.namespaces.get(nsid));
                json!({"nsid": nsid, "bdev": ns.map(|n| n.bdev.as_str()),
                       "uuid": ns.map(|n| n.uuid.as_str())})
            })
            .collect()
    }

    /// Adds namespace `nsid` backed by `bdev` to `nqn`. UNVERIFIED refusals: unknown
    /// subsystem/bdev, a bdev already backing a namespace, nsid 0 or above `nn`, an nsid or
    /// UUID already in the subsystem.
    pub(super) fn new_namespace(
        &mut self,
        nqn: &str,
        nsid: u32,
        ns: FakeNamespace,
    ) -> Result<(), RpcError> {
        let Some(sub) = self.subsystems.get(nqn) else {
            return err(ENODEV, format!("Subsystem {nqn} not found"));
        };
        if !self.bdevs.contains_key(&ns.bdev) {
            return err(ENODEV, format!("bdev {} not found", ns.bdev));
        }
        if nsid == 0 || nsid > sub.nn {
            return err(
                EINVAL,
                format!("Invalid argument: nsid {nsid} is not within 1..={}", sub.nn),
            );
        }
        if sub.namespaces.contains_key(&nsid) {
            return err(EEXIST, format!("Namespace {nsid} already exists in {nqn}"));
        }
        if sub.namespaces.values().any(|n| n.uuid == ns.uuid) {
            return err(
                EEXIST,
                format!("A namespace with uuid {} already exists in {nqn}", ns.uuid),
            );
        }
        if let Some((name, _)) = self.virtio_blk.iter().find(|(_, c)| c.bdev == ns.bdev) {
            return err(
                EBUSY,
                format!("bdev {} is in use by virtio-blk controller {name}", ns.bdev),
            );
        }
        if self
            .subsystems
            .values()
            .any(|s| s.namespaces.values().any(|n| n.bdev == ns.bdev))
        {
            return err(
                EEXIST,
                format!("bdev {} already exists in a namespace", ns.bdev),
            );
        }
        if let Some(sub) = self.subsystems.get_mut(nqn) {
            sub.namespaces.insert(nsid, ns);
        }
        Ok(())
    }

    /// `nvme_namespace_create {nqn, nsid, bdev_name, bdev_type, uuid?}` (S-DPF keys;
    /// `bdev_type` must be `spdk`). Without `uuid` the fake picks a random one, so a
    /// namespace re-created after a SNAP restart gets a new UUID unless the caller sends
    /// it (UNVERIFIED that SNAP picks at random). `nguid`/`eui64` are unknown keys
    /// (UNVERIFIED: absent from every SNAP 4 client seen). No `spdk_bdev_create` is needed
    /// first (S-PERF calls it on some DOCA versions; UNVERIFIED).
    pub(super) fn namespace_create(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(
            p,
            &[
                req("nqn", Ty::Str),
                req("nsid", Ty::U32),
                req("bdev_name", Ty::Str),
                req("bdev_type", Ty::OneOf(&["spdk"])),
                opt("uuid", Ty::Uuid),
            ],
        )?;
        let ns = FakeNamespace {
            bdev: a.s("bdev_name"),
            uuid: a
                .str("uuid")
                .map(str::to_ascii_lowercase)
                .unwrap_or_else(random_uuid),
            ..FakeNamespace::default()
        };
        self.new_namespace(&a.s("nqn"), a.u32("nsid").unwrap_or_default(), ns)?;
        Ok(json!(true))
    }

    /// `nvme_namespace_destroy {nqn, nsid}`: refused while attached (UNVERIFIED).
    pub(super) fn namespace_destroy(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, &[req("nqn", Ty::Str), req("nsid", Ty::U32)])?;
        let (nqn, nsid) = (a.s("nqn"), a.u32("nsid").unwrap_or_default());
        let Some(sub) = self.subsystems.get_mut(&nqn) else {
            return err(ENODEV, format!("Subsystem {nqn} not found"));
        };
        match sub.namespaces.get(&nsid) {
            None => err(ENOENT, format!("Namespace {nsid} not found in {nqn}")),
            Some(ns) if !ns.controllers.is_empty() => err(
                EBUSY,
                format!("Namespace {nsid} is in use: still attached to a controller"),
            ),
            Some(_) => {
                sub.namespaces.remove(&nsid);
                Ok(json!(true))
            }
        }
    }

    /// `nvme_controller_create {nqn, ctrl?, pf_id?, vf_id?, pci_bdf?, vuid?, vhca_id?,
    /// suspended?, num_queues?, mdts?, admin_only?, live_update_listener?}` → `{ctrl_id}`.
    /// The function must be an NVMe function of the table
    /// ([`FakeSnap::set_functions`](crate::fake_snap::FakeSnap::set_functions)) that no
    /// controller uses; `ctrl` names the controller (a taken name is refused), otherwise
    /// SNAP names it `NVMeCtrl<n>`. UNVERIFIED: keys from S-LAB's CLI (`--ctrl`, `--vhca_id`,
    /// `--num_queues`, `--mdts`, `--suspended`, `--live_update_listener`) and S-DPF
    /// (`pci_bdf`, `vuid`, `suspended`); defaults from S-DPF's capture; a controller not
    /// created `suspended` starts running.
    pub(super) fn controller_create(
        &mut self,
        config: &Config,
        p: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let a = spdk_decode(
            p,
            &[
                req("nqn", Ty::Str),
                opt("ctrl", Ty::Str),
                opt("pf_id", Ty::U32),
                opt("vf_id", Ty::U32),
                opt("pci_bdf", Ty::Str),
                opt("vuid", Ty::Str),
                opt("vhca_id", Ty::U32),
                opt("suspended", Ty::Bool),
                opt("num_queues", Ty::U32),
                opt("mdts", Ty::U32),
                opt("admin_only", Ty::Bool),
                opt("live_update_listener", Ty::Bool),
            ],
        )?;
        let nqn = a.s("nqn");
        if !self.subsystems.contains_key(&nqn) {
            return err(ENODEV, format!("Subsystem {nqn} not found"));
        }
        if let Some(name) = a.str("ctrl") {
            if self.controllers.contains_key(name) {
                return err(EEXIST, format!("Controller {name} already exists"));
            }
        }
        let function = find_function(&config.functions, &a)?;
        if let Some(user) = self.user_of(&function.label) {
            return err(
                EEXIST,
                format!(
                    "A controller already exists on function {} ({}): {user}",
                    function.label, function.pci_bdf
                ),
            );
        }
        let id = match a.string("ctrl") {
            Some(name) => name,
            None => self.next_ctrl_name(),
        };
        let cntlid = self.next_cntlid_of(&nqn);
        let ctrl = FakeController {
            nqn,
            cntlid,
            function: function.label,
            pci_bdf: function.pci_bdf,
            vhca_id: function.vhca_id,
            vuid: function.vuid,
            suspended: a.bool("suspended").unwrap_or(false),
            num_queues: a.u32("num_queues").unwrap_or(DEFAULT_QUEUES),
            mdts: a.u32("mdts").unwrap_or(DEFAULT_MDTS),
            emulation_manager: None,
            namespaces: BTreeSet::new(),
        };
        self.controllers.insert(id.clone(), ctrl);
        Ok(json!({"ctrl_id": id}))
    }

    /// The lowest controller id not used in `nqn`, from 1.
    pub(super) fn next_cntlid_of(&self, nqn: &str) -> u16 {
        let used: BTreeSet<u16> = self
            .controllers
            .values()
            .filter(|c| c.nqn == nqn)
            .map(|c| c.cntlid)
            .collect();
        (1..=u16::MAX)
            .find(|id| !used.contains(id))
            .unwrap_or(u16::MAX)
    }

    pub(super) fn ctrl_mut(&mut self, id: &str) -> Result<&mut FakeController, RpcError> {
        self.controllers
            .get_mut(id)
            .ok_or((ENODEV, format!("Controller {id} not found")))
    }

    /// `nvme_controller_destroy {ctrl_id, force?}` (S-DPF sends `force: true`): without
    /// `force` refused while namespaces are attached (UNVERIFIED).
    pub(super) fn controller_destroy(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, &[req("ctrl_id", Ty::Str), opt("force", Ty::Bool)])?;
        self.remove_controller(&a.s("ctrl_id"), a.bool("force").unwrap_or(false))?;
        Ok(json!(true))
    }

    pub(super) fn remove_controller(&mut self, id: &str, force: bool) -> Result<(), RpcError> {
        let ctrl = self.ctrl_mut(id)?.clone();
        if !ctrl.namespaces.is_empty() && !force {
            return err(
                EBUSY,
                format!("Controller {id} is busy: namespaces attached"),
            );
        }
        if let Some(sub) = self.subsystems.get_mut(&ctrl.nqn) {
            for ns in sub.namespaces.values_mut() {
                ns.controllers.remove(id);
            }
        }
        self.controllers.remove(id);
        Ok(())
    }

    /// `nvme_controller_list {ctrl?}`: S-LU's fields `[{ctrl_id, vhca_id, nqn, mdts,
    /// num_queues, namespaces: [{nsid, bdev, uuid}]}]`; no run state (that is in
    /// `nvme_subsystem_list`). UNVERIFIED: the `ctrl` filter key (CLI `-c`).
    pub(super) fn controller_list(&self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, &[opt("ctrl", Ty::Str)])?;
        if let Some(name) = a.str("ctrl") {
            if !self.controllers.contains_key(name) {
                return err(ENODEV, format!("Controller {name} not found"));
            }
        }
        let list = self
            .controllers
            .iter()
            .filter(|(id, _)| a.str("ctrl").is_none_or(|want| want == id.as_str()))
            .map(|(id, c)| {
                json!({"ctrl_id": id, "vhca_id": c.vhca_id, "nqn": c.nqn, "mdts": c.mdts,
                       "num_queues": c.num_queues, "namespaces": self.ctrl_namespaces(c)})
            });
        Ok(Value::Array(list.collect()))
    }

    /// Attaches namespace `nsid` of the controller's subsystem; at most one controller per
    /// namespace (S-DOC: "SNAP does not currently support shared namespaces").
    pub(super) fn link(&mut self, id: &str, nsid: u32) -> Result<(), RpcError> {
        let ctrl = self.ctrl_mut(id)?.clone();
        let ns = self
            .subsystems
            .get_mut(&ctrl.nqn)
            .and_then(|s| s.namespaces.get_mut(&nsid))
            .ok_or((
                ENOENT,
                format!("Namespace {nsid} not found in {}", ctrl.nqn),
            ))?;
        if !ns.controllers.is_empty() {
            return err(EEXIST, format!("Namespace {nsid} already attached"));
        }
        ns.controllers.insert(id.to_owned());
        self.ctrl_mut(id)?.namespaces.insert(nsid);
        Ok(())
    }

    pub(super) fn unlink(&mut self, id: &str, nsid: u32) -> Result<String, RpcError> {
        let ctrl = self.ctrl_mut(id)?;
        if !ctrl.namespaces.remove(&nsid) {
            return err(
                ENOENT,
                format!("Namespace {nsid} not attached to {id}: not found"),
            );
        }
        let nqn = ctrl.nqn.clone();
        if let Some(ns) = self
            .subsystems
            .get_mut(&nqn)
            .and_then(|s| s.namespaces.get_mut(&nsid))
        {
            ns.controllers.remove(id);
        }
        Ok(nqn)
    }

    /// `nvme_controller_attach_ns {ctrl_id, nsid}` (S-DPF keys). Allowed on a running
    /// controller (S-PERF attaches to one created without `--suspended`).
    pub(super) fn attach_ns(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, &[req("ctrl_id", Ty::Str), req("nsid", Ty::U32)])?;
        self.link(&a.s("ctrl_id"), a.u32("nsid").unwrap_or_default())?;
        Ok(json!(true))
    }

    /// `nvme_controller_detach_ns {ctrl_id, nsid}` (S-DPF keys).
    pub(super) fn detach_ns(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, &[req("ctrl_id", Ty::Str), req("nsid", Ty::U32)])?;
        self.unlink(&a.s("ctrl_id"), a.u32("nsid").unwrap_or_default())?;
        Ok(json!(true))
    }

    /// `nvme_controller_suspend {ctrl_id, admin_only?, live_update_notifier?,
    /// timeout_ms?}` / `nvme_controller_resume {ctrl_id}`. UNVERIFIED: the `ctrl_id` key for
    /// suspend (no public client suspends; resume's key is S-DPF's); suspending a suspended
    /// controller succeeds, resuming a running one is refused (-1 "not suspended").
    pub(super) fn set_suspended(
        &mut self,
        p: Option<&Value>,
        suspend: bool,
    ) -> Result<Value, RpcError> {
        let a = if suspend {
            spdk_decode(
                p,
                &[
                    req("ctrl_id", Ty::Str),
                    opt("admin_only", Ty::Bool),
                    opt("live_update_notifier", Ty::Bool),
                    opt("timeout_ms", Ty::U32),
                ],
            )?
        } else {
            spdk_decode(p, &[req("ctrl_id", Ty::Str)])?
        };
        let id = a.s("ctrl_id");
        let ctrl = self.ctrl_mut(&id)?;
        if !suspend && !ctrl.suspended {
            return err(INVALID_STATE, format!("Controller {id} is not suspended"));
        }
        ctrl.suspended = suspend;
        Ok(json!(true))
    }

    /// `emulation_function_list {all?}`: S-DPF's shape `[{hotplugged, emulation_type,
    /// pf_index, pci_bdf, vhca_id, vuid, ctrl_id, vfs: [{hotplugged, emulation_type,
    /// pf_index, vf_index, pci_bdf, vhca_id, vuid, ctrl_id}]}]`, `ctrl_id` `""` when free.
    /// UNVERIFIED: what `all` changes (S-DPF always sends `all: true`; the fake lists the
    /// same either way), and `ctrl_id` `""` rather than absent on a free VF.
    pub(super) fn function_list(
        &self,
        config: &Config,
        p: Option<&Value>,
    ) -> Result<Value, RpcError> {
        spdk_decode(p, &[opt("all", Ty::Bool)])?;
        let list = config.functions.iter().map(|pf| {
            // virtio-blk functions carry their own labels and controllers.
            let vblk = is_vblk(&pf.emulation_type);
            let used = |label: String| {
                let user = if vblk {
                    self.vblk_user_of(&format!("vblk-{label}"))
                } else {
                    self.user_of(&label)
                };
                user.unwrap_or_default().to_owned()
            };
            let vfs: Vec<Value> = pf
                .vfs
                .iter()
                .map(|vf| {
                    json!({"hotplugged": false, "emulation_type": pf.emulation_type,
                           "pf_index": pf.pf_index, "vf_index": vf.vf_index,
                           "pci_bdf": vf.pci_bdf, "vhca_id": vf.vhca_id, "vuid": vf.vuid,
                           "ctrl_id": used(format!("pf{}vf{}", pf.pf_index, vf.vf_index))})
                })
                .collect();
            json!({"hotplugged": pf.hotplugged, "emulation_type": pf.emulation_type,
                   "pf_index": pf.pf_index, "pci_bdf": pf.pci_bdf, "vhca_id": pf.vhca_id,
                   "vuid": pf.vuid, "ctrl_id": used(format!("pf{}", pf.pf_index)), "vfs": vfs})
        });
        Ok(Value::Array(list.collect()))
    }
}

/// A subsystem with these identify fields; UNVERIFIED refusals (NVMe's field sizes).
pub(super) fn new_subsystem(
    serial_number: String,
    model_number: String,
    nn: Option<u32>,
    mnan: Option<u32>,
) -> Result<FakeSubsystem, RpcError> {
    if serial_number.len() > 20 {
        return err(
            EINVAL,
            format!("Invalid argument: serial number {serial_number:?} is longer than 20 bytes"),
        );
    }
    if model_number.len() > 40 {
        return err(
            EINVAL,
            format!("Invalid argument: model number {model_number:?} is longer than 40 bytes"),
        );
    }
    let nn = nn.unwrap_or(DEFAULT_NN);
    let mnan = mnan.unwrap_or(nn.min(DEFAULT_NN));
    if nn == 0 || mnan > nn {
        return err(EINVAL, format!("Invalid argument: nn {nn} / mnan {mnan}"));
    }
    Ok(FakeSubsystem {
        serial_number,
        model_number,
        nn,
        mnan,
        namespaces: std::collections::BTreeMap::new(),
    })
}

/// Whether `s` is `len` hex digits (SNAP 3 `nguid`: 32, `eui64`: 16).
pub(super) fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether a table entry's `emulation_type` is virtio-blk (`VBLK` in SNAP 4's list).
pub(super) fn is_vblk(emulation_type: &str) -> bool {
    emulation_type.eq_ignore_ascii_case("vblk") || emulation_type.eq_ignore_ascii_case("virtio_blk")
}
