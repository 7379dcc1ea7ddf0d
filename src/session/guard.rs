//! A validating socket layer in front of GGRS, and the survivors' departure agreement.
//!
//! GGRS 0.13 trusts what it receives. Its input decoder indexes and allocates from the packet
//! (one byte `[0x80]` panics, a run length of 2⁴⁰ aborts the process), and its disconnect
//! bookkeeping asserts on frames a peer names (a forged or merely stale "player 2 left at frame
//! F" panics `must load frame in the past` or `cannot load frame outside of prediction window`).
//! Worse, when a player leaves, each survivor disconnects it at the last frame *it* received,
//! so under loss the survivors simulate different inputs from then on (a silent split), or
//! GGRS panics reconciling them.
//!
//! [`GuardedSocket`] wraps any [`NonBlockingSocket`] — the emulated network, UDP, matchbox or a
//! game's own — and hands GGRS only messages it can digest:
//!
//! - the input payload's run-length and delta encoding is decoded here first, with bounds: at
//!   most [`GuardConfig::max_frames_per_message`] frames, each exactly as long as the sender's
//!   players' inputs, each player's input a canonical encoding of the game's input type;
//! - connection statuses name every player once, frames are never negative, acknowledgements
//!   never run ahead of what was sent, a checksum report's frame lies near the session's frame;
//! - a sender's session number (GGRS's 16-bit "magic") is pinned at its first input, so a
//!   process that takes over a departed peer's port is refused;
//! - with the identities peers learnt on the socket ([`Guard::introduce`], done by every plain
//!   session starter) or announced in the handshake ([`Guard::authenticate`], done by every
//!   `*_keyed` starter and by [`LocalMatch`](super::LocalMatch)), every datagram
//!   is sealed with a pairwise key only the two members hold, and one from a keyed address
//!   without a valid authenticator, or replayed, is dropped before anything counts it
//!   ([`GuardStats::unauthenticated`]): an off-path attacker cannot fault, flood or ban a
//!   member, whatever address and session number it uses. What this does and does not protect
//!   against (a dishonest member holds its own key; an attacker on the path during the
//!   handshake) is in `docs/security.md`;
//! - at most [`GuardConfig::max_messages_per_poll`] messages per sender per poll; after
//!   [`GuardConfig::ban_after`] faults a sender is banned (and leaves, below).
//!
//! **Departures are membership changes, agreed as one thing.** GGRS never hears "player X
//! left" from a peer: the guard removes those claims. A member is *out* on this peer when this
//! peer saw it go: it went silent for the runner's departure time, this peer kicked or banned
//! it, or it said itself that it leaves (its own leave message, or GGRS's disconnect request).
//! Never on another member's word alone: when another member says a player is out, this peer
//! only *looks* — it takes the player as out once nothing has come from it for
//! [`GuardConfig::look_ticks`] (one second by default, against ten for an unprompted
//! departure). A player that still sends to this peer stays.
//!
//! The members that are out form this peer's *membership* (an epoch number and the set of
//! members out), and every message of the agreement carries the sender's. Once a member is out,
//! nothing from it is read any more: its input is frozen at what arrived, its reports and relays
//! no longer count. Each survivor reports, for each leaver, the last frame of its input it holds
//! and a digest of that input; survivors that hold more relay the frames to those that hold
//! fewer. A report counts only when its membership is the receiver's own, and a leaver's input
//! is agreed on when every survivor of that membership reports exactly what this peer holds
//! (the same last frame, the same digest). Then the guard hands GGRS the relayed frames and
//! makes it disconnect the leaver's players after exactly that frame (it reports them
//! disconnected there on behalf of every endpoint). Every survivor thus simulates the same
//! inputs, the rollback this causes lies inside the prediction window (no survivor confirmed a
//! frame past its own last frame of the leaver's input), and no frame a survivor confirmed ever
//! changes. Each step is a [`Departure`].
//!
//! Why this holds when players leave together or one after another: a new departure changes
//! the membership, and the reports of the previous one stop counting. Inside one membership, a
//! survivor's input of a leaver only grows by relays from survivors of that membership, so
//! when every one of them reports the same last frame and digest, none of them can ever come to
//! hold more, and every survivor that completes the agreement in that membership completes it
//! at that frame. A survivor that completed it earlier, in a membership with one more member,
//! holds that frame and reports it in the next membership too, so the others reach the same
//! frame. Several leavers are agreed on in the same membership (each its own frame), and the
//! agreements reach GGRS one per tick: GGRS 0.13 keeps a single rollback frame for disconnects,
//! consumed by the next `advance_frame`, so one disconnect per advance always gets its rollback.
//!
//! **Signed inputs.** With keys, every peer signs its own input (see
//! [`SignedInputs`](super::SignedInputs): a hash chain of its frames, one Ed25519 signature per
//! message over the chain's head at its last frame, carried in the sealed datagram), and new
//! input from a remote is passed to GGRS only with a valid signature ([`Fault::BadSignature`]).
//!
//! **Relayed input.** Frames of a leaver this peer received from the leaver itself are
//! authoritative. A frame this peer lacks can only come from another survivor. When the leaver
//! signs its inputs, a relay carries the leaver's signature over the relayed frames and is
//! taken only if it verifies and continues the chain this peer holds; a relay without one is a
//! fault of the relayer (`Shared::verify_relayed`). A signed relay that contradicts a frame this
//! peer holds proves that the leaver signed two inputs for that frame: an equivocation, reported
//! once with both runs ([`Guard::drain_equivocations`]). Without keys, a relayed frame is taken
//! provisionally from the first survivor relaying it, and a relay that contradicts the leaver's
//! own frame is a fault. Either way relayed frames are held back from
//! GGRS until the agreement, and reach the game only if every survivor of the membership
//! reports the same digest. When two survivors hold different unsigned frames, the relayed ones
//! are dropped and their relayers are not taken from again in this departure; an agreement that
//! cannot complete within the departure time ends with the survivors whose reports still differ
//! from this peer's leaving too. A lying member can thus delay a departure or be left behind,
//! never make two survivors carry on with different inputs.
//!
//! **Rejoining** is one more membership change, built beside this agreement in
//! [`rejoin`](super::rejoin): the members agree on a frame F, one sends the confirmed state at
//! F, and every member continues in a fresh GGRS session from F with the rejoiner back (GGRS
//! cannot bring a disconnected player back into a running session).
//!
//! Each refusal is a [`PeerFault`] the game reads from the [`Guard`] handle (the
//! [`Runner`](super::Runner) turns faults and departures into
//! [`SessionEvent`](super::SessionEvent)s).

use core::fmt;
use core::hash::Hash;
use ggrs::{Message, NonBlockingSocket};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use super::evidence::{Equivocation, GENESIS, SignedInputs, chain_step, statement};
use super::identity::{Identity, IdentityError, Link, PublicIdentity};

/// GGRS's frame number type.
type GgrsFrame = i32;
const NULL_FRAME: GgrsFrame = -1;
/// The session number the guard answers a departed remote's synchronisation with
/// ([`Shared::answer_sync`]; any but 0, which GGRS reads as "none yet").
const STAND_IN_MAGIC: u16 = 0x4A47;
/// Paced mode: ticks between resends of an unanswered synchronisation request.
const SYNC_RESEND_TICKS: u64 = 2;

/// The wire layout of a GGRS 0.13 `Message` (its fields are private to GGRS; this mirror has the
/// same serde shape, so a message converts to and from it losslessly).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireMessage {
    pub magic: u16,
    pub body: WireBody,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum WireBody {
    SyncRequest(u32),
    SyncReply(u32),
    Input(WireInput),
    InputAck(GgrsFrame),
    QualityReport { frame_advantage: i16, ping: u128 },
    QualityReply(u128),
    ChecksumReport { checksum: u128, frame: GgrsFrame },
    KeepAlive,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireInput {
    pub peer_connect_status: Vec<WireStatus>,
    pub disconnect_requested: bool,
    pub start_frame: GgrsFrame,
    pub ack_frame: GgrsFrame,
    pub bytes: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireStatus {
    pub disconnected: bool,
    pub last_frame: GgrsFrame,
}

impl WireMessage {
    /// The mirror of a GGRS message (`None` only if GGRS's layout is not the one this crate was
    /// written against; a test pins it).
    pub(crate) fn from_ggrs(m: &Message) -> Option<WireMessage> {
        let bytes = bincode1::serialize(m).ok()?;
        bincode1::deserialize(&bytes).ok()
    }

    /// The GGRS message for this mirror.
    pub(crate) fn to_ggrs(&self) -> Option<Message> {
        let bytes = bincode1::serialize(self).ok()?;
        bincode1::deserialize(&bytes).ok()
    }
}

/// Builds a GGRS message from raw bytes in GGRS's UDP encoding (bincode 1), as a peer would send
/// it: the entry point for tests and fuzzing that play a hostile peer. `None` when the bytes are
/// not a message at all (GGRS's own UDP socket drops those too).
pub fn message_from_bytes(bytes: &[u8]) -> Option<Message> {
    // Decode into the mirror first: it bounds every length by the bytes present.
    let wire: WireMessage = bincode1::DefaultOptions::new()
        .with_fixint_encoding()
        .allow_trailing_bytes()
        .with_limit(bytes.len() as u64 + 64)
        .deserialize(bytes)
        .ok()?;
    wire.to_ggrs()
}

use bincode1::Options as _;

/// The bytes GGRS's UDP socket would send for a message (bincode 1).
pub fn message_to_bytes(m: &Message) -> Vec<u8> {
    bincode1::serialize(m).unwrap_or_default()
}

/// Builders of GGRS messages with any field values, as a hostile peer would send them (for the
/// hostile-peer tests and the `session` fuzz target): not part of the API a game uses.
#[cfg(feature = "forge")]
#[doc(hidden)]
pub mod forge;
#[cfg(not(feature = "forge"))]
#[allow(
    dead_code,
    reason = "without the `forge` feature only the builders the guard itself uses are called"
)]
mod forge;

/// What a peer sent that the guard refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// The message does not have GGRS's layout.
    Undecodable,
    /// The input payload's run-length encoding is truncated or malformed.
    BadInputEncoding {
        /// What is wrong.
        what: &'static str,
    },
    /// The input payload holds more frames than allowed.
    TooManyFrames {
        /// The limit.
        limit: usize,
    },
    /// One frame's input has the wrong length for the sender's players.
    InputSize {
        /// Bytes expected per frame (players × the input's encoded size).
        expected: usize,
        /// Bytes received.
        got: usize,
    },
    /// A player's input is not a valid encoding of the game's input type.
    InputValue {
        /// The frame.
        frame: i32,
    },
    /// An input message names a different number of players than the session has.
    ConnectStatusCount {
        /// Players in the session.
        expected: usize,
        /// Statuses in the message.
        got: usize,
    },
    /// A frame field is out of range (negative, or far from the session's frame).
    FrameOutOfRange {
        /// Which field.
        field: &'static str,
        /// Its value.
        frame: i32,
    },
    /// The first input from a sender does not start at the beginning of the match.
    InputGap {
        /// The frame the message starts at.
        start: i32,
    },
    /// The sender acknowledged input this peer never sent it (GGRS would stop resending
    /// input the sender does not have).
    AckAhead {
        /// The frame acknowledged.
        ack: i32,
        /// The last frame this peer sent to it.
        sent: i32,
    },
    /// Input from an address that speaks for no player (a spectator: GGRS asserts on it).
    UnexpectedInput,
    /// The sender asked to be disconnected: it is treated as leaving (the departure rule, not
    /// GGRS's own disconnect, decides the frame its input stops at).
    DisconnectRequest,
    /// A message of the guards' own departure protocol that is malformed or names a player
    /// the sender cannot speak for.
    BadDepartureMessage {
        /// What is wrong.
        what: &'static str,
    },
    /// More messages than the sender's fair share ([`GuardConfig::flood_rate`]) or than one
    /// poll takes; the rest were dropped unread.
    Flood {
        /// Messages dropped.
        dropped: usize,
    },
    /// The sender sent input for frames further ahead of this peer's session than any honest
    /// peer can be (GGRS's input queue holds 128 frames and asserts beyond them).
    InputAhead {
        /// The last frame of the message.
        frame: i32,
        /// The newest frame an honest sender could have sent.
        limit: i32,
    },
    /// The sender reached [`GuardConfig::ban_after`] faults: nothing more from it is delivered.
    Banned,
    /// New input from a member that signs its inputs, without a valid signature of its
    /// identity over them (see [`SignedInputs`]): not passed to GGRS.
    BadSignature {
        /// The last frame of the message.
        frame: i32,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Undecodable => f.write_str("sent a packet that is not a GGRS message"),
            Fault::BadInputEncoding { what } => write!(f, "sent an input payload that {what}"),
            Fault::TooManyFrames { limit } => {
                write!(f, "sent an input payload with more than {limit} frames")
            }
            Fault::InputSize { expected, got } => {
                write!(f, "sent a {got}-byte frame of input where {expected} bytes are expected")
            }
            Fault::InputValue { frame } => {
                write!(f, "sent an input for frame {frame} that is not a valid input value")
            }
            Fault::ConnectStatusCount { expected, got } => {
                write!(f, "sent {got} connection statuses for a {expected}-player session")
            }
            Fault::FrameOutOfRange { field, frame } => {
                write!(f, "sent {field} = {frame}, out of range")
            }
            Fault::InputGap { start } => {
                write!(f, "sent its first input at frame {start} instead of the match's start")
            }
            Fault::AckAhead { ack, sent } => write!(
                f,
                "acknowledged input up to frame {ack}, but this peer has only sent it up to {sent}"
            ),
            Fault::UnexpectedInput => f.write_str("sent input although it controls no player"),
            Fault::DisconnectRequest => {
                f.write_str("asked to be disconnected; it is treated as leaving the match")
            }
            Fault::BadDepartureMessage { what } => {
                write!(f, "sent a departure message that {what}")
            }
            Fault::Flood { dropped } => {
                write!(f, "flooded: {dropped} messages beyond the per-poll limit were dropped")
            }
            Fault::InputAhead { frame, limit } => write!(
                f,
                "sent input up to frame {frame}, past frame {limit}, the newest an honest peer can \
                 have sent"
            ),
            Fault::Banned => f.write_str("is banned after repeated faults"),
            Fault::BadSignature { frame } => {
                write!(f, "sent input up to frame {frame} without a valid signature")
            }
        }
    }
}

/// A fault and the sender it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerFault<A> {
    /// The sender's address.
    pub peer: A,
    /// What it sent.
    pub fault: Fault,
}

/// A member caught sending two different signed inputs for its players at one frame, and the
/// proof ([`Guard::drain_equivocations`]; the [`Runner`](super::Runner) reports it as
/// [`SessionEvent::Equivocation`](super::SessionEvent::Equivocation)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerEquivocation<A> {
    /// The member's address.
    pub peer: A,
    /// The two signed inputs.
    pub evidence: Equivocation,
}

/// A step of a departure, as the guard reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Departure<A> {
    /// This peer stopped listening to `peer` (it went silent, was kicked or banned here, said it
    /// leaves, or another member said it left and it was silent here too) and is agreeing with
    /// the other survivors on where its input ends.
    Leaving {
        /// The leaver's address.
        peer: A,
        /// Its players.
        players: Vec<usize>,
    },
    /// The survivors agreed: the leaver's players have their real input through `last_frame`
    /// on every survivor, and the disconnected input (the default input, with
    /// `InputStatus::Disconnected`) from the frame after it.
    Left {
        /// The leaver's address.
        peer: A,
        /// Its players.
        players: Vec<usize>,
        /// The last frame of their real input (`-1`: none).
        last_frame: i32,
    },
}

