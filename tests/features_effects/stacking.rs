//! Stacking (F-GE-20).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-GE-20 Stacking
// ---------------------------------------------------------------------------------------------

const STACKS: &str = r#"(
    tags: ["Data.Duration"],
    attribute_sets: { "S": (attributes: {
        "A": (default: 10), "B": (default: 10), "C": (default: 30), "D": (default: 0),
        "Health": (default: 100) }) },
    effects: {
        "Rage": (duration: Frames(100), stacking: (kind: ByTarget, limit: 3), modifiers: [
            (attribute: "A", op: Add, magnitude: Scalable(coef: 5)),
            (attribute: "B", op: Multiply, magnitude: Scalable(coef: 1.5)),
            (attribute: "C", op: Divide, magnitude: Scalable(coef: 2)),
            (attribute: "D", op: Override, magnitude: Scalable(coef: 42))]),
        "Mark": (duration: Infinite, stacking: (kind: BySource, limit: 2),
                 modifiers: [(attribute: "A", op: Add, magnitude: Scalable(coef: 1))]),
        "Bleed": (duration: Frames(100), stacking: (kind: ByTarget, limit: 5, refresh: OnApplication)),
        "SbcBleed": (duration: SetByCaller("Data.Duration"), stacking: (kind: ByTarget, limit: 5)),
        "Sticky": (duration: Frames(100), stacking: (kind: ByTarget, limit: 5, refresh: Never)),
        "DotN": (duration: Frames(200), period: Frames(20), stacking: (kind: ByTarget, limit: 5, period: Never),
                 modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
        "DotR": (duration: Frames(200), period: Frames(20),
                 stacking: (kind: ByTarget, limit: 5, period: ResetOnApplication),
                 modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
        "Clear": (duration: Frames(10), stacking: (kind: ByTarget, limit: 3, expiration: ClearStack)),
        "OneByOne": (duration: Frames(10), stacking: (kind: ByTarget, limit: 3, expiration: RemoveOneAndRefresh),
                     modifiers: [(attribute: "A", op: Add, magnitude: Scalable(coef: 10))]),
        "Lasting": (duration: Frames(10), stacking: (kind: ByTarget, limit: 3, expiration: RefreshOnly)),
        "Capped": (duration: Frames(50), stacking: (kind: ByTarget, limit: 2, deny_overflow: true)),
    },
)"#;

#[test]
fn f_ge_20_stacked_magnitudes_are_bias_plus_m_minus_bias_times_stacks() {
    let mut w = world(STACKS);
    let [a, b, c, d] = ["A", "B", "C", "D"].map(|n| attr(&w, n));
    let e = actor(&mut w, &["S"]);
    let other = actor(&mut w, &["S"]);
    let vals = |w: &World<Plain>| [a, b, c, d].map(|x| w.attr(e, x).unwrap());
    let h = handle(apply(&mut w, "Rage", e, e));
    assert_eq!(vals(&w), [int(15), int(15), int(15), int(42)]);
    // ByTarget: another source's application joins the same stack.
    assert_eq!(apply(&mut w, "Rage", other, e), Applied::Stacked(h));
    assert_eq!(vals(&w), [int(20), int(20), int(10), int(42)], "×(1 + 0.5 × 2), ÷(1 + 1 × 2)");
    assert_eq!(apply(&mut w, "Rage", e, e), Applied::Stacked(h));
    assert_eq!(vals(&w), [int(25), int(25), fx("7.5"), int(42)], "Override ignores stacks");
    assert_eq!(w.effects(e).len(), 1);
    assert_eq!(w.effect_origin(h).unwrap().instigator, e);
    // At the limit the application still succeeds (and refreshes) without a new stack.
    w.step(&[]);
    let out = w
        .step_with(&[], |w| {
            assert_eq!(apply(w, "Rage", e, e), Applied::Stacked(h));
        })
        .clone();
    assert_eq!(w.effect(h).unwrap().stacks, 3);
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::DurationChanged { handle: h, old_expires_at: 100, new_expires_at: 101 }],
        "applied before the first step (start 0), refreshed in frame 1"
    );
    assert_eq!(vals(&w), [int(25), int(25), fx("7.5"), int(42)]);
    w.remove_effect_stacks(h, 1);
    assert_eq!(vals(&w), [int(20), int(20), int(10), int(42)]);
    // The stored magnitude is the single-stack one.
    assert_eq!(w.effect_magnitude(h, 1), Some(fx("1.5")));
}

