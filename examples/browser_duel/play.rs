//! The matches a page plays: online over matchbox's browser WebRTC (the crate's
//! [`Connecting`] → [`MatchboxSession`] path, behind its guard, driven by a [`DuelPeer`]), or
//! locally against the duel's bot over the in-memory emulated network ([`LocalMatch`]).
//!
//! Online peers also tell each other, on the reliable channel, the checksum of their confirmed
//! world every [`SUM_EVERY`] frames, so the page shows whether both sides agree; with
//! `frames=N` they end as the native `p2p_matchbox` peer does, by exchanging the checksum
//! after frame `N − 1` (its `RBADONE` message), so a page and a native peer can share a room.
//! Everything a peer says is untrusted: a message that does not parse exactly is ignored.

use crate::params::Params;
use rollback_abilities::World;
use rollback_abilities::num::Frame;
use rollback_abilities::present::{CueDirector, Presenter};
use rollback_abilities::session::{
    LocalMatch, MatchConfig, MatchboxSession, NetConditions, PeerId, SessionEvent,
};
use rollback_abilities_kit::duel::{self, Duel, DuelPeer, Input, MatchOptions};
use std::collections::BTreeMap;

/// Confirmed checksums are compared every this many frames: after frames 59, 119, 179…
pub const SUM_EVERY: Frame = 60;
/// A checksum report: `RBASUM`, the frame (u32) and the checksum after it (u64), little-endian.
const SUM: &[u8] = b"RBASUM";
/// The end of a match (`p2p_matchbox`'s message): `RBADONE`, the last frame (u32) and the
/// checksum after it (u64), little-endian.
const DONE: &[u8] = b"RBADONE";
/// How long a finished peer keeps answering, so the others get its last packets (ms).
const LINGER_MS: f64 = 500.0;
/// The most checksums a page keeps from the others (a peer cannot grow its memory).
const MAX_REMOTE_SUMS: usize = 4096;

/// A frame and a checksum after a message's prefix, exactly 12 bytes.
fn parse_sum(bytes: &[u8], prefix: &[u8]) -> Option<(Frame, u64)> {
    let rest = bytes.strip_prefix(prefix)?;
    if rest.len() != 12 {
        return None;
    }
    let frame = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
    let sum = u64::from_le_bytes(rest.get(4..12)?.try_into().ok()?);
    Some((frame, sum))
}

/// A message: prefix, frame, checksum.
fn sum_message(prefix: &[u8], frame: Frame, sum: u64) -> Vec<u8> {
    let mut m = prefix.to_vec();
    m.extend_from_slice(&frame.to_le_bytes());
    m.extend_from_slice(&sum.to_le_bytes());
    m
}

/// The duel's match options for a page's parameters (two to four peers, its seed and frames).
pub fn match_options(params: &Params) -> MatchOptions {
    MatchOptions {
        peers: params.players,
        frames: params.match_frames(),
        seed: params.seed,
        input_delay: params.input_delay,
        ..MatchOptions::default()
    }
}

/// Checksum agreement between this peer and the others.
#[derive(Clone, Debug, Default)]
pub struct Agreement {
    /// This peer's confirmed checksums, every [`SUM_EVERY`] frames.
    pub mine: BTreeMap<Frame, u64>,
    /// The others' reports not compared yet: (player, frame) → checksum.
    pending: BTreeMap<(usize, Frame), u64>,
    /// Comparisons that agreed.
    pub agreed: u64,
    /// The first comparison that did not: (frame, player, ours, theirs).
    pub first_mismatch: Option<(Frame, usize, u64, u64)>,
    /// Comparisons that did not.
    pub mismatches: u64,
    /// The last frame compared.
    pub last_frame: Option<Frame>,
}

impl Agreement {
    /// Records this peer's checksum after `frame` and compares what waits for it.
    fn mine(&mut self, frame: Frame, sum: u64) {
        self.mine.insert(frame, sum);
        let waiting: Vec<(usize, Frame)> =
            self.pending.keys().filter(|(_, f)| *f == frame).copied().collect();
        for key in waiting {
            if let Some(theirs) = self.pending.remove(&key) {
                self.compare(frame, key.0, sum, theirs);
            }
        }
    }

    /// Records another player's checksum after `frame`.
    fn theirs(&mut self, player: usize, frame: Frame, sum: u64) {
        match self.mine.get(&frame) {
            Some(ours) => self.compare(frame, player, *ours, sum),
            None if self.pending.len() < MAX_REMOTE_SUMS => {
                self.pending.insert((player, frame), sum);
            }
            None => {}
        }
    }

    fn compare(&mut self, frame: Frame, player: usize, ours: u64, theirs: u64) {
        self.last_frame = Some(self.last_frame.map_or(frame, |f| f.max(frame)));
        if ours == theirs {
            self.agreed += 1;
        } else {
            self.mismatches += 1;
            if self.first_mismatch.is_none() {
                self.first_mismatch = Some((frame, player, ours, theirs));
            }
        }
    }
}

