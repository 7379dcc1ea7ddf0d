//! The snapshot's raisable capacities: which one a run exceeded ([`Capacity`]), the recorded
//! failure ([`CapacityExceeded`]), each one's inline room and upper limit, and the mark an
//! effect spec carries when a builder without a world dropped a value. How the values beyond
//! the inline room are stored is the world's business (`WorldConfig` sizes the columns).

use core::fmt;

/// The largest value of the four per-spec and per-ability capacities of a world
/// (`WorldConfig::set_by_caller_per_spec` and its siblings).
pub const MAX_SPEC_ROOM: u16 = 32;
/// The largest `WorldConfig::max_target_entities` and `WorldConfig::spills_per_frame`.
pub const MAX_TARGET_ROOM: u16 = 4096;
/// The largest `WorldConfig::max_entities`.
pub const MAX_ENTITIES: u32 = 1 << 20;
/// The entities one target data holds in itself.
pub(crate) const INLINE_TARGETS: usize = 4;
/// The SetByCaller values one effect spec holds in itself.
pub(crate) const INLINE_SET_BY_CALLER: usize = 4;
/// The modifiers one inline effect spec holds in itself.
pub(crate) const INLINE_MODIFIERS: usize = 4;

/// A capacity of [`WorldConfig`](crate::WorldConfig) that a run can exceed.
///
/// # Capacities
///
/// The snapshot's raisable capacities: which one a run exceeded ([`Capacity`]), the recorded
/// failure ([`CapacityExceeded`]), each one's inline room and upper limit, and the mark an
/// effect spec carries when a builder without a world dropped a value. How the values beyond
/// the inline room are stored is the world's business (`WorldConfig` sizes the columns).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Capacity {
    /// The entities of one target data ([`WorldConfig::max_target_entities`](crate::WorldConfig::max_target_entities)).
    TargetEntities,
    /// The SetByCaller values of one effect spec ([`WorldConfig::set_by_caller_per_spec`](crate::WorldConfig::set_by_caller_per_spec)).
    SetByCallerPerSpec,
    /// The dynamic granted tags of one effect spec ([`WorldConfig::granted_tags_per_spec`](crate::WorldConfig::granted_tags_per_spec)).
    GrantedTagsPerSpec,
    /// The modifiers of one inline spec ([`WorldConfig::inline_modifiers_per_spec`](crate::WorldConfig::inline_modifiers_per_spec)).
    InlineModifiersPerSpec,
    /// The dynamic tags of one granted ability ([`WorldConfig::ability_dynamic_tags`](crate::WorldConfig::ability_dynamic_tags)).
    AbilityDynamicTags,
    /// The specs and target lists one frame makes beyond their inline room
    /// ([`WorldConfig::spills_per_frame`](crate::WorldConfig::spills_per_frame)).
    SpillsPerFrame,
    /// The live entities ([`WorldConfig::max_entities`](crate::WorldConfig::max_entities)).
    Entities,
    /// The granted abilities of one entity
    /// ([`WorldConfig::abilities_per_entity`](crate::WorldConfig::abilities_per_entity)).
    AbilitiesPerEntity,
}

impl Capacity {
    /// The [`WorldConfig`](crate::WorldConfig) field that sets it.
    pub fn config_field(self) -> &'static str {
        match self {
            Capacity::TargetEntities => "max_target_entities",
            Capacity::SetByCallerPerSpec => "set_by_caller_per_spec",
            Capacity::GrantedTagsPerSpec => "granted_tags_per_spec",
            Capacity::InlineModifiersPerSpec => "inline_modifiers_per_spec",
            Capacity::AbilityDynamicTags => "ability_dynamic_tags",
            Capacity::SpillsPerFrame => "spills_per_frame",
            Capacity::Entities => "max_entities",
            Capacity::AbilitiesPerEntity => "abilities_per_entity",
        }
    }

    /// What it counts, in words.
    pub fn counts(self) -> &'static str {
        match self {
            Capacity::TargetEntities => "entities in one target data",
            Capacity::SetByCallerPerSpec => "SetByCaller values in one effect spec",
            Capacity::GrantedTagsPerSpec => "dynamic granted tags in one effect spec",
            Capacity::InlineModifiersPerSpec => "modifiers in one inline spec",
            Capacity::AbilityDynamicTags => "dynamic tags of one granted ability",
            Capacity::SpillsPerFrame => {
                "specs and target lists beyond their inline room in one frame"
            }
            Capacity::Entities => "live entities",
            Capacity::AbilitiesPerEntity => "granted abilities of one entity",
        }
    }

    /// How many the record holds in itself (what a builder without the world can set; the
    /// default of the capacity).
    pub fn inline(self) -> u32 {
        match self {
            Capacity::TargetEntities => INLINE_TARGETS as u32,
            Capacity::SetByCallerPerSpec => INLINE_SET_BY_CALLER as u32,
            Capacity::GrantedTagsPerSpec | Capacity::AbilityDynamicTags => 2,
            Capacity::InlineModifiersPerSpec => INLINE_MODIFIERS as u32,
            Capacity::SpillsPerFrame | Capacity::Entities | Capacity::AbilitiesPerEntity => 0,
        }
    }

    /// The largest value the configuration accepts.
    pub fn max(self) -> u32 {
        match self {
            Capacity::TargetEntities | Capacity::SpillsPerFrame => u32::from(MAX_TARGET_ROOM),
            Capacity::Entities => MAX_ENTITIES,
            Capacity::AbilitiesPerEntity => u32::from(u16::MAX),
            _ => u32::from(MAX_SPEC_ROOM),
        }
    }

    /// The capacities sized in the snapshot's spill and inline records, in the order a dropped
    /// mark numbers them (the entity and ability capacities are checked where they are used).
    pub(crate) const ALL: [Capacity; 6] = [
        Capacity::TargetEntities,
        Capacity::SetByCallerPerSpec,
        Capacity::GrantedTagsPerSpec,
        Capacity::InlineModifiersPerSpec,
        Capacity::AbilityDynamicTags,
        Capacity::SpillsPerFrame,
    ];
}

