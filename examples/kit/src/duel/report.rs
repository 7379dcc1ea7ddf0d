//! What a match produced: per-peer rollback and cue counters, checksum agreement, the
//! re-verified replay, the fighters' final state, departures, and a printable [`MatchReport`].

use super::ids::ids;
use super::play::{MatchError, MatchOptions, Transport};
use super::{Duel, MAX_FIGHTERS, Stats, systems};
use core::fmt;
use rollback_abilities::TagId;
use rollback_abilities::World;
use rollback_abilities::num::{Frame, Fx};
use rollback_abilities::present::{Cue, CueDirector, Presenter, RemoveReason};
use rollback_abilities::replay::Replay;
use rollback_abilities::session::{Runner, RunnerStats};
use rollback_abilities::{CueKey, CueKind};
use std::collections::BTreeMap;

/// A [`Presenter`] that counts what a [`CueDirector`] asks it to show: bursts played,
/// cancelled and confirmed, persistent instances started, shown and removed, and confirmed
/// cues per tag. A real game would play sounds and effects here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CueCounter {
    /// Per-tag counts only take cues of frames before this one (the match's end: peers confirm
    /// a few frames past it, each a different number).
    pub until: Frame,
    /// Bursts played (`play`).
    pub bursts_played: u64,
    /// Bursts cancelled (`cancel`: the corrected timeline no longer has them).
    pub bursts_cancelled: u64,
    /// Bursts confirmed (`confirmed` of an `Executed` cue).
    pub bursts_confirmed: u64,
    /// Persistent instances that started (`on_active`).
    pub persistent_started: u64,
    /// Persistent instances shown (`while_active`).
    pub persistent_shown: u64,
    /// Persistent instances no longer shown (`removed`).
    pub persistent_removed: u64,
    /// Of those, instances a rollback showed never existed (`removed(Mispredicted)`).
    pub persistent_mispredicted: u64,
    /// Confirmed bursts per cue tag (frames before `until`).
    pub confirmed_bursts: BTreeMap<TagId, u64>,
    /// Confirmed persistent instances per cue tag (frames before `until`).
    pub confirmed_persistent: BTreeMap<TagId, u64>,
    /// Every cue confirmed (frames before `until`), in the order the director confirmed them:
    /// the log the report compares across peers and with the replay.
    pub confirmed_log: Vec<CueKey>,
}

impl Default for CueCounter {
    fn default() -> Self {
        CueCounter::until(Frame::MAX)
    }
}

impl CueCounter {
    /// A counter whose per-tag counts stop at frame `until` (excluded).
    pub fn until(until: Frame) -> CueCounter {
        CueCounter {
            until,
            bursts_played: 0,
            bursts_cancelled: 0,
            bursts_confirmed: 0,
            persistent_started: 0,
            persistent_shown: 0,
            persistent_removed: 0,
            persistent_mispredicted: 0,
            confirmed_bursts: BTreeMap::new(),
            confirmed_persistent: BTreeMap::new(),
            confirmed_log: Vec::new(),
        }
    }
}

impl Presenter for CueCounter {
    fn play(&mut self, _cue: &Cue) {
        self.bursts_played += 1;
    }

    fn cancel(&mut self, _cue: &Cue) {
        self.bursts_cancelled += 1;
    }

    fn on_active(&mut self, _cue: &Cue) {
        self.persistent_started += 1;
    }

    fn while_active(&mut self, _cue: &Cue) {
        self.persistent_shown += 1;
    }

    fn removed(&mut self, _cue: &Cue, reason: RemoveReason) {
        self.persistent_removed += 1;
        if reason == RemoveReason::Mispredicted {
            self.persistent_mispredicted += 1;
        }
    }

    fn confirmed(&mut self, cue: &Cue) {
        let counted = cue.key.frame < self.until;
        if counted {
            self.confirmed_log.push(cue.key);
        }
        if cue.key.kind == CueKind::Executed {
            self.bursts_confirmed += 1;
            if counted {
                *self.confirmed_bursts.entry(cue.key.tag).or_default() += 1;
            }
        } else if counted {
            *self.confirmed_persistent.entry(cue.key.tag).or_default() += 1;
        }
    }
}

/// One peer's cue counters: the director's and the presenter's.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CueCounts {
    /// Bursts played.
    pub played: u64,
    /// Re-emitted bursts recognised as already played (re-simulated frames).
    pub deduplicated: u64,
    /// Played bursts cancelled (mispredicted).
    pub cancelled: u64,
    /// Cues confirmed (bursts and persistent instances).
    pub confirmed: u64,
    /// Bursts confirmed.
    pub bursts_confirmed: u64,
    /// Bursts played but not yet confirmed when the match ended (frames past the last one the
    /// match confirmed).
    pub pending: u64,
    /// Persistent `on_active` calls.
    pub on_active: u64,
    /// Persistent `removed` calls.
    pub removed: u64,
    /// Persistent instances removed as mispredicted.
    pub mispredicted: u64,
    /// Confirmed cues of the match's frames per tag name: (bursts, persistent instances).
    /// Bursts are the same on every peer; persistent instances count those whose start was
    /// confirmed while shown, which depends on how far ahead the peer was.
    pub by_tag: BTreeMap<String, (u64, u64)>,
}

impl CueCounts {
    /// Gathers a director's and its presenter's counters (tag names from the duel's content).
    pub fn of(director: &CueDirector, counter: &CueCounter) -> CueCounts {
        let c = director.counters();
        let content = super::content();
        let mut by_tag: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for (t, n) in &counter.confirmed_bursts {
            by_tag.entry(content.tag_name(*t).to_string()).or_default().0 += n;
        }
        for (t, n) in &counter.confirmed_persistent {
            by_tag.entry(content.tag_name(*t).to_string()).or_default().1 += n;
        }
        CueCounts {
            played: c.played,
            deduplicated: c.deduplicated,
            cancelled: c.cancelled,
            confirmed: c.confirmed,
            bursts_confirmed: counter.bursts_confirmed,
            pending: director.unconfirmed_played() as u64,
            on_active: c.on_active,
            removed: c.removed,
            mispredicted: c.mispredicted,
            by_tag,
        }
    }

    /// The director's burst invariant: every burst played was confirmed, cancelled, or is
    /// still pending — none was lost or played twice.
    pub fn balanced(&self) -> bool {
        self.played == self.bursts_confirmed + self.cancelled + self.pending
    }

    /// Adds another director's counts (a peer's second stay in the match, with a new director):
    /// sums every counter. Bursts a first stay played and never confirmed stay pending.
    pub fn add(&mut self, other: &CueCounts) {
        self.played += other.played;
        self.deduplicated += other.deduplicated;
        self.cancelled += other.cancelled;
        self.confirmed += other.confirmed;
        self.bursts_confirmed += other.bursts_confirmed;
        self.pending += other.pending;
        self.on_active += other.on_active;
        self.removed += other.removed;
        self.mispredicted += other.mispredicted;
        for (tag, (b, p)) in &other.by_tag {
            let e = self.by_tag.entry(tag.clone()).or_default();
            e.0 += b;
            e.1 += p;
        }
    }
}

/// A peer that left the match and came back into its own slot
/// ([`MatchOptions::rejoin`](super::MatchOptions::rejoin)): what its return came to.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Comeback {
    /// The frame F its new session started at (its own
    /// [`SessionEvent::Rejoined`](rollback_abilities::session::SessionEvent::Rejoined)).
    pub frame: Frame,
    /// The world checksum after each confirmed frame from F on, from its runner's confirmed
    /// state checksums ([`Runner::confirmed_checksums`]; the duel records no replay on it).
    pub checksums: Vec<u64>,
    /// Bytes of the members' state it received (0: not seen).
    pub state_bytes: usize,
}

