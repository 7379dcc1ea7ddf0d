//! Hit, hurt and push boxes: content declares them, the world resolves their overlaps every
//! frame (hits as gameplay events and hook calls, once per target per window, pushes half
//! each), and all of it rolls back.

use bytemuck::{Pod, Zeroable};
use rollback_abilities::num::{self, Fx};
use rollback_abilities::prelude::*;
use rollback_abilities::{
    AbilityInput, BodyId, BoxAnchor, BoxHit, BoxKind, ContentBuilder, ContentError,
    ContentErrorKind as K, Snapshot,
};
use std::sync::Arc;

/// A fighter or a projectile on a line.
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
#[repr(C)]
struct Spot {
    x: Fx,
    /// -1: facing left.
    facing: i32,
    /// Body id + 1 (0: no boxes).
    body: u32,
    /// The instigator's index and generation (0: itself).
    by_index: u32,
    by_generation: u32,
}

/// Hits seen by the hook, and the last hit's damage.
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
#[repr(C)]
struct Tally {
    hits: u32,
    last_target: u32,
    last_damage: i64,
}

/// Where the line ends on either side: pushes stop there.
const WALL: i64 = 100;

/// Input bit 0: jab (ability input 0); bit 1: step left 4; bit 2: step right 4.
struct Line;

impl Game for Line {
    type Input = u8;
    type Component = Spot;
    type Global = Tally;

    fn systems(w: &mut World<Self>) {
        for p in 0..w.players() {
            let Some(e) = w.player_owner(p) else { continue };
            let i = w.input(p);
            let dx = if i & 2 != 0 {
                -4
            } else if i & 4 != 0 {
                4
            } else {
                0
            };
            if let Some(s) = w.component_mut(e) {
                s.x = num::add(s.x, num::int(dx));
            }
        }
    }

    fn ability_input(i: &u8) -> AbilityInput {
        AbilityInput { held: u32::from(*i & 1), ..AbilityInput::default() }
    }

    fn box_anchor(w: &World<Self>, e: Entity) -> Option<BoxAnchor> {
        let s = w.component(e)?;
        let instigator = if s.by_generation == 0 {
            Entity::NONE
        } else {
            Entity { index: s.by_index, generation: s.by_generation }
        };
        Some(BoxAnchor {
            x: s.x,
            y: Fx::ZERO,
            facing_left: s.facing < 0,
            body: s.body.checked_sub(1).map(|b| BodyId(b as u16)),
            instigator,
        })
    }

    fn push_box(w: &mut World<Self>, e: Entity, dx: Fx) {
        if let Some(s) = w.component_mut(e) {
            s.x = num::clamp(num::add(s.x, dx), num::int(-WALL), num::int(WALL));
        }
    }

    fn on_hit(w: &mut World<Self>, hit: &BoxHit) {
        let g = w.global_mut();
        g.hits += 1;
        g.last_target = hit.target.index;
        g.last_damage = hit.hit.damage.to_num::<i64>();
    }
}

/// The jab's content: a 4 + 3 + 6 frame timeline whose hit box reaches 44 in front of the
/// anchor during the active frames; fighters' hurt boxes are 32 wide, their push boxes 24.
fn content(hit: &str) -> Arc<Content> {
    let text = format!(
        r#"(
        tags: ["Event.Hit.Jab", "State.Flinch"],
        attribute_sets: {{ "Vitals": (attributes: {{ "Health": (default: 100) }}) }},
        effects: {{
            "JabDamage": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -8))]),
        }},
        abilities: {{
            "Jab": (input: 0, timeline: "Jab"),
            "Flinch": (triggers: [Event("Event.Hit.Jab")], end_after: Frames(20),
                       activation_owned_tags: ["State.Flinch"]),
        }},
        timelines: {{
            "Jab": (startup: 4, active: 3, recovery: 6, boxes: [
                (kind: Hit, from: 4, to: 7, x: 0, y: 20, w: 44, h: 20, hit: ({hit})),
            ]),
        }},
        bodies: {{
            "Fighter": (boxes: [
                (kind: Hurt, x: -16, w: 32, h: 80),
                (kind: Push, x: -12, w: 24, h: 80),
            ]),
            "Orb": (boxes: [(kind: Hit, x: -5, y: 30, w: 10, h: 10, hit: (damage: 3))]),
        }},
    )"#
    );
    Arc::new(Content::from_ron_str(&text).expect("box content"))
}

