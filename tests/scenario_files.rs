//! The scenario runner: every shipped scenario passes in all five modes, failures are
//! reported with expected and actual values, and malformed files give located errors; cue
//! routing checks, operations before the abilities and runtime cooldown tags.

use rollback_abilities::Hooks;
use rollback_abilities::scenario::{
    self, FileOutcome, Mode, ModeOutcome, RunOptions, Scenario, ScenarioGame, run,
};
use rollback_abilities_kit::duel;
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

/// Every file in `examples/scenarios/` passes, and every one of the five modes runs and agrees
/// with plain stepping (none is excluded or skipped). Content naming functions runs as the
/// duel with its hooks, as the command-line runner does.
#[test]
fn shipped_scenarios_pass_in_every_mode() {
    let files = shipped();
    assert!(files.len() >= 27, "{files:?}");
    let (plain, duel): (Vec<_>, Vec<_>) = files.into_iter().partition(|f| {
        Scenario::load(f).unwrap_or_else(|e| panic!("{e}")).content.functions().is_empty()
    });
    assert!(duel.len() >= 5, "{duel:?}");
    let reports = [
        scenario::run_files(&plain, &Hooks::<ScenarioGame>::new(), &RunOptions::default()),
        scenario::run_files(&duel, &duel::hooks(), &RunOptions::default()),
    ];
    for report in &reports {
        eprintln!("{report}");
        report.assert_passed();
        for (_, o) in &report.files {
            let FileOutcome::Ran(r) = o else { unreachable!() };
            assert!(!r.expectations.is_empty());
            assert_eq!(r.modes.len(), 5, "{r}");
            assert!(r.modes.iter().all(|m| m.outcome == ModeOutcome::Agrees), "{r}");
        }
    }
}

/// A game runs a directory of scenario files with its own game and hooks; failures are listed
/// per expectation as `file:line: …`.
#[test]
fn run_dir_reports_per_expectation() {
    let dir = std::env::temp_dir().join(format!("scenario-run-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("a.ron"),
        r#"(
    content: Inline("(tags: [\"State.Stunned\"])"),
    entities: { "hero": () },
    script: [(frame: 1, do: AddTag(on: "hero", tag: "State.Stunned"))],
    expect: [
        (frame: 1, that: Tag(on: "hero", tag: "State.Stunned", present: true)),
        (frame: 2, that: Tag(on: "hero", tag: "State.Stunned", present: false)),
    ],
)"#,
    )
    .unwrap();
    std::fs::write(dir.join("b.ron"), "(content: Inline(\"()\"), frames: 0)").unwrap();
    let report = scenario::run_dir(&dir, &Hooks::<ScenarioGame>::new()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!report.passed());
    let failures = report.failures();
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(
        failures[0].contains("a.ron:7: hero tag State.Stunned absent: failed at frame 2"),
        "{failures:?}"
    );
    assert!(failures[1].contains("b.ron:1:"), "{failures:?}");
    assert!(scenario::run_dir("/no/such/dir", &Hooks::<ScenarioGame>::new()).is_err());
}