/// What one peer reports after a match.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PeerSummary {
    /// The player the peer controlled.
    pub player: usize,
    /// Its runner's rollback counters.
    pub stats: RunnerStats,
    /// Its cue counters.
    pub cues: CueCounts,
    /// The world checksum after each confirmed frame, from frame 0.
    pub checksums: Vec<u64>,
    /// `Some(frame)`: this peer left the match after its world simulated `frame`
    /// ([`MatchOptions::leave`]); its numbers stop there.
    pub left_after: Option<Frame>,
    /// The departures this peer's runner reported
    /// ([`SessionEvent::Left`](rollback_abilities::session::SessionEvent::Left)), in order: the players who
    /// left and the last frame of their real input (`None`: they never sent any).
    pub departures: Vec<(Vec<usize>, Option<Frame>)>,
    /// The cues this peer's director confirmed for the match's frames, sorted (bursts and the
    /// starts of persistent instances).
    pub confirmed_cues: Vec<CueKey>,
    /// Ticks on which this peer's bot decided from an older frame than
    /// [`BOT_REACTION_FRAMES`](super::BOT_REACTION_FRAMES) (see
    /// [`BotView::late`](super::BotView::late)); 0 means its inputs depended on the options alone.
    pub bot_late: u64,
    /// The returns this peer's runner reported
    /// ([`SessionEvent::Rejoined`](rollback_abilities::session::SessionEvent::Rejoined)), in
    /// order: the players back and the frame F their new session started at.
    pub rejoins: Vec<(Vec<usize>, Frame)>,
    /// `Some`: this peer left ([`PeerSummary::left_after`]) and came back into the match; see
    /// [`PeerSummary::and_then`].
    pub came_back: Option<Comeback>,
}

impl PeerSummary {
    /// Summarises a peer's runner (which must record, see [`Runner::record`], for checksums)
    /// and the presenter its cue director fed. `left_after` and `departures` start empty: the
    /// match driver fills them in.
    pub fn of(player: usize, runner: &Runner<Duel>, counter: &CueCounter) -> PeerSummary {
        let cues = runner.director.as_ref().map(|d| CueCounts::of(d, counter)).unwrap_or_default();
        let checksums = runner
            .recorder()
            .map(|r| r.replay().frames.iter().map(|f| f.checksum).collect())
            .unwrap_or_default();
        let mut confirmed_cues = counter.confirmed_log.clone();
        confirmed_cues.sort_unstable();
        PeerSummary {
            player,
            stats: runner.stats(),
            cues,
            checksums,
            left_after: None,
            departures: Vec::new(),
            confirmed_cues,
            bot_late: 0,
            rejoins: Vec::new(),
            came_back: None,
        }
    }

    /// A peer's summary over two stays in the match: `self` is its first (it left after
    /// [`PeerSummary::left_after`]), `then` its second, after it came back at `comeback.frame`
    /// with a new runner and cue director. Rollback and cue counters add up; the cue log joins
    /// both; `checksums` stay the first stay's (from frame 0) and `comeback` holds the second's;
    /// the bot, departures and returns are `then`'s (they span the whole match).
    pub fn and_then(self, then: PeerSummary, comeback: Comeback) -> PeerSummary {
        let (a, b) = (self.stats, then.stats);
        let stats = RunnerStats {
            frames: a.frames + b.frames,
            rollbacks: a.rollbacks + b.rollbacks,
            resimulated: a.resimulated + b.resimulated,
            max_rollback: a.max_rollback.max(b.max_rollback),
            rollback_depth_sum: a.rollback_depth_sum + b.rollback_depth_sum,
            skipped: a.skipped + b.skipped,
            desyncs: a.desyncs + b.desyncs,
        };
        let mut cues = self.cues;
        cues.add(&then.cues);
        let mut confirmed_cues = self.confirmed_cues;
        confirmed_cues.extend(then.confirmed_cues);
        confirmed_cues.sort_unstable();
        PeerSummary {
            player: self.player,
            stats,
            cues,
            checksums: self.checksums,
            left_after: self.left_after,
            departures: then.departures,
            confirmed_cues,
            bot_late: then.bot_late,
            rejoins: then.rejoins,
            came_back: Some(comeback),
        }
    }

    /// Whether this peer was in the match at its end: it never left, or it came back.
    pub fn stayed(&self) -> bool {
        self.left_after.is_none() || self.came_back.is_some()
    }

    /// Whether this peer was in the match from its first frame to its last (it never left).
    pub fn whole_match(&self) -> bool {
        self.left_after.is_none()
    }

    /// The frame F at which `player` came back into the match as this peer's runner reported
    /// it (the last return reported).
    pub fn rejoin_of(&self, player: usize) -> Option<Frame> {
        self.rejoins.iter().rev().find(|(players, _)| players.contains(&player)).map(|(_, f)| *f)
    }

    /// The last frame of `player`'s input as this peer's runner reported it.
    pub fn last_input_of(&self, player: usize) -> LastInput {
        match self.departures.iter().find(|(players, _)| players.contains(&player)) {
            None => LastInput::NotReported,
            Some((_, None)) => LastInput::NoInput,
            Some((_, Some(f))) => LastInput::Frame(*f),
        }
    }
}

/// The last frame of a departed player's real input, as one survivor's runner reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum LastInput {
    /// The survivor reported no departure of this player.
    NotReported,
    /// The player never sent any input (it had the disconnected input from frame 0).
    NoInput,
    /// Its real input ends at this frame; from the next one on it has the disconnected input.
    Frame(Frame),
}

impl fmt::Display for LastInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LastInput::NotReported => f.write_str("not reported"),
            LastInput::NoInput => f.write_str("none"),
            LastInput::Frame(n) => write!(f, "{n}"),
        }
    }
}

/// One peer's confirmed cue log held against the replay's: the proof that each cue was
/// presented exactly once and only if it happened.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CueLogCheck {
    /// The peer's player.
    pub player: usize,
    /// Bursts it confirmed (played once, never cancelled).
    pub bursts: usize,
    /// The first burst (in key order) where its log and the replay's differ: one of them has
    /// it and the other does not. `None`: the two burst logs are identical.
    pub burst_difference: Option<CueKey>,
    /// Persistent instances it confirmed (an instance that began and ended inside one rollback
    /// is presented late, once its end is confirmed: it is confirmed too).
    pub persistent: usize,
    /// The first persistent instance where its log and the replay's differ. `None`: identical.
    pub persistent_difference: Option<CueKey>,
}

/// The first key where two sorted logs differ (a key one of them has and the other lacks).
fn first_difference(mine: &[CueKey], theirs: &[CueKey]) -> Option<CueKey> {
    mine.iter().zip(theirs).find(|(a, b)| a != b).map(|(a, b)| *a.min(b)).or_else(|| {
        match mine.len().cmp(&theirs.len()) {
            core::cmp::Ordering::Less => theirs.get(mine.len()).copied(),
            core::cmp::Ordering::Greater => mine.get(theirs.len()).copied(),
            core::cmp::Ordering::Equal => None,
        }
    })
}

