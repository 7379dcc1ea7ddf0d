//! The exactly-once UI event director (the cue director's ledger, for everything a UI reads).

use super::{
    Delivery, EventFilter, Subscription, UiCall, UiEvent, UiEventKey, UiEventKind, UiNotice,
    UiPayload,
};
use crate::ability::AbilityEvent;
use crate::id::{AbilityDefId, EffectDefId, EffectHandle, Entity};
use crate::num::Frame;
use crate::world::{EffectEvent, Game, World};
use std::collections::{BTreeMap, VecDeque};

/// What the UI implements to hear about events (every method has an empty default). Pass it
/// to [`EventDirector::deliver`], or use an [`EventSession`] with a driver.
///
/// The [`EventDirector`] guarantees, per subscription: `shown` at most once per event while it
/// is not retracted (an event a correction erased and a later one brought back is shown again);
/// `retracted` only for an event that was shown and that the corrected timeline no longer
/// contains; `confirmed` once for every shown event whose frame became confirmed. A
/// [`Delivery::Confirmed`] subscription gets `shown` (with `predicted == false`) and
/// `confirmed` together, and never `retracted`.
pub trait UiListener {
    /// The event happened (show it). `predicted`: its frame is not confirmed yet.
    fn shown(&mut self, sub: Subscription, event: &UiEvent, predicted: bool) {
        let _ = (sub, event, predicted);
    }
    /// A shown event never happened in the corrected timeline (take it back).
    fn retracted(&mut self, sub: Subscription, event: &UiEvent) {
        let _ = (sub, event);
    }
    /// A shown event's frame is confirmed: it can no longer be retracted.
    fn confirmed(&mut self, sub: Subscription, event: &UiEvent) {
        let _ = (sub, event);
    }
}

/// Counters of what an [`EventDirector`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EventCounters {
    /// Events kept (some subscription wanted them), first simulations and re-simulations.
    pub ingested: u64,
    /// Re-emitted events recognised as already known (re-simulated frames).
    pub deduplicated: u64,
    /// `Shown` notices.
    pub shown: u64,
    /// `Retracted` notices.
    pub retracted: u64,
    /// `Confirmed` notices.
    pub confirmed: u64,
    /// Notices dropped because the queue was full (the UI did not take them).
    pub dropped: u64,
}

/// An event of an unconfirmed frame, with the predicted subscriptions it was shown to.
#[derive(Clone, Debug)]
struct Entry {
    event: UiEvent,
    shown_to: Vec<Subscription>,
}

