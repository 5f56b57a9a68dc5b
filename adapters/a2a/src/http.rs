//! The HTTP bindings: JSON-RPC (one POST URL per agent) and HTTP+JSON (REST paths, with the
//! `/{tenant}/…` forms), both with SSE streaming, plus the agent cards. Each decodes into an
//! [`Operation`] and encodes the [`Reply`] in its own framing and error profile.

use std::convert::Infallible;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use futures::StreamExt;
use serde_json::{Map, Value, json};
use switchyard_contract::{Grant, Principal};

use crate::error::{A2aError, Kind, Profile};
use crate::face::{A2aFace, AgentEntry, Caller, Operation, Reply};
use crate::origin::{Allowlist, json_content};

#[derive(Clone)]
struct HttpState {
    face: A2aFace,
    loaded: chrono::DateTime<chrono::Utc>,
    allow: std::sync::Arc<Allowlist>,
}

impl HttpState {
    fn new(face: A2aFace) -> Self {
        let allow = std::sync::Arc::new(Allowlist::new(&face.config));
        Self { face, loaded: chrono::Utc::now(), allow }
    }
}

/// The agent cards (public: no authentication).
pub fn cards(face: A2aFace) -> Router {
    let state = HttpState::new(face);
    Router::new()
        .route("/.well-known/agent-card.json", get(root_card))
        .route("/a2a/{agent}/.well-known/agent-card.json", get(agent_card))
        .with_state(state)
}

/// The JSON-RPC and HTTP+JSON endpoints of every agent (to be put behind authentication).
pub fn api(face: A2aFace) -> Router {
    let limit = face.config.max_request_body_bytes;
    let state = HttpState::new(face);
    Router::new()
        .route("/a2a/{agent}", post(jsonrpc))
        .route("/a2a/{agent}/", post(jsonrpc))
        .route("/a2a/{agent}/rest/{*path}", any(rest))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

fn host(headers: &HeaderMap) -> Option<String> {
    headers.get(header::HOST).and_then(|h| h.to_str().ok()).map(str::to_string)
}

async fn root_card(State(st): State<HttpState>, headers: HeaderMap) -> Response {
    match st.face.default_agent() {
        Some(agent) => serve_card(&st, &agent, &headers).await,
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn agent_card(State(st): State<HttpState>, Path(name): Path<String>, headers: HeaderMap) -> Response {
    match st.face.agent(&name) {
        Some(agent) => serve_card(&st, &agent, &headers).await,
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn serve_card(st: &HttpState, agent: &AgentEntry, headers: &HeaderMap) -> Response {
    let face = &st.face;
    match face.card(&agent.config, host(headers).as_deref(), false).await {
        Ok(card) => {
            let vary_host = face.config.public_url.is_none();
            crate::card::respond(&card, face.config.card_max_age_s, st.loaded, vary_host, headers)
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.message).into_response(),
    }
}

fn caller(
    binding: &'static str,
    principal: Option<Extension<Principal>>,
    grant: Option<Extension<Grant>>,
    headers: &HeaderMap,
    query: &[(String, String)],
) -> Result<Caller, A2aError> {
    let Some(Extension(principal)) = principal else {
        return Err(A2aError::new(Kind::Unauthenticated, "authentication required"));
    };
    let version = version_of(headers, query);
    let extensions = Caller::parse_extensions(headers.get("a2a-extensions").and_then(|v| v.to_str().ok()));
    let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok());
    let trace = header("traceparent").and_then(|t| switchyard_contract::TraceParent::parse(t, header("tracestate")));
    let tenant_wide = grant.is_some_and(|Extension(g)| g.tenant_wide());
    Ok(Caller { principal, version, extensions, path_tenant: None, host: host(headers), binding, trace, tenant_wide })
}

/// The version the request names (`A2A-Version` header, else query parameter).
fn version_of(headers: &HeaderMap, query: &[(String, String)]) -> Option<String> {
    headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| query.iter().find(|(k, _)| k.eq_ignore_ascii_case("A2A-Version")).map(|(_, v)| v.clone()))
}

/// A body that could not be read: over `a2a.max_request_body_bytes` (413), or broken.
fn body_error(r: &BytesRejection) -> A2aError {
    if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
        A2aError::new(Kind::PayloadTooLarge, "the request body exceeds a2a.max_request_body_bytes")
    } else {
        A2aError::new(Kind::InvalidRequest, r.body_text())
    }
}

/// The JSON of a non-streaming reply.
fn reply_json(reply: Reply) -> Result<Value, A2aError> {
    let v = match reply {
        Reply::Send(r) => serde_json::to_value(r),
        Reply::Task(t) => serde_json::to_value(t),
        Reply::Tasks(l) => serde_json::to_value(l),
        Reply::PushConfig(c) => serde_json::to_value(c),
        Reply::PushConfigs(c) => {
            // `configs` is required on the wire even when empty.
            let mut v = serde_json::to_value(c);
            if let Ok(Value::Object(m)) = &mut v {
                m.entry("configs").or_insert_with(|| json!([]));
            }
            v
        }
        Reply::Empty => Ok(json!({})),
        Reply::Card(c) => Ok(c),
        Reply::Stream(_) => return Err(A2aError::internal("a stream where a single reply was expected")),
    };
    v.map_err(|e| A2aError::internal(e.to_string()))
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC
// ---------------------------------------------------------------------------------------------

fn rpc_error(id: &Value, e: &A2aError) -> Response {
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "error": e.jsonrpc()})).into_response()
}

