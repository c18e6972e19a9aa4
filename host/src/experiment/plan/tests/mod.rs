//! Plans accepted and refused: one full valid plan per kind, and a test for every refusal,
//! each asserting the field it names.

use std::path::PathBuf;

use super::*;
use crate::experiment::plan_error::PlanErrors;
use crate::experiment::plan_load::parse;

/// A valid plan: an MTU experiment measured with `roce perf`.
const MTU_PLAN: &str = r#"
trials = 7
order = "ABABA"

[measurement]
kind = "roce-perf"
peer = "root@gpu2"
test = "write_bw"
size = "64k"

[knob]
kind = "mtu"
interface = "ens1f0np0"
a = 1500
b = 4200

[metric]
better = "higher"
"#;

pub(super) fn plan(text: &str) -> Plan {
    parse(text).unwrap_or_else(|e| panic!("the plan should be accepted: {e}"))
}

pub(super) fn refused(text: &str) -> PlanErrors {
    match parse(text) {
        Ok(plan) => panic!("the plan should be refused: {plan:?}"),
        Err(errors) => errors,
    }
}

/// Asserts that `text` is refused with exactly one problem, under `field`, whose reason
/// contains `words`.
pub(super) fn refuses(text: &str, field: &str, words: &str) {
    let errors = refused(text);
    assert_eq!(errors.0.len(), 1, "{errors}");
    assert_eq!(errors.0[0].field, field, "{errors}");
    assert!(errors.0[0].reason.contains(words), "{errors}");
}

/// A plan with `[measurement]` and `[knob]` replaced.
pub(super) fn with(measurement: &str, knob: &str, rest: &str) -> String {
    format!("{rest}\n[measurement]\n{measurement}\n[knob]\n{knob}\n")
}

pub(super) const PERF: &str =
    "kind = \"roce-perf\"\npeer = \"gpu2\"\ntest = \"write_bw\"\nsize = 65536";
const MTU: &str = "kind = \"mtu\"\ninterface = \"eth0\"\na = 1500\nb = 9000";

#[test]
fn a_full_valid_plan_is_read_into_typed_values() {
    assert_eq!(
        plan(MTU_PLAN),
        Plan {
            measurement: Measurement::RocePerf {
                peer: "root@gpu2".to_owned(),
                test: PerfTest::WriteBw,
                size: 65_536,
                iterations: None,
                peer_address: None,
            },
            knob: Knob::Mtu {
                interface: "ens1f0np0".to_owned(),
                values: Values { a: 1500, b: 4200 },
            },
            trials: 7,
            order: Order::Ababa,
            better: Direction::Higher,
        }
    );
}

#[test]
fn defaults_are_five_trials_aba_and_the_direction_the_test_implies() {
    let p = plan(&with(PERF, MTU, ""));
    assert_eq!(p.trials, DEFAULT_TRIALS);
    assert_eq!(p.order, Order::Aba);
    assert_eq!(p.better, Direction::Higher);
    let latency = plan(&with(&PERF.replace("write_bw", "write_lat"), MTU, ""));
    assert_eq!(latency.better, Direction::Lower);
    let storage = plan(&with(
        "kind = \"storage-read\"\ndevice = \"/dev/nvme1n1\"\nsize = \"1g\"\nbs = \"128k\"",
        MTU,
        "",
    ));
    assert_eq!(
        storage.measurement,
        Measurement::StorageRead {
            device: PathBuf::from("/dev/nvme1n1"),
            size: 1 << 30,
            bs: 128 << 10,
        }
    );
    assert_eq!(storage.better, Direction::Higher);
}

