//! Fuzz target `presenter`: see `rollback_abilities::fuzz::presenter` and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rollback_abilities::fuzz::presenter(data));
