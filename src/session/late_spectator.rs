//! Spectators that join a running match: a program that was not in the match's handshake
//! follows it from a frame F on, without the players pausing.
//!
//! **Why not GGRS's spectators.** A GGRS `SpectatorSession` must be listed by its host's
//! `P2PSession` when the session starts ([`Spectator::start`](super::Spectator::start)), and
//! GGRS 0.13 cannot add one to a running session. A rejoin ([`rejoin`](super::rejoin)) can
//! bring a *player* back, but it holds every member for the transfer and starts a new GGRS
//! session. A spectator needs neither: it gives no input, so nothing the players simulate waits
//! on it. It follows the match outside GGRS, on the word of one member, its *host*.
//!
//! **The protocol**, on the side channel the rejoin protocol speaks on ([`MatchTransport`]'s
//! raw messages; a message starts with this module's [`MAGIC`], not the rejoin's, so each
//! protocol reads only its own):
//!
//! 1. The spectator sends [`SpectateMsg::Ask`] to its host: its public identity, its content
//!    and hooks hashes and its snapshot size. The host refuses ([`SpectateMsg::Refused`], a
//!    [`Refusal`]) other content, a spectator its [`SpectatorPolicy`] does not admit, and one
//!    more than [`SpectatorPolicy::max`]; otherwise it answers with a fresh nonce
//!    ([`SpectateMsg::Challenge`]), to the address that asked.
//! 2. The spectator signs the nonce with its identity ([`SpectateMsg::Prove`]). The host checks
//!    the proof under the key the spectator named: the address that asked receives what it
//!    asked for (a forged source address gets nothing sent to it but the challenge), and a
//!    policy that lists keys admits only their holders.
//! 3. The host captures its confirmed state before a frame F it has not confirmed yet
//!    ([`Runner::capture_for_spectators`](super::Runner::capture_for_spectators): nothing is
//!    held back, the players never pause) and, from then on, keeps every frame it confirms, with
//!    every player's input and status ([`Runner::take_confirmed_frames`](super::Runner::take_confirmed_frames)).
//!    Once the state is final it sends a [`SpectateMsg::Offer`] (F, the size, the digest and
//!    checksum of the state, the players), signed with its match identity for the spectator's
//!    nonce, and the state in chunks, exactly as a rejoin's coordinator does: [`CHUNK_BYTES`]
//!    bytes each, at most [`WINDOW`] unacknowledged, selective acknowledgements
//!    ([`SpectateMsg::Have`]), holes resent every [`HOLE_RESEND_TICKS`], back to the prefix
//!    after [`RESEND_TICKS`] of silence.
//! 4. The spectator refuses an offer not signed by the key it was given for its host
//!    ([`SpectateTicket`]), for another nonce, of another size than its own snapshot; it checks
//!    the digest, loads the bytes through the snapshot validation
//!    ([`World::load_bytes`](crate::World::load_bytes), through
//!    [`Runner::rebase`](super::Runner::rebase)) and requires the loaded state's checksum to be
//!    the offer's. [`SpectateEvent::Started`] (F).
//! 5. The host streams the confirmed frames from F on ([`SpectateMsg::Inputs`], signed: every
//!    player's input and its status, `Disconnected` included, and the host's checksum of the
//!    confirmed state before the first frame of the message); the spectator acknowledges the
//!    frames it holds ([`SpectateMsg::Ack`]) and steps them through
//!    [`Runner::advance_confirmed`](super::Runner::advance_confirmed), the path a GGRS
//!    spectator's frames take: the game sees the inputs and statuses the players' games saw,
//!    so its world is theirs. Each checksum it gets is compared with its own state's: a
//!    difference is a [`SpectateFault::ChecksumMismatch`]. It follows until the host goes
//!    silent for [`SILENT_TICKS`] or drops it ([`SpectateEvent::Ended`]).
//!
//! A membership change on the host (a rejoin) changes nothing for a spectator that streams:
//! the confirmed frames go on, in world frames, from the same states. A capture a rejoin
//! overtakes is taken again after it.
//!
//! **Safe by default.** A member admits no late spectator until it is told to
//! ([`MatchPeer::admit_spectators`](super::MatchPeer::admit_spectators)), then only the keys
//! listed or, with [`SpectatorPolicy::open`], anyone, and at most [`SpectatorPolicy::max`] at
//! once. Nothing a would-be spectator sends reaches the players' sessions: every message is
//! decoded with bounds ([`SpectateMsg::decode`], the rejoin's
//! [`RejoinDecodeError`]), at most
//! [`MAX_MESSAGES_PER_TICK`] are read per sender and tick ([`SpectateFault::Flood`]), at most
//! [`MAX_PENDING`] addresses may wait for their proof at once ([`SpectateFault::Requests`]),
//! a spectator that acknowledges nothing for [`STALL_TICKS`] is dropped
//! ([`DropReason::Stalled`]), and one more than [`MAX_BEHIND`] frames behind the host's
//! confirmed frame is dropped ([`DropReason::FellBehind`]): the frames a host keeps are
//! bounded. A spectator can read the match (that is what it is admitted for); it cannot
//! change it: it sends no input and nothing it sends is simulated.

use super::identity::{Identity, PublicIdentity};
use super::match_peer::MatchTransport;
use super::rejoin::{
    CHUNK_BYTES, HOLE_RESEND_TICKS, MAX_MESSAGES_PER_TICK, MAX_PROOF_BYTES, MAX_SLOTS,
    RESEND_TICKS, RejoinDecodeError, STALL_TICKS, WINDOW, WireAddress, bound, chunk,
    decode_prefixed, encode_prefixed, held_after, missing,
};
use super::runner::{Address, Batch, Runner, SessionError, SessionEvent};
use crate::num::Frame;
use crate::present::Presenter;
use crate::world::{Game, World};
use core::fmt;
use ggrs::InputStatus;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The prefix of every message of this protocol (another than the rejoin's: a member hands
/// each message to the protocol it belongs to). It changes whenever a message's layout does.
pub const MAGIC: &[u8; 4] = b"RBS1";

/// The longest message accepted (a chunk and its header, as the rejoin's).
pub const MAX_MESSAGE_BYTES: usize = super::rejoin::MAX_MESSAGE_BYTES;

/// Confirmed frames a spectator may be behind its host before it is dropped: a host keeps at
/// most this many frames for its slowest spectator.
pub const MAX_BEHIND: u32 = 600;

/// Frames a host sends past the spectator's acknowledgement.
pub const IN_FLIGHT: u32 = 120;

/// Ticks a spectator waits without a word from its host before it stops following.
pub const SILENT_TICKS: u64 = 600;

/// Addresses that may wait for their proof to be checked at once, on one host.
pub const MAX_PENDING: usize = 16;

/// Ticks a challenge stays good.
const CHALLENGE_TICKS: u64 = 600;

/// The prefix of a spectator's proof: a signature made for anything else never verifies as one.
const PROVE_DOMAIN: &[u8] = b"rollback_abilities spectate proof v1\0";

/// The prefix of a host's signed messages.
const HOST_DOMAIN: &[u8] = b"rollback_abilities spectate host v1\0";

/// Who a member admits as a late spectator. The default admits nobody.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpectatorPolicy {
    /// The spectators' public identities admitted.
    pub allowed: Vec<PublicIdentity>,
    /// Admit anyone who proves a key (its own), listed or not.
    pub open: bool,
    /// The most spectators followed from this member at once.
    pub max: usize,
}

