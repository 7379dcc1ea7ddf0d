//! A rollback-safe UI event feed: attribute changes, tag changes, effect, ability, execution and
//! gameplay events, each shown to the UI **once** however often its frame is re-simulated —
//! GAS's async UI tasks (`WaitAttributeChange`, `WaitGameplayEffectApplied`,
//! `WaitAbilityActivate`…) for a world that rolls back.
//!
//! # Why
//!
//! A [`FrameOutput`](crate::FrameOutput) is rebuilt on every step, and a rollback re-steps the
//! same frames: read directly, its events repeat on every re-simulation (a damage number shows
//! three times), and a predicted event that a correction erased is never taken back. Only cues
//! have a director of their own ([`CueDirector`](crate::present::CueDirector)); this module does
//! the same for everything else a UI reads.
//!
//! # How
//!
//! An [`EventDirector`] is fed like the cue director, once per batch (GGRS `advance_frame()`
//! call or driver step): [`EventDirector::rewound_to`] on a load, [`EventDirector::ingest`]
//! after every advanced frame, [`EventDirector::reconcile`] once after the batch with the
//! confirmed frame. It recognises a re-emitted event by its [`UiEventKey`] — frame, kind,
//! entity, subject (attribute, tag, effect, ability…) and ordinal — and its payload, and queues
//! [`UiNotice`]s for each [`Subscription`] whose [`EventFilter`] matches:
//!
//! - [`UiCall::Shown`] once, when the event first appears (predicted, unless its frame is
//!   already confirmed);
//! - [`UiCall::Retracted`] if a correction proved it never happened (take the number back);
//! - [`UiCall::Confirmed`] once its frame is confirmed (it can no longer be taken back).
//!
//! A [`Delivery::Confirmed`] subscription is only shown confirmed events (shown and confirmed
//! together), never a retraction: for kill feeds and scores. The UI takes its notices with
//! [`EventDirector::deliver`] (a [`UiListener`]) or [`EventDirector::drain`] (one
//! subscription's). The [`Runner`](crate::session::Runner) feeds its
//! [`ui_events`](crate::session::Runner::ui_events) director itself; with the in-crate drivers
//! use the director (or an [`EventSession`]) as their
//! [`BatchObserver`](crate::session::BatchObserver). `docs/cues.md` (section 11) has the
//! walk-through and the GAS mapping.

mod director;
mod log;

pub use director::{EventCounters, EventDirector, EventSession, UiListener};
pub use log::UiLog;

use crate::ability::{AbilityEvent, GameplayEvent};
use crate::id::{AbilityDefId, AttrId, EffectDefId, Entity, TagId};
use crate::num::{Frame, Fx};
use crate::world::{AttrEvent, EffectEvent, ExecutedMod, TagEvent};

/// What kind of event a [`UiEvent`] is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum UiEventKind {
    /// An attribute's current value changed ([`AttrEvent`]).
    AttributeChanged,
    /// A tag's count changed ([`TagEvent`]).
    TagChanged,
    /// A duration/infinite effect became active ([`EffectEvent::Added`]).
    EffectAdded,
    /// An active effect left ([`EffectEvent::Removed`]).
    EffectRemoved,
    /// A stack count changed ([`EffectEvent::StackChanged`]).
    EffectStackChanged,
    /// An instant spec or a periodic effect executed ([`EffectEvent::Executed`]).
    EffectExecuted,
    /// An effect was inhibited or switched back on, or its expiry frame changed
    /// ([`EffectEvent::InhibitionChanged`], [`EffectEvent::DurationChanged`]).
    EffectChanged,
    /// An application was refused ([`EffectEvent::ImmunityBlocked`],
    /// [`EffectEvent::ApplyFailed`]).
    EffectRefused,
    /// An ability activated ([`AbilityEvent::Activated`]).
    AbilityActivated,
    /// An ability ended ([`AbilityEvent::Ended`]).
    AbilityEnded,
    /// An activation failed ([`AbilityEvent::ActivationFailed`]).
    AbilityFailed,
    /// Cost and/or cooldown were committed ([`AbilityEvent::Committed`]).
    AbilityCommitted,
    /// An ability was granted or removed, or a task ended ([`AbilityEvent::Granted`],
    /// [`AbilityEvent::Removed`], [`AbilityEvent::TaskEnded`]).
    AbilityOther,
    /// An execution changed a base value ([`ExecutedMod`]: damage numbers).
    Execution,
    /// A gameplay event was sent ([`GameplayEvent`]).
    GameplayEvent,
}

