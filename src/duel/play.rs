//! Match drivers: [`DuelMatch`] plays a whole match in one process over the in-memory
//! emulated network ([`LocalMatch`]); [`DuelPeer`] plays one peer under any GGRS P2P session
//! (the example's `--udp` mode runs one per OS process).

use super::report::{CueCounter, MatchReport, PeerSummary};
use super::{Duel, Input, MAX_FIGHTERS, bot_input, try_new_world};
use crate::cue::{CueDirector, Presenter};
use crate::num::Frame;
use crate::replay::{Replay, ReplayError};
use crate::session::{
    Address, Batch, GgrsConfig, LocalMatch, MatchConfig, NetConditions, Runner, SessionError,
};
use crate::world::WorldError;
use core::fmt;
use ggrs::P2PSession;

/// Frames between keyframe snapshots in peer 0's replay (for seeking and divergence diffs).
const KEYFRAME_INTERVAL: u32 = 600;
/// The GGRS prediction window.
const MAX_PREDICTION: usize = 8;
/// The desync detection interval in frames.
const DESYNC_INTERVAL: u32 = 10;

/// How a match is played.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MatchOptions {
    /// Fighters, one peer each (2 to 4).
    pub peers: usize,
    /// Frames to play (60 per second of game time).
    pub frames: Frame,
    /// The seed of the world's random streams, the bots and the emulated network.
    pub seed: u64,
    /// Emulated one-way latency in milliseconds.
    pub latency_ms: u32,
    /// Emulated extra random latency, `0..=jitter_ms` per packet.
    pub jitter_ms: u32,
    /// Emulated packet loss in percent.
    pub loss_percent: u32,
    /// GGRS input delay in frames.
    pub input_delay: usize,
}

impl Default for MatchOptions {
    /// Two peers, one minute of game time, a mediocre network: 40 ms + 0–12 ms, 5 % loss,
    /// 2 frames of input delay.
    fn default() -> Self {
        MatchOptions {
            peers: 2,
            frames: 3600,
            seed: 1,
            latency_ms: 40,
            jitter_ms: 12,
            loss_percent: 5,
            input_delay: 2,
        }
    }
}

impl MatchOptions {
    /// Checks every option's range; the message names the option and says what is allowed.
    pub fn validate(&self) -> Result<(), MatchError> {
        let bad = |m: String| Err(MatchError::InvalidOptions(m));
        if !(2..=MAX_FIGHTERS).contains(&self.peers) {
            return bad(format!("peers must be 2 to {MAX_FIGHTERS}, not {}", self.peers));
        }
        if self.frames == 0 || self.frames > 1_000_000 {
            return bad(format!("frames must be 1 to 1000000, not {}", self.frames));
        }
        if self.latency_ms > 1000 {
            return bad(format!("latency must be at most 1000 ms, not {}", self.latency_ms));
        }
        if self.jitter_ms > 1000 {
            return bad(format!("jitter must be at most 1000 ms, not {}", self.jitter_ms));
        }
        if self.loss_percent > 90 {
            return bad(format!("loss must be 0 to 90 %, not {}", self.loss_percent));
        }
        if self.input_delay > 15 {
            return bad(format!("input delay must be 0 to 15 frames, not {}", self.input_delay));
        }
        Ok(())
    }

    /// The emulated network's conditions.
    pub fn conditions(&self) -> NetConditions {
        NetConditions {
            latency_ms: self.latency_ms,
            jitter_ms: self.jitter_ms,
            loss_percent: self.loss_percent,
            duplicate_percent: 0,
            reorder_percent: 0,
        }
    }

    /// The bot input of `player` in `frame` (the default input from `frames` on).
    pub fn input(&self, world: &crate::world::World<Duel>, player: usize, frame: Frame) -> Input {
        if frame < self.frames {
            bot_input(world, player, frame, self.seed)
        } else {
            Input::default()
        }
    }
}

/// How the peers talked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Transport {
    /// The in-memory emulated network of one process ([`DuelMatch`]).
    Emulated,
    /// UDP on 127.0.0.1, one OS process per peer.
    Udp,
}

/// Why a match could not be played.
#[derive(Debug)]
#[non_exhaustive]
pub enum MatchError {
    /// An option is out of range.
    InvalidOptions(String),
    /// The world could not be built.
    World(WorldError),
    /// A GGRS session failed.
    Session(SessionError),
    /// The replay could not be verified.
    Replay(ReplayError),
    /// The peers stopped making progress (for example, every packet is lost).
    Stalled {
        /// Frames confirmed on every peer when the match gave up.
        confirmed: Frame,
    },
}

