//! A link between two processes: a TCP forwarder the nemesis can cut (both ways), make
//! half-open (bytes go out, answers never come back), make flaky (some requests arrive and
//! their connection is cut before the answer: a lost acknowledgment), or slow down.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use switchyard_tests::fault_proxy::Target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixStream};
use tokio::sync::watch;

/// What the link does to the bytes crossing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Up,
    /// Partitioned both ways: new connections are refused, open ones cut.
    Down,
    /// Requests reach the far side, its answers are dropped.
    HalfOpen,
    /// Every chunk waits this long in each direction.
    Slow(Duration),
    /// Each request (a chunk toward the far side) has this chance in a thousand of reaching it
    /// and then having its connection cut before any answer: the far side ran it, the near side
    /// never hears (a reset connection, a lost acknowledgment).
    Flaky(u32),
}

/// One link: clients connect to [`Link::addr`], the link connects to its target.
#[derive(Debug)]
pub struct Link {
    pub addr: SocketAddr,
    /// The mode and the epoch of the connections it lets live (a cut starts a new one).
    mode: watch::Sender<(Mode, u64)>,
}

impl Link {
    /// A link listening on `bind` (an address of this host, port 0) to `target`.
    pub async fn start(bind: std::net::IpAddr, target: Target) -> Arc<Link> {
        let listener = TcpListener::bind((bind, 0)).await.unwrap_or_else(|e| panic!("link bind: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let (mode, _) = watch::channel((Mode::Up, 0));
        let link = Arc::new(Link { addr, mode });
        let l = link.clone();
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let rx = l.mode.subscribe();
                let (mode, born) = *rx.borrow();
                if mode == Mode::Down {
                    drop(inbound);
                    continue;
                }
                let target = target.clone();
                tokio::spawn(async move {
                    match target {
                        Target::Tcp(a) => {
                            if let Ok(far) = TcpStream::connect(a).await {
                                let _ = far.set_nodelay(true);
                                carry(inbound, far, rx, born).await;
                            }
                        }
                        Target::Unix(p) => {
                            if let Ok(far) = UnixStream::connect(p).await {
                                carry(inbound, far, rx, born).await;
                            }
                        }
                    }
                });
            }
        });
        link
    }

    /// Sets the mode; leaving `Down` or `HalfOpen` cuts the connections opened before (their
    /// streams lost bytes), as a healed partition leaves broken sockets behind.
    pub fn set(&self, mode: Mode) {
        let (old, epoch) = *self.mode.borrow();
        let cut = matches!(old, Mode::HalfOpen | Mode::Down | Mode::Flaky(_)) || mode == Mode::Down;
        let epoch = if cut { epoch + 1 } else { epoch };
        self.mode.send_replace((mode, epoch));
    }
}

async fn carry<S>(inbound: TcpStream, far: S, mut rx: watch::Receiver<(Mode, u64)>, born: u64)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let _ = inbound.set_nodelay(true);
    let (mut ir, mut iw) = inbound.into_split();
    let (mut or, mut ow) = tokio::io::split(far);
    let (mut up, mut down) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    let mut rng = crate::rng::Rng::new(born.wrapping_mul(0x9e37_79b9) ^ std::process::id() as u64 ^ clock_ns());
    loop {
        let (mode, epoch) = *rx.borrow();
        if epoch != born || mode == Mode::Down {
            return;
        }
        let delay = match mode {
            Mode::Slow(d) => d,
            _ => Duration::ZERO,
        };
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { return },
            n = ir.read(&mut up) => {
                let Ok(n @ 1..) = n else { return };
                tokio::time::sleep(delay).await;
                if ow.write_all(&up[..n]).await.is_err() { return }
                let now = rx.borrow().0;
                if let Mode::Flaky(p) = now
                    && rng.below(1000) < u64::from(p)
                {
                    // Let the request reach the far side, then cut before its answer.
                    let _ = ow.flush().await;
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    return;
                }
            }
            n = or.read(&mut down) => {
                let Ok(n @ 1..) = n else { return };
                // Half-open: the answer is read off the far side and never delivered.
                let now = rx.borrow().0;
                if now == Mode::HalfOpen { continue }
                tokio::time::sleep(delay).await;
                if iw.write_all(&down[..n]).await.is_err() { return }
            }
        }
    }
}

fn clock_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos().into())
}