/// Content naming functions the hooks lack is refused with every missing function listed at
/// each place the content names it.
#[test]
fn missing_functions_are_all_listed_with_locations() {
    let text = r###"(
    content: Inline(r##"(
        attribute_sets: { "Vitals": (post_execute: "Vitals", attributes: { "Health": (default: 100) }) },
        effects: {
            "Hit": (executions: [(calc: "Damage")]),
            "Hit2": (executions: [(calc: "Damage")]),
        },
        abilities: { "Cast": (behaviour: "Caster") },
    )"##),
    entities: { "hero": (attribute_sets: ["Vitals"]) },
)"###;
    let s = Scenario::from_str(text, "fns.ron", None).unwrap();
    let e = run(&s, &RunOptions::default()).unwrap_err();
    let m = e.to_string();
    assert_eq!(e.kind, rollback_abilities::scenario::ScenarioErrorKind::World);
    assert!(m.contains("names 3 functions the hooks do not register"), "{m}");
    assert!(
        m.contains(
            "fns.ron:3:52: attribute_sets.Vitals.post_execute: a post-execute hook \"Vitals\""
        ),
        "{m}"
    );
    assert!(
        m.contains("fns.ron:5:41: effects.Hit.executions[0].calc: an execution \"Damage\""),
        "{m}"
    );
    assert!(m.contains("fns.ron:6:42: effects.Hit2.executions[0].calc"), "{m}");
    assert!(
        m.contains("fns.ron:8:42: abilities.Cast.behaviour: an ability behaviour \"Caster\""),
        "{m}"
    );
    assert!(m.starts_with("fns.ron:3:52: attribute_sets.Vitals.post_execute: "), "{m}");
    assert_eq!(m.matches("\"Vitals\"").count(), 1, "{m}");
    // The duel's hooks provide none of these either: the same list.
    assert!(scenario::check_hooks(&s, &duel::hooks()).is_err());
}

/// A mode excluded by the file is reported with its reason and not run; the others run.
#[test]
fn excluded_modes_are_printed_with_their_reason() {
    let text = r#"(
    content: Inline("(tags: [\"State.Stunned\"])"),
    modes: Except(modes: [SyncTest, Replay], reason: "shows the syntax"),
    entities: { "hero": () },
    expect: [(frame: 1, that: Tag(on: "hero", tag: "State.Stunned", present: false))],
)"#;
    let s = Scenario::from_str(text, "x.ron", None).unwrap();
    let report = run(&s, &RunOptions::default()).unwrap();
    assert!(report.passed());
    let shown = report.to_string();
    assert!(shown.contains("excl mode Replay   excluded by the file: shows the syntax"), "{shown}");
    assert!(shown.contains("excl mode SyncTest excluded by the file: shows the syntax"), "{shown}");
    assert!(shown.contains("ok   mode Peers    agrees (2 peers, "), "{shown}");
}

