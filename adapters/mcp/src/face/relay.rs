//! The MCP face's [`CallRelay`]: one call's interim traffic, whatever upstream runs it, goes to
//! the MCP client that made the call — progress under the client's own progress token, log
//! lines at the level it asked for, resource updates, and server→client requests: a legacy
//! session is asked directly; a 2026-07-28 client cannot take them, so during a `tools/call` the
//! question is queued ([`Questions`]) for the face, which answers the client's round with it as
//! `input_required` and passes the client's next round's answer back to the upstream.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageRequest, ElicitRequest, ErrorCode, ErrorData, InputRequest,
    ListRootsRequest, LoggingLevel, ProgressNotificationParam, ProgressToken, ResourceUpdatedNotificationParam,
    ServerRequest,
};
use rmcp::service::Peer;
use serde_json::Value;
use switchyard_contract::{CallRelay, Interim, Question, RelayError};
use tokio::sync::{Notify, oneshot};
use tracing::debug;

/// Where one call's upstream traffic goes: the MCP client that made it.
#[derive(Debug)]
pub(crate) struct McpRelay {
    /// The client's request (its progress token, if it asked for progress): a 2026-07-28 call
    /// held across rounds is rebound to the round that continues it.
    to: Mutex<(Peer<RoleServer>, Option<ProgressToken>)>,
    /// The client is on a legacy (initialize) session and can take server→client requests.
    pub legacy: bool,
    /// A 2026-07-28 client's `tools/call`: where the upstream's questions wait for the face.
    pub questions: Option<Arc<Questions>>,
    /// What the client declared it can do; forwarded so the upstream asks only for that.
    pub capabilities: Option<ClientCapabilities>,
    pub log_level: Option<LoggingLevel>,
}

impl McpRelay {
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        progress: Option<ProgressToken>,
        legacy: bool,
        capabilities: Option<ClientCapabilities>,
        log_level: Option<LoggingLevel>,
    ) -> Self {
        Self { to: Mutex::new((peer, progress)), legacy, questions: None, capabilities, log_level }
    }

    /// Sends what follows to the client's request that continues the call.
    pub(crate) fn rebind(&self, peer: Peer<RoleServer>, progress: Option<ProgressToken>) {
        if let Ok(mut to) = self.to.lock() {
            *to = (peer, progress);
        }
    }

    fn target(&self) -> Option<(Peer<RoleServer>, Option<ProgressToken>)> {
        self.to.lock().ok().map(|t| t.clone())
    }

    /// Whether the client declared it can answer `question` (a client that declared nothing is
    /// not second-guessed).
    fn declares(&self, question: &Question) -> bool {
        let Some(c) = &self.capabilities else { return true };
        match question {
            Question::Input(_) => c.elicitation.is_some(),
            Question::Sample(_) => c.sampling.is_some(),
            Question::Roots => c.roots.is_some(),
        }
    }
}

/// An upstream's question to a 2026-07-28 client, waiting for the client's next round.
#[derive(Debug)]
pub(crate) struct Asked {
    pub request: InputRequest,
    pub answer: oneshot::Sender<Result<Value, RelayError>>,
}

/// The questions of one call that the client has not seen yet.
#[derive(Debug, Default)]
pub(crate) struct Questions {
    asked: Mutex<Vec<Asked>>,
    arrived: Notify,
    /// Nobody answers any more (the call became a task, or its hold expired).
    closed: AtomicBool,
}

impl Questions {
    async fn ask(&self, request: InputRequest) -> Result<Value, RelayError> {
        let (answer, answered) = oneshot::channel();
        match self.asked.lock() {
            Ok(mut q) if !self.closed.load(Ordering::SeqCst) => q.push(Asked { request, answer }),
            _ => {
                return Err(refused(
                    "the upstream asked for client input after the gateway stopped relaying this call's questions                      (it became a task, or an earlier question went unanswered)",
                ));
            }
        }
        self.arrived.notify_one();
        answered.await.unwrap_or_else(|_| {
            Err(refused("the client did not answer in time (the gateway's hold on the question expired)"))
        })
    }

