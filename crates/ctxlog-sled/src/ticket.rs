//! A request's place in the committer's queue: the caller waits on its
//! ticket until it is answered, or until it is asked to lead (to commit
//! the queue itself).

use ctxlog_store::Appended;
use ctxlog_store::StoreError;

use ctxlog_store::VerifyReport;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// What the committer answers.
#[derive(Debug)]
pub(crate) enum Answer {
    /// An append is stored (durable unless the store is buffered).
    Appended(Appended),
    /// Everything committed before the flush is on disk.
    Flushed,
    /// A verification's report.
    Verified(Box<VerifyReport>),
}

/// What waiting on a ticket ends with.
pub(crate) enum Woken {
    /// The request was served.
    Answered(Result<Answer, StoreError>),
    /// The caller leads next: its request is first in the queue.
    Lead,
}

#[derive(Default)]
struct State {
    answer: Option<Result<Answer, StoreError>>,
    answered: bool,
    lead: bool,
    /// The caller sleeps on the condition variable: only then is it
    /// woken (a leader answering its own request makes no system call).
    sleeping: bool,
}

/// One request's ticket.
#[derive(Default)]
pub(crate) struct Ticket {
    state: Mutex<State>,
    woken: Condvar,
}

impl Ticket {
    fn state(&self) -> MutexGuard<'_, State> {
        // `State` is valid whatever a panicking holder did.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers the request; a ticket is answered once (later answers are
    /// dropped).
    pub(crate) fn answer(&self, answer: Result<Answer, StoreError>) {
        let mut s = self.state();
        if !s.answered {
            s.answered = true;
            s.answer = Some(answer);
            if s.sleeping {
                self.woken.notify_one();
            }
        }
    }

    /// Whether the request was answered.
    pub(crate) fn is_answered(&self) -> bool {
        self.state().answered
    }

    /// Asks the waiting caller to lead.
    pub(crate) fn lead(&self) {
        let mut s = self.state();
        s.lead = true;
        if s.sleeping {
            self.woken.notify_one();
        }
    }

    /// Waits until the request is answered or its caller must lead.
    pub(crate) fn wait(&self) -> Woken {
        let mut s = self.state();
        loop {
            if let Some(a) = s.answer.take() {
                return Woken::Answered(a);
            }
            if std::mem::take(&mut s.lead) {
                return Woken::Lead;
            }
            s.sleeping = true;
            s = self.woken.wait(s).unwrap_or_else(PoisonError::into_inner);
            s.sleeping = false;
        }
    }
}