/// Turns the re-simulated stream of a frame's events into exactly-once notices for the UI's
/// subscriptions (see the [module documentation](super)).
///
/// # Protocol
///
/// For every batch of GGRS requests (or every driver step), as for the
/// [`CueDirector`](crate::present::CueDirector):
/// 1. on `LoadGameState(frame)`: [`EventDirector::rewound_to`]`(frame)`;
/// 2. after every `AdvanceFrame`: [`EventDirector::ingest`]`(&world)`;
/// 3. once after the batch: [`EventDirector::reconcile`]`(confirmed_frame)`.
///
/// Then hand the queued notices to the UI: [`EventDirector::deliver`] or
/// [`EventDirector::drain`].
///
/// ```
/// use rollback_abilities::prelude::*;
/// use rollback_abilities::ui::{EventDirector, EventFilter, UiCall};
/// use std::sync::Arc;
/// # struct G;
/// # impl Game for G { type Input = u8; type Component = (); type Global = (); }
/// let content = Arc::new(Content::from_ron_str(r#"(
///     attribute_sets: { "Vitals": (attributes: { "Health": (default: 100) }) },
///     effects: { "Hit": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -7))]) },
/// )"#)?);
/// let mut world = World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default())?;
/// let hero = world.spawn_actor(&[content.attr_set("Vitals")?]).unwrap();
/// let mut feed = EventDirector::new();
/// let damage = feed.subscribe(EventFilter::executions(hero));
///
/// let before = world.snapshot();
/// let hit = |w: &mut World<G>| {
///     let spec = w.make_spec(w.content().effect("Hit").unwrap(), 1, hero);
///     w.apply_effect(spec, hero).unwrap();
/// };
/// world.step_with(&[], hit);                 // frame 0, first simulation
/// feed.ingest(&world);
/// feed.reconcile(None);
/// world.load(&before)?;                      // a rollback re-simulates frame 0 identically
/// feed.rewound_to(0);
/// world.step_with(&[], hit);
/// feed.ingest(&world);
/// feed.reconcile(Some(0));                   // …and confirms it
/// let calls: Vec<UiCall> = feed.drain(damage).into_iter().map(|n| n.call).collect();
/// assert_eq!(calls, [UiCall::Shown, UiCall::Confirmed]); // one damage number, not two
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct EventDirector {
    subs: BTreeMap<Subscription, EventFilter>,
    next_sub: u32,
    /// Events of unconfirmed frames, as last simulated (emission order).
    ledger: BTreeMap<Frame, Vec<Entry>>,
    /// Events ingested in this batch.
    batch: BTreeMap<Frame, Vec<UiEvent>>,
    rewind_from: Option<Frame>,
    last_confirmed: Option<Frame>,
    /// The newest frame ingested.
    newest: Option<Frame>,
    /// Frames simulated, reconciled and confirmed: final and delivered. A session can confirm
    /// frames it has not simulated yet (the remote inputs arrived before the local input delay
    /// ran out); those are taken when they are simulated.
    settled: Option<Frame>,
    queue: VecDeque<UiNotice>,
    queue_capacity: usize,
    counters: EventCounters,
}

impl Default for EventDirector {
    fn default() -> Self {
        Self::new()
    }
}

impl EventDirector {
    /// A director without subscriptions, keeping at most 65 536 undelivered notices.
    pub fn new() -> EventDirector {
        EventDirector {
            subs: BTreeMap::new(),
            next_sub: 0,
            ledger: BTreeMap::new(),
            batch: BTreeMap::new(),
            rewind_from: None,
            last_confirmed: None,
            newest: None,
            settled: None,
            queue: VecDeque::new(),
            queue_capacity: 65_536,
            counters: EventCounters::default(),
        }
    }

    /// Keep at most `n` undelivered notices (the oldest are dropped and counted).
    #[must_use]
    pub fn with_queue_capacity(mut self, n: usize) -> Self {
        self.queue_capacity = n.max(1);
        self
    }

    /// Subscribes to the events a filter accepts, from the next ingested frame on (GAS: an
    /// async task's `Activate`).
    pub fn subscribe(&mut self, filter: EventFilter) -> Subscription {
        let id = Subscription(self.next_sub);
        self.next_sub = self.next_sub.wrapping_add(1);
        self.subs.insert(id, filter);
        id
    }

    /// Ends a subscription (GAS: `EndTask`): its undelivered notices are dropped and it hears
    /// nothing more.
    pub fn unsubscribe(&mut self, sub: Subscription) {
        self.subs.remove(&sub);
        self.queue.retain(|n| n.subscription != sub);
        for entries in self.ledger.values_mut() {
            for e in entries {
                e.shown_to.retain(|s| *s != sub);
            }
        }
    }

