//! Shared test helpers: a minimal game and content builders.

#![allow(dead_code)]

use rollback_abilities::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// A scratch directory for one test, removed (with its contents) when dropped, so a test run
/// leaves nothing behind in the temporary directory. Named by process, tag and a counter, so
/// tests running in parallel never share one.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new, empty directory.
    pub fn new(tag: &str) -> TempDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir()
            .join(format!("rollback_abilities_test_{tag}_{}_{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `text` to the file `name` in the directory.
    pub fn write(&self, name: &str, text: &str) {
        std::fs::write(self.0.join(name), text).expect("write temp file");
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A game with no data of its own.
pub struct Plain;

impl Game for Plain {
    type Input = u8;
    type Component = ();
    type Global = ();
}

pub fn content(text: &str) -> Arc<Content> {
    match Content::from_ron_str(text) {
        Ok(c) => Arc::new(c),
        Err(e) => panic!("content does not freeze: {e}"),
    }
}

pub fn world(text: &str) -> World<Plain> {
    World::new(content(text), &Hooks::new(), WorldConfig::default()).expect("world")
}

/// A world of `Plain` on `text` with these hooks.
pub fn build(text: &str, hooks: Hooks<Plain>) -> World<Plain> {
    World::new(content(text), &hooks, WorldConfig::default()).expect("world")
}

/// A tag of the world's content, by name.
pub fn tag<G: Game>(w: &World<G>, name: &str) -> TagId {
    w.content().tag(name).unwrap_or_else(|e| panic!("{e}"))
}

/// An attribute of the world's content, by name.
pub fn attr<G: Game>(w: &World<G>, name: &str) -> AttrId {
    w.content().attr(name).unwrap_or_else(|e| panic!("{e}"))
}

/// An effect definition of the world's content, by name.
pub fn def<G: Game>(w: &World<G>, name: &str) -> EffectDefId {
    w.content().effect(name).unwrap_or_else(|e| panic!("{e}"))
}

/// Spawns an actor with the named attribute sets.
pub fn actor<G: Game>(w: &mut World<G>, sets: &[&str]) -> Entity {
    let ids: Vec<AttrSetId> = sets.iter().map(|s| w.content().attr_set(s).unwrap()).collect();
    w.spawn_actor(&ids).expect("spawn")
}

/// A level-1 spec of a named definition made by `source`.
pub fn spec<G: Game>(w: &World<G>, name: &str, source: Entity) -> EffectSpec {
    w.make_spec(def(w, name), 1, source)
}

/// Applies a named definition from `source` to `target` and expects success.
pub fn apply<G: Game>(w: &mut World<G>, name: &str, source: Entity, target: Entity) -> Applied {
    let s = spec(w, name, source);
    w.apply_effect(s, target).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

/// The handle of an application that left an active effect.
pub fn handle(a: Applied) -> EffectHandle {
    match a {
        Applied::Added(h) | Applied::Stacked(h) | Applied::Redirected(h) => h,
        other => panic!("not an active effect: {other:?}"),
    }
}

/// Steps until the world has stepped `frame` (the next step simulates `frame + 1`).
pub fn run_through<G: Game>(w: &mut World<G>, frame: u32) {
    while w.next_frame() <= frame {
        w.step(&[]);
    }
}

pub fn fx(s: &str) -> Fx {
    rollback_abilities::num::parse_fx(s).expect("decimal")
}

pub fn int(v: i64) -> Fx {
    rollback_abilities::num::int(v)
}

/// A rich content set touching most effect features (used by rollback and property tests).
pub const RICH: &str = r#"(
    settings: (max_cascade_steps: 512),
    tags: [
        "State.Debuff.Stun", "State.Debuff.Poisoned", "State.Buff.Shield", "State.Dead",
        "Immune.Poison", "Effect.Dot", "Effect.Buff", "Data.Damage", "Data.Duration",
        "GameplayCue.Poison", "GameplayCue.Hit",
    ],
    attribute_sets: {
        "Vitals": (post_execute: "VitalsPost", attributes: {
            "Health": (default: 100, min: Const(0), max: Attr("MaxHealth")),
            "MaxHealth": (default: 100, min: Const(1)),
            "Vitality": (default: 10),
            "Damage": (transient: true),
        }),
        "Power": (attributes: {
            "Mana": (default: 50, min: Const(0), max: Const(100)),
            "Armor": (default: 5, mul_policy: GasCompat),
            "Speed": (default: 600, filter: MostNegativeAllPositive),
            "AttackPower": (default: 12),
        }),
    },
    curves: { "DotScale": (interp: Linear, points: [(1, 2), (5, 10)]) },
    effects: {
        "Poison": (
            duration: Frames(180), period: Frames(20),
            modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1, curve: "DotScale"))],
            asset_tags: ["Effect.Dot"], granted_tags: ["State.Debuff.Poisoned"],
            stacking: (kind: ByTarget, limit: 3, refresh: OnApplication, expiration: RemoveOneAndRefresh),
            cues: [(tag: "GameplayCue.Poison")],
        ),
        "Stun": (duration: Frames(40), granted_tags: ["State.Debuff.Stun"],
                 modifiers: [(attribute: "Speed", op: Multiply, magnitude: Scalable(coef: 0))]),
        "Slow": (duration: SetByCaller("Data.Duration"),
                 modifiers: [(attribute: "Speed", op: Add, magnitude: SetByCaller("Data.Damage"))]),
        "Haste": (duration: Frames(60), asset_tags: ["Effect.Buff"],
                  modifiers: [(attribute: "Speed", op: Multiply, magnitude: Scalable(coef: 1.25))],
                  ongoing_requirements: (ignore: ["State.Debuff.Stun"])),
        "Fortify": (duration: Infinite, asset_tags: ["Effect.Buff"],
                    modifiers: [
                        (attribute: "MaxHealth", op: Add, magnitude: Attribute((attribute: "Vitality", side: Target, coef: 10))),
                        (attribute: "Armor", op: Multiply, magnitude: Scalable(coef: 1.5)),
                    ]),
        "Aura": (duration: Frames(90),
                 modifiers: [(attribute: "AttackPower", op: Add, magnitude: Attribute((attribute: "AttackPower", side: Source, coef: 0.5)))]),
        "Shield": (duration: Frames(50), granted_tags: ["State.Buff.Shield"], immunity_tags: ["State.Debuff"],
                   immunity_query: AnyTags(["Effect.Dot"]), remove_effects_with_tags: ["Effect.Dot"]),
        "Strike": (modifiers: [(attribute: "Damage", op: Add, magnitude: Attribute((attribute: "AttackPower", side: Source, snapshot: true, coef: 1)))],
                   executions: [(calc: "Crit")], cues: [(tag: "GameplayCue.Hit")]),
        "Drain": (duration: Frames(100), period: Frames(25), execute_on_application: true,
                  executions: [(calc: "Crit")]),
        "Heal": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: 15))]),
        "Grow": (modifiers: [(attribute: "Vitality", op: Add, magnitude: Scalable(coef: 1))]),
        "Cleanse": (remove_effects_with_tags: ["State.Debuff"]),
    },
)"#;

