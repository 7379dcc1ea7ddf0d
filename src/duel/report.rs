//! What a match produced: per-peer rollback and cue counters, checksum agreement, the
//! re-verified replay, the fighters' final state, and a printable [`MatchReport`].

use super::ids::ids;
use super::play::{MatchError, MatchOptions, Transport};
use super::{Duel, MAX_FIGHTERS, Stats, systems};
use crate::cue::{Cue, CueDirector, CueKind, Presenter, RemoveReason};
use crate::id::TagId;
use crate::num::{Frame, Fx};
use crate::replay::Replay;
use crate::session::{Runner, RunnerStats};
use crate::world::World;
use core::fmt;
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
            by_tag.entry(content.tags().name(*t).to_string()).or_default().0 += n;
        }
        for (t, n) in &counter.confirmed_persistent {
            by_tag.entry(content.tags().name(*t).to_string()).or_default().1 += n;
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
}

impl PeerSummary {
    /// Summarises a peer's runner (which must record, see [`Runner::record`], for checksums)
    /// and the presenter its cue director fed.
    pub fn of(player: usize, runner: &Runner<Duel>, counter: &CueCounter) -> PeerSummary {
        let cues = runner.director.as_ref().map(|d| CueCounts::of(d, counter)).unwrap_or_default();
        let checksums = runner
            .recorder()
            .map(|r| r.replay().frames.iter().map(|f| f.checksum).collect())
            .unwrap_or_default();
        PeerSummary { player, stats: runner.stats(), cues, checksums }
    }
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
        s.tags = world.explicit_tags(e).iter().map(|t| c.tags().name(t).to_string()).collect();
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
    /// What each peer reported.
    pub peers: Vec<PeerSummary>,
    /// Frames whose confirmed checksums were compared across peers.
    pub compared_frames: Frame,
    /// The first confirmed frame whose checksum differs between peers, if any.
    pub first_disagreement: Option<Frame>,
    /// Frames of peer 0's replay re-simulated headless by [`Replay::verify`].
    pub verified_frames: Frame,
    /// The first frame whose re-simulated checksum differs from the recorded one, if any.
    pub replay_divergence: Option<Frame>,
    /// The world checksum after the last frame (re-simulated).
    pub final_checksum: u64,
    /// Rounds decided (won or drawn).
    pub rounds: u32,
    /// Rounds drawn.
    pub draws: u32,
    /// What happened (confirmed timeline).
    pub stats: Stats,
    /// Each fighter's final state.
    pub fighters: Vec<FighterSummary>,
    /// The winner ([`super::winner`]), `None` for a draw.
    pub winner: Option<usize>,
}

impl MatchReport {
    /// Builds a report from the peers' summaries and peer 0's replay: compares the peers'
    /// confirmed checksums, re-verifies the replay (truncated to the match's frames) on a fresh
    /// world with [`Replay::verify`], and reads the fighters' final state from it.
    pub fn build(
        options: MatchOptions,
        transport: Transport,
        peers: Vec<PeerSummary>,
        replay: &Replay,
    ) -> Result<MatchReport, MatchError> {
        let frames = options.frames;
        let compared =
            peers.iter().map(|p| p.checksums.len()).min().unwrap_or(0).min(frames as usize);
        let first_disagreement = (0..compared)
            .find(|&f| peers.iter().any(|p| p.checksums[f] != peers[0].checksums[f]))
            .map(|f| f as Frame);
        let mut replay = replay.clone();
        replay.frames.truncate(frames as usize);
        replay.keyframes.retain(|(f, _)| *f <= frames);
        let mut world = super::try_new_world(options.seed, options.peers)?;
        let verification = replay.verify(&mut world)?;
        let g = *world.global();
        let players = world.players().min(MAX_FIGHTERS);
        Ok(MatchReport {
            options,
            transport,
            frames,
            compared_frames: compared as Frame,
            first_disagreement,
            verified_frames: verification.frames,
            replay_divergence: verification.first_divergence,
            final_checksum: world.checksum(),
            rounds: g.wins.iter().sum::<u32>() + g.draws,
            draws: g.draws,
            stats: g.stats,
            fighters: (0..players).map(|p| FighterSummary::of(&world, p)).collect(),
            winner: super::winner(&world),
            peers,
        })
    }

    /// Whether every peer confirmed every frame and all their checksums agree.
    pub fn checksums_agree(&self) -> bool {
        self.first_disagreement.is_none() && self.compared_frames == self.frames
    }

    /// Whether the replay re-simulated to the same checksums for every frame of the match.
    pub fn replay_verified(&self) -> bool {
        self.replay_divergence.is_none() && self.verified_frames == self.frames
    }

