//! The world: all simulation state in one snapshot and every pipeline that changes it (see
//! [`World`]).
mod abilities;
mod attribute_table;
mod attributes;
mod boxes;
pub(crate) mod capacity;
pub(crate) mod cascade;
mod copy_hash;
mod cues;
mod effect_store;
mod effects;
pub(crate) mod hooks;
pub(crate) mod output;
pub(crate) mod state;
mod step;
mod tag_table;
mod tags;
mod time;
mod validate;

pub use crate::effect::ApplyError;
pub use abilities::{AbilityCtx, CustomTaskFn, TaskCtx};
pub use boxes::{BoxAnchor, BoxHit, BoxSource, HIT_MEMORY_ROWS, PlacedBox};
pub use capacity::{Capacity, CapacityExceeded, MAX_SPEC_ROOM, TargetListError};
pub use hooks::{
    Behaviour, CalcFn, CalcInput, CanActivateFn, Capture, ExecCtx, ExecFn, ExecOutput, Hooks,
    PostExecuteContext, PostExecuteCtxFn, PostExecuteFn, PreChangeFn, PrepareFn, RequirementFn,
    RequirementVerdict,
};
pub use output::{
    Applied, AttrCause, AttrEvent, Diagnostic, EffectEvent, ExecutedMod, FrameOutput,
    RemovalReason, TagEvent,
};
pub use state::{Checksums, Subsystem};
pub use step::{FrameInputs, InputStatus};

use crate::attribute::MAX_ATTR_SETS;
use crate::content::Content;
use crate::effect::{ActiveEffect, EffectOrigin, EffectTimers};
use crate::id::FnKind;
use crate::id::{AttrId, AttrSetId, Entity};
use crate::num::{Frame, Fx};
use cascade::{Scratch, Work};
use core::fmt;
use hooks::Bound;
use state::{Layout, State, entity_flags};
use std::sync::Arc;

/// The game's types and systems, bundled (like ggrs's `Config`).
///
/// All three data types are `Pod`: they live in the snapshot and are copied and hashed as bytes.
/// Use `()` for any the game does not need.
///
/// ```
/// use rollback_abilities::{Game, World};
///
/// #[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable,
///          serde::Serialize, serde::Deserialize)]
/// #[repr(C)]
/// struct Buttons { bits: u16 }
///
/// #[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Body { x: i32, y: i32 }
///
/// struct Duel;
/// impl Game for Duel {
///     type Input = Buttons;
///     type Component = Body;
///     type Global = ();
///     fn systems(world: &mut World<Self>) {
///         // Movement, hit detection → effect specs and events.
///         let _ = world;
///     }
/// }
/// ```
pub trait Game: 'static + Sized + Send + Sync {
    /// One player's input for one frame (a few bytes: buttons, quantised aim).
    type Input: bytemuck::Pod
        + Default
        + PartialEq
        + fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned
        + Send
        + Sync;
    /// The game's per-entity data (position, velocity, facing…).
    type Component: bytemuck::Pod + Default + fmt::Debug + Send + Sync;
    /// The game's global data (round timer, scores…).
    type Global: bytemuck::Pod + Default + fmt::Debug + Send + Sync;

    /// The game's systems, run in phase P6 of every frame. They may read inputs, move entities,
    /// detect hits and apply or queue effects.
    fn systems(world: &mut World<Self>) {
        let _ = world;
    }

    /// Maps one player's input to ability inputs: bit `i` of `held` means input id `i` is held,
    /// plus the generic confirm and cancel buttons (F-GA-13). Edges are derived from the
    /// previous frame's input, which the snapshot keeps.
    fn ability_input(input: &Self::Input) -> AbilityInput {
        let _ = input;
        AbilityInput::default()
    }

    /// The quantised aim of one player's input (`[-32767, 32767]` per axis), used by targeting
    /// tasks (F-TGT-02).
    fn aim(input: &Self::Input) -> [i16; 2] {
        let _ = input;
        [0, 0]
    }

    /// The game's spatial query for targeting tasks: find targets for `owner` (acting through
    /// `avatar`) along `aim` (a direction with components in `[-1, 1]`). The crate then applies
    /// the query's filters (self exclusion, required tag, persistence).
    fn target_query(
        world: &World<Self>,
        owner: Entity,
        avatar: Entity,
        aim: [Fx; 2],
        query: &crate::ability::TargetQuery,
    ) -> crate::ability::TargetData {
        let _ = (world, owner, avatar, aim, query);
        crate::ability::TargetData::NONE
    }

    /// The game's spatial query for area targeting, when a query may find more than the four
    /// entities a [`TargetData`](crate::ability::TargetData) made by
    /// [`TargetData::entities`](crate::ability::TargetData::entities) holds: push every
    /// candidate to `out` (in the order targets should be kept) and return `true`. The crate
    /// then filters them like [`Game::target_query`]'s and keeps at most the query's
    /// `max_targets` (0: as many as [`WorldConfig::max_target_entities`] allows); a list of more
    /// than four is delivered as target data whose entities
    /// [`World::target_entities`] reads. The default returns `false`, and the crate asks
    /// [`Game::target_query`].
    fn target_candidates(
        world: &World<Self>,
        owner: Entity,
        avatar: Entity,
        aim: [Fx; 2],
        query: &crate::ability::TargetQuery,
        out: &mut Vec<Entity>,
    ) -> bool {
        let _ = (world, owner, avatar, aim, query, out);
        false
    }

    /// A game-defined target filter (`TargetQuery::filter` ids other than 0): `false` drops the
    /// candidate.
    fn target_filter(world: &World<Self>, owner: Entity, candidate: Entity, filter: u32) -> bool {
        let _ = (world, owner, candidate, filter);
        true
    }

    /// Root motion from a `RootMotion` task: move `avatar` by `delta` (F-AT-05).
    fn root_motion(world: &mut World<Self>, avatar: Entity, delta: [Fx; 2]) {
        let _ = (world, avatar, delta);
    }

    /// Whether the world keeps a box anchor per entity for this game ([`World::set_anchor`],
    /// [`World::kept_anchor`]), in a snapshot column that exists only when this is `true` and
    /// the content declares a box. For a game with no positions of its own (the scenario
    /// runner's [`ScenarioGame`](crate::scenario::ScenarioGame), a test, a tool); a game with
    /// positions keeps them itself and answers [`Game::box_anchor`]. Default `false`.
    const KEEPS_ANCHORS: bool = false;

    /// Where an entity's hit, hurt and push boxes are this frame (its anchor point, facing and
    /// body; see [`BoxAnchor`]), for the box pass that runs after phase P6 when the content
    /// declares boxes. The default is the anchor the world keeps ([`World::kept_anchor`]):
    /// `None`, no boxes, unless the game sets [`Game::KEEPS_ANCHORS`] and places the entity.
    /// Positions are the game's: a game with positions reads them from its component column
    /// (or wherever it keeps them).
    fn box_anchor(world: &World<Self>, e: Entity) -> Option<BoxAnchor> {
        world.kept_anchor(e)
    }

    /// Moves `e` by `dx` along x: half the overlap of two push boxes, or a hit's push-back
    /// along the attacker's facing. The default moves the anchor the world keeps (nothing
    /// unless the game sets [`Game::KEEPS_ANCHORS`]).
    fn push_box(world: &mut World<Self>, e: Entity, dx: Fx) {
        if let Some(mut a) = world.kept_anchor(e) {
            a.x = crate::num::add(a.x, dx);
            world.set_anchor(e, a);
        }
    }

    /// A hit box hit an enemy's hurt box. Called once per delivered hit, after the world has
    /// pushed the target back, applied the hit's effect and sent its event; what it does runs
    /// at once. The default does nothing.
    fn on_hit(world: &mut World<Self>, hit: &BoxHit) {
        let _ = (world, hit);
    }
}

