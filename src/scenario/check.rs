//! Expectations: every check's resolution (names → ids, its one-line statement) and its
//! evaluation, side by side, so a new check is added in one place.

use super::format::{
    RawAbilityEvent, RawActivation, RawApplied, RawApplyFailure, RawCheck, RawCooldown, RawCueKind,
    RawEffectEvent, RawExpect, RawFacing, RawHandlerEvent, RawInstanceEvent, RawTagEvent,
};
use super::names::{Cx, key};
use super::plan::EntitySetup;
use super::routing::{Call, RouteEntry, Routing, What};
use super::{ScenarioError, ScenarioErrorKind as K};
use crate::ability::FailureKind;
use crate::ability::{AbilityEvent, ActivationFailure};
use crate::content::boxes::BoxKind;
use crate::content::error::Clip;
use crate::content::locate::{PathSeg, locate};
use crate::content::raw::Num;
use crate::id::{AbilityDefId, AttrId, EffectDefId, Entity, TagId};
use crate::num::{Frame, Fx};
use crate::present::{CueRouter, PresenterCall};
use crate::world::BoxSource;
use crate::world::{Applied, ApplyError, EffectEvent, Game, RemovalReason, World};

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

/// A count: exactly `exact`, or within `at_least..=at_most`; nothing given means at least one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Count {
    pub exact: Option<u32>,
    pub at_least: Option<u32>,
    pub at_most: Option<u32>,
}

impl Count {
    fn holds(&self, n: u32) -> bool {
        match (self.exact, self.at_least, self.at_most) {
            (Some(e), _, _) => n == e,
            (None, None, None) => n > 0,
            (None, lo, hi) => lo.is_none_or(|lo| n >= lo) && hi.is_none_or(|hi| n <= hi),
        }
    }

    fn describe(&self, noun: &str) -> String {
        let s = |n: u32| if n == 1 { "" } else { "s" };
        match (self.exact, self.at_least, self.at_most) {
            (Some(e), _, _) => format!("{e} {noun}{}", s(e)),
            (None, None, None) => format!("at least 1 {noun}"),
            (None, Some(lo), None) => format!("at least {lo} {noun}{}", s(lo)),
            (None, None, Some(hi)) => format!("at most {hi} {noun}{}", s(hi)),
            (None, Some(lo), Some(hi)) => format!("{lo} to {hi} {noun}s"),
        }
    }

    fn statement(&self) -> String {
        match (self.exact, self.at_least, self.at_most) {
            (Some(e), _, _) => format!(" × {e}"),
            (None, None, None) => " at least once".into(),
            (None, Some(lo), None) => format!(" × ≥ {lo}"),
            (None, None, Some(hi)) => format!(" × ≤ {hi}"),
            (None, Some(lo), Some(hi)) => format!(" × {lo}..={hi}"),
        }
    }
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
        count: Option<Count>,
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
        magnitude: Option<Fx>,
        instigator: Option<usize>,
        count: Count,
    },
    AttrChanged {
        on: usize,
        attr: AttrId,
        from: Option<Fx>,
        to: Option<Fx>,
        count: Count,
    },
    Alive {
        on: usize,
        alive: bool,
    },
    Checksum(u64),
    Applied {
        label: usize,
        result: RawApplied,
    },
    EffectEvent {
        on: usize,
        effect: Option<EffectDefId>,
        event: RawEffectEvent,
        from: Option<u32>,
        to: Option<u32>,
        count: Count,
    },
    AbilityEvent {
        on: usize,
        ability: Option<AbilityDefId>,
        event: RawAbilityEvent,
        count: Count,
    },
    TagEvent {
        on: usize,
        tag: TagId,
        event: RawTagEvent,
        count: Count,
    },
    Hit {
        by: Option<usize>,
        on: Option<usize>,
        timeline: Option<u16>,
        index: Option<u16>,
        count: Count,
    },
    Position {
        on: usize,
        x: Option<Fx>,
        y: Option<Fx>,
        facing_left: Option<bool>,
    },
    Handled {
        handler: usize,
        event: RawHandlerEvent,
        tag: Option<TagId>,
        original_tag: Option<TagId>,
        on: Option<usize>,
        instigator: Option<usize>,
        magnitude: Option<Fx>,
        local: Option<bool>,
        count: Count,
    },
    InstanceEvent {
        handler: usize,
        event: RawInstanceEvent,
        on: Option<usize>,
        count: Count,
    },
    LiveInstances {
        handler: TagId,
        on: Option<usize>,
        count: Option<Count>,
        refs: Option<u32>,
    },
}

fn fx_text(v: Fx) -> String {
    v.to_string()
}

fn count_of(
    count: Option<u32>,
    at_least: Option<u32>,
    at_most: Option<u32>,
) -> Result<Count, String> {
    if count.is_some() && (at_least.is_some() || at_most.is_some()) {
        return Err("give `count` or `at_least`/`at_most`, not both".into());
    }
    if let (Some(lo), Some(hi)) = (at_least, at_most)
        && lo > hi
    {
        return Err(format!("at_least ({lo}) is above at_most ({hi})"));
    }
    Ok(Count { exact: count, at_least, at_most })
}

