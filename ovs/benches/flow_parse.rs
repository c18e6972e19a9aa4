//! Benchmark: the datapath flow-dump parser against OVS's own Python parser
//! (`ovs.flow.odp.ODPFlow`, PyPI package `ovs`) on the same 100,000-flow dump.
//!
//! Run with `cargo bench -p dpu-ovs --bench flow_parse`. The Python side needs an
//! interpreter with `ovs[flow]` installed, named by `DPU_BENCH_PYTHON`, e.g.
//! `python3 -m venv /tmp/ovs-venv && /tmp/ovs-venv/bin/pip install 'ovs[flow]'` then
//! `DPU_BENCH_PYTHON=/tmp/ovs-venv/bin/python cargo bench -p dpu-ovs --bench flow_parse`.
//! Knobs: `DPU_BENCH_FLOWS` (100000), `DPU_BENCH_RUNS` (9), `DPU_BENCH_PY_RUNS` (3).
//! Only the parse is timed on both sides: not file reading, not interpreter start.
//! The borrowed row, which carries the 1 GB/s target, parses into one reused record
//! (`DumpParser::next_into`: no allocation per flow); `parse_dump_all` keeps every flow,
//! as Python's list does, and the speedup over Python is taken against it.
//! Without `--bench` (as `cargo test --benches` runs it) it does a small smoke run only.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use dpu_ovs::flow::{parse_dump, parse_dump_all, DatapathFlow, Offloaded};

/// The ratio over Python the parser is built to reach.
const TARGET_RATIO: f64 = 50.0;

/// The throughput the borrowed parse of a whole dump is built to reach, in MB/s.
const TARGET_MB_PER_S: f64 = 1000.0;

/// Times each Python run; prints `key value...` lines the benchmark reads back.
const PY_SCRIPT: &str = r#"
import sys, time
try:
    from ovs.flow.odp import ODPFlow
except Exception as e:
    print("error cannot import ovs.flow.odp (pip install 'ovs[flow]'): %s" % e)
    sys.exit(0)
path, runs = sys.argv[1], int(sys.argv[2])
with open(path) as f:
    lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("flow-dump from ")]
times = []
for _ in range(runs):
    t = time.perf_counter()
    flows = [ODPFlow(l) for l in lines]
    times.append(time.perf_counter() - t)
print("times " + " ".join("%.6f" % t for t in times))
print("flows %d" % len(flows))
print("packets %d" % sum(f.info["packets"] for f in flows))
print("offloaded %d" % sum(1 for f in flows if f.info.get("offloaded") == "yes"))
"#;

/// splitmix64, so the generated dump is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn mac(r: &mut Rng) -> String {
    let v = r.next();
    format!(
        "0c:42:a1:{:02x}:{:02x}:{:02x}",
        (v >> 16) as u8,
        (v >> 8) as u8,
        v as u8
    )
}

fn ip(r: &mut Rng) -> String {
    let v = r.next();
    format!(
        "10.{}.{}.{}",
        (v >> 16) as u8,
        (v >> 8) as u8,
        1 + (v as u8 % 254)
    )
}

fn ufid(r: &mut Rng) -> String {
    let (a, b) = (r.next(), r.next());
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:04x}{:08x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        (b >> 32) & 0xffff,
        b & 0xffff_ffff
    )
}

const PORTS: [&str; 6] = ["p0", "pf0hpf", "pf0vf0", "pf0vf1", "pf0vf2", "en3f0pf0sf0"];

/// The fixed verbose key prefix OVS prints with `-m` on the kernel datapath.
const META: &str = "skb_priority(0/0),skb_mark(0/0)";

