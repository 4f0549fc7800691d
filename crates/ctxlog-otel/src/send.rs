//! One OTLP/HTTP request, sent until the endpoint takes it: transport
//! failures and the answers the specification calls retryable (429, 502,
//! 503, 504) are tried again with exponential backoff (honouring
//! `Retry-After`), for as long as the caller's patience lasts; any other
//! answer is final. A partial success is reported, not hidden.

use crate::endpoint::{Endpoint, Protocol};
use crate::otlp;
use ctxlog_core::printable::one_line;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// Why a request was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The endpoint refused it for good (a 4xx other than 429, a 5xx
    /// other than 502–504).
    #[error("{url} refused the spans: HTTP {status}: {body}")]
    Refused {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
        /// The start of its answer, made printable.
        body: String,
    },
    /// It could not be delivered before the caller's patience ran out.
    #[error("{url} did not take the spans after {attempts} attempts over {seconds} s: {last}")]
    GaveUp {
        /// The URL.
        url: String,
        /// How many tries.
        attempts: u32,
        /// How long, s.
        seconds: u64,
        /// The last failure.
        last: String,
    },
    /// The request cannot be made as configured (the URL, a header).
    #[error("cannot send to {url}: {why}")]
    Unusable {
        /// The URL.
        url: String,
        /// Why.
        why: String,
    },
    /// The request could not be written.
    #[error("cannot encode the spans: {0}")]
    Encode(String),
}

/// What the endpoint said of a delivered request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// Spans it says it rejected (a partial success).
    pub rejected: i64,
    /// Its message about them.
    pub message: String,
    /// How many tries it took.
    pub attempts: u32,
}

/// How long to keep trying.
#[derive(Debug, Clone, Copy)]
pub struct Patience {
    /// The first wait, ms (doubled each time).
    pub first_ms: u64,
    /// The longest wait, ms.
    pub max_ms: u64,
    /// Give up after this long, ms (`None`: never).
    pub give_up_ms: Option<u64>,
}

impl Default for Patience {
    fn default() -> Self {
        Patience {
            first_ms: 500,
            max_ms: 30_000,
            give_up_ms: Some(120_000),
        }
    }
}

/// Sends requests to one endpoint.
#[derive(Debug)]
pub struct Sender {
    agent: ureq::Agent,
    endpoint: Endpoint,
}

/// One try's failure: whether to try again, and when at the earliest.
enum Failure {
    Retry(String, Option<u64>),
    Final(SendError),
}