impl UiEventKind {
    /// Every kind.
    pub const ALL: [UiEventKind; 15] = [
        UiEventKind::AttributeChanged,
        UiEventKind::TagChanged,
        UiEventKind::EffectAdded,
        UiEventKind::EffectRemoved,
        UiEventKind::EffectStackChanged,
        UiEventKind::EffectExecuted,
        UiEventKind::EffectChanged,
        UiEventKind::EffectRefused,
        UiEventKind::AbilityActivated,
        UiEventKind::AbilityEnded,
        UiEventKind::AbilityFailed,
        UiEventKind::AbilityCommitted,
        UiEventKind::AbilityOther,
        UiEventKind::Execution,
        UiEventKind::GameplayEvent,
    ];

    fn bit(self) -> u32 {
        1 << (self as u32)
    }

    fn is_effect(self) -> bool {
        matches!(
            self,
            UiEventKind::EffectAdded
                | UiEventKind::EffectRemoved
                | UiEventKind::EffectStackChanged
                | UiEventKind::EffectExecuted
                | UiEventKind::EffectChanged
                | UiEventKind::EffectRefused
        )
    }

    fn is_ability(self) -> bool {
        matches!(
            self,
            UiEventKind::AbilityActivated
                | UiEventKind::AbilityEnded
                | UiEventKind::AbilityFailed
                | UiEventKind::AbilityCommitted
                | UiEventKind::AbilityOther
        )
    }
}

/// The identity of one UI event: re-simulating a frame identically emits the same keys again
/// (the [`CueKey`](crate::cue::CueKey) of everything that is not a cue). Made of simulation
/// facts only, so every peer computes the same keys for the same timeline.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct UiEventKey {
    /// The frame it was emitted in.
    pub frame: Frame,
    /// What kind of event it is.
    pub kind: UiEventKind,
    /// The entity it is about: the attribute's or tag's owner, the effect's target, the
    /// ability's owner, the execution's target, the gameplay event's receiver.
    pub entity: Entity,
    /// What on the entity: the attribute or tag id, the effect's `seq` (or its definition for
    /// instant effects and refusals), the ability's `slot << 16 | generation`, the gameplay
    /// event's tag.
    pub subject: u32,
    /// The nth `(kind, entity, subject)` in this frame.
    pub ordinal: u16,
}

/// The record behind a [`UiEvent`], as the frame's output holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum UiPayload {
    /// [`UiEventKind::AttributeChanged`].
    Attribute(AttrEvent),
    /// [`UiEventKind::TagChanged`].
    Tag(TagEvent),
    /// The effect kinds.
    Effect(EffectEvent),
    /// The ability kinds.
    Ability(AbilityEvent),
    /// [`UiEventKind::Execution`].
    Execution(ExecutedMod),
    /// [`UiEventKind::GameplayEvent`].
    Gameplay(GameplayEvent),
}

/// One event of a frame, as the UI sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UiEvent {
    /// Its identity.
    pub key: UiEventKey,
    /// The record.
    pub payload: UiPayload,
    /// The effect definition involved (effect events and executions), resolved from the world
    /// for events that carry only a handle (`None`: an inline spec, or not found).
    pub effect: Option<EffectDefId>,
    /// The ability definition involved (ability events).
    pub ability: Option<AbilityDefId>,
}

impl UiEvent {
    /// The attribute it is about (attribute changes and executions).
    pub fn attribute(&self) -> Option<AttrId> {
        match self.payload {
            UiPayload::Attribute(a) => Some(a.attr),
            UiPayload::Execution(x) => Some(x.attr),
            _ => None,
        }
    }

    /// The tag it is about (tag changes and gameplay events).
    pub fn tag(&self) -> Option<TagId> {
        match self.payload {
            UiPayload::Tag(t) => Some(t.tag),
            UiPayload::Gameplay(g) => Some(g.data.tag),
            _ => None,
        }
    }

    /// How much a value changed: `new − old` of an attribute's current value, or of a base
    /// value changed by an execution (a damage number is `-delta`).
    pub fn delta(&self) -> Option<Fx> {
        match self.payload {
            UiPayload::Attribute(a) => Some(a.new.saturating_sub(a.old)),
            UiPayload::Execution(x) => Some(x.new_base.saturating_sub(x.old_base)),
            _ => None,
        }
    }
}

