//! One decoded A2A request: the eleven operations as one enum, whatever the binding.

use a2a::{
    CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest, ListTasksRequest,
    SendMessageRequest, SubscribeToTaskRequest, TaskPushNotificationConfig,
};
use serde_json::Value;

use crate::error::A2aError;

/// One decoded request.
#[derive(Debug, Clone)]
pub enum Operation {
    SendMessage(SendMessageRequest),
    SendStreamingMessage(SendMessageRequest),
    GetTask(GetTaskRequest),
    ListTasks(ListTasksRequest),
    CancelTask(CancelTaskRequest),
    SubscribeToTask(SubscribeToTaskRequest),
    CreatePushConfig(TaskPushNotificationConfig),
    GetPushConfig(GetTaskPushNotificationConfigRequest),
    ListPushConfigs(ListTaskPushNotificationConfigsRequest),
    DeletePushConfig(DeleteTaskPushNotificationConfigRequest),
    GetExtendedAgentCard(GetExtendedAgentCardRequest),
}

impl Operation {
    /// What the policy enforcement point decides this operation by, when it is not a message
    /// (which is a run of its own) or the card (public): the task it names (and the push
    /// configuration's id), never a webhook's credentials. `None` for those others.
    pub fn decided_by(&self) -> Option<Value> {
        let task = |id: &str| serde_json::json!({ "taskId": id });
        let config = |task_id: &str, id: &str| serde_json::json!({ "taskId": task_id, "id": id });
        Some(match self {
            Self::SendMessage(_) | Self::SendStreamingMessage(_) | Self::GetExtendedAgentCard(_) => return None,
            Self::GetTask(r) => task(&r.id),
            Self::CancelTask(r) => task(&r.id),
            Self::SubscribeToTask(r) => task(&r.id),
            Self::ListTasks(r) => serde_json::json!({ "contextId": r.context_id }),
            Self::CreatePushConfig(r) => task(&r.task_id),
            Self::GetPushConfig(r) => config(&r.task_id, &r.id),
            Self::ListPushConfigs(r) => task(&r.task_id),
            Self::DeletePushConfig(r) => config(&r.task_id, &r.id),
        })
    }

    /// The operation's A2A method name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::SendMessage(_) => "SendMessage",
            Self::SendStreamingMessage(_) => "SendStreamingMessage",
            Self::GetTask(_) => "GetTask",
            Self::ListTasks(_) => "ListTasks",
            Self::CancelTask(_) => "CancelTask",
            Self::SubscribeToTask(_) => "SubscribeToTask",
            Self::CreatePushConfig(_) => "CreateTaskPushNotificationConfig",
            Self::GetPushConfig(_) => "GetTaskPushNotificationConfig",
            Self::ListPushConfigs(_) => "ListTaskPushNotificationConfigs",
            Self::DeletePushConfig(_) => "DeleteTaskPushNotificationConfig",
            Self::GetExtendedAgentCard(_) => "GetExtendedAgentCard",
        }
    }

    /// Decodes JSON-RPC `params` (or an HTTP+JSON body) for `method`. `Ok(None)`: no such method.
    pub fn decode(method: &str, params: Value) -> Result<Option<Self>, A2aError> {
        fn de<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, A2aError> {
            serde_json::from_value(v).map_err(|e| A2aError::invalid_params(format!("invalid params: {e}")))
        }
        let params = if params.is_null() { Value::Object(Default::default()) } else { camelize(params) };
        if !params.is_object() {
            return Err(A2aError::invalid_params("params must be an object"));
        }
        Ok(Some(match method {
            "SendMessage" => Self::SendMessage(de(params)?),
            "SendStreamingMessage" => Self::SendStreamingMessage(de(params)?),
            "GetTask" => Self::GetTask(de(params)?),
            "ListTasks" => Self::ListTasks(de(params)?),
            "CancelTask" => Self::CancelTask(de(params)?),
            "SubscribeToTask" => Self::SubscribeToTask(de(params)?),
            "CreateTaskPushNotificationConfig" => Self::CreatePushConfig(de(params)?),
            "GetTaskPushNotificationConfig" => Self::GetPushConfig(de(params)?),
            "ListTaskPushNotificationConfigs" => Self::ListPushConfigs(de(params)?),
            "DeleteTaskPushNotificationConfig" => Self::DeletePushConfig(de(params)?),
            "GetExtendedAgentCard" => Self::GetExtendedAgentCard(de(params)?),
            _ => return Ok(None),
        }))
    }

    pub fn is_streaming(&self) -> bool {
        matches!(self, Self::SendStreamingMessage(_) | Self::SubscribeToTask(_))
    }
}

/// ProtoJSON parsers accept a field's proto name as well as its lowerCamel JSON name: rewrites
/// `task_id` to `taskId` in message fields, leaving user data (`metadata`, `data`, `params`:
/// `google.protobuf.Struct`/`Value` contents) untouched.
fn camelize(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let key = if k.contains('_') {
                        let mut out = String::with_capacity(k.len());
                        let mut up = false;
                        for c in k.chars() {
                            if c == '_' {
                                up = true;
                            } else if up {
                                out.extend(c.to_uppercase());
                                up = false;
                            } else {
                                out.push(c);
                            }
                        }
                        out
                    } else {
                        k
                    };
                    let v = if matches!(key.as_str(), "metadata" | "data" | "params") { v } else { camelize(v) };
                    (key, v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(camelize).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Kind;

    #[test]
    fn proto_field_names_are_accepted_but_user_data_is_not_rewritten() {
        let v = camelize(
            serde_json::json!({"task_id": "t", "metadata": {"a_b": 1}, "message": {"message_id": "m", "parts": [{"data": {"x_y": 2}}]}}),
        );
        assert_eq!(
            v,
            serde_json::json!({"taskId": "t", "metadata": {"a_b": 1}, "message": {"messageId": "m", "parts": [{"data": {"x_y": 2}}]}})
        );
    }

    #[test]
    fn unknown_methods_and_bad_params() {
        assert!(matches!(Operation::decode("message/send", Value::Null), Ok(None)));
        assert_eq!(
            Operation::decode("GetTask", serde_json::json!([1])).map(|_| ()).map_err(|e| e.kind),
            Err(Kind::InvalidParams)
        );
        assert_eq!(
            Operation::decode("GetTask", serde_json::json!({})).map(|_| ()).map_err(|e| e.kind),
            Err(Kind::InvalidParams)
        );
        assert!(matches!(Operation::decode("GetExtendedAgentCard", Value::Null), Ok(Some(_))));
    }
}
