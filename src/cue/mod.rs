//! Gameplay cue records: what the simulation emits ([`CueRecord`]s in the frame's output) and
//! what its snapshot derives ([`ActiveCue`]s), with their keys, origins and parameters.
//!
//! # Emission (simulation side)
//!
//! The simulation never plays anything: it appends [`CueRecord`]s to the frame's output —
//! `Executed` bursts (instant effects, periodic executions, executions, abilities and game code)
//! and `Added`/`Removed` edges of persistent cues (duration/infinite effects, active abilities,
//! standalone cues added by code). Persistent cues are also *derivable from the snapshot*
//! ([`World::active_cues`](crate::World::active_cues)): that is what lets a presenter rebuild itself after a snapshot
//! load, a replay seek or a spectator join.
//!
//! # Presentation
//!
//! Presenting cues exactly once under rollback is [`crate::present`]'s job: its `CueDirector`
//! reconciles what was shown with the corrected timeline, and its `CueRouter` routes cues to
//! handlers by tag hierarchy.

mod def;
pub use def::{CueDef, CuePolicy};

use crate::id::{EffectHandle, Entity, TagId};
use crate::num::{Frame, Fx};
use crate::tag::TagSet;
use bytemuck::{Pod, Zeroable};

/// What kind of record a cue is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum CueKind {
    /// A burst: instant effects, periodic executions, one-off cues from code.
    Executed,
    /// A persistent cue started (an effect became active, an ability activated, a standalone
    /// cue was added).
    Added,
    /// A persistent cue ended.
    Removed,
}

/// Where a cue comes from: its identity beyond target and tag.
#[repr(C)]
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Pod,
    Zeroable,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct CueOrigin {
    /// 0 none, 1 effect, 2 ability, 3 standalone cue, 4 game key.
    pub kind: u32,
    /// Effect: seq. Ability: slot << 16 | generation. Standalone: id. Game: first key.
    pub a: u32,
    /// Ability: activation serial. Game: second key.
    pub b: u32,
}

impl CueOrigin {
    /// No particular origin.
    pub const NONE: CueOrigin = CueOrigin { kind: 0, a: 0, b: 0 };

    /// An active effect.
    pub fn effect(h: EffectHandle) -> CueOrigin {
        CueOrigin { kind: 1, a: h.seq, b: 0 }
    }

    /// An ability activation.
    pub fn ability(h: crate::id::AbilityHandle, serial: u32) -> CueOrigin {
        CueOrigin { kind: 2, a: (u32::from(h.slot) << 16) | u32::from(h.generation), b: serial }
    }

    /// A standalone persistent cue.
    pub fn standalone(id: u32) -> CueOrigin {
        CueOrigin { kind: 3, a: id, b: 0 }
    }

    /// A key chosen by the game (distinguishes simultaneous identical cues).
    pub fn game(a: u32, b: u32) -> CueOrigin {
        CueOrigin { kind: 4, a, b }
    }
}

/// The identity of one cue occurrence: the same key is emitted again when a frame is
/// re-simulated identically, which is how duplicates are recognised (F-GC-05).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct CueKey {
    /// The frame it was emitted in.
    pub frame: Frame,
    /// The entity it plays on.
    pub target: Entity,
    /// The `GameplayCue.*` tag.
    pub tag: TagId,
    /// Burst or persistent edge.
    pub kind: CueKind,
    /// Where it comes from.
    pub origin: CueOrigin,
    /// The nth identical (target, tag, kind, origin) in this frame.
    pub ordinal: u16,
}

