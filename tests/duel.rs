//! The duel (`rollback_abilities_kit::duel`): whole matches over the in-memory emulated network
//! (checksums agree, the report adds up, the replay verifies, bots are deterministic), a player
//! leaving mid-match (`--leave`) or leaving and coming back (`--rejoin`), and frame-by-frame
//! checks of each move and recipe on a plain stepped world.

use rollback_abilities::CueKind;
use rollback_abilities::num::{self, Frame};
use rollback_abilities::prelude::*;
use rollback_abilities::replay::Replay;
use rollback_abilities::{AbilityDefId, ActivationFailure};
use rollback_abilities_kit::duel::{
    self, Duel, DuelMatch, Input, KO_PAUSE, LIGHT_HITSTOP, LastInput, MatchOptions, MatchReport,
};

// ============================================================================================
// Whole matches
// ============================================================================================

fn play(options: MatchOptions) -> (MatchReport, Replay) {
    let outcome =
        DuelMatch::new(options).and_then(DuelMatch::run).unwrap_or_else(|e| panic!("{e}"));
    (outcome.report, outcome.replay)
}

/// The checks every finished match must pass.
fn assert_sound(r: &MatchReport) {
    assert!(r.checksums_agree(), "checksums disagree: {:?}", r.first_disagreement);
    assert_eq!(r.compared_frames, r.frames);
    assert!(r.replay_verified(), "replay diverges at {:?}", r.replay_divergence);
    assert_eq!(r.peers.len(), r.options.peers);
    for p in &r.peers {
        assert_eq!(p.stats.desyncs, 0);
        assert!(p.checksums.len() >= r.frames as usize);
        // Every burst played was confirmed, cancelled or is pending; none is lost.
        assert!(p.cues.balanced(), "peer {}: {:?}", p.player, p.cues);
        assert!(p.cues.bursts_confirmed > 0);
        assert!(p.cues.bursts_confirmed <= p.cues.confirmed);
        // Frames advanced for the first time cover the match (re-simulations are separate).
        assert!(p.stats.frames >= u64::from(r.frames), "{:?}", p.stats);
    }
    // Every peer confirmed the same bursts: the confirmed timeline is the same everywhere.
    let bursts = |p: &rollback_abilities_kit::duel::PeerSummary| -> Vec<(String, u64)> {
        p.cues.by_tag.iter().map(|(t, c)| (t.clone(), c.0)).collect()
    };
    assert!(r.peers.iter().all(|p| bursts(p) == bursts(&r.peers[0])), "{:?}", r.peers);
    // The proof of exactly-once: every peer's confirmed cue log holds exactly the bursts of
    // the replay played straight, each once, and exactly its persistent instances (one that
    // began and ended inside one rollback is presented late, once confirmed).
    assert!(r.cue_logs_agree(), "{:?}", r.cue_logs);
    assert_eq!(r.cue_logs.len(), r.survivors().count());
    let replay_bursts = r.replay_cues.iter().filter(|k| k.kind == CueKind::Executed).count();
    let replay_persistent = r.replay_cues.len() - replay_bursts;
    assert!(replay_bursts > 0 && replay_persistent > 0);
    for l in &r.cue_logs {
        assert_eq!(l.bursts, replay_bursts, "peer {}", l.player);
        assert_eq!(l.persistent, replay_persistent, "peer {}: {l:?}", l.player);
    }
    assert!(r.reproducible(), "a bot decided from an unconfirmed frame");
    assert!(r.is_ok());
    assert_eq!(r.fighters.len(), r.options.peers);
    assert!(r.fighters.iter().any(|f| f.damage_taken > Fx::ZERO), "nobody took damage");
    let text = r.to_string();
    assert!(text.contains("Verdict: every check passed"), "{text}");
    assert!(text.contains(&format!("{} confirmed frames identical", r.frames)), "{text}");
}

/// A lossy, jittery 2-peer match: rollbacks happen, everything agrees, the report adds up, and
/// every recipe shows up in the confirmed timeline.
#[test]
fn two_peers_over_a_lossy_network() {
    let options = MatchOptions {
        frames: 2400,
        seed: 11,
        latency_ms: 50,
        jitter_ms: 40,
        loss_percent: 15,
        ..MatchOptions::default()
    };
    let (r, _) = play(options);
    assert_sound(&r);
    assert!(r.rollbacks() > 50, "rollbacks: {}", r.rollbacks());
    assert!(r.max_rollback() >= 2);
    assert!(r.resimulated() > r.rollbacks());
    assert!(r.peers.iter().any(|p| p.cues.deduplicated > 0), "no re-simulated cue was seen");
    let s = r.stats;
    assert!(s.melee_hits > 0 && s.crits > 0 && s.lifesteal_heals > 0, "{s:?}");
    assert!(s.poison_stacks > 0 && s.poison_ticks > 0, "{s:?}");
    assert!(s.shield_blocks > 0 && s.stuns > 0 && s.stun_cancels > 0, "{s:?}");
    assert!(s.fireballs_launched > 0 && s.fireball_hits > 0, "{s:?}");
    assert!(s.heavy_cancels > 0 && s.kos > 0 && r.rounds + r.matches > 0, "{s:?}");
    // The confirmed cues tell the same story as the simulation's counters.
    let bursts = |t: &str| r.peers[0].cues.by_tag.get(t).map_or(0, |c| c.0);
    assert_eq!(bursts("GameplayCue.Hit.Crit"), u64::from(s.crits));
    assert_eq!(bursts("GameplayCue.Lifesteal"), u64::from(s.lifesteal_heals));
    assert_eq!(bursts("GameplayCue.Hit.Blocked"), u64::from(s.shield_blocks));
    assert_eq!(bursts("GameplayCue.Fireball.Launch"), u64::from(s.fireballs_launched));
    assert_eq!(bursts("GameplayCue.Fireball.Impact"), u64::from(s.fireball_hits));
    assert_eq!(bursts("GameplayCue.KO"), u64::from(s.kos));
    assert_eq!(bursts("GameplayCue.Poison"), u64::from(s.poison_ticks));
    assert_eq!(
        bursts("GameplayCue.Hit.Light") + bursts("GameplayCue.Hit.Heavy"),
        u64::from(s.melee_hits)
    );
}

/// A long match between bots: matches are decided (best of three), the bots ask for the
/// rematch and play on, and the report names the last match's winner and the match in play.
#[test]
fn matches_end_and_rematch_in_the_report() {
    let options =
        MatchOptions { frames: 7200, seed: 5, loss_percent: 0, ..MatchOptions::default() };
    let (r, _) = play(options);
    assert_sound(&r);
    assert!(r.matches >= 1, "no match decided in {} frames: {:?}", r.frames, r.match_state);
    let text = r.to_string();
    let line = text.lines().find(|l| l.starts_with("Match (best of 3): ")).unwrap_or_default();
    let last = match r.last_match_winner {
        Some(p) => format!("the last won by player {p}"),
        None => "the last drawn".to_string(),
    };
    assert!(line.contains(&last), "{line}\n{text}");
    // A decided match's winner won more rounds than anyone else.
    if let duel::MatchState::MatchOver { winner: Some(p), .. } = r.match_state {
        let wins: Vec<u32> = r.fighters.iter().map(|f| f.rounds_won).collect();
        assert!(wins.iter().enumerate().all(|(q, w)| q == p || *w < wins[p]), "{wins:?}");
    }
}

