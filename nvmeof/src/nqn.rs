//! NVMe Qualified Names, validated before they reach SNAP, SPDK or the kernel.
//!
//! An NQN names a subsystem or host (NVMe Base Specification, "NVMe Qualified Names"). It is
//! also used verbatim as a directory name under `/sys/kernel/config/nvmet/subsystems/`, so
//! besides the spec's shape we refuse anything a path or a shell would misread.

use std::fmt;
use std::str::FromStr;

/// The longest NQN the spec allows, in bytes (the field is 256 bytes, NUL-terminated, and
/// the spec caps the name at 223).
pub const MAX_NQN_LEN: usize = 223;

/// The well-known NQN of a discovery controller.
pub const DISCOVERY_NQN: &str = "nqn.2014-08.org.nvmexpress.discovery";

const UUID_PREFIX: &str = "nqn.2014-08.org.nvmexpress:uuid:";

/// A validated NQN; holding one proves the string is safe to send to SNAP and to use as a
/// configfs directory name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Nqn(String);

/// Why a string is not an acceptable NQN; each variant names the offending part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NqnError {
    /// The string is empty.
    #[error("NQN is empty")]
    Empty,
    /// Longer than [`MAX_NQN_LEN`] bytes.
    #[error("NQN is {len} bytes long, the maximum is {MAX_NQN_LEN}")]
    TooLong {
        /// The actual length in bytes.
        len: usize,
    },
    /// Contains a character outside [`ALLOWED_PUNCTUATION`], letters and digits (ASCII).
    #[error("NQN {nqn:?} contains forbidden character {ch:?} at byte {at}")]
    ForbiddenChar {
        /// The rejected NQN.
        nqn: String,
        /// The forbidden character.
        ch: char,
        /// Its byte offset.
        at: usize,
    },
    /// Does not start with `nqn.`.
    #[error("NQN {nqn:?} does not start with \"nqn.\"")]
    MissingPrefix {
        /// The rejected NQN.
        nqn: String,
    },
    /// The `yyyy-mm` date after `nqn.` is malformed.
    #[error("NQN {nqn:?} needs a date \"yyyy-mm.\" after \"nqn.\" (month 01-12): {detail}")]
    BadDate {
        /// The rejected NQN.
        nqn: String,
        /// What is wrong with the date.
        detail: String,
    },
    /// The reverse domain name after the date is malformed.
    #[error("NQN {nqn:?} has an invalid reverse domain name: {detail}")]
    BadDomain {
        /// The rejected NQN.
        nqn: String,
        /// What is wrong with the domain.
        detail: String,
    },
    /// Nothing follows the `:` after the domain.
    #[error("NQN {nqn:?} has an empty string after ':'")]
    EmptySuffix {
        /// The rejected NQN.
        nqn: String,
    },
    /// The UUID form is used but the UUID is not `8-4-4-4-12` hex digits.
    #[error("NQN {nqn:?} uses the UUID form but {uuid:?} is not an 8-4-4-4-12 hex UUID")]
    BadUuid {
        /// The rejected NQN.
        nqn: String,
        /// The part after `:uuid:`.
        uuid: String,
    },
}

impl Nqn {
    /// Validates `s` as an NQN: `nqn.yyyy-mm.<reverse domain>[:<string>]`, the UUID form
    /// `nqn.2014-08.org.nvmexpress:uuid:<uuid>`, or the discovery NQN.
    pub fn parse(s: &str) -> Result<Self, NqnError> {
        validate(s)?;
        Ok(Self(s.to_owned()))
    }

    /// The NQN as sent on the wire.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the well-known discovery NQN.
    pub fn is_discovery(&self) -> bool {
        self.0 == DISCOVERY_NQN
    }

    /// Consumes the NQN, returning the string.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// Punctuation an NQN may carry besides ASCII letters and digits. The NVMe spec allows any
/// UTF-8, but every NQN seen in practice (reverse domains, `:uuid:`, SNAP's and SPDK's
/// names) fits this set, and the rest causes harm: `/` splits resource names and sysfs
/// paths, `,` and `=` split nvme-fabrics option strings, non-ASCII differs between tools,
/// and shell metacharacters have no business in a name an operator may paste into a shell.
pub const ALLOWED_PUNCTUATION: &str = ".-_:@+%";

fn validate(s: &str) -> Result<(), NqnError> {
    let nqn = || s.to_owned();
    if s.is_empty() {
        return Err(NqnError::Empty);
    }
    if s.len() > MAX_NQN_LEN {
        return Err(NqnError::TooLong { len: s.len() });
    }
    if let Some((at, ch)) = s
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || ALLOWED_PUNCTUATION.contains(c)))
    {
        return Err(NqnError::ForbiddenChar { nqn: nqn(), ch, at });
    }
    if s == DISCOVERY_NQN {
        return Ok(());
    }
    if let Some(uuid) = s.strip_prefix(UUID_PREFIX) {
        return if is_uuid(uuid) {
            Ok(())
        } else {
            Err(NqnError::BadUuid {
                nqn: nqn(),
                uuid: uuid.to_owned(),
            })
        };
    }
    let rest = s
        .strip_prefix("nqn.")
        .ok_or_else(|| NqnError::MissingPrefix { nqn: nqn() })?;
    let rest = check_date(rest).map_err(|detail| NqnError::BadDate { nqn: nqn(), detail })?;
    let (domain, suffix) = match rest.split_once(':') {
        Some((domain, suffix)) => (domain, Some(suffix)),
        None => (rest, None),
    };
    check_domain(domain).map_err(|detail| NqnError::BadDomain { nqn: nqn(), detail })?;
    if suffix == Some("") {
        return Err(NqnError::EmptySuffix { nqn: nqn() });
    }
    Ok(())
}

