//! Malformed content: every problem is reported with its kind, its file, the line and column of
//! the offending key or value, the definition path and a helpful message.
//!
//! Positions follow the `locate` convention: a key segment (`effects.Burn.period`) points at the
//! key token, an index segment (`tags[1]`) at the start of the element. Syntax errors point where
//! `ron` stopped: at an unknown field's name, at a bad variant, at the start of a number, just
//! inside the quote of a bad number string, at the token after a missing comma, at the closing
//! bracket of a struct that misses a field, or at the end of a truncated file.

// To add a case, append a `Case` to the table of its topic (`syntax`, `names`,
// `attributes_and_curves`, `effect_rules`, `cue_entries`, `settings`): a unique `name`, the text of the one file
// (frozen as `effects.ron`; `with_vitals` adds the common attributes and tags), the expected
// `error` (kind, where it points, definition path) and fragments of its `message`. Each table is
// one test that lists every failing case by name. A case that needs several files, a builder call
// or a computed message gets its own function after the tables and asserts with `check`.

use crate::common::TempDir;
use At::{LineCol, Nth, Once};
use rollback_abilities::{Content, ContentBuilder, ContentError, ContentErrorKind as K};

/// The file name a table case is frozen under.
const FILE: &str = "effects.ron";

/// One malformed content file and everything its error must say.
struct Case {
    /// Names the case in a failure report.
    name: &'static str,
    /// The text of the one file, frozen as [`FILE`].
    text: &'static str,
    /// The expected kind, where the error points and its definition path (empty: none).
    error: (K, At<'static>, &'static str),
    /// Fragments the message must contain. A message that suggests a name ("did you mean") must
    /// list the suggestion among them, so a case without one asserts there is none.
    message: &'static [&'static str],
}

/// Where an error points in its file.
enum At<'a> {
    /// The start of the single occurrence of a needle.
    Once(&'a str),
    /// The start of the `n`th (0-based) occurrence of a needle.
    Nth(&'a str, usize),
    /// A 1-based line and column: where ron stops in a truncated or overlong text.
    LineCol(u32, u32),
}

impl At<'_> {
    /// The 1-based line and column (in chars) this names in `text`.
    fn resolve(&self, text: &str) -> Result<(u32, u32), String> {
        let (needle, nth) = match *self {
            Once(needle) => match text.matches(needle).count() {
                1 => (needle, 0),
                n => return Err(format!("{needle:?} occurs {n} times in the text, not once")),
            },
            Nth(needle, nth) => (needle, nth),
            LineCol(line, col) => return Ok((line, col)),
        };
        let Some((byte, _)) = text.match_indices(needle).nth(nth) else {
            return Err(format!("{needle:?} occurs fewer than {} times in the text", nth + 1));
        };
        let before = &text[..byte];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        Ok((line as u32, col as u32))
    }
}

/// Freezes each case's file and reports every case whose error differs, by name, in one panic.
fn run(table: &[Case]) {
    let mut failed = Vec::new();
    for case in table {
        let (kind, at, path) = &case.error;
        let built = ContentBuilder::new().file(FILE, case.text).build();
        let problems = match (built, at.resolve(case.text)) {
            (Ok(_), _) => vec!["the content froze without an error".to_string()],
            (Err(_), Err(problem)) => vec![problem],
            (Err(e), Ok(at)) => verify(&e, *kind, FILE, at, path, case.message),
        };
        if !problems.is_empty() {
            failed.push(format!("{}:\n    {}", case.name, problems.join("\n    ")));
        }
    }
    let count = failed.len();
    assert!(failed.is_empty(), "{count} of {} cases failed:\n{}", table.len(), failed.join("\n"));
}

/// Every way `e` differs from the expected kind, file, position, path and message fragments
/// (see [`Case::message`]), and from the Display that renders all of them.
fn verify(
    e: &ContentError,
    kind: K,
    file: &str,
    at: (u32, u32),
    path: &str,
    message: &[&str],
) -> Vec<String> {
    // Display renders all of it (an empty path is left out).
    let shown_path = if path.is_empty() { String::new() } else { format!("{path}: ") };
    let display = format!("{file}:{}:{}: {shown_path}{}", at.0, at.1, e.message);
    let fields = [
        ("kind", format!("{:?}", e.kind), format!("{kind:?}")),
        ("file", e.file.clone(), file.to_string()),
        ("line:col", format!("{}:{}", e.line, e.col), format!("{}:{}", at.0, at.1)),
        ("path", e.path.clone(), path.to_string()),
        ("display", e.to_string(), display),
    ];
    let mut problems: Vec<String> = fields
        .into_iter()
        .filter(|(_, got, expected)| got != expected)
        .map(|(what, got, expected)| format!("{what} is {got:?}, expected {expected:?}"))
        .collect();
    for fragment in message.iter().filter(|fragment| !e.message.contains(*fragment)) {
        problems.push(format!("the message lacks {fragment:?}"));
    }
    let suggests = |text: &str| text.contains("did you mean");
    if suggests(&e.message) && !message.iter().any(|fragment| suggests(fragment)) {
        problems.push("the message makes a suggestion the case does not expect".to_string());
    }
    if !problems.is_empty() {
        problems.push(format!("the error: {e}"));
    }
    problems
}

/// Asserts every part of an error (for the cases outside the tables).
#[track_caller]
fn check(e: &ContentError, kind: K, file: &str, at: (u32, u32), path: &str, message: &str) {
    let problems = verify(e, kind, file, at, path, &[message]);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The position of the `nth` occurrence of `needle` in `text`.
fn pos_nth(text: &str, needle: &str, nth: usize) -> (u32, u32) {
    Nth(needle, nth).resolve(text).unwrap_or_else(|problem| panic!("{problem}"))
}

/// The position of the single occurrence of `needle` in `text`.
fn pos(text: &str, needle: &str) -> (u32, u32) {
    Once(needle).resolve(text).unwrap_or_else(|problem| panic!("{problem}"))
}

/// Freezes one file named `effects.ron` and returns its error.
fn fail(text: &str) -> ContentError {
    fail_files(&[(FILE, text)])
}

/// Freezes several files and returns the error.
fn fail_files(files: &[(&str, &str)]) -> ContentError {
    let mut builder = ContentBuilder::new();
    for (name, text) in files {
        builder = builder.file(*name, *text);
    }
    match builder.build() {
        Ok(_) => panic!("content should not freeze: {files:?}"),
        Err(e) => e,
    }
}

/// [`VITALS`] with `rest` in place of its closing line (`rest` adds sections and closes the
/// file). Leaked, as tables hold `&'static str`: a few kilobytes per test run.
fn with_vitals(rest: &str) -> &'static str {
    VITALS.replace("\n)", rest).leak()
}

/// Attributes and tags most cases build on.
const VITALS: &str = r#"(
    tags: ["State.Stunned", "Data.Damage", "GameplayCue.Poison"],
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100, min: Const(0), max: Attr("MaxHealth")),
            "MaxHealth": (default: 100),
            "Armor": (default: 10),
        }),
    },
)"#;

// ---------------------------------------------------------------------------------------------
// RON syntax

