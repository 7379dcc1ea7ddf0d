//! The effect pipelines: building specs and the values they carry (`spec`), applying a spec
//! (`apply`: requirements, immunity, stacking), executing one (`execute`: instant, inline and
//! periodic changes of base values), phases P1 and P2 (`periodic`: periodic ticks and expiry),
//! and magnitude evaluation (`magnitude`: captures, curves, custom calculations). The records
//! they change live in [`crate::effect`].

mod apply;
mod execute;
pub(crate) mod magnitude;
mod periodic;
mod spec;

use super::effect_store::{EffectColumns, EffectColumnsMut, EffectStore, EffectStoreMut};
use super::state::State;
use super::{Game, World};

impl<G: Game> State<G> {
    /// The effect store over this state's columns and counters.
    #[inline]
    pub(crate) fn effect_store(&self) -> EffectStore<'_> {
        let l = &self.layout;
        EffectStore::new(EffectColumns {
            entities: &self.entities,
            effects: &self.effects,
            timers: &self.effect_timers,
            mags: &self.effect_mags,
            tags_ext: &self.effect_tags_ext,
            wake: &self.wake,
            origins: &self.origins,
            origins_len: self.header.origins_len,
            specs: &self.effect_specs,
            specs_high_water: self.header.specs_high_water,
            rows: l.effects,
            mods: l.mods,
            tags_extra: l.tags_extra,
        })
    }

    /// [`State::effect_store`], to change.
    #[inline]
    pub(crate) fn effect_store_mut(&mut self) -> EffectStoreMut<'_> {
        let l = &self.layout;
        EffectStoreMut::new(EffectColumnsMut {
            entities: &mut self.entities,
            effects: &mut self.effects,
            timers: &mut self.effect_timers,
            mags: &mut self.effect_mags,
            tags_ext: &mut self.effect_tags_ext,
            wake: &mut self.wake,
            origins: &mut self.origins,
            origins_len: &mut self.header.origins_len,
            specs: &mut self.effect_specs,
            spec_ext: &mut self.spec_ext,
            specs_high_water: &mut self.header.specs_high_water,
            rows: l.effects,
            mods: l.mods,
            tags_extra: l.tags_extra,
        })
    }
}

impl<G: Game> World<G> {
    /// The effect store.
    #[inline]
    pub(crate) fn effect_store(&self) -> EffectStore<'_> {
        self.state.effect_store()
    }

    /// The effect store, to change.
    #[inline]
    pub(crate) fn effect_store_mut(&mut self) -> EffectStoreMut<'_> {
        self.state.effect_store_mut()
    }
}
