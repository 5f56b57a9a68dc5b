//! The gateway's A2A client for upstream (internal) agents: reads the agent card, picks the
//! first interface it speaks (JSON-RPC, HTTP+JSON or gRPC, protocol 1.0, in the card's order of
//! preference), and calls the operations with `A2A-Version: 1.0`. Failures are classified for the engine: nothing sent (safe to
//! retry), sent but no answer (outcome lost), or an A2A error from the agent.

use std::sync::Arc;
use std::time::Duration;

use a2a::{
    AgentCard, ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse, Task,
};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use serde_json::{Value, json};

/// How a call to an upstream agent failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// The request certainly did not reach the agent (no connection).
    #[error("upstream agent unreachable: {0}")]
    NotSent(String),
    /// The request may have reached the agent; no (complete) answer came back.
    #[error("upstream agent answer lost: {0}")]
    Lost(String),
    /// The agent answered with an A2A error.
    #[error("upstream agent error {reason}: {message}")]
    Remote { reason: String, message: String, details: Value },
}

#[derive(Debug, Clone)]
enum Binding {
    JsonRpc(String),
    Rest(String),
    /// The official `a2a-pb` service client on a lazily connected channel (h2c or TLS).
    Grpc(a2a_pb::a2a_service_client::A2aServiceClient<tonic::transport::Channel>),
}

/// The largest gRPC message accepted from an agent (tonic's default is 4 MiB).
const GRPC_MAX_MESSAGE: usize = 16 << 20;

/// A client bound to one upstream agent.
#[derive(Debug, Clone)]
pub struct A2aClient {
    http: reqwest::Client,
    binding: Binding,
    /// The agent declares `capabilities.streaming`.
    pub streaming: bool,
    /// The agent's card, as read at discovery.
    pub card: Arc<AgentCard>,
}

fn transport(e: &reqwest::Error) -> ClientError {
    if e.is_connect() || e.is_builder() {
        ClientError::NotSent(e.to_string())
    } else {
        ClientError::Lost(e.to_string())
    }
}

/// The A2A error in a JSON-RPC `error` member or an AIP-193 body.
fn remote(err: &Value) -> ClientError {
    let details = err.get("details").or_else(|| err.get("data")).cloned().unwrap_or(Value::Null);
    let reason = details
        .as_array()
        .and_then(|d| d.iter().find_map(|i| i.get("reason").and_then(Value::as_str)))
        .map(str::to_string)
        .or_else(|| err.get("status").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| format!("code {}", err.get("code").cloned().unwrap_or(Value::Null)));
    let message = err.get("message").and_then(Value::as_str).unwrap_or_default().to_string();
    ClientError::Remote { reason, message, details }
}

/// A non-success answer: the agent's refusal only when it carries an A2A error (a JSON-RPC
/// `error` member or an AIP-193 body, each with a numeric `code` and a `message`). Anything else
/// — a proxy's 502 page, a bare 504 or 429 — says nothing about whether the agent got the
/// request, so the outcome is lost.
fn refusal(status: reqwest::StatusCode, body: &[u8]) -> ClientError {
    let v: Option<Value> = serde_json::from_slice(body).ok();
    match v.as_ref().and_then(|v| v.get("error")) {
        Some(e) if e.get("code").is_some_and(Value::is_i64) && e.get("message").is_some_and(Value::is_string) => {
            remote(e)
        }
        _ => ClientError::Lost(format!("the agent's side answered HTTP {status} without an A2A error")),
    }
}

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, ClientError> {
    serde_json::from_value(v).map_err(|e| ClientError::Lost(format!("malformed answer from the agent: {e}")))
}

