//! Capacities that can be raised: the entities of one target data, the
//! SetByCaller values, dynamic granted tags and inline modifiers of one effect spec, and the
//! dynamic tags of one granted ability.
//!
//! # Where the values live
//!
//! Every record keeps its inline room — four target entities, four SetByCaller values, two
//! granted tags, four inline modifiers, two ability tags — so a world built with the default
//! [`WorldConfig`] has the snapshot (and the checksums) of the inline records alone. Room
//! beyond it is a column sized from the configuration when the world is built, empty when the
//! capacity is not raised:
//!
//! | Values beyond the inline room of | Live in | Lifetime |
//! |---|---|---|
//! | a granted ability's dynamic tags | `ability_tag_overflow`, a row per ability slot | the grant |
//! | an active effect's dynamic granted tags | `effect_tag_overflow`, a row per effect slot (moves with its effect) | the effect |
//! | a kept spec (an active effect that re-reads its spec) | `spec_overflow`, a row per stored-spec slot | the effect |
//! | an effect spec value, a target list | `frame_spill`, a record per spec or list | the frame it was made in |
//! | an ability's cost and cooldown spec (its `cost_set_by_caller`, `cooldown_set_by_caller`, `cooldown_tags`) | the frozen ability definition, named by the spec (not in the snapshot) | the content |
//!
//! Effect specs and target data are plain values that game code copies freely, so what they
//! hold beyond their inline room is a record of the *frame spill*, named by a serial kept in
//! the value. Every step empties the spill at its end: a spec or target list is valid during
//! the frame it was made in (made between two steps, until the end of the next one), which is
//! when effects are applied and targeting tasks report. Using one later is an explicit,
//! recorded failure ([`ApplyError::SpecExpired`](crate::ApplyError::SpecExpired),
//! [`TargetListError::Expired`]), never a silent drop; an active effect copies what it needs
//! into its own rows when it is applied. The spill is a snapshot column like any other (saved,
//! loaded, hashed up to its used records), so a rollback restores it exactly; in a session it
//! is empty at every save.
//!
//! A value that does not fit is never dropped silently: a world call returns the capacity it
//! exceeded ([`ApplyError::OverCapacity`], [`CapacityExceeded`]) and records a
//! [`Diagnostic::CapacityExceeded`]; a builder that has no world
//! ([`EffectSpec::with_set_by_caller`], [`EffectSpec::with_granted_tag`], [`EffectSpec::inline`])
//! marks the spec, and applying it fails with
//! [`ApplyError::SpecValuesDropped`](crate::ApplyError::SpecValuesDropped).

use super::output::Diagnostic;
use super::state::Layout;
use super::{Game, World, WorldConfig, WorldError};
use crate::ability::TargetData;
use crate::content::Content;
use crate::effect::{EffectSpec, InlineMod, MAX_INLINE_MODS, SbcEntry};
use crate::id::{AbilityHandle, Entity, TagId};
use crate::world::output::ApplyError;
use bytemuck::{cast_slice, cast_slice_mut};
use core::fmt;

use crate::capacity::ext;
pub use crate::capacity::{Capacity, CapacityExceeded, MAX_SPEC_ROOM};
/// The most values any record holds beyond its inline room (sized for [`MAX_SPEC_ROOM`]).
pub(crate) const MAX_EXTRA: usize = MAX_SPEC_ROOM as usize - 2;

pub(crate) fn default_target_entities() -> u16 {
    TargetData::INLINE as u16
}
pub(crate) fn default_set_by_caller() -> u16 {
    crate::effect::MAX_SET_BY_CALLER as u16
}
pub(crate) fn default_granted_tags() -> u16 {
    2
}
pub(crate) fn default_inline_modifiers() -> u16 {
    MAX_INLINE_MODS as u16
}
pub(crate) fn default_ability_tags() -> u16 {
    2
}
pub(crate) fn default_spills() -> u16 {
    64
}

