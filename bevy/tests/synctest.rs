//! Sync tests through the plugin: every frame rolled back and re-simulated, no mismatch.

use crate::common::{app, next_frame, seen, state};
use bevy_rollback_abilities::MatchSpec;

#[test]
fn a_sync_test_of_the_duel_rolls_back_every_frame_without_a_mismatch() {
    let mut app = app(MatchSpec::sync_test(2).check_distance(7));
    for _ in 0..601 {
        app.update();
    }
    let frames = next_frame(&app);
    assert!(frames >= 590, "the match advanced one frame per update: {frames}");
    let stats = state(&app).stats();
    assert_eq!(stats.frames, u64::from(frames));
    // Once 8 frames exist, every new frame re-simulates the 7 before it.
    assert_eq!(stats.resimulated, 7 * u64::from(frames - 8));
    assert_eq!(seen(&app).mismatches, 0);
    assert!(seen(&app).ended.is_empty(), "{:?}", seen(&app).ended);
    assert_eq!(seen(&app).started, 1);
    assert!(!seen(&app).cues.is_empty(), "the duel plays cues");
}
