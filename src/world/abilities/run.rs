//! The task pool at run time (spawn, tick in P5, end) and the listeners that turn a work
//! item's records (tag, effect, attribute, execution and gameplay events) into ability
//! triggers, cancel rules and task results.

use super::activate::{END_AFTER_TASK, TIMELINE_TASK};
use super::ctx::AbilityCtx;
use crate::ability::Instancing;
use crate::ability::TriggerDef;
use crate::ability::task::{AttrCmp, TaskIndex, TaskRec, confirm, event_matches, kind, tflags};
use crate::ability::{
    AbilityEvent, ActivationFailure, EventData, TargetData, TaskEvent, TaskResult, TaskSpec,
};
use crate::id::{AbilityHandle, Entity, TagId, TaskHandle};
use crate::num::{self, Frame, Fx};
use crate::world::cascade::Work;
use crate::world::hooks::BoundFn;
use crate::world::{Game, World};

/// A task flag: a final result is queued; the task produces nothing more.
const DONE: u16 = 0x100;

impl<G: Game> World<G> {
    /// Spawns a task for an active ability's activation.
    pub(crate) fn spawn_task(
        &mut self,
        h: AbilityHandle,
        serial: u32,
        user_id: u16,
        spec: TaskSpec,
    ) -> Result<TaskHandle, ActivationFailure> {
        let Some(i) = self.spec_slot(h) else { return Err(ActivationFailure::InvalidHandle) };
        let s = self.state.specs[i];
        if !s.is_active() || s.activation_serial != serial {
            return Err(ActivationFailure::InvalidHandle);
        }
        let internal = user_id >= END_AFTER_TASK;
        if !internal && self.content.ability_def(s.def).instancing == Instancing::NonInstanced {
            // Non-instanced abilities have no tasks (F-GA-19).
            return Err(ActivationFailure::TaskCapacity);
        }
        let hdr = &mut self.state.header;
        let slot = if hdr.task_free_head != u32::MAX {
            let f = hdr.task_free_head;
            hdr.task_free_head = self.state.tasks[f as usize].next_free;
            f
        } else if (hdr.task_high_water as usize) < self.state.tasks.len() {
            hdr.task_high_water += 1;
            hdr.task_high_water - 1
        } else {
            return Err(ActivationFailure::TaskCapacity);
        };
        hdr.tasks_live += 1;
        let generation = self.state.tasks[slot as usize].generation.wrapping_add(1).max(1);
        let mut rec = TaskRec::encode(&spec);
        rec.owner = h.owner;
        rec.generation = generation;
        rec.activation_serial = serial;
        rec.started = self.frame();
        rec.ability_slot = h.slot;
        rec.ability_generation = h.generation;
        rec.user_id = user_id;
        rec.flags |= tflags::LIVE;
        rec.next_free = u32::MAX;
        self.ensure_task_index();
        self.state.tasks[slot as usize] = rec;
        self.scratch.tasks.insert(slot as usize, &rec);
        self.state.entities[h.owner.index as usize].n_tasks += 1;
        let task = TaskHandle { slot, generation };
        self.task_started(slot as usize);
        Ok(task)
    }

    /// Conditions a task may meet as soon as it exists, and timeline frame 0.
    fn task_started(&mut self, slot: usize) {
        let t = self.state.tasks[slot];
        let owner = t.owner;
        match t.kind {
            kind::WAIT_TAG_ADDED if self.has_tag(owner, TagId(t.tag)) => {
                self.task_emit(slot, TaskEvent::Tag(true), true)
            }
            kind::WAIT_TAG_REMOVED if !self.has_tag(owner, TagId(t.tag)) => {
                self.task_emit(slot, TaskEvent::Tag(false), true)
            }
            kind::WAIT_TAG_QUERY => {
                let c = self.tag_query_condition(&t);
                if c == (t.flags & tflags::WHEN != 0) {
                    self.task_emit(slot, TaskEvent::Query(c), true);
                }
            }
            kind::WAIT_ATTRIBUTE => {
                if let Some(v) = self.attr(owner, crate::id::AttrId(t.attr))
                    && AttrCmp::from_code(t.a).test(v, t.value)
                {
                    self.task_emit(slot, TaskEvent::Attribute(v), true);
                }
            }
            kind::WAIT_TARGET_DATA if t.a == confirm::INSTANT => {
                let player =
                    self.state.player_owner.iter().position(|p| *p == owner).unwrap_or(usize::MAX);
                let data = self.run_target_query(slot, player);
                self.task_emit(slot, TaskEvent::TargetData(data), true);
            }
            kind::PLAY_TIMELINE => self.timeline_frames(slot, 0, 0),
            _ => {}
        }
    }

