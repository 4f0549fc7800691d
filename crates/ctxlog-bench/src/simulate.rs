//! `simulate` of a recording at two sizes per preset, and how its time
//! grows with the size ([`bench_simulate`]).

use crate::measure::measure;
use crate::report::Report;
use crate::sizes::{generated, Sizes};
use crate::{failed, BenchError};
use ctxlog_core::{Envelope, Policy};
use ctxlog_engine::simulate::{simulate_recording, SimulateConfig};
use serde_json::json;
use std::time::Instant;

/// `simulate` of a recording at two sizes (n and 2n events) under each
/// preset: the seconds, and the growth (time ratio over size ratio: 1 is
/// linear, 2 would be quadratic).
pub fn bench_simulate(z: &Sizes, r: &mut Report) -> Result<(), BenchError> {
    let small = generated(31, z.simulate)?;
    let large = generated(31, 2 * z.simulate)?;
    let time = |events: &[Envelope], policy: &Policy| {
        measure(z.runs, || {
            let t = Instant::now();
            simulate_recording(events, SimulateConfig::new(policy.clone()), |_| {})
                .map_err(|e| failed("simulate")(&e))?;
            Ok(t.elapsed().as_secs_f64())
        })
    };
    for name in Policy::preset_names() {
        let policy = Policy::preset(name).ok_or_else(|| failed("preset")(name))?;
        let (a, b) = (time(&small, &policy)?, time(&large, &policy)?);
        let size_ratio = large.len() as f64 / small.len().max(1) as f64;
        r.set_figure(format!("simulate_seconds_{name}_{}", small.len()), json!(a));
        r.set_figure(format!("simulate_seconds_{name}_{}", large.len()), json!(b));
        r.set_figure(format!("simulate_growth_{name}"), json!(b / a / size_ratio));
    }
    Ok(())
}
