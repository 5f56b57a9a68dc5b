//! The history checker: independent of the gateway's code, it reads the clients' history, the
//! upstream's record of physical calls and the store (with `psql`), and names every anomaly.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::workload::{Answer, Approval, Op};

/// One anomaly, with the operation it was seen on.
#[derive(Debug, Clone, Serialize)]
pub struct Anomaly {
    pub class: &'static str,
    pub op: String,
    pub detail: String,
}

/// What the store says about the run.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    /// State of the invocation holding each idempotency key.
    pub by_key: HashMap<String, String>,
    /// Invocations whose events are not numbered 1..=last_seq without gap or repeat.
    pub broken_event_logs: Vec<String>,
    /// Invocations left `unknown`.
    pub unknown: usize,
    /// Invocations not settled (still admitted, dispatching or awaiting) after the run.
    pub unsettled: usize,
}

impl Stored {
    /// Reads the store at `url`.
    pub fn read(url: &str) -> Stored {
        let q = |sql: &str| switchyard_tests::pg::psql(url, sql).unwrap_or_else(|e| panic!("checker query: {e}"));
        let by_key = q("SELECT ingress_key, state FROM invocations WHERE ingress_key IS NOT NULL")
            .lines()
            .filter_map(|l| l.split_once('|'))
            .map(|(k, s)| (k.to_string(), s.to_string()))
            .collect();
        let broken_event_logs =
            q("SELECT i.id FROM invocations i LEFT JOIN invocation_events e ON e.invocation_id = i.id \
               GROUP BY i.id, i.last_seq \
               HAVING COUNT(e.seq) <> i.last_seq OR COUNT(DISTINCT e.seq) <> COUNT(e.seq) \
               OR COALESCE(MAX(e.seq), 0) <> i.last_seq")
            .lines()
            .map(str::to_string)
            .collect();
        let count = |sql: &str| q(sql).trim().parse().unwrap_or(0);
        Stored {
            by_key,
            broken_event_logs,
            unknown: count("SELECT COUNT(*) FROM invocations WHERE state = 'unknown'"),
            unsettled: count(
                "SELECT COUNT(*) FROM invocations WHERE state NOT IN ('succeeded', 'failed', 'canceled', 'unknown')",
            ),
        }
    }
}

/// Every anomaly in the run.
pub fn check(
    ops: &[Op],
    approvals: &[Approval],
    physical: &HashMap<String, usize>,
    stored: &Stored,
    audit_ok: Result<(), String>,
) -> Vec<Anomaly> {
    let approved: std::collections::HashSet<&str> =
        approvals.iter().filter(|a| a.status == 200).map(|a| a.invocation.as_str()).collect();
    let mut found = Vec::new();
    let mut add = |class, op: &Op, detail: String| found.push(Anomaly { class, op: op.id.clone(), detail });
    for op in ops {
        if !op.write {
            // A read answers its own text, or nothing.
            if let Some(Answer::Succeeded { text }) = op.last()
                && *text != op.expect
            {
                add("acknowledged_with_another_result", op, format!("read `{}` answered `{text}`", op.id));
            }
            continue;
        }
        let ran = physical.get(&op.id).copied().unwrap_or(0);
        let told_safe = op.attempts.iter().filter(|a| a.answer.retry_safe()).count();
        // A keyless call told retry-safe (not admitted) must not have run: the client's retry is
        // a new call. (A keyed call may be told so by a replica that could not reach the store
        // while another admitted it: retrying with the key attaches, and runs nothing twice.)
        let may_have_run = op.attempts.len() - told_safe;
        if op.keyed && ran > 1 {
            add("executed_twice_for_one_key", op, format!("ran {ran} times"));
        } else if !op.keyed && ran > may_have_run.max(1) {
            add("told_retry_safe_but_ran", op, format!("ran {ran} times, {told_safe} attempts told retry-safe"));
        }
        // A call reported failed did not run: the upstream (which records before it answers)
        // never fails after running, so a failure it ran is a lie to the caller — who may run
        // it again under a new key.
        if ran > 0 && matches!(op.last(), Some(Answer::ToolError { state, .. }) if state == "failed") {
            add("reported_failed_but_ran", op, format!("ran {ran} times"));
        }
        // A held call runs only once a person approved it; an approval the gateway refused as
        // retry-safe (nothing changed) did not approve it. (One left without an answer may have.)
        let held = op.held_as();
        if ran > 0 && !held.is_empty() && !held.iter().any(|id| approved.contains(id)) {
            let tried: Vec<&Approval> = approvals.iter().filter(|a| held.contains(&a.invocation.as_str())).collect();
            if tried.is_empty() {
                add("held_call_ran_without_approval", op, format!("held as {held:?}, ran {ran} times"));
            } else if tried.iter().all(|a| a.retry_safe) {
                let statuses: Vec<u16> = tried.iter().map(|a| a.status).collect();
                add(
                    "told_retry_safe_but_ran",
                    op,
                    format!("its approvals were refused {statuses:?} as retry-safe; it ran"),
                );
            }
        }
        if let Some(Answer::Succeeded { text }) = op.last() {
            if ran == 0 {
                add("acknowledged_but_not_executed", op, format!("answered `{text}`, the upstream never ran it"));
            } else if *text != op.expect {
                add("acknowledged_with_another_result", op, format!("answered `{text}`"));
            }
            if op.keyed && stored.by_key.get(&op.id).is_some_and(|s| s != "succeeded") {
                add("outcome_lost", op, format!("acknowledged, the store says `{}`", stored.by_key[&op.id]));
            }
        }
    }
    for id in &stored.broken_event_logs {
        found.push(Anomaly { class: "event_log_gap_or_repeat", op: id.clone(), detail: String::new() });
    }
    if let Err(e) = audit_ok {
        found.push(Anomaly { class: "audit_chain_does_not_verify", op: String::new(), detail: e });
    }
    found
}

/// What the store holds for the operation `op` (the invocations its key or its argument names,
/// and each one's events: kind, attempt, time), for an anomaly's report.
pub fn explain(url: &str, op: &str) -> String {
    let sql = format!(
        "SELECT i.id || ' ' || i.state || ' attempts=' || i.attempts || ' worker=' || COALESCE(i.lease_owner, '-') || ': ' || \
         string_agg(e.seq || ':' || e.kind || COALESCE('(' || (e.data->>'attempt') || ')', '') || '@' || e.at_ms, ' ' ORDER BY e.seq) \
         FROM invocations i JOIN invocation_events e ON e.invocation_id = i.id \
         WHERE i.ingress_key = '{op}' OR i.request->'arguments'->>'key' = '{op}' OR i.request->>'key' = '{op}' \
         GROUP BY i.id, i.state, i.attempts, i.lease_owner"
    );
    switchyard_tests::pg::psql(url, &sql).unwrap_or_else(|e| format!("(not read: {e})"))
}

/// Anomalies by class.
pub fn by_class(anomalies: &[Anomaly]) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for a in anomalies {
        *m.entry(a.class).or_default() += 1;
    }
    m
}
