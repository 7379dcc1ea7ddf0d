//! The command line of the `p2p_matchbox` example, in a file of its own so the tests can check
//! its help (`tests/matchbox.rs` includes it).

use clap::{ArgGroup, Parser, ValueEnum};
use std::net::SocketAddr;
use std::time::Duration;

/// A real peer-to-peer match over WebRTC: run one signaling server, then one peer per player.
///
/// Every peer plays the same bot inputs through GGRS rollback, and at the end prints the
/// checksum of the confirmed state after the last frame, the checksums the other peers
/// confirmed for it, and whether they all agree. It exits 0 when they agree and GGRS's desync
/// detection saw no desync on the way, 1 otherwise, 2 on a bad argument.
///
/// No STUN server is used: the peers must reach each other's addresses directly (same machine
/// or LAN).
#[derive(Debug, Parser)]
#[command(
    name = "p2p_matchbox",
    max_term_width = 100,
    group(ArgGroup::new("role").required(true).args(["serve", "room"])),
    after_help = "Examples:
  cargo run --release --features matchbox --example p2p_matchbox -- --serve 127.0.0.1:3536
  cargo run --release --features matchbox --example p2p_matchbox -- --room ws://127.0.0.1:3536/duel --players 2
  cargo run --release --features matchbox --example p2p_matchbox -- --room ws://127.0.0.1:3536/duel --players 2

(the server first, then one peer per player, each in a terminal of its own; the room is the
URL path, so a fresh path is a fresh match)

A player whose program drops out at frame 300 and comes back 300 frames later:
  cargo run --release --features matchbox --example p2p_matchbox -- --room ws://127.0.0.1:3536/back --players 2 --frames 1200
  cargo run --release --features matchbox --example p2p_matchbox -- --room ws://127.0.0.1:3536/back --players 2 --frames 1200 --rejoin 300:600

The duel against a browser tab (the browser_duel example serves the page and the signaling
server on one address; open http://127.0.0.1:8080/?bot=1&frames=600 in the browser):
  cargo run --release --features matchbox --example p2p_matchbox -- --game duel --room ws://127.0.0.1:8080/duel --players 2 --frames 600"
)]
pub struct Cli {
    /// Run the signaling server on this address (full mesh) instead of a peer.
    #[arg(long, value_name = "ADDR")]
    pub serve: Option<SocketAddr>,
    /// With --serve: stop the server after SECS seconds, 1 to 86400 [default: run until
    /// killed].
    #[arg(long = "for", value_name = "SECS", requires = "serve",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub lifetime: Option<u64>,
    /// Run a peer in this room of a signaling server: ws://HOST:PORT/ROOM (or wss://).
    #[arg(long, value_name = "URL", value_parser = room_url)]
    pub room: Option<String>,
    /// Players in the match, one peer each: 2 to 8.
    #[arg(long, default_value_t = 2, value_name = "N", conflicts_with = "serve",
          value_parser = clap::value_parser!(u8).range(2..=8))]
    pub players: u8,
    /// Frames to play, 1 to 1000000 (60 frames = one second).
    #[arg(long, default_value_t = 600, value_name = "N", conflicts_with = "serve",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub frames: u32,
    /// GGRS input delay in frames, 0 to 15.
    #[arg(long, default_value_t = 2, value_name = "FRAMES", conflicts_with = "serve",
          value_parser = clap::value_parser!(u8).range(0..=15))]
    pub input_delay: u8,
    /// Give up after SECS seconds without finishing (connecting included), 1 to 3600.
    #[arg(long, default_value_t = 90, value_name = "SECS", conflicts_with = "serve",
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout: u64,
    /// The game: `brawl` (every player hits the next one) or `duel` (the crate's duel, played
    /// by its bot: the game of the browser_duel page, so a native peer and a browser tab can
    /// share a room; 2 to 4 players).
    #[arg(long, value_enum, default_value_t = GameKind::Brawl, conflicts_with = "serve")]
    pub game: GameKind,
    /// With --game duel: the seed of the world and the bots (every peer, a page's `seed=`
    /// included, must use the same).
    #[arg(long, default_value_t = 1, conflicts_with = "serve")]
    pub seed: u64,
    /// This peer's program drops out once it has confirmed frame LEAVE (its
    /// socket closes, as a crash would), and a new one comes back into its slot BACK − LEAVE
    /// frames of time later (at 60 frames a second), from a new peer id, with the ticket the
    /// first kept; the others hold the match for it, send it their state and play on with it.
    /// LEAVE is below BACK and below --frames.
    #[arg(long, value_name = "LEAVE:BACK", value_parser = rejoin_plan, conflicts_with = "serve")]
    pub rejoin: Option<(u32, u32)>,
}

/// The game a peer plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GameKind {
    /// Every player drives a fighter with scripted bot inputs and hits the next player.
    Brawl,
    /// The duel of `rollback_abilities_kit::duel`, played by its bot (`browser_duel`'s game).
    Duel,
}

impl Cli {
    /// How long the signaling server runs (`None`: until killed).
    pub fn lifetime(&self) -> Option<Duration> {
        self.lifetime.map(Duration::from_secs)
    }

    /// How long a peer tries before it gives up.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout)
    }
}

/// A `--rejoin LEAVE:BACK` plan: two frames, LEAVE below BACK.
pub fn rejoin_plan(s: &str) -> Result<(u32, u32), String> {
    let takes = "LEAVE:BACK, two frames with LEAVE below BACK (e.g. 300:600)";
    let (leave, back) = s.split_once(':').ok_or_else(|| format!("{takes}, not {s}"))?;
    let frame = |t: &str| t.trim().parse::<u32>().map_err(|_| format!("{takes}, not {s}"));
    let (leave, back) = (frame(leave)?, frame(back)?);
    if leave >= back {
        return Err(format!("{takes}: {leave} is not below {back}"));
    }
    Ok((leave, back))
}

/// A `--room` address: a WebSocket URL, `ws://HOST:PORT/ROOM` or `wss://HOST:PORT/ROOM`. Any
/// other scheme (`http://`, a bare `HOST:PORT/ROOM`) is refused with what the flag takes, and
/// with the WebSocket form of an `http(s)://` address, instead of being retried until the
/// timeout.
pub fn room_url(s: &str) -> Result<String, String> {
    let takes = "the room is a signaling server's WebSocket address, ws://HOST:PORT/ROOM or \
                 wss://HOST:PORT/ROOM";
    let host = s.strip_prefix("ws://").or_else(|| s.strip_prefix("wss://"));
    match host {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(s.to_string()),
        Some(_) => Err(format!("{s} names no host: {takes}")),
        None => {
            let websocket = if let Some(rest) = s.strip_prefix("http://") {
                format!(" (did you mean ws://{rest}?)")
            } else if let Some(rest) = s.strip_prefix("https://") {
                format!(" (did you mean wss://{rest}?)")
            } else {
                String::new()
            };
            Err(format!("{takes}, not {s}{websocket}"))
        }
    }
}
