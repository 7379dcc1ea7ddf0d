//! `LocalMatch`: several GGRS peers in one process, talking over an [`EmulatedNetwork`].

use super::guard::GuardConfig;
use super::identity::{Identity, PublicIdentity};
use super::match_peer::MatchPeer;
use super::net::{EmulatedNetwork, EmulatedSocket, NetConditions, PeerAddr};
use super::runner::SessionError;
use super::start::{MatchKeys, SessionConfig};
use crate::num::Frame;
use crate::present::Presenter;
use crate::world::{Game, World};
use ggrs::SessionState;

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
    /// [`Runner::set_departure_ticks`](super::Runner::set_departure_ticks)); 0 never. Counted in ticks of the emulated clock, so a
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

/// One peer of a [`LocalMatch`]: a [`MatchPeer`] on the match's [`EmulatedNetwork`] (its
/// runner, GGRS session, guard and rejoin protocol; reached through `Deref`), and whether its
/// program is gone. Player `handle` is local to this peer; every other player is remote.
pub struct LocalPeer<G: Game> {
    peer: MatchPeer<G, EmulatedSocket>,
    left: bool,
}

impl<G: Game> core::ops::Deref for LocalPeer<G> {
    type Target = MatchPeer<G, EmulatedSocket>;

    fn deref(&self) -> &MatchPeer<G, EmulatedSocket> {
        &self.peer
    }
}

impl<G: Game> core::ops::DerefMut for LocalPeer<G> {
    fn deref_mut(&mut self) -> &mut MatchPeer<G, EmulatedSocket> {
        &mut self.peer
    }
}

impl<G: Game> LocalPeer<G> {
    /// Whether this peer left the match ([`LocalMatch::leave`]).
    pub fn has_left(&self) -> bool {
        self.left
    }

    /// The peer as a [`MatchPeer`].
    pub fn into_inner(self) -> MatchPeer<G, EmulatedSocket> {
        self.peer
    }
}

impl<G: Game> core::fmt::Debug for LocalPeer<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LocalPeer").field("peer", &self.peer).field("left", &self.left).finish()
    }
}

/// A whole P2P match in one process: one GGRS [`P2PSession`](ggrs::P2PSession) per player over a shared
/// [`EmulatedNetwork`] whose clock only moves when the match ticks (no sleeps, no wall clock
/// in the network, reproducible impairments). Every datagram is authenticated as between
/// programs, with per-match identities drawn from [`MatchConfig::net_seed`] (the match is one
/// process: nothing in it is secret from it), so a seeded run sends the same bytes each time.
/// GGRS's own resends run on the wall clock, so under loss a run can still differ by a few
/// ticks on a busy machine.
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
    setup: SessionConfig,
    /// Every slot's public identity, as the match's handshake announced them.
    publics: Vec<PublicIdentity>,
    /// Programs started so far (each draws its own rejoin challenge key from the seed).
    programs: u64,
}

