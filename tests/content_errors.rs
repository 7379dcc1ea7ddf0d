//! Malformed content: every problem is reported with its kind, its file, the line and column of
//! the offending key or value, the definition path and a helpful message.
//!
//! Positions follow the `locate` convention: a key segment (`effects.Burn.period`) points at the
//! key token, an index segment (`tags[1]`) at the start of the element. Syntax errors point where
//! `ron` stopped: at an unknown field's name, at a bad variant, at the start of a number, just
//! inside the quote of a bad number string, at the token after a missing comma, at the closing
//! bracket of a struct that misses a field, or at the end of a truncated file.

use crate::common::TempDir;
use rollback_abilities::{Content, ContentBuilder, ContentError, ContentErrorKind as K};

/// Freezes one file named `effects.ron` and returns its error.
fn fail(text: &str) -> ContentError {
    fail_files(&[("effects.ron", text)])
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

/// The 1-based line and column (in chars) of the `nth` occurrence of `needle` in `text`.
fn pos_nth(text: &str, needle: &str, nth: usize) -> (u32, u32) {
    let Some((byte, _)) = text.match_indices(needle).nth(nth) else {
        panic!("{needle:?} occurs fewer than {} times", nth + 1)
    };
    let before = &text[..byte];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line as u32, col as u32)
}

/// The position of the single occurrence of `needle` in `text`.
fn pos(text: &str, needle: &str) -> (u32, u32) {
    assert_eq!(text.matches(needle).count(), 1, "{needle:?} must occur exactly once");
    pos_nth(text, needle, 0)
}

