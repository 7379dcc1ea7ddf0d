//! Numbers and time: the fixed-point [`Fx`], frames, and exact seconds → frames conversion.
//!
//! Every number inside the simulation is an [`Fx`] (`I32F32`: 32 integer bits, 32 fraction bits)
//! or an integer. Time is counted in [`Frame`]s, never in seconds. Content may be authored in
//! seconds; [`seconds_to_frames`] converts the *decimal text* exactly (`"4.15"` is 415/100), so two
//! content pipelines can never disagree by a frame the way `ceil(4.15_f64 * 60.0) == 250` does
//! (gotcha G-47 in `docs/features.md`).
//!
//! # Arithmetic rules
//!
//! `fixed`'s plain `*` and `/` only `debug_assert!` on overflow: they panic in debug builds and wrap
//! in release builds, so a debug peer and a release peer could diverge. The simulation therefore
//! never uses the operators: it uses the helpers here ([`mul`], [`div`], …) which saturate, and
//! division by zero yields a caller-chosen fallback. These are total functions: no input panics.

use crate::located::Clip;
use core::fmt;
use serde::{Deserialize, Serialize};

/// The simulation's number type: `fixed::types::I32F32`.
///
/// Range ±2.1·10⁹ with a resolution of 2⁻³². Multiplication rounds toward −∞ and division
/// truncates toward zero (the `fixed` crate's rules); always use the saturating helpers in this
/// module inside the simulation.
pub type Fx = fixed::types::I32F32;

/// A simulation frame number. Frame 0 is the first frame a world steps.
///
/// GGRS counts frames as `i32` with `-1` for "no frame"; the conversion happens only at the
/// session boundary.
pub type Frame = u32;

/// The frame value used for "never" (an infinite effect never expires).
pub const NEVER: Frame = u32::MAX;

/// The longest finite duration content may give (effect durations, `cooldown_duration`,
/// `end_after`): 2³¹ − 1 frames, about 414 days at 60 Hz, and the largest whole number a
/// SetByCaller duration can hold. A timer ends at its start frame plus its duration, a frame
/// number below [`NEVER`]; this bound keeps every timer started in the first 2³¹ frames exact
/// to the frame. Longer durations are refused at load time: use `Infinite` instead.
pub const MAX_FINITE_FRAMES: Frame = i32::MAX as Frame;

/// A tick rate in frames per second (default 60). Part of the session handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TickRate(pub u16);

impl Default for TickRate {
    fn default() -> Self {
        TickRate(60)
    }
}

/// The constant 0.
pub const ZERO: Fx = Fx::ZERO;
/// The constant 1.
pub const ONE: Fx = Fx::ONE;

/// Builds an [`Fx`] from an integer (saturating at the range ends).
#[inline]
pub fn int(v: i64) -> Fx {
    Fx::saturating_from_num(v)
}

/// Builds an [`Fx`] from a ratio `num / den` exactly rounded toward zero; `den == 0` gives 0.
#[inline]
pub fn ratio(num: i64, den: i64) -> Fx {
    div(int(num), int(den), ZERO)
}

/// Saturating addition.
#[inline]
pub fn add(a: Fx, b: Fx) -> Fx {
    a.saturating_add(b)
}

/// Saturating subtraction.
#[inline]
pub fn sub(a: Fx, b: Fx) -> Fx {
    a.saturating_sub(b)
}

/// Saturating multiplication (rounds toward −∞ like `fixed`).
#[inline]
pub fn mul(a: Fx, b: Fx) -> Fx {
    a.saturating_mul(b)
}

/// Saturating multiplication by an integer.
#[inline]
pub fn mul_int(a: Fx, b: i64) -> Fx {
    a.saturating_mul(int(b))
}

/// Division that never panics: division by zero returns `on_zero`, overflow saturates.
#[inline]
pub fn div(a: Fx, b: Fx, on_zero: Fx) -> Fx {
    if b == ZERO {
        return on_zero;
    }
    match a.checked_div(b) {
        Some(v) => v,
        // Overflow: the true quotient is beyond the range; its sign is the product of signs.
        None => {
            if (a < ZERO) == (b < ZERO) {
                Fx::MAX
            } else {
                Fx::MIN
            }
        }
    }
}

/// Saturating negation (`-MIN` becomes `MAX`).
#[inline]
pub fn neg(a: Fx) -> Fx {
    a.saturating_neg()
}

/// Clamps `v` into `[lo, hi]`; if `lo > hi` the upper bound wins (a max of 0 beats a min of 1).
#[inline]
pub fn clamp(v: Fx, lo: Fx, hi: Fx) -> Fx {
    let v = if v < lo { lo } else { v };
    if v > hi { hi } else { v }
}

/// Formats an [`Fx`] as a decimal string, exactly (every `I32F32` has a finite decimal expansion;
/// `fixed` prints the shortest string that parses back to the same value).
pub fn to_decimal(v: Fx) -> String {
    format!("{v}")
}

