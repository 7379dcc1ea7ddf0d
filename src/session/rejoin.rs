//! Rejoining a running match: a player that left (quit, crash, timeout, reloaded tab) comes
//! back into its own slot.
//!
//! **Why a fresh GGRS session.** GGRS 0.13 cannot bring a disconnected player back into a
//! running `P2PSession`: a disconnected endpoint stays disconnected, and its input queue is
//! frozen at its last frame. A rejoin is therefore one more *membership change* (see the
//! departure agreement in the guard): the members agree on a frame F, and every member and the
//! joiner continue from the confirmed state before F in a fresh GGRS session with the new
//! player set — the same slots, each member's own slot local, the other members remote, and the
//! players still out local on every member, fed the default input and handed to the game as
//! [`InputStatus::Disconnected`](ggrs::InputStatus) as before (the departure policy does not
//! change for them). GGRS frames restart at 0 in the new session; the
//! [`Runner`](super::Runner) maps them to world frames ([`Runner::frame_base`](super::Runner)).
//! Each session runs on its own *channel* (a number growing with every change), so nothing of
//! the old session reaches the new one.
//!
//! **How F is agreed.** One member coordinates: the lowest slot that is in the match on it.
//!
//! 1. The joiner sends [`RejoinMsg::Join`] — its slot, the content and hooks hashes and its
//!    snapshot size — to every slot's address. A member other than the coordinator answers a
//!    Join for a slot that is out with where the coordinator is now
//!    ([`RejoinMsg::Coordinator`]; the coordinator may have come back from a new address, where
//!    a restarted joiner does not look for it), and the joiner sends its Join there too;
//!    the coordinator refuses (a [`RejoinFault`]) another content or another layout, and a
//!    slot that is still in the match when the Join comes from a slot's address, and otherwise
//!    answers, to the slot's address (and to the
//!    address that asked, if it is no member's), a [`RejoinMsg::Challenge`]: a fresh nonce.
//!    The joiner answers a challenge from a slot's address or from where a member said the
//!    coordinator is: it signs the [`Claim`] (slot, nonce, hashes, size) with the slot's match
//!    identity, the Ed25519 key its owner announced in the match's handshake, and sends it
//!    back to the address the challenge came from ([`RejoinMsg::Claim`]). [`verify_claim`],
//!    the one function that decides who may claim a slot, checks the signature under that
//!    slot's key: another member's key, an old claim replayed or a made-up proof is a
//!    [`RejoinFault::BadClaim`]. A nonce is answered once; it stays the slot's challenge until
//!    a claim uses it or [`ATTEMPT_TICKS`] pass. **A player may come back from a new address**
//!    (a restarted program's new port, another network): a proven claim from an address that
//!    is no member's moves the slot there. The coordinator names the address in its
//!    [`RejoinMsg::Pause`] ([`WireAddress`]), and every member reaches the slot at it from then
//!    on (the new session's remote, its datagram keys, the transport's filter). A claim from
//!    another member's address is refused. A later joiner, which may know only the addresses
//!    the match started at, learns where every member is now from the offer (step 4).
//! 2. The coordinator asks every member to hold ([`RejoinMsg::Pause`]). A member stops
//!    advancing the old session (it still polls it, so the inputs it sent keep arriving) and
//!    answers with its membership (the session channel and the slots out) and L, the last
//!    frame it has given a local input for. A member whose membership differs from the
//!    coordinator's, that is agreeing on a departure, or whose session has not played its first
//!    frame yet (a previous rejoin's new session still starting), answers [`RejoinMsg::Busy`] and the
//!    attempt is called off; the joiner asks again later.
//! 3. With every answer in, F = max L + 1 ([`RejoinMsg::Switch`]). No member has given an
//!    input for F or later yet, so none has confirmed F − 1 and every member can still capture
//!    the state before F. Members advance the old session again with the default input for
//!    every frame after their own L until they have confirmed F − 1; the confirmed state before
//!    F is then the same on every member (it depends only on the confirmed inputs before it),
//!    and each reports its checksum ([`RejoinMsg::Captured`]) to the coordinator and the
//!    joiner, and holds again until the new session starts. The few frames from F on it
//!    simulated while it waited for the confirmation of F − 1 are neither recorded nor
//!    confirmed: the new session replaces them (a cue director cancels their bursts that the new
//!    session does not have when it simulates those frames again).
//! 4. When every checksum agrees, the coordinator sends the state before F to the joiner:
//!    an [`RejoinMsg::Offer`] (frame, size, digest, checksum, the members, where each member
//!    and the joiner are reached now, and the nonce of the claim it answers), signed with the
//!    coordinator's match identity ([`sign_offer`]), and
//!    [`CHUNK_BYTES`]-byte [`RejoinMsg::Chunk`]s, at most [`WINDOW`] unacknowledged, the joiner
//!    acknowledging the prefix it holds and which chunks of the window after it arrived
//!    ([`RejoinMsg::Have`]): a chunk missing although a later one arrived is sent again (every
//!    [`HOLE_RESEND_TICKS`] at most), and with nothing acknowledged for [`RESEND_TICKS`] the
//!    coordinator goes back to the prefix. The joiner refuses an offer of
//!    another size than its own snapshot (it knows the size: same content, same capacities),
//!    of other content or hooks, and one that is not signed with the key the handshake
//!    announced for the coordinator slot (the offer's lowest member) for this joiner's slot
//!    and a nonce it answered and has not taken an offer for yet ([`verify_offer`],
//!    [`RejoinFault::BadOffer`]: another slot's key, an offer for another claim, an old offer
//!    replayed); it checks the digest of the bytes, loads them through the
//!    snapshot validation ([`World::load_bytes`](crate::World::load_bytes)), and requires the
//!    loaded state's checksum to equal the coordinator's and every other member's
//!    [`RejoinMsg::Captured`]. Then [`RejoinMsg::Loaded`].
//! 5. The coordinator sends [`RejoinMsg::Go`] (the new channel, F, the members) to every member
//!    and the joiner; each starts its new session from the state before F. A lost Go is sent
//!    again: the coordinator resends it every [`GO_RESEND_TICKS`] to each member its new session
//!    has not synchronised with, and answers a late [`RejoinMsg::Captured`] or
//!    [`RejoinMsg::Loaded`] with it. (The members that switched wait for one that did not only a
//!    departure time before the first frame; see below.)
//!
//! The members hold for the transfer, so there are no confirmed inputs after F to send: the
//! joiner starts at F together with everyone. The price is a short pause for everyone (the
//! transfer's round trips; measured in `docs/performance.md`); the gain is that F needs no
//! prediction of how long the transfer takes and no member's confirmed frame ever changes.
//!
//! **Back before the members saw it go.** A Join for a slot that still plays, from an address
//! that is no member's (a reloaded page's new peer id, a restarted program's new port), is
//! the *judge's*: the member that coordinates once the slot is out (the lowest other slot in
//! the match; the others answer such a Join with where it is, [`RejoinMsg::Coordinator`]). It
//! challenges the address that asked, and only it (the program still at the slot's address has
//! nothing to prove), and a claim proven with the slot's key there takes the slot out at once,
//! as if the judge had kicked it ([`RejoinCommand::Depart`]): only the slot's owner holds the
//! key, so the program that played the slot is gone, or the owner runs a second one and the
//! newer takes the slot. The other members follow once they no longer hear the old program (the
//! departure rule's look, a second by default, instead of the ten of an unprompted departure),
//! and the joiner's next claim starts the rejoin as above. A claim proven while the judge
//! takes part in another rejoin, agrees on a departure or starts a new session takes nothing
//! out (a slot leaving in the middle of another membership change is what none of them
//! expects): the challenge stays and the joiner's next copy of the claim counts once that is
//! over. A copy of a claim this member
//! already took (a network duplicate, or the joiner's answer to a repeated challenge) changes
//! nothing and is no fault.
//!
//! **Where the members are.** A joiner that restarted knows the addresses the match started at;
//! a member that came back from a new address since is elsewhere. The offer names every
//! member's current address (the coordinator's [`Member::address`]; every member of an attempt
//! took the same moves, from the same Pauses). The joiner takes them only from an offer it
//! accepts: signed by the coordinator (step 4), the coordinator's own entry the address the
//! offer came from (so a coordinator that moved is found where it says it is, and nowhere
//! else), every entry an address ([`WireAddress::from_wire`]), no two members at one address.
//! Before the offer, the joiner finds a coordinator that moved by the members' word
//! ([`RejoinMsg::Coordinator`], heard only from a slot's address the joiner knows): it sends
//! its Join there and answers a challenge from there, and nothing else from there counts.
//! During the attempt it hears and answers each member only at the address the offer named (a
//! member's [`RejoinMsg::Captured`] heard at its old address before the offer does not count),
//! and the addresses become its slots' addresses, for its new session, its datagram keys and
//! its transport, only with the attempt's Go; an attempt called off leaves them as they were.
//! Nothing unsigned from an address that is no member's moves a slot for the joiner. (A
//! member's checksum from an address the joiner does not know yet, before the offer, is
//! dropped without a fault: a member that moved sends it before the offer says where it is,
//! and sends it again.)
//!
//! The joiner trusts the coordinator's addresses as it trusts its state, and checks both the
//! same way: it loads nothing until every member the offer names has sent its checksum of the
//! state from the address the offer names for it. A coordinator that names a wrong address for
//! member M gets no further unless something at that address answers for M; even then, the new
//! session's datagrams are authenticated with M's match identity, so that address cannot speak
//! for M: the joiner and M do not synchronise, and one of them is lost as the new session
//! starts, a departure the survivors agree on as any other (see below). A lying coordinator
//! can delay or deny a rejoin, as it could by not offering, but it cannot put a stranger in a
//! member's place: at worst the joiner and a member do not connect, which the departure
//! agreement settles as it settles any peer lost at a session's start.
//!
//! A member's word on where the coordinator is is a hint, no more. Whoever is at the address
//! it names sees the joiner's Join and can have it answer a challenge: the claim it gets is
//! good only for that challenge's nonce. Relayed to the coordinator from that address, it
//! makes the slot reached there for one attempt, where the new session's authenticated
//! datagrams leave it mute: a denied rejoin, as a lying member could cause anyway. It cannot
//! make the joiner load anything: only an offer signed with the coordinator's key, naming the
//! address it came from for the coordinator and a claim this joiner made, is taken.
//!
//! **A joiner gives up.** A joiner asks for a bounded time ([`Joiner::give_up_after`];
//! a [`MatchPeer`](super::MatchPeer) waits its departure time and [`GIVE_UP_TICKS`] more): a
//! match that ended or whose members are all gone never answers, and members that keep
//! refusing never let it in. Then it stops ([`Joiner::gave_up`], which says whether any member
//! answered; the peer's `tick` returns
//! [`SessionError::RejoinGaveUp`](super::SessionError::RejoinGaveUp)).
//!
//! **What a rejoiner sees.** [`SessionEvent::Rejoining`](super::SessionEvent) on every member
//! when the attempt starts, [`SessionEvent::Rejoined`](super::SessionEvent) on every member and
//! on the joiner when the new session starts (with F). While it was away its players had the
//! default input with the `Disconnected` status, the departure policy; from F on they have its
//! input again. Its world is the others' from F on; its replay and confirmed checksums start at
//! F.
//!
//! **A peer lost as the new session starts** (it crashed between the Go and its first
//! synchronisation) is one more departure, agreed as any other. GGRS 0.13 cannot disconnect a
//! player before a session's first frame, and a session does not start until it has
//! synchronised with every remote: before the first frame, the departure rule waits on the
//! remotes GGRS has not synchronised with, and once the survivors agree that one left, each
//! survivor's guard answers GGRS's synchronisation requests to it on its behalf. The session
//! then plays its first frame and the departure reaches GGRS the ordinary way. The lost peer
//! can rejoin afterwards.
//!
//! **The players still out** during a session a rejoin starts are local players of one member
//! (the lowest slot in the match) and remote players at its address on the others: GGRS sends
//! a peer's local players' inputs together, so every member must see the same players behind
//! each address. The runner hands the game the default input and `Disconnected` for them,
//! whatever the session says.
//!
//! **Nothing a joiner sends can hurt the others.** Every message is decoded with bounds
//! ([`RejoinMsg::decode`], a [`RejoinDecodeError`] naming what is wrong); a member reads at most
//! [`MAX_MESSAGES_PER_TICK`] rejoin messages per sender and tick (the rest is a
//! [`RejoinFault::Flood`]); a claim is verified before anything else happens; the members hold
//! for at most [`ATTEMPT_TICKS`] ticks, and a joiner that stops acknowledging chunks for
//! [`STALL_TICKS`] ticks has its attempt called off ([`RejoinFault::JoinerStalled`]): the
//! others play on.

