//! Feature tests for gameplay tags: F-TAG-01 … F-TAG-06 (`docs/features.md`).

use crate::common::*;
use proptest::prelude::*;
use rollback_abilities::prelude::*;
use rollback_abilities::{
    ContentBuilder, ContentErrorKind, Diagnostic, TagContainer, TagEvent, TagQuery, TagQueryExpr,
    TagRequirements,
};

rollback_abilities::declare_tags! {
    /// Tags the game code refers to (F-TAG-01 "code macro").
    struct CodeTags {
        stun: "State.Debuff.Stun",
        dead: "State.Dead",
        meteor: "Cooldown.Skill.Meteor",
    }
}

const TAGS: &str = r#"(
    tags: ["State.Debuff.Stun", "State.Dead", "Ability", "State.Debuff.Slow", "AB", "A_C.X",
           "Curse.A", "Curse.B"],
    effects: {
        "Hex": (duration: Infinite, granted_tags: ["Curse.A", "Curse.B"]),
        "Stunned": (duration: Frames(10), granted_tags: ["State.Debuff.Stun"]),
    },
)"#;

fn names(w: &World<Plain>) -> Vec<String> {
    w.content().tags().names().to_vec()
}

fn ev(frame: u32, entity: Entity, tag: TagId, old: u32, new: u32) -> TagEvent {
    TagEvent { frame, entity, tag, old, new }
}

// ---------------------------------------------------------------------------------------------
// F-TAG-01 Registry
// ---------------------------------------------------------------------------------------------

#[test]
fn f_tag_01_ids_sorted_segment_wise_with_implicit_parents() {
    let w = world(TAGS);
    assert_eq!(
        names(&w),
        vec![
            "AB",
            "A_C",
            "A_C.X",
            "Ability",
            "Curse",
            "Curse.A",
            "Curse.B",
            "State",
            "State.Dead",
            "State.Debuff",
            "State.Debuff.Slow",
            "State.Debuff.Stun",
        ]
    );
    let reg = w.content().tags();
    let state = tag(&w, "State");
    let debuff = tag(&w, "State.Debuff");
    let stun = tag(&w, "State.Debuff.Stun");
    assert_eq!(state, TagId(7));
    assert_eq!(stun, TagId(11));
    // Implicit parents exist but are not explicit.
    assert!(!reg.is_explicit(state));
    assert!(!reg.is_explicit(tag(&w, "A_C")));
    assert!(reg.is_explicit(stun));
    assert_eq!(reg.parent(stun), Some(debuff));
    assert_eq!(reg.parent(debuff), Some(state));
    assert_eq!(reg.parent(state), None);
    assert_eq!(reg.depth(stun), 3);
    assert_eq!(reg.depth(state), 1);
    // Descendants occupy the id range right after their ancestor.
    assert_eq!(reg.subtree_end(state), 12);
    assert_eq!(reg.subtree_end(debuff), 12);
    assert_eq!(reg.subtree_end(tag(&w, "State.Dead")), 9);
    assert!(reg.is_descendant_or_self(stun, state));
    assert!(!reg.is_descendant_or_self(state, stun));
    assert!(!reg.is_descendant_or_self(tag(&w, "Ability"), tag(&w, "AB")));
    assert_eq!(reg.self_and_ancestors(stun), &TagSet::of(&[state, debuff, stun]));
    assert_eq!(reg.name(stun), "State.Debuff.Stun");
}

