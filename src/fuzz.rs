//! Fuzzing a game's determinism: one byte string in, one run of the game four ways, every
//! difference a [`Finding`] with the replays that reproduce it.
//!
//! A [`Fuzzer`] knows how to build the game's world (content, hooks, configuration and setup: a
//! closure of the player count and seed) and how to turn bytes into one player's input (by
//! default the input type's own bytes). Given any byte string, [`Fuzzer::run`] derives a
//! [`Case`] — the player count (within [`FuzzConfig::min_players`]`..=`[`FuzzConfig::max_players`]),
//! the frame count (bounded by [`FuzzConfig::max_frames`]), every player's input for every frame,
//! a rollback schedule (depths up to the prediction window), network impairments (loss, jitter,
//! duplication, reordering and their seed), an input delay and, sometimes, a player quitting —
//! and runs the game:
//!
//! 1. **straight**: stepped frame by frame and recorded (the reference);
//! 2. **rollback**: under a [`RollbackDriver`] rolling back a seeded random depth after every
//!    frame ([`Comparison::Rollback`]);
//! 3. **replay**: the straight run's replay encoded, decoded and played on a new world
//!    ([`Comparison::Replay`]);
//! 4. **peers**: as a [`LocalMatch`] of one emulated peer per player over the impaired network,
//!    each peer recording its confirmed frames ([`Comparison::Peer`]; with a departure the
//!    survivors are compared with each other, [`Comparison::Peers`], and each survivor's
//!    recording is played back, [`Comparison::PeerReplay`]).
//!
//! The first run that differs from the reference is a [`Finding`]: which comparison, the first
//! frame that differs, the field-by-field diff of the two states ([`FieldDiff`]: subsystem,
//! entity slot, item and field), the byte string, and — when [`FuzzConfig::replay_dir`] is set —
//! two replay files: the straight run's and the diverging run's (its checksums and the
//! diverged state as a keyframe), so that verifying the diverging replay re-simulates the inputs
//! and names the same frame and fields (`rollback-abilities replay verify`, [`Replay::verify`],
//! [`Replay::bisect`]). A finding is shrunk when that is cheap: the frames are cut to the first
//! divergence and a few more, and fewer players are tried.
//!
//! Nothing in the harness panics on any bytes: a world that cannot be built or a session that
//! fails is a [`FuzzError`].
//!
//! ```
//! use rollback_abilities::prelude::*;
//! use rollback_abilities::fuzz::{Fuzzer, FuzzConfig, Setup};
//! use std::sync::Arc;
//!
//! #[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable,
//!          serde::Serialize, serde::Deserialize)]
//! #[repr(C)]
//! struct Buttons(u8);
//!
//! struct G;
//! impl Game for G {
//!     type Input = Buttons;
//!     type Component = ();
//!     type Global = u32;
//!     fn systems(world: &mut World<Self>) {
//!         // Deterministic: the count of presses lives in the snapshot.
//!         let presses = (0..world.players()).filter(|p| world.input(*p).0 & 1 == 1).count();
//!         *world.global_mut() += presses as u32;
//!     }
//! }
//! let content = Arc::new(Content::from_ron_str("()")?);
//! let fuzzer = Fuzzer::<G>::new(move |setup: &Setup| {
//!     let config = WorldConfig { players: setup.players as u16, seed: setup.seed, ..WorldConfig::default() };
//!     World::new(content.clone(), &Hooks::new(), config)
//! })
//! .with_config(FuzzConfig { max_frames: 60, ..FuzzConfig::default() });
//! for i in 0..3 {
//!     let bytes = Fuzzer::<G>::bytes_for(7, i);
//!     assert!(fuzzer.run(&bytes)?.is_none());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::debug::{FieldDiff, WorldDump, diff_dumps};
use crate::num::Frame;
use crate::random::Stream;
use crate::replay::{Recorder, Replay, ReplayError};
use crate::session::{LocalMatch, MatchConfig, NetConditions, RollbackDriver, SessionError};
use crate::world::{Game, Subsystem, World};
use core::fmt;
use std::path::{Path, PathBuf};

/// What the harness asks the game's world builder for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Players in the run (the world's [`WorldConfig::players`](crate::WorldConfig::players)
    /// must be this).
    pub players: usize,
    /// The session seed for the world's configuration.
    pub seed: u64,
}

