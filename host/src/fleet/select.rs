//! `--select`: which targets of the fleet a command asks.
//!
//! Why a parsed type: a selector with a typo must be refused before any node is asked
//! (a run against the whole fleet when the user meant one rack is the expensive mistake),
//! and a selection that matches nothing is an error, not an empty success.

use std::fmt;

use super::target::Target;

/// One `--select` term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// A bare name: exactly that target.
    Name(String),
    /// `KEY=VALUE`: the label (or `name`) equals the value.
    Equals(String, String),
    /// `KEY!=VALUE`: the label (or `name`) is absent or differs.
    NotEquals(String, String),
}

/// Why a `--select` term or a selection was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectError {
    /// The term does not parse.
    #[error("--select `{term}`: {why}")]
    Syntax {
        /// The term as given.
        term: String,
        /// What is wrong.
        why: String,
    },
    /// No target matches every term.
    #[error("--select {terms} matches none of the {total} targets")]
    NothingSelected {
        /// The terms, as given.
        terms: String,
        /// How many targets there were.
        total: usize,
    },
}

impl Selector {
    /// Parses `NAME`, `KEY=VALUE` or `KEY!=VALUE`.
    pub fn parse(term: &str) -> Result<Self, SelectError> {
        let syntax = |why: &str| SelectError::Syntax {
            term: term.to_owned(),
            why: why.to_owned(),
        };
        let check = |part: &str| {
            if part.is_empty() {
                return Err(syntax("an empty key or value"));
            }
            super::inventory::check_label(part)
                .or_else(|_| super::inventory::check_name(part))
                .map_err(|why| syntax(&why))
        };
        if let Some((key, value)) = term.split_once("!=") {
            check(key)?;
            check(value)?;
            return Ok(Self::NotEquals(key.to_owned(), value.to_owned()));
        }
        if let Some((key, value)) = term.split_once('=') {
            check(key)?;
            check(value)?;
            return Ok(Self::Equals(key.to_owned(), value.to_owned()));
        }
        check(term)?;
        Ok(Self::Name(term.to_owned()))
    }

    /// Whether the target matches this term.
    pub fn matches(&self, target: &Target) -> bool {
        match self {
            Self::Name(name) => target.name == *name,
            Self::Equals(key, value) => target.label(key) == Some(value.as_str()),
            Self::NotEquals(key, value) => target.label(key) != Some(value.as_str()),
        }
    }

    /// Whether this term chooses a node known only by `name` (no labels): what a term
    /// does to a target without labels.
    pub fn matches_unlabelled(&self, name: &str) -> bool {
        match self {
            Self::Name(wanted) => name == wanted,
            Self::Equals(..) => false,
            Self::NotEquals(..) => true,
        }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => write!(f, "{name}"),
            Self::Equals(k, v) => write!(f, "{k}={v}"),
            Self::NotEquals(k, v) => write!(f, "{k}!={v}"),
        }
    }
}

/// The targets that match every term (all of them when there is none), in their order.
/// Refuses a selection that matches nothing.
pub fn select(targets: Vec<Target>, terms: &[Selector]) -> Result<Vec<Target>, SelectError> {
    if terms.is_empty() {
        return Ok(targets);
    }
    let total = targets.len();
    let chosen: Vec<Target> = targets
        .into_iter()
        .filter(|t| terms.iter().all(|s| s.matches(t)))
        .collect();
    if chosen.is_empty() {
        return Err(SelectError::NothingSelected {
            terms: terms
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" "),
            total,
        });
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use dpu_proto::Endpoint;

    use super::{select, SelectError, Selector};
    use crate::fleet::target::Target;

    fn fleet() -> Vec<Target> {
        ["a", "b", "c"]
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut t = Target::new(*name, Endpoint::Unix(format!("/s{i}").into()));
                t.labels
                    .insert("rack".into(), if i < 2 { "r1" } else { "r2" }.into());
                t
            })
            .collect()
    }

    fn names(targets: &[Target]) -> Vec<&str> {
        targets.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn terms_combine_and_name_is_a_label() {
        let terms = [
            Selector::parse("rack=r1").expect("valid"),
            Selector::parse("name!=a").expect("valid"),
        ];
        assert_eq!(names(&select(fleet(), &terms).expect("valid")), ["b"]);
        assert_eq!(
            names(&select(fleet(), &[Selector::parse("c").expect("valid")]).expect("valid")),
            ["c"]
        );
        assert_eq!(
            names(&select(fleet(), &[]).expect("valid")),
            ["a", "b", "c"]
        );
        // An absent label differs from every value.
        assert_eq!(
            names(&select(fleet(), &[Selector::parse("rail!=0").expect("valid")]).expect("valid")),
            ["a", "b", "c"]
        );
    }

    #[test]
    fn a_selection_of_nothing_and_bad_terms_are_refused() {
        let err =
            select(fleet(), &[Selector::parse("rack=r9").expect("valid")]).expect_err("refused");
        assert_eq!(
            err.to_string(),
            "--select rack=r9 matches none of the 3 targets"
        );
        assert!(matches!(
            Selector::parse("rack="),
            Err(SelectError::Syntax { .. })
        ));
        assert!(matches!(
            Selector::parse("ra ck=1"),
            Err(SelectError::Syntax { .. })
        ));
    }
}
