//! The scenario runner: every shipped scenario passes in all four modes, failures are
//! reported with expected and actual values, and malformed files give located errors.

use rollback_abilities::scenario::{Mode, ModeOutcome, RunOptions, Scenario, run};
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

/// Every `ron` block of docs/scenarios.md that is a scenario loads and passes.
#[test]
fn documented_examples_pass() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scenarios.md"))
            .unwrap();
    let mut blocks = Vec::new();
    let mut rest = doc.as_str();
    while let Some(start) = rest.find("```ron\n") {
        let body = &rest[start + 7..];
        let end = body.find("\n```").unwrap();
        blocks.push(&body[..end]);
        rest = &body[end..];
    }
    let scenarios: Vec<&str> =
        blocks.into_iter().filter(|b| b.trim_start().starts_with("Scenario(")).collect();
    assert!(scenarios.len() >= 3, "{}", scenarios.len());
    for (i, text) in scenarios.iter().enumerate() {
        let s = Scenario::from_str(text, &format!("docs/scenarios.md block {i}"), None)
            .unwrap_or_else(|e| panic!("{e}"));
        let options =
            RunOptions { modes: Some(vec![Mode::Plain, Mode::Rollback]), ..RunOptions::default() };
        let report = run(&s, &options).unwrap();
        assert!(report.passed(), "{report}");
    }
}

/// A failing expectation is reported with the frame, the expected and the actual value, and
/// the report fails; the modes still agree.
#[test]
fn failures_say_expected_and_actual() {
    let text = r###"(
        content: Inline(r##"(
            attribute_sets: { "Vitals": (attributes: { "Health": (default: 100) }) },
            effects: { "Hit": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -30))]) },
        )"##),
        players: 1,
        entities: { "dummy": (attribute_sets: ["Vitals"]) },
        script: [ (frame: 5, do: ApplyEffect(effect: "Hit", on: "dummy")) ],
        expect: [
            (frame: 0, until: 9, that: Attribute(on: "dummy", attribute: "Health", current: 100)),
            (frame: 9, that: Attribute(on: "dummy", attribute: "Health", current: 70)),
        ],
    )"###;
    let s = Scenario::from_str(text, "hit.ron", None).unwrap();
    let report = run(&s, &RunOptions::default()).unwrap();
    assert!(!report.passed());
    let bad = &report.expectations[0];
    assert!(!bad.passed);
    assert_eq!(bad.failed_at, Some(5));
    assert_eq!(bad.failures, 5, "frames 5..=9 fail");
    assert_eq!(bad.expected, "current 100");
    assert_eq!(bad.actual, "current 70");
    assert_eq!(bad.line, 10);
    assert!(report.expectations[1].passed);
    let text = report.to_string();
    assert!(text.contains("FAIL line 10"), "{text}");
    assert!(
        text.contains("failed at frame 5 (5 frames): expected current 100, got current 70"),
        "{text}"
    );
    assert!(report.modes.iter().all(|m| !matches!(m.outcome, ModeOutcome::Disagrees(_))));
}

/// Event checks count over their range: too few and too many both fail.
#[test]
fn event_counts_are_exact() {
    let text = |count: u32| {
        format!(
            r###"(
            content: Inline(r##"(
                tags: ["GameplayCue.Hit"],
                attribute_sets: {{ "Vitals": (attributes: {{ "Health": (default: 100) }}) }},
                effects: {{ "Hit": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))],
                                   cues: [(tag: "GameplayCue.Hit")]) }},
            )"##),
            players: 1,
            modes: [Plain],
            entities: {{ "dummy": (attribute_sets: ["Vitals"]) }},
            script: [ (frame: 2, until: 8, every: 3, do: ApplyEffect(effect: "Hit", on: "dummy")) ],
            expect: [ (frame: 0, until: 10, that: Cue(tag: "GameplayCue.Hit", kind: Executed, on: "dummy", count: {count})) ],
        )"###
        )
    };
    for (count, pass) in [(2, false), (3, true), (4, false)] {
        let s = Scenario::from_str(&text(count), "hits.ron", None).unwrap();
        let report = run(&s, &RunOptions::default()).unwrap();
        assert_eq!(report.passed(), pass, "{report}");
        assert_eq!(report.expectations[0].actual, "3 events");
    }
}

