//! The scenario file format as written (serde types). `docs/scenarios.md` is its reference.

use crate::ability::FailureKind;
use crate::content::raw::{NamedMap, Num};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use std::fmt;

/// A whole scenario file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "Scenario")]
pub struct RawScenario {
    /// A short title (defaults to the file name).
    #[serde(default)]
    pub name: Option<String>,
    /// What the scenario shows.
    #[serde(default)]
    pub description: String,
    /// The content it runs on.
    pub content: RawContentRef,
    /// The session seed (random streams).
    #[serde(default)]
    pub seed: u64,
    /// Players (inputs per frame; mode `Peers` runs one peer per player).
    #[serde(default = "two")]
    pub players: u16,
    /// Frames to run (default: one past the last scripted or expected frame).
    #[serde(default)]
    pub frames: Option<u32>,
    /// World capacity overrides.
    #[serde(default)]
    pub world: RawWorld,
    /// The emulated network of mode `Peers`.
    #[serde(default)]
    pub network: RawNetwork,
    /// The modes to run: `All` (the default) or `Except(modes: [...], reason: "...")`.
    #[serde(default)]
    pub modes: RawModes,
    /// Mode `SyncTest`'s settings.
    #[serde(default)]
    pub sync_test: RawSyncTest,
    /// The entities, spawned in this order before frame 0.
    #[serde(default)]
    pub entities: NamedMap<RawEntity>,
    /// What happens at which frame.
    #[serde(default)]
    pub script: Vec<RawStep>,
    /// What must be true at which frame.
    #[serde(default)]
    pub expect: Vec<RawExpect>,
    /// Presentation handlers the confirmed cue stream is routed to (a `CueRouter`), for the
    /// `Handled`, `InstanceEvent` and `LiveInstances` checks.
    #[serde(default)]
    pub cue_routing: Option<RawCueRouting>,
}

fn two() -> u16 {
    2
}

fn one() -> u16 {
    1
}

/// Where the content comes from.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename = "content source")]
pub enum RawContentRef {
    /// One RON file, relative to the scenario file.
    File(String),
    /// Several RON files (one content), relative to the scenario file.
    Files(Vec<String>),
    /// Every `.ron` file of a directory, relative to the scenario file.
    Dir(String),
    /// Content written inside the scenario, usually as a raw string `r#"( … )"#`.
    Inline(String),
}

/// World capacity overrides (see `WorldConfig`).
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename = "world")]
pub struct RawWorld {
    /// The most live entities.
    pub max_entities: Option<u32>,
    /// The most active effects per entity.
    pub effects_per_entity: Option<u16>,
    /// The most granted abilities per entity.
    pub abilities_per_entity: Option<u16>,
    /// The ability-task pool.
    pub max_tasks: Option<u32>,
    /// The most standalone persistent cues.
    pub max_standalone_cues: Option<u16>,
    /// The most stored specs.
    pub max_stored_specs: Option<u32>,
}

/// The emulated network of mode `Peers`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "network")]
pub struct RawNetwork {
    /// One-way latency in milliseconds.
    #[serde(default = "default_latency")]
    pub latency_ms: u32,
    /// Extra random latency per packet, `0..=jitter_ms`.
    #[serde(default = "default_jitter")]
    pub jitter_ms: u32,
    /// Packets dropped, in percent.
    #[serde(default = "default_loss")]
    pub loss_percent: u32,
    /// GGRS input delay in frames.
    #[serde(default = "default_delay")]
    pub input_delay: u32,
    /// The network's random seed.
    #[serde(default = "default_net_seed")]
    pub seed: u64,
    /// GGRS's prediction window (frames a peer may run ahead of its confirmed inputs).
    #[serde(default = "default_prediction")]
    pub max_prediction: u32,
    /// Conditions of single links between two peers, overriding the ones above.
    #[serde(default)]
    pub links: Vec<RawLink>,
}

fn default_prediction() -> u32 {
    8
}

/// The conditions of one link between two peers (both directions).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "link")]
pub struct RawLink {
    /// The two players (peers) the link joins.
    pub between: (u16, u16),
    /// One-way latency in milliseconds (default: the network's).
    #[serde(default)]
    pub latency_ms: Option<u32>,
    /// Extra random latency per packet (default: the network's).
    #[serde(default)]
    pub jitter_ms: Option<u32>,
    /// Packets dropped, in percent (default: the network's).
    #[serde(default)]
    pub loss_percent: Option<u32>,
}