/// Asserts every part of an error.
#[track_caller]
fn check(e: &ContentError, kind: K, file: &str, at: (u32, u32), path: &str, message: &str) {
    assert_eq!(e.kind, kind, "kind of: {e}");
    assert_eq!(e.file, file, "file of: {e}");
    assert_eq!((e.line, e.col), at, "line:col of: {e}");
    assert_eq!(e.path, path, "path of: {e}");
    assert!(e.message.contains(message), "message of: {e}\n  should contain: {message}");
    // Display renders all of it (an empty path is left out).
    let path = if path.is_empty() { String::new() } else { format!("{path}: ") };
    assert_eq!(e.to_string(), format!("{file}:{}:{}: {path}{}", at.0, at.1, e.message));
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

/// A level table may only set its own set's attributes, each once, in increasing level order.
#[test]
fn attribute_level_tables_are_validated() {
    let base = |levels: &str| {
        format!(
            "(\n    attribute_sets: {{\n        \"Hero\": (attributes: {{ \"Health\": (default: 1) }},\n            levels: [{levels}]),\n        \"Magic\": (attributes: {{ \"Mana\": (default: 1) }}),\n    }},\n)"
        )
    };
    let text = base(r#"(level: 1, values: { "Helth": 10 })"#);
    let e = fail(&text);
    check(
        &e,
        K::UnknownAttribute,
        "effects.ron",
        pos(&text, "\"Helth\""),
        "attribute_sets.Hero.levels[0].values.Helth",
        "did you mean \"Health\"",
    );
    let text = base(r#"(level: 1, values: { "Mana": 10 })"#);
    let e = fail(&text);
    check(
        &e,
        K::InvalidValue,
        "effects.ron",
        pos(&text, "\"Mana\": 10"),
        "attribute_sets.Hero.levels[0].values.Mana",
        "attribute \"Mana\" belongs to set \"Magic\", not \"Hero\"",
    );
    let text = base(r#"(level: 5, values: { "Health": 10 }), (level: 2, values: {})"#);
    let e = fail(&text);
    check(
        &e,
        K::InvalidValue,
        "effects.ron",
        pos(&text, "level: 2"),
        "attribute_sets.Hero.levels[1].level",
        "level 2 comes after level 5: list the rows in strictly increasing level order",
    );
    let text = base(r#"(level: 1, values: { "Health": 10, "Health": 11 })"#);
    let e = fail(&text);
    check(
        &e,
        K::Duplicate,
        "effects.ron",
        // The path names the key; the locator points at its first occurrence in the row.
        pos_nth(&text, "\"Health\"", 1),
        "attribute_sets.Hero.levels[0].values.Health",
        "attribute \"Health\" is given twice at level 1",
    );
}

#[test]
fn syntax_missing_comma_between_sections() {
    let text = r#"(
    tags: ["State.Stunned"]
    effects: {},
)"#;
    let e = fail(text);
    check(&e, K::Syntax, "effects.ron", pos(text, "effects"), "effects", "Expected comma");
}

#[test]
fn syntax_missing_paren_after_a_definition() {
    let text = r#"(
    effects: {
        "Burn": (
            duration: Frames(60),
            period: Frames(10)
    },
)"#;
    // The `}` closes where `)` or `,` was expected: the open definition is named.
    let e = fail(text);
    check(&e, K::Syntax, "effects.ron", pos(text, "}"), "effects.Burn", "Expected comma");
}

#[test]
fn syntax_truncated_file() {
    let text = r#"(
    tags: ["State.Burning"],
    effects: {
        "Burn": (
            duration: Frames(60),
"#;
    // ron reports where the text stops: just past the last token, before trailing whitespace.
    let e = fail(text);
    let (line, col) = pos(text, "),\n");
    assert_eq!((line, col + 2), (5, 34));
    check(&e, K::Syntax, "effects.ron", (5, 34), "effects.Burn", "Unexpected end of RON");
    assert!(e.message.contains("before every bracket is closed"), "{e}");
    // Without trailing whitespace ron points at the final comma, which follows `duration`.
    let text = text.trim_end();
    let e = fail(text);
    check(&e, K::Syntax, "effects.ron", (5, 33), "effects.Burn.duration", "Unexpected end of RON");
}

#[test]
fn syntax_truncated_inside_a_value() {
    let text = "(\n    effects: {\n        \"Burn\": (\n            duration: Frames(6";
    let e = fail(text);
    check(
        &e,
        K::Syntax,
        "effects.ron",
        pos(text, "6"),
        "effects.Burn.duration[0]",
        "Expected closing `)`",
    );
}

#[test]
fn syntax_trailing_characters_after_the_content() {
    let text = "(\n    tags: [\"State.Stunned\"],\n))\n";
    let e = fail(text);
    check(&e, K::Syntax, "effects.ron", (3, 2), "", "trailing characters");
}

#[test]
fn unknown_top_level_section() {
    let text = r#"(
    tags: ["State.Stunned"],
    effect: {
        "Stun": (duration: Frames(30), granted_tags: ["State.Stunned"]),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::Syntax,
        "effects.ron",
        pos(text, "effect:"),
        "effect",
        "Unexpected field named `effect` in `content` (did you mean `effects`?), expected one of",
    );
    // The full list stays after the suggestion.
    assert!(e.message.contains("`abilities`") && e.message.contains("`settings`"), "{e}");
}

#[test]
fn unknown_field_in_an_effect() {
    let text = r#"(
    tags: ["State.Stunned"],
    effects: {
        "Stun": (
            durration: Frames(30),
            granted_tags: ["State.Stunned"],
        ),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::Syntax,
        "effects.ron",
        pos(text, "durration"),
        "effects.Stun.durration",
        "Unexpected field named `durration` in `effect` (did you mean `duration`?), expected one \
         of `inherits`, `duration`, `period`,",
    );
}

#[test]
fn unknown_field_in_a_modifier() {
    let text = VITALS.replace(
        "\n)",
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
    );
    let e = fail(&text);
    check(
        &e,
        K::Syntax,
        "effects.ron",
        pos(&text, "magnitudee"),
        "effects.Poison.modifiers[1].magnitudee",
        "Unexpected field named `magnitudee` in `modifier` (did you mean `magnitude`?), expected \
         one of `attribute`",
    );
}

#[test]
fn wrong_enum_variant_for_op() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Heal": (modifiers: [(attribute: "Health", op: Plus, magnitude: Scalable(coef: 25))]),
    },
)"#,
    );
    let e = fail(&text);
    check(
        &e,
        K::Syntax,
        "effects.ron",
        pos(&text, "Plus"),
        "effects.Heal.modifiers[0].op",
        "Unexpected variant named `Plus`",
    );
    assert!(e.message.contains("`Add`, `Multiply`, `Divide`, or `Override`"), "{e}");
    // Nothing is near enough to suggest.
    assert!(!e.message.contains("did you mean"), "{e}");
}

#[test]
fn wrong_enum_variant_for_duration() {
    let text = r#"(
    effects: {
        "Slow": (duration: Frame(90)),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::Syntax,
        "effects.ron",
        pos(text, "Frame("),
        "effects.Slow.duration",
        "Unexpected variant named `Frame` in enum `duration` (did you mean `Frames`?), expected \
         one of",
    );
}

#[test]
fn missing_required_field_points_at_the_closing_bracket() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Heal": (modifiers: [(attribute: "Health", op: Add)]),
    },
)"#,
    );
    let e = fail(&text);
    check(
        &e,
        K::Syntax,
        "effects.ron",
        pos(&text, ")]"),
        "effects.Heal.modifiers[0]",
        "missing field named `magnitude` in `modifier`",
    );
}

