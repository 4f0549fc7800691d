//! ctxlog-testkit: what the tests of every crate share, so that no test
//! file carries its own copy: [`TempDir`] (a private temporary directory
//! removed on drop) and [`Rng`] (the seeded random source, the generator's
//! own splitmix64, so a failing case replays from its seed), and
//! [`browser`] (headless Chromium through chromedriver).
//!
//! Files:
//! - `browser.rs`: Headless Chromium through chromedriver (WebDriver).
//!
//! A dev-dependency only: nothing here is linked into a shipping binary.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod browser;

pub use ctxlog_core::generate::Rng;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A fresh directory under the system's temporary directory, named after
/// the test, the process and a counter; removed (with what it holds) when
/// dropped. It is not created: a store creates its own directory.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new, absent directory whose name starts with `ctxlog-{label}-`.
    pub fn new(label: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "ctxlog-{label}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&path);
        TempDir(path)
    }

    /// The directory, created (private to its owner) if missing.
    pub fn created(label: &str) -> TempDir {
        let dir = TempDir::new(label);
        if let Err(e) = std::fs::create_dir_all(&dir.0) {
            panic!("cannot create {}: {e}", dir.0.display());
        }
        dir
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `name` inside it.
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The PostgreSQL server the tests may use: the URL in
/// `CTXLOG_TEST_POSTGRES` (`.ci/postgres start` prints one). Without it the
/// test is skipped with a message, unless `CTXLOG_REQUIRE_POSTGRES` is set
/// (CI), where a missing server fails the test.
pub fn postgres_url(test: &str) -> Option<String> {
    match std::env::var("CTXLOG_TEST_POSTGRES") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CTXLOG_REQUIRE_POSTGRES").is_some() => panic!(
            "{test}: CTXLOG_REQUIRE_POSTGRES is set but CTXLOG_TEST_POSTGRES names no server \
             (start one with `.ci/postgres start DIR`)"
        ),
        _ => {
            eprintln!(
                "skipped {test}: no PostgreSQL server (set CTXLOG_TEST_POSTGRES to the URL \
                 `.ci/postgres start DIR` prints)"
            );
            None
        }
    }
}

/// A database of its own on the test server ([`postgres_url`]), made for
/// one test and dropped with it.
#[derive(Debug)]
pub struct PgDatabase {
    admin: String,
    name: String,
    url: String,
}

impl PgDatabase {
    /// A new, empty database named after `label` and the process; `None`
    /// (the test skipped, with a message) without a server outside CI.
    pub fn create(label: &str) -> Option<PgDatabase> {
        static N: AtomicU32 = AtomicU32::new(0);
        let admin = postgres_url(label)?;
        let name = format!(
            "t_{}_{}_{}",
            label.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        )
        .to_lowercase();
        let mut client = postgres::Client::connect(&admin, postgres::NoTls)
            .unwrap_or_else(|e| panic!("{label}: the test server refused a connection: {e}"));
        client
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .unwrap_or_else(|e| panic!("{label}: cannot create a database: {e}"));
        let url = match admin.rsplit_once('/') {
            Some((server, _)) => format!("{server}/{name}"),
            None => panic!("{label}: CTXLOG_TEST_POSTGRES names no database: {admin}"),
        };
        Some(PgDatabase { admin, name, url })
    }

    /// Its connection string (password included).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The password in the connection string, to check it is never shown.
    pub fn password(&self) -> Option<String> {
        let rest = self.url.split_once("://")?.1;
        let user_info = rest.split_once('@')?.0;
        Some(user_info.split_once(':')?.1.to_owned())
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = client.batch_execute(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ));
        }
    }
}
