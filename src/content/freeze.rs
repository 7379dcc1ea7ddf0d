//! Validation and freezing: raw content → [`Content`].
//!
//! Everything is resolved in name order so the result (and its hash) does not depend on the
//! order of files or of definitions inside them.

mod ability;
mod boxes;

use super::def::*;
use super::error::{Clip, ron_message, suggest};
use super::locate::{PathSeg, Position, locate, path_at, render};
use super::raw::*;
use super::{Content, ContentError, ContentErrorKind as K};
use crate::id::{AttrId, AttrSetId, CurveId, EffectDefId, FnId, TagId};
use crate::num::{Frame, Fx, TickRate, seconds_to_frames};
use crate::tag::{TagContainer, TagQuery, TagQueryExpr, TagRegistry, TagRequirements, TagSet};
use ahash::AHashMap;
use std::collections::BTreeMap;

/// The prefix every cue tag must have (F-GC-01).
pub(crate) const CUE_ROOT: &str = "GameplayCue";

/// A parsed source file.
struct Src<'a> {
    name: &'a str,
    text: &'a str,
    raw: RawContent,
}

/// A definition's location: file index and path.
#[derive(Clone)]
struct Loc {
    file: usize,
    path: Vec<PathSeg>,
}

impl Loc {
    fn at(&self, seg: impl Into<Seg>) -> Loc {
        let mut path = self.path.clone();
        path.push(seg.into().0);
        Loc { file: self.file, path }
    }
}

struct Seg(PathSeg);

impl From<&str> for Seg {
    fn from(s: &str) -> Self {
        Seg(PathSeg::Key(s.to_string()))
    }
}

impl From<&String> for Seg {
    fn from(s: &String) -> Self {
        Seg(PathSeg::Key(s.clone()))
    }
}

impl From<usize> for Seg {
    fn from(i: usize) -> Self {
        Seg(PathSeg::Index(i))
    }
}

fn root(file: usize, seg: &str) -> Loc {
    Loc { file, path: vec![PathSeg::Key(seg.to_string())] }
}

struct Cx<'a> {
    srcs: &'a [Src<'a>],
}

impl Cx<'_> {
    fn err(&self, loc: &Loc, kind: K, message: impl Into<String>) -> ContentError {
        let src = &self.srcs[loc.file];
        let (pos, _) = locate(src.text, &loc.path);
        ContentError {
            kind,
            file: src.name.to_string(),
            line: pos.line,
            col: pos.col,
            path: render(&loc.path),
            message: message.into(),
        }
    }

    fn where_(&self, loc: &Loc) -> String {
        let src = &self.srcs[loc.file];
        let (pos, _) = locate(src.text, &loc.path);
        format!("{}:{}:{} ({})", src.name, pos.line, pos.col, render(&loc.path))
    }
}

/// Resolution tables shared by the validators.
struct Names<'a> {
    cx: Cx<'a>,
    tags: TagRegistry,
    attrs: AHashMap<String, AttrId>,
    attr_names: Vec<String>,
    curves: AHashMap<String, CurveId>,
    effects: AHashMap<String, EffectDefId>,
    abilities: AHashMap<String, crate::id::AbilityDefId>,
    fns: AHashMap<String, (FnId, FnKind)>,
    hz: TickRate,
}

impl Names<'_> {
    fn tag(&self, loc: &Loc, name: &str) -> Result<TagId, ContentError> {
        self.tags.get(name).ok_or_else(|| {
            let mut msg = format!("unknown tag \"{}\"", Clip(name));
            if let Some(s) = suggest(name, self.tags.names().iter().map(String::as_str)) {
                msg.push_str(&format!(" (did you mean \"{}\"?)", Clip(s)));
            } else {
                msg.push_str(" (declare it in a `tags: [...]` list)");
            }
            self.cx.err(loc, K::UnknownTag, msg)
        })
    }

    fn tag_set(&self, loc: &Loc, names: &[String]) -> Result<TagSet, ContentError> {
        let mut s = TagSet::EMPTY;
        for (i, n) in names.iter().enumerate() {
            s.insert(self.tag(&loc.at(i), n)?);
        }
        Ok(s)
    }

    fn container(&self, loc: &Loc, names: &[String]) -> Result<TagContainer, ContentError> {
        Ok(self.tags.container(self.tag_set(loc, names)?))
    }

    fn attr(&self, loc: &Loc, name: &str) -> Result<AttrId, ContentError> {
        self.attrs.get(name).copied().ok_or_else(|| {
            let mut msg = format!("unknown attribute \"{}\"", Clip(name));
            if let Some(s) = suggest(name, self.attr_names.iter().map(String::as_str)) {
                msg.push_str(&format!(" (did you mean \"{}\"?)", Clip(s)));
            }
            self.cx.err(loc, K::UnknownAttribute, msg)
        })
    }

    fn curve(&self, loc: &Loc, name: &str) -> Result<CurveId, ContentError> {
        self.curves.get(name).copied().ok_or_else(|| {
            let mut msg = format!("unknown curve \"{}\"", Clip(name));
            if let Some(s) = suggest(name, self.curves.keys().map(String::as_str)) {
                msg.push_str(&format!(" (did you mean \"{}\"?)", Clip(s)));
            }
            self.cx.err(loc, K::UnknownCurve, msg)
        })
    }

    fn func(&self, name: &str) -> FnId {
        // Every name was collected by `collect_functions` before resolution.
        self.fns.get(name).map(|f| f.0).unwrap_or(FnId(u16::MAX))
    }

    fn requirements(
        &self,
        loc: &Loc,
        r: &RawRequirements,
    ) -> Result<TagRequirements, ContentError> {
        Ok(TagRequirements {
            require_all: self.tag_set(&loc.at("require"), &r.require)?,
            ignore_any: self.tag_set(&loc.at("ignore"), &r.ignore)?,
            query: match &r.query {
                Some(q) => Some(self.query(&loc.at("query"), q)?),
                None => None,
            },
        })
    }

    fn query(&self, loc: &Loc, q: &RawQuery) -> Result<TagQuery, ContentError> {
        Ok(TagQuery { expr: Some(self.query_expr(loc, q, 0)?) })
    }

    fn query_expr(
        &self,
        loc: &Loc,
        q: &RawQuery,
        depth: u32,
    ) -> Result<TagQueryExpr, ContentError> {
        if depth > 16 {
            return Err(self.cx.err(loc, K::Capacity, "tag queries may nest at most 16 levels"));
        }
        let inner = loc.at(0);
        let exprs = |v: &[RawQuery]| -> Result<Vec<TagQueryExpr>, ContentError> {
            v.iter().enumerate().map(|(i, e)| self.query_expr(&inner.at(i), e, depth + 1)).collect()
        };
        Ok(match q {
            RawQuery::AnyTags(t) => TagQueryExpr::AnyTags(self.tag_set(&inner, t)?),
            RawQuery::AllTags(t) => TagQueryExpr::AllTags(self.tag_set(&inner, t)?),
            RawQuery::NoTags(t) => TagQueryExpr::NoTags(self.tag_set(&inner, t)?),
            RawQuery::AnyExpr(v) => TagQueryExpr::AnyExpr(exprs(v)?),
            RawQuery::AllExpr(v) => TagQueryExpr::AllExpr(exprs(v)?),
            RawQuery::NoExpr(v) => TagQueryExpr::NoExpr(exprs(v)?),
        })
    }

    fn frames(&self, loc: &Loc, d: &Decimal) -> Result<Frame, ContentError> {
        let f = seconds_to_frames(&d.0, self.hz)
            .map_err(|e| self.cx.err(loc, K::InvalidValue, e.to_string()))?;
        if f == 0 {
            return Err(self.cx.err(loc, K::InvalidValue, "must be longer than 0 seconds"));
        }
        Ok(f)
    }
}

fn syntax_error(name: &str, text: &str, e: &ron::error::SpannedError) -> ContentError {
    use ron::error::Error as R;
    let line = e.span.start.line.try_into().unwrap_or(u32::MAX);
    let col = e.span.start.col.try_into().unwrap_or(u32::MAX);
    let pos = Position { line, col };
    let segs = path_at(text, pos);
    let mut message = match (&e.code, segs.last()) {
        (R::SuggestRawIdentifier(n), Some(PathSeg::Key(field))) => {
            bare_number(field, n).unwrap_or_else(|| ron_message(&e.code))
        }
        _ => ron_message(&e.code),
    };
    // ron's wording names serde containers and grammar; where it reads like the parser's
    // internals rather than the content format, say what is probably meant.
    let hint = match &e.code {
        R::ExpectedDifferentStructName { expected: "attribute_magnitude", .. } => Some(
            "(an `Attribute` magnitude wraps its fields in a second pair of parentheses: \
             `Attribute((attribute: \"Health\", side: Target))`)",
        ),
        R::ExpectedDifferentStructName { .. }
        | R::ExpectedNamedStructLike(_)
        | R::ExpectedStructName(_) => Some("(see docs/guide.md for the content format)"),
        R::Eof => Some("(the file ends before every bracket is closed)"),
        R::TrailingCharacters => {
            Some("after the end of the content (is a bracket closed too early?)")
        }
        _ => None,
    };
    if let Some(hint) = hint {
        message.push(' ');
        message.push_str(hint);
    }
    ContentError {
        kind: K::Syntax,
        file: name.to_string(),
        line,
        col,
        path: render(&segs),
        message,
    }
}

