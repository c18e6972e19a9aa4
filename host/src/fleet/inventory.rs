//! The inventory file: the fleet's targets as TOML.
//!
//! Why a walker over toml's spanned tree rather than `#[derive(Deserialize)]`: serde stops
//! at the first problem, and an inventory of two hundred nodes with three typos should be
//! fixed in one edit, not three runs. Every problem is reported with its line, and nothing
//! runs while any is left.
//!
//! ```toml
//! [defaults]                       # optional, merged into every target
//! ca = "pki/ca.pem"                # relative paths are relative to this file
//! cert = "pki/dpuctl.pem"
//! key = "pki/dpuctl.key"
//! labels = { site = "lab" }
//!
//! [[target]]
//! name = "gpu-01"                  # unique; what every result row is keyed by
//! agent = "tcp:10.0.0.11:50051"    # or unix:/path
//! tls_name = "dpu-gpu-01"          # the name in the agent's certificate, if not the host
//! ssh = "root@gpu-01"              # the host, for RoCE pairs and `fleet prove`
//! host_agent = "tcp:192.168.100.2:50051"  # the agent as the host reaches it
//! interface = "ens1f0np0"          # the host's data interface
//! node = "gpu-01"                  # the Kubernetes Node, for --publish
//! labels = { rack = "r07", rail = "0" }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use dpu_proto::Endpoint;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::target::Target;
use crate::agent::connect::TlsFiles;

/// One problem of an inventory file, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryProblem {
    /// 1-based line of the key or table the problem is about.
    pub line: usize,
    /// What is wrong, naming the key and the value.
    pub message: String,
}

impl fmt::Display for InventoryProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Why an inventory could not be used: the file could not be read, or it has problems
/// (all of them, in line order).
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    /// The file could not be read.
    #[error("cannot read the inventory {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file has problems; nothing was run.
    #[error("{} has {} problem(s); nothing was run:\n  {}", path.display(), problems.len(), list(problems))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Every problem, in line order.
        problems: Vec<InventoryProblem>,
    },
}

fn list(problems: &[InventoryProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// Reads and validates an inventory file.
pub fn load(path: &Path) -> Result<Vec<Target>, InventoryError> {
    let text = std::fs::read_to_string(path).map_err(|source| InventoryError::Read {
        path: path.to_owned(),
        source,
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&text, base).map_err(|problems| InventoryError::Invalid {
        path: path.to_owned(),
        problems,
    })
}

/// Parses inventory text; relative TLS paths are taken relative to `base`. Returns every
/// problem when there is any.
pub fn parse(text: &str, base: &Path) -> Result<Vec<Target>, Vec<InventoryProblem>> {
    let mut walk = Walk {
        line_starts: line_starts(text),
        base,
        problems: Vec::new(),
    };
    let doc = match DeTable::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            let line = e.span().map_or(1, |s| walk.line(s.start));
            return Err(vec![InventoryProblem {
                line,
                message: e.message().trim().to_owned(),
            }]);
        }
    };
    let targets = walk.document(doc.get_ref());
    if walk.problems.is_empty() {
        Ok(targets)
    } else {
        walk.problems.sort_by_key(|p| p.line);
        Err(walk.problems)
    }
}

/// The keys a `[[target]]` may have (and, but for `name`/`agent`/`node`, `[defaults]`).
const TARGET_KEYS: &[&str] = &[
    "name",
    "agent",
    "ca",
    "cert",
    "key",
    "tls_name",
    "ssh",
    "host_agent",
    "interface",
    "node",
    "labels",
];
const DEFAULT_KEYS: &[&str] = &[
    "ca",
    "cert",
    "key",
    "tls_name",
    "ssh",
    "host_agent",
    "interface",
    "labels",
];

/// The settings a target or the defaults give, before they are merged.
#[derive(Debug, Default, Clone)]
struct Settings {
    ca: Option<PathBuf>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    tls_name: Option<String>,
    ssh: Option<String>,
    host_agent: Option<Endpoint>,
    interface: Option<String>,
    labels: BTreeMap<String, String>,
}

struct Walk<'t> {
    /// The byte offset where each line starts, for [`Walk::line`].
    line_starts: Vec<usize>,
    base: &'t Path,
    problems: Vec<InventoryProblem>,
}

