//! Cues under rollback (the exactly-once presenter): AS-24 in random-depth rollback and
//! prediction modes, mispredictions, snapshot rebuilds, routing, and a property test of the
//! presenter invariants.

use proptest::prelude::*;
use rollback_abilities::prelude::*;
use rollback_abilities::present::{
    Cue, CueCall, CueDirector, CueInstance, CueOptions, CueRouter, CueSession, PresenterLog,
    RemoveReason,
};
use rollback_abilities::session::{PredictionDriver, RollbackDriver};
use rollback_abilities::{AbilityInput, TagEvent};
use rollback_abilities::{CueKind, CueParams};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// Two players; input bit 0 holds Sprint (a `TagPresent` ability on `Input.Sprint`), bit 1
/// fires a hit on the other player every 3 frames while held.
pub struct SprintHitGame;

impl Game for SprintHitGame {
    type Input = u8;
    type Component = ();
    type Global = ();

    fn ability_input(input: &u8) -> AbilityInput {
        AbilityInput { held: u32::from(*input), ..AbilityInput::default() }
    }

    fn systems(world: &mut World<Self>) {
        let c = world.content().clone();
        let sprint_held = c.tag("Input.Sprint").unwrap();
        let hit = c.effect("Hit").unwrap();
        let frame = world.frame();
        for p in 0..2usize {
            let Some(me) = world.player_owner(p) else { continue };
            let Some(other) = world.player_owner(1 - p) else { continue };
            let input = world.input(p);
            let held = input & 1 != 0;
            if held != world.has_tag_exact(me, sprint_held) {
                world.set_loose_tag_count(me, sprint_held, u16::from(held));
            }
            if input & 2 != 0 && frame.is_multiple_of(3) {
                let spec = world.make_spec(hit, 1, me);
                world.queue_effect(spec, other);
            }
        }
    }
}

pub const ARENA: &str = r#"(
    tags: ["Input.Sprint", "Ability.Movement.Sprint", "GameplayCue.Sprint", "GameplayCue.Hit",
           "GameplayCue.Hit.Heavy", "GameplayCue.KO", "GameplayCue.Stun", "State.Debuff.Stun"],
    attribute_sets: { "Vitals": (attributes: { "Health": (default: 100000, min: Const(0)) }) },
    effects: {
        "Hit": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -3))],
                cues: [(tag: "GameplayCue.Hit")]),
        "Stun": (duration: Seconds(2), granted_tags: ["State.Debuff.Stun"], cues: [(tag: "GameplayCue.Stun")]),
    },
    abilities: {
        "Sprint": (tags: ["Ability.Movement.Sprint"], triggers: [TagPresent("Input.Sprint")],
                   activate_on_input: false, cues: ["GameplayCue.Sprint"]),
    },
    cues: { "GameplayCue.KO": (policy: Confirmed) },
)"#;

pub fn arena(text: &str) -> (World<SprintHitGame>, [Entity; 2]) {
    arena_players(text, 2)
}

/// [`arena`] with room for `players` inputs.
pub fn arena_players(text: &str, players: u16) -> (World<SprintHitGame>, [Entity; 2]) {
    let content = Arc::new(Content::from_ron_str(text).unwrap_or_else(|e| panic!("{e}")));
    let config = WorldConfig { seed: 7, players, ..WorldConfig::default() };
    let mut w = World::<SprintHitGame>::new(content.clone(), &Hooks::new(), config).unwrap();
    let vitals = content.attr_set("Vitals").unwrap();
    let a = w.spawn_actor(&[vitals]).unwrap();
    let b = w.spawn_actor(&[vitals]).unwrap();
    w.bind_player(0, a);
    w.bind_player(1, b);
    for e in [a, b] {
        w.grant_ability(e, content.ability("Sprint").unwrap(), 1).unwrap();
    }
    (w, [a, b])
}

/// The library's recording presenter under the names these tests use.
pub type Log = PresenterLog;
pub use rollback_abilities::present::PresenterCall as Call;

/// Scripted inputs of a 600-frame match: sprints and hits from both players.
pub fn script_inputs(frame: u32, buf: &mut Vec<u8>) {
    let a = u8::from((10..200).contains(&frame) || (300..420).contains(&frame))
        | (u8::from((50..80).contains(&frame) || (400..450).contains(&frame)) << 1);
    let b = u8::from((150..260).contains(&frame) || (500..560).contains(&frame))
        | (u8::from((120..140).contains(&frame) || (480..520).contains(&frame)) << 1);
    buf.extend([a, b]);
}

/// Mode (a): plain stepping, every frame confirmed at once.
pub fn plain_log(frames: u32) -> (Log, u64) {
    let (mut w, _) = arena(ARENA);
    let mut director = CueDirector::new();
    let mut log = Log::default();
    let mut buf = Vec::new();
    for f in 0..frames {
        buf.clear();
        script_inputs(f, &mut buf);
        w.step(&buf);
        director.ingest(w.output());
        director.reconcile(&w, Some(f), &mut log);
    }
    (log, w.checksum())
}

/// AS-24 mode (b): random-depth rollbacks; the reconciled log equals plain stepping's,
/// nothing is played twice, nothing is cancelled (no misprediction), duplicates are skipped.
#[test]
fn as24_random_depth_rollbacks_play_everything_exactly_once() {
    let (plain, plain_sum) = plain_log(600);
    plain.check_invariants().unwrap();
    assert!(plain.count(|c| matches!(c, Call::Play(_))) > 20);
    assert_eq!(plain.count(|c| matches!(c, Call::OnActive(_))), 4);

    let (mut w, _) = arena(ARENA);
    let mut driver = RollbackDriver::new(&w, 8, 24);
    let mut director = CueDirector::new();
    let mut log = Log::default();
    for _ in 0..600 {
        let mut session = CueSession { director: &mut director, presenter: &mut log };
        driver.advance_observed(&mut w, script_inputs, |_| {}, &mut session).unwrap();
    }
    director.reconcile(&w, Some(w.frame()), &mut log);
    log.check_invariants().unwrap();
    assert_eq!(w.checksum(), plain_sum);
    assert_eq!(log.count(|c| matches!(c, Call::Cancel(_))), 0);
    assert_eq!(log.reconciled(), plain.reconciled());
    let counters = director.counters();
    assert!(counters.deduplicated > 100, "{counters:?}");
    assert_eq!(counters.cancelled, 0);
    assert_eq!(counters.mispredicted, 0);
}

