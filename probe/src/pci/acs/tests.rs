use super::*;

/// 4096 bytes of config space with these extended capabilities, chained in order:
/// `(offset, id, version)`; each header's next pointer is the following offset.
fn config_with(caps: &[(usize, u16, u8)]) -> Vec<u8> {
    let mut config = vec![0u8; EXTENDED_CONFIG_END];
    for (i, (offset, id, version)) in caps.iter().enumerate() {
        let next = caps.get(i + 1).map_or(0, |c| c.0) as u32;
        let header = u32::from(*id) | (u32::from(*version) << 16) | (next << 20);
        config[*offset..offset + 4].copy_from_slice(&header.to_le_bytes());
    }
    config
}

fn set_acs(config: &mut [u8], offset: usize, capability: u16, control: u16) {
    config[offset + 4..offset + 6].copy_from_slice(&capability.to_le_bytes());
    config[offset + 6..offset + 8].copy_from_slice(&control.to_le_bytes());
}

/// A PLX/Broadcom-style downstream port: AER at 0x100, ACS at 0x148, a vendor-specific
/// capability at 0x200.
fn switch_port(control: u16) -> Vec<u8> {
    let mut config = config_with(&[
        (0x100, 0x0001, 2),
        (0x148, PCI_EXT_CAP_ID_ACS, 1),
        (0x200, 0x000b, 1),
    ]);
    set_acs(&mut config, 0x148, 0x005f, control);
    config
}

#[test]
fn walks_the_list_and_decodes_acs_off() {
    let caps = extended_capabilities(&switch_port(0)).expect("walks");
    let ids: Vec<(usize, u16, u8)> = caps.iter().map(|c| (c.offset, c.id, c.version)).collect();
    assert_eq!(ids, [(0x100, 1, 2), (0x148, 0x0d, 1), (0x200, 0x0b, 1)]);
    let Ok(BridgeAcs::Implemented(acs)) = decode_acs(&switch_port(0)) else {
        panic!("ACS expected");
    };
    assert_eq!(acs.offset, 0x148);
    assert_eq!(
        acs.capability.names(),
        [
            "SrcValid",
            "TransBlk",
            "ReqRedir",
            "CmpltRedir",
            "UpstreamFwd",
            "DirectTrans"
        ]
    );
    assert_eq!(acs.control, AcsFlags(0));
    assert!(!acs.control.redirects_peer_traffic());
    assert_eq!(acs.control.to_string(), "none");
}

#[test]
fn decodes_the_kernel_default_for_an_iommu() {
    // SV | RR | CR | UF: what pci_std_enable_acs sets on a downstream port when an
    // IOMMU asks for isolation.
    let Ok(BridgeAcs::Implemented(acs)) = decode_acs(&switch_port(0x001d)) else {
        panic!("ACS expected");
    };
    assert_eq!(
        acs.control.names(),
        ["SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"]
    );
    assert!(acs.control.redirects_peer_traffic());
    assert!(AcsFlags(AcsFlags::COMPLETION_REDIRECT).redirects_peer_traffic());
    assert!(
        !AcsFlags(AcsFlags::SOURCE_VALIDATION | AcsFlags::UPSTREAM_FORWARDING)
            .redirects_peer_traffic()
    );
}

#[test]
fn short_reads_and_empty_lists() {
    assert_eq!(
        decode_acs(&[0u8; 64]),
        Ok(BridgeAcs::NeedsRoot { bytes: 64 })
    );
    assert_eq!(decode_acs(&[]), Ok(BridgeAcs::NeedsRoot { bytes: 0 }));
    assert_eq!(decode_acs(&[0u8; 256]), Ok(BridgeAcs::NoExtendedConfig));
    assert_eq!(decode_acs(&vec![0u8; 4096]), Ok(BridgeAcs::NotImplemented));
    let no_acs = config_with(&[(0x100, 0x0001, 2), (0x150, 0x0003, 1)]);
    assert_eq!(decode_acs(&no_acs), Ok(BridgeAcs::NotImplemented));
}

