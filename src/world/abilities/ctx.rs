//! What a behaviour function sees: the world, its ability, its state blob and its helpers.

use crate::ability::{ActivationFailure, EventData, TaskSpec};
use crate::effect::EffectSpec;
use crate::id::{AbilityHandle, EffectDefId, Entity, TaskHandle};
use crate::num::Fx;
use crate::random::Stream;
use crate::world::{Game, World};
use bytemuck::Pod;

/// The context of a behaviour call: the world plus the ability it runs for.
///
/// World changes made here (applying effects, adding tags, sending events) are queued and run
/// right after the behaviour returns, in order; task spawning and state writes are immediate.
pub struct AbilityCtx<'w, G: Game> {
    pub(crate) world: &'w mut World<G>,
    pub(crate) handle: AbilityHandle,
    pub(crate) serial: u32,
    pub(crate) event: Option<EventData>,
}

impl<G: Game> core::fmt::Debug for AbilityCtx<'_, G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AbilityCtx")
            .field("handle", &self.handle)
            .field("serial", &self.serial)
            .finish()
    }
}

impl<G: Game> AbilityCtx<'_, G> {
    /// The world (read).
    pub fn world(&self) -> &World<G> {
        self.world
    }

    /// The world (write).
    pub fn world_mut(&mut self) -> &mut World<G> {
        self.world
    }

    /// This ability.
    pub fn handle(&self) -> AbilityHandle {
        self.handle
    }

    /// The entity owning the ability system.
    pub fn owner(&self) -> Entity {
        self.handle.owner
    }

    /// The owner's avatar (the owner itself unless one was set, F-GA-17).
    pub fn avatar(&self) -> Entity {
        self.world.avatar(self.handle.owner)
    }

    /// The ability's level.
    pub fn level(&self) -> u16 {
        self.world.ability(self.handle).map(|s| s.level).unwrap_or(0)
    }

    /// The current activation serial.
    pub fn serial(&self) -> u32 {
        self.serial
    }

    /// The event that triggered the activation, if any (`on_activate` only).
    pub fn event(&self) -> Option<&EventData> {
        self.event.as_ref()
    }

    /// The current frame.
    pub fn frame(&self) -> crate::num::Frame {
        self.world.frame()
    }

    /// In `on_activate`: whether this activation came from a buffered press (an input pressed
    /// in an earlier frame and remembered by the ability's `input_buffer`, F-GA-22) rather
    /// than from this frame's press, a trigger or a call.
    pub fn from_input_buffer(&self) -> bool {
        self.world.scratch.from_buffer
    }

    /// Reads the state blob as `T` (missing bytes read as zero).
    pub fn state<T: Pod>(&self) -> T {
        let bytes = self.world.ability_state_bytes(self.handle);
        let mut v = T::zeroed();
        let dst = bytemuck::bytes_of_mut(&mut v);
        let n = dst.len().min(bytes.len());
        dst[..n].copy_from_slice(&bytes[..n]);
        v
    }

    /// Writes `T` into the state blob (bytes beyond the blob's declared size are dropped).
    pub fn set_state<T: Pod>(&mut self, v: &T) {
        let src = bytemuck::bytes_of(v);
        let bytes = self.world.ability_state_bytes_mut(self.handle);
        let n = src.len().min(bytes.len());
        bytes[..n].copy_from_slice(&src[..n]);
    }

    /// Spawns a task owned by this activation; its results come to `on_task` with `user_id`.
    pub fn spawn_task(
        &mut self,
        user_id: u16,
        task: TaskSpec,
    ) -> Result<TaskHandle, ActivationFailure> {
        self.world.spawn_task(self.handle, self.serial, user_id, task)
    }

    /// Ends a task early.
    pub fn end_task(&mut self, task: TaskHandle) {
        self.world.end_task(task);
    }

    /// Ends the ability (after the behaviour returns).
    pub fn end(&mut self) {
        self.world.end_ability(self.handle);
    }

    /// Cancels the ability (after the behaviour returns).
    pub fn cancel(&mut self) {
        self.world.cancel_ability(self.handle);
    }

    /// Commits cost and cooldown now, re-checking both (the last chance to fail).
    ///
    /// # Errors
    ///
    /// On failure the ability is cancelled and the reason returned, as
    /// [`World::commit_ability`] does.
    pub fn commit(&mut self) -> Result<(), crate::ability::ActivationFailure> {
        self.world.commit_ability(self.handle, true, true)
    }

    /// Commits only the cost.
    ///
    /// # Errors
    ///
    /// As [`AbilityCtx::commit`].
    pub fn commit_cost(&mut self) -> Result<(), crate::ability::ActivationFailure> {
        self.world.commit_ability(self.handle, true, false)
    }

    /// Commits only the cooldown.
    ///
    /// # Errors
    ///
    /// As [`AbilityCtx::commit`].
    pub fn commit_cooldown(&mut self) -> Result<(), crate::ability::ActivationFailure> {
        self.world.commit_ability(self.handle, false, true)
    }

    /// A spec from this ability: instigator the owner, causer the avatar, the ability's level,
    /// its handle and activation serial in the context, and the ability's tags among the source
    /// tags.
    #[inline]
    pub fn make_spec(&self, def: EffectDefId) -> EffectSpec {
        self.world.make_ability_spec(self.handle, def)
    }

    /// Applies a spec to a target (queued until the behaviour returns).
    pub fn apply(&mut self, spec: EffectSpec, target: Entity) {
        let _ = self.world.apply_effect(spec, target);
    }

    /// Applies a spec now, inside the running change, and returns what happened (the handle of
    /// a new or stacked effect, to remove it later). Its consequences settle with the change.
    pub fn apply_now(
        &mut self,
        spec: EffectSpec,
        target: Entity,
    ) -> Result<crate::world::Applied, crate::world::ApplyError> {
        self.world.apply_now(&spec, target)
    }

    /// Removes every effect on `target` applied by this ability (any activation), for example
    /// the buffs a sprint applied to its owner.
    pub fn remove_own_effects(&mut self, target: Entity) {
        let q = crate::effect::EffectQuery::new().with_ability(self.handle);
        self.world.remove_matching(target, &q);
    }

    /// Emits a burst cue on an entity, keyed by this activation.
    pub fn execute_cue(
        &mut self,
        target: Entity,
        tag: crate::id::TagId,
        params: crate::cue::CueParams,
    ) {
        let origin = crate::cue::CueOrigin::ability(self.handle, self.serial);
        self.world.execute_cue(target, tag, origin, params);
    }

    /// Sends a gameplay event (queued until the behaviour returns).
    pub fn send_event(&mut self, to: Entity, data: EventData) {
        self.world.send_event(to, data);
    }

    fn with_random<R>(&mut self, f: impl FnOnce(&mut Stream) -> R) -> R {
        let h = self.handle;
        let mut s = Stream::from_state(self.world.ability(h).map(|s| s.rng).unwrap_or(0));
        let r = f(&mut s);
        self.world.set_ability_rng(h, s.state());
        r
    }

    /// 32 bits from the activation's random stream (F-REC-04): derived from the session seed,
    /// the owner, the ability slot and the activation serial; its state is in the snapshot, so
    /// draws continue across frames and roll back with everything else.
    pub fn random_u32(&mut self) -> u32 {
        self.with_random(|s| s.next_u32())
    }

    /// A uniform integer in `0..n` from the activation's random stream.
    pub fn random_below(&mut self, n: u32) -> u32 {
        self.with_random(|s| s.below(n))
    }

    /// A uniform number in `[0, 1)` from the activation's random stream.
    pub fn random_unit(&mut self) -> Fx {
        self.with_random(|s| s.unit())
    }

    /// `true` with probability `p`, from the activation's random stream.
    pub fn random_chance(&mut self, p: Fx) -> bool {
        self.with_random(|s| s.chance(p))
    }
}
