//! Ability tasks: the model, ticking, use and cancellation (F-AT-01, F-AT-03, F-AT-04) and the
//! built-in tasks (F-AT-02).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-AT-01 Model, F-AT-03 Ticking, F-AT-04 Use and cancellation
// ---------------------------------------------------------------------------------------------

#[test]
fn f_at_01_tasks_are_pool_records_with_generational_handles_and_a_capacity() {
    let mut w = build(WORKERS, WorldConfig { max_tasks: 3, ..WorldConfig::default() });
    let ping = tag(&w, "Event.Ping");
    let hero = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    let helper = grant(&mut w, hero, "Helper");
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(0, TaskSpec::WaitFrames(5)),
            Act::Spawn(1, TaskSpec::WaitEvent { tag: ping, once: false }),
            Act::Spawn(2, TaskSpec::Repeat { count: 0, every: 1 }),
            Act::Spawn(3, TaskSpec::WaitFrames(1)),
        ],
    );
    plan(ab(&w, "Helper"), &[Act::Spawn(7, TaskSpec::WaitFrames(1))]);
    frame(&mut w, |w| assert_eq!(w.try_activate(worker), ok(1)));
    assert!(log().contains(&Rec::Spawned {
        h: worker,
        user: 3,
        result: Err(ActivationFailure::TaskCapacity)
    }));
    let listed: Vec<(TaskHandle, u16, Entity, u32, u32)> = w
        .tasks_of(worker)
        .map(|(t, r)| (t, r.user_id, r.owner, r.activation_serial, r.started))
        .collect();
    let (t0, t1, t2) = (spawned(worker, 0)[0], spawned(worker, 1)[0], spawned(worker, 2)[0]);
    assert_eq!(
        listed,
        vec![(t0, 0, hero, 1, 0), (t1, 1, hero, 1, 0), (t2, 2, hero, 1, 0)],
        "pool order"
    );
    assert!(w.tasks_of(worker).all(|(_, r)| r.ability() == worker && r.is_live()));
    assert!(w.is_task_live(t0) && w.task(t0).is_some());
    // Frame 5: the wait finishes; its slot is freed at delivery.
    run_through(&mut w, 4);
    let out = frame(&mut w, |_| {});
    assert_eq!(tasks_ended(&out), vec![t0]);
    assert!(!w.is_task_live(t0) && w.task(t0).is_none());
    assert!(task_reports(worker).contains(&(5, 0, TaskEvent::Finished)));
    // The freed slot is reused under a new generation; the old handle stays dead.
    frame(&mut w, |w| assert_eq!(w.try_activate(helper), ok(1)));
    let t7 = spawned(helper, 7)[0];
    assert_eq!(t7.slot, t0.slot);
    assert_ne!(t7.generation, t0.generation);
    assert!(!w.is_task_live(t0) && w.is_task_live(t7));
    w.end_task(t0);
    assert!(w.is_task_live(t7), "ending a stale handle ends nothing");
    // Results came to on_task with the spawner's user ids.
    let ticks: Vec<(u32, TaskEvent)> =
        task_reports(worker).into_iter().filter(|r| r.1 == 2).map(|r| (r.0, r.2)).collect();
    assert_eq!(ticks, (1..=6).map(|n| (n, TaskEvent::Tick(n))).collect::<Vec<_>>());
}

#[test]
fn f_at_03_tasks_tick_once_per_frame() {
    let mut w = arena(WORKERS);
    let hero = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    plan(ab(&w, "Worker"), &[Act::Spawn(0, TaskSpec::Repeat { count: 0, every: 1 })]);
    run_through(&mut w, 9);
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    run_through(&mut w, 20);
    let ticks: Vec<(u32, TaskEvent)> =
        task_reports(worker).into_iter().map(|r| (r.0, r.2)).collect();
    assert_eq!(ticks, (1..=10).map(|n| (10 + n, TaskEvent::Tick(n))).collect::<Vec<_>>());
}

