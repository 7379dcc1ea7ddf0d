//! Validation and freezing of abilities, ability sets, timelines and cancel rules.

use super::{Cx, Loc, Names, root};
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
    cx: &Cx<'_>,
    effects: &[EffectDef],
    ability_src: &BTreeMap<String, (Loc, &RawAbility)>,
    timeline_src: &BTreeMap<String, (Loc, &RawTimeline)>,
    rules_src: &[(usize, usize, &RawCancelRule)],
    set_src: &BTreeMap<String, (Loc, &Vec<RawAbilityGrant>)>,
) -> Result<Frozen, ContentError> {
    // Timelines.
    let mut timelines = Vec::with_capacity(timeline_src.len());
    for (name, (loc, t)) in timeline_src {
        let frames = t.startup.saturating_add(t.active).saturating_add(t.recovery);
        if frames == 0 {
            return Err(cx.err(
                loc,
                K::InvalidValue,
                "a timeline needs at least one frame (startup + active + recovery)",
            ));
        }
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
                return Err(cx.err(
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
        let mut notifies = Vec::with_capacity(t.notifies.len());
        for (i, n) in t.notifies.iter().enumerate() {
            let nl = loc.at("notifies").at(i);
            if n.frame >= frames {
                return Err(cx.err(
                    &nl.at("frame"),
                    K::InvalidValue,
                    format!("frame {} is past the timeline's {frames} frames", n.frame),
                ));
            }
            notifies.push((n.frame, names.tag(&nl.at("event"), &n.event)?));
        }
        notifies.sort_by_key(|n| n.0);
        windows.sort_by_key(|w| (w.0, w.1, w.2));
        timelines.push(TimelineDef {
            name: name.clone(),
            frames,
            startup: t.startup,
            active: t.active,
            notifies,
            windows,
            boxes: super::boxes::freeze_boxes(names, &loc.at("boxes"), &t.boxes, Some(frames))?,
        });
    }

    // Abilities.
    let mut abilities = Vec::with_capacity(ability_src.len());
    for (name, (loc, a)) in ability_src {
        let set = |field: &str, v: &[String]| names.tag_set(&loc.at(field), v);
        let tags = names.container(&loc.at("tags"), &a.tags)?;
        let cost = match &a.cost {
            Some(c) => {
                let id = effect_ref(names, &loc.at("cost"), c)?;
                if !effects[id.index()].is_instant() {
                    return Err(cx.err(
                        &loc.at("cost"),
                        K::InvalidCombination,
                        format!("the cost effect \"{}\" must be Instant", Clip(c)),
                    ));
                }
                Some(id)
            }
            None => None,
        };
        let cost_set_by_caller =
            set_by_caller_values(names, loc, "cost_set_by_caller", &a.cost_set_by_caller)?;
        if let (Some(id), Some(c)) = (cost, &a.cost) {
            check_set_by_caller(
                names,
                loc,
                "cost",
                "cost_set_by_caller",
                c,
                &effects[id.index()],
                &cost_set_by_caller,
                None,
            )?;
        }
        let cooldown = match &a.cooldown {
            Some(c) => {
                let id = effect_ref(names, &loc.at("cooldown"), c)?;
                if effects[id.index()].is_instant() {
                    return Err(cx.err(
                        &loc.at("cooldown"),
                        K::InvalidCombination,
                        format!("the cooldown effect \"{}\" must have a duration (its granted tags are the cooldown)", Clip(c)),
                    ));
                }
                Some(id)
            }
            None => None,
        };
        let cooldown_duration = match &a.cooldown_duration {
            Some(f) => Some(frames(
                names,
                &loc.at("cooldown_duration"),
                f,
                "for a cooldown that lasts until it is removed, give the cooldown effect \
                 `duration: Infinite` and leave out `cooldown_duration`",
            )?),
            None => None,
        };
        let cooldown_set_by_caller =
            set_by_caller_values(names, loc, "cooldown_set_by_caller", &a.cooldown_set_by_caller)?;
        if cooldown.is_none()
            && (cooldown_duration.is_some()
                || !a.cooldown_tags.is_empty()
                || !cooldown_set_by_caller.is_empty())
        {
            return Err(cx.err(
                &loc.at("cooldown"),
                K::InvalidCombination,
                "`cooldown_duration`, `cooldown_tags` and `cooldown_set_by_caller` need a `cooldown` effect",
            ));
        }
        if let (Some(id), Some(c)) = (cooldown, &a.cooldown) {
            let e = &effects[id.index()];
            // A SetByCaller duration comes from `cooldown_duration` (which also sets the key) or
            // from the key's value in `cooldown_set_by_caller` (whole frames, at least 1), not both.
            let duration_key = match e.duration {
                DurationDef::SetByCaller(t) => Some(t),
                _ => None,
            };
            if let Some(t) = duration_key
                && let Some((_, v)) = cooldown_set_by_caller.iter().find(|(k, _)| *k == t)
            {
                let key = names.tags.name(t).to_string();
                let at = loc.at("cooldown_set_by_caller").at(key.as_str());
                if cooldown_duration.is_some() {
                    return Err(cx.err(
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
                    return Err(cx.err(
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
                &cooldown_set_by_caller,
                duration_key.filter(|_| cooldown_duration.is_some()),
            )?;
            // `cooldown_duration` also sets a SetByCaller duration's key: one value more.
            if duration_key.is_some()
                && cooldown_duration.is_some()
                && cooldown_set_by_caller.len() >= usize::from(MAX_SPEC_ROOM)
            {
                return Err(cx.err(
                    &loc.at("cooldown_set_by_caller"),
                    K::Capacity,
                    format!(
                        "at most {} values besides the duration `cooldown_duration` sets",
                        MAX_SPEC_ROOM - 1
                    ),
                ));
            }
        }
        // Two live in the cooldown spec, the rest in the definition (the spec names them); a
        // world holds up to `WorldConfig::granted_tags_per_spec` per spec, at most
        // `MAX_SPEC_ROOM`.
        let max_tags = usize::from(MAX_SPEC_ROOM);
        if a.cooldown_tags.len() > max_tags {
            return Err(cx.err(
                &loc.at("cooldown_tags").at(max_tags),
                K::Capacity,
                format!(
                    "at most {max_tags} extra cooldown tags (the largest \
                     WorldConfig::granted_tags_per_spec)"
                ),
            ));
        }
        let cooldown_tags: Vec<TagId> = a
            .cooldown_tags
            .iter()
            .enumerate()
            .map(|(i, t)| names.tag(&loc.at("cooldown_tags").at(i), t))
            .collect::<Result<_, _>>()?;
        // The cooldown spec's values in the order the commit sets them: the given ones, then
        // the SetByCaller duration's key from `cooldown_duration`.
        let mut cooldown_values = cooldown_set_by_caller.clone();
        if let (Some(c), Some(d)) = (cooldown, cooldown_duration)
            && let DurationDef::SetByCaller(t) = effects[c.index()].duration
        {
            cooldown_values.push((t, crate::num::int(i64::from(d))));
        }
        let mut all_cooldown_tags = TagSet::of(&cooldown_tags);
        if let Some(c) = cooldown {
            all_cooldown_tags.union_with(&effects[c.index()].granted_tags.explicit);
            if all_cooldown_tags.is_empty() {
                return Err(cx.err(
                    &loc.at("cooldown"),
                    K::InvalidCombination,
                    "the cooldown effect grants no tags and no `cooldown_tags` are given, so the cooldown could never be seen",
                ));
            }
        }
        let mut triggers = Vec::with_capacity(a.triggers.len());
        for (i, t) in a.triggers.iter().enumerate() {
            let tl = loc.at("triggers").at(i).at(0);
            triggers.push(match t {
                RawTrigger::Event(x) => TriggerDef::Event(names.tag(&tl, x)?),
                RawTrigger::TagAdded(x) => TriggerDef::TagAdded(names.tag(&tl, x)?),
                RawTrigger::TagPresent(x) => TriggerDef::TagPresent(names.tag(&tl, x)?),
            });
        }
        if a.instancing == Instancing::NonInstanced && a.state_size > 0 {
            return Err(cx.err(
                &loc.at("state_size"),
                K::InvalidCombination,
                "a NonInstanced ability has no state blob",
            ));
        }
        if a.state_size > 1024 {
            return Err(cx.err(
                &loc.at("state_size"),
                K::Capacity,
                "a state blob may hold at most 1024 bytes",
            ));
        }
        let timeline = match &a.timeline {
            Some(t) => Some(
                timeline_src
                    .keys()
                    .position(|k| k == t)
                    .map(|i| crate::id::TimelineId(i as u16))
                    .ok_or_else(|| {
                    let mut msg = format!("unknown timeline \"{}\"", Clip(t));
                    if let Some(s) = super::suggest(t, timeline_src.keys().map(String::as_str)) {
                        msg.push_str(&format!(" (did you mean \"{}\"?)", Clip(s)));
                    }
                    cx.err(&loc.at("timeline"), K::UnknownName, msg)
                })?,
            ),
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
        let mut cues = Vec::with_capacity(a.cues.len());
        for (i, c) in a.cues.iter().enumerate() {
            let cl = loc.at("cues").at(i);
            if c.magnitude_attribute.is_some() {
                return Err(cx.err(
                    &cl.at("magnitude_attribute"),
                    K::InvalidCombination,
                    "an ability's cue has no magnitude to fill: it is shown while the ability \
                     runs and no modifier of the ability changes an attribute (put the cue on the \
                     effect the ability applies to take its magnitude from an attribute)",
                ));
            }
            if c.events == CueEvents::Executed {
                return Err(cx.err(
                    &cl.at("events"),
                    K::InvalidCombination,
                    "an ability's cue is persistent (added when the ability activates, removed \
                     when it ends), so `Executed` would never fire; use `Auto` or `Persistent`, \
                     or put the cue on an instant effect the ability applies",
                ));
            }
            cues.push(super::cue_tag(names, &cl, c)?);
        }
        if a.passive && (end_after.is_some() || timeline.is_some()) {
            return Err(cx.err(loc, K::InvalidCombination, "a passive ability never ends on its own; remove `end_after`/`timeline` or `passive`"));
        }
        if a.input_buffer > MAX_INPUT_BUFFER {
            return Err(cx.err(
                &loc.at("input_buffer"),
                K::InvalidValue,
                format!(
                    "an input buffer holds a press for at most {MAX_INPUT_BUFFER} frames, not {}",
                    a.input_buffer
                ),
            ));
        }
        if a.input_buffer > 0 && !a.activate_on_input {
            return Err(cx.err(
                &loc.at("input_buffer"),
                K::InvalidCombination,
                "a buffered press activates the ability: `input_buffer` needs `activate_on_input: true`",
            ));
        }
        abilities.push(AbilityDef {
            name: name.clone(),
            tags,
            cancel_abilities_with_tags: set(
                "cancel_abilities_with_tags",
                &a.cancel_abilities_with_tags,
            )?,
            block_abilities_with_tags: set(
                "block_abilities_with_tags",
                &a.block_abilities_with_tags,
            )?,
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
            cooldown,
            cooldown_duration,
            cooldown_values_beyond: beyond_inline(&cooldown_values),
            cooldown_values,
            cooldown_set_by_caller,
            cooldown_tags_beyond: cooldown_tags.iter().skip(2).map(|t| t.0 + 1).collect(),
            cooldown_tags,
            all_cooldown_tags,
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
        });
    }

    // Ability sets.
    let mut sets = Vec::with_capacity(set_src.len());
    for (name, (loc, grants)) in set_src {
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
        sets.push(AbilitySetDef { name: name.clone(), grants: out });
    }

    // Cancel rules.
    let mut rules = Vec::with_capacity(rules_src.len());
    for (file, i, r) in rules_src {
        let rl = root(*file, "cancel_on_tag_added").at(*i);
        rules.push(CancelRuleDef {
            tag: names.tag(&rl.at("tag"), &r.tag)?,
            with: names.tag_set(&rl.at("with"), &r.with)?,
            without: names.tag_set(&rl.at("without"), &r.without)?,
        });
    }
    Ok(Frozen { abilities, sets, timelines, rules })
}
