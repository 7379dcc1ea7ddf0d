//! The duel demo: bots fight a best-of-rounds duel over GGRS rollback netcode, one peer per
//! fighter, and the run ends with a report — rollbacks, checksum agreement across peers, the
//! re-verified replay, cue reconciliation counters, what happened, and who won.
//!
//! ```text
//! cargo run --release --example duel
//! cargo run --release --example duel -- --peers 4 --latency 80 --jitter 30 --loss 10
//! cargo run --release --example duel -- --replay duel.replay --plot duel.svg
//! cargo run --release --example duel -- --udp            # one OS process per peer, UDP on 127.0.0.1
//! cargo run --release --example duel -- --peers 3 --leave 2@900  # player 2 leaves after 900
//! cargo run --release --example duel -- --udp --leave 1@600
//! cargo run --release --example duel -- --peers 3 --rejoin 1@600:1200  # leaves, comes back
//! cargo run --release --example duel -- --udp --rejoin 1@600:1200
//! ```
//!
//! `--leave PLAYER@FRAME` makes that player's peer leave once its world has simulated FRAME
//! (the emulated peer is cut off the network, the `--udp` process exits). The others wait for
//! it (two seconds of emulated time; about ten seconds in `--udp` mode), agree on the last
//! frame of its input and play on to the end; the report shows the departure and checks the
//! survivors. The leaver's fighter stands idle from there on and the leaver forfeits.
//!
//! `--rejoin PLAYER@LEAVE:BACK` makes that player's peer leave the same way after LEAVE and come
//! back into its own slot once the others have confirmed the frames before BACK (frames of
//! their timeline), as a restarted program would: the members agree on the frame F it comes
//! back at, send it their state, and everyone plays on from F. While it is away its fighter
//! stands idle (the departure policy); from F on its input is its own again and it does not
//! forfeit. The report shows the gap, the agreed F and the state's bytes, and checks that its
//! confirmed checksums from F on are the others'.
//!
//! With `--udp --rejoin` the player's process exits after LEAVE; the others play on until their
//! worlds reach BACK and wait there (deterministically at BACK, whatever the machine's speed: a
//! lone survivor would otherwise race to the end of the match before a new program started).
//! Once every one of them waits, this program starts a new process for the slot, which binds a
//! new port, as a restarted program would, and claims its slot with the slot's match identity
//! (kept in a file of the work directory); the members agree on F (BACK plus the input delay:
//! the frame after the last one they gave an input for), send it their state, and play on.
//!
//! In `--udp` mode every peer is a `MatchPeer` over a `UdpTransport` bound on 127.0.0.1 only
//! (GGRS's own `UdpNonBlockingSocket` binds every interface, 0.0.0.0): it takes GGRS datagrams
//! from the other slots' addresses only, and the crate's `GuardedSocket` authenticates every
//! message with the match's keys (each slot's identity, made by this program for the match)
//! and validates it before GGRS reads it.
//!
//! The game itself is the kit's module `rollback_abilities_kit::duel` (examples/kit; its
//! documentation names the duel's content and functions, matches and departures) and the chart
//! is the kit's `plot`, shared with the command-line tool; this file is the command line around
//! them.

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use rollback_abilities::CueKind;
use rollback_abilities::num::Frame;
use rollback_abilities::replay::Replay;
use rollback_abilities::session::{Identity, MatchKeys, PublicIdentity, RunnerStats, UdpTransport};
use rollback_abilities_kit::duel::{
    self, Comeback, Duel, DuelMatch, MatchOptions, MatchReport, NetPeer, PeerSummary, Transport,
};
use rollback_abilities_kit::plot;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Bots fight a duel over GGRS rollback netcode; prints a report of rollbacks, checksum
/// agreement, replay verification, cue reconciliation and the result.
#[derive(Parser, Debug)]
#[command(
    name = "duel",
    version,
    after_help = "Examples:\n  \
        cargo run --release --example duel\n  \
        cargo run --release --example duel -- --peers 4 --latency 80 --jitter 30 --loss 10\n  \
        cargo run --release --example duel -- --replay duel.replay --plot duel.svg\n  \
        cargo run --release --example duel -- --udp\n  \
        cargo run --release --example duel -- --peers 3 --leave 2@900\n  \
        cargo run --release --example duel -- --udp --leave 1@600\n  \
        cargo run --release --example duel -- --peers 3 --rejoin 1@600:1200\n  \
        cargo run --release --example duel -- --udp --rejoin 1@600:1200"
)]
struct Args {
    /// Fighters, one GGRS peer each: 2 to 4.
    #[arg(long, default_value_t = 2, value_name = "N",
          value_parser = clap::value_parser!(u8).range(2..=4))]
    peers: u8,
    /// Frames to play, 1 to 1000000 (60 frames = one second of game time).
    #[arg(long, default_value_t = 3600, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    frames: u32,
    /// Seed of the world's random streams, the bots and the emulated network.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Emulated one-way latency in milliseconds, 0 to 1000 [default: 40].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(0..=1000))]
    latency: Option<u32>,
    /// Emulated extra random latency per packet: up to MS milliseconds more, MS 0 to 1000
    /// [default: 12].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(0..=1000))]
    jitter: Option<u32>,
    /// Emulated packet loss in percent, 0 to 90 [default: 5].
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u32).range(0..=90))]
    loss: Option<u32>,
    /// GGRS input delay in frames, 0 to 15.
    #[arg(long, default_value_t = 2, value_name = "FRAMES",
          value_parser = clap::value_parser!(u8).range(0..=15))]
    input_delay: u8,
    /// Run each peer as its own OS process talking UDP on 127.0.0.1 instead of the in-memory
    /// emulated network. Each binds a socket on the loopback interface only (127.0.0.1, not
    /// 0.0.0.0), takes GGRS datagrams from the other peers only, and authenticates and validates
    /// every message (GuardedSocket) before GGRS reads it. --latency, --jitter and --loss do not
    /// apply.
    #[arg(long)]
    udp: bool,
    /// Player PLAYER leaves the match once its world has simulated frame FRAME (its peer stops;
    /// in --udp mode its process exits). The others wait for it (2 s of emulated time, about
    /// 10 s with --udp), agree on the last frame of its input and play on to the end; the
    /// leaver's fighter stands idle from then on and the leaver forfeits.
    #[arg(long, value_name = "PLAYER@FRAME", value_parser = parse_leave_arg)]
    leave: Option<(usize, Frame)>,
    /// Player PLAYER leaves the match once its world has simulated frame LEAVE and comes back
    /// into its own slot once the others have confirmed the frames before BACK (frames of their
    /// timeline): the members agree on the frame it comes back at, send it their state, and
    /// everyone plays on. Its fighter stands idle while it is away; it does not forfeit. With
    /// --udp its process exits after LEAVE, the others wait when their worlds reach BACK, and a
    /// new process for the slot comes back from a new port.
    #[arg(long, value_name = "PLAYER@LEAVE:BACK", value_parser = parse_rejoin_arg)]
    rejoin: Option<duel::RejoinPlan>,
    /// Write the replay of the match (peer 0's; with --leave, the first peer that stays) to
    /// FILE, then read it back and re-verify it.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// Write an SVG chart to FILE.svg: every fighter's Health, and Mana and Stamina, in two
    /// panels over frames, above a timeline of knock-outs, stuns and shields.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// (internal) Run as peer I of a --udp match.
    #[arg(long, hide = true, value_name = "I")]
    udp_child: Option<usize>,
    /// (internal) The UDP ports of every peer of a --udp match.
    #[arg(long, hide = true, value_delimiter = ',')]
    udp_ports: Vec<u16>,
    /// (internal) Where a --udp child writes its replay and reads its match identity.
    #[arg(long, hide = true)]
    udp_dir: Option<PathBuf>,
    /// (internal) Every slot's public match identity in a --udp match.
    #[arg(long, hide = true, value_delimiter = ',')]
    udp_keys: Vec<String>,
    /// (internal) This --udp child is the rejoiner's second program: it comes back into its slot.
    #[arg(long, hide = true)]
    udp_comeback: bool,
}

