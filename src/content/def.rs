//! Frozen definitions: what content becomes after validation, with every name resolved to an id.

use super::raw::{
    CaptureSide, CaptureWhich, ClampMode, CueEvents, Interp, ModOp, MulPolicy, StackExpiration,
    StackKind, StackPeriod, StackRefresh,
};
use crate::id::{AttrId, AttrSetId, CurveId, FnId, TagId};
use crate::num::{self, Frame, Fx};
use crate::tag::{TagContainer, TagQuery, TagRequirements, TagSet};
use serde::Serialize;

/// The most modifiers one effect definition may have.
pub const MAX_MODIFIERS: usize = 8;
/// The SetByCaller values one spec carries in itself (its inline room, and the default of
/// `WorldConfig::set_by_caller_per_spec`; a world can hold more per spec).
pub const MAX_SET_BY_CALLER: usize = 4;
/// The most SetByCaller keys one effect definition may read (content is frozen before any
/// world exists; a world whose `set_by_caller_per_spec` is smaller than what its content
/// reads refuses it with `WorldError::CapacityTooSmall`).
pub const MAX_SET_BY_CALLER_KEYS: usize = MAX_SPEC_ROOM as usize;
/// The largest value of the four per-spec and per-ability capacities of a world
/// (`WorldConfig::set_by_caller_per_spec` and its siblings).
pub const MAX_SPEC_ROOM: u16 = 32;

/// The kind of a registered function referenced by content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum FnKind {
    /// A custom magnitude calculation (`MagnitudeCalc`, GAS MMC).
    Calc,
    /// An execution (GAS ExecutionCalculation).
    Execution,
    /// A custom application requirement.
    Requirement,
    /// An attribute set's post-execute hook.
    PostExecute,
    /// An attribute set's pre-change hook.
    PreChange,
    /// A custom modifier qualification filter.
    ModFilter,
    /// An ability behaviour (activate / task / input / end functions).
    Behaviour,
    /// A custom ability activation check.
    CanActivate,
}

impl FnKind {
    /// The human name with its indefinite article ("an execution").
    pub fn with_article(self) -> String {
        let d = self.describe();
        let article = if d.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
        format!("{article} {d}")
    }

    /// A human name for messages.
    pub fn describe(self) -> &'static str {
        match self {
            FnKind::Calc => "magnitude calculation",
            FnKind::Execution => "execution",
            FnKind::Requirement => "application requirement",
            FnKind::PostExecute => "post-execute hook",
            FnKind::PreChange => "pre-change hook",
            FnKind::ModFilter => "modifier filter",
            FnKind::Behaviour => "ability behaviour",
            FnKind::CanActivate => "activation check",
        }
    }
}

/// A function referenced by content, resolved against registered hooks when a world is built.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FnRef {
    /// The registered name.
    pub name: String,
    /// What it must be.
    pub kind: FnKind,
}

/// Global settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Settings {
    /// Frames per second.
    pub tick_rate: crate::num::TickRate,
    /// The multiplication policy of attributes that do not choose one.
    pub default_mul_policy: MulPolicy,
    /// The cap on same-frame cascade steps.
    pub max_cascade_steps: u32,
    /// The tag that makes activation fail with `Dead`.
    pub dead_tag: Option<TagId>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            tick_rate: crate::num::TickRate(60),
            default_mul_policy: MulPolicy::Compound,
            max_cascade_steps: 256,
            dead_tag: None,
        }
    }
}

/// A clamp bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Bound {
    /// A constant.
    Const(Fx),
    /// The current value of another attribute of the same entity.
    Attr(AttrId),
}

/// Which modifiers of a channel qualify.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum ModFilter {
    /// Every modifier counts.
    #[default]
    All,
    /// Every positive contribution plus only the most negative one.
    MostNegativeAllPositive,
    /// Only the contribution with the greatest absolute size.
    GreatestOnly,
    /// A registered filter function.
    Custom(FnId),
}