/// Resolves expectation `i`.
pub(crate) fn resolve(
    cx: &Cx<'_>,
    i: usize,
    e: &RawExpect,
    entities: &[EntitySetup],
    labels: &[String],
    routing: Option<&Routing>,
) -> Result<Check, ScenarioError> {
    let until = e.until.unwrap_or(e.frame);
    if until < e.frame {
        return Err(cx.err(
            K::InvalidValue,
            &[key("expect"), PathSeg::Index(i), key("until")],
            format!("until ({until}) is before frame ({})", e.frame),
        ));
    }
    let ex =
        Expect { cx, base: vec![key("expect"), PathSeg::Index(i), key("that")], entities, routing };
    let (kind, what) = match &e.that {
        RawCheck::Attribute { on, attribute, current, base: b, tolerance } => {
            ex.attribute(on, attribute, current, b, tolerance)?
        }
        RawCheck::Tag { on, tag, present, count, at_least, at_most, exact } => {
            ex.tag(on, tag, present, count, at_least, at_most, exact)?
        }
        RawCheck::Effect { on, effect, present, stacks, remaining, instances, inhibited } => {
            ex.effect(on, effect, present, stacks, remaining, instances, inhibited)?
        }
        RawCheck::Ability { on, ability, granted, active, activation, cooldown } => {
            ex.ability(on, ability, granted, active, activation, cooldown)?
        }
        RawCheck::Cue { tag, kind, on, magnitude, instigator, count, at_least, at_most } => {
            ex.cue(tag, kind, on, magnitude, instigator, count, at_least, at_most)?
        }
        RawCheck::AttributeChanged { on, attribute, from, to, count, at_least, at_most } => {
            ex.attribute_changed(on, attribute, from, to, count, at_least, at_most)?
        }
        RawCheck::Alive { on, alive } => {
            let o = ex.ent("on", on)?;
            (CheckKind::Alive { on: o, alive: *alive }, format!("{on} alive = {alive}"))
        }
        RawCheck::Checksum(v) => (CheckKind::Checksum(*v), format!("checksum = {v:#018x}")),
        RawCheck::Applied { label, result } => {
            let Some(l) = labels.iter().position(|x| x == label) else {
                let mut msg = format!("no operation is labelled \"{}\"", Clip(label));
                if let Some(s) =
                    crate::content::error::suggest(label, labels.iter().map(String::as_str))
                {
                    msg.push_str(&format!(" (did you mean \"{}\"?)", Clip(s)));
                } else {
                    msg.push_str(" (give the ApplyEffect or ApplyInline operation `label: \"…\"`)");
                }
                return Err(ex.cx.err(K::UnknownName, &ex.at("label"), msg));
            };
            (CheckKind::Applied { label: l, result: *result }, format!("{label} → {result:?}"))
        }
        RawCheck::EffectEvent { on, effect, event, from, to, count, at_least, at_most } => {
            ex.effect_event(on, effect, event, from, to, count, at_least, at_most)?
        }
        RawCheck::AbilityEvent { on, ability, event, count, at_least, at_most } => {
            ex.ability_event(on, ability, event, count, at_least, at_most)?
        }
        RawCheck::TagEvent { on, tag, event, count, at_least, at_most } => {
            let o = ex.ent("on", on)?;
            let t = ex.cx.tag(&ex.at("tag"), tag)?;
            let count = ex.counted(*count, *at_least, *at_most)?;
            let what = format!("{on} tag event {event:?} of {tag}{}", count.statement());
            (CheckKind::TagEvent { on: o, tag: t, event: *event, count }, what)
        }
        RawCheck::Hit { by, on, timeline, index, count, at_least, at_most } => {
            ex.hit(by, on, timeline, index, count, at_least, at_most)?
        }
        RawCheck::Position { on, x, y, facing } => ex.position(on, x, y, facing)?,
        RawCheck::Handled {
            handler,
            event,
            tag,
            original_tag,
            on,
            instigator,
            magnitude,
            local,
            count,
            at_least,
            at_most,
        } => ex.handled(
            handler,
            event,
            tag,
            original_tag,
            on,
            instigator,
            magnitude,
            local,
            count,
            at_least,
            at_most,
        )?,
        RawCheck::InstanceEvent { handler, event, on, count, at_least, at_most } => {
            ex.instance_event(handler, event, on, count, at_least, at_most)?
        }
        RawCheck::LiveInstances { handler, on, count, at_least, at_most, refs } => {
            ex.live_instances(handler, on, count, at_least, at_most, refs)?
        }
    };
    let (pos, _) = locate(cx.source, &[key("expect"), PathSeg::Index(i)]);
    Ok(Check { index: i, frame: e.frame, until, line: pos.line, what, kind })
}

/// One expectation being resolved: where it sits and the names it may use.
struct Expect<'s, 'a> {
    cx: &'s Cx<'a>,
    /// The path of its `that`.
    base: Vec<PathSeg>,
    entities: &'s [EntitySetup],
    routing: Option<&'s Routing>,
}

impl Expect<'_, '_> {
    fn at(&self, k: &str) -> Vec<PathSeg> {
        [&self.base[..], &[key(k)]].concat()
    }

    fn ent(&self, k: &str, name: &str) -> Result<usize, ScenarioError> {
        self.cx.entity(&self.at(k), name)
    }

    fn counted(
        &self,
        count: Option<u32>,
        at_least: Option<u32>,
        at_most: Option<u32>,
    ) -> Result<Count, ScenarioError> {
        count_of(count, at_least, at_most).map_err(|m| self.cx.err(K::InvalidValue, &self.base, m))
    }

    /// Entity `on` has attribute `a` (one of its attribute sets declares it).
    fn has_attr(&self, on: usize, a: AttrId, name: &str) -> Result<(), ScenarioError> {
        let c = self.cx.content;
        let sets = &self.entities[on].sets;
        if sets
            .iter()
            .any(|s| c.attr_set_defs().get(s.index()).is_some_and(|d| d.attributes.contains(&a)))
        {
            Ok(())
        } else {
            Err(self.cx.err(
                K::InvalidValue,
                &self.at("attribute"),
                format!(
                    "\"{}\" has no attribute \"{}\" (its attribute sets do not declare it)",
                    Clip(&self.entities[on].name),
                    Clip(name)
                ),
            ))
        }
    }

    /// `Attribute`: an attribute's current and base values.
    fn attribute(
        &self,
        on: &str,
        attribute: &str,
        current: &Option<Num>,
        b: &Option<Num>,
        tolerance: &Option<Num>,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let o = self.ent("on", on)?;
        let a = self.cx.attr(&self.at("attribute"), attribute)?;
        self.has_attr(o, a, attribute)?;
        if current.is_none() && b.is_none() {
            return Err(self.cx.err(
                K::InvalidValue,
                &self.base,
                "an Attribute check needs `current`, `base` or both",
            ));
        }
        let mut what = format!("{on}.{attribute}");
        if let Some(v) = current {
            what.push_str(&format!(" current = {}", fx_text(v.0)));
        }
        if let Some(v) = b {
            what.push_str(&format!(" base = {}", fx_text(v.0)));
        }
        let tolerance = tolerance.map_or(Fx::ZERO, |t| t.0.abs());
        if tolerance != Fx::ZERO {
            what.push_str(&format!(" (± {})", fx_text(tolerance)));
        }
        let kind = CheckKind::Attribute {
            on: o,
            attr: a,
            current: current.map(|v| v.0),
            base: b.map(|v| v.0),
            tolerance,
        };
        Ok((kind, what))
    }

    /// `Tag`: a tag's presence or count.
    #[allow(clippy::too_many_arguments, reason = "the fields of one expectation kind, as written")]
    fn tag(
        &self,
        on: &str,
        tag: &str,
        present: &Option<bool>,
        count: &Option<u32>,
        at_least: &Option<u32>,
        at_most: &Option<u32>,
        exact: &bool,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let o = self.ent("on", on)?;
        let t = self.cx.tag(&self.at("tag"), tag)?;
        let ranged = count.is_some() || at_least.is_some() || at_most.is_some();
        if present.is_none() && !ranged {
            return Err(self.cx.err(
                K::InvalidValue,
                &self.base,
                "a Tag check needs `present`, `count` (or `at_least`/`at_most`) or both",
            ));
        }
        let count = if ranged { Some(self.counted(*count, *at_least, *at_most)?) } else { None };
        let mut what = format!("{on} tag {tag}");
        if let Some(p) = present {
            what.push_str(if *p { " present" } else { " absent" });
        }
        if let Some(n) = count {
            what.push_str(&format!(" count {}", n.describe("").trim_end()));
        }
        if *exact {
            what.push_str(" (exact)");
        }
        Ok((CheckKind::Tag { on: o, tag: t, present: *present, count, exact: *exact }, what))
    }