/// The message for a number written alone where a field takes a variant (ron reads it as an
/// invalid identifier): the forms the field takes, with the number put in them. `None` when
/// `field` is not a duration, period or magnitude or `n` is not a number.
fn bare_number(field: &str, n: &str) -> Option<String> {
    let n = Clip(n);
    if !n.0.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '+' | '.')) {
        return None;
    }
    let whole = n.0.bytes().all(|b| b.is_ascii_digit());
    let time = |others: &str| {
        let frames = if whole {
            format!("`Frames({n})` for {n} frames or ")
        } else {
            String::from("(`Frames(n)` takes a whole number of frames) ")
        };
        format!(
            "a number alone is not a duration: the unit must be said: write {frames}`Seconds({n})` \
             for {n} seconds{others}"
        )
    };
    let computed = "`SetByCaller(\"Data.…\")`, `Scalable(coef: …, curve: \"…\")`, \
                    `Attribute((attribute: \"…\", side: Source))`, `Custom(calc: \"…\")`";
    Some(match field {
        "duration" => time(&format!(" (the other forms: `Instant`, `Infinite`, {computed})")),
        "period" => time(&format!(" (the other forms: {computed})")),
        "end_after" | "cooldown_duration" => time(""),
        "magnitude" => format!(
            "a number alone is not a magnitude: write `Scalable(coef: {n})` for the constant {n} \
             (the other forms: {computed})"
        ),
        _ => return None,
    })
}

pub(crate) fn parse_raw(name: &str, text: &str) -> Result<RawContent, ContentError> {
    // `Some(…)` may be omitted. (UNWRAP_VARIANT_NEWTYPES stays off: it would break the
    // documented `Attribute((…))` form; a file may still enable it with
    // `#![enable(unwrap_variant_newtypes)]`.)
    let opts =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    opts.from_str::<RawContent>(text).map_err(|e| syntax_error(name, text, &e))
}

/// Merges named definitions from all files, reporting duplicates with both places.
fn gather<'a, T>(
    cx: &Cx<'_>,
    section: &str,
    per_file: impl Iterator<Item = (usize, &'a NamedMap<T>)>,
) -> Result<BTreeMap<String, (Loc, &'a T)>, ContentError>
where
    T: 'a,
{
    let mut out: BTreeMap<String, (Loc, &'a T)> = BTreeMap::new();
    for (file, map) in per_file {
        for (name, def) in &map.0 {
            let loc = root(file, section).at(name);
            if let Some((first, _)) = out.get(name) {
                return Err(cx.err(
                    &loc,
                    K::Duplicate,
                    format!(
                        "\"{}\" is defined twice; the first definition is at {}",
                        Clip(name),
                        cx.where_(first)
                    ),
                ));
            }
            if name.is_empty() {
                return Err(cx.err(&loc, K::InvalidValue, "a definition name cannot be empty"));
            }
            out.insert(name.clone(), (loc, def));
        }
    }
    Ok(out)
}

pub(crate) fn freeze(
    files: &[(String, String)],
    native_tags: &[String],
) -> Result<Content, ContentError> {
    let mut srcs = Vec::with_capacity(files.len());
    for (name, text) in files {
        srcs.push(Src { name, text, raw: parse_raw(name, text)? });
    }
    let cx = Cx { srcs: &srcs };

    let (mut settings, settings_loc) = freeze_settings(&cx)?;
    let tags = freeze_tags(&cx, native_tags)?;

    let (functions, fns) = freeze_functions(&cx)?;

    // Attribute sets and attributes.
    let sets = gather(
        &cx,
        "attribute_sets",
        srcs.iter().enumerate().map(|(i, s)| (i, &s.raw.attribute_sets)),
    )?;
    if sets.len() > crate::attribute::MAX_ATTR_SETS {
        return Err(ContentError::new(
            K::Capacity,
            String::new(),
            format!(
                "{} attribute sets exceed the limit of {}",
                sets.len(),
                crate::attribute::MAX_ATTR_SETS
            ),
        ));
    }
    let attr_src = gather_attributes(&cx, &sets)?;
    let attr_names: Vec<String> = attr_src.keys().cloned().collect();
    let attrs_lookup: AHashMap<String, AttrId> =
        attr_names.iter().enumerate().map(|(i, n)| (n.clone(), AttrId(i as u16))).collect();

    // Curves.
    let curve_src =
        gather(&cx, "curves", srcs.iter().enumerate().map(|(i, s)| (i, &s.raw.curves)))?;
    let curves_lookup: AHashMap<String, CurveId> =
        curve_src.keys().enumerate().map(|(i, n)| (n.clone(), CurveId(i as u16))).collect();

    // Effects (names first so definitions may refer to each other).
    let effect_src =
        gather(&cx, "effects", srcs.iter().enumerate().map(|(i, s)| (i, &s.raw.effects)))?;
    if effect_src.len() > usize::from(u16::MAX) {
        return Err(ContentError::new(K::Capacity, String::new(), "too many effects"));
    }
    let effects_lookup: AHashMap<String, EffectDefId> =
        effect_src.keys().enumerate().map(|(i, n)| (n.clone(), EffectDefId(i as u16))).collect();

    // Abilities, ability sets, timelines and cancel rules (names first: effects grant abilities).
    let ability_src =
        gather(&cx, "abilities", srcs.iter().enumerate().map(|(i, s)| (i, &s.raw.abilities)))?;
    if ability_src.len() > usize::from(u16::MAX) {
        return Err(ContentError::new(K::Capacity, String::new(), "too many abilities"));
    }
    let abilities_lookup: AHashMap<String, crate::id::AbilityDefId> = ability_src
        .keys()
        .enumerate()
        .map(|(i, n)| (n.clone(), crate::id::AbilityDefId(i as u16)))
        .collect();
    let timeline_src =
        gather(&cx, "timelines", srcs.iter().enumerate().map(|(i, s)| (i, &s.raw.timelines)))?;
    let set_src = gather(
        &cx,
        "ability_sets",
        srcs.iter().enumerate().map(|(i, s)| (i, &s.raw.ability_sets)),
    )?;
    let rules_src: Vec<(usize, usize, &RawCancelRule)> = srcs
        .iter()
        .enumerate()
        .flat_map(|(f, s)| {
            s.raw.cancel_on_tag_added.iter().enumerate().map(move |(i, r)| (f, i, r))
        })
        .collect();

    let names = Names {
        abilities: abilities_lookup,
        cx,
        tags,
        attrs: attrs_lookup,
        attr_names,
        curves: curves_lookup,
        effects: effects_lookup,
        fns,
        hz: settings.tick_rate,
    };

    let attrs = freeze_attrs(&names, &attr_src, &settings)?;
    let sets_out = freeze_attr_sets(&names, &sets, &attrs)?;

    let curves = freeze_curves(&names, &curve_src)?;

    let effects = freeze_effects(&names, &effect_src, &attrs, &curves)?;
    let attr_locs: Vec<Loc> = attr_src.values().map(|(l, _, _)| l.clone()).collect();
    check_live_capture_cycles(&names, &effect_src, &effects, &attrs, &attr_locs)?;
    let (cues, cue_policy) = freeze_cues(&names)?;
    let frozen_abilities =
        ability::freeze(&names, &effects, &ability_src, &timeline_src, &rules_src, &set_src)?;
    let body_src =
        gather(&names.cx, "bodies", srcs.iter().enumerate().map(|(i, s)| (i, &s.raw.bodies)))?;
    let bodies = boxes::freeze_bodies(&names, &body_src)?;
    if let Some(loc) = &settings_loc {
        let dead = srcs[loc.file].raw.settings.as_ref().and_then(|s| s.dead_tag.as_ref());
        if let Some(d) = dead {
            settings.dead_tag = Some(names.tag(&loc.at("dead_tag"), d)?);
        }
    }

    let mut content = Content {
        settings,
        attr_lookup: names.attrs.clone(),
        set_lookup: sets
            .keys()
            .enumerate()
            .map(|(i, n)| (n.clone(), AttrSetId(i as u16)))
            .collect(),
        curve_lookup: names.curves.clone(),
        effect_lookup: names.effects.clone(),
        ability_lookup: names.abilities.clone(),
        abilities: frozen_abilities.abilities,
        ability_sets: frozen_abilities.sets,
        timelines: frozen_abilities.timelines,
        cancel_rules: frozen_abilities.rules,
        bodies,
        cues,
        cue_policy,
        tags: names.tags,
        attrs,
        sets: sets_out,
        curves,
        effects,
        accel: super::Accel::default(),
        functions,
        hash: 0,
    };
    content.accel = super::Accel::new(&content);
    let hash = twox_hash::XxHash3_64::oneshot(canonical_text(&content).as_bytes());
    Ok(Content { hash, ..content })
}

/// The function names the content references, each with its kind (one kind per name), and
/// their ids.
#[allow(clippy::type_complexity, reason = "the list `Content` keeps and its lookup")]
fn freeze_functions(
    cx: &Cx<'_>,
) -> Result<(Vec<FnRef>, AHashMap<String, (FnId, FnKind)>), ContentError> {
    let mut fn_kinds: BTreeMap<String, (FnKind, Loc)> = BTreeMap::new();
    collect_functions(cx, cx.srcs, &mut fn_kinds)?;
    let functions: Vec<FnRef> = fn_kinds
        .iter()
        .map(|(name, (kind, _))| FnRef { name: name.clone(), kind: *kind })
        .collect();
    if functions.len() > usize::from(u16::MAX) {
        return Err(ContentError::new(
            K::Capacity,
            String::new(),
            "too many registered function names",
        ));
    }
    let fns: AHashMap<String, (FnId, FnKind)> = functions
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.clone(), (FnId(i as u16), f.kind)))
        .collect();
    Ok((functions, fns))
}

