//! Granting, the activation pipeline (F-GA-04), commit, end and cancel, cooldowns.

use super::ctx::AbilityCtx;
use crate::ability::Instancing;
use crate::ability::task::TaskSpec;
use crate::ability::{AbilityDef, TriggerDef};
use crate::ability::{
    AbilityEvent, AbilitySpec, Activation, ActivationFailure, ActivationRecord, CommitPart,
    EventData, GrantError, MAX_INPUTS, NO_INPUT, spec_flags,
};
use crate::capacity::ext as capacity_ext;
use crate::capacity::{Capacity, CapacityExceeded};
use crate::effect::EffectSpec;
use crate::effect::GrantDef;
use crate::effect::GrantRemoval;
use crate::effect::{MAX_SET_BY_CALLER, MagnitudeDef};
use crate::id::{AbilityDefId, AbilityHandle, AbilitySetId, EffectDefId, EffectHandle, Entity};
use crate::num::{Fx, NEVER};
use crate::tag::TagSet;
use crate::world::cascade::Work;
use crate::world::hooks::BoundFn;
use crate::world::output::Applied;
use crate::world::{Game, World};

/// The task user id of a timeline played by the definition's `timeline`.
pub(crate) const TIMELINE_TASK: u16 = u16::MAX;
/// The task user id of the definition's `end_after` timer.
pub(crate) const END_AFTER_TASK: u16 = u16::MAX - 1;

/// How many activation records the log keeps.
const LOG_LEN: usize = 256;

impl<G: Game> World<G> {
    // ----------------------------------------------------------------------------------------
    // Specs
    // ----------------------------------------------------------------------------------------

    pub(crate) fn spec_slot(&self, h: AbilityHandle) -> Option<usize> {
        if !self.has_ability_system(h.owner) || usize::from(h.slot) >= self.state.layout.abilities {
            return None;
        }
        let i = h.owner.index as usize * self.state.layout.abilities + usize::from(h.slot);
        let s = &self.state.specs[i];
        (s.is_granted() && s.generation == h.generation && h.generation != 0).then_some(i)
    }

    /// A granted ability by handle.
    pub fn ability(&self, h: AbilityHandle) -> Option<&AbilitySpec> {
        self.spec_slot(h).map(|i| &self.state.specs[i])
    }

    /// Whether the ability is active.
    pub fn is_ability_active(&self, h: AbilityHandle) -> bool {
        self.ability(h).is_some_and(|s| s.is_active())
    }