use super::identity::{Identity, PublicIdentity};
use crate::num::Frame;
use core::fmt;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The prefix of every rejoin message. It names the messages' layout too: it changes whenever a
/// message's layout does, so a program of another layout (a restarted program of another
/// version comes back without a handshake) has its messages refused as
/// [`RejoinDecodeError::BadMagic`] instead of misread. `RBJ3`: [`RejoinMsg::Offer`] names the
/// members' addresses and is signed by the coordinator, and a member points a joiner at the
/// coordinator ([`RejoinMsg::Coordinator`]).
pub const MAGIC: &[u8; 4] = b"RBJ3";

/// Bytes of snapshot per chunk.
pub const CHUNK_BYTES: usize = 1024;

/// Chunks sent and not yet acknowledged, at most.
pub const WINDOW: u32 = 32;

/// The longest rejoin message accepted (a chunk and its header).
pub const MAX_MESSAGE_BYTES: usize = CHUNK_BYTES + 256;

/// The most members (slots) a message may name.
pub const MAX_SLOTS: usize = 256;

/// The longest address a message may carry ([`WireAddress`]).
pub const MAX_ADDRESS_BYTES: usize = 32;

/// An address the rejoin protocol can name in a message: a player that comes back from a new
/// address is announced to the members at it ([`RejoinMsg::Pause`]).
pub trait WireAddress: Clone + PartialEq {
    /// The address's bytes (at most [`MAX_ADDRESS_BYTES`]).
    fn to_wire(&self) -> Vec<u8>;
    /// The address of bytes [`WireAddress::to_wire`] made; `None` for any other bytes.
    fn from_wire(bytes: &[u8]) -> Option<Self>;
}

impl WireAddress for super::PeerAddr {
    fn to_wire(&self) -> Vec<u8> {
        self.0.to_le_bytes().to_vec()
    }

    fn from_wire(bytes: &[u8]) -> Option<Self> {
        Some(super::PeerAddr(u16::from_le_bytes(bytes.try_into().ok()?)))
    }
}

/// An IPv4 address is its 4 bytes and the port (6 bytes), an IPv6 one its 16 bytes and the port
/// (18 bytes), the port little-endian.
impl WireAddress for std::net::SocketAddr {
    fn to_wire(&self) -> Vec<u8> {
        let mut out = match self.ip() {
            std::net::IpAddr::V4(ip) => ip.octets().to_vec(),
            std::net::IpAddr::V6(ip) => ip.octets().to_vec(),
        };
        out.extend(self.port().to_le_bytes());
        out
    }

    fn from_wire(bytes: &[u8]) -> Option<Self> {
        let (ip, port) = bytes.split_at_checked(bytes.len().checked_sub(2)?)?;
        let port = u16::from_le_bytes(port.try_into().ok()?);
        let ip = match ip.len() {
            4 => std::net::IpAddr::from(<[u8; 4]>::try_from(ip).ok()?),
            16 => std::net::IpAddr::from(<[u8; 16]>::try_from(ip).ok()?),
            _ => return None,
        };
        Some(std::net::SocketAddr::new(ip, port))
    }
}

/// The longest claim proof accepted (an Ed25519 signature is 64 bytes).
pub const MAX_PROOF_BYTES: usize = 64;

/// Rejoin messages a member reads per sender and tick; the rest is a [`RejoinFault::Flood`].
pub const MAX_MESSAGES_PER_TICK: u32 = 2 * WINDOW;

/// Ticks between resends of an unanswered message.
pub const RESEND_TICKS: u64 = 10;

/// Ticks between the coordinator's resends of its [`RejoinMsg::Go`] to a member its new session
/// has not synchronised with. More often than [`RESEND_TICKS`]: the members that switched wait
/// for one that did not only a departure time, and a Go lost a few times in a row must not
/// make it a departure.
pub const GO_RESEND_TICKS: u64 = 2;

/// Ticks the members hold for one attempt before it is called off.
pub const ATTEMPT_TICKS: u64 = 600;

/// Ticks without a joiner's acknowledgement before its attempt is called off.
pub const STALL_TICKS: u64 = 120;

/// Ticks a joiner asks to come back before it gives up ([`Joiner::gave_up`]), unless told
/// otherwise ([`Joiner::give_up_after`]): three attempts' worth.
pub const GIVE_UP_TICKS: u64 = 3 * ATTEMPT_TICKS;

/// Ticks between the coordinator's resends of the chunks the joiner's acknowledgements say are
/// missing (about a round trip: a chunk resent sooner would often be one already on its way).
pub const HOLE_RESEND_TICKS: u64 = 3;

/// A rejoin message (see the [module](self) for the protocol).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RejoinMsg {
    /// Joiner → every slot: "slot `slot` is mine, let me back in".
    Join {
        /// The slot claimed.
        slot: u16,
        /// The joiner's content hash.
        content_hash: u64,
        /// The joiner's hooks hash.
        hooks_hash: u64,
        /// The joiner's snapshot size in bytes.
        snapshot_len: u32,
    },
    /// Member other than the coordinator → the address a [`RejoinMsg::Join`] came from: the
    /// coordinator is reached at `at` (it may have come back from a new address since the
    /// match started, where a restarted joiner does not look for it). A hint only: the joiner
    /// sends its Join there too, and trusts nothing that comes back for it (see the
    /// [module](self)).
    Coordinator {
        /// The coordinator's slot.
        slot: u16,
        /// Its address now ([`WireAddress::to_wire`]).
        at: Vec<u8>,
    },
    /// Coordinator → the claimed slot's address: prove the claim over this nonce.
    Challenge {
        /// The slot claimed.
        slot: u16,
        /// The nonce to sign ([`Claim::nonce`]).
        nonce: [u8; 16],
    },
    /// Joiner → coordinator: the signed [`Claim`] on its slot.
    Claim {
        /// The slot claimed.
        slot: u16,
        /// The challenge's nonce.
        nonce: [u8; 16],
        /// The slot key's Ed25519 signature of [`Claim::message`] ([`verify_claim`]).
        proof: Vec<u8>,
    },
    /// Coordinator → members: hold the match for `joiner`.
    Pause {
        /// The attempt.
        attempt: u64,
        /// The joiner's slot.
        joiner: u16,
        /// The address the joiner's claim came from ([`WireAddress::to_wire`]): a player may
        /// come back from another address than the one it left from (a restarted program's
        /// new port, a new network); from the new session on, its slot is there.
        at: Vec<u8>,
    },
    /// Member → coordinator: holding.
    Paused {
        /// The attempt.
        attempt: u64,
        /// The member's session channel.
        channel: u32,
        /// The slots out of the match on the member.
        out: Vec<u16>,
        /// The last frame the member gave a local input for.
        last_input: u32,
    },
    /// Member → coordinator: cannot hold now (another membership, a departure under way).
    Busy {
        /// The attempt.
        attempt: u64,
    },
    /// Coordinator → members: the new session starts at `frame`.
    Switch {
        /// The attempt.
        attempt: u64,
        /// F.
        frame: u32,
    },
    /// Member → coordinator and joiner: the checksum of the confirmed state before `frame`.
    Captured {
        /// The attempt.
        attempt: u64,
        /// F.
        frame: u32,
        /// The state's checksum.
        checksum: u64,
    },
    /// Coordinator → joiner: the state before `frame` follows.
    Offer {
        /// The attempt.
        attempt: u64,
        /// The new session's channel.
        channel: u32,
        /// F.
        frame: u32,
        /// The state's size in bytes.
        len: u32,
        /// xxh3-64 of the bytes.
        digest: u64,
        /// The world checksum of the state.
        checksum: u64,
        /// The members of the new session (the joiner not included).
        members: Vec<u16>,
        /// The content hash.
        content_hash: u64,
        /// The hooks hash.
        hooks_hash: u64,
        /// Where each of `members` is now, in the same order ([`WireAddress::to_wire`]): a
        /// member may have come back from a new address since the match started, and a
        /// restarted joiner knows only the addresses the match started at.
        addrs: Vec<Vec<u8>>,
        /// The address the joiner's claim came from: where the members reach its slot.
        at: Vec<u8>,
        /// The nonce of the claim that started the attempt: the offer answers that claim and
        /// no other.
        nonce: [u8; 16],
        /// The coordinator's Ed25519 signature of [`offer_message`], with its match identity
        /// ([`verify_offer`]).
        signature: Vec<u8>,
    },
    /// Coordinator → joiner: bytes `index · CHUNK_BYTES ..` of the state.
    Chunk {
        /// The attempt.
        attempt: u64,
        /// The chunk's index.
        index: u32,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// Joiner → coordinator: chunks `0..chunks` arrived, and of the next [`WINDOW`] after
    /// chunk `chunks`, those whose bit is set in `held` (bit `i`: chunk `chunks + 1 + i`).
    Have {
        /// The attempt.
        attempt: u64,
        /// The prefix held.
        chunks: u32,
        /// The chunks held after the first missing one (a selective acknowledgement: only
        /// the missing ones are sent again).
        held: u32,
    },
    /// Joiner → coordinator: the state is loaded and checked.
    Loaded {
        /// The attempt.
        attempt: u64,
    },
    /// Coordinator → members and joiner: start the new session.
    Go {
        /// The attempt.
        attempt: u64,
        /// The new session's channel.
        channel: u32,
        /// F.
        frame: u32,
        /// The members of the new session.
        members: Vec<u16>,
    },
    /// Member or joiner → the receiver: the attempt is called off.
    Abort {
        /// The attempt.
        attempt: u64,
    },
}

/// Why bytes are not a rejoin message.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejoinDecodeError {
    /// Longer than [`MAX_MESSAGE_BYTES`].
    TooLong {
        /// The length.
        len: usize,
    },
    /// Not starting with [`MAGIC`].
    BadMagic,
    /// The body does not decode (truncated, unknown kind, a length past the end).
    Malformed {
        /// The decoder's message.
        reason: String,
    },
    /// Bytes after the message.
    Trailing {
        /// How many.
        bytes: usize,
    },
    /// A field out of its bounds.
    OutOfBounds {
        /// The field.
        field: &'static str,
        /// Its value (a length or a number).
        value: u64,
    },
}

impl fmt::Display for RejoinDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejoinDecodeError::TooLong { len } => {
                write!(f, "rejoin message of {len} bytes (at most {MAX_MESSAGE_BYTES})")
            }
            RejoinDecodeError::BadMagic => f.write_str("not a rejoin message (bad magic)"),
            RejoinDecodeError::Malformed { reason } => {
                write!(f, "malformed rejoin message: {reason}")
            }
            RejoinDecodeError::Trailing { bytes } => {
                write!(f, "{bytes} bytes after the rejoin message")
            }
            RejoinDecodeError::OutOfBounds { field, value } => {
                write!(f, "rejoin message field `{field}` out of bounds: {value}")
            }
        }
    }
}

impl std::error::Error for RejoinDecodeError {}

use bincode1::Options as _;

fn codec() -> impl bincode1::Options {
    bincode1::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
        .with_limit(MAX_MESSAGE_BYTES as u64)
}

/// A message of at most [`MAX_MESSAGE_BYTES`] that starts with `magic`, its body decoded with
/// the rejoin's codec (the late spectators' protocol shares it, with a magic of its own).
pub(super) fn decode_prefixed<M: serde::de::DeserializeOwned>(
    bytes: &[u8],
    magic: &[u8; 4],
) -> Result<M, RejoinDecodeError> {
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Err(RejoinDecodeError::TooLong { len: bytes.len() });
    }
    let body = bytes.strip_prefix(magic.as_slice()).ok_or(RejoinDecodeError::BadMagic)?;
    codec().deserialize(body).map_err(|e| match *e {
        bincode1::ErrorKind::Custom(ref s) if s.contains("trailing") => {
            RejoinDecodeError::Trailing { bytes: 0 }
        }
        _ => RejoinDecodeError::Malformed { reason: e.to_string() },
    })
}

/// `Ok` if a message's field `field` (a length or a number) is at most `max`.
pub(super) fn bound(
    field: &'static str,
    value: usize,
    max: usize,
) -> Result<(), RejoinDecodeError> {
    if value > max {
        Err(RejoinDecodeError::OutOfBounds { field, value: value as u64 })
    } else {
        Ok(())
    }
}

