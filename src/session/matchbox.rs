//! Real peer-to-peer matches over WebRTC with `matchbox_socket` (feature `matchbox`).
//!
//! A [`WebRtcSocket`] built by [`socket_builder`] has two data channels: an unreliable,
//! unordered one ([`GGRS_CHANNEL`]) that carries GGRS's own packets, and a reliable, ordered
//! one ([`RELIABLE_CHANNEL`]) for the session [`Handshake`] and whatever the game wants to say
//! reliably ([`MatchboxSession::receive_reliable`] keeps the session's own messages from the
//! game). No ICE (STUN/TURN) server is configured: matchbox's default contacts Google's
//! public STUN servers, which a LAN game, a test or a private deployment must not do. Pass your
//! own servers to [`socket_builder_with_ice`] when peers are behind NATs.
//!
//! Starting a match takes five steps, which [`MatchboxSession::connect`] runs in order (each
//! step is also a public function, to drive them yourself; natively only, as they block):
//!
//! 1. build the socket and drive its message loop on a thread ([`spawn_message_loop`]);
//! 2. wait, with a deadline, until the room holds exactly the expected number of peers
//!    ([`wait_for_peers`]); the [`Roster`] orders every peer by [`PeerId`], so every peer
//!    assigns the same player handles. Meanwhile [`Connecting`] tells each peer, as soon as it
//!    connects, how many players it expects ([`Handshake::players_announcement`]): peers
//!    started for different numbers of players would otherwise wait for rooms that never fill,
//!    and instead fail with "this peer expects 2 players, peer … expects 3";
//! 3. exchange and check the [`Handshake`] on the reliable channel, each peer answering every
//!    handshake with a verdict, so that nobody starts unless everybody agrees
//!    ([`exchange_handshake`]). A message sent on a data channel that has just opened can be
//!    lost (it reaches the other side before that side's channel is open), so each peer
//!    resends its handshake every 250 ms (on the caller's clock) to every peer whose verdict
//!    has not arrived, and answers every repeat with the same verdict (a repeat counts for
//!    nothing more; answers are rate-limited per peer) — also once its own round is over,
//!    while GGRS synchronises and in [`MatchboxSession::receive_reliable`], since the peer
//!    that repeats cannot start until it is answered;
//! 4. start a GGRS [`P2PSession`] on the unreliable channel, wrapped in a [`GgrsChannel`] that
//!    drops malformed packets instead of panicking and a [`GuardedSocket`] that validates every
//!    message, GGRS built with [`MatchboxOptions::session`] ([`start_p2p_session`]);
//! 5. poll until GGRS has synchronised with every peer ([`synchronize`]).
//!
//! Then take the session's runner, its guard attached ([`MatchboxSession::runner`]), and drive
//! the session with [`Runner::advance_p2p`](super::Runner::advance_p2p) as usual.
//!
//! [`Connecting`] runs the same steps without blocking, one [`Connecting::poll`] at a time, for
//! a loop that must not wait: a game's frame loop, or a browser page (on `wasm32` it is the
//! only way in — a page cannot block — and the message loop runs on the page's event loop,
//! `wasm_bindgen_futures::spawn_local`, instead of a thread).
//!
//! The signaling server is not part of this module: run `matchbox_server`, or
//! `matchbox_signaling::SignalingServer::full_mesh_builder(addr)` in-process (the
//! `p2p_matchbox` example does the latter with `--serve`, the `browser_duel` example next to
//! the page's files). The room is the URL path: `ws://host:port/room`.

use super::guard::{Guard, GuardConfig, GuardedSocket};
use super::handshake::{Handshake, HandshakeError};
use super::identity::{Identity, IdentityError, PublicIdentity};
use super::runner::{GgrsConfig, Runner, hardened_builder};
use super::start::SessionConfig;
use crate::world::{Game, World};
use core::fmt;
use ggrs::SessionState;
use ggrs::{GgrsError, Message, NonBlockingSocket, P2PSession, PlayerHandle, PlayerType};
use matchbox_socket::{
    ChannelConfig, ChannelError, MessageLoopFuture, Packet, RtcIceServerConfig, WebRtcChannel,
    WebRtcSocket, WebRtcSocketBuilder,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
#[cfg(not(target_arch = "wasm32"))]
use std::thread::JoinHandle;
use std::time::Duration;
#[cfg(not(target_arch = "wasm32"))]
use std::time::Instant;

mod transport;

pub use matchbox_socket::PeerId;
pub use transport::{ConnectingMatch, MatchboxSessionSocket, MatchboxStats, MatchboxTransport};

/// The index of the unreliable, unordered channel that carries GGRS's packets.
pub const GGRS_CHANNEL: usize = 0;

/// The index of the reliable, ordered channel (the session handshake, game messages).
pub const RELIABLE_CHANNEL: usize = 1;

/// The largest GGRS packet [`GgrsChannel`] decodes (GGRS packets are a few hundred bytes).
pub const MAX_GGRS_PACKET: usize = 64 * 1024;

/// How often the waiting loops poll the socket.
#[cfg(not(target_arch = "wasm32"))]
const POLL: Duration = Duration::from_millis(5);

/// How long a failed connection attempt waits for the message loop to say why the socket
/// closed.
const CLOSE_WAIT: Duration = Duration::from_millis(500);

/// The GGRS `Config` of a game played over matchbox.
pub type MatchboxConfig<G> = GgrsConfig<G, PeerId>;

/// An ICE configuration with no servers: peers only use their own (host) addresses, and
/// nothing is contacted on the internet.
pub fn no_ice_servers() -> RtcIceServerConfig {
    RtcIceServerConfig { urls: vec![], username: None, credential: None }
}

/// A socket builder for `room_url` (`ws://host:port/room`) with no ICE servers, the GGRS
/// channel ([`GGRS_CHANNEL`], unreliable) and the reliable channel ([`RELIABLE_CHANNEL`]).
pub fn socket_builder(room_url: &str) -> WebRtcSocketBuilder {
    socket_builder_with_ice(room_url, no_ice_servers())
}

/// [`socket_builder`] with your own ICE (STUN/TURN) servers.
pub fn socket_builder_with_ice(room_url: &str, ice: RtcIceServerConfig) -> WebRtcSocketBuilder {
    WebRtcSocket::builder(room_url)
        .ice_server(ice)
        .add_channel(ChannelConfig::unreliable())
        .add_channel(ChannelConfig::reliable())
}

/// The stage of [`MatchboxSession::connect`] that timed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Waiting for the signaling server to assign our id and for every peer to connect.
    Peers,
    /// Waiting for every peer's handshake.
    Handshake,
    /// Waiting for GGRS to synchronise with every peer.
    Synchronize,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Peers => "waiting for peers",
            Stage::Handshake => "exchanging handshakes",
            Stage::Synchronize => "synchronising the GGRS session",
        })
    }
}

/// Why a matchbox match could not start.
#[non_exhaustive]
pub enum MatchboxError {
    /// A match needs at least two players.
    TooFewPlayers {
        /// The number asked for.
        players: usize,
    },
    /// The socket's message loop has ended: the signaling server is unreachable, refused the
    /// connection or went away.
    SocketClosed {
        /// The loop's error, when it is known.
        reason: Option<String>,
    },
    /// A stage did not complete in time.
    Timeout {
        /// Which one.
        stage: Stage,
        /// How long it waited.
        waited: Duration,
        /// What was still missing.
        detail: String,
    },
    /// More peers are in the room than the match has players.
    TooManyPeers {
        /// Players expected (us included).
        expected: usize,
        /// Peers seen (us included).
        found: usize,
    },
    /// The local handshake announces a different number of players than the room holds.
    PlayerCount {
        /// Players in the local handshake.
        handshake: usize,
        /// Peers in the room (us included).
        room: usize,
    },
    /// A socket channel is missing (already taken, or the socket was not built by
    /// [`socket_builder`]).
    Channel(ChannelError),
    /// A peer sent an invalid handshake or disagrees with ours.
    Handshake(HandshakeError),
    /// A peer refused our handshake.
    Refused {
        /// Who.
        peer: String,
        /// Its reason, as it said it (untrusted text).
        reason: String,
    },
    /// GGRS refused the session.
    Ggrs(GgrsError),
    /// The message loop thread could not be started.
    Io(std::io::Error),
    /// The operating system (in a browser, the page's `crypto`) gave no randomness for this
    /// peer's match identity.
    Identity(IdentityError),
    /// A peer's handshake announced no match identity, or one another slot announced: a
    /// [`MatchPeer`](super::MatchPeer) needs every slot's own.
    NoIdentity {
        /// Who.
        peer: String,
    },
    /// The [`MatchPeer`](super::MatchPeer) could not be built (a [`RejoinTicket`](super::RejoinTicket) that does
    /// not fit the match, the session refused).
    Session(super::SessionError),
    /// [`Connecting::poll`] was called again after it returned the session or an error.
    Spent,
}

