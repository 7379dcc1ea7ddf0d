//! Per-activation random streams (F-REC-04) and a rollback through running abilities, tasks
//! and timelines.

use super::*;

// ---------------------------------------------------------------------------------------------
// F-REC-04 Shared randomness
// ---------------------------------------------------------------------------------------------

fn dice_run(seed: u64, frames: u32) -> (World<PadProbeGame>, AbilityHandle, Vec<Rec>) {
    let mut w = build(
        r#"(abilities: { "Dice": (tags: ["Ability.Skill.Fire"], behaviour: "Script") })"#,
        WorldConfig { seed, ..WorldConfig::default() },
    );
    let hero = actor(&mut w);
    let dice = grant(&mut w, hero, "Dice");
    let d = ab(&w, "Dice");
    plan(d, &[Act::Random, Act::Spawn(0, TaskSpec::WaitFrames(1))]);
    on_task_plan(d, 0, Act::Random);
    on_task_plan(d, 0, Act::End);
    for f in 0..frames {
        frame(&mut w, |w| {
            if f.is_multiple_of(3) {
                w.try_activate(dice).unwrap();
            }
        });
    }
    let draws = log().into_iter().filter(|r| matches!(r, Rec::Random { .. })).collect();
    (w, dice, draws)
}

#[test]
fn f_rec_04_activation_random_streams_are_shared_and_per_activation() {
    let (w1, dice, a) = dice_run(7, 8);
    let (w2, _, b) = dice_run(7, 8);
    assert_eq!(a.len(), 6, "two draws per activation, three activations");
    assert_eq!(a, b, "identical worlds draw identical numbers");
    assert_eq!(w1.checksum(), w2.checksum());
    let draws: Vec<[u32; 3]> = a
        .iter()
        .map(|r| match r {
            Rec::Random { draws, unit, chance, h, .. } => {
                assert_eq!(*h, dice);
                assert!(draws[2] < 100);
                assert!(*unit >= Fx::ZERO && *unit < Fx::ONE);
                assert!(*chance, "chance(1) always succeeds");
                *draws
            }
            _ => unreachable!(),
        })
        .collect();
    let serials: Vec<u32> = a
        .iter()
        .map(|r| match r {
            Rec::Random { serial, .. } => *serial,
            _ => 0,
        })
        .collect();
    assert_eq!(serials, vec![1, 1, 2, 2, 3, 3]);
    // Activations differ, and a stream continues across frames within one activation.
    for i in 0..draws.len() {
        for j in i + 1..draws.len() {
            assert_ne!(draws[i], draws[j], "draw sets {i} and {j}");
        }
    }
    let (_, _, c) = dice_run(8, 8);
    assert_ne!(a, c, "another session seed, other numbers");
}

#[test]
fn f_rec_04_a_rollback_reproduces_the_same_draws() {
    let (mut w, dice, _) = dice_run(99, 2);
    let snap = w.snapshot();
    let mut first = Vec::new();
    for f in 2..8u32 {
        frame(&mut w, |w| {
            if f.is_multiple_of(3) {
                w.try_activate(dice).unwrap();
            }
        });
        first.push(w.checksum());
    }
    let draws_first: Vec<Rec> = log()
        .into_iter()
        .filter(|r| matches!(r, Rec::Random { serial, .. } if *serial > 1))
        .collect();
    assert_eq!(draws_first.len(), 4);
    LOG.with(|l| l.borrow_mut().clear());
    w.load(&snap).unwrap();
    let mut second = Vec::new();
    for f in 2..8u32 {
        frame(&mut w, |w| {
            if f.is_multiple_of(3) {
                w.try_activate(dice).unwrap();
            }
        });
        second.push(w.checksum());
    }
    let draws_second: Vec<Rec> =
        log().into_iter().filter(|r| matches!(r, Rec::Random { .. })).collect();
    assert_eq!(draws_second, draws_first);
    assert_eq!(second, first);
}

// ---------------------------------------------------------------------------------------------
// Rollback through running abilities, tasks and timelines
// ---------------------------------------------------------------------------------------------

const BATTLE: &str = r#"(
    timelines: {
        "Punch": (startup: 3, active: 2, recovery: 4,
                  startup_tag: "Phase.Startup", active_tag: "Phase.Active",
                  recovery_tag: "Phase.Recovery",
                  notifies: [(frame: 3, event: "Event.Hitbox"), (frame: 6, event: "Event.Sound")],
                  windows: [(from: 5, to: 8, tag: "Cancel.Window.Light")]),
    },
    abilities: {
        "Jab": (tags: ["Ability.Skill.Jab"], timeline: "Punch", input: 0, cost: "ManaCost",
                cooldown: "FireCooldown"),
        "Channel": (tags: ["Ability.Skill.Channel"], input: 1, behaviour: "Script",
                    instancing: PerActor, state_size: 4, activation_owned_tags: ["State.Channeling"]),
        "Counter": (tags: ["Ability.Trigger"], triggers: [Event("Event.Hitbox")],
                    behaviour: "Script", end_after: Frames(6)),
        "Regen": (tags: ["Ability.Passive"], passive: true, behaviour: "Script"),
    },
)"#;