    fn tag_query_condition(&self, t: &TaskRec) -> bool {
        (t.tag == u16::MAX || self.has_tag(t.owner, TagId(t.tag)))
            && (t.tag2 == u16::MAX || !self.has_tag(t.owner, TagId(t.tag2)))
    }

    /// Queues a result; a final result marks the task done (it is freed on delivery).
    pub(crate) fn task_emit(&mut self, slot: usize, event: TaskEvent, last: bool) {
        let t = &mut self.state.tasks[slot];
        if t.flags & DONE != 0 || !t.is_live() {
            return;
        }
        if last {
            t.flags |= DONE;
        }
        let result = TaskResult {
            task: TaskHandle { slot: slot as u32, generation: t.generation },
            user_id: t.user_id,
            event,
        };
        self.scratch.work.push_back(Work::TaskResult { result, last });
    }

    /// Ends a task now (a timeline's window tags go with it).
    pub fn end_task(&mut self, task: TaskHandle) {
        let slot = task.slot as usize;
        if self
            .state
            .tasks
            .get(slot)
            .is_some_and(|t| t.is_live() && t.generation == task.generation)
        {
            self.free_task(slot);
        }
    }

    /// Whether a task is live.
    pub fn is_task_live(&self, task: TaskHandle) -> bool {
        self.state
            .tasks
            .get(task.slot as usize)
            .is_some_and(|t| t.is_live() && t.generation == task.generation)
    }

    /// A live task's record.
    pub fn task(&self, task: TaskHandle) -> Option<&TaskRec> {
        self.state
            .tasks
            .get(task.slot as usize)
            .filter(|t| t.is_live() && t.generation == task.generation)
    }

