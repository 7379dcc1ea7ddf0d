//! Immunity (F-GE-17), tags on effects (F-GE-18) and ongoing requirements (F-GE-19).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-GE-17 Immunity
// ---------------------------------------------------------------------------------------------

const IMMUNITY: &str = r#"(
    tags: ["Faction.Undead.Ghoul", "Faction.Human", "Effect.Dot.Poison", "Effect.Buff", "State.Warded",
           "State.Exposed"],
    attribute_sets: { "S": (attributes: { "Health": (default: 100) }) },
    effects: {
        "Ward": (duration: Frames(100), immunity_tags: ["Faction.Undead"], granted_tags: ["State.Warded"]),
        "Antidote": (duration: Infinite, immunity_query: AnyTags(["Effect.Dot"]),
                     ongoing_requirements: (ignore: ["State.Exposed"])),
        "Poison": (duration: Frames(50), asset_tags: ["Effect.Dot.Poison"]),
        "Bless": (duration: Frames(50), asset_tags: ["Effect.Buff"]),
        "Slap": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
    },
)"#;

#[test]
fn f_ge_17_immunity_tags_block_specs_by_their_captured_source_tags() {
    let mut w = world(IMMUNITY);
    let health = attr(&w, "Health");
    let ghoul_tag = tag(&w, "Faction.Undead.Ghoul");
    let slap = def(&w, "Slap");
    let e = actor(&mut w, &["S"]);
    let ghoul = actor(&mut w, &["S"]);
    let human = actor(&mut w, &["S"]);
    w.add_loose_tag(human, tag(&w, "Faction.Human"));
    let early = spec(&w, "Slap", ghoul);
    w.add_loose_tag(ghoul, ghoul_tag);
    let start = w.next_frame();
    let mut ward = EffectHandle::NONE;
    w.step_with(&[], |w| ward = handle(apply(w, "Ward", e, e)));
    let out = w
        .step_with(&[], |w| {
            let s = spec(w, "Slap", ghoul);
            assert_eq!(w.apply_effect(s, e), Err(ApplyError::Immune { blocker: ward }));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::ImmunityBlocked { target: e, def: Some(slap), blocker: ward }],
        "reported as ImmunityBlocked only"
    );
    assert_eq!(w.base(e, health), Some(int(100)));
    // Other sources pass; a spec made before the source became undead passes too.
    assert_eq!(apply(&mut w, "Slap", human, e), Applied::Executed);
    assert_eq!(w.apply_effect(early, e), Ok(Applied::Executed));
    assert_eq!(w.base(e, health), Some(int(98)));
    // A spec made while undead stays blocked after the source loses the tag.
    let late = spec(&w, "Slap", ghoul);
    w.remove_loose_tag(ghoul, ghoul_tag);
    assert_eq!(w.apply_effect(late, e), Err(ApplyError::Immune { blocker: ward }));
    // The immunity ends with the effect.
    run_through(&mut w, start + 100);
    assert!(w.effect(ward).is_none());
    assert_eq!(w.apply_effect(late, e), Ok(Applied::Executed));
    assert_eq!(w.base(e, health), Some(int(97)));
}

#[test]
fn f_ge_17_immunity_query_matches_the_incoming_spec() {
    let mut w = world(IMMUNITY);
    let exposed = tag(&w, "State.Exposed");
    let poison = def(&w, "Poison");
    let e = actor(&mut w, &["S"]);
    let antidote = handle(apply(&mut w, "Antidote", e, e));
    let s = spec(&w, "Poison", e);
    assert_eq!(w.apply_effect(s, e), Err(ApplyError::Immune { blocker: antidote }));
    assert_eq!(
        w.output().effect_events.last(),
        Some(&EffectEvent::ImmunityBlocked { target: e, def: Some(poison), blocker: antidote })
    );
    assert!(matches!(apply(&mut w, "Bless", e, e), Applied::Added(_)));
    // An inhibited immunity effect blocks nothing.
    w.add_loose_tag(e, exposed);
    assert!(w.effect(antidote).unwrap().is_inhibited());
    assert!(matches!(w.apply_effect(s, e), Ok(Applied::Added(_))));
    w.remove_loose_tag(e, exposed);
    assert_eq!(w.apply_effect(s, e), Err(ApplyError::Immune { blocker: antidote }));
}