    /// `Effect`: an active effect's presence, stacks, remaining frames, instances, inhibition.
    #[allow(clippy::too_many_arguments, reason = "the fields of one expectation kind, as written")]
    fn effect(
        &self,
        on: &str,
        effect: &str,
        present: &Option<bool>,
        stacks: &Option<u16>,
        remaining: &Option<u32>,
        instances: &Option<u32>,
        inhibited: &Option<bool>,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let o = self.ent("on", on)?;
        let fx = self.cx.effect(&self.at("effect"), effect)?;
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
        let kind = CheckKind::Effect {
            on: o,
            effect: fx,
            present: *present,
            stacks: *stacks,
            remaining: *remaining,
            instances: *instances,
            inhibited: *inhibited,
        };
        Ok((kind, what))
    }

    /// `Ability`: a granted ability's state, last activation and cooldown.
    fn ability(
        &self,
        on: &str,
        ability: &str,
        granted: &Option<bool>,
        active: &Option<bool>,
        activation: &Option<RawActivation>,
        cooldown: &Option<RawCooldown>,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let o = self.ent("on", on)?;
        let a = self.cx.ability(&self.at("ability"), ability)?;
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
        let kind = CheckKind::Ability {
            on: o,
            ability: a,
            granted: *granted,
            active: *active,
            activation: *activation,
            cooldown: *cooldown,
        };
        Ok((kind, what))
    }

    /// `Cue`: cues executed, added or removed.
    #[allow(clippy::too_many_arguments, reason = "the fields of one expectation kind, as written")]
    fn cue(
        &self,
        tag: &str,
        kind: &RawCueKind,
        on: &Option<String>,
        magnitude: &Option<Num>,
        instigator: &Option<String>,
        count: &Option<u32>,
        at_least: &Option<u32>,
        at_most: &Option<u32>,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let t = self.cx.tag(&self.at("tag"), tag)?;
        let o = on.as_ref().map(|n| self.ent("on", n)).transpose()?;
        let inst = instigator.as_ref().map(|n| self.ent("instigator", n)).transpose()?;
        let count = self.counted(*count, *at_least, *at_most)?;
        let mut what = format!("cue {tag} {kind:?}");
        if let Some(n) = on {
            what.push_str(&format!(" on {n}"));
        }
        if let Some(m) = magnitude {
            what.push_str(&format!(" magnitude {}", fx_text(m.0)));
        }
        if let Some(n) = instigator {
            what.push_str(&format!(" by {n}"));
        }
        what.push_str(&count.statement());
        let kind = CheckKind::Cue {
            tag: t,
            kind: *kind,
            on: o,
            magnitude: magnitude.map(|m| m.0),
            instigator: inst,
            count,
        };
        Ok((kind, what))
    }

    /// `AttributeChanged`: changes of an attribute's current value.
    #[allow(clippy::too_many_arguments, reason = "the fields of one expectation kind, as written")]
    fn attribute_changed(
        &self,
        on: &str,
        attribute: &str,
        from: &Option<Num>,
        to: &Option<Num>,
        count: &Option<u32>,
        at_least: &Option<u32>,
        at_most: &Option<u32>,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let o = self.ent("on", on)?;
        let a = self.cx.attr(&self.at("attribute"), attribute)?;
        self.has_attr(o, a, attribute)?;
        let count = self.counted(*count, *at_least, *at_most)?;
        let mut what = format!("{on}.{attribute} changed");
        if let Some(v) = from {
            what.push_str(&format!(" from {}", fx_text(v.0)));
        }
        if let Some(v) = to {
            what.push_str(&format!(" to {}", fx_text(v.0)));
        }
        what.push_str(&count.statement());
        let kind = CheckKind::AttrChanged {
            on: o,
            attr: a,
            from: from.map(|v| v.0),
            to: to.map(|v| v.0),
            count,
        };
        Ok((kind, what))
    }

    /// `EffectEvent`: effect events.
    #[allow(clippy::too_many_arguments, reason = "the fields of one expectation kind, as written")]
    fn effect_event(
        &self,
        on: &str,
        effect: &Option<String>,
        event: &RawEffectEvent,
        from: &Option<u32>,
        to: &Option<u32>,
        count: &Option<u32>,
        at_least: &Option<u32>,
        at_most: &Option<u32>,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let o = self.ent("on", on)?;
        let fx = effect.as_ref().map(|n| self.cx.effect(&self.at("effect"), n)).transpose()?;
        if (from.is_some() || to.is_some())
            && !matches!(event, RawEffectEvent::StackChanged | RawEffectEvent::DurationChanged)
        {
            return Err(self.cx.err(
                K::InvalidValue,
                &self.at("from"),
                "`from` and `to` apply to the events StackChanged and DurationChanged only",
            ));
        }
        let count = self.counted(*count, *at_least, *at_most)?;
        let mut what = format!("{on} effect event {event:?}");
        if let Some(n) = effect {
            what.push_str(&format!(" of {n}"));
        }
        if let Some(v) = from {
            what.push_str(&format!(" from {v}"));
        }
        if let Some(v) = to {
            what.push_str(&format!(" to {v}"));
        }
        what.push_str(&count.statement());
        let kind = CheckKind::EffectEvent {
            on: o,
            effect: fx,
            event: *event,
            from: *from,
            to: *to,
            count,
        };
        Ok((kind, what))
    }

    /// `AbilityEvent`: ability events.
    fn ability_event(
        &self,
        on: &str,
        ability: &Option<String>,
        event: &RawAbilityEvent,
        count: &Option<u32>,
        at_least: &Option<u32>,
        at_most: &Option<u32>,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let o = self.ent("on", on)?;
        let a = ability.as_ref().map(|n| self.cx.ability(&self.at("ability"), n)).transpose()?;
        let count = self.counted(*count, *at_least, *at_most)?;
        let mut what = format!("{on} ability event {event:?}");
        if let Some(n) = ability {
            what.push_str(&format!(" of {n}"));
        }
        what.push_str(&count.statement());
        Ok((CheckKind::AbilityEvent { on: o, ability: a, event: *event, count }, what))
    }