/// Every attribute by name (names are global), with where it is and its set.
fn gather_attributes<'a>(
    cx: &Cx<'_>,
    sets: &BTreeMap<String, (Loc, &'a RawAttrSet)>,
) -> Result<BTreeMap<String, (Loc, &'a RawAttr, AttrSetId)>, ContentError> {
    let mut attr_src: BTreeMap<String, (Loc, &RawAttr, AttrSetId)> = BTreeMap::new();
    for (set_index, (_, (set_loc, set))) in sets.iter().enumerate() {
        let set: &'a RawAttrSet = set;
        for (name, a) in &set.attributes.0 {
            let loc = set_loc.at("attributes").at(name);
            if let Some((first, _, _)) = attr_src.get(name) {
                return Err(cx.err(
                    &loc,
                    K::Duplicate,
                    format!("attribute \"{}\" is defined twice (attribute names are global); the first definition is at {}", Clip(name), cx.where_(first)),
                ));
            }
            if name.is_empty() {
                return Err(cx.err(&loc, K::InvalidValue, "an attribute name cannot be empty"));
            }
            attr_src.insert(name.clone(), (loc, a, AttrSetId(set_index as u16)));
        }
    }
    if attr_src.len() > 4096 {
        return Err(ContentError::new(
            K::Capacity,
            String::new(),
            format!("{} attributes exceed the limit of 4096", attr_src.len()),
        ));
    }
    Ok(attr_src)
}

/// The `settings` section (at most one file gives it), and where it is.
fn freeze_settings(cx: &Cx<'_>) -> Result<(ContentSettings, Option<Loc>), ContentError> {
    let mut settings = ContentSettings::default();
    let mut settings_loc: Option<Loc> = None;
    for (file, src) in cx.srcs.iter().enumerate() {
        if let Some(s) = &src.raw.settings {
            let loc = root(file, "settings");
            if let Some(first) = &settings_loc {
                return Err(cx.err(
                    &loc,
                    K::Duplicate,
                    format!("settings are given twice; the first are at {}", cx.where_(first)),
                ));
            }
            if let Some(hz) = s.tick_rate {
                if hz == 0 {
                    return Err(cx.err(
                        &loc.at("tick_rate"),
                        K::InvalidValue,
                        "the tick rate must be at least 1",
                    ));
                }
                settings.tick_rate = TickRate(hz);
            }
            if let Some(p) = s.default_mul_policy {
                settings.default_mul_policy = p;
            }
            if let Some(c) = s.max_cascade_steps {
                if c == 0 {
                    return Err(cx.err(
                        &loc.at("max_cascade_steps"),
                        K::InvalidValue,
                        "must be at least 1",
                    ));
                }
                settings.max_cascade_steps = c;
            }
            settings_loc = Some(loc);
        }
    }
    Ok((settings, settings_loc))
}

/// The tag registry: the native tags, every file's `tags`, and the `tag_aliases`.
fn freeze_tags(cx: &Cx<'_>, native_tags: &[String]) -> Result<TagRegistry, ContentError> {
    let mut tag_names: Vec<&str> = native_tags.iter().map(String::as_str).collect();
    for (file, src) in cx.srcs.iter().enumerate() {
        for (i, t) in src.raw.tags.iter().enumerate() {
            if let Err(e) = crate::tag::registry_validate_name(t) {
                return Err(cx.err(&root(file, "tags").at(i), K::UnknownTag, e.to_string()));
            }
            tag_names.push(t);
        }
    }
    for (i, t) in native_tags.iter().enumerate() {
        crate::tag::registry_validate_name(t).map_err(|e| {
            ContentError::new(
                K::UnknownTag,
                "<native tags>".into(),
                format!("native tag #{i}: {e}"),
            )
        })?;
    }
    let mut alias_pairs: Vec<(&str, &str)> = Vec::new();
    let aliases = gather(
        cx,
        "tag_aliases",
        cx.srcs.iter().enumerate().map(|(i, s)| (i, &s.raw.tag_aliases)),
    )?;
    for (alias, (loc, target)) in &aliases {
        if let Err(e) = crate::tag::registry_validate_name(alias) {
            return Err(cx.err(loc, K::UnknownTag, e.to_string()));
        }
        alias_pairs.push((alias.as_str(), target.as_str()));
    }
    let tags =
        TagRegistry::new(tag_names.iter().copied(), alias_pairs.iter().copied()).map_err(|e| {
            let loc = match &e {
                crate::tag::TagRegistryError::BadAlias { alias, .. } => {
                    aliases.get(alias).map(|a| a.0.clone())
                }
                _ => None,
            };
            match loc {
                Some(loc) => cx.err(&loc, K::UnknownTag, e.to_string()),
                None => ContentError::new(
                    K::Capacity,
                    cx.srcs.first().map(|s| s.name.to_string()).unwrap_or_default(),
                    e.to_string(),
                ),
            }
        })?;
    Ok(tags)
}

/// The attributes in name order: bounds, filter, policy, and which attributes each one clamps.
fn freeze_attrs(
    names: &Names<'_>,
    attr_src: &BTreeMap<String, (Loc, &RawAttr, AttrSetId)>,
    settings: &ContentSettings,
) -> Result<Vec<AttrDef>, ContentError> {
    let mut attrs: Vec<AttrDef> = Vec::with_capacity(attr_src.len());
    for (name, (loc, a, set)) in attr_src {
        let bound =
            |field: &str, b: &Option<RawBound>| -> Result<Option<AttrBound>, ContentError> {
                Ok(match b {
                    None => None,
                    Some(RawBound::Const(n)) => Some(AttrBound::Const(n.0)),
                    Some(RawBound::Attr(other)) => {
                        let l = loc.at(field);
                        let id = names.attr(&l, other)?;
                        if other == name {
                            return Err(names.cx.err(
                                &l,
                                K::Cycle,
                                format!("attribute \"{}\" cannot bound itself", Clip(name)),
                            ));
                        }
                        Some(AttrBound::Attr(id))
                    }
                })
            };
        let min = bound("min", &a.min)?;
        let max = bound("max", &a.max)?;
        if let (Some(AttrBound::Const(lo)), Some(AttrBound::Const(hi))) = (min, max)
            && lo > hi
        {
            return Err(names.cx.err(
                &loc.at("min"),
                K::InvalidValue,
                format!("min {lo} is greater than max {hi}"),
            ));
        }
        let filter = match &a.filter {
            RawModFilter::All => ModFilter::All,
            RawModFilter::MostNegativeAllPositive => ModFilter::MostNegativeAllPositive,
            RawModFilter::GreatestOnly => ModFilter::GreatestOnly,
            RawModFilter::Custom(f) => ModFilter::Custom(names.func(f)),
        };
        if a.transient && (min.is_some() || max.is_some()) {
            return Err(names.cx.err(
                loc,
                K::InvalidCombination,
                "a transient (meta) attribute cannot have clamps: it only carries a value into post-execute",
            ));
        }
        attrs.push(AttrDef {
            name: name.clone(),
            set: *set,
            default: a.default.0,
            min,
            max,
            clamp_mode: a.clamp_mode,
            apply_to_base: a.apply_to_base,
            mul_policy: a.mul_policy.unwrap_or(settings.default_mul_policy),
            filter,
            transient: a.transient,
            clamp_dependents: Vec::new(),
        });
    }
    // Clamp dependency edges and cycles.
    let n_attrs = attrs.len();
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); n_attrs];
    for (i, a) in attrs.iter().enumerate() {
        for b in [a.min, a.max].into_iter().flatten() {
            if let AttrBound::Attr(src) = b {
                deps[src.index()].push(i);
            }
        }
    }
    for (i, d) in deps.iter_mut().enumerate() {
        d.sort_unstable();
        d.dedup();
        attrs[i].clamp_dependents = d.iter().map(|j| AttrId(*j as u16)).collect();
    }
    Ok(attrs)
}