/// `msg`'s bytes: `magic` and its encoding with the rejoin's codec.
pub(super) fn encode_prefixed<M: Serialize>(msg: &M, magic: &[u8; 4]) -> Vec<u8> {
    let mut out = magic.to_vec();
    // A message the crate builds is always within the limits.
    out.extend(codec().serialize(msg).unwrap_or_default());
    out
}

impl RejoinMsg {
    /// The message's bytes: [`MAGIC`] and its bincode encoding.
    pub fn encode(&self) -> Vec<u8> {
        encode_prefixed(self, MAGIC)
    }

    /// [`RejoinMsg::encode`], or `None` if the message is longer than [`MAX_MESSAGE_BYTES`]
    /// (an offer naming the addresses of very many members).
    fn encode_within_bounds(&self) -> Option<Vec<u8>> {
        let mut out = MAGIC.to_vec();
        out.extend(codec().serialize(self).ok()?);
        (out.len() <= MAX_MESSAGE_BYTES).then_some(out)
    }

    /// Decodes a message with bounds: the length, the magic, every length inside it.
    pub fn decode(bytes: &[u8]) -> Result<RejoinMsg, RejoinDecodeError> {
        let msg: RejoinMsg = decode_prefixed(bytes, MAGIC)?;
        match &msg {
            RejoinMsg::Join { slot, .. } | RejoinMsg::Challenge { slot, .. } => {
                bound("slot", usize::from(*slot), MAX_SLOTS - 1)?;
            }
            RejoinMsg::Coordinator { slot, at } => {
                bound("slot", usize::from(*slot), MAX_SLOTS - 1)?;
                bound("at", at.len(), MAX_ADDRESS_BYTES)?;
            }
            RejoinMsg::Claim { proof, slot, .. } => {
                bound("proof", proof.len(), MAX_PROOF_BYTES)?;
                bound("slot", usize::from(*slot), MAX_SLOTS - 1)?;
            }
            RejoinMsg::Pause { joiner, at, .. } => {
                bound("joiner", usize::from(*joiner), MAX_SLOTS - 1)?;
                bound("at", at.len(), MAX_ADDRESS_BYTES)?;
            }
            RejoinMsg::Paused { out, .. } => bound("out", out.len(), MAX_SLOTS)?,
            RejoinMsg::Offer { members, addrs, at, signature, .. } => {
                bound("members", members.len(), MAX_SLOTS)?;
                bound("signature", signature.len(), MAX_PROOF_BYTES)?;
                if addrs.len() != members.len() {
                    let value = addrs.len() as u64;
                    return Err(RejoinDecodeError::OutOfBounds { field: "addrs", value });
                }
                for a in addrs {
                    bound("addrs", a.len(), MAX_ADDRESS_BYTES)?;
                }
                bound("at", at.len(), MAX_ADDRESS_BYTES)?;
            }
            RejoinMsg::Go { members, .. } => bound("members", members.len(), MAX_SLOTS)?,
            RejoinMsg::Chunk { bytes, .. } => bound("chunk", bytes.len(), CHUNK_BYTES)?,
            _ => {}
        }
        Ok(msg)
    }

    /// The message's kind, as faults name it.
    pub fn kind(&self) -> &'static str {
        match self {
            RejoinMsg::Join { .. } => "Join",
            RejoinMsg::Coordinator { .. } => "Coordinator",
            RejoinMsg::Challenge { .. } => "Challenge",
            RejoinMsg::Claim { .. } => "Claim",
            RejoinMsg::Pause { .. } => "Pause",
            RejoinMsg::Paused { .. } => "Paused",
            RejoinMsg::Busy { .. } => "Busy",
            RejoinMsg::Switch { .. } => "Switch",
            RejoinMsg::Captured { .. } => "Captured",
            RejoinMsg::Offer { .. } => "Offer",
            RejoinMsg::Chunk { .. } => "Chunk",
            RejoinMsg::Have { .. } => "Have",
            RejoinMsg::Loaded { .. } => "Loaded",
            RejoinMsg::Go { .. } => "Go",
            RejoinMsg::Abort { .. } => "Abort",
        }
    }

    /// The attempt a message belongs to (`None` for a join request, the answers to it and the
    /// claim).
    pub fn attempt(&self) -> Option<u64> {
        match self {
            RejoinMsg::Join { .. }
            | RejoinMsg::Coordinator { .. }
            | RejoinMsg::Challenge { .. }
            | RejoinMsg::Claim { .. } => None,
            RejoinMsg::Pause { attempt, .. }
            | RejoinMsg::Paused { attempt, .. }
            | RejoinMsg::Busy { attempt }
            | RejoinMsg::Switch { attempt, .. }
            | RejoinMsg::Captured { attempt, .. }
            | RejoinMsg::Offer { attempt, .. }
            | RejoinMsg::Chunk { attempt, .. }
            | RejoinMsg::Have { attempt, .. }
            | RejoinMsg::Loaded { attempt }
            | RejoinMsg::Go { attempt, .. }
            | RejoinMsg::Abort { attempt } => Some(*attempt),
        }
    }
}

/// What a joiner claims: its slot, back in the match, with its content, hooks and snapshot
/// size, answering the coordinator's challenge `nonce`. The joiner signs [`Claim::message`]
/// with the slot's match identity ([`Claim::prove`]); [`verify_claim`] checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The slot claimed.
    pub slot: u16,
    /// The coordinator's challenge.
    pub nonce: [u8; 16],
    /// The joiner's content hash.
    pub content_hash: u64,
    /// The joiner's hooks hash.
    pub hooks_hash: u64,
    /// The joiner's snapshot size in bytes.
    pub snapshot_len: u32,
}

/// The prefix of every signed claim: a signature made for anything else (signed inputs, another
/// protocol) never verifies as a claim.
const CLAIM_DOMAIN: &[u8] = b"rollback_abilities rejoin claim v1\0";

impl Claim {
    /// The bytes signed: a fixed domain prefix and every field, little-endian.
    pub fn message(&self) -> Vec<u8> {
        let mut m = CLAIM_DOMAIN.to_vec();
        m.extend(self.slot.to_le_bytes());
        m.extend(self.nonce);
        m.extend(self.content_hash.to_le_bytes());
        m.extend(self.hooks_hash.to_le_bytes());
        m.extend(self.snapshot_len.to_le_bytes());
        m
    }

    /// The proof of this claim: `identity`'s Ed25519 signature of [`Claim::message`]. Only
    /// the slot's owner (who holds the identity it announced for the slot) makes one that
    /// verifies.
    pub fn prove(&self, identity: &Identity) -> Vec<u8> {
        identity.sign(&self.message()).to_vec()
    }
}

/// Whether `proof` proves `claim` for the slot whose match identity is `slot_key` (announced
/// in the match's handshake): the single decision of who may claim a slot — its key, never its
/// address.
pub fn verify_claim(slot_key: &PublicIdentity, claim: &Claim, proof: &[u8]) -> bool {
    let Ok(signature) = <&[u8; 64]>::try_from(proof) else { return false };
    slot_key.verifies(&claim.message(), signature)
}

/// The prefix of every signed offer: a signature made for anything else (a claim, signed
/// inputs) never verifies as an offer.
const OFFER_DOMAIN: &[u8] = b"rollback_abilities rejoin offer v1\0";

/// The bytes a coordinator signs for an offer to the joiner of slot `joiner`: a fixed domain
/// prefix, the slot, and the [`RejoinMsg::Offer`]'s encoding with an empty signature (every
/// other field: the attempt, the claim's nonce, the state's frame, size, digest and checksum,
/// the members and where each is). `None` for any other message.
pub fn offer_message(joiner: u16, offer: &RejoinMsg) -> Option<Vec<u8>> {
    let mut unsigned = offer.clone();
    let RejoinMsg::Offer { signature, .. } = &mut unsigned else { return None };
    signature.clear();
    let mut m = OFFER_DOMAIN.to_vec();
    m.extend(joiner.to_le_bytes());
    m.extend(codec().serialize(&unsigned).ok()?);
    Some(m)
}

/// `offer` signed by `identity` (the coordinator's match identity) for the joiner of slot
/// `joiner` ([`offer_message`]); any other message unchanged.
pub fn sign_offer(offer: RejoinMsg, joiner: u16, identity: &Identity) -> RejoinMsg {
    let Some(message) = offer_message(joiner, &offer) else { return offer };
    let mut signed = offer;
    if let RejoinMsg::Offer { signature, .. } = &mut signed {
        *signature = identity.sign(&message).to_vec();
    }
    signed
}

/// Whether `offer` is signed by the match identity `coordinator_key` for the joiner of slot
/// `joiner`: the one check that makes an offer the coordinator's, wherever it came from.
pub fn verify_offer(coordinator_key: &PublicIdentity, joiner: u16, offer: &RejoinMsg) -> bool {
    let RejoinMsg::Offer { signature, .. } = offer else { return false };
    let Ok(signature) = <&[u8; 64]>::try_from(signature.as_slice()) else { return false };
    offer_message(joiner, offer).is_some_and(|m| coordinator_key.verifies(&m, signature))
}

/// Something a peer sent in a rejoin that was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejoinFault {
    /// Not a rejoin message.
    Decode(RejoinDecodeError),
    /// More than [`MAX_MESSAGES_PER_TICK`] messages in a tick (the rest were not read).
    Flood {
        /// Messages dropped this tick.
        dropped: u32,
    },
    /// A claim whose proof is not the claimed slot's signature of it and of the challenge
    /// outstanding for the slot ([`verify_claim`]).
    BadClaim {
        /// The slot claimed.
        slot: usize,
    },
    /// A claim on a slot that is still in the match (or that does not exist).
    SlotInUse {
        /// The slot claimed.
        slot: usize,
    },
    /// Other content or hooks.
    ContentMismatch,
    /// A snapshot of another size than this world's.
    SnapshotSize {
        /// The size announced.
        got: u64,
        /// This world's snapshot size.
        want: u64,
    },
    /// The snapshot's bytes do not have the digest announced.
    SnapshotDigest,
    /// The snapshot failed validation ([`World::load_bytes`](crate::World::load_bytes)).
    SnapshotInvalid {
        /// Why.
        reason: String,
    },
    /// The loaded state's checksum differs from a member's.
    ChecksumMismatch {
        /// The member's slot.
        member: usize,
        /// Its checksum.
        theirs: u64,
        /// The loaded state's.
        ours: u64,
    },
    /// A message of an attempt this peer is not in, or from a peer that has no say in it.
    Unexpected {
        /// The message kind.
        what: &'static str,
    },
    /// The joiner stopped acknowledging chunks; its attempt was called off.
    JoinerStalled {
        /// The joiner's slot.
        slot: usize,
    },
    /// An offer not signed with the coordinator's match identity for this joiner, or naming a
    /// challenge this joiner did not answer or already took an offer for (an old offer
    /// replayed) ([`verify_offer`]).
    BadOffer {
        /// The slot the offer names as its coordinator (its lowest member).
        coordinator: usize,
    },
    /// The offer naming every member's address is longer than [`MAX_MESSAGE_BYTES`] (more than
    /// 38 members over IPv6); the attempt was called off.
    OfferTooLarge {
        /// The members.
        members: usize,
    },
}

impl fmt::Display for RejoinFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejoinFault::Decode(e) => write!(f, "{e}"),
            RejoinFault::Flood { dropped } => {
                write!(f, "rejoin flood: {dropped} messages dropped this tick")
            }
            RejoinFault::BadClaim { slot } => {
                write!(f, "claim on slot {slot} not signed with the slot's key")
            }
            RejoinFault::SlotInUse { slot } => write!(f, "claim on slot {slot}, which is in use"),
            RejoinFault::ContentMismatch => f.write_str("rejoin with other content or hooks"),
            RejoinFault::SnapshotSize { got, want } => {
                write!(f, "snapshot of {got} bytes offered, this world's has {want}")
            }
            RejoinFault::SnapshotDigest => f.write_str("snapshot bytes do not match their digest"),
            RejoinFault::SnapshotInvalid { reason } => write!(f, "invalid snapshot: {reason}"),
            RejoinFault::ChecksumMismatch { member, theirs, ours } => write!(
                f,
                "loaded state checksum {ours:#x} differs from member {member}'s {theirs:#x}"
            ),
            RejoinFault::Unexpected { what } => write!(f, "unexpected rejoin message {what}"),
            RejoinFault::JoinerStalled { slot } => {
                write!(f, "joiner of slot {slot} stalled mid-transfer")
            }
            RejoinFault::BadOffer { coordinator } => {
                write!(f, "offer not signed by coordinator {coordinator} for this claim")
            }
            RejoinFault::OfferTooLarge { members } => {
                write!(f, "an offer naming {members} members' addresses does not fit a message")
            }
        }
    }
}

