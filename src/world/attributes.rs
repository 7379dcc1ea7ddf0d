//! The world's attribute API over the attribute table.
//!
//! The values and the rules they obey (set membership, bounds, base clamps, aggregation) live in
//! [`super::attribute_table`]; this file answers the public reads through it, queues base
//! changes, and gathers what evaluation aggregates: the qualifying modifiers of the entity's
//! active effects and the game's filter function. The settling loop (`cascade`) decides when an
//! attribute is re-evaluated and what a change causes.

use super::attribute_table::{AttrTable, AttrTableMut};
use super::cascade::Work;
use super::hooks::BoundFn;
use super::state::{AttrValue, State};
use super::{Game, World};
use crate::attribute::{self, AttrDef, Entry, ModFilter, ModFilterFn};
use crate::id::{AttrId, AttrSetId, Entity};
use crate::num::Fx;

impl<G: Game> State<G> {
    /// The attribute table over this state's column, with the attributes' definitions.
    pub(crate) fn attr_table<'a>(&'a self, defs: &'a [AttrDef]) -> AttrTable<'a> {
        AttrTable::new(&self.attrs, self.layout.attrs, defs)
    }

    /// [`State::attr_table`], to change.
    pub(crate) fn attr_table_mut<'a>(&'a mut self, defs: &'a [AttrDef]) -> AttrTableMut<'a> {
        AttrTableMut::new(&mut self.attrs, self.layout.attrs, defs)
    }
}

/// Reads and base changes of the public API.
impl<G: Game> World<G> {
    /// Whether the entity is alive, has an ability system and the attribute's set.
    pub fn has_attr(&self, e: Entity, a: AttrId) -> bool {
        self.has_ability_system(e) && self.entity_has_set_attr(e.index, a)
    }

    /// An attribute's base and current value.
    pub fn attr_value(&self, e: Entity, a: AttrId) -> Option<AttrValue> {
        self.has_attr(e, a).then(|| self.attr_table().value(e.index, a))
    }

    /// An attribute's current value.
    pub fn attr(&self, e: Entity, a: AttrId) -> Option<Fx> {
        self.attr_value(e, a).map(|v| v.current)
    }

    /// An attribute's base value.
    pub fn base(&self, e: Entity, a: AttrId) -> Option<Fx> {
        self.attr_value(e, a).map(|v| v.base)
    }

    /// Sets an attribute's base value (clamped if the attribute clamps its base); runs
    /// post-change evaluation and events like any other change.
    pub fn set_base(&mut self, e: Entity, a: AttrId, value: Fx) {
        self.submit(Work::SetBase { entity: e, attr: a, value });
    }

    /// Initialises an actor's attributes of `set` from the set's level table (F-ATTR-10, the
    /// `levels` rows of the attribute set in content): every attribute the row for `level` lists
    /// gets that base value (as [`set_base`](Self::set_base) would set it), the others keep
    /// theirs. The row used is the one with the greatest level not above `level`; its level is
    /// returned. `None`, and nothing changes, when the set has no such row.
    ///
    /// ```
    /// # use rollback_abilities::prelude::*;
    /// # use std::sync::Arc;
    /// # struct MyGame;
    /// # impl Game for MyGame { type Input = u8; type Component = (); type Global = (); }
    /// let content = Arc::new(Content::from_ron_str(r#"(
    ///     attribute_sets: { "Vitals": (
    ///         attributes: { "Health": (default: 1), "Armor": (default: 0) },
    ///         levels: [
    ///             (level: 1, values: { "Health": 100, "Armor": 2 }),
    ///             (level: 5, values: { "Health": 180, "Armor": 6 }),
    ///         ],
    ///     ) },
    /// )"#)?);
    /// let mut world = World::<MyGame>::new(content.clone(), &Hooks::new(), WorldConfig::default())?;
    /// let vitals = content.attr_set("Vitals")?;
    /// let hero = world.spawn_actor(&[vitals]).unwrap();
    /// assert_eq!(world.init_attributes(hero, vitals, 7), Some(5)); // levels 5..: the level-5 row
    /// assert_eq!(world.base(hero, content.attr("Health")?), Some(Fx::from_num(180)));
    /// assert_eq!(world.init_attributes(hero, vitals, 0), None); // below the first row
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn init_attributes(&mut self, e: Entity, set: AttrSetId, level: u16) -> Option<u16> {
        let content = self.content.clone();
        let row = content.attr_set_defs().get(set.index())?.level_row(level)?;
        for &(a, v) in &row.values {
            self.set_base(e, a, v);
        }
        Some(row.level)
    }

    /// Adds an attribute set to a live actor at runtime (its attributes start at defaults).
    pub fn add_attribute_set(&mut self, e: Entity, set: AttrSetId) {
        self.submit(Work::SetAttrSet { entity: e, set, present: true });
    }

