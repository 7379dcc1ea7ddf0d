//! Frozen effect definitions: magnitudes, modifiers, durations and periods, stacking, cues,
//! scoped modifiers, and the rule enums the effect pipelines match on.

use crate::attribute::ModOp;
use crate::capacity::MAX_SPEC_ROOM;
use crate::id::{AttrId, CurveId, FnId, TagId};
use crate::num::{self, Frame, Fx};
use crate::tag::{TagContainer, TagQuery, TagRequirements, TagSet};
use serde::{Deserialize, Serialize};

/// The most modifiers one effect definition may have.
pub const MAX_MODIFIERS: usize = 8;

/// The SetByCaller values one spec carries in itself (its inline room, and the default of
/// `WorldConfig::set_by_caller_per_spec`; a world can hold more per spec).
pub const MAX_SET_BY_CALLER: usize = crate::capacity::INLINE_SET_BY_CALLER;

/// The most SetByCaller keys one effect definition may read (content is frozen before any
/// world exists; a world whose `set_by_caller_per_spec` is smaller than what its content
/// reads refuses it with `WorldError::CapacityTooSmall`).
pub const MAX_SET_BY_CALLER_KEYS: usize = MAX_SPEC_ROOM as usize;

/// A frozen magnitude.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MagnitudeDef {
    /// `coef × curve(level)` or `coef`.
    Scalable {
        /// The coefficient.
        coef: Fx,
        /// The curve.
        curve: Option<CurveId>,
    },
    /// `coef × (value + pre) + post` of a captured attribute.
    Attribute {
        /// The captured attribute.
        attr: AttrId,
        /// Source or target.
        side: CaptureSide,
        /// Base, current or bonus.
        which: CaptureWhich,
        /// The coefficient.
        coef: Fx,
        /// Added before the coefficient.
        pre: Fx,
        /// Added after the coefficient.
        post: Fx,
        /// Captured once instead of live.
        snapshot: bool,
        /// The tag filter (GAS's `SourceTagFilter`/`TargetTagFilter`, F-GE-10): 0 for none,
        /// else `k` for the effect's [`EffectDef::tag_filters`]`[k − 1]`. Left out of the
        /// content hash's rendering when 0.
        #[serde(skip_serializing_if = "is_zero_u8")]
        filter: u8,
    },
    /// `coef × (calc + pre) + post` of a registered calculation.
    Custom {
        /// The calculation.
        calc: FnId,
        /// The coefficient.
        coef: Fx,
        /// Added before the coefficient.
        pre: Fx,
        /// Added after the coefficient.
        post: Fx,
    },
    /// A SetByCaller value.
    SetByCaller(TagId),
}

/// Whole frames from a duration or period magnitude (F-GA-08): rounded to the nearest frame,
/// halves up (`2.5` → 3, `−0.5` → 0), so a value built from an inexact decimal (`0.9 × 100` is
/// 89.99999999…) gives the frame it was meant to. Saturating; the caller clamps the range.
pub fn round_frames(v: Fx) -> i64 {
    num::add(v, Fx::from_bits(1 << 31)).to_num::<i64>()
}

fn is_zero_u8(v: &u8) -> bool {
    *v == 0
}

/// The tag filters of an attribute-based magnitude (GAS's `AttributeBasedFloat`
/// `SourceTagFilter` and `TargetTagFilter`, F-GE-10): only the captured attribute's modifiers
/// that pass them are aggregated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AttrTagFilterDef {
    /// Requirements on the source tags of each modifier's effect (as captured when its spec
    /// was made).
    pub source: TagRequirements,
    /// Requirements on the tags of the entity the modifiers are on, when the value is read.
    pub target: TagRequirements,
}

/// What a scoped modifier of an execution changes (F-GE-14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ScopedTarget {
    /// The execution's captures of this attribute on this side.
    Attribute {
        /// The captured attribute.
        attr: AttrId,
        /// Source or target.
        side: CaptureSide,
    },
    /// A transient aggregator: a named value that starts at 0 in every execution.
    Transient(TagId),
}

/// A scoped modifier (GAS's execution calculation modifier, F-GE-14): it changes what one
/// execution reads, for that execution only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScopedModifierDef {
    /// The index of the execution in [`EffectDef::executions`].
    pub execution: u8,
    /// What it changes.
    pub target: ScopedTarget,
    /// The operation.
    pub op: ModOp,
    /// The magnitude (evaluated when the execution runs).
    pub magnitude: MagnitudeDef,
    /// Requirements on the spec's source tags.
    pub source_tags: TagRequirements,
    /// Requirements on the target's tags.
    pub target_tags: TagRequirements,
}

/// The most scoped modifiers one execution may have.
pub const MAX_SCOPED_MODIFIERS: usize = 8;

