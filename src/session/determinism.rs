//! The determinism check: run straight, run with rollbacks, compare.
//!
//! One harness for every place that asks "does re-simulation change anything?" (property
//! tests, the `determinism` fuzz oracle, the scenario runner's rollback mode, game tests): a
//! world is stepped straight through `frames` frames, recording each frame's checksum and the
//! final snapshot bytes; then a second world built the same way is stepped under a
//! [`RollbackDriver`] that rolls back a seeded random depth after every frame and re-simulates.
//! The check passes when no re-simulation differs from the first simulation of its frame,
//! every frame's checksum equals the straight run's, and the final bytes are identical.
//!
//! ```
//! use rollback_abilities::prelude::*;
//! use rollback_abilities::Frame;
//! use rollback_abilities::session::Determinism;
//! use std::sync::Arc;
//!
//! struct G;
//! impl Game for G { type Input = u8; type Component = (); type Global = (); }
//! let content = Arc::new(Content::from_ron_str(r#"(
//!     attribute_sets: { "Vitals": (attributes: { "Health": (default: 100) }) },
//!     effects: { "Poison": (duration: Frames(60), period: Frames(10),
//!         modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -3))]) },
//! )"#)?);
//! let vitals = content.attr_set("Vitals")?;
//! let poison = content.effect("Poison")?;
//! let build = || {
//!     let mut w = World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
//!     w.spawn_actor(&[vitals]).unwrap();
//!     w
//! };
//! // Player 0 poisons the actor on the frames its input is 1.
//! let mut inputs = |frame: Frame, buf: &mut Vec<u8>| buf.extend([u8::from(frame % 25 == 0), 0]);
//! let mut script = |w: &mut World<G>| {
//!     if w.input(0) == 1 {
//!         let actor = w.entities().next().unwrap();
//!         let _ = w.apply_effect(w.make_spec(poison, 1, actor), actor);
//!     }
//! };
//! let report = Determinism { max_depth: 8, seed: 7 }.check(build, 120, &mut inputs, &mut script)?;
//! assert_eq!(report.checksums.len(), 120);
//! assert!(report.stats.rollbacks >= 119);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::driver::{Divergence, RollbackDriver, RollbackStats};
use crate::num::Frame;
use crate::observe::{BatchObserver, NoObserver};
use crate::world::{Game, World};
use core::fmt;

/// How deep and with which seed the rolled-back run rolls back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Determinism {
    /// The deepest rollback (1..=`max_depth` frames after every frame; 0 counts as 1).
    pub max_depth: u32,
    /// The seed of the depth sequence.
    pub seed: u64,
}

/// A straight run: each frame's checksum and the final snapshot bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StraightRun {
    /// The first frame stepped (the world's `next_frame()` when the run began).
    pub first_frame: Frame,
    /// The checksum after each frame, from `first_frame` on.
    pub checksums: Vec<u64>,
    /// The snapshot bytes after the last frame.
    pub final_bytes: Vec<u8>,
}

/// What a passing check measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeterminismReport {
    /// The checksum after each frame (identical in both runs).
    pub checksums: Vec<u64>,
    /// The rolled-back run's counters.
    pub stats: RollbackStats,
}

/// Why a determinism check failed: the first difference found.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeterminismFailure {
    /// Re-simulating a frame after a rollback gave other state than its first simulation.
    Resimulation(Box<Divergence>),
    /// The rolled-back run's checksum after a frame differs from the straight run's.
    Checksum {
        /// The frame.
        frame: Frame,
        /// The straight run's checksum after it.
        straight: u64,
        /// The rolled-back run's.
        rolled: u64,
    },
    /// Every checksum agreed but the final snapshot bytes differ (a checksum collision, or
    /// state a checksum does not cover).
    FinalBytes,
}

