//! `LocalMatch`: several GGRS peers in one process, talking over an [`EmulatedNetwork`].

use super::guard::{Guard, GuardConfig};
use super::identity::{Identity, PublicIdentity};
use super::net::{EmulatedNetwork, EmulatedSocket, NetConditions, PeerAddr};
use super::rejoin::{Hold, Joiner, JoinerView, Member, MemberView, RejoinCommand, RejoinEvent};
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
    /// The side channel the rejoin protocol speaks on.
    raw: EmulatedSocket,
    /// The session channel (0, then one more per membership change this peer took part in).
    channel: u32,
    /// The member side of the rejoin protocol.
    member: Member<PeerAddr>,
    /// This slot's identity and the others' public identities (kept across rejoins).
    keys: MatchKeys<PeerAddr>,
    /// Set while this peer is coming back into the match.
    joiner: Option<Joiner<PeerAddr>>,
    /// The state a joiner loaded, kept until its new session starts.
    joined_state: Option<Vec<u8>>,
    /// The players out of the match that this peer feeds the default input for (local players
    /// of its session).
    feeds: Vec<usize>,
    /// The last frame this peer gave a local input for.
    last_input: Option<Frame>,
}

impl<G: Game> LocalPeer<G> {
    /// This peer's per-match identity, secret half included: whoever holds it speaks for the
    /// peer (a test plays a dishonest member with it).
    pub fn identity(&self) -> &Identity {
        &self.keys.local
    }

    /// The session events this peer's runner reported (the newest 2048 to 4096).
    pub fn events(&self) -> &[SessionEvent] {
        &self.events
    }

    /// Whether this peer left the match ([`LocalMatch::leave`]).
    pub fn has_left(&self) -> bool {
        self.left
    }

    /// Whether this peer is coming back into the match ([`LocalMatch::rejoin`]) and not in yet.
    pub fn is_rejoining(&self) -> bool {
        self.joiner.is_some()
    }

    /// Whether a rejoin is under way on this peer: it is coming back, or, as a member, it holds
    /// the match for a player coming back.
    pub fn rejoin_under_way(&self) -> bool {
        self.joiner.is_some() || self.member.busy()
    }

    /// The session channel: 0 for the first session, one more for each session started by a
    /// rejoin this peer took part in.
    pub fn channel(&self) -> u32 {
        self.channel
    }

    /// The confirmed world frame (`None` before any), whatever session the peer is in.
    pub fn confirmed_frame(&self) -> Option<Frame> {
        let c = self.session.confirmed_frame();
        let base = self.runner.frame_base();
        if c >= 0 { Some(base.saturating_add(c as Frame)) } else { base.checked_sub(1) }
    }

    /// The joiner's progress: bytes of the state received and its size ((0, 0) when not
    /// rejoining or before an offer).
    pub fn rejoin_progress(&self) -> (usize, usize) {
        self.joiner.as_ref().map_or((0, 0), Joiner::progress)
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
    setup: SessionConfig,
    /// Every slot's public match identity (its rejoin claims are signed with it).
    publics: Vec<PublicIdentity>,
    /// The key each member's challenge-nonce key is drawn with, and members made so far.
    nonce_seed: [u8; 32],
    members_made: u64,
}

impl<G: Game> core::fmt::Debug for LocalMatch<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LocalMatch")
            .field("config", &self.config)
            .field("peers", &self.peers)
            .finish()
    }
}

