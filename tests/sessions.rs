//! Rollback sessions over GGRS: peers on the emulated network (lossy, duplicating,
//! reordering, jittery), spectators, sync tests, disconnects, handshakes, replays and desync
//! diagnosis.

use crate::cues::{ARENA, SprintHitGame, arena, arena_players};
use ggrs::{DesyncDetection, PlayerType, SessionBuilder, SessionState};
use rollback_abilities::debug::{WorldDump, diff_dumps};
use rollback_abilities::prelude::*;
use rollback_abilities::replay::{Replay, ReplayError};
use rollback_abilities::session::{
    EmulatedNetwork, GgrsConfig, Handshake, HandshakeError, Identity, NetConditions, PeerAddr,
    Runner, exchange_emulated,
};
use rollback_abilities::{Subsystem, random::Stream};

type Cfg = GgrsConfig<SprintHitGame, PeerAddr>;

/// A deterministic bot: holds sprint and fire in stretches that depend on the player.
pub fn bot(player: usize, frame: u32) -> u8 {
    let mut s = Stream::derive(0xB07, &[player as u64, u64::from(frame / 9)]);
    let sprint = u8::from(s.below(3) == 0);
    let fire = u8::from(s.below(4) == 0) << 1;
    sprint | fire
}

pub struct Peer {
    pub runner: Runner<SprintHitGame>,
    pub session: ggrs::P2PSession<Cfg>,
    pub handle: usize,
}

/// Builds `n` peers on a network, synchronises them (impairments off), then switches the
/// impairments on.
pub fn peers(net: &EmulatedNetwork, n: usize, input_delay: usize, record: bool) -> Vec<Peer> {
    peers_with(net, n, input_delay, record, |b| b)
}

/// [`peers`] with a hook to adjust each session builder.
pub fn peers_with(
    net: &EmulatedNetwork,
    n: usize,
    input_delay: usize,
    record: bool,
    adjust: impl Fn(SessionBuilder<Cfg>) -> SessionBuilder<Cfg>,
) -> Vec<Peer> {
    let mut out = Vec::new();
    for i in 0..n {
        let socket = net.socket(PeerAddr(i as u16));
        let mut b = SessionBuilder::<Cfg>::new()
            .with_num_players(n)
            .unwrap()
            .with_max_prediction_window(8)
            .with_input_delay(input_delay)
            .with_desync_detection_mode(DesyncDetection::On { interval: 10 });
        for j in 0..n {
            let t = if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j as u16)) };
            b = b.add_player(t, j).unwrap();
        }
        let session = adjust(b).start_p2p_session(socket).unwrap();
        let (world, _) = arena_n(n);
        let mut runner = Runner::new(world, 8, 10);
        if record {
            runner.record(60);
        }
        out.push(Peer { runner, session, handle: i });
    }
    sync(net, &mut out);
    net.set_impaired(true);
    out
}

/// A world with `n` fighters bound to players `0..n`.
pub fn arena_n(n: usize) -> (World<SprintHitGame>, Vec<Entity>) {
    let (w, e) = arena_players(ARENA, n as u16);
    let mut w = w;
    let mut ents = e.to_vec();
    if n > 2 {
        let c = w.content().clone();
        let vitals = c.attr_set("Vitals").unwrap();
        for p in 2..n {
            let x = w.spawn_actor(&[vitals]).unwrap();
            w.grant_ability(x, c.ability("Sprint").unwrap(), 1).unwrap();
            ents.push(x);
            let _ = p;
        }
    }
    (rebind(w, &ents, n), ents)
}

fn rebind(mut w: World<SprintHitGame>, ents: &[Entity], n: usize) -> World<SprintHitGame> {
    // SprintHitGame's systems hit player 1-p; with more players, player p hits p+1.
    for (p, e) in ents.iter().take(n).enumerate() {
        w.bind_player(p, *e);
    }
    w
}