/// The attribute sets in name order: their attributes, hooks and level tables.
fn freeze_attr_sets(
    names: &Names<'_>,
    sets: &BTreeMap<String, (Loc, &RawAttrSet)>,
    attrs: &[AttrDef],
) -> Result<Vec<AttrSetDef>, ContentError> {
    let mut sets_out: Vec<AttrSetDef> = Vec::with_capacity(sets.len());
    for (i, (name, (loc, s))) in sets.iter().enumerate() {
        let set_id = AttrSetId(i as u16);
        let mut levels: Vec<AttrLevelRow> = Vec::with_capacity(s.levels.len());
        for (r, row) in s.levels.iter().enumerate() {
            let rl = loc.at("levels").at(r);
            if let Some(prev) = levels.last()
                && row.level <= prev.level
            {
                return Err(names.cx.err(
                    &rl.at("level"),
                    K::InvalidValue,
                    format!(
                        "level {} comes after level {}: list the rows in strictly increasing \
                         level order",
                        row.level, prev.level
                    ),
                ));
            }
            let mut values: Vec<(AttrId, Fx)> = Vec::with_capacity(row.values.0.len());
            for (an, v) in &row.values.0 {
                let vl = rl.at("values").at(an.as_str());
                let id = names.attr(&vl, an)?;
                if attrs[id.index()].set != set_id {
                    return Err(names.cx.err(
                        &vl,
                        K::InvalidValue,
                        format!(
                            "attribute \"{}\" belongs to set \"{}\", not \"{}\": a level \
                             table sets only its own set's attributes",
                            Clip(an),
                            Clip(
                                sets.iter()
                                    .nth(attrs[id.index()].set.index())
                                    .map_or("?", |(n, _)| n)
                            ),
                            Clip(name)
                        ),
                    ));
                }
                if values.iter().any(|(a, _)| *a == id) {
                    return Err(names.cx.err(
                        &vl,
                        K::Duplicate,
                        format!("attribute \"{}\" is given twice at level {}", Clip(an), row.level),
                    ));
                }
                values.push((id, v.0));
            }
            values.sort_by_key(|(a, _)| *a);
            levels.push(AttrLevelRow { level: row.level, values });
        }
        sets_out.push(AttrSetDef {
            name: name.clone(),
            attributes: attrs
                .iter()
                .enumerate()
                .filter(|(_, a)| a.set == set_id)
                .map(|(j, _)| AttrId(j as u16))
                .collect(),
            post_execute: s.post_execute.as_deref().map(|f| names.func(f)),
            pre_change: s.pre_change.as_deref().map(|f| names.func(f)),
            levels,
        });
    }
    Ok(sets_out)
}

/// The curves in name order: at least one point, levels strictly increasing.
fn freeze_curves(
    names: &Names<'_>,
    curve_src: &BTreeMap<String, (Loc, &RawCurve)>,
) -> Result<Vec<CurveDef>, ContentError> {
    let mut curves = Vec::with_capacity(curve_src.len());
    for (name, (loc, c)) in curve_src {
        if c.points.is_empty() {
            return Err(names.cx.err(
                &loc.at("points"),
                K::InvalidValue,
                "a curve needs at least one (level, value) point",
            ));
        }
        for (i, w) in c.points.windows(2).enumerate() {
            if w[1].0 <= w[0].0 {
                return Err(names.cx.err(
                    &loc.at("points").at(i + 1),
                    K::InvalidValue,
                    format!(
                        "levels must increase strictly: level {} follows level {}",
                        w[1].0, w[0].0
                    ),
                ));
            }
        }
        curves.push(CurveDef {
            name: name.clone(),
            interp: c.interp,
            points: c.points.iter().map(|(l, v)| (*l, v.0)).collect(),
        });
    }
    Ok(curves)
}

/// The effects in name order, inheritance resolved, and which ones keep their spec.
fn freeze_effects(
    names: &Names<'_>,
    effect_src: &BTreeMap<String, (Loc, &RawEffect)>,
    attrs: &[AttrDef],
    curves: &[CurveDef],
) -> Result<Vec<EffectDef>, ContentError> {
    let mut effects = Vec::with_capacity(effect_src.len());
    for (name, (loc, _)) in effect_src {
        let resolved = resolve_inheritance(names, effect_src, name)?;
        effects.push(freeze_effect(names, attrs, curves, loc, name, &resolved)?);
    }
    // An effect whose modifiers a source tag filter may leave out keeps its spec: the filter
    // reads the source tags captured when that spec was made (F-GE-10).
    let mut source_filtered = vec![false; attrs.len()];
    for e in &effects {
        for m in e.modifiers.iter().map(|m| &m.magnitude).chain(e.extra_magnitudes()) {
            if let MagnitudeDef::Attribute { attr, filter, .. } = *m
                && e.tag_filter(filter).is_some_and(|f| !f.source.is_empty())
            {
                source_filtered[attr.index()] = true;
            }
        }
    }
    for e in &mut effects {
        if !e.is_instant()
            && !e.is_periodic()
            && e.modifiers.iter().any(|m| source_filtered[m.attr.index()])
        {
            e.keeps_spec = true;
        }
    }
    Ok(effects)
}

/// The cue definitions by tag, and the per-tag policy table (nearest ancestor's definition
/// wins).
fn freeze_cues(names: &Names<'_>) -> Result<(Vec<CueDef>, Vec<CuePolicy>), ContentError> {
    // Cue definitions and the per-tag policy table (nearest ancestor's definition wins).
    let cue_src =
        gather(&names.cx, "cues", names.cx.srcs.iter().enumerate().map(|(i, s)| (i, &s.raw.cues)))?;
    let mut cues: Vec<CueDef> = Vec::with_capacity(cue_src.len());
    for (name, (loc, c)) in &cue_src {
        let tag = names.tag(loc, name)?;
        check_cue_tag(names, loc, tag, name)?;
        cues.push(CueDef { tag, policy: c.policy });
    }
    cues.sort_by_key(|c| c.tag);
    let mut cue_policy = vec![CuePolicy::default(); names.tags.len()];
    for t in 0..names.tags.len() {
        let id = TagId(t as u16);
        cue_policy[t] = match cues.iter().find(|c| c.tag == id) {
            Some(c) => c.policy,
            None => names.tags.parent(id).map(|p| cue_policy[p.index()]).unwrap_or_default(),
        };
    }
    Ok((cues, cue_policy))
}

