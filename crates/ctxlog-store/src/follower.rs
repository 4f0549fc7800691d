//! [`Follower`]: catch-up from checkpoints, then live, over any log that
//! announces its durable heads ([`Followable`]).

use crate::error::ReadError;
use crate::log::EventLog;
use crate::subscribe::Subscription;
use ctxlog_core::{Envelope, Seq, SessionId};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A log that can be followed: besides reading, it says which heads are
/// durable and wakes subscribers when they advance.
pub trait Followable: EventLog {
    /// Subscribes to notifications of new durable heads.
    fn subscribe(&self) -> Subscription;

    /// Every session with its durable head.
    fn durable_heads(&self) -> Result<BTreeMap<SessionId, Seq>, ReadError>;
}

/// Follows every session of a log from a checkpoint per session: first the
/// durable events already stored, then new ones as they become durable. A
/// follower restarted from its saved checkpoints sees no gap and no duplicate.
pub struct Follower {
    log: Box<dyn Followable>,
    sub: Subscription,
    checkpoints: BTreeMap<SessionId, Seq>,
    caught_up: bool,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("checkpoints", &self.checkpoints)
            .field("caught_up", &self.caught_up)
            .finish_non_exhaustive()
    }
}

impl Follower {
    /// Starts following `log` (a handle is kept); `checkpoints` are the last
    /// seqs already processed.
    pub fn new<L: Followable + Clone + 'static>(
        log: &L,
        checkpoints: BTreeMap<SessionId, Seq>,
    ) -> Self {
        // Subscribe before catching up, so nothing committed in between is missed.
        let sub = log.subscribe();
        Follower {
            log: Box::new(log.clone()),
            sub,
            checkpoints,
            caught_up: false,
        }
    }

    /// The last seq delivered per session (save it to resume later).
    pub fn checkpoints(&self) -> &BTreeMap<SessionId, Seq> {
        &self.checkpoints
    }

    /// The next durable events, waiting up to `timeout` for new ones. Events
    /// of one session come in seq order, each exactly once.
    pub fn poll(&mut self, timeout: Duration) -> Result<Vec<Envelope>, ReadError> {
        // A notification may announce a head already delivered (one that
        // became durable between subscribing and catching up): it yields
        // nothing, so wait on for the rest of the timeout.
        let deadline = Instant::now() + timeout;
        loop {
            let out = self.poll_once(deadline.saturating_duration_since(Instant::now()))?;
            if !out.is_empty() || Instant::now() >= deadline {
                return Ok(out);
            }
        }
    }

    /// One round of [`Follower::poll`]: the events up to the heads known now
    /// (first poll) or announced by the next notification.
    fn poll_once(&mut self, timeout: Duration) -> Result<Vec<Envelope>, ReadError> {
        let targets = self.targets(timeout)?;
        // Checkpoints advance only with events actually returned: a failed
        // read returns nothing and changes nothing, so the next poll retries.
        let mut checkpoints = self.checkpoints.clone();
        let mut out = Vec::new();
        for (session, upto) in targets {
            let from = match checkpoints.get(&session) {
                None => 1,
                Some(&done) => match done.checked_add(1) {
                    Some(from) => from,
                    None => continue,
                },
            };
            if upto < from {
                continue;
            }
            for e in self.log.read(session, from)? {
                let e = e?;
                if e.seq > upto {
                    break;
                }
                checkpoints.insert(session, e.seq);
                out.push(e);
            }
        }
        self.checkpoints = checkpoints;
        self.caught_up = true;
        Ok(out)
    }

    /// The durable head to read up to, per session: every durable head on
    /// the first poll, then what the subscription announces.
    fn targets(&self, timeout: Duration) -> Result<Vec<(SessionId, Seq)>, ReadError> {
        if !self.caught_up {
            return Ok(self.log.durable_heads()?.into_iter().collect());
        }
        match self.sub.recv_timeout(timeout) {
            None => Err(ReadError::Closed),
            Some(n) => Ok(n.into_iter().map(|n| (n.session, n.seq)).collect()),
        }
    }
}
