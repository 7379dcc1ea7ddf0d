//! Match drivers: [`DuelMatch`] plays a whole match in one process over the in-memory
//! emulated network ([`LocalMatch`]); [`DuelPeer`] plays one peer under any GGRS P2P session;
//! [`NetPeer`](super::NetPeer) plays one peer as a
//! [`MatchPeer`](rollback_abilities::session::MatchPeer) over any transport that carries the
//! rejoin protocol (the example's `--udp` mode runs one per OS process).
//!
//! Either can make one player leave mid-match ([`MatchOptions::leave`]): its peer stops (the
//! emulated peer is cut off the network, the `--udp` process exits), the survivors wait for it
//! for their departure time, agree on the last frame of its input
//! ([`SessionEvent::Left`](rollback_abilities::session::SessionEvent::Left)) and play on to the end.
//! [`DuelMatch`] and [`NetPeer`](super::NetPeer)s can also make a player leave and come back
//! into its own slot ([`MatchOptions::rejoin`]; [`LocalMatch::rejoin`],
//! [`MatchPeer::rejoin`](rollback_abilities::session::MatchPeer::rejoin)).

use super::report::{Comeback, CueCounter, MatchReport, PeerSummary};
use super::{Duel, Input, MAX_FIGHTERS, bot_input, try_new_world};
use core::fmt;
use ggrs::{NonBlockingSocket, P2PSession, PlayerType};
use rollback_abilities::WorldError;
use rollback_abilities::num::Frame;
use rollback_abilities::present::{CueDirector, Presenter};
use rollback_abilities::replay::{Replay, ReplayError};
use rollback_abilities::session::{
    Address, Batch, GgrsConfig, Guard, LocalMatch, MatchConfig, NetConditions, Runner,
    SessionConfig, SessionError, SessionEvent,
};
use std::collections::VecDeque;

/// Frames between keyframe snapshots in the replay peer's replay (for seeking and divergence
/// diffs).
const KEYFRAME_INTERVAL: u32 = 600;
/// The GGRS prediction window.
pub(super) const MAX_PREDICTION: usize = 8;
/// The desync detection interval in frames.
const DESYNC_INTERVAL: u32 = 10;
/// Emulated ticks (16 ms each) a [`DuelMatch`] peer waits on a silent player before it leaves
/// the match: two seconds of emulated time, so a `--leave` demo does not wait long.
pub const EMULATED_DEPARTURE_TICKS: u32 = 120;

/// How far back a bot looks, in frames: it decides from the match as it stood this many frames
/// before the frame its peer is about to simulate (200 ms, about a person's reaction time).
///
/// GGRS never lets a peer run more than its prediction window (8 frames) past the last frame
/// it has every input of, and every rollback corrects the frames behind it, so a frame this far
/// back holds only confirmed inputs on every peer, however the network behaves. The bots'
/// inputs, and so the whole match, are then a function of the [`MatchOptions`] (seed, peers,
/// frames, input delay) alone: the same flags give the same match over the emulated network at
/// any latency or loss, and over real UDP on a busy machine.
pub const BOT_REACTION_FRAMES: Frame = 12;

/// What a bot sees: a world that replays its peer's confirmed inputs (the runner's recorder)
/// up to [`BOT_REACTION_FRAMES`] before the peer's frame.
///
/// A peer's own world is a prediction while remote inputs are late; a bot reading it would
/// decide differently depending on packet timing, and a `--udp` match would not repeat. This
/// view never holds a predicted frame.
#[derive(Debug)]
pub struct BotView {
    world: rollback_abilities::World<Duel>,
    /// The view's state before each of its latest frames, newest last (at most
    /// [`VIEW_HISTORY`]): a member of a match that takes a player back starts over from the
    /// state before the agreed frame F, behind frames its view may already have replayed.
    /// Kept only in a match with a rejoin ([`MatchOptions::rejoin`]): no other frame moves back.
    past: VecDeque<(Frame, Vec<u8>)>,
    keeps_past: bool,
    /// The frame the view was [resumed](BotView::resume) at (0: from the match's start): the
    /// earliest state it can read.
    floor: Frame,
    late: u64,
}

/// How many of its latest states a [`BotView`] keeps: more than a peer's frame can move back
/// when it starts a rejoin's new session (it runs at most a few prediction windows past F).
const VIEW_HISTORY: usize = 4 * (BOT_REACTION_FRAMES as usize + MAX_PREDICTION);

impl BotView {
    /// A view of the match `options` describe, at its start.
    pub fn new(options: &MatchOptions) -> Result<BotView, MatchError> {
        Ok(BotView {
            world: try_new_world(options.seed, options.peers)?,
            past: VecDeque::new(),
            keeps_past: options.rejoin.is_some(),
            floor: 0,
            late: 0,
        })
    }

    /// Keeps the view's latest states from now on, as in a match with a rejoin: for a peer
    /// whose match may take a player back at any time (a [`NetPeer`](super::NetPeer) adopted
    /// from a [`MatchPeer`](rollback_abilities::session::MatchPeer) built elsewhere).
    pub(super) fn keep_past(&mut self) {
        self.keeps_past = true;
    }

    /// Starts the view over from `world`'s state, the state before the frame a player who came
    /// back into the match plays on from (F): a restarted program holds nothing older. Its
    /// bot decides the inputs of its first [`BOT_REACTION_FRAMES`] frames after F from that
    /// state, the earliest it has (the same on every run that comes back at F), and the later
    /// ones as every bot does, from the confirmed inputs since
    /// ([`BotView::catch_up_confirmed`]).
    pub fn resume(&mut self, world: &rollback_abilities::World<Duel>) -> Result<(), MatchError> {
        self.world.load_bytes(&world.state_bytes()).map_err(|e| {
            MatchError::InvalidOptions(format!("the state a player came back with: {e}"))
        })?;
        self.past.clear();
        self.floor = world.next_frame();
        Ok(())
    }

