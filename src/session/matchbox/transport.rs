//! [`MatchboxTransport`]: a [`MatchTransport`] over a matchbox WebRTC socket, so a
//! [`MatchPeer`] plays over WebRTC, survives departures and takes players back — a crashed
//! program or a reloaded browser tab comes back into its slot from the new peer id the
//! signaling server gives it ([`ConnectingMatch::rejoin`]).

use super::{
    Connected, Connecting, GGRS_CHANNEL, Handshaken, Kind, LateAnswers, MatchboxError,
    MatchboxOptions, MessageLoop, PeerId, RELIABLE_CHANNEL, kind, refresh, socket_builder_with_ice,
    spawn_message_loop,
};
use crate::session::handshake::Handshake;
use crate::session::identity::Identity;
use crate::session::inbox::{Inbox, TransportStats, session_packet, side_packet};
use crate::session::match_peer::{MatchPeer, MatchTransport, RejoinTicket};
use crate::session::rejoin::WireAddress;
use crate::session::start::MatchKeys;
use crate::world::{Game, World};
use core::fmt;
use ggrs::{Message, NonBlockingSocket};
use matchbox_socket::{Packet, WebRtcSocket};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The game's reliable messages kept until [`MatchboxTransport::receive_reliable`] reads them.
const MAX_QUEUED_RELIABLE: usize = 1024;

/// What a [`MatchboxTransport`] saw: packets it dropped and why. `foreign` also counts game
/// messages on the reliable channel from peers that are not one of the match's slots.
pub type MatchboxStats = TransportStats;

struct Shared {
    socket: WebRtcSocket,
    message_loop: MessageLoop,
    /// The slots' peers this transport takes GGRS messages and game messages from.
    peers: Vec<PeerId>,
    /// GGRS messages by session channel, side-channel messages (both on [`GGRS_CHANNEL`]).
    inbox: Inbox<PeerId>,
    /// The game's reliable messages waiting.
    reliable: VecDeque<(PeerId, Vec<u8>)>,
    /// Our verdicts on the handshakes of the match's start, for a peer that repeats its own
    /// because our answer was lost (it cannot start until it has one).
    answers: LateAnswers<PeerId>,
    /// The socket's message loop has ended.
    closed: bool,
}

impl Shared {
    /// Reads what has arrived into the queues.
    fn pump(&mut self) {
        if refresh(&mut self.socket).is_err() {
            // What arrived before the loop ended is still read.
            self.closed = true;
        }
        if let Ok(channel) = self.socket.get_channel_mut(GGRS_CHANNEL) {
            for (from, packet) in channel.receive() {
                self.inbox.stats.received += 1;
                self.inbox.file(from, self.peers.contains(&from), &packet);
            }
        }
        let received = match self.socket.get_channel_mut(RELIABLE_CHANNEL) {
            Ok(channel) => channel.receive(),
            Err(_) => Vec::new(),
        };
        let mut session = Vec::new();
        for (from, packet) in received {
            self.inbox.stats.received += 1;
            match kind(&packet) {
                Kind::Game if !self.peers.contains(&from) => self.inbox.stats.foreign += 1,
                Kind::Game if self.reliable.len() >= MAX_QUEUED_RELIABLE => {
                    self.inbox.stats.overflow += 1;
                }
                Kind::Game => self.reliable.push_back((from, packet.to_vec())),
                _ => session.push((from, packet)),
            }
        }
        let mut verdicts = Vec::new();
        self.answers.sort(session, None, &mut verdicts);
        for (to, verdict) in verdicts {
            self.send(RELIABLE_CHANNEL, to, verdict);
        }
    }

