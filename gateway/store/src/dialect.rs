//! The two SQL dialects behind one small interface. Each entity module (invocations, artifacts,
//! bindings, secrets, tasks, outbox) writes its statements once, with `$n` placeholders (both
//! sqlx drivers read them), binds dialect-neutral [`Arg`]s, and asks the [`Dialect`] only for
//! what genuinely differs: the database clock, row locks, JSON parameters, list membership, how
//! a write transaction begins, and whether the PostgreSQL one-statement fast paths are available.
//! Every time the store records (leases, claims, expiries, timestamps) is read from the
//! database's clock ([`Dialect::NOW`]); the local clock only estimates, on PostgreSQL's
//! held-lease fast path, whether that path is worth trying.

use std::marker::PhantomData;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::pool::PoolConnection;
use sqlx::{ColumnIndex, Database, Decode, Executor, Pool, Row, Transaction, Type};
use switchyard_contract::Error;
use tokio::sync::Notify;

use crate::StoreOptions;
use crate::error::{StoreError, db};
use crate::migrate::{Embedded, POSTGRES, SQLITE};

/// A bind value, independent of the database.
#[derive(Debug, Clone)]
pub enum Arg {
    Text(String),
    OptText(Option<String>),
    Int(i64),
    OptInt(Option<i64>),
    /// A list for [`Dialect::any`] or PostgreSQL's `unnest` (an array there, a JSON array on
    /// SQLite); `None` is SQL `NULL`.
    Texts(Vec<Option<String>>),
    Ints(Vec<Option<i64>>),
}

/// One SQL statement and its bind values, in placeholder order.
#[derive(Debug, Clone)]
pub struct Stmt {
    sql: String,
    args: Vec<Arg>,
}

impl Stmt {
    pub fn new(sql: impl Into<String>) -> Self {
        Self { sql: sql.into(), args: Vec::new() }
    }

    /// A statement built with its bind values beside it (a filter of optional parts).
    pub fn with_args(sql: impl Into<String>, args: Vec<Arg>) -> Self {
        Self { sql: sql.into(), args }
    }

    pub fn arg(mut self, arg: Arg) -> Self {
        self.args.push(arg);
        self
    }

    pub fn text(self, v: impl Into<String>) -> Self {
        self.arg(Arg::Text(v.into()))
    }

    pub fn opt_text(self, v: Option<impl Into<String>>) -> Self {
        self.arg(Arg::OptText(v.map(Into::into)))
    }

    pub fn int(self, v: i64) -> Self {
        self.arg(Arg::Int(v))
    }

    pub fn opt_int(self, v: Option<i64>) -> Self {
        self.arg(Arg::OptInt(v))
    }

    pub fn texts(self, v: Vec<String>) -> Self {
        self.opt_texts(v.into_iter().map(Some).collect())
    }

    pub fn ints(self, v: Vec<i64>) -> Self {
        self.opt_ints(v.into_iter().map(Some).collect())
    }

    pub fn opt_texts(self, v: Vec<Option<String>>) -> Self {
        self.arg(Arg::Texts(v))
    }

    pub fn opt_ints(self, v: Vec<Option<i64>>) -> Self {
        self.arg(Arg::Ints(v))
    }

