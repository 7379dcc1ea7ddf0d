//! Validation and freezing of abilities, ability sets, timelines and cancel rules.

use super::{Loc, Names, root};
use crate::ability::MAX_INPUTS;
use crate::capacity::MAX_SPEC_ROOM;
use crate::content::def::*;
use crate::content::error::Clip;
use crate::content::raw::*;
use crate::content::{ContentError, ContentErrorKind as K};
use crate::id::{AbilityDefId, EffectDefId, TagId};
use crate::num::Frame;
use crate::tag::TagSet;
use std::collections::BTreeMap;

/// The longest input buffer, in frames (two seconds at 60 Hz: a buffer is a few frames).
pub(crate) const MAX_INPUT_BUFFER: u16 = 120;

/// A duration of at least 1 frame and at most [`crate::num::MAX_FINITE_FRAMES`] (`hint` says
/// what to do instead of a longer one).
pub(super) fn frames(
    names: &Names<'_>,
    loc: &Loc,
    f: &RawFrames,
    hint: &str,
) -> Result<Frame, ContentError> {
    let (at, n) = match f {
        RawFrames::Frames(0) => {
            return Err(names.cx.err(loc, K::InvalidValue, "must be at least 1 frame"));
        }
        RawFrames::Frames(n) => (loc.clone(), *n),
        RawFrames::Seconds(d) => (loc.at(0), names.frames(&loc.at(0), d)?),
    };
    if n > crate::num::MAX_FINITE_FRAMES {
        return Err(names.cx.err(&at, K::InvalidValue, super::too_long(n, hint)));
    }
    Ok(n)
}

/// The values of a cost or cooldown beyond the spec's inline room.
fn beyond_inline(values: &[(TagId, crate::num::Fx)]) -> Vec<crate::effect::SbcEntry> {
    values
        .iter()
        .skip(MAX_SET_BY_CALLER)
        .map(|(t, v)| crate::effect::SbcEntry::new(*t, *v))
        .collect()
}

/// SetByCaller values written as `{ "Data.X": value }` under `field`.
fn set_by_caller_values(
    names: &Names<'_>,
    loc: &Loc,
    field: &str,
    map: &NamedMap<Num>,
) -> Result<Vec<(TagId, crate::num::Fx)>, ContentError> {
    let mut out = Vec::with_capacity(map.0.len());
    for (k, v) in &map.0 {
        out.push((names.tag(&loc.at(field).at(k.as_str()), k)?, v.0));
    }
    // Four live in the commit's spec, the rest in the definition (the spec names them); a
    // world holds up to `WorldConfig::set_by_caller_per_spec` values per spec, at most
    // `MAX_SPEC_ROOM`.
    if out.len() > usize::from(MAX_SPEC_ROOM) {
        return Err(names.cx.err(
            &loc.at(field),
            K::Capacity,
            format!(
                "at most {MAX_SPEC_ROOM} values (the largest WorldConfig::set_by_caller_per_spec)"
            ),
        ));
    }
    Ok(out)
}

/// Refuses an ability whose cost or cooldown effect needs a SetByCaller value the ability does
/// not give: its commit could never apply it (F-GA-06, F-GA-08). `covered` is a key the ability
/// gives another way (`cooldown_duration` for a SetByCaller cooldown duration).
#[allow(
    clippy::too_many_arguments,
    reason = "where the error points (file, field names) and what is checked"
)]
fn check_set_by_caller(
    names: &Names<'_>,
    loc: &Loc,
    field: &str,
    values_field: &str,
    effect_name: &str,
    effect: &EffectDef,
    values: &[(TagId, crate::num::Fx)],
    covered: Option<TagId>,
) -> Result<(), ContentError> {
    for k in &effect.set_by_caller_keys {
        if Some(*k) == covered || values.iter().any(|(t, _)| t == k) {
            continue;
        }
        let key = names.tags.name(*k).to_string();
        let what = if effect.duration == DurationDef::SetByCaller(*k) {
            format!(
                "takes its duration from SetByCaller(\"{}\"): give the ability \
                 `cooldown_duration: Frames(n)` (which also sets \"{}\") or \
                 `{values_field}: {{ \"{}\": n }}`",
                Clip(&key),
                Clip(&key),
                Clip(&key)
            )
        } else {
            format!(
                "needs the SetByCaller value \"{}\": give it in `{values_field}: {{ \"{}\": … }}`",
                Clip(&key),
                Clip(&key)
            )
        };
        return Err(names.cx.err(
            &loc.at(field),
            K::InvalidCombination,
            format!(
                "the {field} effect \"{}\" {what}; without it the commit could never apply it",
                Clip(effect_name)
            ),
        ));
    }
    Ok(())
}