#[test]
fn nccl_tests_and_command_measurements_are_read() {
    let nccl = plan(&with(
        "kind = \"nccl-tests\"\ncommand = [\"all_reduce_perf\", \"-b\", \"8\", \"-e\", \"8G\", \"-f\", \"2\", \"-g\", \"1\"]",
        MTU,
        "[metric]\nbetter = \"higher\"",
    ));
    assert_eq!(
        nccl.measurement,
        Measurement::NcclTests {
            command: [
                "all_reduce_perf",
                "-b",
                "8",
                "-e",
                "8G",
                "-f",
                "2",
                "-g",
                "1"
            ]
            .map(String::from)
            .to_vec()
        }
    );
    let command = plan(&with(
        "kind = \"command\"\nargv = [\"ib_write_lat\", \"-d\", \"mlx5_0\", \"gpu2\"]\nparser = \"perftest\"",
        MTU,
        "[metric]\nbetter = \"lower\"",
    ));
    assert_eq!(
        command.measurement,
        Measurement::Command {
            argv: ["ib_write_lat", "-d", "mlx5_0", "gpu2"]
                .map(String::from)
                .to_vec(),
            parser: OutputParser::Perftest,
        }
    );
    assert_eq!(command.better, Direction::Lower);
}

#[test]
fn every_knob_kind_is_read() {
    let knob = |text: &str| plan(&with(PERF, text, "")).knob;
    assert_eq!(
        knob("kind = \"env\"\nname = \"NCCL_IB_QPS_PER_CONNECTION\"\na = 1\nb = \"4\""),
        Knob::Env {
            name: "NCCL_IB_QPS_PER_CONNECTION".to_owned(),
            values: Values {
                a: "1".to_owned(),
                b: "4".to_owned()
            },
        }
    );
    assert_eq!(
        knob("kind = \"rdma-cm-tos\"\ndevice = \"mlx5_0\"\na = 0\nb = 106"),
        Knob::RdmaCmTos {
            device: "mlx5_0".to_owned(),
            values: Values { a: 0, b: 106 },
        }
    );
    assert_eq!(
        knob("kind = \"ring\"\ninterface = \"eth0\"\nring = \"rx\"\na = 1024\nb = 8192"),
        Knob::Ring {
            interface: "eth0".to_owned(),
            ring: RingDirection::Rx,
            values: Values { a: 1024, b: 8192 },
        }
    );
    assert_eq!(
        knob("kind = \"sysctl\"\nname = \"net.ipv4.tcp_rmem\"\na = \"4096 131072 6291456\"\nb = \"4096  131072\t33554432\""),
        Knob::Sysctl {
            name: Sysctl::Ipv4TcpRmem,
            values: Values {
                a: SysctlValue::Three([4096, 131_072, 6_291_456]),
                b: SysctlValue::Three([4096, 131_072, 33_554_432]),
            },
        }
    );
    assert_eq!(
        knob("kind = \"sysctl\"\nname = \"net.core.rmem_max\"\na = 212992\nb = \"67108864\""),
        Knob::Sysctl {
            name: Sysctl::CoreRmemMax,
            values: Values {
                a: SysctlValue::One(212_992),
                b: SysctlValue::One(67_108_864),
            },
        }
    );
}

#[test]
fn unknown_keys_are_refused_naming_them() {
    let errors = refused(&format!("repeat = 3\n{MTU_PLAN}"));
    assert_eq!(errors.0.len(), 1, "{errors}");
    assert_eq!(errors.0[0].field, "repeat", "{errors}");
    assert!(
        errors.0[0].reason.contains("unknown field `repeat`"),
        "{errors}"
    );
    let errors = refused(&MTU_PLAN.replace("b = 4200", "b = 4200\ncolour = \"red\""));
    assert_eq!(errors.0[0].field, "knob.colour", "{errors}");
    assert!(
        errors.0[0].reason.contains("unknown field `colour`"),
        "{errors}"
    );
    let errors = refused(&format!("{MTU_PLAN}better_is = \"up\"\n"));
    assert_eq!(errors.0[0].field, "metric.better_is", "{errors}");
}