    /// This statement, then `next`, as one SQL text ([`Dialect::JOINS_STATEMENTS`]): `next`'s
    /// placeholders are renumbered to follow this one's values.
    fn then(mut self, next: Stmt) -> Stmt {
        let offset = self.args.len();
        self.sql.push_str(";\n");
        let mut rest = next.sql.as_str();
        while let Some(at) = rest.find('$') {
            self.sql.push_str(&rest[..=at]);
            rest = &rest[at + 1..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if let Ok(n) = rest[..digits].parse::<usize>() {
                self.sql.push_str(&(n + offset).to_string());
            }
            rest = &rest[digits..];
        }
        self.sql.push_str(rest);
        self.args.extend(next.args);
        self
    }
}

/// `stmts` as the fewest round trips the database allows, in order: one text on SQLite (the
/// driver steps through its statements in one call to its worker thread), each alone on
/// PostgreSQL (a prepared statement is one statement).
/// A text holds at most [`JOINED_VALUES`] bind values (SQLite numbers a parameter up to 32,766).
pub(crate) fn joined<D: Dialect>(stmts: Vec<Stmt>) -> Vec<Stmt> {
    if !D::JOINS_STATEMENTS {
        return stmts;
    }
    let mut texts: Vec<Stmt> = Vec::new();
    for stmt in stmts {
        match texts.pop() {
            Some(last) if last.args.len() + stmt.args.len() <= JOINED_VALUES => texts.push(last.then(stmt)),
            Some(last) => texts.extend([last, stmt]),
            None => texts.push(stmt),
        }
    }
    texts
}

/// The most bind values one [`joined`] text carries.
const JOINED_VALUES: usize = 30_000;

/// Where a statement runs: on a pool, on the writer pool (telling the group commit, which may
/// hold its connection, that another writer waits: [`Wanted`]), inside an open transaction, or
/// on a connection held out of its pool.
pub enum On<'e, DB: Database> {
    Pool(&'e Pool<DB>),
    Writer(&'e Pool<DB>, &'e Wanted),
    Tx(&'e mut Transaction<'static, DB>),
    Conn(&'e mut PoolConnection<DB>),
}

/// How many writers wait for the writer pool besides the group commit, which holds the single
/// SQLite writer between its batches while nobody else asks for it (each return to the pool
/// costs sqlx a ping on SQLite's thread before the next batch can take it again).
#[derive(Debug, Default)]
pub struct Wanted {
    count: AtomicUsize,
    asked: Notify,
}

/// One writer waiting (or writing) through the pool, while alive.
struct Wanting<'a>(&'a Wanted);

impl Wanted {
    fn want(&self) -> Wanting<'_> {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.asked.notify_one();
        Wanting(self)
    }

    /// Whether another writer waits now.
    pub(crate) fn any(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    /// Resolves when another writer may have asked since the last call (check [`Self::any`]).
    pub(crate) async fn asked(&self) {
        self.asked.notified().await;
    }
}

impl Drop for Wanting<'_> {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<DB: Database> std::fmt::Debug for On<'_, DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            On::Pool(_) => "On::Pool",
            On::Writer(..) => "On::Writer",
            On::Tx(_) => "On::Tx",
            On::Conn(_) => "On::Conn",
        })
    }
}

/// What a statement's caller wants back.
#[derive(Debug, Clone, Copy)]
pub enum Want {
    All,
    Optional,
    Affected,
}

/// The answer to a [`Want`].
pub enum Output<R> {
    All(Vec<R>),
    Optional(Option<R>),
    Affected(u64),
}

impl<R> std::fmt::Debug for Output<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Output::All(rows) => write!(f, "Output::All({} rows)", rows.len()),
            Output::Optional(row) => write!(f, "Output::Optional({})", row.is_some()),
            Output::Affected(n) => write!(f, "Output::Affected({n})"),
        }
    }
}

/// A row's cells by position, decoded the same way on both databases; a cell that does not
/// decode is a corrupt row (`Internal`), not an outage.
pub trait Cells {
    fn text(&self, i: usize) -> Result<String, Error>;
    fn opt_text(&self, i: usize) -> Result<Option<String>, Error>;
    fn int(&self, i: usize) -> Result<i64, Error>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>, Error>;
    /// How many cells the row has (tells apart the rows of [`joined`] reads).
    fn width(&self) -> usize;
}

fn cell<'r, R, T>(row: &'r R, i: usize) -> Result<T, Error>
where
    R: Row,
    usize: ColumnIndex<R>,
    T: Decode<'r, R::Database> + Type<R::Database>,
{
    row.try_get(i).map_err(|e| crate::row::corrupt(format!("column {i}: {e}")))
}

