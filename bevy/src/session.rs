//! The match resource: the crate's [`Runner`] and the GGRS session it drives, built from a
//! [`MatchSpec`] the crate's guarded way (`SessionConfig::start_p2p` / `start_spectator`).

use crate::messages::CuePhase;
use crate::spec::{MatchSpec, NetSettings};
use ggrs::{
    NonBlockingSocket, P2PSession, PlayerType, SessionBuilder, SessionState, SpectatorSession,
    SyncTestSession, UdpNonBlockingSocket,
};
use rollback_abilities::debug::DesyncReport;
use rollback_abilities::num::Frame;
use rollback_abilities::present::{Cue, CueDirector, Presenter, RemoveReason};
use rollback_abilities::session::{
    Address, Guard, GuardConfig, PeerAddr, Runner, RunnerStats, SessionConfig, SessionError,
    SessionEvent,
};
use rollback_abilities::ui::{EventDirector, EventFilter, UiNotice};
use rollback_abilities::{Game, World as GameWorld};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

#[cfg(feature = "matchbox")]
use rollback_abilities::session::{
    Handshake, MatchboxOptions,
    matchbox::{Connecting, MatchboxSession},
};

/// A player's handle in the session (GGRS's and bevy_ggrs's name).
pub type PlayerHandle = usize;

/// A P2P session with its guard and local players.
struct P2p<G: Game, A: Address> {
    session: P2PSession<rollback_abilities::session::GgrsConfig<G, A>>,
    guard: Guard<A>,
    local: Vec<PlayerHandle>,
}

/// A spectator session (its guard is attached to the runner).
struct Spectator<G: Game, A: Address> {
    session: SpectatorSession<rollback_abilities::session::GgrsConfig<G, A>>,
}

/// Moves the runner's session events (and the reports of its desyncs) into `pending`.
fn take_events<G: Game>(runner: &mut Runner<G>, pending: &mut Pending) {
    for e in runner.drain_events() {
        if let SessionEvent::Desync(f) = e
            && let Some(r) = runner.desync_reports().iter().rev().find(|r| r.frame == f)
        {
            pending.desyncs.push(Arc::new(r.clone()));
        }
        pending.events.push(e);
    }
}

/// The session kinds the runner drives.
enum Drive<G: Game> {
    /// Sync test (check distance 0: offline).
    SyncTest {
        session: Box<SyncTestSession<rollback_abilities::session::GgrsConfig<G, PeerAddr>>>,
        players: usize,
        check_distance: usize,
    },
    P2pUdp(Box<P2p<G, SocketAddr>>),
    P2pEmulated(Box<P2p<G, PeerAddr>>),
    SpectatorUdp(Box<Spectator<G, SocketAddr>>),
    /// Joining a matchbox room: the crate's `Connecting`, polled once per Bevy frame.
    #[cfg(feature = "matchbox")]
    MatchboxConnecting(Box<Connecting<G>>),
    /// A synchronised matchbox match (the GGRS session, its guard, the socket and its
    /// message loop).
    #[cfg(feature = "matchbox")]
    Matchbox(Box<MatchboxSession<G>>),
}

/// Everything one tick (or several) produced, waiting for the views and the messages.
#[derive(Default)]
pub(crate) struct Pending {
    pub(crate) cues: CueCollector,
    pub(crate) ui: Vec<UiNotice>,
    pub(crate) events: Vec<SessionEvent>,
    pub(crate) desyncs: Vec<Arc<DesyncReport>>,
    pub(crate) mismatches: Vec<Arc<DesyncReport>>,
    pub(crate) ended: Option<String>,
    /// The earliest frame a rollback loaded since the views were last synchronised.
    pub(crate) rewound_to: Option<Frame>,
}

/// A [`Presenter`] forwarding every call of the cue director, in order.
#[derive(Default)]
pub(crate) struct CueCollector(pub(crate) Vec<(CuePhase, Cue)>);