/// Collects every function name content refers to, checking each is used for one kind only.
fn collect_functions(
    cx: &Cx<'_>,
    srcs: &[Src<'_>],
    out: &mut BTreeMap<String, (FnKind, Loc)>,
) -> Result<(), ContentError> {
    let mut add = |name: &str, kind: FnKind, loc: Loc| -> Result<(), ContentError> {
        if name.is_empty() {
            return Err(cx.err(&loc, K::InvalidValue, "a function name cannot be empty"));
        }
        match out.get(name) {
            Some((k, first)) if *k != kind => Err(cx.err(
                &loc,
                K::FunctionKind,
                format!(
                    "\"{}\" is used as {} here but as {} at {}",
                    Clip(name),
                    kind.with_article(),
                    k.with_article(),
                    cx.where_(first)
                ),
            )),
            Some(_) => Ok(()),
            None => {
                out.insert(name.to_string(), (kind, loc));
                Ok(())
            }
        }
    };
    for (file, src) in srcs.iter().enumerate() {
        for (set_name, set) in &src.raw.attribute_sets.0 {
            let sl = root(file, "attribute_sets").at(set_name);
            if let Some(f) = &set.post_execute {
                add(f, FnKind::PostExecute, sl.at("post_execute"))?;
            }
            if let Some(f) = &set.pre_change {
                add(f, FnKind::PreChange, sl.at("pre_change"))?;
            }
            for (an, a) in &set.attributes.0 {
                if let RawModFilter::Custom(f) = &a.filter {
                    add(f, FnKind::ModFilter, sl.at("attributes").at(an).at("filter"))?;
                }
            }
        }
        for (en, e) in &src.raw.effects.0 {
            let el = root(file, "effects").at(en);
            for (i, m) in e.modifiers.iter().flatten().enumerate() {
                if let RawMagnitude::Custom { calc, .. } = &m.magnitude {
                    add(calc, FnKind::Calc, el.at("modifiers").at(i).at("magnitude"))?;
                }
            }
            for (i, x) in e.executions.iter().flatten().enumerate() {
                add(&x.calc, FnKind::Execution, el.at("executions").at(i).at("calc"))?;
                for (j, m) in x.modifiers.iter().enumerate() {
                    if let RawMagnitude::Custom { calc, .. } = &m.magnitude {
                        let ml = el.at("executions").at(i).at("modifiers").at(j).at("magnitude");
                        add(calc, FnKind::Calc, ml)?;
                    }
                }
            }
            let times = [
                ("duration", e.duration.as_ref().and_then(RawDuration::as_magnitude)),
                ("period", e.period.as_ref().and_then(RawPeriod::as_magnitude)),
            ];
            for (field, m) in times {
                if let Some(RawMagnitude::Custom { calc, .. }) = &m {
                    add(calc, FnKind::Calc, el.at(field).at("calc"))?;
                }
            }
            for (i, r) in e.custom_requirements.iter().flatten().enumerate() {
                add(r, FnKind::Requirement, el.at("custom_requirements").at(i))?;
            }
        }
        for (an, a) in &src.raw.abilities.0 {
            let al = root(file, "abilities").at(an);
            if let Some(b) = &a.behaviour {
                add(b, FnKind::Behaviour, al.at("behaviour"))?;
            }
            if let Some(c) = &a.can_activate {
                add(c, FnKind::CanActivate, al.at("can_activate"))?;
            }
        }
    }
    Ok(())
}

/// Applies `inherits` chains: unset fields come from the parent, tag lists are merged.
fn resolve_inheritance(
    names: &Names<'_>,
    src: &BTreeMap<String, (Loc, &RawEffect)>,
    name: &str,
) -> Result<RawEffect, ContentError> {
    let Some((loc, raw)) = src.get(name) else {
        return Ok(RawEffect::default());
    };
    let mut chain: Vec<&str> = vec![name];
    let mut out = (*raw).clone();
    let mut cur = *raw;
    let mut cur_loc = loc.clone();
    while let Some(parent) = &cur.inherits {
        let Some((ploc, praw)) = src.get(parent) else {
            let mut msg = format!("inherits from unknown effect \"{}\"", Clip(parent));
            if let Some(s) = suggest(parent, src.keys().map(String::as_str)) {
                msg.push_str(&format!(" (did you mean \"{}\"?)", Clip(s)));
            }
            return Err(names.cx.err(&cur_loc.at("inherits"), K::UnknownEffect, msg));
        };
        if chain.contains(&parent.as_str()) {
            chain.push(parent);
            return Err(names.cx.err(
                &loc.at("inherits"),
                K::Cycle,
                format!("inheritance cycle: {}", chain.join(" → ")),
            ));
        }
        chain.push(parent);
        merge_parent(&mut out, praw);
        cur = praw;
        cur_loc = ploc.clone();
    }
    Ok(out)
}

fn merge_parent(child: &mut RawEffect, parent: &RawEffect) {
    fn take<T: Clone>(c: &mut Option<T>, p: &Option<T>) {
        if c.is_none() {
            c.clone_from(p);
        }
    }
    fn union(c: &mut Vec<String>, p: &[String]) {
        let mut merged: Vec<String> = p.to_vec();
        merged.append(c);
        *c = merged;
    }
    take(&mut child.duration, &parent.duration);
    take(&mut child.period, &parent.period);
    take(&mut child.execute_on_application, &parent.execute_on_application);
    take(&mut child.modifiers, &parent.modifiers);
    take(&mut child.executions, &parent.executions);
    take(&mut child.immunity_query, &parent.immunity_query);
    take(&mut child.application_requirements, &parent.application_requirements);
    take(&mut child.ongoing_requirements, &parent.ongoing_requirements);
    take(&mut child.stacking, &parent.stacking);
    take(&mut child.cues, &parent.cues);
    take(&mut child.custom_requirements, &parent.custom_requirements);
    take(&mut child.granted_abilities, &parent.granted_abilities);
    take(&mut child.hitstop, &parent.hitstop);
    take(&mut child.instigator_hitstop, &parent.instigator_hitstop);
    union(&mut child.asset_tags, &parent.asset_tags);
    union(&mut child.granted_tags, &parent.granted_tags);
    union(&mut child.blocked_ability_tags, &parent.blocked_ability_tags);
    union(&mut child.remove_effects_with_tags, &parent.remove_effects_with_tags);
    union(&mut child.immunity_tags, &parent.immunity_tags);
}

/// The message refusing a finite duration longer than [`crate::num::MAX_FINITE_FRAMES`].
pub(super) fn too_long(frames: u32, hint: &str) -> String {
    format!(
        "{frames} frames is too long for a timer that ends (at most {} frames, about 414 days \
         at 60 Hz); {hint}",
        crate::num::MAX_FINITE_FRAMES
    )
}

fn freeze_effect(
    names: &Names<'_>,
    attrs: &[AttrDef],
    curves: &[CurveDef],
    loc: &Loc,
    name: &str,
    r: &RawEffect,
) -> Result<EffectDef, ContentError> {
    let mut e =
        EffectSrc { names, attrs, curves, loc, r, sbc: Vec::new(), tag_filters: Vec::new() };
    let duration = e.duration()?;
    let instant = duration.is_instant();
    let (period, period_magnitude) = e.period(instant)?;
    let periodic = period > 0 || period_magnitude.is_some();
    let execute_on_application = r.execute_on_application.unwrap_or(false);
    if execute_on_application && !periodic {
        return Err(names.cx.err(
            &loc.at("execute_on_application"),
            K::InvalidCombination,
            "execute_on_application needs a period",
        ));
    }
    let executes = instant || periodic;
    let modifiers = e.modifiers(executes)?;
    e.check_set_by_caller_keys(loc)?;
    let (executions, scoped_modifiers) = e.executions(executes)?;
    let EffectTags {
        asset_tags,
        granted_tags,
        blocked_ability_tags,
        remove_effects_with_tags,
        immunity_tags,
        immunity_query,
        application_requirements,
        ongoing_requirements,
    } = e.tags(instant)?;
    let stacking = e.stacking(instant)?;
    let cues = e.cues(instant, periodic)?;

    let custom_requirements =
        r.custom_requirements.as_deref().unwrap_or(&[]).iter().map(|f| names.func(f)).collect();
    let has_live_captures = !executes && modifiers.iter().any(|m| m.magnitude.is_live());
    // Calculations may capture source attributes live: count them conservatively.
    let has_live_source_captures = !executes
        && modifiers.iter().any(|m| {
            matches!(
                m.magnitude,
                MagnitudeDef::Attribute { side: CaptureSide::Source, snapshot: false, .. }
                    | MagnitudeDef::Custom { .. }
            )
        });
    let owned_tags = asset_tags.union(&granted_tags);
    let keeps_spec = !instant
        && (!executions.is_empty()
            || modifiers.iter().any(|m| matches!(m.magnitude, MagnitudeDef::Custom { .. })));
    Ok(EffectDef {
        name: name.to_string(),
        duration,
        period,
        period_magnitude,
        execute_on_application,
        modifiers,
        executions,
        asset_tags,
        granted_tags,
        owned_tags,
        blocked_ability_tags,
        remove_effects_with_tags,
        immunity_tags,
        immunity_query,
        application_requirements,
        ongoing_requirements,
        stacking,
        cues,
        custom_requirements,
        set_by_caller_keys: e.sbc,
        has_live_captures,
        has_live_source_captures,
        keeps_spec,
        tag_filters: e.tag_filters,
        scoped_modifiers,
        granted_abilities: ability::granted(
            names,
            &loc.at("granted_abilities"),
            r.granted_abilities.as_deref().unwrap_or(&[]),
            instant,
        )?,
        hitstop: hitstop_frames(&names.cx, &loc.at("hitstop"), r.hitstop)?,
        instigator_hitstop: hitstop_frames(
            &names.cx,
            &loc.at("instigator_hitstop"),
            r.instigator_hitstop,
        )?,
    })
}

/// An effect being frozen: its raw definition, where it is written, the tables it resolves
/// against, and what its magnitudes read so far.
struct EffectSrc<'a> {
    names: &'a Names<'a>,
    attrs: &'a [AttrDef],
    curves: &'a [CurveDef],
    loc: &'a Loc,
    r: &'a RawEffect,
    /// The SetByCaller keys its magnitudes read.
    sbc: Vec<TagId>,
    /// The tag filters of the attributes its magnitudes capture.
    tag_filters: Vec<AttrTagFilterDef>,
}

