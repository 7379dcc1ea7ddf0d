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
//! the way GGRS's desync detection compares the peers' checksums every 10 frames, and the
//! peers tell each other their confirmed checksum every 60 frames (after frames 59, 119, …)
//! and compare them. A peer exits 0 when the checksums agree and no desync was detected. No STUN server is used, so the peers
//! must reach each other's addresses directly (same machine or LAN). WebRTC gathers candidates
//! on every network interface and sends mDNS multicast: where traffic must stay on the machine,
//! run each process inside a network namespace, as `tests/matchbox.rs` does
//! (`ip netns exec NS …`).
//!
//! `--help` lists the options with their ranges and defaults (`--serve ADDR [--for SECS]` for
//! the signaling server; `--room URL [--players N] [--frames F] [--input-delay D]
//! [--timeout SECS]` for a peer).
//!
//! The game (`--game brawl`, the default): every player drives a fighter with deterministic bot
//! inputs; bit 0 holds Sprint (an ability triggered by a tag), bit 1 fires a hit at the next
//! player every third frame. Every peer, of either game, is a `MatchPeer` over a
//! `MatchboxTransport` (built by `ConnectingMatch`): it survives departures and takes players
//! back. With `--rejoin LEAVE:BACK` a peer's program
//! drops out after confirming frame LEAVE (its socket closes, as a crash would) and a new one
//! comes back into its slot BACK − LEAVE frames of time later, from a new peer id, with the
//! ticket the first kept; the others hold the match for it and send it their state:
//!
//! ```sh
//! cargo run --features matchbox --example p2p_matchbox -- --room ws://127.0.0.1:3536/back --players 2 --frames 1200
//! cargo run --features matchbox --example p2p_matchbox -- --room ws://127.0.0.1:3536/back --players 2 --frames 1200 --rejoin 300:600
//! ```
//!
//! `--game duel` plays the kit's duel instead (`rollback_abilities_kit::duel`, 2 to 4 players,
//! `--seed S`), every fighter played by the duel's bot (the kit's `NetPeer`): the game of the
//! `browser_duel` page, whose tabs play the same `MatchPeer` (a reloaded tab comes back into
//! its slot as `--rejoin` does). A native peer and a browser tab can then share a room (the
//! page's server is also the signaling server), and the page shows the same checksums the
//! native peer prints:
//!
//! ```sh
//! cargo run --release --features browser --example browser_duel      # ready http://127.0.0.1:8080/
//! # open http://127.0.0.1:8080/?bot=1&frames=600 in a browser, then
//! cargo run --release --features matchbox --example p2p_matchbox -- --game duel --room ws://127.0.0.1:8080/duel --players 2 --frames 600
//! ```

#[path = "p2p_matchbox/args.rs"]
mod args;

use args::{Cli, GameKind};
use clap::Parser;
use rollback_abilities::AbilityInput;
use rollback_abilities::prelude::*;
use rollback_abilities::random::Stream;
use rollback_abilities::session::matchbox::{ConnectingMatch, MatchboxTransport, PeerId};
use rollback_abilities::session::{
    MatchPeer, MatchboxOptions, RunnerStats, SessionConfig, SessionEvent,
};
use rollback_abilities_kit::duel::{self, Duel, MatchOptions, NetPeer};
use std::collections::BTreeMap;
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
        let e = w.spawn_actor(&[vitals])?;
        w.grant_ability(e, sprint, 1)?;
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

/// What peers say every [`SUM_EVERY`] confirmed frames, followed by the frame (u32) and the
/// checksum of the confirmed state after it (u64), little-endian (the `browser_duel` page says
/// and reads the same).
const SUM: &[u8] = b"RBASUM";

/// Confirmed checksums are compared every this many frames: after frames 59, 119, 179…
const SUM_EVERY: u32 = 60;

/// GGRS's desync detection compares the peers' checksums every this many frames.
const DESYNC_INTERVAL: u32 = 10;

