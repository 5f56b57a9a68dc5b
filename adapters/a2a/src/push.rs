//! Push notifications: configurations per task, and delivery from the durable outbox the hub
//! fills in the same transaction as each task event. Delivery is at least once: a POST is
//! retried with backoff until a 2xx or `max_attempts`; each webhook gets its task's events in
//! order. Destinations are checked when a configuration is stored, and again when connecting:
//! the delivery client resolves names through a resolver that drops loopback, private,
//! link-local and other non-public addresses (unless the operator allows them), so a name that
//! re-resolves to a forbidden address (DNS rebinding) is not reached either.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use a2a::TaskPushNotificationConfig;
use futures::StreamExt;
use serde::Deserialize;
use switchyard_contract::{Delivery, PushOutbox, TaskId};
use tracing::{debug, warn};

use crate::error::{A2aError, Kind};
use crate::hub::Hub;

/// Push configurations one task may hold; one more is refused (`InvalidParams`).
pub const MAX_CONFIGS_PER_TASK: usize = 16;
/// Webhook destinations delivered to at once; within one destination, one at a time.
const PARALLEL_DESTINATIONS: usize = 16;

/// Where webhooks may go and how hard to try.
#[derive(Debug, Clone, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PushSettings {
    /// Allow loopback destinations (127.0.0.0/8, ::1, `localhost`): tests and the TCK only.
    pub allow_loopback: bool,
    /// Allow RFC 1918 / unique-local / link-local destinations.
    pub allow_private: bool,
    /// When non-empty, only these host names (exact match) are allowed.
    pub allowed_hosts: Vec<String>,
    /// How long one delivery POST may take.
    pub timeout_ms: u64,
    /// POSTs of one event before it is given up; a failed one is retried with backoff (1 s,
    /// doubling, at most 64 s) until a 2xx.
    pub max_attempts: i32,
    /// 64 hex characters: the key sealing webhook credentials at rest (shared by replicas).
    /// Empty: `<data_dir>/a2a-push-key`, generated once.
    pub credentials_key: switchyard_contract::Secret,
}

impl Default for PushSettings {
    fn default() -> Self {
        Self {
            allow_loopback: false,
            allow_private: false,
            allowed_hosts: Vec::new(),
            timeout_ms: 10_000,
            max_attempts: 8,
            credentials_key: switchyard_contract::Secret::default(),
        }
    }
}

fn refused(url: &str, why: &str) -> A2aError {
    A2aError::invalid_params(format!("push notification url `{url}` is not allowed: {why}"))
}

/// The IPv4 address an IPv6 address carries, for the forms that reach an IPv4 host: mapped
/// (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::/96` and the local-use `64:ff9b:1::/48`) and 6to4
/// (`2002:aabb:ccdd::/16`).
fn embedded_v4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| std::net::Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if let Some(mapped) = v6.to_ipv4_mapped() {
        Some(mapped)
    } else if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || s[..3] == [0x64, 0xff9b, 1] {
        Some(v4(s[6], s[7]))
    } else if s[0] == 0x2002 {
        Some(v4(s[1], s[2]))
    } else {
        None
    }
}

fn v4_private(v4: std::net::Ipv4Addr) -> bool {
    let [a, b, c, _] = v4.octets();
    v4.is_private()
        || v4.is_link_local()
        || v4.is_broadcast()
        || v4.is_multicast()
        || a == 0 // "this network" (0.0.0.0/8), the unspecified address among them
        || (a == 100 && (64..128).contains(&b)) // shared address space (RFC 6598)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking (RFC 2544)
        || a >= 240 // reserved (240.0.0.0/4)
}

