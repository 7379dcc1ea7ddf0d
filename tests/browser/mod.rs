//! The duel in a real browser (feature `browser`): headless Chromium pages play the
//! `browser_duel` example's wasm build over WebRTC, against each other and against the native
//! `p2p_matchbox --game duel` peer; a screenshot of a match is checked; the replay viewer seeks
//! to frames of a natively recorded replay and must give the native checksums.
//!
//! Network rule: WebRTC peers gather addresses on every interface, so every browser, the
//! static/signaling server it talks to and the native peer run only inside two network
//! namespaces the test creates ([`netns::Pair`]: a veth pair, addresses 10.78.N.1 and
//! 10.78.N.2, each side's default route through the other, nothing else attached), deleted
//! afterwards, also on failure. No STUN.
//! Chromium is driven through `--remote-debugging-pipe` ([`cdp`]), so nothing listens for the
//! debugger. Every wait is bounded. The tests run one at a time (they share 2 cores).
//!
//! What they need: root, `ip` (iproute2), Debian's `chromium`, and the wasm build, which the
//! first test makes with `target/debug/examples/browser_duel --build-only` (a no-op when it is
//! up to date; it needs the `wasm32-unknown-unknown` target and `wasm-bindgen-cli` at the
//! version of the `wasm-bindgen` crate in Cargo.lock). So the tests are `#[ignore]`d: `cargo
//! test --all-features` lists them as ignored, never as passed, and this command runs them
//! (`.ci/run` installs what they need and runs it):
//!
//! ```text
//! cargo test --all-features --test integration browser:: -- --ignored \
//!     --skip browser::child_role --test-threads 1
//! ```
//!
//! Run that way on a machine that lacks one of them, a test fails and names what is missing.
//! The examples themselves are built by `cargo test --all-features` (cargo builds the examples
//! of the features it is given).
//!
//! Outputs (screenshot, replay, browser logs) go to `target/tmp/browser/`; each test prints
//! what it measured: page load to connected, frame time, rollbacks, ping.

mod cdp;
mod netns;

use cdp::{Browser, WINDOW};
use netns::{Pair, Proc};
use rollback_abilities::prelude::World;
use rollback_abilities_kit::duel::{self, DuelMatch, MatchOptions};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Frames each match plays (the page's `frames=`, the native peer's `--frames`).
const FRAMES: u64 = 600;
/// The port of the page server inside namespace A.
const PORT: u16 = 8080;
/// How long a match may take, from opening the pages to both reporting `done`.
const MATCH_DEADLINE: Duration = Duration::from_secs(150);
/// How long the wasm build may take (a clean release build of the crate for wasm32 on 2
/// cores is a few minutes; it is a no-op when up to date).
const BUILD_DEADLINE: Duration = Duration::from_secs(1200);
/// Selects a re-executed child's role (only `serve-page`, the self-test's page server).
const ROLE: &str = "RBA_BROWSER_CHILD";
/// The child's argument (the address to serve on).
const ARG: &str = "RBA_BROWSER_ARG";

/// The tests run one at a time: two browsers, a server and a native peer already fill 2 cores.
static SERIAL: Mutex<()> = Mutex::new(());

/// Why a test cannot run.
enum Problem {
    /// The machine lacks something (root, `ip`, Chromium, the wasm tool chain).
    Unavailable(String),
    /// Something that should work does not: always a failure.
    Failed(String),
}

/// Prints a line of the tests' report and appends it to `target/tmp/browser/report.txt`
/// (written afresh by each run of the test binary), which `.ci/run` shows after the tests: the
/// test harness hides what a passing test prints.
fn note(line: String) {
    println!("{line}");
    static FILE: OnceLock<Mutex<Option<std::fs::File>>> = OnceLock::new();
    let file = FILE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser");
        let _ = std::fs::create_dir_all(&dir);
        Mutex::new(std::fs::File::create(dir.join("report.txt")).ok())
    });
    if let Some(f) = file.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        let _ = writeln!(f, "{line}");
    }
}

/// Fails a test that cannot run on this machine, naming what is missing: a test that did not
/// run never passes.
fn unavailable(test: &str, reason: &str) -> ! {
    note(format!("browser test {test} cannot run here: {reason}"));
    panic!("browser test {test} cannot run on this machine: {reason} (see tests/browser/mod.rs)");
}

fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// What the machine offers the tests.
struct Machine {
    /// The Chromium program and its version line.
    chromium: (String, String),
    /// Where outputs go (`target/tmp/browser/`).
    out: PathBuf,
}

/// Root, `ip netns`, Chromium.
fn machine() -> Result<Machine, Problem> {
    match effective_uid() {
        Some(0) => {}
        Some(uid) => {
            return Err(Problem::Unavailable(format!(
                "not root (uid {uid}); `ip netns` needs root"
            )));
        }
        None => return Err(Problem::Unavailable("cannot read the uid".into())),
    }
    netns::ip(&["-V"])
        .map_err(|e| Problem::Unavailable(format!("no usable `ip` (install iproute2): {e}")))?;
    let chromium = cdp::chromium().map_err(Problem::Unavailable)?;
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&out)
        .map_err(|e| Problem::Failed(format!("{}: {e}", out.display())))?;
    netns::delete_stale_namespaces();
    Ok(Machine { chromium, out })
}

/// An example binary built by `cargo test` next to this test binary
/// (`target/debug/examples/NAME`).
fn example(name: &str) -> Result<PathBuf, Problem> {
    let exe = std::env::current_exe().map_err(|e| Problem::Failed(e.to_string()))?;
    // target/debug/deps/integration-HASH → target/debug/examples/NAME
    let dir = exe.parent().and_then(Path::parent).map(|d| d.join("examples"));
    let path = dir.map(|d| d.join(name)).filter(|p| p.is_file());
    path.ok_or_else(|| {
        Problem::Failed(format!(
            "the example {name} is not built next to {}: run `cargo test --all-features` (it \
             builds the examples) or `cargo build --all-features --examples`",
            exe.display()
        ))
    })
}

/// The built page (`target/browser_duel/www/`), made once per test run by
/// `browser_duel --build-only`.
fn web_dir() -> Result<PathBuf, Problem> {
    static DIR: OnceLock<Result<PathBuf, (bool, String)>> = OnceLock::new();
    let built = DIR.get_or_init(|| {
        let server = example("browser_duel").map_err(|p| match p {
            Problem::Unavailable(s) => (true, s),
            Problem::Failed(s) => (false, s),
        })?;
        let started = Instant::now();
        let mut child = Command::new(&server)
            .arg("--build-only")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| (false, format!("cannot run {}: {e}", server.display())))?;
        let out = child.stdout.take().map(BufReader::new);
        let err = child.stderr.take();
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut e) = err {
                let _ = std::io::Read::read_to_string(&mut e, &mut s);
            }
            s
        });
        let out = std::thread::spawn(move || {
            out.map(|o| o.lines().map_while(Result::ok).collect::<Vec<_>>()).unwrap_or_default()
        });
        let status = loop {
            if let Some(s) = child.try_wait().map_err(|e| (false, e.to_string()))? {
                break s;
            }
            if started.elapsed() > BUILD_DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                return Err((false, format!("the wasm build took over {BUILD_DEADLINE:?}")));
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let (out, err) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
        let dir = out.iter().find_map(|l| l.strip_prefix("built ")).map(PathBuf::from);
        match (status.code(), dir) {
            (Some(0), Some(dir)) => {
                note(format!(
                    "browser: wasm build ready in {:.1} s: {}",
                    started.elapsed().as_secs_f64(),
                    dir.display()
                ));
                let root = Path::new(env!("CARGO_MANIFEST_DIR"));
                Ok(if dir.is_absolute() { dir } else { root.join(dir) })
            }
            // Exit 2: wasm-bindgen is missing (the message names the install command).
            (Some(2), _) if err.contains("install") => {
                Err((true, format!("cannot build the page: {}", err.trim())))
            }
            // rustc's words when the standard library for the target is not installed.
            _ if err.contains("target may not be installed") => Err((
                true,
                "cannot build the page: the wasm32-unknown-unknown target is not installed \
                 (rustup target add wasm32-unknown-unknown)"
                    .to_string(),
            )),
            _ => Err((
                false,
                format!(
                    "`browser_duel --build-only` failed ({status}):\n{}\n{err}",
                    out.join("\n")
                ),
            )),
        }
    });
    built
        .clone()
        .map_err(|(unavail, s)| if unavail { Problem::Unavailable(s) } else { Problem::Failed(s) })
}

