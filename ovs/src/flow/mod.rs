//! The datapath flow-dump parser: `ovs-appctl dpctl/dump-flows [-m] [--names]` output as
//! typed flows, with offload classification and the `type=` filter.
//!
//! Why: proving that traffic went through the eSwitch needs per-flow counters and offload
//! state (`offloaded:yes, dp:tc`), and the only source for them on a BlueField is this text.
//! The formats come from OVS's own printers (`lib/dpctl.c` `format_dpif_flow()`,
//! `lib/odp-util.c`), for OVS 2.17 (what BlueField ships), 3.x, and OVS-DOCA (`dp:doca`).
//!
//! The parser borrows from the dump text (no copies for 100,000-flow dumps), never panics on
//! bad input, and keeps every field it does not model. A caller that looks at each flow and
//! moves on parses into one reused record ([`DumpParser::next_into`]), which allocates
//! nothing per flow: in a 100,000-flow dump, freeing each flow's key and action lists took
//! about a third of the parse. Key fields and actions stay as text
//! with their names and arguments located; outputs, drops, `recirc` and friends are
//! classified.
//!
//! ```
//! use dpu_ovs::flow::{parse_dump_all, DpLayer, Offloaded, PortRef};
//!
//! let dump = "ufid:25030bd6-7e33-4ba5-9c1b-aa4b6f0d2a11, recirc_id(0),in_port(pf0hpf),\
//! eth(src=0c:42:a1:00:00:01,dst=0c:42:a1:00:00:02),eth_type(0x0800),ipv4(frag=no), \
//! packets:36, bytes:3024, used:0.320s, offloaded:yes, dp:tc, actions:p0\n";
//! let flows = parse_dump_all(dump)?;
//! assert_eq!(flows[0].offloaded, Offloaded::Yes);
//! assert_eq!(flows[0].dp, Some(DpLayer::Tc));
//! assert_eq!(flows[0].in_port(), Some(PortRef::Name("pf0hpf")));
//! assert_eq!(flows[0].output_ports().collect::<Vec<_>>(), [PortRef::Name("p0")]);
//! # Ok::<(), dpu_ovs::flow::FlowParseError>(())
//! ```

mod action;
mod bytes;
mod covers;
mod dump;
mod error;
mod filter;
mod key;
mod level;
mod line;
mod scan;
mod scan_any;
mod scan_item;
mod scan_plain;
mod stats;
mod text;

#[cfg(test)]
mod tests;

pub use action::{Action, ActionKind};
pub use covers::Ipv4Packet;
pub use dump::{parse_dump, parse_dump_all, DumpParser};
pub use error::{DumpTypeError, FlowParseError};
pub use filter::{DumpType, TypeFilter};
pub use key::{KeyField, PortRef};
pub use level::{ByLevel, FlowForwarding, ForwardingLevel, TcShares};
pub use line::DatapathFlow;
pub use stats::{DpLayer, ExtraField, FlowThread, Offloaded, Ufid, Used};