/// What a member does with its old session while a rejoin is under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Play on.
    Play,
    /// Do not advance: only poll the session (so the inputs sent keep arriving).
    Pause,
    /// Advance, with the default local input for every frame after this one.
    DefaultAfter(Frame),
}

/// What the peer running the protocol must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RejoinCommand {
    /// Start capturing the confirmed state before this frame
    /// ([`Runner::capture_at`](super::Runner::capture_at)).
    Capture(Frame),
    /// Forget the capture: the attempt was called off.
    Cancel,
    /// (Member) the slot's owner proved a claim on it from a new address while the slot was
    /// still in the match: take the slot out as if this member had kicked it
    /// ([`Runner::kick`](super::Runner::kick)).
    Depart {
        /// The slot.
        slot: usize,
    },
    /// (Joiner) load and check these bytes, then call [`Joiner::loaded`].
    Load {
        /// F.
        frame: Frame,
        /// The state.
        bytes: Vec<u8>,
    },
    /// Start the new session.
    Switch {
        /// Its channel.
        channel: u32,
        /// F: its frame 0.
        frame: Frame,
        /// Its members (the slots in the match).
        members: Vec<usize>,
    },
}

/// What the protocol reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RejoinEvent {
    /// A player is coming back (the members hold the match).
    Rejoining {
        /// Its slot.
        slot: usize,
    },
    /// The attempt was called off; the members play on without the player.
    Aborted {
        /// Its slot.
        slot: usize,
    },
    /// The joiner gave up ([`Joiner::gave_up`]).
    GaveUp {
        /// Its slot.
        slot: usize,
        /// Whether some member answered it.
        answered: bool,
    },
    /// A refused message.
    Fault {
        /// The sender's slot, when it sent from a slot's address.
        from: Option<usize>,
        /// What was refused.
        fault: RejoinFault,
    },
}

/// What a member knows of itself when it runs the protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberView {
    /// Its slot.
    pub slot: usize,
    /// Its session channel.
    pub channel: u32,
    /// The slots out of the match on it, ascending.
    pub out: Vec<usize>,
    /// A departure is being agreed.
    pub departing: bool,
    /// Its session has not played its first frame yet (a rejoin's new session still
    /// synchronising): a member holding it could not give the inputs the others wait for.
    pub starting: bool,
    /// The slots of its session's other members GGRS has not synchronised with yet, ascending
    /// (before the session's first frame; empty once it runs). The coordinator of the rejoin
    /// that started the session sends them its [`RejoinMsg::Go`] again.
    pub unsynchronised: Vec<usize>,
    /// The last frame it gave a local input for.
    pub last_input: Frame,
    /// Its content hash.
    pub content_hash: u64,
    /// Its hooks hash.
    pub hooks_hash: u64,
    /// Its snapshot size.
    pub snapshot_len: u64,
}

fn slots_u16(s: &[usize]) -> Vec<u16> {
    s.iter().map(|&x| x as u16).collect()
}

/// The coordinator's progress.
#[derive(Clone, Debug)]
enum Phase {
    Pausing {
        reports: BTreeMap<usize, Frame>,
    },
    Settling {
        frame: Frame,
        sums: BTreeMap<usize, u64>,
    },
    Transferring {
        frame: Frame,
        /// The encoded [`RejoinMsg::Offer`] of `bytes`, sent again while the joiner holds none.
        offer: Vec<u8>,
        bytes: Vec<u8>,
        /// The joiner's prefix and, after it, the chunks it holds ([`RejoinMsg::Have`]).
        have: u32,
        held: u32,
        /// Chunks `0..sent` were sent at least once.
        sent: u32,
        /// When the missing chunks were last sent again.
        holes_resent: u64,
    },
    Going {
        frame: Frame,
    },
}

#[derive(Clone, Debug)]
struct Coordination {
    attempt: u64,
    /// The nonce of the claim that started it (the offer names it).
    nonce: [u8; 16],
    /// The new session's channel.
    channel: u32,
    joiner: usize,
    members: Vec<usize>,
    phase: Phase,
    started: u64,
    progress: u64,
    resent: u64,
}

/// A follower's progress.
#[derive(Clone, Debug)]
enum Follow {
    Paused { last_input: Frame },
    Settling { frame: Frame, last_input: Frame },
    Captured { frame: Frame, checksum: u64 },
}

#[derive(Clone, Debug)]
struct Following {
    attempt: u64,
    coordinator: usize,
    joiner: usize,
    state: Follow,
    since: u64,
    resent: u64,
}

/// The member side of the protocol for one peer, over any addresses `A` (one per slot).
#[derive(Clone, Debug)]
pub struct Member<A> {
    addrs: Vec<A>,
    /// Slot `i`'s match identity: the key its claims are signed with.
    keys: Vec<PublicIdentity>,
    /// This member's own match identity: it signs the offers it makes as coordinator.
    identity: Identity,
    /// The key this member's challenge nonces are drawn with (a nonce is never issued twice).
    nonce_key: [u8; 32],
    /// Challenges issued, by slot: the nonce and the tick it was issued.
    challenges: BTreeMap<usize, ([u8; 16], u64)>,
    /// The nonce of the last claim proven on each slot: a copy of that claim (the network's
    /// duplicate, or the joiner's answer to a repeat of the challenge) changes nothing and is
    /// no fault.
    proven: BTreeMap<usize, [u8; 16]>,
    /// Nonces issued so far.
    nonces: u64,
    coordination: Option<Coordination>,
    following: Option<Following>,
    /// The attempt counter of this coordinator.
    attempts: u64,
    /// Attempts this member was in that ended (late messages of them are ignored).
    ended: BTreeSet<u64>,
    /// The last Go sent, answered again to a late resend and sent again while the new session
    /// has not synchronised with a member (see [`GO_RESEND_TICKS`]), and the tick it was last
    /// sent.
    last_go: Option<(u64, RejoinMsg)>,
    go_sent: u64,
    tick: u64,
    counts: BTreeMap<usize, u32>,
    outbox: Vec<(A, Vec<u8>)>,
    commands: Vec<RejoinCommand>,
    events: Vec<RejoinEvent>,
}

impl<A: WireAddress> Member<A> {
    /// The member side of a peer in a match whose slot `i` is at `addrs[i]` and signs its
    /// claims with the match identity `keys[i]` announced in the handshake; `identity` is this
    /// member's own (its public half is its slot's key), and signs its offers. `nonce_key`
    /// draws the challenges' nonces: 32 random bytes (the operating system's), fresh for every
    /// member, so that no nonce is issued twice and an old claim never answers a new challenge.
    pub fn new(
        addrs: Vec<A>,
        keys: Vec<PublicIdentity>,
        identity: Identity,
        nonce_key: [u8; 32],
    ) -> Member<A> {
        Member {
            addrs,
            keys,
            identity,
            nonce_key,
            challenges: BTreeMap::new(),
            proven: BTreeMap::new(),
            nonces: 0,
            coordination: None,
            following: None,
            attempts: 0,
            ended: BTreeSet::new(),
            last_go: None,
            go_sent: 0,
            tick: 0,
            counts: BTreeMap::new(),
            outbox: Vec::new(),
            commands: Vec::new(),
            events: Vec::new(),
        }
    }

    fn slot_of(&self, addr: &A) -> Option<usize> {
        self.addrs.iter().position(|a| a == addr)
    }

    fn send(&mut self, slot: usize, msg: &RejoinMsg) {
        if let Some(a) = self.addrs.get(slot) {
            self.outbox.push((a.clone(), msg.encode()));
        }
    }

    fn fault(&mut self, from: Option<usize>, fault: RejoinFault) {
        self.events.push(RejoinEvent::Fault { from, fault });
    }

    /// What to do with the old session now.
    pub fn hold(&self) -> Hold {
        let own = self.coordination.as_ref().map(|c| &c.phase);
        match (&self.following, own) {
            (Some(f), _) => match f.state {
                // Once the state before F is captured, frames from F on belong to the session
                // that follows: the member holds rather than play a timeline it will drop (its
                // inputs up to F − 1 are sent; GGRS resends them while the session is polled).
                Follow::Paused { .. } | Follow::Captured { .. } => Hold::Pause,
                Follow::Settling { last_input, .. } => Hold::DefaultAfter(last_input),
            },
            (None, _) => Hold::Play,
        }
    }

    /// Whether this member has told its peer to switch sessions ([`RejoinCommand::Switch`])
    /// and the command has not been drained yet: until then it reads and does nothing more.
    pub fn switching(&self) -> bool {
        self.commands.iter().any(|c| matches!(c, RejoinCommand::Switch { .. }))
    }

    /// Whether a rejoin is under way on this member.
    pub fn busy(&self) -> bool {
        self.coordination.is_some() || self.following.is_some()
    }

    /// Messages to send: (address, bytes).
    pub fn drain_outbox(&mut self) -> Vec<(A, Vec<u8>)> {
        core::mem::take(&mut self.outbox)
    }

    /// Commands for the peer, oldest first.
    pub fn drain_commands(&mut self) -> Vec<RejoinCommand> {
        core::mem::take(&mut self.commands)
    }

    /// Events, oldest first.
    pub fn drain_events(&mut self) -> Vec<RejoinEvent> {
        core::mem::take(&mut self.events)
    }

    /// Draws the challenges' nonces with `key` from now on (a seeded emulated match).
    pub(crate) fn seed_challenges(&mut self, key: [u8; 32]) {
        self.nonce_key = key;
    }

    /// Reads one message from `from`.
    pub fn receive(&mut self, from: &A, bytes: &[u8], view: &MemberView) {
        // Told to switch sessions: `view` is the old membership's, and acting on it (a Join
        // answered with the old channel) would start an attempt the others never see. The
        // rest waits for the next view; every message of the protocol is resent.
        if self.switching() {
            return;
        }
        let slot = self.slot_of(from);
        let key = slot.unwrap_or(usize::MAX);
        let count = self.counts.entry(key).or_insert(0);
        *count += 1;
        if *count > MAX_MESSAGES_PER_TICK {
            return;
        }
        let msg = match RejoinMsg::decode(bytes) {
            Ok(m) => m,
            Err(e) => return self.fault(slot, RejoinFault::Decode(e)),
        };
        self.handle(slot, from, msg, view);
    }

    /// The address slot `slot` is reached at: the one it started at, or the one its newest
    /// claim came from (a player that came back from a new address).
    pub fn address(&self, slot: usize) -> Option<&A> {
        self.addrs.get(slot)
    }

    /// Slot `slot` is reached at `addr` from now on (a joiner that came back takes the
    /// addresses its members named, [`Joiner::address`]).
    /// This member came back into the match by `attempt` (as its joiner): the members' late
    /// resends of it (chunks, checksums, the Go) are ignored, as those of any attempt that
    /// ended here.
    pub fn joined_by(&mut self, attempt: u64) {
        self.ended.insert(attempt);
    }

    pub(crate) fn set_address(&mut self, slot: usize, addr: A) {
        if let Some(a) = self.addrs.get_mut(slot) {
            *a = addr;
        }
    }

    fn handle(&mut self, from: Option<usize>, addr: &A, msg: RejoinMsg, view: &MemberView) {
        if let Some(a) = msg.attempt()
            && self.ended.contains(&a)
        {
            // A late resend of an attempt that ended here: a member still waiting for its Go
            // (or the joiner) gets it again.
            if matches!(msg, RejoinMsg::Captured { .. } | RejoinMsg::Loaded { .. })
                && let (Some(m), Some((attempt, go))) = (from, self.last_go.clone())
                && attempt == a
            {
                self.send(m, &go);
            }
            return;
        }
        match msg {
            RejoinMsg::Join { slot, content_hash, hooks_hash, snapshot_len } => {
                self.on_join(
                    from,
                    addr,
                    usize::from(slot),
                    view,
                    (content_hash, hooks_hash, u64::from(snapshot_len)),
                );
            }
            RejoinMsg::Claim { slot, nonce, proof } => {
                self.on_claim(from, addr, usize::from(slot), nonce, &proof, view)
            }
            RejoinMsg::Challenge { .. } | RejoinMsg::Coordinator { .. } => {
                self.fault(from, RejoinFault::Unexpected { what: msg.kind() })
            }
            RejoinMsg::Pause { attempt, joiner, at } => {
                self.on_pause(from, attempt, joiner, &at, view)
            }
            RejoinMsg::Paused { attempt, channel, out, last_input } => {
                self.on_paused(from, attempt, channel, &out, last_input, view)
            }
            RejoinMsg::Busy { attempt } => {
                if self.coordination.as_ref().is_some_and(|c| c.attempt == attempt) {
                    self.abort_coordination();
                }
            }
            RejoinMsg::Switch { attempt, frame } => self.on_switch(from, attempt, frame),
            RejoinMsg::Captured { attempt, frame, checksum } => {
                self.on_captured(from, attempt, frame, checksum)
            }
            RejoinMsg::Have { attempt, chunks, held } => self.on_have(from, attempt, chunks, held),
            RejoinMsg::Loaded { attempt } => self.on_loaded(from, attempt),
            // A copy of the Go of a session this member already runs (the joiner's, resent
            // until the session synchronises, or a duplicate): nothing to do.
            RejoinMsg::Go { channel, .. } if channel <= view.channel => {}
            RejoinMsg::Go { attempt, channel, frame, members } => {
                self.on_go(from, attempt, channel, frame, &members)
            }
            RejoinMsg::Abort { attempt } => self.on_abort(from, attempt),
            RejoinMsg::Offer { .. } => self.fault(from, RejoinFault::Unexpected { what: "Offer" }),
            RejoinMsg::Chunk { .. } => self.fault(from, RejoinFault::Unexpected { what: "Chunk" }),
        }
    }

