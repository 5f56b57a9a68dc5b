//! An upload killed halfway leaves nothing readable: the real `switchyard artifacts put`
//! process streams from a named pipe, is `kill -9`ed in the middle of the upload, and
//! afterwards no artifact exists, no object is readable, and the collector sweeps the leftover.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use switchyard_tests::gateway::binary;
use switchyard_tests::s3::{ACCESS_KEY, S3Server, SECRET_KEY};

const MIB: usize = 1024 * 1024;

/// Starts `artifacts put <fifo>`, feeds it `fed` bytes, waits for `midway` to hold, then kills
/// it with SIGKILL. Returns the environment used, for the follow-up CLI calls.
fn kill_midway(
    dir: &Path,
    extra_env: &[(&str, String)],
    fed: usize,
    midway: impl Fn() -> bool,
) -> Vec<(String, String)> {
    let fifo = dir.join("upload.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap_or_else(|e| panic!("mkfifo: {e}"));
    assert!(made.success());
    let mut env: Vec<(String, String)> =
        vec![("SWITCHYARD__SERVER__DATA_DIR".into(), dir.join("data").display().to_string())];
    env.extend(extra_env.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let invocation = format!("inv_{}", uuid::Uuid::now_v7().simple());
    let mut child = Command::new(binary())
        .args(["artifacts", "put", &fifo.display().to_string(), "--tenant", "t", "--invocation", &invocation])
        .envs(env.iter().cloned())
        .env_remove("SWITCHYARD_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    // Opening the pipe for writing waits for the CLI to open it for reading.
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap_or_else(|e| panic!("open fifo: {e}"));
    let chunk = vec![0x5au8; MIB];
    for _ in 0..fed / MIB {
        writer.write_all(&chunk).unwrap_or_else(|e| panic!("feed: {e}"));
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while !midway() {
        assert!(Instant::now() < deadline, "the upload never got under way");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap_or_else(|e| panic!("kill: {e}"));
    let status = child.wait().unwrap_or_else(|e| panic!("wait: {e}"));
    assert!(!status.success(), "the upload was killed, not finished");
    drop(writer);
    env
}

fn cli(env: &[(String, String)], args: &[&str]) -> String {
    let out = Command::new(binary())
        .args(args)
        .envs(env.iter().cloned())
        .env_remove("SWITCHYARD_CONFIG")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.flatten().count()).unwrap_or(0)
}

#[test]
fn filesystem_upload_killed_halfway_leaves_nothing_readable() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("data/artifacts/tmp");
    let staged = || std::fs::read_dir(&tmp).is_ok_and(|d| d.flatten().any(|e| e.metadata().is_ok_and(|m| m.len() > 0)));
    let env = kill_midway(dir.path(), &[], 4 * MIB, staged);
    assert!(cli(&env, &["artifacts", "list", "--tenant", "t"]).lines().all(|l| !l.contains("art_")), "no artifact");
    let objects: usize = std::fs::read_dir(dir.path().join("data/artifacts/sha256"))
        .map(|d| d.flatten().map(|e| files_in(&e.path())).sum())
        .unwrap_or(0);
    assert_eq!(objects, 0, "no finished object");
    assert_eq!(files_in(&tmp), 1, "the killed upload's staging file is left behind, unreadable");
    let mut gc_env = env.clone();
    gc_env.push(("SWITCHYARD__ARTIFACTS__GC_GRACE_MS".into(), "0".into()));
    cli(&gc_env, &["artifacts", "gc"]);
    assert_eq!(files_in(&tmp), 0, "the collector swept the leftover");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_upload_killed_halfway_leaves_nothing_readable() {
    let s3 = S3Server::start();
    let dir = tempfile::tempdir().unwrap();
    let bucket = "killed-uploads";
    let env = [
        ("SWITCHYARD__ARTIFACTS__BACKEND", "s3".to_string()),
        ("SWITCHYARD__ARTIFACTS__S3_ENDPOINT", s3.endpoint()),
        ("SWITCHYARD__ARTIFACTS__S3_BUCKET", bucket.to_string()),
        ("SWITCHYARD__ARTIFACTS__S3_PATH_STYLE", "true".to_string()),
        ("SWITCHYARD__ARTIFACTS__S3_CREATE_BUCKET", "true".to_string()),
        ("SWITCHYARD__ARTIFACTS__S3_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
        ("SWITCHYARD__ARTIFACTS__S3_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
        ("SWITCHYARD__ARTIFACTS__PART_SIZE_BYTES", (5 * MIB).to_string()),
    ];
    // 7 MiB fed: the first 5 MiB part goes up (a multipart upload is open), then the CLI waits
    // for more input and is killed.
    let root = s3.root().to_path_buf();
    let bytes_on_server = move || dir_size(&root) >= 5 * MIB as u64;
    let env = tokio::task::spawn_blocking({
        let d = dir.path().to_path_buf();
        move || kill_midway(&d, &env, 7 * MIB, bytes_on_server)
    })
    .await
    .unwrap();
    assert!(cli(&env, &["artifacts", "list", "--tenant", "t"]).lines().all(|l| !l.contains("art_")), "no artifact");
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(ACCESS_KEY, SECRET_KEY, None, None, "test"))
        .endpoint_url(s3.endpoint())
        .force_path_style(true)
        .build();
    let listed = aws_sdk_s3::Client::from_conf(conf).list_objects_v2().bucket(bucket).send().await;
    let listed = listed.unwrap_or_else(|e| panic!("list: {e:?}"));
    assert_eq!(listed.contents().len(), 0, "no readable object: {:?}", listed.contents());
}

fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}
