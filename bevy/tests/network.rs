//! Apps over the crate's emulated network: confirmed checksums equal to a bare `Runner`'s, a
//! hostile packet and a leaving player as messages.

use crate::common::{
    bot, confirmed_checksums, next_frame, peer_apps, seen, state, synchronize, update,
};
use bevy::app::App;
use bevy::time::TimeUpdateStrategy;
use bevy_rollback_abilities::{AbilitiesMatch, NetSettings};
use ggrs::NonBlockingSocket;
use rollback_abilities::session::{
    EmulatedNetwork, Fault, LocalMatch, MatchConfig, NetConditions, PeerAddr, SessionEvent, forge,
};
use rollback_abilities_kit::duel::{self, Duel};
use std::time::Duration;

const SETTINGS: NetSettings =
    NetSettings { input_delay: 2, max_prediction: 8, desync_interval: 10, departure_ticks: 300 };

fn confirmed(app: &App) -> i64 {
    state(app).confirmed_frame().map_or(-1, i64::from)
}

#[test]
fn two_apps_confirm_the_checksums_of_a_bare_runner_bit_for_bit() {
    const FRAMES: u32 = 600;
    let net = EmulatedNetwork::new(NetConditions::HARSH, 11);
    let mut apps = peer_apps(&net, 2, SETTINGS);
    synchronize(&mut apps, &net);
    let mut updates = 0;
    while apps.iter().any(|a| confirmed(a) < i64::from(FRAMES)) {
        update(&mut apps, &net);
        updates += 1;
        assert!(updates < 20 * FRAMES, "the match stalled");
    }
    let want = bare_checksums(FRAMES);
    for a in &apps {
        let got = confirmed_checksums(&state(a).runner());
        assert!(got.len() >= FRAMES as usize);
        assert_eq!(got[..FRAMES as usize], want[..]);
        assert!(state(a).stats().rollbacks > 0, "the harsh network caused rollbacks");
        assert_eq!(seen(a).desyncs, 0);
        assert!(seen(a).ended.is_empty(), "{:?}", seen(a).ended);
        assert!(seen(a).session.iter().any(|e| matches!(e, SessionEvent::Synchronized(_))));
    }
}

/// The confirmed checksums of the first `frames` frames of the same match through bare runners
/// (`LocalMatch`: one `Runner` per peer, the bots' inputs).
pub fn bare_checksums(frames: u32) -> Vec<u64> {
    let config =
        MatchConfig { conditions: NetConditions::HARSH, net_seed: 3, ..MatchConfig::default() };
    let mut bare = LocalMatch::<Duel>::new(config, |_| duel::new_world(crate::common::SEED, 2))
        .expect("a local match");
    for p in bare.peers_mut() {
        p.runner.record(60);
    }
    bare.synchronize().expect("synchronised");
    bare.run(frames, |p, f, _| bot(p, f)).expect("the bare match runs");
    let mut want = confirmed_checksums(&bare.peers()[0].runner);
    assert!(want.len() >= frames as usize);
    want.truncate(frames as usize);
    want
}