/// What one tick of a match reports back to the page's loop.
#[derive(Clone, Debug, Default)]
pub struct TickReport {
    /// GGRS recommends waiting this many frames (time synchronisation).
    pub wait_frames: u32,
    /// Things to tell the player.
    pub notices: Vec<String>,
}

/// An online match: the synchronised matchbox session and this page's duel peer.
pub struct Online {
    /// The matchbox session (GGRS session, guard, roster, socket).
    pub m: MatchboxSession<Duel>,
    /// The duel peer: runner (world, snapshots, recorder, cue director) and bot view.
    pub peer: DuelPeer,
    /// Checksums compared with the others.
    pub agreement: Agreement,
    /// Frames whose checksum this peer has looked at (every confirmed frame before it).
    checked_through: Frame,
    /// The checksum after frame `frames − 1`, once confirmed (with `frames=`).
    pub final_checksum: Option<u64>,
    /// The others' checksums after the last frame (their `RBADONE`).
    done_from: BTreeMap<PeerId, (Frame, u64)>,
    /// When every peer had finished (page clock, ms).
    all_done_at: Option<f64>,
    /// The match is over: no more ticks.
    pub finished: bool,
    /// Round-trip time to the (first) other peer, ms.
    pub ping_ms: Option<u64>,
    /// Frames this peer is ahead of the other (GGRS's estimate; negative: behind).
    pub frame_advantage: Option<i32>,
    /// Players who left.
    pub left: Vec<usize>,
    ticks: u64,
}

impl Online {
    /// The match, from a synchronised session.
    pub fn new(m: MatchboxSession<Duel>, params: &Params) -> Result<Online, String> {
        let handle = m.local_handle();
        let mut peer = DuelPeer::new(match_options(params), handle).map_err(|e| e.to_string())?;
        peer.attach_guard(m.guard.clone());
        Ok(Online {
            m,
            peer,
            agreement: Agreement::default(),
            checked_through: 0,
            final_checksum: None,
            done_from: BTreeMap::new(),
            all_done_at: None,
            finished: false,
            ping_ms: None,
            frame_advantage: None,
            left: Vec::new(),
            ticks: 0,
        })
    }

    /// The world this page shows (its own, predicted while remote inputs are late).
    pub fn world(&self) -> &World<Duel> {
        self.peer.runner().world()
    }

    /// One tick: the local input (`None`: the bot's), advance, checksums, messages.
    pub fn tick(
        &mut self,
        input: Option<Input>,
        presenter: &mut dyn Presenter,
        frames: Option<Frame>,
        now: f64,
    ) -> Result<TickReport, String> {
        let mut report = TickReport::default();
        if self.finished {
            return Ok(report);
        }
        // After the last frame of a `frames=` match everyone presses nothing, as
        // `p2p_matchbox` does.
        let input = match frames {
            Some(n) if self.peer.input_frame() >= n => Some(Input::default()),
            _ => input,
        };
        self.peer
            .advance_with(&mut self.m.session, input, Some(presenter))
            .map_err(|e| e.to_string())?;
        self.ticks += 1;
        for ev in self.peer.drain_events() {
            match ev {
                SessionEvent::WaitRecommendation(n) => report.wait_frames += n,
                SessionEvent::Left { players, last_frame, .. } => {
                    let last = last_frame.map_or_else(
                        || "before its first input".into(),
                        |f| format!("after frame {f}"),
                    );
                    report.notices.push(format!(
                        "player {players:?} left the match ({last}); their fighter stands idle"
                    ));
                    self.left.extend(players);
                }
                SessionEvent::Desync(f) => {
                    report.notices.push(format!("DESYNC: a peer's checksum of frame {f} differs"))
                }
                SessionEvent::PeerFault { fault, .. } => {
                    report.notices.push(format!("refused a message from a peer: {fault}"))
                }
                _ => {}
            }
        }
        self.record_checksums(frames)?;
        self.receive()?;
        if self.ticks.is_multiple_of(15) {
            self.network_stats();
        }
        let remotes = self.m.roster.len().saturating_sub(1);
        if self.final_checksum.is_some()
            && self.done_from.len() >= remotes
            && self.all_done_at.is_none()
        {
            self.all_done_at = Some(now);
        }
        if self.all_done_at.is_some_and(|t| now - t >= LINGER_MS) {
            self.finished = true;
        }
        if frames.is_some() && self.final_checksum.is_none() && !self.left.is_empty() {
            return Err("a peer left before the end of the match".into());
        }
        Ok(report)
    }