impl MagnitudeDef {
    /// Whether the magnitude follows captured attributes live: a non-snapshot attribute
    /// capture, or a custom calculation (re-run when an attribute it captures changes).
    pub fn is_live(&self) -> bool {
        matches!(
            self,
            MagnitudeDef::Attribute { snapshot: false, .. } | MagnitudeDef::Custom { .. }
        )
    }
}

/// A frozen modifier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModifierDef {
    /// The modified attribute.
    pub attr: AttrId,
    /// The operation.
    pub op: ModOp,
    /// The magnitude.
    pub magnitude: MagnitudeDef,
    /// Requirements on the source's tags (checked at application).
    pub source_tags: TagRequirements,
    /// Requirements on the target's tags (checked at application).
    pub target_tags: TagRequirements,
    /// Re-check the requirements before each periodic execution.
    pub reevaluate_each_period: bool,
}

/// An effect's duration policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DurationDef {
    /// Executes once on the base values.
    Instant,
    /// Lasts until removed.
    Infinite,
    /// A fixed number of frames (at least 1).
    Frames(Frame),
    /// Frames from a SetByCaller value (at least 1 after rounding down).
    SetByCaller(TagId),
    /// Frames from a magnitude evaluated at application (`Scalable`, `Attribute`, `Custom`),
    /// rounded to the nearest frame (halves up) and clamped to
    /// `1..=`[`MAX_FINITE_FRAMES`](crate::num::MAX_FINITE_FRAMES) (a clamp is reported as
    /// `Diagnostic::TimeClamped`).
    Magnitude(MagnitudeDef),
}

impl DurationDef {
    /// Whether the effect is instant.
    pub fn is_instant(self) -> bool {
        matches!(self, DurationDef::Instant)
    }
}

/// Frozen stacking rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct StackingDef {
    /// By source or by target.
    pub kind: StackKind,
    /// The most stacks.
    pub limit: u16,
    /// Duration refresh policy.
    pub refresh: StackRefresh,
    /// Period reset policy.
    pub period: StackPeriod,
    /// Expiration policy.
    pub expiration: StackExpiration,
    /// Refuse applications at the limit.
    pub deny_overflow: bool,
}

/// A cue entry on an effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EffectCueDef {
    /// The `GameplayCue.*` tag.
    pub tag: TagId,
    /// Which events it emits.
    pub events: CueEvents,
    /// The attribute whose modifier magnitude fills the cue's magnitude.
    pub magnitude_attribute: Option<AttrId>,
}

impl EffectCueDef {
    /// Whether the entry emits persistent events for an effect with this duration.
    pub fn persistent(&self, duration: DurationDef) -> bool {
        !duration.is_instant() && matches!(self.events, CueEvents::Auto | CueEvents::Persistent)
    }

    /// Whether the entry emits `Executed` for executions of an effect with this duration.
    pub fn executed(&self) -> bool {
        matches!(self.events, CueEvents::Auto | CueEvents::Executed)
    }
}

/// A frozen gameplay-effect definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EffectDef {
    /// The effect's name.
    pub name: String,
    /// Duration policy.
    pub duration: DurationDef,
    /// Frames between executions (0: not periodic, or computed at each application from
    /// `period_magnitude`).
    pub period: Frame,
    /// A period computed at application from a magnitude (rounded to the nearest frame, at
    /// least 1): the effect is periodic and `period` is 0. Left out of the content hash's
    /// rendering when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_magnitude: Option<MagnitudeDef>,
    /// Whether a periodic effect executes when applied.
    pub execute_on_application: bool,
    /// Modifiers.
    pub modifiers: Vec<ModifierDef>,
    /// Executions.
    pub executions: Vec<FnId>,
    /// Descriptive tags.
    pub asset_tags: TagContainer,
    /// Tags granted to the target while active and not inhibited.
    pub granted_tags: TagContainer,
    /// Asset ∪ granted tags: what "remove effects with tags" and effect queries match.
    pub owned_tags: TagContainer,
    /// Ability tags blocked while active.
    pub blocked_ability_tags: TagSet,
    /// Tags matched against other effects' owned tags on application.
    pub remove_effects_with_tags: TagSet,
    /// Tags that block incoming specs whose source tags match.
    pub immunity_tags: TagSet,
    /// A query that blocks incoming specs whose asset, granted or source tags match.
    pub immunity_query: Option<TagQuery>,
    /// Requirements on the target's tags to apply.
    pub application_requirements: TagRequirements,
    /// Requirements on the target's tags to stay switched on.
    pub ongoing_requirements: TagRequirements,
    /// Stacking rules.
    pub stacking: Option<StackingDef>,
    /// Cues.
    pub cues: Vec<EffectCueDef>,
    /// Registered application requirements.
    pub custom_requirements: Vec<FnId>,
    /// SetByCaller tags the definition reads (modifiers and duration), sorted.
    pub set_by_caller_keys: Vec<TagId>,
    /// Whether any modifier follows a captured attribute live.
    pub has_live_captures: bool,
    /// Whether any modifier follows a *source* attribute live.
    pub has_live_source_captures: bool,
    /// Abilities granted to the target while active (F-GE-21).
    pub granted_abilities: Vec<GrantDef>,
    /// Frames of hitstop each application gives the target (F-GA-23). Left out of the content
    /// hash's rendering when 0.
    #[serde(skip_serializing_if = "is_zero_u16")]
    pub hitstop: u16,
    /// Frames of hitstop each application gives the spec's instigator. Left out of the content
    /// hash's rendering when 0.
    #[serde(skip_serializing_if = "is_zero_u16")]
    pub instigator_hitstop: u16,
    /// Whether active instances keep their full spec (context, SetByCaller values, captured
    /// source tags) because executions or calculations re-read it after application.
    pub keeps_spec: bool,
    /// The tag filters of attribute-based magnitudes (indexed by `MagnitudeDef::Attribute`'s
    /// `filter − 1`). Left out of the content hash's rendering when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tag_filters: Vec<AttrTagFilterDef>,
    /// The executions' scoped modifiers, by execution in order. Left out of the content hash's
    /// rendering when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scoped_modifiers: Vec<ScopedModifierDef>,
}

