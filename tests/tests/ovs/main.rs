//! The OVS tier: our OVSDB and control-socket clients against the real Debian
//! `openvswitch-switch` daemons (ovsdb-server, and ovs-vswitchd with the userspace datapath
//! in a namespace of its own), each test on private daemons started by
//! [`dpu_tests::ovs::OvsDaemons`]. What our client writes is checked with the real
//! `ovs-vsctl`, and what ovs-vsctl writes behind our back must show up in our cache.
//!
//! Needs root and `openvswitch-switch`, `iproute2`, `iputils-ping`; without them each test
//! is skipped with the reason (a failure under `DPU_TESTS_STRICT=1`). `simulator.rs` runs
//! `dpu-sim`, whose nodes get the same private daemons.

mod agent;
mod bridges;
mod capture;
mod capture_agent;
mod config;
mod metrics;
mod monitor;
mod simulator;
mod unixctl;

use std::time::Duration;

use dpu_ovs::ovsdb::{Ovsdb, OvsdbOptions};
use dpu_tests::ovs::OvsDaemons;

/// Starts private daemons for one test, or skips the test with the reason they cannot run.
macro_rules! daemons {
    () => {
        daemons!(start)
    };
    ($start:ident) => {{
        if let Some(reason) = dpu_tests::ovs::missing_prerequisite() {
            dpu_tests::skip!("{reason}");
        }
        dpu_tests::ovs::OvsDaemons::$start().expect("OVS daemons start")
    }};
}
pub(crate) use daemons;

/// Our client on the test's ovsdb-server, waiting at most `apply` for ovs-vswitchd.
pub(crate) fn client(daemons: &OvsDaemons, apply: Duration) -> Ovsdb {
    Ovsdb::with_options(
        &daemons.db_address(),
        OvsdbOptions {
            apply_timeout: apply,
            ..OvsdbOptions::default()
        },
    )
    .expect("unix address")
}

/// `ovs-vsctl get` output without the quotes ovs-vsctl puts around some strings.
pub(crate) fn unquote(text: &str) -> String {
    text.trim().trim_matches('"').to_owned()
}
