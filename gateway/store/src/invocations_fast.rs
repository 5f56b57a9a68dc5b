//! PostgreSQL's fast paths for the two writes every call makes ([`Dialect::FAST_PATHS`]):
//! admission (the invocation and its first events in one write, instead of 5 round trips) and a
//! transition under a held lease (a conditional update and its events, instead of lock, read,
//! update, insert and commit). Each is one row of a statement shared by whatever calls wrote at
//! the same moment ([`crate::batch`]: data-modifying `WITH` clauses and `unnest`, which SQLite
//! lacks; there the portable paths of [`crate::invocations`] run through the group commit).

use std::sync::atomic::Ordering;

use switchyard_contract::{Admission, Error, Event, EventKind, Invocation, NewInvocation, Transition, wall_clock_ms};

use crate::batch::{HeldRow, NewRow};
use crate::dialect::Dialect;
use crate::invocations::{SqlInvocations, append, by_key, mutable};
use crate::row::i64_of;

/// The fast path is taken only while the lease has at least this long left on the estimate.
const FAST_PATH_MARGIN_MS: i64 = 1_000;

impl<D: Dialect> SqlInvocations<D> {
    pub(crate) fn observe_clock(&self, db_now: i64) {
        self.clock_offset_ms.store(db_now - wall_clock_ms(), Ordering::Relaxed);
    }

    fn estimate_now(&self) -> i64 {
        wall_clock_ms() + self.clock_offset_ms.load(Ordering::Relaxed)
    }

    /// Tests only: shifts this store's estimate of the database clock by `ms` (a local clock
    /// that runs ahead or behind), to show the estimate never judges a lease.
    #[doc(hidden)]
    pub fn skew_estimate_for_tests(&self, ms: i64) {
        self.clock_offset_ms.fetch_add(ms, Ordering::Relaxed);
    }

    /// Inserts the invocation and its first events (the admission, and a read's first attempt)
    /// atomically, on the database clock, unless the tenant already used the ingress key: one
    /// row of a batched statement ([`crate::batch`]).
    pub(crate) async fn admit_fast(&self, draft: NewInvocation) -> Result<Admission, Error> {
        let batch = self.batch.as_ref().ok_or_else(|| Error::internal("store: no batched writer on this database"))?;
        let ttl = draft.lease_ttl_ms;
        let (mut new, first) = Invocation::admit_started(draft, 0);
        let events = append(&mut new, first, 0)?;
        let m = mutable(&new)?;
        let row = NewRow { inv: new.clone(), ttl: m.lease_expires_ms.map(|_| ttl), m, events };
        if let Some((expires, now)) = batch.insert(row).await? {
            new.created_at_ms = now;
            new.updated_at_ms = now;
            new.lease.expires_at_ms = expires;
            return Ok(Admission::Created(new));
        }
        let existing = by_key::<D>(self.pools.read(), &new.principal.tenant, new.ingress_key.as_ref()).await?;
        Ok(Admission::Existing(existing))
    }

    /// The held-lease fast path: one statement that applies the change only if the row is still
    /// exactly `expected` and the lease is live on the database clock. `None`: not applied.
    pub(crate) async fn try_held(
        &self,
        expected: &Invocation,
        f: &Transition,
    ) -> Result<Option<(Invocation, Vec<Event>)>, Error> {
        let (Some(owner), Some(expires)) = (expected.lease.owner, expected.lease.expires_at_ms) else {
            return Ok(None);
        };
        let estimate = self.estimate_now();
        // The estimate only chooses the path; it never judges a lease. If it says the lease has
        // run out (or nearly), the locked path decides on the database's clock.
        if !expected.holds_lease(owner, expected.lease.fence, estimate + FAST_PATH_MARGIN_MS) {
            return Ok(None);
        }
        let mut current = expected.clone();
        let Ok(kinds) = f(&mut current, estimate) else { return Ok(None) };
        // A late outcome is judged on the database's clock; so is a retry's start time, which
        // the change computes from `now` and stores (an estimate behind the database would
        // shorten the backoff). Both are rare; the locked path reads the database's now.
        if kinds
            .iter()
            .any(|k| matches!(k, EventKind::LateOutcome { .. } | EventKind::AttemptFailed { retry_at_ms: Some(_), .. }))
        {
            return Ok(None);
        }
        if kinds.is_empty() && current == *expected {
            return Ok(Some((current, Vec::new())));
        }
        let mut events = append(&mut current, kinds, estimate)?;
        let Some(batch) = &self.batch else { return Ok(None) };
        let m = mutable(&current)?;
        // Times come from the database clock: the lease runs for the same span the transition
        // asked for, counted from the database's now.
        let row = HeldRow {
            id: current.id,
            ttl: m.lease_expires_ms.map(|t| t - estimate),
            m,
            was_seq: i64_of(expected.last_seq)?,
            was_fence: i64_of(expected.lease.fence.0)?,
            was_owner: owner.to_string(),
            was_expires: expires,
            events: events.clone(),
        };
        let Some((expires_at, at)) = batch.update_held(row).await? else { return Ok(None) };
        self.observe_clock(at);
        current.lease.expires_at_ms = expires_at;
        current.updated_at_ms = at;
        for (e, _) in &mut events {
            e.at_ms = at;
        }
        Ok(Some((current, events.into_iter().map(|(e, _)| e).collect())))
    }
}
