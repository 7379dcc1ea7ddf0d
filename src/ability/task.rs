//! Ability tasks (F-AT): latent actions as state machines in a snapshot pool.
//!
//! A task belongs to one activation of one ability. It is ticked once per frame in phase P5
//! (no time delta: frames are the clock) or woken by what it waits for (a tag, an event, an
//! effect, an input edge), and reports [`TaskResult`]s to the ability's `on_task`. Ending an
//! ability ends its tasks; a task whose ability activation is over never reports again. The
//! pool's capacity is [`WorldConfig::max_tasks`](crate::WorldConfig); spawning into a full pool
//! is an explicit [`ActivationFailure::TaskCapacity`](super::ActivationFailure), never a hidden
//! global cap (G-32).

use super::{EventData, InputEdge, TargetData};
use crate::id::{AbilityHandle, AttrId, CurveId, EffectHandle, Entity, TagId, TaskHandle};
use crate::num::{Frame, Fx};
use bytemuck::{Pod, Zeroable};

/// A registered custom task kind (its index among the registered kinds, sorted by name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct CustomTaskKind(pub u16);
/// A comparison for [`TaskSpec::WaitAttribute`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AttrCmp {
    /// `value < threshold`
    Lt,
    /// `value <= threshold`
    Le,
    /// `value > threshold`
    Gt,
    /// `value >= threshold`
    Ge,
    /// `value == threshold`
    Eq,
}

impl AttrCmp {
    pub(crate) fn test(self, v: Fx, t: Fx) -> bool {
        match self {
            AttrCmp::Lt => v < t,
            AttrCmp::Le => v <= t,
            AttrCmp::Gt => v > t,
            AttrCmp::Ge => v >= t,
            AttrCmp::Eq => v == t,
        }
    }

    fn code(self) -> u32 {
        match self {
            AttrCmp::Lt => 0,
            AttrCmp::Le => 1,
            AttrCmp::Gt => 2,
            AttrCmp::Ge => 3,
            AttrCmp::Eq => 4,
        }
    }

    pub(crate) fn from_code(c: u32) -> AttrCmp {
        match c {
            0 => AttrCmp::Lt,
            1 => AttrCmp::Le,
            2 => AttrCmp::Gt,
            3 => AttrCmp::Ge,
            _ => AttrCmp::Eq,
        }
    }
}

/// How target data is confirmed (F-TGT-02).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Confirmation {
    /// Query at once and report.
    Instant,
    /// Wait for the confirm input, then query; the cancel input cancels.
    UserConfirmed,
    /// Report a new query at every confirm until the cancel input.
    CustomMulti,
}

/// What a targeting task asks the game's spatial query for (F-TGT-02, F-TGT-03).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct TargetQuery {
    /// Reach (game units).
    pub range: Fx,
    /// Radius of the shape (game units; 0 for a line).
    pub radius: Fx,
    /// A game-defined shape id.
    pub shape: u16,
    /// A required tag on targets (`u16::MAX`: none).
    pub require_tag: u16,
    /// The most targets.
    pub max_targets: u8,
    /// Exclude the owner and its avatar.
    pub exclude_self: u8,
    /// Keep the last valid target when a query finds nothing.
    pub persistent: u8,
    _pad: u8,
    /// A game-defined filter id.
    pub filter: u32,
    _reserved: u32,
}

impl TargetQuery {
    /// A query with a range and radius, excluding self, at most `max_targets` targets.
    pub fn new(range: Fx, radius: Fx, max_targets: u8) -> TargetQuery {
        TargetQuery {
            range,
            radius,
            shape: 0,
            require_tag: u16::MAX,
            max_targets,
            exclude_self: 1,
            persistent: 0,
            _pad: 0,
            filter: 0,
            _reserved: 0,
        }
    }

    /// Builder: only targets carrying `tag`.
    #[must_use]
    pub fn requiring(mut self, tag: TagId) -> TargetQuery {
        self.require_tag = tag.0;
        self
    }

    /// Builder: keep the last valid target when a query finds nothing.
    #[must_use]
    pub fn persistent(mut self) -> TargetQuery {
        self.persistent = 1;
        self
    }

    /// Builder: a game-defined shape and filter.
    #[must_use]
    pub fn shaped(mut self, shape: u16, filter: u32) -> TargetQuery {
        self.shape = shape;
        self.filter = filter;
        self
    }
}