/// Why [`World::target_entities`] cannot give the entities of target data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum TargetListError {
    /// The list was made in an earlier frame: lists beyond four entities live in the frame
    /// spill, which every step empties at its end. Read the entities in the frame the data
    /// was reported (and keep the entities, not the target data, for later).
    Expired,
    /// The data was made with [`TargetData::entities`] from more entities than it holds (its
    /// [`TargetData::total`]); the rest were never kept. Area queries return them through
    /// [`Game::target_candidates`].
    Truncated {
        /// How many entities the data was made from.
        total: u32,
    },
}

impl fmt::Display for TargetListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetListError::Expired => f.write_str(
                "the target list was made in an earlier frame (the frame spill holding it is \
                 emptied at the end of every step)",
            ),
            TargetListError::Truncated { total } => write!(
                f,
                "the target data was made from {total} entities but holds {}: return area \
                 targets through Game::target_candidates",
                TargetData::INLINE
            ),
        }
    }
}

impl std::error::Error for TargetListError {}

/// Spill record kinds (the header word's high half).
const KIND_SPEC: u64 = 1;
const KIND_TARGETS: u64 = 2;

/// A spec's values beyond its inline room, borrowed from a spill record or a stored row.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SpecExtra<'a> {
    /// SetByCaller entries.
    pub sbc: &'a [SbcEntry],
    /// Granted tags, as tag id + 1.
    pub tags: &'a [u16],
    /// Inline modifiers.
    pub inline: &'a [InlineMod],
}

impl SpecExtra<'_> {
    fn is_empty(&self) -> bool {
        self.sbc.is_empty() && self.tags.is_empty() && self.inline.is_empty()
    }

    /// The granted tags.
    pub fn tag_ids(&self) -> impl Iterator<Item = TagId> + '_ {
        self.tags.iter().filter(|t| **t != 0).map(|t| TagId(*t - 1))
    }
}

/// A spec's values beyond its inline room, owned (fixed arrays: building one allocates
/// nothing).
#[derive(Clone, Copy)]
pub(crate) struct OwnedExtra {
    pub sbc: [SbcEntry; MAX_EXTRA],
    pub n_sbc: usize,
    pub tags: [u16; MAX_EXTRA],
    pub n_tags: usize,
    pub inline: [InlineMod; MAX_EXTRA],
    pub n_inline: usize,
}

impl OwnedExtra {
    pub fn of(x: &SpecExtra<'_>) -> OwnedExtra {
        let mut o = OwnedExtra {
            sbc: [SbcEntry::default(); MAX_EXTRA],
            n_sbc: x.sbc.len().min(MAX_EXTRA),
            tags: [0; MAX_EXTRA],
            n_tags: x.tags.len().min(MAX_EXTRA),
            inline: [InlineMod::default(); MAX_EXTRA],
            n_inline: x.inline.len().min(MAX_EXTRA),
        };
        o.sbc[..o.n_sbc].copy_from_slice(&x.sbc[..o.n_sbc]);
        o.tags[..o.n_tags].copy_from_slice(&x.tags[..o.n_tags]);
        o.inline[..o.n_inline].copy_from_slice(&x.inline[..o.n_inline]);
        o
    }
}

/// Splits a spec payload (`Layout::spec_words` words) into its parts.
fn spec_parts<'a>(l: &Layout, p: &'a [u64]) -> SpecExtra<'a> {
    let Some(&w0) = p.first() else { return SpecExtra::default() };
    let n_sbc = (w0 & 0xFFFF) as usize;
    let n_tags = ((w0 >> 16) & 0xFFFF) as usize;
    let n_inline = ((w0 >> 32) & 0xFFFF) as usize;
    let mut at = 1;
    let sbc: &[SbcEntry] = cast_slice(&p[at..at + 2 * l.sbc_extra]);
    at += 2 * l.sbc_extra;
    let tw = l.tags_extra.div_ceil(4);
    let tags: &[u16] = cast_slice(&p[at..at + tw]);
    at += tw;
    let inline: &[InlineMod] = cast_slice(&p[at..at + 2 * l.inline_extra]);
    SpecExtra {
        sbc: &sbc[..n_sbc.min(l.sbc_extra)],
        tags: &tags[..n_tags.min(l.tags_extra)],
        inline: &inline[..n_inline.min(l.inline_extra)],
    }
}

