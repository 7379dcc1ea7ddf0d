//! [`NetPeer`]: one peer of a duel as a [`MatchPeer`] over any [`MatchTransport`] (the
//! example's `--udp` mode runs one per OS process over a
//! [`UdpTransport`](rollback_abilities::session::UdpTransport)), able to leave, to take a
//! player back and to come back itself ([`MatchOptions::rejoin`]).

use super::play::with_counter;
use super::play::{
    BotView, MatchError, MatchOptions, checksums_after, finished_replay, keyframe_interval, lefts,
    rejoineds,
};
use super::report::{Comeback, CueCounter, PeerSummary};
use super::{Duel, Input, try_new_world};
use rollback_abilities::num::Frame;
use rollback_abilities::present::{CueDirector, Presenter};
use rollback_abilities::replay::Replay;
use rollback_abilities::session::{Batch, MatchKeys, MatchPeer, MatchTransport};

/// One peer of a duel as a [`MatchPeer`] over a [`MatchTransport`]: its bot, the
/// [`CueCounter`] its cue director feeds, the departures and returns it saw. Call
/// [`NetPeer::tick`] once per tick until [`NetPeer::is_finished`], leaving when
/// [`NetPeer::should_leave`] says so.
///
/// With [`MatchOptions::rejoin`], the rejoiner's peer leaves after `leave` as with
/// [`MatchOptions::leave`]; the other peers play on until their worlds reach `back` and then
/// [wait](MatchPeer::wait) there ([`NetPeer::waits_for_rejoiner`]) until the rejoiner comes back:
/// a new program, [`NetPeer::rejoin`], from the same address or a new one. The members agree on
/// the frame F it comes back at (the frame after the last one each gave an input for: with
/// every member waiting at `back`, F is `back` plus the input delay), send it their state, and
/// everyone plays on from F. The returned player's runner records no replay here (the replay
/// peer's covers the whole match); its bot reads the inputs it confirmed since F
/// ([`BotView::resume`]).
#[derive(Debug)]
pub struct NetPeer<T: MatchTransport> {
    peer: MatchPeer<Duel, T>,
    counter: CueCounter,
    view: BotView,
    options: MatchOptions,
    /// The departures this peer saw (`SessionEvent::Left`).
    departures: Vec<(Vec<usize>, Option<Frame>)>,
    /// The returns this peer saw (`SessionEvent::Rejoined`).
    rejoins: Vec<(Vec<usize>, Frame)>,
    /// Events of the peer's log already read ([`MatchPeer::new_events`]).
    read: u64,
    /// Set when this peer left: the frame its world had simulated.
    left_after: Option<Frame>,
    /// Whether this peer is a program coming back into the match.
    comeback: bool,
    /// The frame F it came back at.
    back_at: Option<Frame>,
    /// Bytes of the members' state it received (the most seen).
    state_bytes: usize,
    /// Whether this peer waited for the rejoiner at `back`.
    waited: bool,
}

impl<T: MatchTransport> NetPeer<T> {
    /// The peer of `player` at the start of the match: `addrs[i]` is slot `i`'s address (its own
    /// at `player`), `keys` its match identity and the others' public ones; a silent player
    /// leaves the match after `departure_ticks` ticks without a frame.
    pub fn start(
        options: MatchOptions,
        player: usize,
        transport: T,
        addrs: Vec<T::Addr>,
        keys: MatchKeys<T::Addr>,
        departure_ticks: u32,
    ) -> Result<NetPeer<T>, MatchError> {
        NetPeer::build(options, player, transport, addrs, keys, departure_ticks, false)
    }

    /// The peer of `player` coming back into the running match (a restarted program: a fresh
    /// world, the slot's match identity kept in `keys`, the slot addresses as at the start; its
    /// own transport may be at a new address).
    pub fn rejoin(
        options: MatchOptions,
        player: usize,
        transport: T,
        addrs: Vec<T::Addr>,
        keys: MatchKeys<T::Addr>,
        departure_ticks: u32,
    ) -> Result<NetPeer<T>, MatchError> {
        NetPeer::build(options, player, transport, addrs, keys, departure_ticks, true)
    }

    fn build(
        options: MatchOptions,
        player: usize,
        transport: T,
        addrs: Vec<T::Addr>,
        keys: MatchKeys<T::Addr>,
        departure_ticks: u32,
        comeback: bool,
    ) -> Result<NetPeer<T>, MatchError> {
        options.validate()?;
        if player >= options.peers || addrs.len() != options.peers {
            return Err(MatchError::InvalidOptions(format!(
                "player {player} of a {}-fighter match with {} addresses",
                options.peers,
                addrs.len()
            )));
        }
        if comeback && options.rejoiner() != Some(player) {
            return Err(MatchError::InvalidOptions(format!(
                "player {player} comes back into the match, but the match's --rejoin is {:?}",
                options.rejoin.map(|r| r.to_string())
            )));
        }
        let world = try_new_world(options.seed, options.peers)?;
        let setup = rollback_abilities::session::SessionConfig {
            departure_ticks,
            ..options.session_config()
        };
        let peer = if comeback {
            MatchPeer::rejoin(world, transport, player, addrs, keys, setup)?
        } else {
            MatchPeer::start(world, transport, player, addrs, keys, setup)?
        };
        let view = BotView::new(&options)?;
        Ok(NetPeer::around(options, peer, view))
    }

