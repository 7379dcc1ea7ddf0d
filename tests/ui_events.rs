//! The rollback-safe UI event feed: attribute, tag, effect, ability,
//! execution and gameplay events shown once under rollback, retracted only when mispredicted,
//! and confirmed exactly as a straight run confirms them — with random-depth rollbacks,
//! predicted remote inputs, GGRS peers over a lossy network, and a property test over seeds and
//! depths.

use proptest::prelude::*;
use rollback_abilities::EventData;
use rollback_abilities::prelude::*;
use rollback_abilities::random::Stream;
use rollback_abilities::session::{
    LocalMatch, MatchConfig, NetConditions, PredictionDriver, RollbackDriver,
};
use rollback_abilities::ui::{
    Delivery, EventDirector, EventFilter, EventSession, Subscription, UiCall, UiEvent, UiEventKind,
    UiLog, UiPayload,
};
use rollback_abilities::{AbilityInput, Frame};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Two fighters. Input bits: 0 Sprint (held), 1 Strike (costs stamina; also hits the other
/// every 3 frames while held), 2 Focus (a cooldown: pressing it again too soon fails), 3 Burn
/// the other (a stacking periodic effect, every 4 frames while held), 4 taunt the other (a
/// gameplay event, every 5 frames while held).
pub struct Brawl;

impl Game for Brawl {
    type Input = u8;
    type Component = ();
    type Global = ();

    fn ability_input(input: &u8) -> AbilityInput {
        AbilityInput { held: u32::from(*input & 0b111), ..AbilityInput::default() }
    }

    fn systems(w: &mut World<Self>) {
        let c = w.content().clone();
        let frame = w.frame();
        for p in 0..2usize {
            let (Some(me), Some(other)) = (w.player_owner(p), w.player_owner(1 - p)) else {
                continue;
            };
            let input = w.input(p);
            if input & 2 != 0 && frame.is_multiple_of(3) {
                let spec = w.make_spec(c.effect("Hit").unwrap(), 1, me);
                w.queue_effect(spec, other);
            }
            if input & 8 != 0 && frame.is_multiple_of(4) {
                let spec = w.make_spec(c.effect("Burn").unwrap(), 1, me);
                w.queue_effect(spec, other);
            }
            if input & 16 != 0 && frame.is_multiple_of(5) {
                let taunt = c.tag("Event.Taunt").unwrap();
                w.send_event(other, EventData::new(taunt, me, other));
            }
        }
    }
}

pub const BRAWL: &str = r#"(
    tags: ["Ability.Movement.Sprint", "Ability.Attack.Strike", "Ability.Skill.Focus",
           "Cooldown.Focus", "State.Burning", "Event.Taunt", "GameplayCue.Sprint",
           "GameplayCue.Hit"],
    attribute_sets: { "Vitals": (attributes: {
        "Stamina": (default: 1000, min: Const(0)),
        "Health": (default: 5000, min: Const(0), max: Const(5000)),
    }) },
    effects: {
        "StrikeCost": (modifiers: [(attribute: "Stamina", op: Add, magnitude: Scalable(coef: -1))],
                       cues: [(tag: "GameplayCue.Hit")]),
        "Hit": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -7))]),
        "HeavyHit": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -14))]),
        "Burn": (duration: Frames(20), period: Frames(5),
                 modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -3))],
                 granted_tags: ["State.Burning"], stacking: (kind: ByTarget, limit: 3)),
        "FocusCooldown": (duration: Frames(25), granted_tags: ["Cooldown.Focus"]),
    },
    abilities: {
        "Sprint": (tags: ["Ability.Movement.Sprint"], input: 0, end_on_release: true,
                   cues: ["GameplayCue.Sprint"]),
        "Strike": (tags: ["Ability.Attack.Strike"], input: 1, cost: "StrikeCost",
                   end_after: Frames(1)),
        "Focus": (tags: ["Ability.Skill.Focus"], input: 2, cooldown: "FocusCooldown",
                  end_after: Frames(6)),
    },
)"#;