/// A frozen attribute definition.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AttrDef {
    /// The attribute's name.
    pub name: String,
    /// The set it belongs to.
    pub set: AttrSetId,
    /// The initial base value.
    pub default: Fx,
    /// The lower clamp bound.
    pub min: Option<Bound>,
    /// The upper clamp bound.
    pub max: Option<Bound>,
    /// Where clamps act.
    pub clamp_mode: ClampMode,
    /// Whether the base value is clamped after instant/periodic changes.
    pub apply_to_base: bool,
    /// The multiplication policy.
    pub mul_policy: MulPolicy,
    /// The qualification filter.
    pub filter: ModFilter,
    /// A meta attribute (reset to 0 after each execution).
    pub transient: bool,
    /// Attributes whose clamps read this one (they are re-evaluated when it changes).
    pub clamp_dependents: Vec<AttrId>,
}

/// A frozen attribute set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AttrSetDef {
    /// The set's name.
    pub name: String,
    /// Its attributes in id order.
    pub attributes: Vec<AttrId>,
    /// The post-execute hook.
    pub post_execute: Option<FnId>,
    /// The pre-change hook.
    pub pre_change: Option<FnId>,
    /// The level table (F-ATTR-10), rows in strictly increasing level order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<AttrLevelRow>,
}

impl AttrSetDef {
    /// The level-table row that applies at `level`: the row of the greatest level not above it.
    /// `None` when the set has no table or every row is above `level`.
    pub fn level_row(&self, level: u16) -> Option<&AttrLevelRow> {
        self.levels.iter().take_while(|r| r.level <= level).last()
    }
}

/// One row of an attribute set's level table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AttrLevelRow {
    /// The level.
    pub level: u16,
    /// Base values of attributes of the set, in attribute-id order.
    pub values: Vec<(AttrId, Fx)>,
}

/// A frozen curve.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CurveDef {
    /// The curve's name.
    pub name: String,
    /// Interpolation.
    pub interp: Interp,
    /// `(level, value)` points, strictly increasing levels, never empty.
    pub points: Vec<(u16, Fx)>,
}

impl CurveDef {
    /// The value at `level`: exact points, interpolated between points, the first value below the
    /// first point and the last value beyond the last point.
    pub fn eval(&self, level: u16) -> Fx {
        let Some(first) = self.points.first() else { return Fx::ZERO };
        if level <= first.0 {
            return first.1;
        }
        for w in self.points.windows(2) {
            let (l0, v0) = w[0];
            let (l1, v1) = w[1];
            if level == l1 {
                return v1;
            }
            if level < l1 {
                return match self.interp {
                    Interp::Step => v0,
                    Interp::Linear => {
                        let t = num::ratio(i64::from(level - l0), i64::from(l1 - l0));
                        num::add(v0, num::mul(num::sub(v1, v0), t))
                    }
                };
            }
        }
        self.points.last().map(|p| p.1).unwrap_or(Fx::ZERO)
    }
}

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
    /// A query that blocks incoming specs whose tags match.
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

/// How an ability is triggered besides input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TriggerDef {
    /// A gameplay event whose tag matches (hierarchically).
    Event(TagId),
    /// The owner gains the tag.
    TagAdded(TagId),
    /// The owner gains the tag; the ability is cancelled when it goes away.
    TagPresent(TagId),
}

impl TriggerDef {
    /// The trigger's tag.
    pub fn tag(self) -> TagId {
        match self {
            TriggerDef::Event(t) | TriggerDef::TagAdded(t) | TriggerDef::TagPresent(t) => t,
        }
    }
}

