//! A small OAuth 2.0 / OpenID Connect issuer for tests, on `127.0.0.1:0`: real discovery and
//! JWKS documents, real Ed25519 keys (aws-lc-rs), real signed JWTs, and key rotation.

use std::sync::{Arc, Mutex};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair};
use axum::Json;
use axum::extract::State;
use axum::routing::get;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

struct Key {
    kid: String,
    pkcs8: Vec<u8>,
    public: Vec<u8>,
}

impl Key {
    fn generate(kid: &str) -> Key {
        let doc = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap_or_else(|e| panic!("keygen: {e}"));
        let pair = Ed25519KeyPair::from_pkcs8(doc.as_ref()).unwrap_or_else(|e| panic!("key: {e}"));
        Key { kid: kid.into(), pkcs8: doc.as_ref().to_vec(), public: pair.public_key().as_ref().to_vec() }
    }

    fn jwk(&self) -> Value {
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&self.public);
        json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": self.kid, "alg": "EdDSA", "use": "sig"})
    }
}

struct Keys {
    /// Published in the JWKS.
    published: Vec<Key>,
    /// Signs new tokens (the last published key).
    current: usize,
    requests: usize,
    /// Opaque tokens and their claims, for introspection.
    opaque: std::collections::HashMap<String, Value>,
    introspections: usize,
    /// Access and refresh tokens issued by `/token`.
    issued: Vec<String>,
    codes: std::collections::HashMap<String, CodeGrant>,
    /// Refresh token → (resource, scope).
    refresh: std::collections::HashMap<String, (String, String)>,
}

/// The client the gateway introspects as (HTTP Basic).
pub const INTROSPECTION_CLIENT: (&str, &str) = ("switchyard-gw", "introspection-secret-42");

/// A running test issuer.
pub struct TestIssuer {
    pub issuer: String,
    keys: Arc<Mutex<Keys>>,
    _server: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for TestIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestIssuer").field("issuer", &self.issuer).finish()
    }
}

async fn discovery(State((issuer, _)): State<(String, Arc<Mutex<Keys>>)>) -> Json<Value> {
    Json(json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}/jwks"),
        "token_endpoint": format!("{issuer}/token"),
        "authorization_endpoint": format!("{issuer}/authorize"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["EdDSA"],
        "grant_types_supported": ["client_credentials", "authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
        "code_challenge_methods_supported": ["S256"],
    }))
}

/// The confidential client allowed the client credentials grant.
pub const SERVICE_CLIENT: (&str, &str) = ("switchyard-upstream-client", "upstream-client-secret-7");

