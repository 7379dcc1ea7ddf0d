//! The plugin: resources, schedules and the systems that connect, drive, mirror and present.

use crate::asset::{ContentAsset, ContentLoader};
use crate::messages::{
    ContentReloaded, CueFx, CueMessage, CuePhase, DesyncDetected, MatchEnded, MatchStarted,
    SessionMessage, SyncTestMismatch, UiMessage,
};
use crate::session::{AbilitiesMatch, MatchSetup, PlayerHandle, Script};
use crate::spec::MatchSpec;
use crate::views::{SimData, SimEntity, SimGone, SimViews, ViewChange};
use bevy::app::{App, Plugin, PreUpdate};
use bevy::asset::{AssetApp, AssetEvent, AssetLoadFailedEvent, AssetServer, Assets, Handle};
use bevy::ecs::schedule::{ScheduleLabel, SystemSet};
use bevy::ecs::world::World as BevyWorld;
use bevy::prelude::{
    Commands, DetectChanges, DetectChangesMut, Entity, IntoScheduleConfigs, Local, MessageReader,
    MessageWriter, Real, Res, ResMut, Resource, Time,
};
use rollback_abilities::num::Frame;
use rollback_abilities::ui::EventFilter;
use rollback_abilities::{Content, Game, Hooks, World as GameWorld, WorldConfig};
use rollback_abilities::{CueKey, CueKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

/// The schedule run once before every simulated tick, where the app fills [`LocalInputs`] for
/// its [`LocalPlayers`] (bevy_ggrs's name and use).
#[derive(ScheduleLabel, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReadInputs;

/// The local players' inputs for the next tick, by handle: insert it in [`ReadInputs`]. A
/// local player without an input gets the default input.
#[derive(Resource)]
pub struct LocalInputs<G: Game>(pub BTreeMap<PlayerHandle, G::Input>);

impl<G: Game> Default for LocalInputs<G> {
    fn default() -> Self {
        LocalInputs(BTreeMap::new())
    }
}

/// The players whose inputs this app supplies (every player offline and in a sync test; the
/// `Local` ones in P2P; none for a spectator). Set when a match starts.
#[derive(Resource, Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalPlayers(pub Vec<PlayerHandle>);

/// Simulated frames per second (bevy_ggrs's name; default 60).
#[derive(Resource, Clone, Copy, Debug, PartialEq, Eq)]
pub struct RollbackFrameRate(pub usize);

impl Default for RollbackFrameRate {
    fn default() -> Self {
        RollbackFrameRate(60)
    }
}

/// During [`ReadInputs`]: the frame the inputs being read will apply to (the world's next
/// frame plus the input delay). Input that depends only on this frame (a script, a bot reading
/// confirmed state) is the same on every peer and in every run.
#[derive(Resource, Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputFrame(pub Frame);

/// The plugin's systems, in `PreUpdate`, chained: start a match, advance it, mirror it into
/// views, send the messages. Order your input systems before [`AbilitiesSystems::Drive`].
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AbilitiesSystems {
    /// Starts a match when a [`MatchSpec`] is inserted or changed.
    Connect,
    /// Advances the match by the ticks due ([`RollbackFrameRate`]).
    Drive,
    /// Spawns, refreshes and retires the view entities ([`SimEntity`]).
    Views,
    /// Writes the messages and spawns or despawns the cue effect entities ([`CueFx`]).
    Present,
}

type BuildWorld<G> = Arc<dyn Fn() -> Result<GameWorld<G>, String> + Send + Sync>;

/// How the plugin builds a match's world.
enum Source<G: Game> {
    /// From content, hooks, configuration and a setup function.
    Parts {
        content: Arc<Content>,
        hooks: fn() -> Hooks<G>,
        config: WorldConfig,
        setup: fn(&mut GameWorld<G>) -> Result<(), String>,
    },
    /// From a RON content file read when each match starts, with hooks, configuration and a
    /// setup function.
    File {
        path: PathBuf,
        hooks: fn() -> Hooks<G>,
        config: WorldConfig,
        setup: fn(&mut GameWorld<G>) -> Result<(), String>,
    },
    /// From a content asset (`ContentAsset`, loaded by the asset server from `path`), with
    /// hooks, configuration and a setup function.
    Asset {
        path: String,
        slot: ContentSlot,
        hooks: fn() -> Hooks<G>,
        config: WorldConfig,
        setup: fn(&mut GameWorld<G>) -> Result<(), String>,
    },
    /// From the game's own constructor.
    World(BuildWorld<G>),
}

/// The content asset's latest load: `None` until the first, then the content or why it failed.
type ContentSlot = Arc<Mutex<Option<Result<Arc<Content>, String>>>>;

fn lock_slot(slot: &ContentSlot) -> MutexGuard<'_, Option<Result<Arc<Content>, String>>> {
    slot.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A new world from `content`, the hooks, the configuration and the setup.
fn world_of<G: Game>(
    content: Arc<Content>,
    hooks: fn() -> Hooks<G>,
    config: WorldConfig,
    setup: fn(&mut GameWorld<G>) -> Result<(), String>,
) -> Result<GameWorld<G>, String> {
    let mut w = GameWorld::new(content, &hooks(), config).map_err(|e| e.to_string())?;
    setup(&mut w)?;
    Ok(w)
}

impl<G: Game> Source<G> {
    fn builder(&self) -> BuildWorld<G> {
        match self {
            Source::Parts { content, hooks, config, setup } => {
                let (content, hooks, config, setup) = (content.clone(), *hooks, *config, *setup);
                Arc::new(move || world_of(content.clone(), hooks, config, setup))
            }
            Source::Asset { slot, hooks, config, setup, .. } => {
                let (slot, hooks, config, setup) = (slot.clone(), *hooks, *config, *setup);
                Arc::new(move || {
                    let content = lock_slot(&slot).clone();
                    let content = content.ok_or("the content asset is not loaded yet")??;
                    world_of(content, hooks, config, setup)
                })
            }
            Source::File { path, hooks, config, setup } => {
                let (path, hooks, config, setup) = (path.clone(), *hooks, *config, *setup);
                Arc::new(move || world_of(Arc::new(read_content(&path)?), hooks, config, setup))
            }
            Source::World(build) => build.clone(),
        }
    }

    fn watched(&self) -> Option<PathBuf> {
        match self {
            Source::File { path, .. } => Some(path.clone()),
            Source::Parts { .. } | Source::Asset { .. } | Source::World(_) => None,
        }
    }

    fn asset(&self) -> Option<(String, ContentSlot)> {
        match self {
            Source::Asset { path, slot, .. } => Some((path.clone(), slot.clone())),
            Source::Parts { .. } | Source::File { .. } | Source::World(_) => None,
        }
    }
}

/// Reads and freezes a content file; errors name the file, line and column.
fn read_content(path: &Path) -> Result<Content, String> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("{name}: cannot read the content: {e}"))?;
    crate::asset::content_of(name, bytes).map_err(|e| e.0)
}

