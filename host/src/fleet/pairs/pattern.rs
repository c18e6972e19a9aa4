//! Which host pairs `fleet roce pairs` tests: the neighbour in a ring, every pair, the pairs
//! inside each group of a label (the hosts of one rail), or the pairs across groups.
//!
//! Why several: a ring finds a bad link or node in N runs per direction, all-pairs pins it
//! down at N² cost, and rail-optimised fabrics only promise line rate within a rail
//! (`within rail`) while spine trouble shows only between racks (`across rack`).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// The set of pairs to test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "label", rename_all = "kebab-case")]
pub enum PairPattern {
    /// Each host with the next one in inventory order (the last with the first).
    Ring,
    /// Every two hosts.
    AllPairs,
    /// Every two hosts with the same value of the label.
    Within(String),
    /// Every two hosts with different values of the label.
    Across(String),
}

/// Why a pattern was not understood; the message names what was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// Not one of the patterns.
    #[error("unknown pair pattern {0:?}: use ring, all-pairs, within:LABEL or across:LABEL")]
    Unknown(String),
    /// `within:`/`across:` with a label name no inventory can hold.
    #[error("{0:?} is not a label name (1-63 letters, digits, '.', '_', '-' or one '/' prefix)")]
    BadLabel(String),
}

/// Whether `key` can be a label key: what inventories and Kubernetes label keys use
/// (`rail`, `topology.kubernetes.io/zone`), never anything a shell or a regex would read.
pub fn valid_label(key: &str) -> bool {
    let name = key.rsplit_once('/').map_or(key, |(prefix, name)| {
        let prefix_ok = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c));
        if prefix_ok {
            name
        } else {
            ""
        }
    });
    !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

impl FromStr for PairPattern {
    type Err = PatternError;

    /// `ring`, `all-pairs`, `within:LABEL`, `across:LABEL`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let label = |l: &str| {
            if valid_label(l) {
                Ok(l.to_owned())
            } else {
                Err(PatternError::BadLabel(l.to_owned()))
            }
        };
        match text.split_once(':') {
            None if text == "ring" => Ok(Self::Ring),
            None if text == "all-pairs" => Ok(Self::AllPairs),
            Some(("within", l)) => Ok(Self::Within(label(l)?)),
            Some(("across", l)) => Ok(Self::Across(label(l)?)),
            _ => Err(PatternError::Unknown(text.to_owned())),
        }
    }
}

impl fmt::Display for PairPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ring => write!(f, "ring"),
            Self::AllPairs => write!(f, "all-pairs"),
            Self::Within(l) => write!(f, "within:{l}"),
            Self::Across(l) => write!(f, "across:{l}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_print_the_same() {
        for text in [
            "ring",
            "all-pairs",
            "within:rail",
            "across:topology.k8s.io/zone",
        ] {
            let p: PairPattern = text.parse().expect(text);
            assert_eq!(p.to_string(), text);
        }
        assert_eq!(
            "within:rail".parse::<PairPattern>(),
            Ok(PairPattern::Within("rail".into()))
        );
    }

    #[test]
    fn unknown_patterns_and_odd_labels_are_named() {
        assert_eq!(
            "star".parse::<PairPattern>(),
            Err(PatternError::Unknown("star".into()))
        );
        assert_eq!(
            "within".parse::<PairPattern>(),
            Err(PatternError::Unknown("within".into()))
        );
        for bad in ["", "-x", "a b", "r$(x)", "/rail", "a/b/c"] {
            assert_eq!(
                format!("within:{bad}").parse::<PairPattern>(),
                Err(PatternError::BadLabel(bad.into())),
                "{bad}"
            );
        }
    }
}
