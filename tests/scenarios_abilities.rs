//! Visible acceptance scenarios of the abilities: AS-10 (cooldowns in frames) and AS-16 (stun).

use rollback_abilities::prelude::*;
use rollback_abilities::{AbilityEvent, AbilityInput, ActivationFailure, EffectEvent, TagEvent};
use std::sync::Arc;

/// A game whose input byte is the held ability-input bits (bit 6 confirm, bit 7 cancel); its
/// movement system stores the maximum speed it used in the component.
pub struct Pads;

#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Body {
    pub max_speed: i32,
}

impl Game for Pads {
    type Input = u8;
    type Component = Body;
    type Global = ();

    fn ability_input(input: &u8) -> AbilityInput {
        AbilityInput {
            held: u32::from(*input & 0x3f),
            confirm: input & 0x40 != 0,
            cancel: input & 0x80 != 0,
        }
    }

    fn systems(world: &mut World<Self>) {
        let stun = world.content().tags().get("State.Debuff.Stun");
        let actors: Vec<Entity> = world.entities().collect();
        for e in actors {
            let stunned = stun.is_some_and(|t| world.has_tag(e, t));
            if let Some(b) = world.component_mut(e) {
                b.max_speed = if stunned { 0 } else { 600 };
            }
        }
    }
}

/// The movement hook: the maximum speed an entity may move at now (0 while stunned).
pub fn max_speed(w: &World<Pads>, e: Entity) -> i32 {
    let stunned = w.content().tags().get("State.Debuff.Stun").is_some_and(|t| w.has_tag(e, t));
    if stunned { 0 } else { 600 }
}

fn pads_world(text: &str, players: u16) -> World<Pads> {
    let content = Arc::new(Content::from_ron_str(text).unwrap_or_else(|e| panic!("{e}")));
    World::new(content, &Hooks::new(), WorldConfig { players, ..WorldConfig::default() }).unwrap()
}

const AS10: &str = r#"(
    tags: ["Cooldown.Skill.Meteor", "Ability.Skill.Meteor"],
    effects: {
        "MeteorCooldown": (duration: Seconds(5), granted_tags: ["Cooldown.Skill.Meteor"]),
        "LongCooldown": (duration: Seconds(2), granted_tags: ["Cooldown.Skill.Meteor"]),
    },
    abilities: {
        "Meteor": (tags: ["Ability.Skill.Meteor"], cooldown: "MeteorCooldown", input: 0, end_after: Frames(1)),
    },
)"#;

/// AS-10: a 5 s cooldown is 300 frames; remaining time, failure reason, and exactly one tag
/// and effect pair.
#[test]
fn as10_cooldown_in_frames() {
    for press_at_1300 in [false, true] {
        let mut w = pads_world(AS10, 1);
        let c = w.content().clone();
        let hero = w.spawn_actor(&[]).unwrap();
        w.bind_player(0, hero);
        let meteor = w.grant_ability(hero, c.ability("Meteor").unwrap(), 1).unwrap();
        let cd_tag = c.tag("Cooldown.Skill.Meteor").unwrap();
        let tags = TagSet::of(&[cd_tag]);
        let mut tag_events: Vec<TagEvent> = Vec::new();
        let mut effect_pairs = Vec::new();
        let mut at_1299 = None;
        for frame in 0..=1310u32 {
            let input = if frame == 1000 || (press_at_1300 && frame == 1300) { 1 } else { 0 };
            let out = w
                .step_with(&[input], |w| {
                    if frame == 1299 {
                        at_1299 = Some(w.try_activate(meteor));
                    }
                })
                .clone();
            tag_events.extend(out.tag_events.iter().filter(|t| t.tag == cd_tag).copied());
            for e in &out.effect_events {
                match e {
                    EffectEvent::Added { .. } => effect_pairs.push(("added", frame)),
                    EffectEvent::Removed { .. } => effect_pairs.push(("removed", frame)),
                    _ => {}
                }
            }
            let remaining = w.cooldown_remaining(hero, &tags);
            match frame {
                1000 => assert_eq!(remaining, Some((300, 300))),
                1100 => assert_eq!(remaining, Some((200, 300))),
                1299 => assert_eq!(remaining, Some((1, 300))),
                1300 if !press_at_1300 => assert_eq!(remaining, None),
                1300 => assert_eq!(remaining, Some((300, 300))),
                _ => {}
            }
            if (1000..1300).contains(&frame) {
                assert!(w.has_tag(hero, cd_tag), "frame {frame}");
            }
            if frame == 1300 && !press_at_1300 {
                assert!(!w.has_tag(hero, cd_tag));
            }
        }
        assert_eq!(at_1299, Some(Err(ActivationFailure::OnCooldown)));
        let pairs: Vec<(u32, bool)> = tag_events
            .iter()
            .filter(|t| t.is_new_or_removed())
            .map(|t| (t.frame, t.new > 0))
            .collect();
        if press_at_1300 {
            assert_eq!(pairs, vec![(1000, true), (1300, false), (1300, true)]);
        } else {
            assert_eq!(pairs, vec![(1000, true), (1300, false)]);
            assert_eq!(effect_pairs, vec![("added", 1000), ("removed", 1300)]);
        }
        let last = w.last_activation(meteor).map(|r| (r.frame, r.result));
        if press_at_1300 {
            assert_eq!(last, Some((1300, Ok(2))));
        } else {
            assert_eq!(last, Some((1299, Err(ActivationFailure::OnCooldown))));
        }
    }
}

