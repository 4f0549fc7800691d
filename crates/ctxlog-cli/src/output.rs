//! What ctxlog writes: stdout and stderr with recorded text made inert, a
//! closed pipe ending the program quietly, and the JSON envelope of a
//! failure (`{"ok": false, "error": {...}}`) that every command prints
//! with `--json`.

use crate::CliError;
use serde_json::json;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Writes to stdout; see the `println!` above.
/// Recorded text is made inert on the way out ([`inert`]).
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    let text = std::fmt::format(args);
    write_stdout_raw(&inert(&text, JSON_OUTPUT.load(Ordering::Relaxed)));
}

/// Writes `text` to stdout as it is: only for what ctxlog itself styles
/// (a bold table header), never recorded text.
pub(crate) fn write_stdout_raw(text: &str) {
    if let Err(e) = std::io::stdout().lock().write_all(text.as_bytes()) {
        stdout_failed(&e);
    }
}

/// Writes to stderr, recorded text made inert; a closed stderr is ignored.
pub(crate) fn write_stderr(args: std::fmt::Arguments<'_>) {
    let text = std::fmt::format(args);
    let _ = std::io::stderr()
        .lock()
        .write_all(inert(&text, false).as_bytes());
}

/// Whether stdout carries JSON (`--json`), set once at start.
pub(crate) static JSON_OUTPUT: AtomicBool = AtomicBool::new(false);

/// `text` with nothing that can act on a terminal: in text output, control
/// characters and bidirectional overrides become visible symbols
/// ([`ctxlog_core::printable::lines`]); in JSON (whose strings already
/// escape C0) the C1 and bidirectional characters left are written as
/// `\uXXXX` escapes, the same value.
pub(crate) fn inert(text: &str, json: bool) -> std::borrow::Cow<'_, str> {
    if !json {
        return ctxlog_core::printable::lines(text);
    }
    let active = |c: char| matches!(c, '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{7f}');
    if !text.chars().any(active) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if active(c) {
            let _ = std::fmt::Write::write_fmt(&mut out, format_args!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Ends the program after a failed write to stdout: quietly (exit 0) when
/// the reader went away, else with the error (exit 1).
pub(crate) fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("ctxlog: cannot write to stdout: {e}");
    std::process::exit(1);
}

/// The JSON envelope of a failure: what kind (`bad_input`, `failed`,
/// `reported`, `refused`, `usage`), the message, and the exit code.
pub(crate) fn error_envelope(kind: &str, message: &str, exit_code: u8) -> serde_json::Value {
    json!({"ok": false, "error": {"kind": kind, "message": message, "exit_code": exit_code}})
}

/// Prints `e` as a failure: on stderr, and with `--json` as the envelope on
/// stdout unless the command's own JSON already said it (`Reported`,
/// `Refused`).
pub(crate) fn report_failure(e: &CliError, json: bool) {
    if json && !matches!(e, CliError::Reported(_) | CliError::Refused(_)) {
        println!("{}", error_envelope(e.kind(), &e.to_string(), e.code()));
    }
    eprintln!("ctxlog: {e}");
}

/// A command line clap refused: with `--json` anywhere in it, the envelope
/// (kind `usage`, exit 2) on stdout and clap's text on stderr; help and
/// version are printed as they are.
pub(crate) fn command_line_refused(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    let json = std::env::args_os().any(|a| a == "--json");
    let shows = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if json && !shows {
        let text = e.render().to_string();
        let message = text.lines().next().unwrap_or_default();
        let message = message.strip_prefix("error: ").unwrap_or(message);
        println!("{}", error_envelope("usage", message, 2));
    }
    e.exit()
}
