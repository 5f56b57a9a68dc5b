//! The MCP face's [`CallRelay`]: one call's interim traffic, whatever upstream runs it, goes to
//! the MCP client that made the call — progress under the client's own progress token, log
//! lines at the level it asked for, resource updates, and server→client requests (legacy
//! sessions only: a 2026-07-28 client answers through `input_required` rounds instead).

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageRequest, ElicitRequest, ErrorCode, ErrorData, ListRootsRequest,
    LoggingLevel, ProgressNotificationParam, ProgressToken, ResourceUpdatedNotificationParam, ServerRequest,
};
use rmcp::service::Peer;
use serde_json::Value;
use switchyard_contract::{CallRelay, Interim, Question, RelayError};
use tracing::debug;

/// Where one call's upstream traffic goes: the MCP client that made it.
#[derive(Debug)]
pub(crate) struct McpRelay {
    pub peer: Peer<RoleServer>,
    /// The client's progress token, if it asked for progress.
    pub progress: Option<ProgressToken>,
    /// The client is on a legacy (initialize) session and can take server→client requests.
    pub legacy: bool,
    /// What the client declared it can do; forwarded so the upstream asks only for that.
    pub capabilities: Option<ClientCapabilities>,
    pub log_level: Option<LoggingLevel>,
}

fn relay_error(e: ErrorData) -> RelayError {
    RelayError { code: i64::from(e.code.0), message: e.message.to_string(), data: e.data }
}

fn gone(message: String) -> RelayError {
    RelayError { code: i64::from(ErrorCode::INTERNAL_ERROR.0), message, data: None }
}

fn params<T: serde::de::DeserializeOwned>(v: Value, what: &str) -> Result<T, RelayError> {
    serde_json::from_value(v).map_err(|e| RelayError {
        code: i64::from(ErrorCode::INVALID_PARAMS.0),
        message: format!("the upstream's {what} request does not decode: {e}"),
        data: None,
    })
}

#[async_trait]
impl CallRelay for McpRelay {
    #[allow(deprecated)] // logging is deprecated by SEP-2577; legacy clients still ask for it
    async fn notify(&self, interim: Interim) -> Result<(), RelayError> {
        let sent = match interim {
            Interim::Progress(p) => {
                // A client that did not ask for progress gets none.
                let Some(token) = self.progress.clone() else { return Ok(()) };
                let mut param = ProgressNotificationParam::new(token, p.progress);
                param.total = p.total;
                param.message = p.message;
                param.meta = p.meta.and_then(|m| serde_json::from_value(m).ok());
                self.peer.notify_progress(param).await
            }
            Interim::Log { level, logger, data, meta } => {
                let level = serde_json::from_value::<LoggingLevel>(Value::String(level))
                    .map_err(|e| gone(format!("log level: {e}")))?;
                let mut param = rmcp::model::LoggingMessageNotificationParam::new(level, data);
                param.logger = logger;
                param.meta = meta.and_then(|m| serde_json::from_value(m).ok());
                self.peer.notify_logging_message(param).await
            }
            Interim::ResourceUpdated { uri, meta } => {
                let mut param = ResourceUpdatedNotificationParam::new(uri);
                param.meta = meta.and_then(|m| serde_json::from_value(m).ok());
                self.peer.notify_resource_updated(param).await
            }
        };
        sent.map_err(|e| {
            debug!(error = %e, "interim traffic not relayed");
            gone(e.to_string())
        })
    }

    async fn ask(&self, question: Question) -> Result<Value, RelayError> {
        if !self.legacy {
            return Err(RelayError {
                code: i64::from(ErrorCode::METHOD_NOT_FOUND.0),
                message: "the upstream asked for client input outside a legacy session; stateless clients answer \
                          through input_required results only"
                    .into(),
                data: None,
            });
        }
        let request = match question {
            Question::Input(p) => ServerRequest::ElicitRequest(ElicitRequest::new(params(p, "elicitation")?)),
            Question::Sample(p) => {
                ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params(p, "sampling")?))
            }
            Question::Roots => ServerRequest::ListRootsRequest(ListRootsRequest::default()),
        };
        let answer: ClientResult =
            self.peer.send_request(request).await.map_err(|e| relay_error(crate::client::service_error(e)))?;
        serde_json::to_value(answer).map_err(|e| RelayError {
            code: i64::from(ErrorCode::INTERNAL_ERROR.0),
            message: format!("the client's answer does not encode: {e}"),
            data: None,
        })
    }

    fn capabilities(&self) -> Option<Value> {
        self.capabilities.as_ref().and_then(|c| serde_json::to_value(c).ok())
    }

    fn log_level(&self) -> Option<String> {
        self.log_level.and_then(|l| serde_json::to_value(l).ok()).and_then(|v| v.as_str().map(str::to_string))
    }
}
