//! The exactly-once cue director (F-GC-05; the algorithm is explained in `docs/cues.md`).

use crate::cue::CuePolicy;
use crate::cue::{ActiveCue, CueKey, CueKind, CueOrigin, CueParams, CueRecord};
use crate::id::{Entity, TagId};
use crate::num::Frame;
use crate::tag::TagSet;
use crate::world::{FrameOutput, Game, World};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Why a persistent cue's presentation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum RemoveReason {
    /// It ended in the simulation (the effect expired or was removed, the ability ended).
    Ended,
    /// It never existed in the corrected timeline (a rollback removed it).
    Mispredicted,
    /// Presentation stopped showing it (culling).
    Culled,
    /// The presenter was reset (session change).
    Unloaded,
}

/// A cue handed to a [`Presenter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Cue {
    /// Its identity (persistent instances: frame = the frame they became active, kind
    /// `Added`).
    pub key: CueKey,
    /// Its parameters.
    pub params: CueParams,
    /// Its policy.
    pub policy: CuePolicy,
    /// Whether its frame was still unconfirmed when it was shown.
    pub predicted: bool,
    /// For a cue an effect triggered: the source's aggregated tags as the effect's spec
    /// captured them ([`CueRecord::source_tags`]); empty otherwise.
    pub source_tags: TagSet,
    /// For a cue an effect triggered: the aggregated tags of the entity it plays on when the
    /// effect applied, executed or changed state ([`CueRecord::target_tags`]); empty otherwise.
    pub target_tags: TagSet,
}

/// What the game implements to present cues. Every method has an empty default.
///
/// The [`CueDirector`] guarantees: `play` at most once per burst key; `cancel` only for a key
/// that was played and that the corrected timeline no longer contains; `on_active` at most
/// once per persistent instance and only when it started recently; `while_active` once when
/// the presenter starts showing an instance; `removed` once for every instance shown; and
/// `confirmed` once for every cue whose frame became confirmed while it was shown, and for
/// every persistent instance that was shown and ended before its start frame was confirmed
/// (once that frame is) — once per instance, also when a predicted end is taken back and the
/// instance is shown again (`while_active` again, never a second `on_active`). A confirmed persistent instance that began and ended while
/// presentation never saw it — inside one re-simulated batch, or between two reconciles — is
/// presented late, never lost: [`Presenter::happened`] once its end frame is confirmed.
pub trait Presenter {
    /// A burst (`Executed`) starts.
    fn play(&mut self, cue: &Cue) {
        let _ = cue;
    }
    /// A burst that was played is not in the corrected timeline (fade it out).
    fn cancel(&mut self, cue: &Cue) {
        let _ = cue;
    }
    /// A persistent instance became active (an edge in this timeline).
    fn on_active(&mut self, cue: &Cue) {
        let _ = cue;
    }
    /// The presenter starts showing an active persistent instance.
    fn while_active(&mut self, cue: &Cue) {
        let _ = cue;
    }
    /// A shown persistent instance is no longer shown.
    fn removed(&mut self, cue: &Cue, reason: RemoveReason) {
        let _ = (cue, reason);
    }
    /// The cue's frame is confirmed: it can no longer be cancelled.
    fn confirmed(&mut self, cue: &Cue) {
        let _ = cue;
    }
    /// A played burst was found again a few frames away (fuzzy re-timing): the same cue moved
    /// in time instead of being cancelled and replayed.
    fn retimed(&mut self, from: &Cue, to: &Cue) {
        let _ = (from, to);
    }
    /// A persistent instance that really happened — its start and end frames are confirmed —
    /// but was never shown, because it began and ended between two reconciles (typically inside
    /// one rollback batch: a remote player's one-frame ability whose input arrived late). It is
    /// presented late rather than lost. `cue.key.frame` is its start frame; `predicted` is
    /// `false`.
    ///
    /// The default presents it like any other instance, all at once: `on_active`,
    /// `while_active`, `confirmed`, then `removed(Ended)` — so after taking out
    /// predicted-then-cancelled pairs, every mode's presenter calls agree (`docs/cues.md`,
    /// section 5). Override it to treat such instances as a burst instead (play the start
    /// flourish, skip the loop).
    fn happened(&mut self, cue: &Cue) {
        self.on_active(cue);
        self.while_active(cue);
        self.confirmed(cue);
        self.removed(cue, RemoveReason::Ended);
    }
}