    fn send(&mut self, channel: usize, to: PeerId, packet: Packet) {
        // A packet that cannot be sent (the socket closed, the peer is gone) is a lost one:
        // GGRS and the rejoin protocol resend.
        if let Ok(c) = self.socket.get_channel_mut(channel)
            && c.try_send(packet, to).is_ok()
        {
            self.inbox.stats.sent += 1;
        }
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // Nothing panics while holding the lock; a poisoned one still holds consistent queues.
    shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A [`MatchTransport`] over a matchbox [`WebRtcSocket`] (built by
/// [`socket_builder`](super::socket_builder)): the GGRS messages of every session channel and
/// the rejoin protocol's side channel share the unreliable [`GGRS_CHANNEL`], each packet tagged
/// with what it carries (and GGRS's with its session channel); the reliable
/// [`RELIABLE_CHANNEL`] carries the game's own messages ([`MatchboxTransport::send_reliable`]).
/// It reads GGRS packets and game messages from the match's slots only, and side-channel
/// packets from other peers of the room into a small queue of their own (a player coming back
/// has a new peer id and asks from there); every GGRS message goes on to the session's
/// [`GuardedSocket`](crate::session::GuardedSocket), which authenticates it with keys of its own
/// channel.
///
/// Build one with [`ConnectingMatch`], which waits for the room, exchanges the match's
/// handshakes (each announcing the peer's match identity) and starts the [`MatchPeer`].
#[derive(Clone)]
pub struct MatchboxTransport {
    shared: Arc<Mutex<Shared>>,
    local: PeerId,
}

impl fmt::Debug for MatchboxTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatchboxTransport")
            .field("local", &self.local)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl MatchboxTransport {
    /// A transport over `socket` (whose id the signaling server has assigned: `local`), taking
    /// messages from the peers of `slots`.
    fn new(
        socket: WebRtcSocket,
        message_loop: MessageLoop,
        local: PeerId,
        slots: &[PeerId],
        answers: LateAnswers<PeerId>,
    ) -> MatchboxTransport {
        let shared = Shared {
            socket,
            message_loop,
            peers: slots.iter().copied().filter(|p| *p != local).collect(),
            inbox: Inbox::default(),
            reliable: VecDeque::new(),
            answers,
            closed: false,
        };
        MatchboxTransport { shared: Arc::new(Mutex::new(shared)), local }
    }

    /// Our peer id.
    pub fn local_id(&self) -> PeerId {
        self.local
    }

    /// What the transport dropped so far, and why.
    pub fn stats(&self) -> MatchboxStats {
        lock(&self.shared).inbox.stats
    }

    /// The peers connected to us now (a player that left is gone from it; one coming back
    /// appears with a new id).
    pub fn connected_peers(&self) -> Vec<PeerId> {
        let mut s = lock(&self.shared);
        s.pump();
        s.socket.connected_peers().collect()
    }

    /// `Some` once the socket's message loop has ended (the signaling server went away, or
    /// the socket was closed), with its error if it had one. The match goes on with what it
    /// has: peers already connected stay connected, but nobody new can reach this one.
    pub fn closed(&self) -> Option<Option<String>> {
        let s = lock(&self.shared);
        s.closed.then(|| s.message_loop.error())
    }

    /// Sends bytes to `to` on the reliable channel. A game message must not begin with the
    /// session's own prefixes (see
    /// [`MatchboxSession::receive_reliable`](super::MatchboxSession::receive_reliable)).
    pub fn send_reliable(&mut self, to: PeerId, bytes: &[u8]) {
        lock(&self.shared).send(RELIABLE_CHANNEL, to, Packet::from(bytes.to_vec()));
    }

    /// The game's messages that arrived on the reliable channel from the match's slots since
    /// the last call, in order. The session's own (a repeated handshake, which is answered
    /// here) never come out of it.
    pub fn receive_reliable(&mut self) -> Vec<(PeerId, Vec<u8>)> {
        let mut s = lock(&self.shared);
        s.pump();
        s.reliable.drain(..).collect()
    }

    /// Closes the socket's channels, as a program that stops does: the other peers see this
    /// one disconnect.
    pub fn close(&mut self) {
        lock(&self.shared).socket.close();
    }
}

/// A peer id is its UUID's 16 bytes.
impl WireAddress for PeerId {
    fn to_wire(&self) -> Vec<u8> {
        self.0.as_bytes().to_vec()
    }

    fn from_wire(bytes: &[u8]) -> Option<Self> {
        Some(PeerId(uuid::Uuid::from_bytes(bytes.try_into().ok()?)))
    }
}

impl MatchTransport for MatchboxTransport {
    type Addr = PeerId;
    type Socket = MatchboxSessionSocket;

    fn session_socket(&mut self, channel: u32) -> MatchboxSessionSocket {
        MatchboxSessionSocket { shared: Arc::clone(&self.shared), channel }
    }

    fn send_raw(&mut self, to: &PeerId, bytes: Vec<u8>) {
        lock(&self.shared).send(GGRS_CHANNEL, *to, Packet::from(side_packet(&bytes)));
    }

    fn recv_raw(&mut self) -> Vec<(PeerId, Vec<u8>)> {
        let mut s = lock(&self.shared);
        s.pump();
        s.inbox.take_side()
    }

    fn set_slots(&mut self, addrs: &[PeerId]) {
        let local = self.local;
        lock(&self.shared).peers = addrs.iter().copied().filter(|a| *a != local).collect();
    }
}

/// The GGRS socket of one session channel of a [`MatchboxTransport`]. Reading it drops the
/// messages of every lower channel, now and from then on: the peer has moved on.
pub struct MatchboxSessionSocket {
    shared: Arc<Mutex<Shared>>,
    channel: u32,
}

impl fmt::Debug for MatchboxSessionSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatchboxSessionSocket").field("channel", &self.channel).finish()
    }
}

impl NonBlockingSocket<PeerId> for MatchboxSessionSocket {
    fn send_to(&mut self, msg: &Message, addr: &PeerId) {
        let packet = session_packet(self.channel, msg);
        lock(&self.shared).send(GGRS_CHANNEL, *addr, Packet::from(packet));
    }

