//! Beyond GAS: input buffer (F-GA-22), hitstop and time scale (F-GA-23), timeline rate changes,
//! custom task kinds (F-AT-06).

use rollback_abilities::prelude::*;
use rollback_abilities::session::RollbackDriver;
use rollback_abilities::{
    AbilityCtx, AbilityEvent, AbilityHandle, AbilityInput, Behaviour, ContentBuilder,
    ContentErrorKind, TaskCtx, TaskEvent, TaskResult, TaskSpec,
};
use std::cell::RefCell;
use std::sync::Arc;

/// Bit `i` of the input is ability input `i`.
pub struct Pads;
impl Game for Pads {
    type Input = u8;
    type Component = ();
    type Global = ();
    fn ability_input(input: &u8) -> AbilityInput {
        AbilityInput { held: u32::from(*input), ..AbilityInput::default() }
    }
}

const CONTENT: &str = r#"(
    tags: ["State.Attacking", "State.Poisoned", "Ability.Jab", "Ability.Follow",
           "Cancel.Window.Jab", "Event.Hit", "Cooldown.Heavy", "Cooldown.Move"],
    attribute_sets: { "Vitals": (attributes: {
        "Health": (default: 100), "Mana": (default: 0) }) },
    effects: {
        "HeavyCooldown": (duration: Frames(10), granted_tags: ["Cooldown.Heavy"]),
        "MoveCooldown": (duration: Frames(10), granted_tags: ["Cooldown.Move"]),
        "Poison": (duration: Frames(30), period: Frames(10), granted_tags: ["State.Poisoned"],
                   modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
        "Cost": (modifiers: [(attribute: "Mana", op: Add, magnitude: Scalable(coef: -10))]),
        "Strike": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -5))],
                   hitstop: 3, instigator_hitstop: 2),
        "Slam": (inherits: "Strike"),
    },
    timelines: {
        "Light": (startup: 2, active: 2, recovery: 4),
        "Jab": (startup: 3, active: 2, recovery: 6,
                windows: [(from: 4, to: 9, tag: "Cancel.Window.Jab")]),
        "Move": (startup: 4, active: 2, recovery: 4, notifies: [(frame: 4, event: "Event.Hit")],
                 windows: [(from: 3, to: 5, tag: "State.Attacking")]),
    },
    abilities: {
        "Light": (input: 0, timeline: "Light", activation_owned_tags: ["State.Attacking"],
                  input_buffer: 6),
        "Heavy": (input: 1, activation_blocked_tags: ["State.Attacking"], end_after: Frames(3),
                  input_buffer: 6),
        "HeavyNoBuffer": (input: 2, activation_blocked_tags: ["State.Attacking"],
                          end_after: Frames(3)),
        "Jab": (input: 3, tags: ["Ability.Jab"], timeline: "Jab"),
        "Follow": (input: 4, tags: ["Ability.Follow"],
                   activation_required_tags: ["Cancel.Window.Jab"],
                   cancel_abilities_with_tags: ["Ability.Jab"], end_after: Frames(5),
                   input_buffer: 6),
        "Smash": (input: 5, cooldown: "HeavyCooldown", end_after: Frames(2), input_buffer: 6),
        "Spell": (input: 6, cost: "Cost", end_after: Frames(2), input_buffer: 6),
        "Move": (timeline: "Move", cooldown: "MoveCooldown"),
        "Charger": (behaviour: "Charger"),
    },
)"#;

thread_local! {
    /// (frame, event) of every task report the `Charger` behaviour received.
    static REPORTS: RefCell<Vec<(u32, TaskEvent)>> = const { RefCell::new(Vec::new()) };
}

/// A custom task kind: counts its ticks in word 0 and adds 0.5 to its number per tick;
/// reports every second tick and finishes at tick `words[1]`.
fn charge_tick(ctx: &mut TaskCtx<'_, Pads>) {
    let mut w = ctx.words();
    w[0] += 1;
    ctx.set_words(w);
    let v = ctx.value() + Fx::from_num(0.5);
    ctx.set_value(v);
    assert_eq!(ctx.elapsed(), w[0], "elapsed counts the owner's running frames");
    if w[0] == w[1] {
        ctx.finish(1, v);
    } else if w[0].is_multiple_of(2) {
        ctx.report(0, v);
    }
}

