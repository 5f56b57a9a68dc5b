//! Artifact metadata on SQLite. Every write runs in a `BEGIN IMMEDIATE` transaction on one
//! writer connection, so commits and collector claims are serialized: a commit never references
//! bytes a collector is deleting.

use async_trait::async_trait;
use sqlx::Row;

use sqlx::sqlite::SqlitePool;
use switchyard_contract::{
    ArtifactId, ArtifactIndex, ArtifactMeta, ArtifactPage, BlobRef, ChunkSums, Commit, ContentDigest, Error,
    InvocationId, NewArtifact, TenantId,
};

use crate::artifact_row::{commit_error, decode_artifact, decode_chunks, expires, next_cursor, parse_cursor, size_i64};
use crate::error::{StoreError, db};

const COLUMNS: &str = "a.id, a.tenant, a.invocation_id, a.name, a.media_type, a.chunk_seq, a.size, a.sha256, \
    a.retention_class, a.created_ms, a.expires_ms, b.location, b.chunk_size, b.chunk_crc32c";
const NOW: &str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

/// Blobs a collector may claim (`?2`/`$2` = grace ms): live ones untouched for the grace period,
/// and `deleting` ones whose collector has been silent for a minute longer (it crashed).
const CLAIMABLE: &str = "((state = 'live' AND touched_ms < CAST(unixepoch('subsec') * 1000 AS INTEGER) - ?2) \
    OR (state = 'deleting' AND touched_ms < CAST(unixepoch('subsec') * 1000 AS INTEGER) - ?2 - 60000))";

/// The SQLite artifact index.
#[derive(Debug, Clone)]
pub struct SqliteArtifactIndex {
    writer: SqlitePool,
    readers: SqlitePool,
}

fn q(sql: String) -> sqlx::query::Query<'static, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    sqlx::query(sqlx::AssertSqlSafe(sql))
}

impl SqliteArtifactIndex {
    /// Shares the pools of the invocation store (see [`crate::connect`]).
    pub(crate) fn from_pools(writer: SqlitePool, readers: SqlitePool) -> Self {
        Self { writer, readers }
    }

