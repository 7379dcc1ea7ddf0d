//! `replay …`, `inspect` and `desync diff`: replays of the duel and of scenarios.

use crate::Failure;
use indicatif::{ProgressBar, ProgressStyle};
use rollback_abilities::Content;
use rollback_abilities::debug::{WorldDump, debug_view, diff_dumps};
use rollback_abilities::present::{CueDirector, PresenterCall, PresenterLog};
use rollback_abilities::replay::Replay;
use rollback_abilities::scenario::{Scenario, ScenarioGame};
use rollback_abilities::{AttrId, Entity, TagId};
use rollback_abilities::{Game, Hooks, World};
use rollback_abilities_kit::arena::{self, Arena, ArenaGame};
use rollback_abilities_kit::duel::{self, Duel};
use rollback_abilities_kit::plot::{self, Series};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a replay's game comes from when it is not the duel: `--scenario` or `--content`.
#[derive(Debug, Default, clap::Args)]
pub struct ReplayGame {
    /// The scenario file a scenario replay was recorded from (its content and script).
    #[arg(long, value_name = "FILE", conflicts_with = "content")]
    scenario: Option<PathBuf>,
    /// The data-only content a `fuzz --content` replay was recorded on (a file or a
    /// directory).
    #[arg(long, value_name = "PATH")]
    content: Option<PathBuf>,
}

/// The game a replay belongs to.
enum Target {
    /// The duel demo (`cargo run --example duel -- --replay FILE`).
    Duel,
    /// The reference arena of `fuzz --arena`.
    Arena,
    /// A scenario (`scenario run --replay-dir DIR`).
    Scenario(Box<Scenario>),
    /// Data-only content (`fuzz --content PATH`).
    Content(Arc<Content>),
}

fn read(path: &Path) -> Result<Replay, Failure> {
    if !path.exists() {
        return Err(Failure::Usage(format!("{} does not exist", path.display())));
    }
    Replay::read(path).map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))
}

fn target(replay: &Replay, from: &ReplayGame) -> Result<Target, Failure> {
    let hash = replay.header.content_hash;
    if let Some(p) = &from.content {
        let c = crate::scenarios::load_content(p)?;
        if c.hash() != hash {
            return Err(Failure::Usage(format!(
                "{} is content {:016x}, but the replay was recorded on content {hash:016x}: \
                 pass the content the replay was recorded on",
                p.display(),
                c.hash()
            )));
        }
        return Ok(Target::Content(Arc::new(c)));
    }
    if let Some(p) = &from.scenario {
        let s = Scenario::load(p).map_err(|e| Failure::Usage(e.to_string()))?;
        if s.content.hash() != hash {
            return Err(Failure::Usage(format!(
                "{} runs on content {:016x}, but the replay was recorded on content {hash:016x}: \
                 pass the scenario file the replay was recorded from",
                p.display(),
                s.content.hash()
            )));
        }
        return Ok(Target::Scenario(Box::new(s)));
    }
    if hash == duel::content().hash() {
        return Ok(Target::Duel);
    }
    if hash == Arena::content(&arena::fuzz_spec()).hash() {
        return Ok(Target::Arena);
    }
    Err(Failure::Usage(format!(
        "the replay was recorded on content {hash:016x}, which is not the duel's ({:016x}); for \
         a replay written by `scenario run --replay-dir`, pass the scenario with --scenario FILE, \
         for one written by `fuzz --content PATH`, pass --content PATH",
        duel::content().hash()
    )))
}

/// Applies a replay's scripted (non-input) changes to the world before each frame.
type Script<'a, G> = Box<dyn FnMut(&mut World<G>) + 'a>;

/// A world ready to play a replay, with the script its frames need and entity names.
struct Sim<'a, G: Game> {
    world: World<G>,
    script: Script<'a, G>,
    names: Vec<(Entity, String)>,
}

