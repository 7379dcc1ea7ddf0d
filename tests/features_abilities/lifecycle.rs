//! Ending and cancelling (F-GA-10), passive abilities (F-GA-11), triggers and events (F-GA-12),
//! input binding and same-frame fairness (F-GA-13, F-GA-18).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-GA-10 End and cancel
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_10_end_and_cancel_are_uniform_across_instancing_modes() {
    let mut w = arena(MODES);
    let casting = tag(&w, "State.Casting");
    let hero = actor(&mut w);
    let names = ["PerExec", "PerActor", "NonInst"];
    let hs: Vec<AbilityHandle> = names.iter().map(|n| grant(&mut w, hero, n)).collect();
    for n in names {
        let d = ab(&w, n);
        plan(
            d,
            &[
                Act::Spawn(0, TaskSpec::WaitFrames(100)),
                Act::Spawn(1, TaskSpec::WaitEvent { tag: tag(&w, "Event.Ping"), once: false }),
            ],
        );
    }
    for (i, h) in hs.iter().copied().enumerate() {
        let instanced = i < 2;
        for cancelled in [false, true] {
            frame(&mut w, |w| assert!(w.try_activate(h).is_ok()));
            assert!(w.has_tag(hero, casting));
            let tasks: Vec<TaskHandle> = w.tasks_of(h).map(|(t, _)| t).collect();
            assert_eq!(tasks.len(), if instanced { 2 } else { 0 }, "{}", names[i]);
            let at = w.next_frame();
            let out =
                frame(&mut w, |w| if cancelled { w.cancel_ability(h) } else { w.end_ability(h) });
            assert_eq!(ended(&out), vec![(h, cancelled)], "{}", names[i]);
            assert_eq!(tasks_ended(&out), tasks, "ending ends the tasks");
            assert!(ends_of(h).contains(&(at, cancelled)), "on_end({cancelled}) ran");
            assert!(!w.is_ability_active(h));
            assert!(!w.has_tag(hero, casting));
            assert_eq!(w.tasks_of(h).count(), 0);
        }
        // Ending an inactive ability does nothing.
        let out = frame(&mut w, |w| w.end_ability(h));
        assert!(ended(&out).is_empty());
    }
    // Matching filters with an ignore, then all.
    let (pe, pa, ni) = (hs[0], hs[1], hs[2]);
    let (skill, ice) = (tag(&w, "Ability.Skill"), tag(&w, "Ability.Skill.Ice"));
    frame(&mut w, |w| {
        for h in [pe, pa, ni] {
            w.try_activate(h).unwrap();
        }
    });
    let out =
        frame(&mut w, |w| w.cancel_abilities_matching(hero, &set(&[skill]), &set(&[ice]), None));
    assert_eq!(ended(&out), vec![(pe, true)]);
    let out = frame(&mut w, |w| {
        w.cancel_abilities_matching(hero, &set(&[skill]), &TagSet::EMPTY, Some(pa))
    });
    assert!(ended(&out).is_empty(), "the only match is ignored");
    let out = frame(&mut w, |w| w.cancel_all_abilities(hero, Some(ni)));
    assert_eq!(ended(&out), vec![(pa, true)]);
    assert!(w.is_ability_active(ni));
    let out = frame(&mut w, |w| {
        w.try_activate(pe).unwrap();
        w.cancel_all_abilities(hero, None);
    });
    assert_eq!(ended(&out), vec![(pe, true), (ni, true)]);
    assert_eq!(w.tag_count_exact(hero, casting), 0);
}

#[test]
fn f_ga_10_a_behaviour_ends_or_cancels_itself_after_it_returns() {
    let mut w = arena(
        r#"(abilities: {
            "Quick": (tags: ["Ability.Skill.Fire"], behaviour: "Script"),
            "Abort": (tags: ["Ability.Skill.Ice"], behaviour: "Script"),
        })"#,
    );
    let hero = actor(&mut w);
    let quick = grant(&mut w, hero, "Quick");
    let abort = grant(&mut w, hero, "Abort");
    plan(ab(&w, "Quick"), &[Act::End, Act::Probe(quick)]);
    plan(ab(&w, "Abort"), &[Act::Cancel, Act::Probe(abort)]);
    let out = frame(&mut w, |w| {
        w.try_activate(quick).unwrap();
        w.try_activate(abort).unwrap();
    });
    assert_eq!(ended(&out), vec![(quick, false), (abort, true)]);
    let probes: Vec<Rec> = log().into_iter().filter(|r| matches!(r, Rec::Probe { .. })).collect();
    assert_eq!(
        probes,
        vec![
            Rec::Probe { other: quick, granted: true, active: true },
            Rec::Probe { other: abort, granted: true, active: true },
        ]
    );
    assert_eq!(ends_of(quick), vec![(0, false)]);
    assert_eq!(ends_of(abort), vec![(0, true)]);
}

