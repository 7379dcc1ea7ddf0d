//! The plugin against bevy_ggrs 0.22 on the same state, in the same process: the kit's arena
//! (256 and 1024 fighters) in a 2-player sync test (check distance 8), one `app.update()` per
//! frame on both sides, `MinimalPlugins`, `TimeUpdateStrategy::ManualDuration(1/60 s)`.
//!
//!     cargo run --release -p bevy_rollback_abilities --example vs_bevy_ggrs -- [ROUNDS] [FRAMES] [FIGHTERS…]
//!
//! - The plugin: `AbilitiesPlugin` on the arena world, measured from frame 120 on (the warm-up
//!   has set every fighter up); its frames run the arena's **real** step (effects, abilities,
//!   tasks, the fighters' systems) and save its Pod-column snapshot.
//! - bevy_ggrs: `GgrsPlugin` with the same arena state (taken from the arena after its warm-up)
//!   as idiomatic rollback components, one entity per fighter: `Attributes(HashMap<u32, f32>)`,
//!   `ActiveEffects(Vec<..>)`, `GameplayTags(HashMap<u16, u16>)`, `Abilities(Vec<..>)` registered
//!   with `rollback_component_with_clone`, `Position(Vec2)` with `rollback_component_with_copy`,
//!   and all five with `checksum_component` (seahash over every field). Nothing implements the
//!   arena's rules over these components, so its `GgrsSchedule` runs one **trivial** system
//!   (every `Position.x += 1`): bevy_ggrs's side does far less work per advance than the
//!   plugin's.
//!
//! Times are thread CPU time (neither app has `multi_threaded`: every system runs on the
//! calling thread), per frame; rounds of FRAMES frames alternate between the two apps, the
//! ratio is taken within each round and the median over rounds is printed. Printed sanity
//! checks: neither sync test reported a mismatch, the loads and advances per frame on both
//! sides, and bevy_ggrs's trivial system moved its fighters once per frame (its loads restore).

mod common;

use bevy::MinimalPlugins;
use bevy::app::App;
use bevy::ecs::message::MessageReader;
use bevy::math::Vec2;
use bevy::prelude::{Commands, Component, Entity, Local, On, Query, ResMut, Resource};
use bevy::time::TimeUpdateStrategy;
use bevy_ggrs::prelude::{
    GgrsPlugin, GgrsSchedule, Rollback, RollbackApp, RollbackFrameRate, Session, SessionBuilder,
};
use bevy_ggrs::{AdvanceWorld, LoadWorld, SaveWorld, checksum_hasher};
use bevy_rollback_abilities::AbilitiesMatch;
use common::{CHECK_DISTANCE, WARM_FRAMES, cpu_now, median, next_frame, plugin_app};
use rollback_abilities::session::RunnerStats;
use rollback_abilities_kit::arena::baseline::{IdiomaticAbility, IdiomaticEffect, IdiomaticWorld};
use rollback_abilities_kit::arena::{Arena, ArenaGame, ArenaSpec};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::Duration;

type GgrsCfg = bevy_ggrs::GgrsConfig<u8, usize>;

#[derive(Component, Clone)]
struct Attributes(HashMap<u32, f32>);

#[derive(Component, Clone)]
struct ActiveEffects(Vec<IdiomaticEffect>);

#[derive(Component, Clone)]
struct GameplayTags(HashMap<u16, u16>);

#[derive(Component, Clone)]
struct Abilities(Vec<IdiomaticAbility>);

#[derive(Component, Clone, Copy)]
struct Position(Vec2);

/// A hash map's hash, independent of its iteration order: the sum of its entries' hashes.
fn unordered<K: Hash, V>(m: &HashMap<K, V>, bits: impl Fn(&V) -> u64) -> u64 {
    m.iter().fold(0u64, |sum, (k, v)| {
        let mut h = checksum_hasher();
        (k, bits(v)).hash(&mut h);
        sum.wrapping_add(h.finish())
    })
}

fn hash_attributes(a: &Attributes) -> u64 {
    unordered(&a.0, |v| u64::from(v.to_bits()))
}

fn hash_tags(t: &GameplayTags) -> u64 {
    unordered(&t.0, |v| u64::from(*v))
}

fn hash_effects(e: &ActiveEffects) -> u64 {
    let mut h = checksum_hasher();
    for x in &e.0 {
        (x.def, x.level, x.stacks).hash(&mut h);
        (x.start, x.duration, x.expires_at, x.next_period_at, x.instigator).hash(&mut h);
        for m in &x.modifiers {
            (m.attr, m.op, m.magnitude.to_bits()).hash(&mut h);
        }
        x.granted_tags.hash(&mut h);
    }
    h.finish()
}

