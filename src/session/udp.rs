//! [`UdpTransport`]: a [`MatchTransport`] over one UDP socket, so a [`MatchPeer`](super::MatchPeer)
//! plays, survives departures and takes players back over a real network.

use super::guard::{message_from_bytes, message_to_bytes};
use super::match_peer::MatchTransport;
use ggrs::{Message, NonBlockingSocket};
use std::collections::{BTreeMap, VecDeque};
use std::io::ErrorKind;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::{Arc, Mutex, MutexGuard};

/// The first byte of a datagram carrying a GGRS message (then the session channel, 4 bytes
/// little-endian, then the message in GGRS's own encoding).
const SESSION: u8 = b'G';
/// The first byte of a datagram of the side channel (then its bytes).
const SIDE: u8 = b'R';
/// The largest UDP payload; a longer datagram cannot arrive.
const MAX_DATAGRAM: usize = 65_507;
/// Datagrams read from the socket per call, at most (the rest wait for the next call).
const MAX_PER_POLL: usize = 4096;
/// GGRS messages kept per session channel until a socket of that channel reads them.
const MAX_QUEUED: usize = 4096;
/// Side-channel datagrams kept until [`MatchTransport::recv_raw`] reads them.
const MAX_QUEUED_RAW: usize = 1024;
/// Side-channel datagrams from addresses that are no slot's kept until
/// [`MatchTransport::recv_raw`] reads them: a queue of their own, so strangers never crowd out
/// the members' messages.
const MAX_QUEUED_STRANGERS: usize = 64;

/// What a [`UdpTransport`] saw: datagrams it dropped and why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpStats {
    /// Datagrams read from the socket.
    pub received: u64,
    /// Datagrams sent.
    pub sent: u64,
    /// Dropped: a GGRS datagram from an address that is not one of the match's slots.
    pub foreign: u64,
    /// Side-channel datagrams from an address that is not one of the match's slots, handed to
    /// the rejoin protocol (a player may come back from a new address; its claim is checked
    /// under its slot's key). Those beyond a small queue are dropped and counted in
    /// [`UdpStats::overflow`].
    pub strangers: u64,
    /// Dropped: not a datagram of this transport (unknown kind, cut, undecodable message).
    pub malformed: u64,
    /// Dropped: a GGRS message of a session channel this peer has left behind.
    pub stale: u64,
    /// Dropped: a queue was full (a peer sending faster than this one reads).
    pub overflow: u64,
}

struct Shared {
    socket: UdpSocket,
    /// The slots' addresses this transport takes datagrams from.
    peers: Vec<SocketAddr>,
    /// GGRS messages waiting, by session channel.
    sessions: BTreeMap<u32, VecDeque<(SocketAddr, Message)>>,
    /// Side-channel datagrams waiting.
    raw: VecDeque<(SocketAddr, Vec<u8>)>,
    /// Side-channel datagrams from addresses that are no slot's, waiting.
    strangers: VecDeque<(SocketAddr, Vec<u8>)>,
    /// The lowest session channel still read: messages of lower ones are dropped.
    lowest: u32,
    buffer: Vec<u8>,
    stats: UdpStats,
}

impl Shared {
    /// Reads what has arrived into the queues.
    fn pump(&mut self) {
        for _ in 0..MAX_PER_POLL {
            match self.socket.recv_from(&mut self.buffer) {
                Ok((n, from)) => {
                    self.stats.received += 1;
                    if !self.peers.contains(&from) {
                        self.stranger(from, n);
                        continue;
                    }
                    let datagram = self.buffer[..n].to_vec();
                    self.sort(from, &datagram);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                // Linux reports an ICMP "port unreachable" (a peer whose program closed its
                // socket) on the next receive: not a datagram, read on.
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::ConnectionRefused
                            | ErrorKind::ConnectionReset
                            | ErrorKind::Interrupted
                    ) => {}
                Err(_) => break,
            }
        }
    }

    /// Files the `n`-byte datagram in the buffer from an address that is no slot's: a
    /// side-channel one is kept in the strangers' queue, anything else dropped.
    fn stranger(&mut self, from: SocketAddr, n: usize) {
        match self.buffer[..n].split_first() {
            Some((&SIDE, bytes)) if self.strangers.len() < MAX_QUEUED_STRANGERS => {
                self.stats.strangers += 1;
                self.strangers.push_back((from, bytes.to_vec()));
            }
            Some((&SIDE, _)) => self.stats.overflow += 1,
            _ => self.stats.foreign += 1,
        }
    }