impl Args {
    fn options(&self) -> MatchOptions {
        let d = MatchOptions::default();
        MatchOptions {
            peers: usize::from(self.peers),
            frames: self.frames,
            seed: self.seed,
            latency_ms: self.latency.unwrap_or(d.latency_ms),
            jitter_ms: self.jitter.unwrap_or(d.jitter_ms),
            loss_percent: self.loss.unwrap_or(d.loss_percent),
            input_delay: usize::from(self.input_delay),
            leave: self.leave,
            rejoin: self.rejoin,
        }
    }
}

/// A kit error as a flag's value parser reports it (clap names the flag).
fn flag_error(e: duel::MatchError) -> String {
    match e {
        duel::MatchError::InvalidOptions(m) => m,
        other => other.to_string(),
    }
}

/// `--leave`'s value parser (the kit's [`duel::parse_leave`]).
fn parse_leave_arg(value: &str) -> Result<(usize, Frame), String> {
    duel::parse_leave(value).map_err(flag_error)
}

/// `--rejoin`'s value parser (the kit's [`duel::parse_rejoin`]).
fn parse_rejoin_arg(value: &str) -> Result<duel::RejoinPlan, String> {
    duel::parse_rejoin(value).map_err(flag_error)
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(index) = args.udp_child {
        return match udp_child(&args, index) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("duel peer {index}: {e}");
                ExitCode::from(2)
            }
        };
    }
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Plays the match, prints the report, writes the replay and the chart. `Ok(false)`: a check
/// failed (the report says which).
fn run(args: &Args) -> Result<bool, String> {
    let options = args.options();
    options.validate().map_err(|e| e.to_string())?;
    if let Some(p) = &args.replay {
        check_writable(p, "--replay")?;
    }
    if let Some(p) = &args.plot {
        if p.extension().and_then(|x| x.to_str()).map(str::to_ascii_lowercase).as_deref()
            != Some("svg")
        {
            return Err(format!(
                "--plot writes an SVG chart: give a file name ending in .svg, not {}",
                p.display()
            ));
        }
        check_writable(p, "--plot")?;
    }
    if args.udp && (args.latency.is_some() || args.jitter.is_some() || args.loss.is_some()) {
        return Err("--latency, --jitter and --loss shape the in-memory emulated network; \
                    they cannot be combined with --udp (which uses the real loopback network)"
            .into());
    }
    let start = Instant::now();
    let (report, replay) =
        if args.udp { udp_match(args, &options)? } else { emulated_match(args, &options)? };
    let elapsed = start.elapsed();
    println!("{report}");
    println!();
    let mut ok = report.is_ok();
    if let Some(path) = &args.replay {
        ok &= write_replay(path, &replay, &options)?;
    }
    if let Some(path) = &args.plot {
        write_plot(path, &replay, &options)?;
    }
    let left = match (options.leave, options.rejoin) {
        (Some((p, _)), Some(r)) => {
            format!(" (player {p} left, player {} left and came back)", r.player)
        }
        (Some((p, _)), None) => format!(" (player {p} left)"),
        (None, Some(r)) => format!(" (player {} left and came back)", r.player),
        (None, None) => String::new(),
    };
    println!(
        "Played {} frames on {} peers{left} in {:.2} s of wall time.",
        options.frames,
        options.peers,
        elapsed.as_secs_f64()
    );
    Ok(ok)
}

