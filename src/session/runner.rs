//! GGRS glue: the session `Config`, and a [`Runner`] that fulfils GGRS requests against a
//! [`World`] with allocation-free saves, feeds a cue director and a UI event feed once per
//! batch, records confirmed inputs for replays and turns desyncs into reports.

use super::guard::{Departure, Fault, Guard};
use crate::debug::{DesyncReport, WorldDump};
use crate::num::Frame;
use crate::present::{CueDirector, Presenter};
use crate::replay::{Recorder, Replay};
use crate::ui::EventDirector;
use crate::world::{Checksums, Game, Snapshot, SnapshotRing, Subsystem, World};
use core::fmt;
use core::hash::Hash;
use core::marker::PhantomData;
use ggrs::{
    GgrsError, GgrsEvent, GgrsRequest, InputStatus, P2PSession, SessionState, SpectatorSession,
    SyncTestSession,
};
use std::any::Any;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

/// The address bound GGRS needs.
pub trait Address: Clone + PartialEq + Eq + Hash + Send + Sync + fmt::Debug + 'static {}

impl<T: Clone + PartialEq + Eq + Hash + Send + Sync + fmt::Debug + 'static> Address for T {}

/// The GGRS `Config` of a game: its input, input prediction (repeat the last input), a small
/// saved-state handle (the snapshots themselves stay in the runner's ring), and an address type.
pub struct GgrsConfig<G, A>(PhantomData<(G, A)>);

impl<G, A> fmt::Debug for GgrsConfig<G, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GgrsConfig")
    }
}

/// What GGRS keeps for a saved frame: the frame and its checksum (the bytes are in the ring).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SavedFrame {
    /// The frame.
    pub frame: Frame,
    /// The world checksum (xxh3-64) of the saved state.
    pub checksum: u64,
}

impl<G: Game, A: Address> ggrs::Config for GgrsConfig<G, A> {
    type Input = G::Input;
    type InputPredictor = ggrs::PredictRepeatLast;
    type State = SavedFrame;
    type Address = A;
}

/// The `u128` checksum handed to GGRS: the total checksum in the high 64 bits and 7 bits of
/// each subsystem's checksum in the low bits, so a desync report can name the subsystems that
/// differ from the remote peer's.
pub fn pack_checksum(c: &Checksums) -> u128 {
    let mut low: u64 = 0;
    for (i, p) in c.parts.iter().enumerate() {
        low |= (p & 0x7f) << (7 * i);
    }
    (u128::from(c.total) << 64) | u128::from(low)
}

/// The subsystems whose 7-bit digests differ between two packed checksums (a collision hides a
/// difference with probability 1/128).
pub fn differing_subsystems(local: u128, remote: u128) -> Vec<Subsystem> {
    Subsystem::ALL
        .iter()
        .enumerate()
        .filter(|(i, _)| ((local >> (7 * i)) & 0x7f) != ((remote >> (7 * i)) & 0x7f))
        .map(|(_, s)| *s)
        .collect()
}

/// Why a runner call failed.
#[non_exhaustive]
pub enum SessionError {
    /// GGRS refused (the session is not synchronised, a local input is missing…).
    Ggrs(GgrsError),
    /// GGRS asked to load a frame the ring no longer holds (the ring is too small for the
    /// prediction window).
    MissingSnapshot {
        /// The frame.
        frame: Frame,
    },
    /// A sync test found a mismatch; the report says where.
    SyncTestMismatch(Box<DesyncReport>),
    /// GGRS failed an internal assertion (`during` names the call). The session cannot be used
    /// any more; every later call returns this error again. The world and its snapshots are
    /// intact. With a [`Guard`] attached no known message or network condition leads here; it
    /// is the containment for what is not known.
    GgrsFault {
        /// The GGRS call that failed.
        during: &'static str,
        /// GGRS's panic message.
        message: String,
    },
    /// No frame advanced for this many ticks (every remote peer went silent, or a peer stopped
    /// advancing): reported by [`LocalMatch`](super::LocalMatch) instead of waiting forever.
    Stalled {
        /// The frame the peer is stuck at.
        frame: Frame,
        /// Ticks without progress.
        ticks: u64,
    },
    /// A peer coming back into a match ([`MatchPeer::rejoin`](super::MatchPeer::rejoin)) gave
    /// up: it was not let in within its departure time and
    /// [`GIVE_UP_TICKS`](super::rejoin::GIVE_UP_TICKS) more ticks (the match ended, its members
    /// are gone, or they would not let it in). Every later tick returns this error again.
    RejoinGaveUp {
        /// Whether some member answered it (if none did, the match is most likely gone).
        answered: bool,
    },
    /// The operating system gave no randomness for this peer's match identity (a session
    /// started without keys makes one to learn its peers' on the socket).
    Identity(super::identity::IdentityError),
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Ggrs(e) => write!(f, "GGRS: {e}"),
            SessionError::MissingSnapshot { frame } => {
                write!(
                    f,
                    "GGRS asked to load frame {frame}, which the snapshot ring no longer holds"
                )
            }
            SessionError::SyncTestMismatch(r) => write!(f, "sync test mismatch: {r}"),
            SessionError::GgrsFault { during, message } => {
                write!(f, "GGRS failed inside {during}: {message} (the session is closed)")
            }
            SessionError::Stalled { frame, ticks } => {
                write!(f, "the match stalled at frame {frame}: no progress for {ticks} ticks")
            }
            SessionError::RejoinGaveUp { answered: false } => {
                write!(f, "could not get back into the match: no member of it answered")
            }
            SessionError::RejoinGaveUp { answered: true } => {
                write!(f, "could not get back into the match: its members did not let this peer in")
            }
            SessionError::Identity(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SessionError {}

crate::located::readable_debug!(SessionError);

impl From<GgrsError> for SessionError {
    fn from(e: GgrsError) -> Self {
        SessionError::Ggrs(e)
    }
}

/// What happened in one runner call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// Frames advanced (re-simulated ones included).
    pub advanced: u32,
    /// The depth of the rollback in this batch, if any.
    pub rollback: Option<u32>,
    /// No frame advanced: the session waits for a remote peer (too far ahead of the confirmed
    /// frame, or not synchronised). Wait for the next tick.
    pub skipped: bool,
}

/// Counters of a runner.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RunnerStats {
    /// Frames advanced for the first time.
    pub frames: u64,
    /// Rollbacks (loads).
    pub rollbacks: u64,
    /// Frames re-simulated after loads.
    pub resimulated: u64,
    /// The deepest rollback.
    pub max_rollback: u32,
    /// Sum of rollback depths (for the mean).
    pub rollback_depth_sum: u64,
    /// Batches GGRS refused to advance.
    pub skipped: u64,
    /// Desyncs reported.
    pub desyncs: u64,
}

impl RunnerStats {
    /// The mean rollback depth.
    pub fn mean_rollback(&self) -> f64 {
        if self.rollbacks == 0 {
            0.0
        } else {
            self.rollback_depth_sum as f64 / self.rollbacks as f64
        }
    }
}

