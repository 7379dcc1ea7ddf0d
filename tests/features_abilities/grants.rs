//! Ability definitions, specs and granting (F-GA-01 … F-GA-03), finding abilities (F-GA-14),
//! levels and ability sets (F-GA-15, F-GA-16), owner and avatar (F-GA-17), instancing (F-GA-19)
//! and passing data to an activation (F-GA-21).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-GA-01 Definition
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_01_definition_carries_every_container_and_flag() {
    let w = arena(
        r#"(
        timelines: { "Punch": (startup: 3, active: 2, recovery: 4) },
        abilities: {
            "Full": (
                tags: ["Ability.Skill.Fire"],
                cancel_abilities_with_tags: ["Ability.Movement"],
                block_abilities_with_tags: ["Ability.Guard"],
                activation_owned_tags: ["State.Casting"],
                activation_required_tags: ["State.Ready"],
                activation_blocked_tags: ["State.Stunned"],
                source_required_tags: ["Team.Red"],
                source_blocked_tags: ["Team.Blue"],
                target_required_tags: ["Targetable"],
                target_blocked_tags: ["State.Dead"],
                cost: "SbcCost", cost_set_by_caller: { "Data.Cost": -3 },
                cooldown: "SharedCooldown", cooldown_duration: Seconds(0.5),
                cooldown_tags: ["Cooldown.Ice"],
                instancing: PerActor,
                triggers: [Event("Event.Hit"), TagAdded("Trigger.Added"), TagPresent("Trigger.Present")],
                activate_on_input: false, input: 4, state_size: 16,
                behaviour: "Script", can_activate: "Gate",
                retrigger: true, commit_on_activate: false,
                timeline: "Punch", end_after: Frames(90),
            ),
            "Bare": (),
            "Regen": (passive: true),
        },
    )"#,
    );
    let c = w.content().clone();
    let t = |n: &str| c.tag(n).unwrap();
    let full = c.ability_def(ab(&w, "Full"));
    assert_eq!(full.name, "Full");
    assert_eq!(full.tags.explicit, set(&[t("Ability.Skill.Fire")]));
    assert!(full.tags.expanded.contains(t("Ability.Skill")), "ancestors are expanded");
    assert!(full.tags.expanded.contains(t("Ability")));
    assert_eq!(full.cancel_abilities_with_tags, set(&[t("Ability.Movement")]));
    assert_eq!(full.block_abilities_with_tags, set(&[t("Ability.Guard")]));
    assert_eq!(full.activation_owned_tags, set(&[t("State.Casting")]));
    assert_eq!(full.activation_required_tags, set(&[t("State.Ready")]));
    assert_eq!(full.activation_blocked_tags, set(&[t("State.Stunned")]));
    assert_eq!(full.source_required_tags, set(&[t("Team.Red")]));
    assert_eq!(full.source_blocked_tags, set(&[t("Team.Blue")]));
    assert_eq!(full.target_required_tags, set(&[t("Targetable")]));
    assert_eq!(full.target_blocked_tags, set(&[t("State.Dead")]));
    assert_eq!(full.cost, Some(eff(&w, "SbcCost")));
    assert_eq!(full.cost_set_by_caller, vec![(t("Data.Cost"), int(-3))]);
    assert_eq!(full.cooldown, Some(eff(&w, "SharedCooldown")));
    assert_eq!(full.cooldown_duration, Some(30), "0.5 s at 60 Hz");
    assert_eq!(full.cooldown_tags, vec![t("Cooldown.Ice")]);
    assert_eq!(full.all_cooldown_tags, set(&[t("Cooldown.Ice")]));
    assert_eq!(full.instancing, Instancing::PerActor);
    assert_eq!(
        full.triggers,
        vec![
            TriggerDef::Event(t("Event.Hit")),
            TriggerDef::TagAdded(t("Trigger.Added")),
            TriggerDef::TagPresent(t("Trigger.Present")),
        ]
    );
    assert!(!full.passive);
    assert!(!full.activate_on_input);
    assert_eq!(full.input, Some(4));
    assert_eq!(full.state_size, 16);
    assert_eq!(c.function(full.behaviour.unwrap()).unwrap().name, "Script");
    assert_eq!(c.function(full.can_activate.unwrap()).unwrap().name, "Gate");
    assert!(full.retrigger);
    assert!(!full.commit_on_activate);
    assert_eq!(full.timeline, Some(c.timeline("Punch").unwrap()));
    assert_eq!(full.end_after, Some(90));
    // Defaults.
    let bare = c.ability_def(ab(&w, "Bare"));
    assert!(bare.tags.explicit.is_empty());
    assert_eq!(bare.instancing, Instancing::PerExecution);
    assert!(bare.activate_on_input && bare.commit_on_activate);
    assert!(!bare.retrigger && !bare.passive);
    assert_eq!((bare.input, bare.state_size, bare.cost, bare.cooldown), (None, 0, None, None));
    assert_eq!((bare.behaviour, bare.timeline, bare.end_after), (None, None, None));
    assert!(bare.triggers.is_empty());
    assert!(c.ability_def(ab(&w, "Regen")).passive);
    assert_eq!(c.ability_name(ab(&w, "Regen")), "Regen");
}

