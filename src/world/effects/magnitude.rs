//! Magnitude evaluation shared by modifiers, durations, periods and scoped modifiers
//! (F-GE-10, F-GA-08), attribute captures with tag filters (F-GE-10), and the scoped
//! modifiers and transient aggregators of executions (F-GE-14).
//!
//! Everything here is read-only on the snapshot (except the diagnostics it reports) and
//! allocates nothing: aggregation reuses the world's scratch lists, and an execution's scoped
//! modifiers fit in fixed arrays ([`MAX_SCOPED_MODIFIERS`]).

use crate::attribute::ClampMode;
use crate::attribute::{self, Entry};
use crate::attribute::{AttrDef, ModFilter};
use crate::effect::EffectSpec;
use crate::effect::{
    AttrTagFilterDef, EffectDef, MAX_SCOPED_MODIFIERS, MagnitudeDef, ScopedTarget, round_frames,
};
use crate::effect::{CaptureSide, CaptureWhich};
use crate::id::{AttrId, Entity, TagId};
use crate::num::{self, Frame, Fx, MAX_FINITE_FRAMES};
use crate::tag::TagSet;
use crate::world::attribute_table::AggScratch;
use crate::world::hooks::{BoundCapture, BoundFn, CalcInput};
use crate::world::output::Diagnostic;
use crate::world::{Game, World};

/// The scoped modifiers of one execution run, evaluated: what its captures and transient
/// aggregators add (fixed size, so a run allocates nothing).
pub(crate) struct ScopedValues {
    /// `(target, entry, qualifies)` per scoped modifier of the execution.
    mods: [(ScopedTarget, Entry, bool); MAX_SCOPED_MODIFIERS],
    n: usize,
    /// Transient aggregators: `(tag, value)`, each tag once, in first-mention order.
    pub transients: [(TagId, Fx); MAX_SCOPED_MODIFIERS],
    /// Used entries of `transients`.
    pub n_transients: usize,
}

/// Where a magnitude's source snapshot captures start in a spec: computed only for the
/// magnitudes that have some (the common magnitudes never pay for it).
#[derive(Clone, Copy)]
pub(crate) enum MagSlot {
    /// Modifier `i`'s.
    Modifier(usize),
    /// A known slot.
    At(usize),
}

impl<G: Game> World<G> {
    fn mag_slot(&self, def: &EffectDef, slot: MagSlot) -> usize {
        match slot {
            MagSlot::Modifier(i) => self.source_slot(def, i),
            MagSlot::At(s) => s,
        }
    }

    /// A `Scalable` magnitude at `level`: the coefficient, times its curve's value if it has one.
    #[inline]
    pub(crate) fn scalable_magnitude(
        &self,
        coef: Fx,
        curve: Option<crate::id::CurveId>,
        level: u16,
    ) -> Fx {
        match curve.and_then(|c| self.content.curve_defs().get(c.index())) {
            Some(c) => num::mul(coef, c.eval(level)),
            None => coef,
        }
    }

