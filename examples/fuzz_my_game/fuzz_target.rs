//! A libFuzzer target for your game's determinism: copy into your `fuzz/fuzz_targets/my_game.rs`
//! and add to your `fuzz/Cargo.toml` (see fuzz/README.md for the rest of the setup):
//!
//! ```toml
//! [dependencies]
//! libfuzzer-sys = "0.4"
//! my_game = { path = ".." }  # where `fuzz_one` (examples/fuzz_my_game/main.rs) lives
//!
//! [[bin]]
//! name = "my_game"
//! path = "fuzz_targets/my_game.rs"
//! test = false
//! doc = false
//! bench = false
//! ```
//!
//! Then, on stable Rust (no address sanitizer), one core at a time:
//!
//! ```sh
//! cargo fuzz run my_game --sanitizer none -- -max_total_time=600
//! ```
//!
//! A finding is a panic whose message is the finding (runs, frame, fields); libFuzzer keeps its
//! bytes in `artifacts/my_game/crash-<sha1>`. `Fuzzer::run` on those bytes, with
//! `FuzzConfig::replay_dir` set, writes the replays that reproduce it; keep the bytes next to
//! your plain fuzz test so `cargo test` runs them after the fix.
//!
//! The crate's own fuzz package builds this file as its `my_game` target (`cargo check
//! --manifest-path fuzz/Cargo.toml --bin my_game`, which CI runs), with the template's game
//! compiled in by the `#[path]` module below. In your game, replace that module with
//! `use my_game::fuzz_one;` and call `fuzz_one(data)`.
#![no_main]

#[path = "main.rs"]
#[allow(dead_code)] // the template's `main`
mod my_game;

libfuzzer_sys::fuzz_target!(|data: &[u8]| my_game::fuzz_one(data));
