//! Replays of matches whose systems read the players' input statuses: a player who left is
//! `Disconnected` from the agreed frame on every survivor, and the replay steps the systems the
//! same way.

use rollback_abilities::InputStatus;
use rollback_abilities::prelude::*;
use rollback_abilities::replay::{FORMAT_VERSION, Replay, ReplayError};
use rollback_abilities::session::{LocalMatch, MatchConfig, SessionEvent};
use std::sync::Arc;

/// A game whose systems branch on the input status: a disconnected player's tally stands still
/// and the last slot counts the frames anyone spent disconnected; everyone else's input folds
/// into their tally.
struct Standstill;

impl Game for Standstill {
    type Input = u8;
    type Component = ();
    type Global = [u32; 8];

    fn systems(world: &mut World<Self>) {
        for p in 0..world.players().min(7) {
            if world.input_status(p) == InputStatus::Disconnected {
                world.global_mut()[7] += 1;
                continue;
            }
            let input = world.input(p);
            let tally = &mut world.global_mut()[p];
            *tally = tally.wrapping_mul(31).wrapping_add(u32::from(input) + 1);
        }
    }
}

fn world(content: &Arc<Content>, players: usize) -> World<Standstill> {
    let config = WorldConfig { players: players as u16, ..WorldConfig::default() };
    World::new(content.clone(), &Hooks::new(), config).unwrap()
}

/// Three players under loss; player 2 quits after about 120 frames; the survivors play on.
/// Returns peer 0's replay and the last frame of player 2's real input.
fn match_with_a_departure(seed: u64) -> (Replay, u32) {
    let content = Arc::new(Content::from_ron_str("()").unwrap());
    let config = MatchConfig {
        players: 3,
        conditions: crate::hostile::LOSSY,
        net_seed: seed,
        departure_ticks: 120,
        ..MatchConfig::default()
    };
    let mut m = LocalMatch::<Standstill>::new(config, |_| world(&content, 3)).unwrap();
    for p in m.peers_mut() {
        p.runner.record(50);
    }
    m.synchronize().unwrap();
    let input = |p: usize, f: u32, _: &World<Standstill>| 1 + ((p as u32 * 7 + f / 3) % 200) as u8;
    for _ in 0..120 {
        m.tick(input, &mut [], |_| {}).unwrap();
    }
    m.quit(2).unwrap();
    for _ in 0..300 {
        m.tick(input, &mut [], |_| {}).unwrap();
    }
    assert!(m.confirmed_checksums_agree());
    let last = m.peers()[0]
        .events()
        .iter()
        .find_map(|e| match e {
            SessionEvent::Left { players, last_frame, .. } if players == &[2] => *last_frame,
            _ => None,
        })
        .expect("the survivors agreed on player 2's last frame");
    let replay = m.peers_mut()[0].runner.take_recorder().unwrap().finish();
    assert!(replay.len() > last as usize + 100, "{} frames, last {last}", replay.len());
    (replay, last)
}

#[test]
fn a_replay_of_a_match_with_a_departure_verifies_with_systems_that_branch_on_the_status() {
    for seed in [1, 2, 3] {
        let (replay, last) = match_with_a_departure(seed);
        let content = Arc::new(Content::from_ron_str("()").unwrap());
        // Player 2 is disconnected from the frame after its last input, and only then.
        for f in 0..replay.len() as u32 {
            let want = if f > last { InputStatus::Disconnected } else { InputStatus::Confirmed };
            assert_eq!(replay.statuses(f)[2], want, "seed {seed}, frame {f}");
            assert_eq!(replay.statuses(f)[..2], [InputStatus::Confirmed; 2], "seed {seed}");
        }
        let v = replay.verify(&mut world(&content, 3)).unwrap();
        assert!(v.is_ok(), "seed {seed}: diverged at {:?}", v.first_divergence);
        // The file carries them too.
        let decoded = Replay::decode(&replay.encode()).unwrap();
        assert_eq!(decoded, replay);
        assert!(decoded.verify(&mut world(&content, 3)).unwrap().is_ok(), "seed {seed}");
        // Seeking past the departure from a keyframe lands on the recorded state.
        let mut w = world(&content, 3);
        decoded.start(&mut w).unwrap();
        decoded.seek(&mut w, last + 60).unwrap();
        let mut straight = world(&content, 3);
        decoded.start(&mut straight).unwrap();
        for f in 0..last + 60 {
            straight.step(&decoded.frame_inputs::<Standstill>(f));
        }
        assert_eq!(w.checksum(), straight.checksum(), "seed {seed}");
        // Stepped with the inputs alone (every player `Confirmed`, what replays held before they
        // recorded statuses), the same systems diverge at the first disconnected frame.
        let mut plain = world(&content, 3);
        replay.start(&mut plain).unwrap();
        let diverged = (0..replay.len() as u32).find(|&f| {
            plain.step(&replay.inputs::<Standstill>(f));
            plain.checksum() != replay.frames[f as usize].checksum
        });
        assert_eq!(diverged, Some(last + 1), "seed {seed}");
    }
}

/// Where the frames start in an encoded replay (after magic, version, header and initial state).
fn frames_at(bytes: &[u8]) -> usize {
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let mut at = 12;
    at += 4 + u32_at(at);
    at + 8 + u64_at(at)
}

