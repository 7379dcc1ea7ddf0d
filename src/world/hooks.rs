//! Registered functions: behaviour that content names but cannot express as data.
//!
//! Content refers to functions by name (`magnitude: Custom(calc: "ManaPoison")`,
//! `executions: [(calc: "Damage")]`). The game registers plain `fn` pointers under those names
//! in a [`Hooks`] table; building a [`World`](super::World) binds every name content uses and
//! fails with [`WorldError::MissingFunction`] if one is missing or has the wrong kind. Nothing
//! here is stored in the snapshot: only ids are, so state stays plain data (D-7).

use super::{Game, World, WorldError};
pub use crate::attribute::ModFilterFn;
use crate::attribute::ModOp;
use crate::content::Content;
use crate::effect::EffectSpec;
use crate::effect::{CaptureSide, CaptureWhich};
use crate::id::FnKind;
use crate::id::{AttrId, Entity, FnId, TagId};
use crate::num::Fx;
use crate::random::Stream;
use crate::tag::TagSet;
use crate::world::output::ExecutedMod;

/// An attribute a calculation or execution reads, declared when it is registered (G-43: reading
/// anything else is impossible, not a runtime surprise).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    /// Source or target.
    pub side: CaptureSide,
    /// The attribute's name (resolved when the world is built).
    pub attribute: String,
    /// Base, current or bonus.
    pub which: CaptureWhich,
    /// Source captures only: read when the spec is created instead of at application.
    pub snapshot: bool,
}

impl Capture {
    /// The target's current value, read at application (or execution).
    pub fn target(attribute: &str) -> Capture {
        Capture {
            side: CaptureSide::Target,
            attribute: attribute.into(),
            which: CaptureWhich::Current,
            snapshot: false,
        }
    }

    /// The source's current value, read at application (or execution).
    pub fn source(attribute: &str) -> Capture {
        Capture {
            side: CaptureSide::Source,
            attribute: attribute.into(),
            which: CaptureWhich::Current,
            snapshot: false,
        }
    }

    /// The source's current value, read when the spec is created (a projectile keeps the
    /// values its source had when it fired).
    pub fn source_snapshot(attribute: &str) -> Capture {
        Capture {
            side: CaptureSide::Source,
            attribute: attribute.into(),
            which: CaptureWhich::Current,
            snapshot: true,
        }
    }

    /// Reads the base value instead of the current one.
    #[must_use]
    pub fn base(mut self) -> Capture {
        self.which = CaptureWhich::Base;
        self
    }
}

/// A capture resolved against content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BoundCapture {
    pub side: CaptureSide,
    pub attr: AttrId,
    pub which: CaptureWhich,
    pub snapshot: bool,
}

/// What a magnitude calculation sees.
#[derive(Debug)]
pub struct CalcInput<'a> {
    /// The frozen content (to look up ids by name).
    pub content: &'a Content,
    /// The captured values, in declaration order.
    pub captures: &'a [Fx],
    /// The spec level.
    pub level: u16,
    /// The stack count (1 for a new application).
    pub stacks: u16,
    /// The spec.
    pub spec: &'a EffectSpec,
    /// The source's tags at spec creation (ancestor-expanded).
    pub source_tags: &'a TagSet,
    /// The target's tags now (ancestor-expanded).
    pub target_tags: &'a TagSet,
    /// The spec's SetByCaller values beyond the four it holds itself (set with
    /// [`World::set_set_by_caller`](crate::World::set_set_by_caller) in a world with a raised
    /// [`WorldConfig::set_by_caller_per_spec`](crate::WorldConfig::set_by_caller_per_spec)).
    pub set_by_caller_extra: &'a [crate::effect::SbcEntry],
}

impl CalcInput<'_> {
    /// A captured value by declaration index (0 if the index was not declared).
    pub fn capture(&self, index: usize) -> Fx {
        self.captures.get(index).copied().unwrap_or(Fx::ZERO)
    }

    /// A SetByCaller value (including those beyond the spec's inline four); `None` when the
    /// spec has none for `tag`.
    pub fn set_by_caller(&self, tag: TagId) -> Option<Fx> {
        self.spec
            .set_by_caller(tag)
            .or_else(|| self.set_by_caller_extra.iter().find(|e| e.tag == tag.0).map(|e| e.value))
    }
}

