//! Starting and ending matches: the builder path (content, hooks, configuration, setup), a
//! world that cannot be built as a message, removing the spec.

use crate::common::{Seen, TICK};
use bevy::MinimalPlugins;
use bevy::app::{App, Update};
use bevy::prelude::{MessageReader, ResMut};
use bevy::time::TimeUpdateStrategy;
use bevy_rollback_abilities::prelude::*;
use rollback_abilities::{Content, Game, Hooks, World, WorldConfig};
use std::sync::Arc;

struct Tiny;

impl Game for Tiny {
    type Input = u8;
    type Component = [u8; 8];
    type Global = ();
}

fn content() -> Arc<Content> {
    Arc::new(Content::from_ron_str("()").expect("empty content"))
}

fn two_actors(w: &mut World<Tiny>) -> Result<(), String> {
    for p in 0..2 {
        let e = w.spawn_actor(&[]).map_err(|e| e.to_string())?;
        w.bind_player(p, e);
    }
    Ok(())
}

fn collect(
    mut seen: ResMut<Seen>,
    mut started: MessageReader<MatchStarted>,
    mut ended: MessageReader<MatchEnded>,
) {
    seen.started += started.read().count();
    seen.ended.extend(ended.read().map(|m| m.reason.clone()));
}

fn tiny_app(setup: fn(&mut World<Tiny>) -> Result<(), String>) -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(TICK))
        .add_plugins(
            AbilitiesPlugin::<Tiny>::new(content())
                .hooks(Hooks::new)
                .config(WorldConfig { players: 2, max_entities: 4, ..WorldConfig::default() })
                .setup(setup),
        )
        .init_resource::<Seen>()
        .add_systems(Update, collect);
    app
}

#[test]
fn a_match_built_from_content_and_setup_runs_offline_and_ends_when_its_spec_goes() {
    let mut app = tiny_app(two_actors);
    app.update();
    assert!(app.world().get_resource::<AbilitiesMatch<Tiny>>().is_none(), "no spec, no match");
    app.insert_resource(MatchSpec::offline(2));
    for _ in 0..30 {
        app.update();
    }
    let m = app.world().resource::<AbilitiesMatch<Tiny>>();
    assert_eq!(m.kind(), "offline");
    assert!(m.world().next_frame() >= 28);
    // Offline: every simulated frame is confirmed at once.
    assert_eq!(m.confirmed_frame(), Some(m.world().next_frame() - 1));
    assert_eq!(app.world().resource::<LocalPlayers>().0, vec![0, 1]);
    assert_eq!(app.world().resource::<SimViews>().len(), 2);
    assert_eq!(app.world().resource::<Seen>().started, 1);
    app.world_mut().remove_resource::<MatchSpec>();
    app.update();
    app.update();
    assert!(app.world().get_resource::<AbilitiesMatch<Tiny>>().is_none());
    assert!(app.world().resource::<SimViews>().is_empty());
    let world = app.world_mut();
    assert_eq!(world.query::<&SimEntity>().iter(world).count(), 0, "the views went too");
}

#[test]
fn a_world_that_cannot_be_built_is_a_match_ended_message() {
    let mut app = tiny_app(|_| Err("the arena has no spawn points".into()));
    app.insert_resource(MatchSpec::sync_test(2));
    for _ in 0..3 {
        app.update();
    }
    assert!(app.world().get_resource::<AbilitiesMatch<Tiny>>().is_none());
    let seen = app.world().resource::<Seen>();
    assert_eq!(seen.ended, vec!["the arena has no spawn points".to_string()]);
    assert_eq!(seen.started, 0);
}

/// The plugin's script runs inside every simulated frame: the kit's arena, started at frame 0
/// and warmed up by its script under an offline match, is the arena `Arena::new` builds.
#[test]
fn a_script_runs_inside_every_frame() {
    use rollback_abilities_kit::arena::{Arena, ArenaGame, ArenaSpec};
    let spec = ArenaSpec { entities: 32, ..ArenaSpec::default() };
    let script = Arena::unwarmed(spec).warmup();
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(TICK))
        .add_plugins(
            AbilitiesPlugin::<ArenaGame>::from_world(move || Ok(Arena::unwarmed(spec).world))
                .script(script),
        )
        .insert_resource(MatchSpec::offline(2))
        .add_systems(
            ReadInputs,
            |mut commands: bevy::prelude::Commands, frame: bevy::prelude::Res<InputFrame>| {
                let mut inputs = LocalInputs::<ArenaGame>::default();
                inputs.0.extend(Arena::player_inputs(frame.0).into_iter().enumerate());
                commands.insert_resource(inputs);
            },
        );
    let frame = |app: &App| {
        app.world()
            .get_resource::<AbilitiesMatch<ArenaGame>>()
            .map_or(0, |m| m.world().next_frame())
    };
    while frame(&app) < 182 {
        app.update();
    }
    let mut arena = Arena::new(spec);
    while arena.world.next_frame() < 182 {
        arena.step();
    }
    let m = app.world().resource::<AbilitiesMatch<ArenaGame>>();
    assert_eq!(m.world().next_frame(), 182);
    assert_eq!(m.world().checksum(), arena.world.checksum());
}
