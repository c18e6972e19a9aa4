//! One scrape: read every counter once (shared by the scrapes that arrive meanwhile),
//! bounded by `read_timeout`, and encode it with the agent's own metrics.
//!
//! The probe's part (sysfs, netlink) runs on the blocking pool with one [`Sampler`] kept
//! for the agent's life, so the netlink socket is opened once. A reading that outlives
//! `read_timeout` keeps the sampler until it ends; scrapes meanwhile do not start another
//! (a hung sysfs read cannot pile up threads) and answer its sources as unreadable.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use dpu_ovs::flow::DumpType;
use dpu_probe::counters::{CounterSelector, Sampler};
use dpu_probe::netdev::RepresentorRole;
use dpu_probe::snapshot::{Sample, Snapshot, Source};
use prometheus_client::encoding::{prometheus_text, text};

use super::counters::{Reading, Readout};
use super::ethtool_prio::{priority_counters, PrioCounter};
pub(crate) use super::format::Format;
use super::layout::LayoutCache;
use super::names::FamilyKey;
use super::ovs_levels::FlowLevels;
use super::roles::{role_name, RoleReader};
use crate::config::MetricsConfig;
use crate::context::AgentContext;
use crate::ovs::flows::{list_flows, FlowQuery};

/// The latest reading and when it finished.
#[derive(Debug)]
struct Latest {
    finished: Instant,
    reading: Arc<Readout>,
}

/// The probe's part of one reading.
enum ProbePart {
    Read {
        snapshot: Snapshot,
        roles: Vec<(String, RepresentorRole)>,
        /// The uplinks' per-priority counters (live systems only); `Err` per uplink
        /// that could not be asked.
        priorities: Vec<(String, Result<Vec<PrioCounter>, String>)>,
    },
    /// Not read: why (timed out, still busy from a timed-out scrape, task failed).
    Unread(String),
}

/// The probe sources a reading covers (tc only when configured).
fn probe_sources(tc: bool) -> Vec<Source> {
    let mut sources = vec![
        Source::Rdma,
        Source::RdmaHw,
        Source::Netdev,
        Source::NetdevOffload,
        Source::Block,
    ];
    if tc {
        sources.push(Source::Tc);
    }
    sources
}

/// What reads the probe's part, kept from one reading to the next: the sampler (its
/// descriptors and netlink socket) and the roles' `phys_port_name` files.
#[derive(Debug)]
struct ProbeReaders {
    sampler: Sampler,
    roles: RoleReader,
}

impl ProbeReaders {
    fn new(root: dpu_probe::SysRoot) -> Self {
        Self {
            sampler: Sampler::new(root),
            roles: RoleReader::default(),
        }
    }
}

/// Serves scrapes for one agent.
#[derive(Debug)]
pub(crate) struct Scraper {
    ctx: Arc<AgentContext>,
    config: MetricsConfig,
    /// Held while a reading runs: scrapes that arrive meanwhile wait, then share it.
    latest: tokio::sync::Mutex<Option<Latest>>,
    /// `None` while a reading (possibly one a scrape gave up on) holds it.
    sampler: Arc<Mutex<Option<ProbeReaders>>>,
    /// The names and labels of the counter tree, encoded once while it stays the same.
    layouts: LayoutCache,
}

impl Scraper {
    /// A scraper over the agent's root and backends.
    pub(crate) fn new(ctx: Arc<AgentContext>, config: &MetricsConfig) -> Self {
        let sampler = ProbeReaders::new(ctx.root.clone());
        Self {
            ctx,
            config: config.clone(),
            latest: tokio::sync::Mutex::new(None),
            sampler: Arc::new(Mutex::new(Some(sampler))),
            layouts: LayoutCache::default(),
        }
    }