/// Limits and behaviour of a [`GuardedSocket`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GuardConfig {
    /// Players in the session.
    pub players: usize,
    /// The session's prediction window.
    pub max_prediction: usize,
    /// Frames one input message may carry (GGRS resends unacknowledged inputs; 128 is GGRS's
    /// own input queue length).
    pub max_frames_per_message: usize,
    /// Messages accepted from one sender per poll, at most.
    pub max_messages_per_poll: usize,
    /// A sender's fair share: each poll adds this many messages to its allowance, which holds
    /// at most [`GuardConfig::flood_burst`]. GGRS sends a handful of messages a frame; a sender
    /// past its allowance has its messages dropped unread and is faulted (`Flood`).
    pub flood_rate: u32,
    /// The most messages a sender's allowance holds (what arrives at once after a network
    /// hiccup of a second or more).
    pub flood_burst: u32,
    /// Faults after which a sender is banned (0: never).
    pub ban_after: u32,
    /// Faults kept for [`Guard::drain_faults`] before the oldest are dropped (counts stay exact).
    pub fault_log: usize,
    /// Ticks a finished departure keeps announcing its frame to the other survivors (so one
    /// that lost the announcement still learns it).
    pub departure_linger: u32,
    /// Paced sending, for networks driven by a virtual clock ([`LocalMatch`](super::LocalMatch)
    /// turns it on): GGRS's wall-clock traffic (keep-alives, quality reports, input resends
    /// every 200 ms of real time) is dropped, and the guard resends the newest input message
    /// every [`GuardConfig::resend_ticks`] ticks without new input instead. A seeded match then
    /// gives the same packets at any machine load.
    pub paced: bool,
    /// In paced mode, ticks without new input before the newest input message is sent again.
    pub resend_ticks: u32,
    /// The guard fronts a spectator session (its remote is the host, which speaks for every
    /// player): connection statuses pass unchanged and there are no departures.
    pub spectating: bool,
    /// The largest frame advantage a peer's time-sync report may claim, either way. GGRS turns
    /// the claims into wait recommendations; a claim beyond this is clamped to it. A peer can
    /// be at most the prediction window ahead before GGRS stops it, plus its share of the round
    /// trip: the default is the prediction window plus 8 frames.
    pub max_frame_advantage: i16,
    /// When another member says a player is out, this peer looks for itself: it takes the
    /// player as leaving once nothing has come from it for this many ticks (a peer waiting on
    /// others still sends: GGRS's keep-alives every 200 ms, or in paced mode the guard's every
    /// [`GuardConfig::resend_ticks`]). A member's word alone never drops a player that still
    /// sends (0: another member's word is never looked into; the runner's departure time
    /// alone decides).
    pub look_ticks: u32,
}

impl GuardConfig {
    /// Defaults for a session of `players` with a prediction window of `max_prediction`.
    pub fn new(players: usize, max_prediction: usize) -> GuardConfig {
        GuardConfig {
            players,
            max_prediction,
            max_frames_per_message: 128,
            max_messages_per_poll: 1024,
            flood_rate: 32,
            flood_burst: 256,
            ban_after: 64,
            fault_log: 256,
            departure_linger: 600,
            paced: false,
            resend_ticks: 6,
            spectating: false,
            max_frame_advantage: i16::try_from(max_prediction.saturating_add(8))
                .unwrap_or(i16::MAX),
            look_ticks: 60,
        }
    }

    /// Paced sending on or off (see [`GuardConfig::paced`]).
    pub fn with_paced(mut self, paced: bool) -> GuardConfig {
        self.paced = paced;
        self
    }

    /// For a spectator session (see [`GuardConfig::spectating`]).
    pub fn for_spectator(mut self) -> GuardConfig {
        self.spectating = true;
        self
    }
}

/// Counters of a guard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuardStats {
    /// Messages passed to GGRS.
    pub passed: u64,
    /// Messages dropped (faults, bans, unknown senders, floods, departed senders).
    pub dropped: u64,
    /// Messages passed with a connection status rewritten (a "player left" claim removed).
    pub rewritten: u64,
    /// Faults seen.
    pub faults: u64,
    /// Messages from addresses that are not part of the session.
    pub unknown_sender: u64,
    /// Messages of the departure protocol sent.
    pub departure_sent: u64,
    /// Messages the guard handed to GGRS on a leaver's or survivor's behalf (relayed input,
    /// the agreed disconnect).
    pub injected: u64,
    /// Outgoing messages dropped in paced mode (GGRS's wall-clock traffic).
    pub paced_dropped: u64,
    /// Input messages resent in paced mode (a keep-alive when every input was acknowledged).
    pub paced_resent: u64,
    /// Messages dropped because nothing ties them to the member whose address they came from
    /// (another session number than the sender's, or a guard message before any input). A
    /// source address can be forged by anyone: they count toward nobody's faults.
    pub unattributed: u64,
    /// Input messages from a spectator's host whose frames its buffer cannot hold yet: cut to
    /// what fits, or dropped when nothing does (the host sends them again).
    pub deferred: u64,
    /// Time-sync messages the network cannot explain: a quality reply to a report this peer
    /// never sent (dropped), or a frame advantage beyond [`GuardConfig::max_frame_advantage`]
    /// (clamped).
    pub implausible: u64,
    /// Datagrams dropped from an address this peer holds a key for ([`Guard::authenticate`])
    /// without a valid authenticator, or replayed: not the member's, whatever their source
    /// address says. They count toward nobody's faults, floods or bans.
    pub unauthenticated: u64,
}

/// The start frame that marks a datagram sealed with its sender's pairwise key (the whole GGRS
/// message, a counter and a tag, inside an input message's payload; see [`Guard::authenticate`]).
const SEALED_FRAME: GgrsFrame = -0x5345;

/// The start frame that marks a sealed input message carrying its sender's signature: the
/// payload is the GGRS message, the frame the signature covers and the signature (64 bytes),
/// then the counter and the tag.
const SIGNED_FRAME: GgrsFrame = -0x5347;

/// The signature a datagram carries: the frame it covers and the Ed25519 signature.
type InputSignature = (GgrsFrame, [u8; 64]);

/// Bytes a signed datagram's signature trailer takes (the frame and the signature).
const SIGNATURE_TRAILER: usize = 4 + 64;

/// The start frame that marks a message of the guards' own protocol (negative: GGRS itself
/// never sends it and drops such input unread).
const GUARD_FRAME: GgrsFrame = -0x4752;

/// The start frame that marks an introduction ([`Guard::introduce`]): a peer's public identity,
/// its nonce for the receiver and the nonces it heard from the receiver's address, unsealed
/// (the peers hold no key for each other yet).
const HELLO_FRAME: GgrsFrame = -0x4845;

/// Bytes of an introduction's nonce.
const NONCE_LEN: usize = 16;

/// Nonces heard from an address that an introduction echoes (the newest).
const ECHOES_KEPT: usize = 4;

/// GGRS messages held back for a remote whose identity this peer does not hold yet (the newest;
/// GGRS sends its synchronisation requests again anyway).
const HELD_BACK: usize = 32;

/// The start frame of an injected status-only input message: its decoding reference is never
/// present, so GGRS reads the statuses and nothing else.
const STATUS_ONLY_FRAME: GgrsFrame = GgrsFrame::MAX;

/// The newest input frame an honest remote can have sent to a peer whose session is at
/// `current` and which has sent the remote its own input through `sent`: the remote's prediction
/// window and up to 32 frames of input delay past what it has from this peer — and never more
/// than GGRS's input queue (128 frames) holds past this peer's oldest unconfirmed frame.
fn ahead_limit(current: GgrsFrame, sent: GgrsFrame, max_pred: GgrsFrame) -> GgrsFrame {
    let honest = current.max(sent).saturating_add(max_pred).saturating_add(32);
    let queue = current.saturating_sub(max_pred).saturating_add(120);
    honest.min(queue)
}

/// Frames of the host's input a GGRS spectator holds (`SPECTATOR_BUFFER_SIZE` in GGRS 0.13).
const SPECTATOR_BUFFER: GgrsFrame = 60;

/// Frames one relay message carries.
const RELAY_CHUNK: usize = 32;

/// Frames of decoded input kept per sender (the relay's source and the delta references).
const INPUT_HISTORY: GgrsFrame = 256;

/// The oldest frame of input (with its chain head and signature) kept once frame `last` is
/// held: a remote's and this peer's own alike.
fn history_start(last: GgrsFrame) -> GgrsFrame {
    last - INPUT_HISTORY
}

/// Frames a departure digest covers (the newest, through the frame reported).
const DIGEST_WINDOW: GgrsFrame = 64;

/// A membership: who is out of the match, as its members see it. Every report of the departure
/// agreement carries the sender's; a report counts only when it equals the receiver's own, so
/// the members agreeing on a change are the same members on every survivor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Key {
    /// Membership changes so far: each departure is one. (A rejoin would be one more: the same
    /// set of members out can then recur, under a later epoch.)
    epoch: u32,
    /// The first player of every address that is out, ascending.
    out: Vec<u16>,
}

impl Key {
    fn of(out: Vec<u16>) -> Key {
        Key { epoch: u32::try_from(out.len()).unwrap_or(u32::MAX), out }
    }
}

/// The guards' departure protocol (inside a GGRS input message, see [`GUARD_FRAME`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum GuardMsg {
    /// "In membership `key`, the address whose first player is `player` is out; I hold its
    /// input through `have`, and `digest` is the digest of that input (see [`digest_frames`])."
    /// Sent by that address itself: "I am leaving".
    Depart { key: Key, player: u16, have: GgrsFrame, digest: u64 },
    /// The leaver's input frames from `start` on, for a survivor that has fewer; with the
    /// leaver's signature over them when it signs its inputs.
    Relay {
        key: Key,
        player: u16,
        start: GgrsFrame,
        frames: Vec<Vec<u8>>,
        proof: Option<RelayProof>,
    },
}

/// A relay of a leaver's signed run of input.
fn relay_of(key: Key, player: u16, run: SignedInputs) -> GuardMsg {
    let proof = Some(RelayProof { before: run.before, signature: run.signature });
    GuardMsg::Relay { key, player, start: run.first, frames: run.inputs, proof }
}

/// What makes relayed frames a [`SignedInputs`]: the leaver's chain head before the first and
/// its signature at the last.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct RelayProof {
    before: [u8; 32],
    #[serde(with = "super::evidence::signature_serde")]
    signature: [u8; 64],
}

/// The digest of a leaver's input through frame `have`: XXH3-64 of the frame numbers and
/// inputs of the frames held among the newest [`DIGEST_WINDOW`] (0 when `have` is `-1`).
fn digest_frames<'a>(have: GgrsFrame, frames: impl Iterator<Item = (GgrsFrame, &'a [u8])>) -> u64 {
    use core::hash::Hasher as _;
    if have < 0 {
        return 0;
    }
    let from = have.saturating_sub(DIGEST_WINDOW - 1);
    let mut h = twox_hash::XxHash3_64::with_seed(0);
    for (f, bytes) in frames.filter(|(f, _)| (from..=have).contains(f)) {
        h.write(&f.to_le_bytes());
        h.write(bytes);
    }
    h.finish()
}

/// What checking a relayed input of a leaver establishes ([`Shared::verify_relayed`]).
enum Provenance {
    /// Nothing proves or disproves that the leaver sent it: the leaver announced no identity,
    /// so the relay is taken provisionally and the agreement's digests make sure no two
    /// survivors carry on with different ones.
    Unproven,
    /// The leaver signed it: the run of relayed frames, checked against its identity.
    Proven(SignedInputs),
}

struct Remote<A> {
    addr: A,
    /// Player handles behind this address, in ascending order (GGRS packs their inputs so).
    handles: Vec<usize>,
    magic: Option<u16>,
    /// The session number seen during synchronisation (used only to speak for this address to
    /// GGRS when no input ever came from it).
    sync_magic: Option<u16>,
    /// Decoded inputs by frame (the delta-decoding references and the relay's source).
    inputs: BTreeMap<GgrsFrame, Vec<u8>>,
    last_frame: GgrsFrame,
    /// GGRS's accumulated view of this sender's connection statuses (what it received, with
    /// the disconnect claims removed, plus the agreed departures the guard injected).
    statuses: Vec<WireStatus>,
    /// The last frame of input this peer sent to it.
    sent_frame: GgrsFrame,
    faults: u32,
    banned: bool,
    /// Nothing more is received from or sent to it (it is leaving or left).
    cut: bool,
    /// Another member said it is out: this peer looks for itself (see
    /// [`GuardConfig::look_ticks`]).
    claimed: bool,
    /// The tick a message from it was last accepted.
    heard: u64,
    /// GGRS has disconnected it (an agreed departure was injected).
    gone: bool,
    /// The session number this peer's GGRS uses toward it (one per endpoint).
    own_magic: Option<u16>,
    /// Paced mode: the newest input message sent to it and the tick it was sent.
    newest_input: Option<Message>,
    newest_tick: u64,
    /// The newest synchronisation request GGRS sent it and the tick it was sent: resent in
    /// paced mode until GGRS has synchronised with it, and answered on its behalf once the
    /// survivors agreed it left before GGRS synchronised with it (see [`Shared::answer_sync`]).
    sync_request: Option<(Message, u64)>,
    /// GGRS reported it synchronised ([`Guard::mark_synchronised`]).
    synchronised: bool,
    /// Paced mode: the input frames this peer sent to it, by frame (what a resend re-encodes).
    own_frames: BTreeMap<GgrsFrame, Vec<u8>>,
    /// The newest of this peer's frames it acknowledged.
    acked: GgrsFrame,
    /// The ping stamps of the last quality reports this peer sent it (a reply must echo one).
    pings: VecDeque<u128>,
    /// Messages it may still send before it floods (see [`GuardConfig::flood_rate`]).
    allowance: u32,
    /// Its announced identity and the pairwise keys with it ([`Guard::authenticate`]): with
    /// them, only sealed datagrams are read from its address and every datagram to it is sealed.
    identity: Option<PublicIdentity>,
    link: Option<Link>,
    /// Learning its identity on the socket ([`Guard::introduce`]); `None` when it was given
    /// ([`Guard::authenticate`]) or the session has no keys.
    intro: Option<Intro>,
    /// The first frame of input it sent (its input chain starts there).
    first_frame: Option<GgrsFrame>,
    /// With an identity: the head of its input chain at each frame held, and its signatures
    /// (at the last frame of each message that brought new frames).
    chain: BTreeMap<GgrsFrame, [u8; 32]>,
    sigs: BTreeMap<GgrsFrame, [u8; 64]>,
    /// Its equivocation was reported (once).
    equivocated: bool,
}

impl<A> Remote<A> {
    /// Checks the header of an input message from this remote (in a match of `players`) and
    /// takes the acknowledgement it carries.
    fn check_input_header(&mut self, input: &WireInput, players: usize) -> Result<(), Fault> {
        if self.handles.is_empty() {
            return Err(Fault::UnexpectedInput);
        }
        if input.disconnect_requested {
            return Err(Fault::DisconnectRequest);
        }
        if input.ack_frame < NULL_FRAME {
            return Err(Fault::FrameOutOfRange { field: "ack_frame", frame: input.ack_frame });
        }
        if input.ack_frame > self.sent_frame {
            return Err(Fault::AckAhead { ack: input.ack_frame, sent: self.sent_frame });
        }
        self.acked = self.acked.max(input.ack_frame);
        if input.start_frame < 0 {
            return Err(Fault::FrameOutOfRange { field: "start_frame", frame: input.start_frame });
        }
        if input.peer_connect_status.len() != players {
            return Err(Fault::ConnectStatusCount {
                expected: players,
                got: input.peer_connect_status.len(),
            });
        }
        for s in &input.peer_connect_status {
            if s.last_frame < NULL_FRAME {
                return Err(Fault::FrameOutOfRange {
                    field: "connection status last_frame",
                    frame: s.last_frame,
                });
            }
        }
        Ok(())
    }

    /// Verifies the signature over this remote's input chain through `last`, the last of
    /// `frames` (from `start`), and extends its chain with the new ones.
    fn take_signed(
        &mut self,
        start: GgrsFrame,
        frames: &[Vec<u8>],
        last: GgrsFrame,
        signature: Option<InputSignature>,
    ) -> Result<(), Fault> {
        // New frames: the sender's signature over its chain through the message's last frame
        // must verify (see `evidence`).
        let bad = Fault::BadSignature { frame: last };
        let Some((_, sig)) = signature.filter(|(f, _)| *f == last) else {
            return Err(bad);
        };
        let mut head = if self.last_frame == NULL_FRAME {
            GENESIS
        } else {
            *self.chain.get(&self.last_frame).ok_or(bad.clone())?
        };
        let mut heads = Vec::new();
        for (k, bytes) in frames.iter().enumerate() {
            let f = start.saturating_add(k as GgrsFrame);
            if f > self.last_frame {
                head = chain_step(&head, f, bytes);
                heads.push((f, head));
            }
        }
        let verified = self.identity.is_some_and(|id| id.verifies(&statement(last, &head), &sig));
        if !verified {
            return Err(bad);
        }
        if self.first_frame.is_none() {
            self.first_frame = heads.first().map(|(f, _)| *f);
        }
        self.chain.extend(heads);
        self.sigs.insert(last, sig);
        Ok(())
    }