/// A custom magnitude calculation (GAS MMC): a pure function of its declared captures and the
/// spec.
pub type CalcFn = fn(&CalcInput<'_>) -> Fx;

/// One output of an execution: a change to one of the target's base values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecOutput {
    /// The attribute.
    pub attr: AttrId,
    /// The operation.
    pub op: ModOp,
    /// The magnitude.
    pub value: Fx,
}

/// What an execution sees and produces. The spec is read-only here (G-14): mutate it in the
/// registration's `prepare` stage, which runs before captures are read.
pub struct ExecCtx<'a> {
    pub(crate) content: &'a Content,
    pub(crate) captures: &'a [Fx],
    pub(crate) spec: &'a EffectSpec,
    pub(crate) stacks: u16,
    pub(crate) source: Entity,
    pub(crate) target: Entity,
    pub(crate) source_tags: &'a TagSet,
    pub(crate) target_tags: &'a TagSet,
    pub(crate) outputs: &'a mut Vec<ExecOutput>,
    pub(crate) extra: &'a mut Vec<(EffectSpec, Entity)>,
    pub(crate) rng: Stream,
    pub(crate) cues_handled_manually: bool,
    pub(crate) cues: &'a mut Vec<(Entity, TagId, crate::cue::CueParams)>,
    /// The transient aggregators of this run (F-GE-14).
    pub(crate) transients: &'a [(TagId, Fx)],
    /// The spec's SetByCaller values beyond its inline four.
    pub(crate) sbc_extra: &'a [crate::effect::SbcEntry],
}

impl core::fmt::Debug for ExecCtx<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ExecCtx")
            .field("source", &self.source)
            .field("target", &self.target)
            .finish()
    }
}

impl ExecCtx<'_> {
    /// The frozen content (to look up ids by name).
    pub fn content(&self) -> &Content {
        self.content
    }

    /// A captured value by declaration index (0 if the index was not declared), with the
    /// execution's scoped modifiers of that attribute applied (F-GE-14).
    pub fn capture(&self, index: usize) -> Fx {
        self.captures.get(index).copied().unwrap_or(Fx::ZERO)
    }

    /// A transient aggregator (GAS's `AttemptCalculateTransientAggregatorMagnitude`, F-GE-14):
    /// 0 plus the qualifying scoped modifiers of this execution that name `tag`, aggregated
    /// like an attribute of the content's default multiplication policy. `None` when no scoped
    /// modifier of the execution names it.
    pub fn transient(&self, tag: TagId) -> Option<Fx> {
        self.transients.iter().find(|(t, _)| *t == tag).map(|(_, v)| *v)
    }

    /// The spec (read-only).
    pub fn spec(&self) -> &EffectSpec {
        self.spec
    }

    /// The executing effect's definition (`None` for inline specs).
    pub fn def(&self) -> Option<&crate::effect::EffectDef> {
        if self.spec.is_inline() {
            None
        } else {
            self.content.effect_defs().get(self.spec.def.index())
        }
    }

    /// A SetByCaller value (including those beyond the spec's inline four); `None` when the
    /// spec has none for `tag`.
    pub fn set_by_caller(&self, tag: TagId) -> Option<Fx> {
        self.spec
            .set_by_caller(tag)
            .or_else(|| self.sbc_extra.iter().find(|e| e.tag == tag.0).map(|e| e.value))
    }

    /// The stack count of the executing effect (1 for instant effects).
    pub fn stacks(&self) -> u16 {
        self.stacks
    }

    /// The spec's instigator.
    pub fn source(&self) -> Entity {
        self.source
    }

    /// The target.
    pub fn target(&self) -> Entity {
        self.target
    }

    /// The source's tags at spec creation (ancestor-expanded).
    pub fn source_tags(&self) -> &TagSet {
        self.source_tags
    }

    /// The target's tags now (ancestor-expanded).
    pub fn target_tags(&self) -> &TagSet {
        self.target_tags
    }

    /// Changes one of the target's base values (applied in order after the execution returns,
    /// each followed by post-execute).
    pub fn output(&mut self, attr: AttrId, op: ModOp, value: Fx) {
        self.outputs.push(ExecOutput { attr, op, value });
    }

    /// Applies another spec (for example a lifesteal heal on the source) after this execution.
    pub fn apply(&mut self, spec: EffectSpec, target: Entity) {
        self.extra.push((spec, target));
    }

    /// A random stream unique to this execution (derived from the session seed, the frame, the
    /// target and the application sequence), identical on every peer.
    pub fn random(&mut self) -> &mut Stream {
        &mut self.rng
    }

    /// Marks the effect's cues as handled by the execution (F-GE-15): the effect's own
    /// `Executed` cues are not emitted for this execution.
    pub fn handle_cues_manually(&mut self) {
        self.cues_handled_manually = true;
    }

    /// Emits a burst cue on the target (for example a blocked-hit impact instead of the
    /// effect's own cue).
    pub fn cue(&mut self, tag: TagId, params: crate::cue::CueParams) {
        self.cues.push((self.target, tag, params));
    }

    /// Emits a burst cue on another entity.
    pub fn cue_on(&mut self, on: Entity, tag: TagId, params: crate::cue::CueParams) {
        self.cues.push((on, tag, params));
    }
}