/// AS-24 mode (d) without a network: remote inputs arrive 4 frames late and are predicted;
/// mispredicted cues are cancelled or removed as mispredicted, and what remains equals plain
/// stepping.
#[test]
fn as24_predicted_inputs_cancel_exactly_the_mispredictions() {
    let (plain, plain_sum) = plain_log(600);
    for latency in [2u32, 4, 7] {
        let (mut w, _) = arena(ARENA);
        let mut driver = PredictionDriver::new(&w, 0, latency);
        let mut director = CueDirector::new();
        let mut log = Log::default();
        for _ in 0..600 {
            let mut session = CueSession { director: &mut director, presenter: &mut log };
            driver.advance(&mut w, script_inputs, |_| {}, &mut session);
        }
        director.reconcile(&w, Some(w.frame()), &mut log);
        log.check_invariants().unwrap();
        assert!(driver.stats().rollbacks > 0);
        assert_eq!(log.reconciled(), plain.reconciled(), "latency {latency}");
        let counters = director.counters();
        // Held-button predictions run past the releases, so some hits are predicted and then
        // cancelled.
        assert!(counters.cancelled > 0, "latency {latency}: {counters:?}");
        assert_eq!(counters.cancelled as usize, log.count(|c| matches!(c, Call::Cancel(_))));
        eprintln!("latency {latency}: {counters:?}");
        let _ = plain_sum;
    }
}

/// AS-24: a remote Sprint predicted at frame 100 that never happened shows OnActive and
/// WhileActive, then exactly one Removed{Mispredicted} when the rollback lands; with the
/// Confirmed policy nothing is shown.
#[test]
fn as24_mispredicted_sprint() {
    for confirmed_policy in [false, true] {
        let text = if confirmed_policy {
            ARENA.replace(
                r#"cues: { "GameplayCue.KO": (policy: Confirmed) },"#,
                r#"cues: { "GameplayCue.Sprint": (policy: Confirmed) },"#,
            )
        } else {
            ARENA.to_string()
        };
        let (mut w, [_, b]) = arena(&text);
        let mut director = CueDirector::new();
        let mut log = Log::default();
        for _ in 0..100 {
            w.step(&[0, 0]);
            director.ingest(w.output());
            director.reconcile(&w, Some(w.frame()), &mut log);
        }
        let snap = w.snapshot();
        // Predicted: the remote player (1) holds Sprint from 100.
        for _ in 100..104 {
            w.step(&[0, 1]);
            director.ingest(w.output());
        }
        director.reconcile(&w, Some(99), &mut log);
        let sprint_cue = w.content().tag("GameplayCue.Sprint").unwrap();
        // Corrected at 104: the press never happened.
        w.load(&snap).unwrap();
        director.rewound_to(100);
        for _ in 100..=104 {
            w.step(&[0, 0]);
            director.ingest(w.output());
        }
        director.reconcile(&w, Some(100), &mut log);
        for _ in 105..120 {
            w.step(&[0, 0]);
            director.ingest(w.output());
            director.reconcile(&w, Some(w.frame()), &mut log);
        }
        let sprint: Vec<&Call> = log
            .calls()
            .filter(|c| match c {
                Call::OnActive(k)
                | Call::WhileActive(k)
                | Call::Removed(k, _)
                | Call::Confirmed(k) => k.tag == sprint_cue,
                _ => false,
            })
            .collect();
        if confirmed_policy {
            assert!(sprint.is_empty(), "{sprint:?}");
        } else {
            assert_eq!(sprint.len(), 3, "{sprint:?}");
            assert!(matches!(sprint[0], Call::OnActive(k) if k.frame == 100 && k.target == b));
            assert!(matches!(sprint[1], Call::WhileActive(k) if k.frame == 100));
            assert!(matches!(sprint[2], Call::Removed(_, RemoveReason::Mispredicted)));
        }
        log.check_invariants().unwrap();
    }
}

/// AS-24 with AS-16: loading the frame-150 snapshot of a stun into a fresh presenter shows
/// `WhileActive(GameplayCue.Stun)` only, then `Removed` at 220.
#[test]
fn as24_snapshot_load_shows_while_active_only() {
    let (mut w, [a, b]) = arena(ARENA);
    let stun = w.content().effect("Stun").unwrap();
    let mut snap150 = None;
    for f in 0..=150u32 {
        w.step_with(&[0, 0], |w| {
            if f == 100 {
                let spec = w.make_spec(stun, 1, a);
                w.apply_effect(spec, b).unwrap();
            }
        });
        if f == 150 {
            snap150 = Some(w.snapshot());
        }
    }
    let (mut fresh, _) = arena(ARENA);
    fresh.load(&snap150.unwrap()).unwrap();
    let mut director = CueDirector::new();
    let mut log = Log::default();
    director.reset_from(&fresh, &mut log);
    let stun_cue = fresh.content().tag("GameplayCue.Stun").unwrap();
    assert_eq!(log.calls.len(), 1);
    assert!(
        matches!(log.calls[0].1, Call::WhileActive(k) if k.tag == stun_cue && k.target == b && k.frame == 100)
    );
    let mut removed_at = None;
    for f in 151..=230u32 {
        fresh.step(&[0, 0]);
        director.ingest(fresh.output());
        let before = log.calls.len();
        director.reconcile(&fresh, Some(f), &mut log);
        if log.calls[before..]
            .iter()
            .map(|(_, c)| c)
            .any(|c| matches!(c, Call::Removed(k, RemoveReason::Ended) if k.tag == stun_cue))
        {
            removed_at = Some(f);
        }
    }
    assert_eq!(removed_at, Some(220));
    assert_eq!(log.count(|c| matches!(c, Call::OnActive(_))), 0);
}

