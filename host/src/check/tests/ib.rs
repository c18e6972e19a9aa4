//! The `ib.*` checks against sysfs fixture trees in the kernel's formats (`lid` in hex,
//! `rate` as "400 Gb/sec (4X NDR)"), read by `HostFacts::gather` as on a real host: a
//! healthy NDR port passes, each classic InfiniBand fault is named with its port, and
//! RoCE ports are skipped with the reason.

use dpu_probe::testing::SysTree;

use super::super::facts::{AgentFacts, HostFacts};
use super::super::rules::{judge, CheckVerdict, Expectations, Status};
use super::rules::{host, port, verdict};

const IB_CHECKS: [&str; 5] = ["ib.port", "ib.lid", "ib.sm", "ib.rate", "ib.pkey"];

/// A port's attribute files, as (name under `ports/N/`, content without the newline).
type Attrs = Vec<(&'static str, &'static str)>;

/// Port attributes as the kernel prints them: an NDR 4X link, LID 0x1a, SM at LID 0x1.
fn healthy_ndr() -> Attrs {
    vec![
        ("link_layer", "InfiniBand"),
        ("state", "4: ACTIVE"),
        ("phys_state", "5: LinkUp"),
        ("lid", "0x1a"),
        ("sm_lid", "0x1"),
        ("sm_sl", "0"),
        ("rate", "400 Gb/sec (4X NDR)"),
        ("pkeys/0", "0xffff"),
        ("pkeys/1", "0x0000"),
    ]
}

/// `healthy_ndr` with some attributes replaced (a `None` value removes the file).
fn ndr_with(changes: &[(&'static str, Option<&'static str>)]) -> Attrs {
    let mut attrs = healthy_ndr();
    for (name, value) in changes {
        attrs.retain(|(n, _)| n != name);
        if let Some(value) = value {
            attrs.push((name, value));
        }
    }
    attrs
}

/// A RoCE port: the same files, LIDs 0, link layer Ethernet.
fn roce() -> Attrs {
    vec![
        ("link_layer", "Ethernet"),
        ("state", "4: ACTIVE"),
        ("phys_state", "5: LinkUp"),
        ("lid", "0x0"),
        ("sm_lid", "0x0"),
        ("sm_sl", "0"),
        ("rate", "100 Gb/sec (4X EDR)"),
        ("pkeys/0", "0xffff"),
    ]
}

/// A sysfs tree with these ports (`device`, `port`, attributes), gathered.
fn gathered(ports: &[(&str, u32, Attrs)]) -> HostFacts {
    let tree = SysTree::new();
    for (ibdev, number, attrs) in ports {
        tree.attrs(
            &format!("sys/class/infiniband/{ibdev}/ports/{number}"),
            attrs,
        );
    }
    HostFacts::gather(&tree.root())
}

fn judged(host: &HostFacts, ib_rate: Option<u32>) -> Vec<(&'static str, CheckVerdict)> {
    judge(
        host,
        &AgentFacts::NotAsked,
        &Expectations {
            ib_rate,
            ..Default::default()
        },
    )
}

fn check(host: &HostFacts, ib_rate: Option<u32>, id: &str) -> CheckVerdict {
    verdict(&judged(host, ib_rate), id)
}

fn assert_names(v: &CheckVerdict, needles: &[&str]) {
    for needle in needles {
        assert!(v.detail.contains(needle), "{needle:?} in {:?}", v.detail);
    }
}

#[test]
fn a_healthy_ndr_4x_port_passes_every_ib_check() {
    let h = gathered(&[("mlx5_0", 1, healthy_ndr())]);
    for id in IB_CHECKS {
        let v = check(&h, None, id);
        assert_eq!(v.status, Status::Pass, "{id}: {}", v.detail);
        assert_names(&v, &["mlx5_0/1"]);
    }
    assert_names(&check(&h, None, "ib.lid"), &["LID 0x1a"]);
    assert_names(&check(&h, None, "ib.sm"), &["SM at LID 0x1, SL 0"]);
    assert_names(
        &check(&h, None, "ib.rate"),
        &["400 Gb/s (4X NDR)", "pass --ib-rate GBPS"],
    );
    assert_names(&check(&h, None, "ib.pkey"), &["0xffff", "full member"]);
    let v = check(&h, Some(400), "ib.rate");
    assert_eq!(v.status, Status::Pass, "{}", v.detail);
}

