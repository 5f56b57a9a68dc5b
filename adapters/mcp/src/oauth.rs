//! The gateway as an OAuth client of upstream MCP servers, on rmcp's authorization support
//! (OAuth 2.1: RFC 9728 → RFC 8414 / OpenID discovery with issuer checks, PKCE S256, RFC 8707
//! resource indicators, RFC 9207 `iss` checks, registration by pre-registration, Client ID
//! Metadata Document or dynamic registration, scope step-up). Each upstream gets its own token:
//! a client's token is never forwarded. Tokens stay inside rmcp's authorization manager (its
//! `Debug` redacts them) and are never logged here.
//!
//! Two grants: client credentials for service upstreams ([`client_credentials`]), and the
//! authorization code flow for user-delegated ones ([`authorization_code`]), whose user agent is
//! a parameter: a browser for `switchyard`'s operators, [`headless_user_agent`] for tests and
//! the conformance client.

use std::future::Future;

use crate::error::OAuthFlowError;
use crate::http::UpstreamHttp;

use rmcp::service::{ClientLifecycleMode, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{
    AuthClient, AuthorizationCallback, AuthorizationManager, AuthorizationRequest, ClientCredentialsConfig, OAuthState,
    WWWAuthenticateParams,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient};

use crate::config::UpstreamOAuth;
use crate::vault::VaultStore;

/// An HTTP client that adds (and refreshes) the upstream's token.
pub type OAuthHttp = AuthClient<UpstreamHttp>;

/// Client credentials (SEP-1046): discovery from the upstream, then the grant for its
/// resource (default: the upstream URL).
pub async fn client_credentials(url: &str, cfg: &UpstreamOAuth) -> Result<OAuthHttp, OAuthFlowError> {
    let secret = cfg.secret()?;
    let mut state = OAuthState::new(url, None).await.map_err(|e| format!("OAuth discovery: {e}"))?;
    let grant = ClientCredentialsConfig::ClientSecret {
        client_id: cfg.client_id.clone(),
        client_secret: secret.0,
        scopes: cfg.scopes.clone(),
        resource: Some(cfg.resource.clone().unwrap_or_else(|| url.to_string())),
    };
    state.authenticate_client_credentials(grant).await.map_err(|e| format!("OAuth client credentials: {e}"))?;
    let manager = state.into_authorization_manager().ok_or("OAuth: no authorization after the grant")?;
    Ok(AuthClient::new(UpstreamHttp::new()?, manager))
}

/// How the gateway presents itself to an authorization server in the authorization code flow.
/// Registration order: pre-registered client, else a Client ID Metadata Document when the
/// server supports it, else dynamic registration.
#[derive(Debug, Clone)]
pub struct Registration {
    pub redirect_uri: String,
    pub client_name: String,
    /// HTTPS URL of this client's metadata document (CIMD).
    pub client_metadata_url: Option<String>,
    /// A pre-registered client id and, for confidential clients, its secret.
    pub preregistered: Option<(String, Option<String>)>,
    /// Scopes to ask for; empty: the challenge's, else the resource's `scopes_supported`.
    pub scopes: Vec<String>,
}

/// Authorization code with PKCE. `challenge` is the upstream's `WWW-Authenticate` (it names the
/// metadata and scope), if it sent one. `user_agent` visits the authorization URL and returns
/// the redirect URL it was sent back to; the code in it is exchanged after the `state` and
/// `iss` checks.
pub async fn authorization_code<F, Fut>(
    url: &str,
    challenge: Option<&str>,
    reg: &Registration,
    store: Option<VaultStore>,
    user_agent: F,
) -> Result<OAuthHttp, OAuthFlowError>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Result<String, OAuthFlowError>>,
{
    let mut manager = AuthorizationManager::new(url).await.map_err(|e| format!("OAuth discovery: {e}"))?;
    if let Some(store) = store {
        manager.set_credential_store(store);
    }
    let mut state = OAuthState::Unauthorized(manager);
    let mut request = AuthorizationRequest::new(reg.redirect_uri.as_str()).with_client_name(reg.client_name.as_str());
    if !reg.scopes.is_empty() {
        request = request.with_scopes(reg.scopes.iter().map(String::as_str));
    }
    if let Some(cimd) = &reg.client_metadata_url {
        request = request.with_client_metadata_url(cimd.as_str());
    }
    if let Some((id, secret)) = &reg.preregistered {
        request = request.with_preregistered_client(id.as_str());
        if let Some(s) = secret {
            request = request.with_client_secret(s.as_str());
        }
    }
    if let Some(c) = challenge {
        request = request.with_challenge(c);
    }
    state.start_authorization(request).await.map_err(|e| format!("OAuth authorization: {e}"))?;
    let auth_url = state.get_authorization_url().await.map_err(|e| format!("OAuth authorization URL: {e}"))?;
    let redirect = user_agent(auth_url).await?;
    let callback = AuthorizationCallback::from_redirect_url(&redirect).map_err(|e| format!("OAuth redirect: {e}"))?;
    state
        .handle_callback_with_issuer(&callback.code, &callback.csrf_token, callback.issuer.as_deref())
        .await
        .map_err(|e| format!("OAuth token exchange: {e}"))?;
    let manager = state.into_authorization_manager().ok_or("OAuth: not authorized after the exchange")?;
    Ok(AuthClient::new(UpstreamHttp::new()?, manager))
}

/// The authorization kept in `store` by an earlier [`authorization_code`] (with its refresh
/// token; rmcp refreshes and saves back), or `None` when there is none.
pub async fn stored_authorization(url: &str, store: VaultStore) -> Result<Option<OAuthHttp>, OAuthFlowError> {
    let mut manager = AuthorizationManager::new(url).await.map_err(|e| format!("OAuth discovery: {e}"))?;
    manager.set_credential_store(store);
    if !manager.initialize_from_store().await.map_err(|e| format!("OAuth credentials: {e}"))? {
        return Ok(None);
    }
    Ok(Some(AuthClient::new(UpstreamHttp::new()?, manager)))
}

/// Step-up after `403 insufficient_scope`: authorizes the same client again for the union of
/// its scopes and the challenged ones (rmcp bounds the attempts). `Err` when the challenge is
/// not about scope or the limit is reached.
pub async fn step_up<F, Fut>(
    client: &OAuthHttp,
    url: &str,
    challenge: &str,
    user_agent: F,
) -> Result<(), OAuthFlowError>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Result<String, OAuthFlowError>>,
{
    let base = reqwest::Url::parse(url).map_err(|e| e.to_string())?;
    let params = WWWAuthenticateParams::parse(challenge, &base);
    let insufficient = params.is_insufficient_scope();
    let Some(scope) = params.scope.filter(|_| insufficient) else {
        return Err(format!("not a scope challenge: {challenge}").into());
    };
    let auth_url = {
        let manager = client.auth_manager.lock().await;
        manager.request_scope_upgrade(&scope).await.map_err(|e| format!("OAuth step-up: {e}"))?
    };
    let redirect = user_agent(auth_url).await?;
    let callback = AuthorizationCallback::from_redirect_url(&redirect).map_err(|e| format!("OAuth redirect: {e}"))?;
    let manager = client.auth_manager.lock().await;
    manager
        .exchange_code_for_token_with_issuer(&callback.code, &callback.csrf_token, callback.issuer.as_deref())
        .await
        .map(|_| ())
        .map_err(|e| OAuthFlowError(format!("OAuth step-up exchange: {e}")))
}

/// A user agent for flows where the authorization server redirects at once (tests, the
/// conformance suite): GETs the URL without following the redirect and returns `Location`.
pub async fn headless_user_agent(url: String) -> Result<String, OAuthFlowError> {
    let http =
        reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(|e| e.to_string())?;
    let response = http.get(&url).send().await.map_err(|e| format!("authorization request: {e}"))?;
    response.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).map(str::to_string).ok_or_else(
        || OAuthFlowError(format!("the authorization endpoint answered {} without a redirect", response.status())),
    )
}

