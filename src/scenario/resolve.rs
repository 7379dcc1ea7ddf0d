//! Parsing and validation: raw scenario → [`Scenario`] with every name resolved and every
//! problem reported with its file, line, column and path.

use super::check::{self, Check};
use super::format::{
    RawButton, RawContentRef, RawEntity, RawFacing, RawInlineMod, RawMode, RawModes, RawOp,
    RawPhase, RawScenario, RawSetupEffect, RawStep,
};
use super::names::{Cx, key};
use super::plan::{ButtonKind, ButtonOp, EffectApply, EntitySetup, Op, OpKind};
use super::routing;
use super::{LinkSpec, NetworkSpec, Scenario, ScenarioError, ScenarioErrorKind as K, SourceText};
use crate::content::error::{Clip, ron_message};
use crate::content::locate::{PathSeg, Position, locate, path_at, render};
use crate::content::raw::{NamedMap, Num};
use crate::content::{Content, ContentBuilder, ContentError};
use crate::id::TagId;
use crate::num::{Frame, Fx};
use crate::world::WorldConfig;
use std::path::Path;
use std::sync::Arc;

/// The most frames a scenario may run (about 4.6 hours at 60 Hz).
pub(crate) const MAX_FRAMES: u32 = 1_000_000;
/// The most players (GGRS sessions beyond this are impractical in one process).
const MAX_PLAYERS: u16 = 8;

/// A `set_by_caller` map: tag → value.
fn set_by_caller(
    cx: &Cx<'_>,
    path: &[PathSeg],
    map: &NamedMap<Num>,
) -> Result<Vec<(TagId, Fx)>, ScenarioError> {
    let mut out = Vec::new();
    for (name, v) in &map.0 {
        let mut p = path.to_vec();
        p.push(key(name));
        out.push((cx.tag(&p, name)?, v.0));
    }
    Ok(out)
}

/// An effect application on entity `on` (from `on` unless `from` names another).
fn effect_apply(
    cx: &Cx<'_>,
    path: &[PathSeg],
    on: usize,
    e: &RawSetupEffect,
) -> Result<EffectApply, ScenarioError> {
    let at = |k: &str| [path, &[key(k)]].concat();
    let from = match &e.from {
        Some(n) => cx.entity(&at("from"), n)?,
        None => on,
    };
    Ok(EffectApply {
        effect: cx.effect(&at("effect"), &e.effect)?,
        on,
        from,
        level: e.level,
        set_by_caller: set_by_caller(cx, &at("set_by_caller"), &e.set_by_caller)?,
        duration: e.duration,
    })
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
    sources: &mut Vec<SourceText>,
) -> Result<Content, ScenarioError> {
    let base = base_dir.unwrap_or(Path::new(""));
    let keep = |sources: &mut Vec<SourceText>, file: &str, text: &str| {
        sources.push(SourceText { file: file.to_string(), text: text.to_string(), at: None });
    };
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
            keep(sources, &name, &text);
            ContentBuilder::new().file(name, text).build().map_err(wrap)
        }
        RawContentRef::Files(list) => {
            let mut b = ContentBuilder::new();
            for (i, rel) in list.iter().enumerate() {
                let (name, text) = read(rel, Some(i))?;
                keep(sources, &name, &text);
                b = b.file(name, text);
            }
            b.build().map_err(wrap)
        }
        RawContentRef::Dir(rel) => {
            let dir = base.join(rel);
            if let Ok(entries) = std::fs::read_dir(&dir) {
                let mut paths: Vec<_> = entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "ron") && p.is_file())
                    .collect();
                paths.sort();
                for p in paths {
                    if let Ok(text) = std::fs::read_to_string(&p) {
                        keep(sources, &p.display().to_string(), &text);
                    }
                }
            }
            ContentBuilder::new().dir(dir).and_then(ContentBuilder::build).map_err(wrap)
        }
        RawContentRef::Inline(text) => {
            sources.push(SourceText {
                file: file.to_string(),
                text: text.clone(),
                at: inline_start(source).map(|p| (p.line, p.col)),
            });
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
    let mut sources = Vec::new();
    let content = load_content(&raw.content, text, file, base_dir, &mut sources)?;
    let mut cx = Cx { file, source: text, content: &content, entities: Vec::new() };

    if raw.players == 0 || raw.players > MAX_PLAYERS {
        return Err(cx.err(
            K::InvalidValue,
            &[key("players")],
            format!("players must be 1 to {MAX_PLAYERS}, not {}", raw.players),
        ));
    }
    let entities = resolve_entities(&mut cx, &raw)?;
    let script = resolve_script(&cx, &raw)?;

    // Cue routing, then expectations (which name its handlers).
    let routing = raw.cue_routing.as_ref().map(|r| routing::resolve(&cx, r)).transpose()?;
    let mut checks = Vec::new();
    for (i, e) in raw.expect.iter().enumerate() {
        checks.push(check::resolve(&cx, i, e, &entities, &script.labels, routing.as_ref())?);
    }
    let frames = resolve_frames(&cx, &raw, &checks)?;
    let world = world_config(&raw, entities.len());
    let (modes, excluded) = resolve_modes(&cx, &raw)?;
    let network = resolve_network(&cx, &raw)?;
    let distance = raw.sync_test.check_distance;
    if !(1..=16).contains(&distance) {
        return Err(cx.err(
            K::InvalidValue,
            &[key("sync_test"), key("check_distance")],
            format!("check_distance must be 1 to 16 frames, not {distance}"),
        ));
    }
    if modes.contains(&RawMode::Peers) {
        check_inputs_after_delay(&cx, &raw)?;
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
        players: raw.players,
        frames,
        modes,
        excluded,
        network,
        check_distance: distance,
        entities,
        buttons: script.buttons,
        ops: script.ops,
        checks,
        sources,
        routing,
    })
}