/// One player's ability inputs for one frame (see [`Game::ability_input`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AbilityInput {
    /// Bit `i`: input id `i` is held.
    pub held: u32,
    /// The generic confirm button is held.
    pub confirm: bool,
    /// The generic cancel button is held.
    pub cancel: bool,
}

/// Capacities of a world, fixed when it is built (the snapshot never grows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct WorldConfig {
    /// The most live entities. Saves and checksums cover the slots up to the highest one ever
    /// used, so unused headroom costs memory but no time.
    pub max_entities: u32,
    /// The most active effects per entity (the origin pool has a record for each of the
    /// `max_entities × effects_per_entity` effect slots, so it is never the limit).
    pub effects_per_entity: u16,
    /// The number of players (inputs per frame).
    pub players: u16,
    /// The session seed for random streams.
    pub seed: u64,
    /// The most granted abilities per entity.
    pub abilities_per_entity: u16,
    /// The capacity of the ability-task pool (spawning beyond it fails with
    /// `ActivationFailure::TaskCapacity`).
    pub max_tasks: u32,
    /// The most standalone persistent cues alive at once.
    pub max_standalone_cues: u16,
    /// The most full specs kept for active effects whose executions or calculations re-read
    /// them (only used when content has such effects; beyond it, the effect applies without
    /// its spec and a [`Diagnostic::SpecPoolFull`] is reported).
    pub max_stored_specs: u32,
    /// The most entities one target data holds (4 to 4096; default 4): an area query keeps
    /// at most this many targets. Beyond four, a list lives in the frame spill (see
    /// [`WorldConfig::spills_per_frame`]) and is read with [`World::target_entities`]. A query
    /// that finds more is cut to this many, reported as [`Diagnostic::CapacityExceeded`].
    #[serde(default = "capacity::default_target_entities")]
    pub max_target_entities: u16,
    /// The most SetByCaller values one effect spec holds (4 to 32; default 4, the spec's
    /// inline room). Values beyond four are set with [`World::set_set_by_caller`]; content whose
    /// effects read more keys than this, or whose abilities give their cost or cooldown more
    /// values, is refused when the world is built ([`WorldError::CapacityTooSmall`]).
    #[serde(default = "capacity::default_set_by_caller")]
    pub set_by_caller_per_spec: u16,
    /// The most dynamic granted tags one effect spec (and the active effect it becomes) holds
    /// (2 to 32; default 2, the inline room). Tags beyond two are added with
    /// [`World::add_granted_tag`]; content with an ability of more `cooldown_tags` than this
    /// is refused when the world is built ([`WorldError::CapacityTooSmall`]).
    #[serde(default = "capacity::default_granted_tags")]
    pub granted_tags_per_spec: u16,
    /// The most modifiers of one inline instant spec (4 to 32; default 4, the inline room);
    /// more than four are made with [`World::inline_spec`].
    #[serde(default = "capacity::default_inline_modifiers")]
    pub inline_modifiers_per_spec: u16,
    /// The most dynamic ability tags of one granted ability (2 to 32; default 2)
    /// ([`World::set_ability_dynamic_tags`]).
    #[serde(default = "capacity::default_ability_tags")]
    pub ability_dynamic_tags: u16,
    /// How many specs and target lists one frame can make beyond their inline room (1 to
    /// 4096; default 64): each lives in a record of the frame spill, a snapshot column that
    /// every step empties at its end (so sessions save nothing of it). Used only when one of
    /// the four capacities above is raised.
    #[serde(default = "capacity::default_spills")]
    pub spills_per_frame: u16,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            max_entities: 64,
            effects_per_entity: 32,
            players: 2,
            seed: 0,
            abilities_per_entity: 8,
            max_tasks: 256,
            max_standalone_cues: 32,
            max_stored_specs: 128,
            max_target_entities: capacity::default_target_entities(),
            set_by_caller_per_spec: capacity::default_set_by_caller(),
            granted_tags_per_spec: capacity::default_granted_tags(),
            inline_modifiers_per_spec: capacity::default_inline_modifiers(),
            ability_dynamic_tags: capacity::default_ability_tags(),
            spills_per_frame: capacity::default_spills(),
        }
    }
}

