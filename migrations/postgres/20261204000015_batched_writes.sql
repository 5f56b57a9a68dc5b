-- The fast paths' batched write (gateway/store/src/batch.rs): the admissions and held-lease
-- transitions of many calls, and their events, in one statement. Each argument is one column of
-- an `unnest`: new invocations (new_*), changes to rows that must still be as their callers saw
-- them with the lease live (held_*, was_*), and the events of both (ev_*). Answers the rows
-- written, with their lease expiry and the database time they were written at.
--
-- A function so that each connection plans it once (PL/pgSQL caches the plan) and never with a
-- whole-table scan: a generic plan settled while the table was nearly empty would otherwise
-- hash-join against a sequential scan of every invocation, until the next ANALYZE.
CREATE FUNCTION switchyard_write_batch(
    new_id text[],
    new_tenant text[],
    new_subject text[],
    new_upstream text[],
    new_operation text[],
    new_effect text[],
    new_request text[],
    new_digest text[],
    new_ingress_key text[],
    new_state text[],
    new_state_data text[],
    new_attempts bigint[],
    new_lease_owner text[],
    new_fence bigint[],
    new_ttl bigint[],
    new_last_seq bigint[],
    new_parent_id text[],
    new_trace_context text[],
    held_id text[],
    held_state text[],
    held_state_data text[],
    held_attempts bigint[],
    held_cancel_data text[],
    held_lease_owner text[],
    held_fence bigint[],
    held_ttl bigint[],
    held_last_seq bigint[],
    held_was_seq bigint[],
    held_was_fence bigint[],
    held_was_owner text[],
    held_was_expires bigint[],
    ev_inv text[],
    ev_seq bigint[],
    ev_event_id text[],
    ev_kind text[],
    ev_data text[]
) RETURNS TABLE (written_id TEXT, written_expires BIGINT, written_at BIGINT)
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
BEGIN
    RETURN QUERY
        WITH clock AS (SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS ms),
        ins AS (INSERT INTO invocations (id, tenant, subject, upstream, operation, effect, request, digest,
            ingress_key, state, state_data, attempts, lease_owner, fence, lease_expires_ms, last_seq, created_ms,
            updated_ms, parent_id, trace_context)
            SELECT a.id, a.tenant, a.subject, a.upstream, a.operation, a.effect, a.request::jsonb, a.digest,
            a.ingress_key, a.state, a.state_data::jsonb, a.attempts, a.lease_owner, a.fence, clock.ms + a.ttl,
            a.last_seq, clock.ms, clock.ms, a.parent_id, a.trace_context
            FROM clock, unnest(new_id, new_tenant, new_subject, new_upstream, new_operation, new_effect, new_request,
            new_digest, new_ingress_key, new_state, new_state_data, new_attempts, new_lease_owner, new_fence,
            new_ttl, new_last_seq, new_parent_id, new_trace_context)
            AS a(id, tenant, subject, upstream, operation, effect, request, digest, ingress_key, state, state_data,
            attempts, lease_owner, fence, ttl, last_seq, parent_id, trace_context)
            ON CONFLICT (tenant, ingress_key) WHERE ingress_key IS NOT NULL DO NOTHING
            RETURNING id, lease_expires_ms, created_ms AS at_ms),
        upd AS (UPDATE invocations i SET state = h.state, state_data = h.state_data::jsonb, attempts = h.attempts,
            cancel_data = h.cancel_data::jsonb, lease_owner = h.lease_owner, fence = h.fence,
            lease_expires_ms = clock.ms + h.ttl, last_seq = h.last_seq, updated_ms = clock.ms
            FROM clock, unnest(held_id, held_state, held_state_data, held_attempts, held_cancel_data, held_lease_owner,
            held_fence, held_ttl, held_last_seq, held_was_seq, held_was_fence, held_was_owner, held_was_expires)
            AS h(id, state, state_data, attempts, cancel_data, lease_owner, fence, ttl, last_seq, was_seq,
            was_fence, was_owner, was_expires)
            WHERE i.id = h.id AND i.last_seq = h.was_seq AND i.fence = h.was_fence AND i.lease_owner = h.was_owner
            AND i.lease_expires_ms = h.was_expires AND i.lease_expires_ms > clock.ms
            RETURNING i.id, i.lease_expires_ms, i.updated_ms AS at_ms),
        done AS (SELECT id, lease_expires_ms, at_ms FROM ins UNION ALL SELECT id, lease_expires_ms, at_ms FROM upd),
        ev AS (INSERT INTO invocation_events (invocation_id, seq, event_id, kind, data, at_ms)
            SELECT e.inv, e.seq, e.event_id, e.kind, e.data::jsonb, done.at_ms
            FROM unnest(ev_inv, ev_seq, ev_event_id, ev_kind, ev_data)
            AS e(inv, seq, event_id, kind, data) JOIN done ON done.id = e.inv)
        SELECT done.id, done.lease_expires_ms, done.at_ms FROM done;
END
$$;