/// When a subscription is told about an event.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Delivery {
    /// At once (predicted), then retracted if a correction erases it, or confirmed: damage
    /// numbers, cooldown widgets, buff bars.
    #[default]
    Predicted,
    /// Only once its frame is confirmed (`shown` and `confirmed` together, never retracted):
    /// kill feeds, scores, achievements.
    Confirmed,
}

/// What a subscription wants to hear about.
///
/// A filter accepts an event when its kind is one of the filter's kinds and every restriction
/// the event can be held against holds: `on` (the event's entity), `attribute` (attribute
/// changes and executions), `tag` (tag changes and gameplay events; exact ids), `effect`
/// (effect events and executions) and `ability` (ability events). Each restriction lists
/// alternatives (any of them matches); an empty one accepts everything.
///
/// ```
/// use rollback_abilities::ui::{EventFilter, UiEventKind};
/// use rollback_abilities::{AttrId, Entity};
/// let hero = Entity { index: 1, generation: 1 };
/// // GAS's WaitAttributeChange on the hero's Health (attribute 0):
/// let health = EventFilter::attribute_changed(hero, AttrId(0));
/// assert!(health.accepts_kind(UiEventKind::AttributeChanged));
/// assert!(!health.accepts_kind(UiEventKind::Execution));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFilter {
    kinds: u32,
    entities: Vec<Entity>,
    attributes: Vec<AttrId>,
    tags: Vec<TagId>,
    effects: Vec<EffectDefId>,
    abilities: Vec<AbilityDefId>,
    delivery: Delivery,
}

impl Default for EventFilter {
    fn default() -> Self {
        EventFilter::all()
    }
}

impl EventFilter {
    /// Every event.
    pub fn all() -> EventFilter {
        EventFilter::kinds(&UiEventKind::ALL)
    }

    /// Events of these kinds.
    pub fn kinds(kinds: &[UiEventKind]) -> EventFilter {
        EventFilter {
            kinds: kinds.iter().fold(0, |m, k| m | k.bit()),
            entities: Vec::new(),
            attributes: Vec::new(),
            tags: Vec::new(),
            effects: Vec::new(),
            abilities: Vec::new(),
            delivery: Delivery::Predicted,
        }
    }

    /// GAS `WaitAttributeChange` (and GASDocumentation's `AsyncTaskAttributeChanged`): changes
    /// of one attribute's current value on one entity.
    pub fn attribute_changed(entity: Entity, attr: AttrId) -> EventFilter {
        EventFilter::kinds(&[UiEventKind::AttributeChanged]).on(entity).attribute(attr)
    }

    /// Damage numbers and heals: executions that changed a base value on `entity`.
    pub fn executions(entity: Entity) -> EventFilter {
        EventFilter::kinds(&[UiEventKind::Execution]).on(entity)
    }

    /// GAS `WaitGameplayTagAdded` / `WaitGameplayTagRemoved`: count changes of one tag on one
    /// entity (`TagEvent::is_new_or_removed` tells the edges).
    pub fn tag_changed(entity: Entity, tag: TagId) -> EventFilter {
        EventFilter::kinds(&[UiEventKind::TagChanged]).on(entity).tag(tag)
    }

    /// GAS `WaitGameplayEffectApplied` (to self): effects that became active on `entity`, and
    /// instant or periodic executions on it.
    pub fn effect_applied(entity: Entity) -> EventFilter {
        EventFilter::kinds(&[UiEventKind::EffectAdded, UiEventKind::EffectExecuted]).on(entity)
    }

    /// GAS `WaitGameplayEffectRemoved`: effects that left `entity`.
    pub fn effect_removed(entity: Entity) -> EventFilter {
        EventFilter::kinds(&[UiEventKind::EffectRemoved]).on(entity)
    }

    /// GAS `WaitGameplayEffectStackChange` (GASDocumentation's `AsyncTaskEffectStackChanged`):
    /// stack counts on `entity`.
    pub fn effect_stack_changed(entity: Entity) -> EventFilter {
        EventFilter::kinds(&[UiEventKind::EffectStackChanged]).on(entity)
    }

    /// GASDocumentation's `AsyncTaskCooldownChanged`: the cooldown effect `cooldown` beginning
    /// and ending on `entity` (its `EffectAdded` and `EffectRemoved`).
    pub fn cooldown_changed(entity: Entity, cooldown: EffectDefId) -> EventFilter {
        EventFilter::kinds(&[UiEventKind::EffectAdded, UiEventKind::EffectRemoved])
            .on(entity)
            .effect(cooldown)
    }

