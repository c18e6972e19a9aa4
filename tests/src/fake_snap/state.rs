//! The fake's SNAP state and method handlers for both dialects: what SNAP keeps (bdevs from
//! `bdev_nvme_attach_controller`, subsystems, namespaces, controllers with a suspended flag)
//! and what it refuses, answered as SPDK-style JSON-RPC errors `(code, message)`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

mod nvme;

/// SPDK's "invalid params" code.
const INVALID_PARAMS: i64 = -32602;
/// -ENODEV, what SPDK answers for unknown bdevs and controllers.
const ENODEV: i64 = -19;
/// -EEXIST, what SPDK answers for duplicate names.
const EEXIST: i64 = -17;
/// -EBUSY.
const EBUSY: i64 = -16;
/// -ENOENT.
const ENOENT: i64 = -2;
/// SPDK's generic "invalid state" code.
const INVALID_STATE: i64 = -1;

/// A JSON-RPC error the fake answers with: code and message.
pub(crate) type RpcError = (i64, String);

/// Which SNAP method set the fake speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FakeDialect {
    /// DOCA SNAP 4 (`nvme_subsystem_create`, ...).
    #[default]
    Snap4,
    /// mlnx_snap 3 (`subsystem_nvme_create`, ...).
    Snap3,
}

/// Which request form of `bdev_get_iostat` the fake accepts (SPDK drifted, storage.md §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IostatForm {
    /// `name` and `names` (SPDK v26.01).
    #[default]
    Both,
    /// Only `name` (SPDK ≤ v25.09).
    NameOnly,
    /// Only `names` (SPDK ≥ v26.05).
    NamesOnly,
}

/// A bdev and its counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeBdev {
    /// The `bdev_nvme_attach_controller` controller it belongs to.
    pub controller: String,
    /// Bytes read so far.
    pub bytes_read: u64,
    /// Read ops so far.
    pub num_read_ops: u64,
    /// Bytes written so far.
    pub bytes_written: u64,
    /// Write ops so far.
    pub num_write_ops: u64,
}

/// A namespace of a subsystem.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeNamespace {
    /// Backing bdev.
    pub bdev: String,
    /// UUID, if given.
    pub uuid: Option<String>,
    /// Controllers it is attached to (at most one: SNAP does not share namespaces).
    pub controllers: BTreeSet<String>,
}

/// A subsystem.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeSubsystem {
    /// Serial number.
    pub serial_number: String,
    /// Model number.
    pub model_number: String,
    /// Namespaces by nsid.
    pub namespaces: BTreeMap<u32, FakeNamespace>,
}

/// An emulated controller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeController {
    /// Its subsystem.
    pub nqn: String,
    /// Controller id within the subsystem (SNAP 3 addressing).
    pub cntlid: u16,
    /// The function it emulates, e.g. `pf0`, `pf0vf1`, or a BDF.
    pub function: String,
    /// Whether it is suspended (SNAP 4 creates it suspended when asked).
    pub suspended: bool,
    /// Attached nsids.
    pub namespaces: BTreeSet<u32>,
}

/// Everything the fake SNAP keeps; lost on [`FakeSnap::restart`](super::FakeSnap::restart).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeSnapState {
    /// Bdevs by name.
    pub bdevs: BTreeMap<String, FakeBdev>,
    /// `bdev_nvme_attach_controller` controllers by name, with their bdevs.
    pub nvme_controllers: BTreeMap<String, Vec<String>>,
    /// Subsystems by NQN.
    pub subsystems: BTreeMap<String, FakeSubsystem>,
    /// Emulated controllers by `ctrl_id` (SNAP 4) or name (SNAP 3).
    pub controllers: BTreeMap<String, FakeController>,
    next_ctrl: u32,
}

fn err<T>(code: i64, message: impl Into<String>) -> Result<T, RpcError> {
    Err((code, message.into()))
}

/// Checks params strictly like SPDK's decoders: an object with only `allowed` keys.
fn obj<'a>(
    params: Option<&'a Value>,
    allowed: &[&str],
) -> Result<Option<&'a Map<String, Value>>, RpcError> {
    match params {
        None => Ok(None),
        Some(Value::Object(m)) if m.keys().all(|k| allowed.contains(&k.as_str())) => Ok(Some(m)),
        Some(_) => err(INVALID_PARAMS, "Invalid parameters"),
    }
}