    /// Keeps the new ones of `frames` (from `start`) and forgets what is older than the input
    /// history.
    fn keep_frames(&mut self, start: GgrsFrame, frames: Vec<Vec<u8>>) {
        for (k, bytes) in frames.into_iter().enumerate() {
            let f = start.saturating_add(k as GgrsFrame);
            if f > self.last_frame {
                self.inputs.insert(f, bytes);
                self.last_frame = f;
            }
        }
        self.forget_old();
    }

    /// Forgets the inputs, chain heads and signatures older than the input history.
    fn forget_old(&mut self) {
        let keep = history_start(self.last_frame);
        self.inputs.retain(|k, _| *k >= keep);
        self.chain.retain(|k, _| *k >= keep);
        self.sigs.retain(|k, _| *k >= keep);
    }

    /// Takes the connection statuses of an input message into GGRS's view of this remote;
    /// `true` when a departure claim was removed from the message.
    fn take_statuses(&mut self, input: &mut WireInput, spectating: bool) -> bool {
        // GGRS learns of a departure only from the guard's agreement, never from one peer's
        // claim (a claim at the wrong frame makes GGRS roll back outside its window, or split
        // the survivors).
        let mut rewritten = false;
        for (h, s) in input.peer_connect_status.iter_mut().enumerate() {
            let acc = &mut self.statuses[h];
            if s.disconnected && !spectating && !acc.disconnected {
                s.disconnected = false;
                rewritten = true;
            }
            acc.last_frame = acc.last_frame.max(s.last_frame);
            if spectating {
                acc.disconnected |= s.disconnected;
            }
        }
        rewritten
    }
}

/// How this peer learns a remote's identity on the socket ([`Guard::introduce`]).
struct Intro {
    /// The nonce this peer sends it: the remote's identity is taken from an introduction that
    /// echoes it, which only a process receiving at the remote's address can send.
    ours: [u8; NONCE_LEN],
    /// The nonces heard from its address until then (the newest last), echoed back.
    heard: VecDeque<[u8; NONCE_LEN]>,
    /// Its nonce, once its identity is taken: the only one echoed from then on.
    theirs: Option<[u8; NONCE_LEN]>,
    /// It introduced itself again since this peer last answered (it does not hold this peer's
    /// identity yet): answer once more.
    answer: bool,
    /// GGRS's messages to it, held back until its identity is taken (then sealed and sent).
    held: VecDeque<Message>,
    /// Datagrams from its address that are not introductions, received before its identity
    /// is taken (a sealed message of the remote can overtake the introduction that makes it
    /// known): opened once it is, or counted unauthenticated when pushed out or never opened.
    early: VecDeque<Message>,
}

/// An introduction on the wire: `version ‖ agree key ‖ verify key ‖ nonce ‖ count ‖ echoes`.
#[derive(Debug, PartialEq, Eq)]
struct Hello {
    identity: PublicIdentity,
    nonce: [u8; NONCE_LEN],
    echoes: Vec<[u8; NONCE_LEN]>,
}

impl Hello {
    const VERSION: u8 = 1;

    fn to_message(&self) -> Message {
        let mut bytes = Vec::with_capacity(2 + 64 + NONCE_LEN * (1 + self.echoes.len()));
        bytes.push(Hello::VERSION);
        bytes.extend_from_slice(&self.identity.agree);
        bytes.extend_from_slice(&self.identity.verify);
        bytes.extend_from_slice(&self.nonce);
        bytes.push(self.echoes.len() as u8);
        for e in &self.echoes {
            bytes.extend_from_slice(e);
        }
        let body = WireBody::Input(WireInput {
            peer_connect_status: Vec::new(),
            disconnect_requested: false,
            start_frame: HELLO_FRAME,
            ack_frame: NULL_FRAME,
            bytes,
        });
        WireMessage { magic: 0, body }.to_ggrs().unwrap_or_else(forge::unreachable_message)
    }

    /// The introduction a message carries: `None` for any other message or a malformed one.
    fn of(msg: &Message) -> Option<Hello> {
        let wire = WireMessage::from_ggrs(msg)?;
        let WireBody::Input(input) = wire.body else { return None };
        Hello::from_wire(&input)
    }

    fn from_wire(input: &WireInput) -> Option<Hello> {
        if input.start_frame != HELLO_FRAME || !input.peer_connect_status.is_empty() {
            return None;
        }
        let b = &input.bytes;
        let fixed = 1 + 64 + NONCE_LEN + 1;
        if b.len() < fixed || b[0] != Hello::VERSION {
            return None;
        }
        let count = usize::from(b[fixed - 1]);
        if count > ECHOES_KEPT || b.len() != fixed + count * NONCE_LEN {
            return None;
        }
        let part = |at: usize| -> [u8; NONCE_LEN] {
            let mut n = [0u8; NONCE_LEN];
            n.copy_from_slice(&b[at..at + NONCE_LEN]);
            n
        };
        let mut identity = PublicIdentity { agree: [0; 32], verify: [0; 32] };
        identity.agree.copy_from_slice(&b[1..33]);
        identity.verify.copy_from_slice(&b[33..65]);
        Some(Hello {
            identity,
            nonce: part(65),
            echoes: (0..count).map(|k| part(fixed + k * NONCE_LEN)).collect(),
        })
    }
}

/// Quality reports remembered per remote (GGRS sends one every 200 ms).
const PINGS_KEPT: usize = 16;

struct Leave {
    /// Index of the leaver in `remotes`.
    remote: usize,
    /// The other survivors' reports in this peer's current membership, by remote index: the
    /// last frame of the leaver's input each holds, and its digest.
    haves: Vec<Option<(GgrsFrame, u64)>>,
    /// The leaver's frames relayed by survivors past its own last frame here, and who relayed
    /// each: provisional (unproven) until the agreement, handed to GGRS only then.
    relayed: BTreeMap<GgrsFrame, (Vec<u8>, usize)>,
    /// Survivors whose relayed frames contradicted another survivor's report: not taken from
    /// again in this departure.
    distrusted: Vec<bool>,
    /// For a leaver that signs its inputs: the chain heads of the relayed frames, and its
    /// signatures among them (every relayed frame is proven, see [`Provenance::Proven`]).
    relayed_chain: BTreeMap<GgrsFrame, [u8; 32]>,
    relayed_sigs: BTreeMap<GgrsFrame, [u8; 64]>,
    /// Survivors whose report contradicts the leaver's signed input this peer holds, with the
    /// reported frame the proof went out for (see [`Shared::pump`]).
    shown: Vec<Option<GgrsFrame>>,
    to_show: Vec<(usize, GgrsFrame)>,
    agreed: Option<GgrsFrame>,
    /// GGRS was told to disconnect the leaver (at most one departure a tick reaches it).
    disconnected: bool,
    linger: u32,
}

struct Shared<A> {
    config: GuardConfig,
    current: GgrsFrame,
    tick: u64,
    pumped: u64,
    remotes: Vec<Remote<A>>,
    leaves: Vec<Leave>,
    faults: VecDeque<PeerFault<A>>,
    departures: VecDeque<Departure<A>>,
    /// Messages to hand to GGRS with the next received batch.
    inject: Vec<(A, Message)>,
    /// Messages to send on the wrapped socket at the next opportunity.
    outbox: Vec<(A, Message)>,
    stats: GuardStats,
    input_size: usize,
    check_input: fn(&[u8]) -> bool,
    /// Departures begun so far (the runner restarts its departure wait on a new one).
    leaves_begun: u64,
    /// This peer's identity ([`Guard::authenticate`]): it signs this peer's input to every
    /// remote player holding a key.
    signer: Option<Identity>,
    /// This peer's own input frames, their chain heads and the signatures made so far.
    own_inputs: BTreeMap<GgrsFrame, Vec<u8>>,
    own_chain: BTreeMap<GgrsFrame, [u8; 32]>,
    own_sigs: BTreeMap<GgrsFrame, [u8; 64]>,
    /// Equivocations caught, for [`Guard::drain_equivocations`].
    equivocations: VecDeque<PeerEquivocation<A>>,
}

impl<A: Clone + Eq> Shared<A> {
    fn index(&self, addr: &A) -> Option<usize> {
        self.remotes.iter().position(|r| r.addr == *addr)
    }

    fn fault(&mut self, i: usize, fault: Fault) {
        self.stats.faults += 1;
        let ban_after = self.config.ban_after;
        let r = &mut self.remotes[i];
        r.faults = r.faults.saturating_add(1);
        let banned = ban_after > 0 && r.faults >= ban_after && !r.banned;
        if banned {
            r.banned = true;
        }
        let peer = r.addr.clone();
        self.push_fault(PeerFault { peer: peer.clone(), fault });
        if banned {
            self.push_fault(PeerFault { peer, fault: Fault::Banned });
            // A banned player is leaving: the survivors agree on where its input ends.
            self.begin_leave(i);
        }
    }

    fn push_fault(&mut self, f: PeerFault<A>) {
        if self.faults.len() >= self.config.fault_log.max(1) {
            self.faults.pop_front();
        }
        self.faults.push_back(f);
    }

    /// How far past the session's frame a survivor's claim to hold a leaver's input may lie:
    /// the survivor is at most a prediction window ahead of this peer, the leaver at most a
    /// prediction window and its input delay (up to 32 frames) ahead of the survivor. A larger
    /// claim can never be relayed and would only hold the agreement up.
    fn frame_window(&self) -> GgrsFrame {
        let p = GgrsFrame::try_from(self.config.max_prediction).unwrap_or(GgrsFrame::MAX / 8);
        p.saturating_mul(2).saturating_add(40)
    }

    fn frame_len(&self, i: usize) -> usize {
        self.input_size * self.remotes[i].handles.len()
    }