impl<G: Game> Sim<'_, G> {
    fn name(&self, e: Entity) -> String {
        self.given_name(e).map_or_else(|| e.to_string(), str::to_string)
    }

    /// The scenario's (or the duel's) name for an entity, if it has one.
    fn given_name(&self, e: Entity) -> Option<&str> {
        self.names.iter().find(|(x, _)| *x == e).map(|(_, n)| n.as_str())
    }

    /// Resolves `--entity` arguments: an index or a name.
    fn entities(&self, args: &[String], default: Vec<Entity>) -> Result<Vec<Entity>, Failure> {
        if args.is_empty() {
            return Ok(default);
        }
        let live: Vec<Entity> = self.world.entities().collect();
        args.iter()
            .map(|a| {
                if let Ok(i) = a.parse::<u32>() {
                    return live.iter().copied().find(|e| e.index == i).ok_or_else(|| {
                        let known: Vec<String> = live.iter().map(|e| e.index.to_string()).collect();
                        Failure::Usage(format!(
                            "no live entity with index {i} at this frame (live: {})",
                            known.join(", ")
                        ))
                    });
                }
                self.names.iter().find(|(_, n)| n == a).map(|(e, _)| *e).ok_or_else(|| {
                    let known: Vec<&str> = self.names.iter().map(|(_, n)| n.as_str()).collect();
                    Failure::Usage(format!(
                        "no entity named \"{a}\" (names: {}; or give an entity index)",
                        if known.is_empty() { "none".to_string() } else { known.join(", ") }
                    ))
                })
            })
            .collect()
    }
}

fn duel_sim(replay: &Replay) -> Result<Sim<'static, Duel>, Failure> {
    let world = World::new(duel::content(), &duel::hooks(), replay.header.config)
        .map_err(|e| Failure::Usage(format!("cannot build the duel world: {e}")))?;
    let mut sim = Sim { world, script: Box::new(|_| {}), names: Vec::new() };
    start(replay, &mut sim.world)?;
    sim.names = (0..sim.world.players())
        .filter_map(|p| sim.world.player_owner(p).map(|e| (e, format!("fighter {p}"))))
        .collect();
    Ok(sim)
}

fn arena_sim(replay: &Replay) -> Result<Sim<'static, ArenaGame>, Failure> {
    let spec = arena::fuzz_spec();
    let world = World::new(Arena::content(&spec), &arena::hooks(), replay.header.config)
        .map_err(|e| Failure::Usage(format!("cannot build the arena world: {e}")))?;
    player_sim(replay, world)
}

fn content_sim(
    replay: &Replay,
    content: &Arc<Content>,
) -> Result<Sim<'static, ScenarioGame>, Failure> {
    let world = World::new(content.clone(), &Hooks::new(), replay.header.config)
        .map_err(|e| Failure::Usage(format!("cannot build a world on this content: {e}")))?;
    player_sim(replay, world)
}

/// A world started at the replay's first frame, its players' entities named `player P`.
fn player_sim<G: Game>(replay: &Replay, mut world: World<G>) -> Result<Sim<'static, G>, Failure> {
    start(replay, &mut world)?;
    let names = (0..world.players())
        .filter_map(|p| world.player_owner(p).map(|e| (e, format!("player {p}"))))
        .collect();
    Ok(Sim { world, script: Box::new(|_| {}), names })
}

fn scenario_sim<'a>(replay: &Replay, s: &'a Scenario) -> Result<Sim<'a, ScenarioGame>, Failure> {
    let (mut world, ents) =
        s.build_world(&Hooks::new()).map_err(|e| Failure::Usage(e.to_string()))?;
    start(replay, &mut world)?;
    let names = s.entity_names().zip(&ents).map(|(n, e)| (*e, n.to_string())).collect();
    Ok(Sim { world, script: Box::new(move |w| s.run_script(&ents, w)), names })
}

fn start<G: Game>(replay: &Replay, world: &mut World<G>) -> Result<(), Failure> {
    replay.start(world).map_err(|e| Failure::Usage(format!("the replay does not fit: {e}")))
}

/// Runs `f` on the replay's game.
macro_rules! with_sim {
    ($replay:expr, $from:expr, |$sim:ident| $body:expr) => {{
        let replay: &Replay = $replay;
        match target(replay, $from)? {
            Target::Duel => {
                let mut $sim = duel_sim(replay)?;
                $body
            }
            Target::Arena => {
                let mut $sim = arena_sim(replay)?;
                $body
            }
            Target::Content(c) => {
                let mut $sim = content_sim(replay, &c)?;
                $body
            }
            Target::Scenario(s) => {
                let mut $sim = scenario_sim(replay, &s)?;
                $body
            }
        }
    }};
}

