//! Duration types (F-GE-04) and periodic effects (F-GE-05).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-GE-04 Duration types
// ---------------------------------------------------------------------------------------------

const DURATIONS: &str = r#"(
    tags: ["Data.Duration", "State.Boosted"],
    attribute_sets: { "S": (attributes: { "Speed": (default: 100) }) },
    effects: {
        "Burst": (modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: 5))]),
        "Short": (duration: Frames(10), granted_tags: ["State.Boosted"],
                  modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: 50))]),
        "Timed": (duration: Seconds("4.15")),
        "TimedFloat": (duration: Seconds(4.15)),
        "Quarter": (duration: Seconds(0.25)),
        "Tenth": (duration: Seconds("0.1")),
        "Forever": (duration: Infinite, modifiers: [(attribute: "Speed", op: Multiply, magnitude: Scalable(coef: 2))]),
        "Caller": (duration: SetByCaller("Data.Duration")),
    },
)"#;

#[test]
fn f_ge_04_instant_changes_base_and_never_becomes_active() {
    let mut w = world(DURATIONS);
    let speed = attr(&w, "Speed");
    let e = actor(&mut w, &["S"]);
    let burst = def(&w, "Burst");
    let out = w
        .step_with(&[], |w| {
            assert_eq!(apply(w, "Burst", e, e), Applied::Executed);
        })
        .clone();
    assert_eq!(value(&w, e, speed), (int(105), int(105)));
    assert!(w.effects(e).is_empty());
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::Executed { target: e, def: Some(burst), handle: None }]
    );
    assert_eq!(out.attr_events.len(), 1);
    assert_eq!(out.attr_events[0].cause, AttrCause::Execution { def: Some(burst) });
    assert!(out.tag_events.is_empty());
}

#[test]
fn f_ge_04_duration_effect_applied_in_s_is_present_through_s_plus_d_minus_1() {
    let mut w = world(DURATIONS);
    let (speed, boosted) = (attr(&w, "Speed"), tag(&w, "State.Boosted"));
    let e = actor(&mut w, &["S"]);
    let short = def(&w, "Short");
    run_until(&mut w, 20);
    let mut h = EffectHandle::NONE;
    let out = w.step_with(&[], |w| h = handle(apply(w, "Short", e, e))).clone();
    assert_eq!(out.effect_events, vec![EffectEvent::Added { handle: h, def: short }]);
    let active = *w.effect(h).unwrap();
    let expires_at = w.effect_timer(h).unwrap().expires_at;
    assert_eq!((active.start, active.duration, expires_at), (20, 10, 30));
    // The timer column is parallel to the effect column.
    let k = w.effects(e).iter().position(|x| x.seq == h.seq).unwrap();
    assert_eq!(w.effect_timers(e)[k].expires_at, 30);
    for t in 20..30u32 {
        if t > 20 {
            w.step(&[]);
        }
        assert_eq!(w.frame(), t);
        assert_eq!(value(&w, e, speed), (int(100), int(150)), "frame {t}");
        assert!(w.has_tag(e, boosted), "frame {t}");
        assert_eq!(w.effect_remaining(h), Some((30 - t, 10)), "remaining S + D − t at {t}");
    }
    let out = w.step(&[]).clone();
    assert_eq!(w.frame(), 30);
    assert_eq!(value(&w, e, speed), (int(100), int(100)), "gone at S + D");
    assert!(!w.has_tag(e, boosted));
    assert_eq!(w.effect_remaining(h), None);
    assert_eq!(w.effect(h), None);
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::Removed { handle: h, def: short, reason: RemovalReason::Expired }]
    );
}

