//! Real WebRTC between two processes (feature `matchbox`), confined to network namespaces the
//! test creates: namespace A holds the signaling server (bound to A's veth address only) and
//! peer 0, namespace B holds peer 1, and a veth pair joins them. Neither namespace has a route
//! anywhere else, so no packet can leave this machine (webrtc-rs gathers candidates on every
//! interface and sends mDNS multicast, which is why the peers never run in the machine's own
//! namespace). The namespaces are always deleted afterwards, also on failure.
//!
//! The children are this test binary itself, re-executed inside a namespace with
//! `RBA_MATCHBOX_CHILD` selecting the role (`serve`, or `peer`) of [`child_role`].
//!
//! It needs root, the `ip` binary (iproute2) and working `ip netns`, so it is `#[ignore]`d:
//! `cargo test --all-features` lists it as ignored, never as passed, and `.ci/run` runs it with
//! `cargo test --all-features --test integration matchbox:: -- --ignored --skip
//! matchbox::child_role`. Run that way on a machine that lacks one of them, it fails and names
//! what is missing.

use crate::cues::{ARENA, SprintHitGame, arena};
use crate::rejoin::{Comeback, bot as rejoin_bot, comeback_world};
use crate::sessions::{arena_n, bot};
use ggrs::{DesyncDetection, SessionBuilder};
use ggrs::{Message, NonBlockingSocket};
use rollback_abilities::random::Stream;
use rollback_abilities::session::matchbox::{ConnectingMatch, MatchboxTransport};
use rollback_abilities::session::matchbox::{GgrsChannel, MAX_GGRS_PACKET};
use rollback_abilities::session::{
    GuardConfig, Handshake, MatchPeer, MatchboxConfig, MatchboxOptions, MatchboxSession, PeerId,
    RejoinTicket, Roster, Runner, SessionConfig, SessionEvent,
};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Selects a child's role: `serve` or `peer`.
const ROLE: &str = "RBA_MATCHBOX_CHILD";
/// The signaling server's address (serve) or the room URL (peer).
const ARG: &str = "RBA_MATCHBOX_ARG";
/// Set on a peer whose content differs (to provoke a handshake mismatch).
const ALTERED: &str = "RBA_MATCHBOX_ALTERED";
/// Set on a peer started for three players instead of two (a player-count mismatch).
const THREE: &str = "RBA_MATCHBOX_THREE";
/// Where the leaving player of the rejoin match keeps its ticket (roles `leaver`, `comeback`).
const TICKET: &str = "RBA_MATCHBOX_TICKET";
/// The frame the leaving player of the rejoin match confirms before its program stops.
const LEAVE: u32 = 240;
/// Frames every peer of the rejoin match confirms after the frame the player came back at.
const AFTER: u32 = 240;
/// The bots' seed in the rejoin match.
const SEED: u64 = 7;
/// Where a peer of the intruded match notes that it is in the match (role `steady`).
const MARK: &str = "RBA_MATCHBOX_MARK";
/// Frames the peers of the intruded match confirm.
const STEADY_FRAMES: u32 = 900;
/// Ticks (at 60 Hz) the intruder sends for.
const INTRUDER_TICKS: u32 = 480;

/// How a peer differs from the others.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Not at all.
    Same,
    /// Its content ([`ALTERED`]).
    Altered,
    /// It expects three players ([`THREE`]).
    Three,
}
/// Frames a peer plays.
const FRAMES: u32 = 300;
/// How long the test waits for the peers of one match.
const PEER_DEADLINE: Duration = Duration::from_secs(120);
/// Namespace and interface names start with this (then the test's pid, then `a`/`b`).
const PREFIX: &str = "rbamb";
const ADDR_A: &str = "10.77.0.1";
const ADDR_B: &str = "10.77.0.2";
const PORT: u16 = 3536;

/// Fails the test, naming what this machine lacks: a test that did not run never passes.
fn cannot_run(reason: &str) -> ! {
    panic!("the matchbox netns test cannot run on this machine: {reason}");
}

/// Runs `ip` with arguments; the error carries its stderr.
fn ip(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// Deletes namespaces left behind by earlier runs that were killed before their guard ran
/// (their test process is gone).
fn delete_stale_namespaces() {
    let Ok(list) = ip(&["netns", "list"]) else { return };
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(pid) = name.strip_prefix(PREFIX).and_then(|r| r.strip_suffix(['a', 'b'])) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "delete", name]);
        }
    }
}

/// The two namespaces and every child started in them. Dropping it kills and reaps the
/// children, then deletes the veth pair and the namespaces.
struct Netns {
    a: String,
    b: String,
    created: Vec<String>,
    children: Vec<Child>,
}

