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
//! - at most [`GuardConfig::max_messages_per_poll`] messages per sender per poll; after
//!   [`GuardConfig::ban_after`] faults a sender is banned (and leaves, below).
//!
//! **Departures.** GGRS never hears "player X left" from a peer: the guard removes those claims.
//! When a player leaves — it went silent for the runner's departure time, was kicked, asked to
//! disconnect, or was banned — every survivor's guard stops reading it, freezes the input it has
//! from it, and tells the other survivors how far that input goes. The survivors that have more
//! relay the missing frames to those that have fewer; once every survivor has answered and holds
//! the latest frame any of them has, the guard makes GGRS disconnect the leaver's players after
//! exactly that frame (it reports them disconnected there on behalf of every endpoint). Every
//! survivor thus simulates the same inputs, the rollback this causes lies inside the prediction
//! window (no survivor confirmed a frame past the leaver's last input), and no frame a survivor
//! confirmed ever changes. Each step is a [`Departure`].
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

/// GGRS's frame number type.
type GgrsFrame = i32;
const NULL_FRAME: GgrsFrame = -1;

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
/// hostile-peer tests and the `session` fuzz target).
#[doc(hidden)]
pub mod forge {
    use super::{WireBody, WireInput, WireMessage, WireStatus};
    use ggrs::Message;

    /// An input message.
    pub fn input(
        magic: u16,
        statuses: &[(bool, i32)],
        disconnect_requested: bool,
        start_frame: i32,
        ack_frame: i32,
        bytes: Vec<u8>,
    ) -> Message {
        let body = WireBody::Input(WireInput {
            peer_connect_status: statuses
                .iter()
                .map(|&(disconnected, last_frame)| WireStatus { disconnected, last_frame })
                .collect(),
            disconnect_requested,
            start_frame,
            ack_frame,
            bytes,
        });
        build(magic, body)
    }

    /// A checksum report.
    pub fn checksum(magic: u16, frame: i32, checksum: u128) -> Message {
        build(magic, WireBody::ChecksumReport { checksum, frame })
    }

    /// A quality report.
    pub fn quality(magic: u16, frame_advantage: i16, ping: u128) -> Message {
        build(magic, WireBody::QualityReport { frame_advantage, ping })
    }

    /// A quality reply echoing `pong`, the stamp of a quality report.
    pub fn quality_reply(magic: u16, pong: u128) -> Message {
        build(magic, WireBody::QualityReply(pong))
    }

    /// An input acknowledgement.
    pub fn ack(magic: u16, frame: i32) -> Message {
        build(magic, WireBody::InputAck(frame))
    }

    /// A keep-alive.
    pub fn keep_alive(magic: u16) -> Message {
        build(magic, WireBody::KeepAlive)
    }

    /// The payload GGRS would send for these frames of input (delta against `reference`, then
    /// run-length encoded as literal runs).
    pub fn encode_inputs(reference: &[u8], frames: &[Vec<u8>]) -> Vec<u8> {
        super::encode_inputs(reference, frames)
    }

    /// A message of the guards' departure protocol: "the address whose first player is
    /// `player` is leaving; I hold its input through `have`".
    pub fn depart(magic: u16, player: u16, have: i32) -> Message {
        guard_message(magic, &super::GuardMsg::Depart { player, have })
    }

    /// A message of the guards' departure protocol relaying a leaver's input frames.
    pub fn relay(magic: u16, player: u16, start: i32, frames: Vec<Vec<u8>>) -> Message {
        guard_message(magic, &super::GuardMsg::Relay { player, start, frames })
    }

    /// A guard message with any payload bytes (decodable or not).
    pub fn guard_bytes(magic: u16, bytes: Vec<u8>) -> Message {
        build(
            magic,
            WireBody::Input(WireInput {
                peer_connect_status: Vec::new(),
                disconnect_requested: false,
                start_frame: super::GUARD_FRAME,
                ack_frame: -1,
                bytes,
            }),
        )
    }

