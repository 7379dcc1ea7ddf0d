//! Executions: an instant, inline or periodic effect changes base values once — its
//! modifiers, its execution calculation's outputs, the post-execute hooks and its `Executed`
//! cue.

use crate::attribute::ModOp;
use crate::attribute::stacked;
use crate::effect::CaptureSide;
use crate::effect::EffectSpec;
use crate::effect::{EffectDef, MagnitudeDef};
use crate::id::{AttrId, EffectDefId, EffectHandle, Entity, FnId};
use crate::num::Fx;
use crate::world::attribute_table::Execution;
use crate::world::hooks::{BoundFn, ExecCtx, PostExecuteContext, PostExecuteCtxFn, PostExecuteFn};
use crate::world::output::{AttrCause, Diagnostic, EffectEvent, ExecutedMod};
use crate::world::{Game, World};

impl<G: Game> World<G> {
    /// Executes an active (periodic) effect once: stored magnitudes, live captures and
    /// calculations re-read now.
    pub(crate) fn execute_active(&mut self, ei: u32, seq: u32) {
        let target = self.entity_of(ei);
        let Some(slot) = self.effect_store().find(EffectHandle { target, seq }) else { return };
        let ef = *self.effect_store().effect(slot);
        let content = self.content.clone();
        let Some(def) = content.effect_defs().get(ef.def.index()) else { return };
        let spec = self.spec_of_active(slot);
        let mut mags = [Fx::ZERO; crate::effect::MAX_MODIFIERS];
        let mut qualified = ef.qualified;
        for (i, m) in def.modifiers.iter().enumerate() {
            let live = matches!(
                m.magnitude,
                MagnitudeDef::Custom { .. } | MagnitudeDef::Attribute { snapshot: false, .. }
            );
            mags[i] = if live {
                self.modifier_magnitude(def, i, &spec, target, ef.stacks)
            } else {
                self.effect_store().mag(slot, i).unwrap_or(Fx::ZERO)
            };
            if m.reevaluate_each_period {
                let ok = m.source_tags.passes(&spec.source_tags)
                    && m.target_tags.passes_words(self.tag_view_index(ei));
                qualified = if ok { qualified | (1 << i) } else { qualified & !(1 << i) };
            }
        }
        let handle = ef.handle(target);
        self.execute_spec(
            &spec,
            target,
            Some(handle),
            ef.stacks,
            &mags[..def.modifiers.len()],
            qualified,
        );
    }