/// A task to spawn (F-AT-02).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskSpec {
    /// Finishes after this many frames.
    WaitFrames(u32),
    /// Ticks every `every` frames, `count` times (0: until ended); then finishes.
    Repeat {
        /// How many ticks (0: unlimited).
        count: u32,
        /// Frames between ticks (at least 1).
        every: u32,
    },
    /// Reports gameplay events sent to the owner whose tag matches (hierarchically).
    WaitEvent {
        /// The tag.
        tag: TagId,
        /// Finish after the first.
        once: bool,
    },
    /// Reports when the owner has the tag (at once if it already does).
    WaitTagAdded(TagId),
    /// Reports when the owner lacks the tag (at once if it already does).
    WaitTagRemoved(TagId),
    /// Reports when "the owner has `all` (if set) and not `none` (if set)" becomes `when`.
    WaitTagQuery {
        /// A tag the owner must have (`None`: no requirement).
        all: Option<TagId>,
        /// A tag the owner must not have (`None`: no requirement).
        none: Option<TagId>,
        /// The outcome to wait for.
        when: bool,
    },
    /// Reports when the owner's attribute satisfies a comparison (at once if it already does).
    WaitAttribute {
        /// The attribute.
        attr: AttrId,
        /// The comparison.
        cmp: AttrCmp,
        /// The threshold.
        value: Fx,
    },
    /// Reports the next press or release of the ability's bound input.
    WaitInput(InputEdge),
    /// Reports the next confirm or cancel input (consumed before abilities see the inputs).
    WaitConfirmCancel,
    /// Reports effects added to the owner that own the tag (any effect with `None`).
    WaitEffectAdded(Option<TagId>),
    /// Reports when an effect is removed.
    WaitEffectRemoved(EffectHandle),
    /// Reports stack changes of an effect.
    WaitStackChange(EffectHandle),
    /// Reports executions lowering the owner's attribute (damage).
    WaitDamage {
        /// The attribute (for example Health).
        attr: AttrId,
        /// Finish after the first.
        once: bool,
    },
    /// Plays a move timeline: notify events, phase and cancel-window tags, then finishes.
    PlayTimeline {
        /// The timeline.
        timeline: crate::id::TimelineId,
        /// Playback rate (1 = one timeline frame per frame).
        rate: Fx,
    },
    /// Produces target data from the game's spatial query using the owner's quantised aim.
    WaitTargetData {
        /// Confirmation mode.
        confirmation: Confirmation,
        /// The query.
        query: TargetQuery,
    },
    /// Moves the avatar along a curve (frame → distance) in a direction, through the game's
    /// root-motion hook.
    RootMotion {
        /// The curve (levels are frames from the start).
        curve: CurveId,
        /// How many frames.
        frames: u32,
        /// The direction (scaled by the curve's distance deltas).
        dir: [Fx; 2],
    },
    /// A task kind of the game's own (F-AT-06): its tick function, registered with
    /// [`Hooks::task_kind`](crate::Hooks::task_kind), runs in phase P5 of every frame its
    /// owner's clock runs after the spawn frame, with the task's state (four words and a
    /// number, kept in the snapshot) in a [`TaskCtx`](crate::TaskCtx).
    Custom {
        /// The kind ([`World::task_kind`](crate::World::task_kind) looks it up by name).
        kind: CustomTaskKind,
        /// The initial state words.
        words: [u32; 4],
        /// The initial state number.
        value: Fx,
    },
}

/// What a task reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum TaskEvent {
    /// The task finished (wait over, repeat done, root motion done).
    Finished,
    /// A repeat tick (1-based).
    Tick(u32),
    /// A gameplay event.
    Event(EventData),
    /// The awaited tag state was reached (`true`: present).
    Tag(bool),
    /// The awaited query outcome was reached.
    Query(bool),
    /// The attribute satisfied the comparison with this value.
    Attribute(Fx),
    /// An input edge.
    Input(InputEdge),
    /// The confirm input.
    Confirmed,
    /// The cancel input.
    Cancelled,
    /// An effect was added.
    EffectAdded(EffectHandle),
    /// An effect was removed.
    EffectRemoved(EffectHandle),
    /// A stack count changed.
    StackChanged {
        /// Before.
        old: u16,
        /// After.
        new: u16,
    },
    /// Damage: the attribute's base went down by `amount`.
    Damaged {
        /// How much.
        amount: Fx,
        /// Who caused it.
        instigator: Entity,
    },
    /// A timeline notify.
    Notify(TagId),
    /// The timeline completed.
    TimelineEnded,
    /// Target data was produced.
    TargetData(TargetData),
    /// Targeting was cancelled.
    TargetCancelled,
    /// A custom task's report (F-AT-06): a code and a number of the task's choosing.
    Custom {
        /// What happened (the task kind's own numbering).
        code: u32,
        /// A number that goes with it.
        value: Fx,
    },
}

