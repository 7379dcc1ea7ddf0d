//! Headless tests of the plugin (no window, no renderer): `MinimalPlugins`, a manual clock of
//! one tick per update, the kit's duel as the game.

mod asset;
mod box_game;
mod common;
mod content;
mod cues;
mod lifecycle;
#[cfg(feature = "matchbox")]
mod matchbox;
mod network;
mod synctest;
mod udp;
mod views;