impl fmt::Display for Capacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WorldConfig::{}", self.config_field())
    }
}

/// A capacity was too small: what needed room, how much, and the configured value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CapacityExceeded {
    /// The capacity.
    pub capacity: Capacity,
    /// How many were needed.
    pub needed: u32,
    /// The configured value (what fits).
    pub limit: u32,
}

impl fmt::Display for CapacityExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} needed but {} is {}: raise it (at most {})",
            self.needed,
            self.capacity.counts(),
            self.capacity,
            self.limit,
            self.capacity.max()
        )
    }
}

impl std::error::Error for CapacityExceeded {}

pub(crate) mod ext {
    use super::Capacity;

    /// Nothing beyond the inline room.
    pub const NONE: u32 = 0;
    /// `STORED | slot`: the values beyond are the stored-spec slot's row.
    pub const STORED: u32 = 0x8000_0000;
    /// The largest spill serial (serials wrap to 1 after it).
    pub const SERIAL_MAX: u32 = 0x7FFF_FFFF;
    /// `DROPPED - k`: a builder dropped a value of capacity `k` (see [`dropped`]).
    const DROPPED: u32 = u32::MAX;
    /// Stored-spec slots below it can be named (the content references and the dropped marks
    /// sit above `STORED | it`).
    pub const SLOT_MAX: u32 = 0x4000_0000;
    /// `CONTENT | ability << 2 | part`: the values beyond the inline room are frozen content,
    /// an ability's cost or cooldown values (see [`content`]).
    const CONTENT: u32 = 0xC000_0000;
    /// The ability ids a content reference can name (`AbilityDefId` is 16 bits).
    const CONTENT_MAX: u32 = 1 << 18;
    /// Content part: the cost's SetByCaller values beyond four.
    pub const COST: u32 = 0;
    /// Content part: the cooldown's SetByCaller values beyond four and its definition's
    /// cooldown tags beyond two.
    pub const COOLDOWN: u32 = 1;
    /// Content part: the cooldown's SetByCaller values beyond four only (the ability's
    /// cooldown tags were set at run time).
    pub const COOLDOWN_VALUES: u32 = 2;

    /// A reference to `part` of ability definition `ability`'s frozen values.
    pub fn content(ability: crate::id::AbilityDefId, part: u32) -> u32 {
        CONTENT | u32::from(ability.0) << 2 | (part & 3)
    }

    /// The `(ability index, part)` a content reference names, if `ext` is one.
    pub fn content_ref(ext: u32) -> Option<(usize, u32)> {
        let rest = ext.checked_sub(CONTENT)?;
        (rest < CONTENT_MAX).then_some(((rest >> 2) as usize, rest & 3))
    }

    /// The mark of a spec that lost a value of `capacity` to its inline room.
    pub fn dropped(capacity: Capacity) -> u32 {
        DROPPED - capacity as u32
    }

    /// The capacity a dropped mark names, if `ext` is one.
    pub fn dropped_capacity(ext: u32) -> Option<Capacity> {
        let k = DROPPED.checked_sub(ext)?;
        Capacity::ALL.get(k as usize).copied()
    }

    /// The stored-spec slot `ext` names, if it names one.
    pub fn stored_slot(ext: u32) -> Option<usize> {
        (ext & STORED != 0 && ext & !STORED < SLOT_MAX).then_some((ext & !STORED) as usize)
    }

    /// The spill serial `ext` names, if it names one.
    pub fn serial(ext: u32) -> Option<u32> {
        (ext != NONE && ext <= SERIAL_MAX).then_some(ext)
    }
}
