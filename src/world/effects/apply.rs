//! The application pipeline (F-GE-07), removal, stacking and lifetime control.

use crate::effect::{
    ActiveEffect, EffectOrigin, EffectQuery, EffectSpec, EffectTimers, SELF_ORIGIN, effect_flags,
};
use crate::effect::{CaptureSide, StackKind, StackPeriod, StackRefresh};
use crate::effect::{DurationDef, EffectDef, MagnitudeDef};
use crate::id::{EffectHandle, Entity, TagId};
use crate::num::{Frame, Fx, NEVER};
use crate::tag::TagSet;
use crate::world::cascade::Work;
use crate::world::effect_store::NewEffect;
use crate::world::hooks::{BoundFn, RequirementVerdict};
use crate::world::output::{Applied, ApplyError, AttrCause, EffectEvent, RemovalReason};
use crate::world::{Game, World};

impl<G: Game> World<G> {
    /// Applies a spec to a target now and returns what happened.
    ///
    /// Called from setup code or a system, the application (and everything it triggers) is
    /// complete when this returns. Called from inside a running change (a hook), it is queued
    /// and `Ok(Applied::Queued)` is returned; the outcome then appears in the frame's events.
    ///
    /// Failures are also reported as [`EffectEvent::ApplyFailed`] (or
    /// [`EffectEvent::ImmunityBlocked`]) events, identically on every peer.
    // Out of line on purpose: inlined into a game's systems it makes their loops too big for
    // LLVM to unroll — the arena's script then divides for each of its aura checks instead of
    // multiplying by constants, 2 % of its step. The call costs nothing next to the pipeline
    // it runs.
    #[inline(never)]
    pub fn apply_effect(
        &mut self,
        spec: EffectSpec,
        target: Entity,
    ) -> Result<Applied, ApplyError> {
        if self.scratch.busy {
            self.queue_apply(spec, target);
            return Ok(Applied::Queued);
        }
        self.run_item(|w| w.apply_now(&spec, target))
    }

    /// Queues a spec for phase P7 of the current frame, after every system has run: all hits
    /// of a frame are gathered from the frame's state before any is applied, so simultaneous
    /// hits trade instead of favouring the first player (F-GA-18). Outside a step it applies
    /// at once.
    pub fn queue_effect(&mut self, spec: EffectSpec, target: Entity) {
        if self.in_step {
            self.scratch.queued.push((spec, target));
        } else {
            let _ = self.apply_effect(spec, target);
        }
    }

    /// Removes an active effect (all its stacks).
    pub fn remove_effect(&mut self, handle: EffectHandle) {
        self.submit(Work::Remove { handle, stacks: 0, reason: RemovalReason::Removed });
    }

    /// Removes `stacks` stacks of an active effect (all of them if it has no more).
    pub fn remove_effect_stacks(&mut self, handle: EffectHandle, stacks: u16) {
        if stacks > 0 {
            self.submit(Work::Remove { handle, stacks, reason: RemovalReason::Removed });
        }
    }

    /// Removes every active effect of `target` matching the query; returns how many matched.
    pub fn remove_matching(&mut self, target: Entity, query: &EffectQuery) -> u32 {
        let seqs: Vec<u32> = self.effects_matching(target, query).map(|e| e.seq).collect();
        for seq in &seqs {
            self.submit(Work::Remove {
                handle: EffectHandle { target, seq: *seq },
                stacks: 0,
                reason: RemovalReason::Removed,
            });
        }
        seqs.len() as u32
    }

    /// Changes an active effect's level and re-evaluates its level-dependent magnitudes
    /// (F-GE-22). Setting the same level forces a recalculation.
    pub fn set_effect_level(&mut self, handle: EffectHandle, level: u16) {
        self.submit(Work::SetLevel { handle, level });
    }

    /// Recalculates an active effect's magnitudes (custom calculations, captures not
    /// snapshotted) without changing its level.
    pub fn recalculate_effect(&mut self, handle: EffectHandle) {
        if let Some(level) = self.effect(handle).map(|e| e.level) {
            self.submit(Work::SetLevel { handle, level });
        }
    }

    /// Sets the remaining duration of an active effect to `frames` from now (0 removes it as
    /// expired). Infinite effects become finite. Emits [`EffectEvent::DurationChanged`].
    pub fn set_remaining(&mut self, handle: EffectHandle, frames: u32) {
        self.submit(Work::SetRemaining { handle, frames });
    }

    /// Extends (or with a negative value shortens) an active effect's duration.
    pub fn extend_effect(&mut self, handle: EffectHandle, frames: i32) {
        self.submit(Work::Extend { handle, frames });
    }