    /// Executes a spec on the target's base values: modifiers, then executions, each change
    /// followed by the attribute set's post-execute hook.
    pub(crate) fn execute_spec(
        &mut self,
        spec: &EffectSpec,
        target: Entity,
        handle: Option<EffectHandle>,
        stacks: u16,
        mags: &[Fx],
        qualified: u32,
    ) {
        let ti = target.index;
        let content = self.content.clone();
        let def_id = (!spec.is_inline()).then_some(spec.def);
        // The changes this execution makes are appended from here on: the cues read their
        // magnitudes from them.
        let first_change = self.out.executions.len();
        if spec.is_inline() {
            let n = usize::from(spec.n_inline).min(spec.inline.len());
            for m in &spec.inline[..n] {
                if m.attr < u16::MAX && usize::from(m.attr) < self.state.layout.attrs {
                    self.execute_mod(ti, AttrId(m.attr), m.op(), m.magnitude, spec, None, handle);
                }
            }
            // Modifiers beyond the four the spec holds (`World::inline_spec`), copied out of
            // the frame spill first (executing them changes the world).
            if !self.spec_extra_inline(spec).is_empty() {
                let mut extra =
                    [crate::effect::InlineMod::default(); crate::world::capacity::MAX_EXTRA];
                let more = self.spec_extra_inline(spec);
                let n_extra = more.len().min(extra.len());
                extra[..n_extra].copy_from_slice(&more[..n_extra]);
                for m in &extra[..n_extra] {
                    if m.attr < u16::MAX && usize::from(m.attr) < self.state.layout.attrs {
                        let (attr, op) = (AttrId(m.attr), m.op());
                        self.execute_mod(ti, attr, op, m.magnitude, spec, None, handle);
                    }
                }
            }
        } else if let Some(def) = content.effect_defs().get(spec.def.index()) {
            for (i, m) in def.modifiers.iter().enumerate() {
                if qualified & (1 << i) == 0 {
                    continue;
                }
                let mag = stacked(m.op, mags.get(i).copied().unwrap_or(Fx::ZERO), stacks);
                self.execute_mod(ti, m.attr, m.op, mag, spec, def_id, handle);
            }
            let mut manual = false;
            for (xi, x) in def.executions.iter().enumerate() {
                manual |= self.run_execution(ti, def, xi, *x, spec, stacks, handle);
            }
            if !manual && self.is_alive(target) {
                // Executed cues of the definition (F-GC-03), unless an execution handled them
                // itself (F-GE-15).
                let origin = match handle {
                    Some(h) => crate::cue::CueOrigin::effect(h),
                    None => crate::cue::CueOrigin::NONE,
                };
                for c in def.cues.iter().filter(|c| c.executed()) {
                    let changes = self.out.executions.get(first_change..).unwrap_or(&[]);
                    let params = crate::cue::CueParams {
                        magnitude: executed_cue_magnitude(c, def, mags, stacks, changes),
                        instigator: spec.context.instigator,
                        causer: spec.context.causer,
                        source_object: spec.context.source_object,
                        effect: handle.unwrap_or(EffectHandle::NONE),
                        location: spec.context.hit_point,
                        normal: spec.context.hit_normal,
                        level: spec.level,
                        count: 1,
                        ..crate::cue::CueParams::default()
                    };
                    self.emit_effect_cue(
                        target,
                        c.tag,
                        crate::cue::CueKind::Executed,
                        origin,
                        params,
                        &spec.source_tags,
                    );
                }
            }
        }
        self.out.effect_events.push(EffectEvent::Executed { target, def: def_id, handle });
    }

