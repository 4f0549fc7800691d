//! The command line as clap reads it: [`Cli`] (the global options),
//! [`Command`] (every subcommand and its arguments) and `ctxlog --help`
//! grouped by task.

#[cfg(feature = "bench")]
use crate::bench;
use crate::simulate::SimulateArgs;
use crate::window::WindowFormat;
use crate::{default_store, LocationParser};
use crate::{events, hook, hooks, import, mcp, otel, recall, search, serve, sessions, usage};
use clap::{Parser, Subcommand};
use ctxlog_app::logs::Location;
use std::path::PathBuf;

/// `ctxlog --help`: the commands grouped by task (a test checks that every
/// command is listed).
const HELP_TEMPLATE: &str = "\
{about}

{usage-heading} {usage}

Bring sessions in:
  import         recordings: files, directories, opencode.db, stdin; --discover, --follow

See a session:
  sessions       the stored sessions: date, agent, project, steps, peak, cost, title
  timeline       a row per step: tokens, usable context, percent used, what happened
  report         one HTML page: the context curve, prunes and compactions, the window at any step
  window         the exact model input, at the head or right after --at SEQ
  audit          every prune and compaction, with the agent's ids and the tokens
  serve          every session live in the browser, searchable, on localhost
  usage          tokens and cost by day, week, month, session, project, model or agent
  export         an OpenCode export or a Markdown transcript

Get back what the agent forgot:
  search         every session's history, pruned and compacted away included
  recall         one item whole by its id (a tool call id too), or all a compaction replaced
  index          bring the search index up to the log, or --rebuild it
  mcp            an MCP server the agent recalls its own history with; mcp install