/// Every `ron` block of docs/scenarios.md that is a scenario loads and passes in every mode.
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
    assert!(scenarios.len() >= 9, "{}", scenarios.len());
    for (i, text) in scenarios.iter().enumerate() {
        let s = Scenario::from_str(text, &format!("docs/scenarios.md block {i}"), None)
            .unwrap_or_else(|e| panic!("{e}"));
        let report = run(&s, &RunOptions::default()).unwrap();
        assert!(report.passed(), "{report}");
        // Every mode ran (the modes example excludes one by name, with its reason).
        assert!(
            report
                .modes
                .iter()
                .all(|m| matches!(m.outcome, ModeOutcome::Agrees | ModeOutcome::Excluded(_))),
            "{report}"
        );
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
// Long because it is a table of cases (scenario text, error kind, line, column, path), one per
// malformed scenario.
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
            "script[0].frame",
            "input delay of 2 frames",
        ),
        (
            r#"modes: Except(modes: [Peers], reason: "")"#,
            K::InvalidValue,
            8,
            "modes.reason",
            "say why",
        ),
        (
            r#"modes: Except(modes: [Plain], reason: "no")"#,
            K::InvalidValue,
            8,
            "modes.modes[0]",
            "cannot be excluded",
        ),
        (
            r#"entities: { "hero": () }, script: [(frame: 0, do: ExecuteCue(on: "hero", tag: "State.Stun"))]"#,
            K::InvalidValue,
            8,
            "script[0].do.tag",
            "not a cue tag",
        ),
        (
            r#"expect: [(frame: 0, that: Applied(label: "hitt", result: Added))]"#,
            K::UnknownName,
            8,
            "expect[0].that.label",
            "no operation is labelled",
        ),
        (
            r#"entities: { "hero": () }, expect: [(frame: 0, that: TagEvent(on: "hero", tag: "State.Stun", event: Added, at_least: 3, at_most: 1))]"#,
            K::InvalidValue,
            8,
            "expect[0].that",
            "at_least (3) is above at_most (1)",
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
        &Hooks::<ScenarioGame>::new(),
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

/// Cue-routing tables and checks that cannot work are located errors naming what is wrong.
#[test]
fn cue_routing_errors_are_located() {
    use rollback_abilities::scenario::ScenarioErrorKind as K;
    const CONTENT: &str = r###"content: Inline(r##"(
            tags: ["GameplayCue.Hit.Fire", "GameplayCue.Aura", "State.Stun"],
            abilities: { "Bolt": (end_after: Frames(1)) },
        )"##)"###;
    let cases: &[(&str, K, u32, &str, &str)] = &[
        (
            r#"cue_routing: (handlers: { "stun": (tag: "State.Stun") })"#,
            K::InvalidValue,
            6,
            "cue_routing.handlers.stun.tag",
            "not a cue tag",
        ),
        (
            r#"cue_routing: (handlers: { "a": (tag: "GameplayCue.Hit"), "b": (tag: "GameplayCue.Hit") })"#,
            K::InvalidValue,
            6,
            "cue_routing.handlers.b.tag",
            "the handler \"a\" already handles GameplayCue.Hit",
        ),
        (
            r#"cue_routing: (handlers: { "a": (tag: "GameplayCue.Hit", kind: Instanced, override: true) })"#,
            K::InvalidValue,
            6,
            "cue_routing.handlers.a.override",
            "instanced handler always ends the walk",
        ),
        (
            r#"cue_routing: (handlers: { "a": (tag: "GameplayCue.Hit", unique_per_instigator: true) })"#,
            K::InvalidValue,
            6,
            "cue_routing.handlers.a.unique_per_instigator",
            "for instanced handlers",
        ),
        (
            r#"cue_routing: (translate: { "GameplayCue.Hit": "State.Stun" })"#,
            K::InvalidValue,
            6,
            "cue_routing.translate.GameplayCue.Hit",
            "not a cue tag",
        ),
        (
            r#"entities: { "x": () }, cue_routing: (suppress: [(on: "y")])"#,
            K::UnknownName,
            6,
            "cue_routing.suppress[0].on",
            "no entity named \"y\"",
        ),
        (
            r#"entities: { "x": () }, cue_routing: (local: [(frame: 2, do: Remove(name: "glow"))])"#,
            K::UnknownName,
            6,
            "cue_routing.local[0].do.name",
            "no local cue named \"glow\"",
        ),
        (
            r#"entities: { "x": () }, cue_routing: (local: [
                (frame: 1, do: Add(on: "x", tag: "GameplayCue.Aura", name: "glow")),
                (frame: 2, do: Add(on: "x", tag: "GameplayCue.Aura", name: "glow"))])"#,
            K::InvalidValue,
            8,
            "cue_routing.local[1].do.name",
            "is still added here",
        ),
        (
            r#"expect: [(frame: 1, that: Handled(handler: "hit", event: Executed))]"#,
            K::UnknownName,
            6,
            "expect[0].that.handler",
            "declare handlers in `cue_routing",
        ),
        (
            r#"cue_routing: (handlers: { "hits": (tag: "GameplayCue.Hit") }),
               expect: [(frame: 1, that: Handled(handler: "hit", event: Executed))]"#,
            K::UnknownName,
            7,
            "expect[0].that.handler",
            "did you mean \"hits\"",
        ),
        (
            r#"cue_routing: (handlers: { "hits": (tag: "GameplayCue.Hit") }),
               expect: [(frame: 1, that: LiveInstances(handler: "hits", count: 1))]"#,
            K::InvalidValue,
            7,
            "expect[0].that.handler",
            "is static",
        ),
        (
            r#"cue_routing: (handlers: { "aura": (tag: "GameplayCue.Aura", kind: Instanced) }),
               expect: [(frame: 1, that: LiveInstances(handler: "aura"))]"#,
            K::InvalidValue,
            7,
            "expect[0].that",
            "needs `count`",
        ),
        (
            r#"entities: { "x": () }, script: [(frame: 1, phase: BeforeAbilities, do: Tap(player: 0, input: 1))]"#,
            K::InvalidValue,
            6,
            "script[0].phase",
            "`phase` is for direct operations",
        ),
        (
            r#"entities: { "x": () }, script: [(frame: 1, phase: Before, do: Despawn(on: "x"))]"#,
            K::Syntax,
            6,
            "script[0].phase",
            "Before",
        ),
        (
            r#"entities: { "x": () }, script: [(frame: 1, do: SetCooldownTags(on: "x", ability: "Bolt",
                tags: ["GameplayCue.Aura", "State.Stun"]))]"#,
            K::InvalidValue,
            7,
            "script[0].do.tags",
            "at most one runtime cooldown tag",
        ),
        (
            r#"entities: { "x": () }, script: [(frame: 1, do: SetCooldownTags(on: "x", ability: "Bolt", tags: ["State.Stn"]))]"#,
            K::UnknownName,
            6,
            "script[0].do.tags[0]",
            "State.Stn",
        ),
    ];
    for (body, kind, line, path, fragment) in cases {
        let text = format!("(\n        {CONTENT},\n        {body},\n    )");
        let e = Scenario::from_str(&text, "bad.ron", None).expect_err(body);
        assert_eq!(e.kind, *kind, "{body}: {e}");
        assert_eq!(e.line, *line, "{body}: {e}");
        assert_eq!(e.path, *path, "{body}: {e}");
        assert!(e.message.contains(fragment), "{body}: {e}");
    }
    // An empty runtime tag list when the cooldown effect grants no tag of its own.
    let text = r###"(
        content: Inline(r##"(
            tags: ["Cooldown.Bolt"],
            effects: { "Cd": (duration: Frames(30)) },
            abilities: { "Bolt": (cooldown: "Cd", cooldown_tags: ["Cooldown.Bolt"]) },
        )"##),
        entities: { "x": (abilities: [(ability: "Bolt")]) },
        script: [(frame: 1, do: SetCooldownTags(on: "x", ability: "Bolt", tags: []))],
    )"###;
    let e = Scenario::from_str(text, "cd.ron", None).unwrap_err();
    assert_eq!(e.path, "script[0].do.tags", "{e}");
    assert!(e.message.contains("could never be seen"), "{e}");
}

