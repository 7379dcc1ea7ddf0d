//! The box game (bevy_ggrs's `box_game` on this plugin) without a window: scripted players
//! steer and dash in a sync test, offline, or against another process over UDP; each dash's
//! cue is printed once, and the boxes' positions once a second. The rendered game that a person
//! plays is the `box_game` package (bevy/examples/box_game).
//!
//!     cargo run -p bevy_rollback_abilities --example box_game_headless -- [FRAMES] [synctest|offline]
//!     cargo run -p bevy_rollback_abilities --example box_game_headless -- 600 udp 7000 127.0.0.1:7001 0
//!     cargo run -p bevy_rollback_abilities --example box_game_headless -- 600 udp 7001 127.0.0.1:7000 1

#[path = "box_game/src/game.rs"]
mod game;

use bevy::MinimalPlugins;
use bevy::app::{App, Update};
use bevy::prelude::{MessageReader, Res};
use bevy::time::TimeUpdateStrategy;
use bevy_rollback_abilities::prelude::*;
use game::{BoxBody, BoxGame};
use ggrs::PlayerType;
use std::net::SocketAddr;
use std::time::Duration;

/// As with bevy_ggrs: fill `LocalInputs` for the `LocalPlayers` in `ReadInputs`.
fn read_inputs(
    mut commands: bevy::prelude::Commands,
    local: Res<LocalPlayers>,
    frame: Res<InputFrame>,
) {
    let mut inputs = LocalInputs::<BoxGame>::default();
    for &p in &local.0 {
        inputs.0.insert(p, game::scripted(p, frame.0));
    }
    commands.insert_resource(inputs);
}

/// Each dash, once: played when predicted, cancelled if a rollback proves it never happened.
fn dashes(mut cues: MessageReader<CueMessage>) {
    for c in cues.read() {
        if matches!(c.phase, CuePhase::Shown | CuePhase::Cancelled | CuePhase::Removed(_)) {
            println!("frame {:>4}: dash {:?} on {:?}", c.cue.key.frame, c.phase, c.view);
        }
    }
}

/// The boxes' positions once a second (presentation: the fixed-point data as `f32`).
fn positions(m: Res<AbilitiesMatch<BoxGame>>, boxes: bevy::prelude::Query<&SimData<BoxBody>>) {
    if !m.world().next_frame().is_multiple_of(60) {
        return;
    }
    let at: Vec<String> = boxes
        .iter()
        .map(|b| {
            format!("{} ({:.0}, {:.0})", b.0.handle, b.0.x.to_num::<f32>(), b.0.y.to_num::<f32>())
        })
        .collect();
    println!("frame {:>4}: {}", m.world().next_frame(), at.join("  "));
}

fn session(mut events: MessageReader<SessionMessage>, mut ends: MessageReader<MatchEnded>) {
    for e in events.read() {
        println!("session: {:?}", e.0);
    }
    for e in ends.read() {
        println!("match ended: {}", e.reason);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let frames: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(600);
    let spec = match args.get(1).map(String::as_str) {
        Some("offline") => MatchSpec::offline(2),
        Some("udp") => {
            let usage = "udp LOCAL_PORT REMOTE_ADDR HANDLE";
            let port: u16 = args.get(2).and_then(|a| a.parse().ok()).expect(usage);
            let remote: SocketAddr = args.get(3).and_then(|a| a.parse().ok()).expect(usage);
            let handle: usize = args.get(4).and_then(|a| a.parse().ok()).expect(usage);
            let players = (0..2)
                .map(|h| if h == handle { PlayerType::Local } else { PlayerType::Remote(remote) })
                .collect();
            MatchSpec::p2p_udp(port, players)
        }
        _ => MatchSpec::sync_test(2).check_distance(7),
    };
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        // One tick per update, whatever the machine's speed.
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_nanos(16_666_667)))
        .add_plugins(AbilitiesPlugin::<BoxGame>::from_world(|| game::new_world(2)))
        .insert_resource(spec)
        .add_systems(ReadInputs, read_inputs)
        .add_systems(Update, (dashes, positions, session));
    let stats =
        |app: &App| app.world().get_resource::<AbilitiesMatch<BoxGame>>().map(|m| m.stats());
    while stats(&app).is_none_or(|s| s.frames < u64::from(frames)) {
        app.update();
        if app.world().get_resource::<AbilitiesMatch<BoxGame>>().is_some_and(|m| m.has_ended()) {
            break;
        }
    }
    if let Some(m) = app.world().get_resource::<AbilitiesMatch<BoxGame>>() {
        let s = m.stats();
        println!(
            "{} frames, {} re-simulated in {} rollbacks",
            s.frames, s.resimulated, s.rollbacks
        );
        println!("checksum {:016x}", m.world().checksum());
    }
}