/// Why a world cannot be built.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorldError {
    /// Content refers to a function that is not registered (or registered as another kind).
    MissingFunction {
        /// The name content uses.
        name: String,
        /// The kind content needs.
        kind: FnKind,
        /// The kind it is registered as, if any.
        registered_as: Option<FnKind>,
        /// A function of the needed kind registered under a name that differs in case or
        /// spelling, if any.
        did_you_mean: Option<String>,
    },
    /// A registered function declares a capture of an attribute content does not have.
    UnknownCaptureAttribute {
        /// The function.
        function: String,
        /// The attribute name.
        attribute: String,
    },
    /// An effect needs more source snapshot captures than a spec holds.
    TooManySnapshotCaptures {
        /// The effect.
        effect: String,
        /// How many it needs.
        count: usize,
    },
    /// A capacity is zero or too large.
    InvalidConfig {
        /// The `WorldConfig` field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// The smallest value allowed.
        min: u64,
        /// The largest value allowed.
        max: u64,
    },
    /// An ability's `state_size` is smaller than its behaviour's state type.
    StateTooSmall {
        /// The ability.
        ability: String,
        /// Its `state_size`.
        declared: u16,
        /// The size of the behaviour's state type.
        needed: usize,
    },
    /// Content needs more room than a capacity of the configuration gives (for example an
    /// effect reads five SetByCaller keys and `set_by_caller_per_spec` is 4).
    CapacityTooSmall {
        /// What needs the room (the effect or ability and what it has).
        what: String,
        /// The capacity, its configured value and what is needed.
        exceeded: CapacityExceeded,
    },
    /// An execution's scoped modifier names an attribute the execution does not capture on
    /// that side (or captures only as a base value, which scoped modifiers never change).
    ScopedModifierNotCaptured {
        /// The effect.
        effect: String,
        /// The execution.
        execution: String,
        /// The attribute.
        attribute: String,
        /// The side the scoped modifier names.
        side: crate::effect::CaptureSide,
    },
}

impl fmt::Display for WorldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorldError::MissingFunction { name, kind, registered_as, did_you_mean } => {
                match registered_as {
                    None => write!(
                        f,
                        "content uses the {} \"{name}\" but no function of that name is \
                         registered in the Hooks",
                        kind.describe()
                    )?,
                    Some(other) => write!(
                        f,
                        "content uses \"{name}\" as a {} but it is registered as a {}",
                        kind.describe(),
                        other.describe()
                    )?,
                }
                match did_you_mean {
                    Some(s) => {
                        write!(f, " (did you mean \"{s}\", registered as a {}?)", kind.describe())
                    }
                    None => Ok(()),
                }
            }
            WorldError::UnknownCaptureAttribute { function, attribute } => {
                write!(f, "function \"{function}\" captures unknown attribute \"{attribute}\"")
            }
            WorldError::TooManySnapshotCaptures { effect, count } => write!(
                f,
                "effect \"{effect}\" needs {count} source snapshot captures; a spec holds at most {}",
                crate::effect::MAX_SOURCE_CAPTURES
            ),
            WorldError::InvalidConfig { field, value, min, max } => write!(
                f,
                "invalid world configuration: {field} must be in {min}..={max}, not {value}"
            ),
            WorldError::CapacityTooSmall { what, exceeded } => write!(f, "{what}: {exceeded}"),
            WorldError::StateTooSmall { ability, declared, needed } => write!(
                f,
                "ability \"{ability}\" declares state_size {declared} but its behaviour's state type needs {needed} bytes"
            ),
            WorldError::ScopedModifierNotCaptured { effect, execution, attribute, side } => write!(
                f,
                "effect \"{effect}\": a scoped modifier of execution \"{execution}\" changes \
                 {side:?} attribute \"{attribute}\", but the execution does not capture it on \
                 that side (a base-value capture does not count): declare \
                 `Capture::{}(\"{attribute}\")` when registering it",
                if *side == crate::effect::CaptureSide::Source { "source" } else { "target" }
            ),
        }
    }
}

impl std::error::Error for WorldError {}

crate::located::readable_debug!(WorldError);

/// Why a snapshot cannot be loaded.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The snapshot was taken from a world with other content or capacities.
    LayoutMismatch,
    /// Snapshot bytes have the right size but do not describe a state of this world (an id,
    /// count or link out of range: a damaged or crafted file). Names the first bad field.
    Invalid(InvalidSnapshot),
}

/// The first part of a snapshot's bytes that does not describe a state of this world
/// ([`SnapshotError::Invalid`]): `column[record][slot].field` and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InvalidSnapshot {
    /// The snapshot column (`"header"`, `"entities"`, `"effects"`, `"tasks"`, … — the names of
    /// the snapshot's columns in world dumps).
    pub column: &'static str,
    /// The record in the column (for `"effects"`, the entity whose effect rows it is), when the
    /// problem is in one.
    pub record: Option<usize>,
    /// The effect slot within the entity's rows (column `"effects"` only).
    pub slot: Option<usize>,
    /// The field of the record or column; empty when the whole record is at fault.
    pub field: &'static str,
    /// What is wrong with it.
    pub problem: SnapshotProblem,
}

impl InvalidSnapshot {
    /// `column[record][slot].field` is out of range.
    pub(crate) fn out_of_range(
        column: &'static str,
        record: Option<usize>,
        slot: Option<usize>,
        field: &'static str,
    ) -> Self {
        InvalidSnapshot { column, record, slot, field, problem: SnapshotProblem::OutOfRange }
    }

    /// `column.field` is `value`, above `limit`.
    pub(crate) fn exceeds(
        column: &'static str,
        field: &'static str,
        value: u64,
        limit: u64,
    ) -> Self {
        let problem = SnapshotProblem::Exceeds { value, limit };
        InvalidSnapshot { column, record: None, slot: None, field, problem }
    }
}

/// What is wrong with an [`InvalidSnapshot`]'s field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotProblem {
    /// An id, count, slot or link outside what the world's content and capacities allow.
    OutOfRange,
    /// A count or mark above the value that bounds it.
    Exceeds {
        /// The stored value.
        value: u64,
        /// The largest value it may have here.
        limit: u64,
    },
    /// A free list that does not end (it has a cycle).
    ListDoesNotEnd,
    /// An entity on the free list that is marked alive.
    FreeButAlive,
    /// A cached value that disagrees with the records it summarises.
    Stale,
    /// Bytes past the column's used records that a new world would not have.
    UnusedBytes {
        /// The first byte past the used records.
        from: usize,
    },
}

