//! The standard SPDK methods every SNAP serves, answered as SPDK v24.01 answers them:
//! `bdev_nvme_attach_controller`, `bdev_nvme_detach_controller`,
//! `bdev_nvme_get_controllers` (`module/bdev/nvme/bdev_nvme_rpc.c`, `bdev_nvme.c`),
//! `bdev_get_bdevs` and `bdev_get_iostat` (`lib/bdev/bdev_rpc.c`, `bdev.c`). Codes and
//! messages are copied from those files, trailing `\n` included where SPDK's format string
//! has one.
//!
//! Decoder tables are v24.01's whatever [`FakeSnap::set_version`] says, except where a
//! handler notes a version rule.
//!
//! [`FakeSnap::set_version`]: crate::fake_snap::FakeSnap::set_version

use serde_json::{json, Value};

use super::decode::{opt, req, spdk_decode, Ty};
use super::{
    err, errno, Config, FakeBdev, FakeNvmeController, FakeNvmeCtrlr, FakeSnapState,
    FakeSpdkVersion, FakeTrid, RpcError, EALREADY, EEXIST, EINVAL, EIO, ENODEV, ENXIO,
    INVALID_PARAMS,
};

/// `rpc_bdev_nvme_attach_controller_decoders` (v24.01).
const ATTACH_FIELDS: &[super::decode::Field] = &[
    req("name", Ty::Str),
    req("trtype", Ty::Str),
    req("traddr", Ty::Str),
    opt("adrfam", Ty::Str),
    opt("trsvcid", Ty::Str),
    opt("priority", Ty::Str),
    opt("subnqn", Ty::Str),
    opt("hostnqn", Ty::Str),
    opt("hostaddr", Ty::Str),
    opt("hostsvcid", Ty::Str),
    opt("prchk_reftag", Ty::Bool),
    opt("prchk_guard", Ty::Bool),
    opt("hdgst", Ty::Bool),
    opt("ddgst", Ty::Bool),
    opt("fabrics_connect_timeout_us", Ty::U64),
    opt(
        "multipath",
        Ty::OneOf(&["failover", "multipath", "disable"]),
    ),
    opt("num_io_queues", Ty::U32),
    opt("ctrlr_loss_timeout_sec", Ty::I32),
    opt("reconnect_delay_sec", Ty::U32),
    opt("fast_io_fail_timeout_sec", Ty::U32),
    opt("psk", Ty::Str),
    opt("max_bdevs", Ty::U32),
];

/// `rpc_bdev_nvme_detach_controller_decoders` (v24.01).
const DETACH_FIELDS: &[super::decode::Field] = &[
    req("name", Ty::Str),
    opt("trtype", Ty::Str),
    opt("traddr", Ty::Str),
    opt("adrfam", Ty::Str),
    opt("trsvcid", Ty::Str),
    opt("subnqn", Ty::Str),
    opt("hostaddr", Ty::Str),
    opt("hostsvcid", Ty::Str),
];

/// `sizeof` the `spdk_nvme_transport_id` members (`SPDK_NVMF_*_MAX_LEN + 1`): a value that
/// long (or longer) is refused as "too long".
const TRADDR_SIZE: usize = 257;
const TRSVCID_SIZE: usize = 33;
const SUBNQN_SIZE: usize = 224;
/// `SPDK_NVMF_TRSTRING_MAX_LEN`.
const TRSTRING_MAX: usize = 32;
/// `SPDK_NVMF_NQN_MAX_LEN`: `hostnqn` is truncated to it (`snprintf`), not refused.
const NQN_MAX: usize = 223;

/// `spdk_nvme_transport_id_parse_trtype` + `spdk_nvme_transport_id_trtype_str`: the
/// canonical name, `CUSTOM` for anything else.
fn canonical_trtype(trtype: &str) -> &'static str {
    ["PCIe", "RDMA", "FC", "TCP", "VFIOUSER"]
        .into_iter()
        .find(|t| t.eq_ignore_ascii_case(trtype))
        .unwrap_or("CUSTOM")
}

