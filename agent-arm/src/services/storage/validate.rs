//! Validation of `dpu.v1.Storage` requests at the API edge: every bad value is rejected
//! with `INVALID_ARGUMENT` naming the field before anything reaches a backend.

use dpu_proto::names::{self, check_client_id, Collection};
use dpu_proto::v1;
use tonic::Status;

use crate::services::status::{echo, invalid, invalid_field, required};
use crate::storage::desired::QosDoc;
use crate::storage::remote::RemoteTarget;
use dpu_nvmeof::snap::QosLimitError;

/// Maximum serial number length reported in NVMe Identify Controller (SN, 20 bytes).
const MAX_SERIAL: usize = 20;
/// Maximum model number length (MN, 40 bytes).
const MAX_MODEL: usize = 40;

pub(crate) fn nqn(field: &'static str, text: &str) -> Result<(), Status> {
    dpu_nvmeof::Nqn::parse(text)
        .map(drop)
        .map_err(invalid_field(field))
}

/// A remote controller spec, decoded by the one decoder the backends use too
/// ([`RemoteTarget::decode`]), so the API refuses exactly what would not work.
pub(crate) fn remote_spec(
    field: &str,
    spec: Option<&v1::RemoteControllerSpec>,
) -> Result<(), Status> {
    let spec = required(field, spec)?;
    RemoteTarget::decode(spec)
        .map(drop)
        .map_err(|e| invalid(&format!("{field}.{}", e.field), e.reason))
}

/// QoS limits, checked by SPDK v24.01's rules ([`dpu_nvmeof::snap::QosLimits::check`]):
/// what SPDK would round up or clamp instead of applying is refused naming the field
/// (`limits.rw_ios_per_sec`, ...). Absent limits are all 0 (a clear).
pub(crate) fn qos_limits(field: &str, limits: Option<&v1::QosLimits>) -> Result<QosDoc, Status> {
    let limits = limits.copied().unwrap_or_default();
    let spdk = dpu_nvmeof::snap::QosLimits {
        rw_ios_per_sec: limits.rw_ios_per_sec,
        rw_mbytes_per_sec: limits.rw_mbytes_per_sec,
        r_mbytes_per_sec: limits.r_mbytes_per_sec,
        w_mbytes_per_sec: limits.w_mbytes_per_sec,
    };
    spdk.check().map_err(|e| {
        let key = match &e {
            QosLimitError::NotMultiple { key, .. } | QosLimitError::TooLarge { key, .. } => *key,
        };
        let text = e.to_string();
        let reason = text.strip_prefix(&format!("{key}: ")).unwrap_or(&text);
        invalid(&format!("{field}.{key}"), reason)
    })?;
    Ok(QosDoc {
        rw_ios_per_sec: limits.rw_ios_per_sec,
        rw_mbytes_per_sec: limits.rw_mbytes_per_sec,
        r_mbytes_per_sec: limits.r_mbytes_per_sec,
        w_mbytes_per_sec: limits.w_mbytes_per_sec,
    })
}

pub(crate) fn subsystem(sub: Option<&v1::Subsystem>) -> Result<(), Status> {
    let sub = required("subsystem", sub)?;
    nqn("subsystem.nqn", &sub.nqn)?;
    if !sub.name.is_empty() && sub.name != format!("subsystems/{}", sub.nqn) {
        return Err(invalid(
            "subsystem.name",
            "must be empty or equal to subsystems/{nqn}",
        ));
    }
    identify_string("subsystem.serial_number", &sub.serial_number, MAX_SERIAL)?;
    identify_string("subsystem.model_number", &sub.model_number, MAX_MODEL)
}

/// Serial and model numbers are printable ASCII in NVMe Identify data.
fn identify_string(field: &str, value: &str, max: usize) -> Result<(), Status> {
    if value.len() > max {
        return Err(invalid(field, format!("longer than {max} bytes")));
    }
    if !value.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
        return Err(invalid(field, "must be printable ASCII"));
    }
    Ok(())
}

pub(crate) fn namespace(ns: Option<&v1::Namespace>) -> Result<(), Status> {
    let ns = required("namespace", ns)?;
    names::check_nsid(ns.nsid).map_err(invalid_field("namespace.nsid"))?;
    Collection::Volumes
        .parse(&ns.volume)
        .map_err(invalid_field("namespace.volume"))?;
    if !ns.uuid.is_empty() {
        uuid("namespace.uuid", &ns.uuid)?;
    }
    hex_id("namespace.nguid", &ns.nguid, 32)?;
    hex_id("namespace.eui64", &ns.eui64, 16)
}

fn uuid(field: &str, text: &str) -> Result<(), Status> {
    let groups: Vec<&str> = text.split('-').collect();
    let lengths: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    if lengths != [8, 4, 4, 4, 12] || !text.chars().all(|c| c == '-' || c.is_ascii_hexdigit()) {
        return Err(invalid(
            field,
            format!("{} is not a UUID (8-4-4-4-12 hex digits)", echo(text)),
        ));
    }
    Ok(())
}

fn hex_id(field: &str, text: &str, digits: usize) -> Result<(), Status> {
    if text.is_empty() {
        return Ok(());
    }
    if text.len() != digits || !text.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(invalid(field, format!("must be {digits} hex digits")));
    }
    Ok(())
}

