//! `MatchSpec`: which match to run. Insert it as a resource; the plugin builds the world and the
//! session the crate's guarded way ([`SessionConfig::start_p2p`] and
//! [`SessionConfig::start_spectator`]: a guarded socket, GGRS built hardened, the guard attached
//! to the runner) and starts driving.
//!
//! [`SessionConfig::start_p2p`]: rollback_abilities::session::SessionConfig::start_p2p
//! [`SessionConfig::start_spectator`]: rollback_abilities::session::SessionConfig::start_spectator

use bevy::prelude::Resource;
use ggrs::PlayerType;
use rollback_abilities::session::{EmulatedSocket, PeerAddr};
use std::net::SocketAddr;

/// The network settings of a match (GGRS's and the runner's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetSettings {
    /// GGRS input delay in frames.
    pub input_delay: usize,
    /// GGRS prediction window: frames a peer may run ahead of its confirmed inputs (and the
    /// deepest rollback).
    pub max_prediction: usize,
    /// Desync detection interval in frames (0: off).
    pub desync_interval: u32,
    /// Ticks a P2P peer waits on a silent player before the survivors carry on without it
    /// (see [`Runner::set_departure_ticks`](rollback_abilities::session::Runner::set_departure_ticks);
    /// 0: never).
    pub departure_ticks: u32,
}

impl Default for NetSettings {
    fn default() -> Self {
        NetSettings {
            input_delay: 2,
            max_prediction: 8,
            desync_interval: 10,
            departure_ticks: rollback_abilities::session::DEFAULT_DEPARTURE_TICKS,
        }
    }
}

/// Which match to run. Inserting (or replacing) this resource starts a match once the content
/// is available; removing it ends the match.
///
/// ```
/// use bevy_rollback_abilities::MatchSpec;
/// let spec = MatchSpec::sync_test(2).check_distance(7);
/// assert!(matches!(spec, MatchSpec::SyncTest { players: 2, check_distance: 7, .. }));
/// ```
#[derive(Resource, Clone, Debug)]
pub enum MatchSpec {
    /// One machine, every player local, no rollback: the crate's runner over a GGRS sync test
    /// with a check distance of 0 (every frame is confirmed as soon as it is simulated).
    Offline {
        /// Players (all local).
        players: usize,
    },
    /// Every frame is rolled back `check_distance` frames and re-simulated; a checksum mismatch
    /// becomes a [`SyncTestMismatch`](crate::SyncTestMismatch) message with a desync report.
    SyncTest {
        /// Players (all local).
        players: usize,
        /// How far every frame is rolled back (below the prediction window).
        check_distance: usize,
        /// The prediction window and input delay (`departure_ticks` and `desync_interval` are
        /// unused).
        net: NetSettings,
    },
    /// A P2P match over UDP: the socket is bound to `port` on every interface (as GGRS's
    /// `UdpNonBlockingSocket` does). `players[i]` is player `i`'s type: local, a remote
    /// address, or a spectator's address.
    P2pUdp {
        /// The local UDP port.
        port: u16,
        /// Every player (and spectator), by handle.
        players: Vec<PlayerType<SocketAddr>>,
        /// GGRS and runner settings.
        net: NetSettings,
    },
    /// A spectator of a P2P match over UDP, fed by `host`.
    SpectatorUdp {
        /// The local UDP port.
        port: u16,
        /// The peer that sends this spectator every player's inputs.
        host: SocketAddr,
        /// Players in the match.
        players: usize,
        /// GGRS and runner settings.
        net: NetSettings,
    },
    /// A P2P match over the crate's seeded in-memory network
    /// ([`EmulatedNetwork`](rollback_abilities::session::EmulatedNetwork)): tests, demos and
    /// benchmarks with several apps in one process. The guard is paced on the emulated clock
    /// (advance it with `EmulatedNetwork::advance_ms`).
    P2pEmulated {
        /// This peer's socket on the network.
        socket: EmulatedSocket,
        /// Every player (and spectator), by handle.
        players: Vec<PlayerType<PeerAddr>>,
        /// GGRS and runner settings.
        net: NetSettings,
    },
    /// A P2P match over WebRTC (feature `matchbox`): the crate's
    /// [`Connecting`](rollback_abilities::session::matchbox::Connecting) joins the room at
    /// `room_url` (`ws://host:port/room`), waits for exactly `players` peers, exchanges and
    /// checks the content handshake (no peer starts unless all agree) and starts the guarded
    /// GGRS session, one step per Bevy frame (the app never blocks); players are ordered by
    /// peer id, so every peer assigns the same handles. No ICE (STUN/TURN) server is
    /// contacted: peers use their own addresses.
    #[cfg(feature = "matchbox")]
    Matchbox {
        /// The signaling server's room: `ws://host:port/room`.
        room_url: String,
        /// Players in the match (this peer included); the room must hold exactly this many.
        players: usize,
        /// How long to wait for every peer to join the room (on Bevy's real-time clock).
        peers_timeout: std::time::Duration,
        /// GGRS and runner settings.
        net: NetSettings,
    },
}

