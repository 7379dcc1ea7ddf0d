//! Sound under rollback: when a cue's sound starts, from which offset, and how it ends.
//!
//! Rollback makes sound hard in three ways. A cue can be *presented late*: its frame was
//! simulated only after a rollback, several frames after the moment it belongs to, so its
//! sound should start that many frames into itself (the listener hears it where it would have
//! been if the input had arrived in time) — or not at all when it is so late that it would be
//! heard out of place. A burst can be *cancelled*: the corrected timeline no longer holds it,
//! and its sound must stop without a click, fading out over a few frames. A persistent cue
//! *loops* while its instance is active and stops when it is removed (fading when a rollback
//! showed it never existed). And each of these happens exactly once per cue, however many times
//! rollbacks re-simulate its frame.
//!
//! The [`CueDirector`](super::CueDirector) already guarantees the exactly-once part of the
//! presenter calls. [`CueSounds`] is a [`Presenter`] that turns those calls into
//! [`SoundCommand`]s under a [`SoundPolicy`] and hands them to a [`SoundSink`] (a browser's
//! Web Audio, a native mixer, a test's log); it keeps the log of every command it issued, so
//! a test can hold what a sink did against it. Set the presentation frame with
//! [`CueSounds::set_frame`] before feeding the director: offsets are counted from it.
//!
//! ```
//! use rollback_abilities::present::{CueSounds, SoundCommand, SoundPolicy};
//! let mut sounds = CueSounds::new(SoundPolicy::default(), Vec::<SoundCommand>::new());
//! sounds.set_frame(120);
//! assert!(sounds.log().is_empty());
//! ```

use super::director::{Cue, Presenter, RemoveReason};
use crate::cue::{CueKey, CueKind};
use crate::num::Frame;
use std::collections::BTreeMap;

/// How late, cancelled and removed sounds are treated ([`CueSounds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SoundPolicy {
    /// Frames over which a cancelled burst, or a persistent sound a rollback removed, fades
    /// out.
    pub fade_frames: Frame,
    /// The latest a burst may be presented and still be heard: a burst presented more frames
    /// after its own frame is skipped ([`SoundCommand::Skip`]).
    pub max_late_frames: Frame,
    /// How long a burst's sound lasts, in frames: a burst cancelled after that is already
    /// silent and gets no fade.
    pub burst_frames: Frame,
}

impl Default for SoundPolicy {
    /// Fades over 4 frames, bursts heard up to 20 frames late, burst sounds of 45 frames.
    fn default() -> Self {
        SoundPolicy { fade_frames: 4, max_late_frames: 20, burst_frames: 45 }
    }
}

/// What a [`SoundSink`] is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum SoundCommand {
    /// Start the cue's sound `offset` frames into itself (`0`: presented on time); a
    /// persistent cue's sound loops until it is stopped or faded.
    Start {
        /// The cue.
        key: CueKey,
        /// Frames the presentation missed: the sound starts this far into itself.
        offset: Frame,
        /// Whether it loops (a persistent cue).
        looped: bool,
    },
    /// A burst presented more than [`SoundPolicy::max_late_frames`] late: not heard.
    Skip {
        /// The cue.
        key: CueKey,
        /// How late it was presented, in frames.
        late: Frame,
    },
    /// Fade the sound out over `frames` frames (cancelled, or removed as mispredicted).
    Fade {
        /// The cue.
        key: CueKey,
        /// The fade's length.
        frames: Frame,
    },
    /// Stop the looping sound of a persistent cue that ended.
    Stop {
        /// The cue.
        key: CueKey,
    },
}

impl SoundCommand {
    /// The cue the command is about.
    pub fn key(&self) -> CueKey {
        match *self {
            SoundCommand::Start { key, .. }
            | SoundCommand::Skip { key, .. }
            | SoundCommand::Fade { key, .. }
            | SoundCommand::Stop { key } => key,
        }
    }
}

/// Where [`CueSounds`] sends its commands: the game's audio.
pub trait SoundSink {
    /// Carries out one command (its cue is [`SoundCommand::key`]).
    fn command(&mut self, command: &SoundCommand);
}

