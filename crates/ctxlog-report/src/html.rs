//! The page itself: the HTML of folded sessions (`page`, `write_page`,
//! `write_page_with` for a served page), its sections (chart, policies,
//! events, summaries, the step panel) and its script's data, written in
//! pieces.

use crate::{chart, escape, Folded, ReportError};
use std::fmt::Write;

/// Appends JSON `text` to `out`, safe inside a `<script>` element (no
/// `</script>`, no `<!--`), escaped in one pass.
fn push_script_json(out: &mut String, text: &str) {
    out.reserve(text.len() + text.len() / 64);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
}

/// The page of `sessions` (see [`report`]), folded, as a string.
pub fn page(sessions: &[Folded]) -> Result<String, ReportError> {
    let mut out = Vec::new();
    write_page(sessions, &mut out)?;
    String::from_utf8(out).map_err(|e| ReportError::Write(std::io::Error::other(e)))
}

/// How a page carries its script.
#[derive(Debug, Clone, Copy, Default)]
pub enum Chrome<'a> {
    /// One self-contained file: the script inline, nothing linked.
    #[default]
    File,
    /// A page a server sends under a Content-Security-Policy that forbids
    /// inline script: `banner` (trusted markup) opens the body, and the
    /// scripts are linked from `scripts` (the first serves
    /// [`PAGE_SCRIPT`]).
    Served {
        /// Markup put first in the body.
        banner: &'a str,
        /// The scripts' URLs, in order.
        scripts: &'a [&'a str],
    },
}

/// Writes the page of `sessions` (see [`report`]), folded, to `out`, a
/// piece at a time.
pub fn write_page(sessions: &[Folded], out: &mut dyn std::io::Write) -> Result<(), ReportError> {
    write_page_with(sessions, Chrome::File, out)
}

