//! Conversions between the OVSDB types and the `dpu.v1` Switch messages (bridges, ports,
//! offload settings, flow filters). Pure functions, so every mapping is unit-tested without
//! a daemon. Flows and tc filters are converted below, by the OVS backend
//! (`crate::ovs::flow_wire`), which `/metrics` reads them through too.

use dpu_ovs::flow::DumpType;
use dpu_ovs::ovsdb::{self, InterfaceState};
use dpu_proto::names::Collection;
use dpu_proto::v1;

/// `other_config` keys of the offload settings.
pub(crate) const HW_OFFLOAD: &str = "hw-offload";
pub(crate) const TC_POLICY: &str = "tc-policy";
pub(crate) const MAX_IDLE: &str = "max-idle";
const DOCA_INIT: &str = "doca-init";

/// `bridges/{bridge}/ports/{port}`.
pub(crate) fn port_name(bridge: &str, port: &str) -> String {
    format!("{}/ports/{port}", Collection::Bridges.format(bridge))
}

/// A bridge with its ports, as the API shows it; `caught_up` is whether ovs-vswitchd had
/// applied every configuration when the bridge was read (`Open_vSwitch.cur_cfg >=
/// next_cfg`), which tells a bridge it could not create from one it has not reached yet.
pub(crate) fn bridge_to_wire(bridge: &ovsdb::Bridge, caught_up: bool) -> v1::Bridge {
    v1::Bridge {
        error: bridge_error(bridge, caught_up),
        name: Collection::Bridges.format(&bridge.name),
        bridge: bridge.name.clone(),
        datapath_type: bridge.datapath_type.clone(),
        ports: bridge
            .ports
            .iter()
            .map(|p| port_to_wire(&bridge.name, p))
            .collect(),
        uuid: bridge.uuid.to_string(),
    }
}

/// Why ovs-vswitchd is not running `bridge`, from its local interface's `ofport` and
/// `error` (`dpu_ovs::ovsdb::InterfaceState`); empty when it is, or cannot be told yet.
pub(crate) fn bridge_error(bridge: &ovsdb::Bridge, caught_up: bool) -> String {
    let Some(local) = bridge.local_interface() else {
        return String::new();
    };
    match local.state(caught_up) {
        InterfaceState::Refused { error: Some(text) } => text,
        InterfaceState::Refused { error: None } => format!(
            "ovs-vswitchd could not add the local port {}; see its log",
            bridge.name
        ),
        InterfaceState::NotCreated => format!(
            "ovs-vswitchd did not create the bridge: its datapath (type {}) could not be \
             opened; see its log",
            datapath_label(&bridge.datapath_type)
        ),
        InterfaceState::Open { .. } | InterfaceState::Pending => String::new(),
    }
}

/// A datapath type as a person reads it: OVS stores the kernel datapath as `""`.
pub(crate) fn datapath_label(datapath_type: &str) -> &str {
    if datapath_type.is_empty() {
        "system"
    } else {
        datapath_type
    }
}

/// A port with its interface: the one named like the port (the only one, except bonds).
pub(crate) fn port_to_wire(bridge: &str, port: &ovsdb::Port) -> v1::Port {
    let iface = port
        .interfaces
        .iter()
        .find(|i| i.name == port.name)
        .or_else(|| port.interfaces.first());
    let text = |value: Option<&String>| value.cloned().unwrap_or_default();
    v1::Port {
        name: port_name(bridge, &port.name),
        port: port.name.clone(),
        interface_type: iface.map(|i| i.kind.clone()).unwrap_or_default(),
        // Not assigned yet (ovs-vswitchd has not seen the port) reads like "could not
        // open it": -1, the value OVS itself stores on failure.
        ofport: iface.and_then(|i| i.ofport).unwrap_or(-1),
        error: text(iface.and_then(|i| i.error.as_ref())),
        link_state: text(iface.and_then(|i| i.link_state.as_ref())),
        admin_state: text(iface.and_then(|i| i.admin_state.as_ref())),
        options: iface
            .map(|i| i.options.clone().into_iter().collect())
            .unwrap_or_default(),
    }
}

/// The offload settings of the root row; `offload_active` comes from ovs-vswitchd.
pub(crate) fn settings_to_wire(
    root: &ovsdb::OpenVswitch,
    offload_active: bool,
) -> v1::OffloadSettings {
    let config = &root.other_config;
    let is_true = |key: &str| config.get(key).is_some_and(|v| v == "true");
    v1::OffloadSettings {
        hw_offload: is_true(HW_OFFLOAD),
        tc_policy: tc_policy_from_config(config.get(TC_POLICY).map(String::as_str)) as i32,
        max_idle_ms: config
            .get(MAX_IDLE)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        doca_init: is_true(DOCA_INIT),
        offload_active,
        next_cfg: root.next_cfg,
        cur_cfg: root.cur_cfg,
        ovs_version: root.ovs_version.clone().unwrap_or_default(),
        other_config: config.clone().into_iter().collect(),
    }
}

/// `tc-policy` as the enum; unset is OVS's default `none`, an unknown value unspecified
/// (the raw value stays visible in `other_config`).
fn tc_policy_from_config(value: Option<&str>) -> v1::TcPolicy {
    match value {
        None | Some("none") => v1::TcPolicy::None,
        Some("skip_sw") => v1::TcPolicy::SkipSw,
        Some("skip_hw") => v1::TcPolicy::SkipHw,
        Some(_) => v1::TcPolicy::Unspecified,
    }
}

/// The value to store for a requested policy; `None` for "leave it".
pub(crate) fn tc_policy_value(policy: v1::TcPolicy) -> Option<&'static str> {
    match policy {
        v1::TcPolicy::Unspecified => None,
        v1::TcPolicy::None => Some("none"),
        v1::TcPolicy::SkipSw => Some("skip_sw"),
        v1::TcPolicy::SkipHw => Some("skip_hw"),
    }
}

/// The `type=` of a flow filter; unspecified means all, like OVS without `type=`.
pub(crate) fn dump_type(filter: v1::FlowFilter) -> DumpType {
    match filter {
        v1::FlowFilter::Unspecified | v1::FlowFilter::All => DumpType::All,
        v1::FlowFilter::Offloaded => DumpType::Offloaded,
        v1::FlowFilter::NonOffloaded => DumpType::NonOffloaded,
        v1::FlowFilter::PartiallyOffloaded => DumpType::PartiallyOffloaded,
    }
}

#[cfg(test)]
mod tests;
