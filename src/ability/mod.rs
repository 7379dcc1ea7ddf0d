//! Gameplay abilities: granting, the activation pipeline, costs and cooldowns, triggers, input
//! binding, ability tasks and targeting.
//!
//! # Model
//!
//! An ability is *granted* to an owner entity (which holds the ability system) as an
//! [`AbilitySpec`] in one of the owner's spec slots; an [`AbilityHandle`] names the slot and
//! its generation. Activation runs the activation pipeline (F-GA-04) and every failure has a
//! reason ([`ActivationFailure`]). Behaviour that data cannot express is a registered
//! [`Behaviour`](crate::world::Behaviour): plain functions over the world and the ability's
//! fixed-size `Pod` state blob stored in the snapshot. Latent work runs in ability
//! [tasks](TaskSpec), small state machines in a snapshot pool whose results are delivered to
//! the behaviour's `on_task`.
//!
//! Everything here is ordinary snapshot state: activations, cooldowns, costs, tasks and their
//! timers roll back and re-simulate like attributes do, on every peer (no prediction keys).

pub(crate) mod boxes;
mod def;
pub use def::{AbilityDef, AbilitySetDef, CancelRuleDef, Instancing, TimelineDef, TriggerDef};

pub(crate) mod cooldown_tags;
pub(crate) mod task;

pub use cooldown_tags::CooldownTagsError;
pub(crate) use cooldown_tags::cooldown_tag_valid;
pub use task::{
    AttrCmp, Confirmation, CustomTaskKind, TargetQuery, TaskEvent, TaskRec, TaskResult, TaskSpec,
};

use crate::id::{AbilityDefId, AbilityHandle, EffectHandle, Entity, TagId, TaskHandle};
use crate::num::{Frame, Fx};
use bytemuck::{Pod, Zeroable};
use core::fmt;

/// The input id meaning "not bound".
pub const NO_INPUT: u16 = u16::MAX;

/// The ability inputs (ids `0..MAX_INPUTS`): [`AbilityInput`](crate::AbilityInput)'s `held` set and
/// the input buffers are `u32` bit masks.
pub(crate) const MAX_INPUTS: u16 = 32;

/// Why an ability could not be granted ([`World::grant_ability`](crate::World::grant_ability)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum GrantError {
    /// The owner is not alive or has no ability system (spawned with
    /// [`World::spawn`](crate::World::spawn), not
    /// [`World::spawn_actor`](crate::World::spawn_actor)).
    NotAnActor(Entity),
    /// The definition is not in the world's content.
    UnknownAbility(AbilityDefId),
    /// The ability to re-grant is no longer granted.
    InvalidHandle(AbilityHandle),
    /// Every ability slot of the owner is taken
    /// ([`Capacity::AbilitiesPerEntity`](crate::Capacity::AbilitiesPerEntity)).
    OverCapacity(crate::capacity::CapacityExceeded),
}

impl fmt::Display for GrantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantError::NotAnActor(e) => write!(f, "{e:?} is not an entity with an ability system"),
            GrantError::UnknownAbility(d) => write!(f, "{d:?} is not in the world's content"),
            GrantError::InvalidHandle(h) => write!(f, "{h:?} is no longer granted"),
            GrantError::OverCapacity(e) => write!(f, "cannot grant: {e}"),
        }
    }
}

impl std::error::Error for GrantError {}

/// Why an activation failed (F-GA-05). Every peer computes the same reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum ActivationFailure {
    /// The owner has an activation-blocked tag.
    BlockedByTags,
    /// A running ability (or an active effect) blocks abilities with this ability's tags.
    BlockedByAbility,
    /// The owner lacks an activation-required tag.
    MissingTags,
    /// A cooldown tag is present.
    OnCooldown,
    /// The cost cannot be paid.
    CantAffordCost,
    /// The owner carries the content's dead tag.
    Dead,
    /// The ability is already active and does not retrigger.
    AlreadyActive,
    /// Event activation: the instigator's or target's tags fail the source/target lists.
    SourceOrTargetTags,
    /// A custom activation check refused with this code.
    Custom(u16),
    /// The task pool is full.
    TaskCapacity,
    /// The handle is stale, or the owner is gone.
    InvalidHandle,
    /// Committing failed when the cost or cooldown effect was applied (for example the owner
    /// is immune to it, its stack is full and denies overflow, or the owner has no free effect
    /// slot): the ability is cancelled instead of running for free or without its cooldown
    /// (F-GA-06). A commit made after activation (`ctx.commit()`) reports its failure the same
    /// way.
    CommitFailed {
        /// The part whose application failed.
        part: CommitPart,
        /// Why the application failed.
        error: crate::effect::ApplyError,
    },
}

