//! Running a scenario in its modes and checking its expectations.

use super::ScenarioInput;
use super::check::{FrameView, Progress, evaluate};
use super::plan::{ButtonKind, EffectApply, Op, OpKind};
use super::routing::{Comparable, RoutedPresenter, compare, removed_keys};
use super::{Mode, Scenario, ScenarioError, ScenarioErrorKind, ScenarioGame, ScenarioHost};
use crate::content::Content;
use crate::content::error::Clip;
use crate::cue::{CueOrigin, CueParams};
use crate::debug::{DebugView, debug_view};
use crate::effect::EffectQuery;
use crate::id::Entity;
use crate::num::{Frame, Fx};
use crate::present::{CueDirector, CueSession, Presenter, PresenterCall};
use crate::present::{PresenterLog, RemoveReason};
use crate::replay::{Recorder, Replay};
use crate::session::{
    Determinism, DeterminismFailure, GgrsConfig, LocalMatch, MatchConfig, NetConditions, PeerAddr,
    Runner, StraightRun,
};
use crate::world::{Applied, ApplyError, Hooks, World};
use core::fmt;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// Frames between the keyframes of a scenario's replay.
const KEYFRAME_INTERVAL: u32 = 300;

/// How to run a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Run only these modes (plain always runs); `None`: the scenario's own list.
    pub modes: Option<Vec<Mode>>,
    /// The deepest rollback of mode `Rollback` (1–64).
    pub rollback_depth: u32,
    /// The seed choosing rollback depths.
    pub rollback_seed: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { modes: None, rollback_depth: 8, rollback_seed: 0x5CE7A }
    }
}

/// How one mode compared with plain stepping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModeOutcome {
    /// Same checksums, same final bytes, same reconciled cue log.
    Agrees,
    /// Something differs; the message says what and where.
    Disagrees(String),
    /// Not run because the options asked for other modes (`--mode`).
    Skipped(String),
    /// Not run because the scenario file excludes it, for this reason.
    Excluded(String),
}

/// One mode's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModeResult {
    /// The mode.
    pub mode: Mode,
    /// The outcome.
    pub outcome: ModeOutcome,
    /// Statistics (rollbacks, depth, network…).
    pub detail: String,
}

/// One expectation's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectationResult {
    /// Its index in `expect`.
    pub index: usize,
    /// Its line in the scenario file.
    pub line: u32,
    /// The first frame checked.
    pub frame: Frame,
    /// The last frame checked.
    pub until: Frame,
    /// What it states.
    pub what: String,
    /// Whether it held.
    pub passed: bool,
    /// The first frame it failed at.
    pub failed_at: Option<Frame>,
    /// How many frames it failed at.
    pub failures: u32,
    /// What was expected (at the first failure, or the statement).
    pub expected: String,
    /// What was found (at the first failure, or at the last frame checked).
    pub actual: String,
}

/// Everything a scenario run found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioReport {
    /// The scenario's name.
    pub name: String,
    /// Its file.
    pub file: String,
    /// Frames run.
    pub frames: Frame,
    /// Each mode's comparison with plain stepping.
    pub modes: Vec<ModeResult>,
    /// Each expectation.
    pub expectations: Vec<ExpectationResult>,
    /// The world checksum after the last frame (plain stepping).
    pub final_checksum: u64,
    /// Presenter calls in plain stepping.
    pub cue_calls: usize,
}

impl ScenarioReport {
    /// Every expectation held and every mode agreed.
    pub fn passed(&self) -> bool {
        self.expectations.iter().all(|e| e.passed)
            && self.modes.iter().all(|m| !matches!(m.outcome, ModeOutcome::Disagrees(_)))
    }

    /// How many expectations failed.
    pub fn failed_expectations(&self) -> usize {
        self.expectations.iter().filter(|e| !e.passed).count()
    }
}

impl fmt::Display for ScenarioReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed() { "PASS" } else { "FAIL" };
        writeln!(f, "{verdict} {} ({}, {} frames)", self.name, self.file, self.frames)?;
        for m in &self.modes {
            let (mark, text) = match &m.outcome {
                ModeOutcome::Agrees => ("ok  ", "agrees".to_string()),
                ModeOutcome::Disagrees(why) => ("FAIL", format!("disagrees: {why}")),
                ModeOutcome::Skipped(why) => ("skip", format!("not run: {why}")),
                ModeOutcome::Excluded(why) => ("excl", format!("excluded by the file: {why}")),
            };
            let detail =
                if m.detail.is_empty() { String::new() } else { format!(" ({})", m.detail) };
            writeln!(f, "  {mark} mode {:<8} {text}{detail}", format!("{:?}", m.mode))?;
        }
        for e in &self.expectations {
            let frames = if e.until == e.frame {
                format!("frame {}", e.frame)
            } else {
                format!("frames {}..={}", e.frame, e.until)
            };
            if e.passed {
                writeln!(f, "  ok   line {:<4} {frames}: {}", e.line, e.what)?;
            } else {
                let at = e.failed_at.map_or(String::new(), |f| format!(" at frame {f}"));
                let times = if e.failures > 1 {
                    format!(" ({} frames)", e.failures)
                } else {
                    String::new()
                };
                writeln!(f, "  FAIL line {:<4} {frames}: {}", e.line, e.what)?;
                writeln!(
                    f,
                    "         failed{at}{times}: expected {}, got {}",
                    e.expected, e.actual
                )?;
            }
        }
        write!(
            f,
            "  {} of {} expectations hold; final checksum {:#018x}",
            self.expectations.len() - self.failed_expectations(),
            self.expectations.len(),
            self.final_checksum
        )
    }
}