#[test]
fn f_ge_04_seconds_convert_exactly_to_frames() {
    let w = world(DURATIONS);
    let c = w.content().clone();
    let frames = |n: &str| c.effect_def(def(&w, n)).duration;
    assert_eq!(frames("Timed"), DurationDef::Frames(249), "4.15 s → 249, not 250 (G-47)");
    assert_eq!(frames("TimedFloat"), DurationDef::Frames(249), "authored as a RON float");
    assert_eq!(frames("Quarter"), DurationDef::Frames(15));
    assert_eq!(frames("Tenth"), DurationDef::Frames(6));
    // Another tick rate: ceil(seconds × hz).
    let c30 = content(
        r#"(settings: (tick_rate: 30), effects: {
            "A": (duration: Seconds("0.1")), "B": (duration: Seconds("4.15")), "C": (duration: Seconds(2)) })"#,
    );
    let f = |n: &str| c30.effect_def(c30.effect(n).unwrap()).duration;
    assert_eq!(f("A"), DurationDef::Frames(3));
    assert_eq!(f("B"), DurationDef::Frames(125), "4.15 × 30 = 124.5 → 125");
    assert_eq!(f("C"), DurationDef::Frames(60));
    // A timed effect really lasts that long.
    let mut w = world(DURATIONS);
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    w.step_with(&[], |w| h = handle(apply(w, "Timed", e, e)));
    assert_eq!(w.effect_remaining(h), Some((249, 249)));
    run_through(&mut w, 248);
    assert!(w.effect(h).is_some());
    run_through(&mut w, 249);
    assert!(w.effect(h).is_none());
}

#[test]
fn f_ge_04_infinite_set_by_caller_and_overridden_durations() {
    let mut w = world(DURATIONS);
    let speed = attr(&w, "Speed");
    let key = tag(&w, "Data.Duration");
    let e = actor(&mut w, &["S"]);
    let caller = def(&w, "Caller");
    // Infinite: no remaining time, never expires.
    let mut inf = EffectHandle::NONE;
    w.step_with(&[], |w| inf = handle(apply(w, "Forever", e, e)));
    assert_eq!(w.effect_timer(inf).unwrap().expires_at, NEVER);
    assert_eq!(w.effect_remaining(inf), Some((NEVER, NEVER)), "infinite: never ends");
    run_through(&mut w, 500);
    assert_eq!(value(&w, e, speed), (int(100), int(200)));
    assert!(w.effect(inf).is_some());
    // SetByCaller durations are frames, rounded down, at least 1.
    for (v, frames) in [("90", 90u32), ("2.75", 2), ("0.5", 1), ("-7", 1)] {
        let s = w.make_spec(caller, 1, e).with_set_by_caller(key, fx(v));
        let h = handle(w.apply_effect(s, e).unwrap());
        assert_eq!(w.effect_remaining(h), Some((frames, frames)), "SetByCaller {v}");
    }
    // A missing duration key is refused before anything changes.
    let before = w.state_bytes();
    assert_eq!(
        w.apply_effect(w.make_spec(caller, 1, e), e),
        Err(ApplyError::MissingSetByCaller { tag: key })
    );
    assert!(w.state_bytes() == before);
    // EffectSpec::with_duration overrides the definition's duration (also an infinite one).
    let start = w.next_frame();
    let mut hs = [EffectHandle::NONE; 2];
    w.step_with(&[], |w| {
        let short = spec(w, "Short", e).with_duration(3);
        hs[0] = handle(w.apply_effect(short, e).unwrap());
        let forever = spec(w, "Forever", e).with_duration(5);
        hs[1] = handle(w.apply_effect(forever, e).unwrap());
    });
    assert_eq!(w.effect_remaining(hs[0]), Some((3, 3)));
    assert_eq!(w.effect_remaining(hs[1]), Some((5, 5)));
    run_through(&mut w, start + 2);
    assert!(w.effect(hs[0]).is_some());
    run_through(&mut w, start + 3);
    assert!(w.effect(hs[0]).is_none());
    assert!(w.effect(hs[1]).is_some());
    run_through(&mut w, start + 5);
    assert!(w.effect(hs[1]).is_none());
    assert!(w.effect(inf).is_some());
}

// ---------------------------------------------------------------------------------------------
// F-GE-05 Periodic
// ---------------------------------------------------------------------------------------------

const PERIODIC: &str = r#"(
    tags: ["State.Silenced", "State.Regenerating"],
    attribute_sets: { "S": (attributes: { "Health": (default: 100) }) },
    effects: {
        "Dot": (duration: Seconds(5), period: Seconds(1),
                modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
        "DotNow": (duration: Seconds(5), period: Seconds(1), execute_on_application: true,
                   modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
        "Regen": (duration: Infinite, period: Frames(10), granted_tags: ["State.Regenerating"],
                  ongoing_requirements: (ignore: ["State.Silenced"]),
                  modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: 1))]),
    },
)"#;