// ---------------------------------------------------------------------------------------------
// F-GA-11 Passive abilities
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_11_passive_abilities_activate_when_granted_and_on_avatar_change() {
    let mut w = arena(
        r#"(
        effects: { "GrantAura": (duration: Infinite,
                                 granted_abilities: [(ability: "Aura")]) },
        abilities: {
            "Regen": (tags: ["Ability.Passive"], passive: true, behaviour: "Script"),
            "Aura": (tags: ["Ability.Passive"], passive: true, behaviour: "Script"),
        },
    )"#,
    );
    let regen_def = ab(&w, "Regen");
    let hero = actor(&mut w);
    run_through(&mut w, 2);
    let mut regen = AbilityHandle::NONE;
    let out = frame(&mut w, |w| regen = w.grant_ability(hero, regen_def, 1).unwrap());
    assert_eq!(
        &out.ability_events[..2],
        &[
            AbilityEvent::Granted { handle: regen, def: regen_def },
            AbilityEvent::Activated { handle: regen, def: regen_def, serial: 1, trigger: None }
        ]
    );
    assert_eq!(activations_of(regen), vec![(3, 1)]);
    // Granted between frames, it is active when the call returns.
    let other = actor(&mut w);
    let h = w.grant_ability(other, regen_def, 1).unwrap();
    assert!(w.is_ability_active(h));
    // An effect-granted passive activates with the grant.
    frame(&mut w, |w| {
        apply(w, "GrantAura", hero, hero);
    });
    let aura = w.find_ability(hero, ab(&w, "Aura")).unwrap();
    assert!(w.is_ability_active(aura));
    // It never ends on its own.
    run_through(&mut w, 200);
    assert!(w.is_ability_active(regen) && w.is_ability_active(aura));
    assert!(ends_of(regen).is_empty());
    // A new avatar re-activates passives that are not active, and only those.
    let body = w.spawn().unwrap();
    frame(&mut w, |w| w.cancel_ability(regen));
    assert!(!w.is_ability_active(regen));
    let out = frame(&mut w, |w| w.set_avatar(hero, body));
    assert_eq!(activated(&out), vec![(regen, 2, None)]);
    assert!(failed(&out).is_empty(), "the active Aura is left alone");
    assert_eq!(w.avatar(hero), body);
    let seen_avatar = log().into_iter().rev().find_map(|r| match r {
        Rec::Activated { h, avatar, .. } if h == regen => Some(avatar),
        _ => None,
    });
    assert_eq!(seen_avatar, Some(body));
}

// ---------------------------------------------------------------------------------------------
// F-GA-12 Triggers and events
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_12_event_triggers_match_hierarchically_in_slot_order_with_data() {
    let mut w = arena(
        r#"(abilities: {
            "OnHit": (tags: ["Ability.Trigger"], triggers: [Event("Event.Hit")], behaviour: "Script"),
            "OnHeavy": (tags: ["Ability.Trigger"], triggers: [Event("Event.Hit.Heavy")],
                        behaviour: "Script"),
            "OnPing": (tags: ["Ability.Trigger"], triggers: [Event("Event.Ping")], behaviour: "Script"),
        })"#,
    );
    let (hit, heavy, ping) =
        (tag(&w, "Event.Hit"), tag(&w, "Event.Hit.Heavy"), tag(&w, "Event.Ping"));
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let on_hit = grant(&mut w, hero, "OnHit");
    let on_heavy = grant(&mut w, hero, "OnHeavy");
    let on_ping = grant(&mut w, hero, "OnPing");
    // OnHit's behaviour sends a ping: queued, it runs after the behaviour returns.
    plan(ab(&w, "OnHit"), &[Act::Send(hero, ping), Act::Probe(on_ping)]);
    let ev = EventData::new(heavy, enemy, hero).with_magnitude(int(7));
    let out = frame(&mut w, |w| w.send_event(hero, ev));
    assert_eq!(
        activated(&out),
        vec![(on_hit, 1, Some(heavy)), (on_heavy, 1, Some(heavy)), (on_ping, 1, Some(ping))]
    );
    assert!(log().contains(&Rec::Probe { other: on_ping, granted: true, active: false }));
    let events: Vec<(u32, Entity, TagId, Entity)> = out
        .gameplay_events
        .iter()
        .map(|g| (g.frame, g.to, g.data.tag, g.data.instigator))
        .collect();
    assert_eq!(events, vec![(0, hero, heavy, enemy), (0, hero, ping, hero)]);
    let seen: Vec<(AbilityHandle, Option<EventData>)> = log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Activated { h, event, .. } => Some((h, event)),
            _ => None,
        })
        .collect();
    assert_eq!(seen[0], (on_hit, Some(ev)));
    assert_eq!(seen[1], (on_heavy, Some(ev)));
    assert_eq!(seen[2].1.map(|e| (e.tag, e.instigator, e.target)), Some((ping, hero, hero)));
    // The parent event only reaches the parent trigger; nothing fails for the others.
    let out = frame(&mut w, |w| {
        w.cancel_all_abilities(hero, None);
        w.send_event(hero, EventData::new(hit, enemy, hero));
    });
    assert_eq!(activated(&out), vec![(on_hit, 2, Some(hit)), (on_ping, 2, Some(ping))]);
    assert!(failed(&out).is_empty());
    // Events to another entity trigger nothing here.
    let out = frame(&mut w, |w| {
        w.cancel_all_abilities(hero, None);
        w.send_event(enemy, EventData::new(heavy, hero, enemy));
    });
    assert!(activated(&out).is_empty());
    assert_eq!(out.gameplay_events.len(), 1);
}