/// Counters of what the director did (F-GC-16).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CueCounters {
    /// Bursts played.
    pub played: u64,
    /// Re-emitted bursts recognised as already played.
    pub deduplicated: u64,
    /// Played bursts cancelled.
    pub cancelled: u64,
    /// Cues confirmed.
    pub confirmed: u64,
    /// Bursts moved in time.
    pub retimed: u64,
    /// Persistent `on_active` calls.
    pub on_active: u64,
    /// Persistent `while_active` calls.
    pub while_active: u64,
    /// Persistent `removed` calls.
    pub removed: u64,
    /// `removed` calls with [`RemoveReason::Mispredicted`].
    pub mispredicted: u64,
    /// Persistent instances presented late ([`Presenter::happened`]): confirmed, but begun and
    /// ended between two reconciles. Each also counts as one `on_active`, `while_active`,
    /// `confirmed` and `removed`.
    pub late: u64,
    /// Frames where one target received more identical cues than the spam limit.
    pub spam_warnings: u64,
}

/// What a log entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum CueLogKind {
    /// `play`.
    Play,
    /// A duplicate skipped.
    Deduplicated,
    /// `cancel`.
    Cancel,
    /// `on_active`.
    OnActive,
    /// `while_active`.
    WhileActive,
    /// `removed`.
    Removed(RemoveReason),
    /// `confirmed`.
    Confirmed,
    /// `retimed` (to this frame).
    Retimed(Frame),
    /// More than the spam limit of identical cues on one target in one frame.
    Spam(u32),
    /// [`Presenter::happened`]: a confirmed persistent instance presented late.
    Late,
}

/// One entry of the director's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CueLogEntry {
    /// The current frame when it happened.
    pub at: Frame,
    /// The cue.
    pub key: CueKey,
    /// What happened.
    pub kind: CueLogKind,
    /// The cue's policy.
    pub policy: CuePolicy,
}

#[derive(Clone, Copy, Debug)]
struct Played {
    cue: Cue,
    confirmed: bool,
}

#[derive(Clone, Copy, Debug)]
struct Shown {
    cue: Cue,
    confirmed: bool,
}

type Identity = (Entity, TagId, CueOrigin);