#[test]
fn f_ga_01_contradictory_definitions_are_refused() {
    let cases = [
        r#"(abilities: { "X": (instancing: NonInstanced, state_size: 8) })"#,
        r#"(abilities: { "X": (passive: true, end_after: Frames(5)) })"#,
        r#"(abilities: { "X": (cost: "Burn") })"#,
        r#"(abilities: { "X": (cooldown: "Damage") })"#,
        r#"(abilities: { "X": (cooldown: "SharedCooldown") })"#,
        r#"(abilities: { "X": (cooldown_tags: ["Cooldown.Ice"]) })"#,
    ];
    for text in cases {
        let err = ContentBuilder::new()
            .file("base.ron", BASE)
            .file("test.ron", text)
            .build()
            .expect_err(text);
        assert_eq!(err.kind, ContentErrorKind::InvalidCombination, "{text}: {err}");
    }
}

// ---------------------------------------------------------------------------------------------
// F-GA-02 Spec and granting
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_02_grant_creates_specs_with_level_input_and_source_object() {
    let mut w = build(
        r#"(abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], input: 2, behaviour: "Script"),
            "Ice": (tags: ["Ability.Skill.Ice"], behaviour: "Script"),
        })"#,
        WorldConfig { abilities_per_entity: 3, ..WorldConfig::default() },
    );
    let (fire, ice) = (ab(&w, "Fire"), ab(&w, "Ice"));
    let hero = actor(&mut w);
    let item = w.spawn().unwrap();
    let out = frame(&mut w, |_| {});
    assert!(out.ability_events.is_empty());

    let mut handles = (AbilityHandle::NONE, AbilityHandle::NONE);
    let out = frame(&mut w, |w| {
        handles.0 = w.grant_ability(hero, fire, 2).unwrap();
        handles.1 = w.grant_ability_with(hero, ice, 0, Some(7), item).unwrap();
    });
    let (h1, h2) = handles;
    assert_eq!(
        out.ability_events,
        vec![
            AbilityEvent::Granted { handle: h1, def: fire },
            AbilityEvent::Granted { handle: h2, def: ice }
        ]
    );
    assert_eq!((h1.owner, h1.slot, h2.owner, h2.slot), (hero, 0, hero, 1));
    let s1 = *w.ability(h1).unwrap();
    assert_eq!((s1.def, s1.level, s1.input_id()), (fire, 2, Some(2)), "default input of the def");
    assert!(s1.is_granted() && !s1.is_active() && !s1.input_held());
    assert_eq!((s1.activation_serial, s1.granted_by, s1.source_object), (0, 0, Entity::NONE));
    let s2 = *w.ability(h2).unwrap();
    assert_eq!((s2.def, s2.level, s2.input_id(), s2.source_object), (ice, 1, Some(7), item));
    // Specs made by the ability carry its handle, serial, level and source object.
    let dmg = eff(&w, "Damage");
    let spec = w.make_ability_spec(h2, dmg);
    assert_eq!((spec.level, spec.context.ability, spec.context.source_object), (1, h2, item));
    assert_eq!((spec.context.instigator, spec.context.causer), (hero, hero));
    // Dynamic ability tags (two by default) join the ability's tags and its specs' source
    // tags.
    let red = tag(&w, "Team.Red");
    assert!(!w.ability_tags(h1).contains(red));
    w.set_ability_dynamic_tags(h1, &[red]).unwrap();
    assert!(w.ability_tags(h1).contains(red));
    assert!(w.ability_tags(h1).contains(tag(&w, "Ability.Skill")));
    assert_eq!(w.ability(h1).unwrap().dynamic_tags, [red.0, u16::MAX]);
    let spec = w.make_ability_spec(h1, dmg);
    assert!(
        spec.source_tags.contains(red) && spec.source_tags.contains(tag(&w, "Ability.Skill.Fire"))
    );
    assert_eq!(w.specs_matching(hero, &set(&[tag(&w, "Team")]), false), vec![h1]);
    // One slot left; then the owner is full. Entities without an ability system get nothing.
    let h3 = w.grant_ability(hero, ice, 5).unwrap();
    assert_eq!(h3.slot, 2);
    let full = CapacityExceeded { capacity: Capacity::AbilitiesPerEntity, needed: 4, limit: 3 };
    assert_eq!(w.grant_ability(hero, ice, 1), Err(GrantError::OverCapacity(full)));
    assert_eq!(w.grant_ability(item, fire, 1), Err(GrantError::NotAnActor(item)));
    let listed: Vec<(AbilityHandle, AbilityDefId, u16)> =
        w.abilities(hero).map(|(h, s)| (h, s.def, s.level)).collect();
    assert_eq!(listed, vec![(h1, fire, 2), (h2, ice, 1), (h3, ice, 5)]);
    assert_eq!(w.find_ability(hero, ice), Some(h2), "the first spec of the definition");
    assert_eq!(w.abilities(item).count(), 0);
}

