//! Watching a rollback batch: the trait through which presentation (the cue director, the UI
//! event director) sees what a session or driver does to the world.
//!
//! It belongs to the presentation layer, below the sessions that call it: `session` re-exports
//! it as `session::BatchObserver`, and `cue` and `ui` implement it without importing `session`.

use crate::num::Frame;
use crate::world::{Game, World};

/// Sees a driver's batch: loads, advances and the end of each batch (to drive a
/// [`CueDirector`](crate::present::CueDirector) or an [`EventDirector`](crate::ui::EventDirector)
/// exactly as a GGRS session would).
pub trait BatchObserver<G: Game> {
    /// The state saved for `frame` was loaded.
    fn loaded(&mut self, frame: Frame) {
        let _ = frame;
    }
    /// A frame was advanced; its output is `world.output()`.
    fn advanced(&mut self, world: &World<G>) {
        let _ = world;
    }
    /// The batch is over; frames at or before `confirmed` will not be rolled back again.
    fn batch_end(&mut self, world: &World<G>, confirmed: Option<Frame>) {
        let _ = (world, confirmed);
    }
}

/// An observer that does nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl<G: Game> BatchObserver<G> for NoObserver {}

/// Two observers seeing the same batches, in order (a cue session and a UI event feed, say).
impl<G: Game, A: BatchObserver<G>, B: BatchObserver<G>> BatchObserver<G> for (A, B) {
    fn loaded(&mut self, frame: Frame) {
        self.0.loaded(frame);
        self.1.loaded(frame);
    }
    fn advanced(&mut self, world: &World<G>) {
        self.0.advanced(world);
        self.1.advanced(world);
    }
    fn batch_end(&mut self, world: &World<G>, confirmed: Option<Frame>) {
        self.0.batch_end(world, confirmed);
        self.1.batch_end(world, confirmed);
    }
}
