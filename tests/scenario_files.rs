//! The scenario runner: every shipped scenario passes in all four modes, failures are
//! reported with expected and actual values, and malformed files give located errors.

use rollback_abilities::scenario::{ModeOutcome, RunOptions, Scenario, run};
use std::path::Path;

fn shipped() -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenarios"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "ron"))
            .collect();
    files.sort();
    files
}

/// Every file in `examples/scenarios/` passes, and every mode agrees with plain stepping.
#[test]
fn shipped_scenarios_pass_in_every_mode() {
    let files = shipped();
    assert!(files.len() >= 7, "{files:?}");
    for f in files {
        let s = Scenario::load(&f).unwrap_or_else(|e| panic!("{e}"));
        let report = run(&s, &RunOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        eprintln!("{report}");
        assert!(report.passed(), "{report}");
        assert!(!report.expectations.is_empty());
        for m in &report.modes {
            assert!(matches!(m.outcome, ModeOutcome::Agrees | ModeOutcome::Skipped(_)), "{report}");
        }
    }
}
