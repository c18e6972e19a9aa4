//! One line of `ovs-appctl dpctl/dump-flows [-m] [--names]` as a typed [`DatapathFlow`].
//!
//! Layout (OVS `lib/dpctl.c` `format_dpif_flow()`):
//! `[ufid:<uuid>, ]<key>, packets:<n>, bytes:<n>, used:<never|S.mmms>[, flags:<tcp>]`
//! `[, offloaded:<yes|partial>][, dp:<layer>], actions:<actions>[, dp-extra-info:<text>]`.
//! The key and the actions are comma lists whose items may nest brackets and commas; a
//! top-level `, ` separates the fields.

use std::borrow::Cow;
use std::fmt;

use super::action::{Action, ActionKind};
use super::error::FlowParseError;
use super::key::{KeyField, PortRef};
use super::scan::{
    field_name_len, scan_list, scan_value, trim_ws_end, Item, Line, ListEnd, ScanError,
};
use super::stats::{DpLayer, ExtraField, FlowThread, Offloaded, Ufid, Used};

/// One datapath flow from a flow dump: what it matches, its counters, where it lives
/// (software, tc, hardware) and what it does.
///
/// Text is borrowed from the dump (`'a`) so parsing a large dump copies nothing;
/// [`DatapathFlow::into_owned`] detaches it. `Display` prints the flow back in OVS's format,
/// and that text parses to an equal flow.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DatapathFlow<'a> {
    /// `ufid:` (only printed with `-m`).
    pub ufid: Option<Ufid>,
    /// The match key, field by field, in printed order.
    pub key: Vec<KeyField<'a>>,
    /// `packets:` (for tc flows: software plus hardware packets).
    pub packets: u64,
    /// `bytes:` (tc hardware counts omit the 14-byte Ethernet header: compare packets).
    pub bytes: u64,
    /// `used:`.
    pub used: Used,
    /// `flags:`, the TCP flags seen (`SFPRU.ECN` letters); absent when none were seen,
    /// and always absent for tc flows, which do not report them.
    pub flags: Option<Cow<'a, str>>,
    /// `offloaded:`, resolved with the rule in [`Offloaded`]'s doc.
    pub offloaded: Offloaded,
    /// `dp:` (only printed with `-m`).
    pub dp: Option<DpLayer<'a>>,
    /// `actions:`, top-level actions in order (nested ones stay in their parent's text).
    pub actions: Vec<Action<'a>>,
    /// `dp-extra-info:` (userspace datapath with `-m`, e.g. `miniflow_bits(4,1)`).
    pub dp_extra_info: Option<Cow<'a, str>>,
    /// Every other `name:value` field, in order, so nothing printed is lost.
    pub extra: Vec<ExtraField<'a>>,
    /// The PMD thread header this flow was listed under (userspace datapath dumps only).
    pub thread: Option<FlowThread>,
}

impl<'a> DatapathFlow<'a> {
    /// Parses one flow line; errors report it as line 1.
    pub fn parse(line: &'a str) -> Result<Self, FlowParseError> {
        parse_line(line, 1, None, &mut Vec::new())
    }

    /// Empties the record (no key, no actions, no extra fields, every counter 0, `used`
    /// never), keeping the capacity of its lists for the next line parsed into it.
    pub fn clear(&mut self) {
        self.ufid = None;
        self.key.clear();
        self.packets = 0;
        self.bytes = 0;
        self.used = Used::Never;
        self.flags = None;
        self.offloaded = Offloaded::Unknown;
        self.dp = None;
        self.actions.clear();
        self.dp_extra_info = None;
        self.extra.clear();
        self.thread = None;
    }

