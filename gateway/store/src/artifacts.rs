//! [`ArtifactIndex`] on both databases. Commits and collector claims take the blob row in a
//! write transaction (locked with `FOR UPDATE` on PostgreSQL; SQLite's writer is single), so a
//! commit never references bytes a collector is deleting; on PostgreSQL each statement of a
//! claim sees rows committed before it (READ COMMITTED).

use async_trait::async_trait;
use switchyard_contract::{
    ArtifactId, ArtifactIndex, ArtifactMeta, ArtifactPage, BlobRef, ChunkSums, Commit, ContentDigest, Error,
    InvocationId, Keep, Millis, NewArtifact, TenantId,
};

use crate::dialect::{self as sql, Cells, Dialect, On, Pools, Stmt};
use crate::error::{StoreError, db};
use crate::row::corrupt;

const COLUMNS: &str = "a.id, a.tenant, a.invocation_id, a.name, a.media_type, CAST(a.chunk_seq AS BIGINT), a.size, \
    a.sha256, a.retention_class, a.created_ms, a.expires_ms, b.location, b.chunk_size, b.chunk_crc32c";

/// Blobs a collector may claim (`$2` = grace ms): live ones untouched for the grace period, and
/// `deleting` ones whose collector has been silent for a minute longer (it crashed).
fn claimable<D: Dialect>() -> String {
    let now = D::NOW;
    format!(
        "((state = 'live' AND touched_ms < {now} - $2) OR (state = 'deleting' AND touched_ms < {now} - $2 - 60000))"
    )
}

/// The artifact index on one database.
#[derive(Debug, Clone)]
pub struct SqlArtifacts<D: Dialect> {
    pools: Pools<D>,
}

impl<D: Dialect> SqlArtifacts<D> {
    pub fn new(pools: Pools<D>) -> Self {
        Self { pools }
    }

    async fn claim_one(&self, sha: &str, grace_ms: i64) -> Result<Option<BlobRef>, Error> {
        let mut tx = self.pools.begin().await?;
        let read = Stmt::new(format!(
            "SELECT size, location, state FROM artifact_blobs WHERE sha256 = $1 AND {}{}",
            claimable::<D>(),
            D::SKIP_LOCKED
        ))
        .text(sha)
        .int(grace_ms);
        let Some(row) = sql::optional::<D>(On::Tx(&mut tx), read).await? else { return Ok(None) };
        if row.text(2)? == "live" {
            // A fresh snapshot: sees any artifact committed while we waited for the lock.
            let used = Stmt::new("SELECT 1 FROM artifacts WHERE sha256 = $1 LIMIT 1").text(sha);
            if sql::optional::<D>(On::Tx(&mut tx), used).await?.is_some() {
                return Ok(None);
            }
        }
        let mark = Stmt::new(format!(
            "UPDATE artifact_blobs SET state = 'deleting', touched_ms = {} WHERE sha256 = $1",
            D::NOW
        ))
        .text(sha);
        sql::affected::<D>(On::Tx(&mut tx), mark).await?;
        tx.commit().await.map_err(db)?;
        Ok(Some(BlobRef {
            digest: ContentDigest::try_from(sha.to_string())?,
            size: u64::try_from(row.int(0)?).unwrap_or_default(),
            location: row.text(1)?,
            chunks: None,
        }))
    }
}