    /// Survivors: remotes that speak for players, are not cut off and are not disconnected.
    fn survivors(&self) -> impl Iterator<Item = usize> + '_ {
        self.remotes
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.cut && !r.gone && !r.handles.is_empty())
            .map(|(i, _)| i)
    }

    /// Starts the departure of remote `i`: nothing more is taken from it, and its input is
    /// frozen at what arrived so far.
    fn begin_leave(&mut self, i: usize) {
        if self.config.spectating || self.remotes[i].handles.is_empty() {
            self.remotes[i].cut = true;
            return;
        }
        if self.leaves.iter().any(|l| l.remote == i) || self.remotes[i].gone {
            return;
        }
        self.remotes[i].cut = true;
        let n = self.remotes.len();
        self.membership_changed();
        self.leaves.push(Leave {
            remote: i,
            haves: vec![None; n],
            relayed: BTreeMap::new(),
            relayed_chain: BTreeMap::new(),
            relayed_sigs: BTreeMap::new(),
            shown: vec![None; n],
            to_show: Vec::new(),
            distrusted: vec![false; n],
            agreed: None,
            disconnected: false,
            linger: 0,
        });
        self.leaves_begun += 1;
        let r = &self.remotes[i];
        self.departures
            .push_back(Departure::Leaving { peer: r.addr.clone(), players: r.handles.clone() });
    }

    /// The remote whose first player is `player`.
    fn by_first_player(&self, player: u16) -> Option<usize> {
        self.remotes.iter().position(|r| r.handles.first() == Some(&usize::from(player)))
    }

    /// This peer's membership: the addresses speaking for players that are out (leaving or
    /// gone).
    fn key(&self) -> Key {
        let mut out: Vec<u16> = self
            .remotes
            .iter()
            .filter(|r| r.cut || r.gone)
            .filter_map(|r| r.handles.first().and_then(|h| u16::try_from(*h).ok()))
            .collect();
        out.sort_unstable();
        Key::of(out)
    }

    /// The membership changed: reports made in the previous one no longer count (a survivor
    /// that counted a report of a member now out, and one that did not, would agree on
    /// different frames).
    fn membership_changed(&mut self) {
        for l in self.leaves.iter_mut().filter(|l| l.agreed.is_none()) {
            l.haves.iter_mut().for_each(|h| *h = None);
        }
    }

    /// A report's or relay's membership, checked: `Ok(true)` when it is this peer's own.
    fn same_key(&self, key: &Key) -> Result<bool, Fault> {
        let ordered = key.out.windows(2).all(|w| w[0] < w[1]);
        if key.out.len() > self.config.players
            || !ordered
            || key.out.iter().any(|p| usize::from(*p) >= self.config.players)
        {
            return Err(Fault::BadDepartureMessage { what: "has a malformed membership" });
        }
        Ok(*key == self.key())
    }

    /// Another member says the players in `key` are out: this peer looks into each it still
    /// hears (see [`GuardConfig::look_ticks`]).
    fn claimed_out(&mut self, key: &Key) {
        for p in &key.out {
            if let Some(i) = self.by_first_player(*p)
                && !self.remotes[i].cut
            {
                self.remotes[i].claimed = true;
            }
        }
    }

    /// The last frame of leaver `li`'s input this peer holds (its own and relayed frames).
    fn held(&self, li: usize) -> GgrsFrame {
        let l = &self.leaves[li];
        l.relayed.keys().next_back().copied().unwrap_or(self.remotes[l.remote].last_frame)
    }

    /// The digest of leaver `li`'s input through `have`, from what this peer holds.
    fn digest(&self, li: usize, have: GgrsFrame) -> u64 {
        let l = &self.leaves[li];
        let own = self.remotes[l.remote].inputs.range(0..).map(|(f, b)| (*f, b.as_slice()));
        let relayed = l.relayed.iter().map(|(f, (b, _))| (*f, b.as_slice()));
        digest_frames(have, own.chain(relayed))
    }

    /// Leaver `li`'s relayed frames contradict a survivor: they are dropped, and their
    /// relayers are not taken from again in this departure (which survivor lied cannot be
    /// told without signed inputs; the agreement completes once the survivors hold the same).
    fn contradicted(&mut self, li: usize) {
        let l = &mut self.leaves[li];
        for (_, from) in l.relayed.values() {
            l.distrusted[*from] = true;
        }
        l.relayed.clear();
    }

    /// What proves a relay of leaver `x`'s input frames from `start` on (see [`Provenance`]):
    /// a leaver that announced an identity signs its inputs, and a relay of them is taken only
    /// with its signature over them; one without, or with a signature that does not verify, is
    /// a fault of the relayer (an honest relayer passes on what the leaver signed).
    fn verify_relayed(
        &self,
        x: usize,
        start: GgrsFrame,
        frames: &[Vec<u8>],
        proof: Option<RelayProof>,
    ) -> Result<Provenance, Fault> {
        let Some(identity) = self.remotes[x].identity.filter(|_| self.signs(x)) else {
            return Ok(Provenance::Unproven);
        };
        let unsigned = Fault::BadDepartureMessage { what: "relays input its player did not sign" };
        let Some(proof) = proof else { return Err(unsigned) };
        let run = SignedInputs {
            first: start,
            before: proof.before,
            inputs: frames.to_vec(),
            signature: proof.signature,
        };
        if run.verifies(&identity) { Ok(Provenance::Proven(run)) } else { Err(unsigned) }
    }

    /// Whether remote `x` signs its inputs: it announced an identity (a spectator's host,
    /// which speaks for every player, is not checked so).
    fn signs(&self, x: usize) -> bool {
        !self.config.spectating && self.remotes[x].identity.is_some()
    }

    /// The head of remote `x`'s input chain at frame `f`: from its own frames, or from those
    /// relayed in departure `li`.
    fn chain_at(&self, x: usize, li: Option<usize>, f: GgrsFrame) -> Option<[u8; 32]> {
        li.and_then(|li| self.leaves[li].relayed_chain.get(&f))
            .or_else(|| self.remotes[x].chain.get(&f))
            .copied()
    }

    /// The head of remote `x`'s input chain before frame `f`.
    fn chain_before(&self, x: usize, li: Option<usize>, f: GgrsFrame) -> Option<[u8; 32]> {
        if self.remotes[x].first_frame == Some(f) {
            return Some(GENESIS);
        }
        self.chain_at(x, li, f.checked_sub(1)?)
    }

    /// Remote `x`'s input at frame `f` as this peer holds it (with departure `li`'s relays).
    fn input_of(&self, x: usize, li: Option<usize>, f: GgrsFrame) -> Option<&[u8]> {
        match li {
            Some(li) => self.frame_held(li, f),
            None => self.remotes[x].inputs.get(&f).map(Vec::as_slice).filter(|b| !b.is_empty()),
        }
    }

    /// Remote `x`'s signed input from frame `from` through its first signature at `through`
    /// or later, as this peer holds it (with departure `li`'s relays).
    fn segment(
        &self,
        x: usize,
        li: Option<usize>,
        from: GgrsFrame,
        through: GgrsFrame,
    ) -> Option<SignedInputs> {
        let before = self.chain_before(x, li, from)?;
        let sig_at = |f: GgrsFrame| {
            li.and_then(|li| self.leaves[li].relayed_sigs.get(&f))
                .or_else(|| self.remotes[x].sigs.get(&f))
                .copied()
        };
        let mut inputs = Vec::new();
        let mut f = from;
        while inputs.len() < super::evidence::MAX_SIGNED_FRAMES {
            inputs.push(self.input_of(x, li, f)?.to_vec());
            if f >= through
                && let Some(signature) = sig_at(f)
            {
                return Some(SignedInputs { first: from, before, inputs, signature });
            }
            f = f.checked_add(1)?;
        }
        None
    }

    /// Remote `x` signed two different inputs for frame `frame`: reported once.
    fn equivocation(&mut self, x: usize, frame: GgrsFrame, one: SignedInputs, other: SignedInputs) {
        let r = &mut self.remotes[x];
        let Some(identity) = r.identity else { return };
        if r.equivocated {
            return;
        }
        r.equivocated = true;
        let evidence = Equivocation { players: r.handles.clone(), identity, frame, one, other };
        let peer = r.addr.clone();
        self.equivocations.push_back(PeerEquivocation { peer, evidence });
    }

    /// A proven relay (leaver `li`'s own signed input) from survivor `from`: frames that
    /// contradict what this peer holds of the leaver are an equivocation (both runs are
    /// signed); new frames that continue the chain this peer holds are taken.
    fn take_proven(&mut self, li: usize, from: usize, run: SignedInputs) {
        let x = self.leaves[li].remote;
        let held = self.held(li);
        let Some(last) = run.last() else { return };
        let mut head = run.before;
        let mut heads = Vec::with_capacity(run.inputs.len());
        for (k, input) in run.inputs.iter().enumerate() {
            let f = run.first.saturating_add(k as GgrsFrame);
            head = chain_step(&head, f, input);
            heads.push(head);
            if f > held {
                continue;
            }
            match self.frame_held(li, f) {
                Some(mine) if mine != input.as_slice() => {
                    if let Some(own) = self.segment(x, Some(li), f, f) {
                        self.equivocation(x, f, own, run);
                    }
                    return;
                }
                Some(_) => {}
                None => return,
            }
        }
        if last <= held {
            return;
        }
        // The run must continue the chain this peer holds (the same head at its last frame).
        let linked = if held == NULL_FRAME {
            run.before == GENESIS
        } else if run.first > held.saturating_add(1) {
            false
        } else {
            let mine = self.chain_at(x, Some(li), held);
            let theirs = match usize::try_from(held - run.first) {
                Ok(k) => heads.get(k).copied(),
                Err(_) => Some(run.before), // starts right after the last frame held
            };
            mine.is_some() && mine == theirs
        };
        if !linked {
            return;
        }
        if held == NULL_FRAME && self.remotes[x].first_frame.is_none() {
            self.remotes[x].first_frame = Some(run.first);
        }
        let l = &mut self.leaves[li];
        for (k, (input, head)) in run.inputs.into_iter().zip(heads).enumerate() {
            let f = run.first.saturating_add(k as GgrsFrame);
            if f > held {
                l.relayed.insert(f, (input, from));
                l.relayed_chain.insert(f, head);
            }
        }
        l.relayed_sigs.insert(last, run.signature);
    }

    /// Once per tick: a player another member said is out and silent here for
    /// [`GuardConfig::look_ticks`] is leaving by this peer's own observation.
    fn look(&mut self) {
        let look = u64::from(self.config.look_ticks);
        if look == 0 {
            return;
        }
        for i in 0..self.remotes.len() {
            let r = &self.remotes[i];
            if r.claimed && !r.cut && !r.gone && self.tick.saturating_sub(r.heard) >= look {
                self.begin_leave(i);
            }
        }
    }

    /// A message of the guards' protocol from remote `from`.
    fn on_guard_msg(&mut self, from: usize, bytes: &[u8]) -> Result<(), Fault> {
        use bincode1::Options as _;
        let msg: GuardMsg = bincode1::DefaultOptions::new()
            .with_fixint_encoding()
            .with_limit(bytes.len() as u64 + 16)
            .deserialize(bytes)
            .map_err(|_| Fault::BadDepartureMessage { what: "cannot be decoded" })?;
        let player = match &msg {
            GuardMsg::Depart { player, .. } | GuardMsg::Relay { player, .. } => *player,
        };
        let Some(x) = self.by_first_player(player) else {
            return Err(Fault::BadDepartureMessage { what: "names no remote player" });
        };
        if x == from {
            // A player announcing its own departure: the leaver's own word.
            self.begin_leave(x);
            return Ok(());
        }
        match msg {
            GuardMsg::Depart { key, have, digest, .. } => {
                self.on_depart(from, x, &key, have, digest)
            }
            GuardMsg::Relay { key, start, frames, proof, .. } => {
                self.on_relay(from, x, &key, start, frames, proof)
            }
        }
    }

    /// A survivor's report (remote `from`) of the input it holds of leaver `x`: through frame
    /// `have`, with `digest`.
    fn on_depart(
        &mut self,
        from: usize,
        x: usize,
        key: &Key,
        have: GgrsFrame,
        digest: u64,
    ) -> Result<(), Fault> {
        if have < NULL_FRAME {
            return Err(Fault::BadDepartureMessage { what: "has a negative frame" });
        }
        // No survivor can hold input far past this peer's own frame (they wait on each
        // other): a larger claim is a lie that would stall the agreement.
        if have > self.current.saturating_add(self.frame_window()) {
            return Err(Fault::BadDepartureMessage { what: "claims input far ahead" });
        }
        let same = self.same_key(key)?;
        // Another member's word never makes a player leave here: this peer looks.
        if !self.remotes[x].cut {
            self.remotes[x].claimed = true;
        }
        self.claimed_out(key);
        let Some(li) = self.leaves.iter().position(|l| l.remote == x) else {
            return Ok(());
        };
        if !same || self.leaves[li].agreed.is_some() {
            return Ok(());
        }
        let held = self.held(li);
        let h = &mut self.leaves[li].haves[from];
        if h.is_some_and(|(old, _)| old > have) {
            return Ok(()); // an older report, overtaken
        }
        *h = Some((have, digest));
        // A report of frames this peer holds must match them.
        if have >= 0 && have <= held && digest != self.digest(li, have) {
            if self.signs(x) {
                // What this peer holds of the leaver is signed by it: the reporter
                // holds other input the leaver signed (it equivocated; the proof goes
                // to the reporter, see `pump`) or lies (and is left behind when the
                // agreement runs out of time).
                let l = &mut self.leaves[li];
                if l.shown[from] != Some(have) {
                    l.shown[from] = Some(have);
                    l.to_show.push((from, have));
                }
                return Ok(());
            }
            if have <= self.remotes[x].last_frame {
                // Frames the leaver sent this peer itself: the report is false.
                return Err(Fault::BadDepartureMessage {
                    what: "reports input that differs from the leaver's own",
                });
            }
            self.contradicted(li);
        }
        Ok(())
    }

    /// Leaver `x`'s input frames from `start` on, relayed by remote `from`: checked, then taken
    /// where they bring a frame this peer lacks (proven by the leaver's signature, or
    /// provisionally).
    fn on_relay(
        &mut self,
        from: usize,
        x: usize,
        key: &Key,
        start: GgrsFrame,
        frames: Vec<Vec<u8>>,
        proof: Option<RelayProof>,
    ) -> Result<(), Fault> {
        let last = self.check_relay(x, start, &frames, proof.is_some())?;
        if !self.same_key(key)? || start < 0 {
            return Ok(());
        }
        let Some(li) = self.leaves.iter().position(|l| l.remote == x) else {
            return Ok(());
        };
        if self.leaves[li].agreed.is_some() {
            return Ok(());
        }
        if self.signs(x) {
            // Checking a signature costs more than anything else here: only a relay
            // that brings a frame this peer lacks, or contradicts one it holds, is.
            let held = self.held(li);
            let contradicts = frames.iter().enumerate().any(|(k, input)| {
                let f = start.saturating_add(k as GgrsFrame);
                f <= held && self.frame_held(li, f).is_some_and(|mine| mine != input)
            });
            if last <= held.saturating_add(1) && !contradicts {
                return Ok(());
            }
        }
        let run = match self.verify_relayed(x, start, &frames, proof)? {
            Provenance::Proven(run) => {
                self.take_proven(li, from, run);
                return Ok(());
            }
            Provenance::Unproven => frames,
        };
        self.take_unproven(li, x, from, start, run)
    }

    /// Whether relayed frames of leaver `x` from `start` are well-formed and plausible (with a
    /// proof if `x` signs its inputs): the frame after the last one they carry, or the fault.
    fn check_relay(
        &self,
        x: usize,
        start: GgrsFrame,
        frames: &[Vec<u8>],
        proven: bool,
    ) -> Result<GgrsFrame, Fault> {
        let frame_len = self.frame_len(x);
        // A signed relay runs to a frame the leaver signed: up to a message's frames.
        let most = if self.signs(x) {
            self.config.max_frames_per_message.max(RELAY_CHUNK)
        } else {
            RELAY_CHUNK
        };
        if frames.is_empty() || frames.len() > most || frames.iter().any(|f| f.len() != frame_len) {
            return Err(Fault::BadDepartureMessage { what: "carries malformed frames" });
        }
        // A player's first input follows the input delay, near the match's start (as
        // for its own first input message, `Fault::InputGap`): GGRS would fill every
        // frame before a far start.
        let first_limit = self.config.max_prediction as GgrsFrame + 64;
        if self.remotes[x].last_frame == NULL_FRAME && start > first_limit {
            return Err(Fault::BadDepartureMessage { what: "relays a first frame far ahead" });
        }
        // Like a claim, no relayed frame lies far past this peer's own frame: the relayed
        // frames reach GGRS at the agreement, and its input queue holds 128 frames.
        let last = start.saturating_add(frames.len() as GgrsFrame);
        if last > self.current.saturating_add(self.frame_window()) {
            return Err(Fault::BadDepartureMessage { what: "relays input far ahead" });
        }
        let check = self.check_input;
        if self.input_size > 0 && !frames.iter().all(|f| f.chunks(self.input_size).all(check)) {
            return Err(Fault::BadDepartureMessage { what: "carries invalid inputs" });
        }
        if !proven && self.signs(x) {
            // An honest relayer passes on the leaver's signature with its frames.
            return Err(Fault::BadDepartureMessage {
                what: "relays input its player did not sign",
            });
        }
        Ok(last)
    }

    /// Takes relayed frames of leaver `x` (leave `li`) from remote `from` that nothing proves:
    /// each must match what `x` sent this peer itself; past that, only the next frame this peer
    /// lacks is taken, provisionally, until the agreement's digests settle it.
    fn take_unproven(
        &mut self,
        li: usize,
        x: usize,
        from: usize,
        start: GgrsFrame,
        run: Vec<Vec<u8>>,
    ) -> Result<(), Fault> {
        let own = self.remotes[x].last_frame;
        for (k, input) in run.into_iter().enumerate() {
            let f = start.saturating_add(k as GgrsFrame);
            if f <= own {
                // A frame the leaver sent this peer itself: the relay must match it.
                match self.remotes[x].inputs.get(&f) {
                    Some(mine) if !mine.is_empty() && *mine != input => {
                        return Err(Fault::BadDepartureMessage {
                            what: "relays input that differs from the leaver's own",
                        });
                    }
                    _ => continue,
                }
            }
            if let Some((mine, _)) = self.leaves[li].relayed.get(&f) {
                // Another relayer's frame came first; which one is the leaver's cannot
                // be told from here: the reports' digests settle it.
                if *mine != input {
                    return Ok(());
                }
                continue;
            }
            // The next frame this peer lacks (with none at all, the leaver's first).
            let held = self.held(li);
            let next = held == NULL_FRAME || f == held.saturating_add(1);
            if !next || self.leaves[li].distrusted[from] {
                break;
            }
            // Unproven: provisional until the agreement's digests settle it.
            self.leaves[li].relayed.insert(f, (input, from));
        }
        Ok(())
    }

    /// Hands relayed frames of remote `x` to GGRS as an input message from `x`.
    fn deliver_relayed(&mut self, x: usize, start: GgrsFrame, frames: Vec<Vec<u8>>) {
        let r = &mut self.remotes[x];
        let Some(magic) = r.magic.or(r.sync_magic) else { return };
        let reference = match r.inputs.get(&r.last_frame) {
            Some(b) if !b.is_empty() => b.clone(),
            _ => vec![0u8; self.input_size * r.handles.len()],
        };
        let bytes = forge::encode_inputs(&reference, &frames);
        for (k, f) in frames.into_iter().enumerate() {
            let frame = start.saturating_add(k as GgrsFrame);
            r.inputs.insert(frame, f);
            r.last_frame = frame;
        }
        r.forget_old();
        let body = WireBody::Input(WireInput {
            peer_connect_status: r.statuses.clone(),
            disconnect_requested: false,
            start_frame: start,
            ack_frame: NULL_FRAME,
            bytes,
        });
        if let Some(m) = (WireMessage { magic, body }).to_ggrs() {
            self.inject.push((r.addr.clone(), m));
            self.stats.injected += 1;
        }
    }

    /// Once per tick: paced resends, departure announcements and relays, and agreements.
    fn pump(&mut self) {
        if self.pumped == self.tick {
            return;
        }
        self.pumped = self.tick;
        if self.config.paced {
            self.resend_paced();
        }
        self.look();
        let survivors: Vec<usize> = self.survivors().collect();
        let key = self.key();
        let mut finished = Vec::new();
        // GGRS keeps one rollback frame for disconnects, and every disconnect it learns of in one
        // `advance_frame` overwrites it: two departures reaching it together would roll back for
        // only one of them, and the survivors would split. One agreed departure reaches GGRS per
        // tick; the next waits for the following tick.
        let mut injected = false;
        for li in 0..self.leaves.len() {
            if self.pump_leave(li, &survivors, &key, &mut injected) {
                finished.push(li);
            }
        }
        for li in finished.into_iter().rev() {
            self.leaves.remove(li);
        }
    }

    /// Paced mode, once per tick: the synchronisation requests and newest input messages (or
    /// keep-alives) due again.
    fn resend_paced(&mut self) {
        let every = u64::from(self.config.resend_ticks.max(1));
        for r in &mut self.remotes {
            if r.cut || r.gone {
                continue;
            }
            // A lost synchronisation request is asked again on this clock, not after GGRS's
            // wall-clock retry (its reply answers the same request, which GGRS still holds),
            // and more often than an input: a session takes five round trips to start, and
            // a rejoin's new session is waited for only a departure time.
            if !r.synchronised
                && let Some((m, at)) = &mut r.sync_request
                && self.tick >= *at + SYNC_RESEND_TICKS
            {
                *at = self.tick;
                self.outbox.push((r.addr.clone(), m.clone()));
                self.stats.paced_resent += 1;
            }
            if let Some(m) = &r.newest_input
                && self.tick >= r.newest_tick + every
            {
                r.newest_tick = self.tick;
                // Every input acknowledged: a keep-alive instead, so a peer that waits on
                // others is still heard (see `GuardConfig::look_ticks`).
                let keep_alive = || {
                    let magic = r.own_magic?;
                    WireMessage { magic, body: WireBody::KeepAlive }.to_ggrs()
                };
                if let Some(m) = rebased_resend(r, m).or_else(keep_alive) {
                    self.outbox.push((r.addr.clone(), m));
                    self.stats.paced_resent += 1;
                }
            }
        }
    }

    /// One tick of leaver `li`'s departure: reports and relays to the `survivors`, proofs for
    /// survivors whose report contradicts signed input, and the agreement and its injection into
    /// GGRS (at most one a tick: `injected`). `true` once the departure is finished.
    fn pump_leave(
        &mut self,
        li: usize,
        survivors: &[usize],
        key: &Key,
        injected: &mut bool,
    ) -> bool {
        let x = self.leaves[li].remote;
        let held = self.held(li);
        let have = self.leaves[li].agreed.unwrap_or(held);
        let digest = self.digest(li, have);
        // Report, and relay what a survivor lacks.
        for &s in survivors {
            self.report_departure(s, li, key, have, digest);
        }
        self.show_signed(li, key);
        if self.leaves[li].agreed.is_some() && !self.in_sync(x) {
            self.answer_sync(x);
        }
        let in_sync = self.in_sync(x);
        let l = &mut self.leaves[li];
        if let Some(q) = l.agreed {
            // GGRS rolls back to the frame after `q`: it must not be the frame about to be
            // simulated (`must load frame in the past`). The relayed frames reached GGRS
            // with the agreement, so it moves on.
            if !l.disconnected && !*injected && in_sync && self.current != q.saturating_add(1) {
                l.disconnected = true;
                self.inject_disconnect(x, q);
                *injected = true;
            }
            let l = &mut self.leaves[li];
            l.linger += 1;
            return l.linger >= self.config.departure_linger && l.disconnected;
        }
        // Agreement: every survivor of this membership reports the very input this peer
        // holds (the same last frame, the same digest). A survivor holding more relays it;
        // one holding less is relayed to; nobody can come to hold more later (a member's
        // input is no longer read once it is out, and relays come from survivors only).
        if survivors.iter().any(|&s| l.haves[s] != Some((held, digest))) {
            return false;
        }
        self.agree(li, held, injected);
        false
    }

    /// Leaver `li`'s departure is agreed at frame `held`: the relayed frames and their proofs
    /// are taken, and GGRS is told to disconnect the leaver unless another departure reached it
    /// this tick (`injected`).
    fn agree(&mut self, li: usize, held: GgrsFrame, injected: &mut bool) {
        let x = self.leaves[li].remote;
        self.leaves[li].agreed = Some(held);
        let chain = core::mem::take(&mut self.leaves[li].relayed_chain);
        let sigs = core::mem::take(&mut self.leaves[li].relayed_sigs);
        self.remotes[x].chain.extend(chain);
        self.remotes[x].sigs.extend(sigs);
        let relayed = core::mem::take(&mut self.leaves[li].relayed);
        if let Some(&start) = relayed.keys().next() {
            let frames: Vec<Vec<u8>> = relayed.into_values().map(|(f, _)| f).collect();
            self.deliver_relayed(x, start, frames);
        }
        if !self.in_sync(x) {
            self.answer_sync(x);
        }
        if !*injected && self.in_sync(x) && self.current != held.saturating_add(1) {
            self.leaves[li].disconnected = true;
            self.inject_disconnect(x, held);
            *injected = true;
        }
    }

    /// Reports to survivor `s` the input this peer holds of leaver `li` (through `have`, with
    /// `digest`), and relays what `s` reported it lacks.
    fn report_departure(&mut self, s: usize, li: usize, key: &Key, have: GgrsFrame, digest: u64) {
        let x = self.leaves[li].remote;
        let player = self.remotes[x].handles[0] as u16;
        let depart = GuardMsg::Depart { key: key.clone(), player, have, digest };
        self.send_guard(s, &depart);
        if let Some((theirs, _)) = self.leaves[li].haves[s]
            && theirs < have
        {
            // From the frame after theirs, or the leaver's first input if they have none.
            let from = if theirs == NULL_FRAME {
                let first_own = self.remotes[x].inputs.range(0..).next().map(|(f, _)| *f);
                let first_relayed = self.leaves[li].relayed.keys().next().copied();
                first_own.or(first_relayed).unwrap_or(0)
            } else {
                theirs + 1
            };
            if self.signs(x) {
                // The frames through the leaver's first signature at or after a chunk.
                let through = have.min(from.saturating_add(RELAY_CHUNK as GgrsFrame - 1));
                if let Some(run) = self.segment(x, Some(li), from, through) {
                    self.send_guard(s, &relay_of(key.clone(), player, run));
                }
            } else {
                let frames: Vec<Vec<u8>> = (from..=have)
                    .take(RELAY_CHUNK)
                    .map_while(|f| self.frame_held(li, f).map(<[u8]>::to_vec))
                    .collect();
                if !frames.is_empty() {
                    let relay = GuardMsg::Relay {
                        key: key.clone(),
                        player,
                        start: from,
                        frames,
                        proof: None,
                    };
                    self.send_guard(s, &relay);
                }
            }
        }
    }

    /// A survivor that reported other input of a signing leaver `li` than this peer holds gets
    /// this peer's signed input over the frames its report covers: if the leaver signed both,
    /// the survivor has the proof that it equivocated.
    fn show_signed(&mut self, li: usize, key: &Key) {
        let x = self.leaves[li].remote;
        let player = self.remotes[x].handles[0] as u16;
        for (s, reported) in core::mem::take(&mut self.leaves[li].to_show) {
            let first = self.remotes[x].first_frame.unwrap_or(0);
            let from = reported.saturating_sub(DIGEST_WINDOW - 1).max(first);
            if let Some(run) = self.segment(x, Some(li), from, reported) {
                self.send_guard(s, &relay_of(key.clone(), player, run));
            }
        }
    }

    /// Frame `f` of leaver `li`'s input, if this peer holds it.
    fn frame_held(&self, li: usize, f: GgrsFrame) -> Option<&[u8]> {
        let l = &self.leaves[li];
        l.relayed
            .get(&f)
            .map(|(b, _)| b.as_slice())
            .or_else(|| self.remotes[l.remote].inputs.get(&f).map(Vec::as_slice))
            .filter(|b| !b.is_empty())
    }

    fn send_guard(&mut self, to: usize, msg: &GuardMsg) {
        let Some(magic) = self.remotes[to].own_magic else { return };
        let Ok(bytes) = bincode1::serialize(msg) else { return };
        let body = WireBody::Input(WireInput {
            peer_connect_status: Vec::new(),
            disconnect_requested: false,
            start_frame: GUARD_FRAME,
            ack_frame: NULL_FRAME,
            bytes,
        });
        if let Some(m) = (WireMessage { magic, body }).to_ggrs() {
            self.outbox.push((self.remotes[to].addr.clone(), m));
            self.stats.departure_sent += 1;
        }
    }

    /// Whether GGRS has synchronised with remote `x` (every endpoint has once the session
    /// played a frame).
    fn in_sync(&self, x: usize) -> bool {
        self.current > 0 || self.remotes[x].synchronised
    }

    /// Answers GGRS's synchronisation request to remote `x` on its behalf. Only for a remote the
    /// survivors agreed has left, before GGRS synchronised with it (it was lost as a session
    /// started): GGRS 0.13 cannot disconnect a player before the session's first frame, and
    /// would wait for it forever. Once synchronised, the session plays its first frame and the
    /// agreed departure reaches GGRS the ordinary way. One answer per tick; GGRS asks again
    /// at once until its handshake is complete.
    fn answer_sync(&mut self, x: usize) {
        let r = &mut self.remotes[x];
        let Some((request, _)) = &r.sync_request else { return };
        let Some(WireBody::SyncRequest(n)) = WireMessage::from_ggrs(request).map(|w| w.body) else {
            return;
        };
        let magic = *r.sync_magic.get_or_insert(STAND_IN_MAGIC);
        if let Some(m) = (WireMessage { magic, body: WireBody::SyncReply(n) }).to_ggrs() {
            self.inject.push((r.addr.clone(), m));
            self.stats.injected += 1;
        }
    }

    /// Makes GGRS disconnect remote `x`'s players after frame `q`: every endpoint GGRS still
    /// runs reports them disconnected at `q` (GGRS disconnects at the least frame reported,
    /// and every report it holds is at most `q` for a survivor).
    fn inject_disconnect(&mut self, x: usize, q: GgrsFrame) {
        let handles = self.remotes[x].handles.clone();

        for i in 0..self.remotes.len() {
            let r = &mut self.remotes[i];
            if r.gone || r.handles.is_empty() {
                continue;
            }
            let Some(magic) = r.magic.or(r.sync_magic) else { continue };
            for &h in &handles {
                if let Some(s) = r.statuses.get_mut(h) {
                    s.disconnected = true;
                    s.last_frame = s.last_frame.max(q);
                }
            }
            let body = WireBody::Input(WireInput {
                peer_connect_status: r.statuses.clone(),
                disconnect_requested: false,
                start_frame: STATUS_ONLY_FRAME,
                ack_frame: NULL_FRAME,
                bytes: Vec::new(),
            });
            if let Some(m) = (WireMessage { magic, body }).to_ggrs() {
                self.inject.push((r.addr.clone(), m));
                self.stats.injected += 1;
            }
        }
        self.remotes[x].gone = true;
        self.departures.push_back(Departure::Left {
            peer: self.remotes[x].addr.clone(),
            players: handles,
            last_frame: q,
        });
    }
}

