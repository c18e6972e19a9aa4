//! libFuzzer target: any text as the kernel's reply on `/dev/nvme-fabrics` after a connect
//! (`instance=N,cntlid=M`), through the public `Fabrics::connect` with a fake device. No
//! panic; a reply that is accepted names the `nvme<instance>` device.
#![no_main]

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use dpu_nvmeof::kernel::{ConnectSpec, Fabrics, FabricsDevice, KernelPaths, Transport};
use libfuzzer_sys::fuzz_target;

#[derive(Debug)]
struct Reply(String);

impl FabricsDevice for Reply {
    fn exchange(&self, _device: &Path, _options: &str) -> io::Result<String> {
        Ok(self.0.clone())
    }
}

fn root() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("dpu-nvmeof-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("dev")).expect("mkdir");
        std::fs::create_dir_all(dir.join("sys/class/nvme")).expect("mkdir");
        std::fs::write(dir.join("dev/nvme-fabrics"), "").expect("write");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let reply = String::from_utf8_lossy(data).into_owned();
    let paths = KernelPaths::under(root());
    let fabrics = Fabrics::with_device(&paths, Reply(reply));
    let mut spec = ConnectSpec::new(Transport::Tcp, "nqn.2016-06.io.spdk:cnode1");
    spec.traddr = Some("192.0.2.10".to_owned());
    spec.trsvcid = Some(4420);
    match fabrics.connect(&spec) {
        Ok(ctrl) => assert_eq!(ctrl.device, format!("nvme{}", ctrl.instance)),
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
