//! `scenario run` and `content check`.

use crate::Failure;
use indicatif::{ProgressBar, ProgressStyle};
use rollback_abilities::Hooks;
use rollback_abilities::scenario::{
    self, FrameTrace, Mode, RunOptions, Scenario, ScenarioGame, ScenarioHost, ScenarioReport,
};
use rollback_abilities::{Content, ContentBuilder, ContentError, ContentErrorKind};
use rollback_abilities_kit::duel::{self, Duel};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

fn parse_mode(s: &str) -> Result<Mode, Failure> {
    match s.to_ascii_lowercase().as_str() {
        "plain" => Ok(Mode::Plain),
        "rollback" => Ok(Mode::Rollback),
        "replay" => Ok(Mode::Replay),
        "peers" => Ok(Mode::Peers),
        "synctest" => Ok(Mode::SyncTest),
        _ => Err(Failure::Usage(format!(
            "unknown mode \"{s}\": the modes are plain, rollback, replay, peers and synctest"
        ))),
    }
}

/// Where the trace of `scenario_file` goes when several files run.
fn trace_path(trace: &Path, scenario_file: &Path, several: bool) -> PathBuf {
    if !several {
        return trace.to_path_buf();
    }
    let stem =
        trace.file_stem().map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
    let name = scenario_file
        .file_stem()
        .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
    trace.with_file_name(format!("{stem}.{name}.jsonl"))
}

/// Which registered functions `scenario run` gives a scenario's content (`--game`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GameChoice {
    /// The duel's functions (`examples/kit/src/duel/hooks.rs`) for the duel's own content
    /// (`examples/content/duel.ron`, recognised by its content hash) and for content that adds
    /// to it (it defines every ability and effect the duel does, as a scenario loading
    /// `Files(["duel.ron", "more.ron"])`); none for any other: content naming functions is
    /// then refused with the list of missing ones.
    Auto,
    /// The duel's functions, whatever the content.
    Duel,
    /// No functions: the plain scenario game.
    None,
}

/// Whether a scenario runs as the duel: its content is the duel's (or `--game duel` asks for
/// the duel's functions). Any other content runs on the plain [`ScenarioGame`] with no
/// functions, so content naming its own functions gets the runner's typed error listing them
/// rather than the duel's functions of the same names.
fn is_duel(scenario: &Scenario, game: GameChoice) -> bool {
    match game {
        GameChoice::Auto => {
            let duel = duel::content();
            scenario.content.hash() == duel.hash() || extends(&scenario.content, &duel)
        }
        GameChoice::Duel => true,
        GameChoice::None => false,
    }
}

/// Whether `content` is the duel's with definitions added: it defines every ability and effect
/// the duel does.
fn extends(content: &Content, duel: &Content) -> bool {
    duel.ability_defs().iter().all(|a| content.ability(&a.name).is_ok())
        && duel.effect_defs().iter().all(|e| content.effect(&e.name).is_ok())
}

fn write_trace(
    scenario: &Scenario,
    game: GameChoice,
    options: &RunOptions,
    path: &Path,
) -> Result<ScenarioReport, Failure> {
    if is_duel(scenario, game) {
        write_trace_with(scenario, &duel::hooks(), options, path)
    } else {
        write_trace_with(scenario, &Hooks::<ScenarioGame>::new(), options, path)
    }
}

fn write_trace_with<G: ScenarioHost>(
    scenario: &Scenario,
    hooks: &Hooks<G>,
    options: &RunOptions,
    path: &Path,
) -> Result<ScenarioReport, Failure> {
    let file = std::fs::File::create(path).map_err(|e| {
        Failure::Usage(format!("cannot create the trace file {}: {e}", path.display()))
    })?;
    let mut out = BufWriter::new(file);
    let mut error = None;
    let mut sink = |t: FrameTrace| {
        if error.is_some() {
            return;
        }
        let r = serde_json::to_writer(&mut out, &t)
            .map_err(|e| e.to_string())
            .and_then(|()| out.write_all(b"\n").map_err(|e| e.to_string()));
        if let Err(e) = r {
            error = Some(e);
        }
    };
    let report = scenario::run_with_hooks(scenario, hooks, options, Some(&mut sink))
        .map_err(|e| Failure::Usage(e.to_string()));
    let written = match (report, error) {
        (Ok(r), None) => out.flush().map(|()| r).map_err(|e| {
            Failure::Usage(format!("cannot write the trace file {}: {e}", path.display()))
        }),
        (Ok(_), Some(e)) => {
            Err(Failure::Usage(format!("cannot write the trace file {}: {e}", path.display())))
        }
        (Err(e), _) => Err(e),
    };
    if written.is_err() {
        // Nothing is left behind on failure: no partial trace.
        drop(out);
        let _ = std::fs::remove_file(path);
    }
    written
}

