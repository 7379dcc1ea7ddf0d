//! Cue routing in scenarios: the file's `cue_routing` table becomes a [`CueRouter`] that every
//! mode feeds with its presenter calls, and every handler call is logged with the presenter
//! call that caused it, so plain stepping can check handler calls frame by frame and the other
//! modes can be compared with it after reconciliation.

use super::format::{RawCueOptions, RawCueRouting, RawHandlerKind, RawLocalOp};
use super::names::{Cx, key};
use super::{ScenarioError, ScenarioErrorKind as K};
use crate::content::error::Clip;
use crate::content::locate::PathSeg;
use crate::cue::{CueKey, CueParams};
use crate::id::{Entity, TagId};
use crate::num::{Frame, Fx};
use crate::present::{
    Cue, CueCall, CueInstance, CueOptions, CueRouter, Presenter, PresenterCall, PresenterLog,
    RemoveReason,
};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;

/// A handler of the table.
#[derive(Clone, Debug)]
pub(crate) struct HandlerSpec {
    pub name: String,
    pub tag: TagId,
    pub instanced: bool,
    pub is_override: bool,
    pub per_instigator: bool,
}

/// Cues on `on` whose frame is in `from..=until` are suppressed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SuppressSpec {
    pub on: usize,
    pub from: Frame,
    pub until: Frame,
}

/// A local cue operation.
#[derive(Clone, Debug)]
pub(crate) enum LocalKind {
    Execute { on: usize, tag: TagId, magnitude: Fx, options: CueOptions },
    Add { on: usize, tag: TagId, name: usize, magnitude: Fx, options: CueOptions },
    Remove { name: usize },
}

/// A local cue operation and the presentation frame it happens after.
#[derive(Clone, Debug)]
pub(crate) struct LocalOp {
    pub frame: Frame,
    pub kind: LocalKind,
}

/// The resolved `cue_routing` table.
#[derive(Clone, Debug, Default)]
pub(crate) struct Routing {
    pub handlers: Vec<HandlerSpec>,
    pub translate: Vec<(TagId, TagId)>,
    pub suppress: Vec<SuppressSpec>,
    /// Sorted by frame (file order within a frame).
    pub local: Vec<LocalOp>,
    /// The names of local persistent cues.
    pub local_names: Vec<String>,
}

impl Routing {
    /// The handler named `name`.
    pub fn handler(&self, name: &str) -> Option<usize> {
        self.handlers.iter().position(|h| h.name == name)
    }

    fn suppressed(&self, ents: &[Entity], target: Entity, frame: Frame) -> bool {
        self.suppress.iter().any(|s| ents[s.on] == target && s.from <= frame && frame <= s.until)
    }
}

/// A `GameplayCue.*` tag, or a located error.
pub(crate) fn cue_tag(cx: &Cx<'_>, path: &[PathSeg], name: &str) -> Result<TagId, ScenarioError> {
    let t = cx.tag(path, name)?;
    let content = cx.content;
    let root = content.tag("GameplayCue").ok();
    if !root.is_some_and(|r| content.tags().is_descendant_or_self(t, r)) {
        return Err(cx.err(
            K::InvalidValue,
            path,
            format!("\"{}\" is not a cue tag: cue tags start with `GameplayCue.`", Clip(name)),
        ));
    }
    Ok(t)
}

fn options(o: &RawCueOptions) -> CueOptions {
    CueOptions {
        ignore_translation: o.ignore_translation,
        ignore_suppression: o.ignore_suppression,
        ignore_notifies: o.ignore_notifies,
        ..CueOptions::default()
    }
}

