//! Rejoins: a player that left (crash, quit, freeze) comes back into its own slot of a running
//! `LocalMatch`, with a game in which every player's input — and whether it is connected —
//! changes the state.

use crate::hostile::LOSSY;
use rollback_abilities::InputStatus;
use rollback_abilities::prelude::*;
use rollback_abilities::replay::{Replay, ReplayError};
use rollback_abilities::session::{
    LocalMatch, MatchConfig, NetConditions, PeerAddr, SessionError, SessionEvent,
};
use std::sync::Arc;

/// Every player's input folds into its own tally every frame; a disconnected player's frame
/// folds a value no input has, so the frames a player was away are in the checksum.
pub struct Comeback;

impl Game for Comeback {
    type Input = u8;
    type Component = ();
    type Global = [u32; 8];

    fn systems(world: &mut World<Self>) {
        for p in 0..world.players().min(8) {
            let v = match world.input_status(p) {
                InputStatus::Disconnected => 1000,
                _ => u32::from(world.input(p)) + 1,
            };
            let tally = &mut world.global_mut()[p];
            *tally = tally.wrapping_mul(31).wrapping_add(v);
        }
    }
}

/// A player's input: never the default, different per player and frame.
pub fn bot(seed: u64, player: usize, frame: u32) -> u8 {
    1 + ((seed as u32).wrapping_add(player as u32 * 7).wrapping_add(frame / 3) % 200) as u8
}

/// A fresh world of a `Comeback` match (what a restarted program builds).
pub fn comeback_world(players: usize) -> World<Comeback> {
    let content = Arc::new(Content::from_ron_str("()").expect("empty content"));
    let config = WorldConfig { players: players as u16, ..WorldConfig::default() };
    World::new(content, &Hooks::new(), config).expect("world")
}

/// A synchronised `Comeback` match, every peer recording.
pub fn comeback_match(
    players: usize,
    conditions: NetConditions,
    seed: u64,
) -> Result<LocalMatch<Comeback>, String> {
    let config = MatchConfig {
        players,
        conditions,
        net_seed: seed,
        departure_ticks: 60,
        ..MatchConfig::default()
    };
    let mut m = LocalMatch::<Comeback>::new(config, |_| comeback_world(players))
        .map_err(|e| e.to_string())?;
    for p in m.peers_mut() {
        p.runner.record(60);
    }
    m.synchronize().map_err(|e| e.to_string())?;
    Ok(m)
}

/// One tick with the bots' inputs.
pub fn tick(m: &mut LocalMatch<Comeback>, seed: u64) -> Result<(), String> {
    m.tick(|p, f, _| bot(seed, p, f), &mut [], |_| {}).map_err(|e| e.to_string())
}

/// How a player goes.
#[derive(Clone, Copy, Debug)]
pub enum Exit {
    /// Tells the others and closes.
    Quit,
    /// Its process dies.
    Crash,
    /// Its program hangs (its socket stays).
    Freeze,
    /// Its process dies and a new one comes straight back from a new address (a reloaded
    /// page), before the others saw the old one go.
    Restart,
}

/// The lowest confirmed frame of the peers in the match.
pub fn min_confirmed(m: &LocalMatch<Comeback>) -> u32 {
    m.peers()
        .iter()
        .filter(|p| !p.has_left() && !p.is_rejoining())
        .map(|p| p.confirmed_frame().unwrap_or(0))
        .min()
        .unwrap_or(0)
}

/// The frames at which each peer saw `players` rejoin.
pub fn rejoined_at(m: &LocalMatch<Comeback>, peer: usize, player: usize) -> Vec<u32> {
    m.peers()[peer]
        .events()
        .iter()
        .filter_map(|e| match e {
            SessionEvent::Rejoined { players, frame } if players.contains(&player) => Some(*frame),
            _ => None,
        })
        .collect()
}

/// Every peer's confirmed state checksums agree on every frame two of them hold, with at least
/// `overlap` frames in common between the first peer and each other; no desync.
pub fn all_agree(m: &LocalMatch<Comeback>, overlap: usize) -> Result<(), String> {
    let peers: Vec<_> = m.peers().iter().filter(|p| !p.has_left()).collect();
    if !m.confirmed_checksums_agree() {
        // Name the first frame two peers disagree on, and what each saw of the membership.
        let mut first: Option<(u32, usize, usize)> = None;
        for a in &peers {
            for b in &peers {
                let sums = b.runner.confirmed_checksums();
                let d = a
                    .runner
                    .confirmed_checksums()
                    .iter()
                    .find(|(f, s)| sums.get(f).is_some_and(|t| t != *s));
                if let Some((f, _)) = d
                    && first.is_none_or(|(g, ..)| *f < g)
                {
                    first = Some((*f, a.handle, b.handle));
                }
            }
        }
        let seen: Vec<_> = peers
            .iter()
            .map(|p| {
                let changes: Vec<_> = p
                    .events()
                    .iter()
                    .filter(|e| {
                        matches!(e, SessionEvent::Rejoined { .. } | SessionEvent::Left { .. })
                    })
                    .collect();
                (p.handle, p.channel(), p.runner.frame_base(), p.runner.absent().to_vec(), changes)
            })
            .collect();
        return Err(format!(
            "confirmed checksums differ first at (frame, peer, peer) {first:?}; {seen:?}"
        ));
    }
    for p in &peers {
        if p.runner.stats().desyncs > 0 {
            return Err(format!("peer {} saw {} desyncs", p.handle, p.runner.stats().desyncs));
        }
        let common = p
            .runner
            .confirmed_checksums()
            .keys()
            .filter(|f| peers[0].runner.confirmed_checksums().contains_key(f))
            .count();
        if common < overlap {
            return Err(format!("peer {} shares only {common} confirmed frames", p.handle));
        }
    }
    Ok(())
}

/// A match of `players`: each `(player, exit, leave, back)` leaves at frame `leave` the given
/// way and comes back once the match reached frame `back`; the match runs until every peer
/// confirmed `frames`. Returns what went wrong.
pub fn scenario(
    players: usize,
    conditions: NetConditions,
    seed: u64,
    plan: &[(usize, Exit, u32, u32)],
    frames: u32,
) -> Result<LocalMatch<Comeback>, String> {
    scenario_on(players, conditions, false, seed, plan, frames)
}

/// [`scenario`], with the side channel the rejoin protocol speaks on impaired too (`side`), as
/// UDP's is: its messages are lost, duplicated and reordered like GGRS's.
pub fn scenario_on(
    players: usize,
    conditions: NetConditions,
    side: bool,
    seed: u64,
    plan: &[(usize, Exit, u32, u32)],
    frames: u32,
) -> Result<LocalMatch<Comeback>, String> {
    let mut m = comeback_match(players, conditions, seed)?;
    m.network().set_side_channel_impaired(side);
    let mut state: Vec<u8> = vec![0; plan.len()]; // 0 in, 1 away, 2 back
    let limit = 40 * u64::from(frames) + 20_000;
    let mut ticks = 0u64;
    loop {
        let frame = min_confirmed(&m);
        // A member lost while the others switch to the new session is not handled (see the
        // `rejoin` module): players leave between rejoins.
        let quiet = m.peers().iter().all(|p| p.has_left() || !p.rejoin_under_way());
        for (k, &(player, exit, leave, back)) in plan.iter().enumerate() {
            if state[k] == 0 && frame >= leave && quiet && !m.peers()[player].has_left() {
                match exit {
                    Exit::Quit => m.quit(player).map_err(|e| e.to_string())?,
                    Exit::Crash | Exit::Restart => m.leave(player),
                    Exit::Freeze => m.stop(player),
                }
                state[k] = 1;
            } else if state[k] == 1 && frame >= back {
                let world = comeback_world(players);
                match exit {
                    Exit::Restart => m.rejoin_from(player, world, PeerAddr(100 + player as u16)),
                    _ => m.rejoin(player, world),
                }
                .expect("rejoin");
                state[k] = 2;
            }
        }
        let done = state.iter().all(|s| *s == 2)
            && m.peers().iter().all(|p| !p.has_left() && !p.is_rejoining())
            && m.all_confirmed(frames);
        if done {
            break;
        }
        tick(&mut m, seed)?;
        ticks += 1;
        if ticks > limit {
            let at: Vec<_> = m
                .peers()
                .iter()
                .map(|p| (p.confirmed_frame(), p.has_left(), p.is_rejoining(), p.channel()))
                .collect();
            return Err(format!("hang after {ticks} ticks: {at:?}"));
        }
    }
    // Every peer that stayed saw every rejoin, at the frame the joiner came back at.
    for &(player, ..) in plan {
        let at = rejoined_at(&m, player, player);
        let Some(&f) = at.last() else { return Err(format!("player {player} never rejoined")) };
        for p in (0..players).filter(|p| plan.iter().all(|(q, ..)| q != p)) {
            if !rejoined_at(&m, p, player).contains(&f) {
                let seen: Vec<_> = m.peers()[p]
                    .events()
                    .iter()
                    .filter(|e| {
                        matches!(
                            e,
                            SessionEvent::Rejoined { .. }
                                | SessionEvent::Left { .. }
                                | SessionEvent::RejoinAborted { .. }
                        )
                    })
                    .collect();
                return Err(format!(
                    "peer {p} did not see player {player} rejoin at {f}; it saw {seen:?}"
                ));
            }
        }
    }
    all_agree(&m, 100)?;
    Ok(m)
}

#[test]
fn a_crashed_player_rejoins_a_two_player_match() {
    let m = scenario(2, NetConditions::PERFECT, 1, &[(1, Exit::Crash, 60, 200)], 500).unwrap();
    // The joiner's state from F on is the member's: its confirmed checksums start at F.
    let f = rejoined_at(&m, 1, 1)[0];
    assert!(f > 60, "F = {f}");
    let first = *m.peers()[1].runner.confirmed_checksums().keys().next().unwrap();
    assert_eq!(first, f);
    // Every peer saw the rejoin being agreed.
    for p in m.peers() {
        assert!(
            p.events()
                .iter()
                .any(|e| matches!(e, SessionEvent::Rejoining { players } if players == &[1]))
                || p.handle == 1
        );
    }
}

#[test]
fn a_player_rejoins_a_lossy_four_player_match() {
    scenario(4, LOSSY, 7, &[(2, Exit::Crash, 50, 150)], 400).unwrap();
}