/// One scenario, the silence lifted at frame 10 in the given phase and Bolt pressed at 10.
fn silence_lifted(phase: &str) -> Scenario {
    let text = format!(
        r###"(
        content: Inline(r##"(
            tags: ["State.Silenced"],
            abilities: {{ "Bolt": (input: 0, activation_blocked_tags: ["State.Silenced"],
                                   end_after: Frames(1)) }},
        )"##),
        players: 2,
        network: (latency_ms: 40, jitter_ms: 20, loss_percent: 10),
        entities: {{ "hero": (tags: ["State.Silenced"], abilities: [(ability: "Bolt")], player: 1) }},
        script: [
            (frame: 10, phase: {phase}, do: RemoveTag(on: "hero", tag: "State.Silenced")),
            (frame: 10, do: Tap(player: 1, input: 0)),
            (frame: 12, do: Tap(player: 1, input: 0)),
        ],
        expect: [
            (frame: 10, that: Ability(on: "hero", ability: "Bolt", activation: Succeeded)),
            (frame: 12, that: Ability(on: "hero", ability: "Bolt", activation: Succeeded)),
        ],
    )"###
    );
    Scenario::from_str(&text, "silence.ron", None).unwrap()
}

/// An operation at phase BeforeAbilities is seen by an ability activating in the same frame, in
/// every mode (a remote player's press, so peers predict and roll back over it); at
/// AfterAbilities the same press is blocked and only the next one fires.
#[test]
fn an_operation_before_the_abilities_is_seen_in_its_frame() {
    let early = run(&silence_lifted("BeforeAbilities"), &RunOptions::default()).unwrap();
    assert!(early.passed(), "{early}");
    assert_eq!(early.modes.len(), 5);
    assert!(early.modes.iter().all(|m| m.outcome == ModeOutcome::Agrees), "{early}");

    let late = run(&silence_lifted("AfterAbilities"), &RunOptions::default()).unwrap();
    assert!(!late.passed(), "{late}");
    assert_eq!(late.failed_expectations(), 1, "{late}");
    assert_eq!(late.expectations[0].actual, "activation Failed(BlockedByTags)");
    assert!(late.expectations[1].passed);
    assert!(late.modes.iter().all(|m| m.outcome == ModeOutcome::Agrees), "{late}");
    assert_ne!(early.final_checksum, late.final_checksum);

    // The world a game builds from the scenario carries the operation as its hook.
    let s = silence_lifted("BeforeAbilities");
    let (w, _) = s.build_world(&Hooks::<ScenarioGame>::new()).unwrap();
    assert!(w.has_before_abilities());
    let (w, _) =
        silence_lifted("AfterAbilities").build_world(&Hooks::<ScenarioGame>::new()).unwrap();
    assert!(!w.has_before_abilities());
}

