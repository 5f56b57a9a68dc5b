//! A fault-injecting TCP proxy for tests: listens on 127.0.0.1 and relays each connection to a
//! target (a TCP address or a unix socket, such as a test PostgreSQL's). Armed with a byte
//! pattern, it lets the next client message that contains the pattern through to the target,
//! then cuts the connection the moment the target starts answering it: the statement ran (and,
//! for a single statement, committed), its answer never arrives. Every other byte is relayed
//! as is.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream, UnixStream};
use tokio::sync::Mutex;

/// Where the proxy relays to.
#[derive(Debug, Clone)]
pub enum Target {
    Tcp(String),
    Unix(std::path::PathBuf),
}

/// A running proxy (its task ends with the test's runtime).
#[derive(Debug, Clone)]
pub struct FaultProxy {
    /// `127.0.0.1:<port>`.
    pub addr: String,
    armed: Arc<Mutex<Option<Vec<u8>>>>,
    cuts: Arc<AtomicUsize>,
}

impl FaultProxy {
    pub async fn start(target: Target) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("proxy bind: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}")).to_string();
        let proxy = FaultProxy { addr, armed: Arc::default(), cuts: Arc::default() };
        let p = proxy.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (p, target) = (p.clone(), target.clone());
                tokio::spawn(async move {
                    let _ = client.set_nodelay(true);
                    match target {
                        Target::Tcp(a) => {
                            if let Ok(server) = TcpStream::connect(a).await {
                                p.relay(client, server).await;
                            }
                        }
                        Target::Unix(path) => {
                            if let Ok(server) = UnixStream::connect(path).await {
                                p.relay(client, server).await;
                            }
                        }
                    }
                });
            }
        });
        proxy
    }

    /// Cuts the connection that next sends `pattern`, once its target starts answering.
    pub async fn arm(&self, pattern: &[u8]) {
        *self.armed.lock().await = Some(pattern.to_vec());
    }

    /// How many connections were cut.
    pub fn cuts(&self) -> usize {
        self.cuts.load(Ordering::SeqCst)
    }

    async fn relay<S>(&self, client: TcpStream, server: S)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (mut cr, mut cw) = client.into_split();
        let (mut sr, mut sw) = tokio::io::split(server);
        // Set once this connection carried the armed pattern: its next answer is dropped.
        let doomed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let up = {
            let (armed, doomed) = (self.armed.clone(), doomed.clone());
            async move {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match cr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    {
                        let mut armed = armed.lock().await;
                        if armed.as_ref().is_some_and(|p| contains(&buf[..n], p)) {
                            *armed = None;
                            doomed.store(true, Ordering::SeqCst);
                        }
                    }
                    if sw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        };
        let down = {
            let (doomed, cuts) = (doomed.clone(), self.cuts.clone());
            async move {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match sr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if doomed.load(Ordering::SeqCst) {
                        cuts.fetch_add(1, Ordering::SeqCst);
                        break; // the answer is lost: the client's side closes
                    }
                    if cw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                let _ = cw.shutdown().await;
            }
        };
        // Either side ending ends the connection (both halves drop).
        tokio::select! {
            () = up => {}
            () = down => {}
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}
