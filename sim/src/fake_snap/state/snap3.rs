//! mlnx_snap 3's NVMe emulation methods, keys as snap-rdma's `rpc/snap_rpc.py` sends them
//! and replies as its `rpc/md/*.md` pages show them (S-SNAP3 in the audit). mlnx_snap's
//! server source is not public: refusal codes and texts are the fake's own (UNVERIFIED),
//! decode failures answer like SPDK's bdev handlers (UNVERIFIED).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::decode::{opt, req, spdk_decode, Args, Ty};
use super::nvme::{find_function, is_hex, new_subsystem, DEFAULT_MDTS, DEFAULT_QUEUES};
use super::{
    err, random_uuid, Config, FakeController, FakeNamespace, FakeSnapState, RpcError, EBUSY,
    EEXIST, EINVAL, ENODEV,
};

impl FakeSnapState {
    /// `subsystem_nvme_create {nqn?, serial_number, model_number, nn?, mnan?,
    /// number_namespaces?, maximum_namespaces?}` → the string `"true"` (the md page's
    /// result; snap_rpc.py strips its quotes). The maximum-NSID key is `number_namespaces`
    /// in snap_rpc.py and `nn` in the md page, the namespace-count key
    /// `maximum_namespaces` / `mnan`: the fake takes all four (UNVERIFIED which the server
    /// decodes). Without `nqn` it names the subsystem
    /// `nqn.2014.08.org.nvmexpress.snap:cnode<n>` (UNVERIFIED).
    pub(super) fn subsystem_create3(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(
            p,
            &[
                opt("nqn", Ty::Str),
                req("serial_number", Ty::Str),
                req("model_number", Ty::Str),
                opt("nn", Ty::U32),
                opt("mnan", Ty::U32),
                opt("number_namespaces", Ty::U32),
                opt("maximum_namespaces", Ty::U32),
            ],
        )?;
        let nqn = a.string("nqn").unwrap_or_else(|| {
            (1..)
                .map(|n| format!("nqn.2014.08.org.nvmexpress.snap:cnode{n}"))
                .find(|nqn| !self.subsystems.contains_key(nqn))
                .unwrap_or_default()
        });
        let sub = new_subsystem(
            a.s("serial_number"),
            a.s("model_number"),
            a.u32("nn").or(a.u32("number_namespaces")),
            a.u32("mnan").or(a.u32("maximum_namespaces")),
        )?;
        if self.subsystems.contains_key(&nqn) {
            return err(EEXIST, format!("Subsystem {nqn} already exists"));
        }
        self.subsystems.insert(nqn, sub);
        Ok(json!("true"))
    }

