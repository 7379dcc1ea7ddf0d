#![doc = include_str!("../README.md")]
//!
//! # A tour of the crate
//!
//! - [`num`]: the fixed-point [`Fx`] (`I32F32`), frames, exact seconds → frames.
//! - [`id`]: typed ids and generational handles.
//! - [`content`]: tags, attribute sets, curves and effects written in RON, validated and frozen
//!   into an immutable [`Content`] with a stable hash.
//! - [`tag`]: the hierarchical registry, [`TagSet`], [`TagQuery`], [`TagRequirements`].
//! - [`attribute`]: base/current values, aggregation policies, clamps.
//! - [`effect`]: specs, the application pipeline, periodic execution, stacking, queries.
//! - [`world`]: the snapshot [`World`], its frame schedule, hooks, events and checksums.
//! - [`random`]: deterministic random streams.
//! - [`cue`] and [`ui`]: exactly-once presentation under rollback — gameplay cues, and the UI
//!   event feed (attribute, effect, ability and execution events shown once, retracted if
//!   mispredicted, confirmed).
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

pub mod ability;
pub mod attribute;
mod bytes;
pub mod content;
pub mod cue;
pub mod debug;
pub mod effect;
pub mod id;
mod located;
pub mod num;
mod observe;
pub mod random;
pub mod replay;
pub mod scenario;
pub mod session;
pub mod tag;
pub mod ui;
pub mod world;

pub use ability::{
    AbilityCtx, AbilityEvent, AbilitySpec, Activation, ActivationFailure, CommitPart, EventData,
    InputEdge, TargetData, TaskEvent, TaskResult, TaskSpec,
};
pub use ability::{CustomTaskKind, TaskCtx};
pub use content::{Content, ContentBuilder, ContentError, ContentErrorKind};
pub use effect::{
    ActiveEffect, EffectContext, EffectOrigin, EffectQuery, EffectSpec, EffectTimers,
};
pub use id::{
    AbilityDefId, AbilityHandle, AttrId, AttrSetId, CueId, CurveId, EffectDefId, EffectHandle,
    Entity, FnId, TagId, TaskHandle,
};
pub use located::LocatedError;
pub use num::{Frame, Fx, TickRate};
pub use tag::{TagContainer, TagQuery, TagQueryExpr, TagRegistry, TagRequirements, TagSet};
pub use world::{
    AbilityInput, Applied, ApplyError, AttrCause, AttrEvent, AttrValue, Behaviour, Checksums,
    Diagnostic, EffectEvent, FrameOutput, Game, Hooks, RemovalReason, Snapshot, SnapshotRing,
    Subsystem, TagEvent, World, WorldConfig, WorldError,
};

/// The most used items in one import.
pub mod prelude {
    pub use crate::content::raw::{ModOp, MulPolicy};
    pub use crate::{
        Applied, ApplyError, AttrId, AttrSetId, Content, EffectDefId, EffectHandle, EffectQuery,
        EffectSpec, Entity, FrameOutput, Fx, Game, Hooks, TagId, TagSet, World, WorldConfig,
    };
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
