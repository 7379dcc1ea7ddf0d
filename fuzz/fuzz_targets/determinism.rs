//! Fuzz target `determinism`: see `rollback_abilities_kit::fuzz::determinism` and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rollback_abilities_kit::fuzz::determinism(data));