    /// The coordinator of a membership: its lowest slot in the match.
    fn coordinator(&self, view: &MemberView) -> Option<usize> {
        (0..self.addrs.len()).find(|s| !view.out.contains(s))
    }

    fn members(&self, view: &MemberView) -> Vec<usize> {
        (0..self.addrs.len()).filter(|s| !view.out.contains(s)).collect()
    }

    fn on_join(
        &mut self,
        from: Option<usize>,
        addr: &A,
        slot: usize,
        view: &MemberView,
        (content, hooks, len): (u64, u64, u64),
    ) {
        let Some(coordinator) = self.coordinator(view) else { return };
        if slot < self.addrs.len() && !view.out.contains(&slot) && from.is_none() {
            // The slot's owner back from a new address before the members saw it go (a
            // reloaded page, a restarted program on a new port): its claim is taken by the
            // member that coordinates once the slot is out.
            match self.judge(view, slot) {
                Some(judge) if judge == view.slot => {}
                Some(judge) => return self.redirect(addr, judge),
                None => return,
            }
        } else if coordinator != view.slot {
            // Answered for a slot that is out, to the slot's address or to one that is no
            // member's; a Join sent from another member's address gets nothing (that member
            // knows where the coordinator is).
            if slot < self.addrs.len() && view.out.contains(&slot) && from.is_none_or(|f| f == slot)
            {
                self.redirect(addr, coordinator);
            }
            return;
        } else if slot >= self.addrs.len() || !view.out.contains(&slot) {
            return self.fault(from, RejoinFault::SlotInUse { slot });
        }
        if content != view.content_hash || hooks != view.hooks_hash {
            return self.fault(from, RejoinFault::ContentMismatch);
        }
        if len != view.snapshot_len {
            return self
                .fault(from, RejoinFault::SnapshotSize { got: len, want: view.snapshot_len });
        }
        if !view.out.contains(&slot) {
            // Its challenge goes to the address that asked only: the slot's own address is
            // still the program in the match, which has nothing to prove.
            let nonce = self.challenge_for(slot);
            let challenge = RejoinMsg::Challenge { slot: slot as u16, nonce };
            self.outbox.push((addr.clone(), challenge.encode()));
            return;
        }
        // The challenge goes to the slot's address, whoever asked, and to the address that
        // asked if it is no member's (a player coming back from a new address). A Join sent in
        // a member's name makes this member write to no one but the slot; one sent in a
        // stranger's gets one challenge no longer than it to that stranger, at most
        // MAX_MESSAGES_PER_TICK a tick for all strangers together.
        let nonce = self.challenge_for(slot);
        let challenge = RejoinMsg::Challenge { slot: slot as u16, nonce };
        self.send(slot, &challenge);
        if from.is_none() && self.addrs.get(slot) != Some(addr) {
            self.outbox.push((addr.clone(), challenge.encode()));
        }
    }

    /// The challenge outstanding for `slot`: the one issued within [`ATTEMPT_TICKS`], or a
    /// fresh nonce.
    fn challenge_for(&mut self, slot: usize) -> [u8; 16] {
        let tick = self.tick;
        match self.challenges.get(&slot) {
            Some((nonce, issued)) if tick.saturating_sub(*issued) <= ATTEMPT_TICKS => *nonce,
            _ => {
                self.nonces += 1;
                let mut input = self.nonces.to_le_bytes().to_vec();
                input.extend((slot as u64).to_le_bytes());
                let hash = blake3::keyed_hash(&self.nonce_key, &input);
                let mut nonce = [0u8; 16];
                nonce.copy_from_slice(&hash.as_bytes()[..16]);
                self.challenges.insert(slot, (nonce, tick));
                nonce
            }
        }
    }

    /// The member that judges a claim on `slot` while the slot is still in the match: the one
    /// that coordinates once the slot is out (the lowest other slot in the match).
    fn judge(&self, view: &MemberView, slot: usize) -> Option<usize> {
        (0..self.addrs.len()).find(|s| *s != slot && !view.out.contains(s))
    }

    /// A Join that is the coordinator's (or the judge's) to answer: the asker learns where it
    /// is now (a restarted joiner knows only where the match started). One message no longer
    /// than a Join to an IPv4 address (a few bytes more to an IPv6 one), at most
    /// [`MAX_MESSAGES_PER_TICK`] a tick for all strangers together.
    fn redirect(&mut self, addr: &A, to: usize) {
        let Some(at) = self.addrs.get(to).map(WireAddress::to_wire) else { return };
        let msg = RejoinMsg::Coordinator { slot: to as u16, at };
        self.outbox.push((addr.clone(), msg.encode()));
    }

    /// A signed claim answering this member's challenge: checked under the slot's key; then
    /// the attempt starts.
    fn on_claim(
        &mut self,
        from: Option<usize>,
        addr: &A,
        slot: usize,
        nonce: [u8; 16],
        proof: &[u8],
        view: &MemberView,
    ) {
        let returning = slot < self.addrs.len() && !view.out.contains(&slot) && from.is_none();
        if returning {
            if self.judge(view, slot) != Some(view.slot) {
                return;
            }
        } else if self.coordinator(view) != Some(view.slot) {
            return;
        } else if slot >= self.addrs.len() || !view.out.contains(&slot) {
            return self.fault(from, RejoinFault::SlotInUse { slot });
        }
        // The claim on this member's terms: its challenge, its content, its snapshot size.
        let terms = |nonce| Claim {
            slot: slot as u16,
            nonce,
            content_hash: view.content_hash,
            hooks_hash: view.hooks_hash,
            snapshot_len: view.snapshot_len as u32,
        };
        let proves =
            |nonce| self.keys.get(slot).is_some_and(|k| verify_claim(k, &terms(nonce), proof));
        if self.proven.get(&slot) == Some(&nonce) && proves(nonce) {
            return;
        }
        let Some(&(issued, _)) = self.challenges.get(&slot) else {
            return self.fault(from, RejoinFault::BadClaim { slot });
        };
        if nonce != issued || !proves(issued) {
            return self.fault(from, RejoinFault::BadClaim { slot });
        }
        // A claim comes from the slot's address or from one that is no member's (the player
        // came back from a new address; its key, not its address, proves the claim). One from
        // another member's address is refused.
        if from.is_some_and(|f| f != slot) {
            return self
                .fault(from, RejoinFault::Unexpected { what: "Claim from another address" });
        }
        if self.busy() || view.departing || view.starting {
            // Claimed again later (the challenge stays); no fault. A slot taken out now would
            // leave during another membership change, which none of them expects.
            return;
        }
        if returning {
            // Only the slot's owner holds its key: the program that played the slot is gone
            // (or the owner runs a second one, and the newer takes the slot). The slot leaves
            // the match now, as if this member had kicked it, and the others follow once they
            // no longer hear it (see `GuardConfig::look_ticks`); its owner's next claim starts
            // the rejoin.
            self.challenges.remove(&slot);
            self.proven.insert(slot, nonce);
            if !self.commands.contains(&RejoinCommand::Depart { slot }) {
                self.commands.push(RejoinCommand::Depart { slot });
            }
            return;
        }
        // A nonce proves one claim. From here on the slot is reached where the claim came from.
        self.challenges.remove(&slot);
        self.proven.insert(slot, nonce);
        self.addrs[slot] = addr.clone();
        let at = addr.to_wire();
        self.attempts += 1;
        let attempt = (self.attempts << 16) | view.slot as u64;
        let members = self.members(view);
        self.coordination = Some(Coordination {
            attempt,
            nonce,
            channel: view.channel.saturating_add(1),
            joiner: slot,
            members: members.clone(),
            phase: Phase::Pausing { reports: BTreeMap::new() },
            started: self.tick,
            progress: self.tick,
            resent: self.tick,
        });
        self.events.push(RejoinEvent::Rejoining { slot });
        for m in members {
            if m == view.slot {
                self.on_pause(Some(m), attempt, slot as u16, &at, view);
            } else {
                self.send(m, &RejoinMsg::Pause { attempt, joiner: slot as u16, at: at.clone() });
            }
        }
    }

    fn on_pause(
        &mut self,
        from: Option<usize>,
        attempt: u64,
        joiner: u16,
        at: &[u8],
        view: &MemberView,
    ) {
        let Some(coordinator) = from else {
            return self.fault(from, RejoinFault::Unexpected { what: "Pause" });
        };
        if self.coordinator(view) != Some(coordinator) {
            return self.fault(from, RejoinFault::Unexpected { what: "Pause" });
        }
        if let Some(f) = &self.following {
            if f.attempt == attempt {
                // A resend: answer again.
                if let Follow::Paused { last_input } = f.state {
                    self.reply_paused(coordinator, attempt, last_input, view);
                }
            }
            return;
        }
        let own = self.coordination.as_ref().is_some_and(|c| c.attempt == attempt);
        if view.departing || view.starting || (self.coordination.is_some() && !own) {
            return self.reply(coordinator, RejoinMsg::Busy { attempt }, view);
        }
        let joiner = usize::from(joiner);
        let Some(at) = A::from_wire(at) else {
            return self.fault(from, RejoinFault::Unexpected { what: "Pause at no address" });
        };
        // Only a slot that is out may move; a Pause for one that plays here is another
        // membership than the coordinator's.
        if joiner >= self.addrs.len() || !view.out.contains(&joiner) {
            return self.reply(coordinator, RejoinMsg::Busy { attempt }, view);
        }
        self.addrs[joiner] = at;
        if coordinator != view.slot {
            self.events.push(RejoinEvent::Rejoining { slot: joiner });
        }
        self.following = Some(Following {
            attempt,
            coordinator,
            joiner,
            state: Follow::Paused { last_input: view.last_input },
            since: self.tick,
            resent: self.tick,
        });
        self.reply_paused(coordinator, attempt, view.last_input, view);
    }

    fn reply_paused(&mut self, to: usize, attempt: u64, last_input: Frame, view: &MemberView) {
        let msg = RejoinMsg::Paused {
            attempt,
            channel: view.channel,
            out: slots_u16(&view.out),
            last_input,
        };
        self.reply(to, msg, view);
    }

    /// Sends to a slot, or handles at once when it is this member.
    fn reply(&mut self, to: usize, msg: RejoinMsg, view: &MemberView) {
        if to == view.slot
            && let Some(me) = self.addrs.get(to).cloned()
        {
            self.handle(Some(to), &me, msg, view);
        } else {
            self.send(to, &msg);
        }
    }

    fn on_paused(
        &mut self,
        from: Option<usize>,
        attempt: u64,
        channel: u32,
        out: &[u16],
        last_input: u32,
        view: &MemberView,
    ) {
        let Some(c) = self.coordination.as_mut().filter(|c| c.attempt == attempt) else {
            return self.fault(from, RejoinFault::Unexpected { what: "Paused" });
        };
        let Some(m) = from.filter(|m| c.members.contains(m)) else {
            return self.fault(from, RejoinFault::Unexpected { what: "Paused" });
        };
        let same = channel == view.channel
            && out.iter().map(|s| usize::from(*s)).eq(view.out.iter().copied());
        if !same {
            return self.abort_coordination();
        }
        let Phase::Pausing { reports } = &mut c.phase else { return };
        reports.insert(m, last_input);
        if reports.len() == c.members.len() {
            let frame = reports.values().copied().max().unwrap_or(0).saturating_add(1);
            c.phase = Phase::Settling { frame, sums: BTreeMap::new() };
            c.progress = self.tick;
            let members = c.members.clone();
            for m in members {
                self.reply(m, RejoinMsg::Switch { attempt, frame }, view);
            }
        }
    }