#[test]
fn f_at_04_end_task_and_ending_the_ability_end_tasks() {
    let mut w = arena(WORKERS);
    let ping = tag(&w, "Event.Ping");
    let hero = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    let wdef = ab(&w, "Worker");
    plan(
        wdef,
        &[
            Act::Spawn(0, TaskSpec::Repeat { count: 0, every: 2 }),
            Act::Spawn(1, TaskSpec::WaitEvent { tag: ping, once: false }),
            Act::Spawn(2, TaskSpec::WaitFrames(100)),
        ],
    );
    // The behaviour ends the repeat from its own report at the second tick.
    on_task_plan(wdef, 0, Act::EndTask(0));
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    let (t0, t1, t2) = (spawned(worker, 0)[0], spawned(worker, 1)[0], spawned(worker, 2)[0]);
    let out = frame(&mut w, |_| {});
    assert!(tasks_ended(&out).is_empty());
    let out = frame(&mut w, |_| {});
    assert_eq!(tasks_ended(&out), vec![t0], "end_task from on_task");
    run_through(&mut w, 6);
    assert_eq!(task_reports(worker), vec![(2, 0, TaskEvent::Tick(1))]);
    // From outside.
    let out = frame(&mut w, |w| w.end_task(t1));
    assert_eq!(tasks_ended(&out), vec![t1]);
    let out = frame(&mut w, |w| w.send_event(hero, EventData::new(ping, hero, hero)));
    assert!(task_reports(worker).iter().all(|r| r.1 != 1), "an ended task never reports");
    assert_eq!(out.gameplay_events.len(), 1);
    // Ending the ability ends what is left, and a new activation's tasks are separate.
    let out = frame(&mut w, |w| w.end_ability(worker));
    assert_eq!(tasks_ended(&out), vec![t2]);
    assert_eq!(w.tasks_of(worker).count(), 0);
    frame(&mut w, |w| assert_eq!(w.try_activate(worker), ok(2)));
    assert_eq!(w.tasks_of(worker).count(), 3);
    assert!(w.tasks_of(worker).all(|(_, r)| r.activation_serial == 2));
}

#[test]
fn f_at_04_despawned_entities_are_safe_for_running_tasks() {
    let mut w = arena(WORKERS);
    let ping = tag(&w, "Event.Ping");
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    let burn = handle(apply(&mut w, "Burn", hero, enemy));
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(0, TaskSpec::WaitEffectRemoved(burn)),
            Act::Spawn(1, TaskSpec::WaitEvent { tag: ping, once: false }),
            Act::Spawn(2, TaskSpec::Repeat { count: 0, every: 1 }),
        ],
    );
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    // The watched effect's target despawns: the effect is removed and the task reports it.
    let out = frame(&mut w, |w| w.despawn(enemy));
    assert!(task_reports(worker).contains(&(1, 0, TaskEvent::EffectRemoved(burn))));
    assert_eq!(tasks_ended(&out), vec![spawned(worker, 0)[0]]);
    // The owner despawns: its abilities end and are removed with their tasks.
    let (t1, t2) = (spawned(worker, 1)[0], spawned(worker, 2)[0]);
    let out = frame(&mut w, |w| w.despawn(hero));
    let wdef = ab(&w, "Worker");
    assert_eq!(
        out.ability_events,
        vec![
            AbilityEvent::TaskEnded { task: t1, ability: worker },
            AbilityEvent::TaskEnded { task: t2, ability: worker },
            AbilityEvent::Ended { handle: worker, def: wdef, was_cancelled: true },
            AbilityEvent::Removed { handle: worker, def: wdef },
        ]
    );
    assert!(!w.is_task_live(t1) && !w.is_task_live(t2));
    let reports = task_reports(worker).len();
    run_through(&mut w, 10);
    assert_eq!(task_reports(worker).len(), reports, "nothing reports after the despawn");
    // A new actor in the freed slot starts clean.
    let newcomer = actor(&mut w);
    assert_eq!(newcomer.index, hero.index);
    assert_eq!(w.abilities(newcomer).count(), 0);
    assert_eq!(w.tasks_of(worker).count(), 0);
}

// ---------------------------------------------------------------------------------------------
// F-AT-02 Built-in tasks
// ---------------------------------------------------------------------------------------------