    /// The live tasks of an ability, in pool order.
    pub fn tasks_of(&self, h: AbilityHandle) -> impl Iterator<Item = (TaskHandle, &TaskRec)> + '_ {
        self.state.tasks[..self.state.header.task_high_water as usize]
            .iter()
            .enumerate()
            .filter(move |(_, t)| t.is_live() && t.ability() == h)
            .map(|(i, t)| (TaskHandle { slot: i as u32, generation: t.generation }, t))
    }

    pub(crate) fn end_tasks_of(&mut self, h: AbilityHandle, serial: u32) {
        // The owner's list, ascending (the order of a pool scan); the next link is read before
        // the free unlinks the slot.
        self.ensure_task_index();
        let mut at = self.scratch.tasks.first(h.owner.index);
        while at != u32::MAX {
            let slot = at as usize;
            at = self.scratch.tasks.after(at);
            let t = self.state.tasks[slot];
            if t.is_live() && t.ability() == h && t.activation_serial == serial {
                self.free_task(slot);
            }
        }
    }

    /// Rebuilds the per-owner task lists if a load invalidated them.
    #[inline]
    pub(crate) fn ensure_task_index(&mut self) {
        if !self.scratch.tasks.valid {
            let hw = self.state.header.task_high_water as usize;
            self.scratch.tasks.rebuild(&self.state.tasks, hw);
        }
    }

    fn free_task(&mut self, slot: usize) {
        let t = self.state.tasks[slot];
        if !t.is_live() {
            return;
        }
        if t.kind == kind::PLAY_TIMELINE {
            self.timeline_interrupt(slot);
        }
        let generation = t.generation;
        self.ensure_task_index();
        self.scratch.tasks.remove(slot, &t);
        let hdr = &mut self.state.header;
        self.state.tasks[slot] =
            TaskRec { generation, next_free: hdr.task_free_head, ..TaskRec::default() };
        hdr.task_free_head = slot as u32;
        hdr.tasks_live = hdr.tasks_live.saturating_sub(1);
        if self.is_alive(t.owner) {
            let n = &mut self.state.entities[t.owner.index as usize].n_tasks;
            *n = n.saturating_sub(1);
        }
        self.out.ability_events.push(AbilityEvent::TaskEnded {
            task: TaskHandle { slot: slot as u32, generation },
            ability: t.ability(),
        });
    }

    /// Delivers a task result to its ability (the `TaskResult` work item).
    pub(crate) fn deliver_task_result(&mut self, r: TaskResult, last: bool) {
        let slot = r.task.slot as usize;
        let Some(t) = self.state.tasks.get(slot).copied() else { return };
        if !t.is_live() || t.generation != r.task.generation {
            return;
        }
        // The task's final report frees it; earlier reports queued before it do not.
        if last {
            self.free_task(slot);
        }
        let h = t.ability();
        let Some(spec) = self.ability(h).copied() else { return };
        if !spec.is_active() || spec.activation_serial != t.activation_serial {
            return;
        }
        match t.user_id {
            TIMELINE_TASK | END_AFTER_TASK => {
                if matches!(r.event, TaskEvent::TimelineEnded | TaskEvent::Finished) {
                    self.end_now(h, false);
                }
            }
            _ => {
                let def = self.content.ability_def(spec.def);
                if let Some(b) = def.behaviour.and_then(|f| match self.bound.get(f) {
                    Some(BoundFn::Behaviour(b)) => Some(*b),
                    _ => None,
                }) && let Some(on_task) = b.on_task
                {
                    let mut ctx = AbilityCtx {
                        world: self,
                        handle: h,
                        serial: spec.activation_serial,
                        event: None,
                    };
                    on_task(&mut ctx, &r);
                }
            }
        }
    }

    /// Phase P5: ticks every live task in pool order.
    pub(crate) fn run_tasks(&mut self, frame: Frame) {
        let hw = (self.state.header.task_high_water as usize).min(self.state.tasks.len());
        // Slot order, as a scan of the pool up to the high-water mark at the phase's start; the
        // index's bits skip the records of tasks that are free or not ticked (most of the
        // pool's 120-byte records).
        self.ensure_task_index();
        let mut from = 0;
        while let Some(slot) = self.scratch.tasks.next_ticked(from, hw) {
            from = slot + 1;
            // The dense due column first: a repeat between its beats or a wait short of its
            // end does nothing this frame, and its record is not read.
            if self.scratch.tasks.due.get(slot).is_some_and(|d| *d > frame) {
                continue;
            }
            let t = &self.state.tasks[slot];
            if !t.is_live() || t.flags & DONE != 0 {
                continue;
            }
            // A held clock (hitstop, time scale) stops its owner's tasks (F-GA-23); one
            // comparison when no entity ever had either.
            if self.state.ext.timed != 0 && self.is_time_held(t.owner) {
                continue;
            }
            let t = &self.state.tasks[slot];
            if TaskIndex::tick_does_something(t, frame) {
                self.run_item(|w| w.tick_task(slot, frame));
                // The tick may have advanced the counter, or freed the slot and let a spawn
                // reuse it: refresh from whatever record the slot holds now.
                self.scratch.tasks.refresh_due(slot, &self.state.tasks[slot]);
            }
        }
    }

    fn tick_task(&mut self, slot: usize, frame: Frame) {
        let t = self.state.tasks[slot];
        if !t.is_live() || t.flags & DONE != 0 {
            return;
        }
        let elapsed = frame.saturating_sub(t.started);
        match t.kind {
            kind::WAIT_FRAMES if elapsed >= t.a => {
                self.task_emit(slot, TaskEvent::Finished, true);
            }
            kind::REPEAT => {
                let next = t.b.saturating_mul(t.counter.saturating_add(1));
                if elapsed >= next {
                    let n = t.counter.saturating_add(1);
                    self.state.tasks[slot].counter = n;
                    self.task_emit(slot, TaskEvent::Tick(n), false);
                    if t.a > 0 && n >= t.a {
                        self.task_emit(slot, TaskEvent::Finished, true);
                    }
                }
            }
            kind::PLAY_TIMELINE => {
                if elapsed == 0 {
                    return;
                }
                let pos = num::add(t.value, t.dir[0]);
                self.state.tasks[slot].value = pos;
                let idx = pos.to_num::<i64>().clamp(0, i64::from(u32::MAX)) as u32;
                if idx > t.counter {
                    self.timeline_frames(slot, t.counter.saturating_add(1), idx);
                }
            }
            kind::ROOT_MOTION => {
                if elapsed == 0 {
                    return;
                }
                let k = t.counter.saturating_add(1);
                if k > t.b {
                    return;
                }
                self.state.tasks[slot].counter = k;
                if let Some(curve) = self.content.curve_defs().get(t.a as usize) {
                    let lk = u16::try_from(k).unwrap_or(u16::MAX);
                    let d = num::sub(curve.eval(lk), curve.eval(lk.saturating_sub(1)));
                    let delta = [num::mul(d, t.dir[0]), num::mul(d, t.dir[1])];
                    let avatar = self.avatar(t.owner);
                    G::root_motion(self, avatar, delta);
                }
                if k >= t.b {
                    self.task_emit(slot, TaskEvent::Finished, true);
                }
            }
            kind::CUSTOM if elapsed != 0 => self.tick_custom(slot),
            _ => {}
        }
    }

    /// Enters timeline frames `from..=to`: windows open and close, notifies fire; past the
    /// last frame the timeline ends.
    fn timeline_frames(&mut self, slot: usize, from: u32, to: u32) {
        // Most frames of a timeline open no window, fire no notify and do not end it: those
        // only advance the counter (without taking a reference on the content).
        let (a, owner) = (self.state.tasks[slot].a, self.state.tasks[slot].owner);
        let Some(tl) = self.content.timeline_defs().get(a as usize) else { return };
        let last = to.min(tl.frames);
        let within = |f: u32| from <= f && f <= last;
        let quiet = to < tl.frames
            && !tl.windows.iter().any(|&(wf, wt, _)| within(wf) || within(wt))
            && !tl.notifies.iter().any(|&(nf, _)| within(nf));
        if quiet {
            self.state.tasks[slot].counter = last;
            return;
        }
        let content = self.content.clone();
        let Some(tl) = content.timeline_defs().get(a as usize) else { return };
        for f in from..=last {
            for &(wf, wt, tag) in &tl.windows {
                if wf == f {
                    self.change_tag(owner.index, tag, 1);
                }
                if wt == f {
                    self.change_tag(owner.index, tag, -1);
                }
            }
            for &(nf, tag) in &tl.notifies {
                if nf == f {
                    self.send_event_now(owner, EventData::new(tag, owner, owner));
                    self.task_emit(slot, TaskEvent::Notify(tag), false);
                }
            }
        }
        self.state.tasks[slot].counter = last;
        if to >= tl.frames {
            self.task_emit(slot, TaskEvent::TimelineEnded, true);
        }
    }

    /// Closes the windows open at the timeline's current frame (the task ended early).
    fn timeline_interrupt(&mut self, slot: usize) {
        let content = self.content.clone();
        let t = self.state.tasks[slot];
        let Some(tl) = content.timeline_defs().get(t.a as usize) else { return };
        if t.counter >= tl.frames || !self.is_alive(t.owner) {
            return;
        }
        for &(wf, wt, tag) in &tl.windows {
            if wf <= t.counter && t.counter < wt {
                self.change_tag(t.owner.index, tag, -1);
            }
        }
    }

    /// Runs a targeting task's query through the game's spatial query and the crate's
    /// filters.
    pub(crate) fn run_target_query(&mut self, slot: usize, player: usize) -> TargetData {
        let t = self.state.tasks[slot];
        let owner = t.owner;
        let avatar = self.avatar(owner);
        let aim = match self.state.inputs.get(player) {
            Some(i) => {
                let a = G::aim(i);
                let q = |v: i16| {
                    num::div(num::int(i64::from(v.max(-32767))), num::int(32767), Fx::ZERO)
                };
                [q(a[0]), q(a[1])]
            }
            None => [Fx::ZERO, Fx::ZERO],
        };
        let q = t.query;
        // Area queries push their candidates (any number); others answer with target data.
        let mut cands = core::mem::take(&mut self.scratch.target_candidates);
        cands.clear();
        let raw = if G::target_candidates(self, owner, avatar, aim, &q, &mut cands) {
            TargetData::entities(&[])
        } else {
            let raw = G::target_query(self, owner, avatar, aim, &q);
            if raw.kind == 2 {
                if raw.list() != 0 {
                    // A list the crate made (the game passed on reported data).
                    cands.extend_from_slice(self.target_entities(&raw).unwrap_or(&[]));
                } else {
                    cands.extend_from_slice(&raw.entities[..(raw.count as usize).min(4)]);
                    if raw.total() > raw.count {
                        self.out.diagnostics.push(crate::world::Diagnostic::TargetsDropped {
                            owner,
                            total: raw.total(),
                        });
                    }
                }
            }
            raw
        };
        let keep = |w: &World<G>, e: Entity| {
            !(q.exclude_self != 0 && (e == owner || e == avatar))
                && (q.require_tag == u16::MAX || w.has_tag(e, TagId(q.require_tag)))
                && (q.filter == 0 || G::target_filter(w, owner, e, q.filter))
        };
        let mut out = raw;
        match raw.kind {
            1 | 3 if !keep(self, raw.entities[0]) => out = TargetData::NONE,
            2 => {
                // At most the query's `max_targets` and the world's `max_target_entities`; the
                // world's capacity cutting a list is reported (the query's own limit is not).
                let cap = usize::from(self.config.max_target_entities);
                let wanted =
                    if q.max_targets == 0 { usize::MAX } else { usize::from(q.max_targets) };
                cands.retain(|e| keep(self, *e));
                let wanted = wanted.min(cands.len());
                if wanted > cap {
                    let exceeded = crate::world::CapacityExceeded {
                        capacity: crate::world::Capacity::TargetEntities,
                        needed: wanted as u32,
                        limit: cap as u32,
                    };
                    self.out.diagnostics.push(crate::world::Diagnostic::CapacityExceeded {
                        entity: owner,
                        exceeded,
                    });
                }
                cands.truncate(wanted.min(cap));
                out = self.target_list(&cands, owner);
            }
            _ => {}
        }
        cands.clear();
        self.scratch.target_candidates = cands;
        if q.persistent != 0 {
            // Remember the last valid target in the task; reuse it when nothing qualifies.
            if out.kind == 0 || (out.kind == 2 && out.count == 0) {
                if t.other.some().is_some_and(|e| self.is_alive(e)) {
                    out = TargetData::entity(t.other);
                }
            } else if let Some(e) = out.first_entity() {
                self.state.tasks[slot].other = e;
            }
        }
        out
    }

    // ----------------------------------------------------------------------------------------
    // Listeners
    // ----------------------------------------------------------------------------------------

    /// Turns the records a work item produced into triggers, cancel rules and task results
    /// (queued as work, so they run in order after the item).
    pub(crate) fn dispatch(&mut self) {
        let (c, o) = (&self.scratch.cursors, &self.out);
        if c.events == o.gameplay_events.len()
            && c.tags == o.tag_events.len()
            && c.effects == o.effect_events.len()
            && c.executions == o.executions.len()
            && c.attrs == o.attr_events.len()
        {
            // Nothing new since the last item (the common case).
            return;
        }
        let content = self.content.clone();
        let reg = content.tags();
        // Which task kinds are live decides which walks can find a listener.
        self.ensure_task_index();
        let live = self.scratch.tasks.by_kind;
        let any = |ks: &[u16]| ks.iter().any(|k| live[kind::slot(*k)] > 0);
        let event_waits = any(&[kind::WAIT_EVENT]);
        let tag_waits = any(&[kind::WAIT_TAG_ADDED, kind::WAIT_TAG_REMOVED, kind::WAIT_TAG_QUERY]);
        let effect_added_waits = any(&[kind::WAIT_EFFECT_ADDED]);
        let damage_waits = any(&[kind::WAIT_DAMAGE]);
        let attr_waits = any(&[kind::WAIT_ATTRIBUTE]);
        // Gameplay events.
        while self.scratch.cursors.events < self.out.gameplay_events.len() {
            let ge = self.out.gameplay_events[self.scratch.cursors.events];
            self.scratch.cursors.events += 1;
            for h in self.triggered_by(ge.to, |t| matches!(t, TriggerDef::Event(tag) if reg.is_descendant_or_self(ge.data.tag, tag))) {
                self.scratch.work.push_back(Work::Activate { handle: h, event: ge.data, has_event: true });
            }
            if !event_waits {
                continue;
            }
            self.for_tasks_of(ge.to, |w, slot, t| {
                if t.kind == kind::WAIT_EVENT && event_matches(reg, &ge.data, t.tag) {
                    w.task_emit(slot, TaskEvent::Event(ge.data), t.flags & tflags::ONCE != 0);
                }
            });
        }
        self.dispatch_tag_events(&content, tag_waits);
        self.dispatch_effect_events(effect_added_waits);
        // Executions lowering a base value (damage).
        while self.scratch.cursors.executions < self.out.executions.len() {
            let em = self.out.executions[self.scratch.cursors.executions];
            self.scratch.cursors.executions += 1;
            if em.new_base >= em.old_base {
                continue;
            }
            if !damage_waits {
                continue;
            }
            let amount = num::sub(em.old_base, em.new_base);
            self.for_tasks_of(em.target, |w, slot, t| {
                if t.kind == kind::WAIT_DAMAGE && t.attr == em.attr.0 {
                    w.task_emit(
                        slot,
                        TaskEvent::Damaged { amount, instigator: em.instigator },
                        t.flags & tflags::ONCE != 0,
                    );
                }
            });
        }
        // Attribute changes.
        while self.scratch.cursors.attrs < self.out.attr_events.len() {
            let ae = self.out.attr_events[self.scratch.cursors.attrs];
            self.scratch.cursors.attrs += 1;
            if !attr_waits {
                continue;
            }
            self.for_tasks_of(ae.entity, |w, slot, t| {
                if t.kind == kind::WAIT_ATTRIBUTE
                    && t.attr == ae.attr.0
                    && AttrCmp::from_code(t.a).test(ae.new, t.value)
                {
                    w.task_emit(slot, TaskEvent::Attribute(ae.new), true);
                }
            });
        }
    }

    /// Tag events: cancel rules, tag triggers and the tasks waiting on tags.
    fn dispatch_tag_events(&mut self, content: &crate::content::Content, tag_waits: bool) {
        let accel = &content.accel;
        while self.scratch.cursors.tags < self.out.tag_events.len() {
            let te = self.out.tag_events[self.scratch.cursors.tags];
            self.scratch.cursors.tags += 1;
            let added = te.old == 0 && te.new > 0;
            let removed = te.old > 0 && te.new == 0;
            if added && accel.cancel_rule_tags.contains(te.tag) {
                for rule in content.cancel_rules().iter().filter(|r| r.tag == te.tag) {
                    for h in self.matching_active(te.entity, &rule.with, &rule.without, None) {
                        self.scratch
                            .work
                            .push_back(Work::EndAbility { handle: h, cancelled: true });
                    }
                }
            }
            if added && accel.trigger_tags.contains(te.tag) {
                for h in self.triggered_by(te.entity, |t| matches!(t, TriggerDef::TagAdded(x) | TriggerDef::TagPresent(x) if x == te.tag)) {
                    let ev = EventData::new(te.tag, te.entity, te.entity);
                    self.scratch.work.push_back(Work::Activate { handle: h, event: ev, has_event: false });
                }
            }
            if removed && accel.trigger_tags.contains(te.tag) {
                for h in self.triggered_by(
                    te.entity,
                    |t| matches!(t, TriggerDef::TagPresent(x) if x == te.tag),
                ) {
                    if self.is_ability_active(h) {
                        self.scratch
                            .work
                            .push_back(Work::EndAbility { handle: h, cancelled: true });
                    }
                }
            }
            if (added || removed) && tag_waits {
                self.for_tasks_of(te.entity, |w, slot, t| match t.kind {
                    kind::WAIT_TAG_ADDED if added && t.tag == te.tag.0 => {
                        w.task_emit(slot, TaskEvent::Tag(true), true)
                    }
                    kind::WAIT_TAG_REMOVED if removed && t.tag == te.tag.0 => {
                        w.task_emit(slot, TaskEvent::Tag(false), true)
                    }
                    kind::WAIT_TAG_QUERY if t.tag == te.tag.0 || t.tag2 == te.tag.0 => {
                        let c = w.tag_query_condition(&t);
                        if c == (t.flags & tflags::WHEN != 0) {
                            w.task_emit(slot, TaskEvent::Query(c), true);
                        }
                    }
                    _ => {}
                });
            }
        }
    }

    /// Effect events: the tasks waiting on an effect being added, removed or restacked.
    fn dispatch_effect_events(&mut self, effect_added_waits: bool) {
        while self.scratch.cursors.effects < self.out.effect_events.len() {
            let ev = self.out.effect_events[self.scratch.cursors.effects];
            self.scratch.cursors.effects += 1;
            use crate::world::output::EffectEvent as E;
            match ev {
                E::Added { handle, .. } if effect_added_waits => {
                    let ef = self.effect(handle).copied();
                    self.for_tasks_of(handle.target, |w, slot, t| {
                        if t.kind != kind::WAIT_EFFECT_ADDED {
                            return;
                        }
                        let owned = t.tag == u16::MAX
                            || ef.is_some_and(|ef| {
                                w.effect_owns_any(
                                    handle.target,
                                    &ef,
                                    &crate::tag::TagSet::of(&[TagId(t.tag)]),
                                )
                            });
                        if owned {
                            w.task_emit(slot, TaskEvent::EffectAdded(handle), true);
                        }
                    });
                }
                E::Removed { handle, .. } | E::StackChanged { handle, .. } => {
                    // Only tasks watching an effect react; most frames have none.
                    self.ensure_task_index();
                    let watchers = self.scratch.tasks.effect_watchers;
                    let hw = if watchers == 0 { 0 } else { self.state.header.task_high_water };
                    for slot in 0..hw as usize {
                        let t = self.state.tasks[slot];
                        if !t.is_live() || t.other != handle.target || t.a != handle.seq {
                            continue;
                        }
                        match (t.kind, ev) {
                            (
                                kind::WAIT_EFFECT_REMOVED | kind::WAIT_STACK_CHANGE,
                                E::Removed { .. },
                            ) => self.task_emit(slot, TaskEvent::EffectRemoved(handle), true),
                            (kind::WAIT_STACK_CHANGE, E::StackChanged { old, new, .. }) => {
                                self.task_emit(slot, TaskEvent::StackChanged { old, new }, false)
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Calls `f` for every live, not-done task owned by `owner`'s abilities.
    fn for_tasks_of(&mut self, owner: Entity, mut f: impl FnMut(&mut Self, usize, TaskRec)) {
        if !self.is_alive(owner) || self.state.entities[owner.index as usize].n_tasks == 0 {
            return;
        }
        // The owner's list visits its slots in ascending order, as a pool scan would; the
        // callbacks only queue results, so the list does not change under the walk.
        self.ensure_task_index();
        let mut at = self.scratch.tasks.first(owner.index);
        while at != u32::MAX {
            let slot = at as usize;
            at = self.scratch.tasks.after(at);
            let t = self.state.tasks[slot];
            if t.is_live() && t.flags & DONE == 0 && t.owner == owner {
                f(self, slot, t);
            }
        }
    }
}