/// `spdk_nvme_transport_id_parse_adrfam` + `spdk_nvme_transport_id_adrfam_str`.
fn canonical_adrfam(adrfam: &str) -> Option<&'static str> {
    ["IPv4", "IPv6", "IB", "FC"]
        .into_iter()
        .find(|a| a.eq_ignore_ascii_case(adrfam))
}

/// `bdev_nvme_check_io_error_resiliency_params` (v24.01 `bdev_nvme.c`).
fn resiliency_ok(ctrlr_loss: i32, reconnect_delay: u32, fast_io_fail: u32) -> bool {
    match ctrlr_loss {
        i32::MIN..=-2 => false,
        -1 => reconnect_delay != 0 && (fast_io_fail == 0 || fast_io_fail >= reconnect_delay),
        0 => reconnect_delay == 0 && fast_io_fail == 0,
        loss => {
            let loss = loss.unsigned_abs();
            reconnect_delay != 0
                && reconnect_delay <= loss
                && (fast_io_fail == 0 || (fast_io_fail >= reconnect_delay && fast_io_fail <= loss))
        }
    }
}

/// What a failed connect answers (`rpc_bdev_nvme_attach_controller_done` with rc < 0):
/// -32602 "Invalid parameters" up to v24.05 (v24.01 `bdev_nvme_rpc.c`). From v24.09 the
/// probe's errno comes back, -5 "Input/output error" (per the audit, v25.09
/// `bdev_nvme.c`; not read here: UNVERIFIED for the releases in between).
fn connect_failed<T>(version: &FakeSpdkVersion) -> Result<T, RpcError> {
    if version.at_least(24, 9) {
        errno(EIO)
    } else {
        err(INVALID_PARAMS, "Invalid parameters")
    }
}

impl FakeSnapState {
    /// `bdev_nvme_attach_controller`, step by step as `rpc_bdev_nvme_attach_controller`
    /// and `bdev_nvme_create` check it. The fake's remote targets: every address connects
    /// (one namespace, so one bdev `<name>n1`) unless
    /// [`FakeSnap::refuse_connections_to`](crate::fake_snap::FakeSnap::refuse_connections_to)
    /// says otherwise; a connect without `subnqn` fails as the target refuses it. Only
    /// `RDMA` and `TCP` can connect (`PCIe` probes nothing; `FC`, `VFIOUSER` and unknown
    /// transports are not available: -19).
    pub(super) fn attach(&mut self, config: &Config, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, ATTACH_FIELDS)?;
        let name = a.s("name");
        let max_bdevs = a.u32("max_bdevs").unwrap_or(128);
        if max_bdevs == 0 {
            return err(EINVAL, "max_bdevs cannot be zero");
        }
        let trtype_in = a.s("trtype");
        if trtype_in.len() > TRSTRING_MAX {
            return err(EINVAL, format!("Failed to parse trtype: {trtype_in}"));
        }
        let traddr = a.s("traddr");
        if traddr.len() >= TRADDR_SIZE {
            return err(EINVAL, format!("traddr too long: {traddr}"));
        }
        let adrfam = match a.str("adrfam") {
            None => None,
            Some(s) => match canonical_adrfam(s) {
                Some(c) => Some(c.to_owned()),
                None => return err(EINVAL, format!("Failed to parse adrfam: {s}")),
            },
        };
        let trsvcid = a.string("trsvcid").unwrap_or_default();
        if trsvcid.len() >= TRSVCID_SIZE {
            return err(EINVAL, format!("trsvcid too long: {trsvcid}"));
        }
        let subnqn = a.string("subnqn").unwrap_or_default();
        if subnqn.len() >= SUBNQN_SIZE {
            return err(EINVAL, format!("subnqn too long: {subnqn}"));
        }
        let mut hostnqn = a
            .string("hostnqn")
            .unwrap_or_else(|| self.default_hostnqn.clone());
        hostnqn.truncate(NQN_MAX);
        if let Some(psk) = a.str("psk") {
            if !psk_file_ok(psk) {
                return err(EINVAL, format!("Could not retrieve PSK from file: {psk}"));
            }
        }
        let hostaddr = a.string("hostaddr").unwrap_or_default();
        if hostaddr.len() >= TRADDR_SIZE {
            return err(EINVAL, format!("hostaddr too long: {hostaddr}"));
        }
        let hostsvcid = a.string("hostsvcid").unwrap_or_default();
        if hostsvcid.len() >= TRSVCID_SIZE {
            return err(EINVAL, format!("hostsvcid too long: {hostsvcid}"));
        }
        let prchk = a.bool("prchk_reftag") == Some(true) || a.bool("prchk_guard") == Some(true);
        // The default multipath mode is failover up to v24.09 (v24.01: "initialize the
        // multipath parameter to add a failover path"); from v25.01 it is multipath (per
        // the audit's CHANGELOG reading: UNVERIFIED here).
        let default_mode = if config.version.at_least(25, 1) {
            "multipath"
        } else {
            "failover"
        };
        let mode = a.str("multipath").unwrap_or(default_mode);
        let trid = FakeTrid {
            trtype: canonical_trtype(&trtype_in).to_owned(),
            adrfam,
            traddr,
            trsvcid,
            subnqn,
        };

