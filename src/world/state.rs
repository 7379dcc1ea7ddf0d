//! The snapshot: every piece of mutable simulation state, as `Pod` columns whose lengths are
//! fixed when the world is built.
//!
//! Saving and loading copy each column with `copy_from_slice`; the checksum hashes each column's
//! little-endian bytes with xxh3-64. Columns that are pools (per-entity columns, the task,
//! stored-spec and effect-origin pools) are copied and hashed only up to their used records:
//! the records after them are as [`State::new`] made them in every state of the world. Nothing
//! in here is a pointer, a `usize`, a float or a hash map, so the bytes are the same on every
//! machine.

use super::Game;
use super::copy_hash::CopyHasher;
use crate::ability::AbilitySpec;
use crate::ability::task::TaskRec;
pub use crate::attribute::AttrValue;
use crate::cue::StandaloneCue;
use crate::effect::EffectSpec;
use crate::effect::{ActiveEffect, EffectTimers, PooledOrigin};
use crate::id::Entity;
use crate::num::{Frame, Fx};
use bytemuck::{Pod, Zeroable};
use core::hash::Hasher as _;
use twox_hash::xxhash3_64::{RawHasher, SecretBuffer};

/// World-wide counters and the global random stream.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub(crate) struct Header {
    /// The session seed.
    pub seed: u64,
    /// The global random stream's PCG state.
    pub rng_state: u64,
    /// The next frame to step.
    pub frame: Frame,
    /// The next effect application sequence number (starts at 1).
    pub next_seq: u32,
    /// Head of the entity free list (`u32::MAX`: empty).
    pub free_head: u32,
    /// Slots ever used (slots at or above are fresh).
    pub high_water: u32,
    /// Live entities.
    pub alive: u32,
    /// Cascade-cap hits so far (a diagnostic counter that rolls back with the state).
    pub cascade_overflows: u32,
    /// Head of the task free list (`u32::MAX`: empty).
    pub task_free_head: u32,
    /// Task slots ever used.
    pub task_high_water: u32,
    /// Live tasks.
    pub tasks_live: u32,
    /// Executions so far (keys every execution's random stream).
    pub exec_serial: u32,
    /// Records in use at the front of the origin pool (the records after them are zero).
    pub origins_len: u32,
    /// Stored-spec slots ever used (slots at or above are zero).
    pub specs_high_water: u32,
}

/// Flags of an entity slot.
pub(crate) mod entity_flags {
    /// The slot holds a live entity.
    pub const ALIVE: u32 = 1;
    /// The entity has an ability system (attributes, tags, effects).
    pub const ASC: u32 = 2;
}

/// One entity slot.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub(crate) struct EntityRec {
    /// The attribute sets present (bit per `AttrSetId`).
    pub sets: u64,
    /// The slot's generation (0: never used).
    pub generation: u32,
    /// [`entity_flags`].
    pub flags: u32,
    /// Free-list link.
    pub next_free: u32,
    /// Active effects in the effect column.
    pub n_effects: u32,
    /// Active effects with live captures (their magnitudes follow attributes).
    pub n_live: u32,
    /// The avatar (the body the owner's abilities act through; `NONE`: the entity itself).
    pub avatar: Entity,
    /// Live tasks owned by this entity's abilities.
    pub n_tasks: u32,
}

/// When an entity's effects next need phases P1 and P2: a dense column beside the entity
/// records, so the two per-frame wake scans read 8 bytes per entity. Dead and fresh slots hold
/// [`crate::num::NEVER`] (or zero before first use; the scans test liveness first only when
/// the wake is due).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub(crate) struct EntityWake {
    /// The earliest frame at which a periodic effect of this entity executes.
    pub period: Frame,
    /// The earliest frame at which an effect of this entity expires.
    pub expiry: Frame,
}

/// Counters of the features that most worlds never use (per-entity time, input buffers).
///
/// Hashed only while it is not all zero, and the columns it counts only up to their
/// high-water marks, so a world that never uses these features has exactly the checksums it
/// had before they existed (the golden checksums of content without them do not move).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub(crate) struct ExtHeader {
    /// Entity slots below which `entity_time` records may be in use (0: none ever was).
    pub time_high_water: u32,
    /// `entity_time` records in use (entities with hitstop or a time scale).
    pub timed: u32,
    /// Player slots below which `input_buffers` records may be in use (0: none ever was).
    pub buffer_high_water: u32,
    /// Players with at least one buffered press.
    pub buffered: u32,
}

impl ExtHeader {
    /// Whether the checksum covers it (anything ever used).
    pub fn in_use(&self) -> bool {
        *self != ExtHeader::default()
    }
}

/// An entity's clock (hitstop and time scale): the record of `entity_time` at the entity's
/// index, in use while `entity` is that live entity. All zero: no record.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct EntityTime {
    /// The entity the record belongs to (`NONE`: free).
    pub entity: Entity,
    /// The time scale in `[0, 1]` (meaningful when `scaled` is 1).
    pub scale: Fx,
    /// Fractional frames accumulated by the scale (below 1 between frames).
    pub acc: Fx,
    /// Frames of hitstop still to hold.
    pub hitstop: u32,
    /// The last frame the entity's clock was held, plus one (0: never).
    pub held_at: Frame,
    /// 1 while a scale other than 1 is set.
    pub scaled: u32,
    /// Reserved (zero).
    pub reserved: u32,
}

/// A player's buffered presses (F-GA-22): per ability input id, the frame it was pressed
/// without activating anything, while `pending` has its bit.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct InputBufferRec {
    /// The owner the presses were made for (a rebinding drops them).
    pub owner: Entity,
    /// One bit per ability input id with a buffered press.
    pub pending: u32,
    /// Reserved (zero).
    pub reserved: u32,
    /// The frame of each buffered press.
    pub pressed_at: [Frame; 32],
}

impl Default for InputBufferRec {
    fn default() -> Self {
        InputBufferRec::zeroed()
    }
}