/// When a file was last modified (`None`: it cannot be read).
fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The content file a plugin made with [`AbilitiesPlugin::from_ron_file`] watches.
#[derive(Resource, Default)]
struct ContentWatch {
    path: Option<PathBuf>,
    /// The modification time of the content the running match was built from.
    loaded: Option<SystemTime>,
    /// A modification already reported (to a P2P match, which cannot apply it).
    refused: Option<SystemTime>,
    /// Whether a match was built (or tried) from the file: changes count from then on.
    armed: bool,
    countdown: u32,
}

/// Updates between two looks at the content file's modification time.
const WATCH_EVERY: u32 = 30;

/// The rollback abilities plugin, generic over the game (as bevy_ggrs's `GgrsPlugin` is over
/// its config). It builds the world, the session and the crate's
/// [`Runner`](rollback_abilities::session::Runner) when a [`MatchSpec`] is inserted, drives it
/// at [`RollbackFrameRate`], and tells the app what happened through messages.
pub struct AbilitiesPlugin<G: Game> {
    source: Source<G>,
    subscriptions: Vec<EventFilter>,
    record: Option<u32>,
    script: Option<Script<G>>,
    max_ticks_per_update: u32,
}

/// What the plugin keeps of its settings, for the systems.
#[derive(Resource)]
struct PluginSettings<G: Game> {
    build: BuildWorld<G>,
    /// The content asset's slot (a plugin made with `from_asset`): no match starts before the
    /// asset's first load.
    asset: Option<ContentSlot>,
    setup: MatchSetup<G>,
    max_ticks_per_update: u32,
}

/// Cue effect entities that may still change: played bursts not yet confirmed, shown
/// persistent cues.
#[derive(Resource, Default)]
struct CueFxEntities(BTreeMap<CueKey, Entity>);