fn reseal(bytes: &mut [u8]) {
    let n = bytes.len() - 8;
    let sum = twox_hash::XxHash3_64::oneshot(&bytes[..n]);
    bytes[n..].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn version_five_and_six_replays_still_read_and_bad_status_bytes_are_typed_errors() {
    let content = Arc::new(Content::from_ron_str("()").unwrap());
    let mut w = world(&content, 2);
    let mut rec = rollback_abilities::replay::Recorder::new(&w, 0);
    for f in 0..20u32 {
        let inputs = [(f as u8, InputStatus::Confirmed), (3, InputStatus::Predicted)];
        w.step(&inputs[..]);
        rec.push(f, &inputs[..], w.checksum()).unwrap();
    }
    let replay = rec.finish();
    // A confirmed frame's right prediction is recorded as `Confirmed`.
    assert!(replay.frames.iter().all(|f| f.statuses == [InputStatus::Confirmed; 2]));
    let current = replay.encode();
    assert_eq!(current[8..12], FORMAT_VERSION.to_le_bytes());

    // The same replay in version 6: no first frame in the header (it starts at frame 0).
    let hlen = u32::from_le_bytes(current[12..16].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&current[16..16 + hlen]).unwrap();
    assert!(header.contains(",first_frame:0"), "{header}");
    let old_header = header.replace(",first_frame:0", "");
    let mut v6 = current[..8].to_vec();
    v6.extend_from_slice(&6u32.to_le_bytes());
    v6.extend_from_slice(&(old_header.len() as u32).to_le_bytes());
    v6.extend_from_slice(old_header.as_bytes());
    v6.extend_from_slice(&current[16 + hlen..]);
    reseal(&mut v6);
    let six = Replay::decode(&v6).unwrap();
    assert_eq!(six, replay);
    assert_eq!(six.first_frame(), 0);

    // The same replay in version 5: no status bytes.
    let start = frames_at(&v6);
    let mut v5 = v6[..start + 4].to_vec();
    v5[8..12].copy_from_slice(&5u32.to_le_bytes());
    let per = 2 + 2 + 8;
    for f in 0..20 {
        let at = start + 4 + f * per;
        v5.extend_from_slice(&v6[at..at + 2]);
        v5.extend_from_slice(&v6[at + 4..at + 12]);
    }
    v5.extend_from_slice(&v6[start + 4 + 20 * per..]);
    reseal(&mut v5);
    let old = Replay::decode(&v5).unwrap();
    assert_eq!(old, replay);
    assert!(old.verify(&mut world(&content, 2)).unwrap().is_ok());

    // Version 4 is another snapshot layout: refused, typed.
    let mut v4 = v5.clone();
    v4[8..12].copy_from_slice(&4u32.to_le_bytes());
    reseal(&mut v4);
    assert_eq!(Replay::decode(&v4), Err(ReplayError::UnsupportedVersion { found: 4 }));

    // A status byte that is no status, in frame 3's player 1.
    let mut bad = v6.clone();
    bad[start + 4 + 3 * per + 2 + 1] = 9;
    reseal(&mut bad);
    assert_eq!(
        Replay::decode(&bad),
        Err(ReplayError::BadInputStatus { frame: 3, player: 1, value: 9 })
    );
}

/// A recording started from a world past frame 0 (a peer that joined a running match) numbers
/// its frames as the match did: it starts at the world's next frame, looks frames up by their
/// numbers, verifies and seeks, and a frame count that would run past the last frame number is
/// a typed error.
#[test]
fn a_replay_can_start_past_frame_zero() {
    let content = Arc::new(Content::from_ron_str("()").unwrap());
    let mut w = world(&content, 2);
    for f in 0..50u8 {
        w.step(&[f, 1][..]);
    }
    let mut rec = rollback_abilities::replay::Recorder::new(&w, 16);
    assert_eq!(rec.next_frame(), 50);
    let mut sums = Vec::new();
    for f in 50..120u32 {
        if rec.keyframe_due(f) {
            rec.keyframe(&w);
        }
        let inputs = [(f as u8, InputStatus::Confirmed), (2, InputStatus::Confirmed)];
        w.step(&inputs[..]);
        sums.push(w.checksum());
        rec.push(f, &inputs[..], w.checksum()).unwrap();
    }
    assert_eq!(
        rec.push(7, &[(0u8, InputStatus::Confirmed)][..], 0),
        Err(ReplayError::FrameGap { expected: 120, got: 7 })
    );
    let replay = Replay::decode(&rec.finish().encode()).unwrap();
    assert_eq!((replay.first_frame(), replay.end_frame(), replay.len()), (50, 120, 70));
    assert_eq!(replay.keyframes.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [64, 80, 96, 112]);
    assert_eq!(replay.inputs::<Standstill>(60), [60, 2]);
    assert!(replay.inputs::<Standstill>(49).is_empty() && replay.frame(120).is_none());
    assert!(replay.verify(&mut world(&content, 2)).unwrap().is_ok());
    let mut fresh = world(&content, 2);
    replay.seek(&mut fresh, 100).unwrap();
    assert_eq!((fresh.next_frame(), fresh.checksum()), (100, sums[49]));

    // A first frame so late that the frames would run past the last frame number.
    let mut late = replay.clone();
    late.header.first_frame = u32::MAX - 10;
    assert_eq!(
        Replay::decode(&late.encode()),
        Err(ReplayError::TooLarge { what: "frame count", len: 70 })
    );
}