/// A task's report, delivered to the ability's `on_task`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TaskResult {
    /// The task.
    pub task: TaskHandle,
    /// The id the behaviour gave the task when spawning it.
    pub user_id: u16,
    /// What happened.
    pub event: TaskEvent,
}

/// Task kinds as stored.
pub(crate) mod kind {
    pub const WAIT_FRAMES: u16 = 1;
    pub const REPEAT: u16 = 2;
    pub const WAIT_EVENT: u16 = 3;
    pub const WAIT_TAG_ADDED: u16 = 4;
    pub const WAIT_TAG_REMOVED: u16 = 5;
    pub const WAIT_TAG_QUERY: u16 = 6;
    pub const WAIT_ATTRIBUTE: u16 = 7;
    pub const WAIT_INPUT: u16 = 8;
    pub const WAIT_CONFIRM_CANCEL: u16 = 9;
    pub const WAIT_EFFECT_ADDED: u16 = 10;
    pub const WAIT_EFFECT_REMOVED: u16 = 11;
    pub const WAIT_STACK_CHANGE: u16 = 12;
    pub const WAIT_DAMAGE: u16 = 13;
    pub const PLAY_TIMELINE: u16 = 14;
    pub const WAIT_TARGET_DATA: u16 = 15;
    pub const ROOT_MOTION: u16 = 16;
    /// A game-registered kind (the registered kind's index is in `attr`).
    pub const CUSTOM: u16 = 17;

    /// How many kinds the per-kind live counts distinguish (a power of two above every kind).
    pub const SLOTS: usize = 32;

    /// A kind's slot in the per-kind live counts.
    #[inline]
    pub fn slot(kind: u16) -> usize {
        usize::from(kind) & (SLOTS - 1)
    }
}

/// How a targeting task confirms, as stored in its record's `a` ([`Confirmation`]).
pub(crate) mod confirm {
    pub const INSTANT: u32 = 0;
    pub const USER_CONFIRMED: u32 = 1;
    pub const CUSTOM_MULTI: u32 = 2;
}

/// Task flags as stored.
pub(crate) mod tflags {
    pub const LIVE: u16 = 1;
    pub const ONCE: u16 = 2;
    pub const WHEN: u16 = 4;
    pub const RELEASED: u16 = 8;
}

/// A task as stored in the snapshot pool.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct TaskRec {
    /// Kind-specific number (threshold, rate, position).
    pub value: Fx,
    /// Kind-specific direction.
    pub dir: [Fx; 2],
    /// Targeting query (targeting tasks).
    pub query: TargetQuery,
    /// The owner of the ability.
    pub owner: Entity,
    /// Another entity (the target of a watched effect).
    pub other: Entity,
    /// The slot's generation.
    pub generation: u32,
    /// The activation the task belongs to.
    pub activation_serial: u32,
    /// The frame it was spawned.
    pub started: Frame,
    /// Kind-specific numbers.
    pub a: u32,
    /// Kind-specific numbers.
    pub b: u32,
    /// Kind-specific numbers.
    pub c: u32,
    /// Progress counter.
    pub counter: u32,
    /// Free-list link.
    pub next_free: u32,
    /// The kind.
    pub kind: u16,
    /// The ability's spec slot.
    pub ability_slot: u16,
    /// The ability's slot generation.
    pub ability_generation: u16,
    /// The behaviour's id for the task.
    pub user_id: u16,
    /// A tag.
    pub tag: u16,
    /// An attribute.
    pub attr: u16,
    /// Flags.
    pub flags: u16,
    /// A second tag.
    pub tag2: u16,
}

impl TaskRec {
    /// Whether the slot holds a live task.
    pub fn is_live(&self) -> bool {
        self.flags & tflags::LIVE != 0
    }

    /// The ability the task belongs to.
    pub fn ability(&self) -> AbilityHandle {
        AbilityHandle {
            owner: self.owner,
            slot: self.ability_slot,
            generation: self.ability_generation,
        }
    }