impl<G: Game> AbilitiesPlugin<G> {
    /// A plugin whose matches start from `content`, with no hooks, the default world
    /// configuration and no setup (refine with [`AbilitiesPlugin::hooks`],
    /// [`AbilitiesPlugin::config`] and [`AbilitiesPlugin::setup`]).
    pub fn new(content: Arc<Content>) -> Self {
        Self::from_source(Source::Parts {
            content,
            hooks: Hooks::new,
            config: WorldConfig::default(),
            setup: |_| Ok(()),
        })
    }

    /// A plugin whose matches start from a RON content file, read when each match starts
    /// (refine with [`AbilitiesPlugin::hooks`], [`AbilitiesPlugin::config`] and
    /// [`AbilitiesPlugin::setup`]). An error in the file ends the match with a [`MatchEnded`]
    /// message naming `file:line:col`. The file is watched: when it changes, an offline match
    /// or a sync test restarts at frame 0 with the new content ([`ContentReloaded`] with
    /// `applied: true`); a P2P or spectator match keeps its content — the peers' handshake pins
    /// its hash — and is told so ([`ContentReloaded`] with `applied: false`); the change
    /// applies to the next match.
    pub fn from_ron_file(path: impl Into<PathBuf>) -> Self {
        Self::from_source(Source::File {
            path: path.into(),
            hooks: Hooks::new,
            config: WorldConfig::default(),
            setup: |_| Ok(()),
        })
    }

    /// A plugin whose matches start from a content asset: the RON file `path` in the app's
    /// asset folder, loaded by Bevy's asset server (add Bevy's `AssetPlugin`, as
    /// `DefaultPlugins` does, before this plugin) through [`ContentLoader`] (refine with
    /// [`AbilitiesPlugin::hooks`], [`AbilitiesPlugin::config`] and [`AbilitiesPlugin::setup`]).
    /// A match waits for the asset. An error in the file is logged by the asset server and
    /// sent as a [`MatchEnded`] message naming `file:line:col`. When the asset changes (Bevy's
    /// `file_watcher` feature, or `AssetServer::reload`), an offline match or a sync test
    /// restarts at frame 0 with the new content ([`ContentReloaded`] with `applied: true`; a
    /// broken edit ends it with the error, fixing it starts a new one); a P2P or spectator
    /// match keeps its content — the peers' handshake pins its hash — and is told so
    /// ([`ContentReloaded`] with `applied: false`); the change applies to the next match.
    ///
    /// [`ContentLoader`]: crate::ContentLoader
    pub fn from_asset(path: impl Into<String>) -> Self {
        Self::from_source(Source::Asset {
            path: path.into(),
            slot: ContentSlot::default(),
            hooks: Hooks::new,
            config: WorldConfig::default(),
            setup: |_| Ok(()),
        })
    }

    /// A plugin whose matches start from the world `build` returns (at frame 0, identical on
    /// every peer): for games that already have a world constructor.
    pub fn from_world(
        build: impl Fn() -> Result<GameWorld<G>, String> + Send + Sync + 'static,
    ) -> Self {
        Self::from_source(Source::World(Arc::new(build)))
    }

    fn from_source(source: Source<G>) -> Self {
        AbilitiesPlugin {
            source,
            subscriptions: Vec::new(),
            record: None,
            script: None,
            max_ticks_per_update: 8,
        }
    }

    /// The hooks (the functions the content names), as a constructor: `Hooks` is not `Clone`
    /// and every match builds its own. No effect on a plugin made with
    /// [`AbilitiesPlugin::from_world`].
    pub fn hooks(mut self, make: fn() -> Hooks<G>) -> Self {
        if let Source::Parts { hooks, .. }
        | Source::File { hooks, .. }
        | Source::Asset { hooks, .. } = &mut self.source
        {
            *hooks = make;
        }
        self
    }

    /// The world's configuration (players, capacities, seed). No effect on a plugin made with
    /// [`AbilitiesPlugin::from_world`].
    pub fn config(mut self, c: WorldConfig) -> Self {
        if let Source::Parts { config, .. }
        | Source::File { config, .. }
        | Source::Asset { config, .. } = &mut self.source
        {
            *config = c;
        }
        self
    }