/// An error converting decimal text into a number or a frame count.
#[derive(Clone, PartialEq, Eq)]
pub struct DecimalError {
    /// The text that was rejected.
    pub text: String,
    /// Why it was rejected.
    pub reason: &'static str,
}

impl fmt::Display for DecimalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\" is not a valid decimal number: {}", Clip(&self.text), self.reason)
    }
}

impl std::error::Error for DecimalError {}

crate::located::readable_debug!(DecimalError);

/// Parses decimal text (`"-1.25"`, `"4"`, `"0.1"`) into an [`Fx`], rounding to the nearest
/// representable value (ties to even), exactly: no floating point is involved.
///
/// ```
/// use rollback_abilities::num::{parse_fx, Fx};
/// assert_eq!(parse_fx("1.5").unwrap(), Fx::from_num(3) / 2);
/// assert!(parse_fx("1e3").is_err());
/// ```
pub fn parse_fx(text: &str) -> Result<Fx, DecimalError> {
    let t = text.trim();
    let err = |reason| DecimalError { text: text.to_string(), reason };
    if t.is_empty() {
        return Err(err("empty"));
    }
    let body = t.strip_prefix(['-', '+']).unwrap_or(t);
    let mut parts = body.splitn(2, '.');
    let ip = parts.next().unwrap_or("");
    let fp = parts.next().unwrap_or("");
    if ip.is_empty() && fp.is_empty() {
        return Err(err("no digits"));
    }
    if !ip.bytes().all(|b| b.is_ascii_digit()) || !fp.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err("only digits, one optional sign and one optional '.' are allowed"));
    }
    t.parse::<Fx>().map_err(|_| err("out of the I32F32 range (about ±2.1e9)"))
}

/// Exact conversion of a finite `f64` that came from authored decimal text (RON numbers) into an
/// [`Fx`]: the float is printed with Rust's shortest round-trip formatting (so the author's
/// `1.1` prints as `"1.1"`) and that decimal text is parsed exactly by [`parse_fx`].
///
/// This is only used at content-load time, never inside the simulation.
pub fn fx_from_authored_f64(v: f64) -> Result<Fx, DecimalError> {
    if !v.is_finite() {
        return Err(DecimalError { text: format!("{v}"), reason: "not a finite number" });
    }
    parse_fx(&plain_decimal(v))
}

/// Prints a finite `f64` as plain decimal text (no exponent) using the shortest digits that
/// round-trip.
pub(crate) fn plain_decimal(v: f64) -> String {
    // `{:?}`/`{}` may use exponent notation for very large/small values; `{}` on f64 never uses
    // an exponent in Rust, it prints all digits. It is the shortest round-trip representation.
    let s = format!("{v}");
    if s == "-0" { "0".to_string() } else { s }
}

/// A duration written in content: an exact decimal number of seconds, converted with
/// `frames = ceil(seconds × hz)`.
///
/// Errors for negative, malformed or overflowing values.
///
/// ```
/// use rollback_abilities::num::{seconds_to_frames, TickRate};
/// let hz = TickRate(60);
/// assert_eq!(seconds_to_frames("4.15", hz).unwrap(), 249); // not 250 (G-47)
/// assert_eq!(seconds_to_frames("8.3", hz).unwrap(), 498);
/// assert_eq!(seconds_to_frames("0.1", hz).unwrap(), 6);
/// assert_eq!(seconds_to_frames("0.25", hz).unwrap(), 15);
/// ```
pub fn seconds_to_frames(text: &str, hz: TickRate) -> Result<u32, DecimalError> {
    let t = text.trim();
    let err = |reason| DecimalError { text: text.to_string(), reason };
    let body = t.strip_prefix('+').unwrap_or(t);
    if body.starts_with('-') {
        return Err(err("a duration cannot be negative"));
    }
    let mut parts = body.splitn(2, '.');
    let ip = parts.next().unwrap_or("");
    let fp = parts.next().unwrap_or("");
    if ip.is_empty() && fp.is_empty() {
        return Err(err("no digits"));
    }
    if !ip.bytes().all(|b| b.is_ascii_digit()) || !fp.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err("only digits and one optional '.' are allowed"));
    }
    let fp = fp.trim_end_matches('0');
    if fp.len() > 18 {
        return Err(err("more than 18 fractional digits"));
    }
    let den: u128 = 10u128.pow(fp.len() as u32);
    let ip_trim = ip.trim_start_matches('0');
    if ip_trim.len() > 12 {
        return Err(err("too many seconds"));
    }
    let whole: u128 = if ip_trim.is_empty() {
        0
    } else {
        ip_trim.parse().map_err(|_| err("bad integer part"))?
    };
    let frac: u128 = if fp.is_empty() { 0 } else { fp.parse().map_err(|_| err("bad fraction"))? };
    let num = whole * den + frac; // seconds × den
    let ticks = num * u128::from(hz.0);
    let frames = ticks.div_ceil(den);
    u32::try_from(frames)
        .ok()
        .filter(|f| *f != NEVER)
        .ok_or_else(|| err("the duration does not fit in a u32 frame count"))
}