#[test]
fn the_facts_carry_each_ports_values_as_numbers() {
    let h = gathered(&[("mlx5_0", 1, healthy_ndr())]);
    let results = super::super::describe(judged(&h, Some(400)));
    let json = serde_json::to_value(&results).expect("serialize");
    let facts = |id: &str| {
        json.as_array()
            .and_then(|all| all.iter().find(|r| r["id"] == id))
            .map(|r| r["facts"].clone())
            .unwrap_or_else(|| panic!("no result {id}"))
    };
    for id in IB_CHECKS {
        let p = &facts(id)["ports"][0];
        assert_eq!(p["port"], "mlx5_0/1", "{id}");
        assert_eq!(p["rdma_device"], "mlx5_0");
        assert_eq!(p["rdma_port"], serde_json::json!(1));
        assert_eq!(p["state"], serde_json::json!(4));
        assert_eq!(p["state_text"], "ACTIVE");
        assert_eq!(p["phys_state"], serde_json::json!(5));
        assert_eq!(p["lid"], serde_json::json!(26), "hex 0x1a as a number");
        assert_eq!(p["sm_lid"], serde_json::json!(1));
        assert_eq!(p["sm_sl"], serde_json::json!(0));
        assert_eq!(p["rate_gbps"], serde_json::json!(400.0));
        assert_eq!(p["width"], serde_json::json!(4));
        assert_eq!(p["speed"], "NDR");
        assert_eq!(p["default_pkey"], serde_json::json!(0xffff));
        assert_eq!(p["pkey_membership"], "full");
        assert_eq!(facts(id)["other_ports"], serde_json::json!([]));
    }
    assert_eq!(
        facts("ib.rate")["expected_rate_gbps"],
        serde_json::json!(400)
    );
}

#[test]
fn a_port_in_init_without_a_subnet_manager_fails_naming_it() {
    let h = gathered(&[(
        "mlx5_0",
        1,
        ndr_with(&[
            ("state", Some("2: INIT")),
            ("lid", Some("0x0")),
            ("sm_lid", Some("0x0")),
        ]),
    )]);
    for id in ["ib.port", "ib.lid", "ib.sm"] {
        let v = check(&h, None, id);
        assert_eq!(v.status, Status::Fail, "{id}: {}", v.detail);
        assert_names(&v, &["mlx5_0/1", "no subnet manager answered"]);
    }
    assert_names(&check(&h, None, "ib.port"), &["state 2 (INIT)", "LinkUp"]);
    assert_names(&check(&h, None, "ib.lid"), &["LID 0x0"]);
    assert_names(&check(&h, None, "ib.sm"), &["SM LID 0x0"]);
}

#[test]
fn a_down_or_armed_port_is_not_active_and_says_why() {
    let down = gathered(&[(
        "mlx5_0",
        1,
        ndr_with(&[
            ("state", Some("1: DOWN")),
            ("phys_state", Some("2: Polling")),
        ]),
    )]);
    let v = check(&down, None, "ib.port");
    assert_eq!(v.status, Status::Fail);
    assert_names(&v, &["mlx5_0/1", "Polling", "physical link is down"]);
    let v = check(&down, None, "ib.rate");
    assert_eq!(v.status, Status::Skip, "no trained link, no rate");
    assert_names(&v, &["mlx5_0/1 (link not up)"]);

    let armed = gathered(&[("mlx5_0", 1, ndr_with(&[("state", Some("3: ARMED"))]))]);
    let v = check(&armed, None, "ib.port");
    assert_eq!(v.status, Status::Fail);
    assert_names(&v, &["mlx5_0/1", "ARMED", "has not activated it"]);
}

#[test]
fn a_1x_or_slow_port_warns_or_fails_against_the_required_rate() {
    let narrow = gathered(&[(
        "mlx5_0",
        1,
        ndr_with(&[("rate", Some("100 Gb/sec (1X NDR)"))]),
    )]);
    let v = check(&narrow, None, "ib.rate");
    assert_eq!(v.status, Status::Warn, "{}", v.detail);
    assert_names(&v, &["mlx5_0/1", "1X NDR", "narrower than 4X"]);
    let v = check(&narrow, Some(400), "ib.rate");
    assert_eq!(v.status, Status::Fail, "{}", v.detail);
    assert_names(&v, &["mlx5_0/1 100 Gb/s", "below the required 400 Gb/s"]);
    let v = check(&narrow, Some(100), "ib.rate");
    assert_eq!(
        v.status,
        Status::Pass,
        "the requirement is met: {}",
        v.detail
    );

    let hdr = gathered(&[(
        "mlx5_0",
        1,
        ndr_with(&[("rate", Some("200 Gb/sec (4X HDR)"))]),
    )]);
    assert_eq!(check(&hdr, None, "ib.rate").status, Status::Pass);
    let v = check(&hdr, Some(400), "ib.rate");
    assert_eq!(v.status, Status::Fail);
    assert_names(&v, &["200 Gb/s (4X HDR)", "below the required 400 Gb/s"]);
}

