//! The read loop: O_DIRECT, aligned buffers, `iodepth` reads in flight through io_uring.

use std::alloc::{self, Layout};
use std::fs::File;
use std::io::{self, Seek as _, SeekFrom};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::os::unix::io::AsRawFd as _;
use std::path::Path;
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring};

use super::error::{LoopError, ReadError};
use super::histogram::Histogram;

/// How much to read.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    /// This many bytes (rounded down to whole blocks), wrapping at the end.
    Bytes(u64),
    /// For this long, wrapping at the end.
    Time(Duration),
}

/// The part of a file the reads cover: its first `size` bytes, in whole blocks, the first
/// read at `start` (rounded down to a block) and wrapping at the end. A proof's trials start
/// each where the last ended, so none re-reads what another just read.
#[derive(Debug, Clone, Copy)]
pub struct Extent {
    /// The file's size in bytes.
    pub size: u64,
    /// Where the first read goes.
    pub start: u64,
}

/// Direct-I/O alignment of an open file and where it came from.
#[derive(Debug, Clone, Copy)]
pub struct Alignment {
    /// Buffer address alignment in bytes.
    pub memory: u64,
    /// File offset and length alignment in bytes.
    pub offset: u64,
    /// Where the numbers came from, for a note when it was not statx.
    pub source: &'static str,
}

/// Opens `path` read-only with O_DIRECT; never for writing.
pub fn open_direct(path: &Path) -> Result<File, ReadError> {
    let meta = std::fs::metadata(path).map_err(|source| ReadError::Stat {
        path: path.to_owned(),
        source,
    })?;
    if !meta.is_file() && !meta.file_type().is_block_device() {
        return Err(ReadError::NotFileOrDevice {
            path: path.to_owned(),
        });
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|source| {
            let path = path.to_owned();
            if source.raw_os_error() == Some(libc::EINVAL) {
                ReadError::NoDirectIo { path, source }
            } else {
                ReadError::Open { path, source }
            }
        })
}

/// The size in bytes of a regular file or block device.
pub fn size_of(file: &mut File, path: &Path) -> Result<u64, ReadError> {
    let meta = file.metadata().map_err(|source| ReadError::Stat {
        path: path.to_owned(),
        source,
    })?;
    if meta.file_type().is_block_device() {
        file.seek(SeekFrom::End(0))
            .map_err(|source| ReadError::Size {
                path: path.to_owned(),
                source,
            })
    } else if meta.is_file() {
        Ok(meta.len())
    } else {
        Err(ReadError::NotFileOrDevice {
            path: path.to_owned(),
        })
    }
}

/// Asks statx for STATX_DIOALIGN; falls back to the logical block size of a block device
/// (BLKSSZGET) or 512.
pub fn dio_alignment(file: &File) -> Alignment {
    let fd = file.as_raw_fd();
    // SAFETY: statx is plain data; all-zero is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open for the call; the empty path with AT_EMPTY_PATH means the fd
    // itself; stx is a valid, writable statx buffer.
    let rc = unsafe {
        libc::statx(
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc == 0 && stx.stx_mask & libc::STATX_DIOALIGN != 0 && stx.stx_dio_offset_align != 0 {
        return Alignment {
            memory: u64::from(stx.stx_dio_mem_align).max(1),
            offset: u64::from(stx.stx_dio_offset_align),
            source: "statx",
        };
    }
    let is_block = file
        .metadata()
        .is_ok_and(|m| m.file_type().is_block_device());
    if is_block {
        let mut sector: libc::c_int = 0;
        // SAFETY: BLKSSZGET writes one c_int through the pointer, which is valid.
        let rc = unsafe { libc::ioctl(fd, libc::BLKSSZGET, &mut sector) };
        if rc == 0 && sector > 0 {
            let sector = u64::from(sector.unsigned_abs());
            return Alignment {
                memory: sector,
                offset: sector,
                source: "the logical block size (BLKSSZGET)",
            };
        }
    }
    Alignment {
        memory: 512,
        offset: 512,
        source: "a 512-byte default",
    }
}

/// A zeroed heap buffer with a given alignment, freed on drop.
struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

impl AlignedBuf {
    fn new(len: usize, align: usize) -> Result<Self, LoopError> {
        let layout =
            Layout::from_size_align(len, align).map_err(|source| LoopError::BufferLayout {
                len: len as u64,
                align: align as u64,
                source,
            })?;
        // SAFETY: len is non-zero (bs >= 512) so the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(LoopError::Allocation { len: len as u64 });
        }
        Ok(Self { ptr, layout })
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: ptr came from alloc_zeroed with this layout and is freed once.
        unsafe { alloc::dealloc(self.ptr, self.layout) }
    }
}

/// One in-flight read.
#[derive(Debug, Clone, Copy)]
struct Slot {
    offset: u64,
    started: Instant,
}

/// What the loop measured.
#[derive(Debug)]
pub struct Measured {
    /// Bytes read.
    pub io_bytes: u64,
    /// Reads completed.
    pub total_ios: u64,
    /// First submission to last completion.
    pub runtime: Duration,
    /// Per-read completion latency.
    pub clat: Histogram,
}

/// A ring with completions run in the submitting task (as fio 3.33+ sets up its own):
/// fewer interrupts of the reading thread. Kernels before 6.1 refuse the flags; then a
/// plain ring.
fn new_ring(entries: u32) -> Result<IoUring, LoopError> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
        .or_else(|_| IoUring::new(entries))
        .map_err(LoopError::Ring)
}

