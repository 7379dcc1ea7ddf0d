//! Attributes: base and current values, modifier aggregation and clamps.
//!
//! An attribute's current value is always `evaluate(base, qualifying modifiers)`:
//!
//! ```text
//! if an Override qualifies:  current = the most recently applied override
//! else:                      current = (base + Σadd) × mul / div
//! ```
//!
//! where `mul` and `div` combine their channel's magnitudes per the attribute's [`MulPolicy`]:
//! `GasCompat` is GAS's bias sum `1 + Σ(mᵢ − 1)` (two ×1.5 buffs give ×2), `Compound` is the
//! product `Π mᵢ` (×2.25). A stacked modifier's magnitude is `bias + (m − bias) × stacks`
//! (bias 0 for Add, 1 for Multiply and Divide). Clamps apply to the result. Every operation
//! saturates; a divide channel that sums to zero is treated as 1 and reported.

/// The most attribute sets content may declare: an entity's sets are one `u64` bit mask.
pub(crate) const MAX_ATTR_SETS: usize = 64;

mod def;
pub use def::{
    AttrBound, AttrDef, AttrLevelRow, AttrSetDef, ClampMode, ModFilter, ModOp, MulPolicy,
};

use crate::num::{self, Fx, ONE, ZERO};
use bytemuck::{Pod, Zeroable};

/// An attribute's base and current value.
///
/// # Attributes
///
/// Attributes: base and current values, modifier aggregation and clamps.
///
/// An attribute's current value is always `evaluate(base, qualifying modifiers)`:
///
/// ```text
/// if an Override qualifies:  current = the most recently applied override
/// else:                      current = (base + Σadd) × mul / div
/// ```
///
/// where `mul` and `div` combine their channel's magnitudes per the attribute's [`MulPolicy`]:
/// `GasCompat` is GAS's bias sum `1 + Σ(mᵢ − 1)` (two ×1.5 buffs give ×2), `Compound` is the
/// product `Π mᵢ` (×2.25). A stacked modifier's magnitude is `bias + (m − bias) × stacks`
/// (bias 0 for Add, 1 for Multiply and Divide). Clamps apply to the result. Every operation
/// saturates; a divide channel that sums to zero is treated as 1 and reported.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct AttrValue {
    /// The permanent value (changed by instant and periodic executions and `set_base`).
    pub base: Fx,
    /// `base` with every qualifying modifier of active effects applied (and clamped).
    pub current: Fx,
}

/// One modifier contribution seen by a custom filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModContribution {
    /// The operation.
    pub op: ModOp,
    /// The magnitude with stacks applied.
    pub magnitude: Fx,
    /// The contribution relative to the channel bias (`magnitude − bias`).
    pub contribution: Fx,
    /// The effect's application sequence number.
    pub seq: u32,
}

/// A custom qualification filter: clears `keep[i]` for contributions that must not count.
pub type ModFilterFn = fn(&[ModContribution], &mut [bool]);

/// One qualifying modifier contribution on an attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub op: ModOp,
    /// The magnitude with stacks applied.
    pub magnitude: Fx,
    /// The application sequence number of the effect, then the modifier index, for ordering.
    pub seq: u32,
    pub index: u8,
}

/// The bias of a channel: 0 for Add, 1 for Multiply/Divide.
#[inline]
pub(crate) fn bias(op: ModOp) -> Fx {
    match op {
        ModOp::Multiply | ModOp::Divide => ONE,
        ModOp::Add | ModOp::Override => ZERO,
    }
}

/// `bias + (m − bias) × stacks` (Override ignores stacks).
#[inline]
pub(crate) fn stacked(op: ModOp, m: Fx, stacks: u16) -> Fx {
    if op == ModOp::Override || stacks <= 1 {
        return m;
    }
    let b = bias(op);
    num::add(b, num::mul_int(num::sub(m, b), i64::from(stacks)))
}

/// What aggregation noticed besides the value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Notes {
    pub lint_mul: bool,
    pub lint_div: bool,
    pub div_by_zero: bool,
}

/// Whether a GasCompat channel breaks the documented validity rule: allowed are "at most one
/// value below 1 plus any number in [1, 2)" or "exactly one value, at least 2".
pub(crate) fn gas_compat_lint(values: impl Iterator<Item = Fx> + Clone) -> bool {
    let n = values.clone().count();
    let below_one = values.clone().filter(|m| *m < ONE).count();
    let two_or_more = values.filter(|m| *m >= num::int(2)).count();
    let ok = (two_or_more == 0 && below_one <= 1) || (two_or_more == 1 && n == 1);
    !ok
}

fn combine(values: impl Iterator<Item = Fx>, policy: MulPolicy) -> Fx {
    match policy {
        MulPolicy::GasCompat => values.fold(ONE, |s, m| num::add(s, num::sub(m, ONE))),
        MulPolicy::Compound => values.fold(ONE, num::mul),
    }
}