    /// [`BotView::catch_up`] for a peer whose runner records nothing (a player who came back
    /// into the match and [resumed](BotView::resume) its view): moves the view to
    /// [`BOT_REACTION_FRAMES`] before `runner`'s next frame, stepping the inputs `runner`
    /// confirmed ([`Runner::confirmed_inputs`]).
    pub fn catch_up_confirmed(&mut self, runner: &Runner<Duel>) {
        let target = runner.world().next_frame().saturating_sub(BOT_REACTION_FRAMES);
        let log = runner.confirmed_inputs();
        let mut i = log.partition_point(|(f, _)| *f < self.world.next_frame());
        while self.world.next_frame() < target
            && let Some((f, inputs)) = log.get(i)
            && *f == self.world.next_frame()
        {
            self.world.step(inputs);
            i += 1;
            self.remember();
        }
    }

    /// Moves the view to [`BOT_REACTION_FRAMES`] before `runner`'s next frame, replaying the
    /// confirmed inputs its recorder holds (the runner must record: [`Runner::record`]).
    pub fn catch_up(&mut self, runner: &Runner<Duel>) {
        self.catch_up_with(runner.world().next_frame(), runner);
    }

    /// [`BotView::catch_up`] for a peer whose runner records nothing (in the duel, a player who
    /// came back into the match): moves the view to [`BOT_REACTION_FRAMES`]
    /// before `next_frame`, the peer's next frame, replaying the confirmed inputs `source`
    /// recorded — another peer of the same match, whose confirmed timeline is the same (the
    /// report checks it).
    pub fn catch_up_with(&mut self, next_frame: Frame, source: &Runner<Duel>) {
        let target = next_frame.saturating_sub(BOT_REACTION_FRAMES);
        let Some(rec) = source.recorder() else { return };
        let target = target.min(rec.next_frame());
        // One frame at a time, keeping each state: `seek` steps forward from where the view is
        // (or from a later keyframe).
        while self.world.next_frame() < target {
            let frame = self.world.next_frame();
            if rec.replay().seek(&mut self.world, frame + 1).is_err()
                || self.world.next_frame() != frame + 1
            {
                return;
            }
            self.remember();
        }
    }

    /// Keeps the view's state (in a match with a rejoin: a member's frame moves back to F when it starts the new session).
    fn remember(&mut self) {
        if self.keeps_past {
            self.past.push_back((self.world.next_frame(), self.world.state_bytes()));
            if self.past.len() > VIEW_HISTORY {
                self.past.pop_front();
            }
        }
    }

    /// The bot input of `player` for `frame`, decided from the view.
    pub fn input(&self, options: &MatchOptions, player: usize, frame: Frame) -> Input {
        options.input(&self.world, player, frame)
    }

    /// The bot input of `player` for `frame` (its peer's next frame plus the input delay),
    /// decided from the view at [`BOT_REACTION_FRAMES`] before the peer's next frame: the view
    /// first goes back to it if it is ahead (the peer's frame moved back, see
    /// [`BotView::catch_up`]). Counted as late ([`BotView::late`]) when the view is not there.
    pub fn decide(&mut self, options: &MatchOptions, player: usize, frame: Frame) -> Input {
        let at = frame
            .saturating_sub(options.input_delay as Frame)
            .saturating_sub(BOT_REACTION_FRAMES)
            .max(self.floor);
        if self.world.next_frame() > at
            && let Some(i) = self.past.iter().position(|(f, _)| *f == at)
            && self.world.load_bytes(&self.past[i].1).is_ok()
        {
            self.past.truncate(i + 1);
        }
        if self.world.next_frame() != at {
            self.late += 1;
        }
        self.input(options, player, frame)
    }

    /// Inputs the bot decided ([`BotView::decide`]) from a view that was not at its frame
    /// because the recorder had not confirmed it yet; 0 in every match the crate has measured.
    /// Non-zero would mean the bot decided from another frame than [`BOT_REACTION_FRAMES`]
    /// before its peer's, and the match would no longer be a function of the options alone.
    /// A tick whose input the peer does not use (it holds the match for a player coming back
    /// and feeds the default input) does not count.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// The frame the view is at (the next frame it would simulate).
    pub fn frame(&self) -> Frame {
        self.world.next_frame()
    }
}

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
    /// `Some((player, frame))`: that player's peer leaves the match once its world has
    /// simulated `frame` (`--leave PLAYER@FRAME`; a [`DuelPeer`] also waits for its first
    /// confirmed frame, see [`DuelPeer::should_leave`]); the others play on without it. See
    /// [`parse_leave`] and the [module documentation](super#departures).
    pub leave: Option<(usize, Frame)>,
    /// `Some(plan)`: that player's peer leaves the match once its world has simulated
    /// `plan.leave` and comes back into its own slot once the others have confirmed the frames
    /// before `plan.back` (`--rejoin PLAYER@LEAVE:BACK`). Played by [`DuelMatch`] (the rejoin
    /// protocol inside [`LocalMatch`]) and by [`NetPeer`](super::NetPeer)s (a
    /// [`MatchPeer`](rollback_abilities::session::MatchPeer) each, the example's `--udp` mode),
    /// not by a [`DuelPeer`]. See [`parse_rejoin`] and the
    /// [module documentation](super#rejoins).
    pub rejoin: Option<RejoinPlan>,
}