/// [`write_page`] with the script carried as `chrome` says.
pub fn write_page_with(
    sessions: &[Folded],
    chrome: Chrome<'_>,
    out: &mut dyn std::io::Write,
) -> Result<(), ReportError> {
    let Some(first) = sessions.first() else {
        return Err(ReportError::Empty);
    };
    let main = &first.data;
    let heading = main
        .title
        .clone()
        .or_else(|| first.title.clone())
        .or_else(|| main.json["source"].as_str().map(str::to_owned))
        .or_else(|| main.json["session"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "session".into());
    let mut html = String::new();
    let _ = write!(
        html,
        r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>ctxlog report: {title}</title><link rel="icon" href="data:,"><style>{STYLE}</style></head>
<body>{banner}<header><h1>{title}</h1><p class="sub">session <code>{session}</code>{source} · made by ctxlog from the event log</p></header>
<nav id="nav"><a href="#chart-box">Chart</a><a href="#step">Window</a><a href="#events">Compactions and prunes</a><a href="#summaries">Summaries</a><a href="#policies">Policies</a></nav>
"##,
        title = escape(&heading),
        banner = match chrome {
            Chrome::File => "",
            Chrome::Served { banner, .. } => banner,
        },
        session = escape(main.json["session"].as_str().unwrap_or("-")),
        source = main.json["source"]
            .as_str()
            .map(|s| format!(" · recorded as <code>{}</code>", escape(s)))
            .unwrap_or_default(),
    );
    let mut w = PageWriter { buf: html, out };
    w.raw(&policies(sessions))?;
    w.raw(&chart_section(sessions))?;
    w.raw(STEP_PANEL)?;
    w.raw(&events_table(sessions))?;
    w.raw(&summaries(sessions))?;
    data_script(&mut w, sessions)?;
    match chrome {
        Chrome::File => {
            w.buf.push_str("<script>");
            w.buf.push_str(PAGE_SCRIPT);
            w.buf.push_str("</script>\n");
        }
        Chrome::Served { scripts, .. } => {
            for src in scripts {
                let _ = writeln!(w.buf, "<script src=\"{}\"></script>", escape(src));
            }
        }
    }
    w.buf.push_str("</body></html>\n");
    w.flush()
}

/// The chart, its legend, and what a page of runs shows.
fn chart_section(sessions: &[Folded]) -> String {
    let mut html = String::new();
    html.push_str("<section id=\"chart-box\"><h2>Context per step</h2><div class=\"legend\">");
    for (c, label) in sessions.iter().map(|s| &s.label).enumerate() {
        let _ = write!(
            html,
            r#"<span><i style="background:{}"></i>{}</span>"#,
            chart::COLORS[c % chart::COLORS.len()],
            escape(label)
        );
    }
    html.push_str(r#"<span><i class="dash usable"></i>usable context</span><span><i class="dash threshold"></i>threshold (in the session's colour)</span><span>● step · <b>|</b> compaction · <b>▾</b> prune (click one)</span></div>"#);
    let series: Vec<chart::Series<'_>> = sessions
        .iter()
        .map(|s| chart::Series {
            label: &s.label,
            timeline: &s.data.timeline,
            numbers: &s.data.numbers,
            total_steps: s.data.total_steps,
        })
        .collect();
    html.push_str(&chart::chart(&series));
    for s in sessions {
        let rows = s.data.timeline.steps.len() as u64;
        if rows < s.data.total_steps {
            let _ = write!(
                html,
                "<p class=\"sub\">{}: {} steps, shown as {rows} runs of consecutive steps, each by its peak step and that step's window, with all of the run's compactions (its prunes merged into one line); <code>ctxlog window {} --at SEQ</code> shows any step's window.</p>",
                escape(&s.label),
                s.data.total_steps,
                escape(s.data.json["session"].as_str().unwrap_or("SESSION")),
            );
        }
    }
    html.push_str("</section>\n");
    html
}

/// The page's data: each session's JSON (its steps, messages and texts
/// last), written a piece at a time.
fn data_script(w: &mut PageWriter<'_>, sessions: &[Folded]) -> Result<(), ReportError> {
    w.raw("<script type=\"application/json\" id=\"data\">")?;
    w.json("{\"sessions\":[")?;
    for (i, s) in sessions.iter().enumerate() {
        if i > 0 {
            w.json(",")?;
        }
        // The session's JSON object with its steps, messages and texts
        // last.
        let object = s.data.json.to_string();
        let open = object.strip_suffix('}').unwrap_or(&object);
        w.json(open)?;
        w.json(if open.len() > 1 {
            ",\"steps\":"
        } else {
            "\"steps\":"
        })?;
        w.json(&s.data.steps_json)?;
        w.json(",\"messages\":")?;
        let mut failed = None;
        s.data.messages.each_message_json(|m| {
            if failed.is_none() {
                failed = w.json(m).err();
            }
        });
        w.json(",\"texts\":")?;
        s.data.messages.each_text_json(|t| {
            if failed.is_none() {
                failed = w.json(t).err();
            }
        });
        if let Some(error) = failed {
            return Err(error);
        }
        w.json("}")?;
    }
    w.json("]}")?;
    w.raw("</script>\n")
}

/// Writes a page to its output in pieces of about [`PageWriter::PIECE`]
/// bytes: a page of many steps is never held whole.
struct PageWriter<'a> {
    buf: String,
    out: &'a mut dyn std::io::Write,
}

impl PageWriter<'_> {
    const PIECE: usize = 1 << 16;

    /// Appends markup `text`.
    fn raw(&mut self, text: &str) -> Result<(), ReportError> {
        self.buf.push_str(text);
        if self.buf.len() >= Self::PIECE {
            self.write_out()?;
        }
        Ok(())
    }

    /// Appends JSON `text`, safe inside a `<script>` element, a piece at
    /// a time.
    fn json(&mut self, mut text: &str) -> Result<(), ReportError> {
        while !text.is_empty() {
            let mut cut = text.len().min(Self::PIECE);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            push_script_json(&mut self.buf, &text[..cut]);
            text = &text[cut..];
            if self.buf.len() >= Self::PIECE {
                self.write_out()?;
            }
        }
        Ok(())
    }

    fn write_out(&mut self) -> Result<(), ReportError> {
        self.out
            .write_all(self.buf.as_bytes())
            .map_err(ReportError::Write)?;
        self.buf.clear();
        Ok(())
    }

    /// Writes what is left and flushes the output.
    fn flush(mut self) -> Result<(), ReportError> {
        self.write_out()?;
        self.out.flush().map_err(ReportError::Write)
    }
}

