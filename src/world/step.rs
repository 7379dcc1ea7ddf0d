//! `World::step`: the frame schedule.

use super::output::FrameOutput;
use super::{Game, World};

/// A function a world runs inside every frame at a fixed point of its schedule (see
/// [`World::set_before_abilities`]).
pub(crate) type FrameHook<G> = Box<dyn FnMut(&mut World<G>) + Send + Sync>;

/// A player's input status in one frame, as the session delivers it: GGRS's `InputStatus`,
/// owned by this crate so that the simulation does not name a network type. Systems may branch
/// on `Disconnected`, never on `Predicted` versus `Confirmed` (see [`World::input_status`]).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum InputStatus {
    /// The player's real input.
    #[default]
    Confirmed,
    /// A prediction (GGRS repeats the last confirmed input); a rollback may correct it.
    Predicted,
    /// The player has left; the input is the default input.
    Disconnected,
}

impl From<ggrs::InputStatus> for InputStatus {
    fn from(s: ggrs::InputStatus) -> Self {
        match s {
            ggrs::InputStatus::Confirmed => InputStatus::Confirmed,
            ggrs::InputStatus::Predicted => InputStatus::Predicted,
            ggrs::InputStatus::Disconnected => InputStatus::Disconnected,
        }
    }
}

impl From<InputStatus> for ggrs::InputStatus {
    fn from(s: InputStatus) -> Self {
        match s {
            InputStatus::Confirmed => ggrs::InputStatus::Confirmed,
            InputStatus::Predicted => ggrs::InputStatus::Predicted,
            InputStatus::Disconnected => ggrs::InputStatus::Disconnected,
        }
    }
}

/// One frame's inputs, one per player, for [`World::step`] and [`World::step_with`].
///
/// Implemented for
/// - arrays, slices and vectors of plain inputs (every player `Confirmed`: local play, tests,
///   replays; `&[]` is a frame with every player's default input),
/// - slices and vectors of `(input, InputStatus)` pairs,
/// - slices and vectors of `(input, ggrs::InputStatus)` pairs, exactly as GGRS's
///   `AdvanceFrame` request delivers them, so a session steps the world with the request's
///   inputs as they are.
///
/// Players beyond the list get the default input, `Disconnected`; extra inputs are ignored.
pub trait FrameInputs<I> {
    /// How many players the list holds.
    fn players(&self) -> usize;
    /// Player `p`'s input and status (`p < players()`).
    fn input(&self, p: usize) -> (I, InputStatus);
}

macro_rules! frame_inputs {
    ($($ty:ty => $elem:ty, |$e:ident| $get:expr;)*) => {$(
        impl<I: Copy> FrameInputs<I> for $ty {
            fn players(&self) -> usize {
                self.len()
            }
            fn input(&self, p: usize) -> (I, InputStatus) {
                let $e: $elem = self[p];
                $get
            }
        }
    )*};
}

frame_inputs! {
    [I] => I, |e| (e, InputStatus::Confirmed);
    Vec<I> => I, |e| (e, InputStatus::Confirmed);
    [(I, InputStatus)] => (I, InputStatus), |e| e;
    Vec<(I, InputStatus)> => (I, InputStatus), |e| e;
    [(I, ggrs::InputStatus)] => (I, ggrs::InputStatus), |e| (e.0, e.1.into());
    Vec<(I, ggrs::InputStatus)> => (I, ggrs::InputStatus), |e| (e.0, e.1.into());
}

impl<I: Copy, const N: usize> FrameInputs<I> for [I; N] {
    fn players(&self) -> usize {
        N
    }
    fn input(&self, p: usize) -> (I, InputStatus) {
        (self[p], InputStatus::Confirmed)
    }
}