    /// `subsystem_nvme_delete {nqn}` → `true`; refused while controllers exist
    /// (UNVERIFIED).
    pub(super) fn subsystem_delete3(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, &[req("nqn", Ty::Str)])?;
        let nqn = a.s("nqn");
        if !self.subsystems.contains_key(&nqn) {
            return err(ENODEV, format!("Subsystem {nqn} not found"));
        }
        if self.controllers.values().any(|c| c.nqn == nqn) {
            return err(
                EBUSY,
                format!("Subsystem {nqn} is busy: controllers still exist"),
            );
        }
        self.subsystems.remove(&nqn);
        Ok(json!(true))
    }

    /// `subsystem_nvme_list` → `[{nqn, serial_number, model_number, controllers: [{name,
    /// cntlid, pci_bdf, pci_index}]}]` (md page).
    pub(super) fn subsystem_list3(&self, p: Option<&Value>) -> Result<Value, RpcError> {
        spdk_decode(p, &[])?;
        let list = self.subsystems.iter().map(|(nqn, sub)| {
            let controllers: Vec<Value> = self
                .controllers
                .iter()
                .filter(|(_, c)| &c.nqn == nqn)
                .map(|(name, c)| {
                    json!({"name": name, "cntlid": c.cntlid, "pci_bdf": c.pci_bdf,
                           "pci_index": pf_of(c)})
                })
                .collect();
            json!({"nqn": nqn, "serial_number": sub.serial_number,
                   "model_number": sub.model_number, "controllers": controllers})
        });
        Ok(Value::Array(list.collect()))
    }

    /// `controller_nvme_create {emulation_manager, nqn, pf_id?, vf_id?, pci_bdf?, vuid?,
    /// nr_io_queues?, mdts?, max_namespaces?, quirks?, conf_file?, rdma_device?, mem?,
    /// cntlid?, subsys_id?}` → `{name, cntlid}` (md page). The emulation manager must be one
    /// `emulation_managers_list` lists with `nvme` among its types; exactly one of
    /// `pci_bdf`, `pf_id` (+ `vf_id`), `vuid` names a free function of the table
    /// (`bb:dd.f`: a PCI domain finds nothing). Names are `NvmeEmu<manager index>pf<pf>`
    /// (`…vf<vf>` for a VF), after the BF2 FAQ's `NvmeEmu0pf0` (UNVERIFIED). `subsys_id`
    /// is decoded but not modelled: `nqn` is required.
    pub(super) fn controller_create3(
        &mut self,
        config: &Config,
        p: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let a = spdk_decode(
            p,
            &[
                req("emulation_manager", Ty::Str),
                opt("nqn", Ty::Str),
                opt("subsys_id", Ty::I32),
                opt("pci_bdf", Ty::Str),
                opt("pf_id", Ty::U32),
                opt("vf_id", Ty::U32),
                opt("vuid", Ty::Str),
                opt("conf_file", Ty::Str),
                opt("nr_io_queues", Ty::U32),
                opt("mdts", Ty::U32),
                opt("max_namespaces", Ty::U32),
                opt("quirks", Ty::U32),
                opt("rdma_device", Ty::Str),
                opt("mem", Ty::OneOf(&["static", "pool"])),
                opt("cntlid", Ty::U16),
            ],
        )?;
        let manager = a.s("emulation_manager");
        let Some(index) = config.managers.iter().position(|m| {
            m.emulation_manager == manager && m.supported_types.iter().any(|t| t == "nvme")
        }) else {
            return err(
                ENODEV,
                format!("Emulation manager {manager} not found: No such device"),
            );
        };
        let Some(nqn) = a.string("nqn") else {
            return err(EINVAL, "Invalid argument: nqn is required");
        };
        if !self.subsystems.contains_key(&nqn) {
            return err(ENODEV, format!("Subsystem {nqn} not found"));
        }
        let ways = [a.has("pci_bdf"), a.has("pf_id"), a.has("vuid")];
        if ways.iter().filter(|w| **w).count() > 1 {
            return err(
                EINVAL,
                "Invalid argument: only one of pci_bdf, pf_id and vuid can be configured",
            );
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
        let cntlid = match a.u32("cntlid") {
            Some(id) => {
                let id = u16::try_from(id).unwrap_or(u16::MAX);
                if self
                    .controllers
                    .values()
                    .any(|c| c.nqn == nqn && c.cntlid == id)
                {
                    return err(EEXIST, format!("Controller {id} of {nqn} already exists"));
                }
                id
            }
            None => self.next_cntlid_of(&nqn),
        };
        let name = format!("NvmeEmu{index}{}", function.label);
        let ctrl = FakeController {
            nqn,
            cntlid,
            function: function.label,
            pci_bdf: function.pci_bdf,
            vhca_id: function.vhca_id,
            vuid: function.vuid,
            suspended: false,
            num_queues: a.u32("nr_io_queues").unwrap_or(DEFAULT_QUEUES),
            mdts: a.u32("mdts").unwrap_or(DEFAULT_MDTS),
            emulation_manager: Some(manager),
            namespaces: BTreeSet::new(),
        };
        self.controllers.insert(name.clone(), ctrl);
        Ok(json!({"name": name, "cntlid": cntlid}))
    }

    /// The controller addressed by `ctrl` (or `name`) or by `subnqn` + `cntlid`, exactly
    /// one of them (snap_rpc.py's rule).
    fn ctrl3(&self, a: &Args<'_>, name_key: &str) -> Result<String, RpcError> {
        let by_pair = a.has("subnqn") || a.has("cntlid");
        match (a.str(name_key), by_pair) {
            (Some(_), true) => err(
                EINVAL,
                format!("Invalid argument: {name_key} and subnqn/cntlid cannot both be configured"),
            ),
            (Some(name), false) => {
                if self.controllers.contains_key(name) {
                    Ok(name.to_owned())
                } else {
                    err(ENODEV, format!("Controller {name} not found"))
                }
            }
            (None, true) => {
                let (Some(nqn), Some(cntlid)) = (a.str("subnqn"), a.u32("cntlid")) else {
                    return err(
                        EINVAL,
                        "Invalid argument: subnqn and cntlid must be both configured",
                    );
                };
                self.controllers
                    .iter()
                    .find(|(_, c)| c.nqn == nqn && u32::from(c.cntlid) == cntlid)
                    .map(|(id, _)| id.clone())
                    .ok_or((ENODEV, format!("Controller {cntlid} of {nqn} not found")))
            }
            (None, false) => err(
                EINVAL,
                format!("Invalid argument: either {name_key} or subnqn/cntlid must be configured"),
            ),
        }
    }

    /// `controller_nvme_delete {name | subnqn + cntlid | vuid}` → `true` (no `force`: not
    /// a snap_rpc.py key). Its namespaces go with it (SNAP 3 namespaces belong to a
    /// controller; UNVERIFIED).
    pub(super) fn controller_delete3(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(
            p,
            &[
                opt("name", Ty::Str),
                opt("subnqn", Ty::Str),
                opt("cntlid", Ty::U16),
                opt("vuid", Ty::Str),
            ],
        )?;
        let id =
            match a.str("vuid") {
                Some(vuid) if !a.has("name") && !a.has("subnqn") && !a.has("cntlid") => self
                    .controllers
                    .iter()
                    .find(|(_, c)| c.vuid == vuid)
                    .map(|(id, _)| id.clone())
                    .ok_or((ENODEV, format!("No controller on vuid {vuid}: not found")))?,
                Some(_) => return err(
                    EINVAL,
                    "Invalid argument: only one of name, vuid and subnqn/cntlid can be configured",
                ),
                None => self.ctrl3(&a, "name")?,
            };
        let nqn = self.controllers.get(&id).map(|c| c.nqn.clone());
        let nsids: Vec<u32> = self
            .controllers
            .get(&id)
            .map(|c| c.namespaces.iter().copied().collect())
            .unwrap_or_default();
        self.remove_controller(&id, true)?;
        if let Some(sub) = nqn.and_then(|nqn| self.subsystems.get_mut(&nqn)) {
            for nsid in nsids {
                sub.namespaces.remove(&nsid);
            }
        }
        Ok(json!(true))
    }

    /// `controller_list {type?}` → `[{subnqn, cntlid, name, emulation_manager, type,
    /// pci_index, pci_bdf}]` (md page; the fake has no virtio-blk controllers).
    pub(super) fn controller_list3(&self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(
            p,
            &[opt(
                "type",
                Ty::OneOf(&["nvme", "virtio_blk", "virtio_net"]),
            )],
        )?;
        let nvme = self.controllers.iter().map(|(name, c)| {
            json!({"subnqn": c.nqn, "cntlid": c.cntlid, "name": name,
                   "emulation_manager": c.emulation_manager, "type": "nvme",
                   "pci_index": pf_of(c), "pci_bdf": c.pci_bdf})
        });
        let list = nvme
            .chain(self.vblk_list3())
            .filter(|c| a.str("type").is_none_or(|t| c["type"] == t));
        Ok(Value::Array(list.collect()))
    }

    /// `controller_nvme_namespace_attach {bdev_type, bdev, nsid, ctrl | subnqn + cntlid,
    /// qn?, protocol?, uuid?, nguid?, eui64?}` → `true`: creates the namespace and attaches
    /// it. UNVERIFIED: `bdev_type` other than `spdk` refused; `nguid` must be 32 and `eui64`
    /// 16 hex digits; a random UUID when none is given.
    pub(super) fn attach_ns3(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(
            p,
            &[
                req("bdev_type", Ty::OneOf(&["spdk"])),
                req("bdev", Ty::Str),
                req("nsid", Ty::U32),
                opt("ctrl", Ty::Str),
                opt("subnqn", Ty::Str),
                opt("cntlid", Ty::U16),
                opt("qn", Ty::Str),
                opt("protocol", Ty::Str),
                opt("uuid", Ty::Uuid),
                opt("nguid", Ty::Str),
                opt("eui64", Ty::Str),
            ],
        )?;
        if a.str("nguid").is_some_and(|g| !is_hex(g, 32)) {
            return err(EINVAL, "Invalid argument: nguid must be 32 hex digits");
        }
        if a.str("eui64").is_some_and(|e| !is_hex(e, 16)) {
            return err(EINVAL, "Invalid argument: eui64 must be 16 hex digits");
        }
        let id = self.ctrl3(&a, "ctrl")?;
        let nqn = self
            .controllers
            .get(&id)
            .map(|c| c.nqn.clone())
            .unwrap_or_default();
        let nsid = a.u32("nsid").unwrap_or_default();
        let ns = FakeNamespace {
            bdev: a.s("bdev"),
            uuid: a
                .str("uuid")
                .map(str::to_ascii_lowercase)
                .unwrap_or_else(random_uuid),
            nguid: a.string("nguid"),
            eui64: a.string("eui64"),
            controllers: BTreeSet::new(),
        };
        self.new_namespace(&nqn, nsid, ns)?;
        self.link(&id, nsid)?;
        Ok(json!(true))
    }

    /// `controller_nvme_namespace_detach {nsid, ctrl | subnqn + cntlid}` → `true`: detaches
    /// and removes the namespace.
    pub(super) fn detach_ns3(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(
            p,
            &[
                req("nsid", Ty::U32),
                opt("ctrl", Ty::Str),
                opt("subnqn", Ty::Str),
                opt("cntlid", Ty::U16),
            ],
        )?;
        let id = self.ctrl3(&a, "ctrl")?;
        let nsid = a.u32("nsid").unwrap_or_default();
        let nqn = self.unlink(&id, nsid)?;
        if let Some(sub) = self.subsystems.get_mut(&nqn) {
            sub.namespaces.remove(&nsid);
        }
        Ok(json!(true))
    }

    /// `emulation_managers_list` → `[{emulation_manager, hotplug_support, supported_types}]`
    /// (md page), from
    /// [`FakeSnap::set_emulation_managers`](crate::fake_snap::FakeSnap::set_emulation_managers).
    pub(super) fn managers_list3(config: &Config, p: Option<&Value>) -> Result<Value, RpcError> {
        spdk_decode(p, &[])?;
        Ok(Value::Array(
            config
                .managers
                .iter()
                .map(|m| {
                    json!({"emulation_manager": m.emulation_manager,
                           "hotplug_support": m.hotplug_support,
                           "supported_types": m.supported_types})
                })
                .collect(),
        ))
    }

    /// `emulation_functions_list` → `[{emulation_manager, emulation_type, pci_index,
    /// pci_bdf, total_vf, virtual_functions: [{vf_index, vf_bdf}]}]` (md page), the NVMe
    /// functions of the table under the first manager that emulates NVMe.
    pub(super) fn functions_list3(config: &Config, p: Option<&Value>) -> Result<Value, RpcError> {
        spdk_decode(p, &[])?;
        let manager = config
            .managers
            .iter()
            .find(|m| m.supported_types.iter().any(|t| t == "nvme"))
            .map(|m| m.emulation_manager.clone());
        let list = config
            .functions
            .iter()
            .filter(|pf| pf.emulation_type.eq_ignore_ascii_case("nvme"))
            .map(|pf| {
                let vfs: Vec<Value> = pf
                    .vfs
                    .iter()
                    .map(|vf| json!({"vf_index": vf.vf_index, "vf_bdf": vf.pci_bdf}))
                    .collect();
                json!({"emulation_manager": manager, "emulation_type": "nvme",
                       "pci_index": pf.pf_index, "pci_bdf": pf.pci_bdf,
                       "total_vf": pf.vfs.len(), "virtual_functions": vfs})
            });
        Ok(Value::Array(list.collect()))
    }
}

/// The PF index of a controller's function (`pf0vf1` → 0).
fn pf_of(c: &FakeController) -> u32 {
    c.function
        .strip_prefix("pf")
        .and_then(|rest| rest.split("vf").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_default()
}