/// The bots decide from frames every peer has confirmed (`BOT_REACTION_FRAMES` back), so the
/// network cannot change the match: the same seed gives the same confirmed timeline, frame by
/// frame, on a perfect network, a lossy one and a slow one (the `--udp` mode's run-to-run
/// reproducibility rests on this).
#[test]
fn the_network_cannot_change_the_match() {
    let base = MatchOptions { frames: 900, seed: 21, ..MatchOptions::default() };
    let networks = [(0, 0, 0), (40, 12, 5), (90, 30, 15), (150, 0, 0)];
    let mut reference: Option<(MatchReport, Replay)> = None;
    for (latency_ms, jitter_ms, loss_percent) in networks {
        let (r, replay) = play(MatchOptions { latency_ms, jitter_ms, loss_percent, ..base });
        assert_sound(&r);
        match &reference {
            None => reference = Some((r, replay)),
            Some((first, first_replay)) => {
                let at = format!("{latency_ms} ms + {jitter_ms} ms, {loss_percent} % loss");
                let n = base.frames as usize;
                let (mine, theirs) = (&r.peers[0].checksums[..n], &first.peers[0].checksums[..n]);
                let differs = (0..n).find(|&f| mine[f] != theirs[f]);
                assert_eq!(differs, None, "{at}: the confirmed timelines differ from that frame");
                assert!(replay.frames == first_replay.frames, "{at}: the replays differ");
                assert_eq!(r.replay_cues, first.replay_cues, "{at}");
                assert_eq!(r.winner, first.winner, "{at}");
            }
        }
    }
}

/// A slow link (100+ ms one way: the prediction window runs out before the first input
/// arrives) used to stall both peers for good in the emulated network: the paced resend
/// repeated a message that started before the frames the receiver could decode against. The
/// resend now starts after the newest acknowledged frame, as GGRS's own resend does.
#[test]
fn a_slow_link_does_not_stall() {
    for latency_ms in [100, 200, 300] {
        let options = MatchOptions {
            frames: 300,
            latency_ms,
            jitter_ms: 0,
            loss_percent: 0,
            ..MatchOptions::default()
        };
        let (r, _) = play(options);
        assert_sound(&r);
        assert!(r.departures.is_empty(), "{latency_ms} ms: {:?}", r.departures);
    }
}

#[test]
fn four_peers() {
    let options = MatchOptions { peers: 4, frames: 900, seed: 4, ..MatchOptions::default() };
    let (r, replay) = play(options);
    assert_sound(&r);
    assert_eq!(replay.header.players, 4);
    assert!(r.rollbacks() > 0);
    assert!(r.stats.melee_hits > 0);
}

/// The replay the match wrote survives encoding, verifies on a fresh world, and seeks.
#[test]
fn the_match_replay_verifies() {
    let options = MatchOptions { frames: 1300, seed: 5, ..MatchOptions::default() };
    let (r, replay) = play(options);
    assert_eq!(replay.len(), 1300);
    assert!(!replay.keyframes.is_empty(), "peer 0 records keyframes");
    let back = Replay::decode(&replay.encode()).expect("decodes");
    let mut world = duel::new_world(options.seed, options.peers);
    let v = back.verify(&mut world).expect("verifies");
    assert!(v.is_ok(), "{v:?}");
    assert_eq!(v.frames, 1300);
    assert_eq!(world.checksum(), r.final_checksum);
    // Seeking through a keyframe lands on the recorded checksum.
    let mut seeker = duel::new_world(options.seed, options.peers);
    back.seek(&mut seeker, 700).expect("seeks");
    seeker.step(&back.inputs::<Duel>(700));
    assert_eq!(seeker.checksum(), back.frames[700].checksum);
    // Another game's world refuses it.
    let mut three = duel::new_world(options.seed, 3);
    assert!(back.verify(&mut three).is_err());
}

/// A peer whose confirmed cue log holds a burst twice fails the exactly-once check, and the
/// report names the burst: its tag, frame and how often each log has it.
#[test]
fn a_burst_confirmed_twice_is_named_in_the_report() {
    let options = MatchOptions { frames: 600, seed: 2, ..MatchOptions::default() };
    let (r, replay) = play(options);
    assert!(r.cue_logs_agree());
    let mut peers = r.peers.clone();
    let log = &mut peers[0].confirmed_cues;
    let i = log.iter().position(|k| k.kind == CueKind::Executed).expect("a burst");
    let twice = log[i];
    log.insert(i, twice);
    let bad = MatchReport::build(options, r.transport, peers, &replay).expect("builds");
    assert!(!bad.cue_logs_agree() && !bad.is_ok());
    let text = bad.to_string();
    assert!(text.contains(&format!("FAILED at frame {}", twice.frame)), "{text}");
    let tag = duel::content().tag_name(twice.tag).to_owned();
    let line = text.lines().find(|l| l.starts_with("  peer 0: burst ")).expect("the named burst");
    assert!(line.contains(&tag), "{line}");
    assert!(line.contains(&format!("at frame {}", twice.frame)), "{line}");
    assert!(line.contains("confirmed 2 times, 1 in the replay"), "{line}");
    assert!(text.contains("Verdict: FAILED"), "{text}");
}

/// Same options, same report (bots, network and simulation are all seeded); another seed,
/// another match.
#[test]
fn bots_are_deterministic() {
    let options =
        MatchOptions { frames: 600, seed: 9, loss_percent: 10, ..MatchOptions::default() };
    let (a, _) = play(options);
    let (b, _) = play(options);
    assert_eq!(a, b);
    assert_eq!(a.to_string(), b.to_string());
    let (c, _) = play(MatchOptions { seed: 10, ..options });
    assert_ne!(a.final_checksum, c.final_checksum);

    // The bot is a pure function of the world view, player, frame and seed.
    let mut w = duel::new_world(3, 2);
    for f in 0..300 {
        let inputs = [duel::bot_input(&w, 0, f, 77), duel::bot_input(&w, 1, f, 77)];
        assert_eq!(inputs[0], duel::bot_input(&w, 0, f, 77));
        w.step(&inputs);
    }
    let pressed = (0..300).any(|f| duel::bot_input(&w, 0, f, 77).buttons != 0);
    assert!(pressed);
}

#[test]
fn invalid_options_are_errors() {
    for bad in [
        MatchOptions { peers: 1, ..MatchOptions::default() },
        MatchOptions { peers: 5, ..MatchOptions::default() },
        MatchOptions { frames: 0, ..MatchOptions::default() },
        MatchOptions { loss_percent: 100, ..MatchOptions::default() },
    ] {
        let err = DuelMatch::new(bad).unwrap_err();
        assert!(err.to_string().starts_with("invalid option:"), "{err}");
    }
}

// ============================================================================================
// A player leaves (--leave PLAYER@FRAME)
// ============================================================================================

/// The checks a match in which `leaver` left after frame `at` must pass: the departure is in
/// the report, every survivor reported it with the same last input frame, the survivors'
/// checksums agree over every frame, the leaver's own confirmed frames agree with theirs, the
/// replay (the first survivor's) verifies, and the leaver's fighter has the default input
/// after its last frame.
fn assert_departure(r: &MatchReport, replay: &Replay, leaver: usize, at: Frame) {
    let o = r.options;
    assert_eq!(r.peers.len(), o.peers);
    assert!(r.checksums_agree(), "checksums: {:?}", r.first_disagreement);
    assert_eq!(r.compared_frames, r.frames);
    assert!(r.replay_verified(), "replay diverges at {:?}", r.replay_divergence);
    assert!(r.cues_balanced());
    assert!(r.departures_agree(), "{:?}", r.departures);
    assert!(r.is_ok());
    assert_eq!(r.replay_peer, if leaver == 0 { 1 } else { 0 });
    assert_eq!(r.departures.len(), 1, "{:?}", r.departures);
    let d = &r.departures[0];
    assert_eq!((d.player, d.left_after), (leaver, Some(at)));
    let Some(LastInput::Frame(last)) = d.agreed else { panic!("no agreement: {d:?}") };
    // The leaver never had input past `at` + the input delay; the survivors hold nearly all.
    assert!(last <= at + o.input_delay as Frame && last + 30 >= at, "last {last}, left after {at}");
    let survivors: Vec<usize> = (0..o.peers).filter(|p| *p != leaver).collect();
    assert_eq!(d.seen, survivors.iter().map(|s| (*s, LastInput::Frame(last))).collect::<Vec<_>>());
    assert!(d.leaver_compared > 0 && d.leaver_disagreement.is_none(), "{d:?}");
    for p in &r.peers {
        if p.player == leaver {
            assert_eq!(p.left_after, Some(at));
            assert!(p.checksums.len() <= at as usize + 1);
            continue;
        }
        assert_eq!(p.left_after, None);
        assert_eq!(p.stats.desyncs, 0);
        assert!(p.checksums.len() >= r.frames as usize);
        assert_eq!(p.departures, vec![(vec![leaver], Some(last))]);
    }
    assert_ne!(r.winner, Some(leaver), "a player who left forfeits");
    // From the frame after its last input on, the leaver's fighter has the default input.
    assert_eq!(replay.len(), r.frames as usize);
    for f in last + 1..r.frames {
        assert_eq!(replay.inputs::<Duel>(f)[leaver], Input::default(), "frame {f}");
    }
    let mut world = duel::new_world(o.seed, o.peers);
    assert!(replay.verify(&mut world).expect("verifies").is_ok());
    let text = r.to_string();
    assert!(text.contains("Verdict: every check passed"), "{text}");
    assert!(text.contains(&format!("player {leaver} left the match after frame {at}")), "{text}");
    assert!(text.contains(&format!("peer {leaver} (left)")), "{text}");
    assert!(text.contains(&format!("player {leaver} forfeits")), "{text}");
}