/// A world with one `Worker` ability on `hero` whose activation spawns `tasks` (user ids 0..).
fn worker_world(tasks: &[TaskSpec]) -> (World<PadProbeGame>, Entity, AbilityHandle) {
    let mut w = arena(WORKERS);
    let hero = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    let acts: Vec<Act> = tasks.iter().enumerate().map(|(i, t)| Act::Spawn(i as u16, *t)).collect();
    plan(ab(&w, "Worker"), &acts);
    (w, hero, worker)
}

#[test]
fn f_at_02_wait_frames_finishes_in_p5_of_spawn_frame_plus_n() {
    let mut w = arena(
        r#"(abilities: {
            "Worker": (tags: ["Ability.Skill.Fire"], behaviour: "Script"),
            "Pressed": (tags: ["Ability.Skill.Ice"], input: 0, behaviour: "Script"),
        })"#,
    );
    let health = attr(&w, "Health");
    let hero = actor(&mut w);
    w.bind_player(0, hero);
    let worker = grant(&mut w, hero, "Worker");
    let pressed = grant(&mut w, hero, "Pressed");
    let (wdef, pdef) = (ab(&w, "Worker"), ab(&w, "Pressed"));
    plan(wdef, &[Act::Spawn(0, TaskSpec::WaitFrames(5))]);
    on_task_plan(wdef, 0, Act::Apply(eff(&w, "Damage"), Entity::NONE));
    plan(pdef, &[Act::Spawn(0, TaskSpec::WaitFrames(3))]);
    run_through(&mut w, 9);
    // Spawned in P6 of frame 10.
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    let t = spawned(worker, 0)[0];
    let mut health_in_p6 = Vec::new();
    for f in 11..=15u32 {
        let out = frame(&mut w, |w| health_in_p6.push((f, w.attr(hero, health).unwrap())));
        assert_eq!(tasks_ended(&out), if f == 15 { vec![t] } else { vec![] }, "frame {f}");
    }
    assert_eq!(task_reports(worker), vec![(15, 0, TaskEvent::Finished)]);
    // The report (and the damage its handler applied) happened before P6 of frame 15.
    assert_eq!(health_in_p6.last(), Some(&(15, int(80))));
    assert_eq!(health_in_p6[3], (14, int(100)));
    // Spawned in P4 (an input activation) of frame 20: finishes in P5 of frame 23.
    run_through(&mut w, 19);
    frame_in(&mut w, &[pad(1)], |_| {});
    run_through(&mut w, 25);
    assert_eq!(task_reports(pressed), vec![(23, 0, TaskEvent::Finished)]);
}

#[test]
fn f_at_02_repeat_ticks_every_n_frames_then_finishes() {
    let (mut w, _, worker) = worker_world(&[
        TaskSpec::Repeat { count: 3, every: 4 },
        TaskSpec::Repeat { count: 0, every: 2 },
    ]);
    let mut ended_frames = Vec::new();
    for f in 0..=15u32 {
        let out = frame(&mut w, |w| {
            if f == 0 {
                w.try_activate(worker).unwrap();
            }
            if f == 7 {
                let t = spawned(worker, 1)[0];
                w.end_task(t);
            }
        });
        if !tasks_ended(&out).is_empty() {
            ended_frames.push(f);
        }
    }
    assert_eq!(
        task_reports(worker),
        vec![
            (2, 1, TaskEvent::Tick(1)),
            (4, 0, TaskEvent::Tick(1)),
            (4, 1, TaskEvent::Tick(2)),
            (6, 1, TaskEvent::Tick(3)),
            (8, 0, TaskEvent::Tick(2)),
            (12, 0, TaskEvent::Tick(3)),
            (12, 0, TaskEvent::Finished),
        ]
    );
    assert_eq!(ended_frames, vec![7, 12]);
}

