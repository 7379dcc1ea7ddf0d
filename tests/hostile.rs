//! Hostile and departing peers: every way a peer, a stray process or the network broke other
//! peers through GGRS 0.13, each as a seeded in-memory regression test. The "GGRS itself" tests
//! pin the premise: the same bytes given to a bare GGRS session panic inside it.

use crate::departures::{agree_among, survivors_agree, tally_lefts, tally_match, tally_tick};
use ggrs::{NonBlockingSocket, PlayerType, SessionBuilder};
use rollback_abilities::session::{
    EmulatedNetwork, Fault, GgrsConfig, LocalMatch, MatchConfig, NetConditions, PeerAddr,
    SessionError, SessionEvent, forge,
};
use rollback_abilities_kit::duel::{self, Duel, Input};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The bots' input: every button and stick direction in turn, different per player.
pub fn bot(player: usize, frame: u32) -> Input {
    Input {
        buttons: ((frame / 7 + player as u32) % 9) as u8,
        axis: ((frame % 200) as i32 - 100) as i8,
    }
}

/// Ordinary home-network trouble: 20 % loss, 0–30 ms jitter, duplicates and reordering.
pub const LOSSY: NetConditions = NetConditions {
    latency_ms: 10,
    jitter_ms: 30,
    loss_percent: 20,
    duplicate_percent: 5,
    reorder_percent: 5,
};

/// A synchronised duel match of `players` fighters, every peer recording its confirmed frames.
pub fn duel_match(
    players: usize,
    conditions: NetConditions,
    seed: u64,
    departure_ticks: u32,
) -> LocalMatch<Duel> {
    let config = MatchConfig {
        players,
        conditions,
        net_seed: seed,
        departure_ticks,
        ..MatchConfig::default()
    };
    let mut m = LocalMatch::<Duel>::new(config, |_| duel::new_world(seed, players)).unwrap();
    for p in m.peers_mut() {
        p.runner.record(60);
    }
    m.synchronize().unwrap();
    m
}

pub fn tick(m: &mut LocalMatch<Duel>) -> Result<(), SessionError> {
    m.tick(|p, f, _| bot(p, f), &mut [], |_| {})
}

fn ticks(m: &mut LocalMatch<Duel>, n: u32) {
    for t in 0..n {
        if let Err(e) = tick(m) {
            panic!("tick {t}: {e}");
        }
    }
}

fn frame_of<G: rollback_abilities::prelude::Game>(m: &LocalMatch<G>, peer: usize) -> u32 {
    m.peers()[peer].runner.world().next_frame()
}

pub(crate) fn faults<G: rollback_abilities::prelude::Game>(
    m: &LocalMatch<G>,
    peer: usize,
) -> Vec<Fault> {
    m.peers()[peer]
        .events()
        .iter()
        .filter_map(|e| match e {
            SessionEvent::PeerFault { fault, .. } => Some(fault.clone()),
            _ => None,
        })
        .collect()
}

/// The `Left` events a peer saw: (players, last frame).
pub fn lefts<G: rollback_abilities::prelude::Game>(
    m: &LocalMatch<G>,
    peer: usize,
) -> Vec<(Vec<usize>, Option<u32>)> {
    m.peers()[peer]
        .events()
        .iter()
        .filter_map(|e| match e {
            SessionEvent::Left { players, last_frame, .. } => Some((players.clone(), *last_frame)),
            _ => None,
        })
        .collect()
}

/// The next input message peer `from` would send to peer `to`, forged with the given payload
/// and statuses (the sender's real session number, the next frame).
fn forged_input(
    m: &LocalMatch<Duel>,
    from: usize,
    to: usize,
    statuses: &[(bool, i32)],
    bytes: Vec<u8>,
) -> ggrs::Message {
    let g = &m.peers()[to].guard;
    let magic = g.remote_magic(&PeerAddr(from as u16)).expect("an input arrived");
    let next = g.last_input_frame(&PeerAddr(from as u16)).unwrap_or(-1) + 1;
    forge::input(magic, statuses, false, next, -1, bytes)
}

pub(crate) fn send<G: rollback_abilities::prelude::Game>(
    m: &LocalMatch<G>,
    from: usize,
    to: usize,
    msg: &ggrs::Message,
) {
    let mut attacker = m.network().socket(PeerAddr(from as u16));
    attacker.send_to(&sealed(m, from, to, msg), &PeerAddr(to as u16));
}

/// `msg` as member `from` sends it to `to`: sealed with their pairwise key (a dishonest member
/// holds its own key; an off-path attacker sends on a raw socket instead).
pub(crate) fn sealed<G: rollback_abilities::prelude::Game>(
    m: &LocalMatch<G>,
    from: usize,
    to: usize,
    msg: &ggrs::Message,
) -> ggrs::Message {
    m.peers()[from].guard.seal(msg, &PeerAddr(to as u16))
}

/// A run-length payload of one repeat run `len` bytes long (GGRS's bitfield-rle).
fn huge_run(len: u64) -> Vec<u8> {
    let mut v = (len << 2) | 1;
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// Two bare GGRS peers (no guard) on the emulated network, synchronised and 30 frames in.
type Bare = ggrs::P2PSession<GgrsConfig<Duel, PeerAddr>>;
fn bare_pair(net: &EmulatedNetwork) -> Vec<Bare> {
    let mut sessions: Vec<Bare> = (0..2)
        .map(|i| {
            let mut b = SessionBuilder::<GgrsConfig<Duel, PeerAddr>>::new()
                .with_num_players(2)
                .unwrap()
                .with_max_prediction_window(8);
            for j in 0..2 {
                let t = if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j)) };
                b = b.add_player(t, j as usize).unwrap();
            }
            b.start_p2p_session(net.socket(PeerAddr(i))).unwrap()
        })
        .collect();
    for _ in 0..200 {
        for s in &mut sessions {
            s.poll_remote_clients();
        }
        net.advance_ms(5);
    }
    for f in 0..30 {
        for (i, s) in sessions.iter_mut().enumerate() {
            s.add_local_input(i, bot(i, f)).unwrap();
            bare_fulfil(s.advance_frame().unwrap());
        }
        net.advance_ms(16);
    }
    sessions
}

/// Fulfils a bare session's requests (saves record the frame; no world behind them).
fn bare_fulfil(requests: Vec<ggrs::GgrsRequest<GgrsConfig<Duel, PeerAddr>>>) {
    for r in requests {
        if let ggrs::GgrsRequest::SaveGameState { cell, frame } = r {
            let saved =
                rollback_abilities::session::SavedFrame { frame: frame as u32, checksum: 0 };
            cell.save(frame, Some(saved), None);
        }
    }
}

/// Sends `bytes` as player 1's next input to a bare GGRS peer 0; whether GGRS panicked.
fn bare_ggrs_panics_on(statuses: impl Fn(i32) -> Vec<(bool, i32)>, bytes: Vec<u8>) -> bool {
    let net = EmulatedNetwork::new(NetConditions::PERFECT, 3);
    let mut sessions = bare_pair(&net);
    // Player 1's magic toward peer 0, read off a message it sends.
    let mut spy = net.socket(PeerAddr(0));
    sessions[1].add_local_input(1, bot(1, 30)).unwrap();
    bare_fulfil(sessions[1].advance_frame().unwrap());
    net.advance_ms(16);
    let spied = spy.receive_all_messages();
    let magic = spied.iter().find_map(|(_, m)| forge::magic_of(m)).expect("peer 1 sent something");
    let mut attacker = net.socket(PeerAddr(1));
    for (_, m) in &spied {
        attacker.send_to(m, &PeerAddr(0)); // pass them on: peer 0 now has frame 30
    }
    // Peer 0 simulates frame 30 (predicting player 1), then the forgery arrives: player 1's
    // next input (frame 31) with the given statuses, `last` being player 1's last real frame.
    net.advance_ms(16);
    sessions[0].add_local_input(0, bot(0, 30)).unwrap();
    bare_fulfil(sessions[0].advance_frame().unwrap());
    let last = 30;
    let msg = forge::input(magic, &statuses(last), false, last + 1, -1, bytes);
    attacker.send_to(&msg, &PeerAddr(0));
    net.advance_ms(16);
    let s = &mut sessions[0];
    catch_unwind(AssertUnwindSafe(|| {
        for f in 31..40 {
            s.add_local_input(0, bot(0, f)).unwrap();
            if let Ok(r) = s.advance_frame() {
                bare_fulfil(r);
            }
        }
    }))
    .is_err()
}

#[test]
fn ggrs_itself_panics_on_a_one_byte_payload_and_on_a_forged_status() {
    assert!(bare_ggrs_panics_on(|last| vec![(false, last), (false, last)], vec![0x80]));
    // "Player 1 left after frame 30", arriving when peer 0 is at frame 31.
    assert!(bare_ggrs_panics_on(|last| vec![(false, last), (true, last)], Vec::new()));
}

