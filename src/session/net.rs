//! An in-memory network for GGRS sessions: a hub of sockets with seeded latency, jitter,
//! loss, duplication and reordering, driven by a virtual clock (no real sockets, no sleeps).

use crate::random::Stream;
use core::fmt;
use ggrs::{Message, NonBlockingSocket};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// A peer's address on an [`EmulatedNetwork`].
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct PeerAddr(pub u16);

impl fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "peer{}", self.0)
    }
}

/// How the network mistreats packets. Probabilities are in percent (0–100).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NetConditions {
    /// Base one-way latency in milliseconds.
    pub latency_ms: u32,
    /// Extra random latency in `0..=jitter_ms` per packet (packets overtake each other).
    pub jitter_ms: u32,
    /// Percent of packets dropped.
    pub loss_percent: u32,
    /// Percent of packets delivered twice (with independent delays).
    pub duplicate_percent: u32,
    /// Percent of packets held back an extra 1–3 frames (16–50 ms) to force reordering.
    pub reorder_percent: u32,
}

impl NetConditions {
    /// A perfect network (instant, lossless).
    pub const PERFECT: NetConditions = NetConditions {
        latency_ms: 0,
        jitter_ms: 0,
        loss_percent: 0,
        duplicate_percent: 0,
        reorder_percent: 0,
    };

    /// The harsh network the tests use: 20 % loss, 10 % duplication, 10 % reordering and
    /// 0–150 ms of latency.
    pub const HARSH: NetConditions = NetConditions {
        latency_ms: 0,
        jitter_ms: 150,
        loss_percent: 20,
        duplicate_percent: 10,
        reorder_percent: 10,
    };
}

/// Counters of an emulated network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetStats {
    /// Packets handed to the network.
    pub sent: u64,
    /// Packets delivered (duplicates included).
    pub delivered: u64,
    /// Packets dropped (loss or partition).
    pub dropped: u64,
    /// Extra copies created.
    pub duplicated: u64,
    /// Packets held back for reordering.
    pub reordered: u64,
    /// Raw side-channel packets (handshakes, rejoins).
    pub raw: u64,
    /// Bytes of the raw side-channel packets.
    pub raw_bytes: u64,
    /// GGRS messages of an earlier session channel dropped on arrival (see
    /// [`EmulatedNetwork::socket_on_channel`]).
    pub stale: u64,
}

struct InFlight {
    deliver_at: u64,
    seq: u64,
    from: PeerAddr,
    /// The session channel of a GGRS message (0 for raw packets).
    channel: u32,
    payload: Payload,
}

enum Payload {
    Ggrs(Message),
    Raw(Vec<u8>),
}

struct Hub {
    now_ms: u64,
    seq: u64,
    seed: u64,
    conditions: NetConditions,
    /// Conditions of single links (lower address first), overriding `conditions`.
    links: BTreeMap<(PeerAddr, PeerAddr), NetConditions>,
    impaired: bool,
    /// The impairments apply to the side channel too (a real network's: see
    /// [`EmulatedNetwork::set_side_channel_impaired`]).
    side_impaired: bool,
    partitioned: BTreeSet<PeerAddr>,
    queues: BTreeMap<PeerAddr, Vec<InFlight>>,
    stats: NetStats,
}

/// An in-memory network of GGRS sockets. Cheap to clone (shared).
///
/// Time only moves when [`EmulatedNetwork::advance_ms`] is called, so a test decides how
/// much "wall time" a frame takes; the random impairments are seeded, so a run is
/// reproducible. Impairments start switched off ([`EmulatedNetwork::set_impaired`]) so that
/// GGRS's synchronisation handshake, which retries on real time, completes at once.
///
/// ```
/// use rollback_abilities::session::{EmulatedNetwork, NetConditions, PeerAddr};
/// let net = EmulatedNetwork::new(NetConditions::HARSH, 7);
/// let a = net.socket(PeerAddr(0));
/// let b = net.socket(PeerAddr(1));
/// a.send_raw(PeerAddr(1), b"hello".to_vec());
/// assert_eq!(b.recv_raw(), vec![(PeerAddr(0), b"hello".to_vec())]);
/// ```
#[derive(Clone)]
pub struct EmulatedNetwork {
    hub: Arc<Mutex<Hub>>,
}

impl fmt::Debug for EmulatedNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = self.lock();
        f.debug_struct("EmulatedNetwork")
            .field("now_ms", &h.now_ms)
            .field("stats", &h.stats)
            .finish()
    }
}