fn req<'a>(
    params: Option<&'a Value>,
    allowed: &[&str],
) -> Result<&'a Map<String, Value>, RpcError> {
    obj(params, allowed)?.ok_or((INVALID_PARAMS, "Invalid parameters".to_owned()))
}

fn s(m: &Map<String, Value>, key: &str) -> Result<String, RpcError> {
    opt_s(m, key)?.ok_or((INVALID_PARAMS, "Invalid parameters".to_owned()))
}

fn opt_s(m: &Map<String, Value>, key: &str) -> Result<Option<String>, RpcError> {
    match m.get(key) {
        None => Ok(None),
        Some(Value::String(v)) => Ok(Some(v.clone())),
        Some(_) => err(INVALID_PARAMS, "Invalid parameters"),
    }
}

fn n(m: &Map<String, Value>, key: &str) -> Result<u32, RpcError> {
    opt_n(m, key)?.ok_or((INVALID_PARAMS, "Invalid parameters".to_owned()))
}

fn opt_n(m: &Map<String, Value>, key: &str) -> Result<Option<u32>, RpcError> {
    match m.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .map(Some)
            .ok_or((INVALID_PARAMS, "Invalid parameters".to_owned())),
    }
}

fn function_of(m: &Map<String, Value>) -> Result<String, RpcError> {
    if let Some(bdf) = opt_s(m, "pci_bdf")? {
        return Ok(bdf);
    }
    if let Some(vuid) = opt_s(m, "vuid")? {
        return Ok(vuid);
    }
    match (opt_n(m, "pf_id")?, opt_n(m, "vf_id")?) {
        (Some(pf), None) => Ok(format!("pf{pf}")),
        (Some(pf), Some(vf)) => Ok(format!("pf{pf}vf{vf}")),
        _ => err(INVALID_PARAMS, "Invalid parameters: no function given"),
    }
}

impl FakeSnapState {
    /// Handles one SNAP/SPDK method that touches state; `None` when it is not one of them.
    pub(crate) fn dispatch(
        &mut self,
        dialect: FakeDialect,
        iostat: IostatForm,
        method: &str,
        p: Option<&Value>,
    ) -> Option<Result<Value, RpcError>> {
        Some(match (dialect, method) {
            (_, "bdev_nvme_attach_controller") => self.attach(p),
            (_, "bdev_nvme_detach_controller") => self.detach(p),
            (_, "bdev_get_bdevs") => self.get_bdevs(p),
            (_, "bdev_get_iostat") => self.iostat(iostat, p),
            (FakeDialect::Snap4, "nvme_subsystem_create") => self.subsystem_create(p, false),
            (FakeDialect::Snap3, "subsystem_nvme_create") => self.subsystem_create(p, true),
            (FakeDialect::Snap4, "nvme_subsystem_destroy")
            | (FakeDialect::Snap3, "subsystem_nvme_delete") => self.subsystem_destroy(p),
            (FakeDialect::Snap4, "nvme_subsystem_list")
            | (FakeDialect::Snap3, "subsystem_nvme_list") => Ok(self.subsystem_list()),
            (FakeDialect::Snap4, "nvme_namespace_create") => self.namespace_create(p),
            (FakeDialect::Snap4, "nvme_namespace_destroy") => self.namespace_destroy(p),
            (FakeDialect::Snap4, "nvme_controller_create") => self.controller_create(p),
            (FakeDialect::Snap3, "controller_nvme_create") => self.controller_create3(p),
            (FakeDialect::Snap4, "nvme_controller_destroy") => self.controller_destroy(p),
            (FakeDialect::Snap3, "controller_nvme_delete") => self.controller_delete3(p),
            (FakeDialect::Snap4, "nvme_controller_list")
            | (FakeDialect::Snap3, "controller_list") => Ok(self.controller_list()),
            (FakeDialect::Snap4, "nvme_controller_attach_ns") => self.attach_ns(p),
            (FakeDialect::Snap4, "nvme_controller_detach_ns") => self.detach_ns(p),
            (FakeDialect::Snap3, "controller_nvme_namespace_attach") => self.attach_ns3(p),
            (FakeDialect::Snap3, "controller_nvme_namespace_detach") => self.detach_ns3(p),
            (FakeDialect::Snap4, "nvme_controller_suspend") => self.set_suspended(p, true),
            (FakeDialect::Snap4, "nvme_controller_resume") => self.set_suspended(p, false),
            _ => return None,
        })
    }

