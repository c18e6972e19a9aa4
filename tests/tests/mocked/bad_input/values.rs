//! The malformed values the rows are made of, each family by the one rule it breaks.

use super::SUB;

pub(super) fn long(n: usize) -> String {
    "a".repeat(n)
}

/// Client-chosen ids (remote controllers, controllers, exposures): `[A-Za-z][A-Za-z0-9_-]{0,62}`.
pub(super) fn bad_ids() -> Vec<String> {
    [
        "",
        "a/b",
        "..",
        "../etc",
        "a\0b",
        "a;reboot",
        "$(reboot)",
        "a`id`",
        "a b",
        "1abc",
        "é",
        "a\n",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain([long(64), long(1000)])
    .collect()
}

/// Values every full NQN check (`dpu_nvmeof::Nqn::parse`) refuses.
pub(super) fn bad_nqns() -> Vec<String> {
    [
        "",
        "iqn.2016-06.io.spdk:cnode1",
        "not-an-nqn",
        "nqn.2016-06.io.spdk:cnode 1",
        "nqn.2016-06.io.spdk:../../etc/passwd",
        "nqn.2016-06.io.spdk:a\0b",
        "nqn.2016-06.io.spdk:a\nb",
        "nqn.2016-6.io.spdk:cnode1",
        "nqn.2016-13.io.spdk:cnode1",
        "nqn.2016-06.io.spdk:",
        "nqn.2014-08.org.nvmexpress:uuid:not-a-uuid",
        "nqn.2016-06.io.spdk:cnöde",
        "nqn.2016-06.io.spdk:a;$(reboot)",
        "nqn.2016-06.io.spdk:a`id`",
        "nqn.2016-06.io.spdk:a,b=c",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain([format!("nqn.2016-06.io.spdk:{}", long(210)), long(1000)])
    .collect()
}

/// `subsystems/{nqn}` names: the NQN checks above plus what only names refuse (non-ASCII,
/// a second segment, path traversal).
pub(super) fn bad_subsystem_names() -> Vec<String> {
    let mut names: Vec<String> = bad_nqns()
        .into_iter()
        .map(|n| format!("subsystems/{n}"))
        .collect();
    names.extend(
        [
            "",
            "subsystems",
            "subsystems/",
            "subsystems/nqn.2016-06.io.spdk:cnöde",
            "subsystems/../../etc/passwd",
            "subsystems/nqn.2016-06.io.spdk:cnode1/..",
            "../subsystems/nqn.2016-06.io.spdk:cnode1",
            "remoteControllers/r0",
        ]
        .map(str::to_owned),
    );
    names
}

pub(super) fn bad_namespace_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "0",
        "4294967295",
        "-1",
        "1.0",
        "0x1",
        "",
        "1/..",
        "99999999999",
    ]
    .iter()
    .map(|nsid| format!("{SUB}/namespaces/{nsid}"))
    .collect();
    names.extend(
        bad_subsystem_names()
            .into_iter()
            .filter(|s| !s.is_empty())
            .map(|s| format!("{s}/namespaces/1")),
    );
    names.push(format!("{SUB}/controllers/1"));
    names.push(format!("{SUB}/namespaces/{}", long(1000)));
    names
}

pub(super) fn bad_controller_names() -> Vec<String> {
    let mut names: Vec<String> = bad_ids()
        .into_iter()
        .map(|id| format!("{SUB}/controllers/{id}"))
        .collect();
    names.extend(
        [
            "subsystems/not-an-nqn",
            "subsystems/nqn.2016-06.io.spdk:cnöde",
        ]
        .map(|s| format!("{s}/controllers/c0")),
    );
    names.push(format!("{SUB}/namespaces/c0"));
    names.push(String::new());
    names
}

/// Flat names `{collection}/{id}` with a bad id, a bad shape or the wrong collection.
pub(super) fn bad_flat_names(collection: &str, other: &str) -> Vec<String> {
    let mut names: Vec<String> = bad_ids()
        .into_iter()
        .map(|id| format!("{collection}/{id}"))
        .collect();
    names.extend([
        String::new(),
        collection.to_owned(),
        format!("{collection}/a/b"),
        format!("../{collection}/a"),
        format!("{other}/a"),
    ]);
    names
}

/// Interface names (bridges, ports, netdevs): 1-15 bytes of `[A-Za-z0-9_.@-]`, not `.`/`..`,
/// not starting with `-` (an option to `ovs-vsctl`, `ovs-appctl`, `ip`).
pub(super) fn bad_ifnames() -> Vec<String> {
    [
        "",
        "-rf",
        "-",
        "--help",
        "br0;reboot",
        "$(reboot)",
        "`reboot`",
        "br 0",
        "a-very-long-bridge-name",
        "0123456789abcdef",
        ".",
        "..",
        "br/0",
        "../etc",
        "br\0",
        "br\n",
        "eth0:1",
        "brö",
        "br|x",
        "br&",
        "br>x",
        "br'x",
        "br\"x",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain([long(1000)])
    .collect()
}

pub(super) const BAD_BDFS: &[&str] = &[
    "",
    "0000:03:ff.f",
    "0000:03:20.0",
    "0000:03:00.8",
    "3:0.0",
    // SNAP's own form `bb:dd.f` is accepted; a PCI domain other than 0000 cannot be
    // expressed to SNAP (snap-audit F2).
    "0001:03:00.2",
    "ffff:03:00.0",
    "0000:03:00",
    "0000:03:00.0;reboot",
    "../../0000:03:00.0",
    "zzzz:03:00.0",
    "0000:03:00.0\0",
    "0000-03-00.0",
];

pub(super) const BAD_TRADDRS: &[(i32, &str)] = &[
    (1, "2001:db8::1"),
    (2, "192.0.2.10"),
    (1, "not-an-ip"),
    (1, ""),
    (1, "256.1.1.1"),
    (1, "192.0.2.10:4420"),
    (1, "192.0.2.10;reboot"),
    (1, "192.0.2.10\0"),
    (1, " 192.0.2.10"),
    (2, "[2001:db8::1]"),
    (2, "fe80::1%eth0"),
];

/// Reconnect settings SPDK v24.01 refuses (loss, delay, fast-fail) and the field to change.
pub(super) const BAD_RECONNECT: [((i32, u32, u32), &str); 9] = [
    ((-2, 1, 0), "ctrl_loss_timeout_sec"),
    ((i32::MIN, 1, 0), "ctrl_loss_timeout_sec"),
    ((0, 5, 0), "reconnect_delay_sec"),
    ((0, 0, 5), "fast_io_fail_timeout_sec"),
    ((-1, 0, 0), "reconnect_delay_sec"),
    ((30, 0, 0), "reconnect_delay_sec"),
    ((30, 31, 0), "reconnect_delay_sec"),
    ((30, 5, 31), "fast_io_fail_timeout_sec"),
    ((30, 10, 5), "fast_io_fail_timeout_sec"),
];

/// `volumes/{id}` names with a bad id or shape.
pub(super) fn bad_volumes() -> Vec<String> {
    vec![
        String::new(),
        "Nvme0n1".to_owned(),
        "volumes/".to_owned(),
        "volumes/..".to_owned(),
        "volumes/../../etc/passwd".to_owned(),
        "volumes/a/b".to_owned(),
        "volumes/a;reboot".to_owned(),
        "volumes/$(reboot)".to_owned(),
        "volumes/a b".to_owned(),
        "volumes/a\0".to_owned(),
        "volumes/é".to_owned(),
        format!("volumes/{}", long(256)),
        format!("volumes/{}", long(1000)),
    ]
}