#[test]
fn a_missing_or_wrong_default_pkey_fails() {
    let cases = [
        (None, Status::Fail, "has no P_Key at index 0"),
        (Some("0x0000"), Status::Fail, "is empty"),
        (
            Some("0x8001"),
            Status::Fail,
            "not the default partition key",
        ),
        (Some("0x7fff"), Status::Warn, "limited member"),
        (Some("0xffff"), Status::Pass, "full member"),
    ];
    for (pkey, status, needle) in cases {
        let h = gathered(&[("mlx5_0", 1, ndr_with(&[("pkeys/0", pkey)]))]);
        let v = check(&h, None, "ib.pkey");
        assert_eq!(v.status, status, "{pkey:?}: {}", v.detail);
        assert_names(&v, &["mlx5_0/1", needle]);
    }
}

#[test]
fn roce_ports_skip_every_ib_check_with_the_reason() {
    let h = gathered(&[("mlx5_0", 1, roce()), ("mlx5_1", 1, roce())]);
    for (id, v) in judged(&h, Some(400))
        .into_iter()
        .filter(|(id, _)| id.starts_with("ib."))
    {
        assert_eq!(v.status, Status::Skip, "{id}: {}", v.detail);
        assert_names(
            &v,
            &[
                "no InfiniBand port",
                "mlx5_0/1 Ethernet (RoCE)",
                "mlx5_1/1 Ethernet (RoCE)",
            ],
        );
        let others = match v.facts.get("other_ports") {
            Some(super::super::rules::FactValue::List(list)) => list.len(),
            other => panic!("{id}: other_ports {other:?}"),
        };
        assert_eq!(others, 2, "{id}: the port list is in the facts");
    }

    let bare = gathered(&[]);
    for id in IB_CHECKS {
        let v = check(&bare, None, id);
        assert_eq!(v.status, Status::Skip);
        assert_names(&v, &["no InfiniBand port", "no RDMA port"]);
    }
}

#[test]
fn a_mixed_host_judges_only_its_infiniband_port() {
    let h = gathered(&[
        ("mlx5_0", 1, roce()),
        ("mlx5_1", 1, ndr_with(&[("sm_lid", Some("0x0"))])),
    ]);
    assert_eq!(check(&h, None, "ib.port").status, Status::Pass);
    let v = check(&h, None, "ib.sm");
    assert_eq!(v.status, Status::Fail);
    assert_names(&v, &["mlx5_1/1 SM LID 0x0"]);
    assert!(
        !v.detail.contains("mlx5_0/1"),
        "RoCE is not judged: {}",
        v.detail
    );
}

#[test]
fn an_unreadable_attribute_skips_the_ib_checks_naming_the_file() {
    let h = gathered(&[("mlx5_0", 1, ndr_with(&[("lid", Some("26"))]))]);
    for id in IB_CHECKS {
        let v = check(&h, None, id);
        assert_eq!(v.status, Status::Skip, "{id}");
        assert_names(&v, &["cannot read the RDMA ports", "ports/1/lid", "\"26\""]);
    }
}

#[test]
fn roce_only_checks_skip_on_an_infiniband_data_port() {
    let mut ib = port(4, "5: LinkUp", vec![]);
    ib.link_layer = "InfiniBand".to_owned();
    let h = host(16, true, ib, vec![]);
    for id in ["rdma.gid", "rdma.mtu"] {
        let v = check(&h, None, id);
        assert_eq!(v.status, Status::Skip, "{id}: {}", v.detail);
        assert_names(&v, &["InfiniBand port", "RoCE concern"]);
    }
    let v = check(&h, None, "rdma.link-layer");
    assert_eq!(v.status, Status::Pass, "{}", v.detail);
}
