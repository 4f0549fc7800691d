//! The replies on the wire: a scripted [`Reply`] streamed as the
//! Responses API, the Messages API or chat completions stream it, and
//! errors with their status.

use super::Reply;
use serde_json::{json, Value};
use std::io::Write;
use std::net::TcpStream;

/// Answers one Responses API request as OpenAI streams it:
/// `response.created`, an `output_item.added` and `.done` per item (an
/// assistant message or a function call), `response.completed` with the
/// usage (`input_tokens` counts the cached ones, `total_tokens` is input
/// plus output).
pub(super) fn respond_responses(
    stream: &mut TcpStream,
    n: usize,
    reply: &Reply,
) -> std::io::Result<()> {
    let (items, usage) = match reply {
        Reply::Error { status, body } => return respond_error(stream, *status, body),
        Reply::Text { text, usage } => (
            vec![json!({
                "type": "message", "id": format!("msg_scripted_{n:04}"), "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            })],
            usage,
        ),
        Reply::ToolCalls { calls, usage } => (
            calls
                .iter()
                .enumerate()
                .map(|(i, (id, name, args))| {
                    let mut item = json!({
                        "type": "function_call", "id": format!("fc_scripted_{n:04}_{i}"),
                        "call_id": id, "name": name, "arguments": args.to_string(),
                        "status": "completed",
                    });
                    // `namespace::name` calls a tool of a namespace (Codex
                    // offers each MCP server's tools as one).
                    if let Some((namespace, tool)) = name.split_once("::") {
                        item["namespace"] = json!(namespace);
                        item["name"] = json!(tool);
                    }
                    item
                })
                .collect(),
            usage,
        ),
    };
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    )?;
    let id = format!("resp_scripted_{n:04}");
    let mut event = |data: Value| {
        let name = data["type"].as_str().unwrap_or("").to_owned();
        write!(stream, "event: {name}\ndata: {data}\n\n")
    };
    event(json!({"type": "response.created",
                 "response": {"id": id, "status": "in_progress", "output": []}}))?;
    for (i, item) in items.iter().enumerate() {
        event(json!({"type": "response.output_item.added", "output_index": i, "item": item}))?;
        event(json!({"type": "response.output_item.done", "output_index": i, "item": item}))?;
    }
    event(json!({"type": "response.completed", "response": {
        "id": id, "status": "completed", "output": items,
        "usage": {
            "input_tokens": usage.prompt,
            "input_tokens_details": {"cached_tokens": usage.cached},
            "output_tokens": usage.completion,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning},
            "total_tokens": usage.total.unwrap_or(usage.prompt + usage.completion),
        },
    }}))?;
    stream.flush()
}

/// Answers an HTTP error with a JSON body (no stream), as every API does.
fn respond_error(stream: &mut TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let text = body.to_string();
    write!(
        stream,
        "HTTP/1.1 {status} Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )
}

/// Answers one Messages API request as Anthropic streams it (as `model`,
/// the one asked for): `message_start`
/// (with the input usage), one content block per text or tool call,
/// `message_delta` (stop reason, output tokens), `message_stop`.
pub(super) fn respond_anthropic(
    stream: &mut TcpStream,
    n: usize,
    model: &str,
    reply: &Reply,
) -> std::io::Result<()> {
    let (blocks, stop, usage) = match reply {
        Reply::Error { status, body } => return respond_error(stream, *status, body),
        Reply::Text { text, usage } => (
            vec![(
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": text}),
            )],
            "end_turn",
            usage,
        ),
        Reply::ToolCalls { calls, usage } => (
            calls
                .iter()
                .map(|(id, name, args)| {
                    (
                        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                        json!({"type": "input_json_delta", "partial_json": args.to_string()}),
                    )
                })
                .collect(),
            "tool_use",
            usage,
        ),
    };
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    )?;
    let mut event = |name: &str, data: Value| write!(stream, "event: {name}\ndata: {data}\n\n");
    event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_scripted_{n:04}"), "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {
                "input_tokens": usage.prompt,
                "cache_creation_input_tokens": usage.cache_write,
                "cache_read_input_tokens": usage.cached,
                "output_tokens": 1,
            },
        }}),
    )?;
    for (index, (start, delta)) in blocks.into_iter().enumerate() {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        )?;
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )?;
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )?;
    }
    event(
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": usage.completion}}),
    )?;
    event("message_stop", json!({"type": "message_stop"}))?;
    stream.flush()
}

pub(super) fn respond(stream: &mut TcpStream, reply: &Reply) -> std::io::Result<()> {
    let (deltas, finish, usage) = match reply {
        Reply::Error { status, body } => return respond_error(stream, *status, body),
        Reply::Text { text, usage } => (
            vec![
                json!({"role": "assistant", "content": ""}),
                json!({"content": text}),
            ],
            "stop",
            usage,
        ),
        Reply::ToolCalls { calls, usage } => {
            let mut d = vec![json!({"role": "assistant", "content": null})];
            for (i, (id, name, args)) in calls.iter().enumerate() {
                d.push(json!({"tool_calls": [{
                    "index": i, "id": id, "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}
                }]}));
            }
            (d, "tool_calls", usage)
        }
    };
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    )?;
    let chunk = |choices: Value, usage: Value| {
        json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
               "created": 1_700_000_000, "model": "scripted",
               "choices": choices, "usage": usage})
    };
    for d in deltas {
        let c = chunk(
            json!([{"index": 0, "delta": d, "finish_reason": null}]),
            Value::Null,
        );
        write!(stream, "data: {c}\n\n")?;
    }
    let c = chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
        Value::Null,
    );
    write!(stream, "data: {c}\n\n")?;
    let u = json!({
        "prompt_tokens": usage.prompt,
        "completion_tokens": usage.completion,
        "total_tokens": usage.prompt + usage.completion,
        "prompt_tokens_details": {"cached_tokens": usage.cached},
    });
    write!(stream, "data: {}\n\n", chunk(json!([]), u))?;
    write!(stream, "data: [DONE]\n\n")?;
    stream.flush()
}
