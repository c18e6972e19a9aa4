//! Runnable docs: the shell examples of `README.md` and `docs/*.md` whose fence is marked
//! with a tier (```` ```sh mocked ````, ```` ```sh lab ````) are found here and run as
//! written, so an example that stops working fails that tier. The convention is in
//! `tests/README.md`.
//!
//! A marked block runs as one `sh` script (variables and `eval` carry from one command to
//! the next, as in a terminal), each command followed by a check of its exit status: 0, or
//! the `N` of a trailing `# exit N` comment. The first command that exits otherwise stops
//! the block and is named by `file:line`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// One command of a marked block: a logical line (continuation lines joined).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocCommand {
    /// 1-based line of the command's first line in its file.
    pub line: usize,
    /// The command as written, continuation lines included.
    pub text: String,
    /// The exit status the docs declare (`# exit N`), 0 when none.
    pub expect: i32,
}

/// A fenced block whose info string names a tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocBlock {
    /// The file, relative to the repository root (`docs/check.md`).
    pub file: String,
    /// 1-based line of the opening fence.
    pub line: usize,
    /// Programs the block needs besides dpuctl (`needs=jq,openssl` in the info string).
    pub needs: Vec<String>,
    /// Every command, in order; comment-only lines are kept in `script` but not checked.
    pub commands: Vec<DocCommand>,
    /// The block's lines as written.
    pub body: Vec<(usize, String)>,
}

impl DocBlock {
    /// `file:line` of a command.
    pub fn location(&self, command: &DocCommand) -> String {
        format!("{}:{}", self.file, command.line)
    }

    /// The block as an `sh` script: each command as written, then a check of its status
    /// that names it by `file:line` and stops the script with status 99.
    pub fn script(&self) -> String {
        let mut script = String::new();
        for command in &self.commands {
            let location = self.location(command);
            script.push_str(&format!("printf '%s\\n' '>>> {location}' >&2\n"));
            script.push_str(&command.text);
            script.push('\n');
            script.push_str(&format!(
                "__docs_rc=$?; if [ \"$__docs_rc\" -ne {expect} ]; then \
                 printf '%s\\n' \"DOCS-EXAMPLE-FAILED {location}: exit $__docs_rc, expected {expect}\" >&2; \
                 exit 99; fi\n",
                expect = command.expect
            ));
        }
        script
    }
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_owned()
}

/// `README.md` and `docs/*.md` (sorted), relative to the repository root.
pub fn doc_files() -> Vec<String> {
    let root = repo_root();
    let mut files = vec!["README.md".to_owned()];
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("read docs/")
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Every block marked `tier` in the doc files.
pub fn marked_blocks(tier: &str) -> Vec<DocBlock> {
    let root = repo_root();
    doc_files()
        .into_iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(root.join(&file))
                .unwrap_or_else(|e| panic!("read {file}: {e}"));
            parse_blocks(&file, &text, tier)
        })
        .collect()
}

/// The blocks of one Markdown text whose fence reads ```` ```sh TIER [needs=A,B] ````.
/// Fences follow CommonMark: three or more backticks, an info string without backticks
/// (so inline code such as ```` ```sh lab ```` at the start of a line opens nothing), and
/// a closing fence at least as long as the opening one with nothing after it.
pub fn parse_blocks(file: &str, text: &str, tier: &str) -> Vec<DocBlock> {
    let mut blocks = Vec::new();
    // The open fence's length, and its block when it is marked `tier`.
    let mut open: Option<(usize, Option<DocBlock>)> = None;
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let trimmed = raw.trim_start();
        let ticks = trimmed.chars().take_while(|&c| c == '`').count();
        let rest = &trimmed[ticks..];
        match open.take() {
            None => {
                if ticks >= 3 && !rest.contains('`') {
                    let mut words = rest.split_whitespace();
                    let marked = words.next() == Some("sh") && words.next() == Some(tier);
                    let block = marked.then(|| DocBlock {
                        file: file.to_owned(),
                        line: number,
                        needs: words
                            .filter_map(|w| w.strip_prefix("needs="))
                            .flat_map(|w| w.split(','))
                            .filter(|w| !w.is_empty())
                            .map(str::to_owned)
                            .collect(),
                        commands: Vec::new(),
                        body: Vec::new(),
                    });
                    open = Some((ticks, block));
                }
            }
            Some((fence, block)) => {
                if ticks >= fence && rest.trim().is_empty() {
                    if let Some(block) = block {
                        blocks.push(finish(block));
                    }
                } else {
                    let block = block.map(|mut b| {
                        b.body.push((number, raw.to_owned()));
                        b
                    });
                    open = Some((fence, block));
                }
            }
        }
    }
    assert!(open.is_none(), "{file}: a fenced block is not closed");
    blocks
}

