//! Your first ability: the program of the guide's §1 ("Your first ability", `docs/guide.md`),
//! a punch with a wind-up, a hit that applies an effect and plays a cue, and a cooldown.
//!
//! ```text
//! cargo run --example first_ability
//! ```
//!
//! A test (`first_ability_matches_the_guide`) keeps this file and the guide's code identical:
//! change both.

use rollback_abilities::prelude::*;
use rollback_abilities::{
    AbilityCtx, AbilityInput, ActivationFailure, Behaviour, ContentError, TaskEvent, TaskResult,
    TaskSpec,
};
use std::sync::{Arc, OnceLock};

/// One player's input for one frame. `Pod` because it is stored in the snapshot, serde because
/// GGRS sends it to the other peers: the `Game` trait requires both.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    bytemuck::Pod,
    bytemuck::Zeroable,
    serde::Serialize,
    serde::Deserialize,
)]
#[repr(C)]
struct Pad {
    buttons: u8,
}

struct Brawl;

impl Game for Brawl {
    type Input = Pad;
    type Component = (); // no per-entity data of our own yet
    type Global = (); // no global data either

    /// Bit i of `buttons` holds ability input i.
    fn ability_input(pad: &Pad) -> AbilityInput {
        AbilityInput { held: u32::from(pad.buttons), ..AbilityInput::default() }
    }
}

const CONTENT: &str = r#"(
    tags: ["Event.Hit", "Cooldown.Punch", "GameplayCue.Punch"],
    attribute_sets: {
        "Vitals": (attributes: { "Health": (default: 100, min: Const(0)) }),
    },
    effects: {
        // Instant: 10 damage, and the punch cue on whoever it lands on.
        "PunchDamage": (
            modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -10))],
            cues: [(tag: "GameplayCue.Punch")],
        ),
        // Lasts 30 frames (half a second at 60 Hz); its tag is the cooldown.
        "PunchCooldown": (duration: Frames(30), granted_tags: ["Cooldown.Punch"]),
    },
    timelines: {
        "Punch": (startup: 2, active: 2, recovery: 4, notifies: [(frame: 2, event: "Event.Hit")]),
    },
    abilities: {
        "Punch": (input: 0, timeline: "Punch", cooldown: "PunchCooldown", behaviour: "Punch"),
    },
)"#;

/// The ids the behaviour uses, looked up once at start-up: a misspelt name fails there, with
/// the content's "did you mean", never in the middle of a frame.
struct Ids {
    hit: TagId,
    damage: EffectDefId,
}

impl Ids {
    fn look_up(content: &Content) -> Result<Ids, ContentError> {
        Ok(Ids { hit: content.tag("Event.Hit")?, damage: content.effect("PunchDamage")? })
    }
}

/// Set by `main` before the first step; the behaviours only read it.
static IDS: OnceLock<Ids> = OnceLock::new();

/// The `Punch` behaviour, on activation: wait for the timeline's hit notify.
fn punch_activate(ctx: &mut AbilityCtx<'_, Brawl>) {
    let Some(ids) = IDS.get() else { return };
    let _ = ctx.spawn_task(0, TaskSpec::WaitEvent { tag: ids.hit, once: true });
}

/// …and when it comes, the fist connects.
fn punch_task(ctx: &mut AbilityCtx<'_, Brawl>, report: &TaskResult) {
    let (Some(ids), TaskEvent::Event(_)) = (IDS.get(), report.event) else { return };
    let me = ctx.owner();
    let world = ctx.world();
    let foe = (0..world.players()).filter_map(|p| world.player_owner(p)).find(|&e| e != me);
    if let Some(foe) = foe {
        let damage = ctx.make_spec(ids.damage);
        ctx.apply(damage, foe);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let content = Arc::new(Content::from_ron_str(CONTENT)?);
    let _ = IDS.set(Ids::look_up(&content)?);
    let punch_behaviour = Behaviour {
        on_activate: Some(punch_activate),
        on_task: Some(punch_task),
        ..Behaviour::default()
    };
    let hooks = Hooks::new().behaviour("Punch", punch_behaviour);
    let mut world = World::<Brawl>::new(content.clone(), &hooks, WorldConfig::default())?;

    // Two fighters with Health; player 0 drives the hero, player 1 the rival.
    let vitals = content.attr_set("Vitals")?;
    let hero = world.spawn_actor(&[vitals]).expect("room for an entity");
    let rival = world.spawn_actor(&[vitals]).expect("room for an entity");
    world.bind_player(0, hero);
    world.bind_player(1, rival);
    assert_eq!(world.player_owner(1), Some(rival));
    let punch = world.grant_ability(hero, content.ability("Punch")?, 1).expect("a free slot");

    let health = content.attr("Health")?;
    let cue = content.tag("GameplayCue.Punch")?;
    let mut cues = Vec::new();
    // Player 0 taps the button in frames 0, 10 and 30; player 1 does nothing.
    for frame in 0..40u32 {
        let buttons = u8::from([0, 10, 30].contains(&frame));
        world.step(&[Pad { buttons }, Pad::default()]);
        for c in &world.output().cues {
            assert_eq!((c.key.tag, c.key.target), (cue, rival));
            cues.push(c.key.frame);
        }
        match frame {
            0 => {
                assert!(world.is_ability_active(punch)); // the press activated it…
                assert_eq!(world.ability_cooldown_remaining(punch), Some((30, 30))); // …and its cooldown
            }
            1 => assert_eq!(world.attr(rival, health), Some(Fx::from_num(100))), // winding up
            2 => assert_eq!(world.attr(rival, health), Some(Fx::from_num(90))),  // the hit
            8 => assert!(!world.is_ability_active(punch)), // the timeline is over: the punch ends
            10 => {
                let attempt = world.last_activation(punch).map(|r| r.result);
                assert_eq!(attempt, Some(Err(ActivationFailure::OnCooldown)));
            }
            _ => {}
        }
    }
    // Two punches landed (frames 2 and 32), each with its cue; the one in frame 10 was refused.
    assert_eq!(world.attr(rival, health), Some(Fx::from_num(80)));
    assert_eq!(world.attr(hero, health), Some(Fx::from_num(100)));
    assert_eq!(cues, [2, 32]);
    println!(
        "punches landed in frames {cues:?}; rival's Health: 100 -> {}",
        world.attr(rival, health).unwrap_or_default()
    );
    Ok(())
}
