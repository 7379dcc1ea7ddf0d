//! Typed ids and handles.
//!
//! Definition ids ([`TagId`], [`AttrId`], [`EffectDefId`], [`AbilityDefId`], [`CueId`],
//! [`AbilitySetId`], [`TimelineId`]) are dense
//! indexes assigned when content is frozen, so every peer that loaded the same content agrees on
//! them. Runtime handles ([`Entity`], [`EffectHandle`], [`AbilityHandle`], [`TaskHandle`]) carry a
//! generation or sequence number so a stale handle resolves to nothing instead of to a recycled
//! slot.

use bytemuck::{Pod, Zeroable};
use core::fmt;
use serde::Serialize;

macro_rules! def_id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Pod, Zeroable,
                 serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u16);

        impl $name {
            /// The id as a `usize` index.
            #[inline]
            pub fn index(self) -> usize {
                usize::from(self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0)
            }
        }
    };
}

def_id!(
    /// A gameplay tag, by its position in the frozen registry (tags sorted by full name).
    TagId
);
def_id!(
    /// An attribute in the frozen content.
    AttrId
);
def_id!(
    /// A gameplay-effect definition.
    EffectDefId
);
def_id!(
    /// An ability definition.
    AbilityDefId
);
def_id!(
    /// A curve table row.
    CurveId
);
def_id!(
    /// An attribute set.
    AttrSetId
);
def_id!(
    /// A registered function (calculation, execution, requirement, hook, behaviour), by its
    /// position in the content's sorted list of referenced function names.
    FnId
);
def_id!(
    /// A cue definition (a `GameplayCue.*` tag with its policy).
    CueId
);
def_id!(
    /// An ability set (abilities granted together,
    /// [`World::grant_ability_set`](crate::World::grant_ability_set)), by its position in the
    /// content's sets (sorted by name).
    AbilitySetId
);
def_id!(
    /// A move timeline (notifies, phases and cancel windows an ability plays), by its position
    /// in the content's timelines (sorted by name).
    TimelineId
);

/// A generational entity handle. A handle whose generation no longer matches its slot is stale
/// and resolves to nothing.
///
/// # Ids and handles
///
/// Typed ids and handles.
///
/// Definition ids ([`TagId`], [`AttrId`], [`EffectDefId`], [`AbilityDefId`], [`CueId`],
/// [`AbilitySetId`], [`TimelineId`]) are dense
/// indexes assigned when content is frozen, so every peer that loaded the same content agrees on
/// them. Runtime handles ([`Entity`], [`EffectHandle`], [`AbilityHandle`], [`TaskHandle`]) carry a
/// generation or sequence number so a stale handle resolves to nothing instead of to a recycled
/// slot.
#[repr(C)]
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Pod,
    Zeroable,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Entity {
    /// The slot index.
    pub index: u32,
    /// The generation of the slot when this handle was created; generation 0 is never alive, so
    /// `Entity::NONE` (all zero) never resolves.
    pub generation: u32,
}

impl Entity {
    /// The null entity: never alive.
    pub const NONE: Entity = Entity { index: 0, generation: 0 };

    /// Whether this is the null entity.
    #[inline]
    pub fn is_none(self) -> bool {
        self.generation == 0
    }

    /// `Some(self)` unless this is the null entity.
    #[inline]
    pub fn some(self) -> Option<Entity> {
        if self.is_none() { None } else { Some(self) }
    }
}

/// `Entity(1, generation 1)`, or `Entity(none)` for the null entity.
impl fmt::Debug for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            write!(f, "Entity(none)")
        } else {
            write!(f, "Entity({}, generation {})", self.index, self.generation)
        }
    }
}

/// `entity 1 (generation 1)`, or `no entity` for the null entity: the slot index (what the
/// command-line tool's `--entity` takes) and the slot's generation (which tells a recycled slot
/// from its earlier occupant).
impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            write!(f, "no entity")
        } else {
            write!(f, "entity {} (generation {})", self.index, self.generation)
        }
    }
}

/// A handle to an active gameplay effect: the entity it lives on and its application sequence
/// number, which is unique in a world and never reused.
#[repr(C)]
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Pod,
    Zeroable,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct EffectHandle {
    /// The entity holding the effect.
    pub target: Entity,
    /// The application sequence number (`seq`), unique per world; 0 is never used.
    pub seq: u32,
}

impl EffectHandle {
    /// The null handle.
    pub const NONE: EffectHandle = EffectHandle { target: Entity::NONE, seq: 0 };

    /// Whether this is the null handle.
    #[inline]
    pub fn is_none(self) -> bool {
        self.seq == 0
    }
}

impl fmt::Debug for EffectHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Effect#{}@{:?}", self.seq, self.target)
    }
}

/// A handle to a granted ability: its owner, slot and the slot's generation.
#[repr(C)]
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Pod,
    Zeroable,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct AbilityHandle {
    /// The entity owning the ability system the ability is granted to.
    pub owner: Entity,
    /// The spec slot on the owner.
    pub slot: u16,
    /// The slot's generation when granted; 0 is never used.
    pub generation: u16,
}

impl AbilityHandle {
    /// The null handle.
    pub const NONE: AbilityHandle = AbilityHandle { owner: Entity::NONE, slot: 0, generation: 0 };

    /// Whether this is the null handle.
    #[inline]
    pub fn is_none(self) -> bool {
        self.generation == 0
    }
}

impl fmt::Debug for AbilityHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ability[slot {}, generation {}]@{:?}", self.slot, self.generation, self.owner)
    }
}

/// A handle to a running ability task: its pool slot and the slot's generation.
#[repr(C)]
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Pod,
    Zeroable,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct TaskHandle {
    /// The pool slot.
    pub slot: u32,
    /// The slot's generation when spawned; 0 is never used.
    pub generation: u32,
}

impl TaskHandle {
    /// The null handle.
    pub const NONE: TaskHandle = TaskHandle { slot: 0, generation: 0 };

    /// Whether this is the null handle.
    #[inline]
    pub fn is_none(self) -> bool {
        self.generation == 0
    }
}

impl fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Task[slot {}, generation {}]", self.slot, self.generation)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_handles() {
        assert!(Entity::NONE.is_none());
        assert_eq!(Entity::NONE.some(), None);
        let e = Entity { index: 0, generation: 1 };
        assert_eq!(e.some(), Some(e));
        assert!(EffectHandle::NONE.is_none());
        assert!(AbilityHandle::NONE.is_none());
        assert!(TaskHandle::NONE.is_none());
        assert_eq!(format!("{e:?}"), "Entity(0, generation 1)");
        assert_eq!(e.to_string(), "entity 0 (generation 1)");
        assert_eq!(Entity::NONE.to_string(), "no entity");
        assert_eq!(format!("{:?}", TagId(3)), "TagId(3)");
    }
}
