//! Per-frame output records: what happened in a frame, for presentation, tests and tools.
//!
//! The simulation never reads these back; they are rebuilt on every step (a re-simulated frame
//! produces the same records again, which is what the cue presenter reconciles).

use crate::attribute::ModOp;
pub use crate::effect::ApplyError;
use crate::id::{AttrId, EffectDefId, EffectHandle, Entity, TagId};
use crate::num::{Frame, Fx};
use serde::Serialize;

/// Why an attribute's current value changed (the first cause within a cascade step).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum AttrCause {
    /// An instant or periodic execution changed the base value.
    Execution {
        /// The executing effect's definition (`None` for inline specs).
        def: Option<EffectDefId>,
    },
    /// `set_base` (from a system, hook or setup code).
    SetBase,
    /// The set of active modifiers (or a live capture, a clamp bound, an inhibition) changed.
    Modifiers,
}

/// An attribute's settled current value changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AttrEvent {
    /// The frame.
    pub frame: Frame,
    /// The entity.
    pub entity: Entity,
    /// The attribute.
    pub attr: AttrId,
    /// The current value before.
    pub old: Fx,
    /// The current value after.
    pub new: Fx,
    /// What caused it.
    pub cause: AttrCause,
}

/// A tag's hierarchical count changed (emitted after all explicit and ancestor counts are
/// final, in ascending tag id per entity). `old == 0` is "new", `new == 0` is "removed".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TagEvent {
    /// The frame.
    pub frame: Frame,
    /// The entity.
    pub entity: Entity,
    /// The tag.
    pub tag: TagId,
    /// The count before (the tag's own count plus its descendants').
    pub old: u32,
    /// The count after.
    pub new: u32,
}

impl TagEvent {
    /// Whether the tag appeared or disappeared (GAS `NewOrRemoved`).
    pub fn is_new_or_removed(&self) -> bool {
        (self.old == 0) != (self.new == 0)
    }
}

/// Why an active effect left.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RemovalReason {
    /// Its duration ran out.
    Expired,
    /// Removed by a call (`remove_effect`, `remove_matching`).
    Removed,
    /// Removed by another effect's "remove effects with tags".
    RemovedByTags,
    /// Its target was despawned.
    TargetDespawned,
}

/// What an application did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Applied {
    /// An instant spec executed.
    Executed,
    /// A new active effect.
    Added(EffectHandle),
    /// An existing stack was raised, refreshed or left unchanged at its limit.
    Stacked(EffectHandle),
    /// A custom requirement redirected the application to an existing effect.
    Redirected(EffectHandle),
    /// The call was made from inside a running change; the application is queued and runs
    /// right after it (its outcome appears in the frame's events).
    Queued,
}

/// Effect lifecycle events, identical on every peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EffectEvent {
    /// A duration/infinite effect became active.
    Added {
        /// The new effect.
        handle: EffectHandle,
        /// Its definition.
        def: EffectDefId,
    },
    /// An active effect left.
    Removed {
        /// The effect.
        handle: EffectHandle,
        /// Its definition.
        def: EffectDefId,
        /// Why.
        reason: RemovalReason,
    },
    /// An instant spec or a periodic effect executed on `target`.
    Executed {
        /// The target.
        target: Entity,
        /// The definition (`None` for inline specs).
        def: Option<EffectDefId>,
        /// The periodic effect, if any.
        handle: Option<EffectHandle>,
    },
    /// A stack count changed.
    StackChanged {
        /// The effect.
        handle: EffectHandle,
        /// Stacks before.
        old: u16,
        /// Stacks after.
        new: u16,
    },
    /// Ongoing requirements switched an effect off or on.
    InhibitionChanged {
        /// The effect.
        handle: EffectHandle,
        /// Whether it is now inhibited.
        inhibited: bool,
    },
    /// An effect's expiry frame changed (refresh, `set_remaining`, `extend`).
    DurationChanged {
        /// The effect.
        handle: EffectHandle,
        /// The expiry frame before.
        old_expires_at: Frame,
        /// The expiry frame after.
        new_expires_at: Frame,
    },
    /// An application was refused because of immunity.
    ImmunityBlocked {
        /// The target.
        target: Entity,
        /// The refused definition.
        def: Option<EffectDefId>,
        /// The effect granting the immunity.
        blocker: EffectHandle,
    },
    /// An application failed for another reason.
    ApplyFailed {
        /// The target.
        target: Entity,
        /// The refused definition.
        def: Option<EffectDefId>,
        /// Why.
        error: ApplyError,
    },
}

/// A modifier or execution output that changed a base value (passed to post-execute hooks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ExecutedMod {
    /// The frame.
    pub frame: Frame,
    /// The entity whose attribute changed.
    pub target: Entity,
    /// The attribute.
    pub attr: AttrId,
    /// The operation.
    pub op: ModOp,
    /// The magnitude used (stacks applied).
    pub magnitude: Fx,
    /// The base value before.
    pub old_base: Fx,
    /// The base value after (clamped if the attribute clamps its base).
    pub new_base: Fx,
    /// The effect definition (`None` for inline specs and execution outputs of inline specs).
    pub def: Option<EffectDefId>,
    /// The periodic effect that executed, if any.
    pub handle: Option<EffectHandle>,
    /// The spec's instigator.
    pub instigator: Entity,
    /// The spec's causer.
    pub causer: Entity,
    /// The spec level.
    pub level: u16,
}