/// One frame of plain stepping, for `--trace` (one JSON line per frame).
#[derive(Clone, Debug, serde::Serialize)]
pub struct FrameTrace {
    /// The frame.
    pub frame: Frame,
    /// The world checksum after it.
    pub checksum: u64,
    /// Every player's input.
    pub inputs: Vec<ScenarioInput>,
    /// Each entity (by scenario name) as the inspector shows it.
    pub entities: Vec<(String, DebugView)>,
    /// Presenter calls made after the frame.
    pub cues: Vec<String>,
    /// Activation attempts in the frame.
    pub activations: Vec<String>,
    /// Calls the handlers of `cue_routing` received after the frame (with instance creations
    /// and destructions).
    pub handled: Vec<String>,
}

/// Runs a scenario whose content names no registered functions, with [`ScenarioGame`].
pub fn run(scenario: &Scenario, options: &RunOptions) -> Result<ScenarioReport, ScenarioError> {
    run_with_hooks(scenario, &Hooks::<ScenarioGame>::new(), options, None)
}

/// Runs a scenario with a game `G` and its registered functions (executions, calculations,
/// behaviours…), and an optional per-frame trace of plain stepping. Content naming a function
/// `hooks` lacks is refused before anything runs, with every missing function listed at its
/// place in the content (see [`check_hooks`](super::check_hooks)).
pub fn run_with_hooks<G: ScenarioHost>(
    scenario: &Scenario,
    hooks: &Hooks<G>,
    options: &RunOptions,
    trace: Option<&mut dyn FnMut(FrameTrace)>,
) -> Result<ScenarioReport, ScenarioError> {
    super::check_hooks(scenario, hooks)?;
    let plain = plain(scenario, hooks, trace)?;
    let mut all = vec![ModeResult {
        mode: Mode::Plain,
        outcome: ModeOutcome::Agrees,
        detail: format!("{} presenter calls", plain.log.calls.len()),
    }];
    for mode in [Mode::Rollback, Mode::Replay, Mode::Peers, Mode::SyncTest] {
        if let Some((_, why)) = scenario.excluded.iter().find(|(m, _)| *m == mode) {
            all.push(ModeResult {
                mode,
                outcome: ModeOutcome::Excluded(why.clone()),
                detail: String::new(),
            });
            continue;
        }
        if options.modes.as_ref().is_some_and(|m| !m.contains(&mode)) {
            all.push(ModeResult {
                mode,
                outcome: ModeOutcome::Skipped("not among the requested modes".into()),
                detail: String::new(),
            });
            continue;
        }
        all.push(match mode {
            Mode::Rollback => rollback(scenario, hooks, options, &plain)?,
            Mode::Replay => replay(scenario, hooks, &plain)?,
            Mode::Peers => peers(scenario, hooks, &plain)?,
            Mode::SyncTest => sync_test(scenario, hooks, &plain)?,
            Mode::Plain => continue,
        });
    }
    Ok(ScenarioReport {
        name: scenario.name.clone(),
        file: scenario.file.clone(),
        frames: scenario.frames,
        modes: all,
        expectations: plain.expectations,
        final_checksum: plain.checksums.last().copied().unwrap_or(0),
        cue_calls: plain.log.calls.len(),
    })
}

/// Runs plain stepping and returns its replay (inputs, per-frame checksums, keyframes every 300
/// frames). Re-simulating it needs the scenario's script: see [`Scenario::run_script`].
pub fn record<G: ScenarioHost>(
    scenario: &Scenario,
    hooks: &Hooks<G>,
) -> Result<Replay, ScenarioError> {
    super::check_hooks(scenario, hooks)?;
    Ok(plain(scenario, hooks, None)?.replay)
}

impl Scenario {
    /// A world in the state before frame 0: the entities spawned in declaration order (the
    /// returned list), their attributes, tags, abilities and setup effects applied. The
    /// operations of phase `BeforeAbilities` are installed as the world's
    /// [`World::set_before_abilities`] hook, so every way of stepping it runs them.
    pub fn build_world<G: ScenarioHost>(
        &self,
        hooks: &Hooks<G>,
    ) -> Result<(World<G>, Vec<Entity>), ScenarioError> {
        super::check_hooks(self, hooks)?;
        setup(self, hooks, None)
    }

    /// Runs the direct operations of phase `AfterAbilities` scripted for the world's current
    /// frame. Call it from the script of [`World::step_with`] (it is what the runner does in
    /// every mode); those of phase `BeforeAbilities` run in the hook
    /// [`Scenario::build_world`] installed.
    pub fn run_script<G: ScenarioHost>(&self, entities: &[Entity], world: &mut World<G>) {
        run_ops(&self.ops, &self.content, false, entities, world, None);
    }

    /// Every frame's inputs (one per player), from the scripted presses, releases and taps.
    pub fn inputs(&self) -> Vec<Vec<ScenarioInput>> {
        input_table(self)
    }

    /// Every frame's inputs as the game `G` reads them.
    pub fn inputs_for<G: ScenarioHost>(&self) -> Vec<Vec<G::Input>> {
        game_inputs::<G>(&input_table(self))
    }

    /// The scenario name of an entity of a world built by [`Scenario::build_world`].
    pub fn entity_name(&self, entities: &[Entity], e: Entity) -> String {
        entity_name(self, entities, e)
    }
}

