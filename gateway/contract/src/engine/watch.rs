//! `watch`: every event after a sequence number, in order, without gaps or duplicates (G9).
//! Reads come from the store, so a watcher sees events committed by any replica; local
//! changes wake it at once, so do other replicas' when a change feed is attached, and it re-reads
//! every poll interval for changes it was not told about.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt};
use tokio::sync::broadcast;

use super::Inner;
use crate::error::Error;
use crate::event::Event;
use crate::id::InvocationId;
use crate::ports::Changed;
use crate::principal::TenantId;
use crate::state::Invocation;

struct Cursor {
    inner: Arc<Inner>,
    tenant: TenantId,
    id: InvocationId,
    after: u64,
    buffered: VecDeque<Event>,
    checked_owner: bool,
    done: bool,
}

pub(super) fn stream(
    inner: Arc<Inner>,
    tenant: TenantId,
    id: InvocationId,
    after: u64,
) -> BoxStream<'static, Result<Event, Error>> {
    let cursor = Cursor { inner, tenant, id, after, buffered: VecDeque::new(), checked_owner: false, done: false };
    stream::unfold(cursor, |mut c| async move {
        let item = next(&mut c).await?;
        Some((item, c))
    })
    .boxed()
}

async fn next(c: &mut Cursor) -> Option<Result<Event, Error>> {
    if c.done {
        return None;
    }
    if !c.checked_owner {
        if let Err(e) = c.inner.owned(&c.tenant, c.id).await {
            c.done = true;
            return Some(Err(e));
        }
        c.checked_owner = true;
    }
    let mut changes = c.inner.changed.subscribe();
    let mut remote = c.inner.remote.subscribe();
    let mut stopping = c.inner.stopping.subscribe();
    loop {
        if let Some(ev) = c.buffered.pop_front() {
            c.after = ev.seq;
            c.done = ev.kind.is_terminal();
            return Some(Ok(ev));
        }
        // Read the state before the events: if it was terminal then, the events read after
        // it include the terminal one, so an empty read means the stream is complete.
        let terminal = match c.inner.store.get(None, c.id).await {
            Ok(inv) => inv.is_some_and(|i| i.state.is_terminal()),
            Err(e) => {
                c.done = true;
                return Some(Err(e));
            }
        };
        match c.inner.store.events(c.id, c.after, 200).await {
            Ok(evs) if !evs.is_empty() => {
                c.buffered.extend(evs);
                continue;
            }
            Ok(_) if terminal => return None,
            Ok(_) => {}
            Err(e) => {
                c.done = true;
                return Some(Err(e));
            }
        }
        tokio::select! {
            _ = changed(&mut changes, c.id) => {}
            _ = changed_elsewhere(&mut remote, c.id, c.after) => {}
            _ = tokio::time::sleep(c.inner.poll_every()) => {}
            // Shutting down: end the stream so connections drain; a client resumes elsewhere
            // from its last sequence number.
            _ = super::stopped(&mut stopping) => {
                c.done = true;
                return None;
            }
        }
    }
}

/// Resolves when this process changes invocation `id` (or when notifications were lost and
/// the store must be re-read).
async fn changed(changes: &mut broadcast::Receiver<Arc<Invocation>>, id: InvocationId) {
    loop {
        match changes.recv().await {
            Ok(changed) if changed.id == id => return,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => return,
            Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }
}

/// Resolves when another replica moved invocation `id` past event `after` (or when notices were
/// lost and the store must be re-read).
async fn changed_elsewhere(remote: &mut broadcast::Receiver<Changed>, id: InvocationId, after: u64) {
    loop {
        match remote.recv().await {
            Ok(change) if super::moved(&change, id, after) => return,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => return,
            Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }
}
