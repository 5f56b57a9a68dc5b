//! Artifact rows ↔ contract values, shared by both backends (columns in the order of
//! `artifacts_pg::COLUMNS` / `artifacts_sqlite::COLUMNS`), and the list cursor.

use sqlx::{ColumnIndex, Decode, Row, Type};
use switchyard_contract::{ArtifactMeta, ChunkSums, ContentDigest, Error, Keep, Millis, NewArtifact, TenantId};

use crate::row::{corrupt, get};

/// Decodes `id, tenant, invocation_id, name, media_type, chunk_seq, size, sha256,
/// retention_class, created_ms, expires_ms, location, chunk_size, chunk_crc32c`.
pub(crate) fn decode_artifact<'r, R>(row: &'r R) -> Result<ArtifactMeta, Error>
where
    R: Row,
    usize: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
{
    let id: String = get(row, 0)?;
    let invocation: String = get(row, 2)?;
    let seq: i64 = get(row, 5)?;
    let size: i64 = get(row, 6)?;
    let sha: String = get(row, 7)?;
    Ok(ArtifactMeta {
        id: id.parse().map_err(corrupt)?,
        tenant: TenantId::new(get::<_, String>(row, 1)?)?,
        invocation: invocation.parse().map_err(corrupt)?,
        name: get(row, 3)?,
        media_type: get(row, 4)?,
        chunk_seq: u32::try_from(seq).map_err(|_| corrupt("chunk_seq out of range"))?,
        size: u64::try_from(size).map_err(|_| corrupt("size is negative"))?,
        sha256: ContentDigest::try_from(sha).map_err(corrupt)?,
        retention_class: get(row, 8)?,
        created_ms: get(row, 9)?,
        expires_ms: get(row, 10)?,
        location: get(row, 11)?,
        chunks: decode_chunks(get(row, 12)?, get(row, 13)?)?,
    })
}

/// The stored chunk checksums, if the blob has them.
pub(crate) fn decode_chunks(size: Option<i64>, hex: Option<String>) -> Result<Option<ChunkSums>, Error> {
    match (size, hex) {
        (Some(size), Some(hex)) => {
            let size = u32::try_from(size).map_err(|_| corrupt("chunk_size out of range"))?;
            Ok(Some(ChunkSums::from_hex(size, &hex).map_err(corrupt)?))
        }
        _ => Ok(None),
    }
}

/// When an artifact created at `now` expires.
pub(crate) fn expires(draft: &NewArtifact, now: Millis) -> Option<Millis> {
    match draft.keep {
        Keep::Forever => None,
        Keep::ForMs(ms) => Some(now.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX))),
    }
}

/// Size as stored (BIGINT).
pub(crate) fn size_i64(size: u64) -> Result<i64, Error> {
    i64::try_from(size).map_err(|_| Error::invalid_input("artifact too large"))
}

/// `<created_ms>.<id>` of the last item → the keyset to continue after. No cursor: from the top.
pub(crate) fn parse_cursor(cursor: Option<&str>) -> Result<(i64, String), Error> {
    match cursor {
        None => Ok((i64::MAX, "~".into())),
        Some(c) => {
            let (ms, id) = c.split_once('.').ok_or_else(|| Error::invalid_input("bad cursor"))?;
            Ok((ms.parse().map_err(|_| Error::invalid_input("bad cursor"))?, id.to_string()))
        }
    }
}

/// The cursor for the next page, if the page was full.
pub(crate) fn next_cursor(items: &[ArtifactMeta], limit: u32) -> Option<String> {
    let last = items.last()?;
    (items.len() >= limit as usize).then(|| format!("{}.{}", last.created_ms, last.id))
}

/// A duplicate (invocation, name, chunk) or id is the caller's conflict, not an outage.
pub(crate) fn commit_error(e: sqlx::Error) -> Error {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            Error::conflict("an artifact with this id, or this invocation, name and chunk, already exists")
        }
        _ => crate::error::db(e),
    }
}
