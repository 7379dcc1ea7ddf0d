//! Parsing and validation: raw scenario → [`Scenario`] with every name resolved and every
//! problem reported with its file, line, column and path.

use super::format::{
    RawActivation, RawButton, RawCheck, RawContentRef, RawCooldown, RawCueKind, RawExpect, RawMode,
    RawOp, RawScenario, RawSetupEffect,
};
use super::{NetworkSpec, Scenario, ScenarioError, ScenarioErrorKind as K};
use crate::content::error::{Clip, ron_message, suggest};
use crate::content::locate::{PathSeg, Position, locate, path_at, render};
use crate::content::raw::{NamedMap, Num};
use crate::content::{Content, ContentBuilder, ContentError};
use crate::id::{AbilityDefId, AttrId, AttrSetId, EffectDefId, TagId};
use crate::num::{Frame, Fx};
use crate::tag::TagSet;
use crate::world::WorldConfig;
use std::path::Path;
use std::sync::Arc;

/// The most frames a scenario may run (about 4.6 hours at 60 Hz).
pub(crate) const MAX_FRAMES: u32 = 1_000_000;
/// The most players (GGRS sessions beyond this are impractical in one process).
const MAX_PLAYERS: u16 = 8;

/// An entity to spawn before frame 0.
#[derive(Clone, Debug)]
pub(crate) struct EntitySetup {
    pub name: String,
    pub sets: Vec<AttrSetId>,
    pub bases: Vec<(AttrId, Fx)>,
    pub tags: Vec<TagId>,
    pub grants: Vec<(AbilityDefId, u16, Option<u8>)>,
    pub ability_sets: Vec<usize>,
    pub effects: Vec<EffectApply>,
    pub player: Option<u16>,
}

/// An effect application.
#[derive(Clone, Debug)]
pub(crate) struct EffectApply {
    pub effect: EffectDefId,
    pub on: usize,
    pub from: usize,
    pub level: u16,
    pub set_by_caller: Vec<(TagId, Fx)>,
    pub duration: Option<u32>,
}

/// Press, release or tap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ButtonKind {
    Press,
    Release,
    Tap,
}

/// A button change.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ButtonOp {
    pub frame: Frame,
    pub player: u16,
    /// `(false, bit)`: ability input `bit`; `(true, bit)`: confirm (0) or cancel (1).
    pub button: (bool, u32),
    pub kind: ButtonKind,
}

/// A direct operation run in phase P6 of its frame.
#[derive(Clone, Debug)]
pub(crate) struct Op {
    pub frame: Frame,
    pub kind: OpKind,
}

#[derive(Clone, Debug)]
pub(crate) enum OpKind {
    Apply(EffectApply),
    RemoveEffects {
        on: usize,
        effect: Option<EffectDefId>,
        any: TagSet,
        all: TagSet,
        from: Option<usize>,
        modifying: Option<AttrId>,
    },
    AddTag(usize, TagId),
    RemoveTag(usize, TagId),
    SetTagCount(usize, TagId, u16),
    SetBase(usize, AttrId, Fx),
    SendEvent {
        on: usize,
        tag: TagId,
        from: usize,
        magnitude: Option<Fx>,
    },
    Activate(usize, AbilityDefId),
    CancelAbility(usize, AbilityDefId),
    CancelAbilities(usize, TagSet),
    EndAbility(usize, AbilityDefId),
    Grant {
        on: usize,
        ability: AbilityDefId,
        level: u16,
        input: Option<u8>,
    },
    RemoveAbility(usize, AbilityDefId),
    ExecuteCue {
        on: usize,
        tag: TagId,
        magnitude: Option<Fx>,
    },
    Despawn(usize),
}

/// An expectation.
#[derive(Clone, Debug)]
pub(crate) struct Check {
    pub index: usize,
    pub frame: Frame,
    pub until: Frame,
    pub line: u32,
    pub what: String,
    pub kind: CheckKind,
}