/// The part of a commit that failed ([`ActivationFailure::CommitFailed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum CommitPart {
    /// The cost effect.
    Cost,
    /// The cooldown effect.
    Cooldown,
}

impl fmt::Display for CommitPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CommitPart::Cost => "cost",
            CommitPart::Cooldown => "cooldown",
        })
    }
}

/// What kind of failure an [`ActivationFailure`] is, without its details (like
/// `std::io::ErrorKind`): what a scenario file names in `Failed(…)`, and what code that
/// reacts to a failure without caring why a commit failed matches on. A custom check's code
/// is part of its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum FailureKind {
    /// [`ActivationFailure::BlockedByTags`].
    BlockedByTags,
    /// [`ActivationFailure::BlockedByAbility`].
    BlockedByAbility,
    /// [`ActivationFailure::MissingTags`].
    MissingTags,
    /// [`ActivationFailure::OnCooldown`].
    OnCooldown,
    /// [`ActivationFailure::CantAffordCost`].
    CantAffordCost,
    /// [`ActivationFailure::Dead`].
    Dead,
    /// [`ActivationFailure::AlreadyActive`].
    AlreadyActive,
    /// [`ActivationFailure::SourceOrTargetTags`].
    SourceOrTargetTags,
    /// [`ActivationFailure::Custom`] with this code.
    Custom(u16),
    /// [`ActivationFailure::TaskCapacity`].
    TaskCapacity,
    /// [`ActivationFailure::InvalidHandle`].
    InvalidHandle,
    /// [`ActivationFailure::CommitFailed`], any part, any reason.
    CommitFailed,
}

impl ActivationFailure {
    /// The failure's kind, without its details.
    pub fn kind(self) -> FailureKind {
        match self {
            ActivationFailure::BlockedByTags => FailureKind::BlockedByTags,
            ActivationFailure::BlockedByAbility => FailureKind::BlockedByAbility,
            ActivationFailure::MissingTags => FailureKind::MissingTags,
            ActivationFailure::OnCooldown => FailureKind::OnCooldown,
            ActivationFailure::CantAffordCost => FailureKind::CantAffordCost,
            ActivationFailure::Dead => FailureKind::Dead,
            ActivationFailure::AlreadyActive => FailureKind::AlreadyActive,
            ActivationFailure::SourceOrTargetTags => FailureKind::SourceOrTargetTags,
            ActivationFailure::Custom(code) => FailureKind::Custom(code),
            ActivationFailure::TaskCapacity => FailureKind::TaskCapacity,
            ActivationFailure::InvalidHandle => FailureKind::InvalidHandle,
            ActivationFailure::CommitFailed { .. } => FailureKind::CommitFailed,
        }
    }
}

impl fmt::Display for ActivationFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            ActivationFailure::BlockedByTags => {
                "blocked by a tag of the owner's that the ability lists in activation_blocked_tags"
            }
            ActivationFailure::BlockedByAbility => "blocked by a running ability or effect",
            ActivationFailure::MissingTags => {
                "the owner lacks a tag the ability lists in activation_required_tags"
            }
            ActivationFailure::OnCooldown => "on cooldown",
            ActivationFailure::CantAffordCost => "cannot afford the cost",
            ActivationFailure::Dead => "the owner is dead",
            ActivationFailure::AlreadyActive => "already active",
            ActivationFailure::SourceOrTargetTags => "the event's source or target tags fail",
            ActivationFailure::Custom(c) => {
                return write!(f, "refused by the custom check (code {c})");
            }
            ActivationFailure::TaskCapacity => "the task pool is full",
            ActivationFailure::InvalidHandle => "the ability handle is stale",
            ActivationFailure::CommitFailed { part, error } => {
                return write!(f, "committing the {part} failed: {error}");
            }
        };
        f.write_str(s)
    }
}

impl std::error::Error for ActivationFailure {}

/// A successful activation request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Activation {
    /// The ability is active under this activation serial.
    Activated {
        /// The activation serial (counts activations of the spec).
        serial: u32,
    },
    /// The request was made from inside a running change and is queued (its outcome appears in
    /// the frame's ability events).
    Queued,
}

/// An input edge delivered to an active ability (F-GA-13).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum InputEdge {
    /// The bound input was pressed.
    Pressed,
    /// The bound input was released.
    Released,
}