/// The agent `name` names, only if the request path spells it literally: the authentication
/// layer chose the required scope from the raw path, so an encoded name (`%74ck`) must not
/// reach an agent under another scope.
fn agent_at(face: &A2aFace, name: &str, uri: &axum::http::Uri) -> Option<std::sync::Arc<AgentEntry>> {
    let literal = uri
        .path()
        .strip_prefix("/a2a/")
        .is_some_and(|rest| rest.strip_prefix(name).is_some_and(|after| after.is_empty() || after.starts_with('/')));
    if literal { face.agent(name) } else { None }
}

/// Parses a JSON-RPC request body into its id and operation; an error comes with the id to
/// answer it under (`null` when the request has none usable).
pub fn decode_jsonrpc(body: &[u8]) -> Result<(Value, Operation), Box<(Value, A2aError)>> {
    let fail = |id: Value, e: A2aError| Box::new((id, e));
    let req: Value = serde_json::from_slice(body)
        .map_err(|e| fail(Value::Null, A2aError::new(Kind::ParseError, format!("invalid JSON: {e}"))))?;
    let id = req.get("id").cloned().unwrap_or(Value::Null);
    let id = if matches!(id, Value::String(_) | Value::Number(_) | Value::Null) { id } else { Value::Null };
    let method = req.get("method").and_then(Value::as_str);
    let (Some(method), Some("2.0")) = (method, req.get("jsonrpc").and_then(Value::as_str)) else {
        return Err(fail(id, A2aError::new(Kind::InvalidRequest, "not a JSON-RPC 2.0 request")));
    };
    match Operation::decode(method, req.get("params").cloned().unwrap_or(Value::Null)) {
        Ok(Some(op)) => Ok((id, op)),
        Ok(None) => Err(fail(id, A2aError::new(Kind::MethodNotFound, format!("method `{method}` not found")))),
        Err(e) => Err(fail(id, e)),
    }
}

async fn jsonrpc(
    State(st): State<HttpState>,
    Path(agent): Path<String>,
    principal: Option<Extension<Principal>>,
    grant: Option<Extension<Grant>>,
    Query(query): Query<Vec<(String, String)>>,
    request: axum::http::request::Parts,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (uri, headers) = (&request.uri, &request.headers);
    let body = match body {
        Ok(b) => b,
        Err(r) => {
            let e = body_error(&r);
            return (r.status(), rpc_error(&Value::Null, &e)).into_response();
        }
    };
    if let Err(e) = st.allow.check(headers, uri) {
        return (StatusCode::FORBIDDEN, rpc_error(&Value::Null, &e)).into_response();
    }
    let Some(agent) = agent_at(&st.face, &agent, uri) else {
        return rpc_error(&Value::Null, &A2aError::new(Kind::MethodNotFound, "no such agent"));
    };
    if !json_content(headers) {
        let e = A2aError::new(Kind::ContentTypeNotSupported, "JSON-RPC requests must be application/json");
        return rpc_error(&Value::Null, &e);
    }
    let (id, op) = match decode_jsonrpc(&body) {
        Ok(decoded) => decoded,
        Err(bad) => {
            let (id, e) = *bad;
            // A method this version does not have, from a client of another version (no header
            // means 0.3, whose methods are `message/send`, `tasks/get`…): the version is the
            // error.
            let e = if e.kind == Kind::MethodNotFound {
                crate::face::check_version(version_of(headers, &query).as_deref()).err().unwrap_or(e)
            } else {
                e
            };
            return rpc_error(&id, &e);
        }
    };
    let who = match caller("jsonrpc", principal, grant, headers, &query) {
        Ok(w) => w,
        Err(e) => return rpc_error(&id, &e),
    };
    match st.face.handle(&agent, &who, op).await {
        Ok(Reply::Stream(stream)) => {
            let events = stream.map(move |item| {
                let frame = match item {
                    Ok(ev) => json!({"jsonrpc": "2.0", "id": id, "result": ev}),
                    Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e.jsonrpc()}),
                };
                Ok::<_, Infallible>(Event::default().data(frame.to_string()))
            });
            Sse::new(events).keep_alive(KeepAlive::default()).into_response()
        }
        Ok(reply) => match reply_json(reply) {
            Ok(result) => axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response(),
            Err(e) => rpc_error(&id, &e),
        },
        Err(e) => rpc_error(&id, &e),
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP+JSON
// ---------------------------------------------------------------------------------------------

