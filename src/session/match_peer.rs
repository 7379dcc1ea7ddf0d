//! [`MatchPeer`]: one member of a P2P match that survives departures and takes players back
//! ([`rejoin`](super::rejoin)), over any network that offers a [`MatchTransport`].

use super::guard::Guard;
use super::identity::{Identity, PublicIdentity};
use super::late_spectator::{
    HostView, SpectateTicket, SpectatorHost, SpectatorPolicy, encode_frame, is_spectate_message,
};
use super::net::EmulatedSocket;
use super::rejoin::{
    GIVE_UP_TICKS, Hold, Joiner, JoinerView, Member, MemberView, RejoinCommand, RejoinEvent,
    WireAddress,
};
use super::runner::{Address, Batch, GgrsConfig, Runner, SessionError, SessionEvent};
use super::start::{MatchKeys, SessionConfig};
use crate::num::Frame;
use crate::present::Presenter;
use crate::world::{Game, World};
use ggrs::{NonBlockingSocket, P2PSession, PlayerType, SessionState};

/// What a [`MatchPeer`] needs of its network: a GGRS socket per session *channel* and a side
/// channel for the [`rejoin`](super::rejoin) protocol.
///
/// A rejoin starts a fresh GGRS session between the same addresses (see
/// [`rejoin`](super::rejoin)); its channel is one more than the last. A transport keeps the
/// sessions apart: a socket of channel `c` never hands GGRS a message of another channel
/// (drop lower ones; a higher one may wait until a socket of its channel reads it, since a
/// peer that switched first is heard once the others switch). It need not trust the channel a
/// datagram says it is on: every session's datagrams are authenticated with keys of their own
/// channel, so one replayed into another session is dropped unread. The side channel carries
/// short messages (at most [`MAX_MESSAGE_BYTES`](super::rejoin::MAX_MESSAGE_BYTES)) that may
/// be lost, duplicated or reordered: the protocol resends.
///
/// Implemented by [`EmulatedSocket`] (in-memory, reproducible) and
/// [`UdpTransport`](super::UdpTransport) (UDP).
pub trait MatchTransport {
    /// A peer's address.
    type Addr: Address + WireAddress;
    /// The GGRS socket of one session channel.
    type Socket: NonBlockingSocket<Self::Addr> + 'static;

    /// A GGRS socket of session channel `channel` at this transport's address.
    fn session_socket(&mut self, channel: u32) -> Self::Socket;

    /// Sends side-channel bytes to `to`.
    fn send_raw(&mut self, to: &Self::Addr, bytes: Vec<u8>);

    /// The side-channel bytes that have arrived, with their senders (any sender: a player
    /// coming back may ask from an address that is no slot's yet).
    fn recv_raw(&mut self) -> Vec<(Self::Addr, Vec<u8>)>;

    /// The match's slot addresses changed (a player came back from a new address): GGRS
    /// messages are taken from `addrs` from now on. Nothing to do for a transport that takes
    /// them from anyone.
    fn set_slots(&mut self, addrs: &[Self::Addr]) {
        let _ = addrs;
    }
}

impl MatchTransport for EmulatedSocket {
    type Addr = super::PeerAddr;
    type Socket = EmulatedSocket;

    fn session_socket(&mut self, channel: u32) -> EmulatedSocket {
        self.on_channel(channel)
    }

    fn send_raw(&mut self, to: &super::PeerAddr, bytes: Vec<u8>) {
        EmulatedSocket::send_raw(self, *to, bytes);
    }

    fn recv_raw(&mut self) -> Vec<(super::PeerAddr, Vec<u8>)> {
        EmulatedSocket::recv_raw(self)
    }
}

/// Session events a [`MatchPeer`] keeps (the newest).
const MAX_EVENTS: usize = 4096;

