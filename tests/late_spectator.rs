//! Late spectators: a program that was not in the match's handshake follows a running
//! `LocalMatch` from one member, without the players pausing, with the `Comeback` game (every
//! player's input, and whether it is connected, changes the state).

use crate::hostile::LOSSY;
use crate::rejoin::{Comeback, all_agree, bot, comeback_match, comeback_world, tick};
use rollback_abilities::InputStatus;
use rollback_abilities::session::late_spectator::{
    DropReason, Refusal, SpectateEvent, SpectateFault, SpectateMsg, host_message,
};
use rollback_abilities::session::{
    EmulatedSocket, Identity, LateSpectator, LocalMatch, MatchTransport, PeerAddr, SessionEvent,
    SpectateTicket, SpectatorPolicy,
};

type Watcher = LateSpectator<Comeback, EmulatedSocket>;

/// A spectator's identity drawn from a seed (a test's run is the same bytes every time).
fn spectator_identity(seed: u64) -> Identity {
    let k = |what: &str| blake3::derive_key(what, &seed.to_le_bytes());
    Identity::from_secrets(k("spectator agree"), k("spectator sign"))
}

/// A spectator at `addr` of the match `host` plays in, recording from the frame it starts at.
fn spectator(m: &LocalMatch<Comeback>, host: usize, addr: u16, id: Identity) -> Watcher {
    let players = m.config().players;
    let ticket = m.peers()[host].spectate_ticket();
    let mut s = LateSpectator::start(
        comeback_world(players),
        m.network().socket(PeerAddr(addr)),
        &ticket,
        id,
    );
    s.runner.record(60);
    s
}

/// One tick of the match and of the spectators.
fn tick_all(m: &mut LocalMatch<Comeback>, seed: u64, spectators: &mut [&mut Watcher]) {
    tick(m, seed).unwrap();
    for s in spectators {
        s.tick(None, |_| {}).unwrap();
    }
}

fn started_at<T: MatchTransport>(s: &LateSpectator<Comeback, T>) -> Option<u32> {
    s.events().iter().find_map(|e| match e {
        SessionEvent::LateSpectator(SpectateEvent::Started { frame }) => Some(*frame),
        _ => None,
    })
}

fn spectate_events(events: &[SessionEvent]) -> Vec<&SpectateEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::LateSpectator(s) => Some(s),
            _ => None,
        })
        .collect()
}

fn faults(events: &[SessionEvent]) -> Vec<SpectateFault> {
    spectate_events(events)
        .into_iter()
        .filter_map(|e| match e {
            SpectateEvent::Fault { fault, .. } => Some(fault.clone()),
            _ => None,
        })
        .collect()
}

/// The spectator's confirmed states equal every player's at every frame both hold, and it holds
/// at least `overlap` of the first player's from F on.
fn agrees_with_players(m: &LocalMatch<Comeback>, s: &Watcher, overlap: usize) {
    let f = started_at(s).expect("started");
    let mine = s.runner.confirmed_checksums();
    assert!(mine.keys().all(|k| *k >= f), "nothing before F");
    for p in m.peers().iter().filter(|p| !p.has_left()) {
        let theirs = p.runner.confirmed_checksums();
        let mut common = 0;
        for (frame, sum) in mine {
            if let Some(t) = theirs.get(frame) {
                assert_eq!(sum, t, "frame {frame}: spectator and player {} differ", p.handle);
                common += 1;
            }
        }
        assert!(common >= overlap, "only {common} frames in common with player {}", p.handle);
    }
    assert!(faults(s.events()).is_empty(), "{:?}", faults(s.events()));
}

