//! bevy_ggrs's `box_game` on `bevy_rollback_abilities`, rendered: each player steers a box on
//! a plane and dashes (see `game.rs`). Player 0 uses WASD and Space, player 1 the arrows and
//! Enter; over UDP the one local player may use either.
//!
//!     cargo run -p box_game                      # both players on this keyboard, offline
//!     cargo run -p box_game -- synctest          # the same, every frame rolled back 7 frames
//!     cargo run -p box_game -- udp 7000 127.0.0.1:7001 0    # in one terminal
//!     cargo run -p box_game -- udp 7001 127.0.0.1:7000 1    # in another
//!
//! `--bots` lets scripted players play; `--screenshot FILE --after FRAMES` saves the window to
//! FILE (PNG) once the match reaches FRAMES, then quits.

mod game;

use bevy::input::InputSystems;
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};
use bevy::window::WindowResolution;
use bevy_rollback_abilities::prelude::*;
use game::{BoxBody, BoxGame};
use ggrs::PlayerType;
use std::collections::BTreeSet;
use std::net::SocketAddr;

/// The command line.
#[derive(Resource, Clone, Debug, Default)]
struct Options {
    bots: bool,
    screenshot: Option<(String, u32)>,
}

/// Where the screenshot is: not yet asked for, asked for (Bevy frames since), done.
#[derive(Resource, Default)]
struct ScreenshotState(Option<u32>);

/// The colours of players 0 to 3.
const COLORS: [Color; 4] = [
    Color::srgb(0.90, 0.30, 0.25),
    Color::srgb(0.25, 0.55, 0.95),
    Color::srgb(0.30, 0.80, 0.35),
    Color::srgb(0.95, 0.80, 0.25),
];

fn usage() -> ! {
    eprintln!(
        "usage: box_game [local | synctest | udp LOCAL_PORT REMOTE_ADDR HANDLE] [--bots] \
         [--screenshot FILE --after FRAMES]"
    );
    std::process::exit(2)
}

fn parse() -> (MatchSpec, Options) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut options = Options::default();
    let mut spec = MatchSpec::offline(2);
    let mut i = 0;
    let arg = |i: usize| args.get(i).cloned().unwrap_or_else(|| usage());
    while i < args.len() {
        match args[i].as_str() {
            "local" => spec = MatchSpec::offline(2),
            "synctest" => spec = MatchSpec::sync_test(2).check_distance(7),
            "udp" => {
                let port: u16 = arg(i + 1).parse().unwrap_or_else(|_| usage());
                let remote: SocketAddr = arg(i + 2).parse().unwrap_or_else(|_| usage());
                let handle: usize = arg(i + 3).parse().unwrap_or_else(|_| usage());
                let players =
                    (0..2)
                        .map(|h| {
                            if h == handle { PlayerType::Local } else { PlayerType::Remote(remote) }
                        })
                        .collect();
                spec = MatchSpec::p2p_udp(port, players);
                i += 3;
            }
            "--bots" => options.bots = true,
            "--screenshot" => {
                let after = match args.get(i + 2).map(String::as_str) {
                    Some("--after") => arg(i + 3).parse().unwrap_or_else(|_| usage()),
                    _ => usage(),
                };
                options.screenshot = Some((arg(i + 1), after));
                i += 3;
            }
            _ => usage(),
        }
        i += 1;
    }
    (spec, options)
}

fn main() {
    let (spec, options) = parse();
    App::new()
        .add_plugins(DefaultPlugins.set(WindowPlugin {
            primary_window: Some(Window {
                title: "box_game".into(),
                resolution: WindowResolution::new(560, 560),
                ..default()
            }),
            ..default()
        }))
        .add_plugins(AbilitiesPlugin::<BoxGame>::from_world(|| game::new_world(2)))
        // The keyboard is read before the plugin advances the match.
        .configure_sets(PreUpdate, AbilitiesSystems::Drive.after(InputSystems))
        .insert_resource(spec)
        .insert_resource(options)
        .init_resource::<ScreenshotState>()
        .insert_resource(ClearColor(Color::srgb(0.08, 0.08, 0.10)))
        .add_systems(Startup, setup)
        .add_systems(ReadInputs, read_inputs)
        .add_systems(Update, (spawn_boxes, (move_boxes, dash_colors).chain(), title, screenshot))
        .run();
}

fn setup(mut commands: Commands) {
    commands.spawn(Camera2d);
    // The plane (the world's units are pixels).
    let side = 2.0 * game::PLANE_HALF.to_num::<f32>();
    commands.spawn((
        Sprite::from_color(Color::srgb(0.22, 0.22, 0.26), Vec2::splat(side)),
        Transform::default(),
    ));
}

