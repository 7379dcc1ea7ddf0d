//! [`Inbox`]: what a [`MatchTransport`](super::MatchTransport) keeps between reads — GGRS
//! messages by session channel, side-channel messages from the match's slots and from anyone
//! else, each queue bounded — and [`TransportStats`], what it dropped and why. Shared by the
//! UDP and the matchbox transports, whose packets carry the same tags.

use super::guard::{message_from_bytes, message_to_bytes};
use ggrs::Message;
use std::collections::{BTreeMap, VecDeque};

/// The first byte of a packet carrying a GGRS message (then the session channel, 4 bytes
/// little-endian, then the message in GGRS's own encoding).
const SESSION: u8 = b'G';
/// The first byte of a packet of the side channel (then its bytes).
const SIDE: u8 = b'R';
/// The largest packet filed (a GGRS message or a side-channel message is a few hundred bytes
/// to a little over a kilobyte; a UDP payload is at most 65,507 bytes).
const MAX_PACKET: usize = 64 * 1024;
/// GGRS messages kept per session channel until a socket of that channel reads them.
const MAX_QUEUED: usize = 4096;
/// Side-channel messages from the match's slots kept until they are read.
const MAX_QUEUED_RAW: usize = 1024;
/// Side-channel messages from addresses that are no slot's kept until they are read: a queue
/// of their own, so strangers never crowd out the members' messages.
const MAX_QUEUED_STRANGERS: usize = 64;

/// What a transport ([`UdpTransport`](super::UdpTransport), matchbox's `MatchboxTransport`)
/// saw: packets it dropped and why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransportStats {
    /// Packets read from the network.
    pub received: u64,
    /// Packets sent.
    pub sent: u64,
    /// Dropped: anything but a side-channel packet (a GGRS packet, garbage; over matchbox, a
    /// game message) from an address that is not one of the match's slots.
    pub foreign: u64,
    /// Side-channel packets from an address that is not one of the match's slots, handed to
    /// the rejoin protocol (a player may come back from a new address; its claim is checked
    /// under its slot's key). Those beyond a small queue are dropped and counted in
    /// [`TransportStats::overflow`].
    pub strangers: u64,
    /// Dropped: not a packet of this transport (unknown kind, cut, oversized, undecodable).
    pub malformed: u64,
    /// Dropped: a GGRS message of a session channel this peer has left behind.
    pub stale: u64,
    /// Dropped: a queue was full (a peer sending faster than this one reads).
    pub overflow: u64,
}

/// The packet that carries GGRS message `msg` of session channel `channel`.
pub(crate) fn session_packet(channel: u32, msg: &Message) -> Vec<u8> {
    let mut packet = vec![SESSION];
    packet.extend_from_slice(&channel.to_le_bytes());
    packet.extend_from_slice(&message_to_bytes(msg));
    packet
}

/// The packet that carries side-channel `bytes`.
pub(crate) fn side_packet(bytes: &[u8]) -> Vec<u8> {
    let mut packet = Vec::with_capacity(1 + bytes.len());
    packet.push(SIDE);
    packet.extend_from_slice(bytes);
    packet
}

/// The queues of a transport (see the module documentation).
#[derive(Debug)]
pub(crate) struct Inbox<A> {
    /// GGRS messages waiting, by session channel.
    sessions: BTreeMap<u32, VecDeque<(A, Message)>>,
    /// Side-channel messages from the slots waiting.
    raw: VecDeque<(A, Vec<u8>)>,
    /// Side-channel messages from addresses that are no slot's waiting.
    strangers: VecDeque<(A, Vec<u8>)>,
    /// The lowest session channel still read: messages of lower ones are dropped.
    lowest: u32,
    /// What was dropped, and the packets counted by the transport.
    pub(crate) stats: TransportStats,
}

impl<A> Default for Inbox<A> {
    fn default() -> Self {
        Inbox {
            sessions: BTreeMap::new(),
            raw: VecDeque::new(),
            strangers: VecDeque::new(),
            lowest: 0,
            stats: TransportStats::default(),
        }
    }
}