/// An execution (GAS ExecutionCalculation).
pub type ExecFn = fn(&mut ExecCtx<'_>);

/// The optional first stage of an execution: may change the spec before captures are read.
/// It changes the spec itself (no world): a SetByCaller value or granted tag beyond the spec's
/// inline room is not kept and is reported as a
/// [`Diagnostic::CapacityExceeded`](crate::Diagnostic::CapacityExceeded); the values the spec
/// held beyond its room before the stage stay readable.
pub type PrepareFn = fn(&mut EffectSpec);

/// A custom application requirement's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequirementVerdict {
    /// The application may proceed.
    Allow,
    /// The application is refused.
    Deny,
    /// Instead of applying, extend an existing effect by this many frames.
    ExtendInstead {
        /// The effect to extend.
        handle: crate::id::EffectHandle,
        /// Frames to add.
        frames: u32,
    },
}

/// A custom application requirement: reads the world, never writes it.
pub type RequirementFn<G> = fn(&World<G>, &EffectSpec, Entity) -> RequirementVerdict;

/// A post-execute hook: runs after an instant/periodic change of a base value, may change the
/// world (its changes are queued and applied after the current cascade step).
pub type PostExecuteFn<G> = fn(&mut World<G>, &ExecutedMod);

/// A post-execute hook that also receives the execution's [`PostExecuteContext`]
/// (registered with [`Hooks::post_execute_with_context`]).
pub type PostExecuteCtxFn<G> = fn(&mut World<G>, &ExecutedMod, &PostExecuteContext);

/// What a post-execute hook registered with [`Hooks::post_execute_with_context`] knows besides
/// the [`ExecutedMod`] (F-ATTR-05; GAS's `FGameplayEffectModCallbackData` gives the whole
/// spec): the spec that executed — its context (instigator, causer, source object, hit result,
/// the ability that made it), its SetByCaller values, its level and the source's aggregated
/// tags captured when it was made — and the target's aggregated tags when it executed.
///
/// For a periodic execution the spec is the one the active effect keeps (definitions with
/// executions, custom calculations or source-filtered captures keep their full spec); an
/// effect that keeps none executes with a spec rebuilt from its origin: the same instigator,
/// causer, source object and ability, no SetByCaller values, no hit result, and the
/// instigator's tags now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostExecuteContext {
    /// The spec that executed (after an execution's prepare stage, for execution outputs).
    pub spec: EffectSpec,
    /// The target's aggregated (ancestor-expanded) tags when the spec executed.
    pub target_tags: TagSet,
    /// The spec's SetByCaller values beyond its inline four (a copy: the context outlives
    /// nothing of the world's).
    pub(crate) sbc_extra: [crate::effect::SbcEntry; crate::world::capacity::MAX_EXTRA],
    pub(crate) n_sbc_extra: usize,
}

impl PostExecuteContext {
    /// The spec's context (instigator, causer, source object, hit, ability).
    pub fn context(&self) -> &crate::effect::EffectContext {
        &self.spec.context
    }

    /// The ability that made the spec (`None` for specs not made by an ability).
    pub fn ability(&self) -> Option<crate::id::AbilityHandle> {
        let a = self.spec.context.ability;
        (!a.is_none()).then_some(a)
    }

    /// The object the effect came from (an item), if any.
    pub fn source_object(&self) -> Option<Entity> {
        self.spec.context.source_object.some()
    }

    /// A SetByCaller value of the spec (including those beyond its inline four).
    pub fn set_by_caller(&self, tag: TagId) -> Option<Fx> {
        self.set_by_caller_values().find(|(t, _)| *t == tag).map(|(_, v)| v)
    }