/// A member's replay covers the whole match, the gap and the rejoin included: it verifies
/// frame by frame with a game whose systems branch on the input status, and it says the
/// player was disconnected exactly from the frame after its last input until F.
#[test]
fn a_members_replay_verifies_across_a_gap_and_a_rejoin() {
    for seed in [4, 5] {
        let plan = [(2, Exit::Crash, 60, 160)];
        let mut m = scenario_on(3, LOSSY, true, seed, &plan, 400).unwrap();
        let f = rejoined_at(&m, 0, 2)[0];
        let last = m.peers()[0]
            .events()
            .iter()
            .find_map(|e| match e {
                SessionEvent::Left { players, last_frame, .. } if players == &[2] => *last_frame,
                _ => None,
            })
            .expect("the members agreed on player 2's last frame");
        for peer in [0, 1] {
            let replay = m.peers_mut()[peer].runner.take_recorder().unwrap().finish();
            assert!(replay.len() > f as usize + 100, "seed {seed}: {} frames", replay.len());
            for frame in 0..replay.len() as u32 {
                let away = frame > last && frame < f;
                let want = if away { InputStatus::Disconnected } else { InputStatus::Confirmed };
                assert_eq!(replay.statuses(frame)[2], want, "seed {seed}, peer {peer}, {frame}");
            }
            let v = replay.verify(&mut comeback_world(3)).unwrap();
            assert!(v.is_ok(), "seed {seed}, peer {peer}: diverged at {:?}", v.first_divergence);
        }
    }
}

/// The joiner's own replay covers the match from the frame it came back at: its first frame is
/// F, its initial state the members' state before F, it verifies frame by frame, its
/// checksums and statuses are the members' from F on, and it survives a round trip through
/// the file format.
#[test]
fn a_joiners_replay_starts_at_the_frame_it_came_back_at_and_verifies() {
    let seed = 9;
    let mut m = comeback_match(3, LOSSY, seed).unwrap();
    m.run(60, |p, f, _| bot(seed, p, f)).unwrap();
    m.leave(2);
    for _ in 0..300 {
        tick(&mut m, seed).unwrap();
    }
    m.rejoin(2, comeback_world(3)).expect("rejoin");
    m.peers_mut()[2].runner.record(60);
    let mut ticks = 0;
    while m.peers().iter().any(|p| p.is_rejoining()) || !m.all_confirmed(min_confirmed(&m) + 1) {
        tick(&mut m, seed).unwrap();
        ticks += 1;
        assert!(ticks < 6000, "player 2 never came back");
    }
    let target = min_confirmed(&m) + 300;
    while !m.all_confirmed(target) {
        tick(&mut m, seed).unwrap();
    }
    let f = rejoined_at(&m, 0, 2)[0];
    assert_eq!(rejoined_at(&m, 2, 2), vec![f]);
    let mine = m.peers_mut()[2].runner.take_recorder().unwrap().finish();
    assert!(m.peers()[2].runner.set_aside_replays().is_empty(), "nothing recorded before F");
    let theirs = m.peers_mut()[0].runner.take_recorder().unwrap().finish();
    assert_eq!(mine.first_frame(), f);
    assert!(mine.len() >= 250, "{} frames from {f}", mine.len());
    assert!(mine.frame(f - 1).is_none() && mine.frame(f).is_some());
    assert!(mine.keyframes.iter().all(|(k, _)| *k > f) && !mine.keyframes.is_empty());
    for frame in mine.frame_numbers().take_while(|k| *k < theirs.end_frame()) {
        let (a, b) = (mine.frame(frame).unwrap(), theirs.frame(frame).unwrap());
        assert_eq!((&a.inputs, &a.statuses, a.checksum), (&b.inputs, &b.statuses, b.checksum));
        assert_eq!(a.statuses[2], InputStatus::Confirmed, "frame {frame}");
    }
    // The members' state before F is where it starts.
    let mut at_f = comeback_world(3);
    theirs.seek(&mut at_f, f).unwrap();
    assert_eq!(at_f.state_bytes(), mine.initial);
    let decoded = Replay::decode(&mine.encode()).unwrap();
    assert_eq!(decoded, mine);
    let v = decoded.verify(&mut comeback_world(3)).unwrap();
    assert!(v.is_ok() && v.frames as usize == mine.len(), "diverged at {:?}", v.first_divergence);
    // Seeking moves a fresh world (before the first frame) onto the replay's frames.
    let mut w = comeback_world(3);
    decoded.seek(&mut w, f + 100).unwrap();
    assert_eq!(w.next_frame(), f + 100);
    assert_eq!(w.checksum(), decoded.frame(f + 99).unwrap().checksum);
    decoded.seek(&mut w, 0).unwrap();
    assert_eq!(w.next_frame(), f, "the replay's frames start at F");
    // A header that names another first frame than the initial state's is refused, typed.
    let mut lying = mine.clone();
    lying.header.first_frame = f + 1;
    assert_eq!(
        lying.verify(&mut comeback_world(3)),
        Err(ReplayError::FirstFrameMismatch { header: f + 1, state: f })
    );
}

/// A recording the runner cannot continue at a membership change (it lacks frames before the
/// new session's first) is set aside whole, and a new one starts at that frame; each
/// verifies on its own.
#[test]
fn a_recording_that_cannot_reach_the_new_sessions_frame_is_set_aside() {
    let seed = 10;
    let mut m = comeback_match(2, NetConditions::PERFECT, seed).unwrap();
    m.run(80, |p, f, _| bot(seed, p, f)).unwrap();
    // The state before frame 200 of some other history: frames 80..200 are not in the
    // recording.
    let mut elsewhere = comeback_world(2);
    for _ in 0..200 {
        elsewhere.step(&[1u8, 2][..]);
    }
    let runner = &mut m.peers_mut()[0].runner;
    let recorded = runner.recorder().unwrap().next_frame();
    runner.rebase(200, &elsewhere.state_bytes(), Vec::new()).unwrap();
    let aside = runner.set_aside_replays().to_vec();
    assert_eq!(aside.len(), 1);
    assert_eq!((aside[0].first_frame(), aside[0].end_frame()), (0, recorded));
    assert!(aside[0].verify(&mut comeback_world(2)).unwrap().is_ok());
    let fresh = runner.recorder().unwrap().replay().clone();
    assert_eq!((fresh.first_frame(), fresh.len()), (200, 0));
    assert_eq!(fresh.initial, elsewhere.state_bytes());
}

#[test]
fn a_quitter_and_a_frozen_player_rejoin_a_lossy_three_player_match() {
    scenario(3, LOSSY, 3, &[(0, Exit::Quit, 40, 120), (2, Exit::Freeze, 200, 300)], 500).unwrap();
}

/// Ticks until peer `peer` started the session a rejoin agreed on (its channel moved past
/// `channel`).
fn until_switched(m: &mut LocalMatch<Comeback>, peer: usize, channel: u32, seed: u64) {
    for _ in 0..5000 {
        if m.peers()[peer].channel() > channel {
            return;
        }
        tick(m, seed).unwrap();
    }
    panic!("peer {peer} never switched past channel {channel}");
}

/// Player 2 crashed and rejoins a three-player match; peer `lost` is lost `after` ticks after
/// the coordinator started the new session (the joiner among them). The others play on
/// without it, then it comes back too, and every peer agrees.
fn lost_during_switch(lost: usize, after: u32, conditions: NetConditions, seed: u64) {
    let mut m = comeback_match(3, conditions, seed).unwrap();
    m.run(60, |p, f, _| bot(seed, p, f)).unwrap();
    m.leave(2);
    for _ in 0..400 {
        tick(&mut m, seed).unwrap();
    }
    m.rejoin(2, comeback_world(3)).expect("rejoin");
    until_switched(&mut m, 0, 0, seed);
    for _ in 0..after {
        tick(&mut m, seed).unwrap();
    }
    m.leave(lost);
    // The others go on without it: 150 more frames confirmed on each of them.
    let target = min_confirmed(&m) + 150;
    let mut ticks = 0;
    while !m.all_confirmed(target) {
        tick(&mut m, seed).unwrap();
        ticks += 1;
        assert!(ticks < 6000, "hang after losing peer {lost} {after} ticks into the switch");
    }
    all_agree(&m, 50).unwrap();
    // And it comes back.
    m.rejoin(lost, comeback_world(3)).expect("rejoin");
    let mut ticks = 0;
    while m.peers().iter().any(|p| p.has_left() || p.is_rejoining()) {
        tick(&mut m, seed).unwrap();
        ticks += 1;
        assert!(ticks < 6000, "peer {lost} never came back");
    }
    let target = min_confirmed(&m) + 120;
    while !m.all_confirmed(target) {
        tick(&mut m, seed).unwrap();
        ticks += 1;
        assert!(ticks < 12_000, "hang after peer {lost} came back");
    }
    all_agree(&m, 50).unwrap();
}

#[test]
fn a_member_lost_as_the_new_session_starts_is_one_more_departure() {
    for after in [0, 1, 2, 4, 8] {
        lost_during_switch(1, after, NetConditions::PERFECT, 21);
    }
}

#[test]
fn a_joiner_lost_as_the_new_session_starts_is_one_more_departure() {
    for after in [0, 1, 2, 4, 8] {
        lost_during_switch(2, after, NetConditions::PERFECT, 22);
    }
}

#[test]
fn a_member_lost_during_the_switch_of_a_lossy_match() {
    for after in [0, 3, 6] {
        lost_during_switch(1, after, LOSSY, 23);
    }
}

#[test]
fn two_players_rejoin_a_lossy_four_player_match() {
    // The first seed of the four-player, two-rejoiner soak configuration.
    soak(4, 2, 0..1);
}

/// Player 0 comes back while player 1 is out, and player 1 asks to come back as the first
/// rejoin's new session starts: the member that coordinated the first must not answer the
/// second from the old membership (it would start an attempt the others never see, and the
/// match would split). The soak's seed that found it.
#[test]
fn a_rejoin_asked_for_as_another_switches_waits_for_the_new_session() {
    let plan = [(1, Exit::Crash, 191, 233), (0, Exit::Freeze, 142, 221)];
    scenario(3, LOSSY, 178, &plan, 600).unwrap();
}

/// A seeded plan: `leavers` distinct players (never all) leave at random frames in
/// `30..230`, each a random way, and come back 40–200 frames later.
pub fn random_plan(players: usize, leavers: usize, seed: u64) -> Vec<(usize, Exit, u32, u32)> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut plan = Vec::new();
    let mut chosen = Vec::new();
    while chosen.len() < leavers.min(players - 1) {
        let p = next(players as u64) as usize;
        if chosen.contains(&p) {
            continue;
        }
        chosen.push(p);
        let exit = [Exit::Quit, Exit::Crash, Exit::Freeze, Exit::Restart][next(4) as usize];
        let leave = 30 + next(200) as u32;
        let back = match exit {
            // Back while the others still wait out its departure time.
            Exit::Restart => leave + 1 + next(20) as u32,
            _ => leave + 40 + next(160) as u32,
        };
        plan.push((p, exit, leave, back));
    }
    plan
}

