//! Quickstart: two fighters trade poison, crit strikes and shields for 15 seconds of game time,
//! once stepped straight and once with a random 1–8 frame rollback after every frame. Both runs
//! must end with identical snapshot checksums.
//!
//! Run with `cargo run --release --example quickstart`.

use rollback_abilities::prelude::*;
use rollback_abilities::session::RollbackDriver;
use rollback_abilities::{Capture, ExecCtx, ExecutedMod};
use std::sync::Arc;

struct Quickstart;

impl Game for Quickstart {
    type Input = u8;
    type Component = ();
    type Global = ();
}

/// Moves meta damage into Health and marks death.
fn vitals_post(w: &mut World<Quickstart>, m: &ExecutedMod) {
    let c = w.content().clone();
    let (damage, health) = (c.attr("Damage").unwrap(), c.attr("Health").unwrap());
    let hp_after = if m.attr == damage {
        let hp = w.base(m.target, health).unwrap_or(Fx::ZERO).saturating_sub(m.new_base);
        w.set_base(m.target, health, hp);
        hp
    } else if m.attr == health {
        m.new_base
    } else {
        return;
    };
    if hp_after <= Fx::ZERO {
        let dead = c.tag("State.Dead").unwrap();
        if !w.has_tag(m.target, dead) {
            w.add_loose_tag(m.target, dead);
        }
    }
}

/// A critical hit deals the attack power once more: the roll comes from a stream every peer
/// derives alike, so no peer can disagree about it.
fn crit(ctx: &mut ExecCtx<'_>) {
    let (chance, power) = (ctx.capture(0), ctx.capture(1));
    if ctx.random().chance(chance) {
        let damage = ctx.content().attr("Damage").unwrap();
        ctx.output(damage, ModOp::Add, power);
    }
}

/// The match script: what happens in which frame (a function of the frame, so a rollback
/// re-simulates it exactly).
fn script(w: &mut World<Quickstart>, fighters: [Entity; 2]) {
    let c = w.content().clone();
    let frame = w.frame();
    let [a, b] = fighters;
    let every = |n: u32, offset: u32| frame % n == offset;
    if every(45, 0) {
        let spec = w.make_spec(c.effect("Strike").unwrap(), 1, a);
        let _ = w.apply_effect(spec, b);
    }
    if every(70, 10) {
        let spec = w.make_spec(c.effect("Strike").unwrap(), 1, b);
        let _ = w.apply_effect(spec, a);
    }
    if every(100, 20) {
        let spec = w.make_spec(c.effect("Poison").unwrap(), 2, a);
        let _ = w.apply_effect(spec, b);
    }
    if every(240, 120) {
        let spec = w.make_spec(c.effect("Shield").unwrap(), 1, b);
        let _ = w.apply_effect(spec, b);
    }
}

fn setup() -> Result<(World<Quickstart>, [Entity; 2]), Box<dyn std::error::Error>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/content/quickstart.ron");
    let text = std::fs::read_to_string(dir)?;
    let content = Arc::new(Content::from_ron_str(&text)?);
    let hooks = Hooks::new().post_execute("VitalsPost", vitals_post).execution(
        "Crit",
        &[Capture::source("CritChance"), Capture::source_snapshot("AttackPower")],
        crit,
    );
    let config = WorldConfig {
        max_entities: 16,
        effects_per_entity: 16,
        players: 2,
        seed: 2026,
        ..WorldConfig::default()
    };
    let mut world = World::new(content.clone(), &hooks, config)?;
    let sets = [content.attr_set("Vitals")?, content.attr_set("Offense")?];
    let a = world.spawn_actor(&sets)?;
    let b = world.spawn_actor(&sets)?;
    Ok((world, [a, b]))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const FRAMES: u32 = 900;
    let (mut straight, fighters) = setup()?;
    for _ in 0..FRAMES {
        straight.step_with(&[0, 0], |w| script(w, fighters));
    }

    let (mut rolled, fighters) = setup()?;
    let mut driver = RollbackDriver::new(&rolled, 8, 99);
    for _ in 0..FRAMES {
        driver.advance(&mut rolled, |_, inputs| inputs.extend([0, 0]), |w| script(w, fighters))?;
    }

    let c = straight.content().clone();
    println!("rollback_abilities quickstart: {FRAMES} frames at 60 Hz");
    println!("content hash      {:016x}", c.hash());
    println!("snapshot size     {} bytes", straight.snapshot_bytes());
    let stats = driver.stats();
    println!(
        "rollbacks         {} (deepest {}, {} frames re-simulated)",
        stats.rollbacks, stats.max_depth, stats.resimulated
    );
    for (name, e) in ["fighter A", "fighter B"].iter().zip(fighters) {
        let hp = straight.attr(e, c.attr("Health")?).unwrap_or_default();
        let tags = c.tags().display_set(&straight.explicit_tags(e));
        let effects: Vec<String> = straight
            .effects(e)
            .iter()
            .map(|f| format!("{}x{}", c.effect_name(f.def), f.stacks))
            .collect();
        println!("{name}         health {hp}, tags {tags}, effects [{}]", effects.join(", "));
    }
    let (s, r) = (straight.checksum(), rolled.checksum());
    println!("checksum straight {s:016x}");
    println!("checksum rolled   {r:016x}");
    if s != r {
        return Err("the rolled-back run diverged from the straight run".into());
    }
    println!("checksums agree: every rollback re-simulated the same bytes");
    Ok(())
}
