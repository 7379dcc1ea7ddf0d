//! Effect specs: building one from a definition and the values it carries — SetByCaller
//! values, dynamic granted tags, inline modifiers. What does not fit the spec's inline room
//! goes to the frame spill (`world/capacity.rs`).

use crate::attribute::ModOp;
use crate::capacity::Capacity;
use crate::capacity::ext;
use crate::effect::{CaptureSide, EffectSpec, InlineMod, MAX_INLINE_MODS, MagnitudeDef, SbcEntry};
use crate::id::{AttrId, EffectDefId, Entity, TagId};
use crate::num::Fx;
use crate::world::capacity::{OwnedExtra, SpecExtra};
use crate::world::hooks;
use crate::world::output::ApplyError;
use crate::world::{Game, World};

impl<G: Game> World<G> {
    /// Builds a spec from a definition: level, instigator `source`, the source's current tags
    /// (ancestor-expanded) and the source values its snapshot captures need, read now. A
    /// projectile can carry the spec and apply it frames later with these values.
    #[inline]
    pub fn make_spec(&self, def: EffectDefId, level: u16, source: Entity) -> EffectSpec {
        let mut spec = EffectSpec::new(def, level);
        self.init_spec(&mut spec, source);
        spec
    }

    /// What [`World::make_spec`] adds to `EffectSpec::new(def, level)`, written into `spec`
    /// (which must be that new spec) in place: a spec is 520 bytes, and building it in the
    /// caller's place instead of returning it saves a copy on every spec made.
    pub(crate) fn init_spec(&self, spec: &mut EffectSpec, source: Entity) {
        let def = spec.def;
        spec.created = self.frame();
        spec.context.instigator = source;
        spec.context.causer = source;
        if let Some(words) = self.tag_view(source) {
            spec.source_tags.copy_words(words, self.state.layout.tags);
        }
        let Some(d) = self.content.effect_defs().get(def.index()) else { return };
        // Most definitions capture nothing at creation: they skip the walk below.
        if !self.content.accel.make_captures.get(def.index()).copied().unwrap_or(true) {
            return;
        }
        // Slot order (shared with application): modifiers in order (attribute captures, then
        // their calculations' declared snapshot captures), then executions.
        let mut n = 0usize;
        let mut put = |spec: &mut EffectSpec, v: Fx| {
            if n < spec.source_captures.len() {
                spec.source_captures[n] = v;
            }
            n += 1;
        };
        // A magnitude's source captures taken now: an attribute snapshot capture, or the
        // snapshot captures its custom calculation declares.
        let captures_of = |m: &MagnitudeDef,
                           spec: &mut EffectSpec,
                           put: &mut dyn FnMut(&mut EffectSpec, Fx)| {
            match *m {
                MagnitudeDef::Attribute {
                    attr,
                    side: CaptureSide::Source,
                    which,
                    snapshot: true,
                    filter,
                    ..
                } => {
                    let v = self.read_capture_filtered(source, attr, which, d.tag_filter(filter));
                    put(spec, v);
                }
                MagnitudeDef::Custom { calc, .. } => {
                    if let Some(hooks::BoundFn::Calc { captures, .. }) = self.bound.get(calc) {
                        for c in captures.iter().filter(|c| c.snapshot) {
                            put(spec, self.read_capture(source, c.attr, c.which));
                        }
                    }
                }
                _ => {}
            }
        };
        for m in &d.modifiers {
            captures_of(&m.magnitude, spec, &mut put);
        }
        for x in &d.executions {
            if let Some(hooks::BoundFn::Exec { captures, .. }) = self.bound.get(*x) {
                for c in captures.iter().filter(|c| c.snapshot) {
                    put(spec, self.read_capture(source, c.attr, c.which));
                }
            }
        }
        // Then the duration's, the period's and the scoped modifiers' magnitudes (F-GA-08,
        // F-GE-14).
        for m in d.extra_magnitudes() {
            captures_of(m, spec, &mut put);
        }
        spec.n_source_captures = n.min(spec.source_captures.len()) as u8;
    }

    /// A SetByCaller value of `spec`: those it holds itself, then those set beyond them with
    /// [`World::set_set_by_caller`]. `None` when the spec has no value for `tag` (or the values
    /// beyond its room expired: see [`World::set_set_by_caller`]).
    pub fn set_by_caller(&self, spec: &EffectSpec, tag: TagId) -> Option<Fx> {
        spec.set_by_caller(tag)
            .or_else(|| self.spec_extra_sbc(spec).iter().find(|e| e.tag == tag.0).map(|e| e.value))
    }

    /// Every dynamic granted tag of `spec`: the two it holds, then those added beyond them
    /// with [`World::add_granted_tag`].
    pub fn granted_tags_of(&self, spec: &EffectSpec) -> Vec<TagId> {
        let mut v: Vec<TagId> = spec
            .dynamic_granted_tags
            .iter()
            .filter(|t| **t != u16::MAX)
            .map(|t| TagId(*t))
            .collect();
        if spec.ext != ext::NONE
            && let Ok(x) = self.spec_extra(spec)
        {
            v.extend(x.tag_ids());
        }
        v
    }

