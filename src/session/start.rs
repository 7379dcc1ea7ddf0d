//! Guarded sessions in one call: [`Peer::start`], [`Spectator::start`] and the
//! [`SessionConfig`] they (and the matchbox transport) share. The socket goes behind a
//! [`GuardedSocket`], GGRS is built with the settings the crate's guarantees need, and the
//! guard is attached to the [`Runner`]. A GGRS builder for a socket nobody guards is
//! [`unguarded_builder`]: its name says what it leaves to the caller.

use super::guard::{Guard, GuardConfig, GuardedSocket};
use super::identity::{Identity, PublicIdentity};
use super::runner::{
    Address, Batch, DEFAULT_DEPARTURE_TICKS, GgrsConfig, Runner, SessionError, hardened_builder,
};
use crate::present::Presenter;
use crate::world::{Game, World};
use ggrs::{GgrsError, NonBlockingSocket, P2PSession, PlayerType, SessionState, SpectatorSession};

/// A started session and the guard in front of its socket.
type Started<S, A> = (S, Guard<A>);

/// A peer's keys for one match, exchanged before the session starts: its own per-match
/// [`Identity`] and the identity each remote address announced in the session
/// [`Handshake`](super::Handshake). Given to a `*_keyed` session starter, the guard
/// authenticates every datagram with them ([`Guard::authenticate`]) instead of learning the
/// identities on the socket ([`Guard::introduce`], what the plain starters do): a datagram
/// only a member could have made is read, anything else is dropped unread.
#[derive(Debug)]
pub struct MatchKeys<A> {
    /// This peer's identity (announced in its handshake).
    pub local: Identity,
    /// Every remote address (players and spectators) with the identity it announced.
    pub remotes: Vec<(A, PublicIdentity)>,
}

/// How [`Peer::start`], [`Spectator::start`] and the matchbox transport set up a guarded
/// session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionConfig {
    /// GGRS's prediction window (frames a peer may run ahead of confirmed inputs).
    pub max_prediction: usize,
    /// GGRS input delay in frames.
    pub input_delay: usize,
    /// Desync detection interval in frames (0: off).
    pub desync_interval: u32,
    /// Ticks a peer waits on a silent player (a spectator on its silent host) before it leaves
    /// the match ([`Runner::set_departure_ticks`]; 0: never).
    pub departure_ticks: u32,
    /// The cap on [`SessionEvent::WaitRecommendation`](super::SessionEvent::WaitRecommendation)
    /// ([`Runner::set_max_wait_frames`]); `None`: the prediction window.
    pub max_wait_frames: Option<u32>,
    /// The guard's limits; `None`: [`GuardConfig::new`] for the session's players and
    /// prediction window (a spectator's is made [`GuardConfig::for_spectator`] either way).
    pub guard: Option<GuardConfig>,
}

impl Default for SessionConfig {
    /// A prediction window of 8, an input delay of 2, desync detection every 10 frames, the
    /// default departure time, waits capped at the prediction window, the default guard.
    fn default() -> Self {
        SessionConfig {
            max_prediction: 8,
            input_delay: 2,
            desync_interval: 10,
            departure_ticks: DEFAULT_DEPARTURE_TICKS,
            max_wait_frames: None,
            guard: None,
        }
    }
}

impl SessionConfig {
    /// A runner for `world` with these settings (no guard attached yet: [`SessionConfig::start_p2p`]
    /// and [`SessionConfig::start_spectator`] attach one).
    pub fn runner<G: Game>(&self, world: World<G>) -> Runner<G> {
        let mut runner = Runner::new(world, self.max_prediction, self.desync_interval);
        runner.set_departure_ticks(self.departure_ticks);
        if let Some(cap) = self.max_wait_frames {
            runner.set_max_wait_frames(cap);
        }
        runner
    }

    /// The guard's configuration for a session of `players`.
    fn guard_config(&self, players: usize) -> GuardConfig {
        self.guard.unwrap_or_else(|| GuardConfig::new(players, self.max_prediction))
    }