/// The challenge-nonce key of the `n`th [`Member`] a match makes: distinct for every member,
/// so no two members issue the same nonce.
fn nonce_key(seed: &[u8; 32], n: u64) -> [u8; 32] {
    *blake3::keyed_hash(seed, &n.to_le_bytes()).as_bytes()
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
        let addrs: Vec<PeerAddr> = (0..config.players).map(|j| PeerAddr(j as u16)).collect();
        // The rejoin protocol's challenge nonces: every member draws them with its own key.
        let mut nonce_seed = [0u8; 32];
        getrandom::getrandom(&mut nonce_seed)
            .map_err(|e| SessionError::Identity(super::IdentityError(e.to_string())))?;
        // Every datagram is authenticated: each peer has a per-match identity, and the keys a
        // handshake would carry are handed to the peers directly (they share this process). A
        // slot keeps its identity across a rejoin, so the sessions a rejoin starts are keyed too.
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
                raw: net.socket(PeerAddr(i as u16)),
                channel: 0,
                member: Member::new(
                    addrs.clone(),
                    publics.clone(),
                    nonce_key(&nonce_seed, i as u64),
                ),
                joiner: None,
                joined_state: None,
                feeds: Vec::new(),
                last_input: None,
                keys,
            });
        }
        let members_made = config.players as u64;
        Ok(LocalMatch { net, peers, config, setup, publics, nonce_seed, members_made })
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
        let players = self.config.players;
        for (i, p) in self.peers.iter_mut().enumerate() {
            if p.left {
                continue;
            }
            if !rejoin_step(p, &self.net, &self.setup, players)? {
                continue;
            }
            let world = p.runner.world();
            let frame = world.next_frame() + p.input_delay as Frame;
            let local = match p.member.hold() {
                Hold::Play => input(p.handle, frame, world),
                Hold::DefaultAfter(last) if frame <= last => input(p.handle, frame, world),
                Hold::DefaultAfter(_) => G::Input::default(),
                Hold::Pause => {
                    // Holding for a rejoin: the session is polled, not advanced, so the inputs
                    // this peer sent keep arriving.
                    p.guard.begin_tick(p.session.current_frame());
                    p.session.poll_remote_clients();
                    continue;
                }
            };
            let mut locals = vec![(p.handle, local)];
            locals.extend(p.feeds.iter().map(|a| (*a, G::Input::default())));
            let presenter = presenters.get_mut(i).map(|p| &mut **p as &mut dyn Presenter);
            let batch = p.runner.advance_p2p(&mut p.session, &locals, presenter, &mut script)?;
            if batch.advanced > 0 {
                p.last_input = Some(p.last_input.map_or(frame, |l| l.max(frame)));
            }
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

    /// Player `player`, which left ([`LocalMatch::leave`], [`LocalMatch::quit`],
    /// [`LocalMatch::stop`]), comes back as a restarted program would: with a fresh `world`
    /// (built as at the start of the match), its slot's match identity (which signs its claim
    /// on the slot) and its address reachable again. From the next ticks on it asks the
    /// members to let it back in (see [`rejoin`](super::rejoin)); once they agree on a frame F and it has loaded their state
    /// before F, every member and it continue from F in a new session
    /// ([`SessionEvent::Rejoined`]). Does nothing for a player that has not left.
    pub fn rejoin(&mut self, player: usize, world: World<G>) {
        let addrs: Vec<PeerAddr> = (0..self.config.players).map(|j| PeerAddr(j as u16)).collect();
        let Some(p) = self.peers.iter_mut().find(|p| p.handle == player && p.left) else {
            return;
        };
        let view = JoinerView {
            slot: player,
            content_hash: world.content().hash(),
            hooks_hash: twox_hash::XxHash3_64::oneshot(world.hooks_signature().as_bytes()),
            snapshot_len: world.snapshot_bytes() as u64,
        };
        p.runner = self.setup.runner(world);
        p.left = false;
        self.members_made += 1;
        let key = nonce_key(&self.nonce_seed, self.members_made);
        p.member = Member::new(addrs.clone(), self.publics.clone(), key);
        p.joiner = Some(Joiner::new(view, addrs, p.keys.local.clone()));
        p.joined_state = None;
        p.last_input = None;
        // Whatever reached the old program's address while it was gone is lost with it.
        p.raw.recv_raw();
        self.net.partition(PeerAddr(player as u16), false);
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
                p.joiner.is_none()
                    && p.confirmed_frame().is_some_and(|c| c + 1 >= frames)
                    && p.runner.world().next_frame() >= frames
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
        if !sums.iter().all(|s| s[..n] == sums[0][..n]) {
            return false;
        }
        // Every peer's confirmed states (a rejoiner's from the frame it came back at).
        let live: Vec<_> = self.peers.iter().filter(|p| !p.left && p.joiner.is_none()).collect();
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

/// One tick of the rejoin protocol on a peer: its side-channel messages, the protocol's step,
/// the commands it gives. `false`: the peer does not advance this tick (it is coming back).
fn rejoin_step<G: Game>(
    p: &mut LocalPeer<G>,
    net: &EmulatedNetwork,
    setup: &SessionConfig,
    players: usize,
) -> Result<bool, SessionError> {
    let inbox = p.raw.recv_raw();
    if let Some(j) = p.joiner.as_mut() {
        for (from, bytes) in &inbox {
            j.receive(from, bytes);
        }
        j.tick();
        let commands = j.drain_commands();
        for (to, bytes) in j.drain_outbox() {
            p.raw.send_raw(to, bytes);
        }
        let events = j.drain_events();
        push_rejoin_events(p, events);
        for c in commands {
            match c {
                RejoinCommand::Load { frame, bytes } => {
                    let world = p.runner.world_mut();
                    let result = match world.load_bytes(&bytes) {
                        Ok(()) if world.next_frame() == frame => Ok(world.checksum()),
                        Ok(()) => Err(format!(
                            "the state is of frame {}, not {frame}",
                            world.next_frame()
                        )),
                        Err(e) => Err(e.to_string()),
                    };
                    if result.is_ok() {
                        p.joined_state = Some(bytes);
                    }
                    if let Some(j) = p.joiner.as_mut() {
                        j.loaded(result);
                        for (to, bytes) in j.drain_outbox() {
                            p.raw.send_raw(to, bytes);
                        }
                        let events = j.drain_events();
                        push_rejoin_events(p, events);
                    }
                }
                RejoinCommand::Switch { channel, frame, members } => {
                    let state = p.joined_state.take().unwrap_or_default();
                    switch(p, net, setup, players, channel, frame, &members, &state)?;
                    p.joiner = None;
                }
                RejoinCommand::Capture(_) | RejoinCommand::Cancel => {}
            }
        }
        return Ok(false);
    }
    let world = p.runner.world();
    let mut out: Vec<usize> = p.runner.absent().to_vec();
    for h in 0..players {
        if p.guard.address_of(h).is_some_and(|a| p.guard.is_cut_off(&a)) && !out.contains(&h) {
            out.push(h);
        }
    }
    out.sort_unstable();
    let view = MemberView {
        slot: p.handle,
        channel: p.channel,
        out,
        departing: p.guard.departing(),
        starting: p.session.current_state() != SessionState::Running,
        last_input: p.last_input.unwrap_or(0),
        content_hash: world.content().hash(),
        hooks_hash: twox_hash::XxHash3_64::oneshot(world.hooks_signature().as_bytes()),
        snapshot_len: world.snapshot_bytes() as u64,
    };
    for (from, bytes) in &inbox {
        p.member.receive(from, bytes, &view);
    }
    p.member.tick(&view, p.runner.captured());
    for (to, bytes) in p.member.drain_outbox() {
        p.raw.send_raw(to, bytes);
    }
    let events = p.member.drain_events();
    push_rejoin_events(p, events);
    for c in p.member.drain_commands() {
        match c {
            RejoinCommand::Capture(frame) => {
                p.runner.capture_at(frame);
            }
            RejoinCommand::Cancel => p.runner.cancel_capture(),
            RejoinCommand::Switch { channel, frame, members } => {
                let Some((_, bytes, _)) = p.runner.captured() else {
                    return Err(SessionError::MissingSnapshot { frame });
                };
                let state = bytes.to_vec();
                switch(p, net, setup, players, channel, frame, &members, &state)?;
            }
            RejoinCommand::Load { .. } => {}
        }
    }
    Ok(true)
}

/// Moves a peer into the session that starts at `frame` with `members` in the match.
#[allow(clippy::too_many_arguments)]
fn switch<G: Game>(
    p: &mut LocalPeer<G>,
    net: &EmulatedNetwork,
    setup: &SessionConfig,
    players: usize,
    channel: u32,
    frame: Frame,
    members: &[usize],
    state: &[u8],
) -> Result<(), SessionError> {
    let before: Vec<usize> = if p.joiner.is_some() {
        Vec::new()
    } else {
        (0..players)
            .filter(|h| {
                !p.runner.absent().contains(h)
                    && !p.guard.address_of(*h).is_some_and(|a| p.guard.is_cut_off(&a))
            })
            .collect()
    };
    let absent: Vec<usize> = (0..players).filter(|s| !members.contains(s)).collect();
    p.runner
        .rebase(frame, state, absent.clone())
        .map_err(|_| SessionError::MissingSnapshot { frame })?;
    let handle = p.handle;
    // The players still out are local on one member, the lowest in the match, and remote at
    // its address on the others: GGRS sends a peer's local players' inputs together, so every
    // member must see the same players behind each address. Their inputs never reach the game
    // (the runner hands it the default input and `Disconnected` for them).
    let keeper = members.iter().copied().min().unwrap_or(handle);
    let kinds = (0..players).map(|j| {
        let t = if j == handle || (absent.contains(&j) && keeper == handle) {
            PlayerType::Local
        } else if absent.contains(&j) {
            PlayerType::Remote(PeerAddr(keeper as u16))
        } else {
            PlayerType::Remote(PeerAddr(j as u16))
        };
        (j, t)
    });
    p.feeds = if keeper == handle { absent.clone() } else { Vec::new() };
    let socket = net.socket_on_channel(PeerAddr(handle as u16), channel);
    let (session, guard) = setup.start_p2p_keyed(&mut p.runner, socket, kinds, &p.keys)?;
    p.session = session;
    p.guard = guard;
    p.channel = channel;
    p.last_input = (frame + p.input_delay as Frame).checked_sub(1);
    let back: Vec<usize> = if p.joiner.is_some() {
        vec![handle]
    } else {
        members.iter().copied().filter(|m| !before.contains(m)).collect()
    };
    p.events.push(SessionEvent::Rejoined { players: back, frame });
    Ok(())
}

fn push_rejoin_events<G: Game>(p: &mut LocalPeer<G>, events: Vec<RejoinEvent>) {
    for e in events {
        p.events.push(match e {
            RejoinEvent::Rejoining { slot } => SessionEvent::Rejoining { players: vec![slot] },
            RejoinEvent::Aborted { slot } => SessionEvent::RejoinAborted { players: vec![slot] },
            RejoinEvent::Fault { from, fault } => SessionEvent::RejoinFault {
                peer: from
                    .map_or_else(|| "unknown".to_owned(), |s| format!("{:?}", PeerAddr(s as u16))),
                fault,
            },
        });
    }
}
