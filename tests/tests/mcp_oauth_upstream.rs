//! OAuth on both sides of the MCP face, end to end: the official Python SDK calls gateway A
//! with a bearer token from a real local issuer; A's upstream is gateway B, an OAuth-protected
//! MCP server (fronting the fixture), for which A obtains its own token with the client
//! credentials grant (discovered from B's RFC 9728 metadata). The client's token never reaches
//! B, and neither token appears in either gateway's log.

use std::time::Duration;

use switchyard_tests::gateway::{Gateway, Options, free_port};
use switchyard_tests::issuer::{SERVICE_CLIENT, TestIssuer};
use switchyard_tests::mcp::{Fixture, python, python_client_script};

fn auth_section(resource: &str, issuer: &str) -> String {
    format!(
        "[auth]\nresource = \"{resource}\"\nscopes_supported = [\"mcp:call\"]\n\n\
         [[auth.issuers]]\nissuer = \"{issuer}\"\njwks_min_refresh_ms = 0\n"
    )
}

/// Gateway B: an OAuth-protected MCP server (resource `http://127.0.0.1:<port>/mcp`) fronting
/// the fixture, with `operations` for its tools. Returns it and its resource URI.
fn protected_upstream(
    dir: &std::path::Path,
    issuer: &TestIssuer,
    fixture: &Fixture,
    operations: &str,
) -> (Gateway, String) {
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let config = format!(
        "{}\n[mcp]\nrequest_state_key = \"gateway-b-request-state-key-0123456789ab\"\n\n\
         [[mcp.upstreams]]\nname = \"fixture\"\nurl = \"{}\"\nprefix = \"\"\noperations = {{ {operations} }}\n",
        auth_section(&resource, &issuer.issuer),
        fixture.url
    );
    std::fs::write(dir.join("b.toml"), config).unwrap_or_else(|e| panic!("{e}"));
    let gw = Gateway::start(Options {
        data_dir: dir.join("b"),
        config: Some(dir.join("b.toml")),
        listen: Some(format!("127.0.0.1:{port}")),
        ..Options::default()
    });
    (gw, resource)
}