/// A spectator joins a lossy, jittery, reordering match (side channel impaired too) of
/// `players` at a frame drawn from `seed` and follows it for 300 frames; the players never
/// pause.
fn follow(players: usize, seed: u64) {
    let mut m = comeback_match(players, LOSSY, seed).unwrap();
    m.network().set_side_channel_impaired(true);
    let id = spectator_identity(seed);
    let host = (seed as usize) % players;
    m.peers_mut()[host].admit_spectators(SpectatorPolicy::allow(vec![id.public()], 2));
    let join = 40 + (seed.wrapping_mul(2_654_435_761) % 200) as u32;
    m.run(join, |p, f, _| bot(seed, p, f)).unwrap();
    let mut s = spectator(&m, host, 50, id);
    let before = m.peers()[0].runner.world().next_frame();
    let mut ticks = 0u32;
    while started_at(&s).is_none_or(|f| s.runner.world().next_frame() < f + 300) {
        tick_all(&mut m, seed, &mut [&mut s]);
        ticks += 1;
        assert!(ticks < 5000, "the spectator never followed: {:?}", s.events());
        // The players never hold the match for it.
        assert!(m.peers().iter().all(|p| !p.rejoin_under_way()));
    }
    let advanced = m.peers()[0].runner.world().next_frame() - before;
    assert!(advanced + 20 >= ticks, "the players advanced {advanced} frames in {ticks} ticks");
    let f = started_at(&s).unwrap();
    assert!(f > join, "F {f} is after the frame it asked at ({join})");
    assert_eq!(m.peers()[host].late_spectators(), 1);
    let admitted = spectate_events(m.peers()[host].events())
        .into_iter()
        .any(|e| matches!(e, SpectateEvent::Admitted { frame, .. } if *frame == f));
    assert!(admitted, "the host reports the spectator admitted at F");
    agrees_with_players(&m, &s, 250);
    all_agree(&m, 100).unwrap();
}

#[test]
fn a_late_spectator_follows_a_lossy_two_player_match() {
    for seed in [1, 2, 3] {
        follow(2, seed);
    }
}

#[test]
fn a_late_spectator_follows_a_lossy_four_player_match() {
    for seed in [4, 5, 6] {
        follow(4, seed);
    }
}

/// A player quits while the spectator watches: the spectator's game sees it disconnected from
/// the frame the players agreed on, as theirs does; its replay from F verifies and matches the
/// host's frame for frame.
#[test]
fn a_spectator_sees_a_player_leave_and_its_replay_from_f_verifies() {
    let seed = 11;
    let mut m = comeback_match(3, LOSSY, seed).unwrap();
    let id = spectator_identity(seed);
    m.peers_mut()[0].admit_spectators(SpectatorPolicy::open(1));
    m.run(90, |p, f, _| bot(seed, p, f)).unwrap();
    let mut s = spectator(&m, 0, 50, id);
    while started_at(&s).is_none_or(|f| s.runner.world().next_frame() < f + 60) {
        tick_all(&mut m, seed, &mut [&mut s]);
    }
    m.quit(2).unwrap();
    let f = started_at(&s).unwrap();
    let mut ticks = 0;
    while s.runner.world().next_frame() < f + 400 {
        tick_all(&mut m, seed, &mut [&mut s]);
        ticks += 1;
        assert!(ticks < 5000);
    }
    agrees_with_players(&m, &s, 300);
    let mine = s.runner.take_recorder().unwrap().finish();
    let theirs = m.peers_mut()[0].runner.take_recorder().unwrap().finish();
    assert_eq!(mine.first_frame(), f);
    let disconnected = mine
        .frame_numbers()
        .filter(|k| mine.frame(*k).unwrap().statuses[2] == InputStatus::Disconnected)
        .count();
    assert!(disconnected > 100, "player 2 disconnected for {disconnected} frames");
    for frame in mine.frame_numbers().take_while(|k| *k < theirs.end_frame()) {
        let (a, b) = (mine.frame(frame).unwrap(), theirs.frame(frame).unwrap());
        assert_eq!((&a.inputs, &a.statuses, a.checksum), (&b.inputs, &b.statuses, b.checksum));
    }
    let v = mine.verify(&mut comeback_world(3)).unwrap();
    assert!(v.is_ok() && v.frames as usize == mine.len(), "diverged at {:?}", v.first_divergence);
}

