//! The same-frame work queue and settling (D-9).
//!
//! Every change runs as one *work item*; after each item the world settles: ongoing
//! requirements are re-evaluated for entities whose tags changed (which may switch effects off or
//! on and change tags again), dirty attributes are re-evaluated in dependency order (clamp bounds,
//! live captures), and the tag and attribute events of the item are emitted with their final
//! values. Changes requested while an item runs (from hooks) are queued and run after it, FIFO.
//!
//! The scratch memory here is empty between work items; nothing in it survives a frame, so it
//! is not part of the snapshot.

use super::attribute_table::AggScratch;
use super::output::{AttrCause, AttrEvent, Diagnostic, RemovalReason, TagEvent};
use super::state::{Layout, entity_flags};
use super::{Game, World};
use crate::attribute;
use crate::effect::EffectSpec;
use crate::id::{AttrId, AttrSetId, EffectHandle, Entity, TagId};
use crate::num::{self, Fx};
use crate::world::hooks::{BoundFn, ExecOutput};
use core::cell::RefCell;
use std::collections::VecDeque;

/// How many times one attribute may be re-evaluated in one settle before the chain is cut.
const MAX_ATTR_RECOMPUTES: u16 = 64;
/// How many inhibition passes one entity may take in one settle before toggling is cut.
const MAX_INHIBITION_PASSES: u16 = 16;

/// A queued change. An application's spec waits in `Scratch::work_specs` (in queue order), so
/// the items do not carry a whole spec's bytes through every push and pop.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Work {
    Apply { target: Entity },
    Remove { handle: EffectHandle, stacks: u16, reason: RemovalReason },
    SetBase { entity: Entity, attr: AttrId, value: Fx },
    LooseTag { entity: Entity, tag: TagId, delta: i32, set: bool },
    SetAttrSet { entity: Entity, set: AttrSetId, present: bool },
    SetLevel { handle: EffectHandle, level: u16 },
    SetRemaining { handle: EffectHandle, frames: u32 },
    Extend { handle: EffectHandle, frames: i32 },
    Despawn { entity: Entity },
    Activate { handle: crate::id::AbilityHandle, event: crate::ability::EventData, has_event: bool },
    EndAbility { handle: crate::id::AbilityHandle, cancelled: bool },
    RemoveAbility { handle: crate::id::AbilityHandle },
    SendEvent { to: Entity, data: crate::ability::EventData },
    TaskResult { result: crate::ability::TaskResult, last: bool },
}

/// How far the listeners have read each output list.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Cursors {
    pub events: usize,
    pub tags: usize,
    pub effects: usize,
    pub executions: usize,
    pub attrs: usize,
}

pub(crate) struct Scratch {
    pub work: VecDeque<Work>,
    /// The specs of the queued `Work::Apply` items, in queue order.
    pub work_specs: VecDeque<EffectSpec>,
    /// A work item is running (new changes are queued).
    pub busy: bool,
    /// Work items processed this frame (or this top-level call between frames).
    pub processed: u32,
    pub cap: u32,
    /// Tag changes: (entity index, tag, old hierarchical count), with a per-slot marker.
    pub tag_touched: Vec<(u32, TagId, u32)>,
    pub tag_mark: Vec<u32>,
    /// Entities whose tags changed since their last inhibition pass.
    pub tag_dirty: Vec<u32>,
    pub tag_dirty_mark: Vec<u16>,
    /// The entities whose `tag_dirty_mark` is non-zero.
    pub tag_dirty_seen: Vec<u32>,
    /// Attribute changes: (entity index, attr, old current, first cause, recomputes).
    pub attr_touched: Vec<(u32, AttrId, Fx, AttrCause, u16)>,
    pub attr_mark: Vec<u32>,
    /// Attributes waiting for re-evaluation.
    pub attr_queue: VecDeque<(u32, AttrId)>,
    pub attr_queued: Vec<bool>,
    /// Aggregation buffers, borrowed from `&self` evaluation paths.
    pub agg: RefCell<AggScratch>,
    /// (entity index, seq) pairs due in P1/P2.
    pub due: Vec<(u32, u32)>,
    pub exec_outputs: Vec<ExecOutput>,
    pub exec_extra: Vec<(EffectSpec, Entity)>,
    pub exec_cues: Vec<(Entity, TagId, crate::cue::CueParams)>,
    /// Effects queued for P7.
    pub queued: Vec<(EffectSpec, Entity)>,
    /// Listener read positions in the frame output.
    pub cursors: Cursors,
    /// Per-owner task lists (derived from the task pool; rebuilt after a load).
    pub tasks: crate::ability::task::TaskIndex,
    /// Ability handles collected by an activation (abilities it cancels), reused so a step
    /// does not allocate.
    pub handles: Vec<crate::id::AbilityHandle>,
    /// A player's input-bound abilities in P4, reused likewise.
    pub input_specs: Vec<(crate::id::AbilityHandle, u16)>,
    /// Set only while P4 activates an ability from a buffered press (F-GA-22), so its
    /// `on_activate` can tell; false between frames.
    pub from_buffer: bool,
    /// A targeting query's candidates (`Game::target_candidates`), reused.
    pub target_candidates: Vec<Entity>,
}