    /// Evaluates a magnitude for an application, a periodic execution or an execution's
    /// scoped modifier. `slot` locates its first source snapshot capture in the spec.
    pub(crate) fn eval_magnitude(
        &self,
        def: &EffectDef,
        m: &MagnitudeDef,
        slot: MagSlot,
        spec: &EffectSpec,
        target: Entity,
        stacks: u16,
    ) -> Fx {
        match *m {
            MagnitudeDef::Scalable { coef, curve } => {
                self.scalable_magnitude(coef, curve, spec.level)
            }
            MagnitudeDef::Attribute { attr, side, which, coef, pre, post, snapshot, filter } => {
                let filter = def.tag_filter(filter);
                let v = match (side, snapshot) {
                    (CaptureSide::Source, true) => spec
                        .source_captures
                        .get(self.mag_slot(def, slot))
                        .copied()
                        .unwrap_or(Fx::ZERO),
                    (CaptureSide::Source, false) => {
                        self.read_capture_filtered(spec.context.instigator, attr, which, filter)
                    }
                    (CaptureSide::Target, _) => {
                        self.read_capture_filtered(target, attr, which, filter)
                    }
                };
                num::add(num::mul(coef, num::add(v, pre)), post)
            }
            MagnitudeDef::Custom { calc, coef, pre, post } => {
                let Some(BoundFn::Calc { f, captures }) = self.bound.get(calc) else {
                    return Fx::ZERO;
                };
                let mut slot = self.mag_slot(def, slot);
                let mut vals = [Fx::ZERO; 16];
                for (ci, c) in captures.iter().enumerate().take(vals.len()) {
                    vals[ci] = match (c.side, c.snapshot) {
                        (CaptureSide::Source, true) => {
                            let v = spec.source_captures.get(slot).copied().unwrap_or(Fx::ZERO);
                            slot += 1;
                            v
                        }
                        (CaptureSide::Source, false) => {
                            self.read_capture(spec.context.instigator, c.attr, c.which)
                        }
                        (CaptureSide::Target, _) => self.read_capture(target, c.attr, c.which),
                    };
                }
                let target_tags = self.tags(target);
                let input = CalcInput {
                    content: &self.content,
                    captures: &vals[..captures.len().min(vals.len())],
                    level: spec.level,
                    stacks,
                    spec,
                    source_tags: &spec.source_tags,
                    target_tags: &target_tags,
                    set_by_caller_extra: self.spec_extra_sbc(spec),
                };
                num::add(num::mul(coef, num::add(f(&input), pre)), post)
            }
            MagnitudeDef::SetByCaller(t) => self.set_by_caller(spec, t).unwrap_or(Fx::ZERO),
        }
    }

    /// The first source snapshot capture of the `k`-th of [`EffectDef::extra_magnitudes`]:
    /// after the modifiers' and the executions' (so their slots are what they always were).
    pub(crate) fn extra_source_slot(&self, def: &EffectDef, k: usize) -> usize {
        let mut slot = self.exec_source_slot(def);
        for x in &def.executions {
            if let Some(BoundFn::Exec { captures, .. }) = self.bound.get(*x) {
                slot += captures.iter().filter(|c| c.snapshot).count();
            }
        }
        slot + def.extra_magnitudes().take(k).map(|m| self.source_slots_of(m)).sum::<usize>()
    }

    /// A duration (`k` 0) or period (`k` 1) magnitude in whole frames (F-GA-08): evaluated now,
    /// rounded to the nearest frame (halves up) and clamped to `1..=MAX_FINITE_FRAMES`; a clamp
    /// is reported as [`Diagnostic::TimeClamped`].
    pub(crate) fn time_frames(
        &mut self,
        def: &EffectDef,
        m: &MagnitudeDef,
        k: usize,
        spec: &EffectSpec,
        target: Entity,
    ) -> Frame {
        // The duration's magnitude is the first extra one; the period's follows it.
        let index = match (k, def.duration) {
            (1, crate::effect::DurationDef::Magnitude(_)) => 1,
            _ => 0,
        };
        let slot = self.extra_source_slot(def, index);
        let value = self.eval_magnitude(def, m, MagSlot::At(slot), spec, target, 1);
        let frames = round_frames(value);
        let clamped = frames.clamp(1, i64::from(MAX_FINITE_FRAMES));
        if clamped != frames {
            self.out.diagnostics.push(Diagnostic::TimeClamped {
                target,
                def: spec.def,
                period: k == 1,
                value,
            });
        }
        clamped as Frame
    }

    /// The period of the active effect in column `slot` (the frames computed at its
    /// application when the definition's period is a magnitude).
    pub(crate) fn period_of(&self, slot: usize, def: &EffectDef) -> Frame {
        if def.period_magnitude.is_none() {
            return def.period;
        }
        let v = self.effect_store().mag(slot, def.modifiers.len()).unwrap_or(Fx::ONE);
        v.to_num::<i64>().clamp(1, i64::from(MAX_FINITE_FRAMES)) as Frame
    }

