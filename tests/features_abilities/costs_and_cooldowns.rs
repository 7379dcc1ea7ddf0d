//! Commit (F-GA-06), cost (F-GA-07), cooldowns (F-GA-08) and cooldown remaining (F-GA-09).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-GA-06 Commit
// ---------------------------------------------------------------------------------------------

const LATE: &str = r#"(abilities: {
    "Late": (tags: ["Ability.Skill.Fire"], commit_on_activate: false, cost: "ManaCost",
             cooldown: "FireCooldown", behaviour: "Script"),
})"#;

#[test]
fn f_ga_06_commit_cost_and_cooldown_from_the_behaviour() {
    // (acts, mana after, cooldown tag, Committed carries a cooldown)
    let cases: [(&[Act], i64, bool, bool); 4] = [
        (&[], 50, false, false),
        (&[Act::Commit], 40, true, true),
        (&[Act::CommitCost], 40, false, false),
        (&[Act::CommitCooldown], 50, true, true),
    ];
    for (acts, mana_after, cd, has_cd_handle) in cases {
        let mut w = arena(LATE);
        let mana = attr(&w, "Mana");
        let cd_tag = tag(&w, "Cooldown.Fire");
        let hero = actor(&mut w);
        let h = grant(&mut w, hero, "Late");
        plan(ab(&w, "Late"), acts);
        let out = frame(&mut w, |w| assert_eq!(w.try_activate(h), ok(1)));
        assert_eq!(w.attr(hero, mana), Some(int(mana_after)), "{acts:?}");
        assert_eq!(w.has_tag(hero, cd_tag), cd, "{acts:?}");
        let committed: Vec<Option<EffectHandle>> = out
            .ability_events
            .iter()
            .filter_map(|e| match e {
                AbilityEvent::Committed { handle, cooldown } if *handle == h => Some(*cooldown),
                _ => None,
            })
            .collect();
        if acts.is_empty() {
            assert!(committed.is_empty(), "nothing is committed on activation");
            continue;
        }
        assert_eq!(committed.len(), 1, "{acts:?}");
        assert_eq!(committed[0].is_some(), has_cd_handle, "{acts:?}");
        if let Some(eh) = committed[0] {
            let ef = w.effect(eh).expect("the cooldown effect is active");
            assert_eq!((ef.def, ef.duration, eh.target), (eff(&w, "FireCooldown"), 30, hero));
            assert_eq!(w.ability_cooldown_remaining(h), Some((30, 30)));
        }
        assert!(log().contains(&Rec::Commit { frame: 0, h, ok: true }));
        assert!(w.is_ability_active(h));
    }
}

#[test]
fn f_ga_06_a_failed_commit_recheck_cancels_the_ability() {
    let mut w = arena(LATE);
    let mana = attr(&w, "Mana");
    let hero = actor(&mut w);
    let h = grant(&mut w, hero, "Late");
    let late = ab(&w, "Late");
    plan(late, &[Act::Spawn(0, TaskSpec::WaitFrames(2))]);
    on_task_plan(late, 0, Act::Commit);
    frame(&mut w, |w| assert_eq!(w.try_activate(h), ok(1)));
    frame(&mut w, |w| w.set_base(hero, mana, int(5)));
    // Frame 2: the task finishes, the behaviour commits; the cost re-check fails.
    let out = frame(&mut w, |_| {});
    assert!(log().contains(&Rec::Commit { frame: 2, h, ok: false }));
    assert_eq!(ended(&out), vec![(h, true)]);
    assert!(!out.ability_events.iter().any(|e| matches!(e, AbilityEvent::Committed { .. })));
    assert!(!w.is_ability_active(h));
    assert_eq!(w.attr(hero, mana), Some(int(5)));
    assert!(!w.has_tag(hero, tag(&w, "Cooldown.Fire")), "no partial commit");
    // From outside: a cooldown re-check fails while the cooldown runs.
    plan(late, &[Act::CommitCooldown]);
    w.set_base(hero, mana, int(50));
    frame(&mut w, |w| assert_eq!(w.try_activate(h), ok(2)));
    assert!(w.has_tag(hero, tag(&w, "Cooldown.Fire")));
    let out = frame(&mut w, |w| {
        assert_eq!(w.commit_ability(h, false, true), Err(ActivationFailure::OnCooldown));
    });
    assert_eq!(ended(&out), vec![(h, true)]);
    assert_eq!(ends_of(h), vec![(2, true), (4, true)]);
    // Committing an inactive or stale ability does nothing.
    assert_eq!(
        w.commit_ability(AbilityHandle::NONE, true, true),
        Err(ActivationFailure::InvalidHandle)
    );
}