#[test]
fn f_ga_02_removed_specs_leave_stale_handles() {
    let mut w = arena(
        r#"(abilities: { "Fire": (tags: ["Ability.Skill.Fire"], activation_owned_tags: ["State.Casting"], behaviour: "Script") })"#,
    );
    let fire = ab(&w, "Fire");
    let casting = tag(&w, "State.Casting");
    let hero = actor(&mut w);
    let h = grant(&mut w, hero, "Fire");
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(h), ok(1));
    });
    assert_eq!(activated(&out), vec![(h, 1, None)]);
    assert!(w.has_tag(hero, casting));
    // Removing an active ability cancels it first.
    let out = frame(&mut w, |w| w.remove_ability(h));
    assert_eq!(
        out.ability_events,
        vec![
            AbilityEvent::Ended { handle: h, def: fire, was_cancelled: true },
            AbilityEvent::Removed { handle: h, def: fire }
        ]
    );
    assert_eq!(ends_of(h), vec![(1, true)]);
    assert!(!w.has_tag(hero, casting));
    assert_eq!(w.ability(h), None);
    assert!(!w.is_ability_active(h));
    assert_eq!(w.try_activate(h), Err(ActivationFailure::InvalidHandle));
    assert_eq!(w.can_activate(h, None), Err(ActivationFailure::InvalidHandle));
    // The slot is reused under a new generation; the old handle stays stale.
    let h2 = grant(&mut w, hero, "Fire");
    assert_eq!((h2.slot, h2.generation), (h.slot, h.generation + 1));
    assert_eq!(w.try_activate(h), Err(ActivationFailure::InvalidHandle));
    assert_eq!(w.try_activate(h2), ok(1), "a new spec starts at serial 1");
    // A despawned owner makes every handle stale.
    w.despawn(hero);
    assert_eq!(w.try_activate(h2), Err(ActivationFailure::InvalidHandle));
    assert_eq!(w.ability(h2), None);
}

