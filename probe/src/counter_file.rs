//! Fast reads of directories of small counter files, kept between snapshots.
//!
//! A snapshot reads thousands of these, and every microsecond per file is skew. A
//! [`KeptDir`] lists its directory once, keeps a descriptor per counter file, and reads
//! each again with one `pread` at offset 0 (sysfs regenerates an attribute on every read
//! from offset 0) into a stack buffer: no path walk, no size probe, no heap string. Before
//! each snapshot it checks the directory with one `stat`; the listing and the descriptors
//! are thrown away when the directory was replaced (device, inode) or its entries changed
//! (modification time), so a counter file added, removed or renamed over is seen at the
//! next snapshot, whether the tree is sysfs or a fixture.
//!
//! A directory changed within [`RACY_WINDOW`] of its listing could change again with the
//! same timestamp (the kernel stamps inodes from a clock that ticks once per jiffy), so
//! such a listing is not trusted: the next snapshot lists and reopens again, until the
//! directory has been quiet for that long. This is git's "racily clean" rule. sysfs
//! directories never change while they exist; a port that goes away makes its kept
//! descriptors fail (`ENODEV`), and its re-creation is a new inode.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io;
use std::os::fd::AsFd as _;
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;

use crate::ProbeError;

/// Longest counter file content accepted; sysfs counters are one decimal line.
const MAX_COUNTER_TEXT: usize = 64;

/// How recently before its listing a directory may have changed for the listing to be
/// trusted: well above one jiffy at the slowest kernel tick (10 ms at `HZ=100`), which is
/// the granularity of inode timestamps.
const RACY_WINDOW: Duration = Duration::from_millis(50);

/// Most counter files this process keeps open across every sampler, whatever the limit.
const MAX_KEPT_FILES: u64 = 16_384;

/// How many counter file descriptors samplers may keep open in this process: see
/// [`kept_file_budget_for`] with the soft `RLIMIT_NOFILE` read once. The agent raises its
/// soft limit to the hard one at start, before any sampler exists (see `dpu-agent`'s
/// `main`).
pub fn kept_file_budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_or(1024, |(soft, _hard)| soft);
        kept_file_budget_for(soft)
    })
}

/// The kept-file budget under a descriptor limit of `fd_limit`: a quarter of it (the
/// rest is for sockets, connections and everything else; the agent leaves this share out
/// of its connection budgets), at most `MAX_KEPT_FILES` (16,384). Files beyond the budget are
/// still read, by opening them each snapshot.
pub fn kept_file_budget_for(fd_limit: u64) -> usize {
    usize::try_from((fd_limit / 4).min(MAX_KEPT_FILES)).unwrap_or(0)
}

/// What identifies a directory's state: which inode it is, and when its entries last
/// changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirStamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
}

impl DirStamp {
    fn of(metadata: &fs::Metadata) -> Self {
        Self {
            dev: metadata.dev(),
            ino: metadata.ino(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
        }
    }
}

/// One counter file of a listing, with its descriptor when it is kept and what the last
/// [`KeptDir::read_all`] got from it.
#[derive(Debug)]
struct KeptFile {
    name: Cow<'static, str>,
    file: Option<KeptFd>,
    text: [u8; MAX_COUNTER_TEXT],
    /// Bytes read into `text`, or the read's error; `None` before the first read.
    outcome: Option<io::Result<usize>>,
}

impl KeptFile {
    fn listed(name: Cow<'static, str>) -> Self {
        Self {
            name,
            file: None,
            text: [0; MAX_COUNTER_TEXT],
            outcome: None,
        }
    }
}

/// Counter file descriptors kept open in this process, by every sampler.
static KEPT_FILES: AtomicUsize = AtomicUsize::new(0);

/// A counter file's descriptor, counted against [`kept_file_budget`] while it is kept, so
/// every sampler of the process together (a `Watch`, the metrics scraper, pooled
/// `Counters.Snapshot` samplers) stays within the budget.
#[derive(Debug)]
struct KeptFd(File);

impl KeptFd {
    /// Keeps `file` if the budget has room; gives it back otherwise.
    fn keep(file: File) -> Result<Self, File> {
        let budget = kept_file_budget();
        match KEPT_FILES.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            (n < budget).then_some(n + 1)
        }) {
            Ok(_) => Ok(Self(file)),
            Err(_) => Err(file),
        }
    }
}