impl SpectatorPolicy {
    /// Admits the holders of `keys`, at most `max` at once.
    pub fn allow(keys: Vec<PublicIdentity>, max: usize) -> SpectatorPolicy {
        SpectatorPolicy { allowed: keys, open: false, max }
    }

    /// Admits anyone, at most `max` at once.
    pub fn open(max: usize) -> SpectatorPolicy {
        SpectatorPolicy { allowed: Vec::new(), open: true, max }
    }

    fn admits(&self, key: &PublicIdentity) -> bool {
        self.open || self.allowed.contains(key)
    }
}

/// What a late spectator needs to follow a match from one member: where the member is and the
/// match identity it announced (which signs what it sends the spectator). A member hands it
/// out ([`MatchPeer::spectate_ticket`](super::MatchPeer::spectate_ticket)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpectateTicket<A> {
    /// The host's address.
    pub host: A,
    /// The host's public match identity.
    pub key: PublicIdentity,
}

/// Why a host would not admit a spectator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Refusal {
    /// Its key is not admitted ([`SpectatorPolicy`]).
    NotAllowed,
    /// The host follows as many spectators as it admits.
    Full,
    /// Other content, hooks or snapshot size.
    ContentMismatch,
}

/// Why a spectator stopped following (on its host, and on itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DropReason {
    /// It acknowledged nothing for [`STALL_TICKS`] ticks.
    Stalled,
    /// It was more than [`MAX_BEHIND`] confirmed frames behind.
    FellBehind,
    /// It said it leaves.
    Left,
    /// The host said nothing for [`SILENT_TICKS`] ticks (the spectator's side).
    HostSilent,
    /// The host did not admit it (the spectator's side).
    Refused(Refusal),
}

/// A late spectator's message (see the [module](self)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SpectateMsg {
    /// Spectator → host: let me follow the match.
    Ask {
        /// The spectator's public identity.
        key: PublicIdentity,
        /// Its content hash.
        content_hash: u64,
        /// Its hooks hash.
        hooks_hash: u64,
        /// Its snapshot size in bytes.
        snapshot_len: u32,
    },
    /// Host → spectator: prove your key over this nonce.
    Challenge {
        /// The nonce.
        nonce: [u8; 16],
    },
    /// Spectator → host: its key's signature of the nonce ([`prove_message`]).
    Prove {
        /// The nonce.
        nonce: [u8; 16],
        /// The signature.
        proof: Vec<u8>,
    },
    /// Host → spectator: not admitted.
    Refused {
        /// Why.
        reason: Refusal,
    },
    /// Host → spectator: the confirmed state before `frame` follows; signed.
    Offer {
        /// The spectator's nonce (names its stream).
        nonce: [u8; 16],
        /// F.
        frame: u32,
        /// The state's size in bytes.
        len: u32,
        /// xxh3-64 of the bytes.
        digest: u64,
        /// The world checksum of the state.
        checksum: u64,
        /// The match's players.
        players: u16,
        /// The host's signature ([`host_message`]).
        signature: Vec<u8>,
    },
    /// Host → spectator: bytes `index · CHUNK_BYTES ..` of the state.
    Chunk {
        /// The stream.
        nonce: [u8; 16],
        /// The chunk's index.
        index: u32,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// Spectator → host: chunks `0..chunks` arrived, and of the next 32, those whose bit is
    /// set in `held` (as the rejoin's `Have`).
    Have {
        /// The stream.
        nonce: [u8; 16],
        /// The prefix held.
        chunks: u32,
        /// The chunks held after the first missing one.
        held: u32,
    },
    /// Host → spectator: `count` confirmed frames from `first` on; signed.
    Inputs {
        /// The stream.
        nonce: [u8; 16],
        /// The first frame.
        first: u32,
        /// How many frames.
        count: u16,
        /// The host's checksum of the confirmed state before `first`, when it has it.
        checksum: Option<u64>,
        /// Each frame: every player's input bytes and status byte (0 confirmed, 1
        /// disconnected).
        data: Vec<u8>,
        /// The host's signature ([`host_message`]).
        signature: Vec<u8>,
    },
    /// Spectator → host: I hold every frame before `next`.
    Ack {
        /// The stream.
        nonce: [u8; 16],
        /// The first frame missing.
        next: u32,
    },
    /// Either side: the stream ends.
    End {
        /// The stream.
        nonce: [u8; 16],
        /// Why.
        reason: DropReason,
    },
}

/// Whether `bytes` are a message of this protocol (they start with [`MAGIC`]).
pub fn is_spectate_message(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

impl SpectateMsg {
    /// The message's bytes: [`MAGIC`] and its bincode encoding.
    pub fn encode(&self) -> Vec<u8> {
        encode_prefixed(self, MAGIC)
    }

    /// Decodes a message with bounds: the length, the magic, every length inside it.
    pub fn decode(bytes: &[u8]) -> Result<SpectateMsg, RejoinDecodeError> {
        let msg: SpectateMsg = decode_prefixed(bytes, MAGIC)?;
        match &msg {
            SpectateMsg::Prove { proof, .. } => bound("proof", proof.len(), MAX_PROOF_BYTES)?,
            SpectateMsg::Offer { signature, players, .. } => {
                bound("signature", signature.len(), MAX_PROOF_BYTES)?;
                bound("players", usize::from(*players), MAX_SLOTS)?;
            }
            SpectateMsg::Chunk { bytes, .. } => bound("chunk", bytes.len(), CHUNK_BYTES)?,
            SpectateMsg::Inputs { data, signature, count, .. } => {
                bound("signature", signature.len(), MAX_PROOF_BYTES)?;
                bound("data", data.len(), CHUNK_BYTES)?;
                bound("count", usize::from(*count), CHUNK_BYTES)?;
            }
            _ => {}
        }
        Ok(msg)
    }

    /// The message's kind, as faults name it.
    pub fn kind(&self) -> &'static str {
        match self {
            SpectateMsg::Ask { .. } => "Ask",
            SpectateMsg::Challenge { .. } => "Challenge",
            SpectateMsg::Prove { .. } => "Prove",
            SpectateMsg::Refused { .. } => "Refused",
            SpectateMsg::Offer { .. } => "Offer",
            SpectateMsg::Chunk { .. } => "Chunk",
            SpectateMsg::Have { .. } => "Have",
            SpectateMsg::Inputs { .. } => "Inputs",
            SpectateMsg::Ack { .. } => "Ack",
            SpectateMsg::End { .. } => "End",
        }
    }
}