/// 32 bytes drawn from the match's seed for `what` (an identity's halves, a program's rejoin
/// challenge key). The match lives in one process: nothing in it is secret from it, and
/// drawing these from the seed instead of the operating system makes a seeded run send the
/// same bytes, so the emulated network, which draws each packet's fate from its content, loses
/// the same packets every run.
fn seeded_key(seed: u64, what: &str, index: u64) -> [u8; 32] {
    let mut input = seed.to_le_bytes().to_vec();
    input.extend(index.to_le_bytes());
    blake3::derive_key(&format!("rollback_abilities LocalMatch {what}"), &input)
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
        let addrs: Vec<PeerAddr> = (0..config.players).map(|j| PeerAddr(j as u16)).collect();
        // Every datagram is authenticated: each peer has a per-match identity, and the keys a
        // handshake would carry are handed to the peers directly (they share this process). A
        // slot keeps its identity across a rejoin, so the sessions a rejoin starts are keyed too.
        // The identities come from the match's seed (`seeded_key`): a seeded run is the same
        // bytes every time.
        let seed = config.net_seed;
        let identities: Vec<Identity> = (0..config.players as u64)
            .map(|i| {
                let agree = seeded_key(seed, "identity agreement", i);
                Identity::from_secrets(agree, seeded_key(seed, "identity signing", i))
            })
            .collect();
        let publics: Vec<PublicIdentity> = identities.iter().map(Identity::public).collect();
        for (i, local) in identities.into_iter().enumerate() {
            let remotes =
                (0..config.players).filter(|j| *j != i).map(|j| (addrs[j], publics[j])).collect();
            let keys = MatchKeys { local, remotes };
            let transport = net.socket(addrs[i]);
            let mut peer =
                MatchPeer::start(make_world(i), transport, i, addrs.clone(), keys, setup)?;
            peer.seed_challenges(seeded_key(seed, "challenges", i as u64));
            peers.push(LocalPeer { peer, left: false });
        }
        let programs = config.players as u64;
        Ok(LocalMatch { net, peers, config, setup, publics, programs })
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
            let presenter = presenters.get_mut(i).map(|p| &mut **p as &mut dyn Presenter);
            let handle = p.handle;
            p.peer.tick(|frame, world| input(handle, frame, world), presenter, &mut script)?;
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

    /// Player `player` quits: its peer tells the others ([`Runner::leave_match`](super::Runner::leave_match)), then leaves as
    /// [`LocalMatch::leave`] does. The others agree on its last frame at once, without waiting
    /// [`MatchConfig::departure_ticks`].
    pub fn quit(&mut self, player: usize) -> Result<(), SessionError> {
        if let Some(p) = self.peers.iter_mut().find(|p| p.handle == player && !p.left) {
            p.peer.leave_match()?;
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
            self.net.partition(p.transport().addr(), true);
        }
    }

    /// Player `player`, which left ([`LocalMatch::leave`], [`LocalMatch::quit`],
    /// [`LocalMatch::stop`]), comes back as a restarted program would: with a fresh `world`
    /// (built as at the start of the match), its slot's match identity (which signs its claim
    /// on the slot) and its address reachable again. From the next ticks on it asks the
    /// members to let it back in (see [`rejoin`](super::rejoin)); once they agree on a frame F and it has loaded their state
    /// before F, every member and it continue from F in a new session
    /// ([`SessionEvent::Rejoined`](super::SessionEvent::Rejoined)). Does nothing for a player that has not left.
    pub fn rejoin(&mut self, player: usize, world: World<G>) -> Result<(), SessionError> {
        self.rejoin_from(player, world, PeerAddr(player as u16))
    }

    /// [`LocalMatch::rejoin`] from another address than the slot's (a restarted program on a
    /// new port, a player on a new network): the slot's key proves the claim, and the members
    /// reach the player at `addr` from the new session on. Its old address stays silent. Like
    /// a restarted program, the peer knows the match's slots only as the handshake announced
    /// them, at the addresses the match started at; the members tell it where they are now.
    pub fn rejoin_from(
        &mut self,
        player: usize,
        world: World<G>,
        addr: PeerAddr,
    ) -> Result<(), SessionError> {
        let addrs: Vec<PeerAddr> = (0..self.config.players).map(|j| PeerAddr(j as u16)).collect();
        let Some(p) = self.peers.iter_mut().find(|p| p.handle == player && p.left) else {
            return Ok(());
        };
        // The restarted program has kept its slot's identity (see `Identity::secrets`) and the
        // others' public identities from the handshake, by the addresses the match started at.
        let local = p.peer.keys_copy().local;
        let remotes = (0..addrs.len())
            .filter(|j| *j != player)
            .filter_map(|j| Some((addrs[j], *self.publics.get(j)?)))
            .collect();
        let keys = MatchKeys { local, remotes };
        let transport = self.net.socket(addr);
        p.peer = MatchPeer::rejoin(world, transport, player, addrs, keys, self.setup)?;
        p.peer.seed_challenges(seeded_key(self.config.net_seed, "challenges", self.programs));
        self.programs += 1;
        p.left = false;
        self.net.partition(addr, false);
        Ok(())
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

    /// Whether every peer has confirmed and simulated frames `0..frames` (GGRS may confirm a
    /// frame a peer has not simulated yet: its inputs are all in, its step is not).
    pub fn all_confirmed(&self, frames: Frame) -> bool {
        frames == 0
            || self.peers.iter().filter(|p| !p.left).all(|p| {
                !p.is_rejoining()
                    && p.confirmed_frame().is_some_and(|c| c + 1 >= frames)
                    && p.runner.world().next_frame() >= frames
            })
    }

    /// Whether the checksums recorded for confirmed frames agree across peers (only peers that
    /// record, see [`Runner::record`](super::Runner::record); true when none do). Compares the common prefix.
    pub fn confirmed_checksums_agree(&self) -> bool {
        let sums: Vec<Vec<u64>> = self
            .peers
            .iter()
            .filter(|p| !p.left)
            .filter_map(|p| p.runner.recorder())
            .map(|r| r.replay().frames.iter().map(|f| f.checksum).collect())
            .collect();
        let Some(n) = sums.iter().map(Vec::len).min() else { return true };
        if !sums.iter().all(|s| s[..n] == sums[0][..n]) {
            return false;
        }
        // Every peer's confirmed states (a rejoiner's from the frame it came back at).
        let live: Vec<_> = self.peers.iter().filter(|p| !p.left && !p.is_rejoining()).collect();
        live.iter().all(|a| {
            live.iter().all(|b| {
                a.runner
                    .confirmed_checksums()
                    .iter()
                    .all(|(f, s)| b.runner.confirmed_checksums().get(f).is_none_or(|t| t == s))
            })
        })
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
