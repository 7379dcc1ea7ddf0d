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
//! Once every peer has confirmed every frame, each sends the others the checksum of its
//! confirmed state after the last frame, and each prints its own and the others', e.g.
//! `checksum after frame 599: 1f0c… (this peer, player 0)`, then whether they agree; along
//! the way GGRS's desync detection compares the peers' checksums every 10 frames. A peer exits
//! 0 when the checksums agree and no desync was detected. No STUN server is used, so the peers
//! must reach each other's addresses directly (same machine or LAN). WebRTC gathers candidates
//! on every network interface and sends mDNS multicast: where traffic must stay on the machine,
//! run each process inside a network namespace, as `tests/matchbox.rs` does
//! (`ip netns exec NS …`).
//!
//! `--help` lists the options with their ranges and defaults (`--serve ADDR [--for SECS]` for
//! the signaling server; `--room URL [--players N] [--frames F] [--input-delay D]
//! [--timeout SECS]` for a peer).
//!
//! The game: every player drives a fighter with deterministic bot inputs; bit 0 holds Sprint
//! (an ability triggered by a tag), bit 1 fires a hit at the next player every third frame.

#[path = "p2p_matchbox/args.rs"]
mod args;

use args::Cli;
use clap::Parser;
use rollback_abilities::AbilityInput;
use rollback_abilities::prelude::*;
use rollback_abilities::random::Stream;
use rollback_abilities::session::{
    Handshake, MatchboxConfig, MatchboxOptions, MatchboxSession, Runner, SessionEvent,
    hardened_builder,
};
use std::collections::{BTreeMap, BTreeSet};
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

/// What peers say on the reliable channel once they have confirmed every frame, followed by
/// the last frame (u32) and the checksum of the confirmed state after it (u64), little-endian.
const DONE: &[u8] = b"RBADONE";

/// GGRS's desync detection compares the peers' checksums every this many frames.
const DESYNC_INTERVAL: u32 = 10;

/// The DONE message for the checksum after `frame`.
fn done_message(frame: u32, checksum: u64) -> Vec<u8> {
    let mut m = DONE.to_vec();
    m.extend_from_slice(&frame.to_le_bytes());
    m.extend_from_slice(&checksum.to_le_bytes());
    m
}

/// The frame and checksum of a DONE message.
fn parse_done(bytes: &[u8]) -> Option<(u32, u64)> {
    let rest = bytes.strip_prefix(DONE)?;
    let frame = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
    let checksum = u64::from_le_bytes(rest.get(4..12)?.try_into().ok()?);
    (rest.len() == 12).then_some((frame, checksum))
}

/// A session event in words; `who` names a peer (the runner reports peers by their
/// `PeerId`'s debug text) by its player handle.
fn describe(ev: &SessionEvent, who: &dyn Fn(&str) -> String) -> Option<String> {
    Some(match ev {
        SessionEvent::WaitRecommendation(_) => return None,
        SessionEvent::Synchronized(p) => format!("synchronised with {}", who(p)),
        SessionEvent::Disconnected(p) => format!("{} disconnected", who(p)),
        SessionEvent::NetworkInterrupted(p) => {
            format!("{} has not been heard from for a while", who(p))
        }
        SessionEvent::NetworkResumed(p) => format!("{} is heard from again", who(p)),
        SessionEvent::Desync(frame) => {
            format!("DESYNC: a peer's checksum of frame {frame} differs from ours")
        }
        SessionEvent::PeerFault { peer, fault } => {
            format!("refused a message from {}: {fault}", who(peer))
        }
        SessionEvent::Stalled { frame, ticks, waiting_on } => format!(
            "stalled at frame {frame} for {ticks} ticks, waiting for the input of players \
             {waiting_on:?}"
        ),
        SessionEvent::Resumed { frame, ticks } => {
            format!("moving again at frame {frame} after {ticks} ticks")
        }
        SessionEvent::Leaving { peer, players } => {
            format!("{} is leaving (players {players:?})", who(peer))
        }
        SessionEvent::Left { peer, players, last_frame } => match last_frame {
            Some(f) => {
                format!("{} left (players {players:?}; their input ends at frame {f})", who(peer))
            }
            None => format!("{} left (players {players:?}) before sending any input", who(peer)),
        },
    })
}

