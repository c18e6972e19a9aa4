//! Whether the machine is a virtual machine, and under which hypervisor: a check that
//! finds no NIC must not tell someone on a VM to reseat a card. Read the way
//! `systemd-detect-virt` reads it, from the files the kernel gives every process: the
//! `hypervisor` CPU flag (x86: CPUID leaf 1, ECX bit 31, which every hypervisor sets) and
//! the firmware's DMI vendor and product (`/sys/class/dmi/id/`, also on arm64).

use crate::root::read_optional_attr;
use crate::SysRoot;

/// DMI vendor or product words and the hypervisor they name: the common entries of the
/// DMI table `systemd-detect-virt` matches the same files against.
const DMI_VENDORS: [(&str, &str); 11] = [
    ("KVM", "KVM"),
    ("OpenStack", "KVM (OpenStack)"),
    ("QEMU", "QEMU"),
    ("VMware", "VMware"),
    ("VMW", "VMware"),
    ("innotek GmbH", "VirtualBox"),
    ("VirtualBox", "VirtualBox"),
    ("Xen", "Xen"),
    ("Amazon EC2", "Amazon EC2"),
    ("Google Compute Engine", "Google Compute Engine"),
    ("Parallels", "Parallels"),
];

/// The hypervisor this machine runs under, by name where the DMI tables say it
/// ("QEMU", "VMware", "Hyper-V"), else "a hypervisor" when only the CPU flag does; `None`
/// on bare metal (or where neither can be read, e.g. a fixture tree without them).
pub fn hypervisor(root: &SysRoot) -> Option<String> {
    let dmi = ["sys_vendor", "product_name", "board_vendor", "bios_vendor"]
        .iter()
        .filter_map(|name| read_optional_attr(&root.sys("class/dmi/id").join(name)))
        .collect::<Vec<_>>();
    if let Some(name) = dmi_hypervisor(&dmi) {
        return Some(name.to_owned());
    }
    let cpuinfo = crate::root::read_text(&root.proc("cpuinfo")).unwrap_or_default();
    cpu_flag(&cpuinfo).then(|| "a hypervisor".to_owned())
}

/// The hypervisor the DMI strings name, if any.
fn dmi_hypervisor(dmi: &[String]) -> Option<&'static str> {
    // Hyper-V's firmware says "Microsoft Corporation" / "Virtual Machine"; a Surface
    // laptop says "Microsoft Corporation" too, so the product decides.
    if dmi.iter().any(|s| s == "Microsoft Corporation")
        && dmi.iter().any(|s| s == "Virtual Machine")
    {
        return Some("Hyper-V");
    }
    DMI_VENDORS
        .iter()
        .find(|(word, _)| dmi.iter().any(|s| s.starts_with(word)))
        .map(|(_, name)| *name)
}

/// Whether a `flags` line of `/proc/cpuinfo` has the `hypervisor` flag.
fn cpu_flag(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .filter(|line| line.starts_with("flags"))
        .any(|line| line.split_whitespace().any(|flag| flag == "hypervisor"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SysTree;

    fn tree(files: &[(&str, &str)]) -> (SysTree, SysRoot) {
        let tree = SysTree::new();
        for (rel, text) in files {
            tree.write(rel, text);
        }
        let root = tree.root();
        (tree, root)
    }

    #[test]
    fn dmi_names_the_hypervisor_and_the_cpu_flag_says_there_is_one() {
        let (_d, root) = tree(&[("sys/class/dmi/id/sys_vendor", "QEMU\n")]);
        assert_eq!(hypervisor(&root).as_deref(), Some("QEMU"));
        let (_d, root) = tree(&[
            ("sys/class/dmi/id/sys_vendor", "Microsoft Corporation\n"),
            ("sys/class/dmi/id/product_name", "Virtual Machine\n"),
        ]);
        assert_eq!(hypervisor(&root).as_deref(), Some("Hyper-V"));
        let (_d, root) = tree(&[(
            "proc/cpuinfo",
            "processor\t: 0\nflags\t\t: fpu vme de pse hypervisor lahf_lm\n",
        )]);
        assert_eq!(hypervisor(&root).as_deref(), Some("a hypervisor"));
    }

    #[test]
    fn bare_metal_and_lookalikes_are_not_virtual() {
        let (_d, root) = tree(&[
            ("sys/class/dmi/id/sys_vendor", "Supermicro\n"),
            ("sys/class/dmi/id/product_name", "SYS-421GE-TNRT\n"),
            ("proc/cpuinfo", "flags\t\t: fpu vme de pse hypervisor_x\n"),
        ]);
        assert_eq!(hypervisor(&root), None);
        // A Surface laptop: Microsoft's DMI vendor, not a virtual machine.
        let (_d, root) = tree(&[
            ("sys/class/dmi/id/sys_vendor", "Microsoft Corporation\n"),
            ("sys/class/dmi/id/product_name", "Surface Laptop 5\n"),
        ]);
        assert_eq!(hypervisor(&root), None);
        let (_d, root) = tree(&[]);
        assert_eq!(hypervisor(&root), None);
    }
}
