//! Gameplay cues under rollback: emission from the simulation, an exactly-once
//! [`CueDirector`] that reconciles what was shown with the corrected timeline, and a
//! [`CueRouter`] that routes cues to handlers by tag hierarchy.
//!
//! # Emission (simulation side)
//!
//! The simulation never plays anything: it appends [`CueRecord`]s to the frame's output —
//! `Executed` bursts (instant effects, periodic executions, executions, abilities and game code)
//! and `Added`/`Removed` edges of persistent cues (duration/infinite effects, active abilities,
//! standalone cues added by code). Persistent cues are also *derivable from the snapshot*
//! ([`World::active_cues`]): that is what lets a presenter rebuild itself after a snapshot
//! load, a replay seek or a spectator join.
//!
//! # Presentation (outside the simulation)
//!
//! A [`CueDirector`] is fed once per rollback batch (see its documentation for the protocol)
//! and calls a [`Presenter`] the game implements: `play` each burst once, `cancel` bursts the
//! corrected timeline no longer contains, `on_active`/`while_active`/`removed` for persistent
//! instances diffed against the snapshot, and `confirmed` once a cue's frame is confirmed. A
//! confirmed persistent instance that began and ended between two reconciles (inside one
//! rollback batch) is presented late, never lost ([`Presenter::happened`]).
//! Headless runs (fuzzing, sync tests, replay verification) simply have no director; emission
//! is unchanged, so checksums are unaffected.

mod director;
mod presenter_log;
mod router;

pub use director::{
    Cue, CueCounters, CueDirector, CueLogEntry, CueLogKind, CueSession, Presenter, RemoveReason,
};
pub use presenter_log::{PresenterCall, PresenterLog};
pub use router::{
    CueCall, CueHandler, CueInstance, CueOptions, CueRouter, EntityInterface, InstanceKey,
    StaticHandler,
};

use crate::content::raw::CuePolicy;
use crate::id::{EffectHandle, Entity, TagId};
use crate::num::{Frame, Fx};
use crate::tag::TagSet;
use crate::world::{Game, World};
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
    _pad: u32,
}

/// A handle to a standalone persistent cue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct CueHandle {
    /// The entity it plays on.
    pub target: Entity,
    /// Its id.
    pub id: u32,
}

impl<G: Game> World<G> {
    /// The nth identical (target, tag, kind, origin) record of this frame so far.
    fn cue_ordinal(&self, target: Entity, tag: TagId, kind: CueKind, origin: CueOrigin) -> u16 {
        self.out
            .cues
            .iter()
            .filter(|c| {
                c.key.target == target
                    && c.key.tag == tag
                    && c.key.kind == kind
                    && c.key.origin == origin
            })
            .count()
            .min(usize::from(u16::MAX)) as u16
    }

    pub(crate) fn emit_cue(
        &mut self,
        target: Entity,
        tag: TagId,
        kind: CueKind,
        origin: CueOrigin,
        params: CueParams,
    ) {
        self.push_cue(target, tag, kind, origin, params, TagSet::EMPTY, TagSet::EMPTY);
    }

    /// [`World::emit_cue`] for a cue an effect triggers: with the spec's captured source tags
    /// and the target's aggregated tags now (F-GC-09).
    pub(crate) fn emit_effect_cue(
        &mut self,
        target: Entity,
        tag: TagId,
        kind: CueKind,
        origin: CueOrigin,
        params: CueParams,
        source_tags: &TagSet,
    ) {
        let target_tags = self.tags(target);
        self.push_cue(target, tag, kind, origin, params, *source_tags, target_tags);
    }

    #[allow(clippy::too_many_arguments)]
    fn push_cue(
        &mut self,
        target: Entity,
        tag: TagId,
        kind: CueKind,
        origin: CueOrigin,
        mut params: CueParams,
        source_tags: TagSet,
        target_tags: TagSet,
    ) {
        let ordinal = self.cue_ordinal(target, tag, kind, origin);
        // The simulation emits untranslated tags; translation happens in presentation.
        params.original_tag = tag;
        let key = CueKey { frame: self.frame(), target, tag, kind, origin, ordinal };
        self.out.cues.push(CueRecord { key, params, source_tags, target_tags });
    }

    /// Emits a burst cue from game code or an ability (F-GC-03).
    pub fn execute_cue(
        &mut self,
        target: Entity,
        tag: TagId,
        origin: CueOrigin,
        params: CueParams,
    ) {
        self.emit_cue(target, tag, CueKind::Executed, origin, params);
    }

    /// Adds a standalone persistent cue (a snapshot record, so it rolls back and is visible to
    /// a presenter rebuilt from the snapshot). `None` when the cue capacity is full.
    pub fn add_cue(&mut self, target: Entity, tag: TagId, params: CueParams) -> Option<CueHandle> {
        if !self.is_alive(target) {
            return None;
        }
        let slot = self.state.standalone_cues.iter().position(|c| c.live == 0)?;
        let id = self.state.header.next_seq;
        self.state.header.next_seq = id.wrapping_add(1).max(1);
        let since = self.frame();
        self.state.standalone_cues[slot] =
            StandaloneCue { params, target, id, since, tag, live: 1, _pad: 0 };
        self.emit_cue(target, tag, CueKind::Added, CueOrigin::standalone(id), params);
        Some(CueHandle { target, id })
    }

