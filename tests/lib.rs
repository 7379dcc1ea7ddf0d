//! Integration tests (one binary, many modules).

mod alloc;
mod architecture;
mod boxes;
#[cfg(feature = "browser")]
mod browser;
mod common;
mod content_errors;
mod cues;
mod departures;
mod docs_citations;
mod duel;
mod features_abilities;
mod features_attributes;
mod features_capacities;
mod features_effects;
mod features_tags;
mod fuzz_corpora;
mod fuzz_games;
mod fuzz_my_game;
mod fuzz_regressions;
mod golden;
mod hostile;
mod late_spectator;
mod malformed;
#[cfg(feature = "matchbox")]
mod matchbox;
mod my_scenarios;
mod p2p_matchbox_args;
mod recipes;
mod rejoin;
mod rejoin_udp;
mod replays;
mod rollback;
mod scenario_files;
mod scenarios_abilities;
mod scenarios_core;
mod sessions;
mod signed_inputs;
mod soak;
mod ui_events;
