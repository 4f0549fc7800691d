//! Connections: a few kept open and lent one call at a time; a broken one
//! is dropped and the next call connects again, so the log outlives a
//! server restart.

use crate::error::backend;
use crate::target::Target;
use ctxlog_store::BackendError;
use postgres::{Client, Statement};
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Open connections, lent one at a time.
pub(crate) struct Pool {
    target: Target,
    /// A schema to work in (`search_path`), made when missing.
    schema: Option<String>,
    idle: Mutex<Vec<Conn>>,
    /// The most connections kept idle.
    keep: usize,
}

impl Pool {
    pub(crate) fn new(target: Target, schema: Option<String>, keep: usize) -> Pool {
        Pool {
            target,
            schema,
            idle: Mutex::new(Vec::new()),
            keep,
        }
    }

    pub(crate) fn target(&self) -> &Target {
        &self.target
    }

    /// A new connection, in the log's schema.
    pub(crate) fn connect(&self) -> Result<Client, BackendError> {
        let mut config = self.target.config().clone();
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("ctxlog");
        let mut client = config
            .connect(self.target.tls())
            .map_err(|e| backend(&self.target, "cannot connect", e))?;
        if let Some(schema) = &self.schema {
            let quoted = format!("\"{}\"", schema.replace('"', "\"\""));
            client
                .batch_execute(&format!(
                    "CREATE SCHEMA IF NOT EXISTS {quoted}; SET search_path TO {quoted}"
                ))
                .map_err(|e| backend(&self.target, "cannot use the schema", e))?;
        }
        Ok(client)
    }

    /// Runs `f` on a lent connection; a connection that broke is not kept.
    pub(crate) fn with<T, E>(&self, f: impl FnOnce(&mut Client) -> Result<T, E>) -> Result<T, E>
    where
        E: From<BackendError>,
    {
        self.with_conn(|conn| f(&mut conn.client))
    }

    /// [`Pool::with`], with the connection's prepared statements.
    pub(crate) fn with_conn<T, E>(&self, f: impl FnOnce(&mut Conn) -> Result<T, E>) -> Result<T, E>
    where
        E: From<BackendError>,
    {
        let lent = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut conn = match lent {
            Some(c) if !c.client.is_closed() => c,
            _ => Conn {
                client: self.connect()?,
                prepared: BTreeMap::new(),
            },
        };
        let out = f(&mut conn);
        if !conn.client.is_closed() {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            if idle.len() < self.keep {
                idle.push(conn);
            }
        }
        out
    }
}

/// A connection and the statements prepared on it.
pub(crate) struct Conn {
    pub(crate) client: Client,
    prepared: BTreeMap<&'static str, Statement>,
}

impl Conn {
    /// `sql` prepared on this connection (once: a call after the first
    /// costs no round trip for it).
    pub(crate) fn prepared(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.prepared.insert(sql, s.clone());
        Ok(s)
    }
}