/// The handle to a [`GuardedSocket`]'s state: faults, departures, the session frame it checks
/// against. Cheap to clone.
pub struct Guard<A> {
    shared: Arc<Mutex<Shared<A>>>,
}

impl<A> Clone for Guard<A> {
    fn clone(&self) -> Self {
        Guard { shared: self.shared.clone() }
    }
}

impl<A> fmt::Debug for Guard<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Guard")
    }
}

fn lock<A>(m: &Mutex<Shared<A>>) -> MutexGuard<'_, Shared<A>> {
    // Every mutation leaves the state consistent; a panic elsewhere does not poison it.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<A: Clone + Eq> Guard<A> {
    /// Starts a tick: the session's current frame (connection-status checks and the
    /// departure agreement are judged against it). The [`Runner`](super::Runner) calls it
    /// before every advance; the guard's paced resends and departure messages go out once per
    /// tick.
    pub fn begin_tick(&self, frame: i32) {
        let mut s = lock(&self.shared);
        s.current = frame;
        s.tick += 1;
    }

    /// Faults since the last call, oldest first.
    pub fn drain_faults(&self) -> Vec<PeerFault<A>> {
        lock(&self.shared).faults.drain(..).collect()
    }

    /// Departure steps since the last call, oldest first.
    pub fn drain_departures(&self) -> Vec<Departure<A>> {
        lock(&self.shared).departures.drain(..).collect()
    }

    /// Authenticates every datagram to and from the given remotes: `local` is this peer's
    /// per-match identity, `remotes` each remote address with the identity it announced in the
    /// session handshake. From then on every datagram to such a remote carries an authenticator
    /// made with the pairwise key only it and this peer can derive, and a datagram from its
    /// address without a valid one (or a replayed one) is dropped silently
    /// ([`GuardStats::unauthenticated`]): it counts toward nobody's faults or ban. Call it before
    /// the session's first message (the session starters do).
    ///
    /// Fails, changing nothing, with the addresses that are not remotes of this guard or whose
    /// identity yields no key (a low-order X25519 key).
    pub fn authenticate(
        &self,
        local: &Identity,
        remotes: impl IntoIterator<Item = (A, PublicIdentity)>,
    ) -> Result<(), Vec<A>> {
        self.authenticate_on(local, remotes, 0)
    }

    /// [`Guard::authenticate`] with the keys of session channel `channel` (a session a rejoin
    /// started: see [`rejoin`](super::rejoin)).
    pub(crate) fn authenticate_on(
        &self,
        local: &Identity,
        remotes: impl IntoIterator<Item = (A, PublicIdentity)>,
        channel: u32,
    ) -> Result<(), Vec<A>> {
        let mut s = lock(&self.shared);
        let mut links = Vec::new();
        let mut bad = Vec::new();
        for (addr, id) in remotes {
            match (s.index(&addr), local.link_on(&id, channel)) {
                (Some(i), Some(link)) => links.push((i, id, link)),
                _ => bad.push(addr),
            }
        }
        if !bad.is_empty() {
            return Err(bad);
        }
        for (i, id, link) in links {
            s.remotes[i].identity = Some(id);
            s.remotes[i].link = Some(link);
            s.remotes[i].intro = None;
        }
        s.signer = Some(local.duplicate());
        Ok(())
    }

    /// Learns every remote's identity on the socket itself, for a session whose peers
    /// exchanged none beforehand (the session starters without keys do this): `local` is this
    /// peer's fresh identity for the match. Until a remote's identity is known, this peer sends
    /// it an introduction (`local`'s public half and a random nonce) each poll, and holds
    /// GGRS's messages to it back; everything else from its address is dropped
    /// ([`GuardStats::unauthenticated`]). A remote's identity is taken from the first
    /// introduction from its address that echoes the nonce this peer sent there — one only a
    /// process receiving at that address can make — and is fixed from then on; the held
    /// messages then go, sealed, and every datagram is authenticated as after
    /// [`Guard::authenticate`]. An attacker off the path, whatever address it forges, can
    /// neither slip in its own identity nor make this peer fault a member; one on the path
    /// during the introduction can (exchange identities beforehand for that, in a lobby or the
    /// session handshake, and use [`Guard::authenticate`]).
    ///
    /// Every peer of the match must start this way (a peer given keys drops introductions).
    /// Fails, changing nothing, when the operating system gives no randomness.
    pub fn introduce(&self, local: &Identity) -> Result<(), IdentityError> {
        let mut s = lock(&self.shared);
        let mut nonces = Vec::new();
        for r in &s.remotes {
            if r.link.is_none() {
                let mut n = [0u8; NONCE_LEN];
                getrandom::getrandom(&mut n).map_err(|e| IdentityError(e.to_string()))?;
                nonces.push(n);
            }
        }
        let mut nonces = nonces.into_iter();
        for r in &mut s.remotes {
            if r.link.is_none()
                && let Some(ours) = nonces.next()
            {
                r.intro = Some(Intro {
                    ours,
                    heard: VecDeque::with_capacity(ECHOES_KEPT),
                    theirs: None,
                    answer: false,
                    held: VecDeque::new(),
                    early: VecDeque::new(),
                });
            }
        }
        s.signer = Some(local.duplicate());
        Ok(())
    }

    /// Members caught signing two different inputs for their players at one frame, since the
    /// last call: each member once, with the two signed inputs as proof
    /// ([`Equivocation::verify`]).
    pub fn drain_equivocations(&self) -> Vec<PeerEquivocation<A>> {
        lock(&self.shared).equivocations.drain(..).collect()
    }

    /// The input `addr`'s players sent (or that was relayed for them when they left) from
    /// frame `from` through the first frame they signed at or after `through`, with their
    /// signature: `None` when `addr` does not sign its inputs, or this peer does not hold
    /// those frames. Anyone holding `addr`'s identity can check it ([`SignedInputs::verifies`]).
    pub fn signed_inputs(&self, addr: &A, from: i32, through: i32) -> Option<SignedInputs> {
        let s = lock(&self.shared);
        let x = s.index(addr)?;
        if !s.signs(x) {
            return None;
        }
        let li = s.leaves.iter().position(|l| l.remote == x);
        s.segment(x, li, from, through)
    }

    /// The identity `addr` announced in the handshake, once [`Guard::authenticate`] took it:
    /// the key a claim to speak for that member's players must be signed with.
    pub fn identity_of(&self, addr: &A) -> Option<PublicIdentity> {
        let s = lock(&self.shared);
        s.index(addr).and_then(|i| s.remotes[i].identity)
    }

    /// `msg` as this peer's guard sends it to `to`: sealed with their pairwise key once
    /// [`Guard::authenticate`] took `to`'s identity, as it is otherwise. A member can always say
    /// what it likes with its own key: this is how a test plays a dishonest member.
    pub fn seal(&self, msg: &Message, to: &A) -> Message {
        lock(&self.shared).seal(msg, to).unwrap_or_else(|| msg.clone())
    }

    /// The counters.
    pub fn stats(&self) -> GuardStats {
        lock(&self.shared).stats
    }

    /// The last frame of input passed to GGRS from an address (`None` before the first, or for
    /// an unknown address).
    pub fn last_input_frame(&self, addr: &A) -> Option<i32> {
        let s = lock(&self.shared);
        s.index(addr).map(|i| s.remotes[i].last_frame).filter(|f| *f != NULL_FRAME)
    }

    /// The session number pinned for an address (from its first input message).
    pub fn remote_magic(&self, addr: &A) -> Option<u16> {
        let s = lock(&self.shared);
        s.index(addr).and_then(|i| s.remotes[i].magic)
    }

    /// The players behind an address.
    pub fn handles(&self, addr: &A) -> Vec<usize> {
        let s = lock(&self.shared);
        s.index(addr).map(|i| s.remotes[i].handles.clone()).unwrap_or_default()
    }

    /// The address a player's inputs come from.
    pub fn address_of(&self, player: usize) -> Option<A> {
        let s = lock(&self.shared);
        s.remotes.iter().find(|r| r.handles.contains(&player)).map(|r| r.addr.clone())
    }

    /// Starts the departure of an address's players (a kick, or a player waited on too long):
    /// nothing more is taken from or sent to it, and the survivors agree on the frame its
    /// input ends at (a [`Departure::Left`] follows). The other members do not drop a player
    /// on this peer's word: one that still sends to them stays, and the agreement completes
    /// only once each of them has seen it go for itself.
    pub fn leave(&self, addr: &A) {
        let mut s = lock(&self.shared);
        if let Some(i) = s.index(addr) {
            s.begin_leave(i);
        }
    }

    /// Records that GGRS synchronised with an address ([`Runner`](super::Runner) does, from
    /// GGRS's `Synchronized` event).
    pub fn mark_synchronised(&self, addr: &A) {
        let mut s = lock(&self.shared);
        if let Some(i) = s.index(addr) {
            s.remotes[i].synchronised = true;
        }
    }

    /// Whether GGRS synchronised with an address ([`Guard::mark_synchronised`]).
    pub fn is_synchronised(&self, addr: &A) -> bool {
        let s = lock(&self.shared);
        s.index(addr).is_some_and(|i| s.remotes[i].synchronised)
    }

    /// [`GuardConfig::look_ticks`] of this guard.
    pub fn look_ticks(&self) -> u32 {
        lock(&self.shared).config.look_ticks
    }

    /// Whether an address is banned, leaving or gone.
    pub fn is_cut_off(&self, addr: &A) -> bool {
        let s = lock(&self.shared);
        s.index(addr).is_some_and(|i| {
            let r = &s.remotes[i];
            r.banned || r.cut || r.gone
        })
    }

    /// Records that GGRS disconnected an address by itself (its own timeout, in a session not
    /// built with [`unguarded_builder`](super::unguarded_builder)): it no longer counts as a
    /// survivor.
    pub fn mark_disconnected(&self, addr: &A) {
        let mut s = lock(&self.shared);
        if let Some(i) = s.index(addr) {
            s.remotes[i].cut = true;
            s.remotes[i].gone = true;
            s.leaves.retain(|l| l.remote != i);
            s.membership_changed();
        }
    }

    /// Survivors that have not answered a departure being agreed on leave too (the
    /// [`Runner`](super::Runner) calls this when an agreement has waited its departure time:
    /// a survivor that vanished, or stopped listening to this peer, mid-agreement).
    pub fn leave_unresponsive(&self) {
        let mut s = lock(&self.shared);
        let survivors: Vec<usize> = s.survivors().collect();
        let mut silent: Vec<usize> = Vec::new();
        for li in 0..s.leaves.len() {
            if s.leaves[li].agreed.is_some() {
                continue;
            }
            let held = s.held(li);
            let mine = Some((held, s.digest(li, held)));
            // Those that never reported in this membership, and those whose report still
            // differs from what this peer holds (they hold frames it could not take, or never
            // took the frames relayed to them).
            silent.extend(survivors.iter().copied().filter(|&i| s.leaves[li].haves[i] != mine));
        }
        silent.sort_unstable();
        silent.dedup();
        for i in silent {
            s.begin_leave(i);
        }
    }

    /// Tells every other player's peer that this peer leaves the match (the player quit): they
    /// start the departure agreement at once instead of waiting their departure time. The
    /// notice goes out three times with the session's next poll
    /// ([`Runner::leave_match`](super::Runner::leave_match) polls); a peer that misses all
    /// three still times this one out.
    pub fn announce_leaving(&self) {
        let mut s = lock(&self.shared);
        if s.config.spectating {
            return;
        }
        let covered: Vec<usize> =
            s.remotes.iter().flat_map(|r| r.handles.iter().copied()).collect();
        let Some(own) = (0..s.config.players).find(|h| !covered.contains(h)) else { return };
        let Ok(player) = u16::try_from(own) else { return };
        let targets: Vec<usize> = (0..s.remotes.len())
            .filter(|&i| {
                let r = &s.remotes[i];
                !r.cut && !r.gone && !r.handles.is_empty()
            })
            .collect();
        let key = s.key();
        for i in targets {
            // Numbered copies: three datagrams even to a network that decides a datagram's fate
            // by its content and send time (the emulated one does).
            for copy in 0..3 {
                let depart =
                    GuardMsg::Depart { key: key.clone(), player, have: NULL_FRAME, digest: copy };
                s.send_guard(i, &depart);
            }
        }
    }

    /// Departures begun so far (any cause: this peer's rule, a kick, a fault, the leaver's own
    /// notice, a player another member said left that was silent here too).
    pub fn departures_begun(&self) -> u64 {
        lock(&self.shared).leaves_begun
    }

    /// Whether a departure is being agreed on.
    pub fn departing(&self) -> bool {
        lock(&self.shared).leaves.iter().any(|l| l.agreed.is_none())
    }
}

