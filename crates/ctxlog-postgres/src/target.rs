//! Where a log is: a `postgresql://` (or `postgres://`) connection string,
//! parsed once, and shown everywhere with its password left out.

use std::fmt;
use std::str::FromStr;

/// Whether `text` names a PostgreSQL log rather than a directory.
pub fn is_postgres_url(text: &str) -> bool {
    text.starts_with("postgresql://") || text.starts_with("postgres://")
}

/// A connection string and its parsed form. Its [`fmt::Display`] never
/// shows the password.
#[derive(Clone)]
pub struct Target {
    config: postgres::Config,
    shown: String,
}

impl Target {
    /// Parses `url` (libpq's URL form, `sslmode` included).
    pub fn parse(url: &str) -> Result<Target, String> {
        let shown = without_password(url);
        let config = postgres::Config::from_str(url)
            .map_err(|e| format!("{shown}: not a PostgreSQL connection string: {e}"))?;
        Ok(Target { config, shown })
    }

    /// The parsed configuration.
    pub fn config(&self) -> &postgres::Config {
        &self.config
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