/// Reconciles what presentation shows with what the (corrected) simulation says, once per
/// rollback batch.
///
/// # Protocol
///
/// For every batch of GGRS requests (or every driver step):
/// 1. on `LoadGameState(frame)`: [`CueDirector::rewound_to`]`(frame)`;
/// 2. after every `AdvanceFrame`: [`CueDirector::ingest`]`(world.output())`;
/// 3. once after the batch: [`CueDirector::reconcile`]`(&world, confirmed_frame, presenter)`.
///
/// After loading a snapshot outside a session (a replay seek, a spectator join), call
/// [`CueDirector::reset_from`]: every live persistent instance is shown with `while_active`
/// only, never a false `on_active`.
///
/// ```
/// use rollback_abilities::present::{Cue, CueDirector, Presenter};
/// struct Sounds(Vec<String>);
/// impl Presenter for Sounds {
///     fn play(&mut self, cue: &Cue) { self.0.push(format!("play {:?}", cue.key.tag)); }
///     fn cancel(&mut self, cue: &Cue) { self.0.push(format!("cancel {:?}", cue.key.tag)); }
/// }
/// let director = CueDirector::new();
/// assert_eq!(director.counters().played, 0);
/// ```
#[derive(Debug)]
pub struct CueDirector {
    played: BTreeMap<Frame, Vec<Played>>,
    held: BTreeMap<Frame, Vec<Cue>>,
    batch: BTreeMap<Frame, Vec<CueRecord>>,
    rewind_from: Option<Frame>,
    /// Frames simulated, reconciled and confirmed: final and presented. A session may simulate
    /// one again (GGRS loads its last saved state, which can be a confirmed frame): its
    /// records are not taken a second time.
    settled: Option<Frame>,
    shown: BTreeMap<Identity, Shown>,
    active: Vec<ActiveCue>,
    counters: CueCounters,
    log: VecDeque<CueLogEntry>,
    log_capacity: usize,
    recent_window: u32,
    fuzzy_frames: u32,
    spam_limit: u32,
    last_confirmed: Option<Frame>,
    /// Entities presentation does not show (out of view).
    culled: BTreeSet<Entity>,
    /// Entities back in view since the last diff (their instances get `while_active` only).
    reentered: BTreeSet<Entity>,
    /// `Added`/`Removed` records of frames not yet confirmed, as last simulated: once a frame
    /// is confirmed they say which persistent instances really began and ended in it.
    edges: BTreeMap<Frame, Vec<CueRecord>>,
    /// Persistent instances (identity, start frame) shown in this timeline and not taken back
    /// as mispredicted, whose end is not confirmed yet.
    seen: BTreeSet<(Identity, Frame)>,
    /// Instances shown and ended before their start frame was confirmed (confirmed when it is).
    ended_unconfirmed: BTreeMap<(Identity, Frame), Cue>,
    /// Instances whose start is confirmed and whose end is not: start frame and parameters.
    open: BTreeMap<Identity, (Frame, CueRecord)>,
    /// Instances the presenter has been told are confirmed, whose end is not confirmed yet. A
    /// predicted end can be taken back (the instance is shown again): it is not confirmed twice.
    confirmed_shown: BTreeSet<(Identity, Frame)>,
}

impl Default for CueDirector {
    fn default() -> Self {
        Self::new()
    }
}

impl CueDirector {
    /// A director with a recent window of 8 frames, no fuzzy re-timing, a spam limit of 16
    /// identical cues per target per frame and a log of the last 1024 entries.
    pub fn new() -> CueDirector {
        CueDirector {
            played: BTreeMap::new(),
            held: BTreeMap::new(),
            batch: BTreeMap::new(),
            rewind_from: None,
            settled: None,
            shown: BTreeMap::new(),
            active: Vec::new(),
            counters: CueCounters::default(),
            log: VecDeque::new(),
            log_capacity: 1024,
            recent_window: 8,
            fuzzy_frames: 0,
            spam_limit: 16,
            last_confirmed: None,
            culled: BTreeSet::new(),
            reentered: BTreeSet::new(),
            edges: BTreeMap::new(),
            seen: BTreeSet::new(),
            ended_unconfirmed: BTreeMap::new(),
            open: BTreeMap::new(),
            confirmed_shown: BTreeSet::new(),
        }
    }

    /// Instances that started at most this many frames ago get `on_active` (default: the
    /// prediction window, 8).
    #[must_use]
    pub fn with_recent_window(mut self, frames: u32) -> Self {
        self.recent_window = frames;
        self
    }

    /// Fuzzy re-timing: a cancelled burst whose twin (same target, tag, origin, ordinal)
    /// appears within `frames` frames is moved instead of cancelled and replayed (0: off).
    #[must_use]
    pub fn with_fuzzy_retiming(mut self, frames: u32) -> Self {
        self.fuzzy_frames = frames;
        self
    }

    /// More identical cues than this on one target in one frame log a spam warning.
    #[must_use]
    pub fn with_spam_limit(mut self, limit: u32) -> Self {
        self.spam_limit = limit;
        self
    }

    /// Keep the last `n` log entries (0: no log).
    #[must_use]
    pub fn with_log_capacity(mut self, n: usize) -> Self {
        self.log_capacity = n;
        self
    }