/// A [`NonBlockingSocket`] that validates every received message before GGRS sees it, and runs
/// the survivors' departure agreement (see the [`session`](crate::session) module docs and
/// `docs/determinism.md`).
///
/// ```
/// use rollback_abilities::session::{EmulatedNetwork, GuardConfig, GuardedSocket, NetConditions, PeerAddr};
/// let net = EmulatedNetwork::new(NetConditions::PERFECT, 1);
/// // Player 0 is local; player 1's inputs come from peer 1.
/// let (socket, guard) = GuardedSocket::new::<u8>(
///     net.socket(PeerAddr(0)),
///     GuardConfig::new(2, 8),
///     [(PeerAddr(1), vec![1])],
/// );
/// # let _ = socket;
/// assert!(guard.drain_faults().is_empty());
/// ```
pub struct GuardedSocket<S, A> {
    inner: S,
    shared: Arc<Mutex<Shared<A>>>,
}

impl<S, A> fmt::Debug for GuardedSocket<S, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GuardedSocket")
    }
}

/// Whether bytes are the canonical bincode-1 encoding of an `I` (what GGRS sends).
fn canonical_input<I: Serialize + for<'de> Deserialize<'de>>(bytes: &[u8]) -> bool {
    match bincode1::deserialize::<I>(bytes) {
        Ok(v) => bincode1::serialize(&v).is_ok_and(|b| b == bytes),
        Err(_) => false,
    }
}

impl<S, A: Clone + Eq> GuardedSocket<S, A> {
    /// Wraps `inner`. `remotes` lists every address the session talks to with the players
    /// whose inputs come from it (empty for a spectator; every player for a spectator's host).
    /// `I` is the game's input type.
    pub fn new<I: Serialize + for<'de> Deserialize<'de> + Default>(
        inner: S,
        config: GuardConfig,
        remotes: impl IntoIterator<Item = (A, Vec<usize>)>,
    ) -> (GuardedSocket<S, A>, Guard<A>) {
        let input_size = bincode1::serialized_size(&I::default()).map_or(0, |n| n as usize);
        let mut list: Vec<Remote<A>> = Vec::new();
        for (addr, mut handles) in remotes {
            if list.iter().any(|r| r.addr == addr) {
                continue;
            }
            handles.sort_unstable();
            handles.dedup();
            handles.retain(|h| *h < config.players);
            list.push(Remote {
                addr,
                handles,
                magic: None,
                sync_magic: None,
                inputs: BTreeMap::from([(NULL_FRAME, Vec::new())]),
                last_frame: NULL_FRAME,
                statuses: vec![
                    WireStatus { disconnected: false, last_frame: NULL_FRAME };
                    config.players
                ],
                sent_frame: NULL_FRAME,
                faults: 0,
                banned: false,
                cut: false,
                claimed: false,
                heard: 0,
                gone: false,
                own_magic: None,
                newest_input: None,
                newest_tick: 0,
                sync_request: None,
                synchronised: false,
                own_frames: BTreeMap::new(),
                acked: NULL_FRAME,
                pings: VecDeque::with_capacity(PINGS_KEPT),
                allowance: config.flood_burst,
                identity: None,
                link: None,
                intro: None,
                first_frame: None,
                chain: BTreeMap::new(),
                sigs: BTreeMap::new(),
                equivocated: false,
            });
        }
        let shared = Arc::new(Mutex::new(Shared {
            config,
            current: 0,
            tick: 0,
            pumped: 0,
            remotes: list,
            leaves: Vec::new(),
            faults: VecDeque::new(),
            departures: VecDeque::new(),
            inject: Vec::new(),
            outbox: Vec::new(),
            stats: GuardStats::default(),
            input_size,
            check_input: canonical_input::<I>,
            leaves_begun: 0,
            signer: None,
            own_inputs: BTreeMap::new(),
            own_chain: BTreeMap::new(),
            own_sigs: BTreeMap::new(),
            equivocations: VecDeque::new(),
        }));
        let guard = Guard { shared: shared.clone() };
        (GuardedSocket { inner, shared }, guard)
    }

    /// The wrapped socket.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}
/// Decodes GGRS's run-length encoding (bitfield-rle) with bounds: `None` and a reason when the
/// payload is malformed or would decode to more than `limit` bytes.
pub(crate) fn rle_decode(data: &[u8], limit: usize) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        // A varint of at most 10 bytes (u64).
        let mut value: u64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&byte) = data.get(pos) else { return Err("ends inside a length") };
            pos += 1;
            if shift >= 64 {
                return Err("has a length longer than 64 bits");
            }
            value |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
        let repeat = value & 1 == 1;
        let len = if repeat { value >> 2 } else { value >> 1 };
        let len = usize::try_from(len).map_err(|_| "has a run longer than memory")?;
        if out.len().saturating_add(len) > limit {
            return Err("decodes to more bytes than its frames can hold");
        }
        if repeat {
            let fill = if value & 2 != 0 { 0xff } else { 0 };
            out.resize(out.len() + len, fill);
        } else {
            let end = pos.checked_add(len).ok_or("has a literal run past its end")?;
            let Some(lit) = data.get(pos..end) else {
                return Err("has a literal run past its end");
            };
            out.extend_from_slice(lit);
            pos = end;
        }
    }
    Ok(out)
}

/// The paced resend of `newest` to remote `r`: GGRS's newest input message to it, re-encoded
/// to start after the newest frame `r` acknowledged since.
///
/// GGRS's receiver decodes a message against the frame before its first and ignores it when
/// it does not have that frame; its sender starts each message at the first frame not yet
/// acknowledged. A message sent before an acknowledgement arrived starts too early: once the
/// receiver has its first frames, the frame before that start may be one it never had (the
/// frames an input delay skips) or one it has discarded, so a stale copy would be ignored
/// forever while both peers wait on each other. Re-encoding from the acknowledged frame is what
/// GGRS's own (wall-clock) resend would send. `None`: every frame was acknowledged.
fn rebased_resend<A>(r: &Remote<A>, newest: &Message) -> Option<Message> {
    let Some(mut wire) = WireMessage::from_ggrs(newest) else { return Some(newest.clone()) };
    let WireBody::Input(input) = &mut wire.body else { return Some(newest.clone()) };
    if r.acked < input.start_frame {
        return Some(newest.clone());
    }
    let Some(reference) = r.own_frames.get(&r.acked) else { return Some(newest.clone()) };
    let frames: Vec<Vec<u8>> = r.own_frames.range(r.acked + 1..).map(|(_, f)| f.clone()).collect();
    if frames.is_empty() {
        return None;
    }
    input.start_frame = r.acked + 1;
    input.bytes = encode_inputs(reference, &frames);
    wire.to_ggrs()
}

/// GGRS's input payload for `frames` (each XORed against the previous one, the first against
/// `reference`, with a two-byte length before each), run-length encoded as one literal run:
/// a valid encoding GGRS decodes like its own.
fn encode_inputs(reference: &[u8], frames: &[Vec<u8>]) -> Vec<u8> {
    let mut delta = Vec::new();
    let mut base = reference.to_vec();
    for f in frames {
        delta.extend_from_slice(&(f.len() as u16).to_le_bytes());
        for (i, b) in f.iter().enumerate() {
            delta.push(b ^ base.get(i).copied().unwrap_or(0));
        }
        base.clone_from(f);
    }
    let mut out = Vec::new();
    let mut v = (delta.len() as u64) << 1;
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out.extend_from_slice(&delta);
    out
}

/// Splits a delta-encoded buffer into frames (each XORed against the previous one, starting from
/// `reference`), checking each frame's length.
fn delta_decode(reference: &[u8], buf: &[u8], frame_len: usize) -> Result<Vec<Vec<u8>>, Fault> {
    let mut out = Vec::new();
    let mut base = reference.to_vec();
    let mut pos = 0;
    while pos < buf.len() {
        let Some(prefix) = buf.get(pos..pos + 2) else {
            return Err(Fault::BadInputEncoding { what: "ends inside a frame's length" });
        };
        let len = usize::from(u16::from_le_bytes([prefix[0], prefix[1]]));
        pos += 2;
        if len != frame_len {
            return Err(Fault::InputSize { expected: frame_len, got: len });
        }
        let Some(enc) = buf.get(pos..pos + len) else {
            return Err(Fault::BadInputEncoding { what: "ends inside a frame" });
        };
        pos += len;
        let mut dec = enc.to_vec();
        for (d, b) in dec.iter_mut().zip(base.iter()) {
            *d ^= b;
        }
        base.clone_from(&dec);
        out.push(dec);
    }
    Ok(out)
}

/// Decoded input frames, in order.
type Frames = Vec<Vec<u8>>;

/// What to do with a received message.
enum Verdict {
    /// Pass it to GGRS (rewritten when the flag is set).
    Pass(bool),
    /// A message of the guards' protocol, handled.
    Consumed,
    /// Not attributable to the sender (dropped, no fault: see [`GuardStats::unattributed`]).
    Unattributed,
    /// A time-sync message the network cannot explain (dropped, no fault).
    Implausible,
    /// Host input a spectator cannot hold yet (dropped, no fault).
    Deferred,
}

impl<A: Clone + Eq> Shared<A> {
    /// Checks one message from remote `i`.
    ///
    /// `signature` is the one the datagram carried (the frame it covers and the signature):
    /// new input from a remote that signs its inputs is passed only with a valid one.
    fn check(
        &mut self,
        i: usize,
        wire: &mut WireMessage,
        signature: Option<InputSignature>,
    ) -> Result<Verdict, Fault> {
        // The guards' own protocol: authenticated by the sender's pinned session number.
        if let WireBody::Input(input) = &wire.body
            && input.start_frame == GUARD_FRAME
        {
            return self.check_guard_msg(i, wire.magic, &input.bytes);
        }
        let max_pred = self.config.max_prediction as GgrsFrame;
        let current = self.current;
        let max_advantage = self.config.max_frame_advantage.max(0);
        let remote = &mut self.remotes[i];
        // The session number is pinned at the sender's first input (sent only once GGRS has
        // synchronised, so the synchronisation handshake cannot be raced to pin a forgery). A
        // message with another number did not come from the member: anyone can forge a source
        // address, so it is dropped without counting against the member.
        if let Some(m) = remote.magic
            && m != wire.magic
        {
            return Ok(Verdict::Unattributed);
        }
        let mut rewritten = false;
        match &mut wire.body {
            WireBody::SyncRequest(_) | WireBody::KeepAlive => {}
            WireBody::QualityReply(pong) => {
                // A reply echoes the stamp of a report this peer sent; GGRS computes the round
                // trip from it (a forged stamp overflows its arithmetic or claims minutes).
                if !remote.pings.contains(pong) {
                    return Ok(Verdict::Implausible);
                }
            }
            WireBody::SyncReply(_) => {
                if remote.sync_magic.is_none() {
                    remote.sync_magic = Some(wire.magic);
                }
            }
            WireBody::QualityReport { frame_advantage, .. } => {
                let clamped = (*frame_advantage).clamp(-max_advantage, max_advantage);
                if clamped != *frame_advantage {
                    *frame_advantage = clamped;
                    rewritten = true;
                }
            }
            WireBody::InputAck(f) => {
                if *f < NULL_FRAME {
                    return Err(Fault::FrameOutOfRange { field: "ack_frame", frame: *f });
                }
                if *f > remote.sent_frame {
                    return Err(Fault::AckAhead { ack: *f, sent: remote.sent_frame });
                }
                remote.acked = remote.acked.max(*f);
            }
            WireBody::ChecksumReport { frame, .. } => {
                // GGRS keeps reports in a map it trims relative to the newest one: frames must be
                // near the session's or the map grows without bound.
                let window = 64 * (max_pred + 1) + 4096;
                if *frame < 0 || *frame > current.saturating_add(window) {
                    return Err(Fault::FrameOutOfRange { field: "checksum frame", frame: *frame });
                }
            }
            WireBody::Input(input) => return self.check_input_msg(i, wire.magic, input, signature),
        }
        Ok(Verdict::Pass(rewritten))
    }

