//! `switchyard connect`: a client that launches only stdio servers reaches a remote MCP server
//! (a Switchyard gateway's `/mcp`, or any Streamable HTTP server) through this process. Each
//! newline-delimited message from stdin is POSTed as it is (never re-typed, so every field the
//! two sides exchange passes unchanged), with the headers Streamable HTTP asks for
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Session-Id`, the bearer token); each
//! message of the answer (JSON, or the request's SSE stream) goes to stdout. A legacy session's
//! server-initiated messages come on a GET stream opened after `initialize`. Requests run
//! concurrently (a long call does not hold up the next one); `initialize`, notifications and the
//! client's answers go in order. A line that is not JSON is answered with `-32700`, one that is
//! no JSON-RPC message with `-32600`, and a request the server cannot be reached for with an
//! error naming the cause; nothing of them is sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use base64::Engine as _;
use futures::StreamExt as _;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::Mutex;
use tokio::task::{AbortHandle, JoinSet};

use crate::oauth::OAuthHttp;

const SESSION: &str = "mcp-session-id";
const VERSION: &str = "mcp-protocol-version";
/// How long, once stdin closed, the answers to requests in flight are still waited for.
const DRAIN: Duration = Duration::from_secs(10);
/// Where a 2026-07-28 request names its protocol version.
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// How requests to the remote are authorized.
pub enum Credentials {
    None,
    /// A bearer token given on the command line or in the environment.
    Bearer(String),
    /// Tokens from the authorization code flow, refreshed as they expire.
    OAuth(OAuthHttp),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::None => "Credentials::None",
            Self::Bearer(_) => "Credentials::Bearer(<redacted>)",
            Self::OAuth(_) => "Credentials::OAuth(<redacted>)",
        })
    }
}

impl Credentials {
    async fn header(&self) -> Result<Option<HeaderValue>, String> {
        let token = match self {
            Self::None => return Ok(None),
            Self::Bearer(t) => t.clone(),
            Self::OAuth(auth) => {
                let manager = auth.auth_manager.lock().await;
                manager.get_access_token().await.map_err(|e| format!("the stored authorization cannot be used: {e}"))?
            }
        };
        let mut value =
            HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| "the token is not a valid header value")?;
        value.set_sensitive(true);
        Ok(Some(value))
    }
}

/// One relay: the remote, its session, and the stdout the answers go to.
struct Relay<W> {
    url: String,
    http: reqwest::Client,
    credentials: Credentials,
    /// The legacy session (`Mcp-Session-Id`) and its negotiated protocol version.
    session: StdMutex<(Option<String>, Option<String>)>,
    out: Mutex<W>,
    /// Requests in flight, by id, so that a cancellation drops the answer's stream.
    in_flight: StdMutex<HashMap<String, AbortHandle>>,
}

/// Relays stdin and stdout to `url` until the client closes stdin; then ends the session.
pub async fn serve(url: String, credentials: Credentials) -> Result<(), String> {
    serve_on(url, credentials, tokio::io::stdin(), tokio::io::stdout()).await
}

async fn serve_on<R, W>(url: String, credentials: Credentials, input: R, output: W) -> Result<(), String>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let http = reqwest::Client::builder().tcp_nodelay(true).build().map_err(|e| format!("HTTP client: {e}"))?;
    let relay = Arc::new(Relay {
        url,
        http,
        credentials,
        session: StdMutex::new((None, None)),
        out: Mutex::new(output),
        in_flight: StdMutex::new(HashMap::new()),
    });
    let mut lines = BufReader::new(input).lines();
    let mut tasks = JoinSet::new();
    while let Some(line) = lines.next_line().await.map_err(|e| format!("stdin: {e}"))? {
        while tasks.try_join_next().is_some() {}
        relay.lock_in_flight().retain(|_, task| !task.is_finished());
        if line.trim().is_empty() {
            continue;
        }
        let message = match message_of(&line) {
            Ok(m) => m,
            Err(refusal) => {
                relay.write(&refusal).await;
                continue;
            }
        };
        let method = message.get("method").and_then(Value::as_str).unwrap_or_default().to_string();
        let id = message.get("id").filter(|_| !method.is_empty()).map(Value::to_string);
        if method == "notifications/cancelled"
            && let Some(of) = message.pointer("/params/requestId").map(Value::to_string)
            && let Some(task) = relay.lock_in_flight().remove(&of)
        {
            task.abort();
        }
        match id {
            // A request other than `initialize` runs on its own; the rest in order.
            Some(id) if method != "initialize" => {
                let (r, key) = (relay.clone(), id.clone());
                let handle = tasks.spawn(async move {
                    r.forward(message).await;
                    r.lock_in_flight().remove(&key);
                });
                let mut in_flight = relay.lock_in_flight();
                if !handle.is_finished() {
                    in_flight.insert(id, handle);
                }
            }
            _ => relay.forward(message).await,
        }
    }
    // The client is done sending: the answers still coming are written (a piped request gets
    // its answer), for a bounded time.
    let answered = async { while tasks.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(DRAIN, answered).await;
    tasks.abort_all();
    relay.end().await;
    Ok(())
}

/// A line as a JSON-RPC message, or the error that answers it.
fn message_of(line: &str) -> Result<Value, Value> {
    let v: Value = serde_json::from_str(line).map_err(
        |e| json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("Parse error: {e}")}}),
    )?;
    let is_message = v.get("jsonrpc") == Some(&json!("2.0"))
        && (v.get("method").is_some_and(Value::is_string) || v.get("result").is_some() || v.get("error").is_some());
    if is_message {
        return Ok(v);
    }
    let id = v.get("id").filter(|id| id.is_string() || id.is_number()).cloned().unwrap_or(Value::Null);
    Err(
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": "Invalid Request: not a JSON-RPC message"}}),
    )
}

/// `Mcp-Name`'s source for the methods that have one.
fn name_of(method: &str, params: Option<&Value>) -> Option<String> {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    params?.get(key)?.as_str().map(str::to_string)
}

/// A header value as Streamable HTTP carries it: as it is when it can be, else
/// `=?base64?<base64 of the UTF-8>?=`.
fn header_value(s: &str) -> Option<HeaderValue> {
    let plain = !s.starts_with("=?base64?")
        && !s.starts_with([' ', '\t'])
        && !s.ends_with([' ', '\t'])
        && s.bytes().all(|b| (0x20..0x7f).contains(&b));
    let text = if plain {
        s.to_string()
    } else {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(s.as_bytes()))
    };
    HeaderValue::from_str(&text).ok()
}

impl<W: AsyncWrite + Send + Unpin + 'static> Relay<W> {
    fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<String, AbortHandle>> {
        self.in_flight.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn session(&self) -> (Option<String>, Option<String>) {
        self.session.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    async fn write(&self, message: &Value) {
        let Ok(mut line) = serde_json::to_vec(message) else { return };
        line.push(b'\n');
        let mut out = self.out.lock().await;
        if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
            tracing::warn!("stdout is closed: the client is gone");
        }
    }

    /// The headers every request to the remote carries.
    async fn headers(&self, message: Option<&Value>) -> Result<HeaderMap, String> {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        if let Some(auth) = self.credentials.header().await? {
            h.insert(AUTHORIZATION, auth);
        }
        let (session, negotiated) = self.session();
        if let Some(s) = session.as_deref().and_then(|s| HeaderValue::from_str(s).ok()) {
            h.insert(SESSION, s);
        }
        let Some(m) = message else {
            if let Some(v) = negotiated.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
                h.insert(VERSION, v);
            }
            return Ok(h);
        };
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let own = m.pointer("/params/_meta").and_then(|meta| meta.get(META_VERSION)).and_then(Value::as_str);
        if let Some(v) = own.map(str::to_string).or(negotiated).and_then(|v| HeaderValue::from_str(&v).ok()) {
            h.insert(VERSION, v);
        }
        if let Some(method) = m.get("method").and_then(Value::as_str) {
            if let Some(v) = header_value(method) {
                h.insert("mcp-method", v);
            }
            if let Some(v) = name_of(method, m.get("params")).as_deref().and_then(header_value) {
                h.insert("mcp-name", v);
            }
        }
        Ok(h)
    }

    /// Sends one message; writes what the remote answers, or, for a request, an error saying why
    /// there is no answer.
    async fn forward(self: &Arc<Self>, message: Value) {
        let id = message.get("id").cloned().filter(|_| message.get("method").is_some());
        let method = message.get("method").and_then(Value::as_str).unwrap_or_default().to_string();
        if let Err(why) = self.exchange(&message, &method).await {
            tracing::warn!(method, "{why}");
            if let Some(id) = id {
                self.write(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": why}})).await;
            }
        }
    }

    async fn exchange(self: &Arc<Self>, message: &Value, method: &str) -> Result<(), String> {
        let headers = self.headers(Some(message)).await?;
        let body = serde_json::to_vec(message).map_err(|e| e.to_string())?;
        let response = self
            .http
            .post(&self.url)
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| format!("cannot reach {}: {e}", self.url))?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED {
            let hint = match self.credentials {
                Credentials::None => {
                    "it asks for authorization: run `switchyard connect <url> --login` in a terminal \
                                      once, or pass a token with --token"
                }
                _ => "it refused the credentials: run `switchyard connect <url> --login` again, or pass another token",
            };
            return Err(format!("{} answered 401 Unauthorized; {hint}", self.url));
        }
        if method == "initialize"
            && let Some(s) = response.headers().get(SESSION).and_then(|v| v.to_str().ok())
        {
            self.session.lock().unwrap_or_else(std::sync::PoisonError::into_inner).0 = Some(s.to_string());
        }
        let sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if status == reqwest::StatusCode::ACCEPTED {
            return Ok(());
        }
        if sse && status.is_success() {
            return self.relay_stream(response, method == "initialize").await;
        }
        let bytes = response.bytes().await.map_err(|e| format!("reading the answer of {}: {e}", self.url))?;
        match serde_json::from_slice::<Value>(&bytes) {
            // A JSON-RPC answer, whatever the status (a 400 carries its error this way).
            Ok(v) if v.get("jsonrpc").is_some() => {
                self.seen(&v, method == "initialize");
                self.write(&v).await;
                Ok(())
            }
            _ if status.is_success() => Ok(()),
            _ => Err(format!(
                "{} answered {status}: {}",
                self.url,
                String::from_utf8_lossy(&bytes).chars().take(300).collect::<String>()
            )),
        }
    }

    /// Writes each message of an SSE answer as it comes.
    async fn relay_stream(self: &Arc<Self>, response: reqwest::Response, initialize: bool) -> Result<(), String> {
        let mut events = sse_stream::SseStream::from_byte_stream(response.bytes_stream());
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| format!("the answer's stream from {} broke: {e}", self.url))?;
            let Some(v) = event.data.as_deref().and_then(|d| serde_json::from_str::<Value>(d).ok()) else { continue };
            self.seen(&v, initialize);
            self.write(&v).await;
        }
        Ok(())
    }

    /// Notes the protocol version `initialize` agreed on, and opens the session's GET stream.
    fn seen(self: &Arc<Self>, answer: &Value, initialize: bool) {
        let Some(version) = answer.pointer("/result/protocolVersion").and_then(Value::as_str).filter(|_| initialize)
        else {
            return;
        };
        let mut session = self.session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        session.1 = Some(version.to_string());
        if session.0.is_some() {
            tokio::spawn(self.clone().listen());
        }
    }

    /// The legacy session's stream of server-initiated messages, opened again when it ends
    /// (the server may close it at any time), until the server says it has none (405) or the
    /// session is gone (404).
    async fn listen(self: Arc<Self>) {
        let mut pause = Duration::from_millis(200);
        loop {
            let Ok(headers) = self.headers(None).await else { return };
            let headers = {
                let mut h = headers;
                h.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
                h
            };
            match self.http.get(&self.url).headers(headers).send().await {
                Ok(r) if r.status().is_success() => {
                    pause = Duration::from_millis(200);
                    let _ = self.relay_stream(r, false).await;
                }
                Ok(r) if matches!(r.status().as_u16(), 404 | 405) => return,
                Ok(_) | Err(_) => pause = (pause * 2).min(Duration::from_secs(10)),
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// Ends the legacy session, if there is one.
    async fn end(&self) {
        if self.session().0.is_none() {
            return;
        }
        if let Ok(headers) = self.headers(None).await {
            let _ = self.http.delete(&self.url).headers(headers).timeout(Duration::from_secs(2)).send().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_that_are_no_message_are_answered() {
        assert_eq!(message_of("{").err().map(|e| e["error"]["code"].clone()), Some(json!(-32700)));
        let refused = message_of(r#"{"id": 7, "hello": 1}"#).err().unwrap_or_default();
        assert_eq!((refused["id"].clone(), refused["error"]["code"].clone()), (json!(7), json!(-32600)));
        assert!(message_of(r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#).is_ok());
        assert!(message_of(r#"{"jsonrpc": "2.0", "id": 1, "result": {}}"#).is_ok());
        assert!(message_of(r#"{"jsonrpc": "2.0", "id": 1}"#).is_err());
    }

    #[test]
    fn headers_name_the_call_and_encode_what_cannot_travel_plain() {
        let call = json!({"name": "echo", "arguments": {}});
        assert_eq!(name_of("tools/call", Some(&call)).as_deref(), Some("echo"));
        assert_eq!(name_of("resources/read", Some(&json!({"uri": "file:///a"}))).as_deref(), Some("file:///a"));
        assert_eq!(name_of("tasks/get", Some(&json!({"taskId": "t1"}))).as_deref(), Some("t1"));
        assert_eq!(name_of("tools/list", Some(&call)), None);
        assert_eq!(header_value("echo").map(|v| v.to_str().map(str::to_string).ok()), Some(Some("echo".into())));
        let encoded = header_value("café").and_then(|v| v.to_str().ok().map(str::to_string)).unwrap_or_default();
        assert_eq!(encoded, format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode("café")));
        assert!(header_value(" x").is_some_and(|v| v.to_str().is_ok_and(|s| s.starts_with("=?base64?"))));
    }
}
