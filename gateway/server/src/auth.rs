//! Who is calling. The operator's admin token grants everything and names the tenant with
//! `X-Switchyard-Tenant`; any other bearer credential goes to the OAuth resource server
//! (`[auth]`), whose token names the tenant and grants scopes. One place for every HTTP face.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use switchyard_contract::{Grant, Principal, Secret, TenantId};
use switchyard_oauth::{AuthError, Authenticator, http};

use crate::api_error::ApiError;

/// The scopes the gateway's own operations need.
pub mod scope {
    pub const READ: &str = "invocations:read";
    pub const WRITE: &str = "invocations:write";
    pub const RECONCILE: &str = "invocations:reconcile";
    /// Approve or deny calls the policy enforcement point held.
    pub const APPROVE: &str = "invocations:approve";
    pub const ARTIFACTS_READ: &str = "artifacts:read";
    /// Ask the policy simulator what the policy would rule on a call.
    pub const POLICY_READ: &str = "policy:read";
    /// Read `GET /metrics`.
    pub const METRICS: &str = "metrics:read";
    /// Use the MCP endpoints (list and call tools, read resources, get prompts).
    pub const MCP: &str = "mcp:call";
    /// Use the A2A endpoints (send messages, read and cancel tasks, push configurations).
    pub const A2A: &str = switchyard_a2a::config::DEFAULT_SCOPE;
}

/// What a caller may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// The admin token: every operation, on any tenant.
    Operator,
    /// An OAuth caller (token, API key, anonymous): its scopes.
    Scoped(BTreeSet<String>),
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub principal: Principal,
    pub access: Access,
}

impl Identity {
    /// Whether the caller reads every subject's calls and tasks of its tenant (the operator, or
    /// the `tasks:admin` scope), not only its own.
    pub fn tenant_wide(&self) -> bool {
        match &self.access {
            Access::Operator => true,
            Access::Scoped(scopes) => scopes.contains(switchyard_contract::TASKS_ADMIN),
        }
    }
}

/// A refusal, ready to send (401 with a challenge, 403, 400 or 503).
#[derive(Debug)]
pub struct Refusal(Box<Response>);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        *self.0
    }
}

impl From<Response> for Refusal {
    fn from(r: Response) -> Self {
        Self(Box::new(r))
    }
}

impl From<ApiError> for Refusal {
    fn from(e: ApiError) -> Self {
        e.into_response().into()
    }
}

/// Checks credentials for every HTTP face.
#[derive(Clone)]
pub struct Gatekeeper {
    admin_token: Secret,
    oauth: Option<Arc<Authenticator>>,
}

impl std::fmt::Debug for Gatekeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gatekeeper").field("oauth", &self.oauth.is_some()).finish_non_exhaustive()
    }
}

impl Gatekeeper {
    pub fn new(admin_token: Secret, oauth: Option<Arc<Authenticator>>) -> Self {
        Self { admin_token, oauth }
    }

    pub fn oauth(&self) -> Option<&Authenticator> {
        self.oauth.as_deref()
    }

    /// The caller, or the response to send instead (401 with a challenge, 400, 503).
    pub async fn identify(&self, headers: &HeaderMap) -> Result<Identity, Refusal> {
        let bearer = http::bearer(headers).map_err(|e| self.refuse(&e))?;
        if let Some(token) = bearer
            && self.admin_token.matches(token)
        {
            return Ok(Identity { principal: operator_principal(headers)?, access: Access::Operator });
        }
        let Some(oauth) = &self.oauth else {
            return Err(ApiError::unauthenticated().into());
        };
        match oauth.authenticate(bearer).await {
            Ok(caller) => {
                tracing::debug!(tenant = %caller.principal.tenant, subject = %caller.principal.subject, method = ?caller.method, "authenticated");
                Ok(Identity { principal: caller.principal, access: Access::Scoped(caller.scopes) })
            }
            Err(e) => Err(self.refuse(&e)),
        }
    }

    /// `Ok` if `who` holds every scope in `needed`; else `403 insufficient_scope`.
    pub fn require(&self, who: &Identity, needed: &[&str]) -> Result<(), Refusal> {
        match (&who.access, &self.oauth) {
            (Access::Operator, _) => Ok(()),
            (Access::Scoped(granted), Some(oauth)) => {
                if needed.iter().all(|s| granted.contains(*s)) {
                    Ok(())
                } else {
                    Err(http::insufficient_scope(oauth.config(), needed).into())
                }
            }
            (Access::Scoped(_), None) => Err(ApiError::unauthenticated().into()),
        }
    }

