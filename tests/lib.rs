//! Integration tests (one binary, many modules).

mod common;
mod content_errors;
mod features_attributes;
mod features_tags;
mod rollback;
mod scenarios_abilities;
mod scenarios_core;
