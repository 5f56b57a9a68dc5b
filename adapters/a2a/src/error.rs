//! A2A errors and how each binding spells them. One table per binding, written out in full,
//! in two profiles: `spec` (A2A v1.0.1, PR #1627: the default) and `tck` (the v1.0.0 table the
//! 1.0 TCK hard-codes: 409/415/502 on HTTP, UNIMPLEMENTED for three errors on gRPC).

use serde::Deserialize;
use serde_json::{Value, json};

/// Which error table the bindings use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// A2A v1.0.1.
    #[default]
    Spec,
    /// A2A v1.0.0 as the 1.0 TCK checks it.
    Tck,
}

/// Every error the A2A face can answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    // A2A-specific (spec §5.4).
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
    // Standard classes.
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
    Unavailable,
    Unauthenticated,
    PermissionDenied,
    PayloadTooLarge,
}

/// gRPC status codes by name (tonic's numbering), kept here so the tables read as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrpcCode {
    InvalidArgument,
    NotFound,
    PermissionDenied,
    FailedPrecondition,
    ResourceExhausted,
    Unimplemented,
    Internal,
    Unavailable,
    Unauthenticated,
}

impl GrpcCode {
    pub fn name(self) -> &'static str {
        match self {
            Self::InvalidArgument => "INVALID_ARGUMENT",
            Self::NotFound => "NOT_FOUND",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::FailedPrecondition => "FAILED_PRECONDITION",
            Self::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Self::Unimplemented => "UNIMPLEMENTED",
            Self::Internal => "INTERNAL",
            Self::Unavailable => "UNAVAILABLE",
            Self::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    pub fn tonic(self) -> tonic::Code {
        match self {
            Self::InvalidArgument => tonic::Code::InvalidArgument,
            Self::NotFound => tonic::Code::NotFound,
            Self::PermissionDenied => tonic::Code::PermissionDenied,
            Self::FailedPrecondition => tonic::Code::FailedPrecondition,
            Self::ResourceExhausted => tonic::Code::ResourceExhausted,
            Self::Unimplemented => tonic::Code::Unimplemented,
            Self::Internal => tonic::Code::Internal,
            Self::Unavailable => tonic::Code::Unavailable,
            Self::Unauthenticated => tonic::Code::Unauthenticated,
        }
    }
}

impl Kind {
    /// `google.rpc.ErrorInfo.reason`: UPPER_SNAKE, without "Error".
    pub fn reason(self) -> &'static str {
        match self {
            Self::TaskNotFound => "TASK_NOT_FOUND",
            Self::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            Self::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            Self::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            Self::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            Self::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            Self::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            Self::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            Self::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            Self::ParseError => "PARSE_ERROR",
            Self::InvalidRequest => "INVALID_REQUEST",
            Self::MethodNotFound => "METHOD_NOT_FOUND",
            Self::InvalidParams => "INVALID_PARAMS",
            Self::Internal => "INTERNAL",
            Self::Unavailable => "UNAVAILABLE",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
        }
    }

    /// Every kind; the nine A2A-specific ones first, in code order.
    pub const ALL: [Kind; 18] = [
        Kind::TaskNotFound,
        Kind::TaskNotCancelable,
        Kind::PushNotificationNotSupported,
        Kind::UnsupportedOperation,
        Kind::ContentTypeNotSupported,
        Kind::InvalidAgentResponse,
        Kind::ExtendedAgentCardNotConfigured,
        Kind::ExtensionSupportRequired,
        Kind::VersionNotSupported,
        Kind::ParseError,
        Kind::InvalidRequest,
        Kind::MethodNotFound,
        Kind::InvalidParams,
        Kind::Internal,
        Kind::Unavailable,
        Kind::Unauthenticated,
        Kind::PermissionDenied,
        Kind::PayloadTooLarge,
    ];

    /// The kind a failed run's code names, if any: the agent's own A2A `reason`, or the engine's
    /// "could not reach it" codes.
    pub fn from_failure(code: &switchyard_contract::FailureCode) -> Option<Self> {
        use switchyard_contract::FailureCode as C;
        match code {
            C::UpstreamUnavailable | C::OutcomeLost => Some(Kind::Unavailable),
            C::Upstream(reason) => Self::ALL.into_iter().find(|k| k.reason() == reason),
            _ => None,
        }
    }

    /// This kind as the failure code of a refused run.
    pub fn failure_code(self) -> switchyard_contract::FailureCode {
        switchyard_contract::FailureCode::Upstream(self.reason().to_string())
    }

