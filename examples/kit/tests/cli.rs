//! The `rollback-abilities` command-line tool (feature `cli`), run as a process: exit codes,
//! reports, errors, replays, traces, plots and desync diffs.

use crate::common::TempDir;
use crate::root;
use rollback_abilities::debug::WorldDump;
use rollback_abilities::scenario::Scenario;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rollback-abilities"))
}

/// A fresh scratch directory for one test, removed when the test ends.
fn scratch(name: &str) -> TempDir {
    TempDir::new(&format!("cli_{name}"))
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn shipped() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("examples/scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ron"))
        .collect();
    v.sort();
    v
}

#[test]
fn scenario_run_passes_the_shipped_scenarios() {
    let files = shipped();
    let (code, out, err) =
        run(bin().args(["scenario", "run", "--mode", "plain", "-q"]).args(&files));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(&format!("{} scenarios: {} passed, 0 failed", files.len(), files.len())),
        "{out}"
    );
}

#[test]
fn scenario_run_reports_failures_and_errors() {
    let dir = scratch("failures");
    let failing = dir.join("failing.ron");
    std::fs::write(
        &failing,
        r###"(
    content: Inline(r#"( attribute_sets: { "V": (attributes: { "Health": (default: 100) }) } )"#),
    players: 1,
    entities: { "hero": (attribute_sets: ["V"]) },
    expect: [ (frame: 3, that: Attribute(on: "hero", attribute: "Health", current: 99)) ],
)"###,
    )
    .unwrap();
    let (code, out, _) = run(bin().args(["scenario", "run"]).arg(&failing));
    assert_eq!(code, 1);
    assert!(out.contains("FAIL line 5"), "{out}");
    assert!(out.contains("expected current 99, got current 100"), "{out}");
    assert!(out.contains("0 passed, 1 failed"), "{out}");

    let bad = dir.join("bad.ron");
    std::fs::write(&bad, "(content: Inline(\"()\"), players: 0)").unwrap();
    // An invalid scenario file is an input error: status 2, like a missing one.
    let (code, out, err) = run(bin().args(["scenario", "run"]).arg(&bad));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.ron:1:") && err.contains("players must be 1 to 8"), "{err}");
    assert!(out.contains("0 passed, 0 failed, 1 could not run"), "{out}");
    let (code, _, _) = run(bin().args(["scenario", "run"]).arg(&failing).arg(&bad));
    assert_eq!(code, 2, "an input error outranks a failed check");

    let (code, _, err) = run(bin().args(["scenario", "run", "/no/such/file.ron"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot read the scenario file"), "{err}");

    let (code, _, err) = run(bin().args(["scenario", "run", "--mode", "sideways"]).arg(&failing));
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "unknown mode \"sideways\": the modes are plain, rollback, replay, peers and synctest"
        ),
        "{err}"
    );

    // clap's own usage errors also exit 2 and teach.
    let (code, _, err) = run(bin().args(["scenario", "walk"]));
    assert_eq!(code, 2);
    assert!(err.contains("Usage"), "{err}");
}

#[test]
fn content_check_names_the_place() {
    let (code, out, _) =
        run(bin().args(["content", "check"]).arg(root().join("examples/content/quickstart.ron")));
    assert_eq!(code, 0);
    assert!(out.contains("ok (content hash"), "{out}");
    assert!(out.contains("functions to register in Rust"), "{out}");

    let dir = scratch("content");
    let bad = dir.join("bad.ron");
    std::fs::write(&bad, "(\n  effects: {\n    \"Hit\": (modifiers: [(attribute: \"Helth\", op: Add, magnitude: Scalable(coef: 1))]),\n  },\n)").unwrap();
    let (code, _, err) = run(bin().args(["content", "check"]).arg(&bad));
    assert_eq!(code, 1);
    assert!(err.contains("bad.ron:3:"), "{err}");
    assert!(err.contains("Helth"), "{err}");

    let (code, _, err) = run(bin().args(["content", "check", "/no/such/dir"]));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn replays_verify_inspect_seek_bisect_plot_and_trace() {
    let dir = scratch("replays");
    let scenario = root().join("examples/scenarios/as16_stun.ron");
    let trace = dir.join("stun.jsonl");
    let (code, out, err) = run(bin()
        .args(["scenario", "run", "--mode", "plain", "--replay-dir"])
        .arg(&dir)
        .arg("--trace")
        .arg(&trace)
        .arg(&scenario));
    assert_eq!(code, 0, "{out}{err}");
    let frames = Scenario::load(&scenario).unwrap().frames as usize;
    let lines = std::fs::read_to_string(&trace).unwrap();
    assert_eq!(lines.lines().count(), frames);
    assert!(lines.lines().nth(100).unwrap().contains("OnActive GameplayCue.Stun on b"));

    let replay = dir.join("as16_stun.replay");
    let (code, out, _) = run(bin().args(["replay", "inspect"]).arg(&replay));
    assert_eq!(code, 0);
    assert!(out.contains(&format!("frames             {frames}")), "{out}");

    // Without its scenario the replay cannot be played: a clear usage error.
    let (code, _, err) = run(bin().args(["replay", "verify"]).arg(&replay));
    assert_eq!(code, 2);
    assert!(err.contains("--scenario"), "{err}");

    let with = |args: &[&str]| {
        let mut c = bin();
        c.args(args).arg(&replay).arg("--scenario").arg(&scenario);
        c
    };
    let (code, out, err) = run(&mut with(&["replay", "verify"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("ok: {frames} frames re-simulated")), "{out}");

    let (code, out, _) = run(with(&["replay", "seek"]).args(["--frame", "150"]));
    assert_eq!(code, 0);
    assert!(out.contains("after frame 150") && out.contains("MoveSpeed 0"), "{out}");

    // 240 frames hold no keyframe (one every 300 frames): bisect says what to use instead.
    let (code, _, err) = run(&mut with(&["replay", "bisect"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no keyframes") && err.contains("replay verify"), "{err}");
    let poison = root().join("examples/scenarios/as13_stacking_poison.ron");
    let (code, out, err) = run(bin()
        .args(["scenario", "run", "--mode", "plain", "-q", "--replay-dir"])
        .arg(&dir)
        .arg(&poison));
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(bin()
        .args(["replay", "bisect"])
        .arg(dir.join("as13_stacking_poison.replay"))
        .arg("--scenario")
        .arg(&poison));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("all 2 keyframes re-simulate"), "{out}");

    // The inspector names the entity by index and generation (not `Entity(1v1)`, which read
    // as "1 versus 1"), says which frames of an effect are left, and names the blocking tag.
    let (code, out, _) = run(with(&["inspect"]).args(["--frame", "150", "--entity", "b"]));
    assert_eq!(code, 0);
    assert!(out.starts_with("b: entity 1 (generation 1) at frame 150\n"), "{out}");
    assert!(out.contains("Stun                 x1 lvl 1 70 of 120 frames left"), "{out}");
    assert!(
        out.contains(
            "can't activate: blocked by the owner's tag `State.Debuff.Stun`, listed in the \
             ability's activation_blocked_tags; last attempt at frame 150: failed for that reason"
        ),
        "{out}"
    );
    assert!(!out.contains("1v1") && !out.contains("70/120"), "{out}");
    let (code, out, _) =
        run(with(&["inspect"]).args(["--frame", "150", "--entity", "b", "--json"]));
    assert_eq!(code, 0);
    assert!(out.trim_start().starts_with('[') && out.contains("\"attributes\""), "{out}");
    let (code, _, err) = run(with(&["inspect"]).args(["--frame", "150", "--entity", "c"]));
    assert_eq!(code, 2);
    assert!(err.contains("no entity named \"c\""), "{err}");
    let (code, _, err) = run(with(&["inspect"]).args(["--frame", "99999"]));
    assert_eq!(code, 2);
    assert!(err.contains("past the replay's end"), "{err}");

    let svg = dir.join("stun.svg");
    let (code, out, err) = run(with(&["replay", "plot"]).arg("--out").arg(&svg));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(" cues, ") && out.contains(" series in "), "{out}");
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));

    // A damaged replay is a typed error, not a crash.
    let mut bytes = std::fs::read(&replay).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x55;
    let broken = dir.join("broken.replay");
    std::fs::write(&broken, &bytes).unwrap();
    let (code, _, err) =
        run(bin().args(["replay", "verify"]).arg(&broken).arg("--scenario").arg(&scenario));
    assert_eq!(code, 2, "a damaged replay is an input error: {err}");
    assert!(err.contains("broken.replay"), "{err}");
}

#[test]
fn desync_diff_lists_fields() {
    use rollback_abilities::prelude::*;
    struct G;
    impl Game for G {
        type Input = u8;
        type Component = ();
        type Global = ();
    }
    let dir = scratch("desync");
    let text = r#"(attribute_sets: { "V": (attributes: { "Health": (default: 100) }) })"#;
    let content_file = dir.join("content.ron");
    std::fs::write(&content_file, text).unwrap();
    let content = std::sync::Arc::new(Content::from_ron_str(text).unwrap());
    let make = || {
        let mut w =
            World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
        let e = w.spawn_actor(&[content.attr_set("V").unwrap()]).unwrap();
        (w, e)
    };
    let (mut a, ea) = make();
    let (b, _) = make();
    let (pa, pb) = (dir.join("a.dump"), dir.join("b.dump"));
    WorldDump::of_world(&b).write(&pb).unwrap();
    WorldDump::of_world(&a).write(&pa).unwrap();
    let (code, out, _) = run(bin().args(["desync", "diff"]).arg(&pa).arg(&pb));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("identical"), "{out}");

    a.set_base(ea, content.attr("Health").unwrap(), Fx::from_num(90));
    WorldDump::of_world(&a).write(&pa).unwrap();
    let (code, out, _) =
        run(bin().args(["desync", "diff"]).arg(&pa).arg(&pb).arg("--content").arg(&content_file));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Health"), "{out}");

    let (code, _, err) = run(bin().args(["desync", "diff"]).arg(&pa).arg(dir.join("missing.dump")));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn help_teaches() {
    let (code, out, _) = run(bin().arg("--help"));
    assert_eq!(code, 0);
    for word in
        ["scenario", "content", "replay", "inspect", "desync", "bench", "Examples:", "Exit status"]
    {
        assert!(out.contains(word), "{word}: {out}");
    }
    let (code, out, _) = run(bin().args(["scenario", "run", "--help"]));
    assert_eq!(code, 0);
    assert!(out.contains("docs/scenarios.md") && out.contains("--trace"), "{out}");
    // The help's own examples that need no other file work as printed (the content one used to
    // name the whole examples/content/ folder, three separate kits: "settings are given twice").
    let (_, help, _) = run(bin().arg("--help"));
    let examples: Vec<&str> = help
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("rollback-abilities content check"))
        .collect();
    assert!(!examples.is_empty(), "{help}");
    for line in examples {
        let args: Vec<&str> = line.split_whitespace().skip(1).collect();
        let (code, out, err) = run(bin().args(&args).current_dir(root()));
        assert_eq!(code, 0, "`{line}` from the help failed: {out}{err}");
    }
}

/// The summary line's fields for one size, parsed (`bench: entities=N snapshot_bytes=B …`).
fn bench_summaries(out: &str) -> Vec<std::collections::BTreeMap<String, f64>> {
    out.lines()
        .filter_map(|l| l.strip_prefix("bench: "))
        .map(|l| {
            l.split_whitespace()
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("{kv} in {l}"));
                    (k.to_string(), v.parse::<f64>().unwrap_or_else(|_| panic!("{kv} in {l}")))
                })
                .collect()
        })
        .collect()
}

