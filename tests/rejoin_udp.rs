//! Rejoins over real UDP sockets on 127.0.0.1: every peer is a `MatchPeer` on a
//! `UdpTransport`; a player's program crashes (its socket closes) and a restarted one binds the
//! same address or a new port, claims its slot with the slot's match identity and plays on.

use crate::rejoin::{Comeback, bot, comeback_world};
use rollback_abilities::InputStatus;
use rollback_abilities::session::{
    GuardConfig, Identity, MatchKeys, MatchPeer, SessionConfig, SessionEvent, UdpTransport,
};
use std::net::{SocketAddr, UdpSocket};

type UdpPeer = MatchPeer<Comeback, UdpTransport>;

/// Ticks a UDP match may take per frame it is asked to confirm (the sockets are on loopback:
/// a tick whose datagrams have not arrived yet is one more tick, not a failure).
const TICKS_PER_FRAME: u64 = 400;

/// The settings of every peer: resends and departures counted in ticks (60 silent ticks and a
/// player is out), not on the wall clock, so a busy machine does not cut a live peer.
fn setup(players: usize) -> SessionConfig {
    SessionConfig {
        departure_ticks: 60,
        guard: Some(GuardConfig::new(players, 8).with_paced(true)),
        ..SessionConfig::default()
    }
}

/// The keys of slot `slot` (its identity rebuilt from the kept secrets, as a restarted program
/// does).
fn keys(slot: usize, ids: &[Identity], addrs: &[SocketAddr]) -> MatchKeys<SocketAddr> {
    let (agree, sign) = ids[slot].secrets();
    MatchKeys {
        local: Identity::from_secrets(agree, sign),
        remotes: (0..addrs.len())
            .filter(|j| *j != slot)
            .map(|j| (addrs[j], ids[j].public()))
            .collect(),
    }
}

fn others(addrs: &[SocketAddr], slot: usize) -> Vec<SocketAddr> {
    addrs.iter().enumerate().filter(|(j, _)| *j != slot).map(|(_, a)| *a).collect()
}

/// A UDP match of `players`, every peer recording; the slots' identities and addresses.
fn udp_match(players: usize) -> (Vec<Option<UdpPeer>>, Vec<Identity>, Vec<SocketAddr>) {
    let transports: Vec<UdpTransport> = (0..players)
        .map(|_| UdpTransport::bind("127.0.0.1:0", Vec::new()).expect("bind 127.0.0.1"))
        .collect();
    let addrs: Vec<SocketAddr> = transports.iter().map(UdpTransport::local_addr).collect();
    let ids: Vec<Identity> =
        (0..players).map(|_| Identity::generate().expect("identity")).collect();
    let peers = transports
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            t.set_peers(others(&addrs, i));
            let mut p = MatchPeer::start(
                comeback_world(players),
                t,
                i,
                addrs.clone(),
                keys(i, &ids, &addrs),
                setup(players),
            )
            .expect("start");
            p.runner.record(60);
            Some(p)
        })
        .collect();
    (peers, ids, addrs)
}

/// One tick of every live peer, with the bots' inputs.
fn tick_all(peers: &mut [Option<UdpPeer>], seed: u64) {
    for p in peers.iter_mut().flatten() {
        let handle = p.handle;
        p.tick(|frame, _| bot(seed, handle, frame), None, |_| {}).expect("tick");
    }
}

fn min_confirmed(peers: &[Option<UdpPeer>]) -> u32 {
    peers.iter().flatten().map(|p| p.confirmed_frame().unwrap_or(0)).min().unwrap_or(0)
}

/// Ticks until `done`, or fails after `limit` ticks naming where every peer is.
fn until(
    peers: &mut [Option<UdpPeer>],
    seed: u64,
    limit: u64,
    what: &str,
    mut done: impl FnMut(&[Option<UdpPeer>]) -> bool,
) {
    for _ in 0..limit {
        if done(peers) {
            return;
        }
        tick_all(peers, seed);
    }
    let at: Vec<_> = peers
        .iter()
        .flatten()
        .map(|p| (p.handle, p.confirmed_frame(), p.is_rejoining(), p.channel()))
        .collect();
    panic!("{what}: not reached after {limit} ticks; (slot, confirmed, rejoining, channel) {at:?}");
}

fn rejoined_at(p: &UdpPeer, player: usize) -> Option<u32> {
    p.events().iter().rev().find_map(|e| match e {
        SessionEvent::Rejoined { players, frame } if players.contains(&player) => Some(*frame),
        _ => None,
    })
}

/// Every pair of peers agrees on every confirmed frame both hold; the first peer and each other
/// have at least `overlap` frames from `from` on in common.
fn agree(peers: &[Option<UdpPeer>], from: u32, overlap: usize) {
    let live: Vec<&UdpPeer> = peers.iter().flatten().collect();
    for a in &live {
        for b in &live {
            let theirs = b.runner.confirmed_checksums();
            for (f, s) in a.runner.confirmed_checksums() {
                if let Some(t) = theirs.get(f) {
                    assert_eq!(s, t, "slots {} and {} differ at frame {f}", a.handle, b.handle);
                }
            }
        }
        let common = live[0]
            .runner
            .confirmed_checksums()
            .range(from..)
            .filter(|(f, _)| a.runner.confirmed_checksums().contains_key(f))
            .count();
        assert!(common >= overlap, "slot {} shares {common} frames from {from} on", a.handle);
    }
}