        if let Some(existing) = self.nvme_controllers.get(&name) {
            if mode == "disable" {
                return err(
                    EALREADY,
                    format!("A controller named {name} already exists and multipath is disabled\n"),
                );
            }
            // `nvme_ctrlr_get_by_name`: the first nvme_ctrlr, its active path.
            let first = &existing.ctrlrs[0];
            let active = &first.paths[0];
            if trid.traddr == active.traddr
                && trid.trsvcid == active.trsvcid
                && hostaddr == first.hostaddr
                && hostsvcid == first.hostsvcid
            {
                return err(
                    EALREADY,
                    format!(
                        "A controller named {name} already exists with the specified network path\n"
                    ),
                );
            }
            if trid.subnqn != active.subnqn {
                return err(
                    EINVAL,
                    format!(
                        "A controller named {name} already exists, but uses a different subnqn ({})\n",
                        active.subnqn
                    ),
                );
            }
            if hostnqn != first.hostnqn {
                return err(
                    EINVAL,
                    format!(
                        "A controller named {name} already exists, but uses a different hostnqn ({})\n",
                        first.hostnqn
                    ),
                );
            }
            if prchk {
                return err(
                    EINVAL,
                    format!(
                        "A controller named {name} already exists. To add a path, do not specify PI options.\n"
                    ),
                );
            }
        }
        if let Some(queues) = a.u32("num_io_queues") {
            if queues == 0 || queues > u32::from(u16::MAX) + 1 {
                return err(
                    EINVAL,
                    format!(
                        "num_io_queues out of bounds, min: {} max: {}\n",
                        1,
                        u32::from(u16::MAX) + 1
                    ),
                );
            }
        }
        // bdev_nvme_create: a controller (any name) already using this transport id.
        if self
            .nvme_controllers
            .values()
            .flat_map(|c| &c.ctrlrs)
            .any(|c| c.paths[0].same(&trid))
        {
            return errno(EEXIST);
        }
        if !resiliency_ok(
            a.i32("ctrlr_loss_timeout_sec").unwrap_or(0),
            a.u32("reconnect_delay_sec").unwrap_or(0),
            a.u32("fast_io_fail_timeout_sec").unwrap_or(0),
        ) {
            return errno(EINVAL);
        }
        match trid.trtype.as_str() {
            "RDMA" | "TCP" => {}
            "PCIe" => return connect_failed(&config.version),
            // spdk_nvme_connect_async: "NVMe trtype ... not available" → NULL → -ENODEV.
            _ => return errno(ENODEV),
        }
        let address = (trid.traddr.clone(), trid.trsvcid.clone());
        if config.refused.contains(&address) {
            // Nothing listens there: the TCP connect fails at once. spdk_tgt v24.01 answers
            // -19 (seen in tests/tests/spdk, OBSERVED_V24_01); later releases are assumed
            // to answer like any failed connect (UNVERIFIED).
            return if config.version.at_least(24, 9) {
                connect_failed(&config.version)
            } else {
                errno(ENODEV)
            };
        }
        let unserved = config
            .serves
            .get(&address)
            .is_some_and(|subsystems| !subsystems.contains(&trid.subnqn));
        if unserved || trid.subnqn.is_empty() {
            // Listening, but no such subsystem: the fabric connect is rejected and the
            // attach fails in rpc_bdev_nvme_attach_controller_done (v24.01: -32602).
            return connect_failed(&config.version);
        }