#[test]
fn f_ge_20_by_source_keeps_one_stack_per_source() {
    let mut w = world(STACKS);
    let a = attr(&w, "A");
    let mark = def(&w, "Mark");
    let e = actor(&mut w, &["S"]);
    let (s1, s2) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let h1 = handle(apply(&mut w, "Mark", s1, e));
    let h2 = handle(apply(&mut w, "Mark", s2, e));
    assert_ne!(h1, h2);
    assert_eq!(apply(&mut w, "Mark", s1, e), Applied::Stacked(h1));
    assert_eq!(apply(&mut w, "Mark", s1, e), Applied::Stacked(h1), "limit 2 reached");
    assert_eq!(w.effect(h1).unwrap().stacks, 2);
    assert_eq!(w.effect(h2).unwrap().stacks, 1);
    assert_eq!(w.attr(e, a), Some(int(13)));
    let q = EffectQuery::new().with_def(mark).with_instigator(s2);
    assert_eq!(w.effects_matching(e, &q).map(|f| f.stacks).collect::<Vec<_>>(), vec![1]);
}

#[test]
fn f_ge_20_refresh_uses_the_incoming_specs_duration() {
    let mut w = world(STACKS);
    let key = tag(&w, "Data.Duration");
    let [bleed, sbc_bleed] = ["Bleed", "SbcBleed"].map(|n| def(&w, n));
    let e = actor(&mut w, &["S"]);
    let t = actor(&mut w, &["S"]);
    let (mut h, mut hs) = (EffectHandle::NONE, EffectHandle::NONE);
    w.step_with(&[], |w| {
        let s = w.make_spec(bleed, 1, e).with_duration(100);
        h = handle(w.apply_effect(s, e).unwrap());
        let s = w.make_spec(sbc_bleed, 1, t).with_set_by_caller(key, int(120));
        hs = handle(w.apply_effect(s, t).unwrap());
    });
    assert_eq!(w.effect_remaining(hs), Some((120, 120)));
    run_through(&mut w, 9);
    let out = w
        .step_with(&[], |w| {
            let s = w.make_spec(bleed, 1, e).with_duration(50);
            assert_eq!(w.apply_effect(s, e), Ok(Applied::Stacked(h)));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::StackChanged { handle: h, old: 1, new: 2 },
            EffectEvent::DurationChanged { handle: h, old_expires_at: 100, new_expires_at: 60 },
        ]
    );
    assert_eq!(w.effect_remaining(h), Some((50, 50)));
    // SetByCaller durations are honoured on refresh (G-22).
    run_through(&mut w, 19);
    w.step_with(&[], |w| {
        let s = w.make_spec(sbc_bleed, 1, t).with_set_by_caller(key, int(30));
        assert_eq!(w.apply_effect(s, t), Ok(Applied::Stacked(hs)));
    });
    assert_eq!(w.effect_remaining(hs), Some((30, 30)));
    run_through(&mut w, 49);
    assert_eq!(w.effect(hs).map(|f| f.stacks), Some(2));
    let out = w.step(&[]).clone();
    assert_eq!(removed(&out), vec![(hs, RemovalReason::Expired)], "frame 50");
    run_through(&mut w, 59);
    assert!(w.effect(h).is_some());
    let out = w.step(&[]).clone();
    assert_eq!(removed(&out), vec![(h, RemovalReason::Expired)], "ClearStack: both stacks at 60");
}

#[test]
fn f_ge_20_refresh_never_keeps_the_expiry() {
    let mut w = world(STACKS);
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    w.step_with(&[], |w| h = handle(apply(w, "Sticky", e, e)));
    run_through(&mut w, 49);
    let out = w
        .step_with(&[], |w| {
            apply(w, "Sticky", e, e);
        })
        .clone();
    assert_eq!(out.effect_events, vec![EffectEvent::StackChanged { handle: h, old: 1, new: 2 }]);
    assert_eq!(w.effect_timer(h).unwrap().expires_at, 100);
    run_through(&mut w, 100);
    assert!(w.effect(h).is_none());
}

