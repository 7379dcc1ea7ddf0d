//! Shared test helpers: a minimal game and content builders.

#![allow(dead_code)]

use rollback_abilities::prelude::*;
use std::sync::Arc;

/// A game with no data of its own.
pub struct Plain;

impl Game for Plain {
    type Input = u8;
    type Component = ();
    type Global = ();
}

pub fn content(text: &str) -> Arc<Content> {
    match Content::from_ron_str(text) {
        Ok(c) => Arc::new(c),
        Err(e) => panic!("content does not freeze: {e}"),
    }
}

pub fn world(text: &str) -> World<Plain> {
    World::new(content(text), &Hooks::new(), WorldConfig::default()).expect("world")
}

pub fn fx(s: &str) -> Fx {
    rollback_abilities::num::parse_fx(s).expect("decimal")
}

pub fn int(v: i64) -> Fx {
    rollback_abilities::num::int(v)
}