/// `World::set_cooldown_tags`: the activation check, the commit and the cooldown query follow
/// the runtime tag; it is snapshot state (rolled back by a load, checksummed, validated) and
/// refused with a reason when it cannot work.
#[test]
fn runtime_cooldown_tags_are_snapshot_state() {
    use rollback_abilities::CooldownTagsError;
    use rollback_abilities::{Content, Game, World, WorldConfig};
    struct G;
    impl Game for G {
        type Input = u8;
        type Component = ();
        type Global = ();
    }
    let content = std::sync::Arc::new(
        Content::from_ron_str(
            r#"(
        tags: ["Cooldown.Spell", "Cooldown.Bolt", "Cooldown.Slot2"],
        effects: {
            "Cd": (duration: Frames(40), granted_tags: ["Cooldown.Spell"]),
            "Bare": (duration: Frames(40)),
        },
        abilities: {
            "Bolt": (cooldown: "Cd", cooldown_tags: ["Cooldown.Bolt"], end_after: Frames(1)),
            "Nova": (cooldown: "Bare", cooldown_tags: ["Cooldown.Bolt"], end_after: Frames(1)),
        },
    )"#,
        )
        .unwrap(),
    );
    let tag = |n: &str| content.tag(n).unwrap();
    let mut w = World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
    let hero = w.spawn_actor(&[]).unwrap();
    let bolt = w.grant_ability(hero, content.ability("Bolt").unwrap(), 1).unwrap();
    let nova = w.grant_ability(hero, content.ability("Nova").unwrap(), 1).unwrap();
    let defaults = w.ability_cooldown_tags(bolt).unwrap();
    assert!(defaults.contains(tag("Cooldown.Spell")) && defaults.contains(tag("Cooldown.Bolt")));
    assert!(!w.has_runtime_cooldown_tags(bolt));
    let before = w.checksum();
    let saved = w.snapshot();
    let plain_bytes = w.state_bytes();

    w.set_cooldown_tags(bolt, Some(tag("Cooldown.Slot2"))).unwrap();
    assert!(w.has_runtime_cooldown_tags(bolt));
    assert_ne!(w.checksum(), before, "the runtime tag is checksummed");
    let tags = w.ability_cooldown_tags(bolt).unwrap();
    assert!(tags.contains(tag("Cooldown.Slot2")) && tags.contains(tag("Cooldown.Spell")));
    assert!(!tags.contains(tag("Cooldown.Bolt")));

    // The definition's extra tag no longer blocks; the runtime one does.
    w.add_loose_tag(hero, tag("Cooldown.Bolt"));
    assert_eq!(w.can_activate(bolt, None), Ok(()));
    assert!(w.try_activate(bolt).is_ok());
    w.step(&[0, 0]);
    assert!(w.has_tag(hero, tag("Cooldown.Slot2")), "the commit grants the runtime tag");
    assert_eq!(w.ability_cooldown_remaining(bolt), Some((40, 40)));
    w.step(&[0, 0]);
    assert!(!w.is_ability_active(bolt));
    assert_eq!(w.can_activate(bolt, None), Err(rollback_abilities::ActivationFailure::OnCooldown));

    // A load rolls the tag back with everything else.
    w.load(&saved).unwrap();
    assert!(!w.has_runtime_cooldown_tags(bolt));
    assert_eq!(w.checksum(), before);
    assert_eq!(w.state_bytes(), plain_bytes);

    // Refusals.
    assert_eq!(w.set_cooldown_tags(nova, None), Err(CooldownTagsError::NeverSeen));
    assert_eq!(w.set_cooldown_tags(bolt, None), Ok(()));
    assert_eq!(
        w.set_cooldown_tags(bolt, Some(rollback_abilities::TagId(900))),
        Err(CooldownTagsError::UnknownTag)
    );
    w.reset_cooldown_tags(bolt).unwrap();
    assert_eq!(w.ability_cooldown_tags(bolt), Some(defaults));
    w.remove_ability(bolt);
    assert_eq!(
        w.set_cooldown_tags(bolt, Some(tag("Cooldown.Slot2"))),
        Err(CooldownTagsError::InvalidHandle)
    );

    // A snapshot naming a tag beyond the registry is refused by validation.
    let mut w = World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
    let hero = w.spawn_actor(&[]).unwrap();
    let bolt = w.grant_ability(hero, content.ability("Bolt").unwrap(), 1).unwrap();
    let a = w.state_bytes();
    w.set_cooldown_tags(bolt, Some(tag("Cooldown.Slot2"))).unwrap();
    let mut b = w.state_bytes();
    let at: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    assert!(!at.is_empty() && at.len() <= 2, "{at:?}");
    let field = at[0] & !1;
    b[field..field + 2].copy_from_slice(&0xFFF0u16.to_le_bytes());
    let e = w.load_bytes(&b).unwrap_err();
    assert!(e.to_string().contains("cooldown_tag"), "{e}");
}