/// Targeting data (F-TGT-01) as plain data: what was targeted, in fixed point.
///
/// It holds four entities itself. An area query of a world whose
/// [`WorldConfig::max_target_entities`](crate::WorldConfig::max_target_entities) is larger
/// reports longer lists: `entities` then holds the first four, [`TargetData::total`] says how
/// many there are, and [`World::target_entities`](crate::World::target_entities) gives them all
/// (in the frame the data was reported: the list lives in the frame spill). For a list, the
/// first eight of `bytes` hold the total and the spill record's serial (so the data stays 128
/// bytes: it travels by value through every task report and event).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct TargetData {
    /// Entities (the first `count` are used).
    pub entities: [Entity; 4],
    /// Hit point or location target.
    pub point: [Fx; 3],
    /// Hit normal.
    pub normal: [Fx; 3],
    /// Location source.
    pub source: [Fx; 3],
    /// What kind of data this is: see [`TargetData::view`].
    pub kind: u8,
    _pad: [u8; 1],
    /// Custom kind id.
    pub custom_kind: u16,
    /// Used entries of `entities`.
    pub count: u32,
    /// Body part or custom payload (for a list of entities: its total and spill serial).
    pub bytes: [u8; 16],
}

/// A typed view of [`TargetData`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetView<'a> {
    /// Nothing targeted.
    None,
    /// One entity.
    Entity(Entity),
    /// Several entities.
    Entities(&'a [Entity]),
    /// A hit on an entity.
    Hit {
        /// The entity hit.
        entity: Entity,
        /// Where.
        point: [Fx; 3],
        /// The surface normal.
        normal: [Fx; 3],
        /// A body-part index.
        part: u32,
    },
    /// A location.
    Location {
        /// From where.
        source: [Fx; 3],
        /// To where.
        target: [Fx; 3],
    },
    /// Game-defined data.
    Custom {
        /// The game's kind id.
        kind: u16,
        /// The payload.
        bytes: &'a [u8; 16],
    },
}

impl TargetData {
    /// How many entities target data holds itself.
    pub const INLINE: usize = crate::capacity::INLINE_TARGETS;

    /// No target.
    pub const NONE: TargetData = TargetData {
        entities: [Entity::NONE; 4],
        point: [Fx::ZERO; 3],
        normal: [Fx::ZERO; 3],
        source: [Fx::ZERO; 3],
        kind: 0,
        _pad: [0],
        custom_kind: 0,
        count: 0,
        bytes: [0; 16],
    };

    /// One entity.
    pub fn entity(e: Entity) -> TargetData {
        let mut t = TargetData::NONE;
        t.kind = 1;
        t.entities[0] = e;
        t.count = 1;
        t
    }

    /// A list of entities. The data holds four: with more, it keeps the first four and says
    /// how many there were ([`TargetData::total`]), and
    /// [`World::target_entities`](crate::World::target_entities) reports the list as
    /// [`Truncated`](crate::world::TargetListError::Truncated) (a targeting task that receives
    /// it records [`Diagnostic::TargetsDropped`](crate::Diagnostic::TargetsDropped)). Area
    /// queries return longer lists through
    /// [`Game::target_candidates`](crate::Game::target_candidates).
    pub fn entities(list: &[Entity]) -> TargetData {
        let mut t = TargetData::NONE;
        t.kind = 2;
        let n = list.len().min(TargetData::INLINE);
        t.entities[..n].copy_from_slice(&list[..n]);
        t.count = n as u32;
        t.bytes[..4].copy_from_slice(&u32::try_from(list.len()).unwrap_or(u32::MAX).to_le_bytes());
        t
    }

    /// How many entities the data names: `count`, or more for a list longer than four (read
    /// them with [`World::target_entities`](crate::World::target_entities)).
    pub fn total(&self) -> u32 {
        if self.kind == 2 {
            u32::from_le_bytes([self.bytes[0], self.bytes[1], self.bytes[2], self.bytes[3]])
                .max(self.count)
        } else {
            self.count
        }
    }

    /// Whether the data names more entities than it holds (a longer list, or a cut one).
    pub fn is_longer_than_inline(&self) -> bool {
        self.total() > self.count
    }

    /// The frame-spill serial of a list longer than four (0: none).
    pub(crate) fn list(&self) -> u32 {
        if self.kind == 2 {
            u32::from_le_bytes([self.bytes[4], self.bytes[5], self.bytes[6], self.bytes[7]])
        } else {
            0
        }
    }

    /// Names the spill record of a list of `total` entities.
    pub(crate) fn set_list(&mut self, total: u32, serial: u32) {
        self.bytes[..4].copy_from_slice(&total.to_le_bytes());
        self.bytes[4..8].copy_from_slice(&serial.to_le_bytes());
    }