/// Runs the seeds of a configuration on the lossy network, the rejoin side channel included;
/// panics naming the first failure.
pub fn soak(players: usize, leavers: usize, seeds: std::ops::Range<u64>) {
    for seed in seeds {
        let plan = random_plan(players, leavers, seed);
        if let Err(e) = scenario_on(players, LOSSY, true, seed, &plan, 600) {
            panic!("{players} players, {leavers} rejoining, seed {seed}, plan {plan:?}: {e}");
        }
    }
}

/// The rejoin protocol over a side channel that loses a fifth of its messages and duplicates
/// and reorders others (UDP's, not a lobby's): the rejoins complete and every peer agrees. A
/// lost Go is the case to watch: the members that switched to the new session wait for one
/// that did not only a departure time before its first frame, so the coordinator sends the Go
/// again until the new session has synchronised with every member.
#[test]
fn rejoins_complete_when_the_side_channel_loses_messages() {
    for (players, leavers, seeds) in [(2, 1, 0..4), (3, 1, 10..13), (4, 2, 20..22)] {
        for seed in seeds {
            let plan = random_plan(players, leavers, seed);
            if let Err(e) = scenario_on(players, LOSSY, true, seed, &plan, 600) {
                panic!("{players} players, lossy side channel, seed {seed}, plan {plan:?}: {e}");
            }
        }
    }
}

#[test]
fn rejoins_under_loss_quick() {
    soak(2, 1, 0..2);
    soak(3, 2, 0..2);
}

/// What a configuration's seeds came to on the lossy network, the rejoin side channel
/// included: (seeds, hangs, other failures, the first failures).
pub fn soak_tally(
    players: usize,
    leavers: usize,
    seeds: std::ops::Range<u64>,
) -> (usize, usize, usize, Vec<String>) {
    let (mut runs, mut hangs, mut failures, mut first) = (0, 0, 0, Vec::new());
    for seed in seeds {
        runs += 1;
        let plan = random_plan(players, leavers, seed);
        if let Err(e) = scenario_on(players, LOSSY, true, seed, &plan, 600) {
            if e.starts_with("hang after") {
                hangs += 1;
            } else {
                failures += 1;
            }
            if first.len() < 3 {
                first.push(format!("seed {seed}, plan {plan:?}: {e}"));
            }
        }
    }
    (runs, hangs, failures, first)
}

#[test]
#[ignore = "100 seeds per configuration; run with: nice -n 10 cargo test --release --test integration rejoin::rejoins_under_loss_soak -- --ignored --nocapture"]
fn rejoins_under_loss_soak() {
    let mut bad = Vec::new();
    for (players, leavers) in [(2, 1), (3, 1), (3, 2), (4, 1), (4, 2), (8, 1), (8, 2)] {
        let (runs, hangs, failures, first) = soak_tally(players, leavers, 100..200);
        println!(
            "{players} players, {leavers} rejoining: {runs} seeds, {hangs} hangs, {failures} disagreements or errors"
        );
        for f in &first {
            println!("  {f}");
        }
        if hangs + failures > 0 {
            bad.push((players, leavers, hangs, failures));
        }
    }
    assert!(bad.is_empty(), "(players, rejoining, hangs, failures): {bad:?}");
}

mod hostile {
    use super::*;
    use rollback_abilities::session::rejoin::{
        CHUNK_BYTES, Claim, GIVE_UP_TICKS, Joiner, JoinerView, MAX_ADDRESS_BYTES,
        MAX_MESSAGE_BYTES, Member, MemberView, RejoinCommand, RejoinDecodeError, RejoinEvent,
        RejoinFault, RejoinMsg, WireAddress, sign_offer,
    };
    use rollback_abilities::session::{Identity, PeerAddr};

    fn hashes(w: &World<Comeback>) -> (u64, u64) {
        (w.content().hash(), twox_hash::XxHash3_64::oneshot(w.hooks_signature().as_bytes()))
    }

    fn joiner() -> (Joiner<PeerAddr>, World<Comeback>) {
        joiner_of(2, 1)
    }

    fn addrs3() -> Vec<PeerAddr> {
        vec![PeerAddr(0), PeerAddr(1), PeerAddr(2)]
    }

    /// Slot `slot`'s match identity in the joiner tests.
    fn id(slot: usize) -> Identity {
        Identity::from_secrets([slot as u8 + 1; 32], [slot as u8 + 101; 32])
    }

    /// The joiner of slot `slot` of a `players`-player match at addresses `0..players`, slot
    /// `i` with the identity [`id`]`(i)`.
    fn joiner_of(players: u16, slot: usize) -> (Joiner<PeerAddr>, World<Comeback>) {
        let w = comeback_world(usize::from(players));
        let (content_hash, hooks_hash) = hashes(&w);
        let view =
            JoinerView { slot, content_hash, hooks_hash, snapshot_len: w.snapshot_bytes() as u64 };
        let keys = (0..usize::from(players)).map(|s| id(s).public()).collect();
        (Joiner::new(view, (0..players).map(PeerAddr).collect(), keys, id(slot)), w)
    }

    /// The nonce of attempt `attempt`'s claim in the joiner tests.
    fn nonce_of(attempt: u64) -> [u8; 16] {
        let mut n = [0u8; 16];
        n[..8].copy_from_slice(&attempt.to_le_bytes());
        n[8] = 0xC1;
        n
    }

    /// `o` as its coordinator (its first member) makes it for joiner `j`: the joiner answers
    /// the claim's challenge from slot 0's address first, then gets the offer, signed, from
    /// `from`.
    fn give(j: &mut Joiner<PeerAddr>, slot: u16, from: PeerAddr, o: RejoinMsg) {
        let RejoinMsg::Offer { nonce, ref members, .. } = o else { panic!("{o:?}") };
        let coordinator = usize::from(members.first().copied().unwrap_or(0));
        j.receive(&PeerAddr(0), &RejoinMsg::Challenge { slot, nonce }.encode());
        let out = j.drain_outbox();
        assert!(
            out.iter().any(|(_, b)| matches!(RejoinMsg::decode(b), Ok(RejoinMsg::Claim { .. }))),
            "{out:?}"
        );
        j.receive(&from, &sign_offer(o, slot, &id(coordinator)).encode());
    }

    fn offer(w: &World<Comeback>, attempt: u64, bytes: &[u8], checksum: u64) -> RejoinMsg {
        let (content_hash, hooks_hash) = hashes(w);
        RejoinMsg::Offer {
            attempt,
            channel: 1,
            frame: 10,
            len: bytes.len() as u32,
            digest: twox_hash::XxHash3_64::oneshot(bytes),
            checksum,
            members: vec![0],
            content_hash,
            hooks_hash,
            addrs: vec![PeerAddr(0).to_wire()],
            at: PeerAddr(1).to_wire(),
            nonce: nonce_of(attempt),
            signature: Vec::new(),
        }
    }

    fn faults(j: &mut Joiner<PeerAddr>) -> Vec<RejoinFault> {
        j.drain_events()
            .into_iter()
            .filter_map(|e| match e {
                RejoinEvent::Fault { fault, .. } => Some(fault),
                _ => None,
            })
            .collect()
    }

    /// Delivers a whole state in chunks and ticks until the joiner asks to load it.
    fn deliver(j: &mut Joiner<PeerAddr>, attempt: u64, bytes: &[u8]) -> Option<Vec<u8>> {
        for (i, c) in bytes.chunks(CHUNK_BYTES).enumerate() {
            let m = RejoinMsg::Chunk { attempt, index: i as u32, bytes: c.to_vec() };
            j.receive(&PeerAddr(0), &m.encode());
            if i % 16 == 15 {
                j.tick();
            }
        }
        j.tick();
        j.drain_commands().into_iter().find_map(|c| match c {
            RejoinCommand::Load { bytes, .. } => Some(bytes),
            _ => None,
        })
    }

    /// The state of a world after 10 frames (what a member would offer).
    fn state_at_10(inputs: [u8; 2]) -> (Vec<u8>, u64) {
        let mut w = comeback_world(2);
        for _ in 0..10 {
            w.step(&inputs);
        }
        (w.state_bytes(), w.checksum())
    }

    #[test]
    fn a_forged_or_oversized_snapshot_is_refused() {
        let (mut j, w) = joiner();
        j.tick();
        let (honest, sum) = state_at_10([3, 4]);
        // Oversized: a size that is not this world's snapshot size.
        let mut big = offer(&w, 1 << 16, &honest, sum);
        if let RejoinMsg::Offer { len, .. } = &mut big {
            *len = 1 << 30;
        }
        give(&mut j, 1, PeerAddr(0), big);
        assert!(matches!(faults(&mut j)[..], [RejoinFault::SnapshotSize { got: 1073741824, .. }]));
        // From no member's address.
        give(&mut j, 1, PeerAddr(9), offer(&w, 1 << 16, &honest, sum));
        assert!(matches!(faults(&mut j)[..], [RejoinFault::Unexpected { .. }]));
        // A message longer than any rejoin message.
        j.receive(&PeerAddr(0), &vec![0u8; MAX_MESSAGE_BYTES + 1]);
        assert!(matches!(faults(&mut j)[..], [RejoinFault::Decode(_)]));
        // Bytes that are no state (digest and size right): refused by the snapshot validation.
        let garbage = vec![0xA5u8; honest.len()];
        give(&mut j, 1, PeerAddr(0), offer(&w, 2 << 16, &garbage, sum));
        let bytes = deliver(&mut j, 2 << 16, &garbage).expect("a complete state is loaded");
        let mut fresh = comeback_world(2);
        let result = fresh.load_bytes(&bytes).map(|_| fresh.checksum()).map_err(|e| e.to_string());
        assert!(result.is_err(), "garbage loaded");
        j.loaded(result);
        assert!(matches!(faults(&mut j)[..], [RejoinFault::SnapshotInvalid { .. }]));
        // The joiner called the attempt off and asks again.
        let out = j.drain_outbox();
        assert!(
            out.iter()
                .any(|(_, b)| RejoinMsg::decode(b) == Ok(RejoinMsg::Abort { attempt: 2 << 16 }))
        );
        // A valid state, but not the members': its checksum is not the one they agreed on.
        let (forged, forged_sum) = state_at_10([9, 9]);
        assert_ne!(forged_sum, sum);
        give(&mut j, 1, PeerAddr(0), offer(&w, 3 << 16, &forged, sum));
        let bytes = deliver(&mut j, 3 << 16, &forged).expect("loaded");
        let mut fresh = comeback_world(2);
        j.loaded(fresh.load_bytes(&bytes).map(|_| fresh.checksum()).map_err(|e| e.to_string()));
        assert!(matches!(
            faults(&mut j)[..],
            [RejoinFault::ChecksumMismatch { member: 0, theirs, ours }] if theirs == sum && ours == forged_sum
        ));
        // A chunk whose bytes do not match the digest: refused before loading.
        j.drain_outbox();
        give(&mut j, 1, PeerAddr(0), offer(&w, 4 << 16, &honest, sum));
        let mut tampered = honest.clone();
        tampered[5] ^= 1;
        assert!(deliver(&mut j, 4 << 16, &tampered).is_none());
        assert!(matches!(faults(&mut j)[..], [RejoinFault::SnapshotDigest]));
        // The honest state loads, and the Go starts the new session.
        give(&mut j, 1, PeerAddr(0), offer(&w, 5 << 16, &honest, sum));
        let bytes = deliver(&mut j, 5 << 16, &honest).expect("loaded");
        let mut fresh = comeback_world(2);
        j.loaded(fresh.load_bytes(&bytes).map(|_| fresh.checksum()).map_err(|e| e.to_string()));
        assert!(faults(&mut j).is_empty());
        let go = RejoinMsg::Go { attempt: 5 << 16, channel: 1, frame: 10, members: vec![0, 1] };
        j.receive(&PeerAddr(0), &go.encode());
        assert_eq!(
            j.drain_commands(),
            vec![RejoinCommand::Switch { channel: 1, frame: 10, members: vec![0, 1] }]
        );
        assert!(j.is_done());
    }