#[test]
fn attribute_magnitude_without_double_parentheses_gets_a_hint() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Thorns": (
            duration: Infinite,
            modifiers: [(attribute: "Armor", op: Add,
                         magnitude: Attribute(attribute: "MaxHealth", side: Target))],
        ),
    },
)"#,
    );
    let e = fail(&text);
    check(
        &e,
        K::Syntax,
        "effects.ron",
        pos(&text, "attribute: \"MaxHealth\""),
        "effects.Thorns.modifiers[0].magnitude.attribute",
        "Expected struct `attribute_magnitude` but found `attribute`",
    );
    assert!(e.message.contains("Attribute((attribute:"), "{e}");
}

#[test]
fn invalid_number_text() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Weaken": (
            duration: Seconds(10),
            modifiers: [(attribute: "Armor", op: Multiply, magnitude: Scalable(coef: "1.2.3"))],
        ),
    },
)"#,
    );
    let e = fail(&text);
    // ron reports a bad string just inside its opening quote.
    check(
        &e,
        K::Syntax,
        "effects.ron",
        pos(&text, "1.2.3\""),
        "effects.Weaken.modifiers[0].magnitude.coef",
        "\"1.2.3\" is not a valid decimal number",
    );
}

#[test]
fn number_out_of_fixed_point_range() {
    let text = r#"(
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100),
            "Gold": (default: 3000000000),
        }),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::Syntax,
        "effects.ron",
        pos(text, "3000000000"),
        "attribute_sets.Vitals.attributes.Gold.default",
        "out of the I32F32 range",
    );
}

#[test]
fn integer_out_of_range_for_its_field() {
    let text = r#"(
    tags: ["State.Burning"],
    effects: {
        "Burn": (
            duration: Frames(600),
            granted_tags: ["State.Burning"],
            stacking: (kind: ByTarget, limit: 70000),
        ),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::Syntax,
        "effects.ron",
        pos(text, "70000"),
        "effects.Burn.stacking.limit",
        "Integer is out of bounds",
    );
}

// ---------------------------------------------------------------------------------------------
// Names

#[test]
fn unknown_attribute_with_suggestion() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Poison": (
            duration: Seconds(5),
            period: Frames(60),
            modifiers: [(attribute: "Helth", op: Add, magnitude: Scalable(coef: -4))],
        ),
    },
)"#,
    );
    let e = fail(&text);
    check(
        &e,
        K::UnknownAttribute,
        "effects.ron",
        pos(&text, "attribute: \"Helth\""),
        "effects.Poison.modifiers[0].attribute",
        "unknown attribute \"Helth\" (did you mean \"Health\"?)",
    );
}