    /// `Hit`: hits of hit boxes (by, on, timeline, box).
    #[allow(clippy::too_many_arguments, reason = "the fields of one expectation kind, as written")]
    fn hit(
        &self,
        by: &Option<String>,
        on: &Option<String>,
        timeline: &Option<String>,
        index: &Option<u16>,
        count: &Option<u32>,
        at_least: &Option<u32>,
        at_most: &Option<u32>,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let content = self.cx.content;
        let b = by.as_ref().map(|n| self.ent("by", n)).transpose()?;
        let o = on.as_ref().map(|n| self.ent("on", n)).transpose()?;
        let t = match timeline {
            Some(n) => Some(self.cx.named(&self.at("timeline"), content.timeline(n))?),
            None => None,
        };
        if let (Some(t), Some(i)) = (t, index) {
            let boxes = &content.timeline_defs()[t.index()].boxes;
            if boxes.get(usize::from(*i)).is_none_or(|b| b.kind != BoxKind::Hit) {
                let hits: Vec<String> = boxes
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.kind == BoxKind::Hit)
                    .map(|(j, b)| format!("{j} (frames {}..{})", b.from, b.to))
                    .collect();
                return Err(self.cx.err(
                    K::InvalidValue,
                    &self.at("box"),
                    format!(
                        "box {i} of the timeline \"{}\" is not a hit box (its hit boxes: {})",
                        Clip(timeline.as_deref().unwrap_or_default()),
                        if hits.is_empty() { "none".into() } else { hits.join(", ") }
                    ),
                ));
            }
        }
        if !content.has_hit_boxes() {
            return Err(self.cx.err(
                K::InvalidValue,
                &self.base,
                "a Hit check counts hits of hit boxes, but the content declares none",
            ));
        }
        let count = self.counted(*count, *at_least, *at_most)?;
        let mut what = "hit".to_string();
        if let Some(n) = by {
            what.push_str(&format!(" by {n}"));
        }
        if let Some(n) = on {
            what.push_str(&format!(" on {n}"));
        }
        if let Some(n) = timeline {
            what.push_str(&format!(" with {n}"));
        }
        if let Some(i) = index {
            what.push_str(&format!(" box {i}"));
        }
        what.push_str(&count.statement());
        let kind = CheckKind::Hit {
            by: b,
            on: o,
            timeline: t.map(|t| t.index() as u16),
            index: *index,
            count,
        };
        Ok((kind, what))
    }

    /// `Position`: where an entity's boxes stand.
    fn position(
        &self,
        on: &str,
        x: &Option<Num>,
        y: &Option<Num>,
        facing: &Option<RawFacing>,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let o = self.ent("on", on)?;
        if x.is_none() && y.is_none() && facing.is_none() {
            return Err(self.cx.err(
                K::InvalidValue,
                &self.base,
                "a Position check needs `x`, `y`, `facing` or several",
            ));
        }
        let mut what = format!("{on} at");
        if let Some(v) = x {
            what.push_str(&format!(" x = {}", fx_text(v.0)));
        }
        if let Some(v) = y {
            what.push_str(&format!(" y = {}", fx_text(v.0)));
        }
        if let Some(f) = facing {
            what.push_str(&format!(" facing {f:?}"));
        }
        let kind = CheckKind::Position {
            on: o,
            x: x.map(|v| v.0),
            y: y.map(|v| v.0),
            facing_left: facing.map(|f| f == RawFacing::Left),
        };
        Ok((kind, what))
    }

    /// `Handled`: calls a cue routing handler received.
    #[allow(clippy::too_many_arguments, reason = "the fields of one expectation kind, as written")]
    fn handled(
        &self,
        handler: &str,
        event: &RawHandlerEvent,
        tag: &Option<String>,
        original_tag: &Option<String>,
        on: &Option<String>,
        instigator: &Option<String>,
        magnitude: &Option<Num>,
        local: &Option<bool>,
        count: &Option<u32>,
        at_least: &Option<u32>,
        at_most: &Option<u32>,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let (h, _) = handler_of(self.cx, &self.at("handler"), handler, self.routing, false)?;
        let t = tag.as_ref().map(|n| self.cx.tag(&self.at("tag"), n)).transpose()?;
        let ot =
            original_tag.as_ref().map(|n| self.cx.tag(&self.at("original_tag"), n)).transpose()?;
        let o = on.as_ref().map(|n| self.ent("on", n)).transpose()?;
        let inst = instigator.as_ref().map(|n| self.ent("instigator", n)).transpose()?;
        let count = self.counted(*count, *at_least, *at_most)?;
        let mut what = format!("handler {handler} {event:?}");
        if let Some(n) = tag {
            what.push_str(&format!(" of {n}"));
        }
        if let Some(n) = original_tag {
            what.push_str(&format!(" (emitted as {n})"));
        }
        if let Some(n) = on {
            what.push_str(&format!(" on {n}"));
        }
        if let Some(n) = instigator {
            what.push_str(&format!(" by {n}"));
        }
        if let Some(m) = magnitude {
            what.push_str(&format!(" magnitude {}", fx_text(m.0)));
        }
        match local {
            Some(true) => what.push_str(" (local)"),
            Some(false) => what.push_str(" (simulated)"),
            None => {}
        }
        what.push_str(&count.statement());
        let kind = CheckKind::Handled {
            handler: h,
            event: *event,
            tag: t,
            original_tag: ot,
            on: o,
            instigator: inst,
            magnitude: magnitude.map(|m| m.0),
            local: *local,
            count,
        };
        Ok((kind, what))
    }

    /// `InstanceEvent`: instance events of an instanced handler.
    fn instance_event(
        &self,
        handler: &str,
        event: &RawInstanceEvent,
        on: &Option<String>,
        count: &Option<u32>,
        at_least: &Option<u32>,
        at_most: &Option<u32>,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let (h, _) = handler_of(self.cx, &self.at("handler"), handler, self.routing, true)?;
        let o = on.as_ref().map(|n| self.ent("on", n)).transpose()?;
        let count = self.counted(*count, *at_least, *at_most)?;
        let mut what = format!("handler {handler} instance {event:?}");
        if let Some(n) = on {
            what.push_str(&format!(" on {n}"));
        }
        what.push_str(&count.statement());
        Ok((CheckKind::InstanceEvent { handler: h, event: *event, on: o, count }, what))
    }

    /// `LiveInstances`: live instances of an instanced handler and their references.
    fn live_instances(
        &self,
        handler: &str,
        on: &Option<String>,
        count: &Option<u32>,
        at_least: &Option<u32>,
        at_most: &Option<u32>,
        refs: &Option<u32>,
    ) -> Result<(CheckKind, String), ScenarioError> {
        let (_, tag) = handler_of(self.cx, &self.at("handler"), handler, self.routing, true)?;
        let o = on.as_ref().map(|n| self.ent("on", n)).transpose()?;
        let ranged = count.is_some() || at_least.is_some() || at_most.is_some();
        if !ranged && refs.is_none() {
            return Err(self.cx.err(
                K::InvalidValue,
                &self.base,
                "a LiveInstances check needs `count` (or `at_least`/`at_most`), `refs` or \
                 both",
            ));
        }
        let count = if ranged { Some(self.counted(*count, *at_least, *at_most)?) } else { None };
        let mut what = format!("handler {handler} live instances");
        if let Some(n) = on {
            what.push_str(&format!(" on {n}"));
        }
        if let Some(c) = count {
            what.push_str(&format!(" {}", c.describe("instance")));
        }
        if let Some(r) = refs {
            what.push_str(&format!(", {r} references"));
        }
        Ok((CheckKind::LiveInstances { handler: tag, on: o, count, refs: *refs }, what))
    }
}