// Long because it is a table of cases (content text and the error it must give), one per
// syntax mistake.
#[test]
fn syntax() {
    run(&[
        Case {
            name: "syntax_missing_comma_between_sections",
            text: r#"(
    tags: ["State.Stunned"]
    effects: {},
)"#,
            error: (K::Syntax, Once("effects"), "effects"),
            message: &["Expected comma"],
        },
        Case {
            // The `}` closes where `)` or `,` was expected: the open definition is named.
            name: "syntax_missing_paren_after_a_definition",
            text: r#"(
    effects: {
        "Burn": (
            duration: Frames(60),
            period: Frames(10)
    },
)"#,
            error: (K::Syntax, Once("}"), "effects.Burn"),
            message: &["Expected comma"],
        },
        Case {
            // ron reports where the text stops: just past the last token (the comma after
            // `Frames(60)`, line 5 column 33), before trailing whitespace.
            name: "syntax_truncated_file",
            text: TRUNCATED,
            error: (K::Syntax, LineCol(5, 34), "effects.Burn"),
            message: &["Unexpected end of RON", "before every bracket is closed"],
        },
        Case {
            // Without trailing whitespace ron points at the final comma, which follows `duration`.
            name: "syntax_truncated_file_without_trailing_whitespace",
            text: TRUNCATED.trim_end(),
            error: (K::Syntax, LineCol(5, 33), "effects.Burn.duration"),
            message: &["Unexpected end of RON"],
        },
        Case {
            name: "syntax_truncated_inside_a_value",
            text: "(\n    effects: {\n        \"Burn\": (\n            duration: Frames(6",
            error: (K::Syntax, Once("6"), "effects.Burn.duration[0]"),
            message: &["Expected closing `)`"],
        },
        Case {
            name: "syntax_trailing_characters_after_the_content",
            text: "(\n    tags: [\"State.Stunned\"],\n))\n",
            error: (K::Syntax, LineCol(3, 2), ""),
            message: &["trailing characters"],
        },
        Case {
            // A bare number where a time is meant: the unit must be said (frames or seconds).
            name: "bare_number_for_an_effect_duration",
            text: r#"(
    effects: { "Burn": (duration: 3) },
)"#,
            error: (K::Syntax, Once("3)"), "effects.Burn.duration"),
            message: &[
                "a number alone is not a duration",
                "`Frames(3)`",
                "`Seconds(3)`",
                "`Instant`",
                "`Infinite`",
            ],
        },
        Case {
            name: "bare_number_for_an_ability_end_after",
            text: r#"(
    abilities: { "Dash": (end_after: 12) },
)"#,
            error: (K::Syntax, Once("12"), "abilities.Dash.end_after"),
            message: &["a number alone is not a duration", "`Frames(12)`", "`Seconds(12)`"],
        },
        Case {
            name: "bare_decimal_for_a_period",
            text: r#"(
    effects: { "Burn": (duration: Frames(60), period: 0.5) },
)"#,
            error: (K::Syntax, Once("0.5"), "effects.Burn.period"),
            message: &["`Seconds(0.5)`", "`Frames(n)` takes a whole number of frames"],
        },
        Case {
            name: "bare_number_for_a_magnitude",
            text: r#"(
    attribute_sets: { "V": (attributes: { "Health": (default: 100) }) },
    effects: { "Hit": (modifiers: [(attribute: "Health", op: Add, magnitude: -10)]) },
)"#,
            error: (K::Syntax, Once("-10"), "effects.Hit.modifiers[0].magnitude"),
            message: &[
                "a number alone is not a magnitude",
                "`Scalable(coef: -10)`",
                "`SetByCaller(",
                "`Attribute((",
                "`Custom(calc:",
            ],
        },
        Case {
            // The full list stays after the suggestion.
            name: "unknown_top_level_section",
            text: r#"(
    tags: ["State.Stunned"],
    effect: {
        "Stun": (duration: Frames(30), granted_tags: ["State.Stunned"]),
    },
)"#,
            error: (K::Syntax, Once("effect:"), "effect"),
            message: &[
                "Unexpected field named `effect` in `content` (did you mean `effects`?), \
                 expected one of",
                "`abilities`",
                "`settings`",
            ],
        },
        Case {
            name: "unknown_field_in_an_effect",
            text: r#"(
    tags: ["State.Stunned"],
    effects: {
        "Stun": (
            durration: Frames(30),
            granted_tags: ["State.Stunned"],
        ),
    },
)"#,
            error: (K::Syntax, Once("durration"), "effects.Stun.durration"),
            message: &["Unexpected field named `durration` in `effect` (did you mean \
                        `duration`?), expected one of `inherits`, `duration`, `period`,"],
        },
        Case {
            name: "unknown_field_in_a_modifier",
            text: with_vitals(
                r#"
    effects: {
        "Poison": (
            duration: Seconds(5),
            period: Frames(60),
            modifiers: [
                (attribute: "Armor", op: Add, magnitude: Scalable(coef: -2)),
                (attribute: "Health", op: Add, magnitudee: Scalable(coef: -4)),
            ],
        ),
    },
)"#,
            ),
            error: (K::Syntax, Once("magnitudee"), "effects.Poison.modifiers[1].magnitudee"),
            message: &["Unexpected field named `magnitudee` in `modifier` (did you mean \
                        `magnitude`?), expected one of `attribute`"],
        },
        Case {
            // Nothing is near enough to suggest.
            name: "wrong_enum_variant_for_op",
            text: with_vitals(
                r#"
    effects: {
        "Heal": (modifiers: [(attribute: "Health", op: Plus, magnitude: Scalable(coef: 25))]),
    },
)"#,
            ),
            error: (K::Syntax, Once("Plus"), "effects.Heal.modifiers[0].op"),
            message: &[
                "Unexpected variant named `Plus`",
                "`Add`, `Multiply`, `Divide`, or `Override`",
            ],
        },
        Case {
            name: "wrong_enum_variant_for_duration",
            text: r#"(
    effects: {
        "Slow": (duration: Frame(90)),
    },
)"#,
            error: (K::Syntax, Once("Frame("), "effects.Slow.duration"),
            message: &["Unexpected variant named `Frame` in enum `duration` (did you mean \
                        `Frames`?), expected one of"],
        },
        Case {
            name: "missing_required_field_points_at_the_closing_bracket",
            text: with_vitals(
                r#"
    effects: {
        "Heal": (modifiers: [(attribute: "Health", op: Add)]),
    },
)"#,
            ),
            error: (K::Syntax, Once(")]"), "effects.Heal.modifiers[0]"),
            message: &["missing field named `magnitude` in `modifier`"],
        },
        Case {
            name: "attribute_magnitude_without_double_parentheses_gets_a_hint",
            text: with_vitals(
                r#"
    effects: {
        "Thorns": (
            duration: Infinite,
            modifiers: [(attribute: "Armor", op: Add,
                         magnitude: Attribute(attribute: "MaxHealth", side: Target))],
        ),
    },
)"#,
            ),
            error: (
                K::Syntax,
                Once("attribute: \"MaxHealth\""),
                "effects.Thorns.modifiers[0].magnitude.attribute",
            ),
            message: &[
                "Expected struct `attribute_magnitude` but found `attribute`",
                "Attribute((attribute:",
            ],
        },
        Case {
            // ron reports a bad string just inside its opening quote.
            name: "invalid_number_text",
            text: with_vitals(
                r#"
    effects: {
        "Weaken": (
            duration: Seconds(10),
            modifiers: [(attribute: "Armor", op: Multiply, magnitude: Scalable(coef: "1.2.3"))],
        ),
    },
)"#,
            ),
            error: (K::Syntax, Once("1.2.3\""), "effects.Weaken.modifiers[0].magnitude.coef"),
            message: &["\"1.2.3\" is not a valid decimal number"],
        },
        Case {
            name: "number_out_of_fixed_point_range",
            text: r#"(
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100),
            "Gold": (default: 3000000000),
        }),
    },
)"#,
            error: (K::Syntax, Once("3000000000"), "attribute_sets.Vitals.attributes.Gold.default"),
            message: &["out of the I32F32 range"],
        },
        Case {
            name: "integer_out_of_range_for_its_field",
            text: r#"(
    tags: ["State.Burning"],
    effects: {
        "Burn": (
            duration: Frames(600),
            granted_tags: ["State.Burning"],
            stacking: (kind: ByTarget, limit: 70000),
        ),
    },
)"#,
            error: (K::Syntax, Once("70000"), "effects.Burn.stacking.limit"),
            message: &["Integer is out of bounds"],
        },
    ]);
}

