//! Routing cues to handlers (F-GC-06, F-GC-07, F-GC-08, F-GC-10, F-GC-11, F-GC-12, F-GC-16): a
//! [`Presenter`] that finds handlers by tag hierarchy, translates tags, honours suppression and
//! options, keeps reference-counted instances with pools, and serves local (presentation-only)
//! cues.

use super::director::{Cue, Presenter, RemoveReason};
use crate::content::Content;
use crate::cue::{CueKey, CueKind, CueOrigin, CueParams};
use crate::id::{Entity, TagId};
use crate::tag::TagSet;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What happens to a cue, as a handler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum CueCall {
    /// A burst plays.
    Executed,
    /// A played burst is cancelled.
    Cancelled,
    /// A persistent instance became active.
    OnActive,
    /// Presentation starts showing a persistent instance.
    WhileActive,
    /// Presentation stops showing a persistent instance.
    Removed(RemoveReason),
    /// The cue's frame is confirmed.
    Confirmed,
}

/// A stateless handler (GAS `GameplayCueNotify_Static`).
pub trait StaticHandler {
    /// Handles a call for a cue routed to this handler.
    fn handle(&mut self, call: CueCall, cue: &Cue);
}

impl<F: FnMut(CueCall, &Cue)> StaticHandler for F {
    fn handle(&mut self, call: CueCall, cue: &Cue) {
        self(call, cue)
    }
}

/// A presentation object living while its key is active (GAS `GameplayCueNotify_Actor`).
pub trait CueInstance {
    /// Handles a call (an `Executed` burst routed to an instanced handler arrives as
    /// `OnActive`, `Executed` and `Removed(Ended)` in one go).
    fn handle(&mut self, call: CueCall, cue: &Cue);
    /// Prepares the instance for reuse; `false` destroys it instead of pooling it.
    fn recycle(&mut self) -> bool {
        true
    }
}

/// A handler: static, or instanced with a factory.
pub enum CueHandler {
    /// Stateless.
    Static(Box<dyn StaticHandler>),
    /// Instanced: `new` makes an instance; `per_instigator` keys instances by
    /// (target, tag, instigator) instead of (target, tag).
    Instanced {
        /// Makes a new instance.
        new: Box<dyn FnMut() -> Box<dyn CueInstance>>,
        /// Key instances by instigator as well.
        per_instigator: bool,
    },
}

impl core::fmt::Debug for CueHandler {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CueHandler::Static(_) => f.write_str("Static"),
            CueHandler::Instanced { per_instigator, .. } => {
                write!(f, "Instanced(per_instigator: {per_instigator})")
            }
        }
    }
}

/// Which instance a persistent cue uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstanceKey {
    /// The target.
    pub target: Entity,
    /// The (translated) tag.
    pub tag: TagId,
    /// The instigator, for per-instigator handlers.
    pub instigator: Entity,
}

/// Per-call switches (GAS `EGameplayCueExecutionOptions`), used by local cues.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CueOptions {
    /// Skip per-entity interfaces.
    pub ignore_interfaces: bool,
    /// Skip the global handlers.
    pub ignore_notifies: bool,
    /// Skip translation.
    pub ignore_translation: bool,
    /// Ignore per-entity suppression.
    pub ignore_suppression: bool,
    /// Ignore the debug filter.
    pub ignore_debug: bool,
}

struct Registered {
    handler: CueHandler,
    is_override: bool,
}

struct Live {
    instance: Box<dyn CueInstance>,
    /// The persistent cues (by origin) sharing this instance: N adds show one instance.
    members: BTreeSet<CueOrigin>,
    handler_tag: TagId,
}

/// A per-entity cue interface (GAS `IGameplayCueInterface`): may veto cues on its entity and
/// handles them after the global handlers.
pub trait EntityInterface {
    /// Whether cues on this entity are accepted at all.
    fn accept(&self, cue: &Cue) -> bool {
        let _ = cue;
        true
    }
    /// Handles a call after the global handlers.
    fn handle(&mut self, call: CueCall, cue: &Cue);
}

