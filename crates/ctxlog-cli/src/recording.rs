//! Reading a recording: the file (or standard input) an agent wrote, in
//! its format, into events, with the limits and policy it is read under.

use crate::ui;
use crate::CliError;
pub(crate) use ctxlog_app::inputs::{self, Input};
use ctxlog_core::{Envelope, EventPack, Policy};
use ctxlog_import::{Format, ImportOptions, Imported, LimitOverrides};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

/// `--format` of `import` and `simulate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Detect from the first bytes.
    Auto,
    /// OpenCode `opencode export` JSON.
    Opencode,
    /// Claude Code transcript JSONL.
    ClaudeCode,
    /// Codex CLI rollout JSONL.
    Codex,
    /// pi coding-agent session JSONL.
    Pi,
}

/// Model limit overrides, shared by `import` and `simulate`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LimitArgs {
    /// Use this model's limits from the built-in table instead of the
    /// recorded model's.
    #[arg(long)]
    pub model: Option<String>,
    /// Context window, tokens (overrides the table and the file): `128000`,
    /// `128k`, `1M`.
    #[arg(long, value_parser = parse_tokens)]
    pub context: Option<u64>,
    /// Output limit, tokens (`32k`).
    #[arg(long, value_parser = parse_tokens)]
    pub output: Option<u64>,
    /// Dedicated input limit, tokens (0 = none).
    #[arg(long = "input-limit", value_parser = parse_tokens)]
    pub input_limit: Option<u64>,
}

/// A token count as people write it: `128000`, `128_000`, `128,000`,
/// `128k`, `1.5M` (k = 1,000; M = 1,000,000).
pub fn parse_tokens(text: &str) -> Result<u64, String> {
    let t: String = text
        .trim()
        .chars()
        .filter(|c| *c != '_' && *c != ',')
        .collect();
    let (digits, unit) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000u64),
        Some((i, 'm' | 'M')) => (&t[..i], 1_000_000),
        _ => (t.as_str(), 1),
    };
    let bad = || format!("{text:?} is not a token count (write 128000, 128k or 1.5M)");
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    match digits.split_once('.') {
        None => digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(unit))
            .ok_or_else(bad),
        Some((whole, frac)) => {
            // Exact decimal arithmetic: 1.5M is 1,500,000, never 1,499,999.
            if frac.len() > 6 || frac.contains('.') {
                return Err(bad());
            }
            let scale = 10u64.pow(frac.len() as u32);
            let whole: u64 = if whole.is_empty() {
                0
            } else {
                whole.parse().map_err(|_| bad())?
            };
            let frac: u64 = if frac.is_empty() {
                0
            } else {
                frac.parse().map_err(|_| bad())?
            };
            let n = whole
                .checked_mul(scale)
                .and_then(|w| w.checked_add(frac))
                .and_then(|v| v.checked_mul(unit))
                .ok_or_else(bad)?;
            if n % scale != 0 {
                return Err(format!("{text:?} is not a whole number of tokens"));
            }
            Ok(n / scale)
        }
    }
}

impl LimitArgs {
    pub(crate) fn overrides(&self) -> LimitOverrides {
        LimitOverrides {
            model: self.model.clone(),
            context: self.context,
            input: self.input_limit,
            output: self.output,
        }
    }
}

pub(crate) fn preset(name: &str) -> Result<Policy, CliError> {
    Policy::named(name).map_err(|e| CliError::BadInput(e.to_string()))
}

/// Reads and imports `file` (`-`: standard input); every input problem is
/// exit code 2. `None`: a recording still being written
/// ([`ImportOptions::live`]) holds no session yet.
pub fn read_recording(
    json: bool,
    file: &Path,
    format: FormatArg,
    options: &ImportOptions,
) -> Result<Option<Imported>, CliError> {
    let input = if file == Path::new("-") {
        Input::Stdin
    } else {
        Input::File(file.to_path_buf())
    };
    read_input(json, &input, format.format(), options)
}

impl FormatArg {
    /// The format named (`None`: detect it).
    pub(crate) fn format(self) -> Option<Format> {
        match self {
            FormatArg::Opencode => Some(Format::OpenCode),
            FormatArg::ClaudeCode => Some(Format::ClaudeCode),
            FormatArg::Codex => Some(Format::Codex),
            FormatArg::Pi => Some(Format::Pi),
            FormatArg::Auto => None,
        }
    }
}

/// Reads and imports one input ([`inputs::read`]) with a progress bar on
/// a terminal, and its warnings on stderr, unless `json`.
pub(crate) fn read_input(
    json: bool,
    input: &Input,
    format: Option<Format>,
    options: &ImportOptions,
) -> Result<Option<Imported>, CliError> {
    let bar = Bar {
        json,
        bar: std::cell::OnceCell::new(),
    };
    let imported = inputs::read(input, format, options, &bar)
        .map_err(|e| CliError::BadInput(e.to_string()))?;
    if let (Some(imported), false) = (&imported, json) {
        for w in &imported.warnings {
            eprintln!("ctxlog: warning: {}: {w}", input.name());
        }
    }
    Ok(imported)
}