impl Scratch {
    pub fn new(layout: &Layout, cap: u32) -> Scratch {
        Scratch {
            work: VecDeque::with_capacity(64),
            work_specs: VecDeque::with_capacity(64),
            busy: false,
            processed: 0,
            cap,
            tag_touched: Vec::with_capacity(64),
            tag_mark: vec![0; layout.entities * layout.tags],
            tag_dirty: Vec::with_capacity(16),
            tag_dirty_mark: vec![0; layout.entities],
            tag_dirty_seen: Vec::with_capacity(16),
            attr_touched: Vec::with_capacity(64),
            attr_mark: vec![0; layout.entities * layout.attrs],
            attr_queue: VecDeque::with_capacity(64),
            attr_queued: vec![false; layout.entities * layout.attrs],
            agg: RefCell::new(AggScratch::default()),
            due: Vec::with_capacity(64),
            exec_outputs: Vec::with_capacity(8),
            exec_extra: Vec::with_capacity(4),
            exec_cues: Vec::with_capacity(4),
            queued: Vec::with_capacity(16),
            cursors: Cursors::default(),
            tasks: crate::ability::task::TaskIndex::new(layout.entities, layout.tasks),
            handles: Vec::with_capacity(layout.abilities),
            input_specs: Vec::with_capacity(layout.abilities),
            from_buffer: false,
            target_candidates: Vec::new(),
        }
    }

    /// Forgets everything in flight (after a snapshot load).
    pub fn reset(&mut self) {
        self.from_buffer = false;
        self.work.clear();
        self.work_specs.clear();
        self.busy = false;
        self.processed = 0;
        self.tag_touched.clear();
        self.tag_mark.iter_mut().for_each(|m| *m = 0);
        self.tag_dirty.clear();
        self.tag_dirty_mark.iter_mut().for_each(|m| *m = 0);
        self.tag_dirty_seen.clear();
        self.attr_touched.clear();
        self.attr_mark.iter_mut().for_each(|m| *m = 0);
        self.attr_queue.clear();
        self.attr_queued.iter_mut().for_each(|m| *m = false);
        self.due.clear();
        self.exec_outputs.clear();
        self.exec_extra.clear();
        self.queued.clear();
        self.cursors = Cursors::default();
        // The task pool was replaced: the per-owner lists are rebuilt on their next use.
        self.tasks.valid = false;
    }
}

impl<G: Game> World<G> {
    /// Queues an application behind the work already queued (without running it).
    pub(crate) fn queue_apply(&mut self, spec: EffectSpec, target: Entity) {
        self.scratch.work_specs.push_back(spec);
        self.scratch.work.push_back(Work::Apply { target });
    }

    /// Runs a change now (then settles and drains what it queued), or queues it when called
    /// from inside a running change.
    pub(crate) fn submit(&mut self, w: Work) {
        self.scratch.work.push_back(w);
        if !self.scratch.busy {
            self.scratch.processed = 0;
            self.drain();
        }
    }

