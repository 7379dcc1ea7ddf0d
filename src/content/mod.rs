//! Content: tags, attribute sets, curves and effect definitions written in RON, validated and
//! frozen into an immutable [`Content`] with a stable hash.
//!
//! # The file format
//!
//! A content file is one RON struct whose sections are all optional. A content directory merges
//! the sections of all its `*.ron` files (in file-name order; a name defined twice is an error
//! that names both places).
//!
//! ```
//! use rollback_abilities::Content;
//!
//! let content = Content::from_ron_str(r#"(
//!     settings: (tick_rate: 60, default_mul_policy: Compound),
//!     tags: ["State.Debuff.Stun", "GameplayCue.Poison", "Data.Damage"],
//!     attribute_sets: {
//!         "Vitals": (attributes: {
//!             "Health": (default: 100, min: Const(0), max: Attr("MaxHealth")),
//!             "MaxHealth": (default: 100),
//!         }),
//!     },
//!     curves: { "PoisonDamage": (points: [(1, 4), (5, 12)]) },
//!     effects: {
//!         "Poison": (
//!             duration: Seconds(5),
//!             period: Frames(60),
//!             modifiers: [(attribute: "Health", op: Add,
//!                          magnitude: Scalable(coef: -1, curve: "PoisonDamage"))],
//!             stacking: (kind: ByTarget, limit: 3),
//!             cues: [(tag: "GameplayCue.Poison")],
//!         ),
//!     },
//! )"#)?;
//! assert_eq!(content.effect_def(content.effect("Poison")?).period, 60);
//! # Ok::<(), rollback_abilities::ContentError>(())
//! ```
//!
//! Numbers may be written as integers, decimals (`1.1`) or strings (`"1.1"`); decimals are
//! converted exactly from their text, never through float arithmetic. Durations may be written
//! in frames (`Frames(300)`) or seconds (`Seconds(4.15)` → `ceil(4.15 × 60) = 249` frames,
//! computed exactly). The full reference is in `docs/guide.md`.
//!
//! # Errors
//!
//! Every problem is a [`ContentError`] naming the file, the line and column, the definition path
//! and what is wrong, for example
//! `effects.ron:14:17: effects.Poison.modifiers[1].attribute: unknown attribute "Helth" (did you mean "Health"?)`.

pub mod boxes;
pub mod def;
pub(crate) mod error;
mod freeze;
pub(crate) mod locate;
pub mod raw;

pub use error::{ContentError, ContentErrorKind};

use crate::id::{
    AbilityDefId, AbilitySetId, AttrId, AttrSetId, CurveId, EffectDefId, FnId, TagId, TimelineId,
};
use crate::tag::TagRegistry;
use ahash::AHashMap;
use def::{
    AbilityDef, AbilitySetDef, AttrDef, AttrSetDef, CancelRuleDef, ContentSettings, CueDef,
    CurveDef, EffectDef, FnRef, TimelineDef,
};
use std::path::Path;