/// The harness's bounds and where it writes replays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuzzConfig {
    /// The fewest players a case has (at least 1).
    pub min_players: usize,
    /// The most players a case has (at most 4, at least `min_players`).
    pub max_players: usize,
    /// The fewest frames a case runs (at least 1).
    pub min_frames: u32,
    /// The most frames a case runs.
    pub max_frames: u32,
    /// The prediction window: the deepest rollback of the rollback run and the peers' GGRS
    /// prediction window (1 to 16).
    pub max_prediction: usize,
    /// Frames between the keyframes of the recorded replays (at least 1): the diff of a
    /// peer's divergence is taken at the first keyframe after it.
    pub keyframe_interval: u32,
    /// Run the emulated peers (the slowest of the four runs).
    pub peers: bool,
    /// Let a case make a player quit the peers' match (which turns that player's input into
    /// the default input with the status `Disconnected` on the survivors).
    pub departures: bool,
    /// Shrink findings (cut the frames, try fewer players: a few more runs per finding).
    pub shrink: bool,
    /// Where a finding's replays (and its bytes) are written; `None` writes nothing.
    pub replay_dir: Option<PathBuf>,
}

impl Default for FuzzConfig {
    fn default() -> Self {
        FuzzConfig {
            min_players: 2,
            max_players: 4,
            min_frames: 16,
            max_frames: 240,
            max_prediction: 8,
            keyframe_interval: 8,
            peers: true,
            departures: true,
            shrink: true,
            replay_dir: None,
        }
    }
}

/// Everything a byte string decides (see [`Fuzzer::case`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    /// Players.
    pub players: usize,
    /// Frames stepped (and confirmed by the peers).
    pub frames: u32,
    /// The session seed (the world's) and the rollback run's depth seed.
    pub seed: u64,
    /// The deepest rollback of the rollback run (1 to the prediction window).
    pub max_depth: u32,
    /// The peers' input delay (0 to 2; frames before it get the default input in every run).
    pub input_delay: usize,
    /// The network's impairments in the peers' match.
    pub conditions: NetConditions,
    /// The network's seed.
    pub net_seed: u64,
    /// A player quitting the peers' match once frames before the given one are confirmed.
    pub departure: Option<(usize, Frame)>,
}

/// Which two runs differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Comparison {
    /// The run rolled back at random depths differs from the straight run.
    Rollback {
        /// The depth of the rollback after which the re-simulation of the frame differed
        /// (`None`: the frame's first simulation, after earlier rollbacks, differed).
        depth: Option<u32>,
    },
    /// The straight run's replay, played on a new world, differs from the straight run.
    Replay,
    /// A peer's confirmed frames differ from the straight run's.
    Peer {
        /// The peer's player.
        player: usize,
    },
    /// Two peers' confirmed frames differ (a match with a departure).
    Peers {
        /// The first peer's player.
        a: usize,
        /// The second peer's player.
        b: usize,
    },
    /// A peer's own recording, played on a new world, differs from what the peer computed
    /// (state the recording does not carry, such as state a system keeps outside the snapshot).
    PeerReplay {
        /// The peer's player.
        player: usize,
    },
}

impl Comparison {
    /// A short name for file names and summaries (`rollback`, `replay`, `peer1`, `peers0-2`,
    /// `peer-replay1`).
    pub fn name(&self) -> String {
        match self {
            Comparison::Rollback { .. } => "rollback".into(),
            Comparison::Replay => "replay".into(),
            Comparison::Peer { player } => format!("peer{player}"),
            Comparison::Peers { a, b } => format!("peers{a}-{b}"),
            Comparison::PeerReplay { player } => format!("peer-replay{player}"),
        }
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Comparison::Rollback { depth: Some(d) } => {
                write!(f, "re-simulation after a {d}-frame rollback vs straight run")
            }
            Comparison::Rollback { depth: None } => {
                write!(f, "first simulation in the rolled-back run vs straight run")
            }
            Comparison::Replay => write!(f, "replay of the straight run vs straight run"),
            Comparison::Peer { player } => write!(f, "peer {player} vs straight run"),
            Comparison::Peers { a, b } => write!(f, "peer {b} vs peer {a}"),
            Comparison::PeerReplay { player } => {
                write!(f, "replay of peer {player}'s recording vs peer {player}")
            }
        }
    }
}