#[test]
fn malformed_lists_are_errors_naming_the_offset() {
    // A loop: 0x100 -> 0x140 -> 0x100.
    let mut looped = config_with(&[(0x100, 1, 1), (0x140, 3, 1)]);
    looped[0x140..0x144].copy_from_slice(&(3u32 | (1 << 16) | (0x100 << 20)).to_le_bytes());
    assert_eq!(
        extended_capabilities(&looped),
        Err(ConfigSpaceError::Loop { offset: 0x100 })
    );
    // A self-loop.
    let mut selfish = vec![0u8; 4096];
    selfish[0x100..0x104].copy_from_slice(&(1u32 | (0x100 << 20)).to_le_bytes());
    assert_eq!(
        decode_acs(&selfish),
        Err(ConfigSpaceError::Loop { offset: 0x100 })
    );
    // A pointer into conventional space.
    let mut low = vec![0u8; 4096];
    low[0x100..0x104].copy_from_slice(&(1u32 | (0x40 << 20)).to_le_bytes());
    assert_eq!(
        decode_acs(&low),
        Err(ConfigSpaceError::NextInsideConventional {
            offset: 0x100,
            next: 0x40
        })
    );
    // A pointer beyond what was read (a 512-byte read).
    let mut far = vec![0u8; 512];
    far[0x100..0x104].copy_from_slice(&(1u32 | (0x300 << 20)).to_le_bytes());
    let err = decode_acs(&far).expect_err("beyond the read");
    assert!(
        matches!(
            err,
            ConfigSpaceError::Truncated {
                offset: 0x300,
                len: 512,
                ..
            }
        ),
        "{err}"
    );
    // ACS registers cut off.
    let mut cut = vec![0u8; 0x105];
    cut[0x100..0x104].copy_from_slice(&u32::from(PCI_EXT_CAP_ID_ACS).to_le_bytes());
    let err = decode_acs(&cut).expect_err("cut");
    assert_eq!(
        err.to_string(),
        "ACS Capability Register at offset 0x104 needs 2 bytes but only 261 were read"
    );
    // No answer.
    let mut dead = vec![0u8; 4096];
    dead[0x100..0x104].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(
        decode_acs(&dead),
        Err(ConfigSpaceError::AllOnes { offset: 0x100 })
    );
    // The low two bits of the next pointer are masked, as the kernel does.
    let mut unaligned = config_with(&[(0x100, 1, 1)]);
    unaligned[0x100..0x104].copy_from_slice(&(1u32 | (0x143 << 20)).to_le_bytes());
    unaligned[0x140..0x144].copy_from_slice(&u32::from(PCI_EXT_CAP_ID_ACS).to_le_bytes());
    assert!(matches!(
        decode_acs(&unaligned),
        Ok(BridgeAcs::Implemented(AcsCapability { offset: 0x140, .. }))
    ));
}

#[test]
fn every_byte_string_decodes_or_errs_without_panicking() {
    // Every next pointer from every offset of a small space.
    for len in [0usize, 63, 64, 255, 256, 257, 259, 260, 300, 4096, 5000] {
        for next in (0..0x1000u32).step_by(0x44) {
            let mut config = vec![0u8; len];
            if len >= 0x104 {
                config[0x100..0x104].copy_from_slice(&(0xdu32 | (next << 20)).to_le_bytes());
            }
            let _ = decode_acs(&config);
        }
    }
}

#[test]
fn reads_the_file_under_the_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = SysRoot::new(dir.path());
    let port = root.sys("bus/pci/devices/0000:17:01.0");
    std::fs::create_dir_all(&port).expect("mkdir");
    std::fs::write(port.join("config"), switch_port(0x0004)).expect("write");
    let Ok(BridgeAcs::Implemented(acs)) = read_bridge_acs(&root, "0000:17:01.0") else {
        panic!("ACS expected");
    };
    assert_eq!(acs.control.to_string(), "ReqRedir");
    let mut looped = vec![0u8; 4096];
    looped[0x100..0x104].copy_from_slice(&(1u32 | (0x100 << 20)).to_le_bytes());
    std::fs::write(port.join("config"), looped).expect("write");
    let err = read_bridge_acs(&root, "0000:17:01.0").expect_err("loop");
    assert!(err.to_string().contains("0000:17:01.0/config"), "{err}");
    assert!(err.to_string().contains("loops back to 0x100"), "{err}");
    let err = read_bridge_acs(&root, "0000:18:00.0").expect_err("absent");
    assert!(matches!(err, ProbeError::Read { .. }), "{err}");
    assert!(read_bridge_acs(&root, "../x").is_err());
}