/// Runs a test body with the machine's checks done; reports a test that cannot run.
fn run(test: &str, needs_page: bool, body: impl FnOnce(&Machine) -> Result<(), String>) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let checked = machine().and_then(|m| if needs_page { web_dir().map(|_| m) } else { Ok(m) });
    match checked {
        Ok(m) => {
            if let Err(e) = body(&m) {
                panic!("browser test {test}: {e}");
            }
            note(format!("browser test {test}: done in {:.1} s", started.elapsed().as_secs_f64()));
        }
        Err(Problem::Unavailable(reason)) => unavailable(test, &reason),
        Err(Problem::Failed(e)) => panic!("browser test {test}: {e}"),
    }
}

/// The page server (`browser_duel --no-build`) in namespace A: the page's URL and the
/// signaling server's base URL (`ws://HOST:PORT/`, rooms are paths below it).
struct Server {
    proc: Proc,
    page: String,
    signaling: String,
}

/// Starts the page server in namespace A (it stops by itself after 10 minutes).
fn start_server(pair: &mut Pair) -> Result<Server, String> {
    let web = web_dir().map_err(|p| match p {
        Problem::Unavailable(s) | Problem::Failed(s) => s,
    })?;
    let bin = example("browser_duel").map_err(|p| match p {
        Problem::Unavailable(s) | Problem::Failed(s) => s,
    })?;
    let mut cmd = pair.command(&pair.a, bin);
    cmd.arg("--no-build").arg("--web-dir").arg(&web);
    cmd.args(["--addr", &format!("{}:{PORT}", pair.addr_a)]);
    // It stops by itself if the test could not kill it (the test killed by a signal).
    cmd.args(["--for", "600"]);
    let proc = pair.spawn(cmd, "browser_duel server")?;
    let page = proc.wait_line("ready ", Duration::from_secs(30))?;
    if !page.starts_with("http://") {
        return Err(format!("the ready line names no http URL: {page}\n{}", proc.output()));
    }
    // The signaling URL: a `ws://` URL the server printed, else the page's host and port.
    let said = proc.stdout();
    let signaling = said
        .split_whitespace()
        .find(|w| w.starts_with("ws://"))
        .map(str::to_string)
        .unwrap_or_else(|| page.replacen("http://", "ws://", 1));
    let signaling = if signaling.ends_with('/') { signaling } else { format!("{signaling}/") };
    Ok(Server { proc, page, signaling })
}

/// The expression that reads a page's status (contract: `duel.status()` once
/// `window.duelReady`).
const STATUS: &str = "(() => (window.duelReady === true && window.duel) ? window.duel.status() \
                      : { state: 'loading', error: null })()";

/// One page followed through a match.
struct Watch {
    opened: Instant,
    /// When `duelReady` first held (the wasm loaded and started).
    ready: Option<Duration>,
    /// When the state first was `playing` (connected to the other peer).
    playing: Option<Duration>,
    /// The first poll in `playing`: (time, frame), for the measured frame rate.
    first_playing: Option<(Instant, u64)>,
    /// The last poll in `playing` or `done`: (time, frame).
    last_playing: Option<(Instant, u64)>,
    last: Value,
}

impl Watch {
    /// A page opened now, not polled yet.
    fn new() -> Watch {
        Watch {
            opened: Instant::now(),
            ready: None,
            playing: None,
            first_playing: None,
            last_playing: None,
            last: Value::Null,
        }
    }

    /// Opens `url` in the browser.
    fn open(b: &mut Browser, url: &str) -> Result<Watch, String> {
        let opened = Instant::now();
        b.open(url)?;
        Ok(Watch { opened, ..Watch::new() })
    }

    /// Reads the page's status; an `error` state is an error.
    fn poll(&mut self, b: &mut Browser) -> Result<(), String> {
        let s = b
            .eval(STATUS, Duration::from_secs(20))
            .map_err(|e| format!("{e}\n{}", b.diagnostics()))?;
        let state = s["state"].as_str().unwrap_or("?").to_string();
        let now = Instant::now();
        if state != "loading" && self.ready.is_none() {
            self.ready = Some(self.opened.elapsed());
        }
        if state == "error" || !s["error"].is_null() {
            return Err(format!("{} reports an error: {s}\n{}", b.name, b.diagnostics()));
        }
        let frame = s["frame"].as_u64().unwrap_or(0);
        if matches!(state.as_str(), "playing" | "done") {
            if self.playing.is_none() {
                self.playing = Some(self.opened.elapsed());
                self.first_playing = Some((now, frame));
            }
            self.last_playing = Some((now, frame));
        }
        self.last = s;
        Ok(())
    }

    fn state(&self) -> &str {
        self.last["state"].as_str().unwrap_or("?")
    }

    fn done(&self) -> bool {
        self.state() == "done"
    }

    /// Frames per second of wall time the page advanced while playing, as seen by the test.
    fn measured_fps(&self) -> Option<f64> {
        let ((t0, f0), (t1, f1)) = (self.first_playing?, self.last_playing?);
        let secs = t1.duration_since(t0).as_secs_f64();
        (secs > 0.5).then(|| f1.saturating_sub(f0) as f64 / secs)
    }

    /// One line of measurements.
    fn summary(&self, name: &str) -> String {
        let s = &self.last;
        let secs =
            |d: Option<Duration>| d.map_or("-".into(), |d| format!("{:.2} s", d.as_secs_f64()));
        let ms = |v: &Value| v.as_f64().map_or("-".into(), |t| format!("{t:.2} ms"));
        format!(
            "{name}: player {}; seen by the test: wasm ready {}, playing {}, {} fps; the page's \
             own: load {}, connect {}, frame time {}, {} fps, {} frames drawn; {} rollbacks, \
             ping {} ms, frame advantage {}, desyncs {}, checksum checks {} (agree: {})",
            s["player"],
            secs(self.ready),
            secs(self.playing),
            self.measured_fps().map_or("-".into(), |f| format!("{f:.1}")),
            ms(&s["load_ms"]),
            ms(&s["connect_ms"]),
            ms(&s["frame_time_ms"]),
            s["fps"].as_f64().map_or("-".into(), |f| format!("{f:.1}")),
            s["frames_drawn"],
            s["rollbacks"],
            s["ping_ms"],
            s["frame_advantage"],
            s["desyncs"],
            s["checksum_checks"],
            s["checksums_agree"]
        )
    }
}

/// A page's final report must be complete: `done`, frame `frames - 1` confirmed, a final
/// checksum of 16 hex digits, a non-empty checksum list reaching the last minute, no desync,
/// and the page's own comparisons with the other peer's checksums all agreeing.
fn check_final(name: &str, s: &Value, frames: u64) -> Result<(), String> {
    let hex16 = |v: &Value| {
        v.as_str().is_some_and(|h| h.len() == 16 && h.bytes().all(|c| c.is_ascii_hexdigit()))
    };
    let confirmed = s["confirmed_frame"].as_u64();
    let list = s["checksums"].as_array().cloned().unwrap_or_default();
    let last_listed = list.last().and_then(|e| e[0].as_u64());
    let ok = s["state"] == "done"
        && confirmed.is_some_and(|c| c + 1 >= frames)
        && hex16(&s["final_checksum"])
        && s["desyncs"].as_u64() == Some(0)
        && !list.is_empty()
        && list.iter().all(|e| e[0].is_u64() && hex16(&e[1]))
        && last_listed.is_some_and(|f| f + 60 >= frames - 1)
        && s["checksum_mismatches"].as_u64() == Some(0)
        && s["checksums_agree"] == true;
    if ok { Ok(()) } else { Err(format!("{name}'s final status is incomplete: {s}")) }
}

/// Decodes a PNG and checks it is a picture, not a blank page: the window's size, at least
/// `min_colours` distinct colours, and no colour covering more than 95 % of it. Returns
/// (distinct colours, share of the commonest colour).
fn check_picture(png_bytes: &[u8], min_colours: usize) -> Result<(usize, f64), String> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| format!("not a PNG: {e}"))?;
    let mut buf = vec![0; reader.output_buffer_size().ok_or("PNG too large")?];
    let info = reader.next_frame(&mut buf).map_err(|e| format!("bad PNG: {e}"))?;
    if (info.width, info.height) != WINDOW {
        return Err(format!("the screenshot is {}x{}, not {WINDOW:?}", info.width, info.height));
    }
    let samples = info.color_type.samples();
    let mut counts: BTreeMap<&[u8], u64> = BTreeMap::new();
    for row in buf[..info.buffer_size()].chunks_exact(info.line_size) {
        for px in row[..info.width as usize * samples].chunks_exact(samples) {
            *counts.entry(px).or_default() += 1;
        }
    }
    let total = u64::from(info.width) * u64::from(info.height);
    let top = counts.values().copied().max().unwrap_or(0) as f64 / total as f64;
    if counts.len() < min_colours || top > 0.95 {
        return Err(format!(
            "the screenshot looks blank: {} distinct colours (want ≥ {min_colours}), the \
             commonest covers {:.1} %",
            counts.len(),
            top * 100.0
        ));
    }
    Ok((counts.len(), top))
}