/// A file cut off inside an effect, after a trailing newline.
const TRUNCATED: &str = r#"(
    tags: ["State.Burning"],
    effects: {
        "Burn": (
            duration: Frames(60),
"#;

// ---------------------------------------------------------------------------------------------
// Names

#[test]
fn names() {
    run(&[
        Case {
            name: "unknown_attribute_with_suggestion",
            text: with_vitals(
                r#"
    effects: {
        "Poison": (
            duration: Seconds(5),
            period: Frames(60),
            modifiers: [(attribute: "Helth", op: Add, magnitude: Scalable(coef: -4))],
        ),
    },
)"#,
            ),
            error: (
                K::UnknownAttribute,
                Once("attribute: \"Helth\""),
                "effects.Poison.modifiers[0].attribute",
            ),
            message: &["unknown attribute \"Helth\" (did you mean \"Health\"?)"],
        },
        Case {
            name: "unknown_tag_with_suggestion",
            text: with_vitals(
                r#"
    effects: {
        "Stun": (duration: Frames(45), granted_tags: ["State.Stuned"]),
    },
)"#,
            ),
            error: (K::UnknownTag, Once("\"State.Stuned\""), "effects.Stun.granted_tags[0]"),
            message: &["unknown tag \"State.Stuned\" (did you mean \"State.Stunned\"?)"],
        },
        Case {
            name: "undeclared_tag_without_close_match",
            text: with_vitals(
                r#"
    effects: {
        "Fireball": (
            asset_tags: ["Data.Damage", "Ability.Fire.Ball"],
            modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -30))],
        ),
    },
)"#,
            ),
            error: (K::UnknownTag, Once("\"Ability.Fire.Ball\""), "effects.Fireball.asset_tags[1]"),
            message: &["unknown tag \"Ability.Fire.Ball\" (declare it in a `tags: [...]` list)"],
        },
        Case {
            name: "invalid_tag_name",
            text: r#"(
    tags: [
        "State.Stunned",
        "A..B",
    ],
)"#,
            error: (K::UnknownTag, Once("\"A..B\""), "tags[1]"),
            message: &["empty segment"],
        },
        Case {
            name: "unknown_curve_with_suggestion",
            text: with_vitals(
                r#"
    curves: { "PoisonDamage": (points: [(1, 4), (5, 12)]) },
    effects: {
        "Poison": (
            duration: Seconds(5),
            period: Frames(60),
            modifiers: [(attribute: "Health", op: Add,
                         magnitude: Scalable(coef: -1, curve: "PoisonDamge"))],
        ),
    },
)"#,
            ),
            error: (
                K::UnknownCurve,
                Once("curve: \"PoisonDamge\""),
                "effects.Poison.modifiers[0].magnitude.curve",
            ),
            message: &["unknown curve \"PoisonDamge\" (did you mean \"PoisonDamage\"?)"],
        },
    ]);
}

// ---------------------------------------------------------------------------------------------
// Attributes and curves

#[test]
fn attributes_and_curves() {
    // A level table may only set its own set's attributes, each once, in increasing level order.
    let hero = |levels: &str| -> &'static str {
        format!(
            "(\n    attribute_sets: {{\n        \"Hero\": (attributes: {{ \"Health\": (default: 1) }},\n            levels: [{levels}]),\n        \"Magic\": (attributes: {{ \"Mana\": (default: 1) }}),\n    }},\n)"
        )
        .leak()
    };
    run(&[
        Case {
            name: "attribute_level_table_with_an_unknown_attribute",
            text: hero(r#"(level: 1, values: { "Helth": 10 })"#),
            error: (
                K::UnknownAttribute,
                Once("\"Helth\""),
                "attribute_sets.Hero.levels[0].values.Helth",
            ),
            message: &["did you mean \"Health\""],
        },
        Case {
            name: "attribute_level_table_with_another_sets_attribute",
            text: hero(r#"(level: 1, values: { "Mana": 10 })"#),
            error: (
                K::InvalidValue,
                Once("\"Mana\": 10"),
                "attribute_sets.Hero.levels[0].values.Mana",
            ),
            message: &["attribute \"Mana\" belongs to set \"Magic\", not \"Hero\""],
        },
        Case {
            name: "attribute_level_table_out_of_order",
            text: hero(r#"(level: 5, values: { "Health": 10 }), (level: 2, values: {})"#),
            error: (K::InvalidValue, Once("level: 2"), "attribute_sets.Hero.levels[1].level"),
            message: &[
                "level 2 comes after level 5: list the rows in strictly increasing level order",
            ],
        },
        Case {
            // The path names the key; the locator points at its first occurrence in the row.
            name: "attribute_level_table_with_a_duplicate_value",
            text: hero(r#"(level: 1, values: { "Health": 10, "Health": 11 })"#),
            error: (
                K::Duplicate,
                Nth("\"Health\"", 1),
                "attribute_sets.Hero.levels[0].values.Health",
            ),
            message: &["attribute \"Health\" is given twice at level 1"],
        },
        Case {
            name: "curve_levels_must_increase",
            text: r#"(
    curves: {
        "FireDamage": (points: [(1, 10), (5, 30), (3, 20)]),
    },
)"#,
            error: (K::InvalidValue, Once("(3, 20)"), "curves.FireDamage.points[2]"),
            message: &["levels must increase strictly: level 3 follows level 5"],
        },
        Case {
            name: "empty_curve",
            text: r#"(
    curves: {
        "FireDamage": (interp: Step, points: []),
    },
)"#,
            error: (K::InvalidValue, Once("points"), "curves.FireDamage.points"),
            message: &["a curve needs at least one (level, value) point"],
        },
        Case {
            name: "attribute_bounding_itself",
            text: r#"(
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100, min: Const(0), max: Attr("Health")),
        }),
    },
)"#,
            error: (K::Cycle, Once("max:"), "attribute_sets.Vitals.attributes.Health.max"),
            message: &["attribute \"Health\" cannot bound itself"],
        },
        Case {
            name: "unknown_bound_attribute_with_suggestion",
            text: r#"(
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100, max: Attr("MaxHeath")),
            "MaxHealth": (default: 100),
        }),
    },
)"#,
            error: (
                K::UnknownAttribute,
                Once("max:"),
                "attribute_sets.Vitals.attributes.Health.max",
            ),
            message: &["unknown attribute \"MaxHeath\" (did you mean \"MaxHealth\"?)"],
        },
        Case {
            name: "min_greater_than_max",
            text: r#"(
    attribute_sets: {
        "Move": (attributes: {
            "MoveSpeed": (default: 600, min: Const(700), max: Const(650.5)),
        }),
    },
)"#,
            error: (K::InvalidValue, Once("min:"), "attribute_sets.Move.attributes.MoveSpeed.min"),
            message: &["min 700 is greater than max 650.5"],
        },
        Case {
            // `Ward` is clamped by `Shield`; the infinite effect makes `Shield` follow `Ward` live.
            name: "derived_attribute_cycle_through_a_live_capture",
            text: r#"(
    attribute_sets: {
        "Barrier": (attributes: {
            "Shield": (default: 0),
            "Ward": (default: 0, max: Attr("Shield")),
        }),
    },
    effects: {
        "Resonance": (
            duration: Infinite,
            modifiers: [
                (attribute: "Shield", op: Add,
                 magnitude: Attribute((attribute: "Ward", side: Target, snapshot: false))),
            ],
        ),
    },
)"#,
            error: (K::Cycle, Once("(attribute: \"Shield\""), "effects.Resonance.modifiers[0]"),
            message: &["derived attributes form a cycle: Shield → Ward → Shield"],
        },
    ]);
}

