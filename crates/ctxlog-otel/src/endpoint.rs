//! Where spans go and how, read as the OpenTelemetry specification says
//! an OTLP exporter reads its environment: `--endpoint` (the full traces
//! URL) or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the same), else
//! `OTEL_EXPORTER_OTLP_ENDPOINT` with `v1/traces` added, else the
//! specification's default, `http://localhost:4318/v1/traces`; headers, timeout,
//! compression and protocol from `OTEL_EXPORTER_OTLP_{TRACES_,}*` (the
//! signal's own first); the resource from `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES`. Pure: the variables come in as a function.

use percent_encoding::percent_decode_str;

/// An endpoint setting that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// The URL is not http(s).
    #[error("{from}: {url:?} is not an http:// or https:// URL")]
    BadUrl {
        /// The flag or variable.
        from: String,
        /// What it said.
        url: String,
    },
    /// A value that is not one the variable takes.
    #[error("{var}: {value:?} is not supported ({expected})")]
    BadValue {
        /// The variable.
        var: String,
        /// What it said.
        value: String,
        /// What it may say.
        expected: &'static str,
    },
}

/// Where spans go when nothing says: an OTLP/HTTP receiver on this
/// machine, as the specification defaults.
pub const DEFAULT_BASE: &str = "http://localhost:4318";

/// The body's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf` (the default).
    Protobuf,
    /// `http/json`.
    Json,
}

/// Everything the sender needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The full traces URL.
    pub url: String,
    /// Extra request headers (authentication, a backend's project).
    pub headers: Vec<(String, String)>,
    /// How long one request may take, ms.
    pub timeout_ms: u64,
    /// Whether bodies are gzipped.
    pub gzip: bool,
    /// Protobuf or JSON.
    pub protocol: Protocol,
}

/// The variables' reader: a name to its value, when set.
pub type Vars<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The signal's own variable, else the general one: its value and name.
fn either(vars: Vars, name: &str) -> Option<(String, String)> {
    let own = format!("OTEL_EXPORTER_OTLP_TRACES_{name}");
    let general = format!("OTEL_EXPORTER_OTLP_{name}");
    let set = |n: &str| vars(n).filter(|v| !v.trim().is_empty());
    set(&own)
        .map(|v| (v, own.clone()))
        .or_else(|| set(&general).map(|v| (v, general.clone())))
}

impl Endpoint {
    /// The endpoint `flag` (`--endpoint`) and the variables say.
    pub fn from_env(flag: Option<&str>, vars: Vars) -> Result<Endpoint, ConfigError> {
        let url = match flag {
            Some(url) => checked(url, "--endpoint")?,
            None => match vars("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").filter(|v| !v.is_empty()) {
                Some(url) => checked(&url, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")?,
                None => {
                    let base = vars("OTEL_EXPORTER_OTLP_ENDPOINT").filter(|v| !v.is_empty());
                    let base = match base {
                        Some(base) => checked(&base, "OTEL_EXPORTER_OTLP_ENDPOINT")?,
                        None => DEFAULT_BASE.to_owned(),
                    };
                    let sep = if base.ends_with('/') { "" } else { "/" };
                    format!("{base}{sep}v1/traces")
                }
            },
        };
        for name in ["CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE"] {
            if let Some((value, var)) = either(vars, name) {
                return Err(ConfigError::BadValue {
                    var,
                    value,
                    expected: "not read by ctxlog, which trusts the Mozilla root certificates (webpki-roots) only; unset it",
                });
            }
        }
        let mut headers = pairs(&vars("OTEL_EXPORTER_OTLP_HEADERS").unwrap_or_default());
        for (k, v) in pairs(&vars("OTEL_EXPORTER_OTLP_TRACES_HEADERS").unwrap_or_default()) {
            headers.retain(|(h, _)| !h.eq_ignore_ascii_case(&k));
            headers.push((k, v));
        }
        let timeout_ms = match either(vars, "TIMEOUT") {
            Some((v, var)) => v.trim().parse().map_err(|_| ConfigError::BadValue {
                var,
                value: v,
                expected: "a number of milliseconds",
            })?,
            None => 10_000,
        };
        let gzip = match either(vars, "COMPRESSION") {
            Some((v, _)) if v.trim() == "gzip" => true,
            Some((v, _)) if v.trim() == "none" => false,
            Some((value, var)) => {
                return Err(ConfigError::BadValue {
                    var,
                    value,
                    expected: "gzip or none",
                })
            }
            None => false,
        };
        let protocol = match either(vars, "PROTOCOL") {
            Some((v, _)) if v.trim() == "http/protobuf" => Protocol::Protobuf,
            Some((v, _)) if v.trim() == "http/json" => Protocol::Json,
            Some((value, var)) => {
                return Err(ConfigError::BadValue {
                    var,
                    value,
                    expected: "http/protobuf or http/json; ctxlog does not speak grpc",
                })
            }
            None => Protocol::Protobuf,
        };
        Ok(Endpoint {
            url,
            headers,
            timeout_ms,
            gzip,
            protocol,
        })
    }
}

/// The resource the spans come from: `service.name` (`OTEL_SERVICE_NAME`,
/// else `OTEL_RESOURCE_ATTRIBUTES`'s, else `ctxlog`) and the other
/// attributes `OTEL_RESOURCE_ATTRIBUTES` lists.
pub fn resource(vars: Vars) -> Vec<(String, String)> {
    let mut attributes = pairs(&vars("OTEL_RESOURCE_ATTRIBUTES").unwrap_or_default());
    let service = vars("OTEL_SERVICE_NAME").filter(|v| !v.is_empty());
    let named = attributes.iter().any(|(k, _)| k == "service.name");
    if let Some(service) = service {
        attributes.retain(|(k, _)| k != "service.name");
        attributes.insert(0, ("service.name".into(), service));
    } else if !named {
        attributes.insert(0, ("service.name".into(), "ctxlog".into()));
    }
    attributes
}

fn checked(url: &str, from: &str) -> Result<String, ConfigError> {
    let url = url.trim();
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(url.to_owned())
    } else {
        Err(ConfigError::BadUrl {
            from: from.to_owned(),
            url: url.to_owned(),
        })
    }
}