#[test]
fn f_tag_01_ids_do_not_depend_on_declaration_order() {
    let a = content(r#"(tags: ["Z.Y.X", "A.B", "M", "A"])"#);
    let b = content(r#"(tags: ["A", "M", "A.B", "Z.Y.X", "A.B"])"#);
    assert_eq!(a.tags().names(), b.tags().names());
    assert_eq!(a.tags().names(), &["A", "A.B", "M", "Z", "Z.Y", "Z.Y.X"]);
    for n in ["A", "A.B", "M", "Z", "Z.Y", "Z.Y.X"] {
        assert_eq!(a.tag(n).unwrap(), b.tag(n).unwrap(), "{n}");
    }
    // Peers that loaded the same names agree on the content hash too.
    assert_eq!(a.hash(), b.hash());
    let c = content(r#"(tags: ["A", "M", "A.C", "Z.Y.X"])"#);
    assert_ne!(a.hash(), c.hash());
}

#[test]
fn f_tag_01_declare_tags_macro_and_native_tags() {
    assert_eq!(CodeTags::NAMES, &["State.Debuff.Stun", "State.Dead", "Cooldown.Skill.Meteor"]);
    // Native (code) tags merge with the tags of the files.
    let c = ContentBuilder::new()
        .native_tags(CodeTags::NAMES)
        .file("a.ron", r#"(tags: ["Ability.Jump"])"#)
        .build()
        .unwrap();
    let t = CodeTags::resolve(&c).unwrap();
    assert_eq!(t.stun, c.tag("State.Debuff.Stun").unwrap());
    assert_eq!(t.dead, c.tag("State.Dead").unwrap());
    assert_eq!(t.meteor, c.tag("Cooldown.Skill.Meteor").unwrap());
    assert!(c.tags().is_descendant_or_self(t.meteor, c.tag("Cooldown").unwrap()));
    assert_eq!(
        c.tags().names(),
        &[
            "Ability",
            "Ability.Jump",
            "Cooldown",
            "Cooldown.Skill",
            "Cooldown.Skill.Meteor",
            "State",
            "State.Dead",
            "State.Debuff",
            "State.Debuff.Stun",
        ]
    );
    // Resolving against content that lacks a name is an error naming it.
    let other = content(r#"(tags: ["State.Dead"])"#);
    let err = CodeTags::resolve(&other).unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::UnknownName);
    assert!(err.message.contains("State.Debuff.Stun"), "{}", err.message);
    // Invalid native names are refused.
    let err = ContentBuilder::new().native_tags(&["Bad..Name"]).build().unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::UnknownTag);
}

#[test]
fn f_tag_01_aliases_resolve_to_the_renamed_tag() {
    let c = content(
        r#"(tags: ["State.Debuff.Stun", "State.Dead"],
            tag_aliases: { "Status.Stunned": "State.Debuff.Stun", "Dead": "State.Dead" })"#,
    );
    let stun = c.tag("State.Debuff.Stun").unwrap();
    assert_eq!(c.tag("Status.Stunned").unwrap(), stun);
    assert_eq!(c.tag("Dead").unwrap(), c.tag("State.Dead").unwrap());
    // Aliases do not become tags (ids are unchanged) and are listed sorted.
    assert_eq!(c.tags().len(), 4);
    assert_eq!(
        c.tags().aliases(),
        &[("Dead".to_string(), c.tag("State.Dead").unwrap()), ("Status.Stunned".to_string(), stun)]
    );
    // An alias to a missing tag, or an alias that is also a tag, is refused.
    let err =
        Content::from_ron_str(r#"(tags: ["A"], tag_aliases: { "B": "Missing" })"#).unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::UnknownTag);
    let err =
        Content::from_ron_str(r#"(tags: ["A", "B"], tag_aliases: { "B": "A" })"#).unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::UnknownTag);
}

#[test]
fn f_tag_01_invalid_names_are_refused_with_location() {
    for bad in ["A..B", ".A", "A.", "A B", "Ä", ""] {
        let text = format!(r#"(tags: ["Ok", "{bad}"])"#);
        let err = Content::from_ron_str(&text).unwrap_err();
        assert_eq!(err.kind, ContentErrorKind::UnknownTag, "{bad:?}: {err}");
        assert_eq!(err.line, 1, "{bad:?}: {err}");
    }
    // An unknown tag used by an effect is an error too.
    let err = Content::from_ron_str(
        r#"(tags: ["State.Dead"], effects: { "E": (duration: Infinite, granted_tags: ["State.Deda"]) })"#,
    )
    .unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::UnknownTag);
}

// ---------------------------------------------------------------------------------------------
// F-TAG-02 Containers
// ---------------------------------------------------------------------------------------------

#[test]
fn f_tag_02_container_hierarchical_vs_exact() {
    let c = content(r#"(tags: ["A.1", "A.2", "B"])"#);
    let reg = c.tags();
    let (a, a1, a2, b) =
        (c.tag("A").unwrap(), c.tag("A.1").unwrap(), c.tag("A.2").unwrap(), c.tag("B").unwrap());
    let cont: TagContainer = reg.container(TagSet::of(&[a1]));
    assert!(cont.has(a), "holding A.1 answers has(A)");
    assert!(!cont.has_exact(a), "but not has_exact(A)");
    assert!(cont.has(a1) && cont.has_exact(a1));
    assert!(!cont.has(a2));
    assert!(cont.has_any(&TagSet::of(&[a, b])));
    assert!(!cont.has_any_exact(&TagSet::of(&[a, b])));
    assert!(cont.has_all(&TagSet::of(&[a, a1])));
    assert!(!cont.has_all_exact(&TagSet::of(&[a, a1])));
    assert!(!cont.has_all(&TagSet::of(&[a, b])));
    assert_eq!(cont.explicit, TagSet::of(&[a1]));
    assert_eq!(cont.expanded, TagSet::of(&[a, a1]));
    let u = cont.union(&reg.container(TagSet::of(&[b])));
    assert!(u.has_all_exact(&TagSet::of(&[a1, b])));
    assert!(TagContainer::EMPTY.is_empty());
    assert!(!TagContainer::EMPTY.has_any(&TagSet::of(&[a])));
    assert_eq!(reg.display_set(&TagSet::of(&[a1, b])), "{A.1, B}");
}

#[test]
fn f_tag_02_entity_views_hierarchical_vs_exact() {
    let mut w = world(TAGS);
    let e = w.spawn_actor(&[]).unwrap();
    let (state, debuff, stun, slow) = (
        tag(&w, "State"),
        tag(&w, "State.Debuff"),
        tag(&w, "State.Debuff.Stun"),
        tag(&w, "State.Debuff.Slow"),
    );
    w.add_loose_tag(e, stun);
    assert!(w.has_tag(e, state) && w.has_tag(e, debuff) && w.has_tag(e, stun));
    assert!(!w.has_tag_exact(e, state) && !w.has_tag_exact(e, debuff));
    assert!(w.has_tag_exact(e, stun));
    assert!(!w.has_tag(e, slow));
    assert_eq!(w.tags(e), TagSet::of(&[state, debuff, stun]));
    assert_eq!(w.explicit_tags(e), TagSet::of(&[stun]));
    // An entity without an ability system, or a stale handle, has no tags.
    let plain = w.spawn().unwrap();
    w.add_loose_tag(plain, stun);
    assert!(!w.has_tag(plain, stun));
    assert_eq!(w.tags(plain), TagSet::EMPTY);
    w.despawn(e);
    assert!(!w.has_tag(e, stun));
    assert_eq!(w.tag_count(e, state), 0);
}

#[test]
fn f_tag_02_tag_set_is_a_fixed_pod_bitset() {
    assert_eq!(rollback_abilities::MAX_TAGS, 1024);
    assert_eq!(core::mem::size_of::<TagSet>(), 1024 / 8);
    let s = TagSet::of(&[TagId(0), TagId(63), TagId(64), TagId(1023)]);
    let bytes = bytemuck::bytes_of(&s);
    assert_eq!(bytes.len(), 128);
    assert_eq!(bytes[0], 1);
    assert_eq!(bytes[7], 0x80);
    assert_eq!(bytes[8], 1);
    assert_eq!(bytes[127], 0x80);
    let back: TagSet = *bytemuck::from_bytes(bytes);
    assert_eq!(back, s);
    assert_eq!(s.len(), 4);
    assert_eq!(s.iter().collect::<Vec<_>>(), vec![TagId(0), TagId(63), TagId(64), TagId(1023)]);
}

// ---------------------------------------------------------------------------------------------
// F-TAG-03 Counted owned tags, loose tags
// ---------------------------------------------------------------------------------------------

#[test]
fn f_tag_03_tag_count_is_own_count_plus_descendants() {
    let mut w = world(TAGS);
    let e = w.spawn_actor(&[]).unwrap();
    let (state, debuff, stun, slow, dead) = (
        tag(&w, "State"),
        tag(&w, "State.Debuff"),
        tag(&w, "State.Debuff.Stun"),
        tag(&w, "State.Debuff.Slow"),
        tag(&w, "State.Dead"),
    );
    w.add_loose_tag(e, stun);
    w.add_loose_tag(e, stun);
    w.add_loose_tag(e, slow);
    w.add_loose_tag(e, debuff);
    w.add_loose_tag(e, dead);
    assert_eq!(w.tag_count(e, stun), 2);
    assert_eq!(w.tag_count(e, slow), 1);
    assert_eq!(w.tag_count_exact(e, debuff), 1);
    assert_eq!(w.tag_count(e, debuff), 4, "own 1 + Slow 1 + Stun 2");
    assert_eq!(w.tag_count(e, state), 5);
    assert_eq!(w.tag_count_exact(e, state), 0);
    assert_eq!(w.tag_count(e, dead), 1);
}

#[test]
fn f_tag_03_loose_tags_add_remove_and_set_count() {
    let mut w = world(TAGS);
    let e = w.spawn_actor(&[]).unwrap();
    let (state, stun) = (tag(&w, "State"), tag(&w, "State.Debuff.Stun"));
    w.add_loose_tag(e, stun);
    w.add_loose_tag(e, stun);
    assert_eq!(w.tag_count_exact(e, stun), 2);
    w.remove_loose_tag(e, stun);
    assert_eq!(w.tag_count_exact(e, stun), 1);
    assert!(w.has_tag(e, state));
    w.set_loose_tag_count(e, stun, 7);
    assert_eq!(w.tag_count_exact(e, stun), 7);
    assert_eq!(w.tag_count(e, state), 7);
    w.set_loose_tag_count(e, stun, 0);
    assert_eq!(w.tag_count_exact(e, stun), 0);
    assert!(!w.has_tag(e, stun));
    assert!(!w.has_tag(e, state), "ancestors leave with their last descendant");
    // Loose tags are ordinary simulation state: they change the checksum.
    let before = w.checksum();
    w.add_loose_tag(e, stun);
    assert_ne!(w.checksum(), before);
    w.remove_loose_tag(e, stun);
    assert_eq!(w.checksum(), before);
}

#[test]
fn f_tag_03_underflow_is_a_diagnostic_never_a_wrap() {
    let mut w = world(TAGS);
    let e = w.spawn_actor(&[]).unwrap();
    let stun = tag(&w, "State.Debuff.Stun");
    let out = w
        .step_with(&[], |w| {
            w.add_loose_tag(e, stun);
            w.remove_loose_tag(e, stun);
            w.remove_loose_tag(e, stun);
        })
        .clone();
    assert_eq!(out.diagnostics, vec![Diagnostic::TagUnderflow { entity: e, tag: stun }]);
    assert_eq!(w.tag_count_exact(e, stun), 0);
    assert!(!w.has_tag(e, stun));
    // Still usable afterwards: a new add counts from zero.
    w.add_loose_tag(e, stun);
    assert_eq!(w.tag_count_exact(e, stun), 1);
}

#[test]
fn f_tag_03_overflow_saturates_with_a_diagnostic() {
    let mut w = world(TAGS);
    let e = w.spawn_actor(&[]).unwrap();
    let (state, stun, slow) =
        (tag(&w, "State"), tag(&w, "State.Debuff.Stun"), tag(&w, "State.Debuff.Slow"));
    let out = w
        .step_with(&[], |w| {
            w.set_loose_tag_count(e, stun, u16::MAX);
            w.add_loose_tag(e, stun);
        })
        .clone();
    assert_eq!(out.diagnostics, vec![Diagnostic::TagOverflow { entity: e, tag: stun }]);
    assert_eq!(w.tag_count_exact(e, stun), u32::from(u16::MAX));
    // Derived (ancestor) counts are sums and do not wrap either.
    w.set_loose_tag_count(e, slow, u16::MAX);
    assert_eq!(w.tag_count(e, state), 2 * u32::from(u16::MAX));
}

#[test]
fn f_tag_03_grants_and_loose_tags_share_one_count() {
    let mut w = world(TAGS);
    let e = w.spawn_actor(&[]).unwrap();
    let stun = tag(&w, "State.Debuff.Stun");
    let stunned = w.content().effect("Stunned").unwrap();
    let h = match w.apply_effect(w.make_spec(stunned, 1, e), e).unwrap() {
        Applied::Added(h) => h,
        other => panic!("{other:?}"),
    };
    w.add_loose_tag(e, stun);
    assert_eq!(w.tag_count_exact(e, stun), 2);
    w.remove_effect(h);
    assert_eq!(w.tag_count_exact(e, stun), 1, "the loose count survives the grant");
    assert!(w.has_tag(e, stun));
    w.remove_loose_tag(e, stun);
    assert!(!w.has_tag(e, stun));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random loose-tag operations never panic; counts saturate at both ends and derived
    /// counts, presence bits and the explicit view always agree with a simple model.
    #[test]
    fn f_tag_03_random_operations_never_panic(
        ops in proptest::collection::vec((0u8..5, 0usize..12, any::<u16>()), 1..60)
    ) {
        let mut w = world(TAGS);
        let e = w.spawn_actor(&[]).unwrap();
        let n = w.content().tags().len();
        let mut model = vec![0u32; n];
        for (op, t, count) in ops {
            let id = TagId(t as u16);
            match op {
                0 => { w.add_loose_tag(e, id); model[t] = (model[t] + 1).min(u32::from(u16::MAX)); }
                1 => { w.remove_loose_tag(e, id); model[t] = model[t].saturating_sub(1); }
                2 => { w.set_loose_tag_count(e, id, count); model[t] = u32::from(count); }
                3 => { w.set_loose_tag_count(e, id, u16::MAX); model[t] = u32::from(u16::MAX); }
                _ => {
                    // Out-of-range ids are ignored.
                    w.add_loose_tag(e, TagId(999));
                    w.remove_loose_tag(e, TagId(u16::MAX));
                }
            }
            let reg = w.content().tags().clone();
            for i in 0..n {
                let id = TagId(i as u16);
                prop_assert_eq!(w.tag_count_exact(e, id), model[i]);
                let derived: u32 = (i..reg.subtree_end(id)).map(|j| model[j]).sum();
                prop_assert_eq!(w.tag_count(e, id), derived);
                prop_assert_eq!(w.has_tag(e, id), derived > 0);
                prop_assert_eq!(w.explicit_tags(e).contains(id), model[i] > 0);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// F-TAG-04 Change events
// ---------------------------------------------------------------------------------------------

#[test]
fn f_tag_04_events_in_ascending_id_with_ancestors_and_counts() {
    let mut w = world(TAGS);
    let e = w.spawn_actor(&[]).unwrap();
    let (state, debuff, stun, slow) = (
        tag(&w, "State"),
        tag(&w, "State.Debuff"),
        tag(&w, "State.Debuff.Stun"),
        tag(&w, "State.Debuff.Slow"),
    );
    w.step(&[]);
    w.step(&[]);
    let out = w.step_with(&[], |w| w.add_loose_tag(e, stun)).clone();
    assert_eq!(out.frame, 2);
    assert_eq!(
        out.tag_events,
        vec![ev(2, e, state, 0, 1), ev(2, e, debuff, 0, 1), ev(2, e, stun, 0, 1)]
    );
    assert!(out.tag_events.iter().all(TagEvent::is_new_or_removed));
    let out = w.step_with(&[], |w| w.add_loose_tag(e, slow)).clone();
    assert_eq!(
        out.tag_events,
        vec![ev(3, e, state, 1, 2), ev(3, e, debuff, 1, 2), ev(3, e, slow, 0, 1)]
    );
    assert_eq!(out.tag_events.iter().filter(|t| t.is_new_or_removed()).count(), 1);
    let out = w.step_with(&[], |w| w.remove_loose_tag(e, stun)).clone();
    assert_eq!(
        out.tag_events,
        vec![ev(4, e, state, 2, 1), ev(4, e, debuff, 2, 1), ev(4, e, stun, 1, 0)]
    );
    let out = w.step_with(&[], |w| w.set_loose_tag_count(e, slow, 3)).clone();
    assert_eq!(
        out.tag_events,
        vec![ev(5, e, state, 1, 3), ev(5, e, debuff, 1, 3), ev(5, e, slow, 1, 3)]
    );
}

#[test]
fn f_tag_04_events_fire_after_all_counts_of_a_change_settle() {
    let mut w = world(TAGS);
    let e = w.spawn_actor(&[]).unwrap();
    let f = w.spawn_actor(&[]).unwrap();
    let (curse, a, b) = (tag(&w, "Curse"), tag(&w, "Curse.A"), tag(&w, "Curse.B"));
    let hex = w.content().effect("Hex").unwrap();
    let out = w
        .step_with(&[], |w| {
            // Applied to f first, then e: events are still ordered by entity, then tag id.
            w.apply_effect(w.make_spec(hex, 1, f), f).unwrap();
            w.apply_effect(w.make_spec(hex, 1, e), e).unwrap();
        })
        .clone();
    // One event for the parent with its final count (0 → 2), not one per granted child.
    assert_eq!(
        out.tag_events,
        vec![
            ev(0, f, curse, 0, 2),
            ev(0, f, a, 0, 1),
            ev(0, f, b, 0, 1),
            ev(0, e, curse, 0, 2),
            ev(0, e, a, 0, 1),
            ev(0, e, b, 0, 1),
        ]
    );
    let out = w.step_with(&[], |w| w.despawn(f)).clone();
    assert!(out.tag_events.is_empty(), "a despawned entity reports no tag events");
    let h = w.effects(e)[0].handle(e);
    let out = w.step_with(&[], |w| w.remove_effect(h)).clone();
    assert_eq!(out.tag_events, vec![ev(2, e, curse, 2, 0), ev(2, e, a, 1, 0), ev(2, e, b, 1, 0)]);
}

#[test]
fn f_tag_04_no_event_without_a_count_change() {
    let mut w = world(TAGS);
    let e = w.spawn_actor(&[]).unwrap();
    let stun = tag(&w, "State.Debuff.Stun");
    w.set_loose_tag_count(e, stun, 2);
    let out = w.step_with(&[], |w| w.set_loose_tag_count(e, stun, 2)).clone();
    assert!(out.tag_events.is_empty());
    let dead = tag(&w, "State.Dead");
    let out = w.step_with(&[], |w| w.remove_loose_tag(e, dead)).clone();
    assert!(out.tag_events.is_empty(), "an underflow changes nothing");
    assert_eq!(out.diagnostics.len(), 1);
    let out = w.step(&[]).clone();
    assert!(out.tag_events.is_empty() && out.diagnostics.is_empty());
}

// ---------------------------------------------------------------------------------------------
// F-TAG-05 Queries and requirements
// ---------------------------------------------------------------------------------------------

#[test]
fn f_tag_05_empty_query_matches_nothing_empty_requirements_pass() {
    let mut w = world(TAGS);
    let e = w.spawn_actor(&[]).unwrap();
    let stun = tag(&w, "State.Debuff.Stun");
    w.add_loose_tag(e, stun);
    assert!(TagQuery::EMPTY.is_empty());
    assert!(!w.matches(e, &TagQuery::EMPTY), "G-25: the empty query is false");
    assert!(!TagQuery::default().matches(&w.tags(e)));
    assert!(TagRequirements::NONE.is_empty());
    assert!(w.passes(e, &TagRequirements::NONE));
    let bare = w.spawn_actor(&[]).unwrap();
    assert!(w.passes(bare, &TagRequirements::NONE), "empty requirements pass without tags");
    assert!(!w.matches(bare, &TagQuery::EMPTY));
    // Requirements holding an explicitly empty query fail.
    let r = TagRequirements { query: Some(TagQuery::EMPTY), ..TagRequirements::NONE };
    assert!(!w.passes(e, &r));
}

#[test]
fn f_tag_05_query_expressions_are_hierarchical() {
    let mut w = world(TAGS);
    let e = w.spawn_actor(&[]).unwrap();
    let (state, debuff, stun, slow, dead, curse) = (
        tag(&w, "State"),
        tag(&w, "State.Debuff"),
        tag(&w, "State.Debuff.Stun"),
        tag(&w, "State.Debuff.Slow"),
        tag(&w, "State.Dead"),
        tag(&w, "Curse"),
    );
    w.add_loose_tag(e, stun);
    let q = |x: TagQueryExpr| TagQuery { expr: Some(x) };
    use TagQueryExpr::*;
    assert!(w.matches(e, &q(AnyTags(TagSet::of(&[debuff, dead])))), "Debuff via Stun");
    assert!(!w.matches(e, &q(AnyTags(TagSet::of(&[slow, dead])))));
    assert!(!w.matches(e, &q(AnyTags(TagSet::EMPTY))));
    assert!(w.matches(e, &q(AllTags(TagSet::of(&[state, debuff, stun])))));
    assert!(!w.matches(e, &q(AllTags(TagSet::of(&[stun, slow])))));
    assert!(w.matches(e, &q(AllTags(TagSet::EMPTY))));
    assert!(w.matches(e, &q(NoTags(TagSet::of(&[dead, curse])))));
    assert!(!w.matches(e, &q(NoTags(TagSet::of(&[state])))));
    let any = AnyExpr(vec![AllTags(TagSet::of(&[dead])), AnyTags(TagSet::of(&[stun]))]);
    assert!(w.matches(e, &q(any.clone())));
    assert!(!w.matches(e, &q(AnyExpr(vec![]))));
    assert!(w.matches(e, &q(AllExpr(vec![any.clone(), NoTags(TagSet::of(&[dead]))]))));
    assert!(!w.matches(e, &q(AllExpr(vec![any.clone(), AnyTags(TagSet::of(&[dead]))]))));
    assert!(w.matches(e, &q(NoExpr(vec![AnyTags(TagSet::of(&[dead, curse]))]))));
    assert!(!w.matches(e, &q(NoExpr(vec![any]))));
    let mut mentioned = TagSet::EMPTY;
    AllExpr(vec![AnyTags(TagSet::of(&[dead])), NoTags(TagSet::of(&[curse]))]).tags(&mut mentioned);
    assert_eq!(mentioned, TagSet::of(&[dead, curse]));
}

#[test]
fn f_tag_05_requirements_require_all_ignore_any_and_query() {
    let mut w = world(TAGS);
    let e = w.spawn_actor(&[]).unwrap();
    let (debuff, stun, dead, curse, curse_a) = (
        tag(&w, "State.Debuff"),
        tag(&w, "State.Debuff.Stun"),
        tag(&w, "State.Dead"),
        tag(&w, "Curse"),
        tag(&w, "Curse.A"),
    );
    let r = TagRequirements {
        require_all: TagSet::of(&[debuff]),
        ignore_any: TagSet::of(&[curse]),
        query: Some(TagQuery { expr: Some(TagQueryExpr::NoTags(TagSet::of(&[dead]))) }),
    };
    assert!(!w.passes(e, &r), "Debuff required");
    w.add_loose_tag(e, stun);
    assert!(w.passes(e, &r), "Debuff matched hierarchically through Stun");
    w.add_loose_tag(e, curse_a);
    assert!(!w.passes(e, &r), "Curse ignored hierarchically through Curse.A");
    w.remove_loose_tag(e, curse_a);
    w.add_loose_tag(e, dead);
    assert!(!w.passes(e, &r), "the query fails");
    assert_eq!(r.tags(), TagSet::of(&[debuff, curse, dead]));
}

#[test]
fn f_tag_05_content_requirements_gate_application() {
    let mut w = world(
        r#"(
        tags: ["Status.Wet", "Status.Immune.Fire", "Element.Water"],
        attribute_sets: { "S": (attributes: { "X": (default: 0) }) },
        effects: {
            "Shock": (
                modifiers: [(attribute: "X", op: Add, magnitude: Scalable(coef: 1))],
                application_requirements: (
                    require: ["Status.Wet"],
                    ignore: ["Status.Immune"],
                    query: AnyTags(["Element"]),
                ),
            ),
        },
    )"#,
    );
    let c = w.content().clone();
    let x = c.attr("X").unwrap();
    let shock = c.effect("Shock").unwrap();
    let e = w.spawn_actor(&[c.attr_set("S").unwrap()]).unwrap();
    let try_apply = |w: &mut World<Plain>| w.apply_effect(w.make_spec(shock, 1, e), e);
    assert_eq!(try_apply(&mut w), Err(ApplyError::Requirements));
    w.add_loose_tag(e, c.tag("Status.Wet").unwrap());
    assert_eq!(try_apply(&mut w), Err(ApplyError::Requirements), "the query needs Element.*");
    w.add_loose_tag(e, c.tag("Element.Water").unwrap());
    assert_eq!(try_apply(&mut w), Ok(Applied::Executed));
    w.add_loose_tag(e, c.tag("Status.Immune.Fire").unwrap());
    assert_eq!(try_apply(&mut w), Err(ApplyError::Requirements), "Status.Immune.* is ignored");
    assert_eq!(w.base(e, x), Some(int(1)));
}

// ---------------------------------------------------------------------------------------------
// F-TAG-06 Category filters
// ---------------------------------------------------------------------------------------------

#[test]
fn f_tag_06_cue_tags_must_live_under_gameplay_cue() {
    let ok = Content::from_ron_str(
        r#"(tags: ["GameplayCue.Hit", "State.Stun"],
            effects: { "E": (cues: [(tag: "GameplayCue.Hit")]) })"#,
    );
    assert!(ok.is_ok(), "{:?}", ok.err());
    for bad in ["State.Stun", "GameplayCue"] {
        let text = format!(
            r#"(tags: ["GameplayCue.Hit", "State.Stun"],
                effects: {{ "E": (cues: [(tag: "{bad}")]) }})"#
        );
        let err = Content::from_ron_str(&text).unwrap_err();
        assert_eq!(err.kind, ContentErrorKind::InvalidValue, "{bad}: {err}");
        assert_eq!(err.path, "effects.E.cues[0].tag", "{bad}: {err}");
        assert!(err.message.contains("GameplayCue"), "{err}");
    }
    // Without any GameplayCue tag at all the category check still refuses the cue.
    let err = Content::from_ron_str(
        r#"(tags: ["State.Stun"], effects: { "E": (cues: [(tag: "State.Stun")]) })"#,
    )
    .unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::InvalidValue);
}
