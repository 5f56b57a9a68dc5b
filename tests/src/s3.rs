//! A real S3-compatible server for tests: `s3s-fs` 0.14.1 (files in a temp directory), served
//! in-process on its own thread and runtime, on a TCP socket at `127.0.0.1:<free port>`, with
//! SigV4 authentication on (unsigned or wrongly signed requests get 403).
//!
//! In-process rather than the `s3s-fs` binary: no separate `cargo install` step or PATH lookup,
//! the version is pinned by `Cargo.lock`, port 0 means no port clashes between parallel tests,
//! it is ready in milliseconds and it stops (and its directory is removed) when dropped, even
//! when a test panics. The client still speaks real HTTP with real signatures to it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use switchyard_artifacts::S3Settings;

pub const ACCESS_KEY: &str = "switchyard-test";
pub const SECRET_KEY: &str = "switchyard-test-secret";

/// A running server; stops when dropped.
#[derive(Debug)]
pub struct S3Server {
    addr: SocketAddr,
    root: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: Option<tempfile::TempDir>,
}

impl S3Server {
    /// Starts a server over a fresh temp directory.
    pub fn start() -> Self {
        let dir = tempfile::Builder::new().prefix("switchyard-s3-").tempdir();
        let dir = dir.unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
        let mut server = Self::start_at(dir.path(), "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}")));
        server._dir = Some(dir);
        server
    }

    /// Starts a server over `root` (kept), listening on `listen`.
    pub fn start_at(root: &Path, listen: SocketAddr) -> Self {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let root_owned = root.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("s3s-fs".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
                let rt = rt.unwrap_or_else(|e| panic!("S3 test server runtime: {e}"));
                rt.block_on(serve(root_owned, listen, addr_tx, stopped));
            })
            .unwrap_or_else(|e| panic!("cannot start the S3 test server thread: {e}"));
        let addr = addr_rx.recv_timeout(Duration::from_secs(10));
        let addr = addr.unwrap_or_else(|e| panic!("S3 test server did not start: {e}"));
        Self { addr, root: root.to_path_buf(), stop: Some(stop), thread: Some(thread), _dir: None }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The directory holding the buckets.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Client settings for `bucket` on this server (path style, static keys).
    pub fn settings(&self, bucket: &str) -> S3Settings {
        S3Settings {
            endpoint: self.endpoint(),
            region: "us-east-1".into(),
            bucket: bucket.into(),
            prefix: String::new(),
            path_style: true,
            access_key_id: ACCESS_KEY.into(),
            secret_access_key: SECRET_KEY.into(),
            session_token: None,
            part_size: 5 * 1024 * 1024,
            concurrency: 4,
        }
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(
    root: PathBuf,
    listen: SocketAddr,
    addr_tx: std::sync::mpsc::Sender<SocketAddr>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let fs = s3s_fs::FileSystem::new(&root).unwrap_or_else(|e| panic!("s3s-fs over {}: {e:?}", root.display()));
    let mut builder = S3ServiceBuilder::new(fs);
    builder.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
    let service = builder.build();
    let listener = tokio::net::TcpListener::bind(listen).await;
    let listener = listener.unwrap_or_else(|e| panic!("S3 test server cannot listen on {listen}: {e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let _ = addr_tx.send(addr);
    let http = ConnBuilder::new(TokioExecutor::new());
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((socket, _)) = accepted else { continue };
                let conn = http.serve_connection(TokioIo::new(socket), service.clone()).into_owned();
                conns.spawn(async move {
                    let _ = conn.await;
                });
            }
            _ = &mut stopped => break,
        }
    }
    conns.abort_all();
}
