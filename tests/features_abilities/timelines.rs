//! Timelines and `end_after` (F-AT-02) and root motion (F-AT-05).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-AT-02 Timelines and end_after
// ---------------------------------------------------------------------------------------------

const TIMELINES: &str = r#"(
    timelines: {
        "Punch": (startup: 3, active: 2, recovery: 4,
                  startup_tag: "Phase.Startup", active_tag: "Phase.Active",
                  recovery_tag: "Phase.Recovery",
                  notifies: [(frame: 6, event: "Event.Sound"), (frame: 3, event: "Event.Hitbox")],
                  windows: [(from: 5, to: 8, tag: "Cancel.Window.Light")]),
        "Flurry": (startup: 1, active: 7, recovery: 1,
                   notifies: [(frame: 8, event: "Event.Sound")]),
    },
    abilities: {
        "Jab": (tags: ["Ability.Skill.Jab"], timeline: "Punch", input: 0),
        "Follow": (tags: ["Ability.Skill.Fire"], activation_required_tags: ["Cancel.Window.Light"],
                   cancel_abilities_with_tags: ["Ability.Skill.Jab"], end_after: Frames(2)),
        "Player": (tags: ["Ability.Skill.Ice"], behaviour: "Script"),
        "Timed": (tags: ["Ability.Skill.Spark"], end_after: Frames(10)),
        "TimedSec": (tags: ["Ability.Guard"], end_after: Seconds(0.25)),
    },
)"#;

/// Per frame: which of the phase and window tags the owner has, as a 4-char string.
fn phases(w: &World<PadProbeGame>, e: Entity) -> String {
    ["Phase.Startup", "Phase.Active", "Phase.Recovery", "Cancel.Window.Light"]
        .iter()
        .zip(['S', 'A', 'R', 'W'])
        .map(|(n, c)| if w.has_tag(e, tag(w, n)) { c } else { '.' })
        .collect()
}

#[test]
fn f_at_02_play_timeline_phases_notifies_windows_and_end() {
    let mut w = arena(TIMELINES);
    let (hitbox, sound) = (tag(&w, "Event.Hitbox"), tag(&w, "Event.Sound"));
    let punch = w.content().timeline("Punch").unwrap();
    let tl = w.content().timeline_defs()[punch.index()].clone();
    assert_eq!((tl.frames, tl.startup, tl.active), (9, 3, 2));
    assert_eq!(tl.notifies, vec![(3, hitbox), (6, sound)], "sorted by frame");
    assert_eq!(tl.windows.len(), 4, "three phase tags and one window");
    let hero = actor(&mut w);
    let jab = grant(&mut w, hero, "Jab");
    run_through(&mut w, 9);
    let mut seen = Vec::new();
    let mut notified = Vec::new();
    let mut end_frames = Vec::new();
    for f in 10..=22u32 {
        let out = frame(&mut w, |w| {
            if f == 10 {
                assert_eq!(w.try_activate(jab), ok(1));
            }
        });
        seen.push(phases(&w, hero));
        notified.extend(
            out.gameplay_events.iter().map(|g| (g.frame, g.to, g.data.tag, g.data.instigator)),
        );
        for (h, c) in ended(&out) {
            end_frames.push((f, h, c, tasks_ended(&out).len()));
        }
        assert_eq!(w.is_ability_active(jab), f < 19, "frame {f}");
    }
    assert_eq!(
        seen,
        vec![
            "S...", "S...", "S...", // 10–12 startup
            ".A..", ".A..", // 13–14 active
            "..RW", "..RW", "..RW", "..R.", // 15–18 recovery, window 15–17
            "....", "....", "....", "....",
        ]
    );
    assert_eq!(notified, vec![(13, hero, hitbox, hero), (16, hero, sound, hero)]);
    assert_eq!(end_frames, vec![(19, jab, false, 1)], "a data-only timeline ability ends itself");
}

#[test]
fn f_at_02_timeline_window_tags_go_when_the_ability_is_cancelled() {
    let mut w = arena(TIMELINES);
    let sound = tag(&w, "Event.Sound");
    let hero = actor(&mut w);
    let jab = grant(&mut w, hero, "Jab");
    let mut seen = Vec::new();
    let mut notified = Vec::new();
    let mut tag_changes_after = 0;
    for f in 0..=15u32 {
        let out = frame(&mut w, |w| match f {
            0 => assert_eq!(w.try_activate(jab), ok(1)),
            6 => w.cancel_ability(jab),
            _ => {}
        });
        seen.push(phases(&w, hero));
        notified.extend(out.gameplay_events.iter().map(|g| (g.frame, g.data.tag)));
        if f == 6 {
            assert_eq!(ended(&out), vec![(jab, true)]);
            assert_eq!(tasks_ended(&out).len(), 1);
            assert!(
                !out.ability_events
                    .iter()
                    .any(|e| matches!(e, AbilityEvent::Ended { was_cancelled: false, .. }))
            );
        }
        if f > 6 {
            tag_changes_after += out.tag_events.len();
        }
    }
    assert_eq!(&seen[4..8], &[".A..", "..RW", "....", "...."]);
    assert_eq!(notified.last(), Some(&(6, sound)), "frame 6 was entered in P5 before the cancel");
    assert_eq!(tag_changes_after, 0, "nothing happens after the cancel");
    assert_eq!(w.tag_count(hero, tag(&w, "Phase")), 0);
}

