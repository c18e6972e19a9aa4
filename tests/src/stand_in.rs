//! Programs the tiers put where a real one would run (ssh, perftest, a benchmark): small
//! shell scripts written into a test's temporary directory. One place for how they are
//! written and quoted, and for the ssh that runs a fleet's remote command here.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// `text` single-quoted for a POSIX shell (a `'` inside becomes `'\''`), for paths
/// written into a script.
pub fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Writes `body` as an executable `#!/bin/sh` script at `path`.
pub fn write_script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}")).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// An ssh that runs the remote command here, through `sh -c` as sshd would, written as
/// `dir/ssh`: ssh's options up to `--` are skipped and the destination's host part names
/// the "host". A host in `refused` fails as a refused connection does (exit 255, ssh's
/// message); any other is appended to `log` (one line per connection), its remote command
/// saved as `LOG.HOST`, and the `env` entries for it (`(host, "NAME=value")`) exported
/// first, so one "host" can behave unlike the others.
pub fn ssh_here(dir: &Path, log: &Path, refused: &[&str], env: &[(&str, &str)]) -> PathBuf {
    let log = sh_quote(log.to_str().expect("utf-8 log path"));
    let mut body = String::from(
        "while [ $# -gt 0 ] && [ \"$1\" != -- ]; do shift; done\nshift\nhost=${1#*@}\n",
    );
    for host in refused {
        body.push_str(&format!(
            "if [ \"$host\" = {h} ]; then\n    echo \"ssh: connect to host $host port 22: Connection refused\" >&2\n    exit 255\nfi\n",
            h = sh_quote(host)
        ));
    }
    body.push_str(&format!(
        "printf '%s\\n' \"$host\" >> {log}\nprintf '%s' \"$2\" > {log}.\"$host\"\n"
    ));
    for (host, assignment) in env {
        body.push_str(&format!(
            "if [ \"$host\" = {h} ]; then export {a}; fi\n",
            h = sh_quote(host),
            a = sh_quote(assignment)
        ));
    }
    body.push_str("exec sh -c \"$2\"\n");
    let path = dir.join("ssh");
    write_script(&path, &body);
    path
}
