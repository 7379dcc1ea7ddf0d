//! The attribute table: per-entity base and current values, and the rules that evaluate them.
//!
//! Each entity stores one [`AttrValue`] per attribute of the content, whether or not it holds
//! the attribute's set (an attribute outside the entity's sets stays at zero). The values are a
//! snapshot column (`attrs` of `snapshot_columns!`, the one order save, load and the checksum
//! follow), so the table borrows it rather than owning it: [`AttrTable`] reads, [`AttrTableMut`]
//! writes, both over the column, its width and the attribute definitions.
//!
//! The table owns what an attribute's values obey: which attributes an entity's set mask holds,
//! the clamp by an attribute's bounds (which read the entity's current values), the clamp of a
//! new base for attributes that clamp their base, and evaluation, the aggregation of qualifying
//! modifiers over the base ([`attribute::aggregate`]). Which modifiers qualify is the effects'
//! business: the caller gathers them into an [`AggScratch`] and the table aggregates them. Each
//! write returns what it changed, and the caller decides what that means (re-evaluation order,
//! attribute events, diagnostics, hooks). Nothing here names the game, so the table is compiled
//! once for every world.

use crate::attribute::{self, AttrDef, AttrValue, Entry, MAX_ATTR_SETS, ModFilterFn, Notes};
use crate::attribute::{AttrBound, ModContribution, ModOp};
use crate::id::AttrId;
use crate::num::Fx;

/// Whether an entity whose attribute sets are `sets` (a bit per set) holds only sets among the
/// first `declared` (the sets content declares).
pub(crate) fn sets_declared(sets: u64, declared: usize) -> bool {
    declared >= MAX_ATTR_SETS || sets >> declared == 0
}

/// The buffers one evaluation aggregates in: the gathered modifier entries, which of them count
/// under the attribute's filter, and what a custom filter is shown. Empty between uses; not part
/// of the snapshot.
#[derive(Default)]
pub(crate) struct AggScratch {
    /// The qualifying modifiers, gathered by the caller.
    pub entries: Vec<Entry>,
    /// Per entry: whether it counts under the attribute's filter.
    pub keep: Vec<bool>,
    /// The entries as a custom filter sees them.
    pub contrib: Vec<ModContribution>,
}

/// Reads the attribute column: every query is by entity slot.
#[derive(Clone, Copy)]
pub(crate) struct AttrTable<'a> {
    values: &'a [AttrValue],
    /// Values per entity (the content's attributes).
    attrs: usize,
    defs: &'a [AttrDef],
}

impl<'a> AttrTable<'a> {
    /// The table over `values` (`attrs` per entity) with the attributes' definitions.
    pub(crate) fn new(values: &'a [AttrValue], attrs: usize, defs: &'a [AttrDef]) -> Self {
        AttrTable { values, attrs, defs }
    }

    /// The index of the value of `a` of the entity in slot `index`.
    #[inline]
    pub(crate) fn slot(&self, index: u32, a: AttrId) -> usize {
        index as usize * self.attrs + a.index()
    }

    /// The base and current value of `a`.
    #[inline]
    pub(crate) fn value(&self, index: u32, a: AttrId) -> AttrValue {
        self.values[self.slot(index, a)]
    }

    /// Whether an entity whose attribute sets are `sets` holds `a` (an attribute outside the
    /// content holds nowhere).
    #[inline]
    pub(crate) fn held(&self, sets: u64, a: AttrId) -> bool {
        let Some(def) = self.defs.get(a.index()).filter(|_| a.index() < self.attrs) else {
            return false;
        };
        let set = def.set.index();
        set < MAX_ATTR_SETS && sets & (1 << set) != 0
    }

    /// `v` held within the bounds of `a`; a bound that names an attribute reads its current
    /// value on the same entity.
    pub(crate) fn clamp(&self, index: u32, a: AttrId, v: Fx) -> Fx {
        let def = &self.defs[a.index()];
        let read = |b: AttrBound| match b {
            AttrBound::Const(c) => c,
            AttrBound::Attr(o) => self.value(index, o).current,
        };
        let mut v = v;
        if let Some(lo) = def.min {
            let lo = read(lo);
            if v < lo {
                v = lo;
            }
        }
        if let Some(hi) = def.max {
            let hi = read(hi);
            if v > hi {
                v = hi;
            }
        }
        v
    }