impl CueLogCheck {
    /// Compares one peer's sorted confirmed log with the replay's.
    fn of(peer: &PeerSummary, replay: &[CueKey]) -> CueLogCheck {
        let split = |log: &[CueKey]| -> (Vec<CueKey>, Vec<CueKey>) {
            log.iter().copied().partition(|k| k.kind == CueKind::Executed)
        };
        let (mine, mine_p) = split(&peer.confirmed_cues);
        let (theirs, theirs_p) = split(replay);
        CueLogCheck {
            player: peer.player,
            bursts: mine.len(),
            burst_difference: first_difference(&mine, &theirs),
            persistent: mine_p.len(),
            persistent_difference: first_difference(&mine_p, &theirs_p),
        }
    }

    /// Whether both logs are identical to the replay's.
    pub fn is_ok(&self) -> bool {
        self.burst_difference.is_none() && self.persistent_difference.is_none()
    }
}

/// The cues a replay confirms played straight, frame by frame (every frame confirmed as soon
/// as it is simulated: the timeline with no prediction at all), sorted, for frames before
/// `frames`.
pub fn replay_cue_log(
    replay: &Replay,
    options: &MatchOptions,
    frames: Frame,
) -> Result<Vec<CueKey>, MatchError> {
    let mut world = super::try_new_world(options.seed, options.peers)?;
    replay.start(&mut world)?;
    let mut director = CueDirector::new();
    let mut counter = CueCounter::until(frames);
    for frame in replay.first_frame()..frames.min(replay.end_frame()) {
        world.step(&replay.frame_inputs::<Duel>(frame));
        director.ingest(world.output());
        director.reconcile(&world, Some(frame), &mut counter);
    }
    let mut log = counter.confirmed_log;
    log.sort_unstable();
    Ok(log)
}

/// One player's departure, as the survivors reported it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DepartureSummary {
    /// The player who left.
    pub player: usize,
    /// `Some(frame)`: it was asked to leave ([`MatchOptions::leave`]) and did, after its world
    /// simulated `frame`; `None`: the survivors dropped it without being asked (it went silent
    /// for their departure time).
    pub left_after: Option<Frame>,
    /// The last frame of its input as each survivor reported it: (survivor, what it saw).
    pub seen: Vec<(usize, LastInput)>,
    /// What every survivor reported, when they all reported the same departure.
    pub agreed: Option<LastInput>,
    /// Frames of the leaver's own confirmed checksums compared with the survivors' (those up
    /// to the agreed last frame of its input, when it reported a summary).
    pub leaver_compared: Frame,
    /// The first of those frames whose checksum differs, if any.
    pub leaver_disagreement: Option<Frame>,
}

impl DepartureSummary {
    /// Whether the player was asked to leave, every survivor reported the departure at the
    /// same last frame, and the leaver's own confirmed frames agree with the survivors' up to
    /// there.
    pub fn is_ok(&self) -> bool {
        self.left_after.is_some()
            && self.agreed.is_some_and(|a| a != LastInput::NotReported)
            && self.leaver_disagreement.is_none()
    }
}

/// A player's return into its own slot
/// ([`MatchOptions::rejoin`](super::MatchOptions::rejoin)), as the peers in the match at its
/// end reported it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RejoinSummary {
    /// The player who came back.
    pub player: usize,
    /// The frame F of its return as each peer in the match at its end reported it (the player
    /// itself included): (peer, F; `None`: not reported).
    pub seen: Vec<(usize, Option<Frame>)>,
    /// F, when every one of them reported the same.
    pub agreed: Option<Frame>,
    /// Bytes of the members' state it received and loaded (0: not seen).
    pub state_bytes: usize,
    /// Frames from its own F to the match's last one.
    pub expected: Frame,
    /// Of those, frames whose checksum it confirmed and the report compared with the first
    /// peer in the match throughout.
    pub compared: Frame,
    /// The first compared frame whose checksum differs, if any.
    pub disagreement: Option<Frame>,
    /// Bursts its cue director confirmed for frames from F on.
    pub bursts: usize,
    /// The first burst from F on where its log and the replay's differ (`None`: identical).
    pub burst_difference: Option<CueKey>,
}

impl RejoinSummary {
    /// Whether every peer reported the return at the same frame F inside the match, and the
    /// player's own confirmed frames and bursts from F to the end are the others'.
    pub fn is_ok(&self) -> bool {
        self.agreed.is_some()
            && self.expected > 0
            && self.compared == self.expected
            && self.disagreement.is_none()
            && self.burst_difference.is_none()
    }
}

/// The returns the peers reported: every peer that came back
/// ([`PeerSummary::came_back`]), checked against the first peer in the match throughout and
/// the replay's cue log.
fn rejoins(peers: &[PeerSummary], frames: Frame, replay_cues: &[CueKey]) -> Vec<RejoinSummary> {
    let theirs = peers.iter().find(|p| p.whole_match()).map_or(&[][..], |p| &p.checksums[..]);
    peers
        .iter()
        .filter_map(|r| Some((r, r.came_back.as_ref()?)))
        .map(|(r, back)| {
            let seen: Vec<(usize, Option<Frame>)> = peers
                .iter()
                .filter(|p| p.stayed())
                .map(|p| (p.player, p.rejoin_of(r.player)))
                .collect();
            let agreed = match seen.first() {
                Some((_, Some(f))) if seen.iter().all(|(_, s)| *s == Some(*f)) => Some(*f),
                _ => None,
            };
            let from = back.frame;
            let expected = frames.saturating_sub(from);
            let theirs = theirs.get(from as usize..).unwrap_or_default();
            let n = back.checksums.len().min(theirs.len()).min(expected as usize);
            let disagreement =
                (0..n).find(|&i| back.checksums[i] != theirs[i]).map(|i| from + i as Frame);
            let bursts_from = |log: &[CueKey]| -> Vec<CueKey> {
                log.iter()
                    .copied()
                    .filter(|k| k.kind == CueKind::Executed && (from..frames).contains(&k.frame))
                    .collect()
            };
            let mine = bursts_from(&r.confirmed_cues);
            RejoinSummary {
                player: r.player,
                seen,
                agreed,
                state_bytes: back.state_bytes,
                expected,
                compared: n as Frame,
                disagreement,
                bursts: mine.len(),
                burst_difference: first_difference(&mine, &bursts_from(replay_cues)),
            }
        })
        .collect()
}

/// A fighter's state at the end of the match.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FighterSummary {
    /// The player.
    pub player: usize,
    /// Current attribute values, by name.
    pub attributes: Vec<(String, Fx)>,
    /// The tags it holds exactly.
    pub tags: Vec<String>,
    /// Its active effects: name, stacks, frames left (`None`: infinite).
    pub effects: Vec<(String, u16, Option<u32>)>,
    /// Rounds won.
    pub rounds_won: u32,
    /// Damage taken over the whole match.
    pub damage_taken: Fx,
}

impl FighterSummary {
    /// A fighter's summary from a duel world.
    pub fn of(world: &World<Duel>, player: usize) -> FighterSummary {
        let c = world.content();
        let g = world.global();
        let mut s = FighterSummary {
            player,
            rounds_won: g.wins.get(player).copied().unwrap_or(0),
            damage_taken: g.damage_taken.get(player).copied().unwrap_or(Fx::ZERO),
            ..FighterSummary::default()
        };
        let Some(e) = systems::fighter(world, player) else { return s };
        let i = ids();
        for a in [i.health, i.max_health, i.mana, i.stamina, i.move_speed] {
            if let Some(v) = world.attr(e, a) {
                s.attributes.push((c.attr_def(a).name.clone(), v));
            }
        }
        s.tags = world.explicit_tags(e).iter().map(|t| c.tag_name(t).to_string()).collect();
        let frame = world.frame();
        s.effects = world
            .effects(e)
            .iter()
            .zip(world.effect_timers(e))
            .map(|(fx, t)| (c.effect_name(fx.def).to_string(), fx.stacks, t.remaining(frame)))
            .collect();
        s
    }

