//! A read's first attempt, sent while its admission commits (G3). A read has no effect to lose
//! when that commit fails, but its caller must not hear of a call that was not recorded (G1):
//! the call's interim traffic (progress, questions to the client) waits for the commit, and the
//! reply goes to the driver of the admitted invocation, which answers as for any attempt.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;
use tracing::Instrument;

use super::attempt::{send_window, upstream_span};
use super::{FaultPoint, Inner};
use crate::id::AttemptId;
use crate::ports::{DispatchCall, UpstreamError};
use crate::principal::EffectClass;
use crate::relay::{CallContext, CallRelay, Interim, Question, RelayError};
use crate::state::NewInvocation;

/// The attempt in flight. Dropped before [`admitted`](Self::admitted) (the admission failed, or
/// found the key's earlier invocation), it stops the call, and the relay refuses what is left.
pub(super) struct Early {
    attempt: AttemptId,
    sent: std::time::Instant,
    reply: tokio::task::JoinHandle<Result<serde_json::Value, UpstreamError>>,
    admitted: watch::Sender<bool>,
}

impl Drop for Early {
    fn drop(&mut self) {
        self.reply.abort();
    }
}

impl Early {
    /// Sends the first attempt of `draft` now, before its admission commits, when that is
    /// allowed (`send_reads_with_admission`, on by default): a `read_only` call that is not held,
    /// whose attempt the admission records (`first_attempt`), to an upstream that reads nothing of
    /// the record ([`Upstream::sends_before_the_record`](crate::ports::Upstream::sends_before_the_record)),
    /// with no fault hook that may pause it before the dispatch. Never a call with an idempotency
    /// key: the admission may find the key's earlier call (and refuse other arguments with
    /// "nothing was dispatched"), so such a read waits for its admission like any call (G2).
    pub(super) fn send(inner: &Inner, draft: &NewInvocation, context: Option<&CallContext>) -> Option<Self> {
        let attempt = draft.first_attempt?;
        if !inner.cfg.send_reads_with_admission
            || draft.target.effect != EffectClass::ReadOnly
            || draft.ingress_key.is_some()
            || draft.hold.is_some()
            || inner.faults.may_pause(FaultPoint::BeforeDispatch)
            || inner.faults.may_pause(FaultPoint::AttemptRecorded)
        {
            return None;
        }
        let upstream = inner.upstreams.upstream(&draft.target.upstream).filter(|u| u.sends_before_the_record())?;
        let admitted = watch::channel(false).0;
        let context = context.map(|c| {
            CallContext::new(Arc::new(AfterAdmission { relay: c.relay().clone(), admitted: admitted.subscribe() }))
        });
        let call = DispatchCall {
            invocation: draft.id,
            attempt,
            attempt_no: 1,
            principal: draft.principal.clone(),
            target: draft.target.clone(),
            request: draft.request.clone(),
            context,
            send_by: tokio::time::Instant::now() + send_window(inner.cfg.attempt_timeout),
        };
        // Under the admission's span: the call goes out while the admission commits.
        let span = upstream_span(&call);
        let reply = tokio::spawn(async move { upstream.dispatch(&call).await }.instrument(span));
        Some(Self { attempt, sent: std::time::Instant::now(), reply, admitted })
    }

    /// The admission committed: the call's interim traffic may reach its caller.
    pub(super) fn admitted(&self) {
        self.admitted.send_replace(true);
    }

    pub(super) fn attempt(&self) -> AttemptId {
        self.attempt
    }

    pub(super) fn sent(&self) -> std::time::Instant {
        self.sent
    }

    /// The upstream's reply.
    pub(super) async fn reply(mut self) -> Result<serde_json::Value, UpstreamError> {
        (&mut self.reply).await.unwrap_or_else(|e| {
            Err(UpstreamError::Lost { message: format!("the attempt sent with the admission ended: {e}") })
        })
    }
}

/// The caller's relay, held back until the admission commits; refusing once it failed.
#[derive(Debug)]
struct AfterAdmission {
    relay: Arc<dyn CallRelay>,
    admitted: watch::Receiver<bool>,
}

impl AfterAdmission {
    async fn committed(&self) -> Result<(), RelayError> {
        match self.admitted.clone().wait_for(|a| *a).await {
            Ok(_) => Ok(()),
            Err(_) => Err(RelayError {
                code: -32603,
                message: "the call was not admitted; nothing reaches its caller".into(),
                data: None,
            }),
        }
    }
}

#[async_trait]
impl CallRelay for AfterAdmission {
    async fn notify(&self, interim: Interim) -> Result<(), RelayError> {
        self.committed().await?;
        self.relay.notify(interim).await
    }

    async fn ask(&self, question: Question) -> Result<serde_json::Value, RelayError> {
        self.committed().await?;
        self.relay.ask(question).await
    }

    fn capabilities(&self) -> Option<serde_json::Value> {
        self.relay.capabilities()
    }

    fn log_level(&self) -> Option<String> {
        self.relay.log_level()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Debug, Default)]
    struct Heard(Mutex<Vec<String>>);

    #[async_trait]
    impl CallRelay for Heard {
        async fn notify(&self, interim: Interim) -> Result<(), RelayError> {
            if let (Interim::Log { data, .. }, Ok(mut heard)) = (interim, self.0.lock()) {
                heard.push(data.to_string());
            }
            Ok(())
        }
        async fn ask(&self, _: Question) -> Result<serde_json::Value, RelayError> {
            Ok(serde_json::json!("answer"))
        }
        fn capabilities(&self) -> Option<serde_json::Value> {
            None
        }
        fn log_level(&self) -> Option<String> {
            None
        }
    }

    fn log(n: u32) -> Interim {
        Interim::Log { level: "info".into(), logger: None, data: serde_json::json!(n), meta: None }
    }

    #[tokio::test]
    async fn interim_traffic_waits_for_the_admission_and_is_refused_without_it() {
        let heard = Arc::new(Heard::default());
        let admitted = watch::channel(false).0;
        let relay = Arc::new(AfterAdmission { relay: heard.clone(), admitted: admitted.subscribe() });
        let waiting = tokio::spawn({
            let relay = relay.clone();
            async move { relay.notify(log(1)).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(heard.0.lock().is_ok_and(|h| h.is_empty()), "nothing reaches the caller before the commit");
        admitted.send_replace(true);
        assert!(waiting.await.is_ok_and(|r| r.is_ok()));
        assert_eq!(relay.ask(Question::Roots).await.ok(), Some(serde_json::json!("answer")));
        assert!(heard.0.lock().is_ok_and(|h| *h == ["1"]));

        // The admission failed (its sender dropped unset): refused, never delivered.
        let failed = watch::channel(false).0;
        let relay = AfterAdmission { relay: heard.clone(), admitted: failed.subscribe() };
        drop(failed);
        assert!(relay.notify(log(2)).await.is_err());
        assert!(relay.ask(Question::Roots).await.is_err());
        assert!(heard.0.lock().is_ok_and(|h| *h == ["1"]));
    }
}
