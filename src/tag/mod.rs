//! Gameplay tags: the hierarchical registry, tag sets, queries and requirements.
//!
//! Tags are dotted names (`State.Debuff.Stun`). The registry assigns ids by sorting full names
//! segment by segment, with implicit parents inserted, so every peer that loaded the same names
//! agrees on every id, and a tag's descendants always occupy the id range right after it
//! (`State` < `State.Debuff` < `State.Debuff.Stun` < `State.Dead`). That makes "is `a` a
//! descendant of `b`" a range check and lets per-entity counts be plain dense arrays.
//!
//! # Matching rules (the same as GAS)
//!
//! A container holding `A.1` answers "has `A`" with true (hierarchical match); the exact forms
//! (`has_exact`, …) do not. [`TagContainer`] keeps both the explicit tags and their
//! ancestor-expanded view so either question is a bitset test.

mod query;
mod registry;
mod set;

pub use query::{TagQuery, TagQueryExpr, TagRequirements};
pub(crate) use registry::validate_name as registry_validate_name;
pub use registry::{TagRegistry, TagRegistryError};
pub use set::{MAX_TAGS, TagContainer, TagSet};