    /// One change of a base value, its post-execute hook and the transient reset.
    #[allow(
        clippy::too_many_arguments,
        reason = "the change, its spec and where it came from, each read by the post-execute hook"
    )]
    fn execute_mod(
        &mut self,
        ti: u32,
        attr: AttrId,
        op: ModOp,
        magnitude: Fx,
        spec: &EffectSpec,
        def: Option<EffectDefId>,
        handle: Option<EffectHandle>,
    ) {
        if !self.entity_has_set_attr(ti, attr) {
            return;
        }
        // The old current value is recorded before a transient attribute's follows its base.
        self.mark_attr_dirty(ti, attr, AttrCause::Execution { def });
        let Execution { old, new, div_by_zero } =
            self.attr_table_mut().execute(ti, attr, op, magnitude);
        let target = self.entity_of(ti);
        if div_by_zero {
            self.out.diagnostics.push(Diagnostic::DivideByZero { entity: target, attr });
        }
        let adef = self.content.attr_def(attr);
        let transient = adef.transient;
        let em = ExecutedMod {
            frame: self.frame(),
            target,
            attr,
            op,
            magnitude,
            old_base: old,
            new_base: new,
            def,
            handle,
            instigator: spec.context.instigator,
            causer: spec.context.causer,
            level: spec.level,
        };
        self.out.executions.push(em);
        let post = self.content.attr_set_defs().get(adef.set.index()).and_then(|s| s.post_execute);
        let hook = match post.and_then(|p| self.bound.get(p)) {
            Some(BoundFn::Post(f)) => Some(PostHook::Plain(*f)),
            Some(BoundFn::PostCtx(f)) => Some(PostHook::Context(*f)),
            _ => None,
        };
        if let Some(hook) = hook {
            match hook {
                PostHook::Plain(f) => f(self, &em),
                PostHook::Context(f) => {
                    // The context is built only for hooks registered to receive it (F-ATTR-05).
                    let mut sbc_extra =
                        [crate::effect::SbcEntry::default(); crate::world::capacity::MAX_EXTRA];
                    let more = self.spec_extra_sbc(spec);
                    let n_sbc_extra = more.len().min(sbc_extra.len());
                    sbc_extra[..n_sbc_extra].copy_from_slice(&more[..n_sbc_extra]);
                    let ctx = PostExecuteContext {
                        spec: *spec,
                        target_tags: self.tags(target),
                        sbc_extra,
                        n_sbc_extra,
                    };
                    f(self, &em, &ctx);
                }
            }
        }
        if transient && self.is_alive(target) {
            // A meta attribute lives for one execution only.
            self.attr_table_mut().reset(ti, attr, false);
        }
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "the execution, its spec and the target it writes: a bundle would be built once per call"
    )]
    fn run_execution(
        &mut self,
        ti: u32,
        def: &EffectDef,
        xi: usize,
        fid: FnId,
        spec: &EffectSpec,
        stacks: u16,
        handle: Option<EffectHandle>,
    ) -> bool {
        let bound = self.bound.clone();
        let Some(BoundFn::Exec { f, prepare, captures }) = bound.get(fid) else { return false };
        let mut spec2 = *spec;
        if let Some(p) = prepare {
            p(&mut spec2);
            // A value the stage could not keep in the spec's inline room: reported, and the
            // values beyond the room the spec had stay readable (src/world/capacity.rs).
            if let Some(capacity) = crate::capacity::ext::dropped_capacity(spec2.ext)
                && spec2.ext != spec.ext
            {
                let inline = capacity.inline();
                let exceeded =
                    crate::world::CapacityExceeded { capacity, needed: inline + 1, limit: inline };
                let entity = spec.context.instigator;
                self.out.diagnostics.push(Diagnostic::CapacityExceeded { entity, exceeded });
                spec2.ext = spec.ext;
            }
        }
        let target = self.entity_of(ti);
        // Captures in declaration order; source snapshot captures come from the spec.
        let mut slot = self.exec_source_slot(def);
        // Earlier executions' snapshot captures come first.
        for prev in def.executions.iter().take_while(|x| **x != fid) {
            if let Some(BoundFn::Exec { captures: pc, .. }) = bound.get(*prev) {
                slot += pc.iter().filter(|c| c.snapshot).count();
            }
        }
        let mut vals = [Fx::ZERO; 16];
        for (ci, c) in captures.iter().enumerate().take(vals.len()) {
            vals[ci] = match (c.side, c.snapshot) {
                (CaptureSide::Source, true) => {
                    let v = spec2.source_captures.get(slot).copied().unwrap_or(Fx::ZERO);
                    slot += 1;
                    v
                }
                (CaptureSide::Source, false) => {
                    self.read_capture(spec2.context.instigator, c.attr, c.which)
                }
                (CaptureSide::Target, _) => self.read_capture(target, c.attr, c.which),
            };
        }
        let target_tags = self.tags(target);
        // Scoped modifiers and transient aggregators (F-GE-14): only content that has them
        // pays for them.
        let scoped = (!def.scoped_modifiers.is_empty())
            .then(|| self.scoped_values(def, xi, &spec2, target, &target_tags, stacks));
        if let Some(scoped) = &scoped {
            for (ci, c) in captures.iter().enumerate().take(vals.len()) {
                let who =
                    if c.side == CaptureSide::Source { spec2.context.instigator } else { target };
                vals[ci] = self.scoped_capture(scoped, c, who, vals[ci]);
            }
        }
        let transients = match &scoped {
            Some(s) => &s.transients[..s.n_transients],
            None => &[][..],
        };
        let mut outputs = core::mem::take(&mut self.scratch.exec_outputs);
        let mut extra = core::mem::take(&mut self.scratch.exec_extra);
        let mut cues = core::mem::take(&mut self.scratch.exec_cues);
        cues.clear();
        outputs.clear();
        extra.clear();
        // Every execution draws from its own stream, keyed by a counter in the snapshot.
        let serial = self.state.header.exec_serial;
        self.state.header.exec_serial = serial.wrapping_add(1);
        let rng = self.random_for(&[
            crate::random::salt::EXECUTION,
            u64::from(self.frame()),
            u64::from(ti),
            u64::from(serial),
            u64::from(fid.0),
        ]);
        let content = self.content.clone();
        let sbc_extra = self.spec_extra_sbc(&spec2);
        let mut ctx = ExecCtx {
            content: &content,
            captures: &vals[..captures.len().min(vals.len())],
            spec: &spec2,
            stacks,
            source: spec2.context.instigator,
            target,
            source_tags: &spec2.source_tags,
            target_tags: &target_tags,
            outputs: &mut outputs,
            extra: &mut extra,
            rng,
            cues_handled_manually: false,
            cues: &mut cues,
            transients,
            sbc_extra,
        };
        f(&mut ctx);
        let manual = ctx.cues_handled_manually;
        for o in outputs.iter() {
            if o.attr.index() < self.state.layout.attrs {
                self.execute_mod(
                    ti,
                    o.attr,
                    o.op,
                    o.value,
                    &spec2,
                    Some(spec2.def).filter(|_| !spec2.is_inline()),
                    handle,
                );
            }
        }
        for (s, t) in extra.drain(..) {
            self.queue_apply(s, t);
        }
        let origin = match handle {
            Some(h) => crate::cue::CueOrigin::effect(h),
            None => crate::cue::CueOrigin::NONE,
        };
        for (on, tag, params) in cues.drain(..) {
            self.emit_effect_cue(
                on,
                tag,
                crate::cue::CueKind::Executed,
                origin,
                params,
                &spec2.source_tags,
            );
        }
        outputs.clear();
        self.scratch.exec_outputs = outputs;
        self.scratch.exec_extra = extra;
        self.scratch.exec_cues = cues;
        manual
    }
}