/// The progress bar of reading an input, shown once its length is known.
struct Bar {
    json: bool,
    bar: std::cell::OnceCell<indicatif::ProgressBar>,
}

impl inputs::Progress for Bar {
    fn begin(&self, len: u64) {
        let _ = self.bar.set(ui::progress(
            self.json,
            len,
            ui::PROGRESS_MIN_BYTES,
            "import",
            true,
        ));
    }
    fn advance(&self, bytes: u64) {
        if let Some(bar) = self.bar.get() {
            bar.inc(bytes);
        }
    }
    fn end(&self) {
        if let Some(bar) = self.bar.get() {
            bar.finish_and_clear();
        }
    }
}

/// `presets`: the built-in policies as JSON, the form `--policy-file`
/// reads.
pub(crate) fn print_presets() -> Result<(), CliError> {
    let presets: Vec<Policy> = Policy::preset_names()
        .iter()
        .filter_map(|n| Policy::preset(n))
        .collect();
    let text = serde_json::to_string_pretty(&presets)
        .map_err(|e| CliError::Failed(format!("cannot serialize the presets: {e}")))?;
    println!("{text}");
    Ok(())
}

/// The policies of a `--policy-file` (`-`: standard input): one policy,
/// or a list of them (as `ctxlog presets` prints), each checked.
pub(crate) fn read_policies(path: &Path) -> Result<Vec<Policy>, CliError> {
    let not_json =
        |e: serde_json::Error| CliError::BadInput(format!("{}: not JSON: {e}", path.display()));
    let doc: serde_json::Value = if path == Path::new("-") {
        serde_json::from_reader(std::io::stdin().lock()).map_err(not_json)?
    } else {
        let file = File::open(path)
            .map_err(|e| CliError::BadInput(format!("{}: cannot open: {e}", path.display())))?;
        serde_json::from_reader(BufReader::new(file)).map_err(not_json)?
    };
    let one = |v: serde_json::Value, at: &str| {
        serde_json::from_value::<Policy>(v).map_err(|e| {
            CliError::BadInput(format!(
                "{}{at}: not a policy (`ctxlog presets` prints policies in this form): {e}",
                path.display()
            ))
        })
    };
    let policies = match doc {
        serde_json::Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| one(v, &format!(" [{i}]")))
            .collect::<Result<Vec<_>, _>>()?,
        other => vec![one(other, "")?],
    };
    if policies.is_empty() {
        return Err(CliError::BadInput(format!(
            "{}: holds no policy",
            path.display()
        )));
    }
    for policy in &policies {
        check_policy(path, policy)?;
    }
    Ok(policies)
}

/// The policy of a `--policy-file`: its only one, or the one named `pick`
/// (`--policy NAME`) when it holds several.
pub(crate) fn read_policy(path: &Path, pick: Option<&str>) -> Result<Policy, CliError> {
    let mut policies = read_policies(path)?;
    match pick {
        Some(name) => match policies.iter().position(|p| p.name == name) {
            Some(i) => Ok(policies.swap_remove(i)),
            None => Err(CliError::BadInput(format!(
                "{}: no policy named {name:?} (it holds {})",
                path.display(),
                policy_names(&policies)
            ))),
        },
        None if policies.len() == 1 => Ok(policies.swap_remove(0)),
        None => Err(CliError::BadInput(format!(
            "{}: holds {} policies ({}): pick one with --policy NAME",
            path.display(),
            policies.len(),
            policy_names(&policies)
        ))),
    }
}

/// `opencode-seed, codex-0.169`: the names of `policies`, for messages.
pub(crate) fn policy_names(policies: &[Policy]) -> String {
    policies
        .iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Refuses a policy whose constants cannot work.
fn check_policy(path: &Path, policy: &Policy) -> Result<(), CliError> {
    if !(1..=100).contains(&policy.threshold_percent) {
        return Err(CliError::BadInput(format!(
            "{}: `threshold_percent` must be from 1 to 100, not {}",
            path.display(),
            policy.threshold_percent
        )));
    }
    Ok(())
}

/// An imported recording's events, decoded (for the commands that need
/// them all at once).
pub fn decoded(events: &EventPack) -> Result<Vec<Envelope>, CliError> {
    events
        .to_vec()
        .map_err(|e| CliError::Failed(format!("cannot decode the imported events: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_read_as_people_write_them() {
        for (text, want) in [
            ("128000", 128_000),
            ("128_000", 128_000),
            ("128,000", 128_000),
            ("128k", 128_000),
            ("128K", 128_000),
            ("1M", 1_000_000),
            ("1.5M", 1_500_000),
            ("0.5k", 500),
            ("1.047576M", 1_047_576),
            ("0", 0),
        ] {
            assert_eq!(parse_tokens(text), Ok(want), "{text}");
        }
        for bad in [
            "",
            "k",
            "12q",
            "1.2.3k",
            "-5",
            "1.5",
            "0.0001k",
            "99999999999999999999",
        ] {
            assert!(parse_tokens(bad).is_err(), "{bad:?}");
        }
    }
}