#[test]
fn f_ga_12_tag_added_and_tag_present_triggers() {
    let mut w = arena(
        r#"(abilities: {
            "OnAdd": (tags: ["Ability.Trigger"], triggers: [TagAdded("Trigger.Added")],
                      behaviour: "Script"),
            "WhilePresent": (tags: ["Ability.Trigger"], triggers: [TagPresent("Trigger.Present")],
                             behaviour: "Script"),
        })"#,
    );
    let (added, present) = (tag(&w, "Trigger.Added"), tag(&w, "Trigger.Present"));
    let hero = actor(&mut w);
    let on_add = grant(&mut w, hero, "OnAdd");
    let while_present = grant(&mut w, hero, "WhilePresent");
    let mut log_frames = Vec::new();
    for f in 0..=8u32 {
        let out = frame(&mut w, |w| match f {
            1 => w.add_loose_tag(hero, added),
            2 => w.remove_loose_tag(hero, added),
            3 => w.add_loose_tag(hero, present),
            4 => w.add_loose_tag(hero, present),
            5 => w.remove_loose_tag(hero, present),
            7 => w.remove_loose_tag(hero, present),
            _ => {}
        });
        for (h, s, _) in activated(&out) {
            log_frames.push(("activated", f, h, s));
        }
        for (h, c) in ended(&out) {
            log_frames.push(if c { ("cancelled", f, h, 0) } else { ("ended", f, h, 0) });
        }
        assert!(failed(&out).is_empty(), "frame {f}: a count going 1 → 2 is not an addition");
        match f {
            2 => assert!(w.is_ability_active(on_add), "TagAdded does not end on removal"),
            5 => assert!(w.is_ability_active(while_present), "the tag is still present once"),
            _ => {}
        }
    }
    assert_eq!(
        log_frames,
        vec![
            ("activated", 1, on_add, 1),
            ("activated", 3, while_present, 1),
            ("cancelled", 7, while_present, 0)
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// F-GA-13 Input binding, F-GA-18 same-frame fairness
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_13_pressed_edges_activate_and_active_abilities_get_input_edges() {
    let mut w = arena(
        r#"(abilities: {
            "Charge": (tags: ["Ability.Skill.Fire"], input: 0, behaviour: "Script"),
            "Manual": (tags: ["Ability.Skill.Ice"], input: 1, activate_on_input: false,
                       behaviour: "Script"),
        })"#,
    );
    let hero = actor(&mut w);
    w.bind_player(0, hero);
    assert_eq!(w.player_owner(0), Some(hero));
    assert_eq!(w.player_owner(1), None);
    let charge = grant(&mut w, hero, "Charge");
    let manual = grant(&mut w, hero, "Manual");
    plan(
        ab(&w, "Charge"),
        &[
            Act::Spawn(0, TaskSpec::WaitInput(InputEdge::Released)),
            Act::Spawn(1, TaskSpec::WaitInput(InputEdge::Pressed)),
        ],
    );
    let inputs: [u16; 7] = [0, 1, 1, 0, 1, 2, 0];
    let mut held = Vec::new();
    for (f, bits) in inputs.iter().enumerate() {
        let out = frame_in(&mut w, &[pad(*bits)], |_| {});
        held.push((
            w.ability(charge).unwrap().input_held(),
            w.ability(manual).unwrap().input_held(),
        ));
        if f == 1 {
            assert_eq!(activated(&out), vec![(charge, 1, None)]);
        } else {
            assert!(activated(&out).is_empty(), "frame {f}");
            assert!(failed(&out).is_empty(), "frame {f}: no activation attempt");
        }
    }
    assert_eq!(
        held,
        vec![
            (false, false),
            (true, false),
            (true, false),
            (false, false),
            (true, false),
            (false, true),
            (false, false)
        ]
    );
    let edges: Vec<(u32, InputEdge)> = log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Input { frame, h, edge } if h == charge => Some((frame, edge)),
            _ => None,
        })
        .collect();
    assert_eq!(
        edges,
        vec![(3, InputEdge::Released), (4, InputEdge::Pressed), (5, InputEdge::Released)],
        "the activating press is not also an input edge"
    );
    let reports = task_reports(charge);
    assert_eq!(
        &reports[..2],
        &[
            (3, 0, TaskEvent::Input(InputEdge::Released)),
            (4, 1, TaskEvent::Input(InputEdge::Pressed))
        ]
    );
    assert!(!w.is_ability_active(manual));
    assert!(w.last_activation(manual).is_none(), "activate_on_input: false never tries");
    // Manual still activates explicitly, then receives its input edges.
    frame(&mut w, |w| assert_eq!(w.try_activate(manual), ok(1)));
    frame_in(&mut w, &[pad(2)], |_| {});
    assert!(log().contains(&Rec::Input { frame: 8, h: manual, edge: InputEdge::Pressed }));
}

