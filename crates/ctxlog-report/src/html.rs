//! The page itself: the HTML of folded sessions (`page`, `write_page`),
//! its sections (chart, policies, events, summaries, the step panel) and
//! its script's data, written in pieces.

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

/// Writes the page of `sessions` (see [`report`]), folded, to `out`, a
/// piece at a time.
pub fn write_page(sessions: &[Folded], out: &mut dyn std::io::Write) -> Result<(), ReportError> {
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
<body><header><h1>{title}</h1><p class="sub">session <code>{session}</code>{source} · made by ctxlog from the event log</p></header>
<nav id="nav"><a href="#chart-box">Chart</a><a href="#step">Window</a><a href="#events">Compactions and prunes</a><a href="#summaries">Summaries</a><a href="#policies">Policies</a></nav>
"##,
        title = escape(&heading),
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
    w.buf.push_str("<script>");
    w.buf.push_str(SCRIPT);
    w.buf.push_str("</script>\n</body></html>\n");
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
const SCRIPT: &str = r#"
(function(){
'use strict';
var data=JSON.parse(document.getElementById('data').textContent);
var curveSel=document.getElementById('curve'),pick=document.getElementById('pick');
var cur=0,step=0;
data.sessions.forEach(function(s,i){var o=document.createElement('option');o.value=String(i);o.textContent=s.label;curveSel.appendChild(o);});
function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;if(text!==undefined)e.textContent=text;return e;}
function fmt(n){return n===null||n===undefined?'–':Number(n).toLocaleString('en-US');}
function when(ms){try{return new Date(ms).toISOString().replace('T',' ').replace('Z',' UTC');}catch(e){return String(ms);}}
// The page keeps messages and parts as arrays (see data::compact_messages).
function decode(s,m){
  var kinds={t:'text',r:'reasoning',f:'file',x:'tool'};
  function part(p){
    var o={type:kinds[p[0]],text:s.texts[p[1]],cut:p[2],tokens:p[3]};
    if(p[0]==='x'){o.call_id=p[4];o.tool=p[5];o.input=s.texts[p[6]];o.error=p[7]===1;o.cleared=p[8]===1;}
    return o;
  }
  return {id:m[0],source_id:m[1],role:({u:'user',a:'assistant',d:'developer',s:'system'})[m[2]]||'user',summary:(m[3]&1)!==0,marker:(m[3]&2)!==0,synthetic:(m[3]&4)!==0,tokens:m[4],parts:m[5].map(part)};
}
function partView(p){
  var d=el('div','part '+p.type+(p.cleared?' cleared':''));
  if(p.type==='tool'){
    d.appendChild(el('div','role',p.tool+' '+p.call_id+' · ~'+fmt(p.tokens)+' tokens'+(p.cleared?' · output cleared by a prune':'')+(p.error?' · error':'')));
    d.appendChild(el('pre','in',p.input));
    d.appendChild(el('pre','out',p.text));
  }else{
    if(p.type!=='text')d.appendChild(el('div','role',p.type));
    d.appendChild(el('pre','',p.text));
  }
  if(p.cut>0)d.appendChild(el('p','cut','… '+fmt(p.cut)+' more characters (ctxlog window --at SEQ prints them whole)'));
  return d;
}
function messageView(m,pivot){
  var d=el('div','msg '+m.role+(pivot?' pivot':'')+(m.summary?' summary':''));
  var h=el('div','role',m.role+' · ~'+fmt(m.tokens)+' tokens');
  if(pivot)h.appendChild(el('span','badge','compaction marker (the window starts here)'));
  if(m.summary)h.appendChild(el('span','badge','summary'));
  if(m.synthetic)h.appendChild(el('span','badge','synthetic'));
  if(m.source_id)h.appendChild(el('span','badge',m.source_id));
  d.appendChild(h);
  m.parts.forEach(function(p){d.appendChild(partView(p));});
  return d;
}
// A step's window is the window before it changed: its first `keep`
// messages, then `add`. Rebuilt forward from the last one shown.
var built={};
function windowAt(c,i){
  var s=data.sessions[c],b=built[c];
  if(!b||b.i>i)b={i:-1,w:[]};
  while(b.i<i){b.i++;var st=s.steps[b.i];b.w=b.w.slice(0,st.keep).concat(st.add);}
  built[c]=b;return b.w;
}
function show(c,i){
  var s=data.sessions[c];if(!s||!s.steps.length)return;
  cur=c;step=Math.max(0,Math.min(i,s.steps.length-1));
  curveSel.value=String(cur);pick.max=String(s.steps.length-1);pick.value=String(step);
  var st=s.steps[step];
  var num=st.step||step+1,total=s.total_steps||s.steps.length;
  var run=st.first?' · shown for steps '+st.first+'–'+(s.steps[step+1]?s.steps[step+1].first-1:total)+' (their peak; their prunes merged)':'';
  document.getElementById('where').textContent='step '+num+' of '+total+run+' · seq '+st.seq;
  var info=document.getElementById('step-info');info.textContent='';
  info.appendChild(el('div','', when(st.time)+(st.no_usage?' · no usage recorded'+(st.error?' ('+st.error+')':'')+': the call reported no tokens':'')+' · total '+fmt(st.total)+' tokens (input '+fmt(st.tokens[0])+', output '+fmt(st.tokens[1])+(st.tokens[2]?', reasoning '+fmt(st.tokens[2]):'')+', cache read '+fmt(st.tokens[3])+', cache write '+fmt(st.tokens[4])+(st.tokens[5]?'':', total computed')+')'+(st.output_streamed?' · output as streamed: the recording has no final count':'')+' · usable '+fmt(st.usable)+(st.percent===null?'':' ('+st.percent+'% used)')+' · threshold '+fmt(st.threshold)+' · window estimate '+fmt(st.window_estimate)+(st.open?' · open: its end is not recorded yet, the usage is what the model reported so far':'')));
  var evs=document.getElementById('step-events');evs.textContent='';
  st.events.forEach(function(e){var d=el('div','ev');d.appendChild(el('b','',e.kind));d.appendChild(document.createTextNode(' seq '+e.seq+': '+e.what));evs.appendChild(d);});
  var rem=document.getElementById('step-removed');rem.textContent='';
  var r=st.removed;
  if(r&&(r.messages.length||r.cleared.length)){
    var box=el('div','removed');
    box.appendChild(el('div','role','Left the window before the next step'+(st.first?' shown':'')+': ~'+fmt(r.tokens)+' tokens'));
    r.messages.forEach(function(x){var m=decode(s,s.messages[x.message]);var first=(m.parts[0]&&m.parts[0].text)||'';box.appendChild(el('div','',m.role+' message, ~'+fmt(x.tokens)+' tokens: '+first.slice(0,160)));});
    r.cleared.forEach(function(x){box.appendChild(el('div','','tool output cleared: '+x.tool+' '+x.call_id+', ~'+fmt(x.tokens)+' tokens'));});
    rem.appendChild(box);
  }
  var w=document.getElementById('window');w.textContent='';
  var refs=windowAt(cur,step);
  document.getElementById('window-head').textContent='The model input right after step '+num+': '+refs.length+' messages'+(st.pivot?', starting at a compaction':'');
  refs.forEach(function(ref){var m=decode(s,s.messages[ref]);w.appendChild(messageView(m,m.id===st.pivot));});
  Array.prototype.forEach.call(document.querySelectorAll('.pt.sel'),function(p){p.classList.remove('sel');});
  var sel=document.querySelector('.pt[data-curve="'+cur+'"][data-step="'+step+'"]');if(sel)sel.classList.add('sel');
}
document.addEventListener('click',function(ev){
  var t=ev.target.closest?ev.target.closest('[data-step]'):null;
  if(!t)return;
  show(Number(t.getAttribute('data-curve')||0),Number(t.getAttribute('data-step')));
  if(t.tagName==='BUTTON')document.getElementById('step').scrollIntoView();
});
curveSel.addEventListener('change',function(){show(Number(curveSel.value),step);});
pick.addEventListener('input',function(){show(cur,Number(pick.value));});
document.getElementById('prev').addEventListener('click',function(){show(cur,step-1);});
document.getElementById('next').addEventListener('click',function(){show(cur,step+1);});
// Open at the first compaction (else prune) of any session.
var pickC=0,pickS=0,found=false;
['summary_completed','parts_pruned'].forEach(function(kind){
  data.sessions.forEach(function(s,c){s.steps.forEach(function(st,i){
    if(!found&&st.events.some(function(e){return e.kind===kind;})){pickC=c;pickS=i;found=true;}
  });});
});
show(pickC,pickS);
})();
"#;
