//! The one list of UNVERIFIED items (`docs/unverified.list`, issue 38) and the docs cannot
//! drift: every mention of the word in `docs/**/*.md` is covered by exactly one entry of
//! the list and every entry by exactly one mention (its `quote` starts at most
//! `QUOTE_WINDOW` characters after the mention, whitespace runs counted as one space).
//! The entries are well formed (ids, `where`, `needs`, a `run` and a `look` for every
//! claim), and no `run` holds an obviously mutating command unless the entry says
//! `mutates: yes` (the conformance kit runs those only with `--allow-changes`).
//! Negative controls run the same checks on synthetic docs trees and lists. The kit that
//! reads the list, `scripts/hardware-conformance.sh`, is tested in `kit.rs`.

mod kit;
mod list;

use dpu_tests::docs::repo_root;

use list::{mutating, parse, problems, Entry};

fn the_list() -> Vec<Entry> {
    let path = repo_root().join("docs/unverified.list");
    let text = std::fs::read_to_string(&path).expect("docs/unverified.list");
    parse(&text)
        .unwrap_or_else(|p| panic!("docs/unverified.list does not parse:\n{}", p.join("\n")))
}

#[test]
fn every_unverified_mention_in_docs_has_exactly_one_entry_and_back() {
    let entries = the_list();
    assert!(
        entries.len() > 40,
        "the list lost its entries: {}",
        entries.len()
    );
    let problems = problems(&repo_root(), &entries);
    assert!(
        problems.is_empty(),
        "docs/unverified.list and docs/ drifted:\n{}",
        problems.join("\n")
    );
}

/// A synthetic repository: `docs/page.md` holding `page`.
fn tree(page: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("docs/reference")).expect("mkdir");
    std::fs::write(dir.path().join("docs/page.md"), page).expect("write page");
    std::fs::write(
        dir.path().join("docs/reference/other.md"),
        "Nothing to see.\n",
    )
    .expect("write");
    dir
}

const PAGE: &str = "# A page\n\nThe link is fast.\nUNVERIFIED: that the firmware\ncounts bytes; settle with `ethtool -S p0`.\n\nLater: UNVERIFIED whether the\nsecond one holds.\n";

fn entry(id: &str, quote: &str) -> String {
    format!("id: {id}\ndoc: docs/page.md\nquote: {quote}\nclaim: c\nwhere: host\nneeds: connectx\nrun: ethtool -S p0\nlook: l\n\n")
}

#[test]
fn a_covered_page_passes_and_rewrapped_text_still_matches() {
    let dir = tree(PAGE);
    let list = entry("first", "that the firmware counts bytes")
        + &entry("second", "whether the second one");
    let problems = problems(dir.path(), &parse(&list).expect("parses"));
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn a_mention_without_an_entry_fails_naming_page_line_and_text() {
    let dir = tree(PAGE);
    let list = entry("first", "that the firmware counts bytes");
    let problems = problems(dir.path(), &parse(&list).expect("parses"));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("docs/page.md:7: UNVERIFIED with no entry")
            && problems[0].contains("whether the second one holds"),
        "{problems:?}"
    );
}

#[test]
fn an_entry_matching_no_mention_fails_naming_the_entry() {
    let dir = tree(PAGE);
    // The quote is on the page, but more than the window after the nearest mention.
    let far = format!(
        "{PAGE}{}\nA sentence far below.\n",
        "filler text ".repeat(20)
    );
    std::fs::write(dir.path().join("docs/page.md"), far).expect("write");
    let list = entry("first", "that the firmware counts bytes")
        + &entry("second", "whether the second one")
        + &entry("stale", "A sentence far below");
    let problems = problems(dir.path(), &parse(&list).expect("parses"));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with(
            "docs/unverified.list:19: entry `stale` matches no UNVERIFIED in docs/page.md"
        ),
        "{problems:?}"
    );
}

#[test]
fn two_entries_for_one_mention_and_a_duplicate_id_fail() {
    let dir = tree(PAGE);
    let list = entry("first", "that the firmware counts bytes")
        + &entry("second", "whether the second one")
        + &entry("first", "counts bytes; settle with");
    let problems = problems(dir.path(), &parse(&list).expect("parses"));
    assert!(
        problems
            .iter()
            .any(|p| p.contains("id `first` already used at line 1")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("docs/page.md:4: UNVERIFIED covered by 2 entries")),
        "{problems:?}"
    );
}

#[test]
fn malformed_fields_are_named() {
    let dir = tree(PAGE);
    let list = entry("first", "that the firmware counts bytes")
        .replace("where: host", "where: arm")
        .replace("needs: connectx", "needs: connectx unicorn")
        .replace("id: first", "id: First_1")
        + &entry("second", "whether the second one").replace("look: l\n", "");
    let problems = problems(dir.path(), &parse(&list).expect("parses"));
    for want in [
        "id must be lowercase",
        "where `arm`",
        "need `unicorn`",
        "entry `second`: `look` missing",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(want)),
            "no `{want}` in {problems:?}"
        );
    }
    assert!(
        parse("id: x\nfrobnicate: y\n").is_err_and(|p| p[0].contains("unknown key `frobnicate`"))
    );
}

#[test]
fn mutating_commands_need_mutates_yes() {
    for line in [
        "ip link set dev p0 mtu 9000",
        "echo 4 > /sys/class/net/p0/device/sriov_numvfs",
        "mlnx_qos -i p0 --trust dscp",
        "snap_rpc.py bdev_set_qos_limit r0n1 --rw-ios-per-sec 1500",
        "dpuctl storage qos volumes/r0n1 --read-mbps 100",
        "mkdir /sys/kernel/config/rdma_cm/mlx5_0",
    ] {
        assert!(mutating(line).is_some(), "`{line}` was taken for read-only");
    }
    for line in [
        "snap_rpc.py rpc_get_methods | grep bdev_set_qos_limit",
        "grep -E 'A|CREATE_OVS_BRIDGES' /sbin/mlnx_bf_configure",
        "snap_rpc.py nvme_namespace_create -h",
        "kubectl apply --dry-run=server -f x.yaml",
        "dpuctl dpu counters >/dev/null",
        "mstconfig -e -d \"$MLX_BDF\" q CNP_DSCP_P1",
    ] {
        assert_eq!(mutating(line), None, "`{line}` was taken for a change");
    }
    let dir = tree(PAGE);
    let unmarked = entry("first", "that the firmware counts bytes").replace(
        "run: ethtool -S p0",
        "run: ethtool -S p0\n ip link set p0 up",
    ) + &entry("second", "whether the second one");
    let problems = problems(dir.path(), &parse(&unmarked).expect("parses"));
    assert!(
        problems.len() == 1 && problems[0].contains("`ip link set p0 up` changes the machine"),
        "{problems:?}"
    );
    let marked = unmarked.replace(
        "look: l\n\nid: second",
        "look: l\nmutates: yes\n\nid: second",
    );
    let problems = self::problems(dir.path(), &parse(&marked).expect("parses"));
    assert!(problems.is_empty(), "{problems:?}");
}