pub fn sync(net: &EmulatedNetwork, peers: &mut [Peer]) {
    for _ in 0..10_000 {
        for p in peers.iter_mut() {
            p.session.poll_remote_clients();
        }
        net.advance_ms(5);
        if peers.iter().all(|p| p.session.current_state() == SessionState::Running) {
            return;
        }
    }
    panic!("peers did not synchronise");
}

/// Runs every peer until each has advanced `frames` frames, then idles until all frames are
/// confirmed everywhere. Returns each peer's recorded (frame, checksum) list.
pub fn run(net: &EmulatedNetwork, peers: &mut [Peer], frames: u32) {
    let mut guard = 0u32;
    while peers.iter().any(|p| p.runner.world().next_frame() < frames + 20) {
        for p in peers.iter_mut() {
            let f = p.runner.world().next_frame();
            let input = if f < frames { bot(p.handle, f) } else { 0 };
            p.runner.advance_p2p(&mut p.session, &[(p.handle, input)], None, |_| {}).unwrap();
        }
        net.advance_ms(16);
        guard += 1;
        assert!(guard < frames * 10 + 1000, "peers stopped advancing");
    }
}

fn recorded(p: &Peer) -> Vec<u64> {
    p.runner.recorder().unwrap().replay().frames.iter().map(|f| f.checksum).collect()
}

fn common_prefix_equal(peers: &[Peer], at_least: usize) {
    let sums: Vec<Vec<u64>> = peers.iter().map(recorded).collect();
    let n = sums.iter().map(Vec::len).min().unwrap();
    assert!(n >= at_least, "only {n} confirmed frames recorded");
    for s in &sums[1..] {
        assert_eq!(&s[..n], &sums[0][..n], "confirmed checksums differ between peers");
    }
    assert!(sums[0][..n].iter().all(|c| *c != 0));
}

/// 2 peers, 10 000 frames, 20 % loss, 10 % duplication, reordering and 0–150 ms jitter: no
/// desync and identical confirmed checksums.
#[test]
fn two_peers_harsh_network_10000_frames() {
    let net = EmulatedNetwork::new(NetConditions::HARSH, 1);
    let mut ps = peers(&net, 2, 2, true);
    run(&net, &mut ps, 10_000);
    for p in &ps {
        assert_eq!(p.runner.stats().desyncs, 0);
        assert!(p.runner.stats().rollbacks > 100, "{:?}", p.runner.stats());
    }
    common_prefix_equal(&ps, 9_990);
    let stats = net.stats();
    assert!(stats.dropped > 1000 && stats.duplicated > 500 && stats.reordered > 500, "{stats:?}");
}

/// 4 peers under the same conditions.
#[test]
fn four_peers_harsh_network() {
    let net = EmulatedNetwork::new(NetConditions::HARSH, 2);
    let mut ps = peers(&net, 4, 2, true);
    run(&net, &mut ps, 3_000);
    for p in &ps {
        assert_eq!(p.runner.stats().desyncs, 0);
    }
    common_prefix_equal(&ps, 2_990);
}

/// GGRS's sync test (forced rollbacks of check distance 7) over the reference content.
#[test]
fn sync_test_session() {
    let (world, _) = arena_n(2);
    let mut runner = Runner::new(world, 8, 10);
    let mut session = SessionBuilder::<Cfg>::new()
        .with_num_players(2)
        .unwrap()
        .with_max_prediction_window(8)
        .with_check_distance(7)
        .start_synctest_session()
        .unwrap();
    for f in 0..1000u32 {
        runner.advance_synctest(&mut session, &[bot(0, f), bot(1, f)], None, |_| {}).unwrap();
    }
    assert!(runner.stats().rollbacks >= 990);
    assert_eq!(runner.world().next_frame(), 1000);
}

