//! A world on data-only content, driven by players' held ability inputs: what the command-line
//! tool's `bench --content` measures and `fuzz --content` fuzzes.
//!
//! The game is [`ScenarioGame`] (no systems of its own; player `p`'s [`ScenarioInput`] holds
//! ability inputs of the entity bound to player `p`). Every entity gets every attribute set,
//! every ability granted at level 1 and every effect applied once at level 1 (by itself), so
//! the content's abilities, effects, periodic executions, stacking and cues all run. Content
//! that names executions, calculations or behaviours needs its functions registered from Rust:
//! [`world`] reports it as an error naming the function.

use rollback_abilities::scenario::{ScenarioGame, ScenarioInput};
use rollback_abilities::{AbilityDefId, Content, Hooks, World, WorldConfig};
use std::sync::Arc;

/// The world configuration of [`world`]: `entities` entities (at least `players`), `players`
/// players, `seed`, and a task pool of four tasks per entity (at least 64).
pub fn config(entities: u32, players: usize, seed: u64) -> WorldConfig {
    let n = entities.max(players as u32).max(1);
    WorldConfig {
        max_entities: n,
        players: players.min(usize::from(u16::MAX)) as u16,
        seed,
        max_tasks: n.saturating_mul(4).max(64),
        ..WorldConfig::default()
    }
}

/// A world at frame 0 on `content` with [`config`]`(entities, players, seed)`: every entity
/// spawned with every attribute set, every ability granted, every effect applied once; entity
/// `p` bound to player `p`. The same arguments give the same world.
///
/// # Errors
///
/// The world cannot be built on this content (a function it names is not registered, a
/// capacity is too small), as a message that says so.
pub fn world(
    content: Arc<Content>,
    entities: u32,
    players: usize,
    seed: u64,
) -> Result<World<ScenarioGame>, String> {
    let config = config(entities, players, seed);
    let mut w = World::new(content.clone(), &Hooks::new(), config).map_err(|e| {
        format!(
            "cannot build a world on this content: {e} (the command-line tool registers no \
             functions: content that names executions, calculations or behaviours runs from \
             Rust, with its functions registered)"
        )
    })?;
    let sets = content
        .attr_set_defs()
        .iter()
        .map(|d| content.attr_set(&d.name))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let mut ents = Vec::new();
    for _ in 0..config.max_entities {
        let Ok(e) = w.spawn_actor(&sets) else { break };
        ents.push(e);
    }
    for (i, &e) in ents.iter().enumerate() {
        if i < players {
            w.bind_player(i, e);
        }
        for d in 0..content.ability_defs().len() {
            let _ = w.grant_ability(e, AbilityDefId(d as u16), 1);
        }
        for def in content.effect_defs() {
            let Ok(id) = content.effect(&def.name) else { continue };
            let spec = w.make_spec(id, 1, e);
            let _ = w.apply_effect(spec, e);
        }
    }
    Ok(w)
}

/// One player's input from fuzz bytes: the first four bytes are the held ability inputs
/// (bit `i`: input `i`), the fifth's low two bits confirm and cancel.
pub fn input(bytes: &[u8]) -> ScenarioInput {
    let b = |i: usize| bytes.get(i).copied().unwrap_or(0);
    ScenarioInput {
        held: u32::from_le_bytes([b(0), b(1), b(2), b(3)]),
        buttons: u32::from(b(4) & 3),
    }
}