/// Writes `x` as a spec payload (`p` is `Layout::spec_words` words, overwritten).
fn write_spec_parts(l: &Layout, p: &mut [u64], x: &OwnedExtra) {
    p.iter_mut().for_each(|w| *w = 0);
    let (n_sbc, n_tags, n_inline) =
        (x.n_sbc.min(l.sbc_extra), x.n_tags.min(l.tags_extra), x.n_inline.min(l.inline_extra));
    p[0] = n_sbc as u64 | (n_tags as u64) << 16 | (n_inline as u64) << 32;
    let mut at = 1;
    let sbc: &mut [SbcEntry] = cast_slice_mut(&mut p[at..at + 2 * l.sbc_extra]);
    sbc[..n_sbc].copy_from_slice(&x.sbc[..n_sbc]);
    at += 2 * l.sbc_extra;
    let tw = l.tags_extra.div_ceil(4);
    let tags: &mut [u16] = cast_slice_mut(&mut p[at..at + tw]);
    tags[..n_tags].copy_from_slice(&x.tags[..n_tags]);
    at += tw;
    let inline: &mut [InlineMod] = cast_slice_mut(&mut p[at..at + 2 * l.inline_extra]);
    inline[..n_inline].copy_from_slice(&x.inline[..n_inline]);
}

/// The layout fields of the raised capacities (the rest zero, filled in by `World::new`).
pub(crate) fn extra_layout(c: &WorldConfig) -> Layout {
    let extra = |v: u16, inline: usize| usize::from(v).saturating_sub(inline);
    let mut l = Layout {
        entities: 0,
        attrs: 0,
        tags: 0,
        tag_words: 0,
        effects: 0,
        mods: 0,
        stored_specs: 0,
        players: 0,
        abilities: 0,
        state_words: 0,
        tasks: 0,
        cues: 0,
        sbc_extra: extra(c.set_by_caller_per_spec, crate::effect::MAX_SET_BY_CALLER),
        tags_extra: extra(c.granted_tags_per_spec, 2),
        inline_extra: extra(c.inline_modifiers_per_spec, MAX_INLINE_MODS),
        ability_tags_extra: extra(c.ability_dynamic_tags, 2),
        target_entities: if usize::from(c.max_target_entities) > TargetData::INLINE {
            usize::from(c.max_target_entities)
        } else {
            0
        },
        spills: 0,
        hit_memory: 0,
        anchors: 0,
    };
    if l.spec_words() + l.target_words() > 0 {
        l.spills = usize::from(c.spills_per_frame);
    }
    l
}

/// Checks the capacities of a configuration and that content fits them.
pub(crate) fn check_config(c: &WorldConfig, content: &Content) -> Result<(), WorldError> {
    for cap in Capacity::ALL {
        let v = configured(cap, c);
        let lo = cap.inline().max(1);
        if v < lo || v > cap.max() {
            return Err(WorldError::InvalidConfig {
                field: cap.config_field(),
                value: v.into(),
                min: lo.into(),
                max: cap.max().into(),
            });
        }
    }
    let too_small = |capacity: Capacity, needed: usize| {
        let (needed, limit) = (needed as u32, configured(capacity, c));
        (needed > limit).then_some(CapacityExceeded { capacity, needed, limit })
    };
    let sbc = Capacity::SetByCallerPerSpec;
    for d in content.effect_defs() {
        let n = d.set_by_caller_keys.len();
        if let Some(exceeded) = too_small(sbc, n) {
            let what = format!("effect \"{}\" reads {n} SetByCaller keys", d.name);
            return Err(WorldError::CapacityTooSmall { what, exceeded });
        }
    }
    // An ability's cost and cooldown specs carry its values (and cooldown tags): the world
    // must hold them in one spec, kept or not.
    for d in content.ability_defs() {
        let checks = [
            (d.cost_set_by_caller.len(), sbc, "its cost gives", "SetByCaller values"),
            (d.cooldown_values.len(), sbc, "its cooldown gives", "SetByCaller values"),
            (d.cooldown_tags.len(), Capacity::GrantedTagsPerSpec, "it has", "cooldown_tags"),
        ];
        for (n, cap, verb, counted) in checks {
            if let Some(exceeded) = too_small(cap, n) {
                let what = format!("ability \"{}\": {verb} {n} {counted}", d.name);
                return Err(WorldError::CapacityTooSmall { what, exceeded });
            }
        }
    }
    Ok(())
}

