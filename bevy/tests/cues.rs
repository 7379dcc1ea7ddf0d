//! Cue and UI messages exactly once under forced rollbacks, checked against the crate's
//! `PresenterLog` and `UiLog`; cue effect entities follow their cues.

use crate::common::{SEED, app, bot, next_frame, peer_apps, seen, state, synchronize, update};
use bevy::app::App;
use bevy::prelude::Entity;
use bevy_rollback_abilities::{CueFx, CueMessage, CuePhase, MatchSpec, NetSettings, UiMessage};
use ggrs::SessionBuilder;
use rollback_abilities::present::{CueDirector, PresenterCall, PresenterLog};
use rollback_abilities::session::{EmulatedNetwork, GgrsConfig, NetConditions, PeerAddr, Runner};
use rollback_abilities::ui::{EventDirector, EventFilter, UiCall, UiLog, UiNotice};
use rollback_abilities::{CueKey, CueKind};
use rollback_abilities_kit::duel::{self, Duel};
use std::collections::BTreeSet;

/// The presenter calls the cue messages carry (`retimed` is not a `PresenterLog` call).
pub fn presenter_log(cues: &[CueMessage]) -> PresenterLog {
    let mut log = PresenterLog::default();
    for m in cues {
        let k = m.cue.key;
        let call = match m.phase {
            CuePhase::Played => PresenterCall::Play(k),
            CuePhase::Cancelled => PresenterCall::Cancel(k),
            CuePhase::Activated => PresenterCall::OnActive(k),
            CuePhase::Shown => PresenterCall::WhileActive(k),
            CuePhase::Removed(r) => PresenterCall::Removed(k, r),
            CuePhase::Confirmed => PresenterCall::Confirmed(k),
            CuePhase::Retimed { .. } => continue,
        };
        log.calls.push((0, call));
    }
    log
}

fn ui_log(ui: &[UiMessage]) -> UiLog {
    UiLog { notices: ui.iter().map(|m| m.notice).collect() }
}

/// The same sync test as the app's, through a bare `Runner` presenting into a `PresenterLog`
/// and draining a UI director subscribed to everything.
fn bare_synctest(frames: u32, check_distance: usize) -> (PresenterLog, Vec<UiNotice>) {
    let net = NetSettings::default();
    let mut session = SessionBuilder::<GgrsConfig<Duel, PeerAddr>>::new()
        .with_num_players(2)
        .unwrap()
        .with_max_prediction_window(net.max_prediction)
        .with_input_delay(net.input_delay)
        .with_check_distance(check_distance)
        .start_synctest_session()
        .unwrap();
    let mut runner = Runner::new(duel::new_world(SEED, 2), net.max_prediction, 0);
    runner.director = Some(CueDirector::new());
    let mut ui = EventDirector::new();
    ui.subscribe(EventFilter::all());
    runner.ui_events = Some(ui);
    let mut log = PresenterLog::default();
    let mut notices = Vec::new();
    while runner.world().next_frame() < frames {
        let f = runner.world().next_frame() + net.input_delay as u32;
        let inputs = [bot(0, f), bot(1, f)];
        runner.advance_synctest(&mut session, &inputs, Some(&mut log), |_| {}).unwrap();
        notices.extend(runner.ui_events.as_mut().unwrap().drain_all());
    }
    (log, notices)
}

fn run_to(app: &mut App, frames: u32) {
    while next_frame(app) < frames {
        app.update();
    }
}

