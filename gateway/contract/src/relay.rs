//! The relay of one call: where its interim traffic goes while the client that made it is still
//! connected. A face builds one for its client ([`CallRelay`]) and hands it to the engine with the
//! submission ([`CallContext`]); the upstream adapter that runs the call feeds it from its own
//! wire — progress, log lines, resource updates, and questions the upstream asks mid-call (input,
//! a model sample, the client's roots). Protocol-neutral: an MCP face relays an A2A agent's
//! progress the same way as an MCP server's. Never stored: an attempt driven after a restart or
//! by another replica has no relay, and upstreams work without one (notifications are dropped,
//! questions refused).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

/// Progress of a call, as the upstream reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far (increasing).
    pub progress: f64,
    /// The total, if known.
    pub total: Option<f64>,
    pub message: Option<String>,
    /// The upstream's notification metadata (MCP `_meta`).
    pub meta: Option<Value>,
}

/// Something an upstream says mid-call that is not its answer. `meta` is the upstream's own
/// notification metadata (MCP `_meta`), passed on unchanged where the client's protocol has a
/// place for it.
#[derive(Debug, Clone, PartialEq)]
pub enum Interim {
    Progress(Progress),
    /// A log line: its level (RFC 5424 names, `debug` … `emergency`), logger and data.
    Log {
        level: String,
        logger: Option<String>,
        data: Value,
        meta: Option<Value>,
    },
    /// A resource the client follows changed.
    ResourceUpdated {
        uri: String,
        meta: Option<Value>,
    },
}

/// A question an upstream asks the client mid-call, with its parameters as the upstream sent
/// them. The answer is the client's result, as JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Question {
    /// Input from the user, with the schema it must match (MCP elicitation).
    Input(Value),
    /// A model completion (MCP sampling).
    Sample(Value),
    /// The client's roots.
    Roots,
}

/// The client's refusal or failure to answer a [`Question`]: a JSON-RPC error (both protocols
/// speak it), passed on to the upstream unchanged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RelayError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

/// Where one call's interim traffic goes: implemented by each face for its client.
#[async_trait]
pub trait CallRelay: Send + Sync + std::fmt::Debug {
    /// Passes on an interim event, best effort: a client that left misses it (`Err`: it was not
    /// delivered, e.g. the client is gone).
    async fn notify(&self, interim: Interim) -> Result<(), RelayError>;
    /// Asks the client `question`.
    async fn ask(&self, question: Question) -> Result<Value, RelayError>;
    /// What the client declared it can do, in MCP's `ClientCapabilities` shape (the protocol
    /// that defines such abilities), if it declared anything: an upstream asks only for that.
    fn capabilities(&self) -> Option<Value>;
    /// The log level the client asked for (RFC 5424 names), if any.
    fn log_level(&self) -> Option<String>;
}

/// The in-process companions of one call: its relay. Not part of the request digest and never
/// persisted.
#[derive(Clone)]
pub struct CallContext {
    relay: Arc<dyn CallRelay>,
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext").field("relay", &self.relay).finish()
    }
}

impl CallContext {
    pub fn new(relay: Arc<dyn CallRelay>) -> Self {
        Self { relay }
    }

    /// Where the call's interim traffic goes.
    pub fn relay(&self) -> &Arc<dyn CallRelay> {
        &self.relay
    }
}