    /// The duel peer around `peer` (one [rejoining](MatchPeer::is_rejoining) is a program
    /// coming back, whose runner records nothing), its bot reading `view`.
    fn around(options: MatchOptions, mut peer: MatchPeer<Duel, T>, view: BotView) -> NetPeer<T> {
        let comeback = peer.is_rejoining();
        if !comeback {
            peer.runner.record(keyframe_interval(&options, peer.handle));
        }
        peer.runner.director = Some(CueDirector::new());
        NetPeer {
            peer,
            counter: CueCounter::until(options.frames),
            view,
            options,
            departures: Vec::new(),
            rejoins: Vec::new(),
            read: 0,
            left_after: None,
            comeback,
            back_at: None,
            state_bytes: 0,
            waited: false,
        }
    }

    /// The peer of a [`MatchPeer`] built elsewhere (over matchbox,
    /// `rollback_abilities::session::matchbox::ConnectingMatch` hands one out): at the start of
    /// the match, or, [rejoining](MatchPeer::is_rejoining), a program coming back into it with
    /// its ticket. `options` describe the match; a rejoin is not planned in them but may come
    /// at any time (any player's program may stop and come back), so the bot keeps the states
    /// a member's frame can move back to.
    pub fn adopt(
        options: MatchOptions,
        peer: MatchPeer<Duel, T>,
    ) -> Result<NetPeer<T>, MatchError> {
        options.validate()?;
        let mut view = BotView::new(&options)?;
        view.keep_past();
        Ok(NetPeer::around(options, peer, view))
    }

    /// The player this peer controls.
    pub fn player(&self) -> usize {
        self.peer.handle
    }

    /// The match peer (its runner, session, guard, transport, events).
    pub fn peer(&self) -> &MatchPeer<Duel, T> {
        &self.peer
    }

    /// Whether this peer holds at `back` for the rejoiner ([`MatchOptions::rejoin`]): it is in
    /// the match, the rejoiner left (this peer saw it go) and is not back, no rejoin is under
    /// way, and this peer's world has reached `back`.
    pub fn waits_for_rejoiner(&self) -> bool {
        let Some(plan) = self.options.rejoin else { return false };
        plan.player != self.player()
            && !self.has_left()
            && self.departures.iter().any(|(players, _)| players.contains(&plan.player))
            && !self.rejoins.iter().any(|(players, _)| players.contains(&plan.player))
            && !self.peer.rejoin_under_way()
            && self.peer.runner.world().next_frame() >= plan.back
    }

    /// Whether this peer has waited for the rejoiner at `back` ([`NetPeer::waits_for_rejoiner`]).
    pub fn has_waited(&self) -> bool {
        self.waited
    }

    /// One tick: the bot's input for the local player and [`MatchPeer::tick`] (or
    /// [`MatchPeer::wait`] while it [waits for the rejoiner](NetPeer::waits_for_rejoiner)), the
    /// cues reconciled into the counter, the departures and returns noted. `skipped`: no frame
    /// advanced.
    pub fn tick(&mut self) -> Result<Batch, MatchError> {
        self.tick_with(None, None)
    }

    /// [`NetPeer::tick`] with the local player's input from elsewhere — `input(frame)`, a
    /// person's or a script's for that frame; `None`: the bot's — and `presenter` fed the same
    /// cues as the counter (after it).
    pub fn tick_with(
        &mut self,
        input: Option<&mut dyn FnMut(Frame) -> Input>,
        presenter: Option<&mut dyn Presenter>,
    ) -> Result<Batch, MatchError> {
        if self.waits_for_rejoiner() {
            self.waited = true;
            let batch = self.peer.wait()?;
            self.note_events()?;
            return Ok(batch);
        }
        if self.comeback {
            if self.back_at.is_some() {
                self.view.catch_up_confirmed(&self.peer.runner);
            }
        } else {
            self.view.catch_up(&self.peer.runner);
        }
        let (view, options, player) = (&mut self.view, &self.options, self.peer.handle);
        let peer = &mut self.peer;
        let batch = with_counter(&mut self.counter, presenter, |presenter| {
            peer.tick(
                |frame, _| match input {
                    Some(input) => input(frame),
                    None => view.decide(options, player, frame),
                },
                Some(presenter),
                |_| {},
            )
        })?;
        if self.peer.is_rejoining() {
            self.state_bytes = self.state_bytes.max(self.peer.rejoin_progress().0);
        }
        self.note_events()?;
        Ok(batch)
    }

