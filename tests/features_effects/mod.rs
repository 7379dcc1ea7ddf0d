//! Feature tests for gameplay effects: F-GE-01 … F-GE-24 and F-GE-26 (`docs/features.md`).
//!
//! Timing convention (the frame schedule of `World::step`): "in frame f" means inside `World::step_with` of frame f
//! (phase P6); "at frame f" reads the world after the step of frame f.
//!
//! Content using attribute-based magnitudes starts with `#![enable(unwrap_variant_newtypes)]`
//! and writes `Attribute(attribute: …)`, so it parses whether or not the loader enables that
//! RON extension by default.

use crate::common::*;
use proptest::prelude::*;
use rollback_abilities::DurationDef;
use rollback_abilities::FnKind;
use rollback_abilities::num::NEVER;
use rollback_abilities::prelude::*;
use rollback_abilities::{
    AttrCause, ContentErrorKind, Diagnostic, EffectEvent, EffectOrigin, RemovalReason, TagQuery,
    TagQueryExpr, TargetData, WorldError,
};
use rollback_abilities::{
    CalcInput, Capture, ExecCtx, ExecutedMod, PostExecuteContext, RequirementVerdict,
};
use std::cell::RefCell;

mod application;
mod durations;
mod edges;
mod executions;
mod gas_fidelity;
mod modifiers;
mod queries;
mod runtime_changes;
mod specs;
mod stacking;
mod tags_and_immunity;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Steps empty frames until the next step simulates `frame`.
fn run_until<G: Game>(w: &mut World<G>, frame: u32) {
    while w.next_frame() < frame {
        w.step(&[]);
    }
}

fn value<G: Game>(w: &World<G>, e: Entity, a: AttrId) -> (Fx, Fx) {
    let v = w.attr_value(e, a).expect("attribute present");
    (v.base, v.current)
}

fn ts(tags: &[TagId]) -> TagSet {
    TagSet::of(tags)
}

/// The periodic effect (or `None` for instant specs) of every execution in a frame's output.
fn executed_handles(out: &FrameOutput) -> Vec<Option<EffectHandle>> {
    out.effect_events
        .iter()
        .filter_map(|e| match e {
            EffectEvent::Executed { handle, .. } => Some(*handle),
            _ => None,
        })
        .collect()
}

fn removed(out: &FrameOutput) -> Vec<(EffectHandle, RemovalReason)> {
    out.effect_events
        .iter()
        .filter_map(|e| match e {
            EffectEvent::Removed { handle, reason, .. } => Some((*handle, *reason)),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Worlds shared by several areas: recorded contexts (F-GE-03), SetByCaller (F-GE-12), a
// calculation halving a capture
// ---------------------------------------------------------------------------------------------

/// What an execution saw: source, causer, hit point, hit part, user bytes.
type SeenContext = (Entity, Entity, [Fx; 3], u32, [u8; 20]);

thread_local! {
    static CONTEXTS: RefCell<Vec<SeenContext>> = const { RefCell::new(Vec::new()) };
    static MODS: RefCell<Vec<ExecutedMod>> = const { RefCell::new(Vec::new()) };
    static SOURCE_TAGS: RefCell<Vec<TagSet>> = const { RefCell::new(Vec::new()) };
}

fn record_context(ctx: &mut ExecCtx<'_>) {
    let c = ctx.spec().context;
    CONTEXTS
        .with(|v| v.borrow_mut().push((ctx.source(), c.causer, c.hit_point, c.hit_part, c.user)));
    SOURCE_TAGS.with(|v| v.borrow_mut().push(*ctx.source_tags()));
    let health = ctx.content().attr("Health").unwrap();
    ctx.output(health, ModOp::Add, int(-1));
}

fn record_mod(_: &mut World<Plain>, m: &ExecutedMod) {
    MODS.with(|v| v.borrow_mut().push(*m));
}

const CONTEXT: &str = r#"(
    tags: ["Faction.Orc"],
    attribute_sets: { "S": (attributes: { "Health": (default: 100) }, post_execute: "RecordMod") },
    effects: {
        "Hit": (executions: [(calc: "RecordContext")]),
        "Burn": (duration: Frames(25), period: Frames(10), executions: [(calc: "RecordContext")]),
        "Mark": (duration: Infinite),
    },
)"#;

fn context_world() -> World<Plain> {
    CONTEXTS.with(|v| v.borrow_mut().clear());
    MODS.with(|v| v.borrow_mut().clear());
    SOURCE_TAGS.with(|v| v.borrow_mut().clear());
    build(
        CONTEXT,
        Hooks::new()
            .execution("RecordContext", &[], record_context)
            .post_execute("RecordMod", record_mod),
    )
}

/// A context world with a source, a target and an arrow (a bare entity, the causer).
fn context_cast() -> (World<Plain>, Entity, Entity, Entity) {
    let mut w = context_world();
    let src = actor(&mut w, &["S"]);
    let target = actor(&mut w, &["S"]);
    let arrow = w.spawn().unwrap();
    (w, src, target, arrow)
}

fn rich_context(w: &World<Plain>, name: &str, src: Entity, arrow: Entity) -> EffectSpec {
    let mut s = spec(w, name, src).with_causer(arrow);
    s.context.hit_point = [int(1), int(2), int(3)];
    s.context.hit_part = 7;
    s.context.user[0] = 42;
    s.context.source_object = arrow;
    s
}

fn read_damage(input: &CalcInput<'_>) -> Fx {
    input.set_by_caller(input.content.tag("Data.Damage").unwrap()).unwrap_or(Fx::ZERO)
}

const SBC: &str = r#"(
    tags: ["Data.Damage", "Data.Duration", "Data.Unused"],
    attribute_sets: { "S": (attributes: { "Health": (default: 100), "Mana": (default: 50) }) },
    effects: {
        "Strike": (modifiers: [(attribute: "Health", op: Add, magnitude: SetByCaller("Data.Damage"))]),
        "Bleed": (duration: Frames(30), period: Frames(10),
                  modifiers: [(attribute: "Health", op: Add, magnitude: SetByCaller("Data.Damage"))]),
        "Sap": (duration: SetByCaller("Data.Duration"),
                modifiers: [(attribute: "Mana", op: Divide, magnitude: SetByCaller("Data.Damage"))]),
        "ManaBurn": (duration: Frames(30), period: Frames(10),
                     modifiers: [(attribute: "Mana", op: Add, magnitude: Custom(calc: "ReadDamage"))]),
        "ManaShield": (duration: Infinite,
                       modifiers: [(attribute: "Mana", op: Add, magnitude: Custom(calc: "ReadDamage"))]),
    },
)"#;

fn sbc_world() -> World<Plain> {
    build(SBC, Hooks::new().calc("ReadDamage", &[], read_damage))
}

fn half_str(input: &CalcInput<'_>) -> Fx {
    input.capture(0) / 2
}