/// `replay inspect`: the header.
pub fn header(path: &Path) -> Result<(), Failure> {
    let r = read(path)?;
    let h = &r.header;
    let with_sums = r.frames.iter().filter(|f| f.checksum != 0).count();
    let game = if h.content_hash == duel::content().hash() {
        "the duel demo"
    } else {
        "other content (a scenario?)"
    };
    println!("{}", path.display());
    println!("  written by         rollback_abilities {}", h.crate_version);
    println!("  content hash       {:016x} ({game})", h.content_hash);
    println!("  hooks hash         {:016x}", h.hooks_hash);
    println!("  tick rate          {} Hz", h.tick_rate);
    println!("  seed               {}", h.seed);
    println!("  players            {}", h.players);
    println!(
        "  frames             {} ({:.1} s){}",
        r.frames.len(),
        r.frames.len() as f64 / f64::from(h.tick_rate.max(1)),
        if r.first_frame() == 0 {
            String::new()
        } else {
            format!(
                ", frames {} to {} (joined a running match)",
                r.first_frame(),
                r.end_frame() - 1
            )
        }
    );
    println!("  checksummed frames {with_sums}");
    println!("  keyframes          {} (every {} frames)", r.keyframes.len(), h.keyframe_interval);
    println!("  input size         {} bytes per player", h.input_size);
    println!("  initial state      {} bytes", r.initial.len());
    println!(
        "  world              {} entities, {} effects each, {} abilities each, {} tasks",
        h.config.max_entities,
        h.config.effects_per_entity,
        h.config.abilities_per_entity,
        h.config.max_tasks
    );
    Ok(())
}

fn verify_sim<G: Game>(replay: &Replay, sim: &mut Sim<'_, G>) -> Result<(), Failure> {
    let v = replay
        .verify_with(&mut sim.world, &mut sim.script)
        .map_err(|e| Failure::Usage(format!("the replay does not play: {e}")))?;
    match v.first_divergence {
        None => {
            println!(
                "ok: {} frames re-simulated, every recorded checksum matches (final {:016x})",
                v.frames,
                sim.world.checksum()
            );
            Ok(())
        }
        Some(f) => {
            let mut msg = format!(
                "DIVERGED at frame {f}: the re-simulated checksum differs from the recorded one"
            );
            if let Some(k) = v.diff_frame {
                msg.push_str(&format!(
                    "\nfield differences at keyframe {k} (recorded ≠ re-simulated):"
                ));
                for d in v.diffs.iter().take(50) {
                    msg.push_str(&format!("\n  {d}"));
                }
                if v.diffs.len() > 50 {
                    msg.push_str(&format!("\n  … and {} more", v.diffs.len() - 50));
                }
            } else {
                msg.push_str("\n(no keyframe after the divergence to diff; record with keyframes)");
            }
            Err(Failure::Check(msg))
        }
    }
}

/// `replay verify`.
pub fn verify(path: &Path, from: &ReplayGame) -> Result<(), Failure> {
    let r = read(path)?;
    with_sim!(&r, from, |sim| verify_sim(&r, &mut sim))
}

/// The usage error for a frame outside a replay's frames.
fn outside(replay: &Replay, frame: u32) -> Failure {
    if replay.is_empty() {
        return Failure::Usage(format!(
            "frame {frame} is past the replay's end (it has no frames)"
        ));
    }
    let (first, last) = (replay.first_frame(), replay.end_frame() - 1);
    let side = if frame < first { "before the replay's start" } else { "past the replay's end" };
    Failure::Usage(format!("frame {frame} is {side} (frames {first} to {last})"))
}

fn seek_sim<G: Game>(replay: &Replay, sim: &mut Sim<'_, G>, frame: u32) -> Result<(), Failure> {
    if !replay.frame_numbers().contains(&frame) {
        return Err(outside(replay, frame));
    }
    replay
        .seek_with(&mut sim.world, frame + 1, &mut sim.script)
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let w = &sim.world;
    println!(
        "after frame {frame}: checksum {:016x}, {} live entities",
        w.checksum(),
        w.entity_count()
    );
    let content = w.content().clone();
    for e in w.entities().collect::<Vec<_>>() {
        let attrs: Vec<String> = (0..content.num_attrs())
            .filter_map(|i| {
                let a = AttrId(i as u16);
                w.attr(e, a).map(|v| format!("{} {v}", content.attr_name(a)))
            })
            .collect();
        let effects = w.effects(e).len();
        println!("  {:<14} {} | {effects} effects", sim.name(e), attrs.join(", "));
    }
    Ok(())
}