/// Persistent instances born and killed between two reconciles: a confirmed
/// one is presented late, all at once — `OnActive`, `WhileActive`, `Confirmed`,
/// `Removed(Ended)` — once its end frame is confirmed (late, never lost); a predicted one that a
/// correction erases is never shown at all (no blip). Executed cues of instant effects carry
/// their key and parameters; headless runs (no director) have identical checksums.
#[test]
fn no_blips_and_headless_checksums() {
    let (mut w, [a, b]) = arena(ARENA);
    let (mut headless, _) = arena(ARENA);
    let stun = w.content().effect("Stun").unwrap();
    let stun_cue = w.content().tag("GameplayCue.Stun").unwrap();
    let mut director = CueDirector::new();
    let mut log = Log::default();
    for f in 0..40u32 {
        let script = |w: &mut World<SprintHitGame>| {
            if f == 10 {
                let spec = w.make_spec(stun, 1, a).with_duration(2);
                w.apply_effect(spec, b).unwrap();
            }
        };
        w.step_with(&[0, 2], script);
        headless.step_with(&[0, 2], script);
        director.ingest(w.output());
        if f % 5 == 4 {
            log.at(f);
            director.reconcile(&w, Some(f), &mut log);
        }
    }
    // Born at 10, gone at 12, reconciled at 9 and 14: presented at 14, in one go.
    let stun_calls: Vec<(u32, Call)> =
        log.calls.iter().filter(|(_, c)| c.key().tag == stun_cue).copied().collect();
    let k = match stun_calls.first() {
        Some((_, Call::OnActive(k))) => *k,
        other => panic!("{other:?}"),
    };
    assert_eq!((k.frame, k.target), (10, b));
    assert_eq!(
        stun_calls,
        [
            (14, Call::OnActive(k)),
            (14, Call::WhileActive(k)),
            (14, Call::Confirmed(k)),
            (14, Call::Removed(k, RemoveReason::Ended)),
        ]
    );
    assert_eq!(director.counters().late, 1);
    assert!(log.count(|c| matches!(c, Call::Play(_))) > 0);
    assert_eq!(w.checksum(), headless.checksum());
    log.check_invariants().unwrap();

    // The same stun on a prediction that the correction erases: never shown, no blip.
    let (mut w, [a, b]) = arena(ARENA);
    let mut director = CueDirector::new();
    let mut log = Log::default();
    for f in 0..10u32 {
        w.step(&[0, 0]);
        director.ingest(w.output());
        director.reconcile(&w, Some(f), &mut log);
    }
    let snap = w.snapshot();
    for f in 10..15u32 {
        w.step_with(&[0, 0], |w| {
            if f == 10 {
                let spec = w.make_spec(stun, 1, a).with_duration(2);
                w.apply_effect(spec, b).unwrap();
            }
        });
        director.ingest(w.output());
    }
    director.reconcile(&w, Some(9), &mut log); // predicted: born at 10, gone at 12
    w.load(&snap).unwrap();
    director.rewound_to(10);
    for _ in 10..15u32 {
        w.step(&[0, 0]); // corrected: it never happened
        director.ingest(w.output());
    }
    director.reconcile(&w, Some(14), &mut log);
    assert_eq!(log.count(|c| c.key().tag == stun_cue), 0);
    assert_eq!(director.counters().late, 0);
}

/// Inputs of a match with short remote abilities: player 1 taps Sprint for one or two frames
/// at a time (a persistent cue active one or two frames), player 0 sprints and hits in longer
/// stretches. Frames from 532 on are idle.
pub fn tap_inputs(frame: u32, buf: &mut Vec<u8>) {
    const TAPS: &[(u32, u32)] = &[
        (30, 1),
        (61, 2),
        (95, 1),
        (131, 2),
        (170, 1),
        (200, 1),
        (236, 2),
        (262, 1),
        (290, 2),
        (321, 1),
        (355, 1),
        (380, 2),
        (401, 1),
        (433, 2),
        (470, 1),
        (505, 1),
        (530, 2),
    ];
    let b = u8::from(TAPS.iter().any(|&(at, n)| (at..at + n).contains(&frame)))
        | (u8::from((150..190).contains(&frame) || (400..440).contains(&frame)) << 1);
    let a = u8::from((10..60).contains(&frame) || (250..330).contains(&frame))
        | (u8::from((20..40).contains(&frame) || (300..320).contains(&frame)) << 1);
    buf.extend([a, b]);
}

/// The number of frames of [`tap_inputs`].
pub const TAP_FRAMES: u32 = 600;

/// One peer whose remote player's inputs arrive in bursts, as GGRS peers receive them over a
/// jittery network: the inputs of `burst` frames at a time, `latency` frames late (predicted
/// meanwhile by repeating the last known input). When the press and the release of a tap arrive
/// in the same burst, the rollback re-simulates the whole life of its persistent cue inside one
/// batch.
fn bursty(burst: usize, latency: usize) -> (Log, CueDirector) {
    let (mut w, _) = arena(ARENA);
    let frames = TAP_FRAMES as usize;
    let truth: Vec<[u8; 2]> = (0..frames as u32)
        .map(|f| {
            let mut buf = Vec::new();
            tap_inputs(f, &mut buf);
            [buf[0], buf[1]]
        })
        .collect();
    let mut ring = rollback_abilities::SnapshotRing::new(&w, latency + burst + 2);
    let mut director = CueDirector::new();
    let mut log = Log::default();
    let mut used: Vec<[u8; 2]> = Vec::new();
    let mut known = 0usize;
    let step = |w: &mut World<SprintHitGame>,
                ring: &mut rollback_abilities::SnapshotRing<SprintHitGame>,
                director: &mut CueDirector,
                used: &mut Vec<[u8; 2]>,
                f: usize,
                known: usize| {
        ring.save(w);
        let remote =
            if f < known { truth[f][1] } else { known.checked_sub(1).map_or(0, |k| truth[k][1]) };
        let inputs = [truth[f][0], remote];
        w.step(&inputs);
        director.ingest(w.output());
        if f < used.len() {
            used[f] = inputs;
        } else {
            used.push(inputs);
        }
    };
    for p in 0..frames {
        let arrived = ((p + 1).saturating_sub(latency) / burst * burst).max(known);
        if let Some(g) = (known..arrived.min(p)).find(|g| used[*g] != truth[*g]) {
            assert!(ring.load(&mut w, g as u32), "the ring lost frame {g}");
            director.rewound_to(g as u32);
            for h in g..p {
                step(&mut w, &mut ring, &mut director, &mut used, h, arrived);
            }
        }
        known = arrived;
        step(&mut w, &mut ring, &mut director, &mut used, p, known);
        log.at(p as u32);
        director.reconcile(&w, known.checked_sub(1).map(|k| k as u32), &mut log);
    }
    // Everything arrives (the last frames are idle: nothing was mispredicted there).
    log.at(frames as u32 - 1);
    director.reconcile(&w, Some(frames as u32 - 1), &mut log);
    (log, director)
}

