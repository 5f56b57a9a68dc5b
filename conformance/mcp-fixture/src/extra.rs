//! Tools for Switchyard's own tests (not part of the conformance suite).
//!
//! | tool | arguments | behaviour |
//! |---|---|---|
//! | `echo` | `text`, `delay_ms?` | sleeps `delay_ms` (cancellable), returns text `text` + structuredContent `{"text": text}` |
//! | `count_write` | `key`, `delay_ms?` | appends `<key>\n` to `$FIXTURE_CALL_LOG` first (append, flush, fsync), then sleeps, returns `wrote <key>` |
//! | `slow` | `steps`, `step_ms` | per step: sleep, then a progress notification (if the request has a progressToken); returns `done <steps>` |
//! | `drift_tool` | `a` (+ `b` with `FIXTURE_SCHEMA_VARIANT=2`) | returns `drift ok` |
//! | `ask_name` | — | elicits `name` (MRTR on 2026-07-28, `elicitation/create` in a legacy session), returns `hello <name>` |
//! | `greet` | `name` | returns `Hello, <name>!` at once |
//! | `slow_compute` | `seconds?`, `label?` | sleeps `seconds` (cancellable), returns `computed <label>` |
//! | `failing_job` | — | after 1 s, a tool execution error (`isError`) |
//! | `protocol_error_job` | — | after 1 s, a JSON-RPC error |
//! | `test_tool_with_task` | — | round 1 elicits `user_name`; round 2 sleeps 1 s and returns `Hello, <name>!` |
//!
//! The last five serve the Tasks extension scenarios: the fixture runs them synchronously and
//! the gateway in front of it makes long calls into tasks.
//!
//! Cancellation (`notifications/cancelled` on stdio, a closed response stream on HTTP) cancels the
//! request's token; the sleeping tools then stop with an error that is never delivered.

use std::io::Write as _;
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use crate::mrtr::{self, Ask};

/// What these tools need of the server that runs them (the fixture implements it).
pub(crate) trait Host {
    /// Asks the client (MRTR on 2026-07-28, `elicitation/create` in a legacy session) and
    /// answers the call with `render` of the answer.
    async fn ask_for(
        &self,
        cx: &RequestContext<RoleServer>,
        request: &CallToolRequestParams,
        key: &str,
        ask: Ask,
        render: impl FnOnce(&Value) -> String + Send,
    ) -> Result<CallToolResponse, McpError>;

    /// A progress notification, if the request asked for them.
    async fn send_progress(&self, cx: &RequestContext<RoleServer>, progress: f64, total: f64, message: String);
}

fn string_arg<'a>(args: &'a JsonObject, key: &str) -> Result<&'a str, McpError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::invalid_params(format!("argument `{key}` must be a string"), None))
}

fn u64_arg(args: &JsonObject, key: &str, default: Option<u64>) -> Result<u64, McpError> {
    match args.get(key) {
        None | Some(Value::Null) => {
            default.ok_or_else(|| McpError::invalid_params(format!("argument `{key}` is required"), None))
        }
        Some(v) => v
            .as_u64()
            .ok_or_else(|| McpError::invalid_params(format!("argument `{key}` must be a non-negative integer"), None)),
    }
}

/// Sleep `ms`, or fail as soon as the request is cancelled.
async fn sleep_or_cancel(cx: &RequestContext<RoleServer>, ms: u64) -> Result<(), McpError> {
    if ms == 0 {
        return Ok(());
    }
    tokio::select! {
        () = cx.ct.cancelled() => Err(McpError::internal_error("request cancelled", None)),
        () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(()),
    }
}

/// Append `line` plus a newline to `path` with one write (O_APPEND keeps concurrent lines whole),
/// then flush and fsync.
fn append_line(path: &std::path::Path, line: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(format!("{line}\n").as_bytes())?;
    file.flush()?;
    file.sync_all()
}

/// Record one physical call in `$FIXTURE_CALL_LOG` (if set) before returning.
async fn record_call(key: &str) -> Result<(), McpError> {
    let Some(path) = std::env::var_os("FIXTURE_CALL_LOG") else { return Ok(()) };
    let key = key.to_owned();
    tokio::task::spawn_blocking(move || append_line(std::path::Path::new(&path), &key))
        .await
        .map_err(|e| McpError::internal_error(format!("call log task failed: {e}"), None))?
        .map_err(|e| McpError::internal_error(format!("cannot write FIXTURE_CALL_LOG: {e}"), None))
}

