//! A GGRS-like prediction driver without a network: remote inputs arrive `latency` frames
//! late, are predicted by repeating the last known input meanwhile, and a misprediction rolls
//! back to the first wrong frame and re-simulates — the same requests a GGRS P2P session
//! issues, in-process and deterministic.

use crate::num::Frame;
use crate::observe::BatchObserver;
use crate::world::{Game, SnapshotRing, World};
use core::fmt;

/// Counters of a prediction run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PredictionStats {
    /// Frames advanced for the first time.
    pub frames: u64,
    /// Rollbacks caused by mispredicted inputs.
    pub rollbacks: u64,
    /// Frames re-simulated.
    pub resimulated: u64,
    /// The deepest rollback.
    pub max_depth: u32,
}

/// Simulates one local peer of a P2P match: player `local` is known at once, every other
/// player's input is known `latency` frames late and predicted (repeat last known input) until
/// then. See the [`session`](crate::session) module documentation.
pub struct PredictionDriver<G: Game> {
    ring: SnapshotRing<G>,
    latency: u32,
    local: usize,
    players: usize,
    /// Inputs used for each frame in the window (frame, inputs).
    used: Vec<Option<(Frame, Vec<G::Input>)>>,
    truth: Vec<G::Input>,
    buf: Vec<G::Input>,
    stats: PredictionStats,
}

impl<G: Game> fmt::Debug for PredictionDriver<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PredictionDriver")
            .field("latency", &self.latency)
            .field("stats", &self.stats)
            .finish()
    }
}

impl<G: Game> PredictionDriver<G> {
    /// A driver for `world` where player `local` is local and the others arrive `latency`
    /// frames late (0: no prediction).
    pub fn new(world: &World<G>, local: usize, latency: u32) -> PredictionDriver<G> {
        let len = latency as usize + 2;
        PredictionDriver {
            ring: SnapshotRing::new(world, len),
            latency,
            local,
            players: world.players(),
            used: vec![None; len],
            truth: Vec::new(),
            buf: Vec::new(),
            stats: PredictionStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> PredictionStats {
        self.stats
    }

    /// The newest frame whose inputs are all known at the present `frame`.
    pub fn confirmed_at(&self, frame: Frame) -> Option<Frame> {
        frame.checked_sub(self.latency)
    }

    /// Advances the present by one frame: corrects any mispredicted earlier frame (rollback and
    /// re-simulation), then simulates the new frame with predicted remote inputs.
    ///
    /// `inputs(frame, buf)` gives the *true* inputs of every player for a frame; `script` runs
    /// in phase P6 of every simulated frame.
    pub fn advance(
        &mut self,
        world: &mut World<G>,
        mut inputs: impl FnMut(Frame, &mut Vec<G::Input>),
        mut script: impl FnMut(&mut World<G>),
        observer: &mut impl BatchObserver<G>,
    ) {
        let present = world.next_frame();
        // The frame whose remote inputs arrive now.
        if let Some(arrived) = present.checked_sub(self.latency).filter(|_| self.latency > 0) {
            self.truth_of(arrived, &mut inputs);
            let slot = arrived as usize % self.used.len();
            let wrong = match &self.used[slot] {
                Some((f, used)) if *f == arrived => *used != self.truth,
                _ => false,
            };
            if wrong && self.ring.load(world, arrived) {
                observer.loaded(arrived);
                self.stats.rollbacks += 1;
                self.stats.max_depth = self.stats.max_depth.max(present - arrived);
                for f in arrived..present {
                    self.simulate(world, f, present, &mut inputs, &mut script);
                    observer.advanced(world);
                    self.stats.resimulated += 1;
                }
            }
        }
        self.simulate(world, present, present, &mut inputs, &mut script);
        observer.advanced(world);
        self.stats.frames += 1;
        observer.batch_end(world, self.confirmed_at(present));
    }

    fn truth_of(&mut self, frame: Frame, inputs: &mut impl FnMut(Frame, &mut Vec<G::Input>)) {
        self.truth.clear();
        inputs(frame, &mut self.truth);
        self.truth.resize(self.players, G::Input::default());
    }

    /// Simulates `frame` as seen at `present`: remote inputs newer than `present − latency`
    /// repeat the last known one.
    fn simulate(
        &mut self,
        world: &mut World<G>,
        frame: Frame,
        present: Frame,
        inputs: &mut impl FnMut(Frame, &mut Vec<G::Input>),
        script: &mut impl FnMut(&mut World<G>),
    ) {
        self.ring.save(world);
        let known_until = present.checked_sub(self.latency);
        self.truth_of(frame, inputs);
        let mut used = self.truth.clone();
        if known_until.is_none_or(|k| frame > k) {
            // Predict remote players from the last known frame.
            self.buf.clear();
            if let Some(k) = known_until {
                inputs(k, &mut self.buf);
            }
            self.buf.resize(self.players, G::Input::default());
            for (p, u) in used.iter_mut().enumerate() {
                if p != self.local {
                    *u = self.buf[p];
                }
            }
        }
        world.step_with(&used, &mut *script);
        let slot = frame as usize % self.used.len();
        self.used[slot] = Some((frame, used));
    }
}