/// Mode `SyncTest`'s settings.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "sync_test")]
pub struct RawSyncTest {
    /// How many frames GGRS rolls back and re-simulates every frame (1 to 16).
    #[serde(default = "default_check_distance")]
    pub check_distance: u32,
}

fn default_check_distance() -> u32 {
    2
}

impl Default for RawSyncTest {
    fn default() -> Self {
        RawSyncTest { check_distance: default_check_distance() }
    }
}

/// Which modes a scenario runs.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename = "modes")]
pub enum RawModes {
    /// Every mode.
    #[default]
    All,
    /// Every mode but these, for a stated reason (printed in every report).
    Except {
        /// The modes left out (never `Plain`).
        modes: Vec<RawMode>,
        /// Why: printed with the report.
        reason: String,
    },
}

fn default_latency() -> u32 {
    30
}
fn default_jitter() -> u32 {
    20
}
fn default_loss() -> u32 {
    5
}
fn default_delay() -> u32 {
    0
}
fn default_net_seed() -> u64 {
    1
}

impl Default for RawNetwork {
    fn default() -> Self {
        RawNetwork {
            latency_ms: default_latency(),
            jitter_ms: default_jitter(),
            loss_percent: default_loss(),
            input_delay: default_delay(),
            seed: default_net_seed(),
            max_prediction: default_prediction(),
            links: Vec::new(),
        }
    }
}

/// A harness mode.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize,
)]
pub enum RawMode {
    /// Plain stepping, every frame confirmed at once (expectations are checked here).
    Plain,
    /// Every frame, roll back a random depth (1–8) and re-simulate.
    Rollback,
    /// Record the inputs into a replay file, decode it and re-simulate it headless.
    Replay,
    /// One GGRS peer per player over the emulated network.
    Peers,
    /// GGRS's own `SyncTestSession`: every frame rolls back `check_distance` frames and
    /// compares checksums.
    SyncTest,
}

/// One entity.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename = "entity")]
pub struct RawEntity {
    /// Attribute sets it carries (each attribute starts at its default).
    #[serde(default)]
    pub attribute_sets: Vec<String>,
    /// Base values overriding the defaults.
    #[serde(default)]
    pub attributes: NamedMap<Num>,
    /// Loose tags it starts with.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Abilities granted at setup.
    #[serde(default)]
    pub abilities: Vec<RawGrant>,
    /// Ability sets granted at setup.
    #[serde(default)]
    pub ability_sets: Vec<String>,
    /// Effects applied at setup, in order.
    #[serde(default)]
    pub effects: Vec<RawSetupEffect>,
    /// The player whose inputs drive its abilities.
    #[serde(default)]
    pub player: Option<u16>,
    /// Where its hit, hurt and push boxes stand (content with boxes).
    #[serde(default)]
    pub at: Option<RawAt>,
}

/// Where an entity stands: its box anchor.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "at")]
pub struct RawAt {
    /// The anchor's x.
    pub x: Num,
    /// The anchor's y.
    #[serde(default)]
    pub y: Num,
    /// Which way it faces (boxes are authored facing right).
    #[serde(default)]
    pub facing: RawFacing,
    /// The content body whose standing boxes it puts out (none: only its moves' boxes).
    #[serde(default)]
    pub body: Option<String>,
}

/// A facing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename = "facing")]
pub enum RawFacing {
    /// Boxes as authored.
    #[default]
    Right,
    /// Boxes mirrored around the anchor.
    Left,
}

/// An ability grant.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "ability_grant")]
pub struct RawGrant {
    /// The ability.
    pub ability: String,
    /// Its level.
    #[serde(default = "one")]
    pub level: u16,
    /// The input id it is bound to (default: the ability's own `input`).
    #[serde(default)]
    pub input: Option<u8>,
}

/// An effect applied at setup.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "setup_effect")]
pub struct RawSetupEffect {
    /// The effect.
    pub effect: String,
    /// The source entity (default: the entity itself).
    #[serde(default)]
    pub from: Option<String>,
    /// The level.
    #[serde(default = "one")]
    pub level: u16,
    /// SetByCaller values by tag.
    #[serde(default)]
    pub set_by_caller: NamedMap<Num>,
    /// Overrides the duration (frames).
    #[serde(default)]
    pub duration: Option<u32>,
}