/// A determinism bug: two runs of the same inputs that differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Which runs differ.
    pub comparison: Comparison,
    /// The first frame whose state (checksum) differs.
    pub frame: Frame,
    /// The frame before which the two states were diffed (`frame + 1`, or the first keyframe
    /// after `frame` when only keyframes of a run are known).
    pub diff_frame: Option<Frame>,
    /// The subsystems that differ there.
    pub subsystems: Vec<Subsystem>,
    /// The differing fields (left: the reference run, right: the diverging run).
    pub diffs: Vec<FieldDiff>,
    /// The case the (shrunk) bytes describe.
    pub case: Case,
    /// The (shrunk) byte string: [`Fuzzer::run`] on it finds this again (if the bug is
    /// reproducible at all).
    pub bytes: Vec<u8>,
    /// The byte string the finding was found with.
    pub original: Vec<u8>,
    /// The straight run's replay, if written.
    pub straight_replay: Option<PathBuf>,
    /// The diverging run's replay (its checksums, and its diverged state as a keyframe), if
    /// written: verifying it names the same frame and fields.
    pub diverging_replay: Option<PathBuf>,
    /// The byte string's file, if written.
    pub bytes_file: Option<PathBuf>,
}

impl Finding {
    /// The entity slots named by the diff.
    pub fn entities(&self) -> Vec<u32> {
        let mut out: Vec<u32> = self.diffs.iter().filter_map(|d| d.entity).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether the diff names `field` of `item` (an attribute, tag or column record name, as
    /// [`FieldDiff::item`]; `""` matches any item). `field` matches the field and the fields
    /// inside it (`base` matches `base.bits`).
    pub fn names(&self, item: &str, field: &str) -> bool {
        self.diffs.iter().any(|d| {
            let f = d.field.strip_prefix(field);
            (item.is_empty() || d.item == item)
                && f.is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        })
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.case;
        writeln!(f, "desync: {} first differs at frame {}", self.comparison, self.frame)?;
        write!(
            f,
            "  case: {} players, {} frames, seed {}, rollback depth ≤ {}, input delay {}, loss {}%, jitter {} ms, reorder {}%",
            c.players,
            c.frames,
            c.seed,
            c.max_depth,
            c.input_delay,
            c.conditions.loss_percent,
            c.conditions.jitter_ms,
            c.conditions.reorder_percent
        )?;
        if let Some((p, at)) = c.departure {
            write!(f, ", player {p} quits after frame {at}")?;
        }
        writeln!(f)?;
        if !self.subsystems.is_empty() {
            let names: Vec<&str> = self.subsystems.iter().map(|s| s.name()).collect();
            writeln!(f, "  subsystems: {}", names.join(", "))?;
        }
        if let Some(k) = self.diff_frame {
            writeln!(f, "  state before frame {k} (left: reference, right: diverging):")?;
        }
        for d in self.diffs.iter().take(12) {
            writeln!(f, "    {d}")?;
        }
        if self.diffs.len() > 12 {
            writeln!(f, "    … and {} more fields", self.diffs.len() - 12)?;
        }
        if let Some(p) = &self.straight_replay {
            writeln!(f, "  straight run's replay:  {}", p.display())?;
        }
        if let Some(p) = &self.diverging_replay {
            writeln!(f, "  diverging run's replay: {}", p.display())?;
        }
        if let Some(p) = &self.bytes_file {
            writeln!(f, "  bytes: {}", p.display())?;
        }
        Ok(())
    }
}

/// Why the harness could not run a case (not a finding: the game or the machine failed).
#[derive(Debug)]
#[non_exhaustive]
pub enum FuzzError {
    /// The world builder failed.
    Build(String),
    /// The world builder returned a world that was not at frame 0 or had another player
    /// count than asked for.
    Setup(String),
    /// The peers' session failed.
    Session(SessionError),
    /// A replay could not be encoded, decoded, started or written.
    Replay(ReplayError),
}

impl fmt::Display for FuzzError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FuzzError::Build(e) => write!(f, "the world builder failed: {e}"),
            FuzzError::Setup(e) => write!(f, "the world builder's world does not fit: {e}"),
            FuzzError::Session(e) => write!(f, "the peers' session failed: {e}"),
            FuzzError::Replay(e) => write!(f, "replay: {e}"),
        }
    }
}

impl std::error::Error for FuzzError {}

impl From<SessionError> for FuzzError {
    fn from(e: SessionError) -> Self {
        FuzzError::Session(e)
    }
}

impl From<ReplayError> for FuzzError {
    fn from(e: ReplayError) -> Self {
        FuzzError::Replay(e)
    }
}

/// The bytes [`Fuzzer::case`] reads before the inputs.
pub const HEADER_LEN: usize = 16;

/// Frames kept after the first divergence when a finding is shrunk and its replays cut.
const AFTER_DIVERGENCE: u32 = 4;

