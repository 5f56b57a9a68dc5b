//! One span tree per invocation, in a test binary of its own: tracing caches per call site
//! whether anyone listens, and another test's threads (with no subscriber) racing this one's
//! thread-local subscriber could make the driver's span go unseen.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchyard_contract::engine::RetryPolicy;
use switchyard_contract::{
    Engine, EngineConfig, IngressKey, Invocations, Principal, StateName, Submission, TenantId, WorkerId,
};
use switchyard_store::StoreOptions;
use switchyard_tests::upstream::{OneUpstream, Scripted};

fn alice() -> Principal {
    Principal::new(TenantId::new("acme").unwrap_or_else(|e| panic!("{e}")), "alice")
}

/// One span tree per invocation: the engine names the invocation on the span of whoever
/// submitted it (a face's request); the invocation's span, a child of that span, holds the
/// admission and each attempt, and an attempt the upstream's call and the commits. (On one thread: the capturing subscriber is this thread's.)
#[tokio::test(flavor = "current_thread")]
async fn the_driver_span_is_a_child_of_the_submitting_span_which_names_the_invocation() {
    use std::sync::Mutex;
    use tracing::Instrument as _;
    use tracing_subscriber::layer::{Context, SubscriberExt as _};

    /// Span name, parent name, and the `invocation.id` recorded on it.
    type Sighting = (String, Option<String>, Option<String>);
    #[derive(Default)]
    struct Seen {
        spans: Mutex<Vec<Sighting>>,
    }
    struct Capture(Arc<Seen>);
    struct Id(String);
    impl tracing::field::Visit for Id {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            if field.name() == "invocation.id" {
                self.0 = format!("{value:?}");
            }
        }
    }
    impl<S> tracing_subscriber::Layer<S> for Capture
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        fn on_new_span(&self, attrs: &tracing::span::Attributes<'_>, id: &tracing::span::Id, ctx: Context<'_, S>) {
            let span = ctx.span(id);
            let parent = span.as_ref().and_then(|s| s.parent()).map(|p| p.name().to_string());
            let mut v = Id(String::new());
            attrs.record(&mut v);
            let name = attrs.metadata().name().to_string();
            if let Ok(mut s) = self.0.spans.lock() {
                s.push((name, parent, Some(v.0).filter(|x| !x.is_empty())));
            }
        }
        fn on_record(&self, id: &tracing::span::Id, values: &tracing::span::Record<'_>, ctx: Context<'_, S>) {
            let mut v = Id(String::new());
            values.record(&mut v);
            let name = ctx.span(id).map(|s| s.name().to_string()).unwrap_or_default();
            if v.0.is_empty() {
                return; // another field
            }
            if let Ok(mut s) = self.0.spans.lock() {
                s.push((name, None, Some(v.0).filter(|x| !x.is_empty())));
            }
        }
    }

    let seen = Arc::new(Seen::default());
    let subscriber = tracing_subscriber::registry().with(Capture(seen.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    let (_dir, url) = switchyard_tests::sqlite_url();
    let store = switchyard_store::connect(&url, &StoreOptions::default()).await.unwrap();
    let up = Scripted::new(false);
    let cfg = EngineConfig {
        worker: WorkerId::new(),
        recovery_interval: Duration::from_millis(100),
        retry: RetryPolicy { max_attempts: 1, ..RetryPolicy::default() },
        watch_poll: Duration::from_millis(50),
        ..EngineConfig::default()
    };
    let e = Engine::builder(store.invocations, cfg).build(Arc::new(OneUpstream(up.clone()))).unwrap();
    let submission = Submission {
        principal: alice(),
        upstream: "test".into(),
        operation: "w_ok".into(),
        request: json!({}),
        ingress_key: None::<IngressKey>,
        ingress: switchyard_contract::Ingress::Admin,
        caller: None,
        context: None,
        grant: None,
        parent: None,
        trace: None,
    };
    let face = tracing::info_span!("face", invocation.id = tracing::field::Empty);
    let inv = e.submit(submission).instrument(face).await.unwrap().invocation;
    for _ in 0..500 {
        if e.get(&alice().tenant, inv.id).await.is_ok_and(|i| i.state.name() == StateName::Succeeded) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let spans = seen.spans.lock().map(|s| s.clone()).unwrap_or_default();
    let id = inv.id.to_string();
    assert!(spans.iter().any(|(n, _, v)| n == "face" && v.as_deref() == Some(id.as_str())), "{spans:?}");
    assert!(
        spans
            .iter()
            .any(|(n, p, v)| n == "invocation" && p.as_deref() == Some("face") && v.as_deref() == Some(id.as_str())),
        "{spans:?}"
    );
    // Under it, the tree an OTLP exporter sees: the admission, then the attempt with the
    // upstream's call and the commit of its outcome.
    let parent_of = |name: &str| -> Vec<Option<String>> {
        spans.iter().filter(|(n, _, v)| n == name && v.is_none()).map(|(_, p, _)| p.clone()).collect()
    };
    assert_eq!(parent_of("admission"), [Some("invocation".to_string())], "{spans:?}");
    assert_eq!(parent_of("attempt"), [Some("invocation".to_string())], "one attempt: {spans:?}");
    assert_eq!(parent_of("upstream.call"), [Some("attempt".to_string())], "{spans:?}");
    let commits = parent_of("commit");
    assert!(!commits.is_empty() && commits.iter().all(|p| p.as_deref() == Some("attempt")), "{spans:?}");
    assert_eq!(spans.iter().filter(|(n, ..)| n == "invocation").count(), 1, "one invocation span: {spans:?}");
}
