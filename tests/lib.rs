//! Integration tests (one binary, many modules).

mod common;
mod scenarios_core;
