//! The page's data against the core's own views, on generated sessions
//! that prune, compact, fail and stall: each step's window (stored once per
//! distinct rendering) is exactly `window()` of the state at that step, the
//! chart's points are the timeline, and what "left the window" is what the
//! next step's window no longer has.

use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::window::{window, ToolResult, PRUNED_PLACEHOLDER};
use ctxlog_core::{timeline, Envelope, ModelLimits, Policy, SessionState, WindowPart};
use ctxlog_report::fold::{session_data, PageFold, Survey};
use ctxlog_report::{report, Curve, Folded};
use serde_json::Value;
use std::collections::BTreeSet;

fn sessions() -> Vec<Vec<Envelope>> {
    (1..=12)
        .map(|seed| {
            let policy = if seed % 2 == 0 {
                // Prunes early and often.
                Policy {
                    prune_protect: 4_000,
                    prune_minimum: 1_000,
                    ..Policy::opencode_seed()
                }
            } else {
                Policy::opencode_1_17()
            };
            generate(&GenerateConfig {
                seed,
                turns: 14,
                policy,
                limits: ModelLimits {
                    context: 60_000,
                    input: None,
                    output: Some(8_000),
                },
                ..GenerateConfig::default()
            })
            .expect("a generated session")
        })
        .collect()
}

