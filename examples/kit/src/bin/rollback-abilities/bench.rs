//! `bench`: a quick measurement of the reference arena (or your content), each cost as a ratio
//! against a reference measured in the same run. `cargo bench` (criterion, `benches/`) is the
//! precise tool; this answers "how does my machine, my content do" in seconds.

use crate::Failure;
use indicatif::{ProgressBar, ProgressStyle};
use rollback_abilities::scenario::{ScenarioGame, ScenarioInput};
use rollback_abilities::{Game, SnapshotRing, World, WorldConfig};
use rollback_abilities_kit::arena::{Arena, ArenaGame, ArenaSpec};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `bench` arguments.
#[derive(Debug, clap::Args)]
#[command(after_help = "Every line of the table ends in a machine-readable summary:
  bench: entities=N snapshot_bytes=B step_us=X rollback8_us=Y save_ratio=R load_ratio=R checksum_ratio=R
(snapshot_bytes: what a save copies and the checksum covers, World::live_snapshot_bytes;
the memcpy reference copies as many bytes)

Examples:
  rollback-abilities bench --quick
  rollback-abilities bench --entities 64 --entities 1024
  rollback-abilities bench --content my_game/content/ --entities 128

Build with the optimised bench profile for meaningful numbers: cargo run --profile bench --features cli -- bench")]
pub struct BenchArgs {
    /// World sizes (entities) to measure, each 2 to 16384; repeat for several (default: 64, 256
    /// and 1024, or 256 with --quick).
    #[arg(long = "entities", value_name = "N")]
    entities: Vec<u32>,
    /// Your content (a file or a directory) instead of the reference arena: each entity gets
    /// every attribute set, every ability and every duration effect that needs no registered
    /// function; players press ability inputs in a fixed pattern.
    #[arg(long, value_name = "PATH")]
    content: Option<PathBuf>,
    /// Fewer samples and one size: a rough answer in a few seconds.
    #[arg(long)]
    quick: bool,
    /// Samples per measurement, 1 to 10000 (the median is reported; default 31, or 7 with
    /// --quick).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=10_000))]
    samples: Option<u16>,
}