const READS: &str = "echo = \"read_only\", slow = \"read_only\", ask_name = \"read_only\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_client_reaches_an_oauth_protected_upstream_with_the_gateways_own_token() {
    let issuer = TestIssuer::start().await;
    let fixture = Fixture::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    // B: the protected upstream.
    let (b, resource_b) = protected_upstream(dir.path(), &issuer, &fixture, READS);
    // A: the gateway the client talks to, an OAuth client of B.
    let port_a = free_port();
    let resource_a = format!("http://127.0.0.1:{port_a}/mcp");
    let config_a = format!(
        "{}\n[mcp]\nrequest_state_key = \"gateway-a-request-state-key-0123456789ab\"\n\n\
         [[mcp.upstreams]]\nname = \"partner\"\nurl = \"{resource_b}\"\n\
         operations = {{ echo = \"read_only\", slow = \"read_only\", ask_name = \"read_only\" }}\n\
         oauth = {{ client_id = \"{}\", client_secret_env = \"PARTNER_SECRET\", scopes = [\"mcp:call\"] }}\n",
        auth_section(&resource_a, &issuer.issuer),
        SERVICE_CLIENT.0
    );
    std::fs::write(dir.path().join("a.toml"), config_a).unwrap();
    let a = Gateway::start(Options {
        data_dir: dir.path().join("a"),
        config: Some(dir.path().join("a.toml")),
        listen: Some(format!("127.0.0.1:{port_a}")),
        env: vec![("PARTNER_SECRET".into(), SERVICE_CLIENT.1.into())],
        ..Options::default()
    });
    // Without a token, A refuses with a challenge pointing at its metadata.
    let anon = reqwest::Client::new()
        .post(&resource_a)
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(anon.status(), 401);
    let challenge =
        anon.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    // The client's token: for A only.
    let client_token = issuer.sign(&issuer.claims(&resource_a, "acme", "alice", "mcp:call", 300));
    for mode in ["2026-07-28", "legacy"] {
        let out = tokio::process::Command::new(python())
            .arg(python_client_script())
            .args([&resource_a, mode, "partner__"])
            .env("MCP_BEARER", &client_token)
            .output()
            .await
            .unwrap_or_else(|e| panic!("python: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let log_a = std::fs::read_to_string(a.opts.data_dir.join("gateway.log")).unwrap_or_default();
        assert!(out.status.success(), "{mode}:\n{stdout}\ngateway A log:\n{log_a}");
        assert_eq!(stdout.lines().filter(|l| l.contains("\"ok\": true")).count(), 7, "{stdout}");
    }
    // A got its own token(s) from the issuer, for B's resource.
    let issued = issuer.issued();
    assert!(!issued.is_empty(), "A obtained a token by client credentials");
    // The calls reached B as A's service identity (tenant `svc`), not as alice.
    let (status, on_b) = b.get("svc", "/admin/v1/invocations?limit=500").await.unwrap();
    assert_eq!(status, 200);
    let on_b = on_b["items"].as_array().cloned().unwrap_or_default();
    assert!(on_b.iter().any(|i| i["target"]["operation"] == "echo"), "B journaled the calls under tenant svc");
    assert!(on_b.iter().all(|i| i["principal"]["subject"] == SERVICE_CLIENT.0));
    let on_a = a.all("acme").await;
    assert!(on_a.iter().any(|i| i["principal"]["subject"] == "alice"), "A journaled them as alice");
    // No token in any log.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for (name, gw) in [("A", &a), ("B", &b)] {
        let log = std::fs::read_to_string(gw.opts.data_dir.join("gateway.log")).unwrap_or_default();
        assert!(!log.is_empty());
        assert!(!log.contains(&client_token), "gateway {name} logged the client's token");
        for t in &issued {
            assert!(!log.contains(t.as_str()), "gateway {name} logged its upstream token");
        }
        assert!(!log.contains(SERVICE_CLIENT.1), "gateway {name} logged the client secret");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_delegated_upstream_is_authorized_once_and_its_tokens_stay_sealed() {
    use std::io::BufRead as _;
    let issuer = TestIssuer::start().await;
    let fixture = Fixture::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (b, resource_b) = protected_upstream(dir.path(), &issuer, &fixture, "");
    let redirect_port = free_port();
    let config_a = format!(
        "[mcp]\nanonymous = true\nrequest_state_key = \"gateway-a-request-state-key-0123456789ab\"\n\n\
         [[mcp.upstreams]]\nname = \"partner\"\nurl = \"{resource_b}\"\n\
         oauth = {{ flow = \"authorization_code\", client_id = \"{}\", client_secret_env = \"PARTNER_SECRET\", \
         scopes = [\"mcp:call\"], redirect_port = {redirect_port} }}\n",
        SERVICE_CLIENT.0
    );
    let config_path = dir.path().join("a.toml");
    std::fs::write(&config_path, config_a).unwrap();
    let data_a = dir.path().join("a");
    // The operator logs in once; the test plays the browser.
    let mut login = std::process::Command::new(switchyard_tests::gateway::binary())
        .arg("--config")
        .arg(&config_path)
        .args(["auth", "login", "partner", "--timeout-s", "30"])
        .env("SWITCHYARD__SERVER__DATA_DIR", &data_a)
        .env("PARTNER_SECRET", SERVICE_CLIENT.1)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = login.stdout.take().unwrap_or_else(|| panic!("stdout"));
    let mut lines = std::io::BufReader::new(stdout).lines();
    let auth_url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.trim().starts_with("http").then(|| l.trim().to_string()))
        .unwrap_or_else(|| panic!("`auth login` printed no URL"));
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let redirect = browser.get(&auth_url).send().await.unwrap();
    let back = redirect.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    assert!(back.starts_with(&format!("http://127.0.0.1:{redirect_port}/callback?code=")), "{back}");
    let page = browser.get(&back).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = login.wait().unwrap();
    assert!(status.success() && rest.iter().any(|l| l.contains("authorized")), "{rest:?}");
    // Tokens (access and refresh) are stored, but never in plaintext.
    let issued = issuer.issued();
    assert!(issued.iter().any(|t| t.starts_with("refresh-")), "a refresh token was issued");
    for file in ["switchyard.db", "switchyard.db-wal"] {
        let bytes = std::fs::read(data_a.join(file)).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        for t in &issued {
            assert!(!text.contains(t.as_str()), "{file} holds a token in plaintext");
        }
    }
    // The gateway uses the stored authorization for its upstream.
    let a = Gateway::start(Options {
        data_dir: data_a.clone(),
        config: Some(config_path.clone()),
        env: vec![("PARTNER_SECRET".into(), SERVICE_CLIENT.1.into())],
        ..Options::default()
    });
    let client = switchyard_tests::mcp::connect(&format!("{}/mcp", a.base), true).await;
    let r = client
        .call_tool(switchyard_tests::mcp::call("partner__echo", serde_json::json!({"text": "delegated"})))
        .await
        .unwrap();
    assert_eq!(switchyard_tests::mcp::text_of(&serde_json::to_value(&r).unwrap_or_default()), "delegated");
    let on_b = b.all("delegated").await;
    assert!(on_b.iter().any(|i| i["principal"]["subject"] == "alice"), "B saw the delegated user");
    for gw in [&a, &b] {
        let log = std::fs::read_to_string(gw.opts.data_dir.join("gateway.log")).unwrap_or_default();
        for t in &issued {
            assert!(!log.contains(t.as_str()), "a token was logged");
        }
    }
}

/// An rmcp client of `url` sending `token`, declaring the Tasks extension.
async fn bearer_client(url: &str, token: &str) -> rmcp::service::RunningService<rmcp::RoleClient, TasksClient> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token.to_string());
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::default(), config);
    let lifecycle = rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    rmcp::service::serve_client_with_lifecycle(TasksClient, transport, lifecycle)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