const JAB: &str = r#"effect: "JabDamage", event: "Event.Hit.Jab", damage: 8, pushback: 12"#;

/// Two fighters at `xa` (facing `fa`) and `xb`, players 0 and 1, both with the jab and the
/// flinch reaction.
fn duel(c: &Arc<Content>, xa: i64, fa: i32, xb: i64) -> (World<Line>, Entity, Entity) {
    let config = WorldConfig { max_entities: 8, players: 2, ..WorldConfig::default() };
    let mut w = World::<Line>::new(c.clone(), &Hooks::new(), config).expect("world");
    let vitals = c.attr_set("Vitals").unwrap();
    let fighter = c.body("Fighter").unwrap().0 + 1;
    let spawn = |w: &mut World<Line>, p: usize, x: i64, facing: i32| {
        let e = w.spawn_actor(&[vitals]).unwrap();
        *w.component_mut(e).unwrap() =
            Spot { x: num::int(x), facing, body: u32::from(fighter), ..Spot::default() };
        w.grant_ability(e, c.ability("Jab").unwrap(), 1).unwrap();
        w.grant_ability(e, c.ability("Flinch").unwrap(), 1).unwrap();
        w.bind_player(p, e);
        e
    };
    let a = spawn(&mut w, 0, xa, fa);
    let b = spawn(&mut w, 1, xb, -fa);
    (w, a, b)
}

/// Steps `frames` frames with player 0 pressing the jab in frame 0; returns every frame's hits.
fn jab(w: &mut World<Line>, frames: u32) -> Vec<(u32, BoxHit)> {
    let mut out = Vec::new();
    for f in 0..frames {
        let o = w.step(&[u8::from(f == 0), 0]);
        out.extend(o.hits.iter().map(|h| (f, *h)));
    }
    out
}

fn x(w: &World<Line>, e: Entity) -> i64 {
    w.component(e).unwrap().x.to_num::<i64>()
}

#[test]
fn the_jab_hits_at_range_40_once_per_window_and_whiffs_at_60() {
    let c = content(JAB);
    let health = c.attr("Health").unwrap();
    let (mut w, a, b) = duel(&c, 0, 1, 40);
    let hits = jab(&mut w, 14);
    assert_eq!(hits.len(), 1, "one hit although the box is out 3 frames: {hits:?}");
    let (frame, hit) = hits[0];
    assert_eq!(frame, 4, "the hit box is out from timeline frame 4");
    assert_eq!((hit.attacker, hit.instigator, hit.target, hit.dir), (a, a, b, 1));
    assert_eq!(hit.hit.damage, num::int(8));
    assert_eq!(w.attr(b, health), Some(num::int(92)), "the hit's effect was applied");
    assert_eq!(x(&w, b), 52, "pushed back 12 along the attacker's facing");
    assert_eq!(w.global().hits, 1, "the game's hook saw the hit");
    let flinch = c.tag("State.Flinch").unwrap();
    assert!(w.has_tag(b, flinch), "the hit's gameplay event triggered the target's reaction");

    let (mut w, _, b) = duel(&c, 0, 1, 60);
    assert!(jab(&mut w, 14).is_empty(), "at 60 the hurt box only touches the hit box");
    assert_eq!(w.attr(b, health), Some(num::int(100)));
}

#[test]
fn a_box_authored_facing_right_mirrors_when_its_owner_faces_left() {
    let c = content(JAB);
    let (mut w, _, b) = duel(&c, 0, -1, -40);
    let hits = jab(&mut w, 14);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].1.dir, -1);
    assert_eq!(x(&w, b), -52, "pushed back to the left");
    let (mut w, _, _) = duel(&c, 0, -1, 40);
    assert!(jab(&mut w, 14).is_empty(), "nothing behind a fighter facing left is hit");
}

