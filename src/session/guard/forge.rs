//! Builders of GGRS messages with any field values, as a hostile peer would send them: for
//! hostile-peer tests and the `session` fuzz target (public with the `forge` feature; the
//! guard uses a few of them itself).

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
/// `player` is out of the match (or, sent by that address itself: I am leaving); I hold its
/// input through `have`", in the membership where nobody else is out (epoch 0).
pub fn depart(magic: u16, player: u16, have: i32) -> Message {
    depart_in(magic, &[], player, have, 0)
}

/// [`depart`] in the membership where the players `out` (each address's first player,
/// ascending) are out, with the digest of the leaver's input through `have`.
pub fn depart_in(magic: u16, out: &[u16], player: u16, have: i32, digest: u64) -> Message {
    let key = super::Key::of(out.to_vec());
    guard_message(magic, &super::GuardMsg::Depart { key, player, have, digest })
}

/// A message of the guards' departure protocol relaying a leaver's input frames (in the
/// membership where nobody else is out).
pub fn relay(magic: u16, player: u16, start: i32, frames: Vec<Vec<u8>>) -> Message {
    relay_in(magic, &[], player, start, frames)
}

/// [`relay`] in the membership where the players `out` are out.
pub fn relay_in(magic: u16, out: &[u16], player: u16, start: i32, frames: Vec<Vec<u8>>) -> Message {
    let key = super::Key::of(out.to_vec());
    guard_message(magic, &super::GuardMsg::Relay { key, player, start, frames, proof: None })
}

/// [`relay_in`] of a run of signed inputs: the proof that the leaver sent them (a relay
/// of a signed leaver's input without a valid one is refused).
pub fn relay_signed(
    magic: u16,
    out: &[u16],
    player: u16,
    run: &crate::session::SignedInputs,
) -> Message {
    let key = super::Key::of(out.to_vec());
    let proof = Some(super::RelayProof { before: run.before, signature: run.signature });
    let msg =
        super::GuardMsg::Relay { key, player, start: run.first, frames: run.inputs.clone(), proof };
    guard_message(magic, &msg)
}

/// The digest the guards exchange of a leaver's input frames `frames`, the last of which
/// is frame `have` (what [`depart_in`] carries).
pub fn digest_of(have: i32, frames: &[Vec<u8>]) -> u64 {
    let first = have.saturating_sub(frames.len() as i32 - 1);
    super::digest_frames(
        have,
        frames.iter().enumerate().map(|(k, f)| (first.saturating_add(k as i32), f.as_slice())),
    )
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

/// An introduction ([`Guard::introduce`](super::Guard::introduce)) announcing `identity`
/// with `nonce`, echoing `echoes` (at most four are kept).
pub fn introduction(
    identity: crate::session::PublicIdentity,
    nonce: [u8; 16],
    echoes: &[[u8; 16]],
) -> Message {
    let echoes = echoes.iter().take(super::ECHOES_KEPT).copied().collect();
    super::Hello { identity, nonce, echoes }.to_message()
}

/// Whether `msg` is an introduction (what a test's socket needs to hold one back and make
/// other datagrams overtake it).
pub fn is_introduction(msg: &Message) -> bool {
    super::Hello::of(msg).is_some()
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

pub(super) fn unreachable_message() -> Message {
    // bincode of {magic: 0, body: KeepAlive}: a u16 and the u32 variant index 7.
    super::message_from_bytes(&[0, 0, 7, 0, 0, 0]).expect("GGRS's keep-alive layout")
}