/// A `prefix`, a frame and the checksum after it.
fn sum_message(prefix: &[u8], frame: u32, checksum: u64) -> Vec<u8> {
    let mut m = prefix.to_vec();
    m.extend_from_slice(&frame.to_le_bytes());
    m.extend_from_slice(&checksum.to_le_bytes());
    m
}

/// The frame and checksum of a message with `prefix` (untrusted bytes: exactly 12 after it).
fn parse_sum(bytes: &[u8], prefix: &[u8]) -> Option<(u32, u64)> {
    let rest = bytes.strip_prefix(prefix)?;
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
        SessionEvent::Rejoining { players } => {
            format!("players {players:?} are coming back: holding the match for them")
        }
        SessionEvent::RejoinAborted { players } => {
            format!("players {players:?} did not get back in; the match goes on without them")
        }
        SessionEvent::Rejoined { players, frame } => {
            format!("players {players:?} are back from frame {frame}")
        }
        SessionEvent::RejoinFault { peer, fault } => {
            format!("refused a rejoin message from {}: {fault}", who(peer))
        }
        SessionEvent::Equivocation { peer, evidence } => {
            format!("{} sent two different signed inputs: {evidence}", who(peer))
        }
        // Events a later version adds: their debug text.
        other => format!("{other:?}"),
    })
}

/// One peer's game over its [`MatchPeer`], as the match loop drives it: the brawl (the
/// scripted bot) or the duel (the kit's [`NetPeer`] and its bot).
trait Side: Sized {
    /// The game.
    type G: Game;
    /// What the game is played with (the same for a program coming back).
    type Setup;
    /// The world every peer starts from.
    fn world(setup: &Self::Setup) -> Result<World<Self::G>, Error>;
    /// This peer's game over the match peer [`ConnectingMatch`] handed out (one coming back
    /// into the match is still rejoining).
    fn adopt(
        setup: &Self::Setup,
        peer: MatchPeer<Self::G, MatchboxTransport>,
    ) -> Result<Self, Error>;
    /// One tick: this player's input and [`MatchPeer::tick`].
    fn tick(&mut self) -> Result<(), Error>;
    /// The match peer.
    fn peer(&self) -> &MatchPeer<Self::G, MatchboxTransport>;
}

/// The brawl: the match peer, played by [`bot`].
struct BrawlSide {
    peer: MatchPeer<Brawl, MatchboxTransport>,
    frames: u32,
}

impl Side for BrawlSide {
    type G = Brawl;
    /// Players and frames.
    type Setup = (usize, u32);

    fn world(&(players, _): &(usize, u32)) -> Result<World<Brawl>, Error> {
        world(players)
    }

    fn adopt(
        &(_, frames): &(usize, u32),
        mut peer: MatchPeer<Brawl, MatchboxTransport>,
    ) -> Result<Self, Error> {
        peer.runner.record(0);
        Ok(BrawlSide { peer, frames })
    }

    fn tick(&mut self) -> Result<(), Error> {
        let (frames, handle) = (self.frames, self.peer.handle);
        self.peer.tick(|f, _| if f < frames { bot(handle, f) } else { 0 }, None, |_| {})?;
        Ok(())
    }

    fn peer(&self) -> &MatchPeer<Brawl, MatchboxTransport> {
        &self.peer
    }
}

/// The duel: the kit's [`NetPeer`], played by the duel's bot (from its confirmed view of the
/// match), as a `browser_duel` page with `bot=1` plays it.
impl Side for NetPeer<MatchboxTransport> {
    type G = Duel;
    type Setup = MatchOptions;

    fn world(options: &MatchOptions) -> Result<World<Duel>, Error> {
        Ok(duel::try_new_world(options.seed, options.peers)?)
    }

    fn adopt(
        options: &MatchOptions,
        peer: MatchPeer<Duel, MatchboxTransport>,
    ) -> Result<Self, Error> {
        Ok(NetPeer::adopt(*options, peer)?)
    }

