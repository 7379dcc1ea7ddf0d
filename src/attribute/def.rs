//! Frozen attribute definitions and the rules modifiers follow: operations, the multiplication
//! policy, clamping, qualification filters.

use crate::id::{AttrId, AttrSetId, FnId};
use crate::num::Fx;
use serde::{Deserialize, Serialize};

/// A clamp bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum AttrBound {
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
    pub min: Option<AttrBound>,
    /// The upper clamp bound.
    pub max: Option<AttrBound>,
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

/// How several Multiply (or Divide) modifiers on one attribute combine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MulPolicy {
    /// GAS's bias sum: `1 + Σ(mᵢ − 1)` (two ×1.5 give ×2). For ported content; a lint reports
    /// combinations outside the documented validity rule.
    GasCompat,
    /// The product `Π mᵢ` (two ×1.5 give ×2.25). The default for new content.
    #[default]
    Compound,
}

/// Where attribute clamps act.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ClampMode {
    /// Clamps are part of evaluation: every read, capture and cost check sees clamped values.
    #[default]
    Evaluate,
    /// GAS's pre-change clamp: only the stored current value is clamped; captures see the raw
    /// aggregate.
    GasCompat,
}

/// A modifier operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ModOp {
    /// Adds the magnitude.
    Add,
    /// Multiplies by the magnitude (channel combined per [`MulPolicy`]).
    Multiply,
    /// Divides by the magnitude (channel combined per [`MulPolicy`]).
    Divide,
    /// Replaces the value; the most recently applied override wins.
    Override,
}