/// A session event the runner saw (from GGRS, simplified and address-free).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionEvent {
    /// Synchronised with a peer.
    Synchronized(String),
    /// A peer disconnected (its inputs are now the default input). For a spectator with a
    /// [`Guard`] attached: its host is gone — its guard banned it, or it sent nothing for
    /// [`Runner::set_departure_ticks`] ticks — and no frame will advance any more. Reported once.
    Disconnected(String),
    /// A peer has not been heard from for a while.
    NetworkInterrupted(String),
    /// A peer is back.
    NetworkResumed(String),
    /// GGRS recommends waiting this many frames to let peers catch up (time sync), at most
    /// [`Runner::set_max_wait_frames`] (default: the prediction window): a peer's time-sync
    /// reports can claim any advantage, and a game that obeyed them unbounded would freeze.
    WaitRecommendation(u32),
    /// A desync was detected at this frame (the report is in [`Runner::desync_reports`]).
    Desync(Frame),
    /// A peer sent something the [`Guard`] refused (the message never reached GGRS).
    PeerFault {
        /// The sender.
        peer: String,
        /// What it sent.
        fault: Fault,
    },
    /// No frame has advanced for [`Runner::set_stall_ticks`] ticks: the session is waiting for
    /// the players in `waiting_on` (known when a [`Guard`] is attached). Reported once per stall.
    Stalled {
        /// The frame the peer is stuck at.
        frame: Frame,
        /// Ticks without progress so far.
        ticks: u32,
        /// The players whose inputs the session waits for.
        waiting_on: Vec<usize>,
    },
    /// Frames advance again after a reported stall.
    Resumed {
        /// The frame.
        frame: Frame,
        /// Ticks the stall lasted.
        ticks: u32,
    },
    /// This peer stopped listening to a peer (it went silent for
    /// [`Runner::set_departure_ticks`] ticks, was kicked or misbehaved here, said it leaves, or
    /// another member said it left and it was silent here too) and agrees with the other
    /// survivors on the frame its input ends at.
    Leaving {
        /// The leaver.
        peer: String,
        /// Its players.
        players: Vec<usize>,
    },
    /// The survivors agreed: `players` have their real input through `last_frame` on every
    /// survivor and the disconnected input ([`InputStatus::Disconnected`], the default input)
    /// after it. The match carries on without them.
    Left {
        /// The leaver.
        peer: String,
        /// Its players.
        players: Vec<usize>,
        /// The last frame of their real input (`None`: they never sent any).
        last_frame: Option<Frame>,
    },
    /// A player that left asked to come back and the members hold the match while it gets
    /// their state (see [`rejoin`](super::rejoin)).
    Rejoining {
        /// Its players.
        players: Vec<usize>,
    },
    /// A rejoin was called off (the joiner stalled, a member was busy, the members disagreed):
    /// the match goes on without the player, which may ask again.
    RejoinAborted {
        /// Its players.
        players: Vec<usize>,
    },
    /// A new session started at `frame` with `players` back in the match: on every member and
    /// on the joiner (whose `players` are its own). Their input is theirs again from `frame` on.
    Rejoined {
        /// The players back.
        players: Vec<usize>,
        /// The frame the new session starts at (F).
        frame: Frame,
    },
    /// A member sent two different inputs for its players at one frame, both signed with the
    /// identity it announced: `evidence` proves it to anyone holding that identity
    /// ([`Equivocation::verify`](super::Equivocation::verify)). Reported once per member, the
    /// first time this peer sees it.
    Equivocation {
        /// The member.
        peer: String,
        /// The two signed inputs.
        evidence: Box<super::Equivocation>,
    },
    /// A rejoin message was refused.
    RejoinFault {
        /// The sender (`unknown` when it is no slot's address).
        peer: String,
        /// What was wrong.
        fault: super::rejoin::RejoinFault,
    },
    /// Something happened to a spectator that joined the running match (see
    /// [`late_spectator`](super::late_spectator)): on the member that hosts it, and on the
    /// spectator itself.
    LateSpectator(super::late_spectator::SpectateEvent),
}

/// Keeps snapshots at the desync-detection interval so a desync report can dump the local
/// state of the frame GGRS names (it reports frames after the prediction window has moved on).
struct DesyncKeeper<G: Game> {
    interval: u32,
    slots: Vec<(Option<Frame>, Snapshot<G>)>,
}

/// Runs a [`World`] under a GGRS session (see the [`session`](crate::session) module).
///
/// The runner does not own the session: the caller keeps it (to add players, change the input
/// delay at run time, read network stats, disconnect players) and passes it to
/// [`Runner::advance_p2p`], [`Runner::advance_spectator`] or [`Runner::advance_synctest`] once
/// per tick.
pub struct Runner<G: Game> {
    world: World<G>,
    ring: SnapshotRing<G>,
    /// Latest inputs of frames not yet recorded.
    inputs: BTreeMap<Frame, Vec<(G::Input, InputStatus)>>,
    /// Checksums after stepping each frame (for the recorder).
    after: BTreeMap<Frame, u64>,
    recorded_through: Option<Frame>,
    recorder: Option<Recorder<G>>,
    /// Recordings a membership change could not continue (see [`Runner::set_aside_replays`]).
    set_aside: Vec<Replay>,
    keeper: DesyncKeeper<G>,
    /// The cue director fed once per batch.
    pub director: Option<CueDirector>,
    /// The UI event feed fed once per batch: attribute, effect, ability and execution events
    /// shown once, retracted if mispredicted, confirmed with the session (take its notices with
    /// [`EventDirector::deliver`] or [`EventDirector::drain`] after a tick).
    pub ui_events: Option<EventDirector>,
    stats: RunnerStats,
    events: Vec<SessionEvent>,
    reports: Vec<DesyncReport>,
    desync_dir: Option<PathBuf>,
    report_limit: usize,
    confirmed_log: Vec<(Frame, Vec<G::Input>)>,
    /// A [`Guard<A>`] for the session's address type, when attached.
    guard: Option<Box<dyn Any + Send + Sync>>,
    /// Set once GGRS failed: the session must not be touched again.
    broken: Option<(&'static str, String)>,
    stall_ticks: u32,
    stall_threshold: u32,
    stall_reported: bool,
    /// A spectator's host was reported gone ([`SessionEvent::Disconnected`]).
    host_gone: bool,
    departure_ticks: u32,
    departure_wait: u32,
    departures_seen: u64,
    /// Saves of keyframe frames, final once the frame before them is confirmed.
    pending_keyframes: BTreeMap<Frame, Vec<u8>>,
    /// The cap on [`SessionEvent::WaitRecommendation`].
    max_wait_frames: u32,
    /// The world frame of the session's GGRS frame 0 (0 for the first session; the agreed
    /// frame of the membership change that started it otherwise).
    frame_base: Frame,
    /// Players out of the match when the session started: handed to the game as
    /// [`InputStatus::Disconnected`] with the default input, whatever the session says.
    absent: Vec<usize>,
    /// The pending capture of the confirmed state at a frame (see [`Runner::capture_at`]).
    capture: Option<Capture>,
    /// Checksums of states saved but not yet final, by frame.
    pending_sums: BTreeMap<Frame, u64>,
    /// Checksums of confirmed states (the state before each frame), the newest
    /// [`CONFIRMED_SUMS`].
    confirmed_sums: BTreeMap<Frame, u64>,
    /// A capture for spectators that join the running match: as `capture`, but it changes
    /// nothing of what is recorded or confirmed.
    spectator_capture: Option<Capture>,
    /// Confirmed frames with the statuses they were stepped with, kept for
    /// [`Runner::take_confirmed_frames`] while set.
    tap: Option<Vec<ConfirmedFrame<G::Input>>>,
}

/// A confirmed frame as the game stepped it: its number, every player's input and status (a
/// prediction that proved right as `Confirmed`), and the checksum of the confirmed state before
/// it.
pub type ConfirmedFrame<I> = (Frame, Vec<(I, InputStatus)>, Option<u64>);

/// Confirmed frames a runner keeps for [`Runner::take_confirmed_frames`] between two calls.
const TAP_FRAMES: usize = 1 << 14;

/// A capture of the confirmed state before a frame.
struct Capture {
    frame: Frame,
    /// The latest save of the frame: its bytes and checksum.
    saved: Option<(Vec<u8>, u64)>,
    /// Set once the save is final.
    done: bool,
}

/// Confirmed-state checksums a runner keeps.
const CONFIRMED_SUMS: usize = 1 << 16;

impl<G: Game> fmt::Debug for Runner<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner")
            .field("frame", &self.world.frame())
            .field("stats", &self.stats)
            .finish()
    }
}

