//! Who may ask: the one decision of whether a request is answered. A pure
//! function of the request's method, target and headers, so every rule is
//! tested without a socket.
//!
//! The rules, in order: only `GET` and `HEAD` (nothing changes the store);
//! a `Host` the server is reached by (a name another site's page resolves
//! to this machine, DNS rebinding, is refused); an `Origin`, when sent,
//! that is this server's own; a fetch the browser marks as cross-site or
//! same-site (another port of this machine) is refused; then the secret:
//! the token of the printed URL (answered by a cookie and a redirect to
//! the same address without it) or that cookie.

use ctxlog_core::printable::one_line;

/// A request's parts that admission reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked<'a> {
    /// `GET`, `HEAD`, …
    pub method: &'a str,
    /// The request target (`/path?query`).
    pub target: &'a str,
    /// Its headers, names in any case.
    pub headers: &'a [(String, String)],
}

impl Asked<'_> {
    /// The first header called `name` (case ignored).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    }
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A method other than GET or HEAD.
    Method(String),
    /// No `Host`, or one this server is not reached by.
    Host(String),
    /// An `Origin` other than this server's own.
    Origin(String),
    /// The browser says the request comes from another site.
    CrossSite(String),
    /// Neither the token nor its cookie.
    Token,
}

impl Refusal {
    /// The HTTP status it is answered with.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::Method(_) => 405,
            Refusal::Host(_) => 421,
            Refusal::Origin(_) | Refusal::CrossSite(_) | Refusal::Token => 403,
        }
    }

    /// What the refusal says, to the log and to the asker (what the
    /// request sent made inert for a terminal).
    pub fn words(&self) -> String {
        match self {
            Refusal::Method(m) => {
                format!("{} is not answered: ctxlog serve only reads", one_line(m))
            }
            Refusal::Host(h) => format!("Host {h:?} is not this server's address"),
            Refusal::Origin(o) => format!("Origin {o:?} is not this server"),
            Refusal::CrossSite(s) => {
                format!(
                    "a request from another site ({}) is not answered",
                    one_line(s)
                )
            }
            Refusal::Token => {
                "open the address ctxlog serve printed (it holds the secret token)".into()
            }
        }
    }
}

/// What becomes of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Answer it.
    Pass,
    /// It holds the token: set the cookie and send the browser to
    /// `location` (the same address without the token).
    Remember {
        /// Where to go next.
        location: String,
    },
    /// Refuse it.
    Refused(Refusal),
}

/// The rules of one server: its port, the host names it is reached by,
/// its token.
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    token: String,
    port: u16,
    hosts: Vec<String>,
    any_ip: bool,
}

impl Gate {
    /// The gate of a server on `port` reached by `hosts` (lowercase names
    /// or IP literals, IPv6 in brackets) and, with `any_ip`, by any IP
    /// literal (a server listening on every address: a page of another
    /// site reaches it only by a name, which rebinding needs), whose
    /// secret is `token`.
    pub fn new(token: String, port: u16, hosts: Vec<String>, any_ip: bool) -> Gate {
        assert!(token.len() >= 32, "a token of at least 128 bits");
        Gate {
            token,
            port,
            hosts,
            any_ip,
        }
    }

    /// The cookie's name: one per port, as cookies do not tell ports apart.
    pub fn cookie_name(&self) -> String {
        format!("ctxlog-serve-{}", self.port)
    }

    /// The `Set-Cookie` value that remembers the token.
    pub fn cookie(&self) -> String {
        format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie_name(),
            self.token
        )
    }

    /// Whether `asked` is answered.
    pub fn admit(&self, asked: &Asked<'_>) -> Admission {
        if !matches!(asked.method, "GET" | "HEAD") {
            return Admission::Refused(Refusal::Method(asked.method.to_owned()));
        }
        let host = asked.header("host").unwrap_or("");
        if !self.is_own_host(host) {
            return Admission::Refused(Refusal::Host(host.to_owned()));
        }
        if let Some(origin) = asked.header("origin") {
            if origin != format!("http://{}", host.to_ascii_lowercase()) {
                return Admission::Refused(Refusal::Origin(origin.to_owned()));
            }
        }
        if let Some(site) = asked.header("sec-fetch-site") {
            if !matches!(site, "same-origin" | "none") {
                return Admission::Refused(Refusal::CrossSite(site.to_owned()));
            }
        }
        let (path, query) = split_target(asked.target);
        let given = query_value(query, "token");
        if given
            .as_deref()
            .is_some_and(|t| same_secret(t, &self.token))
        {
            let rest = without_param(query, "token");
            let location = if rest.is_empty() {
                path.to_owned()
            } else {
                format!("{path}?{rest}")
            };
            return Admission::Remember { location };
        }
        if self
            .cookie_token(asked)
            .is_some_and(|t| same_secret(t, &self.token))
        {
            return Admission::Pass;
        }
        Admission::Refused(Refusal::Token)
    }

    /// Whether `host` (a `Host` header) names this server: one of its
    /// names with its port.
    fn is_own_host(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        let Some((name, port)) = host.rsplit_once(':') else {
            return false;
        };
        let ip_literal = || {
            let bare = name.trim_start_matches('[').trim_end_matches(']');
            bare.parse::<std::net::IpAddr>().is_ok()
        };
        port.parse::<u16>().ok() == Some(self.port)
            && (self.hosts.iter().any(|h| h == name) || (self.any_ip && ip_literal()))
    }

    /// The value of this server's cookie, when sent.
    fn cookie_token<'a>(&self, asked: &Asked<'a>) -> Option<&'a str> {
        let name = self.cookie_name();
        asked
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("cookie"))
            .flat_map(|(_, v)| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }
}