impl Presenter for CueCollector {
    fn play(&mut self, cue: &Cue) {
        self.0.push((CuePhase::Played, *cue));
    }
    fn cancel(&mut self, cue: &Cue) {
        self.0.push((CuePhase::Cancelled, *cue));
    }
    fn on_active(&mut self, cue: &Cue) {
        self.0.push((CuePhase::Activated, *cue));
    }
    fn while_active(&mut self, cue: &Cue) {
        self.0.push((CuePhase::Shown, *cue));
    }
    fn removed(&mut self, cue: &Cue, reason: RemoveReason) {
        self.0.push((CuePhase::Removed(reason), *cue));
    }
    fn confirmed(&mut self, cue: &Cue) {
        self.0.push((CuePhase::Confirmed, *cue));
    }
    fn retimed(&mut self, from: &Cue, to: &Cue) {
        self.0.push((CuePhase::Retimed { from: from.key }, *to));
    }
}

/// The running match: the crate's [`Runner`] (world, snapshots, directors, recorder, desync
/// reports, guard) and its GGRS session. Read the world from systems with
/// `Res<AbilitiesMatch<G>>` (attributes, tags, effects, abilities for a HUD); the plugin drives
/// it in `PreUpdate`.
#[derive(bevy::prelude::Resource)]
pub struct AbilitiesMatch<G: Game> {
    /// Behind a mutex because the crate's `World` is `Send` but not `Sync` (a scratch
    /// `RefCell`), and Bevy resources must be both. The plugin reaches it through `&mut self`
    /// (no locking); readers lock it uncontended.
    runner: Mutex<Runner<G>>,
    drive: Drive<G>,
    kind: &'static str,
    settings: NetSettings,
    pub(crate) accumulator: Duration,
    pub(crate) pending: Pending,
    /// Every player's input for a sync-test tick, kept from tick to tick.
    inputs: Vec<G::Input>,
    ended: bool,
}

impl<G: Game> core::fmt::Debug for AbilitiesMatch<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AbilitiesMatch")
            .field("kind", &self.kind)
            .field("runner", &*self.runner())
            .field("ended", &self.ended)
            .finish()
    }
}

/// A deterministic script run inside every simulated frame.
pub(crate) type Script<G> = Arc<dyn Fn(&mut GameWorld<G>) + Send + Sync>;

/// How a match builds its world and presents (the plugin's settings).
pub(crate) struct MatchSetup<G: Game> {
    pub(crate) subscriptions: Vec<EventFilter>,
    pub(crate) record: Option<u32>,
    pub(crate) script: Option<Script<G>>,
}

fn ggrs_err(e: impl core::fmt::Display) -> String {
    e.to_string()
}

/// The crate's session settings for `net` (the guard paced for an emulated network).
fn session_config(net: NetSettings, players: usize, paced: bool) -> SessionConfig {
    SessionConfig {
        max_prediction: net.max_prediction,
        input_delay: net.input_delay,
        desync_interval: net.desync_interval,
        departure_ticks: net.departure_ticks,
        max_wait_frames: None,
        guard: Some(GuardConfig::new(players, net.max_prediction).with_paced(paced)),
    }
}

/// Starts a guarded P2P session over `socket` for `runner` (the crate's
/// [`SessionConfig::start_p2p`]: guarded socket, hardened GGRS, guard attached): `players[i]`
/// is handle `i`.
fn start_p2p<G: Game, A: Address, S: NonBlockingSocket<A> + Send + Sync + 'static>(
    runner: &mut Runner<G>,
    socket: S,
    players: &[PlayerType<A>],
    net: NetSettings,
    paced: bool,
) -> Result<P2p<G, A>, String> {
    let count = players.iter().filter(|p| !matches!(p, PlayerType::Spectator(_))).count();
    let config = session_config(net, count, paced);
    let (session, guard) =
        config.start_p2p(runner, socket, players.iter().cloned().enumerate()).map_err(ggrs_err)?;
    let local = session.local_player_handles();
    Ok(P2p { session, guard, local })
}

impl<G: Game, A: Address> P2p<G, A> {
    fn advance(
        &mut self,
        runner: &mut Runner<G>,
        inputs: &BTreeMap<PlayerHandle, G::Input>,
        presenter: &mut CueCollector,
        script: impl FnMut(&mut GameWorld<G>),
    ) -> Result<Option<u32>, SessionError> {
        advance_p2p(&mut self.session, &self.local, runner, inputs, presenter, script)
    }
}