/// `bench --quick` on the reference arena and on user content runs and ends each size with the
/// machine-readable summary: every field present and a number, the snapshot bytes exactly what
/// a save of that world copies, every time and ratio positive (no claim about their values:
/// timing is the benches' business, not a test's).
#[test]
fn bench_quick_prints_a_summary_per_size() {
    use rollback_abilities_kit::arena::{Arena, ArenaSpec};
    let fields = [
        "entities",
        "snapshot_bytes",
        "step_us",
        "rollback8_us",
        "save_ratio",
        "load_ratio",
        "checksum_ratio",
    ];
    let (code, out, err) = run(bin().args([
        "bench",
        "--quick",
        "--entities",
        "8",
        "--entities",
        "24",
        "--samples",
        "3",
    ]));
    assert_eq!(code, 0, "{out}{err}");
    let rows = bench_summaries(&out);
    assert_eq!(rows.len(), 2, "{out}");
    for (row, n) in rows.iter().zip([8u32, 24]) {
        assert_eq!(row.keys().map(String::as_str).collect::<Vec<_>>().len(), fields.len());
        for f in fields {
            let v = row.get(f).unwrap_or_else(|| panic!("{f} missing: {out}"));
            assert!(v.is_finite() && *v > 0.0, "{f}={v}: {out}");
        }
        assert_eq!(row["entities"], f64::from(n));
        let bytes = Arena::new(ArenaSpec { entities: n, ..ArenaSpec::default() })
            .world
            .live_snapshot_bytes();
        assert_eq!(row["snapshot_bytes"], bytes as f64, "{out}");
    }

    // User content (no registered functions: the tool registers none): every entity gets the
    // attribute set, the ability and the regeneration.
    let dir = scratch("bench");
    dir.write(
        "content.ron",
        r#"(
            tags: ["Ability.Strike", "Cooldown.Strike"],
            attribute_sets: { "Vitals": (attributes: {
                "Health": (default: 100, min: Const(0), max: Const(100)),
                "Stamina": (default: 50, min: Const(0)),
            }) },
            effects: {
                "Regen": (duration: Infinite, period: Frames(4),
                    modifiers: [(attribute: "Stamina", op: Add, magnitude: Scalable(coef: 1))]),
                "StrikeCost": (modifiers: [(attribute: "Stamina", op: Add,
                    magnitude: Scalable(coef: -5))]),
                "StrikeCooldown": (duration: Frames(6), granted_tags: ["Cooldown.Strike"]),
            },
            abilities: {
                "Strike": (tags: ["Ability.Strike"], cost: "StrikeCost",
                    cooldown: "StrikeCooldown", commit_on_activate: true, end_after: Frames(3),
                    input: 0),
            },
        )"#,
    );
    let (code, out, err) = run(bin()
        .args(["bench", "--quick", "--entities", "4", "--samples", "3", "--content"])
        .arg(dir.join("content.ron")));
    assert_eq!(code, 0, "{out}{err}");
    let rows = bench_summaries(&out);
    assert_eq!(rows.len(), 1, "{out}");
    assert_eq!(rows[0]["entities"], 4.0);
    assert!(
        fields.iter().all(|f| rows[0].get(*f).is_some_and(|v| v.is_finite() && *v > 0.0)),
        "{out}"
    );

    // A size out of range is a usage error that names the argument.
    let (code, _, err) = run(bin().args(["bench", "--quick", "--entities", "1"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--entities 1"), "{err}");
}

/// Every numeric flag with a bounded range shows the range in its help: a lint over the flag
/// definitions of the tool and the examples (each `value_parser!(…).range(A..=B)` has `A to B`
/// in its doc comment, which is the help text), and the tool's own help as printed.
#[test]
fn help_shows_flag_ranges() {
    let mut files = vec![root().join("examples/p2p_matchbox/args.rs")];
    for dir in ["examples", "examples/kit/src/bin/rollback-abilities"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.starts_with("#[arg(") {
                continue;
            }
            let attr: String =
                lines[i..].iter().take_while(|l| !l.starts_with("pub ")).copied().collect();
            let attr = attr.split(")]").next().unwrap_or_default().to_string();
            let Some(range) = attr.split(".range(").nth(1) else { continue };
            let range = range.replace('_', "");
            let doc: String = lines[..i]
                .iter()
                .rev()
                .take_while(|l| l.starts_with("///"))
                .map(|l| l.trim_start_matches('/').trim())
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join(" ");
            let want = match range.split_once("..=") {
                Some((lo, hi)) => format!("{lo} to {}", hi.trim_end_matches(')')),
                None => format!("{} or more", range.trim_end_matches(['.', ')'])),
            };
            assert!(
                doc.contains(&want),
                "{}:{}: the help of a flag ranging {range} should say \"{want}\": {doc:?}",
                file.display(),
                i + 1
            );
            checked += 1;
        }
    }
    // The duel's six, the matchbox example's five and `bench --samples`.
    assert!(checked >= 12, "{checked} ranged flags found in {files:?}");

    let (code, out, _) = run(bin().args(["bench", "--help"]));
    assert_eq!(code, 0);
    assert!(out.contains("each 2 to 16384") && out.contains("1 to 10000"), "{out}");
    let (_, out, _) = run(bin().args(["inspect", "--help"]));
    assert!(out.contains("0 to the replay's last frame"), "{out}");
}

#[test]
fn scenario_run_gives_the_duels_functions_to_the_duels_content_only() {
    let dir = scratch("own_functions");
    // A game's own content naming a behaviour the duel also registers.
    let own = dir.join("own.ron");
    std::fs::write(
        &own,
        r###"(
    content: Inline(r#"(
        tags: ["Ability.Fireball"],
        attribute_sets: { "V": (attributes: { "Health": (default: 100) }) },
        abilities: { "Fireball": (tags: ["Ability.Fireball"], behaviour: "Fireball", end_after: Frames(1)) },
    )"#),
    players: 1,
    entities: { "hero": (attribute_sets: ["V"], abilities: [(ability: "Fireball")], player: 0) },
    script: [ (frame: 1, do: Tap(player: 0, input: 0)) ],
    expect: [ (frame: 5, that: Attribute(on: "hero", attribute: "Health", current: 100)) ],
)"###,
    )
    .unwrap();
    let (code, out, err) = run(bin().args(["scenario", "run", "--mode", "plain"]).arg(&own));
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("the content names 1 function the hooks do not register"), "{err}");
    assert!(err.contains("an ability behaviour \"Fireball\""), "{err}");
    assert!(err.contains("own.ron:5:"), "the place of the name in the file: {err}");
    assert!(out.contains("1 could not run"), "{out}");

    // Asked for, the duel's functions run under the content's names.
    let (code, out, err) =
        run(bin().args(["scenario", "run", "--mode", "plain", "--game", "duel"]).arg(&own));
    assert_eq!(code, 0, "{out}\n{err}");

    // The duel's own content still gets the duel's functions without asking.
    let duel = root().join("examples/scenarios/duel01_damage_and_lifesteal.ron");
    let (code, out, err) = run(bin().args(["scenario", "run", "--mode", "plain"]).arg(&duel));
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, _, err) =
        run(bin().args(["scenario", "run", "--mode", "plain", "--game", "none"]).arg(&duel));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the hooks do not register"), "{err}");
}