    fn tick(&mut self) -> Result<(), Error> {
        NetPeer::tick(self)?;
        Ok(())
    }

    fn peer(&self) -> &MatchPeer<Duel, MatchboxTransport> {
        NetPeer::peer(self)
    }
}

/// Joins the room and plays the chosen game.
fn peer(args: &Cli, room: &str) -> Result<bool, Error> {
    let players = usize::from(args.players);
    let start = Instant::now();
    let mut options = MatchboxOptions::new(room.to_string(), players);
    options.peers_timeout = args.timeout();
    if let Some((leave, _)) = args.rejoin
        && leave >= args.frames
    {
        return Err(format!("--rejoin: LEAVE {leave} is not below --frames {}", args.frames).into());
    }
    // The session is guarded and GGRS's wall-clock disconnect timeout is off: the runner's
    // departure rule decides, and the survivors agree on the frame a leaver's input ends at.
    // Time-sync waits are capped at the prediction window.
    match args.game {
        GameKind::Brawl => {
            options.session = SessionConfig {
                input_delay: usize::from(args.input_delay),
                desync_interval: DESYNC_INTERVAL,
                ..SessionConfig::default()
            };
            play::<BrawlSide>(args, start, &options, &(players, args.frames))
        }
        GameKind::Duel => {
            let duel_options = MatchOptions {
                peers: players,
                frames: args.frames,
                seed: args.seed,
                input_delay: usize::from(args.input_delay),
                ..MatchOptions::default()
            };
            duel_options.validate()?;
            // The session's settings are the duel's, as a page's.
            options.session = duel_options.session_config();
            play::<NetPeer<MatchboxTransport>>(args, start, &options, &duel_options)
        }
    }
}