// ---------------------------------------------------------------------------------------------
// F-GA-07 Cost
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_07_cost_is_affordable_while_every_touched_value_stays_non_negative() {
    let mut w = arena(
        r#"(
        effects: {
            "DoubleCost": (modifiers: [
                (attribute: "Mana", op: Add, magnitude: Scalable(coef: -20)),
                (attribute: "Stamina", op: Add, magnitude: Scalable(coef: -4)),
            ]),
            "TwoStep": (modifiers: [
                (attribute: "Mana", op: Add, magnitude: Scalable(coef: -5)),
                (attribute: "Mana", op: Add, magnitude: Scalable(coef: -6)),
            ]),
            "ManaBuff": (duration: Infinite,
                         modifiers: [(attribute: "Mana", op: Add, magnitude: Scalable(coef: 5))]),
        },
        abilities: {
            "Pricey": (cost: "DoubleCost", end_after: Frames(1)),
            "Steps": (cost: "TwoStep", end_after: Frames(1)),
            "Seven": (cost: "SbcCost", cost_set_by_caller: { "Data.Cost": -7 }, end_after: Frames(1)),
            "Fifteen": (cost: "SbcCost", cost_set_by_caller: { "Data.Cost": -15 }, end_after: Frames(1)),
            "Sixteen": (cost: "SbcCost", cost_set_by_caller: { "Data.Cost": -16 }, end_after: Frames(1)),
        },
    )"#,
    );
    let (mana, stamina) = (attr(&w, "Mana"), attr(&w, "Stamina"));
    let hero = actor(&mut w);
    let hs: Vec<AbilityHandle> = ["Pricey", "Steps", "Seven", "Fifteen", "Sixteen"]
        .iter()
        .map(|n| grant(&mut w, hero, n))
        .collect();
    let (pricey, steps, seven, fifteen, sixteen) = (hs[0], hs[1], hs[2], hs[3], hs[4]);
    let values =
        |w: &World<PadProbeGame>| (w.attr(hero, mana).unwrap(), w.attr(hero, stamina).unwrap());
    w.step(&[]);
    // Two attributes: Mana 50 → 30 → 10; Stamina 10 → 6 → 2; then Stamina would go negative.
    assert_eq!(w.try_activate(pricey), ok(1));
    w.end_ability(pricey);
    assert_eq!(values(&w), (int(30), int(6)));
    assert_eq!(w.try_activate(pricey), ok(2));
    w.end_ability(pricey);
    assert_eq!(values(&w), (int(10), int(2)));
    w.set_base(hero, mana, int(100));
    assert_eq!(w.try_activate(pricey), Err(ActivationFailure::CantAffordCost));
    assert_eq!(values(&w), (int(100), int(2)), "nothing is paid on failure");
    // Both to exactly 0 is affordable.
    w.set_base(hero, mana, int(20));
    w.set_base(hero, stamina, int(4));
    assert_eq!(w.try_activate(pricey), ok(3));
    w.end_ability(pricey);
    assert_eq!(values(&w), (int(0), int(0)));
    // Two modifiers on one attribute add up (11).
    w.set_base(hero, mana, int(10));
    assert_eq!(w.try_activate(steps), Err(ActivationFailure::CantAffordCost));
    w.set_base(hero, mana, int(11));
    assert_eq!(w.try_activate(steps), ok(1));
    assert_eq!(values(&w).0, int(0));
    // SetByCaller cost values come from the ability definition.
    w.set_base(hero, mana, int(50));
    assert_eq!(w.try_activate(seven), ok(1));
    assert_eq!(values(&w).0, int(43));
    // The resulting *current* value counts: base 10 + buff 5 pays 15 but not 16.
    w.set_base(hero, mana, int(10));
    apply(&mut w, "ManaBuff", hero, hero);
    assert_eq!(values(&w).0, int(15));
    assert_eq!(w.can_activate(sixteen, None), Err(ActivationFailure::CantAffordCost));
    assert_eq!(w.try_activate(fifteen), ok(1));
    assert_eq!(w.attr_value(hero, mana).map(|v| (v.base, v.current)), Some((int(-5), int(0))));
}

