//! The content file format as written: serde types that mirror the RON text, with names instead
//! of ids. Freezing (`Content::from_ron_str`, `ContentBuilder::build`) validates them and resolves
//! names into the frozen definitions.
//!
//! Every struct denies unknown fields (a typo is an error, never a silently ignored field) and
//! every named collection keeps duplicates so that validation can report them.

pub use super::boxes::{RawBody, RawBox};
pub(crate) use crate::ability::Instancing;
pub(crate) use crate::attribute::{ClampMode, ModOp, MulPolicy};
pub(crate) use crate::cue::CuePolicy;
pub(crate) use crate::effect::GrantRemoval;
pub(crate) use crate::effect::{
    CaptureSide, CaptureWhich, CueEvents, StackExpiration, StackKind, StackPeriod, StackRefresh,
};
pub(crate) use crate::num::Interp;
pub(crate) use crate::num::{Fx, fx_from_authored_f64, parse_fx, plain_decimal};
use core::fmt;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

/// A number written in content: an integer, a decimal (`1.1`) or a string (`"1.1"`), converted to
/// [`Fx`] exactly from its decimal text (never through float arithmetic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Num(pub Fx);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DecimalVisitor)
            .and_then(|text| parse_fx(&text).map(Num).map_err(de::Error::custom))
    }
}

/// Decimal text written in content, kept as text (used for seconds, which are converted to
/// frames once the tick rate is known).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Decimal(pub String);

impl<'de> Deserialize<'de> for Decimal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DecimalVisitor).map(Decimal)
    }
}

struct DecimalVisitor;

impl Visitor<'_> for DecimalVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number such as 4, -0.5 or \"1.1\"")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        if !v.is_finite() {
            return Err(E::custom(format!("{v} is not a finite number")));
        }
        // Validate now so the error carries ron's position.
        fx_from_authored_f64(v).map_err(E::custom)?;
        Ok(plain_decimal(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.trim().to_string())
    }
}

/// A map from names to definitions that keeps its entries in file order, duplicates included
/// (serde's maps would silently keep only the last duplicate).
#[derive(Clone, Debug, PartialEq)]
pub struct NamedMap<T>(pub Vec<(String, T)>);

impl<T> Default for NamedMap<T> {
    fn default() -> Self {
        NamedMap(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for NamedMap<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(core::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = NamedMap<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of names to definitions: { \"Name\": (...), ... }")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, T>()? {
                    out.push((k, v));
                }
                Ok(NamedMap(out))
            }
        }
        d.deserialize_map(V(core::marker::PhantomData))
    }
}

/// The top level of a content file. Every section is optional; a content directory merges the
/// sections of all its `*.ron` files.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "content")]
pub struct RawContent {
    /// Global settings (at most one file may set them).
    pub settings: Option<RawSettings>,
    /// Tag names.
    pub tags: Vec<String>,
    /// Old tag names mapped to current ones.
    pub tag_aliases: NamedMap<String>,
    /// Attribute sets, each a map of attributes.
    pub attribute_sets: NamedMap<RawAttrSet>,
    /// Curve tables (level → value).
    pub curves: NamedMap<RawCurve>,
    /// Gameplay-effect definitions.
    pub effects: NamedMap<RawEffect>,
    /// Ability definitions.
    pub abilities: NamedMap<RawAbility>,
    /// Ability sets: lists of grants (F-GA-16).
    pub ability_sets: NamedMap<Vec<RawAbilityGrant>>,
    /// Move timelines.
    pub timelines: NamedMap<RawTimeline>,
    /// Rules cancelling abilities when a tag is added.
    pub cancel_on_tag_added: Vec<RawCancelRule>,
    /// The standing hit, hurt and push boxes of each kind of body.
    pub bodies: NamedMap<RawBody>,
    /// Cue definitions: presentation policy per `GameplayCue.*` tag (inherited by child tags).
    pub cues: NamedMap<RawCueDef>,
}

/// A cue definition as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "cue")]
pub struct RawCueDef {
    /// The presentation policy.
    pub policy: CuePolicy,
}