fn game_inputs<G: ScenarioHost>(table: &[Vec<ScenarioInput>]) -> Vec<Vec<G::Input>> {
    table.iter().map(|f| f.iter().map(G::scenario_input).collect()).collect()
}

/// A world set up for the scenario, with its entities in declaration order.
///
/// The operations of phase `BeforeAbilities` become the world's before-abilities hook; with
/// `sink`, the results of their labelled applications are pushed there.
fn setup<G: ScenarioHost>(
    s: &Scenario,
    hooks: &Hooks<G>,
    sink: Option<Arc<Mutex<Applications>>>,
) -> Result<(World<G>, Vec<Entity>), ScenarioError> {
    let world_err = |message: String| ScenarioError {
        kind: ScenarioErrorKind::World,
        file: s.file.clone(),
        line: 0,
        col: 0,
        path: String::new(),
        message,
    };
    let mut w =
        World::new(s.content.clone(), hooks, s.world).map_err(|e| world_err(e.to_string()))?;
    let mut ents = Vec::with_capacity(s.entities.len());
    for e in &s.entities {
        let ent = w.spawn_actor(&e.sets).map_err(|_| {
            world_err(format!("cannot spawn \"{}\": the world is full", Clip(&e.name)))
        })?;
        ents.push(ent);
    }
    for (e, &ent) in s.entities.iter().zip(&ents) {
        if let Some(anchor) = e.at
            && !G::place(&mut w, ent, anchor)
        {
            return Err(world_err(format!(
                "cannot place \"{}\" (`at`): this game keeps no positions the scenario can set \
                 (implement `ScenarioHost::place`, or set `Game::KEEPS_ANCHORS`)",
                Clip(&e.name)
            )));
        }
    }
    for (e, &ent) in s.entities.iter().zip(&ents) {
        for &(a, v) in &e.bases {
            w.set_base(ent, a, v);
        }
        for &t in &e.tags {
            w.add_loose_tag(ent, t);
        }
        for &(def, level, input) in &e.grants {
            let input = input.or(s.content.ability_def(def).input);
            w.grant_ability_with(ent, def, level, input, Entity::NONE).map_err(|_| {
                world_err(format!(
                    "cannot grant {} to \"{}\": raise `world.abilities_per_entity`",
                    Clip(s.content.ability_name(def)),
                    Clip(&e.name)
                ))
            })?;
        }
        for &set in &e.ability_sets {
            w.grant_ability_set(ent, set);
        }
        if let Some(p) = e.player {
            w.bind_player(usize::from(p), ent);
        }
    }
    for e in &s.entities {
        for a in &e.effects {
            let spec = spec_of(&w, a, &ents);
            // Setup failures (immunity, requirements) are part of the scenario's story; the
            // expectations see their result.
            let _ = w.apply_effect(spec, ents[a.on]);
        }
    }
    let before: Vec<Op> = s.ops.iter().filter(|o| o.before_abilities).cloned().collect();
    if !before.is_empty() {
        let (content, hook_ents) = (s.content.clone(), ents.clone());
        w.set_before_abilities(move |w| {
            let mut results = Applications::new();
            run_ops(&before, &content, true, &hook_ents, w, Some(&mut results));
            if let Some(sink) = &sink {
                // A poisoned lock only means a check panicked elsewhere: keep the results.
                sink.lock().unwrap_or_else(|e| e.into_inner()).extend(results);
            }
        });
    }
    Ok((w, ents))
}

fn spec_of<G: ScenarioHost>(
    w: &World<G>,
    a: &EffectApply,
    ents: &[Entity],
) -> crate::effect::EffectSpec {
    let mut spec = w.make_spec(a.effect, a.level, ents[a.from]);
    for &(tag, v) in &a.set_by_caller {
        spec.set_set_by_caller(tag, v);
    }
    if let Some(d) = a.duration {
        spec = spec.with_duration(d);
    }
    spec
}

/// The inputs of every frame, from the button script.
fn input_table(s: &Scenario) -> Vec<Vec<ScenarioInput>> {
    let players = usize::from(s.world.players);
    let mut held = vec![ScenarioInput::default(); players];
    let mut out = Vec::with_capacity(s.frames as usize);
    let mut i = 0;
    for f in 0..s.frames {
        let mut taps = vec![ScenarioInput::default(); players];
        while i < s.buttons.len() && s.buttons[i].frame == f {
            let b = s.buttons[i];
            let p = usize::from(b.player);
            let (field, bit) = b.button;
            let mask = 1u32 << bit;
            let target = match b.kind {
                ButtonKind::Tap => &mut taps[p],
                _ => &mut held[p],
            };
            let slot = if field { &mut target.buttons } else { &mut target.held };
            match b.kind {
                ButtonKind::Press | ButtonKind::Tap => *slot |= mask,
                ButtonKind::Release => {
                    *slot &= !mask;
                    // A release in the same frame as a tap cancels nothing: taps are separate.
                }
            }
            i += 1;
        }
        out.push(
            held.iter()
                .zip(&taps)
                .map(|(h, t)| ScenarioInput {
                    held: h.held | t.held,
                    buttons: h.buttons | t.buttons,
                })
                .collect(),
        );
    }
    out
}

/// Results of labelled applications: (label, result).
type Applications = Vec<(usize, Result<Applied, ApplyError>)>;

/// The first active instance of an effect.
fn first_instance<G: ScenarioHost>(
    w: &World<G>,
    on: Entity,
    def: crate::id::EffectDefId,
) -> Option<crate::id::EffectHandle> {
    w.effects(on).iter().find(|e| e.def == def).map(|e| e.handle(on))
}

