//! `rollback-abilities replay plot` (feature `cli`), run as a process on recorded duel and
//! scenario replays: filters, the panels and cue timeline, the size of the SVG, and labels that
//! neither overlap nor hide data.

use crate::common::TempDir;
use rollback_abilities_kit::duel::{DuelMatch, MatchOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rollback-abilities"))
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Plays a two-fighter duel of `frames` frames (seed 1, the example's defaults) and writes
/// its replay into `dir`.
fn duel_replay(dir: &Path, frames: u32) -> PathBuf {
    let options = MatchOptions { frames, seed: 1, ..MatchOptions::default() };
    let outcome =
        DuelMatch::new(options).and_then(DuelMatch::run).unwrap_or_else(|e| panic!("{e}"));
    let path = dir.join("duel.replay");
    outcome.replay.write(&path).unwrap();
    path
}

/// Runs `replay plot REPLAY --out OUT ARGS…`, expects success, and returns stdout and the SVG.
fn plot(replay: &Path, out: &Path, args: &[&str]) -> (String, String) {
    let (code, stdout, err) =
        run(bin().args(["replay", "plot"]).arg(replay).arg("--out").arg(out).args(args));
    assert_eq!(code, 0, "{stdout}{err}");
    let svg = std::fs::read_to_string(out).unwrap();
    assert!(svg.starts_with("<svg"), "{svg:.200}");
    (stdout, svg)
}

/// The number of series the command reported (`wrote … (N series in …`).
fn reported_series(stdout: &str) -> usize {
    let at = stdout.find(" series in ").unwrap_or_else(|| panic!("{stdout}"));
    let n = stdout[..at].rsplit('(').next().unwrap();
    n.trim().parse().unwrap_or_else(|_| panic!("{stdout}"))
}

/// A `<text>` element: its text and its approximate box, in pixels.
#[derive(Debug)]
struct Label {
    text: String,
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(tag[at..].split('"').next()?.to_string())
}

/// Every text of the SVG with the box a sans-serif font gives it (an estimate: 0.55 of the
/// font size per character, the font size high), placed by its anchors as SVG places it.
fn labels(svg: &str) -> Vec<Label> {
    let mut out = Vec::new();
    for chunk in svg.split("<text").skip(1) {
        let (tag, rest) = chunk.split_once('>').unwrap();
        let text = rest.split("</text>").next().unwrap().trim().to_string();
        let num = |n: &str| attr(tag, n).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        let (x, y, size) = (num("x"), num("y"), num("font-size"));
        let width = text.chars().count() as f64 * size * 0.55;
        let (x0, x1) = match attr(tag, "text-anchor").as_deref() {
            Some("end") => (x - width, x),
            Some("middle") => (x - width / 2.0, x + width / 2.0),
            _ => (x, x + width),
        };
        let (y0, y1) = match attr(tag, "dy").as_deref() {
            Some("0.76em") => (y, y + size),
            Some("-0.5ex") => (y - size, y),
            _ => (y - size / 2.0, y + size / 2.0),
        };
        assert!(!tag.contains("rotate"), "a rotated label: {tag}");
        out.push(Label { text, x0, x1, y0, y1 });
    }
    out
}

/// No two labels overlap (boxes shrunk by a pixel, so that touching is fine).
fn assert_no_overlap(svg: &str) {
    let all = labels(svg);
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            let apart = a.x1 - 1.0 <= b.x0
                || b.x1 - 1.0 <= a.x0
                || a.y1 - 1.0 <= b.y0
                || b.y1 - 1.0 <= a.y0;
            assert!(apart, "labels overlap: {a:?} and {b:?}");
        }
    }
}

/// The chart's width and where its legend column starts (the plot module's layout: 1280
/// pixels, a 210-pixel legend column).
const WIDTH: f64 = 1280.0;
const LEGEND_X: f64 = WIDTH - 210.0;

#[test]
fn a_long_duel_plots_small_with_one_line_per_series() {
    let dir = TempDir::new("plot_long");
    let replay = duel_replay(&dir, 3600);
    let out = dir.join("duel.svg");
    let (stdout, svg) = plot(&replay, &out, &[]);
    let series = reported_series(&stdout);
    assert!(series >= 4, "{stdout}");

    // The report on the issue: 3.2 MB and 30,890 polylines (one per dash of 506 markers).
    // Now a few hundred KB at most (74 KiB when this test was written).
    let bytes = svg.len();
    assert!(bytes < 300_000, "{bytes} bytes: {stdout}");
    assert!(stdout.contains(&format!("{} KiB", bytes.div_ceil(1024))), "{stdout}");

    // One polyline per series (width 2); the rest are the axes' tick marks.
    let lines: Vec<&str> = svg.split("<polyline").skip(1).collect();
    let data: Vec<&&str> = lines.iter().filter(|l| l.contains("stroke-width=\"2\"")).collect();
    assert_eq!(data.len(), series, "{stdout}");
    assert!(lines.len() < series + 100, "{} polylines for {series} series", lines.len());
    // Runs of equal values keep only their ends: far fewer points than frames.
    for l in &data {
        let points = attr(l, "points").unwrap().split_whitespace().count();
        assert!((2..1500).contains(&points), "{points} points in one series");
    }
    // ImageMagick fills a polyline that carries `opacity`: the chart writes `stroke-opacity`.
    assert!(!svg.contains("fill=\"none\" opacity="), "a polyline ImageMagick would fill");

    // Cue kinds are rows named by their tag's last segment, not a label per marker.
    let texts = labels(&svg);
    let lane = |name: &str| texts.iter().filter(|l| l.text == name).count();
    for kind in ["KO", "Stun", "Shield", "Heavy", "Light"] {
        assert_eq!(
            lane(kind),
            1,
            "{kind}: {:?}",
            texts.iter().map(|l| &l.text).collect::<Vec<_>>()
        );
    }
    assert!(!svg.contains("GameplayCue."), "full tag names on the chart");
    assert!(texts.len() < 150, "{} labels", texts.len());

    // Health (~150) and MoveSpeed (~2.5) get panels of their own: two y axes.
    assert!(stdout.contains("in 2 panels") || stdout.contains("in 3 panels"), "{stdout}");
    // Constant attributes are named, not drawn.
    assert!(svg.contains("constant, not drawn: ") && svg.contains("MaxHealth 150"), "no note");
    assert!(!svg.contains("fighter 0 MaxHealth"));

    // Legend labels sit in the legend column; cue names in the left margin.
    for l in texts.iter().filter(|l| l.text.starts_with("fighter ")) {
        assert!(l.x0 >= LEGEND_X, "{l:?} is left of the legend column");
    }
    for l in texts.iter().filter(|l| ["KO", "Stun", "Shield"].contains(&l.text.as_str())) {
        assert!(l.x1 <= 120.0, "{l:?} is not in the left margin");
    }
    assert_no_overlap(&svg);
}