    /// JSON-RPC error code (the same in both profiles).
    pub fn jsonrpc_code(self) -> i64 {
        match self {
            Self::TaskNotFound => -32001,
            Self::TaskNotCancelable => -32002,
            Self::PushNotificationNotSupported => -32003,
            Self::UnsupportedOperation => -32004,
            Self::ContentTypeNotSupported => -32005,
            Self::InvalidAgentResponse => -32006,
            Self::ExtendedAgentCardNotConfigured => -32007,
            Self::ExtensionSupportRequired => -32008,
            Self::VersionNotSupported => -32009,
            Self::ParseError => -32700,
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::PayloadTooLarge => -32600,
            Self::Internal | Self::Unavailable => -32603,
            // A2A assigns no JSON-RPC codes: the authentication layer answers HTTP 401/403
            // before JSON-RPC processing, so these appear only if a face runs without it.
            Self::Unauthenticated => -32001,
            Self::PermissionDenied => -32001,
        }
    }

    /// HTTP status on the HTTP+JSON binding.
    pub fn http_status(self, profile: Profile) -> u16 {
        match (self, profile) {
            (Self::TaskNotFound, _) => 404,
            (Self::TaskNotCancelable, Profile::Spec) => 400,
            (Self::TaskNotCancelable, Profile::Tck) => 409,
            (Self::PushNotificationNotSupported, _) => 400,
            (Self::UnsupportedOperation, _) => 400,
            (Self::ContentTypeNotSupported, Profile::Spec) => 400,
            (Self::ContentTypeNotSupported, Profile::Tck) => 415,
            (Self::InvalidAgentResponse, Profile::Spec) => 500,
            (Self::InvalidAgentResponse, Profile::Tck) => 502,
            (Self::ExtendedAgentCardNotConfigured, _) => 400,
            (Self::ExtensionSupportRequired, _) => 400,
            (Self::VersionNotSupported, _) => 400,
            (Self::ParseError | Self::InvalidRequest | Self::InvalidParams, _) => 400,
            (Self::MethodNotFound, _) => 404,
            (Self::Internal, _) => 500,
            (Self::Unavailable, _) => 503,
            (Self::Unauthenticated, _) => 401,
            (Self::PermissionDenied, _) => 403,
            (Self::PayloadTooLarge, _) => 413,
        }
    }

    /// gRPC status code.
    pub fn grpc_code(self, profile: Profile) -> GrpcCode {
        match (self, profile) {
            (Self::TaskNotFound, _) => GrpcCode::NotFound,
            (Self::TaskNotCancelable, _) => GrpcCode::FailedPrecondition,
            (Self::PushNotificationNotSupported, Profile::Spec) => GrpcCode::FailedPrecondition,
            (Self::PushNotificationNotSupported, Profile::Tck) => GrpcCode::Unimplemented,
            (Self::UnsupportedOperation, Profile::Spec) => GrpcCode::FailedPrecondition,
            (Self::UnsupportedOperation, Profile::Tck) => GrpcCode::Unimplemented,
            (Self::ContentTypeNotSupported, _) => GrpcCode::InvalidArgument,
            (Self::InvalidAgentResponse, _) => GrpcCode::Internal,
            (Self::ExtendedAgentCardNotConfigured, _) => GrpcCode::FailedPrecondition,
            (Self::ExtensionSupportRequired, _) => GrpcCode::FailedPrecondition,
            (Self::VersionNotSupported, Profile::Spec) => GrpcCode::FailedPrecondition,
            (Self::VersionNotSupported, Profile::Tck) => GrpcCode::Unimplemented,
            (Self::ParseError | Self::InvalidRequest | Self::InvalidParams, _) => GrpcCode::InvalidArgument,
            (Self::MethodNotFound, _) => GrpcCode::Unimplemented,
            (Self::Internal, _) => GrpcCode::Internal,
            (Self::Unavailable, _) => GrpcCode::Unavailable,
            (Self::Unauthenticated, _) => GrpcCode::Unauthenticated,
            (Self::PermissionDenied, _) => GrpcCode::PermissionDenied,
            (Self::PayloadTooLarge, _) => GrpcCode::ResourceExhausted,
        }
    }

    /// The AIP-193 `status` string on HTTP+JSON: the spec profile's gRPC code name.
    pub fn http_status_name(self) -> &'static str {
        self.grpc_code(Profile::Spec).name()
    }
}

/// An error of the A2A face.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct A2aError {
    pub kind: Kind,
    pub message: String,
    /// Whether repeating the request cannot cause a second effect, when the gateway knows.
    pub retry_safe: Option<bool>,
    /// The invocation the error is about, when there is one.
    pub invocation: Option<String>,
}