impl fmt::Display for MatchboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchboxError::TooFewPlayers { players } => {
                write!(f, "a match needs at least 2 players, not {players}")
            }
            MatchboxError::SocketClosed { reason: Some(r) } => {
                write!(f, "the WebRTC socket closed: {r}")
            }
            MatchboxError::SocketClosed { reason: None } => write!(
                f,
                "the WebRTC socket closed (is the signaling server reachable at the room URL?)"
            ),
            MatchboxError::Timeout { stage, waited, detail } => {
                write!(f, "timed out after {:.1} s {stage}: {detail}", waited.as_secs_f64())
            }
            MatchboxError::TooManyPeers { expected, found } => write!(
                f,
                "the room holds {found} peers but the match is for {expected} players; use a fresh room"
            ),
            MatchboxError::PlayerCount { handshake, room } => write!(
                f,
                "the world is set up for {handshake} players but the room holds {room} peers"
            ),
            MatchboxError::Channel(e) => write!(f, "socket channel: {e}"),
            MatchboxError::Handshake(e) => write!(f, "{e}"),
            MatchboxError::Refused { peer, reason } => {
                write!(f, "{peer} refused our handshake: {reason}")
            }
            MatchboxError::Ggrs(e) => write!(f, "GGRS: {e}"),
            MatchboxError::Io(e) => write!(f, "cannot start the socket's message loop: {e}"),
            MatchboxError::Identity(e) => write!(f, "{e}"),
            MatchboxError::NoIdentity { peer } => write!(
                f,
                "{peer} announced no match identity of its own (every player of a match that \
                 takes players back needs one)"
            ),
            MatchboxError::Session(e) => write!(f, "{e}"),
            MatchboxError::Spent => {
                write!(f, "this connection attempt has already ended (start a new one)")
            }
        }
    }
}

impl std::error::Error for MatchboxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MatchboxError::Channel(e) => Some(e),
            MatchboxError::Handshake(e) => Some(e),
            MatchboxError::Ggrs(e) => Some(e),
            MatchboxError::Io(e) => Some(e),
            MatchboxError::Identity(e) => Some(e),
            MatchboxError::Session(e) => Some(e),
            _ => None,
        }
    }
}

crate::located::readable_debug!(MatchboxError);

impl From<HandshakeError> for MatchboxError {
    fn from(e: HandshakeError) -> Self {
        MatchboxError::Handshake(e)
    }
}

impl From<GgrsError> for MatchboxError {
    fn from(e: GgrsError) -> Self {
        MatchboxError::Ggrs(e)
    }
}

impl From<super::SessionError> for MatchboxError {
    fn from(e: super::SessionError) -> Self {
        MatchboxError::Session(e)
    }
}

impl From<ChannelError> for MatchboxError {
    fn from(e: ChannelError) -> Self {
        MatchboxError::Channel(e)
    }
}

/// A socket's message loop running on a thread of its own, or on wasm32 on the page's event
/// loop (see [`spawn_message_loop`]).
///
/// Dropping it detaches the thread (the task); the loop ends when the socket is closed or
/// dropped, or with the process (the page).
#[derive(Debug)]
pub struct MessageLoop {
    outcome: Arc<Mutex<Option<Result<(), String>>>>,
    #[cfg(not(target_arch = "wasm32"))]
    thread: Option<JoinHandle<()>>,
}

impl MessageLoop {
    /// `None` while the loop runs; then `Ok(())` or the loop's error.
    pub fn outcome(&self) -> Option<Result<(), String>> {
        self.outcome.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether the loop has ended.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Whether the loop has ended.
    #[cfg(target_arch = "wasm32")]
    pub fn is_finished(&self) -> bool {
        self.outcome().is_some()
    }

    /// The loop's error, if it ended with one.
    pub fn error(&self) -> Option<String> {
        self.outcome().and_then(Result::err)
    }
}

/// Drives a socket's message loop on a new thread (a single-threaded tokio runtime; the
/// WebRTC connections themselves run on matchbox's own executor).
#[cfg(not(target_arch = "wasm32"))]
pub fn spawn_message_loop(future: MessageLoopFuture) -> Result<MessageLoop, MatchboxError> {
    let outcome = Arc::new(Mutex::new(None));
    let out = outcome.clone();
    let thread = std::thread::Builder::new()
        .name("matchbox-message-loop".into())
        .spawn(move || {
            let result = match tokio::runtime::Builder::new_current_thread().enable_time().build() {
                Ok(rt) => rt.block_on(future).map_err(|e| e.to_string()),
                Err(e) => Err(format!("cannot build a tokio runtime: {e}")),
            };
            *out.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
        })
        .map_err(MatchboxError::Io)?;
    Ok(MessageLoop { outcome, thread: Some(thread) })
}

/// Drives a socket's message loop on the page's event loop (`wasm_bindgen_futures::spawn_local`:
/// it makes progress whenever the page's code returns to the browser, so poll from
/// `requestAnimationFrame` or a timer, never in a busy loop).
#[cfg(target_arch = "wasm32")]
pub fn spawn_message_loop(future: MessageLoopFuture) -> Result<MessageLoop, MatchboxError> {
    let outcome = Arc::new(Mutex::new(None));
    let out = outcome.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let result = future.await.map_err(|e| e.to_string());
        *out.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
    });
    Ok(MessageLoop { outcome })
}

/// Every player of a match, ordered by [`PeerId`]: the index is the player handle, the same on
/// every peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roster {
    local: PeerId,
    peers: Vec<PeerId>,
}

impl Roster {
    /// The roster of `local` and `remotes` (sorted, duplicates removed).
    pub fn new(local: PeerId, remotes: impl IntoIterator<Item = PeerId>) -> Roster {
        let mut peers: Vec<PeerId> = remotes.into_iter().chain([local]).collect();
        peers.sort();
        peers.dedup();
        Roster { local, peers }
    }

    /// Our id.
    pub fn local(&self) -> PeerId {
        self.local
    }

    /// Our player handle.
    pub fn local_handle(&self) -> PlayerHandle {
        self.peers.iter().position(|p| *p == self.local).unwrap_or(0)
    }

    /// Every peer (us included), in handle order.
    pub fn peers(&self) -> &[PeerId] {
        &self.peers
    }

    /// The other peers, in handle order.
    pub fn remotes(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.peers.iter().copied().filter(move |p| *p != self.local)
    }

    /// The player handle of a peer.
    pub fn handle_of(&self, peer: PeerId) -> Option<PlayerHandle> {
        self.peers.iter().position(|p| *p == peer)
    }

    /// Players (us included).
    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// Always false: a roster holds at least the local peer.
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// The GGRS player types by handle (`Local` for us, `Remote(id)` for the others).
    pub fn player_types(&self) -> Vec<(PlayerHandle, PlayerType<PeerId>)> {
        self.peers
            .iter()
            .enumerate()
            .map(|(h, p)| {
                (h, if *p == self.local { PlayerType::Local } else { PlayerType::Remote(*p) })
            })
            .collect()
    }
}

/// Takes in the socket's peer changes; `SocketClosed` when its message loop has ended.
fn refresh(socket: &mut WebRtcSocket) -> Result<(), MatchboxError> {
    socket.try_update_peers().map(|_| ()).map_err(|_| MatchboxError::SocketClosed { reason: None })
}

/// One look at the room (after [`refresh`]): the [`Roster`] once the signaling server has given
/// us an id and exactly `players − 1` other peers are connected, `None` while fewer are, an
/// error when more are.
fn roster_if_complete(
    socket: &mut WebRtcSocket,
    players: usize,
) -> Result<Option<Roster>, MatchboxError> {
    let id = socket.id();
    let connected: Vec<PeerId> = socket.connected_peers().collect();
    if connected.len() + 1 > players {
        return Err(MatchboxError::TooManyPeers { expected: players, found: connected.len() + 1 });
    }
    Ok(match id {
        Some(id) if connected.len() + 1 == players => Some(Roster::new(id, connected)),
        _ => None,
    })
}

/// The [`Stage::Peers`] timeout: what was still missing.
fn peers_timeout(socket: &mut WebRtcSocket, players: usize, waited: Duration) -> MatchboxError {
    let detail = match socket.id() {
        None => "the signaling server never assigned an id".to_string(),
        Some(_) => {
            format!("{} of {} peers connected", socket.connected_peers().count() + 1, players)
        }
    };
    MatchboxError::Timeout { stage: Stage::Peers, waited, detail }
}

/// Waits until the signaling server has given us an id and exactly `players − 1` other peers
/// are connected, then returns the [`Roster`]. Fails when `timeout` passes, when more peers
/// than that connect, or when the socket closes. Blocks (native only; see [`Connecting`]).
#[cfg(not(target_arch = "wasm32"))]
pub fn wait_for_peers(
    socket: &mut WebRtcSocket,
    players: usize,
    timeout: Duration,
) -> Result<Roster, MatchboxError> {
    if players < 2 {
        return Err(MatchboxError::TooFewPlayers { players });
    }
    let start = Instant::now();
    loop {
        refresh(socket)?;
        if let Some(roster) = roster_if_complete(socket, players)? {
            return Ok(roster);
        }
        if start.elapsed() >= timeout {
            return Err(peers_timeout(socket, players, start.elapsed()));
        }
        std::thread::sleep(POLL);
    }
}

/// The most reliable messages kept from peers while the room is not complete (a peer that is
/// done waiting sends its handshake at once; nothing else is expected so early).
const MAX_EARLY: usize = 64;

/// What [`Connecting`] knows while it waits for the room to fill: the peers it has told how
/// many players it expects, what they sent meanwhile (for the handshake exchange), and the
/// first peer that expects a different number, with when it was found.
#[derive(Default)]
struct PeerWatch {
    told: BTreeSet<PeerId>,
    early: Vec<(PeerId, Packet)>,
    failure: Option<(MatchboxError, Duration)>,
}

