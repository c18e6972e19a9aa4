//! The `fw.*` checks: the firmware settings of every NVIDIA/Mellanox NIC (PCI function 0)
//! as `mlxconfig`/`mstconfig -e query` reports them ([`FwFacts`]), judged read-only:
//! whether the tool could read them (`fw.tool`), each BlueField's mode of operation
//! (`fw.mode`), the settings against `--profile` (`fw.profile`) and changes waiting for a
//! firmware reset (`fw.pending`). Plain functions of the facts, called by `rules::judge`.

use super::fw_profile::{Expected, FwProfile};
use super::verdict::{fail, pass, put, skip, warn, CheckVerdict, FactValue, Facts};
use dpu_probe::fw_config::{FwDevice, FwFacts, TOOL_NAMES};
use dpu_probe::fw_config::{FwParam, FwQuery, FwValue};

/// How a pending change is named, everywhere.
pub(super) const TAKES_EFFECT: &str =
    "takes effect after a firmware reset (mlxfwreset or a power cycle)";

/// Why nothing was judged, when the facts say so.
fn not_read(fw: &FwFacts) -> Option<CheckVerdict> {
    match fw {
        FwFacts::NotRun(why) => Some(skip(why.clone())),
        FwFacts::NotRoot => Some(skip(
            "reading firmware settings (mlxconfig/mstconfig) needs root: run dpuctl check as root",
        )),
        FwFacts::NoTool => Some(skip(format!(
            "neither {} (NVIDIA MFT) nor {} (Debian package mstflint) is on PATH: \
             install mstflint to read the firmware settings",
            TOOL_NAMES[0], TOOL_NAMES[1]
        ))),
        FwFacts::PciUnreadable(e) => Some(skip(format!("cannot list PCI functions: {e}"))),
        FwFacts::Queried { devices, .. } if devices.is_empty() => {
            Some(skip("no NVIDIA/Mellanox NIC (PCI function 0) on this host"))
        }
        FwFacts::Queried { .. } => None,
    }
}

/// A value as a fact: a plain number as a number, anything else as printed.
fn value_fact(value: &FwValue) -> FactValue {
    match (&value.name, value.number) {
        (None, Some(n)) => n.into(),
        _ => (&value.raw).into(),
    }
}

fn param_record(p: &FwParam) -> Facts {
    let mut r = Facts::new();
    r.insert("name", (&p.name).into());
    if let Some(v) = &p.default {
        r.insert("default", value_fact(v));
    }
    if let Some(v) = &p.current {
        r.insert("current", value_fact(v));
    }
    r.insert("next_boot", value_fact(&p.next_boot));
    r.insert("pending", p.pending().into());
    r
}

fn device_record(d: &FwDevice) -> Facts {
    let mut r = Facts::new();
    r.insert("address", (&d.address).into());
    put(&mut r, "model", d.model);
    match &d.query {
        Ok(q) => {
            put(&mut r, "device_type", q.device_type.as_deref());
            put(&mut r, "part_name", q.part_name.as_deref());
            let params: Vec<Facts> = q.params.iter().map(param_record).collect();
            r.insert("parameters", params.into());
            if !q.errors.is_empty() {
                r.insert("tool_errors", q.errors.clone().into());
            }
        }
        Err(e) => {
            r.insert("error", e.into());
        }
    }
    r
}

/// `fw.tool`: the tool is installed and read every device's table.
pub(super) fn tool(fw: &FwFacts, f: &mut Facts) -> CheckVerdict {
    if let Some(v) = not_read(fw) {
        return v;
    }
    let FwFacts::Queried { tool, devices } = fw else {
        return skip("firmware settings not read");
    };
    f.insert("tool", tool.name.into());
    f.insert("tool_path", tool.path.display().to_string().into());
    let records: Vec<Facts> = devices.iter().map(device_record).collect();
    f.insert("devices", records.into());
    let mut failed = Vec::new();
    let mut partial = Vec::new();
    let mut read = Vec::new();
    for d in devices {
        match &d.query {
            Err(e) => failed.push(format!("{}: {e}", d.label())),
            Ok(q) if !q.errors.is_empty() => {
                partial.push(format!("{}: {}", d.label(), q.errors.join("; ")))
            }
            Ok(q) => read.push(format!("{} {} parameters", d.label(), q.params.len())),
        }
    }
    if !failed.is_empty() {
        fail(format!(
            "{} could not read: {}",
            tool.name,
            failed.join("; ")
        ))
    } else if !partial.is_empty() {
        warn(format!(
            "{} read only part: {}",
            tool.name,
            partial.join("; ")
        ))
    } else {
        pass(format!("{} read {}", tool.name, read.join(", ")))
    }
}

