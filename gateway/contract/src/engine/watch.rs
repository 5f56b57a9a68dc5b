//! `watch`: every event after a sequence number, in order, without gaps or duplicates (G9).
//! Reads come from the store, so a watcher sees events committed by any replica; local
//! changes to its invocation wake it at once (and only those: see [`super::hub`]), so do other
//! replicas' when a change feed is attached, and it re-reads every poll interval for changes it
//! was not told about.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt};

use super::Inner;
use super::hub::Following;
use crate::error::Error;
use crate::event::Event;
use crate::id::InvocationId;
use crate::principal::TenantId;

struct Cursor {
    inner: Arc<Inner>,
    tenant: TenantId,
    id: InvocationId,
    after: u64,
    buffered: VecDeque<Event>,
    checked_owner: bool,
    done: bool,
    /// Made before the first read, so that no change falls between a read and the wait.
    following: Following,
    /// The feed's resyncs this watcher has read after.
    resyncs: u64,
}

pub(super) fn stream(
    inner: Arc<Inner>,
    tenant: TenantId,
    id: InvocationId,
    after: u64,
) -> BoxStream<'static, Result<Event, Error>> {
    let following = inner.hub.follow(id);
    let resyncs = following.rx.borrow().resyncs;
    let cursor = Cursor {
        inner,
        tenant,
        id,
        after,
        buffered: VecDeque::new(),
        checked_owner: false,
        done: false,
        following,
        resyncs,
    };
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
        let poll = tokio::time::sleep(c.inner.poll_every());
        tokio::select! {
            () = changed(c) => {}
            () = poll => {}
            // Shutting down: end the stream so connections drain; a client resumes elsewhere
            // from its last sequence number.
            _ = super::stopped(&mut stopping) => {
                c.done = true;
                return None;
            }
        }
    }
}

/// Resolves when the watched invocation moved past what the watcher has read (here or on
/// another replica), or when notices may have been lost.
async fn changed(c: &mut Cursor) {
    // The slot lives as long as the cursor: its sender never goes away first.
    while c.following.rx.changed().await.is_ok() {
        let seen = c.following.rx.borrow_and_update();
        if seen.beyond(c.after, c.resyncs) {
            c.resyncs = seen.resyncs;
            return;
        }
    }
    std::future::pending().await
}