Keep the store current:
  hooks          install the agents' hooks that import as they work; status
  hook           what those hooks run (the agent's payload on stdin)

Send sessions on:
  otel           OpenTelemetry GenAI traces to Phoenix, Langfuse, Jaeger, a collector; --follow

Compare policies:
  simulate       run a recording under other presets (--policy a,b); --keep, --report
  presets        the built-in policies as JSON (edit one, pass it with --policy-file)
  compact        compact a stored session by hand, now

Check the store:
  doctor         the store, each agent's hooks and MCP server: what works, what to do
  verify         every record against the witness of what was acknowledged
  salvage        copy what is intact out of a damaged store
  replay         re-derive a session's state and its digest
  copy           a whole store into another: sled to PostgreSQL and back

Set up:
  completions    a shell's completion script: bash, zsh or fish

Try and measure:
  demo           the Quick start: import, audit and simulate the built-in fixture
  generate       a seeded synthetic session through the whole lifecycle
  replay-events  replay a JSON-lines file of events
  stress         append synthetic sessions durably, printing each acknowledgement
  bench          ratios against raw sled and against recomputing (a build
                 with --features bench: cargo run --release -p ctxlog-cli
                 --features bench -- bench)

`ctxlog help <command>` tells more of each.

Options:
{options}{after-help}";

#[derive(Parser)]
#[command(
    name = "ctxlog",
    version,
    about = "Event-sourced context log for LLM agent sessions",
    help_template = HELP_TEMPLATE,
    after_help = "Examples:\n  ctxlog demo\n  ctxlog import --discover\n  ctxlog sessions --sort peak --desc\n  ctxlog timeline 0199812e\n  ctxlog report 0199812e --out session.html\n  ctxlog simulate rollout.jsonl --policy opencode-1.17,codex --context 128k --report compare.html\n\nExit codes: 0 success, 1 the operation failed, 2 bad input or usage."
)]
pub(crate) struct Cli {
    /// Print one JSON document on stdout instead of human output.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Show and group times in UTC (by default in local time: `TZ` when
    /// set, else the system's zone).
    #[arg(long, global = true)]
    pub(crate) utc: bool,
    /// The store: a directory (a sled database, private to its owner) or a
    /// PostgreSQL URL (`postgresql://user@host/db`, shared by processes
    /// and hosts), before or after the command; default `$CTXLOG_DB`, else
    /// `$XDG_DATA_HOME/ctxlog`, else `~/.local/share/ctxlog`.
    #[arg(long, global = true, env = "CTXLOG_DB", hide_env_values = true,
          value_parser = LocationParser, default_value_os_t = Location::Dir(default_store()))]
    pub(crate) db: Location,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Search every session's history: prompts, answers, tool calls and
    /// their outputs, summaries, what pruning cleared and compaction
    /// replaced included. Each hit: the session, its seq and time, who
    /// wrote it, a snippet, and what became of it (in the window, pruned at
    /// seq N, compacted away at seq N).
    #[command(
        after_help = "Example:\n  ctxlog search 'migration \"rows affected\"'\n  ctxlog search deploy* --agent claude --since 7d --dropped\n  ctxlog search 'timeout -retry' --session 0199812e --json"
    )]
    Search(search::SearchArgs),
    /// Give one item back whole, as recorded: a part or a message by its
    /// ctxlog id or the agent's own (a tool call id gives a pruned tool
    /// output back), or with --compaction everything one compaction
    /// replaced, with the summary that replaced it.
    #[command(
        after_help = "Example:\n  ctxlog recall toolu_01XkP9\n  ctxlog recall --compaction last 0199812e"
    )]
    Recall(recall::RecallArgs),
    /// Bring the search index up to the log (search and recall do it
    /// first too), or make it again with --rebuild; says what it holds.
    #[command(after_help = "Example:\n  ctxlog index\n  ctxlog index --rebuild")]
    Index(search::IndexArgs),
    /// Every session of the store in the browser, live: the list (sorted,
    /// filtered), search over every session, each session's page (its
    /// context curve, compactions and prunes, the window at any step, its
    /// audit) and the usage rollup; an open page updates as the agents
    /// write. On loopback only, behind a secret token in the printed
    /// address; read-only.
    #[command(
        after_help = "Example:\n  ctxlog serve --open\n  ctxlog serve --port 8377\n  ctxlog serve --db postgresql://ctxlog@db.internal/ctxlog"
    )]
    Serve(serve::ServeArgs),
    /// Sessions as OpenTelemetry GenAI traces, for the observability tools
    /// a team already runs (Phoenix, Langfuse, Jaeger, Tempo, Datadog, a
    /// collector): `otel export` sends them over OTLP/HTTP or writes OTLP
    /// JSON, once or live (--follow), compactions and prunes included.
    #[command(
        after_help = "Example:\n  ctxlog otel export --endpoint http://localhost:6006/v1/traces\n  ctxlog otel export --since 7d --file traces.jsonl\n  ctxlog otel export --follow"
    )]
    Otel(otel::OtelArgs),
    /// Serve this directory's agent over MCP (stdio): tools to search its
    /// history, recall an item whole (a pruned tool output by its call id)
    /// and see what a compaction replaced. Each call first imports what the
    /// agents recorded here. `mcp install --agent claude-code|codex|opencode`
    /// writes the agent's own configuration to start it.
    #[command(
        after_help = "Example:\n  ctxlog mcp install --agent claude-code\n  ctxlog mcp install --agent codex --scope user\n  ctxlog mcp uninstall --agent opencode"
    )]
    Mcp(mcp::McpArgs),
    /// Make each agent bring its sessions in as it works: `hooks install
    /// --agent claude-code|codex|opencode|pi` writes the agent's own hooks,
    /// plugin or extension that run `ctxlog hook`; `hooks uninstall`
    /// removes exactly that; `hooks status` says what is installed and
    /// when each hook last ran and imported.
    #[command(
        after_help = "Example:\n  ctxlog hooks install --agent claude-code\n  ctxlog hooks install --agent codex --scope project\n  ctxlog hooks status\n  ctxlog hooks uninstall --agent pi"
    )]
    Hooks(hooks::HooksArgs),
    /// What an agent's hook runs: reads the agent's payload on standard
    /// input, imports that session into the store and records the moment
    /// (a compaction about to happen, a turn's end). Returns within its
    /// budget (the import goes on detached), prints nothing, and exits 0
    /// whatever happens: a failure goes to the hooks' log (`hooks status`).
    #[command(
        after_help = "Example:\n  echo '{\"hook_event_name\":\"Stop\",\"session_id\":\"…\",\"transcript_path\":\"…\"}' | ctxlog hook claude-code"
    )]
    Hook(hook::HookArgs),
    /// Check what keeps the store current and gives its history back: the
    /// store opens, each agent's hooks are installed, runnable and not
    /// failing, each agent's MCP server is configured. Exit 1 with what to
    /// do when anything is wrong.
    #[command(after_help = "Example:\n  ctxlog doctor\n  ctxlog doctor --json")]
    Doctor,
    /// Import the built-in OpenCode fixture (an already compacted and pruned
    /// session) into a throw-away store, print its audit, and simulate it
    /// under a policy with pruning on: the Quick start's main command.
    #[command(after_help = "Example:\n  ctxlog demo\n  ctxlog demo --json")]
    Demo,
    /// Generate a seeded synthetic session, run it through the compaction
    /// lifecycle and report what the reducers derived.
    #[command(
        after_help = "Example:\n  ctxlog generate --seed 7 --turns 30 --events-out session.jsonl"
    )]
    Generate(events::GenerateArgs),
    /// Replay a JSON-lines file of event envelopes and report the state.
    #[command(after_help = "Example:\n  ctxlog replay-events session.jsonl")]
    ReplayEvents {
        /// The file (one envelope per line, as `generate --events-out`
        /// writes; `-`: standard input).
        file: PathBuf,
    },
    /// Print the built-in policy presets as JSON.
    #[command(after_help = "Example:\n  ctxlog presets > policy.json")]
    Presets,
    /// Append synthetic sessions durably, printing `ACK <session> <seq>` as
    /// each append is acknowledged.
    #[command(
        after_help = "Example:\n  ctxlog --db /tmp/s stress --sessions 8 --events 500 --seed 1"
    )]
    Stress {
        /// Sessions written concurrently.
        #[arg(long, default_value_t = 4)]
        sessions: u32,
        /// Events per session.
        #[arg(long, default_value_t = 1000)]
        events: u32,
        /// Events per append.
        #[arg(long, default_value_t = 1)]
        batch: u32,
        /// Seed of the synthetic sessions (default: from the clock, so every
        /// run writes new sessions).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Check every record of the store (CRC, chain, contiguity, heads) and
    /// the log against the witness of what was acknowledged. Exit 1 when
    /// anything is wrong; `--json` prints `{"ok", "heads", "errors": [{"kind",
    /// "session", "seq", "file", "offset", "detail"}]}`.
    #[command(after_help = "Example:\n  ctxlog --db ctxlog-data verify --json")]
    Verify,
    /// Copy every intact event of a damaged store into a new store, session
    /// by session up to its first damaged or lost event, and print what could
    /// not be saved (exit 1 when anything could not).
    #[command(after_help = "Example:\n  ctxlog salvage ctxlog-data ctxlog-data.salvaged")]
    Salvage {
        /// The damaged store.
        from: PathBuf,
        /// The new store (a path that does not exist yet).
        to: PathBuf,
    },
    /// Copy every session of a store into another, sled and PostgreSQL
    /// either way (`--db` is not used): the same events, ids and seqs,
    /// checked by reading both back. Running it again finishes a copy cut
    /// short and appends nothing to a finished one; a target holding other
    /// events for a session is refused. `--json` prints `{"from", "to",
    /// "streams", "events", "appended", "digest"}`.
    #[command(
        after_help = "Examples:\n  ctxlog copy ~/.local/share/ctxlog postgresql://me@db.example/ctxlog\n  ctxlog copy postgresql://me@db.example/ctxlog ./ctxlog-backup"
    )]
    Copy {
        /// The store to copy: a directory or a PostgreSQL URL.
        #[arg(value_parser = LocationParser)]
        from: Location,
        /// The store to copy into (made when missing).
        #[arg(value_parser = LocationParser)]
        to: Location,
    },
    /// Import a recorded session (OpenCode export, Claude Code, Codex or pi)
    /// into the store; bad input writes nothing, and an import killed
    /// midway leaves a prefix, marked interrupted, that importing again
    /// completes. Importing the same file again writes nothing (the ids
    /// derive from the recording's own session id); importing it after it
    /// grew appends what is new, at any moment, even while the agent is
    /// writing it, and ends as one import of the whole file would.
    #[command(
        after_help = "Example:\n  ctxlog import ~/.codex/sessions/2025/09/25/rollout-….jsonl\n  ctxlog import export.json --format opencode --context 128000\n  ctxlog import ~/.claude/projects/my-project/current-session.jsonl   (while Claude Code writes it)"
    )]
    Import(import::ImportArgs),
    /// List the stored sessions: date, agent, model, project, steps, peak
    /// tokens, cost, compactions, pruned parts and title (every field with
    /// --json); the table fits the terminal (`COLUMNS`).
    #[command(
        after_help = "Example:\n  ctxlog sessions\n  ctxlog sessions --agent claude --since 7d --sort peak --desc\n  ctxlog sessions --simulations\n  ctxlog --db other-store sessions --json"
    )]
    Sessions(sessions::SessionsArgs),
    /// Print the completion script of a shell on stdout.
    #[command(
        after_help = "Example:\n  ctxlog completions bash > ~/.local/share/bash-completion/completions/ctxlog\n  echo 'source <(ctxlog completions zsh)' >> ~/.zshrc\n  ctxlog completions fish > ~/.config/fish/completions/ctxlog.fish"
    )]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Tokens, steps, compactions, prunes and cost of every recorded model
    /// call, summed by day, week, month, session, project, model or agent,
    /// with a total row. Cost is the recording's own where it has one,
    /// else estimated from list prices (marked `~`).
    #[command(
        after_help = "Example:\n  ctxlog usage\n  ctxlog usage --by project --since 7d\n  ctxlog usage --by model --agent claude --since 20261101 --until yesterday --json"
    )]
    Usage(usage::UsageArgs),
    /// Re-derive a session's state from its whole log; prints its digest.
    #[command(after_help = "Example:\n  ctxlog replay ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v --json")]
    Replay {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        #[arg(add = crate::completion::sessions())]
        session: String,
    },
    /// Write a stored session as an OpenCode export (markers, summaries and
    /// pruned marks included) or a Markdown transcript, to stdout or `--out`.
    #[command(
        after_help = "Example:\n  ctxlog export 0199812e-64f0-7f73-91fc-095dda01c36e --format opencode > session.json\n  ctxlog export 0199812e --format markdown --out session.md"
    )]
    Export {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        #[arg(add = crate::completion::sessions())]
        session: String,
        /// The output format.
        #[arg(long, value_enum, default_value_t = ExportFormat::Opencode)]
        format: ExportFormat,
        /// Write to this file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Redact secrets (keys, tokens, passwords) from the whole transcript
        /// (Markdown only; the log is not changed).
        #[arg(long)]
        redact: bool,
    },
    /// Run a recording through the engine in memory under a
    /// policy, as if the agent had run under it, and print the decisions
    /// (prunes, compactions, summaries, continues, stalls).
    #[command(
        after_help = "Example:\n  ctxlog simulate rollout.jsonl --policy opencode-1.17 --json\n  ctxlog simulate session.jsonl --context 100000 --prune true --prune-protect 20000"
    )]
    Simulate(SimulateArgs),
    /// Benchmark ctxlog against raw sled and against recomputing from
    /// scratch; ratios measured in one run (build with --release).
    #[command(
        after_help = "Example:\n  cargo run --release -p ctxlog-cli --features bench -- bench --quick --json"
    )]
    #[cfg(feature = "bench")]
    Bench(bench::BenchArgs),
    /// The bench's child process: replay a session and report peak memory.
    #[command(hide = true)]
    #[cfg(feature = "bench")]
    BenchReplayRss {
        /// The session id.
        #[arg(add = crate::completion::sessions())]
        session: String,
    },
    /// Print the exact model input of a stored session, at its head or as it
    /// was right after event `--at SEQ`.
    #[command(after_help = "Example:\n  ctxlog window ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v --at 40")]
    Window {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        #[arg(add = crate::completion::sessions())]
        session: String,
        /// Show the window as it was right after this event.
        #[arg(long)]
        at: Option<u64>,
        /// `ctxlog`: messages and parts; as the agent sends it (JSON):
        /// `openai` the chat-completions `messages` of OpenCode, `anthropic`
        /// the Messages API `messages` of pi, `claude-code` those of Claude
        /// Code, `responses` the Responses API `input` of Codex.
        #[arg(long, value_enum, default_value = "ctxlog")]
        format: WindowFormat,
    },
    /// One row per model step of a stored session: the tokens the provider
    /// reported, the usable context and how much of it was used, the window
    /// estimate, and what happened after the step (prunes, compactions,
    /// summaries, continues, stalls).
    #[command(
        after_help = "Example:\n  ctxlog timeline 0199812e-64f0-7f73-91fc-095dda01c36e\n  ctxlog timeline ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v --json\n\n--json prints {\"session\", \"policy\", \"limits\", \"steps\": [{\"seq\", \"time\", \"tokens\": {\"input\", \"output\", \"reasoning\", \"cache_read\", \"cache_write\", \"total\", \"total_reported\"}, \"count\", \"usable\", \"percent\", \"threshold\", \"overflow\", \"window_estimate\", \"events\": [{\"seq\", \"kind\", \"parts\", \"tokens\", \"what\"}]}]}."
    )]
    Timeline {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        #[arg(add = crate::completion::sessions())]
        session: String,
    },
    /// Write one self-contained HTML page of a stored session: the context
    /// curve per step against the usable line and the threshold, markers for
    /// prunes and compactions, the exact window after any step, what each
    /// prune and compaction removed, each summary. `--with` adds other
    /// stored sessions (a simulation kept with `simulate --keep`) to the
    /// same chart.
    #[command(
        after_help = "Example:\n  ctxlog report 0199812e-64f0-7f73-91fc-095dda01c36e --out session.html\n  ctxlog report SESSION --with SESSION@opencode-1.17 --out compare.html"
    )]
    Report {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        #[arg(add = crate::completion::sessions())]
        session: String,
        /// More sessions on the same chart.
        #[arg(long = "with", value_name = "SESSION", add = crate::completion::sessions())]
        with: Vec<String>,
        /// The HTML file to write.
        #[arg(long)]
        out: PathBuf,
        /// Redact secrets (keys, tokens, passwords) from everything the page
        /// shows (the log is not changed).
        #[arg(long)]
        redact: bool,
    },
    /// Every prune, compaction request, start, attempt, summary, failure,
    /// pause and continue of a stored session.
    #[command(after_help = "Example:\n  ctxlog audit ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v")]
    Audit {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        #[arg(add = crate::completion::sessions())]
        session: String,
    },
    /// Compact a stored session by hand and run the job now (a job already
    /// pending, e.g. one cut off by a crash, runs instead of a new one).
    #[command(
        after_help = "Example:\n  ctxlog compact ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v --summarizer openai"
    )]
    Compact {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        #[arg(add = crate::completion::sessions())]
        session: String,
        /// The summarizer.
        #[arg(long, value_enum, default_value_t = SummarizerKind::Extractive)]
        summarizer: SummarizerKind,
    },
}

/// Formats `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ExportFormat {
    /// `opencode export` JSON.
    Opencode,
    /// A Markdown transcript (compactions, summaries and cleared outputs
    /// marked), for an issue or a review.
    Markdown,
}

/// Summarizers the command line can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SummarizerKind {
    /// Deterministic, built from the log, no network.
    Extractive,
    /// An OpenAI-compatible endpoint: `OPENAI_BASE_URL`, `OPENAI_API_KEY`,
    /// `CTXLOG_COMPACTION_MODEL`.
    Openai,
}

impl Cli {
    /// The zone times are shown in: UTC with `--utc`, else the system's
    /// (`TZ` honoured).
    pub(crate) fn zone(&self) -> ctxlog_app::dates::Zone {
        if self.utc {
            ctxlog_app::dates::Zone::utc()
        } else {
            ctxlog_app::dates::Zone::system()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_grouped_help_lists_every_command() {
        let cli = Cli::command();
        for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
            let name = sub.get_name();
            assert!(
                HELP_TEMPLATE.contains(&format!("\n  {name} ")),
                "`ctxlog --help` does not list {name}"
            );
        }
        cli.debug_assert();
    }
}