    /// An attribute's value by name.
    pub fn attr(&self, name: &str) -> Option<Fx> {
        self.attributes.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// Everything a match produced, deterministic for a given seed and options (in-memory
/// network): print it with `Display`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MatchReport {
    /// How the match was played.
    pub options: MatchOptions,
    /// Over what.
    pub transport: Transport,
    /// Frames of the match (the confirmed timeline the report describes).
    pub frames: Frame,
    /// What each peer reported (those that left too, see [`PeerSummary::left_after`]).
    pub peers: Vec<PeerSummary>,
    /// Frames whose confirmed checksums were compared across the peers in the match throughout
    /// ([`PeerSummary::whole_match`]).
    pub compared_frames: Frame,
    /// The first confirmed frame whose checksum differs between the peers in the match
    /// throughout, if any.
    pub first_disagreement: Option<Frame>,
    /// The players who left or were dropped (those who came back too), and how the others
    /// carried on.
    pub departures: Vec<DepartureSummary>,
    /// The players who left and came back, and the checks of their return.
    pub rejoins: Vec<RejoinSummary>,
    /// The peer whose replay the report verified (the first in the match throughout).
    pub replay_peer: usize,
    /// Frames of the replay re-simulated headless by [`Replay::verify`].
    pub verified_frames: Frame,
    /// The first frame whose re-simulated checksum differs from the recorded one, if any.
    pub replay_divergence: Option<Frame>,
    /// The world checksum after the last frame (re-simulated).
    pub final_checksum: u64,
    /// The cues of the replay played straight ([`replay_cue_log`]): what happened.
    pub replay_cues: Vec<CueKey>,
    /// Each peer in the match throughout: its confirmed cue log held against
    /// [`MatchReport::replay_cues`] (a rejoiner's bursts from its return on are checked in
    /// [`MatchReport::rejoins`]).
    pub cue_logs: Vec<CueLogCheck>,
    /// Rounds decided (won or drawn).
    pub rounds: u32,
    /// Rounds drawn.
    pub draws: u32,
    /// What happened (confirmed timeline).
    pub stats: Stats,
    /// Each fighter's final state.
    pub fighters: Vec<FighterSummary>,
    /// The winner ([`super::winner`]), `None` for a draw. A player who left and did not come
    /// back forfeits: the winner is the leader among the players in the match at its end
    /// ([`super::winner_among`]).
    pub winner: Option<usize>,
    /// Matches decided in the frames played (each best of [`BEST_OF`](super::BEST_OF)
    /// rounds; the bots ask for the rematch at once).
    pub matches: u32,
    /// The last decided match's winner (`None`: a draw, or none decided).
    pub last_match_winner: Option<usize>,
    /// Where the match in play stood after the last frame.
    pub match_state: super::MatchState,
}

impl MatchReport {
    /// Builds a report from the peers' summaries and the replay of the first peer in the match
    /// throughout: compares the confirmed checksums of the peers in the match throughout,
    /// gathers the departures and returns they reported (a returning player's checksums from
    /// its return on are compared with theirs), re-verifies the replay (truncated to the
    /// match's frames) on a fresh world with [`Replay::verify`], and reads the fighters' final
    /// state from it.
    pub fn build(
        options: MatchOptions,
        transport: Transport,
        peers: Vec<PeerSummary>,
        replay: &Replay,
    ) -> Result<MatchReport, MatchError> {
        let frames = options.frames;
        let whole: Vec<&PeerSummary> = peers.iter().filter(|p| p.whole_match()).collect();
        let compared =
            whole.iter().map(|p| p.checksums.len()).min().unwrap_or(0).min(frames as usize);
        let first_disagreement = (0..compared)
            .find(|&f| whole.iter().any(|p| p.checksums[f] != whole[0].checksums[f]))
            .map(|f| f as Frame);
        let departures = departures(&peers, compared);
        let replay_peer = whole.first().map_or(0, |p| p.player);
        let mut replay = replay.clone();
        replay.frames.truncate(frames as usize);
        replay.keyframes.retain(|(f, _)| *f <= frames);
        let mut world = super::try_new_world(options.seed, options.peers)?;
        let verification = replay.verify(&mut world)?;
        let g = *world.global();
        let players = world.players().min(MAX_FIGHTERS);
        let replay_cues = replay_cue_log(&replay, &options, frames)?;
        let cue_logs = whole.iter().map(|p| CueLogCheck::of(p, &replay_cues)).collect();
        let rejoins = rejoins(&peers, frames, &replay_cues);
        // A player who came back is in the match again: only those who stayed away forfeit.
        let gone = |p: usize| {
            departures.iter().any(|d| d.player == p) && rejoins.iter().all(|r| r.player != p)
        };
        let winner = super::winner_among(&world, |p| !gone(p));
        Ok(MatchReport {
            options,
            transport,
            frames,
            compared_frames: compared as Frame,
            first_disagreement,
            departures,
            rejoins,
            replay_peer,
            verified_frames: verification.frames,
            replay_divergence: verification.first_divergence,
            final_checksum: world.checksum(),
            replay_cues,
            cue_logs,
            rounds: g.wins.iter().sum::<u32>() + g.draws,
            draws: g.draws,
            stats: g.stats,
            fighters: (0..players).map(|p| FighterSummary::of(&world, p)).collect(),
            winner,
            matches: g.matches,
            last_match_winner: g.match_winner.checked_sub(1).map(|p| p as usize),
            match_state: super::match_state(&world),
            peers,
        })
    }

    /// The summaries of the peers that stayed to the end.
    pub fn survivors(&self) -> impl Iterator<Item = &PeerSummary> {
        self.peers.iter().filter(|p| p.stayed())
    }

    /// The departure of `player`, if it left or was dropped.
    pub fn departure_of(&self, player: usize) -> Option<&DepartureSummary> {
        self.departures.iter().find(|d| d.player == player)
    }

    /// The return of `player`, if it left and came back.
    pub fn rejoin_of(&self, player: usize) -> Option<&RejoinSummary> {
        self.rejoins.iter().find(|r| r.player == player)
    }

    /// The players who left and did not come back (they forfeit).
    pub fn forfeits(&self) -> Vec<usize> {
        self.departures.iter().map(|d| d.player).filter(|p| self.rejoin_of(*p).is_none()).collect()
    }

    /// Whether every peer that stayed confirmed every frame and all their checksums agree.
    pub fn checksums_agree(&self) -> bool {
        self.first_disagreement.is_none() && self.compared_frames == self.frames
    }

    /// Whether every departure went as asked: each player asked to leave (or to leave and come
    /// back) left, the survivors agree on the last frame of its input, and nobody else was
    /// dropped (true without departures).
    pub fn departures_agree(&self) -> bool {
        self.departures.iter().all(DepartureSummary::is_ok)
            && self.options.leaver().is_none_or(|p| self.departure_of(p).is_some())
            && self.options.rejoiner().is_none_or(|p| self.departure_of(p).is_some())
    }

    /// Whether every return went as asked: the player asked to come back
    /// ([`MatchOptions::rejoin`](super::MatchOptions::rejoin)) did, and each return passes
    /// [`RejoinSummary::is_ok`] (true without returns).
    pub fn rejoins_agree(&self) -> bool {
        self.rejoins.iter().all(RejoinSummary::is_ok)
            && self.options.rejoiner().is_none_or(|p| self.rejoin_of(p).is_some())
    }