    /// Run once on a new world before frame 0: spawn the fighters, bind the players, grant the
    /// abilities (identically on every peer). No effect on a plugin made with
    /// [`AbilitiesPlugin::from_world`].
    pub fn setup(mut self, f: fn(&mut GameWorld<G>) -> Result<(), String>) -> Self {
        if let Source::Parts { setup, .. }
        | Source::File { setup, .. }
        | Source::Asset { setup, .. } = &mut self.source
        {
            *setup = f;
        }
        self
    }

    /// Subscribes the UI to events ([`UiMessage`]s for the events `filter` accepts).
    pub fn subscribe(mut self, filter: EventFilter) -> Self {
        self.subscriptions.push(filter);
        self
    }

    /// Records confirmed inputs into a replay, with a keyframe every `keyframe_interval`
    /// frames (read it from [`AbilitiesMatch::runner`]).
    pub fn record(mut self, keyframe_interval: u32) -> Self {
        self.record = Some(keyframe_interval);
        self
    }

    /// A deterministic script run inside every simulated frame (see
    /// `rollback_abilities::World::step_with`).
    pub fn script(mut self, script: impl Fn(&mut GameWorld<G>) + Send + Sync + 'static) -> Self {
        self.script = Some(Arc::new(script));
        self
    }

    /// The most ticks one Bevy frame runs (default 8): after a long hitch the backlog is
    /// dropped rather than simulated all at once.
    pub fn max_ticks_per_update(mut self, ticks: u32) -> Self {
        self.max_ticks_per_update = ticks.max(1);
        self
    }
}

impl<G: Game> Plugin for AbilitiesPlugin<G> {
    fn build(&self, app: &mut App) {
        if let Some((path, slot)) = self.source.asset() {
            app.init_asset::<ContentAsset>()
                .register_asset_loader(ContentLoader)
                .insert_resource(ContentAssetState { path, slot, handle: None })
                .add_systems(
                    PreUpdate,
                    watch_asset::<G>.before(connect::<G>).in_set(AbilitiesSystems::Connect),
                );
        }
        app.insert_resource(PluginSettings::<G> {
            build: self.source.builder(),
            asset: self.source.asset().map(|(_, slot)| slot),
            setup: MatchSetup {
                subscriptions: self.subscriptions.clone(),
                record: self.record,
                script: self.script.clone(),
            },
            max_ticks_per_update: self.max_ticks_per_update,
        })
        .init_resource::<RollbackFrameRate>()
        .init_resource::<LocalPlayers>()
        .init_resource::<SimViews>()
        .init_resource::<CueFxEntities>()
        .insert_resource(ContentWatch { path: self.source.watched(), ..ContentWatch::default() })
        .init_schedule(ReadInputs)
        .add_message::<CueMessage>()
        .add_message::<UiMessage>()
        .add_message::<SessionMessage>()
        .add_message::<DesyncDetected>()
        .add_message::<SyncTestMismatch>()
        .add_message::<MatchStarted>()
        .add_message::<MatchEnded>()
        .add_message::<ContentReloaded>()
        .configure_sets(
            PreUpdate,
            (
                AbilitiesSystems::Connect,
                AbilitiesSystems::Drive,
                AbilitiesSystems::Views,
                AbilitiesSystems::Present,
            )
                .chain(),
        )
        .add_systems(
            PreUpdate,
            (
                (watch_content, connect::<G>).chain().in_set(AbilitiesSystems::Connect),
                drive::<G>.in_set(AbilitiesSystems::Drive),
                sync_views::<G>.in_set(AbilitiesSystems::Views),
                present::<G>.in_set(AbilitiesSystems::Present),
            ),
        );
    }
}

