//! Integration tests (one binary, many modules).

mod common;
mod rollback;
mod scenarios_core;