/// Resolves the `cue_routing` table.
pub(crate) fn resolve(cx: &Cx<'_>, raw: &RawCueRouting) -> Result<Routing, ScenarioError> {
    let base = [key("cue_routing")];
    let at = |ks: &[PathSeg]| [&base[..], ks].concat();
    let mut out = Routing::default();
    for (name, h) in &raw.handlers.0 {
        let p = |k: &str| at(&[key("handlers"), key(name), key(k)]);
        let tag = cue_tag(cx, &p("tag"), &h.tag)?;
        if let Some(other) = out.handlers.iter().find(|x| x.tag == tag) {
            return Err(cx.err(
                K::InvalidValue,
                &p("tag"),
                format!(
                    "the handler \"{}\" already handles {}: a tag has one handler",
                    Clip(&other.name),
                    Clip(&h.tag)
                ),
            ));
        }
        let instanced = h.kind == RawHandlerKind::Instanced;
        if instanced && h.is_override.is_some() {
            return Err(cx.err(
                K::InvalidValue,
                &p("override"),
                "`override` is for static handlers: an instanced handler always ends the walk \
                 to parent handlers",
            ));
        }
        if !instanced && h.unique_per_instigator.is_some() {
            return Err(cx.err(
                K::InvalidValue,
                &p("unique_per_instigator"),
                "`unique_per_instigator` is for instanced handlers (`kind: Instanced`)",
            ));
        }
        out.handlers.push(HandlerSpec {
            name: name.clone(),
            tag,
            instanced,
            is_override: h.is_override.unwrap_or(false),
            per_instigator: h.unique_per_instigator.unwrap_or(false),
        });
    }
    for (from, to) in &raw.translate.0 {
        let p = at(&[key("translate"), key(from)]);
        let f = cue_tag(cx, &p, from)?;
        let t = cue_tag(cx, &p, to)?;
        out.translate.push((f, t));
    }
    for (i, s) in raw.suppress.iter().enumerate() {
        let p = |k: &str| at(&[key("suppress"), PathSeg::Index(i), key(k)]);
        let (from, until) = (s.from.unwrap_or(0), s.until.unwrap_or(Frame::MAX));
        if until < from {
            return Err(cx.err(
                K::InvalidValue,
                &p("until"),
                format!("until ({until}) is before from ({from})"),
            ));
        }
        out.suppress.push(SuppressSpec { on: cx.entity(&p("on"), &s.on)?, from, until });
    }
    let mut live: BTreeSet<usize> = BTreeSet::new();
    let mut steps: Vec<(usize, &super::format::RawLocalStep)> =
        raw.local.iter().enumerate().collect();
    steps.sort_by_key(|(_, s)| s.frame);
    for (i, step) in steps {
        let p = |k: &str| at(&[key("local"), PathSeg::Index(i), key("do"), key(k)]);
        let kind = match &step.op {
            RawLocalOp::Execute { on, tag, magnitude, options: o } => LocalKind::Execute {
                on: cx.entity(&p("on"), on)?,
                tag: cue_tag(cx, &p("tag"), tag)?,
                magnitude: magnitude.map_or(Fx::ZERO, |m| m.0),
                options: options(o),
            },
            RawLocalOp::Add { on, tag, name, magnitude, options: o } => {
                let n = match out.local_names.iter().position(|x| x == name) {
                    Some(n) => n,
                    None => {
                        out.local_names.push(name.clone());
                        out.local_names.len() - 1
                    }
                };
                if !live.insert(n) {
                    return Err(cx.err(
                        K::InvalidValue,
                        &p("name"),
                        format!(
                            "the local cue \"{}\" is still added here: `Remove` it first",
                            Clip(name)
                        ),
                    ));
                }
                LocalKind::Add {
                    on: cx.entity(&p("on"), on)?,
                    tag: cue_tag(cx, &p("tag"), tag)?,
                    name: n,
                    magnitude: magnitude.map_or(Fx::ZERO, |m| m.0),
                    options: options(o),
                }
            }
            RawLocalOp::Remove { name } => {
                let n = out.local_names.iter().position(|x| x == name);
                let Some(n) = n.filter(|n| live.remove(n)) else {
                    return Err(cx.err(
                        K::UnknownName,
                        &p("name"),
                        format!(
                            "no local cue named \"{}\" is added before this frame (an `Add` \
                             with that name must come first)",
                            Clip(name)
                        ),
                    ));
                };
                LocalKind::Remove { name: n }
            }
        };
        out.local.push(LocalOp { frame: step.frame, kind });
    }
    Ok(out)
}

/// A handler call, ordered (for reconciled comparisons).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Call {
    Executed,
    Cancelled,
    OnActive,
    WhileActive,
    Removed(RemoveReason),
    Confirmed,
}

impl From<CueCall> for Call {
    fn from(c: CueCall) -> Call {
        match c {
            CueCall::Executed => Call::Executed,
            CueCall::Cancelled => Call::Cancelled,
            CueCall::OnActive => Call::OnActive,
            CueCall::WhileActive => Call::WhileActive,
            CueCall::Removed(r) => Call::Removed(r),
            CueCall::Confirmed => Call::Confirmed,
        }
    }
}