    fn on_switch(&mut self, from: Option<usize>, attempt: u64, frame: Frame) {
        let Some(f) = self.following.as_mut().filter(|f| f.attempt == attempt) else {
            return self.fault(from, RejoinFault::Unexpected { what: "Switch" });
        };
        if from != Some(f.coordinator) {
            return self.fault(from, RejoinFault::Unexpected { what: "Switch" });
        }
        if let Follow::Paused { last_input } = f.state {
            f.state = Follow::Settling { frame, last_input };
            f.since = self.tick;
            self.commands.push(RejoinCommand::Capture(frame));
        }
    }

    fn on_captured(&mut self, from: Option<usize>, attempt: u64, frame: Frame, checksum: u64) {
        let Some(c) = self.coordination.as_mut().filter(|c| c.attempt == attempt) else {
            return self.fault(from, RejoinFault::Unexpected { what: "Captured" });
        };
        let Some(m) = from.filter(|m| c.members.contains(m)) else {
            return self.fault(from, RejoinFault::Unexpected { what: "Captured" });
        };
        let Phase::Settling { frame: f, sums } = &mut c.phase else { return };
        if *f != frame {
            return self.fault(from, RejoinFault::Unexpected { what: "Captured" });
        }
        sums.insert(m, checksum);
        c.progress = self.tick;
    }

    fn on_have(&mut self, from: Option<usize>, attempt: u64, chunks: u32, bits: u32) {
        let Some(c) = self.coordination.as_mut().filter(|c| c.attempt == attempt) else {
            return self.fault(from, RejoinFault::Unexpected { what: "Have" });
        };
        if from != Some(c.joiner) {
            return self.fault(from, RejoinFault::Unexpected { what: "Have" });
        }
        if let Phase::Transferring { have, held, bytes, .. } = &mut c.phase {
            let total = bytes.len().div_ceil(CHUNK_BYTES) as u32;
            if chunks > *have && chunks <= total {
                *have = chunks;
                *held = bits;
                c.progress = self.tick;
            } else if chunks == *have {
                // The same prefix: what it holds after it only grows (a late acknowledgement
                // says less, never something else).
                *held |= bits;
            }
        }
    }

    fn on_loaded(&mut self, from: Option<usize>, attempt: u64) {
        let Some(c) = self.coordination.as_mut().filter(|c| c.attempt == attempt) else {
            return self.fault(from, RejoinFault::Unexpected { what: "Loaded" });
        };
        if from != Some(c.joiner) {
            return self.fault(from, RejoinFault::Unexpected { what: "Loaded" });
        }
        // The joiner checked every byte against the digest before it loaded them.
        let Phase::Transferring { frame, .. } = &c.phase else { return };
        let frame = *frame;
        c.phase = Phase::Going { frame };
        self.go();
    }

    /// Sends Go to every member and the joiner (itself included, at once).
    fn go(&mut self) {
        let Some(c) = self.coordination.take() else { return };
        let Phase::Going { frame } = c.phase else { return };
        let mut members = c.members.clone();
        members.push(c.joiner);
        members.sort_unstable();
        let own = self.following.as_ref().map(|f| f.coordinator);
        let channel = c.channel;
        let go = RejoinMsg::Go { attempt: c.attempt, channel, frame, members: slots_u16(&members) };
        for m in &members {
            if Some(*m) != own {
                self.send(*m, &go);
            }
        }
        self.last_go = Some((c.attempt, go.clone()));
        self.go_sent = self.tick;
        if let Some(me) = own {
            self.on_go(Some(me), c.attempt, channel, frame, &slots_u16(&members));
        }
    }

    fn on_go(
        &mut self,
        from: Option<usize>,
        attempt: u64,
        channel: u32,
        frame: Frame,
        members: &[u16],
    ) {
        let Some(f) = self.following.as_ref().filter(|f| f.attempt == attempt) else {
            return self.fault(from, RejoinFault::Unexpected { what: "Go" });
        };
        if from != Some(f.coordinator) {
            return self.fault(from, RejoinFault::Unexpected { what: "Go" });
        }
        let Follow::Captured { frame: captured, .. } = f.state else {
            return self.fault(from, RejoinFault::Unexpected { what: "Go" });
        };
        if captured != frame {
            return self.fault(from, RejoinFault::Unexpected { what: "Go" });
        }
        self.following = None;
        self.ended.insert(attempt);
        self.commands.push(RejoinCommand::Switch {
            channel,
            frame,
            members: members.iter().map(|m| usize::from(*m)).collect(),
        });
    }

    fn on_abort(&mut self, from: Option<usize>, attempt: u64) {
        if self
            .following
            .as_ref()
            .is_some_and(|f| f.attempt == attempt && Some(f.coordinator) == from)
        {
            self.end_following();
        } else if self
            .coordination
            .as_ref()
            .is_some_and(|c| c.attempt == attempt && Some(c.joiner) == from)
        {
            self.abort_coordination();
        }
    }

    fn end_following(&mut self) {
        if let Some(f) = self.following.take() {
            self.ended.insert(f.attempt);
            if !matches!(f.state, Follow::Paused { .. }) {
                self.commands.push(RejoinCommand::Cancel);
            }
            self.events.push(RejoinEvent::Aborted { slot: f.joiner });
        }
    }

    /// Calls off this member's coordination: every member and the joiner are told.
    fn abort_coordination(&mut self) {
        let Some(c) = self.coordination.take() else { return };
        self.ended.insert(c.attempt);
        let abort = RejoinMsg::Abort { attempt: c.attempt };
        let own = self.following.as_ref().map(|f| f.coordinator);
        for m in c.members.iter().chain([&c.joiner]) {
            if Some(*m) != own {
                self.send(*m, &abort);
            }
        }
        if self.following.as_ref().is_some_and(|f| f.attempt == c.attempt) {
            self.end_following();
        } else {
            self.events.push(RejoinEvent::Aborted { slot: c.joiner });
        }
    }
}

impl<A: WireAddress> Member<A> {
    /// Once per tick, after the messages: resends, timeouts, the next step. `captured` is the
    /// runner's [`Runner::captured`](super::Runner::captured).
    pub fn tick(&mut self, view: &MemberView, captured: Option<(Frame, &[u8], u64)>) {
        if self.switching() {
            return;
        }
        self.tick += 1;
        let flooded: Vec<(usize, u32)> = self
            .counts
            .iter()
            .filter(|(_, n)| **n > MAX_MESSAGES_PER_TICK)
            .map(|(s, n)| (*s, n - MAX_MESSAGES_PER_TICK))
            .collect();
        self.counts.clear();
        for (s, dropped) in flooded {
            let from = (s < self.addrs.len()).then_some(s);
            self.fault(from, RejoinFault::Flood { dropped });
        }
        self.tick_following(view, captured);
        self.tick_coordination(view, captured);
        self.resend_go(view);
    }

    /// While the session this member's Go started has not synchronised with a member, that
    /// member may not have the Go (it was lost): it gets it again every [`GO_RESEND_TICKS`].
    fn resend_go(&mut self, view: &MemberView) {
        let Some((_, go)) = &self.last_go else { return };
        let RejoinMsg::Go { channel, members, .. } = go else { return };
        if *channel != view.channel || !view.starting || self.tick < self.go_sent + GO_RESEND_TICKS
        {
            return;
        }
        let to: Vec<usize> = members
            .iter()
            .map(|m| usize::from(*m))
            .filter(|m| *m != view.slot && view.unsynchronised.contains(m))
            .collect();
        if to.is_empty() {
            return;
        }
        self.go_sent = self.tick;
        let go = go.clone();
        for m in to {
            self.send(m, &go);
        }
    }

    fn tick_following(&mut self, view: &MemberView, captured: Option<(Frame, &[u8], u64)>) {
        let tick = self.tick;
        let Some(f) = self.following.as_mut() else { return };
        let (attempt, coordinator, joiner) = (f.attempt, f.coordinator, f.joiner);
        match f.state {
            Follow::Paused { .. } => {
                // The coordinator resends its Pause until answered; a coordinator gone quiet
                // lets the members play on.
                if tick.saturating_sub(f.since) > ATTEMPT_TICKS {
                    self.end_following();
                }
            }
            Follow::Settling { frame, .. } => {
                if let Some((cf, _, checksum)) = captured
                    && cf == frame
                {
                    f.state = Follow::Captured { frame, checksum };
                    f.since = tick;
                    f.resent = tick;
                    let msg = RejoinMsg::Captured { attempt, frame, checksum };
                    if joiner != view.slot {
                        self.send(joiner, &msg);
                    }
                    self.reply(coordinator, msg, view);
                } else if tick.saturating_sub(f.since) > ATTEMPT_TICKS {
                    self.end_following();
                }
            }
            Follow::Captured { frame, checksum } => {
                if tick.saturating_sub(f.since) > 2 * ATTEMPT_TICKS {
                    self.end_following();
                } else if coordinator != view.slot && tick >= f.resent + RESEND_TICKS {
                    f.resent = tick;
                    let msg = RejoinMsg::Captured { attempt, frame, checksum };
                    self.send(joiner, &msg);
                    self.send(coordinator, &msg);
                }
            }
        }
    }

    fn tick_coordination(&mut self, view: &MemberView, captured: Option<(Frame, &[u8], u64)>) {
        let tick = self.tick;
        let Some(c) = self.coordination.as_mut() else { return };
        if tick.saturating_sub(c.started) > ATTEMPT_TICKS {
            return self.abort_coordination();
        }
        let resend = tick >= c.resent + RESEND_TICKS;
        let attempt = c.attempt;
        let joiner = c.joiner;
        match &mut c.phase {
            Phase::Pausing { reports } => {
                if resend {
                    c.resent = tick;
                    let missing: Vec<usize> =
                        c.members.iter().copied().filter(|m| !reports.contains_key(m)).collect();
                    let at = self.addrs.get(joiner).map(WireAddress::to_wire).unwrap_or_default();
                    for m in missing {
                        let at = at.clone();
                        self.send(m, &RejoinMsg::Pause { attempt, joiner: joiner as u16, at });
                    }
                }
            }
            Phase::Settling { frame, sums } => {
                let frame = *frame;
                if sums.len() == c.members.len() {
                    let mut values = sums.values();
                    let first = values.next().copied().unwrap_or(0);
                    let agree = values.all(|v| *v == first);
                    let own = captured.filter(|(f, _, sum)| *f == frame && *sum == first);
                    match own {
                        Some((_, bytes, _)) if agree => {
                            let bytes = bytes.to_vec();
                            // Where every member is now, as this member knows it: the joiner
                            // may know only where they started.
                            let wire = |s: usize| {
                                self.addrs.get(s).map(WireAddress::to_wire).unwrap_or_default()
                            };
                            let offer = RejoinMsg::Offer {
                                attempt,
                                channel: c.channel,
                                frame,
                                len: bytes.len() as u32,
                                digest: twox_hash::XxHash3_64::oneshot(&bytes),
                                checksum: first,
                                members: slots_u16(&c.members),
                                content_hash: view.content_hash,
                                hooks_hash: view.hooks_hash,
                                addrs: c.members.iter().map(|m| wire(*m)).collect(),
                                at: wire(joiner),
                                nonce: c.nonce,
                                signature: Vec::new(),
                            };
                            let offer = sign_offer(offer, joiner as u16, &self.identity);
                            let Some(offer) = offer.encode_within_bounds() else {
                                let members = c.members.len();
                                self.fault(None, RejoinFault::OfferTooLarge { members });
                                return self.abort_coordination();
                            };
                            c.phase = Phase::Transferring {
                                frame,
                                offer: offer.clone(),
                                bytes,
                                have: 0,
                                held: 0,
                                sent: 0,
                                holes_resent: tick,
                            };
                            c.progress = tick;
                            c.resent = tick;
                            if let Some(a) = self.addrs.get(joiner) {
                                self.outbox.push((a.clone(), offer));
                            }
                        }
                        // Members that confirmed different states are not in one match:
                        // nothing to hand the joiner.
                        _ => self.abort_coordination(),
                    }
                } else if resend {
                    c.resent = tick;
                    let missing: Vec<usize> =
                        c.members.iter().copied().filter(|m| !sums.contains_key(m)).collect();
                    for m in missing {
                        if m != view.slot {
                            self.send(m, &RejoinMsg::Switch { attempt, frame });
                        }
                    }
                }
            }
            Phase::Transferring { offer, bytes, have, held, sent, holes_resent, .. } => {
                if tick.saturating_sub(c.progress) > STALL_TICKS {
                    self.fault(Some(joiner), RejoinFault::JoinerStalled { slot: joiner });
                    return self.abort_coordination();
                }
                let total = bytes.len().div_ceil(CHUNK_BYTES) as u32;
                if resend && tick.saturating_sub(c.progress) >= RESEND_TICKS {
                    // Nothing acknowledged for a while: go back to what the joiner holds.
                    c.resent = tick;
                    *sent = *have;
                    if *have == 0
                        && let Some(a) = self.addrs.get(joiner)
                    {
                        self.outbox.push((a.clone(), offer.clone()));
                    }
                }
                let end = have.saturating_add(WINDOW).min(total);
                let mut out = Vec::new();
                // The chunks the joiner's acknowledgements say are lost: missing although a
                // later one arrived (one merely on its way is not sent twice).
                let beyond = (*held != 0).then(|| *have + 32 - held.leading_zeros());
                if let Some(beyond) = beyond
                    && tick >= *holes_resent + HOLE_RESEND_TICKS
                {
                    *holes_resent = tick;
                    for i in (*have..beyond.min(*sent)).filter(|i| missing(*have, *held, *i)) {
                        out.push(RejoinMsg::Chunk { attempt, index: i, bytes: chunk(bytes, i) });
                    }
                }
                while *sent < end {
                    out.push(RejoinMsg::Chunk {
                        attempt,
                        index: *sent,
                        bytes: chunk(bytes, *sent),
                    });
                    *sent += 1;
                }
                if *sent < *have {
                    *sent = *have;
                }
                for m in out {
                    self.send(joiner, &m);
                }
            }
            Phase::Going { .. } => {}
        }
    }
}