/// Marks which entries count under the attribute's filter.
fn apply_filter(
    entries: &[Entry],
    keep: &mut [bool],
    filter: ModFilter,
    custom: Option<ModFilterFn>,
    scratch: &mut Vec<ModContribution>,
) {
    for k in keep.iter_mut() {
        *k = true;
    }
    match filter {
        ModFilter::All => {}
        ModFilter::MostNegativeAllPositive | ModFilter::GreatestOnly => {
            for op in [ModOp::Add, ModOp::Multiply, ModOp::Divide] {
                let b = bias(op);
                // The chosen entry per channel; ties keep the earliest application.
                let mut chosen: Option<(usize, Fx)> = None;
                for (i, e) in entries.iter().enumerate().filter(|(_, e)| e.op == op) {
                    let c = num::sub(e.magnitude, b);
                    match filter {
                        ModFilter::MostNegativeAllPositive => {
                            if c < ZERO && chosen.is_none_or(|(_, best)| c < best) {
                                chosen = Some((i, c));
                            }
                        }
                        _ => {
                            let a = c.saturating_abs();
                            if chosen.is_none_or(|(_, best)| a > best) {
                                chosen = Some((i, a));
                            }
                        }
                    }
                }
                for (i, e) in entries.iter().enumerate().filter(|(_, e)| e.op == op) {
                    let c = num::sub(e.magnitude, b);
                    let counts = match filter {
                        ModFilter::MostNegativeAllPositive => {
                            c >= ZERO || chosen.map(|x| x.0) == Some(i)
                        }
                        _ => chosen.map(|x| x.0) == Some(i),
                    };
                    keep[i] = counts;
                }
            }
        }
        ModFilter::Custom(_) => {
            if let Some(f) = custom {
                scratch.clear();
                scratch.extend(entries.iter().map(|e| ModContribution {
                    op: e.op,
                    magnitude: e.magnitude,
                    contribution: num::sub(e.magnitude, bias(e.op)),
                    seq: e.seq,
                }));
                f(scratch, keep);
            }
        }
    }
}

/// Aggregates qualifying entries on a base value, unclamped.
pub(crate) fn aggregate(
    base: Fx,
    entries: &[Entry],
    keep: &mut Vec<bool>,
    def: &AttrDef,
    custom_filter: Option<ModFilterFn>,
    scratch: &mut Vec<ModContribution>,
) -> (Fx, Notes) {
    let mut notes = Notes::default();
    // The most recent override wins outright.
    if let Some(o) =
        entries.iter().filter(|e| e.op == ModOp::Override).max_by_key(|e| (e.seq, e.index))
    {
        return (o.magnitude, notes);
    }
    keep.clear();
    keep.resize(entries.len(), true);
    apply_filter(entries, keep, def.filter, custom_filter, scratch);
    let kept = |op: ModOp| {
        entries
            .iter()
            .zip(keep.iter())
            .filter(move |(e, k)| **k && e.op == op)
            .map(|(e, _)| e.magnitude)
    };
    let add = kept(ModOp::Add).fold(ZERO, num::add);
    let mul = combine(kept(ModOp::Multiply), def.mul_policy);
    let mut div = combine(kept(ModOp::Divide), def.mul_policy);
    if def.mul_policy == MulPolicy::GasCompat {
        notes.lint_mul = gas_compat_lint(kept(ModOp::Multiply));
        notes.lint_div = gas_compat_lint(kept(ModOp::Divide));
    }
    if div == ZERO {
        notes.div_by_zero = true;
        div = ONE;
    }
    let v = num::div(num::mul(num::add(base, add), mul), div, ZERO);
    (v, notes)
}