/// What a handler saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum What {
    /// A call.
    Call(Call),
    /// An instance came alive (new or from the pool).
    Created,
    /// An instance was released.
    Destroyed,
}

impl What {
    /// How reports name it: the call (`OnActive`, `Removed(Ended)`…), or `instance Created` /
    /// `instance Destroyed`.
    pub fn text(self) -> String {
        match self {
            What::Call(call) => format!("{call:?}"),
            What::Created => "instance Created".into(),
            What::Destroyed => "instance Destroyed".into(),
        }
    }
}

/// One handler call (or instance event).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RouteEntry {
    /// The presenter call that caused it (its index in the log); `None` for local cues.
    pub cause: Option<usize>,
    pub handler: usize,
    pub what: What,
    /// The cue as the handler saw it (its tag translated).
    pub key: CueKey,
    pub original_tag: TagId,
    pub instigator: Entity,
    pub magnitude: Fx,
}

#[derive(Default)]
struct Shared {
    entries: Vec<RouteEntry>,
    cause: Option<usize>,
}

impl Shared {
    fn push(&mut self, handler: usize, what: What, cue: &Cue) {
        self.entries.push(RouteEntry {
            cause: self.cause,
            handler,
            what,
            key: cue.key,
            original_tag: cue.params.original_tag,
            instigator: cue.params.instigator,
            magnitude: cue.params.magnitude,
        });
    }
}

/// The instance of an instanced handler: logs its calls and its life.
struct Tracked {
    handler: usize,
    shared: Rc<RefCell<Shared>>,
    live: bool,
}

impl CueInstance for Tracked {
    fn handle(&mut self, call: CueCall, cue: &Cue) {
        let mut sh = self.shared.borrow_mut();
        if !self.live {
            // The router calls an instance first when it takes it (new or pooled), and calls
            // `Removed` only when it releases it.
            self.live = true;
            sh.push(self.handler, What::Created, cue);
        }
        sh.push(self.handler, What::Call(call.into()), cue);
        if matches!(call, CueCall::Removed(_)) {
            self.live = false;
            sh.push(self.handler, What::Destroyed, cue);
        }
    }
}

/// A presenter that records every call (a [`PresenterLog`]) and routes it through the
/// scenario's [`CueRouter`], logging every handler call.
pub(crate) struct RoutedPresenter<'a> {
    pub log: PresenterLog,
    pub router: CueRouter,
    routing: Option<&'a Routing>,
    ents: &'a [Entity],
    shared: Rc<RefCell<Shared>>,
    locals_done: usize,
    /// Per local cue name: its key, parameters, options and frame while added.
    local_keys: Vec<Option<(CueKey, CueParams, CueOptions, Frame)>>,
}

impl<'a> RoutedPresenter<'a> {
    pub fn new(
        content: Arc<crate::content::Content>,
        routing: Option<&'a Routing>,
        ents: &'a [Entity],
    ) -> Self {
        let shared = Rc::new(RefCell::new(Shared::default()));
        let mut router = CueRouter::new(content);
        for (i, h) in routing.map_or(&[][..], |r| &r.handlers).iter().enumerate() {
            let sh = shared.clone();
            if h.instanced {
                router.on_instanced(h.tag, h.per_instigator, move || {
                    Box::new(Tracked { handler: i, shared: sh.clone(), live: false })
                });
            } else {
                let handler = move |call: CueCall, cue: &Cue| {
                    sh.borrow_mut().push(i, What::Call(call.into()), cue)
                };
                if h.is_override {
                    router.on_override(h.tag, handler);
                } else {
                    router.on(h.tag, handler);
                }
            }
        }
        for &(from, to) in routing.map_or(&[][..], |r| &r.translate) {
            router.translate(from, to);
        }
        let names = routing.map_or(0, |r| r.local_names.len());
        RoutedPresenter {
            log: PresenterLog::default(),
            router,
            routing,
            ents,
            shared,
            locals_done: 0,
            local_keys: vec![None; names],
        }
    }

    /// Sets the frame stamped on the presenter calls that follow.
    pub fn at(&mut self, frame: Frame) {
        self.log.at(frame);
    }

    /// How many handler calls were logged.
    pub fn routed_len(&self) -> usize {
        self.shared.borrow().entries.len()
    }