/// The byte offset where each line of `text` starts: 0, then after every newline.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(at, _)| at + 1))
        .collect()
}

impl Walk<'_> {
    /// The 1-based line of a byte offset, by binary search over the line starts: a
    /// 100,000-target inventory asks this once per target, so it must not rescan the text.
    fn line(&self, offset: usize) -> usize {
        self.line_starts
            .partition_point(|&start| start <= offset)
            .max(1)
    }

    fn problem(&mut self, offset: usize, message: impl Into<String>) {
        let line = self.line(offset);
        self.problems.push(InventoryProblem {
            line,
            message: message.into(),
        });
    }

    fn document(&mut self, doc: &DeTable<'_>) -> Vec<Target> {
        let mut defaults = Settings::default();
        let mut tables = Vec::new();
        for (key, value) in doc.iter() {
            match (key.get_ref().as_ref(), value.get_ref()) {
                ("defaults", DeValue::Table(table)) => {
                    defaults = self.settings(table, "[defaults]", DEFAULT_KEYS);
                }
                ("target", DeValue::Array(items)) => {
                    for item in items.iter() {
                        match item.get_ref() {
                            DeValue::Table(table) => tables.push((item.span().start, table)),
                            _ => self.problem(item.span().start, "`target` must be a table"),
                        }
                    }
                }
                ("defaults", _) => self.problem(key.span().start, "`defaults` must be a table"),
                ("target", _) => self.problem(
                    key.span().start,
                    "`target` must be an array of tables: write each as [[target]]",
                ),
                (other, _) => self.problem(
                    key.span().start,
                    format!(
                        "unknown key `{other}`: the inventory has [defaults] and [[target]] tables"
                    ),
                ),
            }
        }
        if tables.is_empty() && self.problems.is_empty() {
            self.problem(0, "no [[target]] tables: the inventory names no nodes");
        }
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let mut targets = Vec::new();
        for (offset, table) in tables {
            // Duplicates are found among every named table, valid or not.
            let name = find(table, "name").and_then(|(_, v)| v.get_ref().as_str());
            if let Some(name) = name {
                if let Some(first) = seen.get(name) {
                    let message = format!("duplicate target name `{name}` (first on line {first})");
                    self.problem(offset, message);
                    continue;
                }
                seen.insert(name.to_owned(), self.line(offset));
            }
            if let Some(target) = self.target(offset, table, &defaults) {
                targets.push(target);
            }
        }
        targets
    }

    fn target(
        &mut self,
        offset: usize,
        table: &DeTable<'_>,
        defaults: &Settings,
    ) -> Option<Target> {
        let before = self.problems.len();
        let own = self.settings(table, "[[target]]", TARGET_KEYS);
        let name = self.required_string(offset, table, "name");
        let agent = self.required_string(offset, table, "agent");
        let node = self.string(table, "node");
        let name = name.and_then(|(at, name)| match check_name(&name) {
            Ok(()) => Some(name),
            Err(why) => {
                self.problem(at, format!("name `{name}`: {why}"));
                None
            }
        });
        let agent = agent.and_then(|(at, text)| match text.parse::<Endpoint>() {
            Ok(endpoint) => Some(endpoint),
            Err(e) => {
                self.problem(at, format!("agent `{text}`: {e}"));
                None
            }
        });
        let node = node.and_then(|(at, node)| match check_name(&node) {
            Ok(()) => Some(node),
            Err(why) => {
                self.problem(at, format!("node `{node}`: {why}"));
                None
            }
        });
        let merged = merge(defaults, own);
        let tls = self.tls(offset, &merged, agent.as_ref());
        if self.problems.len() != before {
            return None;
        }
        Some(Target {
            name: name?,
            agent: agent?,
            tls,
            ssh: merged.ssh,
            host_agent: merged.host_agent,
            interface: merged.interface,
            labels: merged.labels,
            node,
        })
    }

    /// The TLS files, all three or none; TLS applies to `tcp:` agents only.
    fn tls(&mut self, offset: usize, s: &Settings, agent: Option<&Endpoint>) -> Option<TlsFiles> {
        match (&s.ca, &s.cert, &s.key) {
            (Some(ca), Some(cert), Some(key)) => match agent {
                Some(Endpoint::Tcp { .. }) => Some(TlsFiles {
                    ca: ca.clone(),
                    cert: cert.clone(),
                    key: key.clone(),
                    name: s.tls_name.clone(),
                }),
                _ => None,
            },
            (None, None, None) => None,
            _ => {
                self.problem(
                    offset,
                    "TLS needs all of `ca`, `cert` and `key` (here or in [defaults]), or none",
                );
                None
            }
        }
    }

    /// The optional settings of a table, with its unknown keys reported.
    fn settings(&mut self, table: &DeTable<'_>, what: &str, allowed: &[&str]) -> Settings {
        for (key, _) in table.iter() {
            let name = key.get_ref().as_ref();
            if !allowed.contains(&name) {
                let hint = strsim_hint(name, allowed);
                self.problem(
                    key.span().start,
                    format!("unknown key `{name}` in {what}{hint}"),
                );
            }
        }
        let path = |walk: &mut Self, key| {
            walk.string(table, key)
                .map(|(_, p)| walk.base.join(PathBuf::from(p)))
        };
        let ca = path(self, "ca");
        let cert = path(self, "cert");
        let key = path(self, "key");
        let tls_name = self.string(table, "tls_name").map(|(_, s)| s);
        let ssh = self
            .string(table, "ssh")
            .and_then(|(at, s)| match check_ssh(&s) {
                Ok(()) => Some(s),
                Err(why) => {
                    self.problem(at, format!("ssh `{s}`: {why}"));
                    None
                }
            });
        let host_agent =
            self.string(table, "host_agent")
                .and_then(|(at, s)| match s.parse::<Endpoint>() {
                    Ok(endpoint) => Some(endpoint),
                    Err(e) => {
                        self.problem(at, format!("host_agent `{s}`: {e}"));
                        None
                    }
                });
        let interface =
            self.string(table, "interface")
                .and_then(|(at, s)| match check_ifname(&s) {
                    Ok(()) => Some(s),
                    Err(why) => {
                        self.problem(at, format!("interface `{s}`: {why}"));
                        None
                    }
                });
        let labels = self.labels(table);
        Settings {
            ca,
            cert,
            key,
            tls_name,
            ssh,
            host_agent,
            interface,
            labels,
        }
    }

    fn labels(&mut self, table: &DeTable<'_>) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::new();
        let Some((key, value)) = find(table, "labels") else {
            return labels;
        };
        let DeValue::Table(items) = value.get_ref() else {
            self.problem(key.span().start, "`labels` must be a table of strings");
            return labels;
        };
        for (k, v) in items.iter() {
            let name = k.get_ref().as_ref();
            let Some(text) = v.get_ref().as_str() else {
                self.problem(k.span().start, format!("label `{name}` must be a string"));
                continue;
            };
            if let Err(why) = check_label(name).and_then(|()| check_label(text)) {
                self.problem(k.span().start, format!("label `{name}` = `{text}`: {why}"));
                continue;
            }
            labels.insert(name.to_owned(), text.to_owned());
        }
        labels
    }

    /// A string key's value and the offset of its key; a non-string is a problem.
    fn string(&mut self, table: &DeTable<'_>, name: &str) -> Option<(usize, String)> {
        let (key, value) = find(table, name)?;
        match value.get_ref().as_str() {
            Some(text) if !text.is_empty() => Some((key.span().start, text.to_owned())),
            Some(_) => {
                self.problem(key.span().start, format!("`{name}` is empty"));
                None
            }
            None => {
                self.problem(
                    key.span().start,
                    format!(
                        "`{name}` must be a string, not a {}",
                        value.get_ref().type_str()
                    ),
                );
                None
            }
        }
    }

    fn required_string(
        &mut self,
        table_offset: usize,
        table: &DeTable<'_>,
        name: &str,
    ) -> Option<(usize, String)> {
        if find(table, name).is_none() {
            self.problem(table_offset, format!("[[target]] without `{name}`"));
            return None;
        }
        self.string(table, name)
    }
}