/// Runs the frame's direct operations of one phase: `before` those of phase
/// `BeforeAbilities` (from the world's hook), otherwise those of phase P6. Deterministic in the
/// world's frame. Labelled applications, and every application before the abilities, run at
/// once (labelled ones' results go to `applied`); the others are queued for phase P7 like a
/// game system's.
fn run_ops<G: ScenarioHost>(
    ops: &[Op],
    content: &Content,
    before: bool,
    ents: &[Entity],
    w: &mut World<G>,
    mut applied: Option<&mut Applications>,
) {
    let frame = w.frame();
    let start = ops.partition_point(|o| o.frame < frame);
    for op in ops[start..].iter().take_while(|o| o.frame == frame) {
        if op.before_abilities != before {
            continue;
        }
        let mut apply =
            |w: &mut World<G>, spec: crate::effect::EffectSpec, on: Entity| match op.label {
                Some(l) => {
                    let r = w.apply_effect(spec, on);
                    if let Some(sink) = applied.as_deref_mut() {
                        sink.push((l, r));
                    }
                }
                None if before => {
                    let _ = w.apply_effect(spec, on);
                }
                None => w.queue_effect(spec, on),
            };
        match &op.kind {
            OpKind::Apply(a) => {
                let spec = spec_of(w, a, ents);
                apply(w, spec, ents[a.on]);
            }
            OpKind::ApplyInline { on, from, mods } => {
                let spec = crate::effect::EffectSpec::inline(mods).with_instigator(ents[*from]);
                apply(w, spec, ents[*on]);
            }
            OpKind::SetRemaining(on, def, frames) => {
                if let Some(h) = first_instance(w, ents[*on], *def) {
                    w.set_remaining(h, *frames);
                }
            }
            OpKind::Extend(on, def, frames) => {
                if let Some(h) = first_instance(w, ents[*on], *def) {
                    w.extend_effect(h, *frames);
                }
            }
            OpKind::RemoveStacks(on, def, stacks) => {
                if let Some(h) = first_instance(w, ents[*on], *def) {
                    w.remove_effect_stacks(h, *stacks);
                }
            }
            OpKind::RemoveEffects { on, effect, any, all, from, modifying } => {
                let q = EffectQuery {
                    owned_any: *any,
                    owned_all: *all,
                    def: *effect,
                    instigator: from.map(|i| ents[i]),
                    modifies: *modifying,
                    ..EffectQuery::default()
                };
                w.remove_matching(ents[*on], &q);
            }
            OpKind::AddTag(on, t) => w.add_loose_tag(ents[*on], *t),
            OpKind::RemoveTag(on, t) => w.remove_loose_tag(ents[*on], *t),
            OpKind::SetTagCount(on, t, n) => w.set_loose_tag_count(ents[*on], *t, *n),
            OpKind::SetBase(on, a, v) => w.set_base(ents[*on], *a, *v),
            OpKind::SendEvent { on, tag, from, magnitude } => {
                let mut data = crate::ability::EventData::new(*tag, ents[*from], ents[*on]);
                if let Some(m) = magnitude {
                    data = data.with_magnitude(*m);
                }
                w.send_event(ents[*on], data);
            }
            OpKind::Activate(on, def) => {
                if let Some(h) = w.find_ability(ents[*on], *def) {
                    let _ = w.try_activate(h);
                }
            }
            OpKind::CancelAbility(on, def) => {
                if let Some(h) = w.find_ability(ents[*on], *def) {
                    w.cancel_ability(h);
                }
            }
            OpKind::CancelAbilities(on, tags) => {
                w.cancel_abilities_matching(ents[*on], tags, &crate::tag::TagSet::EMPTY, None);
            }
            OpKind::EndAbility(on, def) => {
                if let Some(h) = w.find_ability(ents[*on], *def) {
                    w.end_ability(h);
                }
            }
            OpKind::Grant { on, ability, level, input } => {
                let input = input.or(content.ability_def(*ability).input);
                let _ = w.grant_ability_with(ents[*on], *ability, *level, input, Entity::NONE);
            }
            OpKind::RemoveAbility(on, def) => {
                if let Some(h) = w.find_ability(ents[*on], *def) {
                    w.remove_ability(h);
                }
            }
            OpKind::ExecuteCue { on, tag, magnitude } => {
                let params =
                    CueParams { magnitude: magnitude.unwrap_or(Fx::ZERO), ..CueParams::default() };
                w.execute_cue(ents[*on], *tag, CueOrigin::game(0x5CE0, 0), params);
            }
            OpKind::Despawn(on) => w.despawn(ents[*on]),
            OpKind::SetCooldownTags(on, def, tags) => {
                if let Some(h) = w.find_ability(ents[*on], *def) {
                    // Refusals were ruled out when the scenario was loaded.
                    let _ = match tags {
                        Some(t) => w.set_cooldown_tags(h, *t),
                        None => w.reset_cooldown_tags(h),
                    };
                }
            }
        }
    }
}

/// What plain stepping produced.
struct Plain {
    checksums: Vec<u64>,
    final_bytes: Vec<u8>,
    log: PresenterLog,
    /// The reconciled handler calls of the scenario's cue routing.
    routed: Result<Vec<Comparable>, String>,
    replay: Replay,
    expectations: Vec<ExpectationResult>,
}

