//! An external policy decision point over the OpenID AuthZEN Authorization API 1.0, for the
//! tenants an operator names (`[policy.authzen]`). It decides in place of the tiers: the
//! envelope, deny rules and quotas still come first, locally. Decisions that arrive together are
//! sent together (`POST {url}/access/v1/evaluations`, one request while the previous one is in
//! flight, at most `batch_max` evaluations); every call waits at most `timeout_ms`, and a PDP
//! that does not answer in time, or answers something else than a decision, refuses the call
//! (fail closed).
//!
//! Each evaluation: `subject {type: "principal", id, properties {tenant}}`, `action {name}`
//! (`tools/call`, `SendMessage`, `submit`), `resource {type: "operation", id:
//! "<upstream>/<operation>", properties {upstream, operation, effect}}`, `context {ingress,
//! digest, request, tier}` (the tier the local rules would assign). A `decision: true` runs the
//! call; `false` refuses it, with the reason the PDP gives in its `context` (`reason`, or the
//! first text of `reason_user` / `reason_admin`); `false` with `context.hold: true` holds it for
//! a human's approval. A decision is reused for the same evaluation under the same policy
//! version for its tier's TTL (`cache`: routine 300 s, sensitive 30 s — at most 60 —, critical
//! never); a failed evaluation is never cached.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

pub use crate::cache::CacheTtl;
use crate::cache::DecisionCache;
use crate::error::PolicyError;
use crate::request::{DecisionRequest, Tier};

fn half_a_second() -> u64 {
    500
}

fn sixty_four() -> usize {
    64
}

/// `[policy.authzen]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthzenConfig {
    /// The PDP's base URL (`…/access/v1/evaluations` is appended).
    pub url: String,
    /// The tenants whose calls it decides; empty: every tenant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<String>,
    /// How long a call waits for its decision before it is refused.
    #[serde(default = "half_a_second")]
    pub timeout_ms: u64,
    /// The most evaluations one request carries.
    #[serde(default = "sixty_four")]
    pub batch_max: usize,
    /// How long a decision is reused for the same evaluation (same subject, action, resource,
    /// request digest and tier, under the same policy version), by the call's tier. A
    /// `critical` call is never served from the cache.
    #[serde(default)]
    pub cache: CacheTtl,
}

impl AuthzenConfig {
    pub(crate) fn check(&self) -> Result<(), PolicyError> {
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Err(PolicyError(format!("authzen.url must be http:// or https:// (got `{}`)", self.url)));
        }
        if !(10..=60_000).contains(&self.timeout_ms) {
            return Err(PolicyError("authzen.timeout_ms must be within 10..=60000".into()));
        }
        if !(1..=1000).contains(&self.batch_max) {
            return Err(PolicyError("authzen.batch_max must be within 1..=1000".into()));
        }
        self.cache.check("authzen.cache")
    }

    /// Whether it decides the calls of `tenant`.
    pub(crate) fn decides_for(&self, tenant: &str) -> bool {
        crate::pattern::names_tenant(&self.tenants, tenant)
    }
}

/// What the PDP decided on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PdpDecision {
    Allow,
    Deny(String),
    Hold(String),
}

type Pending = (Value, oneshot::Sender<Result<PdpDecision, String>>);

/// The client: a queue, and a task (started on first use) that sends what queued as one
/// request; and the decisions it may reuse.
#[derive(Debug)]
pub struct Pdp {
    config: AuthzenConfig,
    queue: OnceLock<mpsc::Sender<Pending>>,
    cache: DecisionCache<PdpDecision>,
}

impl Pdp {
    pub fn new(config: AuthzenConfig) -> Self {
        let cache = DecisionCache::new(config.cache);
        Self { config, queue: OnceLock::new(), cache }
    }

    pub(crate) fn config(&self) -> &AuthzenConfig {
        &self.config
    }

