//! `dpuctl roce perf` as a library call: parameters checked up front, both endpoints
//! resolved, every run made in order with its counter evidence ([`super::perf`]), and the
//! sweep's report. Progress is told to the caller's [`Observer`] as [`SweepEvent`]s; nothing
//! prints.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use dpu_probe::SysRoot;

use super::endpoint::{self, Endpoint, Pin};
use super::peer::{PeerError, SshPeer};
use super::perf::{
    run_one, sweep_verdict, Background, PerfPlan, PerfReport, PerfRun, PerfTest, IDLE_WINDOW,
};
use super::rdma_evidence::read_port;
use crate::observe::Observer;
use crate::param::{Field, ParamError};
use crate::remote::ssh::SshError;

/// `dpuctl roce perf` as parameters (the flags of the same names).
#[derive(Debug, Clone)]
pub struct PerfParams {
    /// The peer host (ssh destination).
    pub peer: String,
    /// Test names; empty: the default set.
    pub tests: Vec<String>,
    /// Message sizes of the bandwidth tests.
    pub sizes: Vec<u64>,
    /// Message sizes of the latency tests.
    pub lat_sizes: Vec<u64>,
    /// perftest `-n`.
    pub iterations: u64,
    /// qperf `-t`.
    pub tcp_seconds: u32,
    /// The local RDMA device; default: the first with an IPv4 RoCE v2 GID.
    pub device: Option<String>,
    /// Its port.
    pub ib_port: Option<u32>,
    /// Its GID index.
    pub gid_index: Option<u32>,
    /// The peer's RDMA device.
    pub peer_device: Option<String>,
    /// Its port.
    pub peer_ib_port: Option<u32>,
    /// Its GID index.
    pub peer_gid_index: Option<u32>,
    /// The address the clients connect to; default: the peer's, resolved over ssh.
    pub peer_address: Option<IpAddr>,
    /// The ssh program.
    pub ssh: PathBuf,
    /// The ssh port.
    pub ssh_port: Option<u16>,
    /// The ssh identity file.
    pub ssh_identity: Option<PathBuf>,
    /// The first server port.
    pub base_port: u16,
    /// Per-run limit, seconds.
    pub run_timeout: u64,
}

/// What a sweep tells its caller as it goes.
#[derive(Debug)]
pub enum SweepEvent<'a> {
    /// Both endpoints are known.
    Resolved {
        /// The local endpoint.
        local: &'a Endpoint,
        /// The address the clients connect to.
        peer_address: IpAddr,
        /// The peer endpoint.
        remote: &'a Endpoint,
    },
    /// Run `index` of `total` starts.
    RunStarted {
        /// 1-based.
        index: usize,
        /// Runs in the sweep.
        total: usize,
        /// The test.
        test: PerfTest,
        /// Its message size.
        size: u64,
    },
    /// The run just started has ended.
    RunDone(&'a PerfRun),
}