    /// Every SetByCaller value of the spec, in the order they were set.
    pub fn set_by_caller_values(&self) -> impl Iterator<Item = (TagId, Fx)> + '_ {
        let n = usize::from(self.spec.n_set_by_caller).min(self.spec.set_by_caller.len());
        self.spec.set_by_caller[..n]
            .iter()
            .chain(&self.sbc_extra[..self.n_sbc_extra.min(self.sbc_extra.len())])
            .map(|e| (TagId(e.tag), e.value))
    }

    /// The source's aggregated tags captured when the spec was made (plus the making
    /// ability's tags).
    pub fn source_tags(&self) -> &TagSet {
        &self.spec.source_tags
    }

    /// The target's aggregated tags when the spec executed.
    pub fn target_tags(&self) -> &TagSet {
        &self.target_tags
    }

    /// The hit result the spec carries ([`EffectSpec::with_hit`]), as target data of kind hit:
    /// `None` when its context names no hit entity.
    pub fn hit(&self) -> Option<crate::ability::TargetData> {
        let c = &self.spec.context;
        c.hit_entity
            .some()
            .map(|e| crate::ability::TargetData::hit(e, c.hit_point, c.hit_normal, c.hit_part))
    }
}

/// A registered post-execute hook.
pub(crate) enum PostReg<G: Game> {
    Plain(PostExecuteFn<G>),
    Context(PostExecuteCtxFn<G>),
}

impl<G: Game> Clone for PostReg<G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G: Game> Copy for PostReg<G> {}

/// A pure pre-change hook: may adjust an attribute's new current value.
pub type PreChangeFn = fn(Entity, AttrId, &mut Fx);

/// A custom activation check (step 7 of the activation pipeline): `Err(code)` fails the
/// activation with `ActivationFailure::Custom(code)`.
pub type CanActivateFn<G> =
    fn(&World<G>, crate::id::AbilityHandle, Option<&crate::ability::EventData>) -> Result<(), u16>;