/// A BlueField's mode of operation, from the INTERNAL_CPU_* parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// EMBEDDED_CPU with the offload engine enabled and the Arm owning the functions.
    Dpu,
    /// EMBEDDED_CPU with INTERNAL_CPU_OFFLOAD_ENGINE DISABLED (BlueField-3 NIC mode; on
    /// BlueField-2 also the EXT_HOST_PF owners).
    Nic,
    /// INTERNAL_CPU_MODEL SEPARATED_HOST (obsolete on BlueField-3).
    SeparatedHost,
    /// The offload engine enabled but some owner is the host: neither documented mode.
    Mixed(String),
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Dpu => f.write_str("DPU mode"),
            Self::Nic => f.write_str("NIC mode"),
            Self::SeparatedHost => f.write_str("separated-host mode"),
            Self::Mixed(why) => write!(f, "no documented mode ({why})"),
        }
    }
}

const MODE_PARAMS: [&str; 5] = [
    "INTERNAL_CPU_MODEL",
    "INTERNAL_CPU_OFFLOAD_ENGINE",
    "INTERNAL_CPU_PAGE_SUPPLIER",
    "INTERNAL_CPU_ESWITCH_MANAGER",
    "INTERNAL_CPU_IB_VPORT0",
];

/// The mode one column shows; `None` when INTERNAL_CPU_MODEL is not readable.
fn mode_in(q: &FwQuery, column: fn(&FwParam) -> Option<&FwValue>) -> Option<Mode> {
    let number = |name: &str| {
        q.param(name)
            .and_then(column)
            .filter(|v| v.is_known())
            .and_then(|v| v.number)
    };
    match number("INTERNAL_CPU_MODEL")? {
        0 => return Some(Mode::SeparatedHost),
        1 => {}
        other => return Some(Mode::Mixed(format!("INTERNAL_CPU_MODEL={other}"))),
    }
    if number("INTERNAL_CPU_OFFLOAD_ENGINE") == Some(1) {
        return Some(Mode::Nic);
    }
    let host_owned: Vec<&str> = MODE_PARAMS[2..]
        .iter()
        .copied()
        .filter(|name| number(name) == Some(1))
        .collect();
    if host_owned.is_empty() {
        Some(Mode::Dpu)
    } else if host_owned.len() == 3 && number("INTERNAL_CPU_OFFLOAD_ENGINE").is_none() {
        // BlueField-2 firmware without the offload-engine parameter: NIC mode is the
        // three owners set to EXT_HOST_PF.
        Some(Mode::Nic)
    } else {
        Some(Mode::Mixed(format!(
            "offload engine enabled but {} = EXT_HOST_PF",
            host_owned.join(", ")
        )))
    }
}

/// The mode a profile asks for, when it names the mode parameters.
fn expected_mode(profile: Option<&FwProfile>) -> Option<Mode> {
    let profile = profile?;
    let is = |name: &str, n: u64| profile.get(name).and_then(|e| e.number) == Some(n);
    if is("INTERNAL_CPU_MODEL", 0) {
        Some(Mode::SeparatedHost)
    } else if is("INTERNAL_CPU_OFFLOAD_ENGINE", 1) {
        Some(Mode::Nic)
    } else if is("INTERNAL_CPU_OFFLOAD_ENGINE", 0) || is("INTERNAL_CPU_MODEL", 1) {
        Some(Mode::Dpu)
    } else {
        None
    }
}

