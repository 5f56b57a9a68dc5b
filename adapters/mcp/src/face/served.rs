//! What every answer of the face carries in the client's era, whatever upstream it came from: a
//! 2026-07-28 client gets the gateway's own `io.modelcontextprotocol/serverInfo` in each
//! result's `_meta` (results SHOULD carry it; the upstream's was taken out where the result was
//! forwarded), and a legacy client never sees the caching hints (`ttlMs`, `cacheScope`) that
//! only 2026-07-28 defines. (rmcp itself fills the hints in for modern peers and takes
//! `resultType` out for legacy ones.)

use rmcp::RoleServer;
use rmcp::model::{CacheScope, CallToolResponse, GetPromptResponse, Implementation, MetaObject, ReadResourceResponse};
use rmcp::service::RequestContext;

use super::modern;

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Puts the gateway's identity into a 2026-07-28 result's `_meta`.
pub(super) fn stamp(meta: &mut Option<MetaObject>, server: &Implementation, ctx: &RequestContext<RoleServer>) {
    if modern(ctx)
        && let Ok(info) = serde_json::to_value(server)
    {
        meta.get_or_insert_with(MetaObject::new).0.insert(SERVER_INFO.into(), info);
    }
}

/// Takes the caching hints out of a result for a legacy client.
pub(super) fn hints(ttl: &mut Option<u64>, scope: &mut Option<CacheScope>, ctx: &RequestContext<RoleServer>) {
    if !modern(ctx) {
        (*ttl, *scope) = (None, None);
    }
}

/// A result with `_meta` and caching hints (the lists and resources/read), in the client's era.
macro_rules! in_era {
    ($r:expr, $server:expr, $ctx:expr) => {{
        let mut r = $r;
        $crate::face::served::stamp(&mut r.meta, $server, $ctx);
        $crate::face::served::hints(&mut r.ttl_ms, &mut r.cache_scope, $ctx);
        r
    }};
}
pub(super) use in_era;

pub(super) fn call(
    mut r: CallToolResponse,
    server: &Implementation,
    ctx: &RequestContext<RoleServer>,
) -> CallToolResponse {
    match &mut r {
        CallToolResponse::Complete(c) => stamp(&mut c.meta, server, ctx),
        CallToolResponse::InputRequired(i) => stamp(&mut i.meta, server, ctx),
        CallToolResponse::Task(t) => stamp(&mut t.meta, server, ctx),
        _ => {}
    }
    r
}

pub(super) fn prompt(
    mut r: GetPromptResponse,
    server: &Implementation,
    ctx: &RequestContext<RoleServer>,
) -> GetPromptResponse {
    match &mut r {
        GetPromptResponse::Complete(c) => stamp(&mut c.meta, server, ctx),
        GetPromptResponse::InputRequired(i) => stamp(&mut i.meta, server, ctx),
        _ => {}
    }
    r
}

pub(super) fn read(
    r: ReadResourceResponse,
    server: &Implementation,
    ctx: &RequestContext<RoleServer>,
) -> ReadResourceResponse {
    match r {
        ReadResourceResponse::Complete(c) => ReadResourceResponse::Complete(in_era!(c, server, ctx)),
        ReadResourceResponse::InputRequired(mut i) => {
            stamp(&mut i.meta, server, ctx);
            ReadResourceResponse::InputRequired(i)
        }
        other => other,
    }
}