fn faults(app: &App) -> Vec<Fault> {
    seen(app)
        .session
        .iter()
        .filter_map(|e| match e {
            SessionEvent::PeerFault { fault, .. } => Some(fault.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_hostile_packet_is_a_peer_fault_message_not_a_panic() {
    let net = EmulatedNetwork::new(NetConditions::PERFECT, 5);
    let mut apps = peer_apps(&net, 2, SETTINGS);
    synchronize(&mut apps, &net);
    for _ in 0..30 {
        update(&mut apps, &net);
    }
    // Player 1's next input message to player 0, with a one-byte payload that makes bare GGRS
    // panic.
    let guard = state(&apps[0]).emulated_guard().expect("an emulated match").clone();
    let magic = guard.remote_magic(&PeerAddr(1)).expect("an input arrived");
    let next = guard.last_input_frame(&PeerAddr(1)).unwrap_or(-1) + 1;
    let statuses = [(false, next - 1), (false, next - 1)];
    let msg = forge::input(magic, &statuses, false, next, -1, vec![0x80]);
    // From an attacker at player 1's address (not sealed with its key: dropped unread), and
    // from player 1 itself (sealed with its own key: a dishonest member).
    let member = state(&apps[1]).emulated_guard().expect("an emulated match").clone();
    net.socket(PeerAddr(1)).send_to(&msg, &PeerAddr(0));
    net.socket(PeerAddr(1)).send_to(&member.seal(&msg, &PeerAddr(0)), &PeerAddr(0));
    let before = next_frame(&apps[0]);
    for _ in 0..30 {
        update(&mut apps, &net);
    }
    let f = faults(&apps[0]);
    assert!(f.iter().any(|f| matches!(f, Fault::BadInputEncoding { .. })), "{f:?}");
    assert_eq!(f.len(), 1, "only the member's own message is its fault: {f:?}");
    assert!(guard.stats().unauthenticated >= 1, "the attacker's copy was dropped unread");
    assert!(next_frame(&apps[0]) >= before + 25, "the match went on");
    assert!(seen(&apps[0]).ended.is_empty(), "{:?}", seen(&apps[0]).ended);
}

#[test]
fn a_player_who_leaves_is_a_left_message_and_the_others_play_on() {
    let net = EmulatedNetwork::new(NetConditions::PERFECT, 6);
    let mut apps = peer_apps(&net, 3, SETTINGS);
    synchronize(&mut apps, &net);
    for _ in 0..60 {
        update(&mut apps, &net);
    }
    // Player 2 quits: its peer tells the others, then its app stops.
    let mut leaver = apps.pop().expect("three apps");
    leaver.world_mut().resource_mut::<AbilitiesMatch<Duel>>().leave().expect("left");
    leaver.update();
    net.partition(PeerAddr(2), true);
    let before: Vec<u32> = apps.iter().map(next_frame).collect();
    for _ in 0..120 {
        update(&mut apps, &net);
    }
    for (a, b) in apps.iter().zip(before) {
        let left: Vec<_> = seen(a)
            .session
            .iter()
            .filter_map(|e| match e {
                SessionEvent::Left { players, last_frame, .. } => {
                    Some((players.clone(), *last_frame))
                }
                _ => None,
            })
            .collect();
        assert_eq!(left.len(), 1, "{:?}", seen(a).session);
        assert_eq!(left[0].0, vec![2]);
        assert!(next_frame(a) >= b + 100, "the survivors play on");
        assert!(seen(a).ended.is_empty(), "{:?}", seen(a).ended);
    }
    // The survivors agree on the leaver's last frame and on every confirmed frame.
    let agreed = |a: &App| {
        seen(a).session.iter().find_map(|e| match e {
            SessionEvent::Left { last_frame, .. } => Some(*last_frame),
            _ => None,
        })
    };
    assert_eq!(agreed(&apps[0]), agreed(&apps[1]));
    let sums: Vec<Vec<u64>> =
        apps.iter().map(|a| confirmed_checksums(&state(a).runner())).collect();
    let n = sums[0].len().min(sums[1].len());
    assert!(n > 100);
    assert_eq!(sums[0][..n], sums[1][..n]);
}

#[test]
fn apps_that_do_not_tick_still_read_the_network_and_synchronise() {
    // A clock that never accumulates a tick: every update is a frame that does not advance
    // the match, so only reading the network between ticks can synchronise the peers.
    let net = EmulatedNetwork::new(NetConditions::PERFECT, 8);
    let mut apps = peer_apps(&net, 2, SETTINGS);
    for a in &mut apps {
        a.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::ZERO));
    }
    for _ in 0..200 {
        update(&mut apps, &net);
    }
    for a in &apps {
        assert_eq!(next_frame(a), 0, "no tick was due");
        let synchronised =
            seen(a).session.iter().filter(|e| matches!(e, SessionEvent::Synchronized(_))).count();
        assert_eq!(synchronised, 1, "{:?}", seen(a).session);
        assert!(seen(a).ended.is_empty(), "{:?}", seen(a).ended);
    }
    // Ticking from then on starts at once: the handshake is done.
    for a in &mut apps {
        a.insert_resource(TimeUpdateStrategy::ManualDuration(crate::common::TICK));
    }
    for _ in 0..10 {
        update(&mut apps, &net);
    }
    assert!(apps.iter().all(|a| next_frame(a) >= 5));
}