    /// The subscriptions and their filters.
    pub fn subscriptions(&self) -> impl Iterator<Item = (Subscription, &EventFilter)> + '_ {
        self.subs.iter().map(|(s, f)| (*s, f))
    }

    /// The counters so far.
    pub fn counters(&self) -> EventCounters {
        self.counters
    }

    /// Events of unconfirmed frames the director keeps (count).
    pub fn unconfirmed(&self) -> usize {
        self.ledger.values().map(Vec::len).sum()
    }

    /// The newest frame confirmed so far.
    pub fn last_confirmed(&self) -> Option<Frame> {
        self.last_confirmed
    }

    /// The session loaded the state saved for `frame`: frames from `frame` on will be
    /// re-simulated (and re-ingested), in this batch after a GGRS rollback, or in later ones when
    /// a new session starts over from an older state (a rejoin's). Events shown for a frame are
    /// checked when that frame comes again: those it no longer has are retracted, never
    /// confirmed, and those it has again are not shown twice. Frames already confirmed and
    /// reconciled are final: simulating them again changes nothing that was delivered.
    pub fn rewound_to(&mut self, frame: Frame) {
        let frame = self.settled.map_or(frame, |s| frame.max(s + 1));
        self.rewind_from = Some(self.rewind_from.map_or(frame, |r| r.min(frame)));
        self.batch.retain(|f, _| *f < frame);
        // Nothing from `frame` on is simulated in the timeline that continues.
        self.newest = frame.checked_sub(1).and_then(|n| self.newest.map(|old| old.min(n)));
    }

    /// Takes the events of the frame the world just advanced (`world.output()`). Frames already
    /// confirmed and reconciled are ignored (they cannot change); a frame confirmed before it
    /// was first simulated is taken.
    pub fn ingest<G: Game>(&mut self, world: &World<G>) {
        let out = world.output();
        if self.settled.is_some_and(|s| out.frame <= s) {
            return;
        }
        self.newest = Some(out.frame);
        if self.subs.is_empty() {
            self.batch.insert(out.frame, Vec::new());
            return;
        }
        let mut events = collect(world);
        events.retain(|e| self.subs.values().any(|f| f.matches(e)));
        self.counters.ingested += events.len() as u64;
        self.batch.insert(out.frame, events);
    }

    /// Reconciles after a batch: queues `Shown` for new events, `Retracted` for shown events
    /// the corrected timeline no longer has, skips re-emitted ones, and confirms everything at
    /// or before `confirmed` (the session's confirmed frame; `None` if nothing is confirmed
    /// yet).
    pub fn reconcile(&mut self, confirmed: Option<Frame>) {
        let batch = core::mem::take(&mut self.batch);
        let rewind = self.rewind_from.take();
        let mut retractions: Vec<UiNotice> = Vec::new();
        let mut shows: Vec<UiNotice> = Vec::new();
        // Frames rewound and not simulated again, up to the newest frame simulated since, are
        // not in the timeline any more. Frames past it (a session that starts over from an
        // older state and has not caught up yet: a rejoin's new session) keep what was shown
        // there until they come again, and the rewind stays pending for them.
        let simulated = batch.keys().next_back().copied();
        if let Some(r) = rewind {
            let end = simulated.map_or(r, |s| s.max(r.saturating_sub(1)) + 1);
            let gone: Vec<Frame> = self
                .ledger
                .range(r..end)
                .map(|(f, _)| *f)
                .filter(|f| !batch.contains_key(f))
                .collect();
            for f in gone {
                for e in self.ledger.remove(&f).unwrap_or_default() {
                    retract(&e, &mut retractions);
                }
            }
            if self.ledger.range(end..).next().is_some() {
                self.rewind_from = Some(end);
            }
        }
        for (frame, events) in batch {
            let old = self.ledger.remove(&frame).unwrap_or_default();
            let by_key: BTreeMap<UiEventKey, usize> =
                old.iter().enumerate().map(|(i, e)| (e.event.key, i)).collect();
            let mut kept = vec![false; old.len()];
            let mut entries = Vec::with_capacity(events.len());
            let predicted = confirmed.is_none_or(|c| frame > c);
            for event in events {
                let same = by_key.get(&event.key).copied().filter(|i| old[*i].event == event);
                if let Some(i) = same {
                    kept[i] = true;
                    self.counters.deduplicated += 1;
                    entries.push(old[i].clone());
                    continue;
                }
                let mut shown_to = Vec::new();
                for (sub, f) in &self.subs {
                    if f.delivery_mode() == Delivery::Predicted && f.matches(&event) {
                        shown_to.push(*sub);
                        shows.push(UiNotice {
                            subscription: *sub,
                            call: UiCall::Shown,
                            event,
                            predicted,
                        });
                    }
                }
                entries.push(Entry { event, shown_to });
            }
            for (e, k) in old.iter().zip(kept) {
                if !k {
                    retract(e, &mut retractions);
                }
            }
            if !entries.is_empty() {
                self.ledger.insert(frame, entries);
            }
        }
        for n in retractions.into_iter().chain(shows) {
            self.push(n);
        }
        if let Some(c) = confirmed {
            // What was shown for frames a pending rewind will simulate again is not the
            // confirmed timeline's yet: it is confirmed when those frames have come again.
            match self.rewind_from {
                Some(p) => {
                    if let Some(last) = p.checked_sub(1) {
                        self.confirm_through(c.min(last));
                    }
                }
                None => self.confirm_through(c),
            }
            self.last_confirmed = Some(self.last_confirmed.map_or(c, |l| l.max(c)));
            if let Some(n) = self.newest {
                let s = c.min(n);
                self.settled = Some(self.settled.map_or(s, |old| old.max(s)));
            }
        }
    }

    fn confirm_through(&mut self, c: Frame) {
        let frames: Vec<Frame> = self.ledger.range(..=c).map(|(f, _)| *f).collect();
        for f in frames {
            for e in self.ledger.remove(&f).unwrap_or_default() {
                let mut notices = Vec::new();
                for sub in &e.shown_to {
                    notices.push(UiNotice {
                        subscription: *sub,
                        call: UiCall::Confirmed,
                        event: e.event,
                        predicted: false,
                    });
                }
                for (sub, f) in &self.subs {
                    if f.delivery_mode() == Delivery::Confirmed && f.matches(&e.event) {
                        for call in [UiCall::Shown, UiCall::Confirmed] {
                            notices.push(UiNotice {
                                subscription: *sub,
                                call,
                                event: e.event,
                                predicted: false,
                            });
                        }
                    }
                }
                for n in notices {
                    self.push(n);
                }
            }
        }
    }

    fn push(&mut self, n: UiNotice) {
        if !self.subs.contains_key(&n.subscription) {
            return;
        }
        match n.call {
            UiCall::Shown => self.counters.shown += 1,
            UiCall::Retracted => self.counters.retracted += 1,
            UiCall::Confirmed => self.counters.confirmed += 1,
        }
        if self.queue.len() >= self.queue_capacity {
            self.queue.pop_front();
            self.counters.dropped += 1;
        }
        self.queue.push_back(n);
    }

    /// Undelivered notices (count).
    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    /// Hands every undelivered notice to a listener, oldest first.
    pub fn deliver<L: UiListener + ?Sized>(&mut self, listener: &mut L) {
        while let Some(n) = self.queue.pop_front() {
            match n.call {
                UiCall::Shown => listener.shown(n.subscription, &n.event, n.predicted),
                UiCall::Retracted => listener.retracted(n.subscription, &n.event),
                UiCall::Confirmed => listener.confirmed(n.subscription, &n.event),
            }
        }
    }

    /// Takes one subscription's undelivered notices, oldest first.
    pub fn drain(&mut self, sub: Subscription) -> Vec<UiNotice> {
        let mut out = Vec::new();
        self.queue.retain(|n| {
            if n.subscription == sub {
                out.push(*n);
                false
            } else {
                true
            }
        });
        out
    }

    /// Takes every undelivered notice, oldest first.
    pub fn drain_all(&mut self) -> Vec<UiNotice> {
        self.queue.drain(..).collect()
    }

    /// Starts over after a snapshot load outside the session (a replay seek, a spectator join)
    /// or a session change: every shown event that is not confirmed is retracted, and frames
    /// are no longer held as confirmed. Subscriptions stay.
    pub fn reset(&mut self) {
        let mut retractions = Vec::new();
        for (_, entries) in core::mem::take(&mut self.ledger) {
            for e in &entries {
                retract(e, &mut retractions);
            }
        }
        for n in retractions {
            self.push(n);
        }
        self.batch.clear();
        self.rewind_from = None;
        self.last_confirmed = None;
        self.newest = None;
        self.settled = None;
    }
}