    /// Whether the replay re-simulated to the same checksums for every frame of the match.
    pub fn replay_verified(&self) -> bool {
        self.replay_divergence.is_none() && self.verified_frames == self.frames
    }

    /// Whether the cue counters of every peer that stayed balance ([`CueCounts::balanced`]).
    pub fn cues_balanced(&self) -> bool {
        self.survivors().all(|p| p.cues.balanced())
    }

    /// Whether every peer that stayed confirmed exactly the replay's bursts, each once, and
    /// only persistent instances the replay has ([`CueLogCheck::is_ok`]).
    pub fn cue_logs_agree(&self) -> bool {
        !self.cue_logs.is_empty() && self.cue_logs.iter().all(CueLogCheck::is_ok)
    }

    /// Whether every bot of every peer decided from confirmed frames only
    /// ([`PeerSummary::bot_late`] is 0): the match is a function of its options alone.
    pub fn reproducible(&self) -> bool {
        self.peers.iter().all(|p| p.bot_late == 0)
    }

    /// Rollbacks over all peers.
    pub fn rollbacks(&self) -> u64 {
        self.peers.iter().map(|p| p.stats.rollbacks).sum()
    }

    /// Re-simulated frames over all peers.
    pub fn resimulated(&self) -> u64 {
        self.peers.iter().map(|p| p.stats.resimulated).sum()
    }

    /// The deepest rollback on any peer.
    pub fn max_rollback(&self) -> u32 {
        self.peers.iter().map(|p| p.stats.max_rollback).max().unwrap_or(0)
    }

    /// The mean rollback depth over all peers.
    pub fn mean_rollback(&self) -> f64 {
        let sum: u64 = self.peers.iter().map(|p| p.stats.rollback_depth_sum).sum();
        let n = self.rollbacks();
        if n == 0 { 0.0 } else { sum as f64 / n as f64 }
    }

    /// Whether everything checked out on the peers that stayed: checksums agree, the replay
    /// verifies, no desync was reported, the cue counters balance, the confirmed cue logs equal
    /// the replay's ([`MatchReport::cue_logs_agree`]), and every departure and return went as
    /// asked ([`MatchReport::departures_agree`], [`MatchReport::rejoins_agree`]).
    pub fn is_ok(&self) -> bool {
        self.checksums_agree()
            && self.replay_verified()
            && self.cues_balanced()
            && self.cue_logs_agree()
            && self.survivors().all(|p| p.stats.desyncs == 0)
            && self.departures_agree()
            && self.rejoins_agree()
    }
}

/// The departures the peers reported: every player who left ([`PeerSummary::left_after`],
/// whether or not it came back) or whom a peer in the match throughout reported as gone.
/// `compared` is how many frames the survivors' checksums were compared over.
fn departures(peers: &[PeerSummary], compared: usize) -> Vec<DepartureSummary> {
    let mut players: Vec<usize> =
        peers.iter().filter(|p| !p.whole_match()).map(|p| p.player).collect();
    for p in peers.iter().filter(|p| p.whole_match()) {
        for (left, _) in &p.departures {
            players.extend(left.iter().copied());
        }
    }
    players.sort_unstable();
    players.dedup();
    let reference = peers.iter().find(|p| p.whole_match());
    players
        .into_iter()
        .map(|player| {
            let leaver = peers.iter().find(|p| p.player == player);
            let seen: Vec<(usize, LastInput)> = peers
                .iter()
                .filter(|p| p.whole_match() && p.player != player)
                .map(|p| (p.player, p.last_input_of(player)))
                .collect();
            let agreed = match seen.first() {
                Some((_, first)) if seen.iter().all(|(_, s)| s == first) => Some(*first),
                _ => None,
            };
            // The leaver's confirmed frames used its own real input; the survivors' used it
            // through the agreed last frame: their checksums agree up to there.
            let through = match agreed {
                Some(LastInput::Frame(f)) => f as usize + 1,
                _ => 0,
            };
            let (leaver_compared, leaver_disagreement) = match (leaver, reference) {
                (Some(l), Some(r)) if !l.whole_match() => {
                    let n = l.checksums.len().min(through).min(compared);
                    let d = (0..n).find(|&f| l.checksums[f] != r.checksums[f]).map(|f| f as Frame);
                    (n as Frame, d)
                }
                _ => (0, None),
            };
            DepartureSummary {
                player,
                left_after: leaver.and_then(|l| l.left_after),
                seen,
                agreed,
                leaver_compared,
                leaver_disagreement,
            }
        })
        .collect()
}

/// A fixed-point value for people: integers as integers, otherwise one decimal.
fn show(v: Fx) -> String {
    if v.frac() == Fx::ZERO {
        format!("{}", v.to_num::<i64>())
    } else {
        format!("{:.1}", v.to_num::<f64>())
    }
}

/// `1 round`, `2 rounds`.
fn plural(n: u32, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

fn mark(ok: bool) -> &'static str {
    if ok { "ok" } else { "FAILED" }
}

/// Writes a table: a header row, then rows of a label and one value per column, right-aligned.
fn table(
    f: &mut fmt::Formatter<'_>,
    title: &str,
    columns: &[String],
    rows: &[(&str, Vec<String>)],
) -> fmt::Result {
    let label_w = rows.iter().map(|(l, _)| l.len() + 2).max().unwrap_or(0).max(title.len());
    let mut widths: Vec<usize> = columns.iter().map(String::len).collect();
    for (_, cells) in rows {
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    write!(f, "{title:<label_w$}")?;
    for (c, w) in columns.iter().zip(&widths) {
        write!(f, "  {c:>w$}")?;
    }
    writeln!(f)?;
    for (label, cells) in rows {
        write!(f, "  {label:<w$}", w = label_w.saturating_sub(2))?;
        for (c, w) in cells.iter().zip(&widths) {
            write!(f, "  {c:>w$}")?;
        }
        writeln!(f)?;
    }
    Ok(())
}

impl fmt::Display for MatchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_setup(f)?;
        self.write_rollback(f)?;
        self.write_determinism(f)?;
        for d in &self.departures {
            self.write_departure(f, d)?;
            if let Some(r) = self.rejoin_of(d.player) {
                self.write_rejoin(f, d, r)?;
            }
            writeln!(f)?;
        }
        self.write_cues(f)?;
        self.write_events(f)?;
        self.write_fighters(f)?;
        self.write_match(f)?;
        self.write_result(f)?;
        write!(
            f,
            "Verdict: {}",
            if self.is_ok() {
                "every check passed"
            } else {
                "FAILED (see the lines marked FAILED)"
            }
        )
    }
}

impl MatchReport {
    /// The setup lines: the match's size and seed, and the network it was played over.
    fn write_setup(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        writeln!(
            f,
            "Duel: {} fighters, {} frames ({:.1} s of game time at 60 Hz), seed {}",
            o.peers,
            self.frames,
            f64::from(self.frames) / 60.0,
            o.seed
        )?;
        match self.transport {
            Transport::Emulated => writeln!(
                f,
                "Network: in-memory emulation, {} ms latency + 0-{} ms jitter, {} % loss, \
                 input delay {} frames",
                o.latency_ms, o.jitter_ms, o.loss_percent, o.input_delay
            )?,
            Transport::Udp => writeln!(
                f,
                "Network: UDP on 127.0.0.1, one OS process per peer, input delay {} frames",
                o.input_delay
            )?,
        }
        writeln!(f)
    }