/// By default a member admits nobody; a key it does not list is refused, typed, on both
/// sides; one more spectator than it admits is refused as full. The match plays on.
#[test]
fn spectators_not_admitted_are_refused() {
    let seed = 21;
    let mut m = comeback_match(2, LOSSY, seed).unwrap();
    m.run(30, |p, f, _| bot(seed, p, f)).unwrap();
    // Nobody admitted yet.
    let mut a = spectator(&m, 0, 50, spectator_identity(1));
    // Listed on peer 1, which admits one at a time.
    let (b_id, c_id) = (spectator_identity(2), spectator_identity(3));
    m.peers_mut()[1]
        .admit_spectators(SpectatorPolicy::allow(vec![b_id.public(), c_id.public()], 1));
    let mut b = spectator(&m, 1, 51, b_id);
    let mut d = spectator(&m, 1, 53, spectator_identity(4));
    for _ in 0..300 {
        tick_all(&mut m, seed, &mut [&mut a, &mut b, &mut d]);
    }
    let mut c = spectator(&m, 1, 52, c_id);
    for _ in 0..200 {
        tick_all(&mut m, seed, &mut [&mut a, &mut b, &mut c, &mut d]);
    }
    let refused = |s: &Watcher, r: Refusal| {
        s.has_ended()
            && spectate_events(s.events()).iter().any(
                |e| matches!(e, SpectateEvent::Ended { reason: DropReason::Refused(x) } if *x == r),
            )
    };
    assert!(refused(&a, Refusal::NotAllowed), "{:?}", a.events());
    assert!(refused(&d, Refusal::NotAllowed), "{:?}", d.events());
    assert!(refused(&c, Refusal::Full), "{:?}", c.events());
    assert!(b.is_following() && started_at(&b).is_some());
    assert!(faults(m.peers()[0].events()).contains(&SpectateFault::Refused(Refusal::NotAllowed)));
    assert!(faults(m.peers()[1].events()).contains(&SpectateFault::Refused(Refusal::Full)));
    assert_eq!(m.peers()[0].late_spectators(), 0);
    assert_eq!(m.peers()[1].late_spectators(), 1);
    agrees_with_players(&m, &b, 100);
    all_agree(&m, 100).unwrap();
}

/// A program at the address the spectator takes for its host's answers with an offer: one not
/// signed with the host's key, one signed by it but larger than the spectator's state, one for
/// another stream. Each is refused, typed, and the spectator loads nothing.
#[test]
fn forged_and_oversized_offers_are_refused() {
    let seed = 31;
    let m = comeback_match(2, LOSSY, seed).unwrap();
    let (agree, signing) = m.peers()[0].identity().secrets();
    let host_id = Identity::from_secrets(agree, signing);
    let liar = m.network().socket(PeerAddr(60));
    let ticket = SpectateTicket { host: PeerAddr(60), key: host_id.public() };
    let mut s = LateSpectator::start(
        comeback_world(2),
        m.network().socket(PeerAddr(50)),
        &ticket,
        spectator_identity(5),
    );
    let len = comeback_world(2).snapshot_bytes() as u32;
    let sign = |msg: SpectateMsg, by: &Identity| {
        let mut msg = msg;
        let m = host_message(&msg).unwrap();
        if let SpectateMsg::Offer { signature, .. } = &mut msg {
            *signature = by.sign(&m).to_vec();
        }
        msg
    };
    let nonce = [7u8; 16];
    let offer = |len: u32, nonce: [u8; 16]| SpectateMsg::Offer {
        nonce,
        frame: 10,
        len,
        digest: 0,
        checksum: 0,
        players: 2,
        signature: Vec::new(),
    };
    let stranger = spectator_identity(99);
    let mut sent = 0;
    for step in 0..200 {
        for (from, bytes) in liar.recv_raw() {
            if matches!(SpectateMsg::decode(&bytes), Ok(SpectateMsg::Ask { .. })) && sent < 4 {
                liar.send_raw(from, SpectateMsg::Challenge { nonce }.encode());
                let forged = match sent {
                    0 => sign(offer(len, nonce), &stranger),
                    1 => sign(offer(len + 4096, nonce), &host_id),
                    2 => sign(offer(len, [8u8; 16]), &host_id),
                    _ => {
                        let mut o = offer(len, nonce);
                        if let SpectateMsg::Offer { signature, .. } = &mut o {
                            *signature = vec![0; 80];
                        }
                        o
                    }
                };
                // The last one is out of bounds: refused as it is decoded.
                let mut bytes = forged.encode();
                if sent == 3 {
                    bytes.extend([0u8; 2000]);
                }
                liar.send_raw(from, bytes);
                sent += 1;
            }
        }
        s.tick(None, |_| {}).unwrap();
        m.network().advance_ms(16);
        let _ = step;
    }
    let f = faults(s.events());
    assert_eq!(f.iter().filter(|x| **x == SpectateFault::BadOffer).count(), 3, "{f:?}");
    assert!(f.iter().any(|x| matches!(x, SpectateFault::Decode(_))), "{f:?}");
    assert!(started_at(&s).is_none() && s.progress() == (0, 0));
}

