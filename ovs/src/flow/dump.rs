//! A whole `dpctl/dump-flows` output: flow lines, blank lines, and the userspace
//! datapath's per-thread headers, which give the following flows their PMD thread.

use super::error::FlowParseError;
use super::line::{parse_line, parse_line_into, DatapathFlow};
use super::scan::Item;
use super::stats::FlowThread;

/// Iterates over the flows of a dump, one `Result` per flow line.
///
/// Blank lines are skipped; `flow-dump from the main thread:` and
/// `flow-dump from pmd on cpu core: N` set [`DatapathFlow::thread`] for the flows after
/// them. A malformed line yields an error (with its line number) and the iteration goes
/// on, so a caller can choose between failing the whole dump and skipping one line.
#[derive(Debug, Clone)]
pub struct DumpParser<'a> {
    /// The whole dump, for estimating how many flows are left.
    text: &'a str,
    /// The text after the line most recently read.
    rest: &'a str,
    line_no: usize,
    thread: Option<FlowThread>,
    /// Scratch for the line parser, reused from line to line.
    items: Vec<Item>,
}

/// Parses a dump lazily; see [`DumpParser`].
pub fn parse_dump(text: &str) -> DumpParser<'_> {
    DumpParser {
        text,
        rest: text,
        line_no: 0,
        thread: None,
        items: Vec::new(),
    }
}

/// Parses a whole dump, failing on the first malformed line.
///
/// The result is sized from the line lengths seen so far rather than grown by doubling,
/// which for a 100,000-flow dump saves copying the flows and up to half their memory.
pub fn parse_dump_all(text: &str) -> Result<Vec<DatapathFlow<'_>>, FlowParseError> {
    let mut parser = parse_dump(text);
    let mut flows = Vec::new();
    while let Some(flow) = parser.next() {
        let flow = flow?;
        if flows.len() == flows.capacity() {
            // Never less than half again, so that a dump whose lines get shorter cannot
            // make the reallocations add up to more than a constant times its size.
            let left = parser.flows_left_estimate(flows.len() + 1);
            flows.reserve_exact(left.max(flows.len() / 2) + 1);
        }
        flows.push(flow);
    }
    Ok(flows)
}

impl<'a> DumpParser<'a> {
    /// The 1-based number of the line most recently read (0 before the first).
    pub fn line_number(&self) -> usize {
        self.line_no
    }

    /// About how many flows are left after `read` flows, from the bytes each took so far,
    /// with a 1/32 margin so that a slightly longer tail does not cost a second reallocation.
    fn flows_left_estimate(&self, read: usize) -> usize {
        let consumed = self.text.len() - self.rest.len();
        if consumed == 0 || self.rest.is_empty() {
            return 0;
        }
        let left = self.rest.len().saturating_mul(read) / consumed;
        left + left / 32
    }

    /// The next line, split exactly like [`str::lines`] (at `\n`, dropping a `\r` before
    /// it), found with a vectorised search.
    fn next_line(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let line = match memchr::memchr(b'\n', self.rest.as_bytes()) {
            Some(end) => {
                let line = &self.rest[..end];
                self.rest = &self.rest[end + 1..];
                line.strip_suffix('\r').unwrap_or(line)
            }
            None => std::mem::take(&mut self.rest),
        };
        Some(line)
    }
}

const HEADER: &str = "flow-dump from ";
const MAIN_THREAD: &str = "the main thread:";
const PMD_THREAD: &str = "pmd on cpu core: ";

impl<'a> DumpParser<'a> {
    /// Parses the next flow line into `flow`, a record the caller reuses for the whole
    /// dump: its key and action lists keep their capacity from line to line, so walking a
    /// dump this way allocates nothing per flow once the longest line has been seen, and
    /// frees nothing either. `None` at the end of the dump. A malformed line gives its
    /// error (as the iterator does), leaves `flow` empty ([`DatapathFlow::clear`]), and the
    /// next call goes on with the line after it.
    ///
    /// For a caller that looks at each flow and moves on (counting, filtering, summing);
    /// one that keeps the flows uses the iterator or [`parse_dump_all`], which give each
    /// flow its own lists.
    ///
    /// ```
    /// use dpu_ovs::flow::{parse_dump, DatapathFlow};
    ///
    /// let dump = "in_port(1),eth_type(0x0800), packets:3, bytes:180, used:never, actions:2\n\
    ///             in_port(2),eth_type(0x0806), packets:4, bytes:240, used:never, actions:1\n";
    /// let (mut parser, mut flow) = (parse_dump(dump), DatapathFlow::default());
    /// let mut packets = 0;
    /// while let Some(parsed) = parser.next_into(&mut flow) {
    ///     parsed?;
    ///     packets += flow.packets;
    /// }
    /// assert_eq!(packets, 7);
    /// # Ok::<(), dpu_ovs::flow::FlowParseError>(())
    /// ```
    pub fn next_into(&mut self, flow: &mut DatapathFlow<'a>) -> Option<Result<(), FlowParseError>> {
        Some(match self.next_flow_line()? {
            Ok(line) => parse_line_into(line, self.line_no, self.thread, &mut self.items, flow),
            Err(e) => {
                flow.clear();
                Err(e)
            }
        })
    }