impl<R> Cells for R
where
    R: Row,
    usize: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
{
    fn text(&self, i: usize) -> Result<String, Error> {
        cell(self, i)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, Error> {
        cell(self, i)
    }
    fn int(&self, i: usize) -> Result<i64, Error> {
        cell(self, i)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, Error> {
        cell(self, i)
    }
    fn width(&self) -> usize {
        self.len()
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Pg {}
    impl Sealed for super::Sqlite {}
}

/// What differs between the two databases; implemented by [`Pg`] and [`Sqlite`] only.
pub trait Dialect: sealed::Sealed + Clone + Copy + std::fmt::Debug + Send + Sync + 'static {
    type Db: Database;
    type Row: Cells + Send + Sync + 'static;
    /// The database clock in ms since the epoch, as an SQL expression.
    const NOW: &'static str;
    /// Begins a write transaction. SQLite takes the write lock at once (`IMMEDIATE`), so a
    /// read inside it is already serialized against every other writer.
    const BEGIN_WRITE: &'static str;
    /// Appended to a read inside a write transaction: lock the rows read (PostgreSQL, where
    /// writers run concurrently); nothing on SQLite (the transaction holds the database).
    const FOR_UPDATE: &'static str;
    /// As [`Self::FOR_UPDATE`], passing over rows another replica holds (claims).
    const SKIP_LOCKED: &'static str;
    /// Data-modifying `WITH` clauses and array parameters (`unnest`): several writes in one
    /// statement and one round trip. The invocation store's admission and held-lease paths use
    /// them on PostgreSQL, where each round trip is a network hop.
    const FAST_PATHS: bool;
    /// One writer: invocation admissions and transitions go through the group commit
    /// ([`crate::group`]), many changes per transaction and `fsync`.
    const GROUP_COMMIT: bool;
    /// Several statements run as one text, in one call to the driver ([`joined`]).
    const JOINS_STATEMENTS: bool;

    /// Parameter `n` as a value for a JSON column.
    fn json(n: usize) -> String;
    /// `column` is one of the values of list parameter `n` ([`Arg::Texts`]).
    fn any(column: &str, n: usize) -> String;
    /// Runs one statement.
    fn run<'e>(on: On<'e, Self::Db>, stmt: Stmt, want: Want) -> BoxFuture<'e, Result<Output<Self::Row>, sqlx::Error>>;
}

/// PostgreSQL: many replicas on one database.
#[derive(Debug, Clone, Copy)]
pub struct Pg;

/// SQLite: one process, one writer connection.
#[derive(Debug, Clone, Copy)]
pub struct Sqlite;

impl Dialect for Pg {
    type Db = sqlx::Postgres;
    type Row = sqlx::postgres::PgRow;
    const NOW: &'static str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";
    const BEGIN_WRITE: &'static str = "BEGIN";
    const FOR_UPDATE: &'static str = " FOR UPDATE";
    const SKIP_LOCKED: &'static str = " FOR UPDATE SKIP LOCKED";
    const FAST_PATHS: bool = true;
    const GROUP_COMMIT: bool = false;
    const JOINS_STATEMENTS: bool = false;

    fn json(n: usize) -> String {
        format!("${n}::jsonb")
    }

    fn any(column: &str, n: usize) -> String {
        format!("{column} = ANY(${n})")
    }

    fn run<'e>(on: On<'e, Self::Db>, stmt: Stmt, want: Want) -> BoxFuture<'e, Result<Output<Self::Row>, sqlx::Error>> {
        let query = bind(stmt, |q, v| q.bind(v), |q, v| q.bind(v));
        Box::pin(execute(on, query, want, |r| r.rows_affected()))
    }
}

impl Dialect for Sqlite {
    type Db = sqlx::Sqlite;
    type Row = sqlx::sqlite::SqliteRow;
    const NOW: &'static str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    const FOR_UPDATE: &'static str = "";
    const SKIP_LOCKED: &'static str = "";
    const FAST_PATHS: bool = false;
    const GROUP_COMMIT: bool = true;
    const JOINS_STATEMENTS: bool = true;

