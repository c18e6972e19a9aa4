//! The shape of an experiment that both the plan and the statistics need: which value each
//! phase runs (the order) and which way the metric is better.

use serde::{Deserialize, Serialize};

/// Which of the two values a phase runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Arm {
    /// The baseline: the value the knob had, and returns to.
    A,
    /// The value under test.
    B,
}

/// The order of the phases. Starting and ending on A is the point of the method: the
/// return to the baseline shows whether the system itself moved while B ran (drift), which
/// a single A-then-B comparison cannot tell from an effect of B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Order {
    /// A, B, A: the shortest order that can see drift.
    #[default]
    #[serde(rename = "ABA")]
    Aba,
    /// A, B, A, B, A: B measured twice, three baselines for the drift check.
    #[serde(rename = "ABABA")]
    Ababa,
}

impl Order {
    /// The phases in the order they run.
    pub fn arms(self) -> &'static [Arm] {
        match self {
            Self::Aba => &[Arm::A, Arm::B, Arm::A],
            Self::Ababa => &[Arm::A, Arm::B, Arm::A, Arm::B, Arm::A],
        }
    }

    /// The name plans and reports use: `ABA` or `ABABA`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Aba => "ABA",
            Self::Ababa => "ABABA",
        }
    }

    /// Parses `ABA` or `ABABA`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ABA" => Some(Self::Aba),
            "ABABA" => Some(Self::Ababa),
            _ => None,
        }
    }

    /// Each phase's label in reports: `A1`, `B1`, `A2`, ... (numbered per arm).
    pub fn labels(self) -> Vec<String> {
        let (mut a, mut b) = (0, 0);
        self.arms()
            .iter()
            .map(|arm| match arm {
                Arm::A => {
                    a += 1;
                    format!("A{a}")
                }
                Arm::B => {
                    b += 1;
                    format!("B{b}")
                }
            })
            .collect()
    }
}

/// Which way the metric is better. A property of the metric, not of the knob: bandwidth is
/// better higher, latency lower, so the same difference is an improvement for one and a
/// regression for the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Bandwidth, operations per second, bus bandwidth.
    Higher,
    /// Latency, completion time.
    Lower,
}

impl Direction {
    /// Whether a change of `delta` (B − A) is for the better.
    pub fn is_better(self, delta: f64) -> bool {
        match self {
            Self::Higher => delta > 0.0,
            Self::Lower => delta < 0.0,
        }
    }

    /// The name plans use: `higher` or `lower`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Higher => "higher",
            Self::Lower => "lower",
        }
    }

    /// Parses `higher` or `lower`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "higher" => Some(Self::Higher),
            "lower" => Some(Self::Lower),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_run_and_label_their_phases() {
        assert_eq!(Order::Aba.arms(), [Arm::A, Arm::B, Arm::A]);
        assert_eq!(Order::Aba.labels(), ["A1", "B1", "A2"]);
        assert_eq!(Order::Ababa.labels(), ["A1", "B1", "A2", "B2", "A3"]);
        assert_eq!(Order::parse("ABABA"), Some(Order::Ababa));
        assert_eq!(Order::parse("aba"), None);
        assert_eq!(Order::default(), Order::Aba);
    }

    #[test]
    fn direction_decides_which_sign_is_better() {
        assert!(Direction::Higher.is_better(1.0));
        assert!(!Direction::Higher.is_better(-1.0));
        assert!(Direction::Lower.is_better(-1.0));
        assert!(!Direction::Lower.is_better(1.0));
        assert!(!Direction::Lower.is_better(0.0));
    }
}
