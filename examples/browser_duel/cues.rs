//! The page's cue presenter: what the crate's [`CueDirector`](rollback_abilities::present::CueDirector)
//! asks it to show, drawn over the fighters and listed in a feed.
//!
//! The director calls `play` at most once per burst, so a hit's flash and its floating word
//! appear exactly once however many times rollbacks re-simulate the frame. A burst the
//! corrected timeline no longer holds is `cancel`led: it stays on screen as a struck-through
//! grey ghost that fades, so a misprediction is visible; `confirmed` turns a predicted cue
//! solid. Persistent cues (poison, stun, shield, sprint) are listed while active; one a
//! rollback removes (`removed(Mispredicted)`) becomes a ghost too.
//!
//! Presentation runs on the wall clock (fades, flashes): it never feeds back into the
//! simulation.

use rollback_abilities::num::Frame;
use rollback_abilities::present::{
    Cue, CueSounds, Presenter, RemoveReason, SoundCommand, SoundPolicy, SoundSink,
};
use rollback_abilities::{Content, Entity, TagId};
use rollback_abilities::{CueKey, CueKind};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// How long a floating word stays up, in milliseconds.
const FLOAT_MS: f64 = 1100.0;
/// How long a cancelled cue's ghost takes to fade, in milliseconds.
const GHOST_MS: f64 = 2200.0;
/// How long a hit flash lasts, in milliseconds.
const FLASH_MS: f64 = 140.0;
/// Lines in the cue feed.
const FEED_LINES: usize = 9;
/// The most floating words kept.
const MAX_FLOATS: usize = 48;

/// Where a shown cue is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Shown while its frame is still a prediction.
    Predicted,
    /// Its frame is confirmed: it really happened.
    Confirmed,
    /// The corrected timeline does not hold it (a misprediction): a fading ghost.
    Cancelled,
}

/// A cue word floating over its target.
#[derive(Clone, Debug)]
pub struct Float {
    /// The cue.
    pub key: CueKey,
    /// What to write.
    pub label: &'static str,
    /// Its colour.
    pub color: &'static str,
    /// When it was played (page clock, ms).
    pub born: f64,
    /// Its state.
    pub status: Status,
    /// When it was cancelled.
    pub cancelled_at: f64,
}

/// A line of the cue feed.
#[derive(Clone, Debug)]
pub struct FeedLine {
    /// The cue.
    pub key: CueKey,
    /// What happened, in words.
    pub text: String,
    /// Its state.
    pub status: Status,
    /// When it changed last (page clock, ms).
    pub at: f64,
}

/// The page's presenter (see the module documentation).
#[derive(Debug)]
pub struct CueFx {
    content: Arc<Content>,
    /// The page clock (ms), set before every tick.
    pub now: f64,
    /// Floating words.
    pub floats: VecDeque<Float>,
    /// The feed, newest last.
    pub feed: VecDeque<FeedLine>,
    /// Hit flashes: entity → until when (ms).
    pub flashes: BTreeMap<Entity, f64>,
    /// Persistent cues shown now.
    pub active: BTreeMap<CueKey, &'static str>,
    /// What was shown, counted so the numbers add up (see [`Counts`]).
    pub counts: Counts,
    /// The cues' sounds: the crate's sound policy (late offset, fade, loops), its commands
    /// queued for the page's Web Audio (`app.js`).
    pub sounds: CueSounds<SoundQueue>,
}

/// The presenter's counters. Bursts add up: every burst played is confirmed, cancelled or
/// still pending (`played = confirmed + cancelled + pending`); lasting cues (poison, stun,
/// shield, sprint) are counted apart.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// Bursts played.
    pub played: u64,
    /// Played bursts confirmed.
    pub confirmed: u64,
    /// Played bursts cancelled (mispredicted).
    pub cancelled: u64,
    /// Lasting cues shown.
    pub lasting: u64,
    /// Lasting cues a rollback showed never existed.
    pub lasting_mispredicted: u64,
}

impl Counts {
    /// Played bursts neither confirmed nor cancelled yet.
    pub fn pending(&self) -> u64 {
        self.played.saturating_sub(self.confirmed + self.cancelled)
    }
}

