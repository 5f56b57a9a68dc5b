//! Distributed tracing without a tracing backend in the contract: the W3C Trace Context a caller
//! sends ([`TraceParent`]: `traceparent` and `tracestate`), the spans the engine opens for an
//! invocation (target [`TARGET`]: `invocation` at INFO, so logs name the call; `admission`,
//! `attempt`, `upstream.call` and `commit` at DEBUG, so they cost nothing unless traces or debug
//! logs are on), and the [`Propagator`] hook through which the binary joins those spans to the
//! caller's trace and reads the context an upstream request must carry.
//!
//! The binary installs a propagator (OpenTelemetry) only when tracing is configured; without one
//! a caller's context is ignored and [`outgoing`] is `None`, so nothing is sent upstream.

use std::fmt;
use std::sync::OnceLock;

/// The `tracing` target of the spans that make up an invocation's trace.
pub const TARGET: &str = "switchyard::trace";

/// The W3C `traceparent` (version 00) with its `tracestate`, as received or to be sent.
#[derive(Clone, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    /// The sender's span: the parent of the receiver's.
    pub parent_id: [u8; 8],
    pub flags: u8,
    /// The `tracestate` header as received (vendor entries), passed on unchanged.
    pub state: Option<String>,
}

impl TraceParent {
    /// Reads a `traceparent` value (and an optional `tracestate`) by W3C Trace Context level 1:
    /// `None` for anything malformed, for version `ff`, and for an all-zero trace or parent id
    /// (the caller's context is then ignored, never the request). A later version is read by its
    /// first four fields, as the recommendation asks.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let v = traceparent.trim();
        let b = v.as_bytes();
        if !v.is_ascii() || b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let version = lower_hex::<1>(&v[0..2])?[0];
        if version == 0xff || (version == 0 && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
            return None;
        }
        let trace_id = lower_hex::<16>(&v[3..35])?;
        let parent_id = lower_hex::<8>(&v[36..52])?;
        let flags = lower_hex::<1>(&v[53..55])?[0];
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        let state = tracestate.map(str::trim).filter(|s| !s.is_empty() && s.len() <= 512).map(str::to_string);
        Some(Self { trace_id, parent_id, flags, state })
    }

    /// The `traceparent` value to send.
    pub fn header(&self) -> String {
        format!("00-{}-{}-{:02x}", hex::encode(self.trace_id), hex::encode(self.parent_id), self.flags)
    }

    /// The trace id as 32 lowercase hex digits.
    pub fn trace_id_hex(&self) -> String {
        hex::encode(self.trace_id)
    }

    /// The stored form: `traceparent`, and after a newline `tracestate` when there is one.
    pub fn to_stored(&self) -> String {
        match &self.state {
            Some(state) => format!("{}\n{state}", self.header()),
            None => self.header(),
        }
    }

    /// From [`to_stored`](Self::to_stored)'s form; `None` if it does not read.
    pub fn from_stored(stored: &str) -> Option<Self> {
        let (parent, state) = match stored.split_once('\n') {
            Some((p, s)) => (p, Some(s)),
            None => (stored, None),
        };
        Self::parse(parent, state)
    }

    /// The sender asked for this trace to be recorded.
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

impl fmt::Debug for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceParent").field("traceparent", &self.header()).field("tracestate", &self.state).finish()
    }
}

/// `N` bytes from exactly `2 * N` lowercase hex digits (W3C forbids upper case).
fn lower_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N || !s.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)) {
        return None;
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(s, &mut out).ok()?;
    Some(out)
}

/// Joins the engine's spans to a tracing backend: the binary implements it (OpenTelemetry).
pub trait Propagator: Send + Sync + 'static {
    /// Makes `span`, not yet entered, a child of the caller's span `parent`.
    fn adopt(&self, span: &tracing::Span, parent: &TraceParent);
    /// `span`'s own context, to send to an upstream as its parent; `None` when the span is not
    /// traced (disabled, or not sampled and not to be propagated).
    fn context_of(&self, span: &tracing::Span) -> Option<TraceParent>;
}

static PROPAGATOR: OnceLock<Box<dyn Propagator>> = OnceLock::new();

/// Installs the process's propagator; `false` if one already was (the first one stays).
pub fn install(p: Box<dyn Propagator>) -> bool {
    PROPAGATOR.set(p).is_ok()
}

/// Makes `span` a child of the caller's context, when there is one and tracing is on.
pub fn adopt(span: &tracing::Span, parent: Option<&TraceParent>) {
    if let (Some(p), Some(parent)) = (PROPAGATOR.get(), parent) {
        p.adopt(span, parent);
    }
}

/// The context an upstream request made now (under the current span) carries: `traceparent`
/// and `tracestate` as HTTP headers, gRPC metadata or MCP `_meta`. `None` when tracing is off.
pub fn outgoing() -> Option<TraceParent> {
    PROPAGATOR.get().and_then(|p| p.context_of(&tracing::Span::current()))
}

#[cfg(test)]
mod tests {
    use super::TraceParent;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_round_trips_with_its_state() {
        let t = TraceParent::parse(GOOD, Some(" congo=t61rcWkgMzE ")).unwrap_or_else(|| panic!("valid"));
        assert_eq!(t.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex::encode(t.parent_id), "00f067aa0ba902b7");
        assert!(t.sampled());
        assert_eq!(t.header(), GOOD);
        assert_eq!(t.state.as_deref(), Some("congo=t61rcWkgMzE"));
        let unsampled = TraceParent::parse(&GOOD.replace("-01", "-00"), Some("")).unwrap_or_else(|| panic!("valid"));
        assert!(!unsampled.sampled());
        assert_eq!(unsampled.state, None);
    }

    #[test]
    fn malformed_or_invalid_contexts_are_ignored() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "0-4bf92f3577b34da6a3ce929d0e0e47366-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\u{e9}",
            "0\u{e9}4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473\u{e9}00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad, None), None, "{bad:?}");
        }
    }

    #[test]
    fn the_stored_form_round_trips() {
        for state in [None, Some("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")] {
            let t = TraceParent::parse(GOOD, state).unwrap_or_else(|| panic!("valid"));
            assert_eq!(TraceParent::from_stored(&t.to_stored()), Some(t));
        }
        assert_eq!(TraceParent::from_stored("garbage"), None);
    }

    #[test]
    fn a_later_version_is_read_by_its_first_fields() {
        let later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds";
        let t = TraceParent::parse(later, None).unwrap_or_else(|| panic!("readable"));
        assert_eq!(t.header(), GOOD);
    }
}