/// An ability's registered behaviour: plain functions over the world and the ability's `Pod`
/// state blob (no closures in state, D-7). Every part is optional.
pub struct Behaviour<G: Game> {
    /// Runs when the ability activates (after commit when `commit_on_activate`).
    pub on_activate: Option<fn(&mut crate::world::AbilityCtx<'_, G>)>,
    /// Runs when one of the ability's tasks reports.
    pub on_task: Option<fn(&mut crate::world::AbilityCtx<'_, G>, &crate::ability::TaskResult)>,
    /// Runs on press/release edges of the bound input while active.
    pub on_input: Option<fn(&mut crate::world::AbilityCtx<'_, G>, crate::ability::InputEdge)>,
    /// Runs when the ability ends (`true` when cancelled).
    pub on_end: Option<fn(&mut crate::world::AbilityCtx<'_, G>, bool)>,
    /// Runs once when the ability is granted — by code, by an ability set or by an effect that
    /// grants it — right after its spec exists and before a passive ability activates (GAS's
    /// `OnGiveAbility`). The ability is not active: `ctx.serial()` is the last activation's.
    pub on_granted: Option<fn(&mut crate::world::AbilityCtx<'_, G>)>,
    /// Runs once when the ability is removed — by code, by a despawn, or by the removal policy
    /// of the effect that granted it — after it ended (if it was active) and while its spec
    /// and state blob still exist (GAS's `OnRemoveAbility`).
    pub on_removed: Option<fn(&mut crate::world::AbilityCtx<'_, G>)>,
}

impl<G: Game> Clone for Behaviour<G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G: Game> Copy for Behaviour<G> {}

impl<G: Game> Default for Behaviour<G> {
    fn default() -> Self {
        Behaviour {
            on_activate: None,
            on_task: None,
            on_input: None,
            on_end: None,
            on_granted: None,
            on_removed: None,
        }
    }
}

impl<G: Game> core::fmt::Debug for Behaviour<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut d = f.debug_struct("Behaviour");
        d.field("on_activate", &self.on_activate.is_some())
            .field("on_task", &self.on_task.is_some())
            .field("on_input", &self.on_input.is_some())
            .field("on_end", &self.on_end.is_some());
        // Listed only when set, so the hooks signature (and hash) of behaviours without them
        // is what it was before they existed.
        if self.on_granted.is_some() {
            d.field("on_granted", &true);
        }
        if self.on_removed.is_some() {
            d.field("on_removed", &true);
        }
        d.finish()
    }
}

#[derive(Clone, Debug)]
pub(crate) struct CalcReg {
    pub captures: Vec<Capture>,
    pub f: CalcFn,
}

#[derive(Clone, Debug)]
pub(crate) struct ExecReg {
    pub captures: Vec<Capture>,
    pub prepare: Option<PrepareFn>,
    pub f: ExecFn,
}

/// The table of registered functions a world binds content against.
pub struct Hooks<G: Game> {
    calcs: Vec<(String, CalcReg)>,
    execs: Vec<(String, ExecReg)>,
    reqs: Vec<(String, RequirementFn<G>)>,
    posts: Vec<(String, PostReg<G>)>,
    pres: Vec<(String, PreChangeFn)>,
    filters: Vec<(String, ModFilterFn)>,
    behaviours: Vec<(String, Behaviour<G>)>,
    checks: Vec<(String, CanActivateFn<G>)>,
    state_sizes: Vec<(String, usize)>,
    /// Custom task kinds (F-AT-06).
    tasks: Vec<(String, crate::world::CustomTaskFn<G>)>,
}

impl<G: Game> Clone for Hooks<G> {
    fn clone(&self) -> Self {
        Hooks {
            calcs: self.calcs.clone(),
            execs: self.execs.clone(),
            reqs: self.reqs.clone(),
            posts: self.posts.clone(),
            pres: self.pres.clone(),
            filters: self.filters.clone(),
            behaviours: self.behaviours.clone(),
            checks: self.checks.clone(),
            state_sizes: self.state_sizes.clone(),
            tasks: self.tasks.clone(),
        }
    }
}

impl<G: Game> Default for Hooks<G> {
    fn default() -> Self {
        Hooks {
            calcs: Vec::new(),
            execs: Vec::new(),
            reqs: Vec::new(),
            posts: Vec::new(),
            pres: Vec::new(),
            filters: Vec::new(),
            behaviours: Vec::new(),
            checks: Vec::new(),
            state_sizes: Vec::new(),
            tasks: Vec::new(),
        }
    }
}

impl<G: Game> core::fmt::Debug for Hooks<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Hooks")
            .field("calcs", &self.calcs.iter().map(|c| &c.0).collect::<Vec<_>>())
            .field("executions", &self.execs.iter().map(|c| &c.0).collect::<Vec<_>>())
            .field("requirements", &self.reqs.iter().map(|c| &c.0).collect::<Vec<_>>())
            .field("post_execute", &self.posts.iter().map(|c| &c.0).collect::<Vec<_>>())
            .field("pre_change", &self.pres.iter().map(|c| &c.0).collect::<Vec<_>>())
            .field("filters", &self.filters.iter().map(|c| &c.0).collect::<Vec<_>>())
            .field("behaviours", &self.behaviours.iter().map(|c| &c.0).collect::<Vec<_>>())
            .field("activation_checks", &self.checks.iter().map(|c| &c.0).collect::<Vec<_>>())
            .field("task_kinds", &self.tasks.iter().map(|c| &c.0).collect::<Vec<_>>())
            .finish()
    }
}

impl<G: Game> Hooks<G> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a magnitude calculation with the attributes it reads.
    #[must_use]
    pub fn calc(mut self, name: &str, captures: &[Capture], f: CalcFn) -> Self {
        self.calcs.push((name.into(), CalcReg { captures: captures.to_vec(), f }));
        self
    }

    /// Registers an execution with the attributes it reads.
    #[must_use]
    pub fn execution(mut self, name: &str, captures: &[Capture], f: ExecFn) -> Self {
        self.execs.push((name.into(), ExecReg { captures: captures.to_vec(), prepare: None, f }));
        self
    }

    /// Registers a two-stage execution: `prepare` may change the spec before captures are read.
    #[must_use]
    pub fn execution_with_prepare(
        mut self,
        name: &str,
        captures: &[Capture],
        prepare: PrepareFn,
        f: ExecFn,
    ) -> Self {
        self.execs.push((
            name.into(),
            ExecReg { captures: captures.to_vec(), prepare: Some(prepare), f },
        ));
        self
    }

    /// Registers a custom application requirement.
    #[must_use]
    pub fn requirement(mut self, name: &str, f: RequirementFn<G>) -> Self {
        self.reqs.push((name.into(), f));
        self
    }

    /// Registers a post-execute hook.
    #[must_use]
    pub fn post_execute(mut self, name: &str, f: PostExecuteFn<G>) -> Self {
        self.posts.push((name.into(), PostReg::Plain(f)));
        self
    }

    /// Registers a post-execute hook that also receives the execution's context
    /// ([`PostExecuteContext`]: the ability, SetByCaller values, aggregated source and target
    /// tags and hit result of the spec that executed), for hit reactions, knockback and
    /// block/chip decisions (F-ATTR-05). Content names it like any post-execute hook.
    #[must_use]
    pub fn post_execute_with_context(mut self, name: &str, f: PostExecuteCtxFn<G>) -> Self {
        self.posts.push((name.into(), PostReg::Context(f)));
        self
    }

    /// Registers a pre-change hook.
    #[must_use]
    pub fn pre_change(mut self, name: &str, f: PreChangeFn) -> Self {
        self.pres.push((name.into(), f));
        self
    }

    /// Registers a custom modifier filter.
    #[must_use]
    pub fn mod_filter(mut self, name: &str, f: ModFilterFn) -> Self {
        self.filters.push((name.into(), f));
        self
    }

    /// Registers an ability behaviour.
    #[must_use]
    pub fn behaviour(mut self, name: &str, b: Behaviour<G>) -> Self {
        self.behaviours.push((name.into(), b));
        self
    }

    /// Registers an ability behaviour whose state blob holds a `T`: building a world fails
    /// with [`WorldError::StateTooSmall`] if an ability using it declares a smaller
    /// `state_size`.
    #[must_use]
    pub fn behaviour_with_state<T: bytemuck::Pod>(mut self, name: &str, b: Behaviour<G>) -> Self {
        self.state_sizes.push((name.into(), core::mem::size_of::<T>()));
        self.behaviours.push((name.into(), b));
        self
    }

    /// Registers a custom activation check.
    #[must_use]
    pub fn can_activate(mut self, name: &str, f: CanActivateFn<G>) -> Self {
        self.checks.push((name.into(), f));
        self
    }

    /// Registers a custom task kind (F-AT-06): `tick` runs in phase P5 of every frame the
    /// owner's clock runs after the spawn (see [`TaskCtx`](crate::world::TaskCtx)).
    /// Behaviours spawn it with [`TaskSpec::Custom`](crate::TaskSpec::Custom) and the kind
    /// [`World::task_kind`](crate::World::task_kind) finds by this name. Kinds are numbered by
    /// sorting their names (the same on every peer); registering a name twice keeps the last.
    #[must_use]
    pub fn task_kind(mut self, name: &str, tick: crate::world::CustomTaskFn<G>) -> Self {
        self.tasks.retain(|(n, _)| n != name);
        self.tasks.push((name.into(), tick));
        self
    }

    /// A stable description of every registered name and capture (part of the session
    /// handshake: peers with different hooks would diverge).
    pub fn signature(&self) -> String {
        let mut lines: Vec<String> = Vec::new();
        let caps = |c: &[Capture]| {
            c.iter()
                .map(|c| format!("{:?}:{}:{:?}:{}", c.side, c.attribute, c.which, c.snapshot))
                .collect::<Vec<_>>()
                .join(",")
        };
        lines.extend(self.calcs.iter().map(|(n, r)| format!("calc {n} [{}]", caps(&r.captures))));
        lines.extend(self.execs.iter().map(|(n, r)| {
            format!("execution {n} [{}] prepare={}", caps(&r.captures), r.prepare.is_some())
        }));
        lines.extend(self.reqs.iter().map(|(n, _)| format!("requirement {n}")));
        lines.extend(self.posts.iter().map(|(n, r)| match r {
            PostReg::Plain(_) => format!("post_execute {n}"),
            PostReg::Context(_) => format!("post_execute {n} context"),
        }));
        lines.extend(self.pres.iter().map(|(n, _)| format!("pre_change {n}")));
        lines.extend(self.filters.iter().map(|(n, _)| format!("filter {n}")));
        lines.extend(self.behaviours.iter().map(|(n, b)| format!("behaviour {n} {b:?}")));
        lines.extend(self.checks.iter().map(|(n, _)| format!("can_activate {n}")));
        lines.extend(self.tasks.iter().map(|(n, _)| format!("task_kind {n}")));
        lines.sort();
        lines.join("\n")
    }

    /// Whether a function of this name and kind is registered (what binding content to this
    /// table needs for every entry of [`Content::functions`]).
    pub fn provides(&self, name: &str, kind: FnKind) -> bool {
        self.kind_of(name).contains(&kind)
    }

    /// The registered name of this kind closest to `name` (another case, a typo), for the "did
    /// you mean" of a missing function.
    pub(crate) fn similar(&self, name: &str, kind: FnKind) -> Option<&str> {
        fn names<T>(v: &[(String, T)]) -> Vec<&str> {
            v.iter().map(|c| c.0.as_str()).collect()
        }
        let known = match kind {
            FnKind::Calc => names(&self.calcs),
            FnKind::Execution => names(&self.execs),
            FnKind::Requirement => names(&self.reqs),
            FnKind::PostExecute => names(&self.posts),
            FnKind::PreChange => names(&self.pres),
            FnKind::ModFilter => names(&self.filters),
            FnKind::Behaviour => names(&self.behaviours),
            FnKind::CanActivate => names(&self.checks),
        };
        crate::located::suggest(name, known.into_iter()).filter(|s| *s != name)
    }

    fn kind_of(&self, name: &str) -> Vec<FnKind> {
        let mut v = Vec::new();
        if self.calcs.iter().any(|c| c.0 == name) {
            v.push(FnKind::Calc);
        }
        if self.execs.iter().any(|c| c.0 == name) {
            v.push(FnKind::Execution);
        }
        if self.reqs.iter().any(|c| c.0 == name) {
            v.push(FnKind::Requirement);
        }
        if self.posts.iter().any(|c| c.0 == name) {
            v.push(FnKind::PostExecute);
        }
        if self.pres.iter().any(|c| c.0 == name) {
            v.push(FnKind::PreChange);
        }
        if self.filters.iter().any(|c| c.0 == name) {
            v.push(FnKind::ModFilter);
        }
        if self.behaviours.iter().any(|c| c.0 == name) {
            v.push(FnKind::Behaviour);
        }
        if self.checks.iter().any(|c| c.0 == name) {
            v.push(FnKind::CanActivate);
        }
        v
    }

    /// Binds content's function references to this table.
    pub(crate) fn bind(&self, content: &Content) -> Result<Bound<G>, WorldError> {
        let mut fns = Vec::with_capacity(content.functions().len());
        for f in content.functions() {
            let missing = || {
                let registered = self.kind_of(&f.name);
                WorldError::MissingFunction {
                    name: f.name.clone(),
                    kind: f.kind,
                    registered_as: registered.first().copied(),
                    did_you_mean: self.similar(&f.name, f.kind).map(str::to_string),
                }
            };
            let resolve_caps = |caps: &[Capture]| -> Result<Vec<BoundCapture>, WorldError> {
                caps.iter()
                    .map(|c| {
                        let attr = content.attr(&c.attribute).map_err(|_| {
                            WorldError::UnknownCaptureAttribute {
                                function: f.name.clone(),
                                attribute: c.attribute.clone(),
                            }
                        })?;
                        if content.attr_def(attr).transient {
                            return Err(WorldError::UnknownCaptureAttribute {
                                function: f.name.clone(),
                                attribute: format!(
                                    "{} (a transient attribute cannot be captured)",
                                    c.attribute
                                ),
                            });
                        }
                        Ok(BoundCapture {
                            side: c.side,
                            attr,
                            which: c.which,
                            snapshot: c.snapshot && c.side == CaptureSide::Source,
                        })
                    })
                    .collect()
            };
            let b = match f.kind {
                FnKind::Calc => {
                    let r = self.calcs.iter().find(|c| c.0 == f.name).ok_or_else(missing)?;
                    BoundFn::Calc { f: r.1.f, captures: resolve_caps(&r.1.captures)? }
                }
                FnKind::Execution => {
                    let r = self.execs.iter().find(|c| c.0 == f.name).ok_or_else(missing)?;
                    BoundFn::Exec {
                        f: r.1.f,
                        prepare: r.1.prepare,
                        captures: resolve_caps(&r.1.captures)?,
                    }
                }
                FnKind::Requirement => {
                    BoundFn::Req(self.reqs.iter().find(|c| c.0 == f.name).ok_or_else(missing)?.1)
                }
                FnKind::PostExecute => {
                    match self.posts.iter().find(|c| c.0 == f.name).ok_or_else(missing)?.1 {
                        PostReg::Plain(f) => BoundFn::Post(f),
                        PostReg::Context(f) => BoundFn::PostCtx(f),
                    }
                }
                FnKind::PreChange => {
                    BoundFn::Pre(self.pres.iter().find(|c| c.0 == f.name).ok_or_else(missing)?.1)
                }
                FnKind::ModFilter => BoundFn::Filter(
                    self.filters.iter().find(|c| c.0 == f.name).ok_or_else(missing)?.1,
                ),
                FnKind::Behaviour => BoundFn::Behaviour(
                    self.behaviours.iter().find(|c| c.0 == f.name).ok_or_else(missing)?.1,
                ),
                FnKind::CanActivate => BoundFn::Check(
                    self.checks.iter().find(|c| c.0 == f.name).ok_or_else(missing)?.1,
                ),
            };
            fns.push(b);
        }
        // Behaviours registered with a state type need that much state.
        for a in content.ability_defs() {
            let Some(b) = a.behaviour.and_then(|f| content.function(f)) else { continue };
            if let Some((_, need)) = self.state_sizes.iter().find(|(n, _)| *n == b.name)
                && usize::from(a.state_size) < *need
            {
                return Err(WorldError::StateTooSmall {
                    ability: a.name.clone(),
                    declared: a.state_size,
                    needed: *need,
                });
            }
        }
        // Source snapshot captures per effect (modifiers, their calculations, then executions)
        // must fit in a spec.
        for def in content.effect_defs() {
            let mut n = 0;
            for m in def.modifiers.iter().map(|m| &m.magnitude).chain(def.extra_magnitudes()) {
                n += match *m {
                    crate::effect::MagnitudeDef::Attribute {
                        side: CaptureSide::Source,
                        snapshot: true,
                        ..
                    } => 1,
                    crate::effect::MagnitudeDef::Custom { calc, .. } => {
                        match fns.get(calc.index()) {
                            Some(BoundFn::Calc { captures, .. }) => {
                                captures.iter().filter(|c| c.snapshot).count()
                            }
                            _ => 0,
                        }
                    }
                    _ => 0,
                };
            }
            for x in &def.executions {
                if let Some(BoundFn::Exec { captures, .. }) = fns.get(x.index()) {
                    n += captures.iter().filter(|c| c.snapshot).count();
                }
            }
            // A scoped modifier of an attribute changes the execution's captures of it, so
            // the execution must capture it on that side, as other than its base value
            // (F-GE-14).
            for m in &def.scoped_modifiers {
                let crate::effect::ScopedTarget::Attribute { attr, side } = m.target else {
                    continue;
                };
                let Some(x) = def.executions.get(usize::from(m.execution)) else { continue };
                let Some(BoundFn::Exec { captures, .. }) = fns.get(x.index()) else { continue };
                if !captures
                    .iter()
                    .any(|c| c.attr == attr && c.side == side && c.which != CaptureWhich::Base)
                {
                    return Err(WorldError::ScopedModifierNotCaptured {
                        effect: def.name.clone(),
                        execution: content.function(*x).map(|f| f.name.clone()).unwrap_or_default(),
                        attribute: content.attr_def(attr).name.clone(),
                        side,
                    });
                }
            }
            if n > crate::effect::MAX_SOURCE_CAPTURES {
                return Err(WorldError::TooManySnapshotCaptures {
                    effect: def.name.clone(),
                    count: n,
                });
            }
        }
        let mut tasks = self.tasks.clone();
        tasks.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Bound { fns, signature: self.signature(), tasks })
    }
}