/// A sound command for the page's audio, with the cue's sound name.
#[derive(Clone, Debug)]
pub struct QueuedSound {
    /// The command.
    pub command: SoundCommand,
    /// The sound to synthesise (the cue tag without `GameplayCue.`).
    pub sound: String,
}

/// Sound commands waiting for `app.js` to play them (drained every animation frame).
#[derive(Clone, Debug, Default)]
pub struct SoundQueue {
    /// The commands, oldest first.
    pub pending: Vec<QueuedSound>,
    names: Vec<String>,
}

impl SoundSink for SoundQueue {
    fn command(&mut self, command: &SoundCommand) {
        let sound = self.names.get(command.key().tag.index()).cloned().unwrap_or_default();
        // At most a few seconds of commands wait for a page that stopped draining them.
        if self.pending.len() < 4096 {
            self.pending.push(QueuedSound { command: *command, sound });
        }
    }
}

/// A cue's word and colour.
fn style(tag: &str) -> (&'static str, &'static str) {
    match tag.strip_prefix("GameplayCue.").unwrap_or(tag) {
        "Hit.Light" => ("jab", "#ffffff"),
        "Hit.Heavy" => ("SMASH", "#ffd166"),
        "Hit.Crit" => ("CRIT!", "#ff4d6d"),
        "Hit.Blocked" => ("blocked", "#8ecae6"),
        "Lifesteal" => ("+life", "#80ed99"),
        "Poison" => ("poison", "#a7c957"),
        "Fireball.Launch" => ("fireball", "#ff9f1c"),
        "Fireball.Impact" => ("burn", "#ff7b00"),
        "KO" => ("K.O.", "#ff006e"),
        "Stun" => ("stunned", "#ffe066"),
        "Shield" => ("shield", "#74c0fc"),
        "Sprint" => ("sprint", "#c0c0c0"),
        _ => ("cue", "#dddddd"),
    }
}

impl CueFx {
    /// A presenter for the duel's content.
    pub fn new(content: Arc<Content>) -> CueFx {
        let tags = content.tags();
        let names = (0..tags.len())
            .map(|i| {
                let n = tags.name(TagId(i as u16));
                n.strip_prefix("GameplayCue.").unwrap_or(n).to_string()
            })
            .collect();
        let queue = SoundQueue { pending: Vec::new(), names };
        CueFx {
            sounds: CueSounds::new(SoundPolicy::default(), queue),
            content,
            now: 0.0,
            floats: VecDeque::new(),
            feed: VecDeque::new(),
            flashes: BTreeMap::new(),
            active: BTreeMap::new(),
            counts: Counts::default(),
        }
    }

    /// The frame being presented next (the world's next frame before a tick): what the
    /// sounds' late offsets count from.
    pub fn set_frame(&mut self, frame: Frame) {
        self.sounds.set_frame(frame);
    }

    /// Forgets everything shown (a new match, a jump in the replay viewer).
    pub fn clear(&mut self) {
        self.floats.clear();
        self.feed.clear();
        self.flashes.clear();
        self.active.clear();
        self.sounds.stop_all();
    }

    fn tag_name(&self, tag: TagId) -> &str {
        self.content.tags().name(tag)
    }

    fn short(&self, tag: TagId) -> String {
        let n = self.tag_name(tag);
        n.strip_prefix("GameplayCue.").unwrap_or(n).to_string()
    }

    /// Drops what has faded.
    pub fn expire(&mut self) {
        let now = self.now;
        self.floats.retain(|f| match f.status {
            Status::Cancelled => now - f.cancelled_at < GHOST_MS,
            _ => now - f.born < FLOAT_MS,
        });
        self.flashes.retain(|_, until| *until > now);
        while self.floats.len() > MAX_FLOATS {
            self.floats.pop_front();
        }
    }

    /// Whether an entity is flashing from a hit now.
    pub fn flashing(&self, e: Entity) -> bool {
        self.flashes.get(&e).is_some_and(|until| *until > self.now)
    }

    fn feed_push(&mut self, key: CueKey, text: String, status: Status) {
        self.feed.push_back(FeedLine { key, text, status, at: self.now });
        while self.feed.len() > FEED_LINES {
            self.feed.pop_front();
        }
    }

    fn feed_mark(&mut self, key: &CueKey, status: Status) {
        let now = self.now;
        for line in self.feed.iter_mut().filter(|l| l.key == *key) {
            line.status = status;
            line.at = now;
        }
    }
}