/// The per-world column sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Layout {
    pub entities: usize,
    pub attrs: usize,
    pub tags: usize,
    pub tag_words: usize,
    pub effects: usize,
    pub mods: usize,
    pub stored_specs: usize,
    pub players: usize,
    pub abilities: usize,
    pub state_words: usize,
    pub tasks: usize,
    pub cues: usize,
    /// SetByCaller values a spec holds beyond its inline ones
    /// (`WorldConfig::set_by_caller_per_spec` − 4).
    pub sbc_extra: usize,
    /// Dynamic granted tags a spec (and an active effect) holds beyond its inline two.
    pub tags_extra: usize,
    /// Inline modifiers an inline spec holds beyond its inline four.
    pub inline_extra: usize,
    /// Dynamic ability tags a granted ability holds beyond its inline two.
    pub ability_tags_extra: usize,
    /// The most entities of one target list, when above the inline four (else 0).
    pub target_entities: usize,
    /// Spill records per frame (0 when nothing can spill: every capacity at its inline room).
    pub spills: usize,
    /// Hit-memory rows per entity (0 unless the content declares a hit box).
    pub hit_memory: usize,
    /// Kept box anchors per entity: 1 when the game asks the world to keep them
    /// ([`Game::KEEPS_ANCHORS`](super::Game::KEEPS_ANCHORS)) and the content declares a box,
    /// else 0.
    pub anchors: usize,
}

impl Layout {
    /// Words of a spec's overflow record (a spill record's payload, a stored spec's row):
    /// counts, then the extra SetByCaller entries (2 words each), the extra granted tags
    /// (4 per word, tag id + 1) and the extra inline modifiers (2 words each). 0 when a spec
    /// cannot hold more than its inline room.
    pub fn spec_words(&self) -> usize {
        if self.sbc_extra + self.tags_extra + self.inline_extra == 0 {
            return 0;
        }
        1 + 2 * self.sbc_extra + self.tags_extra.div_ceil(4) + 2 * self.inline_extra
    }

    /// Words of a target list's spill payload (its length, then its entities), 0 when target
    /// data cannot hold more than its inline four.
    pub fn target_words(&self) -> usize {
        if self.target_entities == 0 { 0 } else { 1 + self.target_entities }
    }

    /// Words of one spill record: a header word (serial and kind) and the larger payload.
    pub fn spill_stride(&self) -> usize {
        if self.spills == 0 { 0 } else { 1 + self.spec_words().max(self.target_words()) }
    }

    /// Words of the frame spill column: its header word and every record.
    pub fn spill_len(&self) -> usize {
        if self.spills == 0 { 0 } else { 1 + self.spills * self.spill_stride() }
    }
}

/// The parts of the snapshot with their own sub-checksum, in checksum order.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Subsystem {
    /// The header (frame, counters, random stream) and entity slots.
    Entities,
    /// Tag counts.
    Tags,
    /// Attribute values.
    Attributes,
    /// Active effects.
    Effects,
    /// The game's own components and global block.
    Game,
    /// Inputs and their edges.
    Inputs,
    /// Granted abilities, their state blobs and player bindings.
    Abilities,
    /// Ability tasks.
    Tasks,
    /// Standalone persistent cues.
    Cues,
}

impl Subsystem {
    /// How many subsystems there are (the length of [`Checksums::parts`]).
    pub const COUNT: usize = 9;

    /// Every subsystem in checksum order.
    pub const ALL: [Subsystem; Subsystem::COUNT] = [
        Subsystem::Entities,
        Subsystem::Tags,
        Subsystem::Attributes,
        Subsystem::Effects,
        Subsystem::Abilities,
        Subsystem::Tasks,
        Subsystem::Cues,
        Subsystem::Game,
        Subsystem::Inputs,
    ];

    /// Its position in checksum order ([`Subsystem::ALL`], [`Checksums::parts`]).
    pub(crate) const fn index(self) -> usize {
        match self {
            Subsystem::Entities => 0,
            Subsystem::Tags => 1,
            Subsystem::Attributes => 2,
            Subsystem::Effects => 3,
            Subsystem::Abilities => 4,
            Subsystem::Tasks => 5,
            Subsystem::Cues => 6,
            Subsystem::Game => 7,
            Subsystem::Inputs => 8,
        }
    }

    /// The subsystem's name.
    pub fn name(self) -> &'static str {
        match self {
            Subsystem::Entities => "entities",
            Subsystem::Tags => "tags",
            Subsystem::Attributes => "attributes",
            Subsystem::Effects => "effects",
            Subsystem::Game => "game",
            Subsystem::Inputs => "inputs",
            Subsystem::Abilities => "abilities",
            Subsystem::Tasks => "tasks",
            Subsystem::Cues => "cues",
        }
    }
}

// `Subsystem::index` is the position in `Subsystem::ALL`.
const _: () = {
    let mut i = 0;
    while i < Subsystem::COUNT {
        assert!(Subsystem::ALL[i].index() == i);
        i += 1;
    }
};

/// The checksum of a snapshot with one sub-checksum per [`Subsystem`].
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Checksums {
    /// xxh3-64 over the little-endian bytes of the sub-checksums in [`Subsystem::ALL`] order.
    pub total: u64,
    /// The sub-checksums, in [`Subsystem::ALL`] order.
    pub parts: [u64; Subsystem::COUNT],
}

impl Checksums {
    /// The sub-checksum of one subsystem.
    pub fn part(&self, s: Subsystem) -> u64 {
        self.parts[s.index()]
    }

    /// The subsystems whose sub-checksums differ.
    pub fn differing(&self, other: &Checksums) -> Vec<Subsystem> {
        Subsystem::ALL
            .iter()
            .zip(self.parts.iter().zip(&other.parts))
            .filter(|(_, (a, b))| a != b)
            .map(|(s, _)| *s)
            .collect()
    }
}

/// One snapshot column: what a dump or a field-level diff needs to decode it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ColumnInfo {
    /// The column's name.
    pub name: String,
    /// Its subsystem.
    pub subsystem: Subsystem,
    /// Bytes per record.
    pub record_size: u32,
    /// Records.
    pub count: u32,
    /// Records per entity (0: a world-wide column).
    pub per_entity: u32,
}