fn charger_activate(ctx: &mut AbilityCtx<'_, Pads>) {
    let kind = ctx.world().task_kind("Charge").expect("registered");
    let spec = TaskSpec::Custom { kind, words: [0, 4, 0, 0], value: Fx::ZERO };
    ctx.spawn_task(7, spec).unwrap();
}

fn charger_task(ctx: &mut AbilityCtx<'_, Pads>, r: &TaskResult) {
    let frame = ctx.frame();
    REPORTS.with(|l| l.borrow_mut().push((frame, r.event)));
    if matches!(r.event, TaskEvent::Custom { code: 1, .. }) {
        ctx.end();
    }
}

fn hooks() -> Hooks<Pads> {
    Hooks::new().task_kind("Charge", charge_tick).behaviour(
        "Charger",
        Behaviour {
            on_activate: Some(charger_activate),
            on_task: Some(charger_task),
            ..Behaviour::default()
        },
    )
}

struct Rig {
    w: World<Pads>,
    hero: Entity,
    foe: Entity,
}

impl Rig {
    fn h(&self, name: &str) -> AbilityHandle {
        let def = self.w.content().ability(name).unwrap();
        self.w.abilities(self.hero).find(|(_, s)| s.def == def).unwrap().0
    }
}

fn rig() -> Rig {
    REPORTS.with(|l| l.borrow_mut().clear());
    let content = Arc::new(Content::from_ron_str(CONTENT).unwrap());
    let config = WorldConfig { abilities_per_entity: 16, ..WorldConfig::default() };
    let mut w = World::<Pads>::new(content.clone(), &hooks(), config).unwrap();
    let vitals = [content.attr_set("Vitals").unwrap()];
    let hero = w.spawn_actor(&vitals).unwrap();
    let foe = w.spawn_actor(&vitals).unwrap();
    w.bind_player(0, hero);
    for name in
        ["Light", "Heavy", "HeavyNoBuffer", "Jab", "Follow", "Smash", "Spell", "Move", "Charger"]
    {
        w.grant_ability(hero, content.ability(name).unwrap(), 1).unwrap();
    }
    Rig { w, hero, foe }
}

/// Activation frames of an ability over `frames` frames, with player 0's input per frame
/// and a P6 script.
fn run(
    rig: &mut Rig,
    frames: u32,
    input: impl Fn(u32) -> u8,
    mut script: impl FnMut(&mut World<Pads>, u32),
) -> Vec<(u32, AbilityHandle)> {
    let mut out = Vec::new();
    for f in 0..frames {
        rig.w.step_with(&[input(f), 0], |w| script(w, f));
        for e in &rig.w.output().ability_events {
            if let AbilityEvent::Activated { handle, .. } = e {
                out.push((f, *handle));
            }
        }
    }
    out
}

fn frames_of(acts: &[(u32, AbilityHandle)], h: AbilityHandle) -> Vec<u32> {
    acts.iter().filter(|(_, x)| *x == h).map(|(f, _)| *f).collect()
}

const LIGHT: u8 = 1;
const HEAVY: u8 = 2;
const HEAVY_NB: u8 = 4;

/// A press that cannot activate the ability is remembered for `input_buffer` frames and
/// activates it on the first frame it can (here when the light attack's recovery ends, in
/// P5 of frame 8, so in P4 of frame 9); exactly once; without a buffer the press is lost.
#[test]
fn f_ga_22_a_press_during_recovery_is_buffered_and_used_once() {
    let mut r = rig();
    let (light, heavy, heavy_nb) = (r.h("Light"), r.h("Heavy"), r.h("HeavyNoBuffer"));
    let mut buffered = Vec::new();
    let acts = run(
        &mut r,
        20,
        |f| match f {
            0 => LIGHT,
            5 => HEAVY | HEAVY_NB,
            _ => 0,
        },
        |w, _| buffered.push(w.buffered_press(0, 1)),
    );
    assert_eq!(frames_of(&acts, light), [0]);
    assert_eq!(frames_of(&acts, heavy), [9], "buffered at 5, used at 9");
    assert_eq!(frames_of(&acts, heavy_nb), Vec::<u32>::new(), "no buffer: the press is lost");
    // Pending from its press frame until it was used (seen in P6 of frames 5..=8).
    let pending: Vec<usize> =
        buffered.iter().enumerate().filter(|(_, b)| b.is_some()).map(|(f, _)| f).collect();
    assert_eq!(pending, [5, 6, 7, 8]);
    assert_eq!(buffered[5], Some(5));
    // The press frame's failure is reported as usual; the silent retries are not.
    assert_eq!(r.w.last_activation(heavy).map(|a| a.result.is_ok()), Some(true));
}

