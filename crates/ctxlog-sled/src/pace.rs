//! Served readers take turns in sled and rest while a writer is busy, so
//! that readers never stall the writer: one served request at a time works
//! in sled (twenty readers scanning at once starved the writer: a reader
//! thread holding one of sled's locks is descheduled among the others while
//! the writer waits for it), a turn is a chunk of a read or of a
//! verification scan, and after a turn during which the writer committed,
//! the reader rests as long again before its next turn. Frames are written
//! to the socket outside a turn, so a slow client never holds one.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Records read from sled per turn.
pub(crate) const CHUNK: usize = 256;

/// How long a reader rests after a turn during which the writer committed,
/// as a multiple of the turn: 1 gives a busy writer sled to itself at
/// least half of the time.
const REST_PER_TURN: u32 = 2;

/// The longest rest (a slow turn must not park a reader for long).
const MAX_REST: Duration = Duration::from_millis(50);

/// The turn of one served request at a time.
static GATE: Mutex<()> = Mutex::new(());

/// A served request's turns: holds the gate during a turn.
pub(crate) struct Pace<'a> {
    /// Events the writer has committed so far (a counter that only grows).
    writer_progress: &'a (dyn Fn() -> u64 + Sync),
    turn: Option<Turn>,
}

struct Turn {
    _gate: MutexGuard<'static, ()>,
    started: Instant,
    progress: u64,
}

impl<'a> Pace<'a> {
    /// Waits for a first turn.
    pub(crate) fn new(writer_progress: &'a (dyn Fn() -> u64 + Sync)) -> Pace<'a> {
        let mut pace = Pace {
            writer_progress,
            turn: None,
        };
        pace.take_turn();
        pace
    }

    fn take_turn(&mut self) {
        let gate = GATE.lock().unwrap_or_else(PoisonError::into_inner);
        self.turn = Some(Turn {
            _gate: gate,
            started: Instant::now(),
            progress: (self.writer_progress)(),
        });
    }

    /// Ends the turn and, when the writer committed during it, rests
    /// before the next one.
    pub(crate) fn pause(&mut self) {
        if let Some(turn) = self.turn.take() {
            let took = turn.started.elapsed();
            let busy = (self.writer_progress)() != turn.progress;
            drop(turn);
            if busy {
                std::thread::sleep((took * REST_PER_TURN).min(MAX_REST));
            }
        }
    }

    /// Ends the turn (if any) and takes the next one.
    pub(crate) fn next_turn(&mut self) {
        self.pause();
        self.take_turn();
    }
}