    fn json(n: usize) -> String {
        format!("${n}")
    }

    fn any(column: &str, n: usize) -> String {
        format!("{column} IN (SELECT value FROM json_each(${n}))")
    }

    fn run<'e>(on: On<'e, Self::Db>, stmt: Stmt, want: Want) -> BoxFuture<'e, Result<Output<Self::Row>, sqlx::Error>> {
        // SQLite has no arrays: a list travels as a JSON array (read with `json_each`).
        let json = |q: Query<Self::Db>, v: serde_json::Value| q.bind(v.to_string());
        let query = bind(stmt, move |q, v| json(q, v.into()), move |q, v| json(q, v.into()));
        Box::pin(execute(on, query, want, |r| r.rows_affected()))
    }
}

type Query<DB> = sqlx::query::Query<'static, DB, <DB as Database>::Arguments>;

/// Binds a statement's values in order; `texts` and `ints` bind the lists, the one thing the
/// two drivers bind differently.
fn bind<DB>(
    stmt: Stmt,
    texts: impl Fn(Query<DB>, Vec<Option<String>>) -> Query<DB>,
    ints: impl Fn(Query<DB>, Vec<Option<i64>>) -> Query<DB>,
) -> Query<DB>
where
    DB: Database,
    for<'q> String: sqlx::Encode<'q, DB> + Type<DB>,
    for<'q> Option<String>: sqlx::Encode<'q, DB> + Type<DB>,
    for<'q> i64: sqlx::Encode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: sqlx::Encode<'q, DB> + Type<DB>,
{
    stmt.args.into_iter().fold(sqlx::query(sqlx::AssertSqlSafe(stmt.sql)), |q, a| match a {
        Arg::Text(v) => q.bind(v),
        Arg::OptText(v) => q.bind(v),
        Arg::Int(v) => q.bind(v),
        Arg::OptInt(v) => q.bind(v),
        Arg::Texts(v) => texts(q, v),
        Arg::Ints(v) => ints(q, v),
    })
}

/// Runs a bound query where `on` says; `affected` reads the driver's row count.
async fn execute<DB>(
    on: On<'_, DB>,
    query: Query<DB>,
    want: Want,
    affected: fn(&DB::QueryResult) -> u64,
) -> Result<Output<DB::Row>, sqlx::Error>
where
    DB: Database,
    DB::Arguments: sqlx::IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    match on {
        On::Pool(pool) => match want {
            Want::All => query.fetch_all(pool).await.map(Output::All),
            Want::Optional => query.fetch_optional(pool).await.map(Output::Optional),
            Want::Affected => query.execute(pool).await.map(|r| Output::Affected(affected(&r))),
        },
        On::Writer(pool, wanted) => {
            let _waiting = wanted.want();
            Box::pin(execute(On::Pool(pool), query, want, affected)).await
        }
        On::Tx(tx) => match want {
            Want::All => query.fetch_all(&mut **tx).await.map(Output::All),
            Want::Optional => query.fetch_optional(&mut **tx).await.map(Output::Optional),
            Want::Affected => query.execute(&mut **tx).await.map(|r| Output::Affected(affected(&r))),
        },
        On::Conn(conn) => match want {
            Want::All => query.fetch_all(&mut **conn).await.map(Output::All),
            Want::Optional => query.fetch_optional(&mut **conn).await.map(Output::Optional),
            Want::Affected => query.execute(&mut **conn).await.map(|r| Output::Affected(affected(&r))),
        },
    }
}

fn mismatch() -> Error {
    Error::internal("store: a statement answered in the wrong shape")
}

/// Every row of `stmt`.
pub(crate) async fn all<D: Dialect>(on: On<'_, D::Db>, stmt: Stmt) -> Result<Vec<D::Row>, Error> {
    match D::run(on, stmt, Want::All).await.map_err(db)? {
        Output::All(rows) => Ok(rows),
        _ => Err(mismatch()),
    }
}

