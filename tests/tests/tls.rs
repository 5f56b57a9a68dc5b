//! TLS at the edge: the real binary terminates TLS itself (`[server] tls`). The official Python
//! SDKs connect over it trusting a test CA — MCP in both eras, A2A on JSON-RPC, HTTP+JSON and
//! gRPC — and see what they see over plain HTTP; HTTP/2 and HTTP/1.1 are offered by ALPN; a
//! certificate replaced on disk is served to the next connection without a restart; plain HTTP
//! to the TLS port gets no answer; the console's session cookie is `Secure`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchyard_tests::a2a::lines;
use switchyard_tests::gateway::{Gateway, Options, TOKEN};
use switchyard_tests::mcp::{fixture_binary, python};
use switchyard_tests::tls::{certificate_authority, run, server_certificate, server_section};

/// The serial number of the certificate the gateway serves now, as `openssl` prints it.
fn served_serial(dir: &Path, port: &str) -> String {
    let script = format!(
        "openssl s_client -connect 127.0.0.1:{port} -CAfile ca.pem -verify_return_error </dev/null 2>/dev/null \
         | openssl x509 -noout -serial"
    );
    run(dir, "bash", &["-c", &script]).trim().to_string()
}

/// `curl` trusting the test CA: (exit status, stdout).
fn curl(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("curl")
        .args(["-s", "--cacert", "ca.pem", "--max-time", "10"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("curl: {e}"));
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn third_party_clients_over_tls_and_a_certificate_replaced_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    certificate_authority(d);
    let (cert, key) = server_certificate(d, "server", 1001);
    let config = d.join("switchyard.toml");
    std::fs::write(
        &config,
        format!(
            "{}[mcp]\nanonymous = true\n[[mcp.upstreams]]\nname = \"fixture\"\ncommand = [{:?}, \"--stdio\"]\n\
             operations = {{ echo = \"read_only\" }}\n\
             [a2a]\nanonymous = true\n[[a2a.agents]]\nname = \"echo\"\nkind = \"echo\"\n",
            server_section(&cert, &key),
            fixture_binary().display().to_string()
        ),
    )
    .unwrap();
    let gw = Gateway::start(Options { data_dir: d.join("data"), config: Some(config), ..Options::default() });
    assert!(gw.base.starts_with("https://127.0.0.1:"), "the ready line names https: {}", gw.base);
    let port = gw.base.rsplit(':').next().unwrap_or_default().to_string();

    // ALPN: HTTP/2 when the client offers it, HTTP/1.1 otherwise; no plain HTTP on this port.
    let health = format!("{}/healthz", gw.base);
    assert_eq!(curl(d, &["-o", "/dev/null", "-w", "%{http_version}", &health]), (true, "2".to_string()));
    assert_eq!(curl(d, &["--http1.1", "-o", "/dev/null", "-w", "%{http_version}", &health]), (true, "1.1".to_string()));
    let (plain_ok, _) = curl(d, &["-f", &format!("http://127.0.0.1:{port}/healthz")]);
    assert!(!plain_ok, "plain HTTP to the TLS port is not served");
    assert_eq!(served_serial(d, &port), "serial=03E9");

    // The official Python MCP SDK, both eras, trusting the test CA (httpx reads SSL_CERT_FILE).
    let ca = d.join("ca.pem");
    for era in ["2026-07-28", "legacy"] {
        let out = tokio::process::Command::new(python())
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_peer_client.py"))
            .args([&format!("{}/mcp", gw.base), era, r#"[["call", "fixture__echo", {"text": "over tls"}]]"#])
            .env("SSL_CERT_FILE", &ca)
            .output()
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("over tls"),
            "{era}: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // The official Python A2A SDK on every binding (gRPC with TLS credentials from the same CA).
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let out = tokio::process::Command::new(python())
            .arg(switchyard_tests::a2a::python_client_script())
            .args(["route", &format!("{}/a2a/echo", gw.base), binding, "hello"])
            .env("SSL_CERT_FILE", &ca)
            .env("SWITCHYARD_TEST_CA", &ca)
            .output()
            .await
            .unwrap();
        let got = lines(&out);
        let line: Value =
            got.first().cloned().unwrap_or_else(|| panic!("{binding}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(line["reply"], "echo: hello", "{binding}: {line}");
        if binding != "GRPC" {
            let url = line["interface"]["url"].as_str().unwrap_or_default();
            assert!(url.starts_with("https://127.0.0.1:"), "the card names https: {line}");
        }
    }

    // The console's session cookie is Secure over TLS.
    let (_, headers) = curl(
        d,
        &[
            "-i",
            "-X",
            "POST",
            &format!("{}/console/login", gw.base),
            "-H",
            &format!("origin: {}", gw.base),
            "-H",
            "content-type: application/x-www-form-urlencoded",
            "--data",
            &format!("token={TOKEN}&tenant=default&name=operator"),
        ],
    );
    let cookie = headers.lines().find(|l| l.to_ascii_lowercase().starts_with("set-cookie:")).unwrap_or_default();
    assert!(cookie.contains("; Secure"), "{headers}");

    // A certificate replaced on disk is served to the next connection, without a restart.
    let (new_cert, new_key) = server_certificate(d, "renewed", 1002);
    std::fs::rename(&new_key, &key).unwrap();
    std::fs::rename(&new_cert, &cert).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut serial = served_serial(d, &port);
    while serial != "serial=03EA" && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        serial = served_serial(d, &port);
    }
    assert_eq!(serial, "serial=03EA", "the renewed certificate is served");
    assert_eq!(curl(d, &["-o", "/dev/null", "-w", "%{http_code}", &health]), (true, "200".to_string()));
}