        if self.nvme_controllers.contains_key(&name) {
            if mode == "multipath" {
                // connect_attach_cb: another nvme_ctrlr under the same name; its
                // namespaces join the existing bdevs, which are reported again.
                let cntlid = self.next_remote_cntlid();
                let existing = self.nvme_controllers.entry(name).or_default();
                existing.ctrlrs.push(FakeNvmeCtrlr {
                    paths: vec![trid],
                    hostnqn,
                    hostaddr,
                    hostsvcid,
                    cntlid,
                });
                return Ok(json!(existing.bdevs));
            }
            // connect_set_failover_cb → bdev_nvme_add_secondary_trid: refusals come back
            // through rpc_bdev_nvme_attach_controller_done as a failed attach.
            let existing = self.nvme_controllers.entry(name).or_default();
            let Some(ctrlr) = existing.ctrlrs.first_mut() else {
                return connect_failed(&config.version);
            };
            if ctrlr.paths[0].trtype != trid.trtype || ctrlr.paths.iter().any(|p| p.same(&trid)) {
                return connect_failed(&config.version);
            }
            ctrlr.paths.push(trid);
            // No new namespaces: the reply lists no bdevs.
            return Ok(json!([]));
        }

        let bdev = format!("{name}n1");
        self.bdevs.insert(
            bdev.clone(),
            FakeBdev {
                controller: name.clone(),
                ..FakeBdev::default()
            },
        );
        let cntlid = self.next_remote_cntlid();
        self.nvme_controllers.insert(
            name,
            FakeNvmeController {
                ctrlrs: vec![FakeNvmeCtrlr {
                    paths: vec![trid],
                    hostnqn,
                    hostaddr,
                    hostsvcid,
                    cntlid,
                }],
                bdevs: vec![bdev.clone()],
            },
        );
        Ok(json!([bdev]))
    }

    /// `bdev_nvme_detach_controller`: by name, optionally narrowed to matching paths
    /// (`nvme_path_id_compare`); unknown name -19 "No such device", no matching path -6
    /// "No such device or address". Removing the active path of a controller with
    /// alternates fails over to the next one.
    pub(super) fn detach(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, DETACH_FIELDS)?;
        let name = a.s("name");
        let trtype = match a.str("trtype") {
            Some(t) if t.len() > TRSTRING_MAX => {
                return err(EINVAL, format!("Failed to parse trtype: {t}"))
            }
            Some(t) => Some(canonical_trtype(t)),
            None => None,
        };
        let traddr = a.string("traddr").unwrap_or_default();
        if traddr.len() >= TRADDR_SIZE {
            return err(EINVAL, format!("traddr too long: {traddr}"));
        }
        let adrfam = match a.str("adrfam") {
            Some(s) => match canonical_adrfam(s) {
                Some(c) => Some(c),
                None => return err(EINVAL, format!("Failed to parse adrfam: {s}")),
            },
            None => None,
        };
        let trsvcid = a.string("trsvcid").unwrap_or_default();
        if trsvcid.len() >= TRSVCID_SIZE {
            return err(EINVAL, format!("trsvcid too long: {trsvcid}"));
        }
        let subnqn = a.string("subnqn").unwrap_or_default();
        if subnqn.len() >= SUBNQN_SIZE {
            return err(EINVAL, format!("subnqn too long: {subnqn}"));
        }
        let hostaddr = a.string("hostaddr").unwrap_or_default();
        let hostsvcid = a.string("hostsvcid").unwrap_or_default();
        let Some(controller) = self.nvme_controllers.get_mut(&name) else {
            return errno(ENODEV);
        };
        let matches = |path: &FakeTrid, ctrlr: &FakeNvmeCtrlr| {
            trtype.is_none_or(|t| path.trtype == t)
                && (traddr.is_empty() || path.traddr.eq_ignore_ascii_case(&traddr))
                && adrfam.is_none_or(|f| path.adrfam.as_deref() == Some(f))
                && (trsvcid.is_empty() || path.trsvcid.eq_ignore_ascii_case(&trsvcid))
                && (subnqn.is_empty() || path.subnqn == subnqn)
                && (hostaddr.is_empty() || ctrlr.hostaddr == hostaddr)
                && (hostsvcid.is_empty() || ctrlr.hostsvcid == hostsvcid)
        };
        let mut deleted = false;
        for ctrlr in &mut controller.ctrlrs {
            let probe = ctrlr.clone();
            let before = ctrlr.paths.len();
            let mut index = 0;
            ctrlr.paths.retain(|path| {
                let keep = index == 0 || !matches(path, &probe);
                index += 1;
                keep
            });
            deleted |= ctrlr.paths.len() != before;
            if matches(&ctrlr.paths[0], &probe) {
                // The active path: fail over to the next, or delete the nvme_ctrlr.
                ctrlr.paths.remove(0);
                deleted = true;
            }
        }
        if !deleted {
            return errno(ENXIO);
        }
        controller.ctrlrs.retain(|c| !c.paths.is_empty());
        if controller.ctrlrs.is_empty() {
            let controller = self.nvme_controllers.remove(&name).unwrap_or_default();
            for bdev in controller.bdevs {
                self.bdevs.remove(&bdev);
            }
        }
        Ok(json!(true))
    }

    /// `bdev_nvme_get_controllers {name?}`: `rpc_dump_nvme_bdev_controller_info` /
    /// `nvme_ctrlr_info_json` per controller. An unknown name answers code **+22**
    /// (`EINVAL`, positive as v24.01 writes it) "Controller X does not exist".
    pub(super) fn get_controllers(&self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, &[opt("name", Ty::Str)])?;
        let dump = |(name, c): (&String, &FakeNvmeController)| {
            let ctrlrs: Vec<Value> = c
                .ctrlrs
                .iter()
                .map(|ctrlr| {
                    let mut info = serde_json::Map::new();
                    info.insert("state".into(), "enabled".into());
                    info.insert("trid".into(), ctrlr.paths[0].json());
                    if ctrlr.paths.len() > 1 {
                        info.insert(
                            "alternate_trids".into(),
                            ctrlr.paths[1..].iter().map(FakeTrid::json).collect(),
                        );
                    }
                    info.insert("cntlid".into(), ctrlr.cntlid.into());
                    info.insert(
                        "host".into(),
                        json!({"nqn": ctrlr.hostnqn, "addr": ctrlr.hostaddr,
                               "svcid": ctrlr.hostsvcid}),
                    );
                    Value::Object(info)
                })
                .collect();
            json!({"name": name, "ctrlrs": ctrlrs})
        };
        match a.str("name") {
            Some(name) => match self.nvme_controllers.get_key_value(name) {
                Some(found) => Ok(json!([dump(found)])),
                None => err(-EINVAL, format!("Controller {name} does not exist")),
            },
            None => Ok(Value::Array(
                self.nvme_controllers.iter().map(dump).collect(),
            )),
        }
    }

    /// `rpc_dump_bdev_info` for an NVMe bdev (512-byte blocks, 1 GiB; UNVERIFIED sizes).
    fn bdev_json(name: &str, bdev: &FakeBdev) -> Value {
        json!({
            "name": name, "aliases": [], "product_name": "NVMe disk", "block_size": 512,
            "num_blocks": 2_097_152_u64, "uuid": uuid_of(name),
            "assigned_rate_limits": {"rw_ios_per_sec": bdev.qos[0],
                "rw_mbytes_per_sec": bdev.qos[1], "r_mbytes_per_sec": bdev.qos[2],
                "w_mbytes_per_sec": bdev.qos[3]},
            "claimed": false, "zoned": false,
            "supported_io_types": {"read": true, "write": true, "unmap": true,
                "write_zeroes": true, "flush": true, "reset": true, "compare": true,
                "compare_and_write": true, "abort": true, "nvme_admin": true, "nvme_io": true},
            "driver_specific": {"nvme": [{"ctrlr_data": {"cntlid": 1}, "controller": bdev.controller}],
                "mp_policy": if bdev.mp_policy.is_empty() {
                    super::multipath::DEFAULT_POLICY
                } else {
                    bdev.mp_policy.as_str()
                }},
        })
    }

    /// `bdev_get_bdevs {name?, timeout?}`; an unknown name answers -19 "No such device"
    /// (`spdk_bdev_open_async` → `rpc_bdev_get_bdev_cb`).
    pub(super) fn get_bdevs(&self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, &[opt("name", Ty::Str), opt("timeout", Ty::U64)])?;
        match a.str("name") {
            Some(name) => match self.bdevs.get(name) {
                Some(b) => Ok(json!([Self::bdev_json(name, b)])),
                None => errno(ENODEV),
            },
            None => Ok(Value::Array(
                self.bdevs
                    .iter()
                    .map(|(n, b)| Self::bdev_json(n, b))
                    .collect(),
            )),
        }
    }

    /// `bdev_set_qos_limit {name, rw_ios_per_sec?, rw_mbytes_per_sec?, r_mbytes_per_sec?,
    /// w_mbytes_per_sec?}` as SPDK v24.01 answers it (docs/reference/storage.md §7): decode
    /// (all `uint64`; a failure is -32603), open the bdev (unknown: -19 "No such device"),
    /// at least one key other than `UINT64_MAX` ("not given"; none: -22 "No rate limits
    /// specified"); then a given key replaces that limit and the others stay. An IOPS value
    /// is rounded up to a multiple of 1000 (in wrapping `uint64_t` arithmetic, as SPDK
    /// adds), a MiB/s value above `UINT64_MAX / 1 MiB` is clamped; 0 lifts the limit.
    pub(super) fn set_qos_limit(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        const KEYS: [&str; 4] = [
            "rw_ios_per_sec",
            "rw_mbytes_per_sec",
            "r_mbytes_per_sec",
            "w_mbytes_per_sec",
        ];
        const MAX_MBYTES: u64 = u64::MAX / (1024 * 1024);
        let a = spdk_decode(
            p,
            &[
                req("name", Ty::Str),
                opt(KEYS[0], Ty::U64),
                opt(KEYS[1], Ty::U64),
                opt(KEYS[2], Ty::U64),
                opt(KEYS[3], Ty::U64),
            ],
        )?;
        let Some(bdev) = self.bdevs.get_mut(a.str("name").unwrap_or_default()) else {
            return errno(ENODEV);
        };
        let given = KEYS.map(|key| a.u64(key).filter(|v| *v != u64::MAX));
        if given.iter().all(Option::is_none) {
            return err(EINVAL, "No rate limits specified");
        }
        for (i, value) in given.into_iter().enumerate() {
            let Some(value) = value else { continue };
            bdev.qos[i] = if i == 0 {
                match value % 1000 {
                    0 => value,
                    rest => value.wrapping_add(1000 - rest),
                }
            } else {
                value.min(MAX_MBYTES)
            };
        }
        Ok(Value::Bool(true))
    }

    /// `bdev_get_iostat`. The accepted keys follow the release: `name` and `per_channel`
    /// (v24.01 `rpc_bdev_get_iostat_decoders`), `reset_mode` from v24.05 (UNVERIFIED which
    /// release added it: v24.01 lacks it, the audit saw it in v25.09), `names` alongside
    /// `name` in v26.01, and only `names` from v26.05 (CHANGELOG per the audit). A refused
    /// form is a decode failure: -32603 "spdk_json_decode_object failed". `per_channel`
    /// without a name is -22 "Invalid argument"; an unknown bdev -19 "No such device".
    pub(super) fn iostat(
        &self,
        version: &FakeSpdkVersion,
        p: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let mut fields = vec![opt("per_channel", Ty::Bool)];
        if !version.at_least(26, 5) {
            fields.push(opt("name", Ty::Str));
        }
        if version.at_least(26, 1) {
            fields.push(opt("names", Ty::StrArray));
        }
        if version.at_least(24, 5) {
            fields.push(opt("reset_mode", Ty::OneOf(&["all", "maxmin", "none"])));
        }
        let a = spdk_decode(p, &fields)?;
        let mut wanted: Vec<String> = a.string("name").into_iter().collect();
        wanted.extend(a.strings("names").unwrap_or_default());
        let per_channel = a.bool("per_channel") == Some(true);
        if per_channel && wanted.is_empty() {
            return errno(EINVAL);
        }
        if wanted.iter().any(|n| !self.bdevs.contains_key(n)) {
            return errno(ENODEV);
        }
        if wanted.is_empty() {
            wanted = self.bdevs.keys().cloned().collect();
        }
        let ticks = Self::ticks();
        let stats = |name: &str, b: &FakeBdev| {
            let lat = |ops: u64, per: u64| (ops * per, if ops > 0 { per } else { 0 });
            let (read_total, read_one) = lat(b.num_read_ops, 1000);
            let (write_total, write_one) = lat(b.num_write_ops, 2000);
            json!({
                "name": name, "bytes_read": b.bytes_read, "num_read_ops": b.num_read_ops,
                "bytes_written": b.bytes_written, "num_write_ops": b.num_write_ops,
                "bytes_unmapped": 0, "num_unmap_ops": 0, "bytes_copied": 0, "num_copy_ops": 0,
                "read_latency_ticks": read_total, "max_read_latency_ticks": read_one,
                "min_read_latency_ticks": read_one,
                "write_latency_ticks": write_total, "max_write_latency_ticks": write_one,
                "min_write_latency_ticks": write_one,
                "unmap_latency_ticks": 0, "max_unmap_latency_ticks": 0,
                "min_unmap_latency_ticks": 0, "copy_latency_ticks": 0,
                "max_copy_latency_ticks": 0, "min_copy_latency_ticks": 0,
            })
        };
        if per_channel {
            // One channel (thread) per bdev; UNVERIFIED thread ids.
            let name = &wanted[0];
            let b = &self.bdevs[name];
            let mut channel = stats(name, b);
            if let Some(m) = channel.as_object_mut() {
                m.remove("name");
                m.insert("thread_id".into(), 2.into());
            }
            return Ok(json!({"tick_rate": 2_000_000_000_u64, "ticks": ticks,
                             "name": name, "channels": [channel]}));
        }
        let bdevs: Vec<Value> = wanted.iter().map(|n| stats(n, &self.bdevs[n])).collect();
        Ok(json!({"tick_rate": 2_000_000_000_u64, "ticks": ticks, "bdevs": bdevs}))
    }
}