/// A flood of spectate messages — garbage with the protocol's prefix from one address, asks
/// from a hundred addresses — is refused, typed, and the match plays on and agrees.
#[test]
fn a_spectate_flood_is_a_typed_fault_and_the_match_plays_on() {
    let seed = 41;
    let mut m = comeback_match(2, LOSSY, seed).unwrap();
    m.peers_mut()[0].admit_spectators(SpectatorPolicy::open(2));
    m.run(30, |p, f, _| bot(seed, p, f)).unwrap();
    let flooder = m.network().socket(PeerAddr(70));
    let askers: Vec<_> = (0..100).map(|i| m.network().socket(PeerAddr(200 + i))).collect();
    let w = comeback_world(2);
    let (content_hash, snapshot_len) = (w.content().hash(), w.snapshot_bytes() as u32);
    let hooks_hash = twox_hash::XxHash3_64::oneshot(w.hooks_signature().as_bytes());
    let ask = |i: u64| {
        let key = spectator_identity(1000 + i).public();
        SpectateMsg::Ask { key, content_hash, hooks_hash, snapshot_len }.encode()
    };
    let start = m.peers()[0].runner.world().next_frame();
    for t in 0..300u64 {
        for k in 0..200u64 {
            flooder.send_raw(PeerAddr(0), [b"RBS1".as_slice(), &[(k + t) as u8; 40]].concat());
        }
        for (i, a) in askers.iter().enumerate() {
            a.send_raw(PeerAddr(0), ask(i as u64));
        }
        tick(&mut m, seed).unwrap();
    }
    assert!(m.peers()[0].runner.world().next_frame() >= start + 250, "the match played on");
    let f = faults(m.peers()[0].events());
    assert!(f.iter().any(|x| matches!(x, SpectateFault::Flood { .. })), "{f:?}");
    assert!(f.iter().any(|x| matches!(x, SpectateFault::Decode(_))), "{f:?}");
    assert!(f.iter().any(|x| matches!(x, SpectateFault::Requests { .. })), "{f:?}");
    assert_eq!(m.peers()[0].late_spectators(), 0);
    all_agree(&m, 200).unwrap();
}