/// The mode parameters of one device as `NAME=VALUE`, for details.
fn mode_settings(q: &FwQuery, column: fn(&FwParam) -> Option<&FwValue>) -> String {
    MODE_PARAMS
        .iter()
        .filter_map(|name| {
            let value = q.param(name).and_then(column)?;
            Some(format!("{name}={value}"))
        })
        .take(2)
        .collect::<Vec<_>>()
        .join(", ")
}

fn current_or_next(p: &FwParam) -> Option<&FwValue> {
    p.current.as_ref().or(Some(&p.next_boot))
}

fn next(p: &FwParam) -> Option<&FwValue> {
    Some(&p.next_boot)
}

/// `fw.mode`: each BlueField's mode now and after the next firmware reset.
pub(super) fn mode(fw: &FwFacts, profile: Option<&FwProfile>, f: &mut Facts) -> CheckVerdict {
    if let Some(v) = not_read(fw) {
        return v;
    }
    let read = fw.read_devices();
    let (bluefields, others): (Vec<_>, Vec<_>) = read.iter().partition(|(d, _)| d.is_bluefield());
    let other_labels: Vec<String> = others.iter().map(|(d, _)| d.label()).collect();
    if !other_labels.is_empty() {
        f.insert("other_devices", other_labels.clone().into());
    }
    if bluefields.is_empty() {
        return skip(format!(
            "no BlueField among the devices read{}",
            if other_labels.is_empty() {
                String::new()
            } else {
                format!(" ({})", other_labels.join(", "))
            }
        ));
    }
    let want = expected_mode(profile);
    put(f, "expected_mode", want.as_ref().map(|m| m.to_string()));
    let mut records = Vec::new();
    let (mut bad, mut doubt, mut good, mut unknown) = (vec![], vec![], vec![], vec![]);
    for (d, q) in &bluefields {
        let now = mode_in(q, current_or_next);
        let after = mode_in(q, next);
        let mut r = Facts::new();
        r.insert("address", (&d.address).into());
        put(&mut r, "model", d.model);
        put(&mut r, "mode", now.as_ref().map(|m| m.to_string()));
        put(
            &mut r,
            "next_boot_mode",
            after.as_ref().map(|m| m.to_string()),
        );
        records.push(r);
        let Some(now) = now else {
            unknown.push(format!("{}: no readable INTERNAL_CPU_MODEL", d.label()));
            continue;
        };
        let settings = mode_settings(q, current_or_next);
        let line = format!("{} {now} ({settings})", d.label());
        match (&want, after) {
            (_, Some(after)) if after != now && q.shows_current() => doubt.push(format!(
                "{}: {now} now, {after} after the next firmware reset ({}): {TAKES_EFFECT}",
                d.label(),
                mode_settings(q, next)
            )),
            (Some(want), _) if *want != now => {
                bad.push(format!("{line}, but the profile expects {want}"))
            }
            (None, _) if now != Mode::Dpu => doubt.push(format!(
                "{line}: the Arm does not own the eswitch, so the agent, SNAP and the offload \
                 proofs cannot work; if this is intended, pin the mode in --profile"
            )),
            _ => good.push(line),
        }
    }
    f.insert("devices", records.into());
    let also = if unknown.is_empty() {
        String::new()
    } else {
        format!("; not judged: {}", unknown.join(", "))
    };
    if !bad.is_empty() {
        fail(format!("{}{also}", bad.join("; ")))
    } else if !doubt.is_empty() {
        warn(format!("{}{also}", doubt.join("; ")))
    } else if good.is_empty() {
        skip(unknown.join("; "))
    } else {
        pass(format!("{}{also}", good.join("; ")))
    }
}

fn expected_record(param: &str, e: &Expected) -> Facts {
    let mut r = Facts::new();
    r.insert("param", param.into());
    r.insert("expected", (&e.shown).into());
    r
}