/// A snapshot column's storage: a `Pod` vector, or one `Pod` record (the headers).
trait Column {
    /// One record.
    type Record;
    /// Bytes per record.
    const RECORD: usize;
    /// The column's bytes.
    fn bytes(&self) -> &[u8];
    /// The column's bytes, to overwrite.
    fn bytes_mut(&mut self) -> &mut [u8];
}

impl<T: Pod> Column for Vec<T> {
    type Record = T;
    const RECORD: usize = core::mem::size_of::<T>();
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(self)
    }
}

macro_rules! single_record_columns {
    ($($t:ty),*) => {$(
        impl Column for $t {
            type Record = $t;
            const RECORD: usize = core::mem::size_of::<$t>();
            fn bytes(&self) -> &[u8] {
                bytemuck::bytes_of(self)
            }
            fn bytes_mut(&mut self) -> &mut [u8] {
                bytemuck::bytes_of_mut(self)
            }
        }
    )*};
}
single_record_columns!(Header, ExtHeader);

/// The counts of used records that pooled columns are copied and hashed up to
/// ([`State::used`]). Past them every record is as [`State::new`] made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    /// Entity slots ever used (`Header::high_water`).
    Entities,
    /// Task slots ever used (`Header::task_high_water`).
    Tasks,
    /// Origin records in use (`Header::origins_len`).
    Origins,
    /// Stored-spec slots ever used (`Header::specs_high_water`).
    StoredSpecs,
    /// Entity clocks ever used (`ExtHeader::time_high_water`).
    Clocks,
    /// Input buffers ever used (`ExtHeader::buffer_high_water`).
    Buffers,
    /// Frame spill words in use (its header word and the records it counts).
    Spill,
}

impl Mark {
    /// How many marks there are.
    const COUNT: usize = 7;
}

/// How much of a column saves copy and the checksum covers.
#[derive(Clone, Copy, Debug)]
enum Extent {
    /// All of it.
    Whole,
    /// All of it copied; hashed only while the extension header is in use
    /// ([`ExtHeader::in_use`]).
    WhileExtInUse,
    /// `records` records per unit of the mark's count (for a per-entity column: records per
    /// entity).
    Used(Mark, usize),
}

/// One column of the table: where it sits and how far it is used.
#[derive(Clone, Copy, Debug)]
struct ColumnSpec {
    subsystem: Subsystem,
    name: &'static str,
    extent: Extent,
    /// Records per entity slot (the column is indexed by entity), or a world-wide column.
    per_entity: bool,
    /// Bytes per record.
    record: usize,
}

impl ColumnSpec {
    /// The leading bytes a state whose used counts are `used` has in use (of `len` bytes).
    fn used_bytes(&self, used: &[usize; Mark::COUNT], ext_in_use: bool, len: usize) -> usize {
        match self.extent {
            Extent::Whole => len,
            Extent::WhileExtInUse => {
                if ext_in_use {
                    len
                } else {
                    0
                }
            }
            Extent::Used(m, records) => (used[m as usize] * records * self.record).min(len),
        }
    }

    /// Bytes a copy from a state that uses `theirs` into one that uses `mine` has to write:
    /// past both, both hold what [`State::new`] put there.
    fn reach_bytes(
        &self,
        mine: &[usize; Mark::COUNT],
        theirs: &[usize; Mark::COUNT],
        len: usize,
    ) -> usize {
        match self.extent {
            Extent::Whole | Extent::WhileExtInUse => len,
            Extent::Used(m, records) => {
                let n = mine[m as usize].max(theirs[m as usize]);
                (n * records * self.record).min(len)
            }
        }
    }

    /// Its row of [`State::column_table`].
    fn info(&self, len: usize) -> ColumnInfo {
        let per_entity = match self.extent {
            Extent::Used(_, records) if self.per_entity => records,
            _ => 0,
        };
        ColumnInfo {
            name: self.name.to_string(),
            subsystem: self.subsystem,
            record_size: self.record as u32,
            count: (len / self.record.max(1)) as u32,
            per_entity: per_entity as u32,
        }
    }
}

/// Whether a column is indexed by entity slot (`per_entity`) or world-wide (`world`).
macro_rules! per_entity {
    (per_entity) => {
        true
    };
    (world) => {
        false
    };
}

/// Reads one record of a snapshot column as the column table says it is shown: the debug
/// dump's field decoder implements it, and [`read_record`] picks the method (and, for
/// `fields`, the record type) from the column's name.
pub(crate) trait RecordReader {
    /// What reading a record gives.
    type Out;
    /// A record of a type with named fields.
    fn fields<T: Pod + serde::Serialize>(&self, rec: &[u8]) -> Self::Out;
    /// One fixed-point number (`Fx`).
    fn fixed(&self, rec: &[u8]) -> Self::Out;
    /// One `u16` count.
    fn count(&self, rec: &[u8]) -> Self::Out;
    /// Bytes without a structure the dump decodes.
    fn bytes(&self, rec: &[u8]) -> Self::Out;
}

/// How the table's entry says a record is shown: `fields` (a struct with named fields),
/// `fixed`, `count` or `bytes` ([`RecordReader`]).
macro_rules! read_as {
    (fields, $ty:ty, $rec:ident, $r:ident) => {
        $r.fields::<<$ty as Column>::Record>($rec)
    };
    (fixed, $ty:ty, $rec:ident, $r:ident) => {
        $r.fixed($rec)
    };
    (count, $ty:ty, $rec:ident, $r:ident) => {
        $r.count($rec)
    };
    (bytes, $ty:ty, $rec:ident, $r:ident) => {
        $r.bytes($rec)
    };
}

/// What one record of a column is, for naming it in a dump's field-level diff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    /// An attribute of the entity (named by the content when it is at hand).
    Attribute,
    /// A tag of the entity (named by the content when it is at hand).
    Tag,
    /// A numbered record called this ("effect slot 3").
    Called(&'static str),
    /// A numbered record of the column (`name[3]`).
    Indexed,
}