impl fmt::Display for InvalidSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.column)?;
        if let Some(r) = self.record {
            write!(f, "[{r}]")?;
        }
        if let Some(s) = self.slot {
            write!(f, "[{s}]")?;
        }
        if !self.field.is_empty() {
            write!(f, ".{}", self.field)?;
        }
        match self.problem {
            SnapshotProblem::OutOfRange => f.write_str(" is out of range"),
            SnapshotProblem::Exceeds { value, limit } => write!(f, " is {value}, above {limit}"),
            SnapshotProblem::ListDoesNotEnd => f.write_str(": the free list does not end"),
            SnapshotProblem::FreeButAlive => f.write_str(": on the free list but alive"),
            SnapshotProblem::Stale => f.write_str(" disagrees with the records it summarises"),
            SnapshotProblem::UnusedBytes { from } => write!(
                f,
                ": the bytes past its used records (from byte {from}) are not those of a new world"
            ),
        }
    }
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::LayoutMismatch => {
                write!(f, "the snapshot comes from a world with different content or capacities")
            }
            SnapshotError::Invalid(at) => {
                write!(f, "the snapshot bytes are not a valid state of this world: {at}")
            }
        }
    }
}

impl std::error::Error for SnapshotError {}

crate::located::readable_debug!(SnapshotError);

/// A saved copy of a world's state. Saving into an existing snapshot and loading from one copy
/// memory without allocating.
pub struct Snapshot<G: Game> {
    pub(crate) state: State<G>,
    pub(crate) content_hash: u64,
}

impl<G: Game> Clone for Snapshot<G> {
    fn clone(&self) -> Self {
        Snapshot { state: self.state.clone(), content_hash: self.content_hash }
    }
}

impl<G: Game> fmt::Debug for Snapshot<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("frame", &self.state.header.frame)
            .field("bytes", &self.state.byte_len())
            .finish()
    }
}

impl<G: Game> Snapshot<G> {
    /// The frame the snapshot's world would step next.
    pub fn next_frame(&self) -> Frame {
        self.state.header.frame
    }

    /// The checksums of the saved state.
    pub fn checksums(&self) -> Checksums {
        self.state.checksums()
    }

    /// The snapshot's bytes, column after column (the bytes the checksum covers).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.state.byte_len());
        self.state.for_each_column(|_, _, b| v.extend_from_slice(b));
        v
    }

    /// The size in bytes.
    pub fn byte_len(&self) -> usize {
        self.state.byte_len()
    }
}

/// The deterministic simulation world: all simulation state in one snapshot, advanced one
/// frame at a time.
///
/// A [`World`] owns frozen [`Content`], the bound [`Hooks`] and the snapshot state. It is
/// generic over one [`Game`] type that bundles the game's own `Pod` types (input, per-entity
/// component, global block) and its systems, the way ggrs bundles its generics in `Config`.
///
/// # Frame schedule
///
/// [`World::step`] runs these phases in order; the same-frame work queue settles
/// after every phase:
///
/// | Phase | Work |
/// |---|---|
/// | P0 Input | store inputs and their status, derive pressed/released edges |
/// | P1 Periodic | periodic executions due this frame |
/// | P2 Expiry | effects whose `expires_at` is this frame leave (stack expiration policy) |
/// | P3–P5 | gameplay events, abilities, ability tasks |
/// | P6 User systems | [`Game::systems`] |
/// | P7 Apply | effects queued with [`World::queue_effect`] are applied |
/// | P8 Output | the [`FrameOutput`] is final |
///
/// # Mutations and the cascade
///
/// Calls that change simulation state (`apply_effect`, `set_base`, `add_loose_tag`, …) run at
/// once and settle (tag events, inhibition, attribute re-evaluation) before returning — unless
/// they are made from inside a running change (a post-execute hook, for example), in which case
/// they are queued and run right after it, in order (D-9). A frame processes at most
/// `max_cascade_steps` queued changes; the rest are dropped with a [`Diagnostic::CascadeCap`],
/// identically on every peer.
///
/// # API themes
///
/// `World` has many methods because it is the one owner of every piece of simulation state.
/// They fall into a few themes; each theme's file (or folder) of `src/world/` is named after
/// it.
///
/// **Building and stepping** (`mod.rs`, `step.rs`) — [`World::new`], [`World::step`],
/// [`World::step_with`] (a script in phase P6), [`World::set_before_abilities`] (a hook before the
/// abilities run), [`World::frame`], [`World::output`], [`World::input`], [`World::input_status`].
///
/// **Snapshots and checksums** (`mod.rs`; the column table in `state.rs`) — [`World::snapshot`],
/// [`World::save_into`], [`World::load`], [`World::load_bytes`], [`World::checksum`],
/// [`World::checksums`] (one per subsystem), [`World::snapshot_bytes`]. Everything that changes
/// during a frame is in the snapshot; save and load are copies.
///
/// **Entities and game data** (`mod.rs`) — [`World::spawn`], [`World::spawn_actor`],
/// [`World::despawn`], [`World::is_alive`], [`World::entities`], [`World::component`] /
/// [`World::component_mut`], [`World::global`] / [`World::global_mut`],
/// [`World::random`] / [`World::random_for`] (streams kept in the snapshot).
///
/// **Attributes** (`attributes.rs`, over the values and evaluation rules of `attribute_table.rs`) — [`World::attr`],
/// [`World::attr_value`], [`World::base`], [`World::set_base`], [`World::init_attributes`],
/// [`World::add_attribute_set`], [`World::remove_attribute_set`].
///
/// **Tags** (`tags.rs`, over the counts and presence bits of `tag_table.rs`) — [`World::has_tag`], [`World::has_tag_exact`],
/// [`World::tag_count`], [`World::tags`], [`World::explicit_tags`], [`World::matches`],
/// [`World::passes`], loose tags ([`World::add_loose_tag`], [`World::remove_loose_tag`],
/// [`World::set_loose_tag_count`]).
///
/// **Effects** (`effects/`: `spec.rs`, `apply.rs`, `execute.rs`, `periodic.rs`,
/// `magnitude.rs`) — specs ([`World::make_spec`], [`World::set_set_by_caller`],
/// [`World::add_granted_tag`], [`World::inline_spec`]), applying ([`World::apply_effect`],
/// [`World::queue_effect`]), removing ([`World::remove_effect`],
/// [`World::remove_effect_stacks`], [`World::remove_matching`]), changing
/// ([`World::set_effect_level`], [`World::set_remaining`], [`World::extend_effect`]) and
/// querying ([`World::effect`], [`World::effects`], [`World::effects_matching`] with an
/// [`EffectQuery`](crate::EffectQuery), [`World::effect_remaining`],
/// [`World::effect_magnitude`]).
///
/// **Abilities** (`abilities/`: `activate.rs`, `input.rs`, `run.rs` for tasks, `cooldown_tags.rs`,
/// `ctx.rs` for the behaviour's context) — granting ([`World::grant_ability`],
/// [`World::grant_ability_set`], [`World::remove_ability`], [`World::set_ability_level`]), input
/// ([`World::bind_player`], [`World::set_ability_input`], [`World::buffered_press`]), activating
/// ([`World::try_activate`], [`World::try_activate_with_event`], [`World::can_activate`],
/// [`World::send_event`]), ending ([`World::end_ability`], [`World::cancel_ability`],
/// [`World::cancel_abilities_matching`]), cooldowns ([`World::ability_cooldown_remaining`],
/// [`World::set_cooldown_tags`]), tasks ([`World::task`], [`World::tasks_of`], [`World::end_task`])
/// and queries ([`World::ability`], [`World::abilities`], [`World::find_ability`],
/// [`World::last_activation`]).
///
/// **Time** (`time.rs`) — per-entity hitstop and time scale ([`World::hitstop`],
/// [`World::set_time_scale`], [`World::is_time_held`]) and timeline rates
/// ([`World::set_timeline_rate`]).
///
/// **Cues** (`cues.rs`) — [`World::execute_cue`], [`World::add_cue`], [`World::remove_cue`], and
/// the persistent cues derived from the snapshot, [`World::active_cues`], that a
/// [`CueDirector`](crate::present::CueDirector) diffs against.
pub struct World<G: Game> {
    pub(crate) content: Arc<Content>,
    pub(crate) bound: Arc<Bound<G>>,
    pub(crate) state: State<G>,
    pub(crate) scratch: Scratch,
    pub(crate) out: FrameOutput,
    pub(crate) config: WorldConfig,
    /// Inside `step`.
    pub(crate) in_step: bool,
    /// Whether any effect definition follows a source attribute live.
    pub(crate) live_source_defs: bool,
    /// Input statuses of the frame being stepped (outside the snapshot: see `input_status`).
    pub(crate) input_status: Vec<InputStatus>,
    /// Recent activation attempts (a debug ring outside the snapshot, rewound on load).
    pub(crate) activation_log: std::collections::VecDeque<crate::ability::ActivationRecord>,
    /// The function run in every frame just before phase P4 (see `World::set_before_abilities`).
    pub(crate) before_abilities: Option<step::FrameHook<G>>,
    /// The box pass's reused buffers.
    pub(crate) box_scratch: boxes::BoxScratch,
}

