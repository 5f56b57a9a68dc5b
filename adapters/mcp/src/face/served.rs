//! What every answer of the face carries in the client's era, whatever upstream it came from: a
//! 2026-07-28 client gets the gateway's own `io.modelcontextprotocol/serverInfo` in each
//! result's `_meta` (results SHOULD carry it; the upstream's was taken out where the result was
//! forwarded), and a legacy client never sees the caching hints (`ttlMs`, `cacheScope`) that
//! only 2026-07-28 defines. (rmcp itself fills the hints in for modern peers and takes
//! `resultType` out for legacy ones.)
//!
//! `modern` is the gateway's identity when the client speaks 2026-07-28 ([`McpFace::era`]), and
//! `None` for a legacy client.
//!
//! [`McpFace::era`]: super::McpFace

use rmcp::model::{CacheScope, CallToolResponse, GetPromptResponse, Implementation, MetaObject, ReadResourceResponse};

use crate::client::SERVER_INFO_META;

/// Puts the gateway's identity into a 2026-07-28 result's `_meta`.
pub(super) fn stamp(meta: &mut Option<MetaObject>, modern: Option<&Implementation>) {
    if let Some(info) = modern.and_then(|server| serde_json::to_value(server).ok()) {
        meta.get_or_insert_with(MetaObject::new).0.insert(SERVER_INFO_META.into(), info);
    }
}

/// Takes the caching hints out of a result for a legacy client.
pub(super) fn hints(ttl: &mut Option<u64>, scope: &mut Option<CacheScope>, modern: Option<&Implementation>) {
    if modern.is_none() {
        (*ttl, *scope) = (None, None);
    }
}

/// A result with `_meta` and caching hints (the lists and resources/read), in the client's era.
macro_rules! in_era {
    ($r:expr, $modern:expr) => {{
        let mut r = $r;
        $crate::face::served::stamp(&mut r.meta, $modern);
        $crate::face::served::hints(&mut r.ttl_ms, &mut r.cache_scope, $modern);
        r
    }};
}
pub(super) use in_era;

pub(super) fn call(mut r: CallToolResponse, modern: Option<&Implementation>) -> CallToolResponse {
    let meta = match &mut r {
        CallToolResponse::Complete(c) => &mut c.meta,
        CallToolResponse::InputRequired(i) => &mut i.meta,
        CallToolResponse::Task(t) => &mut t.meta,
        _ => return r,
    };
    stamp(meta, modern);
    r
}

pub(super) fn prompt(mut r: GetPromptResponse, modern: Option<&Implementation>) -> GetPromptResponse {
    let meta = match &mut r {
        GetPromptResponse::Complete(c) => &mut c.meta,
        GetPromptResponse::InputRequired(i) => &mut i.meta,
        _ => return r,
    };
    stamp(meta, modern);
    r
}

pub(super) fn read(r: ReadResourceResponse, modern: Option<&Implementation>) -> ReadResourceResponse {
    match r {
        ReadResourceResponse::Complete(c) => ReadResourceResponse::Complete(in_era!(c, modern)),
        ReadResourceResponse::InputRequired(mut i) => {
            stamp(&mut i.meta, modern);
            ReadResourceResponse::InputRequired(i)
        }
        other => other,
    }
}
