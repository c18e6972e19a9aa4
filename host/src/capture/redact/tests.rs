use std::path::Path;

use super::{RedactedKind, Redactor};

fn redact(r: &mut Redactor, path: &str, text: &str) -> String {
    String::from_utf8(r.file(Path::new(path), text.as_bytes())).expect("utf-8")
}

#[test]
fn the_same_mac_in_two_files_gets_the_same_valid_placeholder() {
    let mut r = Redactor::default();
    let a = redact(&mut r, "sys/class/net/eth0/address", "0c:42:a1:de:ad:01\n");
    let b = redact(
        &mut r,
        "sys/class/net/eth0/perm_address",
        "0C:42:A1:DE:AD:01\n",
    );
    let c = redact(&mut r, "sys/class/net/eth1/address", "0c:42:a1:de:ad:02\n");
    assert_eq!(a, "02:00:00:00:00:01\n");
    assert_eq!(a, b, "case does not make a different MAC");
    assert_ne!(a, c, "two MACs stay two");
    let mac = &r.redactions()[0];
    assert_eq!(mac.kind, RedactedKind::LinkAddress);
    assert_eq!(mac.files.len(), 2);
}

#[test]
fn zero_and_broadcast_addresses_are_kept() {
    let mut r = Redactor::default();
    assert_eq!(
        redact(&mut r, "sys/class/net/lo/address", "00:00:00:00:00:00\n"),
        "00:00:00:00:00:00\n"
    );
    assert_eq!(
        redact(&mut r, "sys/class/net/lo/broadcast", "ff:ff:ff:ff:ff:ff\n"),
        "ff:ff:ff:ff:ff:ff\n"
    );
    assert!(r.redactions().is_empty());
}

#[test]
fn gids_keep_their_shape_and_share_the_guid_and_ipv4_mappings() {
    let mut r = Redactor::default();
    let guid = redact(
        &mut r,
        "sys/class/infiniband/mlx5_0/node_guid",
        "b83f:d203:00a1:b2c3\n",
    );
    let link_local = redact(
        &mut r,
        "sys/class/infiniband/mlx5_0/ports/1/gids/0",
        "fe80:0000:0000:0000:b83f:d203:00a1:b2c3\n",
    );
    assert_eq!(guid, "0200:0000:0000:0001\n");
    assert_eq!(link_local, "fe80:0000:0000:0000:0200:0000:0000:0001\n");
    let v4 = redact(
        &mut r,
        "sys/class/infiniband/mlx5_0/ports/1/gids/1",
        "0000:0000:0000:0000:0000:ffff:c0a8:6401\n",
    );
    assert_eq!(v4, "0000:0000:0000:0000:0000:ffff:c612:0001\n");
    assert_eq!(
        redact(&mut r, "proc/x", "addr 192.168.100.1."),
        "addr 198.18.0.1."
    );
    let zero = "0000:0000:0000:0000:0000:0000:0000:0000\n";
    assert_eq!(
        redact(&mut r, "sys/class/infiniband/mlx5_0/ports/1/gids/2", zero),
        zero
    );
}

#[test]
fn hostnames_serials_and_vpd_are_replaced_whole() {
    let mut r = Redactor::default();
    assert_eq!(
        redact(&mut r, "proc/sys/kernel/hostname", "gpu-node-17\n"),
        "redacted-host-1\n"
    );
    assert_eq!(
        redact(&mut r, "sys/class/dmi/id/product_serial", "MT2233X01234\n"),
        "REDACTED-SERIAL-1\n"
    );
    let vpd = r.file(
        Path::new("sys/bus/pci/devices/0000:03:00.0/vpd"),
        b"\x82SN MT123",
    );
    assert_eq!(vpd, vec![0; 9]);
    // Words, versions with a number over 255 and PCI addresses are not identifiers.
    let text = "mlx5_core 5.15.0.1035 0000:03:00.0 fw 24.35.2000\n";
    assert_eq!(redact(&mut r, "proc/modules", text), text);
}
