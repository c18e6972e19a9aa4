//! The host-visible PCI function of an emulated controller, decoded once from the API's
//! `EmulationFunction` into what SNAP takes ([`EmulatedFunction`]).
//!
//! SNAP names a function by PF/VF index, by VUID, or by `pci_bdf` written `bb:dd.f` without
//! a PCI domain (DPF sends `"26:00.2"`, mlnx_snap's pages `"84:00.2"`; snap-rdma keeps it as a
//! 16-bit bus/device/function). The API also takes `dddd:bb:dd.f` as `lspci -D` prints it:
//! domain 0000 is dropped, any other domain cannot be expressed to SNAP and is refused.

use dpu_nvmeof::snap::EmulatedFunction;
use dpu_proto::v1;

use super::field_error::FieldError;

/// Longest VUID accepted (NVIDIA's look like `MT2334XZ0G7DNVMES0D0F2`, 22 characters).
const MAX_VUID: usize = 64;

/// Decodes `function`; errors name the field below the function message.
pub(crate) fn decode(function: &v1::EmulationFunction) -> Result<EmulatedFunction, FieldError> {
    use v1::emulation_function::Function;
    match &function.function {
        None => Err(FieldError {
            field: "".into(),
            reason: "one of pf_vf, pci_address or vuid is required".to_owned(),
        }),
        Some(Function::PfVf(pf)) => Ok(match pf.vf_index {
            Some(vf_id) => EmulatedFunction::Vf {
                pf_id: pf.pf_index,
                vf_id,
            },
            None => EmulatedFunction::Pf { pf_id: pf.pf_index },
        }),
        Some(Function::PciAddress(pci)) => snap_bdf(&pci.bdf)
            .map(EmulatedFunction::PciBdf)
            .map_err(|reason| FieldError {
                field: "pci_address.bdf".into(),
                reason,
            }),
        Some(Function::Vuid(vuid)) => {
            if !vuid.is_empty()
                && vuid.len() <= MAX_VUID
                && vuid.chars().all(|c| c.is_ascii_alphanumeric())
            {
                Ok(EmulatedFunction::Vuid(vuid.clone()))
            } else {
                Err(FieldError {
                    field: "vuid".into(),
                    reason: format!("must be 1-{MAX_VUID} letters and digits"),
                })
            }
        }
    }
}

/// `bb:dd.f` from `bb:dd.f` or `0000:bb:dd.f` (lower case, as SNAP prints it): what an
/// operator sends, and what SNAP's `emulation_function_list` answers, checked alike.
pub(crate) fn snap_bdf(text: &str) -> Result<String, String> {
    let not_bdf = || format!("{text:?} is not a PCI address (bb:dd.f or 0000:bb:dd.f)");
    let parts: Vec<&str> = text.split(':').collect();
    let (domain, bus, rest) = match parts.as_slice() {
        [bus, rest] => (None, *bus, *rest),
        [domain, bus, rest] => (Some(*domain), *bus, *rest),
        _ => return Err(not_bdf()),
    };
    let (device, func) = rest.split_once('.').ok_or_else(not_bdf)?;
    let hex = |s: &str, len: usize| s.len() == len && s.chars().all(|c| c.is_ascii_hexdigit());
    if !(hex(bus, 2) && hex(device, 2) && hex(func, 1)) {
        return Err(not_bdf());
    }
    let device_number = u8::from_str_radix(device, 16).map_err(|_| not_bdf())?;
    let function_number = u8::from_str_radix(func, 16).map_err(|_| not_bdf())?;
    if device_number > 0x1f {
        return Err(format!("{text:?}: device {device} is above 1f"));
    }
    if function_number > 7 {
        return Err(format!("{text:?}: function {func} is above 7"));
    }
    if let Some(domain) = domain {
        if !hex(domain, 4) {
            return Err(not_bdf());
        }
        if domain != "0000" {
            return Err(format!(
                "{text:?} is in PCI domain {domain}: SNAP addresses functions as bb:dd.f, \
                 which reaches domain 0000 only"
            ));
        }
    }
    Ok(format!("{bus}:{device}.{func}").to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pci(bdf: &str) -> v1::EmulationFunction {
        v1::EmulationFunction {
            function: Some(v1::emulation_function::Function::PciAddress(
                v1::PciAddress {
                    bdf: bdf.to_owned(),
                },
            )),
        }
    }

    #[test]
    fn domain_zero_is_dropped_and_snaps_form_is_kept() {
        for (given, sent) in [
            ("0000:03:00.2", "03:00.2"),
            ("03:00.2", "03:00.2"),
            ("0000:A3:1F.7", "a3:1f.7"),
        ] {
            assert_eq!(
                decode(&pci(given)).expect(given),
                EmulatedFunction::PciBdf(sent.to_owned())
            );
        }
    }

    #[test]
    fn other_domains_and_bad_addresses_are_refused_naming_the_field() {
        for bad in [
            "0001:03:00.2",
            "3:0.0",
            "03:20.0",
            "03:00.8",
            "0000:03:00",
            "zz:00.0",
            "",
        ] {
            let err = decode(&pci(bad)).expect_err(bad);
            assert_eq!(err.field, "pci_address.bdf", "{bad}");
        }
        let err = decode(&pci("0001:03:00.2")).expect_err("domain");
        assert!(err.reason.contains("domain 0001"), "{}", err.reason);
    }

    #[test]
    fn vuids_and_indexes_decode() {
        let vuid = v1::EmulationFunction {
            function: Some(v1::emulation_function::Function::Vuid(
                "MT2334XZ0G7DNVMES0D0F2".to_owned(),
            )),
        };
        assert_eq!(
            decode(&vuid).expect("vuid"),
            EmulatedFunction::Vuid("MT2334XZ0G7DNVMES0D0F2".to_owned())
        );
        let vf = v1::EmulationFunction {
            function: Some(v1::emulation_function::Function::PfVf(v1::PfVf {
                pf_index: 1,
                vf_index: Some(3),
            })),
        };
        assert_eq!(
            decode(&vf).expect("vf"),
            EmulatedFunction::Vf { pf_id: 1, vf_id: 3 }
        );
        assert!(decode(&v1::EmulationFunction { function: None }).is_err());
    }
}
