//! Frozen definitions: what content becomes after validation, with every name resolved to an id.

use super::raw::MulPolicy;
pub use crate::ability::{AbilityDef, AbilitySetDef, CancelRuleDef, TimelineDef, TriggerDef};
pub use crate::attribute::{AttrDef, AttrLevelRow, AttrSetDef, Bound, ModFilter};
pub use crate::capacity::MAX_SPEC_ROOM;
pub use crate::cue::CueDef;
pub use crate::effect::GrantDef;
pub use crate::effect::{
    AttrTagFilterDef, DurationDef, EffectCueDef, EffectDef, MAX_MODIFIERS, MAX_SCOPED_MODIFIERS,
    MAX_SET_BY_CALLER, MAX_SET_BY_CALLER_KEYS, MagnitudeDef, ModifierDef, ScopedModifierDef,
    ScopedTarget, StackingDef, round_frames,
};
use crate::id::TagId;
pub use crate::id::{FnKind, FnRef};
pub use crate::num::CurveDef;
use serde::Serialize;

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