/// Two peers, player 1 leaves: the other plays on alone to the end and wins by forfeit.
#[test]
fn a_player_leaves_a_two_peer_match() {
    let options =
        MatchOptions { frames: 1200, seed: 21, leave: Some((1, 400)), ..MatchOptions::default() };
    let (r, replay) = play(options);
    assert_departure(&r, &replay, 1, 400);
    assert_eq!(r.winner, Some(0));
    let text = r.to_string();
    assert!(text.contains("Opponent left: player 1 left the match after frame 400"), "{text}");
    assert!(text.contains("player 0              played on alone"), "{text}");
    assert!(text.contains("Winner: player 0 by forfeit: player 1 left the match"), "{text}");
    // Deterministic, departure included.
    assert_eq!(play(options).0, r);
}

/// Three peers over a lossy network, player 0 leaves: the two others agree on its last input
/// frame and carry on; the replay comes from peer 1, the first survivor.
#[test]
fn a_player_leaves_a_three_peer_match_under_loss() {
    let options = MatchOptions {
        peers: 3,
        frames: 1200,
        seed: 12,
        latency_ms: 50,
        jitter_ms: 40,
        loss_percent: 15,
        leave: Some((0, 500)),
        ..MatchOptions::default()
    };
    let (r, replay) = play(options);
    assert_departure(&r, &replay, 0, 500);
    assert!(!replay.keyframes.is_empty(), "the first survivor records keyframes");
    assert!(r.to_string().contains("the survivors agree: ok"));
    assert!(r.stats.melee_hits > 0);
}

/// `--leave`'s value and range errors name the flag and say what is expected.
#[test]
fn leave_option_errors_name_the_flag() {
    assert_eq!(duel::parse_leave("1@600").unwrap(), (1, 600));
    assert_eq!(duel::parse_leave(" 2@0 ").unwrap(), (2, 0));
    for bad in ["", "1", "1-600", "@600", "1@", "x@600", "1@x", "-1@600", "1@-5", "1@6@7"] {
        let err = duel::parse_leave(bad).unwrap_err().to_string();
        assert!(err.starts_with("invalid option: --leave expects PLAYER@FRAME"), "{bad:?}: {err}");
        assert!(err.contains(&format!("{bad:?}")), "{bad:?}: {err}");
    }
    let three = MatchOptions { peers: 3, frames: 600, ..MatchOptions::default() };
    let err = DuelMatch::new(MatchOptions { leave: Some((3, 10)), ..three }).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid option: --leave 3@10: there is no player 3 in a 3-peer match (players are 0 to 2)"
    );
    let err = DuelMatch::new(MatchOptions { leave: Some((1, 600)), ..three }).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid option: --leave 1@600: frame 600 is not in the match (frames are 0 to 599)"
    );
    assert!(duel::DuelPeer::new(MatchOptions { leave: Some((5, 1)), ..three }, 0).is_err());
    assert!(MatchOptions { leave: Some((2, 599)), ..three }.validate().is_ok());
}

// ============================================================================================
// A player leaves and comes back (--rejoin PLAYER@LEAVE:BACK)
// ============================================================================================

/// The checks a match in which `player` left after frame `leave` and asked to come back at
/// `back` must pass: the match ended with every check passed; the survivors agree on the last
/// frame of its input; every peer reported its return at the same frame F, at or after `back`;
/// its own confirmed checksums from F to the end are the others'; it does not forfeit; in the
/// replay its fighter has the disconnected default input from its last input to F and its own
/// input again from F on, and moves again. Returns F.
fn assert_rejoin(
    r: &MatchReport,
    replay: &Replay,
    player: usize,
    leave: Frame,
    back: Frame,
) -> Frame {
    let o = r.options;
    assert!(r.checksums_agree(), "checksums: {:?}", r.first_disagreement);
    assert!(r.replay_verified(), "replay diverges at {:?}", r.replay_divergence);
    assert!(r.departures_agree(), "{:?}", r.departures);
    assert!(r.rejoins_agree(), "{:?}", r.rejoins);
    assert!(
        r.reproducible(),
        "a bot decided from an unconfirmed frame: {:?}",
        r.peers.iter().map(|p| p.bot_late).collect::<Vec<_>>()
    );
    assert!(r.is_ok(), "{r}");
    assert_eq!(r.replay_peer, if player == 0 { 1 } else { 0 });
    // It left as asked, and the others agree where its input ends.
    assert_eq!(r.departures.len(), 1, "{:?}", r.departures);
    let d = &r.departures[0];
    assert_eq!((d.player, d.left_after), (player, Some(leave)));
    let Some(LastInput::Frame(last)) = d.agreed else { panic!("no agreement: {d:?}") };
    assert!(d.leaver_compared > 0 && d.leaver_disagreement.is_none(), "{d:?}");
    // Every peer, the rejoiner too, reported its return at the same frame F.
    assert_eq!(r.rejoins.len(), 1, "{:?}", r.rejoins);
    let j = &r.rejoins[0];
    let Some(f) = j.agreed else { panic!("no agreed return: {j:?}") };
    assert!(f >= back && f < r.frames, "F = {f}, asked for at {back}");
    let seen: Vec<(usize, Option<Frame>)> = (0..o.peers).map(|p| (p, Some(f))).collect();
    assert_eq!(j.seen, seen);
    assert!(j.state_bytes > 0, "{j:?}");
    assert_eq!((j.compared, j.expected, j.disagreement), (r.frames - f, r.frames - f, None));
    assert!(j.bursts > 0 && j.burst_difference.is_none(), "{j:?}");
    let rejoiner = &r.peers[player];
    assert!(rejoiner.stayed() && !rejoiner.whole_match());
    assert_eq!(rejoiner.came_back.as_ref().map(|c| c.frame), Some(f));
    assert_eq!(rejoiner.stats.desyncs, 0);
    for p in r.peers.iter().filter(|p| p.player != player) {
        assert!(p.whole_match());
        assert_eq!(p.departures, vec![(vec![player], Some(last))]);
        assert_eq!(p.rejoin_of(player), Some(f));
    }
    // It is in the match again: it does not forfeit.
    assert!(r.forfeits().is_empty());
    // Away: the disconnected default input; back: its own input, which moves its fighter.
    use rollback_abilities::InputStatus;
    assert_eq!(replay.len(), r.frames as usize);
    for g in last + 1..f {
        assert_eq!(
            replay.frame_inputs::<Duel>(g)[player],
            (Input::default(), InputStatus::Disconnected)
        );
    }
    assert!((f..r.frames).all(|g| replay.statuses(g)[player] == InputStatus::Confirmed));
    assert!((f..r.frames).any(|g| replay.inputs::<Duel>(g)[player] != Input::default()));
    let mut world = duel::new_world(o.seed, o.peers);
    replay.seek(&mut world, f).expect("seeks");
    let fighter = world.player_owner(player).expect("a fighter");
    let at_f = world.component(fighter).unwrap().x;
    let mut moved = false;
    for g in f..r.frames {
        world.step(&replay.frame_inputs::<Duel>(g));
        moved |= world.component(fighter).unwrap().x != at_f;
    }
    assert!(moved, "player {player}'s fighter never moved after it came back");
    let text = r.to_string();
    for want in [
        format!("Away       player {player} left the match after frame {leave} (--rejoin {player}@{leave}:{back})"),
        "its fighter has the disconnected (default) input, the departure policy: it stands idle until it is back".to_string(),
        format!("Rejoin     player {player} came back into its own slot at frame {f} (asked for at frame {back}); every peer agrees"),
        format!("frames {} to {} ({} frames): its fighter stood idle", last + 1, f - 1, f - last - 1),
        format!("it received the members' state before frame {f} ({} bytes)", j.state_bytes),
        "it is in the match to the end and does not forfeit".to_string(),
        format!("its {} confirmed frames match peer {}'s: ok", r.frames - f, r.replay_peer),
        format!("peer {player} (rejoined)"),
        "Verdict: every check passed".to_string(),
    ] {
        assert!(text.contains(&want), "{want:?} missing from:\n{text}");
    }
    assert!(!text.contains(&format!("player {player} forfeits")), "{text}");
    f
}