/// The bytes a spectator signs to prove its key: a fixed domain prefix and the nonce.
pub fn prove_message(nonce: &[u8; 16]) -> Vec<u8> {
    let mut m = PROVE_DOMAIN.to_vec();
    m.extend(nonce);
    m
}

/// The bytes a host signs for a [`SpectateMsg::Offer`] or [`SpectateMsg::Inputs`]: a fixed
/// domain prefix and the message's encoding with an empty signature (the nonce included, so
/// a message signed for one spectator's stream is good for no other). `None` for any other
/// message.
pub fn host_message(msg: &SpectateMsg) -> Option<Vec<u8>> {
    let mut unsigned = msg.clone();
    match &mut unsigned {
        SpectateMsg::Offer { signature, .. } | SpectateMsg::Inputs { signature, .. } => {
            signature.clear();
        }
        _ => return None,
    }
    let mut m = HOST_DOMAIN.to_vec();
    m.extend(encode_prefixed(&unsigned, MAGIC));
    Some(m)
}

fn sign_host(msg: SpectateMsg, identity: &Identity) -> SpectateMsg {
    let Some(m) = host_message(&msg) else { return msg };
    let mut signed = msg;
    if let SpectateMsg::Offer { signature, .. } | SpectateMsg::Inputs { signature, .. } =
        &mut signed
    {
        *signature = identity.sign(&m).to_vec();
    }
    signed
}

/// Whether `msg` (an offer or inputs) is signed by the host whose identity is `key`.
pub fn verify_host(key: &PublicIdentity, msg: &SpectateMsg) -> bool {
    let (SpectateMsg::Offer { signature, .. } | SpectateMsg::Inputs { signature, .. }) = msg else {
        return false;
    };
    let Ok(signature) = <&[u8; 64]>::try_from(signature.as_slice()) else { return false };
    host_message(msg).is_some_and(|m| key.verifies(&m, signature))
}

/// Something a late spectator or its host sent that was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpectateFault {
    /// Not a message of this protocol.
    Decode(RejoinDecodeError),
    /// More than [`MAX_MESSAGES_PER_TICK`] messages from one sender in a tick.
    Flood {
        /// Messages dropped this tick.
        dropped: u32,
    },
    /// More than [`MAX_PENDING`] addresses asked at once: requests were dropped (reported once
    /// per tick).
    Requests {
        /// Requests dropped this tick.
        dropped: u32,
    },
    /// The host refused to admit a spectator (on the host: the one it refused; on the
    /// spectator: its host's answer).
    Refused(Refusal),
    /// A proof that does not verify under the key the spectator named, or for no challenge.
    BadProof,
    /// An offer not signed by the host's key, for another stream, or of another size than the
    /// spectator's snapshot.
    BadOffer,
    /// The state's bytes do not match the offer's digest.
    SnapshotDigest,
    /// The state does not load ([`World::load_bytes`](crate::World::load_bytes)), is of
    /// another frame, or its checksum is not the offer's.
    SnapshotInvalid {
        /// Why.
        reason: String,
    },
    /// Frames not signed by the host, or of another layout.
    BadInputs,
    /// The spectator's confirmed state differs from its host's at `frame`.
    ChecksumMismatch {
        /// The frame (the state before it).
        frame: Frame,
        /// The host's checksum.
        host: u64,
        /// The spectator's.
        ours: u64,
    },
    /// A message that has no place now.
    Unexpected {
        /// Its kind.
        what: &'static str,
    },
}

impl fmt::Display for SpectateFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpectateFault::Decode(e) => write!(f, "{e}"),
            SpectateFault::Flood { dropped } => write!(f, "flood: {dropped} messages dropped"),
            SpectateFault::Requests { dropped } => {
                write!(f, "too many spectators asking at once: {dropped} requests dropped")
            }
            SpectateFault::Refused(r) => write!(f, "spectator refused: {r:?}"),
            SpectateFault::BadProof => f.write_str("a spectator's proof does not verify"),
            SpectateFault::BadOffer => f.write_str("an offer that is not the host's"),
            SpectateFault::SnapshotDigest => f.write_str("the state does not match its digest"),
            SpectateFault::SnapshotInvalid { reason } => {
                write!(f, "the state is invalid: {reason}")
            }
            SpectateFault::BadInputs => f.write_str("frames that are not the host's"),
            SpectateFault::ChecksumMismatch { frame, host, ours } => write!(
                f,
                "the spectator's state before frame {frame} differs: host {host:#x}, ours {ours:#x}"
            ),
            SpectateFault::Unexpected { what } => write!(f, "unexpected {what}"),
        }
    }
}

/// What happened to a late spectator ([`SessionEvent::LateSpectator`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpectateEvent {
    /// On the host: a spectator was admitted; its state is the one before `frame`.
    Admitted {
        /// The spectator's address.
        spectator: String,
        /// F.
        frame: Frame,
    },
    /// On the host: a spectator is no longer followed.
    Dropped {
        /// The spectator's address.
        spectator: String,
        /// Why.
        reason: DropReason,
    },
    /// On the spectator: it loaded the state before `frame` and follows from there.
    Started {
        /// F.
        frame: Frame,
    },
    /// On the spectator: it no longer follows.
    Ended {
        /// Why.
        reason: DropReason,
    },
    /// Something was refused.
    Fault {
        /// The sender.
        peer: String,
        /// What.
        fault: SpectateFault,
    },
}

/// Encodes a confirmed frame's inputs and statuses for [`SpectateMsg::Inputs`].
pub fn encode_frame<I: bytemuck::Pod>(inputs: &[(I, InputStatus)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(inputs.len() * (core::mem::size_of::<I>() + 1));
    for (i, s) in inputs {
        out.extend_from_slice(bytemuck::bytes_of(i));
        out.push(u8::from(*s == InputStatus::Disconnected));
    }
    out
}

/// The inputs and statuses of one frame [`encode_frame`] made for `players` players; `None`
/// for any other bytes.
pub fn decode_frame<I: bytemuck::Pod>(
    bytes: &[u8],
    players: usize,
) -> Option<Vec<(I, InputStatus)>> {
    let size = core::mem::size_of::<I>() + 1;
    if bytes.len() != players * size {
        return None;
    }
    bytes
        .chunks_exact(size)
        .map(|c| {
            let input = bytemuck::try_pod_read_unaligned(&c[..size - 1]).ok()?;
            let status = match c[size - 1] {
                0 => InputStatus::Confirmed,
                1 => InputStatus::Disconnected,
                _ => return None,
            };
            Some((input, status))
        })
        .collect()
}

/// What a host knows of itself for the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostView {
    /// Its content hash.
    pub content_hash: u64,
    /// Its hooks hash.
    pub hooks_hash: u64,
    /// Its snapshot size.
    pub snapshot_len: u64,
    /// The match's players.
    pub players: usize,
    /// Bytes of one player's input.
    pub input_bytes: usize,
}