/// `replay seek`.
pub fn seek(path: &Path, frame: u32, from: &ReplayGame) -> Result<(), Failure> {
    let r = read(path)?;
    with_sim!(&r, from, |sim| seek_sim(&r, &mut sim, frame))
}

fn bisect_sim<G: Game>(replay: &Replay, sim: &mut Sim<'_, G>) -> Result<(), Failure> {
    if replay.keyframes.is_empty() {
        return Err(Failure::Usage(
            "the replay has no keyframes to bisect over; use `replay verify` (per-frame checksums)"
                .into(),
        ));
    }
    let first = replay
        .bisect_with(&mut sim.world, &mut sim.script)
        .map_err(|e| Failure::Usage(e.to_string()))?;
    match first {
        None => {
            println!(
                "ok: all {} keyframes re-simulate to the recorded state",
                replay.keyframes.len()
            );
            Ok(())
        }
        Some(k) => Err(Failure::Check(format!(
            "the first keyframe whose re-simulated state differs is frame {k}: the divergence is \
             in the frames before it"
        ))),
    }
}

/// `replay bisect`.
pub fn bisect(path: &Path, from: &ReplayGame) -> Result<(), Failure> {
    let r = read(path)?;
    with_sim!(&r, from, |sim| bisect_sim(&r, &mut sim))
}

fn inspect_sim<G: Game>(
    replay: &Replay,
    sim: &mut Sim<'_, G>,
    frame: u32,
    entities: &[String],
    json: bool,
) -> Result<(), Failure> {
    if !replay.frame_numbers().contains(&frame) {
        return Err(outside(replay, frame));
    }
    replay
        .seek_with(&mut sim.world, frame + 1, &mut sim.script)
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let all: Vec<Entity> = sim.world.entities().collect();
    let chosen = sim.entities(entities, all)?;
    let views: Vec<_> = chosen.iter().map(|e| (sim.name(*e), debug_view(&sim.world, *e))).collect();
    if json {
        let text =
            serde_json::to_string_pretty(&views).map_err(|e| Failure::Usage(e.to_string()))?;
        println!("{text}");
    } else {
        // `b: entity 1 (generation 1) at frame 150`; an entity without a name is its own title.
        for (e, (_, v)) in chosen.iter().zip(views) {
            match sim.given_name(*e) {
                Some(name) => println!("{name}: {v}"),
                None => println!("{v}"),
            }
        }
    }
    Ok(())
}

/// `inspect`.
pub fn inspect(
    path: &Path,
    frame: u32,
    entities: &[String],
    from: &ReplayGame,
    json: bool,
) -> Result<(), Failure> {
    let r = read(path)?;
    with_sim!(&r, from, |sim| inspect_sim(&r, &mut sim, frame, entities, json))
}

/// What `replay plot` draws: `--attribute`, `--entity` and `--cue` arguments (empty: the
/// defaults) and `--no-cues`.
pub struct PlotFilter<'a> {
    /// Attribute names.
    pub attributes: &'a [String],
    /// Entity indices or scenario names.
    pub entities: &'a [String],
    /// Cue tag prefixes.
    pub cues: &'a [String],
    /// Leave the cue timeline out.
    pub no_cues: bool,
}

/// Resolves `--attribute` names (default: every attribute); an unknown name is a usage error
/// that lists the attributes there are.
fn plot_attributes(
    content: &rollback_abilities::Content,
    names: &[String],
) -> Result<Vec<AttrId>, Failure> {
    if names.is_empty() {
        return Ok((0..content.num_attrs()).map(|i| AttrId(i as u16)).collect());
    }
    let mut out = Vec::new();
    for n in names {
        let a = content.attr(n).map_err(|e| {
            let all: Vec<&str> =
                (0..content.num_attrs()).map(|i| content.attr_name(AttrId(i as u16))).collect();
            Failure::Usage(format!("{e}; the attributes are {}", all.join(", ")))
        })?;
        if !out.contains(&a) {
            out.push(a);
        }
    }
    Ok(out)
}