// ---------------------------------------------------------------------------------------------
// Durations, periods, combinations, capacities and inheritance

// Long because it is a table of cases (content text and the error it must give), one per
// rule broken.
#[test]
fn effect_rules() {
    // Nine modifiers: one more than an effect may have.
    // An instant effect reading 36 SetByCaller keys: Data.K0–K7 in its modifiers, K8–K35 in the
    // transient scoped modifiers of its four executions.
    let key = |i: usize| format!("SetByCaller(\"Data.K{i}\")");
    let tags: Vec<String> = (0..36).map(|i| format!("\"Data.K{i}\"")).collect();
    let mods: String = (0..8)
        .map(|i| format!("(attribute: \"Health\", op: Add, magnitude: {}),", key(i)))
        .collect();
    let execs: String = (0..4)
        .map(|x| {
            let scoped: String = (0..7)
                .map(|i| {
                    let k = 8 + 7 * x + i;
                    format!("(transient: \"Data.K{k}\", op: Add, magnitude: {}),", key(k))
                })
                .collect();
            format!("(calc: \"Exec\", modifiers: [{scoped}]),")
        })
        .collect();
    let many_keys = format!(
        "(\n    tags: [{}],\n    attribute_sets: {{ \"Vitals\": (attributes: {{ \"Health\": (default: 100) }}) }},\n    effects: {{ \"Combo\": (modifiers: [{mods}],\n        executions: [{execs}]) }},\n)",
        tags.join(", ")
    );
    let nine_mods: String = (0..9)
        .map(|i| {
            format!(
                "                (attribute: \"Armor\", op: Add, magnitude: Scalable(coef: {i})),\n"
            )
        })
        .collect();
    run(&[
        Case {
            name: "zero_frame_duration",
            text: r#"(
    effects: {
        "Blink": (duration: Frames(0)),
    },
)"#,
            error: (K::InvalidValue, Once("duration"), "effects.Blink.duration"),
            message: &["a duration must be at least 1 frame"],
        },
        Case {
            name: "negative_seconds_duration",
            text: r#"(
    effects: {
        "Blink": (duration: Seconds("-1")),
    },
)"#,
            error: (K::InvalidValue, Once("\"-1\""), "effects.Blink.duration[0]"),
            message: &["a duration cannot be negative"],
        },
        Case {
            name: "period_on_an_instant_effect",
            text: with_vitals(
                r#"
    effects: {
        "Bleed": (
            period: Frames(30),
            modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -2))],
        ),
    },
)"#,
            ),
            error: (K::InvalidCombination, Once("period"), "effects.Bleed.period"),
            message: &["an instant effect cannot be periodic"],
        },
        Case {
            name: "execute_on_application_without_period",
            text: r#"(
    effects: {
        "Regen": (duration: Seconds(10), execute_on_application: true),
    },
)"#,
            error: (
                K::InvalidCombination,
                Once("execute_on_application"),
                "effects.Regen.execute_on_application",
            ),
            message: &["execute_on_application needs a period"],
        },
        Case {
            name: "executions_on_a_non_periodic_duration_effect",
            text: r#"(
    effects: {
        "Curse": (
            duration: Seconds(8),
            executions: [(calc: "CurseDamage")],
        ),
    },
)"#,
            error: (K::InvalidCombination, Once("executions"), "effects.Curse.executions"),
            message: &["executions run only for instant effects or periodic executions"],
        },
        Case {
            name: "granted_tags_on_an_instant_effect",
            text: with_vitals(
                r#"
    effects: {
        "Bash": (
            modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -10))],
            granted_tags: ["State.Stunned"],
        ),
    },
)"#,
            ),
            error: (K::InvalidCombination, Once("granted_tags"), "effects.Bash.granted_tags"),
            message: &["an instant effect is never active, so `granted_tags` would never take \
                        effect (G-07)"],
        },
        Case {
            name: "stacking_on_an_instant_effect",
            text: with_vitals(
                r#"
    effects: {
        "Bash": (
            modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -10))],
            stacking: (kind: BySource, limit: 3),
        ),
    },
)"#,
            ),
            error: (K::InvalidCombination, Once("stacking"), "effects.Bash.stacking"),
            message: &["instant effects cannot stack"],
        },
        Case {
            name: "stack_limit_zero",
            text: r#"(
    effects: {
        "Rage": (duration: Seconds(4), stacking: (kind: ByTarget, limit: 0)),
    },
)"#,
            error: (K::InvalidValue, Once("limit"), "effects.Rage.stacking.limit"),
            message: &["the stack limit must be at least 1"],
        },
        Case {
            name: "cue_tag_outside_gameplay_cue",
            text: with_vitals(
                r#"
    effects: {
        "Stun": (
            duration: Frames(45),
            granted_tags: ["State.Stunned"],
            cues: [(tag: "State.Stunned")],
        ),
    },
)"#,
            ),
            error: (K::InvalidValue, Once("tag: \"State.Stunned\""), "effects.Stun.cues[0].tag"),
            message: &["cue tags must live under `GameplayCue.` (\"State.Stunned\" does not)"],
        },
        Case {
            name: "executed_cue_on_a_non_periodic_duration_effect",
            text: with_vitals(
                r#"
    effects: {
        "Poison": (
            duration: Seconds(5),
            modifiers: [(attribute: "Armor", op: Add, magnitude: Scalable(coef: -3))],
            cues: [(tag: "GameplayCue.Poison", events: Executed)],
        ),
    },
)"#,
            ),
            error: (K::InvalidCombination, Once("events"), "effects.Poison.cues[0].events"),
            message: &["`Executed` would never fire"],
        },
        Case {
            name: "transient_attribute_modified_by_a_duration_effect",
            text: r#"(
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100),
            "IncomingDamage": (default: 0, transient: true),
        }),
    },
    effects: {
        "Vulnerable": (
            duration: Seconds(3),
            modifiers: [(attribute: "IncomingDamage", op: Add, magnitude: Scalable(coef: 5))],
        ),
    },
)"#,
            error: (
                K::InvalidCombination,
                Once("attribute: \"IncomingDamage\""),
                "effects.Vulnerable.modifiers[0].attribute",
            ),
            message: &["\"IncomingDamage\" is a transient (meta) attribute"],
        },
        Case {
            name: "more_than_eight_modifiers",
            text: with_vitals(&format!(
                "\n    effects: {{\n        \"Fortify\": (\n            duration: Seconds(5),\n            modifiers: [\n{nine_mods}            ],\n        ),\n    }},\n)"
            )),
            error: (
                K::Capacity,
                Once("(attribute: \"Armor\", op: Add, magnitude: Scalable(coef: 8))"),
                "effects.Fortify.modifiers[8]",
            ),
            message: &["an effect may have at most 8 modifiers"],
        },
        Case {
            // 8 modifiers and 4 executions of 7 transient scoped modifiers read 36 keys. (A
            // world holds `WorldConfig::set_by_caller_per_spec` values per spec, 4 by default:
            // content reading more is refused by `World::new`, tests/features_capacities.rs.)
            name: "more_than_thirty_two_set_by_caller_keys",
            text: many_keys.leak(),
            error: (K::Capacity, Once("executions"), "effects.Combo.executions"),
            message: &["the effect reads 36 SetByCaller keys; at most 32 are allowed"],
        },
        Case {
            name: "inheritance_from_an_unknown_effect",
            text: r#"(
    effects: {
        "Poison": (duration: Seconds(5)),
        "StrongPoison": (inherits: "Poisen"),
    },
)"#,
            error: (K::UnknownEffect, Once("inherits"), "effects.StrongPoison.inherits"),
            message: &["inherits from unknown effect \"Poisen\" (did you mean \"Poison\"?)"],
        },
        Case {
            name: "inheritance_cycle",
            text: r#"(
    effects: {
        "Burn": (inherits: "Ignite", duration: Frames(60)),
        "Ignite": (inherits: "Burn"),
    },
)"#,
            error: (K::Cycle, Once("inherits: \"Ignite\""), "effects.Burn.inherits"),
            message: &["inheritance cycle: Burn → Ignite → Burn"],
        },
    ]);
}

