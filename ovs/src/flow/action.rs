//! One datapath action (`drop`, `3`, `p0`, `ct(commit,zone=1)`, `recirc(0x1)`, `set(...)`),
//! kept as text and classified, so offload proofs can ask "where does this flow send
//! packets" without modelling every action OVS knows.

use std::fmt;

use super::key::PortRef;
use super::scan::first_open;
use super::text::ItemText;

/// What an action does, as far as the agent cares. Arguments stay in [`Action::args`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ActionKind {
    /// Output to a port: a bare number, or a bare name with `--names`.
    Output,
    /// `drop` (also what OVS prints for an empty action list).
    Drop,
    /// `ct(...)`: send through conntrack.
    Ct,
    /// `ct_clear`.
    CtClear,
    /// `recirc(id)`: recirculate with this recirculation id.
    Recirc(u32),
    /// `set(...)`, masked or not: rewrite a header field or the tunnel metadata.
    Set,
    /// `push_vlan(...)`.
    PushVlan,
    /// `pop_vlan`.
    PopVlan,
    /// `push_mpls(...)` or `add_mpls(...)`.
    PushMpls,
    /// `pop_mpls(...)`.
    PopMpls,
    /// `push_eth(...)`.
    PushEth,
    /// `pop_eth`.
    PopEth,
    /// `tnl_push(...)`: userspace tunnel encapsulation, then output.
    TunnelPush,
    /// `tnl_pop(port)`: userspace tunnel decapsulation.
    TunnelPop,
    /// `userspace(...)`: send to ovs-vswitchd (slow path, controller, sampling).
    Userspace,
    /// `sample(...)`, with nested actions.
    Sample,
    /// `clone(...)`, with nested actions.
    Clone,
    /// `check_pkt_len(...)`, with nested actions.
    CheckPktLen,
    /// `meter(id)`.
    Meter,
    /// `trunc(len)`.
    Trunc,
    /// `lb_output(id)`: balance-tcp bond output.
    LbOutput,
    /// `hash(...)`.
    Hash,
    /// Anything else, kept as text.
    Other,
}

/// One top-level action of a flow, with its text kept verbatim.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Action<'a> {
    /// The text, and the offset of the opening bracket (`text.len()` without arguments).
    text: ItemText<'a>,
    kind: ActionKind,
}

/// Bare words OVS prints for actions without arguments; any other bare word is a port name.
const BARE_ACTIONS: [(&str, ActionKind); 4] = [
    ("drop", ActionKind::Drop),
    ("pop_vlan", ActionKind::PopVlan),
    ("pop_eth", ActionKind::PopEth),
    ("ct_clear", ActionKind::CtClear),
];

impl<'a> Action<'a> {
    /// Builds and classifies an action from its text and the offset of its first
    /// top-level bracket (already checked by the line scanner to close at the end).
    pub(crate) fn from_scanned(text: &'a str, open: Option<usize>) -> Self {
        let open = open.unwrap_or(text.len());
        debug_assert_eq!(open, first_open(text), "{text}");
        let kind = classify(text, open);
        Self {
            text: ItemText::borrowed(text, open),
            kind,
        }
    }

    /// Offset of the opening bracket, or `text.len()` without arguments.
    fn open(&self) -> usize {
        self.text.open()
    }

    /// The action exactly as printed.
    pub fn text(&self) -> &str {
        self.text.as_str()
    }

    /// What the action does.
    pub fn kind(&self) -> ActionKind {
        self.kind
    }

    /// The name before `(` (`ct`, `recirc`), or the whole text of a bare action (`drop`,
    /// `3`, `p0`).
    pub fn name(&self) -> &str {
        self.text().get(..self.open()).unwrap_or_default()
    }

    /// The text between the outer brackets; `None` for a bare action.
    pub fn args(&self) -> Option<&str> {
        let (text, open) = (self.text(), self.open());
        if open >= text.len() {
            return None;
        }
        text.get(open + 1..text.len() - 1)
    }

    /// The port this action outputs to, when it is an output.
    pub fn output_port(&self) -> Option<PortRef<'_>> {
        (self.kind == ActionKind::Output).then(|| PortRef::parse(self.text()))
    }

    /// The same action, owning its text.
    pub fn into_owned(self) -> Action<'static> {
        Action {
            text: self.text.into_owned(),
            kind: self.kind,
        }
    }
}

