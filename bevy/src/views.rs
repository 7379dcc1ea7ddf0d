//! One Bevy entity per crate entity, for rendering: a read-only mirror of the world, never
//! rolled back itself (the world is), refreshed once per Bevy frame after the ticks.

use bevy::prelude::{Component, Entity, Resource};
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

#[derive(Clone, Copy, Debug)]
struct View {
    entity: Entity,
    gone_since: Option<Frame>,
}

/// The map from crate entities to their view entities.
#[derive(Resource, Debug, Default)]
pub struct SimViews {
    views: BTreeMap<SimId, View>,
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
    /// Compares the views with the world: `live` lists the live entities with their
    /// components; `changed(view, data)` says whether a view's copy differs. `now` is the world's
    /// next frame, `confirmed_next` the first unconfirmed frame, `rewound_to` the earliest frame
    /// a rollback loaded since the last pass.
    pub(crate) fn diff<C: Copy>(
        &mut self,
        live: impl Iterator<Item = (SimId, C)>,
        mut changed: impl FnMut(Entity, &C) -> bool,
        now: Frame,
        confirmed_next: Frame,
        rewound_to: Option<Frame>,
    ) -> Vec<ViewChange<C>> {
        let mut out = Vec::new();
        let mut alive = std::collections::BTreeSet::new();
        for (id, data) in live {
            alive.insert(id);
            match self.views.get_mut(&id) {
                Some(v) => {
                    if v.gone_since.take().is_some() {
                        out.push(ViewChange::Revived(v.entity));
                    }
                    if changed(v.entity, &data) {
                        out.push(ViewChange::Update(v.entity, data));
                    }
                }
                None => out.push(ViewChange::Spawn(id, data)),
            }
        }
        self.views.retain(|id, v| {
            if alive.contains(id) {
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
        out
    }

    pub(crate) fn insert(&mut self, id: SimId, entity: Entity) {
        self.views.insert(id, View { entity, gone_since: None });
    }

    /// Forgets every view, returning their entities.
    pub(crate) fn clear(&mut self) -> Vec<Entity> {
        std::mem::take(&mut self.views).into_values().map(|v| v.entity).collect()
    }
}