impl<G: Game> fmt::Debug for World<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("World")
            .field("frame", &self.frame())
            .field("alive", &self.state.header.alive)
            .field("snapshot_bytes", &self.state.byte_len())
            .finish()
    }
}

impl<G: Game> World<G> {
    /// Builds a world: binds content's functions to `hooks` and allocates the snapshot.
    pub fn new(
        content: Arc<Content>,
        hooks: &Hooks<G>,
        config: WorldConfig,
    ) -> Result<World<G>, WorldError> {
        if config.max_entities == 0 || config.max_entities > crate::capacity::MAX_ENTITIES {
            return Err(WorldError::InvalidConfig {
                field: "max_entities",
                value: config.max_entities.into(),
                min: 1,
                max: crate::capacity::MAX_ENTITIES.into(),
            });
        }
        if config.effects_per_entity == 0 {
            return Err(WorldError::InvalidConfig {
                field: "effects_per_entity",
                value: 0,
                min: 1,
                max: u16::MAX.into(),
            });
        }
        capacity::check_config(&config, &content)?;
        let bound = hooks.bind(&content)?;
        let mods = content
            .effect_defs()
            .iter()
            .filter(|d| !d.is_instant())
            // A period computed at application is kept after the modifiers' magnitudes.
            .map(|d| d.modifiers.len() + usize::from(d.period_magnitude.is_some()))
            .max()
            .unwrap_or(0);
        let stored_specs = if content.effect_defs().iter().any(|d| d.keeps_spec) {
            config.max_stored_specs as usize
        } else {
            0
        };
        let max_state =
            content.ability_defs().iter().map(|a| usize::from(a.state_size)).max().unwrap_or(0);
        let layout = Layout {
            abilities: usize::from(config.abilities_per_entity),
            state_words: max_state.div_ceil(8),
            tasks: config.max_tasks as usize,
            cues: usize::from(config.max_standalone_cues),
            entities: config.max_entities as usize,
            attrs: content.num_attrs(),
            tags: content.tags().len(),
            tag_words: content.tags().words(),
            effects: usize::from(config.effects_per_entity),
            mods,
            stored_specs,
            players: usize::from(config.players),
            hit_memory: if content.has_hit_boxes() { boxes::HIT_MEMORY_ROWS } else { 0 },
            anchors: usize::from(G::KEEPS_ANCHORS && content.has_boxes()),
            ..capacity::extra_layout(&config)
        };
        let cap = content.settings().max_cascade_steps;
        Ok(World {
            state: State::new(layout, config.seed),
            scratch: Scratch::new(&layout, cap),
            live_source_defs: content.effect_defs().iter().any(|d| d.has_live_source_captures),
            content,
            bound: Arc::new(bound),
            out: FrameOutput::with_capacity(layout.entities),
            config,
            in_step: false,
            activation_log: std::collections::VecDeque::with_capacity(256),
            input_status: vec![InputStatus::Confirmed; usize::from(config.players)],
            before_abilities: None,
            box_scratch: boxes::BoxScratch::default(),
        })
    }

    /// The frozen content.
    pub fn content(&self) -> &Arc<Content> {
        &self.content
    }

    /// The capacities the world was built with.
    pub fn config(&self) -> &WorldConfig {
        &self.config
    }

    /// A stable description of the bound hooks (part of the session handshake).
    pub fn hooks_signature(&self) -> &str {
        &self.bound.signature
    }

    /// The current frame: the frame being stepped, or the last stepped frame between steps
    /// (0 before the first step). Expectations "at frame f" read the world after `step` of f.
    pub fn frame(&self) -> Frame {
        if self.in_step {
            self.state.header.frame
        } else {
            self.state.header.frame.saturating_sub(1)
        }
    }

    /// The frame the next [`World::step`] simulates (GGRS's current frame).
    pub fn next_frame(&self) -> Frame {
        self.state.header.frame
    }

