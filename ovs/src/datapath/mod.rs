//! `ovs-appctl dpctl/show` as typed statistics: for each datapath, its lookups (packets
//! that hit a datapath flow, packets that missed and went up to ovs-vswitchd as upcalls,
//! and upcalls lost on the way) and its flow count, exactly as `show_dpif` in OVS's
//! `lib/dpctl.c` prints them:
//!
//! ```text
//! system@ovs-system:
//!   lookups: hit:38 missed:10 lost:0
//!   flows: 2
//!   masks: hit:58 total:2 hit/pkt:1.21
//!   port 0: ovs-system (internal)
//! ```
//!
//! A proof that traffic was forwarded by installed flows needs `missed` (every miss is an
//! upcall: ovs-vswitchd handled that packet in userspace) and `lost` (upcalls dropped)
//! around the workload. The lookups line is absent when the datapath cannot give its
//! statistics (`dpif_get_dp_stats` failed): then they are unknown, never zero.

#[cfg(test)]
mod tests;

/// One datapath's statistics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatapathStats {
    /// `type@name`, e.g. `system@ovs-system` (the kernel module) or `netdev@ovs-netdev`
    /// (the userspace datapath).
    pub name: String,
    /// The lookup counters; None when the datapath printed none.
    pub lookups: Option<Lookups>,
    /// Datapath flows installed now; None when not printed.
    pub flows: Option<u64>,
}

/// A datapath's cumulative lookup counters (`struct dpif_dp_stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lookups {
    /// `n_hit`: packets that matched a datapath flow.
    pub hit: u64,
    /// `n_missed`: packets that matched none and were sent up as upcalls.
    pub missed: u64,
    /// `n_lost`: upcalls dropped before ovs-vswitchd read them (queue full).
    pub lost: u64,
}

/// A `dpctl/show` line that is not what OVS prints, with its 1-based number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("dpctl/show line {line}: {reason}: {text:?}")]
pub struct ShowError {
    /// 1-based line number.
    pub line: usize,
    /// The line, shortened.
    pub text: String,
    /// What was wrong with it.
    pub reason: &'static str,
}

/// Parses `dpctl/show` output. Lines other than the datapath headers, `lookups:` and
/// `flows:` (masks, caches, ports) are skipped; a `lookups:` or `flows:` line that does not
/// read as OVS prints it, or one before any datapath header, is an error naming it.
pub fn parse_show(text: &str) -> Result<Vec<DatapathStats>, ShowError> {
    let mut datapaths: Vec<DatapathStats> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let error = |reason| ShowError {
            line: index + 1,
            text: line.chars().take(120).collect(),
            reason,
        };
        if !line.starts_with(char::is_whitespace) {
            if let Some(name) = line.strip_suffix(':').filter(|n| !n.is_empty()) {
                datapaths.push(DatapathStats {
                    name: name.to_owned(),
                    lookups: None,
                    flows: None,
                });
            }
            continue;
        }
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("lookups:") {
            let current = datapaths
                .last_mut()
                .ok_or_else(|| error("lookups before any datapath"))?;
            current.lookups =
                Some(lookups(rest).ok_or_else(|| error("not hit:N missed:N lost:N"))?);
        } else if let Some(rest) = trimmed.strip_prefix("flows:") {
            let current = datapaths
                .last_mut()
                .ok_or_else(|| error("flows before any datapath"))?;
            current.flows = Some(rest.trim().parse().map_err(|_| error("not flows: N"))?);
        }
    }
    Ok(datapaths)
}

/// ` hit:N missed:N lost:N`, each exactly once.
fn lookups(text: &str) -> Option<Lookups> {
    let mut hit = None;
    let mut missed = None;
    let mut lost = None;
    for word in text.split_whitespace() {
        let (name, value) = word.split_once(':')?;
        let slot = match name {
            "hit" => &mut hit,
            "missed" => &mut missed,
            "lost" => &mut lost,
            _ => return None,
        };
        if slot.replace(value.parse::<u64>().ok()?).is_some() {
            return None;
        }
    }
    Some(Lookups {
        hit: hit?,
        missed: missed?,
        lost: lost?,
    })
}
