//! `PresenterLog`: a presenter that records every call, and the reconciled view of what a viewer
//! finally saw (used to compare presentation across rollback modes).

use super::director::{Cue, Presenter, RemoveReason};
use crate::cue::CueKey;
use crate::num::Frame;
use std::collections::{BTreeMap, BTreeSet};

/// One presenter call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum PresenterCall {
    /// [`Presenter::play`].
    Play(CueKey),
    /// [`Presenter::cancel`].
    Cancel(CueKey),
    /// [`Presenter::on_active`].
    OnActive(CueKey),
    /// [`Presenter::while_active`].
    WhileActive(CueKey),
    /// [`Presenter::removed`].
    Removed(CueKey, RemoveReason),
    /// [`Presenter::confirmed`].
    Confirmed(CueKey),
}

impl PresenterCall {
    /// The cue the call is about.
    pub fn key(&self) -> CueKey {
        match *self {
            PresenterCall::Play(k)
            | PresenterCall::Cancel(k)
            | PresenterCall::OnActive(k)
            | PresenterCall::WhileActive(k)
            | PresenterCall::Removed(k, _)
            | PresenterCall::Confirmed(k) => k,
        }
    }
}

/// A [`Presenter`] that records every call in order, with the frame the world was at when
/// the call was made (set with [`PresenterLog::at`] before each reconciliation; `Runner` and the
/// scenario runner do this for you).
///
/// ```
/// use rollback_abilities::present::{PresenterCall, PresenterLog};
/// let log = PresenterLog::default();
/// assert!(log.reconciled().is_empty());
/// assert!(log.check_invariants().is_ok());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PresenterLog {
    /// Every call, in order, with the frame set by [`PresenterLog::at`] when it was made.
    pub calls: Vec<(Frame, PresenterCall)>,
    now: Frame,
}

impl Presenter for PresenterLog {
    fn play(&mut self, c: &Cue) {
        self.calls.push((self.now, PresenterCall::Play(c.key)));
    }
    fn cancel(&mut self, c: &Cue) {
        self.calls.push((self.now, PresenterCall::Cancel(c.key)));
    }
    fn on_active(&mut self, c: &Cue) {
        self.calls.push((self.now, PresenterCall::OnActive(c.key)));
    }
    fn while_active(&mut self, c: &Cue) {
        self.calls.push((self.now, PresenterCall::WhileActive(c.key)));
    }
    fn removed(&mut self, c: &Cue, r: RemoveReason) {
        self.calls.push((self.now, PresenterCall::Removed(c.key, r)));
    }
    fn confirmed(&mut self, c: &Cue) {
        self.calls.push((self.now, PresenterCall::Confirmed(c.key)));
    }
}

impl PresenterLog {
    /// Sets the frame stamped on the calls that follow.
    pub fn at(&mut self, frame: Frame) {
        self.now = frame;
    }

