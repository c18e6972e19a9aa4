//! The agent's kernel storage backend over a fake sysfs tree: an already-connected
//! nvme-fabrics controller is adopted (no second connect), its namespace becomes a volume
//! with the kernel's geometry and `/sys/block` counters, deleting it writes
//! `delete_controller`, a subsystem is written to (pre-made) nvmet configfs attributes,
//! and controllers are refused because the kernel cannot emulate PCI.
//! nvmet configfs and `/dev/nvme-fabrics` themselves need a real kernel (the QEMU lab).

use std::path::Path;

use dpu_proto::v1;
use dpu_proto::v1::storage_client::StorageClient;
use tonic::Code;

use super::Lab;

const REMOTE_NQN: &str = "nqn.2016-06.io.spdk:cnode1";
const HOST_NQN: &str = "nqn.2022-10.io.nvda.nvme:0";
const DISK_UUID: &str = "913fc008-79a7-447f-b2c4-c73543638c31";

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A live NVMe/TCP controller nvme0 to 192.0.2.10:4420 with namespace 1 as nvme0n1.
fn connected_controller(root: &Path) {
    let ctrl = "sys/class/nvme/nvme0";
    write(root, &format!("{ctrl}/transport"), "tcp\n");
    write(
        root,
        &format!("{ctrl}/address"),
        "traddr=192.0.2.10,trsvcid=4420,src_addr=192.0.2.1\n",
    );
    write(
        root,
        &format!("{ctrl}/subsysnqn"),
        &format!("{REMOTE_NQN}\n"),
    );
    write(root, &format!("{ctrl}/state"), "live\n");
    write(root, &format!("{ctrl}/cntlid"), "1\n");
    write(root, &format!("{ctrl}/delete_controller"), "");
    std::fs::create_dir_all(root.join(format!("{ctrl}/nvme0n1"))).expect("ns dir");
    let disk = "sys/block/nvme0n1";
    write(root, &format!("{disk}/size"), "131072\n");
    write(root, &format!("{disk}/nsid"), "1\n");
    write(root, &format!("{disk}/queue/logical_block_size"), "4096\n");
    // The kernel's identity files (drivers/nvme/host/sysfs.c): `uuid` and `nguid` as
    // %pU, `eui` as space-separated bytes.
    write(root, &format!("{disk}/uuid"), &format!("{DISK_UUID}\n"));
    write(root, &format!("{disk}/eui"), "00 25 38 5b 71 b1 2f 3c\n");
    // 2000 reads of 6,000,000 sectors, 10 writes of 80 sectors.
    write(
        root,
        &format!("{disk}/stat"),
        "2000 0 6000000 900 10 0 80 5 0 700 905 0 0 0 0 0 0\n",
    );
}