    /// Encodes a spec into the record's fields.
    pub(crate) fn encode(spec: &TaskSpec) -> TaskRec {
        let mut r = TaskRec::zeroed();
        r.tag = u16::MAX;
        r.tag2 = u16::MAX;
        match *spec {
            TaskSpec::WaitFrames(n) => {
                r.kind = kind::WAIT_FRAMES;
                r.a = n;
            }
            TaskSpec::Repeat { count, every } => {
                r.kind = kind::REPEAT;
                r.a = count;
                r.b = every.max(1);
            }
            TaskSpec::WaitEvent { tag, once } => {
                r.kind = kind::WAIT_EVENT;
                r.tag = tag.0;
                if once {
                    r.flags |= tflags::ONCE;
                }
            }
            TaskSpec::WaitTagAdded(t) => {
                r.kind = kind::WAIT_TAG_ADDED;
                r.tag = t.0;
                r.flags |= tflags::ONCE;
            }
            TaskSpec::WaitTagRemoved(t) => {
                r.kind = kind::WAIT_TAG_REMOVED;
                r.tag = t.0;
                r.flags |= tflags::ONCE;
            }
            TaskSpec::WaitTagQuery { all, none, when } => {
                r.kind = kind::WAIT_TAG_QUERY;
                r.tag = all.map(|t| t.0).unwrap_or(u16::MAX);
                r.tag2 = none.map(|t| t.0).unwrap_or(u16::MAX);
                r.flags |= tflags::ONCE;
                if when {
                    r.flags |= tflags::WHEN;
                }
            }
            TaskSpec::WaitAttribute { attr, cmp, value } => {
                r.kind = kind::WAIT_ATTRIBUTE;
                r.attr = attr.0;
                r.a = cmp.code();
                r.value = value;
                r.flags |= tflags::ONCE;
            }
            TaskSpec::WaitInput(edge) => {
                r.kind = kind::WAIT_INPUT;
                r.flags |= tflags::ONCE;
                if edge == InputEdge::Released {
                    r.flags |= tflags::RELEASED;
                }
            }
            TaskSpec::WaitConfirmCancel => {
                r.kind = kind::WAIT_CONFIRM_CANCEL;
                r.flags |= tflags::ONCE;
            }
            TaskSpec::WaitEffectAdded(tag) => {
                r.kind = kind::WAIT_EFFECT_ADDED;
                r.tag = tag.map(|t| t.0).unwrap_or(u16::MAX);
                r.flags |= tflags::ONCE;
            }
            TaskSpec::WaitEffectRemoved(h) => {
                r.kind = kind::WAIT_EFFECT_REMOVED;
                r.other = h.target;
                r.a = h.seq;
                r.flags |= tflags::ONCE;
            }
            TaskSpec::WaitStackChange(h) => {
                r.kind = kind::WAIT_STACK_CHANGE;
                r.other = h.target;
                r.a = h.seq;
            }
            TaskSpec::WaitDamage { attr, once } => {
                r.kind = kind::WAIT_DAMAGE;
                r.attr = attr.0;
                if once {
                    r.flags |= tflags::ONCE;
                }
            }
            TaskSpec::PlayTimeline { timeline, rate } => {
                r.kind = kind::PLAY_TIMELINE;
                r.a = u32::from(timeline.0);
                r.dir[0] = if rate > Fx::ZERO { rate } else { Fx::ONE };
            }
            TaskSpec::WaitTargetData { confirmation, query } => {
                r.kind = kind::WAIT_TARGET_DATA;
                r.a = match confirmation {
                    Confirmation::Instant => confirm::INSTANT,
                    Confirmation::UserConfirmed => confirm::USER_CONFIRMED,
                    Confirmation::CustomMulti => confirm::CUSTOM_MULTI,
                };
                r.query = query;
            }
            TaskSpec::RootMotion { curve, frames, dir } => {
                r.kind = kind::ROOT_MOTION;
                r.a = u32::from(curve.0);
                r.b = frames;
                r.dir = dir;
            }
            TaskSpec::Custom { kind: k, words, value } => {
                r.kind = kind::CUSTOM;
                r.attr = k.0;
                [r.a, r.b, r.c, r.counter] = words;
                r.value = value;
            }
        }
        r
    }
}

