//! The template of a game's determinism fuzzing (`examples/fuzz_my_game/`): its plain test, a
//! bounded campaign in every `cargo test`.

#[path = "../examples/fuzz_my_game/main.rs"]
#[allow(dead_code)] // its `main`
mod template;

use rollback_abilities::fuzz::Fuzzer;

/// Iterations per `cargo test`: about a second in the test profile.
const ITERATIONS: u64 = 16;

#[test]
fn the_templates_game_keeps_its_determinism_for_a_bounded_campaign() {
    let found = template::fuzzer(None).campaign(1, ITERATIONS, |_| {}).expect("the harness runs");
    if let Some((i, finding)) = found {
        panic!("iteration {i}: {finding}");
    }
}

#[test]
fn the_templates_fuzz_target_accepts_any_bytes() {
    for bytes in [&b""[..], &[0xff; 40][..], &Fuzzer::<template::MyGame>::bytes_for(3, 0)[..]] {
        template::fuzz_one(bytes);
    }
}