/// Global settings.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "settings")]
pub struct RawSettings {
    /// Frames per second (default 60).
    pub tick_rate: Option<u16>,
    /// The multiplication policy of attributes that do not choose one (default `Compound`).
    pub default_mul_policy: Option<MulPolicy>,
    /// The cap on same-frame cascade steps (default 256).
    pub max_cascade_steps: Option<u32>,
    /// A tag that makes activation fail with `Dead` (for example `State.Dead`).
    pub dead_tag: Option<String>,
}

/// Which modifiers of a channel qualify (F-ATTR-11).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename = "filter")]
pub enum RawModFilter {
    /// Every modifier counts.
    #[default]
    All,
    /// Every positive contribution counts, plus only the most negative one (Paragon slows).
    MostNegativeAllPositive,
    /// Only the contribution with the greatest absolute size counts.
    GreatestOnly,
    /// A registered filter function.
    Custom(String),
}

/// An attribute set.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "attribute_set")]
pub struct RawAttrSet {
    /// The attributes of the set.
    pub attributes: NamedMap<RawAttr>,
    /// A registered post-execute hook run after every instant/periodic change of an attribute of
    /// this set.
    pub post_execute: Option<String>,
    /// A registered pure pre-change hook that may adjust a new current value.
    pub pre_change: Option<String>,
    /// Initial base values by level (F-ATTR-10's `AttrInitTable`), applied with
    /// [`World::init_attributes`](crate::world::World::init_attributes).
    pub levels: Vec<RawAttrLevel>,
}

/// One row of an attribute set's level table: base values of some of the set's attributes at a
/// level.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "level")]
pub struct RawAttrLevel {
    /// The level (rows must be in strictly increasing level order).
    pub level: u16,
    /// Attribute name → base value at this level.
    pub values: NamedMap<Num>,
}

/// One attribute.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "attribute")]
pub struct RawAttr {
    /// The initial base value.
    pub default: Num,
    /// The lower clamp bound.
    pub min: Option<RawBound>,
    /// The upper clamp bound.
    pub max: Option<RawBound>,
    /// Where clamps act.
    pub clamp_mode: ClampMode,
    /// Whether the base value is clamped after every instant/periodic change too.
    pub apply_to_base: bool,
    /// The multiplication policy (default: the content's `default_mul_policy`).
    pub mul_policy: Option<MulPolicy>,
    /// The qualification filter.
    pub filter: RawModFilter,
    /// A meta attribute: lives for one execution and is reset to 0 after post-execute.
    pub transient: bool,
}

impl Default for RawAttr {
    fn default() -> Self {
        RawAttr {
            default: Num::default(),
            min: None,
            max: None,
            clamp_mode: ClampMode::Evaluate,
            apply_to_base: true,
            mul_policy: None,
            filter: RawModFilter::All,
            transient: false,
        }
    }
}

/// A clamp bound.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename = "bound")]
pub enum RawBound {
    /// A constant.
    Const(Num),
    /// The current value of another attribute of the same entity.
    Attr(String),
}

/// A curve table row: `(level, value)` points.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "curve")]
pub struct RawCurve {
    /// Interpolation between points.
    pub interp: Interp,
    /// `(level, value)` points with strictly increasing levels.
    pub points: Vec<(u16, Num)>,
}

