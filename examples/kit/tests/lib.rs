//! The kit's integration tests (one binary, feature `cli`): the `rollback-abilities`
//! command-line tool run as a process (`CARGO_BIN_EXE_…` names a binary of this package only).

use std::path::Path;

mod cli;
mod cli_args;
// The root package's shared test helpers (the scratch directory).
#[path = "../../../tests/common.rs"]
mod common;
mod plot;

/// The repository's root, where `examples/`, `docs/` and the shipped scenarios are.
fn root() -> &'static Path {
    let kit = Path::new(env!("CARGO_MANIFEST_DIR"));
    kit.parent().and_then(Path::parent).expect("examples/kit lies two levels below the root")
}
