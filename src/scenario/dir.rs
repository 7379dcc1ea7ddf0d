//! Running a game's scenario files from its own tests and command line: [`run_dir`],
//! [`run_files`], and [`check_hooks`], which lists every function the content names that the
//! hooks lack, each at its place in the content.

use super::run::{RunOptions, ScenarioReport, run_with_hooks};
use super::{ModeOutcome, Scenario, ScenarioError, ScenarioErrorKind, ScenarioHost};
use crate::content::error::Clip;
use crate::content::locate::{PathSeg, Position, path_at, render};
use crate::world::Hooks;
use core::fmt;
use std::path::{Path, PathBuf};

/// What became of one scenario file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileOutcome {
    /// It ran: the report says what held.
    Ran(ScenarioReport),
    /// It could not be loaded or run (a located error).
    Error(ScenarioError),
}

/// The outcome of every scenario file of a directory or list, in file-name order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirReport {
    /// Each file and what became of it.
    pub files: Vec<(PathBuf, FileOutcome)>,
}

impl DirReport {
    /// Every file loaded, every expectation held and every mode that ran agreed.
    pub fn passed(&self) -> bool {
        self.files.iter().all(|(_, o)| matches!(o, FileOutcome::Ran(r) if r.passed()))
    }

    /// One line per problem, each starting with `file:line:` (or `file:line:col:` for errors):
    /// every failed expectation with its expected and actual values, every mode that
    /// disagreed, every file that could not run.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (path, o) in &self.files {
            match o {
                FileOutcome::Error(e) => out.push(e.to_string()),
                FileOutcome::Ran(r) => {
                    for e in r.expectations.iter().filter(|e| !e.passed) {
                        let at = e.failed_at.map_or(String::new(), |f| format!(" at frame {f}"));
                        out.push(format!(
                            "{}:{}: {}: failed{at}: expected {}, got {}",
                            path.display(),
                            e.line,
                            e.what,
                            e.expected,
                            e.actual
                        ));
                    }
                    for m in &r.modes {
                        if let ModeOutcome::Disagrees(why) = &m.outcome {
                            out.push(format!(
                                "{}: mode {:?} disagrees: {why}",
                                path.display(),
                                m.mode
                            ));
                        }
                    }
                }
            }
        }
        out
    }

    /// Panics with every failure (for a `#[test]`), or returns how many expectations held.
    ///
    /// # Panics
    ///
    /// When [`DirReport::passed`] is false: the message lists [`DirReport::failures`].
    #[track_caller]
    pub fn assert_passed(&self) -> usize {
        assert!(self.passed(), "scenarios failed:\n{}", self.failures().join("\n"));
        self.files
            .iter()
            .map(|(_, o)| match o {
                FileOutcome::Ran(r) => r.expectations.len(),
                FileOutcome::Error(_) => 0,
            })
            .sum()
    }
}

impl fmt::Display for DirReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (_, o) in &self.files {
            match o {
                FileOutcome::Ran(r) => writeln!(f, "{r}\n")?,
                FileOutcome::Error(e) => writeln!(f, "ERROR {e}\n")?,
            }
        }
        let ran = self.files.iter().filter(|(_, o)| matches!(o, FileOutcome::Ran(_))).count();
        let passed = self
            .files
            .iter()
            .filter(|(_, o)| matches!(o, FileOutcome::Ran(r) if r.passed()))
            .count();
        write!(
            f,
            "{} scenario files: {passed} passed, {} failed, {} could not run",
            self.files.len(),
            ran - passed,
            self.files.len() - ran
        )
    }
}

