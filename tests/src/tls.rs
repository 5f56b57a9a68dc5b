//! Test certificates made with the `openssl` command: a throw-away CA and server certificates
//! for `127.0.0.1` and `localhost` it signs, for the gateway's own TLS listener.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `program args…` in `dir` and returns its stdout; panics, saying what to install, when
/// it cannot run or fails.
pub fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e} (install it: apt-get install {program})"));
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `openssl req` making a new P-256 key, unencrypted.
const NEW_P256_KEY: [&str; 6] = ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];

/// A test CA in `dir`: `ca.pem` (the certificate clients trust) and `ca.key`.
pub fn certificate_authority(dir: &Path) -> PathBuf {
    let ca = ["-x509", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=switchyard test CA"];
    run(dir, "openssl", &[NEW_P256_KEY.as_slice(), &ca].concat());
    dir.join("ca.pem")
}

/// A server certificate for 127.0.0.1 and localhost, signed by the CA in `dir`, with `serial`:
/// (`<name>.pem`, `<name>.key`).
pub fn server_certificate(dir: &Path, name: &str, serial: u32) -> (PathBuf, PathBuf) {
    let (key, csr, pem, ext) =
        (format!("{name}.key"), format!("{name}.csr"), format!("{name}.pem"), format!("{name}.ext"));
    std::fs::write(
        dir.join(&ext),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let request = ["-keyout", key.as_str(), "-out", csr.as_str(), "-subj", "/CN=localhost"];
    run(dir, "openssl", &[NEW_P256_KEY.as_slice(), &request].concat());
    let serial = serial.to_string();
    run(
        dir,
        "openssl",
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-set_serial",
            &serial,
            "-days",
            "2",
            "-out",
            &pem,
            "-extfile",
            &ext,
        ],
    );
    (dir.join(pem), dir.join(key))
}

/// The `[server]` section that serves TLS with `cert` and `key`.
pub fn server_section(cert: &Path, key: &Path) -> String {
    format!("[server]\ntls = {{ cert = {:?}, key = {:?} }}\n", cert.display().to_string(), key.display().to_string())
}

/// A reqwest client that trusts the CA certificate at `ca` (PEM).
pub fn client_trusting(ca: &Path) -> reqwest::Client {
    trusting(ca, reqwest::Client::builder())
}

/// `builder`'s client, trusting the CA certificate at `ca` (PEM) too.
pub fn trusting(ca: &Path, builder: reqwest::ClientBuilder) -> reqwest::Client {
    let pem = std::fs::read(ca).unwrap_or_else(|e| panic!("{}: {e}", ca.display()));
    let root = reqwest::Certificate::from_pem(&pem).unwrap_or_else(|e| panic!("{e}"));
    builder.add_root_certificate(root).build().unwrap_or_else(|e| panic!("{e}"))
}