/// Frozen, validated content: the definitions every peer must share (their hash is part of the
/// session handshake).
///
/// # Content
///
/// Content: tags, attribute sets, curves and effect definitions written in RON, validated and
/// frozen into an immutable [`Content`] with a stable hash.
///
/// ## The file format
///
/// A content file is one RON struct whose sections are all optional. A content directory merges
/// the sections of all its `*.ron` files (in file-name order; a name defined twice is an error
/// that names both places).
///
/// ```
/// use rollback_abilities::Content;
///
/// let content = Content::from_ron_str(r#"(
///     settings: (tick_rate: 60, default_mul_policy: Compound),
///     tags: ["State.Debuff.Stun", "GameplayCue.Poison", "Data.Damage"],
///     attribute_sets: {
///         "Vitals": (attributes: {
///             "Health": (default: 100, min: Const(0), max: Attr("MaxHealth")),
///             "MaxHealth": (default: 100),
///         }),
///     },
///     curves: { "PoisonDamage": (points: [(1, 4), (5, 12)]) },
///     effects: {
///         "Poison": (
///             duration: Seconds(5),
///             period: Frames(60),
///             modifiers: [(attribute: "Health", op: Add,
///                          magnitude: Scalable(coef: -1, curve: "PoisonDamage"))],
///             stacking: (kind: ByTarget, limit: 3),
///             cues: [(tag: "GameplayCue.Poison")],
///         ),
///     },
/// )"#)?;
/// assert_eq!(content.effect_def(content.effect("Poison")?).period, 60);
/// # Ok::<(), rollback_abilities::ContentError>(())
/// ```
///
/// Numbers may be written as integers, decimals (`1.1`) or strings (`"1.1"`); decimals are
/// converted exactly from their text, never through float arithmetic. Durations may be written
/// in frames (`Frames(300)`) or seconds (`Seconds(4.15)` → `ceil(4.15 × 60) = 249` frames,
/// computed exactly). The full reference is in `docs/guide.md`.
///
/// ## Errors
///
/// Every problem is a [`ContentError`] naming the file, the line and column, the definition path
/// and what is wrong, for example
/// `effects.ron:14:17: effects.Poison.modifiers[1].attribute: unknown attribute "Helth" (did you mean "Health"?)`.
#[derive(Clone, Debug)]
pub struct Content {
    pub(crate) settings: ContentSettings,
    pub(crate) tags: TagRegistry,
    pub(crate) attrs: Vec<AttrDef>,
    pub(crate) sets: Vec<AttrSetDef>,
    pub(crate) curves: Vec<CurveDef>,
    pub(crate) effects: Vec<EffectDef>,
    pub(crate) abilities: Vec<AbilityDef>,
    pub(crate) ability_sets: Vec<AbilitySetDef>,
    pub(crate) timelines: Vec<TimelineDef>,
    pub(crate) cancel_rules: Vec<CancelRuleDef>,
    /// The bodies' standing boxes, in name order.
    pub(crate) bodies: Vec<boxes::BodyDef>,
    pub(crate) cues: Vec<CueDef>,
    /// The policy of every tag (nearest ancestor with a cue definition; `Predicted` default).
    pub(crate) cue_policy: Vec<raw::CuePolicy>,
    pub(crate) functions: Vec<FnRef>,
    pub(crate) attr_lookup: AHashMap<String, AttrId>,
    pub(crate) set_lookup: AHashMap<String, AttrSetId>,
    pub(crate) curve_lookup: AHashMap<String, CurveId>,
    pub(crate) effect_lookup: AHashMap<String, EffectDefId>,
    pub(crate) ability_lookup: AHashMap<String, AbilityDefId>,
    pub(crate) hash: u64,
    /// Lookups derived from the definitions for the simulation's hot paths (not hashed: they
    /// are a function of what is).
    pub(crate) accel: Accel,
}

/// Facts about the frozen definitions that the step asks on every work item, computed once.
#[derive(Clone, Debug, Default)]
pub(crate) struct Accel {
    /// Per effect definition: it can make its target immune (immunity tags or query).
    pub immune: Vec<bool>,
    /// Per effect definition: it blocks abilities by tag while active.
    pub blocks_abilities: Vec<bool>,
    /// Some effect definition can make its target immune.
    pub any_immune: bool,
    /// Per effect definition: an application to a live target can fail only for want of an
    /// effect slot (no application or custom requirements, no stack denying overflow): what an
    /// ability's commit checks without building its specs.
    pub applies_freely: Vec<bool>,
    /// Per effect definition: `World::make_spec` can capture a source value for it (some
    /// modifier, duration, period or scoped magnitude is a source snapshot capture or a
    /// custom calculation, or it has executions). The others' specs capture nothing.
    pub make_captures: Vec<bool>,
    /// Some effect definition gives hitstop (to its target or its instigator) on application.
    pub any_hitstop: bool,
    /// Per effect definition: the attributes its aggregated (non-periodic) modifiers target, one
    /// bit per attribute id; ids from 127 on share bit 127 (a superset is safe).
    pub effect_attrs: Vec<u128>,
    /// The union of [`Accel::effect_attrs`]: an attribute outside it aggregates to its base.
    pub aggregated_attrs: u128,
    /// Every tag some effect's ongoing requirements test: only a change of one of these tags'
    /// presence can switch an effect off or on.
    pub ongoing_tags: crate::tag::TagSet,
    /// Every tag an ability trigger reacts to being added or present.
    pub trigger_tags: crate::tag::TagSet,
    /// Every tag a cancel rule reacts to.
    pub cancel_rule_tags: crate::tag::TagSet,
}