pub fn brawl() -> (World<Brawl>, [Entity; 2]) {
    let content = Arc::new(Content::from_ron_str(BRAWL).unwrap_or_else(|e| panic!("{e}")));
    let config = WorldConfig { seed: 3, players: 2, ..WorldConfig::default() };
    let mut w = World::<Brawl>::new(content.clone(), &Hooks::new(), config).unwrap();
    let vitals = content.attr_set("Vitals").unwrap();
    let a = w.spawn_actor(&[vitals]).unwrap();
    let b = w.spawn_actor(&[vitals]).unwrap();
    w.bind_player(0, a);
    w.bind_player(1, b);
    for e in [a, b] {
        for name in ["Sprint", "Strike", "Focus"] {
            w.grant_ability(e, content.ability(name).unwrap(), 1).unwrap();
        }
    }
    (w, [a, b])
}

/// A bot: every button in stretches that depend on the player, the seed and the frame.
pub fn bot(seed: u64, player: usize, frame: Frame) -> u8 {
    let mut s = Stream::derive(seed, &[player as u64, u64::from(frame / 7)]);
    let mut input = 0u8;
    for (bit, one_in) in [(0, 3u32), (1, 4), (2, 5), (3, 4), (4, 5)] {
        if s.below(one_in) == 0 {
            input |= 1 << bit;
        }
    }
    input
}

/// The bot's inputs for `frames` frames, then idle (so the last predictions come true).
pub fn feed(seed: u64, frames: Frame) -> impl Fn(Frame, &mut Vec<u8>) + Copy {
    move |f, buf| {
        buf.clear();
        if f < frames {
            buf.extend([bot(seed, 0, f), bot(seed, 1, f)]);
        } else {
            buf.extend([0, 0]);
        }
    }
}

/// The subscriptions a HUD would open: everything (predicted and confirmed-only), and the GAS
/// async-task analogues.
pub fn subscribe(feed: &mut EventDirector, w: &World<Brawl>, [a, b]: [Entity; 2]) {
    let c = w.content();
    let health = c.attr("Health").unwrap();
    feed.subscribe(EventFilter::all());
    feed.subscribe(EventFilter::all().confirmed_only());
    feed.subscribe(EventFilter::executions(b));
    feed.subscribe(EventFilter::attribute_changed(b, health));
    feed.subscribe(EventFilter::effect_applied(b));
    feed.subscribe(EventFilter::effect_stack_changed(b));
    feed.subscribe(EventFilter::effect_removed(b));
    feed.subscribe(EventFilter::ability_activated(a));
    feed.subscribe(EventFilter::ability_failed(a));
    feed.subscribe(EventFilter::ability_ended(a));
    feed.subscribe(EventFilter::ability_committed(a));
    feed.subscribe(EventFilter::cooldown_changed(a, c.effect("FocusCooldown").unwrap()));
    feed.subscribe(EventFilter::tag_changed(b, c.tag("State.Burning").unwrap()));
    feed.subscribe(EventFilter::gameplay_event(b, c.tag("Event.Taunt").unwrap()));
}

/// The straight run: every frame confirmed as soon as it is simulated.
pub fn straight(seed: u64, frames: Frame) -> (UiLog, u64) {
    let (mut w, ents) = brawl();
    let mut director = EventDirector::new();
    subscribe(&mut director, &w, ents);
    let mut log = UiLog::default();
    let mut buf = Vec::new();
    let inputs = feed(seed, frames);
    for f in 0..frames {
        inputs(f, &mut buf);
        w.step(&buf);
        director.ingest(&w);
        director.reconcile(Some(f));
        director.deliver(&mut log);
    }
    (log, w.checksum())
}

/// Under random-depth rollbacks (no misprediction: every re-simulation is identical).
pub fn under_rollbacks(seed: u64, frames: Frame, depth: u32) -> (UiLog, EventDirector, u64) {
    let (mut w, ents) = brawl();
    let mut director = EventDirector::new();
    subscribe(&mut director, &w, ents);
    let mut log = UiLog::default();
    let mut driver = RollbackDriver::new(&w, depth, seed ^ 0x5EED);
    let inputs = feed(seed, frames);
    for _ in 0..frames {
        let mut session = EventSession { director: &mut director, listener: &mut log };
        driver.advance_observed(&mut w, inputs, |_| {}, &mut session).unwrap();
    }
    director.reconcile(Some(w.frame()));
    director.deliver(&mut log);
    (log, director, w.checksum())
}