/// Resolves `--cue` prefixes to the tags they match (`None`: every cue). A prefix matches a tag
/// equal to it or under it (`GameplayCue.Hit` matches `GameplayCue.Hit.Light`, not
/// `GameplayCue.HitStop`); `GameplayCue.` may be left out. A prefix that matches no tag is a
/// usage error that lists the cue tags.
fn plot_cue_tags(
    content: &rollback_abilities::Content,
    prefixes: &[String],
) -> Result<Option<Vec<TagId>>, Failure> {
    if prefixes.is_empty() {
        return Ok(None);
    }
    let names = content.tags().names();
    let under = |t: &str, p: &str| {
        let p = p.trim_end_matches('.');
        t == p || t.strip_prefix(p).is_some_and(|rest| rest.starts_with('.'))
    };
    let mut out = Vec::new();
    for p in prefixes {
        let mut matched: Vec<TagId> =
            (0..names.len()).filter(|i| under(&names[*i], p)).map(|i| TagId(i as u16)).collect();
        if matched.is_empty() && !p.starts_with("GameplayCue") {
            let full = format!("GameplayCue.{p}");
            matched = (0..names.len())
                .filter(|i| under(&names[*i], &full))
                .map(|i| TagId(i as u16))
                .collect();
        }
        if matched.is_empty() {
            let mut cue_tags: Vec<&str> = names
                .iter()
                .map(String::as_str)
                .filter(|n| n.starts_with("GameplayCue."))
                .collect();
            if cue_tags.is_empty() {
                cue_tags = names.iter().map(String::as_str).collect();
            }
            return Err(Failure::Usage(format!(
                "--cue {p}: no cue tag is {p} or under it; the cue tags are {}",
                if cue_tags.is_empty() { "none".to_string() } else { cue_tags.join(", ") }
            )));
        }
        out.extend(matched.into_iter().filter(|t| !out.contains(t)).collect::<Vec<_>>());
    }
    Ok(Some(out))
}