impl A2aClient {
    /// Reads the card at `card_url` (no redirects, at most [`CARD_MAX_BYTES`]) and binds to the
    /// first JSON-RPC, HTTP+JSON or gRPC 1.0 interface on the card's own host (see
    /// [`same_host`]) or one of `also` (see [`on_host`]): a card cannot send the gateway anywhere
    /// else.
    pub async fn discover(card_url: &str, also: &[String], timeout: Duration) -> Result<Self, ClientError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .read_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ClientError::NotSent(e.to_string()))?;
        let bad = |why: String| ClientError::NotSent(format!("agent card {card_url}: {why}"));
        let mut resp = http.get(card_url).send().await.map_err(|e| ClientError::NotSent(e.to_string()))?;
        if !resp.status().is_success() {
            return Err(bad(format!("HTTP {} (redirects are not followed)", resp.status())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| bad(e.to_string()))? {
            if body.len() + chunk.len() > CARD_MAX_BYTES {
                return Err(bad(format!("larger than {CARD_MAX_BYTES} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        let card: AgentCard = serde_json::from_slice(&body).map_err(|e| bad(e.to_string()))?;
        let spoken = |i: &&a2a::AgentInterface| {
            i.protocol_version == "1.0" && ["JSONRPC", "HTTP+JSON", "GRPC"].contains(&i.protocol_binding.as_str())
        };
        let interface = card
            .supported_interfaces
            .iter()
            .filter(spoken)
            .find(|i| same_host(card_url, &i.url) || also.iter().any(|h| on_host(h, &i.url)))
            .ok_or_else(|| match card.supported_interfaces.iter().find(spoken) {
                Some(elsewhere) => bad(format!(
                    "its interface {} is not on the card's host: the gateway only follows a card to its own host \
                         (or to one of the agent's interface_hosts)",
                    elsewhere.url
                )),
                None => bad("no JSON-RPC, HTTP+JSON or gRPC 1.0 interface".into()),
            })?;
        let binding = match interface.protocol_binding.as_str() {
            "JSONRPC" => Binding::JsonRpc(interface.url.clone()),
            "HTTP+JSON" => Binding::Rest(interface.url.trim_end_matches('/').to_string()),
            _ => Binding::Grpc(grpc_client(&interface.url, timeout)?),
        };
        Ok(Self { http, binding, streaming: card.capabilities.streaming == Some(true), card: Arc::new(card) })
    }

    fn post(&self, url: &str, body: &Value) -> reqwest::RequestBuilder {
        traced(self.http.post(url))
            .header("a2a-version", "1.0")
            .header("content-type", "application/json")
            .body(body.to_string())
    }

    /// One non-streaming operation: JSON-RPC `method`, REST `verb path` with `body`, or the
    /// gRPC method of the same name (the ProtoJSON `params` as its message).
    async fn call(&self, method: &str, params: Value, verb: reqwest::Method, path: &str) -> Result<Value, ClientError> {
        match &self.binding {
            Binding::Grpc(client) => grpc_call(client.clone(), method, params).await,
            Binding::JsonRpc(url) => {
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
                let resp = self.post(url, &body).send().await.map_err(|e| transport(&e))?;
                let v: Value = resp.json().await.map_err(|e| ClientError::Lost(e.to_string()))?;
                match (v.get("result"), v.get("error")) {
                    (Some(r), _) => Ok(r.clone()),
                    (_, Some(e)) => Err(remote(e)),
                    _ => Err(ClientError::Lost("a JSON-RPC answer without result or error".into())),
                }
            }
            Binding::Rest(base) => {
                let mut req =
                    traced(self.http.request(verb.clone(), format!("{base}{path}"))).header("a2a-version", "1.0");
                if verb == reqwest::Method::POST {
                    req = req.header("content-type", "application/json").body(params.to_string());
                }
                let resp = req.send().await.map_err(|e| transport(&e))?;
                let status = resp.status();
                let body = resp.bytes().await.map_err(|e| ClientError::Lost(e.to_string()))?;
                if !status.is_success() {
                    return Err(refusal(status, &body));
                }
                serde_json::from_slice(&body).map_err(|e| ClientError::Lost(format!("malformed answer: {e}")))
            }
        }
    }

    pub async fn send(&self, req: &SendMessageRequest) -> Result<SendMessageResponse, ClientError> {
        let params = serde_json::to_value(req).map_err(|e| ClientError::NotSent(e.to_string()))?;
        decode(self.call("SendMessage", params, reqwest::Method::POST, "/message:send").await?)
    }

    pub async fn get_task(&self, id: &str) -> Result<Task, ClientError> {
        decode(self.call("GetTask", json!({"id": id}), reqwest::Method::GET, &format!("/tasks/{}", segment(id))).await?)
    }

    pub async fn cancel_task(&self, id: &str) -> Result<Task, ClientError> {
        let path = format!("/tasks/{}:cancel", segment(id));
        decode(self.call("CancelTask", json!({"id": id}), reqwest::Method::POST, &path).await?)
    }

    /// One page of the tasks of `context_id`, with their whole history.
    pub async fn list_tasks(&self, context_id: &str, page_token: &str) -> Result<ListTasksResponse, ClientError> {
        let req = ListTasksRequest {
            context_id: Some(context_id.to_string()),
            status: None,
            page_size: Some(100),
            page_token: Some(page_token.to_string()).filter(|t| !t.is_empty()),
            history_length: None,
            status_timestamp_after: None,
            include_artifacts: None,
            tenant: None,
        };
        let params = serde_json::to_value(&req).map_err(|e| ClientError::NotSent(e.to_string()))?;
        let query = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("contextId", context_id)
            .append_pair("pageSize", "100")
            .append_pair("pageToken", page_token)
            .finish();
        decode(self.call("ListTasks", params, reqwest::Method::GET, &format!("/tasks?{query}")).await?)
    }

    /// SendStreamingMessage: the agent's events until it closes the stream.
    pub async fn stream(
        &self,
        req: &SendMessageRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, ClientError>>, ClientError> {
        let params = serde_json::to_value(req).map_err(|e| ClientError::NotSent(e.to_string()))?;
        self.open_stream("SendStreamingMessage", params, "/message:stream").await
    }

    /// SubscribeToTask: the current task, then its events until it ends.
    pub async fn subscribe(
        &self,
        id: &str,
    ) -> Result<BoxStream<'static, Result<StreamResponse, ClientError>>, ClientError> {
        self.open_stream("SubscribeToTask", json!({"id": id}), &format!("/tasks/{}:subscribe", segment(id))).await
    }

    async fn open_stream(
        &self,
        method: &str,
        params: Value,
        path: &str,
    ) -> Result<BoxStream<'static, Result<StreamResponse, ClientError>>, ClientError> {
        let (req, jsonrpc) = match &self.binding {
            Binding::JsonRpc(url) => {
                (self.post(url, &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})), true)
            }
            Binding::Rest(base) => (self.post(&format!("{base}{path}"), &params), false),
            Binding::Grpc(client) => return grpc_stream(client.clone(), method, params).await,
        };
        let resp = req.header("accept", "text/event-stream").send().await.map_err(|e| transport(&e))?;
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        if !is_sse {
            // An immediate error comes as plain JSON.
            let status = resp.status();
            let body = resp.bytes().await.map_err(|e| ClientError::Lost(e.to_string()))?;
            return Err(refusal(status, &body));
        }
        let frames = sse_data(resp.bytes_stream());
        Ok(frames
            .map(move |frame| {
                let v: Value =
                    serde_json::from_str(&frame?).map_err(|e| ClientError::Lost(format!("bad event: {e}")))?;
                let payload = if jsonrpc {
                    match (v.get("result"), v.get("error")) {
                        (Some(r), _) => r.clone(),
                        (_, Some(e)) => return Err(remote(e)),
                        _ => return Err(ClientError::Lost("an event without result or error".into())),
                    }
                } else if let Some(e) = v.get("error") {
                    return Err(remote(e));
                } else {
                    v
                };
                decode(payload)
            })
            .boxed())
    }
}

/// The largest agent card read (a card is a few kilobytes).
pub const CARD_MAX_BYTES: usize = 1 << 20;

/// Whether the interface at `interface` (a URL, or `host:port` for gRPC) is on `host` (a host
/// name, any port; or `host:port`, that port only).
pub fn on_host(host: &str, interface: &str) -> bool {
    let Some(iface) = interface_url(interface) else { return false };
    let Ok(want) = url::Url::parse(&format!("grpc://{host}")) else { return false };
    let name = |u: &url::Url| u.host_str().map(str::to_ascii_lowercase);
    name(&want).is_some()
        && name(&want) == name(&iface)
        && want.port().is_none_or(|p| iface.port_or_known_default() == Some(p))
}

fn interface_url(interface: &str) -> Option<url::Url> {
    let parsed = if interface.contains("://") {
        url::Url::parse(interface)
    } else {
        url::Url::parse(&format!("grpc://{interface}"))
    };
    parsed.ok()
}

/// Whether the interface at `interface` (a URL, or `host:port` for gRPC) is on the host of
/// `card_url`: same host name, and for an HTTP(S) interface the same scheme and port.
pub fn same_host(card_url: &str, interface: &str) -> bool {
    let Ok(card) = url::Url::parse(card_url) else { return false };
    let Some(iface) = interface_url(interface) else { return false };
    let host = |u: &url::Url| u.host_str().map(str::to_ascii_lowercase);
    if host(&card).is_none() || host(&card) != host(&iface) {
        return false;
    }
    match iface.scheme() {
        "http" | "https" => {
            iface.scheme() == card.scheme() && iface.port_or_known_default() == card.port_or_known_default()
        }
        _ => true, // a gRPC interface listens on a port of its own
    }
}

/// A client for the gRPC interface at `url` (`host:port`, or a URL with a scheme), connected on
/// first use, with `timeout` per call.
fn grpc_client(
    url: &str,
    timeout: Duration,
) -> Result<a2a_pb::a2a_service_client::A2aServiceClient<tonic::transport::Channel>, ClientError> {
    let uri = if url.contains("://") { url.to_string() } else { format!("http://{url}") };
    let endpoint = tonic::transport::Endpoint::from_shared(uri)
        .map_err(|e| ClientError::NotSent(format!("gRPC interface `{url}`: {e}")))?
        .connect_timeout(Duration::from_secs(5))
        .timeout(timeout);
    Ok(a2a_pb::a2a_service_client::A2aServiceClient::new(endpoint.connect_lazy())
        .max_decoding_message_size(GRPC_MAX_MESSAGE)
        .max_encoding_message_size(GRPC_MAX_MESSAGE))
}

/// `message` with the A2A service parameters and the trace context as gRPC metadata.
fn grpc_request<T>(message: T) -> tonic::Request<T> {
    let mut req = tonic::Request::new(message);
    let meta = req.metadata_mut();
    meta.insert("a2a-version", tonic::metadata::MetadataValue::from_static("1.0"));
    if let Some(t) = switchyard_contract::trace::outgoing() {
        if let Ok(v) = t.header().parse() {
            meta.insert("traceparent", v);
        }
        if let Some(Ok(v)) = t.state.map(|s| s.parse()) {
            meta.insert("tracestate", v);
        }
    }
    req
}

/// `req` with the current span's W3C trace context (`traceparent`, `tracestate`) when traced:
/// the agent's work joins the trace under the gateway's call.
fn traced(req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    let Some(t) = switchyard_contract::trace::outgoing() else { return req };
    let req = req.header("traceparent", t.header());
    match t.state {
        Some(state) => req.header("tracestate", state),
        None => req,
    }
}

/// A gRPC failure, classified: the agent's A2A error (a status with `google.rpc.ErrorInfo`, or
/// a code that only a refusal carries), a connection that never opened (nothing sent), or a
/// lost answer.
fn grpc_error(status: &tonic::Status) -> ClientError {
    use tonic::Code;
    use tonic_types::StatusExt as _;
    let message = status.message().to_string();
    if let Some(info) = status.get_details_error_info() {
        let details = json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": info.reason,
            "domain": info.domain, "metadata": info.metadata}]);
        return ClientError::Remote { reason: info.reason, message, details };
    }
    match status.code() {
        Code::InvalidArgument
        | Code::NotFound
        | Code::FailedPrecondition
        | Code::Unimplemented
        | Code::PermissionDenied
        | Code::Unauthenticated
        | Code::AlreadyExists
        | Code::OutOfRange => {
            ClientError::Remote { reason: format!("{:?}", status.code()), message, details: Value::Null }
        }
        // tonic reports a connection that could not be opened as UNAVAILABLE with a transport
        // error as its source: then nothing was sent.
        Code::Unavailable if std::error::Error::source(status).is_some() => ClientError::NotSent(message),
        _ => ClientError::Lost(format!("gRPC {:?}: {message}", status.code())),
    }
}

