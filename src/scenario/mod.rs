//! Scenarios: the designers' "does my ability data do what I think" tool and the crate's
//! acceptance harness (the AS-nn scenarios of `docs/features.md`).
//!
//! A scenario file (RON, specified in `docs/scenarios.md`) names its content, spawns entities,
//! scripts inputs and direct operations frame by frame, and states expectations at frames. The
//! runner executes it in five modes and checks that they agree (a file may exclude a mode by
//! name, with a reason printed in every report):
//!
//! | mode | what runs | what must agree with plain stepping |
//! |---|---|---|
//! | [`Mode::Plain`] | one world stepped frame by frame; expectations are checked here | — |
//! | [`Mode::Rollback`] | every frame rolls back a random depth (1–8) and re-simulates | per-frame checksums, final bytes, reconciled cue log |
//! | [`Mode::Replay`] | the inputs are recorded into a replay file, decoded, re-simulated headless, then played with a cue director | the replay's per-frame checksums, final bytes, reconciled cue log |
//! | [`Mode::Peers`] | one GGRS peer per player (at least two) over the lossy emulated network | confirmed checksums on every peer, reconciled cue log of every peer |
//! | [`Mode::SyncTest`] | GGRS's `SyncTestSession` with the scenario's check distance | no mismatch, confirmed checksums, reconciled cue log |
//!
//! With a `cue_routing` table, every mode also routes its presenter calls through a
//! [`CueRouter`](crate::present::CueRouter) and its reconciled handler calls must equal plain
//! stepping's.
//!
//! A game runs its own scenario files with its own [`Game`] and hooks:
//! [`run_dir`], [`run_files`] and [`cli_main`] (see [`ScenarioHost`]).
//!
//! ```
//! use rollback_abilities::scenario::{Scenario, run};
//!
//! let text = r###"(
//!     content: Inline(r##"(
//!         attribute_sets: { "Move": (attributes: { "MoveSpeed": (default: 600) }) },
//!         effects: { "Haste": (duration: Seconds(3),
//!             modifiers: [(attribute: "MoveSpeed", op: Add, magnitude: Scalable(coef: 50))]) },
//!     )"##),
//!     entities: { "hero": (attribute_sets: ["Move"]) },
//!     script: [ (frame: 0, do: ApplyEffect(effect: "Haste", on: "hero")) ],
//!     expect: [
//!         (frame: 0, until: 179, that: Attribute(on: "hero", attribute: "MoveSpeed",
//!                                                current: 650, base: 600)),
//!         (frame: 180, that: Attribute(on: "hero", attribute: "MoveSpeed", current: 600)),
//!     ],
//! )"###;
//! let scenario = Scenario::from_str(text, "haste.ron", None)?;
//! let report = run(&scenario, &Default::default())?;
//! assert!(report.passed(), "{report}");
//! assert_eq!(report.expectations.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod check;
mod dir;
mod format;
mod names;
mod plan;
mod resolve;
mod routing;
mod run;

pub use dir::{DirReport, FileOutcome, check_hooks, cli_main, run_dir, run_files};
pub use format::RawMode as Mode;
pub use run::{
    ExpectationResult, FrameTrace, ModeOutcome, ModeResult, RunOptions, ScenarioReport, record,
    run, run_with_hooks,
};

use crate::content::Content;
use crate::num::Frame;
use crate::world::{AbilityInput, Game, WorldConfig};
use std::path::Path;
use std::sync::Arc;

/// The game the scenario runner simulates by default: no game systems of its own, one
/// [`ScenarioInput`] per player (held ability inputs plus confirm/cancel). Register functions
/// for it with [`run_with_hooks`] when content names executions, calculations or behaviours,
/// or run scenarios with your own game: see [`ScenarioHost`].
#[derive(Debug)]
pub struct ScenarioGame;

/// A game scenarios can run with: it turns the scenario's buttons (held ability inputs,
/// confirm and cancel) into its own input. Its [`Game::systems`] run in phase P6 of every frame
/// as in the game, before the script's operations.
///
/// ```
/// use rollback_abilities::scenario::{ScenarioHost, ScenarioInput};
/// use rollback_abilities::{AbilityInput, Game};
///
/// struct MyGame;
/// impl Game for MyGame {
///     type Input = u32; // held ability inputs
///     type Component = ();
///     type Global = ();
///     fn ability_input(input: &u32) -> AbilityInput {
///         AbilityInput { held: *input, ..AbilityInput::default() }
///     }
/// }
/// impl ScenarioHost for MyGame {
///     fn scenario_input(input: &ScenarioInput) -> u32 {
///         input.held
///     }
/// }
/// assert_eq!(MyGame::scenario_input(&ScenarioInput { held: 0b101, buttons: 0 }), 0b101);
/// ```
pub trait ScenarioHost: Game {
    /// The game's input for one player's scenario buttons.
    fn scenario_input(input: &ScenarioInput) -> Self::Input;

    /// Places an entity's boxes for an entity's `at` (position, facing, body) before frame 0:
    /// a game with positions of its own writes them where it keeps them and returns `true`.
    /// The default keeps the anchor in the world ([`World::set_anchor`](crate::World::set_anchor),
    /// for a game that sets [`Game::KEEPS_ANCHORS`]); `false` (the game cannot place it) fails
    /// the scenario before it runs.
    fn place(world: &mut crate::World<Self>, e: crate::Entity, anchor: crate::BoxAnchor) -> bool {
        world.set_anchor(e, anchor)
    }
}