/// Two peers, player 1 leaves and comes back: player 0 plays on alone, holds for the return,
/// and both play on from the agreed frame; the same options give the same match.
#[test]
fn a_player_leaves_and_rejoins_a_two_peer_match() {
    let rejoin = Some(duel::RejoinPlan { player: 1, leave: 150, back: 300 });
    let options = MatchOptions { frames: 600, seed: 21, rejoin, ..MatchOptions::default() };
    let (r, replay) = play(options);
    assert_rejoin(&r, &replay, 1, 150, 300);
    assert!(r.to_string().contains("player 0              played on alone while it was away"));
    assert_eq!(play(options).0, r, "deterministic, rejoin included");
}

/// Three peers over a lossy network, player 0 leaves and comes back: the replay comes from
/// peer 1, and all three agree from the return on.
#[test]
fn a_player_leaves_and_rejoins_a_three_peer_match_under_loss() {
    let options = MatchOptions {
        peers: 3,
        frames: 600,
        seed: 12,
        latency_ms: 50,
        jitter_ms: 40,
        loss_percent: 15,
        rejoin: Some(duel::RejoinPlan { player: 0, leave: 120, back: 260 }),
        ..MatchOptions::default()
    };
    let (r, replay) = play(options);
    assert_rejoin(&r, &replay, 0, 120, 260);
    assert!(r.to_string().contains("the survivors agree: ok"));
}

/// A match of [`duel::NetPeer`]s over `UdpTransport`s on 127.0.0.1, every peer ticked in turn
/// on this thread, as the example's `--udp` processes do: the rejoiner's peer quits after
/// `leave` (its socket closes), the others wait at `back`, and a new peer for the slot comes
/// back from a new port with the slot's identity.
fn udp_rejoin(options: MatchOptions) -> (MatchReport, Replay) {
    use rollback_abilities::session::{Identity, MatchKeys, UdpTransport};
    use std::net::SocketAddr;
    let plan = options.rejoin.expect("a rejoin");
    let n = options.peers;
    let bind = || UdpTransport::bind("127.0.0.1:0", Vec::new()).expect("bind 127.0.0.1");
    let transports: Vec<UdpTransport> = (0..n).map(|_| bind()).collect();
    let addrs: Vec<SocketAddr> = transports.iter().map(UdpTransport::local_addr).collect();
    let ids: Vec<Identity> = (0..n).map(|_| Identity::generate().expect("identity")).collect();
    let others = |slot: usize| -> Vec<SocketAddr> {
        addrs.iter().enumerate().filter(|(j, _)| *j != slot).map(|(_, a)| *a).collect()
    };
    let keys = |slot: usize| {
        let (agree, sign) = ids[slot].secrets();
        MatchKeys {
            local: Identity::from_secrets(agree, sign),
            remotes: others(slot)
                .into_iter()
                .map(|a| (a, ids[addrs.iter().position(|b| *b == a).unwrap()].public()))
                .collect(),
        }
    };
    // No departure by silence: every peer is ticked on this thread.
    let ticks = 1_000_000;
    let mut peers: Vec<Option<duel::NetPeer<UdpTransport>>> = transports
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            t.set_peers(others(i));
            Some(duel::NetPeer::start(options, i, t, addrs.clone(), keys(i), ticks).expect("start"))
        })
        .collect();
    let mut first_stay = None;
    let mut comeback_started = false;
    for _ in 0..u64::from(options.frames) * 400 {
        if peers.iter().flatten().all(duel::NetPeer::is_finished) && comeback_started {
            break;
        }
        for slot in peers.iter_mut() {
            let Some(p) = slot.as_mut() else { continue };
            p.tick().expect("tick");
            if p.should_leave() {
                p.quit().expect("quit");
                first_stay = Some(p.summary());
                // The program ends: its socket closes.
                *slot = None;
            }
        }
        let waiting = peers.iter().flatten().all(duel::NetPeer::has_waited);
        if first_stay.is_some() && !comeback_started && waiting {
            comeback_started = true;
            let t = UdpTransport::bind("127.0.0.1:0", others(plan.player)).expect("a new port");
            assert_ne!(t.local_addr(), addrs[plan.player]);
            let p = duel::NetPeer::rejoin(
                options,
                plan.player,
                t,
                addrs.clone(),
                keys(plan.player),
                ticks,
            )
            .expect("rejoin");
            peers[plan.player] = Some(p);
        }
    }
    let at: Vec<_> =
        peers.iter().flatten().map(|p| (p.player(), p.confirmed(), p.came_back_at())).collect();
    assert!(
        comeback_started && peers.iter().flatten().all(duel::NetPeer::is_finished),
        "not finished: (player, confirmed, back at) {at:?}"
    );
    let mut summaries: Vec<duel::PeerSummary> =
        peers.iter().flatten().map(duel::NetPeer::summary).collect();
    let mut then = core::mem::take(&mut summaries[plan.player]);
    let back = then.came_back.take().expect("it came back");
    summaries[plan.player] = first_stay.expect("it left").and_then(then, back);
    let replay = peers[options.replay_peer()].as_mut().expect("the replay peer").take_replay();
    let report = MatchReport::build(options, duel::Transport::Udp, summaries, &replay)
        .unwrap_or_else(|e| panic!("{e}"));
    (report, replay)
}

/// Two peers over UDP, player 1 leaves and comes back from a new port: player 0 waits for it
/// at BACK, so F is BACK plus the input delay, and the report checks the return as in the
/// emulated match.
#[test]
fn a_player_leaves_and_rejoins_a_two_peer_match_over_udp() {
    let rejoin = Some(duel::RejoinPlan { player: 1, leave: 90, back: 180 });
    let options = MatchOptions { frames: 360, seed: 21, rejoin, ..MatchOptions::default() };
    let (r, replay) = udp_rejoin(options);
    let f = assert_rejoin(&r, &replay, 1, 90, 180);
    assert_eq!(f, 180 + options.input_delay as Frame);
    assert!(r.to_string().contains("Network: UDP on 127.0.0.1"), "{r}");
}

/// Three peers over UDP, player 2 leaves and comes back from a new port: both others wait
/// for it at BACK, and all three agree from F on.
#[test]
fn a_player_leaves_and_rejoins_a_three_peer_match_over_udp() {
    let rejoin = Some(duel::RejoinPlan { player: 2, leave: 60, back: 150 });
    let options =
        MatchOptions { peers: 3, frames: 300, seed: 5, rejoin, ..MatchOptions::default() };
    let (r, replay) = udp_rejoin(options);
    let f = assert_rejoin(&r, &replay, 2, 60, 150);
    assert_eq!(f, 150 + options.input_delay as Frame);
}