/// Reads `extent` of `file` sequentially in `bs` blocks, `iodepth` in flight, wrapping at
/// the end, until `limit`; `progress` gets the bytes read so far.
pub fn read_loop(
    file: &File,
    extent: Extent,
    bs: u64,
    iodepth: u32,
    align: Alignment,
    limit: Limit,
    mut progress: impl FnMut(u64),
) -> Result<Measured, LoopError> {
    let blocks = extent.size / bs;
    if blocks == 0 {
        return Err(LoopError::NoWholeBlock { block_size: bs });
    }
    let first_block = extent.start / bs;
    let len = u32::try_from(bs).map_err(|_| LoopError::BlockTooLarge { block_size: bs })?;
    // A u64 alignment a usize cannot hold has no layout either.
    let buf_align = usize::try_from(align.memory.max(4096)).unwrap_or(usize::MAX);
    let depth = iodepth as usize;
    let buffers = (0..depth)
        .map(|_| AlignedBuf::new(len as usize, buf_align))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ring = new_ring(iodepth.next_power_of_two())?;
    // Registered buffers: the kernel pins their pages once instead of on every read (256
    // pages per 1 MiB read). Where registration is refused (RLIMIT_MEMLOCK), plain reads.
    let iovecs: Vec<libc::iovec> = buffers
        .iter()
        .map(|b| libc::iovec {
            iov_base: b.ptr.cast(),
            iov_len: len as usize,
        })
        .collect();
    // SAFETY: the buffers outlive the ring's use of them: they are freed after the loop,
    // when every read has completed (or leaked on a ring failure, see below).
    let fixed = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
    let fd = types::Fd(file.as_raw_fd());
    let mut slots: Vec<Option<Slot>> = vec![None; depth];
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let (max_ios, deadline) = match limit {
        Limit::Bytes(bytes) => (bytes / bs, None),
        Limit::Time(time) => (u64::MAX, Some(time)),
    };
    let mut clat = Histogram::default();
    let (mut issued, mut done, mut inflight) = (0u64, 0u64, 0usize);
    let start = Instant::now();
    let mut stop = false;
    let mut failure: Option<LoopError> = None;
    loop {
        while !stop && issued < max_ios {
            let Some(index) = free.pop() else { break };
            let offset = ((first_block + issued) % blocks) * bs;
            let entry = if fixed {
                // Buffer `index` is registered at `index`.
                opcode::ReadFixed::new(fd, buffers[index].ptr, len, index as u16)
                    .offset(offset)
                    .build()
            } else {
                opcode::Read::new(fd, buffers[index].ptr, len)
                    .offset(offset)
                    .build()
            }
            .user_data(index as u64);
            slots[index] = Some(Slot {
                offset,
                started: Instant::now(),
            });
            // SAFETY: the buffer stays allocated and untouched until this read completes:
            // its slot is reused only after the completion, every read is drained before
            // returning, and on a ring failure the buffers are leaked, never freed.
            if unsafe { ring.submission().push(&entry) }.is_err() {
                free.push(index);
                slots[index] = None;
                break;
            }
            issued += 1;
            inflight += 1;
        }
        if inflight == 0 {
            break;
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // Reads may still be in flight into these buffers: never free them.
                std::mem::forget(buffers);
                return Err(LoopError::Submit(e));
            }
        }
        let now = Instant::now();
        for cqe in ring.completion() {
            let index = usize::try_from(cqe.user_data()).unwrap_or(usize::MAX);
            let Some(slot) = slots.get_mut(index).and_then(Option::take) else {
                continue; // Not ours; cannot happen with this ring.
            };
            inflight -= 1;
            free.push(index);
            let res = cqe.result();
            if res < 0 || u64::from(res.unsigned_abs()) != bs {
                // Stop issuing, let the rest complete, then report the first failure.
                stop = true;
                if failure.is_none() {
                    failure = Some(if res < 0 {
                        LoopError::Failed {
                            offset: slot.offset,
                            block_size: bs,
                            source: io::Error::from_raw_os_error(-res),
                        }
                    } else {
                        LoopError::Short {
                            offset: slot.offset,
                            got: u64::from(res.unsigned_abs()),
                            block_size: bs,
                        }
                    });
                }
                continue;
            }
            let nanos = now.duration_since(slot.started).as_nanos();
            clat.record(u64::try_from(nanos).unwrap_or(u64::MAX));
            done += 1;
        }
        progress(done * bs);
        if let Some(deadline) = deadline {
            stop = stop || start.elapsed() >= deadline;
        }
    }
    if let Some(failure) = failure {
        return Err(failure);
    }
    Ok(Measured {
        io_bytes: done * bs,
        total_ios: done,
        runtime: start.elapsed(),
        clat,
    })
}
