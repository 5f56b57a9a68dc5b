//! The web console (`/console`): server-rendered HTML, everything in the binary; one small script
//! of its own (the live journal of a call under way), no other.
//! The approval page (the calls the policy enforcement point held, to approve or deny) and the
//! calls (filtered by state, `unknown` ones marked, with a reconcile form).
//!
//! Sign-in takes a credential the admin API takes: the operator's admin token with a tenant and
//! a name, or an OAuth access token (its tenant and scopes are the token's). The session is kept
//! server-side ([`sessions`]): the `HttpOnly`, `SameSite=Strict` cookie scoped to `/console`
//! carries only a random session id, never the credential, and signing out ends the session
//! for that cookie everywhere. The credential is checked again on every request, so any replica
//! serves the session and a rotated or revoked token stops working at once. Every request
//! must name an allowed `Host` (loopback names, the hosts of `mcp.public_url` and
//! `a2a.public_url`, `mcp.allowed_hosts`, `a2a.allowed_hosts`: DNS-rebinding protection); every
//! POST must come from the page's own origin (`Origin`, else `Referer`) and carry the form's CSRF
//! token, derived from the session cookie.

mod approvals;
mod artifacts;
mod audit;
mod grants;
mod invocations;
mod policy;
mod sessions;
mod tasks;
mod upstreams;

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use sha2::{Digest, Sha256};
use switchyard_contract::{Engine, Invocation, InvocationId, Invocations, TenantId};

use crate::auth::{Gatekeeper, Identity, Refusal, scope};
use sessions::{Credentials, Sessions};

const COOKIE: &str = "switchyard_console";
/// How long a sign-in lasts (the credential itself may end sooner).
const SESSION_MAX_AGE_S: u32 = 8 * 3600;
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// What the console's handlers share.
#[derive(Debug, Clone)]
pub struct ConsoleState {
    engine: Engine,
    gate: Gatekeeper,
    /// Where sign-ins are kept.
    sessions: Sessions,
    /// `Host` names served (lower case, no port).
    hosts: Arc<Vec<String>>,
    /// Mark the cookie `Secure` (the gateway is reached over HTTPS).
    secure: bool,
    /// The MCP upstreams' tool pins, when MCP upstreams are configured.
    pins: Option<Pins>,
    /// The artifacts page's service.
    artifacts: Option<switchyard_artifacts::Artifacts>,
    /// The audit log and the key its checkpoints are signed with, when `[audit]` is on.
    audit: Option<AuditCheck>,
    /// The A2A task store and the exposed agents' names, when agents are configured.
    tasks: Option<Tasks>,
    /// The protocols the calls list filters by, each with the upstreams that speak it.
    protocols: Arc<Vec<(String, Vec<String>)>>,
    /// Where the grants page mints, lists and revokes, when a policy is configured.
    grants: Option<crate::grants::GrantDesk>,
}

/// Where the tasks page reads: the task store and the exposed agents.
#[derive(Clone)]
pub struct Tasks {
    pub store: Arc<dyn switchyard_contract::TaskStore>,
    pub agents: Arc<Vec<String>>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").field("agents", &self.agents).finish_non_exhaustive()
    }
}

/// What the audit page verifies: the log, the checkpoints' key and the grant key (which signed
/// checkpoints before they had a key of their own).
type AuditCheck = (
    Arc<dyn switchyard_contract::AuditStore>,
    Arc<switchyard_policy::grants::GrantKey>,
    Arc<switchyard_policy::grants::GrantKey>,
);

/// Where the upstreams page reads and approves tool pins.
#[derive(Clone)]
pub struct Pins {
    pub catalog: Arc<switchyard_mcp::Catalog>,
    pub bindings: Arc<dyn switchyard_contract::BindingStore>,
}

impl std::fmt::Debug for Pins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pins").finish_non_exhaustive()
    }
}

impl ConsoleState {
    /// The gateway's own listener terminates TLS: the session cookie is `Secure`.
    pub fn over_tls(mut self, tls: bool) -> Self {
        self.secure |= tls;
        self
    }

