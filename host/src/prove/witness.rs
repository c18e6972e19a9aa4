//! The agents a proof reads as witnesses: the DPU's, through the session's channel, and the
//! far end's (the storage target, the switched traffic's receiver), through its own agent,
//! dialled once before the first reading. Both are read with one `Counters.Snapshot` each.

use dpu_probe::snapshot::Snapshot;
use dpu_proto::v1::{self, counters_client::CountersClient};
use dpu_proto::Endpoint;
use tonic::transport::Channel;

use super::error::ProveError;
use crate::agent::session::{rpc_error, AgentError, Session};
use crate::param::{Field, ParamError};
use crate::snapshot_wire::snapshot_from_wire;

/// How many independent witnesses a proof may be asked to have: the DPU, and the far end.
pub const MAX_WITNESSES: u32 = 2;

/// One `Counters.Snapshot` of `selectors` through `channel`, decoded; `rpc` names the call
/// in an error.
pub async fn agent_snapshot(
    channel: &Channel,
    selectors: Vec<v1::counter_selector::Selector>,
    rpc: &'static str,
) -> Result<Snapshot, AgentError> {
    let selectors = selectors
        .into_iter()
        .map(|selector| v1::CounterSelector {
            selector: Some(selector),
        })
        .collect();
    let wire = CountersClient::new(channel.clone())
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
        .snapshot(v1::SnapshotRequest { selectors })
        .await
        .map_err(rpc_error(rpc))?
        .into_inner();
    Ok(snapshot_from_wire(&wire))
}

/// The far end's RDMA ports and network interfaces, through its own agent.
pub async fn snapshot_far_end(channel: &Channel) -> Result<Snapshot, AgentError> {
    use v1::counter_selector::Selector;
    let selectors = vec![
        Selector::Rdma(v1::RdmaSelector::default()),
        Selector::Netdev(v1::NetdevSelector::default()),
    ];
    agent_snapshot(channel, selectors, "Counters.Snapshot (far end)").await
}

/// The witnesses of a proof: the DPU, and the far end when `far_end` names its agent.
#[derive(Debug)]
pub struct Witnesses {
    /// The far end's agent channel, dialled.
    pub far_end: Option<Channel>,
    /// Their names, as the report shows them (`DPU`, `far end (ENDPOINT)`).
    pub names: Vec<String>,
}

impl Witnesses {
    /// Dials the far end's agent, when there is one, with the session's TLS files and
    /// timeout. The proof has checked the witnesses it requires first ([`Self::check`]),
    /// before anything was dialled or read.
    pub async fn dial(session: &Session, far_end: Option<&Endpoint>) -> Result<Self, ProveError> {
        let mut names = vec!["DPU".to_owned()];
        let Some(endpoint) = far_end else {
            return Ok(Self {
                far_end: None,
                names,
            });
        };
        let far = session.agent().to(endpoint.clone());
        let channel = far.channel().await.map_err(|source| ProveError::FarEnd {
            endpoint: endpoint.to_string(),
            source,
        })?;
        names.push(format!("far end ({endpoint})"));
        Ok(Self {
            far_end: Some(channel),
            names,
        })
    }

    /// `required` witnesses from the DPU and `far_end`: 1 or 2, and 2 only with a far end;
    /// the error names the field that adds one.
    pub fn check(far_end: Option<&Endpoint>, required: u32) -> Result<(), ParamError> {
        if !(1..=MAX_WITNESSES).contains(&required) {
            return Err(ParamError::new(Field::Witnesses)
                .field(Field::Witnesses)
                .text(format!(
                    " must be 1 (the DPU) or 2 (the DPU and the far end), not {required}"
                )));
        }
        if required >= 2 && far_end.is_none() {
            return Err(ParamError::new(Field::TargetAgent)
                .field(Field::Witnesses)
                .text(" 2 needs the far end's agent (")
                .field(Field::TargetAgent)
                .text(" ENDPOINT): without it the DPU's own counters are the only witness"));
        }
        Ok(())
    }
}
