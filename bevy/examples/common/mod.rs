//! What the measuring examples (`overhead`, `vs_bevy_ggrs`) share: the thread CPU clock, the
//! median, and the plugin's app running the kit's arena in a sync test.

use bevy::MinimalPlugins;
use bevy::app::{App, Update};
use bevy::prelude::{Commands, Entity, Query, Res};
use bevy::time::TimeUpdateStrategy;
use bevy_rollback_abilities::prelude::*;
use rollback_abilities_kit::arena::{Arena, ArenaGame, ArenaSpec};
use std::time::Duration;

/// The sync test's check distance (each steady frame rolls back 8 frames and re-simulates them).
pub const CHECK_DISTANCE: usize = 8;
/// Frames run before measuring: the arena's warm-up script sets its fighters up in these.
pub const WARM_FRAMES: u32 = 120;

/// The calling thread's CPU time: Linux's `/proc/thread-self/schedstat` (nanoseconds on the
/// CPU), or the wall clock where it cannot be read.
pub fn cpu_now() -> Duration {
    use std::sync::OnceLock;
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map(Duration::from_nanos)
        .unwrap_or_else(|| START.get_or_init(std::time::Instant::now).elapsed())
}

/// The command line `[ROUNDS] [FRAMES] [FIGHTERS…]` (fighters 256 and 1024 by default), with
/// the header both examples print.
pub fn args(default_frames: u32) -> (usize, u32, Vec<u32>) {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(11);
    let frames: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(default_frames);
    let mut fighters: Vec<u32> = args.filter_map(|a| a.parse().ok()).collect();
    if fighters.is_empty() {
        fighters = vec![256, 1024];
    }
    println!("sync test, check distance {CHECK_DISTANCE}, 2 players; thread CPU time per frame");
    println!("{rounds} interleaved rounds of {frames} frames, medians");
    (rounds, frames, fighters)
}

/// The median (sorts `v`).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The sync test's settings: no input delay, a prediction window one past the check distance.
pub fn net() -> NetSettings {
    NetSettings { input_delay: 0, max_prediction: CHECK_DISTANCE + 1, ..NetSettings::default() }
}

fn read_inputs(mut commands: Commands, frame: Res<InputFrame>) {
    let mut inputs = LocalInputs::<ArenaGame>::default();
    inputs.0.extend(Arena::player_inputs(frame.0).into_iter().enumerate());
    commands.insert_resource(inputs);
}

/// A game's own end of a cue effect: here, at once when confirmed.
fn end_confirmed_fx(mut commands: Commands, fx: Query<(Entity, &CueFx)>) {
    for (e, f) in &fx {
        if f.confirmed {
            commands.entity(e).despawn();
        }
    }
}

/// The plugin on the arena at frame 0 (its warm-up as the script), in a 2-player sync test;
/// one `app.update()` is one frame (manual 1/60 s time step).
pub fn plugin_app(spec: ArenaSpec) -> App {
    let script = Arena::unwarmed(spec).warmup();
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_nanos(16_666_667)))
        .add_plugins(
            AbilitiesPlugin::<ArenaGame>::from_world(move || Ok(Arena::unwarmed(spec).world))
                .script(script),
        )
        .insert_resource(MatchSpec::SyncTest {
            players: 2,
            check_distance: CHECK_DISTANCE,
            net: net(),
        })
        .add_systems(ReadInputs, read_inputs)
        .add_systems(Update, end_confirmed_fx);
    app
}

/// The plugin's next frame (0 before its match starts).
pub fn next_frame(app: &App) -> u32 {
    app.world().get_resource::<AbilitiesMatch<ArenaGame>>().map_or(0, |m| m.world().next_frame())
}