impl Netns {
    /// Creates namespaces A and B joined by a veth pair (10.77.0.1/24 in A, 10.77.0.2/24 in
    /// B), loopback up in each, and a multicast route on the veth (webrtc-rs's mDNS socket
    /// needs one; it stays on the pair).
    fn create() -> Result<Netns, String> {
        let pid = std::process::id();
        let mut ns = Netns {
            a: format!("{PREFIX}{pid}a"),
            b: format!("{PREFIX}{pid}b"),
            created: Vec::new(),
            children: Vec::new(),
        };
        for name in [ns.a.clone(), ns.b.clone()] {
            ip(&["netns", "add", &name])?;
            ns.created.push(name);
        }
        let (a, b) = (ns.a.clone(), ns.b.clone());
        // The veth ends are created directly inside the namespaces (never in ours).
        ip(&["link", "add", &a, "netns", &a, "type", "veth", "peer", "name", &b, "netns", &b])?;
        for (name, addr) in [(&a, ADDR_A), (&b, ADDR_B)] {
            ip(&["-n", name, "addr", "add", &format!("{addr}/24"), "dev", name])?;
            ip(&["-n", name, "link", "set", "lo", "up"])?;
            ip(&["-n", name, "link", "set", name, "up"])?;
            ip(&["-n", name, "route", "add", "224.0.0.0/4", "dev", name])?;
        }
        Ok(ns)
    }

    /// Starts this test binary in a namespace with a child role.
    fn spawn(&mut self, ns: &str, role: &str, arg: &str, kind: Kind) -> usize {
        self.spawn_with(ns, role, arg, kind, &[])
    }

    /// [`Netns::spawn`] with more environment variables.
    fn spawn_with(
        &mut self,
        ns: &str,
        role: &str,
        arg: &str,
        kind: Kind,
        env: &[(&str, &str)],
    ) -> usize {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns])
            .arg(exe)
            .args(["matchbox::child_role", "--exact", "--ignored", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(ROLE, role)
            .env(ARG, arg)
            .env_remove(ALTERED)
            .env_remove(THREE)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match kind {
            Kind::Same => {}
            Kind::Altered => {
                cmd.env(ALTERED, "1");
            }
            Kind::Three => {
                cmd.env(THREE, "1");
            }
        }
        let child = cmd.spawn().expect("spawn `ip netns exec`");
        self.children.push(child);
        self.children.len() - 1
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        if self.created.len() == 2 {
            let _ = ip(&["-n", &self.a, "link", "delete", &self.a]);
        }
        for name in &self.created {
            if let Err(e) = ip(&["netns", "delete", name]) {
                eprintln!("could not delete network namespace {name}: {e}");
            }
        }
    }
}

/// Reads a child's whole stream on a thread.
fn collect(stream: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut r) = stream {
            let _ = r.read_to_string(&mut s);
        }
        s
    })
}

/// What a finished peer said.
struct Outcome {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn line(&self, prefix: &str) -> Option<&str> {
        // libtest may print "test … ... " in front of the child's first line.
        self.stdout.lines().find_map(|l| l.find(prefix).map(|i| l[i + prefix.len()..].trim()))
    }
}

/// Starts two peers (the second 500 ms after the first: matchbox can miss two peers that join
/// at the same instant) and waits, up to [`PEER_DEADLINE`], for both to exit.
fn run_pair(ns: &mut Netns, room: &str, kinds: [Kind; 2]) -> Result<[Outcome; 2], String> {
    let url = format!("ws://{ADDR_A}:{PORT}/{room}");
    let (a, b) = (ns.a.clone(), ns.b.clone());
    let first = ns.spawn(&a, "peer", &url, kinds[0]);
    std::thread::sleep(Duration::from_millis(500));
    let second = ns.spawn(&b, "peer", &url, kinds[1]);
    let [x, y]: [Outcome; 2] =
        wait_for(ns, room, &[first, second])?.try_into().map_err(|_| "two outcomes")?;
    Ok([x, y])
}