// ---------------------------------------------------------------------------------------------
// Cue entries: a plain tag string or the struct form, on effects and abilities alike

#[test]
fn cue_entries() {
    run(&[
        Case {
            name: "plain_effect_cue_outside_gameplay_cue",
            text: with_vitals(
                r#"
    effects: {
        "Stun": (duration: Frames(45), granted_tags: ["State.Stunned"], cues: ["State.Stunned"]),
    },
)"#,
            ),
            error: (K::InvalidValue, Nth("\"State.Stunned\"", 2), "effects.Stun.cues[0]"),
            message: &["cue tags must live under `GameplayCue.` (\"State.Stunned\" does not)"],
        },
        Case {
            name: "struct_ability_cue_outside_gameplay_cue",
            text: with_vitals(
                r#"
    abilities: {
        "Dash": (cues: [(tag: "State.Stunned")]),
    },
)"#,
            ),
            error: (K::InvalidValue, Once("tag: \"State.Stunned\""), "abilities.Dash.cues[0].tag"),
            message: &["cue tags must live under `GameplayCue.` (\"State.Stunned\" does not)"],
        },
        Case {
            name: "plain_ability_cue_with_an_unknown_tag",
            text: with_vitals(
                r#"
    abilities: {
        "Dash": (cues: ["GameplayCue.Poisn"]),
    },
)"#,
            ),
            error: (K::UnknownTag, Once("\"GameplayCue.Poisn\""), "abilities.Dash.cues[0]"),
            message: &["GameplayCue.Poisn", "did you mean \"GameplayCue.Poison\""],
        },
        Case {
            name: "ability_cue_with_a_magnitude_attribute",
            text: with_vitals(
                r#"
    abilities: {
        "Dash": (cues: [(tag: "GameplayCue.Poison", magnitude_attribute: "Health")]),
    },
)"#,
            ),
            error: (
                K::InvalidCombination,
                Once("magnitude_attribute"),
                "abilities.Dash.cues[0].magnitude_attribute",
            ),
            message: &["an ability's cue has no magnitude to fill", "on the effect"],
        },
        Case {
            name: "executed_ability_cue",
            text: with_vitals(
                r#"
    abilities: {
        "Dash": (cues: [(tag: "GameplayCue.Poison", events: Executed)]),
    },
)"#,
            ),
            error: (K::InvalidCombination, Once("events"), "abilities.Dash.cues[0].events"),
            message: &["an ability's cue is persistent", "`Executed` would never fire"],
        },
        Case {
            name: "ability_cue_with_an_unknown_field",
            text: with_vitals(
                r#"
    abilities: {
        "Dash": (cues: [(tag: "GameplayCue.Poison", colour: 3)]),
    },
)"#,
            ),
            error: (K::Syntax, Once("colour"), "abilities.Dash.cues[0].colour"),
            message: &["colour", "tag", "events", "magnitude_attribute"],
        },
        Case {
            name: "effect_cue_given_a_number",
            text: with_vitals(
                r#"
    effects: {
        "Stun": (duration: Frames(45), cues: [7]),
    },
)"#,
            ),
            error: (K::Syntax, Once("7]"), "effects.Stun.cues[0]"),
            message: &["a tag string such as \"GameplayCue.Hit\"", "(tag: "],
        },
    ]);
}

// ---------------------------------------------------------------------------------------------
// Settings

#[test]
fn settings() {
    run(&[Case {
        name: "tick_rate_zero",
        text: "(\n    settings: (\n        tick_rate: 0,\n    ),\n)",
        error: (K::InvalidValue, LineCol(3, 9), "settings.tick_rate"),
        message: &["the tick rate must be at least 1"],
    }]);
}

// ---------------------------------------------------------------------------------------------
// Cases outside the tables: several files, a computed message, a position that may be one of two,
// a builder call or a directory instead of a file, and generated input.

#[test]
fn function_name_used_as_two_kinds() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Smite": (
            modifiers: [(attribute: "Health", op: Add, magnitude: Custom(calc: "Holy", coef: -1))],
        ),
        "Judgement": (executions: [(calc: "Holy")]),
    },
)"#,
    );
    let e = fail(&text);
    let (line, col) = pos(&text, "magnitude: Custom");
    check(
        &e,
        K::FunctionKind,
        "effects.ron",
        pos(&text, "calc: \"Holy\")]"),
        "effects.Judgement.executions[0].calc",
        &format!(
            "execution here but as a magnitude calculation at \
             effects.ron:{line}:{col} (effects.Smite.modifiers[0].magnitude)"
        ),
    );
    assert!(e.message.starts_with("\"Holy\" is used as a"), "{e}");
}