type Build<G> = dyn Fn(&Setup) -> Result<World<G>, String>;
type InputFn<G> = dyn Fn(&[u8]) -> <G as Game>::Input;

/// The harness: a game's world builder, its input decoder and the bounds (see the module
/// documentation).
pub struct Fuzzer<G: Game> {
    build: Box<Build<G>>,
    input: Box<InputFn<G>>,
    config: FuzzConfig,
}

impl<G: Game> fmt::Debug for Fuzzer<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fuzzer").field("config", &self.config).finish()
    }
}

/// The straight run: the reference.
struct Straight {
    replay: Replay,
    checksums: Vec<u64>,
    /// The state after each frame.
    states: Vec<Vec<u8>>,
}

/// A divergence found by one comparison, before it becomes a [`Finding`].
struct Diverged {
    comparison: Comparison,
    frame: Frame,
    diff_frame: Option<Frame>,
    diffs: Vec<FieldDiff>,
    /// The diverging run as a replay.
    replay: Replay,
}

impl<G: Game> Fuzzer<G> {
    /// A harness building worlds with `build(setup)`, which must return a world at frame 0 with
    /// `setup.players` players, the same world for the same setup (content, hooks,
    /// configuration with `setup.seed`, entities, player bindings).
    pub fn new<E: fmt::Display>(
        build: impl Fn(&Setup) -> Result<World<G>, E> + 'static,
    ) -> Fuzzer<G> {
        Fuzzer {
            build: Box::new(move |s| build(s).map_err(|e| e.to_string())),
            input: Box::new(|b| {
                let mut buf = vec![0u8; core::mem::size_of::<G::Input>()];
                let n = buf.len().min(b.len());
                buf[..n].copy_from_slice(&b[..n]);
                bytemuck::pod_read_unaligned(&buf)
            }),
            config: FuzzConfig::default(),
        }
    }

    /// Turns bytes into one player's input with `input` (it gets `size_of::<G::Input>()`
    /// bytes; the default reads the input type's own bytes). Use it to keep inputs in the
    /// range the game's own input code produces.
    pub fn with_input(mut self, input: impl Fn(&[u8]) -> G::Input + 'static) -> Fuzzer<G> {
        self.input = Box::new(input);
        self
    }

    /// Sets the bounds.
    pub fn with_config(mut self, config: FuzzConfig) -> Fuzzer<G> {
        self.config = config;
        self
    }

    /// The bounds.
    pub fn config(&self) -> &FuzzConfig {
        &self.config
    }

    /// The bounds, mutably (for instance to set [`FuzzConfig::replay_dir`]).
    pub fn config_mut(&mut self) -> &mut FuzzConfig {
        &mut self.config
    }

    fn players_range(&self) -> (usize, usize) {
        let lo = self.config.min_players.clamp(1, 4);
        (lo, self.config.max_players.clamp(lo, 4))
    }

    fn frames_range(&self) -> (u32, u32) {
        let lo = self.config.min_frames.max(1);
        (lo, self.config.max_frames.max(lo))
    }

    fn window(&self) -> usize {
        self.config.max_prediction.clamp(1, 16)
    }

    /// What a byte string describes. The first [`HEADER_LEN`] bytes choose the players, the
    /// frames, the seed, the rollback depth, the input delay, the network and a departure;
    /// the rest are the inputs, read cyclically: frame `f`'s input of player `p` is taken at
    /// `(4 f + p) × size_of::<G::Input>()`, so fewer players or frames keep the others'
    /// inputs. Bytes past the end read as zeros.
    pub fn case(&self, bytes: &[u8]) -> Case {
        let b = |i: usize| bytes.get(i).copied().unwrap_or(0);
        let (pmin, pmax) = self.players_range();
        let players = pmin + usize::from(b(0)) % (pmax - pmin + 1);
        let (fmin, fmax) = self.frames_range();
        let raw_frames = u32::from(u16::from_le_bytes([b(1), b(2)]));
        let frames = fmin + raw_frames % (fmax - fmin + 1);
        let max_depth = 1 + u32::from(b(3)) % self.window() as u32;
        let seed = u64::from(u32::from_le_bytes([b(4), b(5), b(6), b(7)]));
        let input_delay = usize::from(b(8) % 3);
        let conditions = NetConditions {
            latency_ms: u32::from(b(9) % 4) * 10,
            jitter_ms: u32::from(b(10) % 121),
            loss_percent: u32::from(b(11) % 31),
            duplicate_percent: u32::from(b(12) % 11),
            reorder_percent: u32::from(b(13) % 21),
        };
        let net_seed = u64::from(b(14));
        let d = b(15);
        let departure = (self.config.departures && self.config.peers && players > 2 && d & 3 == 3)
            .then(|| {
                let player = usize::from(d >> 2) % players;
                let at = frames / 4 + (frames / 2) * u32::from(d >> 4) / 16;
                (player, at.max(1))
            });
        Case { players, frames, seed, max_depth, input_delay, conditions, net_seed, departure }
    }