/// A handler of the scenario's `cue_routing` by name (instanced only, when `instanced`).
fn handler_of(
    cx: &Cx<'_>,
    path: &[PathSeg],
    name: &str,
    routing: Option<&Routing>,
    instanced: bool,
) -> Result<(usize, TagId), ScenarioError> {
    let Some(r) = routing.filter(|r| !r.handlers.is_empty()) else {
        return Err(cx.err(
            K::UnknownName,
            path,
            format!(
                "no handler named \"{}\": declare handlers in `cue_routing: (handlers: {{ … }})`",
                Clip(name)
            ),
        ));
    };
    let Some(h) = r.handler(name) else {
        let mut msg = format!("no handler named \"{}\"", Clip(name));
        if let Some(s) =
            crate::content::error::suggest(name, r.handlers.iter().map(|h| h.name.as_str()))
        {
            msg.push_str(&format!(" (did you mean \"{}\"?)", Clip(s)));
        } else {
            let names: Vec<&str> = r.handlers.iter().map(|h| h.name.as_str()).collect();
            msg.push_str(&format!(" (handlers: {})", names.join(", ")));
        }
        return Err(cx.err(K::UnknownName, path, msg));
    };
    if instanced && !r.handlers[h].instanced {
        return Err(cx.err(
            K::InvalidValue,
            path,
            format!(
                "the handler \"{}\" is static: instances belong to `kind: Instanced` handlers",
                Clip(name)
            ),
        ));
    }
    Ok((h, r.handlers[h].tag))
}

/// Per-expectation progress over its frames.
#[derive(Default)]
pub(crate) struct Progress {
    pub failures: u32,
    pub failed_at: Option<Frame>,
    pub expected: String,
    pub actual: String,
    events: u32,
    ran: u32,
}

impl Progress {
    fn fail(&mut self, f: Frame, expected: String, actual: String) {
        if self.failures == 0 {
            self.failed_at = Some(f);
            self.expected = expected;
            self.actual = actual;
        }
        self.failures += 1;
    }

    /// Records a state check's outcome at frame `f`.
    fn state(&mut self, f: Frame, ok: bool, expected: Vec<String>, actual: Vec<String>) {
        if !ok {
            self.fail(f, expected.join(", "), actual.join(", "));
        } else if self.failures == 0 {
            self.expected = expected.join(", ");
            self.actual = actual.join(", ");
        }
    }

    fn finish_count(&mut self, count: &Count, noun: &str, f: Frame) {
        let actual =
            format!("{} {}", self.events, if self.events == 1 { "event" } else { "events" });
        if !count.holds(self.events) {
            self.failures = 1;
            self.failed_at = Some(f);
        }
        self.expected = count.describe(noun);
        self.actual = actual;
    }
}

/// What a frame of plain stepping shows the checks.
pub(crate) struct FrameView<'a, G: Game> {
    pub world: &'a World<G>,
    pub ents: &'a [Entity],
    /// Presenter calls made after the frame.
    pub calls: &'a [(Frame, PresenterCall)],
    /// Results of labelled applications in the frame: (label, result).
    pub applied: &'a [(usize, Result<Applied, ApplyError>)],
    /// Handler calls made after the frame (the presenter calls' and the local cues').
    pub routed: &'a [RouteEntry],
    /// The scenario's cue router after the frame's presentation.
    pub router: &'a CueRouter,
    pub frame: Frame,
}

fn failure_matches(want: FailureKind, got: ActivationFailure) -> bool {
    got.kind() == want
}

fn applied_matches(want: RawApplied, got: Result<Applied, ApplyError>) -> bool {
    use RawApplyFailure as F;
    match (want, got) {
        (RawApplied::Executed, Ok(Applied::Executed))
        | (RawApplied::Added, Ok(Applied::Added(_)))
        | (RawApplied::Stacked, Ok(Applied::Stacked(_)))
        | (RawApplied::Redirected, Ok(Applied::Redirected(_))) => true,
        (RawApplied::Failed(f), Err(e)) => matches!(
            (f, e),
            (F::InvalidTarget, ApplyError::InvalidTarget)
                | (F::Requirements, ApplyError::Requirements)
                | (F::Immune, ApplyError::Immune { .. })
                | (F::CustomRequirement, ApplyError::CustomRequirement)
                | (F::MissingSetByCaller, ApplyError::MissingSetByCaller { .. })
                | (F::StackOverflowDenied, ApplyError::StackOverflowDenied)
                | (F::Capacity, ApplyError::Capacity)
        ),
        _ => false,
    }
}

fn applied_text(r: Result<Applied, ApplyError>) -> String {
    match r {
        Ok(Applied::Executed) => "Executed".into(),
        Ok(Applied::Added(_)) => "Added".into(),
        Ok(Applied::Stacked(_)) => "Stacked".into(),
        Ok(Applied::Redirected(_)) => "Redirected".into(),
        Ok(Applied::Queued) => "Queued".into(),
        Err(e) => format!("Failed({e})"),
    }
}