impl A2aError {
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), retry_safe: None, invocation: None }
    }

    /// The same error, saying whether a retry is safe and which invocation it is about.
    pub fn about(mut self, invocation: impl std::fmt::Display, retry_safe: bool) -> Self {
        self.invocation = Some(invocation.to_string());
        self.retry_safe = Some(retry_safe);
        self
    }

    /// `google.rpc.ErrorInfo.metadata`: `retrySafe` and `invocation`, when known.
    fn metadata(&self) -> std::collections::HashMap<String, String> {
        let mut m = std::collections::HashMap::new();
        if let Some(safe) = self.retry_safe {
            m.insert("retrySafe".to_string(), safe.to_string());
        }
        if let Some(inv) = &self.invocation {
            m.insert("invocation".to_string(), inv.clone());
        }
        m
    }

    pub fn task_not_found(id: &str) -> Self {
        Self::new(Kind::TaskNotFound, format!("task `{id}` not found"))
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(Kind::InvalidParams, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Kind::Internal, message)
    }

    /// The ErrorInfo detail in ProtoJSON `Any` form.
    pub fn error_info(&self) -> Value {
        let mut info = json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.kind.reason(),
            "domain": "a2a-protocol.org",
        });
        let metadata = self.metadata();
        if !metadata.is_empty() {
            info["metadata"] = json!(metadata);
        }
        info
    }

    /// The JSON-RPC `error` member.
    pub fn jsonrpc(&self) -> Value {
        json!({"code": self.kind.jsonrpc_code(), "message": self.message, "data": [self.error_info()]})
    }

    /// The AIP-193 body of the HTTP+JSON binding.
    pub fn http_body(&self, profile: Profile) -> Value {
        json!({"error": {
            "code": self.kind.http_status(profile),
            "status": self.kind.http_status_name(),
            "message": self.message,
            "details": [self.error_info()],
        }})
    }

    /// The gRPC status, with `google.rpc.ErrorInfo` in `grpc-status-details-bin`.
    pub fn grpc(&self, profile: Profile) -> tonic::Status {
        use tonic_types::{ErrorDetails, StatusExt};
        let details = ErrorDetails::with_error_info(self.kind.reason(), "a2a-protocol.org", self.metadata());
        tonic::Status::with_error_details(self.kind.grpc_code(profile).tonic(), self.message.clone(), details)
    }
}

impl From<switchyard_contract::Error> for A2aError {
    fn from(e: switchyard_contract::Error) -> Self {
        use switchyard_contract::ErrorKind as K;
        let kind = match e.kind {
            K::NotFound => Kind::TaskNotFound,
            K::InvalidInput | K::Conflict => Kind::InvalidParams,
            K::Unavailable => Kind::Unavailable,
            K::Unauthenticated => Kind::Unauthenticated,
            K::Forbidden => Kind::PermissionDenied,
            K::Internal => Kind::Internal,
        };
        Self { retry_safe: Some(e.retry_safe), ..Self::new(kind, e.message) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_safety_and_the_invocation_reach_every_binding() {
        let e = A2aError::from(switchyard_contract::Error::unavailable("store away")).about("inv_1", true);
        let info = &e.jsonrpc()["data"][0];
        assert_eq!(info["metadata"], json!({"retrySafe": "true", "invocation": "inv_1"}));
        assert_eq!(e.http_body(Profile::Spec)["error"]["details"][0]["metadata"]["retrySafe"], "true");
        let status = e.grpc(Profile::Spec);
        use tonic_types::StatusExt;
        let details = status.get_error_details();
        let grpc_info = details.error_info().map(|i| i.metadata.clone()).unwrap_or_default();
        assert_eq!(grpc_info.get("invocation").map(String::as_str), Some("inv_1"));
        assert!(A2aError::invalid_params("x").jsonrpc()["data"][0].get("metadata").is_none(), "none when unknown");
    }

    #[test]
    fn the_two_profiles_differ_exactly_where_the_1_0_1_table_changed() {
        let all = &Kind::ALL[..9];
        let http: Vec<_> =
            all.iter().filter(|k| k.http_status(Profile::Spec) != k.http_status(Profile::Tck)).copied().collect();
        assert_eq!(http, [Kind::TaskNotCancelable, Kind::ContentTypeNotSupported, Kind::InvalidAgentResponse]);
        let grpc: Vec<_> =
            all.iter().filter(|k| k.grpc_code(Profile::Spec) != k.grpc_code(Profile::Tck)).copied().collect();
        assert_eq!(grpc, [Kind::PushNotificationNotSupported, Kind::UnsupportedOperation, Kind::VersionNotSupported]);
        let codes: Vec<i64> = all.iter().map(|k| k.jsonrpc_code()).collect();
        assert_eq!(codes, (1..=9).map(|n| -32000 - n).collect::<Vec<_>>());
        assert!(Kind::ALL.iter().all(|k| Kind::from_failure(&k.failure_code()) == Some(*k)), "reasons are unique");
    }

    #[test]
    fn bodies_carry_error_info() {
        let e = A2aError::task_not_found("t1");
        assert_eq!(e.jsonrpc()["data"][0]["reason"], "TASK_NOT_FOUND");
        let body = e.http_body(Profile::Tck);
        assert_eq!(body["error"]["code"], 404);
        assert_eq!(body["error"]["status"], "NOT_FOUND");
        assert_eq!(body["error"]["details"][0]["domain"], "a2a-protocol.org");
        let status = A2aError::new(Kind::VersionNotSupported, "v").grpc(Profile::Tck);
        assert_eq!(status.code(), tonic::Code::Unimplemented);
        assert!(!status.details().is_empty());
    }
}