/// One tick of a P2P session whose local players are `local`: until every peer runs, it only
/// exchanges packets (through the guard).
fn advance_p2p<G: Game, A: Address>(
    session: &mut P2PSession<rollback_abilities::session::GgrsConfig<G, A>>,
    local: &[PlayerHandle],
    runner: &mut Runner<G>,
    inputs: &BTreeMap<PlayerHandle, G::Input>,
    presenter: &mut CueCollector,
    script: impl FnMut(&mut GameWorld<G>),
) -> Result<Option<u32>, SessionError> {
    if session.current_state() != SessionState::Running {
        session.poll_remote_clients();
        return Ok(None);
    }
    let local: Vec<(usize, G::Input)> =
        local.iter().map(|h| (*h, inputs.get(h).copied().unwrap_or_default())).collect();
    Ok(runner.advance_p2p(session, &local, Some(presenter), script)?.rollback)
}

impl<G: Game> AbilitiesMatch<G> {
    /// Builds the world's session for `spec` and the runner around `world`.
    pub(crate) fn start(
        world: GameWorld<G>,
        spec: &MatchSpec,
        setup: &MatchSetup<G>,
        now: Duration,
    ) -> Result<AbilitiesMatch<G>, String> {
        let net = spec.settings();
        let synctest = |players: usize, check_distance: usize| -> Result<Drive<G>, String> {
            let session =
                SessionBuilder::<rollback_abilities::session::GgrsConfig<G, PeerAddr>>::new()
                    .with_num_players(players)
                    .map_err(ggrs_err)?
                    .with_max_prediction_window(net.max_prediction)
                    .with_input_delay(net.input_delay)
                    .with_check_distance(check_distance)
                    .start_synctest_session()
                    .map_err(ggrs_err)?;
            Ok(Drive::SyncTest { session: Box::new(session), players, check_distance })
        };
        if world.next_frame() != 0 {
            return Err(format!(
                "the match's world must start at frame 0 (it is at frame {})",
                world.next_frame()
            ));
        }
        let desync_interval = match spec {
            MatchSpec::P2pUdp { .. } | MatchSpec::P2pEmulated { .. } => net.desync_interval,
            #[cfg(feature = "matchbox")]
            MatchSpec::Matchbox { .. } => net.desync_interval,
            _ => 0,
        };
        #[cfg(not(feature = "matchbox"))]
        let _ = now;
        let mut runner = Runner::new(world, net.max_prediction, desync_interval);
        let (drive, kind) = match spec {
            MatchSpec::Offline { players } => (synctest(*players, 0)?, "offline"),
            MatchSpec::SyncTest { players, check_distance, .. } => {
                (synctest(*players, *check_distance)?, "sync test")
            }
            MatchSpec::P2pUdp { port, players, .. } => {
                let socket = UdpNonBlockingSocket::bind_to_port(*port)
                    .map_err(|e| format!("cannot bind UDP port {port}: {e}"))?;
                let p2p = start_p2p(&mut runner, socket, players, net, false)?;
                (Drive::P2pUdp(Box::new(p2p)), "p2p")
            }
            MatchSpec::P2pEmulated { socket, players, .. } => {
                let p2p = start_p2p(&mut runner, socket.clone(), players, net, true)?;
                (Drive::P2pEmulated(Box::new(p2p)), "p2p")
            }
            MatchSpec::SpectatorUdp { port, host, players, .. } => {
                let socket = UdpNonBlockingSocket::bind_to_port(*port)
                    .map_err(|e| format!("cannot bind UDP port {port}: {e}"))?;
                let config = session_config(net, *players, false);
                // The runner holds the guard (`start_spectator` attached it).
                let (session, _guard) =
                    config.start_spectator(&mut runner, socket, *host).map_err(ggrs_err)?;
                (Drive::SpectatorUdp(Box::new(Spectator { session })), "spectator")
            }
            #[cfg(feature = "matchbox")]
            MatchSpec::Matchbox { room_url, players, peers_timeout, .. } => {
                let mut options = MatchboxOptions::new(room_url.clone(), *players);
                options.peers_timeout = *peers_timeout;
                options.session = session_config(net, *players, false);
                // Every peer compares its world's handshake (before its first frame) with the
                // others' before any of them starts.
                let handshake = Handshake::of(runner.world());
                let connecting =
                    Connecting::start(&options, &handshake, now).map_err(|e| e.to_string())?;
                (Drive::MatchboxConnecting(Box::new(connecting)), "matchbox")
            }
        };
        runner.set_departure_ticks(net.departure_ticks);
        runner.director = Some(CueDirector::new());
        if !setup.subscriptions.is_empty() {
            let mut ui = EventDirector::new();
            for f in &setup.subscriptions {
                ui.subscribe(f.clone());
            }
            runner.ui_events = Some(ui);
        }
        if let Some(interval) = setup.record {
            runner.record(interval);
        }
        Ok(AbilitiesMatch {
            runner: Mutex::new(runner),
            drive,
            kind,
            settings: net,
            accumulator: Duration::ZERO,
            pending: Pending::default(),
            inputs: Vec::new(),
            ended: false,
        })
    }