/// Undrained session events a runner keeps (the newest).
const MAX_EVENTS: usize = 4096;

/// A GGRS P2P session builder set up the way the crate's guarantees need: `players` players,
/// the prediction window, the input delay, desync detection every `desync_interval` frames (0:
/// off), and GGRS's own disconnect timeout and notice switched off — they run on the wall clock
/// and disconnect each survivor at a different frame. The [`Runner`]'s departure rule (with a
/// [`GuardedSocket`](super::GuardedSocket)) decides instead. Add the players and start the
/// session as usual.
pub fn hardened_builder<C: ggrs::Config>(
    players: usize,
    max_prediction: usize,
    input_delay: usize,
    desync_interval: u32,
) -> Result<ggrs::SessionBuilder<C>, GgrsError> {
    /// A timeout that never fires within a match (a day).
    const NEVER: std::time::Duration = std::time::Duration::from_secs(86_400);
    let detection = if desync_interval == 0 {
        ggrs::DesyncDetection::Off
    } else {
        ggrs::DesyncDetection::On { interval: desync_interval }
    };
    Ok(ggrs::SessionBuilder::<C>::new()
        .with_num_players(players)?
        .with_max_prediction_window(max_prediction)
        .with_input_delay(input_delay)
        .with_disconnect_timeout(NEVER)
        .with_disconnect_notify_delay(NEVER)
        .with_desync_detection_mode(detection))
}

/// Default of [`Runner::set_stall_ticks`].
pub const DEFAULT_STALL_TICKS: u32 = 30;

/// Default of [`Runner::set_departure_ticks`].
pub const DEFAULT_DEPARTURE_TICKS: u32 = 600;

/// How many confirmed input frames a desync report carries.
const REPORT_INPUTS: usize = 600;

impl<G: Game> Runner<G> {
    /// A runner for a world (already set up: entities spawned, players bound) and a session
    /// whose prediction window is `max_prediction`. Desync snapshots are kept every
    /// `desync_interval` frames (match the session's `DesyncDetection::On { interval }`).
    pub fn new(world: World<G>, max_prediction: usize, desync_interval: u32) -> Runner<G> {
        let ring = SnapshotRing::new(&world, max_prediction + 3);
        let keeper = DesyncKeeper {
            interval: desync_interval.max(1),
            slots: (0..4).map(|_| (None, world.snapshot())).collect(),
        };
        Runner {
            world,
            ring,
            inputs: BTreeMap::new(),
            after: BTreeMap::new(),
            recorded_through: None,
            recorder: None,
            set_aside: Vec::new(),
            keeper,
            director: None,
            ui_events: None,
            stats: RunnerStats::default(),
            events: Vec::new(),
            reports: Vec::new(),
            desync_dir: None,
            report_limit: 8,
            confirmed_log: Vec::new(),
            guard: None,
            broken: None,
            stall_ticks: 0,
            stall_threshold: DEFAULT_STALL_TICKS,
            stall_reported: false,
            host_gone: false,
            departure_ticks: DEFAULT_DEPARTURE_TICKS,
            departure_wait: 0,
            departures_seen: 0,
            pending_keyframes: BTreeMap::new(),
            max_wait_frames: u32::try_from(max_prediction).unwrap_or(u32::MAX),
            frame_base: 0,
            absent: Vec::new(),
            capture: None,
            pending_sums: BTreeMap::new(),
            confirmed_sums: BTreeMap::new(),
            spectator_capture: None,
            tap: None,
        }
    }

    /// Captures the confirmed state before world frame `frame` for a spectator that joins the
    /// running match, as [`Runner::capture_at`] does but without holding anything back: frames
    /// from `frame` on are recorded and confirmed as usual. `false` if `frame` is confirmed
    /// already (its state is gone). A membership change ([`Runner::rebase`]) forgets it.
    pub fn capture_for_spectators(&mut self, frame: Frame) -> bool {
        let confirmed = self.recorded_through.map_or(0, |r| r + 1).max(self.frame_base);
        if frame < confirmed || self.capture.as_ref().is_some_and(|c| c.frame <= frame) {
            return false;
        }
        self.spectator_capture = Some(Capture { frame, saved: None, done: false });
        true
    }

    /// The state [`Runner::capture_for_spectators`] asked for (its frame, bytes and checksum)
    /// once final; `None` while it is not, or when no capture is pending.
    pub fn spectator_captured(&self) -> Option<(Frame, &[u8], u64)> {
        let c = self.spectator_capture.as_ref()?;
        let (bytes, sum) = c.saved.as_ref()?;
        c.done.then_some((c.frame, bytes.as_slice(), *sum))
    }

    /// Whether a capture for spectators is pending or final.
    pub fn spectator_capture_pending(&self) -> bool {
        self.spectator_capture.is_some()
    }

    /// Forgets the capture for spectators.
    pub fn cancel_spectator_capture(&mut self) {
        self.spectator_capture = None;
    }

    /// Keeps (`true`) or stops keeping every frame confirmed from now on, with its statuses and
    /// the checksum of the state before it, for [`Runner::take_confirmed_frames`]: what a host
    /// streams to the spectators it admitted.
    pub fn keep_confirmed_frames(&mut self, on: bool) {
        if on {
            self.tap.get_or_insert_with(Vec::new);
        } else {
            self.tap = None;
        }
    }

