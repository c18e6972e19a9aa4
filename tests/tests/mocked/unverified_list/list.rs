//! The list's format and the checks that tie it to the docs: parsing `docs/unverified.list`,
//! binding each entry to one UNVERIFIED mention, field rules and the mutating-command rule.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How far after a mention its entry's quote may start: a sentence's worth, so a quote
/// is tied to the sentence that carries the mention, not to one further down the page.
const QUOTE_WINDOW: usize = 160;
const WORD: &str = "UNVERIFIED";
const WHERE: &[&str] = &["host", "dpu-arm", "both"];
const NEEDS: &[&str] = &[
    "bluefield",
    "connectx",
    "rdma",
    "infiniband",
    "snap",
    "ovs",
    "gpu",
    "nvme",
    "cluster",
    "peer",
    "vm",
    "source",
    "agent",
];
const KEYS: &[&str] = &[
    "id", "kind", "doc", "quote", "claim", "where", "needs", "tools", "run", "look", "mutates",
    "manual",
];
/// Parts of a command word (split at `_ - / .`) that change a machine.
const MUTATING_WORDS: &[&str] = &[
    "set", "add", "del", "delete", "remove", "write", "attach", "detach", "create", "destroy",
    "reset", "apply", "mkdir", "rm", "rmdir", "kill", "modprobe", "insmod", "rmmod", "reboot",
    "restart", "start", "stop", "tee", "dd", "mount", "umount", "trust",
];
/// Options that change a machine on commands that otherwise only read.
const MUTATING_OPTIONS: &[&str] = &[
    "--trust",
    "--pfc",
    "--prio_tc",
    "--dscp2prio",
    "--read-mbps",
    "--write-mbps",
    "--rw-mbps",
];

/// One stanza of the list.
#[derive(Debug, Default)]
pub(super) struct Entry {
    line: usize,
    fields: BTreeMap<String, String>,
    pub(super) run: Vec<String>,
}

impl Entry {
    pub(super) fn get(&self, key: &str) -> &str {
        self.fields.get(key).map(String::as_str).unwrap_or("")
    }
    pub(super) fn id(&self) -> &str {
        self.get("id")
    }
}

/// Parses the deb822-like list the kit reads with bash (format in the list's header).
pub(super) fn parse(text: &str) -> Result<Vec<Entry>, Vec<String>> {
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    let mut current: Option<Entry> = None;
    let mut last_key = String::new();
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        if raw.starts_with('#') {
            continue;
        }
        if raw.trim().is_empty() {
            entries.extend(current.take());
            continue;
        }
        let entry = current.get_or_insert_with(|| Entry {
            line: line_no,
            ..Entry::default()
        });
        if let Some(more) = raw.strip_prefix(' ') {
            if last_key == "run" {
                entry.run.push(more.to_string());
            } else if let Some(value) = entry.fields.get_mut(&last_key) {
                value.push(' ');
                value.push_str(more.trim());
            } else {
                problems.push(format!(
                    "docs/unverified.list:{line_no}: continuation line without a key above"
                ));
            }
            continue;
        }
        let Some((key, value)) = raw.split_once(':') else {
            problems.push(format!(
                "docs/unverified.list:{line_no}: not `key: value`: {raw}"
            ));
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if !KEYS.contains(&key) {
            problems.push(format!(
                "docs/unverified.list:{line_no}: unknown key `{key}` (known: {KEYS:?})"
            ));
        }
        if entry.fields.contains_key(key) || (key == "run" && !entry.run.is_empty()) {
            problems.push(format!(
                "docs/unverified.list:{line_no}: `{key}` given twice in one entry"
            ));
        }
        if key == "run" {
            entry.run.push(value.to_string());
        } else {
            entry.fields.insert(key.to_string(), value.to_string());
        }
        last_key = key.to_string();
    }
    entries.extend(current);
    if problems.is_empty() {
        Ok(entries)
    } else {
        Err(problems)
    }
}

/// A page's text with every whitespace run as one space, and the line of each character.
pub(super) struct Page {
    text: String,
    lines: Vec<usize>,
}

