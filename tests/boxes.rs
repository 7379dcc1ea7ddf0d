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
            s.x = num::add(s.x, dx);
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