pub(crate) fn controller(field: &str, ctrl: Option<&v1::Controller>) -> Result<(), Status> {
    let ctrl = required(field, ctrl)?;
    function(&format!("{field}.function"), ctrl.function.as_ref())?;
    if ctrl.num_queues > 1024 {
        return Err(invalid(
            &format!("{field}.num_queues"),
            "must be at most 1024",
        ));
    }
    if ctrl.mdts > 12 {
        return Err(invalid(&format!("{field}.mdts"), "must be at most 12"));
    }
    Ok(())
}

/// An emulation function, decoded by the one decoder the SNAP backend uses
/// ([`crate::storage::function::decode`]).
pub(crate) fn function(
    field: &str,
    function: Option<&v1::EmulationFunction>,
) -> Result<(), Status> {
    let function = required(field, function)?;
    crate::storage::function::decode(function)
        .map(drop)
        .map_err(|e| {
            let field = if e.field.is_empty() {
                field.to_owned()
            } else {
                format!("{field}.{}", e.field)
            };
            invalid(&field, e.reason)
        })
}

pub(crate) fn client_id(field: &'static str, id: &str) -> Result<(), Status> {
    check_client_id(field, id).map_err(invalid_field(field))
}

pub(crate) fn exposure_spec(spec: Option<&v1::ExposureSpec>) -> Result<(), Status> {
    let spec = required("spec", spec)?;
    remote_spec("spec.remote", spec.remote.as_ref())?;
    nqn("spec.subsystem_nqn", &spec.subsystem_nqn)?;
    if spec.nsid != 0 {
        names::check_nsid(spec.nsid).map_err(invalid_field("spec.nsid"))?;
    }
    if spec.remote_nsid != 0 {
        names::check_nsid(spec.remote_nsid).map_err(invalid_field("spec.remote_nsid"))?;
    }
    function("spec.function", spec.function.as_ref())?;
    identify_string("spec.serial_number", &spec.serial_number, MAX_SERIAL)?;
    identify_string("spec.model_number", &spec.model_number, MAX_MODEL)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote() -> v1::RemoteControllerSpec {
        v1::RemoteControllerSpec {
            transport: v1::NvmeTransport::Rdma as i32,
            address_family: v1::AddressFamily::Ipv4 as i32,
            traddr: "192.0.2.10".to_owned(),
            trsvcid: 4420,
            subnqn: "nqn.2016-06.io.spdk:cnode1".to_owned(),
            ..Default::default()
        }
    }

    #[test]
    fn a_good_remote_spec_passes_and_each_bad_field_is_named() {
        remote_spec("spec", Some(&remote())).expect("valid");
        type Mutation = Box<dyn Fn(&mut v1::RemoteControllerSpec)>;
        let cases: Vec<(&str, Mutation)> = vec![
            (
                "spec.traddr",
                Box::new(|s| s.traddr = "2001:db8::1".to_owned()),
            ),
            ("spec.trsvcid", Box::new(|s| s.trsvcid = 70000)),
            (
                "spec.subnqn",
                Box::new(|s| s.subnqn = "not-an-nqn".to_owned()),
            ),
            (
                "spec.transport",
                Box::new(|s| s.transport = v1::NvmeTransport::Loop as i32),
            ),
            ("spec.transport", Box::new(|s| s.transport = 99)),
            ("spec.address_family", Box::new(|s| s.address_family = 0)),
        ];
        for (field, mutate) in cases {
            let mut spec = remote();
            mutate(&mut spec);
            let status = remote_spec("spec", Some(&spec)).expect_err(field);
            assert_eq!(status.code(), tonic::Code::InvalidArgument);
            assert!(
                status.message().starts_with(field),
                "{field}: {}",
                status.message()
            );
        }
    }

    #[test]
    fn namespace_fields_are_checked() {
        let good = v1::Namespace {
            nsid: 1,
            volume: "volumes/RemoteNvme0n1".to_owned(),
            uuid: "3f2504e0-4f89-11d3-9a0c-0305e82c3301".to_owned(),
            ..Default::default()
        };
        namespace(Some(&good)).expect("valid");
        for (field, bad) in [
            (
                "namespace.nsid",
                v1::Namespace {
                    nsid: 0,
                    ..good.clone()
                },
            ),
            (
                "namespace.volume",
                v1::Namespace {
                    volume: "bdev0".to_owned(),
                    ..good.clone()
                },
            ),
            (
                "namespace.uuid",
                v1::Namespace {
                    uuid: "xyz".to_owned(),
                    ..good.clone()
                },
            ),
            (
                "namespace.eui64",
                v1::Namespace {
                    eui64: "12".to_owned(),
                    ..good.clone()
                },
            ),
        ] {
            let status = namespace(Some(&bad)).expect_err(field);
            assert!(status.message().starts_with(field), "{}", status.message());
        }
        assert!(namespace(None).is_err());
    }

    #[test]
    fn emulation_function_requires_a_choice_and_a_valid_bdf() {
        use v1::emulation_function::Function;
        assert!(function("f", Some(&v1::EmulationFunction { function: None })).is_err());
        let bad = v1::EmulationFunction {
            function: Some(Function::PciAddress(v1::PciAddress {
                bdf: "3:0.0".to_owned(),
            })),
        };
        assert!(function("f", Some(&bad)).is_err());
        let good = v1::EmulationFunction {
            function: Some(Function::PfVf(v1::PfVf {
                pf_index: 0,
                vf_index: Some(3),
            })),
        };
        function("f", Some(&good)).expect("valid");
    }
}