/// A progress line on stderr (hidden when stderr is not a terminal, or with --quiet).
fn progress(args: &Args, frames: u32) -> ProgressBar {
    if args.quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(u64::from(frames));
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {bar:32.cyan/blue} {pos:>7}/{len} frames confirmed  {msg}  [{elapsed}]",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// The whole match in this process, over the in-memory emulated network.
fn emulated_match(args: &Args, options: &MatchOptions) -> Result<(MatchReport, Replay), String> {
    let mut m = DuelMatch::new(*options).map_err(|e| e.to_string())?;
    let bar = progress(args, options.frames);
    let mut ticks = 0u64;
    while !m.is_finished() {
        m.tick().map_err(|e| e.to_string())?;
        ticks += 1;
        if ticks.is_multiple_of(16) {
            bar.set_position(u64::from(m.confirmed()));
            bar.set_message(format!("{} rollbacks", m.rollbacks()));
        }
    }
    bar.finish_and_clear();
    let outcome = m.finish().map_err(|e| e.to_string())?;
    Ok((outcome.report, outcome.replay))
}

/// Fails early, before playing, if `path` cannot be written.
fn check_writable(path: &Path, flag: &str) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("{flag} {} is a directory; give a file name", path.display()));
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("{flag}: cannot write {}: {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Writes the replay, reads it back and re-verifies it on a fresh world.
fn write_replay(path: &Path, replay: &Replay, options: &MatchOptions) -> Result<bool, String> {
    replay.write(path).map_err(|e| format!("--replay: cannot write {}: {e}", path.display()))?;
    let back = Replay::read(path).map_err(|e| format!("reading back {}: {e}", path.display()))?;
    let mut world = duel::try_new_world(options.seed, options.peers).map_err(|e| e.to_string())?;
    let v = back.verify(&mut world).map_err(|e| format!("verifying {}: {e}", path.display()))?;
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if v.is_ok() {
        println!(
            "Replay: wrote {} ({} KiB, {} frames, {} keyframes); read back and re-verified: all \
             {} checksums match",
            path.display(),
            bytes.div_ceil(1024),
            back.len(),
            back.keyframes.len(),
            v.frames
        );
    } else {
        println!(
            "Replay: wrote {}; re-verification FAILED: first divergence at frame {:?}",
            path.display(),
            v.first_divergence
        );
    }
    let p = path.display();
    println!("        verify it again:  cargo run --release --features cli -- replay verify {p}");
    println!(
        "        look inside it:   cargo run --release --features cli -- inspect {p} --frame {} \
         --entity 1",
        back.len() / 2
    );
    Ok(v.is_ok())
}

/// Re-simulates the replay and charts every fighter's Health (one panel) and Mana and Stamina
/// (a second panel), over a timeline of knock-outs, stuns and shields.
fn write_plot(path: &Path, replay: &Replay, options: &MatchOptions) -> Result<(), String> {
    let mut world = duel::try_new_world(options.seed, options.peers).map_err(|e| e.to_string())?;
    replay.start(&mut world).map_err(|e| e.to_string())?;
    let content = world.content().clone();
    let attr = |n: &str| content.attr(n).map_err(|e| e.to_string());
    // Panel 0 holds Health, panel 1 Mana and Stamina.
    let attrs = [(attr("Health")?, 0), (attr("Mana")?, 1), (attr("Stamina")?, 1)];
    let tag = |n: &str| content.tag(n).map_err(|e| e.to_string());
    let marked = [tag("GameplayCue.KO")?, tag("GameplayCue.Stun")?, tag("GameplayCue.Shield")?];
    let fighters: Vec<_> = (0..options.peers).filter_map(|p| world.player_owner(p)).collect();
    let mut series: Vec<plot::Series> = Vec::new();
    for p in 0..fighters.len() {
        for (a, _) in attrs {
            series.push(plot::Series::new(format!("P{p} {}", content.attr_name(a)), Some(p)));
        }
    }
    let mut cues = plot::Cues::default();
    let frames = replay.end_frame();
    for f in replay.frame_numbers() {
        world.step(&replay.frame_inputs::<Duel>(f));
        for (k, e) in fighters.iter().enumerate() {
            for (j, (a, _)) in attrs.iter().enumerate() {
                if let Some(v) = world.attr(*e, *a) {
                    series[k * attrs.len() + j].push(f, v.to_num::<f64>());
                }
            }
        }
        for cue in &world.output().cues {
            if !marked.contains(&cue.key.tag) {
                continue;
            }
            let Some(p) = fighters.iter().position(|e| *e == cue.key.target) else { continue };
            let name = content.tag_name(cue.key.tag);
            match cue.key.kind {
                CueKind::Executed => cues.burst(name, p, f),
                CueKind::Added => cues.start(name, p, f),
                CueKind::Removed => cues.end(name, p, f),
            }
        }
    }
    let mut chart = plot::Chart::new(
        format!("Duel, seed {}: Health, Mana and Stamina over {frames} frames", options.seed),
        frames,
    );
    chart.panels = vec![plot::Panel::default(), plot::Panel::default()];
    for (i, s) in series.into_iter().enumerate() {
        chart.panels[attrs[i % attrs.len()].1].series.push(s);
    }
    chart.rows = (0..fighters.len()).map(|p| format!("P{p}")).collect();
    let marks = cues.count();
    chart.cues = cues;
    let bytes = chart.write_svg(path)?;
    println!(
        "Chart: wrote {} ({} series, {marks} cues, {} KiB)",
        path.display(),
        chart.series_count(),
        bytes.div_ceil(1024)
    );
    Ok(())
}

// ============================================================================================
// --udp: one OS process per peer
// ============================================================================================

/// How long a --udp match may take before the children are stopped.
const UDP_TIMEOUT: Duration = Duration::from_secs(300);

/// Ticks without a frame advancing before a --udp peer declares a silent remote peer gone
/// ([`NetPeer::start`]'s `departure_ticks`). A tick that advances nothing sleeps 1 ms
/// ([`SKIPPED_TICK_SLEEP`]; `std::thread::sleep` never returns early) on top of the poll and
/// the advance, and the departure rule counts consecutive such ticks: 10 000 ticks × at least
/// 1 ms = at least 10 s of silence (about 10.5 s in practice) before a peer is declared gone.
/// Two seconds, as in the emulated match, would cut a live peer that a busy machine left
/// unscheduled for a moment.
const UDP_DEPARTURE_TICKS: u32 = 10_000;

/// How long a --udp peer sleeps after a tick that advanced no frame (no busy wait).
const SKIPPED_TICK_SLEEP: Duration = Duration::from_millis(1);

/// Re-executes this binary once per peer with the hidden child flags, shows their progress,
/// gathers their summaries (the leaver's too) and the first survivor's replay, and builds the
/// report.
fn udp_match(args: &Args, options: &MatchOptions) -> Result<(MatchReport, Replay), String> {
    let n = options.peers;
    // Free ports: bind, read the port, release (the children bind them a moment later).
    let mut ports = Vec::with_capacity(n);
    {
        let mut held = Vec::with_capacity(n);
        for _ in 0..n {
            let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
                .map_err(|e| format!("cannot find a free UDP port on 127.0.0.1: {e}"))?;
            ports.push(s.local_addr().map_err(|e| e.to_string())?.port());
            held.push(s);
        }
    }
    let dir = std::env::temp_dir().join(format!("rollback-abilities-duel-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create the work directory {}: {e}", dir.display()))?;
    let result = udp_children(args, options, &ports, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn udp_children(
    args: &Args,
    options: &MatchOptions,
    ports: &[u16],
    dir: &Path,
) -> Result<(MatchReport, Replay), String> {
    let n = options.peers;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let port_list: Vec<String> = ports.iter().map(u16::to_string).collect();
    let keys = match_identities(dir, n)?.join(",");
    let mut children: Vec<Child> = Vec::new();
    let (tx, rx) = mpsc::channel::<(usize, String)>();
    let mut stderr_threads = Vec::new();
    // Peer process `i`; `i == n`: the rejoiner's second program.
    let command = |i: usize| {
        let slot = if i == n { options.rejoiner().unwrap_or(0) } else { i };
        let mut c = Command::new(&exe);
        c.args(["--udp-child", &slot.to_string()])
            .args(["--udp-ports", &port_list.join(",")])
            .args(["--udp-keys", &keys])
            .args((i == n).then_some("--udp-comeback"))
            .arg("--udp-dir")
            .arg(dir)
            .args(["--peers", &n.to_string()])
            .args(["--frames", &options.frames.to_string()])
            .args(["--seed", &options.seed.to_string()])
            .args(["--input-delay", &options.input_delay.to_string()])
            .args(options.leave.map(|(p, f)| format!("--leave={p}@{f}")))
            .args(options.rejoin.map(|r| format!("--rejoin={r}")));
        c
    };
    let mut spawn = |i: usize, tx: &mpsc::Sender<(usize, String)>, children: &mut Vec<Child>| {
        let mut child = command(i)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start peer process {i}: {e}"))?;
        if let Some(out) = child.stdout.take() {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if tx.send((i, line)).is_err() {
                        break;
                    }
                }
            });
        }
        let err = child.stderr.take();
        stderr_threads.push(std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut e) = err {
                let _ = e.read_to_string(&mut s);
            }
            s
        }));
        children.push(child);
        Ok::<(), String>(())
    };
    for i in 0..n {
        if let Err(e) = spawn(i, &tx, &mut children) {
            stop(&mut children);
            return Err(e);
        }
    }
    // Until the rejoiner's second program starts, this sender keeps the channel open.
    let mut tx = options.rejoin.is_some().then_some(tx);
    // Lines of peer process i at i; the rejoiner's second program's at n.
    let mut lines: Vec<Vec<String>> = vec![Vec::new(); n + 1];
    let mut waiting = vec![false; n];
    let mut comeback = options.rejoiner();
    let bar = progress(args, options.frames);
    let mut progress_of = vec![0u64; n + 1];
    let start = Instant::now();
    let mut result = Ok(());
    loop {
        // The rejoiner's second program starts once its first has said everything (it left) and
        // every other peer waits for it at BACK.
        if let Some(r) = comeback
            && lines[r].last().is_some_and(|l| l == "end")
            && (0..n).all(|j| j == r || waiting[j] || options.leaver() == Some(j))
        {
            comeback = None;
            if let Some(tx) = tx.take()
                && let Err(e) = spawn(n, &tx, &mut children)
            {
                result = Err(e);
                break;
            }
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok((i, line)) => {
                if let Some(p) = line.strip_prefix("progress ") {
                    progress_of[i] = p.trim().parse().unwrap_or(progress_of[i]);
                    // A leaver's progress stops where it left: follow the others.
                    let shown = (0..n)
                        .filter(|j| options.leaver() != Some(*j) && options.rejoiner() != Some(*j))
                        .map(|j| progress_of[j])
                        .min();
                    bar.set_position(shown.unwrap_or(0));
                } else if line == "waiting" {
                    if let Some(w) = waiting.get_mut(i) {
                        *w = true;
                    }
                } else {
                    lines[i].push(line);
                }
            }
            // Every process that was to start has closed its output.
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        // A process that failed ends the match: the others may be waiting for it.
        let failed = children.iter_mut().enumerate().find_map(|(i, c)| match c.try_wait() {
            Ok(Some(status)) if !status.success() => Some((i, status)),
            _ => None,
        });
        if let Some((i, status)) = failed {
            stop(&mut children);
            bar.finish_and_clear();
            let errs = stderr_threads.into_iter().nth(i).and_then(|t| t.join().ok());
            let errs = errs.unwrap_or_default();
            return Err(format!("peer process {i} failed ({status}): {}", errs.trim()));
        }
        if start.elapsed() > UDP_TIMEOUT {
            result = Err(format!(
                "the UDP match did not finish within {} s; the peer processes were stopped",
                UDP_TIMEOUT.as_secs()
            ));
            break;
        }
    }
    bar.finish_and_clear();
    if let Err(e) = result {
        stop(&mut children);
        return Err(e);
    }
    let mut failures = Vec::new();
    for (i, (mut child, errs)) in children.into_iter().zip(stderr_threads).enumerate() {
        let status = child.wait().map_err(|e| format!("peer process {i}: {e}"))?;
        let errs = errs.join().unwrap_or_default();
        if !status.success() {
            failures.push(format!("peer process {i} failed ({status}): {}", errs.trim()));
        }
    }
    if !failures.is_empty() {
        return Err(failures.join("\n"));
    }
    let mut summaries = lines[..n]
        .iter()
        .enumerate()
        .map(|(i, l)| parse_summary(l).map_err(|e| format!("peer process {i}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    // A leaver exits after its summary says it left (expected, not a failure); the replay is
    // the first survivor's.
    for p in [options.leaver(), options.rejoiner()].into_iter().flatten() {
        if summaries.get(p).is_some_and(|s| s.left_after.is_none()) {
            return Err(format!("peer process {p} was to leave the match but did not say so"));
        }
    }
    if let Some(r) = options.rejoiner() {
        // The rejoiner's two programs make one peer of the report: its first stay, then its
        // second from F on.
        let mut then = parse_summary(&lines[n]).map_err(|e| format!("player {r}'s return: {e}"))?;
        let back = then.came_back.take().ok_or_else(|| format!("player {r} did not come back"))?;
        let first = core::mem::take(&mut summaries[r]);
        summaries[r] = first.and_then(then, back);
    }
    let r = options.replay_peer();
    let replay_path = dir.join(format!("peer{r}.replay"));
    let replay = Replay::read(&replay_path).map_err(|e| format!("peer {r}'s replay: {e}"))?;
    let report = MatchReport::build(*options, Transport::Udp, summaries, &replay)
        .map_err(|e| e.to_string())?;
    Ok((report, replay))
}

/// Stops the peer processes this program started.
fn stop(children: &mut [Child]) {
    for c in children.iter_mut() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The 32 bytes of 64 hex digits.
fn unhex32(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (k, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&text[2 * k..2 * k + 2], 16).ok()?;
    }
    Some(out)
}

/// Where slot `slot`'s match identity (its secret keys) is kept for the match: the work
/// directory, which only this user reads, so a restarted program of the slot reads it again.
fn key_path(dir: &Path, slot: usize) -> PathBuf {
    dir.join(format!("slot{slot}.key"))
}

/// Every slot's match identity for a --udp match: the secret keys written to each slot's key
/// file (readable by this user only), the public ones returned as the children's `--udp-keys`
/// value. The parent stands in for the match's handshake, in which each peer would announce
/// its public identity.
fn match_identities(dir: &Path, peers: usize) -> Result<Vec<String>, String> {
    let mut publics = Vec::with_capacity(peers);
    for slot in 0..peers {
        let id = Identity::generate().map_err(|e| e.to_string())?;
        let (agree, sign) = id.secrets();
        let path = key_path(dir, slot);
        let mut file = std::fs::OpenOptions::new();
        file.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o600);
        file.open(&path)
            .and_then(|mut f| writeln!(f, "{} {}", hex(&agree), hex(&sign)))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let public = id.public();
        publics.push(format!("{}:{}", hex(&public.agree), hex(&public.verify)));
    }
    Ok(publics)
}

/// Slot `slot`'s keys in a --udp child: its identity from its key file, every other slot's
/// public identity from `--udp-keys`, by address.
fn child_keys(
    dir: &Path,
    slot: usize,
    publics: &[String],
    addrs: &[SocketAddr],
) -> Result<MatchKeys<SocketAddr>, String> {
    let path = key_path(dir, slot);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let (agree, sign) = text
        .split_once(' ')
        .and_then(|(a, s)| Some((unhex32(a)?, unhex32(s)?)))
        .ok_or_else(|| format!("{} holds no identity", path.display()))?;
    let public = |text: &String| {
        let (agree, verify) = text.split_once(':')?;
        Some(PublicIdentity { agree: unhex32(agree)?, verify: unhex32(verify)? })
    };
    let mut remotes = Vec::with_capacity(addrs.len());
    for (j, addr) in addrs.iter().enumerate().filter(|(j, _)| *j != slot) {
        let id = publics.get(j).and_then(public).ok_or("malformed --udp-keys")?;
        remotes.push((*addr, id));
    }
    Ok(MatchKeys { local: Identity::from_secrets(agree, sign), remotes })
}

/// One peer of a --udp match: a [`NetPeer`] (a `MatchPeer` over a `UdpTransport` bound on
/// 127.0.0.1, taking GGRS datagrams from the other slots only; every session's datagrams
/// authenticated with the match's keys), the same bots, then the summary on stdout (and, for
/// the first peer in the match throughout, the replay in the work directory). The leaver
/// (`--leave`, or the rejoiner's first program) exits right after its frame, without lingering,
/// and reports that it left; a member of a `--rejoin` match says `waiting` once it waits for
/// the rejoiner at BACK. With `--udp-comeback` this is the rejoiner's second program: it binds a
/// new port and asks to come back into its slot.
fn udp_child(args: &Args, index: usize) -> Result<(), String> {
    let options = args.options();
    let n = options.peers;
    if args.udp_ports.len() != n || index >= n {
        return Err(format!("needs {n} ports and an index below {n}"));
    }
    let dir = args.udp_dir.clone().ok_or("needs --udp-dir")?;
    let addrs: Vec<SocketAddr> =
        args.udp_ports.iter().map(|port| SocketAddr::from((Ipv4Addr::LOCALHOST, *port))).collect();
    let keys = child_keys(&dir, index, &args.udp_keys, &addrs)?;
    let others: Vec<SocketAddr> =
        addrs.iter().enumerate().filter(|(j, _)| *j != index).map(|(_, a)| *a).collect();
    // A restarted program rarely gets its old port back: the comeback binds a new one.
    let local =
        if args.udp_comeback { SocketAddr::from((Ipv4Addr::LOCALHOST, 0)) } else { addrs[index] };
    let transport = UdpTransport::bind(local, others)
        .map_err(|e| format!("cannot bind UDP port {local}: {e}"))?;
    let mut peer = if args.udp_comeback {
        NetPeer::rejoin(options, index, transport, addrs, keys, UDP_DEPARTURE_TICKS)
    } else {
        NetPeer::start(options, index, transport, addrs, keys, UDP_DEPARTURE_TICKS)
    }
    .map_err(|e| e.to_string())?;

    let start = Instant::now();
    let mut out = std::io::stdout().lock();
    let mut reported = 0;
    let mut said_waiting = false;
    while !peer.is_finished() {
        let batch = peer.tick().map_err(|e| e.to_string())?;
        if peer.should_leave() {
            // Gone at once, as a closed program: no lingering, the socket closes on exit.
            peer.quit().map_err(|e| e.to_string())?;
            break;
        }
        if peer.has_waited() && !said_waiting {
            said_waiting = true;
            let _ = writeln!(out, "waiting");
            let _ = out.flush();
        }
        if batch.skipped {
            std::thread::sleep(SKIPPED_TICK_SLEEP);
        }
        let confirmed = peer.confirmed();
        if confirmed >= reported + 30 {
            reported = confirmed;
            let _ = writeln!(out, "progress {confirmed}");
            let _ = out.flush();
        }
        if start.elapsed() > UDP_TIMEOUT {
            return Err(format!("stalled at {confirmed} confirmed frames"));
        }
    }
    if !peer.has_left() {
        // Keep answering for a moment so the other peers receive every input they still need.
        let linger = Instant::now();
        while linger.elapsed() < Duration::from_millis(500) {
            let _ = peer.tick();
            std::thread::sleep(SKIPPED_TICK_SLEEP);
        }
    }
    // The summary reads the recorder's checksums: take it before the replay moves the recorder.
    let summary = peer.summary();
    if index == options.replay_peer() {
        let path = dir.join(format!("peer{index}.replay"));
        peer.take_replay().write(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    write_summary(&mut out, &summary).map_err(|e| e.to_string())?;
    Ok(())
}

/// The child → parent summary: one `key value…` line per part.
fn write_summary(out: &mut impl Write, s: &PeerSummary) -> std::io::Result<()> {
    let st = &s.stats;
    writeln!(out, "player {}", s.player)?;
    writeln!(
        out,
        "stats {} {} {} {} {} {} {}",
        st.frames,
        st.rollbacks,
        st.resimulated,
        st.max_rollback,
        st.rollback_depth_sum,
        st.skipped,
        st.desyncs
    )?;
    let c = &s.cues;
    writeln!(
        out,
        "cues {} {} {} {} {} {} {} {} {}",
        c.played,
        c.deduplicated,
        c.cancelled,
        c.confirmed,
        c.bursts_confirmed,
        c.pending,
        c.on_active,
        c.removed,
        c.mispredicted
    )?;
    for (tag, (b, p)) in &c.by_tag {
        writeln!(out, "tag {tag} {b} {p}")?;
    }
    for key in &s.confirmed_cues {
        let key = ron::to_string(key).map_err(std::io::Error::other)?;
        writeln!(out, "cue {key}")?;
    }
    writeln!(out, "late {}", s.bot_late)?;
    writeln!(out, "checksums {}", hex_list(&s.checksums))?;
    if let Some(f) = s.left_after {
        writeln!(out, "left {f}")?;
    }
    for (players, last) in &s.departures {
        let players: Vec<String> = players.iter().map(usize::to_string).collect();
        let last = last.map_or_else(|| "-".to_string(), |f| f.to_string());
        writeln!(out, "departed {} {last}", players.join(","))?;
    }
    for (players, frame) in &s.rejoins {
        let players: Vec<String> = players.iter().map(usize::to_string).collect();
        writeln!(out, "rejoined {} {frame}", players.join(","))?;
    }
    if let Some(c) = &s.came_back {
        writeln!(out, "back {} {}", c.frame, c.state_bytes)?;
        writeln!(out, "backsums {}", hex_list(&c.checksums))?;
    }
    writeln!(out, "end")?;
    out.flush()
}

/// Checksums as comma-separated hex.
fn hex_list(sums: &[u64]) -> String {
    let sums: Vec<String> = sums.iter().map(|c| format!("{c:x}")).collect();
    sums.join(",")
}

/// [`hex_list`]'s checksums.
fn parse_hex_list(text: &str) -> Result<Vec<u64>, &'static str> {
    text.split(',')
        .filter(|x| !x.is_empty())
        .map(|x| u64::from_str_radix(x.trim(), 16).map_err(|_| "malformed checksum"))
        .collect()
}

/// A comma-separated list of players.
fn parse_players(text: &str, what: &'static str) -> Result<Vec<usize>, &'static str> {
    text.split(',').map(|p| p.parse::<usize>().map_err(|_| what)).collect()
}

/// Parses [`write_summary`]'s lines.
fn parse_summary(lines: &[String]) -> Result<PeerSummary, String> {
    fn nums(rest: &str, n: usize, what: &str) -> Result<Vec<u64>, String> {
        let v: Vec<u64> = rest.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if v.len() == n { Ok(v) } else { Err(format!("malformed {what} line: {rest:?}")) }
    }
    let mut s = PeerSummary::default();
    let mut by_tag = BTreeMap::new();
    let mut complete = false;
    for line in lines {
        let (key, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        match key {
            "player" => s.player = rest.trim().parse().map_err(|_| "malformed player line")?,
            "stats" => {
                let v = nums(rest, 7, "stats")?;
                s.stats = RunnerStats {
                    frames: v[0],
                    rollbacks: v[1],
                    resimulated: v[2],
                    max_rollback: v[3] as u32,
                    rollback_depth_sum: v[4],
                    skipped: v[5],
                    desyncs: v[6],
                };
            }
            "cues" => {
                let v = nums(rest, 9, "cues")?;
                let c = &mut s.cues;
                (c.played, c.deduplicated, c.cancelled, c.confirmed) = (v[0], v[1], v[2], v[3]);
                (c.bursts_confirmed, c.pending, c.on_active) = (v[4], v[5], v[6]);
                (c.removed, c.mispredicted) = (v[7], v[8]);
            }
            "tag" => {
                let (name, counts) = rest.split_once(' ').ok_or("malformed tag line")?;
                let v = nums(counts, 2, "tag")?;
                by_tag.insert(name.to_string(), (v[0], v[1]));
            }
            "cue" => s.confirmed_cues.push(
                ron::from_str(rest).map_err(|e| format!("malformed cue line {rest:?}: {e}"))?,
            ),
            "late" => s.bot_late = rest.trim().parse().map_err(|_| "malformed late line")?,
            "checksums" => s.checksums = parse_hex_list(rest)?,
            "left" => {
                s.left_after = Some(rest.trim().parse().map_err(|_| "malformed left line")?);
            }
            "departed" => {
                let (players, last) = rest.split_once(' ').ok_or("malformed departed line")?;
                let players = parse_players(players, "malformed departed line")?;
                let last = match last.trim() {
                    "-" => None,
                    f => Some(f.parse::<Frame>().map_err(|_| "malformed departed line")?),
                };
                s.departures.push((players, last));
            }
            "rejoined" => {
                let (players, frame) = rest.split_once(' ').ok_or("malformed rejoined line")?;
                let players = parse_players(players, "malformed rejoined line")?;
                let frame = frame.trim().parse().map_err(|_| "malformed rejoined line")?;
                s.rejoins.push((players, frame));
            }
            "back" => {
                let v = nums(rest, 2, "back")?;
                let c = s.came_back.get_or_insert_with(Comeback::default);
                (c.frame, c.state_bytes) = (v[0] as Frame, v[1] as usize);
            }
            "backsums" => {
                s.came_back.get_or_insert_with(Comeback::default).checksums = parse_hex_list(rest)?;
            }
            "end" => complete = true,
            _ => {}
        }
    }
    if !complete {
        return Err("its summary is incomplete".into());
    }
    s.cues.by_tag = by_tag;
    Ok(s)
}