enum Phase {
    /// Waiting for the host's capture.
    Capturing,
    /// Sending the state.
    Transferring {
        frame: Frame,
        offer: Vec<u8>,
        bytes: Vec<u8>,
        have: u32,
        held: u32,
        sent: u32,
        holes_resent: u64,
    },
    /// Streaming frames: `acked` is the first the spectator lacks, `sent` the next to send.
    Streaming { acked: Frame, sent: Frame },
}

struct Watcher<A> {
    addr: A,
    nonce: [u8; 16],
    phase: Phase,
    /// The tick the spectator last acknowledged something new.
    progress: u64,
    /// The tick the host last went back to what the spectator acknowledged.
    resent: u64,
    /// The tick the host last sent something.
    spoke: u64,
}

struct Pending<A> {
    addr: A,
    key: PublicIdentity,
    nonce: [u8; 16],
    at: u64,
}

/// The host side: the spectators a member follows (one per member; see the [module](self)).
pub struct SpectatorHost<A: Address> {
    policy: SpectatorPolicy,
    identity: Identity,
    nonce_key: [u8; 32],
    nonces: u64,
    tick: u64,
    pending: Vec<Pending<A>>,
    watchers: Vec<Watcher<A>>,
    /// Confirmed frames kept for the spectators: number, encoded inputs, checksum before.
    frames: VecDeque<(Frame, Vec<u8>, Option<u64>)>,
    counts: HashMap<A, u32>,
    /// Requests dropped this tick (more than [`MAX_PENDING`] waiting).
    requests_dropped: u32,
    outbox: Vec<(A, Vec<u8>)>,
    events: Vec<SpectateEvent>,
}

impl<A: Address> fmt::Debug for SpectatorHost<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpectatorHost")
            .field("policy", &self.policy)
            .field("watchers", &self.watchers.len())
            .field("frames", &self.frames.len())
            .finish_non_exhaustive()
    }
}