#[test]
fn a_one_byte_input_payload_is_a_fault_not_a_panic() {
    let mut m = duel_match(2, NetConditions::PERFECT, 1, 0);
    ticks(&mut m, 30);
    let msg = forged_input(&m, 1, 0, &[(false, 29), (false, 29)], vec![0x80]);
    send(&m, 1, 0, &msg);
    ticks(&mut m, 30);
    let f = faults(&m, 0);
    assert!(f.iter().any(|f| matches!(f, Fault::BadInputEncoding { .. })), "{f:?}");
    assert!(frame_of(&m, 0) >= 58 && m.confirmed_checksums_agree());
}

#[test]
fn a_run_length_of_two_to_the_forty_is_refused_without_allocating() {
    // Bare GGRS allocates 2^40 bytes for this payload and aborts the process.
    let mut m = duel_match(2, NetConditions::PERFECT, 2, 0);
    ticks(&mut m, 30);
    let msg = forged_input(&m, 1, 0, &[(false, 29), (false, 29)], huge_run(1 << 40));
    send(&m, 1, 0, &msg);
    ticks(&mut m, 30);
    let f = faults(&m, 0);
    assert!(
        f.contains(&Fault::BadInputEncoding {
            what: "decodes to more bytes than its frames can hold"
        }),
        "{f:?}"
    );
    assert!(frame_of(&m, 0) >= 58 && m.confirmed_checksums_agree());
}

#[test]
fn forged_player_left_claims_never_reach_ggrs() {
    for players in [2, 3] {
        let mut m = duel_match(players, NetConditions::PERFECT, 4, 0);
        ticks(&mut m, 40);
        let now = frame_of(&m, 0) as i32;
        // "The last player left one frame ago" (bare GGRS: must load frame in the past) and
        // "…long ago" (input_queue.rs:140 with three players).
        for claim in [now - 1, now - 30, 0] {
            let mut statuses = vec![(false, now); players];
            statuses[players - 1] = (true, claim);
            let msg = forged_input(&m, 0, 1, &statuses, Vec::new());
            send(&m, 0, 1, &msg);
            ticks(&mut m, 2);
        }
        ticks(&mut m, 60);
        assert!(m.peers()[1].guard.stats().rewritten >= 3);
        assert!(lefts(&m, 1).is_empty(), "nobody left: {:?}", lefts(&m, 1));
        assert!(frame_of(&m, 1) >= 95, "{}", frame_of(&m, 1));
        assert!(m.confirmed_checksums_agree());
    }
}

#[test]
fn a_process_on_a_departed_peers_port_is_refused_whatever_magic_it_tries() {
    let mut m = duel_match(3, NetConditions::PERFECT, 5, 60);
    ticks(&mut m, 30);
    m.stop(2); // it quit; the impostor binds its port
    let mut impostor = m.network().socket(PeerAddr(2));
    // Every session number, each with a forged "player 0 left" and a malformed payload.
    for chunk in 0..64u32 {
        for magic in chunk * 1024..(chunk + 1) * 1024 {
            let now = frame_of(&m, 0) as i32;
            let msg = forge::input(
                magic as u16,
                &[(true, now - 1), (false, now), (false, now)],
                false,
                now,
                -1,
                vec![0x80],
            );
            impostor.send_to(&msg, &PeerAddr(0));
        }
        tick(&mut m).unwrap();
    }
    ticks(&mut m, 120);
    // Nothing ties a wrong session number to a member (anyone can forge a source address):
    // dropped and counted, never a fault of its own; past the sender's fair share the rest are
    // dropped unread (a flood).
    let stats = m.peers()[0].guard.stats();
    assert!(stats.unattributed + stats.unauthenticated > 0 && stats.dropped >= 60_000, "{stats:?}");
    let f = faults(&m, 0);
    assert!(f.iter().all(|f| matches!(f, Fault::Flood { .. } | Fault::Banned)), "{f:?}");
    // Player 2 left; 0 and 1 agreed on its last frame and carry on together.
    assert_eq!(lefts(&m, 0), lefts(&m, 1));
    assert_eq!(lefts(&m, 0).len(), 1);
    assert!(frame_of(&m, 0) >= 150 && frame_of(&m, 1) >= 150);
    assert!(m.confirmed_checksums_agree());
}

/// Runs a match in which `leaver` leaves at `at`; returns whether the survivors agreed.
pub fn departure(players: usize, seed: u64, conditions: NetConditions) -> Result<(), String> {
    let mut m = duel_match(players, conditions, seed, 120);
    let leaver = (seed as usize * 7 + 1) % players;
    let at = 150 + (seed * 37 % 300) as u32;
    let mut gone = false;
    for t in 0..1000 {
        if !gone && frame_of(&m, leaver) >= at {
            m.leave(leaver);
            gone = true;
        }
        tick(&mut m).map_err(|e| format!("tick {t}: {e}"))?;
    }
    let survivors: Vec<usize> = (0..players).filter(|p| *p != leaver).collect();
    let first = lefts(&m, survivors[0]);
    if first.len() != 1 || first[0].0 != vec![leaver] {
        return Err(format!("survivor {} saw {:?}", survivors[0], first));
    }
    for &s in &survivors {
        if lefts(&m, s) != first {
            return Err(format!("survivors disagree: {:?} vs {:?}", lefts(&m, s), first));
        }
        // 1000 ticks: the departure wait (120 ticks) and the agreement cost about 150.
        if frame_of(&m, s) < 800 {
            return Err(format!("survivor {s} stuck at {}", frame_of(&m, s)));
        }
        if m.peers()[s].runner.stats().desyncs > 0 {
            return Err(format!("survivor {s} saw desyncs"));
        }
    }
    if !m.confirmed_checksums_agree() {
        return Err("confirmed checksums differ".into());
    }
    Ok(())
}

#[test]
fn a_player_leaving_a_three_or_four_player_match_under_loss() {
    // Before: 3 peers at 20 % loss crashed the others in 14 of 30 seeds (sync_layer.rs:238),
    // 4 peers in 9 of 20; with a longer GGRS timeout 7 of 12.
    for players in [3, 4] {
        for seed in 0..12 {
            if let Err(e) = departure(players, seed, LOSSY) {
                panic!("{players} players, seed {seed}: {e}");
            }
        }
    }
}

#[test]
fn kicking_a_connected_player_works() {
    // Before: `disconnect_player` one frame after the player's last input panicked (10 of 10
    // seeds at 20–30 ms).
    for seed in 0..10 {
        let c = NetConditions { latency_ms: 20, jitter_ms: 10, ..NetConditions::PERFECT };
        let mut m = duel_match(2, c, seed, 0);
        ticks(&mut m, 100 + seed as u32);
        let p = &mut m.peers_mut()[0];
        p.kick(1).unwrap();
        ticks(&mut m, 200);
        assert_eq!(lefts(&m, 0).len(), 1, "seed {seed}");
        assert!(frame_of(&m, 0) >= 290, "seed {seed}: {}", frame_of(&m, 0));
    }
    // Three players: both who stay kick the third (one member's kick is that member's own
    // decision, never the others'), and they agree on its last frame.
    for seed in 0..6 {
        let mut m = duel_match(3, LOSSY, seed, 0);
        ticks(&mut m, 120);
        for k in [0, 1] {
            let p = &mut m.peers_mut()[k];
            p.kick(2).unwrap();
        }
        ticks(&mut m, 300);
        assert_eq!(lefts(&m, 0), lefts(&m, 1), "seed {seed}");
        assert_eq!(lefts(&m, 0).len(), 1, "seed {seed}");
        assert!(frame_of(&m, 0) >= 300 && frame_of(&m, 1) >= 300, "seed {seed}");
        let c0 = m.peers()[0].runner.recorder().unwrap().replay().frames.len();
        let c1 = m.peers()[1].runner.recorder().unwrap().replay().frames.len();
        assert!(c0 > 250 && c1 > 250);
        let sums = |p: usize| -> Vec<u64> {
            let r = m.peers()[p].runner.recorder().unwrap().replay();
            r.frames.iter().map(|f| f.checksum).take(c0.min(c1)).collect()
        };
        assert_eq!(sums(0), sums(1), "seed {seed}");
    }
}