/// The snapshot's column table: every column once, in checksum order, with its type, how a
/// new world fills it (`|layout, seed| value`), its subsystem and name, how far it is used
/// ([`Extent`]), whether it is indexed by entity, how a dump shows a record
/// ([`RecordReader`]) and what a record is called in a dump's diff ([`Item`]). The state's
/// fields, [`State::new`], cloning, saving, loading, the checksum, validation (the column
/// names of its errors, the unused-bytes check) and the debug dump (the column table, field
/// decoding, item names) are all generated from it: adding a column is one entry here.
macro_rules! snapshot_columns {
    ($(
        $(#[$doc:meta])*
        $field:ident: $ty:ty = |$l:ident, $seed:ident| $init:expr,
            $sub:ident $name:literal $extent:expr, $per:ident, $shown:ident $item:expr;
    )*) => {
        /// The mutable state of a world: the snapshot (its columns are the table in
        /// `src/world/state.rs`).
        pub(crate) struct State<G: Game> {
            /// The column sizes.
            pub layout: Layout,
            $($(#[$doc])* pub $field: $ty,)*
        }

        /// Every column's name, by the state's field that holds the column
        /// ([`COLUMN`]`.wake` is `"entity_wake"`).
        #[allow(dead_code, reason = "every column has a name; errors name the columns they check")]
        pub(crate) struct ColumnNames {
            $($(#[$doc])* pub $field: &'static str,)*
        }

        /// The columns' names, as snapshot errors and world dumps give them.
        pub(crate) const COLUMN: ColumnNames = ColumnNames { $($field: $name,)* };

        /// Columns in the snapshot.
        const COLUMNS: usize = [$($name),*].len();

        /// Reads a record of the column called `column` as the table shows it; `None` for a
        /// name the table does not have.
        pub(crate) fn read_record<R: RecordReader>(
            column: &str,
            rec: &[u8],
            reader: &R,
        ) -> Option<R::Out> {
            match column {
                $($name => Some(read_as!($shown, $ty, rec, reader)),)*
                _ => None,
            }
        }

        /// What a record of the column called `column` is ([`Item::Indexed`] for a name the
        /// table does not have).
        pub(crate) fn column_item(column: &str) -> Item {
            match column {
                $($name => $item,)*
                _ => Item::Indexed,
            }
        }

        impl<G: Game> Clone for State<G> {
            fn clone(&self) -> Self {
                State { layout: self.layout, $($field: self.$field.clone(),)* }
            }
        }

        impl<G: Game> State<G> {
            /// A new world's state: every column as the table fills it.
            #[allow(unused_variables, reason = "each entry's filler names the layout and seed")]
            pub fn new(layout: Layout, seed: u64) -> Self {
                State {
                    layout,
                    $($field: {
                        let ($l, $seed) = (&layout, seed);
                        $init
                    },)*
                }
            }

            /// The column table, for this layout.
            #[allow(unused_variables, reason = "each entry's extent names the layout")]
            fn specs(&self) -> [ColumnSpec; COLUMNS] {
                [$(ColumnSpec {
                    subsystem: Subsystem::$sub,
                    name: $name,
                    extent: {
                        let $l = &self.layout;
                        $extent
                    },
                    per_entity: per_entity!($per),
                    record: <$ty as Column>::RECORD,
                }),*]
            }

            /// Every column's bytes, in table order.
            fn column_bytes(&self) -> [&[u8]; COLUMNS] {
                [$(Column::bytes(&self.$field)),*]
            }

            /// Every column's bytes, in table order, to overwrite.
            fn column_bytes_mut(&mut self) -> [&mut [u8]; COLUMNS] {
                [$(Column::bytes_mut(&mut self.$field)),*]
            }
        }
    };
}

snapshot_columns! {
    /// World-wide counters and the global random stream.
    header: Header = |l, seed| Header::new(seed),
        Entities "header" Extent::Whole, world, fields Item::Indexed;
    /// Entity slots.
    entities: Vec<EntityRec> = |l, seed| vec![EntityRec::default(); l.entities],
        Entities "entities" Extent::Used(Mark::Entities, 1), per_entity, fields Item::Indexed;
    /// When each entity's effects next need the periodic and expiry phases.
    wake: Vec<EntityWake> = |l, seed| vec![EntityWake::default(); l.entities],
        Entities "entity_wake" Extent::Used(Mark::Entities, 1), per_entity, bytes Item::Indexed;
    /// Counters of the rarely used columns (hashed only when not zero).
    ext: ExtHeader = |l, seed| ExtHeader::default(),
        Entities "ext_header" Extent::WhileExtInUse, world, fields Item::Indexed;
    /// Per entity: its clock (hitstop, time scale); used up to `ext.time_high_water`.
    entity_time: Vec<EntityTime> = |l, seed| vec![EntityTime::default(); l.entities],
        Entities "entity_time" Extent::Used(Mark::Clocks, 1), per_entity, fields Item::Indexed;
    /// Per entity and tag: the tag's count.
    tag_counts: Vec<u16> = |l, seed| vec![0; l.entities * l.tags],
        Tags "tag_counts" Extent::Used(Mark::Entities, l.tags), per_entity, count Item::Tag;
    /// Per entity: one bit per tag with a non-zero count.
    tag_bits: Vec<u64> = |l, seed| vec![0; l.entities * l.tag_words],
        Tags "tag_bits" Extent::Used(Mark::Entities, l.tag_words),
        per_entity, bytes Item::Called("tag word");
    /// Per entity and attribute: its base and current values.
    attrs: Vec<AttrValue> = |l, seed| vec![AttrValue::default(); l.entities * l.attrs],
        Attributes "attributes" Extent::Used(Mark::Entities, l.attrs),
        per_entity, fields Item::Attribute;
    /// Per entity: its active effects (the first `n_effects` slots are live).
    effects: Vec<ActiveEffect> = |l, seed| vec![ActiveEffect::default(); l.entities * l.effects],
        Effects "effects" Extent::Used(Mark::Entities, l.effects),
        per_entity, fields Item::Called("effect slot");
    /// When each effect slot expires and next executes (parallel to `effects`).
    effect_timers: Vec<EffectTimers> =
        |l, seed| vec![EffectTimers::default(); l.entities * l.effects],
        Effects "effect_timers" Extent::Used(Mark::Entities, l.effects),
        per_entity, fields Item::Called("effect slot");
    /// Per effect slot: its modifiers' magnitudes.
    effect_mags: Vec<Fx> = |l, seed| vec![Fx::ZERO; l.entities * l.effects * l.mods],
        Effects "effect_magnitudes" Extent::Used(Mark::Entities, l.effects * l.mods),
        per_entity, fixed Item::Called("magnitude");
    /// Specs kept for active effects that re-evaluate them (executions, calculations).
    effect_specs: Vec<EffectSpec> = |l, seed| vec![EffectSpec::zeroed(); l.stored_specs],
        Effects "effect_specs" Extent::Used(Mark::StoredSpecs, 1),
        world, fields Item::Called("stored spec");
    /// Who applied the effects not applied by their target to itself: a dense pool whose
    /// first `header.origins_len` records are in use and the rest zero, so saves, loads and
    /// checksums cover only the used front.
    origins: Vec<PooledOrigin> =
        |l, seed| vec![PooledOrigin::default(); l.entities * l.effects],
        Effects "effect_origins" Extent::Used(Mark::Origins, 1),
        world, fields Item::Called("origin record");
    /// Per effect slot: dynamic granted tags beyond the inline two (tag id + 1, 0 unused);
    /// moves with its effect. Empty unless `WorldConfig::granted_tags_per_spec` is above 2.
    effect_tags_ext: Vec<u16> = |l, seed| vec![0; l.entities * l.effects * l.tags_extra],
        Effects "effect_tag_overflow" Extent::Used(Mark::Entities, l.effects * l.tags_extra),
        per_entity, bytes Item::Indexed;
    /// Per stored-spec slot: the kept spec's values beyond its inline room
    /// ([`Layout::spec_words`] words). Empty unless a spec capacity is raised.
    spec_ext: Vec<u64> = |l, seed| vec![0; l.stored_specs * l.spec_words()],
        Effects "spec_overflow" Extent::Used(Mark::StoredSpecs, l.spec_words()),
        world, bytes Item::Indexed;
    /// The frame spill (`src/world/capacity.rs`): word 0 holds the last serial handed out and
    /// (high half) the records in use; the records follow. Cleared at the end of every step,
    /// so it is empty between the frames of a session.
    spill: Vec<u64> = |l, seed| vec![0; l.spill_len()],
        Effects "frame_spill" Extent::Used(Mark::Spill, 1), world, bytes Item::Indexed;
    /// Per entity: its granted abilities.
    specs: Vec<AbilitySpec> = |l, seed| vec![AbilitySpec::default(); l.entities * l.abilities],
        Abilities "ability_specs" Extent::Used(Mark::Entities, l.abilities),
        per_entity, fields Item::Called("ability slot");
    /// Per ability slot: its instance state words.
    ability_state: Vec<u64> = |l, seed| vec![0; l.entities * l.abilities * l.state_words],
        Abilities "ability_state" Extent::Used(Mark::Entities, l.abilities * l.state_words),
        per_entity, bytes Item::Indexed;
    /// Per ability slot: dynamic ability tags beyond the inline two (tag id + 1, 0 unused).
    ability_tags_ext: Vec<u16> =
        |l, seed| vec![0; l.entities * l.abilities * l.ability_tags_extra],
        Abilities "ability_tag_overflow"
        Extent::Used(Mark::Entities, l.abilities * l.ability_tags_extra),
        per_entity, bytes Item::Indexed;
    /// Per player: the entity its inputs drive.
    player_owner: Vec<Entity> = |l, seed| vec![Entity::NONE; l.players],
        Abilities "player_owner" Extent::Whole, world, fields Item::Called("player");
    /// The ability task pool.
    tasks: Vec<TaskRec> = |l, seed| vec![TaskRec::default(); l.tasks],
        Tasks "tasks" Extent::Used(Mark::Tasks, 1), world, fields Item::Called("task");
    /// Per entity: who its hit boxes have hit while they are out (`src/world/boxes.rs`); empty
    /// unless the content declares a hit box.
    box_hits: Vec<super::boxes::HitMemory> =
        |l, seed| vec![super::boxes::HitMemory::default(); l.entities * l.hit_memory],
        Tasks "box_hits" Extent::Used(Mark::Entities, l.hit_memory),
        per_entity, bytes Item::Indexed;
    /// Standalone persistent cues.
    standalone_cues: Vec<StandaloneCue> = |l, seed| vec![StandaloneCue::default(); l.cues],
        Cues "standalone_cues" Extent::Whole, world, fields Item::Called("cue slot");
    /// Per entity: its box anchor, kept by the world for a game without positions of its own
    /// (`src/world/boxes.rs`); empty unless [`Game::KEEPS_ANCHORS`](super::Game::KEEPS_ANCHORS)
    /// and the content declares a box.
    anchors: Vec<super::boxes::KeptAnchor> =
        |l, seed| vec![super::boxes::KeptAnchor::default(); l.entities * l.anchors],
        Game "anchors" Extent::Used(Mark::Entities, l.anchors), per_entity, bytes Item::Indexed;
    /// Per entity: the game's own component.
    components: Vec<G::Component> = |l, seed| vec![G::Component::default(); l.entities],
        Game "components" Extent::Used(Mark::Entities, 1), per_entity, bytes Item::Indexed;
    /// The game's global block.
    global: Vec<G::Global> = |l, seed| vec![G::Global::default(); 1],
        Game "global" Extent::Whole, world, bytes Item::Indexed;
    /// Per player: this frame's input.
    inputs: Vec<G::Input> = |l, seed| vec![G::Input::default(); l.players],
        Inputs "inputs" Extent::Whole, world, bytes Item::Called("player");
    /// Per player: the previous frame's input (for edges).
    prev_inputs: Vec<G::Input> = |l, seed| vec![G::Input::default(); l.players],
        Inputs "prev_inputs" Extent::Whole, world, bytes Item::Called("player");
    /// Per player: buffered presses; used up to `ext.buffer_high_water`.
    input_buffers: Vec<InputBufferRec> = |l, seed| vec![InputBufferRec::default(); l.players],
        Inputs "input_buffers" Extent::Used(Mark::Buffers, 1), world, fields Item::Called("player");
}

/// twox-hash's streaming XXH3-64 with the default secret: allocates nothing and picks its AVX2
/// or SSE2 path at run time (the output is the same on every path and machine).
type Xxh3 = RawHasher<&'static [u8; twox_hash::xxhash3_64::DEFAULT_SECRET_LENGTH]>;

/// One subsystem's XXH3-64 stream: twox-hash's over bytes in place ([`State::checksums`]), or
/// [`CopyHasher`] over bytes being copied ([`State::copy_from_checksummed`]). Both give the same
/// hash of the same bytes.
trait Stream {
    fn open() -> Self;
    fn hash(&self) -> u64;
}

impl Stream for Xxh3 {
    fn open() -> Self {
        RawHasher::new(SecretBuffer::default())
    }
    fn hash(&self) -> u64 {
        self.finish()
    }
}

impl Stream for CopyHasher {
    fn open() -> Self {
        CopyHasher::new()
    }
    fn hash(&self) -> u64 {
        self.finish()
    }
}

/// The per-subsystem hashers of one checksum pass (columns arrive in checksum order, so each
/// subsystem's columns are consecutive).
struct Hashes<H> {
    parts: [u64; Subsystem::COUNT],
    cur: Option<(Subsystem, H)>,
}

impl<H: Stream> Hashes<H> {
    fn new() -> Self {
        Hashes { parts: [0; Subsystem::COUNT], cur: None }
    }

    /// The stream of subsystem `s`, opened if the last one was another subsystem's (an empty
    /// subsystem still has the hash of no bytes).
    fn stream(&mut self, s: Subsystem) -> &mut H {
        if self.cur.as_ref().map(|c| c.0) != Some(s) {
            self.close();
        }
        &mut self.cur.get_or_insert_with(|| (s, H::open())).1
    }

    fn close(&mut self) {
        if let Some((s, h)) = self.cur.take() {
            self.parts[s.index()] = h.hash();
        }
    }

    fn finish(mut self) -> Checksums {
        self.close();
        let mut all = [0u8; 8 * Subsystem::COUNT];
        for (bytes, p) in all.chunks_exact_mut(8).zip(&self.parts) {
            bytes.copy_from_slice(&p.to_le_bytes());
        }
        Checksums { total: twox_hash::XxHash3_64::oneshot(&all), parts: self.parts }
    }
}

impl Header {
    /// A new world's header.
    fn new(seed: u64) -> Header {
        Header {
            seed,
            rng_state: crate::random::splitmix64(seed ^ 0x5EED_0FC0_FFEE),
            frame: 0,
            next_seq: 1,
            free_head: u32::MAX,
            high_water: 0,
            alive: 0,
            cascade_overflows: 0,
            task_free_head: u32::MAX,
            task_high_water: 0,
            tasks_live: 0,
            exec_serial: 0,
            origins_len: 0,
            specs_high_water: 0,
        }
    }
}

impl<G: Game> State<G> {
    /// Copies another state of the same layout into this one without allocating.
    ///
    /// # Panics
    ///
    /// If the layouts differ (callers check [`Layout`] first).
    pub fn copy_from(&mut self, o: &State<G>) {
        assert_eq!(self.layout, o.layout, "snapshot layouts differ");
        self.for_each_column_pair(o, |_, dst, src, _| dst.copy_from_slice(src));
    }

    /// [`State::copy_from`] and [`State::checksums`] of the result in one pass: each column's
    /// hashed bytes are copied and hashed together by [`CopyHasher`] (each stripe loaded once,
    /// stored and accumulated), the rest of it copied.
    pub fn copy_from_checksummed(&mut self, o: &State<G>) -> Checksums {
        assert_eq!(self.layout, o.layout, "snapshot layouts differ");
        let mut hashes = Hashes::<CopyHasher>::new();
        self.for_each_column_pair(o, |s, dst, src, hashed| {
            let (dh, dt) = dst.split_at_mut(hashed.min(dst.len()));
            let (sh, st) = src.split_at(dh.len());
            hashes.stream(s).copy(dh, sh);
            dt.copy_from_slice(st);
        });
        hashes.finish()
    }

    /// How many records of each pooled column are in use, per [`Mark`]: the slots up to the
    /// high-water marks, the used front of the origin pool and of the frame spill. Records past
    /// them are as [`State::new`] made them (validation checks it), so copies and checksums
    /// can stop there.
    fn used(&self) -> [usize; Mark::COUNT] {
        let h = &self.header;
        let spill = match self.spill.first() {
            None | Some(0) => 0,
            Some(w) => 1 + (w >> 32) as usize * self.layout.spill_stride(),
        };
        let mut used = [0; Mark::COUNT];
        used[Mark::Entities as usize] = (h.high_water as usize).min(self.layout.entities);
        used[Mark::Tasks as usize] = (h.task_high_water as usize).min(self.tasks.len());
        used[Mark::Origins as usize] = (h.origins_len as usize).min(self.origins.len());
        used[Mark::StoredSpecs as usize] =
            (h.specs_high_water as usize).min(self.effect_specs.len());
        used[Mark::Clocks as usize] =
            (self.ext.time_high_water as usize).min(self.entity_time.len());
        used[Mark::Buffers as usize] =
            (self.ext.buffer_high_water as usize).min(self.input_buffers.len());
        used[Mark::Spill as usize] = spill.min(self.spill.len());
        used
    }

    /// Calls `f` with every column of `self` (mutable), the same column of `o` and how many of
    /// its leading bytes the checksum covers, in checksum order.
    ///
    /// Pooled columns are passed only as far as either state uses them ([`State::used`]): past
    /// both, both hold what [`State::new`] put there, so the copy leaves the same bytes as a
    /// copy of the whole column.
    fn for_each_column_pair(
        &mut self,
        o: &State<G>,
        mut f: impl FnMut(Subsystem, &mut [u8], &[u8], usize),
    ) {
        let (mine, theirs, in_use) = (self.used(), o.used(), o.ext.in_use());
        let specs = self.specs();
        for ((spec, dst), src) in specs.iter().zip(self.column_bytes_mut()).zip(o.column_bytes()) {
            let n = spec.reach_bytes(&mine, &theirs, src.len());
            f(spec.subsystem, &mut dst[..n], &src[..n], spec.used_bytes(&theirs, in_use, n));
        }
    }

    /// Calls `f` for every column in checksum order, with its subsystem, name, bytes and how
    /// many of its leading bytes the checksum covers: all of a world-wide column; of a pooled
    /// column, the records in use ([`State::used`]; the rest are as [`State::new`] made them,
    /// and not hashed).
    pub fn visit_columns<'a>(
        &'a self,
        mut f: impl FnMut(Subsystem, &'static str, &'a [u8], usize),
    ) {
        let (used, in_use) = (self.used(), self.ext.in_use());
        for (spec, bytes) in self.specs().iter().zip(self.column_bytes()) {
            f(spec.subsystem, spec.name, bytes, spec.used_bytes(&used, in_use, bytes.len()));
        }
    }

    /// Calls `f` for every column in checksum order, with its subsystem, name and bytes.
    pub fn for_each_column(&self, mut f: impl FnMut(Subsystem, &'static str, &[u8])) {
        self.visit_columns(|s, name, bytes, _| f(s, name, bytes));
    }

    /// Every column's name, subsystem, record size and per-entity stride (0 for world-wide
    /// columns), in snapshot order.
    pub fn column_table(&self) -> Vec<ColumnInfo> {
        self.specs().iter().zip(self.column_bytes()).map(|(s, b)| s.info(b.len())).collect()
    }

    /// Overwrites the state from bytes laid out as [`State::for_each_column`] writes them.
    pub fn load_bytes(&mut self, bytes: &[u8]) -> bool {
        if bytes.len() != self.byte_len() {
            return false;
        }
        let mut at = 0usize;
        for dst in self.column_bytes_mut() {
            let n = dst.len();
            dst.copy_from_slice(&bytes[at..at + n]);
            at += n;
        }
        true
    }

    /// The snapshot size in bytes.
    pub fn byte_len(&self) -> usize {
        self.column_bytes().iter().map(|b| b.len()).sum()
    }

    /// The bytes the checksum covers (and a save copies, plus whatever the destination used
    /// beyond them): the snapshot without the records past the entity and task high-water
    /// marks and the origin pool's used front.
    pub fn live_byte_len(&self) -> usize {
        let mut n = 0;
        self.visit_columns(|_, _, _, hashed| n += hashed);
        n
    }

    /// xxh3-64 per subsystem over its columns' bytes in order, then over the sub-checksums.
    pub fn checksums(&self) -> Checksums {
        let mut hashes = Hashes::<Xxh3>::new();
        self.visit_columns(|s, _, bytes, hashed| hashes.stream(s).write(&bytes[..hashed]));
        hashes.finish()
    }

    /// Whether an entity handle is alive.
    #[inline]
    pub fn is_alive(&self, e: Entity) -> bool {
        self.entities.get(e.index as usize).is_some_and(|r| {
            r.generation == e.generation && r.flags & entity_flags::ALIVE != 0 && e.generation != 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A game whose per-entity component and global block are not empty (a position and a few
    /// ids, like the benchmark arena's), so the game's columns are copied and hashed too.
    #[derive(Debug)]
    struct Columns;

    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
    struct Body {
        x: Fx,
        y: Fx,
        ids: [u32; 4],
    }

    impl Game for Columns {
        type Input = u8;
        type Component = Body;
        type Global = [u32; 8];
    }

    fn layout() -> Layout {
        Layout {
            entities: 3,
            attrs: 4,
            tags: 5,
            tag_words: 1,
            effects: 2,
            mods: 2,
            stored_specs: 2,
            players: 2,
            abilities: 2,
            state_words: 1,
            tasks: 3,
            cues: 2,
            sbc_extra: 0,
            tags_extra: 0,
            inline_extra: 0,
            ability_tags_extra: 0,
            target_entities: 0,
            spills: 0,
            hit_memory: 0,
            anchors: 0,
        }
    }

    /// A state using `entities` entity slots, `tasks` task slots and `origins` origin records,
    /// each used record filled with bytes derived from `salt`.
    fn used_state(entities: u32, tasks: u32, origins: u32, salt: u8) -> State<Columns> {
        use bytemuck::cast_slice_mut;
        let mut s = State::new(layout(), 7);
        let (e, t, o) = (entities as usize, tasks as usize, origins as usize);
        let l = s.layout;
        let fill = |b: &mut [u8]| b.iter_mut().enumerate().for_each(|(i, x)| *x = salt ^ i as u8);
        fill(cast_slice_mut(&mut s.entities[..e]));
        fill(cast_slice_mut(&mut s.wake[..e]));
        fill(cast_slice_mut(&mut s.tag_counts[..e * l.tags]));
        fill(cast_slice_mut(&mut s.attrs[..e * l.attrs]));
        fill(cast_slice_mut(&mut s.effects[..e * l.effects]));
        fill(cast_slice_mut(&mut s.effect_mags[..e * l.effects * l.mods]));
        fill(cast_slice_mut(&mut s.specs[..e * l.abilities]));
        fill(cast_slice_mut(&mut s.tasks[..t]));
        fill(cast_slice_mut(&mut s.origins[..o]));
        // Stored specs follow the task count (the layout has two slots).
        let specs = tasks.min(2);
        fill(cast_slice_mut(&mut s.effect_specs[..specs as usize]));
        s.header.specs_high_water = specs;
        s.header.high_water = entities;
        s.header.task_high_water = tasks;
        s.header.origins_len = origins;
        s
    }

    /// Per-entity columns and the task, stored-spec and origin pools are copied only as far as
    /// either state uses them and hashed only as far as the source uses them: the copy still leaves
    /// exactly the source's bytes (a destination that used more is reset to the new-world
    /// bytes past the source's marks), and the checksum sees every used record.
    #[test]
    fn pooled_columns_are_copied_and_hashed_up_to_their_used_records() {
        type S = State<Columns>;
        let bytes = |s: &S| {
            let mut v = Vec::new();
            s.for_each_column(|_, _, b| v.extend_from_slice(b));
            v
        };
        for ((se, st, so), (de, dt, d_o)) in [
            ((1, 1, 2), (3, 3, 5)),
            ((3, 3, 5), (1, 1, 2)),
            ((2, 0, 0), (2, 3, 6)),
            ((0, 0, 0), (3, 3, 6)),
            ((3, 3, 6), (0, 0, 0)),
        ] {
            let src = used_state(se, st, so, 0x5A);
            let dst = used_state(de, dt, d_o, 0xC3);
            let mut a = dst.clone();
            a.copy_from(&src);
            assert!(bytes(&a) == bytes(&src), "{:?} into {:?}", (se, st, so), (de, dt, d_o));
            let mut b = dst.clone();
            assert_eq!(b.copy_from_checksummed(&src), src.checksums());
            assert!(bytes(&b) == bytes(&src));
        }
        // Every used record counts in the checksum; records past the marks do not exist for it.
        let mut s = used_state(2, 1, 2, 0x11);
        let before = s.checksums();
        s.origins[1].seq ^= 1;
        assert_ne!(s.checksums().part(Subsystem::Effects), before.part(Subsystem::Effects));
        let before = s.checksums();
        s.components[1].x = Fx::from_bits(1);
        assert_ne!(s.checksums().part(Subsystem::Game), before.part(Subsystem::Game));
        let before = s.checksums();
        s.effect_specs[0].level ^= 1;
        assert_ne!(s.checksums().part(Subsystem::Effects), before.part(Subsystem::Effects));
        let before = s.checksums();
        s.tasks[0].a ^= 1;
        assert_ne!(s.checksums().part(Subsystem::Tasks), before.part(Subsystem::Tasks));
        // The bytes covered: the used records of each pooled column and every world-wide one.
        let table = s.column_table();
        let per_entity: usize =
            table.iter().map(|c| (c.record_size * c.per_entity) as usize).sum::<usize>();
        let (entities, tasks, origins) = (3 - 2, 3 - 1, 6 - 2);
        // Entity clocks and input buffers were never used: none of their bytes, nor the
        // extension header's, are hashed.
        let clock = core::mem::size_of::<EntityTime>();
        let unused = entities * (per_entity - clock)
            + 3 * clock
            + core::mem::size_of::<ExtHeader>()
            + 2 * core::mem::size_of::<InputBufferRec>()
            + tasks * core::mem::size_of::<TaskRec>()
            + core::mem::size_of::<EffectSpec>()
            + origins * core::mem::size_of::<PooledOrigin>();
        assert_eq!(s.live_byte_len() + unused, s.byte_len());
    }

    /// Loading, the whole-column walk, the pair walk of `copy_from`/`copy_from_checksummed`,
    /// `checksums` and `column_table` all come from the one column table: they must agree on
    /// the columns and their order, or a snapshot copy, a keyframe load or a dump silently
    /// misses one.
    #[test]
    fn every_column_list_names_the_same_columns_in_the_same_order() {
        type S = State<Columns>;
        let mut a = S::new(layout(), 7);
        let n = a.byte_len();
        // Distinct bytes everywhere (every field type is `Pod`, so any bytes are a state).
        let pattern: Vec<u8> =
            (0..n as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        assert!(a.load_bytes(&pattern));
        let mut out = Vec::new();
        a.for_each_column(|_, _, b| out.extend_from_slice(b));
        assert!(out == pattern, "load_bytes and for_each_column disagree");

        let mut b = S::new(layout(), 8);
        b.copy_from(&a);
        let mut copied = Vec::new();
        b.for_each_column(|_, _, x| copied.extend_from_slice(x));
        assert!(copied == pattern, "the pair walk misses a column");
        let mut c = S::new(layout(), 9);
        assert_eq!(c.copy_from_checksummed(&a), a.checksums(), "the pair walk is out of order");

        let mut cols = Vec::new();
        a.for_each_column(|s, name, bytes| cols.push((s, name, bytes.len())));
        let table = a.column_table();
        assert_eq!(table.len(), cols.len());
        for (t, (s, name, len)) in table.iter().zip(&cols) {
            assert_eq!((t.name.as_str(), t.subsystem), (*name, *s));
            assert_eq!(t.record_size as usize * t.count as usize, *len, "{name}");
        }

        // The dump's decoder knows every column by the same name.
        struct Shown;
        impl RecordReader for Shown {
            type Out = &'static str;
            fn fields<T: Pod + serde::Serialize>(&self, _: &[u8]) -> &'static str {
                "fields"
            }
            fn fixed(&self, _: &[u8]) -> &'static str {
                "fixed"
            }
            fn count(&self, _: &[u8]) -> &'static str {
                "count"
            }
            fn bytes(&self, _: &[u8]) -> &'static str {
                "bytes"
            }
        }
        for (_, name, _) in &cols {
            assert!(read_record(name, &[], &Shown).is_some(), "{name} has no decoder");
        }
        assert_eq!(read_record("no_such_column", &[], &Shown), None);
        assert_eq!(read_record(COLUMN.attrs, &[], &Shown), Some("fields"));
        assert_eq!(read_record(COLUMN.effect_mags, &[], &Shown), Some("fixed"));
        assert_eq!(column_item(COLUMN.tag_counts), Item::Tag);
        assert_eq!(column_item(COLUMN.effect_timers), Item::Called("effect slot"));
    }
}