/// One peer whose remote player's inputs arrive `latency` frames late (predicted meanwhile).
pub fn predicted(seed: u64, frames: Frame, latency: u32) -> (UiLog, EventDirector, u64) {
    let (mut w, ents) = brawl();
    let mut director = EventDirector::new();
    subscribe(&mut director, &w, ents);
    let mut log = UiLog::default();
    let mut driver = PredictionDriver::new(&w, 0, latency);
    let inputs = feed(seed, frames);
    for _ in 0..frames {
        let mut session = EventSession { director: &mut director, listener: &mut log };
        driver.advance(&mut w, inputs, |_| {}, &mut session);
    }
    director.reconcile(Some(w.frame()));
    director.deliver(&mut log);
    assert!(driver.stats().rollbacks > 0, "latency {latency}: no misprediction");
    (log, director, w.checksum())
}

/// Every retraction is of an event that did not happen, or that a later correction brought
/// back (it is shown again).
fn retractions_are_mispredictions(log: &UiLog, truth: &[(Subscription, UiEvent)]) {
    let truth: BTreeSet<String> = truth.iter().map(|x| format!("{x:?}")).collect();
    for (i, n) in log.notices.iter().enumerate() {
        if n.call != UiCall::Retracted {
            continue;
        }
        let happened = truth.contains(&format!("{:?}", (n.subscription, n.event)));
        let shown_again = log.notices[i..].iter().any(|m| {
            m.call == UiCall::Shown && m.subscription == n.subscription && m.event == n.event
        });
        assert!(!happened || shown_again, "retracted an event that happened: {n:?}");
    }
}

/// Asserts two logs are equal, naming the first difference (the logs are long).
fn same_log(got: &[(Subscription, UiEvent)], want: &[(Subscription, UiEvent)], what: &str) {
    if let Some(i) = (0..got.len().max(want.len())).find(|i| got.get(*i) != want.get(*i)) {
        panic!(
            "{what}: logs differ at {i} of {}/{}: got {:?}, want {:?}",
            got.len(),
            want.len(),
            got.get(i),
            want.get(i)
        );
    }
}

fn sorted(mut v: Vec<(Subscription, UiEvent)>) -> Vec<String> {
    let mut out: Vec<String> = v.drain(..).map(|x| format!("{x:?}")).collect();
    out.sort();
    out
}

/// Random-depth rollbacks re-simulate every frame up to 8 times: each event is shown exactly
/// once, nothing is retracted, and the confirmed log equals the straight run's, notice for
/// notice.
#[test]
fn random_depth_rollbacks_show_each_event_once() {
    let (plain, plain_sum) = straight(5, 400);
    plain.check_invariants().unwrap();
    let confirmed = plain.confirmed();
    // Every kind the HUD asked for happened in the straight run.
    for kind in [
        UiEventKind::AttributeChanged,
        UiEventKind::TagChanged,
        UiEventKind::EffectAdded,
        UiEventKind::EffectRemoved,
        UiEventKind::EffectStackChanged,
        UiEventKind::EffectExecuted,
        UiEventKind::AbilityActivated,
        UiEventKind::AbilityEnded,
        UiEventKind::AbilityFailed,
        UiEventKind::AbilityCommitted,
        UiEventKind::Execution,
        UiEventKind::GameplayEvent,
    ] {
        assert!(confirmed.iter().any(|(_, e)| e.key.kind == kind), "no {kind:?} in the match");
    }
    for depth in [1, 3, 8] {
        let (log, director, sum) = under_rollbacks(5, 400, depth);
        assert_eq!(sum, plain_sum);
        log.check_invariants().unwrap();
        assert_eq!(log.count(|n| n.call == UiCall::Retracted), 0, "depth {depth}");
        assert_eq!(
            log.count(|n| n.call == UiCall::Shown),
            plain.count(|n| n.call == UiCall::Shown),
            "depth {depth}: shown exactly once each"
        );
        same_log(&log.confirmed(), &confirmed, &format!("depth {depth}"));
        // Confirmed-only subscriptions are shown later than in the straight run: the same
        // events stand, in another order.
        assert!(sorted(log.standing()) == sorted(plain.standing()), "depth {depth}");
        let c = director.counters();
        // Depth 1 re-simulates only the frame just advanced, inside the same batch: nothing
        // was shown yet. Deeper rollbacks re-emit frames already shown.
        if depth > 1 {
            assert!(c.deduplicated > c.ingested / 4, "depth {depth}: {c:?}");
        }
        assert_eq!(director.unconfirmed(), 0);
    }
}