    /// Checks a message of the guards' protocol from remote `i`, sent with session number
    /// `magic`, and handles it when it is the member's.
    fn check_guard_msg(&mut self, i: usize, magic: u16, bytes: &[u8]) -> Result<Verdict, Fault> {
        // Before the first input, a sealed datagram is the member's by its key alone (a
        // departure may have to be agreed before a session has played a frame).
        let keyed = self.remotes[i].link.is_some();
        match self.remotes[i].magic {
            Some(m) if m == magic => self.on_guard_msg(i, bytes).map(|()| Verdict::Consumed),
            None if keyed => self.on_guard_msg(i, bytes).map(|()| Verdict::Consumed),
            // Another session number, or none pinned yet: nothing ties it to the member.
            _ => Ok(Verdict::Unattributed),
        }
    }

    /// Checks a player's input message from remote `i`, sent with session number `magic`:
    /// its header, then its frames (decoded, within what GGRS holds, valid, and signed when
    /// the remote signs its inputs); keeps the new frames and takes the connection statuses.
    fn check_input_msg(
        &mut self,
        i: usize,
        magic: u16,
        input: &mut WireInput,
        signature: Option<InputSignature>,
    ) -> Result<Verdict, Fault> {
        let signs = self.signs(i);
        let max_pred = self.config.max_prediction as GgrsFrame;
        let current = self.current;
        let spectating = self.config.spectating;
        self.remotes[i].check_input_header(input, self.config.players)?;
        let (reference, mut frames) = self.decode_input(i, input)?;
        let mut rewritten = false;
        // An honest sender is at most its prediction window (plus its input delay)
        // ahead of the input this peer sent it, and GGRS's input queue holds 128
        // frames past this peer's confirmed frame (at least `current − max_pred`).
        let last = input.start_frame.saturating_add(frames.len() as GgrsFrame - 1);
        if spectating {
            // GGRS's spectator keeps the host's input in a ring of 60 frames past its
            // own: a frame beyond it overwrites one still needed and the spectator is
            // broken for good (`SpectatorTooFarBehind`). Such frames are cut from the
            // message; the host sends them again once the spectator has room.
            let room = current.saturating_add(SPECTATOR_BUFFER - 1);
            if !frames.is_empty() && last > room {
                let Some(reference) = reference.as_deref() else {
                    return Ok(Verdict::Deferred);
                };
                let keep = usize::try_from(room - input.start_frame + 1).unwrap_or(0);
                if keep == 0 {
                    return Ok(Verdict::Deferred);
                }
                frames.truncate(keep);
                input.bytes = encode_inputs(reference, &frames);
                rewritten = true;
            }
        } else {
            let limit = ahead_limit(current, self.remotes[i].sent_frame, max_pred);
            if !frames.is_empty() && last > limit {
                return Err(Fault::InputAhead { frame: last, limit });
            }
        }
        if reference.is_some() {
            let (input_size, check_input) = (self.input_size, self.check_input);
            let remote = &mut self.remotes[i];
            for (k, bytes) in frames.iter().enumerate() {
                let f = input.start_frame.saturating_add(k as GgrsFrame);
                if input_size > 0 && !bytes.chunks(input_size).all(check_input) {
                    return Err(Fault::InputValue { frame: f });
                }
            }
            if signs && last > remote.last_frame {
                remote.take_signed(input.start_frame, &frames, last, signature)?;
            }
            remote.keep_frames(input.start_frame, frames);
        }
        let remote = &mut self.remotes[i];
        if remote.magic.is_none() {
            remote.magic = Some(magic);
        }
        if remote.take_statuses(input, spectating) {
            rewritten = true;
        }
        Ok(Verdict::Pass(rewritten))
    }

    /// Decodes the frames of an input message from remote `i`, with the reference they are
    /// decoded against: `None` when this peer lacks it (GGRS then ignores the message).
    fn decode_input(
        &self,
        i: usize,
        input: &WireInput,
    ) -> Result<(Option<Vec<u8>>, Frames), Fault> {
        let max_pred = self.config.max_prediction as GgrsFrame;
        let max_frames = self.config.max_frames_per_message;
        let frame_len = self.frame_len(i);
        let remote = &self.remotes[i];
        let limit = max_frames.saturating_mul(frame_len + 2);
        let buf =
            rle_decode(&input.bytes, limit).map_err(|what| Fault::BadInputEncoding { what })?;
        let first = remote.last_frame == NULL_FRAME;
        if first && input.start_frame > max_pred + 64 {
            return Err(Fault::InputGap { start: input.start_frame });
        }
        // GGRS decodes against the input before the message's first frame (or a blank
        // input for the first message) and ignores the message when it lacks it.
        let reference_frame = if first { NULL_FRAME } else { input.start_frame - 1 };
        let reference = remote
            .inputs
            .get(&reference_frame)
            .map(|r| if r.is_empty() { vec![0u8; frame_len] } else { r.clone() });
        let frames = delta_decode(reference.as_deref().unwrap_or(&[]), &buf, frame_len)?;
        if frames.len() > max_frames {
            return Err(Fault::TooManyFrames { limit: max_frames });
        }
        Ok((reference, frames))
    }

    /// Records what this peer sends; `false` when the message must not go out.
    fn outgoing(&mut self, msg: &Message, addr: &A) -> bool {
        let Some(i) = self.index(addr) else { return true };
        let wire = WireMessage::from_ggrs(msg);
        if let Some(WireMessage { body: WireBody::SyncRequest(_), .. }) = &wire {
            self.remotes[i].sync_request = Some((msg.clone(), self.tick));
        }
        if self.remotes[i].cut || self.remotes[i].gone {
            return false;
        }
        let Some(wire) = wire else { return true };
        if self.remotes[i].own_magic.is_none() {
            self.remotes[i].own_magic = Some(wire.magic);
        }
        let paced = self.config.paced;
        match &wire.body {
            WireBody::Input(input) => {
                let local_len = self.local_len(i);
                let buf = rle_decode(&input.bytes, usize::MAX).unwrap_or_default();
                if self.signing_to(i) && input.start_frame >= 0 {
                    self.extend_own_chain(input.start_frame, &buf, local_len);
                }
                let n = buf.len() / (local_len + 2);
                let last = input.start_frame.saturating_add(n as GgrsFrame - 1);
                let r = &mut self.remotes[i];
                if paced {
                    // GGRS encodes against the last input the remote acknowledged (blank before
                    // any): the frame before the message's first, when this peer sent it.
                    let blank = vec![0u8; local_len];
                    let reference = r.own_frames.get(&(input.start_frame - 1)).unwrap_or(&blank);
                    if let Ok(frames) = delta_decode(reference, &buf, local_len) {
                        for (k, f) in frames.into_iter().enumerate() {
                            r.own_frames.insert(input.start_frame + k as GgrsFrame, f);
                        }
                    }
                    let keep = r.acked.min(input.start_frame - 1);
                    r.own_frames.retain(|f, _| *f >= keep);
                }
                let new = last > r.sent_frame;
                r.sent_frame = r.sent_frame.max(last);
                if paced {
                    if !new {
                        self.stats.paced_dropped += 1;
                        return false;
                    }
                    r.newest_input = Some(msg.clone());
                    r.newest_tick = self.tick;
                }
                true
            }
            WireBody::KeepAlive | WireBody::QualityReport { .. } | WireBody::QualityReply(_)
                if paced =>
            {
                self.stats.paced_dropped += 1;
                false
            }
            WireBody::QualityReport { ping, .. } => {
                let pings = &mut self.remotes[i].pings;
                if pings.len() == PINGS_KEPT {
                    pings.pop_front();
                }
                pings.push_back(*ping);
                true
            }
            _ => true,
        }
    }
}

impl<A: Clone + Eq> Shared<A> {
    /// The introductions due: one to every remote whose identity this peer does not hold yet,
    /// and an answer to every one that introduced itself again since the last (it does not hold
    /// this peer's yet). Unsealed: the receiver may hold no key.
    fn introductions(&mut self) -> Vec<(A, Message)> {
        let Some(local) = self.signer.as_ref().map(Identity::public) else { return Vec::new() };
        let mut out = Vec::new();
        for r in &mut self.remotes {
            let Some(intro) = r.intro.as_mut() else { continue };
            if r.banned || r.gone || r.cut || (r.link.is_some() && !intro.answer) {
                continue;
            }
            intro.answer = false;
            let echoes = match intro.theirs {
                Some(n) => vec![n],
                None => intro.heard.iter().copied().collect(),
            };
            let hello = Hello { identity: local, nonce: intro.ours, echoes };
            out.push((r.addr.clone(), hello.to_message()));
        }
        out
    }

    /// An introduction from remote `i`'s address. When it makes the remote's identity known,
    /// returns what to send it — this peer's answer first (so the remote knows this peer before
    /// the rest arrives), then GGRS's held-back messages, sealed — and the datagrams that came
    /// from its address before, to be read now.
    fn on_hello(&mut self, i: usize, hello: Hello) -> (Vec<Message>, Vec<Message>) {
        let local = self.signer.as_ref().map(Identity::public);
        let r = &mut self.remotes[i];
        let (known, identity) = (r.link.is_some(), r.identity);
        let Some(intro) = r.intro.as_mut() else { return (Vec::new(), Vec::new()) };
        if known {
            // Known already: the same identity asks again (it lacks this peer's); any other is
            // not the member's.
            if identity == Some(hello.identity) {
                intro.answer = true;
            } else {
                self.stats.unauthenticated += 1;
            }
            return (Vec::new(), Vec::new());
        }
        if !hello.echoes.contains(&intro.ours) {
            if !intro.heard.contains(&hello.nonce) {
                if intro.heard.len() == ECHOES_KEPT {
                    intro.heard.pop_front();
                }
                intro.heard.push_back(hello.nonce);
            }
            return (Vec::new(), Vec::new());
        }
        let (Some(local), Some(link)) =
            (local, self.signer.as_ref().and_then(|me| me.link(&hello.identity)))
        else {
            self.stats.unauthenticated += 1;
            return (Vec::new(), Vec::new());
        };
        intro.theirs = Some(hello.nonce);
        intro.heard.clear();
        intro.answer = false;
        let answer = Hello { identity: local, nonce: intro.ours, echoes: vec![hello.nonce] };
        let held: Vec<Message> = intro.held.drain(..).collect();
        let early: Vec<Message> = intro.early.drain(..).collect();
        self.remotes[i].identity = Some(hello.identity);
        self.remotes[i].link = Some(link);
        let addr = self.remotes[i].addr.clone();
        let mut send = vec![answer.to_message()];
        send.extend(held.into_iter().filter_map(|m| self.seal(&m, &addr)));
        (send, early)
    }

    /// Keeps `msg`, from remote `i`'s address before its identity is known, to be read once it
    /// is (the oldest kept is pushed out, unread, past [`HELD_BACK`]).
    fn keep_early(&mut self, i: usize, msg: Message) {
        let Some(intro) = self.remotes[i].intro.as_mut() else { return };
        if intro.early.len() == HELD_BACK {
            intro.early.pop_front();
            self.stats.dropped += 1;
            self.stats.unauthenticated += 1;
        }
        intro.early.push_back(msg);
    }

    /// Holds `msg` back for remote `addr` while its identity is unknown ([`Guard::introduce`]);
    /// whether it was held.
    fn hold_back(&mut self, msg: &Message, addr: &A) -> bool {
        let Some(i) = self.index(addr) else { return false };
        let r = &mut self.remotes[i];
        let Some(intro) = r.intro.as_mut() else { return false };
        if r.link.is_some() {
            return false;
        }
        if intro.held.len() == HELD_BACK {
            intro.held.pop_front();
        }
        intro.held.push_back(msg.clone());
        true
    }

    /// Bytes of one frame of this peer's input as it sends it to remote `i` (a spectator gets
    /// every player's).
    fn local_len(&self, i: usize) -> usize {
        let players = if self.remotes[i].handles.is_empty() {
            self.config.players
        } else {
            let remote: usize = self.remotes.iter().map(|r| r.handles.len()).sum();
            self.config.players - remote.min(self.config.players)
        };
        self.input_size * players.max(1)
    }

    /// Whether this peer signs the input it sends to remote `i`: it has an identity and `i` is
    /// a player's peer holding a key (a spectator gets every player's input, unsigned).
    fn signing_to(&self, i: usize) -> bool {
        self.signer.is_some()
            && !self.config.spectating
            && !self.remotes[i].handles.is_empty()
            && self.remotes[i].link.is_some()
    }

    /// Extends this peer's own input chain with the new frames of an input message it sends
    /// (GGRS encodes a message against the frame before its first, blank before any).
    fn extend_own_chain(&mut self, start: GgrsFrame, buf: &[u8], len: usize) {
        let mut last = self.own_chain.keys().next_back().copied().unwrap_or(NULL_FRAME);
        if last != NULL_FRAME && start > last.saturating_add(1) {
            return;
        }
        let blank = vec![0u8; len];
        let reference = self.own_inputs.get(&(start - 1)).unwrap_or(&blank);
        let Ok(frames) = delta_decode(reference, buf, len) else { return };
        let mut head = self.own_chain.get(&last).copied().unwrap_or(GENESIS);
        for (k, input) in frames.into_iter().enumerate() {
            let f = start.saturating_add(k as GgrsFrame);
            if f <= last {
                continue;
            }
            head = chain_step(&head, f, &input);
            self.own_chain.insert(f, head);
            self.own_inputs.insert(f, input);
            last = f;
        }
        let keep = history_start(last);
        self.own_chain.retain(|k, _| *k >= keep);
        self.own_inputs.retain(|k, _| *k >= keep);
        self.own_sigs.retain(|k, _| *k >= keep);
    }

    /// This peer's signature for an input message to remote `i`: over its chain through the
    /// message's last frame (made once per frame, whatever the number of remotes).
    fn signature_for(&mut self, i: usize, msg: &Message) -> Option<InputSignature> {
        if !self.signing_to(i) {
            return None;
        }
        let wire = WireMessage::from_ggrs(msg)?;
        let WireBody::Input(input) = &wire.body else { return None };
        if input.start_frame < 0 || input.start_frame == STATUS_ONLY_FRAME {
            return None;
        }
        let len = self.local_len(i);
        // Bounded: `Guard::seal` signs whatever message a test or fuzzer hands it.
        let limit = self.config.max_frames_per_message.saturating_mul(len + 2);
        let n = rle_decode(&input.bytes, limit).ok()?.len() / (len + 2);
        let last = input.start_frame.checked_add(GgrsFrame::try_from(n).ok()?.checked_sub(1)?)?;
        if let Some(sig) = self.own_sigs.get(&last) {
            return Some((last, *sig));
        }
        let head = self.own_chain.get(&last)?;
        let sig = self.signer.as_ref()?.sign(&statement(last, head));
        self.own_sigs.insert(last, sig);
        Some((last, sig))
    }

