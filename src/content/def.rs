//! Frozen definitions: what content becomes after validation, with every name resolved to an id.

pub(crate) use super::boxes::BodyDef;
use super::raw::MulPolicy;
pub(crate) use crate::ability::{
    AbilityDef, AbilitySetDef, CancelRuleDef, TimelineDef, TriggerDef,
};
pub(crate) use crate::attribute::{AttrBound, AttrDef, AttrLevelRow, AttrSetDef, ModFilter};
pub(crate) use crate::cue::CueDef;
pub(crate) use crate::effect::GrantDef;
pub(crate) use crate::effect::{
    AttrTagFilterDef, DurationDef, EffectCueDef, EffectDef, MAX_MODIFIERS, MAX_SCOPED_MODIFIERS,
    MAX_SET_BY_CALLER, MAX_SET_BY_CALLER_KEYS, MagnitudeDef, ModifierDef, ScopedModifierDef,
    ScopedTarget, StackingDef, round_frames,
};
pub(crate) use crate::id::TagId;
pub(crate) use crate::id::{FnKind, FnRef};
pub(crate) use crate::num::CurveDef;
use serde::Serialize;

/// Global settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ContentSettings {
    /// Frames per second.
    pub tick_rate: crate::num::TickRate,
    /// The multiplication policy of attributes that do not choose one.
    pub default_mul_policy: MulPolicy,
    /// The cap on same-frame cascade steps.
    pub max_cascade_steps: u32,
    /// The tag that makes activation fail with `Dead`.
    pub dead_tag: Option<TagId>,
}

impl Default for ContentSettings {
    fn default() -> Self {
        ContentSettings {
            tick_rate: crate::num::TickRate(60),
            default_mul_policy: MulPolicy::Compound,
            max_cascade_steps: 256,
            dead_tag: None,
        }
    }
}
