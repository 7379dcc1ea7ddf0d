//! Fuzz target `step_inputs`: see `rollback_abilities_kit::fuzz::step_inputs` and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rollback_abilities_kit::fuzz::step_inputs(data));
