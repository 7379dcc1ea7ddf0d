//! Fuzz target `session`: see `rollback_abilities_kit::fuzz::session` and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rollback_abilities_kit::fuzz::session(data));