/// The window is `input_buffer` frames after the press frame: a press 7 frames before the
/// ability can activate is dropped; one 6 frames before is used.
#[test]
fn f_ga_22_presses_expire_after_the_window() {
    for (press, expected) in [(2u32, vec![]), (3, vec![9u32])] {
        let mut r = rig();
        let heavy = r.h("Heavy");
        let acts = run(
            &mut r,
            20,
            |f| {
                if f == 0 {
                    LIGHT
                } else if f == press {
                    HEAVY
                } else {
                    0
                }
            },
            |_, _| {},
        );
        assert_eq!(frames_of(&acts, heavy), expected, "pressed in frame {press}");
        assert_eq!(r.w.buffered_press(0, 1), None);
    }
}

/// Mashing: a press of the running light attack is buffered and starts it again when it
/// ends; two presses inside one move still give one more activation.
#[test]
fn f_ga_22_a_press_of_the_running_ability_restarts_it_when_it_ends() {
    let mut r = rig();
    let light = r.h("Light");
    let acts = run(&mut r, 30, |f| if [0, 4, 6].contains(&f) { LIGHT } else { 0 }, |_, _| {});
    // 0: activates; 4: buffered; 6: replaces it; 9: starts again (age 3); then ends at 17.
    assert_eq!(frames_of(&acts, light), [0, 9]);
}

/// A buffered press waits for a cancel window to open (visible to inputs from the frame
/// after it opens), for a cooldown to end and for a cost to become affordable.
#[test]
fn f_ga_22_buffered_presses_wait_for_windows_cooldowns_and_costs() {
    let mut r = rig();
    let (jab, follow, smash, spell) = (r.h("Jab"), r.h("Follow"), r.h("Smash"), r.h("Spell"));
    let hero = r.hero;
    let mana = r.w.content().attr("Mana").unwrap();
    let acts = run(
        &mut r,
        30,
        |f| match f {
            0 => 1 << 5,  // Smash: activates, cooldown frames 0..=9
            3 => 1 << 6,  // Spell: no mana yet
            6 => 1 << 5,  // Smash again: on cooldown, buffered
            10 => 1 << 3, // Jab: window tag from P5 of 14
            11 => 1 << 4, // Follow: needs the window, buffered
            _ => 0,
        },
        |w, f| {
            if f == 5 {
                w.set_base(hero, mana, Fx::from_num(10));
            }
        },
    );
    assert_eq!(frames_of(&acts, smash), [0, 10], "cooldown over in P2 of 10");
    assert_eq!(frames_of(&acts, spell), [6], "affordable from P6 of 5");
    assert_eq!(frames_of(&acts, jab), [10]);
    assert_eq!(frames_of(&acts, follow), [15], "window visible to inputs from 15");
    assert!(!r.w.is_ability_active(jab), "the follow-up cancelled the jab");
    assert_eq!(r.w.last_activation(smash).map(|a| a.result.is_ok()), Some(true));
}