/// How many of a frame's effect events on `target` match.
fn effect_events<G: Game>(
    w: &World<G>,
    target: Entity,
    effect: Option<EffectDefId>,
    event: RawEffectEvent,
    from: Option<u32>,
    to: Option<u32>,
) -> u32 {
    // Remaining frames as the `Effect` check counts them (after the frame).
    let frame = w.frame();
    let def_of = |h: crate::id::EffectHandle| w.effect(h).map(|e| e.def);
    let def_ok = |d: Option<EffectDefId>| effect.is_none_or(|want| d == Some(want));
    let left = |at: Frame| at.saturating_sub(frame);
    let ends = |a: Option<u32>, b: Option<u32>| {
        from.is_none_or(|v| a == Some(v)) && to.is_none_or(|v| b == Some(v))
    };
    w.output()
        .effect_events
        .iter()
        .filter(|e| match (**e, event) {
            (EffectEvent::Added { handle, def }, RawEffectEvent::Added) => {
                handle.target == target && def_ok(Some(def))
            }
            (EffectEvent::Removed { handle, def, reason }, ev) => {
                let reason_ok = match ev {
                    RawEffectEvent::Removed => true,
                    RawEffectEvent::Expired => reason == RemovalReason::Expired,
                    RawEffectEvent::RemovedByCall => reason == RemovalReason::Removed,
                    RawEffectEvent::RemovedByTags => reason == RemovalReason::RemovedByTags,
                    RawEffectEvent::TargetDespawned => reason == RemovalReason::TargetDespawned,
                    _ => false,
                };
                reason_ok && handle.target == target && def_ok(Some(def))
            }
            (EffectEvent::Executed { target: t, def, .. }, RawEffectEvent::Executed) => {
                t == target && def_ok(def)
            }
            (EffectEvent::StackChanged { handle, old, new }, RawEffectEvent::StackChanged) => {
                handle.target == target
                    && def_ok(def_of(handle))
                    && ends(Some(u32::from(old)), Some(u32::from(new)))
            }
            (
                EffectEvent::DurationChanged { handle, old_expires_at, new_expires_at },
                RawEffectEvent::DurationChanged,
            ) => {
                handle.target == target
                    && def_ok(def_of(handle))
                    && ends(Some(left(old_expires_at)), Some(left(new_expires_at)))
            }
            (EffectEvent::InhibitionChanged { handle, inhibited }, ev) => {
                let dir = match ev {
                    RawEffectEvent::Inhibited => inhibited,
                    RawEffectEvent::Uninhibited => !inhibited,
                    _ => false,
                };
                dir && handle.target == target && def_ok(def_of(handle))
            }
            (
                EffectEvent::ImmunityBlocked { target: t, def, .. },
                RawEffectEvent::ImmunityBlocked,
            ) => t == target && def_ok(def),
            (EffectEvent::ApplyFailed { target: t, def, .. }, RawEffectEvent::ApplyFailed) => {
                t == target && def_ok(def)
            }
            _ => false,
        })
        .count() as u32
}

/// Checks one expectation at frame `v.frame` (state checks) or accumulates its events.
pub(crate) fn evaluate<G: Game>(c: &Check, p: &mut Progress, v: &FrameView<'_, G>) {
    let (w, ents, f) = (v.world, v.ents, v.frame);
    let fx = fx_text;
    // Event checks: `n` events in this frame, judged at the last frame of the window.
    if let Some((n, count, noun)) = events_of(&c.kind, v) {
        p.events += n;
        if f == c.until {
            p.finish_count(count, noun, f);
        }
        return;
    }
    match &c.kind {
        CheckKind::Attribute { on, attr, current, base, tolerance } => {
            let Some(val) = w.attr_value(ents[*on], *attr) else {
                p.fail(f, c.what.clone(), "the entity has no such attribute (despawned?)".into());
                return;
            };
            let close = |a: Fx, b: Fx| a.saturating_sub(b).saturating_abs() <= *tolerance;
            let (mut exp, mut act, mut ok) = (Vec::new(), Vec::new(), true);
            if let Some(want) = current {
                ok &= close(val.current, *want);
                exp.push(format!("current {}", fx(*want)));
                act.push(format!("current {}", fx(val.current)));
            }
            if let Some(want) = base {
                ok &= close(val.base, *want);
                exp.push(format!("base {}", fx(*want)));
                act.push(format!("base {}", fx(val.base)));
            }
            p.state(f, ok, exp, act);
        }
        CheckKind::Tag { on, tag, present, count, exact } => {
            let n = if *exact {
                w.tag_count_exact(ents[*on], *tag)
            } else {
                w.tag_count(ents[*on], *tag)
            };
            let ok = present.is_none_or(|want| (n > 0) == want)
                && count.is_none_or(|want| want.holds(n));
            let describe =
                |n: u32| if n == 0 { "absent".to_string() } else { format!("present, count {n}") };
            let expected = match (present, count) {
                (_, Some(Count { exact: Some(want), .. })) => describe(*want),
                (_, Some(cnt)) => format!("count {}", cnt.describe("").trim_end()),
                (Some(true), None) => "present".to_string(),
                _ => "absent".to_string(),
            };
            p.state(f, ok, vec![expected], vec![describe(n)]);
        }
        CheckKind::Effect { on, effect, present, stacks, remaining, instances, inhibited } => {
            let (ok, exp, act) =
                effect_state(w, ents, on, effect, present, stacks, remaining, instances, inhibited);
            p.state(f, ok, exp, act);
        }
        CheckKind::Ability { on, ability, granted, active, activation, cooldown } => {
            let (ok, exp, act) =
                ability_state(w, ents, f, on, ability, granted, active, activation, cooldown);
            p.state(f, ok, exp, act);
        }
        CheckKind::Alive { on, alive } => {
            let got = w.is_alive(ents[*on]);
            let text = |b: bool| if b { "alive" } else { "despawned" }.to_string();
            p.state(f, got == *alive, vec![text(*alive)], vec![text(got)]);
        }
        CheckKind::Checksum(want) => {
            let got = w.checksum();
            p.state(f, got == *want, vec![format!("{want:#018x}")], vec![format!("{got:#018x}")]);
        }
        CheckKind::Applied { label, result } => {
            for &(_, r) in v.applied.iter().filter(|(l, _)| l == label) {
                p.ran += 1;
                if !applied_matches(*result, r) {
                    p.fail(f, format!("{result:?}"), applied_text(r));
                } else if p.failures == 0 {
                    p.expected = format!("{result:?}");
                    p.actual = applied_text(r);
                }
            }
            if f == c.until && p.ran == 0 {
                p.fail(
                    f,
                    format!("{result:?}"),
                    "the operation did not run in these frames".into(),
                );
            }
        }
        CheckKind::Position { on, x, y, facing_left } => {
            let Some(a) = G::box_anchor(w, ents[*on]) else {
                p.fail(f, c.what.clone(), "no position (not placed, or despawned)".into());
                return;
            };
            let (mut exp, mut act, mut ok) = (Vec::new(), Vec::new(), true);
            if let Some(want) = x {
                ok &= a.x == *want;
                exp.push(format!("x {}", fx(*want)));
                act.push(format!("x {}", fx(a.x)));
            }
            if let Some(want) = y {
                ok &= a.y == *want;
                exp.push(format!("y {}", fx(*want)));
                act.push(format!("y {}", fx(a.y)));
            }
            let side = |left: bool| if left { "facing Left" } else { "facing Right" };
            if let Some(want) = facing_left {
                ok &= a.facing_left == *want;
                exp.push(side(*want).to_string());
                act.push(side(a.facing_left).to_string());
            }
            p.state(f, ok, exp, act);
        }
        CheckKind::LiveInstances { handler, on, count, refs } => {
            let (mut n, mut r) = (0u32, 0u32);
            for (k, members) in v.router.live_instances_of(*handler) {
                if on.is_none_or(|o| k.target == ents[o]) {
                    n += 1;
                    r = r.saturating_add(members as u32);
                }
            }
            let ok = count.is_none_or(|c| c.holds(n)) && refs.is_none_or(|want| want == r);
            let (mut exp, mut act) = (Vec::new(), vec![format!("{n} live")]);
            if let Some(c) = count {
                exp.push(format!("{} live", c.describe("instance")));
            }
            if let Some(want) = refs {
                exp.push(format!("{want} references"));
                act.push(format!("{r} references"));
            }
            p.state(f, ok, exp, act);
        }
        CheckKind::Cue { .. }
        | CheckKind::AttrChanged { .. }
        | CheckKind::EffectEvent { .. }
        | CheckKind::AbilityEvent { .. }
        | CheckKind::TagEvent { .. }
        | CheckKind::Hit { .. }
        | CheckKind::Handled { .. }
        | CheckKind::InstanceEvent { .. } => {} // counted by `events_of`
    }
}