impl<A: Address> SpectatorHost<A> {
    /// A host that admits nobody yet, signing with `identity`, drawing nonces with `nonce_key`.
    pub fn new(identity: Identity, nonce_key: [u8; 32]) -> SpectatorHost<A> {
        SpectatorHost {
            policy: SpectatorPolicy::default(),
            identity,
            nonce_key,
            nonces: 0,
            tick: 0,
            pending: Vec::new(),
            watchers: Vec::new(),
            frames: VecDeque::new(),
            counts: HashMap::new(),
            requests_dropped: 0,
            outbox: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Who is admitted from now on (spectators followed already stay).
    pub fn set_policy(&mut self, policy: SpectatorPolicy) {
        self.policy = policy;
    }

    /// Draws nonces with `key` instead of the operating system's randomness.
    pub fn seed(&mut self, key: [u8; 32]) {
        self.nonce_key = key;
    }

    /// Spectators followed (admitted, in any phase).
    pub fn spectators(&self) -> usize {
        self.watchers.len()
    }

    /// Whether a spectator waits for a captured state.
    pub fn capturing(&self) -> bool {
        self.watchers.iter().any(|w| matches!(w.phase, Phase::Capturing))
    }

    /// Whether the host must keep confirmed frames (it follows a spectator).
    pub fn wants_frames(&self) -> bool {
        !self.watchers.is_empty()
    }

    /// The messages to send.
    pub fn drain_outbox(&mut self) -> Vec<(A, Vec<u8>)> {
        core::mem::take(&mut self.outbox)
    }

    /// The events since the last call.
    pub fn drain_events(&mut self) -> Vec<SpectateEvent> {
        core::mem::take(&mut self.events)
    }

    fn fault(&mut self, from: &A, fault: SpectateFault) {
        self.events.push(SpectateEvent::Fault { peer: format!("{from:?}"), fault });
    }

    fn send(&mut self, to: &A, msg: &SpectateMsg) {
        self.outbox.push((to.clone(), msg.encode()));
    }

    fn nonce(&mut self) -> [u8; 16] {
        self.nonces += 1;
        let h = blake3::keyed_hash(&self.nonce_key, &self.nonces.to_le_bytes());
        let mut n = [0u8; 16];
        n.copy_from_slice(&h.as_bytes()[..16]);
        n
    }

    /// A message from `from` (any address).
    pub fn receive(&mut self, from: &A, bytes: &[u8], view: &HostView) {
        let count = self.counts.entry(from.clone()).or_insert(0);
        *count += 1;
        if *count > MAX_MESSAGES_PER_TICK {
            // Reported once per sender and tick, with the count at the tick's end.
            return;
        }
        let msg = match SpectateMsg::decode(bytes) {
            Ok(m) => m,
            Err(e) => return self.fault(from, SpectateFault::Decode(e)),
        };
        match msg {
            SpectateMsg::Ask { key, content_hash, hooks_hash, snapshot_len } => {
                self.on_ask(from, key, (content_hash, hooks_hash, snapshot_len), view);
            }
            SpectateMsg::Prove { nonce, proof } => self.on_prove(from, nonce, &proof),
            SpectateMsg::Have { nonce, chunks, held } => {
                let tick = self.tick;
                let Some(w) = self.watcher(from, &nonce) else {
                    return self.fault(from, SpectateFault::Unexpected { what: "Have" });
                };
                if let Phase::Transferring { bytes, have, held: h, .. } = &mut w.phase {
                    let total = bytes.len().div_ceil(CHUNK_BYTES) as u32;
                    if chunks > *have && chunks <= total {
                        *have = chunks;
                        *h = held;
                        w.progress = tick;
                    } else if chunks == *have {
                        *h |= held;
                    }
                }
            }
            SpectateMsg::Ack { nonce, next } => {
                let tick = self.tick;
                let Some(w) = self.watcher(from, &nonce) else {
                    return self.fault(from, SpectateFault::Unexpected { what: "Ack" });
                };
                match &mut w.phase {
                    Phase::Transferring { frame, .. } if next == *frame => {
                        let f = *frame;
                        w.phase = Phase::Streaming { acked: f, sent: f };
                        w.progress = tick;
                    }
                    Phase::Streaming { acked, sent } if next > *acked && next <= *sent => {
                        *acked = next;
                        w.progress = tick;
                    }
                    Phase::Streaming { acked, .. } if next == *acked => w.progress = tick,
                    _ => {}
                }
            }
            SpectateMsg::End { nonce, .. } => {
                if let Some(i) =
                    self.watchers.iter().position(|w| w.addr == *from && w.nonce == nonce)
                {
                    self.drop_watcher(i, DropReason::Left, false);
                }
            }
            other => self.fault(from, SpectateFault::Unexpected { what: other.kind() }),
        }
    }

    fn watcher(&mut self, from: &A, nonce: &[u8; 16]) -> Option<&mut Watcher<A>> {
        self.watchers.iter_mut().find(|w| w.addr == *from && w.nonce == *nonce)
    }

    fn on_ask(&mut self, from: &A, key: PublicIdentity, what: (u64, u64, u32), view: &HostView) {
        if self.watchers.iter().any(|w| w.addr == *from) {
            // Asked again while followed (a lost answer): the stream goes on.
            return;
        }
        let refusal = if (what.0, what.1, u64::from(what.2))
            != (view.content_hash, view.hooks_hash, view.snapshot_len)
        {
            Some(Refusal::ContentMismatch)
        } else if !self.policy.admits(&key) {
            Some(Refusal::NotAllowed)
        } else if self.watchers.len() >= self.policy.max {
            Some(Refusal::Full)
        } else {
            None
        };
        if let Some(reason) = refusal {
            self.send(from, &SpectateMsg::Refused { reason });
            return self.fault(from, SpectateFault::Refused(reason));
        }
        let tick = self.tick;
        self.pending.retain(|p| tick < p.at + CHALLENGE_TICKS);
        let nonce = match self.pending.iter().position(|p| p.addr == *from && p.key == key) {
            // The same request again: the same challenge.
            Some(i) => self.pending[i].nonce,
            None if self.pending.len() >= MAX_PENDING => {
                self.requests_dropped += 1;
                return;
            }
            None => {
                let nonce = self.nonce();
                self.pending.push(Pending { addr: from.clone(), key, nonce, at: tick });
                nonce
            }
        };
        self.send(from, &SpectateMsg::Challenge { nonce });
    }

    fn on_prove(&mut self, from: &A, nonce: [u8; 16], proof: &[u8]) {
        if self.watchers.iter().any(|w| w.addr == *from && w.nonce == nonce) {
            return;
        }
        let Some(i) = self.pending.iter().position(|p| p.addr == *from && p.nonce == nonce) else {
            return self.fault(from, SpectateFault::BadProof);
        };
        let key = self.pending[i].key;
        let good =
            <&[u8; 64]>::try_from(proof).is_ok_and(|s| key.verifies(&prove_message(&nonce), s));
        if !good {
            return self.fault(from, SpectateFault::BadProof);
        }
        self.pending.swap_remove(i);
        // Checked again: others may have been admitted since the challenge.
        if !self.policy.admits(&key) || self.watchers.len() >= self.policy.max {
            let reason = if self.policy.admits(&key) { Refusal::Full } else { Refusal::NotAllowed };
            self.send(from, &SpectateMsg::Refused { reason });
            return self.fault(from, SpectateFault::Refused(reason));
        }
        let tick = self.tick;
        self.watchers.push(Watcher {
            addr: from.clone(),
            nonce,
            phase: Phase::Capturing,
            progress: tick,
            resent: tick,
            spoke: tick,
        });
    }

    /// Confirmed frames (in order, each once): kept for the spectators that need them.
    pub fn feed(&mut self, frames: impl IntoIterator<Item = (Frame, Vec<u8>, Option<u64>)>) {
        if self.watchers.is_empty() {
            return;
        }
        for f in frames {
            if self.frames.back().is_none_or(|(last, ..)| f.0 > *last) {
                self.frames.push_back(f);
            }
        }
    }

    fn drop_watcher(&mut self, i: usize, reason: DropReason, tell: bool) {
        let w = self.watchers.remove(i);
        if tell {
            self.send(&w.addr, &SpectateMsg::End { nonce: w.nonce, reason });
        }
        let spectator = format!("{:?}", w.addr);
        self.events.push(SpectateEvent::Dropped { spectator, reason });
    }

    /// One tick: `captured` is the host's final capture for spectators, if any.
    pub fn tick(&mut self, view: &HostView, captured: Option<(Frame, &[u8], u64)>) {
        self.tick += 1;
        let tick = self.tick;
        let flooded: Vec<(A, u32)> = self
            .counts
            .drain()
            .filter(|(_, n)| *n > MAX_MESSAGES_PER_TICK)
            .map(|(a, n)| (a, n - MAX_MESSAGES_PER_TICK))
            .collect();
        for (a, dropped) in flooded {
            self.fault(&a, SpectateFault::Flood { dropped });
        }
        if self.requests_dropped > 0 {
            let dropped = core::mem::take(&mut self.requests_dropped);
            self.events.push(SpectateEvent::Fault {
                peer: "many".to_owned(),
                fault: SpectateFault::Requests { dropped },
            });
        }
        if let Some((frame, bytes, checksum)) = captured {
            let offer = |nonce| SpectateMsg::Offer {
                nonce,
                frame,
                len: bytes.len() as u32,
                digest: twox_hash::XxHash3_64::oneshot(bytes),
                checksum,
                players: view.players as u16,
                signature: Vec::new(),
            };
            for i in 0..self.watchers.len() {
                if !matches!(self.watchers[i].phase, Phase::Capturing) {
                    continue;
                }
                let signed = sign_host(offer(self.watchers[i].nonce), &self.identity).encode();
                let w = &mut self.watchers[i];
                w.phase = Phase::Transferring {
                    frame,
                    offer: signed.clone(),
                    bytes: bytes.to_vec(),
                    have: 0,
                    held: 0,
                    sent: 0,
                    holes_resent: tick,
                };
                w.progress = tick;
                w.resent = tick;
                let addr = w.addr.clone();
                self.outbox.push((addr.clone(), signed));
                self.events.push(SpectateEvent::Admitted { spectator: format!("{addr:?}"), frame });
            }
        }
        // The frames the slowest spectator still needs, and no more than MAX_BEHIND of them.
        let need = self
            .watchers
            .iter()
            .filter_map(|w| match &w.phase {
                Phase::Capturing => None,
                Phase::Transferring { frame, .. } => Some(*frame),
                Phase::Streaming { acked, .. } => Some(*acked),
            })
            .min();
        if let Some(need) = need {
            while self.frames.front().is_some_and(|(f, ..)| *f < need) {
                self.frames.pop_front();
            }
        }
        let newest = self.frames.back().map(|(f, ..)| *f + 1);
        let mut i = 0;
        while i < self.watchers.len() {
            let w = &self.watchers[i];
            let behind = match &w.phase {
                Phase::Transferring { frame, .. } => newest.map(|n| n.saturating_sub(*frame)),
                Phase::Streaming { acked, .. } => newest.map(|n| n.saturating_sub(*acked)),
                Phase::Capturing => None,
            };
            let stalled = !matches!(w.phase, Phase::Capturing) && tick > w.progress + STALL_TICKS;
            if stalled {
                self.drop_watcher(i, DropReason::Stalled, true);
            } else if behind.is_some_and(|b| b > MAX_BEHIND) {
                self.drop_watcher(i, DropReason::FellBehind, true);
            } else {
                i += 1;
            }
        }
        if self.watchers.is_empty() {
            self.frames.clear();
        }
        for i in 0..self.watchers.len() {
            self.send_to(i, view);
        }
    }

    /// What watcher `i` gets this tick.
    fn send_to(&mut self, i: usize, view: &HostView) {
        let tick = self.tick;
        let identity = &self.identity;
        let frames = &self.frames;
        let w = &mut self.watchers[i];
        let resend = tick.saturating_sub(w.progress) >= RESEND_TICKS
            && tick.saturating_sub(w.resent) >= RESEND_TICKS;
        let mut out: Vec<Vec<u8>> = Vec::new();
        match &mut w.phase {
            Phase::Capturing => {}
            Phase::Transferring { offer, bytes, have, held, sent, holes_resent, .. } => {
                let total = bytes.len().div_ceil(CHUNK_BYTES) as u32;
                if resend {
                    w.resent = tick;
                    *sent = *have;
                    if *have == 0 {
                        out.push(offer.clone());
                    }
                }
                let nonce = w.nonce;
                let end = have.saturating_add(WINDOW).min(total);
                let beyond = (*held != 0).then(|| *have + 32 - held.leading_zeros());
                if let Some(beyond) = beyond
                    && tick >= *holes_resent + HOLE_RESEND_TICKS
                {
                    *holes_resent = tick;
                    for i in (*have..beyond.min(*sent)).filter(|i| missing(*have, *held, *i)) {
                        let c = SpectateMsg::Chunk { nonce, index: i, bytes: chunk(bytes, i) };
                        out.push(c.encode());
                    }
                }
                while *sent < end {
                    let c = SpectateMsg::Chunk { nonce, index: *sent, bytes: chunk(bytes, *sent) };
                    out.push(c.encode());
                    *sent += 1;
                }
                *sent = (*sent).max(*have);
            }
            Phase::Streaming { acked, sent } => {
                if resend {
                    w.resent = tick;
                    *sent = *acked;
                }
                let per = view.players * (view.input_bytes + 1);
                let batch = (CHUNK_BYTES / per.max(1)).clamp(1, usize::from(u16::MAX));
                let end = acked.saturating_add(IN_FLIGHT);
                let first_held = frames.front().map_or(Frame::MAX, |(f, ..)| *f);
                let mut from = (*sent).max(first_held);
                let mut heartbeat = tick >= w.spoke + RESEND_TICKS;
                loop {
                    let start = from.saturating_sub(first_held) as usize;
                    let chunk: Vec<_> = frames
                        .range(start.min(frames.len())..)
                        .take_while(|(f, ..)| *f < end)
                        .take(batch)
                        .collect();
                    if chunk.is_empty() && !heartbeat {
                        break;
                    }
                    heartbeat = false;
                    let first = chunk.first().map_or(*acked, |(f, ..)| *f);
                    let checksum = chunk.first().and_then(|(_, _, c)| *c);
                    let data: Vec<u8> =
                        chunk.iter().flat_map(|(_, d, _)| d.iter().copied()).collect();
                    let msg = SpectateMsg::Inputs {
                        nonce: w.nonce,
                        first,
                        count: chunk.len() as u16,
                        checksum,
                        data,
                        signature: Vec::new(),
                    };
                    out.push(sign_host(msg, identity).encode());
                    let Some((last, ..)) = chunk.last() else { break };
                    from = *last + 1;
                    *sent = from;
                }
            }
        }
        if !out.is_empty() {
            w.spoke = tick;
        }
        let addr = w.addr.clone();
        self.outbox.extend(out.into_iter().map(|m| (addr.clone(), m)));
    }
}

/// What a spectator knows of itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpectatorView {
    /// Its content hash.
    pub content_hash: u64,
    /// Its hooks hash.
    pub hooks_hash: u64,
    /// Its snapshot size.
    pub snapshot_len: u64,
    /// The match's players.
    pub players: usize,
    /// Bytes of one player's input.
    pub input_bytes: usize,
}

struct Incoming {
    frame: Frame,
    len: usize,
    digest: u64,
    checksum: u64,
    chunks: Vec<Option<Vec<u8>>>,
    have: u32,
}

/// What the spectator's program does next ([`SpectatorClient::drain_commands`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpectateCommand {
    /// Load the state before `frame` (checked against `checksum`), then report
    /// ([`SpectatorClient::loaded`]).
    Load {
        /// F.
        frame: Frame,
        /// The state.
        bytes: Vec<u8>,
        /// The offer's checksum.
        checksum: u64,
    },
    /// Step these frames, in order (each: every player's encoded input and status).
    Step(Vec<Vec<u8>>),
}