impl<G: Game> World<G> {
    /// Advances one frame. `inputs` holds one input per player: plain inputs (all
    /// `Confirmed`), or inputs with their [`InputStatus`], or GGRS's `(input, status)` pairs as
    /// its `AdvanceFrame` request delivers them ([`FrameInputs`]). Missing inputs are the
    /// default input; extra inputs are ignored. Never fails, never panics.
    ///
    /// ```
    /// # use rollback_abilities::{Content, Game, Hooks, InputStatus, World, WorldConfig};
    /// # struct G; impl Game for G { type Input = u8; type Component = (); type Global = (); }
    /// # let content = std::sync::Arc::new(Content::from_ron_str("()")?);
    /// let mut world = World::<G>::new(content, &Hooks::new(), WorldConfig::default()).unwrap();
    /// world.step(&[0, 0]);
    /// world.step(&vec![(1, InputStatus::Confirmed), (0, InputStatus::Predicted)]);
    /// assert_eq!(world.input_status(1), InputStatus::Predicted);
    /// assert_eq!(world.next_frame(), 2);
    /// # Ok::<(), rollback_abilities::ContentError>(())
    /// ```
    pub fn step<F: FrameInputs<G::Input> + ?Sized>(&mut self, inputs: &F) -> &FrameOutput {
        self.step_inner(inputs, |_| {})
    }

    /// Advances one frame and runs `script` in phase P6 right after [`Game::systems`].
    ///
    /// The script is not part of the snapshot: it must be a deterministic function of the
    /// world (typically of [`World::frame`]) so that re-simulating a frame after a rollback runs
    /// it identically. Scenario runners and tests use it to act "in frame f".
    ///
    /// ```
    /// # use rollback_abilities::{Content, Game, Hooks, World, WorldConfig};
    /// # struct G; impl Game for G { type Input = u8; type Component = (); type Global = (); }
    /// # let content = std::sync::Arc::new(Content::from_ron_str("(tags: [\"State.Dead\"])")?);
    /// # let mut world = World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
    /// let hero = world.spawn_actor(&[]).unwrap();
    /// let dead = content.tag("State.Dead")?;
    /// for _ in 0..10 {
    ///     world.step_with(&[0, 0], |w| {
    ///         if w.frame() == 5 {
    ///             w.add_loose_tag(hero, dead);
    ///         }
    ///     });
    /// }
    /// assert!(world.has_tag(hero, dead));
    /// # Ok::<(), rollback_abilities::ContentError>(())
    /// ```
    pub fn step_with<F: FrameInputs<G::Input> + ?Sized>(
        &mut self,
        inputs: &F,
        script: impl FnOnce(&mut World<G>),
    ) -> &FrameOutput {
        self.step_inner(inputs, script)
    }

    /// Sets the function the world runs inside every frame, after phase P2 (expiry) and
    /// before phase P4 (abilities), replacing any previous one: what it changes (a tag
    /// removed, an effect applied, an ability granted) is seen by the abilities that activate
    /// in the same frame, which a script of [`World::step_with`] (phase P6) is too late for.
    ///
    /// The hook is part of the step, so every way of stepping runs it — [`World::step`],
    /// rollback re-simulation, GGRS sessions, replays — but it is not part of the snapshot: it
    /// must be a deterministic function of the world (typically of [`World::frame`]), exactly
    /// like a [`World::step_with`] script. The scenario runner installs the operations of
    /// phase `BeforeAbilities` here. A hook that sets another hook while it runs is replaced
    /// by it after this frame's call.
    ///
    /// ```
    /// # use rollback_abilities::{AbilityInput, Content, Game, Hooks, World, WorldConfig};
    /// # struct G;
    /// # impl Game for G {
    /// #     type Input = u8; type Component = (); type Global = ();
    /// #     fn ability_input(i: &u8) -> AbilityInput {
    /// #         AbilityInput { held: u32::from(*i), ..AbilityInput::default() }
    /// #     }
    /// # }
    /// let content = std::sync::Arc::new(Content::from_ron_str(
    ///     r#"(tags: ["State.Silenced"],
    ///         abilities: { "Bolt": (input: 0, activation_blocked_tags: ["State.Silenced"]) })"#,
    /// )?);
    /// let mut world = World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
    /// let hero = world.spawn_actor(&[]).unwrap();
    /// let bolt = world.grant_ability(hero, content.ability("Bolt")?, 1).unwrap();
    /// let silenced = content.tag("State.Silenced")?;
    /// world.add_loose_tag(hero, silenced);
    /// // In frame 3, the silence is lifted before the abilities run: an activation attempt in
    /// // the same frame (here a press of input 0) succeeds.
    /// world.set_before_abilities(move |w| {
    ///     if w.frame() == 3 {
    ///         w.remove_loose_tag(hero, silenced);
    ///     }
    /// });
    /// world.bind_player(0, hero);
    /// for f in 0..4 {
    ///     world.step(&[u8::from(f == 3), 0]);
    /// }
    /// assert!(world.is_ability_active(bolt));
    /// # Ok::<(), rollback_abilities::ContentError>(())
    /// ```
    pub fn set_before_abilities(
        &mut self,
        hook: impl FnMut(&mut World<G>) + Send + Sync + 'static,
    ) {
        self.before_abilities = Some(Box::new(hook));
    }