    /// The PDP's decision on `req` (`tier`: what the local rules would assign; `version`: the
    /// policy's, so a changed policy never reuses a decision), or why there is none (then the
    /// call is refused). A decision the PDP gave for the same evaluation is reused within its
    /// tier's TTL.
    pub async fn decide(
        &self,
        req: &DecisionRequest<'_>,
        tier: Option<Tier>,
        version: &str,
    ) -> Result<(PdpDecision, bool), String> {
        let key = self.cache.key(req, tier, version);
        if let Some(hit) = key.as_ref().and_then(|k| self.cache.get(k, Instant::now())) {
            return Ok((hit, true));
        }
        let decision = self.ask(evaluation(req, tier)).await?;
        if let Some(k) = key {
            self.cache.put(k, tier, decision.clone(), Instant::now());
        }
        Ok((decision, false))
    }

    async fn ask(&self, evaluation: Value) -> Result<PdpDecision, String> {
        let (reply, answer) = oneshot::channel();
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(4 * self.config.batch_max);
            tokio::spawn(send_batches(self.config.clone(), rx));
            tx
        });
        queue.send((evaluation, reply)).await.map_err(|_| "the PDP client has stopped".to_string())?;
        let limit = Duration::from_millis(self.config.timeout_ms);
        match tokio::time::timeout(limit, answer).await {
            Ok(Ok(decision)) => decision,
            Ok(Err(_)) => Err("the PDP client has stopped".into()),
            Err(_) => Err(format!("no answer within {} ms", self.config.timeout_ms)),
        }
    }
}

/// One evaluation in the AuthZEN shape.
fn evaluation(req: &DecisionRequest<'_>, tier: Option<Tier>) -> Value {
    let r = &req.resource;
    json!({
        "subject": {"type": "principal", "id": req.subject.id, "properties": {"tenant": req.subject.tenant.as_str()}},
        "action": {"name": req.action.name},
        "resource": {
            "type": "operation",
            "id": format!("{}/{}", r.upstream, r.operation),
            "properties": {"upstream": r.upstream, "operation": r.operation, "effect": r.effect.as_str()},
        },
        "context": {
            "ingress": req.context.ingress.name(),
            "digest": req.context.digest.as_str(),
            "request": *req.context.request,
            "tier": tier.map(Tier::as_str),
        },
    })
}

async fn send_batches(config: AuthzenConfig, mut rx: mpsc::Receiver<Pending>) {
    let http = reqwest::Client::new();
    let url = format!("{}/access/v1/evaluations", config.url.trim_end_matches('/'));
    let mut batch = Vec::with_capacity(config.batch_max);
    while rx.recv_many(&mut batch, config.batch_max).await > 0 {
        let (evaluations, replies): (Vec<Value>, Vec<_>) = batch.drain(..).unzip();
        let n = evaluations.len();
        let sent = http
            .post(&url)
            .timeout(Duration::from_millis(config.timeout_ms))
            .json(&json!({"evaluations": evaluations}))
            .send();
        let answers = match sent.await {
            Ok(resp) if resp.status().is_success() => match resp.json::<Value>().await {
                Ok(body) => decisions(&body, n),
                Err(e) => vec![Err(format!("unreadable answer: {e}")); n],
            },
            Ok(resp) => vec![Err(format!("answered HTTP {}", resp.status().as_u16())); n],
            Err(e) => vec![Err(format!("unreachable: {e}")); n],
        };
        for (reply, answer) in replies.into_iter().zip(answers) {
            let _ = reply.send(answer);
        }
    }
}

