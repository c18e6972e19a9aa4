//! JSON-RPC over a Unix stream socket, as spoken by SPDK and NVIDIA SNAP (JSON-RPC 2.0) and by
//! ovsdb-server and the ovs-vswitchd unixctl socket (JSON-RPC 1.0).
//!
//! This crate owns the transport: delimiter-free framing (one JSON value after another, parsed
//! incrementally, bounded by a maximum frame size), a persistent lazily opened connection,
//! correlation of replies to calls by id so many calls share one socket, per-call deadlines,
//! reconnecting after the peer restarts (and telling callers that it did, through
//! [`Client::connection_status`], so they can restore per-connection state such as an OVSDB
//! monitor), answering OVSDB `echo`, and fanning out notifications. It must not know any
//! method: nothing about SPDK, SNAP or OVSDB semantics belongs here — that is `dpu-nvmeof`
//! and `dpu-ovs`, which build on [`Client`].
//!
//! Shape (after rtnetlink): a cheap-to-clone handle and a request builder.
//!
//! ```no_run
//! # async fn demo() -> Result<(), dpu_jsonrpc::Error> {
//! use dpu_jsonrpc::{Client, ClientOptions};
//! use std::time::Duration;
//!
//! let spdk = Client::new("/var/tmp/spdk.sock", ClientOptions::v2());
//! let methods: Vec<String> = spdk.request("rpc_get_methods").execute().await?;
//! let bdevs = spdk
//!     .request("bdev_get_iostat")
//!     .params(serde_json::json!({"name": "Nvme0n1"}))
//!     .timeout(Duration::from_secs(5))
//!     .execute_value()
//!     .await?;
//! # let _ = (methods, bdevs);
//! # Ok(())
//! # }
//! ```

mod client;
mod connection;
mod error;
mod framing;
mod message;
mod transcript;

pub use client::{Client, ClientOptions, Request};
pub use connection::ConnectionStatus;
pub use error::Error;
pub use message::{Notification, Version};
pub use transcript::{from_jsonl, to_jsonl, Exchange, Recorder, TranscriptError};

#[cfg(test)]
mod tests;