fn retract(e: &Entry, out: &mut Vec<UiNotice>) {
    for sub in &e.shown_to {
        out.push(UiNotice {
            subscription: *sub,
            call: UiCall::Retracted,
            event: e.event,
            predicted: true,
        });
    }
}

/// The events of the frame the world just advanced, in output order (attributes, tags, effects,
/// abilities, executions, gameplay events), with their keys and resolved definitions.
fn collect<G: Game>(world: &World<G>) -> Vec<UiEvent> {
    let out = world.output();
    let frame = out.frame;
    let mut events: Vec<UiEvent> = Vec::with_capacity(
        out.attr_events.len()
            + out.tag_events.len()
            + out.effect_events.len()
            + out.ability_events.len()
            + out.executions.len()
            + out.gameplay_events.len(),
    );
    let mut push = |kind: UiEventKind,
                    entity: Entity,
                    subject: u32,
                    payload: UiPayload,
                    effect: Option<EffectDefId>,
                    ability: Option<AbilityDefId>| {
        let key = UiEventKey { frame, kind, entity, subject, ordinal: 0 };
        events.push(UiEvent { key, payload, effect, ability });
    };
    for a in &out.attr_events {
        push(
            UiEventKind::AttributeChanged,
            a.entity,
            u32::from(a.attr.0),
            UiPayload::Attribute(*a),
            None,
            None,
        );
    }
    for t in &out.tag_events {
        push(UiEventKind::TagChanged, t.entity, u32::from(t.tag.0), UiPayload::Tag(*t), None, None);
    }
    // Effects that left this frame are no longer in the world: their definitions come from
    // this frame's own records.
    let frame_defs: BTreeMap<EffectHandle, EffectDefId> = out
        .effect_events
        .iter()
        .filter_map(|e| match *e {
            EffectEvent::Added { handle, def } | EffectEvent::Removed { handle, def, .. } => {
                Some((handle, def))
            }
            _ => None,
        })
        .collect();
    let def_of = |h: EffectHandle| -> Option<EffectDefId> {
        frame_defs.get(&h).copied().or_else(|| world.effect(h).map(|e| e.def))
    };
    let def_subject = |def: Option<EffectDefId>| def.map_or(u32::MAX, |d| u32::from(d.0));
    for e in &out.effect_events {
        let p = UiPayload::Effect(*e);
        match *e {
            EffectEvent::Added { handle, def } => {
                push(UiEventKind::EffectAdded, handle.target, handle.seq, p, Some(def), None);
            }
            EffectEvent::Removed { handle, def, .. } => {
                push(UiEventKind::EffectRemoved, handle.target, handle.seq, p, Some(def), None);
            }
            EffectEvent::StackChanged { handle, .. } => {
                let d = def_of(handle);
                push(UiEventKind::EffectStackChanged, handle.target, handle.seq, p, d, None);
            }
            EffectEvent::Executed { target, def, handle } => {
                let subject = handle.map_or_else(|| def_subject(def), |h| h.seq);
                push(UiEventKind::EffectExecuted, target, subject, p, def, None);
            }
            EffectEvent::InhibitionChanged { handle, .. }
            | EffectEvent::DurationChanged { handle, .. } => {
                let d = def_of(handle);
                push(UiEventKind::EffectChanged, handle.target, handle.seq, p, d, None);
            }
            EffectEvent::ImmunityBlocked { target, def, .. }
            | EffectEvent::ApplyFailed { target, def, .. } => {
                push(UiEventKind::EffectRefused, target, def_subject(def), p, def, None);
            }
        }
    }
    for a in &out.ability_events {
        let p = UiPayload::Ability(*a);
        let subject =
            |h: crate::id::AbilityHandle| (u32::from(h.slot) << 16) | u32::from(h.generation);
        let spec_def = |h: crate::id::AbilityHandle| world.ability(h).map(|s| s.def);
        match *a {
            AbilityEvent::Granted { handle, def } | AbilityEvent::Removed { handle, def } => {
                push(UiEventKind::AbilityOther, handle.owner, subject(handle), p, None, Some(def));
            }
            AbilityEvent::Activated { handle, def, .. } => {
                let s = subject(handle);
                push(UiEventKind::AbilityActivated, handle.owner, s, p, None, Some(def));
            }
            AbilityEvent::ActivationFailed { handle, def, .. } => {
                push(UiEventKind::AbilityFailed, handle.owner, subject(handle), p, None, Some(def));
            }
            AbilityEvent::Committed { handle, .. } => {
                let d = spec_def(handle);
                push(UiEventKind::AbilityCommitted, handle.owner, subject(handle), p, None, d);
            }
            AbilityEvent::Ended { handle, def, .. } => {
                push(UiEventKind::AbilityEnded, handle.owner, subject(handle), p, None, Some(def));
            }
            AbilityEvent::TaskEnded { ability, .. } => {
                let d = spec_def(ability);
                push(UiEventKind::AbilityOther, ability.owner, subject(ability), p, None, d);
            }
        }
    }
    for x in &out.executions {
        let def = x.def.or_else(|| x.handle.and_then(def_of));
        push(
            UiEventKind::Execution,
            x.target,
            u32::from(x.attr.0),
            UiPayload::Execution(*x),
            def,
            None,
        );
    }
    for g in &out.gameplay_events {
        push(
            UiEventKind::GameplayEvent,
            g.to,
            u32::from(g.data.tag.0),
            UiPayload::Gameplay(*g),
            None,
            None,
        );
    }
    // Ordinals: the nth (kind, entity, subject) of the frame.
    let mut seen: BTreeMap<(UiEventKind, Entity, u32), u16> = BTreeMap::new();
    for e in &mut events {
        let n = seen.entry((e.key.kind, e.key.entity, e.key.subject)).or_default();
        e.key.ordinal = *n;
        *n = n.saturating_add(1);
    }
    events
}

