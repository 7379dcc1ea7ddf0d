//! Gameplay effects: specs, active effects, the application pipeline, periodic execution,
//! expiry, stacking and queries.
//!
//! # Lifecycle and timing
//!
//! An [`EffectSpec`] is a value: definition, level, context, SetByCaller values and the source
//! values it captured when it was created. Applying it runs the application pipeline of F-GE-07
//! (requirements → immunity → custom requirements → SetByCaller validation → captures →
//! stacking → execute or insert → remove-with-tags → events). Instant specs change base values;
//! duration and infinite specs become [`ActiveEffect`]s whose modifiers change current values.
//!
//! An effect applied in frame `S` with a duration of `D` frames is active from its application
//! through phase P1 of frame `S + D` and is gone from phase P2 of frame `S + D`; its remaining
//! time at frame `t` is `S + D − t`. Periodic executions happen at `S + k·period` (P1 precedes
//! P2, so an execution due on the expiry frame still happens).

mod def;
pub use def::{
    AttrTagFilterDef, CaptureSide, CaptureWhich, CueEvents, DurationDef, EffectCueDef, EffectDef,
    GrantDef, GrantRemoval, MAX_MODIFIERS, MAX_SCOPED_MODIFIERS, MAX_SET_BY_CALLER,
    MAX_SET_BY_CALLER_KEYS, MagnitudeDef, ModifierDef, ScopedModifierDef, ScopedTarget,
    StackExpiration, StackKind, StackPeriod, StackRefresh, StackingDef, round_frames,
};

mod error;
mod query;

pub use error::ApplyError;

pub use query::EffectQuery;

use crate::attribute::ModOp;
use crate::id::{AbilityHandle, AttrId, EffectDefId, EffectHandle, Entity, TagId};
use crate::num::{Frame, Fx};
use crate::tag::TagSet;
use bytemuck::{Pod, Zeroable};

/// How many source values a spec can capture at creation.
pub const MAX_SOURCE_CAPTURES: usize = 8;
/// How many modifiers an inline instant spec carries in itself (more, up to
/// [`WorldConfig::inline_modifiers_per_spec`](crate::WorldConfig::inline_modifiers_per_spec),
/// with [`World::inline_spec`](crate::World::inline_spec)).
pub const MAX_INLINE_MODS: usize = crate::capacity::INLINE_MODIFIERS;
/// The definition id of inline instant specs (they have no definition).
pub const INLINE_DEF: EffectDefId = EffectDefId(u16::MAX);

/// A SetByCaller value: a tag key and a number.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct SbcEntry {
    /// The value.
    pub value: Fx,
    /// The key (`TagId`); meaningful only in the first `n` entries.
    pub tag: u16,
    _pad: [u8; 6],
}

impl SbcEntry {
    pub(crate) fn new(tag: TagId, value: Fx) -> SbcEntry {
        SbcEntry { value, tag: tag.0, _pad: [0; 6] }
    }
}

/// A modifier carried by an inline instant spec.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct InlineMod {
    /// The magnitude.
    pub magnitude: Fx,
    /// The attribute (`AttrId`).
    pub attr: u16,
    /// The operation: 0 add, 1 multiply, 2 divide, 3 override.
    pub op: u8,
    _pad: [u8; 5],
}

impl InlineMod {
    pub(crate) fn new(attr: AttrId, op: ModOp, magnitude: Fx) -> InlineMod {
        InlineMod { magnitude, attr: attr.0, op: op_to_u8(op), _pad: [0; 5] }
    }

    /// The operation.
    pub fn op(&self) -> ModOp {
        op_from_u8(self.op)
    }
}

pub(crate) fn op_to_u8(op: ModOp) -> u8 {
    match op {
        ModOp::Add => 0,
        ModOp::Multiply => 1,
        ModOp::Divide => 2,
        ModOp::Override => 3,
    }
}

pub(crate) fn op_from_u8(v: u8) -> ModOp {
    match v {
        1 => ModOp::Multiply,
        2 => ModOp::Divide,
        3 => ModOp::Override,
        _ => ModOp::Add,
    }
}

/// Who and what caused an effect (GAS `FGameplayEffectContext`), as plain data.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct EffectContext {
    /// Where a hit landed (game units, fixed point).
    pub hit_point: [Fx; 3],
    /// The surface normal of the hit.
    pub hit_normal: [Fx; 3],
    /// The entity whose ability system applied the effect (GAS instigator/source).
    pub instigator: Entity,
    /// The entity that physically caused it (a projectile, a weapon).
    pub causer: Entity,
    /// An object the effect came from (an item).
    pub source_object: Entity,
    /// The entity that was hit, if any.
    pub hit_entity: Entity,
    /// The ability that made the spec, if any.
    pub ability: AbilityHandle,
    /// That ability's activation serial.
    pub activation_serial: u32,
    /// A body-part or hit-zone index chosen by the game.
    pub hit_part: u32,
    /// Free bytes for the game.
    pub user: [u8; 20],
}