    /// `public_urls` are the gateway's configured public base URLs; `allowed_hosts` more
    /// `Host` names to serve besides loopback names and theirs.
    /// Sessions are kept in `vault` (the store's sealed secrets).
    pub fn new(
        engine: Engine,
        gate: Gatekeeper,
        vault: Arc<dyn switchyard_contract::SecretVault>,
        public_urls: &[String],
        allowed_hosts: &[String],
    ) -> Self {
        let public_hosts = public_urls.iter().filter_map(|u| host_of_url(u));
        let hosts = LOOPBACK_HOSTS
            .iter()
            .map(|h| (*h).to_string())
            .chain(public_hosts)
            .chain(allowed_hosts.iter().map(|h| h.to_ascii_lowercase()))
            .collect();
        let secure = !public_urls.is_empty() && public_urls.iter().all(|u| u.starts_with("https://"));
        Self {
            engine,
            gate,
            sessions: Sessions::new(vault),
            hosts: Arc::new(hosts),
            secure,
            pins: None,
            artifacts: None,
            audit: None,
            tasks: None,
            protocols: Arc::default(),
            grants: None,
        }
    }

    /// With the calls list filtering by these protocols (each with its upstreams' names).
    pub fn with_protocols(mut self, protocols: Vec<(String, Vec<String>)>) -> Self {
        self.protocols = Arc::new(protocols.into_iter().filter(|(_, ups)| !ups.is_empty()).collect());
        self
    }

    /// With the A2A tasks page over `tasks`.
    pub fn with_tasks(mut self, tasks: Tasks) -> Self {
        self.tasks = Some(tasks);
        self
    }

    /// With the artifacts page over `artifacts`.
    pub fn with_artifacts(mut self, artifacts: switchyard_artifacts::Artifacts) -> Self {
        self.artifacts = Some(artifacts);
        self
    }

    /// With the audit page over `store`, its checkpoints signed with `key` (or, before
    /// checkpoints had a key of their own, `legacy`).
    pub fn with_audit(
        mut self,
        store: Arc<dyn switchyard_contract::AuditStore>,
        key: switchyard_policy::grants::GrantKey,
        legacy: switchyard_policy::grants::GrantKey,
    ) -> Self {
        self.audit = Some((store, Arc::new(key), Arc::new(legacy)));
        self
    }

    /// With the grants page over `desk`.
    pub fn with_grants(mut self, desk: crate::grants::GrantDesk) -> Self {
        self.grants = Some(desk);
        self
    }

    /// With the upstreams page over these pins.
    pub fn with_pins(mut self, pins: Pins) -> Self {
        self.pins = Some(pins);
        self
    }
}

/// The `/console` routes.
pub fn router(state: ConsoleState) -> Router {
    Router::new()
        .route("/console", get(|| async { Redirect::to("/console/approvals") }))
        .route("/console/login", get(login_page).post(login))
        .route("/console/logout", post(logout))
        .route("/console/approvals", get(approvals::list))
        .route("/console/approvals/{id}", get(approvals::show))
        .route("/console/approvals/{id}/approve", post(approvals::approve))
        .route("/console/approvals/{id}/deny", post(approvals::deny))
        .route("/console/invocations", get(invocations::list))
        .route("/console/invocations/{id}", get(invocations::show))
        .route("/console/invocations/{id}/reconcile", post(invocations::reconcile))
        .route("/console/invocations/{id}/events", get(invocations::events))
        .route("/console/assets/live.js", get(invocations::live_js))
        .route("/console/tasks", get(tasks::list))
        .route("/console/tasks/{agent}/{id}", get(tasks::show))
        .route("/console/artifacts", get(artifacts::list))
        .route("/console/artifacts/{id}/download", get(artifacts::download))
        .route("/console/audit", get(audit::verify))
        .route("/console/policy", get(policy::simulate))
        .route("/console/grants", get(grants::list).post(grants::mint))
        .route("/console/grants/{id}/revoke", post(grants::revoke))
        .route("/console/upstreams", get(upstreams::list))
        .route("/console/upstreams/{upstream}/approve", post(upstreams::approve))
        .route_layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// `Host` and, for a POST, same-origin checks; then headers that keep the pages out of frames,
/// caches and other origins' reach.
async fn guard(State(state): State<ConsoleState>, req: Request, next: Next) -> Response {
    let Some(host) = request_host(&req) else {
        return refusal(StatusCode::BAD_REQUEST, "the request names no Host");
    };
    if !state.hosts.iter().any(|h| *h == host_name(&host)) {
        return refusal(
            StatusCode::FORBIDDEN,
            &format!("Host `{host}` is not served here: add it to mcp.allowed_hosts (or set mcp.public_url)"),
        );
    }
    if req.method() == Method::POST && !same_origin(req.headers(), &host) {
        return refusal(
            StatusCode::FORBIDDEN,
            "cross-origin form posts are refused (Origin or Referer must be this page's origin)",
        );
    }
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    resp
}

/// The `Host` header (HTTP/1.1) or the URI's authority (HTTP/2), lower case.
fn request_host(req: &Request) -> Option<String> {
    let from_header = req.headers().get(header::HOST).and_then(|v| v.to_str().ok()).map(str::to_string);
    from_header.or_else(|| req.uri().authority().map(|a| a.as_str().to_string())).map(|h| h.to_ascii_lowercase())
}

/// `host[:port]` without the port.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.split(':').next().unwrap_or(host)
}

