//! A compaction the recording already did, recorded whole through
//! `ctxlog_core::decide` so its ids are drawn the one way.

use super::{Builder, RecordedKind};
use crate::ImportError;
use ctxlog_core::decide::queued;
use ctxlog_core::{Command, LoopGuard, MessageId, RecordedCompaction, TimestampMs, TokenUsage};

/// A compaction a recording made, as [`Builder::imported_compaction`]
/// records it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedCompaction<'a> {
    /// Who decided it, and why.
    pub kind: RecordedKind,
    /// The source id of its marker and summary (the recording's line).
    pub source: Option<String>,
    /// The summary text.
    pub text: &'a str,
    /// The first message kept verbatim after the summary.
    pub tail: Option<MessageId>,
    /// The context's tokens before it, as the agent recorded them.
    pub tokens_before: Option<u64>,
    /// The usage of the summarizer's own call, when recorded.
    pub tokens: Option<TokenUsage>,
}

impl Builder<'_> {
    /// A compaction the recording already did: marker, summary message with
    /// its text, completed (written by `ctxlog_core::decide`, as every
    /// lifecycle event is, labelled with the agent that decided it).
    pub fn imported_compaction(
        &mut self,
        at: TimestampMs,
        c: ImportedCompaction<'_>,
    ) -> Result<MessageId, ImportError> {
        let at = self.time(Some(at));
        let command = Command::RecordCompaction(RecordedCompaction {
            auto: c.kind.auto,
            overflow: c.kind.overflow,
            text: c.text.to_owned(),
            tail_start: c.tail,
            marker_source: c.source.clone(),
            summary_source: c.source,
            decided_by: self.decided_by(None),
            tokens_before: c.tokens_before,
            tokens: c.tokens,
        });
        let decided = match self.rec()?.run(at, command, LoopGuard::default()) {
            Ok(decided) => decided,
            Err(e) => return Err(self.err(format!("cannot record the compaction: {e}"))),
        };
        if let Some(last) = self.rec()?.events().last() {
            self.last_recorded_at = last.recorded_at;
        }
        self.pack_recorded()?;
        queued(&decided).ok_or_else(|| self.err("the compaction decided no marker"))
    }
}
