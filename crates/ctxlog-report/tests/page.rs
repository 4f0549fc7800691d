//! The page's data against the core's own views, on generated sessions
//! that prune, compact, fail and stall: each step's window (stored once per
//! distinct rendering) is exactly `window()` of the state at that step, the
//! chart's points are the timeline, and what "left the window" is what the
//! next step's window no longer has.

use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::window::{window, ToolResult, PRUNED_PLACEHOLDER};
use ctxlog_core::{timeline, Envelope, ModelLimits, Policy, SessionState, WindowPart};
use ctxlog_report::data::session_data;
use ctxlog_report::{report, Curve};
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

#[test]
fn each_steps_window_on_the_page_is_the_cores_window_at_that_step() {
    let mut pruned = 0;
    let mut compacted = 0;
    for events in sessions() {
        let data =
            session_data("test", &events, ctxlog_report::data::MAX_PART_CHARS).expect("replays");
        let steps = data.json["steps"].as_array().unwrap();
        let messages = data.json["messages"].as_array().unwrap();
        // Each step keeps only how its window changed; rebuilt, it is the
        // whole window.
        let windows = ctxlog_report::data::windows(&data.json);
        assert_eq!(windows.len(), steps.len());
        let t = timeline(&events).unwrap();
        assert_eq!(steps.len(), t.steps.len());
        for ((row, step), refs) in t.steps.iter().zip(steps).zip(&windows) {
            assert_eq!(step["size"], refs.len());
            assert_eq!(step["seq"], row.seq);
            assert_eq!(step["total"], row.tokens.total);
            let upto: Vec<Envelope> = events
                .iter()
                .filter(|e| e.seq <= row.seq)
                .cloned()
                .collect();
            let state = SessionState::replay(&upto).unwrap();
            let want: Vec<(String, Vec<String>)> = window(&state)
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
                .collect();
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