// ---------------------------------------------------------------------------------------------
// F-GA-08 Cooldowns
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_08_per_ability_and_shared_cooldown_effects() {
    let mut w = arena(
        r#"(abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], cooldown: "FireCooldown", end_after: Frames(1)),
            "Ice": (tags: ["Ability.Skill.Ice"], cooldown: "SharedCooldown",
                    cooldown_duration: Frames(60), cooldown_tags: ["Cooldown.Ice"], end_after: Frames(1)),
            "Spark": (tags: ["Ability.Skill.Spark"], cooldown: "SharedCooldown",
                      cooldown_duration: Seconds(0.5), cooldown_tags: ["Cooldown.Spark"],
                      end_after: Frames(1)),
        })"#,
    );
    let (cd_fire, cd_ice, cd_spark) =
        (tag(&w, "Cooldown.Fire"), tag(&w, "Cooldown.Ice"), tag(&w, "Cooldown.Spark"));
    let shared = eff(&w, "SharedCooldown");
    let hero = actor(&mut w);
    let fire = grant(&mut w, hero, "Fire");
    let ice = grant(&mut w, hero, "Ice");
    let spark = grant(&mut w, hero, "Spark");
    let mut results = Vec::new();
    for f in 0..=70u32 {
        frame(&mut w, |w| {
            if [0, 5, 29, 30].contains(&f) {
                results.push(("fire", f, w.try_activate(fire)));
            }
            if [0, 1, 59, 60].contains(&f) {
                results.push(("ice", f, w.try_activate(ice)));
            }
            if [1, 2, 30, 31].contains(&f) {
                results.push(("spark", f, w.try_activate(spark)));
            }
        });
        match f {
            1 => {
                assert!(w.has_tag(hero, cd_ice) && w.has_tag(hero, cd_spark));
                assert_eq!(w.cooldown_remaining(hero, &set(&[cd_ice])), Some((59, 60)));
                assert_eq!(w.cooldown_remaining(hero, &set(&[cd_spark])), Some((30, 30)));
                assert_eq!(w.ability_cooldown_remaining(ice), Some((59, 60)));
                assert_eq!(w.ability_cooldown_remaining(spark), Some((30, 30)));
                assert_eq!(w.ability_cooldown_remaining(fire), Some((29, 30)));
                let durations: Vec<u32> = w
                    .effects(hero)
                    .iter()
                    .filter(|e| e.def == shared)
                    .map(|e| e.duration)
                    .collect();
                assert_eq!(durations, vec![60, 30], "one shared effect, two durations");
            }
            30 => assert_eq!(w.ability_cooldown_remaining(spark), Some((1, 30))),
            31 => assert_eq!(w.ability_cooldown_remaining(spark), Some((30, 30))),
            _ => {}
        }
    }
    use ActivationFailure::OnCooldown;
    assert_eq!(
        results,
        vec![
            ("fire", 0, ok(1)),
            ("ice", 0, ok(1)),
            ("ice", 1, Err(OnCooldown)),
            ("spark", 1, ok(1)),
            ("spark", 2, Err(OnCooldown)),
            ("fire", 5, Err(OnCooldown)),
            ("fire", 29, Err(OnCooldown)),
            ("fire", 30, ok(2)),
            ("spark", 30, Err(OnCooldown)),
            ("spark", 31, ok(2)),
            ("ice", 59, Err(OnCooldown)),
            ("ice", 60, ok(2)),
        ]
    );
    // Frame 70: Fire's second cooldown (30..60) is over; Ice's (60..120) runs.
    assert!(!w.has_tag(hero, cd_fire));
    assert_eq!(w.ability_cooldown_remaining(fire), None);
    assert_eq!(w.ability_cooldown_remaining(ice), Some((50, 60)));
}

// ---------------------------------------------------------------------------------------------
// F-GA-09 Cooldown remaining / listening
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_09_longest_remaining_cooldown_wins_and_tags_signal_begin_and_end() {
    let mut w = arena(
        r#"(effects: {
            "LongFire": (duration: Frames(50), granted_tags: ["Cooldown.Fire"]),
            "ShortFire": (duration: Frames(30), granted_tags: ["Cooldown.Fire"]),
        })"#,
    );
    let cd_fire = tag(&w, "Cooldown.Fire");
    let parent = tag(&w, "Cooldown");
    let hero = actor(&mut w);
    let fire = set(&[cd_fire]);
    let mut pairs = Vec::new();
    for f in 0..=60u32 {
        let out = frame(&mut w, |w| {
            if f == 0 {
                apply(w, "LongFire", hero, hero);
            }
            if f == 25 {
                apply(w, "ShortFire", hero, hero);
            }
        });
        pairs.extend(
            out.tag_events
                .iter()
                .filter(|e| e.tag == cd_fire && e.is_new_or_removed())
                .map(|e| (e.frame, e.new > 0)),
        );
        match f {
            0 => assert_eq!(w.cooldown_remaining(hero, &fire), Some((50, 50))),
            10 => assert_eq!(w.cooldown_remaining(hero, &fire), Some((40, 50))),
            // Long has 20 left, Short 25: the longest remaining wins, not the longest duration.
            30 => assert_eq!(w.cooldown_remaining(hero, &fire), Some((25, 30))),
            49 => assert_eq!(w.cooldown_remaining(hero, &fire), Some((6, 30))),
            54 => assert_eq!(w.cooldown_remaining(hero, &fire), Some((1, 30))),
            55 => assert_eq!(w.cooldown_remaining(hero, &fire), None),
            _ => {}
        }
        if f == 30 {
            assert_eq!(w.cooldown_remaining(hero, &set(&[parent])), Some((25, 30)), "hierarchical");
            assert_eq!(w.cooldown_remaining(hero, &set(&[tag(&w, "Cooldown.Ice")])), None);
        }
    }
    assert_eq!(pairs, vec![(0, true), (55, false)], "one begin and one end signal");
}
