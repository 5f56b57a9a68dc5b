//! `switchyard-oauth`: the gateway as an OAuth 2.0 protected resource.
//!
//! An [`Authenticator`] turns a bearer credential into a [`Caller`] (a contract `Principal`
//! plus granted scopes): JWT access tokens from pinned issuers (discovery, JWKS cached with
//! rotation, an algorithm allowlist, `aud` = the gateway's resource URI, bounded clock skew),
//! opaque tokens through RFC 7662 introspection, static API keys stored as SHA-256 hashes, or anonymous access where configured (loopback
//! only). [`http`] renders RFC 9728 metadata and the `401`/`403` challenges. Start at
//! [`Authenticator::authenticate`].

mod config;
mod error;
pub mod http;
mod introspect;
mod jwks;
mod validate;

pub use config::{AnonymousConfig, ApiKeyConfig, AuthConfig, IntrospectionConfig, IssuerConfig, Secret};
pub use error::AuthError;
pub use validate::{Authenticator, Caller, Method};