    /// Processes queued work until the queue is empty or the cascade cap is reached.
    pub(crate) fn drain(&mut self) {
        if self.scratch.busy {
            return;
        }
        while let Some(w) = self.scratch.work.pop_front() {
            if self.scratch.processed >= self.scratch.cap {
                let dropped = 1 + self.scratch.work.len() as u32;
                self.scratch.work.clear();
                self.scratch.work_specs.clear();
                self.out.diagnostics.push(Diagnostic::CascadeCap { dropped });
                self.state.header.cascade_overflows =
                    self.state.header.cascade_overflows.saturating_add(1);
                break;
            }
            self.scratch.processed += 1;
            self.scratch.busy = true;
            self.run_work(w);
            self.settle();
            self.dispatch();
            self.scratch.busy = false;
        }
    }

    /// Runs a closure as one top-level change (a phase's unit of work or an API call from
    /// outside a change), then settles and drains the reactions it queued; at most
    /// `max_cascade_steps` reactions run. From inside a running change the closure just runs.
    pub(crate) fn run_item<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        if self.scratch.busy {
            return f(self);
        }
        self.scratch.processed = 0;
        self.scratch.busy = true;
        let r = f(self);
        self.settle();
        self.dispatch();
        self.scratch.busy = false;
        self.drain();
        r
    }

    fn run_work(&mut self, w: Work) {
        match w {
            Work::Apply { target } => {
                if let Some(spec) = self.scratch.work_specs.pop_front() {
                    let _ = self.apply_now(&spec, target);
                }
            }
            Work::Remove { handle, stacks, reason } => {
                if self.is_alive(handle.target) {
                    self.remove_now(handle.target.index, handle.seq, stacks, reason);
                }
            }
            Work::SetBase { entity, attr, value } => {
                if self.has_attr(entity, attr) {
                    let (old, new) = self.attr_table_mut().set_base(entity.index, attr, value);
                    if old != new {
                        self.mark_attr_dirty(entity.index, attr, AttrCause::SetBase);
                    }
                }
            }
            Work::LooseTag { entity, tag, delta, set } => {
                if self.has_ability_system(entity) && tag.index() < self.state.layout.tags {
                    let delta = if set {
                        delta - i32::from(self.tag_table().own(entity.index, tag))
                    } else {
                        delta
                    };
                    self.change_tag(entity.index, tag, delta);
                }
            }
            Work::SetAttrSet { entity, set, present } => {
                if self.has_ability_system(entity)
                    && set.index() < self.content.attr_set_defs().len()
                    && set.index() < attribute::MAX_ATTR_SETS
                {
                    let bit = 1u64 << set.index();
                    let rec = &mut self.state.entities[entity.index as usize];
                    let had = rec.sets & bit != 0;
                    if had != present {
                        if present {
                            rec.sets |= bit;
                        }
                        let attrs = self.content.attr_set_defs()[set.index()].attributes.clone();
                        for a in attrs {
                            self.mark_attr_dirty(entity.index, a, AttrCause::SetBase);
                            self.attr_table_mut().reset(entity.index, a, present);
                        }
                        if !present {
                            self.state.entities[entity.index as usize].sets &= !bit;
                        }
                    }
                }
            }
            Work::SetLevel { handle, level } => self.set_level_now(handle, level),
            Work::SetRemaining { handle, frames } => self.set_remaining_now(handle, frames),
            Work::Extend { handle, frames } => self.extend_now(handle, frames),
            Work::Despawn { entity } => self.despawn_now(entity),
            Work::Activate { handle, event, has_event } => {
                let _ = self.activate_now(handle, has_event.then_some(event));
            }
            Work::EndAbility { handle, cancelled } => self.end_now(handle, cancelled),
            Work::RemoveAbility { handle } => self.remove_ability_now(handle),
            Work::SendEvent { to, data } => self.send_event_now(to, data),
            Work::TaskResult { result, last } => self.deliver_task_result(result, last),
        }
    }

    fn despawn_now(&mut self, e: Entity) {
        if !self.is_alive(e) {
            return;
        }
        let i = e.index;
        // End and remove abilities (their tasks end with them).
        let handles: Vec<crate::id::AbilityHandle> = self.abilities(e).map(|(h, _)| h).collect();
        for h in handles {
            self.remove_ability_now(h);
        }
        for p in self.state.player_owner.iter_mut() {
            if *p == e {
                *p = Entity::NONE;
            }
        }
        self.remove_all_standalone_cues(e);
        // Remove effects (events), newest first so no shifting happens.
        while let Some(last) = self.effect_store().effects(i).last() {
            let seq = last.seq;
            self.remove_now(i, seq, 0, RemovalReason::TargetDespawned);
        }
        let l = self.state.layout;
        let iu = i as usize;
        self.state.tag_table_mut(self.content.tags()).clear(i);
        self.attr_table_mut().clear(i);
        self.state.components[iu] = G::Component::default();
        if let Some(a) = self.state.anchors.get_mut(iu * l.anchors..(iu + 1) * l.anchors) {
            a.iter_mut().for_each(|a| *a = Default::default());
        }
        self.effect_store_mut().clear(i);
        let h = &mut self.state.header;
        let rec = &mut self.state.entities[iu];
        rec.flags = 0;
        rec.sets = 0;
        rec.avatar = Entity::NONE;
        rec.n_tasks = 0;
        rec.next_free = h.free_head;
        h.free_head = i;
        h.alive = h.alive.saturating_sub(1);
    }

    // ----------------------------------------------------------------------------------------
    // Settling
    // ----------------------------------------------------------------------------------------

    /// Records an attribute's old value (first touch in this settle) and queues it.
    pub(crate) fn mark_attr_dirty(&mut self, index: u32, a: AttrId, cause: AttrCause) {
        let slot = self.attr_table().slot(index, a);
        if self.scratch.attr_mark[slot] == 0 {
            let old = self.attr_table().value(index, a).current;
            self.scratch.attr_touched.push((index, a, old, cause, 0));
            self.scratch.attr_mark[slot] = self.scratch.attr_touched.len() as u32;
        }
        if !self.scratch.attr_queued[slot] {
            self.scratch.attr_queued[slot] = true;
            self.scratch.attr_queue.push_back((index, a));
        }
    }

    /// Settles without emitting events (spawn-time initialisation).
    pub(crate) fn settle_quiet(&mut self) {
        let before_attr = self.out.attr_events.len();
        let before_tag = self.out.tag_events.len();
        self.settle();
        self.out.attr_events.truncate(before_attr);
        self.out.tag_events.truncate(before_tag);
    }

    /// Settles inhibition and attributes, then emits this item's tag and attribute events.
    pub(crate) fn settle(&mut self) {
        let sc = &self.scratch;
        if sc.tag_dirty.is_empty()
            && sc.attr_queue.is_empty()
            && sc.tag_touched.is_empty()
            && sc.attr_touched.is_empty()
            && sc.tag_dirty_seen.is_empty()
        {
            // Most work items (a task tick that fires nothing) change neither.
            return;
        }
        loop {
            let mut progressed = false;
            while let Some(ei) = self.scratch.tag_dirty.pop() {
                progressed = true;
                let passes = &mut self.scratch.tag_dirty_mark[ei as usize];
                if *passes == 0 {
                    self.scratch.tag_dirty_seen.push(ei);
                }
                *passes = passes.saturating_add(1);
                if *passes > MAX_INHIBITION_PASSES {
                    let e = self.entity_of(ei);
                    self.out.diagnostics.push(Diagnostic::InhibitionCycleCut { entity: e });
                    continue;
                }
                self.update_inhibition(ei);
            }
            while let Some((ei, a)) = self.scratch.attr_queue.pop_front() {
                progressed = true;
                let slot = self.attr_table().slot(ei, a);
                self.scratch.attr_queued[slot] = false;
                self.recompute_attr(ei, a);
            }
            if !progressed
                || (self.scratch.tag_dirty.is_empty() && self.scratch.attr_queue.is_empty())
            {
                break;
            }
        }
        self.flush_tag_events();
        self.flush_attr_events();
        // Only the entities passed in this settle have a mark (clearing every entity's mark
        // here made each work item cost O(entities)).
        for ei in self.scratch.tag_dirty_seen.drain(..) {
            if let Some(m) = self.scratch.tag_dirty_mark.get_mut(ei as usize) {
                *m = 0;
            }
        }
    }

    fn flush_tag_events(&mut self) {
        if self.scratch.tag_touched.is_empty() {
            return;
        }
        let mut touched = core::mem::take(&mut self.scratch.tag_touched);
        touched.sort_unstable_by_key(|(i, t, _)| (*i, *t));
        let frame = self.frame();
        let n = self.state.layout.tags;
        for &(i, t, old) in &touched {
            self.scratch.tag_mark[i as usize * n + t.index()] = 0;
            let rec = &self.state.entities[i as usize];
            if rec.flags & entity_flags::ALIVE == 0 {
                continue;
            }
            let new = self.tag_table().count(i, t);
            if new != old {
                let entity = self.entity_of(i);
                self.out.tag_events.push(TagEvent { frame, entity, tag: t, old, new });
            }
        }
        touched.clear();
        self.scratch.tag_touched = touched;
    }

    fn flush_attr_events(&mut self) {
        if self.scratch.attr_touched.is_empty() {
            return;
        }
        let mut touched = core::mem::take(&mut self.scratch.attr_touched);
        touched.sort_unstable_by_key(|(i, a, ..)| (*i, *a));
        let frame = self.frame();
        for &(i, a, old, cause, _) in &touched {
            let slot = self.attr_table().slot(i, a);
            self.scratch.attr_mark[slot] = 0;
            if self.state.entities[i as usize].flags & entity_flags::ALIVE == 0 {
                continue;
            }
            let new = self.attr_table().value(i, a).current;
            if new != old {
                let entity = self.entity_of(i);
                self.out.attr_events.push(AttrEvent { frame, entity, attr: a, old, new, cause });
            }
        }
        touched.clear();
        self.scratch.attr_touched = touched;
    }

    fn recompute_attr(&mut self, ei: u32, a: AttrId) {
        if self.state.entities[ei as usize].flags & entity_flags::ALIVE == 0
            || !self.entity_has_set_attr(ei, a)
        {
            return;
        }
        let slot = self.attr_table().slot(ei, a);
        // Cut dynamic cycles deterministically.
        let mark = self.scratch.attr_mark[slot] as usize;
        if mark > 0 {
            let entry = &mut self.scratch.attr_touched[mark - 1];
            entry.4 = entry.4.saturating_add(1);
            if entry.4 > MAX_ATTR_RECOMPUTES {
                if entry.4 == MAX_ATTR_RECOMPUTES + 1 {
                    let entity = self.entity_of(ei);
                    self.out.diagnostics.push(Diagnostic::AttributeCycleCut { entity, attr: a });
                }
                return;
            }
        }
        let (raw, notes) = self.evaluate_raw_notes(ei, a);
        if notes.lint_mul || notes.lint_div {
            let entity = self.entity_of(ei);
            self.out.diagnostics.push(Diagnostic::GasCompatLint {
                entity,
                attr: a,
                divide: notes.lint_div && !notes.lint_mul,
            });
        }
        if notes.div_by_zero {
            let entity = self.entity_of(ei);
            self.out.diagnostics.push(Diagnostic::DivideByZero { entity, attr: a });
        }
        let mut v = self.attr_table().clamp(ei, a, raw);
        if let Some(pre) = self
            .content
            .attr_set_defs()
            .get(self.content.attr_def(a).set.index())
            .and_then(|s| s.pre_change)
            && let Some(BoundFn::Pre(f)) = self.bound.get(pre)
        {
            let entity = self.entity_of(ei);
            f(entity, a, &mut v);
        }
        if self.attr_table_mut().set_current(ei, a, v) {
            self.propagate_attr_change(ei, a);
        }
    }

    /// Queues everything that depends on attribute `a` of entity `ei`.
    fn propagate_attr_change(&mut self, ei: u32, a: AttrId) {
        // Indexed (not a held borrow of the content) so no `Arc` clone per change.
        for k in 0..self.content.attr_def(a).clamp_dependents.len() {
            let d = self.content.attr_def(a).clamp_dependents[k];
            if self.entity_has_set_attr(ei, d) {
                self.mark_attr_dirty(ei, d, AttrCause::Modifiers);
            }
        }
        // Live target captures on the same entity.
        if self.effect_store().has_live(ei) {
            self.refresh_live_mags(ei, |_, side, attr| {
                side == crate::effect::CaptureSide::Target && attr == a
            });
        }
        // Live source captures on other entities.
        if self.live_source_defs {
            let src = self.entity_of(ei);
            for other in 0..self.state.header.high_water {
                if !self.effect_store().has_live(other) {
                    continue;
                }
                self.refresh_live_mags(other, |origin, side, attr| {
                    side == crate::effect::CaptureSide::Source
                        && attr == a
                        && origin.instigator == src
                });
            }
        }
    }

    /// Re-reads live captured magnitudes of entity `ei`'s effects selected by `select`, and
    /// queues the attributes whose magnitudes changed.
    fn refresh_live_mags(
        &mut self,
        ei: u32,
        select: impl Fn(&crate::effect::EffectOrigin, crate::effect::CaptureSide, AttrId) -> bool,
    ) {
        use crate::effect::MagnitudeDef;
        let content = self.content.clone();
        let range = self.effect_store().range(ei);
        let target = self.entity_of(ei);
        for slot in range {
            let ef = *self.effect_store().effect(slot);
            let Some(d) = content.effect_defs().get(ef.def.index()) else { continue };
            if !d.has_live_captures {
                continue;
            }
            let origin = self.origin_of(target, &ef);
            for (mi, m) in d.modifiers.iter().enumerate() {
                let mag = match m.magnitude {
                    MagnitudeDef::Attribute {
                        attr,
                        side,
                        which,
                        coef,
                        pre,
                        post,
                        snapshot: false,
                        filter,
                    } => {
                        if !select(&origin, side, attr) {
                            continue;
                        }
                        let who = if side == crate::effect::CaptureSide::Source {
                            origin.instigator
                        } else {
                            target
                        };
                        if !self.is_alive(who) {
                            // A despawned source freezes its last value.
                            continue;
                        }
                        let v = self.read_capture_filtered(who, attr, which, d.tag_filter(filter));
                        num::add(num::mul(coef, num::add(v, pre)), post)
                    }
                    MagnitudeDef::Custom { calc, .. } => {
                        // A calculation is re-run when an attribute it captures live changes.
                        let reads = match self.bound.get(calc) {
                            Some(BoundFn::Calc { captures, .. }) => captures
                                .iter()
                                .any(|c| !c.snapshot && select(&origin, c.side, c.attr)),
                            _ => false,
                        };
                        if !reads {
                            continue;
                        }
                        let spec = self.spec_of_active(slot);
                        self.modifier_magnitude(d, mi, &spec, target, ef.stacks)
                    }
                    _ => continue,
                };
                if self.effect_store_mut().set_mag(slot, mi, mag)
                    && !ef.is_inhibited()
                    && self.entity_has_set_attr(ei, m.attr)
                {
                    self.mark_attr_dirty(ei, m.attr, AttrCause::Modifiers);
                }
            }
        }
    }

    /// Re-evaluates ongoing requirements of an entity's effects and switches them off or on.
    fn update_inhibition(&mut self, ei: u32) {
        let content = self.content.clone();
        let mut k = 0;
        while let Some(&ef) = self.effect_store().effects(ei).get(k) {
            let slot = self.effect_store().range(ei).start + k;
            k += 1;
            let Some(d) = content.effect_defs().get(ef.def.index()) else { continue };
            if d.ongoing_requirements.is_empty() {
                continue;
            }
            let pass = d.ongoing_requirements.passes_words(self.tag_view_index(ei));
            if pass != ef.is_inhibited() {
                continue;
            }
            self.set_inhibited(ei, slot, !pass);
        }
    }

    /// Called by tag changes: remembers that an entity's inhibition must be re-evaluated.
    pub(crate) fn mark_tags_dirty(&mut self, ei: u32) {
        if !self.scratch.tag_dirty.contains(&ei) {
            self.scratch.tag_dirty.push(ei);
        }
    }
}