fn plain<G: ScenarioHost>(
    s: &Scenario,
    hooks: &Hooks<G>,
    mut trace: Option<&mut dyn FnMut(FrameTrace)>,
) -> Result<Plain, ScenarioError> {
    let early = Arc::new(Mutex::new(Applications::new()));
    let (mut w, ents) = setup(s, hooks, Some(early.clone()))?;
    let table = input_table(s);
    let inputs = game_inputs::<G>(&table);
    let mut recorder = Recorder::new(&w, KEYFRAME_INTERVAL);
    let mut director = CueDirector::new().with_log_capacity(0);
    let mut pres = RoutedPresenter::new(s.content.clone(), s.routing.as_ref(), &ents);
    let mut progress: Vec<Progress> = s.checks.iter().map(|_| Progress::default()).collect();
    let mut checksums = Vec::with_capacity(s.frames as usize);
    let mut applied = Applications::new();
    for f in 0..s.frames {
        if recorder.keyframe_due(f) {
            recorder.keyframe(&w);
        }
        let frame_inputs = &inputs[f as usize];
        applied.clear();
        w.step_with(frame_inputs, |w| {
            run_ops(&s.ops, &s.content, false, &ents, w, Some(&mut applied));
        });
        // The results of the operations before the abilities come first.
        applied.splice(0..0, early.lock().unwrap_or_else(|e| e.into_inner()).drain(..));
        let sum = w.checksum();
        checksums.push(sum);
        let _ = recorder.push(f, frame_inputs, sum);
        director.ingest(w.output());
        let (before, routed_before) = (pres.log.calls.len(), pres.routed_len());
        pres.at(f);
        director.reconcile(&w, Some(f), &mut pres);
        pres.present_locals(f);
        pres.with_routed(routed_before, |routed| {
            let view = FrameView {
                world: &w,
                ents: &ents,
                calls: &pres.log.calls[before..],
                applied: &applied,
                routed,
                router: &pres.router,
                frame: f,
            };
            for (c, p) in s.checks.iter().zip(progress.iter_mut()) {
                if f >= c.frame && f <= c.until {
                    evaluate(c, p, &view);
                }
            }
            if let Some(t) = trace.as_deref_mut() {
                let mut ft =
                    frame_trace(s, &w, &ents, &table[f as usize], &pres.log.calls[before..], f);
                ft.handled = handled_trace(s, &ents, routed);
                t(ft);
            }
        });
    }
    let expectations = s
        .checks
        .iter()
        .zip(progress)
        .map(|(c, p)| ExpectationResult {
            index: c.index,
            line: c.line,
            frame: c.frame,
            until: c.until,
            what: c.what.clone(),
            passed: p.failures == 0,
            failed_at: p.failed_at,
            failures: p.failures,
            expected: p.expected,
            actual: p.actual,
        })
        .collect();
    let routed = pres.reconciled(None);
    Ok(Plain {
        checksums,
        final_bytes: w.state_bytes(),
        log: std::mem::take(&mut pres.log),
        routed,
        replay: recorder.finish(),
        expectations,
    })
}

/// The handler calls of a frame, for `--trace`.
fn handled_trace(
    s: &Scenario,
    ents: &[Entity],
    routed: &[super::routing::RouteEntry],
) -> Vec<String> {
    let Some(r) = s.routing.as_ref() else { return Vec::new() };
    let tags = s.content.tags();
    routed
        .iter()
        .map(|e| {
            let local = if e.cause.is_none() { " (local)" } else { "" };
            format!(
                "{} {} {} on {}{local}",
                r.handlers[e.handler].name,
                e.what.text(),
                tags.name(e.key.tag),
                entity_name(s, ents, e.key.target)
            )
        })
        .collect()
}

fn frame_trace<G: ScenarioHost>(
    s: &Scenario,
    w: &World<G>,
    ents: &[Entity],
    inputs: &[ScenarioInput],
    calls: &[(Frame, PresenterCall)],
    f: Frame,
) -> FrameTrace {
    let tags = s.content.tags();
    FrameTrace {
        frame: f,
        checksum: w.checksum(),
        inputs: inputs.to_vec(),
        entities: s
            .entities
            .iter()
            .zip(ents)
            .map(|(e, ent)| (e.name.clone(), debug_view(w, *ent)))
            .collect(),
        cues: calls
            .iter()
            .map(|(_, c)| {
                let k = c.key();
                let kind = match c {
                    PresenterCall::Play(_) => "Executed".to_string(),
                    PresenterCall::Cancel(_) => "Cancel".to_string(),
                    PresenterCall::OnActive(_) => "OnActive".to_string(),
                    PresenterCall::WhileActive(_) => "WhileActive".to_string(),
                    PresenterCall::Removed(_, r) => format!("Removed({r:?})"),
                    PresenterCall::Confirmed(_) => "Confirmed".to_string(),
                };
                format!("{kind} {} on {}", tags.name(k.tag), entity_name(s, ents, k.target))
            })
            .collect(),
        activations: w
            .activation_log()
            .filter(|r| r.frame == f)
            .map(|r| {
                let who = entity_name(s, ents, r.handle.owner);
                let what = s.content.ability_name(r.def);
                match r.result {
                    Ok(serial) => format!("{who} {what}: activated (serial {serial})"),
                    Err(e) => format!("{who} {what}: failed ({e:?})"),
                }
            })
            .collect(),
        handled: Vec::new(),
    }
}

fn entity_name(s: &Scenario, ents: &[Entity], e: Entity) -> String {
    ents.iter().position(|x| *x == e).map_or_else(|| e.to_string(), |i| s.entities[i].name.clone())
}