#[test]
fn duplicate_effect_across_two_files() {
    let a = r#"(
    effects: {
        "Haste": (duration: Seconds(3)),
        "Burn": (duration: Frames(60)),
    },
)"#;
    let b = r#"(
    tags: ["State.Burning"],
    effects: {
        "Burn": (duration: Frames(90), granted_tags: ["State.Burning"]),
    },
)"#;
    let e = fail_files(&[("a.ron", a), ("b.ron", b)]);
    let (line, col) = pos(a, "\"Burn\"");
    check(
        &e,
        K::Duplicate,
        "b.ron",
        pos(b, "\"Burn\""),
        "effects.Burn",
        &format!(
            "\"Burn\" is defined twice; the first definition is at a.ron:{line}:{col} (effects.Burn)"
        ),
    );
}

#[test]
fn duplicate_attribute_across_two_sets() {
    let text = r#"(
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100),
            "Stamina": (default: 50),
        }),
        "Combat": (attributes: {
            "Armor": (default: 5),
            "Stamina": (default: 80),
        }),
    },
)"#;
    let e = fail(text);
    // Both places are named: the error points at one definition (with its own position) and
    // the message gives the other's file, line, column and path. (Sets are resolved in name
    // order, so today the error is at `Vitals` and `Combat` is called the first definition.)
    let vitals = ("attribute_sets.Vitals.attributes.Stamina", pos_nth(text, "\"Stamina\"", 0));
    let combat = ("attribute_sets.Combat.attributes.Stamina", pos_nth(text, "\"Stamina\"", 1));
    let (here, first) = if e.path == vitals.0 { (vitals, combat) } else { (combat, vitals) };
    check(
        &e,
        K::Duplicate,
        "effects.ron",
        here.1,
        here.0,
        &format!(
            "attribute \"Stamina\" is defined twice (attribute names are global); the first \
             definition is at effects.ron:{}:{} ({})",
            first.1.0, first.1.1, first.0
        ),
    );
}

#[test]
fn settings_given_in_two_files() {
    let a = "(\n    settings: (tick_rate: 60),\n    tags: [\"State.Stunned\"],\n)";
    let b = "(\n    tags: [\"State.Rooted\"],\n    settings: (default_mul_policy: GasCompat),\n)";
    let e = fail_files(&[("a.ron", a), ("b.ron", b)]);
    let (line, col) = pos(a, "settings");
    check(
        &e,
        K::Duplicate,
        "b.ron",
        pos(b, "settings"),
        "settings",
        &format!("settings are given twice; the first are at a.ron:{line}:{col} (settings)"),
    );
}

#[test]
fn derived_attribute_cycle_closed_by_a_clamp_is_located() {
    // The classic: Health is clamped by MaxHealth and an aura makes MaxHealth follow Health.
    // Whichever edge closes the cycle, the error must say where (the modifier that creates it
    // or the clamp bound it runs through).
    let text = r#"(
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100, max: Attr("MaxHealth")),
            "MaxHealth": (default: 100),
        }),
    },
    effects: {
        "Overgrowth": (
            duration: Infinite,
            modifiers: [
                (attribute: "MaxHealth", op: Add,
                 magnitude: Attribute((attribute: "Health", side: Target, coef: 0.1))),
            ],
        ),
    },
)"#;
    let e = fail(text);
    assert_eq!(e.kind, K::Cycle, "{e}");
    assert_eq!(e.file, "effects.ron", "{e}");
    assert!(e.message.contains("derived attributes form a cycle"), "{e}");
    let candidates = [
        ("effects.Overgrowth.modifiers[0]", pos(text, "(attribute: \"MaxHealth\"")),
        ("attribute_sets.Vitals.attributes.Health.max", pos(text, "max:")),
    ];
    assert!(
        candidates.iter().any(|(path, at)| e.path == *path && (e.line, e.col) == *at),
        "the cycle error must name the modifier or the bound with its position: {e:?}"
    );
}

#[test]
fn clamp_cycle_between_two_attributes_is_located() {
    let text = r#"(
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100, max: Attr("MaxHealth")),
            "MaxHealth": (default: 100, min: Attr("Health")),
        }),
    },
)"#;
    let e = fail(text);
    assert_eq!(e.kind, K::Cycle, "{e}");
    assert_eq!(e.file, "effects.ron", "{e}");
    let candidates = [
        ("attribute_sets.Vitals.attributes.Health.max", pos(text, "max:")),
        ("attribute_sets.Vitals.attributes.MaxHealth.min", pos(text, "min:")),
    ];
    assert!(
        candidates.iter().any(|(path, at)| e.path == *path && (e.line, e.col) == *at),
        "the cycle error must name one of the bounds with its position: {e:?}"
    );
}

#[test]
fn clamp_cycle_in_a_second_file_names_that_file() {
    let a = "(\n    tags: [\"State.Stunned\"],\n)";
    let b = r#"(
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100, max: Attr("MaxHealth")),
            "MaxHealth": (default: 100, min: Attr("Health")),
        }),
    },
)"#;
    let e = fail_files(&[("a.ron", a), ("b.ron", b)]);
    assert_eq!(e.kind, K::Cycle, "{e}");
    assert_eq!(e.file, "b.ron", "the cycle is in b.ron: {e:?}");
}

#[test]
fn inline_content_is_named_inline() {
    let e = Content::from_ron_str("(tags: [\"A..B\"])").expect_err("invalid tag");
    check(&e, K::UnknownTag, "<inline>", (1, 9), "tags[0]", "empty segment");
}