    /// One tick: the local inputs in, the runner advances (rollbacks, cues, UI events, guard,
    /// departures all inside), and what it produced is kept for the views and the messages.
    pub(crate) fn tick(
        &mut self,
        inputs: &BTreeMap<PlayerHandle, G::Input>,
        script: Option<&Script<G>>,
    ) {
        if self.ended {
            return;
        }
        let presenter = &mut self.pending.cues;
        let runner = self.runner.get_mut().unwrap_or_else(PoisonError::into_inner);
        let before = runner.world().next_frame();
        let script = |w: &mut GameWorld<G>| {
            if let Some(s) = script {
                s(w);
            }
        };
        let result = match &mut self.drive {
            Drive::SyncTest { session, players, .. } => {
                let all = &mut self.inputs;
                all.clear();
                all.extend((0..*players).map(|h| inputs.get(&h).copied().unwrap_or_default()));
                runner.advance_synctest(session, all, Some(presenter), script).map(|b| b.rollback)
            }
            Drive::P2pUdp(p) => p.advance(runner, inputs, presenter, script),
            Drive::P2pEmulated(p) => p.advance(runner, inputs, presenter, script),
            #[cfg(feature = "matchbox")]
            Drive::MatchboxConnecting(_) => Ok(None),
            #[cfg(feature = "matchbox")]
            Drive::Matchbox(m) => {
                let local = [m.local_handle()];
                advance_p2p(&mut m.session, &local, runner, inputs, presenter, script)
            }
            Drive::SpectatorUdp(s) => {
                if s.session.current_state() != SessionState::Running {
                    s.session.poll_remote_clients();
                    Ok(None)
                } else {
                    runner
                        .advance_spectator(&mut s.session, Some(presenter), script)
                        .map(|b| b.rollback)
                }
            }
        };
        let pending = &mut self.pending;
        match result {
            Ok(Some(depth)) => {
                let to = before.saturating_sub(depth);
                pending.rewound_to = Some(pending.rewound_to.map_or(to, |r| r.min(to)));
            }
            Ok(None) => {}
            Err(SessionError::SyncTestMismatch(report)) => {
                pending.mismatches.push(Arc::new(*report));
                // The re-simulated frames were not all reconciled: rewind the views' horizon.
                pending.rewound_to = Some(0);
            }
            Err(e) => {
                self.ended = true;
                pending.ended = Some(e.to_string());
            }
        }
        if let Some(ui) = runner.ui_events.as_mut() {
            pending.ui.extend(ui.drain_all());
        }
        take_events(runner, pending);
    }

    /// Between ticks: a P2P session reads and answers the network without advancing (so a
    /// peer's packets do not wait for the next tick), and what that produced is kept for the
    /// messages. Nothing to do for the other kinds.
    pub(crate) fn poll(&mut self) {
        if self.ended {
            return;
        }
        let runner = self.runner.get_mut().unwrap_or_else(PoisonError::into_inner);
        let result = match &mut self.drive {
            Drive::P2pUdp(p) => runner.poll_p2p(&mut p.session),
            Drive::P2pEmulated(p) => runner.poll_p2p(&mut p.session),
            #[cfg(feature = "matchbox")]
            Drive::Matchbox(m) => runner.poll_p2p(&mut m.session),
            #[cfg(feature = "matchbox")]
            Drive::MatchboxConnecting(_) => return,
            Drive::SyncTest { .. } | Drive::SpectatorUdp(_) => return,
        };
        if let Err(e) = result {
            self.ended = true;
            self.pending.ended = Some(e.to_string());
        }
        take_events(runner, &mut self.pending);
    }