/// Hitstop holds the entity's timeline (notify and end), its periodic effect and its
/// cooldown for the held frames; another entity's clocks run on.
#[test]
fn f_ga_23_hitstop_holds_timelines_effects_and_cooldowns() {
    let mut r = rig();
    let (hero, foe) = (r.hero, r.foe);
    let mv = r.h("Move");
    let c = r.w.content().clone();
    let poison = c.effect("Poison").unwrap();
    let health = c.attr("Health").unwrap();
    let cd = TagSet::of(&[c.tag("Cooldown.Move").unwrap()]);
    let (mut hits, mut ticks_hero, mut ticks_foe, mut held) = (vec![], vec![], vec![], vec![]);
    let mut cooldown = vec![];
    let mut ended = None;
    for f in 0..40u32 {
        r.w.step_with(&[0, 0], |w| {
            if f == 0 {
                w.try_activate(mv).unwrap();
                for e in [hero, foe] {
                    let s = w.make_spec(poison, 1, e);
                    w.apply_effect(s, e).unwrap();
                }
            }
            if f == 1 {
                w.hitstop(hero, 5);
                assert_eq!(w.hitstop_remaining(hero), 5);
            }
        });
        let out = r.w.output();
        hits.extend(out.gameplay_events.iter().map(|e| e.frame));
        for x in &out.executions {
            if x.attr == health {
                if x.target == hero { ticks_hero.push(f) } else { ticks_foe.push(f) }
            }
        }
        if r.w.is_time_held(hero) {
            held.push(f);
        }
        assert!(!r.w.is_time_held(foe));
        cooldown.push(r.w.cooldown_remaining(hero, &cd).map(|c| c.0));
        if ended.is_none() && !r.w.is_ability_active(mv) {
            ended = Some(f);
        }
    }
    assert_eq!(held, [2, 3, 4, 5, 6]);
    assert_eq!(hits, [9], "timeline frame 4: world frame 4 + 5");
    assert_eq!(ended, Some(15), "10 timeline frames + 5 held");
    assert_eq!(ticks_hero, [15, 25, 35]);
    assert_eq!(ticks_foe, [10, 20, 30]);
    assert_eq!(cooldown[0], Some(10));
    assert_eq!(&cooldown[1..7], &[Some(9); 6][..], "the cooldown stands still while held");
    assert_eq!(cooldown[7], Some(8));
    assert_eq!(cooldown[15], None);
    assert_eq!(r.w.hitstop_remaining(hero), 0);
    assert!(r.w.effects(hero).is_empty() && r.w.effects(foe).is_empty());
}

