//! The test app: the kit's duel under the plugin, bots reading [`InputFrame`], every message
//! collected into a resource.

use bevy::MinimalPlugins;
use bevy::app::{App, Update};
use bevy::prelude::{MessageReader, Res, ResMut, Resource};
use bevy::time::TimeUpdateStrategy;
use bevy_rollback_abilities::prelude::*;
use ggrs::PlayerType;
use rollback_abilities::session::{EmulatedNetwork, PeerAddr, Runner, SessionEvent};
use rollback_abilities::ui::EventFilter;
use rollback_abilities_kit::duel::{self, Duel, Input};
use std::sync::OnceLock;
use std::time::Duration;

/// The match seed.
pub const SEED: u64 = 7;

/// One tick per update: a little over a 60th of a second, so the accumulator never falls short.
pub const TICK: Duration = Duration::from_nanos(16_666_667);

/// Frames of scripted input.
const SCRIPT_FRAMES: usize = 2048;

/// The bots' input, a function of the player and the frame only (so every run and peer
/// agrees): what the kit's duel bot chose for that frame in a straight run of the same match
/// (walking, jabs cancelled into heavy attacks, fireballs, shields), recorded once. Remote
/// peers mispredict its changes, so cues get predicted and cancelled.
pub fn bot(player: usize, frame: u32) -> Input {
    static SCRIPT: OnceLock<Vec<[Input; 2]>> = OnceLock::new();
    let script = SCRIPT.get_or_init(|| {
        let mut w = duel::new_world(SEED, 2);
        (0..SCRIPT_FRAMES as u32)
            .map(|f| {
                let inputs = [0, 1].map(|p| duel::bot_input(&w, p, f, SEED));
                w.step(&inputs);
                inputs
            })
            .collect()
    });
    script.get(frame as usize).map_or_else(Input::default, |i| i[player.min(1)])
}

/// Every message the plugin sent, in order.
#[derive(Resource, Default)]
pub struct Seen {
    pub cues: Vec<CueMessage>,
    pub ui: Vec<UiMessage>,
    pub session: Vec<SessionEvent>,
    pub mismatches: usize,
    pub desyncs: usize,
    pub started: usize,
    pub ended: Vec<String>,
}

fn read_bots(
    mut commands: bevy::prelude::Commands,
    frame: Res<InputFrame>,
    local: Res<LocalPlayers>,
) {
    let mut inputs = LocalInputs::<Duel>::default();
    for &p in &local.0 {
        inputs.0.insert(p, bot(p, frame.0));
    }
    commands.insert_resource(inputs);
}

#[allow(
    clippy::too_many_arguments,
    reason = "a Bevy system: each argument is a resource or message reader it reads"
)]
fn collect(
    mut seen: ResMut<Seen>,
    mut cues: MessageReader<CueMessage>,
    mut ui: MessageReader<UiMessage>,
    mut session: MessageReader<SessionMessage>,
    mut mismatches: MessageReader<SyncTestMismatch>,
    mut desyncs: MessageReader<DesyncDetected>,
    mut started: MessageReader<MatchStarted>,
    mut ended: MessageReader<MatchEnded>,
) {
    seen.cues.extend(cues.read().copied());
    seen.ui.extend(ui.read().copied());
    seen.session.extend(session.read().map(|m| m.0.clone()));
    seen.mismatches += mismatches.read().count();
    seen.desyncs += desyncs.read().count();
    seen.started += started.read().count();
    seen.ended.extend(ended.read().map(|m| m.reason.clone()));
}

/// A headless app playing the duel (2 fighters) under `spec`, recording confirmed frames,
/// subscribed to every UI event.
pub fn app(spec: MatchSpec) -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(TICK))
        .add_plugins(
            AbilitiesPlugin::<Duel>::from_world(|| {
                duel::try_new_world(SEED, 2).map_err(|e| e.to_string())
            })
            .record(60)
            .subscribe(EventFilter::all()),
        )
        .init_resource::<Seen>()
        .insert_resource(spec)
        .add_systems(ReadInputs, read_bots)
        .add_systems(Update, collect);
    app
}

/// The app's match.
pub fn state(app: &App) -> &AbilitiesMatch<Duel> {
    app.world().resource::<AbilitiesMatch<Duel>>()
}

/// The messages the app saw.
pub fn seen(app: &App) -> &Seen {
    app.world().resource::<Seen>()
}

/// The world's next frame (0 before the match starts).
pub fn next_frame(app: &App) -> u32 {
    app.world().get_resource::<AbilitiesMatch<Duel>>().map_or(0, |m| m.world().next_frame())
}

/// The checksums of the confirmed frames a runner recorded.
pub fn confirmed_checksums(runner: &Runner<Duel>) -> Vec<u64> {
    runner
        .recorder()
        .map(|r| r.replay().frames.iter().map(|f| f.checksum).collect())
        .unwrap_or_default()
}

/// The apps of an `n`-player match on `net`, player `i` local in app `i`.
pub fn peer_apps(net: &EmulatedNetwork, n: usize, settings: NetSettings) -> Vec<App> {
    (0..n)
        .map(|i| {
            let players = (0..n)
                .map(|j| {
                    if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j as u16)) }
                })
                .collect();
            app(MatchSpec::p2p_emulated(net.socket(PeerAddr(i as u16)), players).net(settings))
        })
        .collect()
}

/// Updates every app once, then moves the network's clock by a tick.
pub fn update(apps: &mut [App], net: &EmulatedNetwork) {
    for a in apps.iter_mut() {
        a.update();
    }
    net.advance_ms(16);
}

/// Updates on an unimpaired network until every app's match runs, then switches the
/// impairments on.
pub fn synchronize(apps: &mut [App], net: &EmulatedNetwork) {
    net.set_impaired(false);
    for _ in 0..2000 {
        update(apps, net);
        if apps.iter().all(|a| next_frame(a) > 0) {
            net.set_impaired(true);
            return;
        }
    }
    panic!("the apps never synchronised");
}
