//! `fuzz`: the determinism harness (`rollback_abilities::fuzz`) on the duel, the reference arena
//! or data-only content, with a budget of iterations or seconds, a progress bar, and every
//! finding printed with the commands that replay it.

use crate::Failure;
use indicatif::{ProgressBar, ProgressStyle};
use rollback_abilities::Game;
use rollback_abilities::fuzz::{Finding, FuzzConfig, Fuzzer, Setup};
use rollback_abilities::scenario::ScenarioGame;
use rollback_abilities_kit::arena::{Arena, ArenaGame, ArenaSpec};
use rollback_abilities_kit::content_world;
use rollback_abilities_kit::duel::{self, Duel};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `fuzz` arguments.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Each iteration is one random byte string, turned into a case (2-4 players, up to
--max-frames frames of inputs, rollback depths up to 8, network loss, jitter and reordering,
sometimes a player quitting) and run straight, rolled back, as a replay and as emulated peers.
A difference is a finding: its runs, first frame and differing fields are printed, with the
commands that replay it; its replays are written under --out.

With --content, the game is your data-only content: --entities entities, each with every
attribute set, every ability granted and every effect applied once; player p holds random
ability inputs of entity p. Content that names executions, calculations or behaviours needs its
functions registered: fuzz it from Rust (examples/fuzz_my_game/). With --arena, the game is the
benchmarks' reference arena (2 players, scripted fighters).

Examples:
  rollback-abilities fuzz --iterations 200
  rollback-abilities fuzz --seconds 60 --seed 7 --out target/fuzz-findings
  rollback-abilities fuzz --content my_game/content/ --entities 6 --iterations 500
  rollback-abilities fuzz --arena --iterations 50

Your own game fuzzes with the same harness from Rust: examples/fuzz_my_game/."
)]
pub struct FuzzArgs {
    /// Iterations to run (default 100 unless --seconds is given).
    #[arg(long, value_name = "N")]
    iterations: Option<u64>,
    /// Stop after this many seconds (checked between iterations).
    #[arg(long, value_name = "S")]
    seconds: Option<u64>,
    /// The campaign seed: the same seed runs the same byte strings.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The most frames a case runs, 16 to 3600.
    #[arg(long, value_name = "N", default_value_t = 240,
          value_parser = clap::value_parser!(u32).range(16..=3600))]
    max_frames: u32,
    /// Fuzz this data-only content (a file or a directory of `.ron` files) instead of the duel.
    #[arg(long, value_name = "PATH", conflicts_with = "arena")]
    content: Option<PathBuf>,
    /// Entities of the --content world, 1 to 256 (players own the first ones).
    #[arg(long, value_name = "N", default_value_t = 6, requires = "content",
          value_parser = clap::value_parser!(u32).range(1..=256))]
    entities: u32,
    /// Fuzz the reference arena (8 fighters, 2 players) instead of the duel.
    #[arg(long)]
    arena: bool,
    /// Where findings' replays and bytes are written.
    #[arg(long, value_name = "DIR", default_value = "target/fuzz-findings")]
    out: PathBuf,
}

/// Runs the campaign; a finding is a failed check (exit status 1).
pub fn run(args: &FuzzArgs) -> Result<(), Failure> {
    let config = FuzzConfig {
        max_frames: args.max_frames,
        replay_dir: Some(args.out.clone()),
        ..FuzzConfig::default()
    };
    if let Some(path) = &args.content {
        let content = Arc::new(crate::scenarios::load_content(path)?);
        // Refuse content the tool cannot run before the campaign, with the reason.
        content_world::world(content.clone(), args.entities, 2, 0).map_err(Failure::Usage)?;
        let entities = args.entities;
        let fuzzer = Fuzzer::<ScenarioGame>::new(move |s: &Setup| {
            content_world::world(content.clone(), entities, s.players, s.seed)
        })
        .with_input(content_world::input)
        .with_config(FuzzConfig {
            max_players: config.max_players.min(entities as usize),
            ..config
        });
        let what = format!("content {}", path.display());
        return campaign(&fuzzer, args, &what, &format!(" --content {}", path.display()));
    }
    if args.arena {
        let spec = rollback_abilities_kit::arena::fuzz_spec();
        let fuzzer = Fuzzer::<ArenaGame>::new(move |s: &Setup| {
            if s.players != 2 {
                return Err(format!("the arena has 2 players, not {}", s.players));
            }
            Ok(Arena::ready(ArenaSpec { seed: s.seed, ..spec }).world)
        })
        .with_config(FuzzConfig { min_players: 2, max_players: 2, ..config });
        return campaign(&fuzzer, args, "the reference arena", "");
    }
    let fuzzer = Fuzzer::<Duel>::new(|s: &Setup| duel::try_new_world(s.seed, s.players))
        .with_input(|b| duel::Input {
            buttons: b.first().copied().unwrap_or(0) & duel::Input::ALL,
            axis: b.get(1).copied().unwrap_or(0) as i8,
        })
        .with_config(config);
    campaign(&fuzzer, args, "the duel", "")
}

/// Runs `fuzzer`'s campaign within the budget of `args`; `replay_args` are the arguments the
/// replay commands of a finding need (`--content PATH` for content).
fn campaign<G: Game>(
    fuzzer: &Fuzzer<G>,
    args: &FuzzArgs,
    what: &str,
    replay_args: &str,
) -> Result<(), Failure> {
    let iterations = args.iterations.unwrap_or(if args.seconds.is_some() { u64::MAX } else { 100 });
    let deadline = args.seconds.map(|s| Instant::now() + Duration::from_secs(s));
    let bar = if iterations == u64::MAX {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::new(iterations)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {pos}/{len} iterations {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut ran = 0u64;
    for i in 0..iterations {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let bytes = Fuzzer::<G>::bytes_for(args.seed, i);
        let found = fuzzer.run(&bytes).map_err(|e| Failure::Usage(e.to_string()))?;
        ran += 1;
        bar.inc(1);
        if let Some(finding) = found {
            bar.finish_and_clear();
            print_finding(i, &finding, replay_args);
            return Err(Failure::Check(String::new()));
        }
    }
    bar.finish_and_clear();
    println!("fuzz: {ran} iterations of {what} (seed {}), no finding", args.seed);
    Ok(())
}

fn print_finding(iteration: u64, finding: &Finding, replay_args: &str) {
    println!("fuzz: iteration {iteration} found a desync");
    print!("{finding}");
    if let Some(d) = &finding.diverging_replay {
        println!("replay it:");
        let d = d.display();
        println!("  rollback-abilities replay verify {d}{replay_args}");
        println!("  rollback-abilities replay bisect {d}{replay_args}");
        let frame = finding.diff_frame.unwrap_or(finding.frame + 1).saturating_sub(1);
        println!("  rollback-abilities inspect {d} --frame {frame}{replay_args}");
    }
}