impl MatchSpec {
    /// An offline match of `players` local players.
    pub fn offline(players: usize) -> MatchSpec {
        MatchSpec::Offline { players }
    }

    /// A sync test of `players` local players (check distance 2, as GGRS's default).
    pub fn sync_test(players: usize) -> MatchSpec {
        MatchSpec::SyncTest { players, check_distance: 2, net: NetSettings::default() }
    }

    /// A P2P match over UDP on `port`.
    pub fn p2p_udp(port: u16, players: Vec<PlayerType<SocketAddr>>) -> MatchSpec {
        MatchSpec::P2pUdp { port, players, net: NetSettings::default() }
    }

    /// A spectator over UDP on `port` of the match `host` plays in.
    pub fn spectator_udp(port: u16, host: SocketAddr, players: usize) -> MatchSpec {
        MatchSpec::SpectatorUdp { port, host, players, net: NetSettings::default() }
    }

    /// A P2P match over an emulated in-memory network.
    pub fn p2p_emulated(socket: EmulatedSocket, players: Vec<PlayerType<PeerAddr>>) -> MatchSpec {
        MatchSpec::P2pEmulated { socket, players, net: NetSettings::default() }
    }

    /// A P2P match over WebRTC in the matchbox room at `room_url` (`ws://host:port/room`)
    /// of exactly `players` peers, waiting up to 30 s for them to join.
    #[cfg(feature = "matchbox")]
    pub fn matchbox(room_url: impl Into<String>, players: usize) -> MatchSpec {
        MatchSpec::Matchbox {
            room_url: room_url.into(),
            players,
            peers_timeout: std::time::Duration::from_secs(30),
            net: NetSettings::default(),
        }
    }

    /// Sets how long a matchbox match waits for every peer to join the room (no effect on
    /// other kinds).
    #[cfg(feature = "matchbox")]
    pub fn peers_timeout(mut self, timeout: std::time::Duration) -> MatchSpec {
        if let MatchSpec::Matchbox { peers_timeout, .. } = &mut self {
            *peers_timeout = timeout;
        }
        self
    }

    /// Sets a sync test's check distance (no effect on other kinds).
    pub fn check_distance(mut self, distance: usize) -> MatchSpec {
        if let MatchSpec::SyncTest { check_distance, .. } = &mut self {
            *check_distance = distance;
        }
        self
    }

    /// Replaces the network settings (no effect on an offline match).
    pub fn net(mut self, settings: NetSettings) -> MatchSpec {
        match &mut self {
            MatchSpec::Offline { .. } => {}
            MatchSpec::SyncTest { net, .. }
            | MatchSpec::P2pUdp { net, .. }
            | MatchSpec::SpectatorUdp { net, .. }
            | MatchSpec::P2pEmulated { net, .. } => *net = settings,
            #[cfg(feature = "matchbox")]
            MatchSpec::Matchbox { net, .. } => *net = settings,
        }
        self
    }

    /// Sets the input delay (no effect on an offline match).
    pub fn input_delay(self, delay: usize) -> MatchSpec {
        let net = NetSettings { input_delay: delay, ..self.settings() };
        self.net(net)
    }

    /// The network settings (the defaults for an offline match).
    pub fn settings(&self) -> NetSettings {
        match self {
            MatchSpec::Offline { .. } => NetSettings { input_delay: 0, ..NetSettings::default() },
            MatchSpec::SyncTest { net, .. }
            | MatchSpec::P2pUdp { net, .. }
            | MatchSpec::SpectatorUdp { net, .. }
            | MatchSpec::P2pEmulated { net, .. } => *net,
            #[cfg(feature = "matchbox")]
            MatchSpec::Matchbox { net, .. } => *net,
        }
    }

    /// Whether the match runs on one machine only (offline or sync test): the kinds whose world
    /// may be rebuilt with new content mid-match.
    pub fn is_local(&self) -> bool {
        matches!(self, MatchSpec::Offline { .. } | MatchSpec::SyncTest { .. })
    }
}
