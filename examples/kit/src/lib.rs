//! The kit of `rollback_abilities`: what the crate ships around the library, built on its public
//! API only, as a game would be.
//!
//! - [`duel`]: the reference fighting game (2 to 4 bot-driven fighters, content in
//!   `examples/content/duel.ron`), whole matches over the emulated network or one GGRS peer per
//!   process, and their reports. The `duel`, `p2p_matchbox` and `browser_duel` examples and the
//!   command-line tool play it.
//! - [`arena`]: the reference workload the benchmarks, the allocation tests and
//!   `docs/performance.md` measure, with its baselines ([`arena::baseline`]).
//! - [`content_world`]: a world on data-only content driven by held ability inputs, which
//!   `bench --content` measures and `fuzz --content` fuzzes.
//! - [`fuzz`]: the fuzz oracles, the logic of the targets in `fuzz/`; the root package's
//!   `cargo test` replays every committed corpus and regression input through them.
//! - `plot` (feature `plot`): SVG charts of values over frames with a cue timeline.
//! - The `rollback-abilities` command-line tool (feature `cli`): scenario runner, content
//!   checker, replay tools, inspector, desync diff, benchmarks. From the repository's root:
//!   `cargo run --features cli -- --help`.
//!
//! Nothing here is part of the library's API: the library is `rollback_abilities`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]
#![warn(missing_debug_implementations)]

pub mod arena;
pub mod content_world;
pub mod duel;
pub mod fuzz;
#[cfg(feature = "plot")]
pub mod plot;