/// `k1=v1,k2=v2` with percent-encoded values (W3C baggage's form, as the
/// specification says); a pair without `=` is left out.
fn pairs(list: &str) -> Vec<(String, String)> {
    list.split(',')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            let k = k.trim();
            let v = percent_decode_str(v.trim())
                .decode_utf8_lossy()
                .into_owned();
            (!k.is_empty()).then(|| (k.to_owned(), v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(list: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            list.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_flag_and_the_traces_variable_are_full_urls_the_base_gets_v1_traces() {
        let vars = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]);
        let e = Endpoint::from_env(None, &vars).unwrap();
        assert_eq!(e.url, "http://c:4318/v1/traces");
        let vars = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/otlp/")]);
        assert_eq!(
            Endpoint::from_env(None, &vars).unwrap().url,
            "http://c:4318/otlp/v1/traces"
        );
        let vars = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x"),
        ]);
        assert_eq!(Endpoint::from_env(None, &vars).unwrap().url, "http://t:1/x");
        assert_eq!(
            Endpoint::from_env(Some("https://f/y"), &vars).unwrap().url,
            "https://f/y"
        );
        let default = Endpoint::from_env(None, &env(&[])).unwrap();
        assert_eq!(default.url, "http://localhost:4318/v1/traces");
        assert!(matches!(
            Endpoint::from_env(Some("localhost:4318"), &env(&[])),
            Err(ConfigError::BadUrl { .. })
        ));
    }

    #[test]
    fn headers_timeout_compression_and_protocol_follow_the_signal_first() {
        let vars = env(&[
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "api-key=a%20b,x-project-name=one",
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-Project-Name=two"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "500"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ]);
        let e = Endpoint::from_env(Some("http://h/v1/traces"), &vars).unwrap();
        assert_eq!(
            e.headers,
            vec![
                ("api-key".to_string(), "a b".to_string()),
                ("X-Project-Name".to_string(), "two".to_string())
            ]
        );
        assert_eq!(
            (e.timeout_ms, e.gzip, e.protocol),
            (2500, true, Protocol::Json)
        );
        let grpc = env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
        let err = Endpoint::from_env(Some("http://h"), &grpc).unwrap_err();
        assert!(
            err.to_string().contains("OTEL_EXPORTER_OTLP_PROTOCOL"),
            "{err}"
        );
    }

    #[test]
    fn the_service_is_named_once() {
        assert_eq!(
            resource(&env(&[]))[0],
            ("service.name".into(), "ctxlog".into())
        );
        let vars = env(&[
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "service.name=a,openinference.project.name=p",
            ),
            ("OTEL_SERVICE_NAME", "b"),
        ]);
        let r = resource(&vars);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0], ("service.name".into(), "b".into()));
    }
}