/// Malformed scenarios give typed errors naming file, line, column and path, with a hint.
#[test]
fn malformed_scenarios_are_located() {
    use rollback_abilities::scenario::ScenarioErrorKind as K;
    const CONTENT: &str = r###"content: Inline(r##"(
            tags: ["State.Stun"],
            attribute_sets: { "Vitals": (attributes: { "Health": (default: 100) }) },
            effects: { "Stun": (duration: Frames(10), granted_tags: ["State.Stun"]) },
            abilities: { "Jump": (input: 1) },
        )"##)"###;
    let cases: &[(&str, K, u32, &str, &str)] = &[
        // (body after the content, kind, line, path, message fragment)
        (
            r#"entities: { "hero": () }, script: [(frame: 1, do: ApplyEffect(effect: "Stunn", on: "hero"))]"#,
            K::UnknownName,
            8,
            "script[0].do.effect",
            "did you mean \"Stun\"",
        ),
        (
            r#"entities: { "hero": () }, script: [(frame: 1, do: AddTag(on: "heor", tag: "State.Stun"))]"#,
            K::UnknownName,
            8,
            "script[0].do.on",
            "no entity named \"heor\" (did you mean \"hero\"?)",
        ),
        (
            r#"entities: { "hero": () }, expect: [(frame: 1, that: Tag(on: "hero", tag: "State.Stn", present: true))]"#,
            K::UnknownName,
            8,
            "expect[0].that.tag",
            "State.Stn",
        ),
        (
            r#"entities: { "hero": () }, expect: [(frame: 1, that: Attribute(on: "hero", attribute: "Health", current: 1))]"#,
            K::InvalidValue,
            8,
            "expect[0].that.attribute",
            "has no attribute \"Health\"",
        ),
        (
            r#"entities: { "hero": (attribute_sets: ["Vitals"]) }, expect: [(frame: 1, that: Attribute(on: "hero", attribute: "Health"))]"#,
            K::InvalidValue,
            8,
            "expect[0].that",
            "needs `current`, `base` or both",
        ),
        (
            r#"entities: { "hero": () }, expect: [(frame: 9, until: 3, that: Alive(on: "hero", alive: true))]"#,
            K::InvalidValue,
            8,
            "expect[0].until",
            "until (3) is before frame (9)",
        ),
        (
            r#"frames: 5, entities: { "hero": () }, expect: [(frame: 9, that: Alive(on: "hero", alive: true))]"#,
            K::InvalidValue,
            8,
            "frames",
            "raise `frames` to at least 10",
        ),
        (r#"players: 0"#, K::InvalidValue, 8, "players", "players must be 1 to 8"),
        (
            r#"entities: { "hero": (player: 3) }"#,
            K::InvalidValue,
            8,
            "entities.hero.player",
            "player 3 does not exist",
        ),
        (
            r#"entities: { "a": (player: 0), "b": (player: 0) }"#,
            K::InvalidValue,
            8,
            "entities.b.player",
            "already drives \"a\"",
        ),
        (
            r#"script: [(frame: 0, do: Press(player: 0, input: 40))]"#,
            K::Syntax,
            8,
            "script[0].do.input",
            "out of range",
        ),
        (
            r#"script: [(frame: 0, do: Press(player: 0, input: "Jump"))]"#,
            K::Syntax,
            8,
            "script[0].do.input",
            "unknown button \"Jump\"",
        ),
        (
            r#"network: (input_delay: 2), script: [(frame: 1, do: Press(player: 0, input: 1))]"#,
            K::InvalidValue,
            8,
            "network.input_delay",
            "mode Peers delays inputs by 2 frames",
        ),
        (
            r#"script: [(frame: 0, do: Explode(on: "x"))]"#,
            K::Syntax,
            8,
            "script[0].do",
            "docs/scenarios.md",
        ),
        (
            r#"expect: [(frame: 0, thats: Checksum(1))]"#,
            K::Syntax,
            8,
            "expect[0].thats",
            "Unexpected field named `thats` in `expectation`",
        ),
        (
            r#"entities: { "hero": (abilities: [(ability: "Jmp")]) }"#,
            K::UnknownName,
            8,
            "entities.hero.abilities[0].ability",
            "Jmp",
        ),
        (
            r#"script: [(frame: 3, until: 1, do: Despawn(on: "x"))]"#,
            K::InvalidValue,
            8,
            "script[0].until",
            "until (1) is before frame (3)",
        ),
    ];
    for (body, kind, line, path, fragment) in cases {
        let text = format!("(\n        {CONTENT},\n        {body},\n    )");
        let e = Scenario::from_str(&text, "bad.ron", None).expect_err(body);
        assert_eq!(e.kind, *kind, "{body}: {e}");
        assert_eq!(e.file, "bad.ron");
        assert_eq!(e.line, *line, "{body}: {e}");
        assert!(e.col > 0, "{e}");
        assert_eq!(e.path, *path, "{body}: {e}");
        assert!(e.message.contains(fragment), "{body}: {e}");
        assert!(e.to_string().starts_with(&format!("bad.ron:{line}:")), "{e}");
    }
}