/// The native request a binding-neutral `params` names.
fn native<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, ClientError> {
    serde_json::from_value(params).map_err(|e| ClientError::NotSent(format!("not an A2A request: {e}")))
}

fn json_of<T: serde::Serialize>(v: &T) -> Result<Value, ClientError> {
    serde_json::to_value(v).map_err(|e| ClientError::Lost(format!("malformed answer from the agent: {e}")))
}

/// One unary operation on the gRPC binding: the same JSON the other bindings carry, through the
/// official conversions (`a2a_pb::pbconv`), so one decoding serves all three.
async fn grpc_call(
    mut client: a2a_pb::a2a_service_client::A2aServiceClient<tonic::transport::Channel>,
    method: &str,
    params: Value,
) -> Result<Value, ClientError> {
    use a2a_pb::pbconv as conv;
    let err = |s: tonic::Status| grpc_error(&s);
    match method {
        "SendMessage" => {
            let req = grpc_request(conv::to_proto_send_message_request(&native(params)?));
            let answer = client.send_message(req).await.map_err(err)?.into_inner();
            let answer = conv::from_proto_send_message_response(&answer)
                .ok_or_else(|| ClientError::Lost("a SendMessage answer with neither task nor message".into()))?;
            json_of(&answer)
        }
        "GetTask" => {
            let req = grpc_request(conv::to_proto_get_task_request(&native(params)?));
            json_of(&conv::from_proto_task(&client.get_task(req).await.map_err(err)?.into_inner()))
        }
        "CancelTask" => {
            let req = grpc_request(conv::to_proto_cancel_task_request(&native(params)?));
            json_of(&conv::from_proto_task(&client.cancel_task(req).await.map_err(err)?.into_inner()))
        }
        "ListTasks" => {
            let req = grpc_request(conv::to_proto_list_tasks_request(&native(params)?));
            json_of(&conv::from_proto_list_tasks_response(&client.list_tasks(req).await.map_err(err)?.into_inner()))
        }
        other => Err(ClientError::NotSent(format!("`{other}` is not called over gRPC by this client"))),
    }
}