/// An effect's tags and tag requirements.
struct EffectTags {
    asset_tags: TagContainer,
    granted_tags: TagContainer,
    blocked_ability_tags: TagSet,
    remove_effects_with_tags: TagSet,
    immunity_tags: TagSet,
    immunity_query: Option<TagQuery>,
    application_requirements: TagRequirements,
    ongoing_requirements: TagRequirements,
}

impl EffectSrc<'_> {
    fn err(&self, loc: &Loc, kind: K, message: impl Into<String>) -> ContentError {
        self.names.cx.err(loc, kind, message)
    }

    fn duration(&mut self) -> Result<DurationDef, ContentError> {
        let dl = self.loc.at("duration");
        Ok(match &self.r.duration {
            None | Some(RawDuration::Instant) => DurationDef::Instant,
            Some(RawDuration::Infinite) => DurationDef::Infinite,
            Some(RawDuration::Frames(0)) => {
                return Err(self.err(
                    &dl,
                    K::InvalidValue,
                    "a duration must be at least 1 frame (use Instant for effects that execute once)",
                ));
            }
            Some(RawDuration::Frames(f)) => DurationDef::Frames(self.finite_duration(&dl, *f)?),
            Some(RawDuration::Seconds(d)) => {
                let sl = dl.at(0);
                let f = self.names.frames(&sl, d)?;
                DurationDef::Frames(self.finite_duration(&sl, f)?)
            }
            Some(RawDuration::SetByCaller(t)) => {
                let tag = self.names.tag(&dl.at(0), t)?;
                self.sbc.push(tag);
                DurationDef::SetByCaller(tag)
            }
            // Scalable, Attribute or Custom: frames evaluated at application (F-GA-08).
            Some(d) => DurationDef::Magnitude(self.time_magnitude("duration", d.as_magnitude())?),
        })
    }

    /// A duration of `f` frames written at `at`: at most [`crate::num::MAX_FINITE_FRAMES`].
    fn finite_duration(&self, at: &Loc, f: Frame) -> Result<Frame, ContentError> {
        if f > crate::num::MAX_FINITE_FRAMES {
            return Err(self.err(
                at,
                K::InvalidValue,
                too_long(f, "use Infinite for an effect that lasts until it is removed"),
            ));
        }
        Ok(f)
    }

    /// The period in frames, or 0 and the magnitude giving it at application.
    fn period(&mut self, instant: bool) -> Result<(Frame, Option<MagnitudeDef>), ContentError> {
        let pl = self.loc.at("period");
        Ok(match &self.r.period {
            None => (0, None),
            Some(_) if instant => {
                return Err(self.err(
                    &pl,
                    K::InvalidCombination,
                    "an instant effect cannot be periodic (give it a duration or make it Infinite)",
                ));
            }
            Some(RawPeriod::Frames(0)) => {
                return Err(self.err(&pl, K::InvalidValue, "a period must be at least 1 frame"));
            }
            Some(RawPeriod::Frames(f)) => (*f, None),
            Some(RawPeriod::Seconds(d)) => (self.names.frames(&pl.at(0), d)?, None),
            // SetByCaller, Scalable, Attribute or Custom: frames evaluated at application.
            Some(p) => (0, Some(self.time_magnitude("period", p.as_magnitude())?)),
        })
    }

    /// A duration or period (`field`) evaluated at application, as a magnitude.
    fn time_magnitude(
        &mut self,
        field: &str,
        m: Option<RawMagnitude>,
    ) -> Result<MagnitudeDef, ContentError> {
        let ml = self.loc.at(field);
        let Some(m) = m else {
            return Err(self.err(&ml, K::InvalidValue, format!("unsupported {field} form")));
        };
        let m = freeze_magnitude(
            self.names,
            self.attrs,
            &ml,
            &m,
            &mut self.sbc,
            &mut self.tag_filters,
        )?;
        check_time_magnitude(self.names, self.curves, &ml, &m, field)?;
        Ok(m)
    }

    /// The modifiers; a transient attribute only for an effect that `executes`.
    fn modifiers(&mut self, executes: bool) -> Result<Vec<ModifierDef>, ContentError> {
        let raw_mods = self.r.modifiers.as_deref().unwrap_or(&[]);
        if raw_mods.len() > MAX_MODIFIERS {
            return Err(self.err(
                &self.loc.at("modifiers").at(MAX_MODIFIERS),
                K::Capacity,
                format!("an effect may have at most {MAX_MODIFIERS} modifiers; split it into several effects"),
            ));
        }
        let mut modifiers = Vec::with_capacity(raw_mods.len());
        for (i, m) in raw_mods.iter().enumerate() {
            modifiers.push(self.modifier(&self.loc.at("modifiers").at(i), m, executes)?);
        }
        Ok(modifiers)
    }

    fn modifier(
        &mut self,
        ml: &Loc,
        m: &RawModifier,
        executes: bool,
    ) -> Result<ModifierDef, ContentError> {
        let names = self.names;
        let attr = names.attr(&ml.at("attribute"), &m.attribute)?;
        if self.attrs[attr.index()].transient && !executes {
            return Err(self.err(
                &ml.at("attribute"),
                K::InvalidCombination,
                format!(
                    "\"{}\" is a transient (meta) attribute: only instant or periodic effects can change it",
                    Clip(&m.attribute)
                ),
            ));
        }
        let magnitude = freeze_magnitude(
            names,
            self.attrs,
            &ml.at("magnitude"),
            &m.magnitude,
            &mut self.sbc,
            &mut self.tag_filters,
        )?;
        if m.op == ModOp::Divide
            && let MagnitudeDef::Scalable { coef, curve: None } = magnitude
            && coef == crate::num::ZERO
        {
            return Err(self.err(&ml.at("magnitude"), K::InvalidValue, "dividing by a constant 0"));
        }
        Ok(ModifierDef {
            attr,
            op: m.op,
            magnitude,
            source_tags: names.requirements(&ml.at("source_tags"), &m.source_tags)?,
            target_tags: names.requirements(&ml.at("target_tags"), &m.target_tags)?,
            reevaluate_each_period: m.reevaluate_each_period,
        })
    }

    /// At most [`MAX_SET_BY_CALLER_KEYS`] SetByCaller keys read so far (the error points at
    /// `at`); sorts them.
    fn check_set_by_caller_keys(&mut self, at: &Loc) -> Result<(), ContentError> {
        if self.sbc.len() > MAX_SET_BY_CALLER_KEYS {
            return Err(self.err(
                at,
                K::Capacity,
                format!(
                    "the effect reads {} SetByCaller keys; at most {MAX_SET_BY_CALLER_KEYS} are allowed",
                    self.sbc.len()
                ),
            ));
        }
        self.sbc.sort_unstable();
        Ok(())
    }

    /// The executions (only for an effect that `executes`) and their scoped modifiers.
    fn executions(
        &mut self,
        executes: bool,
    ) -> Result<(Vec<FnId>, Vec<ScopedModifierDef>), ContentError> {
        let loc = self.loc;
        let raw_exec = self.r.executions.as_deref().unwrap_or(&[]);
        if !raw_exec.is_empty() && !executes {
            return Err(self.err(
                &loc.at("executions"),
                K::InvalidCombination,
                "executions run only for instant effects or periodic executions; give the effect a period or make it Instant",
            ));
        }
        if raw_exec.len() > 4 {
            return Err(self.err(
                &loc.at("executions").at(4),
                K::Capacity,
                "an effect may have at most 4 executions",
            ));
        }
        let executions: Vec<FnId> = raw_exec.iter().map(|x| self.names.func(&x.calc)).collect();
        let scoped_modifiers = freeze_scoped_modifiers(
            self.names,
            self.attrs,
            loc,
            raw_exec,
            &mut self.sbc,
            &mut self.tag_filters,
        )?;
        self.check_set_by_caller_keys(&loc.at("executions"))?;
        if self.tag_filters.len() > usize::from(u8::MAX) {
            return Err(self.err(loc, K::Capacity, "too many tag filters in one effect"));
        }
        Ok((executions, scoped_modifiers))
    }

    /// The tags and tag requirements; an instant effect, never active, has none that act
    /// while it is active.
    fn tags(&self, instant: bool) -> Result<EffectTags, ContentError> {
        let (names, loc, r) = (self.names, self.loc, self.r);
        let tags = EffectTags {
            asset_tags: names.container(&loc.at("asset_tags"), &r.asset_tags)?,
            granted_tags: names.container(&loc.at("granted_tags"), &r.granted_tags)?,
            blocked_ability_tags: names
                .tag_set(&loc.at("blocked_ability_tags"), &r.blocked_ability_tags)?,
            remove_effects_with_tags: names
                .tag_set(&loc.at("remove_effects_with_tags"), &r.remove_effects_with_tags)?,
            immunity_tags: names.tag_set(&loc.at("immunity_tags"), &r.immunity_tags)?,
            immunity_query: match &r.immunity_query {
                Some(q) => Some(names.query(&loc.at("immunity_query"), q)?),
                None => None,
            },
            application_requirements: match &r.application_requirements {
                Some(q) => names.requirements(&loc.at("application_requirements"), q)?,
                None => TagRequirements::NONE,
            },
            ongoing_requirements: match &r.ongoing_requirements {
                Some(q) => names.requirements(&loc.at("ongoing_requirements"), q)?,
                None => TagRequirements::NONE,
            },
        };
        if instant {
            let checks: [(&str, bool); 5] = [
                ("granted_tags", !tags.granted_tags.is_empty()),
                ("blocked_ability_tags", !tags.blocked_ability_tags.is_empty()),
                ("immunity_tags", !tags.immunity_tags.is_empty()),
                ("immunity_query", tags.immunity_query.is_some()),
                ("ongoing_requirements", !tags.ongoing_requirements.is_empty()),
            ];
            for (field, bad) in checks {
                if bad {
                    return Err(self.err(
                        &loc.at(field),
                        K::InvalidCombination,
                        format!("an instant effect is never active, so `{field}` would never take effect (G-07); give it a duration"),
                    ));
                }
            }
        }
        Ok(tags)
    }

    fn stacking(&self, instant: bool) -> Result<Option<StackingDef>, ContentError> {
        Ok(match &self.r.stacking {
            None => None,
            Some(s) if s.kind == StackKind::None => None,
            Some(_) if instant => {
                return Err(self.err(
                    &self.loc.at("stacking"),
                    K::InvalidCombination,
                    "instant effects cannot stack",
                ));
            }
            Some(s) => {
                if s.limit == 0 {
                    return Err(self.err(
                        &self.loc.at("stacking").at("limit"),
                        K::InvalidValue,
                        "the stack limit must be at least 1",
                    ));
                }
                Some(StackingDef {
                    kind: s.kind,
                    limit: s.limit,
                    refresh: s.refresh,
                    period: s.period,
                    expiration: s.expiration,
                    deny_overflow: s.deny_overflow,
                })
            }
        })
    }

    /// The cues: persistent ones only on an effect with a duration, `Executed` ones only on
    /// one that is instant or `periodic`.
    fn cues(&self, instant: bool, periodic: bool) -> Result<Vec<EffectCueDef>, ContentError> {
        let mut cues = Vec::new();
        for (i, c) in self.r.cues.as_deref().unwrap_or(&[]).iter().enumerate() {
            let cl = self.loc.at("cues").at(i);
            let tag = cue_tag(self.names, &cl, c)?;
            match (c.events, instant, periodic) {
                (CueEvents::Persistent, true, _) => {
                    return Err(self.err(
                        &cl.at("events"),
                        K::InvalidCombination,
                        "an instant effect has no persistent cue events",
                    ));
                }
                (CueEvents::Executed, false, false) => {
                    return Err(self.err(
                        &cl.at("events"),
                        K::InvalidCombination,
                        "this effect neither is instant nor executes periodically, so `Executed` would never fire",
                    ));
                }
                _ => {}
            }
            let magnitude_attribute = match &c.magnitude_attribute {
                Some(a) => Some(self.names.attr(&cl.at("magnitude_attribute"), a)?),
                None => None,
            };
            cues.push(EffectCueDef { tag, events: c.events, magnitude_attribute });
        }
        Ok(cues)
    }
}