/// Applies one modifier to a base value (instant and periodic executions).
pub(crate) fn execute_on_base(base: Fx, op: ModOp, magnitude: Fx) -> (Fx, bool) {
    match op {
        ModOp::Add => (num::add(base, magnitude), false),
        ModOp::Multiply => (num::mul(base, magnitude), false),
        ModOp::Divide => {
            if magnitude == ZERO {
                (base, true)
            } else {
                (num::div(base, magnitude, base), false)
            }
        }
        ModOp::Override => (magnitude, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribute::ClampMode;
    use crate::id::AttrSetId;
    use crate::num::{int, parse_fx};

    fn def(policy: MulPolicy, filter: ModFilter) -> AttrDef {
        AttrDef {
            name: "X".into(),
            set: AttrSetId(0),
            default: ZERO,
            min: None,
            max: None,
            clamp_mode: ClampMode::Evaluate,
            apply_to_base: true,
            mul_policy: policy,
            filter,
            transient: false,
            clamp_dependents: vec![],
        }
    }

    fn run(base: i64, mods: &[(ModOp, &str)], policy: MulPolicy) -> (Fx, Notes) {
        let entries: Vec<Entry> = mods
            .iter()
            .enumerate()
            .map(|(i, (op, m))| Entry {
                op: *op,
                magnitude: parse_fx(m).unwrap(),
                seq: i as u32 + 1,
                index: 0,
            })
            .collect();
        aggregate(
            int(base),
            &entries,
            &mut Vec::new(),
            &def(policy, ModFilter::All),
            None,
            &mut Vec::new(),
        )
    }

    fn close(a: Fx, b: Fx) -> bool {
        (a - b).abs() <= Fx::from_bits(1 << 12) // 2^-20
    }

    #[test]
    fn two_ten_percent_buffs_as_02() {
        use ModOp::Multiply as M;
        assert!(close(run(500, &[(M, "1.1")], MulPolicy::GasCompat).0, int(550)));
        assert!(close(run(500, &[(M, "1.1")], MulPolicy::Compound).0, int(550)));
        let (g, n) = run(500, &[(M, "1.1"), (M, "1.1")], MulPolicy::GasCompat);
        assert!(close(g, int(600)));
        assert!(!n.lint_mul);
        assert!(close(run(500, &[(M, "1.1"), (M, "1.1")], MulPolicy::Compound).0, int(605)));
    }

    #[test]
    fn multiplier_table_as_03() {
        use ModOp::{Divide as D, Multiply as M};
        // (mods, GasCompat, Compound, lint)
        type Row<'a> = (&'a [(ModOp, &'a str)], &'a str, &'a str, bool);
        let rows: &[Row] = &[
            (&[(M, "0.5")], "50", "50", false),
            (&[(M, "0.5"), (M, "0.5")], "0", "25", true),
            (&[(M, "1.1"), (M, "0.5")], "60", "55", false),
            (&[(M, "5"), (M, "5")], "900", "2500", true),
            (&[(M, "1.5"), (M, "1.5")], "200", "225", false),
            (&[(D, "2"), (D, "2")], "33.3333333333", "25", true),
        ];
        for (mods, gas, compound, lint) in rows {
            let (g, n) = run(100, mods, MulPolicy::GasCompat);
            assert!(close(g, parse_fx(gas).unwrap()), "{mods:?}: gas {g}");
            assert_eq!(n.lint_mul || n.lint_div, *lint, "{mods:?}");
            let (c, n2) = run(100, mods, MulPolicy::Compound);
            assert!(close(c, parse_fx(compound).unwrap()), "{mods:?}: compound {c}");
            assert!(!n2.lint_mul && !n2.lint_div);
        }
    }

    #[test]
    fn override_latest_wins_and_zero_divisor() {
        use ModOp::*;
        let (v, _) =
            run(10, &[(Override, "3"), (Add, "100"), (Override, "7")], MulPolicy::Compound);
        assert_eq!(v, int(7));
        let (v, n) = run(10, &[(Divide, "1"), (Divide, "0")], MulPolicy::GasCompat);
        // 1 + (1−1) + (0−1) = 0 → treated as 1.
        assert!(n.div_by_zero);
        assert_eq!(v, int(10));
    }

    #[test]
    fn stacked_magnitudes() {
        assert_eq!(stacked(ModOp::Add, int(-4), 3), int(-12));
        let m = parse_fx("1.1").unwrap();
        assert_eq!(stacked(ModOp::Multiply, m, 3), ONE + (m - ONE) * 3);
        assert_eq!(stacked(ModOp::Override, int(5), 9), int(5));
        assert_eq!(stacked(ModOp::Add, Fx::MAX, 2), Fx::MAX);
    }

    #[test]
    fn qualification_filters() {
        use ModOp::*;
        let entries = |v: &[(ModOp, i64)]| -> Vec<Entry> {
            v.iter()
                .enumerate()
                .map(|(i, (op, m))| Entry { op: *op, magnitude: int(*m), seq: i as u32, index: 0 })
                .collect()
        };
        // Slows of -30 and -50, buff +20: MostNegativeAllPositive keeps -50 and +20.
        let e = entries(&[(Add, -30), (Add, -50), (Add, 20)]);
        let d = def(MulPolicy::Compound, ModFilter::MostNegativeAllPositive);
        assert_eq!(aggregate(int(100), &e, &mut Vec::new(), &d, None, &mut Vec::new()).0, int(70));
        let d = def(MulPolicy::Compound, ModFilter::GreatestOnly);
        assert_eq!(aggregate(int(100), &e, &mut Vec::new(), &d, None, &mut Vec::new()).0, int(50));
        fn only_first(c: &[ModContribution], keep: &mut [bool]) {
            for (i, k) in keep.iter_mut().enumerate() {
                *k = i == 0 && !c.is_empty();
            }
        }
        let d = def(MulPolicy::Compound, ModFilter::Custom(crate::id::FnId(0)));
        assert_eq!(
            aggregate(int(100), &e, &mut Vec::new(), &d, Some(only_first), &mut Vec::new()).0,
            int(70)
        );
    }

    #[test]
    fn base_execution() {
        assert_eq!(execute_on_base(int(10), ModOp::Add, int(-4)), (int(6), false));
        assert_eq!(execute_on_base(int(10), ModOp::Multiply, int(3)), (int(30), false));
        assert_eq!(execute_on_base(int(10), ModOp::Divide, int(0)), (int(10), true));
        assert_eq!(execute_on_base(int(10), ModOp::Override, int(1)), (int(1), false));
        assert_eq!(execute_on_base(Fx::MAX, ModOp::Multiply, int(2)), (Fx::MAX, false));
    }
}