/// A name echoed in an error is cut to 80 characters and its length: a 1 MB tag name makes a
/// message of a few hundred bytes (it used to hold the whole megabyte, and a 200 MB name a
/// 200 MB message), wherever the name shows up: an undeclared tag, an invalid tag name, a definition
/// key in the path, an unknown field, a scenario's entity, a lookup from code.
#[test]
fn long_names_are_cut_in_messages() {
    let long = "A".repeat(1 << 20);
    let cut = format!("\"{}… (1048576 bytes)\"", "A".repeat(80));
    let short = |e: &dyn std::fmt::Display, what: &str| {
        let text = e.to_string();
        assert!(text.len() < 1000, "{what}: a {} byte message: {}", text.len(), &text[..1000]);
        text
    };

    let undeclared =
        format!("(effects: {{ \"E\": (duration: Frames(3), granted_tags: [\"{long}\"]) }})");
    let e = fail(&undeclared);
    assert_eq!(e.kind, K::UnknownTag);
    let text = short(&e, "undeclared tag");
    assert!(text.contains(&format!("unknown tag {cut} (declare it")), "{text}");

    let invalid = format!("(tags: [\"{long}..B\"])");
    let text = short(&fail(&invalid), "invalid tag name");
    assert!(text.contains("invalid tag name \"AAAA") && text.contains("(1048579 bytes)"), "{text}");

    // A definition's key is cut in the error's path too.
    let key = format!("(effects: {{ \"{long}\": (duration: Frames(0)) }})");
    let e = fail(&key);
    assert!(e.path.starts_with("effects.AAAA") && e.path.ends_with("… (1048576 bytes).duration"));
    short(&e, "definition key");

    let field = format!("(effects: {{ \"E\": ({}: Frames(3)) }})", "d".repeat(1 << 20));
    let e = fail(&field);
    assert_eq!(e.kind, K::Syntax);
    let text = short(&e, "unknown field");
    assert!(text.contains("Unexpected field named `dddd") && text.contains("`duration`"), "{text}");

    let content = Content::from_ron_str("(tags: [\"State.Stunned\"])").unwrap();
    let text = short(&content.tag(&long).unwrap_err(), "lookup from code");
    assert!(text.contains(&format!("no tag named {cut}")), "{text}");

    let scenario = format!(
        "(content: Inline(\"()\"), players: 1, entities: {{ \"hero\": () }},
          script: [(frame: 1, do: AddTag(on: \"{long}\", tag: \"X\"))])"
    );
    let dir = TempDir::new("long_names");
    dir.write("long.ron", &scenario);
    let e = rollback_abilities::scenario::Scenario::load(dir.join("long.ron")).unwrap_err();
    let text = short(&e, "scenario entity");
    assert!(text.contains(&format!("no entity named {cut}")), "{text}");
}

// ---------------------------------------------------------------------------------------------
// Directories and the content hash

/// A directory that does not exist is an I/O error that names it.
#[test]
fn load_dir_missing_directory_is_io() {
    let dir = std::env::temp_dir()
        .join(format!("rollback_abilities_content_errors_missing_{}", std::process::id()));
    assert!(!dir.exists());
    let e = Content::load_dir(&dir).expect_err("missing directory");
    assert_eq!(e.kind, K::Io, "{e}");
    assert_eq!(e.file, dir.display().to_string());
    assert!(e.message.contains("cannot read"), "{e}");
}

#[test]
fn load_dir_empty_directory_is_io() {
    let dir = TempDir::new("empty");
    // A file that is not `*.ron` does not count.
    dir.write("notes.txt", "not content");
    let e = Content::load_dir(dir.path()).expect_err("empty directory");
    assert_eq!(e.kind, K::Io, "{e}");
    assert_eq!(e.file, dir.path().display().to_string());
    assert!(e.message.contains("no *.ron content files"), "{e}");
}

#[test]
fn load_dir_reports_errors_with_the_file_path() {
    let dir = TempDir::new("bad");
    dir.write("a_tags.ron", "(tags: [\"State.Stunned\"])");
    let bad = "(\n    effects: {\n        \"Stun\": (durration: Frames(9)),\n    },\n)";
    dir.write("b_effects.ron", bad);
    let e = Content::load_dir(dir.path()).expect_err("bad file");
    let file = dir.path().join("b_effects.ron").display().to_string();
    assert_eq!(pos(bad, "durration"), (3, 18));
    let message = "Unexpected field named `durration` in `effect` (did you mean `duration`?)";
    check(&e, K::Syntax, &file, (3, 18), "effects.Stun.durration", message);
}

const TAGS_AND_ATTRS: &str = r#"(
    settings: (tick_rate: 60, default_mul_policy: Compound),
    tags: ["State.Debuff.Stun", "GameplayCue.Poison", "Data.Damage"],
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100, min: Const(0), max: Attr("MaxHealth")),
            "MaxHealth": (default: 100),
        }),
        "Combat": (attributes: { "Armor": (default: 5) }),
    },
)"#;

const CURVES_AND_EFFECTS: &str = r#"(
    curves: { "PoisonDamage": (points: [(1, 4), (5, 12)]) },
    effects: {
        "Poison": (
            duration: Seconds(5),
            period: Frames(60),
            modifiers: [(attribute: "Health", op: Add,
                         magnitude: Scalable(coef: -1, curve: "PoisonDamage"))],
            stacking: (kind: ByTarget, limit: 3),
            cues: [(tag: "GameplayCue.Poison")],
        ),
        "Stun": (duration: Frames(45), granted_tags: ["State.Debuff.Stun"]),
    },
)"#;

/// The same definitions as the two files above, in one file and in another order.
const ALL_IN_ONE_REORDERED: &str = r#"(
    effects: {
        "Stun": (duration: Frames(45), granted_tags: ["State.Debuff.Stun"]),
        "Poison": (
            cues: [(tag: "GameplayCue.Poison")],
            stacking: (limit: 3, kind: ByTarget),
            modifiers: [(op: Add, attribute: "Health",
                         magnitude: Scalable(curve: "PoisonDamage", coef: -1))],
            period: Frames(60),
            duration: Seconds(5),
        ),
    },
    curves: { "PoisonDamage": (points: [(1, 4), (5, 12)]) },
    attribute_sets: {
        "Combat": (attributes: { "Armor": (default: 5) }),
        "Vitals": (attributes: {
            "MaxHealth": (default: 100),
            "Health": (default: 100, min: Const(0), max: Attr("MaxHealth")),
        }),
    },
    tags: ["Data.Damage", "GameplayCue.Poison", "State.Debuff.Stun"],
    settings: (default_mul_policy: Compound, tick_rate: 60),
)"#;