    /// The first key field with this name (`"ipv4"`, `"in_port"`).
    pub fn key_field(&self, name: &str) -> Option<&KeyField<'a>> {
        self.key.iter().find(|f| f.name() == name)
    }

    /// The ingress port from `in_port(...)`, a number or (with `--names`) a name.
    pub fn in_port(&self) -> Option<PortRef<'_>> {
        let (value, _mask) = self.key_field("in_port")?.value_and_mask()?;
        Some(PortRef::parse(value))
    }

    /// The ports the top-level actions output to, in order.
    pub fn output_ports(&self) -> impl Iterator<Item = PortRef<'_>> {
        self.actions.iter().filter_map(Action::output_port)
    }

    /// True when the flow drops every packet (`actions:drop`).
    pub fn is_drop(&self) -> bool {
        self.actions.iter().all(|a| a.kind() == ActionKind::Drop)
    }

    /// True when the line was dumped with `-m` (it carries `ufid:` or `dp:`), which is
    /// when a missing `offloaded:` means "not offloaded".
    pub fn is_verbose(&self) -> bool {
        self.ufid.is_some() || self.dp.is_some()
    }

    /// The same flow, owning all its text, for keeping after the dump buffer is gone.
    pub fn into_owned(self) -> DatapathFlow<'static> {
        DatapathFlow {
            ufid: self.ufid,
            key: self.key.into_iter().map(KeyField::into_owned).collect(),
            packets: self.packets,
            bytes: self.bytes,
            used: self.used,
            flags: self.flags.map(|f| Cow::Owned(f.into_owned())),
            offloaded: self.offloaded,
            dp: self.dp.map(DpLayer::into_owned),
            actions: self.actions.into_iter().map(Action::into_owned).collect(),
            dp_extra_info: self.dp_extra_info.map(|f| Cow::Owned(f.into_owned())),
            extra: self.extra.into_iter().map(ExtraField::into_owned).collect(),
            thread: self.thread,
        }
    }
}

/// An empty record, as [`DatapathFlow::clear`] leaves one: what
/// [`super::DumpParser::next_into`] starts from when a caller reuses one record for a whole
/// dump.
impl Default for DatapathFlow<'_> {
    fn default() -> Self {
        Self {
            ufid: None,
            key: Vec::new(),
            packets: 0,
            bytes: 0,
            used: Used::Never,
            flags: None,
            offloaded: Offloaded::Unknown,
            dp: None,
            actions: Vec::new(),
            dp_extra_info: None,
            extra: Vec::new(),
            thread: None,
        }
    }
}

impl fmt::Display for DatapathFlow<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(ufid) = self.ufid {
            write!(f, "ufid:{ufid}, ")?;
        }
        write_list(f, &self.key)?;
        write!(
            f,
            ", packets:{}, bytes:{}, used:{}",
            self.packets, self.bytes, self.used
        )?;
        if let Some(flags) = &self.flags {
            write!(f, ", flags:{flags}")?;
        }
        for x in &self.extra {
            write!(f, ", {}:{}", x.name, x.value)?;
        }
        match self.offloaded {
            Offloaded::Yes => f.write_str(", offloaded:yes")?,
            Offloaded::Partial => f.write_str(", offloaded:partial")?,
            // Only a terse line needs the word to say "no" (OVS itself never prints it).
            Offloaded::No if !self.is_verbose() => f.write_str(", offloaded:no")?,
            Offloaded::No | Offloaded::Unknown => {}
        }
        if let Some(dp) = &self.dp {
            write!(f, ", dp:{dp}")?;
        }
        f.write_str(", actions:")?;
        write_list(f, &self.actions)?;
        if let Some(info) = &self.dp_extra_info {
            write!(f, ", dp-extra-info:{info}")?;
        }
        Ok(())
    }
}

fn write_list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

/// The fields of a line collected before the flow is assembled.
#[derive(Default)]
struct Fields<'a> {
    packets: Option<u64>,
    bytes: Option<u64>,
    used: Option<Used>,
    flags: Option<Cow<'a, str>>,
    offloaded: Option<Offloaded>,
    dp: Option<DpLayer<'a>>,
    /// Whether `actions:` was seen (its items follow the key's in the scratch list).
    actions: bool,
    dp_extra_info: Option<Cow<'a, str>>,
    extra: Vec<ExtraField<'a>>,
}

/// Parses one flow line numbered `line_no` (for errors), listed under `thread`, into a
/// new flow whose key and actions are allocated once each, at their exact size. `items` is
/// scratch space a caller parsing many lines passes again and again.
pub(crate) fn parse_line<'a>(
    line: &'a str,
    line_no: usize,
    thread: Option<FlowThread>,
    items: &mut Vec<Item>,
) -> Result<DatapathFlow<'a>, FlowParseError> {
    let mut flow = DatapathFlow::default();
    parse_line_into(line, line_no, thread, items, &mut flow)?;
    Ok(flow)
}

