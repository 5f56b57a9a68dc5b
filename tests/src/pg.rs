//! A throw-away PostgreSQL cluster for tests.
//!
//! If `SWITCHYARD_TEST_PG` holds a URL (the test command starts one cluster for the whole run),
//! databases are created there. Otherwise the first call starts a private cluster from the
//! installed server binaries (`$PG_BIN`, else the newest `/usr/lib/postgresql/*/bin`) in a temp
//! directory, listening on a unix socket only, as the `postgres` user when running as root
//! (PostgreSQL refuses to run as root). It stops when the test process exits: a shell wrapper
//! holds the postmaster and kills it when our end of its stdin pipe closes.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

struct Cluster {
    admin_url: String,
    _guard: Option<Mutex<Child>>,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// A fresh, empty database on the test cluster; returns its URL.
pub async fn database() -> String {
    let cluster = CLUSTER.get_or_init(|| start().unwrap_or_else(|e| panic!("PostgreSQL for tests: {e}")));
    let name = format!("t_{}", uuid::Uuid::new_v4().simple());
    let (base, query) = cluster.admin_url.split_once('?').map_or((cluster.admin_url.as_str(), ""), |(b, q)| (b, q));
    let admin = sqlx_free_exec(&cluster.admin_url, &format!("CREATE DATABASE {name}"));
    admin.unwrap_or_else(|e| panic!("CREATE DATABASE failed: {e}"));
    let root = base.rsplit_once('/').map_or(base, |(r, _)| r);
    if query.is_empty() { format!("{root}/{name}") } else { format!("{root}/{name}?{query}") }
}

/// The unix socket a test database's URL names (`?host=<dir>&port=<n>`) and the database's name:
/// for a proxy that sits between a gateway and the cluster.
pub fn socket_and_db(url: &str) -> (PathBuf, String) {
    let (base, query) = url.split_once('?').unwrap_or_else(|| panic!("no socket in {url}"));
    let param = |k: &str| query.split('&').find_map(|kv| kv.strip_prefix(&format!("{k}="))).map(str::to_string);
    let dir = param("host").unwrap_or_else(|| panic!("no host= in {url}"));
    let port = param("port").unwrap_or_else(|| "5432".into());
    let db = base.rsplit('/').next().unwrap_or_default().to_string();
    (Path::new(&dir).join(format!(".s.PGSQL.{port}")), db)
}

/// Runs one statement with `psql` (keeps this harness free of a database driver).
fn sqlx_free_exec(url: &str, sql: &str) -> Result<(), String> {
    psql(url, sql).map(drop)
}

/// Runs one statement with `psql` and returns what it printed (unaligned, tuples only).
pub fn psql(url: &str, sql: &str) -> Result<String, String> {
    let out = Command::new("psql")
        .args(["-v", "ON_ERROR_STOP=1", "-qAt", "-d", url, "-c", sql])
        .output()
        .map_err(|e| format!("cannot run psql: {e} (install postgresql-client)"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn pg_bin() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("PG_BIN") {
        return Ok(PathBuf::from(p));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| "no /usr/lib/postgresql: install the PostgreSQL server (apt-get install postgresql)".to_string())?
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, p)| p.join("postgres").exists())
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p).ok_or_else(|| "no PostgreSQL server binaries found".into())
}

/// The uid/gid to run PostgreSQL as: ourselves, or `postgres` when we are root.
fn run_as() -> Result<Option<(u32, u32)>, String> {
    let id = |flag: &str, user: Option<&str>| -> Result<u32, String> {
        let mut c = Command::new("id");
        c.arg(flag);
        if let Some(u) = user {
            c.arg(u);
        }
        let out = c.output().map_err(|e| format!("cannot run id: {e}"))?;
        String::from_utf8_lossy(&out.stdout).trim().parse().map_err(|_| format!("no user {user:?}"))
    };
    if id("-u", None)? != 0 {
        return Ok(None);
    }
    Ok(Some((id("-u", Some("postgres"))?, id("-g", Some("postgres"))?)))
}

fn command(path: &Path, user: Option<(u32, u32)>) -> Command {
    let mut c = Command::new(path);
    if let Some((uid, gid)) = user {
        c.uid(uid).gid(gid);
    }
    c
}

/// The user a server runs as (uid, gid), when not this process's.
type RunAs = Option<(u32, u32)>;