impl Accel {
    /// The bit of an attribute in [`Accel::effect_attrs`].
    #[inline]
    pub fn attr_bit(a: crate::id::AttrId) -> u128 {
        1u128 << a.index().min(127)
    }

    pub(crate) fn new(c: &Content) -> Accel {
        let effects = &c.effects;
        let immune: Vec<bool> = effects
            .iter()
            .map(|d| !d.immunity_tags.is_empty() || d.immunity_query.is_some())
            .collect();
        let effect_attrs: Vec<u128> = effects
            .iter()
            .map(|d| {
                // Instant and periodic effects execute on base values; only the others'
                // modifiers take part in aggregation.
                if d.is_periodic() || d.is_instant() {
                    0
                } else {
                    d.modifiers.iter().fold(0u128, |m, md| m | Accel::attr_bit(md.attr))
                }
            })
            .collect();
        let mut ongoing_tags = crate::tag::TagSet::EMPTY;
        for d in effects {
            let r = &d.ongoing_requirements;
            ongoing_tags.union_with(&r.require_all);
            ongoing_tags.union_with(&r.ignore_any);
            if let Some(e) = r.query.as_ref().and_then(|q| q.expr.as_ref()) {
                e.tags(&mut ongoing_tags);
            }
        }
        let mut trigger_tags = crate::tag::TagSet::EMPTY;
        for d in &c.abilities {
            for t in &d.triggers {
                if let def::TriggerDef::TagAdded(x) | def::TriggerDef::TagPresent(x) = t {
                    trigger_tags.insert(*x);
                }
            }
        }
        let mut cancel_rule_tags = crate::tag::TagSet::EMPTY;
        for r in &c.cancel_rules {
            cancel_rule_tags.insert(r.tag);
        }
        Accel {
            applies_freely: effects
                .iter()
                .map(|d| {
                    d.application_requirements.is_empty()
                        && d.custom_requirements.is_empty()
                        && !d.stacking.is_some_and(|s| s.deny_overflow)
                })
                .collect(),
            blocks_abilities: effects.iter().map(|d| !d.blocked_ability_tags.is_empty()).collect(),
            make_captures: effects
                .iter()
                .map(|d| {
                    let captures = |m: &def::MagnitudeDef| match m {
                        def::MagnitudeDef::Attribute { side, snapshot, .. } => {
                            *side == raw::CaptureSide::Source && *snapshot
                        }
                        def::MagnitudeDef::Custom { .. } => true,
                        _ => false,
                    };
                    !d.executions.is_empty()
                        || d.modifiers.iter().any(|m| captures(&m.magnitude))
                        || d.extra_magnitudes().any(captures)
                })
                .collect(),
            any_hitstop: effects.iter().any(|d| d.hitstop != 0 || d.instigator_hitstop != 0),
            aggregated_attrs: effect_attrs.iter().fold(0, |m, a| m | a),
            any_immune: immune.iter().any(|i| *i),
            immune,
            effect_attrs,
            ongoing_tags,
            trigger_tags,
            cancel_rule_tags,
        }
    }
}

/// Collects content sources (files, directories, native tags) and freezes them.
#[derive(Clone, Debug, Default)]
pub struct ContentBuilder {
    files: Vec<(String, String)>,
    native_tags: Vec<String>,
}