    /// The next flow line, past blank lines and thread headers (which set the thread);
    /// an error for a header that names no thread.
    fn next_flow_line(&mut self) -> Option<Result<&'a str, FlowParseError>> {
        loop {
            let line = self.next_line()?;
            self.line_no += 1;
            let trimmed = line.trim_matches(|c: char| c.is_ascii_whitespace());
            if trimmed.is_empty() {
                continue;
            }
            if let Some(rest) = trimmed.strip_prefix(HEADER) {
                match parse_thread(rest) {
                    Some(thread) => {
                        self.thread = Some(thread);
                        continue;
                    }
                    None => {
                        let start = line.trim_start_matches(|c: char| c.is_ascii_whitespace());
                        let at = line.len() - start.len() + HEADER.len();
                        return Some(Err(FlowParseError::new(
                            self.line_no,
                            at,
                            "`the main thread:` or `pmd on cpu core: N`",
                            line,
                        )));
                    }
                }
            }
            return Some(Ok(line));
        }
    }
}

impl<'a> Iterator for DumpParser<'a> {
    type Item = Result<DatapathFlow<'a>, FlowParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(
            self.next_flow_line()?
                .and_then(|line| parse_line(line, self.line_no, self.thread, &mut self.items)),
        )
    }
}

/// Reads the part of a header line after `flow-dump from `.
fn parse_thread(rest: &str) -> Option<FlowThread> {
    if rest == MAIN_THREAD {
        return Some(FlowThread::Main);
    }
    let core = rest.strip_prefix(PMD_THREAD)?;
    if core.is_empty() || !core.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    core.parse().ok().map(FlowThread::Pmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PMD_DUMP: &str = "flow-dump from the main thread:\n\
        recirc_id(0),in_port(1),eth_type(0x0800), packets:0, bytes:0, used:never, actions:drop\n\
        \n\
        flow-dump from pmd on cpu core: 2\r\n\
        recirc_id(0),in_port(2),eth_type(0x0800), packets:5, bytes:300, used:0.010s, actions:1\n\
        recirc_id(0),in_port(3),eth_type(0x0806), packets:1, bytes:60, used:1.000s, actions:2\n";

    #[test]
    fn headers_attach_threads_and_blank_lines_are_skipped() {
        let flows = parse_dump_all(PMD_DUMP).expect("dump parses");
        let threads: Vec<_> = flows.iter().map(|f| f.thread).collect();
        assert_eq!(
            threads,
            [
                Some(FlowThread::Main),
                Some(FlowThread::Pmd(2)),
                Some(FlowThread::Pmd(2))
            ]
        );
        assert_eq!(flows[1].packets, 5);
    }

    #[test]
    fn errors_name_their_line_and_parsing_goes_on() {
        let text = "in_port(1), packets:1, bytes:1, used:never, actions:drop\n\
                    garbage\n\
                    flow-dump from pmd on cpu core: x\n\
                    in_port(2), packets:2, bytes:2, used:never, actions:3\n";
        let results: Vec<_> = parse_dump(text).collect();
        assert_eq!(results.len(), 4);
        let err_lines: Vec<_> = results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .map(|e| (e.line, e.text.as_str()))
            .collect();
        assert_eq!(
            err_lines,
            [(2, "garbage"), (3, "flow-dump from pmd on cpu core: x")]
        );
        assert!(results[3].is_ok());
        let first = parse_dump_all(text).expect_err("line 2 is malformed");
        assert_eq!((first.line, first.column), (2, 8));
    }

    #[test]
    fn empty_dump_has_no_flows() {
        assert_eq!(parse_dump_all("").map(|v| v.len()), Ok(0));
        assert_eq!(parse_dump_all("\n\n  \n").map(|v| v.len()), Ok(0));
    }
}