    fn receive_all_messages(&mut self) -> Vec<(PeerId, Message)> {
        let mut s = lock(&self.shared);
        s.inbox.leave_below(self.channel);
        s.pump();
        s.inbox.take_session(self.channel)
    }
}

/// Where a [`ConnectingMatch`] is.
enum Joining<G: Game> {
    /// The start of a match: waiting for the room and the handshake round.
    Start { connecting: Box<Connecting<G>>, identity: Identity },
    /// Coming back into a running match: waiting for the signaling server to give us an id.
    Rejoin {
        socket: WebRtcSocket,
        message_loop: MessageLoop,
        ticket: Box<RejoinTicket<PeerId>>,
        since: Duration,
    },
    /// Finished (the peer was handed out, or an error was).
    Spent,
}

/// A [`MatchPeer`] over matchbox, one step at a time (a loop that must not block: a game's
/// frame loop, a browser page): [`ConnectingMatch::start`] for a player at the start of a
/// match, [`ConnectingMatch::rejoin`] for one coming back into it with its
/// [`RejoinTicket`]; then [`ConnectingMatch::poll`] until it hands out the peer, and
/// [`MatchPeer::tick`] it once per tick from then on.
///
/// **Starting.** The same steps and checks as [`Connecting`]: wait for exactly the expected
/// number of peers, order them by [`PeerId`] (the slots), exchange and check the
/// [`Handshake`]s. Each handshake announces the peer's fresh match identity; every datagram of
/// the match is authenticated with those keys, and a rejoin claim on a slot is checked under
/// that slot's. The peer's GGRS session synchronises in its first ticks.
///
/// **Coming back.** A player whose program stopped (a crash, a closed or reloaded tab) kept
/// its [`MatchPeer::ticket`]. Its new program connects to the same room, gets a new peer id,
/// and as soon as it has one starts a [`MatchPeer::rejoin_with`] the ticket: it asks the
/// members at the addresses the ticket names (the room connects it to them meanwhile; the
/// protocol resends), proves the slot is its own with the slot's key, and comes back in from
/// its new id (see [`rejoin`](crate::session::rejoin)).
pub struct ConnectingMatch<G: Game> {
    step: Joining<G>,
    world: Option<World<G>>,
    options: MatchboxOptions,
}

impl<G: Game> fmt::Debug for ConnectingMatch<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let step = match &self.step {
            Joining::Start { connecting, .. } => format!("{connecting:?}"),
            Joining::Rejoin { ticket, .. } => format!("coming back into slot {}", ticket.slot),
            Joining::Spent => "spent".to_string(),
        };
        f.debug_struct("ConnectingMatch").field("step", &step).finish()
    }
}

impl<G: Game> ConnectingMatch<G> {
    /// The player's peer at the start of a match: joins the room of `options`, with `world`
    /// (the same on every peer) and a fresh match identity. `now` is the caller's clock (see
    /// [`Connecting`]).
    pub fn start(
        options: &MatchboxOptions,
        world: World<G>,
        now: Duration,
    ) -> Result<ConnectingMatch<G>, MatchboxError> {
        let identity = Identity::generate().map_err(MatchboxError::Identity)?;
        let handshake = Handshake::of(&world).with_identity(&identity);
        let connecting = Connecting::for_match(options, &handshake, now)?;
        Ok(ConnectingMatch {
            step: Joining::Start { connecting: Box::new(connecting), identity },
            world: Some(world),
            options: options.clone(),
        })
    }

    /// The player of `ticket` coming back into the running match in the room of `options`:
    /// `world` built as at the start of the match. The room's peer count is not checked (the
    /// members are in it already); [`MatchboxOptions::peers_timeout`] bounds the wait for an
    /// id from the signaling server.
    pub fn rejoin(
        options: &MatchboxOptions,
        world: World<G>,
        ticket: RejoinTicket<PeerId>,
        now: Duration,
    ) -> Result<ConnectingMatch<G>, MatchboxError> {
        ticket.check().map_err(MatchboxError::Session)?;
        let (socket, future) =
            socket_builder_with_ice(&options.room_url, options.ice.clone()).build();
        let message_loop = spawn_message_loop(future)?;
        Ok(ConnectingMatch {
            step: Joining::Rejoin { socket, message_loop, ticket: Box::new(ticket), since: now },
            world: Some(world),
            options: options.clone(),
        })
    }

    /// The stage a start is at ([`Connecting::stage`]; `None` while coming back, once spent,
    /// or while it finds out why the socket closed).
    pub fn stage(&self) -> Option<super::Stage> {
        match &self.step {
            Joining::Start { connecting, .. } => connecting.stage(),
            Joining::Rejoin { .. } | Joining::Spent => None,
        }
    }