/// An event check's events in this frame (what it counts, named): `None` for a state check.
fn events_of<'c, G: Game>(
    kind: &'c CheckKind,
    v: &FrameView<'_, G>,
) -> Option<(u32, &'c Count, &'static str)> {
    let (w, ents) = (v.world, v.ents);
    match kind {
        CheckKind::Cue { tag, kind, on, magnitude, instigator, count } => {
            let n = v
                .calls
                .iter()
                .filter(|(_, call)| {
                    let k = call.key();
                    let kind_ok = matches!(
                        (kind, call),
                        (RawCueKind::Executed, PresenterCall::Play(_))
                            | (RawCueKind::OnActive, PresenterCall::OnActive(_))
                            | (RawCueKind::WhileActive, PresenterCall::WhileActive(_))
                            | (RawCueKind::Removed, PresenterCall::Removed(..))
                    );
                    let params_ok = (magnitude.is_none() && instigator.is_none())
                        || w.output().cues.iter().find(|r| r.key == k).is_some_and(|r| {
                            magnitude.is_none_or(|m| r.params.magnitude == m)
                                && instigator.is_none_or(|i| r.params.instigator == ents[i])
                        });
                    kind_ok && k.tag == *tag && on.is_none_or(|o| k.target == ents[o]) && params_ok
                })
                .count() as u32;
            Some((n, count, "call"))
        }
        CheckKind::AttrChanged { on, attr, from, to, count } => {
            let n = w
                .output()
                .attr_events
                .iter()
                .filter(|e| {
                    e.entity == ents[*on]
                        && e.attr == *attr
                        && from.is_none_or(|v| e.old == v)
                        && to.is_none_or(|v| e.new == v)
                })
                .count() as u32;
            Some((n, count, "change"))
        }
        CheckKind::EffectEvent { on, effect, event, from, to, count } => {
            let n = effect_events(w, ents[*on], *effect, *event, *from, *to);
            Some((n, count, "event"))
        }
        CheckKind::AbilityEvent { on, ability, event, count } => {
            Some((ability_events(w, ents[*on], *ability, *event), count, "event"))
        }
        CheckKind::TagEvent { on, tag, event, count } => {
            let n = w
                .output()
                .tag_events
                .iter()
                .filter(|e| {
                    e.entity == ents[*on]
                        && e.tag == *tag
                        && match event {
                            RawTagEvent::NewOrRemoved => e.is_new_or_removed(),
                            RawTagEvent::Added => e.old == 0 && e.new > 0,
                            RawTagEvent::Removed => e.old > 0 && e.new == 0,
                            RawTagEvent::AnyCountChange => e.old != e.new,
                        }
                })
                .count() as u32;
            Some((n, count, "event"))
        }
        CheckKind::Hit { by, on, timeline, index, count } => {
            let n = w
                .output()
                .hits
                .iter()
                .filter(|h| {
                    let timeline_ok = timeline.is_none_or(|t| {
                        matches!(h.source, BoxSource::Timeline { timeline, .. } if timeline == t)
                    });
                    by.is_none_or(|b| h.attacker == ents[b])
                        && on.is_none_or(|o| h.target == ents[o])
                        && timeline_ok
                        && index.is_none_or(|i| h.index == i)
                })
                .count() as u32;
            Some((n, count, "hit"))
        }
        CheckKind::Handled {
            handler,
            event,
            tag,
            original_tag,
            on,
            instigator,
            magnitude,
            local,
            count,
        } => {
            let n = v
                .routed
                .iter()
                .filter(|e| {
                    let call_ok = matches!(
                        (event, e.what),
                        (RawHandlerEvent::Executed, What::Call(Call::Executed))
                            | (RawHandlerEvent::OnActive, What::Call(Call::OnActive))
                            | (RawHandlerEvent::WhileActive, What::Call(Call::WhileActive))
                            | (RawHandlerEvent::Removed, What::Call(Call::Removed(_)))
                    );
                    call_ok
                        && e.handler == *handler
                        && tag.is_none_or(|t| e.key.tag == t)
                        && original_tag.is_none_or(|t| e.original_tag == t)
                        && on.is_none_or(|o| e.key.target == ents[o])
                        && instigator.is_none_or(|i| e.instigator == ents[i])
                        && magnitude.is_none_or(|m| e.magnitude == m)
                        && local.is_none_or(|l| e.cause.is_none() == l)
                })
                .count() as u32;
            Some((n, count, "call"))
        }
        CheckKind::InstanceEvent { handler, event, on, count } => {
            let want = match event {
                RawInstanceEvent::Created => What::Created,
                RawInstanceEvent::Destroyed => What::Destroyed,
            };
            let n = v
                .routed
                .iter()
                .filter(|e| {
                    e.handler == *handler
                        && e.what == want
                        && on.is_none_or(|o| e.key.target == ents[o])
                })
                .count() as u32;
            Some((n, count, "event"))
        }
        CheckKind::Attribute { .. }
        | CheckKind::Tag { .. }
        | CheckKind::Effect { .. }
        | CheckKind::Ability { .. }
        | CheckKind::Alive { .. }
        | CheckKind::Checksum { .. }
        | CheckKind::Applied { .. }
        | CheckKind::Position { .. }
        | CheckKind::LiveInstances { .. } => None,
    }
}