/// The row of `stmt`, if any.
pub(crate) async fn optional<D: Dialect>(on: On<'_, D::Db>, stmt: Stmt) -> Result<Option<D::Row>, Error> {
    match D::run(on, stmt, Want::Optional).await.map_err(db)? {
        Output::Optional(row) => Ok(row),
        _ => Err(mismatch()),
    }
}

/// The row of a statement that always answers one (an aggregate, `RETURNING` of an upsert).
pub(crate) async fn one<D: Dialect>(on: On<'_, D::Db>, stmt: Stmt) -> Result<D::Row, Error> {
    optional::<D>(on, stmt).await?.ok_or_else(|| Error::internal("store: a statement returned no row"))
}

/// The rows `stmt` changed; `map` classifies a failure (e.g. a unique violation as a conflict).
pub(crate) async fn affected_or<D: Dialect>(
    on: On<'_, D::Db>,
    stmt: Stmt,
    map: fn(sqlx::Error) -> Error,
) -> Result<u64, Error> {
    match D::run(on, stmt, Want::Affected).await.map_err(map)? {
        Output::Affected(n) => Ok(n),
        _ => Err(mismatch()),
    }
}

/// The rows `stmt` changed.
pub(crate) async fn affected<D: Dialect>(on: On<'_, D::Db>, stmt: Stmt) -> Result<u64, Error> {
    affected_or::<D>(on, stmt, db).await
}

/// The database's clock, ms since the epoch.
pub(crate) async fn now<D: Dialect>(on: On<'_, D::Db>) -> Result<i64, Error> {
    one::<D>(on, Stmt::new(format!("SELECT {}", D::NOW))).await?.int(0)
}

/// The connections every store of one database shares: the writer and the readers. On
/// PostgreSQL they are one pool; on SQLite a single writer connection and a read-only pool (WAL).
pub struct Pools<D: Dialect> {
    writer: Pool<D::Db>,
    readers: Pool<D::Db>,
    wanted: Arc<Wanted>,
    dialect: PhantomData<D>,
}

impl<D: Dialect> Clone for Pools<D> {
    fn clone(&self) -> Self {
        Self {
            writer: self.writer.clone(),
            readers: self.readers.clone(),
            wanted: self.wanted.clone(),
            dialect: PhantomData,
        }
    }
}

impl<D: Dialect> std::fmt::Debug for Pools<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pools").field("writer", &self.writer).finish_non_exhaustive()
    }
}

impl<D: Dialect> Pools<D> {
    pub(crate) fn read(&self) -> On<'_, D::Db> {
        On::Pool(&self.readers)
    }

    /// The writer pool; with a group commit ([`Dialect::GROUP_COMMIT`]), which may hold its one
    /// connection, a statement there says that it waits.
    pub(crate) fn write(&self) -> On<'_, D::Db> {
        if D::GROUP_COMMIT { On::Writer(&self.writer, &self.wanted) } else { On::Pool(&self.writer) }
    }

    /// A write transaction ([`Dialect::BEGIN_WRITE`]).
    pub(crate) async fn begin(&self) -> Result<Transaction<'static, D::Db>, Error> {
        let _waiting = D::GROUP_COMMIT.then(|| self.wanted.want());
        self.writer.begin_with(D::BEGIN_WRITE).await.map_err(db)
    }

    /// A writer connection to hold across transactions (the group commit), without counting as
    /// one that waits.
    pub(crate) async fn hold_writer(&self) -> Result<PoolConnection<D::Db>, Error> {
        self.writer.acquire().await.map_err(db)
    }

    /// The writers waiting for the writer pool.
    pub(crate) fn wanted(&self) -> &Wanted {
        &self.wanted
    }

    /// The writer pool (PostgreSQL: the one pool).
    pub fn pool(&self) -> &Pool<D::Db> {
        &self.writer
    }
}