/// An immunity query matches the incoming spec's asset and granted tags together,
/// hierarchically — the definition's granted tags and those the spec added (inline and
/// beyond the spec's two) — as GAS matches an effect query's owning tags.
#[test]
fn f_ge_17_immunity_query_matches_the_incoming_granted_tags() {
    let text = r#"(
        tags: ["State.Debuff.Stun", "State.Debuff.Root", "State.Buff", "Cooldown.Skill.Bolt",
               "Effect.Spell"],
        effects: {
            "Ward": (duration: Infinite, immunity_query: AnyTags(["State.Debuff"])),
            "Stun": (duration: Frames(10), granted_tags: ["State.Debuff.Stun"]),
            "Plain": (duration: Frames(10)),
            "Mixed": (duration: Infinite, immunity_query: AllTags(["Effect.Spell", "State.Buff"])),
            "Spell": (duration: Frames(10), asset_tags: ["Effect.Spell"]),
        },
    )"#;
    let cfg = WorldConfig { granted_tags_per_spec: 4, ..WorldConfig::default() };
    let mut w = World::<Plain>::new(content(text), &Hooks::new(), cfg).unwrap();
    let [root, buff, cd] =
        ["State.Debuff.Root", "State.Buff", "Cooldown.Skill.Bolt"].map(|n| tag(&w, n));
    let (e, f) = (actor(&mut w, &[]), actor(&mut w, &[]));
    let ward = handle(apply(&mut w, "Ward", e, e));
    let mixed = handle(apply(&mut w, "Mixed", f, f));
    let immune = |b| Err(ApplyError::Immune { blocker: b });
    // The definition's granted tag, by its parent.
    let s = spec(&w, "Stun", e);
    assert_eq!(w.apply_effect(s, e), immune(ward));
    // A granted tag the spec added: inline, and as the third beyond the spec's two.
    let mut s = spec(&w, "Plain", e);
    w.add_granted_tag(&mut s, root).unwrap();
    assert_eq!(w.apply_effect(s, e), immune(ward));
    let mut s = spec(&w, "Plain", e);
    for t in [cd, buff, root] {
        w.add_granted_tag(&mut s, t).unwrap();
    }
    assert_eq!(w.apply_effect(s, e), immune(ward));
    assert!(matches!(apply(&mut w, "Plain", e, e), Applied::Added(_)));
    // Asset and granted tags together: an asset tag and an added granted tag make the pair.
    let s = spec(&w, "Spell", f);
    assert!(matches!(w.apply_effect(s, f), Ok(Applied::Added(_))));
    let mut s = spec(&w, "Spell", f);
    w.add_granted_tag(&mut s, buff).unwrap();
    assert_eq!(w.apply_effect(s, f), immune(mixed));
}

// ---------------------------------------------------------------------------------------------
// F-GE-18 Tags on effects
// ---------------------------------------------------------------------------------------------

