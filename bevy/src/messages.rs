//! What the plugin tells the app: cues, UI notices, session events, desync reports and the
//! match's start and end, as Bevy messages (read them with `MessageReader` in `Update`).
//!
//! Every message is written once: the crate's directors decide what a cue or UI event is
//! (exactly once under rollback), and the plugin forwards each of their calls as one message.

use bevy::prelude::{Component, Entity, Message};
use rollback_abilities::CueKey;
use rollback_abilities::debug::DesyncReport;
use rollback_abilities::num::Frame;
use rollback_abilities::present::{Cue, RemoveReason};
use rollback_abilities::session::SessionEvent;
use rollback_abilities::ui::UiNotice;
use std::sync::Arc;

/// Which [`Presenter`](rollback_abilities::present::Presenter) call a [`CueMessage`] carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CuePhase {
    /// `play`: a burst starts.
    Played,
    /// `cancel`: a played burst is not in the corrected timeline.
    Cancelled,
    /// `retimed`: a played burst was found again a few frames away (the message's cue is the
    /// new one).
    Retimed {
        /// The key of the cue as it was played.
        from: CueKey,
    },
    /// `on_active`: a persistent instance became active.
    Activated,
    /// `while_active`: presentation starts showing a persistent instance.
    Shown,
    /// `removed`: a shown persistent instance is no longer shown.
    Removed(RemoveReason),
    /// `confirmed`: the cue's frame is confirmed; it can no longer be cancelled.
    Confirmed,
}

/// One cue director call, once.
#[derive(Message, Clone, Copy, Debug, PartialEq)]
pub struct CueMessage {
    /// The call.
    pub phase: CuePhase,
    /// The cue.
    pub cue: Cue,
    /// The view entity of the cue's target ([`SimEntity`](crate::SimEntity)), if it has one.
    pub view: Option<Entity>,
    /// The cue's effect entity ([`CueFx`]), if it has one: spawned on `Played` and `Shown`,
    /// despawned on `Cancelled` and `Removed` (so a sound or particle system on it stops when
    /// a rollback proves the cue never happened).
    pub fx: Option<Entity>,
}

/// A cue's effect entity: spawned when a burst is played or a persistent cue starts being
/// shown; despawned by the plugin when the burst is cancelled or the persistent cue removed.
/// Attach sounds and particles to it with an observer on `Add, CueFx`. Once a burst is
/// confirmed the plugin forgets its entity (`confirmed` becomes true): end it yourself (a
/// despawning audio player, a timer).
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct CueFx {
    /// The cue (for a retimed burst, the newest timing).
    pub cue: Cue,
    /// The view entity of the cue's target when it was spawned.
    pub view: Option<Entity>,
    /// Whether the cue's frame is confirmed.
    pub confirmed: bool,
}

/// One UI notice ([`UiNotice`]: shown, retracted or confirmed), once, for a subscription
/// declared with [`AbilitiesPlugin::subscribe`](crate::AbilitiesPlugin::subscribe).
#[derive(Message, Clone, Copy, Debug, PartialEq)]
pub struct UiMessage {
    /// The notice.
    pub notice: UiNotice,
    /// The view entity of the entity the event is about, if it has one.
    pub view: Option<Entity>,
}

/// A session event the runner saw: synchronised, interrupted, stalled, resumed, a peer's
/// fault (a hostile or broken packet the guard refused), a departure, a desync.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct SessionMessage(pub SessionEvent);

/// A P2P desync: the report keeps the local dump of the frame, the differing subsystems and
/// the confirmed inputs leading to it.
#[derive(Message, Clone, Debug)]
pub struct DesyncDetected {
    /// The report.
    pub report: Arc<DesyncReport>,
}

/// A sync test found a frame whose re-simulation gave another checksum (bevy_ggrs's name),
/// with the crate's desync report.
#[derive(Message, Clone, Debug)]
pub struct SyncTestMismatch {
    /// The report.
    pub report: Arc<DesyncReport>,
}

/// A match started: its world and session exist.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct MatchStarted {
    /// The kind of match (`offline`, `sync test`, `p2p`, `spectator`).
    pub kind: &'static str,
    /// The content's hash.
    pub content_hash: u64,
}

/// A match could not start or ended on an error (the content failed to load, the socket could
/// not be bound, GGRS failed). The app keeps running; insert a new
/// [`MatchSpec`](crate::MatchSpec) to start again.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct MatchEnded {
    /// The frame the world was at (`None`: the match never started).
    pub frame: Option<Frame>,
    /// Why.
    pub reason: String,
}

/// The content file of a plugin made with
/// [`AbilitiesPlugin::from_ron_file`](crate::AbilitiesPlugin::from_ron_file) changed.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct ContentReloaded {
    /// Whether the running match restarted with it (offline and sync test) or kept its content
    /// (P2P and spectator: the change applies to the next match).
    pub applied: bool,
    /// What happened, for the log.
    pub reason: String,
}
