//! `ctxlog otel export` ([`bench_otel`]): spans per second to an OTLP/HTTP
//! endpoint on loopback (a receiver in this process that reads each
//! request whole and answers 200, so the figure is ctxlog's) and to an
//! OTLP JSON file, against `ctxlog import` of the same session in the same
//! run; and the export's peak memory at two session lengths, against
//! `audit` of the same session (it reads the session an event at a time
//! too: what both hold beyond the store's own pages is what is open).

use crate::measure::Scratch;
use crate::memory::{ctxlog_args, ChildRun, RunCtxlog};
use crate::report::Report;
use crate::sizes::{generated, generator_config, Sizes};
use crate::stores::write_generated;
use crate::{failed, BenchError};
use ctxlog_import::export;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;

/// Stage 15: the export's speed against the import's, and its memory.
pub fn bench_otel(z: &Sizes, r: &mut Report, run: RunCtxlog<'_>) -> Result<(), BenchError> {
    let dir = Scratch::new("otel");
    std::fs::create_dir_all(dir.path()).map_err(|e| failed("dir")(&e))?;
    let file = dir.path().join("session.json");
    let events = generated(31, z.import)?;
    {
        let f = std::fs::File::create(&file).map_err(|e| failed("export")(&e))?;
        export::opencode(&events, std::io::BufWriter::new(f)).map_err(|e| failed("export")(&e))?;
    }
    let spans = span_count(&events);
    let store = dir.path().join("store");
    let import = run(&ctxlog_args(&store, &[&"import", &file]))?;
    let receiver = Receiver::start()?;
    let url = format!("http://{}/v1/traces", receiver.addr);
    let http = run(&ctxlog_args(
        &store,
        &[&"otel", &"export", &"--endpoint", &url],
    ))?;
    let out = dir.path().join("traces.jsonl");
    let json = run(&ctxlog_args(&store, &[&"otel", &"export", &"--file", &out]))?;
    let taken = receiver.stop();
    r.set_figure("otel_spans", json!(spans));
    r.set_figure("otel_http_requests", json!(taken.0));
    r.set_figure("otel_http_bytes", json!(taken.1));
    r.set_figure("otel_http_spans_per_s", json!(spans as f64 / http.seconds));
    r.set_figure("otel_file_spans_per_s", json!(spans as f64 / json.seconds));
    r.set_figure(
        "otel_import_events_per_s",
        json!(events.len() as f64 / import.seconds),
    );
    r.set_figure("otel_http_peak_rss_bytes", json!(http.peak_rss_bytes));
    r.set_ratio("otel_http_vs_import", http.seconds / import.seconds);
    r.set_ratio("otel_file_vs_import", json.seconds / import.seconds);
    drop(dir);

    let (small, _) = memory(z.rss, run)?;
    let (large, audit) = memory(z.rss_large, run)?;
    r.set_figure(
        format!("otel_rss_{}_events", z.rss),
        json!(small.peak_rss_bytes),
    );
    r.set_figure(
        format!("otel_rss_{}_events", z.rss_large),
        json!(large.peak_rss_bytes),
    );
    r.set_figure(
        format!("otel_audit_rss_{}_events", z.rss_large),
        json!(audit.peak_rss_bytes),
    );
    r.set_figure(
        format!("otel_seconds_{}_events", z.rss_large),
        json!(large.seconds),
    );
    r.set_figure(
        "otel_rss_growth",
        json!(large.peak_rss_bytes as f64 / small.peak_rss_bytes.max(1) as f64),
    );
    r.set_ratio(
        "otel_rss_vs_audit",
        large.peak_rss_bytes as f64 / audit.peak_rss_bytes.max(1) as f64,
    );
    Ok(())
}

/// The spans an export of `events` makes.
fn span_count(events: &[ctxlog_core::Envelope]) -> usize {
    let Some(first) = events.first() else {
        return 0;
    };
    let who = ctxlog_otel::turn::Speaker::default();
    let mut fold = ctxlog_otel::TraceFold::new(first.session, who, ctxlog_otel::Content::Off);
    let mut n = 0;
    for e in events {
        fold.push(e);
        n += fold.drain().len();
    }
    n + fold.finish().len()
}

/// `otel export --file /dev/null` of one generated session of `events`
/// events, and `audit --json` of it (a view that reads the session an
/// event at a time, the baseline), each in a child process.
fn memory(events: u64, run: RunCtxlog<'_>) -> Result<(ChildRun, ChildRun), BenchError> {
    let dir = Scratch::new("otel-rss");
    let (session, _) = write_generated(dir.path(), &generator_config(43, events))?;
    std::thread::sleep(std::time::Duration::from_millis(100));
    let null = Path::new("/dev/null");
    let otel = run(&ctxlog_args(
        dir.path(),
        &[&"otel", &"export", &"--file", &null],
    ))?;
    let id = session.to_string();
    let audit = run(&ctxlog_args(dir.path(), &[&"--json", &"audit", &id]))?;
    Ok((otel, audit))
}

/// An OTLP/HTTP endpoint that takes everything: each request read whole
/// (headers, `Content-Length` bytes), answered `200` with an empty body.
struct Receiver {
    addr: std::net::SocketAddr,
    done: std::sync::mpsc::Receiver<(u64, u64)>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Receiver {
    fn start() -> Result<Receiver, BenchError> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| failed("receiver")(&e))?;
        let addr = listener.local_addr().map_err(|e| failed("receiver")(&e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| failed("receiver")(&e))?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tx, done) = std::sync::mpsc::channel();
        let stopping = stop.clone();
        std::thread::spawn(move || {
            let mut taken = (0u64, 0u64);
            while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let _ = stream.set_nonblocking(false);
                        serve(stream, &mut taken);
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
                }
            }
            let _ = tx.send(taken);
        });
        Ok(Receiver { addr, done, stop })
    }

    /// Stops it: the requests and body bytes it took.
    fn stop(self) -> (u64, u64) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.done.recv().unwrap_or((0, 0))
    }
}

/// Answers the requests of one connection until it closes.
fn serve(stream: std::net::TcpStream, taken: &mut (u64, u64)) {
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
    let mut reader = BufReader::new(&stream);
    let mut writer = &stream;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        taken.0 += 1;
        taken.1 += length as u64;
        let answer =
            b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
        if writer.write_all(answer).is_err() {
            return;
        }
    }
}