    /// An active effect by handle.
    pub fn effect(&self, handle: EffectHandle) -> Option<&ActiveEffect> {
        let store = self.effect_store();
        store.find(handle).map(|slot| store.effect(slot))
    }

    /// Who applied an active effect (its instigator, causer, source object and ability).
    pub fn effect_origin(&self, handle: EffectHandle) -> Option<EffectOrigin> {
        let ef = self.effect(handle)?;
        Some(self.origin_of(handle.target, ef))
    }

    /// The origin of `ef`, an active effect of `target`: pooled, or the target itself.
    pub(crate) fn origin_of(&self, target: Entity, ef: &ActiveEffect) -> EffectOrigin {
        self.effect_store().origin(ef).unwrap_or_else(|| EffectOrigin::of_self(target))
    }

    /// When an active effect expires and next executes.
    pub fn effect_timer(&self, handle: EffectHandle) -> Option<&EffectTimers> {
        let store = self.effect_store();
        store.find(handle).map(|slot| store.timer(slot))
    }

    /// `(remaining, total)` frames of an active effect; an infinite effect never ends and
    /// reports `(NEVER, NEVER)` (`u32::MAX`), as [`World::cooldown_remaining`] does. `None`
    /// when the effect is gone.
    pub fn effect_remaining(&self, handle: EffectHandle) -> Option<(u32, u32)> {
        let store = self.effect_store();
        let slot = store.find(handle)?;
        Some(match store.timer(slot).remaining(self.frame()) {
            Some(r) => (r, store.effect(slot).duration),
            None => (crate::num::NEVER, crate::num::NEVER),
        })
    }

    /// The stored magnitude of a modifier of an active effect (before stacking).
    pub fn effect_magnitude(&self, handle: EffectHandle, modifier: usize) -> Option<Fx> {
        let store = self.effect_store();
        store.mag(store.find(handle)?, modifier)
    }

