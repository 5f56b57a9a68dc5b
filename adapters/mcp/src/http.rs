//! The HTTP client of an upstream's sessions: a read goes on a kept-alive connection, anything
//! else on a connection of its own.
//!
//! rmcp's default client opens a TCP connection per request (it disables pooling), which a
//! `read_only` call pays for on every hop. Keeping connections alive has one cost that matters to
//! a gateway: a request written into a kept connection that the upstream closed (it died, or its
//! keep-alive timeout struck at that moment) fails without a trace of whether the upstream read
//! it. For a read that is harmless (it is retried), but a write must not turn `unknown` for a
//! request that never left: on a connection of its own, a dead upstream refuses the connect, which
//! proves nothing was sent ([`crate::upstream`]'s `never_sent`). So each session's transport picks
//! per request, from a flag its lease sets for the call it carries ([`UpstreamHttp::for_session`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};

/// How long a kept connection may wait idle for its next request. Shorter than the keep-alive
/// timeouts servers commonly use (5 s in Node.js and uvicorn), so that the gateway, not the
/// upstream, closes an idle connection and a read is rarely written into one being closed.
pub const UPSTREAM_IDLE: Duration = Duration::from_secs(2);

/// The two HTTP clients of an upstream, shared by its sessions, and the session's choice.
#[derive(Clone, Debug)]
pub struct UpstreamHttp {
    kept: reqwest::Client,
    fresh: reqwest::Client,
    reuse: Arc<AtomicBool>,
}

type Posted = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

impl UpstreamHttp {
    /// The clients of a new upstream. Like rmcp's default client, both follow only same-origin
    /// 307/308 redirects (the others would drop the body or replay the session id elsewhere).
    pub fn new() -> Result<Self, String> {
        let build = |idle: usize| {
            reqwest::Client::builder()
                .pool_max_idle_per_host(idle)
                .pool_idle_timeout(UPSTREAM_IDLE)
                .tcp_nodelay(true)
                .redirect(reqwest::redirect::Policy::custom(same_origin_redirects))
                .build()
                .map_err(|e| format!("HTTP client: {e}"))
        };
        Ok(Self { kept: build(usize::MAX)?, fresh: build(0)?, reuse: Arc::default() })
    }

    /// The same clients for a session, whose requests go on a kept-alive connection while its
    /// `reuse` is set (for a `read_only` call; a session starts with it cleared).
    pub fn for_session(&self, reuse: Arc<AtomicBool>) -> Self {
        Self { kept: self.kept.clone(), fresh: self.fresh.clone(), reuse }
    }

    fn pick(&self) -> &reqwest::Client {
        if self.reuse.load(Ordering::SeqCst) { &self.kept } else { &self.fresh }
    }
}

fn same_origin_redirects(attempt: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let keeps_body =
        matches!(attempt.status(), reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT);
    let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
    if keeps_body && same_origin && attempt.previous().len() <= 10 { attempt.follow() } else { attempt.stop() }
}

impl StreamableHttpClient for UpstreamHttp {
    type Error = reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Posted> + Send + '_ {
        self.pick().post_message(uri, message, session_id, auth_header, custom_headers)
    }

    // rmcp's worker posts through this one (the trait's other variants default to `post_message`).
    fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = Posted> + Send + '_ {
        self.pick().post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<reqwest::Error>>> + Send + '_ {
        self.fresh.delete_session(uri, session_id, auth_header, custom_headers)
    }

    // A stream lives as long as its connection: nothing to keep for the next request.
    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<BoxedSseResponse, StreamableHttpError<reqwest::Error>>> + Send + '_ {
        self.fresh.get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<BoxedSseResponse, StreamableHttpError<reqwest::Error>>> + Send + '_ {
        self.fresh.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }
}
