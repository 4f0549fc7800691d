//! A compaction the recording already did, recorded whole through
//! `ctxlog_core::decide` so its ids are drawn the one way.

use super::{Builder, RecordedKind};
use crate::ImportError;
use ctxlog_core::decide::queued;
use ctxlog_core::{Command, LoopGuard, MessageId, RecordedCompaction, TimestampMs};

impl Builder<'_> {
    /// A compaction the recording already did: marker, summary message with
    /// its text, completed (written by `ctxlog_core::decide`, as every
    /// lifecycle event is, labelled with the agent that decided it).
    /// `tail` is the first message kept verbatim; `tokens_before` the
    /// context's tokens before it, as the agent recorded them.
    #[allow(clippy::too_many_arguments)]
    pub fn imported_compaction(
        &mut self,
        at: TimestampMs,
        kind: RecordedKind,
        source: Option<String>,
        summary_source: Option<String>,
        text: &str,
        tail: Option<MessageId>,
        tokens_before: Option<u64>,
    ) -> Result<MessageId, ImportError> {
        let at = self.time(Some(at));
        let command = Command::RecordCompaction(RecordedCompaction {
            auto: kind.auto,
            overflow: kind.overflow,
            text: text.to_owned(),
            tail_start: tail,
            marker_source: source,
            summary_source,
            decided_by: self.decided_by(None),
            tokens_before,
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