/// Parses one flow line like [`parse_line`], into `flow`: its key, actions and extra
/// fields are refilled in place, so a record reused from line to line allocates only
/// when a line has more items than any before it. On an error `flow` is emptied
/// ([`DatapathFlow::clear`]): nothing of the bad line, nor of the line before, is left in it.
pub(crate) fn parse_line_into<'a>(
    line: &'a str,
    line_no: usize,
    thread: Option<FlowThread>,
    items: &mut Vec<Item>,
    flow: &mut DatapathFlow<'a>,
) -> Result<(), FlowParseError> {
    let s = line.trim_end_matches(|c: char| c.is_ascii_whitespace());
    items.clear();
    let mut extra = std::mem::take(&mut flow.extra);
    extra.clear();
    parse_trimmed(s, thread, items, extra, flow).map_err(|e| {
        flow.clear();
        FlowParseError::new(line_no, e.offset, e.expected, line)
    })
}

/// Scans the trimmed line `s`; `extra` is the record's emptied list of extra fields, which
/// goes back into `flow` whatever happens (filled on success).
fn parse_trimmed<'a>(
    s: &'a str,
    thread: Option<FlowThread>,
    items: &mut Vec<Item>,
    extra: Vec<ExtraField<'a>>,
    flow: &mut DatapathFlow<'a>,
) -> Result<(), ScanError> {
    let line = Line::from(s);
    let mut pos = s.len()
        - s.trim_start_matches(|c: char| c.is_ascii_whitespace())
            .len();
    let ufid = match s[pos..].strip_prefix("ufid:") {
        Some(rest) => {
            let text = rest.get(..36).unwrap_or(rest);
            let ufid = Ufid::parse(text)
                .ok_or(ScanError::at(pos + 5, "a ufid of 8-4-4-4-12 hex digits"))?;
            pos += 5 + 36;
            if !s[pos..].starts_with(", ") {
                return Err(ScanError::at(pos, "`, ` after the ufid"));
            }
            pos += 2;
            Some(ufid)
        }
        None => None,
    };

    if s[pos..].starts_with(", ") {
        // A terse dump omits wildcarded keys; a flow could in theory print none at all.
        pos += 2;
    } else {
        let end = scan_list(
            line,
            pos,
            "a match key field",
            |_, _| false,
            |it| {
                items.push(it);
            },
        )?;
        pos = match end {
            ListEnd::CommaSpace(i) => i + 2,
            ListEnd::End => return Err(ScanError::at(s.len(), "`, packets:` after the match key")),
        };
    }
    let key_items = items.len();

    let mut fields = Fields {
        extra,
        ..Fields::default()
    };
    let scanned = scan_fields(s, line, pos, items, &mut fields);
    let (key, actions) = items.split_at(key_items);
    match scanned {
        Ok(()) => fields.finish(s, ufid, thread, key, actions, flow),
        Err(e) => {
            flow.extra = fields.extra;
            Err(e)
        }
    }
}

/// Scans the `name:value` fields from `pos` to the end of `s` into `fields`, and the
/// actions' items onto `items`.
fn scan_fields<'a>(
    s: &'a str,
    line: Line<'a>,
    mut pos: usize,
    items: &mut Vec<Item>,
    fields: &mut Fields<'a>,
) -> Result<(), ScanError> {
    let b = s.as_bytes();
    loop {
        let name_len = field_name_len(b, pos).ok_or(ScanError::at(pos, "a `name:value` field"))?;
        let name = &s[pos..pos + name_len];
        let vstart = pos + name_len + 1;
        if name == "actions" {
            if fields.actions {
                return Err(ScanError::at(pos, "only one `actions:` field"));
            }
            let end = scan_list(line, vstart, "an action", continues_action, |it| {
                items.push(it);
            })?;
            fields.actions = true;
            match end {
                ListEnd::CommaSpace(i) => pos = i + 2,
                ListEnd::End => break,
            }
            continue;
        }
        let vend = scan_value(line, vstart)?;
        let value_end = trim_ws_end(b, vstart, vend);
        if value_end == vstart {
            return Err(ScanError::at(vstart, "a value after the `:`"));
        }
        fields.set(pos, name, &s[vstart..value_end])?;
        if vend == s.len() {
            break;
        }
        pos = vend + 2;
    }
    Ok(())
}

