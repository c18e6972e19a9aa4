//! One field of a datapath flow's match key (`eth_type(0x0800)`, `ipv4(src=..,dst=..)`,
//! `tunnel(..,flags(-df+csum))`), kept as text with its name and arguments located, so
//! every OVS key — including ones this crate has never heard of — survives parsing.

use std::fmt;

use super::scan::{first_open, split_sub_fields};
use super::text::ItemText;

/// A datapath port as printed in a flow: its number, or its name when the dump was taken
/// with `--names` (the default with `-m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PortRef<'a> {
    /// An odp port number (`in_port(2)`, `actions:3`).
    Number(u32),
    /// A port name (`in_port(pf0hpf)`, `actions:p0`).
    Name(&'a str),
}

impl<'a> PortRef<'a> {
    /// Reads a port as OVS prints it: all digits is a number, anything else a name.
    pub fn parse(text: &'a str) -> Self {
        match text.parse::<u32>() {
            Ok(n) if text.bytes().all(|c| c.is_ascii_digit()) => Self::Number(n),
            _ => Self::Name(text),
        }
    }
}

impl fmt::Display for PortRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::Name(s) => f.write_str(s),
        }
    }
}

/// One top-level field of the match key.
///
/// The text is kept verbatim (borrowed from the dump until [`KeyField::into_owned`]); the
/// name and the arguments are slices of it, located once at parse time.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct KeyField<'a> {
    text: ItemText<'a>,
}

impl<'a> KeyField<'a> {
    /// Builds a field from its text and the offset of its first top-level bracket, which
    /// the line scanner has already checked to close at the very end of the text.
    pub(crate) fn from_scanned(text: &'a str, open: Option<usize>) -> Self {
        let open = open.unwrap_or(text.len());
        debug_assert_eq!(open, first_open(text), "{text}");
        Self {
            text: ItemText::borrowed(text, open),
        }
    }

    /// Offset of the opening `(`/`{`, or `text.len()` when the field has no arguments.
    fn open(&self) -> usize {
        self.text.open()
    }

    /// The field exactly as printed (`ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,frag=no)`).
    pub fn text(&self) -> &str {
        self.text.as_str()
    }

    /// The key name before `(` (`ipv4`, `recirc_id`); the whole text when it has none
    /// (`<empty>`).
    pub fn name(&self) -> &str {
        self.text().get(..self.open()).unwrap_or_default()
    }

    /// The text between the outer brackets, `None` when the field has no brackets.
    pub fn args(&self) -> Option<&str> {
        let (text, open) = (self.text(), self.open());
        if open >= text.len() {
            return None;
        }
        text.get(open + 1..text.len() - 1)
    }

    /// A scalar argument split into value and mask: `ct_state(0/0x21)` gives
    /// `("0", Some("0x21"))`, `recirc_id(0)` gives `("0", None)`.
    pub fn value_and_mask(&self) -> Option<(&str, Option<&str>)> {
        let args = self.args()?;
        Some(match args.rsplit_once('/') {
            Some((v, m)) => (v, Some(m)),
            None => (args, None),
        })
    }

    /// The top-level items of the arguments as `(name, value)`: `eth(src=a,dst=b)` gives
    /// `("src", Some("a")), ("dst", Some("b"))`; a flag item such as `flags(-df)` in
    /// `tunnel(...)` gives `("flags(-df)", None)`.
    pub fn sub_fields(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        let mut items = self.args().map(split_sub_fields);
        std::iter::from_fn(move || loop {
            let (item, equals) = items.as_mut()?.next()?;
            if item.is_empty() {
                continue;
            }
            return Some(match equals {
                Some(at) => (&item[..at], Some(&item[at + 1..])),
                None => (item, None),
            });
        })
    }

    /// The value of one `name=value` item of the arguments (`ipv4` → `src`), mask included.
    pub fn sub_field(&self, name: &str) -> Option<&str> {
        self.sub_fields()
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| v)
    }

    /// The same field, owning its text.
    pub fn into_owned(self) -> KeyField<'static> {
        KeyField {
            text: self.text.into_owned(),
        }
    }
}

impl fmt::Display for KeyField<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl fmt::Debug for KeyField<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyField")
            .field("text", &self.text())
            .field("open", &self.open())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(text: &str) -> KeyField<'_> {
        KeyField::from_scanned(text, text.find('('))
    }

    #[test]
    fn name_args_and_masks() {
        let f = field("ct_state(0/0x21)");
        assert_eq!(f.name(), "ct_state");
        assert_eq!(f.args(), Some("0/0x21"));
        assert_eq!(f.value_and_mask(), Some(("0", Some("0x21"))));
        let e = field("<empty>");
        assert_eq!(
            (e.name(), e.args(), e.value_and_mask()),
            ("<empty>", None, None)
        );
        assert_eq!(field("x()").args(), Some(""));
    }

    #[test]
    fn sub_fields_split_nested_args() {
        let f = field("tunnel(tun_id=0x1,src=1.1.1.1,dst=2.2.2.2,tp_dst=4789,flags(-df+csum+key))");
        let items: Vec<_> = f.sub_fields().collect();
        assert_eq!(items[0], ("tun_id", Some("0x1")));
        assert_eq!(items[4], ("flags(-df+csum+key)", None));
        assert_eq!(f.sub_field("dst"), Some("2.2.2.2"));
        let g = field("geneve({class=0x102,type=0x80,len=4,0xa/0x7fffffff})");
        assert_eq!(g.sub_fields().count(), 1);
    }

    #[test]
    fn port_refs() {
        assert_eq!(PortRef::parse("2"), PortRef::Number(2));
        assert_eq!(PortRef::parse("pf0hpf"), PortRef::Name("pf0hpf"));
        assert_eq!(PortRef::parse("+2"), PortRef::Name("+2"));
        assert_eq!(PortRef::parse("99999999999"), PortRef::Name("99999999999"));
    }
}