/// The spectator side of the protocol (see the [module](self)).
pub struct SpectatorClient<A> {
    host: A,
    host_key: PublicIdentity,
    identity: Identity,
    view: SpectatorView,
    tick: u64,
    asked: Option<u64>,
    nonce: Option<[u8; 16]>,
    incoming: Option<Incoming>,
    /// Following: the next frame to step.
    next: Option<Frame>,
    /// Frames that arrived ahead of `next`.
    ahead: BTreeMap<Frame, Vec<u8>>,
    /// The host's checksums of confirmed states, not compared yet.
    sums: BTreeMap<Frame, u64>,
    heard: u64,
    acked: u64,
    ended: bool,
    counts: u32,
    outbox: Vec<(A, Vec<u8>)>,
    events: Vec<SpectateEvent>,
    commands: Vec<SpectateCommand>,
}

impl<A: fmt::Debug> fmt::Debug for SpectatorClient<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpectatorClient")
            .field("host", &self.host)
            .field("next", &self.next)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<A: WireAddress + fmt::Debug> SpectatorClient<A> {
    /// A spectator that asks the host of `ticket` with `identity`.
    pub fn new(ticket: &SpectateTicket<A>, identity: Identity, view: SpectatorView) -> Self {
        SpectatorClient {
            host: ticket.host.clone(),
            host_key: ticket.key,
            identity,
            view,
            tick: 0,
            asked: None,
            nonce: None,
            incoming: None,
            next: None,
            ahead: BTreeMap::new(),
            sums: BTreeMap::new(),
            heard: 0,
            acked: 0,
            ended: false,
            counts: 0,
            outbox: Vec::new(),
            events: Vec::new(),
            commands: Vec::new(),
        }
    }

    /// The messages to send.
    pub fn drain_outbox(&mut self) -> Vec<(A, Vec<u8>)> {
        core::mem::take(&mut self.outbox)
    }

    /// The events since the last call.
    pub fn drain_events(&mut self) -> Vec<SpectateEvent> {
        core::mem::take(&mut self.events)
    }

    /// What to do.
    pub fn drain_commands(&mut self) -> Vec<SpectateCommand> {
        core::mem::take(&mut self.commands)
    }

    /// The host's checksums not compared yet, by frame (the state before it).
    pub fn take_checksums(&mut self, upto: Frame) -> Vec<(Frame, u64)> {
        let later = self.sums.split_off(&upto.saturating_add(1));
        let now = core::mem::replace(&mut self.sums, later);
        now.into_iter().collect()
    }

    /// Whether it follows the match (it loaded the host's state).
    pub fn is_following(&self) -> bool {
        self.next.is_some() && !self.ended
    }

    /// Whether it stopped following.
    pub fn has_ended(&self) -> bool {
        self.ended
    }

    /// The state's bytes received and its size.
    pub fn progress(&self) -> (usize, usize) {
        self.incoming
            .as_ref()
            .map_or((0, 0), |i| (i.chunks.iter().flatten().map(Vec::len).sum(), i.len))
    }

    fn fault(&mut self, fault: SpectateFault) {
        let peer = format!("{:?}", self.host);
        self.events.push(SpectateEvent::Fault { peer, fault });
    }

    fn send(&mut self, msg: &SpectateMsg) {
        self.outbox.push((self.host.clone(), msg.encode()));
    }

    /// A message from `from`: only the host's count.
    pub fn receive(&mut self, from: &A, bytes: &[u8]) {
        if *from != self.host || self.ended {
            return;
        }
        self.counts += 1;
        if self.counts > MAX_MESSAGES_PER_TICK * 4 {
            return;
        }
        let msg = match SpectateMsg::decode(bytes) {
            Ok(m) => m,
            Err(e) => return self.fault(SpectateFault::Decode(e)),
        };
        self.heard = self.tick;
        match msg {
            SpectateMsg::Challenge { nonce } => {
                if self.incoming.is_some() || self.next.is_some() {
                    return;
                }
                self.nonce = Some(nonce);
                let proof = self.identity.sign(&prove_message(&nonce)).to_vec();
                self.send(&SpectateMsg::Prove { nonce, proof });
            }
            SpectateMsg::Refused { reason } => {
                if self.next.is_none() {
                    self.fault(SpectateFault::Refused(reason));
                    self.end(DropReason::Refused(reason));
                }
            }
            ref offer @ SpectateMsg::Offer {
                nonce, frame, len, digest, checksum, players, ..
            } => {
                if self.incoming.as_ref().is_some_and(|i| i.frame == frame) || self.next.is_some() {
                    return;
                }
                let good = Some(nonce) == self.nonce
                    && verify_host(&self.host_key, offer)
                    && u64::from(len) == self.view.snapshot_len
                    && usize::from(players) == self.view.players;
                if !good {
                    return self.fault(SpectateFault::BadOffer);
                }
                let len = len as usize;
                self.incoming = Some(Incoming {
                    frame,
                    len,
                    digest,
                    checksum,
                    chunks: vec![None; len.div_ceil(CHUNK_BYTES)],
                    have: 0,
                });
            }
            SpectateMsg::Chunk { nonce, .. }
            | SpectateMsg::Inputs { nonce, .. }
            | SpectateMsg::End { nonce, .. }
                if Some(nonce) != self.nonce => {}
            SpectateMsg::Chunk { index, bytes, .. } => {
                let Some(inc) = self.incoming.as_mut() else { return };
                let i = index as usize;
                let want = inc.len.saturating_sub(i * CHUNK_BYTES).min(CHUNK_BYTES);
                if i >= inc.chunks.len() || bytes.len() != want {
                    return self.fault(SpectateFault::Unexpected { what: "Chunk" });
                }
                if inc.chunks[i].is_none() {
                    inc.chunks[i] = Some(bytes);
                }
                while (inc.have as usize) < inc.chunks.len()
                    && inc.chunks[inc.have as usize].is_some()
                {
                    inc.have += 1;
                }
            }
            ref inputs @ SpectateMsg::Inputs { first, count, checksum, ref data, .. } => {
                let Some(next) = self.next else { return };
                let per = self.view.players * (self.view.input_bytes + 1);
                if data.len() != usize::from(count) * per || !verify_host(&self.host_key, inputs) {
                    return self.fault(SpectateFault::BadInputs);
                }
                if let Some(sum) = checksum
                    && first >= next.saturating_sub(MAX_BEHIND)
                    && self.sums.len() < 4 * MAX_BEHIND as usize
                {
                    self.sums.insert(first, sum);
                }
                for (k, frame) in data.chunks_exact(per.max(1)).enumerate() {
                    let f = first.saturating_add(k as Frame);
                    if f >= next && f < next.saturating_add(2 * IN_FLIGHT) {
                        self.ahead.entry(f).or_insert_with(|| frame.to_vec());
                    }
                }
            }
            SpectateMsg::End { reason, .. } => self.end(reason),
            other => self.fault(SpectateFault::Unexpected { what: other.kind() }),
        }
    }

    fn end(&mut self, reason: DropReason) {
        if !self.ended {
            self.ended = true;
            self.events.push(SpectateEvent::Ended { reason });
        }
    }

    /// Stops following and tells the host.
    pub fn leave(&mut self) {
        if let Some(nonce) = self.nonce {
            self.send(&SpectateMsg::End { nonce, reason: DropReason::Left });
        }
        self.end(DropReason::Left);
    }

    /// One tick.
    pub fn tick(&mut self) {
        self.tick += 1;
        self.counts = 0;
        let tick = self.tick;
        if self.ended {
            return;
        }
        if let Some(next) = self.next {
            if tick > self.heard + SILENT_TICKS {
                return self.end(DropReason::HostSilent);
            }
            let mut ready = Vec::new();
            let mut n = next;
            while let Some(f) = self.ahead.remove(&n) {
                ready.push(f);
                n += 1;
            }
            let Some(nonce) = self.nonce else { return };
            if !ready.is_empty() || tick >= self.acked + RESEND_TICKS {
                self.acked = tick;
                self.next = Some(n);
                self.send(&SpectateMsg::Ack { nonce, next: n });
            }
            if !ready.is_empty() {
                self.commands.push(SpectateCommand::Step(ready));
            }
            return;
        }
        let Some(inc) = self.incoming.as_mut() else {
            if self.asked.is_none_or(|t| tick >= t + RESEND_TICKS) {
                self.asked = Some(tick);
                let ask = SpectateMsg::Ask {
                    key: self.identity.public(),
                    content_hash: self.view.content_hash,
                    hooks_hash: self.view.hooks_hash,
                    snapshot_len: self.view.snapshot_len as u32,
                };
                self.send(&ask);
            }
            return;
        };
        let Some(nonce) = self.nonce else { return };
        if (inc.have as usize) < inc.chunks.len() {
            let (chunks, held) = (inc.have, held_after(&inc.chunks, inc.have));
            self.send(&SpectateMsg::Have { nonce, chunks, held });
            if tick > self.heard + STALL_TICKS {
                // The host went quiet mid-transfer: ask again.
                self.incoming = None;
                self.asked = None;
            }
            return;
        }
        let bytes: Vec<u8> = inc.chunks.iter().flatten().flatten().copied().collect();
        let (frame, checksum) = (inc.frame, inc.checksum);
        if twox_hash::XxHash3_64::oneshot(&bytes) != inc.digest {
            self.incoming = None;
            self.asked = None;
            return self.fault(SpectateFault::SnapshotDigest);
        }
        self.incoming = None;
        self.commands.push(SpectateCommand::Load { frame, bytes, checksum });
        self.next = Some(frame);
    }

    /// The outcome of a [`SpectateCommand::Load`].
    pub fn loaded(&mut self, result: Result<(), String>) {
        let Some(frame) = self.next else { return };
        match result {
            Ok(()) => {
                self.events.push(SpectateEvent::Started { frame });
                if let Some(nonce) = self.nonce {
                    self.acked = self.tick;
                    self.send(&SpectateMsg::Ack { nonce, next: frame });
                }
            }
            Err(reason) => {
                // Ask again from the start: the host may send a good state next time.
                self.next = None;
                self.ahead.clear();
                self.sums.clear();
                self.asked = None;
                self.nonce = None;
                self.fault(SpectateFault::SnapshotInvalid { reason });
            }
        }
    }
}