    /// Whether a P2P session is ahead of its peers (the driver then ticks slower, as
    /// bevy_ggrs does).
    pub(crate) fn running_ahead(&self) -> bool {
        match &self.drive {
            Drive::P2pUdp(p) => p.session.frames_ahead() > 0,
            Drive::P2pEmulated(p) => p.session.frames_ahead() > 0,
            #[cfg(feature = "matchbox")]
            Drive::Matchbox(m) => m.session.frames_ahead() > 0,
            #[cfg(feature = "matchbox")]
            Drive::MatchboxConnecting(_) => false,
            Drive::SyncTest { .. } | Drive::SpectatorUdp(_) => false,
        }
    }

    /// The world (read-only between ticks: attributes, tags, effects, abilities, components).
    /// Holds the match's lock until dropped: keep it inside one system.
    pub fn world(&self) -> WorldRef<'_, G> {
        WorldRef(self.runner())
    }

    /// The runner (stats, recorder, desync reports), locked until dropped.
    pub fn runner(&self) -> MutexGuard<'_, Runner<G>> {
        self.runner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The runner, mutably (between ticks: anything done to the world must be done on every
    /// peer alike).
    pub fn runner_mut(&mut self) -> &mut Runner<G> {
        self.runner.get_mut().unwrap_or_else(PoisonError::into_inner)
    }

    /// The runner's counters (frames, rollbacks, re-simulated frames…).
    pub fn stats(&self) -> RunnerStats {
        self.runner().stats()
    }

    /// The kind of match: `offline`, `sync test`, `p2p`, `matchbox` or `spectator`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The network settings the match was started with.
    pub fn settings(&self) -> NetSettings {
        self.settings
    }

    /// Whether the match ended on an error (a [`MatchEnded`](crate::MatchEnded) message
    /// said why); the world stays readable.
    pub fn has_ended(&self) -> bool {
        self.ended
    }

    /// The players whose inputs this app supplies.
    pub fn local_players(&self) -> Vec<PlayerHandle> {
        match &self.drive {
            Drive::SyncTest { players, .. } => (0..*players).collect(),
            Drive::P2pUdp(p) => p.local.clone(),
            Drive::P2pEmulated(p) => p.local.clone(),
            #[cfg(feature = "matchbox")]
            Drive::Matchbox(m) => vec![m.local_handle()],
            #[cfg(feature = "matchbox")]
            Drive::MatchboxConnecting(_) => Vec::new(),
            Drive::SpectatorUdp(_) => Vec::new(),
        }
    }

    /// The newest frame whose inputs are final on this peer (`None` before the first).
    pub fn confirmed_frame(&self) -> Option<Frame> {
        let next = self.runner().world().next_frame();
        match &self.drive {
            Drive::SyncTest { check_distance, .. } => {
                next.checked_sub(*check_distance as Frame + 1)
            }
            Drive::P2pUdp(p) => u32::try_from(p.session.confirmed_frame()).ok(),
            Drive::P2pEmulated(p) => u32::try_from(p.session.confirmed_frame()).ok(),
            #[cfg(feature = "matchbox")]
            Drive::Matchbox(m) => u32::try_from(m.session.confirmed_frame()).ok(),
            #[cfg(feature = "matchbox")]
            Drive::MatchboxConnecting(_) => None,
            Drive::SpectatorUdp(_) => next.checked_sub(1),
        }
    }

    /// The guard of an emulated P2P match (its statistics and faults, and the session numbers
    /// the peers use: what a test forging packets needs).
    pub fn emulated_guard(&self) -> Option<&Guard<PeerAddr>> {
        match &self.drive {
            Drive::P2pEmulated(p) => Some(&p.guard),
            _ => None,
        }
    }

    /// Whether the match is still joining its matchbox room (no frame runs until every peer
    /// has joined, agreed on the handshake and synchronised).
    pub fn is_connecting(&self) -> bool {
        #[cfg(feature = "matchbox")]
        if let Drive::MatchboxConnecting(_) = self.drive {
            return true;
        }
        false
    }

    /// One step of joining a matchbox room (`now`: Bevy's real-time clock, which the room's
    /// time limits are measured on). `Some(local players)` on the step that synchronised; a
    /// failure (a timeout, a refused handshake, a closed socket) ends the match with its
    /// reason. Nothing to do for the other kinds.
    pub(crate) fn connect_step(&mut self, now: Duration) -> Option<Vec<PlayerHandle>> {
        #[cfg(feature = "matchbox")]
        if let Drive::MatchboxConnecting(c) = &mut self.drive {
            match c.poll(now) {
                Ok(None) => {}
                Ok(Some(session)) => {
                    let runner = self.runner.get_mut().unwrap_or_else(PoisonError::into_inner);
                    runner.attach_guard(session.guard.clone());
                    let local = vec![session.local_handle()];
                    self.drive = Drive::Matchbox(Box::new(session));
                    return Some(local);
                }
                Err(e) => {
                    self.ended = true;
                    self.pending.ended = Some(format!("cannot join the matchbox room: {e}"));
                }
            }
        }
        #[cfg(not(feature = "matchbox"))]
        let _ = now;
        None
    }

    /// The running matchbox match (feature `matchbox`): its roster, and its reliable channel
    /// for the game's own messages ([`MatchboxSession::broadcast_reliable`],
    /// [`MatchboxSession::receive_reliable`]). `None` while connecting and for other kinds.
    #[cfg(feature = "matchbox")]
    pub fn matchbox_mut(&mut self) -> Option<&mut MatchboxSession<G>> {
        match &mut self.drive {
            Drive::Matchbox(m) => Some(m),
            _ => None,
        }
    }

    /// Removes a remote player from a P2P match through the guard: the survivors agree on the
    /// frame its input ends at (`Leaving`, then `Left` session messages).
    pub fn kick(&mut self, player: PlayerHandle) -> Result<(), SessionError> {
        let runner = self.runner.get_mut().unwrap_or_else(PoisonError::into_inner);
        match &mut self.drive {
            Drive::P2pUdp(p) => runner.kick(&mut p.session, player),
            Drive::P2pEmulated(p) => runner.kick(&mut p.session, player),
            #[cfg(feature = "matchbox")]
            Drive::Matchbox(m) => runner.kick(&mut m.session, player),
            #[cfg(feature = "matchbox")]
            Drive::MatchboxConnecting(_) => Ok(()),
            Drive::SyncTest { .. } | Drive::SpectatorUdp(_) => Ok(()),
        }
    }

    /// This player quits a P2P match: every other peer is told at once and agrees on its last
    /// frame. The plugin stops advancing the match (remove the [`MatchSpec`] to drop it).
    pub fn leave(&mut self) -> Result<(), SessionError> {
        let runner = self.runner.get_mut().unwrap_or_else(PoisonError::into_inner);
        let r = match &mut self.drive {
            Drive::P2pUdp(p) => runner.leave_match(&mut p.session),
            Drive::P2pEmulated(p) => runner.leave_match(&mut p.session),
            #[cfg(feature = "matchbox")]
            Drive::Matchbox(m) => runner.leave_match(&mut m.session),
            #[cfg(feature = "matchbox")]
            Drive::MatchboxConnecting(_) => Ok(()),
            Drive::SyncTest { .. } | Drive::SpectatorUdp(_) => Ok(()),
        };
        self.ended = true;
        r
    }
}

/// The match's world, borrowed from [`AbilitiesMatch::world`] (it dereferences to the crate's
/// `World`).
pub struct WorldRef<'a, G: Game>(MutexGuard<'a, Runner<G>>);

impl<G: Game> core::ops::Deref for WorldRef<'_, G> {
    type Target = GameWorld<G>;
    fn deref(&self) -> &GameWorld<G> {
        self.0.world()
    }
}