/// A [`Presenter`] that routes cues to registered handlers by tag.
///
/// A tag without a handler uses its nearest ancestor's; static handlers then continue up the
/// parent chain unless registered as overrides. Instanced handlers keep one instance per key,
/// reference-counted, so N adds of the same cue show one instance; released instances go to a
/// pool when they agree to be recycled.
pub struct CueRouter {
    content: Arc<Content>,
    handlers: BTreeMap<TagId, Registered>,
    translations: BTreeMap<TagId, TagId>,
    suppressed: BTreeSet<Entity>,
    interfaces: BTreeMap<Entity, Box<dyn EntityInterface>>,
    live: BTreeMap<InstanceKey, Live>,
    pools: BTreeMap<TagId, Vec<Box<dyn CueInstance>>>,
    prealloc: BTreeMap<TagId, u32>,
    /// Globally disabled (nothing is routed).
    pub enabled: bool,
    /// Only tags matching this filter are routed (empty: all).
    pub debug_filter: TagSet,
    /// Routed calls per handler tag.
    routed: BTreeMap<TagId, u64>,
    /// Calls that found no handler.
    pub unhandled: u64,
    local_next: u32,
}

impl core::fmt::Debug for CueRouter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CueRouter")
            .field(
                "handlers",
                &self.handlers.keys().map(|t| self.content.tags().name(*t)).collect::<Vec<_>>(),
            )
            .field("live_instances", &self.live.len())
            .field("enabled", &self.enabled)
            .finish()
    }
}

impl CueRouter {
    /// A router for content (tags resolve through its registry).
    pub fn new(content: Arc<Content>) -> CueRouter {
        CueRouter {
            content,
            handlers: BTreeMap::new(),
            translations: BTreeMap::new(),
            suppressed: BTreeSet::new(),
            interfaces: BTreeMap::new(),
            live: BTreeMap::new(),
            pools: BTreeMap::new(),
            prealloc: BTreeMap::new(),
            enabled: true,
            debug_filter: TagSet::EMPTY,
            routed: BTreeMap::new(),
            unhandled: 0,
            local_next: 1,
        }
    }

    /// Registers a static handler for a tag and its descendants without handlers of their own.
    pub fn on(&mut self, tag: TagId, handler: impl StaticHandler + 'static) -> &mut Self {
        self.handlers.insert(
            tag,
            Registered { handler: CueHandler::Static(Box::new(handler)), is_override: false },
        );
        self
    }

    /// Registers a static handler that stops the walk to parent handlers.
    pub fn on_override(&mut self, tag: TagId, handler: impl StaticHandler + 'static) -> &mut Self {
        self.handlers.insert(
            tag,
            Registered { handler: CueHandler::Static(Box::new(handler)), is_override: true },
        );
        self
    }

    /// Registers an instanced handler.
    pub fn on_instanced(
        &mut self,
        tag: TagId,
        per_instigator: bool,
        new: impl FnMut() -> Box<dyn CueInstance> + 'static,
    ) -> &mut Self {
        self.handlers.insert(
            tag,
            Registered {
                handler: CueHandler::Instanced { new: Box::new(new), per_instigator },
                is_override: true,
            },
        );
        self
    }

    /// Translates a tag to another before routing (impact → metal impact…), F-GC-10.
    pub fn translate(&mut self, from: TagId, to: TagId) -> &mut Self {
        self.translations.insert(from, to);
        self
    }

    /// Suppresses (or stops suppressing) cues on an entity.
    pub fn suppress(&mut self, e: Entity, on: bool) {
        if on {
            self.suppressed.insert(e);
        } else {
            self.suppressed.remove(&e);
        }
    }

    /// Sets an entity's cue interface.
    pub fn set_interface(&mut self, e: Entity, i: Box<dyn EntityInterface>) {
        self.interfaces.insert(e, i);
    }

    /// Asks the router to create `n` pooled instances of an instanced handler, at most
    /// `budget` per [`CueRouter::tick_pools`] call (spread over presentation frames).
    pub fn preallocate(&mut self, tag: TagId, n: u32) {
        *self.prealloc.entry(tag).or_default() += n;
    }

    /// Creates up to `budget` preallocated instances; returns how many were created.
    pub fn tick_pools(&mut self, budget: u32) -> u32 {
        let mut made = 0;
        let tags: Vec<TagId> = self.prealloc.keys().copied().collect();
        for tag in tags {
            while made < budget && self.prealloc.get(&tag).copied().unwrap_or(0) > 0 {
                let Some(Registered { handler: CueHandler::Instanced { new, .. }, .. }) =
                    self.handlers.get_mut(&tag)
                else {
                    self.prealloc.remove(&tag);
                    break;
                };
                let inst = new();
                self.pools.entry(tag).or_default().push(inst);
                if let Some(n) = self.prealloc.get_mut(&tag) {
                    *n -= 1;
                }
                made += 1;
            }
        }
        self.prealloc.retain(|_, n| *n > 0);
        made
    }