/// `fw.profile`: every `--profile` parameter on every device that reports it.
pub(super) fn profile(fw: &FwFacts, profile: Option<&FwProfile>, f: &mut Facts) -> CheckVerdict {
    let Some(profile) = profile else {
        return skip("no --profile FILE: nothing to compare the firmware settings with");
    };
    let expected: Vec<Facts> = profile
        .entries
        .iter()
        .map(|e| expected_record(&e.param, &e.expected))
        .collect();
    f.insert("expected", expected.into());
    if let Some(v) = not_read(fw) {
        return v;
    }
    let read = fw.read_devices();
    if read.is_empty() {
        return skip("no device's firmware settings could be read (see fw.tool)");
    }
    let (mut bad, mut doubt, mut good) = (vec![], vec![], 0usize);
    let mut mismatched = Vec::new();
    for entry in &profile.entries {
        let want = &entry.expected;
        let mut reported = false;
        for (d, q) in &read {
            let Some(p) = q.param(&entry.param) else {
                continue;
            };
            reported = true;
            let now = p.current.as_ref().unwrap_or(&p.next_boot);
            let mut r = Facts::new();
            r.insert("address", (&d.address).into());
            r.insert("param", (&entry.param).into());
            r.insert("expected", (&want.shown).into());
            r.insert("current", value_fact(now));
            r.insert("next_boot", value_fact(&p.next_boot));
            if want.matches(now) && want.matches(&p.next_boot) {
                good += 1;
                continue;
            }
            if want.matches(&p.next_boot) {
                doubt.push(format!(
                    "{} {}: expected {}, current {}, next boot {}: {TAKES_EFFECT}",
                    d.label(),
                    entry.param,
                    want.shown,
                    now,
                    p.next_boot
                ));
            } else if want.matches(now) {
                bad.push(format!(
                    "{} {}: expected {}, current {} but next boot {}: the next firmware reset \
                     undoes it",
                    d.label(),
                    entry.param,
                    want.shown,
                    now,
                    p.next_boot
                ));
            } else {
                bad.push(format!(
                    "{} {}: expected {}, current {}{}",
                    d.label(),
                    entry.param,
                    want.shown,
                    now,
                    if p.next_boot.same_setting(now) {
                        String::new()
                    } else {
                        format!(", next boot {}", p.next_boot)
                    }
                ));
            }
            mismatched.push(r);
        }
        if !reported {
            bad.push(format!(
                "{} (profile line {}) is reported by no device: misspelled, or not a parameter of \
                 this firmware",
                entry.param, entry.line
            ));
        }
    }
    f.insert("mismatched", mismatched.into());
    if !bad.is_empty() {
        fail(bad.join("; "))
    } else if !doubt.is_empty() {
        warn(doubt.join("; "))
    } else {
        pass(format!(
            "{} settings as the profile expects on {} device(s)",
            good,
            read.len()
        ))
    }
}

/// `fw.pending`: every parameter whose next-boot value differs from the running one.
pub(super) fn pending(fw: &FwFacts, f: &mut Facts) -> CheckVerdict {
    if let Some(v) = not_read(fw) {
        return v;
    }
    let read = fw.read_devices();
    let judged: Vec<_> = read.iter().filter(|(_, q)| q.shows_current()).collect();
    if judged.is_empty() {
        return skip(
            "no device reported current values (the firmware does not support reading them, or \
             no table was read)",
        );
    }
    let mut records = Vec::new();
    let mut found = Vec::new();
    for (d, q) in &judged {
        let changes: Vec<String> = q
            .params
            .iter()
            .filter(|p| p.pending())
            .map(|p| {
                let mut r = Facts::new();
                r.insert("address", (&d.address).into());
                r.insert("param", (&p.name).into());
                if let Some(c) = &p.current {
                    r.insert("current", value_fact(c));
                }
                r.insert("next_boot", value_fact(&p.next_boot));
                records.push(r);
                format!(
                    "{} {} -> {}",
                    p.name,
                    p.current.as_ref().map_or("?".to_owned(), |c| c.raw.clone()),
                    p.next_boot
                )
            })
            .collect();
        if !changes.is_empty() {
            found.push(format!("{}: {}", d.label(), changes.join(", ")));
        }
    }
    f.insert("pending", records.into());
    if found.is_empty() {
        pass(format!(
            "no pending change on {}",
            judged
                .iter()
                .map(|(d, _)| d.label())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    } else {
        warn(format!("{}; {TAKES_EFFECT}", found.join("; ")))
    }
}