    /// Every frame's inputs of a case.
    fn inputs(&self, case: &Case, bytes: &[u8]) -> Vec<Vec<G::Input>> {
        let size = core::mem::size_of::<G::Input>();
        let rest = bytes.get(HEADER_LEN..).unwrap_or(&[]);
        let mut chunk = vec![0u8; size];
        (0..case.frames as usize)
            .map(|f| {
                (0..case.players)
                    .map(|p| {
                        if f < case.input_delay || rest.is_empty() {
                            return G::Input::default();
                        }
                        let at = (4 * f + p) * size;
                        for (k, c) in chunk.iter_mut().enumerate() {
                            *c = rest[(at + k) % rest.len()];
                        }
                        (self.input)(&chunk)
                    })
                    .collect()
            })
            .collect()
    }

    fn build(&self, case: &Case) -> Result<World<G>, FuzzError> {
        let setup = Setup { players: case.players, seed: case.seed };
        let world = (self.build)(&setup).map_err(FuzzError::Build)?;
        if world.next_frame() != 0 {
            return Err(FuzzError::Setup(format!(
                "the world is at frame {}, not 0 (replays and peers start at frame 0)",
                world.next_frame()
            )));
        }
        if world.players() != case.players {
            return Err(FuzzError::Setup(format!(
                "the world has {} players, the harness asked for {}",
                world.players(),
                case.players
            )));
        }
        Ok(world)
    }

    /// A byte string for iteration `iteration` of a campaign seeded with `seed`: the header and
    /// 0 to 1024 input bytes, uniformly random. What [`Fuzzer::campaign`] runs; a plain test
    /// runs a bounded number of them.
    pub fn bytes_for(seed: u64, iteration: u64) -> Vec<u8> {
        let mut s = Stream::derive(seed, &[crate::random::salt::FUZZ_ITERATION, iteration]);
        let len = HEADER_LEN + s.below(1025) as usize;
        (0..len).map(|_| s.next_u32() as u8).collect()
    }

    /// Runs [`Fuzzer::bytes_for`]`(seed, i)` for `i` in `0..iterations` (calling
    /// `progress(i)` before each) until the first finding.
    pub fn campaign(
        &self,
        seed: u64,
        iterations: u64,
        mut progress: impl FnMut(u64),
    ) -> Result<Option<(u64, Finding)>, FuzzError> {
        for i in 0..iterations {
            progress(i);
            if let Some(f) = self.run(&Self::bytes_for(seed, i))? {
                return Ok(Some((i, f)));
            }
        }
        Ok(None)
    }

    /// Runs the case `bytes` describes straight, rolled back, as a replay and as peers, and
    /// returns the first divergence (shrunk, its replays written if
    /// [`FuzzConfig::replay_dir`] is set), or `None` when every run agrees.
    pub fn run(&self, bytes: &[u8]) -> Result<Option<Finding>, FuzzError> {
        let case = self.case(bytes);
        let Some(found) = self.run_case(&case, bytes)? else { return Ok(None) };
        let (mut case, mut found, mut shrunk) = (case, found, bytes.to_vec());
        if self.config.shrink {
            for candidate in self.shrink_candidates(&case, found.frame, bytes) {
                let c = self.case(&candidate);
                if let Some(again) = self.run_case(&c, &candidate)? {
                    (case, found, shrunk) = (c, again, candidate);
                }
            }
        }
        self.finish(case, found, shrunk, bytes)
    }

    /// Byte strings of smaller cases: the frames cut to the divergence plus a few, then each
    /// smaller player count (each tried on the last accepted cut would be better, but every
    /// try is a full run: two at most).
    fn shrink_candidates(&self, case: &Case, frame: Frame, bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut base = bytes.to_vec();
        if base.len() < HEADER_LEN {
            base.resize(HEADER_LEN, 0);
        }
        let (fmin, _) = self.frames_range();
        let mut out = Vec::new();
        let frames = (frame + 1 + AFTER_DIVERGENCE).max(fmin);
        if frames < case.frames {
            let mut b = base.clone();
            let raw = u16::try_from(frames - fmin).unwrap_or(u16::MAX);
            b[1..3].copy_from_slice(&raw.to_le_bytes());
            base = b.clone();
            out.push(b);
        }
        if case.players > self.players_range().0 {
            // Byte 0 chooses `min_players + b % span`: 0 is the fewest.
            let mut b = base;
            b[0] = 0;
            out.push(b);
        }
        out
    }