const EFFECT_TAGS: &str = r#"(
    tags: ["State.Debuff.Stun", "State.Debuff.Slow", "State.Debuff.Purge", "Effect.Debuff.Curse",
           "State.Wet", "State.Dead", "State.Hexed", "Effect.Hex"],
    attribute_sets: { "S": (attributes: { "Speed": (default: 100) }) },
    effects: {
        "Hex": (duration: Infinite, asset_tags: ["Effect.Hex"], granted_tags: ["State.Hexed"]),
        "HexStack": (duration: Infinite, granted_tags: ["State.Hexed"], stacking: (kind: ByTarget, limit: 3)),
        "Stun": (duration: Infinite, granted_tags: ["State.Debuff.Stun"]),
        "Slow": (duration: Infinite, asset_tags: ["State.Debuff.Slow"],
                 modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: -20))]),
        "Weak": (duration: Infinite, asset_tags: ["State.Debuff"]),
        "Curse": (duration: Infinite, asset_tags: ["Effect.Debuff.Curse"]),
        "Purge": (duration: Infinite, asset_tags: ["State.Debuff.Purge"], remove_effects_with_tags: ["State.Debuff"]),
        "UnStun": (remove_effects_with_tags: ["State.Debuff.Stun"]),
        "Drench": (duration: Frames(10), application_requirements: (require: ["State.Wet"], ignore: ["State.Dead"])),
    },
)"#;

#[test]
fn f_ge_18_granted_tags_count_once_per_effect_instance() {
    let mut w = world(EFFECT_TAGS);
    let (hexed, state) = (tag(&w, "State.Hexed"), tag(&w, "State"));
    let e = actor(&mut w, &["S"]);
    let mut hs = [EffectHandle::NONE; 2];
    let out = w
        .step_with(&[], |w| {
            hs[0] = handle(apply(w, "Hex", e, e));
            hs[1] = handle(apply(w, "Hex", e, e));
        })
        .clone();
    assert_eq!(w.tag_count_exact(e, hexed), 2);
    assert_eq!(w.tag_count(e, state), 2, "ancestors count their descendants");
    let hexed_events: Vec<(u32, u32)> =
        out.tag_events.iter().filter(|t| t.tag == hexed).map(|t| (t.old, t.new)).collect();
    assert_eq!(hexed_events, vec![(0, 1), (1, 2)], "one event per application (cascade step)");
    w.remove_effect(hs[0]);
    assert_eq!(w.tag_count_exact(e, hexed), 1);
    assert!(w.has_tag(e, hexed));
    w.remove_effect(hs[1]);
    assert_eq!(w.tag_count_exact(e, hexed), 0);
    assert!(!w.has_tag(e, hexed) && !w.has_tag(e, state));
    // A stack is one instance: one grant whatever the stack count.
    for _ in 0..3 {
        apply(&mut w, "HexStack", e, e);
    }
    assert_eq!(w.effects(e)[0].stacks, 3);
    assert_eq!(w.tag_count_exact(e, hexed), 1);
    // Loose tags and grants add up.
    w.add_loose_tag(e, hexed);
    assert_eq!(w.tag_count_exact(e, hexed), 2);
    w.remove_matching(e, &EffectQuery::new());
    assert_eq!(w.tag_count_exact(e, hexed), 1);
}

#[test]
fn f_ge_18_application_requirements_gate_application() {
    let mut w = world(EFFECT_TAGS);
    let (wet, dead) = (tag(&w, "State.Wet"), tag(&w, "State.Dead"));
    let drench = def(&w, "Drench");
    let e = actor(&mut w, &["S"]);
    let out = w
        .step_with(&[], |w| {
            let s = spec(w, "Drench", e);
            assert_eq!(w.apply_effect(s, e), Err(ApplyError::Requirements));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::ApplyFailed {
            target: e,
            def: Some(drench),
            error: ApplyError::Requirements
        }]
    );
    w.add_loose_tag(e, wet);
    let h = handle(apply(&mut w, "Drench", e, e));
    // Application requirements are not ongoing requirements: losing the tag changes nothing.
    w.remove_loose_tag(e, wet);
    assert!(!w.effect(h).unwrap().is_inhibited());
    w.add_loose_tag(e, wet);
    w.add_loose_tag(e, dead);
    assert_eq!(w.apply_effect(spec(&w, "Drench", e), e), Err(ApplyError::Requirements));
    assert_eq!(w.effects(e).len(), 1);
}

