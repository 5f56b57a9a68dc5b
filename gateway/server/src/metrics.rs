//! `GET /metrics`: the engine's counts and timings in the Prometheus text format
//! (`prometheus-client`), behind the admin token or an OAuth token with the `metrics:read`
//! scope. [`Metrics`] is the contract's [`Meter`], attached to the engine at start.
//!
//! - `switchyard_policy_decisions_total{ingress, verdict}`: every ruling of the policy
//!   enforcement point (`allow`, `deny`, `hold`, `defer`); `ingress` is always the protocol the
//!   caller spoke (a bridged call counts under its caller's, not the face whose checks it passed);
//! - `switchyard_invocations_admitted_total{ingress, upstream}`: calls admitted (a retry that
//!   attaches to an earlier call is not counted again);
//! - `switchyard_invocations_settled_total{upstream, state}`: calls entering `succeeded`,
//!   `failed`, `canceled` or `unknown` (a reconciled `unknown` counts again, as its result);
//! - `switchyard_attempt_duration_seconds{upstream, state}`: each attempt, from sending it to its
//!   answer, by the state it left the call in;
//! - `switchyard_commit_duration_seconds{what}`: the store's commits of admissions and of the
//!   driver's transitions (queueing for a shared commit included);
//! - `switchyard_lease_takeovers_total`: invocations recovery took over from a lapsed lease;
//! - `switchyard_invocations_unknown{upstream}`: calls whose outcome is `unknown` now, waiting to
//!   be reconciled (read from the store at each scrape: the same on every replica);
//! - `switchyard_push_outbox_pending`: A2A push notifications waiting for delivery (the store's,
//!   every replica's); `switchyard_push_deliveries_total{outcome}`: this replica's attempts,
//!   `delivered`, `failed` (to be retried) or `given_up`;
//! - `switchyard_a2a_open_streams`: A2A streams open now (every binding);
//! - `switchyard_mcp_upstream_sessions{upstream, state}`: upstream MCP sessions `in_use` (carrying
//!   a call) and `idle`, and `switchyard_mcp_upstream_sessions_max{upstream}`;
//! - `switchyard_artifact_bytes_total{direction}`: bytes of committed uploads (`in`) and bytes
//!   sent to readers (`out`).
//!
//! Counts are per replica (since its start), as Prometheus expects: sum them across replicas.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use switchyard_contract::{Ingress, Invocation, InvocationStore, Meter, PushOutbox, Target};

use crate::auth::{Gatekeeper, scope};