/// The persistent instances whose start a presenter confirmed, sorted.
fn confirmed_instances(log: &Log, before: u32) -> Vec<rollback_abilities::CueKey> {
    let mut v: Vec<_> = log
        .calls()
        .filter_map(|c| match c {
            Call::Confirmed(k) if k.kind == CueKind::Added && k.frame < before => Some(*k),
            _ => None,
        })
        .collect();
    v.sort_unstable();
    v
}

/// A persistent cue that starts and ends inside one rollback batch (a remote
/// one-frame Sprint whose press and release arrive together) is presented late, never lost.
/// Every mode — plain stepping (reconciled every frame and every 5 frames), random-depth
/// rollbacks, predicted inputs, bursty remote inputs — gives the same presenter log once
/// predicted-then-cancelled pairs are taken out, and confirms the same persistent instances.
#[test]
fn short_remote_instances_agree_across_modes() {
    let (mut pw, [_, remote]) = arena(ARENA);
    let sprint = pw.content().tag("GameplayCue.Sprint").unwrap();
    let mut plain = Log::default();
    let mut sparse = Log::default();
    let (mut pd, mut sd) = (CueDirector::new(), CueDirector::new());
    let (mut sw, _) = arena(ARENA);
    let mut buf = Vec::new();
    for f in 0..TAP_FRAMES {
        buf.clear();
        tap_inputs(f, &mut buf);
        pw.step(&buf);
        pd.ingest(pw.output());
        pd.reconcile(&pw, Some(f), &mut plain);
        sw.step(&buf);
        sd.ingest(sw.output());
        if f % 5 == 4 || f + 1 == TAP_FRAMES {
            sd.reconcile(&sw, Some(f), &mut sparse);
        }
    }
    plain.check_invariants().unwrap();
    let want = plain.reconciled();
    let want_confirmed = confirmed_instances(&plain, TAP_FRAMES);
    // Every tap is an instance with its three calls in the plain log.
    let taps =
        plain.count(|c| matches!(c, Call::OnActive(k) if k.tag == sprint && k.target == remote));
    assert_eq!(taps, 17);
    assert_eq!(pd.counters().late, 0);
    assert!(sd.counters().late > 0, "{:?}", sd.counters());
    assert_eq!(sparse.reconciled(), want, "plain stepping reconciled every 5 frames");
    assert_eq!(confirmed_instances(&sparse, TAP_FRAMES), want_confirmed);

    let (mut w, _) = arena(ARENA);
    let mut driver = RollbackDriver::new(&w, 8, 17);
    let mut director = CueDirector::new();
    let mut log = Log::default();
    for _ in 0..TAP_FRAMES {
        let mut session = CueSession { director: &mut director, presenter: &mut log };
        driver.advance_observed(&mut w, tap_inputs, |_| {}, &mut session).unwrap();
    }
    director.reconcile(&w, Some(w.frame()), &mut log);
    log.check_invariants().unwrap();
    assert_eq!(log.reconciled(), want, "random-depth rollbacks");
    assert_eq!(confirmed_instances(&log, TAP_FRAMES), want_confirmed);

    for latency in [2u32, 5] {
        let (mut w, _) = arena(ARENA);
        let mut driver = PredictionDriver::new(&w, 0, latency);
        let mut director = CueDirector::new();
        let mut log = Log::default();
        for _ in 0..TAP_FRAMES {
            let mut session = CueSession { director: &mut director, presenter: &mut log };
            driver.advance(&mut w, tap_inputs, |_| {}, &mut session);
        }
        director.reconcile(&w, Some(w.frame()), &mut log);
        log.check_invariants().unwrap();
        assert_eq!(log.reconciled(), want, "predicted inputs, latency {latency}");
        assert_eq!(confirmed_instances(&log, TAP_FRAMES), want_confirmed, "latency {latency}");
    }

    let mut late = 0;
    for (burst, latency) in [(2, 1), (3, 2), (4, 5)] {
        let (log, director) = bursty(burst, latency);
        log.check_invariants().unwrap();
        assert_eq!(log.reconciled(), want, "bursts of {burst}, {latency} frames late");
        assert_eq!(
            confirmed_instances(&log, TAP_FRAMES),
            want_confirmed,
            "bursts of {burst}, {latency} frames late"
        );
        late += director.counters().late;
    }
    // The bursts did hide whole instances inside one batch.
    assert!(late > 0);
}

