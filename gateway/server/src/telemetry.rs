//! OpenTelemetry traces (`[telemetry]`): the engine's invocation spans (target
//! [`switchyard_contract::trace::TARGET`]) become OTel spans through `tracing-opentelemetry` and
//! are exported over OTLP/HTTP in batches; the contract's [`Propagator`] hook joins them to the
//! caller's W3C trace context and gives adapters the context to send upstream.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider};
use switchyard_contract::TraceParent;
use switchyard_contract::trace::{Propagator, TARGET};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;

use crate::config::TelemetryConfig;

/// Why tracing could not start.
#[derive(Debug, thiserror::Error)]
#[error("telemetry: {0}")]
pub struct TelemetryError(String);

/// What tracing needs from the process: the layer to add to the subscriber, and the provider
/// to flush at shutdown.
pub struct Tracing<S> {
    pub layer: Box<dyn Layer<S> + Send + Sync>,
    pub provider: SdkTracerProvider,
}

impl<S> std::fmt::Debug for Tracing<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracing").finish_non_exhaustive()
    }
}

/// The exporter, provider and layer for `cfg`, and the contract's propagator installed; `None`
/// when no endpoint is configured (tracing off).
pub fn start<S>(cfg: &TelemetryConfig) -> Result<Option<Tracing<S>>, TelemetryError>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
{
    let Some(endpoint) = &cfg.otlp_endpoint else { return Ok(None) };
    let headers = cfg.headers.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint.clone())
        .with_timeout(Duration::from_millis(cfg.export_timeout_ms))
        .with_headers(headers)
        .build()
        .map_err(|e| TelemetryError(format!("the OTLP exporter for {endpoint} cannot start: {e}")))?;
    let batch = BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            BatchConfigBuilder::default().with_scheduled_delay(Duration::from_millis(cfg.batch_delay_ms)).build(),
        )
        .build();
    let resource = opentelemetry_sdk::Resource::builder().with_service_name(cfg.service_name.clone()).build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(batch)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(cfg.sample_ratio))))
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("switchyard");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(Targets::new().with_target(TARGET, tracing::Level::DEBUG))
        .boxed();
    switchyard_contract::trace::install(Box::new(Otel));
    Ok(Some(Tracing { layer, provider }))
}

/// Flushes the spans not yet exported and stops the exporter (blocking: call off the runtime).
pub fn stop(provider: &SdkTracerProvider) {
    if let Err(e) = provider.shutdown() {
        tracing::warn!(error = %e, "telemetry: the last spans could not be exported");
    }
}

/// The contract's propagator over `tracing-opentelemetry`.
struct Otel;

impl Propagator for Otel {
    fn adopt(&self, span: &tracing::Span, parent: &TraceParent) {
        let state = parent.state.as_deref().and_then(|s| s.parse::<TraceState>().ok()).unwrap_or_default();
        let remote = SpanContext::new(
            TraceId::from_bytes(parent.trace_id),
            SpanId::from_bytes(parent.parent_id),
            TraceFlags::new(parent.flags & TraceFlags::SAMPLED.to_u8()),
            true,
            state,
        );
        if let Err(e) = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote)) {
            tracing::debug!(error = %e, "the caller's trace context was not applied");
        }
    }

    fn context_of(&self, span: &tracing::Span) -> Option<TraceParent> {
        let cx = span.context();
        let otel = cx.span();
        let sc = otel.span_context();
        if !sc.is_valid() {
            return None;
        }
        let state = sc.trace_state().header();
        Some(TraceParent {
            trace_id: sc.trace_id().to_bytes(),
            parent_id: sc.span_id().to_bytes(),
            flags: sc.trace_flags().to_u8(),
            state: (!state.is_empty()).then_some(state),
        })
    }
}
