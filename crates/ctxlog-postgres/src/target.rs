//! Where a log is: a connection string (a `postgresql://` URL or libpq's
//! key/value settings, completed from the environment as libpq does),
//! parsed once, and shown everywhere with its password left out.

use crate::conninfo::{self, Conninfo, Env, ProcessEnv};
use crate::tls::{self, SslMode};
use std::fmt;
use std::str::FromStr;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Whether `text` names a PostgreSQL log rather than a directory: a
/// `postgresql://` URL or libpq's key/value settings (see
/// [`conninfo::is_conninfo`]).
pub fn is_postgres_target(text: &str) -> bool {
    conninfo::is_conninfo(text)
}

/// A connection string, completed as libpq completes it (`conninfo.rs`)
/// and parsed once, with the TLS its `sslmode` asks for (see `tls.rs`).
/// Its [`fmt::Display`] never shows the password.
#[derive(Clone)]
pub struct Target {
    config: postgres::Config,
    tls: MakeRustlsConnect,
    ssl_mode: SslMode,
    shown: String,
}

/// Settings libpq reads that ctxlog reads itself (the TLS ones), has
/// already used (`service`, `passfile`), or that change nothing here.
const NOT_PASSED: &[&str] = &[
    "sslmode",
    "sslrootcert",
    "service",
    "passfile",
    "fallback_application_name",
    "client_encoding",
    "sslcompression",
    "requiressl",
    "sslcrl",
    "krbsrvname",
    "gssencmode",
];

/// Settings ctxlog cannot honour: refused rather than left out.
const REFUSED: &[(&str, &str)] = &[
    ("sslcert", "client certificates are not supported"),
    ("sslkey", "client certificates are not supported"),
];

impl Target {
    /// Reads `text` (a URL or key/value settings) and completes it from
    /// this process's environment, as libpq does.
    pub fn parse(text: &str) -> Result<Target, String> {
        Target::parse_in(text, &ProcessEnv)
    }

    /// [`Target::parse`], completed from `env`.
    pub fn parse_in(text: &str, env: &dyn Env) -> Result<Target, String> {
        let shown = conninfo::without_password(text);
        let bad = |e: String| format!("{shown}: {e}");
        let info = Conninfo::resolve(text, env).map_err(bad)?;
        for (key, why) in REFUSED {
            if info.get(key).is_some() {
                return Err(bad(format!("{key}: {why}")));
            }
        }
        let ssl_mode = match info.get("sslmode") {
            Some(mode) => SslMode::parse(mode).map_err(bad)?,
            None => SslMode::Prefer,
        };
        let root_cert = info.get("sslrootcert").map(tls::root_cert_path);
        let passed: Vec<String> = info
            .settings()
            .filter(|(k, _)| !NOT_PASSED.contains(k))
            .map(|(k, v)| format!("{k}='{}'", v.replace('\\', "\\\\").replace('\'', "\\'")))
            .collect();
        let mut config = postgres::Config::from_str(&passed.join(" "))
            .map_err(|e| bad(format!("not a PostgreSQL connection string: {e}")))?;
        config.ssl_mode(ssl_mode.client_mode());
        let tls = tls::connector(ssl_mode, root_cert.as_deref()).map_err(bad)?;
        Ok(Target {
            config,
            tls,
            ssl_mode,
            shown,
        })
    }

    /// The parsed configuration.
    pub fn config(&self) -> &postgres::Config {
        &self.config
    }

    /// A plain client connection to it, with the TLS its `sslmode` asks
    /// for (for tools beside the log: the bench's floor, tests).
    pub fn connect(&self) -> Result<postgres::Client, postgres::Error> {
        self.config.connect(self.tls())
    }

    /// The TLS connector its `sslmode` asks for.
    pub(crate) fn tls(&self) -> MakeRustlsConnect {
        self.tls.clone()
    }

    /// What its `sslmode` asks for.
    pub fn ssl_mode(&self) -> SslMode {
        self.ssl_mode
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Target({})", self.shown)
    }
}

/// `text` (a URL or key/value settings) with every password replaced by
/// `***`.
pub fn without_password(text: &str) -> String {
    conninfo::without_password(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_left_out() {
        for (url, shown) in [
            (
                "postgresql://ctxlog:s3cr%40t@127.0.0.1:5432/ctxlog",
                "postgresql://ctxlog:***@127.0.0.1:5432/ctxlog",
            ),
            (
                "postgres://u:p@h1,h2/db?sslmode=require&password=xyz",
                "postgres://u:***@h1,h2/db?sslmode=require&password=***",
            ),
            ("postgresql://u@h/db", "postgresql://u@h/db"),
            (
                "postgresql:///db?host=/run/pg",
                "postgresql:///db?host=/run/pg",
            ),
            ("postgresql://a:b:c@h", "postgresql://a:***@h"),
        ] {
            assert_eq!(without_password(url), shown);
            let t = Target::parse(url).map(|t| t.to_string());
            if let Ok(t) = t {
                assert_eq!(t, shown);
            }
        }
        let e = Target::parse("postgresql://u:hunter2@h:notaport/db").unwrap_err();
        assert!(!e.contains("hunter2"), "{e}");
    }
}