/// Whether event data's tag matches a task's tag hierarchically.
pub(crate) fn event_matches(reg: &crate::tag::TagRegistry, data: &EventData, tag: u16) -> bool {
    tag == u16::MAX || reg.is_descendant_or_self(data.tag, TagId(tag))
}

/// Per-owner lists of live task slots, in ascending slot order: a lookup structure derived
/// from the task pool, so the listeners visit an entity's few tasks instead of scanning the
/// whole pool for every event (which made a frame quadratic in the number of entities).
///
/// It is not part of the snapshot: it is a pure function of the pool (which slots are live and
/// their owners' entity indices), kept up to date by `spawn_task` and `free_task` (the only
/// places that change either) and rebuilt after every snapshot load. Its lists hold slots in
/// the order the old full scans visited them, so behaviour and checksums are unchanged.
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskIndex {
    /// Whether the lists match the pool (false after a load until the next rebuild).
    pub valid: bool,
    /// Per entity index: the first task slot of its list (`u32::MAX`: none).
    pub head: Vec<u32>,
    /// Per task slot: the next slot of the same owner (`u32::MAX`: the end).
    pub next: Vec<u32>,
    /// Live tasks that watch an effect (`WaitEffectRemoved`, `WaitStackChange`).
    pub effect_watchers: u32,
    /// Live tasks of each kind ([`kind::slot`]), so a record type nobody waits for skips the walk.
    pub by_kind: [u32; kind::SLOTS],
    /// One bit per task slot: a live task that phase P5 ticks (waits for frames, repeats,
    /// timelines, root motion). P5 visits these bits in slot order instead of reading every
    /// 120-byte record of the pool.
    pub ticked: Vec<u64>,
    /// Per task slot with a `ticked` bit: a frame before which P5's tick cannot do anything
    /// ([`TaskIndex::due_frame`] of the record), so a repeat between its beats or a wait
    /// short of its end is skipped from this dense column without reading its record.
    pub due: Vec<u32>,
}

impl TaskIndex {
    /// An index for `entities` entity slots and `tasks` task slots (to be rebuilt).
    pub fn new(entities: usize, tasks: usize) -> TaskIndex {
        TaskIndex {
            valid: false,
            head: vec![u32::MAX; entities],
            next: vec![u32::MAX; tasks],
            effect_watchers: 0,
            by_kind: [0; kind::SLOTS],
            ticked: vec![0; tasks.div_ceil(64)],
            due: vec![0; tasks],
        }
    }

    /// Whether P5's tick of `t` would change anything at `frame` (most ticks of a wait or a
    /// repeat between its beats do not, and skip the work item).
    pub fn tick_does_something(t: &TaskRec, frame: Frame) -> bool {
        let elapsed = frame.saturating_sub(t.started);
        match t.kind {
            kind::WAIT_FRAMES => elapsed >= t.a,
            kind::REPEAT => elapsed >= t.b.saturating_mul(t.counter.saturating_add(1)),
            kind::PLAY_TIMELINE | kind::ROOT_MOTION | kind::CUSTOM => elapsed != 0,
            _ => false,
        }
    }

    /// The first frame at which P5's tick of `t` can do something: a lower bound of the frames
    /// where `elapsed = frame.saturating_sub(started)` meets the kind's condition (a wait's
    /// length, a repeat's next beat, any frame after the start for timelines and root motion),
    /// so frames before it skip the task; frames at or after it still check the record.
    pub fn due_frame(t: &TaskRec) -> u32 {
        // `elapsed >= n` holds at every frame when `n == 0`, else from `started + n` on.
        let after = |n: u32| if n == 0 { 0 } else { t.started.saturating_add(n) };
        match t.kind {
            kind::WAIT_FRAMES => after(t.a),
            kind::REPEAT => after(t.b.saturating_mul(t.counter.saturating_add(1))),
            kind::PLAY_TIMELINE | kind::ROOT_MOTION | kind::CUSTOM => after(1),
            _ => u32::MAX,
        }
    }

    /// Refreshes a slot's due frame from its record (after a tick changed its counter).
    pub fn refresh_due(&mut self, slot: usize, t: &TaskRec) {
        if let Some(d) = self.due.get_mut(slot) {
            *d = Self::due_frame(t);
        }
    }