#[test]
fn f_at_02_wait_event_once_and_many() {
    let mut w = arena(WORKERS);
    let (hit, heavy, ping) =
        (tag(&w, "Event.Hit"), tag(&w, "Event.Hit.Heavy"), tag(&w, "Event.Ping"));
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(0, TaskSpec::WaitEvent { tag: hit, once: true }),
            Act::Spawn(1, TaskSpec::WaitEvent { tag: hit, once: false }),
        ],
    );
    let e_heavy = EventData::new(heavy, enemy, hero).with_magnitude(int(3));
    let e_ping = EventData::new(ping, enemy, hero);
    let e_hit = EventData::new(hit, enemy, hero).with_magnitude(int(4));
    let mut ends = Vec::new();
    for f in 0..=5u32 {
        let out = frame(&mut w, |w| match f {
            0 => w.try_activate(worker).map(|_| ()).unwrap(),
            2 => w.send_event(hero, e_heavy),
            3 => w.send_event(hero, e_ping),
            4 => w.send_event(hero, e_hit),
            5 => w.send_event(enemy, e_hit),
            _ => {}
        });
        ends.extend(tasks_ended(&out).into_iter().map(|t| (f, t)));
    }
    assert_eq!(
        task_reports(worker),
        vec![
            (2, 0, TaskEvent::Event(e_heavy)),
            (2, 1, TaskEvent::Event(e_heavy)),
            (4, 1, TaskEvent::Event(e_hit)),
        ]
    );
    assert_eq!(ends, vec![(2, spawned(worker, 0)[0])], "once: ends after the first");
    assert!(w.is_task_live(spawned(worker, 1)[0]));
}

#[test]
fn f_at_02_wait_tag_added_and_removed_report_at_once_when_already_true() {
    let mut w = arena(WORKERS);
    let (ready, stunned) = (tag(&w, "State.Ready"), tag(&w, "State.Stunned"));
    let hero = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    w.add_loose_tag(hero, ready);
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(0, TaskSpec::WaitTagAdded(ready)),
            Act::Spawn(1, TaskSpec::WaitTagRemoved(stunned)),
            Act::Spawn(2, TaskSpec::WaitTagAdded(stunned)),
            Act::Spawn(3, TaskSpec::WaitTagRemoved(ready)),
        ],
    );
    let mut ends = Vec::new();
    for f in 0..=8u32 {
        let out = frame(&mut w, |w| match f {
            1 => w.try_activate(worker).map(|_| ()).unwrap(),
            5 => w.add_loose_tag(hero, stunned),
            7 => w.remove_loose_tag(hero, ready),
            _ => {}
        });
        ends.extend(tasks_ended(&out).into_iter().map(|t| (f, t)));
    }
    assert_eq!(
        task_reports(worker),
        vec![
            (1, 0, TaskEvent::Tag(true)),
            (1, 1, TaskEvent::Tag(false)),
            (5, 2, TaskEvent::Tag(true)),
            (7, 3, TaskEvent::Tag(false)),
        ]
    );
    let s = |u| spawned(worker, u)[0];
    assert_eq!(ends, vec![(1, s(0)), (1, s(1)), (5, s(2)), (7, s(3))]);
}

#[test]
fn f_at_02_wait_tag_query_reports_when_the_outcome_is_reached() {
    let mut w = arena(WORKERS);
    let (ready, stunned) = (tag(&w, "State.Ready"), tag(&w, "State.Stunned"));
    let hero = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    let wdef = ab(&w, "Worker");
    plan(
        wdef,
        &[Act::Spawn(
            0,
            TaskSpec::WaitTagQuery { all: Some(ready), none: Some(stunned), when: true },
        )],
    );
    for f in 0..=10u32 {
        frame(&mut w, |w| match f {
            0 => w.try_activate(worker).map(|_| ()).unwrap(),
            3 => w.add_loose_tag(hero, stunned),
            4 => w.add_loose_tag(hero, ready),
            6 => w.remove_loose_tag(hero, stunned),
            7 => {
                // A query already false when spawned waits for... false: reported at once;
                // one already true waits for the change.
                plan(
                    wdef,
                    &[
                        Act::Spawn(
                            1,
                            TaskSpec::WaitTagQuery { all: Some(ready), none: None, when: false },
                        ),
                        Act::Spawn(
                            2,
                            TaskSpec::WaitTagQuery { all: None, none: Some(stunned), when: false },
                        ),
                    ],
                );
                w.end_ability(worker);
                w.try_activate(worker).map(|_| ()).unwrap();
            }
            9 => w.remove_loose_tag(hero, ready),
            _ => {}
        });
    }
    assert_eq!(
        task_reports(worker),
        vec![(6, 0, TaskEvent::Query(true)), (9, 1, TaskEvent::Query(false))]
    );
    assert!(w.is_task_live(spawned(worker, 2)[0]), "Stunned never came back");
}

