//! The `ring` and `pfc` knobs of a plan: accepted into typed values, and every refusal
//! naming its field (the plan is refused whole, before anything on the machine changes).

use super::super::tests::{plan, refused, refuses, with, PERF};
use super::super::*;

fn knob(text: &str) -> Knob {
    plan(&with(PERF, text, "")).knob
}

#[test]
fn a_pfc_knob_takes_lists_of_priorities() {
    assert_eq!(
        knob("kind = \"pfc\"\ninterface = \"p0\"\na = []\nb = [4, 3]"),
        Knob::Pfc {
            interface: "p0".to_owned(),
            values: Values {
                a: PfcPriorities(0),
                b: PfcPriorities(0b1_1000),
            },
        }
    );
    // The JSON form lists the priorities, as the plan did.
    let json = serde_json::to_value(knob(
        "kind = \"pfc\"\ninterface = \"p0\"\na = [3]\nb = [3, 5]",
    ))
    .expect("serialises");
    assert_eq!(json["values"]["b"], serde_json::json!([3, 5]));
    assert_eq!(json["kind"], "pfc");
}

#[test]
fn pfc_refusals_name_their_field() {
    let k = |text: &str| with(PERF, text, "");
    refuses(
        &k("kind = \"pfc\"\ninterface = \"p0\"\na = 3\nb = [3]"),
        "knob.a",
        "is a integer; expected a list of priorities 0 to 7",
    );
    refuses(
        &k("kind = \"pfc\"\ninterface = \"p0\"\na = []\nb = [8]"),
        "knob.b",
        "holds priority 8; expected 0 to 7",
    );
    refuses(
        &k("kind = \"pfc\"\ninterface = \"p0\"\na = []\nb = [-1]"),
        "knob.b",
        "holds priority -1",
    );
    refuses(
        &k("kind = \"pfc\"\ninterface = \"p0\"\na = [3, 3]\nb = []"),
        "knob.a",
        "lists priority 3 twice",
    );
    refuses(
        &k("kind = \"pfc\"\ninterface = \"p0\"\na = [\"3\"]\nb = []"),
        "knob.a",
        "holds a string; priorities are integers 0 to 7",
    );
    refuses(
        &k("kind = \"pfc\"\ninterface = \"p0\"\na = [4, 3]\nb = [3, 4]"),
        "knob.b",
        "is the same as knob.a ([3, 4])",
    );
    refuses(
        &k("kind = \"pfc\"\na = []\nb = [3]"),
        "knob.interface",
        "missing; a pfc knob needs it",
    );
    refuses(
        &k("kind = \"pfc\"\ninterface = \"p0/x\"\na = []\nb = [3]"),
        "knob.interface",
        "may contain only",
    );
    refuses(
        &k("kind = \"pfc\"\ninterface = \"p0\"\nring = \"rx\"\na = []\nb = [3]"),
        "knob.ring",
        "is not a key of a pfc knob (its keys: interface, a, b)",
    );
}

#[test]
fn every_pfc_problem_is_reported_at_once() {
    let errors = refused(&with(PERF, "kind = \"pfc\"\na = [9]\nb = \"3\"", ""));
    let fields: Vec<&str> = errors.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["knob.interface", "knob.a", "knob.b"], "{errors}");
}

#[test]
fn ring_refusals_name_their_field() {
    let k = |text: &str| with(PERF, text, "");
    refuses(
        &k("kind = \"ring\"\ninterface = \"eth0\"\nring = \"rx\"\na = 0\nb = 512"),
        "knob.a",
        "expected a ring size from 1 to 4294967295",
    );
    refuses(
        &k("kind = \"ring\"\ninterface = \"eth0\"\nring = \"both\"\na = 256\nb = 512"),
        "knob.ring",
        "is \"both\"; expected \"rx\" or \"tx\"",
    );
    refuses(
        &k("kind = \"ring\"\ninterface = \"eth0\"\na = 256\nb = 512"),
        "knob.ring",
        "missing; a ring knob needs it",
    );
    refuses(
        &k("kind = \"ring\"\ninterface = \"eth0\"\nring = \"tx\"\na = 256\nb = [512]"),
        "knob.b",
        "is a array; expected a number or a string",
    );
    refuses(
        &k("kind = \"ring\"\ninterface = \"eth0\"\nring = \"tx\"\na = 256\nb = \"256\""),
        "knob.b",
        "is the same as knob.a (256)",
    );
}
