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
//! confirmed checksums from F on are the others'. Emulated mode only: the rejoin protocol runs
//! inside the in-process `LocalMatch`, and `--udp --rejoin` is refused.
//!
//! In `--udp` mode every peer binds a UDP socket on 127.0.0.1 only (GGRS's own
//! `UdpNonBlockingSocket` binds every interface, 0.0.0.0) and ignores datagrams from any address
//! but the other peers'; the crate's `GuardedSocket` validates every message before GGRS reads
//! it.
//!
//! The game itself is the kit's module `rollback_abilities_kit::duel` (examples/kit; its
//! documentation names the duel's content and functions, matches and departures) and the chart
//! is the kit's `plot`, shared with the command-line tool; this file is the command line around
//! them.

use clap::{CommandFactory, Parser};
use indicatif::{ProgressBar, ProgressStyle};
use rollback_abilities::CueKind;
use rollback_abilities::num::Frame;
use rollback_abilities::replay::Replay;
use rollback_abilities::session::{RunnerStats, message_from_bytes, message_to_bytes};
use rollback_abilities_kit::duel::{
    self, Duel, DuelMatch, DuelPeer, MatchOptions, MatchReport, PeerSummary, Transport,
};
use rollback_abilities_kit::plot;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
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
        cargo run --release --example duel -- --peers 3 --rejoin 1@600:1200"
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
    /// 0.0.0.0), ignores datagrams from anyone but the other peers and validates every message
    /// (GuardedSocket) before GGRS reads it. --latency, --jitter and --loss do not apply.
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
    /// everyone plays on. Its fighter stands idle while it is away; it does not forfeit.
    /// Emulated mode only (not with --udp).
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
    /// (internal) Where a --udp child writes its replay.
    #[arg(long, hide = true)]
    udp_dir: Option<PathBuf>,
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
    // Options the chosen mode cannot play (`--udp --rejoin`) are a usage error, as clap's own.
    let transport = if args.udp { Transport::Udp } else { Transport::Emulated };
    if let Err(e @ duel::MatchError::Unsupported(_)) = args.options().validate_for(transport) {
        Args::command().error(clap::error::ErrorKind::ArgumentConflict, e).exit();
    }
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
/// ([`DuelPeer::set_departure_ticks`]). A tick that advances nothing sleeps 1 ms
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
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let port_list: Vec<String> = ports.iter().map(u16::to_string).collect();
    let mut children: Vec<Child> = Vec::new();
    let (tx, rx) = mpsc::channel::<(usize, String)>();
    let mut stderr_threads = Vec::new();
    for i in 0..options.peers {
        let spawned = Command::new(&exe)
            .args(["--udp-child", &i.to_string()])
            .args(["--udp-ports", &port_list.join(",")])
            .arg("--udp-dir")
            .arg(dir)
            .args(["--peers", &options.peers.to_string()])
            .args(["--frames", &options.frames.to_string()])
            .args(["--seed", &options.seed.to_string()])
            .args(["--input-delay", &options.input_delay.to_string()])
            .args(options.leave.map(|(p, f)| format!("--leave={p}@{f}")))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                stop(&mut children);
                return Err(format!("cannot start peer process {i}: {e}"));
            }
        };
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
    }
    drop(tx);

    let bar = progress(args, options.frames);
    let mut progress_of = vec![0u64; options.peers];
    let mut lines: Vec<Vec<String>> = vec![Vec::new(); options.peers];
    let start = Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok((i, line)) => {
                if let Some(p) = line.strip_prefix("progress ") {
                    progress_of[i] = p.trim().parse().unwrap_or(progress_of[i]);
                    // The leaver's progress stops where it left: follow the others.
                    let shown = progress_of
                        .iter()
                        .enumerate()
                        .filter(|(j, _)| options.leaver() != Some(*j))
                        .map(|(_, p)| *p)
                        .min();
                    bar.set_position(shown.unwrap_or(0));
                } else {
                    lines[i].push(line);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if start.elapsed() > UDP_TIMEOUT {
            stop(&mut children);
            bar.finish_and_clear();
            return Err(format!(
                "the UDP match did not finish within {} s; the peer processes were stopped",
                UDP_TIMEOUT.as_secs()
            ));
        }
    }
    bar.finish_and_clear();
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
    let summaries = lines
        .iter()
        .enumerate()
        .map(|(i, l)| parse_summary(l).map_err(|e| format!("peer process {i}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    // A leaver exits after its summary says it left (expected, not a failure); the replay is
    // the first survivor's.
    if let Some(leaver) = options.leaver()
        && summaries.get(leaver).is_some_and(|s| s.left_after.is_none())
    {
        return Err(format!("peer process {leaver} was to leave the match but did not say so"));
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

/// A GGRS socket over UDP on the loopback interface only: bound to 127.0.0.1 (GGRS's
/// `UdpNonBlockingSocket::bind_to_port` binds 0.0.0.0, every interface), non-blocking, in GGRS's
/// own wire encoding (bincode 1: `message_to_bytes` / `message_from_bytes`), taking datagrams
/// from the match's peers only.
struct LoopbackSocket {
    socket: UdpSocket,
    peers: Vec<SocketAddr>,
    buffer: Vec<u8>,
}

impl LoopbackSocket {
    /// The most datagrams one receive call takes (the rest wait for the next call).
    const MAX_PER_POLL: usize = 4096;

    fn bind(port: u16, peers: Vec<SocketAddr>) -> std::io::Result<LoopbackSocket> {
        let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, port))?;
        socket.set_nonblocking(true)?;
        // The largest UDP payload: a longer datagram would be cut to the buffer.
        Ok(LoopbackSocket { socket, peers, buffer: vec![0; 65_536] })
    }
}

impl ggrs::NonBlockingSocket<SocketAddr> for LoopbackSocket {
    fn send_to(&mut self, msg: &ggrs::Message, addr: &SocketAddr) {
        // A datagram that cannot be sent is a lost packet: GGRS resends.
        let _ = self.socket.send_to(&message_to_bytes(msg), addr);
    }

    fn receive_all_messages(&mut self) -> Vec<(SocketAddr, ggrs::Message)> {
        let mut received = Vec::new();
        for _ in 0..Self::MAX_PER_POLL {
            match self.socket.recv_from(&mut self.buffer) {
                Ok((n, from)) => {
                    if !self.peers.contains(&from) {
                        continue;
                    }
                    if let Some(m) = self.buffer.get(..n).and_then(message_from_bytes) {
                        received.push((from, m));
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                // Linux reports an ICMP "port unreachable" (a peer that left closed its socket)
                // on the next receive: not a datagram, keep reading.
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
        received
    }
}

/// One peer of a --udp match, started with `DuelPeer::start_session`: GGRS (GGRS's wall-clock
/// disconnect timeout off) over a [`GuardedSocket`](rollback_abilities::session::GuardedSocket) in front of a
/// [`LoopbackSocket`], the same bots, then the summary on stdout
/// (and, for the first peer that stays, the replay in the work directory). The leaver
/// (`--leave`) exits right after its frame, without lingering, and reports that it left.
fn udp_child(args: &Args, index: usize) -> Result<(), String> {
    let options = args.options();
    let n = options.peers;
    if args.udp_ports.len() != n || index >= n {
        return Err(format!("needs {n} ports and an index below {n}"));
    }
    let dir = args.udp_dir.clone().ok_or("needs --udp-dir")?;
    let addr = |port: u16| SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let remotes: Vec<SocketAddr> =
        (0..n).filter(|j| *j != index).map(|j| addr(args.udp_ports[j])).collect();
    let socket = LoopbackSocket::bind(args.udp_ports[index], remotes)
        .map_err(|e| format!("cannot bind UDP port 127.0.0.1:{}: {e}", args.udp_ports[index]))?;
    let mut peer = DuelPeer::new(options, index).map_err(|e| e.to_string())?;
    peer.set_departure_ticks(UDP_DEPARTURE_TICKS);
    // The socket goes behind the crate's guard, GGRS is built with the duel's settings and the
    // guard is attached to the peer's runner, in one call.
    let players = args.udp_ports.iter().enumerate().map(|(j, port)| {
        let kind = if j == index {
            ggrs::PlayerType::Local
        } else {
            ggrs::PlayerType::Remote(addr(*port))
        };
        (j, kind)
    });
    let mut session = peer.start_session(socket, players).map_err(|e| e.to_string())?;

    let start = Instant::now();
    while session.current_state() != ggrs::SessionState::Running {
        session.poll_remote_clients();
        std::thread::sleep(Duration::from_millis(2));
        if start.elapsed() > Duration::from_secs(30) {
            return Err("could not synchronise with the other peers within 30 s".into());
        }
    }
    let mut out = std::io::stdout().lock();
    let mut reported = 0;
    while !peer.is_finished() {
        session.poll_remote_clients();
        let batch = peer.advance(&mut session).map_err(|e| e.to_string())?;
        if peer.should_leave() {
            // Gone at once, as a closed program: no lingering, the socket closes on exit.
            peer.quit(&mut session).map_err(|e| e.to_string())?;
            break;
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
            session.poll_remote_clients();
            let _ = peer.advance(&mut session);
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
    let sums: Vec<String> = s.checksums.iter().map(|c| format!("{c:x}")).collect();
    writeln!(out, "checksums {}", sums.join(","))?;
    if let Some(f) = s.left_after {
        writeln!(out, "left {f}")?;
    }
    for (players, last) in &s.departures {
        let players: Vec<String> = players.iter().map(usize::to_string).collect();
        let last = last.map_or_else(|| "-".to_string(), |f| f.to_string());
        writeln!(out, "departed {} {last}", players.join(","))?;
    }
    writeln!(out, "end")?;
    out.flush()
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
            "checksums" => {
                s.checksums = rest
                    .split(',')
                    .filter(|x| !x.is_empty())
                    .map(|x| u64::from_str_radix(x, 16).map_err(|_| "malformed checksum"))
                    .collect::<Result<_, _>>()?;
            }
            "left" => {
                s.left_after = Some(rest.trim().parse().map_err(|_| "malformed left line")?);
            }
            "departed" => {
                let (players, last) = rest.split_once(' ').ok_or("malformed departed line")?;
                let players = players
                    .split(',')
                    .map(|p| p.parse::<usize>().map_err(|_| "malformed departed line"))
                    .collect::<Result<Vec<_>, _>>()?;
                let last = match last.trim() {
                    "-" => None,
                    f => Some(f.parse::<Frame>().map_err(|_| "malformed departed line")?),
                };
                s.departures.push((players, last));
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
