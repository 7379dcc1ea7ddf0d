//! The activation pipeline (F-GA-04) and its failure reasons (F-GA-05).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-GA-04 Activation pipeline
// ---------------------------------------------------------------------------------------------

const GAUNTLET: &str = r#"(
    effects: { "GauntletCooldown": (duration: Frames(10), granted_tags: ["Cooldown.Gauntlet"]) },
    abilities: {
        "Gauntlet": (tags: ["Ability.Skill.Gauntlet"], activation_required_tags: ["State.Ready"],
                     activation_blocked_tags: ["State.Stunned"], source_required_tags: ["Team.Red"],
                     target_blocked_tags: ["Team.Blue"], cost: "ManaCost",
                     cooldown: "GauntletCooldown", can_activate: "Gate", behaviour: "Script"),
        "Guard": (tags: ["Ability.Guard"], block_abilities_with_tags: ["Ability.Skill"],
                  behaviour: "Script"),
    },
)"#;

#[test]
fn f_ga_04_pipeline_checks_run_in_order() {
    use ActivationFailure as F;
    let mut w = arena(GAUNTLET);
    let t = |w: &World<PadProbeGame>, n: &str| tag(w, n);
    let (ready, stunned, dead, red, blue, closed) = (
        t(&w, "State.Ready"),
        t(&w, "State.Stunned"),
        t(&w, "State.Dead"),
        t(&w, "Team.Red"),
        t(&w, "Team.Blue"),
        t(&w, "Gate.Closed"),
    );
    let mana = attr(&w, "Mana");
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let g = grant(&mut w, hero, "Gauntlet");
    let guard = grant(&mut w, hero, "Guard");
    let ev = EventData::new(t(&w, "Event.Ping"), enemy, hero);
    w.step(&[]);
    // Everything passes.
    w.add_loose_tag(hero, ready);
    w.add_loose_tag(enemy, red);
    assert_eq!(w.can_activate(g, Some(&ev)), Ok(()));
    assert_eq!(w.try_activate_with_event(g, ev), ok(1));
    assert_eq!(w.attr(hero, mana), Some(int(40)));
    // Now make every check fail, then fix them one at a time.
    assert_eq!(w.try_activate(guard), ok(1));
    w.add_loose_tag(hero, dead);
    w.add_loose_tag(hero, stunned);
    w.remove_loose_tag(hero, ready);
    w.remove_loose_tag(enemy, red);
    w.add_loose_tag(hero, blue);
    w.set_base(hero, mana, int(5));
    w.add_loose_tag(hero, closed);
    let mut seen = Vec::new();
    let mut attempt = |w: &mut World<PadProbeGame>| {
        let a = w.can_activate(g, Some(&ev));
        let r = w.try_activate_with_event(g, ev);
        assert_eq!(r.map(|_| ()), a, "can_activate agrees with try_activate");
        assert_eq!(w.last_activation(g).map(|r| r.result), Some(r.map(|_| 2)));
        seen.push(r);
    };
    attempt(&mut w);
    w.end_ability(g);
    attempt(&mut w);
    w.remove_loose_tag(hero, dead);
    attempt(&mut w);
    w.remove_loose_tag(hero, stunned);
    attempt(&mut w);
    w.add_loose_tag(hero, ready);
    attempt(&mut w);
    w.end_ability(guard);
    attempt(&mut w);
    w.add_loose_tag(enemy, red);
    attempt(&mut w);
    // Without an event the source/target lists are not checked.
    assert_eq!(w.can_activate(g, None), Err(F::OnCooldown));
    w.remove_loose_tag(hero, blue);
    attempt(&mut w);
    let cd = w.effects(hero).iter().find(|e| e.def == eff(&w, "GauntletCooldown")).unwrap().seq;
    w.remove_effect(EffectHandle { target: hero, seq: cd });
    attempt(&mut w);
    w.set_base(hero, mana, int(10));
    attempt(&mut w);
    w.remove_loose_tag(hero, closed);
    attempt(&mut w);
    assert_eq!(
        seen,
        vec![
            Err(F::AlreadyActive),
            Err(F::Dead),
            Err(F::BlockedByTags),
            Err(F::MissingTags),
            Err(F::BlockedByAbility),
            Err(F::SourceOrTargetTags),
            Err(F::SourceOrTargetTags),
            Err(F::OnCooldown),
            Err(F::CantAffordCost),
            Err(F::Custom(42)),
            ok(2),
        ]
    );
    assert_eq!(w.attr(hero, mana), Some(int(0)), "a cost to exactly 0 is affordable");
    assert_eq!(w.ability(g).unwrap().activation_serial, 2);
}

