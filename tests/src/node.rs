//! Node scripts of the tests (`tests/js/`), run next to npm packages that scripts/test.sh
//! installs into the tools cache.

use std::path::PathBuf;

/// Runs `tests/js/<script>` with `args` on Node (`SWITCHYARD_NODE`, else `node`), next to the
/// `node_modules` of the directory `$<env>` (default `$HOME/.cache/switchyard-tools/<default>`),
/// which must hold `package` (else the test fails, saying how to get it). ES modules resolve
/// packages from the script's own directory, so the script is copied there under a name of its
/// own.
pub async fn run(env: &str, default: &str, package: &str, script: &str, args: &[&str]) -> std::process::Output {
    let dir = packages(env, default, package);
    let copy = dir.join(format!("run-{}-{script}", uuid::Uuid::new_v4().simple()));
    std::fs::copy(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("js").join(script), &copy)
        .unwrap_or_else(|e| panic!("copy {script}: {e}"));
    let out = tokio::process::Command::new(node())
        .arg(&copy)
        .args(args)
        .output()
        .await
        .unwrap_or_else(|e| panic!("node: {e}"));
    let _ = std::fs::remove_file(&copy);
    out
}

/// The directory `$<env>` (default `$HOME/.cache/switchyard-tools/<default>`) whose
/// `node_modules` hold `package`; the test fails, saying how to get it, when they do not.
pub fn packages(env: &str, default: &str, package: &str) -> PathBuf {
    let dir = std::env::var_os(env).filter(|p| !p.is_empty()).map_or_else(
        || PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/switchyard-tools").join(default),
        PathBuf::from,
    );
    assert!(
        dir.join("node_modules").join(package).join("package.json").exists(),
        "no {package} in {}: run `bash scripts/test.sh` (it installs it from npm) or set {env}",
        dir.display()
    );
    dir
}

/// The Node to run: `SWITCHYARD_NODE`, else `node` on the PATH.
pub fn node() -> String {
    std::env::var("SWITCHYARD_NODE").ok().filter(|n| !n.is_empty()).unwrap_or_else(|| "node".into())
}