/// A spectator following a 2-peer match ends with the same checksums.
#[test]
fn spectator_follows_the_match() {
    let net = EmulatedNetwork::new(
        NetConditions { latency_ms: 30, jitter_ms: 40, ..NetConditions::PERFECT },
        3,
    );
    let spectator_addr = PeerAddr(9);
    let mut ps: Vec<Peer> = Vec::new();
    for i in 0..2usize {
        let mut b = SessionBuilder::<Cfg>::new()
            .with_num_players(2)
            .unwrap()
            .with_max_prediction_window(8)
            .with_input_delay(1);
        for j in 0..2usize {
            let t = if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j as u16)) };
            b = b.add_player(t, j).unwrap();
        }
        if i == 0 {
            b = b.add_player(PlayerType::Spectator(spectator_addr), 2).unwrap();
        }
        let session = b.start_p2p_session(net.socket(PeerAddr(i as u16))).unwrap();
        let mut runner = Runner::new(arena_n(2).0, 8, 10);
        runner.record(0);
        ps.push(Peer { runner, session, handle: i });
    }
    let mut spec_session = SessionBuilder::<Cfg>::new()
        .with_num_players(2)
        .unwrap()
        .start_spectator_session(PeerAddr(0), net.socket(spectator_addr));
    let mut spec = Runner::new(arena_n(2).0, 8, 10);
    spec.record(0);
    for _ in 0..10_000 {
        for p in ps.iter_mut() {
            p.session.poll_remote_clients();
        }
        spec_session.poll_remote_clients();
        net.advance_ms(5);
        if ps.iter().all(|p| p.session.current_state() == SessionState::Running)
            && spec_session.current_state() == SessionState::Running
        {
            break;
        }
    }
    for _ in 0..1500 {
        for p in ps.iter_mut() {
            let f = p.runner.world().next_frame();
            let input = if f < 1200 { bot(p.handle, f) } else { 0 };
            p.runner.advance_p2p(&mut p.session, &[(p.handle, input)], None, |_| {}).unwrap();
        }
        spec.advance_spectator(&mut spec_session, None, |_| {}).unwrap();
        net.advance_ms(16);
    }
    let host = recorded(&ps[0]);
    let follower: Vec<u64> =
        spec.recorder().unwrap().replay().frames.iter().map(|f| f.checksum).collect();
    let n = host.len().min(follower.len());
    assert!(n > 1300, "spectator saw {} frames, host confirmed {}", follower.len(), host.len());
    assert_eq!(&follower[..n], &host[..n]);
}

/// A peer leaves mid-match: the others disconnect it and carry on with the default input for
/// that player, in sync. (The peers disconnect it explicitly once they have stalled waiting
/// for it, instead of waiting for GGRS's wall-clock timeout, so the test is deterministic.)
#[test]
fn disconnect_mid_match() {
    use std::time::Duration;
    let net = EmulatedNetwork::new(NetConditions { latency_ms: 20, ..NetConditions::PERFECT }, 4);
    let mut ps =
        peers_with(&net, 3, 2, true, |b| b.with_disconnect_timeout(Duration::from_secs(600)));
    let mut disconnected = false;
    let mut stalled = [0u32; 2];
    for _ in 0..3000 {
        for p in ps.iter_mut() {
            let f = p.runner.world().next_frame();
            if p.handle == 2 && f >= 400 {
                continue; // peer 2 has left
            }
            let batch = p
                .runner
                .advance_p2p(&mut p.session, &[(p.handle, bot(p.handle, f))], None, |_| {})
                .unwrap();
            if p.handle < 2 && (batch.skipped || batch.advanced == 0) {
                stalled[p.handle] += 1;
            }
        }
        if ps[2].runner.world().next_frame() >= 400 {
            net.partition(PeerAddr(2), true);
        }
        if !disconnected && stalled.iter().all(|s| *s >= 5) {
            for p in ps.iter_mut().take(2) {
                p.session.disconnect_player(2).unwrap();
            }
            disconnected = true;
        }
        net.advance_ms(16);
        if ps.iter().take(2).all(|p| p.runner.world().next_frame() >= 1200) {
            break;
        }
    }
    assert!(disconnected, "the remaining peers stalled waiting for the leaver");
    for p in ps.iter().take(2) {
        assert!(p.runner.world().next_frame() >= 1200, "remaining peers keep going");
        let replay = p.runner.recorder().unwrap().replay();
        let last_real = replay.frames.iter().rposition(|f| f.inputs[2] != 0).unwrap_or(0);
        assert!(
            last_real < 405,
            "player 2's input is the default after it left (last real input at {last_real})"
        );
        assert!(replay.frames.len() > 1100);
        assert_eq!(p.runner.world().input_status(2), rollback_abilities::InputStatus::Disconnected);
    }
    let a = recorded(&ps[0]);
    let b = recorded(&ps[1]);
    let n = a.len().min(b.len());
    assert!(n > 1100);
    assert_eq!(&a[..n], &b[..n]);
}

