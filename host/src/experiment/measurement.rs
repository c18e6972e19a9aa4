//! From a plan's measurement to the [`Measure`] that runs its trials: apart from
//! [`super::measure`] so that the `roce-perf` measurement ([`super::measure_roce`]), which
//! implements its trait, and the others stay one-way.

use super::measure::{CommandMeasure, Measure, MeasureError, StorageMeasure};
use super::measure_roce::{RoceContext, RocePerfMeasure, RoceTrial, DEFAULT_ITERATIONS};
use super::plan::{Measurement, OutputParser};

/// The measurement of a plan; a `roce-perf` one resolves its peer here (over ssh, before
/// any knob changes), with `roce` saying where counters are read and how ssh is run.
pub fn measurement_for(
    measurement: &Measurement,
    roce: &RoceContext,
) -> Result<Box<dyn Measure>, MeasureError> {
    Ok(match measurement {
        Measurement::Command { argv, parser } => Box::new(CommandMeasure {
            argv: argv.clone(),
            parser: *parser,
        }),
        Measurement::NcclTests { command } => Box::new(CommandMeasure {
            argv: command.clone(),
            parser: OutputParser::NcclTests,
        }),
        Measurement::StorageRead { device, size, bs } => Box::new(StorageMeasure {
            device: device.clone(),
            size: *size,
            bs: *bs,
        }),
        Measurement::RocePerf {
            peer,
            test,
            size,
            iterations,
            peer_address,
        } => Box::new(RocePerfMeasure::connect(
            roce,
            &RoceTrial {
                peer: peer.clone(),
                test: *test,
                size: *size,
                iterations: iterations.unwrap_or(DEFAULT_ITERATIONS),
                peer_address: *peer_address,
            },
        )?),
    })
}
