//! Wake-ups per invocation, on [`Bells`]: a change wakes only the waiters and watchers of the
//! invocation it changed. The value of an invocation's slot only moves forward: the newest
//! snapshot this process committed, the highest event another replica announced, and how many
//! times the change feed asked for everything to be re-read.

use std::sync::Arc;

use crate::bells::Bells;
use crate::id::InvocationId;
use crate::state::Invocation;

/// What is known of one invocation's changes since its slot was made.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    /// The newest state this process committed.
    pub snapshot: Option<Arc<Invocation>>,
    /// The highest event sequence another replica announced.
    pub moved: u64,
    /// Bumped when notices may have been lost (the change feed reconnected).
    pub resyncs: u64,
    /// A read's outcome as its upstream reply settles it, before that commits: only for the
    /// callers that take it (see [`Ingress::answers_reads_early`](crate::ports::Ingress::answers_reads_early)),
    /// or for every caller when the upstream recorded it ([`Seen::recorded`]).
    pub answer: Option<Arc<Invocation>>,
    /// The upstream recorded [`Seen::answer`] where its callers read it back
    /// ([`Upstream::answer_recorded`](crate::ports::Upstream::answer_recorded)).
    pub recorded: bool,
}

impl Seen {
    /// Whether a follower that has seen up to event `seq` (and `resyncs` resyncs) must look again.
    pub fn beyond(&self, seq: u64, resyncs: u64) -> bool {
        self.snapshot.as_ref().is_some_and(|s| s.last_seq > seq) || self.moved > seq || self.resyncs != resyncs
    }
}

pub(crate) type Hub = Bells<InvocationId, Seen>;
pub(crate) type Following = crate::bells::Following<InvocationId, Seen>;

impl Hub {
    /// This process committed `inv`: its followers get the snapshot.
    pub(crate) fn committed(&self, inv: &Invocation) {
        self.update(&inv.id, |seen| {
            if seen.snapshot.as_ref().is_some_and(|s| s.last_seq >= inv.last_seq) {
                return false;
            }
            seen.snapshot = Some(Arc::new(inv.clone()));
            true
        });
    }

    /// A reply settles `id` as `answer` computes it (not committed yet; computed only when
    /// someone follows `id`): the followers that take an early answer get it (all of them when
    /// the upstream `recorded` it).
    pub(crate) fn answered(&self, id: &InvocationId, recorded: bool, answer: impl FnOnce() -> Option<Invocation>) {
        self.update(id, |seen| match answer() {
            Some(inv) => {
                seen.answer = Some(Arc::new(inv));
                seen.recorded = recorded;
                true
            }
            None => false,
        });
    }

    /// Another replica moved invocation `id` to event `seq`.
    pub(crate) fn moved(&self, id: InvocationId, seq: u64) {
        self.update(&id, |seen| {
            let newer = seq > seen.moved;
            seen.moved = seen.moved.max(seq);
            newer
        });
    }

    /// Notices may have been lost: every follower reads again.
    pub(crate) fn resync(&self) {
        self.update_all(|seen| seen.resyncs += 1);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::digest::RequestDigest;
    use crate::id::WorkerId;
    use crate::principal::{EffectClass, Principal, Target, TenantId};
    use crate::state::NewInvocation;

    fn invocation() -> Invocation {
        let tenant = TenantId::new("t").unwrap();
        let draft = NewInvocation {
            id: InvocationId::new(),
            principal: Principal::new(tenant, "s"),
            target: Target { upstream: "u".into(), operation: "o".into(), effect: EffectClass::ReadOnly },
            digest: RequestDigest::compute("u", "o", &json!({})).unwrap(),
            request: json!({}),
            ingress_key: None,
            parent: None,
            trace: None,
            worker: WorkerId::new(),
            lease_ttl_ms: 1_000,
            hold: None,
            first_attempt: None,
            proves_unsent: false,
            audit: None,
        };
        Invocation::admit(draft, 0).0
    }

    #[tokio::test]
    async fn a_change_wakes_only_the_followers_of_its_invocation_and_slots_go_with_them() {
        let hub = Arc::new(Hub::default());
        let (a, b) = (invocation(), invocation());
        let mut fa = hub.follow(a.id);
        let mut fa2 = hub.follow(a.id);
        let mut fb = hub.follow(b.id);
        assert_eq!(hub.followed().len(), 2);
        let mut next = a.clone();
        next.last_seq += 1;
        hub.committed(&next);
        assert!(fa.rx.has_changed().unwrap_or(false) && fa2.rx.has_changed().unwrap_or(false));
        assert!(!fb.rx.has_changed().unwrap_or(true), "another invocation's change wakes nobody here");
        assert!(fa.rx.borrow_and_update().beyond(a.last_seq, 0));
        // An older snapshot never replaces a newer one.
        hub.committed(&a);
        assert!(!fa.rx.has_changed().unwrap_or(true));
        hub.moved(b.id, 7);
        assert!(fb.rx.borrow_and_update().beyond(6, 0));
        hub.resync();
        assert!(fa2.rx.borrow_and_update().beyond(u64::MAX - 1, 0));
        drop((fa, fa2));
        assert_eq!(hub.followed(), vec![b.id], "the last follower's slot leaves the hub");
        drop(fb);
        assert!(hub.followed().is_empty());
    }
}
