//! A connection string read as libpq reads it: the URL form
//! (`postgresql://user:password@host:port/dbname?key=value`) or the
//! key/value form (`host=h port=5432 user=me dbname=ctxlog`), then, for
//! every setting it leaves out, the service it names (`service=`, else
//! `PGSERVICE`, from `PGSERVICEFILE` or `~/.pg_service.conf`, then
//! `PGSYSCONFDIR/pg_service.conf`), the `PG*` environment variables, and
//! libpq's defaults; a password still missing comes from the password file
//! (`passfile=`, else `PGPASSFILE`, else `~/.pgpass`). What is read from
//! the environment comes through [`Env`], so tests name their own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use crate::shown::without_password;

/// The keywords libpq knows, and the variable each falls back to.
const KEYWORDS: &[(&str, Option<&str>)] = &[
    ("host", Some("PGHOST")),
    ("hostaddr", Some("PGHOSTADDR")),
    ("port", Some("PGPORT")),
    ("dbname", Some("PGDATABASE")),
    ("user", Some("PGUSER")),
    ("password", Some("PGPASSWORD")),
    ("passfile", Some("PGPASSFILE")),
    ("service", Some("PGSERVICE")),
    ("options", Some("PGOPTIONS")),
    ("application_name", Some("PGAPPNAME")),
    ("fallback_application_name", None),
    ("connect_timeout", Some("PGCONNECT_TIMEOUT")),
    ("keepalives", None),
    ("keepalives_idle", None),
    ("keepalives_interval", None),
    ("keepalives_count", None),
    ("sslmode", Some("PGSSLMODE")),
    ("sslrootcert", Some("PGSSLROOTCERT")),
    ("sslcert", Some("PGSSLCERT")),
    ("sslkey", Some("PGSSLKEY")),
    ("sslcrl", Some("PGSSLCRL")),
    ("sslcompression", None),
    ("requiressl", None),
    ("channel_binding", Some("PGCHANNELBINDING")),
    ("target_session_attrs", Some("PGTARGETSESSIONATTRS")),
    ("load_balance_hosts", Some("PGLOADBALANCEHOSTS")),
    ("gssencmode", Some("PGGSSENCMODE")),
    ("client_encoding", Some("PGCLIENTENCODING")),
    ("krbsrvname", Some("PGKRBSRVNAME")),
];

/// The environment a connection string is completed from.
pub trait Env {
    /// A variable's value.
    fn var(&self, name: &str) -> Option<String>;
    /// The name of the user this process runs as.
    fn user_name(&self) -> Option<String>;
}

/// The process's own environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    fn user_name(&self) -> Option<String> {
        self.var("USER").or_else(|| self.var("LOGNAME"))
    }
}

/// Whether `text` is a connection string rather than a directory: a
/// `postgresql://` or `postgres://` URL, or key/value settings whose first
/// keyword is one of libpq's (`host=…`, `dbname=…`, `service=…`).
pub fn is_conninfo(text: &str) -> bool {
    if text.starts_with("postgresql://") || text.starts_with("postgres://") {
        return true;
    }
    let first = text.trim_start();
    match first.split_once('=') {
        Some((key, _)) => {
            let key = key.trim_end();
            !key.is_empty() && KEYWORDS.iter().any(|(k, _)| *k == key)
        }
        None => false,
    }
}

/// A connection string's settings, completed as libpq completes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conninfo {
    settings: BTreeMap<String, String>,
    /// Where the password came from when not from the string itself.
    pub password_from: Option<String>,
}