#[test]
fn content_may_let_a_box_hit_again_every_n_frames() {
    let c = content(r#"damage: 1, rehit: 1"#);
    let (mut w, _, _) = duel(&c, 0, 1, 40);
    let frames: Vec<u32> = jab(&mut w, 14).iter().map(|(f, _)| *f).collect();
    assert_eq!(frames, [4, 5, 6], "every frame the box is out");
    let c = content(r#"damage: 1, rehit: 2"#);
    let (mut w, _, _) = duel(&c, 0, 1, 40);
    let frames: Vec<u32> = jab(&mut w, 14).iter().map(|(f, _)| *f).collect();
    assert_eq!(frames, [4, 6]);
}

#[test]
fn overlapping_push_boxes_separate_half_each() {
    let c = content(JAB);
    let (mut w, a, b) = duel(&c, 0, 1, 10);
    w.step(&[0, 0]);
    // Push boxes [-12, 12) and [-2, 22) overlap by 14: 7 each way.
    assert_eq!((x(&w, a), x(&w, b)), (-7, 17));
    w.step(&[0, 0]);
    assert_eq!((x(&w, a), x(&w, b)), (-7, 17), "touching boxes do not push");
    // Walking into each other: each step closes 8, the pass opens it again.
    w.step(&[4, 2]);
    assert_eq!((x(&w, a), x(&w, b)), (-7, 17));
}

/// Fighters with the `Fighter` body (push boxes 24 wide) at `xs`, bound to no player.
fn pile(xs: &[i64]) -> (World<Line>, Vec<Entity>) {
    let c = content(JAB);
    let config = WorldConfig { max_entities: 16, players: 1, ..WorldConfig::default() };
    let mut w = World::<Line>::new(c.clone(), &Hooks::new(), config).expect("world");
    let fighter = c.body("Fighter").unwrap().0 + 1;
    let es = xs
        .iter()
        .map(|&x| {
            let e = w.spawn_actor(&[]).unwrap();
            *w.component_mut(e).unwrap() =
                Spot { x: num::int(x), facing: 1, body: u32::from(fighter), ..Spot::default() };
            e
        })
        .collect();
    (w, es)
}

#[test]
fn push_boxes_end_apart_in_chains_and_against_walls() {
    // Fighters piled against the left wall, against the right one, in the middle, spread over
    // the line with piles at both walls, and more than fit between the walls: one frame's push
    // step leaves every pair of push boxes apart (24 between anchors) wherever there is room,
    // inside the walls, in the order the fighters stood.
    let cases: [(&[i64], &[i64]); 6] = [
        (&[-100, -95, -90, -85], &[-100, -76, -52, -28]),
        (&[100, 97, 94, 91], &[100, 76, 52, 28]),
        (&[0, 1, 2, 3], &[]),
        (&[-100, -90, 0, 5, 10, 100, 95], &[]),
        (&[-30, -20, -10, 0, 10, 20, 30], &[]),
        (&[-100, -80, -60, -40, -20, 0, 20, 40, 60, 80, 100], &[]),
    ];
    for (start, end) in cases {
        let (mut w, es) = pile(start);
        w.step(&[0]);
        let xs: Vec<Fx> = es.iter().map(|&e| w.component(e).unwrap().x).collect();
        let wall = num::int(WALL);
        assert!(xs.iter().all(|&x| -wall <= x && x <= wall), "{start:?} -> {xs:?}");
        if !end.is_empty() {
            assert_eq!(xs, end.iter().map(|&x| num::int(x)).collect::<Vec<_>>(), "{start:?}");
        }
        let order = |xs: &[Fx]| {
            let mut o: Vec<usize> = (0..xs.len()).collect();
            o.sort_by_key(|&i| (xs[i], i));
            o
        };
        let stood = order(&start.iter().map(|&x| num::int(x)).collect::<Vec<_>>());
        let fits = (xs.len() as i64 - 1) * 24 <= 2 * WALL;
        if fits {
            assert_eq!(order(&xs), stood, "{start:?} -> {xs:?}: the order they stood in");
            let apart = stood.windows(2).all(|p| xs[p[1]] - xs[p[0]] >= num::int(24));
            assert!(apart, "{start:?} -> {xs:?}");
            if xs.iter().all(|x| x.abs() < wall) {
                // Off the walls, a pile spreads about where it stood.
                let sum = |v: &[Fx]| v.iter().fold(Fx::ZERO, |a, x| num::add(a, *x));
                let starts: Vec<Fx> = start.iter().map(|&x| num::int(x)).collect();
                let drift = num::sub(sum(&xs), sum(&starts)).abs();
                assert!(drift < num::int(xs.len() as i64), "{start:?} -> {xs:?}");
            }
        } else {
            // More than fit: inside the walls, and none passed another.
            let ends = stood.windows(2).all(|p| xs[p[1]] >= xs[p[0]]);
            assert!(ends, "{start:?} -> {xs:?}");
        }
    }
}

#[test]
fn a_projectile_never_hits_its_instigator() {
    let c = content(JAB);
    let (mut w, a, b) = duel(&c, 0, 1, 100);
    let orb = w.spawn().unwrap();
    let body = c.body("Orb").unwrap().0 as u32 + 1;
    *w.component_mut(orb).unwrap() =
        Spot { x: num::int(0), facing: 1, body, by_index: a.index, by_generation: a.generation };
    let o = w.step(&[0, 0]);
    assert!(o.hits.is_empty(), "the orb overlaps its caster only: {:?}", o.hits);
    w.component_mut(orb).unwrap().x = num::int(100);
    let o = w.step(&[0, 0]);
    assert_eq!(o.hits.len(), 1);
    assert_eq!((o.hits[0].attacker, o.hits[0].instigator, o.hits[0].target), (orb, a, b));
    let o = w.step(&[0, 0]);
    assert!(o.hits.is_empty(), "a body's hit box hits a target once while it stands");
}

#[test]
fn the_world_lists_the_boxes_of_the_current_frame() {
    let c = content(JAB);
    let (mut w, a, _) = duel(&c, 0, 1, 100);
    let kinds = |w: &World<Line>| -> Vec<(u32, BoxKind)> {
        w.boxes().iter().map(|b| (b.entity.index, b.kind)).collect()
    };
    assert_eq!(
        kinds(&w),
        [
            (a.index, BoxKind::Hurt),
            (a.index, BoxKind::Push),
            (1, BoxKind::Hurt),
            (1, BoxKind::Push)
        ]
    );
    for f in 0..5 {
        w.step(&[u8::from(f == 0), 0]);
    }
    let boxes = w.boxes();
    let hit = boxes.iter().find(|b| b.kind == BoxKind::Hit).expect("the jab's hit box is out");
    assert_eq!(hit.entity, a);
    assert_eq!((hit.rect.x0, hit.rect.x1), (num::int(0), num::int(44)));
    assert_eq!((hit.rect.y0, hit.rect.y1), (num::int(20), num::int(40)));
}

#[test]
fn the_inspector_lists_an_entitys_boxes() {
    let c = content(JAB);
    let (mut w, a, b) = duel(&c, 0, 1, 100);
    for f in 0..5 {
        w.step(&[u8::from(f == 0), 0]);
    }
    let text = rollback_abilities::debug::debug_view(&w, a).to_string();
    assert!(text.contains("  boxes:\n"), "{text}");
    assert!(text.contains("Hurt x [-16, 16) y [0, 80)  body Fighter box 0\n"), "{text}");
    assert!(
        text.contains(
            "Hit  x [0, 44) y [20, 40)  timeline Jab frame 4 box 0; effect JabDamage, event \
             Event.Hit.Jab, damage 8, pushback 12\n"
        ),
        "{text}"
    );
    let other = rollback_abilities::debug::debug_view(&w, b);
    assert_eq!(other.boxes.len(), 2, "the other fighter stands: hurt and push");
}

/// Both players walk and jab on a pattern in which every player's input changes the state.
fn pattern(f: u32) -> [u8; 2] {
    let a = match f % 23 {
        0 | 9 => 1,
        3..=6 => 4,
        14..=16 => 2,
        _ => 0,
    };
    let b = match f % 17 {
        2 | 11 => 1,
        5..=8 => 2,
        13 => 4,
        _ => 0,
    };
    [a, b]
}

#[test]
fn hits_are_the_same_at_rollback_depth_0_and_8() {
    const FRAMES: u32 = 160;
    const DEPTH: u32 = 8;
    let c = content(JAB);
    let (mut plain, ..) = duel(&c, 0, 1, 30);
    let mut plain_hits = Vec::new();
    let mut plain_sums = Vec::new();
    for f in 0..FRAMES {
        let o = plain.step(&pattern(f));
        plain_hits.push(o.hits.clone());
        plain_sums.push(plain.checksum());
    }
    assert!(plain_hits.iter().flatten().count() >= 10, "the pattern lands hits");

    let (mut w, ..) = duel(&c, 0, 1, 30);
    let mut snaps: Vec<Snapshot<Line>> = Vec::new();
    let mut hits = Vec::new();
    for f in 0..FRAMES {
        snaps.push(w.snapshot());
        // Every frame from DEPTH on: roll back DEPTH frames and re-simulate them.
        if f >= DEPTH {
            let from = f - DEPTH;
            w.load(&snaps[from as usize]).unwrap();
            for g in from..f {
                let o = w.step(&pattern(g));
                hits[g as usize] = o.hits.clone();
                assert_eq!(w.checksum(), plain_sums[g as usize], "frame {g} re-simulated");
            }
        }
        let o = w.step(&pattern(f));
        hits.push(o.hits.clone());
        assert_eq!(w.checksum(), plain_sums[f as usize], "frame {f}");
    }
    assert_eq!(hits, plain_hits);
}

fn fails(text: &str) -> ContentError {
    ContentBuilder::new().file("moves.ron", text).build().expect_err("the content must be refused")
}

#[test]
fn a_bad_box_is_refused_with_its_file_line_and_path() {
    let e = fails(
        "(timelines: { \"Jab\": (startup: 2, active: 2,\n  boxes: [(kind: Hit, from: 2, to: 4, w: 0, h: 5)]) })",
    );
    assert_eq!((e.kind, e.file.as_str(), e.line), (K::InvalidValue, "moves.ron", 2));
    assert_eq!(e.path, "timelines.Jab.boxes[0].w");
    assert!(e.message.contains("w must be above 0"), "{e}");

    let e = fails(
        "(timelines: { \"Jab\": (startup: 2, active: 2,\n\n  boxes: [(kind: Hurt, from: 1, to: 5, w: 3, h: -1)]) })",
    );
    assert_eq!((e.kind, e.line), (K::InvalidValue, 3));
    assert_eq!(e.path, "timelines.Jab.boxes[0]");
    assert!(e.message.contains("from < to <= 4"), "{e}");

    let e = fails("(timelines: { \"Jab\": (active: 2, boxes: [(kind: Push, w: 3, h: 1)]) })");
    assert!(e.message.contains("needs `from` and `to`"), "{e}");

    let e =
        fails("(bodies: { \"Fighter\": (boxes: [\n(kind: Hurt, from: 0, to: 3, w: 3, h: 1)]) })");
    assert_eq!((e.kind, e.line), (K::InvalidCombination, 2));
    assert_eq!(e.path, "bodies.Fighter.boxes[0]");

    let e =
        fails("(bodies: { \"Fighter\": (boxes: [(kind: Hurt, w: 3, h: 1,\n hit: (damage: 4))]) })");
    assert_eq!((e.kind, e.line), (K::InvalidCombination, 2));
    assert_eq!(e.path, "bodies.Fighter.boxes[0].hit");

    let e = fails(
        "(effects: { \"JabDamage\": () }, bodies: { \"Fighter\": (boxes: [(kind: Hit, w: 3, h: 1,\n hit: (effect: \"JabDamge\"))]) })",
    );
    assert_eq!((e.kind, e.line), (K::UnknownEffect, 2));
    assert!(e.message.contains("did you mean \"JabDamage\""), "{e}");
}

/// A timeline longer than a frame counter can count is refused, not wrapped: the phases'
/// boundaries (`startup + active`) are computed from it.
#[test]
fn a_timeline_too_long_to_count_is_refused() {
    let e = fails(
        "(tags: [\"Move.Active\"], timelines: { \"Jab\": (\n  startup: 4294967295, active: 1,\n  active_tag: \"Move.Active\") })",
    );
    assert_eq!((e.kind, e.file.as_str(), e.line), (K::InvalidValue, "moves.ron", 1));
    assert_eq!(e.path, "timelines.Jab");
    assert!(e.message.contains("4294967295 + 1 + 0"), "{e}");
    assert!(e.message.contains("more frames than a timeline can count"), "{e}");
}

#[test]
fn content_without_boxes_keeps_its_hash_and_snapshot() {
    let plain = "(tags: [\"A\"], timelines: { \"T\": (active: 3) })";
    let c = Content::from_ron_str(plain).unwrap();
    assert!(!c.has_boxes());
    let with = Content::from_ron_str(
        "(tags: [\"A\"], timelines: { \"T\": (active: 3, boxes: [(kind: Hurt, from: 0, to: 3, w: 1, h: 1)]) })",
    )
    .unwrap();
    assert!(with.has_boxes() && !with.has_hit_boxes());
    assert_ne!(c.hash(), with.hash(), "boxes are part of the content's hash");
    let none =
        Content::from_ron_str("(tags: [\"A\"], timelines: { \"T\": (active: 3, boxes: []) })")
            .unwrap();
    assert_eq!(c.hash(), none.hash(), "an empty box list hashes as no list");
}

/// The shipped scenario stating the jab's frame data and its content, copied into a fresh
/// directory with the content's hit box written as `hit_box`.
fn jab_scenario(
    dir: &std::path::Path,
    hit_box: Option<(&str, &str)>,
) -> rollback_abilities::scenario::ScenarioReport {
    use rollback_abilities::scenario::{RunOptions, Scenario, run};
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenarios");
    let text = std::fs::read_to_string(shipped.join("boxes01_jab_range_and_pushback.ron")).unwrap();
    let mut content = std::fs::read_to_string(shipped.join("content/jab.ron")).unwrap();
    if let Some((from, to)) = hit_box {
        assert!(content.contains(from), "the shipped jab declares {from}");
        content = content.replace(from, to);
    }
    std::fs::create_dir_all(dir.join("content")).unwrap();
    std::fs::write(dir.join("content/jab.ron"), content).unwrap();
    std::fs::write(dir.join("jab.ron"), &text).unwrap();
    let s = Scenario::load(dir.join("jab.ron")).unwrap_or_else(|e| panic!("{e}"));
    run(&s, &RunOptions::default()).unwrap()
}

/// The line of the scenario file's first line containing `needle`.
fn line_of(needle: &str) -> usize {
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/scenarios/boxes01_jab_range_and_pushback.ron");
    let text = std::fs::read_to_string(shipped).unwrap();
    text.lines().position(|l| l.contains(needle)).expect("the check is in the file") + 1
}

#[test]
fn a_shorter_jab_hit_box_in_ron_fails_its_scenario_and_the_original_passes_again() {
    let dir = std::env::temp_dir().join(format!("jab-scenario-{}", std::process::id()));
    let report = jab_scenario(&dir, None);
    assert!(report.passed(), "{report}");

    // The designer shortens the jab's reach from 44 to 20: the target at 40 is out of reach.
    let report = jab_scenario(&dir, Some(("x: 0, y: 20, w: 44", "x: 0, y: 20, w: 20")));
    let text = report.to_string();
    assert!(!report.passed(), "{text}");
    let hit = line_of(r#"Hit(by: "jabber", on: "target""#);
    assert!(
        text.contains(&format!(
            "FAIL line {hit:<4} frame 4: hit by jabber on target with Jab box 0 × 1\n         \
             failed at frame 4: expected 1 hit, got 0 events"
        )),
        "{text}"
    );
    let pos = line_of(r#"Position(on: "target", x: 52"#);
    assert!(
        text.contains(&format!(
            "FAIL line {pos:<4} frames 4..=13: target at x = 52 facing Left\n         failed at \
             frame 4 (10 frames): expected x 52, facing Left, got x 40, facing Left"
        )),
        "{text}"
    );
    let health = line_of(r#"Attribute(on: "target", attribute: "Health", current: 92)"#);
    assert!(text.contains(&format!("FAIL line {health:<4} frame 4: target.Health")), "{text}");
    // The blocked jab at 40 whiffs too (3 more); the whiff at 60 and the push separation still
    // hold, and every mode still agrees.
    assert_eq!(report.failed_expectations(), 7, "{text}");
    assert!(text.contains("ok   mode Rollback"), "{text}");

    // Back to the shipped content: it passes again.
    let report = jab_scenario(&dir, None);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(report.passed(), "{report}");
}

#[test]
fn a_scenario_places_boxes_only_with_content_that_has_them() {
    use rollback_abilities::scenario::{Scenario, ScenarioErrorKind};
    let text = r#"(
    content: Inline("(tags: [\"A\"])"),
    entities: { "hero": (at: (x: 0)) },
)"#;
    let e = Scenario::from_str(text, "at.ron", None).unwrap_err();
    assert_eq!(
        (e.kind, e.line, e.path.as_str()),
        (ScenarioErrorKind::InvalidValue, 3, "entities.hero.at")
    );
    assert!(e.message.contains("the content declares none"), "{e}");

    let text = r#"(
    content: Inline("(bodies: { \"Fighter\": (boxes: [(kind: Hurt, w: 2, h: 2)]) })"),
    entities: { "hero": (at: (x: 0, body: "Figter")) },
)"#;
    let e = Scenario::from_str(text, "at.ron", None).unwrap_err();
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ScenarioErrorKind::UnknownName, "entities.hero.at.body")
    );
    assert!(e.message.contains("did you mean \"Fighter\""), "{e}");

    let text = r#"(
    content: Inline("(timelines: { \"Jab\": (active: 3, boxes: [(kind: Hurt, from: 0, to: 3, w: 2, h: 2)]) })"),
    entities: { "hero": (at: (x: 0)) },
    expect: [(frame: 0, that: Hit(timeline: "Jab", box: 0))],
)"#;
    let e = Scenario::from_str(text, "at.ron", None).unwrap_err();
    assert_eq!(e.path, "expect[0].that.box");
    assert!(
        e.message.contains("box 0 of the timeline \"Jab\" is not a hit box (its hit boxes: none)"),
        "{e}"
    );
}

