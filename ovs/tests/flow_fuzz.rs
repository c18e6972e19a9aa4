//! A deterministic, bounded fuzz test of the flow-dump parser, run by `cargo test`.
//!
//! It mutates the corpus (truncations, byte flips to syntax bytes, splices between lines,
//! deletions, duplications, inserted field names, very deep nesting, very long lines) and
//! checks that parsing never panics, that every error names its line, its text and a
//! column inside it, and that every flow that parses prints back to an equal flow.
//! A fixed seed keeps failures reproducible; `DPU_FUZZ_ITERS` raises the count and
//! `DPU_FUZZ_SEED` changes the seed (run it longer in release mode to explore).

use dpu_ovs::flow::{parse_dump, DatapathFlow, DumpType, FlowParseError, TypeFilter};

const CORPUS: [&str; 4] = [
    include_str!("data/dump-flows-m-kernel-tc.txt"),
    include_str!("data/dump-flows-terse.txt"),
    include_str!("data/dump-flows-names.txt"),
    include_str!("data/dump-flows-m-doca-pmd.txt"),
];

/// Bytes that matter to the grammar, plus a few that break UTF-8 or lines.
const SYNTAX: &[u8] = b"(){},: /=\"\\-0x9\n\r\t\xc3\xa9\xff\x00";

/// Text the mutator splices in: field names, separators, markers.
const TOKENS: [&str; 14] = [
    ", packets:",
    ", bytes:",
    ", used:",
    "never",
    ", actions:",
    "ufid:",
    ", dp:tc",
    ", offloaded:yes",
    ", offloaded:no",
    "flow-dump from pmd on cpu core: 3\n",
    "<empty>",
    "(",
    ")",
    "\"",
];

/// splitmix64: small, fast, and good enough to drive mutations reproducibly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn corpus_lines() -> Vec<&'static str> {
    CORPUS
        .iter()
        .flat_map(|t| t.lines())
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// One random mutation of `input`, drawing splice material from `lines`.
fn mutate(rng: &mut Rng, input: &[u8], lines: &[&str]) -> Vec<u8> {
    let mut b = input.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let at = rng.below(b.len() + 1);
        match rng.below(8) {
            0 => b.truncate(at),
            1 => {
                if at < b.len() {
                    b[at] = SYNTAX[rng.below(SYNTAX.len())];
                }
            }
            2 => {
                let other = lines[rng.below(lines.len())].as_bytes();
                let from = rng.below(other.len());
                let to = from + rng.below(other.len() - from + 1);
                b.splice(at..at, other[from..to].iter().copied());
            }
            3 => {
                let end = (at + rng.below(40)).min(b.len());
                b.drain(at..end);
            }
            4 => {
                let end = (at + rng.below(80)).min(b.len());
                let piece = b[at..end].to_vec();
                b.splice(at..at, piece);
            }
            5 => {
                let tok = TOKENS[rng.below(TOKENS.len())].as_bytes();
                b.splice(at..at, tok.iter().copied());
            }
            6 => {
                let depth = 1 + rng.below(20_000);
                let mut nest = vec![b'('; depth];
                if rng.below(2) == 0 {
                    nest.extend(std::iter::repeat_n(b')', depth));
                }
                b.splice(at..at, nest);
            }
            _ => {
                let piece = b",ct(commit,zone=1,nat(src=10.0.0.1)),recirc(0x1),p0";
                let times = 1 + rng.below(500);
                let long: Vec<u8> = piece
                    .iter()
                    .copied()
                    .cycle()
                    .take(piece.len() * times)
                    .collect();
                b.splice(at..at, long);
            }
        }
    }
    b
}

fn check_error(e: &FlowParseError, lines: &[&str]) {
    assert!(
        e.line >= 1 && e.line <= lines.len(),
        "line {} of {}",
        e.line,
        lines.len()
    );
    assert!(
        e.text == lines[e.line - 1],
        "error text is not line {}: {:?}",
        e.line,
        short(&e.text)
    );
    let column_ok = e.column >= 1 && e.column <= e.text.len() + 1;
    assert!(column_ok, "column {} in {:?}", e.column, short(&e.text));
    assert!(!e.expected.is_empty());
    assert!(e.to_string().contains(&format!("line {},", e.line)));
}