/// A player who leaves the match and comes back into its own slot ([`MatchOptions::rejoin`],
/// `--rejoin PLAYER@LEAVE:BACK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RejoinPlan {
    /// The player.
    pub player: usize,
    /// Its peer leaves once its world has simulated this frame.
    pub leave: Frame,
    /// It asks to come back once every peer in the match has confirmed the frames before this
    /// one (a frame of the others' timeline); the members then agree on the frame it comes back
    /// at, F, at or a little after it.
    pub back: Frame,
}

impl fmt::Display for RejoinPlan {
    /// `PLAYER@LEAVE:BACK`, as `--rejoin` takes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}:{}", self.player, self.leave, self.back)
    }
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
            leave: None,
            rejoin: None,
        }
    }
}

/// Parses `--leave`'s value, `PLAYER@FRAME` (for example `1@600`: player 1 leaves once its
/// world has simulated frame 600). The range is checked by [`MatchOptions::validate`].
///
/// ```
/// use rollback_abilities_kit::duel::parse_leave;
/// assert_eq!(parse_leave("1@600").unwrap(), (1, 600));
/// let err = parse_leave("1-600").unwrap_err().to_string();
/// assert!(err.contains("--leave") && err.contains("PLAYER@FRAME"), "{err}");
/// ```
pub fn parse_leave(value: &str) -> Result<(usize, Frame), MatchError> {
    let bad = |why: &str| {
        MatchError::InvalidOptions(format!(
            "--leave expects PLAYER@FRAME, for example 1@600 (player 1 leaves after frame \
             600), not {value:?}: {why}"
        ))
    };
    let Some((player, frame)) = value.trim().split_once('@') else {
        return Err(bad("there is no '@'"));
    };
    let player = player
        .trim()
        .parse::<usize>()
        .map_err(|_| bad("PLAYER is not a player number (0, 1, ...)"))?;
    let frame = frame
        .trim()
        .parse::<Frame>()
        .map_err(|_| bad("FRAME is not a frame number (0, 1, ...)"))?;
    Ok((player, frame))
}