    /// [`World::read_capture`] with an attribute-based magnitude's tag filters (F-GE-10): a
    /// current (or bonus) value aggregated from only the modifiers that pass them. The base
    /// value has no modifiers to filter.
    pub(crate) fn read_capture_filtered(
        &self,
        e: Entity,
        a: AttrId,
        which: CaptureWhich,
        filter: Option<&AttrTagFilterDef>,
    ) -> Fx {
        let Some(filter) = filter else { return self.read_capture(e, a, which) };
        let Some(v) = self.attr_value(e, a) else { return Fx::ZERO };
        match which {
            CaptureWhich::Base => v.base,
            CaptureWhich::Current => self.evaluate_selected(e.index, a, Some(filter), &[]),
            CaptureWhich::Bonus => {
                num::sub(self.evaluate_selected(e.index, a, Some(filter), &[]), v.base)
            }
        }
    }

    /// The source tags an active effect was made with: those captured in its kept spec, else
    /// (its spec was not kept) its instigator's tags now.
    pub(crate) fn effect_source_tags(&self, index: u32, k: usize) -> TagSet {
        let store = self.effect_store();
        let ef = *store.effect(store.range(index).start + k);
        self.source_tags_of(self.entity_of(index), &ef)
    }

    /// [`World::effect_source_tags`] of `ef`, an active effect of `target`.
    pub(crate) fn source_tags_of(
        &self,
        target: Entity,
        ef: &crate::effect::ActiveEffect,
    ) -> TagSet {
        match self.effect_store().kept_spec(ef) {
            Some((_, kept)) => kept.source_tags,
            None => self.tags(self.origin_of(target, ef).instigator),
        }
    }

    /// An attribute's value read the way captures read it (clamped unless its clamp mode is
    /// `GasCompat`), aggregated from the base, the active modifiers that pass `filter` and the
    /// `scoped` entries.
    fn evaluate_selected(
        &self,
        index: u32,
        a: AttrId,
        filter: Option<&AttrTagFilterDef>,
        scoped: &[Entry],
    ) -> Fx {
        let def = self.content.attr_def(a);
        let table = self.attr_table();
        let base = table.value(index, a).base;
        let raw = {
            let mut agg = self.scratch.agg.borrow_mut();
            agg.entries.clear();
            let bit = crate::content::Accel::attr_bit(a);
            let target_ok =
                filter.is_none_or(|f| f.target.passes_words(self.tag_view_index(index)));
            if target_ok
                && table.takes_modifiers(a)
                && self.content.accel.aggregated_attrs & bit != 0
            {
                let source = filter.map(|f| &f.source).filter(|s| !s.is_empty());
                self.push_modifier_entries(index, a, source, &mut agg.entries);
            }
            agg.entries.extend_from_slice(scoped);
            table.aggregate(a, base, &mut agg, self.custom_filter(def)).0
        };
        if def.clamp_mode == ClampMode::GasCompat {
            return raw;
        }
        let mut v = table.clamp(index, a, raw);
        if let Some(pre) =
            self.content.attr_set_defs().get(def.set.index()).and_then(|s| s.pre_change)
            && let Some(BoundFn::Pre(f)) = self.bound.get(pre)
        {
            f(self.entity_of(index), a, &mut v);
        }
        v
    }