/// The match loop: ticks at 60 Hz (GGRS's wait recommendations slow it down), reports the
/// confirmed checksum every [`SUM_EVERY`] frames and compares the others' reports, then ends as
/// the module documentation says. Every peer is a [`MatchPeer`] over a [`MatchboxTransport`],
/// which survives departures and takes players back. With `--rejoin LEAVE:BACK` this peer's
/// program drops out after confirming LEAVE and a new one comes back into the slot with the
/// ticket the first kept.
fn play<S: Side>(
    args: &Cli,
    start: Instant,
    options: &MatchboxOptions,
    setup: &S::Setup,
) -> Result<bool, Error> {
    let players = usize::from(args.players);
    let mut side = S::adopt(setup, ConnectingMatch::connect(options, S::world(setup)?)?)?;
    let handle = side.peer().handle;
    eprintln!(
        "peer {} is player {handle} of {players}; connected in {:.2} s",
        side.peer().transport().local_id(),
        start.elapsed().as_secs_f64()
    );
    let frames = args.frames;
    let tick = Duration::from_micros(16_667);
    let mut next = Instant::now();
    let mut sent_done = false;
    // The other peers' checksums after the last frame, as their DONE messages said.
    let mut done_from: BTreeMap<PeerId, (u32, u64)> = BTreeMap::new();
    let mut sums = Sums::default();
    let mut all_done_at: Option<Instant> = None;
    let mut plan = args.rejoin;
    let mut seen = 0;
    let run_start = Instant::now();
    loop {
        if start.elapsed() > args.timeout() {
            let peer = side.peer();
            return Err(format!(
                "timed out after {} s at frame {} ({:?} confirmed)",
                args.timeout,
                peer.runner.world().next_frame(),
                peer.confirmed_frame()
            )
            .into());
        }
        side.tick()?;
        let peer = side.peer();
        let slots = peer.slot_addresses().to_vec();
        // The runner names peers by their id's debug text.
        let who = |p: &str| match slots.iter().position(|s| format!("{s:?}") == p) {
            Some(h) => format!("player {h}"),
            None => format!("an unknown peer ({p})"),
        };
        for ev in peer.new_events(&mut seen) {
            if let SessionEvent::WaitRecommendation(n) = ev {
                next += tick * *n;
            }
            if let Some(text) = describe(ev, &who) {
                eprintln!("{text}");
            }
        }
        let confirmed = peer.confirmed_frame().map_or(0, |f| f + 1);
        if let Some((leave, back)) = plan
            && confirmed > leave
        {
            plan = None;
            side = drop_out_and_come_back(side, setup, options, leave, back, start)?;
            seen = 0;
            continue;
        }
        let mut transport = peer.transport().clone();
        let others: Vec<PeerId> = slots.iter().copied().filter(|p| *p != slots[handle]).collect();
        let checksum_after = |f: u32| peer.runner.confirmed_checksums().get(&(f + 1)).copied();
        // A player that came back holds the states from the frame it came back at.
        let first = peer.runner.confirmed_checksums().keys().next().copied().unwrap_or(0);
        while sums.checked_through < confirmed {
            let f = sums.checked_through;
            if (f + 1).is_multiple_of(SUM_EVERY) && f + 1 >= first {
                // The state after a confirmed frame is there once the next frame saved it.
                let Some(sum) = checksum_after(f) else { break };
                sums.mine.insert(f, sum);
                for p in &others {
                    transport.send_reliable(*p, &sum_message(SUM, f, sum));
                }
            }
            sums.checked_through += 1;
        }
        // The state after the last frame, once it is confirmed and saved.
        if confirmed >= frames
            && !sent_done
            && let Some(last) = checksum_after(frames - 1)
        {
            for p in &others {
                transport.send_reliable(*p, &sum_message(DONE, frames - 1, last));
            }
            sent_done = true;
        }
        for (from, bytes) in transport.receive_reliable() {
            let Some(player) = slots.iter().position(|s| *s == from) else { continue };
            if let Some(done) = parse_sum(&bytes, DONE) {
                done_from.insert(from, done);
            } else if let Some((f, sum)) = parse_sum(&bytes, SUM)
                && sums.theirs.len() < 4096
            {
                sums.theirs.insert((player, f), sum);
            }
        }
        sums.compare();
        // A player that left for good sends nothing more.
        let absent = peer.runner.absent();
        let expected = (0..players).filter(|p| *p != handle && !absent.contains(p)).count();
        if sent_done && done_from.len() >= expected && all_done_at.is_none() {
            all_done_at = Some(Instant::now());
        }
        // Everyone has confirmed every frame: keep answering a little longer so the others
        // get our last packets, then stop.
        if all_done_at.is_some_and(|t| t.elapsed() >= Duration::from_millis(500)) {
            break;
        }
        next += tick;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else if now - next > tick * 10 {
            next = now; // far behind (a stall): do not try to catch up in a burst
        }
    }
    let elapsed = run_start.elapsed();
    let peer = side.peer();
    let slots = peer.slot_addresses().to_vec();
    let outcome = Outcome {
        handle,
        last: peer
            .runner
            .confirmed_checksums()
            .get(&frames)
            .copied()
            .ok_or("frame not recorded")?,
        stats: peer.runner.stats(),
        desync_reports: peer.runner.desync_reports().len(),
    };
    let player_of = |p: &PeerId| slots.iter().position(|s| s == p);
    report(&outcome, &player_of, frames, elapsed, &done_from, &sums)
}

/// `--rejoin`: the program of this peer drops out (its socket closes, as a crash would; all it
/// keeps is its ticket), and after BACK − LEAVE frames of time a new one comes back into its
/// slot from a new peer id.
fn drop_out_and_come_back<S: Side>(
    side: S,
    setup: &S::Setup,
    options: &MatchboxOptions,
    leave: u32,
    back: u32,
    start: Instant,
) -> Result<S, Error> {
    let ticket = side.peer().ticket();
    side.peer().transport().clone().close();
    drop(side);
    let away = Duration::from_micros(16_667) * (back - leave);
    eprintln!(
        "dropping out after frame {leave} (the socket closes, as a crash would); back in {:.1} s",
        away.as_secs_f64()
    );
    std::thread::sleep(away);
    let peer = ConnectingMatch::rejoin(options, S::world(setup)?, ticket, start.elapsed())?
        .finish(start)?;
    eprintln!(
        "back as peer {}: asking the others to let player {} in",
        peer.transport().local_id(),
        peer.handle
    );
    S::adopt(setup, peer)
}