#[test]
fn f_ga_02_effect_granted_abilities_follow_their_removal_policy() {
    let mut w = arena(
        r#"(
        effects: {
            "GrantDash": (duration: Frames(10),
                          granted_abilities: [(ability: "Dash", level: 2, input: 3)]),
            "GrantChannel": (duration: Frames(10),
                             granted_abilities: [(ability: "Channel", removal: RemoveOnEnd)]),
            "GrantGuard": (duration: Frames(10),
                           granted_abilities: [(ability: "Guard", removal: DoNothing)]),
        },
        abilities: {
            "Dash": (tags: ["Ability.Movement.Dash"], behaviour: "Script"),
            "Channel": (tags: ["Ability.Skill.Channel"], behaviour: "Script"),
            "Guard": (tags: ["Ability.Guard"], behaviour: "Script"),
        },
    )"#,
    );
    let (dash, channel, guard) = (ab(&w, "Dash"), ab(&w, "Channel"), ab(&w, "Guard"));
    let hero = actor(&mut w);
    let mut effs = Vec::new();
    frame(&mut w, |w| {
        for n in ["GrantDash", "GrantChannel", "GrantGuard"] {
            effs.push(handle(apply(w, n, hero, hero)));
        }
    });
    let hd = w.find_ability(hero, dash).unwrap();
    let hc = w.find_ability(hero, channel).unwrap();
    let hg = w.find_ability(hero, guard).unwrap();
    let sd = *w.ability(hd).unwrap();
    assert_eq!((sd.level, sd.input_id(), sd.granted_by), (2, Some(3), effs[0].seq));
    assert_eq!(w.granting_effect(hd), Some(effs[0]));
    assert_eq!(w.granting_effect(hc), Some(effs[1]));
    frame(&mut w, |w| {
        w.try_activate(hc).unwrap();
        w.try_activate(hd).unwrap();
    });
    run_through(&mut w, 9);
    // Frame 10: the effects expire. Dash is cancelled and removed at once; Channel keeps
    // running until it ends; Guard stays granted and forgets its effect.
    let out = frame(&mut w, |_| {});
    assert_eq!(ended(&out), vec![(hd, true)]);
    assert!(out.ability_events.contains(&AbilityEvent::Removed { handle: hd, def: dash }));
    assert_eq!(w.ability(hd), None);
    assert!(w.is_ability_active(hc));
    assert!(w.ability(hg).is_some());
    assert_eq!(w.granting_effect(hg), None);
    let out = frame(&mut w, |w| w.end_ability(hc));
    assert_eq!(
        out.ability_events,
        vec![
            AbilityEvent::Ended { handle: hc, def: channel, was_cancelled: false },
            AbilityEvent::Removed { handle: hc, def: channel }
        ]
    );
    assert_eq!(w.ability(hc), None);
    assert_eq!(w.abilities(hero).map(|(h, _)| h).collect::<Vec<_>>(), vec![hg]);
}

// ---------------------------------------------------------------------------------------------
// F-GA-03 List mutation safety
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_03_grants_removals_and_cancels_from_a_behaviour_are_deferred() {
    let mut w = arena(
        r#"(abilities: {
            "Mutator": (tags: ["Ability.Skill.Fire"], input: 0, behaviour: "Script"),
            "Victim": (tags: ["Ability.Skill.Ice"], input: 0, behaviour: "Script"),
            "Runner": (tags: ["Ability.Movement.Dash"], behaviour: "Script"),
            "Buddy": (tags: ["Ability.Trigger"], behaviour: "Script"),
            "Newcomer": (tags: ["Ability.Guard"], input: 0, behaviour: "Script"),
        })"#,
    );
    let hero = actor(&mut w);
    w.bind_player(0, hero);
    let mutator = grant(&mut w, hero, "Mutator");
    let victim = grant(&mut w, hero, "Victim");
    let runner = grant(&mut w, hero, "Runner");
    let buddy = grant(&mut w, hero, "Buddy");
    let newcomer_def = ab(&w, "Newcomer");
    plan(
        ab(&w, "Mutator"),
        &[
            Act::Remove(victim),
            Act::CancelOther(runner),
            Act::Grant(newcomer_def),
            Act::Activate(buddy),
            Act::Probe(victim),
            Act::Probe(runner),
            Act::Probe(buddy),
        ],
    );
    frame(&mut w, |w| {
        w.try_activate(runner).unwrap();
    });
    // Frame 1: input 0 is pressed; Mutator (slot 0) runs first and changes the list that the
    // input phase is walking.
    let out = frame_in(&mut w, &[pad(1)], |_| {});
    let newcomer = w.find_ability(hero, newcomer_def).expect("granted");
    let probes: Vec<Rec> =
        log().into_iter().filter(|r| matches!(r, Rec::Probe { .. } | Rec::Queued(_))).collect();
    assert_eq!(
        probes,
        vec![
            Rec::Queued(Ok(Activation::Queued)),
            Rec::Probe { other: victim, granted: true, active: false },
            Rec::Probe { other: runner, granted: true, active: true },
            Rec::Probe { other: buddy, granted: true, active: false },
        ],
        "inside the call nothing has changed yet"
    );
    let seq: Vec<AbilityEvent> = out
        .ability_events
        .iter()
        .copied()
        .filter(|e| !matches!(e, AbilityEvent::Granted { .. } | AbilityEvent::Committed { .. }))
        .collect();
    let (mdef, vdef, rdef, bdef) =
        (ab(&w, "Mutator"), ab(&w, "Victim"), ab(&w, "Runner"), ab(&w, "Buddy"));
    assert_eq!(
        seq,
        vec![
            AbilityEvent::Activated { handle: mutator, def: mdef, serial: 1, trigger: None },
            AbilityEvent::Removed { handle: victim, def: vdef },
            AbilityEvent::Ended { handle: runner, def: rdef, was_cancelled: true },
            AbilityEvent::Activated { handle: buddy, def: bdef, serial: 1, trigger: None },
        ],
        "queued commands run in order after the behaviour returns"
    );
    assert!(
        out.ability_events.contains(&AbilityEvent::Granted { handle: newcomer, def: newcomer_def })
    );
    // The removed Victim never saw the press; the Newcomer was not part of this input phase.
    assert_eq!(w.ability(victim), None);
    assert!(w.last_activation(victim).is_none());
    assert!(!w.is_ability_active(newcomer));
    assert!(w.is_ability_active(mutator) && w.is_ability_active(buddy));
    assert!(!w.is_ability_active(runner));
    assert_eq!(ends_of(runner), vec![(1, true)]);
}