/// A target's path and query (without the `?`).
pub(crate) fn split_target(target: &str) -> (&str, &str) {
    target.split_once('?').unwrap_or((target, ""))
}

/// The first value of `name` in `query`, decoded.
pub(crate) fn query_value(query: &str, name: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.into_owned())
}

/// `query` without its `name` parameters, encoded again.
fn without_param(query: &str, name: &str) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (n, v) in form_urlencoded::parse(query.as_bytes()).filter(|(n, _)| n != name) {
        out.append_pair(&n, &v);
    }
    out.finish()
}

/// Compares two secrets in a time that does not depend on where they
/// differ.
fn same_secret(given: &str, token: &str) -> bool {
    let (a, b) = (given.as_bytes(), token.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn gate() -> Gate {
        Gate::new(
            TOKEN.into(),
            8080,
            vec!["127.0.0.1".into(), "localhost".into(), "[::1]".into()],
            false,
        )
    }

    fn ask(method: &str, target: &str, headers: &[(&str, &str)]) -> Admission {
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        gate().admit(&Asked {
            method,
            target,
            headers: &headers,
        })
    }

    const COOKIE: (&str, &str) = (
        "Cookie",
        "a=b; ctxlog-serve-8080=0123456789abcdef0123456789abcdef",
    );

    #[test]
    fn the_token_sets_the_cookie_and_the_cookie_passes() {
        let first = ask(
            "GET",
            &format!("/s/x?step=3&token={TOKEN}"),
            &[("Host", "127.0.0.1:8080")],
        );
        assert_eq!(
            first,
            Admission::Remember {
                location: "/s/x?step=3".into()
            }
        );
        assert_eq!(
            ask("GET", "/", &[("Host", "localhost:8080"), COOKIE]),
            Admission::Pass
        );
        assert_eq!(
            ask("HEAD", "/", &[("host", "[::1]:8080"), COOKIE]),
            Admission::Pass
        );
        assert_eq!(
            ask(
                "GET",
                "/",
                &[
                    ("Host", "127.0.0.1:8080"),
                    ("Sec-Fetch-Site", "same-origin"),
                    ("Origin", "http://127.0.0.1:8080"),
                    COOKIE
                ]
            ),
            Admission::Pass
        );
    }

    #[test]
    fn without_the_secret_nothing_is_answered() {
        let host = ("Host", "127.0.0.1:8080");
        assert_eq!(ask("GET", "/", &[host]), Admission::Refused(Refusal::Token));
        assert_eq!(
            ask("GET", "/?token=wrong", &[host]),
            Admission::Refused(Refusal::Token)
        );
        let other_port = (
            "Cookie",
            "ctxlog-serve-9090=0123456789abcdef0123456789abcdef",
        );
        assert_eq!(
            ask("GET", "/", &[host, other_port]),
            Admission::Refused(Refusal::Token)
        );
        let short = ("Cookie", "ctxlog-serve-8080=0123");
        assert_eq!(
            ask("GET", "/", &[host, short]),
            Admission::Refused(Refusal::Token)
        );
    }

    #[test]
    fn what_a_refusal_says_holds_no_control_character() {
        for refusal in [
            Refusal::Method("P\u{1b}]52;c;aGk=\u{7}OST".into()),
            Refusal::Host("x\u{1b}[2J:1".into()),
            Refusal::Origin("http://\u{9b}31m".into()),
            Refusal::CrossSite("cross\u{1b}[2J".into()),
        ] {
            let words = refusal.words();
            assert!(!words.chars().any(char::is_control), "{words:?}");
        }
    }

    #[test]
    fn foreign_hosts_origins_and_sites_are_refused_even_with_the_secret() {
        let token = format!("/?token={TOKEN}");
        for host in ["evil.example:8080", "127.0.0.1:9090", "127.0.0.1", ""] {
            assert!(matches!(
                ask("GET", &token, &[("Host", host), COOKIE]),
                Admission::Refused(Refusal::Host(_))
            ));
        }
        let host = ("Host", "127.0.0.1:8080");
        for origin in [
            "http://evil.example",
            "http://127.0.0.1:9090",
            "null",
            "https://127.0.0.1:8080",
        ] {
            assert!(matches!(
                ask("GET", "/", &[host, ("Origin", origin), COOKIE]),
                Admission::Refused(Refusal::Origin(_))
            ));
        }
        for site in ["cross-site", "same-site"] {
            assert!(matches!(
                ask("GET", "/", &[host, ("Sec-Fetch-Site", site), COOKIE]),
                Admission::Refused(Refusal::CrossSite(_))
            ));
        }
        assert!(matches!(
            ask("POST", "/", &[host, COOKIE]),
            Admission::Refused(Refusal::Method(_))
        ));
    }
}