fn battle_world() -> (World<PadProbeGame>, [Entity; 3], [AbilityHandle; 4]) {
    let mut w = build(BATTLE, WorldConfig { players: 2, seed: 1234, ..WorldConfig::default() });
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let body = w.spawn().unwrap();
    w.set_avatar(hero, body);
    w.bind_player(0, hero);
    w.bind_player(1, enemy);
    let hs = [
        grant(&mut w, hero, "Jab"),
        grant(&mut w, hero, "Channel"),
        grant(&mut w, hero, "Counter"),
        grant(&mut w, hero, "Regen"),
    ];
    grant(&mut w, enemy, "Jab");
    let (health, dash) = (attr(&w, "Health"), w.content().curve("DashCurve").unwrap());
    let punch = w.content().timeline("Punch").unwrap();
    plan(
        ab(&w, "Channel"),
        &[
            Act::Bump,
            Act::Random,
            Act::Spawn(0, TaskSpec::Repeat { count: 0, every: 3 }),
            Act::Spawn(1, TaskSpec::WaitDamage { attr: health, once: false }),
            Act::Spawn(2, TaskSpec::RootMotion { curve: dash, frames: 10, dir: [int(1), int(0)] }),
            Act::Spawn(3, TaskSpec::PlayTimeline { timeline: punch, rate: int(2) }),
            Act::Spawn(4, TaskSpec::WaitInput(InputEdge::Released)),
        ],
    );
    on_task_plan(ab(&w, "Channel"), 0, Act::Random);
    on_task_plan(ab(&w, "Channel"), 4, Act::End);
    plan(ab(&w, "Counter"), &[Act::Apply(eff(&w, "Burn"), enemy), Act::Random]);
    plan(ab(&w, "Regen"), &[Act::Spawn(0, TaskSpec::Repeat { count: 0, every: 7 })]);
    on_task_plan(ab(&w, "Regen"), 0, Act::Apply(eff(&w, "Heal"), Entity::NONE));
    (w, [hero, enemy, body], hs)
}

/// The inputs and scripted actions of frame `f` (a pure function of the frame).
fn battle_frame(w: &mut World<PadProbeGame>, f: u32, es: [Entity; 3]) -> FrameOutput {
    let hero_bits: u16 = match f {
        8 => 2 | 1,
        5..=20 => 2,
        26 => 1,
        _ => 0,
    };
    let enemy_bits: u16 = if f == 9 || f == 30 { 1 } else { 0 };
    let inputs = [pad(hero_bits), Pad { bits: enemy_bits, aim: [100, -100] }];
    w.step_with(&inputs, |w| {
        if f.is_multiple_of(5) {
            let spec = w.make_spec(w.content().effect("Damage").unwrap(), 1, es[1]);
            let _ = w.apply_effect(spec, es[0]);
        }
        if f == 17 {
            let t = w.content().tag("Event.Ping").unwrap();
            w.send_event(es[0], EventData::new(t, es[1], es[0]));
        }
    })
    .clone()
}

#[test]
fn f_ga_rollback_through_running_abilities_tasks_and_timelines_reproduces_checksums() {
    let (mut w, es, hs) = battle_world();
    let mut snap = None;
    let mut checks = Vec::new();
    let mut events = Vec::new();
    for f in 0..45u32 {
        if f == 12 {
            snap = Some(w.snapshot());
            // Mid-frame state worth rolling back through.
            assert!(w.is_ability_active(hs[0]), "Jab's timeline runs");
            assert!(w.is_ability_active(hs[1]), "Channel runs with tasks");
            assert!(w.tasks_of(hs[1]).count() >= 3);
            assert!(w.has_tag(es[0], tag(&w, "State.Channeling")));
        }
        let out = battle_frame(&mut w, f, es);
        checks.push(w.checksums());
        events.push((
            out.ability_events.clone(),
            out.gameplay_events.clone(),
            out.tag_events.clone(),
        ));
    }
    let moved = w.component(es[2]).unwrap().pos;
    assert_ne!(moved, [0, 0], "root motion moved the avatar");
    let draws_first: Vec<Rec> =
        log().into_iter().filter(|r| matches!(r, Rec::Random { .. })).collect();
    assert!(draws_first.len() >= 3);
    // Load the mid-ability snapshot and re-simulate.
    LOG.with(|l| l.borrow_mut().clear());
    w.load(snap.as_ref().unwrap()).unwrap();
    assert_eq!(w.next_frame(), 12);
    assert_eq!(w.checksums(), checks[11]);
    for f in 12..45u32 {
        let out = battle_frame(&mut w, f, es);
        assert_eq!(w.checksums(), checks[f as usize], "frame {f}");
        let again =
            (out.ability_events.clone(), out.gameplay_events.clone(), out.tag_events.clone());
        assert_eq!(again, events[f as usize], "frame {f} outputs");
    }
    assert_eq!(w.component(es[2]).unwrap().pos, moved);
    // A fresh world with the same inputs gets the same checksums too.
    let (mut w2, es2, _) = battle_world();
    for f in 0..45u32 {
        battle_frame(&mut w2, f, es2);
        assert_eq!(w2.checksums(), checks[f as usize], "fresh run, frame {f}");
    }
}