/// Starts a match when a [`MatchSpec`] appears or changes; ends it when the spec is removed.
fn connect<G: Game>(
    spec: Option<Res<MatchSpec>>,
    running: Option<Res<AbilitiesMatch<G>>>,
    settings: Res<PluginSettings<G>>,
    (mut views, mut fx, mut watch): (
        bevy::prelude::ResMut<SimViews>,
        bevy::prelude::ResMut<CueFxEntities>,
        bevy::prelude::ResMut<ContentWatch>,
    ),
    (mut commands, real): (Commands, Option<Res<Time<Real>>>),
    (mut started, mut ended): (MessageWriter<MatchStarted>, MessageWriter<MatchEnded>),
) {
    let Some(spec) = spec else {
        if running.is_some() {
            commands.remove_resource::<AbilitiesMatch<G>>();
            for e in views.clear() {
                commands.entity(e).despawn();
            }
        }
        return;
    };
    if !spec.is_changed() {
        return;
    }
    if settings.asset.as_ref().is_some_and(|slot| lock_slot(slot).is_none()) {
        // The content asset is not loaded yet: its first load starts the match.
        return;
    }
    // A new match: the old one's views and effect entities go.
    for e in views.clear() {
        commands.entity(e).despawn();
    }
    for (_, e) in std::mem::take(&mut fx.0) {
        commands.entity(e).despawn();
    }
    let frame = running.as_ref().map(|m| m.world().next_frame());
    watch.loaded = watch.path.as_deref().and_then(modified);
    watch.refused = None;
    watch.armed = true;
    let now = real.map_or(Duration::ZERO, |t| t.elapsed());
    let built = (settings.build)()
        .and_then(|world| AbilitiesMatch::start(world, &spec, &settings.setup, now));
    match built {
        Ok(m) => {
            started
                .write(MatchStarted { kind: m.kind(), content_hash: m.world().content().hash() });
            commands.insert_resource(LocalPlayers(m.local_players()));
            commands.insert_resource(m);
        }
        Err(reason) => {
            commands.remove_resource::<AbilitiesMatch<G>>();
            ended.write(MatchEnded { frame, reason });
        }
    }
}

/// Looks at the watched content file now and then: a change restarts an offline match or a
/// sync test (by marking the [`MatchSpec`] changed) and is refused by a networked one.
fn watch_content(
    mut watch: bevy::prelude::ResMut<ContentWatch>,
    spec: Option<bevy::prelude::ResMut<MatchSpec>>,
    mut reloaded: MessageWriter<ContentReloaded>,
) {
    let (Some(path), Some(mut spec)) = (watch.path.clone(), spec) else { return };
    if !watch.armed || spec.is_changed() {
        // No match was built from the file yet, or one is about to be.
        return;
    }
    if watch.countdown > 0 {
        watch.countdown -= 1;
        return;
    }
    watch.countdown = WATCH_EVERY;
    let now = modified(&path);
    if now.is_none() || now == watch.loaded || now == watch.refused {
        return;
    }
    if spec.is_local() {
        spec.set_changed();
        reloaded.write(ContentReloaded {
            applied: true,
            reason: format!("{} changed: the match restarts", path.display()),
        });
    } else {
        watch.refused = now;
        reloaded.write(ContentReloaded {
            applied: false,
            reason: format!(
                "{} changed, but a networked match keeps its content (the peers agreed on its \
                 hash): the change applies to the next match",
                path.display()
            ),
        });
    }
}

/// The content asset of a plugin made with [`AbilitiesPlugin::from_asset`].
#[derive(Resource)]
struct ContentAssetState {
    path: String,
    slot: ContentSlot,
    handle: Option<Handle<ContentAsset>>,
}

/// Loads the content asset, and follows its loads: the first starts the match waiting for it;
/// a change (or a failure) restarts an offline match or a sync test and is refused by a
/// networked one.
#[allow(
    clippy::too_many_arguments,
    reason = "a Bevy system: each argument is a resource or query it reads"
)]
fn watch_asset<G: Game>(
    mut state: ResMut<ContentAssetState>,
    server: Res<AssetServer>,
    assets: Res<Assets<ContentAsset>>,
    mut loaded: MessageReader<AssetEvent<ContentAsset>>,
    mut failed: MessageReader<AssetLoadFailedEvent<ContentAsset>>,
    spec: Option<ResMut<MatchSpec>>,
    running: Option<Res<AbilitiesMatch<G>>>,
    mut reloaded: MessageWriter<ContentReloaded>,
) {
    let Some(handle) = state.handle.clone() else {
        state.handle = Some(server.load(state.path.clone()));
        return;
    };
    // The newest outcome of this frame's events, if any.
    let mut outcome: Option<Result<Arc<Content>, String>> = None;
    for e in loaded.read() {
        if let AssetEvent::LoadedWithDependencies { id } | AssetEvent::Modified { id } = e
            && *id == handle.id()
            && let Some(asset) = assets.get(*id)
        {
            outcome = Some(Ok(asset.0.clone()));
        }
    }
    for e in failed.read() {
        if e.id == handle.id() {
            outcome = Some(Err(e.error.to_string()));
        }
    }
    let Some(outcome) = outcome else { return };
    let mut slot = lock_slot(&state.slot);
    let same = |a: &Result<Arc<Content>, String>, b: &Result<Arc<Content>, String>| match (a, b) {
        (Ok(a), Ok(b)) => a.hash() == b.hash(),
        (Err(a), Err(b)) => a == b,
        _ => false,
    };
    if slot.as_ref().is_some_and(|s| same(s, &outcome)) {
        return;
    }
    let first = slot.is_none();
    let Some(mut spec) = spec else {
        *slot = Some(outcome);
        return;
    };
    let path = &state.path;
    if running.is_none() || spec.is_local() {
        if !first {
            reloaded.write(ContentReloaded {
                applied: true,
                reason: match &outcome {
                    Ok(_) => format!("{path} changed: the match restarts"),
                    Err(e) => format!("{path} changed and does not load: {e}"),
                },
            });
        }
        *slot = Some(outcome);
        // `connect` starts the match again with the new content (or ends it with the error).
        spec.set_changed();
    } else {
        reloaded.write(ContentReloaded {
            applied: false,
            reason: match &outcome {
                Ok(_) => format!(
                    "{path} changed, but a networked match keeps its content (the peers agreed \
                     on its hash): the change applies to the next match"
                ),
                Err(e) => format!(
                    "{path} changed and does not load ({e}); the networked match keeps its \
                     content"
                ),
            },
        });
        if outcome.is_ok() {
            *slot = Some(outcome);
        }
    }
}