#[derive(Clone, Debug)]
pub(crate) enum CheckKind {
    Attribute {
        on: usize,
        attr: AttrId,
        current: Option<Fx>,
        base: Option<Fx>,
        tolerance: Fx,
    },
    Tag {
        on: usize,
        tag: TagId,
        present: Option<bool>,
        count: Option<u32>,
        exact: bool,
    },
    Effect {
        on: usize,
        effect: EffectDefId,
        present: Option<bool>,
        stacks: Option<u16>,
        remaining: Option<u32>,
        instances: Option<u32>,
        inhibited: Option<bool>,
    },
    Ability {
        on: usize,
        ability: AbilityDefId,
        granted: Option<bool>,
        active: Option<bool>,
        activation: Option<RawActivation>,
        cooldown: Option<RawCooldown>,
    },
    Cue {
        tag: TagId,
        kind: RawCueKind,
        on: Option<usize>,
        count: Option<u32>,
    },
    AttrChanged {
        on: usize,
        attr: AttrId,
        from: Option<Fx>,
        to: Option<Fx>,
        count: Option<u32>,
    },
    Alive {
        on: usize,
        alive: bool,
    },
    Checksum(u64),
}

fn key(k: &str) -> PathSeg {
    PathSeg::Key(k.to_string())
}

/// Validation context: the source for locating paths, the content for names.
struct Cx<'a> {
    file: &'a str,
    source: &'a str,
    content: &'a Content,
    entities: Vec<String>,
}

impl Cx<'_> {
    fn err(&self, kind: K, path: &[PathSeg], message: impl Into<String>) -> ScenarioError {
        let (pos, _) = locate(self.source, path);
        ScenarioError {
            kind,
            file: self.file.to_string(),
            line: pos.line,
            col: pos.col,
            path: render(path),
            message: message.into(),
        }
    }

    fn named<T>(&self, path: &[PathSeg], r: Result<T, ContentError>) -> Result<T, ScenarioError> {
        r.map_err(|e| self.err(K::UnknownName, path, e.message))
    }

    fn entity(&self, path: &[PathSeg], name: &str) -> Result<usize, ScenarioError> {
        if let Some(i) = self.entities.iter().position(|n| n == name) {
            return Ok(i);
        }
        let mut msg = format!("no entity named \"{}\"", Clip(name));
        if let Some(s) = suggest(name, self.entities.iter().map(String::as_str)) {
            msg.push_str(&format!(" (did you mean \"{}\"?)", Clip(s)));
        } else if self.entities.is_empty() {
            msg.push_str(" (the scenario declares no entities: add them under `entities`)");
        } else {
            msg.push_str(&format!(" (entities: {})", self.entities.join(", ")));
        }
        Err(self.err(K::UnknownName, path, msg))
    }

    fn tag(&self, path: &[PathSeg], name: &str) -> Result<TagId, ScenarioError> {
        self.named(path, self.content.tag(name))
    }

    fn tags(&self, path: &[PathSeg], names: &[String]) -> Result<TagSet, ScenarioError> {
        let mut set = TagSet::EMPTY;
        for (i, n) in names.iter().enumerate() {
            let mut p = path.to_vec();
            p.push(PathSeg::Index(i));
            set.insert(self.tag(&p, n)?);
        }
        Ok(set)
    }

    fn attr(&self, path: &[PathSeg], name: &str) -> Result<AttrId, ScenarioError> {
        self.named(path, self.content.attr(name))
    }

    fn effect(&self, path: &[PathSeg], name: &str) -> Result<EffectDefId, ScenarioError> {
        self.named(path, self.content.effect(name))
    }

    fn ability(&self, path: &[PathSeg], name: &str) -> Result<AbilityDefId, ScenarioError> {
        self.named(path, self.content.ability(name))
    }

    fn set_by_caller(
        &self,
        path: &[PathSeg],
        map: &NamedMap<Num>,
    ) -> Result<Vec<(TagId, Fx)>, ScenarioError> {
        let mut out = Vec::new();
        for (name, v) in &map.0 {
            let mut p = path.to_vec();
            p.push(key(name));
            out.push((self.tag(&p, name)?, v.0));
        }
        Ok(out)
    }

    fn apply(
        &self,
        path: &[PathSeg],
        on: usize,
        e: &RawSetupEffect,
    ) -> Result<EffectApply, ScenarioError> {
        let at = |k: &str| [path, &[key(k)]].concat();
        let from = match &e.from {
            Some(n) => self.entity(&at("from"), n)?,
            None => on,
        };
        Ok(EffectApply {
            effect: self.effect(&at("effect"), &e.effect)?,
            on,
            from,
            level: e.level,
            set_by_caller: self.set_by_caller(&at("set_by_caller"), &e.set_by_caller)?,
            duration: e.duration,
        })
    }
}