    /// Pooled (recycled) instances for a handler tag.
    pub fn pooled(&self, tag: TagId) -> usize {
        self.pools.get(&tag).map(Vec::len).unwrap_or(0)
    }

    /// Live instances.
    pub fn live_instances(&self) -> usize {
        self.live.len()
    }

    /// The live instances of the instanced handler registered for `handler`, in key order,
    /// each with its reference count: how many persistent cues share it (0 for an instance
    /// kept alive only by a burst while it plays, which never outlives the call).
    pub fn live_instances_of(
        &self,
        handler: TagId,
    ) -> impl Iterator<Item = (InstanceKey, usize)> + '_ {
        self.live
            .iter()
            .filter(move |(_, l)| l.handler_tag == handler)
            .map(|(k, l)| (*k, l.members.len()))
    }

    /// Empties the pools and live instances (session change, F-GC-08).
    pub fn reset_pools(&mut self) {
        self.pools.clear();
        self.live.clear();
        self.prealloc.clear();
    }

    /// Calls routed to the handler registered for `tag`.
    pub fn routed(&self, tag: TagId) -> u64 {
        self.routed.get(&tag).copied().unwrap_or(0)
    }

    /// Executes a local cue: presentation only, never rolled back, never touching simulation
    /// state (F-GC-12).
    pub fn local_execute(
        &mut self,
        target: Entity,
        tag: TagId,
        params: CueParams,
        options: CueOptions,
    ) {
        let cue = self.local_cue(target, tag, CueKind::Executed, params);
        self.route(CueCall::Executed, &cue, options);
    }

    /// Adds a local persistent cue; remove it with [`CueRouter::local_remove`].
    pub fn local_add(
        &mut self,
        target: Entity,
        tag: TagId,
        params: CueParams,
        options: CueOptions,
    ) -> CueKey {
        let cue = self.local_cue(target, tag, CueKind::Added, params);
        self.route(CueCall::OnActive, &cue, options);
        self.route(CueCall::WhileActive, &cue, options);
        cue.key
    }

    /// Removes a local persistent cue.
    pub fn local_remove(&mut self, key: CueKey, params: CueParams, options: CueOptions) {
        let cue = Cue {
            key,
            params,
            policy: self.content.cue_policy(key.tag),
            predicted: false,
            source_tags: TagSet::EMPTY,
            target_tags: TagSet::EMPTY,
        };
        self.route(CueCall::Removed(RemoveReason::Ended), &cue, options);
    }

    fn local_cue(&mut self, target: Entity, tag: TagId, kind: CueKind, params: CueParams) -> Cue {
        let id = self.local_next;
        self.local_next = self.local_next.wrapping_add(1);
        let key = CueKey {
            frame: 0,
            target,
            tag,
            kind,
            origin: CueOrigin::game(u32::MAX, id),
            ordinal: 0,
        };
        Cue {
            key,
            params,
            policy: self.content.cue_policy(tag),
            predicted: false,
            source_tags: TagSet::EMPTY,
            target_tags: TagSet::EMPTY,
        }
    }

    /// The handler tags a tag routes to, nearest first (stops at an override).
    pub fn handler_chain(&self, tag: TagId) -> Vec<TagId> {
        let reg = self.content.tags();
        let mut out = Vec::new();
        let mut cur = Some(tag);
        while let Some(t) = cur {
            if let Some(r) = self.handlers.get(&t) {
                out.push(t);
                if r.is_override {
                    break;
                }
            }
            cur = reg.parent(t);
        }
        out
    }

    fn route(&mut self, call: CueCall, cue: &Cue, options: CueOptions) {
        if !self.enabled {
            return;
        }
        if !options.ignore_suppression && self.suppressed.contains(&cue.key.target) {
            return;
        }
        if !options.ignore_debug
            && !self.debug_filter.is_empty()
            && !self.content.tags().self_and_ancestors(cue.key.tag).intersects(&self.debug_filter)
        {
            return;
        }
        let mut cue = *cue;
        cue.params.original_tag = cue.key.tag;
        if !options.ignore_translation
            && let Some(t) = self.translations.get(&cue.key.tag)
        {
            cue.key.tag = *t;
        }
        if !options.ignore_interfaces
            && self.interfaces.get(&cue.key.target).is_some_and(|i| !i.accept(&cue))
        {
            return;
        }
        if !options.ignore_notifies {
            let chain = self.handler_chain(cue.key.tag);
            if chain.is_empty() {
                self.unhandled += 1;
            }
            for htag in chain {
                *self.routed.entry(htag).or_default() += 1;
                self.call_handler(htag, call, &cue);
            }
        }
        if !options.ignore_interfaces
            && let Some(i) = self.interfaces.get_mut(&cue.key.target)
        {
            i.handle(call, &cue);
        }
    }

    fn call_handler(&mut self, htag: TagId, call: CueCall, cue: &Cue) {
        let Some(reg) = self.handlers.get_mut(&htag) else { return };
        match &mut reg.handler {
            CueHandler::Static(h) => h.handle(call, cue),
            CueHandler::Instanced { new, per_instigator } => {
                let key = InstanceKey {
                    target: cue.key.target,
                    tag: cue.key.tag,
                    instigator: if *per_instigator { cue.params.instigator } else { Entity::NONE },
                };
                // Reuse order: the existing instance, a pooled one, a new one (F-GC-08).
                let fresh = !self.live.contains_key(&key);
                if fresh
                    && matches!(call, CueCall::OnActive | CueCall::WhileActive | CueCall::Executed)
                {
                    let instance =
                        self.pools.get_mut(&htag).and_then(Vec::pop).unwrap_or_else(|| new());
                    self.live.insert(
                        key,
                        Live { instance, members: BTreeSet::new(), handler_tag: htag },
                    );
                }
                let Some(l) = self.live.get_mut(&key) else { return };
                let origin = cue.key.origin;
                let release = match call {
                    CueCall::OnActive => {
                        let first = l.members.is_empty();
                        l.members.insert(origin);
                        if first {
                            l.instance.handle(call, cue);
                        }
                        false
                    }
                    CueCall::WhileActive => {
                        // Shown for the first time (after OnActive, or alone after a snapshot
                        // load or a late join).
                        l.members.insert(origin);
                        if l.members.len() == 1 {
                            l.instance.handle(call, cue);
                        }
                        false
                    }
                    CueCall::Removed(_) => {
                        l.members.remove(&origin);
                        l.members.is_empty()
                    }
                    CueCall::Executed => {
                        // A burst on an instanced handler: OnActive → Executed → Removed at
                        // once, unless a persistent cue keeps the instance alive.
                        if fresh {
                            l.instance.handle(CueCall::OnActive, cue);
                        }
                        l.instance.handle(CueCall::Executed, cue);
                        l.members.is_empty()
                    }
                    CueCall::Cancelled | CueCall::Confirmed => {
                        l.instance.handle(call, cue);
                        false
                    }
                };
                if release && let Some(mut l) = self.live.remove(&key) {
                    let removed = match call {
                        CueCall::Removed(r) => CueCall::Removed(r),
                        _ => CueCall::Removed(RemoveReason::Ended),
                    };
                    l.instance.handle(removed, cue);
                    if l.instance.recycle() {
                        self.pools.entry(l.handler_tag).or_default().push(l.instance);
                    }
                }
            }
        }
    }
}

impl Presenter for CueRouter {
    fn play(&mut self, cue: &Cue) {
        self.route(CueCall::Executed, cue, CueOptions::default());
    }
    fn cancel(&mut self, cue: &Cue) {
        self.route(CueCall::Cancelled, cue, CueOptions::default());
    }
    fn on_active(&mut self, cue: &Cue) {
        self.route(CueCall::OnActive, cue, CueOptions::default());
    }
    fn while_active(&mut self, cue: &Cue) {
        self.route(CueCall::WhileActive, cue, CueOptions::default());
    }
    fn removed(&mut self, cue: &Cue, reason: RemoveReason) {
        self.route(CueCall::Removed(reason), cue, CueOptions::default());
    }
    fn confirmed(&mut self, cue: &Cue) {
        self.route(CueCall::Confirmed, cue, CueOptions::default());
    }
}