#[test]
fn unknown_tag_with_suggestion() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Stun": (duration: Frames(45), granted_tags: ["State.Stuned"]),
    },
)"#,
    );
    let e = fail(&text);
    check(
        &e,
        K::UnknownTag,
        "effects.ron",
        pos(&text, "\"State.Stuned\""),
        "effects.Stun.granted_tags[0]",
        "unknown tag \"State.Stuned\" (did you mean \"State.Stunned\"?)",
    );
}

#[test]
fn undeclared_tag_without_close_match() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Fireball": (
            asset_tags: ["Data.Damage", "Ability.Fire.Ball"],
            modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -30))],
        ),
    },
)"#,
    );
    let e = fail(&text);
    check(
        &e,
        K::UnknownTag,
        "effects.ron",
        pos(&text, "\"Ability.Fire.Ball\""),
        "effects.Fireball.asset_tags[1]",
        "unknown tag \"Ability.Fire.Ball\" (declare it in a `tags: [...]` list)",
    );
    assert!(!e.message.contains("did you mean"), "{e}");
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

#[test]
fn invalid_tag_name() {
    let text = r#"(
    tags: [
        "State.Stunned",
        "A..B",
    ],
)"#;
    let e = fail(text);
    check(&e, K::UnknownTag, "effects.ron", pos(text, "\"A..B\""), "tags[1]", "empty segment");
}

#[test]
fn unknown_curve_with_suggestion() {
    let text = VITALS.replace(
        "\n)",
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
    );
    let e = fail(&text);
    check(
        &e,
        K::UnknownCurve,
        "effects.ron",
        pos(&text, "curve: \"PoisonDamge\""),
        "effects.Poison.modifiers[0].magnitude.curve",
        "unknown curve \"PoisonDamge\" (did you mean \"PoisonDamage\"?)",
    );
}

#[test]
fn curve_levels_must_increase() {
    let text = r#"(
    curves: {
        "FireDamage": (points: [(1, 10), (5, 30), (3, 20)]),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::InvalidValue,
        "effects.ron",
        pos(text, "(3, 20)"),
        "curves.FireDamage.points[2]",
        "levels must increase strictly: level 3 follows level 5",
    );
}

#[test]
fn empty_curve() {
    let text = r#"(
    curves: {
        "FireDamage": (interp: Step, points: []),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::InvalidValue,
        "effects.ron",
        pos(text, "points"),
        "curves.FireDamage.points",
        "a curve needs at least one (level, value) point",
    );
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
fn attribute_bounding_itself() {
    let text = r#"(
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100, min: Const(0), max: Attr("Health")),
        }),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::Cycle,
        "effects.ron",
        pos(text, "max:"),
        "attribute_sets.Vitals.attributes.Health.max",
        "attribute \"Health\" cannot bound itself",
    );
}

#[test]
fn unknown_bound_attribute_with_suggestion() {
    let text = r#"(
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100, max: Attr("MaxHeath")),
            "MaxHealth": (default: 100),
        }),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::UnknownAttribute,
        "effects.ron",
        pos(text, "max:"),
        "attribute_sets.Vitals.attributes.Health.max",
        "unknown attribute \"MaxHeath\" (did you mean \"MaxHealth\"?)",
    );
}

#[test]
fn min_greater_than_max() {
    let text = r#"(
    attribute_sets: {
        "Move": (attributes: {
            "MoveSpeed": (default: 600, min: Const(700), max: Const(650.5)),
        }),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::InvalidValue,
        "effects.ron",
        pos(text, "min:"),
        "attribute_sets.Move.attributes.MoveSpeed.min",
        "min 700 is greater than max 650.5",
    );
}

