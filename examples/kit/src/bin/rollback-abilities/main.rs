//! `rollback-abilities`: the crate's command-line tool (feature `cli`).
//!
//! Run scenarios, check content, verify and inspect replays, diff desync dumps and measure the
//! simulation. `rollback-abilities --help` and `rollback-abilities <command> --help` explain
//! every command with examples.

mod bench;
mod fuzz;
mod replays;
mod scenarios;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Rollback-netcode gameplay abilities: scenario runner, content checker, replay and desync
/// tools.
///
/// Exit status: 0 when everything passed; 1 when a check failed (an expectation, a mode
/// disagreement, a replay divergence, differing dumps, or the error `content check` reports);
/// 2 for an input error, when the command could not run: a bad argument, a missing or
/// unreadable file, a file that is not what the command takes (not a replay, a damaged or
/// truncated replay, an invalid scenario, invalid `--content`), a replay that does not fit.
#[derive(Debug, Parser)]
#[command(name = "rollback-abilities", version, about, long_about, max_term_width = 100)]
#[command(after_help = "Examples:
  rollback-abilities scenario run examples/scenarios/*.ron
  rollback-abilities content check examples/content/duel.ron
  cargo run --release --example duel -- --replay duel.replay
  rollback-abilities replay verify duel.replay
  rollback-abilities inspect duel.replay --frame 600 --entity 1
  rollback-abilities replay plot duel.replay --out health.svg --attribute Health --cue KO")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run scenario files: expectations, and agreement of plain stepping, rollback, replay and
    /// two peers on a lossy emulated network.
    #[command(subcommand)]
    Scenario(ScenarioCmd),
    /// Check content files for errors and print what they define.
    #[command(subcommand)]
    Content(ContentCmd),
    /// Verify, summarise, seek, bisect and plot replay files.
    #[command(subcommand)]
    Replay(ReplayCmd),
    /// Show the inspector view (attributes, tags, effects, abilities with their last
    /// activation failure and tasks) of entities at a frame of a replay.
    ///
    /// The view is the same for every entity: nothing is local-only in a rollback world.
    #[command(after_help = "Examples:
  rollback-abilities inspect duel.replay --frame 600
  rollback-abilities inspect duel.replay --frame 600 --entity 1 --json
  rollback-abilities inspect stun.replay --scenario examples/scenarios/as16_stun.ron --frame 150 --entity b")]
    Inspect {
        /// The replay file.
        replay: PathBuf,
        /// The frame whose resulting state to show (the state after stepping it), 0 to the
        /// replay's last frame (`replay inspect` shows the frame count).
        #[arg(long, default_value_t = 0)]
        frame: u32,
        /// The entities to show: an entity index, or a scenario entity name (default: all
        /// live entities). Repeat for several.
        #[arg(long = "entity", value_name = "ENTITY")]
        entities: Vec<String>,
        #[command(flatten)]
        from: replays::ReplayGame,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Compare desync dumps.
    #[command(subcommand)]
    Desync(DesyncCmd),
    /// Measure the reference arena: snapshot save/load against memcpy, checksums, stepping
    /// and an 8-frame rollback (see docs/performance.md; `cargo bench` is the precise tool).
    Bench(bench::BenchArgs),
    /// Fuzz the duel's determinism: random inputs, rollbacks, network conditions and
    /// departures, run straight, rolled back, as a replay and as emulated peers; findings are
    /// printed with the commands that replay them.
    Fuzz(fuzz::FuzzArgs),
}

#[derive(Debug, Subcommand)]
enum ScenarioCmd {
    /// Run scenario files. Every expectation is reported with expected and actual values.
    #[command(after_help = "Examples:
  rollback-abilities scenario run examples/scenarios/*.ron
  rollback-abilities scenario run my.ron --mode plain --trace my.jsonl
  rollback-abilities scenario run my.ron --replay-dir replays/

The format is specified in docs/scenarios.md.")]
    Run {
        /// Scenario files (RON).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Run only these modes (plain always runs): plain, rollback, replay, peers.
        #[arg(long = "mode", value_name = "MODE")]
        modes: Vec<String>,
        /// Write a per-frame trace of plain stepping (JSON lines: checksum, inputs, every
        /// entity's inspector view, cues, activations). With several files, one trace per
        /// file is written next to it as `<FILE>.<scenario>.jsonl`.
        #[arg(long, value_name = "OUT.jsonl")]
        trace: Option<PathBuf>,
        /// Write each scenario's replay into this directory (`<name>.replay`).
        #[arg(long, value_name = "DIR")]
        replay_dir: Option<PathBuf>,
        /// Print only failures and the summary.
        #[arg(long, short)]
        quiet: bool,
        /// The registered functions (executions, calculations, behaviours…) the content gets:
        /// `auto` gives the duel's to the duel's own content (examples/content/duel.ron) and
        /// none to any other, whose named functions are then reported missing; `duel` gives
        /// the duel's to any content; `none` gives none. A game runs its own content with its
        /// own functions through its own scenario command (examples/my_scenarios.rs).
        #[arg(long, value_enum, default_value = "auto")]
        game: scenarios::GameChoice,
    },
}

#[derive(Debug, Subcommand)]
enum ContentCmd {
    /// Load content (a file or every `.ron` file of a directory) and report the first error
    /// with its file, line, column and path, or a summary of what it defines.
    #[command(after_help = "Examples:
  rollback-abilities content check examples/content/duel.ron
  rollback-abilities content check my_game/content/")]
    Check {
        /// A content file or directory.
        path: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum ReplayCmd {
    /// Re-simulate a replay headless and compare every recorded checksum; on divergence,
    /// name the first bad frame and diff the state field by field.
    Verify {
        /// The replay file.
        replay: PathBuf,
        #[command(flatten)]
        from: replays::ReplayGame,
    },
    /// Print a replay's header: version, content hash, seed, players, frames, keyframes.
    Inspect {
        /// The replay file.
        replay: PathBuf,
    },
    /// Move to a frame (using the nearest keyframe) and print every entity's attributes.
    Seek {
        /// The replay file.
        replay: PathBuf,
        /// The frame whose resulting state to show, 0 to the replay's last frame (`replay
        /// inspect` shows the frame count).
        #[arg(long)]
        frame: u32,
        #[command(flatten)]
        from: replays::ReplayGame,
    },
    /// Find the first keyframe whose re-simulated state differs from the recorded one (for
    /// replays without per-frame checksums).
    Bisect {
        /// The replay file.
        replay: PathBuf,
        #[command(flatten)]
        from: replays::ReplayGame,
    },
    /// Plot attributes over frames as an SVG chart, with a timeline of cues.
    ///
    /// Attributes of similar scale share a panel (a 0–1 fraction is not drawn flat beside
    /// 150-point health): the panels are stacked over one frame axis, each with its own y axis
    /// and its legend beside it. Under them, the cue timeline has one row per cue kind, named
    /// by the tag's last segment (`Stun` for `GameplayCue.Stun`): a tick per burst, a bar while
    /// a persistent cue is active, one sub-row per entity. Each series is one line holding only
    /// the frames where its value changes, so a 3,600-frame duel is a chart of well under a
    /// megabyte. See docs/replays.md.
    #[command(after_help = "Examples:
  rollback-abilities replay plot duel.replay --out duel.svg
  rollback-abilities replay plot duel.replay --out health.svg --attribute Health --cue Stun --cue KO
  rollback-abilities replay plot duel.replay --out hits.svg --entity 1 --cue GameplayCue.Hit
  rollback-abilities replay plot duel.replay --out mana.svg --attribute Mana --no-cues")]
    Plot {
        /// The replay file.
        replay: PathBuf,
        /// The SVG file to write.
        #[arg(long, value_name = "FILE.svg")]
        out: PathBuf,
        /// Plot this attribute; repeat for several (default: every attribute that changes
        /// during the replay; the constant ones are named under the title). An unknown name is
        /// an error that lists the attributes.
        #[arg(long = "attribute", value_name = "NAME")]
        attributes: Vec<String>,
        /// Plot this entity (an index or a scenario name); repeat for several (default: the
        /// entities with a player, or every entity when no player has one).
        #[arg(long = "entity", value_name = "ENTITY")]
        entities: Vec<String>,
        /// Show only cues whose tag is PREFIX or under it (`GameplayCue.Hit` takes in
        /// `GameplayCue.Hit.Light`; the `GameplayCue.` may be left out: `--cue Stun`); repeat
        /// for several (default: every cue on the plotted entities).
        #[arg(long = "cue", value_name = "PREFIX", conflicts_with = "no_cues")]
        cues: Vec<String>,
        /// Leave the cue timeline out.
        #[arg(long)]
        no_cues: bool,
        #[command(flatten)]
        from: replays::ReplayGame,
    },
}

#[derive(Debug, Subcommand)]
enum DesyncCmd {
    /// Diff two state dumps (`desync-<frame>.dump` files written by peers, or any two
    /// dumps of the same content) field by field.
    #[command(after_help = "Example:
  rollback-abilities desync diff peer0/desync-120.dump peer1/desync-120.dump --content examples/content/duel.ron")]
    Diff {
        /// The first dump.
        a: PathBuf,
        /// The second dump.
        b: PathBuf,
        /// The content both dumps come from (names attributes and tags in the diff).
        #[arg(long, value_name = "PATH")]
        content: Option<PathBuf>,
    },
}

/// A command's failure: exit status 1 (a check failed) or 2 (an input error: could not run).
pub enum Failure {
    /// A check failed; the message was already printed or is printed now.
    Check(String),
    /// The command could not run: a bad argument or an unusable input file.
    Usage(String),
}

impl From<String> for Failure {
    fn from(s: String) -> Self {
        Failure::Usage(s)
    }
}

/// `rollback-abilities inspect r.replay | head` must end quietly when `head` closes the pipe:
/// `println!` panics on a closed stdout, and this turns exactly that panic into a clean exit
/// (status 0, as with any Unix tool whose reader stopped reading). Other panics report as usual.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Scenario(ScenarioCmd::Run { files, modes, trace, replay_dir, quiet, game }) => {
            scenarios::run(&files, &modes, trace.as_deref(), replay_dir.as_deref(), quiet, game)
        }
        Command::Content(ContentCmd::Check { path }) => scenarios::check_content(&path),
        Command::Replay(ReplayCmd::Verify { replay, from }) => replays::verify(&replay, &from),
        Command::Replay(ReplayCmd::Inspect { replay }) => replays::header(&replay),
        Command::Replay(ReplayCmd::Seek { replay, frame, from }) => {
            replays::seek(&replay, frame, &from)
        }
        Command::Replay(ReplayCmd::Bisect { replay, from }) => replays::bisect(&replay, &from),
        Command::Replay(ReplayCmd::Plot {
            replay,
            out,
            attributes,
            entities,
            cues,
            no_cues,
            from,
        }) => {
            let filter = replays::PlotFilter {
                attributes: &attributes,
                entities: &entities,
                cues: &cues,
                no_cues,
            };
            replays::plot(&replay, &out, &filter, &from)
        }
        Command::Inspect { replay, frame, entities, from, json } => {
            replays::inspect(&replay, frame, &entities, &from, json)
        }
        Command::Desync(DesyncCmd::Diff { a, b, content }) => {
            replays::desync_diff(&a, &b, content.as_deref())
        }
        Command::Bench(args) => bench::run(&args),
        Command::Fuzz(args) => fuzz::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Check(msg)) => {
            if !msg.is_empty() {
                eprintln!("{msg}");
            }
            ExitCode::from(1)
        }
        Err(Failure::Usage(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}