    /// Starts a P2P session for `runner`: `socket` goes behind a [`GuardedSocket`], the GGRS
    /// session is built with these settings (GGRS's wall-clock disconnect timeout off: the
    /// runner's departure rule decides) and the guard is attached to `runner`. `players` lists
    /// every player handle with its kind (one `Local`, a `Remote` address for each other
    /// player, `Spectator` addresses with handles past the players'). Returns the session and
    /// the guard (the runner holds a copy).
    ///
    /// Every datagram is authenticated: this peer makes a fresh [`Identity`] for the match and
    /// learns every remote's on the socket itself ([`Guard::introduce`]), so a datagram is read
    /// only when its sender's key sealed it, and every player's input is signed. An attacker
    /// off the path cannot fault, flood, ban or speak for a member, whatever address and
    /// session number it forges. Every peer of the match must start this way (or every peer
    /// with [`SessionConfig::start_p2p_keyed`]). Fails with [`SessionError::Identity`] when the
    /// operating system gives no randomness.
    pub fn start_p2p<G: Game, A: Address, S: NonBlockingSocket<A> + 'static>(
        &self,
        runner: &mut Runner<G>,
        socket: S,
        players: impl IntoIterator<Item = (usize, PlayerType<A>)>,
    ) -> Result<Started<P2PSession<GgrsConfig<G, A>>, A>, SessionError> {
        self.start_p2p_with(runner, socket, players, None)
    }

    /// [`SessionConfig::start_p2p`] with the identities given in `keys` (exchanged beforehand,
    /// in the session [`Handshake`](super::Handshake) over a lobby or another channel the peers
    /// trust) instead of learnt on the socket: this also holds against an attacker on the path
    /// while the session starts. Fails when a remote of `players` has no valid identity in
    /// `keys`.
    pub fn start_p2p_keyed<G: Game, A: Address, S: NonBlockingSocket<A> + 'static>(
        &self,
        runner: &mut Runner<G>,
        socket: S,
        players: impl IntoIterator<Item = (usize, PlayerType<A>)>,
        keys: &MatchKeys<A>,
    ) -> Result<Started<P2PSession<GgrsConfig<G, A>>, A>, SessionError> {
        self.start_p2p_with(runner, socket, players, Some((keys, 0)))
    }

    /// [`SessionConfig::start_p2p_keyed`] on session channel `channel`, whose datagram keys
    /// are its own (a session a rejoin starts: see [`rejoin`](super::rejoin)).
    pub(crate) fn start_p2p_keyed_on<G: Game, A: Address, S: NonBlockingSocket<A> + 'static>(
        &self,
        runner: &mut Runner<G>,
        socket: S,
        players: impl IntoIterator<Item = (usize, PlayerType<A>)>,
        keys: &MatchKeys<A>,
        channel: u32,
    ) -> Result<Started<P2PSession<GgrsConfig<G, A>>, A>, SessionError> {
        self.start_p2p_with(runner, socket, players, Some((keys, channel)))
    }

    fn start_p2p_with<G: Game, A: Address, S: NonBlockingSocket<A> + 'static>(
        &self,
        runner: &mut Runner<G>,
        socket: S,
        players: impl IntoIterator<Item = (usize, PlayerType<A>)>,
        keys: Option<(&MatchKeys<A>, u32)>,
    ) -> Result<Started<P2PSession<GgrsConfig<G, A>>, A>, SessionError> {
        let players: Vec<(usize, PlayerType<A>)> = players.into_iter().collect();
        let count = players.iter().filter(|(_, t)| !matches!(t, PlayerType::Spectator(_))).count();
        let mut remotes: Vec<(A, Vec<usize>)> = Vec::new();
        for (handle, kind) in &players {
            let (addr, handle) = match kind {
                PlayerType::Local => continue,
                PlayerType::Remote(a) => (a, Some(*handle)),
                PlayerType::Spectator(a) => (a, None),
            };
            match remotes.iter_mut().find(|(r, _)| r == addr) {
                Some((_, handles)) => handles.extend(handle),
                None => remotes.push((addr.clone(), handle.into_iter().collect())),
            }
        }
        let need: Vec<A> = remotes.iter().map(|(a, _)| a.clone()).collect();
        let (socket, guard) =
            GuardedSocket::new::<G::Input>(socket, self.guard_config(count), remotes);
        match keys {
            Some((keys, channel)) => authenticate(&guard, keys, &need, channel)?,
            None => introduce(&guard)?,
        }
        let mut builder = hardened_builder::<GgrsConfig<G, A>>(
            count,
            self.max_prediction,
            self.input_delay,
            self.desync_interval,
        )?;
        for (handle, kind) in players {
            builder = builder.add_player(kind, handle)?;
        }
        let session = builder.start_p2p_session(socket)?;
        runner.attach_guard(guard.clone());
        Ok((session, guard))
    }

    /// Starts a spectator session of `host` (the peer whose session lists this one as a
    /// `Spectator`) for `runner`: `socket` goes behind a [`GuardedSocket`] that takes every
    /// player's input from the host and nothing from anyone else, GGRS's wall-clock disconnect
    /// timeout is off (a host silent for [`SessionConfig::departure_ticks`] is reported
    /// gone), and the guard is attached to `runner`. The runner's world sets the number of
    /// players. Every datagram to and from the host is authenticated with identities learnt on
    /// the socket, as in [`SessionConfig::start_p2p`] (the host's session lists this spectator
    /// and starts the same way).
    pub fn start_spectator<G: Game, A: Address, S: NonBlockingSocket<A> + 'static>(
        &self,
        runner: &mut Runner<G>,
        socket: S,
        host: A,
    ) -> Result<Started<SpectatorSession<GgrsConfig<G, A>>, A>, SessionError> {
        self.start_spectator_with(runner, socket, host, None)
    }

    /// [`SessionConfig::start_spectator`] with the host's identity given in `keys` (from the
    /// handshake) instead of learnt on the socket.
    pub fn start_spectator_keyed<G: Game, A: Address, S: NonBlockingSocket<A> + 'static>(
        &self,
        runner: &mut Runner<G>,
        socket: S,
        host: A,
        keys: &MatchKeys<A>,
    ) -> Result<Started<SpectatorSession<GgrsConfig<G, A>>, A>, SessionError> {
        self.start_spectator_with(runner, socket, host, Some(keys))
    }

    fn start_spectator_with<G: Game, A: Address, S: NonBlockingSocket<A> + 'static>(
        &self,
        runner: &mut Runner<G>,
        socket: S,
        host: A,
        keys: Option<&MatchKeys<A>>,
    ) -> Result<Started<SpectatorSession<GgrsConfig<G, A>>, A>, SessionError> {
        let players = runner.world().players();
        let (socket, guard) = GuardedSocket::new::<G::Input>(
            socket,
            self.guard_config(players).for_spectator(),
            [(host.clone(), (0..players).collect())],
        );
        let builder = hardened_builder::<GgrsConfig<G, A>>(
            players,
            self.max_prediction,
            self.input_delay,
            self.desync_interval,
        )?;
        match keys {
            Some(keys) => authenticate(&guard, keys, core::slice::from_ref(&host), 0)?,
            None => introduce(&guard)?,
        }
        let session = builder.start_spectator_session(host, socket);
        runner.attach_guard(guard.clone());
        Ok((session, guard))
    }
}

