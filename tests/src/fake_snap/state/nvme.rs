//! The NVMe emulation handlers of [`FakeSnapState`]: subsystems, namespaces and
//! controllers in both dialects.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::{
    err, function_of, n, opt_s, req, s, FakeController, FakeNamespace, FakeSnapState,
    FakeSubsystem, RpcError, EBUSY, EEXIST, ENODEV, ENOENT, INVALID_STATE,
};

impl FakeSnapState {
    pub(super) fn subsystem_create(
        &mut self,
        p: Option<&Value>,
        snap3: bool,
    ) -> Result<Value, RpcError> {
        let allowed = [
            "nqn",
            "serial_number",
            "model_number",
            "nn",
            "mnan",
            "number_namespaces",
            "maximum_namespaces",
        ];
        let m = req(p, &allowed)?;
        let nqn = s(m, "nqn")?;
        let (serial_number, model_number) = if snap3 {
            (s(m, "serial_number")?, s(m, "model_number")?)
        } else {
            (
                opt_s(m, "serial_number")?.unwrap_or_default(),
                opt_s(m, "model_number")?.unwrap_or_default(),
            )
        };
        if self.subsystems.contains_key(&nqn) {
            return err(EEXIST, format!("Subsystem {nqn} already exists"));
        }
        self.subsystems.insert(
            nqn,
            FakeSubsystem {
                serial_number,
                model_number,
                namespaces: BTreeMap::new(),
            },
        );
        Ok(if snap3 { json!(true) } else { json!({}) })
    }