/// Handshakes agree on equal peers and name the first mismatch otherwise.
#[test]
fn handshake_mismatches_refuse_to_start() {
    let net = EmulatedNetwork::new(NetConditions::HARSH, 5);
    let (wa, _) = arena_n(2);
    let (wb, _) = arena_n(2);
    let (ia, ib) = (Identity::generate().unwrap(), Identity::generate().unwrap());
    let heard = exchange_emulated(
        &[
            (net.socket(PeerAddr(0)), Handshake::of(&wa).with_identity(&ia)),
            (net.socket(PeerAddr(1)), Handshake::of(&wb).with_identity(&ib)),
        ],
        4,
    )
    .unwrap();
    // Each peer's identity is announced, not compared: peer 0 heard peer 1's, and back.
    assert_eq!(heard[0].get(&PeerAddr(1)), Some(&ib.public()));
    assert_eq!(heard[1].get(&PeerAddr(0)), Some(&ia.public()));
    assert_eq!(heard[0].len() + heard[1].len(), 2);

    let other_content = ARENA.replace("coef: -3", "coef: -4");
    let (wc, _) = arena(&other_content);
    let err = exchange_emulated(
        &[
            (net.socket(PeerAddr(2)), Handshake::of(&wa)),
            (net.socket(PeerAddr(3)), Handshake::of(&wc)),
        ],
        4,
    );
    assert!(matches!(&err, Err(HandshakeError::Mismatch { field: "content hash", .. })), "{err:?}");
    assert!(err.unwrap_err().to_string().contains("content hash differs"));

    let mut seeded = Handshake::of(&wa);
    seeded.seed = 99;
    assert!(matches!(
        Handshake::of(&wa).check(&seeded, "peer1"),
        Err(HandshakeError::Mismatch { field: "session seed", .. })
    ));
    let mut ver = Handshake::of(&wa);
    ver.crate_version = "0.0.1".into();
    assert!(matches!(
        Handshake::of(&wa).check(&ver, "peer1"),
        Err(HandshakeError::Mismatch { field: "crate version", .. })
    ));
    let mut moved = arena_n(2).0;
    let e = moved.entities().next().unwrap();
    moved.add_loose_tag(e, moved.content().tag("Input.Sprint").unwrap());
    assert!(matches!(
        Handshake::of(&wa).check(&Handshake::of(&moved), "p"),
        Err(HandshakeError::Mismatch { field: "initial state", .. })
    ));
    assert!(matches!(Handshake::decode(b"garbage", "p"), Err(HandshakeError::Malformed { .. })));
    let mut tick = Handshake::of(&wa);
    tick.tick_rate = 30;
    assert!(matches!(
        Handshake::of(&wa).check(&tick, "p"),
        Err(HandshakeError::Mismatch { field: "tick rate", .. })
    ));
}

