//! Signed inputs: every peer signs its own input with its per-match identity, so a survivor
//! takes a crashed player's frames from another survivor only when the crashed player signed
//! them, and two different signed inputs for one frame become evidence naming the peer.
//! `Tally` matches: every player's input changes the state.

use crate::departures::{survivors_agree, tally_lefts, tally_match, tally_tick};
use crate::hostile::{LOSSY, faults, send};
use rollback_abilities::session::{
    Equivocation, Fault, LocalMatch, NetConditions, PeerAddr, SessionEvent, SignedInputs, forge,
};

fn equivocations<G: rollback_abilities::prelude::Game>(
    m: &LocalMatch<G>,
    peer: usize,
) -> Vec<(String, Equivocation)> {
    m.peers()[peer]
        .events()
        .iter()
        .filter_map(|e| match e {
            SessionEvent::Equivocation { peer, evidence } => {
                Some((peer.clone(), evidence.as_ref().clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn genuine_relayed_frames_of_a_crashed_player_are_taken_and_every_survivor_agrees() {
    // Player 1's link to peer 0 goes down a few frames before player 1 crashes: peer 0 lacks
    // its last frames, which peers 2 and 3 hold and relay with player 1's signature. Peer 0
    // takes them, and every survivor disconnects player 1 after the same frame.
    for seed in 0..3 {
        let mut m = tally_match(4, LOSSY, seed, 120).unwrap();
        for _ in 0..80 {
            tally_tick(&mut m, seed).unwrap();
        }
        let down = NetConditions { loss_percent: 100, ..NetConditions::PERFECT };
        m.network().set_link_conditions(PeerAddr(0), PeerAddr(1), down);
        for _ in 0..6 {
            tally_tick(&mut m, seed).unwrap();
        }
        let own = m.peers()[0].guard.last_input_frame(&PeerAddr(1)).unwrap();
        m.leave(1);
        for t in 0..700 {
            tally_tick(&mut m, seed).unwrap_or_else(|e| panic!("seed {seed}, tick {t}: {e}"));
        }
        survivors_agree(&m, &[0, 2, 3], 1, 500).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let lefts = tally_lefts(&m, 0);
        let last = lefts[0].1.expect("player 1 sent input") as i32;
        assert!(last > own, "seed {seed}: peer 0 took no relayed frame ({last} vs its {own})");
        assert!(faults(&m, 0).is_empty(), "seed {seed}: {:?}", faults(&m, 0));
        let relayer = m.peers()[0].guard.signed_inputs(&PeerAddr(1), own + 1, last).unwrap();
        assert!(relayer.verifies(&m.peers()[1].identity().public()), "seed {seed}");
    }
}

#[test]
fn forged_relays_of_a_crashed_players_input_are_refused_and_no_survivor_parts() {
    // Player 1 crashes; the member at player 3 relays made-up frames of player 1's input, one
    // set to peer 0 and another to peer 2, unsigned or signed with its own key. Without signed
    // inputs a survivor took such frames provisionally, until the survivors' digests
    // disagreed. Now a relay player 1 did not sign is refused at once, and every survivor, the
    // liar too, plays on with the same input of player 1.
    for seed in 0..4 {
        let mut m = tally_match(4, LOSSY, seed, 120).unwrap();
        for _ in 0..80 {
            tally_tick(&mut m, seed).unwrap();
        }
        m.leave(1);
        for t in 0..900 {
            // Thirty forged relays to each while the survivors agree on player 1's departure,
            // fewer than a ban takes.
            if (110..140).contains(&t) && t % 2 == 0 {
                for (to, fake) in [(0, 7u8), (2, 9u8)] {
                    let g = &m.peers()[to].guard;
                    let (Some(magic), Some(last)) =
                        (g.remote_magic(&PeerAddr(3)), g.last_input_frame(&PeerAddr(1)))
                    else {
                        continue;
                    };
                    let frames = vec![vec![fake]; 32];
                    let own_key = SignedInputs::sign(
                        m.peers()[3].identity(),
                        last + 1,
                        [0; 32],
                        frames.clone(),
                    );
                    send(&m, 3, to, &forge::relay_in(magic, &[1], 1, last + 1, frames));
                    send(&m, 3, to, &forge::relay_signed(magic, &[1], 1, &own_key));
                }
            }
            tally_tick(&mut m, seed).unwrap_or_else(|e| panic!("seed {seed}, tick {t}: {e}"));
        }
        let refused = Fault::BadDepartureMessage { what: "relays input its player did not sign" };
        assert!(faults(&m, 0).contains(&refused), "seed {seed}: {:?}", faults(&m, 0));
        survivors_agree(&m, &[0, 2, 3], 1, 700).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
}

#[test]
fn equivocation_is_reported_once_with_evidence_that_verifies_offline() {
    // Player 1 signs a second input for a frame peer 0 already holds (as it would had it sent
    // peer 2 other input than peer 0), crashes, and the member at player 3 relays that signed
    // run to peer 0 while the survivors agree on player 1's departure. Peer 0 reports player 1
    // once, with both signed inputs; the evidence verifies under player 1's identity only, and
    // not once tampered with.
    let mut m = tally_match(4, NetConditions::PERFECT, 3, 60).unwrap();
    for _ in 0..60 {
        tally_tick(&mut m, 3).unwrap();
    }
    m.leave(1);
    let held = m.peers()[0].guard.last_input_frame(&PeerAddr(1)).unwrap();
    let genuine = m.peers()[0].guard.signed_inputs(&PeerAddr(1), held - 3, held).unwrap();
    let player1 = m.peers()[1].identity().public();
    assert!(genuine.verifies(&player1));
    let mut inputs = genuine.inputs.clone();
    inputs[0][0] ^= 0x55;
    let other = SignedInputs::sign(m.peers()[1].identity(), genuine.first, genuine.before, inputs);
    let mut relayed = 0;
    for t in 0..300 {
        if m.peers()[0].guard.is_cut_off(&PeerAddr(1)) && relayed < 5 {
            relayed += 1;
            let magic = m.peers()[0].guard.remote_magic(&PeerAddr(3)).unwrap();
            send(&m, 3, 0, &forge::relay_signed(magic, &[1], 1, &other));
        }
        tally_tick(&mut m, 3).unwrap_or_else(|e| panic!("tick {t}: {e}"));
    }
    assert_eq!(relayed, 5, "the departure began");
    let reports = equivocations(&m, 0);
    assert_eq!(reports.len(), 1, "{reports:?}");
    let (peer, evidence) = &reports[0];
    assert_eq!(peer, "PeerAddr(1)");
    assert_eq!(evidence.players, vec![1]);
    assert_eq!(evidence.identity, player1);
    assert_eq!(evidence.frame, held - 3);
    assert!(evidence.verify(&player1), "{evidence}");
    assert!(!evidence.verify(&m.peers()[2].identity().public()), "another member's key");
    let stored = Equivocation::from_bytes(&evidence.to_bytes()).unwrap();
    assert!(stored.verify(&player1), "the stored evidence");
    let mut tampered = evidence.clone();
    tampered.one.inputs[0][0] ^= 0x01;
    assert!(!tampered.verify(&player1), "a changed input");
    let mut tampered = evidence.clone();
    tampered.other.signature[0] ^= 0x01;
    assert!(!tampered.verify(&player1), "a changed signature");
    // Nobody else saw it, and the relayer was not faulted for passing on what player 1 signed.
    assert!(equivocations(&m, 2).is_empty());
    assert!(faults(&m, 0).is_empty(), "{:?}", faults(&m, 0));
}