/// An effect application in waiting: plain data (`Pod`), so it can be stored in a projectile's
/// component and applied frames later.
///
/// # Effects
///
/// Gameplay effects: specs, active effects, the application pipeline, periodic execution,
/// expiry, stacking and queries.
///
/// ## Lifecycle and timing
///
/// An [`EffectSpec`] is a value: definition, level, context, SetByCaller values and the source
/// values it captured when it was created. Applying it runs the application pipeline of F-GE-07
/// (requirements → immunity → custom requirements → SetByCaller validation → captures →
/// stacking → execute or insert → remove-with-tags → events). Instant specs change base values;
/// duration and infinite specs become [`ActiveEffect`]s whose modifiers change current values.
///
/// An effect applied in frame `S` with a duration of `D` frames is active from its application
/// through phase P1 of frame `S + D` and is gone from phase P2 of frame `S + D`; its remaining
/// time at frame `t` is `S + D − t`. Periodic executions happen at `S + k·period` (P1 precedes
/// P2, so an execution due on the expiry frame still happens).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct EffectSpec {
    /// The source's ancestor-expanded tags when the spec was created (plus source ability tags).
    pub source_tags: TagSet,
    /// Source values captured at creation (snapshot captures), modifiers first.
    pub source_captures: [Fx; MAX_SOURCE_CAPTURES],
    /// SetByCaller values.
    pub set_by_caller: [SbcEntry; MAX_SET_BY_CALLER],
    /// Inline modifiers (inline instant specs only).
    pub inline: [InlineMod; MAX_INLINE_MODS],
    /// Who and what caused the effect.
    pub context: EffectContext,
    /// The frame the spec was created in.
    pub created: Frame,
    /// The definition ([`INLINE_DEF`] for inline instant specs).
    pub def: EffectDefId,
    /// The level (curves and scalable magnitudes read it).
    pub level: u16,
    /// How many SetByCaller entries are used.
    pub n_set_by_caller: u8,
    /// How many inline modifiers are used.
    pub n_inline: u8,
    /// How many source captures are used.
    pub n_source_captures: u8,
    /// Internal: 1 while the spec occupies a stored-spec slot of the world.
    pub(crate) stored: u8,
    /// A duration override in frames (0: use the definition's).
    pub duration_override: u32,
    /// Extra tags the effect grants (dynamic granted tags, `u16::MAX`: unused), for example an
    /// ability's cooldown tags on a shared cooldown effect. More than two, up to
    /// [`WorldConfig::granted_tags_per_spec`](crate::WorldConfig::granted_tags_per_spec), are
    /// added with [`World::add_granted_tag`](crate::World::add_granted_tag).
    pub dynamic_granted_tags: [u16; 2],
    /// Where the spec's values beyond its inline room are (`src/world/capacity.rs`): 0 nowhere
    /// (the common case), a frame-spill serial, a stored-spec slot, or a mark that a builder
    /// dropped a value.
    pub(crate) ext: u32,
}

impl EffectSpec {
    /// A spec without captures (see `World::make_spec` to capture the source's values and tags).
    pub fn new(def: EffectDefId, level: u16) -> EffectSpec {
        let mut s = EffectSpec::zeroed();
        s.def = def;
        s.level = level;
        s.dynamic_granted_tags = [u16::MAX; 2];
        s
    }

    /// Builder: adds a dynamic granted tag. The spec holds two in itself: a third is not
    /// kept, and the spec is marked so that applying it fails with
    /// [`ApplyError::SpecValuesDropped`] (recorded like
    /// any failed application) instead of granting fewer tags than asked; add more than two
    /// with [`World::add_granted_tag`](crate::World::add_granted_tag).
    #[must_use]
    pub fn with_granted_tag(mut self, tag: TagId) -> EffectSpec {
        if self.dynamic_granted_tags.contains(&tag.0) {
            return self;
        }
        match self.dynamic_granted_tags.iter_mut().find(|t| **t == u16::MAX) {
            Some(slot) => *slot = tag.0,
            None => self.mark_dropped(crate::capacity::Capacity::GrantedTagsPerSpec),
        }
        self
    }