/// Runs every `*.ron` scenario file of `dir` (sorted by name) with the game `G` and its
/// `hooks`, in every mode each file does not exclude. An unreadable or empty directory is an
/// [`ScenarioErrorKind::Io`] error; a file that cannot load or run is a
/// [`FileOutcome::Error`] in the report.
///
/// A game checks its ability data in its own `cargo test`:
///
/// ```
/// use rollback_abilities::scenario::{self, ScenarioGame};
/// use rollback_abilities::Hooks;
///
/// // The game's own `Game` (here the runner's plain one) and its registered functions.
/// let hooks = Hooks::<ScenarioGame>::new();
/// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenarios");
/// # let dir = std::env::temp_dir().join(format!("scenario-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// # std::fs::write(dir.join("tag.ron"), r#"(
/// #     content: Inline("(tags: [\"State.Stunned\"])"),
/// #     entities: { "hero": () },
/// #     script: [(frame: 1, do: AddTag(on: "hero", tag: "State.Stunned"))],
/// #     expect: [(frame: 1, that: Tag(on: "hero", tag: "State.Stunned", present: true))],
/// # )"#).unwrap();
/// let report = scenario::run_dir(&dir, &hooks)?;
/// // Panics listing every failed expectation as `file:line: … expected …, got …`.
/// report.assert_passed();
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), rollback_abilities::scenario::ScenarioError>(())
/// ```
pub fn run_dir<G: ScenarioHost>(
    dir: impl AsRef<Path>,
    hooks: &Hooks<G>,
) -> Result<DirReport, ScenarioError> {
    let dir = dir.as_ref();
    let io = |message: String| ScenarioError {
        kind: ScenarioErrorKind::Io,
        file: dir.display().to_string(),
        line: 0,
        col: 0,
        path: String::new(),
        message,
    };
    let entries = std::fs::read_dir(dir)
        .map_err(|e| io(format!("cannot read the scenario directory: {e}")))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ron") && p.is_file())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(io("the directory holds no *.ron scenario files".into()));
    }
    Ok(run_files(&files, hooks, &RunOptions::default()))
}

/// Runs scenario files with the game `G` and its `hooks`.
pub fn run_files<G: ScenarioHost>(
    files: &[PathBuf],
    hooks: &Hooks<G>,
    options: &RunOptions,
) -> DirReport {
    let mut report = DirReport::default();
    for f in files {
        let outcome = Scenario::load(f)
            .and_then(|s| run_with_hooks(&s, hooks, options, None))
            .map_or_else(FileOutcome::Error, FileOutcome::Ran);
        report.files.push((f.clone(), outcome));
    }
    report
}

