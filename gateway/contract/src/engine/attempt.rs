//! What one attempt's call to its upstream runs under, shared by the driver and the early send
//! of a read (which starts before the driver does).

use std::time::Duration;

use tracing::debug_span;

use crate::ports::DispatchCall;
use crate::trace::TARGET;

/// The span an upstream's request runs under: its context is what an adapter sends upstream
/// (`trace::outgoing`), so the upstream's work joins the trace under it.
pub(super) fn upstream_span(call: &DispatchCall) -> tracing::Span {
    debug_span!(
        target: TARGET,
        "upstream.call",
        otel.kind = "client",
        upstream = %call.target.upstream,
        operation = %call.target.operation,
        attempt.no = call.attempt_no,
    )
}

/// The part of an attempt's time an upstream may spend before sending (e.g. waiting for a free
/// session): the attempt timeout less a tenth of it, at most one second less.
pub(super) fn send_window(attempt_timeout: Duration) -> Duration {
    attempt_timeout.saturating_sub((attempt_timeout / 10).min(Duration::from_secs(1)))
}
