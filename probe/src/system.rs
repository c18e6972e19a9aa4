//! Facts about the machine as a whole, from procfs and os-release.

use std::time::Duration;

use crate::root::{read_attr, read_optional_attr};
use crate::SysRoot;

/// What the machine is: enough to tell which DPU, which OS image and whether it rebooted
/// between two counter snapshots.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SystemFacts {
    /// `/proc/sys/kernel/hostname`; None when it cannot be read (`unreadable` says why).
    pub hostname: Option<String>,
    /// `/proc/sys/kernel/osrelease`; None when it cannot be read.
    pub kernel_release: Option<String>,
    /// `PRETTY_NAME` from `/etc/os-release`, when present.
    pub os_name: Option<String>,
    /// Time since boot, from `/proc/uptime`.
    pub uptime: Option<Duration>,
    /// `/proc/sys/kernel/random/boot_id`: changes on every boot, so a snapshot pair with
    /// two boot ids spans a reboot and every counter reset.
    pub boot_id: Option<String>,
    /// The required facts that could not be read, each with its file and why. The answer
    /// keeps everything that could be read: one unreadable file does not hide the rest.
    pub unreadable: Vec<String>,
}

/// Reads [`SystemFacts`]: what can be read. Hostname and kernel release exist on every
/// Linux, so failing to read them is recorded in `unreadable`; the optional facts are
/// simply absent.
pub fn read_system_facts(root: &SysRoot) -> SystemFacts {
    let mut unreadable = Vec::new();
    let mut required = |path: std::path::PathBuf| match read_attr(&path) {
        Ok(value) => Some(value),
        Err(e) => {
            unreadable.push(e.to_string());
            None
        }
    };
    let hostname = required(root.proc("sys/kernel/hostname"));
    let kernel_release = required(root.proc("sys/kernel/osrelease"));
    SystemFacts {
        hostname,
        kernel_release,
        os_name: read_optional_attr(&root.etc("os-release"))
            .and_then(|text| os_release_value(&text, "PRETTY_NAME")),
        uptime: read_optional_attr(&root.proc("uptime")).and_then(|t| parse_uptime(&t)),
        boot_id: read_optional_attr(&root.proc("sys/kernel/random/boot_id")),
        unreadable,
    }
}

/// Extracts one key from os-release text (shell-style `KEY="value"` lines).
fn os_release_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(key)?.strip_prefix('=')?;
        let value = value.trim();
        let unquoted = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        Some(unquoted.to_owned())
    })
}

/// Parses the first field of `/proc/uptime` ("12345.67 23456.78").
fn parse_uptime(text: &str) -> Option<Duration> {
    let secs: f64 = text.split_whitespace().next()?.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn reads_facts_from_a_fixture_root() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(dir.path());
        fs::create_dir_all(root.proc("sys/kernel/random")).expect("mkdir");
        fs::create_dir_all(root.etc("")).expect("mkdir");
        fs::write(root.proc("sys/kernel/hostname"), "dpu-bf3\n").expect("write");
        fs::write(root.proc("sys/kernel/osrelease"), "5.15.0-1035-bluefield\n").expect("write");
        fs::write(root.proc("uptime"), "360.50 700.00\n").expect("write");
        fs::write(
            root.etc("os-release"),
            "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\n",
        )
        .expect("write");

        let facts = read_system_facts(&root);
        assert_eq!(facts.hostname.as_deref(), Some("dpu-bf3"));
        assert_eq!(
            facts.kernel_release.as_deref(),
            Some("5.15.0-1035-bluefield")
        );
        assert!(facts.unreadable.is_empty(), "{:?}", facts.unreadable);
        assert_eq!(facts.os_name.as_deref(), Some("Ubuntu 22.04.4 LTS"));
        assert_eq!(facts.uptime, Some(Duration::from_millis(360_500)));
        assert_eq!(facts.boot_id, None);
    }

    #[test]
    fn an_unreadable_hostname_is_named_and_the_rest_still_read() {
        // Issue 33 §8: one unreadable file failed the whole GetSystem answer.
        let dir = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(dir.path());
        fs::create_dir_all(root.proc("sys/kernel")).expect("mkdir");
        fs::write(root.proc("sys/kernel/osrelease"), "6.1.0\n").expect("write");
        fs::write(root.proc("uptime"), "10.00 20.00\n").expect("write");
        let facts = read_system_facts(&root);
        assert_eq!(facts.hostname, None);
        assert_eq!(facts.kernel_release.as_deref(), Some("6.1.0"));
        assert_eq!(facts.uptime, Some(Duration::from_secs(10)));
        let [why] = &facts.unreadable[..] else {
            panic!("{:?}", facts.unreadable)
        };
        assert!(why.contains("hostname"), "{why}");
    }

    #[test]
    fn uptime_rejects_garbage() {
        assert_eq!(parse_uptime("abc"), None);
        assert_eq!(parse_uptime("-1 0"), None);
        assert_eq!(parse_uptime(""), None);
    }
}