#[test]
fn a_peer_that_stops_advancing_is_reported_then_left_behind() {
    let mut m = duel_match(3, LOSSY, 9, 120);
    ticks(&mut m, 100);
    m.stop(1); // its socket stays on the network; it just stops
    ticks(&mut m, 400);
    for s in [0, 2] {
        let ev = m.peers()[s].events();
        assert!(
            ev.iter().any(
                |e| matches!(e, SessionEvent::Stalled { waiting_on, .. } if waiting_on == &vec![1])
            ),
            "{ev:?}"
        );
        assert!(ev.iter().any(|e| matches!(e, SessionEvent::Resumed { .. })));
        assert_eq!(lefts(&m, s).len(), 1);
    }
    assert_eq!(lefts(&m, 0), lefts(&m, 2));
    assert!(frame_of(&m, 0) >= 300 && m.confirmed_checksums_agree());
}

#[test]
fn inputs_of_the_wrong_size_are_faults_and_the_sender_is_left_behind() {
    for size in [1usize, 3] {
        let mut m = duel_match(2, NetConditions::PERFECT, 11, 120);
        ticks(&mut m, 40);
        m.stop(1);
        // Peer 1 (a modified client) now sends frames of `size` bytes (the input is 2).
        for _ in 0..200 {
            let next = m.peers()[0].guard.last_input_frame(&PeerAddr(1)).unwrap() + 1;
            let frames = vec![vec![0u8; size]];
            let msg = forged_input(
                &m,
                1,
                0,
                &[(false, next), (false, next)],
                forge::encode_inputs(&[0; 2], &frames),
            );
            send(&m, 1, 0, &msg);
            tick(&mut m).unwrap();
        }
        let f = faults(&m, 0);
        assert!(f.contains(&Fault::InputSize { expected: 2, got: size }), "{f:?}");
        assert_eq!(lefts(&m, 0).len(), 1, "size {size}");
        assert!(frame_of(&m, 0) >= 150, "size {size}: {}", frame_of(&m, 0));
    }
}

#[test]
fn desync_reports_are_bounded() {
    // Peers whose worlds differ desync every interval: a peer that lies about its checksums.
    let config = MatchConfig { players: 2, desync_interval: 10, ..MatchConfig::default() };
    let mut m = LocalMatch::<Duel>::new(config, |i| duel::new_world(i as u64, 2)).unwrap();
    m.synchronize().unwrap();
    m.peers_mut()[0].runner.set_desync_report_limit(4);
    ticks(&mut m, 600);
    let r = &m.peers()[0].runner;
    assert!(r.stats().desyncs >= 20, "{}", r.stats().desyncs);
    assert_eq!(r.desync_reports().len(), 4);
    assert!(m.peers()[1].runner.desync_reports().len() <= 8);
}

#[test]
fn stalls_are_counted_and_reported_as_stalls() {
    let c = NetConditions { latency_ms: 150, ..NetConditions::PERFECT };
    let mut m = duel_match(2, c, 12, 0);
    ticks(&mut m, 200);
    assert!(m.peers()[0].runner.stats().skipped > 0);
    // A peer that is gone for good, and no departure rule: the match says it stalled.
    m.leave(1);
    match m.run(400, |p, f, _| bot(p, f)) {
        Err(SessionError::Stalled { frame, .. }) => assert!(frame < 400),
        other => panic!("{other:?}"),
    }
    let ev = m.peers()[0].events();
    assert!(
        ev.iter().any(
            |e| matches!(e, SessionEvent::Stalled { waiting_on, .. } if waiting_on == &vec![1])
        )
    );
}

/// A fixed amount of work, so a frame takes real time (no clock is read).
fn burn(units: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..units {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

#[test]
fn a_seeded_match_is_the_same_at_any_machine_load() {
    // GGRS resends input, reports quality and keeps alive on the wall clock; in a LocalMatch the
    // guard replaces that traffic with resends on the emulated clock. A loaded run (every frame
    // takes real time) must give the same rollbacks and the same frames as an idle one.
    let run = |load: u64| {
        let mut m = duel_match(3, NetConditions::HARSH, 13, 600);
        let mut sink = 0u64;
        for _ in 0..500 {
            m.tick(|p, f, _| bot(p, f), &mut [], |_| sink = sink.wrapping_add(burn(load))).unwrap();
        }
        std::hint::black_box(sink);
        let stats: Vec<_> = m.peers().iter().map(|p| p.runner.stats()).collect();
        let frames: Vec<u64> = m.peers()[0]
            .runner
            .recorder()
            .unwrap()
            .replay()
            .frames
            .iter()
            .map(|f| f.checksum)
            .collect();
        (stats, frames)
    };
    let idle = run(0);
    let loaded = run(200_000);
    assert_eq!(idle, loaded);
}

type Session = ggrs::P2PSession<GgrsConfig<Duel, PeerAddr>>;
type Spectator = ggrs::SpectatorSession<GgrsConfig<Duel, PeerAddr>>;
type Guard = rollback_abilities::session::Guard<PeerAddr>;
type Runner = rollback_abilities::session::Runner<Duel>;
/// The two players (runner, session, guard) and the spectator's session, runner and guard.
type SpectatedMatch = (Vec<(Runner, Session, Guard)>, Spectator, Runner, Guard);

/// Two players and a spectator of player 0 (address 9), synchronised, each built the
/// documented way ([`SessionConfig`]: guarded socket, hardened GGRS, guard attached).
fn spectated_match(net: &EmulatedNetwork) -> SpectatedMatch {
    use rollback_abilities::session::SessionConfig;
    let spectator = PeerAddr(9);
    let setup = SessionConfig { input_delay: 1, desync_interval: 0, ..SessionConfig::default() };
    let mut peers = Vec::new();
    for i in 0..2u16 {
        let mut players: Vec<(usize, PlayerType<PeerAddr>)> = (0..2u16)
            .map(|j| {
                let t = if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j)) };
                (usize::from(j), t)
            })
            .collect();
        if i == 0 {
            players.push((2, PlayerType::Spectator(spectator)));
        }
        let mut runner = setup.runner(duel::new_world(8, 2));
        let (session, guard) =
            setup.start_p2p(&mut runner, net.socket(PeerAddr(i)), players).unwrap();
        runner.record(0);
        peers.push((runner, session, guard));
    }
    let mut spec = setup.runner(duel::new_world(8, 2));
    let (mut spec_session, spec_guard) =
        setup.start_spectator(&mut spec, net.socket(spectator), PeerAddr(0)).unwrap();
    spec.record(0);
    for _ in 0..2000 {
        for (_, s, _) in peers.iter_mut() {
            s.poll_remote_clients();
        }
        spec_session.poll_remote_clients();
        net.advance_ms(5);
    }
    (peers, spec_session, spec, spec_guard)
}

#[test]
fn spectators_and_their_host_are_guarded_both_ways() {
    use rollback_abilities::session::Runner;
    let net = EmulatedNetwork::new(NetConditions { latency_ms: 20, ..NetConditions::PERFECT }, 8);
    let spectator = PeerAddr(9);
    let (mut peers, mut spec_session, mut spec, spec_guard) = spectated_match(&net);
    let mut attacker_as_spectator = net.socket(spectator);
    let mut attacker_as_host = net.socket(PeerAddr(0));
    for t in 0..600u32 {
        if t % 50 == 10 {
            // A spectator never sends input (GGRS asserts on it), and a one-byte payload: each
            // sealed with the sender's own key (a dishonest spectator, a dishonest host).
            let m = forge::input(0, &[(false, 0), (false, 0)], false, 0, -1, vec![0x80]);
            attacker_as_spectator.send_to(&spec_guard.seal(&m, &PeerAddr(0)), &PeerAddr(0));
            let magic = spec_guard.remote_magic(&PeerAddr(0)).unwrap_or(0);
            let next = spec_guard.last_input_frame(&PeerAddr(0)).unwrap_or(-1) + 1;
            let m = forge::input(magic, &[(false, next), (true, 0)], false, next, -1, vec![0x80]);
            attacker_as_host.send_to(&peers[0].2.seal(&m, &spectator), &spectator);
        }
        for (i, (r, s, _)) in peers.iter_mut().enumerate() {
            let f = r.world().next_frame() + 1;
            r.advance_p2p(s, &[(i, bot(i, f))], None, |_| {}).unwrap();
        }
        spec.advance_spectator(&mut spec_session, None, |_| {}).unwrap();
        net.advance_ms(16);
    }
    let faults_of = |r: &mut Runner<Duel>| -> Vec<Fault> {
        r.drain_events()
            .into_iter()
            .filter_map(|e| match e {
                SessionEvent::PeerFault { fault, .. } => Some(fault),
                _ => None,
            })
            .collect()
    };
    let host_faults = faults_of(&mut peers[0].0);
    assert!(host_faults.contains(&Fault::UnexpectedInput), "{host_faults:?}");
    let spec_faults = faults_of(&mut spec);
    assert!(
        spec_faults.iter().any(|f| matches!(f, Fault::BadInputEncoding { .. })),
        "{spec_faults:?}"
    );
    let (host, follower) = (recorded_sums(&peers[0].0), recorded_sums(&spec));
    let n = host.len().min(follower.len());
    assert!(n > 500, "spectator saw {} frames, host confirmed {}", follower.len(), host.len());
    assert_eq!(follower[..n], host[..n]);
}