/// The policies and limits of each session, with its figures.
fn policies(sessions: &[Folded]) -> String {
    let mut out = String::from(
        "<section id=\"policies\"><h2>Policies and limits</h2><table><thead><tr><th>session</th><th>policy</th><th>context</th><th>usable</th><th>threshold</th><th>auto</th><th>prune</th><th>steps</th><th>peak</th><th>compactions</th><th>prunes</th></tr></thead><tbody>",
    );
    for Folded { label, data: s, .. } in sessions {
        let t = &s.timeline;
        let last = t.steps.last();
        let peak = t.peak();
        let num = |v: Option<u64>| v.map_or("–".into(), |v| v.to_string());
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{peak}</td><td>{}</td><td>{}</td></tr>",
            escape(label),
            escape(&t.policy),
            if t.limits.context == 0 { "unlimited".into() } else { t.limits.context.to_string() },
            num(last.and_then(|s| s.usable)),
            num(last.and_then(|s| s.threshold)),
            s.json["policy"]["auto"],
            s.json["policy"]["prune"],
            s.total_steps,
            s.count("summary_completed"),
            s.count("parts_pruned"),
        );
    }
    out.push_str("</tbody></table></section>\n");
    out
}

/// Every lifecycle event of every session, each with a button that shows
/// its step, and what it removed from the window.
fn events_table(sessions: &[Folded]) -> String {
    let mut out = String::from(
        "<section id=\"events\"><h2>Prunes and compactions</h2><div class=\"scroll\"><table><thead><tr><th>session</th><th>step</th><th>seq</th><th>event</th><th>what</th><th>removed from the window</th><th></th></tr></thead><tbody>",
    );
    let mut any = false;
    for (c, Folded { label, data: s, .. }) in sessions.iter().enumerate() {
        for (i, step) in s.timeline.steps.iter().enumerate() {
            let removed = s.removals.get(i).copied().unwrap_or_default();
            let number = s.numbers.get(i).map_or(i as u64 + 1, |&(_, n)| n);
            for e in &step.events {
                if e.kind == "compaction_attempted" || e.kind == "compaction_started" {
                    continue;
                }
                any = true;
                // A prune removes tool outputs, a compaction messages: each
                // row says only its own part of what left the window.
                let what_removed = match e.kind.as_str() {
                    "parts_pruned" if removed.cleared > 0 => format!(
                        "{} tool outputs cleared, ~{} tokens",
                        removed.cleared, removed.cleared_tokens
                    ),
                    "summary_completed" if removed.messages > 0 => format!(
                        "{} messages, ~{} tokens",
                        removed.messages, removed.message_tokens
                    ),
                    _ => "–".to_owned(),
                };
                let _ = write!(
                    out,
                    r#"<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><button class="show" data-curve="{c}" data-step="{i}">show</button></td></tr>"#,
                    escape(label),
                    number,
                    e.seq,
                    escape(&e.kind),
                    escape(&e.what),
                    what_removed,
                );
            }
        }
    }
    if !any {
        out.push_str("<tr><td colspan=\"7\">nothing was pruned or compacted</td></tr>");
    }
    out.push_str("</tbody></table></div></section>\n");
    out
}

/// Each session's summaries, whole (up to the page's cut).
fn summaries(sessions: &[Folded]) -> String {
    let mut out = String::from("<section id=\"summaries\"><h2>Summaries</h2>");
    let mut any = false;
    for Folded { label, data: s, .. } in sessions {
        for j in &s.summaries {
            any = true;
            let cut = j["cut"].as_u64().unwrap_or(0);
            let _ = write!(
                out,
                "<details class=\"summary\"><summary>{} · requested at seq {} · {} · {} · {}</summary>{}<pre>{}</pre>{}</details>",
                escape(label),
                j["requested_seq"],
                if j["auto"] == true { "automatic" } else { "manual" },
                escape(j["status"].as_str().unwrap_or("")),
                match j["output_tokens"].as_u64() {
                    Some(n) => format!("{n} output tokens (~{} estimated from its text)", j["tokens"]),
                    None => format!("its tokens not recorded (~{} estimated from its text)", j["tokens"]),
                },
                j["error"].as_str().map(|e| format!("<p class=\"error\">{}</p>", escape(e))).unwrap_or_default(),
                escape(j["text"].as_str().unwrap_or("")),
                if cut > 0 { format!("<p class=\"cut\">… {cut} more characters</p>") } else { String::new() },
            );
        }
    }
    if !any {
        out.push_str("<p>no compaction in these sessions</p>");
    }
    out.push_str("</section>\n");
    out
}