/// Dispatch the extra tools; `None` when `request` names none of them.
pub async fn call(
    fixture: &impl Host,
    request: &CallToolRequestParams,
    cx: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, McpError>> {
    let args = request.arguments.clone().unwrap_or_default();
    let result = match request.name.as_ref() {
        "echo" => echo(&args, cx).await,
        "count_write" => count_write(&args, cx).await,
        "slow" => slow(fixture, &args, cx).await,
        "drift_tool" => string_arg(&args, "a").map(|_| CallToolResult::success(vec![ContentBlock::text("drift ok")])),
        "ask_name" => return Some(ask_name(fixture, request, cx).await),
        "greet" => {
            string_arg(&args, "name").map(|n| CallToolResult::success(vec![ContentBlock::text(format!("Hello, {n}!"))]))
        }
        "slow_compute" => slow_compute(&args, cx).await,
        "failing_job" => sleep_or_cancel(cx, 1000)
            .await
            .map(|()| CallToolResult::error(vec![ContentBlock::text("failing_job failed, as it always does")])),
        "protocol_error_job" => match sleep_or_cancel(cx, 1000).await {
            Ok(()) => Err(McpError::internal_error("protocol_error_job: simulated internal failure", None)),
            Err(e) => Err(e),
        },
        "test_tool_with_task" => return Some(tool_with_task(fixture, request, cx).await),
        _ => return None,
    };
    Some(result.map(Into::into))
}

async fn echo(args: &JsonObject, cx: &RequestContext<RoleServer>) -> Result<CallToolResult, McpError> {
    let text = string_arg(args, "text")?.to_owned();
    sleep_or_cancel(cx, u64_arg(args, "delay_ms", Some(0))?).await?;
    let mut result = CallToolResult::success(vec![ContentBlock::text(text.clone())]);
    result.structured_content = Some(json!({ "text": text }));
    Ok(result)
}

async fn count_write(args: &JsonObject, cx: &RequestContext<RoleServer>) -> Result<CallToolResult, McpError> {
    let key = string_arg(args, "key")?.to_owned();
    let delay_ms = u64_arg(args, "delay_ms", Some(0))?;
    record_call(&key).await?;
    sleep_or_cancel(cx, delay_ms).await?;
    Ok(CallToolResult::success(vec![ContentBlock::text(format!("wrote {key}"))]))
}

async fn slow(
    fixture: &impl Host,
    args: &JsonObject,
    cx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, McpError> {
    let steps = u64_arg(args, "steps", None)?;
    let step_ms = u64_arg(args, "step_ms", None)?;
    for step in 1..=steps {
        sleep_or_cancel(cx, step_ms).await?;
        fixture.send_progress(cx, step as f64, steps as f64, format!("step {step}/{steps}")).await;
    }
    Ok(CallToolResult::success(vec![ContentBlock::text(format!("done {steps}"))]))
}

async fn slow_compute(args: &JsonObject, cx: &RequestContext<RoleServer>) -> Result<CallToolResult, McpError> {
    let seconds = match args.get("seconds") {
        None | Some(Value::Null) => 0.0,
        Some(v) => v
            .as_f64()
            .filter(|s| (0.0..=3600.0).contains(s))
            .ok_or_else(|| McpError::invalid_params("argument `seconds` must be a number within 0..=3600", None))?,
    };
    let label = args.get("label").and_then(Value::as_str).unwrap_or("result").to_owned();
    sleep_or_cancel(cx, (seconds * 1000.0) as u64).await?;
    Ok(CallToolResult::success(vec![ContentBlock::text(format!("computed {label}"))]))
}

async fn tool_with_task(
    fixture: &impl Host,
    request: &CallToolRequestParams,
    cx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    if request.input_responses.as_ref().is_some_and(|r| r.contains_key("user_name")) {
        sleep_or_cancel(cx, 1000).await?;
    }
    let ask = Ask::elicit(
        "What is your name?",
        json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] }),
    );
    fixture
        .ask_for(cx, request, "user_name", ask, |answer| match mrtr::elicited_string(answer, "name") {
            Some(name) => format!("Hello, {name}!"),
            None => format!("no name given (action={})", mrtr::elicit_action(answer)),
        })
        .await
}

async fn ask_name(
    fixture: &impl Host,
    request: &CallToolRequestParams,
    cx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    let ask = Ask::elicit(
        "What is your name?",
        json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] }),
    );
    fixture
        .ask_for(cx, request, "name", ask, |answer| match mrtr::elicited_string(answer, "name") {
            Some(name) => format!("hello {name}"),
            None => format!("no name given (action={})", mrtr::elicit_action(answer)),
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arguments() {
        let args: JsonObject = serde_json::from_value(json!({"n": 5, "bad": -1, "s": "x", "z": null})).unwrap();
        assert_eq!(u64_arg(&args, "n", None).ok(), Some(5));
        assert!(u64_arg(&args, "bad", Some(0)).is_err());
        assert!(u64_arg(&args, "s", Some(0)).is_err());
        assert_eq!(u64_arg(&args, "z", Some(7)).ok(), Some(7));
        assert_eq!(u64_arg(&args, "missing", Some(3)).ok(), Some(3));
        assert!(u64_arg(&args, "missing", None).is_err());
    }

    #[test]
    fn call_log_appends_lines() {
        let dir = std::env::temp_dir().join(format!("mcp-fixture-test-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("calls.log");
        let _ = std::fs::remove_file(&path);
        assert!(append_line(&path, "a").is_ok());
        assert!(append_line(&path, "b").is_ok());
        assert_eq!(std::fs::read_to_string(&path).ok().as_deref(), Some("a\nb\n"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