/// Remote inputs arrive late and are predicted: mispredicted events are shown, then retracted
/// exactly once; what stands equals the straight run, and the confirmed log equals it notice
/// for notice. Confirmed-only subscriptions never see a retraction.
#[test]
fn predicted_inputs_retract_exactly_the_mispredictions() {
    let (plain, _) = straight(9, 400);
    for latency in [2, 4, 7] {
        let (log, director, _) = predicted(9, 400, latency);
        log.check_invariants().unwrap();
        let c = director.counters();
        assert!(c.retracted > 0, "latency {latency}: {c:?}");
        same_log(&log.confirmed(), &plain.confirmed(), &format!("latency {latency}"));
        assert!(sorted(log.standing()) == sorted(plain.standing()), "latency {latency}");
        retractions_are_mispredictions(&log, &plain.confirmed());
        // Subscription 1 is `all().confirmed_only()`: shown only when confirmed, never taken
        // back.
        let confirmed_only = Subscription(1);
        assert!(
            log.notices
                .iter()
                .filter(|n| n.subscription == confirmed_only)
                .all(|n| { n.call != UiCall::Retracted && !n.predicted })
        );
        // Predicted subscriptions saw events before they were confirmed.
        assert!(log.count(|n| n.call == UiCall::Shown && n.predicted) > 0);
    }
}

/// The filters: each subscription hears only what it asked for.
#[test]
fn filters_select_what_a_widget_needs() {
    let (mut w, [a, b]) = brawl();
    let c = w.content().clone();
    let health = c.attr("Health").unwrap();
    let mut director = EventDirector::new();
    let hp = director.subscribe(EventFilter::attribute_changed(b, health));
    let dmg = director.subscribe(EventFilter::executions(b).attribute(health));
    let casts =
        director.subscribe(EventFilter::ability_activated(a).ability(c.ability("Focus").unwrap()));
    let burns =
        director.subscribe(EventFilter::effect_applied(b).effect(c.effect("Burn").unwrap()));
    let kills = director.subscribe(EventFilter::executions(b).confirmed_only());
    let inputs = feed(21, 200);
    let mut buf = Vec::new();
    for f in 0..200 {
        inputs(f, &mut buf);
        w.step(&buf);
        director.ingest(&w);
        director.reconcile(f.checked_sub(3));
    }
    let of = |d: &mut EventDirector, s: Subscription| d.drain(s);
    let hp_notices = of(&mut director, hp);
    assert!(!hp_notices.is_empty());
    assert!(hp_notices.iter().all(|n| matches!(n.event.payload,
        UiPayload::Attribute(e) if e.entity == b && e.attr == health)));
    let dmg_notices = of(&mut director, dmg);
    assert!(dmg_notices.iter().any(|n| n.event.delta().is_some_and(|d| d < Fx::ZERO)));
    assert!(dmg_notices.iter().all(|n| n.event.key.kind == UiEventKind::Execution
        && n.event.key.entity == b
        && n.event.attribute() == Some(health)));
    let casts = of(&mut director, casts);
    assert!(!casts.is_empty());
    assert!(
        casts.iter().all(|n| n.event.ability == c.ability("Focus").ok() && n.event.key.entity == a)
    );
    let burns = of(&mut director, burns);
    assert!(!burns.is_empty());
    assert!(burns.iter().all(|n| n.event.effect == c.effect("Burn").ok()));
    // Confirmed-only: shown and confirmed together, never predicted, three frames behind.
    let kills = of(&mut director, kills);
    assert!(kills.chunks(2).all(|p| p.len() == 2
        && p[0].call == UiCall::Shown
        && p[1].call == UiCall::Confirmed
        && !p[0].predicted
        && p[0].event == p[1].event));
    assert!(kills.iter().all(|n| n.event.key.frame <= 196));
    assert_eq!(EventFilter::all().delivery_mode(), Delivery::Predicted);
    // Unsubscribing drops the queue and stops the notices.
    director.unsubscribe(hp);
    for f in 200..230 {
        inputs(f, &mut buf);
        w.step(&buf);
        director.ingest(&w);
        director.reconcile(Some(f));
    }
    assert!(director.drain(hp).is_empty());
}