    /// The rollback table: each peer's rollback counters and the match's totals.
    fn write_rollback(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut cols = self.peer_columns();
        cols.push("all".into());
        let per = |g: &dyn Fn(&PeerSummary) -> String, all: String| {
            let mut v: Vec<String> = self.peers.iter().map(g).collect();
            v.push(all);
            v
        };
        let rows = vec![
            (
                "frames simulated",
                per(&|p| p.stats.frames.to_string(), {
                    self.peers.iter().map(|p| p.stats.frames).sum::<u64>().to_string()
                }),
            ),
            ("rollbacks", per(&|p| p.stats.rollbacks.to_string(), self.rollbacks().to_string())),
            (
                "max depth",
                per(&|p| p.stats.max_rollback.to_string(), self.max_rollback().to_string()),
            ),
            (
                "mean depth",
                per(&|p| format!("{:.2}", p.stats.mean_rollback()), {
                    format!("{:.2}", self.mean_rollback())
                }),
            ),
            (
                "re-simulated",
                per(&|p| p.stats.resimulated.to_string(), self.resimulated().to_string()),
            ),
            (
                "ticks waited",
                per(&|p| p.stats.skipped.to_string(), {
                    self.peers.iter().map(|p| p.stats.skipped).sum::<u64>().to_string()
                }),
            ),
            (
                "desyncs",
                per(&|p| p.stats.desyncs.to_string(), {
                    self.peers.iter().map(|p| p.stats.desyncs).sum::<u64>().to_string()
                }),
            ),
        ];
        table(f, "Rollback", &cols, &rows)?;
        writeln!(
            f,
            "  (frames simulated: each frame's first simulation; a peer runs a frame or two past \
             the match's\n   last one while it waits for the others' inputs to confirm it. \
             rollbacks: loads of an older\n   state when a remote input differed from the \
             prediction; depth: frames rolled back;\n   re-simulated: frames simulated again \
             after those loads. ticks waited: ticks GGRS would not\n   advance, being {} frames \
             ahead of a silent peer. desyncs: checksum mismatches GGRS reported.)",
            super::play::MAX_PREDICTION
        )?;
        writeln!(f)
    }

    /// The determinism lines: the peers' checksums held against each other, the replay
    /// re-simulated, and whether the bots' inputs depended on network timing.
    fn write_determinism(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.peers.len();
        let whole = self.peers.iter().filter(|p| p.whole_match()).count();
        let (which, below) = if self.rejoins.is_empty() {
            ("that stayed", "the leaver's are compared below")
        } else {
            ("in the match throughout", "the others' are compared below")
        };
        let on = match (self.departures.is_empty(), whole) {
            (true, _) => format!("on all {n} peers"),
            (false, 1) => format!("on peer {} (the only peer {which}; {below})", self.replay_peer),
            (false, 2) => format!("on both peers {which} ({below})"),
            (false, k) => format!("on all {k} peers {which} ({below})"),
        };
        match self.first_disagreement {
            None if self.checksums_agree() => writeln!(
                f,
                "Checksums  {} confirmed frames {}{on}: ok",
                self.compared_frames,
                if whole == 1 && !self.departures.is_empty() { "" } else { "identical " }
            )?,
            None => writeln!(
                f,
                "Checksums  only {} of {} frames confirmed {on}: FAILED",
                self.compared_frames, self.frames
            )?,
            Some(d) => writeln!(f, "Checksums  peers disagree from frame {d}: FAILED")?,
        }
        match self.replay_divergence {
            None => writeln!(
                f,
                "Replay     peer {}'s confirmed inputs re-simulated headless, {} of {} frame \
                 checksums match: {} (final {:016x})",
                self.replay_peer,
                self.verified_frames,
                self.frames,
                mark(self.replay_verified()),
                self.final_checksum
            )?,
            Some(d) => writeln!(f, "Replay     re-simulation diverges at frame {d}: FAILED")?,
        }
        let late: u64 = self.peers.iter().map(|p| p.bot_late).sum();
        if late == 0 {
            writeln!(
                f,
                "Bots       every input decided from the match {} frames earlier, a frame every \
                 peer had\n           confirmed: network timing cannot change the match; the \
                 same flags replay it",
                super::BOT_REACTION_FRAMES
            )?;
        } else {
            writeln!(
                f,
                "Bots       on {late} ticks a bot decided from an older frame than its confirmed \
                 view\n           should hold: this run may not repeat from the same flags"
            )?;
        }
        writeln!(f)
    }

    /// The events of the confirmed timeline: rounds, and what each recipe did.
    fn write_events(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        writeln!(f, "Events (confirmed timeline)")?;
        let events = [
            (
                "rounds",
                format!("{} decided, {} drawn, {} knock-outs", self.rounds, self.draws, s.kos),
            ),
            (
                "melee",
                format!(
                    "{} hits, {} light->heavy cancels, {} lifesteal heals",
                    s.melee_hits, s.heavy_cancels, s.lifesteal_heals
                ),
            ),
            ("crits", format!("{}", s.crits)),
            ("poison", format!("{} stacks applied, {} ticks", s.poison_stacks, s.poison_ticks)),
            ("stuns", format!("{} stuns, {} abilities cancelled", s.stuns, s.stun_cancels)),
            ("shields", format!("{} hits blocked", s.shield_blocks)),
            ("fireballs", format!("{} launched, {} hit", s.fireballs_launched, s.fireball_hits)),
            ("buffer", format!("{} attacks came out of the input buffer", s.buffered_attacks)),
            ("hitstop", format!("{} fighter-frames frozen by hitstop", s.hitstop_frames)),
        ];
        for (k, v) in events {
            writeln!(f, "  {k:<10} {v}")?;
        }
        writeln!(f)
    }

    /// The fighters' final state: attributes, rounds won, damage taken, tags and effects.
    fn write_fighters(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Fighters after frame {}", self.frames.saturating_sub(1))?;
        for ft in &self.fighters {
            let attrs: Vec<String> = ft
                .attributes
                .iter()
                .filter(|(n, _)| n != "MaxHealth")
                .map(|(n, v)| match (n.as_str(), ft.attr("MaxHealth")) {
                    ("Health", Some(max)) => format!("Health {}/{}", show(*v), show(max)),
                    _ => format!("{n} {}", show(*v)),
                })
                .collect();
            let left = match (self.departure_of(ft.player), self.rejoin_of(ft.player)) {
                (Some(_), Some(_)) => " (rejoined)",
                (Some(_), None) => " (left)",
                (None, _) => "",
            };
            writeln!(
                f,
                "  P{}{left}  {}  | rounds won {}, damage taken {}",
                ft.player,
                attrs.join("  "),
                ft.rounds_won,
                show(ft.damage_taken)
            )?;
            let tags = if ft.tags.is_empty() { "-".to_string() } else { ft.tags.join(", ") };
            writeln!(f, "      tags     {tags}")?;
            let effects: Vec<String> = ft
                .effects
                .iter()
                .map(|(name, stacks, left)| {
                    let mut s = name.clone();
                    if *stacks > 1 {
                        s.push_str(&format!(" x{stacks}"));
                    }
                    if let Some(l) = left {
                        s.push_str(&format!(" ({l} f left)"));
                    }
                    s
                })
                .collect();
            let effects = if effects.is_empty() { "-".to_string() } else { effects.join(", ") };
            writeln!(f, "      effects  {effects}")?;
        }
        writeln!(f)
    }