#[test]
fn f_ga_04_success_cancels_others_blocks_and_owns_tags() {
    let mut w = arena(
        r#"(abilities: {
            "Cleave": (tags: ["Ability.Skill.Cleave"],
                       cancel_abilities_with_tags: ["Ability.Skill", "Ability.Movement"],
                       block_abilities_with_tags: ["Ability.Movement"],
                       activation_owned_tags: ["State.Casting", "State.Rooted"],
                       behaviour: "Script"),
            "Channel": (tags: ["Ability.Skill.Channel"], activation_owned_tags: ["State.Casting"],
                        behaviour: "Script"),
            "Dash": (tags: ["Ability.Movement.Dash"], behaviour: "Script"),
            "Guard": (tags: ["Ability.Guard"], behaviour: "Script"),
        })"#,
    );
    let (casting, rooted) = (tag(&w, "State.Casting"), tag(&w, "State.Rooted"));
    let movement = tag(&w, "Ability.Movement");
    let hero = actor(&mut w);
    let cleave = grant(&mut w, hero, "Cleave");
    let channel = grant(&mut w, hero, "Channel");
    let dash = grant(&mut w, hero, "Dash");
    let guard = grant(&mut w, hero, "Guard");
    let out = frame(&mut w, |w| {
        for h in [channel, dash, guard] {
            assert_eq!(w.try_activate(h), ok(1));
        }
    });
    assert_eq!(activated(&out), vec![(channel, 1, None), (dash, 1, None), (guard, 1, None)]);
    assert_eq!(w.tag_count_exact(hero, casting), 1);
    assert!(w.block_set(hero, None).is_empty());
    // Cleave cancels the matching running abilities (in slot order) before it activates; its
    // own tags match its cancel list, but it is excluded.
    let out = frame(&mut w, |w| assert_eq!(w.try_activate(cleave), ok(1)));
    let (cdef, chdef, ddef) = (ab(&w, "Cleave"), ab(&w, "Channel"), ab(&w, "Dash"));
    let seq: Vec<AbilityEvent> = out
        .ability_events
        .iter()
        .copied()
        .filter(|e| !matches!(e, AbilityEvent::Committed { .. }))
        .collect();
    assert_eq!(
        seq,
        vec![
            AbilityEvent::Ended { handle: channel, def: chdef, was_cancelled: true },
            AbilityEvent::Ended { handle: dash, def: ddef, was_cancelled: true },
            AbilityEvent::Activated { handle: cleave, def: cdef, serial: 1, trigger: None },
        ]
    );
    assert_eq!(ends_of(channel), vec![(1, true)]);
    assert!(w.is_ability_active(cleave) && w.is_ability_active(guard));
    assert!(!w.is_ability_active(channel) && !w.is_ability_active(dash));
    // Owned tags: Channel's State.Casting went, Cleave's came.
    assert_eq!(w.tag_count_exact(hero, casting), 1);
    assert_eq!(w.tag_count_exact(hero, rooted), 1);
    // While Cleave runs, movement abilities are blocked (hierarchically); others are not.
    assert!(w.block_set(hero, None).contains(movement));
    assert!(w.block_set(hero, Some(cleave)).is_empty(), "except the ability itself");
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(dash), Err(ActivationFailure::BlockedByAbility));
        assert_eq!(w.try_activate(guard), Err(ActivationFailure::AlreadyActive));
        assert_eq!(w.try_activate(channel), ok(2), "not blocked: only cancelled");
    });
    assert_eq!(
        failed(&out),
        vec![
            (dash, ActivationFailure::BlockedByAbility),
            (guard, ActivationFailure::AlreadyActive)
        ]
    );
    // Ending Cleave removes its owned tags and unblocks.
    let out = frame(&mut w, |w| {
        w.end_ability(cleave);
        w.end_ability(channel);
    });
    assert_eq!(ended(&out), vec![(cleave, false), (channel, false)]);
    let changes: Vec<(TagId, u32, u32)> = out
        .tag_events
        .iter()
        .filter(|e| e.tag == casting || e.tag == rooted)
        .map(|e| (e.tag, e.old, e.new))
        .collect();
    assert_eq!(changes, vec![(casting, 2, 1), (rooted, 1, 0), (casting, 1, 0)]);
    assert!(!w.has_tag(hero, casting) && !w.has_tag(hero, rooted));
    frame(&mut w, |w| assert_eq!(w.try_activate(dash), ok(2)));
    frame(&mut w, |w| assert_eq!(w.try_activate(cleave), ok(2)));
    assert_eq!(w.ability(cleave).unwrap().activation_serial, 2);
    assert_eq!(w.ability(cleave).unwrap().activated_at, 5);
    assert_eq!(activations_of(cleave), vec![(1, 1), (5, 2)]);
}