/// Checks `yyyy-mm.` and returns what follows it.
fn check_date(rest: &str) -> Result<&str, String> {
    let b = rest.as_bytes();
    if b.len() < 8 {
        return Err("the name ends too early".to_owned());
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !digits(0..4) || b[4] != b'-' || !digits(5..7) || b[7] != b'.' {
        let found = String::from_utf8_lossy(&b[..8]);
        return Err(format!("found {found:?}"));
    }
    // All eight bytes are ASCII now, so these are char boundaries.
    let month = &rest[5..7];
    if !("01"..="12").contains(&month) {
        return Err(format!("month {month} is not 01-12"));
    }
    Ok(&rest[8..])
}

fn check_domain(domain: &str) -> Result<(), String> {
    if domain.is_empty() {
        return Err("it is empty".to_owned());
    }
    if domain.split('.').any(str::is_empty) {
        return Err(format!("{domain:?} has an empty label"));
    }
    if let Some(c) = domain
        .chars()
        .find(|&c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.'))
    {
        return Err(format!("{domain:?} contains {c:?} (allowed: a-z 0-9 - .)"));
    }
    Ok(())
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, len)| g.len() == len && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

impl fmt::Display for Nqn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Nqn {
    type Err = NqnError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl AsRef<str> for Nqn {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_nqns() {
        for s in [
            "nqn.2022-10.io.nvda.nvme:0",
            "nqn.2014-08.org.nvmexpress.discovery",
            "nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6",
            "nqn.2014-08.org.nvmexpress:uuid:F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6",
            "nqn.2016-06.io.spdk:cnode1",
            "nqn.2014-08.com.example:nvme:nvm-subsystem-sn-d78432",
            "nqn.2014-08.com.example",
        ] {
            let nqn = Nqn::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(nqn.as_str(), s);
        }
        assert!(Nqn::parse(DISCOVERY_NQN).expect("valid").is_discovery());
        let longest = format!("nqn.2022-10.io.nvda:{}", "x".repeat(MAX_NQN_LEN - 20));
        assert_eq!(longest.len(), MAX_NQN_LEN);
        assert!(Nqn::parse(&longest).is_ok());
    }

    #[test]
    fn invalid_nqns_say_what_is_wrong() {
        let cases: &[(&str, &str)] = &[
            ("", "empty"),
            ("nqn.2022-10.io.nvda:a/b", "'/'"),
            ("nqn.2022-10.io.nvda:a b", "' '"),
            ("nqn.2022-10.io.nvda:a\tb", "'\\t'"),
            ("nqn.2022-10.io.nvda:a\u{7}", "'\\u{7}'"),
            ("iqn.2022-10.io.nvda:0", "does not start with \"nqn.\""),
            ("nqn.22-10.io.nvda:0", "yyyy-mm"),
            ("nqn.2022-13.io.nvda:0", "month 13"),
            ("nqn.2022-00.io.nvda:0", "month 00"),
            ("nqn.2022-1x.io.nvda:0", "yyyy-mm"),
            ("nqn.2022-1\u{e9}.io.nvda:0", "forbidden character '\u{e9}'"),
            (
                "nqn.2016-06.io.spdk:cn\u{f6}de",
                "forbidden character '\u{f6}'",
            ),
            ("nqn.2016-06.io.spdk:a;$(reboot)", "forbidden character ';'"),
            ("nqn.2016-06.io.spdk:a,b=c", "forbidden character ','"),
            ("nqn.2022-10", "ends too early"),
            ("nqn.2022-10.:0", "reverse domain name: it is empty"),
            ("nqn.2022-10.io..nvda:0", "empty label"),
            ("nqn.2022-10.io.NVDA:0", "contains 'N'"),
            ("nqn.2022-10.io_nvda:0", "contains '_'"),
            ("nqn.2022-10.io.nvda:", "empty string after ':'"),
            ("nqn.2014-08.org.nvmexpress:uuid:1234", "8-4-4-4-12"),
            (
                "nqn.2014-08.org.nvmexpress:uuid:g81d4fae-7dec-11d0-a765-00a0c91e6bf6",
                "8-4-4-4-12",
            ),
        ];
        for (input, expected) in cases {
            let err = Nqn::parse(input).expect_err(input).to_string();
            assert!(
                err.contains(expected),
                "{input:?}: {err:?} lacks {expected:?}"
            );
        }
        let too_long = format!("nqn.2022-10.io.nvda:{}", "x".repeat(MAX_NQN_LEN));
        assert!(matches!(
            Nqn::parse(&too_long),
            Err(NqnError::TooLong { .. })
        ));
    }

    #[test]
    fn from_str_and_display_round_trip() {
        let nqn: Nqn = "nqn.2022-10.io.nvda.nvme:0".parse().expect("valid");
        assert_eq!(nqn.to_string(), "nqn.2022-10.io.nvda.nvme:0");
    }
}