#[test]
fn f_at_02_wait_attribute_reports_when_the_comparison_holds() {
    let mut w = arena(WORKERS);
    let (health, mana) = (attr(&w, "Health"), attr(&w, "Mana"));
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(
                0,
                TaskSpec::WaitAttribute { attr: health, cmp: AttrCmp::Lt, value: int(50) },
            ),
            Act::Spawn(1, TaskSpec::WaitAttribute { attr: mana, cmp: AttrCmp::Ge, value: int(50) }),
            Act::Spawn(2, TaskSpec::WaitAttribute { attr: mana, cmp: AttrCmp::Eq, value: int(7) }),
        ],
    );
    for f in 0..=6u32 {
        frame(&mut w, |w| match f {
            1 => w.try_activate(worker).map(|_| ()).unwrap(),
            3 => {
                apply(w, "Damage", enemy, hero);
            }
            4 => w.set_base(hero, health, int(40)),
            5 => w.set_base(hero, mana, int(8)),
            6 => w.set_base(hero, mana, int(7)),
            _ => {}
        });
    }
    assert_eq!(w.attr(hero, health), Some(int(40)));
    assert_eq!(
        task_reports(worker),
        vec![
            (1, 1, TaskEvent::Attribute(int(50))),
            (4, 0, TaskEvent::Attribute(int(40))),
            (6, 2, TaskEvent::Attribute(int(7))),
        ]
    );
    assert_eq!(w.tasks_of(worker).count(), 0, "each reports once");
}

#[test]
fn f_at_02_wait_input_reports_the_next_edge_once() {
    let mut w = arena(
        r#"(abilities: { "Charge": (tags: ["Ability.Skill.Fire"], input: 0, behaviour: "Script") })"#,
    );
    let hero = actor(&mut w);
    w.bind_player(0, hero);
    let charge = grant(&mut w, hero, "Charge");
    plan(
        ab(&w, "Charge"),
        &[
            Act::Spawn(0, TaskSpec::WaitInput(InputEdge::Released)),
            Act::Spawn(1, TaskSpec::WaitInput(InputEdge::Pressed)),
        ],
    );
    let mut ends = Vec::new();
    for (f, bits) in [1u16, 1, 0, 1, 0, 1, 0].iter().enumerate() {
        let out = frame_in(&mut w, &[pad(*bits)], |_| {});
        ends.extend(tasks_ended(&out).into_iter().map(|t| (f as u32, t)));
    }
    assert_eq!(
        task_reports(charge),
        vec![
            (2, 0, TaskEvent::Input(InputEdge::Released)),
            (3, 1, TaskEvent::Input(InputEdge::Pressed))
        ],
        "each task reports the next edge of its kind, once"
    );
    assert_eq!(ends, vec![(2, spawned(charge, 0)[0]), (3, spawned(charge, 1)[0])]);
}

#[test]
fn f_at_02_wait_confirm_cancel_reports_once() {
    let (mut w, hero, worker) = worker_world(&[TaskSpec::WaitConfirmCancel]);
    w.bind_player(0, hero);
    let mut ends = Vec::new();
    for (f, bits) in [0u16, CONFIRM, 0, CONFIRM, CANCEL].iter().enumerate() {
        let out = frame_in(&mut w, &[pad(*bits)], |w| {
            if f == 0 {
                w.try_activate(worker).unwrap();
            }
        });
        ends.extend(tasks_ended(&out).into_iter().map(|t| (f as u32, t)));
    }
    assert_eq!(task_reports(worker), vec![(1, 0, TaskEvent::Confirmed)]);
    assert_eq!(ends, vec![(1, spawned(worker, 0)[0])]);
    // A cancel-first task.
    let (mut w, hero, worker) = worker_world(&[TaskSpec::WaitConfirmCancel]);
    w.bind_player(0, hero);
    frame_in(&mut w, &[pad(0)], |w| w.try_activate(worker).map(|_| ()).unwrap());
    frame_in(&mut w, &[pad(CANCEL)], |_| {});
    frame_in(&mut w, &[pad(CONFIRM)], |_| {});
    assert_eq!(task_reports(worker), vec![(1, 0, TaskEvent::Cancelled)]);
}