/// A bound function.
pub(crate) enum BoundFn<G: Game> {
    Calc { f: CalcFn, captures: Vec<BoundCapture> },
    Exec { f: ExecFn, prepare: Option<PrepareFn>, captures: Vec<BoundCapture> },
    Req(RequirementFn<G>),
    Post(PostExecuteFn<G>),
    PostCtx(PostExecuteCtxFn<G>),
    Pre(PreChangeFn),
    Filter(ModFilterFn),
    Behaviour(Behaviour<G>),
    Check(CanActivateFn<G>),
}

/// Content's function references bound to registered functions, indexed by [`FnId`].
pub(crate) struct Bound<G: Game> {
    pub fns: Vec<BoundFn<G>>,
    pub signature: String,
    /// Custom task kinds, sorted by name (a kind is its index here).
    pub tasks: Vec<(String, crate::world::CustomTaskFn<G>)>,
}

impl<G: Game> Bound<G> {
    pub fn get(&self, id: FnId) -> Option<&BoundFn<G>> {
        self.fns.get(id.index())
    }

    /// A custom task kind's index by name.
    pub fn task_kind(&self, name: &str) -> Option<u16> {
        self.tasks.iter().position(|(n, _)| n == name).and_then(|i| u16::try_from(i).ok())
    }

    /// A custom task kind's tick function.
    pub fn task_fn(&self, kind: u16) -> Option<crate::world::CustomTaskFn<G>> {
        self.tasks.get(usize::from(kind)).map(|(_, f)| *f)
    }
}