/// What a screenshot would show, checked on the state the page exposes (`status()`): every
/// text the canvas drew lies inside it (960×540), no two texts overlap (two knocked-out
/// fighters' "K.O." marks written into one another), a decided match's result names its
/// winner, no two standing fighters' bodies overlap, and no two fighters' labels overlap.
/// Returns the number of texts checked.
fn check_screen(name: &str, s: &Value) -> Result<usize, String> {
    let texts = s["texts"].as_array().cloned().unwrap_or_default();
    for t in &texts {
        let b: Vec<f64> = t["box"]
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let inside = b.len() == 4 && b[0] >= 0.0 && b[1] >= 0.0 && b[2] <= 960.0 && b[3] <= 540.0;
        if !inside {
            return Err(format!("{name}: a text leaves the canvas at frame {}: {t}", s["frame"]));
        }
    }
    // No text is written over another (1 px of anti-aliasing aside).
    let boxes: Vec<(f64, f64, f64, f64)> = texts
        .iter()
        .filter_map(|t| {
            let b: Vec<f64> = t["box"].as_array()?.iter().filter_map(Value::as_f64).collect();
            (b.len() == 4).then(|| (b[0], b[1], b[2], b[3]))
        })
        .collect();
    for (i, a) in boxes.iter().enumerate() {
        for (j, b) in boxes.iter().enumerate().skip(i + 1) {
            if a.0 + 1.0 < b.2 && b.0 + 1.0 < a.2 && a.1 + 1.0 < b.3 && b.1 + 1.0 < a.3 {
                return Err(format!(
                    "{name}: two texts overlap at frame {}: {} {}",
                    s["frame"], texts[i], texts[j]
                ));
            }
        }
    }
    // A decided match is announced with its winner (`P2 · remote WINS THE MATCH`) or as drawn.
    let m = &s["match"];
    if m["state"] == "match_over" {
        let said = |t: &Value| t["text"].as_str().unwrap_or("").to_string();
        let named = match m["winner"].as_u64() {
            Some(p) => texts
                .iter()
                .map(said)
                .any(|t| t.starts_with(&format!("P{p} ")) && t.contains("WINS THE MATCH")),
            None => texts.iter().map(said).any(|t| t.contains("MATCH DRAWN")),
        };
        if !named {
            return Err(format!(
                "{name}: the decided match's result is not shown at frame {}: {m}",
                s["frame"]
            ));
        }
    }
    let fighters = s["fighters"].as_array().cloned().unwrap_or_default();
    // A round decided by a knock-out with one fighter still standing is that fighter's round
    // (the fighters listed are the standing ones; none gets up before the next round).
    if m["state"] == "round_over" && m["decided_by"] == "knockout" && fighters.len() == 1 {
        let last = fighters[0]["player"].as_u64();
        if m["winner"].as_u64() != last {
            return Err(format!(
                "{name}: player {last:?} is the last standing but the round went to {} at frame {}",
                m["winner"], s["frame"]
            ));
        }
    }
    let span =
        |f: &Value, a: &str, b: &str| (f[a].as_f64().unwrap_or(0.0), f[b].as_f64().unwrap_or(0.0));
    for (i, f) in fighters.iter().enumerate() {
        for g in &fighters[i + 1..] {
            // The bodies may touch (the hitstop shake moves a frozen body by 2 px).
            let (a, b) = (span(f, "x0", "x1"), span(g, "x0", "x1"));
            if a.0 + 4.0 < b.1 && b.0 + 4.0 < a.1 {
                return Err(format!("{name}: fighters overlap at frame {}: {f} {g}", s["frame"]));
            }
            let (a, b) = (span(f, "label_x0", "label_x1"), span(g, "label_x0", "label_x1"));
            if a.0 < b.1 && b.0 < a.1 {
                return Err(format!("{name}: labels overlap at frame {}: {f} {g}", s["frame"]));
            }
        }
    }
    Ok(texts.len())
}

/// The page's sound log (`window.duelSoundLog`, what its Web Audio was asked to do) held
/// against the presenter's (`status().sound_log`, the crate's sound policy) and its cue
/// counters: the same commands in the same order, no cue started (or skipped as too late)
/// while its sound still plays (it may start again after its fade or stop, when rollbacks took
/// it away and brought it back), a fade or stop only for a sounding cue, fades within 4
/// frames, every burst played has its start or skip and every lasting cue shown its looping
/// start. Returns a summary.
fn check_sounds(name: &str, b: &mut Browser) -> Result<String, String> {
    // Both logs at one instant (the page takes queued commands every animation frame).
    let both = b.eval(
        "({ page: window.duelSoundLog || null, status: window.duel.status() })",
        Duration::from_secs(10),
    )?;
    let s = &both["status"];
    let page = both["page"].as_array().cloned().ok_or(format!("{name}: no window.duelSoundLog"))?;
    let ours = s["sound_log"].as_array().cloned().unwrap_or_default();
    if page.is_empty() || page.len() > ours.len() {
        return Err(format!("{name}: {} sounds played for {} commands", page.len(), ours.len()));
    }
    let fields = ["op", "id", "offset", "fade", "looped"];
    for (i, (p, o)) in page.iter().zip(&ours).enumerate() {
        if fields.iter().any(|f| p[f] != o[f]) {
            return Err(format!("{name}: sound {i} differs: page {p}, presenter {o}"));
        }
    }
    // A cue sounds from its start until its fade or stop. It may start again after that: a
    // rollback can take a predicted cue away (its sound fades) and a later one bring it back
    // (with four players, inputs arrive at different times). Starting a cue that is still
    // sounding would be a double sound.
    let mut sounding = BTreeSet::new();
    let (mut late, mut fades, mut loops, mut bursts, mut again) = (0, 0, 0, 0, 0);
    let mut seen = BTreeSet::new();
    let history = |id: &str| -> String {
        let ops: Vec<String> = ours
            .iter()
            .filter(|c| c["id"] == id)
            .map(|c| format!("{} at {}", c["op"], c["frame"]))
            .collect();
        ops.join(", ")
    };
    for c in &ours {
        let id = c["id"].as_str().unwrap_or_default().to_string();
        match c["op"].as_str() {
            Some(op @ ("start" | "skip")) => {
                if sounding.contains(&id) {
                    return Err(format!(
                        "{name}: cue {id} started while its sound was still playing: {}",
                        history(&id)
                    ));
                }
                if !seen.insert(id.clone()) {
                    again += 1;
                }
                if op == "start" {
                    sounding.insert(id.clone());
                }
                if c["offset"].as_u64().unwrap_or(0) > 0 {
                    late += 1;
                }
                if c["looped"] == true { loops += 1 } else { bursts += 1 }
            }
            Some(op @ ("fade" | "stop")) => {
                if !sounding.remove(&id) {
                    return Err(format!(
                        "{name}: a {op} of a cue that was not sounding: {c} ({})",
                        history(&id)
                    ));
                }
                if op == "fade" {
                    fades += 1;
                    if c["fade"].as_u64().is_none_or(|f| f > 4) {
                        return Err(format!("{name}: a fade longer than 4 frames: {c}"));
                    }
                }
            }
            _ => {}
        }
    }
    if s["cues_played"].as_u64() != Some(bursts) || s["cues_lasting"].as_u64() != Some(loops) {
        return Err(format!(
            "{name}: {bursts} burst sounds for {} bursts played, {loops} loops for {} lasting cues",
            s["cues_played"], s["cues_lasting"]
        ));
    }
    Ok(format!(
        "{} sound commands ({bursts} bursts, {late} started late at their offset, {fades} faded, {loops} loops, {again} started again after a fade); the page played the first {}",
        ours.len(),
        page.len()
    ))
}

/// Plays pages until all are `done` (or `deadline`): polls every 100 ms; `each` runs after
/// every round of polls (screenshots).
fn play_out(
    pages: &mut [(&mut Browser, &mut Watch)],
    deadline: Duration,
    mut each: impl FnMut(&mut [(&mut Browser, &mut Watch)]) -> Result<(), String>,
) -> Result<(), String> {
    play_until(pages, deadline, "the match did not finish", |pages| {
        each(pages)?;
        Ok(pages.iter().all(|(_, w)| w.done()))
    })
}