impl ContentBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a content file's text under a display name (used in error messages).
    #[must_use]
    pub fn file(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.files.push((name.into(), text.into()));
        self
    }

    /// Adds every `*.ron` file of a directory, in file-name order.
    pub fn dir(mut self, dir: impl AsRef<Path>) -> Result<Self, ContentError> {
        let dir = dir.as_ref();
        let entries = std::fs::read_dir(dir).map_err(|e| ContentError::io(dir, &e))?;
        let mut paths = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| ContentError::io(dir, &e))?;
            let path = entry.path();
            if path.extension().is_some_and(|x| x == "ron") && path.is_file() {
                paths.push(path);
            }
        }
        paths.sort();
        if paths.is_empty() {
            return Err(ContentError::new(
                ContentErrorKind::Io,
                dir.display().to_string(),
                "the directory holds no *.ron content files",
            ));
        }
        for path in paths {
            let text = std::fs::read_to_string(&path).map_err(|e| ContentError::io(&path, &e))?;
            self.files.push((path.display().to_string(), text));
        }
        Ok(self)
    }

    /// Adds tag names declared by code (for example [`crate::declare_tags!`]'s `NAMES`); they
    /// are merged with the tags of the files.
    #[must_use]
    pub fn native_tags<S: AsRef<str>>(mut self, names: &[S]) -> Self {
        self.native_tags.extend(names.iter().map(|s| s.as_ref().to_string()));
        self
    }

    /// Validates and freezes the content.
    pub fn build(self) -> Result<Content, ContentError> {
        freeze::freeze(&self.files, &self.native_tags)
    }
}

impl Content {
    /// Freezes content from a single RON text.
    pub fn from_ron_str(text: &str) -> Result<Content, ContentError> {
        ContentBuilder::new().file("<inline>", text).build()
    }

    /// Freezes every `*.ron` file of a directory.
    pub fn load_dir(dir: impl AsRef<Path>) -> Result<Content, ContentError> {
        ContentBuilder::new().dir(dir)?.build()
    }

    /// The stable content hash (xxh3-64 over a canonical rendering of the frozen definitions).
    /// Peers, replays and scenarios refuse to run on a mismatch.
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// Global settings.
    pub fn settings(&self) -> &ContentSettings {
        &self.settings
    }

    /// The tag registry.
    pub fn tags(&self) -> &TagRegistry {
        &self.tags
    }

    /// Looks a tag up by name.
    pub fn tag(&self, name: &str) -> Result<TagId, ContentError> {
        self.tags.get(name).ok_or_else(|| {
            ContentError::unknown_name("tag", name, self.tags.names().iter().map(String::as_str))
        })
    }

    /// Looks an attribute up by name.
    pub fn attr(&self, name: &str) -> Result<AttrId, ContentError> {
        self.attr_lookup.get(name).copied().ok_or_else(|| {
            ContentError::unknown_name(
                "attribute",
                name,
                self.attrs.iter().map(|a| a.name.as_str()),
            )
        })
    }

    /// Looks an attribute set up by name.
    pub fn attr_set(&self, name: &str) -> Result<AttrSetId, ContentError> {
        self.set_lookup.get(name).copied().ok_or_else(|| {
            ContentError::unknown_name(
                "attribute set",
                name,
                self.sets.iter().map(|a| a.name.as_str()),
            )
        })
    }

    /// Looks a curve up by name.
    pub fn curve(&self, name: &str) -> Result<CurveId, ContentError> {
        self.curve_lookup.get(name).copied().ok_or_else(|| {
            ContentError::unknown_name("curve", name, self.curves.iter().map(|a| a.name.as_str()))
        })
    }

    /// Looks an effect definition up by name.
    pub fn effect(&self, name: &str) -> Result<EffectDefId, ContentError> {
        self.effect_lookup.get(name).copied().ok_or_else(|| {
            ContentError::unknown_name("effect", name, self.effects.iter().map(|a| a.name.as_str()))
        })
    }