/// An effect's `hitstop` and `instigator_hitstop` freeze the target and the attacker when
/// an application lands (inherited like any field); a blocked one freezes nobody.
#[test]
fn f_ga_23_effects_give_hitstop_when_they_land() {
    let mut r = rig();
    let (hero, foe) = (r.hero, r.foe);
    let c = r.w.content().clone();
    let (mut hero_held, mut foe_held) = (vec![], vec![]);
    for f in 0..12u32 {
        r.w.step_with(&[0, 0], |w| {
            let name = match f {
                0 => "Strike",
                6 => "Slam",
                _ => return,
            };
            let s = w.make_spec(c.effect(name).unwrap(), 1, hero);
            w.apply_effect(s, foe).unwrap();
        });
        if r.w.is_time_held(hero) {
            hero_held.push(f);
        }
        if r.w.is_time_held(foe) {
            foe_held.push(f);
        }
    }
    assert_eq!(foe_held, [1, 2, 3, 7, 8, 9]);
    assert_eq!(hero_held, [1, 2, 7, 8]);
    assert_eq!(c.effect_def(c.effect("Slam").unwrap()).hitstop, 3);
    let err = ContentBuilder::new()
        .file("t.ron", r#"(effects: { "X": (hitstop: 121) })"#)
        .build()
        .expect_err("too long");
    assert_eq!(err.kind, ContentErrorKind::InvalidValue);
    assert!(err.to_string().contains("t.ron:1:") && err.to_string().contains("hitstop"));
}

/// A time scale of 0.5 holds every other frame (the first one included): timeline frame k
/// is reached at world frame 2k − 1 and a 30-frame effect lasts 60 frames; back at 1 the
/// clock runs with the world again.
#[test]
fn f_ga_23_time_scale_slows_an_entity() {
    let mut r = rig();
    let (hero, mv) = (r.hero, r.h("Move"));
    let c = r.w.content().clone();
    let poison = c.effect("Poison").unwrap();
    let poisoned = c.tag("State.Poisoned").unwrap();
    r.w.set_time_scale(hero, Fx::from_num(0.5));
    assert_eq!(r.w.time_scale(hero), Fx::from_num(0.5));
    let (mut hits, mut ended, mut gone) = (vec![], None, None);
    for f in 0..70u32 {
        r.w.step_with(&[0, 0], |w| {
            if f == 0 {
                w.try_activate(mv).unwrap();
                let s = w.make_spec(poison, 1, hero);
                w.apply_effect(s, hero).unwrap();
            }
        });
        assert_eq!(r.w.is_time_held(hero), f % 2 == 0, "frame {f}");
        hits.extend(r.w.output().gameplay_events.iter().map(|e| e.frame));
        if ended.is_none() && !r.w.is_ability_active(mv) {
            ended = Some(f);
        }
        if gone.is_none() && !r.w.has_tag(hero, poisoned) {
            gone = Some(f);
        }
    }
    assert_eq!(hits, [7]);
    assert_eq!(ended, Some(19));
    assert_eq!(gone, Some(59));
    assert_eq!(r.w.attr(hero, c.attr("Health").unwrap()), Some(Fx::from_num(97)));
    r.w.set_time_scale(hero, Fx::ONE);
    r.w.step(&[0, 0]);
    r.w.step(&[0, 0]);
    assert!(!r.w.is_time_held(hero));
    assert_eq!(r.w.time_scale(hero), Fx::ONE);
}

/// A timeline's rate can change while it plays: every notify and window still fires
/// once, at the frame the new rate reaches it.
#[test]
fn timeline_rate_changes_mid_play() {
    for (rate, hit_at, end_at) in [(2.0, 3u32, 6u32), (0.5, 6, 18), (1.0, 4, 10)] {
        let mut r = rig();
        let (hero, mv) = (r.hero, r.h("Move"));
        let window = r.w.content().tag("State.Attacking").unwrap();
        let (mut hits, mut window_events, mut ended) = (vec![], 0, None);
        for f in 0..30u32 {
            r.w.step_with(&[0, 0], |w| {
                if f == 0 {
                    w.try_activate(mv).unwrap();
                }
                if f == 2 {
                    let task = w.timeline_task(mv).unwrap();
                    assert_eq!(w.timeline_rate(task), Some(Fx::ONE));
                    assert!(w.set_timeline_rate(task, Fx::from_num(rate)));
                }
            });
            let out = r.w.output();
            hits.extend(out.gameplay_events.iter().map(|e| e.frame));
            window_events += out.tag_events.iter().filter(|t| t.tag == window).count();
            if ended.is_none() && !r.w.is_ability_active(mv) {
                ended = Some(f);
            }
        }
        assert_eq!(hits, [hit_at], "rate {rate}");
        assert_eq!(window_events, 2, "rate {rate}: opened and closed once");
        assert_eq!(ended, Some(end_at), "rate {rate}");
        assert!(!r.w.has_tag(hero, window));
    }
}

/// A custom task kind ticks once per frame of its owner's clock, keeps its state in the
/// task pool and reports through `on_task`; hitstop holds it like a built-in task.
#[test]
fn f_at_06_custom_task_kinds_tick_in_owner_time_and_report() {
    for (stop, expected) in [(false, [2u32, 4]), (true, [5, 7])] {
        let mut r = rig();
        let (hero, charger) = (r.hero, r.h("Charger"));
        assert_eq!(r.w.task_kind("Nope"), None);
        assert!(r.w.hooks_signature().contains("task_kind Charge"));
        for f in 0..12u32 {
            r.w.step_with(&[0, 0], |w| {
                if f == 0 {
                    w.try_activate(charger).unwrap();
                }
                if f == 1 && stop {
                    w.hitstop(hero, 3);
                }
            });
        }
        let reports = REPORTS.with(|l| l.borrow().clone());
        let want = [
            (expected[0], TaskEvent::Custom { code: 0, value: Fx::from_num(1) }),
            (expected[1], TaskEvent::Custom { code: 1, value: Fx::from_num(2) }),
        ];
        assert_eq!(reports, want, "hitstop: {stop}");
        assert!(!r.w.is_ability_active(charger));
        assert_eq!(r.w.tasks_of(charger).count(), 0);
    }
}

#[test]
fn f_ga_22_input_buffer_content_is_checked() {
    for (text, kind) in [
        (r#"(abilities: { "X": (input_buffer: 121) })"#, ContentErrorKind::InvalidValue),
        (
            r#"(abilities: { "X": (input_buffer: 4, activate_on_input: false) })"#,
            ContentErrorKind::InvalidCombination,
        ),
    ] {
        let err = ContentBuilder::new().file("t.ron", text).build().expect_err(text);
        assert_eq!(err.kind, kind, "{err}");
        let shown = err.to_string();
        assert!(shown.contains("t.ron:1:") && shown.contains("input_buffer"), "{shown}");
    }
    // Content without buffers keeps its hash (the field is left out of the rendering).
    let a = Content::from_ron_str(r#"(abilities: { "X": (input: 0) })"#).unwrap();
    let b = Content::from_ron_str(r#"(abilities: { "X": (input: 0, input_buffer: 0) })"#).unwrap();
    assert_eq!(a.hash(), b.hash());
    assert!(!a.canonical_text().contains("input_buffer"));
}

/// Scripted play exercising buffers, hitstop, time scales, rate changes and custom tasks.
fn busy_input(f: u32) -> u8 {
    if !f.is_multiple_of(3) {
        return 0;
    }
    let x = f.wrapping_mul(2_654_435_761) >> 27;
    [LIGHT, HEAVY, 0, 1 << 3, 1 << 4, 1 << 5, 1 << 6, HEAVY][(x % 8) as usize]
}

fn busy_script(w: &mut World<Pads>, hero: Entity, foe: Entity) {
    let f = w.frame();
    let c = w.content().clone();
    let owned = |w: &World<Pads>, n: &str| {
        let def = c.ability(n).unwrap();
        w.abilities(hero).find(|(_, s)| s.def == def).unwrap().0
    };
    match f % 40 {
        1 => {
            let _ = w.try_activate(owned(w, "Move"));
            let _ = w.try_activate(owned(w, "Charger"));
        }
        3 => {
            if let Some(t) = w.timeline_task(owned(w, "Move")) {
                w.set_timeline_rate(t, Fx::from_num(1.5));
            }
        }
        5 => w.hitstop(hero, 4),
        7 => {
            w.hitstop(foe, 6);
            let s = w.make_spec(c.effect("Poison").unwrap(), 1, hero);
            let _ = w.apply_effect(s, foe);
        }
        11 => w.set_time_scale(hero, Fx::from_num(0.25)),
        23 => w.set_time_scale(hero, Fx::ONE),
        29 => w.set_time_scale(foe, Fx::ZERO),
        33 => w.set_time_scale(foe, Fx::from_num(0.75)),
        _ => {}
    }
    if f == 150 {
        w.despawn(foe); // a despawned entity's clock record goes with it
    }
}

/// Every feature above, rolled back at random depths (up to 1, 2, 5 and 8 frames): the same
/// checksums as the straight run, at every frame.
#[test]
fn beyond_gas_features_are_rollback_invariant() {
    let frames = 240u32;
    let mut r = rig();
    let (hero, foe) = (r.hero, r.foe);
    let mut straight = Vec::new();
    let (mut held, mut buffered) = (0, 0);
    for f in 0..frames {
        r.w.step_with(&[busy_input(f), 0], |w| busy_script(w, hero, foe));
        straight.push(r.w.checksums());
        held += u32::from(r.w.is_time_held(hero));
        buffered += (0..8).filter(|i| r.w.buffered_press(0, *i).is_some()).count();
    }
    assert!(held > 20 && buffered > 0, "held {held}, buffered {buffered}");
    assert!(REPORTS.with(|l| !l.borrow().is_empty()), "custom tasks reported");
    for (seed, depth) in [(1u64, 1u32), (2, 2), (3, 5), (4, 8), (5, 8)] {
        let mut r = rig();
        let mut driver = RollbackDriver::new(&r.w, depth, seed);
        for _ in 0..frames {
            driver
                .advance(
                    &mut r.w,
                    |f, i| i.extend([busy_input(f), 0]),
                    |w| busy_script(w, hero, foe),
                )
                .unwrap_or_else(|d| panic!("seed {seed}: {d}"));
            assert_eq!(r.w.checksums(), straight[r.w.frame() as usize], "seed {seed}");
        }
        assert_eq!(driver.stats().max_depth, depth, "seed {seed}");
    }
}

/// The clocks and buffers are state: they change the checksum while in use.
#[test]
fn clocks_and_buffers_are_in_the_checksum() {
    let mut r = rig();
    r.w.step(&[0, 0]);
    let before = r.w.checksums();
    r.w.hitstop(r.hero, 3);
    assert_ne!(r.w.checksums(), before);
    // Same inputs from frame 2 on; only the buffered press of frame 1 differs.
    let (mut r, mut r2) = (rig(), rig());
    for input in [LIGHT, HEAVY, 0, 0] {
        r.w.step(&[input, 0]);
    }
    for input in [LIGHT, 0, 0, 0] {
        r2.w.step(&[input, 0]);
    }
    assert_eq!(r.w.buffered_press(0, 1), Some(1));
    assert_ne!(r.w.checksums(), r2.w.checksums());
}
