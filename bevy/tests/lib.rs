//! Headless tests of the plugin (no window, no renderer): `MinimalPlugins`, a manual clock of
//! one tick per update, the kit's duel as the game.

mod asset;
mod common;
mod content;
mod cues;
mod lifecycle;
mod network;
mod synctest;
mod udp;
mod views;
