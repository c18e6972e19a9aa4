//! libFuzzer target: any bytes as a flow dump. The parser must not panic, every error must
//! name its own line, and every flow that parses must print back to an equal flow.
#![no_main]

use dpu_ovs::flow::{parse_dump, DatapathFlow, DumpType};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.lines().collect();
    for result in parse_dump(&text) {
        match result {
            Ok(flow) => {
                let printed = flow.to_string();
                let mut again = match DatapathFlow::parse(&printed) {
                    Ok(f) => f,
                    Err(e) => panic!("printed flow does not parse: {e}"),
                };
                again.thread = flow.thread;
                assert!(again == flow, "printed flow parses differently: {printed}");
                assert!(flow.clone().into_owned() == flow);
                for t in DumpType::ALL {
                    let _ = t.matches(&flow);
                }
            }
            Err(e) => {
                assert!(e.line >= 1 && e.line <= lines.len());
                assert!(e.text == lines[e.line - 1]);
                assert!(e.column >= 1 && e.column <= e.text.len() + 1);
            }
        }
    }
});