#[test]
fn a_missing_table_or_kind_is_named() {
    let errors = refused("[knob]\nkind = \"mtu\"\ninterface = \"eth0\"\na = 1\nb = 2\n");
    assert_eq!(errors.0[0].field, "measurement", "{errors}");
    assert_eq!(
        errors.0[0].reason,
        "missing; the plan needs a [measurement] table"
    );
    let errors = refused(&format!("[measurement]\n{PERF}\n"));
    assert_eq!(errors.0[0].field, "knob", "{errors}");
    let errors = refused(&with(
        PERF,
        "kind = \"mtu\"\ninterface = \"eth0\"\na = 1500",
        "",
    ));
    assert_eq!(errors.0[0].field, "knob.b", "{errors}");
    let errors = refused(&with(PERF, "interface = \"eth0\"\na = 1500\nb = 9000", ""));
    assert_eq!(errors.0[0].field, "knob.kind", "{errors}");
}

#[test]
fn trials_and_order_out_of_range_are_refused() {
    for bad in ["2", "51", "-1", "0"] {
        refuses(
            &with(PERF, MTU, &format!("trials = {bad}")),
            "trials",
            "expected 3 to 50",
        );
    }
    refuses(
        &with(PERF, MTU, "trials = \"five\""),
        "trials",
        "invalid type",
    );
    refuses(
        &with(PERF, MTU, "order = \"AB\""),
        "order",
        "expected \"ABA\" or \"ABABA\"",
    );
    refuses(
        &with(PERF, MTU, "order = \"aba\""),
        "order",
        "expected \"ABA\"",
    );
}

#[test]
fn measurement_refusals_name_their_field() {
    let m = |text: &str| with(text, MTU, "");
    refuses(
        &m("kind = \"iperf\""),
        "measurement.kind",
        "expected one of roce-perf",
    );
    refuses(
        &m("kind = \"roce-perf\"\ntest = \"write_bw\"\nsize = 4096"),
        "measurement.peer",
        "missing; a roce-perf measurement needs it",
    );
    refuses(
        &m(&PERF.replace("gpu2", "-oProxyCommand=sh")),
        "measurement.peer",
        "not an ssh destination",
    );
    refuses(
        &m(&PERF.replace("gpu2", "gpu2 rm")),
        "measurement.peer",
        "not an ssh destination",
    );
    refuses(
        &m(&PERF.replace("write_bw", "atomic_bw")),
        "measurement.test",
        "expected one of tcp_bw",
    );
    refuses(
        &m(&PERF.replace("65536", "0")),
        "measurement.size",
        "greater than zero",
    );
    refuses(
        &m(&PERF.replace("65536", "\"12q\"")),
        "measurement.size",
        "unknown suffix",
    );
    refuses(
        &m(&PERF.replace("65536", "true")),
        "measurement.size",
        "is a boolean",
    );
    refuses(
        &m(&format!("{PERF}\ndevice = \"/dev/nvme0n1\"")),
        "measurement.device",
        "is not a key of a roce-perf measurement (its keys: peer, test, size, iterations, \
         peer_address)",
    );
    refuses(
        &m(&format!("{PERF}\niterations = 0")),
        "measurement.iterations",
        "is 0; expected 1 to 100000000 messages",
    );
    refuses(
        &m(&format!("{PERF}\npeer_address = \"10.0.0.300\"")),
        "measurement.peer_address",
        "expected an IPv4 or IPv6 address",
    );
    let read = |device: &str, size: &str, bs: &str| {
        m(&format!(
            "kind = \"storage-read\"\ndevice = {device:?}\nsize = {size:?}\nbs = {bs:?}"
        ))
    };
    refuses(
        &read("dev/nvme0n1", "1g", "4k"),
        "measurement.device",
        "is relative",
    );
    refuses(
        &read("/dev/../etc/passwd", "1g", "4k"),
        "measurement.device",
        "'.' or '..'",
    );
    refuses(
        &read("/dev/nvme0n1", "1g", "1000"),
        "measurement.bs",
        "power of two",
    );
    refuses(
        &read("/dev/nvme0n1", "4k", "128k"),
        "measurement.size",
        "less than one block",
    );
    refuses(
        &with(
            "kind = \"nccl-tests\"\ncommand = []",
            MTU,
            "[metric]\nbetter = \"higher\"",
        ),
        "measurement.command",
        "is empty",
    );
    refuses(
        &with(
            "kind = \"nccl-tests\"\ncommand = [\"\"]",
            MTU,
            "[metric]\nbetter = \"higher\"",
        ),
        "measurement.command",
        "empty program name",
    );
    refuses(
        &with(
            "kind = \"command\"\nargv = [\"my_bench\"]\nparser = \"json\"",
            MTU,
            "[metric]\nbetter = \"higher\"",
        ),
        "measurement.parser",
        "expected one of perftest, qperf, nccl-tests",
    );
}