/// A scenario host without positions of its own, whose world keeps none: placing fails the
/// run before it starts, naming the entity.
impl rollback_abilities::scenario::ScenarioHost for Line {
    fn scenario_input(input: &rollback_abilities::scenario::ScenarioInput) -> u8 {
        input.held as u8
    }
}

#[test]
fn a_game_that_cannot_place_an_entity_fails_the_scenario_before_it_runs() {
    use rollback_abilities::scenario::{RunOptions, Scenario, run_with_hooks};
    let text = r#"(
    content: Inline("(bodies: { \"Fighter\": (boxes: [(kind: Hurt, w: 2, h: 2)]) })"),
    entities: { "hero": (at: (x: 0, body: "Fighter")) },
)"#;
    let s = Scenario::from_str(text, "at.ron", None).unwrap();
    let e = run_with_hooks(&s, &Hooks::<Line>::new(), &RunOptions::default(), None).unwrap_err();
    assert!(e.message.contains("cannot place \"hero\""), "{e}");
    assert!(rollback_abilities::scenario::run(&s, &RunOptions::default()).unwrap().passed());
}

#[test]
fn the_world_keeps_anchors_only_for_a_game_that_asks_and_content_with_boxes() {
    use rollback_abilities::scenario::ScenarioGame;
    let config = WorldConfig { max_entities: 4, ..WorldConfig::default() };
    let anchor = BoxAnchor::at(num::int(5), Fx::ZERO);
    // A game with positions of its own: the world keeps none.
    let mut w = World::<Line>::new(content(JAB), &Hooks::new(), config).unwrap();
    let e = w.spawn().unwrap();
    assert!(!w.set_anchor(e, anchor));
    assert_eq!(w.kept_anchor(e), None);
    // The scenario game, content without boxes: no column (the scenario goldens keep their
    // checksums).
    let plain = Arc::new(Content::from_ron_str("(tags: [\"A\"])").unwrap());
    let mut w = World::<ScenarioGame>::new(plain, &Hooks::new(), config).unwrap();
    let e = w.spawn().unwrap();
    assert!(!w.set_anchor(e, anchor));
    // With boxes: kept, moved by pushes, rolled back, cleared on despawn.
    let mut w = World::<ScenarioGame>::new(content(JAB), &Hooks::new(), config).unwrap();
    let fighter = Some(content(JAB).body("Fighter").unwrap());
    let a = w.spawn().unwrap();
    let b = w.spawn().unwrap();
    assert!(w.set_anchor(a, BoxAnchor { body: fighter, ..BoxAnchor::at(num::int(0), Fx::ZERO) }));
    assert!(w.set_anchor(b, BoxAnchor { body: fighter, ..BoxAnchor::at(num::int(10), Fx::ZERO) }));
    let before = w.snapshot();
    w.step(&[Default::default(), Default::default()]);
    assert_eq!(w.kept_anchor(a).map(|x| x.x), Some(num::int(-7)), "pushed apart half each");
    assert_eq!(w.kept_anchor(b).map(|x| x.x), Some(num::int(17)));
    w.load(&before).unwrap();
    assert_eq!(w.kept_anchor(a).map(|x| x.x), Some(num::int(0)), "rolled back");
    w.despawn(a);
    let c = w.spawn().unwrap();
    assert_eq!(c.index, a.index, "the slot is reused");
    assert_eq!(w.kept_anchor(c), None, "a new entity is not placed");
}