/// Cue parameters in fixed point (F-GC-09); converted to floats only by presentation.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize, serde::Deserialize,
)]
pub struct CueParams {
    /// A magnitude (for effects: the chosen attribute's modifier magnitude).
    pub magnitude: Fx,
    /// A location (game units).
    pub location: [Fx; 3],
    /// A surface normal.
    pub normal: [Fx; 3],
    /// Who caused it.
    pub instigator: Entity,
    /// What physically caused it.
    pub causer: Entity,
    /// The object it came from.
    pub source_object: Entity,
    /// The effect it came from (read more from the snapshot through it).
    pub effect: EffectHandle,
    /// The tag before translation.
    pub original_tag: TagId,
    /// The effect level.
    pub level: u16,
    /// The ability level.
    pub ability_level: u16,
    /// How many (multi-pellet bursts expand in the presenter, F-GC-13).
    pub count: u16,
    /// A seed for presentation-side variation.
    pub seed: u32,
    /// Free bytes for the game.
    pub user: [u8; 16],
}

/// A cue as emitted in a frame's output.
///
/// Besides its parameters it carries the aggregated tags of GAS's
/// `FGameplayCueParameters::AggregatedSourceTags` / `AggregatedTargetTags` (F-GC-09). They are
/// output only — [`CueParams`] is part of the snapshot (a standalone cue keeps its parameters)
/// and stays small — and are filled for cues an effect triggers: executed cues of instant
/// effects, periodic executions and executions, and the persistent edges of duration and
/// infinite effects. Cues of abilities, standalone cues and cues from game code have none.
///
/// # Cue records
///
/// Gameplay cue records: what the simulation emits ([`CueRecord`]s in the frame's output) and
/// what its snapshot derives ([`ActiveCue`]s), with their keys, origins and parameters.
///
/// ## Emission (simulation side)
///
/// The simulation never plays anything: it appends [`CueRecord`]s to the frame's output —
/// `Executed` bursts (instant effects, periodic executions, executions, abilities and game code)
/// and `Added`/`Removed` edges of persistent cues (duration/infinite effects, active abilities,
/// standalone cues added by code). Persistent cues are also *derivable from the snapshot*
/// ([`World::active_cues`](crate::World::active_cues)): that is what lets a presenter rebuild itself after a snapshot
/// load, a replay seek or a spectator join.
///
/// ## Presentation
///
/// Presenting cues exactly once under rollback is [`crate::present`]'s job: its `CueDirector`
/// reconciles what was shown with the corrected timeline, and its `CueRouter` routes cues to
/// handlers by tag hierarchy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CueRecord {
    /// Its identity.
    pub key: CueKey,
    /// Its parameters.
    pub params: CueParams,
    /// The source's aggregated (ancestor-expanded) tags as the effect's spec captured them when
    /// it was made (plus the making ability's tags); for the edges of an active effect that
    /// keeps no spec, its instigator's tags when the edge happened. Empty when no effect
    /// triggered the cue.
    pub source_tags: TagSet,
    /// The aggregated tags of the entity the cue plays on when the effect applied or executed
    /// (for a persistent edge: when it became active or inactive). Empty when no effect
    /// triggered the cue.
    pub target_tags: TagSet,
}

/// A persistent cue instance, as derived from the snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ActiveCue {
    /// For an effect's cue: the source tags its spec captured (or, if it keeps no spec, its
    /// instigator's tags now), as in [`CueRecord::source_tags`]; empty otherwise.
    pub source_tags: TagSet,
    /// For an effect's cue: the target's aggregated tags now; empty otherwise.
    pub target_tags: TagSet,
    /// The entity it plays on.
    pub target: Entity,
    /// The `GameplayCue.*` tag.
    pub tag: TagId,
    /// Where it comes from.
    pub origin: CueOrigin,
    /// The frame it (last) became active.
    pub since: Frame,
    /// Its parameters.
    pub params: CueParams,
}

/// A standalone persistent cue as stored in the snapshot (F-GC-03).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct StandaloneCue {
    /// Its parameters.
    pub params: CueParams,
    /// The entity it plays on.
    pub target: Entity,
    /// Its id (unique per world).
    pub id: u32,
    /// The frame it was added.
    pub since: Frame,
    /// The tag.
    pub tag: TagId,
    /// 1 when the slot is used.
    pub live: u16,
    pub(crate) _pad: u32,
}

/// A handle to a standalone persistent cue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct CueHandle {
    /// The entity it plays on.
    pub target: Entity,
    /// Its id.
    pub id: u32,
}
