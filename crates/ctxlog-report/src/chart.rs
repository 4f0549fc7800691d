//! The context chart as an SVG drawn here: each session's total tokens per
//! step, the usable line and the policy's threshold, and markers for
//! prunes and compactions. Every point carries `data-curve`, `data-step`,
//! `data-seq` and `data-total`, so the page's script (and a test) can read
//! the chart back.

use crate::escape;
use ctxlog_core::{StepRow, Timeline};
use std::fmt::Write;

/// The chart's size in SVG units.
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 360.0;
/// Room for the axes' labels.
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 36.0;

/// The vertical distance between the marker knobs of two curves.
const KNOB_ROW: f64 = 14.0;

/// The colours of the curves, in order (then repeated).
pub const COLORS: &[&str] = &["#2563eb", "#d97706", "#059669", "#9333ea", "#dc2626"];

/// One curve of the chart: a session's rows and where each stands.
pub struct Series<'a> {
    /// The curve's label.
    pub label: &'a str,
    /// The rows drawn, one point each.
    pub timeline: &'a Timeline,
    /// Each row's step number (1-based), after the first step of its run
    /// (see [`crate::data::SessionData::numbers`]).
    pub numbers: &'a [(u64, u64)],
    /// How many steps the session has (more than its rows on a sampled
    /// page).
    pub total_steps: u64,
}

impl Series<'_> {
    /// The x index (0-based step) of row `i`.
    fn step(&self, i: usize) -> usize {
        self.numbers
            .get(i)
            .map_or(i, |&(_, n)| n.saturating_sub(1) as usize)
    }
}

/// The chart of `curves`; the first one's usable line and threshold are
/// drawn.
pub fn chart(curves: &[Series<'_>]) -> String {
    let steps = curves
        .iter()
        .map(|s| (s.total_steps as usize).max(s.timeline.steps.len()))
        .max()
        .unwrap_or(0);
    let points = curves
        .iter()
        .map(|s| s.timeline.steps.len())
        .max()
        .unwrap_or(0);
    let y_max = y_max(curves);
    let x = |i: usize| {
        let span = (steps.max(2) - 1) as f64;
        LEFT + (WIDTH - LEFT - RIGHT) * i as f64 / span
    };
    let y = |v: u64| TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - (v as f64).min(y_max) / y_max);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg id="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="tokens per step" xmlns="http://www.w3.org/2000/svg">"#
    );
    axes(&mut svg, steps, y_max, &x, &y);
    budget_lines(&mut svg, curves, &x, &y);
    // Dense charts get smaller points; the first curve is drawn widest, so
    // where a simulation follows the recording both stay visible.
    let radius = (600.0 / points.max(1) as f64).clamp(1.5, 3.5);
    for (c, series) in curves.iter().enumerate() {
        curve(&mut svg, c, series, radius, &x, &y);
    }
    svg.push_str("</svg>");
    svg
}