fn hash_abilities(a: &Abilities) -> u64 {
    let mut h = checksum_hasher();
    for x in &a.0 {
        (x.def, x.level, x.active, x.serial).hash(&mut h);
        for t in &x.tasks {
            (t.kind, t.started, t.counter, t.params).hash(&mut h);
        }
    }
    h.finish()
}

fn hash_position(p: &Position) -> u64 {
    let mut h = checksum_hasher();
    (p.0.x.to_bits(), p.0.y.to_bits()).hash(&mut h);
    h.finish()
}

/// bevy_ggrs's game: every fighter moves one unit per frame.
fn trivial_step(mut q: Query<&mut Position>) {
    for mut p in &mut q {
        p.0.x += 1.0;
    }
}

/// The arena's input pattern, one frame per call (bevy_ggrs runs `ReadInputs` once a frame,
/// with its session out of the world).
fn ggrs_inputs(mut commands: Commands, mut frame: Local<u32>) {
    let inputs = Arena::player_inputs(*frame).into_iter().enumerate().collect();
    *frame += 1;
    commands.insert_resource(bevy_ggrs::LocalInputs::<GgrsCfg>(inputs));
}

/// What bevy_ggrs's schedules did: one count per run of `SaveWorld`, `LoadWorld`,
/// `AdvanceWorld`, and the sync-test mismatches it reported.
#[derive(Resource, Default, Clone, Copy)]
struct Requests {
    saves: u64,
    loads: u64,
    advances: u64,
    mismatches: u64,
}

/// GGRS's 2-player sync test with check distance 8, as both apps run it.
fn sync_test() -> ggrs::SyncTestSession<GgrsCfg> {
    let mut builder = SessionBuilder::<GgrsCfg>::new()
        .with_num_players(2)
        .expect("players")
        .with_max_prediction_window(CHECK_DISTANCE + 1)
        .with_input_delay(0)
        .with_check_distance(CHECK_DISTANCE);
    for player in 0..2 {
        builder = builder.add_player(ggrs::PlayerType::Local, player).expect("a local player");
    }
    builder.start_synctest_session().expect("a sync test")
}

/// The saves GGRS's sync test asks for per frame once past its first frames: the plugin's
/// runner makes one per `SaveGameState` request (its counters count loads and advances).
fn ggrs_saves_per_frame() -> f64 {
    let mut session = sync_test();
    let (mut saves, measured) = (0u32, 20u32);
    for frame in 0..(2 * CHECK_DISTANCE as u32 + measured) {
        for player in 0..2 {
            session.add_local_input(player, 0).expect("a local player");
        }
        for request in session.advance_frame().expect("no mismatch: every checksum is 0") {
            if let ggrs::GgrsRequest::SaveGameState { cell, frame: f } = request {
                cell.save(f, Some(0), Some(0));
                saves += u32::from(frame >= 2 * CHECK_DISTANCE as u32);
            }
        }
    }
    f64::from(saves) / f64::from(measured)
}

/// bevy_ggrs's app over the arena `arena` (already warmed up) as idiomatic components.
fn ggrs_app(arena: &Arena) -> (App, Entity) {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_nanos(16_666_667)))
        .add_plugins(GgrsPlugin::<GgrsCfg>::default())
        .insert_resource(RollbackFrameRate(60))
        .add_systems(bevy_ggrs::ReadInputs, ggrs_inputs)
        .rollback_component_with_clone::<Attributes>()
        .rollback_component_with_clone::<ActiveEffects>()
        .rollback_component_with_clone::<GameplayTags>()
        .rollback_component_with_clone::<Abilities>()
        .rollback_component_with_copy::<Position>()
        .checksum_component::<Attributes>(hash_attributes)
        .checksum_component::<ActiveEffects>(hash_effects)
        .checksum_component::<GameplayTags>(hash_tags)
        .checksum_component::<Abilities>(hash_abilities)
        .checksum_component::<Position>(hash_position)
        .add_systems(GgrsSchedule, trivial_step)
        .init_resource::<Requests>()
        .add_systems(SaveWorld, |mut r: ResMut<Requests>| r.saves += 1)
        .add_systems(LoadWorld, |mut r: ResMut<Requests>| r.loads += 1)
        .add_systems(AdvanceWorld, |mut r: ResMut<Requests>| r.advances += 1);
    app.world_mut().add_observer(|_: On<bevy_ggrs::SyncTestMismatch>, mut r: ResMut<Requests>| {
        r.mismatches += 1
    });
    let session = sync_test();
    app.insert_resource(Session::SyncTest(session));
    let idiomatic = IdiomaticWorld::from_world(&arena.world);
    let mut first = None;
    for e in &idiomatic.entities {
        let id = app
            .world_mut()
            .spawn((
                Rollback,
                Attributes(e.attributes.clone()),
                ActiveEffects(e.effects.clone()),
                GameplayTags(e.tags.clone()),
                Abilities(e.abilities.clone()),
                Position(Vec2::new(e.position.0, e.position.1)),
            ))
            .id();
        first.get_or_insert(id);
    }
    (app, first.expect("the arena has fighters"))
}