fn find<'a, 'i>(
    table: &'a DeTable<'i>,
    name: &str,
) -> Option<(
    &'a Spanned<toml::de::DeString<'i>>,
    &'a Spanned<DeValue<'i>>,
)> {
    table.iter().find(|(k, _)| k.get_ref().as_ref() == name)
}

/// A target's own settings over the defaults; labels are merged key by key.
fn merge(defaults: &Settings, own: Settings) -> Settings {
    let mut labels = defaults.labels.clone();
    labels.extend(own.labels);
    Settings {
        ca: own.ca.or_else(|| defaults.ca.clone()),
        cert: own.cert.or_else(|| defaults.cert.clone()),
        key: own.key.or_else(|| defaults.key.clone()),
        tls_name: own.tls_name.or_else(|| defaults.tls_name.clone()),
        ssh: own.ssh.or_else(|| defaults.ssh.clone()),
        host_agent: own.host_agent.or_else(|| defaults.host_agent.clone()),
        interface: own.interface.or_else(|| defaults.interface.clone()),
        labels,
    }
}

/// " (did you mean `x`?)" for a near miss, else nothing.
fn strsim_hint(name: &str, allowed: &[&str]) -> String {
    allowed
        .iter()
        .map(|a| (strsim::levenshtein(name, a), a))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map_or(String::new(), |(_, a)| format!(" (did you mean `{a}`?)"))
}

