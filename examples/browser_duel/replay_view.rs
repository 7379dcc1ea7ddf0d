//! The replay viewer: a `.replay` file (from the duel's `--replay`, or saved from this page)
//! re-simulated in the page — play, pause, scrub (a jump seeks from the nearest keyframe:
//! [`Replay::seek`]), and the inspector's view of any fighter at any frame
//! ([`debug_view`]).

use crate::cues::CueFx;
use rollback_abilities::World;
use rollback_abilities::debug::debug_view;
use rollback_abilities::num::Frame;
use rollback_abilities::present::CueDirector;
use rollback_abilities::replay::Replay;
use rollback_abilities_kit::duel::{self, Duel};

/// Frames a forward move steps one by one, presenting their cues, instead of seeking.
const STEP_LIMIT: Frame = 120;

/// A loaded replay and the world re-simulating it.
pub struct Viewer {
    replay: Replay,
    world: World<Duel>,
    director: CueDirector,
    /// Playing (one frame per tick) or paused.
    pub playing: bool,
}

impl Viewer {
    /// Decodes a replay (every check of [`Replay::decode`]) and loads its initial state into a
    /// duel world of its seed and players (content, hooks and layout checked).
    pub fn load(bytes: &[u8]) -> Result<Viewer, String> {
        let replay = Replay::decode(bytes).map_err(|e| e.to_string())?;
        let players = usize::from(replay.header.players);
        if !(2..=duel::MAX_FIGHTERS).contains(&players) {
            return Err(format!(
                "the replay has {players} players; a duel has 2 to {}",
                duel::MAX_FIGHTERS
            ));
        }
        let mut world =
            duel::try_new_world(replay.header.seed, players).map_err(|e| e.to_string())?;
        replay.start(&mut world).map_err(|e| e.to_string())?;
        Ok(Viewer { replay, world, director: CueDirector::new(), playing: false })
    }

    /// The frame after the replay's last (its number of frames: the duel's replays start at
    /// frame 0).
    pub fn frames(&self) -> Frame {
        self.replay.end_frame()
    }

    /// Keyframes in the replay.
    pub fn keyframes(&self) -> usize {
        self.replay.keyframes.len()
    }

    /// The world as it stands (after [`Viewer::frame`]).
    pub fn world(&self) -> &World<Duel> {
        &self.world
    }

    /// The last frame simulated (`None`: the initial state).
    pub fn frame(&self) -> Option<Frame> {
        self.world.next_frame().checked_sub(1)
    }

    /// The checksum the replay recorded after the current frame (0: not recorded).
    pub fn recorded_checksum(&self) -> Option<u64> {
        self.frame().and_then(|f| self.replay.frame(f)).map(|r| r.checksum)
    }

    /// Moves to the state after `frame`: steps forward (presenting cues) when it is a little
    /// ahead, otherwise seeks from the nearest keyframe (forgetting what was shown). Returns the
    /// re-simulated world's checksum after that frame.
    pub fn seek(&mut self, frame: Frame, fx: &mut CueFx) -> Result<u64, String> {
        if !self.replay.frame_numbers().contains(&frame) {
            return Err(format!(
                "frame {frame} is not in the replay (frames {} to {})",
                self.replay.first_frame(),
                self.frames().saturating_sub(1)
            ));
        }
        let target = frame + 1;
        let next = self.world.next_frame();
        if target >= next && target - next <= STEP_LIMIT {
            while self.world.next_frame() < target {
                self.step(fx);
            }
        } else {
            self.replay.seek(&mut self.world, target).map_err(|e| e.to_string())?;
            self.director = CueDirector::new();
            fx.clear();
        }
        Ok(self.world.checksum())
    }

    /// One frame forward (presenting its cues); stops playing at the end.
    pub fn step(&mut self, fx: &mut CueFx) {
        let f = self.world.next_frame();
        if f >= self.frames() {
            self.playing = false;
            return;
        }
        let inputs = self.replay.frame_inputs::<Duel>(f);
        self.world.step(&inputs);
        // Every frame of a replay is confirmed: cues show once, solid.
        self.director.ingest(self.world.output());
        self.director.reconcile(&self.world, Some(f), fx);
    }
}

/// The inspector's text (`rollback-abilities inspect`'s view) for a player's fighter.
pub fn inspect(world: &World<Duel>, player: usize) -> String {
    match world.player_owner(player) {
        Some(e) => debug_view(world, e).to_string(),
        None => format!("player {player} has no fighter in this match"),
    }
}