    /// GAS `WaitAbilityActivate`: activations of `entity`'s abilities.
    pub fn ability_activated(entity: Entity) -> EventFilter {
        EventFilter::kinds(&[UiEventKind::AbilityActivated]).on(entity)
    }

    /// GAS `WaitAbilityCommit`: commits of `entity`'s abilities.
    pub fn ability_committed(entity: Entity) -> EventFilter {
        EventFilter::kinds(&[UiEventKind::AbilityCommitted]).on(entity)
    }

    /// Endings of `entity`'s abilities (GAS `OnAbilityEnded`).
    pub fn ability_ended(entity: Entity) -> EventFilter {
        EventFilter::kinds(&[UiEventKind::AbilityEnded]).on(entity)
    }

    /// Failed activations of `entity`'s abilities (GAS `AbilityFailedCallbacks`).
    pub fn ability_failed(entity: Entity) -> EventFilter {
        EventFilter::kinds(&[UiEventKind::AbilityFailed]).on(entity)
    }

    /// GAS `WaitGameplayEvent` (exact match): gameplay events with this tag sent to `entity`.
    pub fn gameplay_event(entity: Entity, tag: TagId) -> EventFilter {
        EventFilter::kinds(&[UiEventKind::GameplayEvent]).on(entity).tag(tag)
    }

    /// Also accepts events about `entity` (the first call restricts to it).
    #[must_use]
    pub fn on(mut self, entity: Entity) -> Self {
        self.entities.push(entity);
        self
    }

    /// Also accepts attribute changes and executions of `attr`.
    #[must_use]
    pub fn attribute(mut self, attr: AttrId) -> Self {
        self.attributes.push(attr);
        self
    }

    /// Also accepts tag changes and gameplay events of `tag` (exact id).
    #[must_use]
    pub fn tag(mut self, tag: TagId) -> Self {
        self.tags.push(tag);
        self
    }

    /// Also accepts effect events and executions of the effect definition `def`.
    #[must_use]
    pub fn effect(mut self, def: EffectDefId) -> Self {
        self.effects.push(def);
        self
    }

    /// Also accepts ability events of the ability definition `def`.
    #[must_use]
    pub fn ability(mut self, def: AbilityDefId) -> Self {
        self.abilities.push(def);
        self
    }

    /// Delivers only confirmed events ([`Delivery::Confirmed`]).
    #[must_use]
    pub fn confirmed_only(self) -> Self {
        self.delivery(Delivery::Confirmed)
    }

    /// Sets the delivery.
    #[must_use]
    pub fn delivery(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }

    /// The delivery.
    pub fn delivery_mode(&self) -> Delivery {
        self.delivery
    }

    /// Whether events of this kind can pass.
    pub fn accepts_kind(&self, kind: UiEventKind) -> bool {
        self.kinds & kind.bit() != 0
    }

    /// Whether the filter accepts an event.
    pub fn matches(&self, e: &UiEvent) -> bool {
        let kind = e.key.kind;
        if !self.accepts_kind(kind) {
            return false;
        }
        if !self.entities.is_empty() && !self.entities.contains(&e.key.entity) {
            return false;
        }
        if !self.attributes.is_empty()
            && let Some(a) = e.attribute()
            && !self.attributes.contains(&a)
        {
            return false;
        }
        if !self.tags.is_empty()
            && let Some(t) = e.tag()
            && !self.tags.contains(&t)
        {
            return false;
        }
        if !self.effects.is_empty()
            && (kind.is_effect() || kind == UiEventKind::Execution)
            && !e.effect.is_some_and(|d| self.effects.contains(&d))
        {
            return false;
        }
        if !self.abilities.is_empty()
            && kind.is_ability()
            && !e.ability.is_some_and(|d| self.abilities.contains(&d))
        {
            return false;
        }
        true
    }
}

/// A subscription's id (from [`EventDirector::subscribe`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Subscription(pub u32);

/// What a notice tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum UiCall {
    /// The event happened (show it). At most once per event while it is not retracted.
    Shown,
    /// A shown event never happened in the corrected timeline (take it back).
    Retracted,
    /// A shown event's frame is confirmed: it can no longer be retracted.
    Confirmed,
}

/// One notice for one subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UiNotice {
    /// The subscription it is for.
    pub subscription: Subscription,
    /// What it tells.
    pub call: UiCall,
    /// The event.
    pub event: UiEvent,
    /// Whether the event's frame was still unconfirmed when the notice was made.
    pub predicted: bool,
}
