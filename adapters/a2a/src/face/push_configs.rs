//! The push-notification-config operations of a task: create (destination checked, credentials
//! sealed), get, list (paged) and delete. A webhook's credentials are write-only: kept sealed for
//! deliveries, never returned (every answer carries the scheme without them).

use a2a::{
    DeleteTaskPushNotificationConfigRequest, GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
};

use super::*;

impl A2aFace {
    pub(super) async fn create_push_config(
        &self,
        agent: &AgentEntry,
        who: &Caller,
        req: TaskPushNotificationConfig,
    ) -> Result<Reply, A2aError> {
        let (_, rec) = self.callers_task(agent, who, req.tenant.as_ref(), &req.task_id).await?;
        push::check_url(&req.url, &self.config.push)?;
        Ok(Reply::PushConfig(without_credentials(push::store_config(&self.hub, &rec.id, req).await?)))
    }

    pub(super) async fn get_push_config(
        &self,
        agent: &AgentEntry,
        who: &Caller,
        req: GetTaskPushNotificationConfigRequest,
    ) -> Result<Reply, A2aError> {
        let (_, rec) = self.callers_task(agent, who, req.tenant.as_ref(), &req.task_id).await?;
        let found = self.push_configs(&rec.id).await?.into_iter().find(|c| c.id.as_deref() == Some(&req.id));
        found.map(|c| Reply::PushConfig(without_credentials(c))).ok_or_else(|| {
            A2aError::new(Kind::TaskNotFound, format!("push config `{}` not found on task `{}`", req.id, req.task_id))
        })
    }

    pub(super) async fn list_push_configs(
        &self,
        agent: &AgentEntry,
        who: &Caller,
        req: ListTaskPushNotificationConfigsRequest,
    ) -> Result<Reply, A2aError> {
        let (_, rec) = self.callers_task(agent, who, req.tenant.as_ref(), &req.task_id).await?;
        let all = self.push_configs(&rec.id).await?;
        let size = match req.page_size {
            None | Some(0) => 100,
            Some(n) if (1..=PAGE_MAX).contains(&n) => usize::try_from(n).unwrap_or(100),
            Some(_) => return Err(A2aError::invalid_params("pageSize must be 1-100")),
        };
        let start = match req.page_token.as_deref().filter(|t| !t.is_empty()) {
            None => 0,
            Some(t) => t.parse::<usize>().map_err(|_| A2aError::invalid_params("invalid pageToken"))?,
        };
        let page: Vec<_> = all.iter().skip(start).take(size).cloned().map(without_credentials).collect();
        let next = (start + page.len() < all.len()).then(|| (start + page.len()).to_string());
        Ok(Reply::PushConfigs(ListTaskPushNotificationConfigsResponse { configs: page, next_page_token: next }))
    }

    pub(super) async fn delete_push_config(
        &self,
        agent: &AgentEntry,
        who: &Caller,
        req: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<Reply, A2aError> {
        let (_, rec) = self.callers_task(agent, who, req.tenant.as_ref(), &req.task_id).await?;
        self.hub.store().delete_push_config(&rec.id, &req.id).await?;
        Ok(Reply::Empty)
    }

    /// The task's push configs as stored (credentials opened, for deliveries and to be dropped
    /// from answers).
    pub(super) async fn push_configs(&self, task_id: &TaskId) -> Result<Vec<TaskPushNotificationConfig>, A2aError> {
        self.hub
            .store()
            .push_configs(task_id)
            .await?
            .into_iter()
            .map(|(_, v)| {
                let cfg = serde_json::from_value(v).map_err(|e| A2aError::internal(e.to_string()))?;
                self.hub.sealer().open_config(task_id, cfg)
            })
            .collect()
    }
}

/// `cfg` as answered: its authentication scheme without the credentials.
fn without_credentials(mut cfg: TaskPushNotificationConfig) -> TaskPushNotificationConfig {
    if let Some(auth) = cfg.authentication.as_mut() {
        auth.credentials = None;
    }
    cfg
}