    pub(super) fn subsystem_destroy(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let nqn = s(req(p, &["nqn", "force"])?, "nqn")?;
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

    pub(super) fn subsystem_list(&self) -> Value {
        let list = self.subsystems.iter().map(|(nqn, sub)| {
            let namespaces: Vec<Value> = sub
                .namespaces
                .iter()
                .map(|(nsid, ns)| json!({"nsid": nsid, "bdev": ns.bdev, "uuid": ns.uuid,
                    "controllers": ns.controllers.iter().map(|c| json!({"ctrl_id": c})).collect::<Vec<_>>()}))
                .collect();
            let controllers: Vec<Value> = self
                .controllers
                .iter()
                .filter(|(_, c)| &c.nqn == nqn)
                .map(|(id, c)| json!({"ctrl_id": id, "name": id, "cntlid": c.cntlid}))
                .collect();
            json!({"nqn": nqn, "serial_number": sub.serial_number, "sn": sub.serial_number,
                   "mn": sub.model_number, "namespaces": namespaces, "controllers": controllers})
        });
        Value::Array(list.collect())
    }

    pub(super) fn new_namespace(
        &mut self,
        nqn: &str,
        nsid: u32,
        bdev: String,
        uuid: Option<String>,
    ) -> Result<(), RpcError> {
        if !self.bdevs.contains_key(&bdev) {
            return err(ENODEV, format!("bdev {bdev} not found"));
        }
        if self
            .subsystems
            .values()
            .any(|s| s.namespaces.values().any(|n| n.bdev == bdev))
        {
            return err(EEXIST, format!("bdev {bdev} already exists in a namespace"));
        }
        let Some(sub) = self.subsystems.get_mut(nqn) else {
            return err(ENODEV, format!("Subsystem {nqn} not found"));
        };
        if sub.namespaces.contains_key(&nsid) || nsid == 0 {
            return err(EEXIST, format!("Namespace {nsid} already exists in {nqn}"));
        }
        let ns = FakeNamespace {
            bdev,
            uuid,
            controllers: BTreeSet::new(),
        };
        sub.namespaces.insert(nsid, ns);
        Ok(())
    }

    pub(super) fn namespace_create(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let m = req(
            p,
            &[
                "nqn",
                "nsid",
                "bdev_name",
                "uuid",
                "bdev_type",
                "nguid",
                "eui64",
            ],
        )?;
        let nqn = s(m, "nqn")?;
        self.new_namespace(&nqn, n(m, "nsid")?, s(m, "bdev_name")?, opt_s(m, "uuid")?)?;
        Ok(json!({}))
    }

    pub(super) fn namespace_destroy(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let m = req(p, &["nqn", "nsid"])?;
        let (nqn, nsid) = (s(m, "nqn")?, n(m, "nsid")?);
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
                Ok(json!({}))
            }
        }
    }

    pub(super) fn new_controller(
        &mut self,
        nqn: String,
        function: String,
        suspended: bool,
    ) -> Result<(String, u16), RpcError> {
        if !self.subsystems.contains_key(&nqn) {
            return err(ENODEV, format!("Subsystem {nqn} not found"));
        }
        if self.controllers.values().any(|c| c.function == function) {
            return err(
                EEXIST,
                format!("A controller on function {function} already exists"),
            );
        }
        self.next_ctrl += 1;
        let cntlid = u16::try_from(self.next_ctrl).unwrap_or(u16::MAX);
        let id = format!("NVMeCtrl{}", self.next_ctrl);
        let ctrl = FakeController {
            nqn,
            cntlid,
            function,
            suspended,
            namespaces: BTreeSet::new(),
        };
        self.controllers.insert(id.clone(), ctrl);
        Ok((id, cntlid))
    }

    pub(super) fn controller_create(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let allowed = [
            "nqn",
            "pci_bdf",
            "vuid",
            "pf_id",
            "vf_id",
            "vhca_id",
            "ctrl",
            "num_queues",
            "mdts",
            "suspended",
            "admin_only",
            "live_update_listener",
        ];
        let m = req(p, &allowed)?;
        let suspended = m.get("suspended").and_then(Value::as_bool).unwrap_or(false);
        let (id, _) = self.new_controller(s(m, "nqn")?, function_of(m)?, suspended)?;
        Ok(json!({"ctrl_id": id}))
    }

    pub(super) fn controller_create3(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let allowed = [
            "nqn",
            "emulation_manager",
            "pf_id",
            "vf_id",
            "pci_bdf",
            "nr_io_queues",
            "mdts",
            "max_namespaces",
            "subsys_id",
            "vuid",
        ];
        let m = req(p, &allowed)?;
        s(m, "emulation_manager")?;
        let (id, cntlid) = self.new_controller(s(m, "nqn")?, function_of(m)?, false)?;
        Ok(json!({"name": id, "cntlid": cntlid}))
    }

    pub(super) fn ctrl_mut(&mut self, id: &str) -> Result<&mut FakeController, RpcError> {
        self.controllers
            .get_mut(id)
            .ok_or((ENODEV, format!("Controller {id} not found")))
    }

    pub(super) fn controller_destroy(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let m = req(p, &["ctrl_id", "force"])?;
        let id = s(m, "ctrl_id")?;
        let force = m.get("force").and_then(Value::as_bool).unwrap_or(false);
        self.remove_controller(&id, force)?;
        Ok(json!({}))
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

    pub(super) fn by_cntlid(&self, nqn: &str, cntlid: u32) -> Result<String, RpcError> {
        self.controllers
            .iter()
            .find(|(_, c)| c.nqn == nqn && u32::from(c.cntlid) == cntlid)
            .map(|(id, _)| id.clone())
            .ok_or((ENODEV, format!("Controller {cntlid} of {nqn} not found")))
    }

    pub(super) fn controller_delete3(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let m = req(p, &["subnqn", "cntlid", "name", "force"])?;
        let id = match opt_s(m, "name")? {
            Some(name) => name,
            None => self.by_cntlid(&s(m, "subnqn")?, n(m, "cntlid")?)?,
        };
        self.remove_controller(&id, true)?;
        Ok(json!(true))
    }

    pub(super) fn controller_list(&self) -> Value {
        let list = self.controllers.iter().map(|(id, c)| {
            json!({"ctrl_id": id, "name": id, "nqn": c.nqn, "subnqn": c.nqn, "cntlid": c.cntlid,
                   "suspended": c.suspended, "namespaces": c.namespaces})
        });
        Value::Array(list.collect())
    }

    pub(super) fn link(
        &mut self,
        id: &str,
        nsid: u32,
        need_suspended: bool,
    ) -> Result<(), RpcError> {
        let ctrl = self.ctrl_mut(id)?.clone();
        if need_suspended && !ctrl.suspended {
            return err(INVALID_STATE, format!("Controller {id} is not suspended"));
        }
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

    pub(super) fn attach_ns(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let m = req(p, &["ctrl_id", "nsid"])?;
        self.link(&s(m, "ctrl_id")?, n(m, "nsid")?, true)?;
        Ok(json!({}))
    }

    pub(super) fn detach_ns(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let m = req(p, &["ctrl_id", "nsid"])?;
        self.unlink(&s(m, "ctrl_id")?, n(m, "nsid")?)?;
        Ok(json!({}))
    }

    pub(super) fn attach_ns3(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let allowed = [
            "bdev_type",
            "bdev",
            "nsid",
            "subnqn",
            "cntlid",
            "ctrl",
            "uuid",
            "nguid",
            "eui64",
            "qn",
            "protocol",
        ];
        let m = req(p, &allowed)?;
        let (nqn, nsid) = (s(m, "subnqn")?, n(m, "nsid")?);
        let id = self.by_cntlid(&nqn, n(m, "cntlid")?)?;
        self.new_namespace(&nqn, nsid, s(m, "bdev")?, opt_s(m, "uuid")?)?;
        self.link(&id, nsid, false)?;
        Ok(json!(true))
    }

    pub(super) fn detach_ns3(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let m = req(p, &["nsid", "subnqn", "cntlid", "ctrl"])?;
        let (nqn, nsid) = (s(m, "subnqn")?, n(m, "nsid")?);
        let id = self.by_cntlid(&nqn, n(m, "cntlid")?)?;
        self.unlink(&id, nsid)?;
        if let Some(sub) = self.subsystems.get_mut(&nqn) {
            sub.namespaces.remove(&nsid);
        }
        Ok(json!(true))
    }

    pub(super) fn set_suspended(
        &mut self,
        p: Option<&Value>,
        suspend: bool,
    ) -> Result<Value, RpcError> {
        let allowed = [
            "ctrl_id",
            "admin_only",
            "live_update_notifier",
            "timeout_ms",
        ];
        let id = s(req(p, &allowed)?, "ctrl_id")?;
        let ctrl = self.ctrl_mut(&id)?;
        if !suspend && !ctrl.suspended {
            return err(INVALID_STATE, format!("Controller {id} is not suspended"));
        }
        ctrl.suspended = suspend;
        Ok(json!({}))
    }
}
