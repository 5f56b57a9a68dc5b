//! PostgreSQL's one-statement fast paths for the two writes every call makes, kept because each
//! saves round trips on the hot path ([`Dialect::FAST_PATHS`]): admission (the invocation and its
//! first event in one statement, 1 round trip instead of 5) and a transition under a held lease
//! (a conditional update and its events in one statement, instead of lock, read, update, insert
//! and commit). Both use data-modifying `WITH` clauses and `unnest`, which SQLite lacks; there the
//! portable paths of [`crate::invocations`] run (one writer, no network hop).

use std::sync::atomic::Ordering;

use switchyard_contract::{Admission, Error, Event, EventKind, Invocation, NewInvocation, Transition, wall_clock_ms};

use crate::dialect::{self as sql, Cells, Dialect, Stmt};
use crate::invocations::{SqlInvocations, append, bind_identity, bind_mutable, by_key, mutable};
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

    /// One statement: insert the invocation and its first events (the admission, and a read's
    /// first attempt) atomically, on the database clock, unless the tenant already used the
    /// ingress key.
    pub(crate) async fn admit_in_one_statement(&self, draft: NewInvocation) -> Result<Admission, Error> {
        let ttl = draft.lease_ttl_ms;
        let (mut new, first) = Invocation::admit_started(draft, 0);
        let events = append(&mut new, first, 0)?;
        let m = mutable(&new)?;
        let stmt = Stmt::new(format!(
            "WITH clock AS (SELECT {} AS ms), \
             ins AS (INSERT INTO invocations (id, tenant, subject, upstream, operation, effect, request, digest, \
                 ingress_key, state, state_data, attempts, lease_owner, fence, lease_expires_ms, last_seq, created_ms, updated_ms, \
                parent_id, trace_context) \
               SELECT $1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11::jsonb, $20, $12, $13, clock.ms + $14, $15, \
                 clock.ms, clock.ms, $21, $22 FROM clock \
               ON CONFLICT (tenant, ingress_key) WHERE ingress_key IS NOT NULL DO NOTHING RETURNING id, created_ms), \
             ev AS (INSERT INTO invocation_events (invocation_id, seq, event_id, kind, data, at_ms) \
               SELECT ins.id, e.seq, e.event_id, e.kind, e.data::jsonb, ins.created_ms FROM ins, \
                 unnest($16::bigint[], $17::text[], $18::text[], $19::text[]) AS e(seq, event_id, kind, data)) \
             SELECT ins.created_ms FROM ins",
            D::NOW
        ));
        let stmt = bind_identity(stmt, &new)?
            .text(m.state)
            .text(m.state_data)
            .opt_text(m.lease_owner)
            .int(m.fence)
            // A held call takes no lease: NULL + clock is NULL.
            .opt_int(m.lease_expires_ms.map(|_| ttl))
            .int(m.last_seq)
            .ints(events.iter().map(|(e, _)| i64_of(e.seq)).collect::<Result<_, _>>()?)
            .texts(events.iter().map(|(e, _)| e.id.to_string()).collect())
            .texts(events.iter().map(|(e, _)| e.kind.name().to_string()).collect())
            .texts(events.iter().map(|(_, data)| data.clone()).collect())
            .int(m.attempts)
            .opt_text(new.parent.map(|p| p.to_string()))
            .opt_text(new.trace.as_ref().map(switchyard_contract::TraceParent::to_stored));
        if let Some(row) = sql::optional::<D>(self.pools.write(), stmt).await? {
            let now = row.int(0)?;
            new.created_at_ms = now;
            new.updated_at_ms = now;
            new.lease.expires_at_ms = new.lease.expires_at_ms.map(|_| now + ttl);
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
        let m = mutable(&current)?;
        // Times come from the database clock: the lease runs for the same span the transition
        // asked for, counted from the database's now.
        let now = D::NOW;
        let stmt = Stmt::new(format!(
            "WITH u AS (UPDATE invocations SET state = $2, state_data = $3::jsonb, attempts = $4, \
                cancel_data = $5::jsonb, lease_owner = $6, fence = $7, lease_expires_ms = {now} + $8, last_seq = $9, \
                updated_ms = {now} \
              WHERE id = $1 AND last_seq = $10 AND fence = $11 AND lease_owner = $12 AND lease_expires_ms = $13 \
                AND lease_expires_ms > {now} \
              RETURNING id, lease_expires_ms, updated_ms), \
             ev AS (INSERT INTO invocation_events (invocation_id, seq, event_id, kind, data, at_ms) \
              SELECT u.id, e.seq, e.event_id, e.kind, e.data::jsonb, u.updated_ms FROM u, \
                unnest($14::bigint[], $15::text[], $16::text[], $17::text[]) AS e(seq, event_id, kind, data)) \
             SELECT lease_expires_ms, updated_ms FROM u"
        ));
        let mut seqs = Vec::with_capacity(events.len());
        for (e, _) in &events {
            seqs.push(i64_of(e.seq)?);
        }
        let stmt = bind_mutable(stmt, current.id, &m, m.lease_expires_ms.map(|t| t - estimate))
            .int(i64_of(expected.last_seq)?)
            .int(i64_of(expected.lease.fence.0)?)
            .text(owner.to_string())
            .int(expires)
            .ints(seqs)
            .texts(events.iter().map(|(e, _)| e.id.to_string()).collect())
            .texts(events.iter().map(|(e, _)| e.kind.name().to_string()).collect())
            .texts(events.iter().map(|(_, data)| data.clone()).collect());
        let Some(row) = sql::optional::<D>(self.pools.write(), stmt).await? else { return Ok(None) };
        let at = row.int(1)?;
        self.observe_clock(at);
        current.lease.expires_at_ms = row.opt_int(0)?;
        current.updated_at_ms = at;
        for (e, _) in &mut events {
            e.at_ms = at;
        }
        Ok(Some((current, events.into_iter().map(|(e, _)| e).collect())))
    }
}
