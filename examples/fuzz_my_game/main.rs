//! A template for fuzzing your own game's determinism: copy this file into your game, replace
//! `MyGame`, `world` and `input` with your `Game`, your world setup and your input decoding,
//! and run a campaign:
//!
//! ```text
//! cargo run --release --example fuzz_my_game -- --iterations 2000 --out target/fuzz-findings
//! ```
//!
//! Each iteration is one byte string, turned by the harness ([`rollback_abilities::fuzz`]) into
//! a case — players, frames, every input, a rollback schedule, network impairments, sometimes a
//! player quitting — and run four ways: straight, rolled back at random depths, as its replay
//! and as emulated peers. A difference is a [`Finding`]: which runs differ, the first frame,
//! the differing fields, and two replays written under `--out` (the straight run's and the
//! diverging run's) that `Replay::verify` / `Replay::bisect` reproduce (see the guide,
//! "Fuzzing your game's determinism"). Exit status 1 when a finding was printed.
//!
//! Three ways to run the same harness:
//!
//! - this command, a campaign of random byte strings (stable Rust, no extra tools);
//! - the plain test (tests/fuzz_my_game.rs here; keep one in your game): a bounded number of
//!   iterations in every `cargo test`;
//! - libFuzzer, which grows byte strings that reach new code: copy
//!   `examples/fuzz_my_game/fuzz_target.rs` into your `fuzz/fuzz_targets/` (see the comments
//!   there and fuzz/README.md: `cargo fuzz run my_game --sanitizer none` works on stable).
//!   Its findings are byte strings: keep them, and your plain test replays them with
//!   [`Fuzzer::run`].

use rollback_abilities::ExecCtx;
use rollback_abilities::fuzz::{Finding, FuzzConfig, Fuzzer, Setup};
use rollback_abilities::prelude::*;
use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// One player's input: bit 0 strikes the next player, bit 1 shields.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    bytemuck::Pod,
    bytemuck::Zeroable,
    serde::Serialize,
    serde::Deserialize,
)]
#[repr(C)]
pub struct Buttons(pub u8);

/// Your game (here: every player strikes the next one; a shield halves what it takes).
pub struct MyGame;

impl Game for MyGame {
    type Input = Buttons;
    type Component = ();
    type Global = ();

    fn systems(world: &mut World<Self>) {
        let content = world.content().clone();
        let (Ok(strike), Ok(shield)) = (content.effect("Strike"), content.effect("Shield")) else {
            return;
        };
        let n = world.players();
        for p in 0..n {
            let (Some(me), Some(next)) = (world.player_owner(p), world.player_owner((p + 1) % n))
            else {
                continue;
            };
            let buttons = world.input(p).0;
            if buttons & 2 != 0 {
                let spec = world.make_spec(shield, 1, me);
                let _ = world.apply_effect(spec, me);
            }
            if buttons & 1 != 0 {
                let spec = world.make_spec(strike, 1, me);
                let _ = world.apply_effect(spec, next);
            }
        }
    }
}

const CONTENT: &str = r#"(
    tags: ["State.Shielded"],
    attribute_sets: { "Vitals": (attributes: { "Health": (default: 500, min: Const(0)) }) },
    effects: {
        "Strike": (executions: [(calc: "Strike")]),
        "Shield": (duration: Frames(20), granted_tags: ["State.Shielded"]),
    },
)"#;

/// The strike: 12 damage, 6 against a shield. A function of its context only (no globals,
/// no clock, no floats): what the harness checks.
fn strike(ctx: &mut ExecCtx<'_>) {
    let c = ctx.content();
    let (Ok(health), Ok(shielded)) = (c.attr("Health"), c.tag("State.Shielded")) else { return };
    let damage = if ctx.target_tags().contains(shielded) { 6 } else { 12 };
    ctx.output(health, ModOp::Add, Fx::from_num(-damage));
}

/// Your world: content, hooks, configuration and setup, for `setup.players` players and
/// `setup.seed`, at frame 0. Build it exactly as a match does (the harness builds one per run
/// and per peer).
pub fn world(setup: &Setup) -> Result<World<MyGame>, Box<dyn Error>> {
    let content = Arc::new(Content::from_ron_str(CONTENT)?);
    let hooks = Hooks::new().execution("Strike", &[], strike);
    let config =
        WorldConfig { players: setup.players as u16, seed: setup.seed, ..WorldConfig::default() };
    let mut world = World::new(content.clone(), &hooks, config)?;
    let vitals = content.attr_set("Vitals")?;
    for p in 0..setup.players {
        if let Ok(e) = world.spawn_actor(&[vitals]) {
            world.bind_player(p, e);
        }
    }
    Ok(world)
}

/// Your input decoding: `size_of::<Buttons>()` bytes to one player's input, kept to what your
/// input code can produce (here the two buttons).
pub fn input(bytes: &[u8]) -> Buttons {
    Buttons(bytes.first().copied().unwrap_or(0) & 0b11)
}

/// The harness for your game: 2 to 4 players, up to 240 frames, rollbacks up to your
/// prediction window (8 frames), replays of findings written to `out`.
pub fn fuzzer(out: Option<PathBuf>) -> Fuzzer<MyGame> {
    Fuzzer::new(world).with_input(input).with_config(FuzzConfig {
        max_prediction: 8,
        replay_dir: out,
        ..FuzzConfig::default()
    })
}

/// The libFuzzer target's body (`fuzz_target.rs`): a finding is a panic, which libFuzzer
/// keeps as a crash input.
pub fn fuzz_one(data: &[u8]) {
    match fuzzer(None).run(data) {
        Ok(None) => {}
        Ok(Some(finding)) => panic!("{finding}"),
        Err(e) => panic!("the harness could not run: {e}"),
    }
}

/// `--iterations N` (default 200), `--seed S` (default 1), `--out DIR` (default
/// target/fuzz-findings).
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
    let iterations = arg("--iterations").and_then(|v| v.parse().ok()).unwrap_or(200u64);
    let seed = arg("--seed").and_then(|v| v.parse().ok()).unwrap_or(1u64);
    let out = arg("--out").map_or_else(|| PathBuf::from("target/fuzz-findings"), PathBuf::from);
    let fuzzer = fuzzer(Some(out));
    let progress = |i: u64| {
        if i.is_multiple_of(50) {
            eprintln!("iteration {i}/{iterations}");
        }
    };
    match fuzzer.campaign(seed, iterations, progress) {
        Ok(None) => {
            println!("{iterations} iterations, no finding");
            ExitCode::SUCCESS
        }
        Ok(Some((i, finding))) => {
            print_finding(i, &finding);
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn print_finding(iteration: u64, finding: &Finding) {
    println!("iteration {iteration}: {finding}");
}
