//! scripts/check-module-graph, the CI gate that holds every crate's imports one way, run
//! on small crates written here: a file circle and a folder circle each fail naming their
//! files, an import of an ancestor or a one-way folder tie passes. Without these, a
//! checker that found nothing would pass CI as surely as a clean tree.

use std::process::Command;

use dpu_tests::docs::repo_root;

/// Writes `files` (path under `src/`, text) as a crate and runs the checker on it.
fn check(files: &[(&str, &str)]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"t\"\n").expect("manifest");
    for (path, text) in files {
        let path = dir.path().join("src").join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("folders");
        std::fs::write(path, text).expect("a source file");
    }
    let out = Command::new("python3")
        .arg(repo_root().join("scripts/check-module-graph"))
        .arg(dir.path().join("src"))
        .output()
        .expect("python3 runs the checker");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

const FOLDER_B: [(&str, &str); 3] = [
    ("b/mod.rs", "pub mod x;\npub mod y;\n"),
    ("b/x.rs", "pub struct X;\n"),
    ("b/y.rs", "pub fn f() {}\n"),
];

#[test]
fn a_folder_that_imports_back_is_a_folder_circle_naming_both_sides() {
    let mut files = vec![
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::x::X;\npub struct A;\n"),
    ];
    files.extend(FOLDER_B);
    // b/y.rs imports a.rs back: no two files import each other, but a and b/ do.
    files.retain(|(p, _)| *p != "b/y.rs");
    files.push(("b/y.rs", "use crate::a::A;\n"));
    let (code, text) = check(&files);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("folder circle 1 of 1 under the crate root: a, b/"),
        "{text}"
    );
    assert!(
        text.contains("a.rs:1 -> b/x.rs") && text.contains("b/y.rs:1 -> a.rs"),
        "{text}"
    );
    assert!(text.contains("0 circle(s), 1 folder circle(s)"), "{text}");
}

#[test]
fn a_one_way_tie_and_an_import_of_an_ancestor_pass() {
    let mut files = vec![
        ("lib.rs", "mod a;\nmod b;\npub struct Root;\n"),
        ("a.rs", "use crate::b::x::X;\npub struct A;\n"),
        // An ancestor's item (structure), not a sibling's.
        ("b/z.rs", "use crate::Root;\n"),
    ];
    files.extend(FOLDER_B);
    files.retain(|(p, _)| *p != "b/mod.rs");
    files.push(("b/mod.rs", "pub mod x;\npub mod y;\npub mod z;\n"));
    let (code, text) = check(&files);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("0 circle(s), 0 folder circle(s)"), "{text}");
}

#[test]
fn two_files_that_import_each_other_are_a_file_circle() {
    let (code, text) = check(&[
        ("lib.rs", "mod a;\nmod c;\n"),
        ("a.rs", "use crate::c::C;\npub struct A;\n"),
        ("c.rs", "use crate::a::A;\npub struct C;\n"),
    ]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("circle 1 of 1, 2 files"), "{text}");
    // A circle of plain files is the file graph's, not reported twice.
    assert!(text.contains("0 folder circle(s)"), "{text}");
}
