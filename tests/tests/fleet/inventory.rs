//! A bad inventory is refused whole, before any agent is asked: exit 2, and every problem
//! with the line it is on (an unknown key, a duplicate name, an endpoint that is not one).

use std::os::unix::net::UnixListener;

use super::{run_fleet, run_fleet_paced, Pace};

#[test]
fn a_bad_inventory_names_every_problem_with_its_line_and_contacts_no_agent() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A listener where the good-looking targets point: nothing may connect to it.
    let socket = dir.path().join("agent.sock");
    let listener = UnixListener::bind(&socket).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let agent = format!("unix:{}", socket.display());
    let text = format!(
        "[[target]]\n\
         name = \"node-a\"\n\
         agent = \"{agent}\"\n\
         \n\
         [[target]]\n\
         name = \"node-a\"\n\
         agent = \"{agent}\"\n\
         \n\
         [[target]]\n\
         name = \"node-b\"\n\
         agent = \"gopher://node-b\"\n\
         colour = \"blue\"\n"
    );
    let inventory = dir.path().join("inventory.toml");
    std::fs::write(&inventory, &text).expect("write");
    for command in [&["health"][..], &["check"][..]] {
        let run = run_fleet(&inventory, &[], command);
        let ctx = format!("{}\ninventory:\n{text}", run.context());
        assert_eq!(run.code, Some(2), "{ctx}");
        let message = format!("{}{}", run.stderr, run.stdout);
        for (line, what) in [(5, "node-a"), (11, "gopher://node-b"), (12, "colour")] {
            assert!(
                message
                    .lines()
                    .any(|l| l.contains(&format!("line {line}")) && l.contains(what)),
                "the problem on line {line} ({what}) is named with its line: {ctx}"
            );
        }
        let accepted = listener.accept();
        assert!(
            matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "an agent was contacted: {accepted:?}"
        );
    }

    // The negative control: the same listener, a good inventory, and it is contacted.
    std::fs::write(
        &inventory,
        format!("[[target]]\nname = \"node-a\"\nagent = \"{agent}\"\n"),
    )
    .expect("write");
    // Nothing answers on that listener: a short --timeout ends the run soon.
    let quick = Pace {
        timeout: "1",
        deadline: "2",
    };
    let run = run_fleet_paced(quick, &inventory, &[], &["health"]);
    // The connection waits in the listener's backlog, accepted or not.
    assert!(
        listener.accept().is_ok(),
        "the good inventory's agent was contacted: {}",
        run.context()
    );
    assert_ne!(
        run.code,
        Some(2),
        "a good inventory is not a usage error: {}",
        run.context()
    );
}
