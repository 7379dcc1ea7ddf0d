//! The duel demo: bots fight a best-of-rounds duel over GGRS rollback netcode, one peer per
//! fighter, and the run ends with a report — rollbacks, checksum agreement across peers, the
//! re-verified replay, cue reconciliation counters, what happened, and who won.
//!
//! ```text
//! cargo run --release --example duel
//! cargo run --release --example duel -- --peers 4 --latency 80 --jitter 30 --loss 10
//! cargo run --release --example duel -- --replay duel.replay --plot duel.svg
//! cargo run --release --example duel -- --udp            # one OS process per peer, UDP on 127.0.0.1
//! ```
//!
//! The game itself is the library module `rollback_abilities::duel` (its documentation has the
//! move list and frame data); this file is the command line around it.

#[path = "../src/bin/rollback-abilities/plot.rs"]
mod plot;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use rollback_abilities::cue::CueKind;
use rollback_abilities::duel::{
    self, Duel, DuelMatch, DuelPeer, MatchOptions, MatchReport, PeerSummary, Transport,
};
use rollback_abilities::replay::Replay;
use rollback_abilities::session::{GgrsConfig, RunnerStats};
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
        cargo run --release --example duel -- --udp"
)]
struct Args {
    /// Fighters, one GGRS peer each.
    #[arg(long, default_value_t = 2, value_name = "N",
          value_parser = clap::value_parser!(u8).range(2..=4))]
    peers: u8,
    /// Frames to play (60 frames = one second of game time).
    #[arg(long, default_value_t = 3600, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    frames: u32,
    /// Seed of the world's random streams, the bots and the emulated network.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Emulated one-way latency in milliseconds [default: 40].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(0..=1000))]
    latency: Option<u32>,
    /// Emulated extra random latency per packet, 0 to MS milliseconds [default: 12].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(0..=1000))]
    jitter: Option<u32>,
    /// Emulated packet loss in percent [default: 5].
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u32).range(0..=90))]
    loss: Option<u32>,
    /// GGRS input delay in frames.
    #[arg(long, default_value_t = 2, value_name = "FRAMES",
          value_parser = clap::value_parser!(u8).range(0..=15))]
    input_delay: u8,
    /// Run each peer as its own OS process talking UDP on 127.0.0.1 (GGRS's
    /// UdpNonBlockingSocket) instead of the in-memory emulated network. --latency, --jitter and
    /// --loss do not apply.
    #[arg(long)]
    udp: bool,
    /// Write peer 0's replay of the match to FILE, then read it back and re-verify it.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// Write an SVG chart of every fighter's Health, Mana and Stamina over frames, with cue
    /// markers (knock-outs, stuns, shields), to FILE.svg.
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
        }
    }
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
    println!(
        "Played {} frames on {} peers in {:.2} s of wall time.",
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
    println!(
        "        inspect it with: cargo run --release --features cli --bin rollback-abilities -- \
         replay verify {}",
        path.display()
    );
    Ok(v.is_ok())
}

/// Re-simulates the replay and charts every fighter's Health, Mana and Stamina, with markers
/// for knock-outs, stuns and shields (persistent cues starting and KO bursts).
fn write_plot(path: &Path, replay: &Replay, options: &MatchOptions) -> Result<(), String> {
    let mut world = duel::try_new_world(options.seed, options.peers).map_err(|e| e.to_string())?;
    replay.start(&mut world).map_err(|e| e.to_string())?;
    let content = world.content().clone();
    let attr = |n: &str| content.attr(n).map_err(|e| e.to_string());
    let attrs = [attr("Health")?, attr("Mana")?, attr("Stamina")?];
    let tag = |n: &str| content.tag(n).map_err(|e| e.to_string());
    let marked = [
        (tag("GameplayCue.KO")?, "KO"),
        (tag("GameplayCue.Stun")?, "stun"),
        (tag("GameplayCue.Shield")?, "shield"),
    ];
    let fighters: Vec<_> = (0..options.peers).filter_map(|p| world.player_owner(p)).collect();
    let mut series: Vec<plot::Series> = Vec::new();
    for p in 0..fighters.len() {
        for a in attrs {
            let label = format!("P{p} {}", content.attr_name(a));
            series.push(plot::Series { label, points: Vec::new() });
        }
    }
    let mut markers = Vec::new();
    let frames = replay.len() as u32;
    for f in 0..frames {
        world.step(&replay.inputs::<Duel>(f));
        if f % 2 == 0 || f + 1 == frames {
            for (k, e) in fighters.iter().enumerate() {
                for (j, a) in attrs.iter().enumerate() {
                    if let Some(v) = world.attr(*e, *a) {
                        series[k * attrs.len() + j].points.push((f, v.to_num::<f64>()));
                    }
                }
            }
        }
        for cue in &world.output().cues {
            let shown = match cue.key.tag {
                t if t == marked[0].0 => cue.key.kind == CueKind::Executed,
                _ => cue.key.kind == CueKind::Added,
            };
            let Some((_, name)) = marked.iter().find(|(t, _)| *t == cue.key.tag) else { continue };
            let Some(p) = fighters.iter().position(|e| *e == cue.key.target) else { continue };
            if shown {
                markers.push(plot::Marker { frame: f, label: format!("{name} P{p}") });
            }
        }
    }
    let title =
        format!("Duel, seed {}: Health, Mana and Stamina over {} frames", options.seed, frames);
    plot::write_svg(path, &title, &series, &markers)?;
    println!(
        "Chart: wrote {} ({} series, {} markers)",
        path.display(),
        series.len(),
        markers.len()
    );
    Ok(())
}

