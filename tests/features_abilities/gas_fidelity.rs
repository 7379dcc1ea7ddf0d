//! GAS fidelity: commits that cannot fail silently, SetByCaller cooldown durations, finite
//! cooldown timers, default inputs of set and effect grants, grant and removal hooks.

use super::*;

// ---------------------------------------------------------------------------------------------
// GAS fidelity: commits that cannot fail silently, SetByCaller cooldown durations,
// finite cooldown timers, default inputs of set and effect grants, grant and removal hooks
// ---------------------------------------------------------------------------------------------

/// The 1-based line and column (in chars) of the first occurrence of `needle` in `text`.
fn pos_in(text: &str, needle: &str) -> (u32, u32) {
    let byte = text.find(needle).unwrap_or_else(|| panic!("{needle:?} not in the text"));
    let before = &text[..byte];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line as u32, col as u32)
}

/// Freezes `BASE` plus `text` (as `test.ron`) and checks the located error it gives.
#[track_caller]
fn refused(text: &str, kind: ContentErrorKind, at: &str, path: &str, message: &str) {
    let e = ContentBuilder::new()
        .file("base.ron", BASE)
        .file("test.ron", text)
        .build()
        .expect_err(text);
    assert_eq!(e.kind, kind, "kind of: {e}");
    assert_eq!(e.file, "test.ron", "file of: {e}");
    assert_eq!((e.line, e.col), pos_in(text, at), "line:col of: {e}");
    assert_eq!(e.path, path, "path of: {e}");
    assert!(e.message.contains(message), "message of: {e}\n  should contain: {message}");
}

const SBC_COOLDOWN: &str = r#"(
    tags: ["Data.Cooldown", "Cooldown.Bolt", "Cooldown.Nova"],
    effects: {
        // One shared cooldown whose duration is the caller's: GAS's SetByCaller cooldown recipe.
        // Its modifier shows the SetByCaller value the commit set.
        "SbcCooldown": (duration: SetByCaller("Data.Cooldown"),
                        modifiers: [(attribute: "Focus", op: Add,
                                     magnitude: SetByCaller("Data.Cooldown"))]),
    },
    abilities: {
        "Bolt": (tags: ["Ability.Skill.Fire"], cooldown: "SbcCooldown", cooldown_duration: Frames(40),
                 cooldown_tags: ["Cooldown.Bolt"], end_after: Frames(1)),
        "Nova": (tags: ["Ability.Skill.Ice"], cooldown: "SbcCooldown",
                 cooldown_set_by_caller: { "Data.Cooldown": 25 },
                 cooldown_tags: ["Cooldown.Nova"], end_after: Frames(1)),
    },
)"#;

/// F-GA-08: a shared cooldown effect with a `SetByCaller("Data.Cooldown")` duration is applied
/// on commit, its duration and key taken from `cooldown_duration` or `cooldown_set_by_caller`
/// (it used to fail with `MissingSetByCaller`, silently, and the ability re-activated at once).
#[test]
fn f_ga_08_a_set_by_caller_cooldown_duration_is_applied_on_commit() {
    let mut w = arena(SBC_COOLDOWN);
    let focus = attr(&w, "Focus");
    let hero = actor(&mut w);
    let bolt = grant(&mut w, hero, "Bolt");
    let nova = grant(&mut w, hero, "Nova");
    let mut results = Vec::new();
    let mut apply_failures = 0;
    for f in 0..=45u32 {
        let out = frame(&mut w, |w| {
            if [0, 1, 39, 40].contains(&f) {
                results.push(("bolt", f, w.try_activate(bolt)));
            }
            if [0, 24, 25].contains(&f) {
                results.push(("nova", f, w.try_activate(nova)));
            }
        });
        apply_failures += out
            .effect_events
            .iter()
            .filter(|e| matches!(e, rollback_abilities::EffectEvent::ApplyFailed { .. }))
            .count();
        match f {
            0 => {
                assert_eq!(w.ability_cooldown_remaining(bolt), Some((40, 40)));
                assert_eq!(w.ability_cooldown_remaining(nova), Some((25, 25)));
                // `cooldown_duration` also set the key: 40 + 25 while both run.
                assert_eq!(w.attr(hero, focus), Some(int(65)));
            }
            10 => assert_eq!(w.ability_cooldown_remaining(bolt), Some((30, 40))),
            30 => assert_eq!(w.attr(hero, focus), Some(int(65)), "Nova's second cooldown"),
            _ => {}
        }
    }
    use ActivationFailure::OnCooldown;
    assert_eq!(
        results,
        vec![
            ("bolt", 0, ok(1)),
            ("nova", 0, ok(1)),
            ("bolt", 1, Err(OnCooldown)),
            ("nova", 24, Err(OnCooldown)),
            ("nova", 25, ok(2)),
            ("bolt", 39, Err(OnCooldown)),
            ("bolt", 40, ok(2)),
        ]
    );
    assert_eq!(apply_failures, 0, "no application failed");
}

