//! # bevy_rollback_abilities
//!
//! A Bevy plugin for [`rollback_abilities`]: GAS-style tags, attributes, effects, abilities and
//! cues on a deterministic world rolled back through GGRS. The crate's own hardened
//! [`Runner`](rollback_abilities::session::Runner) drives GGRS — the session guard, the
//! departure rule, GGRS panic containment, desync reports and replays stay one code path —
//! and Bevy does input, presentation and rendering.
//!
//! - [`AbilitiesPlugin<G>`] over your [`Game`](rollback_abilities::Game), and a
//!   [`MatchSpec`] resource saying which match to run (offline, sync test, P2P over UDP,
//!   WebRTC (feature `matchbox`) or the emulated network, spectator).
//! - [`ReadInputs`], [`LocalInputs`], [`LocalPlayers`], [`RollbackFrameRate`]: bevy_ggrs's
//!   names, bevy_ggrs's use.
//! - [`AbilitiesMatch<G>`]: the world, readable from systems (attributes, tags, effects,
//!   abilities for HUDs).
//! - Messages, each sent once: [`CueMessage`] (every cue director call), [`UiMessage`],
//!   [`SessionMessage`], [`DesyncDetected`], [`SyncTestMismatch`], [`MatchStarted`],
//!   [`MatchEnded`]; [`CueFx`] effect entities despawned when a rollback cancels their cue.
//! - Content as a Bevy asset ([`ContentAsset`], [`ContentLoader`],
//!   [`AbilitiesPlugin::from_asset`]): errors name `file:line:col`; a reload restarts an offline
//!   match or a sync test and is refused by a networked one ([`ContentReloaded`]).
//! - [`SimEntity`] views, one per crate entity, with [`SimData`] changed only when the data
//!   changed and retired only once a death is confirmed ([`SimGone`] until then).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod asset;
mod messages;
mod plugin;
mod session;
mod spec;
mod views;

pub use asset::{ContentAsset, ContentLoadError, ContentLoader};
pub use messages::{
    ContentReloaded, CueFx, CueMessage, CuePhase, DesyncDetected, MatchEnded, MatchStarted,
    SessionMessage, SyncTestMismatch, UiMessage,
};
pub use plugin::{
    AbilitiesPlugin, AbilitiesSystems, InputFrame, LocalInputs, LocalPlayers, ReadInputs,
    RollbackFrameRate,
};
pub use session::{AbilitiesMatch, PlayerHandle, WorldRef};
pub use spec::{MatchSpec, NetSettings};
pub use views::{SimData, SimEntity, SimGone, SimViews};

/// Everything an app using the plugin usually needs.
pub mod prelude {
    pub use crate::{
        AbilitiesMatch, AbilitiesPlugin, AbilitiesSystems, ContentAsset, ContentReloaded, CueFx,
        CueMessage, CuePhase, DesyncDetected, InputFrame, LocalInputs, LocalPlayers, MatchEnded,
        MatchSpec, MatchStarted, NetSettings, PlayerHandle, ReadInputs, RollbackFrameRate,
        SessionMessage, SimData, SimEntity, SimGone, SimViews, SyncTestMismatch, UiMessage,
    };
}