    fn run_case(&self, case: &Case, bytes: &[u8]) -> Result<Option<Diverged>, FuzzError> {
        let inputs = self.inputs(case, bytes);
        let straight = self.straight(case, &inputs)?;
        if let Some(d) = self.rollback(case, &inputs, &straight)? {
            return Ok(Some(d));
        }
        if let Some(d) = self.replayed(case, &straight)? {
            return Ok(Some(d));
        }
        if self.config.peers {
            return self.peers(case, &inputs, &straight);
        }
        Ok(None)
    }

    fn straight(&self, case: &Case, inputs: &[Vec<G::Input>]) -> Result<Straight, FuzzError> {
        let mut world = self.build(case)?;
        let mut rec = Recorder::new(&world, self.config.keyframe_interval.max(1));
        let mut checksums = Vec::with_capacity(inputs.len());
        let mut states = Vec::with_capacity(inputs.len());
        for (f, frame_inputs) in inputs.iter().enumerate() {
            if rec.keyframe_due(f as Frame) {
                rec.keyframe(&world);
            }
            world.step(frame_inputs.as_slice());
            let sum = world.checksum();
            rec.push(f as Frame, frame_inputs, sum)?;
            checksums.push(sum);
            states.push(world.state_bytes());
        }
        Ok(Straight { replay: rec.finish(), checksums, states })
    }

    /// The field diff of two states before `frame` of worlds like `world`.
    fn diff(world: &World<G>, frame: Frame, left: &[u8], right: &[u8]) -> Vec<FieldDiff> {
        let base = WorldDump::of_world(world);
        let dump = |bytes: &[u8]| WorldDump { frame, bytes: bytes.to_vec(), ..base.clone() };
        diff_dumps(&dump(left), &dump(right), Some(world.content())).unwrap_or_default()
    }

    /// A divergence of a run replaying the straight run's inputs: frames before `frame` had the
    /// straight run's checksums, `frame` had `checksum`, and `state` is the diverged state after
    /// it (of a world like `world`).
    fn diverged_from_straight(
        comparison: Comparison,
        frame: Frame,
        straight: &Straight,
        world: &World<G>,
        state: Vec<u8>,
        checksum: u64,
    ) -> Diverged {
        let f = frame as usize;
        let diffs = straight
            .states
            .get(f)
            .map(|s| Self::diff(world, frame + 1, s, &state))
            .unwrap_or_default();
        let mut replay = straight.replay.clone();
        replay.frames.truncate(f + 1 + AFTER_DIVERGENCE as usize);
        for (i, fr) in replay.frames.iter_mut().enumerate() {
            match i.cmp(&f) {
                core::cmp::Ordering::Less => {}
                core::cmp::Ordering::Equal => fr.checksum = checksum,
                core::cmp::Ordering::Greater => fr.checksum = 0,
            }
        }
        replay.keyframes.retain(|(k, _)| *k <= frame);
        replay.keyframes.push((frame + 1, state));
        Diverged { comparison, frame, diff_frame: Some(frame + 1), diffs, replay }
    }

    /// [`Fuzzer::diverged_from_straight`] with `world` as the diverged state.
    fn world_diverged(
        comparison: Comparison,
        frame: Frame,
        straight: &Straight,
        world: &World<G>,
    ) -> Diverged {
        let (state, sum) = (world.state_bytes(), world.checksum());
        Self::diverged_from_straight(comparison, frame, straight, world, state, sum)
    }