fn peer(args: &Cli, room: &str) -> Result<bool, Error> {
    let players = usize::from(args.players);
    let world = world(players)?;
    let handshake = Handshake::of(&world);
    // GGRS's wall-clock disconnect timeout is off: the runner's departure rule decides, and the
    // survivors agree on the frame a leaver's input ends at.
    let builder = hardened_builder::<MatchboxConfig<Brawl>>(
        players,
        8,
        usize::from(args.input_delay),
        DESYNC_INTERVAL,
    )?;
    let start = Instant::now();
    let timeout = args.timeout();
    let mut options = MatchboxOptions::new(room.to_string(), players);
    options.peers_timeout = timeout;
    let mut m = MatchboxSession::<Brawl>::connect(&options, &handshake, builder)?;
    let handle = m.local_handle();
    eprintln!(
        "peer {} is player {handle} of {}; connected and synchronised in {:.2} s",
        m.roster.local(),
        m.roster.len(),
        start.elapsed().as_secs_f64()
    );
    let remotes: BTreeSet<_> = m.roster.remotes().collect();
    // The runner names peers by their id's debug text.
    let handles: BTreeMap<String, usize> =
        m.roster.peers().iter().enumerate().map(|(h, p)| (format!("{p:?}"), h)).collect();
    let who = |p: &str| match handles.get(p) {
        Some(h) => format!("player {h}"),
        None => format!("an unknown peer ({p})"),
    };
    let frames = args.frames;

    let mut runner = Runner::new(world, 8, DESYNC_INTERVAL);
    runner.attach_guard(m.guard.clone());
    runner.record(0);
    let tick = Duration::from_micros(16_667);
    let mut next = Instant::now();
    let mut sent_done = false;
    // The other peers' checksums after the last frame, as their DONE messages said.
    let mut done_from: BTreeMap<_, (u32, u64)> = BTreeMap::new();
    let mut all_done_at: Option<Instant> = None;
    let mut disconnected = false;
    let run_start = Instant::now();
    loop {
        if start.elapsed() > timeout {
            return Err(format!(
                "timed out after {} s at frame {} ({} confirmed)",
                timeout.as_secs(),
                runner.world().next_frame(),
                runner.recorder().map_or(0, |r| r.replay().frames.len())
            )
            .into());
        }
        let f = runner.world().next_frame();
        let input = if f < frames { bot(handle, f) } else { 0 };
        runner.advance_p2p(&mut m.session, &[(handle, input)], None, |_| {})?;
        for ev in runner.drain_events() {
            match &ev {
                SessionEvent::WaitRecommendation(n) => next += tick * *n,
                SessionEvent::Disconnected(_) | SessionEvent::Left { .. } => disconnected = true,
                _ => {}
            }
            if let Some(text) = describe(&ev, &who) {
                eprintln!("{text}");
            }
        }
        let confirmed = runner.recorder().map_or(0, |r| r.replay().frames.len());
        if confirmed >= frames as usize && !sent_done {
            let replay = runner.recorder().ok_or("not recording")?.replay();
            let last = replay.frames.get(frames as usize - 1).ok_or("frame not recorded")?;
            m.broadcast_reliable(&done_message(frames - 1, last.checksum))?;
            sent_done = true;
        }
        for (from, bytes) in m.receive_reliable()? {
            if let Some(done) = parse_done(&bytes)
                && remotes.contains(&from)
            {
                done_from.insert(from, done);
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
    let last = frames - 1;
    let mine = replay.frames.get(last as usize).ok_or("frame not recorded")?.checksum;
    let stats = runner.stats();
    eprintln!(
        "played {frames} frames in {:.2} s: {} rollbacks (max depth {}), {} re-simulated",
        run_start.elapsed().as_secs_f64(),
        stats.rollbacks,
        stats.max_rollback,
        stats.resimulated,
    );
    println!("checksum after frame {last}: {mine:016x} (this peer, player {handle})");
    let mut agree = true;
    for (peer, (frame, sum)) in &done_from {
        let player = m.roster.handle_of(*peer).map_or_else(|| "?".into(), |h| h.to_string());
        let verdict = if *frame == last && *sum == mine {
            "agrees"
        } else {
            agree = false;
            "DIFFERS"
        };
        println!("checksum after frame {frame}: {sum:016x} (player {player}, {verdict})");
    }
    let desynced = stats.desyncs > 0 || !runner.desync_reports().is_empty();
    if agree {
        println!("all {} peers agree on the checksum after frame {last}", done_from.len() + 1);
    } else {
        println!("the peers DISAGREE on the checksum after frame {last}");
    }
    if !desynced {
        println!(
            "desync detection (GGRS compares the peers' checksums every {DESYNC_INTERVAL} frames): \
             no desync"
        );
    } else {
        println!("desync detection: {} desyncs reported", stats.desyncs);
    }
    std::io::stdout().flush()?;
    Ok(agree && !desynced)
}

fn serve(addr: std::net::SocketAddr, lifetime: Option<Duration>) -> Result<(), Error> {
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(addr) = cli.serve {
        return match serve(addr, cli.lifetime()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("signaling server: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let room = cli.room.clone().unwrap_or_default();
    match peer(&cli, &room) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("the peers' checksums disagree or a desync was detected");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