impl fmt::Display for MatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchError::InvalidOptions(m) => write!(f, "invalid option: {m}"),
            MatchError::World(e) => write!(f, "cannot build the duel world: {e}"),
            MatchError::Session(e) => write!(f, "session: {e}"),
            MatchError::Replay(e) => write!(f, "replay: {e}"),
            MatchError::Stalled { confirmed } => write!(
                f,
                "the match stalled after {confirmed} confirmed frames (the network delivers too little)"
            ),
        }
    }
}

impl std::error::Error for MatchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MatchError::World(e) => Some(e),
            MatchError::Session(e) => Some(e),
            MatchError::Replay(e) => Some(e),
            _ => None,
        }
    }
}

impl From<WorldError> for MatchError {
    fn from(e: WorldError) -> Self {
        MatchError::World(e)
    }
}

impl From<SessionError> for MatchError {
    fn from(e: SessionError) -> Self {
        MatchError::Session(e)
    }
}

impl From<ReplayError> for MatchError {
    fn from(e: ReplayError) -> Self {
        MatchError::Replay(e)
    }
}

impl From<ggrs::GgrsError> for MatchError {
    fn from(e: ggrs::GgrsError) -> Self {
        MatchError::Session(SessionError::Ggrs(e))
    }
}

/// What a finished match gives back.
#[derive(Debug)]
pub struct MatchOutcome {
    /// The report.
    pub report: MatchReport,
    /// Peer 0's replay of the match's confirmed frames.
    pub replay: Replay,
}

/// A runner set up for the duel: recording (keyframes on peer 0 only) and feeding a cue
/// director.
fn duel_runner(options: &MatchOptions, player: usize) -> Result<Runner<Duel>, MatchError> {
    let world = try_new_world(options.seed, options.peers)?;
    let mut runner = Runner::new(world, MAX_PREDICTION, DESYNC_INTERVAL);
    runner.record(if player == 0 { KEYFRAME_INTERVAL } else { 0 });
    runner.director = Some(CueDirector::new());
    Ok(runner)
}

/// The replay a runner recorded, cut to the match's frames.
fn finished_replay(runner: &mut Runner<Duel>, frames: Frame) -> Replay {
    let mut replay = match runner.take_recorder() {
        Some(r) => r.finish(),
        None => crate::replay::Recorder::new(runner.world(), 0).finish(),
    };
    replay.frames.truncate(frames as usize);
    replay.keyframes.retain(|(f, _)| *f <= frames);
    replay
}

/// A whole match in one process: one GGRS P2P session per fighter over the seeded in-memory
/// [`EmulatedNetwork`](crate::session::EmulatedNetwork), bots on every peer, a [`CueCounter`]
/// behind every peer's cue director. Deterministic: the same options give the same report.
///
/// ```
/// use rollback_abilities::duel::{DuelMatch, MatchOptions};
/// let options = MatchOptions { frames: 240, ..MatchOptions::default() };
/// let outcome = DuelMatch::new(options)?.run()?;
/// assert!(outcome.report.checksums_agree());
/// assert!(outcome.report.replay_verified());
/// # Ok::<(), rollback_abilities::duel::MatchError>(())
/// ```
pub struct DuelMatch {
    local: LocalMatch<Duel>,
    counters: Vec<CueCounter>,
    options: MatchOptions,
    ticks: u64,
}

impl fmt::Debug for DuelMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DuelMatch")
            .field("options", &self.options)
            .field("ticks", &self.ticks)
            .field("confirmed", &self.confirmed())
            .finish()
    }
}

impl DuelMatch {
    /// Builds the peers and synchronises them.
    pub fn new(options: MatchOptions) -> Result<DuelMatch, MatchError> {
        options.validate()?;
        let config = MatchConfig {
            players: options.peers,
            input_delay: options.input_delay,
            max_prediction: MAX_PREDICTION,
            desync_interval: DESYNC_INTERVAL,
            tick_ms: 16,
            conditions: options.conditions(),
            net_seed: options.seed,
            ..MatchConfig::default()
        };
        // Build every world first so a failure is an error, not a panic inside `LocalMatch`.
        let mut worlds = Vec::with_capacity(options.peers);
        for _ in 0..options.peers {
            worlds.push(try_new_world(options.seed, options.peers)?);
        }
        let mut worlds = worlds.into_iter();
        let mut local = LocalMatch::new(config, |_| match worlds.next() {
            Some(w) => w,
            None => super::new_world(options.seed, options.peers),
        })?;
        for (i, p) in local.peers_mut().iter_mut().enumerate() {
            p.runner.record(if i == 0 { KEYFRAME_INTERVAL } else { 0 });
            p.runner.director = Some(CueDirector::new());
        }
        local.synchronize()?;
        let counters = vec![CueCounter::until(options.frames); options.peers];
        Ok(DuelMatch { local, counters, options, ticks: 0 })
    }

    /// The options.
    pub fn options(&self) -> &MatchOptions {
        &self.options
    }