    /// An inline instant spec (F-GE-24): no definition, only these modifiers on base values.
    /// The spec holds [`MAX_INLINE_MODS`] modifiers in itself; with more, the first four are
    /// kept and the spec is marked so that applying it fails with
    /// [`ApplyError::SpecValuesDropped`] (make it with
    /// [`World::inline_spec`](crate::World::inline_spec) instead).
    pub fn inline(mods: &[(AttrId, ModOp, Fx)]) -> EffectSpec {
        let mut s = EffectSpec::new(INLINE_DEF, 1);
        for (i, (attr, op, m)) in mods.iter().take(MAX_INLINE_MODS).enumerate() {
            s.inline[i] = InlineMod::new(*attr, *op, *m);
        }
        s.n_inline = mods.len().min(MAX_INLINE_MODS) as u8;
        if mods.len() > MAX_INLINE_MODS {
            s.mark_dropped(crate::capacity::Capacity::InlineModifiersPerSpec);
        }
        s
    }

    /// Marks the spec as having lost a value to its inline room (see `capacity.rs`).
    pub(crate) fn mark_dropped(&mut self, capacity: crate::capacity::Capacity) {
        self.ext = crate::capacity::ext::dropped(capacity);
    }

    /// Whether a builder dropped a value that did not fit the spec's inline room (applying
    /// it fails with [`ApplyError::SpecValuesDropped`]).
    pub fn dropped_values(&self) -> bool {
        crate::capacity::ext::dropped_capacity(self.ext).is_some()
    }

    /// Whether this is an inline instant spec.
    pub fn is_inline(&self) -> bool {
        self.def == INLINE_DEF
    }

    /// Sets a SetByCaller value in the spec itself (replacing an existing one with the same
    /// tag). Returns `false` if all [`MAX_SET_BY_CALLER`] slots are taken: nothing is set, and
    /// the spec is marked so that applying it fails with
    /// [`ApplyError::SpecValuesDropped`]. Set more
    /// values (up to [`WorldConfig::set_by_caller_per_spec`](crate::WorldConfig)) with
    /// [`World::set_set_by_caller`](crate::World::set_set_by_caller).
    pub fn set_set_by_caller(&mut self, tag: TagId, value: Fx) -> bool {
        let n = usize::from(self.n_set_by_caller).min(MAX_SET_BY_CALLER);
        if let Some(e) = self.set_by_caller[..n].iter_mut().find(|e| e.tag == tag.0) {
            e.value = value;
            return true;
        }
        if n == MAX_SET_BY_CALLER {
            self.mark_dropped(crate::capacity::Capacity::SetByCallerPerSpec);
            return false;
        }
        self.set_by_caller[n] = SbcEntry::new(tag, value);
        self.n_set_by_caller += 1;
        true
    }

    /// Builder form of [`EffectSpec::set_set_by_caller`] (a fifth value marks the spec as
    /// described there).
    #[must_use]
    pub fn with_set_by_caller(mut self, tag: TagId, value: Fx) -> EffectSpec {
        self.set_set_by_caller(tag, value);
        self
    }

    /// A SetByCaller value held in the spec itself (the first [`MAX_SET_BY_CALLER`]);
    /// [`World::set_by_caller`](crate::World::set_by_caller) also reads those set beyond.
    pub fn set_by_caller(&self, tag: TagId) -> Option<Fx> {
        let n = usize::from(self.n_set_by_caller).min(MAX_SET_BY_CALLER);
        self.set_by_caller[..n].iter().find(|e| e.tag == tag.0).map(|e| e.value)
    }

    /// Builder: sets the instigator (the entity whose ability system applies the effect).
    #[must_use]
    pub fn with_instigator(mut self, e: Entity) -> EffectSpec {
        self.context.instigator = e;
        self
    }

    /// Builder: sets the causer.
    #[must_use]
    pub fn with_causer(mut self, e: Entity) -> EffectSpec {
        self.context.causer = e;
        self
    }

    /// Builder: records a hit result in the context: the entity hit, where, the surface
    /// normal and a body-part index (post-execute hooks read it back with
    /// [`PostExecuteContext::hit`](crate::world::PostExecuteContext::hit)).
    #[must_use]
    pub fn with_hit(
        mut self,
        entity: Entity,
        point: [Fx; 3],
        normal: [Fx; 3],
        part: u32,
    ) -> EffectSpec {
        self.context.hit_entity = entity;
        self.context.hit_point = point;
        self.context.hit_normal = normal;
        self.context.hit_part = part;
        self
    }

    /// Builder: overrides the definition's duration (frames, at least 1).
    #[must_use]
    pub fn with_duration(mut self, frames: u32) -> EffectSpec {
        self.duration_override = frames.max(1);
        self
    }
}

/// Flags of an active effect.
pub(crate) mod effect_flags {
    /// Ongoing requirements fail: modifiers, granted tags and cues are off.
    pub const INHIBITED: u16 = 1;
}

