//! The import of an OpenCode export against plain JSON parsing of the same
//! file, and the whole `ctxlog import`'s peak memory against the file's
//! size ([`bench_import`]).

use crate::measure::{median, median_ratio, side_by_side, Scratch};
use crate::memory::{ctxlog_args, RunCtxlog};
use crate::report::Report;
use crate::sizes::{generated, Sizes};
use crate::{failed, BenchError};
use ctxlog_import::{export, Format, ImportOptions};
use serde_json::{json, Value};
use std::io::BufReader;
use std::time::Instant;

/// Stage 7: the import of an OpenCode export against plain serde_json
/// parsing, and the peak memory of `ctxlog import` of it in a child process.
pub fn bench_import(z: &Sizes, r: &mut Report, run: RunCtxlog<'_>) -> Result<(), BenchError> {
    let exp = Scratch::new("import");
    std::fs::create_dir_all(exp.path()).map_err(|e| failed("dir")(&e))?;
    let file = exp.path().join("session.json");
    {
        let events = generated(31, z.import)?;
        let f = std::fs::File::create(&file).map_err(|e| failed("export")(&e))?;
        export::opencode(&events, std::io::BufWriter::new(f)).map_err(|e| failed("export")(&e))?;
    }
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let mb = bytes as f64 / 1e6;
    let mut import_rate = || {
        let t = Instant::now();
        let f = std::fs::File::open(&file).map_err(|e| failed("open")(&e))?;
        let imported = ctxlog_import::import(
            BufReader::new(f),
            "bench",
            Format::OpenCode,
            &ImportOptions::default(),
        )
        .map_err(|e| failed("import")(&e))?;
        if imported.events.is_empty() {
            return Err(BenchError::Failed(
                "bench: the import read no events".into(),
            ));
        }
        Ok(mb / t.elapsed().as_secs_f64())
    };
    let mut parse_rate = || {
        let t = Instant::now();
        let f = std::fs::File::open(&file).map_err(|e| failed("open")(&e))?;
        let v: Value =
            serde_json::from_reader(BufReader::new(f)).map_err(|e| failed("parse")(&e))?;
        if !v.is_object() {
            return Err(BenchError::Failed(
                "bench: the export is not an object".into(),
            ));
        }
        Ok(mb / t.elapsed().as_secs_f64())
    };
    // In turns, so that the machine's drift falls on both alike.
    let [imports, parses] = side_by_side(z.runs, [&mut import_rate, &mut parse_rate])?;
    r.set_ratio("import_vs_parse", median_ratio(&imports, &parses)?);
    let (import_rate, parse_rate) = (median(imports.clone())?, median(parses.clone())?);
    r.set_figure("import_mb_per_s", json!(import_rate));
    r.set_figure("serde_json_parse_mb_per_s", json!(parse_rate));
    r.set_figure("import_file_bytes", json!(bytes));

    // The whole `ctxlog import` (read, check, store), in a child process.
    let store = Scratch::new("import-store");
    let child = run(&ctxlog_args(store.path(), &[&"import", &file]))?;
    r.set_figure("import_peak_rss_bytes", json!(child.peak_rss_bytes));
    r.set_figure("import_seconds", json!(child.seconds));
    if bytes > 0 {
        r.set_ratio(
            "import_rss_vs_file",
            child.peak_rss_bytes as f64 / bytes as f64,
        );
    }
    Ok(())
}
