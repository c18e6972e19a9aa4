//! Walking a dump with one reused record (`DumpParser::next_into`) allocates nothing per
//! flow: counted by this test binary's allocator, per thread, so the other tests running
//! beside it do not count. The allocating iterator over the same dump is the negative
//! control: it must count at least one allocation per flow, or the counter counts nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use dpu_ovs::flow::{parse_dump, DatapathFlow};

/// The system allocator, counting the allocations of each thread.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is passed on to the system allocator unchanged; the count is a
// thread-local `Cell` with a const initializer, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// The corpus dumps, one after the other: kernel tc with `-m`, terse, `--names`, and
/// OVS-DOCA with PMD headers.
fn corpus() -> String {
    [
        include_str!("data/dump-flows-m-kernel-tc.txt"),
        include_str!("data/dump-flows-terse.txt"),
        include_str!("data/dump-flows-names.txt"),
        include_str!("data/dump-flows-m-doca-pmd.txt"),
    ]
    .concat()
}

/// Parses every flow of `dump` into `record`; the number of flows and their packets.
fn walk<'a>(dump: &'a str, record: &mut DatapathFlow<'a>) -> (usize, u64) {
    let mut parser = parse_dump(dump);
    let (mut flows, mut packets) = (0, 0);
    while let Some(parsed) = parser.next_into(record) {
        if let Err(e) = parsed {
            panic!("{e}");
        }
        flows += 1;
        packets += record.packets;
    }
    (flows, packets)
}

#[test]
fn a_reused_record_allocates_nothing_per_flow() {
    let dump = corpus().repeat(20);
    let mut record = DatapathFlow::default();
    // The first pass sizes the record's lists (and the parser's scratch) to the longest line.
    let first = walk(&dump, &mut record);
    assert!(first.0 >= 20 * 20, "{first:?}");
    let before = allocations();
    let second = walk(&dump, &mut record);
    let during = allocations() - before;
    assert_eq!(second, first);
    // The parser's own scratch list is allocated once per dump, as it grows to the
    // longest line: a few allocations per pass, never one per flow.
    assert!(
        during <= 8,
        "{during} allocations for {} flows with a warm record",
        second.0
    );

    // Negative control: the iterator gives each flow its own key and action lists.
    let before = allocations();
    let kept: Vec<_> = parse_dump(&dump).collect::<Result<_, _>>().expect("parses");
    let during = allocations() - before;
    assert_eq!(kept.len(), first.0);
    assert!(
        during >= 2 * kept.len(),
        "{during} allocations for {} flows",
        kept.len()
    );
}
