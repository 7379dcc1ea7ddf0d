//! Rollback drivers and sessions.
//!
//! - [`RollbackDriver`]: an in-crate driver that, every frame, rolls back a seeded random depth
//!   and re-simulates, comparing checksums with the straight run: the determinism fuzzing
//!   workhorse (no GGRS needed).
//! - [`PredictionDriver`]: one peer of a P2P match without a network: remote inputs arrive
//!   late, are predicted, and mispredictions roll back exactly as a GGRS session would.
//! - [`Runner`]: a world under a real GGRS session (P2P, spectator, sync test) with snapshots,
//!   cue reconciliation, recording and desync reports.
//! - [`Peer::start`] and [`Spectator::start`]: a P2P peer or a spectator on any socket, built
//!   the safe way in one call ([`SessionConfig`]): the socket behind a [`GuardedSocket`], GGRS
//!   built with the settings the guarantees need, the [`Guard`] attached to the runner, and
//!   every datagram authenticated with identities the peers learn on the socket
//!   ([`Guard::introduce`]; `start_keyed` takes identities exchanged beforehand instead).
//! - [`GuardedSocket`]: the layer in front of every GGRS socket that validates what peers send
//!   (GGRS 0.13 panics or aborts on malformed messages) and runs the survivors' departure
//!   agreement, so a match survives a player leaving; `docs/determinism.md` states the
//!   guarantee. [`unguarded_builder`] is GGRS's builder with the crate's settings and no guard:
//!   a socket handed to it as it is is open to anyone who can reach it.
//! - [`LocalMatch`]: a whole P2P match in one process, one GGRS session per player over the
//!   seeded [`EmulatedNetwork`], every peer guarded and paced on the emulated clock (the same
//!   seed gives the same match at any machine load).

mod determinism;
mod driver;
mod evidence;
mod guard;
mod handshake;
mod identity;
mod inbox;
pub mod late_spectator;
mod local;
mod match_peer;
#[cfg(feature = "matchbox")]
pub mod matchbox;
mod net;
mod prediction;
pub mod rejoin;
mod runner;
mod start;
mod udp;

pub use crate::observe::{BatchObserver, NoObserver};
pub use determinism::{Determinism, DeterminismFailure, DeterminismReport, StraightRun};
pub use driver::{Divergence, RollbackDriver, RollbackStats};
pub use evidence::{Equivocation, EvidenceError, MAX_SIGNED_FRAMES, SignedInputs};
pub use guard::{
    Departure, Fault, Guard, GuardConfig, GuardStats, GuardedSocket, PeerEquivocation, PeerFault,
    message_from_bytes, message_to_bytes,
};
// Builders of hostile GGRS messages, for the hostile-peer tests and the `session` fuzz target
// (the `forge` feature): reachable by them, not part of the documented API.
#[cfg(feature = "forge")]
#[doc(hidden)]
pub use guard::forge;
pub use handshake::{Handshake, HandshakeError, HandshakeExchange, exchange_emulated};
pub use identity::{Identity, IdentityError, PublicIdentity};
pub use late_spectator::{LateSpectator, SpectateTicket, SpectatorPolicy};
pub use local::{LocalMatch, LocalPeer, MatchConfig};
pub use match_peer::{MatchPeer, MatchTransport, RejoinTicket};
// The matchbox session; its building blocks (the socket builders, the message loop, the
// channels and the blocking steps) are in `session::matchbox`.
pub use inbox::TransportStats;
#[cfg(feature = "matchbox")]
pub use matchbox::{
    Connecting, MatchboxConfig, MatchboxError, MatchboxOptions, MatchboxSession, PeerId, Roster,
    Stage,
};
pub use net::{EmulatedNetwork, EmulatedSocket, NetConditions, NetStats, PeerAddr};
pub use prediction::{PredictionDriver, PredictionStats};
pub use runner::{
    Address, Batch, ConfirmedFrame, DEFAULT_DEPARTURE_TICKS, DEFAULT_STALL_TICKS, GgrsConfig,
    Runner, RunnerStats, SavedFrame, SessionError, SessionEvent, differing_subsystems,
    pack_checksum,
};
pub use start::{MatchKeys, Peer, SessionConfig, Spectator, unguarded_builder};
pub use udp::{UdpSessionSocket, UdpStats, UdpTransport};