/// The trace lists each frame's handler calls, instance events and local cues.
#[test]
fn trace_lists_handler_calls() {
    let s = Scenario::load(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/scenarios/cues03_suppression_and_local_cues.ron"),
    )
    .unwrap();
    let mut frames = Vec::new();
    let options = RunOptions { modes: Some(vec![Mode::Plain]), ..RunOptions::default() };
    let mut sink = |t: rollback_abilities::scenario::FrameTrace| frames.push(t);
    let report = rollback_abilities::scenario::run_with_hooks(
        &s,
        &Hooks::<ScenarioGame>::new(),
        &options,
        Some(&mut sink),
    )
    .unwrap();
    assert!(report.passed(), "{report}");
    assert_eq!(frames[5].handled, ["ui Executed GameplayCue.Ui.Ping on hero (local)"]);
    assert_eq!(
        frames[10].handled,
        [
            "glow instance Created GameplayCue.Ui.Glow.Blue on hero (local)",
            "glow OnActive GameplayCue.Ui.Glow.Blue on hero (local)",
            "glow WhileActive GameplayCue.Ui.Glow.Blue on hero (local)",
        ]
    );
    // Plain stepping confirms every frame at once: the handler hears that too.
    assert_eq!(
        frames[15].handled,
        ["hit Executed GameplayCue.Hit on dummy", "hit Confirmed GameplayCue.Hit on dummy"]
    );
    assert!(frames[25].handled.iter().all(|h| h.contains("(local)")), "{:?}", frames[25].handled);
    assert!(frames[0].handled.is_empty());
}