#[test]
fn plot_filters_choose_attributes_entities_and_cues() {
    let dir = TempDir::new("plot_filters");
    let replay = duel_replay(&dir, 900);

    let out = dir.join("health.svg");
    let (stdout, svg) =
        plot(&replay, &out, &["--attribute", "Health", "--entity", "1", "--cue", "Lifesteal"]);
    assert_eq!(reported_series(&stdout), 1, "{stdout}");
    assert!(svg.contains("fighter 1 Health"), "{stdout}");
    for absent in ["fighter 0", "Mana", "Stamina", "MoveSpeed", ">\nKO\n<", ">\nStun\n<"] {
        assert!(!svg.contains(absent), "{absent} is on a filtered chart");
    }
    assert!(svg.contains(">\nLifesteal\n<"), "no Lifesteal row");
    assert_no_overlap(&svg);

    // A prefix takes in the tags under it (GameplayCue.Hit.Light, .Heavy, …) and nothing else;
    // several attributes of different scales get several panels.
    let out = dir.join("hits.svg");
    let (stdout, svg) = plot(
        &replay,
        &out,
        &["--cue", "GameplayCue.Hit", "--attribute", "Health", "--attribute", "CritChance"],
    );
    assert_eq!(reported_series(&stdout), 4, "{stdout}");
    assert!(stdout.contains("in 2 panels"), "{stdout}");
    assert!(svg.contains(">\nHeavy\n<") && svg.contains(">\nLight\n<"), "no hit rows");
    for absent in [">\nStun\n<", ">\nKO\n<", ">\nLifesteal\n<", "Mana"] {
        assert!(!svg.contains(absent), "{absent} is on a filtered chart");
    }
    assert_no_overlap(&svg);

    // --no-cues leaves the timeline out.
    let out = dir.join("quiet.svg");
    let (stdout, svg) = plot(&replay, &out, &["--attribute", "Mana", "--no-cues"]);
    assert!(stdout.contains(" 0 cues"), "{stdout}");
    assert!(!svg.contains(">\nStun\n<") && svg.contains("fighter 0 Mana"), "{stdout}");
}

#[test]
fn plot_names_the_valid_choices_on_a_bad_filter() {
    let dir = TempDir::new("plot_errors");
    let replay = duel_replay(&dir, 120);
    let out = dir.join("x.svg");
    let with = |args: &[&str]| {
        run(bin().args(["replay", "plot"]).arg(&replay).arg("--out").arg(&out).args(args))
    };

    let (code, _, err) = with(&["--attribute", "Helth"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no attribute named \"Helth\""), "{err}");
    assert!(err.contains("the attributes are AttackPower, CritBonus, CritChance, Health"), "{err}");

    let (code, _, err) = with(&["--entity", "7"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("(live: 0, 1)"), "{err}");
    let (code, _, err) = with(&["--entity", "bob"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no entity named \"bob\"") && err.contains("fighter 0"), "{err}");

    let (code, _, err) = with(&["--cue", "GameplayCue.Hitt"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--cue GameplayCue.Hitt") && err.contains("GameplayCue.Stun"), "{err}");
    assert!(!out.exists(), "a chart was written despite the error");
}

#[test]
fn plot_of_a_scenario_replay_names_its_entities() {
    let dir = TempDir::new("plot_scenario");
    let scenario = crate::root().join("examples/scenarios/as16_stun.ron");
    let (code, out, err) = run(bin()
        .args(["scenario", "run", "--mode", "plain", "-q", "--replay-dir"])
        .arg(dir.path())
        .arg(&scenario));
    assert_eq!(code, 0, "{out}{err}");
    let replay = dir.join("as16_stun.replay");
    let svg_path = dir.join("stun.svg");
    let (stdout, svg) = plot(&replay, &svg_path, &["--scenario", scenario.to_str().unwrap()]);
    assert!(reported_series(&stdout) >= 1, "{stdout}");
    assert!(svg.contains("b MoveSpeed") && svg.contains(">\nStun\n<"), "{stdout}");
    assert_no_overlap(&svg);
}
