//! Effect queries (F-GE-26).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-GE-26 Effect queries
// ---------------------------------------------------------------------------------------------

const QUERIES: &str = r#"(
    tags: ["Cooldown.Skill.Fire", "Cooldown.Skill.Ice", "Effect.Buff", "Effect.Debuff", "State.Slowed",
           "State.Immune"],
    attribute_sets: { "S": (attributes: { "Speed": (default: 100), "Armor": (default: 0) }) },
    effects: {
        "FireCd": (duration: Frames(300), granted_tags: ["Cooldown.Skill.Fire"]),
        "IceCd": (duration: Frames(120), granted_tags: ["Cooldown.Skill.Ice"]),
        "Buff": (duration: Infinite, asset_tags: ["Effect.Buff"],
                 modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: 10))]),
        "Debuff": (duration: Infinite, asset_tags: ["Effect.Debuff"], granted_tags: ["State.Slowed"],
                   ongoing_requirements: (ignore: ["State.Immune"]),
                   modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: -30))]),
        "Plate": (duration: Infinite, modifiers: [(attribute: "Armor", op: Add, magnitude: Scalable(coef: 5))]),
    },
)"#;

#[test]
fn f_ge_26_effects_matching_filters_by_owned_tags_def_instigator_and_attribute() {
    let mut w = world(QUERIES);
    let (speed, armor) = (attr(&w, "Speed"), attr(&w, "Armor"));
    let [fire_cd, ice_cd, buff, debuff, plate] =
        ["FireCd", "IceCd", "Buff", "Debuff", "Plate"].map(|n| def(&w, n));
    let [cooldown, skill_ice, effect, e_buff, e_debuff, slowed, immune] = [
        "Cooldown",
        "Cooldown.Skill.Ice",
        "Effect",
        "Effect.Buff",
        "Effect.Debuff",
        "State.Slowed",
        "State.Immune",
    ]
    .map(|n| tag(&w, n));
    let e = actor(&mut w, &["S"]);
    let (s1, s2) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    w.step_with(&[], |w| {
        apply(w, "FireCd", s1, e);
        apply(w, "IceCd", s2, e);
        apply(w, "Buff", s1, e);
        apply(w, "Debuff", s2, e);
        apply(w, "Plate", s2, e);
    });
    let defs = |w: &World<Plain>, q: &EffectQuery| -> Vec<EffectDefId> {
        w.effects_matching(e, q).map(|f| f.def).collect()
    };
    assert_eq!(defs(&w, &EffectQuery::new()), vec![fire_cd, ice_cd, buff, debuff, plate]);
    let seqs: Vec<u32> = w.effects_matching(e, &EffectQuery::new()).map(|f| f.seq).collect();
    assert!(seqs.windows(2).all(|p| p[0] < p[1]), "ordered by application sequence");
    // Owned tags (asset ∪ granted), hierarchically.
    assert_eq!(
        defs(&w, &EffectQuery::new().with_owned_any(ts(&[cooldown]))),
        vec![fire_cd, ice_cd]
    );
    assert_eq!(defs(&w, &EffectQuery::new().with_owned_any(ts(&[skill_ice]))), vec![ice_cd]);
    assert_eq!(
        defs(&w, &EffectQuery::new().with_owned_any(ts(&[e_buff, slowed]))),
        vec![buff, debuff]
    );
    assert_eq!(defs(&w, &EffectQuery::new().with_owned_all(ts(&[e_debuff, slowed]))), vec![debuff]);
    assert!(defs(&w, &EffectQuery::new().with_owned_all(ts(&[e_debuff, e_buff]))).is_empty());
    let q = TagQuery {
        expr: Some(TagQueryExpr::AllExpr(vec![
            TagQueryExpr::AnyTags(ts(&[effect])),
            TagQueryExpr::NoTags(ts(&[slowed])),
        ])),
    };
    assert_eq!(defs(&w, &EffectQuery::new().with_owned_query(q)), vec![buff]);
    assert!(
        defs(&w, &EffectQuery::new().with_owned_query(TagQuery::EMPTY)).is_empty(),
        "the empty query matches nothing (G-25)"
    );
    // Definition, instigator, modified attribute, and combinations.
    assert_eq!(defs(&w, &EffectQuery::new().with_def(plate)), vec![plate]);
    assert_eq!(defs(&w, &EffectQuery::new().with_instigator(s1)), vec![fire_cd, buff]);
    assert_eq!(defs(&w, &EffectQuery::new().with_modifies(speed)), vec![buff, debuff]);
    assert_eq!(defs(&w, &EffectQuery::new().with_modifies(armor)), vec![plate]);
    assert_eq!(
        defs(&w, &EffectQuery::new().with_instigator(s2).with_modifies(speed)),
        vec![debuff]
    );
    // Inhibited effects match unless excluded.
    w.add_loose_tag(e, immune);
    let q = EffectQuery::new().with_owned_any(ts(&[effect]));
    assert_eq!(defs(&w, &q), vec![buff, debuff]);
    assert_eq!(defs(&w, &q.clone().including_inhibited(false)), vec![buff]);
    // Cooldown lookup: the longest remaining matching effect.
    run_through(&mut w, 50);
    let longest = w
        .effects_matching(e, &EffectQuery::new().with_owned_any(ts(&[cooldown])))
        .filter_map(|f| w.effect_remaining(f.handle(e)))
        .max();
    assert_eq!(longest, Some((250, 300)));
}

