#![doc = include_str!("../README.md")]
//!
//! # A tour of the crate
//!
//! The simulation's names are at the crate root (one flat list, grouped by theme below); the
//! optional tools around it are modules.
//!
//! - **Content**: tags, attributes, curves, effects, abilities and cues written in RON,
//!   validated with located errors and frozen into an immutable [`Content`] with a stable hash
//!   ([`Content::from_ron_str`], [`ContentBuilder`], [`ContentError`]). The frozen definitions
//!   ([`EffectDef`], [`AbilityDef`], [`AttrDef`], …) and the rule enums they use ([`ModOp`],
//!   [`StackKind`], [`CuePolicy`], …) are plain data.
//! - **The world**: [`World`] holds every piece of simulation state in one snapshot and advances
//!   one frame per [`World::step`]; its documentation lists the frame schedule and the *API
//!   themes*. A game plugs in through [`Game`] (its `Pod` types and systems) and [`Hooks`]
//!   (registered functions content refers to). Each step returns a [`FrameOutput`].
//! - **Tags** ([`TagSet`], [`TagQuery`], [`TagRequirements`]), **attributes** ([`AttrValue`],
//!   aggregation and clamps), **effects** ([`EffectSpec`], [`ActiveEffect`], [`EffectQuery`]),
//!   **abilities** ([`AbilitySpec`], [`ActivationFailure`], [`TaskSpec`], [`AbilityCtx`]) and
//!   **cue records** ([`CueRecord`], [`ActiveCue`]): the vocabulary of GAS, as snapshot data.
//! - Ids and handles ([`Entity`], [`EffectHandle`], [`AbilityHandle`], [`TagId`], …), numbers
//!   ([`Fx`], `I32F32`, and the saturating helpers of [`num`]), [`random`] streams kept in the
//!   snapshot, and [`Capacity`] for the raisable snapshot capacities.
//! - [`present`] and [`ui`]: exactly-once presentation under rollback — gameplay cues, and the
//!   UI event feed (attribute, effect, ability and execution events shown once, retracted if
//!   mispredicted, confirmed).
//! - [`session`] (GGRS sessions, local drivers, the emulated network, the guarded socket, the
//!   determinism harness), [`replay`] (record, verify, seek, bisect), [`debug`] (dumps, diffs,
//!   the inspector) and [`scenario`] (designers' scenario files in five modes).
//!
//! # Determinism contract
//!
//! The same content, hooks, seed and inputs give the same snapshot bytes at every frame, at any
//! rollback depth, in debug and release builds and on every little-endian machine: numbers are
//! fixed point with explicit saturating arithmetic, time is counted in frames, containers are
//! ordered arrays, random streams live in (or are derived from) the snapshot, and checksums are
//! xxh3-64 over the snapshot's bytes. `World::step` never fails and never panics; every decode
//! boundary returns a typed error that says what and where.

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]
#![warn(missing_debug_implementations)]

#[cfg(target_endian = "big")]
compile_error!(
    "rollback_abilities hashes snapshot bytes as little-endian; big-endian targets are not supported"
);

mod ability;
mod attribute;
mod bytes;
mod capacity;
mod content;
mod cue;
pub mod debug;
mod effect;
pub mod fuzz;
mod id;
mod located;
pub mod num;
mod observe;
pub mod present;
pub mod random;
pub mod replay;
pub mod scenario;
pub mod session;
mod tag;
pub mod ui;
mod world;