    /// Runs `f` with the handler calls logged from `from` on.
    pub fn with_routed<R>(&self, from: usize, f: impl FnOnce(&[RouteEntry]) -> R) -> R {
        f(&self.shared.borrow().entries[from..])
    }

    /// Routes the presenter call just logged.
    fn route(&mut self, cue: &Cue, f: impl FnOnce(&mut CueRouter, &Cue)) {
        let Some(r) = self.routing else { return };
        self.shared.borrow_mut().cause = Some(self.log.calls.len().saturating_sub(1));
        let target = cue.key.target;
        self.router.suppress(target, r.suppressed(self.ents, target, cue.key.frame));
        f(&mut self.router, cue);
    }

    /// Makes the local cues of the presentation frames up to `frame`.
    pub fn present_locals(&mut self, frame: Frame) {
        let Some(r) = self.routing else { return };
        while let Some(op) = r.local.get(self.locals_done).filter(|o| o.frame <= frame) {
            self.locals_done += 1;
            self.shared.borrow_mut().cause = None;
            let ents = self.ents;
            let params = |on: usize, magnitude: Fx| CueParams {
                magnitude,
                instigator: ents[on],
                count: 1,
                ..CueParams::default()
            };
            match op.kind {
                LocalKind::Execute { on, tag, magnitude, options } => {
                    let e = ents[on];
                    self.router.suppress(e, r.suppressed(ents, e, op.frame));
                    self.router.local_execute(e, tag, params(on, magnitude), options);
                }
                LocalKind::Add { on, tag, name, magnitude, options } => {
                    let e = ents[on];
                    self.router.suppress(e, r.suppressed(ents, e, op.frame));
                    let p = params(on, magnitude);
                    let k = self.router.local_add(e, tag, p, options);
                    self.local_keys[name] = Some((k, p, options, op.frame));
                }
                LocalKind::Remove { name } => {
                    if let Some((k, p, options, since)) = self.local_keys[name].take() {
                        // Suppressed as its `Add` was: a show never loses only one end.
                        self.router.suppress(k.target, r.suppressed(ents, k.target, since));
                        self.router.local_remove(k, p, options);
                    }
                }
            }
        }
    }

    /// The handler calls a viewer finally saw, comparable across modes: those caused by
    /// presenter calls that survive reconciliation (and by local cues), without `Confirmed`,
    /// sorted. With `past`, the mode simulated frames after the scenario's last: calls caused
    /// by cues that began after it, and by removals of cues plain stepping still showed, are
    /// left out (as in the cue log comparison).
    pub fn reconciled(
        &self,
        past: Option<(Frame, &BTreeSet<CueKey>)>,
    ) -> Result<Vec<Comparable>, String> {
        let calls = &self.log.calls;
        let kept = kept_calls(calls);
        let mut mine: Vec<PresenterCall> =
            calls.iter().zip(&kept).filter(|(_, k)| **k).map(|((_, c), _)| *c).collect();
        mine.sort();
        if mine != self.log.reconciled() {
            return Err(
                "internal: the handler log's reconciliation differs from the cue log's".into()
            );
        }
        let keep_cause = |i: usize| {
            kept[i]
                && past.is_none_or(|(frames, removed)| {
                    let c = calls[i].1;
                    let k = c.key();
                    k.frame < frames
                        && !matches!(c, PresenterCall::Removed(k, RemoveReason::Ended)
                            if !removed.contains(&k))
                })
        };
        let mut out: Vec<Comparable> = self
            .shared
            .borrow()
            .entries
            .iter()
            .filter(|e| e.cause.is_none_or(keep_cause))
            .filter(|e| e.what != What::Call(Call::Confirmed))
            .map(|e| Comparable {
                handler: e.handler,
                what: e.what,
                key: e.key,
                original_tag: e.original_tag,
                local: e.cause.is_none(),
            })
            .collect();
        out.sort();
        Ok(out)
    }
}

/// A handler call as compared across modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Comparable {
    handler: usize,
    what: What,
    key: CueKey,
    original_tag: TagId,
    local: bool,
}

/// The keys of the persistent cues whose removal a log shows (reconciled).
pub(crate) fn removed_keys(log: &PresenterLog) -> BTreeSet<CueKey> {
    log.reconciled()
        .iter()
        .filter_map(|c| match c {
            PresenterCall::Removed(k, _) => Some(*k),
            _ => None,
        })
        .collect()
}