/// The `n` decisions of an evaluations response, in order; a missing or malformed one is an
/// error for its call alone.
fn decisions(body: &Value, n: usize) -> Vec<Result<PdpDecision, String>> {
    let list = body["evaluations"].as_array();
    (0..n)
        .map(|i| {
            let e = list.and_then(|l| l.get(i)).ok_or_else(|| format!("no decision #{i} in its answer"))?;
            match e["decision"].as_bool() {
                Some(true) => Ok(PdpDecision::Allow),
                Some(false) => {
                    let why = reason(&e["context"]);
                    Ok(if e["context"]["hold"] == true { PdpDecision::Hold(why) } else { PdpDecision::Deny(why) })
                }
                None => Err(format!("decision #{i} is not a boolean")),
            }
        })
        .collect()
}

/// The reason a PDP gives: `context.reason`, else the first text of `reason_user` or
/// `reason_admin`.
fn reason(context: &Value) -> String {
    let first_text = |v: &Value| v.as_object().and_then(|m| m.values().find_map(Value::as_str)).map(str::to_string);
    context["reason"]
        .as_str()
        .map(str::to_string)
        .or_else(|| first_text(&context["reason_user"]))
        .or_else(|| first_text(&context["reason_admin"]))
        .unwrap_or_else(|| "refused by the policy decision point".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_read_in_order_and_a_malformed_one_fails_alone() {
        let body = json!({"evaluations": [
            {"decision": true},
            {"decision": false, "context": {"reason_user": {"en-403": "not on weekends"}}},
            {"decision": false, "context": {"hold": true, "reason": "a human must look"}},
            {"decision": "yes"},
        ]});
        let got = decisions(&body, 5);
        assert_eq!(got[0], Ok(PdpDecision::Allow));
        assert_eq!(got[1], Ok(PdpDecision::Deny("not on weekends".into())));
        assert_eq!(got[2], Ok(PdpDecision::Hold("a human must look".into())));
        assert!(got[3].is_err() && got[4].is_err(), "{got:?}");
    }

    #[test]
    fn a_config_that_cannot_work_is_refused() {
        let ok = AuthzenConfig {
            url: "http://127.0.0.1:1".into(),
            tenants: vec![],
            timeout_ms: 500,
            batch_max: 64,
            cache: CacheTtl::default(),
        };
        assert!(ok.check().is_ok());
        assert!(AuthzenConfig { url: "ftp://x".into(), ..ok.clone() }.check().is_err());
        assert!(AuthzenConfig { timeout_ms: 0, ..ok.clone() }.check().is_err());
        assert!(AuthzenConfig { batch_max: 0, ..ok.clone() }.check().is_err());
        let long = CacheTtl { sensitive_s: 61, ..CacheTtl::default() };
        assert!(AuthzenConfig { cache: long, ..ok.clone() }.check().is_err());
        assert!(ok.decides_for("anyone"));
        let some = AuthzenConfig { tenants: vec!["acme".into()], ..ok };
        assert!(some.decides_for("acme") && !some.decides_for("globex"));
    }

    #[tokio::test]
    async fn an_unreachable_pdp_refuses_within_its_timeout() {
        let pdp = Pdp::new(AuthzenConfig {
            url: "http://127.0.0.1:9".into(),
            tenants: vec![],
            timeout_ms: 300,
            batch_max: 8,
            cache: CacheTtl::default(),
        });
        let principal =
            switchyard_contract::Principal::new(switchyard_contract::TenantId::new("acme").unwrap(), "alice");
        let target = switchyard_contract::Target {
            upstream: "fx".into(),
            operation: "echo".into(),
            effect: switchyard_contract::EffectClass::Write,
        };
        let request = json!({});
        let digest = switchyard_contract::RequestDigest::compute("fx", "echo", &request).unwrap();
        let facts = switchyard_contract::CallFacts {
            principal: &principal,
            ingress: switchyard_contract::Ingress::Admin,
            target: &target,
            digest: &digest,
            request: &request,
            grant: None,
            invocation: switchyard_contract::InvocationId::new(),
        };
        let t0 = std::time::Instant::now();
        let r = pdp.decide(&DecisionRequest::from_facts(&facts), None, "v1").await;
        assert!(r.is_err(), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(2));
    }
}