    /// The answer to one scrape in `format`.
    pub(crate) async fn scrape(&self, format: Format) -> Result<String, std::fmt::Error> {
        let (reading, shared) = self.reading().await;
        self.ctx.metrics.scrape_answered(shared);
        // The agent's own metrics are a few kilobytes.
        let mut out = String::with_capacity(reading.encoded_len(format) + 16 * 1024);
        match format {
            Format::OpenMetrics => {
                text::encode_registry(&mut out, self.ctx.metrics.registry())?;
                reading.encode(format, &mut out)?;
                text::encode_eof(&mut out)?;
            }
            Format::Text => {
                prometheus_text::encode(&mut out, self.ctx.metrics.registry())?;
                reading.encode(format, &mut out)?;
            }
        }
        Ok(out)
    }

    /// A reading that finished after this scrape arrived (shared: `true`), or a new one.
    async fn reading(&self) -> (Arc<Readout>, bool) {
        let arrived = Instant::now();
        let mut latest = self.latest.lock().await;
        if let Some(latest) = latest.as_ref() {
            if latest.finished >= arrived {
                return (Arc::clone(&latest.reading), true);
            }
        }
        let reading = Arc::new(self.read().await);
        *latest = Some(Latest {
            finished: Instant::now(),
            reading: Arc::clone(&reading),
        });
        (reading, false)
    }