    /// The abilities granted to an owner, in slot order.
    pub fn abilities(
        &self,
        owner: Entity,
    ) -> impl Iterator<Item = (AbilityHandle, &AbilitySpec)> + '_ {
        let n = if self.has_ability_system(owner) { self.state.layout.abilities } else { 0 };
        let start = owner.index as usize * self.state.layout.abilities;
        self.state.specs[start..start + n].iter().enumerate().filter(|(_, s)| s.is_granted()).map(
            move |(i, s)| (AbilityHandle { owner, slot: i as u16, generation: s.generation }, s),
        )
    }

    /// The first granted ability of a definition on an owner.
    pub fn find_ability(&self, owner: Entity, def: AbilityDefId) -> Option<AbilityHandle> {
        self.abilities(owner).find(|(_, s)| s.def == def).map(|(h, _)| h)
    }

    /// The ability's tags: its definition's (ancestor-expanded) plus its dynamic tags.
    pub fn ability_tags(&self, h: AbilityHandle) -> TagSet {
        let Some(s) = self.ability(h) else { return TagSet::EMPTY };
        let mut t = self.content.ability_def(s.def).tags.expanded;
        for d in s.dynamic_tags {
            if d != u16::MAX {
                t.union_with(self.content.tags().self_and_ancestors(crate::id::TagId(d)));
            }
        }
        // Dynamic tags beyond two (`WorldConfig::ability_dynamic_tags`).
        if self.state.layout.ability_tags_extra > 0
            && let Some(i) = self.spec_slot(h)
        {
            for d in self.ability_tag_row(i).iter().filter(|d| **d != 0) {
                t.union_with(self.content.tags().self_and_ancestors(crate::id::TagId(*d - 1)));
            }
        }
        t
    }

    /// Abilities of an owner whose tags match any of `tags` (hierarchically), optionally only
    /// those that could activate now (F-GA-14).
    pub fn specs_matching(
        &self,
        owner: Entity,
        tags: &TagSet,
        only_activatable: bool,
    ) -> Vec<AbilityHandle> {
        self.abilities(owner)
            .map(|(h, _)| h)
            .filter(|h| self.ability_tags(*h).intersects(tags))
            .filter(|h| !only_activatable || self.can_activate(*h, None).is_ok())
            .collect()
    }

    /// The owner's avatar (the owner itself unless set).
    pub fn avatar(&self, owner: Entity) -> Entity {
        if !self.is_alive(owner) {
            return owner;
        }
        let a = self.state.entities[owner.index as usize].avatar;
        if a.is_none() { owner } else { a }
    }

    /// Sets the avatar the owner's abilities act through (F-GA-17). The owner keeps its
    /// effects, cooldowns and abilities when the avatar changes (respawn); passive abilities
    /// that are not active activate again.
    pub fn set_avatar(&mut self, owner: Entity, avatar: Entity) {
        if !self.is_alive(owner) {
            return;
        }
        self.state.entities[owner.index as usize].avatar = avatar;
        let passives: Vec<AbilityHandle> = self
            .abilities(owner)
            .filter(|(_, s)| !s.is_active() && self.content.ability_def(s.def).passive)
            .map(|(h, _)| h)
            .collect();
        for h in passives {
            self.submit(Work::Activate {
                handle: h,
                event: EventData::default(),
                has_event: false,
            });
        }
    }

    /// Binds a player's inputs to an owner (the ability system their ability inputs drive).
    pub fn bind_player(&mut self, player: usize, owner: Entity) {
        if let Some(p) = self.state.player_owner.get_mut(player) {
            *p = owner;
        }
    }

    /// The owner a player's inputs drive.
    pub fn player_owner(&self, player: usize) -> Option<Entity> {
        self.state.player_owner.get(player).copied().filter(|e| self.is_alive(*e))
    }

    /// An ability's state blob read as `T` (missing bytes read as zero); `None` for a stale
    /// handle.
    pub fn ability_state<T: bytemuck::Pod>(&self, h: AbilityHandle) -> Option<T> {
        self.spec_slot(h)?;
        let bytes = self.ability_state_bytes(h);
        let mut v = T::zeroed();
        let dst = bytemuck::bytes_of_mut(&mut v);
        let n = dst.len().min(bytes.len());
        dst[..n].copy_from_slice(&bytes[..n]);
        Some(v)
    }

    pub(crate) fn ability_state_bytes(&self, h: AbilityHandle) -> &[u8] {
        let w = self.state.layout.state_words;
        let Some(i) = self.spec_slot(h) else { return &[] };
        let size = usize::from(self.content.ability_def(self.state.specs[i].def).state_size);
        let bytes: &[u8] = bytemuck::cast_slice(&self.state.ability_state[i * w..(i + 1) * w]);
        &bytes[..size.min(bytes.len())]
    }

    pub(crate) fn ability_state_bytes_mut(&mut self, h: AbilityHandle) -> &mut [u8] {
        let w = self.state.layout.state_words;
        let Some(i) = self.spec_slot(h) else { return &mut [] };
        let size = usize::from(self.content.ability_def(self.state.specs[i].def).state_size);
        let bytes: &mut [u8] =
            bytemuck::cast_slice_mut(&mut self.state.ability_state[i * w..(i + 1) * w]);
        let n = size.min(bytes.len());
        &mut bytes[..n]
    }

    pub(crate) fn set_ability_rng(&mut self, h: AbilityHandle, state: u64) {
        if let Some(i) = self.spec_slot(h) {
            self.state.specs[i].rng = state;
        }
    }

    // ----------------------------------------------------------------------------------------
    // Granting
    // ----------------------------------------------------------------------------------------

    /// Grants an ability at a level, bound to the definition's default input.
    ///
    /// Each grant is its own spec, as each `GiveAbility` is in GAS: granting a definition the
    /// owner already has gives a second spec in another slot, with its own handle, level,
    /// cooldown-independent state and input binding (both bound to the same input activate on
    /// its press). To grant an ability once, check [`World::find_ability`] first.
    ///
    /// # Errors
    ///
    /// The owner is not an actor, the definition is foreign, or every ability slot of the
    /// owner is taken ([`GrantError`]).
    pub fn grant_ability(
        &mut self,
        owner: Entity,
        def: AbilityDefId,
        level: u16,
    ) -> Result<AbilityHandle, GrantError> {
        let Some(d) = self.content.ability_defs().get(def.index()) else {
            return Err(GrantError::UnknownAbility(def));
        };
        let input = d.input;
        self.grant_inner(owner, def, level, input, Entity::NONE, 0)
    }

    /// Grants an ability with an input binding and a source object (an item).
    ///
    /// # Errors
    ///
    /// As [`World::grant_ability`].
    pub fn grant_ability_with(
        &mut self,
        owner: Entity,
        def: AbilityDefId,
        level: u16,
        input: Option<u8>,
        source_object: Entity,
    ) -> Result<AbilityHandle, GrantError> {
        self.grant_inner(owner, def, level, input, source_object, 0)
    }

    /// Grants every ability of an ability set (F-GA-16). A grant without an `input` binds the
    /// ability's own `input`, as [`World::grant_ability`] does; the handles are those granted
    /// (a grant [`World::grant_ability`] would refuse is left out).
    pub fn grant_ability_set(&mut self, owner: Entity, set: AbilitySetId) -> Vec<AbilityHandle> {
        let content = self.content.clone();
        let Some(s) = content.ability_set_defs().get(set.index()) else { return Vec::new() };
        s.grants
            .iter()
            .filter_map(|g| {
                let input = g.input.or(content.ability_def(g.ability).input);
                self.grant_inner(owner, g.ability, g.level, input, Entity::NONE, 0).ok()
            })
            .collect()
    }

    pub(crate) fn grant_inner(
        &mut self,
        owner: Entity,
        def: AbilityDefId,
        level: u16,
        input: Option<u8>,
        source_object: Entity,
        granted_by: u32,
    ) -> Result<AbilityHandle, GrantError> {
        if !self.has_ability_system(owner) {
            return Err(GrantError::NotAnActor(owner));
        }
        if def.index() >= self.content.ability_defs().len() {
            return Err(GrantError::UnknownAbility(def));
        }
        let n = self.state.layout.abilities;
        let start = owner.index as usize * n;
        let Some(k) = self.state.specs[start..start + n].iter().position(|s| !s.is_granted())
        else {
            return Err(GrantError::OverCapacity(CapacityExceeded {
                capacity: Capacity::AbilitiesPerEntity,
                needed: n as u32 + 1,
                limit: u32::from(self.config.abilities_per_entity),
            }));
        };
        let i = start + k;
        let generation = self.state.specs[i].generation.wrapping_add(1).max(1);
        self.state.specs[i] = AbilitySpec {
            def,
            level: level.max(1),
            generation,
            flags: spec_flags::GRANTED,
            input: input.map(u16::from).unwrap_or(NO_INPUT),
            dynamic_tags: [u16::MAX; 2],
            activation_serial: 0,
            activated_at: 0,
            granted_by,
            end_at: NEVER,
            source_object,
            rng: 0,
            ..AbilitySpec::default()
        };
        let w = self.state.layout.state_words;
        self.state.ability_state[i * w..(i + 1) * w].iter_mut().for_each(|x| *x = 0);
        self.clear_ability_tags(i);
        let h = AbilityHandle { owner, slot: k as u16, generation };
        self.out.ability_events.push(AbilityEvent::Granted { handle: h, def });
        self.grant_hook(h, true);
        if self.ability(h).is_some() && self.content.ability_def(def).passive {
            // Passive abilities activate in the grant frame (F-GA-11).
            self.submit(Work::Activate {
                handle: h,
                event: EventData::default(),
                has_event: false,
            });
        }
        Ok(h)
    }

    /// Removes a granted ability (cancelling it first if active).
    pub fn remove_ability(&mut self, h: AbilityHandle) {
        self.submit(Work::RemoveAbility { handle: h });
    }

    pub(crate) fn remove_ability_now(&mut self, h: AbilityHandle) {
        let Some(i) = self.spec_slot(h) else { return };
        if self.state.specs[i].is_active() {
            self.end_now(h, true);
        }
        // Ending may have removed it already (remove-on-end).
        if self.spec_slot(h).is_none() {
            return;
        }
        self.grant_hook(h, false);
        let Some(i) = self.spec_slot(h) else { return };
        let def = self.state.specs[i].def;
        let generation = self.state.specs[i].generation;
        self.state.specs[i] = AbilitySpec { generation, ..AbilitySpec::default() };
        let w = self.state.layout.state_words;
        self.state.ability_state[i * w..(i + 1) * w].iter_mut().for_each(|x| *x = 0);
        self.clear_ability_tags(i);
        self.out.ability_events.push(AbilityEvent::Removed { handle: h, def });
    }

    /// Changes a granted ability's level in place (it keeps running, F-GA-15).
    pub fn set_ability_level(&mut self, h: AbilityHandle, level: u16) {
        if let Some(i) = self.spec_slot(h) {
            self.state.specs[i].level = level.max(1);
        }
    }

    /// Re-grants an ability at a new level: it ends (cancelled) and gets a new handle.
    ///
    /// # Errors
    ///
    /// [`GrantError::InvalidHandle`] when `h` is no longer granted.
    pub fn regrant_ability(
        &mut self,
        h: AbilityHandle,
        level: u16,
    ) -> Result<AbilityHandle, GrantError> {
        let Some(&s) = self.ability(h) else { return Err(GrantError::InvalidHandle(h)) };
        self.remove_ability(h);
        self.grant_inner(h.owner, s.def, level, s.input_id(), s.source_object, s.granted_by)
    }

    /// Binds (or unbinds) a granted ability's input.
    pub fn set_ability_input(&mut self, h: AbilityHandle, input: Option<u8>) {
        if let Some(i) = self.spec_slot(h) {
            self.state.specs[i].input =
                input.map(u16::from).filter(|i| *i < MAX_INPUTS).unwrap_or(NO_INPUT);
        }
    }

    /// Runs the behaviour's `on_granted` (`granted`) or `on_removed` hook of a granted ability,
    /// inside the running change (or as one top-level change when called from outside one).
    fn grant_hook(&mut self, h: AbilityHandle, granted: bool) {
        let Some(s) = self.ability(h).copied() else { return };
        let hook =
            self.content.ability_def(s.def).behaviour.and_then(|f| match self.bound.get(f) {
                Some(BoundFn::Behaviour(b)) => {
                    if granted {
                        b.on_granted
                    } else {
                        b.on_removed
                    }
                }
                _ => None,
            });
        let Some(hook) = hook else { return };
        self.run_item(|w| {
            let mut ctx =
                AbilityCtx { world: w, handle: h, serial: s.activation_serial, event: None };
            hook(&mut ctx);
        });
    }

    /// Effect-granted abilities: grant on activation of the effect's parts (a grant without an
    /// `input` binds the ability's own).
    pub(crate) fn grant_from_effect(&mut self, ti: u32, grants: &[GrantDef], seq: u32) {
        let owner = self.entity_of(ti);
        for g in grants {
            let input = g.input.or(self.content.ability_def(g.ability).input);
            // An effect's grant that does not fit is left out, as a set's is.
            let _ = self.grant_inner(owner, g.ability, g.level, input, Entity::NONE, seq);
        }
    }

    /// Effect-granted abilities: apply removal policies when the effect's parts go away.
    pub(crate) fn ungrant_from_effect(&mut self, ti: u32, grants: &[GrantDef], seq: u32) {
        if grants.is_empty() {
            return;
        }
        let owner = self.entity_of(ti);
        let specs: Vec<(AbilityHandle, AbilitySpec)> = self
            .abilities(owner)
            .filter(|(_, s)| s.granted_by == seq)
            .map(|(h, s)| (h, *s))
            .collect();
        for (h, s) in specs {
            let policy = grants
                .iter()
                .find(|g| g.ability == s.def)
                .map(|g| g.removal)
                .unwrap_or(GrantRemoval::CancelImmediately);
            match policy {
                GrantRemoval::CancelImmediately => self.remove_ability_now(h),
                GrantRemoval::RemoveOnEnd => {
                    if s.is_active() {
                        if let Some(i) = self.spec_slot(h) {
                            self.state.specs[i].flags |= spec_flags::REMOVE_ON_END;
                        }
                    } else {
                        self.remove_ability_now(h);
                    }
                }
                GrantRemoval::DoNothing => {
                    if let Some(i) = self.spec_slot(h) {
                        self.state.specs[i].granted_by = 0;
                    }
                }
            }
        }
    }

    // ----------------------------------------------------------------------------------------
    // Activation
    // ----------------------------------------------------------------------------------------

    /// Tries to activate an ability (F-GA-04). From setup code or a system the activation is
    /// complete when this returns; from inside a running change it is queued
    /// (`Ok(Activation::Queued)`). Every failure is also an [`AbilityEvent::ActivationFailed`]
    /// and an entry of [`World::activation_log`].
    pub fn try_activate(&mut self, h: AbilityHandle) -> Result<Activation, ActivationFailure> {
        self.try_activate_inner(h, None)
    }

    /// Tries to activate an ability with event data (source/target tag checks apply, and the
    /// behaviour sees the event).
    pub fn try_activate_with_event(
        &mut self,
        h: AbilityHandle,
        event: EventData,
    ) -> Result<Activation, ActivationFailure> {
        self.try_activate_inner(h, Some(event))
    }

    fn try_activate_inner(
        &mut self,
        h: AbilityHandle,
        event: Option<EventData>,
    ) -> Result<Activation, ActivationFailure> {
        if self.scratch.busy {
            self.scratch.work.push_back(Work::Activate {
                handle: h,
                event: event.unwrap_or_default(),
                has_event: event.is_some(),
            });
            return Ok(Activation::Queued);
        }
        self.run_item(|w| w.activate_now(h, event)).map(|serial| Activation::Activated { serial })
    }

    /// Checks whether an ability could activate now, without side effects: steps 1–7 of the
    /// activation pipeline and, for a `commit_on_activate` ability, the commit activation
    /// would make — its cost and cooldown effects must be applicable (immunity, application
    /// and custom requirements, a full stack denying overflow, a full effect column), or the
    /// answer is the [`ActivationFailure::CommitFailed`] that activating would give (F-GA-06).
    /// (An ability that commits later, from its behaviour, is checked for cooldown tags and
    /// affordability only, as GAS's `CanActivateAbility`.)
    pub fn can_activate(
        &self,
        h: AbilityHandle,
        event: Option<&EventData>,
    ) -> Result<(), ActivationFailure> {
        self.activation_checks(h, event)?;
        let Some(s) = self.ability(h) else { return Err(ActivationFailure::InvalidHandle) };
        let def = self.content.ability_def(s.def);
        if def.commit_on_activate {
            // Steps 5 and 6 (cooldown tags, cost) were just checked.
            self.commit_specs(h, def, true, true, None, false)?;
        }
        Ok(())
    }

    /// Steps 1–7 of the activation pipeline (what [`World::can_activate`] checks before the
    /// commit).
    fn activation_checks(
        &self,
        h: AbilityHandle,
        event: Option<&EventData>,
    ) -> Result<(), ActivationFailure> {
        let i = self.spec_slot(h).ok_or(ActivationFailure::InvalidHandle)?;
        let spec = self.state.specs[i];
        let def = self.content.ability_def(spec.def);
        // 1. Instancing.
        if spec.is_active() && !def.retrigger {
            return Err(ActivationFailure::AlreadyActive);
        }
        let owner_view = self.tag_view_index(h.owner.index);
        if let Some(dead) = self.content.settings().dead_tag
            && owner_view
                .get(dead.index() / 64)
                .is_some_and(|w| w & (1 << (dead.index() % 64)) != 0)
        {
            return Err(ActivationFailure::Dead);
        }
        // 2. Owner tags.
        if def.activation_blocked_tags.intersects_words(owner_view) {
            return Err(ActivationFailure::BlockedByTags);
        }
        if !def.activation_required_tags.is_subset_of_words(owner_view) {
            return Err(ActivationFailure::MissingTags);
        }
        // 3. Blocked by running abilities or effects.
        if self.ability_tags(h).intersects(&self.block_set(h.owner, Some(h))) {
            return Err(ActivationFailure::BlockedByAbility);
        }
        // 4. Event activations: source and target tags.
        if let Some(ev) = event {
            let src = self.tags(ev.instigator);
            let tgt = self.tags(ev.target);
            if !def.source_required_tags.is_subset(&src)
                || def.source_blocked_tags.intersects(&src)
                || !def.target_required_tags.is_subset(&tgt)
                || def.target_blocked_tags.intersects(&tgt)
            {
                return Err(ActivationFailure::SourceOrTargetTags);
            }
        }
        // 5. Cooldown.
        if self.cooldown_tags_of(&spec, def).intersects_words(owner_view) {
            return Err(ActivationFailure::OnCooldown);
        }
        // 6. Cost.
        if !self.can_afford(h, def) {
            return Err(ActivationFailure::CantAffordCost);
        }
        // The definition's own tasks (timeline, end timer) need room in the pool.
        let needed = u32::from(def.timeline.is_some()) + u32::from(def.end_after.is_some());
        if needed > 0
            && (self.state.tasks.len() as u32).saturating_sub(self.state.header.tasks_live) < needed
        {
            return Err(ActivationFailure::TaskCapacity);
        }
        // 7. Custom check.
        if let Some(f) = def.can_activate
            && let Some(BoundFn::Check(check)) = self.bound.get(f)
        {
            check(self, h, event).map_err(ActivationFailure::Custom)?;
        }
        Ok(())
    }

    /// The union of tags blocked by the owner's running abilities (except `except`) and active
    /// effects' blocked ability tags (computed on demand; nothing to keep in sync).
    pub fn block_set(&self, owner: Entity, except: Option<AbilityHandle>) -> TagSet {
        let mut b = TagSet::EMPTY;
        let accel = &self.content.accel;
        for (h, s) in self.abilities(owner) {
            if s.is_active() && Some(h) != except {
                b.union_with(&self.content.ability_def(s.def).block_abilities_with_tags);
            }
        }
        for ef in self.effects(owner) {
            // Most effects block nothing; skip their (1024-bit) unions.
            if !ef.is_inhibited()
                && accel.blocks_abilities.get(ef.def.index()).copied().unwrap_or(false)
                && let Some(d) = self.content.effect_defs().get(ef.def.index())
            {
                b.union_with(&d.blocked_ability_tags);
            }
        }
        b
    }

    fn can_afford(&self, h: AbilityHandle, def: &AbilityDef) -> bool {
        let Some(cost) = def.cost else { return true };
        let content = self.content.clone();
        let edef = content.effect_def(cost);
        // A `Scalable` magnitude reads nothing of the spec but its level: costs made only of
        // those (the common case) skip building the ability's spec (source tags, captures,
        // context), which was most of an activation attempt's cost.
        let mut spec = EffectSpec::new(cost, self.ability(h).map(|s| s.level).unwrap_or(1));
        if !edef.modifiers.iter().all(|m| matches!(m.magnitude, MagnitudeDef::Scalable { .. })) {
            self.init_cost_spec(&mut spec, h, def);
        }
        let owner = h.owner;
        // Apply the cost modifiers to scratch base values in order, then require every touched
        // attribute's resulting current value to stay at or above 0.
        let mut touched: [(u16, Fx); crate::effect::MAX_MODIFIERS] =
            [(u16::MAX, Fx::ZERO); crate::effect::MAX_MODIFIERS];
        for (i, m) in edef.modifiers.iter().enumerate() {
            if !self.has_attr(owner, m.attr) {
                continue;
            }
            let mag = self.modifier_magnitude(edef, i, &spec, owner, 1);
            let base = touched
                .iter()
                .find(|t| t.0 == m.attr.0)
                .map(|t| t.1)
                .unwrap_or_else(|| self.base(owner, m.attr).unwrap_or(Fx::ZERO));
            // Unclamped on purpose: a clamp at 0 must not make an unaffordable cost affordable.
            let (nb, _) = crate::attribute::execute_on_base(base, m.op, mag);
            if let Some(t) = touched.iter_mut().find(|t| t.0 == m.attr.0 || t.0 == u16::MAX) {
                *t = (m.attr.0, nb);
            }
        }
        touched.iter().filter(|t| t.0 != u16::MAX).all(|(a, b)| {
            let a = crate::id::AttrId(*a);
            let (raw, _) = self.evaluate_with_base(owner.index, a, *b);
            raw >= Fx::ZERO
        })
    }

    /// The cost spec of an ability, built in `spec`, which must be `EffectSpec::new(cost,
    /// level)` with the ability's level (see [`World::init_ability_spec`]): the ability's spec
    /// and its `cost_set_by_caller` values.
    fn init_cost_spec(&self, spec: &mut EffectSpec, h: AbilityHandle, def: &AbilityDef) {
        self.init_ability_spec(spec, h);
        for (t, v) in def.cost_set_by_caller.iter().take(MAX_SET_BY_CALLER) {
            spec.set_set_by_caller(*t, *v);
        }
        // Values beyond the spec's four stay in the definition: the spec names them.
        if !def.cost_values_beyond.is_empty()
            && let Some(s) = self.ability(h)
        {
            spec.ext = capacity_ext::content(s.def, capacity_ext::COST);
        }
    }

    /// A spec made by an ability: instigator the owner, causer the avatar, the ability's level,
    /// handle and serial in the context, and its tags among the source tags.
    #[inline]
    pub fn make_ability_spec(&self, h: AbilityHandle, def: EffectDefId) -> EffectSpec {
        let mut spec = EffectSpec::new(def, self.ability_level(h));
        self.init_ability_spec(&mut spec, h);
        spec
    }

    /// The level an ability's specs are made at (1 for a handle that names no ability).
    fn ability_level(&self, h: AbilityHandle) -> u16 {
        self.ability(h).map(|s| s.level).unwrap_or(1)
    }

    /// What [`World::make_ability_spec`] adds to `EffectSpec::new(def, level)`, written into
    /// `spec` in place (which must be that new spec, at [`World::ability_level`]).
    pub(crate) fn init_ability_spec(&self, spec: &mut EffectSpec, h: AbilityHandle) {
        let a = self.ability(h).copied();
        self.init_spec(spec, h.owner);
        spec.context.causer = self.avatar(h.owner);
        spec.context.ability = h;
        spec.context.activation_serial = a.map(|s| s.activation_serial).unwrap_or(0);
        spec.context.source_object = a.map(|s| s.source_object).unwrap_or(Entity::NONE);
        if a.is_some() {
            spec.source_tags.union_with(&self.ability_tags(h));
        }
    }

    pub(crate) fn log_activation(
        &mut self,
        h: AbilityHandle,
        def: AbilityDefId,
        result: Result<u32, ActivationFailure>,
    ) {
        if self.activation_log.len() == LOG_LEN {
            self.activation_log.pop_front();
        }
        self.activation_log.push_back(ActivationRecord {
            frame: self.frame(),
            handle: h,
            def,
            result,
        });
    }

    /// Recent activation attempts, oldest first (not part of the snapshot: a debug ring of
    /// the last 256, rewound when a snapshot is loaded so it matches the timeline).
    pub fn activation_log(&self) -> impl Iterator<Item = &ActivationRecord> + '_ {
        self.activation_log.iter()
    }

    /// The most recent activation attempt of an ability.
    pub fn last_activation(&self, h: AbilityHandle) -> Option<&ActivationRecord> {
        self.activation_log.iter().rev().find(|r| r.handle == h)
    }

    /// The activation pipeline, steps 1–8.
    pub(crate) fn activate_now(
        &mut self,
        h: AbilityHandle,
        event: Option<EventData>,
    ) -> Result<u32, ActivationFailure> {
        let Some(i) = self.spec_slot(h) else {
            return Err(ActivationFailure::InvalidHandle);
        };
        let def_id = self.state.specs[i].def;
        let r = self.activate_checked(h, i, event);
        // A success is logged by `activate_checked` before the behaviour runs, so a commit the
        // behaviour makes and fails is logged after it.
        if let Err(reason) = r {
            self.out.ability_events.push(AbilityEvent::ActivationFailed {
                handle: h,
                def: def_id,
                reason,
            });
            self.log_activation(h, def_id, r);
        }
        r
    }

    fn activate_checked(
        &mut self,
        h: AbilityHandle,
        i: usize,
        event: Option<EventData>,
    ) -> Result<u32, ActivationFailure> {
        let content = self.content.clone();
        let def_id = self.state.specs[i].def;
        let def = content.ability_def(def_id);
        if self.state.specs[i].is_active() && def.retrigger {
            self.end_now(h, true);
        }
        // Steps 1–7; the commit's check follows once abilities this one cancels are ended.
        self.activation_checks(h, event.as_ref())?;
        // 8. Success.
        let owner = h.owner;
        let ti = owner.index;
        let mut cancelled = false;
        if !def.cancel_abilities_with_tags.is_empty() {
            // `specs_matching(owner, tags, false)` into a reused buffer (no allocation per
            // activation).
            let mut others = core::mem::take(&mut self.scratch.handles);
            others.clear();
            others.extend(
                self.abilities(owner)
                    .map(|(o, _)| o)
                    .filter(|o| self.ability_tags(*o).intersects(&def.cancel_abilities_with_tags)),
            );
            for &other in &others {
                if other != h && self.is_ability_active(other) {
                    self.end_now(other, true);
                    cancelled = true;
                }
            }
            others.clear();
            self.scratch.handles = others;
        }
        // The handle may have been invalidated by a cancelled ability's removal policy.
        let Some(i) = self.spec_slot(h) else { return Err(ActivationFailure::InvalidHandle) };
        // A commit that would fail fails the activation before anything of it happens. (Its
        // cooldown and cost checks were made by steps 5 and 6 just now: they are made again
        // only if cancelling other abilities changed the state since.)
        if def.commit_on_activate {
            self.commit_specs(h, def, true, true, None, cancelled)?;
        }
        self.change_tags(ti, &def.activation_owned_tags, 1);
        let frame = self.frame();
        let spec = &mut self.state.specs[i];
        spec.flags = (spec.flags | spec_flags::ACTIVE) & !spec_flags::COMMITTED;
        spec.activation_serial = spec.activation_serial.wrapping_add(1);
        spec.activated_at = frame;
        spec.end_at = def.end_after.map(|f| frame.saturating_add(f)).unwrap_or(NEVER);
        let serial = spec.activation_serial;
        spec.rng = crate::random::Stream::derive(
            self.state.header.seed,
            &[
                crate::random::salt::ACTIVATION,
                u64::from(owner.index),
                u64::from(h.slot),
                u64::from(def_id.0),
                u64::from(serial),
            ],
        )
        .state();
        if def.instancing != Instancing::PerActor {
            let w = self.state.layout.state_words;
            self.state.ability_state[i * w..(i + 1) * w].iter_mut().for_each(|x| *x = 0);
        }
        self.out.ability_events.push(AbilityEvent::Activated {
            handle: h,
            def: def_id,
            serial,
            trigger: event.map(|e| e.tag),
        });
        self.ability_cue_edges(h, crate::cue::CueKind::Added);
        if def.commit_on_activate {
            // Fails only if activating changed what the check above saw; the ability is then
            // cancelled and the activation fails with the commit's reason.
            self.commit_now(h, true, true)?;
        }
        if let Some(t) = def.timeline {
            let rate = Fx::ONE;
            if self
                .spawn_task(h, serial, TIMELINE_TASK, TaskSpec::PlayTimeline { timeline: t, rate })
                .is_err()
            {
                self.end_now(h, true);
                return Err(ActivationFailure::TaskCapacity);
            }
        }
        if let Some(f) = def.end_after
            && self.spawn_task(h, serial, END_AFTER_TASK, TaskSpec::WaitFrames(f)).is_err()
        {
            self.end_now(h, true);
            return Err(ActivationFailure::TaskCapacity);
        }
        self.log_activation(h, def_id, Ok(serial));
        if let Some(b) = def.behaviour.and_then(|f| match self.bound.get(f) {
            Some(BoundFn::Behaviour(b)) => Some(*b),
            _ => None,
        }) && let Some(on_activate) = b.on_activate
        {
            let mut ctx = AbilityCtx { world: self, handle: h, serial, event };
            on_activate(&mut ctx);
        }
        Ok(serial)
    }

    /// Ends an ability normally (queued; uniform for every instancing mode, F-GA-10).
    pub fn end_ability(&mut self, h: AbilityHandle) {
        self.submit(Work::EndAbility { handle: h, cancelled: false });
    }

    /// Cancels an ability (queued).
    pub fn cancel_ability(&mut self, h: AbilityHandle) {
        self.submit(Work::EndAbility { handle: h, cancelled: true });
    }

    /// Cancels the owner's active abilities whose tags match any of `with` (all when empty) and
    /// none of `without`, except `ignore`.
    pub fn cancel_abilities_matching(
        &mut self,
        owner: Entity,
        with: &TagSet,
        without: &TagSet,
        ignore: Option<AbilityHandle>,
    ) {
        for h in self.matching_active(owner, with, without, ignore) {
            self.submit(Work::EndAbility { handle: h, cancelled: true });
        }
    }

    /// Cancels every active ability of the owner except `ignore` (works for every instancing
    /// mode, G-27).
    pub fn cancel_all_abilities(&mut self, owner: Entity, ignore: Option<AbilityHandle>) {
        self.cancel_abilities_matching(owner, &TagSet::EMPTY, &TagSet::EMPTY, ignore);
    }

    pub(crate) fn matching_active(
        &self,
        owner: Entity,
        with: &TagSet,
        without: &TagSet,
        ignore: Option<AbilityHandle>,
    ) -> Vec<AbilityHandle> {
        self.abilities(owner)
            .filter(|(h, s)| s.is_active() && Some(*h) != ignore)
            .map(|(h, _)| h)
            .filter(|h| {
                let t = self.ability_tags(*h);
                (with.is_empty() || t.intersects(with)) && !t.intersects(without)
            })
            .collect()
    }

    /// Ends an active ability now: its tasks end, its owned tags go, its behaviour's `on_end`
    /// runs, and a remove-on-end spec is removed.
    pub(crate) fn end_now(&mut self, h: AbilityHandle, cancelled: bool) {
        let Some(i) = self.spec_slot(h) else { return };
        if !self.state.specs[i].is_active() {
            return;
        }
        let content = self.content.clone();
        let spec = self.state.specs[i];
        let def = content.ability_def(spec.def);
        self.state.specs[i].flags &= !(spec_flags::ACTIVE | spec_flags::COMMITTED);
        self.end_tasks_of(h, spec.activation_serial);
        self.change_tags(h.owner.index, &def.activation_owned_tags, -1);
        if let Some(b) = def.behaviour.and_then(|f| match self.bound.get(f) {
            Some(BoundFn::Behaviour(b)) => Some(*b),
            _ => None,
        }) && let Some(on_end) = b.on_end
        {
            let mut ctx =
                AbilityCtx { world: self, handle: h, serial: spec.activation_serial, event: None };
            on_end(&mut ctx, cancelled);
        }
        self.ability_cue_edges(h, crate::cue::CueKind::Removed);
        self.out.ability_events.push(AbilityEvent::Ended {
            handle: h,
            def: spec.def,
            was_cancelled: cancelled,
        });
        if spec.flags & spec_flags::REMOVE_ON_END != 0 {
            self.remove_ability_now(h);
        }
    }

    // ----------------------------------------------------------------------------------------
    // Commit, cost, cooldown
    // ----------------------------------------------------------------------------------------

    /// Commits cost and/or cooldown of an active ability, re-checking both (F-GA-06).
    ///
    /// # Errors
    ///
    /// On failure the ability is cancelled, the reason is returned (`OnCooldown`,
    /// `CantAffordCost` or `CommitFailed`; `InvalidHandle` for a stale or inactive handle), and
    /// the failure is reported like a failed activation: an
    /// [`AbilityEvent::ActivationFailed`] and an entry of [`World::activation_log`].
    pub fn commit_ability(
        &mut self,
        h: AbilityHandle,
        cost: bool,
        cooldown: bool,
    ) -> Result<(), ActivationFailure> {
        if self.scratch.busy {
            return self.commit_reported(h, cost, cooldown);
        }
        self.run_item(|w| w.commit_reported(h, cost, cooldown))
    }

    /// A commit after activation, its failure reported.
    fn commit_reported(
        &mut self,
        h: AbilityHandle,
        cost: bool,
        cooldown: bool,
    ) -> Result<(), ActivationFailure> {
        let Some(def) = self.ability(h).map(|s| s.def) else {
            return Err(ActivationFailure::InvalidHandle);
        };
        match self.commit_now(h, cost, cooldown) {
            Ok(()) => Ok(()),
            Err(reason) => {
                self.out.ability_events.push(AbilityEvent::ActivationFailed {
                    handle: h,
                    def,
                    reason,
                });
                self.log_activation(h, def, Err(reason));
                Err(reason)
            }
        }
    }

    /// Whether applying the commit's cost and cooldown effects to `owner` now cannot fail,
    /// known without building their specs: neither has application or custom requirements or
    /// a stack that denies overflow, no effect of the content grants immunity, and the owner
    /// has a free effect slot (for a duration cooldown or cost). Exactly when
    /// [`World::check_apply`] would accept both (the crate-built specs carry every SetByCaller
    /// value their effects need: content checks it), so the check can be skipped.
    fn commit_cannot_fail(
        &self,
        owner: Entity,
        def: &AbilityDef,
        cost: bool,
        cooldown: bool,
    ) -> bool {
        if self.content.accel.any_immune {
            return false;
        }
        let room = self.effect_store().has_room(owner.index);
        let accel = &self.content.accel;
        [def.cost.filter(|_| cost), def.cooldown.filter(|_| cooldown)].iter().flatten().all(|id| {
            accel.applies_freely.get(id.index()).copied().unwrap_or(false)
                && (room || self.content.effect_def(*id).is_instant())
        })
    }

    /// The re-checks of a commit, changing nothing: the cooldown tags, the cost's
    /// affordability, then whether each spec's application would succeed. With `specs`, the
    /// specs it would apply (cost, cooldown) are left there, built in place (returning them by
    /// value copied each spec several times, a percent of the arena's step); without, a commit
    /// that [cannot fail](World::commit_cannot_fail) builds none.
    /// `recheck: false` skips the cooldown-tag and cost checks when the caller has just made
    /// them (activation's steps 5 and 6, nothing changed since).
    #[allow(
        clippy::too_many_arguments,
        reason = "which parts to commit, where to put the specs and whether to re-check: all flags of one call"
    )]
    fn commit_specs(
        &self,
        h: AbilityHandle,
        def: &AbilityDef,
        cost: bool,
        cooldown: bool,
        specs: Option<&mut [Option<EffectSpec>; 2]>,
        recheck: bool,
    ) -> Result<(), ActivationFailure> {
        let owner_view = self.tag_view_index(h.owner.index);
        if recheck
            && cooldown
            && def.cooldown.is_some()
            && self
                .ability(h)
                .is_some_and(|s| self.cooldown_tags_of(s, def).intersects_words(owner_view))
        {
            return Err(ActivationFailure::OnCooldown);
        }
        if recheck && cost && !self.can_afford(h, def) {
            return Err(ActivationFailure::CantAffordCost);
        }
        let safe = self.commit_cannot_fail(h.owner, def, cost, cooldown);
        let mut local = [None, None];
        let specs = match specs {
            Some(s) => s,
            None if safe => return Ok(()),
            None => &mut local,
        };
        // Built where they stay (each spec is 520 bytes: no copies).
        let level = self.ability_level(h);
        specs[0] = None;
        specs[1] = None;
        if let Some(c) = def.cost.filter(|_| cost) {
            let spec = specs[0].insert(EffectSpec::new(c, level));
            self.init_cost_spec(spec, h, def);
        }
        if let Some(c) = def.cooldown.filter(|_| cooldown) {
            let spec = specs[1].insert(EffectSpec::new(c, level));
            self.init_cooldown_spec(spec, h, def);
        }
        if safe {
            return Ok(());
        }
        if let Some(s) = &specs[0] {
            self.check_apply(s, h.owner).map_err(|error| ActivationFailure::CommitFailed {
                part: CommitPart::Cost,
                error,
            })?;
        }
        if let Some(s) = &specs[1] {
            self.check_apply(s, h.owner).map_err(|error| ActivationFailure::CommitFailed {
                part: CommitPart::Cooldown,
                error,
            })?;
        }
        Ok(())
    }

    /// Commits: re-checks, then applies the cost and the cooldown. Nothing is applied unless
    /// both applications are expected to succeed; on any failure the ability is cancelled and
    /// the reason returned. (An application can still fail after the check only if the cost's
    /// own consequences change what the cooldown needs; the cost then stays paid.)
    pub(crate) fn commit_now(
        &mut self,
        h: AbilityHandle,
        cost: bool,
        cooldown: bool,
    ) -> Result<(), ActivationFailure> {
        let Some(i) = self.spec_slot(h) else { return Err(ActivationFailure::InvalidHandle) };
        let content = self.content.clone();
        let def = content.ability_def(self.state.specs[i].def);
        let mut specs = [None, None];
        if let Err(reason) = self.commit_specs(h, def, cost, cooldown, Some(&mut specs), true) {
            self.end_now(h, true);
            return Err(reason);
        }
        if let Some(spec) = &specs[0]
            && let Err(error) = self.apply_now(spec, h.owner)
        {
            self.end_now(h, true);
            return Err(ActivationFailure::CommitFailed { part: CommitPart::Cost, error });
        }
        let mut cd_handle = None;
        if let Some(spec) = &specs[1] {
            match self.apply_now(spec, h.owner) {
                Ok(Applied::Added(eh) | Applied::Stacked(eh)) => cd_handle = Some(eh),
                Ok(_) => {}
                Err(error) => {
                    self.end_now(h, true);
                    return Err(ActivationFailure::CommitFailed {
                        part: CommitPart::Cooldown,
                        error,
                    });
                }
            }
        }
        if let Some(i) = self.spec_slot(h) {
            self.state.specs[i].flags |= spec_flags::COMMITTED;
        }
        self.out.ability_events.push(AbilityEvent::Committed { handle: h, cooldown: cd_handle });
        Ok(())
    }

    /// The cooldown spec of an ability: its `cooldown_set_by_caller` values, its
    /// `cooldown_duration` (which, for a `SetByCaller(key)` duration, is also `key`'s value in
    /// frames) and its `cooldown_tags` as dynamic granted tags.
    /// Built in `spec`, which must be `EffectSpec::new(cooldown, level)` with the ability's
    /// level (see [`World::init_ability_spec`]).
    fn init_cooldown_spec(&self, spec: &mut EffectSpec, h: AbilityHandle, def: &AbilityDef) {
        self.init_ability_spec(spec, h);
        // `cooldown_set_by_caller`, then a SetByCaller duration's key (`cooldown_values`).
        for (t, v) in def.cooldown_values.iter().take(MAX_SET_BY_CALLER) {
            spec.set_set_by_caller(*t, *v);
        }
        if let Some(d) = def.cooldown_duration {
            spec.duration_override = d.max(1);
        }
        if let Some(s) = self.ability(h) {
            let extra = self.cooldown_extra_words(s, def);
            for (k, t) in extra.into_iter().enumerate().filter(|(_, t)| *t != u16::MAX) {
                spec.dynamic_granted_tags[k] = t;
            }
            // Values and definition tags beyond the spec's room stay in the definition: the
            // spec names them.
            let tags = !def.cooldown_tags_beyond.is_empty() && !self.has_runtime_cooldown_tags(h);
            if tags || !def.cooldown_values_beyond.is_empty() {
                let part =
                    if tags { capacity_ext::COOLDOWN } else { capacity_ext::COOLDOWN_VALUES };
                spec.ext = capacity_ext::content(s.def, part);
            }
        }
    }

    /// `(remaining, total)` frames of the longest-remaining active effect on `owner` owning any
    /// of `tags` (granted, asset or dynamic tags, hierarchically): the cooldown query of
    /// F-GA-09. An infinite effect never ends: it reports `(NEVER, NEVER)` (`u32::MAX`) and
    /// outlasts every finite one. `None` when nothing matches.
    pub fn cooldown_remaining(&self, owner: Entity, tags: &TagSet) -> Option<(u32, u32)> {
        let frame = self.frame();
        self.effects(owner)
            .iter()
            .zip(self.effect_timers(owner))
            .filter(|(ef, _)| self.effect_owns_any(owner, ef, tags))
            .map(|(ef, t)| match t.remaining(frame) {
                Some(r) => (r, ef.duration),
                None => (NEVER, NEVER),
            })
            .max_by_key(|(r, _)| *r)
    }

    /// [`World::cooldown_remaining`] for an ability's cooldown tags.
    pub fn ability_cooldown_remaining(&self, h: AbilityHandle) -> Option<(u32, u32)> {
        let s = self.ability(h)?;
        self.cooldown_remaining(h.owner, &self.cooldown_tags_of(s, self.content.ability_def(s.def)))
    }

    /// Sends a gameplay event to an entity (queued; triggers abilities and wakes tasks).
    pub fn send_event(&mut self, to: Entity, data: EventData) {
        self.submit(Work::SendEvent { to, data });
    }

    pub(crate) fn send_event_now(&mut self, to: Entity, data: EventData) {
        if !self.is_alive(to) {
            return;
        }
        let frame = self.frame();
        self.out.gameplay_events.push(crate::ability::GameplayEvent { frame, to, data });
    }

    /// Triggers: abilities of `owner` whose trigger matches.
    pub(crate) fn triggered_by(
        &self,
        owner: Entity,
        pred: impl Fn(TriggerDef) -> bool,
    ) -> Vec<AbilityHandle> {
        self.abilities(owner)
            .filter(|(_, s)| self.content.ability_def(s.def).triggers.iter().any(|t| pred(*t)))
            .map(|(h, _)| h)
            .collect()
    }

    /// Persistent cue edges of an ability activating or ending.
    fn ability_cue_edges(&mut self, h: AbilityHandle, kind: crate::cue::CueKind) {
        let Some(s) = self.ability(h).copied() else { return };
        let content = self.content.clone();
        for tag in &content.ability_def(s.def).cues {
            let params = self.ability_cue_params(h, &s);
            self.emit_cue(
                h.owner,
                *tag,
                kind,
                crate::cue::CueOrigin::ability(h, s.activation_serial),
                params,
            );
        }
    }

    /// The effect that granted an ability, if any.
    pub fn granting_effect(&self, h: AbilityHandle) -> Option<EffectHandle> {
        let s = self.ability(h)?;
        (s.granted_by != 0).then_some(EffectHandle { target: h.owner, seq: s.granted_by })
    }
}
