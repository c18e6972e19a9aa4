//! libFuzzer target: NQNs, transport addresses and the `/dev/nvme-fabrics` option string.
//! Nothing may panic; an accepted NQN must be safe as a path component and as a fabrics
//! option value; an option string that renders must split back into exactly its tokens.
//!
//! Input layout: byte 0 picks the field the rest is used for.
#![no_main]

use dpu_nvmeof::kernel::{ConnectSpec, Transport};
use dpu_nvmeof::nqn::MAX_NQN_LEN;
use dpu_nvmeof::{validate_traddr, validate_trsvcid, AddressFamily, Nqn};
use libfuzzer_sys::fuzz_target;

const GOOD_NQN: &str = "nqn.2016-06.io.spdk:cnode1";

fn check_options(spec: &ConnectSpec) {
    let Ok(options) = spec.options() else {
        return;
    };
    assert!(
        !options.chars().any(|c| c.is_whitespace() || c == '\0'),
        "{options:?}"
    );
    for token in options.split(',') {
        match token.split_once('=') {
            Some((key, value)) => {
                assert!(!key.is_empty() && !value.is_empty(), "{options:?}");
                assert!(!value.contains('='), "token {token:?} in {options:?}");
            }
            None => assert!(
                matches!(token, "hdr_digest" | "data_digest"),
                "bare token {token:?} in {options:?}"
            ),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let text = text.as_ref();

    if let Ok(nqn) = Nqn::parse(text) {
        assert_eq!(nqn.as_str(), text);
        assert!(text.len() <= MAX_NQN_LEN);
        assert!(
            !text
                .chars()
                .any(|c| c == '/' || c.is_whitespace() || c.is_control()),
            "{text:?}"
        );
        assert!(text != "." && text != "..");
    }
    for family in [AddressFamily::Ipv4, AddressFamily::Ipv6] {
        if let Ok(ip) = validate_traddr(family, text) {
            assert_eq!(ip.is_ipv4(), family == AddressFamily::Ipv4);
        }
    }
    if rest.len() >= 4 {
        let port = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        if let Ok(p) = validate_trsvcid(port) {
            assert!(p != 0 && u32::from(p) == port);
        }
    }

    let transport = match selector % 3 {
        0 => Transport::Tcp,
        1 => Transport::Rdma,
        _ => Transport::Loop,
    };
    let mut spec = ConnectSpec::new(transport, GOOD_NQN);
    if transport != Transport::Loop {
        spec.traddr = Some("192.0.2.10".to_owned());
        spec.trsvcid = Some(4420);
    }
    match (selector / 3) % 5 {
        0 => spec.subnqn = text.to_owned(),
        1 => spec.hostnqn = Some(text.to_owned()),
        2 => spec.traddr = Some(text.to_owned()),
        3 => spec.host_traddr = Some(text.to_owned()),
        _ => {
            spec.hdr_digest = rest.first().is_some_and(|b| b & 1 == 1);
            spec.data_digest = rest.first().is_some_and(|b| b & 2 == 2);
            spec.nr_io_queues = rest.get(1).map(|&b| u32::from(b));
            spec.reconnect_delay = rest.get(2).map(|&b| u32::from(b));
            spec.ctrl_loss_tmo = rest.get(3).map(|&b| i32::from(b as i8));
        }
    }
    check_options(&spec);
});