    /// The frames confirmed since the last call, oldest first (see
    /// [`Runner::keep_confirmed_frames`]; at most the newest 16,384 between two calls).
    pub fn take_confirmed_frames(&mut self) -> Vec<ConfirmedFrame<G::Input>> {
        self.tap.as_mut().map(core::mem::take).unwrap_or_default()
    }

    /// Steps frames whose inputs are confirmed already (a spectator that follows a running
    /// match on a member's word, see [`late_spectator`](super::late_spectator)): each frame as
    /// a GGRS spectator session's request would, saved, stepped with `inputs` and their
    /// statuses, recorded, its cues and UI events confirmed.
    pub fn advance_confirmed(
        &mut self,
        frames: Vec<Vec<(G::Input, InputStatus)>>,
        presenter: Option<&mut dyn Presenter>,
        mut script: impl FnMut(&mut World<G>),
    ) -> Result<Batch, SessionError> {
        self.check_broken()?;
        let mut batch = Batch::default();
        for inputs in frames {
            let ggrs = self.world.next_frame().saturating_sub(self.frame_base);
            let frame = i32::try_from(ggrs).unwrap_or(i32::MAX);
            let requests: Vec<GgrsRequest<GgrsConfig<G, ()>>> = vec![
                GgrsRequest::SaveGameState { cell: ggrs::GameStateCell::default(), frame },
                GgrsRequest::AdvanceFrame { inputs },
            ];
            self.handle(requests, &mut script, &mut batch)?;
        }
        if batch.advanced == 0 {
            batch.skipped = true;
            self.stats.skipped += 1;
        }
        self.track_stall(batch.advanced > 0, Vec::new);
        let confirmed = self.world.next_frame().checked_sub(1);
        self.finish(confirmed, presenter);
        Ok(batch)
    }

    /// Captures the confirmed state before world frame `frame`: from now on the runner keeps the
    /// latest save of that frame, which becomes final once frame `frame − 1` is confirmed
    /// ([`Runner::captured`]). Until [`Runner::rebase`] or [`Runner::cancel_capture`], frames
    /// from `frame` on are not recorded: a membership change that starts a new session at
    /// `frame` replaces them. `frame` must not be confirmed yet (`false` otherwise: the state
    /// is gone from the ring).
    pub fn capture_at(&mut self, frame: Frame) -> bool {
        let confirmed = self.recorded_through.map_or(0, |r| r + 1).max(self.frame_base);
        if frame < confirmed {
            return false;
        }
        self.capture = Some(Capture { frame, saved: None, done: false });
        // A spectator's state not final yet at or after `frame` would be this session's, which
        // the next one replaces.
        self.spectator_capture.take_if(|c| !c.done && c.frame >= frame);
        true
    }

    /// The captured state (its frame, bytes and checksum) once final.
    pub fn captured(&self) -> Option<(Frame, &[u8], u64)> {
        let c = self.capture.as_ref()?;
        let (bytes, sum) = c.saved.as_ref()?;
        c.done.then_some((c.frame, bytes.as_slice(), *sum))
    }

    /// Forgets a capture (the membership change was called off): recording goes on.
    pub fn cancel_capture(&mut self) {
        self.capture = None;
    }

    /// Starts over from the state before world frame `frame` for a new GGRS session whose frame
    /// 0 is `frame` (a membership change): loads `state` (validated, see
    /// [`World::load_bytes`]), forgets every prediction and record past it, and from now on
    /// hands the game the players in `absent` as disconnected with the default input, whatever
    /// the session says (in the session, each is a local player of one member, which feeds it
    /// the default input). Attach the new session's guard afterwards.
    pub fn rebase(
        &mut self,
        frame: Frame,
        state: &[u8],
        absent: Vec<usize>,
    ) -> Result<(), crate::world::SnapshotError> {
        self.world.load_bytes(state)?;
        if self.world.next_frame() != frame {
            return Err(crate::world::SnapshotError::LayoutMismatch);
        }
        // A recording that has every frame before this one goes on; any other (a joiner's,
        // from a fresh world or with a gap) cannot, so it is set aside and a new one starts
        // from the loaded state.
        if let Some(rec) = self.recorder.take_if(|rec| rec.next_frame() != frame) {
            let interval = rec.replay().header.keyframe_interval;
            let old = rec.finish();
            if !old.is_empty() {
                self.set_aside.push(old);
            }
            self.recorder = Some(Recorder::new(&self.world, interval));
        }
        self.frame_base = frame;
        self.absent = absent;
        self.capture = None;
        self.spectator_capture = None;
        self.inputs.clear();
        self.after.clear();
        self.pending_keyframes.retain(|f, _| *f <= frame);
        self.pending_sums.clear();
        self.pending_sums.insert(frame, self.world.checksum());
        self.recorded_through = frame.checked_sub(1);
        for slot in &mut self.keeper.slots {
            if slot.0.is_some_and(|f| f >= frame) {
                slot.0 = None;
            }
        }
        if let Some(d) = self.director.as_mut() {
            d.rewound_to(frame);
        }
        if let Some(u) = self.ui_events.as_mut() {
            u.rewound_to(frame);
        }
        self.stall_ticks = 0;
        self.stall_reported = false;
        self.departure_wait = 0;
        self.departures_seen = 0;
        self.guard = None;
        Ok(())
    }

    /// The inputs of the latest confirmed frames (at least the newest 600), oldest first: each
    /// frame with every player's input as the game stepped it (the default input for a player
    /// out of the match), recorded or not: a peer that came back into a match and does not
    /// record has these since it came back.
    pub fn confirmed_inputs(&self) -> &[(Frame, Vec<G::Input>)] {
        &self.confirmed_log
    }

    /// The world frame of the current session's GGRS frame 0.
    pub fn frame_base(&self) -> Frame {
        self.frame_base
    }

    /// The players handed to the game as disconnected since the current session started.
    pub fn absent(&self) -> &[usize] {
        &self.absent
    }

    /// Checksums of confirmed states: the state before each frame, by frame (the newest
    /// 65,536). Peers that agree have the same checksum at every frame both hold.
    pub fn confirmed_checksums(&self) -> &BTreeMap<Frame, u64> {
        &self.confirmed_sums
    }

    /// The world frame of a GGRS frame of the current session.
    fn world_frame(&self, ggrs: i32) -> Frame {
        self.frame_base.saturating_add(ggrs.max(0) as Frame)
    }

    /// The world frame of the current session's confirmed frame (`None` before any).
    fn confirmed_world(&self, ggrs: i32) -> Option<Frame> {
        if ggrs >= 0 { Some(self.world_frame(ggrs)) } else { self.frame_base.checked_sub(1) }
    }

    /// The most frames a [`SessionEvent::WaitRecommendation`] asks a game to wait (default: the
    /// prediction window; 0 turns the recommendations off). GGRS derives them from the peers'
    /// own time-sync reports; the guard clamps each report to
    /// [`GuardConfig::max_frame_advantage`](super::GuardConfig::max_frame_advantage), and this
    /// caps what reaches the game whatever the session is fronted by.
    pub fn set_max_wait_frames(&mut self, frames: u32) {
        self.max_wait_frames = frames;
    }

