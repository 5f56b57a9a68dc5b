//! The history checker: independent of the gateway's code, it reads the clients' history, the
//! upstream's record of physical calls and the store (with `psql`), and names every anomaly.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use crate::admin::Approval;
use crate::workload::{Answer, Op};

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
    /// Invocations left `unknown` although their journal holds the upstream's answer (a late
    /// outcome that is a result or a failure): the gateway could have known.
    pub unknown_but_answered: Vec<String>,
    /// Invocations not settled (still admitted, dispatching or awaiting) after the run.
    pub unsettled: usize,
    /// The demo upstream's invocations: the `key` of their request and their state.
    pub demo: HashMap<String, (String, String)>,
    /// The attempts the journal says were started on the demo upstream.
    pub demo_dispatched: HashSet<String>,
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
        let unknown_but_answered = q("SELECT DISTINCT i.id FROM invocations i \
             JOIN invocation_events e ON e.invocation_id = i.id \
             WHERE i.state = 'unknown' AND e.kind = 'late_outcome' \
             AND (e.data->>'outcome' = 'succeeded' OR e.data->>'outcome' LIKE 'failed: %')")
        .lines()
        .map(str::to_string)
        .collect();
        let demo = q("SELECT id, COALESCE(request->>'key', ''), state FROM invocations WHERE upstream = 'demo'")
            .lines()
            .filter_map(|l| {
                let mut f = l.split('|');
                Some((f.next()?.to_string(), (f.next()?.to_string(), f.next()?.to_string())))
            })
            .collect();
        let demo_dispatched = q("SELECT e.data->>'attempt' FROM invocation_events e \
                                 JOIN invocations i ON i.id = e.invocation_id \
                                 WHERE i.upstream = 'demo' AND e.kind = 'dispatch_started'")
        .lines()
        .map(str::to_string)
        .collect();
        Stored {
            by_key,
            broken_event_logs,
            unknown: count("SELECT COUNT(*) FROM invocations WHERE state = 'unknown'"),
            unsettled: count(
                "SELECT COUNT(*) FROM invocations WHERE state NOT IN ('succeeded', 'failed', 'canceled', 'unknown')",
            ),
            unknown_but_answered,
            demo,
            demo_dispatched,
        }
    }
}

