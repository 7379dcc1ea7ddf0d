//! Phase P4: input-driven activations and press/release notifications, in player-handle order
//! (same-frame fairness, F-GA-18), with confirm/cancel consumed first by waiting tasks.

use super::ctx::AbilityCtx;
use super::task::{kind, tflags};
use super::{InputEdge, TaskEvent};
use crate::id::AbilityHandle;
use crate::world::hooks::BoundFn;
use crate::world::{Game, World};

impl<G: Game> World<G> {
    /// Phase P4.
    pub(crate) fn run_inputs(&mut self) {
        for p in 0..self.state.player_owner.len() {
            let owner = self.state.player_owner[p];
            if !self.has_ability_system(owner) {
                continue;
            }
            let cur = G::ability_input(&self.state.inputs[p]);
            let prev = G::ability_input(&self.state.prev_inputs[p]);
            let pressed = cur.held & !prev.held;
            let released = prev.held & !cur.held;
            if cur.confirm && !prev.confirm {
                self.run_item(|w| w.deliver_confirm(owner, true, p));
            }
            if cur.cancel && !prev.cancel {
                self.run_item(|w| w.deliver_confirm(owner, false, p));
            }
            if pressed == 0 && released == 0 {
                continue;
            }
            // Collected first (the loop changes the world), into a reused buffer.
            let mut specs = core::mem::take(&mut self.scratch.input_specs);
            specs.clear();
            specs.extend(
                self.abilities(owner).filter(|(_, s)| s.input < 32).map(|(h, s)| (h, s.input)),
            );
            for &(h, input) in &specs {
                let bit = 1u32 << input;
                if let Some(i) = self.spec_slot(h) {
                    if cur.held & bit != 0 {
                        self.state.specs[i].flags |= super::spec_flags::INPUT_HELD;
                    } else {
                        self.state.specs[i].flags &= !super::spec_flags::INPUT_HELD;
                    }
                }
                if pressed & bit != 0 {
                    if self.is_ability_active(h) {
                        self.run_item(|w| w.deliver_input(h, InputEdge::Pressed));
                    } else if self
                        .ability(h)
                        .is_some_and(|s| self.content.ability_def(s.def).activate_on_input)
                    {
                        self.run_item(|w| w.activate_now(h, None));
                    }
                }
                if released & bit != 0 && self.is_ability_active(h) {
                    self.run_item(|w| w.deliver_input(h, InputEdge::Released));
                    let ends = self
                        .ability(h)
                        .is_some_and(|s| self.content.ability_def(s.def).end_on_release);
                    if ends && self.is_ability_active(h) {
                        self.run_item(|w| w.end_ability(h));
                    }
                }
            }
            specs.clear();
            self.scratch.input_specs = specs;
        }
    }

    /// An input edge to an active ability: `on_input`, then its `WaitInput` tasks.
    fn deliver_input(&mut self, h: AbilityHandle, edge: InputEdge) {
        let Some(s) = self.ability(h).copied() else { return };
        if let Some(b) =
            self.content.ability_def(s.def).behaviour.and_then(|f| match self.bound.get(f) {
                Some(BoundFn::Behaviour(b)) => Some(*b),
                _ => None,
            })
            && let Some(on_input) = b.on_input
        {
            let mut ctx =
                AbilityCtx { world: self, handle: h, serial: s.activation_serial, event: None };
            on_input(&mut ctx, edge);
        }
        let want_released = edge == InputEdge::Released;
        // The owner's tasks in pool order (the behaviour above may have spawned or ended some).
        self.ensure_task_index();
        let mut at = self.scratch.tasks.first(h.owner.index);
        while at != u32::MAX {
            let slot = at as usize;
            at = self.scratch.tasks.after(at);
            let t = self.state.tasks[slot];
            if t.is_live()
                && t.kind == kind::WAIT_INPUT
                && t.ability() == h
                && t.activation_serial == s.activation_serial
                && (t.flags & tflags::RELEASED != 0) == want_released
            {
                self.task_emit(slot, TaskEvent::Input(edge), t.flags & tflags::ONCE != 0);
            }
        }
    }

    /// Confirm (`true`) or cancel to the owner's waiting confirm/cancel and targeting tasks.
    fn deliver_confirm(&mut self, owner: crate::id::Entity, confirm: bool, player: usize) {
        self.ensure_task_index();
        let mut at = self.scratch.tasks.first(owner.index);
        while at != u32::MAX {
            let slot = at as usize;
            at = self.scratch.tasks.after(at);
            let t = self.state.tasks[slot];
            if !t.is_live() || t.owner != owner {
                continue;
            }
            // (event, last): confirm/cancel waits end at the first report; user-confirmed
            // targeting ends at its confirm or cancel; multi targeting ends at the cancel.
            let (event, last) = match (t.kind, confirm, t.a) {
                (kind::WAIT_CONFIRM_CANCEL, true, _) => (TaskEvent::Confirmed, true),
                (kind::WAIT_CONFIRM_CANCEL, false, _) => (TaskEvent::Cancelled, true),
                (kind::WAIT_TARGET_DATA, true, 1) => {
                    (TaskEvent::TargetData(self.run_target_query(slot, player)), true)
                }
                (kind::WAIT_TARGET_DATA, true, 2) => {
                    (TaskEvent::TargetData(self.run_target_query(slot, player)), false)
                }
                (kind::WAIT_TARGET_DATA, false, 1 | 2) => (TaskEvent::TargetCancelled, true),
                _ => continue,
            };
            self.task_emit(slot, event, last);
        }
    }
}
