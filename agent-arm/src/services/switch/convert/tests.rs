use std::collections::BTreeMap;

use dpu_ovs::ovsdb::{Bridge, Interface, OpenVswitch, Port, Uuid};

use super::*;

fn uuid(n: u8) -> Uuid {
    Uuid::parse(&format!("00000000-0000-4000-8000-0000000000{n:02x}")).expect("uuid")
}

fn interface(name: &str, kind: &str, ofport: Option<i64>) -> Interface {
    Interface {
        uuid: uuid(1),
        name: name.to_owned(),
        kind: kind.to_owned(),
        options: BTreeMap::from([("key".to_owned(), "5".to_owned())]),
        ofport,
        ifindex: None,
        mtu: None,
        mac_in_use: None,
        admin_state: Some("up".to_owned()),
        link_state: Some("down".to_owned()),
        error: None,
        other_config: BTreeMap::new(),
        external_ids: BTreeMap::new(),
    }
}

fn port(name: &str, iface: Interface) -> Port {
    Port {
        uuid: uuid(2),
        name: name.to_owned(),
        interfaces: vec![iface],
        tag: None,
        other_config: BTreeMap::new(),
        external_ids: BTreeMap::new(),
    }
}

fn bridge_with_local(datapath_type: &str, local: Interface) -> Bridge {
    Bridge {
        uuid: uuid(3),
        name: local.name.clone(),
        datapath_type: datapath_type.to_owned(),
        fail_mode: None,
        ports: vec![port(&local.name.clone(), local)],
        other_config: BTreeMap::new(),
        external_ids: BTreeMap::new(),
    }
}

#[test]
fn a_bridge_vswitchd_is_not_running_says_why() {
    // ofport -1 with OVS's text: the text, verbatim.
    let mut refused = interface("lo", "internal", Some(-1));
    refused.error = Some("could not open network device lo (Invalid argument)".to_owned());
    let wire = bridge_to_wire(&bridge_with_local("netdev", refused), true);
    assert_eq!(
        wire.error,
        "could not open network device lo (Invalid argument)"
    );
    assert_eq!(
        wire.ports[0].error,
        "could not open network device lo (Invalid argument)"
    );
    // No ofport although ovs-vswitchd caught up: the datapath was not opened.
    let skipped = bridge_with_local("", interface("br1", "internal", None));
    let text = bridge_error(&skipped, true);
    assert!(
        text.contains("did not create the bridge") && text.contains("type system"),
        "{text}"
    );
    // Not caught up yet: nothing to say.
    assert_eq!(bridge_error(&skipped, false), "");
}

#[test]
fn bridges_and_ports_get_resource_names_and_interface_state() {
    let bridge = Bridge {
        uuid: uuid(3),
        name: "br0".to_owned(),
        datapath_type: "netdev".to_owned(),
        fail_mode: None,
        ports: vec![
            port("br0", interface("br0", "internal", Some(65534))),
            port("vx0", interface("vx0", "vxlan", None)),
        ],
        other_config: BTreeMap::new(),
        external_ids: BTreeMap::new(),
    };
    let wire = bridge_to_wire(&bridge, true);
    assert_eq!(wire.error, "", "the local port is open");
    assert_eq!(wire.name, "bridges/br0");
    assert_eq!(wire.bridge, "br0");
    assert_eq!(wire.datapath_type, "netdev");
    assert_eq!(wire.uuid, "00000000-0000-4000-8000-000000000003");
    let local = &wire.ports[0];
    assert_eq!(local.name, "bridges/br0/ports/br0");
    assert_eq!(
        (local.interface_type.as_str(), local.ofport),
        ("internal", 65534)
    );
    assert_eq!(
        (local.admin_state.as_str(), local.link_state.as_str()),
        ("up", "down")
    );
    let vx = &wire.ports[1];
    assert_eq!(vx.ofport, -1, "not assigned yet");
    assert_eq!(vx.options.get("key").map(String::as_str), Some("5"));
}

#[test]
fn offload_settings_read_the_keys_and_keep_the_whole_map() {
    let root = OpenVswitch {
        uuid: uuid(4),
        other_config: BTreeMap::from([
            ("hw-offload".to_owned(), "true".to_owned()),
            ("tc-policy".to_owned(), "skip_sw".to_owned()),
            ("max-idle".to_owned(), "30000".to_owned()),
            ("vendor-knob".to_owned(), "x".to_owned()),
        ]),
        external_ids: BTreeMap::new(),
        next_cfg: 7,
        cur_cfg: 6,
        ovs_version: Some("3.1.0".to_owned()),
        db_version: None,
        datapath_types: Vec::new(),
        iface_types: Vec::new(),
    };
    let s = settings_to_wire(&root, false);
    assert!(s.hw_offload && !s.offload_active && !s.doca_init);
    assert_eq!(s.tc_policy, v1::TcPolicy::SkipSw as i32);
    assert_eq!(s.max_idle_ms, 30_000);
    assert_eq!((s.next_cfg, s.cur_cfg), (7, 6));
    assert_eq!(s.ovs_version, "3.1.0");
    assert_eq!(s.other_config.len(), 4);
    assert_eq!(tc_policy_from_config(None), v1::TcPolicy::None);
    assert_eq!(
        tc_policy_from_config(Some("bogus")),
        v1::TcPolicy::Unspecified
    );
    assert_eq!(tc_policy_value(v1::TcPolicy::SkipHw), Some("skip_hw"));
    assert_eq!(tc_policy_value(v1::TcPolicy::Unspecified), None);
}

#[test]
fn flow_filters_map_to_dump_types() {
    assert_eq!(dump_type(v1::FlowFilter::Unspecified), DumpType::All);
    assert_eq!(dump_type(v1::FlowFilter::Offloaded), DumpType::Offloaded);
    assert_eq!(
        dump_type(v1::FlowFilter::NonOffloaded),
        DumpType::NonOffloaded
    );
    assert_eq!(
        dump_type(v1::FlowFilter::PartiallyOffloaded),
        DumpType::PartiallyOffloaded
    );
}