/// Resolves the `entities` section: names first (operations may refer to later entities),
/// then each entity in file order; leaves `cx.entities` naming them in that order.
fn resolve_entities(cx: &mut Cx<'_>, raw: &RawScenario) -> Result<Vec<EntitySetup>, ScenarioError> {
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
        entities.push(resolve_entity(cx, raw.players, &mut bound, i, name, e)?);
    }
    cx.entities = entities.iter().map(|e| e.name.clone()).collect();
    Ok(entities)
}

/// Resolves one entity; `bound` is which entity each player drives so far.
fn resolve_entity(
    cx: &Cx<'_>,
    players: u16,
    bound: &mut [Option<String>],
    i: usize,
    name: &str,
    e: &RawEntity,
) -> Result<EntitySetup, ScenarioError> {
    let content = cx.content;
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
        effects.push(effect_apply(cx, &idx("effects", j), i, fx)?);
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
                        players,
                        players - 1
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
            Some(slot) => *slot = Some(name.to_string()),
        }
    }
    let place = match &e.at {
        None => None,
        Some(_) if !content.has_boxes() => {
            return Err(cx.err(
                K::InvalidValue,
                &at("at"),
                "`at` places an entity's hit, hurt and push boxes, but the content declares \
                 none (timelines' `boxes`, `bodies`)",
            ));
        }
        Some(a) => {
            let body = match &a.body {
                Some(b) => {
                    let p = [&at("at")[..], &[key("body")]].concat();
                    Some(cx.named(&p, content.body(b))?)
                }
                None => None,
            };
            Some(crate::world::BoxAnchor {
                x: a.x.0,
                y: a.y.0,
                facing_left: a.facing == RawFacing::Left,
                body,
                instigator: crate::id::Entity::NONE,
            })
        }
    };
    Ok(EntitySetup {
        name: name.to_string(),
        sets,
        bases,
        tags,
        grants,
        ability_sets,
        effects,
        player: e.player,
        at: place,
    })
}

/// The resolved `script`: inputs and direct operations in frame order, and the labels the
/// operations name (by index).
struct Script {
    buttons: Vec<ButtonOp>,
    ops: Vec<Op>,
    labels: Vec<String>,
}