/// A spectator that joins a running match and follows it from one member, its host (see the
/// [module](self)): its own world and [`Runner`], stepped with the confirmed frames the host
/// streams. Build it with the world as at the start of the match, call
/// [`LateSpectator::tick`] once per tick.
pub struct LateSpectator<G: Game, T: MatchTransport> {
    /// The spectator's world and runner (record with [`Runner::record`] before its first tick
    /// to have a replay from F).
    pub runner: Runner<G>,
    transport: T,
    client: SpectatorClient<T::Addr>,
    events: Vec<SessionEvent>,
    /// The first frame whose state is not compared with the host's yet.
    compared: Frame,
}

impl<G: Game, T: MatchTransport> fmt::Debug for LateSpectator<G, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LateSpectator").field("runner", &self.runner).finish_non_exhaustive()
    }
}

/// Events a [`LateSpectator`] keeps (the newest).
const MAX_EVENTS: usize = 4096;

impl<G: Game, T: MatchTransport> LateSpectator<G, T> {
    /// A spectator of the match `ticket`'s host plays in, with `identity` (the key the host's
    /// [`SpectatorPolicy`] may list) and `world` built as the players' was at the start.
    pub fn start(
        world: World<G>,
        transport: T,
        ticket: &SpectateTicket<T::Addr>,
        identity: Identity,
    ) -> LateSpectator<G, T> {
        let view = SpectatorView {
            content_hash: world.content().hash(),
            hooks_hash: twox_hash::XxHash3_64::oneshot(world.hooks_signature().as_bytes()),
            snapshot_len: world.snapshot_bytes() as u64,
            players: world.players(),
            input_bytes: core::mem::size_of::<G::Input>(),
        };
        let client = SpectatorClient::new(ticket, identity, view);
        LateSpectator {
            runner: Runner::new(world, 1, 0),
            transport,
            client,
            events: Vec::new(),
            compared: 0,
        }
    }