/// Waits, up to [`PEER_DEADLINE`], for the children `which` to exit; their outcomes in that
/// order.
fn wait_for(ns: &mut Netns, room: &str, which: &[usize]) -> Result<Vec<Outcome>, String> {
    let mut readers = Vec::new();
    for &i in which {
        let c = &mut ns.children[i];
        readers.push((collect(c.stdout.take()), collect(c.stderr.take())));
    }
    let start = Instant::now();
    let mut statuses: Vec<Option<ExitStatus>> = vec![None; which.len()];
    while statuses.iter().any(Option::is_none) {
        for (k, &i) in which.iter().enumerate() {
            if statuses[k].is_none() {
                statuses[k] = ns.children[i].try_wait().map_err(|e| e.to_string())?;
            }
        }
        if start.elapsed() > PEER_DEADLINE {
            for &i in which {
                let _ = ns.children[i].kill();
            }
            let logs: Vec<String> = readers
                .into_iter()
                .enumerate()
                .map(|(k, (o, e))| {
                    let (o, e) = (o.join().unwrap_or_default(), e.join().unwrap_or_default());
                    format!("--- peer {k}\n{o}{e}")
                })
                .collect();
            return Err(format!(
                "room {room}: the peers did not finish within {} s\n{}",
                PEER_DEADLINE.as_secs(),
                logs.join("\n")
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("room {room}: the peers exited after {:.1} s", start.elapsed().as_secs_f64());
    Ok(readers
        .into_iter()
        .zip(statuses)
        .map(|((o, e), status)| Outcome {
            status: status.expect("exited"),
            stdout: o.join().unwrap_or_default(),
            stderr: e.join().unwrap_or_default(),
        })
        .collect())
}

/// Two processes in two namespaces play 300 frames of the SprintHitGame over WebRTC (no STUN, input
/// delay 0, so there are rollbacks): both exit 0 with the same confirmed checksum and opposite
/// player handles. Then two peers whose content differs refuse to start, and two peers started
/// for different numbers of players each name both counts.
#[test]
#[ignore = "needs root and iproute2 (ip netns): cargo test --all-features --test integration matchbox:: -- --ignored --skip matchbox::child_role"]
fn two_processes_over_webrtc_in_network_namespaces() {
    match effective_uid() {
        Some(0) => {}
        Some(uid) => cannot_run(&format!("not root (uid {uid}); `ip netns` needs root")),
        None => cannot_run("cannot read the uid from /proc/self/status"),
    }
    if let Err(e) = ip(&["-V"]) {
        cannot_run(&format!("no usable `ip` binary (install iproute2): {e}"));
    }
    delete_stale_namespaces();
    let mut ns = match Netns::create() {
        Ok(ns) => ns,
        Err(e) => cannot_run(&e),
    };
    let started = Instant::now();

    // The signaling server, bound to A's veth address only.
    let a = ns.a.clone();
    let server = ns.spawn(&a, "serve", &format!("{ADDR_A}:{PORT}"), Kind::Same);
    let stdout = ns.children[server].stdout.take();
    let server_err = collect(ns.children[server].stderr.take());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        if let Some(out) = stdout {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains("signaling server listening on") => break,
            Ok(_) => {}
            Err(_) => {
                let _ = ns.children[server].kill();
                panic!(
                    "the signaling server did not start within 30 s:\n{}",
                    server_err.join().unwrap_or_default()
                );
            }
        }
    }

    // A match: same checksum on both peers.
    let [p, q] =
        run_pair(&mut ns, "arena", [Kind::Same, Kind::Same]).unwrap_or_else(|e| panic!("{e}"));
    let show = |o: &Outcome| format!("{}\n{}\n{}", o.status, o.stdout, o.stderr);
    assert!(p.status.success(), "peer 0 failed: {}", show(&p));
    assert!(q.status.success(), "peer 1 failed: {}", show(&q));
    let prefix = format!("checksum frame {FRAMES}:");
    let (sp, sq) = (p.line(&prefix), q.line(&prefix));
    assert!(sp.is_some() && sq.is_some(), "no checksum line:\n{}\n{}", show(&p), show(&q));
    assert_eq!(sp, sq, "the peers' confirmed checksums differ:\n{}\n{}", show(&p), show(&q));
    let handles: BTreeSet<_> =
        [p.line("peer handle:"), q.line("peer handle:")].into_iter().collect();
    assert_eq!(handles, BTreeSet::from([Some("0"), Some("1")]), "{}\n{}", show(&p), show(&q));
    println!(
        "matchbox netns: checksum frame {FRAMES}: {} on both peers ({}; {})",
        sp.unwrap_or_default(),
        p.line("peer stats:").unwrap_or_default(),
        q.line("peer stats:").unwrap_or_default()
    );

    // A handshake mismatch: neither peer starts.
    let [p, q] = run_pair(&mut ns, "mismatch", [Kind::Same, Kind::Altered])
        .unwrap_or_else(|e| panic!("{e}"));
    for o in [&p, &q] {
        assert!(!o.status.success(), "a mismatched peer must not play: {}", show(o));
        assert!(o.line(&prefix).is_none(), "{}", show(o));
    }
    for o in [&p, &q] {
        let why = o.stderr.lines().find(|l| l.contains("refusing to start"));
        assert!(
            why.is_some_and(|l| l.contains("content hash differs")),
            "each peer names the mismatch:\n{}\n{}",
            show(&p),
            show(&q)
        );
        println!("matchbox netns: mismatched peer: {}", why.unwrap_or_default().trim());
    }

    // Different player counts: the two-player peer's room is complete, the three-player peer's
    // never is, and each says so instead of timing out.
    let [p, q] =
        run_pair(&mut ns, "players", [Kind::Same, Kind::Three]).unwrap_or_else(|e| panic!("{e}"));
    for (o, ours, theirs) in [(&p, 2, 3), (&q, 3, 2)] {
        assert!(!o.status.success(), "a mismatched peer must not play: {}", show(o));
        let want = format!("this peer expects {ours} players, ");
        let why = o.stderr.lines().find(|l| l.contains(&want));
        assert!(
            why.is_some_and(|l| l.contains(&format!(" expects {theirs};"))),
            "each peer names both counts:\n{}\n{}",
            show(&p),
            show(&q)
        );
        println!("matchbox netns: player-count mismatch: {}", why.unwrap_or_default().trim());
    }

    rejoin_over_webrtc(&mut ns);
    intruder_over_webrtc(&mut ns);
    println!("matchbox netns: done in {:.1} s", started.elapsed().as_secs_f64());
    drop(ns);
}

/// A player's program stops and a new one comes back into its slot over WebRTC: two
/// `MatchPeer`s over `MatchboxTransport`s (the member in A, the leaver in B) play the
/// `Comeback` game, whose systems branch on the input status. The leaver keeps its ticket in
/// a file and its program exits after confirming frame [`LEAVE`]; the member plays on alone
/// once it has agreed the player is gone. A new program in B, with a new peer id, comes back
/// with the ticket; both then confirm [`AFTER`] frames past the frame it came back at, with
/// the same checksums, and report the same frame.
fn rejoin_over_webrtc(ns: &mut Netns) {
    let url = format!("ws://{ADDR_A}:{PORT}/rejoin");
    let ticket = std::env::temp_dir().join(format!("rba-matchbox-ticket-{}", std::process::id()));
    let _ = std::fs::remove_file(&ticket);
    let path = ticket.to_string_lossy().into_owned();
    let (a, b) = (ns.a.clone(), ns.b.clone());
    let member = ns.spawn(&a, "member", &url, Kind::Same);
    std::thread::sleep(Duration::from_millis(500));
    let leaver = ns.spawn_with(&b, "leaver", &url, Kind::Same, &[(TICKET, &path)]);
    let show = |o: &Outcome| format!("{}\n{}\n{}", o.status, o.stdout, o.stderr);
    let left = wait_for(ns, "rejoin", &[leaver]).unwrap_or_else(|e| panic!("{e}"));
    assert!(left[0].status.success(), "the leaving player failed: {}", show(&left[0]));
    assert!(ticket.exists(), "the leaving player kept no ticket: {}", show(&left[0]));
    let comeback = ns.spawn_with(&b, "comeback", &url, Kind::Same, &[(TICKET, &path)]);
    let outcomes = wait_for(ns, "rejoin", &[member, comeback]).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_file(&ticket);
    let [m, c] = [&outcomes[0], &outcomes[1]];
    assert!(m.status.success(), "the member failed: {}\n{}", show(m), show(c));
    assert!(c.status.success(), "the returning player failed: {}\n{}", show(c), show(m));
    let (fm, fc) = (m.line("rejoined at:"), c.line("rejoined at:"));
    assert!(fm.is_some() && fm == fc, "rejoin frames differ:\n{}\n{}", show(m), show(c));
    let (sm, sc) = (m.line("checksum after rejoin:"), c.line("checksum after rejoin:"));
    assert!(sm.is_some() && sm == sc, "checksums differ:\n{}\n{}", show(m), show(c));
    let (gm, gc) = (m.line("peer id:"), left[0].line("peer id:"));
    let returned = c.line("peer id:");
    assert!(gc.is_some() && returned.is_some() && gc != returned, "{}\n{}", show(c), show(m));
    assert!(gm.is_some());
    println!(
        "matchbox netns: player back at frame {} from a new peer id; checksum {} on both \
         ({} after {} frames)",
        fm.unwrap_or_default(),
        sm.unwrap_or_default(),
        m.line("waited:").unwrap_or_default(),
        LEAVE,
    );
}

/// A stranger joins the room of a running two-player match over WebRTC (namespace B, where
/// one of the players is) and, for [`INTRUDER_TICKS`] ticks, sends both players what a
/// hostile program would: random bytes of every length on both channels, packets shaped as
/// GGRS messages and as rejoin messages (Joins for both slots with the match's own content
/// and snapshot size, which the judge answers with a challenge, claims signed with a key of
/// its own, undecodable rejoin messages, bursts over the per-tick limit) and oversized
/// packets. The players play [`STEADY_FRAMES`] frames of the `Comeback` game throughout: no
/// one leaves, no desync, the same confirmed checksum on both, and the stranger's bytes
/// arrived (the players counted them).
fn intruder_over_webrtc(ns: &mut Netns) {
    let url = format!("ws://{ADDR_A}:{PORT}/intruded");
    let marks: Vec<std::path::PathBuf> = (0..2)
        .map(|i| std::env::temp_dir().join(format!("rba-matchbox-mark-{}-{i}", std::process::id())))
        .collect();
    for m in &marks {
        let _ = std::fs::remove_file(m);
    }
    let paths: Vec<String> = marks.iter().map(|m| m.to_string_lossy().into_owned()).collect();
    let (a, b) = (ns.a.clone(), ns.b.clone());
    let p = ns.spawn_with(&a, "steady", &url, Kind::Same, &[(MARK, &paths[0])]);
    let q = ns.spawn_with(&b, "steady", &url, Kind::Same, &[(MARK, &paths[1])]);
    // The stranger comes once both players are in the match (a room that is not full yet
    // would take it for a player).
    let deadline = Instant::now() + PEER_DEADLINE;
    while !marks.iter().all(|m| m.exists()) {
        assert!(Instant::now() < deadline, "the players of the intruded match never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let intruder = ns.spawn(&b, "intruder", &url, Kind::Same);
    let outcomes = wait_for(ns, "intruded", &[p, q, intruder]).unwrap_or_else(|e| panic!("{e}"));
    for m in &marks {
        let _ = std::fs::remove_file(m);
    }
    let show = |o: &Outcome| format!("{}\n{}\n{}", o.status, o.stdout, o.stderr);
    let all = || outcomes.iter().map(show).collect::<Vec<_>>().join("\n----\n");
    for o in &outcomes {
        assert!(o.status.success(), "a process of the intruded match failed:\n{}", all());
    }
    let (sp, sq) = (outcomes[0].line("steady checksum:"), outcomes[1].line("steady checksum:"));
    assert!(sp.is_some() && sp == sq, "checksums differ:\n{}", all());
    let sent: u64 = outcomes[2].line("intruder sent:").and_then(|s| s.parse().ok()).unwrap_or(0);
    let heard: u64 = outcomes[..2]
        .iter()
        .filter_map(|o| o.line("stranger packets:").and_then(|s| s.parse::<u64>().ok()))
        .sum();
    assert!(sent > 0 && heard > 0, "the stranger's packets never arrived:\n{}", all());
    println!(
        "matchbox netns: a stranger sent {sent} packets into a running match; the players \
         counted {heard} of them and agree on {} ({}; {})",
        sp.unwrap_or_default(),
        outcomes[0].line("steady faults:").unwrap_or_default(),
        outcomes[1].line("steady faults:").unwrap_or_default(),
    );
}

/// The stranger of [`intruder_over_webrtc`]: connects to the room, waits for the two players'
/// channels, sends for [`INTRUDER_TICKS`] ticks, and prints how many packets it sent.
fn intrude(room: &str) {
    use rollback_abilities::session::Identity;
    use rollback_abilities::session::rejoin::{Claim, RejoinMsg};
    let (mut socket, future) = rollback_abilities::session::matchbox::socket_builder(room).build();
    let _message_loop = rollback_abilities::session::matchbox::spawn_message_loop(future)
        .unwrap_or_else(|e| panic!("{e}"));
    let start = Instant::now();
    let players: Vec<PeerId> = loop {
        assert!(start.elapsed() < Duration::from_secs(60), "the players never connected");
        let _ = socket.try_update_peers();
        let peers: Vec<PeerId> = socket.connected_peers().collect();
        if peers.len() == 2 {
            break peers;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!("intruder: connected to both players in {:.2} s", start.elapsed().as_secs_f64());
    let world = comeback_world(2);
    let content_hash = world.content().hash();
    let hooks_hash = twox_hash::XxHash3_64::oneshot(world.hooks_signature().as_bytes());
    let snapshot_len = world.snapshot_bytes() as u32;
    let key = Identity::from_secrets([9; 32], [10; 32]);
    let mut rng = Stream::derive(0x1A7_2D3E, &[]);
    let side = |bytes: Vec<u8>| -> Vec<u8> { [vec![b'R'], bytes].concat() };
    let mut sent = 0u64;
    let tick = Duration::from_micros(16_667);
    for t in 0..INTRUDER_TICKS {
        let _ = socket.try_update_peers();
        // What came back (the judge's challenges) is answered with a claim of its own key.
        let mut challenges = Vec::new();
        if let Ok(c) = socket.get_channel_mut(0) {
            for (from, packet) in c.receive() {
                if let Some((b'R', rest)) = packet.split_first()
                    && let Ok(RejoinMsg::Challenge { slot, nonce }) = RejoinMsg::decode(rest)
                {
                    challenges.push((from, slot, nonce));
                }
            }
        }
        let mut packets: Vec<(usize, PeerId, Vec<u8>)> = Vec::new();
        for (from, slot, nonce) in challenges {
            let claim = Claim { slot, nonce, content_hash, hooks_hash, snapshot_len };
            let msg = RejoinMsg::Claim { slot, nonce, proof: claim.prove(&key) };
            packets.push((0, from, side(msg.encode())));
        }
        for &to in &players {
            let junk = |n: usize, rng: &mut Stream| -> Vec<u8> {
                (0..n).map(|_| rng.next_u32() as u8).collect()
            };
            let n = 1 + rng.next_u32() as usize % 1400;
            packets.push((0, to, junk(n, &mut rng)));
            packets.push((1, to, junk(n, &mut rng)));
            // A GGRS message of session 0 from a stranger, and a rejoin message that does not
            // decode.
            let mut ggrs = vec![b'G', 0, 0, 0, 0];
            ggrs.extend(junk(n.min(200), &mut rng));
            packets.push((0, to, ggrs));
            let mut bad = b"RRBJ3".to_vec();
            bad.extend(junk(n.min(300), &mut rng));
            packets.push((0, to, bad));
            for slot in 0..2 {
                let join = RejoinMsg::Join { slot, content_hash, hooks_hash, snapshot_len };
                packets.push((0, to, side(join.encode())));
            }
            if t % 60 == 0 {
                // Over the per-tick limit, and oversized.
                let join = RejoinMsg::Join { slot: 0, content_hash, hooks_hash, snapshot_len };
                for _ in 0..100 {
                    packets.push((0, to, side(join.encode())));
                }
                packets.push((0, to, junk(60_000, &mut rng)));
                packets.push((1, to, junk(60_000, &mut rng)));
            }
        }
        for (channel, to, bytes) in packets {
            if let Ok(c) = socket.get_channel_mut(channel)
                && c.try_send(bytes.into(), to).is_ok()
            {
                sent += 1;
            }
        }
        std::thread::sleep(tick);
    }
    println!("intruder sent: {sent}");
    let _ = std::io::stdout().flush();
}

/// The role of a re-executed child (see the module docs); does nothing in a normal run.
#[test]
#[ignore = "a child process of two_processes_over_webrtc_in_network_namespaces"]
fn child_role() {
    let Ok(role) = std::env::var(ROLE) else { return };
    let arg = std::env::var(ARG).expect("RBA_MATCHBOX_ARG");
    match role.as_str() {
        "serve" => serve(&arg),
        "peer" => play(&arg),
        "member" => play_match(&arg, Role::Member),
        "leaver" => play_match(&arg, Role::Leaver),
        "comeback" => play_match(&arg, Role::Comeback),
        "steady" => play_match(&arg, Role::Steady),
        "intruder" => intrude(&arg),
        other => panic!("unknown child role {other}"),
    }
}

/// The in-process signaling server (full mesh; the room is the URL path). It stops by itself
/// after 180 s in case the test could not kill it.
fn serve(addr: &str) {
    let addr: std::net::SocketAddr = addr.parse().expect("a socket address");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async move {
        let mut server = matchbox_signaling::SignalingServer::full_mesh_builder(addr).build();
        let bound = server.bind().expect("bind the signaling server");
        println!("signaling server listening on {bound}");
        let _ = std::io::stdout().flush();
        let _ = tokio::time::timeout(Duration::from_secs(180), server.serve()).await;
    });
}

/// One peer: plays [`FRAMES`] frames of the SprintHitGame with bot inputs, then agrees with the other
/// peer on the reliable channel that both have confirmed every frame, and prints its handle,
/// stats and the confirmed checksum.
fn play(room: &str) {
    const DONE: &[u8] = b"RBADONE";
    let players = if std::env::var_os(THREE).is_some() { 3 } else { 2 };
    let world = if std::env::var_os(ALTERED).is_some() {
        arena(&ARENA.replace("coef: -3", "coef: -4")).0
    } else {
        arena_n(players).0
    };
    let handshake = Handshake::of(&world);
    let mut options = MatchboxOptions::new(room, players);
    options.peers_timeout = Duration::from_secs(60);
    options.session.input_delay = 0;
    let start = Instant::now();
    let mut m = MatchboxSession::<SprintHitGame>::connect(&options, &handshake)
        .unwrap_or_else(|e| panic!("{e}"));
    let handle = m.local_handle();
    eprintln!("connected as player {handle} in {:.2} s", start.elapsed().as_secs_f64());
    println!("peer handle: {handle}");
    let remotes: BTreeSet<_> = m.roster.remotes().collect();
    let mut runner = m.runner(world);
    runner.record(0);
    let tick = Duration::from_micros(16_667);
    let mut next = Instant::now();
    let (mut sent_done, mut done_from, mut all_done_at) = (false, BTreeSet::new(), None);
    while all_done_at.is_none_or(|t: Instant| t.elapsed() < Duration::from_millis(500)) {
        assert!(start.elapsed() < Duration::from_secs(90), "the match did not finish in 90 s");
        let f = runner.world().next_frame();
        let input = if f < FRAMES { bot(handle, f) } else { 0 };
        runner.advance_p2p(&mut m.session, &[(handle, input)], None, |_| {}).unwrap();
        for ev in runner.drain_events() {
            match ev {
                SessionEvent::WaitRecommendation(n) => next += tick * n,
                SessionEvent::Disconnected(who) if !sent_done => panic!("{who} disconnected"),
                SessionEvent::Desync(frame) => panic!("desync at frame {frame}"),
                _ => {}
            }
        }
        let confirmed = runner.recorder().map_or(0, |r| r.replay().frames.len());
        if confirmed >= FRAMES as usize && !sent_done {
            m.broadcast_reliable(DONE).unwrap();
            sent_done = true;
        }
        for (from, bytes) in m.receive_reliable().unwrap() {
            if bytes == DONE && remotes.contains(&from) {
                done_from.insert(from);
            }
        }
        if sent_done && done_from.len() == remotes.len() && all_done_at.is_none() {
            all_done_at = Some(Instant::now());
        }
        next += tick;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else if now - next > tick * 10 {
            next = now;
        }
    }
    let s = runner.stats();
    assert_eq!(s.desyncs, 0);
    let replay = runner.recorder().unwrap().replay();
    let sum = replay.frames[FRAMES as usize - 1].checksum;
    println!(
        "peer stats: {} rollbacks, max depth {}, resimulated {}",
        s.rollbacks, s.max_rollback, s.resimulated
    );
    println!("checksum frame {FRAMES}: {sum:016x}");
    let _ = std::io::stdout().flush();
}

/// A peer of the rejoin match.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    /// Plays the whole match.
    Member,
    /// Keeps its ticket and stops after confirming [`LEAVE`].
    Leaver,
    /// Comes back with the leaver's ticket.
    Comeback,
    /// Plays [`STEADY_FRAMES`] frames while a stranger in the room sends it anything it likes.
    Steady,
}

/// One peer of the rejoin match (see [`rejoin_over_webrtc`]): a `MatchPeer` over a
/// `MatchboxTransport`, ticked at 60 Hz with the bots' inputs.
fn play_match(room: &str, role: Role) {
    const DONE: &[u8] = b"RBADONE";
    let setup = SessionConfig {
        departure_ticks: 60,
        guard: Some(GuardConfig::new(2, 8).with_paced(true)),
        ..SessionConfig::default()
    };
    let mut options = MatchboxOptions::new(room, 2);
    options.peers_timeout = Duration::from_secs(60);
    options.session = setup;
    let start = Instant::now();
    let ticket_path = std::env::var(TICKET).ok();
    let mut peer: MatchPeer<Comeback, MatchboxTransport> = if role == Role::Comeback {
        let path = ticket_path.as_deref().expect("the ticket's path");
        let text = std::fs::read_to_string(path).expect("the kept ticket");
        let ticket: RejoinTicket<PeerId> = ron::from_str(&text).expect("a ticket");
        ConnectingMatch::rejoin(&options, comeback_world(2), ticket, Duration::ZERO)
            .and_then(|c| c.finish(start))
            .unwrap_or_else(|e| panic!("{e}"))
    } else {
        ConnectingMatch::connect(&options, comeback_world(2)).unwrap_or_else(|e| panic!("{e}"))
    };
    let handle = peer.handle;
    eprintln!("{role:?}: slot {handle} in {:.2} s", start.elapsed().as_secs_f64());
    println!("peer id: {}", peer.transport().local_id());
    peer.runner.record(0);
    if let Ok(mark) = std::env::var(MARK) {
        std::fs::write(mark, b"in").expect("the mark");
    }
    let mut faults = BTreeMap::<String, u32>::new();
    let mut end = (role == Role::Steady).then_some(STEADY_FRAMES);
    let tick = Duration::from_micros(16_667);
    let mut next = Instant::now();
    let (mut sent_done, mut done_from, mut all_done_at) = (false, false, None);
    let (mut left_at, mut seen) = (None, 0);
    while all_done_at.is_none_or(|t: Instant| t.elapsed() < Duration::from_millis(500)) {
        assert!(start.elapsed() < Duration::from_secs(100), "not finished in 100 s ({role:?})");
        peer.tick(|frame, _| rejoin_bot(SEED, handle, frame), None, |_| {})
            .unwrap_or_else(|e| panic!("{role:?}: {e}"));
        for ev in peer.new_events(&mut seen) {
            if !matches!(ev, SessionEvent::WaitRecommendation(_) | SessionEvent::RejoinFault { .. })
            {
                eprintln!("{role:?}: {ev:?}");
            }
            match ev {
                SessionEvent::Desync(frame) => panic!("desync at frame {frame}"),
                // A program back from a new peer id before the members saw it go is let in
                // at once (its proven claim takes the slot out): no refusal of any kind.
                SessionEvent::RejoinFault { fault, .. } if role == Role::Steady => {
                    let kind = format!("{fault:?}");
                    let kind = kind.split([' ', '(', '{']).next().unwrap_or_default().to_owned();
                    *faults.entry(kind).or_default() += 1;
                }
                SessionEvent::RejoinFault { peer, fault } => panic!("{peer:?}: {fault}"),
                SessionEvent::Left { .. } | SessionEvent::Leaving { .. }
                    if role == Role::Steady =>
                {
                    panic!("{role:?}: {ev:?}")
                }
                SessionEvent::Left { .. } => left_at = Some(Instant::now()),
                SessionEvent::Rejoined { frame, .. } => {
                    println!("rejoined at: {frame}");
                    if let Some(t) = left_at {
                        println!("waited: {:.1} s alone", t.elapsed().as_secs_f64());
                    }
                    end = Some(frame + AFTER);
                }
                _ => {}
            }
        }
        let confirmed = peer.confirmed_frame().unwrap_or(0);
        if role == Role::Leaver && confirmed >= LEAVE {
            let ticket = ron::to_string(&peer.ticket()).expect("a ticket serialises");
            let path = ticket_path.as_deref().expect("the ticket's path");
            std::fs::write(path, ticket).expect("keep the ticket");
            peer.transport().clone().close();
            println!("left after frame {confirmed}");
            let _ = std::io::stdout().flush();
            return;
        }
        // The state before frame `end` is final once the frame before it is confirmed, and
        // there once the frame is saved.
        if let Some(end) = end
            && confirmed >= end
            && !sent_done
            && let Some(sum) = peer.runner.confirmed_checksums().get(&end)
        {
            if role == Role::Steady {
                println!("steady checksum: {sum:016x}");
            } else {
                println!("checksum after rejoin: {sum:016x}");
            }
            let _ = std::io::stdout().flush();
            let others: Vec<PeerId> = peer.transport().connected_peers().into_iter().collect();
            let mut t = peer.transport().clone();
            for p in others {
                t.send_reliable(p, DONE);
            }
            sent_done = true;
        }
        let mut t = peer.transport().clone();
        if t.receive_reliable().iter().any(|(_, b)| b == DONE) {
            done_from = true;
        }
        if sent_done && done_from && all_done_at.is_none() {
            all_done_at = Some(Instant::now());
        }
        next += tick;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else if now - next > tick * 10 {
            next = now;
        }
    }
    assert_eq!(peer.runner.stats().desyncs, 0);
    if role == Role::Steady {
        let stats = peer.transport().stats();
        println!("stranger packets: {}", stats.strangers + stats.foreign + stats.malformed);
        println!("steady faults: {faults:?}, transport {stats:?}");
        let _ = std::io::stdout().flush();
    }
}

fn peer_id(uuid: &str) -> PeerId {
    ron::from_str(&format!("(\"{uuid}\")")).expect("a peer id")
}

/// Packets in flight to one peer: (sender, bytes).
type Queue = Arc<Mutex<Vec<(PeerId, Vec<u8>)>>>;

/// A GGRS socket between two in-process sessions that passes every packet through
/// [`GgrsChannel`]'s codec, keeping a copy of the bytes.
struct CodecLink {
    me: PeerId,
    inbox: Queue,
    outbox: Queue,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl NonBlockingSocket<PeerId> for CodecLink {
    fn send_to(&mut self, msg: &Message, _to: &PeerId) {
        let bytes = GgrsChannel::encode(msg).expect("encodes");
        assert_eq!(GgrsChannel::decode(&bytes).as_ref(), Some(msg), "round trip");
        self.seen.lock().unwrap().push(bytes.clone());
        self.outbox.lock().unwrap().push((self.me, bytes));
    }

    fn receive_all_messages(&mut self) -> Vec<(PeerId, Message)> {
        let packets = std::mem::take(&mut *self.inbox.lock().unwrap());
        packets
            .into_iter()
            .filter_map(|(from, b)| GgrsChannel::decode(&b).map(|m| (from, m)))
            .collect()
    }
}

/// Players are ordered by peer id, whoever lists them; every real GGRS packet of a short match
/// round-trips through the codec, and truncated, bit-flipped or random packets are rejected
/// without a panic.
#[test]
fn roster_order_and_ggrs_codec() {
    let a = peer_id("17e55044-10b1-426f-9247-bb680e5fe0c8");
    let b = peer_id("97e55044-10b1-426f-9247-bb680e5fe0c8");
    let ra = Roster::new(a, [b]);
    let rb = Roster::new(b, [a, b]);
    assert_eq!(ra.peers(), rb.peers());
    assert_eq!((ra.local_handle(), rb.local_handle()), (0, 1));
    assert_eq!(rb.remotes().collect::<Vec<_>>(), vec![a]);
    assert_eq!(ra.player_types()[1].1, ggrs::PlayerType::Remote(b));

    let q: [Queue; 2] = Default::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut peers = Vec::new();
    for (i, roster) in [ra, rb].into_iter().enumerate() {
        let mut builder = SessionBuilder::<MatchboxConfig<SprintHitGame>>::new()
            .with_num_players(2)
            .unwrap()
            .with_desync_detection_mode(DesyncDetection::On { interval: 10 });
        for (h, kind) in roster.player_types() {
            builder = builder.add_player(kind, h).unwrap();
        }
        let link = CodecLink {
            me: roster.local(),
            inbox: q[i].clone(),
            outbox: q[1 - i].clone(),
            seen: seen.clone(),
        };
        let session = builder.start_p2p_session(link).unwrap();
        peers.push((Runner::new(arena_n(2).0, 8, 10), session, roster.local_handle()));
    }
    for _ in 0..2000 {
        for (_, s, _) in peers.iter_mut() {
            s.poll_remote_clients();
        }
        if peers.iter().all(|(_, s, _)| s.current_state() == ggrs::SessionState::Running) {
            break;
        }
    }
    for _ in 0..120 {
        for (runner, session, h) in peers.iter_mut() {
            let f = runner.world().next_frame();
            runner.advance_p2p(session, &[(*h, bot(*h, f))], None, |_| {}).unwrap();
        }
    }
    assert!(peers.iter().all(|(r, _, _)| r.world().next_frame() > 100));
    assert!(peers.iter().all(|(r, _, _)| r.stats().desyncs == 0));

    let packets = seen.lock().unwrap().clone();
    assert!(packets.len() > 200, "{} packets", packets.len());
    assert_eq!(GgrsChannel::decode(&[]), None);
    assert_eq!(GgrsChannel::decode(&vec![0u8; MAX_GGRS_PACKET + 1]), None);
    let mut s = Stream::derive(3, &[]);
    for p in packets.iter().step_by(7) {
        for cut in 0..p.len() {
            let _ = GgrsChannel::decode(&p[..cut]);
        }
        let mut g = p.clone();
        let at = s.below(g.len() as u32) as usize;
        g[at] ^= 1 << s.below(8);
        let _ = GgrsChannel::decode(&g);
        let mut longer = p.clone();
        longer.push(0);
        assert_eq!(GgrsChannel::decode(&longer), None, "trailing bytes are rejected");
    }
    for _ in 0..2000 {
        let n = s.below(64) as usize;
        let junk: Vec<u8> = (0..n).map(|_| s.next_u32() as u8).collect();
        let _ = GgrsChannel::decode(&junk);
    }
    // A huge claimed length is refused before allocating.
    let _ = GgrsChannel::decode(&[0xAB, 0xCD, 2, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
}