impl Drop for KeptFd {
    fn drop(&mut self) {
        KEPT_FILES.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Most distinct counter names kept for the life of the process by [`intern`].
const MAX_INTERNED_NAMES: usize = 4096;

/// The counter name as a `'static` string when it is one of the first
/// [`MAX_INTERNED_NAMES`] distinct names this process has listed, so that the samples of
/// every snapshot borrow it instead of allocating a copy each (a representor-heavy DPU
/// has a few hundred distinct names across thousands of files). Names beyond the bound
/// (a hostile or generated tree) are owned, so memory stays bounded.
fn intern(name: String) -> Cow<'static, str> {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(known) = names.get(name.as_str()) {
        return Cow::Borrowed(known);
    }
    if names.len() >= MAX_INTERNED_NAMES {
        return Cow::Owned(name);
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.insert(leaked);
    Cow::Borrowed(leaked)
}

/// Opens counter files without updating their access time (`O_NOATIME`) until the kernel
/// refuses it: reading counters should not write inode metadata of an inspected image or
/// fixture (sysfs keeps no access times), and skipping the update is a tenth of a read's
/// cost there. Only the file's owner or a process with `CAP_FOWNER` may ask for it.
static NOATIME_REFUSED: AtomicBool = AtomicBool::new(false);

fn open_counter(dir: &File, name: &str) -> io::Result<File> {
    let flags = OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    if !NOATIME_REFUSED.load(Ordering::Relaxed) {
        match openat(dir.as_fd(), name, flags | OFlag::O_NOATIME, Mode::empty()) {
            Ok(fd) => return Ok(File::from(fd)),
            Err(nix::errno::Errno::EPERM) => NOATIME_REFUSED.store(true, Ordering::Relaxed),
            Err(e) => return Err(e.into()),
        }
    }
    let fd = openat(dir.as_fd(), name, flags, Mode::empty()).map_err(io::Error::from)?;
    Ok(File::from(fd))
}

/// A listing of a directory and the descriptors kept for it.
#[derive(Debug)]
struct Listing {
    dir: File,
    stamp: DirStamp,
    /// The directory had been quiet for [`RACY_WINDOW`] when it was listed.
    trusted: bool,
    files: Vec<KeptFile>,
}

/// A directory of counter files kept between snapshots; see the module documentation.
#[derive(Debug)]
pub(crate) struct KeptDir {
    path: PathBuf,
    listing: Option<Listing>,
}

impl KeptDir {
    /// A directory not yet listed; nothing is opened until [`KeptDir::refresh`].
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            listing: None,
        }
    }

    /// Brings the listing up to date for a snapshot: one `stat` when nothing changed;
    /// otherwise the directory is opened and listed again and every kept descriptor is
    /// closed. `Ok(false)` when the directory does not exist (a device without
    /// `hw_counters/`).
    pub(crate) fn refresh(&mut self) -> Result<bool, ProbeError> {
        let metadata = match fs::metadata(&self.path) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.listing = None;
                return Ok(false);
            }
            Err(e) => return Err(ProbeError::read(&self.path, e)),
        };
        let stamp = DirStamp::of(&metadata);
        if let Some(listing) = &mut self.listing {
            if listing.trusted && listing.stamp == stamp {
                return Ok(true);
            }
        }
        self.listing = None;
        let dir = match File::open(&self.path) {
            Ok(dir) => dir,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(ProbeError::read(&self.path, e)),
        };
        // The stamp of the descriptor listed, not of the path stat above: if the directory
        // was replaced in between, the next refresh sees a different inode.
        let metadata = dir
            .metadata()
            .map_err(|e| ProbeError::read(&self.path, e))?;
        let stamp = DirStamp::of(&metadata);
        let listed_at = SystemTime::now();
        let files = list_files(&self.path)?
            .into_iter()
            .map(|name| KeptFile::listed(intern(name)))
            .collect();
        let trusted = metadata
            .modified()
            .ok()
            .and_then(|modified| listed_at.duration_since(modified).ok())
            .is_some_and(|quiet| quiet > RACY_WINDOW);
        self.listing = Some(Listing {
            dir,
            stamp,
            trusted,
            files,
        });
        Ok(true)
    }

    /// The counter file names of the listing, sorted; empty before a successful
    /// [`KeptDir::refresh`].
    pub(crate) fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.listing
            .as_ref()
            .map_or(&[][..], |l| &l.files[..])
            .iter()
            .map(|f| &*f.name)
    }

    /// How many files the listing has.
    pub(crate) fn len(&self) -> usize {
        self.listing.as_ref().map_or(0, |l| l.files.len())
    }

    /// The `index`-th listed name; empty past the end.
    pub(crate) fn name(&self, index: usize) -> &str {
        self.listing
            .as_ref()
            .and_then(|l| l.files.get(index))
            .map_or("", |f| &*f.name)
    }

    /// The `index`-th listed name as a sample's counter name: borrowed from the
    /// process's interned names when it is one (see [`intern`]).
    pub(crate) fn counter_name(&self, index: usize) -> Cow<'static, str> {
        self.listing
            .as_ref()
            .and_then(|l| l.files.get(index))
            .map_or(Cow::Borrowed(""), |f| f.name.clone())
    }

    /// Opens a descriptor for every listed file that has none, while the process's budget
    /// has room: the work a snapshot does before its read window, so the window holds
    /// only `pread`s. A file that does not open is left for [`KeptDir::read_all`], which
    /// records why.
    pub(crate) fn open_all(&mut self) {
        let Some(listing) = &mut self.listing else {
            return;
        };
        for entry in listing.files.iter_mut().filter(|f| f.file.is_none()) {
            let Ok(file) = open_counter(&listing.dir, &entry.name) else {
                continue;
            };
            match KeptFd::keep(file) {
                Ok(kept) => entry.file = Some(kept),
                // The budget is spent: the rest are opened in the window.
                Err(_) => return,
            }
        }
    }

    /// Reads every listed file back to back into its own buffer: one `pread` at offset 0
    /// per kept descriptor (sysfs regenerates an attribute on every read from offset 0),
    /// an open and a read for a file beyond the budget. Nothing is parsed here: this is
    /// the snapshot's read window. [`KeptDir::text`] gives each result afterwards.
    pub(crate) fn read_all(&mut self) {
        let Some(listing) = &mut self.listing else {
            return;
        };
        for entry in &mut listing.files {
            if let Some(KeptFd(file)) = &entry.file {
                match file.read_at(&mut entry.text[..], 0) {
                    Ok(len) => {
                        entry.outcome = Some(Ok(len));
                        continue;
                    }
                    // The device went away (ENODEV): open again below, which tells
                    // whether the file is still there.
                    Err(_) => entry.file = None,
                }
            }
            let read = open_counter(&listing.dir, &entry.name).and_then(|file| {
                let len = file.read_at(&mut entry.text[..], 0)?;
                entry.file = KeptFd::keep(file).ok();
                Ok(len)
            });
            entry.outcome = Some(read);
        }
        // After the read window, once per directory: a capture sees every value read.
        if crate::capture::is_active() {
            for entry in &listing.files {
                let path = self.path.join(&*entry.name);
                match &entry.outcome {
                    Some(Ok(len)) => crate::capture::note_read(&path, Ok(&entry.text[..*len])),
                    Some(Err(e)) => crate::capture::note_read(&path, Err(e)),
                    None => {}
                }
            }
        }
    }

    /// The `index`-th listed file's content from the last [`KeptDir::read_all`], trimmed
    /// of the trailing newline and NULs. Errors are the raw I/O error so callers can tell
    /// "not available here" (EINVAL, EOPNOTSUPP, a file gone since the listing) from a
    /// fault.
    pub(crate) fn text(&self, index: usize) -> io::Result<&str> {
        let Some(listing) = &self.listing else {
            return Err(io::Error::other("the directory was not listed"));
        };
        let Some(entry) = listing.files.get(index) else {
            return Err(io::Error::other("no such entry in the listing"));
        };
        match &entry.outcome {
            None => Err(io::Error::other("the file was not read")),
            Some(Err(e)) => Err(copy_error(e)),
            Some(Ok(len)) => finish_text(&entry.text, *len),
        }
    }

    /// Whether the directory was there at the last [`KeptDir::refresh`].
    pub(crate) fn is_listed(&self) -> bool {
        self.listing.is_some()
    }

    /// How many descriptors are kept for this directory's files.
    #[cfg(test)]
    pub(crate) fn open_files(&self) -> usize {
        self.listing
            .as_ref()
            .map_or(0, |l| l.files.iter().filter(|f| f.file.is_some()).count())
    }

    /// The full path of a file in this directory, for error messages.
    pub(crate) fn file_path(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

/// Regular files of `path`, sorted so output is stable. sysfs reports `DT_REG` in
/// `readdir`; symlinks (fixture trees) and filesystems that report `DT_UNKNOWN` fall back
/// to a `stat` that follows the link. Other entries (directories, sockets, FIFOs) are not
/// counters and are left out.
fn list_files(path: &Path) -> Result<Vec<String>, ProbeError> {
    let entries = fs::read_dir(path).map_err(|e| ProbeError::read(path, e))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| ProbeError::read(path, e))?;
        let is_file = match entry.file_type() {
            Ok(t) if t.is_file() => true,
            Ok(t) if t.is_dir() => false,
            _ => entry.path().is_file(),
        };
        if is_file {
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
    }
    names.sort_unstable();
    if crate::capture::is_active() {
        crate::capture::note_listing(path, Ok(&names));
    }
    Ok(names)
}

