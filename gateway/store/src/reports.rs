//! Kept test-kit runs ([`ConformanceRuns`]) on both databases.

use async_trait::async_trait;
use switchyard_contract::{ConformanceRun, ConformanceRuns, Error};

use crate::dialect::{self as sql, Cells, Dialect, Pools, Stmt};
use crate::row::parse_json;

/// The run log on one database.
#[derive(Debug, Clone)]
pub struct SqlConformanceRuns<D: Dialect> {
    pools: Pools<D>,
}

impl<D: Dialect> SqlConformanceRuns<D> {
    pub fn new(pools: Pools<D>) -> Self {
        Self { pools }
    }
}

const COLUMNS: &str = "id, suite, target, started_ms, finished_ms, passed, summary";

fn decode(row: &impl Cells) -> Result<ConformanceRun, Error> {
    Ok(ConformanceRun {
        id: row.text(0)?,
        suite: row.text(1)?,
        target: row.text(2)?,
        started_ms: row.int(3)?,
        finished_ms: row.int(4)?,
        passed: row.int(5)? != 0,
        summary: parse_json(&row.text(6)?, "conformance run summary")?,
    })
}

#[async_trait]
impl<D: Dialect> ConformanceRuns for SqlConformanceRuns<D> {
    async fn record(&self, run: &ConformanceRun) -> Result<(), Error> {
        let stmt = Stmt::new(format!("INSERT INTO conformance_runs ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"))
            .text(run.id.as_str())
            .text(run.suite.as_str())
            .text(run.target.as_str())
            .int(run.started_ms)
            .int(run.finished_ms)
            .int(i64::from(run.passed))
            .text(run.summary.to_string());
        sql::affected::<D>(self.pools.write(), stmt).await?;
        Ok(())
    }

    async fn list(&self, limit: u32) -> Result<Vec<ConformanceRun>, Error> {
        let stmt = Stmt::new(format!("SELECT {COLUMNS} FROM conformance_runs ORDER BY started_ms DESC, id LIMIT $1"))
            .int(i64::from(limit));
        sql::all::<D>(self.pools.read(), stmt).await?.iter().map(decode).collect()
    }

    async fn get(&self, id: &str) -> Result<Option<ConformanceRun>, Error> {
        let stmt = Stmt::new(format!("SELECT {COLUMNS} FROM conformance_runs WHERE id = $1")).text(id);
        sql::optional::<D>(self.pools.read(), stmt).await?.as_ref().map(decode).transpose()
    }
}
