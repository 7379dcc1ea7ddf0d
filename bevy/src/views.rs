//! One Bevy entity per crate entity, for rendering: a read-only mirror of the world, never
//! rolled back itself (the world is), refreshed once per Bevy frame after the ticks.

use bevy::prelude::{Component, Entity, Resource};
use bytemuck::Pod;
use rollback_abilities::Entity as SimId;
use rollback_abilities::num::Frame;
use std::collections::BTreeMap;

/// The crate entity a view entity shows. Dress views (sprites, meshes) with an observer on
/// `Add, SimEntity`.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimEntity(pub SimId);

/// A copy of the crate entity's game component (`G::Component`), rewritten only when its bytes
/// change: `Changed<SimData<C>>` means the data really changed (a rollback that re-simulates to
/// the same state does not touch it).
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct SimData<C: Send + Sync + 'static>(pub C);

/// The crate entity is dead in the current (possibly predicted) timeline. The view is kept,
/// and despawned only once the death is confirmed; a rollback that revives the entity removes
/// this marker and keeps the view. Hide views that have it.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimGone {
    /// The frame (the world's next frame) at which the entity was last seen dead after a
    /// rollback could have changed it: once every frame before it is confirmed, the view goes.
    pub since: Frame,
}

#[derive(Clone, Debug)]
struct View {
    entity: Entity,
    gone_since: Option<Frame>,
    /// The view pass that last saw the crate entity alive.
    seen: u64,
    /// The bytes of the data the view's `SimData` holds: compared without touching the
    /// Bevy world, rewritten in place (no allocation after the view's first pass).
    data: Vec<u8>,
}

/// The map from crate entities to their view entities.
#[derive(Resource, Debug, Default)]
pub struct SimViews {
    views: BTreeMap<SimId, View>,
    /// The number of view passes so far.
    pass: u64,
}

impl SimViews {
    /// The view entity of a crate entity.
    pub fn view(&self, e: SimId) -> Option<Entity> {
        self.views.get(&e).map(|v| v.entity)
    }

    /// Every (crate entity, view entity) pair, in crate entity order.
    pub fn iter(&self) -> impl Iterator<Item = (SimId, Entity)> + '_ {
        self.views.iter().map(|(s, v)| (*s, v.entity))
    }

    /// How many views exist (live and not yet retired).
    pub fn len(&self) -> usize {
        self.views.len()
    }

    /// Whether there is no view.
    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }
}

/// What the views pass decided for one Bevy frame.
pub(crate) enum ViewChange<C> {
    Spawn(SimId, C),
    Update(Entity, C),
    Revived(Entity),
    Gone(Entity, Frame),
    Retire(Entity),
}

impl SimViews {
    /// Compares the views with the world and appends what changed to `out`: `live` lists the
    /// live entities with their components. `now` is the world's next frame, `confirmed_next`
    /// the first unconfirmed frame, `rewound_to` the earliest frame a rollback loaded since the
    /// last pass. An entity whose data has the bytes its view already holds yields nothing:
    /// the pass allocates only for a new view.
    pub(crate) fn diff<C: Pod>(
        &mut self,
        live: impl Iterator<Item = (SimId, C)>,
        now: Frame,
        confirmed_next: Frame,
        rewound_to: Option<Frame>,
        out: &mut Vec<ViewChange<C>>,
    ) {
        self.pass += 1;
        let pass = self.pass;
        for (id, data) in live {
            let bytes = bytemuck::bytes_of(&data);
            match self.views.get_mut(&id) {
                Some(v) => {
                    v.seen = pass;
                    if v.gone_since.take().is_some() {
                        out.push(ViewChange::Revived(v.entity));
                    }
                    if v.data != bytes {
                        v.data.clear();
                        v.data.extend_from_slice(bytes);
                        out.push(ViewChange::Update(v.entity, data));
                    }
                }
                None => out.push(ViewChange::Spawn(id, data)),
            }
        }
        self.views.retain(|_, v| {
            if v.seen == pass {
                return true;
            }
            let since = match v.gone_since {
                // A rollback reached before the frame the death was seen at: it may have
                // happened later (or not at all) in the corrected timeline. Seen again now.
                Some(s) if rewound_to.is_none_or(|r| r >= s) => s,
                _ => {
                    v.gone_since = Some(now);
                    out.push(ViewChange::Gone(v.entity, now));
                    now
                }
            };
            if confirmed_next >= since {
                out.push(ViewChange::Retire(v.entity));
                return false;
            }
            true
        });
    }

    /// A new view of `id`, holding `data`, seen by the current pass.
    pub(crate) fn insert(&mut self, id: SimId, entity: Entity, data: &[u8]) {
        let view = View { entity, gone_since: None, seen: self.pass, data: data.to_vec() };
        self.views.insert(id, view);
    }

    /// Forgets every view, returning their entities.
    pub(crate) fn clear(&mut self) -> Vec<Entity> {
        std::mem::take(&mut self.views).into_values().map(|v| v.entity).collect()
    }
}