/// Connects to an HTTP MCP endpoint through `http`, with `auth`'s tokens when given.
pub async fn connect_http<H: ClientHandler>(
    handler: H,
    url: &str,
    http: UpstreamHttp,
    auth: Option<OAuthHttp>,
    lifecycle: ClientLifecycleMode,
) -> Result<RunningService<RoleClient, H>, rmcp::service::ClientInitializeError> {
    let config = StreamableHttpClientTransportConfig::with_uri(url);
    match auth {
        Some(auth) => {
            // The authorization (shared by the upstream's sessions) on this session's clients.
            let mut client = auth;
            client.http_client = http;
            let transport = StreamableHttpClientTransport::with_client(client, config);
            rmcp::service::serve_client_with_lifecycle(handler, transport, lifecycle).await
        }
        None => {
            let transport = StreamableHttpClientTransport::with_client(http, config);
            rmcp::service::serve_client_with_lifecycle(handler, transport, lifecycle).await
        }
    }
}

/// The upstream's `WWW-Authenticate` challenge to an unauthenticated connection, if it sends one
/// (it names the protected resource metadata and, often, the scope).
pub async fn challenge(url: &str) -> Option<String> {
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        legacy_version: Some(rmcp::model::ProtocolVersion::V_2025_11_25),
    };
    let http = UpstreamHttp::new().ok()?;
    match connect_http(Probe, url, http, None, lifecycle).await {
        Ok(client) => {
            let _ = client.cancel().await;
            None
        }
        Err(e) => e.auth_challenge().map(str::to_string),
    }
}

/// A client that declares nothing, for probing.
#[derive(Debug, Clone, Copy, Default)]
struct Probe;

impl ClientHandler for Probe {}