impl<G: Game> World<G> {
    // ----------------------------------------------------------------------------------------
    // The frame spill
    // ----------------------------------------------------------------------------------------

    /// `(last serial, records in use)`.
    fn spill_head(&self) -> (u32, usize) {
        let w = self.state.spill.first().copied().unwrap_or(0);
        (w as u32, (w >> 32) as usize)
    }

    /// The first word of the spill record with `serial`, if it is in use (made this frame).
    fn spill_find(&self, serial: u32, kind: u64) -> Option<usize> {
        let (last, n) = self.spill_head();
        if n == 0 {
            return None;
        }
        // Serials of the records in use are consecutive, ending at `last` (wrapping).
        let back = if serial <= last { last - serial } else { last + (ext::SERIAL_MAX - serial) };
        let idx = n.checked_sub(1 + back as usize)?;
        let at = 1 + idx * self.state.layout.spill_stride();
        let head = *self.state.spill.get(at)?;
        (head == u64::from(serial) | kind << 32).then_some(at)
    }

    /// Allocates a spill record of `kind`: its serial and first payload word.
    fn spill_alloc(&mut self, kind: u64, entity: Entity) -> Result<(u32, usize), CapacityExceeded> {
        let l = self.state.layout;
        let (last, n) = self.spill_head();
        if n >= l.spills {
            let e = CapacityExceeded {
                capacity: Capacity::SpillsPerFrame,
                needed: n as u32 + 1,
                limit: l.spills as u32,
            };
            self.out.diagnostics.push(Diagnostic::CapacityExceeded { entity, exceeded: e });
            return Err(e);
        }
        let serial = if last >= ext::SERIAL_MAX { 1 } else { last + 1 };
        let at = 1 + n * l.spill_stride();
        self.state.spill[0] = u64::from(serial) | ((n as u64 + 1) << 32);
        self.state.spill[at] = u64::from(serial) | kind << 32;
        Ok((serial, at + 1))
    }

    /// Empties the frame spill (end of every step): its records go back to zero, the serial
    /// counter stays.
    pub(crate) fn end_spill(&mut self) {
        let (last, n) = self.spill_head();
        if n == 0 {
            return;
        }
        let end = 1 + n * self.state.layout.spill_stride();
        self.state.spill[1..end].iter_mut().for_each(|w| *w = 0);
        self.state.spill[0] = u64::from(last);
    }

    // ----------------------------------------------------------------------------------------
    // Specs beyond their inline room
    // ----------------------------------------------------------------------------------------

