//! libFuzzer target: the small value parsers applied to single sysfs attributes and names
//! (PCIe link speed/width, GID types, representor names, PCI addresses, NVMe namespace
//! names, counter units, counter selectors). None may panic on any text.
#![no_main]

use dpu_probe::block::is_nvme_namespace;
use dpu_probe::counters::CounterSelector;
use dpu_probe::netdev::{looks_like_pci_address, representor_role};
use dpu_probe::pci::{parse_link_speed, parse_link_width};
use dpu_probe::rdma::GidType;
use dpu_probe::rdma::counters::{hw_counter_unit, pma_counter_unit};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();
    if let Some(speed) = parse_link_speed(text) {
        assert!(!speed.is_nan(), "link speed NaN from {text:?}");
    }
    let _ = parse_link_width(text);
    let _ = GidType::parse(text);
    let _ = representor_role(text);
    if looks_like_pci_address(text) {
        assert_eq!(text.len(), 12);
    }
    let _ = is_nvme_namespace(text);
    let _ = pma_counter_unit(text);
    let _ = hw_counter_unit(text);
    let name = Some(text.to_owned());
    for selector in [
        CounterSelector::Rdma {
            device: name.clone(),
            port: Some(1),
        },
        CounterSelector::Netdev {
            ifname: name.clone(),
        },
        CounterSelector::Tc {
            ifname: text.to_owned(),
        },
        CounterSelector::Block { device: name },
    ] {
        // A selector that validates names one path component: no '/', not "." or "..".
        if selector.validate().is_ok() {
            assert!(
                !text.contains('/') && text != "." && text != "..",
                "{selector}"
            );
        }
    }
});