#[test]
fn f_ga_04_effect_blocked_ability_tags_block_hierarchically_while_active() {
    let mut w = arena(
        r#"(
        effects: {
            "SilenceWhileBurning": (duration: Infinite, blocked_ability_tags: ["Ability.Skill"],
                                    ongoing_requirements: (require: ["State.Burning"])),
        },
        abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], end_after: Frames(1)),
            "Dash": (tags: ["Ability.Movement.Dash"], end_after: Frames(1)),
        },
    )"#,
    );
    let hero = actor(&mut w);
    let fire = grant(&mut w, hero, "Fire");
    let dash = grant(&mut w, hero, "Dash");
    let skill = tag(&w, "Ability.Skill");
    w.step(&[]);
    let silence = handle(apply(&mut w, "Silence", hero, hero));
    assert!(w.block_set(hero, None).contains(skill));
    assert_eq!(w.try_activate(fire), Err(ActivationFailure::BlockedByAbility));
    assert_eq!(w.try_activate(dash), ok(1));
    w.remove_effect(silence);
    assert_eq!(w.try_activate(fire), ok(1));
    w.end_ability(fire);
    // An inhibited effect blocks nothing; switched on, it blocks.
    apply(&mut w, "SilenceWhileBurning", hero, hero);
    assert_eq!(w.can_activate(fire, None), Ok(()));
    w.add_loose_tag(hero, tag(&w, "State.Burning"));
    assert_eq!(w.can_activate(fire, None), Err(ActivationFailure::BlockedByAbility));
    w.remove_loose_tag(hero, tag(&w, "State.Burning"));
    assert_eq!(w.try_activate(fire), ok(2));
}

#[test]
fn f_ga_04_event_activation_checks_source_and_target_tags() {
    let mut w = arena(
        r#"(abilities: {
            "Counter": (tags: ["Ability.Trigger"], triggers: [Event("Event.Hit")],
                        source_required_tags: ["Team.Red"], source_blocked_tags: ["State.Dead"],
                        target_required_tags: ["Targetable"], target_blocked_tags: ["Team.Blue"],
                        behaviour: "Script"),
        })"#,
    );
    let (red, blue, targetable) =
        (tag(&w, "Team.Red"), tag(&w, "Team.Blue"), tag(&w, "Targetable"));
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let counter = grant(&mut w, hero, "Counter");
    let heavy = tag(&w, "Event.Hit.Heavy");
    let ev = EventData::new(heavy, enemy, hero).with_magnitude(int(7));
    let send = |w: &mut World<PadProbeGame>| frame(w, |w| w.send_event(hero, ev));
    // 0: the instigator lacks Team.Red.
    let out = send(&mut w);
    assert_eq!(failed(&out), vec![(counter, ActivationFailure::SourceOrTargetTags)]);
    assert_eq!(out.gameplay_events.len(), 1);
    assert_eq!((out.gameplay_events[0].frame, out.gameplay_events[0].to), (0, hero));
    // 1: the target lacks Targetable.
    w.add_loose_tag(enemy, red);
    assert_eq!(failed(&send(&mut w)), vec![(counter, ActivationFailure::SourceOrTargetTags)]);
    // 2: the target is Team.Blue.
    w.add_loose_tag(hero, targetable);
    w.add_loose_tag(hero, blue);
    assert_eq!(failed(&send(&mut w)), vec![(counter, ActivationFailure::SourceOrTargetTags)]);
    // 3: the instigator is dead.
    w.remove_loose_tag(hero, blue);
    w.add_loose_tag(enemy, tag(&w, "State.Dead"));
    assert_eq!(failed(&send(&mut w)), vec![(counter, ActivationFailure::SourceOrTargetTags)]);
    // 4: all pass; the behaviour sees the event.
    w.remove_loose_tag(enemy, tag(&w, "State.Dead"));
    let out = send(&mut w);
    assert_eq!(activated(&out), vec![(counter, 1, Some(heavy))]);
    let seen: Vec<Option<EventData>> = log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Activated { event, .. } => Some(event),
            _ => None,
        })
        .collect();
    assert_eq!(seen, vec![Some(ev)]);
    // try_activate_with_event applies the same lists; plain try_activate skips them.
    w.end_ability(counter);
    w.remove_loose_tag(enemy, red);
    assert_eq!(w.try_activate_with_event(counter, ev), Err(ActivationFailure::SourceOrTargetTags));
    assert_eq!(w.try_activate(counter), ok(2));
}