/// A player's program crashes and comes back: `crash(peers, slot)` takes it out.
fn crash_and_rejoin(players: usize, slot: usize, seed: u64) {
    crash_and_rejoin_at(players, slot, seed, false);
}

/// [`crash_and_rejoin`]; with `new_port`, the restarted program binds a port of its own
/// instead of the slot's (its old address stays closed).
fn crash_and_rejoin_at(players: usize, slot: usize, seed: u64, new_port: bool) {
    let (mut peers, ids, addrs) = udp_match(players);
    until(&mut peers, seed, 120 * TICKS_PER_FRAME, "first 120 frames", |p| min_confirmed(p) >= 120);
    let moved = crash_then_rejoin(&mut peers, &ids, &addrs, slot, seed, new_port);
    // The joiner's own input reaches the others again: the first peer simulates frames after F
    // with its confirmed, non-default input (the bots never give the default input).
    let watcher = (slot + 1) % players;
    let mut seen = Vec::new();
    for _ in 0..60 * TICKS_PER_FRAME {
        if seen.len() >= 30 {
            break;
        }
        let p = peers[watcher].as_mut().expect("watcher");
        p.tick(
            |frame, _| bot(seed, watcher, frame),
            None,
            |w| {
                if w.input_status(slot) == InputStatus::Confirmed && w.input(slot) != 0 {
                    seen.push(w.next_frame());
                }
            },
        )
        .expect("tick");
        for (i, q) in peers.iter_mut().enumerate() {
            if i != watcher
                && let Some(q) = q
            {
                let h = q.handle;
                q.tick(|frame, _| bot(seed, h, frame), None, |_| {}).expect("tick");
            }
        }
    }
    assert!(seen.len() >= 30, "slot {watcher} saw slot {slot}'s input in {} frames", seen.len());
    // The others reach the slot at its new address: they take its datagrams from there.
    for p in peers.iter().flatten().filter(|p| p.handle != slot) {
        assert_eq!(p.guard.address_of(slot), Some(moved), "slot {}", p.handle);
    }
    for p in peers.iter().flatten() {
        let faults =
            p.events().iter().filter(|e| matches!(e, SessionEvent::RejoinFault { .. })).count();
        assert_eq!(faults, 0, "slot {} saw rejoin faults: {:?}", p.handle, p.events());
    }
}

/// Slot `slot`'s program crashes (with `new_port`, the restarted one binds a port of its own);
/// it comes back knowing only the addresses the match started at, and every peer agrees on
/// the 120 frames after it is back. Returns the slot's address now.
fn crash_then_rejoin(
    peers: &mut [Option<UdpPeer>],
    ids: &[Identity],
    addrs: &[SocketAddr],
    slot: usize,
    seed: u64,
    new_port: bool,
) -> SocketAddr {
    let players = addrs.len();
    // The program dies: its socket closes with it.
    peers[slot] = None;
    until(peers, seed, 200 * TICKS_PER_FRAME, "the others agree it left", |p| {
        p.iter().flatten().all(|q| {
            q.events()
                .iter()
                .any(|e| matches!(e, SessionEvent::Left { players, .. } if players.contains(&slot)))
        })
    });
    let away_from = min_confirmed(peers);
    until(peers, seed, 90 * TICKS_PER_FRAME, "60 frames without it", |p| {
        min_confirmed(p) >= away_from + 60
    });
    // A restarted program: the same address or a new one, a fresh world, the slot's identity
    // kept.
    let socket = if new_port {
        UdpSocket::bind("127.0.0.1:0").expect("bind a new port")
    } else {
        UdpSocket::bind(addrs[slot]).expect("bind the same address again")
    };
    let transport = UdpTransport::from_socket(socket, others(addrs, slot)).expect("transport");
    let moved = transport.local_addr();
    assert_eq!(moved == addrs[slot], !new_port);
    let joiner = MatchPeer::rejoin(
        comeback_world(players),
        transport,
        slot,
        addrs.to_vec(),
        keys(slot, ids, addrs),
        setup(players),
    )
    .expect("rejoin");
    peers[slot] = Some(joiner);
    until(peers, seed, 400 * TICKS_PER_FRAME, "the rejoin", |p| {
        p.iter().flatten().all(|q| !q.is_rejoining() && rejoined_at(q, slot).is_some())
    });
    let back = peers.iter().flatten().map(|p| rejoined_at(p, slot)).collect::<Vec<_>>();
    assert!(back.windows(2).all(|w| w[0] == w[1]), "they came back at different frames: {back:?}");
    let f = back[0].expect("a frame");
    assert!(f > away_from, "the rejoin frame {f} is before the player was away ({away_from})");
    peers[slot].as_mut().expect("joiner").runner.record(60);
    until(peers, seed, 200 * TICKS_PER_FRAME, "120 frames after the rejoin", |p| {
        min_confirmed(p) >= f + 120
    });
    agree(peers, f, 100);
    moved
}