/// Authenticates `guard`'s datagrams with identities learnt on the socket, under a fresh
/// identity of this peer's ([`Guard::introduce`]).
fn introduce<A: Address>(guard: &Guard<A>) -> Result<(), SessionError> {
    let local = Identity::generate().map_err(SessionError::Identity)?;
    guard.introduce(&local).map_err(SessionError::Identity)
}

/// Authenticates `guard`'s datagrams with `keys`; every address of `need` must have a key.
fn authenticate<A: Address>(
    guard: &Guard<A>,
    keys: &MatchKeys<A>,
    need: &[A],
    channel: u32,
) -> Result<(), SessionError> {
    let missing: Vec<&A> =
        need.iter().filter(|a| !keys.remotes.iter().any(|(r, _)| r == *a)).collect();
    let refused = guard.authenticate_on(
        &keys.local,
        keys.remotes.iter().filter(|(a, _)| need.contains(a)).cloned(),
        channel,
    );
    let bad: Vec<String> = missing
        .into_iter()
        .map(|a| format!("{a:?}"))
        .chain(refused.err().into_iter().flatten().map(|a| format!("{a:?}")))
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(SessionError::Ggrs(GgrsError::InvalidRequest {
            info: format!(
                "no valid key for {}: every remote must announce its identity",
                bad.join(", ")
            ),
        }))
    }
}

