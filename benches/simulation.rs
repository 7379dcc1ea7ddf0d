//! Simulation costs on the reference arena (`docs/performance.md`): `World::step` per fighter and
//! per active effect, a full 8-frame rollback (load + 8 × (step + save + checksum)), scaling
//! from 64 to 4096 fighters, and the cue director's reconcile per rollback batch. Each is also
//! printed as a ratio against a reference measured in the same run (a `copy_from_slice` of the
//! snapshot's bytes, or the 256-fighter cost per fighter for scaling). At 256 fighters it also
//! runs the rollback into the 10-slot ring and into one snapshot alternately (what the ring's
//! out-of-cache slots cost) and counts how much of the saved state changes per frame.
//!
//! ```sh
//! cargo bench --bench simulation
//! ```

use criterion::{Bencher, BenchmarkId, Criterion};
use rollback_abilities::present::{Cue, CueDirector, Presenter, RemoveReason};
use rollback_abilities::{FrameOutput, Snapshot, SnapshotRing};
use rollback_abilities_kit::arena::{Arena, ArenaGame, ArenaSpec};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

// ---- per-iteration medians, recorded from criterion's own samples --------------------------

thread_local! {
    static TIMES: RefCell<BTreeMap<String, (usize, Vec<f64>)>> = const { RefCell::new(BTreeMap::new()) };
}

fn record(name: &str, samples: usize, per_iter_ns: f64) {
    TIMES.with(|m| {
        let mut m = m.borrow_mut();
        let e = m.entry(name.to_string()).or_insert((samples, Vec::new()));
        e.1.push(per_iter_ns);
    });
}

/// Runs `f` under criterion and records each sample's time per iteration under `name`.
fn measure(b: &mut Bencher<'_>, name: &str, samples: usize, mut f: impl FnMut()) {
    b.iter_custom(|iters| {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        let d = t.elapsed();
        record(name, samples, d.as_nanos() as f64 / iters.max(1) as f64);
        d
    });
}

/// The median time per iteration (ns) of the measurement samples of `name`.
fn median(name: &str) -> Option<f64> {
    TIMES.with(|m| {
        let m = m.borrow();
        let (n, v) = m.get(name)?;
        let mut s: Vec<f64> = v[v.len().saturating_sub(*n)..].to_vec();
        s.sort_by(f64::total_cmp);
        s.get(s.len() / 2).copied()
    })
}

fn us(ns: f64) -> String {
    if ns >= 1e6 { format!("{:.2} ms", ns / 1e6) } else { format!("{:.2} µs", ns / 1e3) }
}

const SIZES: [u32; 4] = [64, 256, 1024, 4096];

fn arena(entities: u32) -> Arena {
    let mut a = Arena::new(ArenaSpec { entities, ..ArenaSpec::default() });
    for _ in 0..120 {
        a.step();
    }
    a
}

/// A presenter that only counts.
#[derive(Default)]
struct Counting {
    calls: u64,
}

impl Presenter for Counting {
    fn play(&mut self, _: &Cue) {
        self.calls += 1;
    }
    fn cancel(&mut self, _: &Cue) {
        self.calls += 1;
    }
    fn on_active(&mut self, _: &Cue) {
        self.calls += 1;
    }
    fn while_active(&mut self, _: &Cue) {
        self.calls += 1;
    }
    fn removed(&mut self, _: &Cue, _: RemoveReason) {
        self.calls += 1;
    }
    fn confirmed(&mut self, _: &Cue) {
        self.calls += 1;
    }
}

/// Recorded frames for the director: the state after each frame and its output.
struct Recorded {
    snaps: Vec<Snapshot<ArenaGame>>,
    outs: Vec<FrameOutput>,
}

const WINDOW: usize = 8;

/// Runs one rollback batch ending at recorded frame `k` (frames `k-7..=k` re-simulated, frames
/// up to `k-8` confirmed) through the director; returns the time of the director calls only.
fn batch(
    a: &mut Arena,
    rec: &Recorded,
    k: usize,
    d: &mut CueDirector,
    p: &mut Counting,
) -> Duration {
    let _ = a.world.load(&rec.snaps[k]);
    let first = a.world.frame() - (WINDOW as u32 - 1);
    let t = Instant::now();
    d.rewound_to(first);
    for out in &rec.outs[k + 1 - WINDOW..=k] {
        d.ingest(out);
    }
    d.reconcile(&a.world, Some(first - 1), p);
    t.elapsed()
}