impl Sender {
    /// A sender to `endpoint`.
    pub fn new(endpoint: Endpoint) -> Sender {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_millis(endpoint.timeout_ms.max(1)))
            .build();
        Sender { agent, endpoint }
    }

    /// The endpoint's URL.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }

    /// Sends `request` until it is taken, a final answer comes, or
    /// `patience` runs out; `note` hears of each failed try.
    pub fn send(
        &self,
        request: &ExportTraceServiceRequest,
        patience: Patience,
        note: &mut dyn FnMut(&str),
    ) -> Result<Delivered, SendError> {
        let body = self.body(request)?;
        let began = Instant::now();
        let mut wait = patience.first_ms;
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let failure = match self.post(&body) {
                Ok(answer) => return Ok(delivered(&answer, self.endpoint.protocol, attempts)),
                Err(Failure::Final(e)) => return Err(e),
                Err(Failure::Retry(why, after)) => (why, after),
            };
            let (why, after) = failure;
            // `Retry-After` is honoured, never shorter than the backoff.
            let pause = after.map_or(wait, |s| s.saturating_mul(1000).max(wait));
            let spent = began.elapsed().as_millis() as u64;
            if patience
                .give_up_ms
                .is_some_and(|limit| spent + pause > limit)
            {
                return Err(SendError::GaveUp {
                    url: self.endpoint.url.clone(),
                    attempts,
                    seconds: spent / 1000,
                    last: why,
                });
            }
            note(&format!(
                "{}: {why}; trying again in {:.1} s",
                self.endpoint.url,
                pause as f64 / 1000.0
            ));
            std::thread::sleep(Duration::from_millis(pause));
            wait = (wait.saturating_mul(2)).min(patience.max_ms);
        }
    }

    /// The request's body as the endpoint takes it.
    fn body(&self, request: &ExportTraceServiceRequest) -> Result<Vec<u8>, SendError> {
        let raw = match self.endpoint.protocol {
            Protocol::Protobuf => otlp::protobuf(request),
            Protocol::Json => otlp::json_line(request)
                .map_err(|e| SendError::Encode(e.to_string()))?
                .into_bytes(),
        };
        if !self.endpoint.gzip {
            return Ok(raw);
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&raw)
            .and_then(|()| gz.finish())
            .map_err(|e| SendError::Encode(e.to_string()))
    }

    /// One try: the answer's body when taken.
    fn post(&self, body: &[u8]) -> Result<Vec<u8>, Failure> {
        let e = &self.endpoint;
        let content_type = match e.protocol {
            Protocol::Protobuf => "application/x-protobuf",
            Protocol::Json => "application/json",
        };
        let mut request = self.agent.post(&e.url).set("Content-Type", content_type);
        if e.gzip {
            request = request.set("Content-Encoding", "gzip");
        }
        for (k, v) in &e.headers {
            request = request.set(k, v);
        }
        match request.send_bytes(body) {
            Ok(answer) => {
                let mut bytes = Vec::new();
                let _ = answer.into_reader().take(1 << 20).read_to_end(&mut bytes);
                Ok(bytes)
            }
            Err(ureq::Error::Status(status, answer)) => {
                let after = answer
                    .header("Retry-After")
                    .and_then(|v| v.trim().parse::<u64>().ok());
                let mut text = String::new();
                let _ = answer.into_reader().take(600).read_to_string(&mut text);
                let text = short(&text);
                if matches!(status, 429 | 502 | 503 | 504) {
                    Err(Failure::Retry(format!("HTTP {status}: {text}"), after))
                } else {
                    Err(Failure::Final(SendError::Refused {
                        url: e.url.clone(),
                        status,
                        body: text,
                    }))
                }
            }
            Err(ureq::Error::Transport(t)) => {
                use ureq::ErrorKind as K;
                // Its words without the URL, which every note names already.
                let mut why = t.kind().to_string();
                if let Some(m) = t.message() {
                    why.push_str(&format!(": {m}"));
                }
                if let Some(cause) = std::error::Error::source(&t) {
                    why.push_str(&format!(": {cause}"));
                }
                // What no wait mends (the URL, a header, a proxy setting) is
                // final; the network and the server may come back.
                let fixed = matches!(
                    t.kind(),
                    K::InvalidUrl
                        | K::UnknownScheme
                        | K::BadHeader
                        | K::InvalidProxyUrl
                        | K::InsecureRequestHttpsOnly
                        | K::TooManyRedirects
                );
                if fixed {
                    return Err(Failure::Final(SendError::Unusable {
                        url: e.url.clone(),
                        why: short(&why),
                    }));
                }
                Err(Failure::Retry(short(&why), None))
            }
        }
    }
}

/// What a 2xx answer says, in the protocol's encoding (an empty or
/// undecodable body: all taken).
fn delivered(answer: &[u8], protocol: Protocol, attempts: u32) -> Delivered {
    let (rejected, message) = match protocol {
        Protocol::Protobuf => ExportTraceServiceResponse::decode(answer)
            .ok()
            .and_then(|r| r.partial_success)
            .map_or((0, String::new()), |p| (p.rejected_spans, p.error_message)),
        Protocol::Json => {
            let v: serde_json::Value = serde_json::from_slice(answer).unwrap_or_default();
            let p = &v["partialSuccess"];
            // int64 is a string in OTLP JSON, a number from some servers.
            let rejected = match &p["rejectedSpans"] {
                serde_json::Value::String(n) => n.parse().unwrap_or(0),
                n => n.as_i64().unwrap_or(0),
            };
            (
                rejected,
                p["errorMessage"].as_str().unwrap_or_default().to_owned(),
            )
        }
    };
    Delivered {
        rejected,
        message: short(&message),
        attempts,
    }
}

/// `text` on one line, inert, at most 300 characters.
fn short(text: &str) -> String {
    one_line(text).chars().take(300).collect()
}
