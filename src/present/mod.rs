//! Presentation: what the game shows, kept exactly-once under rollback. It sits above the
//! world and reads only what the world emits ([`FrameOutput`](crate::FrameOutput)'s cue
//! records) and what its snapshot derives ([`World::active_cues`](crate::World::active_cues)).
//!
//! A [`CueDirector`] is fed once per rollback batch (see its documentation for the protocol)
//! and calls a [`Presenter`] the game implements: `play` each burst once, `cancel` bursts the
//! corrected timeline no longer contains, `on_active`/`while_active`/`removed` for persistent
//! instances diffed against the snapshot, and `confirmed` once a cue's frame is confirmed. A
//! confirmed persistent instance that began and ended between two reconciles (inside one
//! rollback batch) is presented late, never lost ([`Presenter::happened`]).
//! Headless runs (fuzzing, sync tests, replay verification) simply have no director; emission
//! is unchanged, so checksums are unaffected.
//!
//! A [`CueRouter`] is a [`Presenter`] that routes cues to handlers by tag hierarchy (GAS's cue
//! manager: static and instanced handlers, translation, suppression, local cues), and a
//! [`PresenterLog`] records every presenter call, which is how tests and the scenario runner
//! compare what different runs showed.
//!
//! [`CueSounds`] is a [`Presenter`] for sound under rollback: a cue presented late starts at
//! the offset of the frames it missed, a cancelled one fades out over a few frames, a
//! persistent one loops while it is active and stops on removal, each exactly once
//! ([`SoundPolicy`], [`SoundCommand`]).

mod director;
mod presenter_log;
mod router;
mod sound;

pub use director::{
    Cue, CueCounters, CueDirector, CueLogEntry, CueLogKind, CueSession, Presenter, RemoveReason,
};
pub use presenter_log::{PresenterCall, PresenterLog};
pub use router::{
    CueCall, CueHandler, CueInstance, CueOptions, CueRouter, EntityInterface, InstanceKey,
    StaticHandler,
};
pub use sound::{CueSounds, SoundCommand, SoundPolicy, SoundSink};