/// One member of a P2P match, built the safe way (as [`Peer`](super::Peer): a guarded,
/// authenticated GGRS session) and able to take a player that left back into its slot, or to
/// come back itself after its program restarted ([`MatchPeer::rejoin`]): the members agree on a
/// frame, the joiner loads their validated state of that frame, and everyone goes on in a new
/// session (see [`rejoin`](super::rejoin) for the protocol and its guarantees).
///
/// Every peer of the match is a `MatchPeer` with the same slot addresses and keys; call
/// [`MatchPeer::tick`] once per tick. The match's events ([`SessionEvent::Left`],
/// [`SessionEvent::Rejoining`], [`SessionEvent::Rejoined`], …) are in [`MatchPeer::events`].
///
/// ```
/// use rollback_abilities::prelude::*;
/// use rollback_abilities::session::{
///     EmulatedNetwork, Identity, MatchKeys, MatchPeer, NetConditions, PeerAddr, SessionConfig,
/// };
///
/// struct G;
/// impl Game for G { type Input = u8; type Component = (); type Global = (); }
/// let content = std::sync::Arc::new(Content::from_ron_str("()")?);
/// let world = || World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
/// let net = EmulatedNetwork::new(NetConditions::PERFECT, 1);
/// let addrs = vec![PeerAddr(0), PeerAddr(1)];
/// // The identities every peer announced in the match's handshake.
/// let ids = [Identity::generate()?, Identity::generate()?];
/// let mut peers = (0..2)
///     .map(|i| {
///         let keys = MatchKeys {
///             local: Identity::from_secrets(ids[i].secrets().0, ids[i].secrets().1),
///             remotes: vec![(addrs[1 - i], ids[1 - i].public())],
///         };
///         let transport = net.socket(addrs[i]);
///         MatchPeer::start(world(), transport, i, addrs.clone(), keys, SessionConfig::default())
///     })
///     .collect::<Result<Vec<_>, _>>()?;
/// for _ in 0..200 {
///     for p in &mut peers {
///         p.tick(|frame, _world| frame as u8, None, |_| {})?;
///     }
///     net.advance_ms(16);
/// }
/// assert!(peers.iter().all(|p| p.confirmed_frame() > Some(100)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct MatchPeer<G: Game, T: MatchTransport> {
    /// The peer's world and rollback machinery.
    pub runner: Runner<G>,
    /// The peer's current GGRS session (a new one after each rejoin), over a guarded socket.
    pub session: P2PSession<GgrsConfig<G, T::Addr>>,
    /// The slot (player handle) this peer controls.
    pub handle: usize,
    /// The validating layer in front of the current session's socket.
    pub guard: Guard<T::Addr>,
    transport: T,
    setup: SessionConfig,
    /// Every slot's address.
    addrs: Vec<T::Addr>,
    input_delay: usize,
    /// Every event the runner and the rejoin protocol reported, in order.
    events: Vec<SessionEvent>,
    /// Events ever pushed to `events` (the log keeps the newest).
    events_pushed: u64,
    /// The session channel (0, then one more per membership change this peer took part in).
    channel: u32,
    /// The member side of the rejoin protocol.
    member: Member<T::Addr>,
    /// This slot's identity and the others' public identities (kept across rejoins).
    keys: MatchKeys<T::Addr>,
    /// Set while this peer is coming back into the match.
    joiner: Option<Joiner<T::Addr>>,
    /// The state a joiner loaded, kept until its new session starts.
    joined_state: Option<Vec<u8>>,
    /// The players out of the match that this peer feeds the default input for (local players
    /// of its session).
    feeds: Vec<usize>,
    /// The last frame this peer gave a local input for.
    last_input: Option<Frame>,
    /// The spectators that joined the running match and follow it from this member.
    spectators: SpectatorHost<T::Addr>,
}

impl<G: Game, T: MatchTransport> core::fmt::Debug for MatchPeer<G, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MatchPeer")
            .field("handle", &self.handle)
            .field("channel", &self.channel)
            .field("runner", &self.runner)
            .finish()
    }
}

/// What a player keeps to come back into its slot after its program stops (a crash, a reloaded
/// browser tab): the slot, where every slot was last reached, every slot's public match
/// identity, and the slot's own identity, secret half included ([`MatchPeer::ticket`]). The
/// restarted program passes it to [`MatchPeer::rejoin_with`] (or over matchbox to
/// `session::matchbox::ConnectingMatch::rejoin`, feature `matchbox`).
///
/// Whoever holds a ticket can claim the slot: keep it where only the player's program reads
/// it (a file readable by the user only; a page's `sessionStorage`, which is per tab and
/// origin). It serialises with serde; its `Debug` output leaves the secret out.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RejoinTicket<A> {
    /// The player's slot.
    pub slot: usize,
    /// Every slot's address when the ticket was taken (the player's own included; a new
    /// program may come back from another one).
    pub addrs: Vec<A>,
    /// Every slot's public match identity, in slot order.
    pub keys: Vec<PublicIdentity>,
    /// The slot's own identity ([`Identity::secrets`]).
    secrets: ([u8; 32], [u8; 32]),
}