/// The magnitude an `Executed` cue of an effect carries, GAS's rule: the total magnitude the
/// execution applied to the cue's `magnitude_attribute`, its modifiers and its executions'
/// outputs alike (`changes`, in execution order). Without a `magnitude_attribute` the
/// attribute is the first modifier's, else the first one an execution changed. A modifier on
/// the attribute that did not execute (its tag requirements failed, or the target lacks the
/// attribute) still gives its magnitude; an attribute the execution did not touch gives 0.
fn executed_cue_magnitude(
    c: &crate::content::def::EffectCueDef,
    def: &EffectDef,
    mags: &[Fx],
    stacks: u16,
    changes: &[ExecutedMod],
) -> Fx {
    let attr = c
        .magnitude_attribute
        .or_else(|| def.modifiers.first().map(|m| m.attr))
        .or_else(|| changes.first().map(|m| m.attr));
    let Some(attr) = attr else { return Fx::ZERO };
    let mut on_attr = changes.iter().filter(|m| m.attr == attr).peekable();
    if on_attr.peek().is_some() {
        return on_attr.fold(Fx::ZERO, |sum, m| crate::num::add(sum, m.magnitude));
    }
    def.modifiers
        .iter()
        .position(|m| m.attr == attr)
        .and_then(|i| Some(stacked(def.modifiers[i].op, *mags.get(i)?, stacks)))
        .unwrap_or(Fx::ZERO)
}

/// The post-execute hook of an attribute set, as registered.
enum PostHook<G: Game> {
    Plain(PostExecuteFn<G>),
    Context(PostExecuteCtxFn<G>),
}