    /// Records confirmed inputs into a replay from now on: from the world's next frame, the
    /// replay's first frame. A peer that joins a running match at frame F (a rejoin) records
    /// from F: [`Runner::rebase`] starts a new recording from the state it loads when the one
    /// under way cannot continue there.
    pub fn record(&mut self, keyframe_interval: u32) {
        self.recorder = Some(Recorder::new(&self.world, keyframe_interval));
    }

    /// Writes every desync report (and the local dump) into a directory.
    pub fn write_desync_reports_to(&mut self, dir: impl Into<PathBuf>) {
        self.desync_dir = Some(dir.into());
    }

    /// The world.
    pub fn world(&self) -> &World<G> {
        &self.world
    }

    /// The world, mutably (between ticks: the world must stay deterministic on every peer).
    pub fn world_mut(&mut self) -> &mut World<G> {
        &mut self.world
    }

    /// Takes the world back.
    pub fn into_world(self) -> World<G> {
        self.world
    }

    /// The recorder, if recording.
    pub fn recorder(&self) -> Option<&Recorder<G>> {
        self.recorder.as_ref()
    }

    /// Takes the recorder (to finish the replay).
    pub fn take_recorder(&mut self) -> Option<Recorder<G>> {
        self.recorder.take()
    }

    /// Recordings set aside by [`Runner::rebase`], oldest first: a peer that kept its process
    /// while it was out of the match (its connection dropped) has no inputs for the frames it
    /// missed, so the recording it made before is finished here as it was and a new one starts
    /// at the frame it joined back at. Each verifies on its own.
    pub fn set_aside_replays(&self) -> &[Replay] {
        &self.set_aside
    }

    /// Counters.
    pub fn stats(&self) -> RunnerStats {
        self.stats
    }

    /// Session events seen since the last call (at most the newest 4096 are kept).
    pub fn drain_events(&mut self) -> Vec<SessionEvent> {
        core::mem::take(&mut self.events)
    }

    /// The most recent desync reports (at most [`Runner::set_desync_report_limit`]; the
    /// count of all is [`RunnerStats::desyncs`]).
    pub fn desync_reports(&self) -> &[DesyncReport] {
        &self.reports
    }

    /// Keeps at most `limit` desync reports in memory (default 8, the oldest go first) and
    /// writes at most `limit` to the report directory: a peer that lies about its checksums
    /// cannot grow this peer's memory or disk.
    pub fn set_desync_report_limit(&mut self, limit: usize) {
        self.report_limit = limit;
        let excess = self.reports.len().saturating_sub(limit);
        self.reports.drain(..excess);
    }

    /// Reports a [`SessionEvent::Stalled`] after this many ticks without a frame advancing
    /// (default 30: half a second at 60 ticks per second).
    pub fn set_stall_ticks(&mut self, ticks: u32) {
        self.stall_threshold = ticks.max(1);
    }

    /// With a [`Guard`] attached: a remote player this peer has waited on for this many ticks
    /// without a frame advancing leaves the match (0: never; default 600, ten seconds at 60
    /// ticks per second — longer than a Wi-Fi hiccup). The survivors agree on the frame its
    /// input ends at ([`SessionEvent::Leaving`], then [`SessionEvent::Left`]). Ticks, not
    /// seconds: the game's loop is the clock, so a seeded emulated match decides the same way at
    /// any machine load.
    pub fn set_departure_ticks(&mut self, ticks: u32) {
        self.departure_ticks = ticks;
    }

    /// Ticks since a frame last advanced.
    pub fn stalled_ticks(&self) -> u32 {
        self.stall_ticks
    }

    /// Attaches the [`Guard`] of the session's [`GuardedSocket`](super::GuardedSocket): the
    /// runner tells it the session's frame before every advance, turns its faults into
    /// [`SessionEvent::PeerFault`]s, names the players a stall waits for and makes
    /// [`Runner::kick`] safe.
    pub fn attach_guard<A: Address>(&mut self, guard: Guard<A>) {
        self.guard = Some(Box::new(guard));
    }

    fn guard_of<A: Address>(&self) -> Option<Guard<A>> {
        self.guard.as_ref().and_then(|g| g.downcast_ref::<Guard<A>>()).cloned()
    }

    /// Whether GGRS failed (see [`SessionError::GgrsFault`]).
    pub fn is_broken(&self) -> bool {
        self.broken.is_some()
    }

    fn check_broken(&self) -> Result<(), SessionError> {
        match &self.broken {
            Some((during, message)) => {
                Err(SessionError::GgrsFault { during, message: message.clone() })
            }
            None => Ok(()),
        }
    }