impl<A: core::fmt::Debug> core::fmt::Debug for RejoinTicket<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RejoinTicket")
            .field("slot", &self.slot)
            .field("addrs", &self.addrs)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl<A: Clone> RejoinTicket<A> {
    /// Whether the ticket is one a peer could have written: its slot is one of its slots, and
    /// every slot has an address and a key. A ticket read back from storage may not be.
    pub fn check(&self) -> Result<(), SessionError> {
        if self.slot < self.addrs.len() && self.keys.len() == self.addrs.len() {
            return Ok(());
        }
        Err(SessionError::Ggrs(ggrs::GgrsError::InvalidRequest {
            info: format!(
                "a ticket for slot {} with {} slot addresses and {} keys",
                self.slot,
                self.addrs.len(),
                self.keys.len()
            ),
        }))
    }

    /// The slot's own identity, secret half included.
    pub fn identity(&self) -> Identity {
        Identity::from_secrets(self.secrets.0, self.secrets.1)
    }

    /// The keys a peer of the slot starts with: its own identity, and every other slot's
    /// public identity by that slot's address.
    pub fn match_keys(&self) -> MatchKeys<A> {
        let remotes = self
            .addrs
            .iter()
            .zip(&self.keys)
            .enumerate()
            .filter(|(i, _)| *i != self.slot)
            .map(|(_, (a, k))| (a.clone(), *k))
            .collect();
        MatchKeys { local: self.identity(), remotes }
    }
}

/// A fresh key for a [`Member`]'s challenge nonces.
fn nonce_key() -> Result<[u8; 32], SessionError> {
    let mut key = [0u8; 32];
    getrandom::getrandom(&mut key)
        .map_err(|e| SessionError::Identity(super::IdentityError(e.to_string())))?;
    Ok(key)
}

/// Every slot's public identity, in slot order: this peer's own at `slot`, the others' from
/// `keys.remotes` by their address.
fn slot_keys<A: Address>(
    slot: usize,
    addrs: &[A],
    keys: &MatchKeys<A>,
) -> Result<Vec<PublicIdentity>, SessionError> {
    addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if i == slot {
                return Ok(keys.local.public());
            }
            keys.remotes.iter().find(|(r, _)| r == a).map(|(_, id)| *id).ok_or_else(|| {
                SessionError::Ggrs(ggrs::GgrsError::InvalidRequest {
                    info: format!("no identity for slot {i} at {a:?}: every slot must have one"),
                })
            })
        })
        .collect()
}

fn check_slot<A>(slot: usize, addrs: &[A]) -> Result<(), SessionError> {
    if slot < addrs.len() {
        Ok(())
    } else {
        Err(SessionError::Ggrs(ggrs::GgrsError::InvalidRequest {
            info: format!("slot {slot} is not one of the match's {} slots", addrs.len()),
        }))
    }
}

impl<G: Game, T: MatchTransport> MatchPeer<G, T> {
    /// The peer of slot `slot` at the start of a match: `addrs[i]` is slot `i`'s address (this
    /// peer's own at `slot`), `keys` this peer's match identity and every other slot's public
    /// one by address (from the match's [`Handshake`](super::Handshake)), `world` identical on
    /// every peer. Every datagram of the session is authenticated with those keys, and a rejoin
    /// claim on a slot is checked under that slot's identity.
    pub fn start(
        world: World<G>,
        transport: T,
        slot: usize,
        addrs: Vec<T::Addr>,
        keys: MatchKeys<T::Addr>,
        setup: SessionConfig,
    ) -> Result<MatchPeer<G, T>, SessionError> {
        MatchPeer::build(world, transport, slot, addrs, keys, setup, false)
    }