/// A spectator that stops mid-transfer or stops acknowledging frames is dropped with a typed
/// reason; the match plays on.
#[test]
fn a_stalled_spectator_is_dropped() {
    let seed = 51;
    let mut m = comeback_match(2, LOSSY, seed).unwrap();
    m.peers_mut()[0].admit_spectators(SpectatorPolicy::open(2));
    m.run(30, |p, f, _| bot(seed, p, f)).unwrap();
    let mut s = spectator(&m, 0, 50, spectator_identity(6));
    // Following, then frozen.
    while started_at(&s).is_none() {
        tick_all(&mut m, seed, &mut [&mut s]);
    }
    assert_eq!(m.peers()[0].late_spectators(), 1);
    for _ in 0..300 {
        tick(&mut m, seed).unwrap();
    }
    let dropped = spectate_events(m.peers()[0].events())
        .into_iter()
        .any(|e| matches!(e, SpectateEvent::Dropped { reason: DropReason::Stalled, .. }));
    assert!(dropped, "{:?}", spectate_events(m.peers()[0].events()));
    assert_eq!(m.peers()[0].late_spectators(), 0);
    all_agree(&m, 200).unwrap();
}

/// Over UDP on 127.0.0.1: two players, a spectator from a port no slot has joins after frame
/// 60 and follows 200 frames, its confirmed states equal the players'.
#[test]
fn a_late_spectator_follows_a_match_over_udp() {
    use rollback_abilities::session::{
        GuardConfig, MatchKeys, MatchPeer, SessionConfig, UdpTransport,
    };
    use std::net::SocketAddr;
    let seed = 61;
    let config = SessionConfig {
        departure_ticks: 600,
        guard: Some(GuardConfig::new(2, 8).with_paced(true)),
        ..SessionConfig::default()
    };
    let sockets = [
        UdpTransport::bind("127.0.0.1:0", vec![]).unwrap(),
        UdpTransport::bind("127.0.0.1:0", vec![]).unwrap(),
    ];
    let addrs: Vec<SocketAddr> = sockets.iter().map(UdpTransport::local_addr).collect();
    let ids = [spectator_identity(100), spectator_identity(101)];
    let keys = |i: usize| {
        let (agree, sign) = ids[i].secrets();
        let local = Identity::from_secrets(agree, sign);
        MatchKeys { local, remotes: vec![(addrs[1 - i], ids[1 - i].public())] }
    };
    let mut peers = Vec::new();
    for (i, t) in sockets.into_iter().enumerate() {
        t.set_peers(vec![addrs[1 - i]]);
        let world = comeback_world(2);
        peers.push(MatchPeer::start(world, t, i, addrs.clone(), keys(i), config).unwrap());
    }
    let watcher = spectator_identity(102);
    peers[1].admit_spectators(SpectatorPolicy::allow(vec![watcher.public()], 1));
    let tick_peers = |peers: &mut Vec<MatchPeer<Comeback, UdpTransport>>| {
        for p in peers.iter_mut() {
            let h = p.handle;
            p.tick(|f, _| bot(seed, h, f), None, |_| {}).unwrap();
        }
    };
    while peers[0].confirmed_frame() < Some(60) {
        tick_peers(&mut peers);
    }
    let t = UdpTransport::bind("127.0.0.1:0", vec![]).unwrap();
    let ticket = peers[1].spectate_ticket();
    let mut s = LateSpectator::start(comeback_world(2), t, &ticket, watcher);
    let mut ticks = 0;
    while started_at(&s).is_none_or(|f| s.runner.world().next_frame() < f + 200) {
        tick_peers(&mut peers);
        s.tick(None, |_| {}).unwrap();
        ticks += 1;
        assert!(ticks < 200_000, "{:?}", s.events());
        if ticks % 64 == 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    let mine = s.runner.confirmed_checksums();
    for p in &peers {
        let theirs = p.runner.confirmed_checksums();
        let common: Vec<_> = mine.iter().filter(|(f, _)| theirs.contains_key(f)).collect();
        assert!(common.len() >= 150, "{} frames in common", common.len());
        assert!(common.iter().all(|(f, sum)| theirs[f] == **sum));
    }
    assert!(faults(s.events()).is_empty(), "{:?}", faults(s.events()));
}
