//! [`UdpTransport`]: a [`MatchTransport`] over one UDP socket, so a [`MatchPeer`](super::MatchPeer)
//! plays, survives departures and takes players back over a real network.

use super::inbox::{Inbox, TransportStats, session_packet, side_packet};
use super::match_peer::MatchTransport;
use ggrs::{Message, NonBlockingSocket};
use std::io::ErrorKind;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::{Arc, Mutex, MutexGuard};

/// The largest UDP payload; a longer datagram cannot arrive.
const MAX_DATAGRAM: usize = 65_507;
/// Datagrams read from the socket per call, at most (the rest wait for the next call).
const MAX_PER_POLL: usize = 4096;

/// What a [`UdpTransport`] saw: datagrams it dropped and why.
pub type UdpStats = TransportStats;

struct Shared {
    socket: UdpSocket,
    /// The slots' addresses this transport takes GGRS datagrams from.
    peers: Vec<SocketAddr>,
    inbox: Inbox<SocketAddr>,
    buffer: Vec<u8>,
}

impl Shared {
    /// Reads what has arrived into the queues.
    fn pump(&mut self) {
        for _ in 0..MAX_PER_POLL {
            match self.socket.recv_from(&mut self.buffer) {
                Ok((n, from)) => {
                    self.inbox.stats.received += 1;
                    let slot = self.peers.contains(&from);
                    self.inbox.file(from, slot, &self.buffer[..n]);
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

    fn send(&mut self, to: &SocketAddr, datagram: &[u8]) {
        // A datagram that cannot be sent is a lost packet: GGRS and the rejoin protocol resend.
        if self.socket.send_to(datagram, to).is_ok() {
            self.inbox.stats.sent += 1;
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
        let shared =
            Shared { socket, peers, inbox: Inbox::default(), buffer: vec![0; MAX_DATAGRAM] };
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
        lock(&self.shared).inbox.stats
    }
}

impl MatchTransport for UdpTransport {
    type Addr = SocketAddr;
    type Socket = UdpSessionSocket;

    fn session_socket(&mut self, channel: u32) -> UdpSessionSocket {
        UdpSessionSocket { shared: Arc::clone(&self.shared), channel }
    }

    fn send_raw(&mut self, to: &SocketAddr, bytes: Vec<u8>) {
        lock(&self.shared).send(to, &side_packet(&bytes));
    }

    fn recv_raw(&mut self) -> Vec<(SocketAddr, Vec<u8>)> {
        let mut s = lock(&self.shared);
        s.pump();
        s.inbox.take_side()
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
        lock(&self.shared).send(addr, &session_packet(self.channel, msg));
    }

    fn receive_all_messages(&mut self) -> Vec<(SocketAddr, Message)> {
        let mut s = lock(&self.shared);
        s.inbox.leave_below(self.channel);
        s.pump();
        s.inbox.take_session(self.channel)
    }
}