/// The median time of `samples` runs of `f`, each repeated until it takes at least `min`.
fn median(samples: usize, min: Duration, mut f: impl FnMut()) -> Duration {
    let mut reps = 1u32;
    loop {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        if t.elapsed() >= min || reps >= 1 << 20 {
            break;
        }
        reps *= 2;
    }
    let mut times: Vec<Duration> = (0..samples.max(1))
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            t.elapsed() / reps
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// One measured world size.
struct Row {
    entities: u32,
    bytes: usize,
    memcpy: Duration,
    save: Duration,
    load: Duration,
    checksum: Duration,
    step: Duration,
    rollback: Duration,
}

/// Measures a world stepped by `step`.
fn measure<G: Game>(
    entities: u32,
    world: &mut World<G>,
    mut step: impl FnMut(&mut World<G>),
    samples: usize,
    min: Duration,
    bar: &ProgressBar,
) -> Row {
    // The memcpy reference copies as many bytes as a save copies and the checksum covers
    // (`World::live_snapshot_bytes`: the snapshot up to the records in use).
    let bytes = world.live_snapshot_bytes();
    let mut src = world.state_bytes();
    src.truncate(bytes);
    let mut dst = vec![0u8; src.len()];
    bar.set_message(format!("{entities} entities: memcpy, save, load, checksum"));
    let mut snap = world.snapshot();
    // Warm-up, so no sample pays for first-touch page faults or cold caches.
    for _ in 0..16 {
        dst.copy_from_slice(black_box(&src));
        let _ = world.save_into(black_box(&mut snap));
        let _ = world.load(black_box(&snap));
        black_box(world.checksum());
    }
    let memcpy = median(samples, min, || {
        dst.copy_from_slice(black_box(&src));
        black_box(&dst);
    });
    let save = median(samples, min, || {
        let _ = world.save_into(black_box(&mut snap));
    });
    let load = median(samples, min, || {
        let _ = world.load(black_box(&snap));
    });
    let checksum = median(samples, min, || {
        black_box(world.checksum());
    });
    bar.inc(1);
    bar.set_message(format!("{entities} entities: step and rollback"));
    let start = world.snapshot();
    // The mean step over the next STEP_FRAMES frames from the same state each time (frames
    // differ in work; one frame alone under-reports a busy timeline), the load taken off.
    const STEP_FRAMES: u32 = 32;
    let steps_and_load = median(samples, min, || {
        for _ in 0..STEP_FRAMES {
            step(world);
        }
        let _ = world.load(&start);
    });
    // An 8-frame rollback as GGRS asks for it and the session runner answers: load, then
    // 8 × (step + save with its checksum).
    let mut ring = SnapshotRing::new(world, 10);
    let rollback = median(samples, min, || {
        let _ = world.load(&start);
        for _ in 0..8 {
            step(world);
            black_box(ring.save_checksummed(world));
        }
    });
    let _ = world.load(&start);
    bar.inc(1);
    Row {
        entities,
        bytes,
        memcpy,
        save,
        load,
        checksum,
        step: steps_and_load.saturating_sub(load) / STEP_FRAMES,
        rollback,
    }
}

/// A world of `n` entities on user content, set up as the `--content` help says.
fn content_world(
    content: Arc<rollback_abilities::Content>,
    n: u32,
) -> Result<World<ScenarioGame>, Failure> {
    rollback_abilities_kit::content_world::world(content, n, 2, WorldConfig::default().seed)
        .map_err(Failure::Usage)
}

fn us(d: Duration) -> String {
    format!("{:>9.1} µs", d.as_secs_f64() * 1e6)
}

/// `bench`.
pub fn run(args: &BenchArgs) -> Result<(), Failure> {
    let sizes = match (&args.entities[..], args.quick) {
        ([], true) => vec![256],
        ([], false) => vec![64, 256, 1024],
        (given, _) => given.to_vec(),
    };
    if let Some(bad) = sizes.iter().find(|n| **n < 2 || **n > 16_384) {
        return Err(Failure::Usage(format!("--entities {bad}: use 2 to 16384 entities")));
    }
    let samples = args.samples.map_or(if args.quick { 7 } else { 31 }, usize::from);
    let min = if args.quick { Duration::from_micros(500) } else { Duration::from_millis(2) };
    let content = match &args.content {
        Some(p) => Some(Arc::new(crate::scenarios::load_content(p)?)),
        None => None,
    };
    if cfg!(debug_assertions) {
        eprintln!(
            "note: this is a debug build; run `cargo run --profile bench --features cli -- bench` for \
             meaningful numbers"
        );
    }
    let bar = ProgressBar::new(sizes.len() as u64 * 2);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut rows = Vec::new();
    for &n in &sizes {
        bar.set_message(format!("{n} entities: building"));
        let row = match &content {
            None => {
                let mut arena = Arena::new(ArenaSpec { entities: n, ..ArenaSpec::default() });
                let step = |w: &mut World<ArenaGame>| {
                    let f = w.next_frame();
                    w.step(&Arena::player_inputs(f));
                };
                measure(n, &mut arena.world, step, samples, min, &bar)
            }
            Some(c) => {
                let mut w = content_world(c.clone(), n)?;
                let step = |w: &mut World<ScenarioGame>| {
                    let f = w.next_frame();
                    // Each player presses input (f / 7) % 8 for a frame every 7 frames.
                    let press = |p: u32| ScenarioInput {
                        held: if (f + p).is_multiple_of(7) { 1 << ((f / 7 + p) % 8) } else { 0 },
                        buttons: 0,
                    };
                    w.step(&[press(0), press(1)]);
                };
                measure(n, &mut w, step, samples, min, &bar)
            }
        };
        rows.push(row);
    }
    bar.finish_and_clear();
    let what = match &args.content {
        Some(p) => format!("content {}", p.display()),
        None => "the reference arena (docs/performance.md)".to_string(),
    };
    println!("{what}, medians of {samples} samples:");
    println!(
        "{:>8} {:>10} {:>12} {:>12} {:>6} {:>12} {:>6} {:>12} {:>6} {:>12} {:>12} {:>9}",
        "entities",
        "snapshot",
        "memcpy",
        "save",
        "×",
        "load",
        "×",
        "checksum",
        "×",
        "step",
        "rollback 8",
        "of 16.7ms"
    );
    let mut summaries = Vec::new();
    for r in &rows {
        let ratio = |d: Duration| d.as_secs_f64() / r.memcpy.as_secs_f64().max(1e-12);
        println!(
            "{:>8} {:>6} KiB {} {} {:>6.2} {} {:>6.2} {} {:>6.2} {} {} {:>8.1}%",
            r.entities,
            r.bytes / 1024,
            us(r.memcpy),
            us(r.save),
            ratio(r.save),
            us(r.load),
            ratio(r.load),
            us(r.checksum),
            ratio(r.checksum),
            us(r.step),
            us(r.rollback),
            r.rollback.as_secs_f64() / (1.0 / 60.0) * 100.0
        );
        summaries.push(format!(
            "bench: entities={} snapshot_bytes={} step_us={:.2} rollback8_us={:.2} \
             save_ratio={:.3} load_ratio={:.3} checksum_ratio={:.3}",
            r.entities,
            r.bytes,
            r.step.as_secs_f64() * 1e6,
            r.rollback.as_secs_f64() * 1e6,
            ratio(r.save),
            ratio(r.load),
            ratio(r.checksum)
        ));
    }
    println!("(× = time relative to a memcpy of the same bytes, measured in the same run)");
    for s in summaries {
        println!("{s}");
    }
    Ok(())
}