// ============================================================================================
// --udp: one OS process per peer
// ============================================================================================

/// How long a --udp match may take before the children are stopped.
const UDP_TIMEOUT: Duration = Duration::from_secs(300);

/// Re-executes this binary once per peer with the hidden child flags, shows their progress,
/// gathers their summaries and peer 0's replay, and builds the report.
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
                    bar.set_position(progress_of.iter().copied().min().unwrap_or(0));
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
    let replay_path = dir.join("peer0.replay");
    let replay = Replay::read(&replay_path).map_err(|e| format!("peer 0's replay: {e}"))?;
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

/// One peer of a --udp match: GGRS over `UdpNonBlockingSocket`, the same bots, then the
/// summary on stdout (and, for peer 0, the replay in the work directory).
fn udp_child(args: &Args, index: usize) -> Result<(), String> {
    let options = args.options();
    let n = options.peers;
    if args.udp_ports.len() != n || index >= n {
        return Err(format!("needs {n} ports and an index below {n}"));
    }
    let dir = args.udp_dir.clone().ok_or("needs --udp-dir")?;
    let socket = ggrs::UdpNonBlockingSocket::bind_to_port(args.udp_ports[index])
        .map_err(|e| format!("cannot bind UDP port {}: {e}", args.udp_ports[index]))?;
    let mut builder = ggrs::SessionBuilder::<GgrsConfig<Duel, SocketAddr>>::new()
        .with_num_players(n)
        .map_err(|e| e.to_string())?
        .with_max_prediction_window(8)
        .with_input_delay(options.input_delay)
        .with_desync_detection_mode(ggrs::DesyncDetection::On { interval: 10 });
    for (j, port) in args.udp_ports.iter().enumerate() {
        let player = if j == index {
            ggrs::PlayerType::Local
        } else {
            ggrs::PlayerType::Remote(SocketAddr::from((Ipv4Addr::LOCALHOST, *port)))
        };
        builder = builder.add_player(player, j).map_err(|e| e.to_string())?;
    }
    let mut session = builder.start_p2p_session(socket).map_err(|e| e.to_string())?;
    let mut peer = DuelPeer::new(options, index).map_err(|e| e.to_string())?;

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
        if batch.skipped {
            std::thread::sleep(Duration::from_micros(500));
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
    // Keep answering for a moment so the other peers receive every input they still need.
    let linger = Instant::now();
    while linger.elapsed() < Duration::from_millis(500) {
        session.poll_remote_clients();
        let _ = peer.advance(&mut session);
        std::thread::sleep(Duration::from_millis(1));
    }
    // The summary reads the recorder's checksums: take it before the replay moves the recorder.
    let summary = peer.summary();
    if index == 0 {
        let path = dir.join("peer0.replay");
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
    let sums: Vec<String> = s.checksums.iter().map(|c| format!("{c:x}")).collect();
    writeln!(out, "checksums {}", sums.join(","))?;
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
            "checksums" => {
                s.checksums = rest
                    .split(',')
                    .filter(|x| !x.is_empty())
                    .map(|x| u64::from_str_radix(x, 16).map_err(|_| "malformed checksum"))
                    .collect::<Result<_, _>>()?;
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