/// Compares a mode's reconciled handler calls with plain stepping's.
pub(crate) fn compare(
    routing: &Routing,
    content: &crate::content::Content,
    plain: &[Comparable],
    other: Result<Vec<Comparable>, String>,
) -> Option<String> {
    let got = match other {
        Ok(g) => g,
        Err(e) => return Some(e),
    };
    if got == plain {
        return None;
    }
    let show = |c: Option<&&Comparable>| {
        c.map_or("none".to_string(), |c| {
            format!(
                "{} {} {} frame {}{}",
                routing.handlers[c.handler].name,
                c.what.text(),
                content.tags().name(c.key.tag),
                c.key.frame,
                if c.local { " (local)" } else { "" }
            )
        })
    };
    let missing: Vec<_> = plain.iter().filter(|c| !got.contains(c)).collect();
    let extra: Vec<_> = got.iter().filter(|c| !plain.contains(c)).collect();
    Some(format!(
        "reconciled handler calls differ: {} vs {} in plain stepping; first missing {}, first \
         extra {}",
        got.len(),
        plain.len(),
        show(missing.first()),
        show(extra.first())
    ))
}

/// Which calls of a presenter log survive reconciliation: the same rule as
/// [`PresenterLog::reconciled`] (every `cancel` drops itself and the `play` it cancels, every
/// `Removed{Mispredicted}` drops itself and the show it ends, `confirmed` calls are dropped),
/// by index. [`RoutedPresenter::reconciled`] checks that both agree.
fn kept_calls(calls: &[(Frame, PresenterCall)]) -> Vec<bool> {
    let mut keep = vec![true; calls.len()];
    let mut plays: BTreeMap<CueKey, Vec<usize>> = BTreeMap::new();
    let mut shows: BTreeMap<CueKey, Vec<usize>> = BTreeMap::new();
    for (i, (_, c)) in calls.iter().enumerate() {
        match c {
            PresenterCall::Play(k) => plays.entry(*k).or_default().push(i),
            PresenterCall::Cancel(k) => {
                keep[i] = false;
                if let Some(p) = plays.get_mut(k).and_then(Vec::pop) {
                    keep[p] = false;
                }
            }
            PresenterCall::OnActive(k) | PresenterCall::WhileActive(k) => {
                shows.entry(*k).or_default().push(i);
            }
            PresenterCall::Removed(k, RemoveReason::Mispredicted) => {
                keep[i] = false;
                if let Some(list) = shows.get_mut(k) {
                    while let Some(p) = list.pop() {
                        keep[p] = false;
                        if matches!(calls[p].1, PresenterCall::OnActive(_)) || list.is_empty() {
                            break;
                        }
                        if matches!(calls[list[list.len() - 1]].1, PresenterCall::WhileActive(_)) {
                            break;
                        }
                    }
                }
            }
            PresenterCall::Confirmed(_) => keep[i] = false,
            PresenterCall::Removed(..) => {}
        }
    }
    keep
}