impl<A> Inbox<A> {
    /// Files one untrusted packet from `from`, one of the match's slots if `slot`: a GGRS
    /// message from a slot by its channel, a side-channel message in the slots' queue or the
    /// strangers'; anything else is dropped and counted.
    pub(crate) fn file(&mut self, from: A, slot: bool, packet: &[u8]) {
        if packet.len() > MAX_PACKET {
            self.stats.malformed += 1;
            return;
        }
        match packet.split_first() {
            Some((&SIDE, bytes)) if slot && self.raw.len() < MAX_QUEUED_RAW => {
                self.raw.push_back((from, bytes.to_vec()));
            }
            Some((&SIDE, bytes)) if !slot && self.strangers.len() < MAX_QUEUED_STRANGERS => {
                self.stats.strangers += 1;
                self.strangers.push_back((from, bytes.to_vec()));
            }
            Some((&SIDE, _)) => self.stats.overflow += 1,
            // Only the side channel is open to strangers.
            _ if !slot => self.stats.foreign += 1,
            Some((&SESSION, rest)) if rest.len() >= 4 => {
                let channel = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
                if channel < self.lowest {
                    self.stats.stale += 1;
                    return;
                }
                let Some(msg) = message_from_bytes(&rest[4..]) else {
                    self.stats.malformed += 1;
                    return;
                };
                let queue = self.sessions.entry(channel).or_default();
                if queue.len() >= MAX_QUEUED {
                    self.stats.overflow += 1;
                } else {
                    queue.push_back((from, msg));
                }
            }
            _ => self.stats.malformed += 1,
        }
    }

    /// A socket of session channel `channel` reads: messages of every lower channel are
    /// dropped, now and from then on (the peer has moved on).
    pub(crate) fn leave_below(&mut self, channel: u32) {
        if channel > self.lowest {
            self.lowest = channel;
            let stale: usize = self.sessions.range(..channel).map(|(_, q)| q.len()).sum();
            self.stats.stale += stale as u64;
            self.sessions = self.sessions.split_off(&channel);
        }
    }

    /// The GGRS messages of session channel `channel` waiting (taken).
    pub(crate) fn take_session(&mut self, channel: u32) -> Vec<(A, Message)> {
        self.sessions.remove(&channel).map(Vec::from).unwrap_or_default()
    }

    /// The side-channel messages waiting, the slots' first (taken).
    pub(crate) fn take_side(&mut self) -> Vec<(A, Vec<u8>)> {
        let mut out: Vec<_> = self.raw.drain(..).collect();
        out.extend(self.strangers.drain(..));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GGRS keep-alive with magic `magic` (bincode: the magic, then variant index 7).
    fn keep_alive(magic: u16) -> Message {
        let mut bytes = magic.to_le_bytes().to_vec();
        bytes.extend(7u32.to_le_bytes());
        message_from_bytes(&bytes).expect("a keep-alive decodes")
    }

    /// GGRS messages are filed by channel and read once; a lower channel is dropped once a
    /// higher one is read; strangers' GGRS packets are dropped and their side-channel packets
    /// kept apart, after the slots'.
    #[test]
    fn packets_are_filed_by_kind_channel_and_sender() {
        let mut inbox = Inbox::<u8>::default();
        inbox.file(1, true, &session_packet(0, &keep_alive(5)));
        inbox.file(1, true, &session_packet(1, &keep_alive(6)));
        inbox.file(9, false, &session_packet(1, &keep_alive(7)));
        inbox.file(9, false, &side_packet(b"join"));
        inbox.file(2, true, &side_packet(b"pause"));
        assert_eq!(inbox.stats.foreign, 1);
        assert_eq!(inbox.stats.strangers, 1);
        assert_eq!(inbox.take_side(), vec![(2, b"pause".to_vec()), (9, b"join".to_vec())]);
        inbox.leave_below(1);
        assert_eq!(inbox.stats.stale, 1);
        let got = inbox.take_session(1);
        assert_eq!(got.len(), 1);
        assert!(inbox.take_session(1).is_empty());
        inbox.file(1, true, &session_packet(0, &keep_alive(8)));
        assert_eq!(inbox.stats.stale, 2);
        assert!(inbox.take_session(0).is_empty());
    }

    /// Cut, unknown, oversized and undecodable packets are dropped and counted; full queues
    /// drop the newest.
    #[test]
    fn hostile_packets_are_counted_not_filed() {
        let mut inbox = Inbox::<u8>::default();
        for bad in [&b""[..], b"G", b"G\x00\x00", b"Xhello", b"G\x00\x00\x00\x00\xff\xff"] {
            inbox.file(1, true, bad);
        }
        inbox.file(1, true, &vec![b'R'; MAX_PACKET + 1]);
        assert_eq!(inbox.stats.malformed, 6);
        inbox.file(9, false, b"Xhello");
        assert_eq!(inbox.stats.foreign, 1);
        for _ in 0..MAX_QUEUED_STRANGERS + 5 {
            inbox.file(9, false, &side_packet(b"x"));
        }
        assert_eq!(inbox.stats.overflow, 5);
        assert_eq!(inbox.take_side().len(), MAX_QUEUED_STRANGERS);
    }
}