impl PeerWatch {
    /// Tells every newly connected peer how many players we expect (peers started for
    /// different numbers would otherwise wait for rooms that never fill) and checks what they
    /// told us; a mismatch is returned once [`VERDICT_WAIT`] has let our announcement reach
    /// the others.
    fn poll(
        &mut self,
        socket: &mut WebRtcSocket,
        local: &Handshake,
        now: Duration,
    ) -> Result<(), MatchboxError> {
        let connected: Vec<PeerId> = socket.connected_peers().collect();
        for peer in connected {
            if self.told.insert(peer) {
                send_reliable(socket, peer, Packet::from(local.players_announcement()))?;
            }
        }
        for (from, packet) in socket.get_channel_mut(RELIABLE_CHANNEL)?.receive() {
            match local.check_players_announcement(&packet, &from.to_string()) {
                Some(Err(e)) if self.failure.is_none() => self.failure = Some((e.into(), now)),
                Some(_) => {}
                // A peer whose round has started resends its handshake until we answer it.
                None if packet.starts_with(HELLO_PREFIX)
                    && self
                        .early
                        .iter()
                        .any(|(p, b)| *p == from && b.starts_with(HELLO_PREFIX)) => {}
                None if self.early.len() < MAX_EARLY => self.early.push((from, packet)),
                None => {}
            }
        }
        match self.failure.take() {
            Some((e, at)) if now.saturating_sub(at) >= VERDICT_WAIT => Err(e),
            failure => {
                self.failure = failure;
                Ok(())
            }
        }
    }
}

/// The verdict a peer sends back on a handshake it received: accepted…
const ACCEPT: &[u8] = b"RBAHSACK";
/// …or refused (followed by the reason, UTF-8).
const REFUSE: &[u8] = b"RBAHSNAK";
/// The prefix of every handshake packet.
const HELLO_PREFIX: &[u8] = b"RBAHELLO";
/// The largest handshake a peer decodes (an honest one is a few hundred bytes).
const MAX_HELLO: usize = 16 * 1024;
/// How long a peer that refuses to start keeps the exchange going, so the others get its
/// handshake and verdict and can name the mismatch themselves.
const VERDICT_WAIT: Duration = Duration::from_secs(2);
/// The longest refusal reason kept from a peer.
const MAX_REASON: usize = 512;
/// How often a peer resends its handshake to each peer whose verdict on it has not arrived. A
/// message sent on a data channel that has just opened can be lost (it reaches the other side
/// before that side's channel is open), and a round that sent each message once would wait
/// for it until it timed out.
const RESEND_INTERVAL: Duration = Duration::from_millis(250);
/// The shortest time between two answers to one peer's repeated handshakes, on the caller's
/// clock: half the resend interval, so that an honest peer's repeats are answered however
/// unevenly they are delayed, while a flood of repeats gets at most two verdicts per resend
/// interval.
const ANSWER_INTERVAL: Duration = Duration::from_millis(125);
/// The most repeated handshakes a peer answers from one peer, during its round and after it
/// (an honest peer needs one answer to arrive, and resends for at most its handshake timeout).
const MAX_REPEAT_ANSWERS: u32 = 64;

/// What a reliable message is to the session. The session's own — a player-count
/// announcement, a handshake, a verdict — are never handed to the game.
enum Kind<'a> {
    /// A player-count announcement ([`Handshake::players_announcement`]).
    Players,
    /// A handshake (first or repeated).
    Hello,
    /// An accepting verdict.
    Accept,
    /// A refusing verdict, and its reason.
    Refuse(&'a [u8]),
    /// Anything else: the game's.
    Game,
}

/// Sorts one untrusted reliable message by its prefix.
fn kind(bytes: &[u8]) -> Kind<'_> {
    if Handshake::is_players_announcement(bytes) {
        Kind::Players
    } else if bytes.starts_with(HELLO_PREFIX) {
        Kind::Hello
    } else if bytes == ACCEPT {
        Kind::Accept
    } else if let Some(reason) = bytes.strip_prefix(REFUSE) {
        Kind::Refuse(reason)
    } else {
        Kind::Game
    }
}

/// Decodes a peer's handshake, refusing one larger than [`MAX_HELLO`] before decoding it.
fn decode_hello(bytes: &[u8], peer: &str) -> Result<Handshake, HandshakeError> {
    if bytes.len() > MAX_HELLO {
        return Err(HandshakeError::Malformed {
            peer: peer.to_string(),
            reason: format!("a handshake of {} bytes (at most {MAX_HELLO})", bytes.len()),
        });
    }
    Handshake::decode(bytes, peer)
}

/// Our verdict on one peer's handshake, to send again when the peer repeats its handshake
/// (our first answer may have been lost).
#[derive(Clone, Debug)]
struct Answer {
    verdict: Packet,
    /// When it was last sent, on the caller's clock (`None`: never on a clock).
    at: Option<Duration>,
    /// Repeats answered so far.
    repeats: u32,
}

impl Answer {
    /// The verdict again, for a repeated handshake; `None` when the peer was answered less than
    /// [`ANSWER_INTERVAL`] before `now`, or has had [`MAX_REPEAT_ANSWERS`] repeats answered.
    /// With no clock (`now` is `None`) the caller answers at most once per batch.
    fn repeat(&mut self, now: Option<Duration>) -> Option<Packet> {
        if self.repeats >= MAX_REPEAT_ANSWERS {
            return None;
        }
        if let (Some(now), Some(at)) = (now, self.at)
            && now.saturating_sub(at) < ANSWER_INTERVAL
        {
            return None;
        }
        self.repeats += 1;
        self.at = now.or(self.at);
        Some(self.verdict.clone())
    }
}

/// What a peer whose round is over still does on the reliable channel: answer the repeated
/// handshake of a peer still waiting for its verdict (the first answer may have been lost; that
/// peer cannot start until it has one), and keep the session's own messages from the game.
#[derive(Clone, Debug)]
struct LateAnswers<P> {
    answers: BTreeMap<P, Answer>,
}

impl<P: Copy + Ord> LateAnswers<P> {
    /// Sorts received messages: returns the game's, in order, and queues in `outbox` our
    /// verdict for each peer that repeated its handshake (at most one per peer per call, and
    /// with a clock at most one per [`ANSWER_INTERVAL`]). Verdicts, announcements and messages
    /// from peers outside the roster are dropped.
    fn sort(
        &mut self,
        received: impl IntoIterator<Item = (P, Packet)>,
        now: Option<Duration>,
        outbox: &mut Vec<(P, Packet)>,
    ) -> Vec<(P, Vec<u8>)> {
        let mut game = Vec::new();
        let mut asked = BTreeSet::new();
        for (from, bytes) in received {
            let Some(answer) = self.answers.get_mut(&from) else { continue };
            match kind(&bytes) {
                Kind::Game => game.push((from, bytes.to_vec())),
                Kind::Hello => {
                    if asked.insert(from)
                        && let Some(verdict) = answer.repeat(now)
                    {
                        outbox.push((from, verdict));
                    }
                }
                Kind::Players | Kind::Accept | Kind::Refuse(_) => {}
            }
        }
        game
    }
}

/// What the round knows about one remote peer.
struct PeerProgress {
    /// Our verdict on its handshake, once that arrived (and was checked).
    answer: Option<Answer>,
    /// Its verdict on our handshake arrived.
    verdict: bool,
    /// When we last sent it our handshake.
    hello_at: Duration,
    /// The match identity its handshake announced (once it arrived and checked out).
    identity: Option<PublicIdentity>,
}

impl PeerProgress {
    fn settled(&self) -> bool {
        self.answer.is_some() && self.verdict
    }
}

/// Reliable messages from peers: who sent them, and the bytes.
type Messages<P = PeerId> = Vec<(P, Vec<u8>)>;

/// The decisions of one handshake exchange (see [`exchange_handshake`]), apart from the socket:
/// fed what peers send ([`HandshakeRound::receive`]) and the caller's clock
/// ([`HandshakeRound::tick`]), it queues what to send whom ([`HandshakeRound::outbox`]) and
/// says when the round is over. Times are durations since any fixed origin (the caller's
/// clock).
struct HandshakeRound<P = PeerId> {
    /// Our handshake, encoded.
    hello: Packet,
    progress: BTreeMap<P, PeerProgress>,
    /// What to send, to whom, in order.
    outbox: Vec<(P, Packet)>,
    /// The game's messages from peers whose handshake arrived.
    leftover: Messages<P>,
    /// The first problem and when it was found.
    failure: Option<(MatchboxError, Duration)>,
    start: Duration,
}

impl<P: Copy + Ord + fmt::Display> HandshakeRound<P> {
    /// A round with `remotes`, our handshake queued for each.
    fn new(remotes: impl IntoIterator<Item = P>, local: &Handshake, now: Duration) -> Self {
        let hello = Packet::from(local.encode());
        let progress: BTreeMap<P, PeerProgress> = remotes
            .into_iter()
            .map(|p| {
                (p, PeerProgress { answer: None, verdict: false, hello_at: now, identity: None })
            })
            .collect();
        let outbox = progress.keys().map(|p| (*p, hello.clone())).collect();
        HandshakeRound { hello, progress, outbox, leftover: Vec::new(), failure: None, start: now }
    }