/// A deterministic problem worth knowing about. The frame still completes identically on every
/// peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Diagnostic {
    /// The same-frame cascade cap was hit; this many queued work items were dropped.
    CascadeCap {
        /// Dropped items.
        dropped: u32,
    },
    /// A GasCompat multiply/divide channel broke the documented validity rule.
    GasCompatLint {
        /// The entity.
        entity: Entity,
        /// The attribute.
        attr: AttrId,
        /// `true` for the divide channel.
        divide: bool,
    },
    /// A divide channel summed to zero; it was treated as 1.
    DivideByZero {
        /// The entity.
        entity: Entity,
        /// The attribute.
        attr: AttrId,
    },
    /// A tag count was decremented below zero (ignored).
    TagUnderflow {
        /// The entity.
        entity: Entity,
        /// The tag.
        tag: TagId,
    },
    /// A tag count reached its maximum (it saturates).
    TagOverflow {
        /// The entity.
        entity: Entity,
        /// The tag.
        tag: TagId,
    },
    /// Attribute re-evaluation did not settle (a dynamic dependency cycle); it was cut.
    AttributeCycleCut {
        /// The entity.
        entity: Entity,
        /// The attribute.
        attr: AttrId,
    },
    /// Ongoing requirements kept toggling an effect; the toggling was cut.
    InhibitionCycleCut {
        /// The entity.
        entity: Entity,
    },
    /// The entity capacity is exhausted; a spawn was refused.
    EntityCapacity,
    /// The stored-spec pool is full: an effect was applied without keeping its full spec (its
    /// periodic executions and calculations see a spec rebuilt from the active effect).
    SpecPoolFull {
        /// The effect.
        effect: EffectHandle,
    },
    /// A registered function referenced a capture or value it did not declare.
    UndeclaredCapture {
        /// The attribute.
        attr: AttrId,
    },
    /// A capacity of the world's configuration was too small at run time: a target query
    /// found more targets than `max_target_entities` (the rest were cut), a spec or an
    /// ability could not take another value, or the frame spill was full. The message of
    /// [`CapacityExceeded`](super::CapacityExceeded) names the `WorldConfig` field to raise.
    CapacityExceeded {
        /// The entity concerned (the query's owner, the spec's instigator, the ability's
        /// owner; `NONE` when there is none).
        entity: Entity,
        /// The capacity, what was needed and the configured value.
        exceeded: super::CapacityExceeded,
    },
    /// Target data made with [`TargetData::entities`](crate::TargetData::entities) from more
    /// entities than it holds reached a targeting task: the rest were never kept. Return
    /// area targets through [`Game::target_candidates`](crate::Game::target_candidates).
    TargetsDropped {
        /// The query's owner.
        owner: Entity,
        /// How many entities the data was made from.
        total: u32,
    },
    /// A duration or period computed from a magnitude (F-GA-08) rounded to less than 1 frame
    /// or more than [`MAX_FINITE_FRAMES`](crate::num::MAX_FINITE_FRAMES); it was clamped into
    /// that range.
    TimeClamped {
        /// The target of the application.
        target: Entity,
        /// The effect definition.
        def: EffectDefId,
        /// `true` for the period, `false` for the duration.
        period: bool,
        /// The magnitude's value (frames) before rounding and clamping.
        value: Fx,
    },
}

/// Everything a frame produced.
#[derive(Clone, Debug, Default)]
pub struct FrameOutput {
    /// The frame these records belong to.
    pub frame: Frame,
    /// Attribute changes.
    pub attr_events: Vec<AttrEvent>,
    /// Tag count changes.
    pub tag_events: Vec<TagEvent>,
    /// Effect lifecycle events.
    pub effect_events: Vec<EffectEvent>,
    /// Diagnostics.
    pub diagnostics: Vec<Diagnostic>,
    /// Ability lifecycle events.
    pub ability_events: Vec<crate::ability::AbilityEvent>,
    /// Gameplay events sent this frame, in order.
    pub gameplay_events: Vec<crate::ability::GameplayEvent>,
    /// Every change of a base value by an execution (damage numbers, hit reactions).
    pub executions: Vec<ExecutedMod>,
    /// Cue records in emission order.
    pub cues: Vec<crate::cue::CueRecord>,
    /// Hits of hit boxes on hurt boxes, in delivery order (`src/world/boxes.rs`).
    pub hits: Vec<super::BoxHit>,
}

impl FrameOutput {
    /// Empty lists with room for a busy frame of a world of `entities` entities (about one
    /// record of each kind per entity), so a frame busier than every earlier one does not have
    /// to grow them in the middle of a step (a steady-state step allocates nothing).
    pub(crate) fn with_capacity(entities: usize) -> FrameOutput {
        let n = entities.saturating_add(64);
        FrameOutput {
            frame: 0,
            attr_events: Vec::with_capacity(n),
            tag_events: Vec::with_capacity(n),
            effect_events: Vec::with_capacity(n),
            diagnostics: Vec::with_capacity(16),
            ability_events: Vec::with_capacity(n),
            gameplay_events: Vec::with_capacity(n / 2),
            executions: Vec::with_capacity(n),
            cues: Vec::with_capacity(n / 2),
            hits: Vec::with_capacity(16),
        }
    }

    pub(crate) fn clear(&mut self, frame: Frame) {
        self.frame = frame;
        self.attr_events.clear();
        self.tag_events.clear();
        self.effect_events.clear();
        self.diagnostics.clear();
        self.ability_events.clear();
        self.gameplay_events.clear();
        self.executions.clear();
        self.cues.clear();
        self.hits.clear();
    }
}