    fn guard_message(magic: u16, msg: &super::GuardMsg) -> Message {
        guard_bytes(magic, bincode1::serialize(msg).unwrap_or_default())
    }

    /// The session number (magic) a message carries.
    pub fn magic_of(m: &Message) -> Option<u16> {
        WireMessage::from_ggrs(m).map(|w| w.magic)
    }

    fn build(magic: u16, body: WireBody) -> Message {
        // The mirror's layout is GGRS's (pinned by a unit test), so this conversion succeeds;
        // should it not, a keep-alive is the harmless stand-in.
        WireMessage { magic, body }
            .to_ggrs()
            .or_else(|| WireMessage { magic, body: WireBody::KeepAlive }.to_ggrs())
            .unwrap_or_else(unreachable_message)
    }

    fn unreachable_message() -> Message {
        // bincode of {magic: 0, body: KeepAlive}: a u16 and the u32 variant index 7.
        super::message_from_bytes(&[0, 0, 7, 0, 0, 0]).expect("GGRS's keep-alive layout")
    }
}

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

/// A step of a departure, as the guard reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Departure<A> {
    /// This peer stopped listening to `peer` (it went silent, was kicked, misbehaved, or another
    /// survivor said it left) and is agreeing with the other survivors on where its input ends.
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
    /// Input messages resent in paced mode.
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
}

/// The start frame that marks a message of the guards' own protocol (negative: GGRS itself
/// never sends it and drops such input unread).
const GUARD_FRAME: GgrsFrame = -0x4752;

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

/// The guards' departure protocol (inside a GGRS input message, see [`GUARD_FRAME`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum GuardMsg {
    /// "The address whose first player is `player` is leaving; I hold its input through
    /// `have`."
    Depart { player: u16, have: GgrsFrame },
    /// The leaver's input frames from `start` on, for a survivor that has fewer.
    Relay { player: u16, start: GgrsFrame, frames: Vec<Vec<u8>> },
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
    /// GGRS has disconnected it (an agreed departure was injected).
    gone: bool,
    /// The session number this peer's GGRS uses toward it (one per endpoint).
    own_magic: Option<u16>,
    /// Paced mode: the newest input message sent to it and the tick it was sent.
    newest_input: Option<Message>,
    newest_tick: u64,
    /// Paced mode: the input frames this peer sent to it, by frame (what a resend re-encodes).
    own_frames: BTreeMap<GgrsFrame, Vec<u8>>,
    /// The newest of this peer's frames it acknowledged.
    acked: GgrsFrame,
    /// The ping stamps of the last quality reports this peer sent it (a reply must echo one).
    pings: VecDeque<u128>,
    /// Messages it may still send before it floods (see [`GuardConfig::flood_rate`]).
    allowance: u32,
}

/// Quality reports remembered per remote (GGRS sends one every 200 ms).
const PINGS_KEPT: usize = 16;