fn host_of_url(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    Some(host_name(&authority.to_ascii_lowercase()).to_string())
}

/// Whether a POST comes from a page of this origin: its `Origin`, else its `Referer`, is
/// `http(s)://<Host>`.
fn same_origin(headers: &HeaderMap, host: &str) -> bool {
    let ours = |o: &str| {
        let o = o.to_ascii_lowercase();
        o == format!("http://{host}") || o == format!("https://{host}")
    };
    let value = |name| headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    match value(header::ORIGIN) {
        Some(origin) if origin != "null" => ours(origin),
        _ => value(header::REFERER).is_some_and(|r| {
            let origin: String = r.splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
            ours(&origin)
        }),
    }
}

/// A signed-in caller and the CSRF token its forms carry.
#[derive(Debug)]
struct Session {
    who: Identity,
    csrf: String,
}

/// The caller of a console request, from its session cookie; else a redirect to sign in.
async fn session(state: &ConsoleState, headers: &HeaderMap) -> Result<Session, Response> {
    let to_login = || Redirect::to("/console/login").into_response();
    let Some(cookie) = cookie(headers) else { return Err(to_login()) };
    let creds = match state.sessions.find(&cookie).await {
        Ok(found) => found,
        Err(e) => return Err(refusal(StatusCode::SERVICE_UNAVAILABLE, &format!("sessions cannot be read: {e}"))),
    };
    let Some(headers) = creds.as_ref().and_then(headers_of) else {
        return Err(signed_out("your session has ended: sign in again"));
    };
    match state.gate.identify(&headers).await {
        Ok(who) => Ok(Session { who, csrf: csrf_token(&cookie) }),
        Err(_) => Err(signed_out("your credential is no longer accepted: sign in again")),
    }
}

/// The session cookie's value, if the request has one.
fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix(COOKIE).and_then(|v| v.strip_prefix('=')).map(str::to_string))
}

/// The form token of the session whose cookie is `cookie`: only a page of this origin can read
/// it (from the form), and only the cookie's holder can make it.
fn csrf_token(cookie: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"switchyard console csrf\n");
    h.update(cookie.as_bytes());
    hex::encode(h.finalize())
}

