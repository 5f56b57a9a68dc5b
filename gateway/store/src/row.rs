//! Rows ↔ contract values, shared by both backends. Both select the columns in the order of
//! [`postgres::COLUMNS`](crate::postgres) / [`sqlite::COLUMNS`](crate::sqlite), so one decoder
//! serves both.

use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::{ColumnIndex, Decode, Row, Type};
use switchyard_contract::state::CancelRequest;
use switchyard_contract::{
    EffectClass, Error, Event, EventId, EventKind, Fence, IngressKey, Invocation, InvocationId, Lease, Millis,
    Principal, RequestDigest, Target, TenantId,
};

use crate::error::StoreError;

pub(crate) fn corrupt(what: impl std::fmt::Display) -> Error {
    StoreError::Corrupt(what.to_string()).into()
}

fn json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|e| corrupt(format!("{what}: {e}")))
}

pub(crate) fn to_json<T: Serialize>(v: &T) -> Result<String, Error> {
    serde_json::to_string(v).map_err(|e| corrupt(format!("cannot encode: {e}")))
}

pub(crate) fn get<'r, R, T>(row: &'r R, i: usize) -> Result<T, Error>
where
    R: Row,
    usize: ColumnIndex<R>,
    T: Decode<'r, R::Database> + Type<R::Database>,
{
    row.try_get(i).map_err(|e| corrupt(format!("column {i}: {e}")))
}

fn u64_of(v: i64, what: &str) -> Result<u64, Error> {
    u64::try_from(v).map_err(|_| corrupt(format!("{what} is negative")))
}

/// Decodes an invocation row (columns in the backends' `COLUMNS` order).
pub(crate) fn decode_invocation<'r, R>(row: &'r R) -> Result<Invocation, Error>
where
    R: Row,
    usize: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
{
    let id: String = get(row, 0)?;
    let effect: String = get(row, 5)?;
    let ingress_key: Option<String> = get(row, 8)?;
    let cancel: Option<String> = get(row, 11)?;
    let owner: Option<String> = get(row, 12)?;
    Ok(Invocation {
        id: id.parse().map_err(corrupt)?,
        principal: Principal { tenant: TenantId::new(get::<_, String>(row, 1)?)?, subject: get(row, 2)? },
        target: Target {
            upstream: get(row, 3)?,
            operation: get(row, 4)?,
            effect: EffectClass::parse(&effect).ok_or_else(|| corrupt(format!("effect `{effect}`")))?,
        },
        request: json(&get::<_, String>(row, 6)?, "request")?,
        digest: RequestDigest::from_stored(get(row, 7)?),
        ingress_key: ingress_key.map(IngressKey::new).transpose()?,
        state: json(&get::<_, String>(row, 9)?, "state")?,
        attempts: u32::try_from(get::<_, i64>(row, 10)?).map_err(corrupt)?,
        cancel: cancel.map(|c| json::<CancelRequest>(&c, "cancel")).transpose()?,
        lease: Lease {
            owner: owner.map(|o| o.parse()).transpose().map_err(corrupt)?,
            fence: Fence(u64_of(get(row, 13)?, "fence")?),
            expires_at_ms: get(row, 14)?,
        },
        last_seq: u64_of(get(row, 15)?, "last_seq")?,
        created_at_ms: get(row, 16)?,
        updated_at_ms: get(row, 17)?,
    })
}

/// Decodes an event row: `invocation_id, seq, event_id, data, at_ms`.
pub(crate) fn decode_event<'r, R>(row: &'r R) -> Result<Event, Error>
where
    R: Row,
    usize: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(Event {
        invocation: get::<_, String>(row, 0)?.parse().map_err(corrupt)?,
        seq: u64_of(get(row, 1)?, "seq")?,
        id: get::<_, String>(row, 2)?.parse::<EventId>().map_err(corrupt)?,
        kind: json(&get::<_, String>(row, 3)?, "event")?,
        at_ms: get(row, 4)?,
    })
}

/// The columns a transition may change, ready to bind.
pub(crate) struct Mutable {
    pub state: &'static str,
    pub state_data: String,
    pub attempts: i64,
    pub cancel_data: Option<String>,
    pub lease_owner: Option<String>,
    pub fence: i64,
    pub lease_expires_ms: Option<i64>,
    pub last_seq: i64,
    pub updated_ms: i64,
}

fn i64_of(v: u64) -> Result<i64, Error> {
    i64::try_from(v).map_err(|_| corrupt("counter overflow"))
}

pub(crate) fn mutable(inv: &Invocation) -> Result<Mutable, Error> {
    Ok(Mutable {
        state: inv.state.name().as_str(),
        state_data: to_json(&inv.state)?,
        attempts: i64::from(inv.attempts),
        cancel_data: inv.cancel.as_ref().map(to_json).transpose()?,
        lease_owner: inv.lease.owner.map(|w| w.to_string()),
        fence: i64_of(inv.lease.fence.0)?,
        lease_expires_ms: inv.lease.expires_at_ms,
        last_seq: i64_of(inv.last_seq)?,
        updated_ms: inv.updated_at_ms,
    })
}

/// New events numbered after `inv.last_seq`, and their encoded columns; advances `last_seq`
/// and `updated_at_ms`.
pub(crate) fn append(inv: &mut Invocation, kinds: Vec<EventKind>, now: Millis) -> Result<Vec<(Event, String)>, Error> {
    let mut out = Vec::with_capacity(kinds.len());
    for kind in kinds {
        inv.last_seq += 1;
        let data = to_json(&kind)?;
        out.push((Event { id: EventId::new(), invocation: inv.id, seq: inv.last_seq, at_ms: now, kind }, data));
    }
    inv.updated_at_ms = now;
    Ok(out)
}

/// The text form of an ID or optional key for binding.
pub(crate) fn id_text(id: InvocationId) -> String {
    id.to_string()
}

/// A page from up to `limit + 1` rows: the extra row only tells that there is a next page.
pub(crate) fn page(mut items: Vec<Invocation>, limit: u32) -> Result<switchyard_contract::Page, Error> {
    let limit = usize::try_from(limit).map_err(corrupt)?;
    let next_cursor = if items.len() > limit {
        items.truncate(limit);
        items.last().map(switchyard_contract::ListQuery::cursor_for)
    } else {
        None
    };
    Ok(switchyard_contract::Page { items, next_cursor })
}
