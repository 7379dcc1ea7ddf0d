//! The template of a game's own scenario command (`examples/my_scenarios/`): its hooks run its
//! scenario files, which the shipped tool refuses.

use rollback_abilities::Hooks;
use rollback_abilities::scenario::{self, Scenario, ScenarioGame};
use std::path::Path;

#[path = "../examples/my_scenarios/main.rs"]
#[allow(dead_code)] // its `main`
mod template;

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/my_scenarios")
}

#[test]
fn the_template_runs_its_games_scenarios_with_its_own_functions() {
    let report = scenario::run_dir(dir(), &template::hooks()).unwrap();
    assert!(report.assert_passed() >= 2);
    // Without the game's functions the same file is refused, naming the missing one.
    let s = Scenario::load(dir().join("fireball.ron")).unwrap();
    let e = scenario::run(&s, &Default::default()).unwrap_err();
    assert!(e.message.contains("calculation \"Fireball\""), "{e}");
    let e = scenario::run_with_hooks(&s, &Hooks::<ScenarioGame>::new(), &Default::default(), None)
        .unwrap_err();
    assert!(e.to_string().contains("fireball.ron:"), "{e}");
}