    /// Whether phase P5 ticks tasks of this kind.
    pub fn is_ticked(k: u16) -> bool {
        matches!(
            k,
            kind::WAIT_FRAMES
                | kind::REPEAT
                | kind::PLAY_TIMELINE
                | kind::ROOT_MOTION
                | kind::CUSTOM
        )
    }

    fn set_ticked(&mut self, slot: usize, on: bool) {
        if let Some(w) = self.ticked.get_mut(slot / 64) {
            let bit = 1u64 << (slot % 64);
            if on {
                *w |= bit;
            } else {
                *w &= !bit;
            }
        }
    }

    /// The lowest slot at or after `from` and below `end` whose task P5 ticks, reading the
    /// bits as they are now (tasks spawned or freed by earlier ticks count as a pool scan
    /// would see them).
    pub fn next_ticked(&self, from: usize, end: usize) -> Option<usize> {
        let mut wi = from / 64;
        let mut word = self.ticked.get(wi)? & (u64::MAX << (from % 64));
        loop {
            if word != 0 {
                let slot = wi * 64 + word.trailing_zeros() as usize;
                return (slot < end).then_some(slot);
            }
            wi += 1;
            if wi * 64 >= end {
                return None;
            }
            word = *self.ticked.get(wi)?;
        }
    }

    fn watches_effect(t: &TaskRec) -> bool {
        matches!(t.kind, kind::WAIT_EFFECT_REMOVED | kind::WAIT_STACK_CHANGE)
    }

    /// Rebuilds the lists from the pool's first `high_water` slots (no allocation).
    pub fn rebuild(&mut self, tasks: &[TaskRec], high_water: usize) {
        self.head.iter_mut().for_each(|h| *h = u32::MAX);
        self.next.iter_mut().for_each(|n| *n = u32::MAX);
        self.effect_watchers = 0;
        self.by_kind = [0; kind::SLOTS];
        self.ticked.iter_mut().for_each(|w| *w = 0);
        // Pushing to the front in descending slot order leaves every list ascending.
        for slot in (0..high_water.min(tasks.len()).min(self.next.len())).rev() {
            let t = &tasks[slot];
            if !t.is_live() {
                continue;
            }
            self.effect_watchers += u32::from(Self::watches_effect(t));
            self.by_kind[kind::slot(t.kind)] += 1;
            if Self::is_ticked(t.kind) {
                self.set_ticked(slot, true);
                self.refresh_due(slot, t);
            }
            if let Some(h) = self.head.get_mut(t.owner.index as usize) {
                self.next[slot] = *h;
                *h = slot as u32;
            }
        }
        self.valid = true;
    }

    /// Adds a newly live slot to its owner's list, keeping the list ascending.
    pub fn insert(&mut self, slot: usize, t: &TaskRec) {
        if !self.valid || slot >= self.next.len() {
            return;
        }
        self.effect_watchers += u32::from(Self::watches_effect(t));
        self.by_kind[kind::slot(t.kind)] += 1;
        if Self::is_ticked(t.kind) {
            self.set_ticked(slot, true);
            self.refresh_due(slot, t);
        }
        let Some(&first) = self.head.get(t.owner.index as usize) else { return };
        let s = slot as u32;
        if first == u32::MAX || first > s {
            self.next[slot] = first;
            self.head[t.owner.index as usize] = s;
            return;
        }
        let mut at = first;
        // Strictly ascending links, so this ends.
        loop {
            let n = self.next[at as usize];
            if n == u32::MAX || n > s {
                self.next[slot] = n;
                self.next[at as usize] = s;
                return;
            }
            if n <= at {
                return;
            }
            at = n;
        }
    }

    /// Removes a slot (about to be freed) from its owner's list.
    pub fn remove(&mut self, slot: usize, t: &TaskRec) {
        if !self.valid || slot >= self.next.len() {
            return;
        }
        self.effect_watchers =
            self.effect_watchers.saturating_sub(u32::from(Self::watches_effect(t)));
        let k = &mut self.by_kind[kind::slot(t.kind)];
        *k = k.saturating_sub(1);
        self.set_ticked(slot, false);
        let Some(&first) = self.head.get(t.owner.index as usize) else { return };
        let s = slot as u32;
        if first == s {
            self.head[t.owner.index as usize] = self.next[slot];
            self.next[slot] = u32::MAX;
            return;
        }
        let mut at = first;
        while at != u32::MAX {
            let n = self.next[at as usize];
            if n == s {
                self.next[at as usize] = self.next[slot];
                self.next[slot] = u32::MAX;
                return;
            }
            if n <= at {
                return;
            }
            at = n;
        }
    }