#[test]
fn f_ga_13_confirm_and_cancel_go_to_waiting_tasks_not_to_abilities() {
    let mut w = arena(
        r#"(abilities: {
            "Aim": (tags: ["Ability.Skill.Fire"], input: 0, behaviour: "Script"),
            "Other": (tags: ["Ability.Skill.Ice"], input: 1, behaviour: "Script"),
        })"#,
    );
    let hero = actor(&mut w);
    w.bind_player(0, hero);
    let aim = grant(&mut w, hero, "Aim");
    let other = grant(&mut w, hero, "Other");
    plan(ab(&w, "Aim"), &[Act::Spawn(0, TaskSpec::WaitConfirmCancel)]);
    frame_in(&mut w, &[pad(1)], |_| {});
    let out = frame_in(&mut w, &[pad(1 | CONFIRM)], |_| {});
    assert_eq!(task_reports(aim), vec![(1, 0, TaskEvent::Confirmed)]);
    assert!(activated(&out).is_empty() && failed(&out).is_empty());
    assert!(!log().iter().any(|r| matches!(r, Rec::Input { .. })), "confirm is not an input edge");
    assert!(!w.is_ability_active(other));
    // Cancel reaches a new waiting task.
    frame_in(&mut w, &[pad(0)], |w| {
        w.end_ability(aim);
    });
    frame_in(&mut w, &[pad(1)], |_| {});
    frame_in(&mut w, &[pad(1 | CANCEL)], |_| {});
    assert_eq!(task_reports(aim), vec![(1, 0, TaskEvent::Confirmed), (4, 0, TaskEvent::Cancelled)]);
}

#[test]
fn f_ga_18_same_frame_activations_resolve_in_player_handle_order() {
    let mut w = arena(
        r#"(abilities: { "Charge": (tags: ["Ability.Skill.Fire"], input: 0, behaviour: "Script") })"#,
    );
    let a = actor(&mut w);
    let b = actor(&mut w);
    assert!(a.index < b.index);
    // Player 0 drives the higher entity index, player 1 the lower one.
    w.bind_player(0, b);
    w.bind_player(1, a);
    let ha = grant(&mut w, a, "Charge");
    let hb = grant(&mut w, b, "Charge");
    let out = frame_in(&mut w, &[pad(1), pad(1)], |_| {});
    assert_eq!(activated(&out), vec![(hb, 1, None), (ha, 1, None)]);
    assert!(w.is_ability_active(ha) && w.is_ability_active(hb));
    // Only player 1 presses: only its owner activates.
    let mut w2 = arena(
        r#"(abilities: { "Charge": (tags: ["Ability.Skill.Fire"], input: 0, behaviour: "Script") })"#,
    );
    let a2 = actor(&mut w2);
    let b2 = actor(&mut w2);
    w2.bind_player(0, a2);
    w2.bind_player(1, b2);
    grant(&mut w2, a2, "Charge");
    let hb2 = grant(&mut w2, b2, "Charge");
    let out = frame_in(&mut w2, &[pad(0), pad(1)], |_| {});
    assert_eq!(activated(&out), vec![(hb2, 1, None)]);
}
