//! Legacy (2025-11-25) sessions belong to the principal that opened them. rmcp keys a session
//! by its `Mcp-Session-Id` alone; this layer remembers who received each id and answers a
//! request that names someone else's session — or a session it does not know — as MCP answers
//! for an unknown session (404), before rmcp sees it; a closed session's `DELETE` answers `200`.
//! Stateless (2026-07-28) requests carry no session id and pass through.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use switchyard_contract::Principal;

const SESSION_HEADER: &str = "mcp-session-id";
/// Sessions remembered; beyond it the oldest is forgotten, and its id stops working (closed,
/// not opened up).
const MAX_SESSIONS: usize = 100_000;

/// Who opened each session.
#[derive(Debug, Default)]
pub struct SessionOwners(Mutex<(HashMap<String, Principal>, VecDeque<String>)>);

impl SessionOwners {
    fn owner(&self, id: &str) -> Option<Principal> {
        self.0.lock().ok().and_then(|m| m.0.get(id).cloned())
    }

    fn bind(&self, id: String, who: Principal) {
        if let Ok(mut m) = self.0.lock() {
            let (owners, order) = &mut *m;
            if owners.insert(id.clone(), who).is_none() {
                order.push_back(id);
            }
            while order.len() > MAX_SESSIONS {
                if let Some(old) = order.pop_front() {
                    owners.remove(&old);
                }
            }
        }
    }

    fn forget(&self, id: &str) {
        if let Ok(mut m) = self.0.lock() {
            m.0.remove(id);
            m.1.retain(|s| s != id);
        }
    }
}

/// The middleware (behind authentication, in front of rmcp).
pub async fn bind(State(owners): State<Arc<SessionOwners>>, req: Request, next: Next) -> Response {
    let who = req.extensions().get::<Principal>().cloned();
    let session = req.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let closing = req.method() == Method::DELETE;
    if let Some(id) = &session
        && (who.is_none() || owners.owner(id) != who)
    {
        return (StatusCode::NOT_FOUND, "session not found").into_response();
    }
    let resp = next.run(req).await;
    match (&session, resp.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()), who) {
        (None, Some(new), Some(who)) => owners.bind(new.to_string(), who),
        (Some(id), _, _) if closing && resp.status().is_success() => {
            owners.forget(id);
            // rmcp answers `202 Accepted`, which clients (the Python SDK) take for a failed
            // termination: the session is closed, so say so.
            return StatusCode::OK.into_response();
        }
        _ => {}
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_session_is_forgotten_beyond_the_limit() {
        let owners = SessionOwners::default();
        let who = Principal::new(switchyard_contract::TenantId::new("t").unwrap(), "s");
        for i in 0..=MAX_SESSIONS {
            owners.bind(format!("s{i}"), who.clone());
        }
        assert!(owners.owner("s0").is_none());
        assert_eq!(owners.owner(&format!("s{MAX_SESSIONS}")), Some(who));
        owners.forget("s1");
        assert!(owners.owner("s1").is_none());
    }
}
