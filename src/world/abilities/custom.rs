//! Custom task kinds (F-AT-06): a game's own latent actions, with the built-in tasks'
//! guarantees.
//!
//! A custom kind is a plain `fn` registered by name with
//! [`Hooks::task_kind`](crate::Hooks::task_kind); kinds are numbered by sorting their names, so
//! every peer with the same hooks agrees on them (and the hooks' signature, exchanged in the
//! handshake, names them). A behaviour spawns one with [`TaskSpec::Custom`] and the kind
//! [`World::task_kind`] looks up. The task's state is four `u32` words and one `Fx` number
//! inside its pool record, so it is saved, loaded and checksummed with every other task, and
//! the task ends with its ability like every other task.
//!
//! The tick function runs in phase P5, in pool order with the other ticked tasks, once in every
//! frame the owner's clock runs (not in the spawn frame, not while hitstop or a time scale
//! holds it: F-GA-23). It reads and writes the state through [`TaskCtx`] and reports
//! [`TaskEvent::Custom`] results to the ability's `on_task` with [`TaskCtx::report`] or
//! [`TaskCtx::finish`]. World changes it makes (through [`TaskCtx::world_mut`]) are queued and
//! run right after it returns, as a behaviour's are.

use crate::ability::task::{TaskRec, kind};
use crate::ability::{CustomTaskKind, TaskEvent};
use crate::id::{AbilityHandle, Entity, TaskHandle};
use crate::num::{Frame, Fx};
use crate::world::{Game, World};

/// A custom task kind's tick function (F-AT-06).
pub type CustomTaskFn<G> = fn(&mut TaskCtx<'_, G>);

/// What a custom task's tick sees: the world, the task and its state.
pub struct TaskCtx<'w, G: Game> {
    pub(crate) world: &'w mut World<G>,
    pub(crate) slot: usize,
    pub(crate) generation: u32,
    pub(crate) frame: Frame,
}

impl<G: Game> core::fmt::Debug for TaskCtx<'_, G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TaskCtx").field("task", &self.handle()).field("frame", &self.frame).finish()
    }
}

impl<G: Game> TaskCtx<'_, G> {
    /// The world (read).
    pub fn world(&self) -> &World<G> {
        self.world
    }

    /// The world (write; changes are queued until the tick returns).
    pub fn world_mut(&mut self) -> &mut World<G> {
        self.world
    }

    /// This task.
    pub fn handle(&self) -> TaskHandle {
        TaskHandle { slot: self.slot as u32, generation: self.generation }
    }

    fn rec(&self) -> Option<&TaskRec> {
        self.world
            .state
            .tasks
            .get(self.slot)
            .filter(|t| t.is_live() && t.generation == self.generation)
    }

    fn rec_mut(&mut self) -> Option<&mut TaskRec> {
        let g = self.generation;
        self.world.state.tasks.get_mut(self.slot).filter(|t| t.is_live() && t.generation == g)
    }

    /// The ability the task belongs to.
    pub fn ability(&self) -> AbilityHandle {
        self.rec().map(TaskRec::ability).unwrap_or(AbilityHandle {
            owner: Entity::NONE,
            slot: 0,
            generation: 0,
        })
    }

    /// The entity owning the ability.
    pub fn owner(&self) -> Entity {
        self.rec().map_or(Entity::NONE, |t| t.owner)
    }

    /// The owner's avatar.
    pub fn avatar(&self) -> Entity {
        self.world.avatar(self.owner())
    }

    /// The frames the owner's clock has run since the spawn (1 at the first tick).
    pub fn elapsed(&self) -> u32 {
        self.rec().map_or(0, |t| self.frame.saturating_sub(t.started))
    }

    /// The task's state words.
    pub fn words(&self) -> [u32; 4] {
        self.rec().map_or([0; 4], |t| [t.a, t.b, t.c, t.counter])
    }

    /// Replaces the task's state words.
    pub fn set_words(&mut self, words: [u32; 4]) {
        if let Some(t) = self.rec_mut() {
            [t.a, t.b, t.c, t.counter] = words;
        }
    }

    /// The task's state number.
    pub fn value(&self) -> Fx {
        self.rec().map_or(Fx::ZERO, |t| t.value)
    }

    /// Replaces the task's state number.
    pub fn set_value(&mut self, value: Fx) {
        if let Some(t) = self.rec_mut() {
            t.value = value;
        }
    }

    /// Reports `TaskEvent::Custom { code, value }` to the ability's `on_task` (queued, delivered
    /// right after the tick); the task goes on.
    pub fn report(&mut self, code: u32, value: Fx) {
        if self.rec().is_some() {
            self.world.task_emit(self.slot, TaskEvent::Custom { code, value }, false);
        }
    }

    /// Reports `TaskEvent::Custom { code, value }` as the task's last result: the task ends
    /// when it is delivered.
    pub fn finish(&mut self, code: u32, value: Fx) {
        if self.rec().is_some() {
            self.world.task_emit(self.slot, TaskEvent::Custom { code, value }, true);
        }
    }

    /// Ends the task now, without a report.
    pub fn end(&mut self) {
        let h = self.handle();
        self.world.end_task(h);
    }
}

impl<G: Game> World<G> {
    /// A registered custom task kind by name (F-AT-06).
    pub fn task_kind(&self, name: &str) -> Option<CustomTaskKind> {
        self.bound.task_kind(name).map(CustomTaskKind)
    }

    /// Phase P5: a custom task's tick.
    pub(crate) fn tick_custom(&mut self, slot: usize) {
        let t = self.state.tasks[slot];
        if t.kind != kind::CUSTOM {
            return;
        }
        let Some(f) = self.bound.task_fn(t.attr) else { return };
        let frame = self.state.header.frame;
        let mut ctx = TaskCtx { world: self, slot, generation: t.generation, frame };
        f(&mut ctx);
    }
}