/// The bits of [`RejoinMsg::Have`]'s `held`: bit `i` is set if chunk `have + 1 + i` arrived.
pub(super) fn held_after(chunks: &[Option<Vec<u8>>], have: u32) -> u32 {
    let from = have as usize + 1;
    chunks
        .iter()
        .skip(from)
        .take(32)
        .enumerate()
        .fold(0, |bits, (i, c)| if c.is_some() { bits | (1 << i) } else { bits })
}

/// Chunk `index` of a state's bytes.
pub(super) fn chunk(bytes: &[u8], index: u32) -> Vec<u8> {
    let i = index as usize;
    bytes[(i * CHUNK_BYTES).min(bytes.len())..((i + 1) * CHUNK_BYTES).min(bytes.len())].to_vec()
}

/// Whether chunk `index` is missing on a joiner whose prefix is `have` and which holds the
/// chunks of the bits of `held` after it (see [`RejoinMsg::Have`]).
pub(super) fn missing(have: u32, held: u32, index: u32) -> bool {
    match index.checked_sub(have + 1) {
        None => index == have,
        Some(bit) if bit < 32 => held & (1 << bit) == 0,
        // Beyond what an acknowledgement can say: not known to be missing.
        Some(_) => false,
    }
}

/// What a joiner knows of itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinerView {
    /// Its slot.
    pub slot: usize,
    /// Its content hash.
    pub content_hash: u64,
    /// Its hooks hash.
    pub hooks_hash: u64,
    /// Its snapshot size (the only size it accepts).
    pub snapshot_len: u64,
}

#[derive(Clone, Debug)]
struct Incoming<A> {
    attempt: u64,
    coordinator: usize,
    channel: u32,
    frame: Frame,
    digest: u64,
    checksum: u64,
    members: Vec<usize>,
    /// Every slot's address as the offer names it (the members' and this joiner's; the
    /// others' as this joiner knew them): the members are heard and answered there.
    addrs: Vec<A>,
    chunks: Vec<Option<Vec<u8>>>,
    len: usize,
    have: u32,
    /// Asked the peer to load the bytes.
    loading: bool,
    loaded: bool,
    heard: u64,
    acked: u64,
}

/// The joiner side of the protocol.
#[derive(Clone, Debug)]
pub struct Joiner<A> {
    view: JoinerView,
    /// The slot's match identity: it signs the claims.
    identity: Identity,
    /// Every slot's match identity (from the handshake): the coordinator's checks its offer.
    keys: Vec<PublicIdentity>,
    /// Every slot's address: where the match started, until an offer's Go (then the addresses
    /// the offer named).
    addrs: Vec<A>,
    /// Where members said the coordinator is now ([`RejoinMsg::Coordinator`]), by the member
    /// that said it: the coordinator's slot and address. Hints: the joiner asks there too and
    /// answers a challenge from there, nothing more.
    redirects: BTreeMap<usize, (usize, A)>,
    /// The nonces of the challenges this joiner answered, newest last: an offer names the one
    /// its attempt started with, and one naming another (an old offer replayed) is refused.
    answered: Vec<[u8; 16]>,
    incoming: Option<Incoming<A>>,
    /// Members' checksums by attempt (they may arrive before the offer), the newest few.
    sums: BTreeMap<u64, BTreeMap<usize, (Frame, u64)>>,
    tick: u64,
    asked: Option<u64>,
    counts: BTreeMap<usize, u32>,
    outbox: Vec<(A, Vec<u8>)>,
    commands: Vec<RejoinCommand>,
    events: Vec<RejoinEvent>,
    done: bool,
    /// Ticks it asks before it gives up.
    patience: u64,
    /// Whether a member's message was read (any, a fault excepted).
    heard: bool,
    gave_up: bool,
}

/// Attempts whose early checksums a joiner keeps.
const EARLY_ATTEMPTS: usize = 4;

/// Challenges whose nonces a joiner keeps ([`RejoinMsg::Offer`]'s `nonce`).
const ANSWERED_NONCES: usize = 8;

impl<A: WireAddress> Joiner<A> {
    /// A joiner of the match whose slot `i` is at `addrs[i]` with the match identity
    /// `keys[i]` (announced in the handshake), proving its claim on its slot with `identity`:
    /// the match identity the slot's owner announced (a restarted program keeps it, say in a
    /// file, to come back).
    pub fn new(
        view: JoinerView,
        addrs: Vec<A>,
        keys: Vec<PublicIdentity>,
        identity: Identity,
    ) -> Joiner<A> {
        Joiner {
            view,
            identity,
            keys,
            addrs,
            redirects: BTreeMap::new(),
            answered: Vec::new(),
            incoming: None,
            sums: BTreeMap::new(),
            tick: 0,
            asked: None,
            counts: BTreeMap::new(),
            outbox: Vec::new(),
            commands: Vec::new(),
            events: Vec::new(),
            done: false,
            patience: GIVE_UP_TICKS,
            heard: false,
            gave_up: false,
        }
    }

    /// Whether the joiner is back in (it got its Go).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Gives up after `ticks` ticks of asking ([`GIVE_UP_TICKS`] unless told): time enough for
    /// the members to agree the player left and for a few attempts. A
    /// [`MatchPeer`](super::MatchPeer) waits its departure time more.
    pub fn give_up_after(&mut self, ticks: u64) {
        self.patience = ticks;
    }

    /// Whether the joiner gave up: it was not back in after the ticks
    /// [`Joiner::give_up_after`] set (the match ended, its members are gone, or they would not
    /// let it in). It sends and reads nothing more. `Some(true)`: some member answered it.
    pub fn gave_up(&self) -> Option<bool> {
        self.gave_up.then_some(self.heard)
    }

    /// The attempt this joiner took an offer of (the one it came back in by, once it is
    /// done); `None` before an offer.
    pub fn attempt(&self) -> Option<u64> {
        self.incoming.as_ref().map(|i| i.attempt)
    }

    /// Bytes of the state received so far and its size (0 before an offer).
    pub fn progress(&self) -> (usize, usize) {
        self.incoming
            .as_ref()
            .map_or((0, 0), |i| (i.chunks.iter().flatten().map(Vec::len).sum(), i.len))
    }

    /// Messages to send.
    pub fn drain_outbox(&mut self) -> Vec<(A, Vec<u8>)> {
        core::mem::take(&mut self.outbox)
    }

    /// Commands for the peer.
    pub fn drain_commands(&mut self) -> Vec<RejoinCommand> {
        core::mem::take(&mut self.commands)
    }

    /// Events.
    pub fn drain_events(&mut self) -> Vec<RejoinEvent> {
        core::mem::take(&mut self.events)
    }

    /// Where slot `slot` is reached: where the match started, or, once back in, where the
    /// members said it is now (a member that came back from a new address).
    pub fn address(&self, slot: usize) -> Option<&A> {
        self.addrs.get(slot)
    }

    /// The slot at `addr`: during an offer, only a member of the offer at the address it
    /// named (an address the offer moved no longer speaks for its slot, and no other slot's
    /// address speaks for a member); before, the slot that started the match there.
    fn slot_of(&self, addr: &A) -> Option<usize> {
        match &self.incoming {
            Some(inc) => inc.members.iter().copied().find(|m| inc.addrs.get(*m) == Some(addr)),
            None => self.addrs.iter().position(|a| a == addr),
        }
    }

    /// The coordinator a member said is at `addr` ([`RejoinMsg::Coordinator`]), before an
    /// offer.
    fn redirected(&self, addr: &A) -> Option<usize> {
        if self.incoming.is_some() {
            return None;
        }
        self.redirects.values().find(|(_, a)| a == addr).map(|(s, _)| *s)
    }

    fn send(&mut self, slot: usize, msg: &RejoinMsg) {
        let addrs = self.incoming.as_ref().map_or(&self.addrs, |i| &i.addrs);
        if let Some(a) = addrs.get(slot) {
            self.outbox.push((a.clone(), msg.encode()));
        }
    }

    fn fault(&mut self, from: Option<usize>, fault: RejoinFault) {
        self.events.push(RejoinEvent::Fault { from, fault });
    }

    /// Reads one message.
    pub fn receive(&mut self, from: &A, bytes: &[u8]) {
        if self.done || self.gave_up {
            return;
        }
        let addr = from;
        // Where a member said the coordinator is speaks for the coordinator's slot until an
        // offer names the addresses (its late messages of an attempt called off are ignored as
        // the coordinator's; it is trusted for nothing but its challenge).
        let slot = self.slot_of(addr).or_else(|| self.redirected(addr));
        let count = self.counts.entry(slot.unwrap_or(usize::MAX)).or_insert(0);
        *count += 1;
        if *count > MAX_MESSAGES_PER_TICK {
            return;
        }
        let msg = match RejoinMsg::decode(bytes) {
            Ok(m) => m,
            Err(e) => return self.fault(slot, RejoinFault::Decode(e)),
        };
        // An offer is the coordinator's by its signature, from wherever it comes (the
        // coordinator may be where the match did not start); a challenge from where a member
        // said the coordinator is gets the claim, which is good only for its nonce.
        match (&msg, slot.filter(|s| *s != self.view.slot)) {
            (RejoinMsg::Offer { .. }, from) => return self.on_offer(from, addr, &msg),
            // A member that came back from a new address sends its checksum before the offer
            // says where it is: normal, and it sends it again.
            (RejoinMsg::Captured { .. }, None) if self.incoming.is_none() => return,
            // A redirect counts only from a slot's own address.
            (RejoinMsg::Coordinator { .. }, _) if self.slot_of(addr).is_none() => {
                return self.fault(None, RejoinFault::Unexpected { what: "Coordinator" });
            }
            _ => {}
        }
        let Some(from) = slot.filter(|s| *s != self.view.slot) else {
            return self.fault(slot, RejoinFault::Unexpected { what: "message from no member" });
        };
        self.heard = true;
        match msg {
            RejoinMsg::Challenge { slot, nonce } => self.on_challenge(from, addr, slot, nonce),
            RejoinMsg::Coordinator { slot, at } => self.on_redirect(from, slot, &at),
            RejoinMsg::Offer { .. } => {}
            RejoinMsg::Chunk { attempt, index, bytes } => {
                self.on_chunk(from, attempt, index, bytes)
            }
            RejoinMsg::Captured { attempt, frame, checksum } => {
                let entry = self.sums.entry(attempt).or_default();
                if entry.len() < self.addrs.len() {
                    entry.insert(from, (frame, checksum));
                }
                while self.sums.len() > EARLY_ATTEMPTS {
                    self.sums.pop_first();
                }
            }
            RejoinMsg::Go { attempt, channel, frame, members } => {
                self.on_go(from, attempt, channel, frame, &members)
            }
            RejoinMsg::Abort { attempt } => {
                if self
                    .incoming
                    .as_ref()
                    .is_some_and(|i| i.attempt == attempt && i.coordinator == from)
                {
                    self.incoming = None;
                    self.asked = None;
                }
            }
            other => self.fault(Some(from), RejoinFault::Unexpected { what: other.kind() }),
        }
    }