    fn rejoin_faults(m: &LocalMatch<Comeback>, peer: usize) -> Vec<RejoinFault> {
        m.peers()[peer]
            .events()
            .iter()
            .filter_map(|e| match e {
                SessionEvent::RejoinFault { fault, .. } => Some(fault.clone()),
                _ => None,
            })
            .collect()
    }

    fn join(m: &LocalMatch<Comeback>, slot: u16) -> Vec<u8> {
        let w = m.peers()[0].runner.world();
        let (content_hash, hooks_hash) = hashes(w);
        RejoinMsg::Join { slot, content_hash, hooks_hash, snapshot_len: w.snapshot_bytes() as u32 }
            .encode()
    }

    /// A claim on `slot` answering `nonce`, signed by peer `signer`'s match identity.
    fn claim(m: &LocalMatch<Comeback>, slot: u16, nonce: [u8; 16], signer: usize) -> Vec<u8> {
        let w = m.peers()[0].runner.world();
        let (content_hash, hooks_hash) = hashes(w);
        let c = Claim {
            slot,
            nonce,
            content_hash,
            hooks_hash,
            snapshot_len: w.snapshot_bytes() as u32,
        };
        RejoinMsg::Claim { slot, nonce, proof: c.prove(m.peers()[signer].identity()) }.encode()
    }

    /// Ticks until player `player` left on every other peer.
    fn until_left(m: &mut LocalMatch<Comeback>, player: usize, seed: u64) {
        for _ in 0..2000 {
            let gone = m.peers().iter().filter(|p| p.handle != player).all(|p| {
                p.events()
                    .iter()
                    .any(|e| matches!(e, SessionEvent::Left { players, .. } if players.contains(&player)))
            });
            if gone {
                return;
            }
            tick(m, seed).unwrap();
        }
        panic!("player {player} never left");
    }

    /// Ticks until every peer is back in and confirmed `frames` more frames.
    fn until_back(m: &mut LocalMatch<Comeback>, seed: u64, frames: u32) {
        for _ in 0..20_000 {
            if m.peers().iter().all(|p| !p.has_left() && !p.is_rejoining()) {
                break;
            }
            tick(m, seed).unwrap();
        }
        let target = min_confirmed(m) + frames;
        for _ in 0..20_000 {
            if m.all_confirmed(target) {
                return;
            }
            tick(m, seed).unwrap();
        }
        panic!("the match did not go on");
    }