#[test]
fn a_network_that_delivers_almost_nothing_never_hangs_a_peer() {
    // At 90 % loss peers give up on each other; departure agreements that cannot complete (a
    // survivor stopped answering mid-agreement) end with that survivor leaving too, so every
    // peer plays on, alone if need be, instead of waiting forever.
    for seed in 1..4 {
        let c = NetConditions {
            latency_ms: 40,
            jitter_ms: 12,
            loss_percent: 90,
            ..NetConditions::PERFECT
        };
        let mut m = duel_match(3, c, seed, 120);
        ticks(&mut m, 3000);
        let before: Vec<u32> = (0..3).map(|p| frame_of(&m, p)).collect();
        ticks(&mut m, 1000);
        for (p, &at) in before.iter().enumerate() {
            // Limping along together for a while (the paced resends get a frame through now
            // and then), then on their own at full speed: 1000 more ticks, ~1000 more frames.
            let now = frame_of(&m, p);
            assert!(at > 1500, "seed {seed}: peer {p} at frame {at} after 3000 ticks");
            assert!(now - at >= 900, "seed {seed}: peer {p} went from frame {at} to {now}");
            let ev = m.peers()[p].events();
            let leaving = ev.iter().filter(|e| matches!(e, SessionEvent::Leaving { .. })).count();
            let left = ev.iter().filter(|e| matches!(e, SessionEvent::Left { .. })).count();
            assert_eq!(leaving, left, "seed {seed}: peer {p}: {ev:?}");
        }
    }
}

#[test]
fn a_player_who_quits_is_agreed_on_at_once() {
    // A peer that quits tells the others, who agree on its last frame without waiting their
    // departure time (600 ticks here, more than the whole test).
    for (players, seed) in [(2, 1), (3, 2), (4, 3), (8, 4)] {
        let mut m = duel_match(players, LOSSY, seed, 600);
        ticks(&mut m, 200);
        let quitter = players - 1;
        m.quit(quitter).unwrap();
        ticks(&mut m, 150);
        let survivors: Vec<usize> = (0..quitter).collect();
        for &s in &survivors {
            assert_eq!(lefts(&m, s).len(), 1, "{players} players: survivor {s}");
            assert_eq!(lefts(&m, s), lefts(&m, 0), "{players} players");
            assert!(
                frame_of(&m, s) >= 300,
                "{players} players: survivor {s} at {}",
                frame_of(&m, s)
            );
        }
        assert!(m.confirmed_checksums_agree(), "{players} players");
    }
}

#[test]
fn a_lying_survivor_cannot_stall_or_break_a_departure() {
    // Player 1 quits before sending any input; a liar speaking as player 2 tells player 0 that
    // it holds player 1's input up to frame 2^31 - 1, and relays "player 1's first frames" from
    // frame 2 000 000 000 (GGRS would fill every frame before it).
    let mut m = duel_match(3, NetConditions::PERFECT, 21, 60);
    m.stop(1);
    ticks(&mut m, 5);
    let magic = m.peers()[0].guard.remote_magic(&PeerAddr(2)).expect("player 2 sent input");
    for _ in 0..3 {
        send(&m, 2, 0, &forge::depart(magic, 1, i32::MAX));
        send(&m, 2, 0, &forge::relay(magic, 1, 2_000_000_000, vec![vec![0, 0]; 32]));
        tick(&mut m).unwrap();
    }
    ticks(&mut m, 300);
    let f = faults(&m, 0);
    assert!(f.contains(&Fault::BadDepartureMessage { what: "claims input far ahead" }), "{f:?}");
    assert!(
        f.contains(&Fault::BadDepartureMessage { what: "relays a first frame far ahead" }),
        "{f:?}"
    );
    assert_eq!(lefts(&m, 0), lefts(&m, 2));
    assert_eq!(lefts(&m, 0).len(), 1);
    assert!(frame_of(&m, 0) >= 150 && m.confirmed_checksums_agree());
}

/// Every peer still playing reached `min_frame`, and any two of them neither of which saw the
/// other leave saw the same departures and confirmed the same checksums (peers that part ways
/// may report desyncs with each other before they do).
fn parts_agree<G: rollback_abilities::prelude::Game>(
    m: &LocalMatch<G>,
    min_frame: u32,
) -> Result<(), String> {
    let n = m.peers().len();
    let sums = |p: usize| -> Vec<u64> {
        let r = m.peers()[p].runner.recorder().map(|r| r.replay().frames.clone());
        r.unwrap_or_default().iter().map(|f| f.checksum).collect()
    };
    let saw_leave = |a: usize, b: usize| lefts(m, a).iter().any(|(p, _)| p.contains(&b));
    for a in 0..n {
        if m.peers()[a].has_left() {
            continue;
        }
        if frame_of(m, a) < min_frame {
            return Err(format!("peer {a} stuck at {}", frame_of(m, a)));
        }
        for b in a + 1..n {
            if m.peers()[b].has_left() || saw_leave(a, b) || saw_leave(b, a) {
                continue;
            }
            let (sa, sb) = (sums(a), sums(b));
            let k = sa.len().min(sb.len());
            let sorted = |p: usize| {
                let mut l = lefts(m, p);
                l.sort();
                l
            };
            if sa[..k] != sb[..k] || sorted(a) != sorted(b) {
                return Err(format!(
                    "peers {a} and {b} play on together but disagree: {:?} vs {:?}, checksums {}",
                    lefts(m, a),
                    lefts(m, b),
                    if sa[..k] == sb[..k] { "agree" } else { "differ" }
                ));
            }
        }
    }
    Ok(())
}

/// The sessions of a match never break: every tick of every peer succeeds.
fn ticks_ok(m: &mut LocalMatch<Duel>, n: u32, mut each: impl FnMut(&mut LocalMatch<Duel>)) {
    for t in 0..n {
        each(m);
        if let Err(e) = tick(m) {
            panic!("tick {t}: {e}");
        }
    }
}