#[test]
fn cue_and_ui_messages_are_the_directors_calls_exactly_once_under_a_sync_test() {
    const FRAMES: u32 = 900;
    let mut app = app(MatchSpec::sync_test(2).check_distance(7));
    run_to(&mut app, FRAMES);
    let (want, want_ui) = bare_synctest(FRAMES, 7);
    let got = presenter_log(&seen(&app).cues);
    // Call for call what the director told a bare runner's presenter, although every frame
    // was simulated eight times.
    assert_eq!(got.calls().collect::<Vec<_>>(), want.calls().collect::<Vec<_>>());
    got.check_invariants().unwrap();
    assert!(got.count(|c| matches!(c, PresenterCall::Play(_))) > 10);
    assert!(got.count(|c| matches!(c, PresenterCall::WhileActive(_))) > 0);
    let ui = ui_log(&seen(&app).ui);
    assert_eq!(ui.notices, want_ui);
    ui.check_invariants().unwrap();
    assert!(ui.count(|n| n.call == UiCall::Shown) > 100);
    // Every shown persistent cue has its effect entity; every other effect entity is a burst
    // the app now owns (confirmed).
    let shown: BTreeSet<CueKey> =
        state(&app).runner().director.as_ref().unwrap().shown().map(|c| c.key).collect();
    let world = app.world_mut();
    let fx: Vec<CueFx> = world.query::<&CueFx>().iter(world).copied().collect();
    let persistent: BTreeSet<CueKey> =
        fx.iter().filter(|f| f.cue.key.kind != CueKind::Executed).map(|f| f.cue.key).collect();
    assert_eq!(persistent, shown);
    assert!(fx.iter().filter(|f| f.cue.key.kind == CueKind::Executed).all(|f| f.confirmed));
}

/// The calls a viewer finally saw of cues that started before `frame`: bursts played and
/// persistent cues activated.
fn starts_before(log: &PresenterLog, frame: u32) -> Vec<PresenterCall> {
    log.reconciled()
        .into_iter()
        .filter(|c| matches!(c, PresenterCall::Play(_) | PresenterCall::OnActive(_)))
        .filter(|c| c.key().frame < frame)
        .collect()
}

fn confirmed_before(ui: &UiLog, frame: u32) -> Vec<(u32, String)> {
    let mut v: Vec<_> = ui
        .confirmed()
        .into_iter()
        .filter(|(_, e)| e.key.frame < frame)
        .map(|(_, e)| (e.key.frame, format!("{e:?}")))
        .collect();
    v.sort();
    v
}

#[test]
fn under_mispredictions_cancelled_cues_lose_their_effect_entities_and_the_match_shows_what_a_straight_run_shows()
 {
    const FRAMES: u32 = 1200;
    // No input delay, and 60-90 ms between the peers: every change of a remote input is
    // predicted wrong for several frames.
    let settings = NetSettings { input_delay: 0, departure_ticks: 0, ..NetSettings::default() };
    let laggy = NetConditions {
        latency_ms: 60,
        jitter_ms: 30,
        loss_percent: 5,
        duplicate_percent: 0,
        reorder_percent: 0,
    };
    // The straight run: no rollback at all. Then three seeded matches of the two peers (a cue
    // predicted wrong is rare enough that one seed may see none).
    let mut straight = app(MatchSpec::sync_test(2).check_distance(0).net(settings));
    run_to(&mut straight, FRAMES + 100);
    let want = starts_before(&presenter_log(&seen(&straight).cues), FRAMES);
    let want_ui = confirmed_before(&ui_log(&seen(&straight).ui), FRAMES);
    let mut cancelled = 0;
    for seed in [21, 22, 23] {
        let net = EmulatedNetwork::new(laggy, seed);
        let mut apps = peer_apps(&net, 2, settings);
        synchronize(&mut apps, &net);
        while apps.iter().any(|a| state(a).confirmed_frame().is_none_or(|c| c < FRAMES + 50)) {
            update(&mut apps, &net);
        }
        for a in &mut apps {
            let log = presenter_log(&seen(a).cues);
            log.check_invariants().unwrap();
            assert_eq!(starts_before(&log, FRAMES), want);
            let ui = ui_log(&seen(a).ui);
            ui.check_invariants().unwrap();
            assert_eq!(confirmed_before(&ui, FRAMES), want_ui);
            // A cancelled burst's effect entity is gone.
            let gone: Vec<Entity> = seen(a)
                .cues
                .iter()
                .filter(|m| matches!(m.phase, CuePhase::Cancelled))
                .filter_map(|m| m.fx)
                .collect();
            cancelled += gone.len();
            assert!(gone.iter().all(|e| a.world().get_entity(*e).is_err()));
        }
    }
    assert!(cancelled > 0, "the harsh network made some predicted cue wrong");
}
