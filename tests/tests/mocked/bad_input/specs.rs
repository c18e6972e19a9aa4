//! Well-formed requests the rows start from, so that each row breaks exactly one field.

use dpu_proto::pbjson_types::Duration;
use dpu_proto::v1::{self, emulation_function::Function};

use super::NQN;

pub(super) fn remote_spec() -> v1::RemoteControllerSpec {
    v1::RemoteControllerSpec {
        transport: v1::NvmeTransport::Rdma as i32,
        address_family: v1::AddressFamily::Ipv4 as i32,
        traddr: "192.0.2.10".to_owned(),
        trsvcid: 4420,
        subnqn: NQN.to_owned(),
        ..Default::default()
    }
}

pub(super) fn exposure_spec() -> v1::ExposureSpec {
    v1::ExposureSpec {
        remote: Some(remote_spec()),
        remote_nsid: 1,
        subsystem_nqn: "nqn.2022-10.io.nvda.nvme:0".to_owned(),
        nsid: 1,
        function: Some(pf(0)),
        serial_number: "SN0001".to_owned(),
        model_number: "BlueField NVMe".to_owned(),
    }
}

pub(super) fn remote_of(spec: &mut v1::ExposureSpec) -> &mut v1::RemoteControllerSpec {
    spec.remote.get_or_insert_with(remote_spec)
}

pub(super) fn pf(pf_index: u32) -> v1::EmulationFunction {
    v1::EmulationFunction {
        function: Some(Function::PfVf(v1::PfVf {
            pf_index,
            vf_index: None,
        })),
    }
}

pub(super) fn bdf(bdf: &str) -> v1::EmulationFunction {
    v1::EmulationFunction {
        function: Some(Function::PciAddress(v1::PciAddress {
            bdf: bdf.to_owned(),
        })),
    }
}

pub(super) fn namespace() -> v1::Namespace {
    v1::Namespace {
        nsid: 1,
        volume: "volumes/Nvme0n1".to_owned(),
        ..Default::default()
    }
}

pub(super) fn controller() -> v1::Controller {
    v1::Controller {
        function: Some(pf(0)),
        ..Default::default()
    }
}

pub(super) fn duration(seconds: i64, nanos: i32) -> Duration {
    Duration { seconds, nanos }
}