fn ip_allowed(ip: IpAddr, s: &PushSettings) -> Result<(), &'static str> {
    // An IPv6 address that carries an IPv4 one is judged as that IPv4 address.
    let ip = match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    let loopback = ip.is_loopback();
    let private = match ip {
        IpAddr::V4(v4) => v4_private(v4),
        IpAddr::V6(v6) => {
            let seg = v6.segments()[0];
            (seg & 0xfe00) == 0xfc00 // unique local
                || (seg & 0xffc0) == 0xfe80 // link local
                || (seg == 0x2001 && v6.segments()[1] == 0) // Teredo (carries an obfuscated IPv4)
                || v6.is_unspecified()
                || v6.is_multicast()
        }
    };
    if loopback && !s.allow_loopback {
        return Err("loopback destinations are not allowed (a2a.push.allow_loopback)");
    }
    if private && !s.allow_private {
        return Err("private, link-local, shared and reserved destinations are not allowed (a2a.push.allow_private)");
    }
    Ok(())
}

/// Resolves webhook host names, keeping only the addresses the settings allow: the check and
/// the connection use the same answer.
#[derive(Debug)]
struct GuardedResolver(PushSettings);

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let settings = self.0.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let all: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<_> = all.iter().copied().filter(|a| ip_allowed(a.ip(), &settings).is_ok()).collect();
            if allowed.is_empty() {
                let why = all.first().map_or("no addresses", |a| ip_allowed(a.ip(), &settings).err().unwrap_or(""));
                return Err(format!("{host}: {why}").into());
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Checks a destination's form and literal address (host names are checked again after DNS).
pub fn check_url(url: &str, s: &PushSettings) -> Result<reqwest::Url, A2aError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| refused(url, &e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(refused(url, "only http and https are supported"));
    }
    let host = parsed.host_str().ok_or_else(|| refused(url, "no host"))?.to_string();
    if !s.allowed_hosts.is_empty() && !s.allowed_hosts.iter().any(|h| h.eq_ignore_ascii_case(&host)) {
        return Err(refused(url, "host is not in a2a.push.allowed_hosts"));
    }
    match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip_allowed(IpAddr::V4(ip), s).map_err(|why| refused(url, why))?,
        Some(url::Host::Ipv6(ip)) => ip_allowed(IpAddr::V6(ip), s).map_err(|why| refused(url, why))?,
        _ if host.eq_ignore_ascii_case("localhost") && !s.allow_loopback => {
            return Err(refused(url, "loopback destinations are not allowed (a2a.push.allow_loopback)"));
        }
        _ => {}
    }
    Ok(parsed)
}