#[test]
fn f_ge_18_remove_effects_with_tags_matches_asset_or_granted_tags_hierarchically() {
    let mut w = world(EFFECT_TAGS);
    let speed = attr(&w, "Speed");
    let [stun, slow, weak, curse, purge] =
        ["Stun", "Slow", "Weak", "Curse", "Purge"].map(|n| def(&w, n));
    let e = actor(&mut w, &["S"]);
    let hs: Vec<EffectHandle> =
        ["Stun", "Slow", "Weak", "Curse"].iter().map(|n| handle(apply(&mut w, n, e, e))).collect();
    assert_eq!(w.attr(e, speed), Some(int(80)));
    // A child tag does not match a parent owned tag: UnStun removes only the Stun grant.
    let out = w
        .step_with(&[], |w| {
            apply(w, "UnStun", e, e);
        })
        .clone();
    assert_eq!(removed(&out), vec![(hs[0], RemovalReason::RemovedByTags)]);
    assert_eq!(w.effects(e).iter().map(|f| f.def).collect::<Vec<_>>(), vec![slow, weak, curse]);
    let stun_h = handle(apply(&mut w, "Stun", e, e));
    // "State.Debuff" matches granted State.Debuff.Stun, asset State.Debuff.Slow and asset
    // State.Debuff; not Effect.Debuff.Curse, and never the new Purge itself (asset
    // State.Debuff.Purge).
    let mut p1 = EffectHandle::NONE;
    let out = w.step_with(&[], |w| p1 = handle(apply(w, "Purge", e, e))).clone();
    let mut got = removed(&out);
    got.sort_by_key(|(h, _)| h.seq);
    assert_eq!(
        got,
        vec![
            (hs[1], RemovalReason::RemovedByTags),
            (hs[2], RemovalReason::RemovedByTags),
            (stun_h, RemovalReason::RemovedByTags),
        ]
    );
    assert!(out.effect_events.contains(&EffectEvent::Removed {
        handle: stun_h,
        def: stun,
        reason: RemovalReason::RemovedByTags
    }));
    assert_eq!(w.effects(e).iter().map(|f| f.def).collect::<Vec<_>>(), vec![curse, purge]);
    assert_eq!(w.attr(e, speed), Some(int(100)));
    assert!(!w.has_tag(e, tag(&w, "State.Debuff.Stun")));
    // A second Purge removes the first one, not itself.
    let p2 = handle(apply(&mut w, "Purge", e, e));
    assert!(w.effect(p1).is_none());
    assert!(w.effect(p2).is_some());
    assert_eq!(w.effects(e).len(), 2);
    assert!(w.effect(hs[3]).is_some(), "Curse (Effect.Debuff.Curse) was never matched");
}

// ---------------------------------------------------------------------------------------------
// F-GE-19 Ongoing requirements
// ---------------------------------------------------------------------------------------------

const ONGOING: &str = r#"(
    tags: ["State.Debuff.Stun", "State.Hasted"],
    attribute_sets: { "S": (attributes: { "Speed": (default: 100) }) },
    effects: {
        "Haste": (duration: Frames(30), granted_tags: ["State.Hasted"],
                  ongoing_requirements: (ignore: ["State.Debuff.Stun"]),
                  modifiers: [(attribute: "Speed", op: Multiply, magnitude: Scalable(coef: 2))]),
        "Stun": (duration: Frames(5), granted_tags: ["State.Debuff.Stun"]),
    },
)"#;

