//! The determinism harness (`rollback_abilities::fuzz`) on games with a known determinism bug of
//! each common kind: each is found within a stated budget of iterations, by the comparison that
//! can see it, with the right attribute named; correct games (a bug-free variant, the duel, the reference
//! arena, a game that branches on a departed player's input status) run the same budget without a
//! finding.

use rollback_abilities::fuzz::{Comparison, Finding, FuzzConfig, Fuzzer, Setup};
use rollback_abilities::prelude::*;
use rollback_abilities::replay::Replay;
use rollback_abilities::{ExecCtx, InputStatus};
use rollback_abilities_kit::arena::{self, Arena, ArenaGame, ArenaSpec};
use rollback_abilities_kit::duel::{self, Duel};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;

/// Iterations each bug must be found within (the first finding ends a campaign), and that the
/// correct games run without a finding.
const BUDGET: u64 = 24;

/// The campaign seed of every test here.
const SEED: u64 = 2026;

/// One player's buttons: bit 0 strikes the next player, bit 1 asks for rage, bits 2–4 push.
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
struct Pad(u8);

const CORRECT: u8 = 0;
/// The strike's execution counts its calls in a thread-local `Cell`.
const HOOK_COUNTER: u8 = 1;
/// The rage goes to the first player of a `std::collections::HashMap` (random iteration order).
const HASH_MAP: u8 = 2;
/// The speed is integrated in an `f32` kept outside the snapshot.
const FLOAT: u8 = 3;
/// Idle frames are counted while a player's input status is `Disconnected` (deterministic:
/// replays record input statuses).
const INPUT_STATUS: u8 = 4;

/// A small fighting game; `BUG` chooses its determinism bug (or none).
struct Brawl<const BUG: u8>;

impl<const BUG: u8> Game for Brawl<BUG> {
    type Input = Pad;
    type Component = ();
    type Global = ();
    fn systems(world: &mut World<Self>) {
        systems(world);
    }
}

const CONTENT: &str = r#"(
    attribute_sets: { "Vitals": (attributes: {
        "Health": (default: 1000), "Rage": (default: 0), "Speed": (default: 0), "Idle": (default: 0),
    }) },
    effects: { "Strike": (executions: [(calc: "Strike")]) },
)"#;

thread_local! {
    /// The strike's call counter of `HOOK_COUNTER` (state outside the snapshot).
    static STRIKES: Cell<u32> = const { Cell::new(0) };
    /// Every player's velocity of `FLOAT` (state outside the snapshot).
    static VELOCITY: Cell<[f32; 4]> = const { Cell::new([0.0; 4]) };
}

fn strike(ctx: &mut ExecCtx<'_>) {
    let health = ctx.content().attr("Health").unwrap_or_default();
    ctx.output(health, ModOp::Add, Fx::from_num(-5));
}

fn strike_counted(ctx: &mut ExecCtx<'_>) {
    let health = ctx.content().attr("Health").unwrap_or_default();
    let n = STRIKES.with(|s| {
        s.set(s.get() + 1);
        s.get()
    });
    ctx.output(health, ModOp::Add, Fx::from_num(-5 - i64::from(n % 3)));
}

