//! View entities follow the world under rollback: one per live crate entity, their data
//! changed only when it changed, a dead entity's view retired only once its death is
//! confirmed.

use crate::common::{peer_apps, state, synchronize, update};
use bevy::app::{App, Update};
use bevy::prelude::{DetectChanges, Entity, Query, Ref, ResMut, Resource};
use bevy_rollback_abilities::{NetSettings, SimData, SimEntity, SimGone, SimViews};
use rollback_abilities::session::{EmulatedNetwork, NetConditions};
use rollback_abilities_kit::duel::Body;
use std::collections::{BTreeMap, BTreeSet};

/// What the change detector saw: the last data of every view, and any change that was not one.
#[derive(Resource, Default)]
struct Changes {
    last: BTreeMap<Entity, Vec<u8>>,
    changed: usize,
    false_changes: usize,
}

fn watch(mut changes: ResMut<Changes>, views: Query<(Entity, Ref<SimData<Body>>)>) {
    for (e, data) in &views {
        if !data.is_changed() {
            continue;
        }
        let bytes = bytemuck::bytes_of(&data.0).to_vec();
        if let Some(old) = changes.last.insert(e, bytes.clone())
            && !data.is_added()
        {
            changes.changed += 1;
            if old == bytes {
                changes.false_changes += 1;
            }
        }
    }
}

type View = (Entity, SimEntity, SimData<Body>, Option<SimGone>);

fn views_of(app: &mut App) -> Vec<View> {
    let world = app.world_mut();
    world
        .query::<(Entity, &SimEntity, &SimData<Body>, Option<&SimGone>)>()
        .iter(world)
        .map(|(e, s, d, g)| (e, *s, *d, g.copied()))
        .collect()
}

#[test]
fn views_mirror_the_world_and_outlive_a_death_until_it_is_confirmed() {
    let settings = NetSettings { input_delay: 0, departure_ticks: 0, ..NetSettings::default() };
    let laggy = NetConditions {
        latency_ms: 60,
        jitter_ms: 30,
        loss_percent: 5,
        duplicate_percent: 0,
        reorder_percent: 0,
    };
    let net = EmulatedNetwork::new(laggy, 33);
    let mut apps = peer_apps(&net, 2, settings);
    for a in &mut apps {
        a.init_resource::<Changes>().add_systems(Update, watch);
    }
    synchronize(&mut apps, &net);
    let mut retired: BTreeSet<rollback_abilities::Entity> = BTreeSet::new();
    let mut known: Vec<BTreeMap<rollback_abilities::Entity, Entity>> = vec![BTreeMap::new(); 2];
    let (mut gone_seen, mut spawned) = (0, 0);
    for _ in 0..900 {
        update(&mut apps, &net);
        for (i, a) in apps.iter_mut().enumerate() {
            let views = views_of(a);
            let m = state(a);
            let world = m.world();
            let live: BTreeSet<_> = world.entities().collect();
            let shown: BTreeSet<_> =
                views.iter().filter(|v| v.3.is_none()).map(|v| v.1.0).collect();
            // Exactly the live entities are shown, each with its data.
            assert_eq!(shown, live);
            for (e, id, data, gone) in &views {
                match gone {
                    None => assert_eq!(
                        bytemuck::bytes_of(&data.0),
                        bytemuck::bytes_of(world.component(id.0).unwrap())
                    ),
                    Some(_) => {
                        assert!(!world.is_alive(id.0));
                        gone_seen += 1;
                    }
                }
                // One view per crate entity for its whole life, revivals included.
                let first = *known[i].entry(id.0).or_insert(*e);
                spawned += usize::from(first == *e && !retired.contains(&id.0));
                assert_eq!(first, *e, "a crate entity got a second view");
            }
            let now: BTreeSet<_> = views.iter().map(|v| v.1.0).collect();
            for id in known[i].keys() {
                if !now.contains(id) {
                    retired.insert(*id);
                }
            }
            drop(world);
            assert_eq!(a.world().resource::<SimViews>().len(), views.len());
        }
        // A retired entity never lives again: its death was confirmed.
        for a in &apps {
            let m = state(a);
            let world = m.world();
            assert!(retired.iter().all(|e| !world.is_alive(*e)));
        }
    }
    assert!(!retired.is_empty(), "fireballs came and went");
    assert!(gone_seen > 0, "some deaths waited for their confirmation");
    assert!(spawned > 0);
    for a in &apps {
        let c = a.world().resource::<Changes>();
        assert!(c.changed > 100, "the fighters moved");
        assert_eq!(c.false_changes, 0, "a view's data changed without changing");
    }
}
