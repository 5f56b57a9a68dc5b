//! The [`ChangeFeed`] on PostgreSQL: `LISTEN/NOTIFY` on one channel. Each replica announces its
//! committed changes after the commit, coalesced (whatever is queued when the previous notice
//! went out travels in one `pg_notify`, never inside a write transaction, so notifying does not
//! serialize the writers' commits), and listens on one connection of its own, skipping its own
//! notices. A notice lost while the listening connection is down is caught by the engine's slow
//! poll.

use std::collections::VecDeque;
use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};
use sqlx::postgres::{PgListener, PgPool};
use switchyard_contract::{ChangeFeed, InvocationId, WorkerId};
use tokio::sync::mpsc;
use tracing::warn;

/// The channel every replica of one database announces on.
pub const CHANNEL: &str = "switchyard_invocations";
/// At most this many changes in one notice (PostgreSQL caps a payload below 8000 bytes).
const PER_NOTICE: usize = 150;

/// One replica's end of the feed.
#[derive(Debug)]
pub struct PgFeed {
    pool: PgPool,
    /// Names this replica's notices, so that it does not hear itself.
    origin: String,
    queue: mpsc::UnboundedSender<(InvocationId, u64)>,
}

impl PgFeed {
    /// Starts the announcing task (needs a Tokio runtime); listening starts with [`heard`].
    ///
    /// [`heard`]: ChangeFeed::heard
    pub fn new(pool: PgPool) -> Self {
        let origin = WorkerId::new().to_string();
        let (queue, rx) = mpsc::unbounded_channel();
        tokio::spawn(announce(pool.clone(), origin.clone(), rx));
        Self { pool, origin, queue }
    }
}

/// Sends what is queued, one notice per batch, until the feed is dropped.
async fn announce(pool: PgPool, origin: String, mut rx: mpsc::UnboundedReceiver<(InvocationId, u64)>) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < PER_NOTICE {
            match rx.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let changes: Vec<String> = batch.iter().map(|(id, seq)| format!("{id}:{seq}")).collect();
        let payload = format!("{origin}|{}", changes.join(","));
        if let Err(e) = sqlx::query("SELECT pg_notify($1, $2)").bind(CHANNEL).bind(payload).execute(&pool).await {
            warn!(error = %e, "change notice not sent; other replicas see it at their next poll");
        }
    }
}

/// The changes in a notice from another replica (none from `origin`, or from a malformed one).
fn parse(payload: &str, origin: &str) -> Vec<(InvocationId, u64)> {
    let Some((from, changes)) = payload.split_once('|') else { return Vec::new() };
    if from == origin {
        return Vec::new();
    }
    changes
        .split(',')
        .filter_map(|c| {
            let (id, seq) = c.split_once(':')?;
            Some((id.parse().ok()?, seq.parse().ok()?))
        })
        .collect()
}

struct Listening {
    pool: PgPool,
    origin: String,
    listener: Option<PgListener>,
    pending: VecDeque<(InvocationId, u64)>,
}

impl Listening {
    async fn next(&mut self) -> (InvocationId, u64) {
        loop {
            if let Some(change) = self.pending.pop_front() {
                return change;
            }
            let listener = match self.listener.as_mut() {
                Some(l) => l,
                None => match listen(&self.pool).await {
                    Ok(l) => self.listener.insert(l),
                    Err(e) => {
                        warn!(error = %e, "cannot listen for other replicas' changes; retrying in 1 s");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                },
            };
            match listener.recv().await {
                Ok(notice) => self.pending.extend(parse(notice.payload(), &self.origin)),
                Err(e) => {
                    warn!(error = %e, "the listening connection failed; reconnecting");
                    self.listener = None;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }
}

async fn listen(pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut l = PgListener::connect_with(pool).await?;
    l.listen(CHANNEL).await?;
    Ok(l)
}

impl ChangeFeed for PgFeed {
    fn announce(&self, id: InvocationId, seq: u64) {
        // The task ends only with the feed: a failed send means the process is shutting down.
        let _ = self.queue.send((id, seq));
    }

    fn heard(&self) -> BoxStream<'static, (InvocationId, u64)> {
        let state = Listening {
            pool: self.pool.clone(),
            origin: self.origin.clone(),
            listener: None,
            pending: VecDeque::new(),
        };
        stream::unfold(state, |mut s| async move {
            let change = s.next().await;
            Some((change, s))
        })
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_names_its_changes_and_a_replica_skips_its_own() {
        let id = InvocationId::new();
        let payload = format!("a|{id}:3,{id}:4,bogus,x:1");
        assert_eq!(parse(&payload, "b"), vec![(id, 3), (id, 4)]);
        assert!(parse(&payload, "a").is_empty());
        assert!(parse("no separator", "b").is_empty());
    }
}