    /// Takes in one message from `from`. Its first handshake is checked and answered with our
    /// verdict; a repeat gets the same verdict again (rate-limited, see [`Answer::repeat`]) and
    /// counts for nothing more; the first verdict on ours counts, later ones are ignored.
    /// Messages from peers outside the round are ignored.
    fn receive(&mut self, from: P, bytes: &[u8], local: &Handshake, now: Duration) {
        let Some(state) = self.progress.get_mut(&from) else { return };
        let name = from.to_string();
        let problem = match (kind(bytes), &mut state.answer) {
            (Kind::Players, _) => local
                .check_players_announcement(bytes, &name)
                .and_then(Result::err)
                .map(MatchboxError::Handshake),
            (Kind::Accept, _) => {
                state.verdict = true;
                None
            }
            (Kind::Refuse(reason), _) if !state.verdict => {
                state.verdict = true;
                let reason = &reason[..reason.len().min(MAX_REASON)];
                Some(MatchboxError::Refused {
                    peer: name,
                    reason: String::from_utf8_lossy(reason).into_owned(),
                })
            }
            (Kind::Refuse(_), _) => None,
            (Kind::Hello, Some(answer)) => {
                if let Some(verdict) = answer.repeat(Some(now)) {
                    self.outbox.push((from, verdict));
                }
                None
            }
            // A peer that finished its round may already be talking.
            (Kind::Game, Some(_)) => {
                self.leftover.push((from, bytes.to_vec()));
                None
            }
            // A peer's first message other than an announcement or a verdict must be its
            // handshake.
            (Kind::Hello | Kind::Game, None) => {
                let checked = decode_hello(bytes, &name).and_then(|remote| {
                    local.check(&remote, &name)?;
                    state.identity = remote.identity;
                    Ok(())
                });
                let verdict = match &checked {
                    Ok(()) => Packet::from(ACCEPT.to_vec()),
                    Err(e) => Packet::from([REFUSE, e.to_string().as_bytes()].concat()),
                };
                state.answer = Some(Answer { verdict: verdict.clone(), at: Some(now), repeats: 0 });
                self.outbox.push((from, verdict));
                checked.err().map(MatchboxError::Handshake)
            }
        };
        if let Some(e) = problem {
            // Our own finding names the field; a refusal only repeats the peer's words.
            let ours = matches!(e, MatchboxError::Handshake(_));
            match &self.failure {
                None => self.failure = Some((e, now)),
                Some((MatchboxError::Refused { .. }, at)) if ours => {
                    self.failure = Some((e, *at));
                }
                Some(_) => {}
            }
        }
    }

    /// Resends our handshake to every peer whose verdict has not arrived within
    /// [`RESEND_INTERVAL`], then says whether the round is over: `Some(leftover messages)` once
    /// every peer's handshake checked out and every peer accepted ours; an error on the first
    /// problem (once the others could learn of it) or when `timeout` has passed.
    fn tick(
        &mut self,
        now: Duration,
        timeout: Duration,
    ) -> Result<Option<Messages<P>>, MatchboxError> {
        for (peer, state) in &mut self.progress {
            if !state.verdict && now.saturating_sub(state.hello_at) >= RESEND_INTERVAL {
                state.hello_at = now;
                self.outbox.push((*peer, self.hello.clone()));
            }
        }
        let settled = self.progress.values().all(PeerProgress::settled);
        let elapsed = now.saturating_sub(self.start);
        let give_up = self.failure.as_ref().is_some_and(|(_, at)| {
            settled || now.saturating_sub(*at) >= VERDICT_WAIT || elapsed >= timeout
        });
        if give_up && let Some((e, _)) = self.failure.take() {
            return Err(e);
        }
        if settled {
            return Ok(Some(core::mem::take(&mut self.leftover)));
        }
        if elapsed >= timeout {
            let missing: Vec<String> = self
                .progress
                .iter()
                .filter(|(_, p)| !p.settled())
                .map(|(id, p)| {
                    let what = if p.answer.is_some() { "verdict" } else { "handshake" };
                    format!("{what} of {id}")
                })
                .collect();
            return Err(MatchboxError::Timeout {
                stage: Stage::Handshake,
                waited: elapsed,
                detail: format!("still waiting for the {}", missing.join(", ")),
            });
        }
        Ok(None)
    }

    /// What to send, to whom, in order (emptied).
    fn outbox(&mut self) -> Vec<(P, Packet)> {
        core::mem::take(&mut self.outbox)
    }

    /// The match identity each peer's handshake announced (`None` for one that announced
    /// none).
    fn identities(&self) -> BTreeMap<P, Option<PublicIdentity>> {
        self.progress.iter().map(|(p, s)| (*p, s.identity)).collect()
    }

    /// Our verdicts, to answer the repeats of peers still waiting for them once the round is
    /// over.
    fn late_answers(&self) -> LateAnswers<P> {
        LateAnswers {
            answers: self
                .progress
                .iter()
                .filter_map(|(p, s)| Some((*p, s.answer.clone()?)))
                .collect(),
        }
    }
}

impl HandshakeRound {
    /// Checks the player count and sends our handshake to every other peer of the roster, then
    /// takes in `early`, what the peers sent before.
    fn start(
        socket: &mut WebRtcSocket,
        roster: &Roster,
        local: &Handshake,
        now: Duration,
        early: Vec<(PeerId, Packet)>,
    ) -> Result<HandshakeRound, MatchboxError> {
        if usize::from(local.players) != roster.len() {
            return Err(MatchboxError::PlayerCount {
                handshake: usize::from(local.players),
                room: roster.len(),
            });
        }
        let mut round = HandshakeRound::new(roster.remotes(), local, now);
        for (from, packet) in early {
            round.receive(from, &packet, local, now);
        }
        send_all(socket, round.outbox())?;
        Ok(round)
    }

    /// Handles what arrived, sends what the round says to; `Some(leftover messages)` once
    /// every peer's handshake checked out and every peer accepted ours.
    fn poll(
        &mut self,
        socket: &mut WebRtcSocket,
        local: &Handshake,
        now: Duration,
        timeout: Duration,
    ) -> Result<Option<Messages>, MatchboxError> {
        for (from, packet) in socket.get_channel_mut(RELIABLE_CHANNEL)?.receive() {
            self.receive(from, &packet, local, now);
        }
        let over = self.tick(now, timeout);
        // Verdicts go out even when the round fails, so the others learn why.
        send_all(socket, self.outbox())?;
        if matches!(over, Ok(None)) {
            refresh(socket)?;
        }
        over
    }
}

/// Exchanges handshakes with every other peer of the roster on the reliable channel, refusing
/// to start on any mismatch.
///
/// Each peer sends its [`Handshake`], checks every handshake it receives and answers it with a
/// verdict (accepted, or refused with the reason). The exchange succeeds once every peer's
/// handshake checked out and every peer accepted ours, so no peer starts the session unless
/// all agree. A message sent on a data channel that has just opened can be lost, so a peer
/// resends its handshake every 250 ms to each peer whose verdict has not arrived, and answers
/// a repeated handshake with the same verdict (at most about once per 125 ms, and 64 times, per
/// peer). On a malformed or mismatching handshake, or a refusal, it keeps answering for up to
/// two seconds (so the others learn why) and then fails with the first problem. It also fails
/// on a local player count that differs from the roster, or when `timeout` passes.
///
/// Returns the game's messages that arrived on the reliable channel after a peer's handshake
/// (a peer that finished first may already be talking), in order; messages from peers outside
/// the roster are ignored. Blocks (native only; see [`Connecting`]).
///
/// A peer may still be waiting for our verdict when this returns (our answer was lost): it
/// keeps resending its handshake, and cannot start until one is answered.
/// [`MatchboxSession::connect`] and [`Connecting`] answer those repeats while GGRS
/// synchronises and in [`MatchboxSession::receive_reliable`]; a caller driving the steps itself
/// with this function and [`synchronize`] does not, so prefer those.
#[cfg(not(target_arch = "wasm32"))]
pub fn exchange_handshake(
    socket: &mut WebRtcSocket,
    roster: &Roster,
    local: &Handshake,
    timeout: Duration,
) -> Result<Vec<(PeerId, Vec<u8>)>, MatchboxError> {
    let origin = Instant::now();
    let mut round = HandshakeRound::start(socket, roster, local, Duration::ZERO, Vec::new())?;
    loop {
        if let Some(leftover) = round.poll(socket, local, origin.elapsed(), timeout)? {
            return Ok(leftover);
        }
        std::thread::sleep(POLL);
    }
}

/// Sends packets on the reliable channel, in order.
fn send_all(
    socket: &mut WebRtcSocket,
    packets: Vec<(PeerId, Packet)>,
) -> Result<(), MatchboxError> {
    for (to, packet) in packets {
        send_reliable(socket, to, packet)?;
    }
    Ok(())
}

/// Sends one packet on the reliable channel.
fn send_reliable(
    socket: &mut WebRtcSocket,
    to: PeerId,
    packet: Packet,
) -> Result<(), MatchboxError> {
    socket
        .get_channel_mut(RELIABLE_CHANNEL)?
        .try_send(packet, to)
        .map_err(|_| MatchboxError::SocketClosed { reason: None })
}

/// A matchbox channel as a GGRS socket. Same wire format as `matchbox_socket`'s own GGRS
/// support (bincode 2, standard configuration), but a packet that does not decode (or is
/// larger than [`MAX_GGRS_PACKET`]) is dropped and counted instead of panicking, and a send
/// on a closed socket is dropped (GGRS treats both as loss).
#[derive(Debug)]
pub struct GgrsChannel {
    channel: WebRtcChannel,
    dropped: u64,
}

impl GgrsChannel {
    /// Wraps a channel (it should be unreliable and unordered, like [`GGRS_CHANNEL`]).
    pub fn new(channel: WebRtcChannel) -> GgrsChannel {
        GgrsChannel { channel, dropped: 0 }
    }

    /// Packets dropped so far: undecodable or oversized received packets, failed sends.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Decodes one GGRS packet from untrusted bytes.
    pub fn decode(bytes: &[u8]) -> Option<Message> {
        if bytes.len() > MAX_GGRS_PACKET {
            return None;
        }
        let config = bincode::config::standard().with_limit::<MAX_GGRS_PACKET>();
        match bincode::serde::decode_from_slice::<Message, _>(bytes, config) {
            Ok((msg, used)) if used == bytes.len() => Some(msg),
            _ => None,
        }
    }