    fn rollback(
        &self,
        case: &Case,
        inputs: &[Vec<G::Input>],
        straight: &Straight,
    ) -> Result<Option<Diverged>, FuzzError> {
        let mut world = self.build(case)?;
        let mut driver = RollbackDriver::new(&world, case.max_depth, case.seed);
        let mut fill = |f: Frame, buf: &mut Vec<G::Input>| {
            if let Some(i) = inputs.get(f as usize) {
                buf.extend_from_slice(i);
            }
        };
        let mut watch =
            Watch { straight: &straight.checksums, newest: 0, depth: None, found: None };
        for f in 0..straight.checksums.len() {
            let r = driver.advance_observed(&mut world, &mut fill, |_| {}, &mut watch);
            if let Some((frame, depth, state, sum)) = watch.found.take() {
                let c = Comparison::Rollback { depth };
                return Ok(Some(Self::diverged_from_straight(
                    c, frame, straight, &world, state, sum,
                )));
            }
            // Every simulation agreed with the straight run: a re-simulation cannot differ
            // from a first simulation, nor the state after the batch. Kept as a safety net.
            if let Err(d) = r {
                let c = Comparison::Rollback { depth: Some(d.depth) };
                return Ok(Some(Self::world_diverged(c, d.frame, straight, &world)));
            }
            if world.checksum() != straight.checksums[f] {
                let c = Comparison::Rollback { depth: None };
                return Ok(Some(Self::world_diverged(c, f as Frame, straight, &world)));
            }
        }
        Ok(None)
    }

    fn replayed(&self, case: &Case, straight: &Straight) -> Result<Option<Diverged>, FuzzError> {
        let replay = Replay::decode(&straight.replay.encode())?;
        let mut world = self.build(case)?;
        replay.start(&mut world)?;
        for (f, want) in straight.checksums.iter().enumerate() {
            world.step(replay.inputs::<G>(f as Frame).as_slice());
            if world.checksum() != *want {
                let c = Comparison::Replay;
                return Ok(Some(Self::world_diverged(c, f as Frame, straight, &world)));
            }
        }
        Ok(None)
    }

    fn peers(
        &self,
        case: &Case,
        inputs: &[Vec<G::Input>],
        straight: &Straight,
    ) -> Result<Option<Diverged>, FuzzError> {
        let config = MatchConfig {
            players: case.players,
            input_delay: case.input_delay,
            max_prediction: self.window(),
            desync_interval: 0,
            conditions: case.conditions,
            net_seed: case.net_seed,
            ..MatchConfig::default()
        };
        let mut worlds = Vec::with_capacity(case.players);
        for _ in 0..case.players {
            worlds.push(self.build(case)?);
        }
        worlds.reverse();
        // `LocalMatch::new` builds exactly one world per player.
        let mut m = LocalMatch::new(config, |_| {
            worlds.pop().expect("one world was built for every player")
        })?;
        for p in m.peers_mut() {
            p.runner.record(self.config.keyframe_interval.max(1));
        }
        m.synchronize()?;
        let input = |p: usize, f: Frame, _: &World<G>| {
            inputs.get(f as usize).and_then(|i| i.get(p)).copied().unwrap_or_default()
        };
        if let Some((player, at)) = case.departure {
            m.run(at.min(case.frames), input)?;
            m.quit(player)?;
        }
        m.run(case.frames, input)?;
        let recordings: Vec<(usize, Replay)> = m
            .peers()
            .iter()
            .filter(|p| !p.has_left())
            .filter_map(|p| p.runner.recorder().map(|r| (p.handle, r.replay().clone())))
            .collect();
        let frames = case.frames as usize;
        let world = self.build(case)?;
        if case.departure.is_none() {
            for (player, rec) in &recordings {
                let n = rec.frames.len().min(frames);
                let first = (0..n).find(|f| rec.frames[*f].checksum != straight.checksums[*f]);
                if let Some(f) = first {
                    let c = Comparison::Peer { player: *player };
                    return Ok(Some(Self::diverged_keyframes(c, f, &world, &straight.replay, rec)));
                }
            }
            return Ok(None);
        }
        if let Some(((a, ra), rest)) = recordings.split_first() {
            for (b, rb) in rest {
                let n = ra.frames.len().min(rb.frames.len()).min(frames);
                if let Some(f) = (0..n).find(|f| ra.frames[*f].checksum != rb.frames[*f].checksum) {
                    let c = Comparison::Peers { a: *a, b: *b };
                    return Ok(Some(Self::diverged_keyframes(c, f, &world, ra, rb)));
                }
            }
        }
        for (player, rec) in recordings {
            let mut world = self.build(case)?;
            let v = rec.verify(&mut world)?;
            if let Some(frame) = v.first_divergence {
                let mut replay = rec;
                replay.frames.truncate(frame as usize + 1 + AFTER_DIVERGENCE as usize);
                let last = replay.frames.len() as Frame;
                replay.keyframes.retain(|(k, _)| *k <= last);
                return Ok(Some(Diverged {
                    comparison: Comparison::PeerReplay { player },
                    frame,
                    diff_frame: v.diff_frame,
                    diffs: v.diffs,
                    replay,
                }));
            }
        }
        Ok(None)
    }