#[tokio::test]
async fn kernel_backend_adopts_a_connected_controller_and_reads_its_disk() {
    let kernel_root = tempfile::tempdir().expect("tempdir");
    connected_controller(kernel_root.path());
    let config = format!(
        "[storage]\nbackend = \"kernel\"\n[kernel]\nroot = \"{}\"\n",
        kernel_root.path().display()
    );
    let lab = Lab::start_with(|options| options.config_toml = config);
    let mut storage = StorageClient::new(lab.agent.channel().await);

    let spec = v1::RemoteControllerSpec {
        transport: v1::NvmeTransport::Tcp as i32,
        address_family: v1::AddressFamily::Ipv4 as i32,
        traddr: "192.0.2.10".to_owned(),
        trsvcid: 4420,
        subnqn: REMOTE_NQN.to_owned(),
        ..Default::default()
    };
    let remote = storage
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: "r0".to_owned(),
            spec: Some(spec),
            options: None,
        })
        .await
        .expect("adopt the connected controller")
        .into_inner();
    let status = remote.status.expect("status");
    assert_eq!(
        status.state,
        v1::RemoteControllerState::Enabled as i32,
        "{status:?}"
    );
    assert_eq!(status.volumes.len(), 1, "{status:?}");
    assert_eq!(status.volumes[0].name, "volumes/r0n1");
    assert_eq!(status.volumes[0].block_size, 4096);
    assert_eq!(status.volumes[0].num_blocks, 131_072 * 512 / 4096);
    // How a host that sees the same disk recognises it: the disk's own identity, as the
    // kernel shows it, normalised (what `prove storage` binds a device by).
    assert_eq!(
        status.volumes[0].host_identities,
        [v1::DiskIdentity {
            uuid: DISK_UUID.to_owned(),
            nguid: String::new(),
            eui64: "0025385b71b12f3c".to_owned(),
            source: "disk /dev/nvme0n1 on the agent's machine".to_owned(),
            host_pci_functions: Vec::new(),
        }],
        "{status:?}"
    );

    let stats = storage
        .get_io_stats(v1::GetIoStatsRequest {
            name: "volumes/r0n1".to_owned(),
        })
        .await
        .expect("stats")
        .into_inner();
    assert_eq!(stats.bytes_read, 6_000_000 * 512);
    assert_eq!(stats.read_ops, 2000);
    assert_eq!(stats.bytes_written, 80 * 512);
    assert!(
        stats.source.contains("/sys/block/nvme0n1/stat"),
        "{}",
        stats.source
    );

    // A subsystem is an nvmet subsystem; its configfs directory is pre-made here with the
    // attributes the kernel would create (this machine has no configfs).
    let nvmet = "sys/kernel/config/nvmet";
    for attr in ["attr_allow_any_host", "attr_serial", "attr_model"] {
        write(
            kernel_root.path(),
            &format!("{nvmet}/subsystems/{HOST_NQN}/{attr}"),
            "",
        );
    }
    for dir in ["allowed_hosts", "namespaces"] {
        std::fs::create_dir_all(
            kernel_root
                .path()
                .join(format!("{nvmet}/subsystems/{HOST_NQN}/{dir}")),
        )
        .expect("mkdir");
    }
    std::fs::create_dir_all(kernel_root.path().join(format!("{nvmet}/hosts"))).expect("mkdir");
    std::fs::create_dir_all(kernel_root.path().join(format!("{nvmet}/ports"))).expect("mkdir");
    storage
        .create_subsystem(v1::CreateSubsystemRequest {
            subsystem: Some(v1::Subsystem {
                nqn: HOST_NQN.to_owned(),
                serial_number: "SN1".to_owned(),
                ..Default::default()
            }),
            options: None,
        })
        .await
        .expect("nvmet subsystem");
    let serial = std::fs::read_to_string(
        kernel_root
            .path()
            .join(format!("{nvmet}/subsystems/{HOST_NQN}/attr_serial")),
    )
    .expect("serial");
    assert_eq!(serial, "SN1");
    let allow_any = std::fs::read_to_string(
        kernel_root
            .path()
            .join(format!("{nvmet}/subsystems/{HOST_NQN}/attr_allow_any_host")),
    )
    .expect("allow any host");
    assert_eq!(allow_any, "1");

    let err = storage
        .create_controller(v1::CreateControllerRequest {
            parent: format!("subsystems/{HOST_NQN}"),
            controller_id: "c0".to_owned(),
            controller: Some(v1::Controller {
                function: Some(v1::EmulationFunction {
                    function: Some(v1::emulation_function::Function::PfVf(v1::PfVf {
                        pf_index: 0,
                        vf_index: None,
                    })),
                }),
                ..Default::default()
            }),
            options: None,
        })
        .await
        .expect_err("no PCI emulation in the kernel");
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("PCI emulation"), "{}", err.message());
    assert!(err.message().contains("rolled back"), "{}", err.message());

    storage
        .delete_remote_controller(v1::DeleteRemoteControllerRequest {
            name: "remoteControllers/r0".to_owned(),
            ..Default::default()
        })
        .await
        .expect("disconnect");
    let written = std::fs::read_to_string(
        kernel_root
            .path()
            .join("sys/class/nvme/nvme0/delete_controller"),
    )
    .expect("read delete_controller");
    assert_eq!(written, "1");
}