    /// The cue section: what each peer's presenter was asked to do, the peers' confirmed cue
    /// logs held against the replay's, and the confirmed cues by tag.
    fn write_cues(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cols = self.peer_columns();
        let c = |g: fn(&CueCounts) -> u64| -> Vec<String> {
            self.peers.iter().map(|p| g(&p.cues).to_string()).collect()
        };
        let rows = vec![
            ("bursts played", c(|c| c.played)),
            ("  re-emitted by a re-simulation, not played again", c(|c| c.deduplicated)),
            ("  cancelled: a rollback showed they never happened", c(|c| c.cancelled)),
            ("  confirmed: their frame was confirmed", c(|c| c.bursts_confirmed)),
            ("  pending: past the match's last frame", c(|c| c.pending)),
            (
                "  played = confirmed + cancelled + pending",
                self.peers.iter().map(|p| mark(p.cues.balanced()).to_string()).collect(),
            ),
            ("persistent instances started", c(|c| c.on_active)),
            ("  removed as mispredicted (never existed)", c(|c| c.mispredicted)),
        ];
        table(f, "Cues (what each presenter was asked to show)", &cols, &rows)?;
        writeln!(f)?;

        let bursts = self.replay_cues.iter().filter(|k| k.kind == CueKind::Executed).count();
        let persistent = self.replay_cues.len() - bursts;
        let cols: Vec<String> =
            self.cue_logs.iter().map(|l| format!("peer {}", l.player)).collect();
        let per = |g: &dyn Fn(&CueLogCheck) -> String| -> Vec<String> {
            self.cue_logs.iter().map(g).collect()
        };
        let rows = vec![
            ("bursts confirmed", per(&|l| l.bursts.to_string())),
            (
                "  the same bursts as the replay, each once",
                per(&|l| match l.burst_difference {
                    None => "ok".to_string(),
                    Some(k) => format!("FAILED at frame {}", k.frame),
                }),
            ),
            ("persistent instances confirmed", per(&|l| l.persistent.to_string())),
            (
                "  the same instances as the replay, each once",
                per(&|l| match l.persistent_difference {
                    None => "ok".to_string(),
                    Some(k) => format!("FAILED at frame {}", k.frame),
                }),
            ),
        ];
        writeln!(
            f,
            "Confirmed cue logs held against the replay played straight (every frame confirmed \
             at once):\n{bursts} bursts and {persistent} persistent instances happened"
        )?;
        table(f, "", &cols, &rows)?;
        // What the first difference is: a cue the peer confirmed more or fewer times than the
        // replay has it.
        let content = super::content();
        for l in &self.cue_logs {
            let diffs = [(&l.burst_difference, "burst"), (&l.persistent_difference, "instance")];
            for (diff, what) in diffs {
                if let Some(k) = diff {
                    let count = |log: &[CueKey]| log.iter().filter(|c| *c == k).count();
                    let mine = self
                        .peers
                        .iter()
                        .find(|p| p.player == l.player)
                        .map_or(0, |p| count(&p.confirmed_cues));
                    writeln!(
                        f,
                        "  peer {}: {what} {} ({:?}) on {:?} from {:?}, #{} at frame {}: \
                         confirmed {}, {} in the replay",
                        l.player,
                        content.tag_name(k.tag),
                        k.kind,
                        k.target,
                        k.origin,
                        k.ordinal,
                        k.frame,
                        if mine == 1 { "once".to_string() } else { format!("{mine} times") },
                        count(&self.replay_cues),
                    )?;
                }
            }
        }
        writeln!(f)?;

        let mut by_tag: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for k in &self.replay_cues {
            let e = by_tag.entry(content.tag_name(k.tag)).or_default();
            if k.kind == CueKind::Executed {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
        let rows: Vec<(&str, Vec<String>)> = by_tag
            .iter()
            .map(|(t, (b, p))| {
                let show = |v: u64| if v == 0 { "-".to_string() } else { v.to_string() };
                (*t, vec![show(*b), show(*p)])
            })
            .collect();
        let same = if self.cue_logs_agree() {
            "every peer's bursts are these"
        } else {
            "the peers' logs differ: see above"
        };
        table(
            f,
            &format!("Cues that happened, by tag ({same})"),
            &["bursts".to_string(), "persistent".to_string()],
            &rows,
        )?;
        writeln!(f)
    }

    /// The peers' column labels: `peer i`, `peer i (left)` for a peer that left, or
    /// `peer i (rejoined)` for one that left and came back.
    fn peer_columns(&self) -> Vec<String> {
        self.peers
            .iter()
            .map(|p| {
                if p.whole_match() {
                    format!("peer {}", p.player)
                } else if p.stayed() {
                    format!("peer {} (rejoined)", p.player)
                } else {
                    format!("peer {} (left)", p.player)
                }
            })
            .collect()
    }

    /// The departure section of one player.
    fn write_departure(&self, f: &mut fmt::Formatter<'_>, d: &DepartureSummary) -> fmt::Result {
        let survivors: Vec<usize> =
            self.peers.iter().filter(|p| p.whole_match()).map(|p| p.player).collect();
        let p = d.player;
        let back = self.rejoin_of(p).is_some();
        // The flag as given and the frame it names.
        let (asked, frame) = match (self.options.leave, self.options.rejoin) {
            (Some((lp, frame)), _) if lp == p => (format!("--leave {p}@{frame}"), Some(frame)),
            (_, Some(plan)) if plan.player == p => (format!("--rejoin {plan}"), Some(plan.leave)),
            _ => ("--leave".to_string(), None),
        };
        // A --udp leaver also waits until every peer has sent it input; an emulated one until
        // no rejoin is under way.
        let why = match (d.left_after, frame, self.transport) {
            (Some(at), Some(frame), Transport::Udp) if at != frame => {
                format!("{asked}, once every peer had sent it input")
            }
            (Some(at), Some(frame), Transport::Emulated)
                if at != frame && self.options.rejoiner().is_some_and(|r| r != p) =>
            {
                format!("{asked}, once no rejoin was under way")
            }
            _ => asked,
        };
        match d.left_after {
            Some(at) if back => {
                writeln!(f, "Away       player {p} left the match after frame {at} ({why})")?
            }
            Some(at) if self.options.peers == 2 => {
                writeln!(f, "Opponent left: player {p} left the match after frame {at} ({why})")?
            }
            Some(at) => {
                writeln!(f, "Departure  player {p} left the match after frame {at} ({why})")?
            }
            None => writeln!(
                f,
                "Departure  player {p} was dropped by the others without being asked to leave \
                 (it went silent): FAILED"
            )?,
        }
        let seen: Vec<String> = d.seen.iter().map(|(s, l)| format!("peer {s}: {l}")).collect();
        let verdict = match d.agreed {
            Some(LastInput::NotReported) => " (not reported): FAILED",
            Some(_) if d.seen.len() == 1 => " (the only survivor): ok",
            Some(_) => "; the survivors agree: ok",
            None => "; the survivors disagree: FAILED",
        };
        writeln!(f, "  its last input frame  {}{verdict}", seen.join(", "))?;
        let from = match d.agreed {
            Some(LastInput::Frame(l)) => format!("from frame {}", l + 1),
            Some(LastInput::NoInput) => "from frame 0".to_string(),
            _ => "afterwards".to_string(),
        };
        match d.agreed {
            _ if back => writeln!(
                f,
                "  {from:<20}  its fighter has the disconnected (default) input, the departure \
                 policy: it stands idle until it is back"
            )?,
            Some(LastInput::Frame(l)) if l + 1 >= self.frames => writeln!(
                f,
                "  {:<20}  its input is real through the match's last frame; player {p} forfeits",
                "to the end"
            )?,
            _ => writeln!(
                f,
                "  {from:<20}  its fighter has the disconnected (default) input: it stands \
                 idle; player {p} forfeits"
            )?,
        }
        let theirs = if survivors.len() == 1 { "the survivor's" } else { "the survivors'" };
        if d.left_after.is_some() {
            match d.leaver_disagreement {
                None => writeln!(
                    f,
                    "  its own frames        its {} confirmed frames match {theirs}: ok",
                    d.leaver_compared
                )?,
                Some(x) => writeln!(
                    f,
                    "  its own frames        its confirmed frame {x} differs from {theirs}: FAILED"
                )?,
            }
        }
        let (who, how) = match survivors.as_slice() {
            [one] => (format!("player {one}"), "played on alone"),
            _ => ("the others".to_string(), "played on"),
        };
        let how = if back { format!("{how} while it was away") } else { how.to_string() };
        let all = if self.compared_frames == self.frames {
            format!("and confirmed all {} frames: ok", self.frames)
        } else {
            format!("but confirmed only {} of {} frames: FAILED", self.compared_frames, self.frames)
        };
        writeln!(f, "  {who:<20}  {how} {all}")
    }

    /// The return section of a player who left and came back (after its departure's).
    fn write_rejoin(
        &self,
        f: &mut fmt::Formatter<'_>,
        d: &DepartureSummary,
        r: &RejoinSummary,
    ) -> fmt::Result {
        let p = r.player;
        let asked = self.options.rejoin.filter(|plan| plan.player == p).map(|plan| plan.back);
        let asked = asked.map_or_else(String::new, |b| format!(" (asked for at frame {b})"));
        let seen: Vec<String> = r
            .seen
            .iter()
            .map(|(s, at)| match at {
                Some(at) => format!("peer {s}: {at}"),
                None => format!("peer {s}: not reported"),
            })
            .collect();
        let Some(back) = r.agreed else {
            return writeln!(
                f,
                "Rejoin     player {p} came back{asked}; the peers disagree on the frame: {}: \
                 FAILED",
                seen.join(", ")
            );
        };
        writeln!(
            f,
            "Rejoin     player {p} came back into its own slot at frame {back}{asked}; every \
             peer agrees ({}): ok",
            seen.join(", ")
        )?;
        let gone = match d.agreed {
            Some(LastInput::Frame(l)) => l + 1,
            _ => 0,
        };
        writeln!(
            f,
            "  {:<20}  frames {gone} to {} ({} frames): its fighter stood idle",
            "away",
            back.saturating_sub(1),
            back.saturating_sub(gone)
        )?;
        if r.state_bytes > 0 {
            writeln!(
                f,
                "  {:<20}  it received the members' state before frame {back} ({} bytes), \
                 checked and loaded it",
                "the state", r.state_bytes
            )?;
        }
        if back >= self.frames {
            return writeln!(
                f,
                "  {:<20}  after the match's last frame: nothing of the match left to play: \
                 FAILED (give BACK well before --frames)",
                format!("from frame {back}")
            );
        }
        writeln!(
            f,
            "  {:<20}  its input is its own again; it is in the match to the end and does not \
             forfeit",
            format!("from frame {back}")
        )?;
        let whose = format!("peer {}'s", self.replay_peer);
        match r.disagreement {
            None if r.compared == r.expected => writeln!(
                f,
                "  {:<20}  its {} confirmed frames match {whose}: ok",
                "its frames from F", r.compared
            )?,
            None => writeln!(
                f,
                "  {:<20}  only {} of its {} frames confirmed: FAILED",
                "its frames from F", r.compared, r.expected
            )?,
            Some(x) => writeln!(
                f,
                "  {:<20}  its confirmed frame {x} differs from {whose}: FAILED",
                "its frames from F"
            )?,
        }
        match r.burst_difference {
            None => writeln!(
                f,
                "  {:<20}  its {} confirmed bursts are the replay's, each once: ok",
                "its cues from F", r.bursts
            ),
            Some(k) => writeln!(
                f,
                "  {:<20}  its confirmed bursts differ from the replay's at frame {}: FAILED",
                "its cues from F", k.frame
            ),
        }
    }

    /// The match line: the match decided last (winner and score) or the one in play.
    fn write_match(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let score = || {
            let wins: Vec<String> =
                self.fighters.iter().map(|ft| ft.rounds_won.to_string()).collect();
            wins.join("-")
        };
        let best = super::BEST_OF;
        let matches = |n: u32| if n == 1 { "1 match".to_string() } else { format!("{n} matches") };
        let decided = match (self.matches, self.last_match_winner) {
            (0, _) => "no match decided yet".to_string(),
            (n, Some(p)) => format!("{} decided, the last won by player {p}", matches(n)),
            (n, None) => format!("{} decided, the last drawn", matches(n)),
        };
        match self.match_state {
            super::MatchState::MatchOver { winner: Some(p), .. } => writeln!(
                f,
                "Match (best of {best}): player {p} wins the match {} ({decided})",
                score()
            ),
            super::MatchState::MatchOver { winner: None, .. } => {
                writeln!(f, "Match (best of {best}): drawn {} ({decided})", score())
            }
            super::MatchState::Fighting { round, .. } => writeln!(
                f,
                "Match (best of {best}): in play after {} frames, round {round}{}, rounds won {} \
                 ({decided})",
                self.frames,
                if round > best { " (a tie-break)" } else { "" },
                score()
            ),
            super::MatchState::RoundOver { .. } => writeln!(
                f,
                "Match (best of {best}): in play after {} frames, between rounds, rounds won \
                 {} ({decided})",
                self.frames,
                score()
            ),
        }
    }

    /// The result line: the winner (a player who left and did not come back forfeits) or a
    /// draw.
    fn write_result(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let left = self.forfeits();
        let rounds = |p: usize| self.fighters.get(p).map_or(0, |ft| ft.rounds_won);
        if self.options.peers == 2
            && let [gone] = left.as_slice()
        {
            return match self.winner {
                Some(p) => writeln!(
                    f,
                    "Winner: player {p} by forfeit: player {gone} left the match (rounds won: \
                     P{p} {}, P{gone} {})",
                    rounds(p),
                    rounds(*gone)
                ),
                None => writeln!(f, "Result: no winner (both players left)"),
            };
        }
        let forfeits = match left.as_slice() {
            [] => String::new(),
            [p] => format!("; player {p} left the match and forfeits"),
            many => {
                let names: Vec<String> = many.iter().map(|p| format!("player {p}")).collect();
                format!("; {} left the match and forfeit", names.join(" and "))
            }
        };
        match self.winner {
            Some(p) => {
                let won = rounds(p);
                let best_other = self
                    .fighters
                    .iter()
                    .filter(|ft| ft.player != p && !left.contains(&ft.player))
                    .map(|ft| ft.rounds_won)
                    .max()
                    .unwrap_or(0);
                if won > best_other {
                    writeln!(
                        f,
                        "Winner: player {p} ({} to {best_other}{forfeits})",
                        plural(won, "round")
                    )
                } else {
                    writeln!(
                        f,
                        "Winner: player {p} ({} each; ahead on health in the last \
                         round{forfeits})",
                        plural(won, "round")
                    )
                }
            }
            None => writeln!(f, "Result: a draw{forfeits}"),
        }
    }
}