    /// A member's word that the coordinator, slot `coordinator`, is at `at`: the joiner asks
    /// there too. One per member, the newest; it makes nothing from there trusted.
    fn on_redirect(&mut self, from: usize, coordinator: u16, at: &[u8]) {
        let coordinator = usize::from(coordinator);
        let Some(at) = A::from_wire(at) else {
            return self.fault(Some(from), RejoinFault::Unexpected { what: "Coordinator" });
        };
        if self.incoming.is_some() {
            return;
        }
        if coordinator >= self.addrs.len() || coordinator == self.view.slot {
            return self.fault(Some(from), RejoinFault::Unexpected { what: "Coordinator" });
        }
        self.redirects.insert(from, (coordinator, at));
    }

    /// A member's challenge on this joiner's slot: answered with the claim, signed, to the
    /// address it came from.
    fn on_challenge(&mut self, from: usize, addr: &A, slot: u16, nonce: [u8; 16]) {
        if usize::from(slot) != self.view.slot {
            return self.fault(Some(from), RejoinFault::Unexpected { what: "Challenge" });
        }
        let claim = Claim {
            slot,
            nonce,
            content_hash: self.view.content_hash,
            hooks_hash: self.view.hooks_hash,
            snapshot_len: self.view.snapshot_len as u32,
        };
        let proof = claim.prove(&self.identity);
        if !self.answered.contains(&nonce) {
            self.answered.push(nonce);
            if self.answered.len() > ANSWERED_NONCES {
                self.answered.remove(0);
            }
        }
        self.outbox.push((addr.clone(), RejoinMsg::Claim { slot, nonce, proof }.encode()));
    }

    /// A coordinator's offer of its state: taken if its terms are this joiner's (content,
    /// hooks, size), its members are a membership this joiner can join (ascending, the
    /// coordinator the lowest), it is signed with the coordinator's match identity for this
    /// joiner's slot and answers a challenge this joiner answered (a nonce is taken once), and
    /// the addresses it names are addresses, one per member, the coordinator's the one the
    /// offer came from. From then on the members are heard and answered at those addresses
    /// (see [`Joiner::address`] for when they become the slots' addresses).
    fn on_offer(&mut self, from: Option<usize>, addr: &A, offer: &RejoinMsg) {
        let &RejoinMsg::Offer {
            attempt,
            channel,
            frame,
            len,
            digest,
            checksum,
            ref members,
            content_hash,
            hooks_hash,
            ref addrs,
            ref at,
            nonce,
            ..
        } = offer
        else {
            return;
        };
        if self.incoming.as_ref().is_some_and(|i| i.attempt == attempt) {
            return;
        }
        if content_hash != self.view.content_hash || hooks_hash != self.view.hooks_hash {
            return self.fault(from, RejoinFault::ContentMismatch);
        }
        if u64::from(len) != self.view.snapshot_len {
            let got = u64::from(len);
            let want = self.view.snapshot_len;
            return self.fault(from, RejoinFault::SnapshotSize { got, want });
        }
        let members: Vec<usize> = members.iter().map(|m| usize::from(*m)).collect();
        // The coordinator is the lowest slot in the match: the offer's first member.
        let coordinator = members.first().copied().filter(|_| {
            members.windows(2).all(|w| w[0] < w[1])
                && !members.contains(&self.view.slot)
                && members.iter().all(|m| *m < self.addrs.len())
        });
        let Some(coordinator) = coordinator else {
            return self.fault(from, RejoinFault::Unexpected { what: "Offer" });
        };
        let joiner = self.view.slot as u16;
        let signed = self.keys.get(coordinator).is_some_and(|key| verify_offer(key, joiner, offer));
        if !signed || !self.answered.contains(&nonce) {
            return self.fault(from, RejoinFault::BadOffer { coordinator });
        }
        let Some(moved) = self.offered_addresses(coordinator, addr, &members, addrs, at) else {
            return self.fault(from, RejoinFault::Unexpected { what: "Offer addresses" });
        };
        // The offer answers one claim: the same offer again, later, is a replay.
        self.answered.retain(|n| *n != nonce);
        let from = coordinator;
        // A member's checksum heard at the address its slot had before is not its own.
        if let Some(sums) = self.sums.get_mut(&attempt) {
            sums.retain(|m, _| moved.get(*m) == self.addrs.get(*m));
        }
        let len = len as usize;
        self.incoming = Some(Incoming {
            attempt,
            coordinator: from,
            channel,
            frame,
            digest,
            checksum,
            members,
            addrs: moved,
            chunks: vec![None; len.div_ceil(CHUNK_BYTES)],
            len,
            have: 0,
            loading: false,
            loaded: false,
            heard: self.tick,
            acked: self.tick,
        });
        self.send(from, &RejoinMsg::Have { attempt, chunks: 0, held: 0 });
    }

    /// Every slot's address once an offer's `addrs` (its `members`', in order) and `at` (this
    /// joiner's) are taken, or `None` if one is not an address, two members would share one,
    /// or the coordinator's is not the one the offer came from (`addr`). Slots out of the
    /// match keep the address this joiner knows.
    fn offered_addresses(
        &self,
        coordinator: usize,
        addr: &A,
        members: &[usize],
        addrs: &[Vec<u8>],
        at: &[u8],
    ) -> Option<Vec<A>> {
        if addrs.len() != members.len() {
            return None;
        }
        let mut now = self.addrs.clone();
        let mut named: Vec<A> = Vec::with_capacity(members.len() + 1);
        for (m, bytes) in members.iter().zip(addrs) {
            let a = A::from_wire(bytes)?;
            if named.contains(&a) || (*m == coordinator && a != *addr) {
                return None;
            }
            named.push(a.clone());
            *now.get_mut(*m)? = a;
        }
        let own = A::from_wire(at)?;
        if named.contains(&own) {
            return None;
        }
        *now.get_mut(self.view.slot)? = own;
        Some(now)
    }

    /// Chunk `index` of the offered state: kept if it is the coordinator's and of the right
    /// size; the prefix held grows.
    fn on_chunk(&mut self, from: usize, attempt: u64, index: u32, bytes: Vec<u8>) {
        let Some(inc) = self.incoming.as_mut().filter(|i| i.attempt == attempt) else {
            return;
        };
        if from != inc.coordinator {
            return self.fault(Some(from), RejoinFault::Unexpected { what: "Chunk" });
        }
        let i = index as usize;
        let want = inc.len.saturating_sub(i * CHUNK_BYTES).min(CHUNK_BYTES);
        if i >= inc.chunks.len() || bytes.len() != want {
            return self.fault(Some(from), RejoinFault::Unexpected { what: "Chunk" });
        }
        inc.heard = self.tick;
        if inc.chunks[i].is_none() {
            inc.chunks[i] = Some(bytes);
        }
        while (inc.have as usize) < inc.chunks.len() && inc.chunks[inc.have as usize].is_some() {
            inc.have += 1;
        }
    }

    /// The coordinator's Go: this joiner is back in, if it loaded the state and the Go is the
    /// offer's (channel, frame, the members and itself).
    fn on_go(&mut self, from: usize, attempt: u64, channel: u32, frame: Frame, members: &[u16]) {
        let Some(inc) = self.incoming.as_ref().filter(|i| i.attempt == attempt) else {
            return self.fault(Some(from), RejoinFault::Unexpected { what: "Go" });
        };
        let members: Vec<usize> = members.iter().map(|m| usize::from(*m)).collect();
        let mut expected = inc.members.clone();
        expected.push(self.view.slot);
        expected.sort_unstable();
        if from != inc.coordinator
            || !inc.loaded
            || channel != inc.channel
            || frame != inc.frame
            || members != expected
        {
            return self.fault(Some(from), RejoinFault::Unexpected { what: "Go" });
        }
        // Back in: the slots are where the offer said.
        self.addrs = inc.addrs.clone();
        self.done = true;
        self.commands.push(RejoinCommand::Switch { channel, frame, members });
    }

    /// Once per tick: the join request, acknowledgements, the check of a complete state.
    pub fn tick(&mut self) {
        self.tick += 1;
        self.counts.clear();
        if self.done || self.gave_up {
            return;
        }
        let tick = self.tick;
        if tick > self.patience {
            self.gave_up = true;
            self.incoming = None;
            self.events.push(RejoinEvent::GaveUp { slot: self.view.slot, answered: self.heard });
            return;
        }
        let Some(inc) = self.incoming.as_mut() else {
            if self.asked.is_none_or(|t| tick >= t + RESEND_TICKS) {
                self.asked = Some(tick);
                let join = RejoinMsg::Join {
                    slot: self.view.slot as u16,
                    content_hash: self.view.content_hash,
                    hooks_hash: self.view.hooks_hash,
                    snapshot_len: self.view.snapshot_len as u32,
                };
                for s in 0..self.addrs.len() {
                    if s != self.view.slot {
                        self.send(s, &join);
                    }
                }
                // And where members said the coordinator is, if no slot started there.
                let mut hinted: Vec<A> = Vec::new();
                for (_, a) in self.redirects.values() {
                    if !self.addrs.contains(a) && !hinted.contains(a) {
                        hinted.push(a.clone());
                    }
                }
                let bytes = join.encode();
                self.outbox.extend(hinted.into_iter().map(|a| (a, bytes.clone())));
            }
            return;
        };
        if tick.saturating_sub(inc.heard) > ATTEMPT_TICKS {
            // The coordinator went quiet: ask again from the start.
            self.incoming = None;
            self.asked = None;
            return;
        }
        let (attempt, coordinator) = (inc.attempt, inc.coordinator);
        if inc.loaded {
            if tick >= inc.acked + RESEND_TICKS {
                inc.acked = tick;
                self.send(coordinator, &RejoinMsg::Loaded { attempt });
            }
            return;
        }
        if (inc.have as usize) < inc.chunks.len() {
            let have = inc.have;
            inc.acked = tick;
            let held = held_after(&inc.chunks, have);
            self.send(coordinator, &RejoinMsg::Have { attempt, chunks: have, held });
            return;
        }
        if inc.loading {
            return;
        }
        let bytes: Vec<u8> = inc.chunks.iter().flatten().flatten().copied().collect();
        if twox_hash::XxHash3_64::oneshot(&bytes) != inc.digest {
            // Call the attempt off and ask again (the next offer may come from an honest
            // coordinator, or the tampering may stop).
            self.incoming = None;
            self.asked = None;
            self.send(coordinator, &RejoinMsg::Abort { attempt });
            self.fault(Some(coordinator), RejoinFault::SnapshotDigest);
            return;
        }
        // Every other member's checksum of the state, before loading it.
        let sums = self.sums.get(&attempt);
        let others: Vec<usize> =
            inc.members.iter().copied().filter(|m| *m != coordinator).collect();
        if !others.iter().all(|m| sums.is_some_and(|s| s.contains_key(m))) {
            return;
        }
        inc.loading = true;
        let frame = inc.frame;
        self.commands.push(RejoinCommand::Load { frame, bytes });
    }

    /// The outcome of a [`RejoinCommand::Load`]: the loaded state's checksum, or why the bytes
    /// did not load.
    pub fn loaded(&mut self, result: Result<u64, String>) {
        let Some(inc) = self.incoming.as_mut() else { return };
        inc.loading = false;
        let coordinator = inc.coordinator;
        let fault = match result {
            Err(reason) => Some(RejoinFault::SnapshotInvalid { reason }),
            Ok(ours) => {
                let sums = self.sums.get(&inc.attempt);
                let mut theirs = vec![(coordinator, (inc.frame, inc.checksum))];
                for m in inc.members.iter().filter(|m| **m != coordinator) {
                    if let Some(s) = sums.and_then(|s| s.get(m)) {
                        theirs.push((*m, *s));
                    }
                }
                theirs.into_iter().find(|(_, (f, sum))| *f != inc.frame || *sum != ours).map(
                    |(member, (_, sum))| RejoinFault::ChecksumMismatch {
                        member,
                        theirs: sum,
                        ours,
                    },
                )
            }
        };
        match fault {
            Some(f) => {
                // Start over: the next offer may come from an honest coordinator.
                let attempt = inc.attempt;
                self.incoming = None;
                self.asked = None;
                self.send(coordinator, &RejoinMsg::Abort { attempt });
                self.fault(Some(coordinator), f);
            }
            None => {
                inc.loaded = true;
                inc.acked = self.tick;
                let attempt = inc.attempt;
                self.send(coordinator, &RejoinMsg::Loaded { attempt });
            }
        }
    }
}
