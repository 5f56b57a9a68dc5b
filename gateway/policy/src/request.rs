//! The one input of a decision, in the shape of the OpenID AuthZEN Authorization API's
//! evaluation request: who (subject) wants to do what (action) to which thing (resource), and
//! what else is known (context).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchyard_contract::{CallFacts, EffectClass, Ingress, RequestDigest, TenantId};

/// How much a call may do, and so how much scrutiny it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    Routine,
    Sensitive,
    Critical,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Routine => "routine",
            Self::Sensitive => "sensitive",
            Self::Critical => "critical",
        }
    }
}

/// Who asks: the authenticated principal (a human or a service). An agent acting for it is
/// [`Context::agent`], never the subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub tenant: TenantId,
    pub id: String,
}

/// What the call does: `tools/call` (MCP), `SendMessage` (A2A) or `submit` (the admin API).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub name: String,
}

/// What it acts on: an upstream's operation (a tool, an agent's skill), and its effect class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub upstream: String,
    pub operation: String,
    pub effect: EffectClass,
}

/// A value an upstream supplied about itself (tool annotations, card metadata). It may seed a
/// *suggested* tier in an [`Outcome`](crate::Outcome); it never decides anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Untrusted<T>(T);

impl<T> Untrusted<T> {
    pub fn new(value: T) -> Self {
        Self(value)
    }

    /// The upstream's claim, for suggestions only.
    pub fn claim(&self) -> &T {
        &self.0
    }
}

/// What an upstream says of a tool (MCP annotations).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolHints {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
}

/// Everything else known about the call. The request and its digest are borrowed from the
/// call being decided (owned where a caller builds one by hand).
#[derive(Debug, Clone, PartialEq)]
pub struct Context<'a> {
    /// The entry point it came through.
    pub ingress: Ingress,
    /// The agent acting for the subject, if one is known, kept apart from the subject.
    pub agent: Option<String>,
    /// The canonical digest of the request (what an approval is bound to).
    pub digest: Cow<'a, RequestDigest>,
    /// The request as the face submitted it; argument conditions address it by JSON pointer
    /// (MCP: `/arguments/<name>`; A2A: `/message/…`; the admin API: the request itself).
    pub request: Cow<'a, Value>,
    pub hints: Untrusted<ToolHints>,
}

/// One decision's input.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRequest<'a> {
    pub subject: Subject,
    pub action: Action,
    pub resource: Resource,
    pub context: Context<'a>,
}

impl<'a> DecisionRequest<'a> {
    /// The request for a call the engine is about to admit.
    pub fn from_facts(facts: &CallFacts<'a>) -> Self {
        let action = match facts.ingress {
            Ingress::Mcp => "tools/call",
            Ingress::A2a => "SendMessage",
            Ingress::Admin => "submit",
        };
        Self {
            subject: Subject { tenant: facts.principal.tenant.clone(), id: facts.principal.subject.clone() },
            action: Action { name: action.into() },
            resource: Resource {
                upstream: facts.target.upstream.clone(),
                operation: facts.target.operation.clone(),
                effect: facts.target.effect,
            },
            context: Context {
                ingress: facts.ingress,
                agent: None,
                digest: Cow::Borrowed(facts.digest),
                request: Cow::Borrowed(facts.request),
                hints: Untrusted::default(),
            },
        }
    }
}