#[test]
fn the_metric_direction_is_required_where_unknown_and_never_contradicted() {
    refuses(
        &with(
            "kind = \"nccl-tests\"\ncommand = [\"all_reduce_perf\"]",
            MTU,
            "",
        ),
        "metric.better",
        "missing",
    );
    refuses(
        &with(
            &PERF.replace("write_bw", "write_lat"),
            MTU,
            "[metric]\nbetter = \"higher\"",
        ),
        "metric.better",
        "ib_write_lat measures latency, which is better lower",
    );
    refuses(
        &with(PERF, MTU, "[metric]\nbetter = \"up\""),
        "metric.better",
        "expected \"higher\" or \"lower\"",
    );
}

#[test]
fn knob_refusals_name_their_field() {
    let k = |text: &str| with(PERF, text, "");
    refuses(
        &k("kind = \"ecn\"\na = 1\nb = 2"),
        "knob.kind",
        "expected one of mtu, env, rdma-cm-tos, ring, pfc, sysctl",
    );
    refuses(
        &k("kind = \"mtu\"\na = 1500\nb = 9000"),
        "knob.interface",
        "missing; a mtu knob needs it",
    );
    refuses(
        &k(&MTU.replace("eth0", "averyveryverylongname")),
        "knob.interface",
        "must be 1-15 bytes",
    );
    refuses(
        &k(&MTU.replace("eth0", "eth0/../x")),
        "knob.interface",
        "may contain only",
    );
    refuses(
        &k(&MTU.replace("eth0", "-rf")),
        "knob.interface",
        "must not start with '-'",
    );
    refuses(
        &k(&MTU.replace("1500", "67")),
        "knob.a",
        "expected an MTU from 68 to 65535",
    );
    refuses(
        &k(&MTU.replace("9000", "65536")),
        "knob.b",
        "expected an MTU from 68 to 65535",
    );
    refuses(
        &k(&MTU.replace("9000", "\"jumbo\"")),
        "knob.b",
        "expected an MTU",
    );
    refuses(
        &k(&MTU.replace("9000", "true")),
        "knob.b",
        "is a boolean; expected a number or a string",
    );
    refuses(
        &k(&MTU.replace("9000", "\"1500\"")),
        "knob.b",
        "is the same as knob.a (1500)",
    );
    refuses(
        &k(&format!("{MTU}\nname = \"NCCL_ALGO\"")),
        "knob.name",
        "is not a key of a mtu knob (its keys: interface, a, b)",
    );
    let env = |name: &str, a: &str| {
        k(&format!(
            "kind = \"env\"\nname = {name:?}\na = {a:?}\nb = \"Ring\""
        ))
    };
    refuses(
        &env("LD_PRELOAD", "Tree"),
        "knob.name",
        "not an NCCL_* or UCX_* variable",
    );
    refuses(&env("NCCL_", "Tree"), "knob.name", "not a variable name");
    refuses(&env("NCCL_algo", "Tree"), "knob.name", "upper-case");
    refuses(&env("NCCL_ALGO", ""), "knob.a", "is empty");
    refuses(&env("NCCL_ALGO", "Ring"), "knob.b", "is the same as knob.a");
    let tos = |device: &str, b: &str| {
        k(&format!(
            "kind = \"rdma-cm-tos\"\ndevice = {device:?}\na = 0\nb = {b}"
        ))
    };
    refuses(
        &tos("mlx5_0", "256"),
        "knob.b",
        "expected a ToS byte from 0 to 255",
    );
    refuses(&tos("mlx5/0", "106"), "knob.device", "may contain only");
    let ring = |which: &str, a: &str| {
        k(&format!(
            "kind = \"ring\"\ninterface = \"eth0\"\nring = {which:?}\na = {a}\nb = 4096"
        ))
    };
    refuses(
        &ring("both", "1024"),
        "knob.ring",
        "expected \"rx\" or \"tx\"",
    );
    refuses(&ring("tx", "0"), "knob.a", "expected a ring size from 1");
    refuses(&ring("tx", "-5"), "knob.a", "expected a ring size");
    let sysctl = |name: &str, a: &str| {
        k(&format!(
            "kind = \"sysctl\"\nname = {name:?}\na = {a:?}\nb = \"4096 65536 8388608\""
        ))
    };
    refuses(
        &sysctl("net.ipv4.ip_forward", "1"),
        "knob.name",
        "not on the allow-list",
    );
    refuses(
        &sysctl("net.ipv4.tcp_wmem", "4096 65536"),
        "knob.a",
        "takes three integers",
    );
    refuses(
        &sysctl("net.ipv4.tcp_wmem", "9 8 7"),
        "knob.a",
        "min <= default <= max",
    );
    refuses(
        &sysctl("net.ipv4.tcp_wmem", "4096 x 8"),
        "knob.a",
        "expected a positive integer",
    );
    refuses(
        &sysctl("net.ipv4.tcp_wmem", "4096 65536 3000000000"),
        "knob.a",
        "from 1 to 2147483647",
    );
    let single = k("kind = \"sysctl\"\nname = \"net.core.wmem_max\"\na = \"4096 4096\"\nb = 8192");
    refuses(&single, "knob.a", "net.core.wmem_max takes one integer");
}

