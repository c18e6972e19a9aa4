//! A parameter that cannot be run, said by the field it is about.
//!
//! Why a type of its own: this library does not know how its caller names a parameter
//! (`dpuctl` has flags, a plan file has keys, a Rust caller has struct fields), so an error
//! about one must not speak any of those names. A [`ParamError`] carries the [`Field`] it
//! is about and a reason whose mentions of fields are [`Field`]s too: its `Display` says
//! each in words ("block size"), and a front end renders it with its own names
//! ([`ParamError::render`]: `dpuctl` maps each field to its flag in one table).

use std::fmt;

/// A parameter of an entry point of this library, by what it means. A front end maps each
/// to the name its user typed (`dpuctl`: the flag), exhaustively, so adding one here makes
/// every front end say how it is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// How many bytes each read asks for.
    BlockSize,
    /// How many bytes to read in all.
    Size,
    /// How many reads are in flight.
    IoDepth,
    /// How long the workload runs.
    Duration,
    /// How far a measured rate may be from its limit.
    Tolerance,
    /// How many trials the workload is split into.
    Trials,
    /// How many packets to send in all.
    Packets,
    /// How many witnesses a proof must have.
    Witnesses,
    /// The far end's agent, the second witness.
    TargetAgent,
    /// The interface the far end receives on.
    TargetInterface,
    /// The host interface a run sends from or reads.
    Interface,
    /// The device a run uses: the disk a storage proof reads, the RDMA device a RoCE run
    /// sends from.
    Device,
    /// The far end's RDMA device.
    PeerDevice,
    /// The address a RoCE run's clients connect to.
    PeerAddress,
    /// The RoCE tests to run.
    Tests,
    /// The message sizes of the bandwidth tests.
    Sizes,
    /// The message sizes of the latency tests.
    LatencySizes,
    /// How many iterations a perftest run makes.
    Iterations,
    /// How long a TCP test runs.
    TcpSeconds,
    /// The limit of one run.
    RunTimeout,
    /// The first TCP port of a run's servers.
    BasePort,
    /// The id a demo run is known by (dpu-demo: one table of fields for every library
    /// dpuctl fronts).
    RunId,
    /// The far host a RoCE run's servers run on (an ssh destination).
    Peer,
    /// The share of the line rate a RoCE pair must reach.
    LineRatePercent,
    /// The line rate a RoCE pair is judged against, when given.
    LineRateGbps,
    /// The dpuctl program a fleet runs on each host.
    Dpuctl,
    /// How many hosts or targets are worked on at once.
    Parallel,
}

impl Field {
    /// Every field, for a front end's test that it names each.
    pub const ALL: [Field; 27] = [
        Field::BlockSize,
        Field::Size,
        Field::IoDepth,
        Field::Duration,
        Field::Tolerance,
        Field::Trials,
        Field::Packets,
        Field::Witnesses,
        Field::TargetAgent,
        Field::TargetInterface,
        Field::Interface,
        Field::Device,
        Field::PeerDevice,
        Field::PeerAddress,
        Field::Tests,
        Field::Sizes,
        Field::LatencySizes,
        Field::Iterations,
        Field::TcpSeconds,
        Field::RunTimeout,
        Field::BasePort,
        Field::RunId,
        Field::Peer,
        Field::LineRatePercent,
        Field::LineRateGbps,
        Field::Dpuctl,
        Field::Parallel,
    ];

    /// The field in words, as this library says it when nobody renders it otherwise.
    pub fn words(self) -> &'static str {
        match self {
            Field::BlockSize => "block size",
            Field::Size => "size",
            Field::IoDepth => "I/O depth",
            Field::Duration => "duration",
            Field::Tolerance => "tolerance",
            Field::Trials => "trials",
            Field::Packets => "packets",
            Field::Witnesses => "witnesses",
            Field::TargetAgent => "target agent",
            Field::TargetInterface => "target interface",
            Field::Interface => "interface",
            Field::Device => "device",
            Field::PeerDevice => "peer device",
            Field::PeerAddress => "peer address",
            Field::Tests => "tests",
            Field::Sizes => "sizes",
            Field::LatencySizes => "latency sizes",
            Field::Iterations => "iterations",
            Field::TcpSeconds => "TCP seconds",
            Field::RunTimeout => "run timeout",
            Field::BasePort => "base port",
            Field::RunId => "run id",
            Field::Peer => "peer",
            Field::LineRatePercent => "line rate percent",
            Field::LineRateGbps => "line rate (Gb/s)",
            Field::Dpuctl => "dpuctl program",
            Field::Parallel => "parallel",
        }
    }
}

/// One piece of a reason: words, or a field's name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Field(Field),
}

/// A parameter that cannot be run: which one, and why, in a sentence that names fields as
/// [`Field`]s. Built with [`ParamError::new`] and [`ParamError::text`]/[`ParamError::field`]
/// in reading order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    field: Field,
    reason: Vec<Part>,
}

impl ParamError {
    /// An error about `field`, its sentence empty so far.
    pub fn new(field: Field) -> Self {
        Self {
            field,
            reason: Vec::new(),
        }
    }

    /// Adds words to the sentence.
    #[must_use]
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.reason.push(Part::Text(text.into()));
        self
    }

    /// Adds a field's name to the sentence (said as the front end names it).
    #[must_use]
    pub fn field(mut self, field: Field) -> Self {
        self.reason.push(Part::Field(field));
        self
    }

    /// The field the error is about (the one to correct).
    pub fn about(&self) -> Field {
        self.field
    }

    /// The sentence with each field said as `name` says it: how a front end puts its own
    /// names (flags, keys) into the library's sentence.
    pub fn render(&self, name: impl Fn(Field) -> String) -> String {
        self.reason
            .iter()
            .map(|part| match part {
                Part::Text(text) => text.clone(),
                Part::Field(field) => name(*field),
            })
            .collect()
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(|field| field.words().to_owned()))
    }
}

impl std::error::Error for ParamError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn smaller() -> ParamError {
        ParamError::new(Field::Size)
            .field(Field::Size)
            .text(" 1024 must be at least ")
            .field(Field::BlockSize)
            .text(" 4096")
    }

    #[test]
    fn the_library_says_fields_in_words_and_a_front_end_in_its_own_names() {
        let err = smaller();
        assert_eq!(
            err.to_string(),
            "size 1024 must be at least block size 4096"
        );
        let flags = err.render(|field| match field {
            Field::Size => "--size".to_owned(),
            Field::BlockSize => "--bs".to_owned(),
            other => other.words().to_owned(),
        });
        assert_eq!(flags, "--size 1024 must be at least --bs 4096");
        assert_eq!(err.about(), Field::Size);
    }

    #[test]
    fn no_library_text_has_a_flag_in_it() {
        // Control: the sentence above would carry a flag if a field were typed as text.
        let typed = ParamError::new(Field::Size).text("--size 1 is too small");
        assert!(typed.to_string().contains("--"));
        for field in Field::ALL {
            assert!(!field.words().contains("--"), "{field:?}");
        }
        assert!(!smaller().to_string().contains("--"));
    }
}