/// A sink that only keeps the commands (tests, headless runs).
impl SoundSink for Vec<SoundCommand> {
    fn command(&mut self, command: &SoundCommand) {
        self.push(*command);
    }
}

/// A [`Presenter`] that plays cues as sounds under a [`SoundPolicy`] (see the module
/// documentation).
#[derive(Clone, Debug)]
pub struct CueSounds<S> {
    /// The policy.
    pub policy: SoundPolicy,
    /// Where the commands go.
    pub sink: S,
    frame: Frame,
    /// Sounds that may still be heard: cue → the frame presentation started it (bursts are
    /// forgotten once [`SoundPolicy::burst_frames`] have passed).
    sounding: BTreeMap<CueKey, Frame>,
    log: Vec<SoundCommand>,
}

impl<S: SoundSink> CueSounds<S> {
    /// Sounds under `policy`, sent to `sink`.
    pub fn new(policy: SoundPolicy, sink: S) -> CueSounds<S> {
        CueSounds { policy, sink, frame: 0, sounding: BTreeMap::new(), log: Vec::new() }
    }

    /// The frame being presented (the world's next frame): a cue of an earlier frame is late
    /// by the difference. Also forgets bursts whose sound is over.
    pub fn set_frame(&mut self, frame: Frame) {
        self.frame = frame;
        let horizon = self.policy.burst_frames;
        self.sounding
            .retain(|k, at| k.kind != CueKind::Executed || frame.saturating_sub(*at) < horizon);
    }

    /// Every command issued, in order.
    pub fn log(&self) -> &[SoundCommand] {
        &self.log
    }

    /// The cues whose sound may still be heard.
    pub fn sounding(&self) -> impl Iterator<Item = &CueKey> {
        self.sounding.keys()
    }

    /// Stops every sound that may still be heard (a new match, a jump in a replay): a
    /// [`SoundCommand::Stop`] each, in key order.
    pub fn stop_all(&mut self) {
        let keys: Vec<CueKey> = self.sounding.keys().copied().collect();
        self.sounding.clear();
        for key in keys {
            self.issue(SoundCommand::Stop { key });
        }
    }

    fn issue(&mut self, command: SoundCommand) {
        self.sink.command(&command);
        self.log.push(command);
    }

    fn start(&mut self, cue: &Cue, looped: bool) {
        let late = self.frame.saturating_sub(cue.key.frame);
        if !looped && late > self.policy.max_late_frames {
            self.issue(SoundCommand::Skip { key: cue.key, late });
            return;
        }
        self.sounding.insert(cue.key, self.frame);
        self.issue(SoundCommand::Start { key: cue.key, offset: late, looped });
    }

    fn fade(&mut self, cue: &Cue) {
        if self.sounding.remove(&cue.key).is_some() {
            let frames = self.policy.fade_frames;
            self.issue(SoundCommand::Fade { key: cue.key, frames });
        }
    }
}

impl<S: SoundSink> Presenter for CueSounds<S> {
    fn play(&mut self, cue: &Cue) {
        self.start(cue, false);
    }

    fn cancel(&mut self, cue: &Cue) {
        self.fade(cue);
    }

    fn while_active(&mut self, cue: &Cue) {
        self.start(cue, true);
    }

    fn removed(&mut self, cue: &Cue, reason: RemoveReason) {
        if reason == RemoveReason::Mispredicted {
            self.fade(cue);
        } else if self.sounding.remove(&cue.key).is_some() {
            self.issue(SoundCommand::Stop { key: cue.key });
        }
    }

    fn retimed(&mut self, from: &Cue, to: &Cue) {
        // The same sound, moved in time: it keeps playing.
        if let Some(at) = self.sounding.remove(&from.key) {
            self.sounding.insert(to.key, at);
        }
    }