    /// The values of `spec` beyond its inline room, or why they cannot be read.
    pub(crate) fn spec_extra(&self, spec: &EffectSpec) -> Result<SpecExtra<'_>, ApplyError> {
        let l = &self.state.layout;
        if spec.ext == ext::NONE {
            return Ok(SpecExtra::default());
        }
        if let Some(capacity) = ext::dropped_capacity(spec.ext) {
            return Err(ApplyError::SpecValuesDropped { capacity });
        }
        if let Some((a, part)) = ext::content_ref(spec.ext) {
            // An ability's cost or cooldown values, frozen with its definition: they last as
            // long as the content (World::new checked that the world's capacities hold them).
            let Some(d) = self.content.ability_defs().get(a) else {
                return Err(ApplyError::SpecExpired);
            };
            return Ok(match part {
                ext::COST => SpecExtra { sbc: &d.cost_values_beyond, ..SpecExtra::default() },
                ext::COOLDOWN => SpecExtra {
                    sbc: &d.cooldown_values_beyond,
                    tags: &d.cooldown_tags_beyond,
                    ..SpecExtra::default()
                },
                _ => SpecExtra { sbc: &d.cooldown_values_beyond, ..SpecExtra::default() },
            });
        }
        let words = l.spec_words();
        if let Some(slot) = ext::stored_slot(spec.ext) {
            // The slot must still keep this spec (a copy an execution passed on could outlive
            // its effect): same definition and creation frame (a prepare stage may change the
            // rest of the copy).
            return match self.state.effect_specs.get(slot) {
                Some(s)
                    if s.stored != 0
                        && words > 0
                        && s.def == spec.def
                        && s.created == spec.created =>
                {
                    Ok(spec_parts(l, &self.state.spec_ext[slot * words..(slot + 1) * words]))
                }
                _ => Err(ApplyError::SpecExpired),
            };
        }
        match ext::serial(spec.ext).and_then(|s| self.spill_find(s, KIND_SPEC)) {
            Some(at) if words > 0 => Ok(spec_parts(l, &self.state.spill[at + 1..at + 1 + words])),
            _ => Err(ApplyError::SpecExpired),
        }
    }

    /// Whether `spec` can be applied as far as its values beyond the inline room go.
    #[inline]
    pub(crate) fn check_spec_ext(&self, spec: &EffectSpec) -> Result<(), ApplyError> {
        if spec.ext == ext::NONE { Ok(()) } else { self.spec_extra(spec).map(|_| ()) }
    }

    /// The SetByCaller entries of `spec` beyond its inline four (none if unreadable).
    pub(crate) fn spec_extra_sbc(&self, spec: &EffectSpec) -> &[SbcEntry] {
        if spec.ext == ext::NONE {
            return &[];
        }
        self.spec_extra(spec).map(|x| x.sbc).unwrap_or(&[])
    }

    /// The spec's extra values as an owned copy, or the error applying it would give.
    pub(crate) fn owned_extra(&self, spec: &EffectSpec) -> Result<OwnedExtra, ApplyError> {
        self.spec_extra(spec).map(|x| OwnedExtra::of(&x))
    }

    /// Writes `x` into a new spill record for `spec` (copy on write: other copies of the spec
    /// keep the record they name).
    pub(crate) fn spill_spec(
        &mut self,
        spec: &mut EffectSpec,
        x: &OwnedExtra,
    ) -> Result<(), ApplyError> {
        let (serial, at) = match self.spill_alloc(KIND_SPEC, spec.context.instigator) {
            Ok(r) => r,
            Err(e) => {
                spec.mark_dropped(Capacity::SpillsPerFrame);
                return Err(ApplyError::OverCapacity(e));
            }
        };
        let l = self.state.layout;
        let words = l.spec_words();
        write_spec_parts(&l, &mut self.state.spill[at..at + words], x);
        spec.ext = serial;
        Ok(())
    }

    /// Records a capacity failure of a spec and marks the spec so that applying it fails.
    pub(crate) fn spec_over(
        &mut self,
        spec: &mut EffectSpec,
        capacity: Capacity,
        needed: usize,
    ) -> ApplyError {
        let e = CapacityExceeded {
            capacity,
            needed: needed as u32,
            limit: configured(capacity, &self.config),
        };
        let entity = spec.context.instigator;
        self.out.diagnostics.push(Diagnostic::CapacityExceeded { entity, exceeded: e });
        spec.mark_dropped(capacity);
        ApplyError::OverCapacity(e)
    }

    /// The inline modifiers of an inline spec beyond its four (empty if unreadable).
    pub(crate) fn spec_extra_inline(&self, spec: &EffectSpec) -> &[InlineMod] {
        if spec.ext == ext::NONE {
            return &[];
        }
        self.spec_extra(spec).map(|x| x.inline).unwrap_or(&[])
    }

    /// Keeps the values of `spec` beyond its inline room in stored-spec slot `slot`'s row
    /// (the stored copy itself names no spill record).
    pub(crate) fn store_spec_extra(&mut self, slot: usize, spec: &EffectSpec) {
        let l = self.state.layout;
        let words = l.spec_words();
        if words == 0 {
            return;
        }
        let x = match self.owned_extra(spec) {
            Ok(x) => x,
            Err(_) => OwnedExtra::of(&SpecExtra::default()),
        };
        write_spec_parts(&l, self.effect_store_mut().spec_row(slot), &x);
    }

    /// What `ext` of a spec rebuilt from stored-spec slot `slot` should be.
    pub(crate) fn stored_ext(&self, slot: usize) -> u32 {
        let l = &self.state.layout;
        let words = l.spec_words();
        let used = words > 0
            && !spec_parts(l, &self.state.spec_ext[slot * words..(slot + 1) * words]).is_empty();
        if used && (slot as u32) < ext::SLOT_MAX { ext::STORED | slot as u32 } else { ext::NONE }
    }

    // ----------------------------------------------------------------------------------------
    // Active effects' and abilities' tags beyond their inline room
    // ----------------------------------------------------------------------------------------

    /// The dynamic granted tags of effect column slot `slot` beyond its inline two.
    pub(crate) fn effect_extra_tags(&self, slot: usize) -> impl Iterator<Item = TagId> + '_ {
        self.effect_store().tag_row(slot).iter().filter(|t| **t != 0).map(|t| TagId(*t - 1))
    }

    /// An effect's row of granted tags beyond its inline two (tag id + 1, 0 unused), from the
    /// spec it is applied with.
    pub(crate) fn effect_extra_tag_row(&self, spec: &EffectSpec) -> [u16; MAX_EXTRA] {
        let mut row = [0u16; MAX_EXTRA];
        if self.state.layout.tags_extra != 0
            && spec.ext != ext::NONE
            && let Ok(x) = self.spec_extra(spec)
        {
            for (d, t) in row.iter_mut().zip(x.tags) {
                *d = *t;
            }
        }
        row
    }

    /// The dynamic granted tags of an active effect: its inline two and those beyond.
    pub fn effect_dynamic_tags(&self, handle: crate::id::EffectHandle) -> Vec<TagId> {
        let store = self.effect_store();
        let Some(slot) = store.find(handle) else {
            return Vec::new();
        };
        let ef = store.effect(slot);
        let mut v: Vec<TagId> =
            ef.dynamic_tags.iter().filter(|t| **t != u16::MAX).map(|t| TagId(*t)).collect();
        v.extend(self.effect_extra_tags(slot));
        v
    }

    /// The row of ability slot `i` (its dynamic tags beyond two).
    pub(crate) fn ability_tag_row(&self, i: usize) -> &[u16] {
        let k = self.state.layout.ability_tags_extra;
        self.state.ability_tags_ext.get(i * k..(i + 1) * k).unwrap_or(&[])
    }

    /// Empties ability slot `i`'s row (grant and removal).
    pub(crate) fn clear_ability_tags(&mut self, i: usize) {
        let k = self.state.layout.ability_tags_extra;
        if let Some(row) = self.state.ability_tags_ext.get_mut(i * k..(i + 1) * k) {
            row.iter_mut().for_each(|t| *t = 0);
        }
    }

    /// Sets a granted ability's dynamic ability tags (F-GA-02), replacing the ones it had:
    /// two in its spec record, up to [`WorldConfig::ability_dynamic_tags`] in all (the rest in
    /// its row of the `ability_tag_overflow` column). Effects applied by the ability carry them
    /// among their source tags, and they match like the definition's tags. More than the
    /// capacity changes nothing: the error names the capacity (also recorded as a
    /// [`Diagnostic::CapacityExceeded`]).
    pub fn set_ability_dynamic_tags(
        &mut self,
        h: AbilityHandle,
        tags: &[TagId],
    ) -> Result<(), CapacityExceeded> {
        let Some(i) = self.spec_slot(h) else { return Ok(()) };
        let limit = configured(Capacity::AbilityDynamicTags, &self.config);
        if tags.len() as u32 > limit {
            let e = CapacityExceeded {
                capacity: Capacity::AbilityDynamicTags,
                needed: tags.len() as u32,
                limit,
            };
            self.out
                .diagnostics
                .push(Diagnostic::CapacityExceeded { entity: h.owner, exceeded: e });
            return Err(e);
        }
        let mut d = [u16::MAX; 2];
        for (k, t) in tags.iter().take(2).enumerate() {
            d[k] = t.0;
        }
        self.state.specs[i].dynamic_tags = d;
        self.clear_ability_tags(i);
        let k = self.state.layout.ability_tags_extra;
        for (j, t) in tags.iter().skip(2).enumerate() {
            self.state.ability_tags_ext[i * k + j] = t.0 + 1;
        }
        Ok(())
    }

    /// A granted ability's dynamic ability tags, all of them.
    pub fn ability_dynamic_tags(&self, h: AbilityHandle) -> Vec<TagId> {
        let Some(i) = self.spec_slot(h) else { return Vec::new() };
        let s = &self.state.specs[i];
        let mut v: Vec<TagId> =
            s.dynamic_tags.iter().filter(|t| **t != u16::MAX).map(|t| TagId(*t)).collect();
        v.extend(self.ability_tag_row(i).iter().filter(|t| **t != 0).map(|t| TagId(*t - 1)));
        v
    }

    // ----------------------------------------------------------------------------------------
    // Target lists
    // ----------------------------------------------------------------------------------------

    /// Target data holding `list` for the targeting task reporting it: four entities in the
    /// data, a longer list (up to [`WorldConfig::max_target_entities`], cut by the caller) in
    /// a spill record.
    pub(crate) fn target_list(&mut self, list: &[Entity], owner: Entity) -> TargetData {
        let mut t = TargetData::entities(list);
        if list.len() <= TargetData::INLINE {
            return t;
        }
        let n = list.len().min(self.state.layout.target_entities);
        let Ok((serial, at)) = self.spill_alloc(KIND_TARGETS, owner) else {
            // Recorded by `spill_alloc`; the data keeps its first four and says how many
            // there were (`TargetListError::Truncated`).
            return t;
        };
        self.state.spill[at] = n as u64;
        for (k, e) in list[..n].iter().enumerate() {
            self.state.spill[at + 1 + k] = bytemuck::cast(*e);
        }
        t.set_list(n as u32, serial);
        t
    }

    /// Every entity of target data: the ones it holds itself or, for a list longer than four
    /// (an area query of a world with a raised [`WorldConfig::max_target_entities`]), the
    /// whole list from the frame spill. Read it in the frame the data was reported;
    /// afterwards it is [`TargetListError::Expired`]. Data that is not a list of entities
    /// gives its one entity (hits, single targets) or none.
    pub fn target_entities<'a>(
        &'a self,
        data: &'a TargetData,
    ) -> Result<&'a [Entity], TargetListError> {
        let inline = &data.entities[..(data.count as usize).min(TargetData::INLINE)];
        if data.list() == 0 {
            return if data.total() as usize > inline.len() {
                Err(TargetListError::Truncated { total: data.total() })
            } else {
                Ok(inline)
            };
        }
        let at = self.spill_find(data.list(), KIND_TARGETS).ok_or(TargetListError::Expired)? + 1;
        let n = (self.state.spill[at] as usize).min(self.state.layout.target_entities);
        Ok(cast_slice(&self.state.spill[at + 1..at + 1 + n]))
    }
}

/// Its value in a configuration.
pub(crate) fn configured(cap: Capacity, c: &WorldConfig) -> u32 {
    match cap {
        Capacity::TargetEntities => c.max_target_entities.into(),
        Capacity::SetByCallerPerSpec => c.set_by_caller_per_spec.into(),
        Capacity::GrantedTagsPerSpec => c.granted_tags_per_spec.into(),
        Capacity::InlineModifiersPerSpec => c.inline_modifiers_per_spec.into(),
        Capacity::AbilityDynamicTags => c.ability_dynamic_tags.into(),
        Capacity::SpillsPerFrame => c.spills_per_frame.into(),
        Capacity::Entities => c.max_entities,
        Capacity::AbilitiesPerEntity => c.abilities_per_entity.into(),
    }
}