#[test]
fn f_ge_20_period_never_vs_reset_on_application() {
    let mut w = world(STACKS);
    let health = attr(&w, "Health");
    let (n, r) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let (mut hn, mut hr) = (EffectHandle::NONE, EffectHandle::NONE);
    let (mut ticks_n, mut ticks_r) = (Vec::new(), Vec::new());
    for frame in 0..=60u32 {
        let out = w
            .step_with(&[], |w| {
                if frame == 0 || frame == 15 {
                    hn = handle(apply(w, "DotN", n, n));
                    hr = handle(apply(w, "DotR", r, r));
                }
            })
            .clone();
        let ex = executed_handles(&out);
        if ex.contains(&Some(hn)) {
            ticks_n.push(frame);
        }
        if ex.contains(&Some(hr)) {
            ticks_r.push(frame);
        }
    }
    assert_eq!(ticks_n, vec![20, 40, 60], "the original schedule");
    assert_eq!(ticks_r, vec![35, 55], "re-anchored at the second application");
    assert_eq!(w.base(n, health), Some(int(94)), "−1 × 2 stacks per tick");
    assert_eq!(w.base(r, health), Some(int(96)));
}

#[test]
fn f_ge_20_expiration_policies() {
    let mut w = world(STACKS);
    let a = attr(&w, "A");
    let (c, o, l) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let mut hs = [EffectHandle::NONE; 3];
    w.step_with(&[], |w| {
        for _ in 0..3 {
            hs[0] = handle(apply(w, "Clear", c, c));
            hs[1] = handle(apply(w, "OneByOne", o, o));
            hs[2] = handle(apply(w, "Lasting", l, l));
        }
    });
    assert_eq!(w.attr(o, a), Some(int(40)));
    run_through(&mut w, 9);
    let out = w.step(&[]).clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Removed {
                handle: hs[0],
                def: def(&w, "Clear"),
                reason: RemovalReason::Expired
            },
            EffectEvent::StackChanged { handle: hs[1], old: 3, new: 2 },
            EffectEvent::DurationChanged { handle: hs[1], old_expires_at: 10, new_expires_at: 20 },
            EffectEvent::DurationChanged { handle: hs[2], old_expires_at: 10, new_expires_at: 20 },
        ]
    );
    assert_eq!(w.attr(o, a), Some(int(30)));
    run_through(&mut w, 20);
    assert_eq!(w.effect(hs[1]).unwrap().stacks, 1);
    assert_eq!(w.attr(o, a), Some(int(20)));
    run_through(&mut w, 29);
    assert!(w.effect(hs[1]).is_some());
    run_through(&mut w, 30);
    assert!(w.effect(hs[1]).is_none(), "the last stack expires at 30");
    assert_eq!(w.attr(o, a), Some(int(10)));
    run_through(&mut w, 200);
    let lasting = w.effect(hs[2]).expect("RefreshOnly never expires on its own");
    assert_eq!((lasting.stacks, w.effect_timer(hs[2]).unwrap().expires_at), (3, 210));
}

#[test]
fn f_ge_20_deny_overflow_refuses_the_application_without_refreshing() {
    let mut w = world(STACKS);
    let capped = def(&w, "Capped");
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    w.step_with(&[], |w| {
        h = handle(apply(w, "Capped", e, e));
        apply(w, "Capped", e, e);
    });
    run_through(&mut w, 4);
    let out = w
        .step_with(&[], |w| {
            let s = spec(w, "Capped", e);
            assert_eq!(w.apply_effect(s, e), Err(ApplyError::StackOverflowDenied));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::ApplyFailed {
            target: e,
            def: Some(capped),
            error: ApplyError::StackOverflowDenied
        }]
    );
    let f = w.effect(h).unwrap();
    assert_eq!((f.stacks, w.effect_timer(h).unwrap().expires_at), (2, 50));
}