    fn happened(&mut self, _cue: &Cue) {
        // Begun and ended before presentation saw it: its sound would be over already.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cue::{CueOrigin, CueParams, CuePolicy};
    use crate::{Entity, TagId, TagSet};

    fn cue(frame: Frame, kind: CueKind) -> Cue {
        Cue {
            key: CueKey {
                frame,
                target: Entity::NONE,
                tag: TagId::default(),
                kind,
                origin: CueOrigin::default(),
                ordinal: 0,
            },
            params: CueParams::default(),
            policy: CuePolicy::default(),
            predicted: true,
            source_tags: TagSet::default(),
            target_tags: TagSet::default(),
        }
    }

    fn sounds() -> CueSounds<Vec<SoundCommand>> {
        CueSounds::new(SoundPolicy::default(), Vec::new())
    }

    #[test]
    fn a_burst_presented_late_starts_at_the_frames_it_missed() {
        let mut s = sounds();
        s.set_frame(100);
        let on_time = cue(100, CueKind::Executed);
        let late = cue(93, CueKind::Executed);
        s.play(&on_time);
        s.play(&late);
        assert_eq!(
            s.log(),
            [
                SoundCommand::Start { key: on_time.key, offset: 0, looped: false },
                SoundCommand::Start { key: late.key, offset: 7, looped: false },
            ]
        );
        assert_eq!(s.sink, s.log());
    }

    #[test]
    fn a_burst_too_late_to_be_heard_is_skipped() {
        let mut s = sounds();
        s.set_frame(100);
        let stale = cue(79, CueKind::Executed);
        s.play(&stale);
        assert_eq!(s.log(), [SoundCommand::Skip { key: stale.key, late: 21 }]);
        // Nothing sounds, so its cancellation fades nothing.
        s.cancel(&stale);
        assert_eq!(s.log().len(), 1);
    }

    #[test]
    fn a_cancelled_burst_fades_once_and_only_while_it_sounds() {
        let mut s = sounds();
        s.set_frame(10);
        let hit = cue(10, CueKind::Executed);
        s.play(&hit);
        s.set_frame(12);
        s.cancel(&hit);
        s.cancel(&hit);
        assert_eq!(s.log()[1], SoundCommand::Fade { key: hit.key, frames: 4 });
        assert_eq!(s.log().len(), 2);
        // A burst whose sound is over gets no fade.
        let old = cue(20, CueKind::Executed);
        s.set_frame(20);
        s.play(&old);
        s.set_frame(20 + SoundPolicy::default().burst_frames);
        s.cancel(&old);
        assert_eq!(s.log().len(), 3);
    }

    #[test]
    fn a_persistent_cue_loops_until_removed_and_fades_when_mispredicted() {
        let mut s = sounds();
        s.set_frame(50);
        let poison = cue(44, CueKind::Added);
        s.while_active(&poison);
        // Loops are never forgotten by time.
        s.set_frame(500);
        assert_eq!(s.sounding().count(), 1);
        s.removed(&poison, RemoveReason::Ended);
        s.removed(&poison, RemoveReason::Ended);
        let ghost = cue(498, CueKind::Added);
        s.while_active(&ghost);
        s.removed(&ghost, RemoveReason::Mispredicted);
        assert_eq!(
            s.log(),
            [
                SoundCommand::Start { key: poison.key, offset: 6, looped: true },
                SoundCommand::Stop { key: poison.key },
                SoundCommand::Start { key: ghost.key, offset: 2, looped: true },
                SoundCommand::Fade { key: ghost.key, frames: 4 },
            ]
        );
        assert_eq!(s.sounding().count(), 0);
    }

    #[test]
    fn a_retimed_burst_keeps_sounding_under_its_new_key() {
        let mut s = sounds();
        s.set_frame(30);
        let a = cue(30, CueKind::Executed);
        let b = cue(31, CueKind::Executed);
        s.play(&a);
        s.retimed(&a, &b);
        s.cancel(&b);
        assert_eq!(s.log()[1], SoundCommand::Fade { key: b.key, frames: 4 });
        assert_eq!(s.log().len(), 2);
    }

    #[test]
    fn stop_all_stops_what_sounds_once() {
        let mut s = sounds();
        s.set_frame(5);
        let hit = cue(5, CueKind::Executed);
        let aura = cue(3, CueKind::Added);
        s.play(&hit);
        s.while_active(&aura);
        s.stop_all();
        s.stop_all();
        let stops: Vec<_> =
            s.log().iter().filter(|c| matches!(c, SoundCommand::Stop { .. })).collect();
        assert_eq!(stops.len(), 2);
        assert_eq!(s.sounding().count(), 0);
    }
}