/// A new data directory (`<dir>/data`, owned by the user the server runs as): the server's
/// binaries, that user, and the directory. `durable`: synced to disk (else `initdb -N`).
fn init(durable: bool) -> Result<(PathBuf, RunAs, tempfile::TempDir), String> {
    let bin = pg_bin()?;
    let user = run_as()?;
    let dir = tempfile::Builder::new().prefix("switchyard-pg-").tempdir().map_err(|e| e.to_string())?;
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).map_err(|e| format!("chown: {e}"))?;
    }
    let mut initdb = command(&bin.join("initdb"), user);
    initdb.arg("-D").arg(dir.path().join("data"));
    initdb.args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-instructions"]);
    if !durable {
        initdb.arg("-N");
    }
    let status = initdb.stdout(Stdio::null()).status().map_err(|e| format!("initdb: {e}"))?;
    if !status.success() {
        return Err(format!("initdb failed ({status})"));
    }
    Ok((bin, user, dir))
}

fn start() -> Result<Cluster, String> {
    if let Ok(url) = std::env::var("SWITCHYARD_TEST_PG")
        && !url.is_empty()
    {
        return Ok(Cluster { admin_url: url, _guard: None });
    }
    let (bin, user, dir) = init(false)?;
    let data = dir.path().join("data");
    let script = format!(
        "'{}' -D '{}' -k '{}' -c listen_addresses= -p 5432 -c fsync=off -c synchronous_commit=off \
         -c full_page_writes=off -c max_connections=200 >'{}/log' 2>&1 & pid=$!; cat >/dev/null; kill -QUIT $pid; wait $pid; rm -rf '{}'",
        bin.join("postgres").display(),
        data.display(),
        dir.path().display(),
        dir.path().display(),
        dir.path().display()
    );
    let guard = command(Path::new("/bin/sh"), user)
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("postgres: {e}"))?;
    let pid_file = data.join("postmaster.pid");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = std::fs::read_to_string(&pid_file).is_ok_and(|s| s.contains("ready"));
        if ready {
            break;
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.path().join("log")).unwrap_or_default();
            return Err(format!("postgres did not become ready in 30 s:\n{log}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let admin_url = format!("postgres://postgres@localhost/postgres?host={}&port=5432", dir.path().display());
    // The wrapper removes the directory after the postmaster stops.
    let _ = dir.keep();
    Ok(Cluster { admin_url, _guard: Some(Mutex::new(guard)) })
}

/// A PostgreSQL server of one test's own, durable (fsync and synchronous commit on, as in
/// production), that the test can stop immediately (a crash: `SIGQUIT`, recovery at the next
/// start) and start again on the same data and socket. Listens on a unix socket only. Stopped
/// and removed when dropped.
#[derive(Debug)]
pub struct Server {
    bin: PathBuf,
    user: Option<(u32, u32)>,
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// The URL of its `postgres` database.
    pub url: String,
}

impl Server {
    pub fn start() -> Result<Server, String> {
        let (bin, user, dir) = init(true)?;
        let url = format!("postgres://postgres@localhost/postgres?host={}&port=5432", dir.path().display());
        let mut server = Server { bin, user, dir, child: None, url };
        server.start_again()?;
        Ok(server)
    }

    /// Starts it (after [`stop_immediately`](Self::stop_immediately)); returns once it accepts
    /// connections (crash recovery done).
    pub fn start_again(&mut self) -> Result<(), String> {
        if self.child.is_some() {
            return Ok(());
        }
        let data = self.dir.path().join("data");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("log"))
            .map_err(|e| e.to_string())?;
        let child = command(&self.bin.join("postgres"), self.user)
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(self.dir.path())
            .args(["-c", "listen_addresses=", "-p", "5432", "-c", "max_connections=200"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("postgres: {e}"))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while psql(&self.url, "SELECT 1").is_err() {
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
                return Err(format!("postgres did not accept connections in 60 s:\n{log}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Stops it at once, as a crash does (`pg_ctl stop -m immediate`: every backend exits
    /// without a checkpoint; the next start recovers from the write-ahead log).
    pub fn stop_immediately(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-QUIT", &child.id().to_string()]).status();
            let _ = child.wait();
        }
    }

    /// The unix socket it listens on.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join(".s.PGSQL.5432")
    }

    /// A fresh database on it; returns its URL.
    pub fn database(&self, name: &str) -> Result<String, String> {
        psql(&self.url, &format!("CREATE DATABASE {name}"))?;
        Ok(self.url.replace("/postgres?", &format!("/{name}?")))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
            let _ = child.wait();
        }
    }
}