    /// A new base value of `a`: clamped if the attribute clamps its base, else `v`.
    pub(crate) fn clamp_base(&self, index: u32, a: AttrId, v: Fx) -> Fx {
        if self.defs[a.index()].apply_to_base { self.clamp(index, a, v) } else { v }
    }

    /// Whether modifiers of duration effects can change the current value of `a` (a transient
    /// attribute's current value is its base).
    #[inline]
    pub(crate) fn takes_modifiers(&self, a: AttrId) -> bool {
        !self.defs[a.index()].transient
    }

    /// Evaluation: the entries gathered in `agg` aggregated over `base` by the policy and filter
    /// of `a` (`custom` is the game's filter when the attribute names one), unclamped, with
    /// what aggregation noticed. No entries leave `base` as it is.
    pub(crate) fn aggregate(
        &self,
        a: AttrId,
        base: Fx,
        agg: &mut AggScratch,
        custom: Option<ModFilterFn>,
    ) -> (Fx, Notes) {
        if agg.entries.is_empty() {
            return (base, Notes::default());
        }
        let AggScratch { entries, keep, contrib } = agg;
        attribute::aggregate(base, entries, keep, &self.defs[a.index()], custom, contrib)
    }
}

/// What one [`AttrTableMut::execute`] did to a base value.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Execution {
    /// The base before.
    pub old: Fx,
    /// The base after (clamped if the attribute clamps its base).
    pub new: Fx,
    /// A divide by zero was asked for: the base was kept.
    pub div_by_zero: bool,
}

/// Writes the attribute column.
pub(crate) struct AttrTableMut<'a> {
    values: &'a mut [AttrValue],
    attrs: usize,
    defs: &'a [AttrDef],
}

impl<'a> AttrTableMut<'a> {
    /// The table over `values` (`attrs` per entity) with the attributes' definitions.
    pub(crate) fn new(values: &'a mut [AttrValue], attrs: usize, defs: &'a [AttrDef]) -> Self {
        AttrTableMut { values, attrs, defs }
    }