    /// Runs a GGRS call, turning a panic inside GGRS into [`SessionError::GgrsFault`] and
    /// closing the session.
    fn contain<T>(
        &mut self,
        during: &'static str,
        call: impl FnOnce() -> T,
    ) -> Result<T, SessionError> {
        self.check_broken()?;
        match catch_unwind(AssertUnwindSafe(call)) {
            Ok(v) => Ok(v),
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".to_owned());
                self.broken = Some((during, message.clone()));
                Err(SessionError::GgrsFault { during, message })
            }
        }
    }

    /// Removes a remote player from a P2P session. With a [`Guard`] attached, nothing more
    /// from its address reaches GGRS or is sent to it, and the survivors agree on the frame its
    /// input ends at ([`SessionEvent::Leaving`], then [`SessionEvent::Left`]); every survivor
    /// carries on with its input as disconnected from the same frame. A kick is this peer's own
    /// decision: the other members do not drop a player on its word (one that still sends to
    /// them stays), so to remove a connected player from the match every other member kicks it
    /// (a vote the game runs); a kick alone leaves the kicker out of step with the others, and
    /// after its departure time the kicker plays on without them. Without a guard the call
    /// goes to GGRS directly (which disconnects at the last frame *this* peer received: under
    /// loss the survivors may then disagree), and a GGRS failure is contained as
    /// [`SessionError::GgrsFault`].
    pub fn kick<A: Address>(
        &mut self,
        session: &mut P2PSession<GgrsConfig<G, A>>,
        player: usize,
    ) -> Result<(), SessionError> {
        self.check_broken()?;
        if let Some(guard) = self.guard_of::<A>() {
            if let Some(addr) = guard.address_of(player) {
                guard.leave(&addr);
                self.drain_guard::<A>();
            }
            return Ok(());
        }
        match self.contain("disconnect_player", || session.disconnect_player(player))? {
            Ok(()) => Ok(()),
            // Already disconnected: nothing left to do.
            Err(GgrsError::InvalidRequest { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Leaves the match because the player quit: with a [`Guard`] attached, every other peer is
    /// told at once (see [`Guard::announce_leaving`]) and the survivors agree on this player's
    /// last frame without waiting their departure time. Do not advance the session afterwards.
    pub fn leave_match<A: Address>(
        &mut self,
        session: &mut P2PSession<GgrsConfig<G, A>>,
    ) -> Result<(), SessionError> {
        self.check_broken()?;
        if let Some(g) = self.guard_of::<A>() {
            g.announce_leaving();
        }
        self.contain("poll_remote_clients", || session.poll_remote_clients())
    }

    /// Counts a tick with or without progress and reports stalls.
    fn track_stall(&mut self, advanced: bool, waiting_on: impl FnOnce() -> Vec<usize>) {
        if advanced {
            if self.stall_reported {
                self.events.push(SessionEvent::Resumed {
                    frame: self.world.next_frame(),
                    ticks: self.stall_ticks,
                });
            }
            self.stall_ticks = 0;
            self.stall_reported = false;
            return;
        }
        self.stall_ticks = self.stall_ticks.saturating_add(1);
        if !self.stall_reported && self.stall_ticks >= self.stall_threshold {
            self.stall_reported = true;
            self.events.push(SessionEvent::Stalled {
                frame: self.world.next_frame(),
                ticks: self.stall_ticks,
                waiting_on: waiting_on(),
            });
        }
    }

    fn drain_guard<A: Address>(&mut self) {
        if let Some(g) = self.guard_of::<A>() {
            for f in g.drain_faults() {
                self.events.push(SessionEvent::PeerFault {
                    peer: format!("{:?}", f.peer),
                    fault: f.fault,
                });
            }
            for e in g.drain_equivocations() {
                self.events.push(SessionEvent::Equivocation {
                    peer: format!("{:?}", e.peer),
                    evidence: Box::new(e.evidence),
                });
            }
            // Players already out (local to one member of a session a rejoin started) leave
            // with that member's address, but they left before: only the member is news.
            let news = |mut players: Vec<usize>| {
                players.retain(|p| !self.absent.contains(p));
                players
            };
            for d in g.drain_departures() {
                self.events.push(match d {
                    Departure::Leaving { peer, players } => {
                        SessionEvent::Leaving { peer: format!("{peer:?}"), players: news(players) }
                    }
                    Departure::Left { peer, players, last_frame } => SessionEvent::Left {
                        peer: format!("{peer:?}"),
                        players: news(players),
                        last_frame: u32::try_from(last_frame)
                            .ok()
                            .map(|f| f.saturating_add(self.frame_base)),
                    },
                });
            }
        }
    }

    /// Handles one batch of requests. `confirmed` is the session's confirmed frame after the
    /// batch (used for the cue director and the recorder).
    fn handle<A: Address>(
        &mut self,
        requests: Vec<GgrsRequest<GgrsConfig<G, A>>>,
        script: &mut dyn FnMut(&mut World<G>),
        batch: &mut Batch,
    ) -> Result<(), SessionError> {
        for req in requests {
            match req {
                GgrsRequest::SaveGameState { cell, frame } => {
                    let f = self.world_frame(frame);
                    debug_assert_eq!(
                        f,
                        self.world.next_frame(),
                        "GGRS saves the frame about to be simulated"
                    );
                    let sums = self.ring.save_checksummed(&self.world);
                    if f.is_multiple_of(self.keeper.interval) {
                        let slot = (f / self.keeper.interval) as usize % self.keeper.slots.len();
                        let entry = &mut self.keeper.slots[slot];
                        if self.world.save_into(&mut entry.1).is_ok() {
                            entry.0 = Some(f);
                        }
                    }
                    if let Some(rec) = &self.recorder
                        && rec.keyframe_due(f)
                    {
                        self.pending_keyframes.insert(f, self.world.state_bytes());
                    }
                    self.pending_sums.insert(f, sums.total);
                    for c in [self.capture.as_mut(), self.spectator_capture.as_mut()]
                        .into_iter()
                        .flatten()
                        .filter(|c| c.frame == f && !c.done)
                    {
                        c.saved = Some((self.world.state_bytes(), sums.total));
                    }
                    cell.save(
                        frame,
                        Some(SavedFrame { frame: f, checksum: sums.total }),
                        Some(pack_checksum(&sums)),
                    );
                }
                GgrsRequest::LoadGameState { frame, .. } => {
                    let f = self.world_frame(frame);
                    let depth = self.world.next_frame().saturating_sub(f);
                    if !self.ring.load(&mut self.world, f) {
                        return Err(SessionError::MissingSnapshot { frame: f });
                    }
                    if let Some(d) = self.director.as_mut() {
                        d.rewound_to(f);
                    }
                    if let Some(u) = self.ui_events.as_mut() {
                        u.rewound_to(f);
                    }
                    self.stats.rollbacks += 1;
                    self.stats.rollback_depth_sum += u64::from(depth);
                    self.stats.max_rollback = self.stats.max_rollback.max(depth);
                    batch.rollback = Some(batch.rollback.unwrap_or(0).max(depth));
                }
                GgrsRequest::AdvanceFrame { mut inputs } => {
                    let f = self.world.next_frame();
                    for p in &self.absent {
                        if let Some(slot) = inputs.get_mut(*p) {
                            *slot = (G::Input::default(), InputStatus::Disconnected);
                        }
                    }
                    let resimulation = self.inputs.contains_key(&f) || self.after.contains_key(&f);
                    self.world.step_with(&inputs, &mut *script);
                    if let Some(d) = self.director.as_mut() {
                        d.ingest(self.world.output());
                    }
                    if let Some(u) = self.ui_events.as_mut() {
                        u.ingest(&self.world);
                    }
                    self.inputs.insert(f, inputs);
                    if self.recorder.is_some() {
                        self.after.insert(f, self.world.checksum());
                    }
                    batch.advanced += 1;
                    // A frame whose inputs are still held was advanced before: this is a
                    // re-simulation. The newest frame of a rollback batch is a first advance.
                    if resimulation {
                        self.stats.resimulated += 1;
                    } else {
                        self.stats.frames += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// After a batch: reconcile cues, record confirmed frames, forget old input history.
    fn finish(&mut self, confirmed: Option<Frame>, presenter: Option<&mut dyn Presenter>) {
        let limit = self.capture.as_ref().map(|cap| cap.frame);
        // While a capture is pending, frames from its frame on belong to the session that
        // follows it: they are neither presented as confirmed nor recorded here.
        let presented = match (confirmed, limit) {
            (Some(c), Some(l)) => l.checked_sub(1).map(|l| c.min(l)),
            _ => confirmed,
        };
        if let (Some(d), Some(p)) = (self.director.as_mut(), presenter) {
            d.reconcile(&self.world, presented, p);
        }
        if let Some(u) = self.ui_events.as_mut() {
            u.reconcile(presented);
        }
        let Some(c) = confirmed else { return };
        // A state depends only on the inputs before it: once frame k − 1 is confirmed, the last
        // save of k is final.
        let final_sums: Vec<Frame> = self
            .pending_sums
            .keys()
            .copied()
            .filter(|k| *k <= c + 1 && limit.is_none_or(|l| *k <= l))
            .collect();
        for k in final_sums {
            if let Some(sum) = self.pending_sums.remove(&k) {
                self.confirmed_sums.insert(k, sum);
            }
        }
        while self.confirmed_sums.len() > CONFIRMED_SUMS {
            self.confirmed_sums.pop_first();
        }
        for cap in [self.capture.as_mut(), self.spectator_capture.as_mut()].into_iter().flatten() {
            if cap.frame <= c + 1 && cap.saved.is_some() {
                cap.done = true;
            }
        }
        // While a capture is pending, frames from its frame on belong to the session that
        // follows it.
        let c = match limit {
            Some(l) => c.min(l.saturating_sub(1)),
            None => c,
        };
        if limit == Some(0) {
            return;
        }
        let start = self.recorded_through.map_or(self.frame_base, |r| r + 1);
        for f in start..=c {
            let Some(inputs) = self.inputs.remove(&f) else { break };
            let plain: Vec<G::Input> = inputs.iter().map(|(i, _)| *i).collect();
            if let Some(rec) = self.recorder.as_mut() {
                let sum = self.after.remove(&f).unwrap_or(0);
                // With the statuses the frame was stepped with: a game may branch on a player
                // being disconnected, so a replay must step it the same way.
                let _ = rec.push(f, &inputs, sum);
            }
            self.confirmed_log.push((f, plain));
            if let Some(tap) = self.tap.as_mut() {
                let sum = self.confirmed_sums.get(&f).copied();
                // A prediction that proved right is the player's confirmed input.
                let confirmed = inputs
                    .into_iter()
                    .map(|(i, s)| match s {
                        InputStatus::Predicted => (i, InputStatus::Confirmed),
                        s => (i, s),
                    })
                    .collect();
                tap.push((f, confirmed, sum));
                if tap.len() > TAP_FRAMES {
                    tap.drain(..tap.len() - TAP_FRAMES);
                }
            }
            self.recorded_through = Some(f);
        }
        if self.confirmed_log.len() > 2 * REPORT_INPUTS {
            self.confirmed_log.drain(..self.confirmed_log.len() - REPORT_INPUTS);
        }
        self.after.retain(|f, _| *f > c);
        // A state depends only on the inputs before it: once frame k − 1 is confirmed, the last
        // save of k is final and becomes a keyframe (GGRS may save k after confirming k − 1).
        let ready: Vec<Frame> =
            self.pending_keyframes.keys().copied().filter(|k| *k <= c + 1).collect();
        for k in ready {
            if let (Some(bytes), Some(rec)) =
                (self.pending_keyframes.remove(&k), self.recorder.as_mut())
                && rec.keyframe_due(k)
            {
                rec.keyframe_bytes(k, bytes);
            }
        }
    }

    fn event<A: Address>(&mut self, e: GgrsEvent<GgrsConfig<G, A>>) {
        let ev = match e {
            GgrsEvent::Synchronizing { .. } => return,
            GgrsEvent::Synchronized { addr } => {
                if let Some(g) = self.guard_of::<A>() {
                    g.mark_synchronised(&addr);
                }
                SessionEvent::Synchronized(format!("{addr:?}"))
            }
            GgrsEvent::Disconnected { addr } => {
                if let Some(g) = self.guard_of::<A>() {
                    g.mark_disconnected(&addr);
                }
                SessionEvent::Disconnected(format!("{addr:?}"))
            }
            GgrsEvent::NetworkInterrupted { addr, .. } => {
                SessionEvent::NetworkInterrupted(format!("{addr:?}"))
            }
            GgrsEvent::NetworkResumed { addr } => SessionEvent::NetworkResumed(format!("{addr:?}")),
            GgrsEvent::WaitRecommendation { skip_frames } => {
                let frames = skip_frames.min(self.max_wait_frames);
                if frames == 0 {
                    return;
                }
                SessionEvent::WaitRecommendation(frames)
            }
            GgrsEvent::DesyncDetected { frame, local_checksum, remote_checksum, addr } => {
                let f = self.world_frame(frame);
                let report =
                    self.desync_report(f, local_checksum, remote_checksum, format!("{addr:?}"));
                self.stats.desyncs += 1;
                if self.report_limit > 0 {
                    if self.reports.len() >= self.report_limit {
                        self.reports.remove(0);
                    }
                    self.reports.push(report);
                }
                SessionEvent::Desync(f)
            }
        };
        self.events.push(ev);
    }

    /// Builds (and writes, if a directory is set) a desync report for a frame.
    pub fn desync_report(
        &mut self,
        frame: Frame,
        local: u128,
        remote: u128,
        peer: String,
    ) -> DesyncReport {
        let dump = self
            .keeper
            .slots
            .iter()
            .find(|(f, _)| *f == Some(frame))
            .map(|(_, s)| WorldDump::of_snapshot(&self.world, s, frame));
        let inputs = self
            .confirmed_log
            .iter()
            .filter(|(f, _)| *f + REPORT_INPUTS as Frame >= frame && *f <= frame)
            .map(|(f, i)| (*f, i.iter().map(|x| bytemuck::bytes_of(x).to_vec()).collect()))
            .collect();
        let report = DesyncReport {
            frame,
            local_checksum: local,
            remote_checksum: remote,
            peer,
            differing_subsystems: differing_subsystems(local, remote),
            local_dump: dump,
            confirmed_inputs: inputs,
        };
        if let Some(dir) = &self.desync_dir
            && self.stats.desyncs < self.report_limit as u64
        {
            let _ = report.write_to_dir(dir);
        }
        report
    }

    /// One tick of a P2P session: add the local players' inputs, advance, fulfil the requests,
    /// then reconcile cues once and record newly confirmed frames. A tick that advances no frame
    /// (GGRS waits for a remote peer) is not an error: the batch is marked `skipped` and, after
    /// [`Runner::set_stall_ticks`] such ticks, a [`SessionEvent::Stalled`] is reported. A panic
    /// inside GGRS is contained as [`SessionError::GgrsFault`].
    pub fn advance_p2p<A: Address>(
        &mut self,
        session: &mut P2PSession<GgrsConfig<G, A>>,
        local_inputs: &[(usize, G::Input)],
        presenter: Option<&mut dyn Presenter>,
        mut script: impl FnMut(&mut World<G>),
    ) -> Result<Batch, SessionError> {
        self.check_broken()?;
        let mut batch = Batch::default();
        let guard = self.guard_of::<A>();
        if let Some(g) = &guard {
            g.begin_tick(session.current_frame());
        }
        let (result, events) = self.contain("advance_frame", || {
            for (h, i) in local_inputs {
                session.add_local_input(*h, *i)?;
            }
            let result = session.advance_frame();
            let events: Vec<_> = session.events().collect();
            Ok::<_, GgrsError>((result, events))
        })??;
        for e in events {
            self.event(e);
        }
        self.drain_guard::<A>();
        match result {
            Ok(requests) => self.handle(requests, &mut script, &mut batch)?,
            Err(GgrsError::PredictionThreshold) | Err(GgrsError::NotSynchronized) => {}
            Err(e) => return Err(e.into()),
        }
        if batch.advanced == 0 {
            batch.skipped = true;
            self.stats.skipped += 1;
        }
        let confirmed = session.confirmed_frame();
        let running = session.current_state() == SessionState::Running;
        // The remote players whose input holds the confirmed frame back; before the session
        // runs, those GGRS has not synchronised with.
        let waiting_on = |g: &Guard<A>| {
            let mut waiting: Vec<usize> = session
                .remote_player_handles()
                .into_iter()
                .filter(|h| {
                    g.address_of(*h).is_some_and(|a| {
                        !g.is_cut_off(&a)
                            && if running {
                                g.last_input_frame(&a).unwrap_or(-1) <= confirmed
                            } else {
                                !g.is_synchronised(&a)
                            }
                    })
                })
                .collect();
            waiting.sort_unstable();
            waiting
        };
        self.track_stall(batch.advanced > 0, || guard.as_ref().map(waiting_on).unwrap_or_default());
        // The departure rule: a player waited on for `departure_ticks` ticks leaves; so does a
        // survivor that has not answered a departure agreement for as long. Not before the
        // match's first session runs: a peer still starting is not lost (a session a membership
        // change started, `frame_base > 0`, waits on the members it has not synchronised with).
        let starting = !running && self.frame_base == 0;
        if starting {
            self.departure_wait = 0;
        } else if let Some(g) = &guard {
            // A departure that began (here or on another survivor) restarts the wait: its
            // agreement gets the whole departure time.
            let begun = g.departures_begun();
            if batch.advanced > 0 || begun != self.departures_seen {
                self.departure_wait = 0;
                self.departures_seen = begun;
            } else {
                self.departure_wait = self.departure_wait.saturating_add(1);
                // An agreement waits at least two look times: a survivor that missed the
                // leaver's notice joins it once it has seen the leaver silent for a look time,
                // and must not be left behind for that.
                let departing = g.departing();
                let limit = if departing {
                    self.departure_ticks.max(g.look_ticks().saturating_mul(2))
                } else {
                    self.departure_ticks
                };
                if self.departure_ticks > 0 && self.departure_wait >= limit {
                    self.departure_wait = 0;
                    if departing {
                        g.leave_unresponsive();
                    } else {
                        for p in waiting_on(g) {
                            if let Some(a) = g.address_of(p) {
                                g.leave(&a);
                            }
                        }
                    }
                    self.drain_guard::<A>();
                }
            }
        }
        self.finish(self.confirmed_world(confirmed), presenter);
        self.bound_events();
        Ok(batch)
    }

    /// Reads the network between ticks: GGRS receives and answers what arrived (through the
    /// guard) without advancing a frame, and what that produced (synchronisation, faults,
    /// departures, desyncs) becomes [`SessionEvent`]s as after a tick. For a game loop that
    /// renders faster than it simulates: call it on the frames that do not tick, so a peer's
    /// packets are not left waiting until the next tick. A panic inside GGRS is contained as
    /// [`SessionError::GgrsFault`].
    pub fn poll_p2p<A: Address>(
        &mut self,
        session: &mut P2PSession<GgrsConfig<G, A>>,
    ) -> Result<(), SessionError> {
        let events = self.contain("poll_remote_clients", || {
            session.poll_remote_clients();
            session.events().collect::<Vec<_>>()
        })?;
        for e in events {
            self.event(e);
        }
        self.drain_guard::<A>();
        self.bound_events();
        Ok(())
    }

    /// Keeps the undrained events bounded (the newest are kept).
    fn bound_events(&mut self) {
        if self.events.len() > MAX_EVENTS {
            self.events.drain(..self.events.len() - MAX_EVENTS / 2);
        }
    }

    /// One tick of a spectator session (every frame it advances is confirmed).
    pub fn advance_spectator<A: Address>(
        &mut self,
        session: &mut SpectatorSession<GgrsConfig<G, A>>,
        presenter: Option<&mut dyn Presenter>,
        mut script: impl FnMut(&mut World<G>),
    ) -> Result<Batch, SessionError> {
        let mut batch = Batch::default();
        if let Some(g) = self.guard_of::<A>() {
            g.begin_tick(session.current_frame());
        }
        let (result, events) = self.contain("advance_frame", || {
            let result = session.advance_frame();
            (result, session.events().collect::<Vec<_>>())
        })?;
        for e in events {
            self.event(e);
        }
        self.drain_guard::<A>();
        match result {
            Ok(requests) => self.handle(requests, &mut script, &mut batch)?,
            Err(GgrsError::PredictionThreshold) | Err(GgrsError::NotSynchronized) => {}
            Err(e) => return Err(e.into()),
        }
        if batch.advanced == 0 {
            batch.skipped = true;
            self.stats.skipped += 1;
        }
        let guard = self.guard_of::<A>();
        // The host speaks for every player: a stall waits on all of them.
        let host = guard.as_ref().and_then(|g| g.address_of(0));
        let players = || guard.as_ref().zip(host.as_ref()).map(|(g, h)| g.handles(h));
        self.track_stall(batch.advanced > 0, || players().unwrap_or_default());
        if let (Some(g), Some(h)) = (&guard, &host)
            && !self.host_gone
        {
            // A host silent for the departure time is left, as a silent player is.
            if self.departure_ticks > 0 && self.stall_ticks >= self.departure_ticks {
                g.leave(h);
            }
            // Banned or left, nothing more from it reaches GGRS: the spectator cannot advance.
            if g.is_cut_off(h) {
                self.host_gone = true;
                self.events.push(SessionEvent::Disconnected(format!("{h:?}")));
            }
        }
        let confirmed = self.world.next_frame().checked_sub(1);
        self.finish(confirmed, presenter);
        Ok(batch)
    }

    /// One tick of a sync test: every player's input is local. A checksum mismatch becomes a
    /// [`SessionError::SyncTestMismatch`] carrying a report.
    pub fn advance_synctest<A: Address>(
        &mut self,
        session: &mut SyncTestSession<GgrsConfig<G, A>>,
        inputs: &[G::Input],
        presenter: Option<&mut dyn Presenter>,
        mut script: impl FnMut(&mut World<G>),
    ) -> Result<Batch, SessionError> {
        let mut batch = Batch::default();
        for (h, i) in inputs.iter().enumerate() {
            session.add_local_input(h, *i)?;
        }
        match session.advance_frame() {
            Ok(requests) => self.handle(requests, &mut script, &mut batch)?,
            Err(GgrsError::MismatchedChecksum { current_frame, mismatched_frames }) => {
                let f = mismatched_frames.first().copied().unwrap_or(current_frame).max(0) as Frame;
                let report = self.desync_report(
                    f,
                    0,
                    0,
                    format!("sync test (frames {mismatched_frames:?})"),
                );
                self.stats.desyncs += 1;
                return Err(SessionError::SyncTestMismatch(Box::new(report)));
            }
            Err(e) => return Err(e.into()),
        }
        let confirmed = self.world.next_frame().checked_sub(session.check_distance() as Frame + 1);
        self.finish(confirmed, presenter);
        Ok(batch)
    }
}