/// The keys of one player: up, down, left, right, dash.
fn keys_of(player: usize) -> [KeyCode; 5] {
    if player == 0 {
        [KeyCode::KeyW, KeyCode::KeyS, KeyCode::KeyA, KeyCode::KeyD, KeyCode::Space]
    } else {
        [
            KeyCode::ArrowUp,
            KeyCode::ArrowDown,
            KeyCode::ArrowLeft,
            KeyCode::ArrowRight,
            KeyCode::Enter,
        ]
    }
}

/// As with bevy_ggrs: fill `LocalInputs` for the `LocalPlayers` in `ReadInputs`.
fn read_inputs(
    mut commands: Commands,
    keys: Res<ButtonInput<KeyCode>>,
    local: Res<LocalPlayers>,
    frame: Res<InputFrame>,
    options: Res<Options>,
) {
    let mut inputs = LocalInputs::<BoxGame>::default();
    let alone = local.0.len() == 1;
    for &p in &local.0 {
        let input = if options.bots {
            game::scripted(p, frame.0)
        } else {
            // A lone local player (over UDP) may use either set of keys.
            let sets: Vec<usize> = if alone { vec![0, 1] } else { vec![p] };
            let bits = [game::UP, game::DOWN, game::LEFT, game::RIGHT, game::DASH];
            let mut input = 0;
            for set in sets {
                for (key, bit) in keys_of(set).into_iter().zip(bits) {
                    if keys.pressed(key) {
                        input |= bit;
                    }
                }
            }
            input
        };
        inputs.0.insert(p, input);
    }
    commands.insert_resource(inputs);
}

/// A sprite for each new box view.
fn spawn_boxes(mut commands: Commands, new: Query<(Entity, &SimData<BoxBody>), Added<SimEntity>>) {
    for (e, data) in &new {
        let color = COLORS[data.0.handle as usize % COLORS.len()];
        let side = 2.0 * game::BOX_HALF.to_num::<f32>();
        commands
            .entity(e)
            .insert((Sprite::from_color(color, Vec2::splat(side)), Transform::default()));
    }
}

/// The simulation's positions (fixed point) drawn as `f32`: only boxes whose data changed.
fn move_boxes(mut boxes: Query<(&SimData<BoxBody>, &mut Transform), Changed<SimData<BoxBody>>>) {
    for (data, mut t) in &mut boxes {
        t.translation = Vec3::new(data.0.x.to_num(), data.0.y.to_num(), 1.0);
    }
}

/// A dashing box glows: its dash cue's effect entity (`CueFx`) exists while the dash is shown,
/// and is despawned if a rollback proves the dash never happened.
fn dash_colors(fx: Query<&CueFx>, mut boxes: Query<(Entity, &SimData<BoxBody>, &mut Sprite)>) {
    let dashing: BTreeSet<Entity> = fx.iter().filter_map(|c| c.view).collect();
    for (e, data, mut sprite) in &mut boxes {
        let base = COLORS[data.0.handle as usize % COLORS.len()];
        sprite.color = if dashing.contains(&e) { base.mix(&Color::WHITE, 0.6) } else { base };
    }
}

/// The HUD is the window's title: the match kind, the frame and the rollbacks.
fn title(m: Option<Res<AbilitiesMatch<BoxGame>>>, mut windows: Query<&mut Window>) {
    let Some(m) = m else { return };
    let s = m.stats();
    let frame = m.world().next_frame();
    if !frame.is_multiple_of(30) {
        return;
    }
    for mut w in &mut windows {
        w.title = format!("box_game — {} — frame {frame} — {} rollbacks", m.kind(), s.rollbacks);
    }
}

/// `--screenshot FILE --after FRAMES`: saves the window once the match reaches FRAMES, then
/// quits a few frames later (the image is written asynchronously).
fn screenshot(
    mut commands: Commands,
    options: Res<Options>,
    mut state: ResMut<ScreenshotState>,
    m: Option<Res<AbilitiesMatch<BoxGame>>>,
    mut exit: MessageWriter<AppExit>,
) {
    let (Some((path, after)), Some(m)) = (&options.screenshot, m) else { return };
    match state.0 {
        None if m.world().next_frame() >= *after => {
            commands.spawn(Screenshot::primary_window()).observe(save_to_disk(path.clone()));
            state.0 = Some(0);
        }
        None => {}
        Some(n) if n >= 60 => {
            exit.write(AppExit::Success);
        }
        Some(n) => state.0 = Some(n + 1),
    }
}