/// An effect's duration.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename = "duration")]
pub enum RawDuration {
    /// Executes once on the base values.
    Instant,
    /// Lasts until removed.
    Infinite,
    /// A number of frames (at least 1).
    Frames(u32),
    /// Decimal seconds, converted exactly to `ceil(seconds × tick_rate)` frames.
    Seconds(Decimal),
    /// Frames given by a SetByCaller value on the spec (in frames).
    SetByCaller(String),
    /// `coef × curve(level)` frames, evaluated at application and rounded to the nearest frame
    /// (level-scaled cooldowns, hitstun by move level).
    Scalable {
        /// The coefficient (frames).
        coef: Num,
        /// The curve row, read at the spec level.
        #[serde(default)]
        curve: Option<String>,
    },
    /// Frames from a captured attribute (`coef × (value + pre) + post`), evaluated at
    /// application and rounded to the nearest frame (a source's cooldown reduction).
    Attribute(RawAttrMagnitude),
    /// Frames from a registered calculation (`coef × (calc + pre) + post`), evaluated at
    /// application and rounded to the nearest frame.
    Custom {
        /// The registered calculation's name.
        calc: String,
        /// The coefficient.
        #[serde(default = "num_one")]
        coef: Num,
        /// Added before the coefficient.
        #[serde(default)]
        pre: Num,
        /// Added after the coefficient.
        #[serde(default)]
        post: Num,
    },
}

impl RawDuration {
    /// The duration as a magnitude, for the forms evaluated at application (`Scalable`,
    /// `Attribute`, `Custom`); `None` for the fixed forms and the SetByCaller form.
    pub fn as_magnitude(&self) -> Option<RawMagnitude> {
        match self {
            RawDuration::Scalable { coef, curve } => {
                Some(RawMagnitude::Scalable { coef: *coef, curve: curve.clone() })
            }
            RawDuration::Attribute(a) => Some(RawMagnitude::Attribute(a.clone())),
            RawDuration::Custom { calc, coef, pre, post } => Some(RawMagnitude::Custom {
                calc: calc.clone(),
                coef: *coef,
                pre: *pre,
                post: *post,
            }),
            _ => None,
        }
    }
}

/// A period between executions.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename = "period")]
pub enum RawPeriod {
    /// A number of frames (at least 1).
    Frames(u32),
    /// Decimal seconds, converted exactly to frames.
    Seconds(Decimal),
    /// Frames from a SetByCaller value on the spec, evaluated at application.
    SetByCaller(String),
    /// `coef × curve(level)` frames, evaluated at application.
    Scalable {
        /// The coefficient (frames).
        coef: Num,
        /// The curve row, read at the spec level.
        #[serde(default)]
        curve: Option<String>,
    },
    /// Frames from a captured attribute, evaluated at application.
    Attribute(RawAttrMagnitude),
    /// Frames from a registered calculation, evaluated at application.
    Custom {
        /// The registered calculation's name.
        calc: String,
        /// The coefficient.
        #[serde(default = "num_one")]
        coef: Num,
        /// Added before the coefficient.
        #[serde(default)]
        pre: Num,
        /// Added after the coefficient.
        #[serde(default)]
        post: Num,
    },
}

impl RawPeriod {
    /// The period as a magnitude, for the forms evaluated at application; `None` for
    /// `Frames` and `Seconds`.
    pub fn as_magnitude(&self) -> Option<RawMagnitude> {
        match self {
            RawPeriod::SetByCaller(t) => Some(RawMagnitude::SetByCaller(t.clone())),
            RawPeriod::Scalable { coef, curve } => {
                Some(RawMagnitude::Scalable { coef: *coef, curve: curve.clone() })
            }
            RawPeriod::Attribute(a) => Some(RawMagnitude::Attribute(a.clone())),
            RawPeriod::Custom { calc, coef, pre, post } => Some(RawMagnitude::Custom {
                calc: calc.clone(),
                coef: *coef,
                pre: *pre,
                post: *post,
            }),
            RawPeriod::Frames(_) | RawPeriod::Seconds(_) => None,
        }
    }
}

/// An attribute-based magnitude: `coef × (value + pre) + post`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "attribute_magnitude")]
pub struct RawAttrMagnitude {
    /// The captured attribute.
    pub attribute: String,
    /// Which entity it is read from.
    pub side: CaptureSide,
    /// Which value is read.
    #[serde(default)]
    pub which: CaptureWhich,
    /// The coefficient.
    #[serde(default = "num_one")]
    pub coef: Num,
    /// Added before the coefficient.
    #[serde(default)]
    pub pre: Num,
    /// Added after the coefficient.
    #[serde(default)]
    pub post: Num,
    /// Whether the value is captured once (source: at spec creation; target: at application)
    /// instead of live.
    #[serde(default)]
    pub snapshot: bool,
    /// GAS's `SourceTagFilter`: aggregate only the captured attribute's modifiers whose effect
    /// was made by a source whose tags pass these requirements (F-GE-10).
    #[serde(default)]
    pub source_tag_filter: Option<RawRequirements>,
    /// GAS's `TargetTagFilter`: aggregate the captured attribute's modifiers only while the
    /// entity they modify has tags passing these requirements (F-GE-10).
    #[serde(default)]
    pub target_tag_filter: Option<RawRequirements>,
}