impl fmt::Display for DeterminismFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeterminismFailure::Resimulation(d) => write!(f, "{d}"),
            DeterminismFailure::Checksum { frame, straight, rolled } => write!(
                f,
                "the checksum after frame {frame} is {rolled:016x} with rollbacks but {straight:016x} stepped straight"
            ),
            DeterminismFailure::FinalBytes => write!(
                f,
                "every checksum agrees but the final snapshot bytes differ from the straight run's"
            ),
        }
    }
}

impl std::error::Error for DeterminismFailure {}

crate::located::readable_debug!(DeterminismFailure);

impl Determinism {
    /// Runs `build()` straight and a second `build()` with rollbacks for `frames` frames and
    /// compares them. `inputs(frame, buf)` fills a frame's inputs and `script(world)` runs in
    /// phase P6 of every simulation of every frame, first and re-simulated alike: both must
    /// depend only on the frame and the world.
    pub fn check<G: Game>(
        &self,
        mut build: impl FnMut() -> World<G>,
        frames: u32,
        inputs: &mut impl FnMut(Frame, &mut Vec<G::Input>),
        script: &mut impl FnMut(&mut World<G>),
    ) -> Result<DeterminismReport, DeterminismFailure> {
        let straight = Self::straight(&mut build(), frames, &mut *inputs, &mut *script);
        let stats = self.against(&mut build(), &straight, inputs, script, &mut NoObserver)?;
        Ok(DeterminismReport { checksums: straight.checksums, stats })
    }

    /// Steps `world` straight through `frames` frames, recording each frame's checksum.
    pub fn straight<G: Game>(
        world: &mut World<G>,
        frames: u32,
        mut inputs: impl FnMut(Frame, &mut Vec<G::Input>),
        mut script: impl FnMut(&mut World<G>),
    ) -> StraightRun {
        let first_frame = world.next_frame();
        let mut buf = Vec::new();
        let mut checksums = Vec::with_capacity(frames as usize);
        for _ in 0..frames {
            buf.clear();
            inputs(world.next_frame(), &mut buf);
            world.step_with(&buf, &mut script);
            checksums.push(world.checksum());
        }
        StraightRun { first_frame, checksums, final_bytes: world.state_bytes() }
    }

    /// Steps `world` (built as the straight run's was) through the straight run's frames under
    /// a [`RollbackDriver`], reporting every batch to `observer`, and compares: each
    /// re-simulation with its first simulation, each frame's checksum with the straight run's,
    /// and the final bytes.
    pub fn against<G: Game>(
        &self,
        world: &mut World<G>,
        straight: &StraightRun,
        mut inputs: impl FnMut(Frame, &mut Vec<G::Input>),
        mut script: impl FnMut(&mut World<G>),
        observer: &mut impl BatchObserver<G>,
    ) -> Result<RollbackStats, DeterminismFailure> {
        self.against_each(world, straight, &mut inputs, &mut script, observer, |_, _| {})
    }

    /// [`Determinism::against`], calling `after(world, observer)` once each frame's batch is
    /// over (after the rollback and re-simulation, with the world at the frame just advanced):
    /// to present, record or check per frame.
    pub fn against_each<G: Game, O: BatchObserver<G>>(
        &self,
        world: &mut World<G>,
        straight: &StraightRun,
        mut inputs: impl FnMut(Frame, &mut Vec<G::Input>),
        mut script: impl FnMut(&mut World<G>),
        observer: &mut O,
        mut after: impl FnMut(&World<G>, &mut O),
    ) -> Result<RollbackStats, DeterminismFailure> {
        let mut driver = RollbackDriver::new(world, self.max_depth, self.seed);
        for (i, want) in straight.checksums.iter().enumerate() {
            driver
                .advance_observed(world, &mut inputs, &mut script, observer)
                .map_err(DeterminismFailure::Resimulation)?;
            let rolled = world.checksum();
            if rolled != *want {
                return Err(DeterminismFailure::Checksum {
                    frame: straight.first_frame + i as Frame,
                    straight: *want,
                    rolled,
                });
            }
            after(world, observer);
        }
        if world.state_bytes() != straight.final_bytes {
            return Err(DeterminismFailure::FinalBytes);
        }
        Ok(driver.stats())
    }
}