/// A persistent cue that starts and ends inside one rollback batch, over GGRS: two peers over
/// a lossy, jittery network. Each peer's presenter
/// log, once predicted-then-cancelled pairs are taken out, equals plain stepping's, and every
/// peer confirms the instances plain stepping confirms — including the remote player's
/// one-frame sprints whose press and release arrived in one packet.
#[test]
fn short_remote_instances_agree_over_ggrs() {
    use rollback_abilities::present::Presenter;
    use rollback_abilities::session::{LocalMatch, MatchConfig, NetConditions};
    let (mut pw, _) = arena(ARENA);
    let mut pd = CueDirector::new();
    let mut plain = Log::default();
    let mut buf = Vec::new();
    for f in 0..TAP_FRAMES {
        buf.clear();
        tap_inputs(f, &mut buf);
        pw.step(&buf);
        pd.ingest(pw.output());
        pd.reconcile(&pw, Some(f), &mut plain);
    }
    let want = plain.reconciled();
    let want_confirmed = confirmed_instances(&plain, TAP_FRAMES);
    let config = MatchConfig {
        input_delay: 0,
        conditions: NetConditions {
            latency_ms: 50,
            jitter_ms: 40,
            loss_percent: 15,
            ..NetConditions::PERFECT
        },
        net_seed: 7,
        ..MatchConfig::default()
    };
    let mut m = LocalMatch::<SprintHitGame>::new(config, |_| arena(ARENA).0).unwrap();
    for p in m.peers_mut() {
        p.runner.director = Some(CueDirector::new());
    }
    m.synchronize().unwrap();
    let mut logs = [Log::default(), Log::default()];
    {
        let mut refs: Vec<&mut dyn Presenter> =
            logs.iter_mut().map(|l| l as &mut dyn Presenter).collect();
        m.run_with(
            TAP_FRAMES,
            |player, frame, _| {
                let mut buf = Vec::new();
                tap_inputs(frame, &mut buf);
                buf[player]
            },
            &mut refs,
            |_| {},
        )
        .unwrap();
    }
    let mut late = 0;
    for (i, (p, log)) in m.peers().iter().zip(&logs).enumerate() {
        log.check_invariants().unwrap_or_else(|e| panic!("peer {i}: {e}"));
        // The peer confirmed a few frames past the match: only the match's cues count.
        let got: Vec<Call> =
            log.reconciled().into_iter().filter(|c| c.key().frame < TAP_FRAMES).collect();
        assert_eq!(got, want, "peer {i}");
        assert_eq!(confirmed_instances(log, TAP_FRAMES), want_confirmed, "peer {i}");
        late += p.runner.director.as_ref().unwrap().counters().late;
    }
    // The seeded network delivered some taps' press and release in one packet (the emulated
    // network is deterministic: the same seed gives the same match).
    assert!(late > 0, "no instance began and ended inside one rollback batch");
}

/// Routing: hierarchy fallback, overrides, instanced reference counting, pools,
/// translation, suppression, local cues, entity interfaces.
#[test]
fn router_routes_by_hierarchy_with_instances_and_pools() {
    let (w, [a, b]) = arena(ARENA);
    let c = w.content().clone();
    let hit = c.tag("GameplayCue.Hit").unwrap();
    let heavy = c.tag("GameplayCue.Hit.Heavy").unwrap();
    let root = c.tag("GameplayCue").unwrap();
    let sprint = c.tag("GameplayCue.Sprint").unwrap();
    let calls: Rc<RefCell<Vec<String>>> = Rc::default();
    let mut router = CueRouter::new(c.clone());
    let l1 = calls.clone();
    router.on(root, move |call: CueCall, cue: &Cue| {
        l1.borrow_mut().push(format!("root {call:?} {}", cue.key.tag.0))
    });
    let l2 = calls.clone();
    router.on(hit, move |call: CueCall, _: &Cue| l2.borrow_mut().push(format!("hit {call:?}")));
    // Heavy hits route to the Hit handler, then continue to the root handler.
    router.local_execute(a, heavy, CueParams::default(), CueOptions::default());
    assert_eq!(
        *calls.borrow(),
        vec!["hit Executed".to_string(), format!("root Executed {}", heavy.0)]
    );
    assert_eq!(router.handler_chain(heavy), vec![hit, root]);
    // An override stops the walk.
    calls.borrow_mut().clear();
    let l3 = calls.clone();
    router.on_override(heavy, move |call: CueCall, _: &Cue| {
        l3.borrow_mut().push(format!("heavy {call:?}"))
    });
    router.local_execute(a, heavy, CueParams::default(), CueOptions::default());
    assert_eq!(*calls.borrow(), vec!["heavy Executed".to_string()]);
    // Translation: hits become heavy hits.
    calls.borrow_mut().clear();
    router.translate(hit, heavy);
    router.local_execute(a, hit, CueParams::default(), CueOptions::default());
    assert_eq!(*calls.borrow(), vec!["heavy Executed".to_string()]);
    router.local_execute(
        a,
        hit,
        CueParams::default(),
        CueOptions { ignore_translation: true, ..CueOptions::default() },
    );
    assert_eq!(calls.borrow().last().unwrap(), &format!("root Executed {}", hit.0));
    // Suppression.
    calls.borrow_mut().clear();
    router.suppress(a, true);
    router.local_execute(a, heavy, CueParams::default(), CueOptions::default());
    assert!(calls.borrow().is_empty());
    router.suppress(a, false);

    // Instanced: N adds of one cue on one target share one instance; it is pooled when released.
    struct Fx(Rc<RefCell<Vec<String>>>);
    impl CueInstance for Fx {
        fn handle(&mut self, call: CueCall, _: &Cue) {
            self.0.borrow_mut().push(format!("instance {call:?}"));
        }
    }
    let made = Rc::new(RefCell::new(0u32));
    let (m2, l4) = (made.clone(), calls.clone());
    router.on_instanced(sprint, false, move || {
        *m2.borrow_mut() += 1;
        Box::new(Fx(l4.clone()))
    });
    calls.borrow_mut().clear();
    let k1 = router.local_add(b, sprint, CueParams::default(), CueOptions::default());
    let k2 = router.local_add(b, sprint, CueParams::default(), CueOptions::default());
    assert_eq!(router.live_instances(), 1);
    assert_eq!(
        *calls.borrow(),
        vec!["instance OnActive".to_string(), "instance WhileActive".to_string()]
    );
    router.local_remove(k1, CueParams::default(), CueOptions::default());
    assert_eq!(router.live_instances(), 1);
    router.local_remove(k2, CueParams::default(), CueOptions::default());
    assert_eq!(router.live_instances(), 0);
    assert_eq!(router.pooled(sprint), 1);
    assert_eq!(calls.borrow().last().unwrap(), "instance Removed(Ended)");
    // The pooled instance is reused.
    router.local_add(b, sprint, CueParams::default(), CueOptions::default());
    assert_eq!(*made.borrow(), 1);
    // Preallocation is spread over presentation frames.
    router.preallocate(sprint, 5);
    assert_eq!(router.tick_pools(2), 2);
    assert_eq!(router.tick_pools(2), 2);
    assert_eq!(router.tick_pools(2), 1);
    assert_eq!(router.pooled(sprint), 5);
    assert_eq!(*made.borrow(), 6);
    let _ = CueKind::Executed;
}