type Labels = [(&'static str, String); 2];
type Label = [(&'static str, String); 1];
type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// The gateway's metrics and the registry that exposes them.
pub struct Metrics {
    registry: Registry,
    decisions: Family<Labels, Counter>,
    admitted: Family<Labels, Counter>,
    settled: Family<Labels, Counter>,
    attempts: Histograms<Labels>,
    commits: Histograms<Label>,
    takeovers: Counter,
    unknown: Family<Label, Gauge>,
    push_pending: Gauge,
    pushes: Family<Label, Counter>,
    streams: Gauge,
    sessions: Family<Labels, Gauge>,
    sessions_max: Family<Label, Gauge>,
    artifact_bytes: Family<Label, Counter>,
    /// One scrape reads the probes at a time (counters catch up with totals kept elsewhere).
    probing: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Attempt latency buckets: 0.5 ms doubling to about 16 s.
fn attempt_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// Commit latency buckets: 50 µs doubling to about 1.6 s.
fn commit_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.00005, 2.0, 16))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("switchyard");
        let decisions = Family::<Labels, Counter>::default();
        let admitted = Family::<Labels, Counter>::default();
        let settled = Family::<Labels, Counter>::default();
        let attempts: Histograms<Labels> = Family::new_with_constructor(attempt_histogram);
        let commits: Histograms<Label> = Family::new_with_constructor(commit_histogram);
        let takeovers = Counter::default();
        let unknown = Family::<Label, Gauge>::default();
        registry.register("policy_decisions", "Rulings of the policy enforcement point", decisions.clone());
        registry.register("invocations_admitted", "Calls admitted", admitted.clone());
        registry.register("invocations_settled", "Calls entering a settled state", settled.clone());
        registry.register("attempt_duration_seconds", "Attempts, from sending to the answer", attempts.clone());
        registry.register("commit_duration_seconds", "Store commits, queueing included", commits.clone());
        registry.register("lease_takeovers", "Invocations taken over from a lapsed lease", takeovers.clone());
        registry.register("invocations_unknown", "Calls whose outcome is unknown now", unknown.clone());
        let (push_pending, pushes, streams) = (Gauge::default(), Family::default(), Gauge::default());
        let (sessions, sessions_max, artifact_bytes) = (Family::default(), Family::default(), Family::default());
        registry.register("push_outbox_pending", "A2A push notifications waiting for delivery", push_pending.clone());
        registry.register("push_deliveries", "A2A push delivery attempts by outcome", pushes.clone());
        registry.register("a2a_open_streams", "A2A streams open now", streams.clone());
        registry.register("mcp_upstream_sessions", "Upstream MCP sessions by state", sessions.clone());
        registry.register("mcp_upstream_sessions_max", "The most sessions an upstream may have", sessions_max.clone());
        registry.register("artifact_bytes", "Artifact bytes stored (in) and served (out)", artifact_bytes.clone());
        Self {
            registry,
            decisions,
            admitted,
            settled,
            attempts,
            commits,
            takeovers,
            unknown,
            push_pending,
            pushes,
            streams,
            sessions,
            sessions_max,
            artifact_bytes,
            probing: tokio::sync::Mutex::new(()),
        }
    }
}

impl Metrics {
    /// Sets the `unknown` gauge from the store's `counts` (an upstream with none left drops out).
    pub fn set_unknown(&self, counts: &[(String, u64)]) {
        self.unknown.clear();
        for (upstream, n) in counts {
            self.unknown.get_or_create(&[("upstream", upstream.clone())]).set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
    }

    /// Reads what the rest of the gateway counts (at each scrape).
    async fn probe(&self, p: &Probes) {
        let _one = self.probing.lock().await;
        match p.store.unknown_counts().await {
            Ok(counts) => self.set_unknown(&counts),
            Err(e) => tracing::warn!(error = %e, "metrics: the unknown count cannot be read; the last one is shown"),
        }
        match p.outbox.pending_deliveries().await {
            Ok(n) => {
                self.push_pending.set(gauge(n));
            }
            Err(e) => tracing::warn!(error = %e, "metrics: the push outbox cannot be read; the last depth is shown"),
        }
        let a2a = p.a2a.stats();
        self.streams.set(gauge(a2a.open_streams));
        for (outcome, n) in
            [("delivered", a2a.push_delivered), ("failed", a2a.push_failed_attempts), ("given_up", a2a.push_given_up)]
        {
            catch_up(&self.pushes.get_or_create(&[("outcome", outcome.to_string())]), n);
        }
        for (upstream, in_use, idle, max) in p.mcp.sessions() {
            for (state, n) in [("in_use", in_use), ("idle", idle)] {
                let labels = [("upstream", upstream.clone()), ("state", state.to_string())];
                self.sessions.get_or_create(&labels).set(gauge(n as u64));
            }
            self.sessions_max.get_or_create(&[("upstream", upstream)]).set(gauge(max as u64));
        }
        let (stored, served) = p.artifacts.traffic();
        catch_up(&self.artifact_bytes.get_or_create(&[("direction", "in".to_string())]), stored);
        catch_up(&self.artifact_bytes.get_or_create(&[("direction", "out".to_string())]), served);
    }

    /// The exposition, in the Prometheus text format.
    pub fn render(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

impl Meter for Metrics {
    fn decided(&self, ingress: Ingress, verdict: &'static str) {
        self.decisions.get_or_create(&[("ingress", ingress.name().into()), ("verdict", verdict.into())]).inc();
    }

    fn admitted(&self, ingress: Ingress, target: &Target) {
        self.admitted.get_or_create(&[("ingress", ingress.name().into()), ("upstream", target.upstream.clone())]).inc();
    }

    fn attempted(&self, target: &Target, elapsed: Duration, state: &'static str) {
        let labels = [("upstream", target.upstream.clone()), ("state", state.into())];
        self.attempts.get_or_create(&labels).observe(elapsed.as_secs_f64());
    }

    fn settled(&self, inv: &Invocation) {
        let labels = [("upstream", inv.target.upstream.clone()), ("state", inv.state.name().as_str().into())];
        self.settled.get_or_create(&labels).inc();
    }

    fn committed(&self, what: &'static str, elapsed: Duration) {
        self.commits.get_or_create(&[("what", what.into())]).observe(elapsed.as_secs_f64());
    }

    fn taken_over(&self, n: usize) {
        self.takeovers.inc_by(u64::try_from(n).unwrap_or(u64::MAX));
    }
}

fn gauge(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Brings `counter` up to `total`, a count kept elsewhere that only grows.
fn catch_up(counter: &Counter, total: u64) {
    let now = counter.get();
    if total > now {
        counter.inc_by(total - now);
    }
}

/// What a scrape reads besides the engine's own counts.
#[derive(Clone)]
pub struct Probes {
    pub store: Arc<dyn InvocationStore>,
    pub outbox: Arc<dyn PushOutbox>,
    pub mcp: Arc<switchyard_mcp::McpGateway>,
    pub a2a: Arc<switchyard_a2a::A2aAgents>,
    pub artifacts: switchyard_artifacts::Artifacts,
}

impl std::fmt::Debug for Probes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probes").finish_non_exhaustive()
    }
}

#[derive(Clone)]
struct Scrape {
    metrics: Arc<Metrics>,
    gate: Gatekeeper,
    probes: Probes,
}

impl std::fmt::Debug for Scrape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scrape").finish_non_exhaustive()
    }
}

/// `GET /metrics`, for the admin token or an OAuth token with `metrics:read`.
pub fn router(metrics: Arc<Metrics>, gate: Gatekeeper, probes: Probes) -> Router {
    Router::new().route("/metrics", get(scrape)).with_state(Scrape { metrics, gate, probes })
}

async fn scrape(State(s): State<Scrape>, headers: HeaderMap) -> Response {
    let who = match s.gate.identify(&headers).await {
        Ok(who) => who,
        Err(refusal) => return refusal.into_response(),
    };
    if let Err(refusal) = s.gate.require(&who, &[scope::METRICS]) {
        return refusal.into_response();
    }
    s.metrics.probe(&s.probes).await;
    match s.metrics.render() {
        Ok(text) => {
            let kind = HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8");
            (StatusCode::OK, [(header::CONTENT_TYPE, kind)], text).into_response()
        }
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "metrics could not be rendered\n").into_response(),
    }
}
