//! Rollback drivers and sessions.
//!
//! - [`RollbackDriver`]: an in-crate driver that, every frame, rolls back a seeded random depth
//!   and re-simulates, comparing checksums with the straight run: the determinism fuzzing
//!   workhorse (no GGRS needed).

mod driver;

pub use driver::{Divergence, RollbackDriver, RollbackStats};