#[test]
fn f_ga_04_retrigger_restarts_an_active_ability() {
    let mut w = arena(
        r#"(abilities: {
            "Repeat": (tags: ["Ability.Skill.Fire"], retrigger: true, behaviour: "Script",
                       activation_owned_tags: ["State.Casting"]),
            "Once": (tags: ["Ability.Skill.Ice"], behaviour: "Script"),
        })"#,
    );
    let casting = tag(&w, "State.Casting");
    let hero = actor(&mut w);
    let rep = grant(&mut w, hero, "Repeat");
    let once = grant(&mut w, hero, "Once");
    plan(ab(&w, "Repeat"), &[Act::Spawn(0, TaskSpec::WaitFrames(100))]);
    frame(&mut w, |w| {
        assert_eq!(w.try_activate(rep), ok(1));
        assert_eq!(w.try_activate(once), ok(1));
    });
    let first_task = spawned(rep, 0)[0];
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(rep), ok(2));
        assert_eq!(w.try_activate(once), Err(ActivationFailure::AlreadyActive));
    });
    let (rdef, odef) = (ab(&w, "Repeat"), ab(&w, "Once"));
    let seq: Vec<AbilityEvent> = out
        .ability_events
        .iter()
        .copied()
        .filter(|e| !matches!(e, AbilityEvent::Committed { .. }))
        .collect();
    assert_eq!(
        seq,
        vec![
            AbilityEvent::TaskEnded { task: first_task, ability: rep },
            AbilityEvent::Ended { handle: rep, def: rdef, was_cancelled: true },
            AbilityEvent::Activated { handle: rep, def: rdef, serial: 2, trigger: None },
            AbilityEvent::ActivationFailed {
                handle: once,
                def: odef,
                reason: ActivationFailure::AlreadyActive
            },
        ]
    );
    assert_eq!(ends_of(rep), vec![(1, true)]);
    assert!(!w.is_task_live(first_task));
    let second_task = spawned(rep, 0)[1];
    assert!(w.is_task_live(second_task));
    assert_eq!(w.task(second_task).unwrap().activation_serial, 2);
    assert_eq!(w.tag_count_exact(hero, casting), 1, "owned tags are not doubled");
}