/// Parses `--rejoin`'s value, `PLAYER@LEAVE:BACK` (for example `1@300:600`: player 1 leaves
/// once its world has simulated frame 300 and comes back once the others have reached frame
/// 600). The ranges are checked by [`MatchOptions::validate`].
///
/// ```
/// use rollback_abilities_kit::duel::{RejoinPlan, parse_rejoin};
/// assert_eq!(parse_rejoin("1@300:600").unwrap(), RejoinPlan { player: 1, leave: 300, back: 600 });
/// let err = parse_rejoin("1@300").unwrap_err().to_string();
/// assert!(err.contains("--rejoin") && err.contains("PLAYER@LEAVE:BACK"), "{err}");
/// ```
pub fn parse_rejoin(value: &str) -> Result<RejoinPlan, MatchError> {
    let bad = |why: &str| {
        MatchError::InvalidOptions(format!(
            "--rejoin expects PLAYER@LEAVE:BACK, for example 1@300:600 (player 1 leaves after \
             frame 300 and comes back at frame 600), not {value:?}: {why}"
        ))
    };
    let Some((player, frames)) = value.trim().split_once('@') else {
        return Err(bad("there is no '@'"));
    };
    let Some((leave, back)) = frames.split_once(':') else {
        return Err(bad("there is no ':' between LEAVE and BACK"));
    };
    let player = player
        .trim()
        .parse::<usize>()
        .map_err(|_| bad("PLAYER is not a player number (0, 1, ...)"))?;
    let frame = |f: &str, name: &str| {
        f.trim()
            .parse::<Frame>()
            .map_err(|_| bad(&format!("{name} is not a frame number (0, 1, ...)")))
    };
    Ok(RejoinPlan { player, leave: frame(leave, "LEAVE")?, back: frame(back, "BACK")? })
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
        if let Some((player, frame)) = self.leave {
            if player >= self.peers {
                return bad(format!(
                    "--leave {player}@{frame}: there is no player {player} in a {}-peer match \
                     (players are 0 to {})",
                    self.peers,
                    self.peers - 1
                ));
            }
            if frame >= self.frames {
                return bad(format!(
                    "--leave {player}@{frame}: frame {frame} is not in the match (frames are 0 \
                     to {})",
                    self.frames - 1
                ));
            }
        }
        if let Some(plan) = self.rejoin {
            let RejoinPlan { player, leave, back } = plan;
            if player >= self.peers {
                return bad(format!(
                    "--rejoin {plan}: there is no player {player} in a {}-peer match (players \
                     are 0 to {})",
                    self.peers,
                    self.peers - 1
                ));
            }
            for (name, frame) in [("LEAVE", leave), ("BACK", back)] {
                if frame >= self.frames {
                    return bad(format!(
                        "--rejoin {plan}: {name} frame {frame} is not in the match (frames are 0 \
                         to {})",
                        self.frames - 1
                    ));
                }
            }
            if back <= leave {
                return bad(format!(
                    "--rejoin {plan}: BACK ({back}) must come after LEAVE ({leave})"
                ));
            }
            if let Some((leaver, frame)) = self.leave {
                if leaver == player {
                    return bad(format!(
                        "--leave {leaver}@{frame} and --rejoin {plan}: player {player} cannot \
                         both leave for good and come back; give one of them"
                    ));
                }
                if self.peers < 3 {
                    return bad(format!(
                        "--leave {leaver}@{frame} and --rejoin {plan}: with both, no player \
                         of a 2-peer match would be left to let player {player} back in; \
                         use --peers 3 or more"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The duel's session settings: the prediction window, the input delay, desync detection,
    /// the default guard (real time: not paced) and departure time.
    pub fn session_config(&self) -> SessionConfig {
        SessionConfig {
            max_prediction: MAX_PREDICTION,
            input_delay: self.input_delay,
            desync_interval: DESYNC_INTERVAL,
            ..SessionConfig::default()
        }
    }

    /// The player who leaves the match, if one does.
    pub fn leaver(&self) -> Option<usize> {
        self.leave.map(|(p, _)| p)
    }

    /// The player who leaves the match and comes back, if one does.
    pub fn rejoiner(&self) -> Option<usize> {
        self.rejoin.map(|r| r.player)
    }

    /// The peer whose replay the match keeps: the first one in the match from its first frame
    /// to its last (peer 0, unless player 0 leaves or rejoins; a rejoiner's replay starts at
    /// the frame it came back at).
    pub fn replay_peer(&self) -> usize {
        (0..self.peers)
            .find(|p| self.leaver() != Some(*p) && self.rejoiner() != Some(*p))
            .unwrap_or(0)
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

    /// The bot input of `player` in `frame` (the default input from `frames` on), reading
    /// `world` (the drivers pass a [`BotView`]'s world).
    pub fn input(
        &self,
        world: &rollback_abilities::World<Duel>,
        player: usize,
        frame: Frame,
    ) -> Input {
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
    /// An option is valid but the chosen driver cannot play it (`--rejoin` on a [`DuelPeer`]).
    Unsupported(String),
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
            MatchError::Unsupported(m) => write!(f, "not supported: {m}"),
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
    /// The replay of the match's confirmed frames, recorded by peer
    /// [`MatchOptions::replay_peer`] (peer 0 unless player 0 left or came back).
    pub replay: Replay,
}

/// Keyframes every [`KEYFRAME_INTERVAL`] frames on the replay peer, none elsewhere.
pub(super) fn keyframe_interval(options: &MatchOptions, player: usize) -> u32 {
    if player == options.replay_peer() { KEYFRAME_INTERVAL } else { 0 }
}

/// The `SessionEvent::Left` events among `events`: (the players who left, the last frame of
/// their real input).
pub(super) fn lefts(
    events: &[SessionEvent],
) -> impl Iterator<Item = (Vec<usize>, Option<Frame>)> + '_ {
    events.iter().filter_map(|e| match e {
        SessionEvent::Left { players, last_frame, .. } => Some((players.clone(), *last_frame)),
        _ => None,
    })
}

/// The `SessionEvent::Rejoined` events among `events`: (the players back, the frame F their new
/// session started at).
pub(super) fn rejoineds(events: &[SessionEvent]) -> impl Iterator<Item = (Vec<usize>, Frame)> + '_ {
    events.iter().filter_map(|e| match e {
        SessionEvent::Rejoined { players, frame } => Some((players.clone(), *frame)),
        _ => None,
    })
}

/// A runner set up for the duel: recording (keyframes on the replay peer only) and feeding a
/// cue director.
fn duel_runner(options: &MatchOptions, player: usize) -> Result<Runner<Duel>, MatchError> {
    let world = try_new_world(options.seed, options.peers)?;
    let mut runner = Runner::new(world, MAX_PREDICTION, DESYNC_INTERVAL);
    runner.record(keyframe_interval(options, player));
    runner.director = Some(CueDirector::new());
    Ok(runner)
}

/// The replay a runner recorded, cut to the match's frames (a replay that starts past frame 0,
/// a returned player's, keeps its frames before `frames`).
pub(super) fn finished_replay(runner: &mut Runner<Duel>, frames: Frame) -> Replay {
    let mut replay = match runner.take_recorder() {
        Some(r) => r.finish(),
        None => rollback_abilities::replay::Recorder::new(runner.world(), 0).finish(),
    };
    replay.frames.truncate(frames.saturating_sub(replay.first_frame()) as usize);
    replay.keyframes.retain(|(f, _)| *f <= frames);
    replay
}

/// The world checksum after each confirmed frame from `from` on, from a runner's confirmed state
/// checksums (the state before frame `f + 1` is the state after frame `f`), up to the first
/// one it no longer or not yet holds.
pub(super) fn checksums_after(runner: &Runner<Duel>, from: Frame) -> Vec<u64> {
    let sums = runner.confirmed_checksums();
    (from..).map_while(|f| f.checked_add(1).and_then(|next| sums.get(&next)).copied()).collect()
}

/// A whole match in one process: one GGRS P2P session per fighter over the seeded in-memory
/// [`EmulatedNetwork`](rollback_abilities::session::EmulatedNetwork), bots on every peer, a [`CueCounter`]
/// behind every peer's cue director. Deterministic: the same options give the same report.
///
/// With [`MatchOptions::leave`] the leaver's peer [quits](LocalMatch::quit) once its world
/// has simulated the given frame; the survivors agree on the last frame of its input and play
/// on. The match is finished when every survivor has confirmed every frame and reported the
/// departure.
///
/// With [`MatchOptions::rejoin`] the rejoiner's peer quits the same way once its world has
/// simulated `leave`, and once every peer in the match has confirmed the frames before `back`
/// it comes back as a restarted program would ([`LocalMatch::rejoin`] with a fresh world): the
/// members agree on a frame F, send it their state before F, and everyone plays on from F in a
/// new session. Its runner then feeds a new cue director and records no replay (the replay
/// peer's covers the match); its bot decides from the replay peer's confirmed record
/// ([`BotView::catch_up_with`]). The match is finished when, besides, every peer reported
/// the rejoin and the rejoiner has confirmed every frame. A `--leave` departure waits until no
/// rejoin is under way (the rejoin protocol takes departures between rejoins).
///
/// ```
/// use rollback_abilities_kit::duel::{DuelMatch, MatchOptions};
/// let options = MatchOptions { frames: 240, ..MatchOptions::default() };
/// let outcome = DuelMatch::new(options)?.run()?;
/// assert!(outcome.report.checksums_agree());
/// assert!(outcome.report.replay_verified());
/// # Ok::<(), rollback_abilities_kit::duel::MatchError>(())
/// ```
pub struct DuelMatch {
    local: LocalMatch<Duel>,
    counters: Vec<CueCounter>,
    /// Each peer's bot's view of the match.
    views: Vec<BotView>,
    options: MatchOptions,
    ticks: u64,
    /// The frame the leaver's world had simulated when it left.
    left_after: Option<Frame>,
    /// The frame the rejoiner's world had simulated when it left.
    away_after: Option<Frame>,
    /// The rejoiner's summary of its first stay, taken as it asked to come back.
    first_stay: Option<PeerSummary>,
    /// Bytes of the members' state the rejoiner has received (the most seen).
    state_bytes: usize,
}

impl fmt::Debug for DuelMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DuelMatch")
            .field("options", &self.options)
            .field("ticks", &self.ticks)
            .field("confirmed", &self.confirmed())
            .field("left_after", &self.left_after)
            .field("away_after", &self.away_after)
            .field("back", &self.first_stay.is_some())
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
            departure_ticks: EMULATED_DEPARTURE_TICKS,
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
            p.runner.record(keyframe_interval(&options, i));
            p.runner.director = Some(CueDirector::new());
        }
        local.synchronize()?;
        let counters = vec![CueCounter::until(options.frames); options.peers];
        let views = (0..options.peers).map(|_| BotView::new(&options)).collect::<Result<_, _>>()?;
        Ok(DuelMatch {
            local,
            counters,
            views,
            options,
            ticks: 0,
            left_after: None,
            away_after: None,
            first_stay: None,
            state_bytes: 0,
        })
    }

    /// The options.
    pub fn options(&self) -> &MatchOptions {
        &self.options
    }

    /// One tick: every peer adds its bot's input and advances (rolling back as GGRS asks),
    /// then the emulated clock moves by 16 ms. The leaver ([`MatchOptions::leave`]) leaves
    /// right after the tick its world simulates the frame it leaves after (once no rejoin is
    /// under way); the rejoiner ([`MatchOptions::rejoin`]) leaves the same way and asks to
    /// come back after the tick the others have confirmed the frames before its `back`.
    pub fn tick(&mut self) -> Result<(), MatchError> {
        let options = self.options;
        let mut presenters: Vec<&mut dyn Presenter> =
            self.counters.iter_mut().map(|c| c as &mut dyn Presenter).collect();
        let peers = self.local.peers();
        for (view, p) in self.views.iter_mut().zip(peers) {
            if p.has_left() || p.is_rejoining() {
                continue;
            }
            if self.first_stay.is_some() && options.rejoiner() == Some(p.handle) {
                let source = peers.get(options.replay_peer()).unwrap_or(p);
                view.catch_up_with(p.runner.world().next_frame(), &source.runner);
            } else {
                view.catch_up(&p.runner);
            }
        }
        let views = &mut self.views;
        self.local.tick(|p, f, _| views[p].decide(&options, p, f), &mut presenters, |_| {})?;
        self.ticks += 1;
        // A rejoin agrees on a frame with the members it knows: players leave between rejoins.
        let quiet = self.local.peers().iter().all(|p| p.has_left() || !p.rejoin_under_way());
        if let Some((player, frame)) = options.leave
            && self.left_after.is_none()
            && quiet
            && let Some(p) = self.local.peers().get(player)
            && p.runner.world().next_frame() > frame
        {
            self.left_after = Some(p.runner.world().next_frame() - 1);
            // The player quits: its peer tells the others, who agree on its last frame at once.
            self.local.quit(player)?;
        }
        if let Some(plan) = options.rejoin {
            self.rejoin_step(plan, quiet)?;
        }
        if self.ticks > u64::from(options.frames) * 20 + 20_000 {
            return Err(MatchError::Stalled { confirmed: self.confirmed() });
        }
        Ok(())
    }

    /// The rejoiner's part of a tick: it quits after `plan.leave`, asks to come back once the
    /// others have confirmed the frames before `plan.back`, and counts the state it receives.
    fn rejoin_step(&mut self, plan: RejoinPlan, quiet: bool) -> Result<(), MatchError> {
        let player = plan.player;
        let Some(p) = self.local.peers().get(player) else { return Ok(()) };
        if self.away_after.is_none() {
            if quiet && p.runner.world().next_frame() > plan.leave {
                self.away_after = Some(p.runner.world().next_frame() - 1);
                self.local.quit(player)?;
            }
            return Ok(());
        }
        if self.first_stay.is_some() {
            if p.is_rejoining() {
                self.state_bytes = self.state_bytes.max(p.rejoin_progress().0);
            }
            return Ok(());
        }
        if self.confirmed_in_match() < plan.back {
            return Ok(());
        }
        // What its first stay came to, before the restarted program replaces its runner.
        let mut first = PeerSummary::of(player, &p.runner, &self.counters[player]);
        first.left_after = self.away_after;
        self.first_stay = Some(first);
        let world = try_new_world(self.options.seed, self.options.peers)?;
        self.local.rejoin(player, world)?;
        if let Some(p) = self.local.peers_mut().get_mut(player) {
            p.runner.director = Some(CueDirector::new());
        }
        self.counters[player] = CueCounter::until(self.options.frames);
        Ok(())
    }

    /// Frames confirmed on every peer in the match (not away, not coming back), uncapped.
    fn confirmed_in_match(&self) -> Frame {
        self.local
            .peers()
            .iter()
            .filter(|p| !p.has_left() && !p.is_rejoining())
            .map(|p| p.confirmed_frame().map_or(0, |c| c + 1))
            .min()
            .unwrap_or(0)
    }

    /// Frames confirmed on every peer still in the match (at most the match's frames).
    pub fn confirmed(&self) -> Frame {
        self.confirmed_in_match().min(self.options.frames)
    }

    /// Whether the leaver (if any) has left.
    pub fn has_left(&self) -> bool {
        self.left_after.is_some()
    }

    /// Whether the rejoiner ([`MatchOptions::rejoin`]) has come back into the match.
    pub fn has_rejoined(&self) -> bool {
        self.first_stay.is_some()
            && self
                .options
                .rejoiner()
                .and_then(|r| self.local.peers().get(r))
                .is_some_and(|p| !p.has_left() && !p.is_rejoining())
    }

    /// Whether every peer still in the match has confirmed every frame of the match and, when
    /// a player left, reported its departure ([`SessionEvent::Left`]); when a player left and
    /// came back, whether it is back, every peer reported its return
    /// ([`SessionEvent::Rejoined`]) and its state after the match's last frame is confirmed.
    pub fn is_finished(&self) -> bool {
        let frames = self.options.frames;
        let peers = self.local.peers();
        // A session whose remote players all left confirms frames it has not simulated yet:
        // the recorder holds the frames actually confirmed.
        let recorded = |p: &rollback_abilities::session::LocalPeer<Duel>| {
            p.runner.recorder().is_none_or(|r| r.next_frame() >= frames)
        };
        if !self.local.all_confirmed(frames)
            || !peers.iter().filter(|p| !p.has_left()).all(recorded)
        {
            return false;
        }
        let rejoiner = self.options.rejoiner();
        // The peers in the match from its first frame to its last.
        let mut whole = peers.iter().filter(|p| !p.has_left() && rejoiner != Some(p.handle));
        if let Some(leaver) = self.options.leaver()
            && !(self.has_left()
                && whole.all(|p| lefts(p.events()).any(|(players, _)| players.contains(&leaver))))
        {
            return false;
        }
        let Some(rejoiner) = rejoiner else { return true };
        let Some(r) = peers.get(rejoiner) else { return false };
        self.has_rejoined()
            && peers
                .iter()
                .filter(|p| !p.has_left())
                .all(|p| rejoineds(p.events()).any(|(players, _)| players.contains(&rejoiner)))
            && r.runner.confirmed_checksums().last_key_value().is_some_and(|(f, _)| *f >= frames)
    }

    /// Rollbacks so far, over all peers.
    pub fn rollbacks(&self) -> u64 {
        self.local.peers().iter().map(|p| p.runner.stats().rollbacks).sum()
    }

    /// The peers (their runners, worlds and sessions).
    pub fn local(&self) -> &LocalMatch<Duel> {
        &self.local
    }

    /// Ticks until the match [is finished](DuelMatch::is_finished), then
    /// [`DuelMatch::finish`]es.
    pub fn run(mut self) -> Result<MatchOutcome, MatchError> {
        while !self.is_finished() {
            self.tick()?;
        }
        self.finish()
    }

    /// Gathers the peers' summaries (the leaver's too, marked as left; the rejoiner's over both
    /// its stays, see [`PeerSummary::and_then`]) and the replay peer's replay and builds the
    /// report (which re-verifies the replay).
    pub fn finish(self) -> Result<MatchOutcome, MatchError> {
        let options = self.options;
        let (left_after, away_after, state_bytes) =
            (self.left_after, self.away_after, self.state_bytes);
        let mut first_stay = self.first_stay;
        let mut peers = self.local.into_peers();
        let summaries: Vec<PeerSummary> = peers
            .iter()
            .zip(&self.counters)
            .zip(&self.views)
            .map(|((p, c), v)| {
                let mut s = PeerSummary::of(p.handle, &p.runner, c);
                s.bot_late = v.late();
                s.departures = lefts(p.events()).collect();
                s.rejoins = rejoineds(p.events()).collect();
                if options.leaver() == Some(p.handle) {
                    s.left_after = left_after;
                }
                if options.rejoiner() != Some(p.handle) {
                    return s;
                }
                let back = s.rejoins.iter().rev().find(|(players, _)| players == &[p.handle]);
                match (first_stay.take(), back) {
                    (Some(first), Some((_, frame))) if !p.has_left() => {
                        let frame = *frame;
                        let comeback = Comeback {
                            frame,
                            checksums: checksums_after(&p.runner, frame),
                            state_bytes,
                        };
                        first.and_then(s, comeback)
                    }
                    (first, _) => {
                        // Not back (yet): its first stay is all it played.
                        let mut first = first.unwrap_or(s);
                        first.left_after = away_after;
                        first
                    }
                }
            })
            .collect();
        let replay = match peers.get_mut(options.replay_peer()).filter(|p| !p.has_left()) {
            Some(p) => finished_replay(&mut p.runner, options.frames),
            None => return Err(MatchError::InvalidOptions("no peer stayed in the match".into())),
        };
        let report = MatchReport::build(options, Transport::Emulated, summaries, &replay)?;
        Ok(MatchOutcome { report, replay })
    }
}

/// One peer of a duel under any GGRS P2P session (UDP, WebRTC…): its runner (recording, cue
/// director) and the [`CueCounter`] its director feeds. Start the session on a socket with
/// [`DuelPeer::start_session`] (the socket behind a
/// [`GuardedSocket`](rollback_abilities::session::GuardedSocket), GGRS built with the duel's
/// [`DuelPeer::session_config`], the guard attached), or, for a matchbox session (already
/// guarded), [attach](DuelPeer::attach_guard) its guard; then call [`DuelPeer::advance`] once
/// per tick.
#[derive(Debug)]
pub struct DuelPeer {
    runner: Runner<Duel>,
    counter: CueCounter,
    view: BotView,
    player: usize,
    options: MatchOptions,
    /// The departures this peer's runner reported (`SessionEvent::Left`).
    departures: Vec<(Vec<usize>, Option<Frame>)>,
    /// Set when this peer left ([`DuelPeer::leave`]): the frame its world had simulated.
    left_after: Option<Frame>,
    /// The runner's session events not yet drained ([`DuelPeer::drain_events`]; the newest
    /// [`MAX_PEER_EVENTS`] are kept).
    events: Vec<SessionEvent>,
}

/// The most undrained session events a [`DuelPeer`] keeps.
const MAX_PEER_EVENTS: usize = 256;

impl DuelPeer {
    /// The peer controlling `player`.
    pub fn new(options: MatchOptions, player: usize) -> Result<DuelPeer, MatchError> {
        options.validate()?;
        if let Some(plan) = options.rejoin {
            return Err(MatchError::Unsupported(format!(
                "--rejoin {plan}: a DuelPeer plays one GGRS session, and a rejoin starts new \
                 ones; play it with NetPeers (a MatchPeer each) or a DuelMatch"
            )));
        }
        if player >= options.peers {
            return Err(MatchError::InvalidOptions(format!(
                "player {player} does not exist in a {}-fighter match",
                options.peers
            )));
        }
        let runner = duel_runner(&options, player)?;
        let counter = CueCounter::until(options.frames);
        let view = BotView::new(&options)?;
        Ok(DuelPeer {
            runner,
            counter,
            view,
            player,
            options,
            departures: Vec::new(),
            left_after: None,
            events: Vec::new(),
        })
    }

    /// The duel's session settings: the prediction window, the input delay, desync detection,
    /// the default guard (real time: not paced).
    pub fn session_config(&self) -> SessionConfig {
        self.options.session_config()
    }

    /// Starts this peer's P2P session on `socket` ([`SessionConfig::start_p2p`]: the socket
    /// behind a guard, GGRS built with [`DuelPeer::session_config`], the guard attached to
    /// this peer's runner). `players` lists every player with its kind (this peer's `Local`).
    pub fn start_session<A: Address, S: NonBlockingSocket<A> + 'static>(
        &mut self,
        socket: S,
        players: impl IntoIterator<Item = (usize, PlayerType<A>)>,
    ) -> Result<P2PSession<GgrsConfig<Duel, A>>, MatchError> {
        let (session, _) = self.session_config().start_p2p(&mut self.runner, socket, players)?;
        Ok(session)
    }

    /// Attaches the guard of an already guarded session's socket to the runner (a
    /// `rollback_abilities::session::MatchboxSession`'s, with the `matchbox` feature; see
    /// [`Runner::attach_guard`]): faults, stalls and the departure
    /// agreement.
    pub fn attach_guard<A: Address>(&mut self, guard: Guard<A>) {
        self.runner.attach_guard(guard);
    }

    /// Ticks without a frame advancing after which a silent remote player leaves the match
    /// (see [`Runner::set_departure_ticks`]).
    pub fn set_departure_ticks(&mut self, ticks: u32) {
        self.runner.set_departure_ticks(ticks);
    }

    /// One tick: the bot's input for the local player, advance, fulfil GGRS's requests,
    /// reconcile cues. A tick GGRS refuses (too far ahead of a remote peer) is `skipped`.
    pub fn advance<A: Address>(
        &mut self,
        session: &mut P2PSession<GgrsConfig<Duel, A>>,
    ) -> Result<Batch, MatchError> {
        self.advance_with(session, None, None)
    }

    /// [`DuelPeer::advance`] with the local player's input given instead of the bot's when
    /// `input` is `Some` (a person at the keyboard, a scripted input: the input for
    /// [`DuelPeer::input_frame`]), and the cues also presented to `presenter` when given (a
    /// page drawing them; this peer's [`CueCounter`] still counts every call). The
    /// `browser_duel` example plays the duel in a browser with it.
    pub fn advance_with<A: Address>(
        &mut self,
        session: &mut P2PSession<GgrsConfig<Duel, A>>,
        input: Option<Input>,
        presenter: Option<&mut dyn Presenter>,
    ) -> Result<Batch, MatchError> {
        let input = match input {
            Some(input) => input,
            None => {
                self.view.catch_up(&self.runner);
                // The input is for the frame it will apply to, after the input delay.
                let frame = self.input_frame();
                self.view.decide(&self.options, self.player, frame)
            }
        };
        let (runner, player) = (&mut self.runner, self.player);
        let batch = with_counter(&mut self.counter, presenter, |presenter| {
            runner.advance_p2p(session, &[(player, input)], Some(presenter), |_| {})
        })?;
        let events = self.runner.drain_events();
        self.departures.extend(lefts(&events));
        self.events.extend(events);
        if self.events.len() > MAX_PEER_EVENTS {
            self.events.drain(..self.events.len() - MAX_PEER_EVENTS);
        }
        Ok(batch)
    }

    /// The session events of the ticks since the last call (GGRS's wait recommendations,
    /// departures, desyncs, refused messages…; at most the newest 256).
    pub fn drain_events(&mut self) -> Vec<SessionEvent> {
        core::mem::take(&mut self.events)
    }

    /// The frame the local input given now applies to: the next frame plus the input delay
    /// (GGRS delays local inputs).
    pub fn input_frame(&self) -> Frame {
        self.runner.world().next_frame() + self.options.input_delay as Frame
    }

    /// The player this peer controls.
    pub fn player(&self) -> usize {
        self.player
    }

    /// The match's options.
    pub fn options(&self) -> &MatchOptions {
        &self.options
    }

    /// The cue counts so far.
    pub fn cue_counter(&self) -> &CueCounter {
        &self.counter
    }

    /// Frames confirmed and recorded so far.
    pub fn confirmed(&self) -> Frame {
        self.runner.recorder().map_or(0, |r| r.next_frame())
    }

    /// Whether this peer is the leaver ([`MatchOptions::leave`]) and its world has simulated
    /// the frame it leaves after: stop advancing it and call [`DuelPeer::leave`]. It also waits
    /// for its first confirmed frame: every other peer has then sent input, so all of them
    /// finished synchronising (a peer still synchronising with a closed program would wait for
    /// it forever: the departure rule only runs once a session runs).
    pub fn should_leave(&self) -> bool {
        self.left_after.is_none()
            && self.confirmed() > 0
            && self
                .options
                .leave
                .is_some_and(|(p, f)| p == self.player && self.runner.world().next_frame() > f)
    }

    /// Leaves the match: tells the other peers (they agree on this player's last frame at once,
    /// see [`Runner::leave_match`]) and marks this peer as having left; it must not advance any
    /// more.
    pub fn quit<A: Address>(
        &mut self,
        session: &mut P2PSession<GgrsConfig<Duel, A>>,
    ) -> Result<(), MatchError> {
        self.runner.leave_match(session)?;
        self.leave();
        Ok(())
    }

    /// Marks this peer as having left the match (its summary says so); it must not advance
    /// any more.
    pub fn leave(&mut self) {
        if self.left_after.is_none() {
            self.left_after = Some(self.runner.world().next_frame().saturating_sub(1));
        }
    }

    /// Whether this peer left the match.
    pub fn has_left(&self) -> bool {
        self.left_after.is_some()
    }

    /// The departures this peer's runner reported so far: the players who left and the last
    /// frame of their real input the survivors agreed on.
    pub fn departures(&self) -> &[(Vec<usize>, Option<Frame>)] {
        &self.departures
    }

    /// Whether every frame of the match is confirmed and, when another player leaves
    /// ([`MatchOptions::leave`]), its departure is settled (reported as
    /// [`SessionEvent::Left`]).
    pub fn is_finished(&self) -> bool {
        if self.confirmed() < self.options.frames {
            return false;
        }
        match self.options.leaver() {
            Some(leaver) if leaver != self.player => {
                self.departures.iter().any(|(players, _)| players.contains(&leaver))
            }
            _ => true,
        }
    }

    /// The runner.
    pub fn runner(&self) -> &Runner<Duel> {
        &self.runner
    }

    /// What this peer reports.
    pub fn summary(&self) -> PeerSummary {
        let mut s = PeerSummary::of(self.player, &self.runner, &self.counter);
        s.bot_late = self.view.late();
        s.departures.clone_from(&self.departures);
        s.left_after = self.left_after;
        s
    }

    /// The recorded replay, cut to the match's frames (recording stops).
    pub fn take_replay(&mut self) -> Replay {
        finished_replay(&mut self.runner, self.options.frames)
    }
}

/// Runs `f` with a peer's cue counter as its presenter, and `extra` fed the same calls after
/// the counter when given (a page drawing the cues).
pub(super) fn with_counter<R>(
    counter: &mut CueCounter,
    extra: Option<&mut dyn Presenter>,
    f: impl FnOnce(&mut dyn Presenter) -> R,
) -> R {
    match extra {
        Some(extra) => f(&mut Tee(counter, extra)),
        None => f(counter),
    }
}

/// Two presenters fed the same calls, in order.
struct Tee<'a>(&'a mut dyn Presenter, &'a mut dyn Presenter);

impl Presenter for Tee<'_> {
    fn play(&mut self, cue: &rollback_abilities::present::Cue) {
        self.0.play(cue);
        self.1.play(cue);
    }
    fn cancel(&mut self, cue: &rollback_abilities::present::Cue) {
        self.0.cancel(cue);
        self.1.cancel(cue);
    }
    fn on_active(&mut self, cue: &rollback_abilities::present::Cue) {
        self.0.on_active(cue);
        self.1.on_active(cue);
    }
    fn while_active(&mut self, cue: &rollback_abilities::present::Cue) {
        self.0.while_active(cue);
        self.1.while_active(cue);
    }
    fn removed(
        &mut self,
        cue: &rollback_abilities::present::Cue,
        reason: rollback_abilities::present::RemoveReason,
    ) {
        self.0.removed(cue, reason);
        self.1.removed(cue, reason);
    }
    fn confirmed(&mut self, cue: &rollback_abilities::present::Cue) {
        self.0.confirmed(cue);
        self.1.confirmed(cue);
    }
    fn retimed(
        &mut self,
        from: &rollback_abilities::present::Cue,
        to: &rollback_abilities::present::Cue,
    ) {
        self.0.retimed(from, to);
        self.1.retimed(from, to);
    }
    fn happened(&mut self, cue: &rollback_abilities::present::Cue) {
        self.0.happened(cue);
        self.1.happened(cue);
    }
}