    /// Files one datagram from a slot's address.
    fn sort(&mut self, from: SocketAddr, datagram: &[u8]) {
        match datagram.split_first() {
            Some((&SIDE, bytes)) => {
                if self.raw.len() >= MAX_QUEUED_RAW {
                    self.stats.overflow += 1;
                } else {
                    self.raw.push_back((from, bytes.to_vec()));
                }
            }
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

    fn send(&mut self, to: &SocketAddr, datagram: &[u8]) {
        // A datagram that cannot be sent is a lost packet: GGRS and the rejoin protocol resend.
        if self.socket.send_to(datagram, to).is_ok() {
            self.stats.sent += 1;
        }
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // Nothing panics while holding the lock; a poisoned one still holds consistent queues.
    shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A [`MatchTransport`] over one non-blocking UDP socket: the GGRS messages of every session
/// channel and the rejoin protocol's side channel share it, each datagram tagged with what it
/// carries (and GGRS's with its channel). It reads GGRS datagrams from the match's slot
/// addresses only, and side-channel ones from others into a small queue of their own (a player
/// coming back from a new address asks from there); every GGRS message goes on to the session's
/// [`GuardedSocket`](super::GuardedSocket), which authenticates it with keys of its own
/// channel, so a datagram whose tag lies is dropped there.
///
/// A program that restarts takes its slot back with
/// [`MatchPeer::rejoin`](super::MatchPeer::rejoin), from the same address or a new one: its
/// slot's key proves the claim, and the members reach it at the new address from then on.
///
/// ```
/// use rollback_abilities::session::UdpTransport;
///
/// let a = UdpTransport::bind("127.0.0.1:0", Vec::new())?;
/// let b = UdpTransport::bind("127.0.0.1:0", vec![a.local_addr()])?;
/// a.set_peers(vec![b.local_addr()]);
/// assert_ne!(a.local_addr(), b.local_addr());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct UdpTransport {
    shared: Arc<Mutex<Shared>>,
    local: SocketAddr,
}

impl core::fmt::Debug for UdpTransport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("UdpTransport").field("local", &self.local).finish()
    }
}

impl UdpTransport {
    /// Binds a socket at `addr` (say `127.0.0.1:7000`; port 0 picks a free one) that takes
    /// datagrams from `peers`, the other slots' addresses, only.
    pub fn bind(addr: impl ToSocketAddrs, peers: Vec<SocketAddr>) -> std::io::Result<UdpTransport> {
        UdpTransport::from_socket(UdpSocket::bind(addr)?, peers)
    }

    /// A transport over a socket the caller bound (made non-blocking here).
    pub fn from_socket(socket: UdpSocket, peers: Vec<SocketAddr>) -> std::io::Result<UdpTransport> {
        socket.set_nonblocking(true)?;
        let local = socket.local_addr()?;
        let shared = Shared {
            socket,
            peers,
            sessions: BTreeMap::new(),
            raw: VecDeque::new(),
            strangers: VecDeque::new(),
            lowest: 0,
            buffer: vec![0; MAX_DATAGRAM],
            stats: UdpStats::default(),
        };
        Ok(UdpTransport { shared: Arc::new(Mutex::new(shared)), local })
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Sets the addresses datagrams are taken from (the other slots').
    pub fn set_peers(&self, peers: Vec<SocketAddr>) {
        lock(&self.shared).peers = peers;
    }

    /// What the transport sent, received and dropped.
    pub fn stats(&self) -> UdpStats {
        lock(&self.shared).stats
    }
}

impl MatchTransport for UdpTransport {
    type Addr = SocketAddr;
    type Socket = UdpSessionSocket;

    fn session_socket(&mut self, channel: u32) -> UdpSessionSocket {
        UdpSessionSocket { shared: Arc::clone(&self.shared), channel }
    }

    fn send_raw(&mut self, to: &SocketAddr, bytes: Vec<u8>) {
        let mut datagram = Vec::with_capacity(1 + bytes.len());
        datagram.push(SIDE);
        datagram.extend_from_slice(&bytes);
        lock(&self.shared).send(to, &datagram);
    }

    fn recv_raw(&mut self) -> Vec<(SocketAddr, Vec<u8>)> {
        let mut s = lock(&self.shared);
        s.pump();
        let mut out: Vec<_> = s.raw.drain(..).collect();
        out.extend(s.strangers.drain(..));
        out
    }

    fn set_slots(&mut self, addrs: &[SocketAddr]) {
        let local = self.local;
        self.set_peers(addrs.iter().copied().filter(|a| *a != local).collect());
    }
}

/// The GGRS socket of one session channel of a [`UdpTransport`]. Reading it drops the
/// messages of every lower channel, now and from then on: the peer has moved on.
pub struct UdpSessionSocket {
    shared: Arc<Mutex<Shared>>,
    channel: u32,
}

impl core::fmt::Debug for UdpSessionSocket {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("UdpSessionSocket").field("channel", &self.channel).finish()
    }
}

impl NonBlockingSocket<SocketAddr> for UdpSessionSocket {
    fn send_to(&mut self, msg: &Message, addr: &SocketAddr) {
        let mut datagram = vec![SESSION];
        datagram.extend_from_slice(&self.channel.to_le_bytes());
        datagram.extend_from_slice(&message_to_bytes(msg));
        lock(&self.shared).send(addr, &datagram);
    }

    fn receive_all_messages(&mut self) -> Vec<(SocketAddr, Message)> {
        let mut s = lock(&self.shared);
        if self.channel > s.lowest {
            s.lowest = self.channel;
            let stale: usize =
                s.sessions.range(..self.channel).map(|(_, q)| q.len()).sum::<usize>();
            s.stats.stale += stale as u64;
            s.sessions = s.sessions.split_off(&self.channel);
        }
        s.pump();
        s.sessions.remove(&self.channel).map(Vec::from).unwrap_or_default()
    }
}