/// The first frame two checksum lists differ at.
fn first_difference(a: &[u64], b: &[u64]) -> Option<Frame> {
    a.iter().zip(b).position(|(x, y)| x != y).map(|i| i as Frame)
}

/// Compares a mode's reconciled cue log with plain stepping's. `ran_past`: the mode simulated
/// frames after the scenario's last (peers wait for confirmation), so calls about cues that
/// began after it are ignored, and so are removals of cues still shown when plain stepping
/// stopped.
fn compare_logs(
    plain: &PresenterLog,
    other: &PresenterLog,
    frames: Frame,
    ran_past: bool,
) -> Option<String> {
    let want = plain.reconciled();
    let mut got = other.reconciled();
    if ran_past {
        let removed_in_plain: BTreeSet<_> = want
            .iter()
            .filter_map(|c| match c {
                PresenterCall::Removed(k, _) => Some(*k),
                _ => None,
            })
            .collect();
        got.retain(|c| {
            let k = c.key();
            k.frame < frames
                && !matches!(c, PresenterCall::Removed(k, RemoveReason::Ended) if !removed_in_plain.contains(k))
        });
    }
    if let Err(e) = other.check_invariants() {
        return Some(format!("presenter contract broken: {e}"));
    }
    if want == got {
        return None;
    }
    let missing: Vec<_> = want.iter().filter(|c| !got.contains(c)).collect();
    let extra: Vec<_> = got.iter().filter(|c| !want.contains(c)).collect();
    Some(format!(
        "reconciled cue log differs: {} calls vs {} in plain stepping; first missing {:?}, first \
         extra {:?}",
        got.len(),
        want.len(),
        missing.first(),
        extra.first()
    ))
}

/// Compares a mode's presentation with plain stepping's: its reconciled cue log and, when the
/// scenario routes cues, its reconciled handler calls.
fn compare_presentation(
    s: &Scenario,
    plain: &Plain,
    pres: &RoutedPresenter<'_>,
    ran_past: bool,
) -> Option<String> {
    compare_logs(&plain.log, &pres.log, s.frames, ran_past).or_else(|| {
        let r = s.routing.as_ref()?;
        let want = match &plain.routed {
            Ok(w) => w,
            Err(e) => return Some(e.clone()),
        };
        let removed = removed_keys(&plain.log);
        let past = ran_past.then_some((s.frames, &removed));
        compare(r, &s.content, want, pres.reconciled(past))
    })
}

fn rollback<G: ScenarioHost>(
    s: &Scenario,
    hooks: &Hooks<G>,
    o: &RunOptions,
    plain: &Plain,
) -> Result<ModeResult, ScenarioError> {
    let (mut w, ents) = setup(s, hooks, None)?;
    let inputs = game_inputs::<G>(&input_table(s));
    let straight = StraightRun {
        first_frame: w.next_frame(),
        checksums: plain.checksums.clone(),
        final_bytes: plain.final_bytes.clone(),
    };
    let check = Determinism {
        max_depth: o.rollback_depth.clamp(1, 64),
        seed: o.rollback_seed ^ s.world.seed,
    };
    let mut director = CueDirector::new().with_log_capacity(0);
    let mut pres = RoutedPresenter::new(s.content.clone(), s.routing.as_ref(), &ents);
    pres.at(0);
    let mut frame = 0;
    let result = check.against_each(
        &mut w,
        &straight,
        |frame, buf| {
            buf.clear();
            buf.extend_from_slice(inputs.get(frame as usize).map_or(&[][..], |v| v));
        },
        |w| run_ops(&s.ops, &s.content, false, &ents, w, None),
        &mut CueSession { director: &mut director, presenter: &mut pres },
        |_, session| {
            session.presenter.present_locals(frame);
            frame += 1;
            session.presenter.at(frame);
        },
    );
    let (problem, detail) = match result {
        Ok(st) => {
            pres.at(s.frames.saturating_sub(1));
            director.reconcile(&w, Some(s.frames.saturating_sub(1)), &mut pres);
            (
                compare_presentation(s, plain, &pres, false),
                format!(
                    "{} rollbacks, {} frames re-simulated, deepest {}",
                    st.rollbacks, st.resimulated, st.max_depth
                ),
            )
        }
        Err(e) => {
            let problem = match e {
                DeterminismFailure::Resimulation(d) => format!(
                    "re-simulating frame {} after a rollback of {} frames gave different state \
                     in {:?}",
                    d.frame,
                    d.depth,
                    d.subsystems()
                ),
                DeterminismFailure::Checksum { frame, .. } => {
                    format!("checksum after frame {frame} differs from plain stepping")
                }
                DeterminismFailure::FinalBytes => {
                    "final snapshot bytes differ from plain stepping".into()
                }
            };
            (Some(problem), String::new())
        }
    };
    Ok(ModeResult {
        mode: Mode::Rollback,
        outcome: problem.map_or(ModeOutcome::Agrees, ModeOutcome::Disagrees),
        detail,
    })
}

