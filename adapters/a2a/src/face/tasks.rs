//! ListTasks (keyset pages, newest status first) and CancelTask.

use super::*;

impl A2aFace {
    pub(super) async fn list(
        &self,
        agent: &AgentEntry,
        who: &Caller,
        req: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2aError> {
        check_history(req.history_length)?;
        let size = match req.page_size {
            None | Some(0) => PAGE_DEFAULT,
            Some(n) if (1..=PAGE_MAX).contains(&n) => n,
            Some(n) => return Err(A2aError::invalid_params(format!("pageSize must be 1-{PAGE_MAX}, got {n}"))),
        };
        let after = match req.page_token.as_deref().filter(|t| !t.is_empty()) {
            None => None,
            Some(t) => Some(decode_token(t).ok_or_else(|| A2aError::invalid_params("invalid pageToken"))?),
        };
        let query = TaskQuery {
            scope: Self::scope(who, req.tenant.as_ref()),
            agent: agent.config.name.clone(),
            context_id: req.context_id.as_deref().filter(|c| !c.is_empty()).map(ContextId::from),
            state: req.status.as_ref().filter(|s| **s != TaskState::Unspecified).map(hub::stored_state),
            status_after_ms: req.status_timestamp_after.map(|t| t.timestamp_millis()),
            after,
            limit: u32::try_from(size).unwrap_or(50) + 1,
        };
        let (mut rows, total) = self.hub.store().list(&query).await?;
        let more = rows.len() > usize::try_from(size).unwrap_or(50);
        rows.truncate(usize::try_from(size).unwrap_or(50));
        let next = if more {
            rows.last().map(|r| encode_token(r.status_ms, &r.id)).unwrap_or_default()
        } else {
            String::new()
        };
        let mut tasks = Vec::with_capacity(rows.len());
        for r in &rows {
            let mut t = slice_history(task_of(r)?, req.history_length);
            if req.include_artifacts != Some(true) {
                t.artifacts = None;
            }
            tasks.push(t);
        }
        Ok(ListTasksResponse {
            tasks,
            next_page_token: next,
            page_size: size,
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
        })
    }

    pub(super) async fn cancel(
        &self,
        agent: &AgentEntry,
        who: &Caller,
        req: CancelTaskRequest,
    ) -> Result<Task, A2aError> {
        let (_, rec) = self.callers_task(agent, who, req.tenant.as_ref(), &req.id).await?;
        let proxy = self.proxies.get(&agent.config.name).map(Arc::as_ref);
        crate::cancel::cancel_task(&self.hub, proxy, self.engine.as_ref(), &who.principal, &rec).await
    }
}

fn encode_token(ms: i64, id: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{ms}:{id}"))
}

fn decode_token(t: &str) -> Option<(i64, TaskId)> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(t).ok()?;
    let s = String::from_utf8(raw).ok()?;
    let (ms, id) = s.split_once(':')?;
    Some((ms.parse().ok()?, TaskId::from(id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_tokens_round_trip_and_garbage_is_refused() {
        let t = encode_token(1_700_000_000_123, "abc-def");
        assert_eq!(decode_token(&t), Some((1_700_000_000_123, TaskId::from("abc-def"))));
        assert_eq!(decode_token("!!"), None);
    }
}
