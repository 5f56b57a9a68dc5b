//! Links to one artifact for the principal a face answered: `…/artifacts/{id}?grant=<grant>`,
//! where the grant names the tenant, the subject and an expiry, signed (HMAC-SHA256) with a key
//! of the gateway's. The endpoint serves the artifact to whoever presents a valid, unexpired
//! grant for that artifact — a caller without credentials of its own (an anonymous MCP
//! client) included — and to no one else without credentials: the grant of one artifact opens
//! no other.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::{ArtifactId, Principal, TenantId};

/// How long a link stays valid, by default.
pub const LINK_TTL_S: u64 = 3600;

/// The key grants are signed and checked with (every replica needs the same one).
#[derive(Clone)]
pub struct ArtifactLinks {
    key: Vec<u8>,
    ttl_s: u64,
}

impl std::fmt::Debug for ArtifactLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactLinks").field("ttl_s", &self.ttl_s).finish_non_exhaustive()
    }
}

impl ArtifactLinks {
    pub fn new(key: &[u8]) -> Self {
        Self { key: key.to_vec(), ttl_s: LINK_TTL_S }
    }

    /// The grant for `principal` to read artifact `id`, valid from `now_s` (Unix seconds) for
    /// the link TTL.
    pub fn grant(&self, principal: &Principal, id: ArtifactId, now_s: u64) -> String {
        let (tenant, subject) = (hex::encode(principal.tenant.as_str()), hex::encode(&principal.subject));
        let expires = now_s.saturating_add(self.ttl_s);
        let payload = format!("{tenant}.{subject}.{expires}");
        format!("{payload}.{}", hex::encode(self.sign(id, &payload)))
    }

    /// The principal a grant for artifact `id` was given to, if its signature holds and it has
    /// not expired at `now_s`.
    pub fn verify(&self, grant: &str, id: ArtifactId, now_s: u64) -> Option<Principal> {
        let (payload, sig) = grant.rsplit_once('.')?;
        let sig = hex::decode(sig).ok()?;
        self.mac(id, payload)?.verify_slice(&sig).ok()?;
        let mut fields = payload.split('.');
        let (tenant, subject, expires) = (fields.next()?, fields.next()?, fields.next()?);
        if fields.next().is_some() || expires.parse::<u64>().ok()? <= now_s {
            return None;
        }
        let text = |h: &str| String::from_utf8(hex::decode(h).ok()?).ok();
        Some(Principal::new(TenantId::new(text(tenant)?).ok()?, text(subject)?))
    }

    fn mac(&self, id: ArtifactId, payload: &str) -> Option<Hmac<Sha256>> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key).ok()?;
        mac.update(format!("switchyard-artifact-link\0{id}\0{payload}").as_bytes());
        Some(mac)
    }

    fn sign(&self, id: ArtifactId, payload: &str) -> Vec<u8> {
        self.mac(id, payload).map(|m| m.finalize().into_bytes().to_vec()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_opens_its_artifact_for_its_principal_until_it_expires_and_nothing_else() {
        let links = ArtifactLinks::new(b"0123456789abcdef0123456789abcdef");
        let who = Principal::new(TenantId::new("red.team").unwrap(), "bot.1@x");
        let (id, other) = (ArtifactId::new(), ArtifactId::new());
        let grant = links.grant(&who, id, 1_000);
        assert_eq!(links.verify(&grant, id, 1_000), Some(who.clone()));
        assert_eq!(links.verify(&grant, id, 1_000 + LINK_TTL_S), None, "expired");
        assert_eq!(links.verify(&grant, other, 1_000), None, "another artifact");
        assert_eq!(ArtifactLinks::new(b"another key").verify(&grant, id, 1_000), None, "another key");
        let (payload, sig) = grant.rsplit_once('.').unwrap_or_else(|| panic!("{grant}"));
        let later = payload.replace(&format!(".{}", 1_000 + LINK_TTL_S), ".99999999999");
        assert_eq!(links.verify(&format!("{later}.{sig}"), id, 1_000), None, "a changed expiry");
        for bad in ["", "x", "a.b.c.d", "...", &format!("{payload}.zz")] {
            assert_eq!(links.verify(bad, id, 1_000), None, "{bad:?}");
        }
    }
}