    /// Reads every source at once, each bounded by `read_timeout`.
    async fn read(&self) -> Readout {
        let started = Instant::now();
        let deadline = self.config.read_timeout;
        let (probe, volumes, flows, datapaths) = tokio::join!(
            self.read_probe(deadline),
            tokio::time::timeout(
                deadline,
                crate::volume_counters::read(&self.ctx.storage, &[None])
            ),
            self.read_flows(deadline),
            self.read_datapaths(deadline),
        );
        let mut reading = Reading::default();
        let mut errors: Vec<(&'static str, String)> = Vec::new();
        let mut skew = Duration::ZERO;
        match probe {
            ProbePart::Read {
                snapshot,
                roles,
                priorities,
            } => {
                add_priorities(&mut reading, &mut errors, priorities);
                skew = snapshot.skew();
                add_snapshot(&mut reading, &mut errors, snapshot, &roles, self.reads_tc());
            }
            ProbePart::Unread(why) => {
                for source in probe_sources(self.reads_tc()) {
                    errors.push((source.as_str(), why.clone()));
                }
            }
        }
        reading.read(Source::Volume);
        match volumes {
            Ok((samples, failed)) => {
                reading.add_samples(samples, &|_| "");
                for error in failed {
                    errors.push((Source::Volume.as_str(), error.message));
                }
            }
            Err(_elapsed) => errors.push((
                Source::Volume.as_str(),
                format!("the storage backend did not answer within {deadline:?}"),
            )),
        }
        if let Some(flows) = flows {
            reading.read(Source::OvsFlow);
            match flows {
                Ok(levels) => reading.set_flows(levels),
                Err(why) => errors.push((Source::OvsFlow.as_str(), why)),
            }
        }
        if let Some(datapaths) = datapaths {
            reading.read(Source::OvsDatapath);
            match datapaths {
                Ok((samples, failed)) => {
                    reading.add_samples(samples, &|_| "");
                    for error in failed {
                        errors.push((Source::OvsDatapath.as_str(), error.message));
                    }
                }
                Err(_elapsed) => errors.push((
                    Source::OvsDatapath.as_str(),
                    format!("ovs-vswitchd did not show its datapaths within {deadline:?}"),
                )),
            }
        }
        for (source, why) in &errors {
            reading.read_named(source, false);
            self.ctx.metrics.read_errors(source, 1);
            tracing::debug!(source, %why, "counter not read for a scrape");
        }
        // Every source read has its error counter, at 0 until it fails: a query for
        // `rate(dpu_counters_read_errors_total[5m])` has a series to say "none".
        for source in reading.sources() {
            self.ctx.metrics.read_errors(source, 0);
        }
        let (reading, samples) = reading.lay_out(&self.layouts);
        self.recycle(samples);
        if let Some(error) = reading.layout_error() {
            tracing::warn!(%error, "cannot lay out the counters for the scrape");
        }
        if reading.collisions() > 0 {
            tracing::debug!(
                dropped = reading.collisions(),
                "counters whose sanitized names collide were dropped from the scrape"
            );
        }
        let took = started.elapsed();
        self.ctx.metrics.snapshot_taken(took, skew);
        tracing::debug!(
            series = reading.series(),
            errors = errors.len(),
            ?took,
            "metrics reading"
        );
        reading
    }

    /// Hands a reading's samples back to the kept sampler, so the next snapshot is built
    /// in their vector and object strings (as `Counters.Snapshot` does after encoding);
    /// dropped instead while a reading that outlived `read_timeout` still holds it.
    fn recycle(&self, samples: Vec<Sample>) {
        let mut slot = self.sampler.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(readers) = slot.as_mut() {
            readers.sampler.recycle_samples(samples);
        }
    }

    /// Whether a reading asks for tc filters: configured, and on a root that answers
    /// netlink (the live system, or a capture's reading with its recording: tc statistics
    /// come from netlink only, so under a plain fixture tree there is nothing to read and
    /// no `tc` source to report).
    fn reads_tc(&self) -> bool {
        self.config.tc && dpu_probe::netlink::answers_netlink(&self.ctx.root)
    }

    /// Every RDMA port, netdev and NVMe namespace (and the tc filters of every
    /// representor and uplink), from the kept sampler on the blocking pool.
    async fn read_probe(&self, deadline: Duration) -> ProbePart {
        let taken = self
            .sampler
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut readers) = taken else {
            return ProbePart::Unread(
                "the previous reading is still running (it outlived read_timeout)".to_owned(),
            );
        };
        // tc statistics come from netlink only: a plain fixture tree has no filters to ask.
        let (slot, tc) = (Arc::clone(&self.sampler), self.reads_tc());
        let task = tokio::task::spawn_blocking(move || {
            let sampler = &mut readers.sampler;
            let roles = readers.roles.read(sampler.root());
            let mut selectors = CounterSelector::defaults();
            if tc {
                selectors.extend(roles.iter().map(|(ifname, _)| CounterSelector::Tc {
                    ifname: ifname.clone(),
                }));
            }
            let snapshot = sampler.snapshot(&selectors);
            // After the snapshot: its window (and skew) covers what a proof compares.
            let priorities = if sampler.root().path() == std::path::Path::new("/") {
                read_priorities(&roles)
            } else {
                Vec::new()
            };
            // Given back even when the scrape stopped waiting, for the next reading.
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(readers);
            (snapshot, roles, priorities)
        });
        match tokio::time::timeout(deadline, task).await {
            Ok(Ok((snapshot, roles, priorities))) => ProbePart::Read {
                snapshot,
                roles,
                priorities,
            },
            Ok(Err(failed)) => {
                // The sampler went down with the task: the next reading gets a new one.
                *self.sampler.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(ProbeReaders::new(self.ctx.root.clone()));
                ProbePart::Unread(format!("the counter reading task failed: {failed}"))
            }
            Err(_elapsed) => ProbePart::Unread(format!(
                "the counters were not read within read_timeout ({deadline:?})"
            )),
        }
    }

    /// The OVS flow levels; `None` when OVS or the flow metrics are switched off.
    /// Every OVS datapath's lookups (hit, missed = upcalls, lost) through the one reader
    /// `Counters.Snapshot` uses, with the flows (`ovs_flows`), when the OVS backend is on.
    async fn read_datapaths(
        &self,
        deadline: Duration,
    ) -> Option<
        Result<
            (
                Vec<dpu_probe::snapshot::Sample>,
                Vec<crate::datapath_counters::DatapathReadError>,
            ),
            tokio::time::error::Elapsed,
        >,
    > {
        if !self.config.ovs_flows {
            return None;
        }
        self.ctx.ovs.clients().ok()?;
        Some(
            tokio::time::timeout(
                deadline,
                crate::datapath_counters::read(&self.ctx.ovs, &[None]),
            )
            .await,
        )
    }