fn replay<G: ScenarioHost>(
    s: &Scenario,
    hooks: &Hooks<G>,
    plain: &Plain,
) -> Result<ModeResult, ScenarioError> {
    let bytes = plain.replay.encode();
    let outcome = match Replay::decode(&bytes) {
        Err(e) => ModeOutcome::Disagrees(format!("the recorded replay does not decode: {e}")),
        Ok(decoded) if decoded != plain.replay => {
            ModeOutcome::Disagrees("the replay changed in an encode/decode round trip".into())
        }
        Ok(decoded) => {
            let (mut w, ents) = setup(s, hooks, None)?;
            let script = |w: &mut World<G>| run_ops(&s.ops, &s.content, false, &ents, w, None);
            match decoded.verify_with(&mut w, script) {
                Err(e) => ModeOutcome::Disagrees(format!("the replay does not play: {e}")),
                Ok(v) => match v.first_divergence {
                    Some(f) => ModeOutcome::Disagrees(format!(
                        "re-simulating the replay diverges at frame {f}{}",
                        v.diffs.first().map_or(String::new(), |d| format!(" ({d})"))
                    )),
                    None if w.state_bytes() != plain.final_bytes => ModeOutcome::Disagrees(
                        "final snapshot bytes differ from plain stepping".into(),
                    ),
                    None => match replay_presentation(s, hooks, plain, &decoded)? {
                        Some(why) => ModeOutcome::Disagrees(why),
                        None => ModeOutcome::Agrees,
                    },
                },
            }
        }
    };
    Ok(ModeResult {
        mode: Mode::Replay,
        outcome,
        detail: format!("{} bytes, {} keyframes", bytes.len(), plain.replay.keyframes.len()),
    })
}

/// Plays a decoded replay as a viewer would (a cue director and the scenario's handlers, every
/// frame confirmed) and compares what it presents with plain stepping.
fn replay_presentation<G: ScenarioHost>(
    s: &Scenario,
    hooks: &Hooks<G>,
    plain: &Plain,
    decoded: &Replay,
) -> Result<Option<String>, ScenarioError> {
    let (mut w, ents) = setup(s, hooks, None)?;
    let mut director = CueDirector::new().with_log_capacity(0);
    let mut pres = RoutedPresenter::new(s.content.clone(), s.routing.as_ref(), &ents);
    for f in decoded.first_frame()..decoded.end_frame().min(s.frames) {
        let inputs = decoded.frame_inputs::<G>(f);
        w.step_with(&inputs, |w| run_ops(&s.ops, &s.content, false, &ents, w, None));
        director.ingest(w.output());
        pres.at(f);
        director.reconcile(&w, Some(f), &mut pres);
        pres.present_locals(f);
    }
    Ok(compare_presentation(s, plain, &pres, false))
}

/// Compares the confirmed checksums a runner recorded with plain stepping's.
fn compare_sums<G: ScenarioHost>(
    runner: &Runner<G>,
    s: &Scenario,
    plain: &Plain,
) -> Option<String> {
    let sums: Vec<u64> = runner
        .recorder()
        .map(|r| r.replay().frames.iter().map(|f| f.checksum).collect())
        .unwrap_or_default();
    if sums.len() < s.frames as usize {
        Some(format!("only {} confirmed frames were recorded", sums.len()))
    } else {
        first_difference(&sums[..s.frames as usize], &plain.checksums)
            .map(|f| format!("the confirmed checksum after frame {f} differs from plain stepping"))
    }
}