    /// A divergence between two recordings at `frame`, diffed at the first keyframe after it
    /// both have.
    fn diverged_keyframes(
        comparison: Comparison,
        frame: usize,
        world: &World<G>,
        left: &Replay,
        right: &Replay,
    ) -> Diverged {
        let after = right.keyframes.iter().find(|(k, _)| *k as usize > frame).and_then(|(k, r)| {
            left.keyframes.iter().find(|(kl, _)| kl == k).map(|(_, l)| (*k, l, r))
        });
        let (diff_frame, diffs) = match after {
            Some((k, l, r)) => (Some(k), Self::diff(world, k, l, r)),
            None => (None, Vec::new()),
        };
        let mut replay = right.clone();
        let keep = diff_frame.map_or(frame + 1, |k| k as usize).max(frame + 1);
        replay.frames.truncate(keep + AFTER_DIVERGENCE as usize);
        replay.keyframes.retain(|(k, _)| diff_frame.is_none_or(|d| *k <= d));
        Diverged { comparison, frame: frame as Frame, diff_frame, diffs, replay }
    }

    fn finish(
        &self,
        case: Case,
        found: Diverged,
        bytes: Vec<u8>,
        original: &[u8],
    ) -> Result<Option<Finding>, FuzzError> {
        let mut subsystems: Vec<Subsystem> = Vec::new();
        for d in &found.diffs {
            if !subsystems.contains(&d.subsystem) {
                subsystems.push(d.subsystem);
            }
        }
        let mut finding = Finding {
            comparison: found.comparison,
            frame: found.frame,
            diff_frame: found.diff_frame,
            subsystems,
            diffs: found.diffs,
            case,
            bytes,
            original: original.to_vec(),
            straight_replay: None,
            diverging_replay: None,
            bytes_file: None,
        };
        if let Some(dir) = &self.config.replay_dir {
            let inputs = self.inputs(&case, &finding.bytes);
            let straight = self.straight(&case, &inputs)?;
            let stem = format!("fuzz-{:016x}", twox_hash::XxHash3_64::oneshot(&finding.bytes));
            let (s, d, b) = write_finding(dir, &stem, &straight.replay, &found.replay, &finding)?;
            finding.straight_replay = Some(s);
            finding.diverging_replay = Some(d);
            finding.bytes_file = Some(b);
        }
        Ok(Some(finding))
    }
}

/// Compares every simulation of the rollback run (first and re-simulated) with the straight
/// run and keeps the first that differs: its frame, the depth of the rollback it was
/// re-simulated after (`None`: a first simulation), its state and checksum.
struct Watch<'a> {
    straight: &'a [u64],
    /// The newest frame simulated for the first time.
    newest: Frame,
    /// The depth of the rollback being re-simulated, if one is.
    depth: Option<u32>,
    found: Option<(Frame, Option<u32>, Vec<u8>, u64)>,
}

impl<G: Game> crate::observe::BatchObserver<G> for Watch<'_> {
    fn loaded(&mut self, frame: Frame) {
        self.depth = Some(self.newest.saturating_sub(frame) + 1);
    }

    fn advanced(&mut self, world: &World<G>) {
        let frame = world.next_frame().saturating_sub(1);
        if self.depth.is_none() {
            self.newest = frame;
        }
        let sum = world.checksum();
        let differs = self.straight.get(frame as usize).is_some_and(|want| *want != sum);
        if differs && self.found.is_none() {
            self.found = Some((frame, self.depth, world.state_bytes(), sum));
        }
    }

    fn batch_end(&mut self, _: &World<G>, _: Option<Frame>) {
        self.depth = None;
    }
}

fn write_finding(
    dir: &Path,
    stem: &str,
    straight: &Replay,
    diverging: &Replay,
    finding: &Finding,
) -> Result<(PathBuf, PathBuf, PathBuf), ReplayError> {
    std::fs::create_dir_all(dir).map_err(|e| ReplayError::io(dir, &e))?;
    let s = dir.join(format!("{stem}-straight.replay"));
    let d = dir.join(format!("{stem}-{}.replay", finding.comparison.name()));
    let b = dir.join(format!("{stem}.bytes"));
    straight.write(&s)?;
    diverging.write(&d)?;
    std::fs::write(&b, &finding.bytes).map_err(|e| ReplayError::io(&b, &e))?;
    Ok((s, d, b))
}