#[test]
fn a_member_sending_valid_input_far_ahead_is_faulted_and_closes_no_session() {
    // GGRS's input queue holds 128 frames and asserts past them: a member whose well-formed
    // messages run 100 frames past its last one each tick closed its peer's session.
    for seed in 0..4 {
        let mut m = duel_match(3, NetConditions::PERFECT, seed, 120);
        ticks(&mut m, 40);
        ticks_ok(&mut m, 200, |m| {
            let next = m.peers()[0].guard.last_input_frame(&PeerAddr(2)).unwrap() + 1;
            let frames = vec![vec![0u8; 2]; 100];
            let statuses = [(false, next + 99); 3];
            let msg = forged_input(m, 2, 0, &statuses, forge::encode_inputs(&[0; 2], &frames));
            send(m, 2, 0, &msg);
        });
        let f = faults(&m, 0);
        assert!(f.iter().any(|f| matches!(f, Fault::InputAhead { .. })), "seed {seed}: {f:?}");
        // Peer 0's view of player 2 never ran past what player 2 really sent.
        let claimed = m.peers()[0].guard.last_input_frame(&PeerAddr(2)).unwrap();
        assert!(claimed <= frame_of(&m, 2) as i32 + 40, "seed {seed}: {claimed}");
        // Peer 0 banned player 2; player 1, which player 2 never wronged, keeps hearing it and
        // does not drop it on peer 0's word: the match parts, and each part plays on agreed.
        ticks_ok(&mut m, 600, |_| {});
        parts_agree(&m, 400).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
}

#[test]
fn forged_quality_replies_are_dropped_and_break_nothing() {
    // GGRS computes the round trip as `now − pong` and multiplies it: a pong of 0 overflows
    // (debug builds close the session) or claims a round trip of decades.
    let mut m = duel_match(2, NetConditions::PERFECT, 3, 120);
    ticks(&mut m, 30);
    ticks_ok(&mut m, 120, |m| {
        let magic = m.peers()[0].guard.remote_magic(&PeerAddr(1)).unwrap();
        for pong in [0u128, 1, u128::MAX / 2] {
            send(m, 1, 0, &forge::quality_reply(magic, pong));
        }
    });
    let stats = m.peers()[0].guard.stats();
    assert!(stats.implausible >= 360, "{stats:?}");
    assert!(faults(&m, 0).is_empty(), "{:?}", faults(&m, 0));
    assert!(frame_of(&m, 0) >= 140, "{}", frame_of(&m, 0));
    assert!(m.confirmed_checksums_agree());
}

#[test]
fn inflated_time_sync_reports_never_ask_a_game_to_wait_long() {
    // A report claiming `frame_advantage: i16::MAX` each tick made GGRS recommend waiting
    // 16,380 frames; the examples obeyed and froze.
    let mut m = duel_match(2, NetConditions::PERFECT, 4, 120);
    ticks(&mut m, 30);
    ticks_ok(&mut m, 400, |m| {
        let magic = m.peers()[0].guard.remote_magic(&PeerAddr(1)).unwrap();
        send(m, 1, 0, &forge::quality(magic, i16::MAX, 0));
    });
    let waits: Vec<u32> = m.peers()[0]
        .events()
        .iter()
        .filter_map(|e| match e {
            SessionEvent::WaitRecommendation(n) => Some(*n),
            _ => None,
        })
        .collect();
    assert!(!waits.is_empty(), "the reports reached GGRS's time sync");
    assert!(waits.iter().all(|n| *n <= 8), "{waits:?}");
    assert!(m.peers()[0].guard.stats().implausible >= 400);
}

#[test]
fn datagrams_with_a_wrong_session_number_from_a_live_players_address_get_nobody_banned() {
    // Without the session number, anyone who can forge a source address sent 64 datagrams
    // "from" a live player: its peer banned it, and the ban made everyone drop it.
    for seed in 0..3 {
        let mut m = duel_match(3, NetConditions::PERFECT, seed, 120);
        ticks(&mut m, 30);
        ticks_ok(&mut m, 100, |m| {
            let magic = m.peers()[0].guard.remote_magic(&PeerAddr(1)).unwrap();
            for k in 1..=4u16 {
                send(m, 1, 0, &forge::keep_alive(magic.wrapping_add(k)));
                send(m, 1, 0, &forge::depart(magic.wrapping_add(k), 1, 0));
            }
        });
        assert!(faults(&m, 0).is_empty(), "seed {seed}: {:?}", faults(&m, 0));
        for p in 0..3 {
            assert!(lefts(&m, p).is_empty(), "seed {seed}: peer {p}: {:?}", lefts(&m, p));
        }
        assert!(m.peers()[0].guard.stats().unattributed >= 800, "seed {seed}");
        assert!(m.confirmed_checksums_agree(), "seed {seed}");
    }
}

#[test]
fn an_off_path_attacker_with_the_session_number_gets_nobody_faulted_or_banned() {
    // Anyone who can forge a live player's source address and tries the 65,536 session
    // numbers sends, "from" it, malformed input and a flood of keep-alives with the right
    // number: its peer faulted the player, banned it, and the ban made everyone drop it. Every
    // datagram of a member now carries an authenticator made with a key only it and its peer
    // hold: the forgeries are dropped unread, and nobody's faults, fair share or ban count them.
    for seed in 0..3 {
        let mut m = duel_match(3, NetConditions::PERFECT, seed, 120);
        ticks(&mut m, 30);
        ticks_ok(&mut m, 100, |m| {
            let magic = m.peers()[0].guard.remote_magic(&PeerAddr(1)).unwrap();
            let now = frame_of(m, 0) as i32;
            let mut spoofer = m.network().socket(PeerAddr(1));
            let garbage = forge::input(magic, &[(false, now); 3], false, now, -1, vec![0x80]);
            for _ in 0..4 {
                spoofer.send_to(&garbage, &PeerAddr(0));
                spoofer.send_to(&forge::depart(magic, 2, now + 1), &PeerAddr(0));
            }
            for _ in 0..400 {
                spoofer.send_to(&forge::keep_alive(magic), &PeerAddr(0));
            }
        });
        assert!(faults(&m, 0).is_empty(), "seed {seed}: {:?}", faults(&m, 0));
        for p in 0..3 {
            assert!(lefts(&m, p).is_empty(), "seed {seed}: peer {p}: {:?}", lefts(&m, p));
        }
        let stats = m.peers()[0].guard.stats();
        assert!(stats.unauthenticated >= 100 * 408, "seed {seed}: {stats:?}");
        assert!(frame_of(&m, 0) >= 110 && frame_of(&m, 1) >= 110, "seed {seed}");
        assert!(m.confirmed_checksums_agree(), "seed {seed}");
    }
}

#[test]
fn host_frames_beyond_a_spectators_buffer_never_break_it() {
    // GGRS's spectator keeps 60 frames of the host's input. A spectator whose game paused for
    // 100 frames (a throttled background tab) while the host played on received 100 frames
    // at once: they overwrote frames it still needed, and every later call failed with
    // `SpectatorTooFarBehind`. Its guard now cuts what does not fit; the host sends it again.
    let net = EmulatedNetwork::new(NetConditions { latency_ms: 20, ..NetConditions::PERFECT }, 8);
    let (mut peers, mut spec_session, mut spec, spec_guard) = spectated_match(&net);
    for t in 0..700u32 {
        for (i, (r, s, _)) in peers.iter_mut().enumerate() {
            let f = r.world().next_frame() + 1;
            r.advance_p2p(s, &[(i, bot(i, f))], None, |_| {}).unwrap();
        }
        if !(100..200).contains(&t)
            && let Err(e) = spec.advance_spectator(&mut spec_session, None, |_| {})
        {
            panic!("tick {t}: the spectator broke: {e}");
        }
        net.advance_ms(16);
    }
    assert!(spec_guard.stats().deferred >= 1, "{:?}", spec_guard.stats());
    let (host, follower) = (recorded_sums(&peers[0].0), recorded_sums(&spec));
    assert!(
        follower.len() > 550,
        "the spectator caught up to {} of {}",
        follower.len(),
        host.len()
    );
    assert_eq!(follower[..], host[..follower.len()]);
}

#[test]
fn a_flood_under_the_per_poll_limit_is_faulted_and_the_flooder_leaves() {
    // 1,000 well-formed messages a tick, just under the per-poll limit, were never faulted and
    // cost the victim milliseconds of every frame. A sender gets a fair share of messages per
    // poll (GGRS sends a handful a frame); past it they are dropped unread and faulted.
    let mut m = duel_match(3, NetConditions::PERFECT, 6, 120);
    ticks(&mut m, 30);
    ticks_ok(&mut m, 200, |m| {
        let magic = m.peers()[0].guard.remote_magic(&PeerAddr(2)).unwrap();
        let ka = forge::keep_alive(magic);
        let mut flooder = m.network().socket(PeerAddr(2));
        for _ in 0..1000 {
            flooder.send_to(&sealed(m, 2, 0, &ka), &PeerAddr(0));
        }
    });
    let f = faults(&m, 0);
    assert!(f.iter().any(|f| matches!(f, Fault::Flood { .. })), "{f:?}");
    assert!(f.contains(&Fault::Banned), "{f:?}");
    // Peer 0 banned the flooder; peer 1, which it never flooded, does not drop it on peer 0's
    // word: the match parts, and each part plays on agreed.
    ticks_ok(&mut m, 600, |_| {});
    parts_agree(&m, 500).unwrap();
    // What reached the guard's checks stayed within the fair share.
    let stats = m.peers()[0].guard.stats();
    assert!(stats.dropped >= 150_000, "{stats:?}");
}

#[test]
fn an_inflated_claim_to_hold_a_leavers_input_is_refused() {
    // A member claiming to hold a crashed player's input up to 280 frames past the session's
    // frame, and never relaying it, held the agreement up until every survivor gave up on the
    // others and played alone.
    let mut m = duel_match(4, NetConditions::PERFECT, 31, 60);
    ticks(&mut m, 40);
    m.leave(1);
    let mut sent = 0;
    ticks_ok(&mut m, 400, |m| {
        // Twenty claims, fewer than a ban takes: the liar stays a member.
        if sent < 20 {
            sent += 1;
            let magic = m.peers()[0].guard.remote_magic(&PeerAddr(3)).unwrap();
            let now = frame_of(m, 0) as i32;
            send(m, 3, 0, &forge::depart(magic, 1, now + 280));
        }
    });
    let f = faults(&m, 0);
    assert!(f.contains(&Fault::BadDepartureMessage { what: "claims input far ahead" }), "{f:?}");
    for p in [0, 2, 3] {
        assert_eq!(lefts(&m, p).len(), 1, "peer {p}: {:?}", lefts(&m, p));
        assert_eq!(lefts(&m, p), lefts(&m, 0));
        assert!(frame_of(&m, p) >= 300, "peer {p}: {}", frame_of(&m, p));
    }
    assert!(m.confirmed_checksums_agree());
}

#[test]
fn a_forged_player_left_claim_drops_nobody() {
    // A member tells one peer "player 2 left", in both forms of the departure protocol, for a
    // second while player 2 plays: the honest peers dropped player 2 at different frames and
    // desynced. Another member's word now only makes a peer look: player 2 still sends.
    for seed in 0..3 {
        let mut m = tally_match(4, LOSSY, seed, 120).unwrap();
        for _ in 0..60 {
            tally_tick(&mut m, seed).unwrap();
        }
        for t in 0..300 {
            if t < 60 {
                let g = &m.peers()[0].guard;
                let magic = g.remote_magic(&PeerAddr(3)).unwrap();
                let have = g.last_input_frame(&PeerAddr(2)).unwrap_or(-1);
                send(&m, 3, 0, &forge::depart(magic, 2, have));
                send(&m, 3, 0, &forge::depart_in(magic, &[2], 2, have, 0));
            }
            tally_tick(&mut m, seed).unwrap_or_else(|e| panic!("seed {seed}, tick {t}: {e}"));
        }
        if let Err(e) = survivors_agree(&m, &[0, 1, 2, 3], 0, 320) {
            panic!("seed {seed}: {e}");
        }
    }
}

#[test]
fn forged_relays_of_a_crashed_players_input_split_no_survivors() {
    // Player 1 crashes; the member at player 3 relays made-up frames of player 1's input, one
    // set to peer 0 and another to peer 2 (from the frame after the last each holds), and
    // claims to hold them. The survivors took them as player 1's and disagreed on its input.
    for seed in 0..4 {
        let mut m = tally_match(4, LOSSY, seed, 120).unwrap();
        for _ in 0..80 {
            tally_tick(&mut m, seed).unwrap();
        }
        m.leave(1);
        for t in 0..900 {
            if t < 240 {
                for (to, fake) in [(0, 7u8), (2, 9u8)] {
                    let g = &m.peers()[to].guard;
                    let (Some(magic), Some(last)) =
                        (g.remote_magic(&PeerAddr(3)), g.last_input_frame(&PeerAddr(1)))
                    else {
                        continue;
                    };
                    let frames = vec![vec![fake]; 32];
                    let digest = forge::digest_of(last + 32, &frames);
                    send(&m, 3, to, &forge::relay_in(magic, &[1], 1, last + 1, frames.clone()));
                    send(&m, 3, to, &forge::relay(magic, 1, last + 1, frames));
                    send(&m, 3, to, &forge::depart_in(magic, &[1], 1, last + 32, digest));
                }
            }
            tally_tick(&mut m, seed).unwrap_or_else(|e| panic!("seed {seed}, tick {t}: {e}"));
        }
        // Every survivor saw player 1 leave; survivors that play on together agree (without
        // signed inputs, a lie about which frames are player 1's can only make them part).
        parts_agree(&m, 500).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for p in [0, 2, 3] {
            let lefts = tally_lefts(&m, p);
            assert!(lefts.iter().any(|(p, _)| p == &vec![1]), "seed {seed}: {lefts:?}");
        }
    }
}

#[test]
fn relays_chained_far_past_the_session_frame_are_refused() {
    // Player 1 crashes; the member at player 3 relays the same made-up frames of player 1's
    // input to both honest survivors, a contiguous chunk a tick, running hundreds of frames past
    // the session's frame: more than any survivor may claim to hold, and more than GGRS's input
    // queue holds. Each such relay is a fault (like an inflated claim), and the honest survivors
    // play on together and agree.
    for seed in 0..3 {
        let mut m = tally_match(4, LOSSY, seed, 120).unwrap();
        for _ in 0..80 {
            tally_tick(&mut m, seed).unwrap();
        }
        m.leave(1);
        let mut next = [None::<i32>; 4];
        for t in 0..900 {
            if t < 40 {
                for to in [0, 2] {
                    let g = &m.peers()[to].guard;
                    let (Some(magic), Some(last)) =
                        (g.remote_magic(&PeerAddr(3)), g.last_input_frame(&PeerAddr(1)))
                    else {
                        continue;
                    };
                    let start = *next[to].get_or_insert(last + 1);
                    send(&m, 3, to, &forge::relay_in(magic, &[1], 1, start, vec![vec![7u8]; 32]));
                    next[to] = Some(start + 32);
                }
            }
            tally_tick(&mut m, seed).unwrap_or_else(|e| panic!("seed {seed}, tick {t}: {e}"));
        }
        assert!(next[0].is_some_and(|n| n > 80 + 400), "seed {seed}: the relays ran far ahead");
        let f = faults(&m, 0);
        let far = Fault::BadDepartureMessage { what: "relays input far ahead" };
        assert!(f.contains(&far), "seed {seed}: {f:?}");
        agree_among(&m, &[0, 2], 500).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let lefts = tally_lefts(&m, 0);
        assert!(lefts.iter().any(|(p, _)| p == &vec![1]), "seed {seed}: {lefts:?}");
        assert!(!m.peers()[0].has_left() && !m.peers()[2].has_left(), "seed {seed}");
    }
}

#[test]
fn an_inflated_claim_never_relayed_leaves_no_honest_player_alone() {
    // Player 1 crashes; the member at player 3 claims to hold its input up to 40 and 280
    // frames past the session's frame and never relays it. The agreement waited for frames
    // that never came until every survivor gave up on every other and played alone.
    for seed in 0..3 {
        let mut m = tally_match(4, LOSSY, seed, 120).unwrap();
        for _ in 0..60 {
            tally_tick(&mut m, seed).unwrap();
        }
        m.leave(1);
        for t in 0..600 {
            if t < 40 {
                let g = &m.peers()[0].guard;
                let magic = g.remote_magic(&PeerAddr(3)).unwrap();
                let now = m.peers()[0].runner.world().next_frame() as i32;
                send(&m, 3, 0, &forge::depart_in(magic, &[1], 1, now + 40, 0));
                send(&m, 3, 0, &forge::depart(magic, 1, now + 280));
            }
            tally_tick(&mut m, seed).unwrap_or_else(|e| panic!("seed {seed}, tick {t}: {e}"));
        }
        if let Err(e) = agree_among(&m, &[0, 2], 450) {
            panic!("seed {seed}: {e}");
        }
        let lefts = tally_lefts(&m, 2);
        assert!(lefts.iter().any(|(p, _)| p == &vec![1]), "seed {seed}: {lefts:?}");
        assert!(!lefts.iter().any(|(p, _)| p == &vec![0] || p == &vec![2]), "seed {seed}");
    }
}

#[test]
fn a_spectator_whose_host_is_banned_or_gone_is_told_so() {
    // A spectator whose guard banned its host, or whose host banned it and went silent, stalled
    // for good with nothing but a stall to say so.
    for host_bans_spectator in [false, true] {
        let net =
            EmulatedNetwork::new(NetConditions { latency_ms: 20, ..NetConditions::PERFECT }, 8);
        let spectator = PeerAddr(9);
        let (mut peers, mut spec_session, mut spec, spec_guard) = spectated_match(&net);
        spec.set_departure_ticks(120);
        let mut attacker_as_spectator = net.socket(spectator);
        let mut attacker_as_host = net.socket(PeerAddr(0));
        let mut events = Vec::new();
        for t in 0..400u32 {
            if (100..110).contains(&t) {
                // Ten malformed messages a tick, 100 in all: past the ban (64 faults).
                for _ in 0..10 {
                    // Sealed with the sender's own key: a dishonest spectator, a dishonest host.
                    let (m, socket, to) = if host_bans_spectator {
                        let magic = peers[0].2.remote_magic(&spectator).unwrap_or(0);
                        let m = forge::input(magic, &[(false, 0); 2], false, 0, -1, vec![0x80]);
                        (spec_guard.seal(&m, &PeerAddr(0)), &mut attacker_as_spectator, PeerAddr(0))
                    } else {
                        let magic = spec_guard.remote_magic(&PeerAddr(0)).unwrap();
                        let next = spec_guard.last_input_frame(&PeerAddr(0)).unwrap() + 1;
                        let m =
                            forge::input(magic, &[(false, next); 2], false, next, -1, vec![0x80]);
                        (peers[0].2.seal(&m, &spectator), &mut attacker_as_host, spectator)
                    };
                    socket.send_to(&m, &to);
                }
            }
            for (i, (r, s, _)) in peers.iter_mut().enumerate() {
                let f = r.world().next_frame() + 1;
                r.advance_p2p(s, &[(i, bot(i, f))], None, |_| {}).unwrap();
            }
            spec.advance_spectator(&mut spec_session, None, |_| {}).unwrap();
            events.extend(spec.drain_events().into_iter().map(|e| (t, e)));
            net.advance_ms(16);
        }
        let case = if host_bans_spectator { "banned by its host" } else { "banning its host" };
        let gone: Vec<u32> = events
            .iter()
            .filter(|(_, e)| *e == SessionEvent::Disconnected("PeerAddr(0)".into()))
            .map(|(t, _)| *t)
            .collect();
        assert_eq!(gone.len(), 1, "{case}: {events:?}");
        let stall = events.iter().find_map(|(_, e)| match e {
            SessionEvent::Stalled { waiting_on, .. } => Some(waiting_on.clone()),
            _ => None,
        });
        assert_eq!(stall, Some(vec![0, 1]), "{case}: the spectator waits on every player");
        if host_bans_spectator {
            // Silent from the ban on: reported after the departure time.
            assert!((200..300).contains(&gone[0]), "{case}: at tick {}", gone[0]);
        } else {
            // At once.
            assert!((100..110).contains(&gone[0]), "{case}: at tick {}", gone[0]);
            assert!(
                events.iter().any(|(_, e)| matches!(
                    e,
                    SessionEvent::PeerFault { fault: Fault::Banned, .. }
                ))
            );
        }
    }
}

/// Two duel peers, each built with [`Peer::start`] on the emulated network, synchronised and
/// 30 frames in; every peer records.
fn documented_pair(
    net: &EmulatedNetwork,
    config: rollback_abilities::session::SessionConfig,
) -> Vec<rollback_abilities::session::Peer<Duel, PeerAddr>> {
    use rollback_abilities::session::Peer;
    let mut peers: Vec<Peer<Duel, PeerAddr>> = (0..2u16)
        .map(|i| {
            let players = (0..2u16).map(|j| {
                let t = if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j)) };
                (usize::from(j), t)
            });
            Peer::start(duel::new_world(5, 2), net.socket(PeerAddr(i)), players, config).unwrap()
        })
        .collect();
    for p in &mut peers {
        p.runner.record(0);
    }
    for _ in 0..2000 {
        if peers.iter_mut().map(|p| p.synchronized()).filter(|ready| !ready).count() == 0 {
            break;
        }
        net.advance_ms(5);
    }
    documented_ticks(net, &mut peers, 30, |_, _| {});
    peers
}