// ---------------------------------------------------------------------------------------------
// F-GA-14 Finding abilities
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_14_specs_matching_and_activity_queries() {
    let mut w = arena(
        r#"(abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], cost: "ManaCost"),
            "Ice": (tags: ["Ability.Skill.Ice"]),
            "Dash": (tags: ["Ability.Movement.Dash"]),
        })"#,
    );
    let mana = attr(&w, "Mana");
    let hero = actor(&mut w);
    let fire = grant(&mut w, hero, "Fire");
    let ice = grant(&mut w, hero, "Ice");
    let dash = grant(&mut w, hero, "Dash");
    let c = w.content().clone();
    let t = |n: &str| c.tag(n).unwrap();
    assert_eq!(w.specs_matching(hero, &set(&[t("Ability.Skill")]), false), vec![fire, ice]);
    assert_eq!(w.specs_matching(hero, &set(&[t("Ability.Skill.Fire")]), false), vec![fire]);
    assert_eq!(
        w.specs_matching(hero, &set(&[t("Ability.Skill.Ice"), t("Ability.Movement")]), false),
        vec![ice, dash]
    );
    assert_eq!(w.specs_matching(hero, &set(&[t("Ability")]), true), vec![fire, ice, dash]);
    w.set_base(hero, mana, int(0));
    assert_eq!(w.specs_matching(hero, &set(&[t("Ability")]), true), vec![ice, dash]);
    assert_eq!(w.specs_matching(hero, &set(&[t("Team")]), false), vec![]);
    w.try_activate(ice).unwrap();
    assert!(w.is_ability_active(ice) && !w.is_ability_active(fire));
    assert_eq!(
        w.specs_matching(hero, &set(&[t("Ability")]), true),
        vec![dash],
        "active: AlreadyActive"
    );
    let active: Vec<AbilityHandle> =
        w.abilities(hero).filter(|(_, s)| s.is_active()).map(|(h, _)| h).collect();
    assert_eq!(active, vec![ice]);
    assert_eq!(w.find_ability(hero, ab(&w, "Dash")), Some(dash));
    assert_eq!(w.abilities(hero).count(), 3);
}

// ---------------------------------------------------------------------------------------------
// F-GA-15 Levels, F-GA-16 Ability sets
// ---------------------------------------------------------------------------------------------