/// F-GA-08, F-GA-06: content whose commit could never apply its cost or cooldown is refused
/// with a located error: a SetByCaller duration nobody gives, a key given twice, a duration
/// below one frame, a cost or cooldown SetByCaller value the ability does not give.
#[test]
fn f_ga_08_costs_and_cooldowns_missing_set_by_caller_values_are_refused() {
    let tags = r#"tags: ["Data.Cooldown", "Data.Power"],"#;
    let cd = r#""SbcCooldown": (duration: SetByCaller("Data.Cooldown"), granted_tags: ["Cooldown.Ice"]),
        "PowerCooldown": (duration: Frames(30), granted_tags: ["Cooldown.Ice"],
                          modifiers: [(attribute: "Focus", op: Add, magnitude: SetByCaller("Data.Power"))]),"#;
    let text = |ability: &str| {
        format!(
            "(\n    {tags}\n    effects: {{\n        {cd}\n    }},\n    abilities: {{\n        \"X\": ({ability}),\n    }},\n)"
        )
    };
    let t = text(r#"cooldown: "SbcCooldown""#);
    refused(
        &t,
        ContentErrorKind::InvalidCombination,
        "cooldown:",
        "abilities.X.cooldown",
        r#"the cooldown effect "SbcCooldown" takes its duration from SetByCaller("Data.Cooldown"): give the ability `cooldown_duration: Frames(n)`"#,
    );
    let t = text(
        r#"cooldown: "SbcCooldown", cooldown_duration: Frames(5), cooldown_set_by_caller: { "Data.Cooldown": 5 }"#,
    );
    refused(
        &t,
        ContentErrorKind::InvalidCombination,
        r#""Data.Cooldown": 5"#,
        "abilities.X.cooldown_set_by_caller.Data.Cooldown",
        "the cooldown's duration is given twice",
    );
    let t = text(r#"cooldown: "SbcCooldown", cooldown_set_by_caller: { "Data.Cooldown": 0.5 }"#);
    refused(
        &t,
        ContentErrorKind::InvalidValue,
        r#""Data.Cooldown": 0.5"#,
        "abilities.X.cooldown_set_by_caller.Data.Cooldown",
        "must be at least 1",
    );
    let t = text(r#"cooldown: "PowerCooldown""#);
    refused(
        &t,
        ContentErrorKind::InvalidCombination,
        "cooldown:",
        "abilities.X.cooldown",
        r#"needs the SetByCaller value "Data.Power": give it in `cooldown_set_by_caller"#,
    );
    let t = text(r#"cost: "SbcCost""#);
    refused(
        &t,
        ContentErrorKind::InvalidCombination,
        "cost:",
        "abilities.X.cost",
        r#"the cost effect "SbcCost" needs the SetByCaller value "Data.Cost": give it in `cost_set_by_caller"#,
    );
    let t = text(r#"cooldown_set_by_caller: { "Data.Power": 1 }"#);
    refused(
        &t,
        ContentErrorKind::InvalidCombination,
        r#""X": ("#,
        "abilities.X.cooldown",
        "need a `cooldown` effect",
    );
    // With a SetByCaller duration, `cooldown_duration` sets one more value beside those given:
    // 32 given would make a 33rd, more than any world holds in one spec
    // (`WorldConfig::set_by_caller_per_spec` is at most 32).
    let keys: Vec<String> = (0..32).map(|i| format!("Data.N{i}")).collect();
    let list = |f: &dyn Fn(&String) -> String| keys.iter().map(f).collect::<Vec<_>>().join(", ");
    let t = text(&format!(
        r#"cooldown: "SbcCooldown", cooldown_duration: Frames(5),
           cooldown_set_by_caller: {{ {} }}"#,
        list(&|k| format!("{k:?}: 1"))
    ))
    .replace(
        tags,
        &format!(r#"tags: ["Data.Cooldown", "Data.Power", {}],"#, list(&|k| format!("{k:?}"))),
    );
    refused(
        &t,
        ContentErrorKind::Capacity,
        "cooldown_set_by_caller",
        "abilities.X.cooldown_set_by_caller",
        "at most 31 values besides the duration `cooldown_duration` sets",
    );
    // Given, they load: four values beside the duration's (a fifth value in all, which the
    // commit's spec names in the definition; it used to be refused).
    for ok_text in [
        text(
            r#"cooldown: "SbcCooldown", cooldown_duration: Frames(5),
               cooldown_set_by_caller: { "Data.Power": 1, "Data.A": 1, "Data.B": 1, "Data.C": 1 }"#,
        )
        .replace(tags, r#"tags: ["Data.Cooldown", "Data.Power", "Data.A", "Data.B", "Data.C"],"#),
        text(r#"cooldown: "SbcCooldown", cooldown_duration: Frames(5)"#),
        text(r#"cooldown: "SbcCooldown", cooldown_set_by_caller: { "Data.Cooldown": 5 }"#),
        text(r#"cooldown: "PowerCooldown", cooldown_set_by_caller: { "Data.Power": 2 }"#),
        text(r#"cost: "SbcCost", cost_set_by_caller: { "Data.Cost": -1 }"#),
    ] {
        ContentBuilder::new()
            .file("base.ron", BASE)
            .file("test.ron", ok_text.as_str())
            .build()
            .unwrap_or_else(|e| panic!("{ok_text}: {e}"));
    }
}

const COMMIT_FAILURES: &str = r#"(
    effects: {
        // A shared cooldown that holds one stack and denies more.
        "OneCooldown": (duration: Frames(30),
                        stacking: (kind: ByTarget, limit: 1, deny_overflow: true)),
        "Sanctuary": (duration: Infinite, immunity_tags: ["Ability.Skill.Fire"]),
    },
    abilities: {
        "Ice": (tags: ["Ability.Skill.Ice"], cost: "ManaCost", cooldown: "OneCooldown",
                cooldown_tags: ["Cooldown.Ice"], end_after: Frames(1)),
        "Spark": (tags: ["Ability.Skill.Spark"], cost: "ManaCost", cooldown: "OneCooldown",
                  cooldown_tags: ["Cooldown.Spark"], end_after: Frames(1), behaviour: "Script"),
        "Fire": (tags: ["Ability.Skill.Fire"], cost: "ManaCost", cooldown: "FireCooldown",
                 end_after: Frames(1), behaviour: "Script"),
        "Late": (tags: ["Ability.Skill.Gauntlet"], commit_on_activate: false, cost: "ManaCost",
                 cooldown: "OneCooldown", cooldown_tags: ["Cooldown.Gauntlet"], behaviour: "Script"),
    },
)"#;

/// F-GA-06: a commit whose cost or cooldown effect cannot be applied (a full stack that denies
/// overflow, an immunity, a full effect column) fails the activation with
/// `CommitFailed { part, error }` — in the result, the frame's ability events and the activation
/// log — pays nothing and starts nothing. A later commit from the behaviour fails the same way
/// and cancels the ability. (All of these used to succeed with the application silently lost.)
#[test]
fn f_ga_06_a_commit_that_cannot_apply_fails_the_activation_with_a_typed_reason() {
    use rollback_abilities::CommitPart;
    let mut w = arena(COMMIT_FAILURES);
    let mana = attr(&w, "Mana");
    let hero = actor(&mut w);
    let [ice, spark, fire, late] = ["Ice", "Spark", "Fire", "Late"].map(|n| grant(&mut w, hero, n));
    frame(&mut w, |w| assert_eq!(w.try_activate(ice), ok(1)));
    assert_eq!(w.attr(hero, mana), Some(int(40)));
    // Spark's cooldown would be a second stack of OneCooldown: denied.
    let overflow = ActivationFailure::CommitFailed {
        part: CommitPart::Cooldown,
        error: ApplyError::StackOverflowDenied,
    };
    let out = frame(&mut w, |w| assert_eq!(w.try_activate(spark), Err(overflow)));
    assert_eq!(failed(&out), vec![(spark, overflow)]);
    assert!(!activated(&out).iter().any(|a| a.0 == spark), "it never started");
    assert!(!ended(&out).iter().any(|e| e.0 == spark));
    assert_eq!(w.last_activation(spark).map(|r| (r.frame, r.result)), Some((1, Err(overflow))));
    assert_eq!(w.attr(hero, mana), Some(int(40)), "no cost paid");
    assert!(!w.is_ability_active(spark) && !w.has_tag(hero, tag(&w, "Cooldown.Spark")));
    assert!(activations_of(spark).is_empty() && ends_of(spark).is_empty(), "no behaviour ran");
    assert!(overflow.to_string().contains("committing the cooldown failed"), "{overflow}");
    // Immune to the cost (the spec carries Fire's ability tags).
    let sanctuary = handle(apply(&mut w, "Sanctuary", hero, hero));
    let immune = ActivationFailure::CommitFailed {
        part: CommitPart::Cost,
        error: ApplyError::Immune { blocker: sanctuary },
    };
    let out = frame(&mut w, |w| assert_eq!(w.try_activate(fire), Err(immune)));
    assert_eq!(failed(&out), vec![(fire, immune)]);
    assert_eq!(w.attr(hero, mana), Some(int(40)));
    assert!(!w.has_tag(hero, tag(&w, "Cooldown.Fire")), "no cooldown without the cost");
    w.remove_effect(sanctuary);
    frame(&mut w, |w| assert_eq!(w.try_activate(fire), ok(1)));
    assert_eq!(w.attr(hero, mana), Some(int(30)));
    // A commit from the behaviour: the activation succeeded, the commit fails, the ability is
    // cancelled, and the failure is reported like a failed activation.
    plan(ab(&w, "Late"), &[Act::Commit]);
    let out = frame(&mut w, |w| assert_eq!(w.try_activate(late), ok(1)));
    assert!(log().contains(&Rec::Commit { frame: 4, h: late, ok: false }));
    assert_eq!(activated(&out), vec![(late, 1, None)]);
    assert_eq!(ended(&out).last(), Some(&(late, true)), "cancelled");
    assert_eq!(failed(&out), vec![(late, overflow)]);
    assert_eq!(w.last_activation(late).map(|r| r.result), Some(Err(overflow)));
    assert_eq!(w.attr(hero, mana), Some(int(30)), "nothing of a failed commit is paid");
    assert!(!w.has_tag(hero, tag(&w, "Cooldown.Gauntlet")));

    // A full effect column: the cooldown has no room.
    let mut w =
        build(COMMIT_FAILURES, WorldConfig { effects_per_entity: 1, ..WorldConfig::default() });
    let hero = actor(&mut w);
    let ice = grant(&mut w, hero, "Ice");
    apply(&mut w, "Buff", hero, hero);
    let full =
        ActivationFailure::CommitFailed { part: CommitPart::Cooldown, error: ApplyError::Capacity };
    let out = frame(&mut w, |w| assert_eq!(w.try_activate(ice), Err(full)));
    assert_eq!(failed(&out), vec![(ice, full)]);
    assert_eq!(w.attr(hero, attr(&w, "Mana")), Some(int(50)));
}

/// F-GA-06: `can_activate` answers what activating would: for a `commit_on_activate` ability
/// whose cost or cooldown could not be applied it reports the same `CommitFailed` (it used to
/// say `Ok` and the activation then failed), without changing anything. An ability that
/// commits later, from its behaviour, is only checked for cooldown tags and cost (GAS's
/// `CanActivateAbility`).
#[test]
fn f_ga_06_can_activate_reports_the_commit_failure_activation_would_give() {
    use rollback_abilities::CommitPart;
    let mut w = arena(COMMIT_FAILURES);
    let hero = actor(&mut w);
    let [ice, spark, fire, late] = ["Ice", "Spark", "Fire", "Late"].map(|n| grant(&mut w, hero, n));
    assert_eq!(w.can_activate(spark, None), Ok(()));
    frame(&mut w, |w| assert_eq!(w.try_activate(ice), ok(1)));
    let overflow = ActivationFailure::CommitFailed {
        part: CommitPart::Cooldown,
        error: ApplyError::StackOverflowDenied,
    };
    let before = w.checksum();
    assert_eq!(w.can_activate(spark, None), Err(overflow));
    assert_eq!(w.checksum(), before, "a question changes nothing");
    frame(&mut w, |w| assert_eq!(w.try_activate(spark), Err(overflow)));
    // Asking for the activatable abilities leaves it out.
    let sparks = TagSet::of(&[tag(&w, "Ability.Skill.Spark")]);
    assert_eq!(w.specs_matching(hero, &sparks, false), vec![spark]);
    assert!(w.specs_matching(hero, &sparks, true).is_empty());
    // The cost part, with the immunity as the reason.
    let sanctuary = handle(apply(&mut w, "Sanctuary", hero, hero));
    let immune = ActivationFailure::CommitFailed {
        part: CommitPart::Cost,
        error: ApplyError::Immune { blocker: sanctuary },
    };
    assert_eq!(w.can_activate(fire, None), Err(immune));
    frame(&mut w, |w| assert_eq!(w.try_activate(fire), Err(immune)));
    w.remove_effect(sanctuary);
    assert_eq!(w.can_activate(fire, None), Ok(()));
    // Committing from the behaviour: activation itself would succeed.
    assert_eq!(w.can_activate(late, None), Ok(()));
    // A full effect column.
    let mut w =
        build(COMMIT_FAILURES, WorldConfig { effects_per_entity: 1, ..WorldConfig::default() });
    let hero = actor(&mut w);
    let ice = grant(&mut w, hero, "Ice");
    apply(&mut w, "Buff", hero, hero);
    let full =
        ActivationFailure::CommitFailed { part: CommitPart::Cooldown, error: ApplyError::Capacity };
    assert_eq!(w.can_activate(ice, None), Err(full));
}

/// F-GA-09 with F-GE-04's rule: a duration too long to end at an exact frame is refused with a
/// located error pointing to `Infinite` (`cooldown_duration: Frames(u32::MAX)` used to load,
/// never end, and report `Ready`); the longest accepted cooldown is reported exactly, and an
/// infinite cooldown reports `(NEVER, NEVER)` instead of nothing.
#[test]
fn f_ga_09_cooldown_timers_are_finite_and_exact_to_the_frame() {
    let shared = r#"cooldown: "SharedCooldown", cooldown_tags: ["Cooldown.Ice"], "#;
    for (text, at, path) in [
        (
            format!(r#"(abilities: {{ "X": ({shared}cooldown_duration: Frames(4294967295)) }})"#),
            "cooldown_duration",
            "abilities.X.cooldown_duration",
        ),
        (
            format!(r#"(abilities: {{ "X": ({shared}cooldown_duration: Frames(4294967294)) }})"#),
            "cooldown_duration",
            "abilities.X.cooldown_duration",
        ),
        (
            format!(r#"(abilities: {{ "X": ({shared}cooldown_duration: Frames(2147483648)) }})"#),
            "cooldown_duration",
            "abilities.X.cooldown_duration",
        ),
        (
            format!(r#"(abilities: {{ "X": ({shared}cooldown_duration: Seconds(40000000)) }})"#),
            "40000000",
            "abilities.X.cooldown_duration[0]",
        ),
    ] {
        refused(
            &text,
            ContentErrorKind::InvalidValue,
            at,
            path,
            "give the cooldown effect `duration: Infinite`",
        );
        refused(&text, ContentErrorKind::InvalidValue, at, path, "at most 2147483647 frames");
    }
    refused(
        r#"(effects: { "Long": (duration: Frames(3000000000)) })"#,
        ContentErrorKind::InvalidValue,
        "duration",
        "effects.Long.duration",
        "use Infinite",
    );
    refused(
        r#"(abilities: { "X": (end_after: Frames(2147483648)) })"#,
        ContentErrorKind::InvalidValue,
        "end_after",
        "abilities.X.end_after",
        "leave out `end_after`",
    );

    const MAX: u32 = rollback_abilities::num::MAX_FINITE_FRAMES;
    let mut w = arena(
        r#"(
        effects: { "Endless": (duration: Infinite, granted_tags: ["Cooldown.Spark"]) },
        abilities: {
            "Longest": (cooldown: "SharedCooldown", cooldown_duration: Frames(2147483647),
                        cooldown_tags: ["Cooldown.Ice"], end_after: Frames(1)),
            "Forever": (cooldown: "Endless", end_after: Frames(1)),
        },
    )"#,
    );
    let hero = actor(&mut w);
    let longest = grant(&mut w, hero, "Longest");
    let forever = grant(&mut w, hero, "Forever");
    run_through(&mut w, 4);
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(longest), ok(1));
        assert_eq!(w.try_activate(forever), ok(1));
    });
    let cd = out
        .ability_events
        .iter()
        .find_map(|e| match e {
            AbilityEvent::Committed { handle, cooldown } if *handle == longest => *cooldown,
            _ => None,
        })
        .expect("Longest's cooldown");
    assert_eq!(w.effect_timer(cd).map(|t| t.expires_at), Some(5 + MAX));
    assert_eq!(w.ability_cooldown_remaining(longest), Some((MAX, MAX)));
    assert_eq!(w.ability_cooldown_remaining(forever), Some((u32::MAX, u32::MAX)));
    run_through(&mut w, 1004);
    assert_eq!(w.ability_cooldown_remaining(longest), Some((MAX - 999, MAX)));
    assert_eq!(w.effect_remaining(cd), Some((MAX - 999, MAX)));
    assert_eq!(w.can_activate(longest, None), Err(ActivationFailure::OnCooldown));
    assert_eq!(w.ability_cooldown_remaining(forever), Some((u32::MAX, u32::MAX)), "never Ready");
    assert_eq!(w.can_activate(forever, None), Err(ActivationFailure::OnCooldown));
}

/// F-GA-16, F-GE-21 (guide §3.8): a grant of an ability set or of an effect that names no
/// `input` binds the ability's own `input` (it used to bind none: the button did nothing).
#[test]
fn f_ga_16_set_and_effect_grants_bind_the_abilitys_own_input() {
    let mut w = arena(
        r#"(
        effects: {
            "GrantGuard": (duration: Frames(10), granted_abilities: [(ability: "Guard")]),
            "GrantGuardOn4": (duration: Frames(10), granted_abilities: [(ability: "Guard", input: 4)]),
        },
        abilities: { "Guard": (tags: ["Ability.Guard"], input: 3, behaviour: "Script") },
        ability_sets: { "Kit": [(ability: "Guard"), (ability: "Guard", input: 5)] },
    )"#,
    );
    let hero = actor(&mut w);
    w.bind_player(0, hero);
    let kit = w.content().ability_set("Kit").unwrap();
    let hs = w.grant_ability_set(hero, kit);
    let inputs = |w: &World<PadProbeGame>| -> Vec<Option<u8>> {
        w.abilities(hero).map(|(_, s)| s.input_id()).collect()
    };
    assert_eq!(inputs(&w), vec![Some(3), Some(5)]);
    // Input 3 activates the first grant of the set.
    let out = frame_in(&mut w, &[pad(1 << 3)], |_| {});
    assert_eq!(activated(&out), vec![(hs[0], 1, None)]);
    frame_in(&mut w, &[pad(0)], |w| {
        for h in &hs {
            w.remove_ability(*h);
        }
    });
    frame(&mut w, |w| {
        apply(w, "GrantGuard", hero, hero);
        apply(w, "GrantGuardOn4", hero, hero);
    });
    assert_eq!(inputs(&w), vec![Some(3), Some(4)]);
    let granted: Vec<AbilityHandle> = w.abilities(hero).map(|(h, _)| h).collect();
    let out = frame_in(&mut w, &[pad(1 << 3)], |_| {});
    assert_eq!(activated(&out), vec![(granted[0], 1, None)]);
}

const LIFECYCLE: &str = r#"(
    effects: {
        "Gift": (duration: Frames(10), granted_abilities: [(ability: "Blessed")]),
        "Loan": (duration: Frames(6),
                 granted_abilities: [(ability: "Blessed", removal: RemoveOnEnd)]),
        "Keep": (duration: Frames(4),
                 granted_abilities: [(ability: "Blessed", removal: DoNothing)]),
    },
    abilities: {
        "Blessed": (tags: ["Ability.Passive"], instancing: PerActor, state_size: 4,
                    behaviour: "Lifecycle"),
    },
    ability_sets: { "Kit": [(ability: "Blessed", level: 2)] },
)"#;

/// The ability `hero` got from an active or expired effect named `effect` (or directly: "").
fn blessed(w: &World<PadProbeGame>, hero: Entity, level: u16, from: &str) -> Option<AbilityHandle> {
    w.abilities(hero)
        .filter(|(_, s)| s.level == level)
        .find(|(h, _)| match w.granting_effect(*h).and_then(|e| w.effect(e)) {
            Some(ef) => w.content().effect_defs()[ef.def.index()].name == from,
            None => from.is_empty(),
        })
        .map(|(h, _)| h)
}

/// One frame of the lifecycle script: grants by code (0), by an ability set (1) and by effects
/// (2, 4, 6), a removal by code (3) and at an effect's end (Gift at 12; Loan's `RemoveOnEnd`
/// ability, activated at 5, when it ends at 14), a kept grant (Keep's `DoNothing`), and a removal
/// of the set's grant (15).
fn lifecycle_frame(w: &mut World<PadProbeGame>, f: u32, hero: Entity) -> FrameOutput {
    frame(w, |w| match f {
        0 => {
            w.grant_ability(hero, ab(w, "Blessed"), 1).unwrap();
        }
        1 => {
            let kit = w.content().ability_set("Kit").unwrap();
            assert_eq!(w.grant_ability_set(hero, kit).len(), 1);
        }
        2 => drop(apply(w, "Gift", hero, hero)),
        3 => w.remove_ability(blessed(w, hero, 1, "").unwrap()),
        4 => drop(apply(w, "Loan", hero, hero)),
        5 => assert_eq!(w.try_activate(blessed(w, hero, 1, "Loan").unwrap()), ok(1)),
        6 => drop(apply(w, "Keep", hero, hero)),
        14 => {
            let loan = w.abilities(hero).find(|(_, s)| s.is_active()).unwrap().0;
            w.end_ability(loan);
        }
        15 => w.remove_ability(blessed(w, hero, 2, "").unwrap()),
        _ => {}
    })
}

/// The `Lifecycle` hook calls logged so far.
fn hook_log() -> Vec<Rec> {
    log().into_iter().filter(|r| matches!(r, Rec::Granted { .. } | Rec::Removed { .. })).collect()
}

/// Beyond GAS (its 4.25+ `OnGiveAbility` / `OnRemoveAbility`): a behaviour's `on_granted` and
/// `on_removed` run exactly once per grant and per removal — by code, by an ability set, by an
/// effect, by the granting effect's end (right away or when the ability ends) — with a context
/// that applies effects and reads and writes the state blob; a grant kept by `DoNothing` is
/// not removed.
#[test]
fn f_ga_02_on_granted_and_on_removed_run_once_per_grant_and_removal() {
    let mut w = arena(LIFECYCLE);
    let health = attr(&w, "Health");
    let hero = actor(&mut w);
    let mut outs = Vec::new();
    for f in 0..=16u32 {
        outs.push(lifecycle_frame(&mut w, f, hero));
    }
    let granted_event = |f: usize| -> Vec<AbilityHandle> {
        outs[f]
            .ability_events
            .iter()
            .filter_map(|e| match e {
                AbilityEvent::Granted { handle, .. } => Some(*handle),
                _ => None,
            })
            .collect()
    };
    let [a, b, c, d, e] = [0, 1, 2, 4, 6].map(|f| {
        let g = granted_event(f);
        assert_eq!(g.len(), 1, "frame {f}");
        g[0]
    });
    let removed = |frame, h| Rec::Removed { frame, h, state: 7, active: false };
    assert_eq!(
        hook_log(),
        vec![
            Rec::Granted { frame: 0, h: a, level: 1 },
            Rec::Granted { frame: 1, h: b, level: 2 },
            Rec::Granted { frame: 2, h: c, level: 1 },
            removed(3, a),
            Rec::Granted { frame: 4, h: d, level: 1 },
            Rec::Granted { frame: 6, h: e, level: 1 },
            removed(12, c),
            removed(14, d),
            removed(15, b),
        ]
    );
    // Loan's ability was active when Loan ended (frame 10): removed after it ended (14).
    assert!(ends_of(d) == vec![(14, false)] && w.ability(d).is_none());
    assert!(w.ability(e).is_some() && w.granting_effect(e).is_none(), "kept by DoNothing");
    // Five grants healed 5 each, four removals dealt 20 each (queued applications, P6/P2).
    assert_eq!(w.attr(hero, health), Some(int(100 + 5 * 5 - 20 * 4)));
    assert_eq!(w.ability_state::<u32>(e), Some(7), "on_granted wrote the state blob");
}

/// The grant and removal hooks run inside the step: re-simulating from a snapshot runs them
/// again, identically, and every checksum matches the first run and a fresh world's.
#[test]
fn f_ga_02_grant_hooks_rerun_identically_after_a_snapshot_load() {
    let mut w = arena(LIFECYCLE);
    let hero = actor(&mut w);
    lifecycle_frame(&mut w, 0, hero);
    lifecycle_frame(&mut w, 1, hero);
    let snap = w.snapshot();
    LOG.with(|l| l.borrow_mut().clear());
    let mut first = Vec::new();
    for f in 2..=16u32 {
        let out = lifecycle_frame(&mut w, f, hero);
        first.push((w.checksums(), out.ability_events.clone()));
    }
    let hooks_first = hook_log();
    assert_eq!(hooks_first.len(), 7, "{hooks_first:?}");
    w.load(&snap).unwrap();
    LOG.with(|l| l.borrow_mut().clear());
    for f in 2..=16u32 {
        let out = lifecycle_frame(&mut w, f, hero);
        assert_eq!((w.checksums(), out.ability_events.clone()), first[f as usize - 2], "frame {f}");
    }
    assert_eq!(hook_log(), hooks_first, "each hook once per grant and removal, again");
    // A fresh world gets the same checksums.
    let mut fresh = arena(LIFECYCLE);
    let hero = actor(&mut fresh);
    for f in 0..=16u32 {
        lifecycle_frame(&mut fresh, f, hero);
        if f >= 2 {
            assert_eq!(fresh.checksums(), first[f as usize - 2].0, "fresh run, frame {f}");
        }
    }
}
