//! `LocalMatch`: several GGRS peers in one process, talking over an [`EmulatedNetwork`].

use super::guard::{Guard, GuardConfig};
use super::identity::{Identity, PublicIdentity};
use super::net::{EmulatedNetwork, NetConditions, PeerAddr};
use super::runner::{GgrsConfig, Runner, SessionError, SessionEvent};
use super::start::{MatchKeys, SessionConfig};
use crate::num::Frame;
use crate::present::Presenter;
use crate::world::{Game, World};
use ggrs::{P2PSession, PlayerType, SessionState};

/// How a [`LocalMatch`] is set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchConfig {
    /// Players (one peer each), 2 to 4 in practice.
    pub players: usize,
    /// GGRS input delay in frames.
    pub input_delay: usize,
    /// GGRS prediction window (frames a peer may run ahead of confirmed inputs).
    pub max_prediction: usize,
    /// Desync detection interval in frames (0: off).
    pub desync_interval: u32,
    /// Emulated milliseconds between ticks (16 ≈ 60 Hz).
    pub tick_ms: u64,
    /// The network's impairments, switched on once every peer is synchronised.
    pub conditions: NetConditions,
    /// The network's random seed (drops, jitter, duplicates and reordering are reproducible).
    pub net_seed: u64,
    /// Ticks a peer waits on a silent player before it leaves the match (see
    /// [`Runner::set_departure_ticks`]); 0 never. Counted in ticks of the emulated clock, so a
    /// seeded match gives the same result at any machine load (GGRS's own disconnect timeout
    /// runs on the wall clock and is switched off in a `LocalMatch`).
    pub departure_ticks: u32,
}

impl Default for MatchConfig {
    fn default() -> Self {
        MatchConfig {
            players: 2,
            input_delay: 2,
            max_prediction: 8,
            desync_interval: 10,
            tick_ms: 16,
            conditions: NetConditions::PERFECT,
            net_seed: 1,
            departure_ticks: 300,
        }
    }
}

/// One peer of a [`LocalMatch`]: its runner (world, snapshots, recorder, cue director) and its
/// GGRS session. Player `handle` is local to this peer; every other player is remote.
pub struct LocalPeer<G: Game> {
    /// The peer's world and rollback machinery.
    pub runner: Runner<G>,
    /// The peer's GGRS session (over a [`GuardedSocket`](super::GuardedSocket)).
    pub session: P2PSession<GgrsConfig<G, PeerAddr>>,
    /// The player this peer controls.
    pub handle: usize,
    /// The validating layer in front of the peer's GGRS session.
    pub guard: Guard<PeerAddr>,
    input_delay: usize,
    /// Every event the runner reported, in order.
    events: Vec<SessionEvent>,
    left: bool,
}

impl<G: Game> LocalPeer<G> {
    /// The session events this peer's runner reported (the newest 2048 to 4096).
    pub fn events(&self) -> &[SessionEvent] {
        &self.events
    }

    /// Whether this peer left the match ([`LocalMatch::leave`]).
    pub fn has_left(&self) -> bool {
        self.left
    }

    /// The peer's current input delay.
    pub fn input_delay(&self) -> usize {
        self.input_delay
    }

    /// Changes the peer's input delay during the match (GGRS replicates the last input to fill
    /// a longer delay and drops inputs of frames a shorter one skips).
    pub fn set_input_delay(&mut self, delay: usize) -> Result<(), SessionError> {
        self.session.set_input_delay(self.handle, delay)?;
        self.input_delay = delay;
        Ok(())
    }
}

impl<G: Game> core::fmt::Debug for LocalPeer<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LocalPeer")
            .field("handle", &self.handle)
            .field("runner", &self.runner)
            .finish()
    }
}

/// A whole P2P match in one process: one GGRS [`P2PSession`] per player over a shared
/// [`EmulatedNetwork`] whose clock only moves when the match ticks (no sleeps, no wall clock
/// in the network, reproducible impairments).
///
/// ```
/// use rollback_abilities::prelude::*;
/// use rollback_abilities::session::{LocalMatch, MatchConfig, NetConditions};
///
/// struct G;
/// impl Game for G { type Input = u8; type Component = (); type Global = (); }
/// let content = std::sync::Arc::new(Content::from_ron_str("()")?);
/// let config = MatchConfig { conditions: NetConditions::HARSH, ..MatchConfig::default() };
/// let mut m = LocalMatch::<G>::new(config, |_| {
///     World::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap()
/// })?;
/// m.synchronize()?;
/// m.run(120, |player, frame, _world| (frame % 7) as u8 + player as u8)?;
/// assert!(m.peers().iter().all(|p| p.session.confirmed_frame() >= 119));
/// assert!(m.confirmed_checksums_agree());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct LocalMatch<G: Game> {
    net: EmulatedNetwork,
    peers: Vec<LocalPeer<G>>,
    config: MatchConfig,
}