impl Conninfo {
    /// Reads `text` and completes it from `env` (see the module doc).
    pub fn resolve(text: &str, env: &dyn Env) -> Result<Conninfo, String> {
        let given = parse(text)?;
        let mut settings = BTreeMap::new();
        for (k, v) in given {
            if !KEYWORDS.iter().any(|(known, _)| *known == k) {
                return Err(format!("{k}: not a libpq connection setting"));
            }
            settings.insert(k, v);
        }
        let mut password_from = None;
        // The service, for what the string leaves out.
        let service = settings
            .get("service")
            .cloned()
            .or_else(|| env.var("PGSERVICE"));
        if let Some(service) = service {
            for (k, v) in service_settings(&service, env)? {
                settings.entry(k).or_insert(v);
            }
        }
        // The environment, for what is still left out.
        for (key, var) in KEYWORDS {
            let Some(var) = var else { continue };
            if settings.contains_key(*key) {
                continue;
            }
            if let Some(v) = env.var(var) {
                if *key == "password" {
                    password_from = Some(var.to_string());
                }
                settings.insert(key.to_string(), v);
            }
        }
        // libpq's defaults.
        if !settings.contains_key("host") && !settings.contains_key("hostaddr") {
            settings.insert("host".into(), default_host());
        }
        settings
            .entry("port".into())
            .or_insert_with(|| "5432".into());
        if !settings.contains_key("user") {
            let user = env
                .user_name()
                .ok_or("no user named (user=, PGUSER) and this process's user is unknown")?;
            settings.insert("user".into(), user);
        }
        if !settings.contains_key("dbname") {
            let user = settings["user"].clone();
            settings.insert("dbname".into(), user);
        }
        let mut info = Conninfo {
            settings,
            password_from,
        };
        if !info.settings.contains_key("password") {
            if let Some((password, file)) = info.password_from_file(env)? {
                info.settings.insert("password".into(), password);
                info.password_from = Some(file);
            }
        }
        Ok(info)
    }

    /// A setting, when set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.settings.get(key).map(String::as_str)
    }

    /// Every setting, by keyword.
    pub fn settings(&self) -> impl Iterator<Item = (&str, &str)> {
        self.settings.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The password file's line for this connection (its first host and
    /// port), as libpq reads it: `host:port:dbname:user:password`, `*`
    /// matching anything, `\` escaping `:` and `\`; a file that others may
    /// read is passed over, as libpq does.
    fn password_from_file(&self, env: &dyn Env) -> Result<Option<(String, String)>, String> {
        let file = match self.get("passfile") {
            Some(f) => PathBuf::from(f),
            None => match env.var("HOME") {
                Some(home) => Path::new(&home).join(".pgpass"),
                None => return Ok(None),
            },
        };
        let Ok(meta) = std::fs::metadata(&file) else {
            return Ok(None);
        };
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                file = %file.display(),
                "the password file may be read by others: passed over, as libpq does (chmod 0600 it)"
            );
            return Ok(None);
        }
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let host = self.get("host").or(self.get("hostaddr")).unwrap_or("");
        let host = host.split(',').next().unwrap_or("");
        // A Unix socket's directory matches `localhost`, as in libpq.
        let host = if host.starts_with('/') || host.is_empty() {
            "localhost"
        } else {
            host
        };
        let port = self.get("port").unwrap_or("5432");
        let port = port.split(',').next().unwrap_or("5432");
        let wanted = [
            host,
            port,
            self.get("dbname").unwrap_or(""),
            self.get("user").unwrap_or(""),
        ];
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let fields = pgpass_fields(line);
            if fields.len() < 5 {
                continue;
            }
            let matches = fields[..4]
                .iter()
                .zip(wanted)
                .all(|(field, value)| field == "*" || field == value);
            if matches {
                return Ok(Some((fields[4].clone(), file.display().to_string())));
            }
        }
        Ok(None)
    }
}

/// The fields of a password file's line (`\` escapes the next character).
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        let c = match c {
            '\\' => match chars.next() {
                Some(next) => next,
                None => break,
            },
            ':' if fields.len() < 5 => {
                fields.push(String::new());
                continue;
            }
            c => c,
        };
        if let Some(f) = fields.last_mut() {
            f.push(c);
        }
    }
    fields
}

/// libpq's default host: the Unix socket directory Debian's server uses
/// when it exists, else `localhost`.
fn default_host() -> String {
    for dir in ["/var/run/postgresql", "/run/postgresql", "/tmp"] {
        if Path::new(dir).join(".s.PGSQL.5432").exists() {
            return dir.to_string();
        }
    }
    if Path::new("/var/run/postgresql").is_dir() {
        return "/var/run/postgresql".to_string();
    }
    "localhost".to_string()
}