/// Whether a posted form carries the session's CSRF token (compared in constant time).
fn csrf_ok(session: &Session, form: &HashMap<String, String>) -> bool {
    let given = form.get("csrf").map_or(&[][..], |v| v.as_bytes());
    let want = session.csrf.as_bytes();
    given.len() == want.len() && given.iter().zip(want).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// The headers the admin API would get from the caller signed in with `c` (none if a value
/// cannot be sent).
fn headers_of(c: &Credentials) -> Option<HeaderMap> {
    let mut h = HeaderMap::new();
    h.insert(header::AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {}", c.token)).ok()?);
    h.insert("x-switchyard-tenant", HeaderValue::from_str(&c.tenant).ok()?);
    h.insert("x-switchyard-subject", HeaderValue::from_str(&c.name).ok()?);
    Some(h)
}

/// A form body's fields (a repeated field keeps its last value).
fn form(body: &Bytes) -> HashMap<String, String> {
    form_urlencoded::parse(body).into_owned().collect()
}

async fn login_page() -> Response {
    login_form(StatusCode::OK, None)
}

fn login_form(status: StatusCode, error: Option<&str>) -> Response {
    let error = error.map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", esc(e))).unwrap_or_default();
    let body = format!(
        "{error}<form method=\"post\" action=\"/console/login\" class=\"login\">\
         <label>Token <input type=\"password\" name=\"token\" required autocomplete=\"off\"></label>\
         <label>Tenant <input name=\"tenant\" value=\"default\"></label>\
         <label>Your name <input name=\"name\" value=\"console\"></label>\
         <button type=\"submit\">Sign in</button></form>\
         <p class=\"hint\">The operator's admin token (acting for the tenant and name above), or an OAuth access \
         token with the <code>{}</code> scope (its tenant and subject are the token's; approving needs <code>{}</code>).</p>",
        scope::READ,
        scope::APPROVE
    );
    (status, page("Sign in", None, &body)).into_response()
}

/// `POST /console/login`: checks the credential as the admin API would and keeps it in the
/// session cookie.
async fn login(State(state): State<ConsoleState>, body: Bytes) -> Response {
    let f = form(&body);
    let field = |k: &str, default: &str| {
        f.get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).unwrap_or_else(|| default.into())
    };
    let creds =
        Credentials { tenant: field("tenant", "default"), name: field("name", "console"), token: field("token", "") };
    if creds.token.is_empty() {
        return login_form(StatusCode::BAD_REQUEST, Some("a token is required"));
    }
    if let Err(e) = TenantId::new(creds.tenant.clone()) {
        return login_form(StatusCode::BAD_REQUEST, Some(&e.message));
    }
    if creds.name.len() > 200 || creds.name.contains('\n') || creds.tenant.contains('\n') {
        return login_form(StatusCode::BAD_REQUEST, Some("the name must be at most 200 characters on one line"));
    }
    let Some(headers) = headers_of(&creds) else {
        return login_form(StatusCode::BAD_REQUEST, Some("the token, tenant and name must be printable ASCII"));
    };
    let who = match state.gate.identify(&headers).await {
        Ok(who) => who,
        Err(_) => return login_form(StatusCode::UNAUTHORIZED, Some("that token is not accepted")),
    };
    if state.gate.require(&who, &[scope::READ]).is_err() {
        return login_form(StatusCode::FORBIDDEN, Some(&format!("that token lacks the {} scope", scope::READ)));
    }
    let id = match state.sessions.open(&creds, SESSION_MAX_AGE_S).await {
        Ok(id) => id,
        Err(e) => return login_form(StatusCode::SERVICE_UNAVAILABLE, Some(&format!("cannot start a session: {e}"))),
    };
    tracing::info!(tenant = %who.principal.tenant, subject = %who.principal.subject, "console sign-in");
    let secure = if state.secure { "; Secure" } else { "" };
    let set = format!("{COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={SESSION_MAX_AGE_S}{secure}");
    let mut resp = Redirect::to("/console/approvals").into_response();
    if let Ok(v) = HeaderValue::from_str(&set) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp
}

/// `POST /console/logout`: ends the session server-side (the same cookie signs nobody in again).
async fn logout(State(state): State<ConsoleState>, headers: HeaderMap) -> Response {
    if let Some(id) = cookie(&headers)
        && let Err(e) = state.sessions.close(&id).await
    {
        return refusal(StatusCode::SERVICE_UNAVAILABLE, &format!("the session cannot be ended now: {e}"));
    }
    signed_out("signed out")
}

/// Back to the sign-in page, the session cookie cleared.
fn signed_out(why: &str) -> Response {
    let mut resp = login_form(StatusCode::UNAUTHORIZED, Some(why));
    let clear = format!("{COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0");
    if let Ok(v) = HeaderValue::from_str(&clear) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp
}

/// The signed-in caller holding `needed`, or the response to send instead.
async fn caller(state: &ConsoleState, headers: &HeaderMap, needed: &str) -> Result<Session, Response> {
    let s = session(state, headers).await?;
    state.gate.require(&s.who, &[needed]).map_err(IntoResponse::into_response)?;
    Ok(s)
}

/// The refusal for anyone but the operator, saying `why` (`None` for the operator).
fn not_operator(s: &Session, why: &str) -> Option<Response> {
    (s.who.access != crate::auth::Access::Operator)
        .then(|| refusal(StatusCode::FORBIDDEN, &format!("{why}: only the operator's admin token sees this page")))
}

/// A form post: the signed-in caller holding `needed` and the form, its CSRF token checked; or
/// the response to send instead.
async fn form_post(
    state: &ConsoleState,
    headers: &HeaderMap,
    needed: &str,
    body: &Bytes,
) -> Result<(Session, HashMap<String, String>), Response> {
    let s = caller(state, headers, needed).await?;
    let f = form(body);
    if !csrf_ok(&s, &f) {
        let why = "the form's CSRF token is missing or wrong: reload the page and try again";
        return Err(refusal(StatusCode::FORBIDDEN, why));
    }
    Ok((s, f))
}

/// A form post on the call `raw` names: [`form_post`] and the call's id.
async fn posted(
    state: &ConsoleState,
    headers: &HeaderMap,
    needed: &str,
    raw: &str,
    body: &Bytes,
) -> Result<(Session, HashMap<String, String>, InvocationId), Response> {
    let (s, f) = form_post(state, headers, needed, body).await?;
    let id = parse_id(raw).map_err(IntoResponse::into_response)?;
    Ok((s, f, id))
}

fn parse_id(raw: &str) -> Result<InvocationId, Refusal> {
    raw.parse()
        .map_err(|e: switchyard_contract::id::ParseIdError| refusal(StatusCode::BAD_REQUEST, &e.to_string()).into())
}

/// A page about the call `raw` names: the signed-in caller (`invocations:read`) and the call, of
/// the caller's tenant only (another tenant's is not found); or the response to send instead.
async fn viewed(state: &ConsoleState, headers: &HeaderMap, raw: &str) -> Result<(Session, Invocation), Response> {
    let s = caller(state, headers, scope::READ).await?;
    let id = parse_id(raw).map_err(IntoResponse::into_response)?;
    let inv = state.engine.get(&s.who.principal.tenant, id).await.map_err(|e| failure(&e))?;
    Ok((s, inv))
}

/// Back to the list at `path` after an action, saying what it did.
fn done(path: &str, message: &str) -> Response {
    let message: String = form_urlencoded::byte_serialize(message.as_bytes()).collect();
    Redirect::to(&format!("{path}?done={message}")).into_response()
}

/// What the previous action did (`?done=`), as a notice; else nothing.
fn notice(query: &HashMap<String, String>) -> String {
    query.get("done").map(|d| format!("<p class=\"notice\" role=\"status\">{}</p>", esc(d))).unwrap_or_default()
}

/// A link to the next page of the list at `href` (which already has its query), if there is one.
fn next_page(href: &str, cursor: Option<&String>) -> String {
    cursor.map_or_else(String::new, |c| {
        let c: String = form_urlencoded::byte_serialize(c.as_bytes()).collect();
        format!("<p><a href=\"{href}cursor={c}\">Next page</a></p>")
    })
}

/// A short page saying why a request was refused.
fn refusal(status: StatusCode, why: &str) -> Response {
    (status, page("Refused", None, &format!("<p class=\"error\" role=\"alert\">{}</p>", esc(why)))).into_response()
}

/// A contract error as a page with the admin API's status.
fn failure(e: &switchyard_contract::Error) -> Response {
    refusal(crate::api_error::status(e.kind), &e.message)
}

/// A whole page: `body` is HTML already escaped.
fn page(title: &str, session: Option<&Session>, body: &str) -> Html<String> {
    let who = session.map_or_else(String::new, |s| {
        format!(
            "<form method=\"post\" action=\"/console/logout\" class=\"who\">{} · tenant <b>{}</b> \
             <button type=\"submit\">Sign out</button></form>",
            esc(&s.who.principal.subject),
            esc(s.who.principal.tenant.as_str())
        )
    });
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t} · Switchyard</title><style>{STYLE}</style></head><body>\
         <header><nav><a href=\"/console/approvals\" class=\"brand\">Switchyard</a> \
         <a href=\"/console/approvals\">Held calls</a> <a href=\"/console/invocations\">Calls</a> \
         <a href=\"/console/invocations?state=unknown\">Unknown</a> <a href=\"/console/tasks\">A2A tasks</a> <a href=\"/console/artifacts\">Artifacts</a> \
         <a href=\"/console/upstreams\">Upstreams</a> <a href=\"/console/policy\">Policy</a> <a href=\"/console/grants\">Grants</a> <a href=\"/console/audit\">Audit</a></nav>{who}</header>\
         <main><h1>{t}</h1>{body}</main></body></html>",
        t = esc(title)
    ))
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}\
header{display:flex;justify-content:space-between;align-items:center;padding:.6em 1.2em;background:#1d2430;color:#fff}\
header a{color:#fff;text-decoration:none;font-weight:600;margin-right:1em}tr.unknown{background:#fff3cd}td code{word-break:break-all}.who{margin:0}main{padding:1em 1.2em;max-width:72em}\
table{border-collapse:collapse;width:100%;background:#fff}th,td{text-align:left;padding:.45em .6em;border-bottom:1px solid #dde1e6;vertical-align:top}\
th{background:#eef0f3}code,pre{font:13px ui-monospace,monospace}pre{background:#fff;border:1px solid #dde1e6;padding:.8em;overflow:auto}\
.error{color:#a4161a;font-weight:600}.notice{color:#1b5e20;font-weight:600}.hint{color:#5b6573}\
label{display:block;margin:.4em 0}textarea{display:block;font:13px ui-monospace,monospace}.login input{margin-left:.5em}.actions{display:flex;gap:2em;margin-top:1em}\
button{padding:.35em 1em;cursor:pointer}dl{display:grid;grid-template-columns:max-content 1fr;gap:.3em 1em}dt{font-weight:600}";

/// `s` safe inside HTML text and double-quoted attributes.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