#[test]
fn derived_attribute_cycle_through_a_live_capture() {
    // `Ward` is clamped by `Shield`; the infinite effect makes `Shield` follow `Ward` live.
    let text = r#"(
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
)"#;
    let e = fail(text);
    check(
        &e,
        K::Cycle,
        "effects.ron",
        pos(text, "(attribute: \"Shield\""),
        "effects.Resonance.modifiers[0]",
        "derived attributes form a cycle: Shield → Ward → Shield",
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

// ---------------------------------------------------------------------------------------------
// Durations, periods and combinations

#[test]
fn zero_frame_duration() {
    let text = r#"(
    effects: {
        "Blink": (duration: Frames(0)),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::InvalidValue,
        "effects.ron",
        pos(text, "duration"),
        "effects.Blink.duration",
        "a duration must be at least 1 frame",
    );
}

#[test]
fn negative_seconds_duration() {
    let text = r#"(
    effects: {
        "Blink": (duration: Seconds("-1")),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::InvalidValue,
        "effects.ron",
        pos(text, "\"-1\""),
        "effects.Blink.duration[0]",
        "a duration cannot be negative",
    );
}

#[test]
fn period_on_an_instant_effect() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Bleed": (
            period: Frames(30),
            modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -2))],
        ),
    },
)"#,
    );
    let e = fail(&text);
    check(
        &e,
        K::InvalidCombination,
        "effects.ron",
        pos(&text, "period"),
        "effects.Bleed.period",
        "an instant effect cannot be periodic",
    );
}

#[test]
fn execute_on_application_without_period() {
    let text = r#"(
    effects: {
        "Regen": (duration: Seconds(10), execute_on_application: true),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::InvalidCombination,
        "effects.ron",
        pos(text, "execute_on_application"),
        "effects.Regen.execute_on_application",
        "execute_on_application needs a period",
    );
}

#[test]
fn executions_on_a_non_periodic_duration_effect() {
    let text = r#"(
    effects: {
        "Curse": (
            duration: Seconds(8),
            executions: [(calc: "CurseDamage")],
        ),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::InvalidCombination,
        "effects.ron",
        pos(text, "executions"),
        "effects.Curse.executions",
        "executions run only for instant effects or periodic executions",
    );
}

#[test]
fn granted_tags_on_an_instant_effect() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Bash": (
            modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -10))],
            granted_tags: ["State.Stunned"],
        ),
    },
)"#,
    );
    let e = fail(&text);
    check(
        &e,
        K::InvalidCombination,
        "effects.ron",
        pos(&text, "granted_tags"),
        "effects.Bash.granted_tags",
        "an instant effect is never active, so `granted_tags` would never take effect (G-07)",
    );
}

#[test]
fn stacking_on_an_instant_effect() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Bash": (
            modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -10))],
            stacking: (kind: BySource, limit: 3),
        ),
    },
)"#,
    );
    let e = fail(&text);
    check(
        &e,
        K::InvalidCombination,
        "effects.ron",
        pos(&text, "stacking"),
        "effects.Bash.stacking",
        "instant effects cannot stack",
    );
}

#[test]
fn stack_limit_zero() {
    let text = r#"(
    effects: {
        "Rage": (duration: Seconds(4), stacking: (kind: ByTarget, limit: 0)),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::InvalidValue,
        "effects.ron",
        pos(text, "limit"),
        "effects.Rage.stacking.limit",
        "the stack limit must be at least 1",
    );
}

#[test]
fn cue_tag_outside_gameplay_cue() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Stun": (
            duration: Frames(45),
            granted_tags: ["State.Stunned"],
            cues: [(tag: "State.Stunned")],
        ),
    },
)"#,
    );
    let e = fail(&text);
    check(
        &e,
        K::InvalidValue,
        "effects.ron",
        pos(&text, "tag: \"State.Stunned\""),
        "effects.Stun.cues[0].tag",
        "cue tags must live under `GameplayCue.` (\"State.Stunned\" does not)",
    );
}

#[test]
fn executed_cue_on_a_non_periodic_duration_effect() {
    let text = VITALS.replace(
        "\n)",
        r#"
    effects: {
        "Poison": (
            duration: Seconds(5),
            modifiers: [(attribute: "Armor", op: Add, magnitude: Scalable(coef: -3))],
            cues: [(tag: "GameplayCue.Poison", events: Executed)],
        ),
    },
)"#,
    );
    let e = fail(&text);
    check(
        &e,
        K::InvalidCombination,
        "effects.ron",
        pos(&text, "events"),
        "effects.Poison.cues[0].events",
        "`Executed` would never fire",
    );
}