/// A pooled PostgreSQL connection idle for longer than this is pinged before it is used.
const PING_IDLE_AFTER: Duration = Duration::from_secs(1);

impl Pools<Pg> {
    /// Connects to PostgreSQL, migrating first when `opts.migrate` (an advisory lock makes
    /// concurrent starts safe).
    pub async fn connect(url: &str, opts: &StoreOptions) -> Result<Self, StoreError> {
        let connect: sqlx::postgres::PgConnectOptions = url.parse()?;
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(opts.max_connections)
            .acquire_timeout(opts.acquire_timeout)
            // sqlx pings every connection it hands out: a round trip before each statement of
            // a call. Only a connection idle for a while is checked (one in steady use would
            // have failed its last statement if the server had gone).
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for > PING_IDLE_AFTER {
                        sqlx::Connection::ping(conn).await?;
                    }
                    Ok(true)
                })
            })
            .connect_with(connect)
            .await?;
        if opts.migrate {
            sqlx::migrate::Migrator::new(Embedded(POSTGRES)).await?.run(&pool).await?;
        }
        Ok(Self { writer: pool.clone(), readers: pool, wanted: Arc::default(), dialect: PhantomData })
    }
}

impl Pools<Sqlite> {
    /// Opens (creating if missing) the database file named by `url`, e.g.
    /// `sqlite:///var/lib/x.db`: the single writer (migrated when `opts.migrate`) and the
    /// read-only readers (WAL, full sync, 5 s busy timeout, foreign keys on).
    pub async fn connect(url: &str, opts: &StoreOptions) -> Result<Self, StoreError> {
        use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
        if url.contains(":memory:") || url.contains("mode=memory") {
            return Err(StoreError::Config("in-memory SQLite is not durable; give a file path".into()));
        }
        let base = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(5))
            .foreign_keys(true);
        // Connections to a file of this machine: a ping before each use would find nothing
        // and cost a hand-off to SQLite's thread (per batch, on the group commit's writer).
        let writer =
            SqlitePoolOptions::new().max_connections(1).test_before_acquire(false).connect_with(base.clone()).await?;
        if opts.migrate {
            sqlx::migrate::Migrator::new(Embedded(SQLITE)).await?.run(&writer).await?;
        }
        let readers = SqlitePoolOptions::new()
            .max_connections(opts.max_connections.clamp(1, 8))
            .test_before_acquire(false)
            .connect_lazy_with(base.read_only(true).create_if_missing(false));
        Ok(Self { writer, readers, wanted: Arc::default(), dialect: PhantomData })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_statements_number_their_values_in_one_sequence() {
        let stmts = vec![
            Stmt::new("SELECT 1"),
            Stmt::new("UPDATE t SET a = $2 WHERE b = $1 AND c = json_extract(d, '$.e')").text("b").int(2),
            Stmt::new("INSERT INTO t VALUES ($1, $2), ($3, $4)").int(1).int(2).int(3).int(4),
        ];
        let one = joined::<Sqlite>(stmts.clone());
        assert_eq!(one.len(), 1);
        assert_eq!(
            one[0].sql,
            "SELECT 1;\nUPDATE t SET a = $2 WHERE b = $1 AND c = json_extract(d, '$.e');\n\
             INSERT INTO t VALUES ($3, $4), ($5, $6)"
        );
        assert_eq!(one[0].args.len(), 6);
        assert_eq!(joined::<Pg>(stmts).len(), 3, "PostgreSQL prepares one statement at a time");
    }

    #[test]
    fn a_joined_text_stays_under_the_parameter_limit() {
        let big = || Stmt::with_args("SELECT $1", vec![Arg::Int(0); JOINED_VALUES / 2 + 1]);
        let texts = joined::<Sqlite>(vec![big(), big(), Stmt::new("SELECT 2")]);
        assert_eq!(texts.len(), 2);
        assert!(texts.iter().all(|t| t.args.len() <= JOINED_VALUES));
    }
}