    /// Looks at newly confirmed frames: reports the checksum every [`SUM_EVERY`] frames and,
    /// with `frames=`, the final one.
    fn record_checksums(&mut self, frames: Option<Frame>) -> Result<(), String> {
        let confirmed = self.peer.confirmed();
        let Some(rec) = self.peer.runner().recorder() else { return Ok(()) };
        let mut out = Vec::new();
        while self.checked_through < confirmed {
            let f = self.checked_through;
            let sum = rec.replay().frame(f).map_or(0, |r| r.checksum);
            if (f + 1).is_multiple_of(SUM_EVERY) {
                self.agreement.mine(f, sum);
                out.push(sum_message(SUM, f, sum));
            }
            if frames.is_some_and(|n| f + 1 == n) && self.final_checksum.is_none() {
                self.final_checksum = Some(sum);
                out.push(sum_message(DONE, f, sum));
            }
            self.checked_through += 1;
        }
        for m in out {
            self.m.broadcast_reliable(&m).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Takes in the others' reliable messages.
    fn receive(&mut self) -> Result<(), String> {
        for (from, bytes) in self.m.receive_reliable().map_err(|e| e.to_string())? {
            let Some(player) = self.m.roster.handle_of(from) else { continue };
            if let Some((f, sum)) = parse_sum(&bytes, SUM) {
                self.agreement.theirs(player, f, sum);
            } else if let Some((f, sum)) = parse_sum(&bytes, DONE) {
                self.done_from.insert(from, (f, sum));
                self.agreement.theirs(player, f, sum);
            }
        }
        Ok(())
    }

    fn network_stats(&mut self) {
        let me = self.m.local_handle();
        let Some(other) = (0..self.m.roster.len()).find(|h| *h != me) else { return };
        if let Ok(s) = self.m.session.network_stats(other) {
            self.ping_ms = Some(u64::try_from(s.ping).unwrap_or(u64::MAX));
            self.frame_advantage = Some(-s.local_frames_behind);
        }
    }
}

/// A presenter that shows nothing (the local bot's peer).
#[derive(Debug, Default)]
pub struct Silent;

impl Presenter for Silent {}

/// A local match against the duel's bot: two GGRS peers in this page over the emulated network
/// (80 ms ± 20 ms, so predictions, rollbacks and the odd misprediction happen as online), this page's peer 0.
pub struct Local {
    /// The two peers.
    pub m: LocalMatch<Duel>,
    /// Checksums of the two peers compared every [`SUM_EVERY`] frames.
    pub agreement: Agreement,
    checked_through: Frame,
    silent: Silent,
    seed: u64,
    frames: Frame,
    /// The checksum after frame `frames − 1` (with `frames=`).
    pub final_checksum: Option<u64>,
}

impl Local {
    /// Builds and synchronises the two peers.
    pub fn new(params: &Params) -> Result<Local, String> {
        let config = MatchConfig {
            players: 2,
            input_delay: params.input_delay,
            conditions: NetConditions { latency_ms: 80, jitter_ms: 20, ..NetConditions::PERFECT },
            net_seed: params.seed,
            ..MatchConfig::default()
        };
        let mut worlds = Vec::new();
        for _ in 0..2 {
            worlds.push(duel::try_new_world(params.seed, 2).map_err(|e| e.to_string())?);
        }
        let mut worlds = worlds.into_iter();
        let mut m = LocalMatch::new(config, |_| match worlds.next() {
            Some(w) => w,
            None => duel::new_world(params.seed, 2),
        })
        .map_err(|e| e.to_string())?;
        for p in m.peers_mut() {
            p.runner.record(0);
            p.runner.director = Some(CueDirector::new());
        }
        m.synchronize().map_err(|e| e.to_string())?;
        Ok(Local {
            m,
            agreement: Agreement::default(),
            checked_through: 0,
            silent: Silent,
            seed: params.seed,
            frames: params.match_frames(),
            final_checksum: None,
        })
    }

    /// This page's world (peer 0's).
    pub fn world(&self) -> Option<&World<Duel>> {
        self.m.peers().first().map(|p| p.runner.world())
    }

    /// One tick: this page's input for player 0 (`None`: the bot's), the bot for player 1.
    pub fn tick(
        &mut self,
        input: Option<Input>,
        presenter: &mut dyn Presenter,
    ) -> Result<(), String> {
        let (seed, frames) = (self.seed, self.frames);
        let mut presenters: [&mut dyn Presenter; 2] = [presenter, &mut self.silent];
        self.m
            .tick(
                |p, f, w| match input {
                    _ if f >= frames => Input::default(),
                    Some(i) if p == 0 => i,
                    _ => duel::bot_input(w, p, f, seed),
                },
                &mut presenters,
                |_| {},
            )
            .map_err(|e| e.to_string())?;
        // Compare the two peers' confirmed checksums.
        let peers = self.m.peers();
        let (Some(a), Some(b)) = (peers.first(), peers.get(1)) else { return Ok(()) };
        let (Some(ra), Some(rb)) = (a.runner.recorder(), b.runner.recorder()) else {
            return Ok(());
        };
        let both = ra.next_frame().min(rb.next_frame());
        while self.checked_through < both {
            let f = self.checked_through;
            let sum = |r: &rollback_abilities::replay::Recorder<Duel>| {
                r.replay().frame(f).map_or(0, |x| x.checksum)
            };
            if (f + 1).is_multiple_of(SUM_EVERY) {
                self.agreement.mine(f, sum(ra));
                self.agreement.theirs(1, f, sum(rb));
            }
            if f + 1 == frames {
                self.final_checksum = Some(sum(ra));
            }
            self.checked_through += 1;
        }
        Ok(())
    }
}