    /// `msg` sealed for `addr` (`None`: no key for it, the message goes as it is); an input
    /// message carries this peer's signature over its input (see `evidence`).
    fn seal(&mut self, msg: &Message, addr: &A) -> Option<Message> {
        let i = self.index(addr)?;
        self.remotes[i].link.as_ref()?;
        let signature = self.signature_for(i, msg);
        let link = self.remotes[i].link.as_mut()?;
        let mut payload = message_to_bytes(msg);
        let start_frame = match signature {
            Some((frame, sig)) => {
                payload.extend_from_slice(&frame.to_le_bytes());
                payload.extend_from_slice(&sig);
                SIGNED_FRAME
            }
            None => SEALED_FRAME,
        };
        let body = WireBody::Input(WireInput {
            peer_connect_status: Vec::new(),
            disconnect_requested: false,
            start_frame,
            ack_frame: NULL_FRAME,
            bytes: link.seal(payload),
        });
        WireMessage { magic: 0, body }.to_ggrs()
    }

    /// What remote `i` sent, checked against its key: the message itself when this peer holds
    /// no key for it, the opened message (and the signature it carried) when it is sealed with
    /// the key, `None` otherwise.
    fn open(&mut self, i: usize, msg: Message) -> Opened {
        let Some(link) = self.remotes[i].link.as_mut() else { return Opened::Message(msg, None) };
        let Some(wire) = WireMessage::from_ggrs(&msg) else { return Opened::Refused };
        let WireBody::Input(input) = wire.body else { return Opened::Refused };
        if !input.peer_connect_status.is_empty() {
            return Opened::Refused;
        }
        let signed = |payload: &[u8]| {
            let (m, trailer) = payload.split_at(payload.len().checked_sub(SIGNATURE_TRAILER)?);
            let frame = GgrsFrame::from_le_bytes(trailer[..4].try_into().ok()?);
            let sig: [u8; 64] = trailer[4..].try_into().ok()?;
            Some(Opened::Message(message_from_bytes(m)?, Some((frame, sig))))
        };
        let opened = match input.start_frame {
            SEALED_FRAME => link
                .open(&input.bytes)
                .and_then(message_from_bytes)
                .map(|m| Opened::Message(m, None)),
            SIGNED_FRAME => link.open(&input.bytes).and_then(signed),
            HELLO_FRAME => Hello::from_wire(&input).map(Opened::Hello),
            _ => None,
        };
        opened.unwrap_or(Opened::Refused)
    }
}

/// What [`Shared::open`] made of a datagram from a remote.
enum Opened {
    /// The message (as it came when this peer holds no key for the remote, opened when it was
    /// sealed with the key), and the signature it carried.
    Message(Message, Option<InputSignature>),
    /// An introduction ([`Guard::introduce`]).
    Hello(Hello),
    /// Not sealed with the remote's key, or replayed.
    Refused,
}

/// The message a sealed one carries, unchecked (`None` for a message that is not sealed). The
/// emulated network draws a packet's fate from its content: a sealed message's is the one of the
/// message it carries, so a seeded match goes the same way whatever the keys.
pub(crate) fn sealed_inner(m: &Message) -> Option<Message> {
    let wire = WireMessage::from_ggrs(m)?;
    match wire.body {
        WireBody::Input(input) if input.start_frame == SEALED_FRAME => {
            let n = input.bytes.len().checked_sub(super::identity::TAG_LEN + 8)?;
            message_from_bytes(&input.bytes[..n])
        }
        WireBody::Input(input) if input.start_frame == SIGNED_FRAME => {
            let n =
                input.bytes.len().checked_sub(super::identity::TAG_LEN + 8 + SIGNATURE_TRAILER)?;
            message_from_bytes(&input.bytes[..n])
        }
        _ => None,
    }
}

/// The message the emulated network draws a datagram's fate from: the one a sealed datagram
/// carries, and a relay of the guards' protocol without its proof (the signature and the chain
/// head differ with every match's keys), encoded as a relay without a proof field was, and an
/// introduction with its keys and nonces zeroed. A seeded match thus goes the same way whatever
/// the keys.
pub(crate) fn fate_view(m: &Message) -> Option<Message> {
    let inner = sealed_inner(m);
    let m = inner.as_ref().unwrap_or(m);
    let wire = WireMessage::from_ggrs(m)?;
    let WireBody::Input(input) = &wire.body else { return inner };
    if input.start_frame == HELLO_FRAME {
        // Random keys and nonces: the same length of zeros (a view is its own).
        if input.bytes.iter().all(|b| *b == 0) {
            return None;
        }
        let mut blank = input.clone();
        blank.bytes.iter_mut().for_each(|b| *b = 0);
        return WireMessage { magic: wire.magic, body: WireBody::Input(blank) }.to_ggrs();
    }
    if input.start_frame != GUARD_FRAME {
        return inner;
    }
    let decoded = bincode1::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(input.bytes.len() as u64 + 16)
        .deserialize::<GuardMsg>(&input.bytes);
    let Ok(GuardMsg::Relay { key, player, start, frames, .. }) = decoded else {
        return inner;
    };
    let relay = GuardMsg::Relay { key, player, start, frames, proof: None };
    let mut bytes = bincode1::serialize(&relay).ok()?;
    bytes.pop(); // the `None` of the proof
    Some(forge::guard_bytes(wire.magic, bytes))
}

impl<S, A> NonBlockingSocket<A> for GuardedSocket<S, A>
where
    S: NonBlockingSocket<A>,
    A: Clone + PartialEq + Eq + Hash + Send + Sync,
{
    fn send_to(&mut self, msg: &Message, addr: &A) {
        let mut s = lock(&self.shared);
        if s.outgoing(msg, addr) && !s.hold_back(msg, addr) {
            match s.seal(msg, addr) {
                Some(sealed) => self.inner.send_to(&sealed, addr),
                None => self.inner.send_to(msg, addr),
            }
        }
    }

    fn receive_all_messages(&mut self) -> Vec<(A, Message)> {
        // The guard's own traffic first (once per tick).
        let outbox = lock(&self.shared).own_traffic();
        for (addr, m) in &outbox {
            self.inner.send_to(m, addr);
        }
        let received = self.inner.receive_all_messages();
        let Poll { out, released, .. } = lock(&self.shared).read_received(received);
        for (to, messages) in released {
            for m in &messages {
                self.inner.send_to(m, &to);
            }
        }
        out
    }
}

/// One poll's reading of received datagrams ([`Shared::read_received`]).
struct Poll<A> {
    /// The datagrams still to read (an introduction puts back those kept while it was awaited).
    received: VecDeque<(A, Message)>,
    /// The messages GGRS gets.
    out: Vec<(A, Message)>,
    /// By remote: the messages read from it in this poll, and of those, the ones dropped as a
    /// flood.
    per_sender: Vec<usize>,
    flooded: Vec<usize>,
    /// Messages to send once the guard is unlocked, answering introductions.
    released: Vec<(A, Vec<Message>)>,
}

impl<A: Clone + Eq> Shared<A> {
    /// Once per tick: what the guard itself sends (paced resends, the departure protocol,
    /// introductions), sealed where a key is held.
    fn own_traffic(&mut self) -> Vec<(A, Message)> {
        self.pump();
        let outbox = core::mem::take(&mut self.outbox);
        let mut out = self.introductions();
        for (addr, m) in outbox {
            if !self.hold_back(&m, &addr) {
                out.push(match self.seal(&m, &addr) {
                    Some(sealed) => (addr, sealed),
                    None => (addr, m),
                });
            }
        }
        out
    }

    /// Reads the datagrams one poll received: what GGRS gets (with the messages the guard
    /// injects last), and the messages to send in answer to introductions.
    fn read_received(&mut self, received: Vec<(A, Message)>) -> Poll<A> {
        let mut poll = Poll {
            out: Vec::with_capacity(received.len()),
            per_sender: vec![0usize; self.remotes.len()],
            flooded: vec![0usize; self.remotes.len()],
            released: Vec::new(),
            received: received.into(),
        };
        let (rate, burst) = (self.config.flood_rate, self.config.flood_burst);
        for r in &mut self.remotes {
            r.allowance = r.allowance.saturating_add(rate).min(burst);
        }
        while let Some((from, msg)) = poll.received.pop_front() {
            self.read_one(from, msg, &mut poll);
        }
        for (i, &dropped) in poll.flooded.iter().enumerate() {
            if dropped > 0 {
                self.fault(i, Fault::Flood { dropped });
            }
        }
        poll.out.append(&mut self.inject);
        poll
    }

    /// Reads one datagram from `from`: dropped, consumed by the guard, or passed on to GGRS.
    fn read_one(&mut self, from: A, msg: Message, poll: &mut Poll<A>) {
        let Some(i) = self.index(&from) else {
            self.stats.unknown_sender += 1;
            self.stats.dropped += 1;
            return;
        };
        let r = &self.remotes[i];
        if r.banned || r.gone {
            self.stats.dropped += 1;
            return;
        }
        // While its identity is being learnt, only its introductions are read.
        if self.remotes[i].intro.is_some() && self.remotes[i].link.is_none() {
            self.read_introduction(i, from, msg, poll);
            return;
        }
        // A datagram not sealed with the member's key is not the member's: before anything
        // counts it toward the member (its fair share, its faults), it is dropped.
        let (msg, signature) = match self.open(i, msg) {
            Opened::Message(m, signature) => (m, signature),
            Opened::Hello(hello) if self.remotes[i].intro.is_some() => {
                self.on_hello(i, hello);
                return;
            }
            Opened::Hello(_) | Opened::Refused => {
                self.stats.dropped += 1;
                self.stats.unauthenticated += 1;
                return;
            }
        };
        poll.per_sender[i] += 1;
        if poll.per_sender[i] > self.config.max_messages_per_poll || self.remotes[i].allowance == 0
        {
            self.stats.dropped += 1;
            poll.flooded[i] += 1;
            return;
        }
        self.remotes[i].allowance -= 1;
        let Some(mut wire) = WireMessage::from_ggrs(&msg) else {
            self.stats.dropped += 1;
            self.fault(i, Fault::Undecodable);
            return;
        };
        // Nothing from a member that is out is read: its input is frozen, and its reports
        // and relays no longer count (the survivors agree among themselves).
        if self.remotes[i].cut {
            self.stats.dropped += 1;
            return;
        }
        let verdict = self.check(i, &mut wire, signature);
        if matches!(verdict, Ok(Verdict::Consumed | Verdict::Pass(_))) {
            self.remotes[i].heard = self.tick;
        }
        self.take_verdict(i, from, msg, &wire, verdict, &mut poll.out);
    }

    /// A datagram from remote `i` while its identity is being learnt: an introduction is
    /// answered (the messages kept while it was awaited are read next); anything else is kept.
    fn read_introduction(&mut self, i: usize, from: A, msg: Message, poll: &mut Poll<A>) {
        if let Some(hello) = Hello::of(&msg) {
            let (send, early) = self.on_hello(i, hello);
            for m in early.into_iter().rev() {
                poll.received.push_front((from.clone(), m));
            }
            poll.released.push((from.clone(), send));
        } else {
            self.keep_early(i, msg);
        }
    }

    /// Acts on the verdict on message `msg` from remote `i` (`wire`, as checked): counted,
    /// passed on to GGRS (`out`) as received or as rewritten, or a fault.
    fn take_verdict(
        &mut self,
        i: usize,
        from: A,
        msg: Message,
        wire: &WireMessage,
        verdict: Result<Verdict, Fault>,
        out: &mut Vec<(A, Message)>,
    ) {
        match verdict {
            Ok(Verdict::Consumed) => {}
            Ok(Verdict::Unattributed) => {
                self.stats.dropped += 1;
                self.stats.unattributed += 1;
            }
            Ok(Verdict::Implausible) => {
                self.stats.dropped += 1;
                self.stats.implausible += 1;
            }
            Ok(Verdict::Deferred) => {
                self.stats.dropped += 1;
                self.stats.deferred += 1;
            }
            Ok(Verdict::Pass(false)) => {
                self.stats.passed += 1;
                out.push((from, msg));
            }
            Ok(Verdict::Pass(true)) => match wire.to_ggrs() {
                Some(m) if matches!(wire.body, WireBody::QualityReport { .. }) => {
                    self.stats.passed += 1;
                    self.stats.implausible += 1;
                    out.push((from, m));
                }
                Some(m) if self.config.spectating => {
                    self.stats.passed += 1;
                    self.stats.deferred += 1;
                    out.push((from, m));
                }
                Some(m) => {
                    self.stats.passed += 1;
                    self.stats.rewritten += 1;
                    out.push((from, m));
                }
                None => self.stats.dropped += 1,
            },
            Err(Fault::DisconnectRequest) => {
                self.stats.dropped += 1;
                self.fault(i, Fault::DisconnectRequest);
                self.begin_leave(i);
            }
            Err(fault) => {
                self.stats.dropped += 1;
                self.fault(i, fault);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_introduction_round_trips_and_nothing_else_reads_as_one() {
        let identity = Identity::from_secrets([3; 32], [4; 32]).public();
        let hello = Hello { identity, nonce: [5; NONCE_LEN], echoes: vec![[6; NONCE_LEN]; 2] };
        let m = hello.to_message();
        assert_eq!(Hello::of(&m), Some(hello));
        let body = |bytes: Vec<u8>| forge::guard_bytes(0, bytes);
        let wire = |m: &Message| match WireMessage::from_ggrs(m).map(|w| w.body) {
            Some(WireBody::Input(input)) => input.bytes,
            _ => Vec::new(),
        };
        let good = wire(&m);
        let as_hello = |bytes: Vec<u8>| {
            let body = WireBody::Input(WireInput {
                peer_connect_status: Vec::new(),
                disconnect_requested: false,
                start_frame: HELLO_FRAME,
                ack_frame: NULL_FRAME,
                bytes,
            });
            Hello::of(&WireMessage { magic: 0, body }.to_ggrs().unwrap())
        };
        assert!(as_hello(good.clone()).is_some());
        // Truncated, one byte too many, another version, more echoes than are kept.
        assert_eq!(as_hello(good[..good.len() - 1].to_vec()), None);
        assert_eq!(as_hello([good.clone(), vec![0]].concat()), None);
        let mut other = good.clone();
        other[0] = 2;
        assert_eq!(as_hello(other), None);
        let mut many = good[..1 + 64 + NONCE_LEN].to_vec();
        many.push(ECHOES_KEPT as u8 + 1);
        many.extend(vec![0; NONCE_LEN * (ECHOES_KEPT + 1)]);
        assert_eq!(as_hello(many), None);
        // The same bytes in a guard message are not an introduction.
        assert_eq!(Hello::of(&body(good)), None);
    }

    #[test]
    fn rle_decoding_is_bounded() {
        assert_eq!(rle_decode(&[0x80], 100), Err("ends inside a length"));
        // A repeat run of 2^40 bytes.
        let mut huge = Vec::new();
        let mut v: u64 = (1u64 << 40) << 2 | 1;
        while v >= 0x80 {
            huge.push((v as u8) | 0x80);
            v >>= 7;
        }
        huge.push(v as u8);
        assert!(rle_decode(&huge, 1 << 20).is_err());
        // A literal run past the end.
        assert!(rle_decode(&[4 << 1, 1], 100).is_err());
        // A valid payload: 3 literal bytes then 5 bytes of 0xff.
        assert_eq!(
            rle_decode(&[3 << 1, 1, 2, 3, (5 << 2) | 3], 100),
            Ok(vec![1, 2, 3, 255, 255, 255, 255, 255])
        );
        // Eleven continuation bytes overflow a u64.
        assert!(rle_decode(&[0xff; 11], 100).is_err());
    }

    #[test]
    fn every_message_kind_round_trips_through_the_mirror() {
        let bodies = [
            WireBody::SyncRequest(7),
            WireBody::SyncReply(9),
            WireBody::Input(WireInput {
                peer_connect_status: vec![WireStatus { disconnected: true, last_frame: 12 }],
                disconnect_requested: false,
                start_frame: 3,
                ack_frame: -1,
                bytes: vec![1, 2, 3],
            }),
            WireBody::InputAck(5),
            WireBody::QualityReport { frame_advantage: -3, ping: 1 << 100 },
            WireBody::QualityReply(77),
            WireBody::ChecksumReport { checksum: u128::MAX, frame: 40 },
            WireBody::KeepAlive,
        ];
        for body in bodies {
            let w = WireMessage { magic: 0xbeef, body };
            let m = w.to_ggrs().expect("the mirror converts to a GGRS message");
            assert_eq!(WireMessage::from_ggrs(&m), Some(w.clone()));
            assert_eq!(message_from_bytes(&message_to_bytes(&m)), Some(m));
        }
    }
}
