//! Per-entity time (F-GA-23): hitstop and time scale.
//!
//! Every entity has a clock that normally runs with the world: one frame per frame. Hitstop
//! holds it for a number of frames; a time scale in `[0, 1]` holds it on some frames so that
//! on average it runs `scale` frames per frame. On a frame where an entity's clock is
//! **held**, everything timed by that clock stands still:
//!
//! - its ability tasks (timelines, `WaitFrames`, `Repeat`, root motion, `end_after`, custom
//!   tasks): they do not tick, and their start frame moves one frame later, so every "frames
//!   since the spawn" they count is in the entity's own time;
//! - its active effects' durations and periods, **cooldowns included** (a cooldown is an
//!   effect on its owner): their expiry and next execution move one frame later.
//!
//! What a held clock does not stop: input edges and the input buffer (presses are the
//! player's, in world frames), gameplay events, tag and attribute changes, effects applied to
//! the entity (they start counting in its time), other entities, and the game's systems (they
//! ask [`World::is_time_held`] to freeze what they move).
//!
//! The clock pass runs at the start of every frame, before phase P1; a frame is held when
//! hitstop remains (one frame of it is used), or else when the scale's accumulator stays below
//! one frame after adding the scale (`acc += scale; if acc >= 1 { acc -= 1; run } else
//! { hold }`). The records are snapshot columns (`entity_time`, counted by the extension
//! header), so all of this rolls back like any other state, and a world in which no entity
//! ever had hitstop or a scale skips the pass and hashes none of it.

use super::state::EntityTime;
use super::{Game, World};
use crate::ability::task::{TaskIndex, kind};
use crate::id::{AbilityHandle, Entity, TaskHandle};
use crate::num::{self, Frame, Fx};

impl<G: Game> World<G> {
    /// Holds an entity's clock for the next `frames` frames (hitstop, hit freeze): from the
    /// next frame stepped when called during a step, from the frame about to be stepped when
    /// called between steps. Hitstop already running is extended to `frames` if shorter
    /// (never added up: two hits in one frame freeze as long as the longer one). Its tasks,
    /// timelines and effect timers stand still meanwhile (module docs). Ignored for a dead
    /// entity.
    pub fn hitstop(&mut self, e: Entity, frames: u32) {
        if frames == 0 {
            return;
        }
        if let Some(r) = self.clock_mut(e) {
            r.hitstop = r.hitstop.max(frames);
        }
    }

    /// An effect application that landed gives its definition's hitstop to the target and its
    /// instigator hitstop to the spec's instigator.
    #[inline]
    pub(crate) fn effect_hitstop(&mut self, spec: &crate::effect::EffectSpec, target: Entity) {
        // Content without hitstop (one load) skips the definition's lookup.
        if !self.content.accel.any_hitstop || spec.is_inline() {
            return;
        }
        let Some((on_target, on_instigator)) = self
            .content
            .effect_defs()
            .get(spec.def.index())
            .map(|d| (u32::from(d.hitstop), u32::from(d.instigator_hitstop)))
        else {
            return;
        };
        self.hitstop(target, on_target);
        self.hitstop(spec.context.instigator, on_instigator);
    }

    /// The frames of hitstop an entity still has to hold (0: none).
    pub fn hitstop_remaining(&self, e: Entity) -> u32 {
        self.clock(e).map_or(0, |r| r.hitstop)
    }

    /// Sets an entity's time scale, clamped to `[0, 1]`: 1 (the default) runs its clock with
    /// the world, 0.5 holds every other frame, 0 holds it until the scale changes. The
    /// fraction carried between frames is kept when the scale changes. Ignored for a dead
    /// entity.
    pub fn set_time_scale(&mut self, e: Entity, scale: Fx) {
        let scale = num::clamp(scale, Fx::ZERO, Fx::ONE);
        if scale == Fx::ONE {
            if let Some(i) = self.clock(e).map(|_| e.index as usize) {
                let r = &mut self.state.entity_time[i];
                r.scale = Fx::ZERO;
                r.scaled = 0;
                r.acc = Fx::ZERO;
                self.release_clock_if_idle(i);
            }
            return;
        }
        if let Some(r) = self.clock_mut(e) {
            r.scale = scale;
            r.scaled = 1;
        }
    }

    /// An entity's time scale (1 unless set).
    pub fn time_scale(&self, e: Entity) -> Fx {
        match self.clock(e) {
            Some(r) if r.scaled != 0 => r.scale,
            _ => Fx::ONE,
        }
    }

    /// Whether the entity's clock is held in the current frame (hitstop or its time scale):
    /// its tasks and effect timers stand still, and the game's systems should not move it.
    pub fn is_time_held(&self, e: Entity) -> bool {
        self.clock(e).is_some_and(|r| r.held_at != 0 && r.held_at == self.frame().wrapping_add(1))
    }

    /// The definition timeline task of an active ability (the one `timeline:` plays), to
    /// change its rate with [`World::set_timeline_rate`].
    pub fn timeline_task(&self, h: AbilityHandle) -> Option<TaskHandle> {
        let serial = self.ability(h).filter(|s| s.is_active())?.activation_serial;
        self.tasks_of(h)
            .find(|(_, t)| {
                t.kind == kind::PLAY_TIMELINE
                    // The definition's timeline reports under the reserved id `u16::MAX`.
                    && t.user_id == u16::MAX
                    && t.activation_serial == serial
            })
            .map(|(task, _)| task)
    }