/// At most the first 300 bytes of a text, for failure messages about huge inputs.
fn short(text: &str) -> &str {
    let mut cut = text.len().min(300);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

fn check_flow(source: &str, flow: &DatapathFlow<'_>) {
    let printed = flow.to_string();
    let again = DatapathFlow::parse(&printed).unwrap_or_else(|e| {
        panic!(
            "printed flow does not parse: {e}\nsource: {:?}",
            short(source)
        )
    });
    assert_eq!(again.thread, None);
    let mut again = again;
    again.thread = flow.thread;
    assert!(
        again == *flow,
        "printed flow parses differently\nsource:  {:?}\nprinted: {:?}",
        short(source),
        short(&printed)
    );
    assert!(flow.clone().into_owned() == *flow);
    for t in DumpType::ALL {
        let _ = t.matches(flow);
    }
    let _ = TypeFilter::default().matches(flow);
}

/// The seed: fixed by default so failures reproduce, `DPU_FUZZ_SEED` to explore.
fn seed(default: u64) -> Rng {
    let extra = std::env::var("DPU_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    Rng(default ^ extra)
}

fn iterations() -> usize {
    std::env::var("DPU_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6_000)
}

#[test]
fn mutated_lines_never_panic_and_errors_name_the_line() {
    let lines = corpus_lines();
    let mut rng = seed(0x00d9_0f10_75ee_d001);
    let (mut ok, mut failed) = (0usize, 0usize);
    for i in 0..iterations() {
        let seed_line = lines[i % lines.len()];
        let bytes = mutate(&mut rng, seed_line.as_bytes(), &lines);
        let text = String::from_utf8_lossy(&bytes);
        match DatapathFlow::parse(&text) {
            Ok(flow) => {
                ok += 1;
                check_flow(&text, &flow);
            }
            Err(e) => {
                failed += 1;
                check_error(&e, &[&text]);
            }
        }
    }
    // Both outcomes must be exercised, or the mutator has gone blind.
    assert!(ok > 100 && failed > 100, "ok {ok}, failed {failed}");
}

#[test]
fn mutated_dumps_report_every_bad_line_by_number() {
    let lines = corpus_lines();
    let mut rng = seed(0x0bad_d00d_0000_0001);
    for i in 0..iterations() / 20 {
        let dump = CORPUS[i % CORPUS.len()].as_bytes();
        let mut bytes = dump.to_vec();
        for _ in 0..1 + rng.below(6) {
            bytes = mutate(&mut rng, &bytes, &lines);
        }
        let text = String::from_utf8_lossy(&bytes);
        let text_lines: Vec<&str> = text.lines().collect();
        let mut last_line = 0;
        for result in parse_dump(&text) {
            match result {
                Ok(flow) => check_flow(&text, &flow),
                Err(e) => {
                    check_error(&e, &text_lines);
                    assert!(e.line > last_line, "errors come in line order");
                    last_line = e.line;
                }
            }
        }
    }
}

#[test]
fn pathological_inputs_are_linear_and_safe() {
    let deep = format!("{}x{}", "(".repeat(1_000_000), ")".repeat(1_000_000));
    let e = DatapathFlow::parse(&deep).expect_err("no fields");
    assert_eq!(e.column, deep.len() + 1);
    let open = "(".repeat(1_000_000);
    let e = DatapathFlow::parse(&open).expect_err("unbalanced");
    assert_eq!(e.expected, "a closing `)` before the end of the line");
    let quotes = "\"".repeat(999_999);
    assert!(DatapathFlow::parse(&quotes).is_err());
    let long = format!(
        "in_port(1), packets:1, bytes:1, used:never, actions:{}",
        vec!["ct(zone=1)"; 200_000].join(",")
    );
    let flow = DatapathFlow::parse(&long).expect("long action list");
    assert_eq!(flow.actions.len(), 200_000);
    for weird in [
        "",
        " ",
        ",",
        ", ",
        ":",
        "ufid:",
        "ufid:, x",
        "flow-dump from ",
        "\u{feff}x, packets:1",
    ] {
        assert!(DatapathFlow::parse(weird).is_err(), "{weird:?}");
        let _ = parse_dump(weird).count();
    }
}