    /// The session seed.
    pub fn seed(&self) -> u64 {
        self.state.header.seed
    }

    /// The output of the last step (or of setup calls since then).
    pub fn output(&self) -> &FrameOutput {
        &self.out
    }

    // ----------------------------------------------------------------------------------------
    // Entities
    // ----------------------------------------------------------------------------------------

    /// Spawns an entity without an ability system (a projectile, a pickup).
    ///
    /// # Errors
    ///
    /// [`Capacity::Entities`](crate::Capacity::Entities) when
    /// [`WorldConfig::max_entities`] are alive (also reported as
    /// [`Diagnostic::EntityCapacity`]).
    pub fn spawn(&mut self) -> Result<Entity, CapacityExceeded> {
        self.spawn_inner(false, 0)
    }

    /// Spawns an entity with an ability system and the given attribute sets at their default
    /// values.
    ///
    /// # Errors
    ///
    /// As [`World::spawn`].
    pub fn spawn_actor(&mut self, sets: &[AttrSetId]) -> Result<Entity, CapacityExceeded> {
        let mask = sets
            .iter()
            .filter(|s| s.index() < MAX_ATTR_SETS)
            .fold(0u64, |m, s| m | (1 << s.index()));
        self.spawn_inner(true, mask)
    }

    fn spawn_inner(&mut self, asc: bool, sets: u64) -> Result<Entity, CapacityExceeded> {
        let h = &mut self.state.header;
        let index = if h.free_head != u32::MAX {
            let i = h.free_head;
            h.free_head = self.state.entities[i as usize].next_free;
            i
        } else if (h.high_water as usize) < self.state.entities.len() {
            h.high_water += 1;
            h.high_water - 1
        } else {
            self.out.diagnostics.push(Diagnostic::EntityCapacity);
            return Err(CapacityExceeded {
                capacity: crate::capacity::Capacity::Entities,
                needed: h.alive.saturating_add(1),
                limit: self.config.max_entities,
            });
        };
        h.alive += 1;
        let rec = &mut self.state.entities[index as usize];
        rec.generation = rec.generation.wrapping_add(1).max(1);
        rec.flags = entity_flags::ALIVE | if asc { entity_flags::ASC } else { 0 };
        rec.sets = sets;
        rec.next_free = u32::MAX;
        let e = Entity { index, generation: rec.generation };
        self.effect_store_mut().clear(index);
        // Attributes at their defaults.
        self.attr_table_mut().init(index, sets);
        let a = self.state.layout.attrs;
        // Clamp initial values (bounds may reference other defaults).
        if asc {
            for i in 0..a {
                let attr = AttrId(i as u16);
                if self.has_attr(e, attr) {
                    self.mark_attr_dirty(index, attr, AttrCause::SetBase);
                }
            }
            self.settle_quiet();
        }
        Ok(e)
    }

    /// Despawns an entity: its effects are removed (events with
    /// [`RemovalReason::TargetDespawned`]), its tags cleared and its slot freed. Stale handles
    /// to it resolve to nothing from now on.
    pub fn despawn(&mut self, e: Entity) {
        self.submit(Work::Despawn { entity: e });
    }

    /// Whether an entity handle refers to a live entity.
    pub fn is_alive(&self, e: Entity) -> bool {
        self.state.is_alive(e)
    }

    /// Whether a live entity has an ability system.
    pub fn has_ability_system(&self, e: Entity) -> bool {
        self.state.is_alive(e)
            && self.state.entities[e.index as usize].flags & entity_flags::ASC != 0
    }