/// The longest hitstop an effect gives, in frames (two seconds at 60 Hz).
const MAX_HITSTOP: u16 = 120;

/// An effect's `hitstop` / `instigator_hitstop` (F-GA-23): at most [`MAX_HITSTOP`] frames.
fn hitstop_frames(cx: &Cx, at: &Loc, frames: Option<u16>) -> Result<u16, ContentError> {
    match frames {
        Some(f) if f > MAX_HITSTOP => Err(cx.err(
            at,
            K::InvalidValue,
            format!("a hitstop holds an entity for at most {MAX_HITSTOP} frames, not {f}"),
        )),
        f => Ok(f.unwrap_or(0)),
    }
}

/// Resolves a magnitude written at `ml` (modifiers, durations, periods and scoped modifiers
/// share it): its curve, its captured attribute (never a transient one) and tag filters, its
/// calculation and its SetByCaller key (added to `sbc`).
fn freeze_magnitude(
    names: &Names<'_>,
    attrs: &[AttrDef],
    ml: &Loc,
    m: &RawMagnitude,
    sbc: &mut Vec<TagId>,
    filters: &mut Vec<AttrTagFilterDef>,
) -> Result<MagnitudeDef, ContentError> {
    Ok(match m {
        RawMagnitude::Scalable { coef, curve } => MagnitudeDef::Scalable {
            coef: coef.0,
            curve: match curve {
                Some(c) => Some(names.curve(&ml.at("curve"), c)?),
                None => None,
            },
        },
        RawMagnitude::Attribute(a) => {
            let al = ml.at(0);
            let cap = names.attr(&al.at("attribute"), &a.attribute)?;
            if attrs[cap.index()].transient {
                return Err(names.cx.err(
                    &al.at("attribute"),
                    K::InvalidCombination,
                    format!(
                        "\"{}\" is a transient (meta) attribute and cannot be captured",
                        Clip(&a.attribute)
                    ),
                ));
            }
            let requirements = |field: &str, r: &Option<RawRequirements>| match r {
                Some(r) => names.requirements(&al.at(field), r),
                None => Ok(TagRequirements::NONE),
            };
            let source = requirements("source_tag_filter", &a.source_tag_filter)?;
            let target = requirements("target_tag_filter", &a.target_tag_filter)?;
            let filter = if source.is_empty() && target.is_empty() {
                0
            } else {
                filters.push(AttrTagFilterDef { source, target });
                u8::try_from(filters.len()).unwrap_or(u8::MAX)
            };
            MagnitudeDef::Attribute {
                attr: cap,
                side: a.side,
                which: a.which,
                coef: a.coef.0,
                pre: a.pre.0,
                post: a.post.0,
                snapshot: a.snapshot,
                filter,
            }
        }
        RawMagnitude::Custom { calc, coef, pre, post } => {
            MagnitudeDef::Custom { calc: names.func(calc), coef: coef.0, pre: pre.0, post: post.0 }
        }
        RawMagnitude::SetByCaller(t) => {
            let tag = names.tag(&ml.at(0), t)?;
            if !sbc.contains(&tag) {
                sbc.push(tag);
            }
            MagnitudeDef::SetByCaller(tag)
        }
    })
}

/// Refuses a duration or period magnitude that no level can make a valid number of frames: a
/// constant, or a curve all of whose points round (to the nearest frame) below 1 frame or
/// beyond [`crate::num::MAX_FINITE_FRAMES`]. Other magnitudes are checked when applied (a
/// value out of range is clamped and reported).
fn check_time_magnitude(
    names: &Names<'_>,
    curves: &[CurveDef],
    ml: &Loc,
    m: &MagnitudeDef,
    what: &str,
) -> Result<(), ContentError> {
    let MagnitudeDef::Scalable { coef, curve } = *m else { return Ok(()) };
    let max = i64::from(crate::num::MAX_FINITE_FRAMES);
    let frames = |v: Fx| round_frames(crate::num::mul(coef, v));
    let (at, all_low, all_high, shown) = match curve.and_then(|c| curves.get(c.index())) {
        None => {
            let f = frames(Fx::ONE);
            (ml.at("coef"), f < 1, f > max, format!("{} frames", f))
        }
        Some(c) => {
            let fs: Vec<i64> = c.points.iter().map(|(_, v)| frames(*v)).collect();
            (
                ml.at("curve"),
                fs.iter().all(|f| *f < 1),
                fs.iter().all(|f| *f > max),
                format!("coef × \"{}\" gives {:?} frames at its points", Clip(&c.name), fs),
            )
        }
    };
    if all_low {
        return Err(names.cx.err(
            &at,
            K::InvalidValue,
            format!(
                "a {what} must be at least 1 frame, and this one never is: {shown} (a magnitude \
                 is rounded to the nearest frame)"
            ),
        ));
    }
    if all_high {
        return Err(names.cx.err(
            &at,
            K::InvalidValue,
            format!(
                "a {what} can be at most {} frames (about 414 days at 60 Hz), and this one never \
                 is: {shown}",
                crate::num::MAX_FINITE_FRAMES
            ),
        ));
    }
    Ok(())
}