    /// Culls an entity (it left the view: its shown persistent cues get
    /// `removed(Culled)` at the next reconcile) or brings it back (its live persistent cues get
    /// `while_active` only, never a second `on_active`).
    pub fn set_culled(&mut self, e: Entity, culled: bool) {
        if culled {
            self.culled.insert(e);
            self.reentered.remove(&e);
        } else if self.culled.remove(&e) {
            self.reentered.insert(e);
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> CueCounters {
        self.counters
    }

    /// The log, oldest first.
    pub fn log(&self) -> impl Iterator<Item = &CueLogEntry> + '_ {
        self.log.iter()
    }

    /// The persistent instances currently shown.
    pub fn shown(&self) -> impl Iterator<Item = &Cue> + '_ {
        self.shown.values().map(|s| &s.cue)
    }

    /// Unconfirmed bursts played so far (count).
    pub fn unconfirmed_played(&self) -> usize {
        self.played.values().map(Vec::len).sum()
    }

    fn record(&mut self, at: Frame, cue: &Cue, kind: CueLogKind) {
        if self.log_capacity == 0 {
            return;
        }
        if self.log.len() == self.log_capacity {
            self.log.pop_front();
        }
        self.log.push_back(CueLogEntry { at, key: cue.key, kind, policy: cue.policy });
    }

    /// The session loaded the state saved for `frame`: frames from `frame` on will be
    /// re-simulated (and re-ingested), in this batch after a GGRS rollback, or in later ones when
    /// a new session starts over from an older state (a rejoin's). Bursts played for a frame
    /// are checked when that frame comes again: those it no longer has are cancelled, never
    /// confirmed. Frames already confirmed and reconciled are final: simulating them again
    /// changes nothing that was presented.
    pub fn rewound_to(&mut self, frame: Frame) {
        let frame = self.settled.map_or(frame, |s| frame.max(s + 1));
        self.rewind_from = Some(self.rewind_from.map_or(frame, |r| r.min(frame)));
        self.batch.retain(|f, _| *f < frame);
        self.edges.retain(|f, _| *f < frame);
    }

    /// Takes the cue records of one advanced frame. A frame already confirmed and reconciled
    /// that the session simulates again is final: its records were presented and are skipped.
    pub fn ingest(&mut self, out: &FrameOutput) {
        if self.settled.is_some_and(|s| out.frame <= s) {
            return;
        }
        let mut records = Vec::with_capacity(out.cues.len());
        let mut edges = Vec::new();
        for r in &out.cues {
            if r.key.kind != CueKind::Executed {
                edges.push(*r);
            }
            records.push(*r);
        }
        self.batch.insert(out.frame, records);
        if edges.is_empty() {
            self.edges.remove(&out.frame);
        } else {
            self.edges.insert(out.frame, edges);
        }
    }