impl Presenter for CueFx {
    fn play(&mut self, cue: &Cue) {
        self.counts.played += 1;
        self.sounds.play(cue);
        let name = self.tag_name(cue.key.tag).to_string();
        let (label, color) = style(&name);
        if name.starts_with("GameplayCue.Hit.") && !name.ends_with("Blocked")
            || name == "GameplayCue.Fireball.Impact"
        {
            self.flashes.insert(cue.key.target, self.now + FLASH_MS);
        }
        let status = if cue.predicted { Status::Predicted } else { Status::Confirmed };
        self.floats.push_back(Float {
            key: cue.key,
            label,
            color,
            born: self.now,
            status,
            cancelled_at: 0.0,
        });
        let text =
            format!("f{} {} on #{}", cue.key.frame, self.short(cue.key.tag), cue.key.target.index);
        self.feed_push(cue.key, text, status);
    }

    fn cancel(&mut self, cue: &Cue) {
        self.counts.cancelled += 1;
        self.sounds.cancel(cue);
        let now = self.now;
        for f in self.floats.iter_mut().filter(|f| f.key == cue.key) {
            f.status = Status::Cancelled;
            f.cancelled_at = now;
        }
        if !self.floats.iter().any(|f| f.key == cue.key) {
            // Long gone from the screen: bring the ghost back so the correction is seen.
            let (label, color) = style(self.tag_name(cue.key.tag));
            self.floats.push_back(Float {
                key: cue.key,
                label,
                color,
                born: now,
                status: Status::Cancelled,
                cancelled_at: now,
            });
        }
        self.flashes.remove(&cue.key.target);
        self.feed_mark(&cue.key, Status::Cancelled);
    }

    fn confirmed(&mut self, cue: &Cue) {
        if cue.key.kind == CueKind::Executed {
            self.counts.confirmed += 1;
        }
        for f in self.floats.iter_mut().filter(|f| f.key == cue.key) {
            if f.status == Status::Predicted {
                f.status = Status::Confirmed;
            }
        }
        let now = self.now;
        for line in self.feed.iter_mut().filter(|l| l.key == cue.key) {
            if line.status == Status::Predicted {
                line.status = Status::Confirmed;
                line.at = now;
            }
        }
    }

    fn on_active(&mut self, cue: &Cue) {
        let text = format!(
            "f{} {} starts on #{}",
            cue.key.frame,
            self.short(cue.key.tag),
            cue.key.target.index
        );
        let status = if cue.predicted { Status::Predicted } else { Status::Confirmed };
        self.feed_push(cue.key, text, status);
    }

    fn while_active(&mut self, cue: &Cue) {
        self.counts.lasting += 1;
        self.sounds.while_active(cue);
        let (label, _) = style(self.tag_name(cue.key.tag));
        self.active.insert(cue.key, label);
    }

    fn removed(&mut self, cue: &Cue, reason: RemoveReason) {
        self.active.remove(&cue.key);
        self.sounds.removed(cue, reason);
        if reason == RemoveReason::Mispredicted {
            self.counts.lasting_mispredicted += 1;
            let (label, color) = style(self.tag_name(cue.key.tag));
            let now = self.now;
            self.floats.push_back(Float {
                key: cue.key,
                label,
                color,
                born: now,
                status: Status::Cancelled,
                cancelled_at: now,
            });
            self.feed_mark(&cue.key, Status::Cancelled);
        }
    }

    fn retimed(&mut self, from: &Cue, to: &Cue) {
        self.sounds.retimed(from, to);
        for f in self.floats.iter_mut().filter(|f| f.key == from.key) {
            f.key = to.key;
        }
        for line in self.feed.iter_mut().filter(|l| l.key == from.key) {
            line.key = to.key;
        }
    }

    fn happened(&mut self, cue: &Cue) {
        // Begun and ended between two looks (a remote one-frame effect that arrived late):
        // a line in the feed, never lost.
        if cue.key.kind != CueKind::Executed {
            let text = format!(
                "f{} {} on #{} (late)",
                cue.key.frame,
                self.short(cue.key.tag),
                cue.key.target.index
            );
            self.feed_push(cue.key, text, Status::Confirmed);
        }
    }
}