/// The checksums of the confirmed frames `runner` recorded.
fn recorded_sums(runner: &rollback_abilities::session::Runner<Duel>) -> Vec<u64> {
    runner.recorder().unwrap().replay().frames.iter().map(|f| f.checksum).collect()
}

/// Asserts that the peers recorded at least `at_least` confirmed frames in common and agree on
/// every one of them (`what` names the case in a failure).
fn documented_peers_agree(
    peers: &[rollback_abilities::session::Peer<Duel, PeerAddr>],
    at_least: usize,
    what: &str,
) {
    let all: Vec<Vec<u64>> = peers.iter().map(|p| recorded_sums(&p.runner)).collect();
    let n = all.iter().map(Vec::len).min().unwrap_or(0);
    assert!(n >= at_least, "{what}: {n} confirmed frames in common");
    for (i, sums) in all.iter().enumerate() {
        assert_eq!(sums[..n], all[0][..n], "{what}: peer {i} parts from peer 0");
    }
}

/// `n` ticks of every peer (every tick must succeed); `each` runs before each tick.
fn documented_ticks(
    net: &EmulatedNetwork,
    peers: &mut [rollback_abilities::session::Peer<Duel, PeerAddr>],
    n: u32,
    mut each: impl FnMut(u32, &[rollback_abilities::session::Peer<Duel, PeerAddr>]),
) {
    for t in 0..n {
        each(t, peers);
        for (i, p) in peers.iter_mut().enumerate() {
            let f = p.runner.world().next_frame() + 2;
            if let Err(e) = p.advance(&[(i, bot(i, f))], None, |_| {}) {
                panic!("tick {t}, peer {i}: {e}");
            }
        }
        net.advance_ms(16);
    }
}