/// A second `io::Error` like `e`: the same OS error code, or the same kind and message
/// (`io::Error` is not `Clone`, and a stored read result is handed out on every parse).
fn copy_error(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

fn finish_text(buf: &[u8; MAX_COUNTER_TEXT], len: usize) -> io::Result<&str> {
    if len == buf.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("longer than {MAX_COUNTER_TEXT} bytes"),
        ));
    }
    let text = std::str::from_utf8(&buf[..len])
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok(text.trim_end_matches(['\n', '\0']).trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(dir: &mut KeptDir, name: &str) -> io::Result<String> {
        let index = dir
            .names()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        dir.read_all();
        dir.text(index).map(str::to_owned)
    }

    /// Backdates a directory so its listing is trusted, as a quiet sysfs directory is.
    fn settle(path: &Path) {
        let old = SystemTime::now() - Duration::from_secs(10);
        File::open(path)
            .and_then(|d| d.set_modified(old))
            .expect("backdate");
    }

    #[test]
    fn lists_only_files_and_reads_trimmed_text() {
        let tmp = tempfile::tempdir().expect("tempdir");
        fs::write(tmp.path().join("b"), "42\n").expect("write");
        fs::write(tmp.path().join("a"), "7\0\n").expect("write");
        fs::create_dir(tmp.path().join("sub")).expect("mkdir");
        let mut dir = KeptDir::new(tmp.path().to_owned());
        assert!(dir.refresh().expect("refresh"));
        assert_eq!(dir.names().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(read(&mut dir, "b").expect("read"), "42");
        assert_eq!(read(&mut dir, "a").expect("read"), "7");
    }

    #[test]
    fn absent_directory_is_false_and_oversized_content_is_an_error() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut absent = KeptDir::new(tmp.path().join("nope"));
        assert!(!absent.refresh().expect("ok"));
        assert_eq!(absent.names().len(), 0);
        fs::write(tmp.path().join("big"), "9".repeat(100)).expect("write");
        let mut dir = KeptDir::new(tmp.path().to_owned());
        dir.refresh().expect("refresh");
        let err = read(&mut dir, "big").expect_err("too long");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn kept_descriptors_see_in_place_updates() {
        let tmp = tempfile::tempdir().expect("tempdir");
        for name in ["a", "b", "c"] {
            fs::write(tmp.path().join(name), "1\n").expect("write");
        }
        settle(tmp.path());
        let mut dir = KeptDir::new(tmp.path().to_owned());
        dir.refresh().expect("refresh");
        for name in ["a", "b", "c"] {
            assert_eq!(read(&mut dir, name).expect("read"), "1");
        }
        assert_eq!(dir.open_files(), 3);

        // sysfs and fixtures rewrite in place: the kept descriptor sees the new value,
        // and the settled directory is not listed again.
        fs::write(tmp.path().join("a"), "42\n").expect("rewrite");
        dir.refresh().expect("refresh");
        assert_eq!(dir.open_files(), 3, "listing kept");
        assert_eq!(read(&mut dir, "a").expect("read"), "42");
    }

    #[test]
    fn kept_descriptors_are_counted_and_given_back() {
        let tmp = tempfile::tempdir().expect("tempdir");
        fs::write(tmp.path().join("a"), "1\n").expect("write");
        let file = File::open(tmp.path().join("a")).expect("open");
        let kept = KeptFd::keep(file).expect("room in the budget");
        let counted = KEPT_FILES.load(Ordering::Relaxed);
        assert!(counted >= 1);
        drop(kept);
        // Other tests run in parallel and keep files too: only bounds can be asserted.
        assert!(KEPT_FILES.load(Ordering::Relaxed) <= kept_file_budget());
    }

    #[test]
    fn a_file_removed_added_or_renamed_over_is_seen_at_the_next_refresh() {
        let tmp = tempfile::tempdir().expect("tempdir");
        for name in ["a", "b"] {
            fs::write(tmp.path().join(name), "1\n").expect("write");
        }
        settle(tmp.path());
        let mut dir = KeptDir::new(tmp.path().to_owned());
        dir.refresh().expect("refresh");
        read(&mut dir, "a").expect("read");
        read(&mut dir, "b").expect("read");

        // Renamed over: a new inode the old descriptor would never see.
        fs::write(tmp.path().join("a.new"), "2\n").expect("write");
        fs::rename(tmp.path().join("a.new"), tmp.path().join("a")).expect("rename");
        fs::remove_file(tmp.path().join("b")).expect("remove");
        fs::write(tmp.path().join("c"), "3\n").expect("write");
        dir.refresh().expect("refresh");
        assert_eq!(dir.names().collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(read(&mut dir, "a").expect("read"), "2");
        assert_eq!(read(&mut dir, "c").expect("read"), "3");
    }

    #[test]
    fn a_listing_made_right_after_a_change_is_made_again_even_with_the_same_stamp() {
        let tmp = tempfile::tempdir().expect("tempdir");
        fs::write(tmp.path().join("a"), "1\n").expect("write");
        let mut dir = KeptDir::new(tmp.path().to_owned());
        dir.refresh().expect("refresh");
        assert_eq!(read(&mut dir, "a").expect("read"), "1");
        // Renamed over, then the directory's time set back to what it was: as if both
        // changes fell in one timestamp tick.
        let before = fs::metadata(tmp.path())
            .and_then(|m| m.modified())
            .expect("mtime");
        fs::write(tmp.path().join("a.new"), "2\n").expect("write");
        fs::rename(tmp.path().join("a.new"), tmp.path().join("a")).expect("rename");
        File::open(tmp.path())
            .and_then(|d| d.set_modified(before))
            .expect("restore mtime");
        dir.refresh().expect("refresh");
        assert_eq!(
            read(&mut dir, "a").expect("read"),
            "2",
            "the racy listing was not trusted"
        );
    }

    #[test]
    fn a_vanished_file_is_an_error_not_a_stale_value_before_the_next_listing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        fs::write(tmp.path().join("a"), "1\n").expect("write");
        let mut dir = KeptDir::new(tmp.path().to_owned());
        dir.refresh().expect("refresh");
        fs::remove_file(tmp.path().join("a")).expect("remove");
        let err = read(&mut dir, "a").expect_err("gone");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn names_are_interned_up_to_a_bound() {
        let a = intern("port_rcv_data".to_owned());
        let b = intern("port_rcv_data".to_owned());
        match (&a, &b) {
            (Cow::Borrowed(a), Cow::Borrowed(b)) => assert!(std::ptr::eq(*a, *b), "one copy"),
            other => panic!("not interned: {other:?}"),
        }
    }

    #[test]
    fn the_budget_is_a_quarter_of_the_descriptor_limit_and_bounded() {
        let budget = kept_file_budget();
        let (soft, _) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .expect("getrlimit");
        assert_eq!(budget, kept_file_budget_for(soft));
        assert_eq!(kept_file_budget_for(128), 32);
        assert_eq!(kept_file_budget_for(1 << 20), 16_384, "bounded");
    }
}
