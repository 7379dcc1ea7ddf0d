//! Fuzz target `session`: see `rollback_abilities::fuzz::session` and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rollback_abilities::fuzz::session(data));