/// Resolves the `script` section: each step's frames, then its input or operation.
fn resolve_script(cx: &Cx<'_>, raw: &RawScenario) -> Result<Script, ScenarioError> {
    let mut buttons = Vec::new();
    let mut ops = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    for (i, step) in raw.script.iter().enumerate() {
        let repeats = step_frames(cx, i, step)?;
        let kind = match resolve_step(cx, raw.players, i, step)? {
            Resolved::Input(b) => {
                buttons.extend(repeats.iter().map(|&frame| ButtonOp { frame, ..b }));
                continue;
            }
            Resolved::Op(kind) => *kind,
        };
        let before_abilities = step.phase == Some(RawPhase::BeforeAbilities);
        let label = match &step.op {
            RawOp::ApplyEffect { label: Some(l), .. }
            | RawOp::ApplyInline { label: Some(l), .. } => {
                Some(labels.iter().position(|x| x == l).unwrap_or_else(|| {
                    labels.push(l.clone());
                    labels.len() - 1
                }))
            }
            _ => None,
        };
        ops.extend(repeats.iter().map(|&frame| Op {
            frame,
            before_abilities,
            kind: kind.clone(),
            label,
        }));
    }
    // Stable order: by frame, then file order (a stable sort keeps file order).
    ops.sort_by_key(|o| o.frame);
    buttons.sort_by_key(|b| b.frame);
    Ok(Script { buttons, ops, labels })
}

/// The frames script step `i` runs in: `frame` to `until`, every `every` frames.
fn step_frames(cx: &Cx<'_>, i: usize, step: &RawStep) -> Result<Vec<Frame>, ScenarioError> {
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
    Ok((step.frame..=until).step_by(every as usize).collect())
}

/// A press, release or tap of `input` by `player` at `frame`; `base` is the step's path.
fn button_op(
    cx: &Cx<'_>,
    players: u16,
    base: &[PathSeg],
    frame: Frame,
    player: u16,
    input: RawButton,
    kind: ButtonKind,
) -> Result<ButtonOp, ScenarioError> {
    if player >= players {
        return Err(cx.err(
            K::InvalidValue,
            &[base, &[key("player")]].concat(),
            format!("player {player} does not exist: the scenario has {players} players"),
        ));
    }
    let button = match input {
        RawButton::Id(b) => (false, u32::from(b)),
        RawButton::Confirm => (true, 0),
        RawButton::Cancel => (true, 1),
    };
    Ok(ButtonOp { frame, player, button, kind })
}

/// What a script step does: an input, or a direct operation.
enum Resolved {
    Input(ButtonOp),
    Op(Box<OpKind>),
}