fn plot_sim<G: Game>(
    replay: &Replay,
    sim: &mut Sim<'_, G>,
    out: &Path,
    title: &str,
    filter: &PlotFilter<'_>,
) -> Result<(), Failure> {
    let content = sim.world.content().clone();
    let attrs = plot_attributes(&content, filter.attributes)?;
    let cue_tags = plot_cue_tags(&content, filter.cues)?;
    let players: Vec<Entity> =
        (0..sim.world.players()).filter_map(|p| sim.world.player_owner(p)).collect();
    let default = if players.is_empty() { sim.world.entities().collect() } else { players };
    let chosen = sim.entities(filter.entities, default)?;
    // One series per (entity, attribute) the entity has, keyed by the attribute.
    let mut keys = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    for (row, e) in chosen.iter().enumerate() {
        for a in &attrs {
            if sim.world.attr(*e, *a).is_some() {
                keys.push((*e, *a));
                let label = format!("{} {}", sim.name(*e), content.attr_name(*a));
                series.push(Series::new(label, Some(row)));
            }
        }
    }
    if series.is_empty() {
        return Err(Failure::Usage("none of the chosen entities has the chosen attributes".into()));
    }
    let bar = ProgressBar::new(replay.frames.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} frames")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut director = CueDirector::new().with_log_capacity(0);
    let mut log = PresenterLog::default();
    let mut cues = plot::Cues::default();
    let shown = |tag: TagId| cue_tags.as_ref().is_none_or(|t| t.contains(&tag));
    for f in replay.frame_numbers() {
        let inputs = replay.frame_inputs::<G>(f);
        sim.world.step_with(&inputs, &mut sim.script);
        for ((e, a), s) in keys.iter().zip(series.iter_mut()) {
            if let Some(v) = sim.world.attr(*e, *a) {
                s.push(f, v.to_num::<f64>());
            }
        }
        bar.inc(1);
        director.ingest(sim.world.output());
        let before = log.calls.len();
        director.reconcile(&sim.world, Some(f), &mut log);
        if filter.no_cues {
            continue;
        }
        for (_, call) in &log.calls[before..] {
            let k = call.key();
            let Some(row) = chosen.iter().position(|e| *e == k.target) else { continue };
            if !shown(k.tag) {
                continue;
            }
            let tag = content.tag_name(k.tag);
            match call {
                PresenterCall::Play(_) => cues.burst(tag, row, f),
                PresenterCall::OnActive(_) => cues.start(tag, row, f),
                PresenterCall::Removed(..) => cues.end(tag, row, f),
                _ => {}
            }
        }
    }
    bar.finish_and_clear();

    // Without --attribute, attributes that never change are named in the note, not drawn
    // (unless nothing changes at all).
    let mut note = Vec::new();
    if filter.attributes.is_empty() {
        // An attribute none of the entities has is neither drawn nor named.
        let constant = |a: AttrId| {
            let mut of_a = keys.iter().zip(&series).filter(|((_, x), _)| *x == a).peekable();
            of_a.peek().is_some() && of_a.all(|(_, s)| s.is_constant())
        };
        let plotted = |a: &AttrId| keys.iter().any(|(_, x)| x == a);
        let attrs: Vec<AttrId> = attrs.iter().copied().filter(plotted).collect();
        let dropped: Vec<AttrId> = attrs.iter().copied().filter(|a| constant(*a)).collect();
        if dropped.len() < attrs.len() && !dropped.is_empty() {
            let names: Vec<String> = dropped
                .iter()
                .map(|a| {
                    let values: Vec<f64> = keys
                        .iter()
                        .zip(&series)
                        .filter(|((_, x), _)| x == a)
                        .filter_map(|(_, s)| s.points.first().map(|p| p.1))
                        .collect();
                    match values.first() {
                        Some(v) if values.iter().all(|x| x == v) => {
                            format!("{} {}", content.attr_name(*a), plot::number(*v))
                        }
                        _ => content.attr_name(*a).to_string(),
                    }
                })
                .collect();
            note.push(format!("constant, not drawn: {}", names.join(", ")));
            let kept: Vec<((Entity, AttrId), Series)> =
                keys.into_iter().zip(series).filter(|((_, a), _)| !dropped.contains(a)).collect();
            (keys, series) = kept.into_iter().unzip();
        }
    }
    let keyed: Vec<(String, Series)> =
        keys.iter().map(|(_, a)| content.attr_name(*a).to_string()).zip(series).collect();
    let mut chart =
        plot::Chart::new(format!("{} ({} frames)", title, replay.frames.len()), replay.end_frame());
    chart.panels = plot::panels_by_scale(keyed);
    chart.rows = chosen.iter().map(|e| sim.name(*e)).collect();
    if !filter.cues.is_empty() {
        note.push(format!("cues: {}", filter.cues.join(", ")));
    }
    chart.note = note.join("; ");
    let cue_count = cues.count();
    chart.cues = cues;
    let bytes = chart.write_svg(out).map_err(Failure::Usage)?;
    let (panels, s) = (chart.panels.len(), if chart.panels.len() == 1 { "" } else { "s" });
    println!(
        "wrote {} ({} series in {panels} panel{s}, {cue_count} cues, {} frames, {} KiB)",
        out.display(),
        chart.series_count(),
        replay.frames.len(),
        bytes.div_ceil(1024)
    );
    Ok(())
}

/// `replay plot`.
pub fn plot(
    path: &Path,
    out: &Path,
    filter: &PlotFilter<'_>,
    from: &ReplayGame,
) -> Result<(), Failure> {
    let r = read(path)?;
    let title = path
        .file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    with_sim!(&r, from, |sim| plot_sim(&r, &mut sim, out, &title, filter))
}

/// `desync diff`.
pub fn desync_diff(a: &Path, b: &Path, content: Option<&Path>) -> Result<(), Failure> {
    let load = |p: &Path| {
        if !p.exists() {
            return Err(Failure::Usage(format!("{} does not exist", p.display())));
        }
        WorldDump::read(p).map_err(|e| Failure::Usage(format!("{}: {e}", p.display())))
    };
    let (da, db) = (load(a)?, load(b)?);
    let content = match content {
        Some(p) => Some(crate::scenarios::load_content(p)?),
        None if da.content_hash == duel::content().hash() => Some((*duel::content()).clone()),
        None => None,
    };
    let diffs =
        diff_dumps(&da, &db, content.as_ref()).map_err(|e| Failure::Usage(e.to_string()))?;
    if diffs.is_empty() {
        println!("identical: frame {} and frame {}, {} bytes", da.frame, db.frame, da.bytes.len());
        return Ok(());
    }
    println!("{} differing fields (left: {}, right: {}):", diffs.len(), a.display(), b.display());
    for d in &diffs {
        println!("  {d}");
    }
    if content.is_none() {
        println!("(pass --content PATH to name attributes and tags)");
    }
    Err(Failure::Check(String::new()))
}