/// Peers started for different numbers of players are told which: the handshake's mismatch
/// and the player-count announcement a transport sends each peer as soon as it connects (before
/// the room is complete, which it never is for one of them) both say "this peer expects N
/// players, peer X expects M".
#[test]
fn a_player_count_mismatch_names_both_counts() {
    let net = EmulatedNetwork::new(NetConditions::HARSH, 6);
    let (two, _) = arena_n(2);
    let (three, _) = arena_n(3);
    let (h2, h3) = (Handshake::of(&two), Handshake::of(&three));
    let err = exchange_emulated(
        &[(net.socket(PeerAddr(0)), h2.clone()), (net.socket(PeerAddr(1)), h3.clone())],
        4,
    )
    .unwrap_err();
    assert!(matches!(&err, HandshakeError::Mismatch { field: "players", .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("this peer expects 2 players, peer1 expects 3")
            || text.contains("this peer expects 3 players, peer0 expects 2"),
        "{text}"
    );

    let told = h3.players_announcement();
    let e = h2.check_players_announcement(&told, "peer B").unwrap().unwrap_err();
    assert_eq!(
        e.to_string(),
        "refusing to start: this peer expects 2 players, peer B expects 3; every peer of a \
         match must be started for the same number of players"
    );
    assert_eq!(h3.check_players_announcement(&told, "peer B"), Some(Ok(())));
    // Anything else is not an announcement; a truncated one is malformed.
    assert_eq!(h2.check_players_announcement(&h3.encode(), "peer B"), None);
    assert_eq!(h2.check_players_announcement(b"hello", "peer B"), None);
    assert!(matches!(
        h2.check_players_announcement(&told[..told.len() - 1], "peer B"),
        Some(Err(HandshakeError::Malformed { .. }))
    ));
}

fn replay_world() -> World<SprintHitGame> {
    arena_n(2).0
}

/// Replay round trip: record from a lossy P2P run, verify headless, seek, identical checksums.
#[test]
fn replay_round_trip_from_a_lossy_match() {
    let net = EmulatedNetwork::new(NetConditions::HARSH, 6);
    let mut ps = peers(&net, 2, 2, true);
    run(&net, &mut ps, 1_500);
    let replay = ps[0].runner.take_recorder().unwrap().finish();
    assert!(replay.len() >= 1_500);
    let kf: Vec<u32> = replay.keyframes.iter().map(|k| k.0).collect();
    assert!(replay.keyframes.len() >= 20, "keyframes at {kf:?}");
    let bytes = replay.encode();
    let back = Replay::decode(&bytes).unwrap();
    assert_eq!(back, replay);
    let mut w = replay_world();
    let v = back.verify(&mut w).unwrap();
    assert!(v.is_ok(), "{v:?}");
    assert_eq!(w.checksum(), back.frames.last().unwrap().checksum);
    // Seek to a frame and compare with straight re-simulation.
    let mut a = replay_world();
    back.seek(&mut a, 777).unwrap();
    let mut b = replay_world();
    back.start(&mut b).unwrap();
    for f in 0..777 {
        b.step(&back.inputs::<SprintHitGame>(f));
    }
    assert_eq!(a.state_bytes(), b.state_bytes());
    assert_eq!(back.bisect(&mut replay_world()).unwrap(), None);
}

/// A verification that diverges names the field that diverged: a script that lowers an
/// entity's Health in frame 23 on the verifying run only is reported at frame 23, and the
/// keyframe after it (30) differs in that entity's Health, recorded against re-simulated.
#[test]
fn replay_verification_names_the_diverged_field() {
    let mut w = replay_world();
    let health = w.content().attr("Health").unwrap();
    let mut rec = rollback_abilities::replay::Recorder::new(&w, 10);
    for f in 0..45 {
        if rec.keyframe_due(f) {
            rec.keyframe(&w);
        }
        let inputs = [(f % 3) as u8, 0];
        w.step(&inputs);
        rec.push(f, &inputs, w.checksum()).unwrap();
    }
    let replay = rec.finish();
    assert_eq!(replay.keyframes.iter().map(|k| k.0).collect::<Vec<_>>(), [10, 20, 30, 40]);
    let mut clean = replay_world();
    assert!(replay.verify(&mut clean).unwrap().is_ok());
    let mut recorded = replay_world();
    replay.seek(&mut recorded, 30).unwrap();
    let recorded_hp = recorded.base(recorded.entities().next().unwrap(), health).unwrap();

    let mut diverging = replay_world();
    let v = replay
        .verify_with(&mut diverging, |w| {
            if w.frame() == 23 {
                let e = w.entities().next().unwrap();
                let hp = w.base(e, health).unwrap();
                w.set_base(e, health, hp - rollback_abilities::num::int(1));
            }
        })
        .unwrap();
    assert_eq!(v.first_divergence, Some(23));
    assert_eq!(v.diff_frame, Some(30));
    assert!(!v.diffs.is_empty(), "{v:?}");
    let d = v.diffs.iter().find(|d| d.column == "attributes").expect("an attribute differs");
    assert_eq!(d.subsystem, Subsystem::Attributes);
    assert_eq!((d.entity, d.item.as_str()), (Some(0), "attribute Health"));
    assert!(d.field == "base" || d.field == "current", "{d:?}");
    assert_eq!(d.left, recorded_hp.to_string(), "left: the recorded keyframe");
    assert_eq!(d.right, (recorded_hp - rollback_abilities::num::int(1)).to_string(), "{d:?}");
    // Only what the script changed differs.
    assert!(v.diffs.iter().all(|d| d.subsystem == Subsystem::Attributes), "{:?}", v.diffs);
}

/// Malformed replay files give typed errors, never panics.
#[test]
fn malformed_replays_are_typed_errors() {
    let mut w = replay_world();
    let mut rec = rollback_abilities::replay::Recorder::new(&w, 10);
    for f in 0..40u32 {
        w.step(&[bot(0, f), bot(1, f)]);
        rec.push(f, &[bot(0, f), bot(1, f)], w.checksum()).unwrap();
        if rec.keyframe_due(w.next_frame()) {
            rec.keyframe(&w);
        }
    }
    assert!(matches!(
        rec.push(99, &[0, 0], 0),
        Err(ReplayError::FrameGap { expected: 40, got: 99 })
    ));
    let good = rec.finish().encode();
    assert!(Replay::decode(&good).is_ok());
    // Truncated at every length (cut to nothing, it is an empty file).
    assert_eq!(Replay::decode(&[]).unwrap_err(), ReplayError::Empty);
    for cut in [4usize, 8, 11, 20, 100, good.len() / 2, good.len() - 9, good.len() - 1] {
        let e = Replay::decode(&good[..cut]).unwrap_err();
        assert!(
            matches!(e, ReplayError::Truncated { offset, .. } if offset == cut),
            "cut {cut}: {e:?}"
        );
    }
    // A flipped byte in the inputs.
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 200] ^= 0x40;
    assert!(matches!(Replay::decode(&bad), Err(ReplayError::Corrupted { .. })));
    // Foreign file and wrong version.
    assert_eq!(Replay::decode(b"PK\x03\x04 not a replay at all"), Err(ReplayError::BadMagic));
    // Version 1 had the same framing but another snapshot layout: refused, not misread.
    let mut v1 = good.clone();
    v1[8] = 1;
    assert_eq!(Replay::decode(&v1), Err(ReplayError::UnsupportedVersion { found: 1 }));
    // Foreign content.
    let (mut other, _) = arena(&ARENA.replace("coef: -3", "coef: -5"));
    let r = Replay::decode(&good).unwrap();
    assert!(matches!(r.verify(&mut other), Err(ReplayError::ContentMismatch { .. })));
    let text = r.verify(&mut other).unwrap_err().to_string();
    assert!(text.contains("recorded with content"), "{text}");
    // Garbage never panics.
    let mut s = Stream::derive(1, &[]);
    for _ in 0..300 {
        let mut g = good.clone();
        let at = s.below(g.len() as u32) as usize;
        g[at] = s.next_u32() as u8;
        let _ = Replay::decode(&g);
    }
}

/// An injected non-determinism (a system that differs on one peer) is located automatically
/// to frame, subsystem, entity and field.
#[test]
fn injected_nondeterminism_is_located() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static CHEAT: AtomicBool = AtomicBool::new(false);
    // Peer B runs the same world but one frame its health is nudged (as a bug would).
    let net = EmulatedNetwork::new(NetConditions::PERFECT, 7);
    let mut ps = peers(&net, 2, 2, true);
    let dir = crate::common::TempDir::new("desync");
    ps[1].runner.write_desync_reports_to(&dir);
    let health = ps[0].runner.world().content().attr("Health").unwrap();
    let mut tick = 0u32;
    while ps.iter().all(|p| p.runner.stats().desyncs == 0) && tick < 2000 {
        for p in ps.iter_mut() {
            let f = p.runner.world().next_frame();
            let cheat = p.handle == 1;
            p.runner
                .advance_p2p(&mut p.session, &[(p.handle, bot(p.handle, f))], None, |w| {
                    if cheat && w.frame() == 333 && !CHEAT.swap(true, Ordering::SeqCst) {
                        let e = w.entities().next().unwrap();
                        let hp = w.base(e, health).unwrap();
                        w.set_base(e, health, hp - rollback_abilities::num::int(1));
                    }
                })
                .unwrap();
        }
        net.advance_ms(16);
        tick += 1;
    }
    let report = ps
        .iter()
        .flat_map(|p| p.runner.desync_reports())
        .next()
        .expect("a desync is reported")
        .clone();
    assert_eq!(report.frame, 340, "first checked frame after 333 (interval 10)");
    assert_eq!(report.differing_subsystems, vec![Subsystem::Attributes]);
    // Diff the two peers' dumps of that frame.
    let a = ps[0].runner.desync_report(report.frame, 0, 0, "a".into()).local_dump.unwrap();
    let b = ps[1].runner.desync_report(report.frame, 0, 0, "b".into()).local_dump.unwrap();
    let diffs = diff_dumps(&a, &b, Some(ps[0].runner.world().content())).unwrap();
    assert!(!diffs.is_empty());
    let d = diffs.iter().find(|d| d.column == "attributes").unwrap();
    assert_eq!(d.subsystem, Subsystem::Attributes);
    assert_eq!(d.entity, Some(0));
    assert_eq!(d.item, "attribute Health");
    assert!(d.field == "base" || d.field == "current", "{d:?}");
    // The dump written next to the report reads back identically.
    let written = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.path().extension().is_some_and(|x| x == "dump"));
    if let Some(file) = written {
        let back = WorldDump::read(&file.path()).unwrap();
        assert_eq!(back.frame, report.frame);
    }
}