#[test]
fn fuzz_runs_the_duel_for_a_budget_without_a_finding() {
    let dir = scratch("fuzz");
    let out = dir.join("findings");
    let (code, stdout, err) = run(bin()
        .args(["fuzz", "--iterations", "4", "--max-frames", "60", "--seed", "3", "--out"])
        .arg(&out));
    assert_eq!(code, 0, "{stdout}\n{err}");
    assert!(stdout.contains("fuzz: 4 iterations of the duel (seed 3), no finding"), "{stdout}");
    assert!(!out.exists(), "nothing to write without a finding");
}

#[test]
fn fuzz_refuses_a_bad_budget() {
    let (code, _, err) = run(bin().args(["fuzz", "--max-frames", "3"]));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn fuzz_runs_data_only_content_and_the_arena_without_a_finding() {
    let kit = root().join("examples/content/kit.ron");
    let (code, stdout, err) = run(bin()
        .args(["fuzz", "--iterations", "4", "--max-frames", "60", "--seed", "5", "--entities", "3"])
        .arg("--content")
        .arg(&kit));
    assert_eq!(code, 0, "{stdout}\n{err}");
    let want = format!("fuzz: 4 iterations of content {} (seed 5), no finding", kit.display());
    assert!(stdout.contains(&want), "{stdout}");
    let (code, stdout, err) =
        run(bin().args(["fuzz", "--arena", "--iterations", "2", "--max-frames", "60"]));
    assert_eq!(code, 0, "{stdout}\n{err}");
    assert!(stdout.contains("fuzz: 2 iterations of the reference arena (seed 1)"), "{stdout}");
}

#[test]
fn fuzz_refuses_content_that_names_functions_with_the_reason() {
    let recipes = root().join("examples/content/recipes.ron");
    let (code, _, err) = run(bin().args(["fuzz", "--iterations", "1", "--content"]).arg(&recipes));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("registers no functions"), "{err}");
}