/// Converts a `ron` parse error into a located scenario error.
fn syntax_error(file: &str, text: &str, e: &ron::error::SpannedError) -> ScenarioError {
    use ron::error::Error as R;
    let line = e.span.start.line.try_into().unwrap_or(u32::MAX);
    let col = e.span.start.col.try_into().unwrap_or(u32::MAX);
    let mut message = ron_message(&e.code);
    let hint = match &e.code {
        R::NoSuchEnumVariant { .. }
        | R::NoSuchStructField { .. }
        | R::MissingStructField { .. } => {
            Some("(see docs/scenarios.md for every operation, check and field)")
        }
        R::Eof => Some("(the file ends before every bracket is closed)"),
        R::TrailingCharacters => {
            Some("after the end of the scenario (is a bracket closed too early?)")
        }
        _ => None,
    };
    if let Some(hint) = hint {
        message.push(' ');
        message.push_str(hint);
    }
    ScenarioError {
        kind: K::Syntax,
        file: file.to_string(),
        line,
        col,
        path: render(&path_at(text, Position { line, col })),
        message,
    }
}

/// The char offset of a 1-based position.
fn offset_of(text: &str, pos: Position) -> usize {
    let (mut line, mut col) = (1u32, 1u32);
    for (i, c) in text.chars().enumerate() {
        if line == pos.line && col == pos.col {
            return i;
        }
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    text.chars().count()
}

/// The position of the first character inside the string literal of `content: Inline(…)`.
fn inline_start(source: &str) -> Option<Position> {
    let (pos, resolved) = locate(source, &[key("content")]);
    if resolved == 0 {
        return None;
    }
    let chars: Vec<char> = source.chars().collect();
    let mut i = offset_of(source, pos);
    // Skip to the opening quote, past an `r#…#` raw prefix.
    while i < chars.len() && chars[i] != '"' {
        i += 1;
    }
    i += 1;
    let (mut line, mut col) = (1u32, 1u32);
    for c in chars.iter().take(i) {
        if *c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    (i <= chars.len()).then_some(Position { line, col })
}

fn load_content(
    raw: &RawContentRef,
    source: &str,
    file: &str,
    base_dir: Option<&Path>,
) -> Result<Content, ScenarioError> {
    let base = base_dir.unwrap_or(Path::new(""));
    let wrap = |e: ContentError| ScenarioError {
        kind: K::Content,
        file: e.file.clone(),
        line: e.line,
        col: e.col,
        path: e.path.clone(),
        message: e.message.clone(),
    };
    let read = |rel: &str, i: Option<usize>| -> Result<(String, String), ScenarioError> {
        let p = base.join(rel);
        std::fs::read_to_string(&p).map(|t| (p.display().to_string(), t)).map_err(|e| {
            let mut path = vec![key("content")];
            path.extend(i.map(PathSeg::Index));
            let (pos, _) = locate(source, &path);
            ScenarioError {
                kind: K::Io,
                file: file.to_string(),
                line: pos.line,
                col: pos.col,
                path: render(&path),
                message: format!(
                    "cannot read the content file {} ({e}); content paths are relative to the \
                     scenario file",
                    p.display()
                ),
            }
        })
    };
    match raw {
        RawContentRef::File(rel) => {
            let (name, text) = read(rel, None)?;
            ContentBuilder::new().file(name, text).build().map_err(wrap)
        }
        RawContentRef::Files(list) => {
            let mut b = ContentBuilder::new();
            for (i, rel) in list.iter().enumerate() {
                let (name, text) = read(rel, Some(i))?;
                b = b.file(name, text);
            }
            b.build().map_err(wrap)
        }
        RawContentRef::Dir(rel) => {
            ContentBuilder::new().dir(base.join(rel)).and_then(ContentBuilder::build).map_err(wrap)
        }
        RawContentRef::Inline(text) => {
            let name = format!("{file} (inline content)");
            ContentBuilder::new().file(name, text.clone()).build().map_err(|e| {
                // Point into the scenario file: shift the content's position by where the
                // string starts.
                let mut out = wrap(e.clone());
                out.file = file.to_string();
                if let (Some(start), true) = (inline_start(source), e.line > 0) {
                    out.line = start.line + e.line - 1;
                    out.col = if e.line == 1 { start.col + e.col - 1 } else { e.col };
                }
                out.path = if e.path.is_empty() {
                    "content".to_string()
                } else {
                    format!("content: {}", e.path)
                };
                out
            })
        }
    }
}

/// Parses, loads the content and resolves every name.
pub(crate) fn parse(
    text: &str,
    file: &str,
    base_dir: Option<&Path>,
) -> Result<Scenario, ScenarioError> {
    let opts =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    let raw: RawScenario = opts.from_str(text).map_err(|e| syntax_error(file, text, &e))?;
    let content = load_content(&raw.content, text, file, base_dir)?;
    let mut cx = Cx { file, source: text, content: &content, entities: Vec::new() };

    if raw.players == 0 || raw.players > MAX_PLAYERS {
        return Err(cx.err(
            K::InvalidValue,
            &[key("players")],
            format!("players must be 1 to {MAX_PLAYERS}, not {}", raw.players),
        ));
    }

    // Entities: names first (operations may refer to later entities).
    for (i, (name, _)) in raw.entities.0.iter().enumerate() {
        if cx.entities.contains(name) {
            return Err(cx.err(
                K::InvalidValue,
                &[key("entities"), PathSeg::Index(i)],
                format!("entity \"{}\" is declared twice", Clip(name)),
            ));
        }
        cx.entities.push(name.clone());
    }
    let mut bound: Vec<Option<String>> = vec![None; usize::from(raw.players)];
    let mut entities = Vec::new();
    for (i, (name, e)) in raw.entities.0.iter().enumerate() {
        let base = [key("entities"), key(name)];
        let at = |k: &str| [&base[..], &[key(k)]].concat();
        let idx = |k: &str, j: usize| [&base[..], &[key(k), PathSeg::Index(j)]].concat();
        let mut sets = Vec::new();
        for (j, s) in e.attribute_sets.iter().enumerate() {
            sets.push(cx.named(&idx("attribute_sets", j), content.attr_set(s))?);
        }
        let mut bases = Vec::new();
        for (a, v) in &e.attributes.0 {
            let p = [&base[..], &[key("attributes"), key(a)]].concat();
            let id = cx.attr(&p, a)?;
            if !sets.iter().any(|s| {
                content.attr_set_defs().get(s.index()).is_some_and(|d| d.attributes.contains(&id))
            }) {
                return Err(cx.err(
                    K::InvalidValue,
                    &p,
                    format!(
                        "\"{}\" has no attribute \"{}\": add the attribute set that \
                         declares it to `attribute_sets`",
                        Clip(name),
                        Clip(a)
                    ),
                ));
            }
            bases.push((id, v.0));
        }
        let mut tags = Vec::new();
        for (j, t) in e.tags.iter().enumerate() {
            tags.push(cx.tag(&idx("tags", j), t)?);
        }
        let mut grants = Vec::new();
        for (j, g) in e.abilities.iter().enumerate() {
            let mut p = idx("abilities", j);
            p.push(key("ability"));
            grants.push((cx.ability(&p, &g.ability)?, g.level, g.input));
        }
        let mut ability_sets = Vec::new();
        for (j, s) in e.ability_sets.iter().enumerate() {
            ability_sets.push(cx.named(&idx("ability_sets", j), content.ability_set(s))?);
        }
        let mut effects = Vec::new();
        for (j, fx) in e.effects.iter().enumerate() {
            effects.push(cx.apply(&idx("effects", j), i, fx)?);
        }
        if let Some(p) = e.player {
            match bound.get_mut(usize::from(p)) {
                None => {
                    return Err(cx.err(
                        K::InvalidValue,
                        &at("player"),
                        format!(
                            "player {p} does not exist: the scenario has {} players (0 to {}); \
                             raise `players`",
                            raw.players,
                            raw.players - 1
                        ),
                    ));
                }
                Some(Some(other)) => {
                    return Err(cx.err(
                        K::InvalidValue,
                        &at("player"),
                        format!("player {p} already drives \"{}\"", Clip(other)),
                    ));
                }
                Some(slot) => *slot = Some(name.clone()),
            }
        }
        entities.push(EntitySetup {
            name: name.clone(),
            sets,
            bases,
            tags,
            grants,
            ability_sets,
            effects,
            player: e.player,
        });
    }
    cx.entities = entities.iter().map(|e| e.name.clone()).collect();

    // Script.
    let mut buttons = Vec::new();
    let mut ops = Vec::new();
    for (i, step) in raw.script.iter().enumerate() {
        let base = [key("script"), PathSeg::Index(i), key("do")];
        let at = |k: &str| [&base[..], &[key(k)]].concat();
        let until = step.until.unwrap_or(step.frame);
        if until < step.frame {
            return Err(cx.err(
                K::InvalidValue,
                &[key("script"), PathSeg::Index(i), key("until")],
                format!("until ({until}) is before frame ({})", step.frame),
            ));
        }
        if until >= MAX_FRAMES {
            return Err(cx.err(
                K::InvalidValue,
                &[key("script"), PathSeg::Index(i), key("until")],
                format!("frames stop at {MAX_FRAMES}"),
            ));
        }
        let every = step.every.unwrap_or(1);
        if every == 0 {
            return Err(cx.err(
                K::InvalidValue,
                &[key("script"), PathSeg::Index(i), key("every")],
                "every must be at least 1",
            ));
        }
        let repeats: Vec<Frame> = (step.frame..=until).step_by(every as usize).collect();
        let frame = step.frame;
        let button = |player: u16, input: RawButton, kind: ButtonKind| {
            if player >= raw.players {
                return Err(cx.err(
                    K::InvalidValue,
                    &at("player"),
                    format!(
                        "player {player} does not exist: the scenario has {} players",
                        raw.players
                    ),
                ));
            }
            let button = match input {
                RawButton::Id(b) => (false, u32::from(b)),
                RawButton::Confirm => (true, 0),
                RawButton::Cancel => (true, 1),
            };
            Ok(ButtonOp { frame, player, button, kind })
        };
        let kind = match &step.op {
            RawOp::Press { player, input } => {
                let b = button(*player, *input, ButtonKind::Press)?;
                buttons.extend(repeats.iter().map(|&frame| ButtonOp { frame, ..b }));
                continue;
            }
            RawOp::Release { player, input } => {
                let b = button(*player, *input, ButtonKind::Release)?;
                buttons.extend(repeats.iter().map(|&frame| ButtonOp { frame, ..b }));
                continue;
            }
            RawOp::Tap { player, input } => {
                let b = button(*player, *input, ButtonKind::Tap)?;
                buttons.extend(repeats.iter().map(|&frame| ButtonOp { frame, ..b }));
                continue;
            }
            RawOp::ApplyEffect { effect, on, from, level, set_by_caller, duration } => {
                let on = cx.entity(&at("on"), on)?;
                let setup = RawSetupEffect {
                    effect: effect.clone(),
                    from: from.clone(),
                    level: *level,
                    set_by_caller: set_by_caller.clone(),
                    duration: *duration,
                };
                OpKind::Apply(cx.apply(&base, on, &setup)?)
            }
            RawOp::RemoveEffects { on, effect, with_any_tag, with_all_tags, from, modifying } => {
                OpKind::RemoveEffects {
                    on: cx.entity(&at("on"), on)?,
                    effect: effect.as_ref().map(|e| cx.effect(&at("effect"), e)).transpose()?,
                    any: cx.tags(&at("with_any_tag"), with_any_tag)?,
                    all: cx.tags(&at("with_all_tags"), with_all_tags)?,
                    from: from.as_ref().map(|e| cx.entity(&at("from"), e)).transpose()?,
                    modifying: modifying
                        .as_ref()
                        .map(|a| cx.attr(&at("modifying"), a))
                        .transpose()?,
                }
            }
            RawOp::AddTag { on, tag } => {
                OpKind::AddTag(cx.entity(&at("on"), on)?, cx.tag(&at("tag"), tag)?)
            }
            RawOp::RemoveTag { on, tag } => {
                OpKind::RemoveTag(cx.entity(&at("on"), on)?, cx.tag(&at("tag"), tag)?)
            }
            RawOp::SetTagCount { on, tag, count } => {
                OpKind::SetTagCount(cx.entity(&at("on"), on)?, cx.tag(&at("tag"), tag)?, *count)
            }
            RawOp::SetBase { on, attribute, value } => OpKind::SetBase(
                cx.entity(&at("on"), on)?,
                cx.attr(&at("attribute"), attribute)?,
                value.0,
            ),
            RawOp::SendEvent { on, tag, from, magnitude } => {
                let on = cx.entity(&at("on"), on)?;
                OpKind::SendEvent {
                    on,
                    tag: cx.tag(&at("tag"), tag)?,
                    from: match from {
                        Some(f) => cx.entity(&at("from"), f)?,
                        None => on,
                    },
                    magnitude: magnitude.map(|m| m.0),
                }
            }
            RawOp::Activate { on, ability } => {
                OpKind::Activate(cx.entity(&at("on"), on)?, cx.ability(&at("ability"), ability)?)
            }
            RawOp::CancelAbility { on, ability } => OpKind::CancelAbility(
                cx.entity(&at("on"), on)?,
                cx.ability(&at("ability"), ability)?,
            ),
            RawOp::CancelAbilities { on, with_any_tag } => OpKind::CancelAbilities(
                cx.entity(&at("on"), on)?,
                cx.tags(&at("with_any_tag"), with_any_tag)?,
            ),
            RawOp::EndAbility { on, ability } => {
                OpKind::EndAbility(cx.entity(&at("on"), on)?, cx.ability(&at("ability"), ability)?)
            }
            RawOp::GrantAbility { on, ability, level, input } => OpKind::Grant {
                on: cx.entity(&at("on"), on)?,
                ability: cx.ability(&at("ability"), ability)?,
                level: *level,
                input: *input,
            },
            RawOp::RemoveAbility { on, ability } => OpKind::RemoveAbility(
                cx.entity(&at("on"), on)?,
                cx.ability(&at("ability"), ability)?,
            ),
            RawOp::ExecuteCue { on, tag, magnitude } => OpKind::ExecuteCue {
                on: cx.entity(&at("on"), on)?,
                tag: cx.tag(&at("tag"), tag)?,
                magnitude: magnitude.map(|m| m.0),
            },
            RawOp::Despawn { on } => OpKind::Despawn(cx.entity(&at("on"), on)?),
        };
        ops.extend(repeats.iter().map(|&frame| Op { frame, kind: kind.clone() }));
    }
    // Stable order: by frame, then file order (a stable sort keeps file order).
    ops.sort_by_key(|o| o.frame);
    buttons.sort_by_key(|b| b.frame);

    // Expectations.
    let mut checks = Vec::new();
    for (i, e) in raw.expect.iter().enumerate() {
        checks.push(check(&cx, i, e, &entities)?);
    }

    // Frames.
    let last_script = raw.script.iter().map(|s| s.until.unwrap_or(s.frame).max(s.frame)).max();
    let last_check = checks.iter().map(|c| c.until).max();
    let needed = last_script.max(last_check).map_or(1, |f| f.saturating_add(1));
    let frames = match raw.frames {
        Some(f) if f == 0 || f > MAX_FRAMES => {
            return Err(cx.err(
                K::InvalidValue,
                &[key("frames")],
                format!("frames must be 1 to {MAX_FRAMES}, not {f}"),
            ));
        }
        Some(f) if f < needed => {
            return Err(cx.err(
                K::InvalidValue,
                &[key("frames")],
                format!(
                    "frames is {f} but the script or an expectation reaches frame {}: raise \
                     `frames` to at least {needed} or remove it (it defaults to {needed})",
                    needed - 1
                ),
            ));
        }
        Some(f) => f,
        None if needed > MAX_FRAMES => {
            return Err(cx.err(
                K::InvalidValue,
                &[key("script")],
                format!("the script or expectations reach past frame {MAX_FRAMES}"),
            ));
        }
        None => needed,
    };

    let d = WorldConfig::default();
    let w = raw.world;
    let world = WorldConfig {
        // Room for the declared entities plus what abilities spawn; a small world keeps
        // snapshots, replays and rollbacks cheap.
        max_entities: w
            .max_entities
            .unwrap_or(entities.len() as u32 + 8)
            .max(entities.len() as u32),
        effects_per_entity: w.effects_per_entity.unwrap_or(d.effects_per_entity),
        players: raw.players,
        seed: raw.seed,
        abilities_per_entity: w.abilities_per_entity.unwrap_or(d.abilities_per_entity),
        max_tasks: w.max_tasks.unwrap_or(d.max_tasks.min(64)),
        max_standalone_cues: w.max_standalone_cues.unwrap_or(d.max_standalone_cues),
        max_stored_specs: w.max_stored_specs.unwrap_or(d.max_stored_specs),
    };
    let mut modes = raw.modes.clone().unwrap_or_else(|| {
        vec![RawMode::Plain, RawMode::Rollback, RawMode::Replay, RawMode::Peers]
    });
    if !modes.contains(&RawMode::Plain) {
        modes.insert(0, RawMode::Plain);
    }
    modes.sort();
    modes.dedup();
    let n = raw.network;
    if n.loss_percent > 90 {
        return Err(cx.err(
            K::InvalidValue,
            &[key("network"), key("loss_percent")],
            "loss_percent above 90 cannot synchronise peers: use 0 to 90",
        ));
    }
    if n.input_delay > 16 {
        return Err(cx.err(
            K::InvalidValue,
            &[key("network"), key("input_delay")],
            "input_delay must be 0 to 16 frames",
        ));
    }
    if modes.contains(&RawMode::Peers)
        && let Some(b) = buttons.iter().find(|b| b.frame < n.input_delay)
    {
        return Err(cx.err(
            K::InvalidValue,
            &[key("network"), key("input_delay")],
            format!(
                "an input changes at frame {} but mode Peers delays inputs by {} frames, so                  every player has the default input before frame {}: change inputs later,                  lower `input_delay`, or leave Peers out of `modes`",
                b.frame, n.input_delay, n.input_delay
            ),
        ));
    }
    let name = raw.name.clone().unwrap_or_else(|| {
        Path::new(file).file_stem().map_or(file.to_string(), |s| s.to_string_lossy().into_owned())
    });
    Ok(Scenario {
        name,
        description: raw.description.clone(),
        file: file.to_string(),
        content: Arc::new(content),
        world,
        frames,
        modes,
        network: NetworkSpec {
            latency_ms: n.latency_ms,
            jitter_ms: n.jitter_ms,
            loss_percent: n.loss_percent,
            input_delay: n.input_delay,
            seed: n.seed,
        },
        entities,
        buttons,
        ops,
        checks,
    })
}

fn fx_text(v: Fx) -> String {
    v.to_string()
}

fn check(
    cx: &Cx<'_>,
    i: usize,
    e: &RawExpect,
    entities: &[EntitySetup],
) -> Result<Check, ScenarioError> {
    let base = [key("expect"), PathSeg::Index(i), key("that")];
    let at = |k: &str| [&base[..], &[key(k)]].concat();
    let until = e.until.unwrap_or(e.frame);
    if until < e.frame {
        return Err(cx.err(
            K::InvalidValue,
            &[key("expect"), PathSeg::Index(i), key("until")],
            format!("until ({until}) is before frame ({})", e.frame),
        ));
    }
    let c = cx.content;
    let ent = |k: &str, n: &str| cx.entity(&at(k), n);
    let has_attr = |on: usize, a: AttrId, name: &str| -> Result<(), ScenarioError> {
        let sets = &entities[on].sets;
        if sets
            .iter()
            .any(|s| c.attr_set_defs().get(s.index()).is_some_and(|d| d.attributes.contains(&a)))
        {
            Ok(())
        } else {
            Err(cx.err(
                K::InvalidValue,
                &at("attribute"),
                format!(
                    "\"{}\" has no attribute \"{}\" (its attribute sets do not declare it)",
                    Clip(&entities[on].name),
                    Clip(name)
                ),
            ))
        }
    };
    let (kind, what) = match &e.that {
        RawCheck::Attribute { on, attribute, current, base, tolerance } => {
            let o = ent("on", on)?;
            let a = cx.attr(&at("attribute"), attribute)?;
            has_attr(o, a, attribute)?;
            if current.is_none() && base.is_none() {
                return Err(cx.err(
                    K::InvalidValue,
                    &base_path(&base_of(i)),
                    "an Attribute check needs `current`, `base` or both",
                ));
            }
            let mut what = format!("{on}.{attribute}");
            if let Some(v) = current {
                what.push_str(&format!(" current = {}", fx_text(v.0)));
            }
            if let Some(v) = base {
                what.push_str(&format!(" base = {}", fx_text(v.0)));
            }
            let tolerance = tolerance.map_or(Fx::ZERO, |t| t.0.abs());
            if tolerance != Fx::ZERO {
                what.push_str(&format!(" (± {})", fx_text(tolerance)));
            }
            (
                CheckKind::Attribute {
                    on: o,
                    attr: a,
                    current: current.map(|v| v.0),
                    base: base.map(|v| v.0),
                    tolerance,
                },
                what,
            )
        }
        RawCheck::Tag { on, tag, present, count, exact } => {
            let o = ent("on", on)?;
            let t = cx.tag(&at("tag"), tag)?;
            if present.is_none() && count.is_none() {
                return Err(cx.err(
                    K::InvalidValue,
                    &base_path(&base_of(i)),
                    "a Tag check needs `present`, `count` or both",
                ));
            }
            let mut what = format!("{on} tag {tag}");
            if let Some(p) = present {
                what.push_str(if *p { " present" } else { " absent" });
            }
            if let Some(n) = count {
                what.push_str(&format!(" count = {n}"));
            }
            if *exact {
                what.push_str(" (exact)");
            }
            (
                CheckKind::Tag { on: o, tag: t, present: *present, count: *count, exact: *exact },
                what,
            )
        }
        RawCheck::Effect { on, effect, present, stacks, remaining, instances, inhibited } => {
            let o = ent("on", on)?;
            let fx = cx.effect(&at("effect"), effect)?;
            let mut what = format!("{on} effect {effect}");
            if let Some(p) = present {
                what.push_str(if *p { " present" } else { " absent" });
            }
            if let Some(n) = stacks {
                what.push_str(&format!(" stacks = {n}"));
            }
            if let Some(n) = remaining {
                what.push_str(&format!(" remaining = {n}"));
            }
            if let Some(n) = instances {
                what.push_str(&format!(" instances = {n}"));
            }
            if let Some(b) = inhibited {
                what.push_str(if *b { " inhibited" } else { " not inhibited" });
            }
            (
                CheckKind::Effect {
                    on: o,
                    effect: fx,
                    present: *present,
                    stacks: *stacks,
                    remaining: *remaining,
                    instances: *instances,
                    inhibited: *inhibited,
                },
                what,
            )
        }
        RawCheck::Ability { on, ability, granted, active, activation, cooldown } => {
            let o = ent("on", on)?;
            let a = cx.ability(&at("ability"), ability)?;
            let mut what = format!("{on} ability {ability}");
            if let Some(g) = granted {
                what.push_str(if *g { " granted" } else { " not granted" });
            }
            if let Some(b) = active {
                what.push_str(if *b { " active" } else { " inactive" });
            }
            if let Some(r) = activation {
                what.push_str(&format!(" activation = {r:?}"));
            }
            if let Some(r) = cooldown {
                what.push_str(&format!(" cooldown = {r:?}"));
            }
            (
                CheckKind::Ability {
                    on: o,
                    ability: a,
                    granted: *granted,
                    active: *active,
                    activation: *activation,
                    cooldown: *cooldown,
                },
                what,
            )
        }
        RawCheck::Cue { tag, kind, on, count } => {
            let t = cx.tag(&at("tag"), tag)?;
            let o = on.as_ref().map(|n| ent("on", n)).transpose()?;
            let mut what = format!("cue {tag} {kind:?}");
            if let Some(n) = on {
                what.push_str(&format!(" on {n}"));
            }
            match count {
                Some(n) => what.push_str(&format!(" × {n}")),
                None => what.push_str(" at least once"),
            }
            (CheckKind::Cue { tag: t, kind: *kind, on: o, count: *count }, what)
        }
        RawCheck::AttributeChanged { on, attribute, from, to, count } => {
            let o = ent("on", on)?;
            let a = cx.attr(&at("attribute"), attribute)?;
            has_attr(o, a, attribute)?;
            let mut what = format!("{on}.{attribute} changed");
            if let Some(v) = from {
                what.push_str(&format!(" from {}", fx_text(v.0)));
            }
            if let Some(v) = to {
                what.push_str(&format!(" to {}", fx_text(v.0)));
            }
            match count {
                Some(n) => what.push_str(&format!(" × {n}")),
                None => what.push_str(" at least once"),
            }
            (
                CheckKind::AttrChanged {
                    on: o,
                    attr: a,
                    from: from.map(|v| v.0),
                    to: to.map(|v| v.0),
                    count: *count,
                },
                what,
            )
        }
        RawCheck::Alive { on, alive } => {
            let o = ent("on", on)?;
            (CheckKind::Alive { on: o, alive: *alive }, format!("{on} alive = {alive}"))
        }
        RawCheck::Checksum(v) => (CheckKind::Checksum(*v), format!("checksum = {v:#018x}")),
    };
    let (pos, _) = locate(cx.source, &[key("expect"), PathSeg::Index(i)]);
    Ok(Check { index: i, frame: e.frame, until, line: pos.line, what, kind })
}

fn base_of(i: usize) -> [PathSeg; 3] {
    [key("expect"), PathSeg::Index(i), key("that")]
}

fn base_path(p: &[PathSeg; 3]) -> Vec<PathSeg> {
    p.to_vec()
}