/// Splits a block's body into commands: blank and comment-only lines are skipped, a line
/// ending in `\` continues on the next.
fn finish(mut block: DocBlock) -> DocBlock {
    let mut commands = Vec::new();
    let mut current: Option<DocCommand> = None;
    for (number, line) in &block.body {
        if let Some(mut command) = current.take() {
            command.text.push('\n');
            command.text.push_str(line);
            if line.ends_with('\\') {
                current = Some(command);
            } else {
                commands.push(command);
            }
            continue;
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let command = DocCommand {
            line: *number,
            text: line.clone(),
            expect: 0,
        };
        if line.ends_with('\\') {
            current = Some(command);
        } else {
            commands.push(command);
        }
    }
    if let Some(command) = current {
        commands.push(command);
    }
    for command in &mut commands {
        command.expect = declared_exit(&command.text);
    }
    block.commands = commands;
    block
}

/// The `N` of a trailing comment that starts with `exit N` (`# exit 1: the x8 link`) on
/// the command's last line; 0 without one.
fn declared_exit(text: &str) -> i32 {
    let last = text.lines().last().unwrap_or("");
    last.rfind(" # exit ")
        .map(|at| &last[at + " # exit ".len()..])
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .unwrap_or(0)
}

/// Whether `program` is on `PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            let candidate = dir.join(program);
            candidate.is_file()
        })
    })
}

/// Runs a block's script with `sh` in `cwd`, `path_first` ahead of `PATH`, and `envs`;
/// every inherited `DPUCTL_*` variable is removed first so only `envs` configure dpuctl.
pub fn run_block(block: &DocBlock, cwd: &Path, path_first: &Path, envs: &[(&str, &str)]) -> Output {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![path_first.to_owned()];
    dirs.extend(std::env::split_paths(&path));
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(block.script())
        .current_dir(cwd)
        .env("PATH", std::env::join_paths(dirs).expect("PATH"))
        .stdin(Stdio::null());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("DPUCTL_") {
            cmd.env_remove(key);
        }
    }
    cmd.envs(envs.iter().copied());
    cmd.output().expect("run sh")
}

/// Asserts a block's run succeeded, naming the failing example and its output.
pub fn assert_block_ran(block: &DocBlock, out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "a documented example of the block at {}:{} failed ({}):\n{}\nstdout:\n{}\nstderr:\n{}",
        block.file,
        block.line,
        out.status,
        stderr
            .lines()
            .find(|l| l.starts_with("DOCS-EXAMPLE-FAILED"))
            .unwrap_or("the block's script failed"),
        String::from_utf8_lossy(&out.stdout),
        stderr
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "text\n\
```` ```sh mocked ```` in running text opens nothing\n\
```sh mocked needs=jq\n\
dpuctl check --list   # every check\n\
# a comment line\n\
dpuctl storage expose --id disk0 \\\n\
    --pf 0    # exit 1: refused\n\
\n\
```\n\
```sh\n\
dpuctl hardware only\n\
```\n\
```sh lab\n\
dpuctl lab up\n\
```\n";

    #[test]
    fn marked_blocks_split_into_commands_with_their_lines_and_exit_codes() {
        let blocks = parse_blocks("x.md", DOC, "mocked");
        assert_eq!(blocks.len(), 1);
        let block = &blocks[0];
        assert_eq!(block.line, 3);
        assert_eq!(block.needs, ["jq"]);
        let got: Vec<(usize, i32)> = block.commands.iter().map(|c| (c.line, c.expect)).collect();
        assert_eq!(got, [(4, 0), (6, 1)]);
        assert!(block.commands[1]
            .text
            .ends_with("--pf 0    # exit 1: refused"));
        let lab = parse_blocks("x.md", DOC, "lab");
        assert_eq!(lab.len(), 1);
        assert_eq!(lab[0].commands[0].text, "dpuctl lab up");
        assert!(parse_blocks("x.md", DOC, "other").is_empty());
    }

    #[test]
    fn a_script_stops_at_the_first_command_with_another_status() {
        let doc = "```sh mocked\nx=5\ntest \"$x\" = 5\nfalse   # exit 1\ntrue    # exit 1\necho never\n```\n";
        let blocks = parse_blocks("y.md", doc, "mocked");
        let dir = tempfile::tempdir().expect("tempdir");
        let out = run_block(&blocks[0], dir.path(), dir.path(), &[]);
        assert_eq!(out.status.code(), Some(99));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("DOCS-EXAMPLE-FAILED y.md:5: exit 0, expected 1"),
            "{stderr}"
        );
        assert!(String::from_utf8_lossy(&out.stdout).is_empty());

        let good = parse_blocks(
            "y.md",
            "```sh mocked\nx=5\ntest \"$x\" = 5\n```\n",
            "mocked",
        );
        let out = run_block(&good[0], dir.path(), dir.path(), &[]);
        assert_block_ran(&good[0], &out);
    }
}