fn content_type(profile: Profile) -> &'static str {
    match profile {
        Profile::Spec => "application/a2a+json",
        Profile::Tck => "application/json",
    }
}

fn rest_json(profile: Profile, status: StatusCode, body: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, content_type(profile))], body.to_string()).into_response()
}

fn rest_error(profile: Profile, e: &A2aError) -> Response {
    let status = StatusCode::from_u16(e.kind.http_status(profile)).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    rest_json(profile, status, &e.http_body(profile))
}

const TOP: [&str; 4] = ["message:send", "message:stream", "tasks", "extendedAgentCard"];

fn int(query: &[(String, String)], key: &str) -> Result<Option<i64>, A2aError> {
    match query.iter().find(|(k, _)| k == key) {
        None => Ok(None),
        Some((_, v)) => v.parse().map(Some).map_err(|_| A2aError::invalid_params(format!("{key} must be an integer"))),
    }
}

fn text<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// The ListTasks request from query parameters (typed: numbers and booleans are checked).
fn list_request(query: &[(String, String)]) -> Result<Value, A2aError> {
    let mut m = Map::new();
    for key in ["contextId", "status", "pageToken", "statusTimestampAfter"] {
        if let Some(v) = text(query, key) {
            m.insert(key.into(), json!(v));
        }
    }
    for key in ["pageSize", "historyLength"] {
        if let Some(n) = int(query, key)? {
            m.insert(key.into(), json!(n));
        }
    }
    if let Some(v) = text(query, "includeArtifacts") {
        let b = match v {
            "true" | "1" => true,
            "false" | "0" => false,
            _ => return Err(A2aError::invalid_params("includeArtifacts must be true or false")),
        };
        m.insert("includeArtifacts".into(), json!(b));
    }
    Ok(Value::Object(m))
}

/// Parses an HTTP+JSON request (`path` below `/a2a/<agent>/rest/`, the query pairs, the body
/// and whether its content type is JSON) into the path's tenant, if any, and the operation.
pub fn decode_rest_request(
    method: &Method,
    path: &str,
    query: &[(String, String)],
    body: &[u8],
    json_body: bool,
) -> Result<(Option<String>, Operation), A2aError> {
    let all: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (tenant, segs) = match all.split_first() {
        Some((first, rest)) if !TOP.contains(first) => (Some((*first).to_string()), rest),
        _ => (None, &all[..]),
    };
    let body = if body.is_empty() {
        json!({})
    } else {
        if !json_body {
            return Err(A2aError::new(Kind::ContentTypeNotSupported, "request bodies must be application/json"));
        }
        match serde_json::from_slice::<Value>(body) {
            Ok(v) if v.is_object() => v,
            Ok(_) => return Err(A2aError::invalid_params("the body must be a JSON object")),
            Err(e) => return Err(A2aError::new(Kind::ParseError, format!("invalid JSON: {e}"))),
        }
    };
    Ok((tenant, decode_rest(method, segs, query, &body)?))
}