impl<G: Game> core::fmt::Debug for LocalMatch<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LocalMatch")
            .field("config", &self.config)
            .field("peers", &self.peers)
            .finish()
    }
}

/// How many ticks [`LocalMatch::synchronize`] and [`LocalMatch::run`] allow before giving up
/// (per frame for `run`).
const SYNC_TICKS: u32 = 20_000;

/// Session events a [`LocalPeer`] keeps (the newest).
const MAX_EVENTS: usize = 4096;

impl<G: Game> LocalMatch<G> {
    /// Builds the peers. `make_world(peer)` builds each peer's world, which must be identical
    /// on every peer (same content, hooks, configuration, setup) with player `i` bound to its
    /// fighter.
    pub fn new(
        config: MatchConfig,
        mut make_world: impl FnMut(usize) -> World<G>,
    ) -> Result<LocalMatch<G>, SessionError> {
        let net = EmulatedNetwork::new(config.conditions, config.net_seed);
        net.set_impaired(false);
        let mut peers = Vec::with_capacity(config.players);
        // Every peer is built the documented way ([`SessionConfig::start_p2p`]). Paced: GGRS's
        // wall-clock traffic is replaced by resends on the emulated clock; GGRS's timeouts run
        // on the wall clock and are off (`departure_ticks` decides).
        let setup = SessionConfig {
            max_prediction: config.max_prediction,
            input_delay: config.input_delay,
            desync_interval: config.desync_interval,
            departure_ticks: config.departure_ticks,
            max_wait_frames: None,
            guard: Some(GuardConfig::new(config.players, config.max_prediction).with_paced(true)),
        };
        // Every datagram is authenticated: each peer has a per-match identity, and the keys a
        // handshake would carry are handed to the peers directly (they share this process).
        let identities = (0..config.players)
            .map(|_| Identity::generate())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                SessionError::Ggrs(ggrs::GgrsError::InvalidRequest { info: e.to_string() })
            })?;
        let publics: Vec<PublicIdentity> = identities.iter().map(Identity::public).collect();
        for (i, local) in identities.into_iter().enumerate() {
            let remotes = (0..config.players)
                .filter(|j| *j != i)
                .map(|j| (PeerAddr(j as u16), publics[j]))
                .collect();
            let keys = MatchKeys { local, remotes };
            let players = (0..config.players).map(|j| {
                let t =
                    if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j as u16)) };
                (j, t)
            });
            let mut runner = setup.runner(make_world(i));
            let (session, guard) = setup.start_p2p_keyed(
                &mut runner,
                net.socket(PeerAddr(i as u16)),
                players,
                &keys,
            )?;
            peers.push(LocalPeer {
                runner,
                session,
                handle: i,
                guard,
                input_delay: config.input_delay,
                events: Vec::new(),
                left: false,
            });
        }
        Ok(LocalMatch { net, peers, config })
    }

    /// Exchanges synchronisation packets (on an unimpaired network) until every peer runs,
    /// then switches the configured impairments on.
    pub fn synchronize(&mut self) -> Result<(), SessionError> {
        for _ in 0..SYNC_TICKS {
            for p in &mut self.peers {
                p.session.poll_remote_clients();
            }
            self.net.advance_ms(5);
            if self.peers.iter().all(|p| p.session.current_state() == SessionState::Running) {
                // GGRS retries synchronisation on the wall clock, so how long it took may vary
                // with machine load: the match proper starts from a clean network at time 0.
                self.net.restart_clock();
                self.net.set_impaired(true);
                return Ok(());
            }
        }
        Err(SessionError::Ggrs(ggrs::GgrsError::NotSynchronized))
    }

    /// One tick: every peer adds its local input and advances; then the network clock moves by
    /// `tick_ms`. `input(player, frame, world)` gives the input for `frame` — the peer's next
    /// frame plus the input delay, since GGRS delays local inputs — read from the peer's own,
    /// possibly predicted, world. (With an input delay of `d`, frames `0..d` get the default
    /// input on every peer.) `script` runs inside every simulated frame on every peer (see
    /// [`World::step_with`]); `presenters`, when not empty, holds one presenter per peer for
    /// the peers' cue directors.
    pub fn tick(
        &mut self,
        mut input: impl FnMut(usize, Frame, &World<G>) -> G::Input,
        presenters: &mut [&mut dyn Presenter],
        mut script: impl FnMut(&mut World<G>),
    ) -> Result<(), SessionError> {
        for (i, p) in self.peers.iter_mut().enumerate() {
            if p.left {
                continue;
            }
            let world = p.runner.world();
            let frame = world.next_frame() + p.input_delay as Frame;
            let local = input(p.handle, frame, world);
            let presenter = presenters.get_mut(i).map(|p| &mut **p as &mut dyn Presenter);
            p.runner.advance_p2p(&mut p.session, &[(p.handle, local)], presenter, &mut script)?;
            p.events.extend(p.runner.drain_events());
            // A bounded log: a misbehaving peer cannot grow it without limit.
            if p.events.len() > MAX_EVENTS {
                p.events.drain(..p.events.len() - MAX_EVENTS / 2);
            }
        }
        self.net.advance_ms(self.config.tick_ms);
        Ok(())
    }

    /// Player `player`'s peer stops ticking (a frozen program, or one that stopped advancing on
    /// purpose) while its socket stays on the network. The others wait for it for
    /// [`MatchConfig::departure_ticks`] ticks, then carry on without it.
    pub fn stop(&mut self, player: usize) {
        if let Some(p) = self.peers.iter_mut().find(|p| p.handle == player) {
            p.left = true;
        }
    }

    /// Player `player` quits: its peer tells the others ([`Runner::leave_match`]), then leaves as
    /// [`LocalMatch::leave`] does. The others agree on its last frame at once, without waiting
    /// [`MatchConfig::departure_ticks`].
    pub fn quit(&mut self, player: usize) -> Result<(), SessionError> {
        if let Some(p) = self.peers.iter_mut().find(|p| p.handle == player && !p.left) {
            p.runner.leave_match(&mut p.session)?;
        }
        self.leave(player);
        Ok(())
    }

    /// Player `player`'s peer leaves: it stops ticking and its packets stop (as a closed
    /// program's would). The others wait for it for [`MatchConfig::departure_ticks`] ticks,
    /// then carry on with its input as disconnected.
    pub fn leave(&mut self, player: usize) {
        if let Some(p) = self.peers.iter_mut().find(|p| p.handle == player) {
            p.left = true;
            self.net.partition(PeerAddr(player as u16), true);
        }
    }

    /// Ticks until every peer has confirmed frames `0..frames`. Inputs for frames at or after
    /// `frames` are the default input.
    pub fn run(
        &mut self,
        frames: Frame,
        mut input: impl FnMut(usize, Frame, &World<G>) -> G::Input,
    ) -> Result<(), SessionError> {
        self.run_with(frames, &mut input, &mut [], |_| {})
    }

    /// [`LocalMatch::run`] with presenters and a per-frame script.
    pub fn run_with(
        &mut self,
        frames: Frame,
        mut input: impl FnMut(usize, Frame, &World<G>) -> G::Input,
        presenters: &mut [&mut dyn Presenter],
        mut script: impl FnMut(&mut World<G>),
    ) -> Result<(), SessionError> {
        let limit = u64::from(frames) * 20 + u64::from(SYNC_TICKS);
        let mut ticks = 0u64;
        while !self.all_confirmed(frames) {
            self.tick(
                |p, f, w| if f < frames { input(p, f, w) } else { G::Input::default() },
                presenters,
                &mut script,
            )?;
            ticks += 1;
            if ticks > limit {
                let frame = self
                    .peers
                    .iter()
                    .filter(|p| !p.left)
                    .map(|p| p.runner.world().next_frame())
                    .min()
                    .unwrap_or(0);
                return Err(SessionError::Stalled { frame, ticks });
            }
        }
        Ok(())
    }

    /// Whether every peer has confirmed frames `0..frames`.
    pub fn all_confirmed(&self, frames: Frame) -> bool {
        frames == 0
            || self.peers.iter().filter(|p| !p.left).all(|p| {
                let c = p.session.confirmed_frame();
                c >= 0 && c as Frame + 1 >= frames
            })
    }

    /// Whether the checksums recorded for confirmed frames agree across peers (only peers that
    /// record, see [`Runner::record`]; true when none do). Compares the common prefix.
    pub fn confirmed_checksums_agree(&self) -> bool {
        let sums: Vec<Vec<u64>> = self
            .peers
            .iter()
            .filter(|p| !p.left)
            .filter_map(|p| p.runner.recorder())
            .map(|r| r.replay().frames.iter().map(|f| f.checksum).collect())
            .collect();
        let Some(n) = sums.iter().map(Vec::len).min() else { return true };
        sums.iter().all(|s| s[..n] == sums[0][..n])
    }

    /// The peers.
    pub fn peers(&self) -> &[LocalPeer<G>] {
        &self.peers
    }

    /// The peers, mutably (to record, change input delay, disconnect a player…).
    pub fn peers_mut(&mut self) -> &mut [LocalPeer<G>] {
        &mut self.peers
    }

    /// The network (statistics, partitions, changing conditions mid-match).
    pub fn network(&self) -> &EmulatedNetwork {
        &self.net
    }

    /// The configuration.
    pub fn config(&self) -> &MatchConfig {
        &self.config
    }

    /// Takes the peers apart.
    pub fn into_peers(self) -> Vec<LocalPeer<G>> {
        self.peers
    }
}