/// Why a sweep stopped before its first run (a run that fails is a row of the report, not
/// an error): a parameter, the peer's name, or an endpoint that could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A parameter that cannot be run, named by its field.
    #[error("{0}")]
    Param(#[from] ParamError),
    /// The peer is no ssh destination.
    #[error("{0}")]
    Peer(#[from] PeerError),
    /// No local RDMA endpoint fits (the text says which and why).
    #[error("{0}")]
    LocalEndpoint(String),
    /// The peer's GID table could not be read over ssh.
    #[error("reading the peer's GID table over ssh")]
    PeerGids(#[source] PeerError),
    /// No endpoint in the peer's GID table fits (the text says which and why).
    #[error("{0}")]
    PeerEndpoint(String),
}

/// Checks the parameters before anything runs, so a typo never costs a half-finished sweep.
fn tests_from(args: &PerfParams) -> Result<Vec<PerfTest>, ParamError> {
    if args.tests.is_empty() {
        return Ok(PerfTest::DEFAULT.to_vec());
    }
    let mut tests = Vec::new();
    for name in &args.tests {
        let test = PerfTest::parse(name).ok_or_else(|| {
            let known: Vec<&str> = PerfTest::ALL.iter().map(|t| t.name()).collect();
            ParamError::new(Field::Tests)
                .field(Field::Tests)
                .text(format!(
                    ": unknown test {name:?} (known: {})",
                    known.join(", ")
                ))
        })?;
        if !tests.contains(&test) {
            tests.push(test);
        }
    }
    Ok(tests)
}

fn validate(args: &PerfParams) -> Result<(), ParamError> {
    let said = |field: Field, text: &str| ParamError::new(field).field(field).text(text);
    for (field, sizes) in [
        (Field::Sizes, &args.sizes),
        (Field::LatencySizes, &args.lat_sizes),
    ] {
        if sizes.is_empty() || sizes.iter().any(|&s| s == 0 || s > 1 << 30) {
            return Err(said(field, ": each size must be 1 byte .. 1 GiB"));
        }
    }
    if args.iterations == 0 || args.iterations > 100_000_000 {
        return Err(said(Field::Iterations, " must be 1 .. 100000000"));
    }
    if args.tcp_seconds == 0 || args.tcp_seconds > 3600 {
        return Err(said(Field::TcpSeconds, " must be 1 .. 3600"));
    }
    if args.run_timeout == 0 {
        return Err(said(Field::RunTimeout, " must be positive"));
    }
    for (field, dev) in [
        (Field::Device, &args.device),
        (Field::PeerDevice, &args.peer_device),
    ] {
        if let Some(d) = dev {
            if d.is_empty()
                || d.len() > 64
                || !d
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
            {
                return Err(said(field, &format!(" {d:?} is not an RDMA device name")));
            }
        }
    }
    Ok(())
}

/// The parameters checked before anything runs (so a typo never costs a half-finished
/// sweep): the tests they name, in order.
pub fn check(args: &PerfParams) -> Result<Vec<PerfTest>, ParamError> {
    let tests = tests_from(args)?;
    validate(args)?;
    Ok(tests)
}

/// Everything a run needs once both ends are known: the peer with its shared ssh
/// connection (held for as long as this lives: one handshake instead of one per run) and
/// the plan with both endpoints and the local port's background.
#[derive(Debug)]
pub struct Prepared {
    /// How the peer is reached.
    pub peer: SshPeer,
    /// Both endpoints, the peer's address and the background every run is net of.
    pub plan: PerfPlan,
    _master: Option<crate::remote::ssh::ControlMaster>,
}

/// Resolves both endpoints of `tests` (checked by [`check`]) and measures the local port's
/// background over [`IDLE_WINDOW`], telling `observer` the endpoints.
pub fn prepare(
    root: &SysRoot,
    args: &PerfParams,
    tests: Vec<PerfTest>,
    observer: &mut dyn for<'a> Observer<SweepEvent<'a>>,
) -> Result<Prepared, SweepError> {
    let mut peer = SshPeer::new(
        &args.peer,
        args.ssh.clone(),
        args.ssh_port,
        args.ssh_identity.clone(),
    )
    .map_err(|e| match e {
        PeerError::Ssh(SshError::BadDestination(_)) => SweepError::from(
            ParamError::new(Field::Peer)
                .field(Field::Peer)
                .text(format!(" {e}")),
        ),
        other => other.into(),
    })?;
    let master = peer.start_master(Duration::from_secs(20));
    let local = endpoint::local(
        root,
        &Pin {
            ibdev: args.device.clone(),
            port: args.ib_port,
            gid_index: args.gid_index,
        },
    )
    .map_err(SweepError::LocalEndpoint)?;
    let peer_address = match args.peer_address {
        Some(a) => a,
        None => peer.resolve_address().ok_or_else(|| {
            ParamError::new(Field::PeerAddress)
                .text(format!("cannot resolve {}: pass ", args.peer))
                .field(Field::PeerAddress)
        })?,
    };
    let listing = peer
        .run(endpoint::PEER_GID_LISTING, Duration::from_secs(60))
        .map_err(SweepError::PeerGids)?;
    let remote = endpoint::peer(
        &listing,
        &Pin {
            ibdev: args.peer_device.clone(),
            port: args.peer_ib_port,
            gid_index: args.peer_gid_index,
        },
        Some(peer_address),
        &format!("peer {}", args.peer),
    )
    .map_err(SweepError::PeerEndpoint)?;
    observer.event(&SweepEvent::Resolved {
        local: &local,
        peer_address,
        remote: &remote,
    });
    // The local port's own traffic while nothing runs, which every run is net of.
    let quiet_start = read_port(root, &local);
    let window = std::time::Instant::now();
    std::thread::sleep(IDLE_WINDOW);
    let quiet_end = read_port(root, &local);
    let background = Background::measure(&quiet_start, &quiet_end, window.elapsed());
    Ok(Prepared {
        peer,
        plan: PerfPlan {
            tests,
            iterations: args.iterations,
            tcp_seconds: args.tcp_seconds,
            base_port: args.base_port,
            run_timeout: Duration::from_secs(args.run_timeout),
            local,
            peer: remote,
            peer_address,
            background,
        },
        _master: master,
    })
}

/// Runs the sweep: checks the parameters ([`check`]), resolves both endpoints
/// ([`prepare`]), then makes every run in order, telling `observer` as it goes.
pub fn run(
    root: &SysRoot,
    args: &PerfParams,
    observer: &mut dyn for<'a> Observer<SweepEvent<'a>>,
) -> Result<PerfReport, SweepError> {
    let tests = check(args)?;
    let sizes_of = |t: &PerfTest| {
        if t.is_bandwidth() {
            &args.sizes
        } else {
            &args.lat_sizes
        }
    };
    let runs_total: usize = tests.iter().map(|t| sizes_of(t).len()).sum();
    let last_port = usize::from(args.base_port) + runs_total;
    if args.base_port < 1024 || last_port > usize::from(u16::MAX) {
        return Err(ParamError::new(Field::BasePort)
            .field(Field::BasePort)
            .text(format!(
                " {}: the {runs_total} runs need ports {} .. {last_port} within 1024 .. 65535",
                args.base_port, args.base_port
            ))
            .into());
    }
    let Prepared {
        peer,
        plan,
        _master,
    } = prepare(root, args, tests, observer)?;
    let mut runs = Vec::new();
    for test in &plan.tests {
        for &size in sizes_of(test) {
            let n = runs.len();
            let port = plan
                .base_port
                .saturating_add(u16::try_from(n).unwrap_or(u16::MAX));
            observer.event(&SweepEvent::RunStarted {
                index: n + 1,
                total: runs_total,
                test: *test,
                size,
            });
            let run = run_one(root, &peer, &plan, *test, size, port);
            observer.event(&SweepEvent::RunDone(&run));
            runs.push(run);
        }
    }
    Ok(PerfReport {
        peer: args.peer.clone(),
        peer_address: plan.peer_address.to_string(),
        local: plan.local,
        remote: plan.peer,
        verdict: sweep_verdict(&runs),
        background: plan.background,
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::Ignore;

    fn params() -> PerfParams {
        PerfParams {
            peer: "gpu-02".to_owned(),
            tests: Vec::new(),
            sizes: vec![65536],
            lat_sizes: vec![2],
            iterations: 1000,
            tcp_seconds: 2,
            device: None,
            ib_port: None,
            gid_index: None,
            peer_device: None,
            peer_ib_port: None,
            peer_gid_index: None,
            peer_address: None,
            ssh: PathBuf::from("/nonexistent-ssh"),
            ssh_port: None,
            ssh_identity: None,
            base_port: 18_515,
            run_timeout: 300,
        }
    }

    /// A change that spoils the parameters, the field it spoils, and how the error begins.
    type Spoiled = (fn(&mut PerfParams), Field, &'static str);

    #[test]
    fn each_bad_parameter_is_refused_by_its_field_in_words_before_anything_runs() {
        let cases: [Spoiled; 7] = [
            (
                |p| p.tests = vec!["rc_bw".into()],
                Field::Tests,
                "tests: unknown test \"rc_bw\"",
            ),
            (|p| p.sizes = vec![0], Field::Sizes, "sizes: each size"),
            (
                |p| p.lat_sizes.clear(),
                Field::LatencySizes,
                "latency sizes: each size",
            ),
            (
                |p| p.iterations = 0,
                Field::Iterations,
                "iterations must be",
            ),
            (
                |p| p.tcp_seconds = 0,
                Field::TcpSeconds,
                "TCP seconds must be",
            ),
            (
                |p| p.run_timeout = 0,
                Field::RunTimeout,
                "run timeout must be",
            ),
            (
                |p| p.peer_device = Some("a;b".into()),
                Field::PeerDevice,
                "peer device \"a;b\"",
            ),
        ];
        // Control: the parameters unchanged pass the check.
        assert_eq!(
            check(&params()).expect("good").len(),
            PerfTest::DEFAULT.len()
        );
        for (spoil, field, text) in cases {
            let mut p = params();
            spoil(&mut p);
            let err = check(&p).expect_err(text);
            assert_eq!(err.about(), field, "{err}");
            assert!(err.to_string().starts_with(text), "{err}");
            assert!(!err.to_string().contains("--"), "{err}");
        }
    }

    #[test]
    fn ports_past_the_range_are_refused_before_ssh_is_tried() {
        let root = SysRoot::new("/nonexistent-sys-root");
        let mut p = params();
        p.base_port = 65_530;
        let err = run(&root, &p, &mut Ignore).expect_err("ports past 65535");
        let SweepError::Param(param) = &err else {
            panic!("{err:?}");
        };
        assert_eq!(param.about(), Field::BasePort);
        assert!(
            err.to_string().starts_with("base port 65530: the "),
            "{err}"
        );
        // Control: in range, the sweep gets as far as the peer's name and the local
        // endpoint (none under an empty sys root), so the port check alone refused above.
        p.base_port = 18_515;
        let err = run(&root, &p, &mut Ignore).expect_err("no RDMA device");
        assert!(matches!(err, SweepError::LocalEndpoint(_)), "{err:?}");
    }
}