impl EffectDef {
    /// Whether the effect is instant.
    pub fn is_instant(&self) -> bool {
        self.duration.is_instant()
    }

    /// Whether the effect executes periodically.
    pub fn is_periodic(&self) -> bool {
        self.period > 0 || self.period_magnitude.is_some()
    }

    /// The magnitudes evaluated at application besides the modifiers', in the order their
    /// source snapshot captures are kept after the executions' (F-GE-02): the duration's, the
    /// period's, then the scoped modifiers'.
    pub fn extra_magnitudes(&self) -> impl Iterator<Item = &MagnitudeDef> + '_ {
        let duration = match &self.duration {
            DurationDef::Magnitude(m) => Some(m),
            _ => None,
        };
        duration
            .into_iter()
            .chain(self.period_magnitude.as_ref())
            .chain(self.scoped_modifiers.iter().map(|s| &s.magnitude))
    }

    /// The tag filter of an attribute-based magnitude (`None` for no filter).
    pub fn tag_filter(&self, filter: u8) -> Option<&AttrTagFilterDef> {
        usize::from(filter).checked_sub(1).and_then(|i| self.tag_filters.get(i))
    }
}

/// For `skip_serializing_if`: a zero that the content hash's rendering leaves out.
#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero_u16(v: &u16) -> bool {
    *v == 0
}

/// Which entity an attribute capture reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CaptureSide {
    /// The spec's source (instigator).
    Source,
    /// The effect's target.
    Target,
}

/// Which value of a captured attribute is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CaptureWhich {
    /// The current value.
    #[default]
    Current,
    /// The base value.
    Base,
    /// `current − base`.
    Bonus,
}

/// How applications of the same effect stack.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StackKind {
    /// Each application is its own instance.
    #[default]
    None,
    /// One stack per source entity.
    BySource,
    /// One shared stack on the target.
    ByTarget,
}

/// Whether a new application refreshes the stack's duration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StackRefresh {
    /// Every successful application restarts the duration (with the incoming spec's duration).
    #[default]
    OnApplication,
    /// The duration is never refreshed.
    Never,
}

/// Whether a new application resets the period timer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StackPeriod {
    /// The next execution is one period after the application.
    ResetOnApplication,
    /// The period keeps its original schedule.
    #[default]
    Never,
}

/// What happens when a stacked effect's duration ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StackExpiration {
    /// The whole stack is removed.
    #[default]
    ClearStack,
    /// One stack is removed and the duration restarts.
    RemoveOneAndRefresh,
    /// The duration restarts and the stack count is unchanged (remove it by other means).
    RefreshOnly,
}

/// Which cue events an effect's cue entry emits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CueEvents {
    /// Instant effects: `Executed`. Duration/infinite effects: persistent events
    /// (`OnActive`/`WhileActive`/`Removed`) plus `Executed` on every periodic execution.
    #[default]
    Auto,
    /// Only the persistent events of a duration/infinite effect.
    Persistent,
    /// Only `Executed` (instant application or periodic executions).
    Executed,
}

/// One grant of an ability set or effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GrantDef {
    /// The ability.
    pub ability: crate::id::AbilityDefId,
    /// The level.
    pub level: u16,
    /// The input id.
    pub input: Option<u8>,
    /// What happens when the granting effect goes away (ability sets: unused).
    pub removal: GrantRemoval,
}

/// What happens to an ability granted by an effect when the effect goes away.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GrantRemoval {
    /// Cancel it (if active) and remove it at once.
    #[default]
    CancelImmediately,
    /// Remove it when it next ends (at once if inactive).
    RemoveOnEnd,
    /// Keep it.
    DoNothing,
}
