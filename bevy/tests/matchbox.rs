//! Two Bevy apps over real WebRTC (`MatchSpec::matchbox`, feature `matchbox`), each in its own
//! process, confined to network namespaces the test creates: namespace A holds the signaling
//! server (bound to A's veth address only) and the first app, namespace B the second, and a veth
//! pair joins them. Neither namespace has a route anywhere else, so no packet can leave this
//! machine (webrtc-rs gathers candidates on every interface and sends mDNS multicast, which is
//! why the apps never run in the machine's own namespace). The namespaces are deleted
//! afterwards, also on failure.
//!
//! The children are this test binary itself, re-executed inside a namespace with
//! `RBA_BEVY_MATCHBOX_CHILD` selecting the role (`serve` or `peer`) of [`child_role`].
//!
//! It needs root, the `ip` binary (iproute2) and working `ip netns`, so it is `#[ignore]`d:
//! `cargo test -p bevy_rollback_abilities --features matchbox` lists it as ignored, never as
//! passed, and `.ci/run` runs it with `cargo test -p bevy_rollback_abilities --features matchbox
//! matchbox:: -- --ignored --skip matchbox::child_role`. Run that way on a machine that lacks one
//! of them, it fails and names what is missing.

use crate::common::{TICK, app, confirmed_checksums, seen, state};
use crate::network::bare_checksums;
use bevy::app::App;
use bevy_rollback_abilities::{AbilitiesMatch, MatchSpec, NetSettings};
use rollback_abilities_kit::duel::Duel;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Selects a child's role: `serve` or `peer`.
const ROLE: &str = "RBA_BEVY_MATCHBOX_CHILD";
/// The signaling server's address (serve) or the room URL (peer).
const ARG: &str = "RBA_BEVY_MATCHBOX_ARG";
/// Frames both apps confirm.
const FRAMES: u32 = 300;
/// How long the test waits for the two apps.
const PEER_DEADLINE: Duration = Duration::from_secs(120);
/// Namespace and interface names start with this (then the test's pid, then `a`/`b`).
const PREFIX: &str = "rbabv";
const ADDR_A: &str = "10.78.0.1";
const ADDR_B: &str = "10.78.0.2";
const PORT: u16 = 3537;
/// What an app says on the reliable channel once it has confirmed [`FRAMES`] frames.
const DONE: &[u8] = b"RBADONE";
/// The same settings as the UDP test's, whose confirmed checksums equal a bare runner's.
const SETTINGS: NetSettings =
    NetSettings { input_delay: 2, max_prediction: 8, desync_interval: 10, departure_ticks: 0 };

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
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!("`ip {}` failed: {}", args.join(" "), err.trim()))
    }
}

fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
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
    /// Namespaces A and B joined by a veth pair (10.78.0.1/24 in A, 10.78.0.2/24 in B),
    /// loopback up in each, and a multicast route on the veth (webrtc-rs's mDNS socket needs
    /// one; it stays on the pair).
    fn create() -> Result<Netns, String> {
        let pid = std::process::id();
        let (a, b) = (format!("{PREFIX}{pid}a"), format!("{PREFIX}{pid}b"));
        let mut ns =
            Netns { a: a.clone(), b: b.clone(), created: Vec::new(), children: Vec::new() };
        for name in [&a, &b] {
            ip(&["netns", "add", name])?;
            ns.created.push(name.clone());
        }
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

    /// Starts this test binary in namespace `ns` with a child role; returns its index.
    fn spawn(&mut self, ns: &str, role: &str, arg: &str) -> usize {
        let exe = std::env::current_exe().expect("the test binary's path");
        let child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(exe)
            .args(["matchbox::child_role", "--exact", "--ignored", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(ROLE, role)
            .env(ARG, arg)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn `ip netns exec`");
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

/// The value after `prefix` on the first line that has it (libtest may print "test … ... "
/// in front of a child's first line).
fn line<'a>(out: &'a str, prefix: &str) -> Option<&'a str> {
    out.lines().find_map(|l| l.find(prefix).map(|i| l[i + prefix.len()..].trim()))
}

/// Waits for the signaling server's "listening" line (30 s at most).
fn wait_for_server(ns: &mut Netns, server: usize) {
    let stdout = ns.children[server].stdout.take();
    let server_err = collect(ns.children[server].stderr.take());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in stdout.into_iter().flat_map(|o| BufReader::new(o).lines().map_while(Result::ok)) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(l) if l.contains("signaling server listening on") => return,
            Ok(_) => {}
            Err(_) => {
                let _ = ns.children[server].kill();
                let err = server_err.join().unwrap_or_default();
                panic!("the signaling server did not start within 30 s:\n{err}");
            }
        }
    }
}