/// A streaming operation on the gRPC binding.
async fn grpc_stream(
    mut client: a2a_pb::a2a_service_client::A2aServiceClient<tonic::transport::Channel>,
    method: &str,
    params: Value,
) -> Result<BoxStream<'static, Result<StreamResponse, ClientError>>, ClientError> {
    use a2a_pb::pbconv as conv;
    let err = |s: tonic::Status| grpc_error(&s);
    let events = match method {
        "SendStreamingMessage" => {
            let req = grpc_request(conv::to_proto_send_message_request(&native(params)?));
            client.send_streaming_message(req).await.map_err(err)?.into_inner()
        }
        "SubscribeToTask" => {
            let req = grpc_request(conv::to_proto_subscribe_to_task_request(&native(params)?));
            client.subscribe_to_task(req).await.map_err(err)?.into_inner()
        }
        other => return Err(ClientError::NotSent(format!("`{other}` is not streamed over gRPC by this client"))),
    };
    Ok(events
        .map(|ev| {
            let ev = ev.map_err(|s| grpc_error(&s))?;
            conv::from_proto_stream_response(&ev).ok_or_else(|| ClientError::Lost("an empty stream event".into()))
        })
        .boxed())
}

/// `id` as one URL path segment (an agent's ids are opaque strings).
fn segment(id: &str) -> String {
    url::form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>().replace('+', "%20")
}