    /// Reconciles after a batch: plays new bursts, skips duplicates, cancels mispredicted
    /// bursts, diffs persistent instances against the world's snapshot, and confirms
    /// everything at or before `confirmed` (the session's confirmed frame; `None` if nothing is
    /// confirmed yet).
    pub fn reconcile<G: Game, P: Presenter + ?Sized>(
        &mut self,
        world: &World<G>,
        confirmed: Option<Frame>,
        presenter: &mut P,
    ) {
        let now = world.frame();
        let batch = core::mem::take(&mut self.batch);
        let rewind = self.rewind_from.take();

        // Bursts: dedupe, collect plays and cancels.
        let mut to_play: Vec<Cue> = Vec::new();
        let mut to_cancel: Vec<Cue> = Vec::new();
        for (&frame, records) in &batch {
            let bursts: Vec<&CueRecord> =
                records.iter().filter(|r| r.key.kind == CueKind::Executed).collect();
            self.spam_check(now, frame, &bursts, world);
            let resimulated = rewind.is_some_and(|r| frame >= r);
            if resimulated {
                // Played keys of this frame that did not reappear were mispredicted.
                if let Some(list) = self.played.get_mut(&frame) {
                    list.retain(|p| {
                        let keep = bursts.iter().any(|r| r.key == p.cue.key);
                        if !keep && p.cue.policy != CuePolicy::PredictedNoCancel {
                            to_cancel.push(p.cue);
                        }
                        keep
                    });
                }
                if let Some(list) = self.held.get_mut(&frame) {
                    list.retain(|h| bursts.iter().any(|r| r.key == h.key));
                }
            }
            for r in bursts {
                let policy = world.cue_policy(r.key.tag);
                let cue = Cue {
                    key: r.key,
                    params: r.params,
                    policy,
                    predicted: confirmed.is_none_or(|c| frame > c),
                    source_tags: r.source_tags,
                    target_tags: r.target_tags,
                };
                let already =
                    self.played.get(&frame).is_some_and(|l| l.iter().any(|p| p.cue.key == r.key));
                let waiting =
                    self.held.get(&frame).is_some_and(|l| l.iter().any(|h| h.key == r.key));
                if already || waiting {
                    self.counters.deduplicated += 1;
                    self.record(now, &cue, CueLogKind::Deduplicated);
                } else if policy == CuePolicy::Confirmed {
                    self.held.entry(frame).or_default().push(cue);
                } else {
                    to_play.push(cue);
                }
            }
        }
        // A rewind past the frames simulated again so far (a session that starts over from an
        // older state and has not caught up yet: a rejoin's new session) stays pending for the
        // rest: what was played there is checked when those frames come again.
        if let Some(r) = rewind {
            let next = world.next_frame();
            let ahead = self.played.range(next..).next().is_some()
                || self.held.range(next..).next().is_some();
            if ahead {
                self.rewind_from = Some(r.max(next));
            }
        }
        // Fuzzy re-timing: a cancel and a play of the same identity within k frames move.
        if self.fuzzy_frames > 0 {
            let mut i = 0;
            while i < to_cancel.len() {
                let c = to_cancel[i];
                let twin = to_play.iter().position(|p| {
                    p.key.target == c.key.target
                        && p.key.tag == c.key.tag
                        && p.key.origin == c.key.origin
                        && p.key.ordinal == c.key.ordinal
                        && p.key.frame.abs_diff(c.key.frame) <= self.fuzzy_frames
                });
                if let Some(j) = twin {
                    let p = to_play.remove(j);
                    to_cancel.remove(i);
                    presenter.retimed(&c, &p);
                    self.counters.retimed += 1;
                    self.record(now, &p, CueLogKind::Retimed(p.key.frame));
                    self.played
                        .entry(p.key.frame)
                        .or_default()
                        .push(Played { cue: p, confirmed: false });
                } else {
                    i += 1;
                }
            }
        }
        for c in &to_cancel {
            presenter.cancel(c);
            self.counters.cancelled += 1;
            self.record(now, c, CueLogKind::Cancel);
        }
        for p in to_play {
            presenter.play(&p);
            self.counters.played += 1;
            self.record(now, &p, CueLogKind::Play);
            self.played.entry(p.key.frame).or_default().push(Played { cue: p, confirmed: false });
        }

        // Persistent instances: diff against the snapshot. An instance that vanished ended if
        // this batch's frames (as finally simulated) have its `Removed` record.
        let ended: BTreeSet<Identity> = batch
            .values()
            .flatten()
            .filter(|r| r.key.kind == CueKind::Removed)
            .map(|r| (r.key.target, r.key.tag, r.key.origin))
            .collect();
        self.diff_persistent(world, confirmed, rewind.is_some(), false, &ended, presenter);

        // Confirmation.
        if let Some(c) = confirmed {
            // Bursts of frames a pending rewind will simulate again are not the confirmed
            // timeline's yet (a new session can confirm a frame before it simulates it).
            match self.rewind_from {
                Some(p) => {
                    if let Some(last) = p.checked_sub(1) {
                        self.confirm_through(c.min(last), now, presenter);
                    }
                }
                None => self.confirm_through(c, now, presenter),
            }
            self.settle_edges(world, c, now, presenter);
        }
        self.last_confirmed = confirmed.or(self.last_confirmed);
        // Frames both simulated and confirmed are settled (a session can confirm frames it has
        // not simulated yet: the remote inputs arrived before the local input delay ran out).
        if let (Some(c), Some(last)) = (confirmed, world.next_frame().checked_sub(1)) {
            let s = c.min(last);
            self.settled = Some(self.settled.map_or(s, |old| old.max(s)));
        }
    }