/// Hooks for [`RICH`]: a post-execute that moves meta damage into Health and marks death, and
/// a crit execution that draws from the execution's random stream.
pub fn rich_hooks() -> Hooks<Plain> {
    use rollback_abilities::{Capture, ExecCtx, ExecutedMod};
    fn vitals_post(w: &mut World<Plain>, m: &ExecutedMod) {
        let c = w.content().clone();
        let damage = c.attr("Damage").unwrap();
        let health = c.attr("Health").unwrap();
        if m.attr == damage {
            let hp = w.base(m.target, health).unwrap_or(Fx::ZERO);
            w.set_base(m.target, health, rollback_abilities::num::sub(hp, m.new_base));
        }
        if m.attr == health && m.new_base <= Fx::ZERO {
            let dead = c.tag("State.Dead").unwrap();
            if !w.has_tag(m.target, dead) {
                w.add_loose_tag(m.target, dead);
            }
        }
    }
    fn crit(ctx: &mut ExecCtx<'_>) {
        let power = ctx.capture(0);
        let roll = ctx.random().below(100);
        let dmg = if roll < 25 { power.saturating_mul_int(2) } else { power };
        let damage = ctx.content().attr("Damage").unwrap();
        ctx.output(damage, ModOp::Add, dmg / 4);
    }
    Hooks::new().post_execute("VitalsPost", vitals_post).execution(
        "Crit",
        &[Capture::source("AttackPower")],
        crit,
    )
}