/// An active duration or infinite effect, as stored in the snapshot: what aggregation, tag and
/// block-set queries read (definition, level, stacks, flags, tags; 40 bytes). A parallel
/// column holds its [`EffectTimers`] at the same index (when it expires and next executes:
/// what the per-frame wake scans read, 8 bytes); who applied it ([`EffectOrigin`]) is kept in
/// a world-wide pool only when it was not the target itself ([`ActiveEffect::origin`]).
/// See [`World::effect_timers`](crate::World::effect_timers) and
/// [`World::effect_origins`](crate::World::effect_origins).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct ActiveEffect {
    /// The application sequence number (unique per world, ascending in application order).
    pub seq: u32,
    /// The definition.
    pub def: EffectDefId,
    /// The level.
    pub level: u16,
    /// The stack count (1 for unstacked effects).
    pub stacks: u16,
    /// Flags (inhibited).
    pub flags: u16,
    /// The frame it was applied.
    pub start: Frame,
    /// Its duration in frames ([`crate::num::NEVER`] for infinite effects).
    pub duration: u32,
    /// Which modifiers qualified at application (bit per modifier).
    pub qualified: u32,
    /// Dynamic granted tags from the spec (`u16::MAX`: unused). More than two (a world with a
    /// raised `WorldConfig::granted_tags_per_spec`) are in the effect's row of the snapshot's
    /// `effect_tag_overflow` column: read them all with
    /// [`World::effect_dynamic_tags`](crate::World::effect_dynamic_tags).
    pub dynamic_tags: [u16; 2],
    /// The frame it last became active (applied, or switched back on after inhibition).
    pub active_since: Frame,
    /// The stored-spec slot keeping its full spec (`u32::MAX`: none kept).
    pub spec_slot: u32,
    /// Where its [`EffectOrigin`] is kept: [`SELF_ORIGIN`] when the target applied it to itself
    /// (instigator and causer are the target; no source object, no ability), else a slot of
    /// the world's origin pool. Read origins with
    /// [`World::effect_origin`](crate::World::effect_origin) or
    /// [`World::effect_origins`](crate::World::effect_origins).
    pub origin: u32,
}

/// [`ActiveEffect::origin`] of an effect its target applied to itself with no source object
/// and no ability: the common case keeps no origin record, so it costs the snapshot nothing.
pub const SELF_ORIGIN: u32 = u32::MAX;

/// When an active effect next needs the step: the snapshot column beside [`ActiveEffect`]
/// (same index) that phases P1 and P2 scan every frame, kept dense so a fighter's 24 effects
/// are three cache lines.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct EffectTimers {
    /// The frame it leaves ([`crate::num::NEVER`] for infinite effects).
    pub expires_at: Frame,
    /// The frame of the next periodic execution ([`crate::num::NEVER`] if not periodic).
    pub next_period_at: Frame,
}

impl EffectTimers {
    /// Remaining frames at `frame` (`None` for infinite effects).
    pub fn remaining(&self, frame: Frame) -> Option<u32> {
        (self.expires_at != crate::num::NEVER).then(|| self.expires_at.saturating_sub(frame))
    }
}

/// Who and what applied an active effect: the spec's context, read when a cue, an execution, a
/// live source capture or an [`EffectQuery`] by instigator or ability needs it. An effect the
/// target applied to itself without a source object or an ability keeps none (its origin is
/// [`EffectOrigin::of_self`]); any other is kept in the world's origin pool, a snapshot column
/// whose saves, loads and checksums cover only its used records.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct EffectOrigin {
    /// The spec's instigator.
    pub instigator: Entity,
    /// The spec's causer.
    pub causer: Entity,
    /// The spec's source object.
    pub source_object: Entity,
    /// The ability that applied it.
    pub ability: AbilityHandle,
    /// That ability's activation serial.
    pub activation_serial: u32,
}

impl EffectOrigin {
    /// The origin of an effect `target` applied to itself with no source object and no
    /// ability (what [`SELF_ORIGIN`] stands for).
    pub fn of_self(target: Entity) -> EffectOrigin {
        EffectOrigin { instigator: target, causer: target, ..EffectOrigin::default() }
    }
}

/// A pooled [`EffectOrigin`] with the effect it belongs to (the pool is dense: removing one
/// moves the last record into the hole and re-points that record's effect).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub(crate) struct PooledOrigin {
    /// The origin.
    pub origin: EffectOrigin,
    /// The target's entity slot.
    pub target: u32,
    /// The effect's application sequence number.
    pub seq: u32,
}

impl ActiveEffect {
    /// Whether ongoing requirements currently switch it off.
    pub fn is_inhibited(&self) -> bool {
        self.flags & effect_flags::INHIBITED != 0
    }

    /// Whether modifier `i` qualified at application.
    pub fn mod_qualified(&self, i: usize) -> bool {
        i < 32 && self.qualified & (1 << i) != 0
    }

    /// The handle of this effect on `target`.
    pub fn handle(&self, target: Entity) -> EffectHandle {
        EffectHandle { target, seq: self.seq }
    }
}

const _: () = assert!(MAX_MODIFIERS <= 32);
