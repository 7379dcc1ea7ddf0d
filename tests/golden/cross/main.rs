//! Runs the golden-checksum comparison of `tests/golden/mod.rs` as a program (exit 0: every
//! checksum matches): `cargo run --release` here, or built for wasm32-wasip1 and run under a
//! WASI runtime by `.ci/run`.

#[path = "../mod.rs"]
mod golden;

fn main() {
    let lines = golden::compute();
    if std::env::args().any(|a| a == "--print") {
        print!("{}", golden::render(&lines));
        return;
    }
    match golden::compare(golden::GOLDEN, &lines) {
        Ok(n) => println!(
            "golden: {n} checksums match on {} ({}, {}-bit)",
            std::env::consts::ARCH,
            if cfg!(debug_assertions) { "debug" } else { "release" },
            usize::BITS
        ),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