struct Leave {
    /// Index of the leaver in `remotes`.
    remote: usize,
    /// The other survivors' `have`, by remote index.
    haves: Vec<Option<GgrsFrame>>,
    agreed: Option<GgrsFrame>,
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
        self.leaves.push(Leave { remote: i, haves: vec![None; n], agreed: None, linger: 0 });
        self.leaves_begun += 1;
        let r = &self.remotes[i];
        self.departures
            .push_back(Departure::Leaving { peer: r.addr.clone(), players: r.handles.clone() });
    }

    /// The remote whose first player is `player`.
    fn by_first_player(&self, player: u16) -> Option<usize> {
        self.remotes.iter().position(|r| r.handles.first() == Some(&usize::from(player)))
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
            // A player announcing its own departure is a departure all the same.
            self.begin_leave(x);
            return Ok(());
        }
        match msg {
            GuardMsg::Depart { have, .. } => {
                if have < NULL_FRAME {
                    return Err(Fault::BadDepartureMessage { what: "has a negative frame" });
                }
                // No survivor can hold input far past this peer's own frame (they wait on each
                // other): a larger claim is a lie that would stall the agreement.
                if have > self.current.saturating_add(self.frame_window()) {
                    return Err(Fault::BadDepartureMessage { what: "claims input far ahead" });
                }
                self.begin_leave(x);
                if let Some(l) = self.leaves.iter_mut().find(|l| l.remote == x) {
                    let h = &mut l.haves[from];
                    *h = Some(h.map_or(have, |o| o.max(have)));
                }
                Ok(())
            }
            GuardMsg::Relay { start, frames, .. } => {
                let frame_len = self.frame_len(x);
                if frames.len() > RELAY_CHUNK || frames.iter().any(|f| f.len() != frame_len) {
                    return Err(Fault::BadDepartureMessage { what: "carries malformed frames" });
                }
                // A player's first input follows the input delay, near the match's start (as
                // for its own first input message, `Fault::InputGap`): GGRS would fill every
                // frame before a far start.
                let first_limit = self.config.max_prediction as GgrsFrame + 64;
                if self.remotes[x].last_frame == NULL_FRAME && start > first_limit {
                    return Err(Fault::BadDepartureMessage {
                        what: "relays a first frame far ahead",
                    });
                }
                let Some(l) = self.leaves.iter().find(|l| l.remote == x) else { return Ok(()) };
                if l.agreed.is_some() {
                    return Ok(());
                }
                let own = self.remotes[x].last_frame;
                // A sender's first input may start past frame 0 (the frames before it are the
                // default input, as GGRS fills them): with none yet, any start is the next.
                let first = own == NULL_FRAME;
                if start < 0 || (!first && start > own.saturating_add(1)) {
                    return Ok(()); // not the next frames: a later relay brings them
                }
                let skip =
                    if first { 0 } else { own.saturating_add(1).saturating_sub(start) as usize };
                let start = if first { start } else { own.saturating_add(1) };
                let new: Vec<Vec<u8>> = frames.into_iter().skip(skip).collect();
                if new.is_empty() {
                    return Ok(());
                }
                let check = self.check_input;
                if self.input_size > 0 && !new.iter().all(|f| f.chunks(self.input_size).all(check))
                {
                    return Err(Fault::BadDepartureMessage { what: "carries invalid inputs" });
                }
                self.deliver_relayed(x, start, new);
                Ok(())
            }
        }
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
        let keep = r.last_frame - INPUT_HISTORY;
        r.inputs.retain(|k, _| *k >= keep);
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
            let every = u64::from(self.config.resend_ticks.max(1));
            for r in &mut self.remotes {
                if r.cut || r.gone {
                    continue;
                }
                if let Some(m) = &r.newest_input
                    && self.tick >= r.newest_tick + every
                {
                    r.newest_tick = self.tick;
                    if let Some(m) = rebased_resend(r, m) {
                        self.outbox.push((r.addr.clone(), m));
                        self.stats.paced_resent += 1;
                    }
                }
            }
        }
        let survivors: Vec<usize> = self.survivors().collect();
        let mut finished = Vec::new();
        // GGRS keeps one rollback frame for disconnects, and every disconnect it learns of in one
        // `advance_frame` overwrites it: two departures reaching it together would roll back for
        // only one of them, and the survivors would split. One agreed departure reaches GGRS per
        // tick; the next waits for the following tick.
        let mut injected = false;
        for li in 0..self.leaves.len() {
            let x = self.leaves[li].remote;
            let player = self.remotes[x].handles[0] as u16;
            let own = self.remotes[x].last_frame;
            let have = self.leaves[li].agreed.unwrap_or(own);
            // Announce, and relay what a survivor lacks.
            for &s in &survivors {
                let depart = GuardMsg::Depart { player, have };
                self.send_guard(s, &depart);
                if let Some(theirs) = self.leaves[li].haves[s]
                    && theirs < own
                {
                    // From the frame after theirs, or the leaver's first input if they have none.
                    let inputs = &self.remotes[x].inputs;
                    let from = if theirs == NULL_FRAME {
                        inputs.range(0..).next().map_or(0, |(f, _)| *f)
                    } else {
                        theirs + 1
                    };
                    let frames: Vec<Vec<u8>> = (from..=own)
                        .take(RELAY_CHUNK)
                        .map_while(|f| self.remotes[x].inputs.get(&f).cloned())
                        .collect();
                    if !frames.is_empty() {
                        let relay = GuardMsg::Relay { player, start: from, frames };
                        self.send_guard(s, &relay);
                    }
                }
            }
            let l = &mut self.leaves[li];
            if l.agreed.is_some() {
                l.linger += 1;
                if l.linger >= self.config.departure_linger {
                    finished.push(li);
                }
                continue;
            }
            // Agreement: every survivor's `have` is known; the leaver's input ends at the
            // latest frame any survivor has, once this peer has it too (relayed).
            if injected || survivors.iter().any(|&s| l.haves[s].is_none()) {
                continue;
            }
            let q = survivors.iter().filter_map(|&s| l.haves[s]).fold(own, GgrsFrame::max);
            // GGRS would roll back to q + 1: it must not be the frame about to be simulated.
            if own < q || self.current == q.saturating_add(1) {
                continue;
            }
            l.agreed = Some(q);
            self.inject_disconnect(x, q);
            injected = true;
        }
        for li in finished.into_iter().rev() {
            self.leaves.remove(li);
        }
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
    /// input ends at (a [`Departure::Left`] follows).
    pub fn leave(&self, addr: &A) {
        let mut s = lock(&self.shared);
        if let Some(i) = s.index(addr) {
            s.begin_leave(i);
        }
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
        }
    }

    /// Survivors that have not answered a departure being agreed on leave too (the
    /// [`Runner`](super::Runner) calls this when an agreement has waited its departure time:
    /// a survivor that vanished, or stopped listening to this peer, mid-agreement).
    pub fn leave_unresponsive(&self) {
        let mut s = lock(&self.shared);
        let survivors: Vec<usize> = s.survivors().collect();
        let mut silent: Vec<usize> = Vec::new();
        for l in s.leaves.iter().filter(|l| l.agreed.is_none()) {
            let own = s.remotes[l.remote].last_frame;
            let q = survivors.iter().filter_map(|&i| l.haves[i]).fold(own, GgrsFrame::max);
            // Those that never answered, and those that hold frames this peer lacks but never
            // relayed them.
            silent.extend(survivors.iter().copied().filter(|&i| match l.haves[i] {
                None => true,
                Some(h) => own < q && h > own,
            }));
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
        for i in targets {
            for _ in 0..3 {
                s.send_guard(i, &GuardMsg::Depart { player, have: NULL_FRAME });
            }
        }
    }

    /// Departures begun so far (any cause: this peer's rule, a kick, a fault, another
    /// survivor's announcement).
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
                gone: false,
                own_magic: None,
                newest_input: None,
                newest_tick: 0,
                own_frames: BTreeMap::new(),
                acked: NULL_FRAME,
                pings: VecDeque::with_capacity(PINGS_KEPT),
                allowance: config.flood_burst,
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
    fn check(&mut self, i: usize, wire: &mut WireMessage) -> Result<Verdict, Fault> {
        let players = self.config.players;
        let max_pred = self.config.max_prediction as GgrsFrame;
        let current = self.current;
        let max_frames = self.config.max_frames_per_message;
        let spectating = self.config.spectating;
        let frame_len = self.frame_len(i);
        let input_size = self.input_size;
        let check_input = self.check_input;
        // The guards' own protocol: authenticated by the sender's pinned session number.
        if let WireBody::Input(input) = &wire.body
            && input.start_frame == GUARD_FRAME
        {
            return match self.remotes[i].magic {
                Some(m) if m == wire.magic => {
                    let bytes = input.bytes.clone();
                    self.on_guard_msg(i, &bytes).map(|()| Verdict::Consumed)
                }
                // Another session number, or none pinned yet: nothing ties it to the member.
                _ => Ok(Verdict::Unattributed),
            };
        }
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
            WireBody::Input(input) => {
                if remote.handles.is_empty() {
                    return Err(Fault::UnexpectedInput);
                }
                if input.disconnect_requested {
                    return Err(Fault::DisconnectRequest);
                }
                if input.ack_frame < NULL_FRAME {
                    return Err(Fault::FrameOutOfRange {
                        field: "ack_frame",
                        frame: input.ack_frame,
                    });
                }
                if input.ack_frame > remote.sent_frame {
                    return Err(Fault::AckAhead { ack: input.ack_frame, sent: remote.sent_frame });
                }
                remote.acked = remote.acked.max(input.ack_frame);
                if input.start_frame < 0 {
                    return Err(Fault::FrameOutOfRange {
                        field: "start_frame",
                        frame: input.start_frame,
                    });
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
                let limit = max_frames.saturating_mul(frame_len + 2);
                let buf = rle_decode(&input.bytes, limit)
                    .map_err(|what| Fault::BadInputEncoding { what })?;
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
                // An honest sender is at most its prediction window (plus its input delay)
                // ahead of the input this peer sent it, and GGRS's input queue holds 128
                // frames past this peer's confirmed frame (at least `current − max_pred`).
                let mut frames = frames;
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
                    let limit = ahead_limit(current, remote.sent_frame, max_pred);
                    if !frames.is_empty() && last > limit {
                        return Err(Fault::InputAhead { frame: last, limit });
                    }
                }
                if reference.is_some() {
                    for (k, bytes) in frames.iter().enumerate() {
                        let f = input.start_frame.saturating_add(k as GgrsFrame);
                        if input_size > 0 && !bytes.chunks(input_size).all(check_input) {
                            return Err(Fault::InputValue { frame: f });
                        }
                    }
                    for (k, bytes) in frames.into_iter().enumerate() {
                        let f = input.start_frame.saturating_add(k as GgrsFrame);
                        if f > remote.last_frame {
                            remote.inputs.insert(f, bytes);
                            remote.last_frame = f;
                        }
                    }
                    let keep = remote.last_frame - INPUT_HISTORY;
                    remote.inputs.retain(|k, _| *k >= keep);
                }
                if remote.magic.is_none() {
                    remote.magic = Some(wire.magic);
                }
                // Connection statuses: GGRS learns of a departure only from the guard's
                // agreement, never from one peer's claim (a claim at the wrong frame makes GGRS
                // roll back outside its window, or split the survivors).
                for (h, s) in input.peer_connect_status.iter_mut().enumerate() {
                    let acc = &mut remote.statuses[h];
                    if s.disconnected && !spectating && !acc.disconnected {
                        s.disconnected = false;
                        rewritten = true;
                    }
                    acc.last_frame = acc.last_frame.max(s.last_frame);
                    if spectating {
                        acc.disconnected |= s.disconnected;
                    }
                }
            }
        }
        Ok(Verdict::Pass(rewritten))
    }

    /// Records what this peer sends; `false` when the message must not go out.
    fn outgoing(&mut self, msg: &Message, addr: &A) -> bool {
        let Some(i) = self.index(addr) else { return true };
        if self.remotes[i].cut || self.remotes[i].gone {
            return false;
        }
        let Some(wire) = WireMessage::from_ggrs(msg) else { return true };
        if self.remotes[i].own_magic.is_none() {
            self.remotes[i].own_magic = Some(wire.magic);
        }
        let paced = self.config.paced;
        match &wire.body {
            WireBody::Input(input) => {
                let players = if self.remotes[i].handles.is_empty() {
                    self.config.players
                } else {
                    self.config.players
                        - self
                            .remotes
                            .iter()
                            .map(|r| r.handles.len())
                            .sum::<usize>()
                            .min(self.config.players)
                };
                let local_len = self.input_size * players.max(1);
                let buf = rle_decode(&input.bytes, usize::MAX).unwrap_or_default();
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

impl<S, A> NonBlockingSocket<A> for GuardedSocket<S, A>
where
    S: NonBlockingSocket<A>,
    A: Clone + PartialEq + Eq + Hash + Send + Sync,
{
    fn send_to(&mut self, msg: &Message, addr: &A) {
        let go = lock(&self.shared).outgoing(msg, addr);
        if go {
            self.inner.send_to(msg, addr);
        }
    }

    fn receive_all_messages(&mut self) -> Vec<(A, Message)> {
        // The guard's own traffic first (once per tick).
        let outbox = {
            let mut s = lock(&self.shared);
            s.pump();
            core::mem::take(&mut s.outbox)
        };
        for (addr, m) in &outbox {
            self.inner.send_to(m, addr);
        }
        let received = self.inner.receive_all_messages();
        let mut s = lock(&self.shared);
        let mut out = Vec::with_capacity(received.len());
        let mut per_sender = vec![0usize; s.remotes.len()];
        let mut flooded = vec![0usize; s.remotes.len()];
        let (rate, burst) = (s.config.flood_rate, s.config.flood_burst);
        for r in &mut s.remotes {
            r.allowance = r.allowance.saturating_add(rate).min(burst);
        }
        for (from, msg) in received {
            let Some(i) = s.index(&from) else {
                s.stats.unknown_sender += 1;
                s.stats.dropped += 1;
                continue;
            };
            let r = &s.remotes[i];
            if r.banned || r.gone {
                s.stats.dropped += 1;
                continue;
            }
            per_sender[i] += 1;
            if per_sender[i] > s.config.max_messages_per_poll || s.remotes[i].allowance == 0 {
                s.stats.dropped += 1;
                flooded[i] += 1;
                continue;
            }
            s.remotes[i].allowance -= 1;
            let Some(mut wire) = WireMessage::from_ggrs(&msg) else {
                s.stats.dropped += 1;
                s.fault(i, Fault::Undecodable);
                continue;
            };
            // A leaver's messages are not read (its input is frozen), except the guards'
            // protocol a cut-off survivor may still speak.
            let cut = s.remotes[i].cut;
            let guard_msg =
                matches!(&wire.body, WireBody::Input(inp) if inp.start_frame == GUARD_FRAME);
            if cut && !guard_msg {
                s.stats.dropped += 1;
                continue;
            }
            match s.check(i, &mut wire) {
                Ok(Verdict::Consumed) => {}
                Ok(Verdict::Unattributed) => {
                    s.stats.dropped += 1;
                    s.stats.unattributed += 1;
                }
                Ok(Verdict::Implausible) => {
                    s.stats.dropped += 1;
                    s.stats.implausible += 1;
                }
                Ok(Verdict::Deferred) => {
                    s.stats.dropped += 1;
                    s.stats.deferred += 1;
                }
                Ok(Verdict::Pass(false)) => {
                    s.stats.passed += 1;
                    out.push((from, msg));
                }
                Ok(Verdict::Pass(true)) => match wire.to_ggrs() {
                    Some(m) if matches!(wire.body, WireBody::QualityReport { .. }) => {
                        s.stats.passed += 1;
                        s.stats.implausible += 1;
                        out.push((from, m));
                    }
                    Some(m) if s.config.spectating => {
                        s.stats.passed += 1;
                        s.stats.deferred += 1;
                        out.push((from, m));
                    }
                    Some(m) => {
                        s.stats.passed += 1;
                        s.stats.rewritten += 1;
                        out.push((from, m));
                    }
                    None => s.stats.dropped += 1,
                },
                Err(Fault::DisconnectRequest) => {
                    s.stats.dropped += 1;
                    s.fault(i, Fault::DisconnectRequest);
                    s.begin_leave(i);
                }
                Err(fault) => {
                    s.stats.dropped += 1;
                    s.fault(i, fault);
                }
            }
        }
        for (i, dropped) in flooded.into_iter().enumerate() {
            if dropped > 0 {
                s.fault(i, Fault::Flood { dropped });
            }
        }
        out.append(&mut s.inject);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