    /// Every live entity in ascending index order (no allocation).
    pub fn entities(&self) -> impl Iterator<Item = Entity> + '_ {
        self.state.entities[..self.state.header.high_water as usize]
            .iter()
            .enumerate()
            .filter(|(_, r)| r.flags & entity_flags::ALIVE != 0)
            .map(|(i, r)| Entity { index: i as u32, generation: r.generation })
    }

    /// The number of live entities.
    pub fn entity_count(&self) -> u32 {
        self.state.header.alive
    }

    /// The game's component of an entity.
    pub fn component(&self, e: Entity) -> Option<&G::Component> {
        if self.is_alive(e) { self.state.components.get(e.index as usize) } else { None }
    }

    /// The game's component of an entity, mutably.
    pub fn component_mut(&mut self, e: Entity) -> Option<&mut G::Component> {
        if self.is_alive(e) { self.state.components.get_mut(e.index as usize) } else { None }
    }

    /// The game's global block.
    pub fn global(&self) -> &G::Global {
        &self.state.global[0]
    }

    /// The game's global block, mutably.
    pub fn global_mut(&mut self) -> &mut G::Global {
        &mut self.state.global[0]
    }

    /// A player's input this frame (the default input for an unknown player).
    pub fn input(&self, player: usize) -> G::Input {
        self.state.inputs.get(player).copied().unwrap_or_default()
    }

    /// A player's input in the previous frame.
    pub fn previous_input(&self, player: usize) -> G::Input {
        self.state.prev_inputs.get(player).copied().unwrap_or_default()
    }

    /// A player's input status this frame.
    ///
    /// `Disconnected` is the same on every peer: it starts at the frame the survivors agreed a
    /// player left ([`SessionEvent::Left`](crate::session::SessionEvent::Left)), and replays
    /// record it, so a game's systems may branch on it (a disconnected player's fighter
    /// stands still, a bot takes over). `Predicted` and `Confirmed` are not: a correctly
    /// predicted input is `Predicted` on one peer and `Confirmed` on another, and a replay
    /// records both as `Confirmed` — simulation logic must not tell them apart. The status is
    /// not part of the snapshot: every step sets it from the frame's inputs.
    pub fn input_status(&self, player: usize) -> InputStatus {
        self.input_status.get(player).copied().unwrap_or_default()
    }

    /// The number of players.
    pub fn players(&self) -> usize {
        self.state.inputs.len()
    }

    /// The world's global random stream (its state is in the snapshot).
    pub fn random(&mut self) -> crate::random::Stream {
        let mut s = crate::random::Stream::from_state(self.state.header.rng_state);
        // Advance the stored state so the next call draws fresh numbers.
        s.next_u32();
        self.state.header.rng_state = s.state();
        crate::random::Stream::derive(self.state.header.seed, &[s.state()])
    }

    /// A random stream derived from the session seed and keys, without touching state (the
    /// same keys give the same numbers on every peer and at every rollback depth).
    pub fn random_for(&self, keys: &[u64]) -> crate::random::Stream {
        crate::random::Stream::derive(self.state.header.seed, keys)
    }

    // ----------------------------------------------------------------------------------------
    // Effects (the pipeline lives in `crate::effect`)
    // ----------------------------------------------------------------------------------------

    /// The active effects of an entity in application order.
    pub fn effects(&self, e: Entity) -> &[ActiveEffect] {
        self.effect_store().effects_of(e)
    }

    /// When each active effect of an entity expires and next executes: parallel to
    /// [`World::effects`] (the same index is the same effect). [`World::effect_remaining`]
    /// reads one effect's.
    pub fn effect_timers(&self, e: Entity) -> &[EffectTimers] {
        self.effect_store().timers_of(e)
    }

    /// Who applied each active effect of an entity, in the order of [`World::effects`] (the
    /// n-th origin is the n-th effect's). Effects the entity applied to itself without a
    /// source object or an ability yield [`EffectOrigin::of_self`]; the others' are read from
    /// the world's origin pool.
    ///
    /// ```
    /// use rollback_abilities::{EffectOrigin, prelude::*};
    /// use std::sync::Arc;
    /// # struct G; impl Game for G { type Input = u8; type Component = (); type Global = (); }
    ///
    /// let content = Arc::new(Content::from_ron_str(r#"(
    ///     attribute_sets: { "Vitals": (attributes: { "Health": (default: 100) }) },
    ///     effects: { "Mark": (duration: Infinite) },
    /// )"#)?);
    /// let mut w = World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default())?;
    /// let vitals = content.attr_set("Vitals")?;
    /// let (target, source) = (w.spawn_actor(&[vitals]).unwrap(), w.spawn_actor(&[vitals]).unwrap());
    /// let spec = w.make_spec(content.effect("Mark")?, 1, source);
    /// w.apply_effect(spec, target).unwrap();
    /// let (effects, origins) = (w.effects(target), w.effect_origins(target));
    /// assert_eq!((effects.len(), origins.len()), (1, 1));
    /// let origins: Vec<EffectOrigin> = origins.collect();
    /// assert_eq!(origins[0].instigator, source);
    /// // A self-applied effect keeps no pooled record; its origin is the target itself.
    /// let spec = w.make_spec(content.effect("Mark")?, 1, target);
    /// w.apply_effect(spec, target).unwrap();
    /// assert_eq!(w.effect_origins(target).last(), Some(EffectOrigin::of_self(target)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn effect_origins(&self, e: Entity) -> impl ExactSizeIterator<Item = EffectOrigin> + '_ {
        self.effects(e).iter().map(move |ef| self.origin_of(e, ef))
    }

    // ----------------------------------------------------------------------------------------
    // Snapshot
    // ----------------------------------------------------------------------------------------

    /// The checksums of the current state.
    pub fn checksums(&self) -> Checksums {
        self.state.checksums()
    }

    /// The total checksum of the current state.
    pub fn checksum(&self) -> u64 {
        self.state.checksums().total
    }

    /// The snapshot size in bytes: the size of its byte form ([`World::state_bytes`]), fixed
    /// by the world's capacities.
    pub fn snapshot_bytes(&self) -> usize {
        self.state.byte_len()
    }

    /// The bytes of the current state that a save copies and the checksum covers: the
    /// snapshot without the records no state of this world has used yet — the entity slots
    /// and task slots above their highest ever used (in this timeline) and the unused records
    /// of the effect-origin pool, which all hold what [`World::new`] put there. A save into a
    /// snapshot whose state used more also resets that snapshot's extra records.
    ///
    /// ```
    /// use rollback_abilities::prelude::*;
    /// # struct G; impl Game for G { type Input = u8; type Component = (); type Global = (); }
    ///
    /// let content = std::sync::Arc::new(Content::from_ron_str(
    ///     r#"(attribute_sets: { "Vitals": (attributes: { "Health": (default: 100) }) })"#,
    /// )?);
    /// let config = WorldConfig { max_entities: 16, ..WorldConfig::default() };
    /// let mut w = World::<G>::new(content.clone(), &Hooks::new(), config)?;
    /// let vitals = content.attr_set("Vitals")?;
    /// for _ in 0..2 {
    ///     w.spawn_actor(&[vitals]).unwrap(); // 2 of the 16 entity slots used
    /// }
    /// assert!(w.live_snapshot_bytes() * 5 < w.snapshot_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn live_snapshot_bytes(&self) -> usize {
        self.state.live_byte_len()
    }

    /// A new snapshot of the current state (allocates; use [`World::save_into`] in loops).
    pub fn snapshot(&self) -> Snapshot<G> {
        Snapshot { state: self.state.clone(), content_hash: self.content.hash() }
    }

    /// Saves the current state into an existing snapshot of the same world (no allocation).
    pub fn save_into(&self, snap: &mut Snapshot<G>) -> Result<(), SnapshotError> {
        if snap.state.layout != self.state.layout || snap.content_hash != self.content.hash() {
            return Err(SnapshotError::LayoutMismatch);
        }
        snap.state.copy_from(&self.state);
        Ok(())
    }

    /// [`World::save_into`] and [`World::checksums`] in one pass (no allocation): each column is
    /// hashed chunk by chunk right after it is copied, while the chunk is still in cache. What
    /// a GGRS save request needs; the checksums are those of the saved (and current) state.
    ///
    /// ```
    /// # use rollback_abilities::{Content, Game, Hooks, World, WorldConfig};
    /// # struct G; impl Game for G { type Input = u8; type Component = (); type Global = (); }
    /// # let content = std::sync::Arc::new(Content::from_ron_str("()")?);
    /// let mut world = World::<G>::new(content, &Hooks::new(), WorldConfig::default()).unwrap();
    /// world.spawn_actor(&[]).unwrap();
    /// let mut snap = world.snapshot();
    /// world.step(&[0, 0]);
    /// let sums = world.save_into_checksummed(&mut snap).unwrap();
    /// assert_eq!(sums, world.checksums());
    /// assert_eq!(sums, snap.checksums());
    /// # Ok::<(), rollback_abilities::ContentError>(())
    /// ```
    pub fn save_into_checksummed(
        &self,
        snap: &mut Snapshot<G>,
    ) -> Result<Checksums, SnapshotError> {
        if snap.state.layout != self.state.layout || snap.content_hash != self.content.hash() {
            return Err(SnapshotError::LayoutMismatch);
        }
        Ok(snap.state.copy_from_checksummed(&self.state))
    }

    /// Replaces the current state with a snapshot (no allocation).
    pub fn load(&mut self, snap: &Snapshot<G>) -> Result<(), SnapshotError> {
        if snap.state.layout != self.state.layout || snap.content_hash != self.content.hash() {
            return Err(SnapshotError::LayoutMismatch);
        }
        self.state.copy_from(&snap.state);
        self.scratch.reset();
        self.in_step = false;
        // Records of frames the loaded state has not simulated yet belong to another timeline.
        let next = self.state.header.frame;
        self.activation_log.retain(|r| r.frame < next);
        self.out.clear(next.saturating_sub(1));
        Ok(())
    }

    /// Replaces the current state with snapshot bytes (as [`World::state_bytes`] or a replay
    /// wrote them) of a world with the same content and capacities.
    ///
    /// The bytes are untrusted: they are loaded into a copy and validated against the content
    /// and capacities first (ids, counts, slots, free lists, entity references), so a damaged
    /// or crafted snapshot is [`SnapshotError::Invalid`] and leaves the world unchanged.
    pub fn load_bytes(&mut self, bytes: &[u8]) -> Result<(), SnapshotError> {
        let mut candidate = self.state.clone();
        if !candidate.load_bytes(bytes) {
            return Err(SnapshotError::LayoutMismatch);
        }
        candidate.validate(&self.content).map_err(SnapshotError::Invalid)?;
        self.state = candidate;
        self.scratch.reset();
        self.in_step = false;
        let next = self.state.header.frame;
        self.activation_log.retain(|r| r.frame < next);
        self.out.clear(next.saturating_sub(1));
        Ok(())
    }

    /// The current state's bytes, column after column.
    pub fn state_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.state.byte_len());
        self.state.for_each_column(|_, _, b| v.extend_from_slice(b));
        v
    }

    /// Each snapshot column: subsystem, name and bytes (for dumps and field-level diffs).
    pub fn for_each_column(&self, f: impl FnMut(Subsystem, &'static str, &[u8])) {
        self.state.for_each_column(f)
    }

    // ----------------------------------------------------------------------------------------
    // Internals shared by the subsystems
    // ----------------------------------------------------------------------------------------

    /// Reads a capture value (base, current or bonus) of a live entity; 0 otherwise.
    pub(crate) fn read_capture(
        &self,
        e: Entity,
        a: AttrId,
        which: crate::effect::CaptureWhich,
    ) -> Fx {
        use crate::effect::CaptureWhich;
        let Some(v) = self.attr_value(e, a) else { return Fx::ZERO };
        let def = self.content.attr_def(a);
        let current = if def.clamp_mode == crate::attribute::ClampMode::GasCompat {
            // GasCompat captures see the raw aggregate (no clamp).
            self.evaluate_raw(e.index, a)
        } else {
            v.current
        };
        match which {
            CaptureWhich::Current => current,
            CaptureWhich::Base => v.base,
            CaptureWhich::Bonus => crate::num::sub(current, v.base),
        }
    }

    pub(crate) fn entity_of(&self, index: u32) -> Entity {
        Entity { index, generation: self.state.entities[index as usize].generation }
    }
}

