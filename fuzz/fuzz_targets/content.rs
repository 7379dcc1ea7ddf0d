//! Fuzz target `content`: see `rollback_abilities::fuzz::content` and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rollback_abilities::fuzz::content(data));
