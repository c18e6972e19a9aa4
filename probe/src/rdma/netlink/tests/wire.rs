//! The wire format against bytes laid out by hand from the kernel's structures: requests
//! as `nldev.c` parses them, answers as `stat_get_doit_default_counter`,
//! `rdma_nl_stat_hwcounter_entry` and `fill_dev_info` write them (nests flagged
//! `NLA_F_NESTED` by `nla_nest_start`, a `RDMA_NLDEV_ATTR_PAD` where `nla_put_u64_64bit`
//! aligns a u64), so no test decodes only what this module itself encoded.

use netlink_packet_core::{NLMSG_DONE, NLMSG_ERROR, NLM_F_ACK_TLVS, NLM_F_CAPPED, NLM_F_MULTIPART};

use super::super::abi::*;
use super::super::devices::{device_from_message, RdmaDevice};
use super::super::error::RdmaNetlinkError;
use super::super::hw_counters::{
    describe, hw_counters_from_message, single_answer, PortHwCounters,
};
use super::super::message::RdmaMessage;
use crate::error_chain;
use crate::netlink::{DumpCollector, HEADER_LEN};

/// `NLA_F_NESTED`, as `nla_nest_start` sets it.
const NESTED: u16 = 0x8000;
/// `NLM_F_REQUEST | NLM_F_ACK` and `NLM_F_REQUEST | NLM_F_DUMP`, from `linux/netlink.h`.
const REQUEST_ACK: u16 = 0x1 | 0x4;
const REQUEST_DUMP: u16 = 0x1 | 0x100 | 0x200;

/// `struct nlattr` and its value, padded to 4 bytes.
fn nla(kind: u16, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(value);
    out.resize((out.len() + 3) & !3, 0);
    out
}

fn nest(kind: u16, parts: &[Vec<u8>]) -> Vec<u8> {
    nla(kind | NESTED, &parts.concat())
}

fn string(kind: u16, text: &str) -> Vec<u8> {
    let mut value = text.as_bytes().to_vec();
    value.push(0);
    nla(kind, &value)
}

fn u32_nla(kind: u16, value: u32) -> Vec<u8> {
    nla(kind, &value.to_ne_bytes())
}

fn u64_nla(kind: u16, value: u64) -> Vec<u8> {
    nla(kind, &value.to_ne_bytes())
}

/// A whole message: `struct nlmsghdr` (len, type, flags, seq, pid) and the attributes.
fn message(message_type: u16, flags: u16, seq: u32, attributes: &[Vec<u8>]) -> Vec<u8> {
    let body = attributes.concat();
    let mut out = Vec::new();
    out.extend_from_slice(&((HEADER_LEN + body.len()) as u32).to_ne_bytes());
    out.extend_from_slice(&message_type.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&4242u32.to_ne_bytes());
    out.extend_from_slice(&body);
    out
}

/// One `RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY`, optionally with the pad attribute
/// `nla_put_u64_64bit` inserts before the value on strict-alignment architectures.
fn entry(name: &str, value: u64, pad: bool) -> Vec<u8> {
    let mut parts = vec![string(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, name)];
    if pad {
        parts.push(nla(RDMA_NLDEV_ATTR_PAD, &[]));
    }
    parts.push(u64_nla(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, value));
    nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, &parts)
}