impl ScenarioHost for ScenarioGame {
    fn scenario_input(input: &ScenarioInput) -> ScenarioInput {
        *input
    }
}

/// One player's input in a scenario.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    bytemuck::Pod,
    bytemuck::Zeroable,
    serde::Serialize,
    serde::Deserialize,
)]
#[repr(C)]
pub struct ScenarioInput {
    /// Bit `i`: ability input `i` is held.
    pub held: u32,
    /// Bit 0: confirm is held; bit 1: cancel is held.
    pub buttons: u32,
}

/// No positions of its own: the world keeps the box anchors of the entities a scenario places
/// (their `at`), so scenario files can check hit, hurt and push boxes.
impl Game for ScenarioGame {
    type Input = ScenarioInput;
    type Component = ();
    type Global = ();
    const KEEPS_ANCHORS: bool = true;

    fn ability_input(input: &ScenarioInput) -> AbilityInput {
        AbilityInput {
            held: input.held,
            confirm: input.buttons & 1 != 0,
            cancel: input.buttons & 2 != 0,
        }
    }
}

/// What kind of problem a [`ScenarioError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScenarioErrorKind {
    /// A file could not be read.
    Io,
    /// The text is not valid RON for the scenario format.
    Syntax,
    /// The scenario's content is invalid (the message is the content error).
    Content,
    /// A name (entity, tag, attribute, effect, ability…) is unknown.
    UnknownName,
    /// A value is out of range or contradicts another.
    InvalidValue,
    /// The world cannot be built (a function the content names is not registered, a capacity
    /// is invalid).
    World,
}

/// A scenario problem with its location: a [`LocatedError`](crate::LocatedError) whose kind is a
/// [`ScenarioErrorKind`]. `Display` renders `file:line:col: path: message`; the path is the
/// path inside the file, e.g. `script[3].do.effect`.
pub type ScenarioError = crate::located::LocatedError<ScenarioErrorKind>;

/// A parsed and validated scenario: every name resolved, ready to run any number of times.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Its title.
    pub name: String,
    /// What it shows.
    pub description: String,
    /// The file it came from (for messages).
    pub file: String,
    /// Its content.
    pub content: Arc<Content>,
    /// The world configuration (seed, capacities; at least two input slots).
    pub world: WorldConfig,
    /// The players the file declares (mode `Peers` adds an idle second peer to one player).
    pub players: u16,
    /// Frames to run.
    pub frames: Frame,
    /// The modes to run.
    pub modes: Vec<Mode>,
    /// The modes the file excludes, each with its reason.
    pub excluded: Vec<(Mode, String)>,
    /// The emulated network of mode `Peers`.
    pub network: NetworkSpec,
    /// Mode `SyncTest`'s check distance.
    pub check_distance: u32,
    pub(crate) entities: Vec<plan::EntitySetup>,
    pub(crate) buttons: Vec<plan::ButtonOp>,
    pub(crate) ops: Vec<plan::Op>,
    pub(crate) checks: Vec<check::Check>,
    pub(crate) sources: Vec<SourceText>,
    pub(crate) routing: Option<routing::Routing>,
}

/// A content source kept to locate the functions content names.
#[derive(Clone, Debug)]
pub(crate) struct SourceText {
    pub file: String,
    pub text: String,
    /// For inline content: where its first character is in the scenario file.
    pub at: Option<(u32, u32)>,
}

/// The conditions of one link between two peers (both directions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSpec {
    /// The lower peer.
    pub a: u16,
    /// The higher peer.
    pub b: u16,
    /// One-way latency in milliseconds.
    pub latency_ms: u32,
    /// Extra random latency per packet.
    pub jitter_ms: u32,
    /// Loss in percent.
    pub loss_percent: u32,
}

/// The emulated network of mode [`Mode::Peers`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkSpec {
    /// One-way latency in milliseconds.
    pub latency_ms: u32,
    /// Extra random latency per packet.
    pub jitter_ms: u32,
    /// Loss in percent.
    pub loss_percent: u32,
    /// GGRS input delay.
    pub input_delay: u32,
    /// The network's seed.
    pub seed: u64,
    /// GGRS's prediction window.
    pub max_prediction: u32,
    /// Links whose conditions differ from the network's.
    pub links: Vec<LinkSpec>,
}

impl Scenario {
    /// Reads and validates a scenario file. Content paths are relative to the file.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            kind: ScenarioErrorKind::Io,
            file: path.display().to_string(),
            line: 0,
            col: 0,
            path: String::new(),
            message: format!("cannot read the scenario file: {e}"),
        })?;
        Scenario::from_str(&text, &path.display().to_string(), path.parent())
    }

    /// Parses and validates scenario text. `file` names it in messages; `base_dir` resolves
    /// content paths (`None`: the current directory).
    #[allow(
        clippy::should_implement_trait,
        reason = "it also takes the file name and base directory, which FromStr cannot"
    )]
    pub fn from_str(
        text: &str,
        file: &str,
        base_dir: Option<&Path>,
    ) -> Result<Scenario, ScenarioError> {
        resolve::parse(text, file, base_dir)
    }

    /// The entity names, in spawn order.
    pub fn entity_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.entities.iter().map(|e| e.name.as_str())
    }

    /// How many expectations it states.
    pub fn expectation_count(&self) -> usize {
        self.checks.len()
    }
}