/// The largest server-sent event taken from an agent; a longer one ends the stream as lost.
const MAX_EVENT_BYTES: usize = 16 << 20;

/// The `data` of each server-sent event (multi-line data joined with `\n`), parsed as the HTML
/// standard's event stream: lines end at CR LF, LF or a lone CR (also split across reads); a
/// line starting with `:` is a comment; fields other than `data` are ignored, and a line without
/// a colon is a field with an empty value; a blank line ends an event (one without data is
/// skipped). At most [`MAX_EVENT_BYTES`] are buffered.
///
/// Written here rather than taken from a crate: `sse-stream` (already in the build through rmcp)
/// refuses a line without a colon and an unknown field, which the standard says to ignore, and
/// `eventsource-stream` would add a parser-combinator crate to the build for these few lines.
pub fn sse_data<S>(bytes: S) -> impl Stream<Item = Result<String, ClientError>> + Send + 'static
where
    S: Stream<Item = reqwest::Result<bytes::Bytes>> + Send + 'static,
{
    futures::stream::unfold((Box::pin(bytes), Events::default(), false), |(mut bytes, mut ev, done)| async move {
        if done {
            return None;
        }
        loop {
            if let Some(data) = ev.next_event() {
                return Some((Ok(data), (bytes, ev, false)));
            }
            match bytes.next().await {
                Some(Ok(chunk)) => {
                    ev.feed(&chunk);
                    if ev.buffered() > MAX_EVENT_BYTES {
                        let e = ClientError::Lost(format!("an event from the agent exceeds {MAX_EVENT_BYTES} bytes"));
                        return Some((Err(e), (bytes, Events::default(), true)));
                    }
                }
                Some(Err(e)) => return Some((Err(ClientError::Lost(e.to_string())), (bytes, ev, true))),
                // An event the stream ended in the middle of is dropped, as the standard says.
                None => return None,
            }
        }
    })
}