/// The top of the scale: the context limit the sessions ended with, or,
/// when a step's total is higher (or no limit is known), the peak with a
/// little room, each rounded up. An earlier, larger budget (the model's
/// limits were not known yet) is drawn clipped at the top.
fn y_max(curves: &[Series<'_>]) -> f64 {
    let limit = curves
        .iter()
        .map(|s| s.timeline.limits.context)
        .max()
        .unwrap_or(0);
    let peak = curves.iter().map(|s| s.timeline.peak()).max().unwrap_or(0);
    if limit > 0 && peak <= limit {
        nice(limit as f64)
    } else {
        nice(peak.max(1) as f64 * 1.05)
    }
}

/// The axes and the grid: five value lines labelled in tokens, at most ten
/// step numbers, and the word "step".
fn axes(
    svg: &mut String,
    steps: usize,
    y_max: f64,
    x: &impl Fn(usize) -> f64,
    y: &impl Fn(u64) -> f64,
) {
    for k in 0..=4 {
        let v = y_max * f64::from(k) / 4.0;
        let py = y(v as u64);
        let _ = write!(
            svg,
            r##"<line class="grid" x1="{LEFT}" x2="{}" y1="{py:.1}" y2="{py:.1}"/><text class="axis" x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            py + 4.0,
            short(v as u64)
        );
    }
    let ticks = steps.clamp(1, 10);
    for k in 0..ticks {
        let i = if ticks == 1 {
            0
        } else {
            k * (steps.max(1) - 1) / (ticks - 1)
        };
        let _ = write!(
            svg,
            r#"<text class="axis" x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            x(i),
            HEIGHT - BOTTOM + 16.0,
            i + 1
        );
    }
    let _ = write!(
        svg,
        r#"<text class="axis" x="{}" y="{}" text-anchor="middle">step</text>"#,
        (LEFT + WIDTH - RIGHT) / 2.0,
        HEIGHT - 4.0
    );
}

/// The first session's usable line, and each session's threshold in its
/// colour where it is not that line (they change with the model's limits).
fn budget_lines(
    svg: &mut String,
    curves: &[Series<'_>],
    x: &impl Fn(usize) -> f64,
    y: &impl Fn(u64) -> f64,
) {
    // A step that reported no usage (an aborted call, perhaps on a model
    // selected for a moment) says nothing of the budget either.
    let usable = curves
        .first()
        .map(|s| line(s, |r| r.usable.filter(|_| !r.no_usage), x, y))
        .unwrap_or_default();
    if !usable.is_empty() {
        let _ = write!(
            svg,
            r#"<polyline class="usable" points="{usable}"><title>usable context</title></polyline>"#
        );
    }
    for (c, series) in curves.iter().enumerate() {
        let threshold = line(series, |r| r.threshold.filter(|_| !r.no_usage), x, y);
        if !threshold.is_empty() && threshold != usable {
            let _ = write!(
                svg,
                r#"<polyline class="threshold" stroke="{}" points="{threshold}"><title>{}: the policy's threshold</title></polyline>"#,
                COLORS[c % COLORS.len()],
                escape(series.label)
            );
        }
    }
}

/// Curve `c`: its line, then each row's markers and point (of
/// `radius`).
fn curve(
    svg: &mut String,
    c: usize,
    series: &Series<'_>,
    radius: f64,
    x: &impl Fn(usize) -> f64,
    y: &impl Fn(u64) -> f64,
) {
    let (label, t) = (series.label, series.timeline);
    let color = COLORS[c % COLORS.len()];
    let width = if c == 0 { 4.0 } else { 2.0 };
    // A step that reported no usage breaks the line: a gap, never a
    // plunge to zero.
    let mut path = String::new();
    let mut pen_down = false;
    for (i, s) in t.steps.iter().enumerate() {
        if s.no_usage {
            pen_down = false;
            continue;
        }
        let _ = write!(
            path,
            "{}{:.1},{:.1} ",
            if pen_down { "L" } else { "M" },
            x(series.step(i)),
            y(s.tokens.total)
        );
        pen_down = true;
    }
    let _ = write!(
        svg,
        r#"<path class="curve" stroke="{color}" stroke-width="{width}" fill="none" d="{}"/>"#,
        path.trim_end()
    );
    for (i, s) in t.steps.iter().enumerate() {
        let px = x(series.step(i));
        let n = series.step(i) + 1;
        markers(svg, c, i, px, label, s);
        if s.no_usage {
            // Still a step one can pick: a hollow point on the axis.
            let _ = write!(
                svg,
                r#"<circle class="pt gap" cx="{px:.1}" cy="{:.1}" r="{radius:.1}" fill="none" stroke="{color}" data-curve="{c}" data-step="{i}" data-seq="{}" tabindex="0"><title>{}: step {} (seq {}): no usage recorded{}</title></circle>"#,
                HEIGHT - BOTTOM,
                s.seq,
                escape(label),
                n,
                s.seq,
                s.error
                    .as_deref()
                    .map(|e| format!(" ({})", escape(e)))
                    .unwrap_or_default()
            );
            continue;
        }
        let py = y(s.tokens.total);
        let _ = write!(
            svg,
            r#"<circle class="pt" cx="{px:.1}" cy="{py:.1}" r="{radius:.1}" fill="{color}" data-curve="{c}" data-step="{i}" data-seq="{}" data-total="{}" tabindex="0"><title>{}: step {} (seq {}): {} tokens{}</title></circle>"#,
            s.seq,
            s.tokens.total,
            escape(label),
            n,
            s.seq,
            s.tokens.total,
            s.percent
                .map(|p| format!(", {p}% of usable"))
                .unwrap_or_default()
        );
    }
}

/// How far apart the marker lines of curves at the same step are drawn.
const MARKER_SHIFT: f64 = 3.0;

/// The markers of step `i` (at `px`) on curve `c`, labelled `label`: one
/// per compaction, prune or failure that followed it. Each curve's are
/// shifted by [`MARKER_SHIFT`], so curves marking the same step are drawn
/// side by side.
fn markers(svg: &mut String, c: usize, i: usize, px: f64, label: &str, s: &StepRow) {
    let color = COLORS[c % COLORS.len()];
    let px = px + MARKER_SHIFT * c as f64;
    for e in &s.events {
        let kind = match e.kind.as_str() {
            "summary_completed" => "compaction",
            "parts_pruned" => "prune",
            "compaction_failed" | "auto_compaction_paused" => "failure",
            _ => continue,
        };
        let _ = write!(
            svg,
            r#"<g class="marker {kind}" data-curve="{c}" data-step="{i}" data-seq="{}" tabindex="0"><line x1="{px:.1}" x2="{px:.1}" y1="{TOP}" y2="{}" stroke="{color}" pointer-events="none"/><circle cx="{px:.1}" cy="{}" r="6" fill="{color}"/><title>{}: {} (seq {})</title></g>"#,
            e.seq,
            HEIGHT - BOTTOM,
            // Each curve's knob a row of its own, and the lines let
            // clicks through: two curves that compact at the same
            // step keep both knobs clickable.
            if kind == "prune" {
                HEIGHT - BOTTOM - 6.0 - KNOB_ROW * c as f64
            } else {
                TOP + 6.0 + KNOB_ROW * c as f64
            },
            escape(label),
            escape(&e.what),
            e.seq
        );
    }
}

/// The points of one series; steps where it has no value are left out.
fn line(
    series: &Series<'_>,
    value: impl Fn(&StepRow) -> Option<u64>,
    x: &impl Fn(usize) -> f64,
    y: &impl Fn(u64) -> f64,
) -> String {
    let mut out = String::new();
    for (i, s) in series.timeline.steps.iter().enumerate() {
        if let Some(v) = value(s) {
            let _ = write!(out, "{:.1},{:.1} ", x(series.step(i)), y(v));
        }
    }
    out.trim_end().to_owned()
}

/// A round axis maximum at or above `v`.
fn nice(v: f64) -> f64 {
    let p = 10f64.powf(v.max(1.0).log10().floor());
    for m in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

/// `120k`, `1.5M`.
fn short(v: u64) -> String {
    match v {
        0..=999 => v.to_string(),
        1_000..=999_999 => format!("{}k", v / 1_000),
        _ => format!("{:.1}M", v as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_maxima_are_round() {
        assert_eq!(nice(0.0), 1.0);
        assert_eq!(nice(168_000.0), 200_000.0);
        assert_eq!(nice(210_000.0), 250_000.0);
        // A 272k context: its axis ends at 300k, not 500k.
        assert_eq!(nice(272_000.0 * 1.05), 300_000.0);
        assert_eq!(nice(1_000.0), 1_000.0);
        assert_eq!(short(250_000), "250k");
        assert_eq!(short(1_500_000), "1.5M");
    }
}