    /// The active effects of `target` matching a query, in application order (F-GE-26).
    pub fn effects_matching<'a>(
        &'a self,
        target: Entity,
        query: &'a EffectQuery,
    ) -> impl Iterator<Item = &'a ActiveEffect> + 'a {
        self.effects(target).iter().filter(move |e| {
            let owned = |d: &EffectDef| self.owned_tags_of(target, e, d);
            query.matches_owning(self.content.effect_defs(), e, &self.origin_of(target, e), owned)
        })
    }

    /// The tags an active effect owns, what effect queries and "remove effects with tags"
    /// match (GAS: a spec's asset tags and all its granted tags): its definition's asset and
    /// granted tags, plus the granted tags its spec added — among them an ability's
    /// `cooldown_tags` on its cooldown — each with its ancestors. Empty for an unknown handle.
    pub fn effect_owned_tags(&self, handle: EffectHandle) -> TagSet {
        let Some(ef) = self.effect(handle) else { return TagSet::EMPTY };
        match self.content.effect_defs().get(ef.def.index()) {
            Some(d) => self.owned_tags_of(handle.target, ef, d),
            None => TagSet::EMPTY,
        }
    }

    /// [`World::effect_owned_tags`] of `ef`, an active effect of `target` defined by `def`.
    pub(crate) fn owned_tags_of(
        &self,
        target: Entity,
        ef: &ActiveEffect,
        def: &EffectDef,
    ) -> TagSet {
        let mut owned = def.owned_tags.expanded;
        let tags = self.content.tags();
        for t in ef.dynamic_tags.iter().filter(|t| **t != u16::MAX) {
            owned.union_with(tags.self_and_ancestors(TagId(*t)));
        }
        if self.state.layout.tags_extra != 0
            && let Some(slot) = self.effect_store().find(ef.handle(target))
        {
            for t in self.effect_extra_tags(slot) {
                owned.union_with(tags.self_and_ancestors(t));
            }
        }
        owned
    }

    /// Whether an effect of `owner` owns any of `tags` (its definition's owned tags or the
    /// granted tags its spec added).
    pub(crate) fn effect_owns_any(&self, owner: Entity, ef: &ActiveEffect, tags: &TagSet) -> bool {
        let Some(d) = self.content.effect_defs().get(ef.def.index()) else { return false };
        if d.owned_tags.expanded.intersects(tags) {
            return true;
        }
        // The granted tags its spec added, when it has any.
        let dynamic = ef.dynamic_tags.iter().any(|t| *t != u16::MAX);
        (dynamic || self.state.layout.tags_extra != 0)
            && self.owned_tags_of(owner, ef, d).intersects(tags)
    }

    // ----------------------------------------------------------------------------------------
    // Pipeline
    // ----------------------------------------------------------------------------------------

    /// Runs the pipeline and reports failures as events.
    pub(crate) fn apply_now(
        &mut self,
        spec: &EffectSpec,
        target: Entity,
    ) -> Result<Applied, ApplyError> {
        let r = self.apply_inner(spec, target);
        if r.is_ok() {
            // The definition's `hitstop` / `instigator_hitstop` (F-GA-23, src/world/time.rs).
            self.effect_hitstop(spec, target);
        }
        if let Err(error) = r {
            let def = (!spec.is_inline()).then_some(spec.def);
            self.out.effect_events.push(match error {
                ApplyError::Immune { blocker } => {
                    EffectEvent::ImmunityBlocked { target, def, blocker }
                }
                _ => EffectEvent::ApplyFailed { target, def, error },
            });
        }
        r
    }

    /// The pipeline's first five steps, which change nothing: target, the spec's values beyond
    /// its room, application requirements, immunity, custom requirements, SetByCaller values.
    /// Applying and checking both start here.
    fn gates(&self, spec: &EffectSpec, target: Entity) -> Result<Gate, ApplyError> {
        // 1. Target alive with an ability system.
        if !self.has_ability_system(target) {
            return Err(ApplyError::InvalidTarget);
        }
        // Values beyond the spec's inline room: readable, not dropped (src/world/capacity.rs).
        self.check_spec_ext(spec)?;
        if spec.is_inline() {
            return Ok(Gate::Inline);
        }
        let Some(def) = self.content.effect_defs().get(spec.def.index()) else {
            return Err(ApplyError::UnknownDefinition);
        };
        let ti = target.index;
        // 2. Application tag requirements.
        if !def.application_requirements.passes_words(self.tag_view_index(ti)) {
            return Err(ApplyError::Requirements);
        }
        // 3. Immunity.
        if let Some(blocker) = self.immunity_blocker(ti, def, spec) {
            return Err(ApplyError::Immune { blocker });
        }
        // 4. Custom requirements.
        for f in &def.custom_requirements {
            if let Some(BoundFn::Req(req)) = self.bound.get(*f) {
                match req(self, spec, target) {
                    RequirementVerdict::Allow => {}
                    RequirementVerdict::Deny => return Err(ApplyError::CustomRequirement),
                    RequirementVerdict::ExtendInstead { handle, frames } => {
                        return Ok(Gate::Extend { handle, frames });
                    }
                }
            }
        }
        // 5. SetByCaller validation (nothing has been mutated yet, G-03).
        for k in &def.set_by_caller_keys {
            if self.set_by_caller(spec, *k).is_none() {
                return Err(ApplyError::MissingSetByCaller { tag: *k });
            }
        }
        Ok(Gate::Apply)
    }

    /// Whether applying `spec` to `target` now would succeed, without changing anything: the
    /// pipeline's checks (target, requirements, immunity, custom requirements, SetByCaller
    /// values) plus a full stack that denies overflow and a full effect column. An ability's
    /// commit runs it for its cost and cooldown before applying either, so a commit never pays
    /// the cost and then fails to start the cooldown (F-GA-06).
    pub(crate) fn check_apply(&self, spec: &EffectSpec, target: Entity) -> Result<(), ApplyError> {
        match self.gates(spec, target)? {
            // Inline, or redirected to another effect: nothing of this one can fail.
            Gate::Inline | Gate::Extend { .. } => return Ok(()),
            Gate::Apply => {}
        }
        let def = self.content.effect_def(spec.def);
        if def.is_instant() {
            return Ok(());
        }
        let ti = target.index;
        if let Some(st) = def.stacking
            && let Some(k) = self.find_stack(ti, spec, st.kind)
        {
            let stacks = self.effects(target)[k].stacks;
            return if stacks >= st.limit && st.deny_overflow {
                Err(ApplyError::StackOverflowDenied)
            } else {
                Ok(())
            };
        }
        if !self.effect_store().has_room(ti) {
            return Err(ApplyError::Capacity);
        }
        Ok(())
    }

    fn apply_inner(&mut self, spec: &EffectSpec, target: Entity) -> Result<Applied, ApplyError> {
        match self.gates(spec, target)? {
            Gate::Inline => {
                self.execute_spec(spec, target, None, 1, &[], 0);
                return Ok(Applied::Executed);
            }
            Gate::Extend { handle, frames } => {
                self.extend_now(handle, i32::try_from(frames).unwrap_or(i32::MAX));
                return Ok(Applied::Redirected(handle));
            }
            Gate::Apply => {}
        }
        let content = self.content.clone();
        let def = content.effect_def(spec.def);
        let ti = target.index;
        // 6. Captures and modifier qualification (evaluated once, here: G-08).
        let mut mags = [Fx::ZERO; crate::effect::MAX_MODIFIERS];
        let mut qualified = 0u32;
        let target_view_ok =
            |w: &Self, r: &crate::tag::TagRequirements| r.passes_words(w.tag_view_index(ti));
        for (i, m) in def.modifiers.iter().enumerate() {
            mags[i] = self.modifier_magnitude(def, i, spec, target, 1);
            if m.source_tags.passes(&spec.source_tags) && target_view_ok(self, &m.target_tags) {
                qualified |= 1 << i;
            }
        }
        if def.is_instant() {
            // 8. Instant: execute on base values.
            self.execute_spec(spec, target, None, 1, &mags[..def.modifiers.len()], qualified);
            self.remove_with_tags(ti, def, 0);
            return Ok(Applied::Executed);
        }
        let duration = match (spec.duration_override, def.duration) {
            (d, _) if d > 0 => d,
            (_, DurationDef::Frames(f)) => f,
            (_, DurationDef::Infinite) => NEVER,
            (_, DurationDef::SetByCaller(t)) => {
                let v = self.set_by_caller(spec, t).unwrap_or(Fx::ZERO);
                let f: i64 = v.to_num::<i64>();
                f.clamp(1, i64::from(NEVER - 1)) as u32
            }
            (_, DurationDef::Magnitude(m)) => self.time_frames(def, &m, 0, spec, target),
            (_, DurationDef::Instant) => 1,
        };
        // 7. Stacking.
        if let Some(st) = def.stacking
            && let Some(k) = self.find_stack(ti, spec, st.kind)
        {
            return self.add_stack(ti, k, def, duration);
        }
        // 8. Insert the active effect.
        self.insert_effect(ti, def, spec, duration, &mags, qualified)
    }

    /// The active effect of the target that makes it immune to `spec`, if any. Inlined for
    /// the common answer (no effect of the content grants immunity: one load), the scan not.
    #[inline]
    fn immunity_blocker(
        &self,
        ti: u32,
        def: &EffectDef,
        spec: &EffectSpec,
    ) -> Option<EffectHandle> {
        if !self.content.accel.any_immune {
            return None;
        }
        self.immunity_scan(ti, def, spec)
    }

    #[inline(never)]
    fn immunity_scan(&self, ti: u32, def: &EffectDef, spec: &EffectSpec) -> Option<EffectHandle> {
        let accel = &self.content.accel;
        let target = self.entity_of(ti);
        let incoming = self.incoming_tags(def, spec);
        for ef in self.effects(target) {
            if ef.is_inhibited() || !accel.immune.get(ef.def.index()).copied().unwrap_or(false) {
                continue;
            }
            let Some(d) = self.content.effect_defs().get(ef.def.index()) else { continue };
            if d.immunity_tags.intersects(&spec.source_tags)
                || d.immunity_query.as_ref().is_some_and(|q| q.matches(&incoming))
            {
                return Some(ef.handle(target));
            }
        }
        None
    }

    /// What an immunity query matches of an incoming spec (GAS: an effect query's owning tags
    /// are the spec's asset and granted tags): its definition's asset and granted tags, the
    /// granted tags the spec added (an ability's cooldown tags among them) and the source
    /// tags, each with its ancestors.
    fn incoming_tags(&self, def: &EffectDef, spec: &EffectSpec) -> TagSet {
        let mut tags = spec.source_tags.union(&def.owned_tags.expanded);
        let registry = self.content.tags();
        for t in spec.dynamic_granted_tags.iter().filter(|t| **t != u16::MAX) {
            tags.union_with(registry.self_and_ancestors(TagId(*t)));
        }
        if spec.ext != crate::capacity::ext::NONE
            && let Ok(x) = self.spec_extra(spec)
        {
            for t in x.tag_ids() {
                tags.union_with(registry.self_and_ancestors(t));
            }
        }
        tags
    }

    /// The first source-capture slot used by modifier `i` (modifiers in order, then
    /// executions).
    pub(crate) fn source_slot(&self, def: &EffectDef, i: usize) -> usize {
        def.modifiers[..i].iter().map(|m| self.source_slots_of(&m.magnitude)).sum()
    }

    /// How many source snapshot captures a magnitude keeps in a spec.
    pub(crate) fn source_slots_of(&self, m: &MagnitudeDef) -> usize {
        match m {
            MagnitudeDef::Attribute { side: CaptureSide::Source, snapshot: true, .. } => 1,
            MagnitudeDef::Custom { calc, .. } => match self.bound.get(*calc) {
                Some(BoundFn::Calc { captures, .. }) => {
                    captures.iter().filter(|c| c.snapshot).count()
                }
                _ => 0,
            },
            _ => 0,
        }
    }

    /// The first source-capture slot of the executions.
    pub(crate) fn exec_source_slot(&self, def: &EffectDef) -> usize {
        self.source_slot(def, def.modifiers.len())
    }

    /// Evaluates modifier `i`'s magnitude for an application (or periodic execution).
    #[inline(always)]
    pub(crate) fn modifier_magnitude(
        &self,
        def: &EffectDef,
        i: usize,
        spec: &EffectSpec,
        target: Entity,
        stacks: u16,
    ) -> Fx {
        let m = &def.modifiers[i].magnitude;
        // The common magnitude (a coefficient, maybe on a level curve) reads nothing else: it
        // is evaluated here, without the general evaluator's call.
        if let MagnitudeDef::Scalable { coef, curve } = *m {
            return self.scalable_magnitude(coef, curve, spec.level);
        }
        let slot = super::magnitude::MagSlot::Modifier(i);
        self.eval_magnitude(def, m, slot, spec, target, stacks)
    }

    fn find_stack(&self, ti: u32, spec: &EffectSpec, kind: StackKind) -> Option<usize> {
        let target = self.entity_of(ti);
        self.effects(target).iter().position(|e| {
            e.def == spec.def
                && match kind {
                    StackKind::ByTarget => true,
                    StackKind::BySource => {
                        self.origin_of(target, e).instigator == spec.context.instigator
                    }
                    StackKind::None => false,
                }
        })
    }

    fn add_stack(
        &mut self,
        ti: u32,
        k: usize,
        def: &EffectDef,
        duration: u32,
    ) -> Result<Applied, ApplyError> {
        let Some(st) = def.stacking else { return Err(ApplyError::UnknownDefinition) };
        let slot = self.effect_store().range(ti).start + k;
        let target = self.entity_of(ti);
        let frame = self.frame();
        let ef = *self.effect_store().effect(slot);
        let handle = ef.handle(target);
        if ef.stacks >= st.limit && st.deny_overflow {
            return Err(ApplyError::StackOverflowDenied);
        }
        if ef.stacks < st.limit {
            let new = ef.stacks + 1;
            self.effect_store_mut().set_stacks(slot, new);
            self.out.effect_events.push(EffectEvent::StackChanged { handle, old: ef.stacks, new });
            if !ef.is_inhibited() && !def.is_periodic() {
                self.dirty_effect_attrs(ti, def);
            }
        }
        if st.refresh == StackRefresh::OnApplication
            && self.effect_store().timer(slot).expires_at != NEVER
        {
            // The refresh uses the incoming spec's duration (G-22).
            let new_exp = frame.saturating_add(duration).min(NEVER - 1);
            let mut store = self.effect_store_mut();
            store.set_duration(slot, duration);
            let old = store.retime(slot, |t| t.expires_at = new_exp).expires_at;
            if new_exp != old {
                self.out.effect_events.push(EffectEvent::DurationChanged {
                    handle,
                    old_expires_at: old,
                    new_expires_at: new_exp,
                });
            }
        }
        if st.period == StackPeriod::ResetOnApplication && def.is_periodic() {
            let next = frame.saturating_add(self.period_of(slot, def));
            self.effect_store_mut().retime(slot, |t| t.next_period_at = next);
        }
        Ok(Applied::Stacked(handle))
    }

    fn insert_effect(
        &mut self,
        ti: u32,
        def: &EffectDef,
        spec: &EffectSpec,
        duration: u32,
        mags: &[Fx],
        qualified: u32,
    ) -> Result<Applied, ApplyError> {
        if !self.effect_store().has_room(ti) {
            return Err(ApplyError::Capacity);
        }
        let frame = self.frame();
        let seq = self.state.header.next_seq;
        self.state.header.next_seq = seq.wrapping_add(1).max(1);
        let target = self.entity_of(ti);
        let inhibited = !def.ongoing_requirements.passes_words(self.tag_view_index(ti));
        let origin = EffectOrigin {
            instigator: spec.context.instigator,
            causer: spec.context.causer,
            source_object: spec.context.source_object,
            ability: spec.context.ability,
            activation_serial: spec.context.activation_serial,
        };
        let effect = ActiveEffect {
            seq,
            def: spec.def,
            level: spec.level,
            stacks: 1,
            flags: if inhibited { effect_flags::INHIBITED } else { 0 },
            start: frame,
            duration,
            qualified,
            dynamic_tags: spec.dynamic_granted_tags,
            active_since: frame,
            spec_slot: u32::MAX,
            origin: SELF_ORIGIN,
        };
        let timers = EffectTimers {
            expires_at: if duration == NEVER {
                NEVER
            } else {
                frame.saturating_add(duration).min(NEVER - 1)
            },
            next_period_at: NEVER,
        };
        // Evaluated once, at application, before the effect counts among the target's.
        let period =
            def.period_magnitude.as_ref().map(|m| self.time_frames(def, m, 1, spec, target));
        let tags = self.effect_extra_tag_row(spec);
        let new = NewEffect {
            effect,
            timers,
            mags,
            tags: &tags,
            origin: (origin != EffectOrigin::of_self(target)).then_some(origin),
            live: def.has_live_captures,
        };
        let Some(slot) = self.effect_store_mut().insert(ti, new) else {
            return Err(ApplyError::Capacity);
        };
        // The record as inserted (no spec kept yet) is what its parts are switched on with.
        let ef = *self.effect_store().effect(slot);
        if let Some(period) = period {
            // Kept in the magnitude slot after the modifiers' (F-GA-08).
            self.effect_store_mut().set_mag(slot, def.modifiers.len(), Fx::from_num(period));
        }
        if def.is_periodic() {
            let next = frame.saturating_add(self.period_of(slot, def));
            self.effect_store_mut().retime(slot, |t| t.next_period_at = next);
        }
        // Effects whose executions or calculations re-read their spec keep it.
        if def.keeps_spec {
            // Values beyond the inline room move to the slot's row (the spill record the spec
            // names lasts only this frame).
            let kept = EffectSpec { ext: crate::capacity::ext::NONE, ..*spec };
            match self.effect_store_mut().keep_spec(slot, kept) {
                Some(p) => self.store_spec_extra(p, spec),
                None => {
                    self.out.diagnostics.push(crate::world::Diagnostic::SpecPoolFull {
                        effect: EffectHandle { target, seq },
                    });
                }
            }
        }
        let handle = EffectHandle { target, seq };
        self.out.effect_events.push(EffectEvent::Added { handle, def: spec.def });
        if inhibited {
            self.out.effect_events.push(EffectEvent::InhibitionChanged { handle, inhibited: true });
        } else {
            self.activate_parts(ti, def, &ef);
        }
        if def.is_periodic() && def.execute_on_application && !inhibited {
            self.execute_active(ti, seq);
        }
        self.remove_with_tags(ti, def, seq);
        Ok(Applied::Added(handle))
    }

    /// Granted tags on, modifiers registered, abilities granted.
    fn activate_parts(&mut self, ti: u32, def: &EffectDef, ef: &ActiveEffect) {
        self.change_tags(ti, &def.granted_tags.explicit, 1);
        for t in ef.dynamic_tags {
            if t != u16::MAX {
                self.change_tag(ti, crate::id::TagId(t), 1);
            }
        }
        self.change_extra_tags(ti, ef.seq, 1);
        if !def.is_periodic() {
            self.dirty_effect_attrs(ti, def);
        }
        self.grant_from_effect(ti, &def.granted_abilities, ef.seq);
        self.effect_cue_edges(ti, def, ef, crate::cue::CueKind::Added);
    }

    /// Granted tags off, modifiers unregistered, granted abilities per their removal policy.
    fn deactivate_parts(&mut self, ti: u32, def: &EffectDef, ef: &ActiveEffect) {
        self.change_tags(ti, &def.granted_tags.explicit, -1);
        for t in ef.dynamic_tags {
            if t != u16::MAX {
                self.change_tag(ti, crate::id::TagId(t), -1);
            }
        }
        self.change_extra_tags(ti, ef.seq, -1);
        if !def.is_periodic() {
            self.dirty_effect_attrs(ti, def);
        }
        self.ungrant_from_effect(ti, &def.granted_abilities, ef.seq);
        self.effect_cue_edges(ti, def, ef, crate::cue::CueKind::Removed);
    }

    /// Granted tags of effect `seq` of entity slot `ti` beyond its inline two, counted
    /// `delta` (nothing to do unless `granted_tags_per_spec` is raised: one comparison).
    #[inline]
    fn change_extra_tags(&mut self, ti: u32, seq: u32, delta: i32) {
        if self.state.layout.tags_extra != 0 {
            self.change_extra_tags_raised(ti, seq, delta);
        }
    }

    #[inline(never)]
    fn change_extra_tags_raised(&mut self, ti: u32, seq: u32, delta: i32) {
        let store = self.effect_store();
        let Some(slot) = store.find(EffectHandle { target: self.entity_of(ti), seq }) else {
            return;
        };
        let mut tags = [0u16; crate::world::MAX_SPEC_ROOM as usize];
        let row = store.tag_row(slot);
        tags[..row.len()].copy_from_slice(row);
        for t in tags.iter().filter(|t| **t != 0) {
            self.change_tag(ti, crate::id::TagId(*t - 1), delta);
        }
    }

    /// Persistent cue edges of an effect becoming active or inactive.
    fn effect_cue_edges(
        &mut self,
        ti: u32,
        def: &EffectDef,
        ef: &ActiveEffect,
        kind: crate::cue::CueKind,
    ) {
        let target = self.entity_of(ti);
        let mut cues = def.cues.iter().filter(|c| c.persistent(def.duration)).peekable();
        if cues.peek().is_none() {
            return;
        }
        // The aggregated tags of the cue record (F-GC-09): the effect's captured source tags.
        let source_tags = self.source_tags_of(target, ef);
        for c in cues {
            let params = self.effect_cue_params(target, ef, def, c);
            self.emit_effect_cue(
                target,
                c.tag,
                kind,
                crate::cue::CueOrigin::effect(ef.handle(target)),
                params,
                &source_tags,
            );
        }
    }

    pub(crate) fn dirty_effect_attrs(&mut self, ti: u32, def: &EffectDef) {
        for m in &def.modifiers {
            if self.entity_has_set_attr(ti, m.attr) {
                self.mark_attr_dirty(ti, m.attr, AttrCause::Modifiers);
            }
        }
    }

    /// Switches an effect (by column slot) off or on.
    pub(crate) fn set_inhibited(&mut self, ti: u32, slot: usize, inhibited: bool) {
        let content = self.content.clone();
        let ef = *self.effect_store().effect(slot);
        let Some(def) = content.effect_defs().get(ef.def.index()) else { return };
        let frame = self.frame();
        let now = self.effect_store_mut().set_inhibited(slot, inhibited, frame);
        if inhibited {
            self.deactivate_parts(ti, def, &ef);
        } else {
            self.activate_parts(ti, def, &now);
        }
        let handle = ef.handle(self.entity_of(ti));
        self.out.effect_events.push(EffectEvent::InhibitionChanged { handle, inhibited });
    }

    /// Pipeline step 9: removes the target's effects whose owned tags match the definition's
    /// "remove effects with tags" (the new effect itself excluded).
    fn remove_with_tags(&mut self, ti: u32, def: &EffectDef, except_seq: u32) {
        if def.remove_effects_with_tags.is_empty() {
            return;
        }
        let target = self.entity_of(ti);
        let mut k = 0;
        while k < self.effects(target).len() {
            let ef = self.effects(target)[k];
            let matches = ef.seq != except_seq
                && self.effect_owns_any(target, &ef, &def.remove_effects_with_tags);
            if matches {
                self.remove_now(ti, ef.seq, 0, RemovalReason::RemovedByTags);
            } else {
                k += 1;
            }
        }
    }

    /// Removes `stacks` stacks (0: all) of the effect with `seq` on entity slot `ti`.
    pub(crate) fn remove_now(&mut self, ti: u32, seq: u32, stacks: u16, reason: RemovalReason) {
        let target = self.entity_of(ti);
        let Some(slot) = self.effect_store().find(EffectHandle { target, seq }) else { return };
        let k = slot - self.effect_store().range(ti).start;
        let content = self.content.clone();
        let ef = *self.effect_store().effect(slot);
        let handle = ef.handle(target);
        let Some(def) = content.effect_defs().get(ef.def.index()) else { return };
        if stacks > 0 && stacks < ef.stacks {
            let new = ef.stacks - stacks;
            self.effect_store_mut().set_stacks(slot, new);
            self.out.effect_events.push(EffectEvent::StackChanged { handle, old: ef.stacks, new });
            if !ef.is_inhibited() && !def.is_periodic() {
                self.dirty_effect_attrs(ti, def);
            }
            return;
        }
        let k = if ef.is_inhibited() {
            k
        } else {
            self.deactivate_parts(ti, def, &ef);
            // Deactivating can run behaviour code (a granted ability's `on_end` and
            // `on_removed`) that applies or removes effects at once: find this one again
            // (nearly always where it was: effects are added at the end, and seqs are unique).
            let store = self.effect_store();
            if store.effects(ti).get(k).is_some_and(|e| e.seq == seq) {
                k
            } else {
                let Some(k) = store.position(ti, seq) else { return };
                k
            }
        };
        let Some(ef) = self.effect_store_mut().remove(ti, k, def.has_live_captures) else {
            return;
        };
        self.out.effect_events.push(EffectEvent::Removed { handle, def: ef.def, reason });
    }

    pub(crate) fn set_level_now(&mut self, handle: EffectHandle, level: u16) {
        let Some(slot) = self.effect_store().find(handle) else { return };
        let content = self.content.clone();
        let ef = *self.effect_store().effect(slot);
        let Some(def) = content.effect_defs().get(ef.def.index()) else { return };
        self.effect_store_mut().set_level(slot, level);
        let spec = self.spec_of_active(slot);
        let mut changed = false;
        for (i, m) in def.modifiers.iter().enumerate() {
            // Snapshot captures and SetByCaller values keep their application-time values.
            let recompute = match m.magnitude {
                MagnitudeDef::Scalable { .. } | MagnitudeDef::Custom { .. } => true,
                MagnitudeDef::Attribute { snapshot, .. } => !snapshot,
                MagnitudeDef::SetByCaller(_) => false,
            };
            if recompute {
                let v = self.modifier_magnitude(def, i, &spec, handle.target, ef.stacks);
                changed |= self.effect_store_mut().set_mag(slot, i, v);
            }
        }
        if changed && !ef.is_inhibited() && !def.is_periodic() {
            self.dirty_effect_attrs(handle.target.index, def);
        }
    }

    pub(crate) fn set_remaining_now(&mut self, handle: EffectHandle, frames: u32) {
        let Some(slot) = self.effect_store().find(handle) else { return };
        if frames == 0 {
            self.remove_now(handle.target.index, handle.seq, 0, RemovalReason::Expired);
            return;
        }
        let new = self.frame().saturating_add(frames).min(NEVER - 1);
        let mut store = self.effect_store_mut();
        if store.view().effect(slot).duration == NEVER {
            store.set_duration(slot, frames);
        }
        let old = store.retime(slot, |t| t.expires_at = new).expires_at;
        if old != new {
            self.out.effect_events.push(EffectEvent::DurationChanged {
                handle,
                old_expires_at: old,
                new_expires_at: new,
            });
        }
    }

    pub(crate) fn extend_now(&mut self, handle: EffectHandle, frames: i32) {
        let Some(slot) = self.effect_store().find(handle) else { return };
        let frame = self.frame();
        let e = *self.effect_store().effect(slot);
        let old = self.effect_store().timer(slot).expires_at;
        if old == NEVER {
            return;
        }
        let new = (i64::from(old) + i64::from(frames)).clamp(i64::from(frame), i64::from(NEVER - 1))
            as Frame;
        if new <= frame {
            self.remove_now(handle.target.index, handle.seq, 0, RemovalReason::Expired);
            return;
        }
        let dur = (i64::from(e.duration) + i64::from(frames)).clamp(1, i64::from(NEVER - 1)) as u32;
        let mut store = self.effect_store_mut();
        store.retime(slot, |t| t.expires_at = new);
        store.set_duration(slot, dur);
        if new != old {
            self.out.effect_events.push(EffectEvent::DurationChanged {
                handle,
                old_expires_at: old,
                new_expires_at: new,
            });
        }
    }

    /// The spec of an active effect (for periodic executions and recalculation): the spec it
    /// was applied with when its definition keeps specs (context, SetByCaller values, source
    /// tags captured at creation, snapshot captures), else one rebuilt from the active effect
    /// (its stored context, level, and the instigator's current tags).
    pub(crate) fn spec_of_active(&self, slot: usize) -> EffectSpec {
        let store = self.effect_store();
        let ef = *store.effect(slot);
        if let Some((at, kept)) = store.kept_spec(&ef) {
            let mut spec = *kept;
            spec.level = ef.level;
            spec.stored = 0;
            spec.ext = self.stored_ext(at);
            return spec;
        }
        let ti = store.owner(slot);
        let o = self.origin_of(self.entity_of(ti), &ef);
        let mut spec = EffectSpec::new(ef.def, ef.level);
        spec.context.instigator = o.instigator;
        spec.context.causer = o.causer;
        spec.context.source_object = o.source_object;
        spec.context.ability = o.ability;
        spec.context.activation_serial = o.activation_serial;
        spec.created = ef.start;
        spec.source_tags = self.tags(o.instigator);
        spec
    }
}

/// Where the pipeline's first steps lead ([`World::gates`]).
enum Gate {
    /// An inline spec: executed at once.
    Inline,
    /// A custom requirement redirected the application into extending an effect.
    Extend { handle: EffectHandle, frames: u32 },
    /// A definition's spec that passed every gate.
    Apply,
}