    /// Other peers connected to us so far (a page shows "waiting for an opponent" while 0).
    pub fn connected_peers(&self) -> usize {
        match &self.step {
            Joining::Start { connecting, .. } => connecting.connected_peers(),
            Joining::Rejoin { socket, .. } => socket.connected_peers().count(),
            Joining::Spent => 0,
        }
    }

    /// Whether this is a player coming back into a running match ([`ConnectingMatch::rejoin`]).
    pub fn is_rejoin(&self) -> bool {
        matches!(self.step, Joining::Rejoin { .. })
    }

    /// Joins the room, waits for every peer and the handshake round, and hands out the
    /// player's peer at the start of a match. Blocks (native only: on wasm32, poll a
    /// [`ConnectingMatch`]).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn connect(
        options: &MatchboxOptions,
        world: World<G>,
    ) -> Result<MatchPeer<G, MatchboxTransport>, MatchboxError> {
        let origin = std::time::Instant::now();
        ConnectingMatch::start(options, world, Duration::ZERO)?.finish(origin)
    }

    /// Polls until the peer is handed out (or an error is), sleeping between polls; `origin`
    /// is where the caller's clock started. Blocks (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn finish(
        mut self,
        origin: std::time::Instant,
    ) -> Result<MatchPeer<G, MatchboxTransport>, MatchboxError> {
        loop {
            if let Some(peer) = self.poll(origin.elapsed())? {
                return Ok(peer);
            }
            std::thread::sleep(super::POLL);
        }
    }

    /// One step: `Ok(None)` not yet, `Ok(Some(peer))` the player's peer, to tick from now on
    /// (one coming back is [`MatchPeer::is_rejoining`] until the members let it in). Once it
    /// has returned the peer or an error, a later call returns [`MatchboxError::Spent`].
    pub fn poll(
        &mut self,
        now: Duration,
    ) -> Result<Option<MatchPeer<G, MatchboxTransport>>, MatchboxError> {
        match core::mem::replace(&mut self.step, Joining::Spent) {
            Joining::Start { mut connecting, identity } => match connecting.poll_connected(now)? {
                None => {
                    self.step = Joining::Start { connecting, identity };
                    Ok(None)
                }
                Some(Connected::Handshaken(done)) => self.start_peer(*done, identity).map(Some),
                Some(Connected::Session(_)) => Err(MatchboxError::Spent),
            },
            Joining::Rejoin { mut socket, message_loop, ticket, since } => {
                if refresh(&mut socket).is_err() {
                    return Err(MatchboxError::SocketClosed { reason: message_loop.error() });
                }
                let Some(local) = socket.id() else {
                    let waited = now.saturating_sub(since);
                    if waited >= self.options.peers_timeout {
                        return Err(MatchboxError::Timeout {
                            stage: super::Stage::Peers,
                            waited,
                            detail: "the signaling server never assigned an id".to_string(),
                        });
                    }
                    self.step = Joining::Rejoin { socket, message_loop, ticket, since };
                    return Ok(None);
                };
                let Some(world) = self.world.take() else { return Err(MatchboxError::Spent) };
                let answers = LateAnswers { answers: BTreeMap::new() };
                let transport =
                    MatchboxTransport::new(socket, message_loop, local, &ticket.addrs, answers);
                let peer = MatchPeer::rejoin_with(world, transport, &ticket, self.options.session)?;
                Ok(Some(peer))
            }
            Joining::Spent => Err(MatchboxError::Spent),
        }
    }

    /// The match's peer once the handshake round is over: every slot's key from its
    /// handshake.
    fn start_peer(
        &mut self,
        done: Handshaken,
        identity: Identity,
    ) -> Result<MatchPeer<G, MatchboxTransport>, MatchboxError> {
        let Handshaken { socket, message_loop, roster, pending, answers, identities } = done;
        let mut seen = BTreeSet::from([identity.public()]);
        let mut remotes = Vec::new();
        for (peer, key) in identities {
            match key {
                Some(key) if seen.insert(key) => remotes.push((peer, key)),
                _ => return Err(MatchboxError::NoIdentity { peer: peer.to_string() }),
            }
        }
        let Some(world) = self.world.take() else { return Err(MatchboxError::Spent) };
        let keys = MatchKeys { local: identity, remotes };
        let transport =
            MatchboxTransport::new(socket, message_loop, roster.local(), roster.peers(), answers);
        lock(&transport.shared).reliable.extend(pending);
        let peer = MatchPeer::start(
            world,
            transport,
            roster.local_handle(),
            roster.peers().to_vec(),
            keys,
            self.options.session,
        )?;
        Ok(peer)
    }
}