/// A replay on data-only content (as `fuzz --content` writes them) verifies, bisects and
/// inspects with `--content`; a recorded checksum that differs from the simulation is reported
/// at its frame, as a finding's diverging replay is.
#[test]
fn replays_on_data_only_content_play_with_content() {
    use rollback_abilities::replay::Recorder;
    use rollback_abilities_kit::content_world;
    let dir = scratch("content-replay");
    let path = root().join("examples/content/kit.ron");
    let content = Arc::new(
        rollback_abilities::Content::from_ron_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap(),
    );
    let record = |tamper: Option<u32>| {
        let mut w = content_world::world(content.clone(), 3, 2, 9).expect("world");
        let mut rec = Recorder::new(&w, 16);
        for f in 0..60u32 {
            let inputs =
                [content_world::input(&[f as u8, 0, 0, 0, 1]), content_world::input(&[3, 0, 0, 0])];
            w.step(&inputs);
            let sum = if tamper == Some(f) { w.checksum() ^ 1 } else { w.checksum() };
            rec.push(f, &inputs[..], sum).expect("in order");
            if rec.keyframe_due(f + 1) {
                rec.keyframe(&w);
            }
        }
        rec.finish()
    };
    let good = dir.path().join("good.replay");
    let bad = dir.path().join("bad.replay");
    record(None).write(&good).unwrap();
    record(Some(37)).write(&bad).unwrap();
    let (code, out, err) =
        run(bin().args(["replay", "verify"]).arg(&good).arg("--content").arg(&path));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("ok: 60 frames re-simulated"), "{out}");
    let (code, out, err) =
        run(bin().args(["replay", "verify"]).arg(&bad).arg("--content").arg(&path));
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(format!("{out}{err}").contains("DIVERGED at frame 37"), "{out}\n{err}");
    let (code, out, err) = run(bin()
        .args(["inspect"])
        .arg(&good)
        .args(["--frame", "20", "--entity", "player 1"])
        .arg("--content")
        .arg(&path));
    assert_eq!(code, 0, "{out}\n{err}");
    // Without --content the tool says what to pass.
    let (code, _, err) = run(bin().args(["replay", "verify"]).arg(&good));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--content PATH"), "{err}");
    // Other content is refused by its hash.
    let other = root().join("examples/content/quickstart.ron");
    let (code, _, err) =
        run(bin().args(["replay", "verify"]).arg(&good).arg("--content").arg(&other));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("pass the content the replay was recorded on"), "{err}");
}