/// A window message as the page keeps it: id and each part's shown text.
fn page_message(m: &Value) -> (String, Vec<String>) {
    (
        m["id"].as_str().unwrap().to_owned(),
        m["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["text"].as_str().unwrap_or_default().to_owned())
            .collect(),
    )
}

/// The state right after event `seq`.
fn state_after(events: &[Envelope], seq: u64) -> SessionState {
    let upto: Vec<Envelope> = events.iter().filter(|e| e.seq <= seq).cloned().collect();
    SessionState::replay(&upto).unwrap()
}

/// The core's window of `state`: each message's id and each part's text,
/// cut as the page cuts it at [`ctxlog_report::data::MAX_PART_CHARS`].
fn core_window(state: &SessionState) -> Vec<(String, Vec<String>)> {
    window(state)
        .messages
        .iter()
        .map(|m| {
            let texts = m
                .parts
                .iter()
                .map(|p| match p {
                    WindowPart::Text(t) | WindowPart::Reasoning(t) => t.clone(),
                    WindowPart::File(a) => a.filename.clone().unwrap_or(a.mime.clone()),
                    WindowPart::Tool { result, .. } => match result {
                        ToolResult::Output { text, .. } => text.clone(),
                        ToolResult::Error(e) => e.clone(),
                    },
                })
                .map(|t| {
                    t.chars()
                        .take(ctxlog_report::data::MAX_PART_CHARS)
                        .collect()
                })
                .collect();
            (m.id.to_string(), texts)
        })
        .collect()
}

#[test]
fn each_steps_window_on_the_page_is_the_cores_window_at_that_step() {
    let mut pruned = 0;
    let mut compacted = 0;
    for events in sessions() {
        let data =
            session_data("test", &events, ctxlog_report::data::MAX_PART_CHARS).expect("replays");
        let json = data.page_json();
        let steps = json["steps"].as_array().unwrap();
        let messages: Vec<Value> = (0..json["messages"].as_array().unwrap().len())
            .map(|r| ctxlog_report::messages::decoded(&json, r))
            .collect();
        // Each step keeps only how its window changed; rebuilt, it is the
        // whole window.
        let windows = ctxlog_report::data::windows(&json);
        assert_eq!(windows.len(), steps.len());
        let t = timeline(&events).unwrap();
        assert_eq!(steps.len(), t.steps.len());
        for ((row, step), refs) in t.steps.iter().zip(steps).zip(&windows) {
            assert_eq!(step["size"], refs.len());
            assert_eq!(step["seq"], row.seq);
            assert_eq!(step["total"], row.tokens.total);
            let state = state_after(&events, row.seq);
            let want = core_window(&state);
            let got: Vec<(String, Vec<String>)> =
                refs.iter().map(|&r| page_message(&messages[r])).collect();
            assert_eq!(got, want, "the window after seq {}", row.seq);
            // The pivot is the window's first message when there is one,
            // and a tool output is flagged cleared exactly when it is the
            // placeholder.
            let w = window(&state);
            assert_eq!(
                step["pivot"],
                serde_json::json!(w.pivot.map(|p| p.to_string()))
            );
            if let Some(p) = w.pivot {
                assert_eq!(got[0].0, p.to_string());
            }
            for &r in refs {
                for part in messages[r]["parts"].as_array().unwrap() {
                    if part["type"] == "tool" {
                        assert_eq!(
                            part["cleared"] == true,
                            part["text"] == PRUNED_PLACEHOLDER,
                            "{part}"
                        );
                    }
                }
            }
            pruned += got
                .iter()
                .flat_map(|(_, t)| t)
                .filter(|t| t.as_str() == PRUNED_PLACEHOLDER)
                .count();
        }
        // What left the window is what the next step's window lacks.
        for (i, step) in steps.iter().enumerate().take(steps.len().saturating_sub(1)) {
            let ids = |refs: &[usize]| -> BTreeSet<String> {
                refs.iter().map(|&r| page_message(&messages[r]).0).collect()
            };
            let (now, next) = (ids(&windows[i]), ids(&windows[i + 1]));
            // A step that removed nothing has no `removed`.
            let gone: BTreeSet<String> = step["removed"]["messages"]
                .as_array()
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .map(|m| page_message(&messages[m["message"].as_u64().unwrap() as usize]).0)
                .collect();
            assert_eq!(gone, now.difference(&next).cloned().collect());
            if !gone.is_empty() {
                compacted += 1;
            }
        }
    }
    assert!(pruned > 0, "the sessions prune");
    assert!(compacted > 0, "the sessions compact");
}

#[test]
fn the_page_is_self_contained_deterministic_and_its_points_are_the_timeline() {
    for events in sessions().iter().take(4) {
        let curves = [Curve {
            label: "a <b> & \"c\"".into(),
            title: None,
            events,
        }];
        let page = report(&curves).unwrap();
        assert_eq!(page, report(&curves).unwrap(), "the same page twice");
        assert!(!page.contains("<script src") && !page.contains("<link rel=\"stylesheet\""));
        assert!(
            page.contains("a &lt;b&gt; &amp; &quot;c&quot;"),
            "labels are escaped"
        );
        let t = timeline(events).unwrap();
        let points: Vec<(u64, u64)> = page
            .match_indices("<circle class=\"pt\"")
            .map(|(i, _)| {
                let tag = &page[i..i + page[i..].find('>').unwrap()];
                let attr = |name: &str| -> u64 {
                    let at = tag.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                    tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
                };
                (attr("data-seq"), attr("data-total"))
            })
            .collect();
        let want: Vec<(u64, u64)> = t.steps.iter().map(|s| (s.seq, s.tokens.total)).collect();
        assert_eq!(points, want);
    }
}

#[test]
fn a_script_end_tag_in_the_data_cannot_close_the_script() {
    let mut events = sessions().remove(0);
    // A tool output that says </script>: the data must not end the element.
    for e in &mut events {
        if let ctxlog_core::Event::PartUpdated {
            body:
                ctxlog_core::PartBody::Tool {
                    state: ctxlog_core::ToolState::Completed { output, .. },
                    ..
                },
            ..
        } = &mut e.event
        {
            output.push_str("</script><script>alert(1)</script>");
            break;
        }
    }
    let page = report(&[Curve {
        label: "x".into(),
        title: None,
        events: &events,
    }])
    .unwrap();
    assert_eq!(
        page.matches("</script>").count(),
        2,
        "the data and the code"
    );
}

/// A session shown in runs of three steps: each run by its peak step (the
/// first of the run that reported the most tokens) with the core's window
/// at that step, every lifecycle event counted, and the run's prunes merged
/// into one line that stands for all of them.
#[test]
fn a_page_of_runs_shows_each_run_by_its_peak_and_that_steps_window() {
    const STRIDE: usize = 3;
    let mut merged = 0;
    for events in sessions() {
        let mut survey = Survey::default();
        events.iter().for_each(|e| survey.see(e));
        let mut fold = PageFold::new("runs", &survey, STRIDE, ctxlog_report::data::MAX_PART_CHARS);
        for e in &events {
            fold.push(e).unwrap();
        }
        let data = fold.finish().unwrap();
        let t = timeline(&events).unwrap();
        assert_eq!(data.total_steps, t.steps.len() as u64);
        let runs: Vec<_> = t.steps.chunks(STRIDE).collect();
        assert_eq!(data.timeline.steps.len(), runs.len());
        let json = data.page_json();
        let windows = ctxlog_report::data::windows(&json);
        let steps = json["steps"].as_array().unwrap();
        for (r, run) in runs.iter().enumerate() {
            let peak = run.iter().map(|s| s.tokens.total).max().unwrap();
            let at = run.iter().position(|s| s.tokens.total == peak).unwrap();
            let n = (r * STRIDE + at + 1) as u64;
            assert_eq!(data.numbers[r], ((r * STRIDE + 1) as u64, n));
            assert_eq!(steps[r]["step"], n);
            assert_eq!(steps[r]["first"], r * STRIDE + 1);
            let row = &data.timeline.steps[r];
            assert_eq!((row.seq, row.tokens.total), (run[at].seq, peak));
            // The window shown is the core's at the peak step.
            let got: Vec<(String, Vec<String>)> = windows[r]
                .iter()
                .map(|&m| page_message(&ctxlog_report::messages::decoded(&json, m)))
                .collect();
            assert_eq!(got, core_window(&state_after(&events, row.seq)));
            // The run's lifecycle events, its prunes in one line.
            let want: Vec<&ctxlog_core::StepEvent> = run.iter().flat_map(|s| &s.events).collect();
            let prunes: Vec<_> = want.iter().filter(|e| e.kind == "parts_pruned").collect();
            let shown: Vec<_> = row
                .events
                .iter()
                .filter(|e| e.kind == "parts_pruned")
                .collect();
            assert_eq!(shown.len(), usize::from(!prunes.is_empty()));
            if let Some(line) = shown.first() {
                assert_eq!(line.parts, prunes.iter().map(|e| e.parts).sum::<usize>());
                assert_eq!(line.seq, prunes.last().unwrap().seq);
                if prunes.len() > 1 {
                    merged += 1;
                    assert!(
                        line.what.starts_with(&format!("{} prunes", prunes.len())),
                        "{}",
                        line.what
                    );
                }
            }
            let others = |l: &[&ctxlog_core::StepEvent]| -> Vec<u64> {
                l.iter()
                    .filter(|e| e.kind != "parts_pruned")
                    .map(|e| e.seq)
                    .collect()
            };
            assert_eq!(
                others(&row.events.iter().collect::<Vec<_>>()),
                others(&want)
            );
        }
        for kind in ["parts_pruned", "summary_completed", "compaction_requested"] {
            assert_eq!(data.count(kind), t.count(kind), "{kind}");
        }
        // The chart draws one point per run, at its peak step.
        let page = ctxlog_report::page(&[Folded {
            label: "runs".into(),
            title: None,
            data,
        }])
        .unwrap();
        assert_eq!(page.matches("<circle class=\"pt").count(), runs.len());
        assert!(page.contains("shown as"), "the page says it shows runs");
    }
    assert!(merged > 0, "some run merges prunes");
}

/// The transcript is written as the session is read again, holding only
/// the events of the messages not written yet: a long session's (it held
/// every event, 7 GB for 3M) holds a few, and the transcript is the same
/// written in one go or event by event.
#[test]
fn the_transcript_holds_a_few_events_whatever_the_sessions_length() {
    use ctxlog_report::MarkdownSurvey;
    let events = generate(&GenerateConfig {
        seed: 5,
        turns: 200,
        policy: Policy::opencode_seed(),
        limits: ModelLimits {
            context: 60_000,
            input: None,
            output: Some(8_000),
        },
        ..GenerateConfig::default()
    })
    .expect("a generated session");
    assert!(events.len() > 2_000, "{} events", events.len());
    let mut survey = MarkdownSurvey::new();
    for e in &events {
        survey.push(e).unwrap();
    }
    let mut out = Vec::new();
    let mut writer = survey.writer(Some("a title"), &mut out).unwrap();
    for e in &events {
        writer.push(e.clone()).unwrap();
    }
    let held = writer.most_held();
    writer.finish().unwrap();
    // Some, since the state leaves the parts' contents in the events; few.
    assert!(
        (1..=16).contains(&held),
        "held {held} of {} events at once",
        events.len()
    );
    let whole = ctxlog_report::markdown(&events, Some("a title")).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), whole);
    assert!(whole.starts_with("# a title\n"));
}
