//! Phase P1 (periodic effects execute) and phase P2 (expiry: stacks and durations run out).

use crate::effect::{EffectTimers, StackExpiration};
use crate::id::EffectHandle;
use crate::num::Frame;
use crate::world::output::{EffectEvent, RemovalReason};
use crate::world::state::EntityWake;
use crate::world::{Game, World};

impl<G: Game> World<G> {
    /// Phase P1: every periodic execution due this frame, entities in index order, effects in
    /// application order.
    pub(crate) fn run_periodic(&mut self, frame: Frame) {
        self.run_due(frame, |w| w.period, |t| t.next_period_at, Self::periodic_tick);
    }

    /// Runs `run` as one work item for each effect whose timer (`at`) is due at `frame`,
    /// entities in index order, effects in application order. The due list is taken before
    /// the first runs; `wake` is the entity's earliest such timer, which skips the others.
    fn run_due(
        &mut self,
        frame: Frame,
        wake: impl Fn(&EntityWake) -> Frame,
        at: impl Fn(&EffectTimers) -> Frame,
        run: fn(&mut Self, u32, u32, Frame),
    ) {
        let mut due = core::mem::take(&mut self.scratch.due);
        due.clear();
        let high_water = self.state.header.high_water;
        self.effect_store().collect_due(frame, high_water, wake, at, &mut due);
        for &(ei, seq) in &due {
            self.run_item(|w| run(w, ei, seq, frame));
        }
        due.clear();
        self.scratch.due = due;
    }

    fn periodic_tick(&mut self, ei: u32, seq: u32, frame: Frame) {
        let store = self.effect_store();
        let Some(slot) = store.find(EffectHandle { target: self.entity_of(ei), seq }) else {
            return;
        };
        let (ef, at) = (*store.effect(slot), store.timer(slot).next_period_at);
        if at > frame {
            return;
        }
        let period =
            self.content.effect_defs().get(ef.def.index()).map_or(0, |d| self.period_of(slot, d));
        let mut next = at.saturating_add(period.max(1));
        if next <= frame {
            next = frame.saturating_add(period.max(1));
        }
        self.effect_store_mut().retime(slot, |t| t.next_period_at = next);
        // Inhibited effects skip the execution but keep their schedule.
        if !ef.is_inhibited() {
            self.execute_active(ei, seq);
        }
    }

    /// Phase P2: effects whose duration ends this frame leave, per their stack expiration
    /// policy.
    pub(crate) fn run_expiry(&mut self, frame: Frame) {
        self.run_due(frame, |w| w.expiry, |t| t.expires_at, Self::expire);
    }

    fn expire(&mut self, ei: u32, seq: u32, frame: Frame) {
        let target = self.entity_of(ei);
        let store = self.effect_store();
        let Some(slot) = store.find(EffectHandle { target, seq }) else { return };
        let (ef, expires_at) = (*store.effect(slot), store.timer(slot).expires_at);
        if expires_at > frame {
            return;
        }
        let content = self.content.clone();
        let Some(def) = content.effect_defs().get(ef.def.index()) else { return };
        let policy = def.stacking.map(|s| s.expiration).unwrap_or(StackExpiration::ClearStack);
        let handle = ef.handle(target);
        let refresh = |w: &mut Self| {
            let new = frame.saturating_add(ef.duration.max(1)).min(crate::num::NEVER - 1);
            w.effect_store_mut().retime(slot, |t| t.expires_at = new);
            w.out.effect_events.push(EffectEvent::DurationChanged {
                handle,
                old_expires_at: expires_at,
                new_expires_at: new,
            });
        };
        match policy {
            StackExpiration::ClearStack => self.remove_now(ei, seq, 0, RemovalReason::Expired),
            StackExpiration::RemoveOneAndRefresh if ef.stacks <= 1 => {
                self.remove_now(ei, seq, 0, RemovalReason::Expired)
            }
            StackExpiration::RemoveOneAndRefresh => {
                self.effect_store_mut().set_stacks(slot, ef.stacks - 1);
                self.out.effect_events.push(EffectEvent::StackChanged {
                    handle,
                    old: ef.stacks,
                    new: ef.stacks - 1,
                });
                if !ef.is_inhibited() && !def.is_periodic() {
                    self.dirty_effect_attrs(ei, def);
                }
                refresh(self);
            }
            StackExpiration::RefreshOnly => refresh(self),
        }
    }
}