/// A cost made only of level-scaled magnitudes is checked without building the ability's spec:
/// the check still reads the ability's level (cost 10 per level here), at the edge of
/// affordability in both directions.
#[test]
fn f_ga_15_a_level_scaled_cost_is_checked_at_the_ability_level() {
    let mut w =
        arena(r#"(abilities: { "Fire": (tags: ["Ability.Skill.Fire"], cost: "ManaCost") })"#);
    let mana = attr(&w, "Mana");
    let hero = actor(&mut w);
    let h = w.grant_ability(hero, ab(&w, "Fire"), 3).expect("grant");
    w.step(&[]);
    w.set_base(hero, mana, int(29));
    assert_eq!(w.try_activate(h), Err(ActivationFailure::CantAffordCost), "level 3 costs 30");
    assert_eq!(w.attr(hero, mana), Some(int(29)), "nothing is paid on failure");
    w.set_base(hero, mana, int(30));
    assert_eq!(w.try_activate(h), ok(1));
    w.end_ability(h);
    assert_eq!(w.attr(hero, mana), Some(int(0)));
    // At level 1 the same mana affords it.
    w.set_base(hero, mana, int(10));
    w.set_ability_level(h, 1);
    w.step(&[]);
    assert_eq!(w.try_activate(h), ok(2));
    assert_eq!(w.attr(hero, mana), Some(int(0)));
}

#[test]
fn f_ga_15_set_level_in_place_and_regrant_with_a_new_handle() {
    let mut w = arena(
        r#"(abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], cost: "ManaCost", cooldown: "FireCooldown",
                     input: 2, behaviour: "Script"),
        })"#,
    );
    let (mana, focus) = (attr(&w, "Mana"), attr(&w, "Focus"));
    let fire_def = ab(&w, "Fire");
    let cd_def = eff(&w, "FireCooldown");
    let hero = actor(&mut w);
    let h = grant(&mut w, hero, "Fire");
    plan(fire_def, &[Act::Spawn(0, TaskSpec::WaitFrames(50))]);
    frame(&mut w, |w| assert_eq!(w.try_activate(h), ok(1)));
    assert_eq!(w.attr(hero, mana), Some(int(40)), "level 1 cost 10");
    let cd = *w.effects(hero).iter().find(|e| e.def == cd_def).unwrap();
    assert_eq!(cd.level, 1);
    assert_eq!(w.effect_magnitude(cd.handle(hero), 0), Some(int(10)));
    assert_eq!(w.attr(hero, focus), Some(int(10)));
    // In place: it keeps running with its tasks and handle.
    let task = spawned(h, 0)[0];
    frame(&mut w, |w| w.set_ability_level(h, 3));
    assert!(w.is_ability_active(h) && w.is_task_live(task));
    assert_eq!(w.ability(h).unwrap().level, 3);
    run_through(&mut w, 30);
    frame(&mut w, |w| {
        w.end_ability(h);
        assert_eq!(w.try_activate(h), ok(2));
    });
    assert_eq!(w.attr(hero, mana), Some(int(10)), "level 3 cost 30");
    let cd = *w.effects(hero).iter().find(|e| e.def == cd_def).unwrap();
    assert_eq!(cd.level, 3);
    assert_eq!(w.effect_magnitude(cd.handle(hero), 0), Some(int(30)));
    assert_eq!(w.attr(hero, focus), Some(int(30)));
    assert_eq!(activations_of(h).last().map(|_| ()), Some(()));
    let levels: Vec<u16> = log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Activated { level, .. } => Some(level),
            _ => None,
        })
        .collect();
    assert_eq!(levels, vec![1, 3]);
    // Regrant: the running ability ends (cancelled) and the new spec has a new handle.
    let mut h2 = Err(GrantError::InvalidHandle(h));
    let out = frame(&mut w, |w| h2 = w.regrant_ability(h, 2));
    let h2 = h2.unwrap();
    assert_eq!(
        out.ability_events,
        vec![
            AbilityEvent::TaskEnded { task: spawned(h, 0)[1], ability: h },
            AbilityEvent::Ended { handle: h, def: fire_def, was_cancelled: true },
            AbilityEvent::Removed { handle: h, def: fire_def },
            AbilityEvent::Granted { handle: h2, def: fire_def },
        ]
    );
    assert_ne!(h2, h);
    assert_eq!((h2.slot, h2.generation), (h.slot, h.generation + 1));
    let s = *w.ability(h2).unwrap();
    assert_eq!((s.level, s.input_id(), s.activation_serial, s.is_active()), (2, Some(2), 0, false));
    assert_eq!(w.try_activate(h), Err(ActivationFailure::InvalidHandle));
    assert_eq!(w.regrant_ability(h, 5), Err(GrantError::InvalidHandle(h)));
    w.set_ability_level(h, 9);
    assert_eq!(w.ability(h2).unwrap().level, 2, "a stale handle changes nothing");
}

