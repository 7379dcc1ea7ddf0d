//! The duel in the browser (feature `browser`): the crate's reference fighting game compiled to
//! `wasm32-unknown-unknown`, played over matchbox's browser WebRTC and drawn on a canvas, with
//! a replay viewer in the same page. Compiled natively, this example is the one command that
//! builds the page and serves it:
//!
//! ```text
//! cargo run --release --features browser --example browser_duel
//! # → ready http://127.0.0.1:8080/   (open it in two windows and fight)
//! ```
//!
//! Options: `--addr HOST:PORT` (default 127.0.0.1:8080), `--no-build` (serve what is built),
//! `--build-only` (build, print `built DIR` and exit), `--web-dir DIR` (where the page is
//! built to, or with `--no-build` the directory to serve; default `target/browser_duel/www`),
//! `--for SECS` (stop after SECS seconds).
//!
//! Natively it checks for `wasm-bindgen` (exactly the `wasm-bindgen` crate's version in
//! `Cargo.lock`, 0.2.130; if it is missing it prints the `cargo install` command and exits 2),
//! builds the page's program (`cargo build --release --target wasm32-unknown-unknown
//! --features browser --example browser_duel`), runs `wasm-bindgen --target web`, copies
//! `web/` (the HTML, CSS and JavaScript) next to it, then serves that directory and the
//! in-process matchbox signaling server on ONE address: WebSocket upgrades go to the
//! signaling server (the room is the path, `ws://HOST:PORT/ROOM`), every other request is a
//! static file (GET or HEAD, only files inside the directory). When it listens it prints one
//! line to stdout, `ready http://HOST:PORT/`.
//!
//! In the page (URL parameters): `room=NAME` (default `duel`), `players=N` (2 to 4, default
//! 2), `bot=1` (the duel's bot plays this tab), `script=mash|jab|idle` (scripted inputs),
//! `frames=N` (stop once frame N − 1 is confirmed by every peer), `seed=S` (default 1),
//! `delay=D` (GGRS input delay, default 2), `view=replay` (the replay viewer), `wait=SECS`
//! (how long to wait for the others, default 600), `departure=SECS` (how long a silent player
//! has before the others agree it left, default 10), `signal=ws://…/ROOM` (another signaling
//! server). Keys: ←/→ or A/D move, J light attack, K heavy attack, L fireball, I (or S, ↓)
//! shield, Shift sprint (held). Alone in the room for a few seconds, the page offers to play
//! the bot locally (two peers in the page over an emulated 80 ms network).
//!
//! A reloaded tab comes back into its room's running match: every page is a `MatchPeer` over
//! matchbox, keeps its rejoin ticket in the tab's `sessionStorage` while the match runs, and on
//! load with a ticket for its room asks the others for its slot
//! (`ConnectingMatch::rejoin`) instead of starting; it plays on from the frame they agree on.
//!
//! A native peer can join a page's room: `cargo run --release --features matchbox --example
//! p2p_matchbox -- --game duel --room ws://127.0.0.1:8080/duel --players 2 --frames 600`
//! (with `bot=1&frames=600` in the page), and both print or show the same checksum after frame
//! 599 — the cross-architecture determinism claim, live. `docs/browser.md` has the details,
//! the JavaScript API (`window.duel`) and the measurements.
//!
//! WebRTC peers (a browser, a native peer) gather addresses on every network interface; on a
//! machine whose traffic must stay local, run them in network namespaces (see
//! `docs/browser.md`).

#[cfg(target_arch = "wasm32")]
mod cues;
#[cfg(target_arch = "wasm32")]
mod draw;
#[cfg(target_arch = "wasm32")]
mod page;
#[cfg(target_arch = "wasm32")]
mod params;
#[cfg(target_arch = "wasm32")]
mod play;
#[cfg(target_arch = "wasm32")]
mod replay_view;
#[cfg(not(target_arch = "wasm32"))]
mod serve;

/// Builds the page and serves it (see the module documentation).
#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    serve::main()
}

/// The page starts from JavaScript (`web/app.js` calls `start`), not from `main`.
#[cfg(target_arch = "wasm32")]
fn main() {}