fn systems<const BUG: u8>(w: &mut World<Brawl<BUG>>) {
    let c = w.content().clone();
    let attr = |name: &str| c.attr(name).unwrap_or_default();
    let (rage, speed, idle) = (attr("Rage"), attr("Speed"), attr("Idle"));
    let Ok(strike) = c.effect("Strike") else { return };
    let n = w.players();
    let fighters: Vec<Entity> = (0..n).filter_map(|p| w.player_owner(p)).collect();
    if fighters.len() != n {
        return;
    }
    for p in 0..n {
        if w.input(p).0 & 1 != 0 {
            let spec = w.make_spec(strike, 1, fighters[p]);
            let _ = w.apply_effect(spec, fighters[(p + 1) % n]);
        }
    }
    let raging: Vec<usize> = (0..n).filter(|p| w.input(*p).0 & 2 != 0).collect();
    let first = if BUG == HASH_MAP {
        let map: HashMap<usize, Entity> = raging.iter().map(|p| (*p, fighters[*p])).collect();
        map.values().next().copied()
    } else {
        raging.first().map(|p| fighters[*p])
    };
    if let Some(e) = first {
        let r = w.base(e, rage).unwrap_or_default();
        w.set_base(e, rage, r + Fx::from_num(1));
    }
    for (p, e) in fighters.iter().enumerate() {
        let push = i64::from((w.input(p).0 >> 2) & 7);
        if BUG == FLOAT {
            let v = VELOCITY.with(|cell| {
                let mut v = cell.get();
                v[p] = v[p] * 0.9 + push as f32 * 0.37;
                cell.set(v);
                v[p]
            });
            w.set_base(*e, speed, Fx::from_num(v));
        } else {
            let s = w.base(*e, speed).unwrap_or_default();
            w.set_base(*e, speed, s * Fx::from_num(0.875) + Fx::from_num(push));
        }
        if BUG == INPUT_STATUS && w.input_status(p) == InputStatus::Disconnected {
            let i = w.base(*e, idle).unwrap_or_default();
            w.set_base(*e, idle, i + Fx::from_num(1));
        }
    }
}

/// A brawl world: one fighter per player. The globals outside the snapshot are reset here, as
/// a game resets them when a match starts: the straight run and its replay agree, rollbacks and
/// peers sharing them do not.
fn brawl<const BUG: u8>(setup: &Setup) -> Result<World<Brawl<BUG>>, String> {
    STRIKES.with(|s| s.set(0));
    VELOCITY.with(|v| v.set([0.0; 4]));
    let content = Arc::new(Content::from_ron_str(CONTENT).map_err(|e| e.to_string())?);
    let f = if BUG == HOOK_COUNTER { strike_counted } else { strike };
    let hooks = Hooks::new().execution("Strike", &[], f);
    let config =
        WorldConfig { players: setup.players as u16, seed: setup.seed, ..WorldConfig::default() };
    let mut w = World::new(content.clone(), &hooks, config).map_err(|e| e.to_string())?;
    let vitals = content.attr_set("Vitals").map_err(|e| e.to_string())?;
    for p in 0..setup.players {
        let e = w.spawn_actor(&[vitals]).map_err(|e| e.to_string())?;
        w.bind_player(p, e);
    }
    Ok(w)
}

fn fuzzer<const BUG: u8>() -> Fuzzer<Brawl<BUG>> {
    Fuzzer::new(brawl::<BUG>).with_config(FuzzConfig { max_frames: 120, ..FuzzConfig::default() })
}

/// Runs the budget; the finding and the iteration it came in.
fn campaign<G: Game>(f: &Fuzzer<G>) -> Option<(u64, Finding)> {
    match f.campaign(SEED, BUDGET, |_| {}) {
        Ok(found) => found,
        Err(e) => panic!("the harness could not run: {e}"),
    }
}

fn found<G: Game>(f: &Fuzzer<G>) -> Finding {
    match campaign(f) {
        Some((i, finding)) => {
            eprintln!("found in iteration {i}:\n{finding}");
            finding
        }
        None => panic!("no finding within {BUDGET} iterations"),
    }
}

#[test]
fn a_correct_game_has_no_finding() {
    assert_eq!(campaign(&fuzzer::<CORRECT>()).map(|(_, f)| f.to_string()), None);
}

#[test]
fn the_duel_has_no_finding() {
    let f = Fuzzer::<Duel>::new(|s: &Setup| duel::try_new_world(s.seed, s.players))
        .with_input(|b| duel::Input { buttons: b[0] & duel::Input::ALL, axis: b[1] as i8 })
        .with_config(FuzzConfig { max_frames: 120, ..FuzzConfig::default() });
    assert_eq!(campaign(&f).map(|(_, f)| f.to_string()), None);
}

