//! A small OTLP/HTTP trace collector on 127.0.0.1 for the tracing tests: it decodes each export
//! (protobuf `ExportTraceServiceRequest`, with `opentelemetry-proto`'s generated types) and
//! keeps every span it received.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message as _;

/// One span as exported.
#[derive(Debug, Clone)]
pub struct SpanSeen {
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent: String,
    pub name: String,
    /// OTLP `SpanKind`: 1 internal, 2 server, 3 client.
    pub kind: i32,
    /// The exporting resource's `service.name`.
    pub service: String,
    pub attributes: BTreeMap<String, String>,
    /// OTLP status code: 0 unset, 1 ok, 2 error.
    pub status: i32,
    /// Start and end, nanoseconds since the Unix epoch.
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The collector; stops when dropped.
#[derive(Debug)]
pub struct Collector {
    /// The traces endpoint (`http://127.0.0.1:<port>/v1/traces`).
    pub url: String,
    spans: Arc<Mutex<Vec<SpanSeen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Collector {
    pub async fn start() -> Collector {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = spans.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |headers: HeaderMap, body: Bytes| {
                let kept = kept.clone();
                async move {
                    let protobuf = headers
                        .get(header::CONTENT_TYPE)
                        .is_some_and(|v| v.as_bytes().starts_with(b"application/x-protobuf"));
                    if !protobuf {
                        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, Vec::new());
                    }
                    let Ok(export) = ExportTraceServiceRequest::decode(body) else {
                        return (StatusCode::BAD_REQUEST, Vec::new());
                    };
                    if let Ok(mut all) = kept.lock() {
                        all.extend(spans_of(export));
                    }
                    (StatusCode::OK, ExportTraceServiceResponse::default().encode_to_vec())
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let url = format!("http://{}/v1/traces", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Collector { url, spans, task }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<SpanSeen> {
        self.spans.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The spans of trace `trace_id` once `done` holds for them (panics after `limit`).
    pub async fn trace(&self, trace_id: &str, limit: Duration, done: impl Fn(&[SpanSeen]) -> bool) -> Vec<SpanSeen> {
        let until = tokio::time::Instant::now() + limit;
        loop {
            let spans: Vec<SpanSeen> = self.spans().into_iter().filter(|s| s.trace_id == trace_id).collect();
            if done(&spans) {
                return spans;
            }
            assert!(tokio::time::Instant::now() < until, "trace {trace_id} incomplete after {limit:?}: {spans:#?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn spans_of(export: ExportTraceServiceRequest) -> Vec<SpanSeen> {
    let mut out = Vec::new();
    for rs in export.resource_spans {
        let attrs = rs.resource.map(|r| attributes(r.attributes)).unwrap_or_default();
        let service = attrs.get("service.name").cloned().unwrap_or_default();
        for ss in rs.scope_spans {
            for s in ss.spans {
                out.push(SpanSeen {
                    trace_id: hex::encode(&s.trace_id),
                    span_id: hex::encode(&s.span_id),
                    parent: hex::encode(&s.parent_span_id),
                    name: s.name,
                    kind: s.kind,
                    service: service.clone(),
                    attributes: attributes(s.attributes),
                    status: s.status.map_or(0, |st| st.code),
                    start_ns: s.start_time_unix_nano,
                    end_ns: s.end_time_unix_nano,
                });
            }
        }
    }
    out
}

fn attributes(kvs: Vec<opentelemetry_proto::tonic::common::v1::KeyValue>) -> BTreeMap<String, String> {
    kvs.into_iter()
        .map(|kv| {
            let v = match kv.value.and_then(|v| v.value) {
                Some(Any::StringValue(s)) => s,
                Some(Any::IntValue(i)) => i.to_string(),
                Some(Any::BoolValue(b)) => b.to_string(),
                Some(Any::DoubleValue(d)) => d.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key, v)
        })
        .collect()
}
