//! A scriptable in-process upstream for engine tests: it records every physical call and
//! answers by the operation's name, so each guarantee can be provoked precisely.
//!
//! Operations: `ok` (answers at once), `flaky:N` (unavailable for the first N attempts), `sleep:MS` (answers after MS ms),
//! `lost` (outcome lost), `gate` (waits until [`Scripted::open_gate`] for attempt 1; later
//! attempts answer at once), `hang` (never answers; cancelable when `cancelable`), `recorded`
//! (answers at once, and says its answer is recorded where its callers read it back, as an A2A
//! agent's mirrored task is: [`Upstream::answer_recorded`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use switchyard_contract::{
    CancelAck, DispatchCall, EffectClass, Error, InvocationState, InvocationStore, Target, Upstream, UpstreamError,
    UpstreamRegistry,
};
use tokio::sync::{Notify, watch};

/// What the upstream saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub call: DispatchCall,
    /// Whether the store already held this attempt in `dispatching` when the call arrived (G3).
    pub attempt_was_committed: bool,
}

/// The scriptable upstream.
pub struct Scripted {
    pub seen: Mutex<Vec<Seen>>,
    store: Mutex<Option<Arc<dyn InvocationStore>>>,
    gate: watch::Sender<bool>,
    pub cancelable: bool,
    hung: Notify,
    canceled: watch::Sender<bool>,
    /// How many cancellations to refuse first, as an upstream that does not know the call yet.
    pub refuse_cancels: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for Scripted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripted").finish_non_exhaustive()
    }
}

impl Scripted {
    pub fn new(cancelable: bool) -> Arc<Self> {
        Arc::new(Self {
            seen: Mutex::new(Vec::new()),
            store: Mutex::new(None),
            gate: watch::channel(false).0,
            cancelable,
            hung: Notify::new(),
            canceled: watch::channel(false).0,
            refuse_cancels: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Lets the upstream check dispatch evidence in this store.
    pub fn observe(&self, store: Arc<dyn InvocationStore>) {
        if let Ok(mut s) = self.store.lock() {
            *s = Some(store);
        }
    }

    pub fn open_gate(&self) {
        self.gate.send_replace(true);
    }

    pub fn calls(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Waits until at least `n` physical calls arrived.
    pub async fn wait_for_calls(&self, n: usize) {
        for _ in 0..500 {
            if self.calls().len() >= n {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("upstream saw {} calls, expected {n}", self.calls().len());
    }
}

#[async_trait]
impl Upstream for Scripted {
    async fn dispatch(&self, call: &DispatchCall) -> Result<Value, UpstreamError> {
        let store = self.store.lock().ok().and_then(|s| s.clone());
        let committed = match store {
            Some(s) => matches!(s.get(None, call.invocation).await, Ok(Some(inv))
                if matches!(inv.state, InvocationState::Dispatching { attempt, .. } if attempt == call.attempt)),
            None => false,
        };
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(Seen { call: call.clone(), attempt_was_committed: committed });
        }
        let op = call.target.operation.as_str();
        let answer = json!({ "attempt": call.attempt_no, "op": op });
        match op.split_once(':') {
            Some(("flaky", n)) if u64::from(call.attempt_no) <= n.parse().unwrap_or(0) => {
                return Err(UpstreamError::Unavailable { message: format!("flaky attempt {}", call.attempt_no) });
            }
            Some(("sleep", ms)) => {
                tokio::time::sleep(std::time::Duration::from_millis(ms.parse().unwrap_or(0))).await;
                return Ok(answer);
            }
            _ => {}
        }
        match op {
            "lost" => Err(UpstreamError::Lost { message: "connection reset after sending".into() }),
            "panic" => panic!("the scripted upstream panics, as a buggy adapter might"),
            "gate" if call.attempt_no == 1 => {
                let _ = self.gate.subscribe().wait_for(|open| *open).await;
                Ok(answer)
            }
            "hang" => {
                let _ = self.canceled.subscribe().wait_for(|c| *c).await;
                self.hung.notify_waiters();
                Err(UpstreamError::Canceled)
            }
            _ => Ok(answer),
        }
    }

    /// Reads nothing of the record but what [`observe`](Self::observe) reports, as a server.
    fn sends_before_the_record(&self) -> bool {
        true
    }

    /// A request `{"evidence": true}`: as an upstream that records evidence before it sends.
    fn proves_unsent(&self, request: &Value) -> bool {
        request.get("evidence") == Some(&Value::Bool(true))
    }

    fn answer_recorded(&self, call: &DispatchCall, _result: &Value) -> bool {
        call.target.operation == "recorded"
    }

    async fn cancel(&self, call: &DispatchCall) -> CancelAck {
        use std::sync::atomic::Ordering;
        if self.refuse_cancels.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            return CancelAck::Unsupported;
        }
        if self.cancelable && call.target.operation == "hang" {
            self.canceled.send_replace(true);
            CancelAck::Confirmed
        } else {
            CancelAck::Unsupported
        }
    }
}

/// A registry with one upstream, `test`: operations starting with `w_` are writes, all others
/// read-only; the rest of the name (after `w_`) selects the script.
#[derive(Debug)]
pub struct OneUpstream(pub Arc<Scripted>);

impl UpstreamRegistry for OneUpstream {
    fn target(&self, upstream: &str, operation: &str) -> Result<Target, Error> {
        if upstream != "test" {
            return Err(Error::not_found(format!("no upstream named `{upstream}`")));
        }
        let (effect, op) = match operation.strip_prefix("w_") {
            Some(op) => (EffectClass::Write, op),
            None => (EffectClass::ReadOnly, operation),
        };
        Ok(Target { upstream: "test".into(), operation: op.into(), effect })
    }

    fn upstream(&self, name: &str) -> Option<Arc<dyn Upstream>> {
        (name == "test").then(|| self.0.clone() as Arc<dyn Upstream>)
    }
}

/// Calls per invocation id.
pub fn per_invocation(seen: &[Seen]) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for s in seen {
        *m.entry(s.call.invocation.to_string()).or_default() += 1;
    }
    m
}
