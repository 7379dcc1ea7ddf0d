//! The ability pipelines: activation (F-GA-04) and commit, input binding and the input buffer,
//! the per-frame run of active abilities and their tasks, custom task kinds, and runtime
//! cooldown tags. The records they change live in [`crate::ability`].

mod activate;
mod cooldown_tags;
mod ctx;
mod custom;
mod input;
mod run;

pub use ctx::AbilityCtx;
pub use custom::{CustomTaskFn, TaskCtx};