    /// Every attribute definition, in id order.
    pub fn attr_defs(&self) -> &[AttrDef] {
        &self.attrs
    }

    /// One attribute definition.
    ///
    /// # Panics
    ///
    /// If the id does not come from this content.
    pub fn attr_def(&self, id: AttrId) -> &AttrDef {
        &self.attrs[id.index()]
    }

    /// Every attribute set, in id order.
    pub fn attr_set_defs(&self) -> &[AttrSetDef] {
        &self.sets
    }

    /// Every curve, in id order.
    pub fn curve_defs(&self) -> &[CurveDef] {
        &self.curves
    }

    /// Every effect definition, in id order.
    pub fn effect_defs(&self) -> &[EffectDef] {
        &self.effects
    }

    /// One effect definition.
    ///
    /// # Panics
    ///
    /// If the id does not come from this content.
    pub fn effect_def(&self, id: EffectDefId) -> &EffectDef {
        &self.effects[id.index()]
    }

    /// Looks an ability definition up by name.
    pub fn ability(&self, name: &str) -> Result<AbilityDefId, ContentError> {
        self.ability_lookup.get(name).copied().ok_or_else(|| {
            ContentError::unknown_name(
                "ability",
                name,
                self.abilities.iter().map(|a| a.name.as_str()),
            )
        })
    }

    /// Every ability definition, in id order.
    pub fn ability_defs(&self) -> &[AbilityDef] {
        &self.abilities
    }

    /// One ability definition.
    ///
    /// # Panics
    ///
    /// If the id does not come from this content.
    pub fn ability_def(&self, id: AbilityDefId) -> &AbilityDef {
        &self.abilities[id.index()]
    }

    /// The name of an ability (`"?"` for a foreign id).
    pub fn ability_name(&self, id: AbilityDefId) -> &str {
        self.abilities.get(id.index()).map(|a| a.name.as_str()).unwrap_or("?")
    }

    /// Looks an ability set up by name; its index in [`Content::ability_set_defs`].
    pub fn ability_set(&self, name: &str) -> Result<AbilitySetId, ContentError> {
        let at = self.ability_sets.iter().position(|s| s.name == name);
        at.map(|i| AbilitySetId(i as u16)).ok_or_else(|| {
            ContentError::unknown_name(
                "ability set",
                name,
                self.ability_sets.iter().map(|a| a.name.as_str()),
            )
        })
    }

    /// Every ability set, in name order.
    pub fn ability_set_defs(&self) -> &[AbilitySetDef] {
        &self.ability_sets
    }

    /// Looks a timeline up by name; its index in [`Content::timeline_defs`].
    pub fn timeline(&self, name: &str) -> Result<TimelineId, ContentError> {
        let at = self.timelines.iter().position(|s| s.name == name);
        at.map(|i| TimelineId(i as u16)).ok_or_else(|| {
            ContentError::unknown_name(
                "timeline",
                name,
                self.timelines.iter().map(|a| a.name.as_str()),
            )
        })
    }

    /// Every timeline, in name order.
    pub fn timeline_defs(&self) -> &[TimelineDef] {
        &self.timelines
    }

    /// The cue definitions, in tag order.
    pub fn cue_defs(&self) -> &[CueDef] {
        &self.cues
    }

    /// The presentation policy of a cue tag: its own definition's, else its nearest
    /// ancestor's, else `Predicted`.
    pub fn cue_policy(&self, tag: TagId) -> raw::CuePolicy {
        self.cue_policy.get(tag.index()).copied().unwrap_or_default()
    }

    /// The rules cancelling abilities when a tag is added.
    pub fn cancel_rules(&self) -> &[CancelRuleDef] {
        &self.cancel_rules
    }