    /// One tick: every peer adds its bot's input and advances (rolling back as GGRS asks),
    /// then the emulated clock moves by 16 ms.
    pub fn tick(&mut self) -> Result<(), MatchError> {
        let options = self.options;
        let mut presenters: Vec<&mut dyn Presenter> =
            self.counters.iter_mut().map(|c| c as &mut dyn Presenter).collect();
        self.local.tick(|p, f, w| options.input(w, p, f), &mut presenters, |_| {})?;
        self.ticks += 1;
        if self.ticks > u64::from(options.frames) * 20 + 20_000 {
            return Err(MatchError::Stalled { confirmed: self.confirmed() });
        }
        Ok(())
    }

    /// Frames confirmed on every peer (at most the match's frames).
    pub fn confirmed(&self) -> Frame {
        let c = self.local.peers().iter().map(|p| p.session.confirmed_frame()).min().unwrap_or(-1);
        ((c + 1).max(0) as Frame).min(self.options.frames)
    }

    /// Whether every peer has confirmed every frame of the match.
    pub fn is_finished(&self) -> bool {
        self.local.all_confirmed(self.options.frames)
    }

    /// Rollbacks so far, over all peers.
    pub fn rollbacks(&self) -> u64 {
        self.local.peers().iter().map(|p| p.runner.stats().rollbacks).sum()
    }

    /// The peers (their runners, worlds and sessions).
    pub fn local(&self) -> &LocalMatch<Duel> {
        &self.local
    }

    /// Ticks until every frame is confirmed, then [`DuelMatch::finish`]es.
    pub fn run(mut self) -> Result<MatchOutcome, MatchError> {
        while !self.is_finished() {
            self.tick()?;
        }
        self.finish()
    }

    /// Gathers the peers' summaries and peer 0's replay and builds the report (which
    /// re-verifies the replay).
    pub fn finish(self) -> Result<MatchOutcome, MatchError> {
        let options = self.options;
        let mut peers = self.local.into_peers();
        let summaries: Vec<PeerSummary> = peers
            .iter()
            .zip(&self.counters)
            .map(|(p, c)| PeerSummary::of(p.handle, &p.runner, c))
            .collect();
        let replay = match peers.first_mut() {
            Some(p) => finished_replay(&mut p.runner, options.frames),
            None => return Err(MatchError::InvalidOptions("no peers".into())),
        };
        let report = MatchReport::build(options, Transport::Emulated, summaries, &replay)?;
        Ok(MatchOutcome { report, replay })
    }
}

/// One peer of a duel under any GGRS P2P session (UDP, WebRTC…): its runner (recording, cue
/// director) and the [`CueCounter`] its director feeds. Call [`DuelPeer::advance`] once per
/// tick.
#[derive(Debug)]
pub struct DuelPeer {
    runner: Runner<Duel>,
    counter: CueCounter,
    player: usize,
    options: MatchOptions,
}

impl DuelPeer {
    /// The peer controlling `player`.
    pub fn new(options: MatchOptions, player: usize) -> Result<DuelPeer, MatchError> {
        options.validate()?;
        if player >= options.peers {
            return Err(MatchError::InvalidOptions(format!(
                "player {player} does not exist in a {}-fighter match",
                options.peers
            )));
        }
        let runner = duel_runner(&options, player)?;
        let counter = CueCounter::until(options.frames);
        Ok(DuelPeer { runner, counter, player, options })
    }

    /// One tick: the bot's input for the local player, advance, fulfil GGRS's requests,
    /// reconcile cues. A tick GGRS refuses (too far ahead of a remote peer) is `skipped`.
    pub fn advance<A: Address>(
        &mut self,
        session: &mut P2PSession<GgrsConfig<Duel, A>>,
    ) -> Result<Batch, MatchError> {
        let world = self.runner.world();
        // The input is for the frame it will apply to, after the input delay.
        let frame = world.next_frame() + self.options.input_delay as Frame;
        let input = self.options.input(world, self.player, frame);
        let presenter: &mut dyn Presenter = &mut self.counter;
        Ok(self.runner.advance_p2p(session, &[(self.player, input)], Some(presenter), |_| {})?)
    }

    /// Frames confirmed and recorded so far.
    pub fn confirmed(&self) -> Frame {
        self.runner.recorder().map_or(0, |r| r.next_frame())
    }

    /// Whether every frame of the match is confirmed.
    pub fn is_finished(&self) -> bool {
        self.confirmed() >= self.options.frames
    }

    /// The runner.
    pub fn runner(&self) -> &Runner<Duel> {
        &self.runner
    }

    /// What this peer reports.
    pub fn summary(&self) -> PeerSummary {
        PeerSummary::of(self.player, &self.runner, &self.counter)
    }

    /// The recorded replay, cut to the match's frames (recording stops).
    pub fn take_replay(&mut self) -> Replay {
        finished_replay(&mut self.runner, self.options.frames)
    }
}
