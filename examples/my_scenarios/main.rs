//! A template for a game's own scenario command: copy this file into your game (for example as
//! `src/bin/scenarios.rs`), replace `MyGame` with your `Game` type and `hooks` with your own
//! registered functions, and run your scenario files with them:
//!
//! ```text
//! cargo run --example my_scenarios -- examples/my_scenarios/
//! cargo run --example my_scenarios -- --mode plain --quiet examples/my_scenarios/fireball.ron
//! ```
//!
//! The command is the library's scenario runner ([`scenario::cli_main`]): every mode (plain,
//! rollback, replay, peers, synctest), a report per file, exit status 0 when everything passed,
//! 1 when an expectation failed, 2 on bad input. Content naming a function `hooks` does not
//! register is refused before anything runs, with every missing function listed at its place.
//! The `rollback-abilities` tool cannot run your content: it registers only the duel's
//! functions, for the duel's own content.
//!
//! Keep `hooks` in your library (next to the game) if your tests use it too: a test then runs
//! the same files with `scenario::run_dir(dir, &hooks()).assert_passed()`.

use rollback_abilities::scenario::{self, ScenarioHost, ScenarioInput};
use rollback_abilities::{AbilityInput, CalcInput, Capture, Fx, Game, Hooks};
use std::process::ExitCode;

/// The game: here one `u32` of held ability inputs per player and no data of its own.
pub struct MyGame;

impl Game for MyGame {
    type Input = u32;
    type Component = ();
    type Global = ();

    fn ability_input(held: &u32) -> AbilityInput {
        AbilityInput { held: *held, ..AbilityInput::default() }
    }
}

/// How a scenario's scripted buttons become the game's input.
impl ScenarioHost for MyGame {
    fn scenario_input(input: &ScenarioInput) -> u32 {
        input.held
    }
}

/// The `Fireball` calculation: twice the source's `SpellPower`, as damage.
fn fireball(input: &CalcInput<'_>) -> Fx {
    let power = input.captures.first().copied().unwrap_or_default();
    -(power + power)
}

/// Every function the game's content names.
pub fn hooks() -> Hooks<MyGame> {
    Hooks::new().calc("Fireball", &[Capture::source("SpellPower")], fireball)
}

fn main() -> ExitCode {
    scenario::cli_main(hooks())
}