impl Presenter for RoutedPresenter<'_> {
    fn play(&mut self, c: &Cue) {
        self.log.play(c);
        self.route(c, |r, c| r.play(c));
    }
    fn cancel(&mut self, c: &Cue) {
        self.log.cancel(c);
        self.route(c, |r, c| r.cancel(c));
    }
    fn on_active(&mut self, c: &Cue) {
        self.log.on_active(c);
        self.route(c, |r, c| r.on_active(c));
    }
    fn while_active(&mut self, c: &Cue) {
        self.log.while_active(c);
        self.route(c, |r, c| r.while_active(c));
    }
    fn removed(&mut self, c: &Cue, reason: RemoveReason) {
        self.log.removed(c, reason);
        self.route(c, |r, c| r.removed(c, reason));
    }
    fn confirmed(&mut self, c: &Cue) {
        self.log.confirmed(c);
        self.route(c, |r, c| r.confirmed(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::Content;
    use crate::cue::{CueKind, CueOrigin};

    fn cue(content: &Content, tag: TagId, frame: Frame, kind: CueKind, id: u32) -> Cue {
        let key = CueKey {
            frame,
            target: Entity { index: 1, generation: 1 },
            tag,
            kind,
            origin: CueOrigin::game(id, 0),
            ordinal: 0,
        };
        Cue {
            key,
            params: CueParams::default(),
            policy: content.cue_policy(tag),
            predicted: true,
            source_tags: crate::tag::TagSet::EMPTY,
            target_tags: crate::tag::TagSet::EMPTY,
        }
    }

    /// A peer's handlers hear predicted cues that a correction then takes back (a burst
    /// cancelled, a persistent cue removed as mispredicted, with its instance's creation and
    /// destruction); what survives reconciliation equals what plain stepping's handlers heard,
    /// and a real difference is reported by handler, call and tag.
    #[test]
    fn handler_calls_of_mispredicted_cues_are_reconciled_away() {
        let content = Arc::new(
            Content::from_ron_str(r#"(tags: ["GameplayCue.Hit", "GameplayCue.Aura"])"#).unwrap(),
        );
        let (hit, aura) =
            (content.tag("GameplayCue.Hit").unwrap(), content.tag("GameplayCue.Aura").unwrap());
        let spec = |name: &str, tag, instanced| HandlerSpec {
            name: name.into(),
            tag,
            instanced,
            is_override: false,
            per_instigator: false,
        };
        let routing = Routing {
            handlers: vec![spec("hit", hit, false), spec("aura", aura, true)],
            ..Routing::default()
        };
        let ents = [Entity { index: 1, generation: 1 }];
        let real_hit = cue(&content, hit, 5, CueKind::Executed, 1);
        let real_aura = cue(&content, aura, 6, CueKind::Added, 2);
        let false_hit = cue(&content, hit, 4, CueKind::Executed, 3);
        let false_aura = cue(&content, aura, 4, CueKind::Added, 4);

        let mut plain = RoutedPresenter::new(content.clone(), Some(&routing), &ents);
        plain.play(&real_hit);
        plain.confirmed(&real_hit);
        plain.on_active(&real_aura);
        plain.while_active(&real_aura);
        plain.removed(&real_aura, RemoveReason::Ended);
        let want = plain.reconciled(None).unwrap();
        // hit: Executed; aura: Created, OnActive, WhileActive, Removed, Destroyed.
        assert_eq!(want.len(), 6, "{want:?}");

        let mut peer = RoutedPresenter::new(content.clone(), Some(&routing), &ents);
        peer.play(&false_hit);
        peer.on_active(&false_aura);
        peer.while_active(&false_aura);
        peer.cancel(&false_hit);
        peer.removed(&false_aura, RemoveReason::Mispredicted);
        peer.play(&real_hit);
        peer.on_active(&real_aura);
        peer.while_active(&real_aura);
        peer.confirmed(&real_hit);
        peer.removed(&real_aura, RemoveReason::Ended);
        assert!(peer.routed_len() > plain.routed_len() + 4);
        assert_eq!(peer.reconciled(None).unwrap(), want);
        assert_eq!(compare(&routing, &content, &want, peer.reconciled(None)), None);

        let mut other = RoutedPresenter::new(content.clone(), Some(&routing), &ents);
        other.play(&real_hit);
        let why = compare(&routing, &content, &want, other.reconciled(None)).unwrap();
        assert!(why.contains("1 vs 6 in plain stepping"), "{why}");
        assert!(why.contains("first missing aura OnActive GameplayCue.Aura frame 6"), "{why}");
    }

    /// Calls about cues that began after the last frame, and removals of cues plain stepping
    /// still showed, are left out of a mode that ran past the end.
    #[test]
    fn calls_past_the_end_are_left_out() {
        let content = Arc::new(Content::from_ron_str(r#"(tags: ["GameplayCue.Aura"])"#).unwrap());
        let aura = content.tag("GameplayCue.Aura").unwrap();
        let routing = Routing {
            handlers: vec![HandlerSpec {
                name: "aura".into(),
                tag: aura,
                instanced: false,
                is_override: false,
                per_instigator: false,
            }],
            ..Routing::default()
        };
        let ents = [Entity { index: 1, generation: 1 }];
        let early = cue(&content, aura, 2, CueKind::Added, 1);
        let late = cue(&content, aura, 12, CueKind::Added, 2);
        let mut peer = RoutedPresenter::new(content.clone(), Some(&routing), &ents);
        peer.on_active(&early);
        peer.while_active(&early);
        peer.removed(&early, RemoveReason::Ended);
        peer.on_active(&late);
        assert_eq!(peer.reconciled(None).unwrap().len(), 4);
        let removed = BTreeSet::new();
        // Plain stepping stopped at frame 10 with `early` still shown.
        assert_eq!(peer.reconciled(Some((10, &removed))).unwrap().len(), 2);
    }
}