/// The event stream parser's state: bytes not yet cut into lines, and the event being read.
#[derive(Debug, Default)]
struct Events {
    unread: Vec<u8>,
    /// The last line ended with a CR at the end of a read: an LF starting the next is its end.
    after_cr: bool,
    data: String,
    has_data: bool,
}

impl Events {
    fn feed(&mut self, chunk: &[u8]) {
        let chunk = match (self.after_cr, chunk.first()) {
            (true, Some(b'\n')) => &chunk[1..],
            _ => chunk,
        };
        self.after_cr = false;
        self.unread.extend_from_slice(chunk);
    }

    fn buffered(&self) -> usize {
        self.unread.len() + self.data.len()
    }

    /// The data of the next whole event in what was fed, if there is one.
    fn next_event(&mut self) -> Option<String> {
        while let Some(end) = self.unread.iter().position(|b| *b == b'\n' || *b == b'\r') {
            let mut consumed = end + 1;
            if self.unread[end] == b'\r' {
                match self.unread.get(end + 1) {
                    Some(b'\n') => consumed += 1,
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            let line: Vec<u8> = self.unread.drain(..consumed).take(end).collect();
            if line.is_empty() {
                if std::mem::take(&mut self.has_data) {
                    return Some(std::mem::take(&mut self.data));
                }
                continue;
            }
            let line = String::from_utf8_lossy(&line);
            let (field, value) = match line.split_once(':') {
                Some(("", _)) => continue, // a comment
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_ref(), ""),
            };
            if field == "data" {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_is_followed_only_to_its_own_host() {
        let card = "http://agents.internal:8080/.well-known/agent-card.json";
        assert!(same_host(card, "http://agents.internal:8080/a2a"));
        assert!(same_host(card, "http://AGENTS.internal:8080/"));
        assert!(same_host(card, "agents.internal:50051"), "gRPC on a port of its own");
        assert!(!same_host(card, "http://169.254.169.254/latest/meta-data"));
        assert!(!same_host(card, "http://agents.internal:9090/a2a"), "another port is another service");
        assert!(!same_host(card, "https://agents.internal:8080/a2a"));
        assert!(!same_host(card, "metadata.google.internal:80"));
        assert!(!same_host("not a url", "http://x/"));
    }

    #[test]
    fn a_card_is_followed_to_an_interface_host_the_operator_names() {
        assert!(on_host("api.example.com", "https://api.example.com/a2a"));
        assert!(on_host("API.example.com:8443", "https://api.example.com:8443/a2a"));
        assert!(!on_host("api.example.com:8443", "https://api.example.com/a2a"), "that port only");
        assert!(on_host("api.example.com:50051", "api.example.com:50051"), "gRPC");
        assert!(!on_host("api.example.com", "https://api.example.com.evil.test/a2a"));
        assert!(!on_host("api.example.com", "http://169.254.169.254/"));
    }

    /// Before: redirects were followed, the body was read whole, and an interface anywhere
    /// was bound to.
    #[tokio::test]
    async fn discovery_follows_no_redirect_reads_no_huge_card_and_binds_no_foreign_interface() {
        use axum::routing::get;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let card = |url: String| {
            json!({"name": "a", "description": "a", "version": "1", "capabilities": {},
                "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": [],
                "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]})
        };
        let (own, foreign) = (card(format!("{base}/rpc")), card("http://169.254.169.254/rpc".into()));
        let port = base.rsplit(':').next().unwrap_or_default().to_string();
        let named = card(format!("http://localhost:{port}/rpc"));
        let app = axum::Router::new()
            .route("/own", get(move || async move { axum::Json(own) }))
            .route("/named", get(move || async move { axum::Json(named) }))
            .route("/foreign", get(move || async move { axum::Json(foreign) }))
            .route("/moved", get(|| async { axum::response::Redirect::temporary("/own") }))
            .route("/huge", get(|| async { "x".repeat(CARD_MAX_BYTES + 1) }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let t = Duration::from_secs(5);
        let none: &[String] = &[];
        assert!(A2aClient::discover(&format!("{base}/own"), none, t).await.is_ok());
        let err = |r: Result<A2aClient, ClientError>| r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err(A2aClient::discover(&format!("{base}/foreign"), none, t).await).contains("not on the card's host"));
        assert!(
            err(A2aClient::discover(&format!("{base}/moved"), none, t).await).contains("redirects are not followed")
        );
        assert!(err(A2aClient::discover(&format!("{base}/huge"), none, t).await).contains("larger than"));
        // Another host the operator named (`interface_hosts`) is followed; unnamed, it is not.
        assert!(err(A2aClient::discover(&format!("{base}/named"), none, t).await).contains("not on the card's host"));
        assert!(A2aClient::discover(&format!("{base}/named"), &["localhost".to_string()], t).await.is_ok());
        let foreign_named = A2aClient::discover(&format!("{base}/foreign"), &["localhost".to_string()], t).await;
        assert!(err(foreign_named).contains("not on the card's host"));
    }

    #[tokio::test]
    async fn sse_frames_are_split_and_comments_skipped() {
        let snowman = "\u{2603}".as_bytes();
        let chunks: Vec<reqwest::Result<bytes::Bytes>> = vec![
            Ok(bytes::Bytes::from(": keep-alive\n\ndata: {\"a\":")),
            Ok(bytes::Bytes::from("1}\r")),
            Ok(bytes::Bytes::from("\n\r\ndata: x\ndata: ")),
            Ok(bytes::Bytes::copy_from_slice(&snowman[..1])),
            Ok(bytes::Bytes::copy_from_slice(&snowman[1..])),
            Ok(bytes::Bytes::from("\n\n")),
        ];
        let got: Vec<_> = sse_data(futures::stream::iter(chunks)).collect().await;
        assert_eq!(got, vec![Ok("{\"a\":1}".to_string()), Ok("x\n\u{2603}".to_string())]);
    }

    #[tokio::test]
    async fn lone_cr_line_endings_end_lines_even_across_reads() {
        let chunks: Vec<reqwest::Result<bytes::Bytes>> = vec![
            Ok(bytes::Bytes::from("data: a\rdata: b\r")),
            Ok(bytes::Bytes::from("\ndata: c\r\r")),
            Ok(bytes::Bytes::from("data: d\r\n\r\nevent: x\rid: 7\rretry: 5\rdata\rnonsense\r\r")),
            Ok(bytes::Bytes::from("data: cut off")),
        ];
        let got: Vec<_> = sse_data(futures::stream::iter(chunks)).collect().await;
        // "a", "b" (its CR, then an LF in the next read: one line end), "c"; a blank line ends
        // the event. Unknown fields and a line without a colon are ignored but for `data` (an
        // empty line of data); the last event never ended.
        assert_eq!(got, vec![Ok("a\nb\nc".to_string()), Ok("d".to_string()), Ok(String::new())]);
    }

    #[tokio::test]
    async fn an_oversized_event_ends_the_stream_as_lost() {
        let big = vec![b'x'; MAX_EVENT_BYTES + 1];
        let chunks: Vec<reqwest::Result<bytes::Bytes>> =
            vec![Ok(bytes::Bytes::from("data: ")), Ok(bytes::Bytes::from(big)), Ok(bytes::Bytes::from("\n\n"))];
        let got: Vec<_> = sse_data(futures::stream::iter(chunks)).collect().await;
        assert!(matches!(got.as_slice(), [Err(ClientError::Lost(_))]), "{got:?}");
    }

    /// An agent address behind which a proxy answers `status` with `body` to everything.
    async fn proxy_answering(status: u16, body: &'static str) -> A2aClient {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let code = axum::http::StatusCode::from_u16(status).unwrap();
        let app = axum::Router::new().fallback(move || async move { (code, body) });
        tokio::spawn(async move { axum::serve(listener, app).await });
        A2aClient {
            http: reqwest::Client::new(),
            binding: Binding::Rest(format!("http://{addr}")),
            streaming: false,
            card: Arc::new(
                serde_json::from_value(json!({"name": "t", "description": "", "version": "1",
                    "supportedInterfaces": [], "capabilities": {}, "defaultInputModes": [],
                    "defaultOutputModes": [], "skills": []}))
                .unwrap(),
            ),
        }
    }

    #[tokio::test]
    async fn only_a_structured_a2a_error_is_a_refusal() {
        let send = SendMessageRequest {
            message: a2a::Message::new(a2a::Role::User, vec![a2a::Part::text("hi")]),
            configuration: None,
            metadata: None,
            tenant: None,
        };
        for (status, body) in [(502, "<html>Bad Gateway</html>"), (504, ""), (429, "slow down"), (503, "{}")] {
            let client = proxy_answering(status, body).await;
            let got = client.send(&send).await;
            assert!(matches!(got, Err(ClientError::Lost(_))), "HTTP {status} {body:?}: {got:?}");
            let streamed = client.stream(&send).await.map(|_| ());
            assert!(matches!(streamed, Err(ClientError::Lost(_))), "stream, HTTP {status}: {streamed:?}");
        }
        let aip193 = r#"{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"bad part","details":[{"reason":"INVALID_PARAMS"}]}}"#;
        let got = proxy_answering(400, aip193).await.send(&send).await;
        assert!(matches!(got, Err(ClientError::Remote { ref reason, .. }) if reason == "INVALID_PARAMS"), "{got:?}");
    }

    #[test]
    fn grpc_failures_are_refusals_only_when_the_agent_refused() {
        use tonic_types::{ErrorDetails, StatusExt as _};
        let info =
            ErrorDetails::with_error_info("TASK_NOT_CANCELABLE", "a2a-protocol.org", std::collections::HashMap::new());
        let refused = tonic::Status::with_error_details(tonic::Code::FailedPrecondition, "no", info);
        assert!(matches!(grpc_error(&refused), ClientError::Remote { reason, .. } if reason == "TASK_NOT_CANCELABLE"));
        let not_found = tonic::Status::not_found("no such task");
        assert!(matches!(grpc_error(&not_found), ClientError::Remote { reason, .. } if reason == "NotFound"));
        for lost in [
            tonic::Status::internal("boom"),
            tonic::Status::unavailable("reset"),
            tonic::Status::deadline_exceeded("slow"),
        ] {
            assert!(matches!(grpc_error(&lost), ClientError::Lost(_)), "{lost:?}");
        }
    }

    #[tokio::test]
    async fn a_grpc_agent_that_is_not_listening_was_sent_nothing() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").map(|l| l.local_addr().map(|a| a.port()));
        let port = port.ok().and_then(Result::ok).unwrap_or(9);
        let client = grpc_client(&format!("127.0.0.1:{port}"), Duration::from_secs(2)).unwrap();
        let r = grpc_call(client, "GetTask", json!({"id": "t"})).await;
        assert!(matches!(r, Err(ClientError::NotSent(_))), "{r:?}");
    }

    #[test]
    fn remote_errors_carry_the_reason() {
        let e = remote(&json!({"code": -32001, "message": "nope", "data": [{"reason": "TASK_NOT_FOUND"}]}));
        assert!(matches!(e, ClientError::Remote { ref reason, .. } if reason == "TASK_NOT_FOUND"));
    }
}
