//! Snapshot costs on the reference arena (256 fighters, `docs/performance.md`): save, load and
//! checksum against a `copy_from_slice` of the same number of bytes measured in the same run,
//! and against the two baselines users start from: the GGRS example's save pattern (clone an
//! owned serde struct, serialize it bincode-1.3 style, fletcher16 the bytes) and cloning an
//! idiomatic `HashMap`/`Vec` world of the same content.
//!
//! ```sh
//! cargo bench --bench snapshot
//! ```
//!
//! After criterion's own report, a table of ratios (each against its reference from this run)
//! and the targets they are held to is printed.

use criterion::{Bencher, Criterion, Throughput};
use rollback_abilities_kit::arena::baseline::{
    GgrsState, IdiomaticWorld, ggrs_save, serialize_fixint,
};
use rollback_abilities_kit::arena::{Arena, ArenaSpec};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

// ---- per-iteration medians, recorded from criterion's own samples --------------------------

const SAMPLES: usize = 60;

thread_local! {
    static TIMES: RefCell<BTreeMap<&'static str, Vec<f64>>> = const { RefCell::new(BTreeMap::new()) };
}

/// Runs `f` under criterion and records each sample's time per iteration under `name`.
fn measure(b: &mut Bencher<'_>, name: &'static str, mut f: impl FnMut()) {
    b.iter_custom(|iters| {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        let d = t.elapsed();
        let per = d.as_nanos() as f64 / iters.max(1) as f64;
        TIMES.with(|m| m.borrow_mut().entry(name).or_default().push(per));
        d
    });
}

/// The median time per iteration (ns) of the measurement samples of `name` (criterion's
/// warm-up calls come first and are skipped).
fn median(name: &str) -> Option<f64> {
    TIMES.with(|m| {
        let m = m.borrow();
        let v = m.get(name)?;
        let mut s: Vec<f64> = v[v.len().saturating_sub(SAMPLES)..].to_vec();
        s.sort_by(f64::total_cmp);
        s.get(s.len() / 2).copied()
    })
}

fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1000.0)
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();

    let mut arena = Arena::new(ArenaSpec::default());
    for _ in 0..120 {
        arena.step();
    }
    let entities = arena.fighters.len();
    // The bytes a save copies and the checksum covers (`World::live_snapshot_bytes`: the
    // snapshot up to the records in use): the memcpy reference copies as many.
    let bytes = arena.world.live_snapshot_bytes();
    let mut src = arena.world.state_bytes();
    src.truncate(bytes);
    let mut dst = vec![0u8; bytes];
    let mut snap = arena.world.snapshot();
    let ggrs_state = GgrsState::from_world(&arena.world);
    let mut ggrs_buf = Vec::new();
    let _ = serialize_fixint(&ggrs_state, &mut ggrs_buf);
    let ggrs_bytes = ggrs_buf.len();
    let mut ggrs_cell = Some(ggrs_state.clone());
    let idiomatic = IdiomaticWorld::from_world(&arena.world);
    let idiomatic_allocs = idiomatic.allocations();
    let mut idiomatic_cell = Some(idiomatic.clone());

    {
        let world = &mut arena.world;
        let mut g = c.benchmark_group("snapshot/arena-256");
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function("memcpy", |b| {
            measure(b, "memcpy", || {
                dst.copy_from_slice(black_box(&src));
                black_box(&mut dst);
            })
        });
        g.bench_function("save_into", |b| {
            measure(b, "save", || {
                let _ = world.save_into(black_box(&mut snap));
            })
        });
        g.bench_function("load", |b| {
            measure(b, "load", || {
                let _ = world.load(black_box(&snap));
            })
        });
        g.bench_function("checksums", |b| {
            measure(b, "checksum", || {
                black_box(world.checksums());
            })
        });
        g.bench_function("xxh3_64_one_shot", |b| {
            measure(b, "xxh3", || {
                black_box(twox_hash::XxHash3_64::oneshot(black_box(&src)));
            })
        });
        g.bench_function("save_and_checksum", |b| {
            measure(b, "save+checksum", || {
                black_box(world.save_into_checksummed(black_box(&mut snap)).ok());
            })
        });
        g.bench_function("save_then_checksum", |b| {
            measure(b, "save,checksum", || {
                let _ = world.save_into(black_box(&mut snap));
                black_box(world.checksums());
            })
        });
        g.bench_function("ggrs_example_pattern", |b| {
            measure(b, "ggrs", || {
                black_box(ggrs_save(black_box(&ggrs_state), &mut ggrs_cell, ggrs_bytes));
            })
        });
        g.bench_function("idiomatic_clone", |b| {
            measure(b, "idiomatic", || {
                idiomatic_cell = Some(black_box(&idiomatic).clone());
                black_box(&idiomatic_cell);
            })
        });
        g.finish();
    }
    c.final_summary();

    // ---- ratios ----------------------------------------------------------------------------
    println!();
    println!(
        "arena-256: {entities} fighters, snapshot {bytes} bytes ({} bytes/fighter)",
        bytes / entities
    );
    println!(
        "  GGRS-pattern state serializes to {ggrs_bytes} bytes; the idiomatic world clone makes {idiomatic_allocs} heap allocations"
    );
    let m = |n: &str| median(n);
    let row =
        |what: &str, num: Option<f64>, den: Option<f64>, target: &str, ok: fn(f64) -> bool| {
            if let (Some(a), Some(b)) = (num, den) {
                let r = a / b;
                let verdict = if target.is_empty() {
                    String::new()
                } else if ok(r) {
                    format!("target {target}: MET")
                } else {
                    format!("target {target}: MISSED")
                };
                println!("  {what:<44} {:>10} / {:>10} = {r:>7.2}×  {verdict}", us(a), us(b));
            }
        };
    println!("ratios (median per iteration, same run):");
    row("save / memcpy", m("save"), m("memcpy"), "≤ 1.25×", |r| r <= 1.25);
    row("load / memcpy", m("load"), m("memcpy"), "≤ 1.25×", |r| r <= 1.25);
    row("checksum / memcpy", m("checksum"), m("memcpy"), "", |_| true);
    row("xxh3 one-shot / memcpy", m("xxh3"), m("memcpy"), "", |_| true);
    row("save+checksum (one pass) / memcpy", m("save+checksum"), m("memcpy"), "≤ 2×", |r| {
        r <= 2.0
    });
    row("save, then checksum (two passes) / memcpy", m("save,checksum"), m("memcpy"), "", |_| true);
    row("GGRS pattern / (save+checksum)", m("ggrs"), m("save+checksum"), "≥ 30×", |r| r >= 30.0);
    row("idiomatic clone / (save+checksum)", m("idiomatic"), m("save+checksum"), "≥ 4×", |r| {
        r >= 4.0
    });
}