    /// The peer of slot `slot` coming back into a running match, as a restarted program does:
    /// `world` built as at the start of the match, `keys` with the slot's own match identity
    /// (kept from before, [`Identity::secrets`]; it signs the claim on the slot), the slot
    /// addresses as at the start. From its first [`MatchPeer::tick`] on it asks the members to
    /// let it back in; once they agree on a frame F and it has loaded and checked their state
    /// before F, it plays on from F ([`SessionEvent::Rejoined`]). Until then
    /// [`MatchPeer::is_rejoining`] holds and its session is a placeholder that is never
    /// polled.
    pub fn rejoin(
        world: World<G>,
        transport: T,
        slot: usize,
        addrs: Vec<T::Addr>,
        keys: MatchKeys<T::Addr>,
        setup: SessionConfig,
    ) -> Result<MatchPeer<G, T>, SessionError> {
        MatchPeer::build(world, transport, slot, addrs, keys, setup, true)
    }

    fn build(
        world: World<G>,
        mut transport: T,
        slot: usize,
        addrs: Vec<T::Addr>,
        keys: MatchKeys<T::Addr>,
        setup: SessionConfig,
        rejoining: bool,
    ) -> Result<MatchPeer<G, T>, SessionError> {
        check_slot(slot, &addrs)?;
        let publics = slot_keys(slot, &addrs, &keys)?;
        let member =
            Member::new(addrs.clone(), publics.clone(), keys.local.duplicate(), nonce_key()?);
        let spectators = SpectatorHost::new(keys.local.duplicate(), nonce_key()?);
        let joiner = rejoining.then(|| {
            let view = JoinerView {
                slot,
                content_hash: world.content().hash(),
                hooks_hash: twox_hash::XxHash3_64::oneshot(world.hooks_signature().as_bytes()),
                snapshot_len: world.snapshot_bytes() as u64,
            };
            let mut joiner = Joiner::new(view, addrs.clone(), publics, keys.local.duplicate());
            // Coming back from the slot's own address waits out the departure time first.
            joiner.give_up_after(u64::from(setup.departure_ticks) + GIVE_UP_TICKS);
            joiner
        });
        let players = (0..addrs.len()).map(|j| {
            let t =
                if j == slot { PlayerType::Local } else { PlayerType::Remote(addrs[j].clone()) };
            (j, t)
        });
        let mut runner = setup.runner(world);
        // A joiner's session until the members let it in is never polled: one on a channel no
        // member speaks on.
        let channel = if rejoining { u32::MAX } else { 0 };
        let socket = transport.session_socket(channel);
        let (session, guard) =
            setup.start_p2p_keyed_on(&mut runner, socket, players, &keys, channel)?;
        if rejoining {
            // Whatever reached this address before the program (re)started is not for it.
            transport.recv_raw();
        }
        Ok(MatchPeer {
            runner,
            session,
            handle: slot,
            guard,
            transport,
            setup,
            addrs,
            input_delay: setup.input_delay,
            events: Vec::new(),
            events_pushed: 0,
            channel: 0,
            member,
            keys,
            joiner,
            joined_state: None,
            feeds: Vec::new(),
            last_input: None,
            spectators,
        })
    }

    /// Draws this peer's rejoin challenges with `key` instead of the operating system's
    /// randomness (an emulated match's seeded run, [`LocalMatch`](super::LocalMatch)).
    pub(crate) fn seed_challenges(&mut self, key: [u8; 32]) {
        self.member.seed_challenges(key);
        self.spectators.seed(blake3::derive_key("rollback_abilities spectate challenges", &key));
    }

    /// Who this member admits as a spectator that joins the running match (see
    /// [`late_spectator`](super::late_spectator)); nobody until this is called.
    pub fn admit_spectators(&mut self, policy: SpectatorPolicy) {
        self.spectators.set_policy(policy);
    }

    /// What a spectator needs to follow the match from this member: its address and public
    /// match identity.
    pub fn spectate_ticket(&self) -> SpectateTicket<T::Addr> {
        SpectateTicket { host: self.addrs[self.handle].clone(), key: self.keys.local.public() }
    }

    /// The late spectators this member follows.
    pub fn late_spectators(&self) -> usize {
        self.spectators.spectators()
    }

    /// This peer's per-match identity, secret half included: whoever holds it speaks for the
    /// peer.
    pub fn identity(&self) -> &Identity {
        &self.keys.local
    }

    /// This peer's keys (its identity duplicated), for the program that takes its slot back.
    pub(crate) fn keys_copy(&self) -> MatchKeys<T::Addr> {
        MatchKeys { local: self.keys.local.duplicate(), remotes: self.keys.remotes.clone() }
    }