fn peers<G: ScenarioHost>(
    s: &Scenario,
    hooks: &Hooks<G>,
    plain: &Plain,
) -> Result<ModeResult, ScenarioError> {
    // At least two peers: a one-player scenario gets a second, idle peer (the world has an
    // input slot for it in every mode).
    let players = usize::from(s.world.players);
    let n = &s.network;
    let config = MatchConfig {
        players,
        input_delay: n.input_delay as usize,
        max_prediction: n.max_prediction as usize,
        desync_interval: 10,
        tick_ms: 16,
        conditions: NetConditions {
            latency_ms: n.latency_ms,
            jitter_ms: n.jitter_ms,
            loss_percent: n.loss_percent,
            duplicate_percent: 0,
            reorder_percent: 0,
        },
        net_seed: n.seed,
        ..MatchConfig::default()
    };
    // Every peer gets the same world; setup errors surfaced in plain mode already.
    let mut worlds = Vec::with_capacity(players);
    let mut ents = Vec::new();
    for _ in 0..players {
        let (w, e) = setup(s, hooks, None)?;
        worlds.push(Some(w));
        ents = e;
    }
    let built = LocalMatch::new(config, |i| worlds[i].take().expect("one world per peer"));
    let mut m = match built {
        Ok(m) => m,
        Err(e) => return Ok(failed(Mode::Peers, format!("cannot start the sessions: {e}"))),
    };
    for l in &n.links {
        let c = NetConditions {
            latency_ms: l.latency_ms,
            jitter_ms: l.jitter_ms,
            loss_percent: l.loss_percent,
            duplicate_percent: 0,
            reorder_percent: 0,
        };
        m.network().set_link_conditions(PeerAddr(l.a), PeerAddr(l.b), c);
    }
    for p in m.peers_mut() {
        p.runner.record(0);
        p.runner.director = Some(CueDirector::new().with_log_capacity(0));
    }
    if let Err(e) = m.synchronize() {
        return Ok(failed(Mode::Peers, format!("peers did not synchronise: {e}")));
    }
    let inputs = game_inputs::<G>(&input_table(s));
    let mut pres: Vec<RoutedPresenter<'_>> = (0..players)
        .map(|_| RoutedPresenter::new(s.content.clone(), s.routing.as_ref(), &ents))
        .collect();
    // `LocalMatch::run_with`, with each peer's local cues made once its world has simulated
    // their frame (presentation runs beside the simulation, whatever it predicts).
    let limit = u64::from(s.frames) * 20 + 20_000;
    let mut ticks = 0u64;
    // Until every peer has confirmed and recorded frames `0..frames` (a peer may learn that a
    // frame is confirmed a tick before it records it).
    let recorded = |m: &LocalMatch<G>| {
        m.peers().iter().all(|p| p.runner.recorder().is_some_and(|r| r.next_frame() >= s.frames))
    };
    while !(m.all_confirmed(s.frames) && recorded(&m)) {
        let mut refs: Vec<&mut dyn Presenter> =
            pres.iter_mut().map(|p| p as &mut dyn Presenter).collect();
        // `frame` is the frame the input applies to (GGRS delays it by the input delay).
        let r = m.tick(
            |player, frame, _| {
                inputs.get(frame as usize).map_or_else(G::Input::default, |v| v[player])
            },
            &mut refs,
            |w| run_ops(&s.ops, &s.content, false, &ents, w, None),
        );
        if let Err(e) = r {
            return Ok(failed(Mode::Peers, format!("the match failed: {e}")));
        }
        for (p, peer) in pres.iter_mut().zip(m.peers()) {
            if let Some(f) = peer.runner.world().next_frame().checked_sub(1) {
                p.present_locals(f.min(s.frames.saturating_sub(1)));
            }
        }
        ticks += 1;
        if ticks > limit {
            return Ok(failed(
                Mode::Peers,
                format!(
                    "the match stalled: frames 0..{} not confirmed after {ticks} ticks",
                    s.frames
                ),
            ));
        }
    }
    let mut problem = None;
    let mut rollbacks = 0;
    let mut deepest = 0;
    for (i, p) in m.peers().iter().enumerate() {
        let st = p.runner.stats();
        rollbacks += st.rollbacks;
        deepest = deepest.max(st.max_rollback);
        if problem.is_some() {
            continue;
        }
        if st.desyncs > 0 {
            problem = Some(format!("peer {i} detected a desync"));
        } else if let Some(why) = compare_sums(&p.runner, s, plain) {
            problem = Some(format!("peer {i}: {why}"));
        } else if let Some(why) = compare_presentation(s, plain, &pres[i], true) {
            problem = Some(format!("peer {i}: {why}"));
        }
    }
    let net = m.network().stats();
    let idle = if s.players < 2 { " (peer 1 idle)" } else { "" };
    let links =
        if n.links.is_empty() { String::new() } else { format!(", {} own links", n.links.len()) };
    Ok(ModeResult {
        mode: Mode::Peers,
        outcome: problem.map_or(ModeOutcome::Agrees, ModeOutcome::Disagrees),
        detail: format!(
            "{players} peers{idle}, {} ms ± {} ms, {}% loss{links}, delay {}, prediction {}, \
             {rollbacks} rollbacks, deepest {deepest}, {} packets dropped",
            n.latency_ms, n.jitter_ms, n.loss_percent, n.input_delay, n.max_prediction, net.dropped
        ),
    })
}

/// GGRS's own sync test: every frame it rolls back `check_distance` frames, re-simulates them
/// and compares the checksums.
fn sync_test<G: ScenarioHost>(
    s: &Scenario,
    hooks: &Hooks<G>,
    plain: &Plain,
) -> Result<ModeResult, ScenarioError> {
    let players = usize::from(s.world.players);
    let distance = s.check_distance as usize;
    let prediction = (s.network.max_prediction as usize).max(distance + 1);
    let (w, ents) = setup(s, hooks, None)?;
    let mut runner = Runner::new(w, prediction, 10);
    runner.record(0);
    runner.director = Some(CueDirector::new().with_log_capacity(0));
    let built = ggrs::SessionBuilder::<GgrsConfig<G, PeerAddr>>::new()
        .with_num_players(players)
        .map(|b| b.with_max_prediction_window(prediction).with_check_distance(distance))
        .and_then(|b| b.start_synctest_session());
    let mut session = match built {
        Ok(x) => x,
        Err(e) => return Ok(failed(Mode::SyncTest, format!("cannot start the sync test: {e}"))),
    };
    let inputs = game_inputs::<G>(&input_table(s));
    let idle = vec![G::Input::default(); players];
    let mut pres = RoutedPresenter::new(s.content.clone(), s.routing.as_ref(), &ents);
    let mut problem = None;
    // Past the last frame until it is confirmed (`check_distance` frames behind).
    for _ in 0..s.frames as usize + distance + 1 {
        let f = runner.world().next_frame();
        let frame_inputs = inputs.get(f as usize).unwrap_or(&idle);
        let r = runner.advance_synctest(&mut session, frame_inputs, Some(&mut pres), |w| {
            run_ops(&s.ops, &s.content, false, &ents, w, None)
        });
        if let Err(e) = r {
            problem = Some(format!("{e}"));
            break;
        }
        pres.present_locals(f.min(s.frames.saturating_sub(1)));
    }
    let problem = problem
        .or_else(|| compare_sums(&runner, s, plain))
        .or_else(|| compare_presentation(s, plain, &pres, true));
    let st = runner.stats();
    Ok(ModeResult {
        mode: Mode::SyncTest,
        outcome: problem.map_or(ModeOutcome::Agrees, ModeOutcome::Disagrees),
        detail: format!("check distance {distance}, {} rollbacks", st.rollbacks),
    })
}

fn failed(mode: Mode, why: String) -> ModeResult {
    ModeResult { mode, outcome: ModeOutcome::Disagrees(why), detail: String::new() }
}