/// Advances the match by the ticks due: per tick, [`ReadInputs`] runs, then the runner
/// advances with the inputs it left in [`LocalInputs`].
fn drive<G: Game>(world: &mut BevyWorld) {
    let Some(settings) = world.get_resource::<PluginSettings<G>>() else { return };
    let (max_ticks, script) = (settings.max_ticks_per_update, settings.setup.script.clone());
    let rate = world.get_resource::<RollbackFrameRate>().copied().unwrap_or_default().0.max(1);
    let delta = world.get_resource::<Time>().map_or(Duration::ZERO, |t| t.delta());
    let period = Duration::from_nanos(1_000_000_000 / rate as u64);
    let now = world.get_resource::<Time<Real>>().map_or(Duration::ZERO, |t| t.elapsed());
    {
        let Some(mut m) = world.get_resource_mut::<AbilitiesMatch<G>>() else { return };
        if m.has_ended() {
            return;
        }
        if m.is_connecting() {
            // Joining a matchbox room: one step per Bevy frame; no tick until it is done.
            let local = m.connect_step(now);
            if let Some(local) = local {
                world.insert_resource(LocalPlayers(local));
            }
            return;
        }
        m.accumulator += delta;
    }
    let mut ticks = 0;
    loop {
        let (frame, due) = {
            let m = world.resource::<AbilitiesMatch<G>>();
            // Ahead of the peers: tick 10 % slower (bevy_ggrs's rule).
            let p = if m.running_ahead() { period * 11 / 10 } else { period };
            (m.world().next_frame() + m.settings().input_delay as Frame, m.accumulator >= p)
        };
        if !due {
            break;
        }
        if ticks == max_ticks {
            world.resource_mut::<AbilitiesMatch<G>>().accumulator = Duration::ZERO;
            break;
        }
        ticks += 1;
        world.insert_resource(InputFrame(frame));
        world.run_schedule(ReadInputs);
        let inputs = world.remove_resource::<LocalInputs<G>>().unwrap_or_default();
        let mut m = world.resource_mut::<AbilitiesMatch<G>>();
        let p = if m.running_ahead() { period * 11 / 10 } else { period };
        m.accumulator -= p;
        m.tick(&inputs.0, script.as_ref());
    }
    world.remove_resource::<InputFrame>();
    if ticks == 0 {
        // No tick due this frame: the network is still read and answered.
        world.resource_mut::<AbilitiesMatch<G>>().poll();
    }
}