#[test]
fn every_problem_of_a_plan_is_reported_at_once() {
    let errors = refused(&with(
        "kind = \"roce-perf\"\npeer = \"-x\"\ntest = \"nope\"\nsize = 0",
        "kind = \"mtu\"\ninterface = \"\"\na = 1\nb = 1",
        "trials = 1\norder = \"BAB\"",
    ));
    for field in [
        "trials",
        "order",
        "measurement.peer",
        "measurement.test",
        "measurement.size",
        "knob.interface",
        "knob.a",
        "knob.b",
    ] {
        assert!(errors.names(field), "{field} not named: {errors}");
    }
    let text = errors.to_string();
    assert!(
        text.starts_with(&format!(
            "{} problems in the experiment plan\n  ",
            errors.0.len()
        )),
        "{text}"
    );
    assert!(
        text.contains("\n  trials: is 1; expected 3 to 50"),
        "{text}"
    );
}

#[test]
fn a_toml_syntax_error_is_located() {
    let errors = refused("trials = \n");
    assert_eq!(errors.0.len(), 1, "{errors}");
    assert!(errors.0[0].reason.contains("(line 1, column"), "{errors}");
}

#[test]
fn a_roce_perf_plan_may_set_its_iterations_and_the_peer_address() {
    let text = MTU_PLAN.replace(
        "size = \"64k\"",
        "size = \"64k\"\niterations = 100\npeer_address = \"10.10.0.1\"",
    );
    match plan(&text).measurement {
        Measurement::RocePerf {
            iterations,
            peer_address,
            ..
        } => {
            assert_eq!(iterations, Some(100));
            assert_eq!(peer_address, Some("10.10.0.1".parse().expect("an address")));
        }
        other => panic!("{other:?}"),
    }
}

mod knob;