#[test]
fn more_than_eight_modifiers() {
    let mods: String = (0..9)
        .map(|i| {
            format!(
                "                (attribute: \"Armor\", op: Add, magnitude: Scalable(coef: {i})),\n"
            )
        })
        .collect();
    let text = VITALS.replace(
        "\n)",
        &format!(
            "\n    effects: {{\n        \"Fortify\": (\n            duration: Seconds(5),\n            modifiers: [\n{mods}            ],\n        ),\n    }},\n)"
        ),
    );
    let e = fail(&text);
    check(
        &e,
        K::Capacity,
        "effects.ron",
        pos(&text, "(attribute: \"Armor\", op: Add, magnitude: Scalable(coef: 8))"),
        "effects.Fortify.modifiers[8]",
        "an effect may have at most 8 modifiers",
    );
}

#[test]
fn more_than_four_set_by_caller_keys() {
    let text = r#"(
    tags: ["Data.A", "Data.B", "Data.C", "Data.D", "Data.E"],
    attribute_sets: { "Vitals": (attributes: { "Health": (default: 100) }) },
    effects: {
        "Combo": (
            modifiers: [
                (attribute: "Health", op: Add, magnitude: SetByCaller("Data.A")),
                (attribute: "Health", op: Add, magnitude: SetByCaller("Data.B")),
                (attribute: "Health", op: Add, magnitude: SetByCaller("Data.C")),
                (attribute: "Health", op: Add, magnitude: SetByCaller("Data.D")),
                (attribute: "Health", op: Add, magnitude: SetByCaller("Data.E")),
            ],
        ),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::Capacity,
        "effects.ron",
        pos(text, "\"Combo\""),
        "effects.Combo",
        "the effect reads 5 SetByCaller keys; at most 4 are allowed",
    );
}

#[test]
fn inheritance_from_an_unknown_effect() {
    let text = r#"(
    effects: {
        "Poison": (duration: Seconds(5)),
        "StrongPoison": (inherits: "Poisen"),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::UnknownEffect,
        "effects.ron",
        pos(text, "inherits"),
        "effects.StrongPoison.inherits",
        "inherits from unknown effect \"Poisen\" (did you mean \"Poison\"?)",
    );
}

#[test]
fn inheritance_cycle() {
    let text = r#"(
    effects: {
        "Burn": (inherits: "Ignite", duration: Frames(60)),
        "Ignite": (inherits: "Burn"),
    },
)"#;
    let e = fail(text);
    check(
        &e,
        K::Cycle,
        "effects.ron",
        pos(text, "inherits: \"Ignite\""),
        "effects.Burn.inherits",
        "inheritance cycle: Burn → Ignite → Burn",
    );
}

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
fn transient_attribute_modified_by_a_duration_effect() {
    let text = r#"(
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
)"#;
    let e = fail(text);
    check(
        &e,
        K::InvalidCombination,
        "effects.ron",
        pos(text, "attribute: \"IncomingDamage\""),
        "effects.Vulnerable.modifiers[0].attribute",
        "\"IncomingDamage\" is a transient (meta) attribute",
    );
}

// ---------------------------------------------------------------------------------------------
// Settings

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
fn tick_rate_zero() {
    let text = "(\n    settings: (\n        tick_rate: 0,\n    ),\n)";
    let e = fail(text);
    check(
        &e,
        K::InvalidValue,
        "effects.ron",
        (3, 9),
        "settings.tick_rate",
        "the tick rate must be at least 1",
    );
}

#[test]
fn inline_content_is_named_inline() {
    let e = Content::from_ron_str("(tags: [\"A..B\"])").expect_err("invalid tag");
    check(&e, K::UnknownTag, "<inline>", (1, 9), "tags[0]", "empty segment");
}

// ---------------------------------------------------------------------------------------------
// Directories and the content hash

/// A unique directory under the system temp dir, removed when dropped.
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
    check(&e, K::Syntax, &file, (3, 18), "effects.Stun.durration", "Unexpected field");
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
