//! What became of an item: still in the model's window, cleared by a prune,
//! compacted away, or withdrawn. Pure: worked out from a session's marks
//! ([`crate::project::Mark`]) in log order, as the reducer would, so it is
//! always the status *now*, whatever was indexed when.

use crate::project::Mark;
use ctxlog_core::{MessageId, PartId, Seq};
use serde::Serialize;

/// An item's status now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Status {
    /// The model still sees it.
    InWindow,
    /// Its tool output was cleared from the model's input at `at` (the log
    /// keeps it).
    Pruned {
        /// The prune's seq.
        at: Seq,
    },
    /// A compaction replaced it with a summary: the pivot at `at`.
    Compacted {
        /// The seq of the summary's completion.
        at: Seq,
        /// The compaction job (its marker message).
        job: MessageId,
        /// The summary message that replaced it.
        summary: Option<MessageId>,
    },
    /// The agent took its message back at `at`.
    Withdrawn {
        /// The withdrawal's seq.
        at: Seq,
    },
}

impl Status {
    /// Whether the model no longer sees it whole (`--dropped`).
    pub fn is_dropped(&self) -> bool {
        !matches!(self, Status::InWindow)
    }
}

/// One completed compaction: where the window started after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Pivot {
    /// The seq of the summary's completion.
    pub at: Seq,
    /// The job (its marker message).
    pub job: MessageId,
    /// The summary message.
    pub summary: Option<MessageId>,
    /// The message the window starts at: the kept tail's first, else the
    /// marker.
    pub start: MessageId,
    /// The seq that message was appended at (`None`: not indexed, so
    /// nothing is known to be before it).
    pub start_seq: Option<Seq>,
}

/// A session's marks, in log order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionMarks {
    marks: Vec<(Seq, Mark)>,
}

impl SessionMarks {
    /// The marks, given in any order (sorted here by seq).
    pub fn new(mut marks: Vec<(Seq, Mark)>) -> SessionMarks {
        marks.sort_by_key(|(seq, _)| *seq);
        SessionMarks { marks }
    }

    /// The completed compactions in order; `seq_of` gives the seq a
    /// message was appended at.
    pub fn pivots(&self, seq_of: impl Fn(MessageId) -> Option<Seq>) -> Vec<Pivot> {
        let mut pivots = Vec::new();
        for (at, mark) in &self.marks {
            let Mark::Pivot { job } = mark else { continue };
            let started = self.marks.iter().rev().find_map(|(seq, m)| match m {
                Mark::Started {
                    job: j,
                    summary,
                    tail_start,
                } if j == job && seq < at => Some((*summary, *tail_start)),
                _ => None,
            });
            let summary = started.map(|(s, _)| s);
            let start = started.and_then(|(_, tail)| tail).unwrap_or(*job);
            pivots.push(Pivot {
                at: *at,
                job: *job,
                summary,
                start,
                start_seq: seq_of(start),
            });
        }
        pivots
    }

    /// The status of an item of message `message` (appended at
    /// `message_seq`), part `part` when it is a part, given the session's
    /// `pivots`.
    pub fn status(
        &self,
        pivots: &[Pivot],
        message: MessageId,
        message_seq: Seq,
        part: Option<PartId>,
    ) -> Status {
        let compacted = pivots
            .iter()
            .find(|p| p.start_seq.is_some_and(|start| message_seq < start));
        if let Some(p) = compacted {
            return Status::Compacted {
                at: p.at,
                job: p.job,
                summary: p.summary,
            };
        }
        let withdrawn = self.marks.iter().find_map(|(seq, m)| match m {
            Mark::Withdrawn(ms) if ms.contains(&message) => Some(*seq),
            _ => None,
        });
        if let Some(at) = withdrawn {
            return Status::Withdrawn { at };
        }
        let Some(part) = part else {
            return Status::InWindow;
        };
        let mut pruned = None;
        for (seq, m) in &self.marks {
            match m {
                Mark::Pruned(ps) if ps.contains(&part) => pruned = Some(*seq),
                Mark::Restored(ps) if ps.contains(&part) => pruned = None,
                _ => {}
            }
        }
        match pruned {
            Some(at) => Status::Pruned { at },
            None => Status::InWindow,
        }
    }
}