    /// Removes a standalone persistent cue.
    pub fn remove_cue(&mut self, h: CueHandle) {
        if let Some(slot) = self
            .state
            .standalone_cues
            .iter()
            .position(|c| c.live != 0 && c.id == h.id && c.target == h.target)
        {
            let c = self.state.standalone_cues[slot];
            self.state.standalone_cues[slot] = StandaloneCue::default();
            self.emit_cue(c.target, c.tag, CueKind::Removed, CueOrigin::standalone(c.id), c.params);
        }
    }

    /// Removes every standalone persistent cue on an entity.
    pub fn remove_all_standalone_cues(&mut self, target: Entity) {
        let ids: Vec<u32> = self
            .state
            .standalone_cues
            .iter()
            .filter(|c| c.live != 0 && c.target == target)
            .map(|c| c.id)
            .collect();
        for id in ids {
            self.remove_cue(CueHandle { target, id });
        }
    }

    /// Every persistent cue instance active in the current state, in (target, tag, origin)
    /// order: non-inhibited duration/infinite effects' persistent cue entries, active
    /// abilities' cues and standalone cues.
    pub fn active_cues(&self, out: &mut Vec<ActiveCue>) {
        out.clear();
        let content = &self.content;
        for e in self.entities() {
            for ef in self.effects(e) {
                if ef.is_inhibited() {
                    continue;
                }
                let Some(def) = content.effect_defs().get(ef.def.index()) else { continue };
                if !def.cues.iter().any(|c| c.persistent(def.duration)) {
                    continue;
                }
                let (source_tags, target_tags) = (self.source_tags_of(e, ef), self.tags(e));
                for c in def.cues.iter().filter(|c| c.persistent(def.duration)) {
                    let params = self.effect_cue_params(e, ef, def, c);
                    out.push(ActiveCue {
                        source_tags,
                        target_tags,
                        target: e,
                        tag: c.tag,
                        origin: CueOrigin::effect(ef.handle(e)),
                        since: ef.active_since,
                        params,
                    });
                }
            }
            for (h, s) in self.abilities(e) {
                if !s.is_active() {
                    continue;
                }
                for tag in &content.ability_def(s.def).cues {
                    let params = self.ability_cue_params(h, s);
                    out.push(ActiveCue {
                        source_tags: TagSet::EMPTY,
                        target_tags: TagSet::EMPTY,
                        target: e,
                        tag: *tag,
                        origin: CueOrigin::ability(h, s.activation_serial),
                        since: s.activated_at,
                        params,
                    });
                }
            }
        }
        for c in self.state.standalone_cues.iter().filter(|c| c.live != 0) {
            out.push(ActiveCue {
                source_tags: TagSet::EMPTY,
                target_tags: TagSet::EMPTY,
                target: c.target,
                tag: c.tag,
                origin: CueOrigin::standalone(c.id),
                since: c.since,
                params: c.params,
            });
        }
        out.sort_by_key(|c| (c.target, c.tag, c.origin));
    }

    /// The standalone cue records (live ones have `live == 1`).
    pub fn standalone_cues(&self) -> &[StandaloneCue] {
        &self.state.standalone_cues
    }

    pub(crate) fn effect_cue_params(
        &self,
        target: Entity,
        ef: &crate::effect::ActiveEffect,
        def: &crate::content::def::EffectDef,
        c: &crate::content::def::EffectCueDef,
    ) -> CueParams {
        let h = ef.handle(target);
        let mi = match c.magnitude_attribute {
            Some(a) => def.modifiers.iter().position(|m| m.attr == a),
            None => (!def.modifiers.is_empty()).then_some(0),
        };
        let magnitude = mi.and_then(|i| self.effect_magnitude(h, i)).unwrap_or(Fx::ZERO);
        let origin = self.effect_origin(h).unwrap_or_default();
        CueParams {
            magnitude,
            instigator: origin.instigator,
            causer: origin.causer,
            source_object: origin.source_object,
            effect: h,
            original_tag: c.tag,
            level: ef.level,
            count: 1,
            seed: ef.seq,
            ..CueParams::default()
        }
    }

    pub(crate) fn ability_cue_params(
        &self,
        h: crate::id::AbilityHandle,
        s: &crate::ability::AbilitySpec,
    ) -> CueParams {
        CueParams {
            instigator: h.owner,
            causer: self.avatar(h.owner),
            source_object: s.source_object,
            ability_level: s.level,
            count: 1,
            seed: s.activation_serial,
            ..CueParams::default()
        }
    }

    /// The cue policy of a tag (from content).
    pub fn cue_policy(&self, tag: TagId) -> CuePolicy {
        self.content.cue_policy(tag)
    }
}
