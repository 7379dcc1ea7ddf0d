//! Fuzz target `content`: see `rollback_abilities_kit::fuzz::content` and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rollback_abilities_kit::fuzz::content(data));