    /// The calls without their frames.
    pub fn calls(&self) -> impl Iterator<Item = &PresenterCall> + '_ {
        self.calls.iter().map(|(_, c)| c)
    }

    /// How many calls satisfy `f`.
    pub fn count(&self, f: impl Fn(&PresenterCall) -> bool) -> usize {
        self.calls().filter(|c| f(c)).count()
    }

    /// What a viewer finally saw, sorted: every `cancel` removes itself and the `play` it
    /// cancels, every `Removed{Mispredicted}` removes itself and the show it ends, a
    /// `Removed{Ended}` followed by a `WhileActive` of the same instance (a predicted end taken
    /// back) removes itself and that `WhileActive`, and `confirmed` calls are dropped. Two runs of the same match — plain stepping, rollbacks
    /// at any depth, peers on a lossy network — give equal reconciled logs.
    pub fn reconciled(&self) -> Vec<PresenterCall> {
        let mut keep = vec![true; self.calls.len()];
        let mut plays: BTreeMap<CueKey, Vec<usize>> = BTreeMap::new();
        let mut shows: BTreeMap<CueKey, Vec<usize>> = BTreeMap::new();
        // The last `Removed{Ended}` of an instance not shown since.
        let mut ended: BTreeMap<CueKey, usize> = BTreeMap::new();
        for (i, (_, c)) in self.calls.iter().enumerate() {
            match c {
                PresenterCall::Play(k) => plays.entry(*k).or_default().push(i),
                PresenterCall::Cancel(k) => {
                    keep[i] = false;
                    if let Some(p) = plays.get_mut(k).and_then(Vec::pop) {
                        keep[p] = false;
                    }
                }
                PresenterCall::WhileActive(k) if ended.contains_key(k) => {
                    // Shown again: the end was a prediction the session took back.
                    keep[i] = false;
                    if let Some(r) = ended.remove(k) {
                        keep[r] = false;
                    }
                }
                PresenterCall::OnActive(k) | PresenterCall::WhileActive(k) => {
                    ended.remove(k);
                    shows.entry(*k).or_default().push(i);
                }
                PresenterCall::Removed(k, RemoveReason::Mispredicted) => {
                    keep[i] = false;
                    // The show this removal ends: its WhileActive and, if any, its OnActive.
                    if let Some(list) = shows.get_mut(k) {
                        while let Some(p) = list.pop() {
                            keep[p] = false;
                            if matches!(self.calls[p].1, PresenterCall::OnActive(_))
                                || list.is_empty()
                            {
                                break;
                            }
                            if matches!(
                                self.calls[list[list.len() - 1]].1,
                                PresenterCall::WhileActive(_)
                            ) {
                                break;
                            }
                        }
                    }
                }
                PresenterCall::Confirmed(_) => keep[i] = false,
                PresenterCall::Removed(k, RemoveReason::Ended) => {
                    ended.insert(*k, i);
                }
                PresenterCall::Removed(..) => {}
            }
        }
        let mut out: Vec<PresenterCall> =
            self.calls.iter().zip(keep).filter(|(_, k)| *k).map(|((_, c), _)| *c).collect();
        out.sort();
        out
    }

    /// Checks the presenter contract: a key is never playing twice at once (a play repeats
    /// only after a cancel), every cancel matches an earlier play, `WhileActive` is not
    /// repeated while shown, `OnActive` never comes while shown nor twice for one instance
    /// (unless a `Removed{Mispredicted}` took the first back), every removal ends a show, and
    /// no key is confirmed twice. The error names the first broken call.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut playing: BTreeMap<CueKey, bool> = BTreeMap::new();
        let mut showing: BTreeMap<CueKey, bool> = BTreeMap::new();
        let mut started: BTreeSet<CueKey> = BTreeSet::new();
        let mut confirmed: BTreeSet<CueKey> = BTreeSet::new();
        for (i, (at, c)) in self.calls.iter().enumerate() {
            let fail = |what: &str| Err(format!("call {i} (frame {at}): {what}: {c:?}"));
            match c {
                PresenterCall::Play(k) => {
                    let p = playing.entry(*k).or_default();
                    if *p {
                        return fail("played twice");
                    }
                    *p = true;
                }
                PresenterCall::Cancel(k) => {
                    let p = playing.entry(*k).or_default();
                    if !*p {
                        return fail("cancel of a cue that is not playing");
                    }
                    *p = false;
                }
                PresenterCall::OnActive(k) => {
                    if showing.get(k).copied().unwrap_or(false) {
                        return fail("OnActive while shown");
                    }
                    if !started.insert(*k) {
                        return fail("OnActive twice for one instance");
                    }
                }
                PresenterCall::WhileActive(k) => {
                    let s = showing.entry(*k).or_default();
                    if *s {
                        return fail("WhileActive twice");
                    }
                    *s = true;
                }
                PresenterCall::Removed(k, reason) => {
                    let s = showing.entry(*k).or_default();
                    if !*s {
                        return fail("removed without a show");
                    }
                    *s = false;
                    if *reason == RemoveReason::Mispredicted {
                        started.remove(k);
                    }
                }
                PresenterCall::Confirmed(k) => {
                    if !confirmed.insert(*k) {
                        return fail("confirmed twice");
                    }
                }
            }
        }
        Ok(())
    }
}