/// A script entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "step")]
pub struct RawStep {
    /// The frame it happens in.
    pub frame: u32,
    /// Repeat it every frame (or every `every` frames) up to and including this frame.
    #[serde(default)]
    pub until: Option<u32>,
    /// The repetition interval with `until` (default 1).
    #[serde(default)]
    pub every: Option<u32>,
    /// When in the frame a direct operation runs (default `AfterAbilities`); not for inputs.
    #[serde(default)]
    pub phase: Option<RawPhase>,
    /// What happens.
    #[serde(rename = "do")]
    pub op: RawOp,
}

/// When in its frame a direct operation runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename = "phase")]
pub enum RawPhase {
    /// After expiry (P2) and before the abilities (P4): the frame's activations see it.
    BeforeAbilities,
    /// In the game-systems phase (P6), after the abilities, tasks and game systems.
    #[default]
    AfterAbilities,
}

/// An input button: an ability input id (`0`–`29`), or `"Confirm"` / `"Cancel"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawButton {
    /// An ability input id.
    Id(u8),
    /// The generic confirm button.
    Confirm,
    /// The generic cancel button.
    Cancel,
}

impl<'de> Deserialize<'de> for RawButton {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RawButton;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an input id 0 to 29, or \"Confirm\" or \"Cancel\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawButton, E> {
                if v <= 29 {
                    Ok(RawButton::Id(v as u8))
                } else {
                    Err(E::custom(format!("input id {v} is out of range (ids are 0 to 29)")))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawButton, E> {
                if v < 0 {
                    return Err(E::custom(format!("input id {v} is negative (ids are 0 to 29)")));
                }
                self.visit_u64(v as u64)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawButton, E> {
                match v {
                    "Confirm" => Ok(RawButton::Confirm),
                    "Cancel" => Ok(RawButton::Cancel),
                    _ => Err(E::custom(format!(
                        "unknown button \"{}\" (write an input id 0 to 29, \"Confirm\" or \
                         \"Cancel\")",
                        crate::content::error::Clip(v)
                    ))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A scripted operation.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename = "operation")]
pub enum RawOp {
    /// Hold a button from this frame on.
    Press {
        /// The player.
        player: u16,
        /// The button.
        input: RawButton,
    },
    /// Stop holding a button from this frame on.
    Release {
        /// The player.
        player: u16,
        /// The button.
        input: RawButton,
    },
    /// Hold a button for this frame only.
    Tap {
        /// The player.
        player: u16,
        /// The button.
        input: RawButton,
    },
    /// Apply an effect.
    ApplyEffect {
        /// The effect.
        effect: String,
        /// The target.
        on: String,
        /// The source (default: the target).
        #[serde(default)]
        from: Option<String>,
        /// The level.
        #[serde(default = "one")]
        level: u16,
        /// SetByCaller values by tag.
        #[serde(default)]
        set_by_caller: NamedMap<Num>,
        /// Overrides the duration (frames).
        #[serde(default)]
        duration: Option<u32>,
        /// Names the application: an `Applied(label: …)` check reads its result.
        #[serde(default)]
        label: Option<String>,
    },
    /// Apply a runtime spec with no content definition: instant modifiers of base values.
    ApplyInline {
        /// The target.
        on: String,
        /// The source (default: the target).
        #[serde(default)]
        from: Option<String>,
        /// The modifiers, applied in order.
        modifiers: Vec<RawInlineMod>,
        /// Names the application: an `Applied(label: …)` check reads its result.
        #[serde(default)]
        label: Option<String>,
    },
    /// Set the remaining time of the first active instance of an effect (0 expires it).
    SetRemaining {
        /// The entity.
        on: String,
        /// The effect.
        effect: String,
        /// Frames from now.
        frames: u32,
    },
    /// Extend (negative: shorten) the remaining time of the first active instance of an effect.
    ExtendEffect {
        /// The entity.
        on: String,
        /// The effect.
        effect: String,
        /// Frames to add.
        frames: i32,
    },
    /// Remove stacks of the first active instance of an effect (all when it has no more).
    RemoveStacks {
        /// The entity.
        on: String,
        /// The effect.
        effect: String,
        /// How many stacks.
        stacks: u16,
    },
    /// Remove every active effect on an entity matching all the given filters.
    RemoveEffects {
        /// The entity.
        on: String,
        /// Only this effect.
        #[serde(default)]
        effect: Option<String>,
        /// Only effects owning any of these tags.
        #[serde(default)]
        with_any_tag: Vec<String>,
        /// Only effects owning all of these tags.
        #[serde(default)]
        with_all_tags: Vec<String>,
        /// Only effects applied by this entity.
        #[serde(default)]
        from: Option<String>,
        /// Only effects modifying this attribute.
        #[serde(default)]
        modifying: Option<String>,
    },
    /// Add one count of a loose tag.
    AddTag {
        /// The entity.
        on: String,
        /// The tag.
        tag: String,
    },
    /// Remove one count of a loose tag.
    RemoveTag {
        /// The entity.
        on: String,
        /// The tag.
        tag: String,
    },
    /// Set a loose tag's count.
    SetTagCount {
        /// The entity.
        on: String,
        /// The tag.
        tag: String,
        /// The count.
        count: u16,
    },
    /// Set an attribute's base value.
    SetBase {
        /// The entity.
        on: String,
        /// The attribute.
        attribute: String,
        /// The value.
        value: Num,
    },
    /// Send a gameplay event.
    SendEvent {
        /// The receiver.
        on: String,
        /// The event tag.
        tag: String,
        /// The instigator (default: the receiver).
        #[serde(default)]
        from: Option<String>,
        /// The event magnitude.
        #[serde(default)]
        magnitude: Option<Num>,
    },
    /// Try to activate an ability.
    Activate {
        /// The owner.
        on: String,
        /// The ability.
        ability: String,
    },
    /// Cancel an ability.
    CancelAbility {
        /// The owner.
        on: String,
        /// The ability.
        ability: String,
    },
    /// Cancel every active ability of an owner whose tags match any of `with_any_tag`
    /// (all of them when empty).
    CancelAbilities {
        /// The owner.
        on: String,
        /// Ability tags.
        #[serde(default)]
        with_any_tag: Vec<String>,
    },
    /// End an ability (not cancelled).
    EndAbility {
        /// The owner.
        on: String,
        /// The ability.
        ability: String,
    },
    /// Grant an ability.
    GrantAbility {
        /// The owner.
        on: String,
        /// The ability.
        ability: String,
        /// Its level.
        #[serde(default = "one")]
        level: u16,
        /// The input id.
        #[serde(default)]
        input: Option<u8>,
    },
    /// Remove a granted ability (cancelled if active).
    RemoveAbility {
        /// The owner.
        on: String,
        /// The ability.
        ability: String,
    },
    /// Play a burst cue.
    ExecuteCue {
        /// The entity.
        on: String,
        /// The `GameplayCue.*` tag.
        tag: String,
        /// Its magnitude.
        #[serde(default)]
        magnitude: Option<Num>,
    },
    /// Despawn an entity.
    Despawn {
        /// The entity.
        on: String,
    },
    /// Set a granted ability's extra cooldown tags at run time (none or one tag), in place of
    /// its definition's `cooldown_tags`.
    SetCooldownTags {
        /// The owner.
        on: String,
        /// The ability.
        ability: String,
        /// The tags (at most one).
        tags: Vec<String>,
    },
    /// Return a granted ability to its definition's `cooldown_tags`.
    ResetCooldownTags {
        /// The owner.
        on: String,
        /// The ability.
        ability: String,
    },
}

/// The presentation side of a scenario: cue handlers by tag, translations, suppression and
/// local cues, mirroring what `CueRouter` supports.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename = "cue_routing")]
pub struct RawCueRouting {
    /// The handlers, by name.
    #[serde(default)]
    pub handlers: NamedMap<RawHandler>,
    /// Tag translations applied before routing (exact tags): `{ "from": "to" }`.
    #[serde(default)]
    pub translate: NamedMap<String>,
    /// Entities whose cues are not routed, optionally only for cues of some frames.
    #[serde(default)]
    pub suppress: Vec<RawSuppress>,
    /// Presentation-only cues made by the game's presentation code.
    #[serde(default)]
    pub local: Vec<RawLocalStep>,
}

/// A handler kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename = "handler kind")]
pub enum RawHandlerKind {
    /// Stateless (GAS `GameplayCueNotify_Static`).
    #[default]
    Static,
    /// One reference-counted instance per key (GAS `GameplayCueNotify_Actor`).
    Instanced,
}

/// A cue handler.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "handler")]
pub struct RawHandler {
    /// The `GameplayCue.*` tag it handles (with its descendants that have no handler).
    pub tag: String,
    /// Static or instanced.
    #[serde(default)]
    pub kind: RawHandlerKind,
    /// Static handlers: stop the walk to the handlers of parent tags.
    #[serde(default, rename = "override")]
    pub is_override: Option<bool>,
    /// Instanced handlers: one instance per instigator.
    #[serde(default)]
    pub unique_per_instigator: Option<bool>,
}

/// A suppression window.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "suppress")]
pub struct RawSuppress {
    /// The entity.
    pub on: String,
    /// The first cue frame suppressed (default 0).
    #[serde(default)]
    pub from: Option<u32>,
    /// The last cue frame suppressed (default: the end).
    #[serde(default)]
    pub until: Option<u32>,
}

/// A local cue step.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "local_step")]
pub struct RawLocalStep {
    /// The presentation frame (after frame `frame` was simulated and presented).
    pub frame: u32,
    /// What presentation does.
    #[serde(rename = "do")]
    pub op: RawLocalOp,
}

/// A local (presentation-only) cue operation.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename = "local operation")]
pub enum RawLocalOp {
    /// A local burst.
    Execute {
        /// The entity.
        on: String,
        /// The `GameplayCue.*` tag.
        tag: String,
        /// Its magnitude.
        #[serde(default)]
        magnitude: Option<Num>,
        /// The execution options.
        #[serde(default)]
        options: RawCueOptions,
    },
    /// A local persistent cue, named for its `Remove`.
    Add {
        /// The entity.
        on: String,
        /// The `GameplayCue.*` tag.
        tag: String,
        /// Its name.
        name: String,
        /// Its magnitude.
        #[serde(default)]
        magnitude: Option<Num>,
        /// The execution options.
        #[serde(default)]
        options: RawCueOptions,
    },
    /// Removes a local persistent cue.
    Remove {
        /// The name given to its `Add`.
        name: String,
    },
}

/// `CueOptions`.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename = "options")]
pub struct RawCueOptions {
    /// Skip the translation.
    #[serde(default)]
    pub ignore_translation: bool,
    /// Route even on a suppressed entity.
    #[serde(default)]
    pub ignore_suppression: bool,
    /// Skip the handlers (GAS: the global notifies).
    #[serde(default)]
    pub ignore_notifies: bool,
}

/// A handler call to count (`Play` and `Added` accepted as for [`RawCueKind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename = "handler event")]
pub enum RawHandlerEvent {
    /// A burst.
    #[serde(alias = "Play")]
    Executed,
    /// A persistent cue became active (instanced: its instance's first).
    #[serde(alias = "Added")]
    OnActive,
    /// A persistent cue started being shown (instanced: its instance's first).
    WhileActive,
    /// A persistent cue's show ended (instanced: the instance's last reference).
    Removed,
}

/// An instance lifecycle event to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename = "instance event")]
pub enum RawInstanceEvent {
    /// An instance came alive (new or from the pool).
    Created,
    /// An instance was released (its last reference ended).
    Destroyed,
}

/// A modifier of an inline runtime spec.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "inline_modifier")]
pub struct RawInlineMod {
    /// The attribute.
    pub attribute: String,
    /// The operation.
    pub op: crate::attribute::ModOp,
    /// The magnitude.
    pub value: Num,
}

/// An expectation entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "expectation")]
pub struct RawExpect {
    /// The frame (state after this frame was stepped).
    pub frame: u32,
    /// Checks every frame up to and including this one (state checks), or counts events in
    /// `frame..=until` (event checks).
    #[serde(default)]
    pub until: Option<u32>,
    /// What must hold.
    pub that: RawCheck,
}

/// An activation outcome to expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename = "activation outcome")]
pub enum RawActivation {
    /// An attempt in the frame succeeded.
    Succeeded,
    /// The last attempt in the frame failed for this reason.
    Failed(FailureKind),
    /// No attempt in the frame.
    NotAttempted,
}

/// A cooldown state to expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename = "cooldown state")]
pub enum RawCooldown {
    /// No cooldown tag is present.
    Ready,
    /// Remaining and total frames of the longest cooldown.
    Remaining(u32, u32),
}

/// A presenter call kind to count. The Rust names are accepted too: `Play` (the presenter's
/// call for a burst) for `Executed`, `Added` (a cue record's kind, `CueKind::Added`) for
/// `OnActive`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename = "cue kind")]
pub enum RawCueKind {
    /// A burst was played (`Executed`).
    #[serde(alias = "Play")]
    Executed,
    /// A persistent cue became active.
    #[serde(alias = "Added")]
    OnActive,
    /// A persistent cue started being shown.
    WhileActive,
    /// A persistent cue's show ended (any reason).
    Removed,
}

/// A check.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename = "check")]
pub enum RawCheck {
    /// An attribute's values.
    Attribute {
        /// The entity.
        on: String,
        /// The attribute.
        attribute: String,
        /// The current value.
        #[serde(default)]
        current: Option<Num>,
        /// The base value.
        #[serde(default)]
        base: Option<Num>,
        /// Allowed absolute difference (default exact).
        #[serde(default)]
        tolerance: Option<Num>,
    },
    /// A tag.
    Tag {
        /// The entity.
        on: String,
        /// The tag.
        tag: String,
        /// Whether it is present.
        #[serde(default)]
        present: Option<bool>,
        /// Its count.
        #[serde(default)]
        count: Option<u32>,
        /// Its count is at least this.
        #[serde(default)]
        at_least: Option<u32>,
        /// Its count is at most this.
        #[serde(default)]
        at_most: Option<u32>,
        /// Count only the exact tag, not its children.
        #[serde(default)]
        exact: bool,
    },
    /// An active effect.
    Effect {
        /// The entity.
        on: String,
        /// The effect.
        effect: String,
        /// Whether an instance is active.
        #[serde(default)]
        present: Option<bool>,
        /// Stacks of the first instance.
        #[serde(default)]
        stacks: Option<u16>,
        /// Remaining frames of the first instance.
        #[serde(default)]
        remaining: Option<u32>,
        /// How many instances.
        #[serde(default)]
        instances: Option<u32>,
        /// Whether the first instance is inhibited.
        #[serde(default)]
        inhibited: Option<bool>,
    },
    /// A granted ability.
    Ability {
        /// The owner.
        on: String,
        /// The ability.
        ability: String,
        /// Whether it is granted.
        #[serde(default)]
        granted: Option<bool>,
        /// Whether it is active.
        #[serde(default)]
        active: Option<bool>,
        /// The outcome of the last activation attempt in the frame.
        #[serde(default)]
        activation: Option<RawActivation>,
        /// Its cooldown.
        #[serde(default)]
        cooldown: Option<RawCooldown>,
    },
    /// Presenter calls in `frame..=until`.
    Cue {
        /// The `GameplayCue.*` tag (exact).
        tag: String,
        /// The call kind.
        kind: RawCueKind,
        /// Only on this entity.
        #[serde(default)]
        on: Option<String>,
        /// Only calls whose parameters carry this magnitude.
        #[serde(default)]
        magnitude: Option<Num>,
        /// Only calls whose parameters name this instigator.
        #[serde(default)]
        instigator: Option<String>,
        /// Exactly this many (default: at least one).
        #[serde(default)]
        count: Option<u32>,
        /// At least this many.
        #[serde(default)]
        at_least: Option<u32>,
        /// At most this many.
        #[serde(default)]
        at_most: Option<u32>,
    },
    /// Attribute change events in `frame..=until`.
    AttributeChanged {
        /// The entity.
        on: String,
        /// The attribute.
        attribute: String,
        /// Only changes from this value.
        #[serde(default)]
        from: Option<Num>,
        /// Only changes to this value.
        #[serde(default)]
        to: Option<Num>,
        /// Exactly this many (default: at least one).
        #[serde(default)]
        count: Option<u32>,
        /// At least this many.
        #[serde(default)]
        at_least: Option<u32>,
        /// At most this many.
        #[serde(default)]
        at_most: Option<u32>,
    },
    /// Whether an entity is alive.
    Alive {
        /// The entity.
        on: String,
        /// Alive or not.
        alive: bool,
    },
    /// The world checksum after the frame.
    Checksum(u64),
    /// The results of a labelled `ApplyEffect` / `ApplyInline` in `frame..=until`: it ran at
    /// least once and every result is this one.
    Applied {
        /// The operation's label.
        label: String,
        /// The result.
        result: RawApplied,
    },
    /// Effect events in `frame..=until`.
    EffectEvent {
        /// The entity (the effect's target).
        on: String,
        /// Only events of this effect.
        #[serde(default)]
        effect: Option<String>,
        /// The event.
        event: RawEffectEvent,
        /// `StackChanged`: stacks before; `DurationChanged`: remaining frames before.
        #[serde(default)]
        from: Option<u32>,
        /// `StackChanged`: stacks after; `DurationChanged`: remaining frames after.
        #[serde(default)]
        to: Option<u32>,
        /// Exactly this many (default: at least one).
        #[serde(default)]
        count: Option<u32>,
        /// At least this many.
        #[serde(default)]
        at_least: Option<u32>,
        /// At most this many.
        #[serde(default)]
        at_most: Option<u32>,
    },
    /// Ability events in `frame..=until`.
    AbilityEvent {
        /// The owner.
        on: String,
        /// Only events of this ability.
        #[serde(default)]
        ability: Option<String>,
        /// The event.
        event: RawAbilityEvent,
        /// Exactly this many (default: at least one).
        #[serde(default)]
        count: Option<u32>,
        /// At least this many.
        #[serde(default)]
        at_least: Option<u32>,
        /// At most this many.
        #[serde(default)]
        at_most: Option<u32>,
    },
    /// Calls a cue handler of `cue_routing` received in `frame..=until`.
    Handled {
        /// The handler's name.
        handler: String,
        /// The call.
        event: RawHandlerEvent,
        /// Only cues with this tag as routed (after translation, exact).
        #[serde(default)]
        tag: Option<String>,
        /// Only cues emitted with this tag (before translation, exact).
        #[serde(default)]
        original_tag: Option<String>,
        /// Only cues on this entity.
        #[serde(default)]
        on: Option<String>,
        /// Only cues whose parameters name this instigator.
        #[serde(default)]
        instigator: Option<String>,
        /// Only cues whose parameters carry this magnitude.
        #[serde(default)]
        magnitude: Option<Num>,
        /// Only local cues (`true`) or only simulated ones (`false`).
        #[serde(default)]
        local: Option<bool>,
        /// Exactly this many (default: at least one).
        #[serde(default)]
        count: Option<u32>,
        /// At least this many.
        #[serde(default)]
        at_least: Option<u32>,
        /// At most this many.
        #[serde(default)]
        at_most: Option<u32>,
    },
    /// Instances of an instanced handler created or destroyed in `frame..=until`.
    InstanceEvent {
        /// The handler's name.
        handler: String,
        /// The event.
        event: RawInstanceEvent,
        /// Only instances on this entity.
        #[serde(default)]
        on: Option<String>,
        /// Exactly this many (default: at least one).
        #[serde(default)]
        count: Option<u32>,
        /// At least this many.
        #[serde(default)]
        at_least: Option<u32>,
        /// At most this many.
        #[serde(default)]
        at_most: Option<u32>,
    },
    /// Live instances of an instanced handler after the frame's presentation.
    LiveInstances {
        /// The handler's name.
        handler: String,
        /// Only instances on this entity.
        #[serde(default)]
        on: Option<String>,
        /// Exactly this many instances.
        #[serde(default)]
        count: Option<u32>,
        /// At least this many.
        #[serde(default)]
        at_least: Option<u32>,
        /// At most this many.
        #[serde(default)]
        at_most: Option<u32>,
        /// The references (persistent cues sharing them) of these instances, summed.
        #[serde(default)]
        refs: Option<u32>,
    },
    /// Hits delivered by the box pass in `frame..=until`.
    Hit {
        /// Only hits by this entity's hit boxes (the attacker: a fighter, a projectile).
        #[serde(default)]
        by: Option<String>,
        /// Only hits on this entity.
        #[serde(default)]
        on: Option<String>,
        /// Only hits of a hit box of this timeline (a move).
        #[serde(default)]
        timeline: Option<String>,
        /// Only hits of the hit box with this index in its timeline's or body's `boxes` (its
        /// window).
        #[serde(default, rename = "box")]
        index: Option<u16>,
        /// Exactly this many (default: at least one).
        #[serde(default)]
        count: Option<u32>,
        /// At least this many.
        #[serde(default)]
        at_least: Option<u32>,
        /// At most this many.
        #[serde(default)]
        at_most: Option<u32>,
    },
    /// Where an entity's boxes stand after the frame (its box anchor, as the game reports it).
    Position {
        /// The entity.
        on: String,
        /// Its x.
        #[serde(default)]
        x: Option<Num>,
        /// Its y.
        #[serde(default)]
        y: Option<Num>,
        /// Its facing.
        #[serde(default)]
        facing: Option<RawFacing>,
    },
    /// Tag count events in `frame..=until`.
    TagEvent {
        /// The entity.
        on: String,
        /// The tag (its hierarchical count: the tag and its children).
        tag: String,
        /// The event.
        event: RawTagEvent,
        /// Exactly this many (default: at least one).
        #[serde(default)]
        count: Option<u32>,
        /// At least this many.
        #[serde(default)]
        at_least: Option<u32>,
        /// At most this many.
        #[serde(default)]
        at_most: Option<u32>,
    },
}

/// The result of an application to expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename = "application result")]
pub enum RawApplied {
    /// An instant spec executed.
    Executed,
    /// A new active effect.
    Added,
    /// An existing stack was raised, refreshed or left at its limit.
    Stacked,
    /// A custom requirement redirected it to an existing effect.
    Redirected,
    /// It failed for this reason.
    Failed(RawApplyFailure),
}

/// Why an application failed (mirrors `ApplyError`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename = "application failure")]
pub enum RawApplyFailure {
    /// The target is not alive.
    InvalidTarget,
    /// The target's tags fail the application requirements.
    Requirements,
    /// An active effect grants immunity.
    Immune,
    /// A custom application requirement refused.
    CustomRequirement,
    /// A SetByCaller value is missing.
    MissingSetByCaller,
    /// The stack is full and overflow is denied.
    StackOverflowDenied,
    /// The target's effect capacity is exhausted.
    Capacity,
}

/// An effect event to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename = "effect event")]
pub enum RawEffectEvent {
    /// A duration or infinite effect became active.
    Added,
    /// An active effect left, for any reason.
    Removed,
    /// Its duration ran out.
    Expired,
    /// Removed by a call (script, ability, game code).
    RemovedByCall,
    /// Removed by another effect's `remove_effects_with_tags`.
    RemovedByTags,
    /// Its target was despawned.
    TargetDespawned,
    /// An instant spec or a periodic effect executed.
    Executed,
    /// Its stack count changed (`from`/`to`: stacks).
    StackChanged,
    /// Its expiry changed (`from`/`to`: remaining frames).
    DurationChanged,
    /// Ongoing requirements switched it off.
    Inhibited,
    /// Ongoing requirements switched it back on.
    Uninhibited,
    /// An application was refused by immunity.
    ImmunityBlocked,
    /// An application failed for another reason.
    ApplyFailed,
}

/// An ability event to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename = "ability event")]
pub enum RawAbilityEvent {
    /// It was granted.
    Granted,
    /// It was removed.
    Removed,
    /// It activated.
    Activated,
    /// An activation attempt failed (any reason).
    ActivationFailed,
    /// An activation failed because the cost or cooldown could not be applied at commit.
    CommitFailed,
    /// Cost and/or cooldown were committed.
    Committed,
    /// It ended, cancelled or not.
    Ended,
    /// It ended without being cancelled.
    EndedNormally,
    /// It was cancelled (`was_cancelled`).
    Cancelled,
}

/// A tag event to count (the tag's hierarchical count).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename = "tag event")]
pub enum RawTagEvent {
    /// The tag appeared or disappeared (GAS `NewOrRemoved`).
    NewOrRemoved,
    /// The tag appeared (count 0 → more).
    Added,
    /// The tag disappeared (count → 0).
    Removed,
    /// Any change of its count (GAS `AnyCountChange`).
    AnyCountChange,
}