#[test]
fn f_ge_05_five_seconds_with_one_second_period_executes_five_or_six_times() {
    let mut w = world(PERIODIC);
    let health = attr(&w, "Health");
    let (a, b, c) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let mut hs = [EffectHandle::NONE; 3];
    let mut ticks: [Vec<u32>; 3] = Default::default();
    for frame in 0..=400u32 {
        let out = w
            .step_with(&[], |w| {
                if frame == 0 {
                    hs[0] = handle(apply(w, "Dot", a, a));
                    hs[1] = handle(apply(w, "DotNow", b, b));
                }
                if frame == 7 {
                    hs[2] = handle(apply(w, "Dot", c, c));
                }
            })
            .clone();
        for h in executed_handles(&out).into_iter().flatten() {
            let k = hs.iter().position(|x| *x == h).expect("known handle");
            ticks[k].push(frame);
        }
    }
    assert_eq!(ticks[0], vec![60, 120, 180, 240, 300], "the expiry-frame execution happens");
    assert_eq!(ticks[1], vec![0, 60, 120, 180, 240, 300], "execute_on_application adds one");
    assert_eq!(ticks[2], vec![67, 127, 187, 247, 307], "anchored at the application frame");
    // Each execution changes the base value (no modifier stays).
    assert_eq!(value(&w, a, health), (int(95), int(95)));
    assert_eq!(value(&w, b, health), (int(94), int(94)));
    assert_eq!(value(&w, c, health), (int(95), int(95)));
    assert!(w.effects(a).is_empty() && w.effects(b).is_empty() && w.effects(c).is_empty());
}

#[test]
fn f_ge_05_periodic_execution_event_and_base_change_on_the_tick_frame() {
    let mut w = world(PERIODIC);
    let health = attr(&w, "Health");
    let dot = def(&w, "Dot");
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    w.step_with(&[], |w| h = handle(apply(w, "Dot", e, e)));
    assert_eq!(w.effect_timer(h).unwrap().next_period_at, 60);
    run_through(&mut w, 59);
    assert_eq!(w.base(e, health), Some(int(100)));
    let out = w.step(&[]).clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::Executed { target: e, def: Some(dot), handle: Some(h) }]
    );
    assert_eq!(out.attr_events.len(), 1);
    assert_eq!(
        (out.attr_events[0].old, out.attr_events[0].new, out.attr_events[0].cause),
        (int(100), int(99), AttrCause::Execution { def: Some(dot) })
    );
    assert_eq!(w.effect_timer(h).unwrap().next_period_at, 120);
    // The last execution and the removal share the expiry frame, execution first.
    run_through(&mut w, 299);
    let out = w.step(&[]).clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Executed { target: e, def: Some(dot), handle: Some(h) },
            EffectEvent::Removed { handle: h, def: dot, reason: RemovalReason::Expired },
        ]
    );
}

#[test]
fn f_ge_05_inhibited_periodic_effect_skips_executions_but_keeps_its_schedule() {
    let mut w = world(PERIODIC);
    let (health, silenced, regen_tag) =
        (attr(&w, "Health"), tag(&w, "State.Silenced"), tag(&w, "State.Regenerating"));
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    let mut ticks = Vec::new();
    let mut inhibition = Vec::new();
    for frame in 0..=55u32 {
        let out = w
            .step_with(&[], |w| match frame {
                0 => h = handle(apply(w, "Regen", e, e)),
                15 => w.add_loose_tag(e, silenced),
                35 => w.remove_loose_tag(e, silenced),
                _ => {}
            })
            .clone();
        if executed_handles(&out).contains(&Some(h)) {
            ticks.push(frame);
        }
        for ev in &out.effect_events {
            if let EffectEvent::InhibitionChanged { handle, inhibited } = ev {
                assert_eq!(*handle, h);
                inhibition.push((frame, *inhibited));
            }
        }
        assert_eq!(w.has_tag(e, regen_tag), !(15..35).contains(&frame), "frame {frame}");
    }
    assert_eq!(ticks, vec![10, 40, 50], "20 and 30 skipped; the schedule is not re-anchored");
    assert_eq!(inhibition, vec![(15, true), (35, false)]);
    assert_eq!(w.base(e, health), Some(int(103)));
}