impl<'a> Fields<'a> {
    /// Stores one `name:value` field that starts at byte `at`.
    fn set(&mut self, at: usize, name: &'a str, value: &'a str) -> Result<(), ScanError> {
        let vat = at + name.len() + 1;
        match name {
            "packets" => once(&mut self.packets, at, "only one `packets:`", || {
                parse_u64(value).ok_or(ScanError::at(vat, "a packet count"))
            }),
            "bytes" => once(&mut self.bytes, at, "only one `bytes:`", || {
                parse_u64(value).ok_or(ScanError::at(vat, "a byte count"))
            }),
            "used" => once(&mut self.used, at, "only one `used:`", || {
                Used::parse(value).ok_or(ScanError::at(vat, "`never` or seconds like `0.520s`"))
            }),
            "flags" => once(&mut self.flags, at, "only one `flags:`", || {
                Ok(Cow::Borrowed(value))
            }),
            "dp" => once(&mut self.dp, at, "only one `dp:`", || {
                Ok(DpLayer::parse(value))
            }),
            "dp-extra-info" => once(
                &mut self.dp_extra_info,
                at,
                "only one `dp-extra-info:`",
                || Ok(Cow::Borrowed(value)),
            ),
            "offloaded" => {
                let state = match value {
                    "yes" => Offloaded::Yes,
                    "partial" => Offloaded::Partial,
                    "no" => Offloaded::No,
                    _ => {
                        self.extra.push(ExtraField {
                            name: Cow::Borrowed(name),
                            value: Cow::Borrowed(value),
                        });
                        Offloaded::Unknown
                    }
                };
                once(&mut self.offloaded, at, "only one `offloaded:`", || {
                    Ok(state)
                })
            }
            _ => {
                self.extra.push(ExtraField {
                    name: Cow::Borrowed(name),
                    value: Cow::Borrowed(value),
                });
                Ok(())
            }
        }
    }

    /// Assembles the flow from the fields and the scanned key and action items of line `s`
    /// into `flow`, reusing its lists; `flow` is written only once nothing can fail, and
    /// gets `self.extra` back either way.
    fn finish(
        self,
        s: &'a str,
        ufid: Option<Ufid>,
        thread: Option<FlowThread>,
        key: &[Item],
        actions: &[Item],
        flow: &mut DatapathFlow<'a>,
    ) -> Result<(), ScanError> {
        let missing = |what| ScanError::at(s.len(), what);
        let checked = (|| {
            let packets = self.packets.ok_or(missing("a `packets:` field"))?;
            let bytes = self.bytes.ok_or(missing("a `bytes:` field"))?;
            let used = self.used.ok_or(missing("a `used:` field"))?;
            if !self.actions {
                return Err(missing("an `actions:` field"));
            }
            Ok((packets, bytes, used))
        })();
        flow.extra = self.extra;
        let (packets, bytes, used) = checked?;
        let verbose = ufid.is_some() || self.dp.is_some();
        let text = |it: &Item| (&s[it.start..it.end], it.open.map(|o| o - it.start));
        flow.ufid = ufid;
        flow.key.clear();
        flow.key.extend(key.iter().map(|it| {
            let (text, open) = text(it);
            KeyField::from_scanned(text, open)
        }));
        flow.packets = packets;
        flow.bytes = bytes;
        flow.used = used;
        flow.flags = self.flags;
        flow.offloaded = self.offloaded.unwrap_or(if verbose {
            Offloaded::No
        } else {
            Offloaded::Unknown
        });
        flow.dp = self.dp;
        flow.actions.clear();
        flow.actions.extend(actions.iter().map(|it| {
            let (text, open) = text(it);
            Action::from_scanned(text, open)
        }));
        flow.dp_extra_info = self.dp_extra_info;
        flow.thread = thread;
        Ok(())
    }
}

/// Whether a top-level `, ` inside the actions still belongs to the current action: only
/// when what follows is neither a `name:` field nor blank nor another comma. OVS prints
/// such text for an action it cannot decode (`bad length 4, expected 8 for: action12(..)`).
fn continues_action(b: &[u8], at: usize) -> bool {
    field_name_len(b, at).is_none()
        && b.get(at)
            .is_some_and(|c| !c.is_ascii_whitespace() && *c != b',')
}

/// Fills `slot` with `make()` unless a previous field already did.
fn once<T>(
    slot: &mut Option<T>,
    at: usize,
    dup: &'static str,
    make: impl FnOnce() -> Result<T, ScanError>,
) -> Result<(), ScanError> {
    if slot.is_some() {
        return Err(ScanError::at(at, dup));
    }
    *slot = Some(make()?);
    Ok(())
}

/// A decimal `u64` as `PRIu64` prints it: digits only, in one pass.
fn parse_u64(text: &str) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    text.bytes().try_fold(0u64, |n, c| {
        let digit = c.checked_sub(b'0').filter(|d| *d <= 9)?;
        n.checked_mul(10)?.checked_add(u64::from(digit))
    })
}