/// The step panel; the script fills it.
const STEP_PANEL: &str = r#"<section id="step"><h2>The window after the selected step</h2>
<div class="controls"><label>session <select id="curve"></select></label>
<button id="prev" type="button">◀</button><input id="pick" type="range" min="0" max="0" value="0"><button id="next" type="button">▶</button>
<span id="where"></span></div>
<div id="step-info"></div><div id="step-events"></div><div id="step-removed"></div><details id="window-box" open><summary id="window-head">The model input</summary><div id="window"></div></details></section>
"#;

const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:0 16px 48px;color:#111827;background:#fff}
#nav{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid #e5e7eb;padding:6px 0;display:flex;gap:16px;flex-wrap:wrap}#nav a{color:#2563eb;text-decoration:none}
#window{max-height:70vh;overflow:auto}#events .scroll{max-height:60vh;overflow:auto}#window-box>summary{cursor:pointer;font-weight:600}
.pt.gap{stroke-dasharray:2 2}
h1{font-size:22px;margin:20px 0 2px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb;padding-bottom:4px}
.sub{color:#6b7280;margin:0}code{font:12px ui-monospace,monospace;background:#f3f4f6;padding:1px 4px;border-radius:3px}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #f3f4f6;vertical-align:top}th{color:#374151;background:#f9fafb}
#chart{width:100%;height:auto;background:#fff;border:1px solid #e5e7eb;border-radius:6px}
.grid{stroke:#f3f4f6}.axis{fill:#6b7280;font-size:11px}
.curve{fill:none;stroke-linejoin:round;opacity:.9}.usable{fill:none;stroke:#6b7280;stroke-dasharray:6 4;stroke-width:1.5}.threshold{fill:none;stroke-dasharray:3 3;stroke-width:1.5}
.pt{cursor:pointer}.pt:hover,.pt.sel{r:6;stroke:#111827;stroke-width:2}
.marker{cursor:pointer}.marker line{stroke-width:1.5;stroke-dasharray:2 2;opacity:.55}.marker.prune circle{opacity:.8}.marker.failure circle{fill:#dc2626}.marker:hover line{opacity:1;stroke-width:3}
.legend{display:flex;gap:16px;flex-wrap:wrap;color:#374151;margin-bottom:6px}.legend i{display:inline-block;width:14px;height:4px;margin-right:6px;vertical-align:middle}
.legend i.dash.usable{border-top:2px dashed #6b7280;height:0}.legend i.dash.threshold{border-top:2px dashed #dc2626;height:0}
.controls{display:flex;gap:8px;align-items:center;flex-wrap:wrap}#pick{flex:1;min-width:200px}
#step-info{margin:8px 0;font-variant-numeric:tabular-nums}.ev{margin:2px 0}.ev b{color:#92400e}
.msg{border:1px solid #e5e7eb;border-radius:6px;margin:6px 0;padding:6px 10px}.msg.user{background:#f8fafc}.msg.pivot{border-color:#2563eb;background:#eff6ff}.msg.summary{border-color:#059669;background:#ecfdf5}
.role{font-weight:600;font-size:12px;color:#374151}.badge{font-size:11px;padding:0 6px;border-radius:8px;background:#e5e7eb;margin-left:6px}
pre{white-space:pre-wrap;word-break:break-word;font:12px/1.4 ui-monospace,monospace;margin:4px 0;max-height:320px;overflow:auto}
.tool pre.out{background:#f9fafb;border-left:3px solid #d1d5db;padding-left:6px}.cleared pre.out{background:#fef3c7;border-left-color:#d97706;color:#92400e}
.removed{background:#fef2f2;border:1px solid #fecaca;border-radius:6px;padding:6px 10px;margin:6px 0}.cut,.error{color:#b91c1c;font-size:12px}
details.summary{margin:6px 0;border:1px solid #e5e7eb;border-radius:6px;padding:6px 10px}details.summary summary{cursor:pointer}
"#;

/// Fills the step panel from the page's data; no network, no library.
/// Run again (`window.ctxlogReport(at)`) after the page's body is
/// replaced by a newer one, it binds to the new body and shows `at`.
pub const PAGE_SCRIPT: &str = include_str!("page.js");