// The world and stepping.
pub use world::{
    AbilityCtx, AbilityInput, Applied, AttrCause, AttrEvent, Behaviour, BoxAnchor, BoxHit,
    BoxSource, CalcFn, CalcInput, CanActivateFn, Capture, Checksums, CustomTaskFn, Diagnostic,
    EffectEvent, ExecCtx, ExecFn, ExecOutput, ExecutedMod, FrameInputs, FrameOutput, Game,
    HIT_MEMORY_ROWS, Hooks, InputStatus, InvalidSnapshot, PlacedBox, PostExecuteContext,
    PostExecuteCtxFn, PostExecuteFn, PreChangeFn, PrepareFn, RemovalReason, RequirementFn,
    RequirementVerdict, Snapshot, SnapshotError, SnapshotProblem, SnapshotRing, Subsystem,
    TagEvent, TargetListError, TaskCtx, World, WorldConfig, WorldError,
};
// Content.
pub use content::boxes::{
    BodyDef, BodyId, BoxDef, BoxKind, BoxRect, HitDef, RawBody, RawBox, RawHit,
};
pub use content::def::ContentSettings;
pub use content::{Content, ContentBuilder, ContentError, ContentErrorKind};
// Ids and handles.
pub use id::{
    AbilityDefId, AbilityHandle, AbilitySetId, AttrId, AttrSetId, CueId, CurveId, EffectDefId,
    EffectHandle, Entity, FnId, FnKind, FnRef, TagId, TaskHandle, TimelineId,
};
// Tags.
pub use tag::{
    MAX_TAGS, TagContainer, TagQuery, TagQueryExpr, TagRegistry, TagRegistryError, TagRequirements,
    TagSet,
};
// Attributes.
pub use attribute::{
    AttrBound, AttrDef, AttrLevelRow, AttrSetDef, AttrValue, ClampMode, ModContribution, ModFilter,
    ModFilterFn, ModOp, MulPolicy,
};
// Effects.
pub use effect::{
    ActiveEffect, ApplyError, AttrTagFilterDef, CaptureSide, CaptureWhich, CueEvents, DurationDef,
    EffectContext, EffectCueDef, EffectDef, EffectOrigin, EffectQuery, EffectSpec, EffectTimers,
    GrantDef, GrantRemoval, INLINE_DEF, InlineMod, MAX_INLINE_MODS, MAX_MODIFIERS,
    MAX_SCOPED_MODIFIERS, MAX_SET_BY_CALLER, MAX_SET_BY_CALLER_KEYS, MAX_SOURCE_CAPTURES,
    MagnitudeDef, ModifierDef, SELF_ORIGIN, SbcEntry, ScopedModifierDef, ScopedTarget,
    StackExpiration, StackKind, StackPeriod, StackRefresh, StackingDef,
};
// Abilities.
pub use ability::{
    AbilityDef, AbilityEvent, AbilitySetDef, AbilitySpec, Activation, ActivationFailure,
    ActivationRecord, AttrCmp, CancelRuleDef, CommitPart, Confirmation, CooldownTagsError,
    CustomTaskKind, EventData, FailureKind, GameplayEvent, GrantError, InputEdge, Instancing,
    NO_INPUT, TargetData, TargetQuery, TargetView, TaskEvent, TaskRec, TaskResult, TaskSpec,
    TimelineDef, TriggerDef,
};
// Cue records.
pub use cue::{
    ActiveCue, CueDef, CueHandle, CueKey, CueKind, CueOrigin, CueParams, CuePolicy, CueRecord,
    StandaloneCue,
};
// Capacities.
pub use capacity::{Capacity, CapacityExceeded, MAX_SPEC_ROOM, MAX_TARGET_ROOM};
pub use located::LocatedError;
pub use num::{Frame, Fx, TickRate};

/// The most used items in one import.
pub mod prelude {
    pub use crate::{
        Applied, ApplyError, AttrId, AttrSetId, Content, EffectDefId, EffectHandle, EffectQuery,
        EffectSpec, Entity, FrameOutput, Fx, Game, Hooks, TagId, TagSet, World, WorldConfig,
    };
    pub use crate::{ModOp, MulPolicy};
}

#[cfg(doctest)]
#[doc = include_str!("../docs/guide.md")]
pub struct GuideDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/cues.md")]
pub struct CuesDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/replays.md")]
pub struct ReplaysDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/determinism.md")]
pub struct DeterminismDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/scenarios.md")]
pub struct ScenariosDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/cookbook.md")]
pub struct CookbookDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/security.md")]
pub struct SecurityDoctests;
