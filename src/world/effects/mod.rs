//! The effect pipelines: building specs and the values they carry (`spec`), applying a spec
//! (`apply`: requirements, immunity, stacking), executing one (`execute`: instant, inline and
//! periodic changes of base values), phases P1 and P2 (`periodic`: periodic ticks and expiry),
//! and magnitude evaluation (`magnitude`: captures, curves, custom calculations). The records
//! they change live in [`crate::effect`].

mod apply;
mod execute;
pub(crate) mod magnitude;
mod periodic;
mod spec;