    /// Changes a playing timeline's rate (timeline frames per frame of its owner's clock; 0
    /// pauses it, negative counts as 0). It applies from the next frame the timeline advances;
    /// the position reached so far, fraction included, is kept, so notifies and windows still
    /// fire exactly once. Returns `false` if the task is not a live timeline.
    pub fn set_timeline_rate(&mut self, task: TaskHandle, rate: Fx) -> bool {
        let slot = task.slot as usize;
        match self.state.tasks.get_mut(slot) {
            Some(t)
                if t.is_live()
                    && t.generation == task.generation
                    && t.kind == kind::PLAY_TIMELINE =>
            {
                t.dir[0] = if rate > Fx::ZERO { rate } else { Fx::ZERO };
                true
            }
            _ => false,
        }
    }

    /// A timeline task's rate (`None` if the task is not a live timeline).
    pub fn timeline_rate(&self, task: TaskHandle) -> Option<Fx> {
        self.task(task).filter(|t| t.kind == kind::PLAY_TIMELINE).map(|t| t.dir[0])
    }

    /// The entity's clock record, if it has one.
    fn clock(&self, e: Entity) -> Option<&EntityTime> {
        let r = self.state.entity_time.get(e.index as usize)?;
        (r.entity == e && e != Entity::NONE && self.is_alive(e)).then_some(r)
    }

    /// The entity's clock record, made if it has none (a despawned entity's stale record in
    /// the same slot is taken over).
    fn clock_mut(&mut self, e: Entity) -> Option<&mut EntityTime> {
        if !self.is_alive(e) {
            return None;
        }
        let i = e.index as usize;
        let cur = *self.state.entity_time.get(i)?;
        if cur.entity != e {
            if cur.entity == Entity::NONE {
                self.state.ext.timed = self.state.ext.timed.saturating_add(1);
            }
            self.state.entity_time[i] = EntityTime { entity: e, ..EntityTime::default() };
            let hw = &mut self.state.ext.time_high_water;
            *hw = (*hw).max(e.index.saturating_add(1));
        }
        Some(&mut self.state.entity_time[i])
    }

    /// Frees a record that holds nothing (no hitstop, no scale, not held this frame).
    fn release_clock_if_idle(&mut self, i: usize) {
        let r = self.state.entity_time[i];
        let held_now = r.held_at != 0 && r.held_at == self.frame().wrapping_add(1);
        if r.entity != Entity::NONE && r.hitstop == 0 && r.scaled == 0 && !held_now {
            self.state.entity_time[i] = EntityTime::default();
            self.state.ext.timed = self.state.ext.timed.saturating_sub(1);
        }
    }

    /// The clock pass at the start of a frame (before P1): decides which clocks are held in
    /// `frame` and holds them. Nothing to do (one comparison) when no entity has a record.
    pub(crate) fn run_clocks(&mut self, frame: Frame) {
        if self.state.ext.timed == 0 {
            return;
        }
        let hw = (self.state.ext.time_high_water as usize).min(self.state.entity_time.len());
        for i in 0..hw {
            let mut r = self.state.entity_time[i];
            if r.entity == Entity::NONE {
                continue;
            }
            if !self.is_alive(r.entity) {
                // The entity was despawned: its record goes with it.
                self.state.entity_time[i] = EntityTime::default();
                self.state.ext.timed = self.state.ext.timed.saturating_sub(1);
                continue;
            }
            let held = if r.hitstop > 0 {
                r.hitstop -= 1;
                true
            } else if r.scaled != 0 {
                r.acc = num::add(r.acc, r.scale);
                if r.acc >= Fx::ONE {
                    r.acc = num::sub(r.acc, Fx::ONE);
                    false
                } else {
                    true
                }
            } else {
                false
            };
            if held {
                r.held_at = frame.wrapping_add(1);
                self.state.entity_time[i] = r;
                self.hold_clocks(r.entity, frame);
            } else if r.hitstop == 0 && r.scaled == 0 {
                self.state.entity_time[i] = EntityTime::default();
                self.state.ext.timed = self.state.ext.timed.saturating_sub(1);
            } else {
                self.state.entity_time[i] = r;
            }
        }
    }

    /// Holds an entity's clock for `frame`: its effect timers and its ticked tasks' start
    /// frames move one frame later.
    fn hold_clocks(&mut self, e: Entity, frame: Frame) {
        let ei = e.index as usize;
        self.effect_store_mut().delay(e.index);
        if self.state.entities[ei].n_tasks == 0 {
            return;
        }
        self.ensure_task_index();
        let mut at = self.scratch.tasks.first(e.index);
        while at != u32::MAX {
            let slot = at as usize;
            at = self.scratch.tasks.after(at);
            let t = &mut self.state.tasks[slot];
            if t.is_live() && t.owner == e && TaskIndex::is_ticked(t.kind) {
                // Spawned this frame (before the pass) or later: nothing to move.
                if t.started <= frame {
                    t.started = t.started.saturating_add(1);
                }
                let t = *t;
                self.scratch.tasks.refresh_due(slot, &t);
            }
        }
    }
}