/// A node name: what Kubernetes allows for a Node (a DNS subdomain, at most 253
/// characters of lowercase letters, digits, `-` and `.`), relaxed to upper case letters
/// and `_` for hand-written inventories; it must start and end with a letter or digit.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.len() > 253 {
        return Err("longer than 253 characters".to_owned());
    }
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    if let Some(bad) = name.chars().find(|&c| !ok(c)) {
        return Err(format!(
            "{bad:?} is not allowed (letters, digits, -, . and _)"
        ));
    }
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !edge(name.chars().next()) || !edge(name.chars().last()) {
        return Err("must start and end with a letter or digit".to_owned());
    }
    Ok(())
}

/// An ssh destination, `[user@]host`: no spaces, nothing ssh would take for an option.
pub fn check_ssh(destination: &str) -> Result<(), String> {
    if destination.starts_with('-') {
        return Err("must not start with `-` (ssh would read it as an option)".to_owned());
    }
    let ok =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '@' | ':' | '[' | ']');
    match destination.chars().find(|&c| !ok(c)) {
        Some(bad) => Err(format!("{bad:?} is not allowed in an ssh destination")),
        None => Ok(()),
    }
}

/// A Linux interface name, by the one rule every command checks it with
/// ([`dpu_proto::names::check_ifname`]: 1-15 bytes of letters, digits, `_ - . @`, not
/// starting with `-`), so an inventory `roce pairs` would refuse later is refused here, with
/// its line.
pub fn check_ifname(name: &str) -> Result<(), String> {
    dpu_proto::names::check_ifname("interface", name).map_err(|e| match e {
        dpu_proto::names::NameError::Id { reason, .. } => reason,
        other => other.to_string(),
    })
}

/// A label key or value: 1–63 characters of letters, digits, `-`, `_`, `.` and `/`.
pub fn check_label(text: &str) -> Result<(), String> {
    if text.is_empty() || text.len() > 63 {
        return Err("must be 1 to 63 characters".to_owned());
    }
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '/');
    match text.chars().find(|&c| !ok(c)) {
        Some(bad) => Err(format!(
            "{bad:?} is not allowed (letters, digits, -, _, . and /)"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