/// The input delay changes during a match (GGRS `set_input_delay`, through `LocalPeer`): more
/// delay on one peer, less on the other; the match stays in sync and the confirmed checksums
/// agree. Network statistics are readable from the sessions.
#[test]
fn input_delay_changes_mid_match() {
    use rollback_abilities::session::{LocalMatch, MatchConfig};
    let config = MatchConfig {
        input_delay: 2,
        conditions: NetConditions {
            latency_ms: 40,
            jitter_ms: 30,
            loss_percent: 5,
            ..NetConditions::PERFECT
        },
        ..MatchConfig::default()
    };
    let mut m = LocalMatch::<SprintHitGame>::new(config, |_| arena_n(2).0).unwrap();
    for p in m.peers_mut() {
        p.runner.record(0);
    }
    m.synchronize().unwrap();
    let input = |player: usize, frame: u32, _: &World<SprintHitGame>| bot(player, frame);
    m.run(300, input).unwrap();
    m.peers_mut()[0].set_input_delay(6).unwrap();
    m.peers_mut()[1].set_input_delay(0).unwrap();
    assert_eq!(m.peers()[0].input_delay(), 6);
    m.run(900, input).unwrap();
    m.peers_mut()[0].set_input_delay(1).unwrap();
    m.run(1500, input).unwrap();
    assert!(m.confirmed_checksums_agree());
    for p in m.peers() {
        assert_eq!(p.runner.stats().desyncs, 0);
        // GGRS measures pings with its own clock and needs a second of history; whichever
        // answer it gives, the stats are reachable for the remote player.
        let remote = 1 - p.handle;
        match p.session.network_stats(remote) {
            Ok(_) | Err(ggrs::GgrsError::NotEnoughData) => {}
            Err(e) => panic!("{e}"),
        }
    }
    // A remote player's delay cannot be set.
    let p0 = &mut m.peers_mut()[0];
    assert!(p0.session.set_input_delay(1, 3).is_err());
}