/// Every anomaly in the run.
pub fn check(
    ops: &[Op],
    approvals: &[Approval],
    physical: &HashMap<String, usize>,
    stored: &Stored,
    demo_calls: &[(String, String)],
    audit_ok: Result<(), String>,
) -> Vec<Anomaly> {
    let approved: std::collections::HashSet<&str> =
        approvals.iter().filter(|a| a.status == 200).map(|a| a.invocation.as_str()).collect();
    let mut found = Vec::new();
    // The demo upstream names each physical call's invocation and attempt: one invocation runs
    // at most once, and only an attempt its journal started.
    let mut per_invocation: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (invocation, attempt) in demo_calls {
        per_invocation.entry(invocation).or_default().push(attempt);
    }
    for (invocation, attempts) in &per_invocation {
        let op = stored.demo.get(*invocation).map_or(String::new(), |(key, _)| key.clone());
        if attempts.len() > 1 {
            let detail = format!("{invocation} ran {} times: {attempts:?}", attempts.len());
            found.push(Anomaly { class: "executed_twice_for_one_invocation", op: op.clone(), detail });
        }
        for attempt in attempts.iter().filter(|a| !stored.demo_dispatched.contains(**a)) {
            let detail = format!("{invocation} ran attempt {attempt}, which its journal never started");
            found.push(Anomaly { class: "executed_without_journal", op: op.clone(), detail });
        }
    }
    let mut demo_states: HashMap<&str, Vec<&str>> = HashMap::new();
    for (key, state) in stored.demo.values() {
        demo_states.entry(key).or_default().push(state);
    }
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
        }
        // An end reported is the end: every later report and the store say the same (an
        // admin call's reports all name one invocation; elsewhere only a success is compared).
        let admin = op.era == "admin";
        let ends: Vec<&str> = op.attempts.iter().filter_map(|a| a.answer.terminal()).collect();
        if admin && ends.iter().any(|e| Some(e) != ends.first()) {
            add("outcome_lost", op, format!("reported {ends:?} in turn"));
        }
        let in_store = match op.keyed {
            true => stored.by_key.get(&op.id).map(String::as_str),
            false => demo_states.get(op.id.as_str()).and_then(|s| (s.len() == 1).then(|| s[0])),
        };
        let end = op.last().and_then(Answer::terminal).filter(|e| admin || *e == "succeeded");
        if let (Some(end), Some(state)) = (end, in_store)
            && end != state
        {
            add("outcome_lost", op, format!("reported `{end}`, the store says `{state}`"));
        }
    }
    for id in &stored.unknown_but_answered {
        let detail = "unknown, though its journal holds the upstream's answer".to_string();
        found.push(Anomaly { class: "unknown_although_answered", op: id.clone(), detail });
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
         WHERE i.id = '{op}' OR i.ingress_key = '{op}' OR i.request->'arguments'->>'key' = '{op}' OR i.request->>'key' = '{op}' \
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Attempt;

    fn admin_op(id: &str, answers: Vec<Answer>) -> Op {
        let attempts = answers.into_iter().map(|answer| Attempt { replica: 0, at_ms: 0, took_ms: 0, answer }).collect();
        Op { id: id.into(), write: true, keyed: false, era: "admin", expect: format!("counted {id}"), attempts }
    }

    fn ended(state: &str) -> Answer {
        Answer::ToolError { state: state.into(), retry_safe: false, invocation: Some("inv-1".into()) }
    }

    fn classes(ops: &[Op], stored: &Stored, demo_calls: &[(String, String)]) -> Vec<&'static str> {
        let physical = HashMap::from([("c0-1".to_string(), demo_calls.len())]);
        check(ops, &[], &physical, stored, demo_calls, Ok(())).iter().map(|a| a.class).collect()
    }

    fn stored(state: &str) -> Stored {
        Stored {
            demo: HashMap::from([("inv-1".into(), ("c0-1".into(), state.into()))]),
            demo_dispatched: HashSet::from(["att-1".to_string()]),
            ..Stored::default()
        }
    }

    #[test]
    fn a_clean_admin_history_has_no_anomaly() {
        let op = admin_op("c0-1", vec![ended("dispatching"), Answer::Succeeded { text: "counted c0-1".into() }]);
        assert!(classes(&[op], &stored("succeeded"), &[("inv-1".into(), "att-1".into())]).is_empty());
    }

    #[test]
    fn one_invocation_run_twice_or_without_its_journal_is_named() {
        let op = admin_op("c0-1", vec![Answer::Succeeded { text: "counted c0-1".into() }]);
        let twice = [("inv-1".into(), "att-1".into()), ("inv-1".into(), "att-1".into())];
        assert!(
            classes(std::slice::from_ref(&op), &stored("succeeded"), &twice)
                .contains(&"executed_twice_for_one_invocation")
        );
        let unjournaled = [("inv-1".into(), "att-2".into())];
        assert_eq!(classes(&[op], &stored("succeeded"), &unjournaled), ["executed_without_journal"]);
    }

    #[test]
    fn an_end_that_changes_is_an_outcome_lost() {
        let flipped = admin_op("c0-1", vec![ended("canceled"), Answer::Succeeded { text: "counted c0-1".into() }]);
        assert_eq!(classes(&[flipped], &stored("succeeded"), &[("inv-1".into(), "att-1".into())]), ["outcome_lost"]);
        let told_canceled = admin_op("c0-1", vec![ended("canceled")]);
        assert_eq!(classes(&[told_canceled], &stored("succeeded"), &[]), ["outcome_lost"]);
    }
}
