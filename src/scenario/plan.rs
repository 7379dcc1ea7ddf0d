//! The resolved scenario's setup and script: what to spawn before frame 0, and which inputs and
//! direct operations run in which frame, every name already an id.

use crate::attribute::ModOp;
use crate::id::{AbilityDefId, AttrId, AttrSetId, EffectDefId, TagId};
use crate::num::{Frame, Fx};
use crate::tag::TagSet;

/// An entity to spawn before frame 0.
#[derive(Clone, Debug)]
pub(crate) struct EntitySetup {
    pub name: String,
    pub sets: Vec<AttrSetId>,
    pub bases: Vec<(AttrId, Fx)>,
    pub tags: Vec<TagId>,
    pub grants: Vec<(AbilityDefId, u16, Option<u8>)>,
    pub ability_sets: Vec<crate::id::AbilitySetId>,
    pub effects: Vec<EffectApply>,
    pub player: Option<u16>,
    /// Where its boxes stand (`at`).
    pub at: Option<crate::world::BoxAnchor>,
}

/// An effect application.
#[derive(Clone, Debug)]
pub(crate) struct EffectApply {
    pub effect: EffectDefId,
    pub on: usize,
    pub from: usize,
    pub level: u16,
    pub set_by_caller: Vec<(TagId, Fx)>,
    pub duration: Option<u32>,
}

/// Press, release or tap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ButtonKind {
    Press,
    Release,
    Tap,
}

/// A button change.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ButtonOp {
    pub frame: Frame,
    pub player: u16,
    /// `(false, bit)`: ability input `bit`; `(true, bit)`: confirm (0) or cancel (1).
    pub button: (bool, u32),
    pub kind: ButtonKind,
}

/// A direct operation run in its frame: before the abilities, or in phase P6.
#[derive(Clone, Debug)]
pub(crate) struct Op {
    pub frame: Frame,
    /// Runs in the world's before-abilities hook instead of phase P6.
    pub before_abilities: bool,
    pub kind: OpKind,
    /// The index of its label (`ApplyEffect` / `ApplyInline`), whose results are recorded.
    pub label: Option<usize>,
}

#[derive(Clone, Debug)]
pub(crate) enum OpKind {
    Apply(EffectApply),
    ApplyInline {
        on: usize,
        from: usize,
        mods: Vec<(AttrId, ModOp, Fx)>,
    },
    SetRemaining(usize, EffectDefId, u32),
    Extend(usize, EffectDefId, i32),
    RemoveStacks(usize, EffectDefId, u16),
    RemoveEffects {
        on: usize,
        effect: Option<EffectDefId>,
        any: TagSet,
        all: TagSet,
        from: Option<usize>,
        modifying: Option<AttrId>,
    },
    AddTag(usize, TagId),
    RemoveTag(usize, TagId),
    SetTagCount(usize, TagId, u16),
    SetBase(usize, AttrId, Fx),
    SendEvent {
        on: usize,
        tag: TagId,
        from: usize,
        magnitude: Option<Fx>,
    },
    Activate(usize, AbilityDefId),
    CancelAbility(usize, AbilityDefId),
    CancelAbilities(usize, TagSet),
    EndAbility(usize, AbilityDefId),
    Grant {
        on: usize,
        ability: AbilityDefId,
        level: u16,
        input: Option<u8>,
    },
    RemoveAbility(usize, AbilityDefId),
    ExecuteCue {
        on: usize,
        tag: TagId,
        magnitude: Option<Fx>,
    },
    Despawn(usize),
    /// `Some(tag or none)`: set the runtime cooldown tags; `None`: back to the definition's.
    SetCooldownTags(usize, AbilityDefId, Option<Option<TagId>>),
}