/// [`seconds_to_frames`] for a number authored as a RON float (see [`fx_from_authored_f64`]).
pub fn authored_seconds_to_frames(v: f64, hz: TickRate) -> Result<u32, DecimalError> {
    if !v.is_finite() {
        return Err(DecimalError { text: format!("{v}"), reason: "not a finite number" });
    }
    seconds_to_frames(&plain_decimal(v), hz)
}

/// A frozen curve.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CurveDef {
    /// The curve's name.
    pub name: String,
    /// Interpolation.
    pub interp: Interp,
    /// `(level, value)` points, strictly increasing levels, never empty.
    pub points: Vec<(u16, Fx)>,
}

impl CurveDef {
    /// The value at `level`: exact points, interpolated between points, the first value below the
    /// first point and the last value beyond the last point.
    pub fn eval(&self, level: u16) -> Fx {
        let Some(first) = self.points.first() else { return Fx::ZERO };
        if level <= first.0 {
            return first.1;
        }
        for w in self.points.windows(2) {
            let (l0, v0) = w[0];
            let (l1, v1) = w[1];
            if level == l1 {
                return v1;
            }
            if level < l1 {
                return match self.interp {
                    Interp::Step => v0,
                    Interp::Linear => {
                        let t = ratio(i64::from(level - l0), i64::from(l1 - l0));
                        add(v0, mul(sub(v1, v0), t))
                    }
                };
            }
        }
        self.points.last().map(|p| p.1).unwrap_or(Fx::ZERO)
    }
}

/// How a curve interpolates between its points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Interp {
    /// Straight lines between points.
    #[default]
    Linear,
    /// The value of the nearest point at or below the level.
    Step,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_table_at_60hz() {
        let hz = TickRate(60);
        for (s, f) in [
            ("0.1", 6),
            ("0.25", 15),
            ("0.5", 30),
            ("2", 120),
            ("3", 180),
            ("4", 240),
            ("4.15", 249),
            ("5", 300),
            ("8.3", 498),
            ("0", 0),
            ("0.001", 1),
            ("00010.500", 630),
        ] {
            assert_eq!(seconds_to_frames(s, hz).unwrap(), f, "{s}");
        }
    }

    #[test]
    fn authored_floats_convert_like_their_text() {
        let hz = TickRate(60);
        // The f64 product 4.15 * 60 is 249.00000000000003; the exact path gives 249.
        assert!((4.15_f64 * 60.0).ceil() == 250.0);
        assert_eq!(authored_seconds_to_frames(4.15, hz).unwrap(), 249);
        assert_eq!(authored_seconds_to_frames(8.3, hz).unwrap(), 498);
        assert_eq!(fx_from_authored_f64(1.1).unwrap(), parse_fx("1.1").unwrap());
        assert_eq!(fx_from_authored_f64(-4.0).unwrap(), int(-4));
    }

    #[test]
    fn bad_seconds_are_errors() {
        let hz = TickRate(60);
        for s in ["", "-1", "1e3", "abc", "1.2.3", ".", "99999999999999", "1.0000000000000000001"] {
            assert!(seconds_to_frames(s, hz).is_err(), "{s}");
        }
        assert!(authored_seconds_to_frames(f64::NAN, hz).is_err());
    }

    #[test]
    fn arithmetic_is_total_at_the_edges() {
        assert_eq!(mul(Fx::MAX, int(2)), Fx::MAX);
        assert_eq!(mul(Fx::MIN, int(2)), Fx::MIN);
        assert_eq!(add(Fx::MAX, ONE), Fx::MAX);
        assert_eq!(sub(Fx::MIN, ONE), Fx::MIN);
        assert_eq!(div(ONE, ZERO, int(7)), int(7));
        assert_eq!(div(Fx::MAX, Fx::DELTA, ZERO), Fx::MAX);
        assert_eq!(div(Fx::MIN, Fx::DELTA, ZERO), Fx::MIN);
        assert_eq!(div(Fx::MIN, -Fx::DELTA, ZERO), Fx::MAX);
        assert_eq!(neg(Fx::MIN), Fx::MAX);
        assert_eq!(clamp(int(5), int(0), int(3)), int(3));
        assert_eq!(clamp(int(-5), int(0), int(3)), int(0));
    }

    #[test]
    fn decimal_parsing_is_exact() {
        assert_eq!(parse_fx("0.5").unwrap(), ONE / 2);
        assert_eq!(parse_fx("-4").unwrap(), int(-4));
        assert!(parse_fx("1.1").unwrap() > ONE);
        assert!(parse_fx("3000000000").is_err());
        assert!(parse_fx("nan").is_err());
        assert_eq!(to_decimal(parse_fx("0.25").unwrap()), "0.25");
    }
}