/// `tcp_load_psk`'s checks: the file exists and only its owner may read it.
fn psk_file_ok(path: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o177 == 0)
}

/// A stable UUID for a bdev name (SPDK generates one per bdev; the fake derives it so
/// listings are deterministic).
fn uuid_of(name: &str) -> String {
    let mut hash: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for byte in name.bytes() {
        hash ^= u128::from(byte);
        hash = hash.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    let hex = format!("{hash:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resiliency_rules_follow_bdev_nvme_check_io_error_resiliency_params() {
        assert!(resiliency_ok(0, 0, 0));
        assert!(!resiliency_ok(0, 5, 0), "delay without loss timeout");
        assert!(!resiliency_ok(0, 0, 5), "fast fail without loss timeout");
        assert!(!resiliency_ok(30, 0, 0), "loss timeout without delay");
        assert!(resiliency_ok(30, 10, 0));
        assert!(!resiliency_ok(30, 31, 0), "delay above loss timeout");
        assert!(resiliency_ok(30, 10, 20));
        assert!(!resiliency_ok(30, 10, 5), "fast fail below delay");
        assert!(!resiliency_ok(30, 10, 31), "fast fail above loss timeout");
        assert!(resiliency_ok(-1, 10, 0), "-1: reconnect forever");
        assert!(!resiliency_ok(-1, 0, 0));
        assert!(!resiliency_ok(-1, 10, 5));
        assert!(!resiliency_ok(-2, 10, 0));
    }
}