    async fn claim_one(&self, sha: &str, grace_ms: i64) -> Result<Option<BlobRef>, Error> {
        let mut tx = self.writer.begin_with("BEGIN IMMEDIATE").await.map_err(db)?;
        let row = q(format!("SELECT size, location, state FROM artifact_blobs WHERE sha256 = ?1 AND {CLAIMABLE}"))
            .bind(sha)
            .bind(grace_ms)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        let Some(row) = row else { return Ok(None) };
        let state: String = row.try_get(2).map_err(db)?;
        if state == "live" {
            let used: bool = q("SELECT EXISTS (SELECT 1 FROM artifacts WHERE sha256 = ?1)".into())
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
        q(format!("UPDATE artifact_blobs SET state = 'deleting', touched_ms = {NOW} WHERE sha256 = ?1"))
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
impl ArtifactIndex for SqliteArtifactIndex {
    async fn commit(
        &self,
        draft: &NewArtifact,
        digest: &ContentDigest,
        size: u64,
        offered: Option<&BlobRef>,
    ) -> Result<Commit, Error> {
        let size = size_i64(size)?;
        let mut tx = self.writer.begin_with("BEGIN IMMEDIATE").await.map_err(db)?;
        let now: i64 = q(format!("SELECT {NOW}")).fetch_one(&mut *tx).await.map_err(db)?.try_get(0).map_err(db)?;
        if let Some(b) = offered {
            q("INSERT INTO artifact_blobs (sha256, size, location, state, touched_ms, created_ms, chunk_size, \
               chunk_crc32c) VALUES (?1, ?2, ?3, 'live', ?4, ?4, ?5, ?6) ON CONFLICT (sha256) DO NOTHING"
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
        let row =
            q("SELECT size, location, state, chunk_size, chunk_crc32c FROM artifact_blobs WHERE sha256 = ?1".into())
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
        q("UPDATE artifact_blobs SET touched_ms = ?2 WHERE sha256 = ?1".into())
            .bind(digest.as_hex())
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let expires_ms = expires(draft, now);
        q("INSERT INTO artifacts (id, tenant, invocation_id, name, media_type, chunk_seq, size, sha256, \
           retention_class, created_ms, expires_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
            .into())
        .bind(draft.id.to_string())
        .bind(draft.tenant.as_str())
        .bind(draft.invocation.to_string())
        .bind(&draft.name)
        .bind(&draft.media_type)
        .bind(i64::from(draft.chunk_seq))
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
             WHERE a.id = ?1 AND (?2 IS NULL OR a.tenant = ?2)"
        );
        let row = q(sql)
            .bind(id.to_string())
            .bind(tenant.map(|t| t.as_str().to_string()))
            .fetch_optional(&self.readers)
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
             WHERE a.tenant = ?1 AND (?2 IS NULL OR a.invocation_id = ?2) \
             AND (a.created_ms < ?3 OR (a.created_ms = ?3 AND a.id < ?4)) \
             ORDER BY a.created_ms DESC, a.id DESC LIMIT ?5"
        );
        let rows = q(sql)
            .bind(tenant.as_str())
            .bind(invocation.map(|i| i.to_string()))
            .bind(ms)
            .bind(id)
            .bind(i64::from(limit))
            .fetch_all(&self.readers)
            .await
            .map_err(db)?;
        let items = rows.iter().map(decode_artifact).collect::<Result<Vec<_>, _>>()?;
        let next_cursor = next_cursor(&items, limit);
        Ok(ArtifactPage { items, next_cursor })
    }

    async fn delete_expired(&self, limit: u32) -> Result<u64, Error> {
        let sql = format!(
            "DELETE FROM artifacts WHERE id IN (SELECT id FROM artifacts WHERE expires_ms <= {NOW} \
             ORDER BY expires_ms LIMIT ?1)"
        );
        let done = q(sql).bind(i64::from(limit)).execute(&self.writer).await.map_err(db)?;
        Ok(done.rows_affected())
    }

    async fn claim_unreferenced(&self, grace_ms: u64, limit: u32) -> Result<Vec<BlobRef>, Error> {
        let grace = i64::try_from(grace_ms).unwrap_or(i64::MAX / 2);
        let sql = format!(
            "SELECT sha256 FROM artifact_blobs b WHERE {CLAIMABLE} AND (state = 'deleting' \
             OR NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.sha256 = b.sha256)) ORDER BY touched_ms LIMIT ?1"
        );
        let rows = q(sql).bind(i64::from(limit)).bind(grace).fetch_all(&self.writer).await.map_err(db)?;
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
        q("DELETE FROM artifact_blobs WHERE sha256 = ?1 AND state = 'deleting'".into())
            .bind(digest.as_hex())
            .execute(&self.writer)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn known_locations(&self, locations: &[String]) -> Result<Vec<String>, Error> {
        let list = serde_json::to_string(locations).map_err(|e| Error::internal(format!("cannot encode: {e}")))?;
        let rows = q("SELECT location FROM artifact_blobs WHERE location IN (SELECT value FROM json_each(?1))".into())
            .bind(list)
            .fetch_all(&self.readers)
            .await
            .map_err(db)?;
        rows.iter().map(|r| r.try_get::<String, _>(0).map_err(db)).collect()
    }

    async fn blob_count(&self) -> Result<u64, Error> {
        let n: i64 = q("SELECT count(*) FROM artifact_blobs".into())
            .fetch_one(&self.writer)
            .await
            .map_err(db)?
            .try_get(0)
            .map_err(db)?;
        Ok(n as u64)
    }
}

#[cfg(test)]
mod tests {
    use switchyard_contract::{ArtifactId, ArtifactIndex, BlobRef, Commit, ContentDigest, InvocationId, Keep};

    use super::*;

    #[tokio::test]
    async fn committed_rows_are_immutable_in_the_database() {
        let path = std::env::temp_dir().join(format!("switchyard-art-{}.db", uuid_like()));
        let url = format!("sqlite://{}", path.display());
        let pools = crate::sqlite::open_pools(&url, &crate::StoreOptions::default()).await;
        let (writer, readers) = pools.unwrap_or_else(|e| panic!("{e}"));
        let index = SqliteArtifactIndex::from_pools(writer, readers);
        let digest = ContentDigest::try_from("ab".repeat(32)).unwrap_or_else(|e| panic!("{e}"));
        let chunks = Some(ChunkSums { chunk_size: 1024, crc32c: vec![0xdead_beef] });
        let blob = BlobRef { digest: digest.clone(), size: 3, location: "sha256/ab/x".into(), chunks: chunks.clone() };
        let draft = NewArtifact {
            id: ArtifactId::new(),
            tenant: TenantId::new("t").unwrap_or_else(|e| panic!("{e}")),
            invocation: InvocationId::new(),
            name: "n".into(),
            media_type: "text/plain".into(),
            chunk_seq: 0,
            retention_class: "default".into(),
            keep: Keep::Forever,
        };
        let done = index.commit(&draft, &digest, 3, Some(&blob)).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(done, Commit::Committed { deduplicated: false, .. }));
        for sql in [
            "UPDATE artifacts SET name = 'other'",
            "UPDATE artifacts SET expires_ms = 1",
            "UPDATE artifact_blobs SET location = 'elsewhere'",
            "UPDATE artifact_blobs SET size = 4",
            "DELETE FROM artifact_blobs",
        ] {
            let r = sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).execute(&index.writer).await;
            assert!(r.is_err(), "{sql} must be refused");
        }
        let got = index.get(None, draft.id).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(got.is_some_and(|m| m.name == "n" && m.location == "sha256/ab/x" && m.chunks == chunks));
        index.writer.close().await;
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    fn uuid_like() -> String {
        ArtifactId::new().to_string()
    }
}
