//! DNS-rebinding and cross-site protection for the A2A HTTP bindings, the same rule `/mcp`
//! applies: the request's `Host` must be a loopback name, the host of `a2a.public_url`, or one of
//! `a2a.allowed_hosts`; a browser's `Origin`, when sent, must be a loopback origin (any port),
//! the origin of `a2a.public_url`, or one of `a2a.allowed_origins`. Without this, a web page in
//! the operator's browser could post messages to an anonymous loopback gateway.

use axum::http::{HeaderMap, Uri, header};

use crate::config::A2aConfig;
use crate::error::{A2aError, Kind};

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
const LOOPBACK_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// The hosts and origins a request may name.
#[derive(Debug, Clone)]
pub struct Allowlist {
    hosts: Vec<String>,
    /// `scheme://host[:port]`, or `scheme://host:*` for any port.
    origins: Vec<String>,
}

impl Allowlist {
    pub fn new(cfg: &A2aConfig) -> Self {
        let public = cfg.public_url.as_deref().and_then(|u| u.parse::<Uri>().ok());
        let public_host = public.as_ref().and_then(Uri::host).map(|h| h.trim_matches(['[', ']']).to_string());
        let public_origin = public.as_ref().and_then(|u| Some(format!("{}://{}", u.scheme_str()?, u.authority()?)));
        let hosts = LOOPBACK_HOSTS.iter().map(|h| (*h).to_string()).chain(public_host).chain(cfg.allowed_hosts.clone());
        let origins =
            LOOPBACK_ORIGINS.iter().map(|o| (*o).to_string()).chain(public_origin).chain(cfg.allowed_origins.clone());
        Self { hosts: hosts.map(|h| h.to_ascii_lowercase()).collect(), origins: origins.collect() }
    }

    /// `PermissionDenied` naming what to configure, or `Ok`.
    pub fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), A2aError> {
        let authority = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_string)
            .or_else(|| uri.authority().map(ToString::to_string));
        let host = authority.as_deref().map(host_of).unwrap_or_default().to_ascii_lowercase();
        if !self.hosts.contains(&host) {
            return Err(A2aError::new(
                Kind::PermissionDenied,
                format!("Host `{host}` is not allowed: add it to a2a.allowed_hosts (or set a2a.public_url)"),
            ));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("null");
            if !self.origins.iter().any(|pattern| origin_matches(pattern, origin)) {
                return Err(A2aError::new(
                    Kind::PermissionDenied,
                    format!("Origin `{origin}` is not allowed: add it to a2a.allowed_origins"),
                ));
            }
        }
        Ok(())
    }
}

/// The host of an authority (`h`, `h:port`, `[v6]`, `[v6]:port`), without brackets.
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(h, _)| h);
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { authority })
}

fn origin_matches(pattern: &str, origin: &str) -> bool {
    match pattern.strip_suffix(":*") {
        Some(base) => {
            origin.eq_ignore_ascii_case(base)
                || origin.get(..base.len()).is_some_and(|p| p.eq_ignore_ascii_case(base))
                    && origin[base.len()..]
                        .strip_prefix(':')
                        .is_some_and(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
        }
        None => origin.eq_ignore_ascii_case(pattern),
    }
}

/// Whether the `Content-Type` is exactly a JSON media type A2A accepts (parameters such as
/// `charset` aside): `application/json` or `application/a2a+json`.
pub fn json_content(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|ct| {
        let media = ct.split(';').next().unwrap_or_default().trim();
        media.eq_ignore_ascii_case("application/json") || media.eq_ignore_ascii_case("application/a2a+json")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn hosts_and_origins_follow_the_allowlist() {
        let cfg = A2aConfig {
            public_url: Some("https://agents.example.com".into()),
            allowed_hosts: vec!["gw.internal".into()],
            allowed_origins: vec!["https://console.example.com".into()],
            ..A2aConfig::default()
        };
        let list = Allowlist::new(&cfg);
        let uri = Uri::from_static("/a2a/echo");
        for ok in [
            vec![("host", "127.0.0.1:8787")],
            vec![("host", "localhost")],
            vec![("host", "[::1]:9")],
            vec![("host", "agents.example.com")],
            vec![("host", "GW.internal:443")],
            vec![("host", "127.0.0.1:8787"), ("origin", "http://localhost:3000")],
            vec![("host", "agents.example.com"), ("origin", "https://agents.example.com")],
            vec![("host", "agents.example.com"), ("origin", "https://console.example.com")],
        ] {
            assert!(list.check(&headers(&ok), &uri).is_ok(), "{ok:?}");
        }
        for bad in [
            vec![("host", "attacker.example")],
            vec![("host", "127.0.0.1.nip.io:8787")],
            vec![],
            vec![("host", "127.0.0.1:8787"), ("origin", "https://attacker.example")],
            vec![("host", "127.0.0.1:8787"), ("origin", "null")],
            vec![("host", "127.0.0.1:8787"), ("origin", "http://localhost:80x")],
            vec![("host", "127.0.0.1:8787"), ("origin", "http://localhost.attacker.example:80")],
        ] {
            let e = list.check(&headers(&bad), &uri).err();
            assert_eq!(e.map(|e| e.kind), Some(Kind::PermissionDenied), "{bad:?}");
        }
        // HTTP/2 without a Host header: the URI's authority counts.
        assert!(list.check(&HeaderMap::new(), &Uri::from_static("http://127.0.0.1:1/a2a/echo")).is_ok());
    }

    #[test]
    fn only_exact_json_media_types_are_json() {
        for ok in ["application/json", "application/json; charset=utf-8", "Application/A2A+JSON"] {
            assert!(json_content(&headers(&[("content-type", ok)])), "{ok}");
        }
        for bad in ["text/plain; x=application/json", "application/jsonx", "text/plain", "multipart/form-data"] {
            assert!(!json_content(&headers(&[("content-type", bad)])), "{bad}");
        }
    }
}