/// Stores `cfg` on task `task_id` (its credentials sealed) and returns it as the caller gave it.
pub async fn store_config(
    hub: &Hub,
    task_id: &TaskId,
    mut cfg: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig, A2aError> {
    // Without an id, one derived from the task and the URL: storing the same configuration
    // again (a run driven twice, a retried create) replaces it instead of adding a twin.
    let id = cfg.id.clone().filter(|i| !i.is_empty()).unwrap_or_else(|| {
        use sha2::Digest as _;
        let d = sha2::Sha256::digest(format!("{task_id}\0{}", cfg.url).as_bytes());
        let mut b = [0u8; 16];
        b.copy_from_slice(&d[..16]);
        uuid::Builder::from_custom_bytes(b).into_uuid().to_string()
    });
    let existing = hub.store().push_configs(task_id).await?;
    if existing.len() >= MAX_CONFIGS_PER_TASK && !existing.iter().any(|(i, _)| *i == id) {
        return Err(A2aError::invalid_params(format!(
            "task `{task_id}` already has {MAX_CONFIGS_PER_TASK} push notification configs (the limit); delete one first"
        )));
    }
    cfg.id = Some(id.clone());
    cfg.task_id = task_id.to_string();
    let sealed = hub.sealer().seal_config(task_id, cfg.clone())?;
    let value = serde_json::to_value(&sealed).map_err(|e| A2aError::internal(e.to_string()))?;
    hub.store().put_push_config(task_id, &id, &value).await?;
    hub.sealer().open_config(task_id, cfg)
}

/// Delivers queued notifications until dropped.
pub async fn run(hub: Hub, outbox: Arc<dyn PushOutbox>, settings: PushSettings) {
    {
        let client = match reqwest::Client::builder()
            .timeout(Duration::from_millis(settings.timeout_ms))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(GuardedResolver(settings.clone()))
            .build()
        {
            Ok(c) => c,
            Err(e) => {
                warn!(error = %e, "push delivery disabled: cannot build an HTTP client");
                return;
            }
        };
        loop {
            // A claim outlasts one delivery's timeout; if this process dies holding it, another
            // replica delivers once it lapses (at least once). Times are the database's.
            let lease = i64::try_from(settings.timeout_ms).unwrap_or(i64::MAX).saturating_add(5_000);
            let due = match outbox.claim_deliveries(lease, 64).await {
                Ok(d) => d,
                Err(e) => {
                    warn!(error = %e, "push outbox unreadable; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            if due.is_empty() {
                let _ = tokio::time::timeout(Duration::from_secs(1), hub.push_bell.notified()).await;
                continue;
            }
            // One slow or silent webhook holds up only its own destination.
            let mut by_destination: Vec<(String, Vec<Delivery>)> = Vec::new();
            for d in due {
                let dest = destination(&d.config);
                match by_destination.iter_mut().find(|(k, _)| *k == dest) {
                    Some((_, list)) => list.push(d),
                    None => by_destination.push((dest, vec![d])),
                }
            }
            futures::stream::iter(by_destination)
                .for_each_concurrent(PARALLEL_DESTINATIONS, |(_, list)| {
                    let (hub, outbox, client, settings) = (&hub, &*outbox, &client, &settings);
                    async move {
                        for d in list {
                            deliver_one(hub, outbox, client, settings, d).await;
                        }
                    }
                })
                .await;
        }
    }
}

/// The scheme, host and port a delivery goes to.
fn destination(config: &serde_json::Value) -> String {
    let url = config.get("url").and_then(serde_json::Value::as_str).unwrap_or_default();
    reqwest::Url::parse(url).map_or_else(|_| url.to_string(), |u| u.origin().ascii_serialization())
}

/// One attempt at one delivery, and its bookkeeping in the outbox.
async fn deliver_one(
    hub: &Hub,
    outbox: &dyn PushOutbox,
    client: &reqwest::Client,
    settings: &PushSettings,
    d: Delivery,
) {
    let config = serde_json::from_value::<TaskPushNotificationConfig>(d.config.clone())
        .map_err(|e| e.to_string())
        .and_then(|c| hub.sealer().open_config(&d.task_id, c).map_err(|e| e.message));
    let outcome = match (hydrated(hub, &d.payload).await, config) {
        (Ok(payload), Ok(config)) => deliver(client, settings, &config, &payload).await.map_err(|e| e.0),
        (Err(e), _) => Err(e.message),
        (_, Err(e)) => Err(e),
    };
    let attempts = d.attempts + 1;
    let store = outbox;
    let done = match outcome {
        Ok(()) => {
            debug!(task.id = %d.task_id, config = %d.config_id, "push delivered");
            hub.stats.pushed(Ok(()));
            store.finish_delivery(d.id, None).await
        }
        Err(e) if attempts >= settings.max_attempts => {
            warn!(task.id = %d.task_id, config = %d.config_id, error = %e, attempts, "push delivery given up");
            hub.stats.pushed(Err(true));
            store.finish_delivery(d.id, Some(&e)).await
        }
        Err(e) => {
            let backoff = 500_i64.saturating_mul(1 << attempts.clamp(0, 7));
            debug!(task.id = %d.task_id, error = %e, attempts, "push delivery failed; will retry");
            hub.stats.pushed(Err(false));
            store.retry_delivery(d.id, backoff, &e).await
        }
    };
    if let Err(e) = done {
        warn!(error = %e, "push outbox update failed");
    }
}

/// The payload with kept artifact parts turned back into bytes.
async fn hydrated(hub: &Hub, payload: &serde_json::Value) -> Result<serde_json::Value, A2aError> {
    let mut ev: a2a::StreamResponse =
        serde_json::from_value(payload.clone()).map_err(|e| A2aError::internal(format!("stored event: {e}")))?;
    // The outbox holds the gateway's own copy of the task's event (an agent's references into
    // the artifact store are neutralized when mirrored), so no other tenant's artifact is named.
    hub.hydrate_event(None, &mut ev).await?;
    serde_json::to_value(&ev).map_err(|e| A2aError::internal(e.to_string()))
}

/// Why one POST to a webhook did not deliver.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct DeliveryError(String);

impl From<String> for DeliveryError {
    fn from(s: String) -> Self {
        Self(s)
    }
}

async fn deliver(
    client: &reqwest::Client,
    s: &PushSettings,
    cfg: &TaskPushNotificationConfig,
    payload: &serde_json::Value,
) -> Result<(), DeliveryError> {
    // Literal addresses are checked here; names by the client's resolver when connecting.
    let url = check_url(&cfg.url, s).map_err(|e| e.message)?;
    let mut req =
        client.post(url).header(reqwest::header::CONTENT_TYPE, "application/a2a+json").body(payload.to_string());
    if let Some(auth) = &cfg.authentication {
        let value = match &auth.credentials {
            Some(c) => format!("{} {c}", auth.scheme),
            None => auth.scheme.clone(),
        };
        req = req.header(reqwest::header::AUTHORIZATION, value);
    }
    if let Some(token) = &cfg.token {
        req = req.header("X-A2A-Notification-Token", token);
    }
    let resp = req.send().await.map_err(|e| e.to_string())?;
    if resp.status().is_success() { Ok(()) } else { Err(format!("webhook answered {}", resp.status()).into()) }
}

/// The error for push operations on an agent without push support.
pub fn not_supported() -> A2aError {
    A2aError::new(Kind::PushNotificationNotSupported, "this agent does not support push notifications")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_resolver_drops_forbidden_addresses() {
        use reqwest::dns::Resolve;
        let name = || "localhost".parse::<reqwest::dns::Name>().unwrap_or_else(|_| panic!("name"));
        assert!(GuardedResolver(PushSettings::default()).resolve(name()).await.is_err(), "only loopback there");
        let open = GuardedResolver(PushSettings { allow_loopback: true, ..PushSettings::default() });
        let addrs: Vec<_> = open.resolve(name()).await.map(Iterator::collect::<Vec<_>>).unwrap_or_default();
        assert!(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()));
    }

    #[test]
    fn destinations_are_checked() {
        let strict = PushSettings::default();
        assert!(check_url("https://hooks.example.com/x", &strict).is_ok());
        for public in [
            "http://93.184.215.14/",
            "http://[64:ff9b::5db8:d70e]/",
            "http://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/",
        ] {
            assert!(check_url(public, &strict).is_ok(), "{public} is public");
        }
        for bad in [
            "http://127.0.0.1:9/x",
            "http://localhost/x",
            "http://10.1.2.3/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:10.0.0.1]/",
            "http://100.64.0.1/",
            "http://169.254.169.254/",
            "http://0.0.0.0:80/",
            "http://0.1.2.3/",
            "http://198.18.0.1/",
            "http://198.19.255.1/",
            "http://240.0.0.1/",
            "http://255.255.255.255/",
            "http://192.0.0.8/",
            "http://[64:ff9b::7f00:1]/",
            "http://[64:ff9b::a00:1]/",
            "http://[64:ff9b:1::a9fe:a9fe]/",
            "http://[2002:7f00:1::]/",
            "http://[2002:c0a8:101::1]/",
            "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            "ftp://x/",
        ] {
            assert!(check_url(bad, &strict).is_err(), "{bad} must be refused");
        }
        let tests = PushSettings { allow_loopback: true, ..PushSettings::default() };
        assert!(check_url("http://127.0.0.1:9/x", &tests).is_ok());
        assert!(check_url("http://192.168.0.1/x", &tests).is_err());
        assert!(check_url("http://[::1]:8/x", &tests).is_ok(), "IPv6 literals parse");
        let listed = PushSettings { allowed_hosts: vec!["a.example".into()], ..PushSettings::default() };
        assert!(check_url("https://b.example/", &listed).is_err());
    }
}
