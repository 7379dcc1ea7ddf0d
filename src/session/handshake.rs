//! The session handshake (D-6): before the first frame, peers exchange what must be equal for
//! them to simulate the same world — crate version, content hash, hooks, tick rate, players,
//! seed, capacities, initial state, input size — and refuse to start on any mismatch, naming
//! it. Each peer also announces its per-match [`PublicIdentity`] (not compared: every peer's
//! differs), from which the guard derives the keys that authenticate its datagrams.

use super::identity::{Identity, PublicIdentity};
use super::net::{EmulatedSocket, PeerAddr};
use crate::world::{Game, World};
use core::fmt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const HELLO: &[u8; 8] = b"RBAHELLO";

/// The prefix of a player-count announcement (followed by the count, u16 little-endian).
const PLAYERS: &[u8; 10] = b"RBAPLAYERS";

/// What a peer announces before a session starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handshake {
    /// The crate version.
    pub crate_version: String,
    /// The content hash.
    pub content_hash: u64,
    /// xxh3-64 of the registered functions' signature.
    pub hooks_hash: u64,
    /// Frames per second.
    pub tick_rate: u16,
    /// Players.
    pub players: u16,
    /// The session seed.
    pub seed: u64,
    /// The world's capacities (entities, effects, abilities, tasks, cues, specs).
    pub capacities: [u32; 6],
    /// The checksum of the initial state (every peer must start from the same bytes).
    pub initial_state: u64,
    /// Bytes per player input.
    pub input_size: u32,
    /// This peer's per-match public identity ([`Handshake::with_identity`]); `None` in a
    /// handshake that announces none.
    #[serde(default)]
    pub identity: Option<PublicIdentity>,
}

/// Why a handshake failed.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandshakeError {
    /// A peer sent something that is not a handshake.
    Malformed {
        /// Who.
        peer: String,
        /// What is wrong.
        reason: String,
    },
    /// A peer disagrees on a value that must be equal.
    Mismatch {
        /// Who.
        peer: String,
        /// The field.
        field: &'static str,
        /// Our value.
        local: String,
        /// Theirs.
        remote: String,
    },
    /// Some peers never answered within the allowed rounds.
    Timeout {
        /// Who.
        missing: Vec<String>,
    },
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::Malformed { peer, reason } => {
                write!(f, "{peer} sent an invalid handshake: {reason}")
            }
            HandshakeError::Mismatch { peer, field: "players", local, remote } => write!(
                f,
                "refusing to start: this peer expects {local} players, {peer} expects {remote}; every peer of a match must be started for the same number of players"
            ),
            HandshakeError::Mismatch { peer, field, local, remote } => write!(
                f,
                "refusing to start: {field} differs from {peer} (ours {local}, theirs {remote}); every peer must run the same build, content, hooks and settings"
            ),
            HandshakeError::Timeout { missing } => {
                write!(f, "no handshake from {}", missing.join(", "))
            }
        }
    }
}

impl std::error::Error for HandshakeError {}

crate::located::readable_debug!(HandshakeError);

impl Handshake {
    /// The handshake of a world (set up, before its first frame) for `players` players.
    pub fn of<G: Game>(world: &World<G>) -> Handshake {
        let c = world.config();
        Handshake {
            crate_version: env!("CARGO_PKG_VERSION").to_string(),
            content_hash: world.content().hash(),
            hooks_hash: twox_hash::XxHash3_64::oneshot(world.hooks_signature().as_bytes()),
            tick_rate: world.content().settings().tick_rate.0,
            players: world.players() as u16,
            seed: world.seed(),
            capacities: [
                c.max_entities,
                u32::from(c.effects_per_entity),
                u32::from(c.abilities_per_entity),
                c.max_tasks,
                u32::from(c.max_standalone_cues),
                c.max_stored_specs,
            ],
            initial_state: world.checksum(),
            input_size: core::mem::size_of::<G::Input>() as u32,
            identity: None,
        }
    }

    /// This handshake announcing `identity`'s public half (the secret stays with the caller).
    pub fn with_identity(mut self, identity: &Identity) -> Handshake {
        self.identity = Some(identity.public());
        self
    }