    async fn read_flows(&self, deadline: Duration) -> Option<Result<FlowLevels, String>> {
        if !self.config.ovs_flows {
            return None;
        }
        let clients = self.ctx.ovs.clients().ok()?;
        let query = FlowQuery {
            dump_type: DumpType::All,
            in_port: "",
            datapath: "",
            covering: None,
        };
        let listed =
            tokio::time::timeout(deadline, list_flows(clients, &self.ctx.tc_netlink, &query)).await;
        Some(match listed {
            Ok(Ok(listed)) => Ok(FlowLevels::from_flows(&listed.flows)),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_elapsed) => Err(format!(
                "ovs-vswitchd did not dump its flows within {deadline:?}"
            )),
        })
    }
}

/// The probe snapshot's sources, errors and samples (kept whole, to go back to the
/// sampler once laid out), each netdev's series labelled with its role from `roles`
/// (sorted by name, as `RoleReader::read` gives them).
fn add_snapshot(
    reading: &mut Reading,
    errors: &mut Vec<(&'static str, String)>,
    snapshot: Snapshot,
    roles: &[(String, RepresentorRole)],
    tc: bool,
) {
    for source in probe_sources(tc) {
        reading.read(source);
    }
    for error in &snapshot.errors {
        errors.push((
            error.source.as_str(),
            format!("{}: {}", error.object, error.message),
        ));
    }
    let role_of = |ifname: &str| {
        roles
            .binary_search_by(|(name, _)| name.as_str().cmp(ifname))
            .map_or("", |i| role_name(roles[i].1))
    };
    reading.add_samples(snapshot.samples, &role_of);
}

/// The per-priority driver statistics of every uplink.
fn read_priorities(
    roles: &[(String, RepresentorRole)],
) -> Vec<(String, Result<Vec<PrioCounter>, String>)> {
    roles
        .iter()
        .filter(|(_, role)| *role == RepresentorRole::Uplink)
        .map(|(ifname, _)| {
            let counters = dpu_probe::ethtool_stats::read_ethtool_stats(ifname)
                .map(|stats| priority_counters(&stats))
                .map_err(|e| format!("{ifname}: {e}"));
            (ifname.clone(), counters)
        })
        .collect()
}

/// `dpu_netdev_prio_{what}_total{netdev,role="uplink",direction,priority}`, and the
/// `ethtool` source's health.
fn add_priorities(
    reading: &mut Reading,
    errors: &mut Vec<(&'static str, String)>,
    priorities: Vec<(String, Result<Vec<PrioCounter>, String>)>,
) {
    for (ifname, counters) in priorities {
        match counters {
            Ok(counters) => {
                reading.read_named("ethtool", true);
                for c in counters {
                    let key = FamilyKey {
                        stem: format!("dpu_netdev_prio_{}", if c.bytes { "" } else { c.what })
                            .trim_end_matches('_')
                            .to_owned(),
                        unit: c.bytes.then_some("bytes"),
                        counter: true,
                    };
                    let labels = vec![
                        ("netdev", ifname.clone()),
                        ("role", "uplink".to_owned()),
                        ("direction", c.direction.to_owned()),
                        ("priority", c.priority.to_string()),
                    ];
                    reading.add_series(
                        key,
                        "Per-priority driver statistic of an uplink (ethtool -S {rx,tx}_prio{N}_*)",
                        labels,
                        c.value,
                    );
                }
            }
            Err(why) => {
                reading.read_named("ethtool", false);
                errors.push(("ethtool", why));
            }
        }
    }
}

#[cfg(test)]
mod tests;