/// `ARENA_PROFILE=<fighters>:<frames>[:rollback|:director]`: no criterion; builds the arena,
/// steps it `frames` frames (or runs that many 8-frame rollbacks, or that many cue-director
/// batches over recorded frames) and exits, for profilers:
///
/// ```sh
/// ARENA_PROFILE=256:200 valgrind --tool=callgrind --toggle-collect='*Arena*step*' \
///     target/release/deps/simulation-<hash>
/// ```
fn profile(spec: &str) {
    let mut parts = spec.split(':');
    let n = parts.next().and_then(|v| v.parse().ok()).unwrap_or(256);
    let frames: u32 = parts.next().and_then(|v| v.parse().ok()).unwrap_or(200);
    let mode = parts.next().unwrap_or("step");
    let rollback = mode == "rollback";
    let mut a = arena(n);
    let mut ring = SnapshotRing::new(&a.world, 10);
    if mode == "director" {
        let rec = record_frames(&mut a, 72);
        let mut d = CueDirector::new();
        let mut p = Counting::default();
        let mut k = WINDOW - 1;
        let mut spent = Duration::ZERO;
        for _ in 0..frames {
            if k == rec.outs.len() {
                d = CueDirector::new();
                k = WINDOW - 1;
            }
            spent += batch(&mut a, &rec, k, &mut d, &mut p);
            k += 1;
        }
        println!("profiled arena-{n}: {frames} director batches, {spent:?} in the director");
        return;
    }
    let t = Instant::now();
    if rollback {
        for _ in 0..8 {
            ring.save(&a.world);
            a.step();
        }
        let from = a.world.next_frame() - 8;
        for _ in 0..frames {
            ring.load(&mut a.world, from);
            for _ in 0..8 {
                black_box(ring.save_checksummed(&a.world));
                a.step();
            }
        }
    } else {
        let mut sums = [0usize; 8];
        for _ in 0..frames {
            let out = black_box(a.step());
            let counts = [
                out.attr_events.len(),
                out.tag_events.len(),
                out.effect_events.len(),
                out.executions.len(),
                out.ability_events.len(),
                out.gameplay_events.len(),
                out.cues.len(),
                a.periodic_executions(),
            ];
            for (s, c) in sums.iter_mut().zip(counts) {
                *s += c;
            }
        }
        let names =
            ["attr", "tag", "effect", "execution", "ability", "gameplay", "cue", "periodic"];
        let per: Vec<String> = names
            .iter()
            .zip(sums)
            .map(|(n, s)| format!("{n} {:.1}", s as f64 / f64::from(frames.max(1))))
            .collect();
        println!("records per frame: {}", per.join(", "));
    }
    println!(
        "profiled arena-{n}: {frames} {} in {:?}",
        if rollback { "rollbacks" } else { "frames" },
        t.elapsed()
    );
}

/// Steps `frames` frames, keeping each frame's output and the state after it.
fn record_frames(a: &mut Arena, frames: usize) -> Recorded {
    let mut rec = Recorded { snaps: Vec::new(), outs: Vec::new() };
    for _ in 0..frames {
        let out = a.step().clone();
        rec.outs.push(out);
        rec.snaps.push(a.world.snapshot());
    }
    rec
}