    /// Sets a SetByCaller value of `spec` (replacing one with the same tag): in the spec itself
    /// while it has room (four values), beyond that — up to
    /// [`WorldConfig::set_by_caller_per_spec`](crate::WorldConfig::set_by_caller_per_spec) — in the
    /// frame spill: such a spec is valid for the frame it was made in (made between two steps,
    /// until the end of the next one); apply it then (an active effect keeps what it needs).
    /// [`World::set_by_caller`] reads them all, and so do content magnitudes, executions
    /// ([`ExecCtx::set_by_caller`](crate::world::ExecCtx::set_by_caller)), calculations and
    /// post-execute contexts.
    ///
    /// # Errors
    ///
    /// A value beyond the capacity (or beyond the frame's spill records) is not set: the error is
    /// [`ApplyError::OverCapacity`] naming the capacity to raise, a
    /// [`Diagnostic::CapacityExceeded`](crate::Diagnostic::CapacityExceeded) records it, and the
    /// spec is marked so that applying it fails with [`ApplyError::SpecValuesDropped`] — never a
    /// spec that silently lacks a value. A spec whose values beyond its room can no longer be read
    /// (made in an earlier frame, or already marked) is left as it is and its error returned
    /// ([`ApplyError::SpecExpired`], [`ApplyError::SpecValuesDropped`]).
    pub fn set_set_by_caller(
        &mut self,
        spec: &mut EffectSpec,
        tag: TagId,
        value: Fx,
    ) -> Result<(), ApplyError> {
        let inline_n = usize::from(spec.n_set_by_caller).min(spec.set_by_caller.len());
        let inline_has = spec.set_by_caller[..inline_n].iter().any(|e| e.tag == tag.0);
        if inline_has || inline_n < spec.set_by_caller.len() {
            spec.set_set_by_caller(tag, value);
            return Ok(());
        }
        let mut x = self.owned_extra(spec)?;
        match x.sbc[..x.n_sbc].iter_mut().find(|e| e.tag == tag.0) {
            Some(e) => e.value = value,
            None => {
                let needed = inline_n + x.n_sbc + 1;
                if x.n_sbc >= self.state.layout.sbc_extra {
                    return Err(self.spec_over(spec, Capacity::SetByCallerPerSpec, needed));
                }
                x.sbc[x.n_sbc] = SbcEntry::new(tag, value);
                x.n_sbc += 1;
            }
        }
        self.spill_spec(spec, &x)
    }

    /// Adds a dynamic granted tag to `spec` (GAS `DynamicGrantedTags`): in the spec itself while it
    /// has room (two tags), beyond that — up to
    /// [`WorldConfig::granted_tags_per_spec`](crate::WorldConfig::granted_tags_per_spec) — in the
    /// frame spill, like [`World::set_set_by_caller`] (same lifetime and errors). The active effect
    /// the spec becomes keeps them all ([`World::effect_dynamic_tags`]).
    pub fn add_granted_tag(&mut self, spec: &mut EffectSpec, tag: TagId) -> Result<(), ApplyError> {
        if spec.dynamic_granted_tags.contains(&tag.0) {
            return Ok(());
        }
        if let Some(k) = spec.dynamic_granted_tags.iter().position(|t| *t == u16::MAX) {
            spec.dynamic_granted_tags[k] = tag.0;
            return Ok(());
        }
        let mut x = self.owned_extra(spec)?;
        if x.tags[..x.n_tags].contains(&(tag.0 + 1)) {
            return Ok(());
        }
        if x.n_tags >= self.state.layout.tags_extra {
            let needed = spec.dynamic_granted_tags.len() + x.n_tags + 1;
            return Err(self.spec_over(spec, Capacity::GrantedTagsPerSpec, needed));
        }
        x.tags[x.n_tags] = tag.0 + 1;
        x.n_tags += 1;
        self.spill_spec(spec, &x)
    }

    /// An inline instant spec (F-GE-24) with up to
    /// [`WorldConfig::inline_modifiers_per_spec`](crate::WorldConfig::inline_modifiers_per_spec)
    /// modifiers: four in the spec, the rest in the frame spill (apply it in the frame it was made
    /// in, as for [`World::set_set_by_caller`]).
    ///
    /// # Errors
    ///
    /// More modifiers than the capacity: [`ApplyError::OverCapacity`] (also recorded as a
    /// [`Diagnostic::CapacityExceeded`](crate::Diagnostic::CapacityExceeded)).
    pub fn inline_spec(&mut self, mods: &[(AttrId, ModOp, Fx)]) -> Result<EffectSpec, ApplyError> {
        let split = mods.len().min(MAX_INLINE_MODS);
        let mut spec = EffectSpec::inline(&mods[..split]);
        if mods.len() == split {
            return Ok(spec);
        }
        if mods.len() - split > self.state.layout.inline_extra {
            return Err(self.spec_over(&mut spec, Capacity::InlineModifiersPerSpec, mods.len()));
        }
        let mut x = OwnedExtra::of(&SpecExtra::default());
        for (k, (a, op, m)) in mods[split..].iter().enumerate() {
            x.inline[k] = InlineMod::new(*a, *op, *m);
        }
        x.n_inline = mods.len() - split;
        self.spill_spec(&mut spec, &x)?;
        Ok(spec)
    }
}