/// The duel example, built by `cargo test` next to this test binary
/// (`target/debug/deps/integration-HASH` → `target/debug/examples/duel`).
fn duel_example() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("this test's path");
    let dir = exe.parent().and_then(std::path::Path::parent).map(|d| d.join("examples"));
    let path = dir.map(|d| d.join(format!("duel{}", std::env::consts::EXE_SUFFIX)));
    path.filter(|p| p.is_file()).unwrap_or_else(|| {
        panic!(
            "the duel example is not built next to {}: run `cargo test` (it builds the \
             examples) or `cargo build --example duel`",
            exe.display()
        )
    })
}

/// `duel --udp --rejoin`: one OS process per peer; the rejoiner's process exits after LEAVE,
/// the other waits at BACK, and a new process for the slot comes back from a new port. The
/// report shows the gap and F (BACK plus the input delay) and checks the returned player's
/// confirmed checksums and cues from F on against the other peer's and the replay's.
#[test]
fn the_duel_example_rejoins_over_udp_processes() {
    let out = std::process::Command::new(duel_example())
        .args(["--udp", "--frames", "240", "--seed", "3", "--rejoin", "1@60:120", "--quiet"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runs the duel example");
    let text = String::from_utf8_lossy(&out.stdout);
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{text}\n{errors}", out.status);
    for want in [
        "Network: UDP on 127.0.0.1, one OS process per peer",
        "Away       player 1 left the match after frame 60 (--rejoin 1@60:120)",
        "Rejoin     player 1 came back into its own slot at frame 122 (asked for at frame 120); \
         every peer agrees (peer 0: 122, peer 1: 122): ok",
        "checked and loaded it",
        "its 118 confirmed frames match peer 0's: ok",
        "the same bursts as the replay, each once         ok",
        "Replay     peer 0's confirmed inputs re-simulated headless, 240 of 240 frame checksums \
         match: ok",
        "it is in the match to the end and does not forfeit",
        "Verdict: every check passed",
        "Played 240 frames on 2 peers (player 1 left and came back)",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
    assert!(!text.contains("player 1 forfeits"), "{text}");
}

/// `--rejoin`'s value and range errors name the flag and say what is expected; a `DuelPeer`
/// cannot play it (a typed `Unsupported` error).
#[test]
fn rejoin_option_errors_name_the_flag() {
    use duel::{MatchError, RejoinPlan};
    let plan = |player, leave, back| RejoinPlan { player, leave, back };
    assert_eq!(duel::parse_rejoin("1@300:600").unwrap(), plan(1, 300, 600));
    assert_eq!(duel::parse_rejoin(" 2@0:1 ").unwrap(), plan(2, 0, 1));
    assert_eq!(plan(1, 300, 600).to_string(), "1@300:600");
    for bad in [
        "",
        "1",
        "1@300",
        "1-300:600",
        "@300:600",
        "1@:600",
        "1@300:",
        "x@3:6",
        "1@x:6",
        "1@3:x",
        "1@3:6:9",
        "-1@3:6",
    ] {
        let err = duel::parse_rejoin(bad).unwrap_err().to_string();
        assert!(
            err.starts_with("invalid option: --rejoin expects PLAYER@LEAVE:BACK"),
            "{bad:?}: {err}"
        );
        assert!(err.contains(&format!("{bad:?}")), "{bad:?}: {err}");
    }
    let three = MatchOptions { peers: 3, frames: 600, ..MatchOptions::default() };
    let err = |options: MatchOptions| DuelMatch::new(options).unwrap_err().to_string();
    let cases = [
        (
            MatchOptions { rejoin: Some(plan(3, 10, 20)), ..three },
            "--rejoin 3@10:20: there is no player 3 in a 3-peer match (players are 0 to 2)",
        ),
        (
            MatchOptions { rejoin: Some(plan(1, 600, 700)), ..three },
            "--rejoin 1@600:700: LEAVE frame 600 is not in the match (frames are 0 to 599)",
        ),
        (
            MatchOptions { rejoin: Some(plan(1, 100, 600)), ..three },
            "--rejoin 1@100:600: BACK frame 600 is not in the match (frames are 0 to 599)",
        ),
        (
            MatchOptions { rejoin: Some(plan(1, 300, 300)), ..three },
            "--rejoin 1@300:300: BACK (300) must come after LEAVE (300)",
        ),
        (
            MatchOptions { rejoin: Some(plan(1, 300, 200)), ..three },
            "--rejoin 1@300:200: BACK (200) must come after LEAVE (300)",
        ),
        (
            MatchOptions { leave: Some((1, 50)), rejoin: Some(plan(1, 100, 200)), ..three },
            "--leave 1@50 and --rejoin 1@100:200: player 1 cannot both leave for good and come back; give one of them",
        ),
        (
            MatchOptions {
                peers: 2,
                leave: Some((0, 50)),
                rejoin: Some(plan(1, 100, 200)),
                ..three
            },
            "--leave 0@50 and --rejoin 1@100:200: with both, no player of a 2-peer match would be left to let player 1 back in; use --peers 3 or more",
        ),
    ];
    for (options, message) in cases {
        assert_eq!(err(options), format!("invalid option: {message}"));
    }
    assert!(
        MatchOptions { leave: Some((2, 50)), rejoin: Some(plan(1, 100, 599)), ..three }
            .validate()
            .is_ok()
    );
    // A `DuelPeer` (one GGRS session) cannot play a rejoin: a typed error saying what can.
    let ok = MatchOptions { rejoin: Some(plan(1, 100, 200)), ..three };
    assert!(DuelMatch::new(ok).is_ok());
    let peer = duel::DuelPeer::new(ok, 0).unwrap_err();
    assert!(matches!(peer, MatchError::Unsupported(_)), "{peer:?}");
    assert_eq!(
        peer.to_string(),
        "not supported: --rejoin 1@100:200: a DuelPeer plays one GGRS session, and a rejoin \
         starts new ones; play it with NetPeers (a MatchPeer each) or a DuelMatch"
    );
    assert!(duel::DuelPeer::new(three, 0).is_ok());
}

// ============================================================================================
// Moves and recipes, frame by frame
// ============================================================================================

const IDLE: Input = Input { buttons: 0, axis: 0 };

fn press(buttons: u8) -> Input {
    Input { buttons, axis: 0 }
}

/// A 2-fighter world with the fighters at `a` and `b`.
fn duel_at(seed: u64, a: i64, b: i64) -> (World<Duel>, Entity, Entity) {
    let mut w = duel::new_world(seed, 2);
    let p0 = w.player_owner(0).unwrap();
    let p1 = w.player_owner(1).unwrap();
    w.component_mut(p0).unwrap().x = num::int(a);
    w.component_mut(p1).unwrap().x = num::int(b);
    (w, p0, p1)
}

fn attr(w: &World<Duel>, e: Entity, name: &str) -> Fx {
    w.attr(e, w.content().attr(name).unwrap()).unwrap()
}

fn tag(w: &World<Duel>, name: &str) -> TagId {
    w.content().tag(name).unwrap()
}

fn ability(w: &World<Duel>, e: Entity, name: &str) -> rollback_abilities::AbilityHandle {
    let def: AbilityDefId = w.content().ability(name).unwrap();
    w.find_ability(e, def).unwrap()
}

fn stacks(w: &World<Duel>, e: Entity, effect: &str) -> u16 {
    let def = w.content().effect(effect).unwrap();
    w.effects(e).iter().filter(|x| x.def == def).map(|x| x.stacks).sum()
}

/// Steps frames with the given inputs (a function of the frame index within the run).
fn run(w: &mut World<Duel>, frames: u32, mut inputs: impl FnMut(u32) -> [Input; 2]) {
    for f in 0..frames {
        w.step(&inputs(f));
    }
}

/// The light attack reaches as far as its hit box in `duel.ron` says: 28 units of box in
/// front of the attacker plus half of the target's 20-unit hurt box.
#[test]
fn the_light_attack_reaches_as_far_as_its_hit_box() {
    for (gap, hit) in [(20, true), (37, true), (38, false), (45, false)] {
        let (mut w, ..) = duel_at(1, 0, gap);
        run(&mut w, 8, |f| [if f == 0 { press(Input::LIGHT) } else { IDLE }, IDLE]);
        assert_eq!(w.global().stats.melee_hits, u32::from(hit), "gap {gap}");
    }
    assert_eq!(duel::moves().light_reach, num::int(38));
}

/// A designer's loop: narrowing the jab's hit box in the RON makes the jab whiff at 37 units;
/// putting it back makes it hit again.
#[test]
fn narrowing_the_jabs_hit_box_in_ron_makes_it_whiff() {
    let jab_at_37 = |ron: &str| -> u32 {
        let content = rollback_abilities::ContentBuilder::new().file("duel.ron", ron).build();
        let content = std::sync::Arc::new(content.expect("edited duel content"));
        let mut w = duel::try_new_world_with(content, 1, 2).expect("world");
        for (p, x) in [(0, 0), (1, 37)] {
            let e = w.player_owner(p).unwrap();
            w.component_mut(e).unwrap().x = num::int(x);
        }
        run(&mut w, 8, |f| [if f == 0 { press(Input::LIGHT) } else { IDLE }, IDLE]);
        w.global().stats.melee_hits
    };
    let jab = "x: 0, y: 30, w: 28";
    assert!(duel::CONTENT_RON.contains(jab));
    let narrow = duel::CONTENT_RON.replace(jab, "x: 0, y: 30, w: 20");
    assert_eq!(jab_at_37(&narrow), 0, "a 20-unit jab box reaches a centre 30 ahead");
    assert_eq!(jab_at_37(duel::CONTENT_RON), 1);
}

/// Light attack: 4 startup frames, a hit in the active frames that deals 6 (12 on a crit),
/// lifesteals a quarter of it, and stacks poison that ticks every 30 frames.
#[test]
fn light_attack_hits_lifesteals_and_poisons() {
    let (mut w, p0, p1) = duel_at(1, 0, 30);
    w.set_base(p0, w.content().attr("Health").unwrap(), num::int(100));
    run(&mut w, 4, |f| [if f == 0 { press(Input::LIGHT) } else { IDLE }, IDLE]);
    assert_eq!(attr(&w, p1, "Health"), num::int(150), "still in startup");
    w.step(&[IDLE, IDLE]); // frame 4: first active frame
    let dealt = num::sub(num::int(150), attr(&w, p1, "Health"));
    let crit = dealt == num::mul(num::int(2), duel::moves().light_damage);
    assert!(dealt == duel::moves().light_damage || crit, "dealt {dealt}");
    assert_eq!(attr(&w, p0, "Health"), num::add(num::int(100), dealt / 4), "lifesteal 25 %");
    assert_eq!(stacks(&w, p1, "Poison"), 1);
    assert!(w.has_tag(p1, tag(&w, "State.Debuff.Poisoned")));
    let g = w.global().stats;
    assert_eq!((g.melee_hits, g.lifesteal_heals, g.poison_stacks), (1, 1, 1));
    assert_eq!(g.crits, u32::from(crit));
    // Only one hit per attack, although the target stays in the hitbox for 3 active frames.
    run(&mut w, 12, |_| [IDLE, IDLE]);
    assert_eq!(w.global().stats.melee_hits, 1);
    // The poison ticks 2 every 30 frames.
    let before = attr(&w, p1, "Health");
    run(&mut w, 30, |_| [IDLE, IDLE]);
    assert_eq!(attr(&w, p1, "Health"), num::sub(before, num::int(2)));
    assert_eq!(w.global().stats.poison_ticks, 1);
}

/// Poison stacks by target up to 3, and each stack ticks.
#[test]
fn poison_stacks_to_three() {
    let (mut w, _, p1) = duel_at(2, 0, 30);
    // Four light attacks, 24 frames apart (a connecting light attack lasts its 16 frames plus
    // LIGHT_HITSTOP frozen ones; a press while it runs would be refused).
    run(&mut w, 96, |f| [if f % 24 == 0 { press(Input::LIGHT) } else { IDLE }, IDLE]);
    assert_eq!(w.global().stats.melee_hits, 4);
    assert_eq!(stacks(&w, p1, "Poison"), 3, "the stack limit");
    let ticks = w.global().stats.poison_ticks;
    let before = attr(&w, p1, "Health");
    run(&mut w, 30, |_| [IDLE, IDLE]);
    assert_eq!(w.global().stats.poison_ticks, ticks + 1);
    assert_eq!(attr(&w, p1, "Health"), num::sub(before, num::int(6)), "3 stacks × 2");
}

/// The heavy attack stuns; the stun cancels the target's fireball cast before its release,
/// blocks new activations and stops movement.
#[test]
fn heavy_attack_stuns_and_the_stun_cancels_a_cast() {
    let (mut w, p0, p1) = duel_at(3, 0, 40);
    let cast = ability(&w, p1, "Fireball");
    run(&mut w, 9, |f| {
        if f == 0 { [press(Input::HEAVY), press(Input::FIREBALL)] } else { [IDLE, IDLE] }
    });
    assert!(w.has_tag(p1, tag(&w, "State.Debuff.Stun")));
    assert!(!w.is_ability_active(cast), "the cast was cancelled");
    let s = w.global().stats;
    assert_eq!((s.stuns, s.stun_cancels, s.melee_hits), (1, 1, 1));
    let dealt = num::sub(num::int(150), attr(&w, p1, "Health"));
    assert!(
        dealt == duel::moves().heavy_damage
            || dealt == num::mul(num::int(2), duel::moves().heavy_damage)
    );
    run(&mut w, 20, |_| [IDLE, IDLE]);
    assert_eq!(w.global().stats.fireballs_launched, 0, "no fireball leaves a cancelled cast");
    // Stunned: no activation, no movement.
    let x = w.component(p1).unwrap().x;
    w.step(&[IDLE, Input { buttons: Input::LIGHT, axis: 127 }]);
    let light = ability(&w, p1, "LightAttack");
    assert!(!w.is_ability_active(light));
    let last = w.last_activation(light).unwrap();
    assert_eq!(last.result, Err(ActivationFailure::BlockedByTags));
    assert_eq!(w.component(p1).unwrap().x, x);
    let _ = p0;
}

/// The shield makes its owner immune to strikes and their poison for 90 frames.
#[test]
fn shield_blocks_damage() {
    let (mut w, _, p1) = duel_at(4, 0, 30);
    run(&mut w, 10, |f| {
        if f == 0 { [press(Input::LIGHT), press(Input::SHIELD)] } else { [IDLE, IDLE] }
    });
    assert!(w.has_tag(p1, tag(&w, "State.Buff.Shield")));
    assert_eq!(attr(&w, p1, "Health"), num::int(150));
    assert_eq!(stacks(&w, p1, "Poison"), 0);
    let s = w.global().stats;
    assert_eq!((s.shield_blocks, s.melee_hits), (1, 0));
    assert!(w.has_tag(p1, tag(&w, "Cooldown.Skill.Shield")));
    // 100 mana − 30, plus regeneration.
    assert!(attr(&w, p1, "Mana") < num::int(100));
    // After 90 frames the shield is gone and hits land again.
    run(&mut w, 90, |_| [IDLE, IDLE]);
    assert!(!w.has_tag(p1, tag(&w, "State.Buff.Shield")));
    run(&mut w, 10, |f| [if f == 0 { press(Input::LIGHT) } else { IDLE }, IDLE]);
    assert_eq!(w.global().stats.melee_hits, 1);
}

/// The fireball: a projectile entity that flies, hits, applies its spec and despawns; its
/// cost and cooldown apply.
#[test]
fn fireball_flies_and_hits() {
    let (mut w, p0, p1) = duel_at(5, -150, 150);
    let entities = w.entity_count();
    run(&mut w, 12, |f| [if f == 0 { press(Input::FIREBALL) } else { IDLE }, IDLE]);
    assert_eq!(w.global().stats.fireballs_launched, 1);
    assert_eq!(w.entity_count(), entities + 1, "the projectile is an entity");
    assert!(w.has_tag(p0, tag(&w, "Cooldown.Skill.Fireball")));
    assert!(attr(&w, p0, "Mana") <= num::int(76), "cost 25 (plus a tick of regeneration)");
    run(&mut w, 60, |_| [IDLE, IDLE]);
    assert_eq!(w.global().stats.fireball_hits, 1);
    assert_eq!(w.entity_count(), entities, "despawned on impact");
    let dealt = num::sub(num::int(150), attr(&w, p1, "Health"));
    assert!(
        dealt == duel::moves().fireball_damage
            || dealt == num::mul(num::int(2), duel::moves().fireball_damage)
    );
    // No lifesteal from fireballs.
    assert_eq!(w.global().stats.lifesteal_heals, 0);
}

/// Light → heavy: the heavy attack is refused during the light attack's startup and accepted
/// inside its cancel window, cancelling the light attack.
#[test]
fn light_cancels_into_heavy_only_in_the_window() {
    let (mut w, p0, _) = duel_at(6, 0, 100);
    let light = ability(&w, p0, "LightAttack");
    let heavy = ability(&w, p0, "HeavyAttack");
    run(&mut w, 3, |f| match f {
        0 => [press(Input::LIGHT), IDLE],
        2 => [press(Input::LIGHT | Input::HEAVY), IDLE],
        _ => [press(Input::LIGHT), IDLE],
    });
    assert!(w.is_ability_active(light));
    assert!(!w.is_ability_active(heavy));
    assert_eq!(w.last_activation(heavy).unwrap().result, Err(ActivationFailure::Custom(1)));
    run(&mut w, 5, |f| [if f == 4 { press(Input::HEAVY) } else { IDLE }, IDLE]);
    assert!(w.is_ability_active(heavy), "{:?}", w.last_activation(heavy));
    assert!(!w.is_ability_active(light));
    assert_eq!(w.global().stats.heavy_cancels, 1);
}

/// The input buffer and hitstop (F-GA-22, F-GA-23): the light attack connects in frame 4 and
/// freezes both fighters for `LIGHT_HITSTOP` frames (5–8), in which neither moves nor advances
/// its timeline; a heavy attack pressed in frame 5 is refused (the light attack is still
/// active) and kept in the buffer, and comes out in frame 10, the first frame an input sees
/// the cancel window the light attack's timeline opens once the hitstop is over.
#[test]
fn a_buffered_heavy_comes_out_in_the_window_after_the_hitstop() {
    let (mut w, p0, p1) = duel_at(9, 0, 30);
    let light = ability(&w, p0, "LightAttack");
    let heavy = ability(&w, p0, "HeavyAttack");
    run(&mut w, 5, |f| [if f == 0 { press(Input::LIGHT) } else { IDLE }, IDLE]);
    assert_eq!(w.global().stats.melee_hits, 1, "hit in frame 4");
    assert_eq!(w.hitstop_remaining(p0), LIGHT_HITSTOP);
    assert_eq!(w.hitstop_remaining(p1), LIGHT_HITSTOP);
    let x1 = w.component(p1).unwrap().x;
    // Frame 5: frozen; player 1 tries to walk away, player 0 presses heavy.
    w.step(&[press(Input::HEAVY), Input { buttons: 0, axis: 127 }]);
    assert!(w.is_time_held(p0) && w.is_time_held(p1));
    assert_eq!(w.component(p1).unwrap().x, x1, "a frozen fighter does not move");
    assert_eq!(w.last_activation(heavy).unwrap().result, Err(ActivationFailure::Custom(1)));
    assert_eq!(w.buffered_press(0, 1), Some(5));
    // Frames 6–9: still held, then the timeline resumes and opens the window in P5 of 9.
    run(&mut w, 4, |_| [IDLE, IDLE]);
    assert!(!w.is_time_held(p0));
    assert!(w.is_ability_active(light) && !w.is_ability_active(heavy));
    assert!(w.has_tag(p0, tag(&w, "Cancel.Window.Light")));
    w.step(&[IDLE, IDLE]); // frame 10: the buffered press comes out
    assert!(w.is_ability_active(heavy) && !w.is_ability_active(light));
    assert_eq!(w.buffered_press(0, 1), None);
    let s = w.global().stats;
    assert_eq!((s.heavy_cancels, s.buffered_attacks, s.hitstop_frames), (1, 1, 8));
}

/// Sprint: ×1.6 speed while held, stamina drained every 10 frames, regeneration off; release
/// ends it.
#[test]
fn sprint_drains_stamina() {
    let (mut w, p0, _) = duel_at(7, -150, 150);
    let sprint = Input { buttons: Input::SPRINT, axis: 127 };
    run(&mut w, 31, |_| [sprint, IDLE]);
    assert!(w.has_tag(p0, tag(&w, "State.Sprinting")));
    assert!(attr(&w, p0, "MoveSpeed") > num::int(3));
    assert_eq!(attr(&w, p0, "Stamina"), num::int(88), "3 drains of 4, no regeneration");
    let x = w.component(p0).unwrap().x;
    assert!(x > num::int(-30), "moved at sprint speed: {x}");
    run(&mut w, 2, |_| [IDLE, IDLE]);
    assert!(!w.has_tag(p0, tag(&w, "State.Sprinting")));
    assert_eq!(attr(&w, p0, "MoveSpeed"), num::ratio(5, 2));
    run(&mut w, 24, |_| [IDLE, IDLE]);
    assert!(attr(&w, p0, "Stamina") > num::int(88), "regenerates again");
}

/// Death: Health 0 sets `State.Dead` and emits the KO cue; the round goes to the survivor and
/// the next one starts after the pause with everything restored.
#[test]
fn knock_out_ends_the_round() {
    let (mut w, p0, p1) = duel_at(8, 0, 30);
    w.set_base(p1, w.content().attr("Health").unwrap(), num::int(3));
    run(&mut w, 5, |f| [if f == 0 { press(Input::LIGHT) } else { IDLE }, IDLE]);
    assert!(w.has_tag(p1, tag(&w, "State.Dead")));
    let ko = tag(&w, "GameplayCue.KO");
    assert!(w.output().cues.iter().any(|c| c.key.tag == ko && c.key.target == p1));
    w.step(&[IDLE, IDLE]);
    assert_eq!(w.global().wins, [1, 0, 0, 0]);
    assert_eq!(w.global().ko, 1);
    assert_eq!(duel::winner(&w), Some(0));
    // Dead fighters neither move nor act.
    let x = w.component(p1).unwrap().x;
    w.step(&[IDLE, Input { buttons: Input::LIGHT, axis: 127 }]);
    assert_eq!(w.component(p1).unwrap().x, x);
    run(&mut w, KO_PAUSE, |_| [IDLE, IDLE]);
    assert_eq!(w.global().round, 2);
    assert!(!w.has_tag(p1, tag(&w, "State.Dead")));
    assert_eq!(attr(&w, p1, "Health"), num::int(150));
    assert_eq!(stacks(&w, p1, "Poison"), 0);
    assert_eq!(w.component(p0).unwrap().x, num::int(-150));
}

/// Knocks player 1 out with a jab from player 0 (standing next to it, at 3 health) and waits
/// for the round's decision.
fn knock_out_p1(w: &mut World<Duel>) {
    let p1 = w.player_owner(1).unwrap();
    let p0 = w.player_owner(0).unwrap();
    let x0 = w.component(p0).unwrap().x;
    w.component_mut(p1).unwrap().x = num::add(x0, num::int(30));
    w.set_base(p1, w.content().attr("Health").unwrap(), num::int(3));
    run(w, 6, |f| [if f == 0 { press(Input::LIGHT) } else { IDLE }, IDLE]);
}

/// A match is best of three rounds: two knock-outs decide it, no third round starts, the
/// result names the winner, and a rematch starts only once every player has asked for it.
#[test]
fn a_match_is_best_of_three_with_a_rematch() {
    use duel::MatchState;
    let (mut w, _, _) = duel_at(9, 0, 30);
    knock_out_p1(&mut w);
    assert_eq!(duel::match_state(&w), MatchState::RoundOver { winner: Some(0) });
    run(&mut w, KO_PAUSE, |_| [IDLE, IDLE]);
    assert_eq!(w.global().round, 2);
    assert!(matches!(duel::match_state(&w), MatchState::Fighting { round: 2, .. }));
    knock_out_p1(&mut w);
    let over = MatchState::MatchOver { winner: Some(0), rematch_open: false, asked: 0 };
    assert_eq!(duel::match_state(&w), over);
    assert_eq!((w.global().matches, w.global().match_winner), (1, 1));
    assert_eq!(duel::winner(&w), Some(0));
    // The result stays: no third round, whatever the time.
    run(&mut w, 3 * KO_PAUSE, |_| [IDLE, IDLE]);
    assert_eq!(w.global().round, 2);
    assert!(matches!(duel::match_state(&w), MatchState::MatchOver { rematch_open: true, .. }));
    // One player asking is not enough; the match restarts when the other asks too.
    run(&mut w, 5, |_| [press(duel::REMATCH_BUTTON), IDLE]);
    assert!(matches!(duel::match_state(&w), MatchState::MatchOver { asked: 1, .. }));
    w.step(&[IDLE, press(duel::REMATCH_BUTTON)]);
    let g = *w.global();
    assert_eq!((g.round, g.wins, g.draws, g.match_over, g.rematch), (1, [0; 4], 0, 0, 0));
    assert_eq!((g.matches, g.match_winner), (1, 1), "the last match's result stays");
    assert!(matches!(duel::match_state(&w), MatchState::Fighting { round: 1, .. }));
    let p1 = w.player_owner(1).unwrap();
    assert_eq!(attr(&w, p1, "Health"), num::int(150));
}

/// Draws count towards the best of three, and a shared lead after three decided rounds plays
/// tie-break rounds: a draw and a win each go on to a fourth round, three winners among four
/// players too; the first to two wins, and a lead still shared after the last round allowed is
/// a drawn match.
#[test]
fn a_match_decision_counts_draws_and_breaks_ties() {
    let mut g = duel::Round::default();
    assert_eq!(duel::match_decision(&g), None);
    g.draws = 1;
    g.wins = [1, 0, 0, 0];
    assert_eq!(duel::match_decision(&g), None);
    // Three rounds decided with a sole leader: the leader wins.
    g.draws = 2;
    assert_eq!(duel::match_decision(&g), Some(Some(0)));
    // A draw and a win each: tie-break.
    g.draws = 1;
    g.wins = [1, 1, 0, 0];
    assert_eq!(duel::match_decision(&g), None);
    g.wins = [1, 2, 0, 0];
    assert_eq!(duel::match_decision(&g), Some(Some(1)));
    // Three winners among four players: tie-break, then the first to two.
    g = duel::Round { wins: [0, 1, 1, 1], ..duel::Round::default() };
    assert_eq!(duel::match_decision(&g), None);
    g.wins = [1, 1, 1, 1];
    assert_eq!(duel::match_decision(&g), None);
    g.wins = [1, 1, 2, 1];
    assert_eq!(duel::match_decision(&g), Some(Some(2)));
    g = duel::Round { wins: [0, 0, 2, 1], ..duel::Round::default() };
    assert_eq!(duel::match_decision(&g), Some(Some(2)));
    // Only drawn rounds: tie-breaks up to the last round allowed, then a drawn match.
    g = duel::Round { draws: duel::MAX_ROUNDS - 1, ..duel::Round::default() };
    assert_eq!(duel::match_decision(&g), None);
    g.draws = duel::MAX_ROUNDS;
    assert_eq!(duel::match_decision(&g), Some(None));
    g = duel::Round { draws: duel::MAX_ROUNDS - 2, wins: [1, 1, 0, 0], ..Default::default() };
    assert_eq!(duel::match_decision(&g), Some(None));
}

/// The distance between two fighters' centres.
fn gap(w: &World<Duel>, a: Entity, b: Entity) -> Fx {
    num::sub(w.component(b).unwrap().x, w.component(a).unwrap().x).saturating_abs()
}

/// Push separation: fighters walking into each other, or one pinning the other at the wall,
/// never overlap (their centres stay two half-widths apart) and stay inside the arena.
#[test]
fn fighters_cannot_overlap() {
    let width = num::int(2 * duel::FIGHTER_HALF);
    let (mut w, p0, p1) = duel_at(10, -20, 20);
    let walk = |axis: i8| Input { buttons: 0, axis };
    for _ in 0..60 {
        w.step(&[walk(127), walk(-127)]);
        assert!(gap(&w, p0, p1) >= width, "overlap: {}", gap(&w, p0, p1));
    }
    // Player 0 pushes player 1, who walks the other way, to the right wall.
    for _ in 0..200 {
        w.step(&[walk(127), IDLE]);
        assert!(gap(&w, p0, p1) >= width);
        assert!(w.component(p1).unwrap().x <= duel::ARENA_HALF);
    }
    assert_eq!(w.component(p1).unwrap().x, duel::ARENA_HALF);
    assert_eq!(w.component(p0).unwrap().x, num::sub(duel::ARENA_HALF, width));
    // Four fighters piled up at one spot are spread apart at once.
    let mut w = duel::new_world(11, 4);
    for p in 0..4 {
        let e = w.player_owner(p).unwrap();
        w.component_mut(e).unwrap().x = num::int(-199);
    }
    w.step(&[IDLE; 4]);
    let mut xs: Vec<Fx> =
        (0..4).map(|p| w.component(w.player_owner(p).unwrap()).unwrap().x).collect();
    xs.sort();
    assert_eq!(xs[0], num::neg(duel::ARENA_HALF));
    assert!(xs.windows(2).all(|p| num::sub(p[1], p[0]) >= width), "{xs:?}");
}

/// The push boxes of standing fighters after the frame, as the world's box pass placed them.
fn fighter_push_boxes(w: &World<Duel>) -> Vec<(Entity, rollback_abilities::BoxRect)> {
    w.boxes()
        .iter()
        .filter(|b| b.kind == rollback_abilities::BoxKind::Push)
        .filter(|b| w.component(b.entity).is_some_and(|c| c.kind == duel::Kind::Fighter as u8))
        .map(|b| (b.entity, b.rect))
        .collect()
}

/// Fighters walking into each other, then all into the right wall, then all into the left one:
/// after every frame no two fighters' push boxes (`bodies.Fighter` in `duel.ron`) overlap.
fn fighters_never_overlap(fighters: usize) {
    let mut w = duel::new_world(0xB0D1E5 + fighters as u64, fighters);
    for f in 0..600u32 {
        let inputs: Vec<Input> = (0..fighters)
            .map(|p| {
                let x = w.player_owner(p).and_then(|e| w.component(e)).map_or(0, |b| b.x.to_num());
                let axis = match f {
                    0..200 if x < 0i64 => 127,
                    0..200 => -127,
                    200..400 => 127,
                    _ => -127,
                };
                Input { buttons: 0, axis }
            })
            .collect();
        w.step(&inputs);
        let boxes = fighter_push_boxes(&w);
        assert_eq!(boxes.len(), fighters, "frame {f}: every fighter stands");
        for (i, (a, ra)) in boxes.iter().enumerate() {
            for (b, rb) in &boxes[i + 1..] {
                assert!(!ra.overlaps(rb), "frame {f}: {a:?} {ra:?} overlaps {b:?} {rb:?}");
            }
        }
    }
}

#[test]
fn two_fighters_walking_into_each_other_and_the_walls_never_overlap() {
    fighters_never_overlap(2);
}

#[test]
fn four_fighters_walking_into_each_other_and_the_walls_never_overlap() {
    fighters_never_overlap(4);
}