/// The settings of service `name`: from `PGSERVICEFILE` (else
/// `~/.pg_service.conf`), then `PGSYSCONFDIR/pg_service.conf` (else
/// Debian's `/etc/postgresql-common/pg_service.conf`).
fn service_settings(name: &str, env: &dyn Env) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    match env.var("PGSERVICEFILE") {
        Some(f) => files.push(PathBuf::from(f)),
        None => {
            if let Some(home) = env.var("HOME") {
                files.push(Path::new(&home).join(".pg_service.conf"));
            }
        }
    }
    let sysconf = env
        .var("PGSYSCONFDIR")
        .unwrap_or_else(|| "/etc/postgresql-common".to_string());
    files.push(Path::new(&sysconf).join("pg_service.conf"));
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        if let Some(settings) = service_section(&text, name) {
            return Ok(settings);
        }
    }
    let looked: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    Err(format!(
        "service {name:?} is in no service file (looked in {})",
        looked.join(", ")
    ))
}

/// The `key=value` lines of section `[name]` of a service file.
fn service_section(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut inside = false;
    let mut found = None::<Vec<(String, String)>>;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if found.is_some() && inside {
                break;
            }
            inside = section.trim() == name;
            if inside {
                found = Some(Vec::new());
            }
            continue;
        }
        if inside {
            if let (Some(settings), Some((k, v))) = (&mut found, line.split_once('=')) {
                settings.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
    }
    found
}

/// The settings `text` gives, in order: the URL form or the key/value one.
pub fn parse(text: &str) -> Result<Vec<(String, String)>, String> {
    match text
        .strip_prefix("postgresql://")
        .or_else(|| text.strip_prefix("postgres://"))
    {
        Some(rest) => parse_url(rest),
        None => parse_key_values(text),
    }
}

/// The URL form after its scheme.
fn parse_url(rest: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match before_query.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (before_query, None),
    };
    let hosts = match authority.rsplit_once('@') {
        Some((user_info, hosts)) => {
            match user_info.split_once(':') {
                Some((user, password)) => {
                    push_nonempty(&mut out, "user", decoded(user)?);
                    out.push(("password".into(), decoded(password)?));
                }
                None => push_nonempty(&mut out, "user", decoded(user_info)?),
            }
            hosts
        }
        None => authority,
    };
    if !hosts.is_empty() {
        let (mut names, mut ports) = (Vec::new(), Vec::new());
        for spec in hosts.split(',') {
            let (host, port) = split_host_port(spec)?;
            names.push(decoded(host)?);
            ports.push(port.to_string());
        }
        push_nonempty(&mut out, "host", names.join(","));
        if ports.iter().any(|p| !p.is_empty()) {
            out.push(("port".into(), ports.join(",")));
        }
    }
    if let Some(path) = path {
        push_nonempty(&mut out, "dbname", decoded(path)?);
    }
    for param in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = param
            .split_once('=')
            .ok_or_else(|| format!("{param:?}: a URL parameter without a value"))?;
        let (k, v) = (decoded(k)?, decoded(v)?);
        // libpq's JDBC-style alias.
        if k == "ssl" && v == "true" {
            out.push(("sslmode".into(), "require".into()));
        } else {
            out.push((k, v));
        }
    }
    Ok(out)
}

/// `host[:port]`, an IPv6 address in brackets.
fn split_host_port(spec: &str) -> Result<(&str, &str), String> {
    if let Some(rest) = spec.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("{spec:?}: an IPv6 address without its closing bracket"))?;
        let port = after.strip_prefix(':').unwrap_or("");
        return Ok((host, port));
    }
    Ok(match spec.rsplit_once(':') {
        Some((host, port)) => (host, port),
        None => (spec, ""),
    })
}

fn push_nonempty(out: &mut Vec<(String, String)>, key: &str, value: String) {
    if !value.is_empty() {
        out.push((key.to_string(), value));
    }
}

/// `%XX` escapes decoded; a bad one is an error.
fn decoded(v: &str) -> Result<String, String> {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("{v:?}: a bad %-escape"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{v:?}: not UTF-8 once unescaped"))
}

/// The key/value form: `key = value` pairs separated by spaces, a value in
/// single quotes when it holds spaces (`\'` and `\\` inside).
fn parse_key_values(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(format!("{key:?}: a setting without `=` (key=value)"));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => match chars.next() {
                        Some(c) => value.push(c),
                        None => return Err(format!("{key}: a value cut short after `\\`")),
                    },
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => return Err(format!("{key}: a quoted value without its closing quote")),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                if c == '\\' {
                    chars.next();
                    if let Some(next) = chars.next() {
                        value.push(next);
                    }
                    continue;
                }
                value.push(c);
                chars.next();
            }
        }
        out.push((key, value));
    }
}
