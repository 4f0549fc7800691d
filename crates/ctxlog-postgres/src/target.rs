//! Where a log is: a `postgresql://` (or `postgres://`) connection string,
//! parsed once, and shown everywhere with its password left out.

use crate::tls::{self, SslMode};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Whether `text` names a PostgreSQL log rather than a directory.
pub fn is_postgres_url(text: &str) -> bool {
    text.starts_with("postgresql://") || text.starts_with("postgres://")
}

/// A connection string and its parsed form, with the TLS its `sslmode`
/// asks for (see `tls.rs`). Its [`fmt::Display`] never shows the password.
#[derive(Clone)]
pub struct Target {
    config: postgres::Config,
    tls: MakeRustlsConnect,
    ssl_mode: SslMode,
    shown: String,
}

impl Target {
    /// Parses `url` (libpq's URL form; `sslmode` and `sslrootcert` as
    /// libpq reads them).
    pub fn parse(url: &str) -> Result<Target, String> {
        let shown = without_password(url);
        let bad = |e: String| format!("{shown}: {e}");
        let (rest, ssl_mode, root_cert) = take_tls_params(url).map_err(bad)?;
        let mut config = postgres::Config::from_str(&rest)
            .map_err(|e| format!("{shown}: not a PostgreSQL connection string: {e}"))?;
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

/// `url` without its `sslmode` and `sslrootcert` parameters (which the
/// client library reads otherwise, or not at all), and what they say
/// (`prefer` without one, as libpq).
fn take_tls_params(url: &str) -> Result<(String, SslMode, Option<PathBuf>), String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), SslMode::Prefer, None));
    };
    let mut mode = SslMode::Prefer;
    let mut root_cert = None;
    let mut kept = Vec::new();
    for param in query.split('&').filter(|p| !p.is_empty()) {
        match param.split_once('=') {
            Some(("sslmode", v)) => mode = SslMode::parse(&percent_decoded(v))?,
            Some(("sslrootcert", v)) => root_cert = Some(tls::root_cert_path(&percent_decoded(v))),
            _ => kept.push(param),
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, mode, root_cert))
}

/// `%XX` escapes of a URL parameter decoded (anything else kept).
fn percent_decoded(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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

/// `url` with the password of its user info (and any `password=` query
/// parameter) replaced by `***`.
pub fn without_password(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, hosts)) => match user_info.split_once(':') {
            Some((user, _)) => format!("{user}:***@{hosts}"),
            None => format!("{user_info}@{hosts}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_owned(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_owned(),
    };
    match scheme {
        Some(scheme) => format!("{scheme}://{authority}{tail}"),
        None => format!("{authority}{tail}"),
    }
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