#[test]
fn the_documented_builder_survives_what_breaks_bare_ggrs() {
    // The probes that panic, abort or hang a session built the plain GGRS way (see the "GGRS
    // itself" tests), sent by player 1 itself (sealed with its key, with its session number) to
    // a peer built with `Peer::start`, every tenth tick: fewer faults than a ban takes, so both
    // play on.
    let net = EmulatedNetwork::new(NetConditions::PERFECT, 12);
    let mut peers = documented_pair(&net, rollback_abilities::session::SessionConfig::default());
    let mut attacker = net.socket(PeerAddr(1));
    documented_ticks(&net, &mut peers, 300, |t, peers| {
        if t % 10 != 0 || t >= 80 {
            return;
        }
        let g = &peers[0].guard;
        let magic = g.remote_magic(&PeerAddr(1)).unwrap();
        let last = g.last_input_frame(&PeerAddr(1)).unwrap();
        // A one-byte payload, a 2^40-byte run, "player 1 left", a forged status far ahead; time
        // sync: a pong this peer never sent, an advantage of i16::MAX; a message of the guards'
        // own protocol that decodes to nothing; a keep-alive.
        for m in probes(magic, last) {
            // Sealed with player 1's own key: a dishonest member.
            attacker.send_to(&peers[1].guard.seal(&m, &PeerAddr(0)), &PeerAddr(0));
        }
    });
    let events: Vec<SessionEvent> = peers[0].runner.drain_events();
    assert!(
        events.iter().any(|e| matches!(e, SessionEvent::PeerFault { .. })),
        "the probes were seen"
    );
    for p in &peers {
        assert!(!p.runner.is_broken());
        assert!(p.runner.world().next_frame() >= 300, "{}", p.runner.world().next_frame());
    }
    documented_peers_agree(&peers, 250, "probes sealed by player 1");
}

/// The probes of [`the_documented_builder_survives_what_breaks_bare_ggrs`] for a peer whose
/// remote player 1 sent its input through `last` under session number `magic`.
fn probes(magic: u16, last: i32) -> Vec<ggrs::Message> {
    let next = last + 1;
    vec![
        forge::input(magic, &[(false, last); 2], false, next, -1, vec![0x80]),
        forge::input(magic, &[(false, last); 2], false, next, -1, huge_run(1 << 40)),
        forge::input(magic, &[(false, last), (true, last)], false, next, -1, Vec::new()),
        forge::input(magic, &[(false, last + 500); 2], false, next, -1, Vec::new()),
        forge::quality_reply(magic, 0),
        forge::quality(magic, i16::MAX, 0),
        forge::guard_bytes(magic, vec![0xff; 3]),
        forge::keep_alive(magic),
    ]
}

#[test]
fn the_documented_builder_reads_nothing_forged_from_a_members_address() {
    // `Peer::start` without keys learns every peer's identity on the socket and seals every
    // datagram: the probes, from player 1's address with its session number but not sealed
    // with its key, are dropped unread — no fault, no flood, no ban of player 1 — while an
    // attacker off the path sends them from the first tick on.
    let net = EmulatedNetwork::new(NetConditions { latency_ms: 10, ..NetConditions::PERFECT }, 21);
    let mut peers = documented_pair(&net, rollback_abilities::session::SessionConfig::default());
    let mut attacker = net.socket(PeerAddr(1));
    let mut sent = 0u64;
    documented_ticks(&net, &mut peers, 300, |t, peers| {
        if t >= 290 {
            return; // the last ones arrive before the end
        }
        let g = &peers[0].guard;
        let magic = g.remote_magic(&PeerAddr(1)).unwrap();
        let last = g.last_input_frame(&PeerAddr(1)).unwrap();
        for _ in 0..20 {
            for m in probes(magic, last) {
                attacker.send_to(&m, &PeerAddr(0));
                sent += 1;
            }
        }
    });
    let events = peers[0].runner.drain_events();
    let faults: Vec<_> =
        events.iter().filter(|e| matches!(e, SessionEvent::PeerFault { .. })).collect();
    assert!(faults.is_empty(), "{faults:?}");
    assert!(
        !events.iter().any(|e| matches!(e, SessionEvent::Disconnected(_))),
        "player 1 stays: {events:?}"
    );
    let stats = peers[0].guard.stats();
    assert!(stats.unauthenticated >= sent, "{} of {sent} dropped unread", stats.unauthenticated);
    documented_peers_agree(&peers, 250, "forged probes");
}

/// Introductions from player 1's address announcing an attacker's identity and echoing
/// nonces it guessed (`k` varies them), 50 of them, sent to peer 0.
fn spoofed_introductions(attacker: &mut rollback_abilities::session::EmulatedSocket, k: u8) {
    let mallory = rollback_abilities::session::Identity::from_secrets([7; 32], [9; 32]).public();
    for j in 0..50u8 {
        let hello = forge::introduction(mallory, [k ^ j; 16], &[[j; 16], [k; 16]]);
        attacker.send_to(&hello, &PeerAddr(0));
    }
}