/// The scoped modifiers of an effect's executions (F-GE-14), by execution in order.
fn freeze_scoped_modifiers(
    names: &Names<'_>,
    attrs: &[AttrDef],
    loc: &Loc,
    raw_exec: &[RawExecution],
    sbc: &mut Vec<TagId>,
    filters: &mut Vec<AttrTagFilterDef>,
) -> Result<Vec<ScopedModifierDef>, ContentError> {
    let cx = &names.cx;
    let mut out = Vec::new();
    for (xi, x) in raw_exec.iter().enumerate() {
        let xl = loc.at("executions").at(xi);
        if x.modifiers.len() > MAX_SCOPED_MODIFIERS {
            return Err(cx.err(
                &xl.at("modifiers").at(MAX_SCOPED_MODIFIERS),
                K::Capacity,
                format!("an execution may have at most {MAX_SCOPED_MODIFIERS} scoped modifiers"),
            ));
        }
        for (si, m) in x.modifiers.iter().enumerate() {
            let sl = xl.at("modifiers").at(si);
            let target = match (&m.attribute, &m.transient) {
                (Some(a), None) => {
                    let attr = names.attr(&sl.at("attribute"), a)?;
                    if attrs[attr.index()].transient {
                        return Err(cx.err(
                            &sl.at("attribute"),
                            K::InvalidCombination,
                            format!(
                                "\"{}\" is a transient (meta) attribute and cannot be captured, \
                                 so no scoped modifier can change it",
                                Clip(a)
                            ),
                        ));
                    }
                    let Some(side) = m.side else {
                        return Err(cx.err(
                            &sl.at("attribute"),
                            K::InvalidValue,
                            "a scoped modifier of a captured attribute names the capture's side: \
                             add `side: Source` or `side: Target`",
                        ));
                    };
                    ScopedTarget::Attribute { attr, side }
                }
                (None, Some(t)) => {
                    if m.side.is_some() {
                        return Err(cx.err(
                            &sl.at("side"),
                            K::InvalidCombination,
                            "`side` names a captured attribute's side; a transient aggregator has \
                             none",
                        ));
                    }
                    ScopedTarget::Transient(names.tag(&sl.at("transient"), t)?)
                }
                (Some(_), Some(_)) => {
                    return Err(cx.err(
                        &sl.at("transient"),
                        K::InvalidCombination,
                        "a scoped modifier changes either a captured `attribute` or a \
                         `transient` aggregator, not both",
                    ));
                }
                (None, None) => {
                    return Err(cx.err(
                        &sl,
                        K::InvalidValue,
                        "a scoped modifier needs `attribute: \"…\", side: Source|Target` (a \
                         captured attribute) or `transient: \"Tag\"` (a transient aggregator)",
                    ));
                }
            };
            let magnitude =
                freeze_magnitude(names, attrs, &sl.at("magnitude"), &m.magnitude, sbc, filters)?;
            if m.op == ModOp::Divide
                && let MagnitudeDef::Scalable { coef, curve: None } = magnitude
                && coef == crate::num::ZERO
            {
                return Err(cx.err(
                    &sl.at("magnitude"),
                    K::InvalidValue,
                    "dividing by a constant 0",
                ));
            }
            out.push(ScopedModifierDef {
                execution: xi as u8,
                target,
                op: m.op,
                magnitude,
                source_tags: names.requirements(&sl.at("source_tags"), &m.source_tags)?,
                target_tags: names.requirements(&sl.at("target_tags"), &m.target_tags)?,
            });
        }
    }
    Ok(out)
}

/// Static cycles among derived attributes (F-ATTR-08): a non-periodic duration/infinite effect
/// whose modifier on X follows a live *target* capture of Y makes X depend on Y; together with
/// clamp bounds these edges must form no cycle.
fn check_live_capture_cycles(
    names: &Names<'_>,
    src: &BTreeMap<String, (Loc, &RawEffect)>,
    effects: &[EffectDef],
    attrs: &[AttrDef],
    attr_locs: &[Loc],
) -> Result<(), ContentError> {
    /// What created a dependency edge: an effect's modifier, or an attribute's clamp bound.
    #[derive(Clone, Copy)]
    enum Origin {
        Modifier(usize, usize),
        Bound(usize, &'static str),
    }
    let n = attrs.len();
    // edges[y] = attributes depending on y, with the place that created the edge.
    let mut edges: Vec<Vec<(usize, Origin)>> = vec![Vec::new(); n];
    for (x, a) in attrs.iter().enumerate() {
        for (field, b) in [("min", a.min), ("max", a.max)] {
            if let Some(AttrBound::Attr(y)) = b {
                edges[y.index()].push((x, Origin::Bound(x, field)));
            }
        }
    }
    for (ei, e) in effects.iter().enumerate() {
        if e.is_instant() || e.is_periodic() {
            continue;
        }
        for (mi, m) in e.modifiers.iter().enumerate() {
            if let MagnitudeDef::Attribute {
                attr: y,
                side: CaptureSide::Target,
                snapshot: false,
                ..
            } = m.magnitude
            {
                edges[y.index()].push((m.attr.index(), Origin::Modifier(ei, mi)));
            }
        }
    }
    // Iterative DFS with colours; report the first back edge.
    let mut colour = vec![0u8; n];
    for start in 0..n {
        if colour[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        colour[start] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&(to, origin)) = edges[node].get(*next) {
                *next += 1;
                match colour[to] {
                    0 => {
                        colour[to] = 1;
                        stack.push((to, 0));
                    }
                    1 => {
                        let cycle: Vec<&str> = stack
                            .iter()
                            .skip_while(|(s, _)| *s != to)
                            .map(|(s, _)| attrs[*s].name.as_str())
                            .chain(core::iter::once(attrs[to].name.as_str()))
                            .collect();
                        let msg = format!("derived attributes form a cycle: {}", cycle.join(" → "));
                        return Err(match origin {
                            Origin::Modifier(ei, mi) => {
                                let (loc, _) = &src[&effects[ei].name];
                                names.cx.err(&loc.at("modifiers").at(mi), K::Cycle, msg)
                            }
                            Origin::Bound(x, field) => {
                                names.cx.err(&attr_locs[x].at(field), K::Cycle, msg)
                            }
                        });
                    }
                    _ => {}
                }
            } else {
                colour[node] = 2;
                stack.pop();
            }
        }
    }
    Ok(())
}

/// The tag of a cue entry, which must live under `GameplayCue.` (F-GC-01). An error points at
/// the entry when it is a plain string, at its `tag` field otherwise.
fn cue_tag(names: &Names<'_>, cl: &Loc, c: &RawCue) -> Result<TagId, ContentError> {
    let at = if c.plain { cl.clone() } else { cl.at("tag") };
    let tag = names.tag(&at, &c.tag)?;
    check_cue_tag(names, &at, tag, &c.tag)?;
    Ok(tag)
}

/// Cue tags must live under `GameplayCue.` (F-GC-01).
fn check_cue_tag(names: &Names<'_>, loc: &Loc, tag: TagId, name: &str) -> Result<(), ContentError> {
    let root = names.tags.get(CUE_ROOT);
    if root.is_some_and(|root| names.tags.is_descendant_or_self(tag, root) && tag != root) {
        Ok(())
    } else {
        Err(names.cx.err(
            loc,
            K::InvalidValue,
            format!("cue tags must live under `{CUE_ROOT}.` (\"{}\" does not)", Clip(name)),
        ))
    }
}

/// The canonical rendering hashed into [`Content::hash`].
pub(crate) fn canonical_text(c: &Content) -> String {
    #[derive(serde::Serialize)]
    struct Canon<'a> {
        format: u32,
        settings: &'a ContentSettings,
        tags: &'a [String],
        aliases: Vec<(&'a str, u16)>,
        attributes: &'a [AttrDef],
        sets: &'a [AttrSetDef],
        curves: &'a [CurveDef],
        effects: &'a [EffectDef],
        abilities: &'a [AbilityDef],
        ability_sets: &'a [AbilitySetDef],
        timelines: &'a [TimelineDef],
        cancel_rules: &'a [CancelRuleDef],
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        bodies: &'a [BodyDef],
        cues: &'a [CueDef],
        functions: &'a [FnRef],
    }
    let canon = Canon {
        format: 1,
        settings: &c.settings,
        tags: c.tags.names(),
        aliases: c.tags.aliases().iter().map(|(a, t)| (a.as_str(), t.0)).collect(),
        attributes: &c.attrs,
        sets: &c.sets,
        curves: &c.curves,
        effects: &c.effects,
        abilities: &c.abilities,
        ability_sets: &c.ability_sets,
        timelines: &c.timelines,
        cancel_rules: &c.cancel_rules,
        bodies: &c.bodies,
        cues: &c.cues,
        functions: &c.functions,
    };
    ron::to_string(&canon).unwrap_or_default()
}
