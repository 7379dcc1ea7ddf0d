//! A real peer-to-peer match over WebRTC (feature `matchbox`): one process per player, a
//! signaling server in a process of its own, GGRS rollback between the peers.
//!
//! ```sh
//! # the signaling server (full mesh; the room is the URL path)
//! cargo run --features matchbox --example p2p_matchbox -- --serve 127.0.0.1:3536
//! # then, in two more terminals, one peer each
//! cargo run --features matchbox --example p2p_matchbox -- --room ws://127.0.0.1:3536/duel --players 2 --frames 600
//! ```
//!
//! Every peer prints the checksum of the confirmed state after `--frames` frames, e.g.
//! `checksum frame 600: 1f0c…`, and exits 0 when it finished without a desync; every peer
//! prints the same checksum. No STUN server is used, so the peers must reach each other's
//! addresses directly (same machine or LAN). WebRTC gathers candidates on every network
//! interface and sends mDNS multicast: where traffic must stay on the machine, run each
//! process inside a network namespace, as `tests/matchbox.rs` does (`ip netns exec NS …`).
//!
//! Options: `--serve ADDR [--for SECS]` runs the signaling server (for SECS seconds, or until
//! killed); `--room URL --players N --frames F [--input-delay D] [--timeout SECS]` runs a peer
//! (defaults: 2 players, 600 frames, input delay 2, 90 s before giving up).
//!
//! The game: every player drives a fighter with deterministic bot inputs; bit 0 holds Sprint
//! (an ability triggered by a tag), bit 1 fires a hit at the next player every third frame.

use rollback_abilities::AbilityInput;
use rollback_abilities::prelude::*;
use rollback_abilities::random::Stream;
use rollback_abilities::session::{
    Handshake, MatchboxConfig, MatchboxOptions, MatchboxSession, Runner, SessionEvent,
    hardened_builder,
};
use std::collections::BTreeSet;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Every player hits the next one.
struct Brawl;

impl Game for Brawl {
    type Input = u8;
    type Component = ();
    type Global = ();

    fn ability_input(input: &u8) -> AbilityInput {
        AbilityInput { held: u32::from(*input), ..AbilityInput::default() }
    }

    fn systems(world: &mut World<Self>) {
        let c = world.content().clone();
        let (Ok(sprint_held), Ok(hit)) = (c.tag("Input.Sprint"), c.effect("Hit")) else {
            return;
        };
        let frame = world.frame();
        let players = world.players();
        for p in 0..players {
            let Some(me) = world.player_owner(p) else { continue };
            let Some(other) = world.player_owner((p + 1) % players) else { continue };
            let input = world.input(p);
            let held = input & 1 != 0;
            if held != world.has_tag_exact(me, sprint_held) {
                world.set_loose_tag_count(me, sprint_held, u16::from(held));
            }
            if input & 2 != 0 && frame.is_multiple_of(3) {
                let spec = world.make_spec(hit, 1, me);
                world.queue_effect(spec, other);
            }
        }
    }
}

const CONTENT: &str = r#"(
    tags: ["Input.Sprint", "Ability.Movement.Sprint", "GameplayCue.Sprint", "GameplayCue.Hit"],
    attribute_sets: { "Vitals": (attributes: { "Health": (default: 100000, min: Const(0)) }) },
    effects: {
        "Hit": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -3))],
                cues: [(tag: "GameplayCue.Hit")]),
    },
    abilities: {
        "Sprint": (tags: ["Ability.Movement.Sprint"], triggers: [TagPresent("Input.Sprint")],
                   activate_on_input: false, cues: ["GameplayCue.Sprint"]),
    },
)"#;

type Error = Box<dyn std::error::Error>;

/// The world every peer starts from: one fighter per player.
fn world(players: usize) -> Result<World<Brawl>, Error> {
    let content = Arc::new(Content::from_ron_str(CONTENT)?);
    let config =
        WorldConfig { seed: 7, players: u16::try_from(players)?, ..WorldConfig::default() };
    let mut w = World::<Brawl>::new(content.clone(), &Hooks::new(), config)?;
    let vitals = content.attr_set("Vitals")?;
    let sprint = content.ability("Sprint")?;
    for p in 0..players {
        let e = w.spawn_actor(&[vitals]).ok_or("no room for a fighter")?;
        w.grant_ability(e, sprint, 1).ok_or("cannot grant Sprint")?;
        w.bind_player(p, e);
    }
    Ok(w)
}

/// A deterministic bot: holds sprint and fire in stretches that depend on the player.
fn bot(player: usize, frame: u32) -> u8 {
    let mut s = Stream::derive(0xB07, &[player as u64, u64::from(frame / 9)]);
    let sprint = u8::from(s.below(3) == 0);
    let fire = u8::from(s.below(4) == 0) << 1;
    sprint | fire
}

/// What peers say on the reliable channel once they have confirmed every frame.
const DONE: &[u8] = b"RBADONE";

struct PeerArgs {
    room: String,
    players: usize,
    frames: u32,
    input_delay: usize,
    timeout: Duration,
}

