//! Test doubles for the kernel: a configfs that behaves like nvmet's on a tempdir, a
//! fake `/dev/nvme-fabrics`, sysfs tree builders and a tree snapshot for
//! byte-identity checks.
//!
//! [`FakeConfigFs`] mimics what the tests rely on from `drivers/nvme/target/configfs.c`:
//! `mkdir` populates attributes and default groups; `device_path`/`device_uuid` writes
//! fail with EBUSY while enabled; `enable=1` fails with ENOENT if the device is missing;
//! address writes fail with EACCES while a subsystem is linked; `allowed_hosts` links
//! and `attr_allow_any_host=1` exclude each other (EINVAL); `rmdir` removes attributes
//! but fails with ENOTEMPTY while links or user-made children remain.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{ConfigFs, FabricsDevice};

const EPERM: i32 = 1;
const ENOENT: i32 = 2;
const EACCES: i32 = 13;
const EBUSY: i32 = 16;
const EINVAL: i32 = 22;
const ENOTEMPTY: i32 = 39;

fn os(errno: i32) -> io::Error {
    io::Error::from_raw_os_error(errno)
}

fn read(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap_or_default()
        .trim_end()
        .to_owned()
}

fn is_empty_dir(dir: &Path) -> bool {
    fs::read_dir(dir)
        .map(|mut d| d.next().is_none())
        .unwrap_or(true)
}

/// A fake nvmet configfs rooted at `root` (the `nvmet` directory).
#[derive(Debug)]
pub(crate) struct FakeConfigFs {
    root: PathBuf,
    /// Attribute file names whose writes fail, with the errno.
    failing: RefCell<Vec<(String, i32)>>,
}

impl FakeConfigFs {
    pub(crate) fn new(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
            failing: RefCell::new(Vec::new()),
        }
    }

    /// Makes every write to an attribute called `name` fail with `errno`.
    pub(crate) fn fail_writes_to(&self, name: &str, errno: i32) {
        self.failing.borrow_mut().push((name.to_owned(), errno));
    }

    fn rel<'a>(&self, path: &'a Path) -> Vec<&'a str> {
        path.strip_prefix(&self.root)
            .map(|r| r.iter().filter_map(|c| c.to_str()).collect())
            .unwrap_or_default()
    }

    /// The attribute files and default groups the kernel makes for a new item.
    fn populate(&self, path: &Path) -> io::Result<()> {
        let (files, dirs): (&[(&str, &str)], &[&str]) = match self.rel(path).as_slice() {
            ["subsystems", _] => (
                &[
                    ("attr_allow_any_host", "0"),
                    ("attr_serial", "5c0e2b1a9d3f4e67"),
                    ("attr_model", "Linux"),
                    ("attr_version", "1.3"),
                ],
                &["namespaces", "allowed_hosts"],
            ),
            ["subsystems", _, "namespaces", _] => (
                &[
                    ("device_path", "(null)"),
                    ("device_uuid", "3f6bd3e2-4b1e-4a4f-9d7c-0c9a8e1f2d3b"),
                    ("enable", "0"),
                ],
                &[],
            ),
            ["ports", _] => (
                &[
                    ("addr_trtype", ""),
                    ("addr_adrfam", ""),
                    ("addr_traddr", ""),
                    ("addr_trsvcid", ""),
                ],
                &["subsystems", "referrals"],
            ),
            ["hosts", _] => (&[("dhchap_key", "")], &[]),
            _ => return Err(os(EPERM)),
        };
        for (name, value) in files {
            fs::write(path.join(name), format!("{value}\n"))?;
        }
        for name in dirs {
            fs::create_dir(path.join(name))?;
        }
        Ok(())
    }

    fn check_write(&self, path: &Path, value: &str) -> io::Result<()> {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some((_, errno)) = self.failing.borrow().iter().find(|(n, _)| n == name) {
            return Err(os(*errno));
        }
        let dir = path.parent().unwrap_or(path);
        match name {
            "device_path" | "device_uuid" if read(&dir.join("enable")) == "1" => Err(os(EBUSY)),
            "enable" if value == "1" => {
                let device = read(&dir.join("device_path"));
                if device == "(null)" || !Path::new(&device).exists() {
                    Err(os(ENOENT))
                } else {
                    Ok(())
                }
            }
            n if n.starts_with("addr_") && !is_empty_dir(&dir.join("subsystems")) => {
                Err(os(EACCES))
            }
            "attr_allow_any_host" if value == "1" && !is_empty_dir(&dir.join("allowed_hosts")) => {
                Err(os(EINVAL))
            }
            _ => Ok(()),
        }
    }
}

impl ConfigFs for FakeConfigFs {
    fn mkdir(&self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)?;
        self.populate(path).inspect_err(|_| {
            let _ = fs::remove_dir_all(path);
        })
    }

    /// configfs drops attributes with the item but refuses while links or user-made
    /// children remain; checked before anything is removed, as the kernel does.
    fn rmdir(&self, path: &Path) -> io::Result<()> {
        let mut files = Vec::new();
        let mut groups = Vec::new();
        for entry in fs::read_dir(path)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_symlink() || (kind.is_dir() && !is_empty_dir(&entry.path())) {
                return Err(os(ENOTEMPTY));
            }
            if kind.is_dir() {
                groups.push(entry.path());
            } else {
                files.push(entry.path());
            }
        }
        files.iter().try_for_each(fs::remove_file)?;
        groups.iter().try_for_each(fs::remove_dir)?;
        fs::remove_dir(path)
    }

    fn write_attr(&self, path: &Path, value: &str) -> io::Result<()> {
        if !path.is_file() {
            return Err(os(ENOENT));
        }
        self.check_write(path, value)?;
        fs::write(path, format!("{value}\n"))
    }

    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        let group = link.parent().unwrap_or(link);
        if group.ends_with("allowed_hosts") {
            let subsystem = group.parent().unwrap_or(group);
            if read(&subsystem.join("attr_allow_any_host")) == "1" {
                return Err(os(EINVAL));
            }
        }
        std::os::unix::fs::symlink(target, link)
    }
}

/// A fake `/dev/nvme-fabrics` that records what was written and answers `reply`.
#[derive(Debug)]
pub(crate) struct FakeFabricsDevice {
    pub(crate) written: RefCell<Vec<String>>,
    pub(crate) reply: String,
}

impl FakeFabricsDevice {
    pub(crate) fn replying(reply: &str) -> Self {
        Self {
            written: RefCell::new(Vec::new()),
            reply: reply.to_owned(),
        }
    }
}

impl FabricsDevice for FakeFabricsDevice {
    fn exchange(&self, _device: &Path, options: &str) -> io::Result<String> {
        self.written.borrow_mut().push(options.to_owned());
        Ok(self.reply.clone())
    }
}

/// Writes `files` (relative path, content) below `root`, creating directories.
pub(crate) fn write_tree(root: &Path, files: &[(&str, &str)]) {
    for (rel, content) in files {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("create fixture dir");
        }
        fs::write(&path, content).expect("write fixture file");
    }
}

/// Every path below `root` with its content (files), target (links) or nothing (dirs).
pub(crate) fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let meta = fs::symlink_metadata(&path).expect("metadata");
            let value = if meta.is_symlink() {
                format!("-> {}", fs::read_link(&path).expect("link").display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "<dir>".to_owned()
            } else {
                fs::read_to_string(&path).expect("file")
            };
            out.insert(
                path.strip_prefix(root).expect("below root").to_owned(),
                value,
            );
        }
    }
    out
}