/// `scenario run`.
pub fn run(
    files: &[PathBuf],
    modes: &[String],
    trace: Option<&Path>,
    replay_dir: Option<&Path>,
    quiet: bool,
    game: GameChoice,
) -> Result<(), Failure> {
    let modes: Vec<Mode> = modes.iter().map(|m| parse_mode(m)).collect::<Result<_, _>>()?;
    let options =
        RunOptions { modes: (!modes.is_empty()).then_some(modes), ..RunOptions::default() };
    let bar = if files.len() > 1 {
        let b = ProgressBar::new(files.len() as u64);
        b.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} scenarios  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    // `invalid`: files that could not be read, are not valid scenarios, or could not run (exit
    // status 2, as every input error); `failed`: scenarios whose checks failed (status 1).
    let (mut passed, mut failed, mut invalid, mut expectations) = (0, 0, 0, 0);
    for file in files {
        bar.set_message(file.display().to_string());
        let scenario = match Scenario::load(file) {
            Ok(s) => s,
            Err(e) => {
                bar.suspend(|| eprintln!("ERROR {e}"));
                invalid += 1;
                bar.inc(1);
                continue;
            }
        };
        let report = match trace {
            Some(t) => {
                write_trace(&scenario, game, &options, &trace_path(t, file, files.len() > 1))
            }
            None if is_duel(&scenario, game) => {
                scenario::run_with_hooks::<Duel>(&scenario, &duel::hooks(), &options, None)
                    .map_err(|e| Failure::Usage(e.to_string()))
            }
            None => scenario::run(&scenario, &options).map_err(|e| Failure::Usage(e.to_string())),
        };
        let report = match report {
            Ok(r) => r,
            Err(Failure::Check(msg) | Failure::Usage(msg)) => {
                bar.suspend(|| eprintln!("ERROR {msg}"));
                invalid += 1;
                bar.inc(1);
                continue;
            }
        };
        if let Some(dir) = replay_dir {
            let name = file.file_stem().map_or_else(|| "scenario".into(), |s| s.to_string_lossy());
            let path = dir.join(format!("{name}.replay"));
            // The directory is created only once there is a replay to put in it (nothing is
            // written for bad input).
            let recorded = if is_duel(&scenario, game) {
                scenario::record(&scenario, &duel::hooks())
            } else {
                scenario::record(&scenario, &Hooks::<ScenarioGame>::new())
            };
            let written = recorded.map_err(|e| e.to_string()).and_then(|r| {
                std::fs::create_dir_all(dir).map_err(|e| {
                    format!("cannot create the replay directory {}: {e}", dir.display())
                })?;
                r.write(&path).map_err(|e| e.to_string())
            });
            if let Err(e) = written {
                bar.suspend(|| eprintln!("cannot write {}: {e}", path.display()));
            }
        }
        expectations += report.expectations.len();
        if report.passed() {
            passed += 1;
            if !quiet {
                bar.suspend(|| println!("{report}\n"));
            }
        } else {
            failed += 1;
            bar.suspend(|| println!("{report}\n"));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!(
        "{} scenario{}: {passed} passed, {failed} failed{} ({expectations} expectations checked)",
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        if invalid > 0 { format!(", {invalid} could not run") } else { String::new() }
    );
    if invalid > 0 {
        Err(Failure::Usage(format!(
            "{invalid} of the scenario files could not be read or run (the ERROR lines above say \
             why)"
        )))
    } else if failed > 0 {
        Err(Failure::Check(String::new()))
    } else {
        Ok(())
    }
}

/// Builds content from a file or a directory: the outer error when the file cannot be read,
/// the inner one when the content is invalid.
fn build_content(path: &Path) -> Result<Result<Content, ContentError>, Failure> {
    if path.is_dir() {
        return Ok(ContentBuilder::new().dir(path).and_then(ContentBuilder::build));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Usage(format!("cannot read {}: {e}", path.display())))?;
    Ok(ContentBuilder::new().file(path.display().to_string(), text).build())
}

/// Loads content a command works on (`--content`): invalid content is an input error, exit
/// status 2, as for every command but `content check`, whose check it is.
pub fn load_content(path: &Path) -> Result<Content, Failure> {
    build_content(path)?
        .map_err(|e| Failure::Usage(format!("{e}\n(`content check` checks the file on its own)")))
}

/// `content check`.
pub fn check_content(path: &Path) -> Result<(), Failure> {
    if !path.exists() {
        return Err(Failure::Usage(format!("{} does not exist", path.display())));
    }
    let c = build_content(path)?.map_err(|e| match e.kind {
        ContentErrorKind::Io => Failure::Usage(e.to_string()),
        _ => Failure::Check(format!("{e}\n(fix the file and run `content check` again)")),
    })?;
    let s = c.settings();
    println!("{}: ok (content hash {:016x})", path.display(), c.hash());
    println!("  tick rate          {} Hz", s.tick_rate.0);
    println!("  tags               {}", c.tags().names().len());
    println!("  attributes         {} in {} sets", c.attr_defs().len(), c.attr_set_defs().len());
    println!("  curves             {}", c.curve_defs().len());
    println!("  effects            {}", c.effect_defs().len());
    println!(
        "  abilities          {} ({} ability sets)",
        c.ability_defs().len(),
        c.ability_set_defs().len()
    );
    println!("  timelines          {}", c.timeline_defs().len());
    println!("  cue definitions    {}", c.cue_defs().len());
    let functions: Vec<String> =
        c.functions().iter().map(|f| format!("{} ({:?})", f.name, f.kind)).collect();
    if !functions.is_empty() {
        println!("  functions to register in Rust: {}", functions.join(", "));
    }
    Ok(())
}