    /// Encodes one GGRS packet.
    pub fn encode(msg: &Message) -> Option<Vec<u8>> {
        bincode::serde::encode_to_vec(msg, bincode::config::standard()).ok()
    }
}

impl NonBlockingSocket<PeerId> for GgrsChannel {
    fn send_to(&mut self, msg: &Message, addr: &PeerId) {
        let sent = GgrsChannel::encode(msg)
            .is_some_and(|bytes| self.channel.try_send(Packet::from(bytes), *addr).is_ok());
        if !sent {
            self.dropped += 1;
        }
    }

    fn receive_all_messages(&mut self) -> Vec<(PeerId, Message)> {
        let packets = self.channel.receive();
        let mut out = Vec::with_capacity(packets.len());
        for (from, bytes) in packets {
            match GgrsChannel::decode(&bytes) {
                Some(msg) => out.push((from, msg)),
                None => self.dropped += 1,
            }
        }
        out
    }
}

/// Starts the P2P session of the roster's players on the socket's [`GGRS_CHANNEL`], which is
/// taken out of the socket, behind a [`GuardedSocket`], GGRS built with `config`'s settings
/// (GGRS's wall-clock disconnect timeout off: the runner's departure rule decides). Attach the
/// returned [`Guard`] to the session's [`Runner`] ([`MatchboxSession::runner`] does).
pub fn start_p2p_session<G: Game>(
    socket: &mut WebRtcSocket,
    roster: &Roster,
    config: &SessionConfig,
) -> Result<(P2PSession<MatchboxConfig<G>>, Guard<PeerId>), MatchboxError> {
    let mut builder = hardened_builder::<MatchboxConfig<G>>(
        roster.len(),
        config.max_prediction,
        config.input_delay,
        config.desync_interval,
    )?;
    let mut remotes = Vec::new();
    for (handle, kind) in roster.player_types() {
        if let PlayerType::Remote(peer) = kind {
            remotes.push((peer, vec![handle]));
        }
        builder = builder.add_player(kind, handle)?;
    }
    let channel = socket.take_channel(GGRS_CHANNEL)?;
    let (guarded, guard) = GuardedSocket::new::<G::Input>(
        GgrsChannel::new(channel),
        config.guard.unwrap_or_else(|| GuardConfig::new(roster.len(), config.max_prediction)),
        remotes,
    );
    // Every datagram sealed and every input signed, with identities learnt on the channel.
    let local = Identity::generate().map_err(MatchboxError::Identity)?;
    guard.introduce(&local).map_err(MatchboxError::Identity)?;
    Ok((builder.start_p2p_session(guarded)?, guard))
}

/// One look at a synchronising session: polls it and says whether it runs.
fn synchronized<G: Game>(session: &mut P2PSession<MatchboxConfig<G>>) -> bool {
    session.poll_remote_clients();
    session.current_state() == SessionState::Running
}

/// The [`Stage::Synchronize`] timeout.
fn synchronize_timeout(waited: Duration) -> MatchboxError {
    MatchboxError::Timeout {
        stage: Stage::Synchronize,
        waited,
        detail: "GGRS is still synchronising".to_string(),
    }
}

/// Polls the session until GGRS has synchronised with every peer, or `timeout` passes. Blocks
/// (native only; see [`Connecting`]).
#[cfg(not(target_arch = "wasm32"))]
pub fn synchronize<G: Game>(
    session: &mut P2PSession<MatchboxConfig<G>>,
    timeout: Duration,
) -> Result<(), MatchboxError> {
    let start = Instant::now();
    loop {
        if synchronized(session) {
            return Ok(());
        }
        if start.elapsed() >= timeout {
            return Err(synchronize_timeout(start.elapsed()));
        }
        std::thread::sleep(POLL);
    }
}

/// How [`MatchboxSession::connect`] joins a room.
#[derive(Clone, Debug)]
pub struct MatchboxOptions {
    /// The room URL: `ws://host:port/room` (the room is the path).
    pub room_url: String,
    /// Players in the match (us included); the room must hold exactly this many peers.
    pub players: usize,
    /// ICE servers ([`no_ice_servers`] by default: nothing on the internet is contacted).
    pub ice: RtcIceServerConfig,
    /// How long to wait for every peer to join.
    pub peers_timeout: Duration,
    /// How long to wait for every handshake, then for GGRS to synchronise.
    pub handshake_timeout: Duration,
    /// The GGRS session's settings (prediction window, input delay, desync detection) and the
    /// runner's ([`MatchboxSession::runner`]).
    pub session: SessionConfig,
}

impl MatchboxOptions {
    /// Options for `players` players in a room, with no ICE servers, 30 s to wait for peers,
    /// 10 s for the handshake and the synchronisation, and the default [`SessionConfig`].
    pub fn new(room_url: impl Into<String>, players: usize) -> MatchboxOptions {
        MatchboxOptions {
            room_url: room_url.into(),
            players,
            ice: no_ice_servers(),
            peers_timeout: Duration::from_secs(30),
            handshake_timeout: Duration::from_secs(10),
            session: SessionConfig::default(),
        }
    }
}

/// A running matchbox match: the synchronised GGRS session, the roster, and the socket (whose
/// [`RELIABLE_CHANNEL`] is still free for the game's own messages) with its message loop.
pub struct MatchboxSession<G: Game> {
    /// The GGRS session (synchronised: drive it with a [`Runner`]).
    pub session: P2PSession<MatchboxConfig<G>>,
    /// The validating layer in front of the session's socket: attach it to the runner
    /// ([`Runner::attach_guard`](super::Runner::attach_guard)).
    pub guard: Guard<PeerId>,
    /// Every player, in handle order.
    pub roster: Roster,
    /// The socket (the GGRS channel has been taken).
    pub socket: WebRtcSocket,
    /// The socket's message loop.
    pub message_loop: MessageLoop,
    /// Reliable messages that arrived during the handshake exchange.
    pending: Vec<(PeerId, Vec<u8>)>,
    /// Our verdicts, for peers that repeat their handshake.
    answers: LateAnswers<PeerId>,
    /// The settings the session was built with.
    config: SessionConfig,
}

impl<G: Game> fmt::Debug for MatchboxSession<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatchboxSession")
            .field("roster", &self.roster)
            .field("state", &self.session.current_state())
            .finish()
    }
}

impl<G: Game> MatchboxSession<G> {
    /// Joins the room, waits for every peer, exchanges and checks `handshake` (refusing to
    /// start on a mismatch), starts the guarded session ([`start_p2p_session`], with
    /// [`MatchboxOptions::session`]) with players ordered by [`PeerId`], and waits until GGRS
    /// is synchronised. Blocks (native only: on wasm32, and in any loop that must not wait,
    /// poll a [`Connecting`] instead, which this runs). Then play with
    /// [`MatchboxSession::runner`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn connect(
        options: &MatchboxOptions,
        handshake: &Handshake,
    ) -> Result<MatchboxSession<G>, MatchboxError> {
        let origin = Instant::now();
        let mut connecting = Connecting::start(options, handshake, Duration::ZERO)?;
        loop {
            if let Some(session) = connecting.poll(origin.elapsed())? {
                return Ok(session);
            }
            std::thread::sleep(POLL);
        }
    }

    /// A runner for `world` (the same on every peer) with the session's settings and its
    /// guard attached: drive [`MatchboxSession::session`] with it.
    pub fn runner(&self, world: World<G>) -> Runner<G> {
        let mut runner = self.config.runner(world);
        runner.attach_guard(self.guard.clone());
        runner
    }

    /// Our player handle.
    pub fn local_handle(&self) -> PlayerHandle {
        self.roster.local_handle()
    }

    /// Sends bytes to every other peer on the reliable channel.
    pub fn broadcast_reliable(&mut self, bytes: &[u8]) -> Result<(), MatchboxError> {
        let packet = Packet::from(bytes.to_vec());
        let channel = self.socket.get_channel_mut(RELIABLE_CHANNEL)?;
        for peer in self.roster.remotes() {
            channel
                .try_send(packet.clone(), peer)
                .map_err(|_| MatchboxError::SocketClosed { reason: None })?;
        }
        Ok(())
    }

    /// The game's messages received on the reliable channel since the last call, in order
    /// (from peers of the roster only). Call it regularly (every frame) even when the game
    /// sends none.
    ///
    /// The session's own messages never come out of it: a peer whose handshake answer was lost
    /// repeats its handshake, and is answered here with our verdict (at most once per peer per
    /// call, and 64 times per peer); late verdicts and player-count announcements are dropped.
    /// A game message must therefore not begin with `RBAHELLO`, `RBAPLAYERS`, `RBAHSNAK`, or
    /// be exactly `RBAHSACK`.
    pub fn receive_reliable(&mut self) -> Result<Vec<(PeerId, Vec<u8>)>, MatchboxError> {
        let mut out = core::mem::take(&mut self.pending);
        let channel = self.socket.get_channel_mut(RELIABLE_CHANNEL)?;
        let mut answers = Vec::new();
        out.extend(self.answers.sort(channel.receive(), None, &mut answers));
        for (to, verdict) in answers {
            // An answer that cannot be sent is lost like any message: the peer asks again.
            let _ = channel.try_send(verdict, to);
        }
        Ok(out)
    }
}

/// Where a [`Connecting`] is.
enum Step<G: Game> {
    /// Waiting for every peer (since).
    Peers { since: Duration, watch: PeerWatch },
    /// Exchanging handshakes.
    Handshake { roster: Roster, round: HandshakeRound },
    /// Waiting for GGRS to synchronise (since).
    Synchronize {
        roster: Roster,
        session: Box<P2PSession<MatchboxConfig<G>>>,
        guard: Guard<PeerId>,
        pending: Vec<(PeerId, Vec<u8>)>,
        answers: LateAnswers<PeerId>,
        since: Duration,
    },
    /// The socket closed: waiting up to [`CLOSE_WAIT`] (since) for the message loop to say why.
    Closing { since: Duration },
    /// Finished (the session was handed out, or an error was).
    Spent,
}