impl EmulatedNetwork {
    /// A network with conditions and a seed for its impairments.
    pub fn new(conditions: NetConditions, seed: u64) -> EmulatedNetwork {
        EmulatedNetwork {
            hub: Arc::new(Mutex::new(Hub {
                now_ms: 0,
                seq: 0,
                seed,
                conditions,
                links: BTreeMap::new(),
                impaired: false,
                side_impaired: false,
                partitioned: BTreeSet::new(),
                queues: BTreeMap::new(),
                stats: NetStats::default(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Hub> {
        // A poisoned lock only means another thread panicked while holding it; the hub's data
        // stays consistent (every mutation is a single push or drain).
        self.hub.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A socket with an address on this network.
    pub fn socket(&self, addr: PeerAddr) -> EmulatedSocket {
        self.socket_on_channel(addr, 0)
    }

    /// A socket with an address on this network for one session *channel*: its GGRS messages
    /// reach only sockets of the same channel, so a new GGRS session between the same addresses
    /// (after a rejoin, the members continue in a fresh session) never hears the old one. A
    /// socket drops GGRS messages of a lower channel on arrival and leaves those of a higher one
    /// queued until a socket of that channel reads them (a peer that switched first is heard
    /// once the others switch). Raw side-channel packets have no channel.
    pub fn socket_on_channel(&self, addr: PeerAddr, channel: u32) -> EmulatedSocket {
        self.lock().queues.entry(addr).or_default();
        EmulatedSocket { addr, channel, net: self.clone() }
    }

    /// Advances the virtual clock.
    pub fn advance_ms(&self, ms: u64) {
        let mut h = self.lock();
        h.now_ms = h.now_ms.saturating_add(ms);
    }

    /// Drops every packet in flight and sets the clock back to 0 (a match starting after a
    /// handshake whose duration does not matter).
    pub fn restart_clock(&self) {
        let mut h = self.lock();
        h.now_ms = 0;
        for q in h.queues.values_mut() {
            q.clear();
        }
    }

    /// The virtual clock in milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.lock().now_ms
    }

    /// Switches the impairments on or off.
    pub fn set_impaired(&self, on: bool) {
        self.lock().impaired = on;
    }

    /// Whether the impairments (while on) also apply to raw side-channel packets, as on a real
    /// network (UDP: see [`MatchTransport`](super::MatchTransport)). Off by default: the side
    /// channel is then reliable and in order, as the session handshake over a lobby is.
    pub fn set_side_channel_impaired(&self, on: bool) {
        self.lock().side_impaired = on;
    }

    /// Changes the conditions.
    pub fn set_conditions(&self, c: NetConditions) {
        self.lock().conditions = c;
    }

    /// Gives the link between two peers (both directions) its own conditions, overriding the
    /// network's ([`EmulatedNetwork::set_conditions`]) for packets between them.
    pub fn set_link_conditions(&self, a: PeerAddr, b: PeerAddr, c: NetConditions) {
        self.lock().links.insert((a.min(b), a.max(b)), c);
    }

    /// Cuts (or restores) every packet to and from a peer.
    pub fn partition(&self, addr: PeerAddr, cut: bool) {
        let mut h = self.lock();
        if cut {
            h.partitioned.insert(addr);
            if let Some(q) = h.queues.get_mut(&addr) {
                q.clear();
            }
        } else {
            h.partitioned.remove(&addr);
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> NetStats {
        self.lock().stats
    }

    fn send(&self, from: PeerAddr, to: PeerAddr, channel: u32, payload: Payload) {
        let mut h = self.lock();
        h.stats.sent += 1;
        if h.partitioned.contains(&from) || h.partitioned.contains(&to) {
            h.stats.dropped += 1;
            return;
        }
        let raw = matches!(payload, Payload::Raw(_));
        if let Payload::Raw(b) = &payload {
            h.stats.raw += 1;
            h.stats.raw_bytes += b.len() as u64;
        }
        let now = h.now_ms;
        let c = h.links.get(&(from.min(to), from.max(to))).copied().unwrap_or(h.conditions);
        // Each packet's fate is drawn from a stream keyed by its link, its virtual send time and
        // its content, never from one shared sequence: GGRS also sends packets on its own wall
        // clock (quality reports, keep-alives, input resends every 200 ms of real time), and
        // those must not change the fate of any other packet, or a seeded run would not be
        // reproducible.
        let content = match &payload {
            Payload::Ggrs(m) => message_digest(m),
            Payload::Raw(b) => twox_hash::XxHash3_64::oneshot(b),
        };
        let keys = [u64::from(from.0), u64::from(to.0), now, content];
        let mut rng = Stream::derive(h.seed ^ 0x4E37, &keys);
        // Raw side-channel packets (handshakes) are reliable and in order. So are GGRS's
        // synchronisation packets: GGRS retries a lost one on the wall clock, so losing them
        // would make a seeded run depend on the machine's load (a match synchronises on a clean
        // network, see `LocalMatch::synchronize`; a session started after a rejoin synchronises
        // while the match runs).
        let impaired = h.impaired && (!raw || h.side_impaired) && !is_sync(&payload);
        if impaired && rng.below(100) < c.loss_percent {
            h.stats.dropped += 1;
            return;
        }
        let copies = if impaired && rng.below(100) < c.duplicate_percent { 2 } else { 1 };
        if copies == 2 {
            h.stats.duplicated += 1;
        }
        let mut payload = Some(payload);
        for i in 0..copies {
            let mut delay = u64::from(c.latency_ms);
            if impaired {
                delay += u64::from(rng.below(c.jitter_ms.saturating_add(1)));
                if rng.below(100) < c.reorder_percent {
                    delay += 16 * u64::from(1 + rng.below(3));
                    h.stats.reordered += 1;
                }
            }
            let p = if i + 1 == copies {
                payload.take()
            } else {
                match payload.as_ref() {
                    Some(Payload::Ggrs(m)) => Some(Payload::Ggrs(m.clone())),
                    Some(Payload::Raw(b)) => Some(Payload::Raw(b.clone())),
                    None => None,
                }
            };
            let Some(p) = p else { continue };
            h.seq += 1;
            let seq = h.seq;
            h.queues.entry(to).or_default().push(InFlight {
                deliver_at: now + delay,
                seq,
                from,
                channel,
                payload: p,
            });
        }
    }

    fn receive(&self, addr: PeerAddr, raw: bool, channel: u32) -> Vec<(PeerAddr, Payload)> {
        let mut h = self.lock();
        let now = h.now_ms;
        let Some(q) = h.queues.get_mut(&addr) else { return Vec::new() };
        let mut ready: Vec<InFlight> = Vec::new();
        let mut stale = 0;
        let mut i = 0;
        while i < q.len() {
            let is_raw = matches!(q[i].payload, Payload::Raw(_));
            if !raw && !is_raw && q[i].channel < channel {
                q.swap_remove(i);
                stale += 1;
            } else if q[i].deliver_at <= now && is_raw == raw && (raw || q[i].channel == channel) {
                ready.push(q.swap_remove(i));
            } else {
                i += 1;
            }
        }
        h.stats.stale += stale;
        ready.sort_by_key(|p| (p.deliver_at, p.seq));
        h.stats.delivered += ready.len() as u64;
        ready.into_iter().map(|p| (p.from, p.payload)).collect()
    }
}

/// Whether a payload is one of GGRS's synchronisation messages.
fn is_sync(p: &Payload) -> bool {
    match p {
        Payload::Ggrs(m) => matches!(
            super::guard::WireMessage::from_ggrs(
                super::guard::sealed_inner(m).as_ref().unwrap_or(m)
            )
            .map(|w| w.body),
            Some(super::guard::WireBody::SyncRequest(_) | super::guard::WireBody::SyncReply(_))
        ),
        Payload::Raw(_) => false,
    }
}

/// A digest of a GGRS message's body. `Message`'s fields are private to ggrs, so this hashes
/// its derived `Debug` text from `body:` on (the header holds a per-session random magic
/// number).
fn message_digest(m: &Message) -> u64 {
    if let Some(inner) = super::guard::fate_view(m) {
        return message_digest(&inner);
    }
    let text = format!("{m:?}");
    let body = text.find("body:").map_or(text.as_str(), |i| &text[i..]);
    twox_hash::XxHash3_64::oneshot(body.as_bytes())
}

/// One peer's socket on an [`EmulatedNetwork`] (a GGRS `NonBlockingSocket`).
#[derive(Clone, Debug)]
pub struct EmulatedSocket {
    addr: PeerAddr,
    channel: u32,
    net: EmulatedNetwork,
}

impl EmulatedSocket {
    /// A socket at this socket's address for session channel `channel` (see
    /// [`EmulatedNetwork::socket_on_channel`]).
    pub fn on_channel(&self, channel: u32) -> EmulatedSocket {
        self.net.socket_on_channel(self.addr, channel)
    }

    /// This socket's address.
    pub fn addr(&self) -> PeerAddr {
        self.addr
    }

    /// This socket's session channel (see [`EmulatedNetwork::socket_on_channel`]).
    pub fn channel(&self) -> u32 {
        self.channel
    }

    /// Sends bytes on the reliable side channel (used by the session handshake and rejoins).
    pub fn send_raw(&self, to: PeerAddr, bytes: Vec<u8>) {
        self.net.send(self.addr, to, 0, Payload::Raw(bytes));
    }

    /// Receives side-channel bytes that have arrived.
    pub fn recv_raw(&self) -> Vec<(PeerAddr, Vec<u8>)> {
        self.net
            .receive(self.addr, true, 0)
            .into_iter()
            .filter_map(|(a, p)| match p {
                Payload::Raw(b) => Some((a, b)),
                Payload::Ggrs(_) => None,
            })
            .collect()
    }
}

impl NonBlockingSocket<PeerAddr> for EmulatedSocket {
    fn send_to(&mut self, msg: &Message, addr: &PeerAddr) {
        self.net.send(self.addr, *addr, self.channel, Payload::Ggrs(msg.clone()));
    }

    fn receive_all_messages(&mut self) -> Vec<(PeerAddr, Message)> {
        self.net
            .receive(self.addr, false, self.channel)
            .into_iter()
            .filter_map(|(a, p)| match p {
                Payload::Ggrs(m) => Some((a, m)),
                Payload::Raw(_) => None,
            })
            .collect()
    }
}