/// The reference arena (scripted fighters, periodic effects, stacking, tasks; every fighter set
/// up in frame 0) runs the same budget without a finding.
#[test]
fn the_arena_has_no_finding() {
    let f = Fuzzer::<ArenaGame>::new(|s: &Setup| {
        Ok::<_, String>(Arena::ready(ArenaSpec { seed: s.seed, ..arena::fuzz_spec() }).world)
    })
    .with_config(FuzzConfig {
        min_players: 2,
        max_players: 2,
        max_frames: 120,
        ..FuzzConfig::default()
    });
    assert_eq!(campaign(&f).map(|(_, f)| f.to_string()), None);
}

#[test]
fn a_hook_counting_in_a_cell_is_found_by_rollback() {
    let f = found(&fuzzer::<HOOK_COUNTER>());
    assert!(matches!(f.comparison, Comparison::Rollback { .. }), "{f}");
    assert!(f.names("attribute Health", "base"), "{f}");
}

#[test]
fn hash_map_iteration_is_found() {
    let f = found(&fuzzer::<HASH_MAP>());
    assert!(f.names("attribute Rage", "base"), "{f}");
}

#[test]
fn a_float_accumulated_outside_the_snapshot_is_found_by_rollback() {
    let f = found(&fuzzer::<FLOAT>());
    assert!(matches!(f.comparison, Comparison::Rollback { .. }), "{f}");
    assert!(f.names("attribute Speed", "base"), "{f}");
}

/// Replays record each frame's input statuses, so a game whose systems branch on
/// `Disconnected` replays as it played: the budget holds matches with a departure, and none of
/// them is a finding.
#[test]
fn branching_on_a_disconnected_status_replays_without_a_finding() {
    let f = fuzzer::<INPUT_STATUS>();
    let departures = (0..BUDGET)
        .filter(|i| f.case(&Fuzzer::<Brawl<INPUT_STATUS>>::bytes_for(SEED, *i)).departure.is_some())
        .count();
    assert!(departures > 0, "the budget must hold a match a player leaves");
    assert_eq!(campaign(&f).map(|(_, f)| f.to_string()), None);
}

/// A finding's replays are written, shrunk to the divergence, and verifying the diverging one
/// names the frame and the field the harness named.
#[test]
fn a_findings_diverging_replay_verifies_to_the_same_frame_and_field() {
    let dir = std::env::temp_dir().join(format!("fuzz-games-{}", std::process::id()));
    let mut f = fuzzer::<HOOK_COUNTER>();
    f.config_mut().replay_dir = Some(dir.clone());
    let finding = found(&f);
    let (Some(straight), Some(diverging)) = (&finding.straight_replay, &finding.diverging_replay)
    else {
        panic!("no replays written: {finding}");
    };
    assert!(finding.case.frames <= finding.frame + 1 + 4 || finding.case.frames == 16, "{finding}");
    let straight = Replay::read(straight).expect("straight replay");
    let diverging = Replay::read(diverging).expect("diverging replay");
    let mut world =
        brawl::<HOOK_COUNTER>(&Setup { players: finding.case.players, seed: finding.case.seed })
            .expect("world");
    assert!(straight.verify(&mut world).expect("verify").is_ok());
    let mut world =
        brawl::<HOOK_COUNTER>(&Setup { players: finding.case.players, seed: finding.case.seed })
            .expect("world");
    let v = diverging.verify(&mut world).expect("verify");
    assert_eq!(v.first_divergence, Some(finding.frame));
    assert!(v.diffs.iter().any(|d| d.item == "attribute Health"), "{v:?}");
    // The bytes reproduce it.
    let again = fuzzer::<HOOK_COUNTER>().run(&finding.bytes).expect("run");
    assert!(again.is_some());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn any_bytes_run_without_panicking() {
    let f = fuzzer::<CORRECT>();
    for bytes in [&[][..], &[0xff; 3][..], &[0xff; 64][..], &[0; 17][..]] {
        assert!(f.run(bytes).expect("run").is_none());
    }
}