    /// The first slot of an entity index's list (`u32::MAX`: none).
    #[inline]
    pub fn first(&self, owner_index: u32) -> u32 {
        self.head.get(owner_index as usize).copied().unwrap_or(u32::MAX)
    }

    /// The slot after `slot` in its list (`u32::MAX`: the end). Links only ascend.
    #[inline]
    pub fn after(&self, slot: u32) -> u32 {
        match self.next.get(slot as usize) {
            Some(&n) if n > slot => n,
            _ => u32::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(kind: u16, owner: u32) -> TaskRec {
        TaskRec {
            kind,
            flags: tflags::LIVE,
            owner: Entity { index: owner, generation: 1 },
            ..TaskRec::default()
        }
    }

    #[test]
    fn ticked_bits_follow_spawns_frees_and_rebuilds() {
        let mut pool = vec![TaskRec::default(); 200];
        pool[3] = live(kind::WAIT_FRAMES, 0);
        pool[64] = live(kind::WAIT_EVENT, 1);
        pool[70] = live(kind::REPEAT, 1);
        pool[130] = live(kind::PLAY_TIMELINE, 2);
        let mut ix = TaskIndex::new(4, pool.len());
        ix.rebuild(&pool, 150);
        let visit = |ix: &TaskIndex, end: usize| {
            let mut out = Vec::new();
            let mut from = 0;
            while let Some(s) = ix.next_ticked(from, end) {
                out.push(s);
                from = s + 1;
            }
            out
        };
        // Only ticked kinds, in slot order, below the end.
        assert_eq!(visit(&ix, 150), [3, 70, 130]);
        assert_eq!(visit(&ix, 130), [3, 70]);
        assert_eq!(ix.next_ticked(71, 150), Some(130));
        assert_eq!(ix.next_ticked(131, 150), None);
        assert_eq!(ix.next_ticked(500, 150), None);
        // A spawn and a free keep the bits right (a rebuild agrees).
        pool[5] = live(kind::ROOT_MOTION, 3);
        ix.insert(5, &pool[5]);
        ix.remove(70, &pool[70]);
        pool[70] = TaskRec::default();
        assert_eq!(visit(&ix, 150), [3, 5, 130]);
        let mut fresh = TaskIndex::new(4, pool.len());
        fresh.rebuild(&pool, 150);
        assert_eq!(fresh.ticked, ix.ticked);
        assert_eq!(fresh.by_kind, ix.by_kind);
        assert_eq!(fresh.due[5], ix.due[5]);
    }

    proptest::proptest! {
        /// The due column may only skip frames where the tick does nothing (it is a lower
        /// bound of the first frame that does something) and skips all of them below the
        /// saturation point: a tick happens at a frame exactly when the frame is at or after
        /// the due frame.
        #[test]
        fn due_frame_is_the_first_frame_a_tick_does_something(
            k in 0u16..4,
            started in proptest::prop_oneof![0u32..64, (u32::MAX - 64)..=u32::MAX],
            a in proptest::prop_oneof![0u32..8, (u32::MAX - 8)..=u32::MAX],
            b in proptest::prop_oneof![0u32..8, (u32::MAX / 2)..=u32::MAX],
            counter in proptest::prop_oneof![0u32..8, (u32::MAX - 8)..=u32::MAX],
            offset in 0u32..80,
        ) {
            let kind = [kind::WAIT_FRAMES, kind::REPEAT, kind::PLAY_TIMELINE, kind::ROOT_MOTION]
                [usize::from(k)];
            let t = TaskRec { kind, started, a, b, counter, ..live(kind, 0) };
            let due = TaskIndex::due_frame(&t);
            // Frames around the start and around the due frame, both ends of `u32`.
            for frame in [
                started.wrapping_add(offset),
                started.wrapping_sub(offset),
                due.wrapping_add(offset),
                due.wrapping_sub(offset),
                offset,
                u32::MAX - offset,
            ] {
                let does = TaskIndex::tick_does_something(&t, frame);
                if does {
                    proptest::prop_assert!(frame >= due, "{t:?} frame {frame} due {due}");
                }
                if due < u32::MAX && frame >= due {
                    proptest::prop_assert!(does, "{t:?} frame {frame} due {due}");
                }
            }
        }
    }
}
