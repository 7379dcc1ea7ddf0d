//! Validation and freezing of abilities, ability sets, timelines and cancel rules.

use super::{Cx, Loc, Names, root};
use crate::content::def::*;
use crate::content::error::Clip;
use crate::content::raw::*;
use crate::content::{ContentError, ContentErrorKind as K};
use crate::id::{AbilityDefId, EffectDefId, TagId};
use crate::num::Frame;
use crate::tag::TagSet;
use std::collections::BTreeMap;

pub(super) fn frames(names: &Names<'_>, loc: &Loc, f: &RawFrames) -> Result<Frame, ContentError> {
    match f {
        RawFrames::Frames(0) => Err(names.cx.err(loc, K::InvalidValue, "must be at least 1 frame")),
        RawFrames::Frames(n) => Ok(*n),
        RawFrames::Seconds(d) => names.frames(&loc.at(0), d),
    }
}

fn effect_ref(names: &Names<'_>, loc: &Loc, name: &str) -> Result<EffectDefId, ContentError> {
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
        Some(i) if i >= 32 => {
            Err(names.cx.err(loc, K::InvalidValue, format!("input ids are 0..=31, not {i}")))
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
        let mut cost_set_by_caller = Vec::new();
        for (k, v) in &a.cost_set_by_caller.0 {
            cost_set_by_caller.push((names.tag(&loc.at("cost_set_by_caller").at(k), k)?, v.0));
        }
        if cost_set_by_caller.len() > MAX_SET_BY_CALLER {
            return Err(cx.err(
                &loc.at("cost_set_by_caller"),
                K::Capacity,
                format!("at most {MAX_SET_BY_CALLER} values"),
            ));
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
            Some(f) => Some(frames(names, &loc.at("cooldown_duration"), f)?),
            None => None,
        };
        if cooldown.is_none() && (cooldown_duration.is_some() || !a.cooldown_tags.is_empty()) {
            return Err(cx.err(
                &loc.at("cooldown"),
                K::InvalidCombination,
                "`cooldown_duration` and `cooldown_tags` need a `cooldown` effect",
            ));
        }
        if a.cooldown_tags.len() > 2 {
            return Err(cx.err(
                &loc.at("cooldown_tags").at(2),
                K::Capacity,
                "at most 2 extra cooldown tags",
            ));
        }
        let cooldown_tags: Vec<TagId> = a
            .cooldown_tags
            .iter()
            .enumerate()
            .map(|(i, t)| names.tag(&loc.at("cooldown_tags").at(i), t))
            .collect::<Result<_, _>>()?;
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
                timeline_src.keys().position(|k| k == t).map(|i| i as u16).ok_or_else(|| {
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
            Some(f) => Some(frames(names, &loc.at("end_after"), f)?),
            None => None,
        };
        let mut cues = Vec::with_capacity(a.cues.len());
        for (i, c) in a.cues.iter().enumerate() {
            let cl = loc.at("cues").at(i);
            let tag = names.tag(&cl, c)?;
            super::check_cue_tag(names, &cl, tag, c)?;
            cues.push(tag);
        }
        if a.passive && (end_after.is_some() || timeline.is_some()) {
            return Err(cx.err(loc, K::InvalidCombination, "a passive ability never ends on its own; remove `end_after`/`timeline` or `passive`"));
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
            cost_set_by_caller,
            cooldown,
            cooldown_duration,
            cooldown_tags,
            all_cooldown_tags,
            instancing: a.instancing,
            triggers,
            passive: a.passive,
            activate_on_input: a.activate_on_input,
            end_on_release: a.end_on_release,
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
