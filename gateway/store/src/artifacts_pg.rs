//! Artifact metadata on PostgreSQL. Commits and collector claims lock the blob row
//! (`FOR UPDATE`), so a commit never references bytes a collector is deleting; each statement
//! of a claim sees rows committed before it (READ COMMITTED).

use async_trait::async_trait;
use sqlx::Row;
use sqlx::postgres::PgPool;
use switchyard_contract::{
    ArtifactId, ArtifactIndex, ArtifactMeta, ArtifactPage, BlobRef, ChunkSums, Commit, ContentDigest, Error,
    InvocationId, NewArtifact, TenantId,
};

use crate::artifact_row::{commit_error, decode_artifact, decode_chunks, expires, next_cursor, parse_cursor, size_i64};
use crate::error::{StoreError, db};

const COLUMNS: &str = "a.id, a.tenant, a.invocation_id, a.name, a.media_type, a.chunk_seq::bigint, a.size, a.sha256, \
    a.retention_class, a.created_ms, a.expires_ms, b.location, b.chunk_size, b.chunk_crc32c";
const NOW: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// Blobs a collector may claim (`?2`/`$2` = grace ms): live ones untouched for the grace period,
/// and `deleting` ones whose collector has been silent for a minute longer (it crashed).
const CLAIMABLE: &str = "((state = 'live' \
    AND touched_ms < (extract(epoch from clock_timestamp()) * 1000)::bigint - $2) \
    OR (state = 'deleting' AND touched_ms < (extract(epoch from clock_timestamp()) * 1000)::bigint - $2 - 60000))";

/// The PostgreSQL artifact index.
#[derive(Debug, Clone)]
pub struct PgArtifactIndex {
    pool: PgPool,
}

fn q(sql: String) -> sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments> {
    sqlx::query(sqlx::AssertSqlSafe(sql))
}

impl PgArtifactIndex {
    /// Shares an existing pool (e.g. [`crate::PgStore::pool`]).
    pub fn from_pool(pool: PgPool) -> Self {
        Self { pool }
    }

    async fn claim_one(&self, sha: &str, grace_ms: i64) -> Result<Option<BlobRef>, Error> {
        let mut tx = self.pool.begin().await.map_err(db)?;
        let row = q(format!(
            "SELECT size, location, state FROM artifact_blobs WHERE sha256 = $1 AND {CLAIMABLE} \
             FOR UPDATE SKIP LOCKED"
        ))
        .bind(sha)
        .bind(grace_ms)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?;
        let Some(row) = row else { return Ok(None) };
        let state: String = row.try_get(2).map_err(db)?;
        if state == "live" {
            // A fresh snapshot: sees any artifact committed while we waited for the lock.
            let used: bool = q("SELECT EXISTS (SELECT 1 FROM artifacts WHERE sha256 = $1)".into())
                .bind(sha)
                .fetch_one(&mut *tx)
                .await
                .map_err(db)?
                .try_get(0)
                .map_err(db)?;
            if used {
                return Ok(None);
            }
        }
        q(format!("UPDATE artifact_blobs SET state = 'deleting', touched_ms = {NOW} WHERE sha256 = $1"))
            .bind(sha)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        let size: i64 = row.try_get(0).map_err(db)?;
        Ok(Some(BlobRef {
            digest: ContentDigest::try_from(sha.to_string())?,
            size: u64::try_from(size).unwrap_or_default(),
            location: row.try_get(1).map_err(db)?,
            chunks: None,
        }))
    }
}

