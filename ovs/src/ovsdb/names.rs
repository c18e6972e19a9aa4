//! Name checks done before any transaction. Bridges, ports and interfaces of type `internal`
//! or `system` become Linux network devices, and the kernel refuses names that are empty,
//! longer than `IFNAMSIZ - 1` = 15 bytes, `.` or `..`, or contain `/` or whitespace
//! (`dev_valid_name`); OVSDB itself would accept them and ovs-vswitchd would then fail
//! asynchronously, with the error only in the Interface `error` column. Refusing them here
//! gives the caller the reason at once.

use super::Error;

/// The longest name the kernel accepts for a network device (`IFNAMSIZ` is 16 with the NUL).
pub const MAX_NAME_LEN: usize = 15;

/// Checks a bridge, port or interface name; `kind` names it in the error.
pub fn validate_name(kind: &'static str, name: &str) -> Result<(), Error> {
    let reason = if name.is_empty() {
        Some("must not be empty")
    } else if name.len() > MAX_NAME_LEN {
        Some("must be at most 15 bytes (the kernel's IFNAMSIZ)")
    } else if name == "." || name == ".." {
        Some("must not be \".\" or \"..\"")
    } else if name.contains('/') {
        Some("must not contain '/'")
    } else if name.chars().any(char::is_whitespace) {
        Some("must not contain whitespace")
    } else if name.chars().any(char::is_control) {
        Some("must not contain control characters")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(Error::InvalidName {
            kind,
            name: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for name in [
            "br0",
            "ovsbr1",
            "pf0vf0",
            "p0",
            "a",
            "abcdefghijklmno",
            "vx-lan_1.2",
        ] {
            validate_name("port", name).expect(name);
        }
    }

    #[test]
    fn rejects_what_the_kernel_rejects() {
        for name in [
            "",
            "abcdefghijklmnop",
            ".",
            "..",
            "a/b",
            "a b",
            "tab\t",
            "nl\n",
            "ü12345678901234",
        ] {
            let err = validate_name("port", name).expect_err(name);
            assert!(
                matches!(&err, Error::InvalidName { kind: "port", name: n, .. } if n == name),
                "{err:?}"
            );
        }
    }
}