/// A GGRS P2P session builder with the settings the crate's guarantees need (`players` players,
/// the prediction window, the input delay, desync detection every `desync_interval` frames, 0:
/// off, and GGRS's wall-clock disconnect timeout and notice off), for a socket **nobody
/// guards**: GGRS 0.13 panics, aborts or hangs on malformed and hostile messages, so a socket
/// handed to the builder as it is leaves the session open to any peer and any process that can
/// reach it. Put it behind a [`GuardedSocket`] and attach the guard to the runner
/// ([`Runner::attach_guard`]) — or let [`Peer::start`] / [`SessionConfig::start_p2p`] do all of
/// it.
///
/// No other name hands out this builder:
///
/// ```compile_fail
/// use rollback_abilities::session::hardened_builder;
/// ```
pub fn unguarded_builder<C: ggrs::Config>(
    players: usize,
    max_prediction: usize,
    input_delay: usize,
    desync_interval: u32,
) -> Result<ggrs::SessionBuilder<C>, GgrsError> {
    hardened_builder(players, max_prediction, input_delay, desync_interval)
}

/// One player's peer of a P2P match, built the safe way: the runner (world, snapshots,
/// recorder, cue director), its GGRS session behind a [`GuardedSocket`], and the guard.
///
/// ```
/// use ggrs::PlayerType;
/// use rollback_abilities::prelude::*;
/// use rollback_abilities::session::{EmulatedNetwork, NetConditions, PeerAddr, Peer, SessionConfig};
///
/// struct G;
/// impl Game for G { type Input = u8; type Component = (); type Global = (); }
/// let content = std::sync::Arc::new(Content::from_ron_str("()")?);
/// let world = || World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
/// let net = EmulatedNetwork::new(NetConditions::PERFECT, 1);
/// let mut peers: Vec<Peer<G, PeerAddr>> = (0..2u16)
///     .map(|i| {
///         let players = (0..2u16).map(|j| {
///             let kind = if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j)) };
///             (usize::from(j), kind)
///         });
///         Peer::start(world(), net.socket(PeerAddr(i)), players, SessionConfig::default())
///     })
///     .collect::<Result<_, _>>()?;
/// // Poll every peer each round (`all` would stop at the first one not yet running).
/// while peers.iter_mut().map(|p| p.synchronized()).filter(|ready| !ready).count() > 0 {
///     net.advance_ms(5);
/// }
/// for _ in 0..60 {
///     for (i, p) in peers.iter_mut().enumerate() {
///         p.advance(&[(i, 1)], None, |_| {})?;
///     }
///     net.advance_ms(16);
/// }
/// assert!(peers[0].runner.world().next_frame() > 40);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Peer<G: Game, A: Address> {
    /// The world and its rollback machinery (the guard is attached).
    pub runner: Runner<G>,
    /// The GGRS session, over the guarded socket.
    pub session: P2PSession<GgrsConfig<G, A>>,
    /// The guard in front of the session's socket (faults, departures, statistics).
    pub guard: Guard<A>,
}

impl<G: Game, A: Address> core::fmt::Debug for Peer<G, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Peer").field("runner", &self.runner).finish()
    }
}