    /// Removes an attribute set from a live actor at runtime.
    pub fn remove_attribute_set(&mut self, e: Entity, set: AttrSetId) {
        self.submit(Work::SetAttrSet { entity: e, set, present: false });
    }

    /// The attribute table over this world's column.
    #[inline]
    pub(crate) fn attr_table(&self) -> AttrTable<'_> {
        self.state.attr_table(self.content.attr_defs())
    }

    /// The attribute table, to change.
    #[inline]
    pub(crate) fn attr_table_mut(&mut self) -> AttrTableMut<'_> {
        self.state.attr_table_mut(self.content.attr_defs())
    }

    /// Whether the entity in slot `index` holds the set of `a` (and `a` is in the content).
    #[inline]
    pub(crate) fn entity_has_set_attr(&self, index: u32, a: AttrId) -> bool {
        self.attr_table().held(self.state.entities[index as usize].sets, a)
    }
}

/// Evaluation.
impl<G: Game> World<G> {
    /// Evaluates `a` on the entity in slot `index` from its base, unclamped, with what
    /// aggregation noticed.
    pub(crate) fn evaluate_raw_notes(&self, index: u32, a: AttrId) -> (Fx, attribute::Notes) {
        let base = self.attr_table().value(index, a).base;
        self.evaluate_with_base(index, a, base)
    }

    /// [`World::evaluate_raw_notes`] with a hypothetical base value (cost affordability): the
    /// modifiers gathered from the entity's active effects, aggregated by the attribute table.
    pub(crate) fn evaluate_with_base(
        &self,
        index: u32,
        a: AttrId,
        base: Fx,
    ) -> (Fx, attribute::Notes) {
        let table = self.attr_table();
        let bit = crate::content::Accel::attr_bit(a);
        if !table.takes_modifiers(a) || self.content.accel.aggregated_attrs & bit == 0 {
            // No duration effect modifies it (only executions change its base).
            return (base, attribute::Notes::default());
        }
        let mut agg = self.scratch.agg.borrow_mut();
        agg.entries.clear();
        self.push_modifier_entries(index, a, None, &mut agg.entries);
        if agg.entries.is_empty() {
            // No modifier qualifies: nothing to look up for the filter.
            return (base, attribute::Notes::default());
        }
        table.aggregate(a, base, &mut agg, self.custom_filter(self.content.attr_def(a)))
    }

    /// The game's filter function that `def` names, if it names one.
    pub(crate) fn custom_filter(&self, def: &AttrDef) -> Option<ModFilterFn> {
        match def.filter {
            ModFilter::Custom(f) => match self.bound.get(f) {
                Some(BoundFn::Filter(f)) => Some(*f),
                _ => None,
            },
            _ => None,
        }
    }

    /// Appends to `entries` the aggregation entries of attribute `a` on entity slot `index`:
    /// one per qualifying modifier of its active, not inhibited effects, in column (application)
    /// order, each magnitude multiplied by the effect's stacks. With `source`, only the
    /// modifiers of effects whose source tags (as captured when their spec was made) pass it
    /// count (F-GE-10). The one aggregation walk: attribute evaluation, cost checks and
    /// filtered captures all read through here.
    pub(crate) fn push_modifier_entries(
        &self,
        index: u32,
        a: AttrId,
        source: Option<&crate::tag::TagRequirements>,
        entries: &mut Vec<Entry>,
    ) {
        let bit = crate::content::Accel::attr_bit(a);
        let store = self.effect_store();
        let start = store.range(index).start;
        let touches = &self.content.accel.effect_attrs;
        for (k, ef) in store.effects(index).iter().enumerate() {
            // Skips inhibited effects, periodic ones and those without a modifier of `a`.
            if ef.is_inhibited() || touches.get(ef.def.index()).is_none_or(|m| m & bit == 0) {
                continue;
            }
            let Some(d) = self.content.effect_defs().get(ef.def.index()) else { continue };
            if let Some(f) = source
                && !f.passes(&self.effect_source_tags(index, k))
            {
                continue;
            }
            let mags = store.mags(start + k);
            for (mi, m) in d.modifiers.iter().enumerate() {
                if m.attr != a || !ef.mod_qualified(mi) {
                    continue;
                }
                let mag = mags[mi];
                entries.push(Entry {
                    op: m.op,
                    magnitude: attribute::stacked(m.op, mag, ef.stacks),
                    seq: ef.seq,
                    index: mi as u8,
                });
            }
        }
    }

    /// The unclamped aggregate (what GasCompat captures see).
    pub(crate) fn evaluate_raw(&self, index: u32, a: AttrId) -> Fx {
        self.evaluate_raw_notes(index, a).0
    }
}
