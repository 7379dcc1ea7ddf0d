//! The kit's duel under the plugin, headless (no window): two bots fight in a sync test that
//! rolls every frame back 7 frames and re-simulates it, yet each hit arrives once as a
//! `CueMessage`; a HUD system reads the fighters' health from the match every second.
//!
//!     cargo run -p bevy_rollback_abilities --example headless -- [FRAMES] [offline|synctest]

use bevy::MinimalPlugins;
use bevy::app::{App, Update};
use bevy::prelude::{MessageReader, Res};
use bevy::time::TimeUpdateStrategy;
use bevy_rollback_abilities::prelude::*;
use rollback_abilities::ui::{EventFilter, UiCall, UiEventKind};
use rollback_abilities_kit::duel::{self, Duel};
use std::time::Duration;

const SEED: u64 = 7;

/// Exactly as with bevy_ggrs: fill `LocalInputs` for the `LocalPlayers` in `ReadInputs` (here
/// the kit's bot, reading the match's world; a game reads the keyboard).
fn read_bots(
    mut commands: bevy::prelude::Commands,
    local: Res<LocalPlayers>,
    frame: Res<InputFrame>,
    m: Res<AbilitiesMatch<Duel>>,
) {
    let world = m.world();
    let mut inputs = LocalInputs::<Duel>::default();
    for &p in &local.0 {
        inputs.0.insert(p, duel::bot_input(&world, p, frame.0, SEED));
    }
    commands.insert_resource(inputs);
}

/// Cues: played once, cancelled if a rollback proves them wrong, confirmed when final.
fn cues(mut cues: MessageReader<CueMessage>, m: Res<AbilitiesMatch<Duel>>) {
    let world = m.world();
    for c in cues.read() {
        if matches!(c.phase, CuePhase::Played | CuePhase::Cancelled) {
            let tag = world.content().tag_name(c.cue.key.tag);
            println!("frame {:>4}: {:?} {tag} on {:?}", c.cue.key.frame, c.phase, c.view);
        }
    }
}

/// UI notices: damage numbers (Health going down), shown once.
fn damage(mut ui: MessageReader<UiMessage>) {
    for n in ui.read() {
        if n.notice.call == UiCall::Shown
            && let Some(delta) = n.notice.event.delta()
            && delta < 0
        {
            println!("frame {:>4}: {:?} takes {}", n.notice.event.key.frame, n.view, -delta);
        }
    }
}

/// A HUD: the fighters' health, read from the match once a second.
fn hud(m: Res<AbilitiesMatch<Duel>>) {
    let world = m.world();
    if !world.next_frame().is_multiple_of(60) {
        return;
    }
    let Ok(health) = world.content().attr("Health") else { return };
    let hp: Vec<String> = (0..2)
        .filter_map(|p| world.player_owner(p))
        .map(|e| format!("{}", world.attr(e, health).unwrap_or_default()))
        .collect();
    println!("frame {:>4}: health {}", world.next_frame(), hp.join(" / "));
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
    let mut args = std::env::args().skip(1);
    let frames: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(600);
    let spec = match args.next().as_deref() {
        Some("offline") => MatchSpec::offline(2),
        _ => MatchSpec::sync_test(2).check_distance(7),
    };
    let health = duel::content().attr("Health").expect("the duel has Health");
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        // One tick per update, whatever the machine's speed.
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_nanos(16_666_667)))
        .add_plugins(
            AbilitiesPlugin::<Duel>::from_world(|| {
                duel::try_new_world(SEED, 2).map_err(|e| e.to_string())
            })
            .subscribe(EventFilter::kinds(&[UiEventKind::AttributeChanged]).attribute(health)),
        )
        .insert_resource(spec)
        .add_systems(ReadInputs, read_bots)
        .add_systems(Update, (cues, damage, hud, session));
    let m = |app: &App| app.world().get_resource::<AbilitiesMatch<Duel>>().map(|m| m.stats());
    while m(&app).is_none_or(|s| s.frames < u64::from(frames)) {
        app.update();
        if app.world().get_resource::<AbilitiesMatch<Duel>>().is_some_and(|m| m.has_ended()) {
            break;
        }
    }
    if let Some(stats) = m(&app) {
        println!(
            "{} frames, {} re-simulated in {} rollbacks",
            stats.frames, stats.resimulated, stats.rollbacks
        );
    }
}