/// A frozen ability definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AbilityDef {
    /// The ability's name.
    pub name: String,
    /// Tags describing the ability.
    pub tags: TagContainer,
    /// Activating cancels running abilities whose tags match.
    pub cancel_abilities_with_tags: TagSet,
    /// While running, abilities whose tags match cannot activate.
    pub block_abilities_with_tags: TagSet,
    /// Tags the owner carries while the ability runs.
    pub activation_owned_tags: TagSet,
    /// The owner needs all of these.
    pub activation_required_tags: TagSet,
    /// The owner may have none of these.
    pub activation_blocked_tags: TagSet,
    /// Event activations: instigator requirements.
    pub source_required_tags: TagSet,
    /// Event activations: instigator blockers.
    pub source_blocked_tags: TagSet,
    /// Event activations: target requirements.
    pub target_required_tags: TagSet,
    /// Event activations: target blockers.
    pub target_blocked_tags: TagSet,
    /// The cost effect (instant).
    pub cost: Option<crate::id::EffectDefId>,
    /// SetByCaller values for the cost spec.
    pub cost_set_by_caller: Vec<(TagId, Fx)>,
    /// The cooldown effect (duration).
    pub cooldown: Option<crate::id::EffectDefId>,
    /// A duration override for the cooldown effect; when the effect's duration is
    /// `SetByCaller(key)`, the commit also sets `key` to this many frames.
    pub cooldown_duration: Option<Frame>,
    /// SetByCaller values for the cooldown spec (a SetByCaller duration's key is frames).
    /// Left out of the content hash's rendering when empty, so content that does not use it
    /// keeps its hash.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cooldown_set_by_caller: Vec<(TagId, Fx)>,
    /// Extra cooldown tags granted by the cooldown effect for this ability.
    pub cooldown_tags: Vec<TagId>,
    /// The cooldown tags: the cooldown effect's granted tags ∪ `cooldown_tags` (computed at
    /// freeze, never in a shared scratch: G-18).
    pub all_cooldown_tags: TagSet,
    /// State-blob policy.
    pub instancing: super::raw::Instancing,
    /// Triggers.
    pub triggers: Vec<TriggerDef>,
    /// Activates when granted.
    pub passive: bool,
    /// Whether a pressed bound input activates it.
    pub activate_on_input: bool,
    /// Releasing the bound input ends the ability.
    pub end_on_release: bool,
    /// Frames a press that could not activate the ability stays buffered (0: none). Left out
    /// of the content hash's rendering when 0, so content without buffers keeps its hash.
    #[serde(skip_serializing_if = "is_zero_u16")]
    pub input_buffer: u16,
    /// The default input id.
    pub input: Option<u8>,
    /// The state blob size in bytes.
    pub state_size: u16,
    /// The registered behaviour.
    pub behaviour: Option<FnId>,
    /// The registered custom activation check.
    pub can_activate: Option<FnId>,
    /// Re-activation restarts instead of failing.
    pub retrigger: bool,
    /// Commit on activation.
    pub commit_on_activate: bool,
    /// The timeline played on activation.
    pub timeline: Option<u16>,
    /// Automatic end after this many frames.
    pub end_after: Option<Frame>,
    /// Persistent cues shown while the ability is active.
    pub cues: Vec<TagId>,
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
    pub removal: super::raw::GrantRemoval,
}

/// A frozen ability set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AbilitySetDef {
    /// The set's name.
    pub name: String,
    /// Its grants.
    pub grants: Vec<GrantDef>,
}

/// A frozen timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TimelineDef {
    /// The timeline's name.
    pub name: String,
    /// Total frames (startup + active + recovery, at least 1).
    pub frames: Frame,
    /// Startup frames.
    pub startup: Frame,
    /// Active frames.
    pub active: Frame,
    /// `(frame, event tag)` notifies, by frame.
    pub notifies: Vec<(Frame, TagId)>,
    /// `(from, to, tag)` windows, including the phase tags.
    pub windows: Vec<(Frame, Frame, TagId)>,
}

/// A rule cancelling abilities when their owner gains a tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CancelRuleDef {
    /// The tag.
    pub tag: TagId,
    /// Only abilities with any of these tags (all when empty).
    pub with: TagSet,
    /// Never abilities with any of these tags.
    pub without: TagSet,
}

/// A frozen cue definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CueDef {
    /// The `GameplayCue.*` tag.
    pub tag: TagId,
    /// Its presentation policy.
    pub policy: super::raw::CuePolicy,
}

/// For `skip_serializing_if`: a zero that the content hash's rendering leaves out.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero_u16(v: &u16) -> bool {
    *v == 0
}