#[test]
fn content_hash_is_stable_across_files_and_order() {
    let one = ContentBuilder::new()
        .file("all.ron", ALL_IN_ONE_REORDERED)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));

    let dir = TempDir::new("valid");
    dir.write("10_tags.ron", TAGS_AND_ATTRS);
    dir.write("20_effects.ron", CURVES_AND_EFFECTS);
    let from_dir = Content::load_dir(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(from_dir.hash(), one.hash(), "two files vs one file");
    assert_eq!(from_dir.canonical_text(), one.canonical_text());

    // The files in the other order (file names decide the order in a directory).
    let swapped = TempDir::new("swapped");
    swapped.write("10_effects.ron", CURVES_AND_EFFECTS);
    swapped.write("20_tags.ron", TAGS_AND_ATTRS);
    let from_swapped = Content::load_dir(swapped.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(from_swapped.hash(), one.hash(), "file order");

    let built = ContentBuilder::new()
        .file("b.ron", CURVES_AND_EFFECTS)
        .file("a.ron", TAGS_AND_ATTRS)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(built.hash(), one.hash(), "builder order");

    // One number changed: a different hash.
    let changed = ContentBuilder::new()
        .file("a.ron", TAGS_AND_ATTRS)
        .file("b.ron", CURVES_AND_EFFECTS.replace("(5, 12)", "(5, 13)"))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(changed.hash(), one.hash(), "a changed curve point");
    let changed = ContentBuilder::new()
        .file("a.ron", TAGS_AND_ATTRS.replace("\"Armor\": (default: 5)", "\"Armor\": (default: 6)"))
        .file("b.ron", CURVES_AND_EFFECTS)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(changed.hash(), one.hash(), "a changed default");
}

// ---------------------------------------------------------------------------------------------
// Robustness

/// A moderately rich valid content text (with a few multibyte chars in comments).
const RICH: &str = r#"#![enable(implicit_some)]
// Content for the robustness smoke test — ünïcödé 🎉 in comments.
(
    settings: (tick_rate: 60, default_mul_policy: Compound, max_cascade_steps: 128),
    tags: ["State.Debuff.Stun", "State.Debuff.Slow", "GameplayCue.Poison", "GameplayCue.Hit",
           "Data.Damage", "Immune.Poison"],
    tag_aliases: { "State.Stunned": "State.Debuff.Stun" },
    attribute_sets: {
        "Vitals": (
            attributes: {
                "Health": (default: 100, min: Const(0), max: Attr("MaxHealth")),
                "MaxHealth": (default: "100.5"),
                "Damage": (default: 0, transient: true),
            },
            post_execute: "ApplyDamage",
        ),
        "Move": (attributes: { "MoveSpeed": (default: 600, mul_policy: GasCompat,
                                              filter: MostNegativeAllPositive) }),
    },
    curves: {
        "PoisonDamage": (points: [(1, 4), (5, 12.25)]),
        "SlowFactor": (interp: Step, points: [(1, 0.9), (3, 0.75)]),
    },
    effects: {
        "Poison": (
            duration: Seconds(4.15),
            period: Frames(60),
            execute_on_application: true,
            modifiers: [(attribute: "Health", op: Add,
                         magnitude: Scalable(coef: -1, curve: "PoisonDamage"))],
            stacking: (kind: ByTarget, limit: 3, refresh: Never, expiration: RemoveOneAndRefresh),
            cues: [(tag: "GameplayCue.Poison", magnitude_attribute: "Health")],
            application_requirements: (ignore: ["Immune.Poison"]),
        ),
        "StrongPoison": (inherits: "Poison", asset_tags: ["Data.Damage"]),
        "Slow": (
            duration: Frames(90),
            modifiers: [(attribute: "MoveSpeed", op: Multiply,
                         magnitude: Scalable(coef: 1, curve: "SlowFactor"))],
            granted_tags: ["State.Debuff.Slow"],
            ongoing_requirements: (query: NoTags(["State.Debuff.Stun"])),
        ),
        "Hit": (
            modifiers: [
                (attribute: "Damage", op: Add, magnitude: SetByCaller("Data.Damage")),
                (attribute: "Damage", op: Add,
                 magnitude: Attribute((attribute: "MoveSpeed", side: Source, coef: 0.01))),
            ],
            executions: [(calc: "Crit")],
            cues: [(tag: "GameplayCue.Hit")],
        ),
    },
)
"#;

#[test]
fn rich_content_is_valid() {
    let c = Content::from_ron_str(RICH).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.effect_defs().len(), 4);
}

/// Asserts the result of freezing arbitrary text is Ok or a well-formed error.
fn assert_well_formed(text: &str) {
    if let Err(e) = Content::from_ron_str(text) {
        assert!(!e.message.is_empty(), "empty message for {text:?}: {e:?}");
        assert!(!e.file.is_empty(), "empty file for {text:?}: {e:?}");
    }
}

#[test]
fn no_input_panics() {
    // Every prefix (by char boundary).
    for (end, _) in RICH.char_indices() {
        assert_well_formed(&RICH[..end]);
    }
    // 200 deterministic single-byte mutations (a 64-bit LCG, Knuth's MMIX constants).
    const BYTES: &[u8] = b"()[]{},:\"'#/*\\-.0123456789eE_ aZ\n\x00\xff\xc3";
    let mut state: u64 = 0x0123_4567_89AB_CDEF;
    let mut next = move || {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    for _ in 0..200 {
        let mut bytes = RICH.as_bytes().to_vec();
        let at = (next() as usize) % bytes.len();
        bytes[at] = BYTES[(next() as usize) % BYTES.len()];
        let text = String::from_utf8_lossy(&bytes);
        assert_well_formed(&text);
    }
}

/// `fn main() -> Result<(), Box<dyn Error>>` prints the `Debug` of the error it returns: the
/// public error types print their readable message there (`{:#?}` keeps the fields of a
/// located error).
#[test]
fn errors_returned_from_main_print_their_message() {
    use rollback_abilities::scenario::{Scenario, ScenarioGame};
    use rollback_abilities::{Hooks, World, WorldConfig};
    use std::error::Error;
    use std::sync::Arc;

    fn content() -> Result<(), Box<dyn Error>> {
        Content::from_ron_str("(\n  effects: { \"Hit\": (durration: Frames(1)) },\n)")?;
        Ok(())
    }
    fn world() -> Result<(), Box<dyn Error>> {
        let content =
            Arc::new(Content::from_ron_str(r#"(abilities: { "Dash": (behaviour: "Dash") })"#)?);
        World::<ScenarioGame>::new(content, &Hooks::new(), WorldConfig::default())?;
        Ok(())
    }
    fn scenario() -> Result<(), Box<dyn Error>> {
        Scenario::from_str("(content: Inline(\"()\"), players: 0)", "bad.ron", None)?;
        Ok(())
    }
    for (name, result) in [("content", content()), ("world", world()), ("scenario", scenario())] {
        let e = result.expect_err(name);
        let debug = format!("{e:?}");
        assert_eq!(debug, e.to_string(), "{name}");
        assert!(!debug.contains("kind:") && !debug.contains("{ "), "{name}: {debug}");
    }
    let e =
        Content::from_ron_str("(\n  effects: { \"Hit\": (durration: Frames(1)) },\n)").unwrap_err();
    assert!(e.to_string().starts_with("<inline>:2:"), "{e}");
    let fields = format!("{e:#?}");
    assert!(fields.contains("kind: Syntax") && fields.contains("line: 2"), "{fields}");
}

/// A function registered under a name that differs in case or spelling from the content's is
/// suggested, by the world and by the scenario runner.
#[test]
fn a_hook_name_in_another_case_is_suggested() {
    use rollback_abilities::scenario::{self, Scenario, ScenarioGame};
    use rollback_abilities::{Behaviour, Hooks, World, WorldConfig};
    use std::sync::Arc;

    let text = r#"(abilities: { "Dash": (behaviour: "Dash", end_after: Frames(1)) })"#;
    let hooks = Hooks::<ScenarioGame>::new().behaviour("dash", Behaviour::default());
    let e = World::new(Arc::new(Content::from_ron_str(text).unwrap()), &hooks, Default::default())
        .unwrap_err();
    assert!(e.to_string().contains("(did you mean \"dash\", registered as a"), "{e}");
    let hooks = Hooks::<ScenarioGame>::new().behaviour("Dahs", Behaviour::default());
    let e =
        World::new(Arc::new(Content::from_ron_str(text).unwrap()), &hooks, WorldConfig::default())
            .unwrap_err();
    assert!(e.to_string().contains("did you mean \"Dahs\""), "{e}");

    let s = Scenario::from_str(
        &format!("(content: Inline(r##\"{text}\"##), entities: {{ \"hero\": () }})"),
        "dash.ron",
        None,
    )
    .unwrap();
    let e = scenario::run_with_hooks(&s, &hooks, &Default::default(), None).unwrap_err();
    assert!(e.message.contains("behaviour \"Dash\" (did you mean \"Dahs\"?)"), "{e}");
}