    /// What this player keeps to come back into its slot after its program stops (see
    /// [`RejoinTicket`]): take it again after a rejoin moved a slot, as the addresses change.
    pub fn ticket(&self) -> RejoinTicket<T::Addr> {
        RejoinTicket {
            slot: self.handle,
            addrs: self.addrs.clone(),
            // Every slot has a key: `build` refused slots without one.
            keys: slot_keys(self.handle, &self.addrs, &self.keys).unwrap_or_default(),
            secrets: self.keys.local.secrets(),
        }
    }

    /// [`MatchPeer::rejoin`] with what the player kept ([`MatchPeer::ticket`]): its slot, the
    /// slot addresses and keys, its identity.
    pub fn rejoin_with(
        world: World<G>,
        transport: T,
        ticket: &RejoinTicket<T::Addr>,
        setup: SessionConfig,
    ) -> Result<MatchPeer<G, T>, SessionError> {
        ticket.check()?;
        let keys = ticket.match_keys();
        MatchPeer::rejoin(world, transport, ticket.slot, ticket.addrs.clone(), keys, setup)
    }

    /// Every slot's address now, in slot order (this peer's own at its slot; a slot whose
    /// player came back from a new address has that one).
    pub fn slot_addresses(&self) -> &[T::Addr] {
        &self.addrs
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The session events this peer reported (the newest 2048 to 4096).
    pub fn events(&self) -> &[SessionEvent] {
        &self.events
    }

    /// The events that came since the last call with the same `seen` (start it at 0): a game
    /// loop's way to handle each event once. Events the log no longer keeps (more than its
    /// newest 2,048 came between two calls) are skipped.
    pub fn new_events(&self, seen: &mut u64) -> &[SessionEvent] {
        let new = self.events_pushed.saturating_sub(*seen);
        *seen = self.events_pushed;
        let kept = usize::try_from(new).unwrap_or(usize::MAX).min(self.events.len());
        &self.events[self.events.len() - kept..]
    }

    /// Whether this peer is coming back into the match ([`MatchPeer::rejoin`]) and not in yet.
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
        if self.joiner.is_some() {
            return None;
        }
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

    /// This peer stops listening to `player` ([`Runner::kick`]).
    pub fn kick(&mut self, player: usize) -> Result<(), SessionError> {
        self.runner.kick(&mut self.session, player)
    }

    /// This peer leaves the match for good and tells the others ([`Runner::leave_match`]): they
    /// agree on its last frame at once. Stop ticking it afterwards.
    pub fn leave_match(&mut self) -> Result<(), SessionError> {
        self.runner.leave_match(&mut self.session)
    }

    /// One tick: the rejoin protocol's messages and step, then (unless the peer is coming back
    /// or holds the match for a player coming back) this peer's input and one
    /// [`Runner::advance_p2p`]. `input(frame, world)` gives this peer's input for `frame` (its
    /// next frame plus the input delay) from its own, possibly predicted, world. Returns what
    /// the runner did ([`Batch::skipped`] when the peer did not advance).
    pub fn tick(
        &mut self,
        input: impl FnOnce(Frame, &World<G>) -> G::Input,
        presenter: Option<&mut dyn Presenter>,
        script: impl FnMut(&mut World<G>),
    ) -> Result<Batch, SessionError> {
        let idle = Batch { skipped: true, ..Batch::default() };
        if !self.rejoin_step()? {
            return Ok(idle);
        }
        let world = self.runner.world();
        let frame = world.next_frame() + self.input_delay as Frame;
        let local = match self.member.hold() {
            Hold::Play => input(frame, world),
            Hold::DefaultAfter(last) if frame <= last => input(frame, world),
            Hold::DefaultAfter(_) => G::Input::default(),
            Hold::Pause => {
                // Holding for a rejoin: the session is polled, not advanced, so the inputs this
                // peer sent keep arriving.
                self.guard.begin_tick(self.session.current_frame());
                self.session.poll_remote_clients();
                return Ok(idle);
            }
        };
        let mut locals = vec![(self.handle, local)];
        locals.extend(self.feeds.iter().map(|a| (*a, G::Input::default())));
        let batch = self.runner.advance_p2p(&mut self.session, &locals, presenter, script)?;
        if batch.advanced > 0 {
            self.last_input = Some(self.last_input.map_or(frame, |l| l.max(frame)));
        }
        let events = self.runner.drain_events();
        self.push_events(events);
        Ok(batch)
    }

    /// A tick in which this peer does not advance: the rejoin protocol's messages and step run
    /// and the session is polled (the inputs this peer sent keep arriving), as while it holds
    /// the match for a player coming back. For a member that waits, at a frame of its choosing,
    /// for a player it expects back: once a rejoin is under way
    /// ([`MatchPeer::rejoin_under_way`]) tick it with [`MatchPeer::tick`] again, which advances
    /// as far as the protocol asks. Returns a skipped batch.
    pub fn wait(&mut self) -> Result<Batch, SessionError> {
        let idle = Batch { skipped: true, ..Batch::default() };
        // A joiner's session is a placeholder until the members let it in: never polled.
        if self.rejoin_step()? {
            self.guard.begin_tick(self.session.current_frame());
            self.session.poll_remote_clients();
        }
        Ok(idle)
    }

    fn push_events(&mut self, events: impl IntoIterator<Item = SessionEvent>) {
        let before = self.events.len();
        self.events.extend(events);
        self.events_pushed += (self.events.len() - before) as u64;
        // A bounded log: a misbehaving peer cannot grow it without limit.
        if self.events.len() > MAX_EVENTS {
            self.events.drain(..self.events.len() - MAX_EVENTS / 2);
        }
    }

    fn push_rejoin_events(&mut self, events: Vec<RejoinEvent>) {
        let addrs = &self.addrs;
        let events: Vec<SessionEvent> = events
            .into_iter()
            .map(|e| match e {
                RejoinEvent::Rejoining { slot } => SessionEvent::Rejoining { players: vec![slot] },
                RejoinEvent::Aborted { slot } | RejoinEvent::GaveUp { slot, .. } => {
                    SessionEvent::RejoinAborted { players: vec![slot] }
                }
                RejoinEvent::Fault { from, fault } => SessionEvent::RejoinFault {
                    peer: from
                        .and_then(|s| addrs.get(s))
                        .map_or_else(|| "unknown".to_owned(), |a| format!("{a:?}")),
                    fault,
                },
            })
            .collect();
        self.push_events(events);
    }

    fn flush_outbox(&mut self, outbox: Vec<(T::Addr, Vec<u8>)>) {
        for (to, bytes) in outbox {
            self.transport.send_raw(&to, bytes);
        }
    }

    /// One tick of the rejoin protocol: the side channel's messages, the protocol's step, the
    /// commands it gives. `false`: the peer does not advance this tick.
    fn rejoin_step(&mut self) -> Result<bool, SessionError> {
        let (spectating, inbox): (Vec<_>, Vec<_>) =
            self.transport.recv_raw().into_iter().partition(|(_, b)| is_spectate_message(b));
        if self.joiner.is_some() {
            self.joiner_step(&inbox)?;
            return Ok(false);
        }
        let view = self.member_view();
        for (from, bytes) in &inbox {
            self.member.receive(from, bytes, &view);
        }
        self.member.tick(&view, self.runner.captured());
        let outbox = self.member.drain_outbox();
        self.flush_outbox(outbox);
        let events = self.member.drain_events();
        self.push_rejoin_events(events);
        for c in self.member.drain_commands() {
            match c {
                RejoinCommand::Capture(frame) => {
                    self.runner.capture_at(frame);
                }
                RejoinCommand::Cancel => self.runner.cancel_capture(),
                RejoinCommand::Depart { slot } => self.runner.kick(&mut self.session, slot)?,
                RejoinCommand::Switch { channel, frame, members } => {
                    let Some((_, bytes, _)) = self.runner.captured() else {
                        return Err(SessionError::MissingSnapshot { frame });
                    };
                    let state = bytes.to_vec();
                    self.switch(channel, frame, &members, &state)?;
                }
                RejoinCommand::Load { .. } => {}
            }
        }
        self.spectate_step(&spectating);
        Ok(true)
    }

    /// One tick of the late spectators this member follows: their messages, the frames
    /// confirmed since the last tick, the state they start from.
    fn spectate_step(&mut self, inbox: &[(T::Addr, Vec<u8>)]) {
        let world = self.runner.world();
        let view = HostView {
            content_hash: world.content().hash(),
            hooks_hash: twox_hash::XxHash3_64::oneshot(world.hooks_signature().as_bytes()),
            snapshot_len: world.snapshot_bytes() as u64,
            players: world.players(),
            input_bytes: core::mem::size_of::<G::Input>(),
        };
        let next = world.next_frame();
        let frames = self.runner.take_confirmed_frames();
        self.spectators
            .feed(frames.into_iter().map(|(f, inputs, sum)| (f, encode_frame(&inputs), sum)));
        for (from, bytes) in inbox {
            self.spectators.receive(from, bytes, &view);
        }
        self.spectators.tick(&view, self.runner.spectator_captured());
        if !self.spectators.capturing() {
            self.runner.cancel_spectator_capture();
        } else if !self.runner.spectator_capture_pending() && !self.member.busy() {
            // A frame not simulated yet: its last save is the confirmed state before it.
            self.runner.capture_for_spectators(next + 1);
        }
        self.runner.keep_confirmed_frames(self.spectators.wants_frames());
        let outbox = self.spectators.drain_outbox();
        self.flush_outbox(outbox);
        let events = self.spectators.drain_events();
        self.push_events(events.into_iter().map(SessionEvent::LateSpectator));
    }

    /// What this member knows of itself for the protocol.
    fn member_view(&self) -> MemberView {
        let world = self.runner.world();
        let mut out: Vec<usize> = self.runner.absent().to_vec();
        for h in 0..self.addrs.len() {
            if self.guard.address_of(h).is_some_and(|a| self.guard.is_cut_off(&a))
                && !out.contains(&h)
            {
                out.push(h);
            }
        }
        out.sort_unstable();
        let unsynchronised = (0..self.addrs.len())
            .filter(|&h| {
                h != self.handle
                    && self.guard.address_of(h).is_some_and(|a| {
                        !self.guard.is_cut_off(&a) && !self.guard.is_synchronised(&a)
                    })
            })
            .collect();
        MemberView {
            slot: self.handle,
            channel: self.channel,
            out,
            departing: self.guard.departing(),
            starting: self.session.current_state() != SessionState::Running,
            unsynchronised,
            last_input: self.last_input.unwrap_or(0),
            content_hash: world.content().hash(),
            hooks_hash: twox_hash::XxHash3_64::oneshot(world.hooks_signature().as_bytes()),
            snapshot_len: world.snapshot_bytes() as u64,
        }
    }

    /// The joiner's side of a tick.
    fn joiner_step(&mut self, inbox: &[(T::Addr, Vec<u8>)]) -> Result<(), SessionError> {
        let Some(j) = self.joiner.as_mut() else { return Ok(()) };
        if let Some(answered) = j.gave_up() {
            return Err(SessionError::RejoinGaveUp { answered });
        }
        for (from, bytes) in inbox {
            j.receive(from, bytes);
        }
        j.tick();
        let commands = j.drain_commands();
        let outbox = j.drain_outbox();
        let events = j.drain_events();
        let gave_up = j.gave_up();
        self.flush_outbox(outbox);
        self.push_rejoin_events(events);
        if let Some(answered) = gave_up {
            return Err(SessionError::RejoinGaveUp { answered });
        }
        for c in commands {
            match c {
                RejoinCommand::Load { frame, bytes } => self.load_offered(frame, bytes),
                RejoinCommand::Switch { channel, frame, members } => {
                    // Where the members said every slot is now (a member may have come back
                    // from a new address since the match started): the new session, its keys
                    // and the transport use it, and so does this peer as a member from now on.
                    if let Some(j) = &self.joiner {
                        for slot in 0..self.addrs.len() {
                            if let Some(a) = j.address(slot) {
                                self.member.set_address(slot, a.clone());
                            }
                        }
                        // What the members still resend of this attempt is no fault.
                        if let Some(attempt) = j.attempt() {
                            self.member.joined_by(attempt);
                        }
                    }
                    let state = self.joined_state.take().unwrap_or_default();
                    self.switch(channel, frame, &members, &state)?;
                    self.joiner = None;
                }
                RejoinCommand::Capture(_)
                | RejoinCommand::Cancel
                | RejoinCommand::Depart { .. } => {}
            }
        }
        Ok(())
    }

    /// Loads the state the members offered (through the snapshot validation) and tells the
    /// joiner what came of it.
    fn load_offered(&mut self, frame: Frame, bytes: Vec<u8>) {
        let world = self.runner.world_mut();
        let result = match world.load_bytes(&bytes) {
            Ok(()) if world.next_frame() == frame => Ok(world.checksum()),
            Ok(()) => Err(format!("the state is of frame {}, not {frame}", world.next_frame())),
            Err(e) => Err(e.to_string()),
        };
        if result.is_ok() {
            self.joined_state = Some(bytes);
        }
        let Some(j) = self.joiner.as_mut() else { return };
        j.loaded(result);
        let outbox = j.drain_outbox();
        let events = j.drain_events();
        self.flush_outbox(outbox);
        self.push_rejoin_events(events);
    }

    /// Takes the addresses the rejoin protocol learned (a player that came back from a new
    /// address) as the slots' addresses: the new session, its keys and the transport use them.
    fn follow_moved_slots(&mut self) {
        let others = (0..self.addrs.len()).filter(|s| *s != self.handle);
        let moved: Vec<(usize, T::Addr)> = others
            .filter_map(|s| {
                self.member.address(s).filter(|a| **a != self.addrs[s]).map(|a| (s, a.clone()))
            })
            .collect();
        if moved.is_empty() {
            return;
        }
        // Each slot's identity by its address before the move, then the identities at the
        // slots' new addresses (slots may trade addresses: one slot's old address may be
        // another's new one).
        let ids: Vec<Option<PublicIdentity>> = self
            .addrs
            .iter()
            .map(|a| self.keys.remotes.iter().find(|(r, _)| r == a).map(|(_, id)| *id))
            .collect();
        for (slot, now) in moved {
            self.addrs[slot] = now;
        }
        self.keys.remotes = (0..self.addrs.len())
            .filter(|s| *s != self.handle)
            .filter_map(|s| ids[s].map(|id| (self.addrs[s].clone(), id)))
            .collect();
        self.transport.set_slots(&self.addrs);
    }

    /// Moves this peer into the session that starts at `frame` with `members` in the match.
    fn switch(
        &mut self,
        channel: u32,
        frame: Frame,
        members: &[usize],
        state: &[u8],
    ) -> Result<(), SessionError> {
        let players = self.addrs.len();
        let before: Vec<usize> = if self.joiner.is_some() {
            Vec::new()
        } else {
            (0..players)
                .filter(|h| {
                    !self.runner.absent().contains(h)
                        && !self.guard.address_of(*h).is_some_and(|a| self.guard.is_cut_off(&a))
                })
                .collect()
        };
        let absent: Vec<usize> = (0..players).filter(|s| !members.contains(s)).collect();
        self.follow_moved_slots();
        self.runner
            .rebase(frame, state, absent.clone())
            .map_err(|_| SessionError::MissingSnapshot { frame })?;
        let handle = self.handle;
        // The players still out are local on one member, the lowest in the match, and remote
        // at its address on the others: GGRS sends a peer's local players' inputs together, so
        // every member must see the same players behind each address. Their inputs never reach
        // the game (the runner hands it the default input and `Disconnected` for them).
        let keeper = members.iter().copied().min().unwrap_or(handle);
        let addrs = &self.addrs;
        let kinds = (0..players).map(|j| {
            let t = if j == handle || (absent.contains(&j) && keeper == handle) {
                PlayerType::Local
            } else if absent.contains(&j) {
                PlayerType::Remote(addrs[keeper].clone())
            } else {
                PlayerType::Remote(addrs[j].clone())
            };
            (j, t)
        });
        self.feeds = if keeper == handle { absent.clone() } else { Vec::new() };
        let socket = self.transport.session_socket(channel);
        let (session, guard) =
            self.setup.start_p2p_keyed_on(&mut self.runner, socket, kinds, &self.keys, channel)?;
        self.session = session;
        self.guard = guard;
        self.channel = channel;
        self.last_input = (frame + self.input_delay as Frame).checked_sub(1);
        let back: Vec<usize> = if self.joiner.is_some() {
            vec![handle]
        } else {
            members.iter().copied().filter(|m| !before.contains(m)).collect()
        };
        self.push_events([SessionEvent::Rejoined { players: back, frame }]);
        Ok(())
    }
}
