//! Phase P4: input-driven activations and press/release notifications, in player-handle order
//! (same-frame fairness, F-GA-18), with confirm/cancel consumed first by waiting tasks.

use super::ctx::AbilityCtx;
use crate::ability::task::{confirm, kind, tflags};
use crate::ability::{InputEdge, MAX_INPUTS, TaskEvent};
use crate::id::AbilityHandle;
use crate::world::hooks::BoundFn;
use crate::world::state::InputBufferRec;
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
            // Presses buffered in earlier frames first (older input first, F-GA-22).
            if self.state.ext.buffered != 0 {
                self.run_buffered(p, owner, pressed);
            }
            if pressed == 0 && released == 0 {
                continue;
            }
            // Collected first (the loop changes the world), into a reused buffer.
            let mut specs = core::mem::take(&mut self.scratch.input_specs);
            specs.clear();
            specs.extend(
                self.abilities(owner)
                    .filter(|(_, s)| s.input < MAX_INPUTS)
                    .map(|(h, s)| (h, s.input)),
            );
            // Presses that activated an ability, and presses an ability would buffer.
            let mut activated = 0u32;
            let mut bufferable = 0u32;
            for &(h, input) in &specs {
                let bit = 1u32 << input;
                if let Some(i) = self.spec_slot(h) {
                    if cur.held & bit != 0 {
                        self.state.specs[i].flags |= crate::ability::spec_flags::INPUT_HELD;
                    } else {
                        self.state.specs[i].flags &= !crate::ability::spec_flags::INPUT_HELD;
                    }
                }
                if pressed & bit != 0 {
                    let (on_input, buffer) = self.ability(h).map_or((false, 0), |s| {
                        let d = self.content.ability_def(s.def);
                        (d.activate_on_input, d.input_buffer)
                    });
                    if buffer > 0 && on_input {
                        bufferable |= bit;
                    }
                    if self.is_ability_active(h) {
                        self.run_item(|w| w.deliver_input(h, InputEdge::Pressed));
                    } else if on_input && self.run_item(|w| w.activate_now(h, None)).is_ok() {
                        activated |= bit;
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
            // A press that activated nothing is remembered for its abilities' buffer windows;
            // one that activated something is used up (and so is an older buffered press of
            // the same input, which `run_buffered` already dropped).
            let buffer = pressed & bufferable & !activated;
            if buffer != 0 {
                let frame = self.state.header.frame;
                self.buffer_presses(p, owner, buffer, frame);
            }
        }
    }

    /// Adds presses (input bits) pressed in `frame` to a player's buffer.
    fn buffer_presses(&mut self, p: usize, owner: crate::id::Entity, bits: u32, frame: u32) {
        let Some(old) = self.state.input_buffers.get(p).copied() else { return };
        // A record left for another owner is replaced (it was counted if it had presses).
        let was = old.pending;
        let mut rec = if old.owner == owner { old } else { InputBufferRec::default() };
        rec.owner = owner;
        rec.pending |= bits;
        for (b, at) in rec.pressed_at.iter_mut().enumerate() {
            if bits & (1 << b) != 0 {
                *at = frame;
            }
        }
        self.state.input_buffers[p] = rec;
        let x = &mut self.state.ext;
        x.buffer_high_water = x.buffer_high_water.max(p as u32 + 1);
        if was == 0 {
            x.buffered = x.buffered.saturating_add(1);
        }
    }

    /// Retries a player's buffered presses (input buffer, F-GA-22): for each buffered input
    /// not pressed again this frame, in input order, the bound abilities in slot order whose
    /// `input_buffer` still covers the press's age are checked silently (`can_activate`, no
    /// failure events); the first that can activate is activated and the press is used up.
    /// A press no bound ability's window covers any more is dropped, and so is a press of an
    /// input pressed again this frame (the new press replaces it).
    fn run_buffered(&mut self, p: usize, owner: crate::id::Entity, pressed: u32) {
        let Some(rec) = self.state.input_buffers.get(p).copied() else { return };
        if rec.pending == 0 {
            return;
        }
        if rec.owner != owner {
            // Rebound to another owner: the presses were made for the old one.
            self.set_pending(p, 0);
            return;
        }
        let frame = self.state.header.frame;
        let mut keep = rec.pending & !pressed;
        let mut specs = core::mem::take(&mut self.scratch.input_specs);
        specs.clear();
        specs.extend(
            self.abilities(owner)
                .filter(|(_, s)| s.input < MAX_INPUTS && keep & (1 << s.input) != 0)
                .map(|(h, s)| (h, s.input)),
        );
        for b in 0..32u16 {
            let bit = 1u32 << b;
            if keep & bit == 0 {
                continue;
            }
            let age = frame.saturating_sub(rec.pressed_at[usize::from(b)]);
            let mut covered = false;
            let mut used = false;
            for &(h, input) in &specs {
                if input != b {
                    continue;
                }
                let window = self.ability(h).map_or(0, |s| {
                    let d = self.content.ability_def(s.def);
                    if d.activate_on_input { u32::from(d.input_buffer) } else { 0 }
                });
                if age > window {
                    continue;
                }
                covered = true;
                if self.is_ability_active(h) || self.can_activate(h, None).is_err() {
                    continue;
                }
                let activated = self.run_item(|w| {
                    w.scratch.from_buffer = true;
                    let r = w.activate_now(h, None);
                    w.scratch.from_buffer = false;
                    r
                });
                if activated.is_ok() {
                    used = true;
                    break;
                }
            }
            if used || !covered {
                keep &= !bit;
            }
        }
        specs.clear();
        self.scratch.input_specs = specs;
        // Pressed-again inputs are dropped here too; the press-edge code re-buffers them.
        self.set_pending(p, keep);
    }

    /// Sets a player's pending buffer bits, keeping the count of players with some.
    fn set_pending(&mut self, p: usize, bits: u32) {
        let Some(rec) = self.state.input_buffers.get_mut(p) else { return };
        let was = rec.pending;
        if bits == 0 {
            *rec = InputBufferRec::default();
        } else {
            rec.pending = bits;
        }
        let x = &mut self.state.ext;
        match (was != 0, bits != 0) {
            (true, false) => x.buffered = x.buffered.saturating_sub(1),
            (false, true) => x.buffered = x.buffered.saturating_add(1),
            _ => {}
        }
    }

    /// The frame of a player's buffered press of an ability input that has not been used or
    /// dropped yet (F-GA-22), if any.
    pub fn buffered_press(&self, player: usize, input: u8) -> Option<u32> {
        let rec = self.state.input_buffers.get(player)?;
        let bit = 1u32.checked_shl(u32::from(input))?;
        (rec.pending & bit != 0).then(|| rec.pressed_at[usize::from(input)])
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
                (kind::WAIT_TARGET_DATA, true, confirm::USER_CONFIRMED) => {
                    (TaskEvent::TargetData(self.run_target_query(slot, player)), true)
                }
                (kind::WAIT_TARGET_DATA, true, confirm::CUSTOM_MULTI) => {
                    (TaskEvent::TargetData(self.run_target_query(slot, player)), false)
                }
                (
                    kind::WAIT_TARGET_DATA,
                    false,
                    confirm::USER_CONFIRMED | confirm::CUSTOM_MULTI,
                ) => (TaskEvent::TargetCancelled, true),
                _ => continue,
            };
            self.task_emit(slot, event, last);
        }
    }
}