/// Mirrors the world into view entities. `changes` is kept from frame to frame so that a
/// pass in which nothing changed allocates nothing.
fn sync_views<G: Game>(world: &mut BevyWorld, mut changes: Local<Vec<ViewChange<G::Component>>>) {
    world.resource_scope(|world, mut views: bevy::prelude::Mut<SimViews>| {
        {
            let Some(m) = world.get_resource::<AbilitiesMatch<G>>() else { return };
            let confirmed_next = m.confirmed_frame().map_or(0, |c| c + 1);
            let rewound_to = m.pending.rewound_to;
            let w = m.world();
            let live = w.entities().map(|e| (e, w.component(e).copied().unwrap_or_default()));
            views.diff(live, w.next_frame(), confirmed_next, rewound_to, &mut changes);
        }
        for c in changes.drain(..) {
            match c {
                ViewChange::Spawn(id, data) => {
                    let e = world.spawn((SimEntity(id), SimData(data))).id();
                    views.insert(id, e, bytemuck::bytes_of(&data));
                }
                ViewChange::Update(e, data) => {
                    if let Some(mut d) = world.get_mut::<SimData<G::Component>>(e) {
                        d.0 = data;
                    }
                }
                ViewChange::Revived(e) => {
                    world.entity_mut(e).remove::<SimGone>();
                }
                ViewChange::Gone(e, since) => {
                    world.entity_mut(e).insert(SimGone { since });
                }
                ViewChange::Retire(e) => {
                    world.despawn(e);
                }
            }
        }
        if let Some(mut m) = world.get_resource_mut::<AbilitiesMatch<G>>() {
            m.pending.rewound_to = None;
        }
    });
}

/// Writes the messages of the ticks and keeps the cue effect entities in step with the cue
/// director's calls. The match's buffers are emptied and handed back, keeping their capacity.
fn present<G: Game>(world: &mut BevyWorld) {
    let Some(mut m) = world.get_resource_mut::<AbilitiesMatch<G>>() else { return };
    let mut pending = std::mem::take(&mut m.pending);
    let frame = m.world().next_frame();
    world.resource_scope(|world, mut fx: bevy::prelude::Mut<CueFxEntities>| {
        for (phase, cue) in pending.cues.0.drain(..) {
            let view = world.resource::<SimViews>().view(cue.key.target);
            let entity = match phase {
                CuePhase::Played | CuePhase::Shown => {
                    let e = world.spawn(CueFx { cue, view, confirmed: false }).id();
                    if let Some(old) = fx.0.insert(cue.key, e) {
                        world.despawn(old);
                    }
                    Some(e)
                }
                CuePhase::Cancelled | CuePhase::Removed(_) => {
                    let e = fx.0.remove(&cue.key);
                    if let Some(e) = e {
                        world.despawn(e);
                    }
                    e
                }
                CuePhase::Retimed { from } => {
                    let e = fx.0.remove(&from);
                    if let Some(e) = e {
                        fx.0.insert(cue.key, e);
                        if let Some(mut c) = world.get_mut::<CueFx>(e) {
                            c.cue = cue;
                        }
                    }
                    e
                }
                CuePhase::Confirmed => {
                    let e = fx.0.get(&cue.key).copied();
                    if let Some(e) = e {
                        if let Some(mut c) = world.get_mut::<CueFx>(e) {
                            c.confirmed = true;
                        }
                        // A confirmed burst can no longer be cancelled: it is the app's now.
                        if cue.key.kind == CueKind::Executed {
                            fx.0.remove(&cue.key);
                        }
                    }
                    e
                }
                CuePhase::Activated => fx.0.get(&cue.key).copied(),
            };
            world.write_message(CueMessage { phase, cue, view, fx: entity });
        }
        if !pending.ui.is_empty() {
            let views = world.resource::<SimViews>();
            let ui: Vec<UiMessage> = pending
                .ui
                .drain(..)
                .map(|n| UiMessage { notice: n, view: views.view(n.event.key.entity) })
                .collect();
            world.write_message_batch(ui);
        }
    });
    if !pending.events.is_empty() {
        world.write_message_batch(pending.events.drain(..).map(SessionMessage));
    }
    if !pending.desyncs.is_empty() {
        world
            .write_message_batch(pending.desyncs.drain(..).map(|report| DesyncDetected { report }));
    }
    if !pending.mismatches.is_empty() {
        world.write_message_batch(
            pending.mismatches.drain(..).map(|report| SyncTestMismatch { report }),
        );
    }
    if let Some(reason) = pending.ended.take() {
        world.write_message(MatchEnded { frame: Some(frame), reason });
    }
    if let Some(mut m) = world.get_resource_mut::<AbilitiesMatch<G>>() {
        // Nothing was added since the take: hand the emptied buffers back.
        pending.rewound_to = m.pending.rewound_to;
        m.pending = pending;
    }
}
