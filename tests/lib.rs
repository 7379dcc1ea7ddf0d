//! Integration tests (one binary, many modules).

mod common;
mod content_errors;
mod cues;
mod features_abilities;
mod features_attributes;
mod features_effects;
mod features_tags;
#[cfg(feature = "matchbox")]
mod matchbox;
mod recipes;
mod rollback;
mod scenarios_abilities;
mod scenarios_core;
mod sessions;
mod scenario_files;