/// The ability events of `owner` (of `ability`, when given) in the frame's output.
fn ability_events<G: Game>(
    w: &World<G>,
    owner: Entity,
    ability: Option<AbilityDefId>,
    event: RawAbilityEvent,
) -> u32 {
    let def_ok = |d: AbilityDefId| ability.is_none_or(|a| a == d);
    w.output()
        .ability_events
        .iter()
        .filter(|e| match (**e, event) {
            (AbilityEvent::Granted { handle, def }, RawAbilityEvent::Granted)
            | (AbilityEvent::Removed { handle, def }, RawAbilityEvent::Removed)
            | (AbilityEvent::Activated { handle, def, .. }, RawAbilityEvent::Activated)
            | (
                AbilityEvent::ActivationFailed { handle, def, .. },
                RawAbilityEvent::ActivationFailed,
            ) => handle.owner == owner && def_ok(def),
            (
                AbilityEvent::ActivationFailed { handle, def, reason },
                RawAbilityEvent::CommitFailed,
            ) => {
                handle.owner == owner
                    && def_ok(def)
                    && matches!(reason, ActivationFailure::CommitFailed { .. })
            }
            (AbilityEvent::Committed { handle, .. }, RawAbilityEvent::Committed) => {
                handle.owner == owner && w.ability(handle).is_none_or(|s| def_ok(s.def))
            }
            (AbilityEvent::Ended { handle, def, was_cancelled }, ev) => {
                let which = match ev {
                    RawAbilityEvent::Ended => true,
                    RawAbilityEvent::EndedNormally => !was_cancelled,
                    RawAbilityEvent::Cancelled => was_cancelled,
                    _ => false,
                };
                which && handle.owner == owner && def_ok(def)
            }
            _ => false,
        })
        .count() as u32
}

/// An Effect check in this frame: whether it holds, what it expected, what it found.
#[allow(clippy::too_many_arguments, reason = "the fields of one expectation kind")]
fn effect_state<G: Game>(
    w: &World<G>,
    ents: &[Entity],
    on: &usize,
    effect: &EffectDefId,
    present: &Option<bool>,
    stacks: &Option<u16>,
    remaining: &Option<u32>,
    instances: &Option<u32>,
    inhibited: &Option<bool>,
) -> (bool, Vec<String>, Vec<String>) {
    let frame = w.frame();
    let list: Vec<_> = w.effects(ents[*on]).iter().filter(|e| e.def == *effect).collect();
    let first = list.first();
    let (mut exp, mut act, mut ok) = (Vec::new(), Vec::new(), true);
    let state = |b: bool| if b { "present" } else { "absent" };
    if let Some(want) = present {
        ok &= first.is_some() == *want;
        exp.push(state(*want).to_string());
        act.push(state(first.is_some()).to_string());
    }
    if let Some(want) = stacks {
        let got = first.map(|e| e.stacks);
        ok &= got == Some(*want);
        exp.push(format!("stacks {want}"));
        act.push(got.map_or("no instance".into(), |g| format!("stacks {g}")));
    }
    if let Some(want) = remaining {
        let timer = |e: &&crate::ActiveEffect| w.effect_timer(e.handle(ents[*on])).copied();
        let got = first.and_then(timer).map(|t| t.remaining(frame));
        ok &= got == Some(Some(*want));
        exp.push(format!("remaining {want}"));
        act.push(match got {
            None => "no instance".into(),
            Some(None) => "remaining infinite".into(),
            Some(Some(g)) => format!("remaining {g}"),
        });
    }
    if let Some(want) = instances {
        ok &= list.len() as u32 == *want;
        exp.push(format!("instances {want}"));
        act.push(format!("instances {}", list.len()));
    }
    if let Some(want) = inhibited {
        let got = first.map(|e| e.is_inhibited());
        ok &= got == Some(*want);
        exp.push(if *want { "inhibited".into() } else { "not inhibited".to_string() });
        act.push(match got {
            None => "no instance".into(),
            Some(true) => "inhibited".into(),
            Some(false) => "not inhibited".into(),
        });
    }
    (ok, exp, act)
}

/// An Ability check in this frame: whether it holds, what it expected, what it found.
#[allow(clippy::too_many_arguments, reason = "the fields of one expectation kind")]
fn ability_state<G: Game>(
    w: &World<G>,
    ents: &[Entity],
    f: Frame,
    on: &usize,
    ability: &AbilityDefId,
    granted: &Option<bool>,
    active: &Option<bool>,
    activation: &Option<RawActivation>,
    cooldown: &Option<RawCooldown>,
) -> (bool, Vec<String>, Vec<String>) {
    let h = w.find_ability(ents[*on], *ability);
    let (mut exp, mut act, mut ok) = (Vec::new(), Vec::new(), true);
    if let Some(want) = granted {
        ok &= h.is_some() == *want;
        exp.push(if *want { "granted" } else { "not granted" }.to_string());
        act.push(if h.is_some() { "granted" } else { "not granted" }.to_string());
    }
    if let Some(want) = active {
        let got = h.is_some_and(|h| w.is_ability_active(h));
        ok &= got == *want;
        exp.push(if *want { "active" } else { "inactive" }.to_string());
        act.push(if got { "active" } else { "inactive" }.to_string());
    }
    if let Some(want) = activation {
        let last = w
            .activation_log()
            .filter(|r| r.frame == f && r.handle.owner == ents[*on] && r.def == *ability)
            .last()
            .map(|r| r.result);
        ok &= match (want, last) {
            (RawActivation::NotAttempted, None) => true,
            (RawActivation::Succeeded, Some(Ok(_))) => true,
            (RawActivation::Failed(r), Some(Err(e))) => failure_matches(*r, e),
            _ => false,
        };
        exp.push(format!("activation {want:?}"));
        act.push(match last {
            None => "activation NotAttempted".into(),
            Some(Ok(_)) => "activation Succeeded".into(),
            Some(Err(e)) => format!("activation Failed({e:?})"),
        });
    }
    if let Some(want) = cooldown {
        let got = h.and_then(|h| w.ability_cooldown_remaining(h));
        ok &= match (want, got) {
            (RawCooldown::Ready, None) => true,
            (RawCooldown::Remaining(r, t), Some((gr, gt))) => *r == gr && *t == gt,
            _ => false,
        };
        exp.push(format!("cooldown {want:?}"));
        act.push(match got {
            None => "cooldown Ready".into(),
            Some((r, t)) => format!("cooldown Remaining({r}, {t})"),
        });
    }
    (ok, exp, act)
}