    /// A hit.
    pub fn hit(entity: Entity, point: [Fx; 3], normal: [Fx; 3], part: u32) -> TargetData {
        let mut t = TargetData::entity(entity);
        t.kind = 3;
        t.point = point;
        t.normal = normal;
        t.bytes[..4].copy_from_slice(&part.to_le_bytes());
        t
    }

    /// A location.
    pub fn location(source: [Fx; 3], target: [Fx; 3]) -> TargetData {
        let mut t = TargetData::NONE;
        t.kind = 4;
        t.source = source;
        t.point = target;
        t
    }

    /// Game-defined data.
    pub fn custom(kind: u16, bytes: [u8; 16]) -> TargetData {
        let mut t = TargetData::NONE;
        t.kind = 5;
        t.custom_kind = kind;
        t.bytes = bytes;
        t
    }

    /// The data as a typed view. A list longer than four shows its first four here; read
    /// all of it with [`World::target_entities`](crate::World::target_entities).
    pub fn view(&self) -> TargetView<'_> {
        match self.kind {
            1 => TargetView::Entity(self.entities[0]),
            2 => TargetView::Entities(&self.entities[..(self.count as usize).min(4)]),
            3 => TargetView::Hit {
                entity: self.entities[0],
                point: self.point,
                normal: self.normal,
                part: u32::from_le_bytes([
                    self.bytes[0],
                    self.bytes[1],
                    self.bytes[2],
                    self.bytes[3],
                ]),
            },
            4 => TargetView::Location { source: self.source, target: self.point },
            5 => TargetView::Custom { kind: self.custom_kind, bytes: &self.bytes },
            _ => TargetView::None,
        }
    }

    /// The first targeted entity, if any.
    pub fn first_entity(&self) -> Option<Entity> {
        match self.view() {
            TargetView::Entity(e) | TargetView::Hit { entity: e, .. } => e.some(),
            TargetView::Entities(l) => l.first().copied(),
            _ => None,
        }
    }
}

/// A gameplay event (GAS `FGameplayEventData`): sent to an entity, it can trigger abilities and
/// wake `WaitEvent` tasks (F-GA-12, F-GA-21).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct EventData {
    /// Targeting data carried by the event.
    pub target_data: TargetData,
    /// A magnitude.
    pub magnitude: Fx,
    /// Who caused the event.
    pub instigator: Entity,
    /// Who the event is about.
    pub target: Entity,
    /// An optional object.
    pub object: Entity,
    /// The event tag.
    pub tag: TagId,
    _pad: u16,
    /// Free bytes for the game.
    pub user: [u8; 20],
}

impl EventData {
    /// An event with a tag, instigator and target.
    pub fn new(tag: TagId, instigator: Entity, target: Entity) -> EventData {
        EventData { tag, instigator, target, ..EventData::default() }
    }

    /// Builder: sets the magnitude.
    #[must_use]
    pub fn with_magnitude(mut self, m: Fx) -> EventData {
        self.magnitude = m;
        self
    }

    /// Builder: sets the target data.
    #[must_use]
    pub fn with_target_data(mut self, t: TargetData) -> EventData {
        self.target_data = t;
        self
    }
}

/// Flags of a spec slot.
pub(crate) mod spec_flags {
    /// The slot holds a granted ability.
    pub const GRANTED: u16 = 1;
    /// The ability is active.
    pub const ACTIVE: u16 = 2;
    /// Remove the spec when it ends.
    pub const REMOVE_ON_END: u16 = 4;
    /// Its bound input is held.
    pub const INPUT_HELD: u16 = 8;
    /// Cost and cooldown were committed in this activation.
    pub const COMMITTED: u16 = 16;
}

