//! The protocol-neutral catalog and content model: where a face of one protocol meets an
//! upstream of another (the bridge). An upstream adapter describes what its upstreams offer as
//! [`Operation`]s, builds the submission that calls one ([`Catalog::prepare`], after the checks of
//! the face that owns the upstream), and reads its upstream's native result as [`Content`]; a face
//! renders content into its own wire. The invocation keeps the native result; content is derived
//! from it, so nothing the upstream said is lost. No adapter depends on another: they meet here.

use serde_json::{Map, Value};

use crate::{ArtifactId, EffectClass, Error, IngressKey, Invocation, Principal, Submission};

/// One operation an upstream offers, as a caller of any protocol needs to know it.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// The upstream that offers it (the engine's upstream name).
    pub upstream: String,
    /// The operation's name at that upstream (the engine's operation).
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// The JSON Schema its arguments must match (an object schema).
    pub input_schema: Value,
    /// The JSON Schema of its structured result, if it declares one.
    pub output_schema: Option<Value>,
    /// From local configuration only, never from the upstream.
    pub effect: EffectClass,
}

impl Operation {
    /// The one required argument, when the schema requires exactly one and it is a string: a
    /// caller with only text can still call such an operation.
    pub fn sole_string_argument(&self) -> Option<&str> {
        let required = self.input_schema.get("required")?.as_array()?;
        let [only] = required.as_slice() else { return None };
        let name = only.as_str()?;
        let kind = self.input_schema.get("properties")?.get(name)?.get("type")?;
        (kind == "string").then_some(name)
    }
}

/// One part of a result, whatever the protocol it came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text {
        text: String,
    },
    /// Structured data (a JSON value).
    Data {
        data: Value,
    },
    /// Bytes carried in the result (an image, audio, an embedded file).
    Bytes {
        data: Vec<u8>,
        media_type: Option<String>,
        name: Option<String>,
    },
    /// Bytes kept in the gateway's artifact store (served at `/artifacts/{id}` to the tenant
    /// that owns them).
    Artifact {
        id: ArtifactId,
        size: u64,
        media_type: Option<String>,
        name: Option<String>,
    },
    /// A reference to content elsewhere (a URL or a resource URI).
    Link {
        uri: String,
        media_type: Option<String>,
        name: Option<String>,
        description: Option<String>,
    },
}

/// What an operation answered, protocol-neutral.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Content {
    pub parts: Vec<Part>,
    /// The structured result, when the upstream gave one (it also matches the output schema).
    pub structured: Option<Value>,
    /// The upstream said the operation failed (its message is in the parts).
    pub is_error: bool,
    /// The upstream needs input before it can answer.
    pub needs_input: Option<NeedsInput>,
    /// What the upstream says about the call besides its content, for a caller's follow-up
    /// (an A2A task's `taskId`, `contextId` and `state`).
    pub about: Map<String, Value>,
}

impl Content {
    /// About how many bytes the content takes where it is rendered: its parts (a reference
    /// counts as its URI, not the bytes it names) and its structured content.
    pub fn size(&self) -> usize {
        let json = |v: &Value| v.to_string().len();
        let parts: usize = self
            .parts
            .iter()
            .map(|p| match p {
                Part::Text { text } => text.len(),
                Part::Data { data } => json(data),
                Part::Bytes { data, .. } => data.len(),
                Part::Artifact { id, .. } => id.to_string().len() + 32,
                Part::Link { uri, .. } => uri.len(),
            })
            .sum();
        parts + self.structured.as_ref().map_or(0, json)
    }

    /// The text parts, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// A request for input: what to ask and the schema the answer must match.
#[derive(Debug, Clone, PartialEq)]
pub struct NeedsInput {
    pub message: String,
    pub schema: Option<Value>,
}

/// The latest round on a task of another protocol, and how the task ended if it did (it may
/// end after that round: a task waiting for input, canceled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRun {
    pub invocation: crate::InvocationId,
    /// The task's terminal state, as the protocol names it (`TASK_STATE_CANCELED`).
    pub ended: Option<String>,
}

/// What the upstreams of one protocol offer, for faces of another. Implemented by the adapter
/// that owns the upstreams (it knows their wire and applies its face's checks). A `source` is
/// what the owning adapter calls the upstream (an MCP upstream's name, an A2A agent's name); an
/// [`Operation`]'s `upstream` is the engine's name for it.
#[async_trait::async_trait]
pub trait Catalog: Send + Sync + std::fmt::Debug {
    /// The operations `source` offers now; a withheld one (its definition changed since it
    /// was approved) is absent. Empty for a source this catalog does not know.
    fn operations(&self, source: &str) -> Vec<Operation>;

    /// Brings what [`operations`](Self::operations) knows of `source` up to date when it may
    /// be stale (an agent card not read yet); bounded in time. Default: always current.
    async fn refresh(&self, _source: &str) {}

    /// The submission that calls `operation` of `source` for `principal` with `arguments`,
    /// after the checks the owning face applies to its own callers: the operation is offered
    /// and approved, and the arguments match its input schema. `key`: the caller's idempotency
    /// key, from which the downstream identity of the call derives (so a retry is the same
    /// call downstream too). The caller adds the ingress key, context and grant; nothing is
    /// submitted here.
    async fn prepare(
        &self,
        principal: &Principal,
        source: &str,
        operation: &str,
        arguments: Map<String, Value>,
        key: Option<&IngressKey>,
    ) -> Result<Submission, Error>;

    /// The submission that answers the request for input of `previous` (a succeeded invocation
    /// of this catalog's upstreams whose content [`needs_input`](Content::needs_input)) with
    /// `answer`, which must match the requested schema: the next round of the same call. The
    /// caller adds the ingress key, context and grant; nothing is submitted here.
    async fn prepare_answer(
        &self,
        principal: &Principal,
        previous: &Invocation,
        answer: Map<String, Value>,
    ) -> Result<Submission, Error>;

    /// A result of `upstream` (the invocation's stored result) as content.
    fn content(&self, upstream: &str, result: &Value) -> Result<Content, Error>;

    /// The latest round on `source`'s task `task` (the id the owning protocol gave the call,
    /// such as an A2A task id), if `principal` may see that task. Default: none (the protocol
    /// has no task ids of its own).
    async fn task_run(&self, _principal: &Principal, _source: &str, _task: &str) -> Result<Option<TaskRun>, Error> {
        Ok(None)
    }

    /// Stops the call `invocation` (of `principal`'s tenant) the way its protocol does it,
    /// upstream included, and cancels the invocation. Default: the protocol has no way to ask.
    async fn cancel(&self, _principal: &Principal, invocation: &Invocation) -> Result<(), Error> {
        Err(Error::invalid_input(format!("invocation {} cannot be canceled through this catalog", invocation.id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(schema: Value) -> Operation {
        Operation {
            upstream: "u".into(),
            name: "t".into(),
            title: None,
            description: None,
            input_schema: schema,
            output_schema: None,
            effect: EffectClass::Write,
        }
    }

    #[test]
    fn a_sole_required_string_argument_is_found_and_nothing_else_is() {
        let one = op(json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}));
        assert_eq!(one.sole_string_argument(), Some("q"));
        let number = op(json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}));
        assert_eq!(number.sole_string_argument(), None);
        let two = op(json!({"properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a", "b"]}));
        assert_eq!(two.sole_string_argument(), None);
        assert_eq!(op(json!({"type": "object"})).sole_string_argument(), None);
    }
}