/// One flow line from one of six realistic templates (tc offloaded, tc software-only
/// conntrack, software with TCP flags, recirculated conntrack, VLAN, Geneve tunnel).
fn flow_line(r: &mut Rng) -> String {
    let id = ufid(r);
    let inp = PORTS[r.below(6) as usize];
    let out = PORTS[r.below(6) as usize];
    let (src_mac, dst_mac, src, dst) = (mac(r), mac(r), ip(r), ip(r));
    let packets = r.below(10_000_000);
    let bytes = packets * (64 + r.below(1400));
    let used = format!("{}.{:03}s", r.below(10), r.below(1000));
    let ct0 = "ct_state(0/0),ct_zone(0/0),ct_mark(0/0),ct_label(0/0)";
    let tail = "packet_type(ns=0/0,id=0/0)";
    match r.below(10) {
        0..=3 => format!(
            "ufid:{id}, {META},{ct0},recirc_id(0),dp_hash(0/0),in_port({inp}),{tail},\
             eth(src={src_mac},dst={dst_mac}),eth_type(0x0800),\
             ipv4(src={src}/0.0.0.0,dst={dst}/0.0.0.0,proto=6/0,tos=0/0,ttl=0/0,frag=no), \
             packets:{packets}, bytes:{bytes}, used:{used}, offloaded:yes, dp:tc, actions:{out}"
        ),
        4 => format!(
            "ufid:{id}, {META},ct_state(-new-est-rel-rpl-inv-trk),ct_zone(0/0),ct_mark(0/0),\
             ct_label(0/0),recirc_id(0),dp_hash(0/0),in_port({inp}),{tail},\
             eth(src={src_mac},dst={dst_mac}),eth_type(0x0800),\
             ipv4(src={src},dst={dst},proto=6,tos=0/0,ttl=0/0,frag=no),tcp(src=0/0,dst=80), \
             packets:0, bytes:0, used:never, dp:tc, \
             actions:ct(commit,zone=64000,mark=0x1/0x1,nat(src={src})),recirc(0x{:x})",
            1 + r.below(255)
        ),
        5 | 6 => format!(
            "ufid:{id}, {META},{ct0},recirc_id(0),dp_hash(0/0),in_port({inp}),{tail},\
             eth(src={src_mac},dst={dst_mac}),eth_type(0x0800),\
             ipv4(src={src},dst={dst},proto=6,tos=0/0x3,ttl=64/0,frag=no),\
             tcp(src=0/0,dst={}),tcp_flags(0/0), packets:{packets}, bytes:{bytes}, \
             used:{used}, flags:SFP., dp:ovs, actions:{out},{}",
            r.below(65536),
            PORTS[r.below(6) as usize]
        ),
        7 => format!(
            "ufid:{id}, {META},ct_state(+est+trk),ct_zone(0xfa00),ct_mark(0x1),ct_label(0/0),\
             recirc_id(0x{:x}),dp_hash(0/0),in_port({inp}),{tail},\
             eth(src={src_mac},dst={dst_mac}),eth_type(0x0800),\
             ipv4(src={src},dst={dst},proto=6,tos=0/0,ttl=0/0,frag=no),tcp(src=0/0,dst=80), \
             packets:{packets}, bytes:{bytes}, used:{used}, offloaded:yes, dp:tc, actions:{out}",
            1 + r.below(255)
        ),
        8 => format!(
            "ufid:{id}, {META},{ct0},recirc_id(0),dp_hash(0/0),in_port({inp}),{tail},\
             eth(src={src_mac},dst={dst_mac}),eth_type(0x8100),vlan(vid={},pcp=0),\
             encap(eth_type(0x0800),ipv4(src={src},dst={dst},proto=17,tos=0/0,ttl=0/0,frag=no),\
             udp(src=0/0,dst=4791)), packets:{packets}, bytes:{bytes}, used:{used}, \
             offloaded:yes, dp:tc, actions:pop_vlan,{out}",
            1 + r.below(4094)
        ),
        _ => format!(
            "ufid:{id}, {META},tunnel(tun_id=0x{:x},src=172.16.0.2,dst=172.16.0.1,ttl=64/0,\
             tp_src=59246/0,tp_dst=6081/0,flags(-df+csum+key)),{ct0},recirc_id(0),dp_hash(0/0),\
             in_port(genev_sys_6081),{tail},eth(src=00:00:00:00:00:00/00:00:00:00:00:00,\
             dst={dst_mac}),eth_type(0x0800),\
             ipv4(src={src}/0.0.0.0,dst={dst},proto=6/0,tos=0/0x3,ttl=64/0,frag=no), \
             packets:{packets}, bytes:{bytes}, used:{used}, offloaded:yes, dp:tc, \
             actions:set(tunnel(tun_id=0x{:x},dst=172.16.0.3,ttl=64,tp_dst=6081,flags(df|key))),\
             {out}",
            r.below(1 << 24),
            r.below(1 << 24)
        ),
    }
}