    /// Resolves once a question waits.
    pub(crate) async fn wait(&self) {
        while !self.pending() {
            self.arrived.notified().await;
        }
    }

    pub(crate) fn pending(&self) -> bool {
        self.asked.lock().is_ok_and(|q| !q.is_empty())
    }

    pub(crate) fn take(&self) -> Vec<Asked> {
        self.asked.lock().map(|mut q| std::mem::take(&mut *q)).unwrap_or_default()
    }

    /// Refuses this question and every later one.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        drop(self.take());
    }
}

fn refused(message: &str) -> RelayError {
    RelayError { code: i64::from(ErrorCode::METHOD_NOT_FOUND.0), message: message.into(), data: None }
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

impl McpRelay {
    fn peer(&self) -> Result<Peer<RoleServer>, RelayError> {
        self.target().map(|(p, _)| p).ok_or_else(|| gone("the relay's lock is poisoned".into()))
    }
}

#[async_trait]
impl CallRelay for McpRelay {
    #[allow(deprecated)] // logging is deprecated by SEP-2577; legacy clients still ask for it
    async fn notify(&self, interim: Interim) -> Result<(), RelayError> {
        let sent = match interim {
            Interim::Progress(p) => {
                // A client that did not ask for progress gets none.
                let Some((peer, Some(token))) = self.target() else { return Ok(()) };
                let mut param = ProgressNotificationParam::new(token, p.progress);
                param.total = p.total;
                param.message = p.message;
                param.meta = p.meta.and_then(|m| serde_json::from_value(m).ok());
                peer.notify_progress(param).await
            }
            Interim::Log { level, logger, data, meta } => {
                let level = serde_json::from_value::<LoggingLevel>(Value::String(level))
                    .map_err(|e| gone(format!("log level: {e}")))?;
                let mut param = rmcp::model::LoggingMessageNotificationParam::new(level, data);
                param.logger = logger;
                param.meta = meta.and_then(|m| serde_json::from_value(m).ok());
                self.peer()?.notify_logging_message(param).await
            }
            Interim::ResourceUpdated { uri, meta } => {
                let mut param = ResourceUpdatedNotificationParam::new(uri);
                param.meta = meta.and_then(|m| serde_json::from_value(m).ok());
                self.peer()?.notify_resource_updated(param).await
            }
        };
        sent.map_err(|e| {
            debug!(error = %e, "interim traffic not relayed");
            gone(e.to_string())
        })
    }

    async fn ask(&self, question: Question) -> Result<Value, RelayError> {
        if !self.declares(&question) {
            return Err(refused("the client did not declare that it can answer this kind of request"));
        }
        if !self.legacy {
            let Some(questions) = &self.questions else {
                return Err(refused(
                    "the upstream asked a 2026-07-28 client for input outside tools/call; such clients answer \
                     prompts/get and resources/read through input_required results only",
                ));
            };
            let request = match question {
                Question::Input(p) => InputRequest::Elicitation(ElicitRequest::new(params(p, "elicitation")?)),
                Question::Sample(p) => InputRequest::CreateMessage(CreateMessageRequest::new(params(p, "sampling")?)),
                Question::Roots => InputRequest::ListRoots(ListRootsRequest::default()),
            };
            return questions.ask(request).await;
        }
        let request = match question {
            Question::Input(p) => ServerRequest::ElicitRequest(ElicitRequest::new(params(p, "elicitation")?)),
            Question::Sample(p) => {
                ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params(p, "sampling")?))
            }
            Question::Roots => ServerRequest::ListRootsRequest(ListRootsRequest::default()),
        };
        let answer: ClientResult =
            self.peer()?.send_request(request).await.map_err(|e| relay_error(crate::client::service_error(e)))?;
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
