//! The built-in `demo` upstream, for the quickstart and tests:
//! - `echo` returns its request. `{"delay_ms": n}` waits first; `{"fail_first": n}` answers
//!   "unavailable" to the first n attempts (to watch read-only retries).
//! - `count` is a counting write: each physical call appends `<invocation> <attempt>` to the
//!   call log *before* anything else, so the log survives a crash and shows exactly how many
//!   times the upstream was really called. `{"delay_ms": n}` waits after logging.
//!
//! Both can be canceled while they wait.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use switchyard_contract::{AttemptId, CancelAck, DispatchCall, Upstream, UpstreamError};
use tokio::sync::oneshot;

/// The demo upstream.
#[derive(Debug)]
pub struct Demo {
    call_log: PathBuf,
    log: Mutex<Option<std::fs::File>>,
    in_flight: Mutex<HashMap<AttemptId, oneshot::Sender<()>>>,
}

impl Demo {
    pub fn new(call_log: PathBuf) -> Self {
        Self { call_log, log: Mutex::new(None), in_flight: Mutex::new(HashMap::new()) }
    }

    /// Appends one line for a physical call.
    fn record(&self, call: &DispatchCall) -> Result<(), UpstreamError> {
        let unavailable = |e: String| UpstreamError::Unavailable { message: format!("demo call log: {e}") };
        let mut guard = self.log.lock().map_err(|_| unavailable("poisoned".into()))?;
        if guard.is_none() {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(&self.call_log);
            *guard = Some(file.map_err(|e| unavailable(e.to_string()))?);
        }
        let line = format!("{} {}\n", call.invocation, call.attempt);
        match guard.as_mut() {
            Some(f) => f.write_all(line.as_bytes()).map_err(|e| unavailable(e.to_string())),
            None => Err(unavailable("not open".into())),
        }
    }

    /// Makes the attempt cancelable from the moment the upstream receives it; the guard
    /// forgets it when the call ends.
    fn register(&self, call: &DispatchCall) -> InFlight<'_> {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut m) = self.in_flight.lock() {
            m.insert(call.attempt, tx);
        }
        InFlight { demo: self, attempt: call.attempt, canceled: rx }
    }
}

/// A registered call; dropping it unregisters the call.
struct InFlight<'a> {
    demo: &'a Demo,
    attempt: AttemptId,
    canceled: oneshot::Receiver<()>,
}

impl InFlight<'_> {
    /// Waits `delay_ms` unless the call is canceled first.
    async fn wait(&mut self, delay_ms: u64) -> Result<(), UpstreamError> {
        if self.canceled.try_recv().is_ok() {
            return Err(UpstreamError::Canceled);
        }
        if delay_ms == 0 {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(delay_ms)) => Ok(()),
            r = &mut self.canceled => if r.is_ok() { Err(UpstreamError::Canceled) } else { Ok(()) },
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Ok(mut m) = self.demo.in_flight.lock() {
            m.remove(&self.attempt);
        }
    }
}

fn number(request: &Value, key: &str) -> u64 {
    request.get(key).and_then(Value::as_u64).unwrap_or(0)
}

#[async_trait]
impl Upstream for Demo {
    async fn dispatch(&self, call: &DispatchCall) -> Result<Value, UpstreamError> {
        let delay = number(&call.request, "delay_ms").min(600_000);
        let mut in_flight = self.register(call);
        match call.target.operation.as_str() {
            "echo" => {
                if u64::from(call.attempt_no) <= number(&call.request, "fail_first") {
                    return Err(UpstreamError::Unavailable {
                        message: format!("demo: attempt {} fails on request", call.attempt_no),
                    });
                }
                in_flight.wait(delay).await?;
                Ok(json!({ "echo": call.request, "attempt": call.attempt_no }))
            }
            "count" => {
                // A call canceled before it started never takes effect.
                in_flight.wait(0).await?;
                self.record(call)?;
                in_flight.wait(delay).await?;
                Ok(json!({ "counted": call.invocation.to_string(), "attempt": call.attempt.to_string() }))
            }
            other => Err(UpstreamError::Rejected {
                code: switchyard_contract::FailureCode::UnknownOperation,
                message: format!("the demo upstream has no operation `{other}`"),
                details: None,
            }),
        }
    }

    async fn cancel(&self, call: &DispatchCall) -> CancelAck {
        let sender = self.in_flight.lock().ok().and_then(|mut m| m.remove(&call.attempt));
        match sender.map(|tx| tx.send(())) {
            Some(Ok(())) => CancelAck::Confirmed,
            _ => CancelAck::Unsupported,
        }
    }
}
