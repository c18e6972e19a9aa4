use std::path::Path;

use dpu_proto::Endpoint;

use super::parse;

fn problems(text: &str) -> Vec<String> {
    parse(text, Path::new("/inv"))
        .expect_err("the inventory should be refused")
        .into_iter()
        .map(|p| p.to_string())
        .collect()
}

#[test]
fn a_full_inventory_merges_defaults_into_each_target() {
    let targets = parse(
        r#"
[defaults]
ca = "pki/ca.pem"
cert = "pki/dpuctl.pem"
key = "/etc/dpuctl/dpuctl.key"
labels = { site = "lab", rack = "r01" }
host_agent = "tcp:192.168.100.2:50051"

[[target]]
name = "gpu-01"
agent = "tcp:10.0.0.11:50051"
tls_name = "dpu-gpu-01"
ssh = "root@gpu-01"
interface = "ens1f0np0"
node = "gpu-01"
labels = { rack = "r07", rail = "0" }

[[target]]
name = "gpu-02"
agent = "unix:/run/dpu-agent/dpu-agent.sock"
"#,
        Path::new("/inv"),
    )
    .expect("valid");
    assert_eq!(targets.len(), 2);
    let first = &targets[0];
    assert_eq!(first.name, "gpu-01");
    let tls = first.tls.as_ref().expect("TLS from the defaults");
    assert_eq!(tls.ca, Path::new("/inv/pki/ca.pem"), "relative to the file");
    assert_eq!(tls.key, Path::new("/etc/dpuctl/dpuctl.key"));
    assert_eq!(tls.name.as_deref(), Some("dpu-gpu-01"));
    assert_eq!(first.labels["rack"], "r07", "a target's label wins");
    assert_eq!(first.labels["site"], "lab", "a default label is kept");
    assert_eq!(first.ssh.as_deref(), Some("root@gpu-01"));
    assert_eq!(first.node.as_deref(), Some("gpu-01"));
    assert_eq!(
        first
            .host_agent
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some("tcp:192.168.100.2:50051"),
        "from the defaults"
    );
    // A Unix agent never uses TLS, even when the defaults name the files.
    assert!(matches!(targets[1].agent, Endpoint::Unix(_)));
    assert!(targets[1].tls.is_none());
}

#[test]
fn every_problem_is_reported_with_its_line() {
    let found = problems(
        r#"[[target]]
name = "a"
agent = "tcp:10.0.0.1:50051"
adress = "x"

[[target]]
name = "a"
agent = "tcp:10.0.0.2:50051"

[[target]]
name = "b"
agent = "http://10.0.0.3"

[[target]]
name = "-bad"
agent = "tcp:10.0.0.4:50051"
ssh = "-oProxyCommand=evil"

[[target]]
agent = "tcp:10.0.0.5:50051"
ca = "ca.pem"
"#,
    );
    let expected_fragments = [
        ("line 4:", "unknown key `adress` in [[target]]"),
        ("line 6:", "duplicate target name `a` (first on line 1)"),
        ("line 12:", "agent `http://10.0.0.3`"),
        (
            "line 15:",
            "name `-bad`: must start and end with a letter or digit",
        ),
        (
            "line 17:",
            "ssh `-oProxyCommand=evil`: must not start with `-`",
        ),
        ("line 19:", "[[target]] without `name`"),
        ("line 19:", "TLS needs all of `ca`, `cert` and `key`"),
    ];
    for (line, text) in expected_fragments {
        assert!(
            found
                .iter()
                .any(|p| p.starts_with(line) && p.contains(text)),
            "no `{line} ...{text}` among {found:#?}"
        );
    }
    assert_eq!(found.len(), expected_fragments.len(), "{found:#?}");
}

#[test]
fn a_near_miss_key_is_named() {
    let found = problems("[[target]]\nname = \"a\"\nagent = \"unix:/s\"\nintreface = \"eth0\"\n");
    assert_eq!(
        found,
        ["line 4: unknown key `intreface` in [[target]] (did you mean `interface`?)"]
    );
}

#[test]
fn unknown_top_level_keys_and_empty_inventories_are_refused() {
    assert_eq!(
        problems("targets = []\n"),
        ["line 1: unknown key `targets`: the inventory has [defaults] and [[target]] tables"]
    );
    assert_eq!(
        problems("# nothing\n"),
        ["line 1: no [[target]] tables: the inventory names no nodes"]
    );
    assert_eq!(
        problems("[target]\nname = \"a\"\n"),
        ["line 1: `target` must be an array of tables: write each as [[target]]"]
    );
}

#[test]
fn a_syntax_error_names_its_line() {
    let found = problems("[[target]]\nname = \"a\nagent = \"unix:/s\"\n");
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with("line 2:"), "{found:?}");
}

#[test]
fn labels_and_interfaces_are_validated() {
    let found = problems(
        "[[target]]\nname = \"a\"\nagent = \"unix:/s\"\ninterface = \"eth0/../x\"\nlabels = { rack = \"r 1\", n = 3 }\n",
    );
    assert!(
        found.iter().any(|p| p.starts_with("line 4: interface")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p.contains("label `rack` = `r 1`")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|p| p.contains("label `n` must be a string")),
        "{found:?}"
    );
}

#[test]
fn an_interface_roce_pairs_would_refuse_is_refused_with_its_line() {
    // Shell metacharacters: the one interface rule refuses them here, not at `roce pairs`.
    let found =
        problems("[[target]]\nname = \"a\"\nagent = \"unix:/s\"\ninterface = \"eth0;reboot\"\n");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("line 4: interface `eth0;reboot`: "),
        "{found:?}"
    );
    let found = problems("[[target]]\nname = \"a\"\nagent = \"unix:/s\"\ninterface = \"-x\"\n");
    assert!(found[0].contains("must not start with '-'"), "{found:?}");
}

#[test]
fn every_problem_of_a_large_inventory_names_its_own_line() {
    // 2,000 targets, every tenth a duplicate of the one before: each problem names the
    // line of its own [[target]] (4 lines per target), found by one pass over the text.
    let mut text = String::new();
    for i in 0..2_000 {
        let name = if i % 10 == 9 { i - 1 } else { i };
        text.push_str(&format!(
            "[[target]]\nname = \"n{name}\"\nagent = \"unix:/s{i}\"\n\n"
        ));
    }
    let found = problems(&text);
    assert_eq!(found.len(), 200, "{:?}", &found[..3]);
    assert!(
        found[0].starts_with("line 37: duplicate target name `n8` (first on line 33)"),
        "{}",
        found[0]
    );
    assert!(
        found[199].starts_with("line 7997: duplicate target name `n1998` (first on line 7993)"),
        "{}",
        found[199]
    );
}