/// One vocabulary: a scenario's cue kinds accept the Rust names (`Added` as a cue record's
/// kind, `Play` as the presenter's burst call) besides `OnActive` and `Executed`, an unknown
/// kind's error lists the accepted spellings without naming a Rust type, and tags are named
/// like everything else (`Content::tag_name`).
#[test]
fn cue_kinds_accept_the_rust_names() {
    let text = |kind: &str| {
        format!(
            r###"(
    content: Inline(r#"(
        tags: ["GameplayCue.Burn", "GameplayCue.Hit"],
        effects: {{
            "Burn": (duration: Frames(10), cues: [(tag: "GameplayCue.Burn")]),
            "Hit": (cues: [(tag: "GameplayCue.Hit")]),
        }},
    )"#),
    entities: {{ "hero": () }},
    script: [ (frame: 2, do: ApplyEffect(effect: "Burn", on: "hero")),
              (frame: 3, do: ApplyEffect(effect: "Hit", on: "hero")) ],
    expect: [
        (frame: 2, that: Cue(tag: "GameplayCue.Burn", kind: {kind}, count: 1)),
        (frame: 3, that: Cue(tag: "GameplayCue.Hit", kind: Play, count: 1)),
        (frame: 3, that: Cue(tag: "GameplayCue.Hit", kind: Executed, count: 1)),
    ],
)"###
        )
    };
    let plain = RunOptions { modes: Some(vec![Mode::Plain]), ..RunOptions::default() };
    for kind in ["OnActive", "Added"] {
        let s = Scenario::from_str(&text(kind), "kinds.ron", None).unwrap();
        let report = run(&s, &plain).unwrap();
        assert!(report.passed(), "{kind}: {report}");
        let tag = s.content.tag("GameplayCue.Burn").unwrap();
        assert_eq!(s.content.tag_name(tag), s.content.tags().name(tag));
        assert_eq!(s.content.tag_name(tag), "GameplayCue.Burn");
    }
    let e = Scenario::from_str(&text("Add"), "kinds.ron", None).unwrap_err();
    assert!(!e.message.contains("Raw"), "{e}");
    assert!(e.message.contains("`Added`") && e.message.contains("`OnActive`"), "{e}");
}

/// A misspelt operation, check, cue kind, phase or event in a scenario is named with the
/// accepted spellings and a suggestion, never with the name of a Rust type.
#[test]
fn scenario_spelling_errors_name_no_rust_type() {
    let text = |op: &str, check: &str| {
        format!(
            r###"(
    content: Inline(r#"(
        tags: ["GameplayCue.Hit"],
        effects: {{ "Hit": (cues: [(tag: "GameplayCue.Hit")]) }},
    )"#),
    entities: {{ "hero": () }},
    script: [ (frame: 2, do: {op}) ],
    expect: [ (frame: 2, that: {check}) ],
)"###
        )
    };
    let good_op = r#"ApplyEffect(effect: "Hit", on: "hero")"#;
    let good_check = r#"Cue(tag: "GameplayCue.Hit", kind: Executed, count: 1)"#;
    let plain = RunOptions { modes: Some(vec![Mode::Plain]), ..RunOptions::default() };
    let s = Scenario::from_str(&text(good_op, good_check), "spelling.ron", None).unwrap();
    assert!(run(&s, &plain).unwrap().passed());
    for (op, check, wanted) in [
        (r#"ApplyEfect(effect: "Hit", on: "hero")"#, good_check, "`ApplyEffect`"),
        (good_op, r#"Cu(tag: "GameplayCue.Hit", kind: Executed, count: 1)"#, "`Cue`"),
        (good_op, r#"Cue(tag: "GameplayCue.Hit", kind: Executd, count: 1)"#, "`Executed`"),
    ] {
        let e = Scenario::from_str(&text(op, check), "spelling.ron", None).unwrap_err();
        assert!(!e.message.contains("Raw"), "{e}");
        assert!(e.message.contains(wanted), "{e}");
        assert!(e.message.contains("did you mean"), "{e}");
    }
}
