//! TLS at the edge: the listener terminates TLS itself (rustls on aws-lc-rs, the one crypto
//! provider), offering HTTP/2 and HTTP/1.1 by ALPN (gRPC rides on HTTP/2), and serves a
//! certificate replaced on disk to the next connection, without a restart.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde::{Deserialize, Serialize};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tracing::{debug, info, warn};

/// `[server] tls = { cert, key }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// The certificate chain, PEM, the server's certificate first.
    pub cert: PathBuf,
    /// Its private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// A handshake that has not finished by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The files are looked at again at most this often.
const RECHECK: Duration = Duration::from_secs(1);

/// Reads and checks the certificate and key the configuration names.
pub fn load(cfg: &TlsConfig) -> anyhow::Result<Arc<CertifiedKey>> {
    let certs = CertificateDer::pem_file_iter(&cfg.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("server.tls.cert {}: cannot read a PEM certificate chain", cfg.cert.display()))?;
    anyhow::ensure!(!certs.is_empty(), "server.tls.cert {}: no PEM `CERTIFICATE` in it", cfg.cert.display());
    let key = PrivateKeyDer::from_pem_file(&cfg.key)
        .with_context(|| format!("server.tls.key {}: cannot read a PEM private key", cfg.key.display()))?;
    let signer = rustls::crypto::aws_lc_rs::sign::any_supported_type(&key)
        .with_context(|| format!("server.tls.key {}: unsupported key", cfg.key.display()))?;
    let certified = CertifiedKey::new(certs, signer);
    certified.keys_match().with_context(|| {
        format!("server.tls.key {} is not the key of server.tls.cert {}", cfg.key.display(), cfg.cert.display())
    })?;
    Ok(Arc::new(certified))
}

/// What identifies a file's version: its modification time and length.
type Stamp = [Option<(SystemTime, u64)>; 2];

fn stamp(cfg: &TlsConfig) -> Stamp {
    let of = |p: &Path| std::fs::metadata(p).ok().and_then(|m| Some((m.modified().ok()?, m.len())));
    [of(&cfg.cert), of(&cfg.key)]
}

/// The certificate on disk: looked at again at most once a second (on a handshake), reloaded
/// when either file changed; a replacement that does not load keeps the one served (logged).
#[derive(Debug)]
struct Reloading {
    cfg: TlsConfig,
    current: RwLock<(Arc<CertifiedKey>, Stamp)>,
    checked: Mutex<Instant>,
}

impl Reloading {
    fn new(cfg: &TlsConfig) -> anyhow::Result<Reloading> {
        let stamp = stamp(cfg);
        let key = load(cfg)?;
        Ok(Reloading { cfg: cfg.clone(), current: RwLock::new((key, stamp)), checked: Mutex::new(Instant::now()) })
    }

    fn refresh(&self) {
        match self.checked.lock() {
            Ok(mut checked) if checked.elapsed() >= RECHECK => *checked = Instant::now(),
            _ => return,
        }
        let now = stamp(&self.cfg);
        if self.current.read().is_ok_and(|c| c.1 == now) {
            return;
        }
        match load(&self.cfg) {
            Ok(key) => {
                if let Ok(mut current) = self.current.write() {
                    *current = (key, now);
                    info!(cert = %self.cfg.cert.display(), "TLS certificate reloaded");
                }
            }
            // Not recorded as seen: the next look tries again (the files may be mid-replacement).
            Err(e) => warn!(
                error = format!("{e:#}"),
                "TLS certificate changed on disk but does not load; serving the previous one"
            ),
        }
    }
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.refresh();
        self.current.read().ok().map(|c| c.0.clone())
    }
}

/// A listener that hands axum connections whose TLS handshake has completed. Handshakes run
/// concurrently (a slow client holds up no other); the accept loop ends when this is dropped.
#[derive(Debug)]
pub struct TlsListener {
    ready: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    accepting: tokio::task::AbortHandle,
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

/// Terminates TLS on `tcp` with the configured certificate.
pub fn listen(tcp: TcpListener, cfg: &TlsConfig) -> anyhow::Result<TlsListener> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(Reloading::new(cfg)?));
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(server));
    let local = tcp.local_addr()?;
    let (tx, ready) = tokio::sync::mpsc::channel(64);
    let accepting = tokio::spawn(async move {
        loop {
            let (stream, peer) = match tcp.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            // As on the plain listener: responses go out as they are written.
            if let Err(e) = stream.set_nodelay(true) {
                debug!(error = %e, "cannot set TCP_NODELAY");
            }
            let (acceptor, tx) = (acceptor.clone(), tx.clone());
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => {
                        let _ = tx.send((tls, peer)).await;
                    }
                    Ok(Err(e)) => debug!(%peer, error = %e, "TLS handshake failed"),
                    Err(_) => debug!(%peer, "TLS handshake timed out"),
                }
            });
        }
    });
    Ok(TlsListener { ready, local, accepting: accepting.abort_handle() })
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accept loop ended (it never does on its own): no more connections.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A file that is not PEM, or a key that is not the certificate's, is named in the error.
    #[test]
    fn bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = TlsConfig { cert: write(dir.path(), "cert.pem", "not pem"), key: write(dir.path(), "key.pem", "") };
        let e = format!("{:#}", load(&cfg).err().unwrap_or_else(|| panic!("loaded")));
        assert!(e.contains("server.tls.cert") && e.contains("cert.pem"), "{e}");
        let missing = TlsConfig { cert: dir.path().join("nope.pem"), key: dir.path().join("nope.key") };
        let e = format!("{:#}", load(&missing).err().unwrap_or_else(|| panic!("loaded")));
        assert!(e.contains("nope.pem"), "{e}");
    }
}