#[async_trait]
impl<D: Dialect> ArtifactIndex for SqlArtifacts<D> {
    async fn commit(
        &self,
        draft: &NewArtifact,
        digest: &ContentDigest,
        size: u64,
        offered: Option<&BlobRef>,
    ) -> Result<Commit, Error> {
        let size = size_i64(size)?;
        let mut tx = self.pools.begin().await?;
        let now = sql::now::<D>(On::Tx(&mut tx)).await?;
        if let Some(b) = offered {
            let offer = Stmt::new(
                "INSERT INTO artifact_blobs (sha256, size, location, state, touched_ms, created_ms, chunk_size, \
                 chunk_crc32c) VALUES ($1, $2, $3, 'live', $4, $4, $5, $6) ON CONFLICT (sha256) DO NOTHING",
            )
            .text(digest.as_hex())
            .int(size)
            .text(b.location.as_str())
            .int(now)
            .opt_int(b.chunks.as_ref().map(|c| i64::from(c.chunk_size)))
            .opt_text(b.chunks.as_ref().map(ChunkSums::to_hex));
            sql::affected::<D>(On::Tx(&mut tx), offer).await?;
        }
        let read = Stmt::new(format!(
            "SELECT size, location, state, chunk_size, chunk_crc32c FROM artifact_blobs WHERE sha256 = $1{}",
            D::FOR_UPDATE
        ))
        .text(digest.as_hex());
        let Some(row) = sql::optional::<D>(On::Tx(&mut tx), read).await? else { return Ok(Commit::NeedBytes) };
        let (stored, location) = (row.int(0)?, row.text(1)?);
        if row.text(2)? != "live" {
            return Ok(Commit::Busy);
        }
        let chunks = decode_chunks(row.opt_int(3)?, row.opt_text(4)?)?;
        if stored != size {
            return Err(StoreError::Corrupt(format!("blob {digest} has size {stored}, upload has {size}")).into());
        }
        let touch =
            Stmt::new("UPDATE artifact_blobs SET touched_ms = $2 WHERE sha256 = $1").text(digest.as_hex()).int(now);
        sql::affected::<D>(On::Tx(&mut tx), touch).await?;
        let expires_ms = expires(draft, now);
        let insert = Stmt::new(
            "INSERT INTO artifacts (id, tenant, invocation_id, name, media_type, chunk_seq, size, sha256, \
             retention_class, created_ms, expires_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .text(draft.id.to_string())
        .text(draft.tenant.as_str())
        .text(draft.invocation.to_string())
        .text(draft.name.as_str())
        .text(draft.media_type.as_str())
        .int(i64::from(draft.chunk_seq))
        .int(size)
        .text(digest.as_hex())
        .text(draft.retention_class.as_str())
        .int(now)
        .opt_int(expires_ms);
        sql::affected_or::<D>(On::Tx(&mut tx), insert, commit_error).await?;
        tx.commit().await.map_err(db)?;
        let deduplicated = offered.is_none_or(|b| b.location != location);
        let meta = ArtifactMeta {
            id: draft.id,
            tenant: draft.tenant.clone(),
            invocation: draft.invocation,
            name: draft.name.clone(),
            media_type: draft.media_type.clone(),
            chunk_seq: draft.chunk_seq,
            size: size as u64,
            sha256: digest.clone(),
            retention_class: draft.retention_class.clone(),
            created_ms: now,
            expires_ms,
            location,
            chunks,
        };
        Ok(Commit::Committed { meta: Box::new(meta), deduplicated })
    }

    async fn get(&self, tenant: Option<&TenantId>, id: ArtifactId) -> Result<Option<ArtifactMeta>, Error> {
        let stmt = Stmt::new(format!(
            "SELECT {COLUMNS} FROM artifacts a JOIN artifact_blobs b ON b.sha256 = a.sha256 \
             WHERE a.id = $1 AND ($2 IS NULL OR a.tenant = $2)"
        ))
        .text(id.to_string())
        .opt_text(tenant.map(TenantId::as_str));
        sql::optional::<D>(self.pools.read(), stmt).await?.as_ref().map(decode_artifact).transpose()
    }

    async fn list(
        &self,
        tenant: &TenantId,
        invocation: Option<InvocationId>,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<ArtifactPage, Error> {
        let (ms, id) = parse_cursor(cursor)?;
        let limit = limit.clamp(1, 1000);
        let stmt = Stmt::new(format!(
            "SELECT {COLUMNS} FROM artifacts a JOIN artifact_blobs b ON b.sha256 = a.sha256 \
             WHERE a.tenant = $1 AND ($2 IS NULL OR a.invocation_id = $2) \
             AND (a.created_ms < $3 OR (a.created_ms = $3 AND a.id < $4)) \
             ORDER BY a.created_ms DESC, a.id DESC LIMIT $5"
        ))
        .text(tenant.as_str())
        .opt_text(invocation.map(|i| i.to_string()))
        .int(ms)
        .text(id)
        .int(i64::from(limit));
        let rows = sql::all::<D>(self.pools.read(), stmt).await?;
        let items = rows.iter().map(decode_artifact).collect::<Result<Vec<_>, _>>()?;
        let next_cursor = next_cursor(&items, limit);
        Ok(ArtifactPage { items, next_cursor })
    }

    async fn delete_expired(&self, limit: u32) -> Result<u64, Error> {
        let stmt = Stmt::new(format!(
            "DELETE FROM artifacts WHERE id IN (SELECT id FROM artifacts WHERE expires_ms <= {} \
             ORDER BY expires_ms LIMIT $1{})",
            D::NOW,
            D::SKIP_LOCKED
        ))
        .int(i64::from(limit));
        sql::affected::<D>(self.pools.write(), stmt).await
    }

    async fn claim_unreferenced(&self, grace_ms: u64, limit: u32) -> Result<Vec<BlobRef>, Error> {
        let grace = i64::try_from(grace_ms).unwrap_or(i64::MAX / 2);
        let stmt = Stmt::new(format!(
            "SELECT sha256 FROM artifact_blobs b WHERE {} AND (state = 'deleting' \
             OR NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.sha256 = b.sha256)) ORDER BY touched_ms LIMIT $1",
            claimable::<D>()
        ))
        .int(i64::from(limit))
        .int(grace);
        let rows = sql::all::<D>(self.pools.write(), stmt).await?;
        let mut claimed = Vec::new();
        for row in rows {
            if let Some(b) = self.claim_one(&row.text(0)?, grace).await? {
                claimed.push(b);
            }
        }
        Ok(claimed)
    }

    async fn forget_blob(&self, digest: &ContentDigest) -> Result<(), Error> {
        let stmt =
            Stmt::new("DELETE FROM artifact_blobs WHERE sha256 = $1 AND state = 'deleting'").text(digest.as_hex());
        sql::affected::<D>(self.pools.write(), stmt).await?;
        Ok(())
    }

    async fn known_locations(&self, locations: &[String]) -> Result<Vec<String>, Error> {
        let stmt = Stmt::new(format!("SELECT location FROM artifact_blobs WHERE {}", D::any("location", 1)))
            .texts(locations.to_vec());
        sql::all::<D>(self.pools.read(), stmt).await?.iter().map(|r| r.text(0)).collect()
    }

    async fn blob_count(&self) -> Result<u64, Error> {
        let n = sql::one::<D>(self.pools.write(), Stmt::new("SELECT count(*) FROM artifact_blobs")).await?.int(0)?;
        Ok(u64::try_from(n).unwrap_or_default())
    }
}

/// Decodes `id, tenant, invocation_id, name, media_type, chunk_seq, size, sha256,
/// retention_class, created_ms, expires_ms, location, chunk_size, chunk_crc32c`.
fn decode_artifact(row: &impl Cells) -> Result<ArtifactMeta, Error> {
    Ok(ArtifactMeta {
        id: row.text(0)?.parse().map_err(corrupt)?,
        tenant: TenantId::new(row.text(1)?)?,
        invocation: row.text(2)?.parse().map_err(corrupt)?,
        name: row.text(3)?,
        media_type: row.text(4)?,
        chunk_seq: u32::try_from(row.int(5)?).map_err(|_| corrupt("chunk_seq out of range"))?,
        size: u64::try_from(row.int(6)?).map_err(|_| corrupt("size is negative"))?,
        sha256: ContentDigest::try_from(row.text(7)?).map_err(corrupt)?,
        retention_class: row.text(8)?,
        created_ms: row.int(9)?,
        expires_ms: row.opt_int(10)?,
        location: row.text(11)?,
        chunks: decode_chunks(row.opt_int(12)?, row.opt_text(13)?)?,
    })
}

/// The stored chunk checksums, if the blob has them.
fn decode_chunks(size: Option<i64>, hex: Option<String>) -> Result<Option<ChunkSums>, Error> {
    match (size, hex) {
        (Some(size), Some(hex)) => {
            let size = u32::try_from(size).map_err(|_| corrupt("chunk_size out of range"))?;
            Ok(Some(ChunkSums::from_hex(size, &hex).map_err(corrupt)?))
        }
        _ => Ok(None),
    }
}

/// When an artifact created at `now` expires.
fn expires(draft: &NewArtifact, now: Millis) -> Option<Millis> {
    match draft.keep {
        Keep::Forever => None,
        Keep::ForMs(ms) => Some(now.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX))),
    }
}

/// Size as stored (BIGINT).
fn size_i64(size: u64) -> Result<i64, Error> {
    i64::try_from(size).map_err(|_| Error::invalid_input("artifact too large"))
}

/// `<created_ms>.<id>` of the last item → the keyset to continue after. No cursor: from the top.
fn parse_cursor(cursor: Option<&str>) -> Result<(i64, String), Error> {
    match cursor {
        None => Ok((i64::MAX, "~".into())),
        Some(c) => {
            let (ms, id) = c.split_once('.').ok_or_else(|| Error::invalid_input("bad cursor"))?;
            Ok((ms.parse().map_err(|_| Error::invalid_input("bad cursor"))?, id.to_string()))
        }
    }
}

/// The cursor for the next page, if the page was full.
fn next_cursor(items: &[ArtifactMeta], limit: u32) -> Option<String> {
    let last = items.last()?;
    (items.len() >= limit as usize).then(|| format!("{}.{}", last.created_ms, last.id))
}

/// A duplicate (invocation, name, chunk) or id is the caller's conflict, not an outage.
fn commit_error(e: sqlx::Error) -> Error {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            Error::conflict("an artifact with this id, or this invocation, name and chunk, already exists")
        }
        _ => db(e),
    }
}