/// OAuth 2.0 client credentials (RFC 6749 §4.4), client_secret_post or _basic, with an RFC 8707
/// `resource` that becomes the token's `aud`. The token carries tenant `svc` and the scopes
/// asked for. Every issued token is remembered (tests check logs never show one).
async fn token(
    State((issuer, keys)): State<(String, Arc<Mutex<Keys>>)>,
    headers: axum::http::HeaderMap,
    body: String,
) -> Result<Json<Value>, (axum::http::StatusCode, Json<Value>)> {
    let form: std::collections::HashMap<String, String> =
        body.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (decode(k), decode(v))).collect();
    let basic = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| s.split_once(':').map(|(a, b)| (decode(a), decode(b))));
    let (id, secret) = basic.unwrap_or_else(|| {
        (form.get("client_id").cloned().unwrap_or_default(), form.get("client_secret").cloned().unwrap_or_default())
    });
    let refuse = |code: &str| (axum::http::StatusCode::BAD_REQUEST, Json(json!({ "error": code })));
    if (id.as_str(), secret.as_str()) != SERVICE_CLIENT {
        return Err((axum::http::StatusCode::UNAUTHORIZED, Json(json!({ "error": "invalid_client" }))));
    }
    let (resource, scope, sub, tenant) = match form.get("grant_type").map(String::as_str) {
        Some("client_credentials") => {
            let Some(resource) = form.get("resource") else { return Err(refuse("invalid_target")) };
            (resource.clone(), form.get("scope").cloned().unwrap_or_default(), id.clone(), "svc")
        }
        Some("authorization_code") => {
            let code = form.get("code").cloned().unwrap_or_default();
            let grant = keys.lock().unwrap_or_else(|e| e.into_inner()).codes.remove(&code);
            let Some(grant) = grant else { return Err(refuse("invalid_grant")) };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let computed = {
                use sha2::Digest;
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()))
            };
            if computed != grant.challenge || form.get("redirect_uri") != Some(&grant.redirect_uri) {
                return Err(refuse("invalid_grant"));
            }
            (grant.resource, grant.scope, "alice".to_string(), "delegated")
        }
        Some("refresh_token") => {
            let token = form.get("refresh_token").cloned().unwrap_or_default();
            let grant = keys.lock().unwrap_or_else(|e| e.into_inner()).refresh.get(&token).cloned();
            let Some((resource, scope)) = grant else { return Err(refuse("invalid_grant")) };
            (resource, scope, "alice".to_string(), "delegated")
        }
        _ => return Err(refuse("unsupported_grant_type")),
    };
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    let claims = json!({ "iss": issuer, "aud": resource, "sub": sub, "tenant": tenant, "scope": scope,
                         "iat": now, "nbf": now - 5, "exp": now + 300 });
    let mut k = keys.lock().unwrap_or_else(|e| e.into_inner());
    let access = sign_with(&k.published[k.current], &claims);
    k.issued.push(access.clone());
    let mut answer = json!({ "access_token": access, "token_type": "Bearer", "expires_in": 300, "scope": scope });
    if tenant == "delegated" {
        let refresh = format!("refresh-{}", uuid::Uuid::new_v4().simple());
        k.refresh.insert(refresh.clone(), (resource, scope));
        k.issued.push(refresh.clone());
        answer["refresh_token"] = json!(refresh);
    }
    Ok(Json(answer))
}

/// A pending authorization code.
struct CodeGrant {
    challenge: String,
    redirect_uri: String,
    resource: String,
    scope: String,
}

/// The authorization endpoint of a user who always consents: redirects back at once with a
/// code (and `iss`, RFC 9207). Only the pre-registered client, PKCE S256, loopback redirects.
async fn authorize(
    State((issuer, keys)): State<(String, Arc<Mutex<Keys>>)>,
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    let redirect = get("redirect_uri");
    if get("client_id") != SERVICE_CLIENT.0
        || get("code_challenge_method") != "S256"
        || get("response_type") != "code"
        || !redirect.starts_with("http://127.0.0.1:")
    {
        return (axum::http::StatusCode::BAD_REQUEST, "invalid authorization request").into_response();
    }
    let code = format!("code-{}", uuid::Uuid::new_v4().simple());
    keys.lock().unwrap_or_else(|e| e.into_inner()).codes.insert(
        code.clone(),
        CodeGrant {
            challenge: get("code_challenge"),
            redirect_uri: redirect.clone(),
            resource: get("resource"),
            scope: get("scope"),
        },
    );
    let enc = |s: &str| {
        s.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect::<String>()
    };
    let location = format!("{redirect}?code={code}&state={}&iss={}", enc(&get("state")), enc(&issuer));
    (axum::http::StatusCode::FOUND, [(axum::http::header::LOCATION, location)]).into_response()
}

