//! The command-line tool on bad arguments and bad files: each case checks the exit status (2:
//! an input error, the command could not run — a bad argument, a missing file, a file that is
//! not what the command takes; 1: only for `content check`, whose check an invalid content file
//! fails), the message on stderr, and that no output file or directory it was asked to write
//! exists afterwards.

use std::path::PathBuf;
use std::process::Command;

fn scratch(name: &str) -> crate::common::TempDir {
    crate::common::TempDir::new(&format!("malformed_{name}"))
}

struct Case {
    name: &'static str,
    args: Vec<String>,
    code: i32,
    stderr: &'static str,
    /// Paths the command must not have created.
    not_written: Vec<PathBuf>,
}

fn s(x: impl AsRef<std::ffi::OsStr>) -> String {
    x.as_ref().to_string_lossy().into_owned()
}

// Long because it is a table: one `Case` per bad command line (a few lines each) and the
// files they point at; the checks after the table are short.
#[test]
fn cli_rejects_bad_arguments_and_writes_nothing() {
    let d = scratch("cli");
    let root = crate::root();
    let good_scenario = root.join("examples/scenarios/as16_stun.ron");
    let bad_scenario = d.join("bad.ron");
    std::fs::write(&bad_scenario, "(content: Inline(\"()\"), players: 0)").unwrap();
    let needs_fn = d.join("needs_fn.ron");
    std::fs::write(
        &needs_fn,
        r###"(content: Inline(r#"( attribute_sets: { "V": (attributes: { "H": (default: 1) }) },
             effects: { "E": (executions: [(calc: "NotRegistered")]) } )"#), players: 1,
             entities: { "a": (attribute_sets: ["V"]) },
             script: [(frame: 1, do: ApplyEffect(effect: "E", on: "a"))])"###,
    )
    .unwrap();
    let not_replay = d.join("not.replay");
    std::fs::write(&not_replay, b"hello, not a replay").unwrap();
    let cut_replay = d.join("cut.replay");
    let mut cut = b"RBAREPLY".to_vec();
    cut.extend_from_slice(&rollback_abilities::replay::FORMAT_VERSION.to_le_bytes());
    cut.extend_from_slice(b"\xff\x00\x00\x00(");
    std::fs::write(&cut_replay, cut).unwrap();
    let empty = d.join("empty.replay");
    std::fs::write(&empty, b"").unwrap();
    let bad_content = d.join("content.ron");
    std::fs::write(&bad_content, "(\n  tags: [\"A..B\"],\n)").unwrap();
    let trace = d.join("trace.jsonl");
    let rdir = d.join("replays");
    let svg = d.join("chart.svg");
    let cases = vec![
        Case {
            name: "invalid scenario with --trace and --replay-dir",
            args: vec![
                "scenario".into(),
                "run".into(),
                s(&bad_scenario),
                "--trace".into(),
                s(&trace),
                "--replay-dir".into(),
                s(&rdir),
            ],
            code: 2,
            stderr: "players must be 1 to 8",
            not_written: vec![trace.clone(), rdir.clone()],
        },
        Case {
            name: "scenario whose content needs an unregistered function, with --trace",
            args: vec![
                "scenario".into(),
                "run".into(),
                s(&needs_fn),
                "--trace".into(),
                s(&trace),
                "--replay-dir".into(),
                s(&rdir),
            ],
            code: 2,
            stderr: "NotRegistered",
            not_written: vec![trace.clone(), rdir.clone()],
        },
        Case {
            name: "missing scenario file",
            args: vec!["scenario".into(), "run".into(), s(d.join("nope.ron"))],
            code: 2,
            stderr: "cannot read the scenario file",
            not_written: vec![],
        },
        Case {
            name: "unknown mode",
            args: vec![
                "scenario".into(),
                "run".into(),
                "--mode".into(),
                "sideways".into(),
                s(&good_scenario),
                "--trace".into(),
                s(&trace),
            ],
            code: 2,
            stderr: "unknown mode \"sideways\"",
            not_written: vec![trace.clone()],
        },
        Case {
            name: "unknown subcommand",
            args: vec!["scenario".into(), "walk".into()],
            code: 2,
            stderr: "unrecognized subcommand 'walk'",
            not_written: vec![],
        },
        Case {
            name: "frame that is not a number",
            args: vec![
                "replay".into(),
                "seek".into(),
                s(&not_replay),
                "--frame".into(),
                "ten".into(),
            ],
            code: 2,
            stderr: "invalid value 'ten' for '--frame <FRAME>'",
            not_written: vec![],
        },
        Case {
            name: "replay plot without --out",
            args: vec!["replay".into(), "plot".into(), s(&not_replay)],
            code: 2,
            stderr: "--out <FILE.svg>",
            not_written: vec![],
        },
        Case {
            name: "verify a file that is not a replay",
            args: vec!["replay".into(), "verify".into(), s(&not_replay)],
            code: 2,
            stderr: "not a rollback_abilities replay",
            not_written: vec![],
        },
        Case {
            name: "plot a truncated replay",
            args: vec!["replay".into(), "plot".into(), s(&cut_replay), "--out".into(), s(&svg)],
            code: 2,
            stderr: "the file is incomplete",
            not_written: vec![svg.clone()],
        },
        Case {
            name: "inspect a missing replay",
            args: vec!["inspect".into(), s(d.join("gone.replay"))],
            code: 2,
            stderr: "gone.replay does not exist",
            not_written: vec![],
        },
        Case {
            name: "desync diff of files that are not dumps",
            args: vec!["desync".into(), "diff".into(), s(&not_replay), s(&not_replay)],
            code: 2,
            stderr: "not.replay",
            not_written: vec![],
        },
        Case {
            name: "inspect an empty file",
            args: vec!["inspect".into(), s(&empty)],
            code: 2,
            stderr: "empty.replay: the file is empty (0 bytes): not a replay file",
            not_written: vec![],
        },
        Case {
            name: "bench on invalid --content",
            args: vec!["bench".into(), "--quick".into(), "--content".into(), s(&bad_content)],
            code: 2,
            stderr: "content.ron:2:",
            not_written: vec![],
        },
        Case {
            name: "bench --samples out of its range",
            args: vec!["bench".into(), "--samples".into(), "0".into()],
            code: 2,
            stderr: "0 is not in 1..=10000",
            not_written: vec![],
        },
        // `content check` checks content: invalid content is its failed check (status 1).
        Case {
            name: "content with a malformed tag",
            args: vec!["content".into(), "check".into(), s(&bad_content)],
            code: 1,
            stderr: "content.ron:2:",
            not_written: vec![],
        },
    ];
    assert_eq!(cases.len(), 15);
    for c in cases {
        let out =
            Command::new(env!("CARGO_BIN_EXE_rollback-abilities")).args(&c.args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(c.code), "{}: {err}", c.name);
        assert!(err.contains(c.stderr), "{}: stderr {err:?} lacks {:?}", c.name, c.stderr);
        assert!(!err.contains("panicked"), "{}: {err}", c.name);
        for p in &c.not_written {
            assert!(!p.exists(), "{}: {} was written", c.name, p.display());
        }
    }
}
