//! Content from a RON file: errors as messages naming file, line and column; a change restarts
//! an offline match or a sync test and is refused by a P2P match.

use crate::common::TICK;
use bevy::MinimalPlugins;
use bevy::app::{App, Update};
use bevy::prelude::{MessageReader, ResMut, Resource};
use bevy::time::TimeUpdateStrategy;
use bevy_rollback_abilities::prelude::*;
use ggrs::PlayerType;
use rollback_abilities::session::{EmulatedNetwork, NetConditions, PeerAddr};
use rollback_abilities::{Game, World, WorldConfig};
use std::path::{Path, PathBuf};

pub struct Tiny;

impl Game for Tiny {
    type Input = u8;
    type Component = ();
    type Global = ();
}

#[derive(Resource, Default)]
pub struct Log {
    pub started: Vec<u64>,
    pub ended: Vec<String>,
    pub reloads: Vec<(bool, String)>,
}

pub fn collect(
    mut log: ResMut<Log>,
    mut started: MessageReader<MatchStarted>,
    mut ended: MessageReader<MatchEnded>,
    mut reloaded: MessageReader<ContentReloaded>,
) {
    log.started.extend(started.read().map(|m| m.content_hash));
    log.ended.extend(ended.read().map(|m| m.reason.clone()));
    log.reloads.extend(reloaded.read().map(|m| (m.applied, m.reason.clone())));
}

pub fn one_actor_each(w: &mut World<Tiny>) -> Result<(), String> {
    for p in 0..2 {
        let e = w.spawn_actor(&[]).map_err(|e| e.to_string())?;
        w.bind_player(p, e);
    }
    Ok(())
}

/// A content file of its own for each test.
pub fn file(name: &str, text: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bevy_content");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Rewrites a file so that its modification time moves on (set explicitly: two writes within
/// one clock tick of the file system would otherwise look the same).
fn rewrite(path: &Path, text: &str) {
    let before = std::fs::metadata(path).unwrap().modified().unwrap();
    std::fs::write(path, text).unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(before + std::time::Duration::from_secs(1)).unwrap();
}

fn app(path: &Path, spec: MatchSpec) -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(TICK))
        .add_plugins(
            AbilitiesPlugin::<Tiny>::from_ron_file(path)
                .config(WorldConfig { players: 2, max_entities: 4, ..WorldConfig::default() })
                .setup(one_actor_each),
        )
        .init_resource::<Log>()
        .insert_resource(spec)
        .add_systems(Update, collect);
    app
}

fn updates(app: &mut App, n: u32) {
    for _ in 0..n {
        app.update();
    }
}

pub fn log(app: &App) -> &Log {
    app.world().resource::<Log>()
}

#[test]
fn a_broken_content_file_is_a_match_ended_message_naming_file_line_and_column() {
    let path = file("broken.gas.ron", "(\n    tags: [\"A\", 7],\n)\n");
    let mut app = app(&path, MatchSpec::offline(2));
    updates(&mut app, 3);
    assert!(app.world().get_resource::<AbilitiesMatch<Tiny>>().is_none());
    let ended = &log(&app).ended;
    assert_eq!(ended.len(), 1, "{ended:?}");
    let at = format!("{}:2:", path.display());
    assert!(ended[0].starts_with(&at), "{} does not start with {at}", ended[0]);
}

#[test]
fn a_changed_content_file_restarts_a_sync_test_and_a_fixed_one_starts_it_again() {
    let path = file("reload.gas.ron", "(tags: [\"A\"])");
    let mut app = app(&path, MatchSpec::sync_test(2));
    updates(&mut app, 100);
    assert_eq!(log(&app).started.len(), 1);
    let frame = app.world().resource::<AbilitiesMatch<Tiny>>().world().next_frame();
    assert!(frame > 90);
    rewrite(&path, "(tags: [\"A\", \"B\"])");
    updates(&mut app, 40);
    let l = log(&app);
    assert_eq!(l.reloads.len(), 1);
    assert!(l.reloads[0].0, "applied");
    assert_eq!(l.started.len(), 2, "the match restarted");
    assert_ne!(l.started[0], l.started[1], "with the new content");
    let m = app.world().resource::<AbilitiesMatch<Tiny>>();
    assert!(m.world().next_frame() < 40, "from frame 0");
    assert!(m.world().content().tag("B").is_ok());
    // A broken edit ends the match with the error; fixing it starts a new one.
    rewrite(&path, "(tags: [\"A\", ");
    updates(&mut app, 40);
    assert!(app.world().get_resource::<AbilitiesMatch<Tiny>>().is_none());
    assert!(log(&app).ended.last().is_some_and(|e| e.contains("reload.gas.ron")));
    rewrite(&path, "(tags: [\"C\"])");
    updates(&mut app, 40);
    assert_eq!(log(&app).started.len(), 3);
    let m = app.world().resource::<AbilitiesMatch<Tiny>>();
    assert!(m.world().content().tag("C").is_ok());
}

#[test]
fn a_p2p_match_refuses_a_changed_content_file_and_plays_on() {
    let path = file("p2p.gas.ron", "(tags: [\"A\"])");
    let net = EmulatedNetwork::new(NetConditions::PERFECT, 9);
    let mut apps: Vec<App> = (0..2).map(|i| app(&path, p2p_spec(&net, i))).collect();
    let frame = |a: &App| {
        a.world().get_resource::<AbilitiesMatch<Tiny>>().map_or(0, |m| m.world().next_frame())
    };
    let step = |apps: &mut Vec<App>, n: u32| {
        for _ in 0..n {
            apps.iter_mut().for_each(App::update);
            net.advance_ms(16);
        }
    };
    step(&mut apps, 120);
    assert!(apps.iter().all(|a| frame(a) > 20));
    let before: Vec<u32> = apps.iter().map(frame).collect();
    rewrite(&path, "(tags: [\"A\", \"B\"])");
    step(&mut apps, 80);
    assert_refused_and_played_on(&apps, &before, 60);
}

/// Peer `i`'s spec of a two-player P2P match on `net`.
pub fn p2p_spec(net: &EmulatedNetwork, i: u16) -> MatchSpec {
    let players = (0..2)
        .map(|j| if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j)) })
        .collect();
    MatchSpec::p2p_emulated(net.socket(PeerAddr(i)), players)
}

/// Every P2P app was told once that its match keeps its content (tag `B` is the change), did
/// not restart, and advanced more than `frames` frames past `before`.
pub fn assert_refused_and_played_on(apps: &[App], before: &[u32], frames: u32) {
    for (a, b) in apps.iter().zip(before) {
        let l = log(a);
        assert_eq!(l.reloads.len(), 1, "{:?}", l.reloads);
        assert!(!l.reloads[0].0, "refused");
        assert!(l.reloads[0].1.contains("next match"), "{}", l.reloads[0].1);
        assert_eq!(l.started.len(), 1, "no restart");
        let m = a.world().resource::<AbilitiesMatch<Tiny>>();
        assert!(m.world().next_frame() > b + frames, "the match played on");
        assert!(m.world().content().tag("B").is_err(), "with its content");
    }
}
