//! Frozen cue definitions and the cue policy.

use crate::id::TagId;
use serde::{Deserialize, Serialize};

/// A frozen cue definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CueDef {
    /// The `GameplayCue.*` tag.
    pub tag: TagId,
    /// Its presentation policy.
    pub policy: CuePolicy,
}

/// When a presenter may show a cue (F-GC-14).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CuePolicy {
    /// Shown as soon as it is predicted; cancelled if the prediction was wrong.
    #[default]
    Predicted,
    /// Shown as soon as it is predicted and never cancelled (tiny sparks).
    PredictedNoCancel,
    /// Shown only once its frame is confirmed (irreversible reactions: KO, score).
    Confirmed,
}