    fn spam_check<G: Game>(
        &mut self,
        now: Frame,
        frame: Frame,
        bursts: &[&CueRecord],
        world: &World<G>,
    ) {
        if self.spam_limit == 0 || bursts.len() as u32 <= self.spam_limit {
            return;
        }
        let mut counts: BTreeMap<(Entity, TagId), u32> = BTreeMap::new();
        for r in bursts {
            *counts.entry((r.key.target, r.key.tag)).or_default() += 1;
        }
        for ((target, tag), n) in counts {
            if n > self.spam_limit {
                self.counters.spam_warnings += 1;
                let key = CueKey {
                    frame,
                    target,
                    tag,
                    kind: CueKind::Executed,
                    origin: CueOrigin::NONE,
                    ordinal: 0,
                };
                let cue = Cue {
                    key,
                    params: CueParams::default(),
                    policy: world.cue_policy(tag),
                    predicted: true,
                    source_tags: TagSet::EMPTY,
                    target_tags: TagSet::EMPTY,
                };
                self.record(now, &cue, CueLogKind::Spam(n));
            }
        }
    }

    fn diff_persistent<G: Game, P: Presenter + ?Sized>(
        &mut self,
        world: &World<G>,
        confirmed: Option<Frame>,
        rolled_back: bool,
        rebuild: bool,
        ended: &BTreeSet<Identity>,
        presenter: &mut P,
    ) {
        let now = world.frame();
        let mut active = core::mem::take(&mut self.active);
        world.active_cues(&mut active);
        // Vanished instances first (so a handler can reuse what they held). An identity live
        // with another start frame is another instance (an effect switched off and on again).
        let live: BTreeMap<Identity, Frame> =
            active.iter().map(|a| ((a.target, a.tag, a.origin), a.since)).collect();
        let gone: Vec<Identity> = self
            .shown
            .iter()
            .filter(|(id, s)| live.get(id) != Some(&s.cue.key.frame) || self.culled.contains(&id.0))
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            if let Some(s) = self.shown.remove(&id) {
                let instance = (id, s.cue.key.frame);
                let reason = if live.get(&id) == Some(&s.cue.key.frame) {
                    RemoveReason::Culled
                } else if ended.contains(&id)
                    || !rolled_back
                    || self.confirmed_shown.contains(&instance)
                {
                    RemoveReason::Ended
                } else {
                    RemoveReason::Mispredicted
                };
                presenter.removed(&s.cue, reason);
                self.counters.removed += 1;
                match reason {
                    RemoveReason::Mispredicted => {
                        self.counters.mispredicted += 1;
                        self.seen.remove(&instance);
                    }
                    RemoveReason::Ended if !s.confirmed => {
                        self.ended_unconfirmed.insert(instance, s.cue);
                    }
                    _ => {}
                }
                self.record(now, &s.cue, CueLogKind::Removed(reason));
            }
        }
        for a in &active {
            let id = (a.target, a.tag, a.origin);
            if self.shown.contains_key(&id) || self.culled.contains(&a.target) {
                continue;
            }
            let policy = world.cue_policy(a.tag);
            let is_confirmed = confirmed.is_some_and(|c| a.since <= c);
            if policy == CuePolicy::Confirmed && !is_confirmed {
                continue;
            }
            let key = CueKey {
                frame: a.since,
                target: a.target,
                tag: a.tag,
                kind: CueKind::Added,
                origin: a.origin,
                ordinal: 0,
            };
            let cue = Cue {
                key,
                params: a.params,
                policy,
                predicted: !is_confirmed,
                source_tags: a.source_tags,
                target_tags: a.target_tags,
            };
            let instance = (id, a.since);
            // Shown before in this timeline: a predicted end was taken back. The instance is
            // shown again (`while_active`), never started twice, never confirmed twice.
            let shown_before = self.seen.contains(&instance);
            let recent = now.saturating_sub(a.since) <= self.recent_window;
            if recent && !rebuild && !shown_before && !self.reentered.contains(&a.target) {
                presenter.on_active(&cue);
                self.counters.on_active += 1;
                self.record(now, &cue, CueLogKind::OnActive);
            }
            presenter.while_active(&cue);
            self.counters.while_active += 1;
            self.record(now, &cue, CueLogKind::WhileActive);
            self.ended_unconfirmed.remove(&instance);
            let confirmed = self.confirmed_shown.contains(&instance);
            self.shown.insert(id, Shown { cue, confirmed });
            self.seen.insert(instance);
        }
        self.reentered.clear();
        self.active = active;
    }

    fn confirm_through<P: Presenter + ?Sized>(&mut self, c: Frame, now: Frame, presenter: &mut P) {
        let frames: Vec<Frame> = self.played.range(..=c).map(|(f, _)| *f).collect();
        for f in frames {
            if let Some(list) = self.played.remove(&f) {
                for p in list.iter().filter(|p| !p.confirmed) {
                    presenter.confirmed(&p.cue);
                    self.counters.confirmed += 1;
                    self.record(now, &p.cue, CueLogKind::Confirmed);
                }
            }
        }
        let frames: Vec<Frame> = self.held.range(..=c).map(|(f, _)| *f).collect();
        for f in frames {
            if let Some(list) = self.held.remove(&f) {
                for mut h in list {
                    h.predicted = false;
                    presenter.play(&h);
                    self.counters.played += 1;
                    self.record(now, &h, CueLogKind::Play);
                    presenter.confirmed(&h);
                    self.counters.confirmed += 1;
                    self.record(now, &h, CueLogKind::Confirmed);
                }
            }
        }
        let ids: Vec<Identity> = self
            .shown
            .iter()
            .filter(|(_, s)| !s.confirmed && s.cue.key.frame <= c)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            if let Some(s) = self.shown.get_mut(&id) {
                s.confirmed = true;
                let cue = s.cue;
                self.confirmed_shown.insert((id, cue.key.frame));
                presenter.confirmed(&cue);
                self.counters.confirmed += 1;
                self.record(now, &cue, CueLogKind::Confirmed);
            }
        }
    }

    /// Walks the final `Added`/`Removed` records of newly confirmed frames (through `c`):
    /// confirms shown instances that ended before their start was confirmed, and presents late
    /// ([`Presenter::happened`]) confirmed instances that began and ended unseen.
    fn settle_edges<G: Game, P: Presenter + ?Sized>(
        &mut self,
        world: &World<G>,
        c: Frame,
        now: Frame,
        presenter: &mut P,
    ) {
        let frames: Vec<Frame> = self.edges.range(..=c).map(|(f, _)| *f).collect();
        for f in frames {
            let Some(records) = self.edges.remove(&f) else { continue };
            for r in records {
                let id = (r.key.target, r.key.tag, r.key.origin);
                match r.key.kind {
                    CueKind::Added => {
                        if let Some(cue) = self.ended_unconfirmed.remove(&(id, f)) {
                            self.confirmed_shown.insert((id, f));
                            presenter.confirmed(&cue);
                            self.counters.confirmed += 1;
                            self.record(now, &cue, CueLogKind::Confirmed);
                        }
                        self.open.insert(id, (f, r));
                    }
                    CueKind::Removed => {
                        // The instance of this identity live before `f` ended for good.
                        self.confirmed_shown.retain(|(i, s)| *i != id || *s >= f);
                        let Some((since, added)) = self.open.remove(&id) else { continue };
                        let was_seen = self.seen.remove(&(id, since));
                        let showing = self.shown.get(&id).is_some_and(|s| s.cue.key.frame == since);
                        if was_seen || showing || self.culled.contains(&id.0) {
                            continue;
                        }
                        let key = CueKey {
                            frame: since,
                            target: id.0,
                            tag: id.1,
                            kind: CueKind::Added,
                            origin: id.2,
                            ordinal: 0,
                        };
                        let cue = Cue {
                            key,
                            params: added.params,
                            policy: world.cue_policy(id.1),
                            predicted: false,
                            source_tags: added.source_tags,
                            target_tags: added.target_tags,
                        };
                        presenter.happened(&cue);
                        self.counters.late += 1;
                        self.counters.on_active += 1;
                        self.counters.while_active += 1;
                        self.counters.confirmed += 1;
                        self.counters.removed += 1;
                        self.record(now, &cue, CueLogKind::Late);
                    }
                    CueKind::Executed => {}
                }
            }
        }
        // Anything older left here was shown on a prediction, ended in it, and then never
        // happened (a later correction erased its start): there is nothing left to confirm.
        let (open, shown, confirmed_shown) = (&self.open, &self.shown, &self.confirmed_shown);
        self.seen.retain(|instance @ (id, s)| {
            *s > c
                || open.get(id).is_some_and(|o| o.0 == *s)
                || shown.get(id).is_some_and(|x| x.cue.key.frame == *s)
                || confirmed_shown.contains(instance)
        });
        self.ended_unconfirmed.retain(|(_, s), _| *s > c);
    }

    /// Rebuilds presentation from a world's snapshot (after a snapshot load, a replay seek or
    /// a spectator join): shown instances that are gone get `removed(Unloaded)`, unconfirmed
    /// bursts are forgotten, and every live persistent instance gets `while_active` only.
    pub fn reset_from<G: Game, P: Presenter + ?Sized>(
        &mut self,
        world: &World<G>,
        presenter: &mut P,
    ) {
        self.played.clear();
        self.held.clear();
        self.batch.clear();
        self.rewind_from = None;
        self.settled = None;
        self.forget_edges();
        let now = world.frame();
        let shown = core::mem::take(&mut self.shown);
        let mut active = core::mem::take(&mut self.active);
        world.active_cues(&mut active);
        let live: BTreeSet<Identity> = active.iter().map(|a| (a.target, a.tag, a.origin)).collect();
        for (id, s) in shown {
            if live.contains(&id) {
                self.shown.insert(id, s);
            } else {
                presenter.removed(&s.cue, RemoveReason::Unloaded);
                self.counters.removed += 1;
                self.record(now, &s.cue, CueLogKind::Removed(RemoveReason::Unloaded));
            }
        }
        self.active = active;
        let shown = &self.shown;
        self.confirmed_shown.retain(|(id, s)| shown.get(id).is_some_and(|x| x.cue.key.frame == *s));
        self.diff_persistent(world, self.last_confirmed, false, true, &BTreeSet::new(), presenter);
    }

    /// Ends presentation: every shown instance gets `removed(Unloaded)` (session change).
    pub fn unload<P: Presenter + ?Sized>(&mut self, now: Frame, presenter: &mut P) {
        let shown = core::mem::take(&mut self.shown);
        for (_, s) in shown {
            presenter.removed(&s.cue, RemoveReason::Unloaded);
            self.counters.removed += 1;
            self.record(now, &s.cue, CueLogKind::Removed(RemoveReason::Unloaded));
        }
        self.played.clear();
        self.held.clear();
        self.batch.clear();
        self.rewind_from = None;
        self.settled = None;
        self.forget_edges();
        self.confirmed_shown.clear();
    }

    /// Forgets the instance history (a snapshot load outside the session, a session change):
    /// instances of the old timeline are neither confirmed nor presented late.
    fn forget_edges(&mut self) {
        self.edges.clear();
        self.seen.clear();
        self.ended_unconfirmed.clear();
        self.open.clear();
    }
}

/// Drives a [`CueDirector`] and a [`Presenter`] from a rollback driver or session batch.
#[derive(Debug)]
pub struct CueSession<'a, P: Presenter> {
    /// The director.
    pub director: &'a mut CueDirector,
    /// The presenter.
    pub presenter: &'a mut P,
}

impl<G: Game, P: Presenter> crate::observe::BatchObserver<G> for CueSession<'_, P> {
    fn loaded(&mut self, frame: Frame) {
        self.director.rewound_to(frame);
    }

    fn advanced(&mut self, world: &World<G>) {
        self.director.ingest(world.output());
    }

    fn batch_end(&mut self, world: &World<G>, confirmed: Option<Frame>) {
        self.director.reconcile(world, confirmed, self.presenter);
    }
}