/// Drives an [`EventDirector`] from a rollback driver or session batch, delivering to a
/// listener after each batch (the [`EventDirector`] itself is also a
/// [`BatchObserver`](crate::session::BatchObserver), leaving the notices queued).
#[derive(Debug)]
pub struct EventSession<'a, L: UiListener> {
    /// The director.
    pub director: &'a mut EventDirector,
    /// The listener.
    pub listener: &'a mut L,
}

impl<G: Game, L: UiListener> crate::observe::BatchObserver<G> for EventSession<'_, L> {
    fn loaded(&mut self, frame: Frame) {
        self.director.rewound_to(frame);
    }

    fn advanced(&mut self, world: &World<G>) {
        self.director.ingest(world);
    }

    fn batch_end(&mut self, world: &World<G>, confirmed: Option<Frame>) {
        let _ = world;
        self.director.reconcile(confirmed);
        self.director.deliver(self.listener);
    }
}

impl<G: Game> crate::observe::BatchObserver<G> for EventDirector {
    fn loaded(&mut self, frame: Frame) {
        self.rewound_to(frame);
    }

    fn advanced(&mut self, world: &World<G>) {
        self.ingest(world);
    }

    fn batch_end(&mut self, world: &World<G>, confirmed: Option<Frame>) {
        let _ = world;
        self.reconcile(confirmed);
    }
}