    fn attach(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let allowed = [
            "name",
            "trtype",
            "adrfam",
            "traddr",
            "trsvcid",
            "subnqn",
            "hostnqn",
            "hostaddr",
            "hostsvcid",
            "multipath",
            "hdgst",
            "ddgst",
            "psk",
            "num_io_queues",
            "ctrlr_loss_timeout_sec",
            "reconnect_delay_sec",
        ];
        let m = req(p, &allowed)?;
        let name = s(m, "name")?;
        let trtype = s(m, "trtype")?.to_ascii_lowercase();
        s(m, "traddr")?;
        if !["rdma", "tcp", "pcie"].contains(&trtype.as_str()) {
            return err(INVALID_PARAMS, format!("Failed to parse trtype: {trtype}"));
        }
        if self.nvme_controllers.contains_key(&name) {
            return err(EEXIST, format!("A controller named {name} already exists"));
        }
        let bdev = format!("{name}n1");
        self.bdevs.insert(
            bdev.clone(),
            FakeBdev {
                controller: name.clone(),
                ..FakeBdev::default()
            },
        );
        self.nvme_controllers.insert(name, vec![bdev.clone()]);
        Ok(json!([bdev]))
    }

    fn detach(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let allowed = ["name", "trtype", "traddr", "adrfam", "trsvcid", "subnqn"];
        let name = s(req(p, &allowed)?, "name")?;
        let Some(bdevs) = self.nvme_controllers.remove(&name) else {
            return err(
                ENODEV,
                format!("Controller {name} not found: No such device"),
            );
        };
        for bdev in bdevs {
            self.bdevs.remove(&bdev);
        }
        Ok(json!(true))
    }

    fn bdev_json(name: &str) -> Value {
        json!({"name": name, "product_name": "NVMe disk", "block_size": 512,
               "num_blocks": 2_097_152, "claimed": false})
    }

    fn get_bdevs(&self, p: Option<&Value>) -> Result<Value, RpcError> {
        match obj(p, &["name", "timeout"])?
            .map(|m| opt_s(m, "name"))
            .transpose()?
            .flatten()
        {
            Some(name) if self.bdevs.contains_key(&name) => Ok(json!([Self::bdev_json(&name)])),
            Some(name) => err(ENODEV, format!("bdev {name} not found: No such device")),
            None => Ok(Value::Array(
                self.bdevs.keys().map(|b| Self::bdev_json(b)).collect(),
            )),
        }
    }

    fn iostat(&self, form: IostatForm, p: Option<&Value>) -> Result<Value, RpcError> {
        let allowed: &[&str] = match form {
            IostatForm::Both => &["name", "names", "per_channel", "reset_mode"],
            IostatForm::NameOnly => &["name", "per_channel", "reset_mode"],
            IostatForm::NamesOnly => &["names", "per_channel", "reset_mode"],
        };
        let m = obj(p, allowed)?;
        let mut wanted: Vec<String> = Vec::new();
        if let Some(m) = m {
            wanted.extend(opt_s(m, "name")?);
            match m.get("names") {
                None => {}
                Some(Value::Array(names)) => {
                    for v in names {
                        let v = v
                            .as_str()
                            .ok_or((INVALID_PARAMS, "Invalid parameters".into()));
                        wanted.push(v?.to_owned());
                    }
                }
                Some(_) => return err(INVALID_PARAMS, "Invalid parameters"),
            }
        }
        if wanted.is_empty() {
            wanted = self.bdevs.keys().cloned().collect();
        }
        let mut bdevs = Vec::new();
        for name in wanted {
            let Some(b) = self.bdevs.get(&name) else {
                return err(
                    ENODEV,
                    format!("Bdev {name} does not exist: No such device"),
                );
            };
            bdevs.push(json!({
                "name": name, "bytes_read": b.bytes_read, "num_read_ops": b.num_read_ops,
                "bytes_written": b.bytes_written, "num_write_ops": b.num_write_ops,
                "bytes_unmapped": 0, "num_unmap_ops": 0, "read_latency_ticks": b.num_read_ops * 1000,
                "write_latency_ticks": b.num_write_ops * 2000, "unmap_latency_ticks": 0,
            }));
        }
        Ok(json!({"tick_rate": 2_000_000_000_u64, "ticks": 123_456_789_u64, "bdevs": bdevs}))
    }
}