    /// Who may claim a slot: only its owner's key, answering the challenge the coordinator sent
    /// to the slot, with the coordinator's content and snapshot size, once. Another member's
    /// key, a wrong or used nonce, other terms, or a claim from another address are refused.
    #[test]
    fn a_claim_is_the_slots_key_signing_a_fresh_challenge() {
        let ids: Vec<Identity> = (0..3).map(|_| Identity::generate().unwrap()).collect();
        let keys = ids.iter().map(Identity::public).collect();
        let addrs = vec![PeerAddr(0), PeerAddr(1), PeerAddr(2)];
        let mut coordinator = Member::new(addrs, keys, ids[0].clone(), [5; 32]);
        let view = view_of(0, vec![2]);
        let terms =
            |nonce| Claim { slot: 2, nonce, content_hash: 11, hooks_hash: 12, snapshot_len: 1000 };
        let join =
            RejoinMsg::Join { slot: 2, content_hash: 11, hooks_hash: 12, snapshot_len: 1000 };
        // Asked from player 1's address: the challenge goes to slot 2's.
        coordinator.receive(&PeerAddr(1), &join.encode(), &view);
        let out = coordinator.drain_outbox();
        let nonce = match out.as_slice() {
            [(to, bytes)] if *to == PeerAddr(2) => match RejoinMsg::decode(bytes) {
                Ok(RejoinMsg::Challenge { slot: 2, nonce }) => nonce,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        // Asked again: the same challenge.
        coordinator.receive(&PeerAddr(2), &join.encode(), &view);
        assert!(matches!(
            RejoinMsg::decode(&coordinator.drain_outbox()[0].1),
            Ok(RejoinMsg::Challenge { nonce: n, .. }) if n == nonce
        ));
        let send = |m: &mut Member<PeerAddr>, from: u16, c: Claim, id: &Identity| {
            let msg = RejoinMsg::Claim { slot: c.slot, nonce: c.nonce, proof: c.prove(id) };
            m.receive(&PeerAddr(from), &msg.encode(), &view);
            m.drain_events()
        };
        let bad = [RejoinEvent::Fault { from: Some(2), fault: RejoinFault::BadClaim { slot: 2 } }];
        // Player 1's key on slot 2's claim.
        assert_eq!(send(&mut coordinator, 2, terms(nonce), &ids[1]), bad);
        // The right key on another nonce (an old claim, replayed).
        assert_eq!(send(&mut coordinator, 2, terms([9; 16]), &ids[2]), bad);
        // The right key and nonce on other terms.
        let other = Claim { snapshot_len: 999, ..terms(nonce) };
        assert_eq!(send(&mut coordinator, 2, other, &ids[2]), bad);
        // A proof that is no signature at all.
        let msg = RejoinMsg::Claim { slot: 2, nonce, proof: vec![0; 64] };
        coordinator.receive(&PeerAddr(2), &msg.encode(), &view);
        assert_eq!(coordinator.drain_events(), bad);
        // The owner's claim, from another address, then from its own: the attempt starts.
        let events = send(&mut coordinator, 1, terms(nonce), &ids[2]);
        assert!(
            matches!(
                events.as_slice(),
                [RejoinEvent::Fault { from: Some(1), fault: RejoinFault::Unexpected { .. } }]
            ),
            "{events:?}"
        );
        assert_eq!(
            send(&mut coordinator, 2, terms(nonce), &ids[2]),
            [RejoinEvent::Rejoining { slot: 2 }]
        );
        // The nonce proved one claim: a copy of it (the network's duplicate, or the joiner's
        // answer to a repeated challenge) starts nothing and is no fault; the same nonce on
        // other terms is refused.
        assert_eq!(send(&mut coordinator, 2, terms(nonce), &ids[2]), []);
        assert_eq!(
            send(&mut coordinator, 2, Claim { snapshot_len: 999, ..terms(nonce) }, &ids[2]),
            bad
        );
        assert_eq!(send(&mut coordinator, 2, terms([9; 16]), &ids[2]), bad);
    }

    fn view_of(slot: usize, out: Vec<usize>) -> MemberView {
        MemberView {
            slot,
            channel: 0,
            out,
            departing: false,
            starting: false,
            unsynchronised: vec![],
            last_input: 40,
            content_hash: 11,
            hooks_hash: 12,
            snapshot_len: 1000,
        }
    }

    /// A player may come back from another address than its slot's: the challenge goes to
    /// the slot's address and to the one that asked, the slot's key proves the claim from
    /// there, and the members are told where the slot is now. A wrong key from a new address
    /// moves nothing.
    #[test]
    fn a_claim_from_a_new_address_moves_the_slot() {
        let ids: Vec<Identity> = (0..3).map(|_| Identity::generate().unwrap()).collect();
        let keys = ids.iter().map(Identity::public).collect();
        let addrs = vec![PeerAddr(0), PeerAddr(1), PeerAddr(2)];
        let mut coordinator = Member::new(addrs, keys, ids[0].clone(), [6; 32]);
        let view = view_of(0, vec![2]);
        let join =
            RejoinMsg::Join { slot: 2, content_hash: 11, hooks_hash: 12, snapshot_len: 1000 };
        let new = PeerAddr(7);
        coordinator.receive(&new, &join.encode(), &view);
        let out = coordinator.drain_outbox();
        let to: Vec<PeerAddr> = out.iter().map(|(a, _)| *a).collect();
        assert_eq!(to, [PeerAddr(2), new]);
        let nonce = match RejoinMsg::decode(&out[1].1) {
            Ok(RejoinMsg::Challenge { slot: 2, nonce }) => nonce,
            other => panic!("{other:?}"),
        };
        let claim = |id: &Identity| {
            let c = Claim { slot: 2, nonce, content_hash: 11, hooks_hash: 12, snapshot_len: 1000 };
            RejoinMsg::Claim { slot: 2, nonce, proof: c.prove(id) }.encode()
        };
        // Player 1's key, from the new address: refused, the slot stays where it was.
        coordinator.receive(&new, &claim(&ids[1]), &view);
        assert_eq!(
            coordinator.drain_events(),
            [RejoinEvent::Fault { from: None, fault: RejoinFault::BadClaim { slot: 2 } }]
        );
        assert_eq!(coordinator.address(2), Some(&PeerAddr(2)));
        // The slot's key, from the new address: the attempt starts there.
        coordinator.receive(&new, &claim(&ids[2]), &view);
        assert_eq!(coordinator.drain_events(), [RejoinEvent::Rejoining { slot: 2 }]);
        assert_eq!(coordinator.address(2), Some(&new));
        let pauses: Vec<_> = coordinator
            .drain_outbox()
            .into_iter()
            .filter_map(|(to, b)| match RejoinMsg::decode(&b) {
                Ok(RejoinMsg::Pause { joiner: 2, at, .. }) => Some((to, at)),
                _ => None,
            })
            .collect();
        assert_eq!(pauses, [(PeerAddr(1), new.to_wire())]);
    }

    /// A claim on a slot that still plays, from a new address, is the judge's (the member that
    /// coordinates once the slot is out): proven with the slot's key it takes the slot out
    /// (`RejoinCommand::Depart`) and starts nothing; another key is a `BadClaim`; the same
    /// claim from another member's address, or a Join from the slot's own address, is a
    /// `SlotInUse` as before, and the program at the slot's address is never written to.
    #[test]
    fn a_proven_claim_on_a_slot_that_plays_takes_it_out() {
        let ids: Vec<Identity> = (0..3).map(|_| Identity::generate().unwrap()).collect();
        let keys = ids.iter().map(Identity::public).collect();
        let mut judge = Member::new(addrs3(), keys, ids[0].clone(), [5; 32]);
        let view = view_of(0, vec![]);
        let join =
            RejoinMsg::Join { slot: 2, content_hash: 11, hooks_hash: 12, snapshot_len: 1000 };
        let new = PeerAddr(7);
        judge.receive(&new, &join.encode(), &view);
        let out = judge.drain_outbox();
        let nonce = match out.as_slice() {
            [(to, m)] if *to == new => match RejoinMsg::decode(m) {
                Ok(RejoinMsg::Challenge { slot: 2, nonce }) => nonce,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        let claim = |id: &Identity| {
            let c = Claim { slot: 2, nonce, content_hash: 11, hooks_hash: 12, snapshot_len: 1000 };
            RejoinMsg::Claim { slot: 2, nonce, proof: c.prove(id) }.encode()
        };
        judge.receive(&new, &claim(&ids[1]), &view);
        assert_eq!(
            judge.drain_events(),
            [RejoinEvent::Fault { from: None, fault: RejoinFault::BadClaim { slot: 2 } }]
        );
        assert!(judge.drain_commands().is_empty());
        judge.receive(&PeerAddr(1), &claim(&ids[2]), &view);
        assert_eq!(
            judge.drain_events(),
            [RejoinEvent::Fault { from: Some(1), fault: RejoinFault::SlotInUse { slot: 2 } }]
        );
        judge.receive(&PeerAddr(2), &join.encode(), &view);
        assert_eq!(
            judge.drain_events(),
            [RejoinEvent::Fault { from: Some(2), fault: RejoinFault::SlotInUse { slot: 2 } }]
        );
        assert!(judge.drain_commands().is_empty());
        // While a departure is agreed or a new session starts, the proof takes nothing out
        // and is no fault: the challenge stays, and the same claim counts once that is over.
        let departing = MemberView { departing: true, ..view_of(0, vec![]) };
        let starting = MemberView { starting: true, ..view_of(0, vec![]) };
        for busy in [departing, starting] {
            judge.receive(&new, &claim(&ids[2]), &busy);
            assert!(judge.drain_events().is_empty());
            assert!(judge.drain_commands().is_empty());
        }
        judge.receive(&new, &claim(&ids[2]), &view);
        assert!(judge.drain_events().is_empty());
        assert_eq!(judge.drain_commands(), [RejoinCommand::Depart { slot: 2 }]);
        assert!(!judge.busy());
        assert_eq!(judge.address(2), Some(&PeerAddr(2)), "the slot moves with the rejoin only");
        assert!(judge.drain_outbox().is_empty());
        // A copy of the claim (the network's, or the answer to a repeated challenge) changes
        // nothing and is no fault; another claim over that nonce is no proof.
        judge.receive(&new, &claim(&ids[2]), &view);
        assert!(judge.drain_events().is_empty());
        assert!(judge.drain_commands().is_empty());
        let c =
            Claim { slot: 2, nonce: [0; 16], content_hash: 11, hooks_hash: 12, snapshot_len: 1000 };
        judge.receive(
            &new,
            &RejoinMsg::Claim { slot: 2, nonce: [0; 16], proof: c.prove(&ids[2]) }.encode(),
            &view,
        );
        assert_eq!(
            judge.drain_events(),
            [RejoinEvent::Fault { from: None, fault: RejoinFault::BadClaim { slot: 2 } }]
        );
        // A member that is not the judge sends the asker to it.
        let keys = ids.iter().map(Identity::public).collect();
        let mut member = Member::new(addrs3(), keys, ids[1].clone(), [4; 32]);
        member.receive(&new, &join.encode(), &view_of(1, vec![]));
        let to_judge = RejoinMsg::Coordinator { slot: 0, at: PeerAddr(0).to_wire() }.encode();
        assert_eq!(member.drain_outbox(), [(new, to_judge)]);
    }

    /// A member follows a Pause to the address it names only for a slot that is out here;
    /// bytes that are no address are a fault.
    #[test]
    fn a_pause_moves_only_a_slot_that_is_out() {
        let ids: Vec<Identity> = (0..3).map(|_| Identity::generate().unwrap()).collect();
        let keys = ids.iter().map(Identity::public).collect();
        let mut member = Member::new(addrs3(), keys, ids[1].clone(), [7; 32]);
        let view = view_of(1, vec![2]);
        let pause = |joiner, at: Vec<u8>| RejoinMsg::Pause { attempt: 5, joiner, at }.encode();
        // Slot 0 plays here: not this member's membership.
        member.receive(&PeerAddr(0), &pause(0, PeerAddr(8).to_wire()), &view);
        let out = member.drain_outbox();
        assert!(
            matches!(RejoinMsg::decode(&out[0].1), Ok(RejoinMsg::Busy { attempt: 5 })),
            "{out:?}"
        );
        assert_eq!(member.address(0), Some(&PeerAddr(0)));
        // No address at all.
        member.receive(&PeerAddr(0), &pause(2, vec![1, 2, 3]), &view);
        assert!(matches!(
            member.drain_events().as_slice(),
            [RejoinEvent::Fault { from: Some(0), fault: RejoinFault::Unexpected { .. } }]
        ));
        assert_eq!(member.address(2), Some(&PeerAddr(2)));
        // Slot 2, out here, at a new address: followed.
        member.receive(&PeerAddr(0), &pause(2, PeerAddr(8).to_wire()), &view);
        assert_eq!(member.drain_events(), [RejoinEvent::Rejoining { slot: 2 }]);
        assert_eq!(member.address(2), Some(&PeerAddr(8)));
        let out = member.drain_outbox();
        assert!(
            matches!(RejoinMsg::decode(&out[0].1), Ok(RejoinMsg::Paused { attempt: 5, .. })),
            "{out:?}"
        );
    }

    /// A crashed player comes back from a new address, twice (it crashes again there), on a
    /// lossy network with a lossy side channel: every peer agrees, and the members take the
    /// slot's datagrams from the new address.
    #[test]
    fn a_player_rejoins_from_a_new_address() {
        let seed = 21;
        let mut m = comeback_match(3, LOSSY, seed).unwrap();
        m.network().set_side_channel_impaired(true);
        m.run(60, |p, f, _| bot(seed, p, f)).unwrap();
        for (round, new) in [(0, PeerAddr(12)), (1, PeerAddr(12))] {
            m.leave(2);
            let lefts = |m: &LocalMatch<Comeback>, p: usize| {
                m.peers()[p]
                    .events()
                    .iter()
                    .filter(|e| matches!(e, SessionEvent::Left { players, .. } if players == &[2]))
                    .count()
            };
            for _ in 0..2000 {
                if (0..2).all(|p| lefts(&m, p) > round) {
                    break;
                }
                tick(&mut m, seed).unwrap();
            }
            assert!((0..2).all(|p| lefts(&m, p) > round), "round {round}: player 2 never left");
            m.rejoin_from(2, comeback_world(3), new).expect("rejoin");
            until_back(&mut m, seed, 120);
            for p in m.peers().iter().filter(|p| p.handle != 2) {
                assert_eq!(p.guard.address_of(2), Some(new), "round {round}, peer {}", p.handle);
            }
        }
        all_agree(&m, 100).unwrap();
        // A stranger's claim on the slot with another player's key moves nothing.
        let stranger = m.network().socket(PeerAddr(13));
        stranger.send_raw(PeerAddr(0), join(&m, 2));
        stranger.send_raw(PeerAddr(0), claim(&m, 2, [0; 16], 1));
        for _ in 0..30 {
            tick(&mut m, seed).unwrap();
        }
        assert!(
            m.peers().iter().all(|p| p.handle == 2 || p.guard.address_of(2) == Some(PeerAddr(12)))
        );
    }

    /// A player whose program restarts at a new address before the members saw it go (a
    /// reloaded page, a program that crashed and came straight back) is not refused until the
    /// departure time has passed: its proven claim takes the slot out at once and the rejoin
    /// follows. Three players, the returning one at slot 0 (the coordinator's slot) and then at
    /// slot 2, with a departure time far longer than the whole test.
    #[test]
    fn a_player_back_before_its_departure_is_agreed_gets_in_at_once() {
        let seed = 31;
        let config = MatchConfig {
            players: 3,
            conditions: LOSSY,
            net_seed: seed,
            departure_ticks: 6000,
            ..MatchConfig::default()
        };
        let mut m = LocalMatch::<Comeback>::new(config, |_| comeback_world(3)).unwrap();
        for p in m.peers_mut() {
            p.runner.record(60);
        }
        m.synchronize().unwrap();
        m.network().set_side_channel_impaired(true);
        m.run(60, |p, f, _| bot(seed, p, f)).unwrap();
        for (player, new) in [(0, PeerAddr(20)), (2, PeerAddr(22))] {
            m.leave(player);
            m.rejoin_from(player, comeback_world(3), new).expect("rejoin");
            let mut ticks = 0;
            while m.peers().iter().any(|p| p.is_rejoining()) && ticks < 1000 {
                tick(&mut m, seed).unwrap();
                ticks += 1;
            }
            assert!(ticks < 1000, "player {player} was not back within 1000 ticks");
            println!("player {player}: back in {ticks} ticks (departure time 6000)");
            until_back(&mut m, seed, 120);
            for p in m.peers().iter().filter(|p| p.handle != player) {
                assert_eq!(p.guard.address_of(player), Some(new), "peer {}", p.handle);
                let lefts = p.events().iter().filter(
                    |e| matches!(e, SessionEvent::Left { players, .. } if players == &[player]),
                );
                assert_eq!(lefts.count(), 1, "peer {}: {:?}", p.handle, p.events());
            }
        }
        for p in 0..3 {
            let f = rejoin_faults(&m, p);
            assert!(f.is_empty(), "peer {p}: {f:?}");
        }
        all_agree(&m, 100).unwrap();
    }

    /// A player that restarts while another's rejoin is under way is not taken out in the
    /// middle of it: its proven claim takes its slot out only once no rejoin is under way on
    /// the judge (here the attempt it was a member of cannot finish, and is called off), and
    /// then both come back. Four players, departure time far longer than the test.
    #[test]
    fn a_player_back_during_anothers_rejoin_waits_for_it() {
        let seed = 37;
        let config = MatchConfig {
            players: 4,
            conditions: LOSSY,
            net_seed: seed,
            departure_ticks: 6000,
            ..MatchConfig::default()
        };
        let mut m = LocalMatch::<Comeback>::new(config, |_| comeback_world(4)).unwrap();
        m.synchronize().unwrap();
        m.network().set_side_channel_impaired(true);
        m.run(60, |p, f, _| bot(seed, p, f)).unwrap();
        m.leave(3);
        m.rejoin_from(3, comeback_world(4), PeerAddr(23)).expect("rejoin");
        let mut ticks = 0;
        while !m.peers().iter().any(|p| p.handle != 3 && p.rejoin_under_way()) {
            tick(&mut m, seed).unwrap();
            ticks += 1;
            assert!(ticks < 1000, "player 3's rejoin never started");
        }
        m.leave(1);
        m.rejoin_from(1, comeback_world(4), PeerAddr(21)).expect("rejoin");
        ticks = 0;
        while m.peers().iter().any(|p| p.is_rejoining()) {
            tick(&mut m, seed).unwrap();
            ticks += 1;
            assert!(ticks < 3000, "players 1 and 3 were not back within 3000 ticks");
        }
        println!("both back {ticks} ticks after the second restart (departure time 6000)");
        println!("DBG {:?}", m.peers()[0].events());
        until_back(&mut m, seed, 120);
        for p in m.peers().iter().filter(|p| p.handle == 0 || p.handle == 2) {
            let mut under_way = false;
            for e in p.events() {
                match e {
                    SessionEvent::Rejoining { .. } => under_way = true,
                    SessionEvent::Rejoined { .. } | SessionEvent::RejoinAborted { .. } => {
                        under_way = false;
                    }
                    SessionEvent::Left { players, .. } => {
                        assert!(
                            !under_way,
                            "peer {}: {players:?} left during a rejoin: {:?}",
                            p.handle,
                            p.events()
                        );
                    }
                    _ => {}
                }
            }
            for player in [1, 3] {
                let back = p.events().iter().filter(|e| {
                    matches!(e, SessionEvent::Rejoined { players, .. } if players.contains(&player))
                });
                assert_eq!(back.count(), 1, "peer {}: {:?}", p.handle, p.events());
            }
        }
        for p in 0..4 {
            let f = rejoin_faults(&m, p);
            assert!(f.is_empty(), "peer {p}: {f:?}");
        }
        all_agree(&m, 100).unwrap();
    }

    /// A second program of a slot that plays (its owner started another, say in a second tab)
    /// proves its claim while another player's rejoin is under way: nothing leaves in the
    /// middle of that rejoin, which completes, and every peer agrees.
    #[test]
    fn a_claim_on_a_playing_slot_during_a_rejoin_takes_nothing_out() {
        let seed = 41;
        let mut m = comeback_match(4, LOSSY, seed).unwrap();
        m.network().set_side_channel_impaired(true);
        m.run(60, |p, f, _| bot(seed, p, f)).unwrap();
        m.leave(3);
        until_left(&mut m, 3, seed);
        m.rejoin(3, comeback_world(4)).expect("rejoin");
        let mut ticks = 0;
        while !m.peers().iter().any(|p| p.handle != 3 && p.rejoin_under_way()) {
            tick(&mut m, seed).unwrap();
            ticks += 1;
            assert!(ticks < 1000, "player 3's rejoin never started");
        }
        // The second program asks the judge of slot 1 (slot 0) and answers its challenges
        // with slot 1's key, as a restarted program would, until player 3 is back.
        let second = m.network().socket(PeerAddr(21));
        let mut claims = 0;
        for t in 0.. {
            if !m.peers().iter().any(|p| p.is_rejoining() || p.rejoin_under_way()) {
                break;
            }
            assert!(t < 2000, "player 3 was not back within 2000 ticks");
            if t % 10 == 0 {
                second.send_raw(PeerAddr(0), join(&m, 1));
            }
            for (from, bytes) in second.recv_raw() {
                if let Ok(RejoinMsg::Challenge { slot: 1, nonce }) = RejoinMsg::decode(&bytes) {
                    second.send_raw(from, claim(&m, 1, nonce, 1));
                    claims += 1;
                }
            }
            tick(&mut m, seed).unwrap();
        }
        assert!(claims > 0, "the judge never challenged the second program");
        until_back(&mut m, seed, 60);
        for p in m.peers() {
            let left = p
                .events()
                .iter()
                .any(|e| matches!(e, SessionEvent::Left { players, .. } if players.contains(&1)));
            assert!(!left, "peer {}: {:?}", p.handle, p.events());
            let f = rejoin_faults(&m, p.handle);
            assert!(f.is_empty(), "peer {}: {f:?}", p.handle);
        }
        all_agree(&m, 60).unwrap();
    }

    /// A joiner asks for a bounded time: it gives up after the ticks it was given, says
    /// whether any member answered, and then sends and reads nothing.
    #[test]
    fn a_joiner_gives_up_and_says_whether_anyone_answered() {
        for answer in [false, true] {
            let (mut j, _) = joiner_of(3, 2);
            j.give_up_after(50);
            for t in 1..=50 {
                if answer && t == 20 {
                    // A member challenges, and nothing comes of the claim.
                    j.receive(
                        &PeerAddr(0),
                        &RejoinMsg::Challenge { slot: 2, nonce: [3; 16] }.encode(),
                    );
                }
                j.tick();
                assert_eq!(j.gave_up(), None, "tick {t}");
            }
            assert!(!j.drain_outbox().is_empty(), "it asked");
            j.drain_events();
            j.tick();
            assert_eq!(j.gave_up(), Some(answer));
            assert_eq!(j.drain_events(), [RejoinEvent::GaveUp { slot: 2, answered: answer }]);
            j.receive(&PeerAddr(0), &RejoinMsg::Challenge { slot: 2, nonce: [4; 16] }.encode());
            for _ in 0..20 {
                j.tick();
            }
            assert!(j.drain_outbox().is_empty());
            assert!(j.drain_events().is_empty());
        }
        assert!(joiner_of(2, 1).0.gave_up().is_none());
        assert_eq!(GIVE_UP_TICKS, 1800);
    }

    /// A player coming back into a match whose members are all gone is told so, after its
    /// departure time and `GIVE_UP_TICKS` more ticks, with a typed error that every later tick
    /// repeats.
    #[test]
    fn a_player_coming_back_to_a_match_that_is_gone_gives_up() {
        let seed = 43;
        let config = MatchConfig {
            players: 3,
            conditions: LOSSY,
            net_seed: seed,
            departure_ticks: 120,
            ..MatchConfig::default()
        };
        let mut m = LocalMatch::<Comeback>::new(config, |_| comeback_world(3)).unwrap();
        m.synchronize().unwrap();
        m.run(40, |p, f, _| bot(seed, p, f)).unwrap();
        m.leave(2);
        until_left(&mut m, 2, seed);
        m.leave(0);
        m.leave(1);
        m.rejoin(2, comeback_world(3)).expect("rejoin");
        let mut ticks = 0u64;
        let err = loop {
            match m.tick(|p, f, _| bot(seed, p, f), &mut [], |_| {}) {
                Ok(()) => ticks += 1,
                Err(e) => break e,
            }
            assert!(ticks <= 120 + GIVE_UP_TICKS, "no give-up after {ticks} ticks");
        };
        assert_eq!(ticks, 120 + GIVE_UP_TICKS);
        assert!(matches!(err, SessionError::RejoinGaveUp { answered: false }), "{err:?}");
        assert!(err.to_string().contains("no member of it answered"), "{err}");
        let again = m.tick(|p, f, _| bot(seed, p, f), &mut [], |_| {});
        assert!(matches!(again, Err(SessionError::RejoinGaveUp { answered: false })), "{again:?}");
        let aborted = m.peers()[2]
            .events()
            .iter()
            .filter(|e| matches!(e, SessionEvent::RejoinAborted { players } if players == &[2]))
            .count();
        assert_eq!(aborted, 1, "{:?}", m.peers()[2].events());
    }

    /// An offer names where every member and the joiner are; its addresses are decoded with
    /// bounds: one per member, each at most `MAX_ADDRESS_BYTES`, and its signature at most 64
    /// bytes. A signed offer to 38 members over IPv6 fits a message, one to 39 does not.
    #[test]
    fn an_offers_addresses_are_decoded_with_bounds() {
        let v6 = |port: u16| std::net::SocketAddr::from(([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1], port));
        let offer = |n: u16, addrs: Vec<Vec<u8>>, at: Vec<u8>| RejoinMsg::Offer {
            attempt: 1 << 16,
            channel: 1,
            frame: 10,
            len: 2000,
            digest: 3,
            checksum: 4,
            members: (0..n).collect(),
            content_hash: 5,
            hooks_hash: 6,
            addrs,
            at,
            nonce: [7; 16],
            signature: vec![8; 64],
        };
        let named = |n: u16| (0..n).map(|i| v6(5000 + i).to_wire()).collect::<Vec<_>>();
        for n in [1, 3, 38] {
            let m = offer(n, named(n), v6(7000).to_wire());
            let bytes = m.encode();
            assert!(bytes.len() <= MAX_MESSAGE_BYTES, "{n} members: {} bytes", bytes.len());
            assert_eq!(RejoinMsg::decode(&bytes), Ok(m), "{n} members");
        }
        assert_eq!(
            RejoinMsg::decode(&offer(39, named(39), v6(7000).to_wire()).encode()),
            Err(RejoinDecodeError::TooLong { len: MAX_MESSAGE_BYTES + 2 })
        );
        // One address too many, one too few.
        let mut more = named(3);
        more.push(v6(1).to_wire());
        let bounds = |m: RejoinMsg| match RejoinMsg::decode(&m.encode()) {
            Err(RejoinDecodeError::OutOfBounds { field, value }) => (field, value),
            other => panic!("{other:?}"),
        };
        assert_eq!(bounds(offer(3, more, v6(1).to_wire())), ("addrs", 4));
        assert_eq!(bounds(offer(3, named(2), v6(1).to_wire())), ("addrs", 2));
        // An address longer than any address.
        let mut long = named(3);
        long[1] = vec![7; MAX_ADDRESS_BYTES + 1];
        assert_eq!(bounds(offer(3, long, v6(1).to_wire())), ("addrs", 33));
        assert_eq!(bounds(offer(3, named(3), vec![7; MAX_ADDRESS_BYTES + 1])), ("at", 33));
        let mut long_signature = offer(3, named(3), v6(1).to_wire());
        if let RejoinMsg::Offer { signature, .. } = &mut long_signature {
            signature.push(9);
        }
        assert_eq!(bounds(long_signature), ("signature", 65));
        // Truncated, or of the previous layout.
        let bytes = offer(3, named(3), v6(1).to_wire()).encode();
        assert!(matches!(
            RejoinMsg::decode(&bytes[..bytes.len() - 1]),
            Err(RejoinDecodeError::Malformed { .. })
        ));
        let mut old = bytes.clone();
        old[..4].copy_from_slice(b"RBJ2");
        assert_eq!(RejoinMsg::decode(&old), Err(RejoinDecodeError::BadMagic));
        // Bytes within bounds that are no address decode; the joiner refuses them (below).
        for bad in [&[][..], &[1, 2, 3], &[0; 17], &[0; 19]] {
            assert_eq!(std::net::SocketAddr::from_wire(bad), None, "{bad:?}");
        }
    }

    /// A joiner that knows the addresses the match started at takes where the members are now
    /// from the coordinator's offer, and only from an offer it accepts: from a member, the
    /// coordinator at the address the offer came from, every entry an address, no two members
    /// at one. It hears a member only at the address the offer names (not at its old one), and
    /// the addresses become its slots' once the Go arrives.
    #[test]
    fn a_joiner_takes_the_members_addresses_from_the_offer() {
        let (mut j, w) = joiner_of(3, 2);
        j.tick();
        let mut state = comeback_world(3);
        for _ in 0..10 {
            state.step(&[3, 4, 5]);
        }
        let (bytes, sum) = (state.state_bytes(), state.checksum());
        let offer = |attempt: u64, addrs: [u16; 2], at: Vec<u8>| {
            let mut o = offer(&w, attempt, &bytes, sum);
            if let RejoinMsg::Offer { members, addrs: a, at: t, .. } = &mut o {
                *members = vec![0, 1];
                *a = addrs.iter().map(|p| PeerAddr(*p).to_wire()).collect();
                *t = at;
            }
            o
        };
        let here = PeerAddr(12).to_wire();
        let refused = [
            // From no member's address.
            (PeerAddr(9), offer(1 << 16, [0, 11], here.clone())),
            // The coordinator's address is not the one the offer came from.
            (PeerAddr(0), offer(2 << 16, [7, 11], here.clone())),
            // Two members at one address.
            (PeerAddr(0), offer(3 << 16, [0, 0], here.clone())),
            // Bytes that are no address.
            (PeerAddr(0), offer(4 << 16, [0, 11], vec![1, 2, 3])),
            // The joiner at a member's address.
            (PeerAddr(0), offer(5 << 16, [0, 11], PeerAddr(11).to_wire())),
        ];
        for (from, o) in refused {
            give(&mut j, 2, from, o.clone());
            assert!(matches!(faults(&mut j)[..], [RejoinFault::Unexpected { .. }]), "{o:?}");
            assert_eq!(j.progress(), (0, 0));
        }
        // Slot 1 moved to 11, and the joiner's claim came from 12.
        let attempt = 6 << 16;
        let captured = RejoinMsg::Captured { attempt, frame: 10, checksum: sum }.encode();
        // Slot 1's checksum heard at its old address before the offer does not count.
        j.receive(&PeerAddr(1), &captured);
        give(&mut j, 2, PeerAddr(0), offer(attempt, [0, 11], here));
        assert!(faults(&mut j).is_empty());
        assert!(deliver(&mut j, attempt, &bytes).is_none(), "loaded without slot 1's checksum");
        // Nor after it: the old address no longer speaks for slot 1.
        j.receive(&PeerAddr(1), &captured);
        assert!(matches!(faults(&mut j)[..], [RejoinFault::Unexpected { .. }]));
        j.tick();
        assert!(j.drain_commands().is_empty());
        j.receive(&PeerAddr(11), &captured);
        j.tick();
        let loaded = j.drain_commands().into_iter().find_map(|c| match c {
            RejoinCommand::Load { bytes, .. } => Some(bytes),
            _ => None,
        });
        assert_eq!(loaded.as_ref(), Some(&bytes));
        // The slots move only with the Go.
        assert_eq!(j.address(1), Some(&PeerAddr(1)));
        j.loaded(Ok(sum));
        let go = RejoinMsg::Go { attempt, channel: 1, frame: 10, members: vec![0, 1, 2] };
        j.receive(&PeerAddr(0), &go.encode());
        assert!(j.is_done());
        let now: Vec<_> = (0..3).map(|s| j.address(s).copied()).collect();
        assert_eq!(now, [Some(PeerAddr(0)), Some(PeerAddr(11)), Some(PeerAddr(12))]);
    }

    /// Player `moved` comes back from address `to`; later player 2 crashes and comes back as
    /// a restarted program that knows only the addresses the match started at, and gets back
    /// in. Every peer reaches `moved` at `to` and player 2 at its old address, the restarted
    /// player 2 saw no rejoin fault, and every peer agrees.
    fn a_restarted_player_finds(moved: usize, to: PeerAddr, seed: u64) {
        let mut m = comeback_match(3, LOSSY, seed).unwrap();
        m.network().set_side_channel_impaired(true);
        m.run(60, |p, f, _| bot(seed, p, f)).unwrap();
        m.leave(moved);
        until_left(&mut m, moved, seed);
        m.rejoin_from(moved, comeback_world(3), to).expect("rejoin");
        until_back(&mut m, seed, 120);
        m.leave(2);
        until_left(&mut m, 2, seed);
        m.rejoin(2, comeback_world(3)).expect("rejoin");
        until_back(&mut m, seed, 120);
        for p in m.peers() {
            if p.handle != moved {
                assert_eq!(p.guard.address_of(moved), Some(to), "peer {}", p.handle);
            }
            if p.handle != 2 {
                assert_eq!(p.guard.address_of(2), Some(PeerAddr(2)), "peer {}", p.handle);
            }
        }
        assert_eq!(rejoined_at(&m, 2, 2).len(), 1);
        let faults = rejoin_faults(&m, 2);
        assert!(faults.is_empty(), "{faults:?}");
        all_agree(&m, 100).unwrap();
    }

    /// Player 1 comes back from a new address; later player 2 crashes and comes back as a
    /// restarted program that knows only the addresses the match started at: the members tell
    /// it where player 1 is, and every peer agrees.
    #[test]
    fn a_restarted_player_finds_a_member_that_moved() {
        a_restarted_player_finds(1, PeerAddr(11), 24);
    }

    /// The coordinator (player 0, the lowest slot) comes back from a new address; later
    /// player 2 crashes and comes back as a restarted program that knows only the addresses
    /// the match started at, where the coordinator no longer is: player 1 tells it where the
    /// coordinator is, it takes the coordinator's signed offer from there, and every peer
    /// agrees. The members' early checksums from addresses it does not know yet are no faults.
    #[test]
    fn a_restarted_player_finds_a_coordinator_that_moved() {
        a_restarted_player_finds(0, PeerAddr(10), 25);
    }

    /// A member other than the coordinator answers a Join for a slot that is out with where
    /// the coordinator is now: to the slot's address or a stranger's, never to another
    /// member's. A stranger's Join for a slot that plays is sent to the member that judges
    /// claims on it.
    #[test]
    fn a_member_points_a_joiner_at_the_coordinator() {
        let ids: Vec<Identity> = (0..3).map(|_| Identity::generate().unwrap()).collect();
        let keys = ids.iter().map(Identity::public).collect();
        let addrs = vec![PeerAddr(10), PeerAddr(1), PeerAddr(2)];
        let mut member = Member::new(addrs, keys, ids[1].clone(), [8; 32]);
        let view = view_of(1, vec![2]);
        let join = |slot| {
            RejoinMsg::Join { slot, content_hash: 11, hooks_hash: 12, snapshot_len: 1000 }.encode()
        };
        let redirect = RejoinMsg::Coordinator { slot: 0, at: PeerAddr(10).to_wire() }.encode();
        for asker in [PeerAddr(2), PeerAddr(7)] {
            member.receive(&asker, &join(2), &view);
            assert_eq!(member.drain_outbox(), [(asker, redirect.clone())]);
        }
        member.receive(&PeerAddr(10), &join(2), &view);
        assert!(member.drain_outbox().is_empty());
        // A stranger asking for a slot that plays is sent to the member that judges claims on
        // it (the lowest other slot in the match): for slot 1, slot 0; for slot 0, this member,
        // which challenges the asker and no one else.
        member.receive(&PeerAddr(7), &join(1), &view);
        assert_eq!(member.drain_outbox(), [(PeerAddr(7), redirect.clone())]);
        member.receive(&PeerAddr(7), &join(0), &view);
        let out = member.drain_outbox();
        assert!(
            matches!(
                out.as_slice(),
                [(PeerAddr(7), m)] if matches!(RejoinMsg::decode(m), Ok(RejoinMsg::Challenge { slot: 0, .. }))
            ),
            "{out:?}"
        );
        assert!(member.drain_events().is_empty());
        assert!(!member.busy());
    }

    /// A joiner asks where a member says the coordinator is and answers a challenge from
    /// there, but takes an offer only signed with the coordinator's match identity for its own
    /// slot and its own answered challenge, once: a bad signature, another slot's key, an
    /// offer for another joiner, an unanswered nonce, an old offer replayed or an offer from a
    /// wrong address a member pointed it at load nothing; the honest offer from where the
    /// coordinator is now loads, and the slot is there once the Go arrives.
    #[test]
    fn an_offer_is_the_coordinators_signature_of_this_claim() {
        let (mut j, w) = joiner_of(3, 2);
        let mut state = comeback_world(3);
        for _ in 0..10 {
            state.step(&[3, 4, 5]);
        }
        let (bytes, sum) = (state.state_bytes(), state.checksum());
        let (coordinator, liar) = (PeerAddr(10), PeerAddr(20));
        // Member 1 says the coordinator is at 10; member 0's start address says 20.
        let redirect = |at: PeerAddr| RejoinMsg::Coordinator { slot: 0, at: at.to_wire() };
        j.receive(&PeerAddr(1), &redirect(coordinator).encode());
        j.receive(&PeerAddr(0), &redirect(liar).encode());
        // A member's early checksum from an address not known yet: ignored, no fault.
        let captured = |attempt| RejoinMsg::Captured { attempt, frame: 10, checksum: sum };
        j.receive(&PeerAddr(11), &captured(1 << 16).encode());
        j.tick();
        assert!(faults(&mut j).is_empty());
        let asked: Vec<PeerAddr> = j.drain_outbox().into_iter().map(|(a, _)| a).collect();
        assert_eq!(asked, [PeerAddr(0), PeerAddr(1), liar, coordinator]);
        let challenge = |attempt| RejoinMsg::Challenge { slot: 2, nonce: nonce_of(attempt) };
        let offer = |attempt: u64| {
            let mut o = offer(&w, attempt, &bytes, sum);
            if let RejoinMsg::Offer { members, addrs, at, .. } = &mut o {
                *members = vec![0, 1];
                *addrs = vec![coordinator.to_wire(), PeerAddr(1).to_wire()];
                *at = PeerAddr(2).to_wire();
            }
            o
        };
        // The challenge from where the coordinator is said to be gets the claim, there.
        for at in [coordinator, liar] {
            j.receive(&at, &challenge(1 << 16).encode());
            let out = j.drain_outbox();
            assert!(
                matches!(&out[..], [(to, b)] if *to == at
                    && matches!(RejoinMsg::decode(b), Ok(RejoinMsg::Claim { slot: 2, .. }))),
                "{out:?}"
            );
        }
        let mut bad_signature = sign_offer(offer(1 << 16), 2, &id(0));
        if let RejoinMsg::Offer { signature, .. } = &mut bad_signature {
            signature[7] ^= 1;
        }
        let mut at_liar = offer(1 << 16);
        if let RejoinMsg::Offer { addrs, .. } = &mut at_liar {
            addrs[0] = liar.to_wire();
        }
        let refused = [
            (coordinator, offer(1 << 16)),
            (coordinator, bad_signature),
            (coordinator, sign_offer(offer(1 << 16), 2, &id(1))),
            (coordinator, sign_offer(offer(1 << 16), 1, &id(0))),
            (coordinator, sign_offer(offer(9 << 16), 2, &id(0))),
            (liar, sign_offer(at_liar.clone(), 2, &id(1))),
            (liar, at_liar),
        ];
        for (from, o) in refused {
            j.receive(&from, &o.encode());
            assert_eq!(faults(&mut j), [RejoinFault::BadOffer { coordinator: 0 }], "{o:?}");
            assert_eq!(j.progress(), (0, 0));
        }
        // The coordinator's own offer, from where it names itself but not from where the liar
        // is: addresses the signature covers cannot be moved.
        let honest = sign_offer(offer(1 << 16), 2, &id(0));
        j.receive(&liar, &honest.encode());
        assert!(matches!(faults(&mut j)[..], [RejoinFault::Unexpected { .. }]));
        j.receive(&coordinator, &honest.encode());
        assert!(faults(&mut j).is_empty());
        assert_eq!(j.progress(), (0, bytes.len()));
        // Called off; the same offer again is a replay.
        j.receive(&coordinator, &RejoinMsg::Abort { attempt: 1 << 16 }.encode());
        assert_eq!(j.progress(), (0, 0));
        j.receive(&coordinator, &honest.encode());
        assert_eq!(faults(&mut j), [RejoinFault::BadOffer { coordinator: 0 }]);
        assert_eq!(j.progress(), (0, 0));
        // The next attempt, with a fresh challenge, loads and starts.
        let attempt = 2 << 16;
        j.receive(&coordinator, &challenge(attempt).encode());
        j.receive(&coordinator, &sign_offer(offer(attempt), 2, &id(0)).encode());
        j.receive(&PeerAddr(1), &captured(attempt).encode());
        for (i, c) in bytes.chunks(CHUNK_BYTES).enumerate() {
            let m = RejoinMsg::Chunk { attempt, index: i as u32, bytes: c.to_vec() };
            j.receive(&coordinator, &m.encode());
            if i % 16 == 15 {
                j.tick();
            }
        }
        j.tick();
        assert!(faults(&mut j).is_empty());
        let loaded = j.drain_commands().into_iter().find_map(|c| match c {
            RejoinCommand::Load { bytes, .. } => Some(bytes),
            _ => None,
        });
        assert_eq!(loaded.as_ref(), Some(&bytes));
        j.loaded(Ok(sum));
        let go = RejoinMsg::Go { attempt, channel: 1, frame: 10, members: vec![0, 1, 2] };
        j.receive(&PeerAddr(0), &go.encode());
        assert!(!j.is_done(), "a Go from the coordinator's old address");
        j.receive(&coordinator, &go.encode());
        assert!(j.is_done());
        assert_eq!(j.address(0), Some(&coordinator));
    }

    /// A redirect is decoded with bounds: a slot that cannot exist, an address longer than any.
    #[test]
    fn a_redirect_is_decoded_with_bounds() {
        let ok = RejoinMsg::Coordinator { slot: 255, at: PeerAddr(10).to_wire() };
        assert_eq!(RejoinMsg::decode(&ok.encode()), Ok(ok));
        let v6 = std::net::SocketAddr::from(([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1], 9000));
        let ok = RejoinMsg::Coordinator { slot: 0, at: v6.to_wire() };
        assert_eq!(RejoinMsg::decode(&ok.encode()), Ok(ok));
        let bounds = |m: RejoinMsg| match RejoinMsg::decode(&m.encode()) {
            Err(RejoinDecodeError::OutOfBounds { field, value }) => (field, value),
            other => panic!("{other:?}"),
        };
        let far = RejoinMsg::Coordinator { slot: 256, at: PeerAddr(1).to_wire() };
        assert_eq!(bounds(far), ("slot", 256));
        let long = RejoinMsg::Coordinator { slot: 0, at: vec![1; MAX_ADDRESS_BYTES + 1] };
        assert_eq!(bounds(long), ("at", 33));
        let bytes = RejoinMsg::Coordinator { slot: 1, at: PeerAddr(3).to_wire() }.encode();
        assert!(matches!(
            RejoinMsg::decode(&bytes[..bytes.len() - 1]),
            Err(RejoinDecodeError::Malformed { .. })
        ));
    }

    /// A state of hundreds of chunks crosses a side channel that loses a fifth of them: the
    /// joiner's acknowledgements name the chunks it holds past a lost one, and only the lost
    /// ones are sent again, so the transfer completes within an attempt's time.
    #[test]
    fn a_large_state_crosses_a_lossy_side_channel() {
        let seed = 23;
        let big = || {
            let content = Arc::new(Content::from_ron_str("()").expect("empty content"));
            let config = WorldConfig { players: 3, max_entities: 128, ..WorldConfig::default() };
            World::<Comeback>::new(content, &Hooks::new(), config).expect("world")
        };
        let chunks = big().snapshot_bytes().div_ceil(CHUNK_BYTES);
        assert!(chunks >= 400, "{chunks} chunks");
        let config = MatchConfig {
            players: 3,
            conditions: LOSSY,
            net_seed: seed,
            departure_ticks: 60,
            ..MatchConfig::default()
        };
        let mut m = LocalMatch::<Comeback>::new(config, |_| big()).unwrap();
        m.synchronize().unwrap();
        m.network().set_side_channel_impaired(true);
        m.run(60, |p, f, _| bot(seed, p, f)).unwrap();
        m.leave(2);
        until_left(&mut m, 2, seed);
        m.rejoin(2, big()).expect("rejoin");
        until_back(&mut m, seed, 120);
        assert!(m.confirmed_checksums_agree());
        let aborted = m.peers()[0]
            .events()
            .iter()
            .filter(|e| matches!(e, SessionEvent::RejoinAborted { .. }))
            .count();
        assert_eq!(aborted, 0, "{:?}", m.peers()[0].events());
    }

    #[test]
    fn a_claim_on_another_players_slot_is_refused() {
        let mut m = comeback_match(3, LOSSY, 11).unwrap();
        m.run(60, |p, f, _| bot(11, p, f)).unwrap();
        m.leave(2);
        until_left(&mut m, 2, 11);
        // Player 1 asks for player 2's slot (the challenge goes to slot 2's address, not to
        // it), claims it signed with its own key, then asks for its own slot (in use).
        let spoof = m.network().socket(PeerAddr(1));
        spoof.send_raw(PeerAddr(0), join(&m, 2));
        spoof.send_raw(PeerAddr(0), claim(&m, 2, [0; 16], 1));
        spoof.send_raw(PeerAddr(0), join(&m, 1));
        let before = min_confirmed(&m);
        for _ in 0..30 {
            tick(&mut m, 11).unwrap();
        }
        let f = rejoin_faults(&m, 0);
        assert!(f.contains(&RejoinFault::BadClaim { slot: 2 }), "{f:?}");
        assert!(f.contains(&RejoinFault::SlotInUse { slot: 1 }), "{f:?}");
        assert!(min_confirmed(&m) > before + 10, "the match held");
        // The slot's owner gets it back.
        m.rejoin(2, comeback_world(3)).expect("rejoin");
        until_back(&mut m, 11, 120);
        all_agree(&m, 100).unwrap();
    }

    #[test]
    fn a_rejoin_flood_is_cut_and_the_match_goes_on() {
        let mut m = comeback_match(3, LOSSY, 12).unwrap();
        m.run(60, |p, f, _| bot(12, p, f)).unwrap();
        m.leave(2);
        until_left(&mut m, 2, 12);
        let attacker = m.network().socket(PeerAddr(9));
        let forged = join(&m, 2);
        let before = min_confirmed(&m);
        for _ in 0..20 {
            for _ in 0..2000 {
                attacker.send_raw(PeerAddr(0), forged.clone());
            }
            tick(&mut m, 12).unwrap();
        }
        let f = rejoin_faults(&m, 0);
        assert!(f.iter().any(|f| matches!(f, RejoinFault::Flood { .. })), "{f:?}");
        assert!(min_confirmed(&m) > before + 10, "the flood held the match");
        m.rejoin(2, comeback_world(3)).expect("rejoin");
        until_back(&mut m, 12, 120);
        all_agree(&m, 100).unwrap();
    }

    #[test]
    fn a_joiner_that_stalls_mid_transfer_is_dropped_and_can_come_back() {
        let mut m = comeback_match(2, NetConditions::PERFECT, 13).unwrap();
        m.run(60, |p, f, _| bot(13, p, f)).unwrap();
        m.leave(1);
        until_left(&mut m, 1, 13);
        m.rejoin(1, comeback_world(2)).expect("rejoin");
        // Until part of the state arrived, then the joiner hangs.
        for _ in 0..200 {
            let (got, total) = m.peers()[1].rejoin_progress();
            if got > 0 && got < total {
                break;
            }
            tick(&mut m, 13).unwrap();
        }
        let (got, total) = m.peers()[1].rejoin_progress();
        assert!(got > 0 && got < total, "{got} of {total}");
        m.stop(1);
        for _ in 0..200 {
            tick(&mut m, 13).unwrap();
        }
        let f = rejoin_faults(&m, 0);
        assert!(f.contains(&RejoinFault::JoinerStalled { slot: 1 }), "{f:?}");
        assert!(
            m.peers()[0]
                .events()
                .iter()
                .any(|e| matches!(e, SessionEvent::RejoinAborted { players } if players == &[1]))
        );
        // The member plays on, and the player can come back.
        let before = min_confirmed(&m);
        for _ in 0..60 {
            tick(&mut m, 13).unwrap();
        }
        assert!(min_confirmed(&m) > before + 30);
        m.rejoin(1, comeback_world(2)).expect("rejoin");
        until_back(&mut m, 13, 120);
        all_agree(&m, 100).unwrap();
    }
}