/// The answer to `STAT_GET` of device 3 (`mlx5_0`) port 1, with an unknown attribute at
/// every level.
fn stat_answer(seq: u32) -> Vec<u8> {
    let table = nest(
        RDMA_NLDEV_ATTR_STAT_HWCOUNTERS,
        &[
            entry("rx_write_requests", 42, false),
            // STAT_HWCOUNTER_INDEX (94) and DYNAMIC (95): newer attributes, skipped.
            nest(
                RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY,
                &[
                    string(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "out_of_buffer"),
                    u32_nla(94, 7),
                    nla(95, &[1]),
                    u64_nla(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 1 << 40),
                ],
            ),
            u32_nla(94, 1),
            entry("np_cnp_sent", u64::MAX, true),
        ],
    );
    message(
        message_type(RDMA_NLDEV_CMD_STAT_GET),
        0,
        seq,
        &[
            u32_nla(RDMA_NLDEV_ATTR_DEV_INDEX, 3),
            string(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0"),
            u32_nla(RDMA_NLDEV_ATTR_PORT_INDEX, 1),
            table,
            u32_nla(200, 5),
        ],
    )
}

fn expected_counters() -> Vec<(String, u64)> {
    vec![
        ("rx_write_requests".to_owned(), 42),
        ("out_of_buffer".to_owned(), 1 << 40),
        ("np_cnp_sent".to_owned(), u64::MAX),
    ]
}

#[test]
fn the_port_request_is_a_header_then_device_and_port_u32s() {
    let bytes = RdmaMessage::port_counters(7, 2).encode(42);
    let expected = message(
        (5 << 10) + 17,
        REQUEST_ACK,
        42,
        &[u32_nla(1, 7), u32_nla(3, 2)],
    );
    // The port id is 0 in a request: the kernel fills in the sender's.
    let mut expected = expected;
    expected[12..16].copy_from_slice(&0u32.to_ne_bytes());
    assert_eq!(bytes, expected);
    assert_eq!(bytes.len(), 16 + 8 + 8);
}

#[test]
fn the_device_dump_is_a_bare_header_with_the_dump_flags() {
    let bytes = RdmaMessage::device_dump().encode(9);
    let mut expected = message((5 << 10) + 1, REQUEST_DUMP, 9, &[]);
    expected[12..16].copy_from_slice(&0u32.to_ne_bytes());
    assert_eq!(bytes, expected);
}

#[test]
fn decodes_the_counters_skipping_pads_and_unknown_attributes() {
    let answer = hw_counters_from_message(&stat_answer(1))
        .expect("decodes")
        .expect("a STAT_GET answer");
    assert_eq!(
        answer,
        PortHwCounters {
            dev_index: 3,
            dev_name: "mlx5_0".to_owned(),
            port: 1,
            counters: expected_counters(),
        }
    );
}

#[test]
fn every_truncation_is_an_error_never_a_panic_or_a_partial_table() {
    let full = stat_answer(1);
    for cut in 0..full.len() {
        // Only a cut after the whole table (before the trailing unknown attribute)
        // leaves a complete answer.
        if let Ok(answer) = hw_counters_from_message(&full[..cut]) {
            let answer = answer.expect("a STAT_GET answer");
            assert_eq!(answer.counters, expected_counters(), "cut at {cut}");
            assert_eq!(cut, full.len() - 8);
        }
    }
    // Cut inside the last counter's value: the error names the nest that runs past the
    // end and where it is.
    let err = hw_counters_from_message(&full[..full.len() - 12]).expect_err("truncated");
    let text = err.to_string();
    assert!(
        text.contains("RDMA_NLDEV_ATTR_STAT_HWCOUNTERS in the answer"),
        "{text}"
    );
}

#[test]
fn a_malformed_counter_is_an_error_naming_the_attribute_and_the_entry() {
    let answer = |entries: &[Vec<u8>]| {
        message(
            message_type(RDMA_NLDEV_CMD_STAT_GET),
            0,
            1,
            &[
                u32_nla(RDMA_NLDEV_ATTR_DEV_INDEX, 3),
                string(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0"),
                u32_nla(RDMA_NLDEV_ATTR_PORT_INDEX, 1),
                nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, entries),
            ],
        )
    };
    let short_value = nest(
        RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY,
        &[
            string(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "x"),
            u32_nla(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 1),
        ],
    );
    let no_name = nest(
        RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY,
        &[u64_nla(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 1)],
    );
    let cases = [
        (
            vec![entry("a", 1, false), short_value],
            "RDMA_NLDEV_ATTR_STAT_HWCOUNTERS entry 1 caused by RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE",
        ),
        (
            vec![no_name],
            "entry 0 caused by the answer has no RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME",
        ),
        (
            vec![entry("a", 1, false), entry("a", 2, false)],
            "counter \"a\" appears twice",
        ),
        (
            vec![entry("../a", 1, false)],
            "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME: \"../a\" is not a single path component",
        ),
    ];
    for (entries, wanted) in cases {
        let err = hw_counters_from_message(&answer(&entries)).expect_err(wanted);
        assert!(err.to_string().contains(wanted), "{err} lacks {wanted:?}");
    }
    let no_table = message(
        message_type(RDMA_NLDEV_CMD_STAT_GET),
        0,
        1,
        &[
            u32_nla(RDMA_NLDEV_ATTR_DEV_INDEX, 3),
            string(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0"),
            u32_nla(RDMA_NLDEV_ATTR_PORT_INDEX, 1),
        ],
    );
    let err = hw_counters_from_message(&no_table).expect_err("no table");
    assert_eq!(
        err.to_string(),
        "the answer has no RDMA_NLDEV_ATTR_STAT_HWCOUNTERS"
    );
    // An empty table is a port with no enabled counter, not an error.
    let empty = hw_counters_from_message(&answer(&[]))
        .expect("decodes")
        .expect("answer");
    assert!(empty.counters.is_empty());
}

#[test]
fn decodes_the_device_dump_and_validates_names() {
    let device = |attributes: &[Vec<u8>]| {
        message(
            message_type(RDMA_NLDEV_CMD_GET),
            NLM_F_MULTIPART,
            5,
            attributes,
        )
    };
    // What fill_dev_info writes, in its order, GUIDs after their pad.
    let mlx5 = device(&[
        u32_nla(RDMA_NLDEV_ATTR_DEV_INDEX, 3),
        string(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0"),
        u32_nla(RDMA_NLDEV_ATTR_PORT_INDEX, 1),
        nla(RDMA_NLDEV_ATTR_PAD, &[]),
        u64_nla(4, 0x1234),
        string(5, "28.39.1002"),
        u64_nla(6, 0xb8ce_f603_00aa_bbcc),
        nla(14, &[1]),
        string(67, "roce"),
    ]);
    assert_eq!(
        device_from_message(&mlx5).expect("decodes"),
        Some(RdmaDevice {
            index: 3,
            name: "mlx5_0".to_owned(),
            ports: 1,
        })
    );
    let bad_name = device(&[
        u32_nla(RDMA_NLDEV_ATTR_DEV_INDEX, 3),
        string(RDMA_NLDEV_ATTR_DEV_NAME, ".."),
        u32_nla(RDMA_NLDEV_ATTR_PORT_INDEX, 1),
    ]);
    let err = device_from_message(&bad_name).expect_err("..");
    assert!(
        err.to_string()
            .starts_with("RDMA_NLDEV_ATTR_DEV_NAME: \"..\""),
        "{err}"
    );
    let long = "m".repeat(IB_DEVICE_NAME_MAX);
    let too_long = device(&[
        u32_nla(RDMA_NLDEV_ATTR_DEV_INDEX, 3),
        string(RDMA_NLDEV_ATTR_DEV_NAME, &long),
        u32_nla(RDMA_NLDEV_ATTR_PORT_INDEX, 1),
    ]);
    assert!(device_from_message(&too_long).is_err());
    let no_index = device(&[
        string(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0"),
        u32_nla(RDMA_NLDEV_ATTR_PORT_INDEX, 1),
    ]);
    let err = device_from_message(&no_index).expect_err("no index");
    assert_eq!(
        err.to_string(),
        "the answer has no RDMA_NLDEV_ATTR_DEV_INDEX"
    );
    let short_index = device(&[nla(RDMA_NLDEV_ATTR_DEV_INDEX, &[3, 0])]);
    let err = device_from_message(&short_index).expect_err("2-byte u32");
    assert!(
        err.to_string()
            .starts_with("RDMA_NLDEV_ATTR_DEV_INDEX caused by"),
        "{err}"
    );
}

#[test]
fn other_message_types_are_skipped_by_both_decoders() {
    let stat = stat_answer(1);
    assert_eq!(device_from_message(&stat).expect("skipped"), None);
    let dev = message(message_type(RDMA_NLDEV_CMD_GET), 0, 1, &[]);
    assert_eq!(hw_counters_from_message(&dev).expect("skipped"), None);
}

#[test]
fn the_answer_then_the_ack_through_the_shared_reply_reader() {
    let request = describe(3, 1);
    let mut datagram = stat_answer(8);
    datagram.extend(stat_answer(7)); // a stale answer to an earlier request: ignored
    let mut ack = (0i32).to_ne_bytes().to_vec();
    ack.extend_from_slice(&RdmaMessage::port_counters(3, 1).encode(8)[..HEADER_LEN]);
    datagram.extend(message(NLMSG_ERROR, NLM_F_CAPPED, 8, &[ack]));
    let mut collector = DumpCollector::with_decoder(&request, 8, hw_counters_from_message);
    assert!(collector.feed(&datagram).expect("complete"));
    let answer = single_answer(&request, collector.messages, 3, 1).expect("one answer");
    assert_eq!(answer.counters, expected_counters());
}

#[test]
fn a_refusal_carries_the_errno_and_the_extended_ack() {
    let request = describe(3, 9);
    let mut payload = (-22i32).to_ne_bytes().to_vec();
    payload.extend_from_slice(&RdmaMessage::port_counters(3, 9).encode(4)[..HEADER_LEN]);
    payload.extend(string(1, "invalid port")); // NLMSGERR_ATTR_MSG
    let error = message(NLMSG_ERROR, NLM_F_CAPPED | NLM_F_ACK_TLVS, 4, &[payload]);
    let err = DumpCollector::with_decoder(&request, 4, hw_counters_from_message)
        .feed(&error)
        .expect_err("EINVAL");
    let err = RdmaNetlinkError::from(err);
    assert_eq!(err.raw_os_error(), Some(22));
    assert!(!err.is_transport());
    let text = error_chain(&err);
    assert!(
        text.starts_with(
            "kernel refused RDMA_NLDEV_CMD_STAT_GET of device index 3 port 9: invalid port"
        ),
        "{text}"
    );
}

#[test]
fn the_device_dump_ends_with_done() {
    let one = |index: u32, name: &str| {
        message(
            message_type(RDMA_NLDEV_CMD_GET),
            NLM_F_MULTIPART,
            2,
            &[
                u32_nla(RDMA_NLDEV_ATTR_DEV_INDEX, index),
                string(RDMA_NLDEV_ATTR_DEV_NAME, name),
                u32_nla(RDMA_NLDEV_ATTR_PORT_INDEX, 1),
            ],
        )
    };
    let mut datagram = one(0, "mlx5_0");
    datagram.extend(one(1, "mlx5_1"));
    let done = message(
        NLMSG_DONE,
        NLM_F_MULTIPART,
        2,
        &[0i32.to_ne_bytes().to_vec()],
    );
    let mut collector =
        DumpCollector::with_decoder("RDMA_NLDEV_CMD_GET dump", 2, device_from_message);
    assert!(!collector.feed(&datagram).expect("first datagram"));
    assert!(collector.feed(&done).expect("done"));
    let names: Vec<&str> = collector.messages.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["mlx5_0", "mlx5_1"]);
}

#[test]
fn an_answer_about_something_else_is_unexpected() {
    let request = describe(3, 1);
    let answer = |port| PortHwCounters {
        dev_index: 3,
        dev_name: "mlx5_0".to_owned(),
        port,
        counters: Vec::new(),
    };
    let none = single_answer(&request, Vec::new(), 3, 1).expect_err("none");
    assert!(
        none.to_string().ends_with("0 answers instead of one"),
        "{none}"
    );
    assert!(single_answer(&request, vec![answer(1), answer(1)], 3, 1).is_err());
    let other = single_answer(&request, vec![answer(2)], 3, 1).expect_err("port 2");
    assert!(matches!(other, RdmaNetlinkError::Unexpected { .. }));
    assert!(other.to_string().contains("(mlx5_0) port 2"), "{other}");
}