#[test]
fn f_ga_16_ability_sets_grant_levels_and_inputs() {
    let mut w = arena(
        r#"(
        abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], input: 2),
            "Ice": (tags: ["Ability.Skill.Ice"]),
        },
        ability_sets: {
            "Kit": [(ability: "Fire", level: 3, input: 5), (ability: "Ice")],
            "Empty": [],
        },
    )"#,
    );
    let c = w.content().clone();
    let kit = c.ability_set("Kit").unwrap();
    let hero = actor(&mut w);
    let hs = w.grant_ability_set(hero, kit);
    assert_eq!(hs.len(), 2);
    let got: Vec<(AbilityDefId, u16, Option<u8>)> =
        hs.iter().map(|h| w.ability(*h).map(|s| (s.def, s.level, s.input_id())).unwrap()).collect();
    assert_eq!(got, vec![(ab(&w, "Fire"), 3, Some(5)), (ab(&w, "Ice"), 1, None)]);
    assert_eq!(c.ability_set_defs()[kit.index()].name, "Kit");
    assert!(w.grant_ability_set(hero, c.ability_set("Empty").unwrap()).is_empty());
    assert!(w.grant_ability_set(hero, AbilitySetId(99)).is_empty());
    let plain = w.spawn().unwrap();
    assert!(w.grant_ability_set(plain, kit).is_empty());
    assert_eq!(w.abilities(hero).count(), 2);
}

// ---------------------------------------------------------------------------------------------
// F-GA-17 Owner vs avatar
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_17_abilities_act_through_the_avatar_for_the_owner() {
    let mut w = arena(
        r#"(abilities: {
            "Strike": (tags: ["Ability.Skill.Fire"], cooldown: "FireCooldown", behaviour: "Script"),
        })"#,
    );
    let health = attr(&w, "Health");
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let body = w.spawn().unwrap();
    assert_eq!(w.avatar(hero), hero, "the owner is its own avatar by default");
    let strike = grant(&mut w, hero, "Strike");
    plan(
        ab(&w, "Strike"),
        &[Act::Apply(eff(&w, "Damage"), enemy), Act::Apply(eff(&w, "Burn"), enemy)],
    );
    frame(&mut w, |w| w.set_avatar(hero, body));
    assert_eq!(w.avatar(hero), body);
    let out = frame(&mut w, |w| assert_eq!(w.try_activate(strike), ok(1)));
    let avatars: Vec<Entity> = log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Activated { avatar, .. } => Some(avatar),
            _ => None,
        })
        .collect();
    assert_eq!(avatars, vec![body]);
    let exec: Vec<(Entity, Entity, Entity)> = out
        .executions
        .iter()
        .filter(|x| x.attr == health)
        .map(|x| (x.target, x.instigator, x.causer))
        .collect();
    assert_eq!(exec, vec![(enemy, hero, body)], "instigator = owner, causer = avatar");
    let burn = *w.effects(enemy).iter().find(|e| e.def == eff(&w, "Burn")).unwrap();
    let origin = w.effect_origin(burn.handle(enemy)).unwrap();
    assert_eq!((origin.instigator, origin.causer, origin.ability), (hero, body, strike));
    assert_eq!(origin.activation_serial, 1);
    // The cooldown and effects live on the owner and survive a new avatar (respawn).
    let body2 = w.spawn().unwrap();
    let before = w.effects(hero).to_vec();
    frame(&mut w, |w| {
        w.end_ability(strike);
        w.despawn(body);
        w.set_avatar(hero, body2);
    });
    assert_eq!(w.avatar(hero), body2);
    assert_eq!(w.effects(hero), &before[..]);
    assert_eq!(w.try_activate(strike), Err(ActivationFailure::OnCooldown));
    assert_eq!(w.ability_cooldown_remaining(strike), Some((29, 30)));
    let spec = w.make_ability_spec(strike, eff(&w, "Damage"));
    assert_eq!((spec.context.instigator, spec.context.causer), (hero, body2));
}