/// Resolves script step `i`'s operation (at its first frame).
// One flat match over every operation keyword: each arm is the names it resolves.
fn resolve_step(
    cx: &Cx<'_>,
    players: u16,
    i: usize,
    step: &RawStep,
) -> Result<Resolved, ScenarioError> {
    let base = &[key("script"), PathSeg::Index(i), key("do")][..];
    let at = |k: &str| [base, &[key(k)]].concat();
    let input = |player: u16, input: RawButton, kind: ButtonKind| {
        if step.phase.is_some() {
            return Err(cx.err(
                K::InvalidValue,
                &[key("script"), PathSeg::Index(i), key("phase")],
                "`phase` is for direct operations: an input is the frame's input (phase P0), \
                 before everything else",
            ));
        }
        button_op(cx, players, base, step.frame, player, input, kind).map(Resolved::Input)
    };
    Ok(Resolved::Op(Box::new(match &step.op {
        RawOp::Press { player, input: b } => return input(*player, *b, ButtonKind::Press),
        RawOp::Release { player, input: b } => return input(*player, *b, ButtonKind::Release),
        RawOp::Tap { player, input: b } => return input(*player, *b, ButtonKind::Tap),
        RawOp::ApplyEffect { effect, on, from, level, set_by_caller, duration, label: _ } => {
            let on = cx.entity(&at("on"), on)?;
            let setup = RawSetupEffect {
                effect: effect.clone(),
                from: from.clone(),
                level: *level,
                set_by_caller: set_by_caller.clone(),
                duration: *duration,
            };
            OpKind::Apply(effect_apply(cx, base, on, &setup)?)
        }
        RawOp::ApplyInline { on, from, modifiers, label: _ } => {
            apply_inline(cx, base, on, from.as_deref(), modifiers)?
        }
        RawOp::SetRemaining { on, effect, frames } => OpKind::SetRemaining(
            cx.entity(&at("on"), on)?,
            cx.effect(&at("effect"), effect)?,
            *frames,
        ),
        RawOp::ExtendEffect { on, effect, frames } => {
            OpKind::Extend(cx.entity(&at("on"), on)?, cx.effect(&at("effect"), effect)?, *frames)
        }
        RawOp::RemoveStacks { on, effect, stacks } => OpKind::RemoveStacks(
            cx.entity(&at("on"), on)?,
            cx.effect(&at("effect"), effect)?,
            *stacks,
        ),
        RawOp::RemoveEffects { on, effect, with_any_tag, with_all_tags, from, modifying } => {
            OpKind::RemoveEffects {
                on: cx.entity(&at("on"), on)?,
                effect: effect.as_ref().map(|e| cx.effect(&at("effect"), e)).transpose()?,
                any: cx.tags(&at("with_any_tag"), with_any_tag)?,
                all: cx.tags(&at("with_all_tags"), with_all_tags)?,
                from: from.as_ref().map(|e| cx.entity(&at("from"), e)).transpose()?,
                modifying: modifying.as_ref().map(|a| cx.attr(&at("modifying"), a)).transpose()?,
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
        RawOp::CancelAbility { on, ability } => {
            OpKind::CancelAbility(cx.entity(&at("on"), on)?, cx.ability(&at("ability"), ability)?)
        }
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
        RawOp::RemoveAbility { on, ability } => {
            OpKind::RemoveAbility(cx.entity(&at("on"), on)?, cx.ability(&at("ability"), ability)?)
        }
        RawOp::ExecuteCue { on, tag, magnitude } => {
            let on = cx.entity(&at("on"), on)?;
            let t = cx.tag(&at("tag"), tag)?;
            let content = cx.content;
            let root = content.tag("GameplayCue").ok();
            if !root.is_some_and(|r| content.tags().is_descendant_or_self(t, r)) {
                return Err(cx.err(
                    K::InvalidValue,
                    &at("tag"),
                    format!(
                        "\"{}\" is not a cue tag: cue tags start with `GameplayCue.`",
                        Clip(tag)
                    ),
                ));
            }
            OpKind::ExecuteCue { on, tag: t, magnitude: magnitude.map(|m| m.0) }
        }
        RawOp::Despawn { on } => OpKind::Despawn(cx.entity(&at("on"), on)?),
        RawOp::SetCooldownTags { on, ability, tags } => {
            set_cooldown_tags(cx, base, on, ability, tags)?
        }
        RawOp::ResetCooldownTags { on, ability } => OpKind::SetCooldownTags(
            cx.entity(&at("on"), on)?,
            cx.ability(&at("ability"), ability)?,
            None,
        ),
    })))
}

/// `ApplyInline`: an effect spec written in the step, 1 to `MAX_INLINE_MODS` modifiers.
fn apply_inline(
    cx: &Cx<'_>,
    base: &[PathSeg],
    on: &str,
    from: Option<&str>,
    modifiers: &[RawInlineMod],
) -> Result<OpKind, ScenarioError> {
    let at = |k: &str| [base, &[key(k)]].concat();
    let on_i = cx.entity(&at("on"), on)?;
    if modifiers.is_empty() || modifiers.len() > crate::effect::MAX_INLINE_MODS {
        return Err(cx.err(
            K::InvalidValue,
            &at("modifiers"),
            format!(
                "an inline spec carries 1 to {} modifiers, not {}",
                crate::effect::MAX_INLINE_MODS,
                modifiers.len()
            ),
        ));
    }
    let mut mods = Vec::new();
    for (j, m) in modifiers.iter().enumerate() {
        let p = [base, &[key("modifiers"), PathSeg::Index(j), key("attribute")]].concat();
        mods.push((cx.attr(&p, &m.attribute)?, m.op, m.value.0));
    }
    Ok(OpKind::ApplyInline {
        on: on_i,
        from: match from {
            Some(f) => cx.entity(&at("from"), f)?,
            None => on_i,
        },
        mods,
    })
}

/// `SetCooldownTags`: at most one runtime cooldown tag, and none only when the ability's
/// cooldown effect grants one of its own.
fn set_cooldown_tags(
    cx: &Cx<'_>,
    base: &[PathSeg],
    on: &str,
    ability: &str,
    tags: &[String],
) -> Result<OpKind, ScenarioError> {
    let at = |k: &str| [base, &[key(k)]].concat();
    let content = cx.content;
    let on = cx.entity(&at("on"), on)?;
    let a = cx.ability(&at("ability"), ability)?;
    let def = content.ability_def(a);
    if tags.len() > 1 {
        return Err(cx.err(
            K::InvalidValue,
            &at("tags"),
            format!(
                "a granted ability carries at most one runtime cooldown tag (its \
                 snapshot record keeps one), not {}",
                tags.len()
            ),
        ));
    }
    let tag = match tags.first() {
        Some(t) => Some(cx.tag(&[&at("tags")[..], &[PathSeg::Index(0)]].concat(), t)?),
        None => None,
    };
    if tag.is_none()
        && def.cooldown.is_some_and(|c| content.effect_def(c).granted_tags.explicit.is_empty())
    {
        return Err(cx.err(
            K::InvalidValue,
            &at("tags"),
            format!(
                "{}'s cooldown effect grants no tag: without a cooldown tag its \
                 cooldown could never be seen",
                Clip(ability)
            ),
        ));
    }
    Ok(OpKind::SetCooldownTags(on, a, Some(tag)))
}

/// The frames to run: `frames` if given (and enough for the script and the expectations),
/// else one past the last frame either reaches.
fn resolve_frames(cx: &Cx<'_>, raw: &RawScenario, checks: &[Check]) -> Result<u32, ScenarioError> {
    let last_script = raw.script.iter().map(|s| s.until.unwrap_or(s.frame).max(s.frame)).max();
    let last_check = checks.iter().map(|c| c.until).max();
    let needed = last_script.max(last_check).map_or(1, |f| f.saturating_add(1));
    Ok(match raw.frames {
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
    })
}

/// The world the scenario runs in: the `world` section over the defaults.
fn world_config(raw: &RawScenario, entities: usize) -> WorldConfig {
    let d = WorldConfig::default();
    let w = &raw.world;
    WorldConfig {
        // Room for the declared entities plus what abilities spawn; a small world keeps
        // snapshots, replays and rollbacks cheap.
        max_entities: w.max_entities.unwrap_or(entities as u32 + 8).max(entities as u32),
        effects_per_entity: w.effects_per_entity.unwrap_or(d.effects_per_entity),
        // At least two input slots: a one-player scenario runs mode Peers with a second,
        // idle peer, and every mode must step the same world.
        players: raw.players.max(2),
        seed: raw.seed,
        abilities_per_entity: w.abilities_per_entity.unwrap_or(d.abilities_per_entity),
        max_tasks: w.max_tasks.unwrap_or(d.max_tasks.min(64)),
        max_standalone_cues: w.max_standalone_cues.unwrap_or(d.max_standalone_cues),
        max_stored_specs: w.max_stored_specs.unwrap_or(d.max_stored_specs),
        // Capacities the scenario format does not set: the defaults.
        ..d
    }
}

/// The modes to run and the ones excluded, each with the reason given.
#[allow(clippy::type_complexity, reason = "the two lists `Scenario` keeps")]
fn resolve_modes(
    cx: &Cx<'_>,
    raw: &RawScenario,
) -> Result<(Vec<RawMode>, Vec<(RawMode, String)>), ScenarioError> {
    let all =
        [RawMode::Plain, RawMode::Rollback, RawMode::Replay, RawMode::Peers, RawMode::SyncTest];
    let mut excluded = Vec::new();
    if let RawModes::Except { modes: out, reason } = &raw.modes {
        let at = |k: &str| [key("modes"), key(k)];
        if reason.trim().is_empty() {
            return Err(cx.err(
                K::InvalidValue,
                &at("reason"),
                "say why these modes cannot run: `reason` is printed with every report",
            ));
        }
        if out.is_empty() {
            return Err(cx.err(
                K::InvalidValue,
                &at("modes"),
                "`Except` lists no mode: write `modes: All` (the default) or name the modes",
            ));
        }
        for (j, m) in out.iter().enumerate() {
            if *m == RawMode::Plain {
                return Err(cx.err(
                    K::InvalidValue,
                    &[key("modes"), key("modes"), PathSeg::Index(j)],
                    "mode Plain cannot be excluded: the expectations are checked in it",
                ));
            }
            if !excluded.iter().any(|(x, _)| x == m) {
                excluded.push((*m, reason.clone()));
            }
        }
    }
    let modes = all.into_iter().filter(|m| !excluded.iter().any(|(x, _)| x == m)).collect();
    Ok((modes, excluded))
}

/// The simulated network of mode Peers: the `network` section and its per-pair links.
fn resolve_network(cx: &Cx<'_>, raw: &RawScenario) -> Result<NetworkSpec, ScenarioError> {
    let n = &raw.network;
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
    if !(1..=64).contains(&n.max_prediction) {
        return Err(cx.err(
            K::InvalidValue,
            &[key("network"), key("max_prediction")],
            format!("max_prediction must be 1 to 64 frames, not {}", n.max_prediction),
        ));
    }
    let mut links = Vec::new();
    for (j, l) in n.links.iter().enumerate() {
        let at = |k: &str| [key("network"), key("links"), PathSeg::Index(j), key(k)];
        let (a, b) = l.between;
        let peers = raw.players.max(2);
        if a == b || a >= peers || b >= peers {
            return Err(cx.err(
                K::InvalidValue,
                &at("between"),
                format!(
                    "a link joins two different peers 0 to {} (mode Peers runs {peers} peers), \
                     not ({a}, {b})",
                    peers - 1
                ),
            ));
        }
        if l.loss_percent.is_some_and(|x| x > 90) {
            return Err(cx.err(
                K::InvalidValue,
                &at("loss_percent"),
                "loss_percent above 90 cannot synchronise peers: use 0 to 90",
            ));
        }
        if links.iter().any(|x: &LinkSpec| (x.a, x.b) == (a.min(b), a.max(b))) {
            return Err(cx.err(
                K::InvalidValue,
                &at("between"),
                format!("the link ({a}, {b}) is given twice"),
            ));
        }
        links.push(LinkSpec {
            a: a.min(b),
            b: a.max(b),
            latency_ms: l.latency_ms.unwrap_or(n.latency_ms),
            jitter_ms: l.jitter_ms.unwrap_or(n.jitter_ms),
            loss_percent: l.loss_percent.unwrap_or(n.loss_percent),
        });
    }
    Ok(NetworkSpec {
        latency_ms: n.latency_ms,
        jitter_ms: n.jitter_ms,
        loss_percent: n.loss_percent,
        input_delay: n.input_delay,
        seed: n.seed,
        max_prediction: n.max_prediction,
        links,
    })
}

/// Mode Peers: no input before the input delay.
///
/// GGRS delays every input by `input_delay` frames: the runner hands each peer the input of
/// frame `f + input_delay` at frame `f`, but frames before the delay have only the default
/// input on every peer.
fn check_inputs_after_delay(cx: &Cx<'_>, raw: &RawScenario) -> Result<(), ScenarioError> {
    let n = &raw.network;
    if let Some((i, b)) = raw
        .script
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            matches!(s.op, RawOp::Press { .. } | RawOp::Release { .. } | RawOp::Tap { .. })
        })
        .find(|(_, s)| s.frame < n.input_delay)
    {
        return Err(cx.err(
            K::InvalidValue,
            &[key("script"), PathSeg::Index(i), key("frame")],
            format!(
                "this input applies at frame {} but mode Peers runs with an input delay of {} \
                 frames, and GGRS gives every player the default input in frames 0 to {}: \
                 move the input to frame {} or later, lower `network.input_delay`, or exclude \
                 Peers with `modes: Except(modes: [Peers], reason: \"…\")`",
                b.frame,
                n.input_delay,
                n.input_delay - 1,
                n.input_delay
            ),
        ));
    }
    Ok(())
}