/// AS-10 variant: a second, shorter effect granting the same tag; the longest remaining wins.
#[test]
fn as10_longest_remaining_wins() {
    let mut w = pads_world(AS10, 1);
    let c = w.content().clone();
    let hero = w.spawn_actor(&[]).unwrap();
    w.bind_player(0, hero);
    let meteor = w.grant_ability(hero, c.ability("Meteor").unwrap(), 1).unwrap();
    let cd = TagSet::of(&[c.tag("Cooldown.Skill.Meteor").unwrap()]);
    let long = c.effect("LongCooldown").unwrap();
    for frame in 0..=1330u32 {
        let input = u8::from(frame == 1000);
        w.step_with(&[input], |w| {
            if frame == 1200 {
                let spec = w.make_spec(long, 1, hero);
                w.apply_effect(spec, hero).unwrap();
            }
        });
        match frame {
            1250 => assert_eq!(w.cooldown_remaining(hero, &cd), Some((70, 120))),
            1300..=1319 => {
                assert_eq!(
                    w.can_activate(meteor, None),
                    Err(ActivationFailure::OnCooldown),
                    "frame {frame}"
                )
            }
            1320 => assert_eq!(w.can_activate(meteor, None), Ok(())),
            _ => {}
        }
    }
    assert_eq!(w.ability_cooldown_remaining(meteor), None);
}

const AS16: &str = r#"(
    tags: ["Ability.Movement.Sprint", "Ability.Movement.Jump", "Ability.Skill.Meteor",
           "State.Debuff.Stun", "State.Sprinting", "GameplayCue.Stun"],
    effects: {
        "Stun": (duration: Seconds(2), granted_tags: ["State.Debuff.Stun"], cues: [(tag: "GameplayCue.Stun")]),
    },
    abilities: {
        "Sprint": (tags: ["Ability.Movement.Sprint"], activation_blocked_tags: ["State.Debuff.Stun"],
                   activation_owned_tags: ["State.Sprinting"], input: 0),
        "Jump": (tags: ["Ability.Movement.Jump"], instancing: NonInstanced,
                 activation_blocked_tags: ["State.Debuff.Stun"], input: 1),
    },
    cancel_on_tag_added: [(tag: "State.Debuff.Stun")],
)"#;

/// AS-16: a stun cancels running abilities (every instancing mode), blocks activation for its
/// duration, zeroes movement, and lets Sprint activate again when it ends.
#[test]
fn as16_stun() {
    let mut w = pads_world(AS16, 2);
    let c = w.content().clone();
    let attacker = w.spawn_actor(&[]).unwrap();
    let b = w.spawn_actor(&[]).unwrap();
    w.bind_player(1, b);
    let sprint = w.grant_ability(b, c.ability("Sprint").unwrap(), 1).unwrap();
    let jump = w.grant_ability(b, c.ability("Jump").unwrap(), 1).unwrap();
    let stun = c.effect("Stun").unwrap();
    let stun_tag = c.tag("State.Debuff.Stun").unwrap();
    let mut blocked = Vec::new();
    let mut ended_at_100 = Vec::new();
    for frame in 0..=230u32 {
        // B holds Sprint from 10 to 218, releases, presses again at 220; Jump pressed at 90.
        let mut input = 0u8;
        if (10..=218).contains(&frame) || frame >= 220 {
            input |= 1;
        }
        if (90..=91).contains(&frame) {
            input |= 2;
        }
        let out = w
            .step_with(&[0, input], |w| {
                if frame == 100 {
                    let spec = w.make_spec(stun, 1, attacker);
                    w.apply_effect(spec, b).unwrap();
                }
                if (101..=219).contains(&frame) {
                    blocked.push(w.try_activate(jump));
                }
            })
            .clone();
        if frame == 100 {
            for e in &out.ability_events {
                if let AbilityEvent::Ended { handle, was_cancelled, .. } = e {
                    ended_at_100.push((*handle, *was_cancelled));
                }
            }
        }
        let speed = max_speed(&w, b);
        let expect = if (100..220).contains(&frame) { 0 } else { 600 };
        assert_eq!(speed, expect, "frame {frame}");
        match frame {
            50 => assert!(w.is_ability_active(sprint)),
            95 => assert!(w.is_ability_active(jump)),
            100..=219 => {
                assert!(w.has_tag(b, stun_tag));
                assert!(!w.is_ability_active(sprint) && !w.is_ability_active(jump));
            }
            220 => {
                assert!(!w.has_tag(b, stun_tag));
                assert!(w.is_ability_active(sprint), "Sprint press succeeds at 220");
            }
            _ => {}
        }
    }
    assert_eq!(ended_at_100, vec![(sprint, true), (jump, true)]);
    assert_eq!(blocked.len(), 119);
    assert!(blocked.iter().all(|r| *r == Err(ActivationFailure::BlockedByTags)), "{blocked:?}");
    // The sprint input held through the stun never re-activated Sprint (no new press edge).
    let sprint_failures =
        w.activation_log().filter(|r| r.handle == sprint && (101..=219).contains(&r.frame)).count();
    assert_eq!(sprint_failures, 0);
}