/// `application/x-www-form-urlencoded` value decoding (`+` and `%XX`).
fn decode(s: &str) -> String {
    let bytes = s.replace('+', " ").into_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or(""), 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// RFC 7662: `token=…` form, HTTP Basic client authentication.
async fn introspect(
    State((_, keys)): State<(String, Arc<Mutex<Keys>>)>,
    headers: axum::http::HeaderMap,
    body: String,
) -> Result<Json<Value>, axum::http::StatusCode> {
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", INTROSPECTION_CLIENT.0, INTROSPECTION_CLIENT.1))
    );
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
        return Err(axum::http::StatusCode::UNAUTHORIZED);
    }
    let token = body.split('&').find_map(|kv| kv.strip_prefix("token=")).unwrap_or_default().to_string();
    let mut k = keys.lock().unwrap_or_else(|e| e.into_inner());
    k.introspections += 1;
    Ok(Json(match k.opaque.get(&token) {
        Some(claims) => {
            let mut answer = claims.clone();
            answer["active"] = json!(true);
            answer
        }
        None => json!({"active": false}),
    }))
}

async fn jwks(State((_, keys)): State<(String, Arc<Mutex<Keys>>)>) -> Json<Value> {
    let mut k = keys.lock().unwrap_or_else(|e| e.into_inner());
    k.requests += 1;
    Json(json!({ "keys": k.published.iter().map(Key::jwk).collect::<Vec<_>>() }))
}

impl TestIssuer {
    /// Starts an issuer with one key, `k1`.
    pub async fn start() -> TestIssuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let issuer = format!("http://{addr}");
        let keys = Arc::new(Mutex::new(Keys {
            published: vec![Key::generate("k1")],
            current: 0,
            requests: 0,
            opaque: std::collections::HashMap::new(),
            introspections: 0,
            issued: Vec::new(),
            codes: std::collections::HashMap::new(),
            refresh: std::collections::HashMap::new(),
        }));
        let app = axum::Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/.well-known/oauth-authorization-server", get(discovery))
            .route("/token", axum::routing::post(token))
            .route("/authorize", get(authorize))
            .route("/jwks", get(jwks))
            .route("/introspect", axum::routing::post(introspect))
            .with_state((issuer.clone(), keys.clone()));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        TestIssuer { issuer, keys, _server: server }
    }

    /// Publishes a new key and signs with it from now on; returns its `kid`.
    pub fn rotate(&self) -> String {
        let mut k = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let kid = format!("k{}", k.published.len() + 1);
        k.published.push(Key::generate(&kid));
        k.current = k.published.len() - 1;
        kid
    }

    /// How many times the JWKS was fetched.
    pub fn jwks_requests(&self) -> usize {
        self.keys.lock().map(|k| k.requests).unwrap_or(0)
    }

    /// Claims for an access token: this issuer, `aud`, tenant, subject, scopes, valid for
    /// `ttl_s` seconds from now (negative: already expired).
    pub fn claims(&self, aud: &str, tenant: &str, sub: &str, scopes: &str, ttl_s: i64) -> Value {
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
        json!({ "iss": self.issuer, "aud": aud, "sub": sub, "tenant": tenant, "scope": scopes,
                "iat": now, "nbf": now - 5, "exp": now + ttl_s })
    }

    /// Mints an opaque token whose claims only introspection reveals.
    pub fn opaque(&self, claims: &Value) -> String {
        let token = format!("opaque-{}", uuid::Uuid::new_v4().simple());
        let mut k = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        k.opaque.insert(token.clone(), claims.clone());
        token
    }

    /// The access and refresh tokens `/token` issued so far.
    pub fn issued(&self) -> Vec<String> {
        self.keys.lock().map(|k| k.issued.clone()).unwrap_or_default()
    }

    /// How many introspection requests arrived.
    pub fn introspections(&self) -> usize {
        self.keys.lock().map(|k| k.introspections).unwrap_or(0)
    }

    /// Signs `claims` with the current key.
    pub fn sign(&self, claims: &Value) -> String {
        let k = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        sign_with(&k.published[k.current], claims)
    }

    /// Signs `claims` with a key this issuer never published.
    pub fn sign_with_unpublished_key(&self, claims: &Value) -> String {
        sign_with(&Key::generate("rogue"), claims)
    }
}

fn sign_with(key: &Key, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(&key.pkcs8)).unwrap_or_else(|e| panic!("sign: {e}"))
}