    /// A body's id by name (its standing boxes: [`Content::body_defs`]).
    pub fn body(&self, name: &str) -> Result<boxes::BodyId, ContentError> {
        self.bodies.iter().position(|b| b.name == name).map(|i| boxes::BodyId(i as u16)).ok_or_else(
            || {
                ContentError::unknown_name(
                    "body",
                    name,
                    self.bodies.iter().map(|b| b.name.as_str()),
                )
            },
        )
    }

    /// Every body's standing boxes, in name order ([`boxes::BodyId`] indexes it).
    pub fn body_defs(&self) -> &[boxes::BodyDef] {
        &self.bodies
    }

    /// Whether any body or timeline declares a box (the world resolves boxes only then).
    pub fn has_boxes(&self) -> bool {
        !self.bodies.is_empty() || self.timelines.iter().any(|t| !t.boxes.is_empty())
    }

    /// Whether any body or timeline declares a hit box (the world keeps who each hit box has
    /// hit only then).
    pub fn has_hit_boxes(&self) -> bool {
        let hit = |b: &boxes::BoxDef| b.kind == boxes::BoxKind::Hit;
        self.bodies.iter().any(|b| b.boxes.iter().any(hit))
            || self.timelines.iter().any(|t| t.boxes.iter().any(hit))
    }

    /// The registered functions content refers to, sorted by name; [`FnId`]s index this list.
    pub fn functions(&self) -> &[FnRef] {
        &self.functions
    }

    /// The function referenced by an id.
    pub fn function(&self, id: FnId) -> Option<&FnRef> {
        self.functions.get(id.index())
    }

    /// The number of attributes.
    pub fn num_attrs(&self) -> usize {
        self.attrs.len()
    }

    /// The name of an attribute (`"?"` for a foreign id).
    pub fn attr_name(&self, id: AttrId) -> &str {
        self.attrs.get(id.index()).map(|a| a.name.as_str()).unwrap_or("?")
    }

    /// The name of an effect (`"?"` for a foreign id).
    pub fn effect_name(&self, id: EffectDefId) -> &str {
        self.effects.get(id.index()).map(|a| a.name.as_str()).unwrap_or("?")
    }

    /// The name of a tag (`"?"` for a foreign id): the same as `content.tags().name(id)`,
    /// named like [`Content::attr_name`], [`Content::effect_name`] and
    /// [`Content::ability_name`].
    pub fn tag_name(&self, id: TagId) -> &str {
        self.tags.name(id)
    }

    /// A canonical RON rendering of the frozen definitions (what the hash covers); useful to
    /// diff two peers' content.
    pub fn canonical_text(&self) -> String {
        freeze::canonical_text(self)
    }
}

/// Declares a struct of typed tag constants resolved from frozen content by name.
///
/// ```
/// use rollback_abilities::{declare_tags, Content};
///
/// declare_tags! {
///     /// The tags this game's code refers to.
///     pub struct Tags {
///         stun: "State.Debuff.Stun",
///         dead: "State.Dead",
///     }
/// }
///
/// let content = Content::from_ron_str("(tags: [\"State.Debuff.Stun\", \"State.Dead\"])")?;
/// let tags = Tags::resolve(&content)?;
/// assert!(content.tags().is_descendant_or_self(tags.stun, content.tag("State")?));
/// // The names can also be registered as native tags before content is frozen:
/// assert_eq!(Tags::NAMES, &["State.Debuff.Stun", "State.Dead"]);
/// # Ok::<(), rollback_abilities::ContentError>(())
/// ```
#[macro_export]
macro_rules! declare_tags {
    ($(#[$m:meta])* $vis:vis struct $name:ident { $($field:ident : $tag:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis struct $name {
            $(
                #[doc = concat!("The tag `", $tag, "`.")]
                pub $field: $crate::TagId,
            )*
        }

        impl $name {
            /// Every tag name this struct refers to, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($tag),*];

            /// Resolves every name against frozen content; an unknown name is an error.
            pub fn resolve(content: &$crate::Content) -> Result<Self, $crate::ContentError> {
                Ok(Self { $($field: content.tag($tag)?,)* })
            }
        }
    };
}
