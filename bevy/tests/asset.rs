//! Content as a Bevy asset (`AbilitiesPlugin::from_asset`): loaded through the asset server, a
//! broken file a message naming file, line and column, a reload restarting a sync test and
//! refused by a P2P match.

use crate::common::TICK;
use crate::content::{
    Tiny, assert_refused_and_played_on, collect, file, log, one_actor_each, p2p_spec,
};
use bevy::MinimalPlugins;
use bevy::app::{App, Update};
use bevy::asset::{AssetPlugin, AssetServer};
use bevy::time::TimeUpdateStrategy;
use bevy_rollback_abilities::prelude::*;
use rollback_abilities::WorldConfig;
use rollback_abilities::session::{EmulatedNetwork, NetConditions};
use std::path::Path;

/// An app whose content is the asset `name` of the folder `dir`.
fn app(dir: &Path, name: &str, spec: MatchSpec) -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .add_plugins(AssetPlugin { file_path: dir.display().to_string(), ..AssetPlugin::default() })
        .insert_resource(TimeUpdateStrategy::ManualDuration(TICK))
        .add_plugins(
            AbilitiesPlugin::<Tiny>::from_asset(name)
                .config(WorldConfig { players: 2, max_entities: 4, ..WorldConfig::default() })
                .setup(one_actor_each),
        )
        .init_resource::<crate::content::Log>()
        .insert_resource(spec)
        .add_systems(Update, collect);
    app
}

/// Updates until `done` holds (at most `limit` updates); whether it did.
fn until(app: &mut App, limit: u32, done: impl Fn(&App) -> bool) -> bool {
    for _ in 0..limit {
        if done(app) {
            return true;
        }
        app.update();
    }
    done(app)
}

fn frame(app: &App) -> u32 {
    app.world().get_resource::<AbilitiesMatch<Tiny>>().map_or(0, |m| m.world().next_frame())
}

fn reload(app: &App, name: &str) {
    app.world().resource::<AssetServer>().reload(name.to_owned());
}

#[test]
fn a_broken_content_asset_is_a_match_ended_message_naming_file_line_and_column() {
    let path = file("asset_broken.gas.ron", "(\n    tags: [\"A\", 7],\n)\n");
    let dir = path.parent().unwrap();
    let mut app = app(dir, "asset_broken.gas.ron", MatchSpec::offline(2));
    assert!(until(&mut app, 500, |a| !log(a).ended.is_empty()), "the load failed");
    assert!(app.world().get_resource::<AbilitiesMatch<Tiny>>().is_none());
    let ended = &log(&app).ended;
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert!(ended[0].contains("asset_broken.gas.ron:2:"), "{}", ended[0]);
    assert!(log(&app).started.is_empty());
}

#[test]
fn a_reloaded_content_asset_restarts_a_sync_test_and_a_fixed_one_starts_it_again() {
    let name = "asset_reload.gas.ron";
    let path = file(name, "(tags: [\"A\"])");
    let dir = path.parent().unwrap();
    let mut app = app(dir, name, MatchSpec::sync_test(2));
    assert!(until(&mut app, 500, |a| frame(a) > 60), "the match started and ran");
    assert_eq!(log(&app).started.len(), 1);
    std::fs::write(&path, "(tags: [\"A\", \"B\"])").unwrap();
    reload(&app, name);
    assert!(until(&mut app, 500, |a| log(a).started.len() == 2), "restarted");
    let l = log(&app);
    assert_eq!(l.reloads.len(), 1, "{:?}", l.reloads);
    assert!(l.reloads[0].0, "applied");
    assert_ne!(l.started[0], l.started[1], "with the new content");
    let m = app.world().resource::<AbilitiesMatch<Tiny>>();
    assert!(m.world().next_frame() < 30, "from frame 0");
    assert!(m.world().content().tag("B").is_ok());
    // A broken edit ends the match with the error; fixing it starts a new one.
    std::fs::write(&path, "(tags: [\"A\", ").unwrap();
    reload(&app, name);
    assert!(until(&mut app, 500, |a| !log(a).ended.is_empty()), "ended");
    assert!(app.world().get_resource::<AbilitiesMatch<Tiny>>().is_none());
    assert!(log(&app).ended[0].contains(name), "{}", log(&app).ended[0]);
    std::fs::write(&path, "(tags: [\"C\"])").unwrap();
    reload(&app, name);
    assert!(until(&mut app, 500, |a| log(a).started.len() == 3), "started again");
    let m = app.world().resource::<AbilitiesMatch<Tiny>>();
    assert!(m.world().content().tag("C").is_ok());
}

#[test]
fn a_p2p_match_refuses_a_reloaded_content_asset_and_plays_on() {
    let name = "asset_p2p.gas.ron";
    let path = file(name, "(tags: [\"A\"])");
    let dir = path.parent().unwrap();
    let net = EmulatedNetwork::new(NetConditions::PERFECT, 9);
    let mut apps: Vec<App> = (0..2).map(|i| app(dir, name, p2p_spec(&net, i))).collect();
    let step = |apps: &mut Vec<App>| {
        apps.iter_mut().for_each(App::update);
        net.advance_ms(16);
    };
    for _ in 0..2000 {
        if apps.iter().all(|a| frame(a) > 20) {
            break;
        }
        step(&mut apps);
    }
    assert!(apps.iter().all(|a| frame(a) > 20), "the match runs");
    std::fs::write(&path, "(tags: [\"A\", \"B\"])").unwrap();
    for a in &apps {
        reload(a, name);
    }
    for _ in 0..2000 {
        if apps.iter().all(|a| !log(a).reloads.is_empty()) {
            break;
        }
        step(&mut apps);
    }
    let before: Vec<u32> = apps.iter().map(frame).collect();
    for _ in 0..60 {
        step(&mut apps);
    }
    assert_refused_and_played_on(&apps, &before, 40);
}