fn decode_rest(
    method: &Method,
    segs: &[&str],
    query: &[(String, String)],
    body: &Value,
) -> Result<Operation, A2aError> {
    let with = |mut v: Value, pairs: &[(&str, Value)]| -> Value {
        if let Value::Object(m) = &mut v {
            for (k, val) in pairs {
                m.insert((*k).to_string(), val.clone());
            }
        }
        v
    };
    let history = int(query, "historyLength")?;
    let de = |name: &str, v: Value| -> Result<Operation, A2aError> {
        Operation::decode(name, v)?.ok_or_else(|| A2aError::new(Kind::MethodNotFound, "no such operation"))
    };
    let not_found = || A2aError::new(Kind::MethodNotFound, format!("no route for {method} /{}", segs.join("/")));
    match (method.as_str(), segs) {
        ("POST", ["message:send"]) => de("SendMessage", body.clone()),
        ("POST", ["message:stream"]) => de("SendStreamingMessage", body.clone()),
        ("GET", ["tasks"]) => de("ListTasks", list_request(query)?),
        ("GET", ["extendedAgentCard"]) => de("GetExtendedAgentCard", json!({})),
        ("GET", ["tasks", id]) if !id.contains(':') => {
            let mut v = json!({"id": id});
            if let Some(n) = history {
                v = with(v, &[("historyLength", json!(n))]);
            }
            de("GetTask", v)
        }
        ("POST", ["tasks", x]) if x.ends_with(":cancel") => {
            de("CancelTask", with(body.clone(), &[("id", json!(x.trim_end_matches(":cancel")))]))
        }
        ("GET" | "POST", ["tasks", x]) if x.ends_with(":subscribe") => {
            de("SubscribeToTask", json!({"id": x.trim_end_matches(":subscribe")}))
        }
        ("POST", ["tasks", tid, "pushNotificationConfigs"]) => {
            de("CreateTaskPushNotificationConfig", with(body.clone(), &[("taskId", json!(tid))]))
        }
        ("GET", ["tasks", tid, "pushNotificationConfigs"]) => {
            let mut v = json!({"taskId": tid});
            if let Some(n) = int(query, "pageSize")? {
                v = with(v, &[("pageSize", json!(n))]);
            }
            if let Some(t) = text(query, "pageToken") {
                v = with(v, &[("pageToken", json!(t))]);
            }
            de("ListTaskPushNotificationConfigs", v)
        }
        ("GET", ["tasks", tid, "pushNotificationConfigs", id]) => {
            de("GetTaskPushNotificationConfig", json!({"taskId": tid, "id": id}))
        }
        ("DELETE", ["tasks", tid, "pushNotificationConfigs", id]) => {
            de("DeleteTaskPushNotificationConfig", json!({"taskId": tid, "id": id}))
        }
        _ => Err(not_found()),
    }
}

async fn rest(
    State(st): State<HttpState>,
    Path((agent, path)): Path<(String, String)>,
    principal: Option<Extension<Principal>>,
    grant: Option<Extension<Grant>>,
    Query(query): Query<Vec<(String, String)>>,
    request: axum::http::request::Parts,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (method, headers) = (&request.method, &request.headers);
    let profile = st.face.profile();
    let body = match body {
        Ok(b) => b,
        Err(r) => return rest_error(profile, &body_error(&r)),
    };
    if let Err(e) = st.allow.check(headers, &request.uri) {
        return rest_error(profile, &e);
    }
    let Some(agent) = agent_at(&st.face, &agent, &request.uri) else {
        return rest_error(profile, &A2aError::new(Kind::MethodNotFound, "no such agent"));
    };
    let (tenant, op) = match decode_rest_request(method, &path, &query, &body, json_content(headers)) {
        Ok(decoded) => decoded,
        Err(e) => return rest_error(profile, &e),
    };
    let mut who = match caller("rest", principal, grant, headers, &query) {
        Ok(w) => w,
        Err(e) => return rest_error(profile, &e),
    };
    who.path_tenant = tenant;
    match st.face.handle(&agent, &who, op).await {
        Ok(Reply::Stream(stream)) => {
            let events = stream.map(move |item| {
                let ev = match item {
                    Ok(ev) => Event::default().data(serde_json::to_string(&ev).unwrap_or_default()),
                    Err(e) => Event::default().event("error").data(e.http_body(profile).to_string()),
                };
                Ok::<_, Infallible>(ev)
            });
            Sse::new(events).keep_alive(KeepAlive::default()).into_response()
        }
        Ok(reply) => match reply_json(reply) {
            Ok(v) => rest_json(profile, StatusCode::OK, &v),
            Err(e) => rest_error(profile, &e),
        },
        Err(e) => rest_error(profile, &e),
    }
}