/// The sprint cue through the director and the router: persistent instance shown once, tag
/// events on the way agree with the cue edges.
#[test]
fn director_drives_router() {
    let (mut w, [a, _]) = arena(ARENA);
    let c = w.content().clone();
    let sprint = c.tag("GameplayCue.Sprint").unwrap();
    let calls: Rc<RefCell<Vec<String>>> = Rc::default();
    let mut router = CueRouter::new(c.clone());
    let l = calls.clone();
    router.on(sprint, move |call: CueCall, cue: &Cue| {
        l.borrow_mut().push(format!("{call:?}@{}", cue.key.frame))
    });
    let mut director = CueDirector::new();
    let mut tag_events: Vec<TagEvent> = Vec::new();
    for f in 0..60u32 {
        let input = u8::from((10..30).contains(&f));
        w.step(&[input, 0]);
        tag_events.extend(w.output().tag_events.iter().copied());
        director.ingest(w.output());
        director.reconcile(&w, f.checked_sub(2), &mut router);
    }
    assert_eq!(
        *calls.borrow(),
        vec!["OnActive@10", "WhileActive@10", "Confirmed@10", "Removed(Ended)@10"]
    );
    let sprint_state = c.tag("Input.Sprint").unwrap();
    let edges: Vec<(u32, bool)> = tag_events
        .iter()
        .filter(|t| t.entity == a && t.tag == sprint_state)
        .map(|t| (t.frame, t.new > 0))
        .collect();
    assert_eq!(edges, vec![(10, true), (30, false)]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Presenter invariants over random inputs, latencies and rollback depths: no double play,
    /// every cancel matches a play, persistent cues balanced, and after everything is confirmed
    /// the reconciled log equals plain stepping's.
    #[test]
    fn presenter_invariants_under_random_prediction(
        inputs in proptest::collection::vec((0u8..4, 0u8..4), 200),
        latency in 1u32..8,
    ) {
        // Idle frames at the end let the last predictions resolve before comparing.
        let frames = inputs.len() as u32 + 16;
        let feed = |f: u32, buf: &mut Vec<u8>| {
            let (x, y) = inputs.get(f as usize).copied().unwrap_or((0, 0));
            buf.extend([x, y]);
        };
        let (mut plain_w, _) = arena(ARENA);
        let mut plain_d = CueDirector::new();
        let mut plain = Log::default();
        let mut buf = Vec::new();
        for f in 0..frames {
            buf.clear();
            feed(f, &mut buf);
            plain_w.step(&buf);
            plain_d.ingest(plain_w.output());
            plain_d.reconcile(&plain_w, Some(f), &mut plain);
        }
        let (mut w, _) = arena(ARENA);
        let mut driver = PredictionDriver::new(&w, 0, latency);
        let mut director = CueDirector::new();
        let mut log = Log::default();
        for _ in 0..frames {
            let mut session = CueSession { director: &mut director, presenter: &mut log };
            driver.advance(&mut w, feed, |_| {}, &mut session);
        }
        director.reconcile(&w, Some(w.frame()), &mut log);
        log.check_invariants().unwrap();
        let (got, want) = (log.reconciled(), plain.reconciled());
        let only_got: Vec<&Call> = got.iter().filter(|c| !want.contains(c)).collect();
        let only_want: Vec<&Call> = want.iter().filter(|c| !got.contains(c)).collect();
        prop_assert!(only_got.is_empty() && only_want.is_empty(), "latency {}: extra {:?} missing {:?}", latency, only_got, only_want);
        prop_assert_eq!(got.len(), want.len());
        prop_assert_eq!(director.counters().cancelled as usize, log.count(|c| matches!(c, Call::Cancel(_))));
    }
}

/// One tick of a scripted peer ([`scripted_peer`]): what arrived and what the session does.
#[derive(Clone, Copy, Debug)]
struct Tick {
    /// Frames of the remote player's real input that arrive this tick.
    arrive: u32,
    /// Load this many frames further back than the first mispredicted frame (or, with no
    /// misprediction, this many frames back from the newest): GGRS with sparse saving loads
    /// its last saved state, which can be a frame already confirmed.
    back: u32,
    /// New frames simulated this tick (0: GGRS holds back, the prediction window is full).
    advance: u32,
}

/// A peer of a two-player match driven batch by batch as a GGRS session drives its runner,
/// without sockets: player 0 is local (its inputs are known at once), player 1's real inputs
/// arrive as the ticks say and are predicted as `guess` until then. Each tick loads and
/// re-simulates from the first frame simulated with a wrong prediction (or further back),
/// simulates new frames within a prediction window of `window` frames, then reconciles with
/// GGRS's confirmed frame: the lesser of the remote player's last real input and the local
/// player's (the newest frame plus `delay` frames of input delay, so it can run ahead of the
/// newest simulated frame). After the ticks every input arrives and the match runs to its end.
fn scripted_peer(truth: &[[u8; 2]], guess: &[u8], ticks: &[Tick], window: u32, delay: u32) -> Log {
    let frames = truth.len() as u32;
    let (mut w, _) = arena(ARENA);
    let mut ring = rollback_abilities::SnapshotRing::new(&w, window as usize + 8);
    let mut director = CueDirector::new();
    let mut log = Log::default();
    let mut used: Vec<[u8; 2]> = Vec::new();
    let (mut now, mut known) = (0u32, 0u32);
    let step = |w: &mut World<SprintHitGame>,
                ring: &mut rollback_abilities::SnapshotRing<SprintHitGame>,
                director: &mut CueDirector,
                used: &mut Vec<[u8; 2]>,
                f: u32,
                known: u32| {
        ring.save(w);
        let remote = if f < known { truth[f as usize][1] } else { guess[f as usize] };
        let inputs = [truth[f as usize][0], remote];
        w.step(&inputs);
        director.ingest(w.output());
        if (f as usize) < used.len() {
            used[f as usize] = inputs;
        } else {
            used.push(inputs);
        }
    };
    let all = Tick { arrive: frames, back: 0, advance: 1 };
    let tail = core::iter::repeat_n(all, frames as usize + 1);
    for tick in ticks.iter().copied().chain(tail) {
        if now >= frames && known >= frames {
            break;
        }
        known = (known + tick.arrive).min(frames);
        let oldest = now.saturating_sub(window);
        let wrong = (0..now.min(known)).find(|&f| used[f as usize] != truth[f as usize]);
        let load = match wrong {
            Some(g) => Some(g.saturating_sub(tick.back).max(oldest)),
            None if tick.back > 0 && now > 0 => Some(now.saturating_sub(tick.back).max(oldest)),
            None => None,
        };
        if let Some(l) = load {
            assert!(ring.load(&mut w, l), "the ring lost frame {l}");
            director.rewound_to(l);
            for f in l..now {
                step(&mut w, &mut ring, &mut director, &mut used, f, known);
            }
        }
        for _ in 0..tick.advance {
            if now >= frames || now >= known + window {
                break;
            }
            step(&mut w, &mut ring, &mut director, &mut used, now, known);
            now += 1;
        }
        if now == 0 {
            continue;
        }
        let confirmed = known.min(now + delay).checked_sub(1);
        log.at(now - 1);
        director.reconcile(&w, confirmed, &mut log);
    }
    log
}

/// Plain stepping of `truth`, every frame confirmed as soon as it is simulated.
fn straight_log(truth: &[[u8; 2]]) -> Log {
    let (mut w, _) = arena(ARENA);
    let mut director = CueDirector::new();
    let mut log = Log::default();
    for (f, inputs) in truth.iter().enumerate() {
        w.step(inputs);
        director.ingest(w.output());
        log.at(f as u32);
        director.reconcile(&w, Some(f as u32), &mut log);
    }
    log
}

/// Every key a presenter was told is confirmed, sorted, repeats kept.
fn confirmed_keys(log: &Log) -> Vec<rollback_abilities::CueKey> {
    let mut v: Vec<_> = log
        .calls()
        .filter_map(|c| match c {
            Call::Confirmed(k) => Some(*k),
            _ => None,
        })
        .collect();
    v.sort_unstable();
    v
}

/// The rollback pattern real UDP timing produced: a persistent instance whose start is
/// confirmed ends on a prediction (the remote player's release is predicted early), the
/// presenter removes it, and the real inputs then take the end back, so the instance is shown
/// again. It is confirmed once, started once, and its shows reconcile to the straight run's.
#[test]
fn a_predicted_end_taken_back_is_not_confirmed_twice() {
    // The remote player sprints from frame 10 to frame 59; its inputs are predicted released.
    let truth: Vec<[u8; 2]> = (0..120u32).map(|f| [0, u8::from((10..60).contains(&f))]).collect();
    let guess = vec![0u8; truth.len()];
    let mut ticks = vec![Tick { arrive: 1, back: 0, advance: 1 }; 30];
    // Five ticks without news: frames 30–34 are predicted, and Sprint ends at frame 30.
    ticks.extend([Tick { arrive: 0, back: 0, advance: 1 }; 5]);
    // The real inputs arrive: the rollback shows the sprint still running.
    ticks.push(Tick { arrive: 10, back: 0, advance: 1 });
    let log = scripted_peer(&truth, &guess, &ticks, 8, 2);
    let straight = straight_log(&truth);

    // The remote player's sprint: started and confirmed once, its predicted end at frame 30
    // taken back, shown again, and ended for real at frame 60.
    let calls: Vec<Call> =
        log.calls().filter(|c| c.key().kind == CueKind::Added).copied().collect();
    let k = calls[0].key();
    assert_eq!(k.frame, 10);
    assert_eq!(
        calls,
        [
            Call::OnActive(k),
            Call::WhileActive(k),
            Call::Confirmed(k),
            Call::Removed(k, RemoveReason::Ended),
            Call::WhileActive(k),
            Call::Removed(k, RemoveReason::Ended),
        ]
    );
    log.check_invariants().unwrap();
    assert_eq!(confirmed_keys(&log), confirmed_keys(&straight));
    assert_eq!(log.reconciled(), straight.reconciled());
}

/// A session that starts over from an older state (a rejoin's new session, which continues from
/// the members' confirmed state while the old one had run ahead) is told of the rewind once and
/// simulates those frames again only ticks later: the bursts the old timeline played there and
/// the new one does not have are cancelled when the frames come again, not confirmed.
#[test]
fn bursts_of_frames_a_new_session_takes_back_later_are_cancelled() {
    // The truth: player 0 hits from frame 20 to 49 only. The old timeline, run ahead past
    // frame 60 before the new session took over, also had it hit from 60 to 89. Nothing of it
    // is confirmed, even when the new session confirms a frame before it simulates it.
    let truth: Vec<[u8; 2]> =
        (0..120u32).map(|f| [u8::from((20..50).contains(&f)) << 1, 0]).collect();
    let (mut w, _) = arena(ARENA);
    let mut director = CueDirector::new();
    let mut log = Log::default();
    for (f, inputs) in truth.iter().enumerate().take(60) {
        w.step(inputs);
        director.ingest(w.output());
        log.at(f as u32);
        director.reconcile(&w, Some(f as u32), &mut log);
    }
    let at_60 = w.snapshot();
    for f in 60..90u32 {
        w.step(&[2, 0]);
        director.ingest(w.output());
        log.at(f);
        director.reconcile(&w, Some(59), &mut log);
    }
    let played_ahead = log.calls().filter(|c| matches!(c, Call::Play(k) if k.frame >= 60)).count();
    assert!(played_ahead > 0, "the old timeline played bursts past frame 60");
    // The new session starts from the state before frame 60 and synchronises for a few ticks
    // before it simulates anything.
    w.load(&at_60).unwrap();
    director.rewound_to(60);
    for _ in 0..5 {
        director.reconcile(&w, Some(59), &mut log);
    }
    // It confirms two frames before it simulates them (the remote inputs arrived first).
    director.reconcile(&w, Some(61), &mut log);
    for (f, inputs) in truth.iter().enumerate().skip(60) {
        w.step(inputs);
        director.ingest(w.output());
        log.at(f as u32);
        director.reconcile(&w, Some(f as u32), &mut log);
    }
    log.check_invariants().unwrap();
    let straight = straight_log(&truth);
    assert_eq!(confirmed_keys(&log), confirmed_keys(&straight));
    assert_eq!(log.reconciled(), straight.reconciled());
}

/// A GGRS session with sparse saving loads its last saved state, a confirmed frame, and
/// simulates confirmed frames again: their bursts are not played or confirmed a second time.
#[test]
fn re_simulated_confirmed_frames_present_nothing_twice() {
    let truth: Vec<[u8; 2]> = (0..90u32)
        .map(|f| [u8::from((20..50).contains(&f)) << 1, u8::from((5..40).contains(&f)) | 2])
        .collect();
    let guess = vec![0u8; truth.len()];
    let ticks: Vec<Tick> =
        (0..60).map(|i| Tick { arrive: 1, back: 3 + i % 4, advance: 1 }).collect();
    let log = scripted_peer(&truth, &guess, &ticks, 8, 2);
    let straight = straight_log(&truth);
    log.check_invariants().unwrap();
    assert_eq!(confirmed_keys(&log), confirmed_keys(&straight));
    assert_eq!(log.reconciled(), straight.reconciled());
}

fn tick_strategy() -> impl Strategy<Value = Tick> {
    (0u32..5, prop_oneof![6 => Just(0u32), 1 => 1u32..12], 0u32..3)
        .prop_map(|(arrive, back, advance)| Tick { arrive, back, advance })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Generated batch sequences — loads to any frame in the window (confirmed ones too),
    /// several frames per batch, confirmations that run ahead of the newest frame or lag it,
    /// remote inputs arriving in bursts or not at all — never change what a presenter is told
    /// is confirmed: every key the straight run confirms, exactly once, and nothing else.
    #[test]
    fn confirmed_log_equals_the_straight_run_whatever_the_batches(
        inputs in proptest::collection::vec((0u8..4, 0u8..4), 120),
        guess in proptest::collection::vec(0u8..4, 136),
        ticks in proptest::collection::vec(tick_strategy(), 40..200),
        window in 2u32..9,
        delay in 0u32..4,
    ) {
        // Idle frames at the end let the last instances end inside the match.
        let truth: Vec<[u8; 2]> = inputs.iter().map(|&(a, b)| [a, b]).chain(core::iter::repeat_n([0, 0], 16)).collect();
        let log = scripted_peer(&truth, &guess, &ticks, window, delay);
        let straight = straight_log(&truth);
        if let Err(e) = log.check_invariants() {
            prop_assert!(false, "{}", e);
        }
        prop_assert_eq!(confirmed_keys(&log), confirmed_keys(&straight));
    }
}

/// A cue entry is a plain tag string or `(tag: …)`, on effects and abilities alike: the plain
/// string is the struct form with every other field at its default, so both freeze to the same
/// content, and an ability's struct-form cue is shown while it runs.
#[test]
fn cue_entries_take_a_plain_tag_or_the_struct_form_on_effects_and_abilities() {
    let swapped = ARENA
        .replace(r#"cues: [(tag: "GameplayCue.Hit")]"#, r#"cues: ["GameplayCue.Hit"]"#)
        .replace(r#"cues: [(tag: "GameplayCue.Stun")]"#, r#"cues: ["GameplayCue.Stun"]"#)
        .replace(
            r#"cues: ["GameplayCue.Sprint"]"#,
            r#"cues: [(tag: "GameplayCue.Sprint", events: Persistent)]"#,
        );
    assert!(!swapped.contains("(tag: \"GameplayCue.Hit\")"), "the effect cue is now plain");
    assert!(swapped.contains("(tag: \"GameplayCue.Sprint\""), "the ability cue is now a struct");
    let plain_abilities = Content::from_ron_str(ARENA).unwrap_or_else(|e| panic!("{e}"));
    let plain_effects = Content::from_ron_str(&swapped).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plain_abilities.hash(), plain_effects.hash());
    for c in [&plain_abilities, &plain_effects] {
        let hit = c.effect_def(c.effect("Hit").unwrap());
        assert_eq!(hit.cues.len(), 1);
        assert_eq!(c.tag_name(hit.cues[0].tag), "GameplayCue.Hit");
        assert_eq!(hit.cues[0].events, rollback_abilities::CueEvents::Auto);
        let sprint = c.ability_def(c.ability("Sprint").unwrap());
        let names: Vec<&str> = sprint.cues.iter().map(|t| c.tag_name(*t)).collect();
        assert_eq!(names, ["GameplayCue.Sprint"]);
    }
    // The struct-form ability cue is added when Sprint activates.
    let (mut w, [a, _]) = arena(&swapped);
    let sprint = w.content().tag("GameplayCue.Sprint").unwrap();
    w.step(&[1, 0]);
    w.step(&[1, 0]);
    let mut active = Vec::new();
    w.active_cues(&mut active);
    assert!(
        active.iter().any(|c| c.target == a && c.tag == sprint),
        "the Sprint cue is active while Sprint runs"
    );
}