/// A socket that hands over every introduction one poll late, so that whatever its sender sent
/// with it overtakes it.
struct IntroductionsLate {
    inner: rollback_abilities::session::EmulatedSocket,
    late: Vec<(PeerAddr, ggrs::Message)>,
}

impl NonBlockingSocket<PeerAddr> for IntroductionsLate {
    fn send_to(&mut self, msg: &ggrs::Message, addr: &PeerAddr) {
        self.inner.send_to(msg, addr);
    }

    fn receive_all_messages(&mut self) -> Vec<(PeerAddr, ggrs::Message)> {
        let (late, now): (Vec<_>, Vec<_>) = self
            .inner
            .receive_all_messages()
            .into_iter()
            .partition(|(_, m)| forge::is_introduction(m));
        let mut out = core::mem::replace(&mut self.late, late);
        out.extend(now);
        out
    }
}

/// Two peers built with `Peer::start` (player 1's socket handing over introductions late when
/// `late`), polled until synchronised while an attacker at player 1's address floods peer 0
/// with [`spoofed_introductions`] from before they start; then 200 ticks under the flood.
/// Checks that nothing peer 0 sent player 1 was lost to the introduction, that each holds the
/// other's real identity, and that both confirm the same checksums.
fn introduced_under_a_flood(conditions: NetConditions, seed: u64, late: bool) {
    use rollback_abilities::session::{Identity, Peer, SessionConfig};
    let net = EmulatedNetwork::new(conditions, seed);
    let mallory = Identity::from_secrets([7; 32], [9; 32]).public();
    let mut attacker = net.socket(PeerAddr(1));
    spoofed_introductions(&mut attacker, 0);
    let mut peers: Vec<Peer<Duel, PeerAddr>> = (0..2u16)
        .map(|i| {
            let players = (0..2u16).map(|j| {
                let t = if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j)) };
                (usize::from(j), t)
            });
            let (world, config) = (duel::new_world(5, 2), SessionConfig::default());
            let socket = net.socket(PeerAddr(i));
            let mut p = if i == 1 && late {
                let socket = IntroductionsLate { inner: socket, late: Vec::new() };
                Peer::start(world, socket, players, config)
            } else {
                Peer::start(world, socket, players, config)
            }
            .unwrap();
            p.runner.record(0);
            p
        })
        .collect();
    let mut polls = 0u8;
    while peers.iter_mut().map(|p| p.synchronized()).filter(|ready| !ready).count() > 0 {
        polls += 1;
        assert!(polls < 250, "seed {seed}: the peers never synchronised");
        spoofed_introductions(&mut attacker, polls);
        net.advance_ms(5);
    }
    let stats = peers[1].guard.stats();
    assert_eq!((stats.unauthenticated, stats.dropped), (0, 0), "seed {seed}: {stats:?}");
    documented_ticks(&net, &mut peers, 200, |t, _| spoofed_introductions(&mut attacker, t as u8));
    let seen = peers[0].guard.identity_of(&PeerAddr(1)).expect("player 1's identity is known");
    assert_ne!(seen, mallory);
    assert_eq!(peers[1].guard.identity_of(&PeerAddr(0)).map(|id| id == mallory), Some(false));
    let events = peers[0].runner.drain_events();
    assert!(
        !events.iter().any(|e| matches!(e, SessionEvent::PeerFault { .. })),
        "seed {seed}: {events:?}"
    );
    documented_peers_agree(&peers, 150, &format!("seed {seed}"));
}

#[test]
fn a_spoofed_introduction_never_takes_a_members_place() {
    // An attacker off the path floods peer 0 with introductions from player 1's address,
    // announcing its own identity and echoing nonces it guessed, from before the peers start
    // until long after: peer 0 takes player 1's real identity (the introduction that echoes the
    // nonce peer 0 sent to player 1's address), and the match runs as without the attacker.
    // The flood pushes player 1's nonce out of those peer 0 echoes, so peer 0 learns player 1's
    // identity first and answers then: the answer goes before GGRS's held-back messages.
    let jittery = NetConditions {
        latency_ms: 10,
        jitter_ms: 60,
        reorder_percent: 30,
        ..NetConditions::PERFECT
    };
    introduced_under_a_flood(NetConditions { latency_ms: 10, ..NetConditions::PERFECT }, 22, false);
    for seed in 23..26 {
        introduced_under_a_flood(jittery, seed, false);
    }
}

#[test]
fn a_sealed_message_that_overtakes_an_introduction_is_read_once_its_sender_is_known() {
    // As above, but player 1's socket hands over each introduction a poll late: peer 0's sealed
    // messages, sent with its answer, arrive before player 1 can open them. Player 1 keeps them
    // and reads them once the answer makes peer 0 known: none is lost.
    introduced_under_a_flood(NetConditions { latency_ms: 10, ..NetConditions::PERFECT }, 26, true);
}

#[test]
fn peers_starting_at_different_times_lose_nothing_to_the_introduction() {
    // Three peers built with `Peer::start`, each starting a few polls after the one before, on
    // an in-order network and on one whose packets overtake each other: the first to learn an
    // identity sends its answer before GGRS's held-back messages, and a sealed message that
    // overtakes the introduction making its sender known is read once it is known. Nothing is
    // lost, so the synchronisation never waits for GGRS's wall-clock retry.
    use rollback_abilities::session::{Peer, SessionConfig};
    let jittery = NetConditions {
        latency_ms: 10,
        jitter_ms: 120,
        reorder_percent: 30,
        ..NetConditions::PERFECT
    };
    let in_order = NetConditions { latency_ms: 10, ..NetConditions::PERFECT };
    let cases = [(in_order, 31)].into_iter().chain((32..35).map(|seed| (jittery, seed)));
    for (conditions, seed) in cases {
        let net = EmulatedNetwork::new(conditions, seed);
        let start = |i: u16| {
            let players = (0..3u16).map(move |j| {
                let t = if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j)) };
                (usize::from(j), t)
            });
            let mut p = Peer::start(
                duel::new_world(5, 3),
                net.socket(PeerAddr(i)),
                players,
                SessionConfig::default(),
            )
            .unwrap();
            p.runner.record(0);
            p
        };
        let mut peers: Vec<Peer<Duel, PeerAddr>> = Vec::new();
        let mut polls = 0u32;
        while peers.len() < 3
            || peers.iter_mut().map(|p| p.synchronized()).filter(|ready| !ready).count() > 0
        {
            if polls.is_multiple_of(4) && peers.len() < 3 {
                peers.push(start(peers.len() as u16));
            }
            for p in &mut peers {
                p.synchronized();
            }
            polls += 1;
            assert!(polls < 200, "seed {seed}: not synchronised after {polls} polls of 5 ms");
            net.advance_ms(5);
        }
        for (i, p) in peers.iter().enumerate() {
            let stats = p.guard.stats();
            assert_eq!(
                (stats.unauthenticated, stats.dropped),
                (0, 0),
                "seed {seed}, peer {i}: {stats:?}"
            );
        }
        documented_ticks(&net, &mut peers, 150, |_, _| {});
        documented_peers_agree(&peers, 100, &format!("seed {seed}"));
    }
}

#[test]
fn the_documented_builder_caps_time_sync_waits_under_inflated_reports() {
    // A report claiming `frame_advantage: i16::MAX` every tick: whatever the cap, no wait
    // recommendation exceeds it.
    for cap in [None, Some(3), Some(0)] {
        let net = EmulatedNetwork::new(NetConditions::PERFECT, 13);
        let config = rollback_abilities::session::SessionConfig {
            max_wait_frames: cap,
            ..Default::default()
        };
        let mut peers = documented_pair(&net, config);
        let mut attacker = net.socket(PeerAddr(1));
        let mut waits = Vec::new();
        for _ in 0..400 {
            let magic = peers[0].guard.remote_magic(&PeerAddr(1)).unwrap();
            let m = peers[1].guard.seal(&forge::quality(magic, i16::MAX, 0), &PeerAddr(0));
            attacker.send_to(&m, &PeerAddr(0));
            documented_ticks(&net, &mut peers, 1, |_, _| {});
            waits.extend(peers[0].runner.drain_events().into_iter().filter_map(|e| match e {
                SessionEvent::WaitRecommendation(n) => Some(n),
                _ => None,
            }));
        }
        let limit = cap.unwrap_or(8);
        assert!(waits.iter().all(|n| *n <= limit), "cap {cap:?}: {waits:?}");
        if limit > 0 {
            assert!(!waits.is_empty(), "cap {cap:?}: the reports reached GGRS's time sync");
        }
        assert!(peers[0].guard.stats().implausible >= 400, "cap {cap:?}");
    }
}