fn generate(flows: usize) -> String {
    let mut r = Rng(0x5eed_f10f_d0d0_0001);
    let mut text = String::with_capacity(flows * 520);
    for _ in 0..flows {
        text.push_str(&flow_line(&mut r));
        text.push('\n');
    }
    text
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// Summary both parsers must agree on: flows, total packets, `offloaded:yes` flows.
fn summary(flows: &[DatapathFlow<'_>]) -> (usize, u64, usize) {
    let packets = flows.iter().map(|f| f.packets).sum();
    let offloaded = flows
        .iter()
        .filter(|f| f.offloaded == Offloaded::Yes)
        .count();
    (flows.len(), packets, offloaded)
}

/// Parses every flow into one reused record (the borrowed path that allocates nothing
/// per flow) and sums the packets, so the parse cannot be optimised away.
fn parse_streaming(text: &str) -> u64 {
    let (mut parser, mut flow) = (parse_dump(text), DatapathFlow::default());
    let mut packets = 0;
    while let Some(parsed) = parser.next_into(&mut flow) {
        if parsed.is_ok() {
            packets += flow.packets;
        }
    }
    packets
}

/// Parses (into one reused record) and then walks every key sub-field and action
/// argument, roughly the decomposition Python's parser does eagerly.
fn parse_and_walk(text: &str) -> usize {
    let (mut parser, mut flow) = (parse_dump(text), DatapathFlow::default());
    let mut n = 0;
    while let Some(parsed) = parser.next_into(&mut flow) {
        if parsed.is_err() {
            continue;
        }
        for field in &flow.key {
            n += field.sub_fields().count();
        }
        n += flow.actions.iter().filter_map(|a| a.args()).count();
    }
    n
}

fn time_runs<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    let times = (0..runs)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(f());
            start.elapsed()
        })
        .collect();
    median(times)
}

struct PyResult {
    median: Duration,
    runs: usize,
    summary: (usize, u64, usize),
}

fn run_python(python: &Path, dump: &Path, runs: usize) -> Result<PyResult, String> {
    let out = Command::new(python)
        .arg("-c")
        .arg(PY_SCRIPT)
        .arg(dump)
        .arg(runs.to_string())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("python failed ({}): {}", out.status, err.trim()));
    }
    let mut times = Vec::new();
    let (mut flows, mut packets, mut offloaded) = (0, 0, 0);
    for line in stdout.lines() {
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "error" => return Err(rest.to_owned()),
            "times" => {
                times = rest
                    .split(' ')
                    .filter_map(|t| t.parse::<f64>().ok())
                    .map(Duration::from_secs_f64)
                    .collect();
            }
            "flows" => flows = rest.parse().unwrap_or(0),
            "packets" => packets = rest.parse().unwrap_or(0),
            "offloaded" => offloaded = rest.parse().unwrap_or(0),
            _ => {}
        }
    }
    if times.is_empty() {
        return Err(format!("no timings from python: {}", stdout.trim()));
    }
    Ok(PyResult {
        runs: times.len(),
        median: median(times),
        summary: (flows, packets, offloaded),
    })
}

fn temp_dump_path() -> PathBuf {
    std::env::temp_dir().join(format!("dpu-flow-bench-{}.txt", std::process::id()))
}

