//! The box game (bevy/examples/box_game/src/game.rs, bevy_ggrs's `box_game` ported onto the
//! plugin) headless: two apps over a laggy emulated network confirm a bare runner's checksums,
//! every player's input moves its own box, and each dash's cue reaches Bevy as a straight run
//! shows it, exactly once.

#[path = "../examples/box_game/src/game.rs"]
mod game;

use crate::cues::presenter_log;
use bevy::MinimalPlugins;
use bevy::app::{App, Update};
use bevy::prelude::{MessageReader, Res, ResMut, Resource};
use bevy::time::TimeUpdateStrategy;
use bevy_rollback_abilities::prelude::*;
use game::{BoxBody, BoxGame};
use ggrs::PlayerType;
use rollback_abilities::present::PresenterCall;
use rollback_abilities::session::{
    EmulatedNetwork, LocalMatch, MatchConfig, NetConditions, PeerAddr, Runner,
};

const TICK: std::time::Duration = std::time::Duration::from_nanos(16_666_667);

/// Every cue message, in order.
#[derive(Resource, Default)]
struct Cues(Vec<CueMessage>);

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

fn collect(mut seen: ResMut<Cues>, mut cues: MessageReader<CueMessage>) {
    seen.0.extend(cues.read().copied());
}

fn box_app(spec: MatchSpec) -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(TICK))
        .add_plugins(AbilitiesPlugin::<BoxGame>::from_world(|| game::new_world(2)).record(60))
        .init_resource::<Cues>()
        .insert_resource(spec)
        .add_systems(ReadInputs, read_inputs)
        .add_systems(Update, collect);
    app
}

fn state(app: &App) -> &AbilitiesMatch<BoxGame> {
    app.world().resource::<AbilitiesMatch<BoxGame>>()
}

fn confirmed_checksums(runner: &Runner<BoxGame>) -> Vec<u64> {
    runner
        .recorder()
        .map(|r| r.replay().frames.iter().map(|f| f.checksum).collect())
        .unwrap_or_default()
}

/// The dashes a viewer finally saw start before `frame` (the dash cue is shown while the
/// effect lasts): (frame, entity index).
fn dashes_before(cues: &[CueMessage], frame: u32) -> Vec<(u32, usize)> {
    let mut v: Vec<(u32, usize)> = presenter_log(cues)
        .reconciled()
        .into_iter()
        .filter(|c| matches!(c, PresenterCall::WhileActive(_)))
        .map(|c| c.key())
        .filter(|k| k.frame < frame)
        .map(|k| (k.frame, k.target.index as usize))
        .collect();
    v.sort();
    v
}

#[test]
fn two_box_game_apps_over_a_laggy_network_confirm_a_bare_runners_checksums_and_show_each_dash_once()
{
    const FRAMES: u32 = 600;
    let settings = NetSettings { input_delay: 0, departure_ticks: 0, ..NetSettings::default() };
    let laggy = NetConditions {
        latency_ms: 60,
        jitter_ms: 30,
        loss_percent: 5,
        duplicate_percent: 0,
        reorder_percent: 0,
    };
    // The bare runners: the crate's own two-peer match, no Bevy.
    let config = MatchConfig {
        players: 2,
        input_delay: 0,
        conditions: laggy,
        net_seed: 5,
        ..MatchConfig::default()
    };
    let mut bare = LocalMatch::<BoxGame>::new(config, |_| game::new_world(2).expect("a world"))
        .expect("a local match");
    for p in bare.peers_mut() {
        p.runner.record(60);
    }
    bare.synchronize().expect("synchronised");
    bare.run(FRAMES + 10, |p, f, _| game::scripted(p, f)).expect("the bare match runs");
    let want = confirmed_checksums(&bare.peers()[0].runner);
    assert!(want.len() >= FRAMES as usize);

    // The straight run under the plugin: no rollback at all.
    let mut straight = box_app(MatchSpec::sync_test(2).check_distance(0).net(settings));
    while state_frame(&straight) < FRAMES + 100 {
        straight.update();
    }
    let want_dashes = dashes_before(&straight.world().resource::<Cues>().0, FRAMES);

    let net = EmulatedNetwork::new(laggy, 21);
    let mut apps: Vec<App> = (0..2)
        .map(|i| {
            let players = (0..2)
                .map(|j| {
                    if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j as u16)) }
                })
                .collect();
            box_app(MatchSpec::p2p_emulated(net.socket(PeerAddr(i as u16)), players).net(settings))
        })
        .collect();
    // Synchronised on a clean network, then the impairments.
    net.set_impaired(false);
    let mut updates = 0;
    while apps.iter().any(|a| state_frame(a) == 0) {
        for a in &mut apps {
            a.update();
        }
        net.advance_ms(16);
        updates += 1;
        assert!(updates < 2_000, "the apps never synchronised");
    }
    net.set_impaired(true);
    while apps.iter().any(|a| {
        a.world()
            .get_resource::<AbilitiesMatch<BoxGame>>()
            .and_then(|m| m.confirmed_frame())
            .is_none_or(|c| c < FRAMES + 50)
    }) {
        for a in &mut apps {
            a.update();
        }
        net.advance_ms(16);
        updates += 1;
        assert!(updates < 20_000, "the match stalled");
    }
    for a in &apps {
        let m = state(a);
        assert!(m.stats().rollbacks > 0, "the laggy network made the apps roll back");
        assert_eq!(confirmed_checksums(&m.runner())[..FRAMES as usize], want[..FRAMES as usize]);
        let cues = &a.world().resource::<Cues>().0;
        presenter_log(cues).check_invariants().unwrap();
        assert_eq!(dashes_before(cues, FRAMES), want_dashes);
    }
    // Every player's input moves its own box: the scripted players steer apart.
    let w = state(&apps[0]).world();
    let bodies: Vec<BoxBody> = w.entities().filter_map(|e| w.component(e).copied()).collect();
    let start = game::new_world(2).expect("a world");
    let starts: Vec<BoxBody> =
        start.entities().filter_map(|e| start.component(e).copied()).collect();
    assert_eq!(bodies.len(), 2);
    for (b, s) in bodies.iter().zip(&starts) {
        assert_ne!((b.x, b.y), (s.x, s.y), "box {} never moved", b.handle);
    }
    // Each player dashed every 90 frames (its cooldown is 60), and each dash was seen once.
    let per_player = |h: usize| want_dashes.iter().filter(|(_, t)| *t == h).count();
    assert!(per_player(0) >= 6 && per_player(1) >= 6, "{want_dashes:?}");
    assert!(
        want_dashes.iter().all(|(f, t)| (f + 45 * *t as u32).is_multiple_of(90)),
        "{want_dashes:?}"
    );
}

fn state_frame(app: &App) -> u32 {
    app.world().get_resource::<AbilitiesMatch<BoxGame>>().map_or(0, |m| m.world().next_frame())
}