    /// Encodes the handshake (magic + RON text).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = HELLO.to_vec();
        out.extend_from_slice(ron::to_string(self).unwrap_or_default().as_bytes());
        out
    }

    /// Decodes a handshake from untrusted bytes.
    pub fn decode(b: &[u8], peer: &str) -> Result<Handshake, HandshakeError> {
        let bad = |reason: String| HandshakeError::Malformed { peer: peer.to_string(), reason };
        let body = b
            .strip_prefix(HELLO.as_slice())
            .ok_or_else(|| bad("missing the RBAHELLO magic".into()))?;
        let text = core::str::from_utf8(body).map_err(|_| bad("not UTF-8".into()))?;
        ron::from_str(text).map_err(|e| bad(e.to_string()))
    }

    /// The announcement of the number of players this peer expects, which a transport sends
    /// each peer as soon as it connects: peers started for different numbers of players may
    /// never see a complete room, so they would never exchange handshakes.
    pub fn players_announcement(&self) -> Vec<u8> {
        [PLAYERS.as_slice(), &self.players.to_le_bytes()].concat()
    }

    /// Whether untrusted bytes are a player-count announcement (well formed or not).
    #[cfg(feature = "matchbox")]
    pub(crate) fn is_players_announcement(bytes: &[u8]) -> bool {
        bytes.starts_with(PLAYERS.as_slice())
    }

    /// Checks untrusted bytes from `peer` against our number of players: `None` when they are
    /// not a player-count announcement, a [`HandshakeError::Mismatch`] on `players` ("this
    /// peer expects 2 players, `peer` expects 3") when the counts differ.
    pub fn check_players_announcement(
        &self,
        bytes: &[u8],
        peer: &str,
    ) -> Option<Result<(), HandshakeError>> {
        let rest = bytes.strip_prefix(PLAYERS.as_slice())?;
        let Ok(count) = <[u8; 2]>::try_from(rest) else {
            return Some(Err(HandshakeError::Malformed {
                peer: peer.to_string(),
                reason: format!("a player-count announcement of {} bytes, not 2", rest.len()),
            }));
        };
        let remote = u16::from_le_bytes(count);
        Some(if remote == self.players {
            Ok(())
        } else {
            Err(HandshakeError::Mismatch {
                peer: peer.to_string(),
                field: "players",
                local: self.players.to_string(),
                remote: remote.to_string(),
            })
        })
    }

    /// Checks a remote handshake against ours; the error names the first differing field.
    pub fn check(&self, remote: &Handshake, peer: &str) -> Result<(), HandshakeError> {
        let mismatch = |field: &'static str, l: String, r: String| {
            Err(HandshakeError::Mismatch { peer: peer.to_string(), field, local: l, remote: r })
        };
        if self.crate_version != remote.crate_version {
            return mismatch(
                "crate version",
                self.crate_version.clone(),
                remote.crate_version.clone(),
            );
        }
        if self.content_hash != remote.content_hash {
            return mismatch(
                "content hash",
                format!("{:016x}", self.content_hash),
                format!("{:016x}", remote.content_hash),
            );
        }
        if self.hooks_hash != remote.hooks_hash {
            return mismatch(
                "registered functions",
                format!("{:016x}", self.hooks_hash),
                format!("{:016x}", remote.hooks_hash),
            );
        }
        if self.tick_rate != remote.tick_rate {
            return mismatch("tick rate", self.tick_rate.to_string(), remote.tick_rate.to_string());
        }
        if self.players != remote.players {
            return mismatch("players", self.players.to_string(), remote.players.to_string());
        }
        if self.seed != remote.seed {
            return mismatch("session seed", self.seed.to_string(), remote.seed.to_string());
        }
        if self.capacities != remote.capacities {
            return mismatch(
                "world capacities",
                format!("{:?}", self.capacities),
                format!("{:?}", remote.capacities),
            );
        }
        if self.input_size != remote.input_size {
            return mismatch(
                "input size",
                self.input_size.to_string(),
                remote.input_size.to_string(),
            );
        }
        if self.initial_state != remote.initial_state {
            return mismatch(
                "initial state",
                format!("{:016x}", self.initial_state),
                format!("{:016x}", remote.initial_state),
            );
        }
        Ok(())
    }
}

/// A handshake in progress over an emulated network's reliable side channel.
///
/// Poll every peer's exchange until all report done (single-threaded tests poll them in turn).
#[derive(Debug)]
pub struct HandshakeExchange {
    local: Handshake,
    peers: Vec<PeerAddr>,
    heard: BTreeMap<PeerAddr, Handshake>,
    sent: bool,
}

impl HandshakeExchange {
    /// Starts exchanging `local` with `peers`.
    pub fn new(local: Handshake, peers: &[PeerAddr]) -> HandshakeExchange {
        HandshakeExchange { local, peers: peers.to_vec(), heard: BTreeMap::new(), sent: false }
    }

    /// Sends (once), receives, checks. `Ok(true)` when every peer agreed.
    pub fn poll(&mut self, socket: &EmulatedSocket) -> Result<bool, HandshakeError> {
        if !self.sent {
            let bytes = self.local.encode();
            for p in &self.peers {
                socket.send_raw(*p, bytes.clone());
            }
            self.sent = true;
        }
        for (from, bytes) in socket.recv_raw() {
            let name = from.to_string();
            let remote = Handshake::decode(&bytes, &name)?;
            self.local.check(&remote, &name)?;
            self.heard.insert(from, remote);
        }
        Ok(self.peers.iter().all(|p| self.heard.contains_key(p)))
    }

    /// The public identity each peer announced in its handshake (peers that announced none are
    /// left out): what the guard's keys are derived from, and a member's key for later claims
    /// (a slot's owner).
    pub fn identities(&self) -> BTreeMap<PeerAddr, PublicIdentity> {
        self.heard.iter().filter_map(|(a, h)| Some((*a, h.identity?))).collect()
    }

    /// The peers not heard from yet.
    pub fn missing(&self) -> Vec<String> {
        self.peers.iter().filter(|p| !self.heard.contains_key(p)).map(|p| p.to_string()).collect()
    }
}

/// Runs handshakes between several peers on one emulated network (all in this thread): each
/// peer's `(socket, handshake)`; fails with the first mismatch or after `rounds` rounds. On
/// success, what each peer (in the order given) heard: the other peers' announced identities.
pub fn exchange_emulated(
    peers: &[(EmulatedSocket, Handshake)],
    rounds: u32,
) -> Result<Vec<BTreeMap<PeerAddr, PublicIdentity>>, HandshakeError> {
    let addrs: Vec<PeerAddr> = peers.iter().map(|(s, _)| s.addr()).collect();
    let mut ex: Vec<HandshakeExchange> = peers
        .iter()
        .map(|(s, h)| {
            HandshakeExchange::new(
                h.clone(),
                &addrs.iter().copied().filter(|a| *a != s.addr()).collect::<Vec<_>>(),
            )
        })
        .collect();
    for _ in 0..rounds.max(1) {
        let mut all = true;
        for (i, (s, _)) in peers.iter().enumerate() {
            all &= ex[i].poll(s)?;
        }
        if all {
            return Ok(ex.iter().map(HandshakeExchange::identities).collect());
        }
    }
    let missing = ex.iter().flat_map(|e| e.missing()).collect();
    Err(HandshakeError::Timeout { missing })
}
