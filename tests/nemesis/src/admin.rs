//! The admin API's people: clients that submit calls to the built-in `demo` upstream's counting
//! write (keyed or not), a third of which they cancel, and the approver who lets held calls run.
//! The demo upstream logs `<invocation> <attempt>` for every physical call before it does
//! anything else, in each replica's data directory: the record the checker reads.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::rng::Rng;
use crate::workload::{Answer, Op};

/// The clients' tenant (the operator's token acts in it).
pub const TENANT: &str = "red";
/// The operator's token, for submitters and the approver alike (each names its subject: a
/// caller may not approve its own call).
const TOKEN: &str = switchyard_tests::gateway::TOKEN;

fn as_subject(req: reqwest::RequestBuilder, subject: &str) -> reqwest::RequestBuilder {
    req.bearer_auth(TOKEN).header("x-switchyard-tenant", TENANT).header("x-switchyard-subject", subject)
}

/// What an admin API answer says: an invocation in its state, or an error.
async fn send(req: reqwest::RequestBuilder) -> Answer {
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) => return Answer::NoAnswer { why: e.to_string() },
    };
    let status = resp.status().as_u16();
    let Ok(v) = resp.json::<Value>().await else {
        return Answer::NoAnswer { why: format!("HTTP {status}: no JSON body") };
    };
    if let Some(e) = v.get("error") {
        return Answer::RpcError {
            code: i64::from(status),
            retry_safe: e["retry_safe"].as_bool().unwrap_or(false),
            message: e["message"].as_str().unwrap_or_default().chars().take(200).collect(),
        };
    }
    let state = v["state"]["state"].as_str().unwrap_or_default();
    let invocation = v["id"].as_str().map(str::to_string);
    if state != "succeeded" {
        return Answer::ToolError { state: state.to_string(), retry_safe: false, invocation };
    }
    // The demo's `count` answers the invocation it counted.
    let counted = v["state"]["result"]["counted"].as_str();
    let text = match (counted, v["request"]["key"].as_str()) {
        (Some(c), Some(key)) if Some(c) == invocation.as_deref() => format!("counted {key}"),
        _ => format!("counted another call: {}", v["state"]["result"]),
    };
    Answer::Succeeded { text }
}

/// Whether the client has its answer: an end, or `unknown` (an operator's to reconcile).
fn settled(answer: Option<&Answer>) -> bool {
    match answer {
        Some(Answer::Succeeded { .. }) => true,
        Some(Answer::ToolError { state, .. }) => matches!(state.as_str(), "failed" | "canceled" | "unknown"),
        _ => false,
    }
}

/// One admin API client's operation: a `count` of the demo upstream (held for approval when its
/// delay is a second or more), submitted until admitted, canceled one time in three, then
/// followed until it settles — each step on the next replica after a failure.
pub async fn op(http: &reqwest::Client, bases: &[String], c: usize, id: String, rng: &mut Rng, start: Instant) -> Op {
    let (keyed, cancel) = (rng.below(4) != 0, rng.below(3) == 0);
    // Held when its delay is 1 s or more: a third of the others, a third of those canceled.
    let delay = if cancel {
        rng.below(1500)
    } else if rng.below(3) == 0 {
        1000
    } else {
        rng.below(200)
    };
    let body = json!({"upstream": "demo", "operation": "count", "request": {"key": id, "delay_ms": delay}});
    let subject = format!("c{c}");
    let mut op =
        Op { id: id.clone(), write: true, keyed, era: "admin", expect: format!("counted {id}"), attempts: Vec::new() };
    let mut replica = c % bases.len();
    let give_up = Instant::now() + Duration::from_secs(30);
    let step = |op: &mut Op, replica: &mut usize, t0: Instant, answer: Answer| {
        op.attempt(*replica, start, t0, answer);
        *replica = (*replica + 1) % bases.len();
    };
    // Submitted until admitted: a keyed client retries after no answer, any after retry-safe.
    let invocation = loop {
        let wait = if cancel { "" } else { "?wait_ms=3000" };
        let mut req = as_subject(http.post(format!("{}/admin/v1/invocations{wait}", bases[replica])), &subject);
        if keyed {
            req = req.header("idempotency-key", id.as_str());
        }
        let t0 = Instant::now();
        let answer = send(req.json(&body)).await;
        let retry = match &answer {
            Answer::RpcError { retry_safe, .. } => *retry_safe,
            Answer::NoAnswer { .. } => keyed,
            _ => false,
        };
        let named = answer.invocation().map(str::to_string);
        step(&mut op, &mut replica, t0, answer);
        if !retry || Instant::now() > give_up {
            break named;
        }
        tokio::time::sleep(Duration::from_millis(100 + rng.below(200))).await;
    };
    let Some(invocation) = invocation else { return op };
    let url = |replica: usize, tail: &str| format!("{}/admin/v1/invocations/{invocation}{tail}", bases[replica]);
    if cancel {
        tokio::time::sleep(Duration::from_millis(rng.below(150))).await;
        loop {
            let t0 = Instant::now();
            let answer = send(as_subject(http.post(url(replica, "/cancel")), &subject)).await;
            let again = matches!(answer, Answer::NoAnswer { .. } | Answer::RpcError { retry_safe: true, .. });
            step(&mut op, &mut replica, t0, answer);
            if !again || Instant::now() > give_up {
                break;
            }
        }
    }
    while !settled(op.last()) && Instant::now() < give_up {
        let t0 = Instant::now();
        let answer = send(as_subject(http.get(url(replica, "?wait_ms=3000")), &subject)).await;
        step(&mut op, &mut replica, t0, answer);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    op
}
/// One approval the approver made: the invocation and whether the gateway accepted it.
#[derive(Debug, Clone, Serialize)]
pub struct Approval {
    pub invocation: String,
    pub replica: usize,
    pub at_ms: u64,
    /// The HTTP status (0: no answer).
    pub status: u16,
    /// A refusal's `retry_safe`: the gateway says nothing was changed.
    pub retry_safe: bool,
}

/// The approver: a person at the admin API who approves every held call it sees, through
/// whichever replica answers, until `deadline`.
pub async fn approver(bases: Vec<String>, start: Instant, deadline: Instant) -> Vec<Approval> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(3)).build().unwrap_or_else(|e| panic!("{e}"));
    let mut done = Vec::new();
    let mut turn = 0usize;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(300)).await;
        turn += 1;
        let replica = turn % bases.len();
        let base = &bases[replica];
        let listed = http
            .get(format!("{base}/admin/v1/invocations?state=awaiting_approval&limit=100"))
            .bearer_auth(TOKEN)
            .header("x-switchyard-tenant", TENANT)
            .send()
            .await;
        let Ok(listed) = listed else { continue };
        let Ok(page) = listed.json::<Value>().await else { continue };
        for id in page["items"].as_array().into_iter().flatten().filter_map(|i| i["id"].as_str()) {
            let at_ms = start.elapsed().as_millis() as u64;
            let approve = http.post(format!("{base}/admin/v1/invocations/{id}/approve"));
            let sent = approve.bearer_auth(TOKEN).header("x-switchyard-tenant", TENANT).send().await;
            let (status, body) = match sent {
                Ok(r) => (r.status().as_u16(), r.json::<Value>().await.unwrap_or_default()),
                Err(_) => (0, Value::Null),
            };
            let retry_safe = body["error"]["retry_safe"].as_bool().unwrap_or(false);
            done.push(Approval { invocation: id.to_string(), replica, at_ms, status, retry_safe });
        }
    }
    done
}