/// Checks that `hooks` registers every function the scenario's content names. The error lists
/// every missing one at once, each as `file:line:col: definition path: the execution "…"` at
/// each place the content names it; the error itself points at the first.
pub fn check_hooks<G: crate::world::Game>(
    scenario: &Scenario,
    hooks: &Hooks<G>,
) -> Result<(), ScenarioError> {
    let missing: Vec<_> =
        scenario.content.functions().iter().filter(|f| !hooks.provides(&f.name, f.kind)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    // (file, line, col, path, what)
    let mut places: Vec<(String, u32, u32, String, String)> = Vec::new();
    for f in &missing {
        let mut what = format!("{} \"{}\"", f.kind.with_article(), Clip(&f.name));
        if let Some(s) = hooks.similar(&f.name, f.kind) {
            what.push_str(&format!(" (did you mean \"{s}\"?)"));
        }
        let needle = format!("\"{}\"", f.name);
        let before = places.len();
        for src in &scenario.sources {
            for (byte, _) in src.text.match_indices(&needle) {
                let head = &src.text[..byte];
                let line = head.matches('\n').count() as u32 + 1;
                let col = head.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u32 + 1;
                let segs = path_at(&src.text, Position { line, col });
                // The name as a map key (a set named like its hook) is not a use.
                if matches!(segs.last(), Some(PathSeg::Key(k)) if *k == f.name) {
                    continue;
                }
                let path = render(&segs);
                let (line, col) = match src.at {
                    Some((l0, c0)) => (l0 + line - 1, if line == 1 { c0 + col - 1 } else { col }),
                    None => (line, col),
                };
                places.push((src.file.clone(), line, col, path, what.clone()));
            }
        }
        if places.len() == before {
            places.push((scenario.file.clone(), 0, 0, "content".into(), what));
        }
    }
    places.sort_by(|a, b| (&a.0, a.1, a.2).cmp(&(&b.0, b.1, b.2)));
    let list: Vec<String> = places
        .iter()
        .map(|(file, line, col, path, what)| {
            let at = if *line > 0 { format!("{file}:{line}:{col}") } else { file.clone() };
            let path = if path.is_empty() { String::new() } else { format!(" {path}:") };
            format!("  {at}:{path} {what}")
        })
        .collect();
    let first = &places[0];
    Err(ScenarioError {
        kind: ScenarioErrorKind::World,
        file: first.0.clone(),
        line: first.1,
        col: first.2,
        path: first.3.clone(),
        message: format!(
            "the content names {} function{} the hooks do not register:\n{}\n(register them on \
             the `Hooks` given to `scenario::run_with_hooks`, `scenario::run_dir` or \
             `scenario::cli_main`)",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" },
            list.join("\n")
        ),
    })
}

/// A scenario command line for a game: `cli_main::<MyGame>(my_hooks())` in its `main` runs
/// `my-scenarios [--mode plain|rollback|replay|peers|synctest]... [--quiet] FILE_OR_DIR...`,
/// prints every report (only failures with `--quiet`) and returns exit status 0 when every
/// scenario passed, 1 when an expectation failed or a mode disagreed, 2 on bad input (a file
/// that cannot be read, parsed or run; an unknown flag).
///
/// ```no_run
/// use rollback_abilities::scenario::{self, ScenarioGame};
/// use rollback_abilities::Hooks;
///
/// fn main() -> std::process::ExitCode {
///     // Register the executions, calculations and behaviours your content names.
///     let hooks = Hooks::<ScenarioGame>::new();
///     scenario::cli_main(hooks)
/// }
/// ```
pub fn cli_main<G: ScenarioHost>(hooks: Hooks<G>) -> std::process::ExitCode {
    use std::process::ExitCode;
    let usage = "usage: [--mode plain|rollback|replay|peers|synctest]... [--quiet] FILE_OR_DIR...";
    let mut modes = Vec::new();
    let mut quiet = false;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quiet" | "-q" => quiet = true,
            "--mode" => {
                let m = args.next().unwrap_or_default();
                let mode = match m.to_ascii_lowercase().as_str() {
                    "plain" => super::Mode::Plain,
                    "rollback" => super::Mode::Rollback,
                    "replay" => super::Mode::Replay,
                    "peers" => super::Mode::Peers,
                    "synctest" => super::Mode::SyncTest,
                    _ => {
                        eprintln!("unknown mode \"{m}\"\n{usage}");
                        return ExitCode::from(2);
                    }
                };
                modes.push(mode);
            }
            "--help" | "-h" => {
                println!("{usage}");
                return ExitCode::SUCCESS;
            }
            f if f.starts_with('-') => {
                eprintln!("unknown flag {f}\n{usage}");
                return ExitCode::from(2);
            }
            f => {
                let p = PathBuf::from(f);
                if p.is_dir() {
                    let mut inside: Vec<PathBuf> = std::fs::read_dir(&p)
                        .into_iter()
                        .flatten()
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
                        .collect();
                    inside.sort();
                    files.extend(inside);
                } else {
                    files.push(p);
                }
            }
        }
    }
    if files.is_empty() {
        eprintln!("no scenario files\n{usage}");
        return ExitCode::from(2);
    }
    let options =
        RunOptions { modes: (!modes.is_empty()).then_some(modes), ..RunOptions::default() };
    let report = run_files(&files, &hooks, &options);
    for (_, o) in &report.files {
        match o {
            FileOutcome::Ran(r) if quiet && r.passed() => {}
            FileOutcome::Ran(r) => println!("{r}\n"),
            FileOutcome::Error(e) => eprintln!("ERROR {e}\n"),
        }
    }
    let errors = report.files.iter().filter(|(_, o)| matches!(o, FileOutcome::Error(_))).count();
    let ran = report.files.len() - errors;
    let passed =
        report.files.iter().filter(|(_, o)| matches!(o, FileOutcome::Ran(r) if r.passed())).count();
    println!(
        "{} scenario files: {passed} passed, {} failed, {errors} could not run",
        report.files.len(),
        ran - passed
    );
    if errors > 0 {
        ExitCode::from(2)
    } else if passed < ran {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