#[test]
fn f_ga_04_task_capacity_fails_activation_of_timeline_abilities() {
    let mut w = build(
        r#"(
        timelines: { "Punch": (startup: 3, active: 2, recovery: 4) },
        abilities: {
            "JabA": (tags: ["Ability.Skill.Jab"], timeline: "Punch"),
            "JabB": (tags: ["Ability.Skill.Jab"], timeline: "Punch", cost: "ManaCost",
                     cooldown: "FireCooldown", activation_owned_tags: ["State.Casting"]),
            "Worker": (tags: ["Ability.Skill.Fire"], behaviour: "Script"),
        },
    )"#,
        WorldConfig { max_tasks: 1, ..WorldConfig::default() },
    );
    let hero = actor(&mut w);
    let a = grant(&mut w, hero, "JabA");
    let b = grant(&mut w, hero, "JabB");
    let worker = grant(&mut w, hero, "Worker");
    plan(ab(&w, "Worker"), &[Act::Spawn(0, TaskSpec::WaitFrames(3))]);
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(a), ok(1));
        assert_eq!(w.try_activate(b), Err(ActivationFailure::TaskCapacity));
        assert_eq!(w.try_activate(worker), ok(1));
    });
    assert!(failed(&out).contains(&(b, ActivationFailure::TaskCapacity)));
    assert!(!w.is_ability_active(b));
    assert!(!w.has_tag(hero, tag(&w, "State.Casting")));
    // A failed activation commits nothing and is not reported as an activation.
    assert_eq!(w.attr(hero, attr(&w, "Mana")), Some(int(50)), "no cost paid");
    assert!(!w.has_tag(hero, tag(&w, "Cooldown.Fire")), "no cooldown applied");
    assert!(!activated(&out).iter().any(|x| x.0 == b), "{:?}", out.ability_events);
    assert_eq!(w.ability(b).unwrap().activation_serial, 0);
    assert_eq!(w.last_activation(b).map(|r| r.result), Some(Err(ActivationFailure::TaskCapacity)));
    // A behaviour's spawn into the full pool fails with the same reason; the ability runs.
    assert!(w.is_ability_active(worker));
    assert!(log().contains(&Rec::Spawned {
        h: worker,
        user: 0,
        result: Err(ActivationFailure::TaskCapacity)
    }));
    // When the timeline ends its slot is free again.
    run_through(&mut w, 9);
    assert!(!w.is_ability_active(a));
    frame(&mut w, |w| assert_eq!(w.try_activate(b), ok(1)));
}

// ---------------------------------------------------------------------------------------------
// F-GA-05 Failure reasons
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_05_failures_are_events_and_log_entries() {
    let mut w = arena(
        r#"(abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], cooldown: "FireCooldown", end_after: Frames(2)),
            "Ice": (tags: ["Ability.Skill.Ice"], activation_required_tags: ["State.Ready"]),
        })"#,
    );
    let hero = actor(&mut w);
    let fire = grant(&mut w, hero, "Fire");
    let ice = grant(&mut w, hero, "Ice");
    let (fdef, idef) = (ab(&w, "Fire"), ab(&w, "Ice"));
    run_through(&mut w, 2);
    let out = frame(&mut w, |w| {
        w.try_activate(fire).unwrap();
        assert_eq!(w.try_activate(ice), Err(ActivationFailure::MissingTags));
    });
    assert_eq!(
        out.ability_events.last(),
        Some(&AbilityEvent::ActivationFailed {
            handle: ice,
            def: idef,
            reason: ActivationFailure::MissingTags
        })
    );
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(fire), Err(ActivationFailure::AlreadyActive));
    });
    assert_eq!(failed(&out), vec![(fire, ActivationFailure::AlreadyActive)]);
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(fire), Err(ActivationFailure::OnCooldown));
    });
    assert_eq!(failed(&out), vec![(fire, ActivationFailure::OnCooldown)]);
    let entries: Vec<(u32, AbilityHandle, AbilityDefId, Result<u32, ActivationFailure>)> =
        w.activation_log().map(|r| (r.frame, r.handle, r.def, r.result)).collect();
    assert_eq!(
        entries,
        vec![
            (3, fire, fdef, Ok(1)),
            (3, ice, idef, Err(ActivationFailure::MissingTags)),
            (4, fire, fdef, Err(ActivationFailure::AlreadyActive)),
            (5, fire, fdef, Err(ActivationFailure::OnCooldown)),
        ]
    );
    assert_eq!(
        w.last_activation(ice).map(|r| (r.frame, r.result)),
        Some((3, Err(ActivationFailure::MissingTags)))
    );
    assert_eq!(w.last_activation(fire).map(|r| r.frame), Some(5));
    // The log is a debug ring outside the snapshot: rewound by a load, capped at 256.
    let snap = w.snapshot();
    frame(&mut w, |w| {
        let _ = w.try_activate(ice);
    });
    assert_eq!(w.activation_log().count(), 5);
    w.load(&snap).unwrap();
    assert_eq!(w.activation_log().count(), 4);
    assert_eq!(w.checksum(), snap.checksums().total, "failures change no sim state");
    for _ in 0..300 {
        frame(&mut w, |w| {
            let _ = w.try_activate(ice);
        });
    }
    assert_eq!(w.activation_log().count(), 256);
    assert_eq!(w.activation_log().next().map(|r| r.frame), Some(6 + 300 - 256));
    assert!(w.activation_log().all(|r| r.result == Err(ActivationFailure::MissingTags)));
}