    fn refuse(&self, e: &AuthError) -> Refusal {
        match &self.oauth {
            Some(oauth) => http::unauthorized(oauth.config(), e, &[]).into(),
            None => ApiError::unauthenticated().into(),
        }
    }
}

/// The operator names the tenant and subject in headers.
fn operator_principal(headers: &HeaderMap) -> Result<Principal, ApiError> {
    let header = |name: &str, default: &str| -> Result<String, ApiError> {
        match headers.get(name) {
            None => Ok(default.to_string()),
            Some(v) => v.to_str().map(str::to_string).map_err(|_| ApiError::invalid(format!("{name} must be ASCII"))),
        }
    };
    let tenant = TenantId::new(header("x-switchyard-tenant", "default")?)?;
    let subject = header("x-switchyard-subject", "admin")?;
    if subject.is_empty() || subject.len() > 200 {
        return Err(ApiError::invalid("X-Switchyard-Subject must be 1-200 characters"));
    }
    Ok(Principal::new(tenant, subject))
}

#[derive(Clone, Debug)]
struct ScopedAuth {
    gate: Gatekeeper,
    anonymous: bool,
    /// Endpoint path prefix → the scope it needs; the longest matching prefix wins.
    scopes: Arc<Vec<(String, String)>>,
    default_scope: &'static str,
    /// Path prefixes whose scope the face checks itself, after routing (with the [`Grant`]).
    deferred: Arc<Vec<String>>,
}

impl ScopedAuth {
    fn deferred(&self, path: &str) -> bool {
        self.deferred.iter().any(|p| path == p || path.starts_with(&format!("{p}/")))
    }

    fn scope_for(&self, path: &str) -> &str {
        self.scopes
            .iter()
            .filter(|(p, _)| path == p || path.starts_with(&format!("{p}/")))
            .max_by_key(|(p, _)| p.len())
            .map_or(self.default_scope, |(_, s)| s.as_str())
    }
}

/// `routes` behind authentication: every request names its caller before the face sees it —
/// the admin token (operator), an OAuth credential holding the endpoint's scope, or (only
/// when `anonymous` is on, which configuration allows on loopback only) nobody, as tenant
/// `default`, subject `anonymous`. The [`Principal`] and the [`Grant`] go into the request's
/// extensions. Under a `deferred` path prefix the credential is checked here but its scope is
/// left to the face, which knows it only after routing the request.
pub fn protect(
    routes: axum::Router,
    gate: Gatekeeper,
    anonymous: bool,
    scopes: Vec<(String, String)>,
    default_scope: &'static str,
    deferred: Vec<String>,
) -> axum::Router {
    let auth = ScopedAuth { gate, anonymous, scopes: Arc::new(scopes), default_scope, deferred: Arc::new(deferred) };
    routes.layer(axum::middleware::from_fn_with_state(auth, authorize))
}

async fn authorize(
    axum::extract::State(auth): axum::extract::State<ScopedAuth>,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let (principal, grant) = if auth.anonymous && !req.headers().contains_key(axum::http::header::AUTHORIZATION) {
        match switchyard_contract::TenantId::new("default") {
            Ok(t) => (Principal::new(t, "anonymous"), Grant::All),
            Err(e) => return ApiError::from(e).into_response(),
        }
    } else {
        let who = match auth.gate.identify(req.headers()).await {
            Ok(who) => who,
            Err(refusal) => return refusal.into_response(),
        };
        if !auth.deferred(req.uri().path()) {
            let needed = auth.scope_for(req.uri().path()).to_string();
            if let Err(refusal) = auth.gate.require(&who, &[needed.as_str()]) {
                return refusal.into_response();
            }
        }
        let grant = match who.access {
            Access::Operator => Grant::All,
            Access::Scoped(scopes) => Grant::Scopes(scopes),
        };
        (who.principal, grant)
    };
    req.extensions_mut().insert(principal);
    req.extensions_mut().insert(grant);
    next.run(req).await
}