#[async_trait]
impl ArtifactIndex for PgArtifactIndex {
    async fn commit(
        &self,
        draft: &NewArtifact,
        digest: &ContentDigest,
        size: u64,
        offered: Option<&BlobRef>,
    ) -> Result<Commit, Error> {
        let size = size_i64(size)?;
        let mut tx = self.pool.begin().await.map_err(db)?;
        let now: i64 = q(format!("SELECT {NOW}")).fetch_one(&mut *tx).await.map_err(db)?.try_get(0).map_err(db)?;
        if let Some(b) = offered {
            q("INSERT INTO artifact_blobs (sha256, size, location, state, touched_ms, created_ms, chunk_size, \
               chunk_crc32c) VALUES ($1, $2, $3, 'live', $4, $4, $5, $6) ON CONFLICT (sha256) DO NOTHING"
                .into())
            .bind(digest.as_hex())
            .bind(size)
            .bind(&b.location)
            .bind(now)
            .bind(b.chunks.as_ref().map(|c| i64::from(c.chunk_size)))
            .bind(b.chunks.as_ref().map(ChunkSums::to_hex))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        let row = q(
            "SELECT size, location, state, chunk_size, chunk_crc32c FROM artifact_blobs WHERE sha256 = $1 FOR UPDATE"
                .into(),
        )
        .bind(digest.as_hex())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?;
        let Some(row) = row else { return Ok(Commit::NeedBytes) };
        let (stored, location, state): (i64, String, String) =
            (row.try_get(0).map_err(db)?, row.try_get(1).map_err(db)?, row.try_get(2).map_err(db)?);
        if state != "live" {
            return Ok(Commit::Busy);
        }
        let chunks = decode_chunks(row.try_get(3).map_err(db)?, row.try_get(4).map_err(db)?)?;
        if stored != size {
            return Err(StoreError::Corrupt(format!("blob {digest} has size {stored}, upload has {size}")).into());
        }
        q("UPDATE artifact_blobs SET touched_ms = $2 WHERE sha256 = $1".into())
            .bind(digest.as_hex())
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let expires_ms = expires(draft, now);
        q("INSERT INTO artifacts (id, tenant, invocation_id, name, media_type, chunk_seq, size, sha256, \
           retention_class, created_ms, expires_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
            .into())
        .bind(draft.id.to_string())
        .bind(draft.tenant.as_str())
        .bind(draft.invocation.to_string())
        .bind(&draft.name)
        .bind(&draft.media_type)
        .bind(i32::try_from(draft.chunk_seq).map_err(|_| Error::invalid_input("chunk_seq too large"))?)
        .bind(size)
        .bind(digest.as_hex())
        .bind(&draft.retention_class)
        .bind(now)
        .bind(expires_ms)
        .execute(&mut *tx)
        .await
        .map_err(commit_error)?;
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
        let sql = format!(
            "SELECT {COLUMNS} FROM artifacts a JOIN artifact_blobs b ON b.sha256 = a.sha256 \
             WHERE a.id = $1 AND ($2::text IS NULL OR a.tenant = $2)"
        );
        let row = q(sql)
            .bind(id.to_string())
            .bind(tenant.map(|t| t.as_str().to_string()))
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.as_ref().map(decode_artifact).transpose()
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
        let sql = format!(
            "SELECT {COLUMNS} FROM artifacts a JOIN artifact_blobs b ON b.sha256 = a.sha256 \
             WHERE a.tenant = $1 AND ($2::text IS NULL OR a.invocation_id = $2) \
             AND (a.created_ms < $3 OR (a.created_ms = $3 AND a.id < $4)) \
             ORDER BY a.created_ms DESC, a.id DESC LIMIT $5"
        );
        let rows = q(sql)
            .bind(tenant.as_str())
            .bind(invocation.map(|i| i.to_string()))
            .bind(ms)
            .bind(id)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        let items = rows.iter().map(decode_artifact).collect::<Result<Vec<_>, _>>()?;
        let next_cursor = next_cursor(&items, limit);
        Ok(ArtifactPage { items, next_cursor })
    }

    async fn delete_expired(&self, limit: u32) -> Result<u64, Error> {
        let sql = format!(
            "DELETE FROM artifacts WHERE id IN (SELECT id FROM artifacts WHERE expires_ms <= {NOW} \
             ORDER BY expires_ms LIMIT $1 FOR UPDATE SKIP LOCKED)"
        );
        let done = q(sql).bind(i64::from(limit)).execute(&self.pool).await.map_err(db)?;
        Ok(done.rows_affected())
    }

    async fn claim_unreferenced(&self, grace_ms: u64, limit: u32) -> Result<Vec<BlobRef>, Error> {
        let grace = i64::try_from(grace_ms).unwrap_or(i64::MAX / 2);
        let sql = format!(
            "SELECT sha256 FROM artifact_blobs b WHERE {CLAIMABLE} AND (state = 'deleting' \
             OR NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.sha256 = b.sha256)) ORDER BY touched_ms LIMIT $1"
        );
        let rows = q(sql).bind(i64::from(limit)).bind(grace).fetch_all(&self.pool).await.map_err(db)?;
        let mut claimed = Vec::new();
        for row in rows {
            let sha: String = row.try_get(0).map_err(db)?;
            if let Some(b) = self.claim_one(&sha, grace).await? {
                claimed.push(b);
            }
        }
        Ok(claimed)
    }

    async fn forget_blob(&self, digest: &ContentDigest) -> Result<(), Error> {
        q("DELETE FROM artifact_blobs WHERE sha256 = $1 AND state = 'deleting'".into())
            .bind(digest.as_hex())
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn known_locations(&self, locations: &[String]) -> Result<Vec<String>, Error> {
        let rows = q("SELECT location FROM artifact_blobs WHERE location = ANY($1)".into())
            .bind(locations.to_vec())
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        rows.iter().map(|r| r.try_get::<String, _>(0).map_err(db)).collect()
    }

    async fn blob_count(&self) -> Result<u64, Error> {
        let n: i64 = q("SELECT count(*) FROM artifact_blobs".into())
            .fetch_one(&self.pool)
            .await
            .map_err(db)?
            .try_get(0)
            .map_err(db)?;
        Ok(n as u64)
    }
}