fn ggrs_frame(app: &App) -> i32 {
    match app.world().resource::<Session<GgrsCfg>>() {
        Session::SyncTest(s) => s.current_frame(),
        _ => 0,
    }
}

/// The plugin's sync-test mismatches, counted by a system reading its message.
#[derive(Resource, Default)]
struct PluginMismatches(u64);

fn count_mismatches(
    mut seen: ResMut<PluginMismatches>,
    mut m: MessageReader<bevy_rollback_abilities::SyncTestMismatch>,
) {
    seen.0 += m.read().count() as u64;
}

fn stats(app: &App) -> RunnerStats {
    app.world().resource::<AbilitiesMatch<ArenaGame>>().stats()
}

fn main() {
    let (rounds, frames, fighters) = common::args(10);
    println!(
        "| fighters | plugin (real arena step) | bevy_ggrs (trivial step) | bevy_ggrs / plugin |"
    );
    println!("|---|---|---|---|");
    let mut checks = Vec::new();
    for entities in fighters {
        let spec = ArenaSpec { entities, ..ArenaSpec::default() };
        let mut plugin = plugin_app(spec);
        plugin.init_resource::<PluginMismatches>().add_systems(bevy::app::Update, count_mismatches);
        while next_frame(&plugin) < WARM_FRAMES {
            plugin.update();
        }
        let (mut ggrs, fighter) = ggrs_app(&Arena::new(spec));
        while ggrs_frame(&ggrs) < 2 * CHECK_DISTANCE as i32 {
            ggrs.update();
        }
        let x = |app: &App| app.world().get::<Position>(fighter).expect("a fighter").0.x;
        let (p_stats, g_requests, g_frame, g_x) =
            (stats(&plugin), *ggrs.world().resource::<Requests>(), ggrs_frame(&ggrs), x(&ggrs));
        let p_frame = next_frame(&plugin);
        let (mut p, mut g, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let start = next_frame(&plugin);
            let t = cpu_now();
            for _ in 0..frames {
                plugin.update();
            }
            let pt =
                (cpu_now() - t).as_secs_f64() / f64::from((next_frame(&plugin) - start).max(1));
            let start = ggrs_frame(&ggrs);
            let t = cpu_now();
            for _ in 0..frames {
                ggrs.update();
            }
            let gt = (cpu_now() - t).as_secs_f64() / f64::from((ggrs_frame(&ggrs) - start).max(1));
            p.push(pt);
            g.push(gt);
            ratio.push(gt / pt);
        }
        println!(
            "| {entities} | {:.3} ms | {:.3} ms | {:.1}x |",
            median(&mut p) * 1e3,
            median(&mut g) * 1e3,
            median(&mut ratio)
        );
        let (ps, gr) = (stats(&plugin), *ggrs.world().resource::<Requests>());
        let pf = f64::from(next_frame(&plugin) - p_frame);
        let gf = f64::from(ggrs_frame(&ggrs) - g_frame);
        let moved = x(&ggrs) - g_x;
        assert!(
            (f64::from(moved) - gf).abs() < 0.5,
            "bevy_ggrs's fighter moved {moved} in {gf} frames: its loads do not restore"
        );
        checks.push(format!(
            "{entities} fighters: plugin {pf} frames, {:.2} loads, {:.2} saves (GGRS's requests) \
             and {:.2} advances a frame, {} mismatches; bevy_ggrs {gf} frames, {:.2} loads, {:.2} saves and {:.2} advances \
             a frame, {} mismatches, its fighter moved {moved} (one a frame)",
            (ps.rollbacks - p_stats.rollbacks) as f64 / pf,
            ggrs_saves_per_frame(),
            (ps.frames + ps.resimulated - p_stats.frames - p_stats.resimulated) as f64 / pf,
            plugin.world().resource::<PluginMismatches>().0,
            (gr.loads - g_requests.loads) as f64 / gf,
            (gr.saves - g_requests.saves) as f64 / gf,
            (gr.advances - g_requests.advances) as f64 / gf,
            gr.mismatches,
        ));
        assert_eq!(plugin.world().resource::<PluginMismatches>().0, 0, "the plugin's sync test");
        assert_eq!(gr.mismatches, 0, "bevy_ggrs's sync test");
    }
    for c in checks {
        println!("{c}");
    }
}