/// A corrected timeline in which the "same" event (same frame, kind, entity, subject and
/// ordinal) carries another payload: the old one is retracted and the new one shown — a damage
/// number never keeps a stale value.
#[test]
fn a_changed_payload_is_retracted_and_shown_again() {
    let (mut w, [_, b]) = brawl();
    let c = w.content().clone();
    let mut director = EventDirector::new();
    let dmg = director.subscribe(EventFilter::executions(b));
    for _ in 0..10 {
        w.step(&[0, 0]);
        director.ingest(&w);
        director.reconcile(w.frame().checked_sub(1));
    }
    let snap = w.snapshot();
    let strike = |name: &str| {
        let def = c.effect(name).unwrap();
        move |w: &mut World<Brawl>| {
            let spec = w.make_spec(def, 1, b);
            w.apply_effect(spec, b).unwrap();
        }
    };
    w.step_with(&[0, 0], strike("Hit")); // predicted: a hit at frame 10
    director.ingest(&w);
    director.reconcile(Some(9));
    w.load(&snap).unwrap(); // corrected: a heavy hit
    director.rewound_to(10);
    w.step_with(&[0, 0], strike("HeavyHit"));
    director.ingest(&w);
    director.reconcile(Some(10));
    let calls: Vec<(UiCall, Option<Fx>)> =
        director.drain(dmg).iter().map(|n| (n.call, n.event.delta())).collect();
    let (one, two) = (Fx::from_num(-7), Fx::from_num(-14));
    assert_eq!(
        calls,
        [
            (UiCall::Shown, Some(one)),
            (UiCall::Retracted, Some(one)),
            (UiCall::Shown, Some(two)),
            (UiCall::Confirmed, Some(two)),
        ]
    );
}

/// A seek or a session change: `reset` retracts every shown event that is not confirmed (a
/// confirmed one stays), and frames are no longer held as confirmed. A full queue drops its
/// oldest notices and counts them.
#[test]
fn reset_retracts_what_is_not_confirmed() {
    let (mut w, [_, b]) = brawl();
    let mut director = EventDirector::new().with_queue_capacity(1000);
    director.subscribe(EventFilter::executions(b));
    let inputs = feed(4, 60);
    let mut buf = Vec::new();
    for f in 0..60 {
        inputs(f, &mut buf);
        w.step(&buf);
        director.ingest(&w);
        director.reconcile(f.checked_sub(5));
    }
    let mut log = UiLog::default();
    director.deliver(&mut log);
    let unconfirmed =
        log.count(|n| n.call == UiCall::Shown) - log.count(|n| n.call == UiCall::Confirmed);
    assert!(unconfirmed > 0 && director.unconfirmed() > 0);
    director.reset();
    director.deliver(&mut log);
    assert_eq!(log.count(|n| n.call == UiCall::Retracted), unconfirmed);
    assert!(log.check_invariants().is_ok());
    assert!(log.standing().iter().all(|(_, e)| e.key.frame < 55));
    assert_eq!((director.unconfirmed(), director.last_confirmed()), (0, None));
    // The queue keeps the newest notices.
    let mut small = EventDirector::new().with_queue_capacity(2);
    small.subscribe(EventFilter::executions(b));
    let (mut w, _) = brawl();
    for f in 0..60 {
        inputs(f, &mut buf);
        w.step(&buf);
        small.ingest(&w);
        small.reconcile(Some(f));
    }
    let c = small.counters();
    assert_eq!(small.pending(), 2);
    assert_eq!(c.dropped, c.shown + c.confirmed - 2);
}

