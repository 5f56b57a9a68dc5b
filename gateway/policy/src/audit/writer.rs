//! One partition's writer: entries from many calls are gathered while the previous batch
//! commits, chained in memory and appended in one multi-row statement; each caller is answered
//! only after that commit. The chain head advances only with a commit, so a failed batch leaves
//! no hole: its callers get the error (a decision then fails closed) and the next batch reloads
//! the head from the store. Two writers on one partition (a misconfigured pair of replicas, two
//! command lines) cannot fork the chain: the second append finds its sequence numbers taken,
//! reloads the head and chains again.

use std::sync::Arc;

use async_trait::async_trait;
use switchyard_contract::audit::chain;
use switchyard_contract::{AuditEntry, AuditLog, AuditStore, Error, ErrorKind};
use tokio::sync::{mpsc, oneshot};

/// At most this many entries share one append.
const BATCH: usize = 512;
/// How often a batch that lost its sequence numbers to another writer chains again.
const RETRIES: usize = 5;

type Pending = (AuditEntry, oneshot::Sender<Result<(), Error>>);

/// An [`AuditLog`] that appends to one partition's chain.
#[derive(Debug, Clone)]
pub struct AuditWriter {
    tx: mpsc::Sender<Pending>,
}

impl AuditWriter {
    /// Starts the partition's writer task (it ends when the last clone of the writer is dropped).
    pub fn start(store: Arc<dyn AuditStore>, partition: impl Into<String>) -> Self {
        let (tx, rx) = mpsc::channel(4 * BATCH);
        tokio::spawn(run(store, partition.into(), rx));
        Self { tx }
    }
}

#[async_trait]
impl AuditLog for AuditWriter {
    async fn append(&self, entry: AuditEntry) -> Result<(), Error> {
        let (reply, answer) = oneshot::channel();
        let gone = || Error::unavailable("the audit log's writer has stopped; nothing was recorded");
        self.tx.send((entry, reply)).await.map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

async fn run(store: Arc<dyn AuditStore>, partition: String, mut rx: mpsc::Receiver<Pending>) {
    let mut head: Option<(u64, String)> = None;
    let mut batch = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        let (entries, replies): (Vec<AuditEntry>, Vec<_>) = batch.drain(..).unzip();
        let result = write(store.as_ref(), &partition, &mut head, &entries).await;
        if let Err(e) = &result {
            tracing::error!(partition = %partition, entries = entries.len(), error = %e, "audit append failed");
        }
        for reply in replies {
            let _ = reply.send(result.clone());
        }
    }
}

/// Chains `entries` after `head` (loaded from the store when unknown) and appends them; the
/// head moves only when the append commits.
async fn write(
    store: &dyn AuditStore,
    partition: &str,
    head: &mut Option<(u64, String)>,
    entries: &[AuditEntry],
) -> Result<(), Error> {
    for _ in 0..RETRIES {
        let last = match head.take() {
            Some(h) => Some(h),
            None => store.head(partition).await?.map(|h| (h.seq, h.hash)),
        };
        let entries: Vec<&AuditEntry> = entries.iter().collect();
        let rows = chain(partition, last, &entries, switchyard_contract::wall_clock_ms())?;
        match store.append(&rows).await {
            Ok(()) => {
                *head = rows.last().map(|r| (r.seq, r.hash.clone()));
                return Ok(());
            }
            Err(e) if e.kind() == ErrorKind::Conflict => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::unavailable(format!(
        "audit partition `{partition}` is being appended to by another writer; nothing was recorded"
    )))
}
