//! The OVS datapaths' lookup counters (`dpctl/show`) as probe samples: how many packets hit
//! a datapath flow, how many missed and went up to ovs-vswitchd as upcalls, and how many
//! upcalls were lost. `prove switch` holds the upcalls during its trials to a ceiling: a
//! packet ovs-vswitchd forwarded itself is no proof of the offload.
//!
//! Objects are `datapaths/{type@name}`; counters `lookups_hit`, `lookups_missed`,
//! `lookups_lost` (cumulative, packets). A datapath that prints no statistics, one that was
//! asked for by name and is not there, or ovs-vswitchd out of reach is an error for that
//! object: unknown, never zero.

use dpu_ovs::datapath::DatapathStats;
use dpu_probe::snapshot::{Sample, Source, SourceErrorKind, Unit};

use crate::ovs::OvsBackend;

/// A datapath whose counters could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DatapathReadError {
    /// `datapaths/{name}`; `datapaths/` when the datapaths could not even be listed.
    pub(crate) object: String,
    /// What went wrong.
    pub(crate) message: String,
    /// [`SourceErrorKind::NotFound`] for a datapath asked for by name that ovs-vswitchd
    /// does not have; unreadable otherwise.
    pub(crate) kind: SourceErrorKind,
}

/// The lookup counters of the requested datapaths (`None`: every datapath ovs-vswitchd
/// has), from one `dpctl/show`.
pub(crate) async fn read(
    ovs: &OvsBackend,
    wanted: &[Option<String>],
) -> (Vec<Sample>, Vec<DatapathReadError>) {
    let listed = match ovs.clients() {
        Ok(clients) => clients
            .vswitchd
            .show_datapaths()
            .await
            .map_err(|e| crate::errors::error_chain(&e)),
        Err(unavailable) => Err(unavailable.to_string()),
    };
    match listed {
        Ok(all) => samples_of(&all, wanted),
        Err(message) => (
            Vec::new(),
            vec![DatapathReadError {
                object: "datapaths/".to_owned(),
                message: format!("cannot read the datapaths (ovs-vswitchd dpctl/show): {message}"),
                kind: SourceErrorKind::Unreadable,
            }],
        ),
    }
}

/// The samples of `wanted` among `all`, and an error for each that is missing or printed
/// no statistics.
fn samples_of(
    all: &[DatapathStats],
    wanted: &[Option<String>],
) -> (Vec<Sample>, Vec<DatapathReadError>) {
    let every = wanted.iter().any(Option::is_none);
    let mut names: Vec<&str> = wanted.iter().flatten().map(String::as_str).collect();
    if every {
        names.extend(all.iter().map(|d| d.name.as_str()));
    }
    names.sort_unstable();
    names.dedup();
    let (mut samples, mut errors) = (Vec::new(), Vec::new());
    for name in names {
        let object = format!("datapaths/{name}");
        match all.iter().find(|d| d.name == name) {
            Some(DatapathStats {
                lookups: Some(lookups),
                ..
            }) => {
                let sample = |counter: &'static str, value: u64| {
                    Sample::cumulative(
                        Source::OvsDatapath,
                        object.clone(),
                        counter,
                        value,
                        Unit::Packets,
                    )
                };
                samples.extend([
                    sample("lookups_hit", lookups.hit),
                    sample("lookups_missed", lookups.missed),
                    sample("lookups_lost", lookups.lost),
                ]);
            }
            Some(_) => errors.push(DatapathReadError {
                object,
                message: format!("datapath {name} printed no lookup statistics"),
                kind: SourceErrorKind::Unreadable,
            }),
            None => errors.push(DatapathReadError {
                object,
                message: format!(
                    "no datapath {name} (ovs-vswitchd has: {})",
                    if all.is_empty() {
                        "none".to_owned()
                    } else {
                        all.iter()
                            .map(|d| d.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
                kind: SourceErrorKind::NotFound,
            }),
        }
    }
    (samples, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpu_ovs::datapath::parse_show;

    const SHOW: &str = "system@ovs-system:\n  lookups: hit:38 missed:10 lost:1\n  flows: 2\n\
                        netdev@ovs-netdev:\n  port 0: ovs-netdev (tap)\n";

    #[test]
    fn every_datapath_or_the_one_asked_for_and_unknown_is_an_error_not_zero() {
        let all = parse_show(SHOW).expect("parses");
        let (samples, errors) = samples_of(&all, &[None]);
        let missed = samples
            .iter()
            .find(|s| s.key.counter == "lookups_missed")
            .expect("missed");
        assert_eq!(missed.key.object, "datapaths/system@ovs-system");
        assert_eq!(missed.value, 10);
        assert_eq!(samples.len(), 3, "{samples:?}");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].object, "datapaths/netdev@ovs-netdev");
        assert!(
            errors[0].message.contains("no lookup statistics"),
            "{errors:?}"
        );
        assert_eq!(errors[0].kind, SourceErrorKind::Unreadable, "it exists");

        let (samples, errors) = samples_of(&all, &[Some("dummy@nothere".to_owned())]);
        assert!(samples.is_empty());
        assert!(
            errors[0].message.contains("no datapath dummy@nothere")
                && errors[0].message.contains("system@ovs-system"),
            "{errors:?}"
        );
        assert_eq!(errors[0].kind, SourceErrorKind::NotFound);
        let (samples, errors) = samples_of(&all, &[Some("system@ovs-system".to_owned())]);
        assert_eq!((samples.len(), errors.len()), (3, 0));
    }
}