impl fmt::Display for Action<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl fmt::Debug for Action<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Action")
            .field("text", &self.text())
            .field("open", &self.open())
            .field("kind", &self.kind)
            .finish()
    }
}

/// Classifies an action by its name, the way `format_odp_action()` in OVS's
/// `lib/odp-util.c` prints each `OVS_ACTION_ATTR_*`.
fn classify(text: &str, open: usize) -> ActionKind {
    let name = text.get(..open).unwrap_or_default();
    if open >= text.len() {
        if let Some((_, kind)) = BARE_ACTIONS.iter().find(|(n, _)| *n == name) {
            return *kind;
        }
        return if is_port_like(name) {
            ActionKind::Output
        } else {
            ActionKind::Other
        };
    }
    let args = text.get(open + 1..text.len() - 1).unwrap_or_default();
    match name {
        "drop" => ActionKind::Drop,
        "ct" => ActionKind::Ct,
        "recirc" => parse_u32(args).map_or(ActionKind::Other, ActionKind::Recirc),
        "set" => ActionKind::Set,
        "push_vlan" => ActionKind::PushVlan,
        "push_mpls" | "add_mpls" => ActionKind::PushMpls,
        "pop_mpls" => ActionKind::PopMpls,
        "push_eth" => ActionKind::PushEth,
        "tnl_push" => ActionKind::TunnelPush,
        "tnl_pop" => ActionKind::TunnelPop,
        "userspace" => ActionKind::Userspace,
        "sample" => ActionKind::Sample,
        "clone" => ActionKind::Clone,
        "check_pkt_len" => ActionKind::CheckPktLen,
        "meter" => ActionKind::Meter,
        "trunc" => ActionKind::Trunc,
        "lb_output" => ActionKind::LbOutput,
        "hash" => ActionKind::Hash,
        _ => ActionKind::Other,
    }
}

/// A port number, or a name that a network device could have (no spaces, `=`, `:`, `/`,
/// quotes or markers such as `<empty>` / `***`).
fn is_port_like(word: &str) -> bool {
    !word.is_empty()
        && word
            .bytes()
            .all(|c| (c.is_ascii_graphic() && !b"=:/\"<>*,".contains(&c)) || c >= 0x80)
}

/// Parses `0x1f` (as `recirc(%#x)` prints) or decimal.
fn parse_u32(text: &str) -> Option<u32> {
    match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(text: &str) -> Action<'_> {
        Action::from_scanned(text, text.find('('))
    }

    #[test]
    fn classifies_outputs_and_drop() {
        assert_eq!(action("3").output_port(), Some(PortRef::Number(3)));
        assert_eq!(action("p0").output_port(), Some(PortRef::Name("p0")));
        assert_eq!(action("drop").kind(), ActionKind::Drop);
        assert_eq!(action("drop").output_port(), None);
        assert_eq!(action("pop_vlan").kind(), ActionKind::PopVlan);
        assert_eq!(action("<empty>").kind(), ActionKind::Other);
    }

    #[test]
    fn classifies_actions_with_arguments() {
        assert_eq!(action("recirc(0x1f)").kind(), ActionKind::Recirc(0x1f));
        assert_eq!(action("recirc(0)").kind(), ActionKind::Recirc(0));
        assert_eq!(action("recirc(zz)").kind(), ActionKind::Other);
        let ct = action("ct(commit,zone=1,nat(src=10.0.0.1))");
        assert_eq!((ct.kind(), ct.name()), (ActionKind::Ct, "ct"));
        assert_eq!(ct.args(), Some("commit,zone=1,nat(src=10.0.0.1)"));
        assert_eq!(action("set(tunnel(tun_id=0x5))").kind(), ActionKind::Set);
        assert_eq!(
            action("push_vlan(vid=100,pcp=0)").kind(),
            ActionKind::PushVlan
        );
        assert_eq!(action("pop_nsh()").kind(), ActionKind::Other);
        assert_eq!(action("tnl_pop(4)").kind(), ActionKind::TunnelPop);
    }
}
