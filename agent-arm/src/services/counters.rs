//! `dpu.v1.Counters`. Selectors are validated here; the snapshot engine (sysfs RDMA
//! counters, netlink stats, tc, OVS flows, volume stats) arrives with the probe work, so
//! a valid request is answered `UNIMPLEMENTED` naming that area.

use std::pin::Pin;
use std::time::Duration;

use dpu_proto::names::check_ifname;
use dpu_proto::v1::{self, counters_server::Counters};
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use super::status::{invalid, not_yet};

const AREA: &str = "probe: counter snapshots";

/// Bounds of `WatchRequest.interval`: faster than 100 ms measures the agent, not the
/// traffic; slower than an hour is a cron job.
const MIN_INTERVAL: Duration = Duration::from_millis(100);
const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// Serves counter snapshots. Stateless until the snapshot engine lands.
#[derive(Debug, Clone, Default)]
pub(crate) struct CountersService;

fn selectors(selectors: &[v1::CounterSelector]) -> Result<(), Status> {
    use v1::counter_selector::Selector;
    for (i, selector) in selectors.iter().enumerate() {
        let field = |name: &str| format!("selectors[{i}].{name}");
        match &selector.selector {
            None => return Err(invalid(&format!("selectors[{i}]"), "no selector set")),
            Some(Selector::Netdev(s)) if !s.ifname.is_empty() => {
                check_ifname("ifname", &s.ifname)
                    .map_err(|e| invalid(&field("netdev.ifname"), e))?;
            }
            Some(Selector::Tc(s)) => {
                check_ifname("ifname", &s.ifname).map_err(|e| invalid(&field("tc.ifname"), e))?;
            }
            Some(Selector::OvsFlows(s)) => {
                v1::FlowFilter::try_from(s.filter).map_err(|_| {
                    invalid(
                        &field("ovs_flows.filter"),
                        format!("unknown value {}", s.filter),
                    )
                })?;
            }
            Some(_) => {}
        }
    }
    Ok(())
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<v1::CounterSnapshot, Status>> + Send>>;

#[tonic::async_trait]
impl Counters for CountersService {
    async fn snapshot(
        &self,
        request: Request<v1::SnapshotRequest>,
    ) -> Result<Response<v1::CounterSnapshot>, Status> {
        selectors(&request.get_ref().selectors)?;
        Err(not_yet("Counters.Snapshot", AREA))
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<v1::WatchRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        let req = request.into_inner();
        selectors(&req.selectors)?;
        let interval = req
            .interval
            .ok_or_else(|| invalid("interval", "is required"))?;
        let interval = u64::try_from(interval.seconds)
            .ok()
            .zip(u32::try_from(interval.nanos).ok())
            .map(|(secs, nanos)| Duration::new(secs, nanos))
            .ok_or_else(|| invalid("interval", "must not be negative"))?;
        if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&interval) {
            return Err(invalid(
                "interval",
                format!("{interval:?} is outside {MIN_INTERVAL:?}..={MAX_INTERVAL:?}"),
            ));
        }
        Err(not_yet("Counters.Watch", AREA))
    }
}