fn num_one() -> Num {
    Num(Fx::ONE)
}

/// A modifier magnitude.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename = "magnitude")]
pub enum RawMagnitude {
    /// `coef × curve(level)`, or `coef` without a curve.
    Scalable {
        /// The coefficient.
        coef: Num,
        /// The curve row, read at the spec level.
        #[serde(default)]
        curve: Option<String>,
    },
    /// Derived from a captured attribute.
    Attribute(RawAttrMagnitude),
    /// A registered calculation: `coef × (calc + pre) + post`.
    Custom {
        /// The registered calculation's name.
        calc: String,
        /// The coefficient.
        #[serde(default = "num_one")]
        coef: Num,
        /// Added before the coefficient.
        #[serde(default)]
        pre: Num,
        /// Added after the coefficient.
        #[serde(default)]
        post: Num,
    },
    /// A value set on the spec by the caller, keyed by tag.
    SetByCaller(String),
}

/// Tag requirements as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "requirements")]
pub struct RawRequirements {
    /// Tags that must all be present.
    pub require: Vec<String>,
    /// Tags none of which may be present.
    pub ignore: Vec<String>,
    /// A query that must match.
    pub query: Option<RawQuery>,
}

/// A tag query expression as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename = "query")]
pub enum RawQuery {
    /// Any of the tags.
    AnyTags(Vec<String>),
    /// All of the tags.
    AllTags(Vec<String>),
    /// None of the tags.
    NoTags(Vec<String>),
    /// Any sub-expression.
    AnyExpr(Vec<RawQuery>),
    /// All sub-expressions.
    AllExpr(Vec<RawQuery>),
    /// No sub-expression.
    NoExpr(Vec<RawQuery>),
}

/// A modifier as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "modifier")]
pub struct RawModifier {
    /// The modified attribute.
    pub attribute: String,
    /// The operation.
    pub op: ModOp,
    /// The magnitude.
    pub magnitude: RawMagnitude,
    /// Requirements on the source's tags, checked once at application.
    #[serde(default)]
    pub source_tags: RawRequirements,
    /// Requirements on the target's tags, checked once at application.
    #[serde(default)]
    pub target_tags: RawRequirements,
    /// Re-check the tag requirements before every periodic execution (GAS never does, G-08).
    #[serde(default)]
    pub reevaluate_each_period: bool,
}

/// An execution as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "execution")]
pub struct RawExecution {
    /// The registered execution's name.
    pub calc: String,
    /// Scoped modifiers (GAS's calculation modifiers, F-GE-14): changes to a captured
    /// attribute or a transient aggregator that only this execution's calculation sees.
    #[serde(default)]
    pub modifiers: Vec<RawScopedModifier>,
}

/// A scoped modifier of an execution as written: exactly one of `attribute` (with `side`) or
/// `transient`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "scoped_modifier")]
pub struct RawScopedModifier {
    /// A captured attribute of the execution (it must declare a capture of it on `side`).
    #[serde(default)]
    pub attribute: Option<String>,
    /// Which capture of the attribute: `Source` or `Target`.
    #[serde(default)]
    pub side: Option<CaptureSide>,
    /// A transient aggregator (a tag naming a temporary value the execution reads).
    #[serde(default)]
    pub transient: Option<String>,
    /// The operation.
    pub op: ModOp,
    /// The magnitude.
    pub magnitude: RawMagnitude,
    /// Requirements on the spec's source tags, checked when the execution runs.
    #[serde(default)]
    pub source_tags: RawRequirements,
    /// Requirements on the target's tags, checked when the execution runs.
    #[serde(default)]
    pub target_tags: RawRequirements,
}