    /// The same table, read-only.
    pub(crate) fn view(&self) -> AttrTable<'_> {
        AttrTable::new(self.values, self.attrs, self.defs)
    }

    /// Sets the base of `a` to `v` (clamped if the attribute clamps its base); the current
    /// value waits for evaluation. Returns the base before and after.
    pub(crate) fn set_base(&mut self, index: u32, a: AttrId, v: Fx) -> (Fx, Fx) {
        let view = self.view();
        let (slot, new) = (view.slot(index, a), view.clamp_base(index, a, v));
        let old = core::mem::replace(&mut self.values[slot].base, new);
        (old, new)
    }

    /// Applies one modifier of an execution to the base of `a` (then clamps it if the
    /// attribute clamps its base). A transient attribute's current value follows its base.
    pub(crate) fn execute(&mut self, index: u32, a: AttrId, op: ModOp, magnitude: Fx) -> Execution {
        let view = self.view();
        let (slot, follows) = (view.slot(index, a), !view.takes_modifiers(a));
        let old = view.value(index, a).base;
        let (raw, div_by_zero) = attribute::execute_on_base(old, op, magnitude);
        let new = view.clamp_base(index, a, raw);
        self.values[slot].base = new;
        if follows {
            self.values[slot].current = new;
        }
        Execution { old, new, div_by_zero }
    }

    /// Stores an evaluated current value of `a`; whether it changed.
    #[inline]
    pub(crate) fn set_current(&mut self, index: u32, a: AttrId, v: Fx) -> bool {
        let slot = self.view().slot(index, a);
        let changed = self.values[slot].current != v;
        self.values[slot].current = v;
        changed
    }

    /// Resets `a` to its default (`held`) or to zero (not held), base and current.
    pub(crate) fn reset(&mut self, index: u32, a: AttrId, held: bool) {
        let slot = self.view().slot(index, a);
        let d = if held { self.defs[a.index()].default } else { Fx::ZERO };
        self.values[slot] = AttrValue { base: d, current: d };
    }

    /// Every attribute of the entity in slot `index` at its default if `sets` holds it, else at
    /// zero (a new entity, before its bounds are settled).
    pub(crate) fn init(&mut self, index: u32, sets: u64) {
        for i in 0..self.attrs.min(self.defs.len()) {
            let a = AttrId(i as u16);
            let held = self.view().held(sets, a);
            self.reset(index, a, held);
        }
    }

    /// Zeroes every value of the entity in slot `index`.
    pub(crate) fn clear(&mut self, index: u32) {
        let (i, n) = (index as usize, self.attrs);
        self.values[i * n..(i + 1) * n].iter_mut().for_each(|v| *v = AttrValue::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribute::{ClampMode, ModFilter, MulPolicy};
    use crate::id::AttrSetId;
    use crate::num::int;

    /// `Health` (0..=`MaxHealth`, clamps its base), `MaxHealth` (set 0), `Speed` (set 1,
    /// at least 1, only its current value clamped), `Damage` (set 1, transient).
    fn defs() -> Vec<AttrDef> {
        let def = |name: &str, set: u16, default: i64| AttrDef {
            name: name.into(),
            set: AttrSetId(set),
            default: int(default),
            min: None,
            max: None,
            clamp_mode: ClampMode::Evaluate,
            apply_to_base: true,
            mul_policy: MulPolicy::Compound,
            filter: ModFilter::All,
            transient: false,
            clamp_dependents: vec![],
        };
        vec![
            AttrDef {
                min: Some(AttrBound::Const(int(0))),
                max: Some(AttrBound::Attr(MAX_HEALTH)),
                ..def("Health", 0, 80)
            },
            def("MaxHealth", 0, 100),
            AttrDef {
                min: Some(AttrBound::Const(int(1))),
                apply_to_base: false,
                ..def("Speed", 1, 5)
            },
            AttrDef { transient: true, ..def("Damage", 1, 0) },
        ]
    }

    const HEALTH: AttrId = AttrId(0);
    const MAX_HEALTH: AttrId = AttrId(1);
    const SPEED: AttrId = AttrId(2);
    const DAMAGE: AttrId = AttrId(3);

    struct Column {
        defs: Vec<AttrDef>,
        values: Vec<AttrValue>,
    }

    impl Column {
        fn new(entities: usize) -> Self {
            let defs = defs();
            Column { values: vec![AttrValue::default(); entities * defs.len()], defs }
        }

        fn table(&self) -> AttrTable<'_> {
            AttrTable::new(&self.values, self.defs.len(), &self.defs)
        }

        fn table_mut(&mut self) -> AttrTableMut<'_> {
            AttrTableMut::new(&mut self.values, self.defs.len(), &self.defs)
        }
    }

    fn entry(op: ModOp, magnitude: i64, seq: u32) -> Entry {
        Entry { op, magnitude: int(magnitude), seq, index: 0 }
    }

    #[test]
    fn an_entity_holds_the_attributes_of_its_sets() {
        let mut c = Column::new(2);
        c.table_mut().init(1, 0b01);
        let t = c.table();
        assert!(t.held(0b01, HEALTH) && t.held(0b01, MAX_HEALTH));
        assert!(!t.held(0b01, SPEED) && t.held(0b10, SPEED));
        assert!(!t.held(u64::MAX, AttrId(4)), "past the content");
        assert_eq!(t.value(1, HEALTH), AttrValue { base: int(80), current: int(80) });
        assert_eq!(t.value(1, SPEED), AttrValue::default(), "a set it does not hold");
        assert_eq!(t.value(0, HEALTH), AttrValue::default(), "the other entity is untouched");
        assert!(sets_declared(0b11, 2) && !sets_declared(0b100, 2));
        assert!(sets_declared(u64::MAX, MAX_ATTR_SETS));
    }

    #[test]
    fn bounds_read_current_values() {
        let mut c = Column::new(1);
        c.table_mut().init(0, 0b11);
        let t = c.table();
        assert_eq!(t.clamp(0, HEALTH, int(150)), int(100));
        assert_eq!(t.clamp(0, HEALTH, int(-3)), int(0));
        assert_eq!(t.clamp(0, HEALTH, int(42)), int(42));
        assert!(c.table_mut().set_current(0, MAX_HEALTH, int(60)));
        assert_eq!(c.table().clamp(0, HEALTH, int(150)), int(60), "the bound's current value");
        assert_eq!(c.table().clamp_base(0, SPEED, int(-7)), int(-7), "its base is not clamped");
        assert_eq!(c.table().clamp(0, SPEED, int(-7)), int(1));
    }

    #[test]
    fn a_base_change_says_what_changed_and_leaves_the_current_value() {
        let mut c = Column::new(1);
        c.table_mut().init(0, 0b11);
        assert_eq!(c.table_mut().set_base(0, HEALTH, int(500)), (int(80), int(100)));
        assert_eq!(c.table_mut().set_base(0, HEALTH, int(100)), (int(100), int(100)));
        assert_eq!(c.table().value(0, HEALTH), AttrValue { base: int(100), current: int(80) });
        assert!(c.table_mut().set_current(0, HEALTH, int(100)));
        assert!(!c.table_mut().set_current(0, HEALTH, int(100)));
    }

    #[test]
    fn executions_change_the_base() {
        let mut c = Column::new(1);
        c.table_mut().init(0, 0b11);
        let ex = c.table_mut().execute(0, HEALTH, ModOp::Add, int(-30));
        assert_eq!(ex, Execution { old: int(80), new: int(50), div_by_zero: false });
        let ex = c.table_mut().execute(0, HEALTH, ModOp::Multiply, int(3));
        assert_eq!(ex.new, int(100), "clamped to MaxHealth");
        let ex = c.table_mut().execute(0, HEALTH, ModOp::Divide, int(0));
        assert_eq!(ex, Execution { old: int(100), new: int(100), div_by_zero: true });
        assert_eq!(c.table().value(0, HEALTH).current, int(80), "evaluation comes later");
        let ex = c.table_mut().execute(0, DAMAGE, ModOp::Add, int(12));
        assert_eq!(ex.new, int(12));
        assert_eq!(c.table().value(0, DAMAGE).current, int(12), "transient: current follows");
    }

    #[test]
    fn evaluation_aggregates_the_gathered_modifiers() {
        let mut c = Column::new(1);
        c.table_mut().init(0, 0b11);
        let t = c.table();
        let mut agg = AggScratch::default();
        assert_eq!(t.aggregate(SPEED, int(5), &mut agg, None), (int(5), Notes::default()));
        agg.entries.extend([entry(ModOp::Add, 3, 1), entry(ModOp::Multiply, 2, 2)]);
        assert_eq!(t.aggregate(SPEED, int(5), &mut agg, None).0, int(16));
        agg.entries.push(entry(ModOp::Add, -40, 3));
        let raw = t.aggregate(SPEED, int(5), &mut agg, None).0;
        assert_eq!(raw, int(-64), "unclamped");
        assert_eq!(t.clamp(0, SPEED, raw), int(1));
        agg.entries.push(entry(ModOp::Divide, 0, 4));
        assert!(t.aggregate(SPEED, int(5), &mut agg, None).1.div_by_zero);
        fn none_count(_: &[ModContribution], keep: &mut [bool]) {
            keep.iter_mut().for_each(|k| *k = false);
        }
        let def = AttrDef { filter: ModFilter::Custom(crate::id::FnId(0)), ..defs().remove(2) };
        let defs = [c.defs[0].clone(), c.defs[1].clone(), def];
        let t = AttrTable::new(&c.values, c.defs.len(), &defs);
        assert_eq!(t.aggregate(SPEED, int(5), &mut agg, Some(none_count)).0, int(5));
        assert!(c.table().takes_modifiers(SPEED) && !c.table().takes_modifiers(DAMAGE));
    }

    #[test]
    fn resetting_and_clearing_an_entity_leave_the_others() {
        let mut c = Column::new(2);
        c.table_mut().init(0, 0b11);
        c.table_mut().init(1, 0b11);
        c.table_mut().reset(0, MAX_HEALTH, false);
        assert_eq!(c.table().value(0, MAX_HEALTH), AttrValue::default());
        c.table_mut().reset(0, MAX_HEALTH, true);
        assert_eq!(c.table().value(0, MAX_HEALTH).base, int(100));
        c.table_mut().clear(0);
        assert!(c.values[..4].iter().all(|v| *v == AttrValue::default()));
        assert_eq!(c.table().value(1, SPEED), AttrValue { base: int(5), current: int(5) });
    }
}