/// What one [`Step`] led to.
#[allow(
    clippy::large_enum_variant,
    reason = "a value on the stack between two steps of a connection, never stored or collected"
)]
enum Progress<G: Game> {
    Wait(Step<G>),
    Done(Box<MatchboxSession<G>>),
    /// The handshake round is over (a connection for a [`MatchPeer`](super::MatchPeer)).
    Handshaken(Box<Handshaken>),
}

/// A connection for a [`MatchPeer`](super::MatchPeer) whose handshake round is over: the
/// socket, the roster, what the round leaves behind and the identity every peer announced.
struct Handshaken {
    socket: WebRtcSocket,
    message_loop: MessageLoop,
    roster: Roster,
    /// The game's reliable messages that arrived during the round.
    pending: Vec<(PeerId, Vec<u8>)>,
    /// Our verdicts, for peers that repeat their handshake.
    answers: LateAnswers<PeerId>,
    /// The match identity each remote peer's handshake announced.
    identities: BTreeMap<PeerId, Option<PublicIdentity>>,
}

/// What a [`Connecting`] hands out at its end.
enum Connected<G: Game> {
    /// A synchronised [`MatchboxSession`].
    Session(Box<MatchboxSession<G>>),
    /// A connection whose handshake round is over ([`Connecting::for_match`]).
    Handshaken(Box<Handshaken>),
}

/// [`MatchboxSession::connect`] one step at a time, for a loop that must not block: a game's
/// frame loop, or a browser page (on wasm32, the only way to connect).
///
/// [`Connecting::start`] builds the socket and starts its message loop; then call
/// [`Connecting::poll`] regularly — every frame, or every few milliseconds — until it returns
/// the synchronised session. It runs the same steps, checks and time limits as
/// [`MatchboxSession::connect`] (which is a loop around it): wait for exactly the expected
/// number of peers, exchange and check the [`Handshake`] (no peer starts unless all agree),
/// start the GGRS session behind a [`GuardedSocket`] and wait for GGRS to synchronise. Times
/// are the caller's: any monotonic clock, as the time since a fixed origin (natively an
/// `Instant`'s `elapsed()`, in a page `performance.now()`); the time limits are measured on it.
///
/// Once `poll` has returned the session or an error, the attempt is spent: a later `poll`
/// returns [`MatchboxError::Spent`].
pub struct Connecting<G: Game> {
    options: MatchboxOptions,
    handshake: Handshake,
    socket: Option<WebRtcSocket>,
    message_loop: Option<MessageLoop>,
    step: Step<G>,
    /// Ends after the handshake round, for a [`MatchPeer`](super::MatchPeer).
    for_match: bool,
}

impl<G: Game> fmt::Debug for Connecting<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connecting")
            .field("room_url", &self.options.room_url)
            .field("stage", &self.stage())
            .finish()
    }
}

impl<G: Game> Connecting<G> {
    /// Builds the socket for `options.room_url` and starts its message loop ([`socket_builder_with_ice`],
    /// [`spawn_message_loop`]); `now` is the caller's clock (see the type's documentation).
    pub fn start(
        options: &MatchboxOptions,
        handshake: &Handshake,
        now: Duration,
    ) -> Result<Connecting<G>, MatchboxError> {
        if options.players < 2 {
            return Err(MatchboxError::TooFewPlayers { players: options.players });
        }
        let (socket, future) =
            socket_builder_with_ice(&options.room_url, options.ice.clone()).build();
        let message_loop = spawn_message_loop(future)?;
        Ok(Connecting {
            options: options.clone(),
            handshake: handshake.clone(),
            socket: Some(socket),
            message_loop: Some(message_loop),
            step: Step::Peers { since: now, watch: PeerWatch::default() },
            for_match: false,
        })
    }

    /// As [`Connecting::start`], for a connection that ends once the handshake round is over
    /// (the [`MatchPeer`](super::MatchPeer) over a [`MatchboxTransport`] starts its own
    /// session).
    fn for_match(
        options: &MatchboxOptions,
        handshake: &Handshake,
        now: Duration,
    ) -> Result<Connecting<G>, MatchboxError> {
        let mut connecting = Connecting::start(options, handshake, now)?;
        connecting.for_match = true;
        Ok(connecting)
    }

    /// The stage it is at (`None` once spent, or while it finds out why the socket closed).
    pub fn stage(&self) -> Option<Stage> {
        match self.step {
            Step::Peers { .. } => Some(Stage::Peers),
            Step::Handshake { .. } => Some(Stage::Handshake),
            Step::Synchronize { .. } => Some(Stage::Synchronize),
            Step::Closing { .. } | Step::Spent => None,
        }
    }

    /// Our id, once the signaling server has assigned it.
    pub fn local_id(&mut self) -> Option<PeerId> {
        self.socket.as_mut().and_then(WebRtcSocket::id)
    }

    /// Other peers connected to us so far (a page shows "waiting for an opponent" while 0).
    pub fn connected_peers(&self) -> usize {
        self.socket.as_ref().map_or(0, |s| s.connected_peers().count())
    }

    /// One step: takes in what the socket received, moves on when a stage completes. `Ok(None)`:
    /// not yet; `Ok(Some(session))`: synchronised, the match can start.
    pub fn poll(&mut self, now: Duration) -> Result<Option<MatchboxSession<G>>, MatchboxError> {
        match self.poll_connected(now)? {
            None => Ok(None),
            Some(Connected::Session(session)) => Ok(Some(*session)),
            // Only a connection made with `for_match` ends after the round.
            Some(Connected::Handshaken(_)) => Err(MatchboxError::Spent),
        }
    }

    /// [`Connecting::poll`], handing out what the connection ends with.
    fn poll_connected(&mut self, now: Duration) -> Result<Option<Connected<G>>, MatchboxError> {
        if let Step::Closing { since } = self.step {
            return self.poll_closing(since, now);
        }
        let step = core::mem::replace(&mut self.step, Step::Spent);
        match self.advance(step, now) {
            Ok(Progress::Wait(next)) => {
                self.step = next;
                Ok(None)
            }
            Ok(Progress::Done(session)) => Ok(Some(Connected::Session(session))),
            Ok(Progress::Handshaken(done)) => Ok(Some(Connected::Handshaken(done))),
            Err(MatchboxError::SocketClosed { reason: None }) => {
                // Give the loop a moment to record why it ended.
                self.step = Step::Closing { since: now };
                self.poll_closing(now, now)
            }
            Err(e) => {
                self.socket = None;
                self.message_loop = None;
                Err(e)
            }
        }
    }

    /// [`Step::Closing`] (since `since`): `SocketClosed` with the loop's reason once it is
    /// known or [`CLOSE_WAIT`] has passed.
    fn poll_closing(
        &mut self,
        since: Duration,
        now: Duration,
    ) -> Result<Option<Connected<G>>, MatchboxError> {
        let finished = self.message_loop.as_ref().is_none_or(MessageLoop::is_finished);
        if !finished && now.saturating_sub(since) < CLOSE_WAIT {
            return Ok(None);
        }
        self.step = Step::Spent;
        self.socket = None;
        let reason = self.message_loop.take().and_then(|ml| ml.error());
        Err(MatchboxError::SocketClosed { reason })
    }