/// A mention's offset in its page's normalised text, and the entries bound to it.
type Mention = (usize, Vec<String>);

pub(super) fn normalise(raw: &str) -> Page {
    let (mut text, mut lines) = (String::new(), Vec::new());
    let (mut line, mut in_space) = (1, false);
    for ch in raw.chars() {
        if ch.is_whitespace() {
            if !in_space {
                text.push(' ');
                lines.push(line);
            }
            in_space = true;
        } else {
            text.push(ch);
            lines.extend(std::iter::repeat_n(line, ch.len_utf8()));
            in_space = false;
        }
        if ch == '\n' {
            line += 1;
        }
    }
    Page { text, lines }
}

pub(super) fn markdown_pages(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut children: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    children.sort();
    for path in children {
        if path.is_dir() {
            markdown_pages(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// Every problem of the list against the pages under `root/docs`, each naming where to fix it.
pub(super) fn problems(root: &Path, entries: &[Entry]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut pages = Vec::new();
    markdown_pages(&root.join("docs"), &mut pages);
    // page -> (its text, each mention's offset in it with the ids bound to it)
    let mut mentions: BTreeMap<String, (Page, Vec<Mention>)> = BTreeMap::new();
    for path in pages {
        let raw = std::fs::read_to_string(&path).expect("read a docs page");
        let page = normalise(&raw);
        let found = page
            .text
            .match_indices(WORD)
            .map(|(at, _)| (at, Vec::new()))
            .collect();
        let rel = path
            .strip_prefix(root)
            .expect("under root")
            .display()
            .to_string();
        mentions.insert(rel, (page, found));
    }
    let mut ids = BTreeMap::new();
    for entry in entries {
        problems.extend(entry_problems(entry));
        if let Some(first) = ids.insert(entry.id().to_string(), entry.line) {
            problems.push(format!(
                "docs/unverified.list:{}: id `{}` already used at line {first}",
                entry.line,
                entry.id()
            ));
        }
        let Some((page, found)) = mentions.get_mut(entry.get("doc")) else {
            problems.push(format!(
                "docs/unverified.list:{}: entry `{}`: doc `{}` is not a page under docs/",
                entry.line,
                entry.id(),
                entry.get("doc")
            ));
            continue;
        };
        let quote = normalise(entry.get("quote")).text.trim().to_string();
        let bound: Vec<usize> = page
            .text
            .match_indices(quote.as_str())
            .filter(|_| !quote.is_empty())
            .filter_map(|(at, _)| {
                let m = found.iter().rposition(|(m, _)| m + WORD.len() <= at)?;
                (at - (found[m].0 + WORD.len()) <= QUOTE_WINDOW).then_some(m)
            })
            .collect();
        match bound.as_slice() {
            [m] => found[*m].1.push(entry.id().to_string()),
            [] => problems.push(format!(
                "docs/unverified.list:{}: entry `{}` matches no UNVERIFIED in {}: its quote `{quote}` must start within {QUOTE_WINDOW} characters after the word (remove the entry if the mention is gone)",
                entry.line,
                entry.id(),
                entry.get("doc")
            )),
            _ => problems.push(format!(
                "docs/unverified.list:{}: entry `{}`: its quote is after {} mentions in {}: make it longer",
                entry.line,
                entry.id(),
                bound.len(),
                entry.get("doc")
            )),
        }
    }
    for (doc, (page, found)) in &mentions {
        for (at, ids) in found {
            let line = page.lines[*at];
            let context: String = page.text[*at..].chars().take(110).collect();
            match ids.len() {
                1 => {}
                0 => problems.push(format!(
                    "{doc}:{line}: UNVERIFIED with no entry in docs/unverified.list: add one for «{context}»"
                )),
                _ => problems.push(format!(
                    "{doc}:{line}: UNVERIFIED covered by {} entries ({}): keep one",
                    ids.len(),
                    ids.join(", ")
                )),
            }
        }
    }
    problems
}

fn entry_problems(entry: &Entry) -> Vec<String> {
    let at = format!(
        "docs/unverified.list:{}: entry `{}`",
        entry.line,
        entry.id()
    );
    let mut problems = Vec::new();
    let id = entry.id();
    let well_formed = !id.is_empty()
        && id.split('-').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    if !well_formed {
        problems.push(format!("{at}: id must be lowercase words joined by `-`"));
    }
    for key in ["doc", "quote", "claim"] {
        if entry.get(key).is_empty() {
            problems.push(format!("{at}: `{key}` missing"));
        }
    }
    match entry.get("kind") {
        "" | "claim" => {}
        "legend" => {
            for key in ["where", "needs", "tools", "look", "mutates", "manual"] {
                if !entry.get(key).is_empty() {
                    problems.push(format!("{at}: a legend has no `{key}`"));
                }
            }
            if !entry.run.is_empty() {
                problems.push(format!("{at}: a legend has no `run`"));
            }
            return problems;
        }
        other => problems.push(format!("{at}: kind `{other}` is not claim or legend")),
    }
    if !WHERE.contains(&entry.get("where")) {
        problems.push(format!(
            "{at}: where `{}` is not one of {WHERE:?}",
            entry.get("where")
        ));
    }
    let needs = entry.get("needs");
    if needs != "none" {
        for need in needs.split_whitespace() {
            if !NEEDS.contains(&need) {
                problems.push(format!(
                    "{at}: need `{need}` is not one of {NEEDS:?} (or `none`)"
                ));
            }
        }
        if needs.is_empty() {
            problems.push(format!(
                "{at}: `needs` missing (write `none` for any machine)"
            ));
        }
    }
    if entry.run.iter().all(|line| line.trim().is_empty()) {
        problems.push(format!("{at}: `run` missing"));
    }
    if entry.get("look").is_empty() {
        problems.push(format!("{at}: `look` missing"));
    }
    let mutates = match entry.get("mutates") {
        "" | "no" => false,
        "yes" => true,
        other => {
            problems.push(format!("{at}: mutates `{other}` is not yes or no"));
            false
        }
    };
    if !mutates {
        for line in &entry.run {
            if let Some(why) = mutating(line) {
                problems.push(format!(
                    "{at}: run line `{line}` changes the machine ({why}): mark the entry `mutates: yes`"
                ));
            }
        }
    }
    problems
}

/// Why a command line obviously changes the machine, if it does. Grep patterns, help
/// requests and dry runs are not changes.
pub(super) fn mutating(line: &str) -> Option<String> {
    let spaced = line
        .replace("2>&1", " ")
        .replace(">&2", " ")
        .replace(">/dev/null", " ");
    if spaced.contains('>') {
        return Some("a `>` redirect".into());
    }
    if line.contains("--dry-run") {
        return None;
    }
    for segment in segments(&spaced) {
        let words: Vec<&str> = segment
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '"' || c == '\'' || c == '(' || c == ')'))
            .filter(|w| !["do", "then", "if", "for", "while", "time", "!"].contains(w))
            .collect();
        let (Some(first), Some(last)) = (words.first(), words.last()) else {
            continue;
        };
        if ["grep", "egrep"].contains(first) || ["-h", "--help"].contains(last) {
            continue;
        }
        for word in &words {
            if word.starts_with('-') {
                let name = word.split('=').next().unwrap_or(word);
                if MUTATING_OPTIONS.contains(&name) {
                    return Some(format!("the option `{name}`"));
                }
                continue;
            }
            let lower = word.to_ascii_lowercase();
            if let Some(verb) = lower
                .split(['_', '-', '/', '.'])
                .find(|part| MUTATING_WORDS.contains(part))
            {
                return Some(format!("`{verb}` in `{word}`"));
            }
        }
    }
    None
}

/// The simple commands of a line: split at `|`, `;` and `&` outside quotes.
fn segments(line: &str) -> Vec<String> {
    let (mut out, mut current, mut quote) = (Vec::new(), String::new(), None);
    for ch in line.chars() {
        match (quote, ch) {
            (None, '"' | '\'') => quote = Some(ch),
            (Some(open), _) if ch == open => quote = None,
            (None, '|' | ';' | '&') => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    out.push(current);
    out
}
