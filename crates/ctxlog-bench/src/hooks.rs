//! What an agent's hook costs the agent ([`bench_hooks`]): a pi recording
//! grows turn by turn while `ctxlog hook pi` runs after every few turns,
//! as pi's extension calls it; each call's time to return to the agent,
//! against the hook's budget, and against importing the finished
//! recording by hand.

use crate::measure::{median, Scratch};
use crate::memory::{ctxlog_args, RunCtxlog};
use crate::report::Report;
use crate::sizes::Sizes;
use crate::{failed, BenchError};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

/// The hook's budget (`ctxlog hook --budget`), ms.
const HOOK_BUDGET_MS: f64 = 200.0;

/// Hook calls per run.
const CALLS: usize = 10;

/// One turn of a pi recording: a prompt, a tool call, its output and an
/// answer, each a line.
fn turn(t: usize, output: &str) -> [Value; 4] {
    let ms = 1_763_632_800_000u64 + t as u64 * 10_000;
    let at = |k: u64| json!(ms + k);
    let usage =
        |input: usize| json!({"input": input, "output": 20, "cacheRead": 0, "cacheWrite": 0});
    let said = |role: &str, k: u64, content: Value, rest: Value| {
        let mut m = json!({"role": role, "content": content, "timestamp": at(k)});
        if let (Some(m), Value::Object(rest)) = (m.as_object_mut(), rest) {
            m.extend(rest);
        }
        json!({"type": "message", "timestamp": format!("2025-11-20T10:00:00.{:03}Z", k), "message": m})
    };
    let model =
        json!({"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"});
    let with = |extra: Value| {
        let mut v = model.clone();
        if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
            v.extend(extra);
        }
        v
    };
    [
        said(
            "user",
            0,
            json!([{"type": "text", "text": format!("step {t}")}]),
            json!({}),
        ),
        said(
            "assistant",
            1,
            json!([{"type": "toolCall", "id": format!("call_{t}"), "name": "bash", "arguments": {"command": format!("ls {t}")}}]),
            with(json!({"usage": usage(1_000 + 40 * t), "stopReason": "toolUse"})),
        ),
        said(
            "toolResult",
            2,
            json!([{"type": "text", "text": output}]),
            json!({"toolCallId": format!("call_{t}"), "toolName": "bash", "isError": false}),
        ),
        said(
            "assistant",
            3,
            json!([{"type": "text", "text": format!("done {t}")}]),
            with(json!({"usage": usage(1_030 + 40 * t), "stopReason": "stop"})),
        ),
    ]
}

/// Stage 13: `ctxlog hook pi` after every `turns / CALLS` turns of a
/// growing recording; the median and worst time it held the agent, the
/// worst against the budget, and the import of the whole recording.
pub fn bench_hooks(z: &Sizes, r: &mut Report, run: RunCtxlog<'_>) -> Result<(), BenchError> {
    let dir = Scratch::new("hooks");
    std::fs::create_dir_all(dir.path()).map_err(|e| failed("dir")(&e))?;
    let file = dir.path().join("session.jsonl");
    let store = dir.path().join("store");
    let turns = (z.import as usize / 40).clamp(CALLS, 2_000);
    let output = "a line of a tool's output\n".repeat(40);
    let mut f = std::fs::File::create(&file).map_err(|e| failed("recording")(&e))?;
    let header = json!({"type": "session", "id": "5e1f0c2a-9b8d-4e7f-a6c5-0000000b0001", "timestamp": "2025-11-20T10:00:00.000Z", "cwd": "/bench", "provider": "anthropic", "modelId": "claude-sonnet-4-5", "thinkingLevel": "off"});
    writeln!(f, "{header}").map_err(|e| failed("recording")(&e))?;
    let mut held = Vec::new();
    for t in 0..turns {
        for line in turn(t, &output) {
            writeln!(f, "{line}").map_err(|e| failed("recording")(&e))?;
        }
        if (t + 1) % (turns / CALLS) == 0 {
            f.flush().map_err(|e| failed("recording")(&e))?;
            held.push(call(run, &store, &file)? * 1000.0);
        }
    }
    let worst = held.iter().copied().fold(0.0, f64::max);
    let calls = held.len();
    r.set_figure("hook_return_ms_median", json!(median(held)?));
    r.set_figure("hook_return_ms_worst", json!(worst));
    r.set_figure("hook_calls", json!(calls));
    r.set_figure("hook_recording_turns", json!(turns));
    r.set_ratio("hook_worst_vs_budget", worst / HOOK_BUDGET_MS);
    // By hand: the whole recording into a new store.
    let by_hand = Scratch::new("hooks-by-hand");
    let child = run(&ctxlog_args(by_hand.path(), &[&"import", &file]))?;
    r.set_figure("hook_recording_import_seconds", json!(child.seconds));
    Ok(())
}

/// One call as pi's extension makes it; the seconds it held pi.
fn call(run: RunCtxlog<'_>, store: &Path, file: &Path) -> Result<f64, BenchError> {
    let args = ctxlog_args(
        store,
        &[
            &"hook",
            &"pi",
            &"--event",
            &"agent_end",
            &"--session",
            &"bench",
            &"--transcript",
            &file,
        ],
    );
    Ok(run(&args)?.seconds)
}
