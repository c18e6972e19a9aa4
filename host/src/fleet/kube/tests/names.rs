//! Kubernetes' naming rules: each rule refuses what the API server refuses, and accepts
//! what it accepts (the negative controls).

use super::super::names::{
    condition_reason, condition_type, dns_label, dns_subdomain, label_key, label_value,
};

#[test]
fn label_values_follow_the_apimachinery_rules() {
    for good in ["", "PASS", "FAIL", "a", "v1.2_3-x", &"a".repeat(63)] {
        assert_eq!(label_value(good), Ok(()), "{good:?}");
    }
    for (bad, why) in [
        ("has space", "' ' is not allowed"),
        ("-leading", "begin and end"),
        ("trailing.", "begin and end"),
        ("a/b", "'/' is not allowed"),
        ("ünïcode", "is not allowed"),
        (&"a".repeat(64), "64 characters, at most 63"),
    ] {
        let problem = label_value(bad).expect_err(bad);
        assert!(problem.contains(why), "{bad:?}: {problem}");
    }
}

#[test]
fn label_keys_need_a_valid_name_and_a_dns_prefix_outside_kubernetes() {
    for good in [
        "dpu-offload/check",
        "check",
        "example.com/a.b_c",
        "dpu-offload/rail-0",
    ] {
        assert_eq!(label_key(good), Ok(()), "{good:?}");
    }
    for (bad, why) in [
        ("dpu-offload/", "empty"),
        ("Dpu-Offload/check", "prefix"),
        ("dpu_offload/check", "prefix"),
        ("a/b/c", "'/' is not allowed"),
        ("kubernetes.io/hostname", "reserved"),
        ("node-role.kubernetes.io/worker", "reserved"),
        ("k8s.io/x", "reserved"),
        (&format!("dpu-offload/{}", "x".repeat(64)), "at most 63"),
    ] {
        let problem = label_key(bad).expect_err(bad);
        assert!(problem.contains(why), "{bad:?}: {problem}");
    }
    // Only the exact domain and its subdomains are reserved.
    assert_eq!(label_key("notkubernetes.io/x"), Ok(()));
}

#[test]
fn node_names_and_namespaces_are_dns_names() {
    assert_eq!(dns_subdomain("dpu-07.rack-3.example"), Ok(()));
    assert_eq!(dns_label("dpu-system"), Ok(()));
    for bad in [
        "", "Dpu-07", "dpu_07", "-dpu", "dpu..07", "dpu/07", "../etc",
    ] {
        assert!(dns_subdomain(bad).is_err(), "{bad:?}");
    }
    assert!(dns_subdomain(&"a".repeat(254)).is_err());
    assert!(dns_label("dpu.system").is_err(), "a namespace has no dots");
}

#[test]
fn condition_types_and_reasons() {
    assert_eq!(condition_type("DpuOffloadHealthy"), Ok(()));
    assert_eq!(condition_type("dpu-offload.example/Healthy"), Ok(()));
    for bad in ["Ready", "MemoryPressure", "", "Has Space", "-X"] {
        assert!(condition_type(bad).is_err(), "{bad:?}");
    }
    for good in [
        "ChecksPassed",
        "AgentUnreachable",
        "A",
        "Mtu_9000",
        "Rail:0",
    ] {
        assert_eq!(condition_reason(good), Ok(()), "{good:?}");
    }
    for bad in [
        "",
        "checks passed",
        "9Lives",
        "Ends:",
        "Dash-Ed",
        &"A".repeat(1025),
    ] {
        assert!(condition_reason(bad).is_err(), "{bad:?}");
    }
}