/// Stacking as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "stacking")]
pub struct RawStacking {
    /// By source or by target.
    pub kind: StackKind,
    /// The most stacks (at least 1).
    pub limit: u16,
    /// Duration refresh policy.
    #[serde(default)]
    pub refresh: StackRefresh,
    /// Period reset policy.
    #[serde(default)]
    pub period: StackPeriod,
    /// Expiration policy.
    #[serde(default)]
    pub expiration: StackExpiration,
    /// At the limit, refuse the application entirely (no refresh).
    #[serde(default)]
    pub deny_overflow: bool,
}

/// A cue entry on an effect or an ability: a plain tag string (`"GameplayCue.Hit"`, shorthand for
/// `(tag: "GameplayCue.Hit")` with every other field at its default) or the struct form.
#[derive(Clone, Debug)]
pub struct RawCue {
    /// The `GameplayCue.*` tag.
    pub tag: String,
    /// Which events it emits.
    pub events: CueEvents,
    /// An attribute whose modifier magnitude (from this effect) fills the cue's magnitude.
    pub magnitude_attribute: Option<String>,
    /// Written as a plain string (the error for its tag points at the string itself).
    pub plain: bool,
}

/// The struct form of a cue entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "cue")]
struct RawCueFields {
    tag: String,
    #[serde(default)]
    events: CueEvents,
    #[serde(default)]
    magnitude_attribute: Option<String>,
}