fn main() {
    if let Ok(spec) = std::env::var("ARENA_PROFILE") {
        profile(&spec);
        return;
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    let mut memcpy_ns: BTreeMap<u32, f64> = BTreeMap::new();
    let mut bytes_of: BTreeMap<u32, usize> = BTreeMap::new();
    let mut director_calls = (0u64, 0usize);

    for n in SIZES {
        let samples = if n >= 1024 { 15 } else { 40 };
        let mut a = arena(n);
        // The bytes a save copies (`World::live_snapshot_bytes`: up to the records in use).
        let bytes = a.world.live_snapshot_bytes();
        bytes_of.insert(n, bytes);
        let mut src = a.world.state_bytes();
        src.truncate(bytes);
        let mut dst = vec![0u8; bytes];
        let mut ring = SnapshotRing::new(&a.world, 10);
        let mut g = c.benchmark_group("simulation");
        g.sample_size(samples);
        if n >= 1024 {
            g.measurement_time(Duration::from_secs(8));
        }
        g.bench_function(BenchmarkId::new("memcpy_snapshot", n), |b| {
            measure(b, &format!("memcpy/{n}"), samples, || {
                dst.copy_from_slice(black_box(&src));
                black_box(&mut dst);
            })
        });
        g.bench_function(BenchmarkId::new("step", n), |b| {
            measure(b, &format!("step/{n}"), samples, || {
                black_box(a.step());
            })
        });
        g.bench_function(BenchmarkId::new("save_and_checksum", n), |b| {
            measure(b, &format!("save+checksum/{n}"), samples, || {
                black_box(ring.save_checksummed(&a.world));
            })
        });
        // A full 8-frame rollback: load the state of 8 frames ago, then 8 × (save + checksum +
        // step), as a GGRS session does after a misprediction.
        for _ in 0..8 {
            ring.save(&a.world);
            a.step();
        }
        let from = a.world.next_frame() - 8;
        g.bench_function(BenchmarkId::new("rollback_8", n), |b| {
            measure(b, &format!("rollback/{n}"), samples, || {
                ring.load(&mut a.world, from);
                for _ in 0..8 {
                    black_box(ring.save_checksummed(&a.world));
                    a.step();
                }
            })
        });
        if n == 256 {
            // The same rollback saving into one snapshot instead of the ring, interleaved with
            // the ring's iteration by iteration (this VM's speed changes by up to 2× from one
            // minute to the next, so two benches run one after the other do not compare): what
            // the ring's slots cost by being out of cache (each save writes a slot last written
            // 10 frames ago, 7.6 MB of other slots in between).
            let mut one = SnapshotRing::new(&a.world, 1);
            let start = a.world.snapshot();
            let rollback = |a: &mut Arena, ring: &mut SnapshotRing<ArenaGame>| {
                let t = Instant::now();
                let _ = a.world.load(&start);
                for _ in 0..8 {
                    black_box(ring.save_checksummed(&a.world));
                    a.step();
                }
                t.elapsed()
            };
            g.bench_function(BenchmarkId::new("rollback_8_ring_then_one_slot", n), |b| {
                b.iter_custom(|iters| {
                    let (mut in_ring, mut in_one) = (Duration::ZERO, Duration::ZERO);
                    for _ in 0..iters {
                        in_ring += rollback(&mut a, &mut ring);
                        in_one += rollback(&mut a, &mut one);
                    }
                    let per = |d: Duration| d.as_nanos() as f64 / iters.max(1) as f64;
                    record(&format!("pair_ring/{n}"), samples, per(in_ring));
                    record(&format!("pair_one_slot/{n}"), samples, per(in_one));
                    record(&format!("pair_ratio/{n}"), samples, per(in_one) / per(in_ring));
                    in_ring + in_one
                })
            });
            let _ = a.world.load(&start);
        }
        g.finish();
        if let Some(m) = median(&format!("memcpy/{n}")) {
            memcpy_ns.insert(n, m);
        }

        if n == 256 {
            // The cue director: one rollback batch (8 re-simulated frames) per iteration.
            let rec = record_frames(&mut a, 72);
            let cues: usize = rec.outs.iter().map(|o| o.cues.len()).sum();
            director_calls.1 = cues / rec.outs.len();
            let mut g = c.benchmark_group("cue_director");
            g.sample_size(40);
            g.bench_function(BenchmarkId::new("reconcile_batch_8", n), |b| {
                b.iter_custom(|iters| {
                    let mut d = CueDirector::new();
                    let mut p = Counting::default();
                    let mut total = Duration::ZERO;
                    let mut k = WINDOW - 1;
                    // Warm the director up (its first batch shows everything).
                    for _ in 0..WINDOW {
                        batch(&mut a, &rec, k, &mut d, &mut p);
                        k += 1;
                    }
                    for _ in 0..iters {
                        if k == rec.outs.len() {
                            d = CueDirector::new();
                            k = WINDOW - 1;
                            for _ in 0..WINDOW {
                                batch(&mut a, &rec, k, &mut d, &mut p);
                                k += 1;
                            }
                        }
                        total += batch(&mut a, &rec, k, &mut d, &mut p);
                        k += 1;
                    }
                    director_calls.0 = p.calls;
                    record("director/256", 40, total.as_nanos() as f64 / iters.max(1) as f64);
                    total
                })
            });
            g.finish();
        }
    }
    c.final_summary();

    // ---- ratios ----------------------------------------------------------------------------
    println!();
    println!("ratios (median per iteration, same run):");
    let per = |name: &str, n: u32| median(&format!("{name}/{n}")).map(|t| t / n as f64);
    for n in SIZES {
        let (Some(step), Some(mc)) = (median(&format!("step/{n}")), memcpy_ns.get(&n)) else {
            continue;
        };
        let bytes = bytes_of.get(&n).copied().unwrap_or(0);
        println!(
            "  arena-{n:<5} snapshot {:>9} B   step {:>10} = {:>6.1}× memcpy   {:>7.1} ns/fighter   {:>5.2} ns/active effect",
            bytes,
            us(step),
            step / mc,
            step / n as f64,
            step / (24.0 * n as f64),
        );
        if let Some(sc) = median(&format!("save+checksum/{n}")) {
            println!(
                "               save+checksum {:>10} = {:>5.2}× memcpy   {:>7.1} ns/fighter",
                us(sc),
                sc / mc,
                sc / n as f64
            );
        }
        if let Some(rb) = median(&format!("rollback/{n}")) {
            println!(
                "               rollback-8 {:>10} = {:>6.1}× memcpy   {:>5.1}% of a 16.67 ms frame{}",
                us(rb),
                rb / mc,
                rb / 16.67e4,
                if n == 256 {
                    if rb <= 1e6 { "   target ≤ 1 ms: MET" } else { "   target ≤ 1 ms: MISSED" }
                } else {
                    ""
                }
            );
        }
        if let (Some(ring), Some(one), Some(r)) = (
            median(&format!("pair_ring/{n}")),
            median(&format!("pair_one_slot/{n}")),
            median(&format!("pair_ratio/{n}")),
        ) {
            println!(
                "               rollback-8 interleaved: 10-slot ring {:>10}, one slot {:>10} (median ratio {r:.2})",
                us(ring),
                us(one),
            );
        }
        if n == 256 {
            println!(
                "               step target ≤ 50 µs: {}",
                if step <= 50e3 { "MET" } else { "MISSED" }
            );
        }
    }
    println!("scaling (cost per fighter relative to arena-256; target within ±25 % up to 4096):");
    for what in ["step", "save+checksum", "rollback"] {
        let Some(base) = per(what, 256) else { continue };
        let mut line = format!("  {what:<14}");
        let mut worst: f64 = 1.0;
        for n in SIZES {
            if let Some(p) = per(what, n) {
                line += &format!("  {n}: {:>5.2}×", p / base);
                if n >= 256 {
                    worst =
                        if (p / base - 1.0).abs() > (worst - 1.0).abs() { p / base } else { worst };
                }
            }
        }
        let ok = (worst - 1.0).abs() <= 0.25;
        println!("{line}   {}", if ok { "MET" } else { "MISSED" });
    }
    if let Some(d) = median("director/256") {
        println!(
            "  cue director reconcile per 8-frame batch (arena-256, ~{} cue records per frame): {} ({:.2}× memcpy of the snapshot); presenter calls so far {}",
            director_calls.1,
            us(d),
            d / memcpy_ns.get(&256).copied().unwrap_or(f64::NAN),
            director_calls.0
        );
    }
    if TIMES.with(|m| m.borrow().contains_key("step/256")) {
        snapshot_churn();
    }
}

/// How much of arena-256's saved bytes change from one frame to the next, over ten frames, and
/// between a frame and the same frame re-simulated with one player's inputs mispredicted: the
/// case for a ring that keeps per-frame differences instead of whole copies
/// (`docs/performance.md`, "What limits the misses"). Counts, not times.
fn snapshot_churn() {
    fn changed(a: &[u8], b: &[u8], unit: usize) -> f64 {
        let n = a.chunks(unit).zip(b.chunks(unit)).filter(|(x, y)| x != y).count();
        n as f64 / a.len().div_ceil(unit) as f64
    }
    fn spread(mut v: Vec<f64>) -> String {
        v.sort_by(f64::total_cmp);
        format!(
            "{:.2}–{:.2} % (median {:.2} %)",
            100.0 * v[0],
            100.0 * v[v.len() - 1],
            100.0 * v[v.len() / 2]
        )
    }
    let mut a = arena(256);
    let live = a.world.live_snapshot_bytes();
    let mut states = vec![a.world.state_bytes()];
    for _ in 0..110 {
        a.step();
        states.push(a.world.state_bytes());
    }
    let pairs = |gap: usize, unit: usize| {
        (gap..states.len())
            .map(|i| changed(&states[i - gap][..live], &states[i][..live], unit))
            .collect::<Vec<_>>()
    };
    println!(
        "snapshot churn, arena-256 ({live} bytes saved per frame; 64-byte lines, 4 KiB pages changed):"
    );
    println!(
        "  next frame:       lines {}   pages {}",
        spread(pairs(1, 64)),
        spread(pairs(1, 4096))
    );
    println!(
        "  10 frames later:  lines {}   pages {}",
        spread(pairs(10, 64)),
        spread(pairs(10, 4096))
    );
    // The same 8 frames with player 0's inputs mispredicted, against the true ones.
    let start = a.world.snapshot();
    let mut truth = Vec::new();
    for _ in 0..8 {
        a.step();
        truth.push(a.world.state_bytes());
    }
    let _ = a.world.load(&start);
    let (mut lines, mut pages) = (Vec::new(), Vec::new());
    for (k, t) in truth.iter().enumerate() {
        let mut inputs = Arena::player_inputs(a.world.next_frame());
        inputs[0] = inputs[0].wrapping_add(1 + k as u8) & 0x0f;
        a.world.step(&inputs);
        let s = a.world.state_bytes();
        lines.push(changed(&t[..live], &s[..live], 64));
        pages.push(changed(&t[..live], &s[..live], 4096));
    }
    println!(
        "  mispredicted vs true, same frame (8 frames): lines {}   pages {}",
        spread(lines),
        spread(pages)
    );
}