    fn advance(&mut self, step: Step<G>, now: Duration) -> Result<Progress<G>, MatchboxError> {
        let players = self.options.players;
        let Some(socket) = self.socket.as_mut() else { return Err(MatchboxError::Spent) };
        match step {
            Step::Peers { since, mut watch } => {
                refresh(socket)?;
                watch.poll(socket, &self.handshake, now)?;
                if watch.failure.is_none()
                    && let Some(roster) = roster_if_complete(socket, players)?
                {
                    let early = watch.early;
                    let round =
                        HandshakeRound::start(socket, &roster, &self.handshake, now, early)?;
                    return Ok(Progress::Wait(Step::Handshake { roster, round }));
                }
                let waited = now.saturating_sub(since);
                if waited >= self.options.peers_timeout {
                    return Err(match watch.failure {
                        Some((e, _)) => e,
                        None => peers_timeout(socket, players, waited),
                    });
                }
                Ok(Progress::Wait(Step::Peers { since, watch }))
            }
            Step::Handshake { roster, mut round } => {
                let timeout = self.options.handshake_timeout;
                let Some(pending) = round.poll(socket, &self.handshake, now, timeout)? else {
                    return Ok(Progress::Wait(Step::Handshake { roster, round }));
                };
                if self.for_match {
                    let (Some(socket), Some(message_loop)) =
                        (self.socket.take(), self.message_loop.take())
                    else {
                        return Err(MatchboxError::Spent);
                    };
                    return Ok(Progress::Handshaken(Box::new(Handshaken {
                        socket,
                        message_loop,
                        roster,
                        pending,
                        answers: round.late_answers(),
                        identities: round.identities(),
                    })));
                }
                let (session, guard) = start_p2p_session(socket, &roster, &self.options.session)?;
                let next = Step::Synchronize {
                    roster,
                    session: Box::new(session),
                    guard,
                    pending,
                    answers: round.late_answers(),
                    since: now,
                };
                self.advance(next, now)
            }
            Step::Synchronize { roster, mut session, guard, mut pending, mut answers, since } => {
                // A peer whose answer from us was lost repeats its handshake, and cannot start
                // (nor synchronise with us) until we answer it.
                let received = socket.get_channel_mut(RELIABLE_CHANNEL)?.receive();
                let mut verdicts = Vec::new();
                pending.extend(answers.sort(received, Some(now), &mut verdicts));
                send_all(socket, verdicts)?;
                if synchronized(&mut session) {
                    let (Some(socket), Some(message_loop)) =
                        (self.socket.take(), self.message_loop.take())
                    else {
                        return Err(MatchboxError::Spent);
                    };
                    return Ok(Progress::Done(Box::new(MatchboxSession {
                        session: *session,
                        guard,
                        roster,
                        socket,
                        message_loop,
                        pending,
                        answers,
                        config: self.options.session,
                    })));
                }
                let waited = now.saturating_sub(since);
                if waited >= self.options.handshake_timeout {
                    return Err(synchronize_timeout(waited));
                }
                Ok(Progress::Wait(Step::Synchronize {
                    roster,
                    session,
                    guard,
                    pending,
                    answers,
                    since,
                }))
            }
            Step::Closing { .. } | Step::Spent => Err(MatchboxError::Spent),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::Content;
    use crate::world::{Hooks, World, WorldConfig};

    /// A two-player game the connection tests hand to matchbox (they never step it).
    #[derive(Debug)]
    struct Duel;

    impl Game for Duel {
        type Input = u8;
        type Component = ();
        type Global = ();
    }

    /// The handshake of a two-player match.
    fn duel_setup() -> Handshake {
        let content = Arc::new(Content::from_ron_str("()").expect("empty content"));
        let config = WorldConfig { players: 2, ..WorldConfig::default() };
        let world = World::<Duel>::new(content, &Hooks::new(), config).expect("a world");
        Handshake::of(&world)
    }

    /// Polls until the attempt ends (at most `limit`), sleeping between polls.
    fn poll_until_done(
        c: &mut Connecting<Duel>,
        limit: Duration,
    ) -> Result<Option<MatchboxSession<Duel>>, MatchboxError> {
        let origin = Instant::now();
        loop {
            match c.poll(origin.elapsed()) {
                Ok(None) if origin.elapsed() < limit => std::thread::sleep(POLL),
                other => return other,
            }
        }
    }

    #[test]
    fn connecting_needs_two_players() {
        let handshake = duel_setup();
        let options = MatchboxOptions::new("ws://127.0.0.1:9/room", 1);
        let e = Connecting::<Duel>::start(&options, &handshake, Duration::ZERO)
            .expect_err("one player is refused");
        assert!(matches!(e, MatchboxError::TooFewPlayers { players: 1 }), "{e}");
    }

    /// A signaling server that never answers: the peers stage times out on the caller's
    /// clock, naming what is missing; the spent attempt says so when polled again.
    #[test]
    fn connecting_times_out_on_the_callers_clock_then_is_spent() {
        let handshake = duel_setup();
        let mut options = MatchboxOptions::new("ws://127.0.0.1:9/room", 2);
        options.peers_timeout = Duration::from_secs(30);
        let mut c = Connecting::<Duel>::start(&options, &handshake, Duration::ZERO)
            .expect("the socket starts");
        assert_eq!(c.stage(), Some(Stage::Peers));
        assert_eq!(c.connected_peers(), 0);
        // The caller's clock says 31 s have passed: the stage gives up at once (unless the
        // socket already closed, which is the other way this attempt ends).
        match c.poll(Duration::from_secs(31)) {
            Err(MatchboxError::Timeout { stage: Stage::Peers, waited, detail }) => {
                assert_eq!(waited, Duration::from_secs(31));
                assert!(detail.contains("never assigned an id"), "{detail}");
            }
            Err(MatchboxError::SocketClosed { .. }) | Ok(None) => {}
            other => panic!("unexpected {other:?}"),
        }
        if c.stage().is_some() {
            // Still closing: let it finish.
            let _ = poll_until_done(&mut c, Duration::from_secs(30));
        }
        assert_eq!(c.stage(), None);
        assert!(matches!(c.poll(Duration::from_secs(40)), Err(MatchboxError::Spent)));
    }

    /// No signaling server at the room URL: the attempt fails with `SocketClosed` carrying the
    /// message loop's reason, then is spent.
    #[test]
    fn connecting_reports_why_the_socket_closed() {
        let handshake = duel_setup();
        let options = MatchboxOptions::new("ws://127.0.0.1:9/room", 2);
        let mut c = Connecting::<Duel>::start(&options, &handshake, Duration::ZERO)
            .expect("the socket starts");
        // matchbox tries the signaling server three times, 3 s apart.
        match poll_until_done(&mut c, Duration::from_secs(60)) {
            Err(MatchboxError::SocketClosed { reason: Some(reason) }) => {
                assert!(!reason.is_empty());
            }
            other => panic!("expected SocketClosed with a reason, got {other:?}"),
        }
        assert!(matches!(c.poll(Duration::from_secs(61)), Err(MatchboxError::Spent)));
    }

    /// The round's time limit in the tests below.
    const TIMEOUT: Duration = Duration::from_secs(10);

    /// One peer of a [`Mesh`]: in its round, finished (answering late repeats as a started
    /// session does, with the game's messages it was handed), or failed.
    enum Side {
        Round(HandshakeRound<u8>),
        Done(LateAnswers<u8>, Messages<u8>),
        Failed(MatchboxError),
    }

    /// Peers `0..n` running the round's decisions over a network that delivers everything
    /// sent, in order, except what the test loses; all on one clock, no socket.
    struct Mesh {
        handshake: Handshake,
        sides: Vec<Side>,
        /// In flight: (from, to, bytes).
        wire: Vec<(u8, u8, Packet)>,
        /// Everything ever sent: (from, to, bytes).
        sent: Vec<(u8, u8, Packet)>,
    }

    impl Mesh {
        fn new(n: u8) -> Mesh {
            let handshake = duel_setup();
            let sides = (0..n)
                .map(|i| {
                    let remotes = (0..n).filter(move |p| *p != i);
                    Side::Round(HandshakeRound::new(remotes, &handshake, Duration::ZERO))
                })
                .collect();
            let mut mesh = Mesh { handshake, sides, wire: Vec::new(), sent: Vec::new() };
            mesh.collect();
            mesh
        }

        fn send(&mut self, from: u8, to: u8, packet: Packet) {
            self.sent.push((from, to, packet.clone()));
            self.wire.push((from, to, packet));
        }

        /// Puts what the rounds queued on the wire.
        fn collect(&mut self) {
            for i in 0..self.sides.len() {
                if let Side::Round(r) = &mut self.sides[i] {
                    for (to, packet) in r.outbox() {
                        self.send(i as u8, to, packet);
                    }
                }
            }
        }

        /// Delivers what is in flight (but what `lose` drops), then ticks every round at `now`.
        fn step(&mut self, now: Duration, lose: &mut impl FnMut(u8, u8, &[u8]) -> bool) {
            for (from, to, packet) in core::mem::take(&mut self.wire) {
                if lose(from, to, &packet) {
                    continue;
                }
                let mut answers = Vec::new();
                match &mut self.sides[usize::from(to)] {
                    Side::Round(r) => r.receive(from, &packet, &self.handshake, now),
                    Side::Done(late, game) => {
                        game.extend(late.sort([(from, packet)], Some(now), &mut answers));
                    }
                    Side::Failed(_) => {}
                }
                for (back, verdict) in answers {
                    self.send(to, back, verdict);
                }
            }
            for i in 0..self.sides.len() {
                let Side::Round(r) = &mut self.sides[i] else { continue };
                let over = r.tick(now, TIMEOUT);
                let (late, sent) = (r.late_answers(), r.outbox());
                match over {
                    Ok(None) => {}
                    Ok(Some(left)) => self.sides[i] = Side::Done(late, left),
                    Err(e) => self.sides[i] = Side::Failed(e),
                }
                for (to, packet) in sent {
                    self.send(i as u8, to, packet);
                }
            }
        }

        /// Steps every 10 ms until no round is left or the time limit has passed; when each
        /// peer's round ended.
        fn run(&mut self, mut lose: impl FnMut(u8, u8, &[u8]) -> bool) -> Vec<Option<Duration>> {
            let mut ended = vec![None; self.sides.len()];
            let mut now = Duration::ZERO;
            while now <= TIMEOUT + Duration::from_secs(1) {
                self.step(now, &mut lose);
                for (i, side) in self.sides.iter().enumerate() {
                    if !matches!(side, Side::Round(_)) && ended[i].is_none() {
                        ended[i] = Some(now);
                    }
                }
                if ended.iter().all(Option::is_some) {
                    break;
                }
                now += Duration::from_millis(10);
            }
            for (i, side) in self.sides.iter().enumerate() {
                if let Side::Failed(e) = side {
                    panic!("peer {i} failed: {e}");
                }
            }
            ended
        }

        /// How many times `from` sent `to` a packet of `kind`.
        fn count(&self, from: u8, to: u8, what: impl Fn(&[u8]) -> bool) -> usize {
            self.sent.iter().filter(|(f, t, p)| *f == from && *t == to && what(&p[..])).count()
        }
    }

    fn is_hello(p: &[u8]) -> bool {
        p.starts_with(HELLO_PREFIX)
    }

    fn is_accept(p: &[u8]) -> bool {
        p == ACCEPT
    }

    /// Losing the first message matching `what` from `from` to `to`, once.
    fn lose_first(
        from: u8,
        to: u8,
        what: impl Fn(&[u8]) -> bool,
    ) -> impl FnMut(u8, u8, &[u8]) -> bool {
        let mut lost = false;
        move |f, t, p| {
            let hit = !lost && f == from && t == to && what(p);
            lost |= hit;
            hit
        }
    }

    /// Nothing lost: every round of four ends at once, each handshake sent once.
    #[test]
    fn a_round_of_four_completes_without_resending_when_nothing_is_lost() {
        let mut mesh = Mesh::new(4);
        let ended = mesh.run(|_, _, _| false);
        assert!(ended.iter().all(|t| t.is_some_and(|t| t < RESEND_INTERVAL)), "{ended:?}");
        for (a, b) in [(0, 1), (1, 0), (2, 3), (3, 2)] {
            assert_eq!(mesh.count(a, b, is_hello), 1);
            assert_eq!(mesh.count(a, b, is_accept), 1);
        }
    }

    /// The first handshake from peer 2 to peer 0 is lost: 2 resends it after the resend
    /// interval, 0 answers, and every round of four completes (sent once, it never would).
    #[test]
    fn a_lost_handshake_is_resent_and_the_round_completes() {
        let mut mesh = Mesh::new(4);
        let ended = mesh.run(lose_first(2, 0, is_hello));
        let last = ended.iter().flatten().max().copied().expect("every round ended");
        assert!(last >= RESEND_INTERVAL && last < 2 * RESEND_INTERVAL, "{ended:?}");
        assert_eq!(mesh.count(2, 0, is_hello), 2, "resent once");
        assert_eq!(mesh.count(2, 1, is_hello), 1, "not resent to peers that answered");
        assert_eq!(mesh.count(0, 2, is_accept), 1);
    }

    /// The failure seen in a room of four: peer 0 heard peer 2's handshake but 2's verdict was
    /// lost. Peer 2's own round is over by then; it still answers 0's repeated handshake, and 0
    /// completes.
    #[test]
    fn a_lost_verdict_is_recovered_from_a_peer_that_has_finished() {
        let mut mesh = Mesh::new(4);
        let ended = mesh.run(lose_first(2, 0, is_accept));
        let (zero, two) = (ended[0].expect("0 ended"), ended[2].expect("2 ended"));
        assert!(two < RESEND_INTERVAL, "peer 2 finished first: {ended:?}");
        assert!(zero >= RESEND_INTERVAL && zero < 2 * RESEND_INTERVAL, "{ended:?}");
        assert_eq!(mesh.count(0, 2, is_hello), 2, "0 asked again");
        assert_eq!(mesh.count(2, 0, is_accept), 2, "the finished peer answered");
        for side in &mesh.sides {
            let Side::Done(_, game) = side else { panic!("a round did not complete") };
            assert!(game.is_empty(), "no session message reaches the game: {game:?}");
        }
    }

    /// A repeated handshake is answered with the same verdict (accepting or refusing) and
    /// counts once: it stands in for no other peer's, and never reaches the game; a repeated
    /// verdict changes nothing, and a refusal after an acceptance is ignored.
    #[test]
    fn a_repeated_handshake_gets_the_same_verdict_and_counts_once() {
        let local = duel_setup();
        let hello = local.encode();
        let mut other = local.clone();
        other.seed += 1;
        let odd = other.encode();
        let mut r = HandshakeRound::new([1u8, 2, 3], &local, Duration::ZERO);
        r.outbox();
        let t = |ms| Duration::from_millis(ms);
        r.receive(1, &hello, &local, t(0));
        r.receive(3, &odd, &local, t(0));
        r.receive(1, &hello, &local, t(200));
        r.receive(3, &odd, &local, t(200));
        let sent = r.outbox();
        let to = |p: u8| sent.iter().filter(move |(to, _)| *to == p).map(|(_, v)| v.clone());
        let ones: Vec<Packet> = to(1).collect();
        assert_eq!(ones, vec![Packet::from(ACCEPT.to_vec()); 2]);
        let threes: Vec<Packet> = to(3).collect();
        assert_eq!(threes.len(), 2);
        assert!(threes[0].starts_with(REFUSE), "{:?}", String::from_utf8_lossy(&threes[0]));
        assert_eq!(threes[0], threes[1], "the same refusal");
        for _ in 0..3 {
            r.receive(1, ACCEPT, &local, t(300));
            r.receive(2, ACCEPT, &local, t(300));
        }
        r.receive(1, &[REFUSE, b"too late"].concat(), &local, t(300));
        // 1 counted once, 2 never heard: not settled, whatever 1 repeats.
        assert!(matches!(r.tick(t(300), TIMEOUT), Ok(None)));
        assert!(r.leftover.is_empty(), "a repeat is not a game message");
        match r.tick(TIMEOUT, TIMEOUT) {
            Err(MatchboxError::Handshake(HandshakeError::Mismatch { field, .. })) => {
                assert_eq!(field, "session seed");
            }
            other => panic!("expected 3's mismatch, got {other:?}"),
        }
        let mut fine = HandshakeRound::new([1u8, 2], &local, Duration::ZERO);
        fine.receive(1, &hello, &local, t(0));
        fine.receive(1, &hello, &local, t(0));
        fine.receive(1, ACCEPT, &local, t(0));
        fine.receive(2, ACCEPT, &local, t(0));
        fine.receive(1, &[REFUSE, b"too late"].concat(), &local, t(0));
        match fine.tick(TIMEOUT, TIMEOUT) {
            Err(MatchboxError::Timeout { detail, .. }) => {
                assert_eq!(detail, "still waiting for the handshake of 2");
            }
            other => panic!("expected a timeout naming 2 only, got {other:?}"),
        }
    }

    /// Once its round is over, a peer answers a repeated handshake with its verdict and hands
    /// the game only the game's messages from the roster: not the repeat, a late verdict, an
    /// announcement, nor anything from a stranger.
    #[test]
    fn a_finished_peer_answers_a_late_repeat() {
        let local = duel_setup();
        let hello = Packet::from(local.encode());
        let mut r = HandshakeRound::new([1u8], &local, Duration::ZERO);
        r.receive(1, &hello, &local, Duration::ZERO);
        r.receive(1, ACCEPT, &local, Duration::ZERO);
        assert!(matches!(r.tick(Duration::ZERO, TIMEOUT), Ok(Some(left)) if left.is_empty()));
        let mut late = r.late_answers();
        let game = Packet::from(b"RBASUM 59 1234".to_vec());
        let received = [
            (1, game.clone()),
            (1, hello.clone()),
            (1, Packet::from(ACCEPT.to_vec())),
            (1, Packet::from(local.players_announcement())),
            (7, hello.clone()),
            (7, game.clone()),
        ];
        let mut answers = Vec::new();
        let got = late.sort(received, Some(Duration::from_secs(3)), &mut answers);
        assert_eq!(got, vec![(1, game.to_vec())]);
        assert_eq!(answers, vec![(1, Packet::from(ACCEPT.to_vec()))]);
    }

    /// Our handshake goes again to each peer whose verdict is missing, once per resend
    /// interval however often the round is ticked, and no more once its verdict arrived.
    #[test]
    fn the_handshake_is_resent_at_a_bounded_interval_until_the_verdict_arrives() {
        let local = duel_setup();
        let mut r = HandshakeRound::new([1u8, 2], &local, Duration::ZERO);
        let mut hellos = [0usize; 3];
        let mut count = |r: &mut HandshakeRound<u8>| {
            for (to, p) in r.outbox() {
                assert!(is_hello(&p));
                hellos[usize::from(to)] += 1;
            }
        };
        count(&mut r);
        for ms in 1..=1000 {
            let now = Duration::from_millis(ms);
            if ms == 600 {
                r.receive(1, ACCEPT, &local, now);
            }
            assert!(matches!(r.tick(now, TIMEOUT), Ok(None)));
            count(&mut r);
        }
        // At 0, 250, 500 (then accepted) to 1; at 0, 250, 500, 750, 1000 to 2.
        assert_eq!(hellos, [0, 3, 5]);
    }

    /// A peer flooding repeats of its handshake gets at most one verdict per answer interval
    /// during the round and, after it, one per batch received and a fixed number in all; a
    /// repeat is never decoded again, and an oversized first handshake is refused unread.
    #[test]
    fn a_flood_of_repeated_handshakes_is_answered_at_a_bounded_rate() {
        let local = duel_setup();
        let hello = local.encode();
        let mut r = HandshakeRound::new([1u8, 2], &local, Duration::ZERO);
        r.outbox();
        let mut verdicts = 0;
        for ms in 0..=2000u64 {
            for _ in 0..20 {
                r.receive(1, &hello, &local, Duration::from_millis(ms));
            }
            verdicts += r.outbox().iter().filter(|(to, p)| *to == 1 && !is_hello(p)).count();
        }
        // The first answer, then at most one per 125 ms over 2 s.
        assert!((2..=1 + 2000 / 125).contains(&verdicts), "{verdicts} verdicts");
        r.receive(2, &vec![b'x'; MAX_HELLO + 1], &local, Duration::ZERO);
        let refusal = r.outbox().pop().expect("a verdict");
        assert!(String::from_utf8_lossy(&refusal.1).contains("at most"), "{refusal:?}");

        let mut late = r.late_answers();
        let mut answers = Vec::new();
        let flood = || (0..1000).map(|_| (1u8, Packet::from(hello.clone())));
        late.sort(flood(), None, &mut answers);
        assert_eq!(answers.len(), 1, "one answer per batch");
        for _ in 0..1000 {
            late.sort(flood(), None, &mut answers);
        }
        let total = usize::try_from(MAX_REPEAT_ANSWERS).expect("small");
        assert!(answers.len() + verdicts - 1 <= total, "{} answers after the round", answers.len());
    }
}
