//! The random-depth rollback driver.

use crate::num::Frame;
use crate::observe::{BatchObserver, NoObserver};
use crate::random::Stream;
use crate::world::{Checksums, Game, SnapshotRing, Subsystem, World};
use core::fmt;

/// A re-simulated frame whose checksum differs from the first simulation of the same frame.
#[derive(Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The frame whose re-simulation diverged.
    pub frame: Frame,
    /// How deep the rollback was.
    pub depth: u32,
    /// Checksums after the first simulation.
    pub expected: Checksums,
    /// Checksums after the re-simulation.
    pub actual: Checksums,
}

impl Divergence {
    /// The subsystems whose sub-checksums differ.
    pub fn subsystems(&self) -> Vec<Subsystem> {
        self.expected.differing(&self.actual)
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let subs: Vec<&str> = self.subsystems().iter().map(|s| s.name()).collect();
        write!(
            f,
            "frame {} re-simulated after a {}-frame rollback has checksum {:016x}, the first simulation had {:016x} (differing: {})",
            self.frame,
            self.depth,
            self.actual.total,
            self.expected.total,
            subs.join(", ")
        )
    }
}

impl std::error::Error for Divergence {}

crate::located::readable_debug!(Divergence);

/// Counters of a driver run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RollbackStats {
    /// Frames advanced (first simulations).
    pub frames: u64,
    /// Rollbacks performed.
    pub rollbacks: u64,
    /// Frames re-simulated.
    pub resimulated: u64,
    /// The deepest rollback.
    pub max_depth: u32,
}

/// Steps a world frame by frame and, after every frame, loads the snapshot of a random earlier
/// frame (depth `1..=max_depth`, seeded) and re-simulates up to the present, checking that every
/// re-simulated frame has the checksum of its first simulation.
///
/// Inputs and scripts must be functions of the frame number (as confirmed inputs and scenario
/// scripts are), so the re-simulation sees exactly what the first simulation saw.
///
/// ```
/// use rollback_abilities::{Content, Game, Hooks, World, WorldConfig};
/// use rollback_abilities::session::RollbackDriver;
/// # struct G; impl Game for G { type Input = u8; type Component = (); type Global = (); }
/// let content = std::sync::Arc::new(Content::from_ron_str("(tags: [\"A\"])")?);
/// let mut world = World::<G>::new(content, &Hooks::new(), WorldConfig::default()).unwrap();
/// let mut driver = RollbackDriver::new(&world, 8, 7);
/// for _ in 0..100 {
///     driver.advance(&mut world, |f, inputs| inputs.extend([f as u8, 0]), |_| {}).unwrap();
/// }
/// assert!(driver.stats().rollbacks >= 99);
/// # Ok::<(), rollback_abilities::ContentError>(())
/// ```
pub struct RollbackDriver<G: Game> {
    ring: SnapshotRing<G>,
    /// Checksums after the first simulation of each frame in the ring window.
    history: Vec<Option<(Frame, Checksums)>>,
    max_depth: u32,
    rng: Stream,
    stats: RollbackStats,
    inputs: Vec<G::Input>,
}

impl<G: Game> fmt::Debug for RollbackDriver<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RollbackDriver")
            .field("max_depth", &self.max_depth)
            .field("stats", &self.stats)
            .finish()
    }
}

impl<G: Game> RollbackDriver<G> {
    /// A driver for `world` rolling back at most `max_depth` frames (at least 1), with depths
    /// drawn from a stream seeded by `seed`.
    pub fn new(world: &World<G>, max_depth: u32, seed: u64) -> RollbackDriver<G> {
        let max_depth = max_depth.max(1);
        let len = max_depth as usize + 2;
        RollbackDriver {
            ring: SnapshotRing::new(world, len),
            history: vec![None; len],
            max_depth,
            rng: Stream::derive(seed, &[0x0D21_7E55]),
            stats: RollbackStats::default(),
            inputs: Vec::new(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> RollbackStats {
        self.stats
    }

    /// Advances one frame, then rolls back a random depth and re-simulates.
    ///
    /// `inputs(frame, buf)` fills the frame's inputs; `script(world)` runs in phase P6.
    pub fn advance(
        &mut self,
        world: &mut World<G>,
        inputs: impl FnMut(Frame, &mut Vec<G::Input>),
        script: impl FnMut(&mut World<G>),
    ) -> Result<(), Box<Divergence>> {
        self.advance_observed(world, inputs, script, &mut NoObserver)
    }

    /// [`RollbackDriver::advance`], reporting loads, advances and the batch end to an
    /// observer. Frames older than `max_depth` are reported as confirmed.
    pub fn advance_observed(
        &mut self,
        world: &mut World<G>,
        mut inputs: impl FnMut(Frame, &mut Vec<G::Input>),
        mut script: impl FnMut(&mut World<G>),
        observer: &mut impl BatchObserver<G>,
    ) -> Result<(), Box<Divergence>> {
        let frame = world.next_frame();
        self.step_once(world, frame, &mut inputs, &mut script, None)?;
        observer.advanced(world);
        self.stats.frames += 1;
        // Roll back 1..=max_depth frames (no further than frame 0 of this driver's history).
        let available = self.history.iter().flatten().filter(|(f, _)| *f <= frame).count() as u32;
        let depth = 1 + self.rng.below(self.max_depth.min(available).max(1));
        let from = frame + 1 - depth;
        let confirmed = frame.checked_sub(self.max_depth);
        if !self.ring.load(world, from) {
            observer.batch_end(world, confirmed);
            return Ok(());
        }
        observer.loaded(from);
        self.stats.rollbacks += 1;
        self.stats.max_depth = self.stats.max_depth.max(depth);
        for f in from..=frame {
            self.step_once(world, f, &mut inputs, &mut script, Some(depth))?;
            observer.advanced(world);
            self.stats.resimulated += 1;
        }
        observer.batch_end(world, confirmed);
        Ok(())
    }

    fn step_once(
        &mut self,
        world: &mut World<G>,
        frame: Frame,
        inputs: &mut impl FnMut(Frame, &mut Vec<G::Input>),
        script: &mut impl FnMut(&mut World<G>),
        depth: Option<u32>,
    ) -> Result<(), Box<Divergence>> {
        self.ring.save(world);
        self.inputs.clear();
        inputs(frame, &mut self.inputs);
        world.step_with(&self.inputs, &mut *script);
        let sums = world.checksums();
        let slot = frame as usize % self.history.len();
        match (depth, self.history[slot]) {
            (Some(depth), Some((f, expected))) if f == frame => {
                if expected != sums {
                    return Err(Box::new(Divergence { frame, depth, expected, actual: sums }));
                }
            }
            _ => self.history[slot] = Some((frame, sums)),
        }
        Ok(())
    }
}