#[derive(Debug, Clone)]
struct TasksClient;

impl rmcp::ClientHandler for TasksClient {
    #[allow(deprecated)]
    fn get_info(&self) -> rmcp::model::ClientInfo {
        let mut info = rmcp::model::ClientInfo::default();
        info.capabilities.extensions =
            Some([(rmcp::model::TASKS_EXTENSION_ID.to_string(), Default::default())].into_iter().collect());
        info
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_choose_endpoints_and_tenants_never_see_each_others_calls_or_tasks() {
    let issuer = TestIssuer::start().await;
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "{}\n[mcp]\nrequest_state_key = \"gateway-t-request-state-key-0123456789ab\"\n\n\
         [[mcp.servers]]\npath = \"/mcp\"\n\n\
         [[mcp.servers]]\npath = \"/mcp/ops\"\nscope = \"mcp:ops\"\ntools = [\"fx__echo\"]\n\n\
         [[mcp.upstreams]]\nname = \"fx\"\ncommand = [\"{}\", \"--stdio\"]\n\
         operations = {{ echo = \"read_only\", slow_compute = \"read_only\", ask_name = \"read_only\" }}\n",
        auth_section(&resource, &issuer.issuer).replace("[\"mcp:call\"]", "[\"mcp:call\", \"mcp:ops\"]"),
        switchyard_tests::mcp::fixture_binary().display()
    );
    std::fs::write(dir.path().join("t.toml"), config).unwrap();
    let gw = Gateway::start(Options {
        data_dir: dir.path().join("t"),
        config: Some(dir.path().join("t.toml")),
        listen: Some(format!("127.0.0.1:{port}")),
        ..Options::default()
    });
    let token = |tenant: &str, scopes: &str| issuer.sign(&issuer.claims(&resource, tenant, "u", scopes, 300));
    let (acme, globex) = (token("acme", "mcp:call"), token("globex", "mcp:call"));
    // The ops endpoint needs its own scope: 403 insufficient_scope naming it.
    let refused = reqwest::Client::new()
        .post(format!("{resource}/ops"))
        .bearer_auth(&acme)
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let challenge = refused.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(challenge.contains("insufficient_scope") && challenge.contains("mcp:ops"), "{challenge}");
    let ops = bearer_client(&format!("{resource}/ops"), &token("acme", "mcp:ops")).await;
    let names: Vec<String> =
        ops.list_all_tools().await.unwrap_or_default().into_iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, vec!["fx__echo".to_string()], "the ops endpoint exposes only its tools");
    // acme starts a long call, which becomes a task; globex cannot see it.
    let a = bearer_client(&resource, &acme).await;
    let b = bearer_client(&resource, &globex).await;
    let created = a
        .call_tool_once(switchyard_tests::mcp::call("fx__slow_compute", serde_json::json!({"seconds": 5})))
        .await
        .unwrap();
    let rmcp::model::CallToolResponse::Task(task) = created else { panic!("expected a task, got {created:?}") };
    let id = task.task.task_id.clone();
    let mine = a.peer().get_task(rmcp::model::GetTaskParams::new(id.clone())).await;
    assert!(mine.is_ok(), "{mine:?}");
    let theirs = b.peer().get_task(rmcp::model::GetTaskParams::new(id.clone())).await.err().map(|e| e.to_string());
    assert!(theirs.is_some_and(|e| e.contains("unknown task")), "another tenant's task is unknown, not forbidden");
    assert!(b.peer().cancel_task(rmcp::model::CancelTaskParams::new(id.clone())).await.is_err());
    let (status, _) = gw.get("globex", &format!("/admin/v1/invocations/{id}")).await.unwrap();
    assert_eq!(status, 404);
    assert!(gw.all("globex").await.is_empty(), "globex lists nothing of acme's");
    assert_eq!(gw.all("acme").await.len(), 1);
    // acme may cancel its own task.
    assert!(a.peer().cancel_task(rmcp::model::CancelTaskParams::new(id)).await.is_ok());
}