/// Confirmed checksums every [`SUM_EVERY`] frames: this peer's, the others' not yet compared,
/// and what the comparisons came to.
#[derive(Default)]
struct Sums {
    /// Frames before this one have been looked at.
    checked_through: u32,
    mine: BTreeMap<u32, u64>,
    /// By (player, frame).
    theirs: BTreeMap<(usize, u32), u64>,
    agreed: u64,
    /// (frame, player, ours, theirs).
    differ: Vec<(u32, usize, u64, u64)>,
}

impl Sums {
    /// Compares the others' checksums of the frames this peer has its own of.
    fn compare(&mut self) {
        let (mine, agreed, differ) = (&self.mine, &mut self.agreed, &mut self.differ);
        self.theirs.retain(|(player, f), sum| match mine.get(f) {
            Some(ours) if ours == sum => {
                *agreed += 1;
                false
            }
            Some(ours) => {
                differ.push((*f, *player, *ours, *sum));
                false
            }
            None => true,
        });
    }
}

/// What a peer reports at the end of a match.
struct Outcome {
    /// Its player.
    handle: usize,
    /// Its checksum of the confirmed state after the last frame.
    last: u64,
    stats: RunnerStats,
    desync_reports: usize,
}

/// Prints the match's result: the checksums after the last frame (this peer's and each
/// other's DONE), the periodic comparisons and desync detection. `true` if everything agrees.
fn report(
    outcome: &Outcome,
    player_of: &dyn Fn(&PeerId) -> Option<usize>,
    frames: u32,
    elapsed: Duration,
    done_from: &BTreeMap<PeerId, (u32, u64)>,
    sums: &Sums,
) -> Result<bool, Error> {
    let handle = outcome.handle;
    let last = frames - 1;
    let mine_last = outcome.last;
    let stats = outcome.stats;
    eprintln!(
        "played {frames} frames in {:.2} s: {} rollbacks (max depth {}), {} re-simulated",
        elapsed.as_secs_f64(),
        stats.rollbacks,
        stats.max_rollback,
        stats.resimulated,
    );
    println!("checksum after frame {last}: {mine_last:016x} (this peer, player {handle})");
    let mut agree = true;
    for (peer, (frame, sum)) in done_from {
        let player = player_of(peer).map_or_else(|| "?".into(), |h| h.to_string());
        let verdict = if *frame == last && *sum == mine_last {
            "agrees"
        } else {
            agree = false;
            "DIFFERS"
        };
        println!("checksum after frame {frame}: {sum:016x} (player {player}, {verdict})");
    }
    if agree {
        println!("all {} peers agree on the checksum after frame {last}", done_from.len() + 1);
    } else {
        println!("the peers DISAGREE on the checksum after frame {last}");
    }
    match sums.differ.first() {
        None => println!(
            "confirmed checksums compared every {SUM_EVERY} frames with the other peers: \
             {} comparisons, all agree",
            sums.agreed
        ),
        Some((f, player, ours, theirs)) => {
            agree = false;
            println!(
                "confirmed checksums compared every {SUM_EVERY} frames: {} of {} DIFFER, first \
                 after frame {f} with player {player} ({ours:016x} vs {theirs:016x})",
                sums.differ.len(),
                sums.differ.len() as u64 + sums.agreed
            );
        }
    }
    let desynced = stats.desyncs > 0 || outcome.desync_reports > 0;
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
    // Every failure names the room, so a peer that cannot reach it says which address it tried.
    match peer(&cli, &room).map_err(|e| format!("room {room}: {e}")) {
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