    /// Notes the departures and returns among the peer's new events; a program coming back
    /// starts its bot's view from the state it came back with.
    fn note_events(&mut self) -> Result<(), MatchError> {
        let new = self.peer.new_events(&mut self.read);
        for left in lefts(new) {
            if !self.departures.contains(&left) {
                self.departures.push(left);
            }
        }
        for back in rejoineds(new) {
            if !self.rejoins.contains(&back) {
                self.rejoins.push(back);
            }
        }
        let player = self.peer.handle;
        if self.comeback && self.back_at.is_none() && !self.peer.is_rejoining() {
            let f = self.rejoins.iter().find(|(players, _)| players == &[player]).map(|r| r.1);
            if let Some(f) = f {
                self.back_at = Some(f);
                self.view.resume(self.peer.runner.world())?;
            }
        }
        Ok(())
    }

    /// Whether this peer leaves the match now: it is the leaver ([`MatchOptions::leave`]) or
    /// the rejoiner on its first stay ([`MatchOptions::rejoin`]), its world has simulated the
    /// frame it leaves after, it has confirmed a frame (every other peer finished
    /// synchronising) and no rejoin is under way (departures wait between rejoins). Then call
    /// [`NetPeer::quit`].
    pub fn should_leave(&self) -> bool {
        let player = self.player();
        let after = match (self.options.leave, self.options.rejoin) {
            (Some((p, f)), _) if p == player => f,
            (_, Some(r)) if r.player == player && !self.comeback => r.leave,
            _ => return false,
        };
        !self.has_left()
            && self.confirmed() > 0
            && !self.peer.rejoin_under_way()
            && self.peer.runner.world().next_frame() > after
    }

    /// Leaves the match: tells the other peers (they agree on this player's last frame at
    /// once); do not tick this peer any more.
    pub fn quit(&mut self) -> Result<(), MatchError> {
        self.left_after = Some(self.peer.runner.world().next_frame().saturating_sub(1));
        self.peer.leave_match()?;
        Ok(())
    }

    /// Whether this peer left the match.
    pub fn has_left(&self) -> bool {
        self.left_after.is_some()
    }

    /// Whether this peer is a program that came back into the match and is in it again: the
    /// frame F it plays on from.
    pub fn came_back_at(&self) -> Option<Frame> {
        self.back_at
    }

    /// Frames confirmed so far (for a peer that came back, from frame 0 as the match counts
    /// them: F plus those it confirmed since).
    pub fn confirmed(&self) -> Frame {
        if self.comeback {
            return self.peer.runner.confirmed_checksums().last_key_value().map_or(0, |(f, _)| *f);
        }
        self.peer.runner.recorder().map_or(0, |r| r.next_frame())
    }

    /// Whether this peer is done: every frame of the match confirmed, and the departure of the
    /// leaver (unless it was out before this peer came back) and the return of the rejoiner (if
    /// any) seen.
    pub fn is_finished(&self) -> bool {
        let player = self.player();
        if self.confirmed() < self.options.frames || (self.comeback && self.back_at.is_none()) {
            return false;
        }
        // A player who left before this peer came back is out of its session from the start:
        // no departure to see.
        let left = |p: usize| {
            self.departures.iter().any(|(players, _)| players.contains(&p))
                || (self.comeback && self.peer.runner.absent().contains(&p))
        };
        let back = |p: usize| self.rejoins.iter().any(|(players, _)| players.contains(&p));
        self.options.leaver().is_none_or(|p| p == player || left(p))
            && self.options.rejoiner().is_none_or(|p| p == player || back(p))
    }

    /// What this peer reports: over its stay in the match. A peer that came back reports its
    /// second stay ([`PeerSummary::came_back`] set); join it to its first with
    /// [`PeerSummary::and_then`].
    pub fn summary(&self) -> PeerSummary {
        let runner = &self.peer.runner;
        let mut s = PeerSummary::of(self.player(), runner, &self.counter);
        s.bot_late = self.view.late();
        s.departures.clone_from(&self.departures);
        s.rejoins.clone_from(&self.rejoins);
        s.left_after = self.left_after;
        s.came_back = self.back_at.map(|frame| Comeback {
            frame,
            checksums: checksums_after(runner, frame),
            state_bytes: self.state_bytes,
        });
        s
    }

    /// The recorded replay, cut to the match's frames (recording stops; empty for a peer that
    /// came back, which records none).
    pub fn take_replay(&mut self) -> Replay {
        finished_replay(&mut self.peer.runner, self.options.frames)
    }
}