#[test]
fn f_ge_19_failing_ongoing_requirements_switch_an_effect_off_and_back_on() {
    let mut w = world(ONGOING);
    let (speed, stun_tag, hasted) =
        (attr(&w, "Speed"), tag(&w, "State.Debuff.Stun"), tag(&w, "State.Hasted"));
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    let mut log = Vec::new();
    for frame in 0..=31u32 {
        let out = w
            .step_with(&[], |w| match frame {
                0 => h = handle(apply(w, "Haste", e, e)),
                10 => w.add_loose_tag(e, stun_tag),
                20 => w.remove_loose_tag(e, stun_tag),
                _ => {}
            })
            .clone();
        let on = (0..10).contains(&frame) || (20..30).contains(&frame);
        assert_eq!(w.attr(e, speed), Some(int(if on { 200 } else { 100 })), "frame {frame}");
        assert_eq!(w.has_tag(e, hasted), on, "frame {frame}");
        if frame < 30 {
            let f = w.effect(h).expect("the effect stays while inhibited");
            assert_eq!(f.is_inhibited(), !on, "frame {frame}");
            assert_eq!(w.effect_remaining(h), Some((30 - frame, 30)), "duration keeps counting");
        }
        for ev in &out.effect_events {
            if let EffectEvent::InhibitionChanged { inhibited, .. } = ev {
                log.push((frame, *inhibited));
            }
        }
        if frame == 10 || frame == 20 {
            let speed_events: Vec<(Fx, Fx, AttrCause)> = out
                .attr_events
                .iter()
                .filter(|a| a.attr == speed)
                .map(|a| (a.old, a.new, a.cause))
                .collect();
            let (old, new) = if frame == 10 { (200, 100) } else { (100, 200) };
            assert_eq!(speed_events, vec![(int(old), int(new), AttrCause::Modifiers)]);
        }
    }
    assert_eq!(log, vec![(10, true), (20, false)]);
    assert!(w.effect(h).is_none(), "expired at 30 as scheduled");
}

#[test]
fn f_ge_19_inhibition_follows_tags_granted_by_other_effects_and_at_application() {
    let mut w = world(ONGOING);
    let (speed, stun_tag, hasted) =
        (attr(&w, "Speed"), tag(&w, "State.Debuff.Stun"), tag(&w, "State.Hasted"));
    let [haste, stun] = ["Haste", "Stun"].map(|n| def(&w, n));
    let e = actor(&mut w, &["S"]);
    // Applied while the requirement fails: added switched off.
    w.add_loose_tag(e, stun_tag);
    let mut h = EffectHandle::NONE;
    let out = w.step_with(&[], |w| h = handle(apply(w, "Haste", e, e))).clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Added { handle: h, def: haste },
            EffectEvent::InhibitionChanged { handle: h, inhibited: true },
        ]
    );
    assert!(!w.has_tag(e, hasted));
    assert_eq!(w.attr(e, speed), Some(int(100)));
    assert_eq!(w.effects_matching(e, &EffectQuery::new()).count(), 1);
    assert_eq!(w.effects_matching(e, &EffectQuery::new().including_inhibited(false)).count(), 0);
    w.remove_loose_tag(e, stun_tag);
    assert_eq!(w.attr(e, speed), Some(int(200)));
    assert!(w.has_tag(e, hasted));
    // Another effect's granted tag switches it off in the same cascade, and back on at expiry.
    let mut s = EffectHandle::NONE;
    let out = w.step_with(&[], |w| s = handle(apply(w, "Stun", e, e))).clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Added { handle: s, def: stun },
            EffectEvent::InhibitionChanged { handle: h, inhibited: true },
        ]
    );
    assert_eq!(w.attr(e, speed), Some(int(100)));
    let frame = w.frame();
    run_through(&mut w, frame + 4);
    assert_eq!(w.attr(e, speed), Some(int(100)));
    let out = w.step(&[]).clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Removed { handle: s, def: stun, reason: RemovalReason::Expired },
            EffectEvent::InhibitionChanged { handle: h, inhibited: false },
        ]
    );
    assert_eq!(w.attr(e, speed), Some(int(200)));
    // Removing an inhibited effect does not release grants it never held.
    w.add_loose_tag(e, stun_tag);
    w.remove_effect(h);
    assert_eq!(w.tag_count_exact(e, hasted), 0);
    assert!(!w.output().diagnostics.iter().any(|d| matches!(d, Diagnostic::TagUnderflow { .. })));
    assert_eq!(w.attr(e, speed), Some(int(100)));
}