/// Polls pages every 100 ms until `enough` says so after a round of polls; past `deadline`,
/// an error that says `what` did not happen.
fn play_until(
    pages: &mut [(&mut Browser, &mut Watch)],
    deadline: Duration,
    what: &str,
    mut enough: impl FnMut(&mut [(&mut Browser, &mut Watch)]) -> Result<bool, String>,
) -> Result<(), String> {
    let start = Instant::now();
    loop {
        for (b, w) in pages.iter_mut() {
            w.poll(b)?;
        }
        if enough(pages)? {
            return Ok(());
        }
        if start.elapsed() > deadline {
            let mut msg = format!("{what} within {} s:", deadline.as_secs());
            for (b, w) in pages.iter() {
                msg.push_str(&format!("\n{}: {}\n{}", b.name, w.last, b.diagnostics()));
            }
            return Err(msg);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Saves a PNG under `dir` and prints its path.
/// A screenshot and the frame it was taken at.
type Shot = (u64, Vec<u8>);

fn save(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, String> {
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Two headless pages in two namespaces join one room and play 600 frames over WebRTC with no
/// input delay (A the bot, B scripted inputs): they roll back, and report the same confirmed
/// checksums (final and every-60-frames list) and no desync. Mid-match, page A's screenshot
/// is saved and must be a picture (not blank).
#[test]
#[ignore = "needs root, iproute2, Chromium, wasm32 and wasm-bindgen-cli: cargo test --all-features --test integration browser:: -- --ignored --skip browser::child_role --test-threads 1"]
fn two_browser_pages_play_a_duel_and_agree() {
    run("two_browser_pages_play_a_duel_and_agree", true, |m| {
        let mut pair = Pair::create(1)?;
        let server = start_server(&mut pair)?;
        // Input delay 0, so the pages predict and roll back; A's bot against B's script.
        let url = format!("{}?room=pages&players=2&frames={FRAMES}&seed=5&delay=0", server.page);
        let program = &m.chromium.0;
        let mut a = Browser::launch("browser A", program, &pair.a, &m.out)?;
        let mut b = Browser::launch("browser B", program, &pair.b, &m.out)?;
        let mut wa = Watch::open(&mut a, &format!("{url}&bot=1"))?;
        // matchbox can miss two peers that join at the same instant.
        std::thread::sleep(Duration::from_millis(500));
        let mut wb = Watch::open(&mut b, &format!("{url}&script=mash"))?;
        let (mut early, mut shot): (Option<Shot>, Option<Shot>) = (None, None);
        let mut screens = 0;
        play_out(&mut [(&mut a, &mut wa), (&mut b, &mut wb)], MATCH_DEADLINE, |pages| {
            for (i, (_, w)) in pages.iter().enumerate() {
                if w.state() == "playing" {
                    check_screen(["page A", "page B"][i], &w.last)?;
                    screens += 1;
                }
            }
            let (b, w) = &mut pages[0];
            let frame = w.last["frame"].as_u64().unwrap_or(0);
            if early.is_none() && w.state() == "playing" && frame >= 120 {
                early = Some((frame, b.screenshot()?));
            }
            if shot.is_none() && w.state() == "playing" && frame >= FRAMES / 2 {
                shot = Some((frame, b.screenshot()?));
            }
            Ok(())
        })
        .map_err(|e| format!("{e}\n{}", server.proc.output()))?;
        for (name, w) in [("page A", &wa), ("page B", &wb)] {
            check_final(name, &w.last, FRAMES)?;
            note(format!("browser duel: {}", w.summary(name)));
        }
        let (sa, sb) = (&wa.last, &wb.last);
        let players: BTreeSet<String> = [sa, sb].iter().map(|s| s["player"].to_string()).collect();
        if players != BTreeSet::from(["0".to_string(), "1".to_string()]) {
            return Err(format!("the pages are not players 0 and 1: {sa}\n{sb}"));
        }
        if sa["final_checksum"] != sb["final_checksum"] || sa["checksums"] != sb["checksums"] {
            return Err(format!("the pages' confirmed checksums differ:\n{sa}\n{sb}"));
        }
        // With no input delay over a real network, predictions miss and frames are re-run:
        // the agreement above holds across rollbacks in wasm.
        let rollbacks: u64 = [sa, sb].iter().filter_map(|s| s["rollbacks"].as_u64()).sum();
        if rollbacks == 0 {
            return Err(format!("no page rolled back once with input delay 0:\n{sa}\n{sb}"));
        }
        note(format!(
            "browser duel: {screens} polls of the screen's state: every text inside the canvas, \
             no fighters or labels overlapping"
        ));
        for (name, b) in [("page A", &mut a), ("page B", &mut b)] {
            note(format!("browser duel: {name}'s sound: {}", check_sounds(name, b)?));
        }
        note(format!(
            "browser duel: both pages confirm frame {}: checksum {} ({} checkpoints agree)",
            FRAMES - 1,
            sa["final_checksum"],
            sa["checksums"].as_array().map_or(0, Vec::len)
        ));
        // The screenshot (taken mid-match; after the end if the match was too quick).
        let (frame, png) = match shot {
            Some(s) => s,
            None => (sa["frame"].as_u64().unwrap_or(0), a.screenshot()?),
        };
        let end = (sa["frame"].as_u64().unwrap_or(0), a.screenshot()?);
        let early = early.unwrap_or_else(|| end.clone());
        for (name, (frame, png)) in [
            ("duel-2p-early.png", early),
            ("duel-match.png", (frame, png)),
            ("duel-2p-end.png", end),
        ] {
            let path = save(&m.out, name, &png)?;
            let (colours, top) = check_picture(&png, 64)?;
            note(format!(
                "browser duel: screenshot at frame {frame}: {} ({colours} colours, commonest \
                 {:.1} %)",
                path.display(),
                top * 100.0
            ));
        }
        Ok(())
    });
}

/// Frames the match with a reloaded page plays: long enough that the reloaded page's way
/// back (its page loading again, the others agreeing it left, the state sent) ends well before
/// the match does.
const RELOAD_FRAMES: u64 = 1500;
/// The frame of page B's world at which the test reloads it.
const RELOAD_AT: u64 = 300;

/// Two headless pages (both scripted, so every player's input matters) play
/// [`RELOAD_FRAMES`] frames in a 2-player room; page B is reloaded mid-match. With the ticket it
/// kept in `sessionStorage` it comes back into its slot from its new peer id: its proven claim
/// takes the slot out at once, then the members agree a frame F and send it their state. It is
/// back before the page's default departure time (10 s) would have passed, its status reports
/// `rejoined_at: F`, page A's the return of B's player at the same F.
/// Then both pages finish with the same final checksum, and their periodic checksum
/// comparisons, from F on for page B, all agree (none differs, some made).
#[test]
#[ignore = "needs root, iproute2, Chromium, wasm32 and wasm-bindgen-cli: cargo test --all-features --test integration browser:: -- --ignored --skip browser::child_role --test-threads 1"]
fn a_reloaded_page_rejoins_its_match() {
    run("a_reloaded_page_rejoins_its_match", true, |m| {
        let mut pair = Pair::create(6)?;
        let server = start_server(&mut pair)?;
        let url = format!("{}?room=reload&players=2&frames={RELOAD_FRAMES}&seed=11", server.page);
        let program = &m.chromium.0;
        let mut a = Browser::launch("browser A", program, &pair.a, &m.out)?;
        let mut b = Browser::launch("browser B", program, &pair.b, &m.out)?;
        let mut wa = Watch::open(&mut a, &format!("{url}&script=mash"))?;
        std::thread::sleep(Duration::from_millis(500));
        let url_b = format!("{url}&script=jab");
        let mut wb = Watch::open(&mut b, &url_b)?;
        let started = Instant::now();
        let failed = |e: String, a: &Browser, b: &Browser| {
            format!("{e}\n{}\n{}\n{}", a.diagnostics(), b.diagnostics(), server.proc.output())
        };
        // Both play until page B's world reaches the frame it is reloaded at.
        loop {
            wa.poll(&mut a)?;
            wb.poll(&mut b)?;
            if wb.state() == "playing" && wb.last["frame"].as_u64().unwrap_or(0) >= RELOAD_AT {
                break;
            }
            if started.elapsed() > MATCH_DEADLINE / 2 {
                let e = format!("page B never reached frame {RELOAD_AT}: {}", wb.last);
                return Err(failed(e, &a, &b));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let player_b = wb.last["player"].as_u64().ok_or("page B has no player")?;
        let frame_before = wb.last["frame"].as_u64().unwrap_or(0);
        let reloaded = Instant::now();
        b.reload()?;
        let mut wb = Watch { opened: reloaded, ..Watch::new() };
        // Until page B is back in the match; page A plays on (and holds for it).
        let (mut seen_rejoining, mut bytes) = (false, 0);
        let back_after = loop {
            wa.poll(&mut a)?;
            wb.poll(&mut b)?;
            if wb.state() == "rejoining" {
                seen_rejoining = true;
                bytes = bytes.max(wb.last["rejoin_bytes"].as_u64().unwrap_or(0));
            }
            if wb.last["rejoined_at"].is_u64() {
                break reloaded.elapsed();
            }
            if reloaded.elapsed() > MATCH_DEADLINE / 2 || wa.done() {
                let e = format!("page B did not come back:\nA {}\nB {}", wa.last, wb.last);
                return Err(failed(e, &a, &b));
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        // Waiting out the departure time would take 600 of the page's ticks, 10 s at most 60 a
        // second: back sooner, the members took the proven claim as the player's departure.
        if back_after >= Duration::from_secs(10) {
            let e = format!("page B took {back_after:?} to come back: it waited out its departure");
            return Err(failed(e, &a, &b));
        }
        let back_at = wb.last["rejoined_at"].as_u64().unwrap_or(0);
        let size = wb.last["rejoin_size"].as_u64().unwrap_or(0);
        bytes = bytes.max(wb.last["rejoin_bytes"].as_u64().unwrap_or(0));
        note(format!(
            "browser reload: page B (player {player_b}) reloaded at frame {frame_before}, back \
             in the match at frame F = {back_at} {:.2} s later ({} refusals of its claim \
             reported to it; the state: {bytes}/{size} bytes; seen rejoining: \
             {seen_rejoining})",
            back_after.as_secs_f64(),
            wb.last["rejoin_refusals"]
        ));
        play_out(&mut [(&mut a, &mut wa), (&mut b, &mut wb)], MATCH_DEADLINE, |_| Ok(()))
            .map_err(|e| format!("{e}\n{}", server.proc.output()))?;
        let (sa, sb) = (&wa.last, &wb.last);
        for (name, s) in [("page A", sa), ("page B", sb)] {
            check_final(name, s, RELOAD_FRAMES)?;
            if s["checksum_checks"].as_u64().unwrap_or(0) == 0 {
                return Err(format!("{name} compared no checksum: {s}"));
            }
        }
        if sb["rejoined_at"].as_u64() != Some(back_at) || size == 0 || bytes < size {
            return Err(format!("page B's return is not reported whole: {sb}"));
        }
        // Page A saw B's player back at the same frame.
        let returns = sa["returns"].as_array().cloned().unwrap_or_default();
        let seen_back =
            returns.iter().any(|r| r[0] == serde_json::json!([player_b]) && r[1] == back_at);
        if !seen_back {
            return Err(format!("page A did not see player {player_b} back at {back_at}: {sa}"));
        }
        if sa["final_checksum"] != sb["final_checksum"] {
            return Err(format!("the pages' final checksums differ:\n{sa}\n{sb}"));
        }
        // Page B's checksums (from F on) are page A's.
        let listed = |s: &Value| -> BTreeMap<u64, String> {
            s["checksums"]
                .as_array()
                .map(|l| {
                    l.iter()
                        .filter_map(|e| Some((e[0].as_u64()?, e[1].as_str()?.to_string())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (la, lb) = (listed(sa), listed(sb));
        if lb.is_empty()
            || lb.keys().next().is_some_and(|f| *f + 1 < back_at)
            || lb.iter().any(|(f, h)| la.get(f) != Some(h))
        {
            return Err(format!("page B's checksums from F on are not page A's:\n{sa}\n{sb}"));
        }
        for (name, w) in [("page A", &wa), ("page B (reloaded)", &wb)] {
            note(format!("browser reload: {}", w.summary(name)));
        }
        note(format!(
            "browser reload: both pages confirm frame {}: checksum {}; page B's {} checkpoints \
             after F agree with page A's ({} comparisons on A, {} on B, no mismatch)",
            RELOAD_FRAMES - 1,
            sa["final_checksum"],
            lb.len(),
            sa["checksum_checks"],
            sb["checksum_checks"]
        ));
        Ok(())
    });
}

/// The page's `rejoin=` in the give-up test: seconds a returning page waits without progress.
const GIVE_UP_SECS: u64 = 5;

/// Two headless pages play in a 2-player room; page A's browser is closed for good, then page
/// B is reloaded. With its ticket it asks for its slot, but nobody of the match is left to let
/// it back in: within its `rejoin=` time (plus the page's load) it gives up, says why
/// (`rejoin_gave_up`, on the screen too), drops its ticket and joins the room anew without an
/// error. A new browser's page, which finds a ticket it cannot read in its tab's
/// `sessionStorage`, drops it (`ticket_dropped`) and joins the room as a new player: the two
/// play a new match.
#[test]
#[ignore = "needs root, iproute2, Chromium, wasm32 and wasm-bindgen-cli: cargo test --all-features --test integration browser:: -- --ignored --skip browser::child_role --test-threads 1"]
fn a_returning_page_gives_up_on_a_gone_match() {
    run("a_returning_page_gives_up_on_a_gone_match", true, |m| {
        let mut pair = Pair::create(7)?;
        let server = start_server(&mut pair)?;
        let room = "giveup";
        let url = format!("{}?room={room}&players=2&seed=13&rejoin={GIVE_UP_SECS}", server.page);
        let ticket = format!("sessionStorage.getItem('rollback-duel-ticket:{room}')");
        let program = &m.chromium.0;
        let mut a = Browser::launch("browser A", program, &pair.a, &m.out)?;
        let mut b = Browser::launch("browser B", program, &pair.b, &m.out)?;
        let mut wa = Watch::open(&mut a, &format!("{url}&script=mash"))?;
        std::thread::sleep(Duration::from_millis(500));
        let mut wb = Watch::open(&mut b, &format!("{url}&script=jab"))?;
        let at = |w: &Watch, frame: u64| {
            w.state() == "playing" && w.last["frame"].as_u64().unwrap_or(0) >= frame
        };
        let pages = &mut [(&mut a, &mut wa), (&mut b, &mut wb)];
        play_until(pages, MATCH_DEADLINE / 2, "the pages did not play", |p| Ok(at(p[1].1, 120)))?;
        if !b.eval(&ticket, Duration::from_secs(5))?.is_string() {
            return Err(format!("page B keeps no ticket mid-match: {}", wb.last));
        }
        // Page A is gone for good; page B comes back to a match nobody else is in.
        drop(a);
        let reloaded = Instant::now();
        b.reload()?;
        let mut wb = Watch { opened: reloaded, ..Watch::new() };
        let (mut seen_rejoining, mut rejoining_shot) = (false, None);
        let gave_up_after = loop {
            wb.poll(&mut b)?;
            seen_rejoining |= wb.state() == "rejoining";
            if rejoining_shot.is_none() && seen_rejoining && reloaded.elapsed().as_secs() >= 2 {
                rejoining_shot = Some(b.screenshot()?);
            }
            if wb.last["rejoin_gave_up"].is_string() {
                break reloaded.elapsed();
            }
            if reloaded.elapsed() > Duration::from_secs(GIVE_UP_SECS + 20) {
                let e = format!("page B did not give up within {GIVE_UP_SECS} s: {}", wb.last);
                return Err(format!("{e}\n{}\n{}", b.diagnostics(), server.proc.output()));
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let why = wb.last["rejoin_gave_up"].as_str().unwrap_or("").to_string();
        if !seen_rejoining
            || gave_up_after < Duration::from_secs(GIVE_UP_SECS)
            || !why.starts_with("Could not get back into the match: ")
        {
            return Err(format!(
                "page B gave up after {gave_up_after:?} (seen rejoining: {seen_rejoining}): {}",
                wb.last
            ));
        }
        // It joins the room anew, a page without a ticket, and shows why (the screen a second
        // later).
        std::thread::sleep(Duration::from_secs(1));
        wb.poll(&mut b)?;
        if wb.state() != "connecting" || wb.last["mode"] != "connecting" {
            return Err(format!("page B did not join the room anew: {}", wb.last));
        }
        if !b.eval(&ticket, Duration::from_secs(5))?.is_null() {
            return Err(format!("page B kept its ticket after giving up: {}", wb.last));
        }
        let png = b.screenshot()?;
        let path = save(&m.out, "rejoin-gave-up.png", &png)?;
        let (colours, _) = check_picture(&png, 8)?;
        note(format!(
            "browser give-up: page B reloaded into a match nobody else is in; rejoining, it \
             gave up {:.2} s later (rejoin={GIVE_UP_SECS}): {why:?}; joined the room anew; \
             screenshot {} ({colours} colours)",
            gave_up_after.as_secs_f64(),
            path.display()
        ));
        if let Some(png) = rejoining_shot {
            let path = save(&m.out, "rejoining.png", &png)?;
            note(format!("browser give-up: page B rejoining: screenshot {}", path.display()));
        }
        // A new browser's tab holds a ticket it cannot read: it drops it and plays B anew.
        let mut a = Browser::launch("browser A2", program, &pair.a, &m.out)?;
        let replay = format!("{}?room={room}&view=replay", server.page);
        Watch::open(&mut a, &replay)?;
        let garbage = format!("sessionStorage.setItem('rollback-duel-ticket:{room}', '(slot: 1')");
        a.eval(&garbage, Duration::from_secs(5))?;
        a.navigate(&format!("{url}&script=mash"))?;
        let mut wa = Watch { opened: Instant::now(), ..Watch::new() };
        let mut shot = None;
        let pages = &mut [(&mut a, &mut wa), (&mut b, &mut wb)];
        play_until(pages, MATCH_DEADLINE / 2, "the new pages did not play", |p| {
            if shot.is_none() && at(p[0].1, 30) {
                shot = Some(p[0].0.screenshot()?);
            }
            Ok(p.iter().all(|(_, w)| at(w, 120)))
        })?;
        let dropped = wa.last["ticket_dropped"].as_str().unwrap_or("").to_string();
        if dropped.is_empty() || !wa.last["rejoin_gave_up"].is_null() {
            return Err(format!("page A2 did not report the ticket it dropped: {}", wa.last));
        }
        let players: BTreeSet<String> =
            [&wa, &wb].iter().map(|w| w.last["player"].to_string()).collect();
        if players != BTreeSet::from(["0".to_string(), "1".to_string()]) {
            return Err(format!(
                "the new pages are not players 0 and 1:\n{}\n{}",
                wa.last, wb.last
            ));
        }
        if let Some(png) = shot {
            let path = save(&m.out, "ticket-dropped.png", &png)?;
            note(format!("browser give-up: page A2's screenshot {}", path.display()));
        }
        note(format!(
            "browser give-up: page A2 dropped its unreadable ticket ({dropped:?}) and plays a \
             new match with page B: {}; {}",
            wa.summary("page A2"),
            wb.summary("page B")
        ));
        Ok(())
    });
}

/// Four players in one room play a whole match: two headless pages (A the bot, in namespace
/// A; B scripted, in namespace B) and two native `p2p_matchbox --game duel` peers (the duel's
/// bot, one in each namespace). The pages may play enough frames for a best-of match to be
/// decided even if every round runs out of time; the test follows them until both have shown
/// the decided match for a second. Throughout, every page compares its confirmed checksums with
/// the three other sides' and none differs; the pages' screens pass [`check_screen`] at every
/// poll (a decided match's banner names its winner or says it is drawn, and a round's last
/// fighter standing is the round's winner); their sounds match the presenter's; page A's screenshots
/// are saved early in the first round, mid-fight, and while the match's result is shown.
#[test]
#[ignore = "needs root, iproute2, Chromium, wasm32 and wasm-bindgen-cli: cargo test --all-features --test integration browser:: -- --ignored --skip browser::child_role --test-threads 1"]
fn four_players_play_a_match_to_its_end() {
    run("four_players_play_a_match_to_its_end", true, |m| {
        // Rarely (about one start in eight here), one page's handshake round waits out its
        // 10 s for a peer's verdict although that peer's own handshake arrived: the room never
        // starts. Such a start is tried once more, with new namespaces, server and peers, and
        // the first attempt's error is kept in the report; any other failure, or the same
        // one twice, fails the test.
        match four_player_match(m) {
            Err(e) if e.contains("cannot join the room") && e.contains("exchanging handshakes") => {
                let first = e.lines().next().unwrap_or_default().to_string();
                note(format!("browser 4 players: the room did not start ({first}); once more"));
                four_player_match(m)
            }
            other => other,
        }
    });
}

/// One attempt of [`four_players_play_a_match_to_its_end`].
fn four_player_match(m: &Machine) -> Result<(), String> {
    let native = example("p2p_matchbox").map_err(|p| match p {
        Problem::Unavailable(s) | Problem::Failed(s) => s,
    })?;
    // Every round lasts at most its clock and the pause after it, and a match at most
    // `MAX_ROUNDS` rounds: this many frames decide a match however the fighters play.
    let frames = u64::from(duel::MAX_ROUNDS * (duel::ROUND_FRAMES + duel::KO_PAUSE) + 120);
    let mut pair = Pair::create(5)?;
    let server = start_server(&mut pair)?;
    let url = format!("{}?room=four&players=4&frames={frames}&seed=7", server.page);
    let program = &m.chromium.0;
    let mut a = Browser::launch("browser A", program, &pair.a, &m.out)?;
    let mut b = Browser::launch("browser B", program, &pair.b, &m.out)?;
    let mut wa = Watch::open(&mut a, &format!("{url}&bot=1"))?;
    // matchbox can miss peers that join at the same instant.
    std::thread::sleep(Duration::from_millis(500));
    let mut wb = Watch::open(&mut b, &format!("{url}&script=mash"))?;
    let mut natives = Vec::new();
    for ns in [pair.a.clone(), pair.b.clone()] {
        std::thread::sleep(Duration::from_millis(500));
        let mut cmd = pair.command(&ns, &native);
        cmd.args(["--game", "duel", "--room", &format!("{}four", server.signaling)]);
        cmd.args(["--players", "4", "--frames", &frames.to_string(), "--seed", "7"]);
        cmd.args(["--timeout", "900"]);
        natives.push(pair.spawn(cmd, "native p2p_matchbox peer")?);
    }
    // Page A's screenshots: (name, frame, match state, PNG).
    let mut shots: Vec<(&str, u64, String, Vec<u8>)> = Vec::new();
    let mut screens = 0;
    // The frame each page first showed the decided match, and what it said.
    let mut decided: [Option<(u64, Value)>; 2] = [None, None];
    // At a few frames a second on a loaded machine, a match takes minutes.
    let deadline = MATCH_DEADLINE + Duration::from_secs(frames / 60 * 6);
    let started = Instant::now();
    let shown = |d: &Option<(u64, Value)>, w: &Watch| {
        d.as_ref().is_some_and(|(f, _)| w.last["frame"].as_u64().unwrap_or(0) >= f + 60)
    };
    while !(shown(&decided[0], &wa) && shown(&decided[1], &wb)) {
        if started.elapsed() > deadline {
            let peers: Vec<String> = natives.iter().map(Proc::output).collect();
            return Err(format!(
                "the match was not decided within {} s:\npage A: {}\n{}\npage B: {}\n{}\n{}",
                deadline.as_secs(),
                wa.last,
                a.diagnostics(),
                wb.last,
                b.diagnostics(),
                peers.join("\n")
            ));
        }
        for (i, (b, w)) in [(&mut a, &mut wa), (&mut b, &mut wb)].into_iter().enumerate() {
            w.poll(b)?;
            if w.state() != "playing" {
                continue;
            }
            check_screen(["page A", "page B"][i], &w.last)?;
            screens += 1;
            let s = &w.last;
            if s["checksum_mismatches"].as_u64() != Some(0) || s["desyncs"].as_u64() != Some(0) {
                return Err(format!("{} disagrees with another side: {s}", b.name));
            }
            let frame = s["frame"].as_u64().unwrap_or(0);
            let state = s["match"]["state"].as_str().unwrap_or("?").to_string();
            if state == "match_over" && decided[i].is_none() {
                decided[i] = Some((frame, s["match"].clone()));
            }
            let want = i == 0
                && match shots.len() {
                    0 => frame >= 180 && state == "fighting",
                    1 => frame >= 1200 && state == "fighting",
                    2 => state == "match_over",
                    _ => false,
                };
            if want {
                let name = ["duel-4p-early.png", "duel-4p-mid.png", "duel-4p-result.png"];
                shots.push((name[shots.len()], frame, state, b.screenshot()?));
            }
        }
        for p in &natives {
            if let Some(status) = pair.try_wait(p)? {
                return Err(format!("a native peer exited early ({status})\n{}", p.output()));
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let players: BTreeSet<String> =
        [&wa, &wb].iter().map(|w| w.last["player"].to_string()).collect();
    if players.len() != 2 || players.iter().any(|p| p.parse::<u32>().is_ok_and(|p| p > 3)) {
        return Err(format!("the pages are not two of players 0 to 3: {players:?}"));
    }
    // Each page compared its checkpoints with the three other sides' (the latest may
    // still be on its way), and both pages' lists agree as far as both reach.
    for (name, w) in [("page A", &wa), ("page B", &wb)] {
        let s = &w.last;
        let listed = s["checksums"].as_array().map_or(0, Vec::len) as u64;
        let checks = s["checksum_checks"].as_u64().unwrap_or(0);
        if listed < 10 || checks < 3 * (listed - 2) || s["checksums_agree"] != true {
            return Err(format!(
                "{name} compared {checks} checksums for {listed} checkpoints of its own \
                 with 3 other sides: {s}"
            ));
        }
        note(format!("browser 4 players: {}", w.summary(name)));
    }
    let (la, lb) = (&wa.last["checksums"], &wb.last["checksums"]);
    let (la, lb) = (la.as_array().ok_or("no list")?, lb.as_array().ok_or("no list")?);
    let common = la.len().min(lb.len());
    if la[..common] != lb[..common] {
        return Err(format!("the pages' confirmed checksums differ:\n{la:?}\n{lb:?}"));
    }
    let ((fa, ma), (fb, _)) = match &decided {
        [Some(x), Some(y)] => (x.clone(), y.clone()),
        _ => return Err("no page showed the decided match".into()),
    };
    note(format!(
        "browser 4 players: the match was decided at frame {fa} (page A) / {fb} (page B): \
         {ma}; {screens} polls of the screen's state: every text inside the canvas, no \
         fighters or labels overlapping, the result naming its winner; both pages agree on \
         {common} checkpoints (last after frame {})",
        la[common - 1][0]
    ));
    for (name, b) in [("page A", &mut a), ("page B", &mut b)] {
        note(format!("browser 4 players: {name}'s sound: {}", check_sounds(name, b)?));
    }
    for (name, frame, state, png) in &shots {
        let path = save(&m.out, name, png)?;
        let (colours, top) = check_picture(png, 64)?;
        note(format!(
            "browser 4 players: screenshot at frame {frame} ({state}): {} ({colours} \
             colours, commonest {:.1} %)",
            path.display(),
            top * 100.0
        ));
    }
    if shots.len() < 3 {
        return Err(format!("page A's screenshots were not all taken: {}", shots.len()));
    }
    Ok(())
}

/// A browser page and the native `p2p_matchbox --game duel` peer (each in its namespace)
/// play 600 frames in one room: the native peer exits 0 (it compares both sides' checksums)
/// and prints the same final confirmed checksum as the page.
#[test]
#[ignore = "needs root, iproute2, Chromium, wasm32 and wasm-bindgen-cli: cargo test --all-features --test integration browser:: -- --ignored --skip browser::child_role --test-threads 1"]
fn browser_page_and_native_peer_agree() {
    run("browser_page_and_native_peer_agree", true, |m| {
        let native = example("p2p_matchbox").map_err(|p| match p {
            Problem::Unavailable(s) | Problem::Failed(s) => s,
        })?;
        let mut pair = Pair::create(2)?;
        let server = start_server(&mut pair)?;
        let url = format!("{}?room=mixed&players=2&bot=1&frames={FRAMES}", server.page);
        let mut a = Browser::launch("browser A", &m.chromium.0, &pair.a, &m.out)?;
        let mut wa = Watch::open(&mut a, &url)?;
        std::thread::sleep(Duration::from_millis(500));
        let mut cmd = pair.command(&pair.b, &native);
        cmd.args(["--game", "duel", "--room", &format!("{}mixed", server.signaling)]);
        cmd.args(["--players", "2", "--frames", &FRAMES.to_string()]);
        let peer = pair.spawn(cmd, "native p2p_matchbox peer")?;
        // A native peer that gives up ends the wait at once.
        play_out(&mut [(&mut a, &mut wa)], MATCH_DEADLINE, |_| match pair.try_wait(&peer)? {
            Some(status) if !status.success() => {
                Err(format!("the native peer exited early ({status})"))
            }
            _ => Ok(()),
        })
        .map_err(|e| format!("{e}\n{}\n{}", peer.output(), server.proc.output()))?;
        let status = pair.wait(&peer, Duration::from_secs(60))?;
        check_final("page", &wa.last, FRAMES)?;
        note(format!("browser duel: {}", wa.summary("page (vs native)")));
        // `checksum after frame F: HEX (this peer, player P)`
        let said = peer.stdout();
        let mine = said
            .lines()
            .find(|l| l.contains("(this peer"))
            .and_then(|l| l.strip_prefix("checksum after frame "))
            .ok_or_else(|| {
                format!("the native peer printed no checksum line:\n{}", peer.output())
            })?;
        let (frame, rest) = mine.split_once(": ").ok_or("bad checksum line")?;
        let hex = rest.split_whitespace().next().unwrap_or("");
        if !status.success() {
            return Err(format!("the native peer failed ({status}):\n{}", peer.output()));
        }
        if frame.parse::<u64>().ok() != Some(FRAMES - 1)
            || Some(hex) != wa.last["final_checksum"].as_str()
        {
            return Err(format!(
                "native and browser disagree: native frame {frame} {hex}, page {}\n{}",
                wa.last,
                peer.output()
            ));
        }
        let native_player = rest.split("player ").nth(1).map(|p| p.trim_end_matches(')'));
        if native_player.map(str::to_string) == Some(wa.last["player"].to_string()) {
            return Err(format!("both sides claim the same player: {}\n{said}", wa.last));
        }
        note(format!(
            "browser duel: native peer (player {}) and page (player {}) confirm frame {frame}: \
             {hex}",
            native_player.unwrap_or("?"),
            wa.last["player"]
        ));
        Ok(())
    });
}

/// The replay viewer (`?view=replay`) loads a replay recorded natively (1500 frames, so
/// seeking crosses keyframes) and `duel.seek(F)` gives, for frames forwards and backwards,
/// the checksum the native replay reader gives after frame F (and, with feature `cli`, the
/// command line's `replay seek --frame F`). A truncated replay is refused with an error, and
/// the viewer still works afterwards.
#[test]
#[ignore = "needs root, iproute2, Chromium, wasm32 and wasm-bindgen-cli: cargo test --all-features --test integration browser:: -- --ignored --skip browser::child_role --test-threads 1"]
fn replay_viewer_seeks_to_native_checksums() {
    run("replay_viewer_seeks_to_native_checksums", true, |m| {
        let options = MatchOptions { frames: 1500, seed: 3, ..MatchOptions::default() };
        let outcome =
            DuelMatch::new(options).and_then(DuelMatch::run).map_err(|e| e.to_string())?;
        let replay = outcome.replay;
        let bytes = replay.encode();
        let path = m.out.join("duel-1500.replay");
        std::fs::write(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let frames: [u32; 7] = [599, 0, 1499, 600, 1234, 61, 1200];
        let native = |f: u32| -> Result<String, String> {
            let mut w: World<duel::Duel> =
                World::new(duel::content(), &duel::hooks(), replay.header.config)
                    .map_err(|e| e.to_string())?;
            replay.start(&mut w).map_err(|e| e.to_string())?;
            replay.seek(&mut w, f + 1).map_err(|e| e.to_string())?;
            Ok(format!("{:016x}", w.checksum()))
        };
        let expected: Vec<String> = frames.iter().map(|&f| native(f)).collect::<Result<_, _>>()?;
        cli_cross_check(&path, &frames, &expected)?;

        let mut pair = Pair::create(3)?;
        let server = start_server(&mut pair)?;
        let mut a = Browser::launch("browser A", &m.chromium.0, &pair.a, &m.out)?;
        let url = format!("{}?view=replay", server.page);
        let opened = Instant::now();
        a.open(&url)?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while a.eval("window.duelReady === true", Duration::from_secs(10))? != Value::Bool(true) {
            if Instant::now() > deadline {
                return Err(format!("the viewer did not load in 30 s\n{}", a.diagnostics()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let ready = opened.elapsed();
        let t = Duration::from_secs(60);
        let load = |a: &mut Browser, b: &[u8]| {
            a.eval(
                &format!(
                    "duel.loadReplay(Uint8Array.from(atob('{}'), c => c.charCodeAt(0)))",
                    cdp::base64_encode(b)
                ),
                t,
            )
        };
        // A truncated replay: a typed error, no frames.
        let bad = load(&mut a, &bytes[..bytes.len() / 2])?;
        if bad["error"].as_str().is_none_or(str::is_empty) {
            return Err(format!("a truncated replay was accepted: {bad}\n{}", a.diagnostics()));
        }
        note(format!("browser replay viewer: a truncated replay is refused: {}", bad["error"]));
        let loaded_at = Instant::now();
        let good = load(&mut a, &bytes)?;
        if !good["error"].is_null()
            || good["frames"].as_u64() != Some(1500)
            || good["keyframes"].as_u64().is_none_or(|k| k < 2)
        {
            return Err(format!("the replay did not load: {good}\n{}", a.diagnostics()));
        }
        let load_time = loaded_at.elapsed();
        let seeks = Instant::now();
        for (f, want) in frames.iter().zip(&expected) {
            let got = a.eval(&format!("duel.seek({f})"), t)?;
            if got.as_str() != Some(want.as_str()) {
                return Err(format!(
                    "seek({f}): the viewer says {got}, the native replay reader {want}\n{}",
                    a.diagnostics()
                ));
            }
        }
        // A frame outside the replay is an error, not a clamp.
        if let Ok(v) = a.eval("duel.seek(1500)", t) {
            return Err(format!("seek(1500) past the last frame (1499) returned {v}"));
        }
        let status = a.eval("duel.replayStatus()", t)?;
        note(format!(
            "browser replay viewer: wasm ready {:.2} s after opening; replay ({} bytes) loaded \
             in {:.0} ms; {} seeks ({frames:?}) match the native checksums in {:.0} ms; \
             status {status}",
            ready.as_secs_f64(),
            bytes.len(),
            load_time.as_secs_f64() * 1000.0,
            frames.len(),
            seeks.elapsed().as_secs_f64() * 1000.0
        ));
        let png = a.screenshot()?;
        let shot = save(&m.out, "duel-replay-viewer.png", &png)?;
        let (colours, _) = check_picture(&png, 16)?;
        note(format!("browser replay viewer: screenshot {} ({colours} colours)", shot.display()));
        Ok(())
    });
}

/// With feature `cli`: the command-line replay tool (`rollback-abilities replay seek REPLAY
/// --frame F`) prints, for every frame, the same checksum after frame F as the library's
/// replay reader. The tool is the kit's binary (examples/kit), which `cargo test --all-features`
/// at the root builds next to this test binary (`target/debug/rollback-abilities`).
#[cfg(feature = "cli")]
fn cli_cross_check(replay: &Path, frames: &[u32], want: &[String]) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // target/debug/deps/integration-HASH → target/debug/rollback-abilities
    let tool = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join(format!("rollback-abilities{}", std::env::consts::EXE_SUFFIX)))
        .filter(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "the command-line tool is not built next to {}: run `cargo test --all-features` \
                 at the repository's root (it builds the kit's binary) or `cargo build --features \
                 cli`",
                exe.display()
            )
        })?;
    for (frame, want) in frames.iter().zip(want) {
        let out = Command::new(&tool)
            .args(["replay", "seek"])
            .arg(replay)
            .args(["--frame", &frame.to_string()])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout);
        // `after frame F: checksum HEX, N live entities`
        let prefix = format!("after frame {frame}: checksum ");
        let said =
            text.lines().find_map(|l| l.strip_prefix(&prefix)).and_then(|r| r.split(',').next());
        if !out.status.success() || said != Some(want.as_str()) {
            return Err(format!(
                "`rollback-abilities replay seek --frame {frame}` says {said:?}, the reader \
                 {want}:\n{text}{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(())
}

/// Without feature `cli` there is no command-line replay tool to compare with.
#[cfg(not(feature = "cli"))]
fn cli_cross_check(_replay: &Path, _frames: &[u32], _want: &[String]) -> Result<(), String> {
    Ok(())
}

/// The self-test page (served by [`serve_page`]): a colourful canvas, and two
/// `RTCPeerConnection`s in the page that exchange a message over a data channel (no STUN),
/// which needs a host ICE candidate on the namespace's address.
const SELF_TEST_PAGE: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>harness self-test</title></head>
<body style="margin:0;overflow:hidden;background:#123">
<canvas id="c" width="1280" height="720" style="display:block"></canvas>
<script>
const g = document.getElementById("c").getContext("2d");
for (let i = 0; i < 120; i++) {
  g.fillStyle = `hsl(${i * 3}, 80%, ${30 + (i % 5) * 10}%)`;
  g.fillRect(20 + i * 10, 40 + (i * 37) % 500, 60, 60);
}
window.rtc = (async () => {
  const a = new RTCPeerConnection({ iceServers: [] });
  const b = new RTCPeerConnection({ iceServers: [] });
  const candidates = [];
  a.onicecandidate = e => {
    if (e.candidate) { candidates.push(e.candidate.candidate); b.addIceCandidate(e.candidate); }
  };
  b.onicecandidate = e => { if (e.candidate) a.addIceCandidate(e.candidate); };
  const got = new Promise(r => {
    b.ondatachannel = e => { e.channel.onmessage = m => r(m.data); };
  });
  const ch = a.createDataChannel("selftest");
  ch.onopen = () => ch.send("ping over webrtc");
  await a.setLocalDescription();
  await b.setRemoteDescription(a.localDescription);
  await b.setLocalDescription();
  await a.setRemoteDescription(b.localDescription);
  const timeout = new Promise((_, no) => setTimeout(() => {
    no(new Error("no message in 15 s; candidates: " + candidates.join(" | ")));
  }, 15000));
  const message = await Promise.race([got, timeout]);
  a.close(); b.close();
  return { message, candidates };
})();
</script></body></html>
"#;

/// The harness itself, without the game: a small page server (this binary re-executed in
/// namespace A) and a Chromium in namespace B. The page loads across the pair, JavaScript
/// evaluates (a promise too), a WebRTC data channel opens on a host candidate of B's address
/// (and no mDNS name), the screenshot is a picture, and afterwards the namespaces are gone.
#[test]
#[ignore = "needs root, iproute2, Chromium, wasm32 and wasm-bindgen-cli: cargo test --all-features --test integration browser:: -- --ignored --skip browser::child_role --test-threads 1"]
fn harness_self_test_in_namespaces() {
    run("harness_self_test_in_namespaces", false, |m| {
        let names;
        {
            let mut pair = Pair::create(4)?;
            names = [pair.a.clone(), pair.b.clone()];
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            let addr = format!("{}:{PORT}", pair.addr_a);
            let mut cmd = pair.command(&pair.a, exe);
            cmd.args(["browser::child_role", "--exact", "--ignored", "--nocapture"]);
            cmd.args(["--test-threads", "1"]).env(ROLE, "serve-page").env(ARG, &addr);
            let server = pair.spawn(cmd, "self-test page server")?;
            server.wait_line("page server listening on", Duration::from_secs(30))?;
            let started = Instant::now();
            let mut b = Browser::launch("browser B", &m.chromium.0, &pair.b, &m.out)?;
            let launched = started.elapsed();
            b.open(&format!("http://{addr}/"))?;
            let rtc = b.eval("window.rtc", Duration::from_secs(30))?;
            if rtc["message"] != "ping over webrtc" {
                return Err(format!("no data channel message: {rtc}\n{}", b.diagnostics()));
            }
            let candidates: Vec<&str> = rtc["candidates"]
                .as_array()
                .map(|c| c.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let on_b = candidates.iter().any(|c| c.contains(&format!(" {} ", pair.addr_b)));
            if !on_b || candidates.iter().any(|c| c.contains(".local")) {
                return Err(format!("want a host candidate on {}: {candidates:?}", pair.addr_b));
            }
            let png = b.screenshot()?;
            let path = save(&m.out, "harness-self-test.png", &png)?;
            let (colours, top) = check_picture(&png, 32)?;
            note(format!(
                "browser harness: {} started in {:.2} s; page loaded from {addr}; data channel \
                 open with {} host candidate(s) on {}; screenshot {} ({colours} colours, \
                 commonest {:.1} %)",
                m.chromium.1,
                launched.as_secs_f64(),
                candidates.len(),
                pair.addr_b,
                path.display(),
                top * 100.0
            ));
        }
        let left = netns::ip(&["netns", "list"])?;
        if let Some(n) = names.iter().find(|n| left.contains(n.as_str())) {
            return Err(format!("namespace {n} is still there after the guard: {left}"));
        }
        Ok(())
    });
}

/// The role of a re-executed child (see [`harness_self_test_in_namespaces`]); does nothing
/// in a normal run.
#[test]
#[ignore = "a child process of harness_self_test_in_namespaces"]
fn child_role() {
    let Ok(role) = std::env::var(ROLE) else { return };
    let arg = std::env::var(ARG).expect("RBA_BROWSER_ARG");
    match role.as_str() {
        "serve-page" => serve_page(&arg),
        other => panic!("unknown child role {other}"),
    }
}

/// Serves [`SELF_TEST_PAGE`] for every request on `addr`; stops by itself after 120 s.
fn serve_page(addr: &str) {
    let listener = std::net::TcpListener::bind(addr).expect("bind the page server");
    listener.set_nonblocking(true).expect("non-blocking");
    println!("page server listening on {addr}");
    let _ = std::io::stdout().flush();
    let stop = Instant::now() + Duration::from_secs(120);
    while Instant::now() < stop {
        match listener.accept() {
            Ok((mut conn, _)) => {
                let _ = conn.set_nonblocking(false);
                let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
                let mut reader = BufReader::new(match conn.try_clone() {
                    Ok(c) => c,
                    Err(_) => continue,
                });
                let mut line = String::new();
                // The request line and headers, up to the blank line.
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    line.clear();
                }
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{SELF_TEST_PAGE}",
                    SELF_TEST_PAGE.len()
                );
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}