pub(super) fn effect_ref(
    names: &Names<'_>,
    loc: &Loc,
    name: &str,
) -> Result<EffectDefId, ContentError> {
    names.effects.get(name).copied().ok_or_else(|| {
        let mut msg = format!("unknown effect \"{}\"", Clip(name));
        if let Some(s) = super::suggest(name, names.effects.keys().map(String::as_str)) {
            msg.push_str(&format!(" (did you mean \"{}\"?)", Clip(s)));
        }
        names.cx.err(loc, K::UnknownEffect, msg)
    })
}

pub(super) fn ability_ref(
    names: &Names<'_>,
    loc: &Loc,
    name: &str,
) -> Result<AbilityDefId, ContentError> {
    names.abilities.get(name).copied().ok_or_else(|| {
        let mut msg = format!("unknown ability \"{}\"", Clip(name));
        if let Some(s) = super::suggest(name, names.abilities.keys().map(String::as_str)) {
            msg.push_str(&format!(" (did you mean \"{}\"?)", Clip(s)));
        }
        names.cx.err(loc, K::UnknownAbility, msg)
    })
}

/// Resolves an effect's `granted_abilities`.
pub(super) fn granted(
    names: &Names<'_>,
    loc: &Loc,
    list: &[RawGrantedAbility],
    instant: bool,
) -> Result<Vec<GrantDef>, ContentError> {
    if instant && !list.is_empty() {
        return Err(names.cx.err(
            loc,
            K::InvalidCombination,
            "an instant effect is never active, so it cannot grant abilities; give it a duration",
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, g)| {
            let l = loc.at(i);
            Ok(GrantDef {
                ability: ability_ref(names, &l.at("ability"), &g.ability)?,
                level: g.level.max(1),
                input: check_input(names, &l.at("input"), g.input)?,
                removal: g.removal,
            })
        })
        .collect()
}

fn check_input(
    names: &Names<'_>,
    loc: &Loc,
    input: Option<u8>,
) -> Result<Option<u8>, ContentError> {
    match input {
        Some(i) if u16::from(i) >= MAX_INPUTS => {
            let msg = format!("input ids are 0..={}, not {i}", MAX_INPUTS - 1);
            Err(names.cx.err(loc, K::InvalidValue, msg))
        }
        other => Ok(other),
    }
}

pub(super) struct Frozen {
    pub abilities: Vec<AbilityDef>,
    pub sets: Vec<AbilitySetDef>,
    pub timelines: Vec<TimelineDef>,
    pub rules: Vec<CancelRuleDef>,
}

pub(super) fn freeze(
    names: &Names<'_>,
    effects: &[EffectDef],
    ability_src: &BTreeMap<String, (Loc, &RawAbility)>,
    timeline_src: &BTreeMap<String, (Loc, &RawTimeline)>,
    rules_src: &[(usize, usize, &RawCancelRule)],
    set_src: &BTreeMap<String, (Loc, &Vec<RawAbilityGrant>)>,
) -> Result<Frozen, ContentError> {
    let timelines = timeline_src
        .iter()
        .map(|(name, (loc, t))| freeze_timeline(names, name, loc, t))
        .collect::<Result<_, _>>()?;
    let abilities = ability_src
        .iter()
        .map(|(name, (loc, a))| freeze_ability(names, effects, timeline_src, name, loc, a))
        .collect::<Result<_, _>>()?;
    let sets = set_src
        .iter()
        .map(|(name, (loc, grants))| freeze_set(names, name, loc, grants))
        .collect::<Result<_, _>>()?;
    let rules = rules_src
        .iter()
        .map(|(file, i, r)| freeze_cancel_rule(names, *file, *i, r))
        .collect::<Result<_, _>>()?;
    Ok(Frozen { abilities, sets, timelines, rules })
}

fn freeze_timeline(
    names: &Names<'_>,
    name: &str,
    loc: &Loc,
    t: &RawTimeline,
) -> Result<TimelineDef, ContentError> {
    let frames = timeline_length(names, loc, t)?;
    let windows = timeline_windows(names, loc, t, frames)?;
    let notifies = timeline_notifies(names, loc, t, frames)?;
    Ok(TimelineDef {
        name: name.to_string(),
        frames,
        startup: t.startup,
        active: t.active,
        notifies,
        windows,
        boxes: super::boxes::freeze_boxes(names, &loc.at("boxes"), &t.boxes, Some(frames))?,
    })
}

/// A timeline's length: startup + active + recovery frames, at least 1 and countable in a
/// [`Frame`] (so every phase boundary below is too).
fn timeline_length(names: &Names<'_>, loc: &Loc, t: &RawTimeline) -> Result<Frame, ContentError> {
    let Some(frames) = t.startup.checked_add(t.active).and_then(|f| f.checked_add(t.recovery))
    else {
        return Err(names.cx.err(
            loc,
            K::InvalidValue,
            format!(
                "startup + active + recovery ({} + {} + {}) is more frames than a timeline can \
                 count ({})",
                t.startup,
                t.active,
                t.recovery,
                Frame::MAX
            ),
        ));
    };
    if frames == 0 {
        return Err(names.cx.err(
            loc,
            K::InvalidValue,
            "a timeline needs at least one frame (startup + active + recovery)",
        ));
    }
    Ok(frames)
}

/// The tag windows of a timeline `frames` long: its phases' tags and its `windows`, sorted.
fn timeline_windows(
    names: &Names<'_>,
    loc: &Loc,
    t: &RawTimeline,
    frames: Frame,
) -> Result<Vec<(Frame, Frame, TagId)>, ContentError> {
    let mut windows: Vec<(Frame, Frame, TagId)> = Vec::new();
    let phases = [
        ("startup_tag", &t.startup_tag, 0, t.startup),
        ("active_tag", &t.active_tag, t.startup, t.startup + t.active),
        ("recovery_tag", &t.recovery_tag, t.startup + t.active, frames),
    ];
    for (field, tag, from, to) in phases {
        if let Some(tag) = tag {
            let id = names.tag(&loc.at(field), tag)?;
            if from < to {
                windows.push((from, to, id));
            }
        }
    }
    for (i, w) in t.windows.iter().enumerate() {
        let wl = loc.at("windows").at(i);
        if w.from >= w.to || w.to > frames {
            return Err(names.cx.err(
                &wl,
                K::InvalidValue,
                format!(
                    "a window needs from < to <= {frames} (the timeline's length), got {}..{}",
                    w.from, w.to
                ),
            ));
        }
        windows.push((w.from, w.to, names.tag(&wl.at("tag"), &w.tag)?));
    }
    windows.sort_by_key(|w| (w.0, w.1, w.2));
    Ok(windows)
}

/// The events a timeline `frames` long sends, in order of frame.
fn timeline_notifies(
    names: &Names<'_>,
    loc: &Loc,
    t: &RawTimeline,
    frames: Frame,
) -> Result<Vec<(Frame, TagId)>, ContentError> {
    let mut notifies = Vec::with_capacity(t.notifies.len());
    for (i, n) in t.notifies.iter().enumerate() {
        let nl = loc.at("notifies").at(i);
        if n.frame >= frames {
            return Err(names.cx.err(
                &nl.at("frame"),
                K::InvalidValue,
                format!("frame {} is past the timeline's {frames} frames", n.frame),
            ));
        }
        notifies.push((n.frame, names.tag(&nl.at("event"), &n.event)?));
    }
    notifies.sort_by_key(|n| n.0);
    Ok(notifies)
}

/// One ability. Its sections are checked in the order of the errors they give: tags, cost,
/// cooldown, triggers, state, timeline, `end_after`, cues, activation, then the tag sets and
/// the input.
fn freeze_ability(
    names: &Names<'_>,
    effects: &[EffectDef],
    timeline_src: &BTreeMap<String, (Loc, &RawTimeline)>,
    name: &str,
    loc: &Loc,
    a: &RawAbility,
) -> Result<AbilityDef, ContentError> {
    let set = |field: &str, v: &[String]| names.tag_set(&loc.at(field), v);
    let tags = names.container(&loc.at("tags"), &a.tags)?;
    let (cost, cost_set_by_caller) = freeze_cost(names, effects, loc, a)?;
    let cooldown = freeze_cooldown(names, effects, loc, a)?;
    let triggers = freeze_triggers(names, loc, &a.triggers)?;
    check_state_size(names, loc, a)?;
    let timeline = match &a.timeline {
        Some(t) => Some(timeline_ref(names, &loc.at("timeline"), timeline_src, t)?),
        None => None,
    };
    let end_after = match &a.end_after {
        Some(f) => Some(frames(
            names,
            &loc.at("end_after"),
            f,
            "leave out `end_after` for an ability that runs until it is ended",
        )?),
        None => None,
    };
    let cues = ability_cues(names, loc, &a.cues)?;
    check_activation(names, loc, a, end_after.is_some() || timeline.is_some())?;
    Ok(AbilityDef {
        name: name.to_string(),
        tags,
        cancel_abilities_with_tags: set(
            "cancel_abilities_with_tags",
            &a.cancel_abilities_with_tags,
        )?,
        block_abilities_with_tags: set("block_abilities_with_tags", &a.block_abilities_with_tags)?,
        activation_owned_tags: set("activation_owned_tags", &a.activation_owned_tags)?,
        activation_required_tags: set("activation_required_tags", &a.activation_required_tags)?,
        activation_blocked_tags: set("activation_blocked_tags", &a.activation_blocked_tags)?,
        source_required_tags: set("source_required_tags", &a.source_required_tags)?,
        source_blocked_tags: set("source_blocked_tags", &a.source_blocked_tags)?,
        target_required_tags: set("target_required_tags", &a.target_required_tags)?,
        target_blocked_tags: set("target_blocked_tags", &a.target_blocked_tags)?,
        cost,
        cost_values_beyond: beyond_inline(&cost_set_by_caller),
        cost_set_by_caller,
        cooldown: cooldown.effect,
        cooldown_duration: cooldown.duration,
        cooldown_values_beyond: beyond_inline(&cooldown.values),
        cooldown_values: cooldown.values,
        cooldown_set_by_caller: cooldown.set_by_caller,
        cooldown_tags_beyond: cooldown.tags.iter().skip(2).map(|t| t.0 + 1).collect(),
        cooldown_tags: cooldown.tags,
        all_cooldown_tags: cooldown.all_tags,
        instancing: a.instancing,
        triggers,
        passive: a.passive,
        activate_on_input: a.activate_on_input,
        end_on_release: a.end_on_release,
        input_buffer: a.input_buffer,
        input: check_input(names, &loc.at("input"), a.input)?,
        state_size: a.state_size,
        behaviour: a.behaviour.as_deref().map(|f| names.func(f)),
        can_activate: a.can_activate.as_deref().map(|f| names.func(f)),
        retrigger: a.retrigger,
        commit_on_activate: a.commit_on_activate,
        timeline,
        end_after,
        cues,
    })
}

/// SetByCaller values a commit gives an effect, in the order it sets them.
type SetByCallerValues = Vec<(TagId, crate::num::Fx)>;

/// An ability's cost effect (an instant one) and the SetByCaller values its commit gives it.
fn freeze_cost(
    names: &Names<'_>,
    effects: &[EffectDef],
    loc: &Loc,
    a: &RawAbility,
) -> Result<(Option<EffectDefId>, SetByCallerValues), ContentError> {
    let cost = match &a.cost {
        Some(c) => {
            let id = effect_ref(names, &loc.at("cost"), c)?;
            if !effects[id.index()].is_instant() {
                return Err(names.cx.err(
                    &loc.at("cost"),
                    K::InvalidCombination,
                    format!("the cost effect \"{}\" must be Instant", Clip(c)),
                ));
            }
            Some(id)
        }
        None => None,
    };
    let values = set_by_caller_values(names, loc, "cost_set_by_caller", &a.cost_set_by_caller)?;
    if let (Some(id), Some(c)) = (cost, &a.cost) {
        check_set_by_caller(
            names,
            loc,
            "cost",
            "cost_set_by_caller",
            c,
            &effects[id.index()],
            &values,
            None,
        )?;
    }
    Ok((cost, values))
}

/// An ability's frozen cooldown: its effect and what the commit gives that effect.
struct Cooldown {
    /// The cooldown effect (one with a duration).
    effect: Option<EffectDefId>,
    /// `cooldown_duration`: the frames of a SetByCaller duration.
    duration: Option<Frame>,
    /// `cooldown_set_by_caller` as written.
    set_by_caller: Vec<(TagId, crate::num::Fx)>,
    /// The values the commit sets, in order: the written ones, then the duration's key.
    values: Vec<(TagId, crate::num::Fx)>,
    /// `cooldown_tags`: tags the commit grants besides the effect's.
    tags: Vec<TagId>,
    /// Every tag that shows the cooldown: the effect's granted tags and `cooldown_tags`.
    all_tags: TagSet,
}

fn freeze_cooldown(
    names: &Names<'_>,
    effects: &[EffectDef],
    loc: &Loc,
    a: &RawAbility,
) -> Result<Cooldown, ContentError> {
    let effect = match &a.cooldown {
        Some(c) => Some(cooldown_effect(names, effects, &loc.at("cooldown"), c)?),
        None => None,
    };
    let duration = match &a.cooldown_duration {
        Some(f) => Some(frames(
            names,
            &loc.at("cooldown_duration"),
            f,
            "for a cooldown that lasts until it is removed, give the cooldown effect \
             `duration: Infinite` and leave out `cooldown_duration`",
        )?),
        None => None,
    };
    let set_by_caller =
        set_by_caller_values(names, loc, "cooldown_set_by_caller", &a.cooldown_set_by_caller)?;
    if effect.is_none()
        && (duration.is_some() || !a.cooldown_tags.is_empty() || !set_by_caller.is_empty())
    {
        return Err(names.cx.err(
            &loc.at("cooldown"),
            K::InvalidCombination,
            "`cooldown_duration`, `cooldown_tags` and `cooldown_set_by_caller` need a `cooldown` effect",
        ));
    }
    if let (Some(id), Some(c)) = (effect, &a.cooldown) {
        check_cooldown_values(names, loc, c, &effects[id.index()], duration, &set_by_caller)?;
    }
    let tags = cooldown_tags(names, loc, &a.cooldown_tags)?;
    // The cooldown spec's values in the order the commit sets them: the given ones, then
    // the SetByCaller duration's key from `cooldown_duration`.
    let mut values = set_by_caller.clone();
    if let (Some(c), Some(d)) = (effect, duration)
        && let DurationDef::SetByCaller(t) = effects[c.index()].duration
    {
        values.push((t, crate::num::int(i64::from(d))));
    }
    let mut all_tags = TagSet::of(&tags);
    if let Some(c) = effect {
        all_tags.union_with(&effects[c.index()].granted_tags.explicit);
        if all_tags.is_empty() {
            return Err(names.cx.err(
                &loc.at("cooldown"),
                K::InvalidCombination,
                "the cooldown effect grants no tags and no `cooldown_tags` are given, so the cooldown could never be seen",
            ));
        }
    }
    Ok(Cooldown { effect, duration, set_by_caller, values, tags, all_tags })
}

/// The cooldown effect `c`, written at `at`: one with a duration.
fn cooldown_effect(
    names: &Names<'_>,
    effects: &[EffectDef],
    at: &Loc,
    c: &str,
) -> Result<EffectDefId, ContentError> {
    let id = effect_ref(names, at, c)?;
    if effects[id.index()].is_instant() {
        return Err(names.cx.err(
            at,
            K::InvalidCombination,
            format!(
                "the cooldown effect \"{}\" must have a duration (its granted tags are the cooldown)",
                Clip(c)
            ),
        ));
    }
    Ok(id)
}

/// Checks the values an ability's commit gives its cooldown effect `e` (named `c`): a
/// SetByCaller duration given once and at least 1 frame, every key `e` needs, and room for the
/// duration's key beside `values`.
fn check_cooldown_values(
    names: &Names<'_>,
    loc: &Loc,
    c: &str,
    e: &EffectDef,
    duration: Option<Frame>,
    values: &[(TagId, crate::num::Fx)],
) -> Result<(), ContentError> {
    // A SetByCaller duration comes from `cooldown_duration` (which also sets the key) or
    // from the key's value in `cooldown_set_by_caller` (whole frames, at least 1), not both.
    let duration_key = match e.duration {
        DurationDef::SetByCaller(t) => Some(t),
        _ => None,
    };
    if let Some(t) = duration_key
        && let Some((_, v)) = values.iter().find(|(k, _)| *k == t)
    {
        let key = names.tags.name(t).to_string();
        let at = loc.at("cooldown_set_by_caller").at(key.as_str());
        if duration.is_some() {
            return Err(names.cx.err(
                &at,
                K::InvalidCombination,
                format!(
                    "the cooldown's duration is given twice: `cooldown_duration` already \
                     sets \"{}\"; remove one",
                    Clip(&key)
                ),
            ));
        }
        if v.to_num::<i64>() < 1 {
            return Err(names.cx.err(
                &at,
                K::InvalidValue,
                format!(
                    "\"{}\" is the cooldown's duration in frames and must be at least 1",
                    Clip(&key)
                ),
            ));
        }
    }
    check_set_by_caller(
        names,
        loc,
        "cooldown",
        "cooldown_set_by_caller",
        c,
        e,
        values,
        duration_key.filter(|_| duration.is_some()),
    )?;
    // `cooldown_duration` also sets a SetByCaller duration's key: one value more.
    if duration_key.is_some() && duration.is_some() && values.len() >= usize::from(MAX_SPEC_ROOM) {
        return Err(names.cx.err(
            &loc.at("cooldown_set_by_caller"),
            K::Capacity,
            format!(
                "at most {} values besides the duration `cooldown_duration` sets",
                MAX_SPEC_ROOM - 1
            ),
        ));
    }
    Ok(())
}

/// An ability's `cooldown_tags`.
fn cooldown_tags(names: &Names<'_>, loc: &Loc, raw: &[String]) -> Result<Vec<TagId>, ContentError> {
    // Two live in the cooldown spec, the rest in the definition (the spec names them); a
    // world holds up to `WorldConfig::granted_tags_per_spec` per spec, at most
    // `MAX_SPEC_ROOM`.
    let max_tags = usize::from(MAX_SPEC_ROOM);
    if raw.len() > max_tags {
        return Err(names.cx.err(
            &loc.at("cooldown_tags").at(max_tags),
            K::Capacity,
            format!(
                "at most {max_tags} extra cooldown tags (the largest \
                 WorldConfig::granted_tags_per_spec)"
            ),
        ));
    }
    raw.iter().enumerate().map(|(i, t)| names.tag(&loc.at("cooldown_tags").at(i), t)).collect()
}

fn freeze_triggers(
    names: &Names<'_>,
    loc: &Loc,
    raw: &[RawTrigger],
) -> Result<Vec<TriggerDef>, ContentError> {
    let mut triggers = Vec::with_capacity(raw.len());
    for (i, t) in raw.iter().enumerate() {
        let tl = loc.at("triggers").at(i).at(0);
        triggers.push(match t {
            RawTrigger::Event(x) => TriggerDef::Event(names.tag(&tl, x)?),
            RawTrigger::TagAdded(x) => TriggerDef::TagAdded(names.tag(&tl, x)?),
            RawTrigger::TagPresent(x) => TriggerDef::TagPresent(names.tag(&tl, x)?),
        });
    }
    Ok(triggers)
}

/// An ability's state blob: none for a NonInstanced ability, at most 1024 bytes.
fn check_state_size(names: &Names<'_>, loc: &Loc, a: &RawAbility) -> Result<(), ContentError> {
    if a.instancing == Instancing::NonInstanced && a.state_size > 0 {
        return Err(names.cx.err(
            &loc.at("state_size"),
            K::InvalidCombination,
            "a NonInstanced ability has no state blob",
        ));
    }
    if a.state_size > 1024 {
        return Err(names.cx.err(
            &loc.at("state_size"),
            K::Capacity,
            "a state blob may hold at most 1024 bytes",
        ));
    }
    Ok(())
}

/// The timeline named `t`, written at `at`.
fn timeline_ref(
    names: &Names<'_>,
    at: &Loc,
    timeline_src: &BTreeMap<String, (Loc, &RawTimeline)>,
    t: &str,
) -> Result<crate::id::TimelineId, ContentError> {
    timeline_src.keys().position(|k| k == t).map(|i| crate::id::TimelineId(i as u16)).ok_or_else(
        || {
            let mut msg = format!("unknown timeline \"{}\"", Clip(t));
            if let Some(s) = super::suggest(t, timeline_src.keys().map(String::as_str)) {
                msg.push_str(&format!(" (did you mean \"{}\"?)", Clip(s)));
            }
            names.cx.err(at, K::UnknownName, msg)
        },
    )
}

/// An ability's cues: persistent ones, shown while it runs, without a magnitude.
fn ability_cues(names: &Names<'_>, loc: &Loc, raw: &[RawCue]) -> Result<Vec<TagId>, ContentError> {
    let mut cues = Vec::with_capacity(raw.len());
    for (i, c) in raw.iter().enumerate() {
        let cl = loc.at("cues").at(i);
        if c.magnitude_attribute.is_some() {
            return Err(names.cx.err(
                &cl.at("magnitude_attribute"),
                K::InvalidCombination,
                "an ability's cue has no magnitude to fill: it is shown while the ability \
                 runs and no modifier of the ability changes an attribute (put the cue on the \
                 effect the ability applies to take its magnitude from an attribute)",
            ));
        }
        if c.events == CueEvents::Executed {
            return Err(names.cx.err(
                &cl.at("events"),
                K::InvalidCombination,
                "an ability's cue is persistent (added when the ability activates, removed \
                 when it ends), so `Executed` would never fire; use `Auto` or `Persistent`, \
                 or put the cue on an instant effect the ability applies",
            ));
        }
        cues.push(super::cue_tag(names, &cl, c)?);
    }
    Ok(cues)
}

/// How an ability starts and ends: a passive one never ends on its own (`ends_on_its_own`
/// says whether it has `end_after` or a timeline), and only one activated on input buffers
/// presses, for at most [`MAX_INPUT_BUFFER`] frames.
fn check_activation(
    names: &Names<'_>,
    loc: &Loc,
    a: &RawAbility,
    ends_on_its_own: bool,
) -> Result<(), ContentError> {
    if a.passive && ends_on_its_own {
        return Err(names.cx.err(
            loc,
            K::InvalidCombination,
            "a passive ability never ends on its own; remove `end_after`/`timeline` or `passive`",
        ));
    }
    if a.input_buffer > MAX_INPUT_BUFFER {
        return Err(names.cx.err(
            &loc.at("input_buffer"),
            K::InvalidValue,
            format!(
                "an input buffer holds a press for at most {MAX_INPUT_BUFFER} frames, not {}",
                a.input_buffer
            ),
        ));
    }
    if a.input_buffer > 0 && !a.activate_on_input {
        return Err(names.cx.err(
            &loc.at("input_buffer"),
            K::InvalidCombination,
            "a buffered press activates the ability: `input_buffer` needs `activate_on_input: true`",
        ));
    }
    Ok(())
}

/// An ability set: the abilities it grants.
fn freeze_set(
    names: &Names<'_>,
    name: &str,
    loc: &Loc,
    grants: &[RawAbilityGrant],
) -> Result<AbilitySetDef, ContentError> {
    let mut out = Vec::with_capacity(grants.len());
    for (i, g) in grants.iter().enumerate() {
        let gl = loc.at(i);
        out.push(GrantDef {
            ability: ability_ref(names, &gl.at("ability"), &g.ability)?,
            level: g.level.max(1),
            input: check_input(names, &gl.at("input"), g.input)?,
            removal: GrantRemoval::DoNothing,
        });
    }
    Ok(AbilitySetDef { name: name.to_string(), grants: out })
}

/// The `i`th rule of file `file`'s `cancel_on_tag_added`.
fn freeze_cancel_rule(
    names: &Names<'_>,
    file: usize,
    i: usize,
    r: &RawCancelRule,
) -> Result<CancelRuleDef, ContentError> {
    let rl = root(file, "cancel_on_tag_added").at(i);
    Ok(CancelRuleDef {
        tag: names.tag(&rl.at("tag"), &r.tag)?,
        with: names.tag_set(&rl.at("with"), &r.with)?,
        without: names.tag_set(&rl.at("without"), &r.without)?,
    })
}
