//! Grants: Ed25519-signed compact JWS (`alg: EdDSA`) that let a subject's calls run up to a tier
//! without waiting for approval, verified offline by every replica with the shared key, and
//! revocable in the store (a revocation takes effect at every replica's next decision on that
//! grant; the same key signs the audit log's checkpoints). A grant only ever lowers the bar up
//! to its ceiling: a call above the ceiling, or one an envelope or deny rule refuses, is decided
//! as if no grant were presented.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::config::Condition;
use crate::error::PolicyError;
use crate::pattern::{any, names_resource};
use crate::request::{DecisionRequest, Tier};

const ISSUER: &str = "switchyard";

/// How a spent approval grant's use is recorded (`used by <invocation id>`), in place of who
/// revoked it.
pub const USED_BY: &str = "used by ";

/// What a grant allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantClaims {
    /// The grant's id (for listing and revocation).
    pub jti: String,
    pub iss: String,
    pub tenant: String,
    /// The subject (principal) it is for.
    pub sub: String,
    #[serde(default = "any")]
    pub upstream: String,
    #[serde(default = "any")]
    pub operation: String,
    /// The highest tier it lets run without approval.
    pub ceiling: Tier,
    /// Argument conditions every call under it must meet (they fail closed: then the grant
    /// does not apply).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<Condition>,
    pub iat: u64,
    pub exp: u64,
    /// Set on the single-use grant minted when a human approves a held call: it is bound to
    /// that call and to nothing else (it covers no call at admission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalBinding>,
}

/// What an approval's grant is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalBinding {
    /// The held call's invocation id.
    pub invocation: String,
    /// Its request digest: a changed argument is another digest.
    pub digest: String,
    /// Who approved it.
    pub by: String,
}

impl GrantClaims {
    /// Whether this grant covers the call: its tenant, subject, upstream and operation, and
    /// every argument condition. An approval's grant covers no call here (see
    /// [`GrantClaims::approves`]).
    pub fn covers(&self, req: &DecisionRequest) -> bool {
        self.approval.is_none()
            && self.tenant == req.subject.tenant.as_str()
            && self.sub == req.subject.id
            && names_resource(&self.upstream, &self.operation, req)
            && self.when.iter().all(|c| c.holds(&req.context.request).unwrap_or(false))
    }
}

impl GrantClaims {
    /// Whether this is the approval of exactly the call `id` with request `digest` by a
    /// subject of the call's tenant: `Err` says how it does not match.
    pub fn approves(&self, tenant: &str, id: &str, digest: &str) -> Result<(), String> {
        let Some(a) = &self.approval else { return Err(format!("grant {} is not an approval", self.jti)) };
        if self.tenant != tenant || a.invocation != id {
            return Err(format!("grant {} approves another call", self.jti));
        }
        if a.digest != digest {
            return Err(format!("grant {} approves other arguments than this call's", self.jti));
        }
        Ok(())
    }
}

/// The key grants are signed and verified with.
pub struct GrantKey {
    encoding: EncodingKey,
    decoding: DecodingKey,
}

impl std::fmt::Debug for GrantKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GrantKey(..)")
    }
}

impl GrantKey {
    /// A new Ed25519 key, PKCS#8 DER.
    pub fn generate() -> Result<Vec<u8>, PolicyError> {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        aws_lc_rs::signature::Ed25519KeyPair::generate_pkcs8(&rng)
            .map(|d| d.as_ref().to_vec())
            .map_err(|_| PolicyError("cannot generate an Ed25519 key".into()))
    }

    pub fn from_pkcs8(der: &[u8]) -> Result<Self, PolicyError> {
        use aws_lc_rs::signature::KeyPair as _;
        let pair = aws_lc_rs::signature::Ed25519KeyPair::from_pkcs8(der)
            .map_err(|e| PolicyError(format!("the grant key is not an Ed25519 PKCS#8 key: {e}")))?;
        Ok(Self {
            encoding: EncodingKey::from_ed_der(der),
            decoding: DecodingKey::from_ed_der(pair.public_key().as_ref()),
        })
    }

    /// Signs `claims` (`iss` is set to this gateway's).
    pub fn mint(&self, claims: GrantClaims) -> Result<String, PolicyError> {
        self.sign(claims)
    }

    /// Signs any claims (a grant, an audit checkpoint) as a compact JWS; `iss` is set to this
    /// gateway's.
    pub fn sign<T: Serialize>(&self, claims: T) -> Result<String, PolicyError> {
        let mut claims = serde_json::to_value(claims).map_err(|e| PolicyError(e.to_string()))?;
        if let Some(map) = claims.as_object_mut() {
            map.insert("iss".into(), ISSUER.into());
        }
        jsonwebtoken::encode(&Header::new(Algorithm::EdDSA), &claims, &self.encoding)
            .map_err(|e| PolicyError(format!("cannot sign: {e}")))
    }

    /// The claims of `token` if this key signed it and it has not expired (no leeway).
    pub fn verify(&self, token: &str) -> Result<GrantClaims, String> {
        self.open(token, true)
    }

    /// The claims of `token` if this key signed it (and, when `expires`, it has an `exp` that
    /// has not passed).
    pub fn open<T: DeserializeOwned>(&self, token: &str, expires: bool) -> Result<T, String> {
        let mut v = Validation::new(Algorithm::EdDSA);
        v.set_issuer(&[ISSUER]);
        v.set_required_spec_claims(if expires { &["exp", "iss"][..] } else { &["iss"][..] });
        v.validate_exp = expires;
        v.validate_aud = false;
        v.leeway = 0;
        jsonwebtoken::decode::<T>(token, &self.decoding, &v).map(|d| d.claims).map_err(|e| e.to_string())
    }
}