    /// Removes the function set by [`World::set_before_abilities`].
    pub fn clear_before_abilities(&mut self) {
        self.before_abilities = None;
    }

    /// Whether a [`World::set_before_abilities`] function is set.
    pub fn has_before_abilities(&self) -> bool {
        self.before_abilities.is_some()
    }

    fn step_inner<F: FrameInputs<G::Input> + ?Sized>(
        &mut self,
        inputs: &F,
        script: impl FnOnce(&mut World<G>),
    ) -> &FrameOutput {
        let n = inputs.players();
        let frame = self.state.header.frame;
        self.out.clear(frame);
        self.scratch.cursors = super::cascade::Cursors::default();
        self.in_step = true;
        self.scratch.processed = 0;

        // P0 Input: store inputs, keep the previous frame's for edges.
        for p in 0..self.state.inputs.len() {
            let (i, s) = if p < n {
                inputs.input(p)
            } else {
                (G::Input::default(), InputStatus::Disconnected)
            };
            self.state.prev_inputs[p] = self.state.inputs[p];
            self.state.inputs[p] = i;
            self.input_status[p] = s;
        }

        // Per-entity clocks (hitstop, time scale): which are held this frame.
        self.run_clocks(frame);

        // P1 Periodic executions, P2 expiry.
        self.run_periodic(frame);
        self.drain();
        self.run_expiry(frame);
        self.drain();

        // The world's before-abilities hook (mutations made here run at once, and the
        // abilities of this frame see them).
        if let Some(mut hook) = self.before_abilities.take() {
            hook(self);
            self.drain();
            // Unless the hook installed another one, it stays.
            if self.before_abilities.is_none() {
                self.before_abilities = Some(hook);
            }
        }

        // P3 Events: gameplay events are delivered through the work queue as they are sent,
        // so nothing waits here between frames. P4 Abilities: input edges, in player order.
        self.run_inputs();
        self.drain();

        // P5 Tasks.
        self.run_tasks(frame);
        self.drain();

        // P6 User systems (mutations made here run at once, in call order).
        G::systems(self);
        self.drain();
        script(self);
        self.drain();
        // Hit, hurt and push boxes (`src/world/boxes.rs`).
        self.resolve_boxes();

        // P7 Apply: effects queued for after the systems (two-phase application).
        let mut queued = core::mem::take(&mut self.scratch.queued);
        for (spec, target) in queued.drain(..) {
            self.queue_apply(spec, target);
        }
        self.scratch.queued = queued;
        self.drain();

        // P8 Output. Specs and target lists made beyond their inline room this frame expire.
        self.end_spill();
        self.in_step = false;
        self.state.header.frame = frame.saturating_add(1).min(crate::num::NEVER - 1);
        &self.out
    }
}