/// The granted tags a spec adds (`World::add_granted_tag`, an ability's `cooldown_tags` on its
/// cooldown), inline and beyond the spec's two, are the effect's own tags: queries, removal by
/// query and "remove effects with tags" match them, hierarchically (GAS: owned tags are the
/// spec's asset tags and all its granted tags).
#[test]
fn f_ge_26_queries_and_removal_see_the_granted_tags_a_spec_adds() {
    let text = r#"(
        tags: ["Cooldown.Skill.Fire", "Cooldown.Skill.Ice", "Cooldown.Slot.A", "Cooldown.Slot.B"],
        effects: {
            "Cd": (duration: Frames(100)),
            "ResetSlots": (remove_effects_with_tags: ["Cooldown.Slot"]),
        },
    )"#;
    let cfg = WorldConfig { granted_tags_per_spec: 4, ..WorldConfig::default() };
    let mut w = World::<Plain>::new(content(text), &Hooks::new(), cfg).unwrap();
    let [cooldown, fire, ice, slot, slot_a, slot_b] = [
        "Cooldown",
        "Cooldown.Skill.Fire",
        "Cooldown.Skill.Ice",
        "Cooldown.Slot",
        "Cooldown.Slot.A",
        "Cooldown.Slot.B",
    ]
    .map(|n| tag(&w, n));
    let e = actor(&mut w, &[]);
    let mut handles = Vec::new();
    w.step_with(&[], |w| {
        // Two tags in the spec itself; the third and fourth beyond them.
        let mut a = spec(w, "Cd", e);
        w.add_granted_tag(&mut a, fire).unwrap();
        let mut b = spec(w, "Cd", e);
        for t in [ice, fire, slot_a] {
            w.add_granted_tag(&mut b, t).unwrap();
        }
        let mut c = spec(w, "Cd", e);
        w.add_granted_tag(&mut c, slot_b).unwrap();
        for s in [a, b, c] {
            handles.push(handle(w.apply_effect(s, e).unwrap()));
        }
    });
    let found = |w: &World<Plain>, q: &EffectQuery| -> Vec<EffectHandle> {
        w.effects_matching(e, q).map(|f| f.handle(e)).collect()
    };
    assert_eq!(found(&w, &EffectQuery::new().with_owned_any(ts(&[cooldown]))), handles);
    assert_eq!(found(&w, &EffectQuery::new().with_owned_any(ts(&[ice]))), [handles[1]]);
    assert_eq!(
        found(&w, &EffectQuery::new().with_owned_all(ts(&[fire, slot_a]))),
        [handles[1]],
        "a tag beyond the spec's two"
    );
    let q = TagQuery { expr: Some(TagQueryExpr::NoTags(ts(&[slot]))) };
    assert_eq!(found(&w, &EffectQuery::new().with_owned_query(q)), [handles[0]]);
    let owned = w.effect_owned_tags(handles[1]);
    assert!([cooldown, fire, ice, slot, slot_a].iter().all(|t| owned.contains(*t)));
    assert!(!owned.contains(slot_b));
    assert!(w.effect_owned_tags(EffectHandle { target: e, seq: 9999 }).is_empty());

    // "Remove effects with tags" by a parent tag: the two slot cooldowns, not the first one.
    w.step_with(&[], |w| {
        apply(w, "ResetSlots", e, e);
    });
    assert_eq!(removed(w.output()), [1, 2].map(|i| (handles[i], RemovalReason::RemovedByTags)));
    assert!(w.has_tag(e, fire) && !w.has_tag(e, slot) && !w.has_tag(e, ice));
    // Removal by query.
    w.step_with(&[], |w| {
        assert_eq!(w.remove_matching(e, &EffectQuery::new().with_owned_any(ts(&[fire]))), 1);
    });
    assert!(w.effects(e).is_empty() && !w.has_tag(e, cooldown));
}

#[test]
fn f_ge_26_remove_matching_removes_in_application_order() {
    let mut w = world(QUERIES);
    let speed = attr(&w, "Speed");
    let effect = tag(&w, "Effect");
    let e = actor(&mut w, &["S"]);
    let hs: Vec<EffectHandle> =
        ["Buff", "Plate", "Debuff"].iter().map(|n| handle(apply(&mut w, n, e, e))).collect();
    assert_eq!(w.attr(e, speed), Some(int(80)));
    let mut n = 0;
    let out = w
        .step_with(&[], |w| {
            n = w.remove_matching(e, &EffectQuery::new().with_owned_any(ts(&[effect])));
        })
        .clone();
    assert_eq!(n, 2);
    assert_eq!(
        removed(&out),
        vec![(hs[0], RemovalReason::Removed), (hs[2], RemovalReason::Removed)]
    );
    assert_eq!(w.effects(e).len(), 1);
    assert_eq!(w.attr(e, speed), Some(int(100)));
    assert!(!w.has_tag(e, tag(&w, "State.Slowed")));
}
