//! `switchyard-mcp-conformance-client <url>`: the client under test for the official MCP client
//! conformance suite (`@modelcontextprotocol/conformance … client --command …`), built on
//! Switchyard's own upstream client code (`switchyard_mcp::oauth`: connection, authorization
//! code with PKCE, client credentials, step-up) rather than a separate toy client.
//!
//! The runner appends the scenario server's URL and sets `MCP_CONFORMANCE_SCENARIO`,
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` and `MCP_CONFORMANCE_CONTEXT`. Every scenario runs the same
//! way: connect (authorizing when the server challenges), exercise what the server offers
//! (tools — the context's `toolCalls` when given —, resources, prompts), and react to
//! challenges during calls: `insufficient_scope` → step-up for the union of scopes, a stale
//! token → a fresh authorization, both bounded. Errors exit non-zero (the refusal scenarios
//! expect the client to refuse).
//!
//! Skills (SEP-2640, the `sep-2640-client-*` scenarios) run as the gateway loads an upstream's
//! skills: list them without fetching a file (`no-prefetch` stops there); loading a skill reads
//! its `SKILL.md` first and holds it to the manifest with the gateway's own check
//! (`switchyard_mcp::skills::verify`: size, digest, frontmatter) before any other file is read;
//! a mismatch ends the load (exit non-zero) without reading further.

// Sampling and the legacy client types are deprecated in 2026-07-28 but still exercised.
#![allow(deprecated)]

use std::time::Duration;

use anyhow::{Context as _, bail};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientInfo, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, GetPromptRequestParams, JsonObject, ProtocolVersion,
    ReadResourceRequestParams, Role, SamplingMessage, SamplingMessageContentBlock, Tool,
};
use rmcp::service::{ClientLifecycleMode, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};
use switchyard_mcp::UpstreamOAuth;
use switchyard_mcp::http::UpstreamHttp;
use switchyard_mcp::oauth::{self, OAuthHttp, Registration};

/// What the scenario passes in `MCP_CONFORMANCE_CONTEXT`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Context {
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    #[serde(default, alias = "client_id")]
    client_id: Option<String>,
    #[serde(default, alias = "client_secret")]
    client_secret: Option<String>,
}

#[derive(Debug, Default, serde::Deserialize)]
struct ToolCall {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
}

/// Answers server requests like a cooperative user: elicitation with the schema's defaults
/// (SEP-1034) and placeholders for required fields, a canned sampling reply, no roots.
#[derive(Debug, Clone, Default)]
struct Cooperative;

impl ClientHandler for Cooperative {
    #[allow(deprecated)]
    fn get_info(&self) -> ClientInfo {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(Default::default());
        caps.sampling = Some(Default::default());
        let mut info = ClientInfo::default();
        info.capabilities = caps;
        info.client_info = rmcp::model::Implementation::new("switchyard-conformance-client", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let schema = match serde_json::to_value(&request) {
            Ok(v) => v.get("requestedSchema").cloned().unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(answers(&schema))))
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let prompt = serde_json::to_value(&params.messages).map(|v| v.to_string()).unwrap_or_default();
        Ok(CreateMessageResult::new(
            SamplingMessage::new(Role::Assistant, SamplingMessageContentBlock::text(format!("A reply to: {prompt}"))),
            "switchyard-test-model".into(),
        )
        .with_stop_reason("endTurn"))
    }
}

/// An elicitation answer: each property's `default`, else a placeholder for required ones.
fn answers(schema: &Value) -> JsonObject {
    let required: Vec<&str> =
        schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let mut out = JsonObject::new();
    for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
        if let Some(d) = prop.get("default") {
            out.insert(name.clone(), d.clone());
        } else if required.contains(&name.as_str()) {
            out.insert(name.clone(), placeholder(prop));
        }
    }
    out
}

fn placeholder(prop: &Value) -> Value {
    if let Some(first) = prop["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    match prop["type"].as_str() {
        Some("number") => json!(2.5),
        Some("integer") => json!(2),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => json!("test"),
    }
}

/// Arguments for a tool: a placeholder for every required property.
fn arguments(tool: &Tool) -> JsonObject {
    answers(&Value::Object(tool.input_schema.as_ref().clone()))
}

/// [`arguments`], except that an object argument named `schema` whose description names another
/// listed tool gets that tool's `inputSchema` exactly as this client received it (the
/// `json-schema-2020-12-preservation` scenario's round trip: what the client's parsing kept is
/// what it sends back).
fn echoing(tool: &Tool, all: &[Tool]) -> JsonObject {
    let mut args = arguments(tool);
    let asked = tool.input_schema.get("properties").and_then(|p| p.get("schema"));
    let said = asked.filter(|s| s.get("type") == Some(&json!("object"))).and_then(|s| s.get("description"));
    let named = said
        .and_then(Value::as_str)
        .and_then(|d| all.iter().filter(|t| t.name != tool.name).find(|t| d.contains(t.name.as_ref())));
    if let Some(other) = named {
        args.insert("schema".into(), Value::Object(other.input_schema.as_ref().clone()));
    }
    args
}

fn protocol() -> Option<ProtocolVersion> {
    std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok().and_then(|v| serde_json::from_value(json!(v)).ok())
}

fn lifecycle() -> ClientLifecycleMode {
    match protocol() {
        Some(v) if v >= ProtocolVersion::V_2026_07_28 => {
            ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
        }
        _ => ClientLifecycleMode::Initialize,
    }
}

type Client = RunningService<RoleClient, Cooperative>;

/// One run against a scenario server, holding the authorization when there is one.
struct Run {
    url: String,
    ctx: Context,
    auth: Option<OAuthHttp>,
    /// Full re-authorizations left (stale tokens, migrated authorization servers).
    reauth_left: u32,
}

impl Run {
    fn registration(&self) -> Registration {
        Registration {
            redirect_uri: "http://localhost:3000/callback".into(),
            client_name: "switchyard".into(),
            client_metadata_url: Some("https://conformance-test.local/client-metadata.json".into()),
            preregistered: self.ctx.client_id.clone().map(|id| (id, self.ctx.client_secret.clone())),
            scopes: Vec::new(),
        }
    }

    async fn authorize(&mut self, challenge: Option<&str>) -> anyhow::Result<()> {
        if self.reauth_left == 0 {
            bail!("giving up: authorization was required again after {} attempts", 3);
        }
        self.reauth_left -= 1;
        let client =
            oauth::authorization_code(&self.url, challenge, &self.registration(), None, oauth::headless_user_agent)
                .await
                .map_err(anyhow::Error::msg)?;
        self.auth = Some(client);
        Ok(())
    }

    /// Connects, authorizing first when the server answers with a challenge.
    async fn connect(&mut self) -> anyhow::Result<Client> {
        loop {
            let http = UpstreamHttp::new().map_err(anyhow::Error::msg)?;
            match oauth::connect_http(Cooperative, &self.url, http, self.auth.clone(), lifecycle()).await {
                Ok(c) => return Ok(c),
                Err(e) => match e.auth_challenge().map(str::to_string) {
                    Some(challenge) => self.authorize(Some(&challenge)).await?,
                    None => return Err(e).context("connect"),
                },
            }
        }
    }

    /// Calls a tool, reacting to authorization challenges: step-up on `insufficient_scope`,
    /// else a fresh authorization and a new connection. `Ok(None)` when the step-up limit is
    /// reached (the client gives up on this call).
    async fn call(&mut self, client: &mut Client, params: CallToolRequestParams) -> anyhow::Result<Option<Value>> {
        loop {
            let challenge = match client.call_tool(params.clone()).await {
                Ok(r) => return Ok(Some(serde_json::to_value(r)?)),
                Err(e) => match e.auth_challenge().map(str::to_string) {
                    Some(c) => c,
                    // A tool error or refusal: the scenario judges it, not us.
                    None => {
                        tracing::info!(tool = %params.name, error = %e, "call failed");
                        return Ok(None);
                    }
                },
            };
            match &self.auth {
                Some(auth) if challenge.contains("insufficient_scope") => {
                    if let Err(e) = oauth::step_up(auth, &self.url, &challenge, oauth::headless_user_agent).await {
                        tracing::info!(error = %e, "not stepping up again");
                        return Ok(None);
                    }
                }
                _ => {
                    self.authorize(Some(&challenge)).await?;
                    *client = self.connect().await?;
                }
            }
        }
    }

    /// Everything the server offers: tools (or the context's calls), resources, prompts.
    async fn exercise(&mut self, client: &mut Client) -> anyhow::Result<()> {
        let tools = loop {
            match client.list_all_tools().await {
                Ok(t) => break t,
                // The token stopped working (e.g. the resource moved to another authorization
                // server): authorize again from the new challenge, reconnect, retry.
                Err(e) => match e.auth_challenge().map(str::to_string) {
                    Some(challenge) => {
                        self.authorize(Some(&challenge)).await?;
                        *client = self.connect().await?;
                    }
                    None => return Err(e).context("tools/list"),
                },
            }
        };
        let calls: Vec<CallToolRequestParams> = if self.ctx.tool_calls.is_empty() {
            tools
                .iter()
                .map(|t| CallToolRequestParams::new(t.name.clone()).with_arguments(echoing(t, &tools)))
                .collect()
        } else {
            self.ctx
                .tool_calls
                .iter()
                .map(|c| {
                    CallToolRequestParams::new(c.name.clone()).with_arguments(c.arguments.clone().unwrap_or_default())
                })
                .collect()
        };
        // Independent calls go out together (MRTR rounds of one must not leak into another).
        if self.auth.is_none() && calls.len() > 1 {
            let shared: &Client = client;
            let results = futures::future::join_all(
                calls.iter().cloned().map(|p| async move { (p.name.clone(), shared.call_tool(p).await) }),
            )
            .await;
            let mut challenged = Vec::new();
            for ((name, r), params) in results.into_iter().zip(calls) {
                match r {
                    Ok(_) => {}
                    Err(e) if e.auth_challenge().is_some() => challenged.push(params),
                    Err(e) => tracing::info!(tool = %name, error = %e, "call failed"),
                }
            }
            for params in challenged {
                self.call(client, params).await?;
            }
        } else {
            for params in calls {
                self.call(client, params).await?;
            }
        }
        if let Ok(resources) = client.list_all_resources().await {
            for r in resources {
                let _ = client.read_resource(ReadResourceRequestParams::new(r.uri.clone())).await;
            }
        }
        if let Ok(prompts) = client.list_all_prompts().await {
            for p in prompts {
                let mut args = JsonObject::new();
                for a in p.arguments.iter().flatten() {
                    args.insert(a.name.clone(), json!("test"));
                }
                let _ = client.get_prompt(GetPromptRequestParams::new(p.name.clone()).with_arguments(args)).await;
            }
        }
        Ok(())
    }
}

/// Lists the skills; unless `scenario` is `no-prefetch`, loads each one: its `SKILL.md`, verified,
/// then every other file of its manifest, each verified.
async fn skills(client: &Client, scenario: &str) -> anyhow::Result<()> {
    let skills = client.list_all_skills().await.context("skills/list")?;
    tracing::info!(skills = skills.len(), "skills listed");
    if scenario.ends_with("no-prefetch") {
        return Ok(());
    }
    for skill in &skills {
        let mut files = vec![skill.uri.clone()];
        if let rmcp::model::SkillResources::Files(all) = &skill.resources {
            files.extend(all.iter().map(|f| f.uri.clone()).filter(|u| *u != skill.uri));
        }
        for uri in files {
            let read =
                client.read_resource(ReadResourceRequestParams::new(uri.clone())).await.context("resources/read")?;
            let bytes = switchyard_mcp::skills::bytes_of(&read.contents).map_err(anyhow::Error::msg)?;
            switchyard_mcp::skills::verify(skill, &uri, &bytes)
                .with_context(|| format!("skill {} refused", skill.uri))?;
        }
    }
    Ok(())
}

async fn run(scenario: &str, url: String, ctx: Context) -> anyhow::Result<()> {
    let mut run = Run { url, ctx, auth: None, reauth_left: 3 };
    if scenario.starts_with("sep-2640-client") {
        let client = run.connect().await?;
        let outcome = skills(&client, scenario).await;
        let _ = client.cancel().await;
        return outcome;
    }
    if scenario.starts_with("auth/client-credentials") {
        let (Some(id), Some(secret)) = (run.ctx.client_id.clone(), run.ctx.client_secret.clone()) else {
            bail!(
                "{scenario}: only client_secret credentials are supported (no client_id/client_secret in the context)"
            );
        };
        let cfg = UpstreamOAuth {
            client_id: id,
            client_secret: switchyard_mcp::Secret(secret),
            client_secret_env: None,
            scopes: Vec::new(),
            resource: None,
            flow: switchyard_mcp::OAuthFlow::ClientCredentials,
            redirect_port: 0,
        };
        run.auth = Some(oauth::client_credentials(&run.url, &cfg).await.map_err(anyhow::Error::msg)?);
    }
    let mut client = run.connect().await?;
    let outcome = run.exercise(&mut client).await;
    let _ = client.cancel().await;
    outcome
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .try_init();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_else(|_| "initialize".into());
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: switchyard-mcp-conformance-client <server-url>");
        return std::process::ExitCode::from(2);
    };
    let ctx: Context =
        std::env::var("MCP_CONFORMANCE_CONTEXT").ok().and_then(|c| serde_json::from_str(&c).ok()).unwrap_or_default();
    // Exit before the runner's 30 s timeout: some scenario servers never answer on purpose.
    match tokio::time::timeout(Duration::from_secs(25), run(&scenario, url, ctx)).await {
        Ok(Ok(())) => std::process::ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("{scenario}: {e:#}");
            std::process::ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("{scenario}: timed out after 25 s");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, schema: Value) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": schema})).unwrap()
    }

    #[test]
    fn a_schema_argument_naming_another_tool_gets_its_schema_as_received() {
        let rich = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                          "$defs": {"a": {"$anchor": "x", "type": "string"}}, "additionalProperties": false});
        let echo = json!({"type": "object", "required": ["schema"], "properties": {"schema": {"type": "object",
                          "description": "The inputSchema the client observed for rich_tool, passed back verbatim."}}});
        let tools = [tool("rich_tool", rich.clone()), tool("echo_schema", echo)];
        assert_eq!(echoing(&tools[1], &tools).get("schema"), Some(&rich));
        let plain = tool("plain", json!({"type": "object", "properties": {"schema": {"type": "object"}}}));
        assert_ne!(echoing(&plain, &tools).get("schema"), Some(&rich), "no tool named: generated as usual");
    }
}