/// A granted ability, as stored in the snapshot (F-GA-02).
///
/// # Abilities
///
/// Gameplay abilities: granting, the activation pipeline, costs and cooldowns, triggers, input
/// binding, ability tasks and targeting.
///
/// ## Model
///
/// An ability is *granted* to an owner entity (which holds the ability system) as an
/// [`AbilitySpec`] in one of the owner's spec slots; an [`AbilityHandle`] names the slot and
/// its generation. Activation runs the activation pipeline (F-GA-04) and every failure has a
/// reason ([`ActivationFailure`]). Behaviour that data cannot express is a registered
/// [`Behaviour`](crate::world::Behaviour): plain functions over the world and the ability's
/// fixed-size `Pod` state blob stored in the snapshot. Latent work runs in ability
/// [tasks](TaskSpec), small state machines in a snapshot pool whose results are delivered to
/// the behaviour's `on_task`.
///
/// Everything here is ordinary snapshot state: activations, cooldowns, costs, tasks and their
/// timers roll back and re-simulate like attributes do, on every peer (no prediction keys).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct AbilitySpec {
    /// The definition.
    pub def: AbilityDefId,
    /// The level.
    pub level: u16,
    /// The slot's generation (handles carry it).
    pub generation: u16,
    /// Flags (granted, active, …).
    pub flags: u16,
    /// The bound input id ([`NO_INPUT`] if unbound).
    pub input: u16,
    /// Dynamic ability tags (`u16::MAX`: unused), matched like the definition's tags (more
    /// than two, up to [`WorldConfig::ability_dynamic_tags`](crate::WorldConfig), are in the
    /// ability's row of the snapshot's `ability_tag_overflow` column: read them all with
    /// [`World::ability_dynamic_tags`](crate::World::ability_dynamic_tags)).
    pub dynamic_tags: [u16; 2],
    /// Its runtime cooldown tags (`World::set_cooldown_tags`): 0 the definition's
    /// `cooldown_tags`, 1 none, `2 + t` the tag `t` (see `cooldown_tags.rs`).
    pub(crate) cooldown_tag: u16,
    /// Activations so far.
    pub activation_serial: u32,
    /// The frame of the current (or last) activation.
    pub activated_at: Frame,
    /// The effect that granted it (its `seq`), 0 if granted directly.
    pub granted_by: u32,
    /// Automatic end frame ([`crate::num::NEVER`] if none).
    pub end_at: Frame,
    /// The object the ability came from (an item).
    pub source_object: Entity,
    /// The activation's random stream state.
    pub rng: u64,
}

impl AbilitySpec {
    /// Whether the slot holds a granted ability.
    pub fn is_granted(&self) -> bool {
        self.flags & spec_flags::GRANTED != 0
    }

    /// Whether the ability is active.
    pub fn is_active(&self) -> bool {
        self.flags & spec_flags::ACTIVE != 0
    }

    /// Whether its bound input is held.
    pub fn input_held(&self) -> bool {
        self.flags & spec_flags::INPUT_HELD != 0
    }

    /// The bound input id.
    pub fn input_id(&self) -> Option<u8> {
        (self.input != NO_INPUT).then_some(self.input as u8)
    }
}

/// An ability event, identical on every peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum AbilityEvent {
    /// An ability was granted.
    Granted {
        /// The new spec.
        handle: AbilityHandle,
        /// Its definition.
        def: AbilityDefId,
    },
    /// An ability was removed.
    Removed {
        /// The spec.
        handle: AbilityHandle,
        /// Its definition.
        def: AbilityDefId,
    },
    /// An ability activated.
    Activated {
        /// The spec.
        handle: AbilityHandle,
        /// Its definition.
        def: AbilityDefId,
        /// The activation serial.
        serial: u32,
        /// The triggering event tag, if event-activated.
        trigger: Option<TagId>,
    },
    /// An activation failed.
    ActivationFailed {
        /// The spec.
        handle: AbilityHandle,
        /// Its definition.
        def: AbilityDefId,
        /// Why.
        reason: ActivationFailure,
    },
    /// Cost and/or cooldown were committed.
    Committed {
        /// The spec.
        handle: AbilityHandle,
        /// The cooldown effect applied, if any.
        cooldown: Option<EffectHandle>,
    },
    /// An ability ended.
    Ended {
        /// The spec.
        handle: AbilityHandle,
        /// Its definition.
        def: AbilityDefId,
        /// Whether it was cancelled.
        was_cancelled: bool,
    },
    /// A task ended (finished, ended by its ability, or ended explicitly).
    TaskEnded {
        /// The task.
        task: TaskHandle,
        /// Its ability.
        ability: AbilityHandle,
    },
}

/// A gameplay event as recorded in a frame's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GameplayEvent {
    /// The frame.
    pub frame: Frame,
    /// The entity the event was sent to.
    pub to: Entity,
    /// The event.
    pub data: EventData,
}

/// One entry of the activation log (not part of the snapshot; rewound on load).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ActivationRecord {
    /// The frame.
    pub frame: Frame,
    /// The spec.
    pub handle: AbilityHandle,
    /// The definition.
    pub def: AbilityDefId,
    /// The outcome: the activation serial, or the failure.
    pub result: Result<u32, ActivationFailure>,
}