/// A ring of pre-allocated snapshots indexed by frame (`frame % len`), as a rollback session
/// needs: saving and loading copy into and out of existing buffers without allocating.
pub struct SnapshotRing<G: Game> {
    slots: Vec<Snapshot<G>>,
    frames: Vec<Option<Frame>>,
}

impl<G: Game> fmt::Debug for SnapshotRing<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnapshotRing").field("frames", &self.frames).finish()
    }
}

impl<G: Game> SnapshotRing<G> {
    /// A ring of `len` snapshots shaped like `world` (allocates once).
    pub fn new(world: &World<G>, len: usize) -> SnapshotRing<G> {
        let len = len.max(1);
        SnapshotRing {
            slots: (0..len).map(|_| world.snapshot()).collect(),
            frames: vec![None; len],
        }
    }

    /// The number of slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the ring has no slots (never: it has at least one).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Saves the world's state under its next frame ([`World::next_frame`]); returns the slot.
    pub fn save(&mut self, world: &World<G>) -> usize {
        let frame = world.next_frame();
        let slot = frame as usize % self.slots.len();
        // A world of other content or capacities than the ring's cannot be saved into it; the
        // slot then holds no frame, so a later load reports it missing instead of loading
        // another frame's state.
        let saved = world.save_into(&mut self.slots[slot]).is_ok();
        self.frames[slot] = saved.then_some(frame);
        slot
    }

    /// [`SnapshotRing::save`] that also returns the saved state's checksums, computed while
    /// copying ([`World::save_into_checksummed`]): about the cost of the copy alone plus a
    /// hash of data already in cache, instead of a copy and a second pass over memory.
    pub fn save_checksummed(&mut self, world: &World<G>) -> Checksums {
        let frame = world.next_frame();
        let slot = frame as usize % self.slots.len();
        // As in `save`: a world the ring was not built for leaves the slot empty (its checksums
        // are still those of its state).
        match world.save_into_checksummed(&mut self.slots[slot]) {
            Ok(sums) => {
                self.frames[slot] = Some(frame);
                sums
            }
            Err(_) => {
                self.frames[slot] = None;
                world.checksums()
            }
        }
    }

    /// Loads the state saved for `frame` (the state before stepping `frame`). `false` if that
    /// frame is no longer in the ring.
    pub fn load(&self, world: &mut World<G>, frame: Frame) -> bool {
        let slot = frame as usize % self.slots.len();
        if self.frames[slot] != Some(frame) {
            return false;
        }
        world.load(&self.slots[slot]).is_ok()
    }

    /// The snapshot saved for `frame`, if still in the ring.
    pub fn get(&self, frame: Frame) -> Option<&Snapshot<G>> {
        let slot = frame as usize % self.slots.len();
        (self.frames[slot] == Some(frame)).then(|| &self.slots[slot])
    }

    /// The snapshot in a slot.
    pub fn slot(&self, slot: usize) -> Option<&Snapshot<G>> {
        self.slots.get(slot)
    }
}
