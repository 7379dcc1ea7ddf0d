//! Cue emission, the simulation side of gameplay cues: `Executed` bursts and the `Added` /
//! `Removed` edges of persistent cues appended to the frame's output, standalone cues added by
//! game code, and the persistent cues derivable from the snapshot ([`World::active_cues`]).
//! The records live in [`crate::cue`]; presenting them is [`crate::present`]'s job.

use crate::content::raw::CuePolicy;
use crate::cue::{
    ActiveCue, CueHandle, CueKey, CueKind, CueOrigin, CueParams, CueRecord, StandaloneCue,
};
use crate::id::{Entity, TagId};
use crate::num::Fx;
use crate::tag::TagSet;
use crate::world::{Game, World};

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
        self.push_cue(target, tag, kind, origin, params);
    }

    /// [`World::emit_cue`] for a cue an effect triggers: with the spec's captured source tags
    /// and the target's aggregated tags now (F-GC-09). Both are written into the pushed record
    /// in place, the target's only as far as the registry's words go (the rest stay empty).
    pub(crate) fn emit_effect_cue(
        &mut self,
        target: Entity,
        tag: TagId,
        kind: CueKind,
        origin: CueOrigin,
        params: CueParams,
        source_tags: &TagSet,
    ) {
        self.push_cue(target, tag, kind, origin, params);
        let view = self
            .has_ability_system(target)
            .then(|| self.state.tag_table(self.content.tags()).bits(target.index));
        if let Some(r) = self.out.cues.last_mut() {
            r.source_tags = *source_tags;
            if let Some(words) = view {
                r.target_tags.copy_words(words, self.state.layout.tags);
            }
        }
    }

    /// Pushes a cue record without aggregated tags.
    fn push_cue(
        &mut self,
        target: Entity,
        tag: TagId,
        kind: CueKind,
        origin: CueOrigin,
        mut params: CueParams,
    ) {
        let ordinal = self.cue_ordinal(target, tag, kind, origin);
        // The simulation emits untranslated tags; translation happens in presentation.
        params.original_tag = tag;
        let key = CueKey { frame: self.frame(), target, tag, kind, origin, ordinal };
        self.out.cues.push(CueRecord {
            key,
            params,
            source_tags: TagSet::EMPTY,
            target_tags: TagSet::EMPTY,
        });
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