impl<'de> Deserialize<'de> for RawCue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawCue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a cue: a tag string such as \"GameplayCue.Hit\", or \
                     (tag: \"GameplayCue.Hit\", events: Auto, magnitude_attribute: \"Health\")",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawCue, E> {
                Ok(RawCue {
                    tag: v.to_string(),
                    events: CueEvents::default(),
                    magnitude_attribute: None,
                    plain: true,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawCue, A::Error> {
                let f = RawCueFields::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(RawCue {
                    tag: f.tag,
                    events: f.events,
                    magnitude_attribute: f.magnitude_attribute,
                    plain: false,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// A gameplay-effect definition as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "effect")]
pub struct RawEffect {
    /// Another effect whose definition this one starts from: unset fields are inherited and tag
    /// lists are merged.
    pub inherits: Option<String>,
    /// The duration policy (default `Instant`).
    pub duration: Option<RawDuration>,
    /// The period between executions (duration/infinite only).
    pub period: Option<RawPeriod>,
    /// Whether a periodic effect also executes when applied.
    pub execute_on_application: Option<bool>,
    /// Modifiers.
    pub modifiers: Option<Vec<RawModifier>>,
    /// Executions (instant or periodic only).
    pub executions: Option<Vec<RawExecution>>,
    /// Descriptive tags of the effect.
    pub asset_tags: Vec<String>,
    /// Tags granted to the target while active (duration/infinite only).
    pub granted_tags: Vec<String>,
    /// Tags whose abilities the target cannot activate while this is active.
    pub blocked_ability_tags: Vec<String>,
    /// Active effects on the target whose asset or granted tags (a spec's added ones included)
    /// match are removed on application.
    pub remove_effects_with_tags: Vec<String>,
    /// Tags granted to the target that block incoming effects whose source tags match.
    pub immunity_tags: Vec<String>,
    /// A query on incoming specs' tags (asset ∪ granted ∪ source tags) that blocks them while active.
    pub immunity_query: Option<RawQuery>,
    /// Requirements on the target's tags to apply.
    pub application_requirements: Option<RawRequirements>,
    /// Requirements on the target's tags to stay switched on.
    pub ongoing_requirements: Option<RawRequirements>,
    /// Stacking policy.
    pub stacking: Option<RawStacking>,
    /// Cues.
    pub cues: Option<Vec<RawCue>>,
    /// Registered application-requirement predicates.
    pub custom_requirements: Option<Vec<String>>,
    /// Abilities granted to the target while active.
    pub granted_abilities: Option<Vec<RawGrantedAbility>>,
    /// Frames of hitstop each application gives the target (F-GA-23).
    pub hitstop: Option<u16>,
    /// Frames of hitstop each application gives the spec's instigator (the attacker).
    pub instigator_hitstop: Option<u16>,
}

/// What activates an ability besides input (F-GA-12).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename = "trigger")]
pub enum RawTrigger {
    /// A gameplay event whose tag matches (hierarchically).
    Event(String),
    /// The owner gains the tag.
    TagAdded(String),
    /// The owner gains the tag; the ability is cancelled when the tag goes away.
    TagPresent(String),
}

/// A duration written in frames or decimal seconds.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename = "frames")]
pub enum RawFrames {
    /// A number of frames.
    Frames(u32),
    /// Decimal seconds, converted exactly to frames.
    Seconds(Decimal),
}

/// An ability definition as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "ability")]
pub struct RawAbility {
    /// Tags describing the ability (matched by other abilities' cancel/block lists).
    pub tags: Vec<String>,
    /// Activating cancels running abilities whose tags match.
    pub cancel_abilities_with_tags: Vec<String>,
    /// While running, abilities whose tags match cannot activate.
    pub block_abilities_with_tags: Vec<String>,
    /// Tags the owner carries while the ability runs.
    pub activation_owned_tags: Vec<String>,
    /// The owner needs all of these to activate.
    pub activation_required_tags: Vec<String>,
    /// The owner may have none of these to activate.
    pub activation_blocked_tags: Vec<String>,
    /// Event activations: the instigator needs all of these.
    pub source_required_tags: Vec<String>,
    /// Event activations: the instigator may have none of these.
    pub source_blocked_tags: Vec<String>,
    /// Event activations: the target needs all of these.
    pub target_required_tags: Vec<String>,
    /// Event activations: the target may have none of these.
    pub target_blocked_tags: Vec<String>,
    /// An instant effect paid on commit.
    pub cost: Option<String>,
    /// SetByCaller values for the cost spec (at most 32; a world needs
    /// `WorldConfig::set_by_caller_per_spec` at least their number).
    pub cost_set_by_caller: NamedMap<Num>,
    /// A duration effect applied on commit; its granted tags are the cooldown tags.
    pub cooldown: Option<String>,
    /// Overrides the cooldown effect's duration (shared cooldown effects); also the value of
    /// the key of a `SetByCaller` cooldown duration.
    pub cooldown_duration: Option<RawFrames>,
    /// SetByCaller values for the cooldown spec (at most 32 with the one `cooldown_duration`
    /// may set; a world needs `WorldConfig::set_by_caller_per_spec` at least their number).
    pub cooldown_set_by_caller: NamedMap<Num>,
    /// Extra cooldown tags granted by the cooldown effect for this ability (at most 32; a world
    /// needs `WorldConfig::granted_tags_per_spec` at least their number).
    pub cooldown_tags: Vec<String>,
    /// State-blob policy.
    pub instancing: Instancing,
    /// Activation triggers.
    pub triggers: Vec<RawTrigger>,
    /// Activates when granted and never ends on its own.
    pub passive: bool,
    /// Whether a pressed input bound to the ability activates it.
    pub activate_on_input: bool,
    /// The input id the ability is bound to when granted without one.
    pub input: Option<u8>,
    /// Releasing the bound input ends the ability (hold-to-sprint, channels).
    pub end_on_release: bool,
    /// Frames a press of the bound input that could not activate the ability is remembered
    /// and retried (an input buffer; 0: none).
    pub input_buffer: u16,
    /// The state blob size in bytes.
    pub state_size: u16,
    /// Registered behaviour functions.
    pub behaviour: Option<String>,
    /// A registered custom activation check.
    pub can_activate: Option<String>,
    /// Activating while active restarts the ability instead of failing with `AlreadyActive`.
    pub retrigger: bool,
    /// Commit cost and cooldown when activated (turn off to commit from a behaviour).
    pub commit_on_activate: bool,
    /// A timeline played on activation; the ability ends when it completes.
    pub timeline: Option<String>,
    /// Ends the ability this long after activation.
    pub end_after: Option<RawFrames>,
    /// Persistent cues shown while the ability is active.
    pub cues: Vec<RawCue>,
}

impl Default for RawAbility {
    fn default() -> Self {
        RawAbility {
            tags: Vec::new(),
            cancel_abilities_with_tags: Vec::new(),
            block_abilities_with_tags: Vec::new(),
            activation_owned_tags: Vec::new(),
            activation_required_tags: Vec::new(),
            activation_blocked_tags: Vec::new(),
            source_required_tags: Vec::new(),
            source_blocked_tags: Vec::new(),
            target_required_tags: Vec::new(),
            target_blocked_tags: Vec::new(),
            cost: None,
            cost_set_by_caller: NamedMap::default(),
            cooldown: None,
            cooldown_duration: None,
            cooldown_set_by_caller: NamedMap::default(),
            cooldown_tags: Vec::new(),
            instancing: Instancing::PerExecution,
            triggers: Vec::new(),
            passive: false,
            activate_on_input: true,
            input: None,
            end_on_release: false,
            input_buffer: 0,
            state_size: 0,
            behaviour: None,
            can_activate: None,
            retrigger: false,
            commit_on_activate: true,
            timeline: None,
            end_after: None,
            cues: Vec::new(),
        }
    }
}

/// One grant of an ability set.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "ability_grant")]
pub struct RawAbilityGrant {
    /// The ability.
    pub ability: String,
    /// Its level.
    #[serde(default = "one_u16")]
    pub level: u16,
    /// The input id to bind.
    #[serde(default)]
    pub input: Option<u8>,
}

fn one_u16() -> u16 {
    1
}

/// An ability granted by an effect.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "granted_ability")]
pub struct RawGrantedAbility {
    /// The ability.
    pub ability: String,
    /// Its level.
    #[serde(default = "one_u16")]
    pub level: u16,
    /// The input id to bind.
    #[serde(default)]
    pub input: Option<u8>,
    /// What happens when the effect goes away.
    #[serde(default)]
    pub removal: GrantRemoval,
}

/// A gameplay event sent at a timeline frame.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "notify")]
pub struct RawNotify {
    /// The frame (from the timeline's start).
    pub frame: u32,
    /// The event tag sent to the owner.
    pub event: String,
}

/// A tag the owner carries during part of a timeline.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "window")]
pub struct RawWindow {
    /// First frame (inclusive).
    pub from: u32,
    /// Last frame (exclusive).
    pub to: u32,
    /// The tag.
    pub tag: String,
}

/// A frame-indexed move timeline (a fighting-game "montage").
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "timeline")]
pub struct RawTimeline {
    /// Startup frames.
    pub startup: u32,
    /// Active frames.
    pub active: u32,
    /// Recovery frames.
    pub recovery: u32,
    /// A tag carried during startup.
    pub startup_tag: Option<String>,
    /// A tag carried during the active frames.
    pub active_tag: Option<String>,
    /// A tag carried during recovery.
    pub recovery_tag: Option<String>,
    /// Events sent at frames.
    pub notifies: Vec<RawNotify>,
    /// Tags carried during frame windows (cancel windows: F-REC-11).
    pub windows: Vec<RawWindow>,
    /// Hit, hurt and push boxes out during frame windows.
    pub boxes: Vec<RawBox>,
}

/// Cancels running abilities when their owner gains a tag (the stun recipe, F-REC-01).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "cancel_on_tag_added")]
pub struct RawCancelRule {
    /// The tag whose arrival cancels.
    pub tag: String,
    /// Only abilities with any of these tags (all abilities when empty).
    #[serde(default)]
    pub with: Vec<String>,
    /// Never abilities with any of these tags.
    #[serde(default)]
    pub without: Vec<String>,
}