    /// The events so far (the newest 2,048 to 4,096).
    pub fn events(&self) -> &[SessionEvent] {
        &self.events
    }

    /// Whether it follows the match (it loaded its host's state and has not stopped).
    pub fn is_following(&self) -> bool {
        self.client.is_following()
    }

    /// Whether it stopped following.
    pub fn has_ended(&self) -> bool {
        self.client.has_ended()
    }

    /// The state's bytes received and its size, while it arrives.
    pub fn progress(&self) -> (usize, usize) {
        self.client.progress()
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Stops following and tells the host.
    pub fn leave(&mut self) {
        self.client.leave();
        self.flush();
    }

    fn flush(&mut self) {
        for (to, bytes) in self.client.drain_outbox() {
            self.transport.send_raw(&to, bytes);
        }
        self.events.extend(self.client.drain_events().into_iter().map(SessionEvent::LateSpectator));
        if self.events.len() > MAX_EVENTS {
            self.events.drain(..self.events.len() - MAX_EVENTS / 2);
        }
    }

    /// One tick: the host's messages, the protocol's step, the frames that arrived stepped.
    pub fn tick(
        &mut self,
        mut presenter: Option<&mut dyn Presenter>,
        mut script: impl FnMut(&mut World<G>),
    ) -> Result<Batch, SessionError> {
        for (from, bytes) in self.transport.recv_raw() {
            if is_spectate_message(&bytes) {
                self.client.receive(&from, &bytes);
            }
        }
        self.client.tick();
        let mut batch = Batch { skipped: true, ..Batch::default() };
        let players = self.runner.world().players();
        for c in self.client.drain_commands() {
            match c {
                SpectateCommand::Load { frame, bytes, checksum } => {
                    let result = match self.runner.rebase(frame, &bytes, Vec::new()) {
                        Ok(()) if self.runner.world().checksum() == checksum => Ok(()),
                        Ok(()) => Err(format!(
                            "checksum {:#x}, the offer's {checksum:#x}",
                            self.runner.world().checksum()
                        )),
                        Err(e) => Err(e.to_string()),
                    };
                    if result.is_ok() {
                        self.compared = frame;
                    }
                    self.client.loaded(result);
                }
                SpectateCommand::Step(frames) => {
                    let decoded: Option<Vec<_>> =
                        frames.iter().map(|f| decode_frame::<G::Input>(f, players)).collect();
                    let Some(decoded) = decoded else {
                        self.client.fault(SpectateFault::BadInputs);
                        continue;
                    };
                    let b = self.runner.advance_confirmed(
                        decoded,
                        presenter.as_mut().map(|p| &mut **p as &mut dyn Presenter),
                        &mut script,
                    )?;
                    batch.advanced += b.advanced;
                    batch.skipped = batch.advanced == 0;
                }
            }
        }
        // The host's checksums of states this spectator has confirmed.
        let upto = self.runner.world().next_frame();
        for (frame, host) in self.client.take_checksums(upto) {
            let Some(ours) = self.runner.confirmed_checksums().get(&frame).copied() else {
                continue;
            };
            if frame >= self.compared && ours != host {
                self.client.fault(SpectateFault::ChecksumMismatch { frame, host, ours });
            }
        }
        self.compared = self.compared.max(upto);
        self.flush();
        Ok(batch)
    }
}