impl<G: Game, A: Address> Peer<G, A> {
    /// Starts a peer of a P2P match on `socket` (see [`SessionConfig::start_p2p`] for
    /// `players`, and for how every datagram is authenticated): `world` must be identical on
    /// every peer.
    pub fn start<S: NonBlockingSocket<A> + 'static>(
        world: World<G>,
        socket: S,
        players: impl IntoIterator<Item = (usize, PlayerType<A>)>,
        config: SessionConfig,
    ) -> Result<Peer<G, A>, SessionError> {
        let mut runner = config.runner(world);
        let (session, guard) = config.start_p2p(&mut runner, socket, players)?;
        Ok(Peer { runner, session, guard })
    }

    /// [`Peer::start`] with the identities given in `keys` instead of learnt on the socket
    /// ([`SessionConfig::start_p2p_keyed`]).
    pub fn start_keyed<S: NonBlockingSocket<A> + 'static>(
        world: World<G>,
        socket: S,
        players: impl IntoIterator<Item = (usize, PlayerType<A>)>,
        config: SessionConfig,
        keys: &MatchKeys<A>,
    ) -> Result<Peer<G, A>, SessionError> {
        let mut runner = config.runner(world);
        let (session, guard) = config.start_p2p_keyed(&mut runner, socket, players, keys)?;
        Ok(Peer { runner, session, guard })
    }

    /// Polls the session (synchronisation with the other peers before the match, and network
    /// traffic between ticks); whether it runs. Several peers in one process: poll every one
    /// each round, since none synchronises while another is not polled.
    pub fn synchronized(&mut self) -> bool {
        self.session.poll_remote_clients();
        self.session.current_state() == SessionState::Running
    }

    /// One tick ([`Runner::advance_p2p`]).
    pub fn advance(
        &mut self,
        local_inputs: &[(usize, G::Input)],
        presenter: Option<&mut dyn Presenter>,
        script: impl FnMut(&mut World<G>),
    ) -> Result<Batch, SessionError> {
        self.runner.advance_p2p(&mut self.session, local_inputs, presenter, script)
    }
}

/// A spectator of a P2P match, built the safe way: the runner, its GGRS spectator session
/// behind a [`GuardedSocket`] that takes input from the host only, and the guard.
pub struct Spectator<G: Game, A: Address> {
    /// The world and its machinery (the guard is attached).
    pub runner: Runner<G>,
    /// The GGRS spectator session, over the guarded socket.
    pub session: SpectatorSession<GgrsConfig<G, A>>,
    /// The guard in front of the session's socket.
    pub guard: Guard<A>,
}

impl<G: Game, A: Address> core::fmt::Debug for Spectator<G, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Spectator").field("runner", &self.runner).finish()
    }
}

impl<G: Game, A: Address> Spectator<G, A> {
    /// Starts a spectator of `host` on `socket` (see [`SessionConfig::start_spectator`]).
    pub fn start<S: NonBlockingSocket<A> + 'static>(
        world: World<G>,
        socket: S,
        host: A,
        config: SessionConfig,
    ) -> Result<Spectator<G, A>, SessionError> {
        let mut runner = config.runner(world);
        let (session, guard) = config.start_spectator(&mut runner, socket, host)?;
        Ok(Spectator { runner, session, guard })
    }

    /// [`Spectator::start`] with the host's identity given in `keys` instead of learnt on the
    /// socket.
    pub fn start_keyed<S: NonBlockingSocket<A> + 'static>(
        world: World<G>,
        socket: S,
        host: A,
        config: SessionConfig,
        keys: &MatchKeys<A>,
    ) -> Result<Spectator<G, A>, SessionError> {
        let mut runner = config.runner(world);
        let (session, guard) = config.start_spectator_keyed(&mut runner, socket, host, keys)?;
        Ok(Spectator { runner, session, guard })
    }

    /// Polls the session; whether it runs.
    pub fn synchronized(&mut self) -> bool {
        self.session.poll_remote_clients();
        self.session.current_state() == SessionState::Running
    }

    /// One tick ([`Runner::advance_spectator`]).
    pub fn advance(
        &mut self,
        presenter: Option<&mut dyn Presenter>,
        script: impl FnMut(&mut World<G>),
    ) -> Result<Batch, SessionError> {
        self.runner.advance_spectator(&mut self.session, presenter, script)
    }
}