/// GGRS peers over a lossy, jittery network, each runner feeding its own `ui_events`
/// director: every peer's confirmed log equals the straight run's (frames of the match), and
/// what stood on each peer's screen is what happened.
#[test]
fn ggrs_peers_confirm_the_straight_run() {
    let frames = 300;
    let (plain, _) = straight(13, frames);
    let config = MatchConfig {
        input_delay: 0,
        conditions: NetConditions {
            latency_ms: 60,
            jitter_ms: 40,
            loss_percent: 10,
            ..NetConditions::PERFECT
        },
        net_seed: 13,
        ..MatchConfig::default()
    };
    let mut m = LocalMatch::<Brawl>::new(config, |_| brawl().0).unwrap();
    for p in m.peers_mut() {
        let mut d = EventDirector::new();
        let ents =
            [p.runner.world().player_owner(0).unwrap(), p.runner.world().player_owner(1).unwrap()];
        subscribe(&mut d, p.runner.world(), ents);
        p.runner.ui_events = Some(d);
    }
    m.synchronize().unwrap();
    let mut logs = [UiLog::default(), UiLog::default()];
    let mut ticks = 0;
    while !m.all_confirmed(frames) {
        m.tick(
            |player, frame, _| if frame < frames { bot(13, player, frame) } else { 0 },
            &mut [],
            |_| {},
        )
        .unwrap();
        // The UI takes its notices once per rendered frame.
        for (p, log) in m.peers_mut().iter_mut().zip(&mut logs) {
            p.runner.ui_events.as_mut().unwrap().deliver(log);
        }
        ticks += 1;
        assert!(ticks < 20 * frames, "the match stalled");
    }
    let in_match = |v: Vec<(Subscription, UiEvent)>| -> Vec<(Subscription, UiEvent)> {
        v.into_iter().filter(|(_, e)| e.key.frame < frames).collect()
    };
    let want = in_match(plain.confirmed());
    let mut rollbacks = 0;
    for (i, (p, log)) in m.peers().iter().zip(&logs).enumerate() {
        rollbacks += p.runner.stats().rollbacks;
        log.check_invariants().unwrap_or_else(|e| panic!("peer {i}: {e}"));
        same_log(&in_match(log.confirmed()), &want, &format!("peer {i}"));
        retractions_are_mispredictions(log, &plain.confirmed());
        let standing = sorted(in_match(log.standing()));
        assert!(standing == sorted(in_match(plain.standing())), "peer {i}");
    }
    assert!(rollbacks > 10, "rollbacks: {rollbacks}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Over seeds, rollback depths and prediction latencies: the listener contract holds, each
    /// event is shown once under pure rollbacks, retractions are mispredictions only, and the
    /// confirmed log equals the straight run's.
    #[test]
    fn confirmed_log_equals_the_straight_run(
        seed in any::<u64>(),
        depth in 1u32..12,
        latency in 1u32..8,
    ) {
        let frames = 160;
        let (plain, plain_sum) = straight(seed, frames);
        let (log, _, sum) = under_rollbacks(seed, frames, depth);
        prop_assert_eq!(sum, plain_sum);
        prop_assert!(log.check_invariants().is_ok(), "{:?}", log.check_invariants());
        prop_assert_eq!(log.count(|n| n.call == UiCall::Retracted), 0);
        prop_assert!(
            log.confirmed() == plain.confirmed(),
            "depth {}: confirmed logs differ",
            depth
        );

        let (mut w, ents) = brawl();
        let mut director = EventDirector::new();
        subscribe(&mut director, &w, ents);
        let mut log = UiLog::default();
        let mut driver = PredictionDriver::new(&w, 0, latency);
        let inputs = feed(seed, frames);
        for _ in 0..frames + 16 {
            let mut session = EventSession { director: &mut director, listener: &mut log };
            driver.advance(&mut w, inputs, |_| {}, &mut session);
        }
        director.reconcile(Some(w.frame()));
        director.deliver(&mut log);
        prop_assert!(log.check_invariants().is_ok(), "{:?}", log.check_invariants());
        let want: Vec<_> = plain.confirmed();
        let got: Vec<_> =
            log.confirmed().into_iter().filter(|(_, e)| e.key.frame < frames).collect();
        prop_assert!(got == want, "latency {}: confirmed logs differ", latency);
        retractions_are_mispredictions(&log, &plain.confirmed());
    }
}

/// A GGRS session can confirm frames it has not simulated yet (the remote player's inputs run
/// ahead of the local player's input delay). The events of those frames are still shown and
/// confirmed once, when they are simulated; and a load of a confirmed frame (sparse saving)
/// re-delivers nothing.
#[test]
fn frames_confirmed_before_they_are_simulated_are_delivered() {
    let frames = 300;
    let (plain, _) = straight(11, frames);
    let (mut w, ents) = brawl();
    let mut director = EventDirector::new();
    subscribe(&mut director, &w, ents);
    let mut log = UiLog::default();
    let mut ring = rollback_abilities::SnapshotRing::new(&w, 8);
    let mut buf = Vec::new();
    let inputs = feed(11, frames);
    for f in 0..frames {
        // Every fourth frame, load the state of a frame confirmed two frames ago and simulate
        // it again, as a session with sparse saving does.
        if f % 4 == 3 {
            assert!(ring.load(&mut w, f - 2));
            director.rewound_to(f - 2);
            for g in f - 2..f {
                ring.save(&w);
                inputs(g, &mut buf);
                w.step(&buf);
                director.ingest(&w);
            }
        }
        ring.save(&w);
        inputs(f, &mut buf);
        w.step(&buf);
        director.ingest(&w);
        director.reconcile(Some((f + 2).min(frames - 1)));
        director.deliver(&mut log);
    }
    log.check_invariants().unwrap();
    same_log(&log.confirmed(), &plain.confirmed(), "confirmed two frames ahead");
    assert!(sorted(log.standing()) == sorted(plain.standing()));
}

/// A rejoin's new session starts over from the state before frame 60 and synchronises for a
/// few ticks before it simulates anything, while the old timeline had run on to frame 89 (the
/// same inputs up to 74, others after). Events of the frames the new session has again are
/// shown once, not retracted and shown again; those it does not have are retracted when it
/// simulates their frames, never confirmed, even when the new session confirms a frame before
/// it simulates it.
#[test]
fn events_of_frames_a_new_session_takes_back_are_checked_when_they_come_again() {
    let frames = 160;
    let (plain, _) = straight(5, frames);
    let truth = feed(5, frames);
    let other = feed(6, frames);
    let (mut w, ents) = brawl();
    let mut director = EventDirector::new();
    subscribe(&mut director, &w, ents);
    let mut log = UiLog::default();
    let mut buf = Vec::new();
    for f in 0..60 {
        truth(f, &mut buf);
        w.step(&buf);
        director.ingest(&w);
        director.reconcile(Some(f));
        director.deliver(&mut log);
    }
    let at_60 = w.snapshot();
    for f in 60..90 {
        if f < 75 {
            truth(f, &mut buf)
        } else {
            other(f, &mut buf)
        }
        w.step(&buf);
        director.ingest(&w);
        director.reconcile(Some(59));
        director.deliver(&mut log);
    }
    let retracted =
        |log: &UiLog| log.notices.iter().filter(|n| n.call == UiCall::Retracted).count();
    let retracted_ahead = retracted(&log);
    w.load(&at_60).unwrap();
    director.rewound_to(60);
    for _ in 0..5 {
        director.reconcile(Some(59));
        director.deliver(&mut log);
    }
    assert_eq!(
        retracted(&log),
        retracted_ahead,
        "nothing is retracted before its frame comes again"
    );
    let before = log.notices.len();
    // The new session confirms two frames before it simulates them.
    director.reconcile(Some(61));
    director.deliver(&mut log);
    assert_eq!(log.notices.len(), before, "nothing of frames not simulated again is confirmed");
    for f in 60..frames {
        truth(f, &mut buf);
        w.step(&buf);
        director.ingest(&w);
        director.reconcile(Some(f));
        director.deliver(&mut log);
    }
    log.check_invariants().unwrap();
    same_log(&log.confirmed(), &plain.confirmed(), "across the new session");
    retractions_are_mispredictions(&log, &plain.confirmed());
    let blips = log
        .notices
        .iter()
        .filter(|n| n.call == UiCall::Retracted && n.event.key.frame < 75)
        .count();
    assert_eq!(blips, 0, "events the new session has again are not retracted");
    assert!(
        retracted(&log) > retracted_ahead,
        "the old timeline's own events from frame 75 on are retracted"
    );
}
