//! The effect pipelines: applying a spec (requirements, immunity, stacking, instant
//! executions), periodic executions and expiry, and magnitude evaluation (captures, curves,
//! custom calculations). The records they change live in [`crate::effect`].

mod apply;
pub(crate) mod magnitude;
mod periodic;