/// Two Bevy apps in two namespaces play the duel over WebRTC through `MatchSpec::matchbox`
/// (bots reading `InputFrame`): both join the room, agree on the handshake, get opposite player
/// handles, and confirm the same checksums as a bare runner's for every one of 300 frames.
#[test]
#[ignore = "needs root and iproute2 (ip netns): cargo test -p bevy_rollback_abilities --features matchbox matchbox:: -- --ignored --skip matchbox::child_role"]
fn two_apps_over_webrtc_in_network_namespaces_confirm_a_bare_runners_checksums() {
    match effective_uid() {
        Some(0) => {}
        Some(uid) => cannot_run(&format!("not root (uid {uid}); `ip netns` needs root")),
        None => cannot_run("cannot read the uid from /proc/self/status"),
    }
    if let Err(e) = ip(&["-V"]) {
        cannot_run(&format!("no usable `ip` binary (install iproute2): {e}"));
    }
    let mut ns = Netns::create().unwrap_or_else(|e| cannot_run(&e));
    let (a, b) = (ns.a.clone(), ns.b.clone());
    let server = ns.spawn(&a, "serve", &format!("{ADDR_A}:{PORT}"));
    wait_for_server(&mut ns, server);

    // The second app joins 500 ms after the first: matchbox can miss two peers that join at
    // the same instant.
    let url = format!("ws://{ADDR_A}:{PORT}/bevy");
    let first = ns.spawn(&a, "peer", &url);
    std::thread::sleep(Duration::from_millis(500));
    let second = ns.spawn(&b, "peer", &url);
    let peers = [first, second];
    let readers: Vec<_> = peers
        .iter()
        .map(|&i| {
            let c = &mut ns.children[i];
            (collect(c.stdout.take()), collect(c.stderr.take()))
        })
        .collect();
    let start = Instant::now();
    let mut statuses: [Option<ExitStatus>; 2] = [None, None];
    while statuses.iter().any(Option::is_none) {
        for (k, &i) in peers.iter().enumerate() {
            if statuses[k].is_none() {
                statuses[k] = ns.children[i].try_wait().expect("the child's status");
            }
        }
        if start.elapsed() > PEER_DEADLINE {
            for &i in &peers {
                let _ = ns.children[i].kill();
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let outs: Vec<(String, String)> = readers
        .into_iter()
        .map(|(o, e)| (o.join().unwrap_or_default(), e.join().unwrap_or_default()))
        .collect();
    let show = |k: usize| format!("--- app {k}: {:?}\n{}\n{}", statuses[k], outs[k].0, outs[k].1);
    for (k, status) in statuses.iter().enumerate() {
        assert!(status.is_some_and(|s| s.success()), "app {k} failed:\n{}", show(k));
    }
    let handles: BTreeSet<_> = outs.iter().map(|o| line(&o.0, "peer handle:")).collect();
    assert_eq!(handles, BTreeSet::from([Some("0"), Some("1")]), "{}\n{}", show(0), show(1));
    let want: Vec<String> = bare_checksums(FRAMES).iter().map(|c| format!("{c:016x}")).collect();
    for (k, (out, _)) in outs.iter().enumerate() {
        let got = line(out, "confirmed:").unwrap_or_default();
        let got: Vec<&str> = got.split(',').collect();
        assert_eq!(got, want, "app {k}'s confirmed checksums differ from a bare runner's");
    }
    println!(
        "bevy matchbox netns: {FRAMES} confirmed frames equal on both apps and a bare runner \
         ({:.1} s; {}; {})",
        start.elapsed().as_secs_f64(),
        line(&outs[0].0, "peer stats:").unwrap_or_default(),
        line(&outs[1].0, "peer stats:").unwrap_or_default()
    );
}

/// The role of a re-executed child (see the module docs); does nothing in a normal run.
#[test]
#[ignore = "a child process of two_apps_over_webrtc_in_network_namespaces_confirm_a_bare_runners_checksums"]
fn child_role() {
    let Ok(role) = std::env::var(ROLE) else { return };
    let arg = std::env::var(ARG).expect("RBA_BEVY_MATCHBOX_ARG");
    match role.as_str() {
        "serve" => serve(&arg),
        "peer" => play(&arg),
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

/// The app's matchbox session, once synchronised.
fn matchbox(
    app: &mut App,
) -> Option<&mut rollback_abilities::session::matchbox::MatchboxSession<Duel>> {
    app.world_mut().get_resource_mut::<AbilitiesMatch<Duel>>()?.into_inner().matchbox_mut()
}

/// One app: the test's duel app on `MatchSpec::matchbox(room)`, updated until it has confirmed
/// [`FRAMES`] frames and has heard on the reliable channel that the other app has too; then it
/// prints its handle, its stats and the confirmed checksums.
fn play(room: &str) {
    let spec = MatchSpec::matchbox(room, 2).peers_timeout(Duration::from_secs(60)).net(SETTINGS);
    let mut app = app(spec);
    let start = Instant::now();
    let (mut sent, mut heard, mut after) = (false, false, 0u32);
    // A second of updates after both said they were done, so that our last packets (and our
    // DONE) are delivered before the socket closes.
    while after < 60 {
        assert!(start.elapsed() < Duration::from_secs(90), "the match did not finish in 90 s");
        app.update();
        assert!(seen(&app).ended.is_empty(), "the match ended: {:?}", seen(&app).ended);
        let confirmed = app
            .world()
            .get_resource::<AbilitiesMatch<Duel>>()
            .map_or(0, |m| confirmed_checksums(&m.runner()).len());
        if let Some(m) = matchbox(&mut app) {
            if confirmed >= FRAMES as usize && !sent {
                m.broadcast_reliable(DONE).expect("the reliable channel");
                sent = true;
            }
            let got = m.receive_reliable().expect("the reliable channel");
            heard |= got.iter().any(|(_, bytes)| bytes == DONE);
        }
        if sent && heard {
            after += 1;
        }
        // The app's clock (Bevy's real-time clock included) moves one tick per update, and the
        // room's time limits are measured on it: an update per tick of wall time keeps them
        // what they say against the network's real time.
        std::thread::sleep(TICK);
    }
    let m = state(&app);
    let s = m.stats();
    assert_eq!(m.kind(), "matchbox");
    assert_eq!(seen(&app).desyncs, 0);
    println!("peer handle: {}", m.local_players().first().copied().unwrap_or(usize::MAX));
    println!(
        "peer stats: {} rollbacks, max depth {}, resimulated {}",
        s.rollbacks, s.max_rollback, s.resimulated
    );
    let sums = confirmed_checksums(&m.runner());
    let sums: Vec<String> = sums[..FRAMES as usize].iter().map(|c| format!("{c:016x}")).collect();
    println!("confirmed: {}", sums.join(","));
    let _ = std::io::stdout().flush();
}
