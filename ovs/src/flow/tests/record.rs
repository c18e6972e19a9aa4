//! The reused record ([`DumpParser::next_into`]) against the allocating iterator: the same
//! flow for every line whatever the record held before, the same error for every bad line
//! (truncated anywhere), and an emptied record after an error.

use super::super::*;

/// Lines of every shape the scanner treats differently, richest first so that a record
/// reused from one to the next has stale fields to leave behind: `-m` fields, braces
/// (the byte-loop scanner), quoted strings, nested action lists, unknown fields, a PMD
/// thread header, a terse line, a line without key.
const VARIED: &str = "flow-dump from pmd on cpu core: 3\n\
ufid:25030bd6-7e33-4ba5-9c1b-aa4b6f0d2a11, skb_priority(0/0),\
tunnel(tun_id=0x1,src=172.16.0.2,dst=172.16.0.1,geneve({class=0x102,type=0x80,len=4,0x10002/0x7fffffff}),\
flags(-df+csum+key)),recirc_id(0),in_port(genev_sys_6081),eth_type(0x0800),\
ipv4(src=10.244.0.6/0.0.0.0,dst=10.244.0.5,proto=6/0,frag=no), packets:36, bytes:3024, \
used:0.320s, flags:SFP., future:x(1, 2), offloaded:maybe, dp:doca, \
actions:ct(commit,zone=64000,mark=0x1/0x1,nat(src=10.0.0.1)),recirc(0x2), \
dp-extra-info:miniflow_bits(4,1)\n\
ufid:00000000-0000-0000-0000-00000000000a, in_port(p0),eth(src=0c:42:a1:00:00:01,dst=0c:42:a1:00:00:02), \
packets:5, bytes:300, used:never, dp:tc, \
actions:clone(tnl_push(tnl_port(4789),header(size=50,type=4,ipv4(src=1.1.1.1,dst=2.2.2.2)),out_port(2)),3),\
check_pkt_len(size=200,gt(4),le(5)),note(\"a, b: (c\"),pop_vlan,p1\n\
\n\
flow-dump from the main thread:\n\
recirc_id(0),in_port(1),eth_type(0x0806), packets:1, bytes:60, used:1.000s, actions:2\n\
, packets:0, bytes:0, used:never, actions:drop\n";

/// Every line's result from the iterator and from one reused record.
fn both_ways(
    dump: &str,
) -> Vec<(
    Result<DatapathFlow<'_>, FlowParseError>,
    Result<DatapathFlow<'_>, FlowParseError>,
)> {
    let fresh: Vec<_> = parse_dump(dump).collect();
    let (mut parser, mut record) = (parse_dump(dump), DatapathFlow::default());
    let mut reused = Vec::new();
    while let Some(parsed) = parser.next_into(&mut record) {
        reused.push(parsed.map(|()| record.clone()));
    }
    assert_eq!(fresh.len(), reused.len(), "both ways see the same lines");
    fresh.into_iter().zip(reused).collect()
}

#[test]
fn a_reused_record_holds_exactly_what_a_fresh_parse_gives() {
    let results = both_ways(VARIED);
    assert_eq!(results.len(), 4);
    for (fresh, reused) in &results {
        assert!(fresh.is_ok(), "{fresh:?}");
        assert_eq!(fresh, reused);
    }
    // The fields a later, poorer line lacks are gone from the record, not kept.
    let terse = results[2].1.as_ref().expect("parses");
    assert_eq!(
        (
            terse.ufid,
            terse.dp.as_ref(),
            terse.flags.as_deref(),
            terse.extra.len()
        ),
        (None, None, None, 0)
    );
    assert_eq!(terse.thread, Some(FlowThread::Main));
    assert_eq!(terse.offloaded, Offloaded::Unknown);
    let rich = results[0].1.as_ref().expect("parses");
    assert_eq!(rich.thread, Some(FlowThread::Pmd(3)));
    assert_eq!(rich.extra.len(), 2, "future: and offloaded:maybe are kept");
    assert_eq!(rich.dp_extra_info.as_deref(), Some("miniflow_bits(4,1)"));
    assert_eq!(rich.actions.len(), 2);
    let nested = results[1].1.as_ref().expect("parses");
    assert_eq!(nested.actions.len(), 5);
    assert_eq!(nested.actions[2].args(), Some("\"a, b: (c\""));
    assert!(results[3].1.as_ref().expect("parses").key.is_empty());
}

#[test]
fn a_bad_line_empties_the_record_and_the_next_line_parses() {
    let dump =
        "in_port(1), packets:7, bytes:1, used:never, flags:S, dp:ovs, actions:ct(zone=1),2\n\
                in_port(2), packets:8, bytes:1, used:never, actions:ct(zone=1\n\
                flow-dump from pmd on cpu core: x\n\
                in_port(3), packets:9, bytes:1, used:never, actions:3\n";
    let (mut parser, mut record) = (parse_dump(dump), DatapathFlow::default());
    assert_eq!(parser.next_into(&mut record), Some(Ok(())));
    assert_eq!(record.packets, 7);
    let bad = parser.next_into(&mut record).expect("a second line");
    let e = bad.expect_err("an action never closed");
    assert_eq!(
        (e.line, e.column, e.expected),
        (2, 62, "a closing `)` before the end of the line"),
        "one past the end of the 61-byte line"
    );
    assert_eq!(
        record,
        DatapathFlow::default(),
        "nothing of either line is left"
    );
    let header = parser.next_into(&mut record).expect("a third line");
    assert_eq!(header.map_err(|e| (e.line, e.column)), Err((3, 16)));
    assert_eq!(record, DatapathFlow::default());
    assert_eq!(parser.next_into(&mut record), Some(Ok(())));
    assert_eq!((record.packets, record.actions.len()), (9, 1));
    assert_eq!(parser.next_into(&mut record), None);
}

#[test]
fn every_truncation_of_a_line_fails_or_parses_alike_both_ways() {
    // Each flow line of the varied dump, cut at every byte, after a full line has filled
    // the record: the reused record must give the fresh parse's flow or its very error.
    let lines: Vec<&str> = VARIED
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("flow-dump"))
        .collect();
    let mut checked = 0;
    for line in &lines {
        let actions = line.find("actions:").expect("every line has actions") + "actions:".len();
        for cut in (0..=line.len()).filter(|&cut| line.is_char_boundary(cut)) {
            let truncated = &line[..cut];
            let dump = format!("{}\n{truncated}\n", lines[0]);
            let results = both_ways(&dump);
            let Some((fresh, reused)) = results.get(1) else {
                // Cut to nothing (or blanks): a blank line, skipped by both.
                assert!(truncated.trim().is_empty(), "{truncated:?}");
                continue;
            };
            assert_eq!(fresh, reused, "cut at {cut}: {truncated:?}");
            if cut <= actions {
                let e = fresh.as_ref().expect_err("no action yet");
                assert_eq!(e.line, 2);
                assert!(e.column <= cut + 1, "cut at {cut}: {e}");
                assert_eq!(e.text, truncated);
            }
            checked += 1;
        }
    }
    assert!(checked > 900, "{checked} truncations");
}