#[test]
fn a_crashed_player_rejoins_a_two_player_match_over_udp() {
    crash_and_rejoin(2, 1, 1);
}

#[test]
fn the_first_slot_crashes_and_rejoins_a_three_player_match_over_udp() {
    // The lowest slot coordinates rejoins: with it gone, the next one does.
    crash_and_rejoin(3, 0, 2);
}

#[test]
fn a_crashed_player_rejoins_a_four_player_match_over_udp() {
    crash_and_rejoin(4, 2, 3);
}

#[test]
fn a_crashed_player_rejoins_from_a_new_port_over_udp() {
    // A restarted program rarely gets its old port back (an ephemeral port, a NAT's new
    // mapping): its slot's key, not its address, proves the claim.
    crash_and_rejoin_at(3, 2, 4, true);
}

/// Slot 1 comes back from a new port; later slot 2 crashes and comes back as a restarted
/// program that knows only the addresses the match started at: the coordinator's offer tells
/// it where slot 1 is, and every peer agrees.
#[test]
fn a_restarted_player_finds_a_member_that_moved_over_udp() {
    let (mut peers, ids, addrs) = udp_match(3);
    until(&mut peers, 7, 120 * TICKS_PER_FRAME, "first 120 frames", |p| min_confirmed(p) >= 120);
    let moved = crash_then_rejoin(&mut peers, &ids, &addrs, 1, 7, true);
    crash_then_rejoin(&mut peers, &ids, &addrs, 2, 7, false);
    for p in peers.iter().flatten().filter(|p| p.handle != 1) {
        assert_eq!(p.guard.address_of(1), Some(moved), "slot {}", p.handle);
    }
}

/// The coordinator (slot 0) comes back from a new port; later slot 2 crashes and comes back as
/// a restarted program that knows only the addresses the match started at, where the
/// coordinator no longer is: slot 1 tells it where the coordinator is, it takes the
/// coordinator's signed offer from there, and every peer agrees.
#[test]
fn a_restarted_player_finds_a_coordinator_that_moved_over_udp() {
    let (mut peers, ids, addrs) = udp_match(3);
    until(&mut peers, 8, 120 * TICKS_PER_FRAME, "first 120 frames", |p| min_confirmed(p) >= 120);
    let moved = crash_then_rejoin(&mut peers, &ids, &addrs, 0, 8, true);
    crash_then_rejoin(&mut peers, &ids, &addrs, 2, 8, false);
    for p in peers.iter().flatten().filter(|p| p.handle != 0) {
        assert_eq!(p.guard.address_of(0), Some(moved), "slot {}", p.handle);
    }
}

#[test]
fn the_coordinator_comes_back_from_a_new_port_over_udp() {
    crash_and_rejoin_at(2, 0, 6, true);
}

/// Datagrams from an address that is not one of the slots' (garbage, a forged rejoin request,
/// a GGRS message tagged with a session channel): GGRS ones and garbage are dropped by the
/// transport, side-channel ones reach the rejoin protocol (a player may come back from a new
/// address) in a small queue of their own and are refused there as faults of no member. The
/// match goes on, no member is faulted.
#[test]
fn strangers_on_udp_cannot_touch_the_match() {
    let (mut peers, _ids, addrs) = udp_match(2);
    let stranger = UdpSocket::bind("127.0.0.1:0").expect("bind");
    until(&mut peers, 5, 60 * TICKS_PER_FRAME, "60 frames", |p| min_confirmed(p) >= 60);
    for k in 0..2000u32 {
        let junk: &[u8] = match k % 4 {
            0 => b"G\x00\x00\x00\x00\xff\xff",
            1 => b"RRBAJ\x00\x01",
            2 => b"",
            _ => &[0x80; 64],
        };
        for a in &addrs {
            stranger.send_to(junk, a).expect("send");
        }
        if k % 20 == 0 {
            tick_all(&mut peers, 5);
        }
    }
    until(&mut peers, 5, 120 * TICKS_PER_FRAME, "60 more frames", |p| min_confirmed(p) >= 120);
    for p in peers.iter().flatten() {
        let stats = p.transport().stats();
        assert!(stats.foreign >= 1000, "slot {}: {stats:?}", p.handle);
        assert!(stats.strangers >= 100, "slot {}: {stats:?}", p.handle);
        assert!(
            !p.events()
                .iter()
                .any(|e| matches!(e, SessionEvent::PeerFault { .. } | SessionEvent::Left { .. })
                    || matches!(e, SessionEvent::RejoinFault { peer, .. } if peer != "unknown")),
            "slot {}: {:?}",
            p.handle,
            p.events()
        );
        assert!(
            p.events().iter().any(|e| matches!(e, SessionEvent::RejoinFault { .. })),
            "slot {}: the forged rejoin requests were not refused",
            p.handle
        );
    }
    agree(&peers, 0, 100);
}