fn peer(args: &PeerArgs) -> Result<bool, Error> {
    let world = world(args.players)?;
    let handshake = Handshake::of(&world);
    // GGRS's wall-clock disconnect timeout is off: the runner's departure rule decides, and the
    // survivors agree on the frame a leaver's input ends at.
    let builder = hardened_builder::<MatchboxConfig<Brawl>>(args.players, 8, args.input_delay, 10)?;
    let start = Instant::now();
    let mut options = MatchboxOptions::new(args.room.clone(), args.players);
    options.peers_timeout = args.timeout;
    let mut m = MatchboxSession::<Brawl>::connect(&options, &handshake, builder)?;
    let handle = m.local_handle();
    eprintln!(
        "peer {} is player {handle} of {}; connected and synchronised in {:.2} s",
        m.roster.local(),
        m.roster.len(),
        start.elapsed().as_secs_f64()
    );
    let remotes: BTreeSet<_> = m.roster.remotes().collect();

    let mut runner = Runner::new(world, 8, 10);
    runner.attach_guard(m.guard.clone());
    runner.record(0);
    let tick = Duration::from_micros(16_667);
    let mut next = Instant::now();
    let mut sent_done = false;
    let mut done_from = BTreeSet::new();
    let mut all_done_at: Option<Instant> = None;
    let mut disconnected = false;
    let run_start = Instant::now();
    loop {
        if start.elapsed() > args.timeout {
            return Err(format!(
                "timed out after {} s at frame {} ({} confirmed)",
                args.timeout.as_secs(),
                runner.world().next_frame(),
                runner.recorder().map_or(0, |r| r.replay().frames.len())
            )
            .into());
        }
        let f = runner.world().next_frame();
        let input = if f < args.frames { bot(handle, f) } else { 0 };
        runner.advance_p2p(&mut m.session, &[(handle, input)], None, |_| {})?;
        for ev in runner.drain_events() {
            match ev {
                SessionEvent::WaitRecommendation(n) => next += tick * n,
                SessionEvent::Disconnected(who) => {
                    eprintln!("peer {who} disconnected");
                    disconnected = true;
                }
                SessionEvent::Left { peer, players, last_frame } => {
                    eprintln!("peer {peer} left (players {players:?}, last frame {last_frame:?})");
                    disconnected = true;
                }
                SessionEvent::Desync(frame) => eprintln!("DESYNC at frame {frame}"),
                other => eprintln!("{other:?}"),
            }
        }
        let confirmed = runner.recorder().map_or(0, |r| r.replay().frames.len());
        if confirmed >= args.frames as usize && !sent_done {
            m.broadcast_reliable(DONE)?;
            sent_done = true;
        }
        for (from, bytes) in m.receive_reliable()? {
            if bytes == DONE && remotes.contains(&from) {
                done_from.insert(from);
            }
        }
        if sent_done && done_from.len() == remotes.len() && all_done_at.is_none() {
            all_done_at = Some(Instant::now());
        }
        // Everyone has confirmed every frame: keep answering a little longer so the others
        // get our last packets, then stop.
        if all_done_at.is_some_and(|t| t.elapsed() >= Duration::from_millis(500)) {
            break;
        }
        if disconnected && !sent_done {
            return Err("a peer left before the end of the match".into());
        }
        next += tick;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else if now - next > tick * 10 {
            next = now; // far behind (a stall): do not try to catch up in a burst
        }
    }

    let replay = runner.recorder().ok_or("not recording")?.replay();
    let frame = replay.frames.get(args.frames as usize - 1).ok_or("frame not recorded")?;
    let stats = runner.stats();
    eprintln!(
        "played {} frames in {:.2} s: {} rollbacks (max depth {}), {} re-simulated, {} desyncs",
        args.frames,
        run_start.elapsed().as_secs_f64(),
        stats.rollbacks,
        stats.max_rollback,
        stats.resimulated,
        stats.desyncs
    );
    println!("checksum frame {}: {:016x}", args.frames, frame.checksum);
    std::io::stdout().flush()?;
    Ok(stats.desyncs == 0 && runner.desync_reports().is_empty())
}

fn serve(addr: &str, lifetime: Option<Duration>) -> Result<(), Error> {
    let addr: std::net::SocketAddr = addr.parse()?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let mut server = matchbox_signaling::SignalingServer::full_mesh_builder(addr).build();
        let bound = server.bind()?;
        println!("signaling server listening on ws://{bound}/<room>");
        std::io::stdout().flush()?;
        match lifetime {
            Some(d) => match tokio::time::timeout(d, server.serve()).await {
                Ok(r) => r?,
                Err(_) => eprintln!("signaling server: {} s are up, stopping", d.as_secs()),
            },
            None => server.serve().await?,
        }
        Ok::<(), Error>(())
    })
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: p2p_matchbox --serve ADDR [--for SECS]\n       p2p_matchbox --room ws://HOST:PORT/ROOM [--players N] [--frames F] [--input-delay D] [--timeout SECS]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut serve_addr = None;
    let mut lifetime = None;
    let mut p = PeerArgs {
        room: String::new(),
        players: 2,
        frames: 600,
        input_delay: 2,
        timeout: Duration::from_secs(90),
    };
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        let ok = match args[i].as_str() {
            "--serve" => {
                serve_addr = Some(value.clone());
                true
            }
            "--for" => value.parse().map(|s| lifetime = Some(Duration::from_secs(s))).is_ok(),
            "--room" => {
                p.room = value.clone();
                true
            }
            "--players" => value.parse().map(|v| p.players = v).is_ok(),
            "--frames" => value.parse().map(|v| p.frames = v).is_ok(),
            "--input-delay" => value.parse().map(|v| p.input_delay = v).is_ok(),
            "--timeout" => value.parse().map(|s| p.timeout = Duration::from_secs(s)).is_ok(),
            _ => false,
        };
        if !ok {
            eprintln!("bad argument {} {value}", args[i]);
            return usage();
        }
        i += 2;
    }
    if let Some(addr) = serve_addr {
        return match serve(&addr, lifetime) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("signaling server: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if p.room.is_empty() || p.frames == 0 || p.players < 2 {
        return usage();
    }
    match peer(&p) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("a desync was reported");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