fn main() -> io::Result<()> {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let mut out = io::stdout().lock();
    let (n_flows, runs) = if bench_mode {
        (
            env_usize("DPU_BENCH_FLOWS", 100_000),
            env_usize("DPU_BENCH_RUNS", 9),
        )
    } else {
        writeln!(
            out,
            "flow_parse: smoke run (use `cargo bench` for the benchmark)"
        )?;
        (2_000, 1)
    };

    let text = generate(n_flows);
    let mb = text.len() as f64 / 1e6;
    let flows = parse_dump_all(&text).map_err(io::Error::other)?;
    let ours_summary = summary(&flows);
    drop(flows);
    writeln!(
        out,
        "dump: {n_flows} flows, {mb:.1} MB, {} offloaded:yes, median of {runs} runs",
        ours_summary.2
    )?;

    let streamed = time_runs(runs, || parse_streaming(&text));
    let kept = time_runs(runs, || parse_dump_all(&text).map(|v| v.len()));
    let owned = time_runs(runs, || {
        parse_dump(&text)
            .filter_map(Result::ok)
            .map(DatapathFlow::into_owned)
            .collect::<Vec<_>>()
    });
    let walked = time_runs(runs, || parse_and_walk(&text));
    let rate = |d: Duration| (n_flows as f64 / d.as_secs_f64(), mb / d.as_secs_f64());
    for (name, d, has_target) in [
        ("rust parse (borrowed)", streamed, true),
        ("rust parse_dump_all (keeps all)", kept, false),
        ("rust parse + into_owned", owned, false),
        ("rust parse + walk sub-fields", walked, false),
    ] {
        let (lps, mbps) = rate(d);
        let target = if has_target {
            let verdict = if mbps >= TARGET_MB_PER_S {
                "met"
            } else {
                "NOT MET"
            };
            format!("  [target >= {TARGET_MB_PER_S:.0} MB/s: {verdict}]")
        } else {
            String::new()
        };
        writeln!(
            out,
            "{name:<30} {:>9.2} ms  {:>12.0} lines/s  {:>8.1} MB/s  {:>6.3} us/flow{target}",
            d.as_secs_f64() * 1e3,
            lps,
            mbps,
            d.as_secs_f64() * 1e6 / n_flows as f64
        )?;
    }

    if !bench_mode {
        writeln!(out, "python comparison: skipped in the smoke run")?;
        return Ok(());
    }
    let Some(python) = std::env::var_os("DPU_BENCH_PYTHON").map(PathBuf::from) else {
        writeln!(
            out,
            "python comparison: skipped: DPU_BENCH_PYTHON is not set (an interpreter with \
             `pip install 'ovs[flow]'`)"
        )?;
        return Ok(());
    };
    let path = temp_dump_path();
    std::fs::write(&path, &text)?;
    let py_runs = env_usize("DPU_BENCH_PY_RUNS", 3);
    let result = run_python(&python, &path, py_runs);
    let _ = std::fs::remove_file(&path);
    let py = match result {
        Ok(py) => py,
        Err(why) => {
            writeln!(out, "python comparison: skipped: {why}")?;
            return Ok(());
        }
    };
    let (lps, mbps) = rate(py.median);
    writeln!(
        out,
        "{:<30} {:>9.2} ms  {:>12.0} lines/s  {:>8.1} MB/s  {:>6.3} us/flow  (median of {})",
        "python ovs.flow.odp.ODPFlow",
        py.median.as_secs_f64() * 1e3,
        lps,
        mbps,
        py.median.as_secs_f64() * 1e6 / n_flows as f64,
        py.runs
    )?;
    let agree = if py.summary == ours_summary {
        "agree"
    } else {
        "DISAGREE"
    };
    writeln!(
        out,
        "cross-check (flows, packets, offloaded:yes): rust {ours_summary:?}, python {:?}: {agree}",
        py.summary
    )?;
    // Python keeps every flow: the ratio is taken against the Rust parse that does too.
    let ratio = py.median.as_secs_f64() / kept.as_secs_f64();
    let walked_ratio = py.median.as_secs_f64() / walked.as_secs_f64();
    let verdict = if ratio >= TARGET_RATIO {
        "met"
    } else {
        "NOT MET"
    };
    writeln!(
        out,
        "speedup: {ratio:.0}x (parse_dump_all), {walked_ratio:.0}x (parse + walk); \
         target >= {TARGET_RATIO:.0}x: {verdict}"
    )?;
    Ok(())
}