#[test]
fn f_at_02_wait_effect_added_removed_and_stack_change() {
    let mut w = arena(WORKERS);
    let burning = tag(&w, "State.Burning");
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    let helper = grant(&mut w, hero, "Helper");
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(0, TaskSpec::WaitEffectAdded(Some(burning))),
            Act::Spawn(1, TaskSpec::WaitEffectAdded(None)),
        ],
    );
    let mut burn = EffectHandle::NONE;
    let mut buff = EffectHandle::NONE;
    for f in 0..=9u32 {
        frame(&mut w, |w| match f {
            0 => w.try_activate(worker).map(|_| ()).unwrap(),
            1 => {
                apply(w, "Heal", enemy, hero);
            }
            2 => buff = handle(apply(w, "Buff", enemy, hero)),
            3 => burn = handle(apply(w, "Burn", enemy, hero)),
            4 => {
                let hdef = ab(w, "Helper");
                plan(
                    hdef,
                    &[
                        Act::Spawn(0, TaskSpec::WaitEffectRemoved(burn)),
                        Act::Spawn(1, TaskSpec::WaitStackChange(burn)),
                        Act::Spawn(2, TaskSpec::WaitEffectRemoved(buff)),
                    ],
                );
                w.try_activate(helper).map(|_| ()).unwrap();
            }
            5 | 6 => {
                apply(w, "Burn", enemy, hero);
            }
            8 => w.remove_effect(burn),
            _ => {}
        });
    }
    assert_eq!(
        task_reports(worker),
        vec![(2, 1, TaskEvent::EffectAdded(buff)), (3, 0, TaskEvent::EffectAdded(burn))],
        "instant effects are never added; the tag filter applies"
    );
    assert_eq!(
        task_reports(helper),
        vec![
            (5, 1, TaskEvent::StackChanged { old: 1, new: 2 }),
            (6, 1, TaskEvent::StackChanged { old: 2, new: 3 }),
            (8, 0, TaskEvent::EffectRemoved(burn)),
            (8, 1, TaskEvent::EffectRemoved(burn)),
        ]
    );
    // Buff expires at frame 2 + 40.
    run_through(&mut w, 42);
    assert_eq!(task_reports(helper).last(), Some(&(42, 2, TaskEvent::EffectRemoved(buff))));
    assert_eq!(w.tasks_of(helper).count(), 0);
}

#[test]
fn f_at_02_wait_damage_reports_executions_lowering_the_attribute() {
    let mut w = arena(
        r#"(
        effects: { "Bleed": (duration: Frames(20), period: Frames(5),
                             modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -3))]) },
        abilities: { "Worker": (tags: ["Ability.Skill.Fire"], behaviour: "Script") },
    )"#,
    );
    let health = attr(&w, "Health");
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let other = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(0, TaskSpec::WaitDamage { attr: health, once: false }),
            Act::Spawn(1, TaskSpec::WaitDamage { attr: health, once: true }),
        ],
    );
    for f in 0..=12u32 {
        frame(&mut w, |w| match f {
            0 => w.try_activate(worker).map(|_| ()).unwrap(),
            2 => {
                apply(w, "Damage", enemy, hero);
            }
            3 => {
                apply(w, "Heal", enemy, hero);
            }
            4 => {
                apply(w, "Damage", other, hero);
                apply(w, "Damage", hero, enemy);
            }
            6 => {
                apply(w, "Bleed", other, hero);
            }
            _ => {}
        });
    }
    assert_eq!(
        task_reports(worker),
        vec![
            (2, 0, TaskEvent::Damaged { amount: int(20), instigator: enemy }),
            (2, 1, TaskEvent::Damaged { amount: int(20), instigator: enemy }),
            (4, 0, TaskEvent::Damaged { amount: int(20), instigator: other }),
            (11, 0, TaskEvent::Damaged { amount: int(3), instigator: other }),
        ]
    );
    assert_eq!(w.attr(hero, health), Some(int(100 - 20 + 5 - 20 - 3)));
}