    /// Whether every peer's cue counters balance ([`CueCounts::balanced`]).
    pub fn cues_balanced(&self) -> bool {
        self.peers.iter().all(|p| p.cues.balanced())
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

    /// Whether everything checked out: checksums agree, the replay verifies, no desync was
    /// reported and the cue counters balance.
    pub fn is_ok(&self) -> bool {
        self.checksums_agree()
            && self.replay_verified()
            && self.cues_balanced()
            && self.peers.iter().all(|p| p.stats.desyncs == 0)
    }
}

/// A fixed-point value for people: integers as integers, otherwise one decimal.
fn show(v: Fx) -> String {
    if v.frac() == Fx::ZERO {
        format!("{}", v.to_num::<i64>())
    } else {
        format!("{:.1}", v.to_num::<f64>())
    }
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
        let o = &self.options;
        let n = self.peers.len();
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
        writeln!(f)?;

        // Rollback.
        let mut cols: Vec<String> = (0..n).map(|i| format!("peer {i}")).collect();
        cols.push("all".into());
        let per = |g: &dyn Fn(&PeerSummary) -> String, all: String| {
            let mut v: Vec<String> = self.peers.iter().map(g).collect();
            v.push(all);
            v
        };
        let rows = vec![
            (
                "frames advanced",
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
                "stalls",
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
        writeln!(f)?;

        // Determinism.
        match self.first_disagreement {
            None if self.checksums_agree() => writeln!(
                f,
                "Checksums  {} confirmed frames identical on all {n} peers: ok",
                self.compared_frames
            )?,
            None => writeln!(
                f,
                "Checksums  only {} of {} frames confirmed on every peer: FAILED",
                self.compared_frames, self.frames
            )?,
            Some(d) => writeln!(f, "Checksums  peers disagree from frame {d}: FAILED")?,
        }
        match self.replay_divergence {
            None => writeln!(
                f,
                "Replay     peer 0's confirmed inputs re-simulated headless, {} of {} frame \
                 checksums match: {} (final {:016x})",
                self.verified_frames,
                self.frames,
                mark(self.replay_verified()),
                self.final_checksum
            )?,
            Some(d) => writeln!(f, "Replay     re-simulation diverges at frame {d}: FAILED")?,
        }
        writeln!(f)?;

        // Cues.
        let cols: Vec<String> = (0..n).map(|i| format!("peer {i}")).collect();
        let c = |g: fn(&CueCounts) -> u64| -> Vec<String> {
            self.peers.iter().map(|p| g(&p.cues).to_string()).collect()
        };
        let rows = vec![
            ("bursts played", c(|c| c.played)),
            ("de-duplicated", c(|c| c.deduplicated)),
            ("cancelled", c(|c| c.cancelled)),
            ("confirmed", c(|c| c.bursts_confirmed)),
            ("pending", c(|c| c.pending)),
            ("persistent started", c(|c| c.on_active)),
            ("mispredicted", c(|c| c.mispredicted)),
            (
                "played = confirmed + cancelled + pending",
                self.peers.iter().map(|p| mark(p.cues.balanced()).to_string()).collect(),
            ),
        ];
        table(f, "Cues", &cols, &rows)?;
        writeln!(f)?;
        if let Some(p0) = self.peers.first() {
            let rows: Vec<(&str, Vec<String>)> = p0
                .cues
                .by_tag
                .iter()
                .map(|(t, (b, p))| {
                    let show = |v: u64| if v == 0 { "-".to_string() } else { v.to_string() };
                    (t.as_str(), vec![show(*b), show(*p)])
                })
                .collect();
            table(
                f,
                "Confirmed cues (peer 0)",
                &["bursts".to_string(), "persistent".to_string()],
                &rows,
            )?;
            writeln!(f)?;
        }

        // Events.
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
        ];
        for (k, v) in events {
            writeln!(f, "  {k:<10} {v}")?;
        }
        writeln!(f)?;

        // Fighters.
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
            writeln!(
                f,
                "  P{}  {}  | rounds won {}, damage taken {}",
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
        writeln!(f)?;
        match self.winner {
            Some(p) => {
                let won = self.fighters.get(p).map_or(0, |ft| ft.rounds_won);
                let best_other = self
                    .fighters
                    .iter()
                    .filter(|ft| ft.player != p)
                    .map(|ft| ft.rounds_won)
                    .max()
                    .unwrap_or(0);
                if won > best_other {
                    writeln!(f, "Winner: player {p} ({won} rounds to {best_other})")?;
                } else {
                    writeln!(
                        f,
                        "Winner: player {p} ({won} rounds each; ahead on health in the last round)"
                    )?;
                }
            }
            None => writeln!(f, "Result: a draw")?,
        }
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