    /// Evaluates the scoped modifiers of execution `xi` of `def` (F-GE-14): each magnitude now
    /// (with the prepared spec), whether its tag requirements pass, and the transient
    /// aggregators they name.
    pub(crate) fn scoped_values(
        &self,
        def: &EffectDef,
        xi: usize,
        spec: &EffectSpec,
        target: Entity,
        target_tags: &TagSet,
        stacks: u16,
    ) -> ScopedValues {
        let empty =
            Entry { op: crate::attribute::ModOp::Add, magnitude: Fx::ZERO, seq: 0, index: 0 };
        let mut out = ScopedValues {
            mods: [(ScopedTarget::Transient(TagId(0)), empty, false); MAX_SCOPED_MODIFIERS],
            n: 0,
            transients: [(TagId(0), Fx::ZERO); MAX_SCOPED_MODIFIERS],
            n_transients: 0,
        };
        // Scoped modifiers keep their source snapshot captures after the duration's and the
        // period's.
        let first = usize::from(matches!(def.duration, crate::effect::DurationDef::Magnitude(_)))
            + usize::from(def.period_magnitude.is_some());
        let mut slot = self.extra_source_slot(def, first);
        for (j, s) in def.scoped_modifiers.iter().enumerate() {
            let slots = self.source_slots_of(&s.magnitude);
            if usize::from(s.execution) == xi && out.n < MAX_SCOPED_MODIFIERS {
                let magnitude =
                    self.eval_magnitude(def, &s.magnitude, MagSlot::At(slot), spec, target, stacks);
                let qualifies =
                    s.source_tags.passes(&spec.source_tags) && s.target_tags.passes(target_tags);
                // Scoped modifiers count as applied after every active one (an Override among
                // them wins), in definition order.
                let entry = Entry { op: s.op, magnitude, seq: u32::MAX, index: j as u8 };
                out.mods[out.n] = (s.target, entry, qualifies);
                out.n += 1;
                if let ScopedTarget::Transient(t) = s.target
                    && !out.transients[..out.n_transients].iter().any(|(u, _)| *u == t)
                {
                    out.transients[out.n_transients] = (t, Fx::ZERO);
                    out.n_transients += 1;
                }
            }
            slot += slots;
        }
        // A transient aggregator starts at 0 and aggregates like an attribute of the content's
        // default multiplication policy (no filter, no clamp).
        let policy = self.content.settings().default_mul_policy;
        let scratch_def = AttrDef {
            name: String::new(),
            set: crate::id::AttrSetId(0),
            default: Fx::ZERO,
            min: None,
            max: None,
            clamp_mode: ClampMode::Evaluate,
            apply_to_base: false,
            mul_policy: policy,
            filter: ModFilter::All,
            transient: false,
            clamp_dependents: Vec::new(),
        };
        for ti in 0..out.n_transients {
            let tag = out.transients[ti].0;
            let mut entries = [empty; MAX_SCOPED_MODIFIERS];
            let mut n = 0;
            for (t, e, q) in &out.mods[..out.n] {
                if *q && *t == ScopedTarget::Transient(tag) {
                    entries[n] = *e;
                    n += 1;
                }
            }
            let mut agg = self.scratch.agg.borrow_mut();
            let AggScratch { keep, contrib, .. } = &mut *agg;
            out.transients[ti].1 = if n == 0 {
                Fx::ZERO
            } else {
                attribute::aggregate(Fx::ZERO, &entries[..n], keep, &scratch_def, None, contrib).0
            };
        }
        out
    }

    /// A declared capture of an execution as its scoped modifiers change it (F-GE-14): the
    /// qualifying scoped modifiers of the capture's attribute and side join the attribute's
    /// aggregation for this read only (a snapshot capture aggregates them on the captured
    /// value). Base-value captures are never changed, as in GAS.
    pub(crate) fn scoped_capture(
        &self,
        scoped: &ScopedValues,
        c: &BoundCapture,
        who: Entity,
        captured: Fx,
    ) -> Fx {
        if c.which == CaptureWhich::Base {
            return captured;
        }
        let mut entries =
            [Entry { op: crate::attribute::ModOp::Add, magnitude: Fx::ZERO, seq: 0, index: 0 };
                MAX_SCOPED_MODIFIERS];
        let mut n = 0;
        for (t, e, q) in &scoped.mods[..scoped.n] {
            if *q && *t == (ScopedTarget::Attribute { attr: c.attr, side: c.side }) {
                entries[n] = *e;
                n += 1;
            }
        }
        if n == 0 {
            return captured;
        }
        if c.snapshot {
            let custom = self.custom_filter(self.content.attr_def(c.attr));
            let mut agg = self.scratch.agg.borrow_mut();
            agg.entries.clear();
            agg.entries.extend_from_slice(&entries[..n]);
            return self.attr_table().aggregate(c.attr, captured, &mut agg, custom).0;
        }
        let Some(v) = self.attr_value(who, c.attr) else { return captured };
        let current = self.evaluate_selected(who.index, c.attr, None, &entries[..n]);
        match c.which {
            CaptureWhich::Bonus => num::sub(current, v.base),
            _ => current,
        }
    }
}