#[test]
fn f_at_02_cancel_window_tags_gate_a_follow_up_move() {
    let mut w = arena(TIMELINES);
    let hero = actor(&mut w);
    let jab = grant(&mut w, hero, "Jab");
    let follow = grant(&mut w, hero, "Follow");
    let mut results = Vec::new();
    for f in 0..=8u32 {
        let out = frame(&mut w, |w| {
            if f == 0 {
                w.try_activate(jab).unwrap();
            }
            if f == 3 || f == 5 {
                results.push((f, w.try_activate(follow)));
            }
        });
        if f == 5 {
            assert_eq!(ended(&out), vec![(jab, true)]);
            assert_eq!(phases(&w, hero), "....", "the cancelled move's window closed");
        }
    }
    assert_eq!(results, vec![(3, Err(ActivationFailure::MissingTags)), (5, ok(1))]);
    assert!(!w.is_ability_active(follow), "Follow ended after 2 frames");
}

#[test]
fn f_at_02_play_timeline_task_at_rate_two_reports_notifies_and_end() {
    let mut w = arena(TIMELINES);
    let (hitbox, sound) = (tag(&w, "Event.Hitbox"), tag(&w, "Event.Sound"));
    let punch = w.content().timeline("Punch").unwrap();
    let hero = actor(&mut w);
    let player = grant(&mut w, hero, "Player");
    plan(
        ab(&w, "Player"),
        &[Act::Spawn(4, TaskSpec::PlayTimeline { timeline: punch, rate: int(2) })],
    );
    let mut seen = Vec::new();
    let mut ends = Vec::new();
    for f in 0..=7u32 {
        let out = frame(&mut w, |w| {
            if f == 0 {
                w.try_activate(player).unwrap();
            }
        });
        seen.push(phases(&w, hero));
        ends.extend(tasks_ended(&out).into_iter().map(|_| f));
    }
    assert_eq!(
        task_reports(player),
        vec![
            (2, 4, TaskEvent::Notify(hitbox)),
            (3, 4, TaskEvent::Notify(sound)),
            (5, 4, TaskEvent::TimelineEnded)
        ]
    );
    // Timeline frames 0 | 1–2 | 3–4 | 5–6 | 7–8 | 9 (the window closes entering frame 8).
    assert_eq!(seen, vec!["S...", "S...", ".A..", "..RW", "..R.", "....", "....", "...."]);
    assert_eq!(ends, vec![5]);
    assert!(w.is_ability_active(player), "a behaviour's timeline does not end its ability");
}

#[test]
fn f_at_02_play_timeline_reports_a_notify_and_the_end_of_the_same_step() {
    let mut w = arena(TIMELINES);
    let sound = tag(&w, "Event.Sound");
    let flurry = w.content().timeline("Flurry").unwrap();
    let hero = actor(&mut w);
    let player = grant(&mut w, hero, "Player");
    // Rate 3 over 9 frames: frames 7–9 are entered in one step, the notify at 8 included.
    plan(
        ab(&w, "Player"),
        &[Act::Spawn(0, TaskSpec::PlayTimeline { timeline: flurry, rate: int(3) })],
    );
    frame(&mut w, |w| w.try_activate(player).map(|_| ()).unwrap());
    run_through(&mut w, 5);
    assert_eq!(
        task_reports(player),
        vec![(3, 0, TaskEvent::Notify(sound)), (3, 0, TaskEvent::TimelineEnded)]
    );
}

#[test]
fn f_at_02_end_after_ends_the_ability_normally() {
    let mut w = arena(TIMELINES);
    let hero = actor(&mut w);
    let timed = grant(&mut w, hero, "Timed");
    let timed_sec = grant(&mut w, hero, "TimedSec");
    let mut ends = Vec::new();
    for f in 0..=20u32 {
        let out = frame(&mut w, |w| {
            if f == 2 {
                w.try_activate(timed).unwrap();
                w.try_activate(timed_sec).unwrap();
            }
        });
        ends.extend(ended(&out).into_iter().map(|(h, c)| (f, h, c)));
    }
    assert_eq!(ends, vec![(12, timed, false), (17, timed_sec, false)], "10 frames; 0.25 s = 15");
    assert_eq!(w.content().ability_def(ab(&w, "TimedSec")).end_after, Some(15));
}

// ---------------------------------------------------------------------------------------------
// F-AT-05 Root motion
// ---------------------------------------------------------------------------------------------

#[test]
fn f_at_05_root_motion_moves_the_avatar_by_curve_deltas() {
    let mut w = arena(WORKERS);
    let curve = w.content().curve("DashCurve").unwrap();
    let hero = actor(&mut w);
    let body = w.spawn().unwrap();
    w.set_avatar(hero, body);
    let worker = grant(&mut w, hero, "Worker");
    plan(
        ab(&w, "Worker"),
        &[Act::Spawn(0, TaskSpec::RootMotion { curve, frames: 5, dir: [int(1), int(-2)] })],
    );
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    run_through(&mut w, 8);
    let moves = MOTION.with(|m| m.borrow().clone());
    let c = w.content().curve_defs()[curve.index()].clone();
    let expected: Vec<(u32, Entity, [Fx; 2])> = (1..=5u16)
        .map(|k| {
            let d = rollback_abilities::num::sub(c.eval(k), c.eval(k - 1));
            (u32::from(k), body, [d, d * -2])
        })
        .collect();
    assert_eq!(moves, expected, "one step per frame, to the avatar");
    assert_eq!(moves[0].2, [int(15), int(-30)]);
    let total = moves.iter().fold([Fx::ZERO; 2], |a, m| [a[0] + m.2[0], a[1] + m.2[1]]);
    assert_eq!(total, [int(45), int(-90)], "the deltas sum to the curve's total");
    assert_eq!(w.component(body).unwrap().pos, [int(45).to_bits(), int(-90).to_bits()]);
    assert_eq!(w.component(hero).unwrap().pos, [0, 0]);
    assert_eq!(task_reports(worker), vec![(5, 0, TaskEvent::Finished)]);
}