// ---------------------------------------------------------------------------------------------
// F-GA-19 Instancing
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_19_state_blob_per_execution_per_actor_and_none() {
    let mut w = arena(MODES);
    let hero = actor(&mut w);
    let names = ["PerExec", "PerActor", "NonInst"];
    let hs: Vec<AbilityHandle> = names.iter().map(|n| grant(&mut w, hero, n)).collect();
    for n in names {
        let d = ab(&w, n);
        plan(d, &[Act::Bump, Act::Spawn(0, TaskSpec::WaitFrames(1))]);
        on_task_plan(d, 0, Act::Bump);
        on_task_plan(d, 0, Act::End);
    }
    for _ in 0..3 {
        frame(&mut w, |w| {
            for h in &hs {
                w.try_activate(*h).unwrap();
            }
        });
        frame(&mut w, |w| w.end_ability(hs[2]));
    }
    let states = |h: AbilityHandle| -> Vec<u32> {
        log()
            .into_iter()
            .filter_map(|r| match r {
                Rec::State { h: x, value } if x == h => Some(value),
                _ => None,
            })
            .collect()
    };
    // PerExecution: zeroed at every activation, kept across frames within one.
    assert_eq!(states(hs[0]), vec![0, 1, 0, 1, 0, 1]);
    // PerActor: persists between activations.
    assert_eq!(states(hs[1]), vec![0, 1, 2, 3, 4, 5]);
    // NonInstanced: no blob (reads zero, writes vanish) and no tasks.
    assert_eq!(states(hs[2]), vec![0, 0, 0]);
    let spawns: Vec<Result<TaskHandle, ActivationFailure>> = log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Spawned { h, result, .. } if h == hs[2] => Some(result),
            _ => None,
        })
        .collect();
    assert_eq!(spawns, vec![Err(ActivationFailure::TaskCapacity); 3]);
    assert!(hs.iter().all(|h| !w.is_ability_active(*h)));
    assert!(hs.iter().all(|h| w.ability(*h).unwrap().activation_serial == 3));
    // The PerExecution and PerActor abilities ended themselves from their task reports.
    assert_eq!(ends_of(hs[0]), vec![(1, false), (3, false), (5, false)]);
    assert_eq!(ends_of(hs[1]), vec![(1, false), (3, false), (5, false)]);
}

// ---------------------------------------------------------------------------------------------
// F-GA-21 Passing data
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_21_event_payload_and_target_data_reach_the_behaviour() {
    let mut w = arena(
        r#"(abilities: {
            "OnHit": (tags: ["Ability.Trigger"], triggers: [Event("Event.Hit")], behaviour: "Script"),
        })"#,
    );
    let (hit, heavy) = (tag(&w, "Event.Hit"), tag(&w, "Event.Hit.Heavy"));
    let hero = actor(&mut w);
    let e1 = actor(&mut w);
    let e2 = actor(&mut w);
    let on_hit = grant(&mut w, hero, "OnHit");
    plan(ab(&w, "OnHit"), &[Act::Spawn(0, TaskSpec::WaitEvent { tag: hit, once: true })]);
    let mut ev = EventData::new(heavy, e1, hero)
        .with_magnitude(crate::common::fx("2.5"))
        .with_target_data(TargetData::entities(&[e1, e2]));
    ev.object = e2;
    ev.user[0] = 9;
    frame(&mut w, |w| w.send_event(hero, ev));
    let seen = log().into_iter().find_map(|r| match r {
        Rec::Activated { event, .. } => event,
        _ => None,
    });
    let seen = seen.expect("the trigger event reaches on_activate");
    assert_eq!(seen, ev);
    assert_eq!(seen.magnitude, crate::common::fx("2.5"));
    assert_eq!(seen.target_data.view(), TargetView::Entities(&[e1, e2]));
    assert_eq!((seen.object, seen.user[0]), (e2, 9));
    // A later event reaches the waiting task with its payload.
    let later = EventData::new(hit, e2, hero)
        .with_magnitude(int(11))
        .with_target_data(TargetData::location([int(1), int(2), int(3)], [int(4), int(5), int(6)]));
    frame(&mut w, |w| w.send_event(hero, later));
    assert_eq!(task_reports(on_hit), vec![(1, 0, TaskEvent::Event(later))]);
}

/// Granting a definition the owner already has gives a second spec, as each `GiveAbility`
/// does in GAS: its own slot and handle, listed by `abilities`, while `find_ability` finds the
/// first; each activates and ends on its own.
#[test]
fn granting_twice_gives_a_second_spec() {
    let mut w = crate::common::world(r#"(abilities: { "Dash": (end_after: Frames(3)) })"#);
    let hero = crate::common::actor(&mut w, &[]);
    let dash = w.content().ability("Dash").unwrap();
    let first = w.grant_ability(hero, dash, 1).unwrap();
    let second = w.grant_ability(hero, dash, 2).unwrap();
    assert_ne!(first, second);
    let handles: Vec<_> = w.abilities(hero).map(|(h, s)| (h, s.level)).collect();
    assert_eq!(handles, [(first, 1), (second, 2)]);
    assert_eq!(w.find_ability(hero, dash), Some(first));
    assert!(w.try_activate(second).is_ok());
    assert!(w.is_ability_active(second) && !w.is_ability_active(first));
}