/// Errors inside inline content point into the scenario file; missing content files and
/// truncated scenarios are typed errors too.
#[test]
fn content_errors_point_into_the_scenario() {
    use rollback_abilities::scenario::ScenarioErrorKind as K;
    let text = "(\n    content: Inline(r#\"(\n        effects: {\n            \"Hit\": (modifiers: [(attribute: \"Helth\", op: Add, magnitude: Scalable(coef: 1))]),\n        },\n    )\"#),\n)";
    let e = Scenario::from_str(text, "inline.ron", None).unwrap_err();
    assert_eq!(e.kind, K::Content, "{e}");
    assert_eq!(e.file, "inline.ron");
    assert_eq!(e.line, 4, "{e}");
    assert!(e.path.starts_with("content: effects.Hit.modifiers[0].attribute"), "{e}");
    assert!(e.message.contains("Helth"), "{e}");

    let e =
        Scenario::from_str(r#"(content: File("no/such/file.ron"))"#, "f.ron", None).unwrap_err();
    assert_eq!(e.kind, K::Io);
    assert_eq!(e.path, "content");
    assert!(e.message.contains("relative to the scenario file"), "{e}");

    let e = Scenario::from_str(r#"(content: Inline("()"), entities: { "a": ("#, "t.ron", None)
        .unwrap_err();
    assert_eq!(e.kind, K::Syntax);
    assert!(e.message.contains("bracket"), "{e}");

    let e = Scenario::load("/no/such/scenario.ron").unwrap_err();
    assert_eq!(e.kind, K::Io);

    // Shipped content by path, relative to the scenario file.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenarios");
    let s = Scenario::from_str(
        r#"(content: File("../content/quickstart.ron"), players: 1, frames: 3)"#,
        "rel.ron",
        Some(&dir),
    );
    let e = s.err();
    assert!(e.is_none(), "{e:?}");
}

/// The trace of plain stepping has one record per frame with named entities.
#[test]
fn trace_has_every_frame() {
    let s = Scenario::load(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenarios/as16_stun.ron"),
    )
    .unwrap();
    let mut frames = Vec::new();
    let options = RunOptions { modes: Some(vec![Mode::Plain]), ..RunOptions::default() };
    let mut sink = |t: rollback_abilities::scenario::FrameTrace| frames.push(t);
    let report = rollback_abilities::scenario::run_with_hooks(
        &s,
        &rollback_abilities::world::Hooks::new(),
        &options,
        Some(&mut sink),
    )
    .unwrap();
    assert!(report.passed());
    assert_eq!(frames.len(), s.frames as usize);
    let f100 = &frames[100];
    assert_eq!(f100.entities[1].0, "b");
    assert!(
        f100.cues.iter().any(|c| c.starts_with("OnActive GameplayCue.Stun on b")),
        "{:?}",
        f100.cues
    );
    assert!(
        frames[150].activations.iter().any(|a| a.contains("Jump: failed (BlockedByTags)")),
        "{:?}",
        frames[150].activations
    );
    assert_eq!(frames.last().unwrap().checksum, report.final_checksum);
}
