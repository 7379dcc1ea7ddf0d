//! The duel: a complete reference fighting game on `rollback_abilities`, and a worked example
//! of the [`Game`] trait.
//!
//! Two to four fighters on a one-dimensional stage ([`ARENA_HALF`]) with five buttons
//! ([`Input`]): a light attack (poison, lifesteal), a heavy attack that stuns and can cancel the
//! light one inside its cancel window, a fireball (a projectile entity), a shield and a held
//! sprint. The abilities, effects and cues are data (`examples/content/duel.ron`, embedded as
//! [`CONTENT_RON`]); the functions it names are [`hooks`]; the match and its rounds, movement
//! and projectiles are the game's systems (phase P6). Hits and pushes come from the content's
//! boxes — each move's hit box in its timeline, the fighters' and fireballs' standing boxes —
//! which the world resolves after the systems: fighters' push boxes never overlap, in piles and
//! against the arena's walls. The duel anchors the boxes at its bodies ([`Game::box_anchor`]),
//! moves bodies inside the arena when the world pushes them ([`Game::push_box`]) and applies
//! each hit ([`Game::on_hit`]).
//! [`bot_input`] plays every fighter.
//!
//! A match is best of [`BEST_OF`] rounds, each on a [`ROUND_FRAMES`] clock: a knock-out or
//! the clock decides a round, and the first to [`ROUNDS_TO_WIN`] (or the sole leader after
//! [`BEST_OF`] decided rounds; tie-break rounds while the lead is shared, up to
//! [`MAX_ROUNDS`]) wins the match ([`match_decision`], [`match_state`]). The result
//! stays until every player presses [`REMATCH_BUTTON`], then the next match starts; the bots ask
//! at once. All of it is in the snapshot ([`Round`]).
//!
//! # Matches
//!
//! [`DuelMatch`] plays a whole match in one process over the seeded in-memory network, one
//! GGRS peer per fighter; [`DuelPeer`] is one peer under any GGRS P2P session (the browser
//! duel's and the matchbox example's); [`NetPeer`] is one peer as a
//! [`MatchPeer`](rollback_abilities::session::MatchPeer) over any transport that also carries
//! the rejoin protocol (the `duel` example's `--udp` mode runs one per OS process, over a
//! [`UdpTransport`](rollback_abilities::session::UdpTransport) bound to 127.0.0.1, every
//! message behind a [`GuardedSocket`](rollback_abilities::session::GuardedSocket)). A
//! [`MatchReport`] sums it up: rollbacks, checksum agreement, the re-verified replay, cue
//! reconciliation, what happened, who won.
//!
//! # Departures
//!
//! [`MatchOptions::leave`] (`--leave PLAYER@FRAME`) makes a player's peer leave once its world
//! has simulated that frame: the emulated peer stops and is cut off the network, the `--udp`
//! process exits. The others wait for it for their departure time
//! ([`EMULATED_DEPARTURE_TICKS`] emulated ticks, two seconds; about ten seconds of stalling in
//! `--udp` mode), agree on the last frame of its real input
//! ([`SessionEvent::Left`](rollback_abilities::session::SessionEvent::Left)) and play on to the end.
//!
//! The leaver's fighter stays on the stage: from the frame after the agreed last frame its
//! input is GGRS's disconnected input, the default [`Input`] (no button, stick centred), so it
//! stands idle and can still be hit and knocked out. The systems do not branch on the input
//! status: [`World::input_status`] is outside the snapshot and a replay records inputs, not
//! statuses, so a rule keyed on `Disconnected` would not re-simulate from the replay. The
//! forfeit is therefore a rule of the result: **a player who left forfeits**, and the winner is
//! the leader among the players who stayed ([`winner_among`]); with two players the one who
//! stayed wins. The report checks the survivors only (checksums, cues, desyncs), shows what
//! each survivor saw as the leaver's last input frame and whether they agree, compares the
//! leaver's own confirmed frames with theirs up to that frame, and verifies the replay of the
//! first survivor.
//!
//! # Rejoins
//!
//! [`MatchOptions::rejoin`] (`--rejoin PLAYER@LEAVE:BACK`) makes a player's peer leave once its
//! world has simulated LEAVE, as `--leave` does, and come back into its own slot of the running
//! match once the others have reached BACK (frames of their timeline). [`DuelMatch`] plays it
//! over the emulated network, the rejoin protocol running inside
//! [`LocalMatch`](rollback_abilities::session::LocalMatch)
//! ([`LocalMatch::rejoin`](rollback_abilities::session::LocalMatch::rejoin)): the peer comes
//! back once the others have confirmed the frames before BACK. [`NetPeer`]s play it over any
//! [`MatchTransport`](rollback_abilities::session::MatchTransport) (the example's `--udp` mode:
//! one OS process per peer over
//! [`UdpTransport`](rollback_abilities::session::UdpTransport)): the others wait at BACK, and a
//! new program for the slot, from a new port, asks to come back
//! ([`MatchPeer::rejoin`](rollback_abilities::session::MatchPeer::rejoin)); see [`NetPeer`].
//! A [`DuelPeer`] (one GGRS session) refuses it ([`MatchError::Unsupported`]). The peer comes
//! back as a restarted program would, with a fresh world: the members agree on a frame F (at or
//! a little after BACK), send it their confirmed state before F, and every peer plays on from F
//! in a new session
//! ([`SessionEvent::Rejoined`](rollback_abilities::session::SessionEvent::Rejoined)).
//!
//! While it is away its fighter follows the departure policy above: the default input, so it
//! stands idle. From F on its input is its own again and it is in the match to the end: **a
//! player who came back does not forfeit**. The report shows the gap (from the frame after the
//! agreed last frame of its input to F), the frame F every peer reported, the bytes of state it
//! received, and checks its own confirmed checksums and bursts from F to the end against the
//! others' and the replay's ([`RejoinSummary`]); its first stay is checked as a leaver's is.

mod bot;
mod hooks;
mod ids;
mod net;
mod play;
mod report;
mod systems;

pub use bot::bot_input;
pub use hooks::hooks;
pub use ids::{CONTENT_RON, Moves, content, moves, try_content};
pub use net::NetPeer;
pub use play::{
    BOT_REACTION_FRAMES, BotView, DuelMatch, DuelPeer, EMULATED_DEPARTURE_TICKS, MatchError,
    MatchOptions, MatchOutcome, RejoinPlan, Transport, parse_leave, parse_rejoin,
};
pub use report::{
    Comeback, CueCounter, CueCounts, CueLogCheck, DepartureSummary, FighterSummary, LastInput,
    MatchReport, PeerSummary, RejoinSummary, replay_cue_log,
};
pub use systems::match_decision;

use bytemuck::{Pod, Zeroable};
use rollback_abilities::Entity;
use rollback_abilities::num::{self, Frame, Fx};
use rollback_abilities::scenario::{ScenarioHost, ScenarioInput};
use rollback_abilities::{AbilityInput, BoxAnchor, BoxHit, Game, World, WorldConfig, WorldError};

/// The most fighters (players) in a duel.
pub const MAX_FIGHTERS: usize = 4;
/// The arena spans `-ARENA_HALF..=ARENA_HALF` units.
pub const ARENA_HALF: Fx = Fx::const_from_int(200);
/// Half a fighter's width, in units (the content's `Fighter` body has hurt and push boxes this
/// wide).
pub const FIGHTER_HALF: i64 = 10;
/// A fireball's speed in units per frame.
pub const FIREBALL_SPEED: Fx = Fx::const_from_int(6);
/// How many frames a fireball flies before it fizzles.
pub const FIREBALL_TTL: u16 = 80;
/// Frames of hitstop a connecting light attack gives both fighters (F-GA-23).
pub const LIGHT_HITSTOP: u32 = 4;
/// Frames of hitstop a connecting heavy attack gives both fighters.
pub const HEAVY_HITSTOP: u32 = 8;
/// Frames of hitstop a fireball gives the fighter it hits.
pub const FIREBALL_HITSTOP: u32 = 4;
/// Frames between a knock-out (or a time-out) and the next round.
pub const KO_PAUSE: Frame = 90;
/// The longest a round lasts before the healthiest fighter wins it on time (30 s).
pub const ROUND_FRAMES: Frame = 1800;
/// A match is best of this many rounds: it ends when a player has won a majority of them
/// ([`ROUNDS_TO_WIN`]), or once this many rounds were decided (draws count) and one player has
/// won more rounds than anyone else. While the lead is shared (a drawn round in a 2-player
/// match, three winners among 4 players) tie-break rounds follow, up to [`MAX_ROUNDS`].
pub const BEST_OF: u32 = 3;
/// Rounds a player must win to win the match outright.
pub const ROUNDS_TO_WIN: u32 = BEST_OF / 2 + 1;
/// The most rounds a match lasts (draws count): after that many, a lead still shared is a drawn
/// match. It leaves room for every player of a 4-player match to win a round and for a few
/// drawn rounds.
pub const MAX_ROUNDS: u32 = 3 * BEST_OF;
/// The button that asks for a rematch once the match is over ([`Input::LIGHT`]): the next
/// match starts when every player has pressed it after the result's pause ([`KO_PAUSE`]).
pub const REMATCH_BUTTON: u8 = Input::LIGHT;

/// The duel's [`Game`]: fighters and fireballs on a one-dimensional stage.
#[derive(Clone, Copy, Debug, Default)]
pub struct Duel;

/// One player's input for one frame: five buttons and a quantised horizontal stick (2 bytes).
#[repr(C)]
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    Pod,
    Zeroable,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Input {
    /// Held buttons: [`Input::LIGHT`], [`Input::HEAVY`], [`Input::FIREBALL`],
    /// [`Input::SHIELD`], [`Input::SPRINT`] (bit `i` is ability input `i`).
    pub buttons: u8,
    /// The stick, `-127` (left) to `127` (right); `-128` counts as `-127`.
    pub axis: i8,
}

impl Input {
    /// Light attack (ability input 0).
    pub const LIGHT: u8 = 1 << 0;
    /// Heavy attack (ability input 1).
    pub const HEAVY: u8 = 1 << 1;
    /// Fireball (ability input 2).
    pub const FIREBALL: u8 = 1 << 2;
    /// Shield (ability input 3).
    pub const SHIELD: u8 = 1 << 3;
    /// Sprint, held (ability input 4).
    pub const SPRINT: u8 = 1 << 4;
    /// Every button.
    pub const ALL: u8 = 0x1f;
}

/// What an entity is ([`Body::kind`]).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An unused slot.
    None = 0,
    /// A fighter (a player's avatar).
    Fighter = 1,
    /// A fireball in flight.
    Fireball = 2,
}

/// The duel's per-entity component: a fighter's or a projectile's body (40 bytes, `Pod`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Body {
    /// Position in units.
    pub x: Fx,
    /// Velocity in units per frame (what moved the body last frame).
    pub vx: Fx,
    /// A projectile's caster ([`Entity::NONE`] for fighters).
    pub owner: Entity,
    /// A [`Kind`] as `u8`.
    pub kind: u8,
    /// `1` facing right, `-1` facing left.
    pub facing: i8,
    /// The player a fighter belongs to (a projectile: its caster's player).
    pub player: u8,
    _pad0: u8,
    /// A projectile's remaining flight frames.
    pub ttl: u16,
    _pad1: u16,
    _pad2: [u32; 2],
}

/// Counters of what happened, kept in the snapshot (so the confirmed timeline's numbers are
/// exact, whatever rollbacks did).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub struct Stats {
    /// Light and heavy attacks that connected.
    pub melee_hits: u32,
    /// Critical hits.
    pub crits: u32,
    /// Lifesteal heals.
    pub lifesteal_heals: u32,
    /// Poison stacks applied (or refreshed).
    pub poison_stacks: u32,
    /// Poison damage ticks.
    pub poison_ticks: u32,
    /// Hits (and their effects) a shield blocked.
    pub shield_blocks: u32,
    /// Stuns applied.
    pub stuns: u32,
    /// Abilities the stuns cancelled.
    pub stun_cancels: u32,
    /// Light attacks cancelled into a heavy attack.
    pub heavy_cancels: u32,
    /// Fireballs launched.
    pub fireballs_launched: u32,
    /// Fireballs that hit.
    pub fireball_hits: u32,
    /// Knock-outs.
    pub kos: u32,
    /// Attacks activated by a press kept in the input buffer (a heavy attack pressed before
    /// the light attack's cancel window opened, or during its recovery).
    pub buffered_attacks: u32,
    /// Frames a fighter's clock was held by hitstop (summed over fighters).
    pub hitstop_frames: u32,
}

/// The duel's global block: the match, its rounds, scores and statistics (144 bytes, `Pod`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Round {
    /// Damage each player's fighter has taken over the whole match.
    pub damage_taken: [Fx; MAX_FIGHTERS],
    /// The current round, from 1.
    pub round: u32,
    /// The frame the current round started.
    pub round_start: Frame,
    /// `1` during the pause after a knock-out or a time-out.
    pub ko: u32,
    /// The frame the last round was decided.
    pub ko_frame: Frame,
    /// Rounds won by each player.
    pub wins: [u32; MAX_FIGHTERS],
    /// The last round's winner plus one (`0`: a draw, or no round decided yet).
    pub last_winner: u32,
    /// Rounds that ended in a draw (double knock-out, or equal health on time).
    pub draws: u32,
    /// What happened so far (over every match).
    pub stats: Stats,
    /// Matches decided so far.
    pub matches: u32,
    /// `1` from the frame the current match is decided until its rematch starts.
    pub match_over: u32,
    /// The last decided match's winner plus one (`0`: a draw, or no match decided yet).
    pub match_winner: u32,
    /// The players who asked for a rematch ([`REMATCH_BUTTON`]), bit per player, while the
    /// match is over.
    pub rematch: u32,
}

/// Where the current match stands ([`match_state`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum MatchState {
    /// Rounds are being fought: the round in play and the frames left on its clock.
    Fighting {
        /// The current round, from 1.
        round: u32,
        /// Frames left before the round is decided on time.
        frames_left: Frame,
    },
    /// A round was just decided; the next one starts after [`KO_PAUSE`].
    RoundOver {
        /// The round's winner (`None`: a draw).
        winner: Option<usize>,
    },
    /// The match is decided; a rematch starts once every player has pressed
    /// [`REMATCH_BUTTON`] after the pause.
    MatchOver {
        /// The match's winner (`None`: a draw).
        winner: Option<usize>,
        /// Whether the rematch can be asked for yet (the result's pause is over).
        rematch_open: bool,
        /// The players who asked for it (bit per player).
        asked: u32,
    },
}

/// Where the match of `world` stands, as of its last simulated frame.
pub fn match_state(world: &World<Duel>) -> MatchState {
    let g = world.global();
    let frame = world.next_frame();
    let plus_one = |w: u32| w.checked_sub(1).map(|p| p as usize);
    if g.match_over != 0 {
        MatchState::MatchOver {
            winner: plus_one(g.match_winner),
            rematch_open: frame >= g.ko_frame.saturating_add(KO_PAUSE),
            asked: g.rematch,
        }
    } else if g.ko != 0 {
        MatchState::RoundOver { winner: plus_one(g.last_winner) }
    } else {
        let played = frame.saturating_sub(g.round_start);
        MatchState::Fighting { round: g.round, frames_left: ROUND_FRAMES.saturating_sub(played) }
    }
}

impl Game for Duel {
    type Input = Input;
    type Component = Body;
    type Global = Round;

    /// Rounds, movement and projectiles (see the module documentation).
    fn systems(world: &mut World<Self>) {
        systems::run(world);
    }

    /// A standing fighter puts out the `Fighter` body's boxes (and its moves'), a fireball the
    /// `Fireball` body's, on behalf of its caster; a knocked-out fighter none.
    fn box_anchor(world: &World<Self>, e: Entity) -> Option<BoxAnchor> {
        let b = world.component(e)?;
        let i = ids::ids();
        let (body, instigator) = match b.kind {
            k if k == Kind::Fighter as u8 && systems::standing(world, e) => {
                (i.b_fighter, Entity::NONE)
            }
            k if k == Kind::Fireball as u8 => (i.b_fireball, b.owner),
            _ => return None,
        };
        Some(BoxAnchor {
            x: b.x,
            y: Fx::ZERO,
            facing_left: b.facing < 0,
            body: Some(body),
            instigator,
        })
    }

    /// Moves a body along the stage, inside the arena.
    fn push_box(world: &mut World<Self>, e: Entity, dx: Fx) {
        if let Some(b) = world.component_mut(e) {
            b.x = num::clamp(num::add(b.x, dx), num::neg(ARENA_HALF), ARENA_HALF);
        }
    }

    /// Applies a hit by its event tag (damage, hitstop, poison or stun, blocks).
    fn on_hit(world: &mut World<Self>, hit: &BoxHit) {
        systems::apply_hit(world, hit);
    }

    /// Bits 0–4 of `buttons` are ability inputs 0–4.
    fn ability_input(input: &Input) -> AbilityInput {
        AbilityInput { held: u32::from(input.buttons & Input::ALL), ..AbilityInput::default() }
    }
}

/// The duel's fighters in scenarios: ability inputs 0–4 are its five buttons, the stick stays
/// centred. The command-line tool runs scenario files whose content names functions with the
/// duel's [`hooks`] (`kit.ron`, `duel.ron`).
impl ScenarioHost for Duel {
    fn scenario_input(input: &ScenarioInput) -> Input {
        Input { buttons: (input.held as u8) & Input::ALL, axis: 0 }
    }
}

/// The world configuration of a duel with `fighters` fighters (2 to 4).
pub fn world_config(seed: u64, fighters: usize) -> WorldConfig {
    WorldConfig {
        max_entities: 16,
        effects_per_entity: 16,
        players: fighters.clamp(2, MAX_FIGHTERS) as u16,
        seed,
        abilities_per_entity: 8,
        max_tasks: 64,
        max_standalone_cues: 4,
        max_stored_specs: 32,
        ..WorldConfig::default()
    }
}

/// The starting position of a player's fighter: spread evenly over `-150..=150`.
fn start_x(player: usize, players: usize) -> Fx {
    let span = players.saturating_sub(1).max(1) as i64;
    num::int(-150 + 300 * (player as i64).min(span) / span)
}

/// A new duel world: `fighters` fighters (clamped to 2..=4) at their starting positions, player
/// `i` bound to fighter `i`, every ability granted, regeneration running, round 1.
pub fn try_new_world(seed: u64, fighters: usize) -> Result<World<Duel>, WorldError> {
    try_new_world_with(content(), seed, fighters)
}

/// [`try_new_world`] with other content: an edited copy of [`CONTENT_RON`] (a designer trying
/// other frame data or boxes) that keeps every name the duel's code uses.
pub fn try_new_world_with(
    content: std::sync::Arc<rollback_abilities::Content>,
    seed: u64,
    fighters: usize,
) -> Result<World<Duel>, WorldError> {
    let n = fighters.clamp(2, MAX_FIGHTERS);
    let mut w = World::new(content, &hooks(), world_config(seed, n))?;
    let i = ids::ids();
    for p in 0..n {
        let Ok(e) = w.spawn_actor(&i.sets) else { break };
        w.bind_player(p, e);
        systems::place(&mut w, e, p, n);
        for def in i.abilities {
            let _ = w.grant_ability(e, def, 1);
        }
        systems::start_regen(&mut w, e);
    }
    *w.global_mut() = Round { round: 1, ..Round::default() };
    Ok(w)
}

/// [`try_new_world`], for the embedded content and hooks (which always fit together).
///
/// # Panics
///
/// Only if the embedded content and the hooks disagree, which the crate's tests rule out.
pub fn new_world(seed: u64, fighters: usize) -> World<Duel> {
    match try_new_world(seed, fighters) {
        Ok(w) => w,
        Err(e) => panic!("the duel's content and hooks disagree: {e}"),
    }
}

/// The player leading the match: the most rounds won, then (while the match goes on) the most
/// health in the current round; `None` for a draw. Once the match is decided, its winner.
pub fn winner(world: &World<Duel>) -> Option<usize> {
    winner_among(world, |_| true)
}

/// [`winner`] among the players for which `candidate` holds (the others cannot win: a player
/// who left the match forfeits); `None` for a draw or when there is no candidate.
pub fn winner_among(world: &World<Duel>, candidate: impl Fn(usize) -> bool) -> Option<usize> {
    let i = ids::ids();
    let g = world.global();
    let players = world.players().min(MAX_FIGHTERS);
    let health = |p: usize| {
        systems::fighter(world, p)
            .filter(|e| systems::standing(world, *e))
            .and_then(|e| world.attr(e, i.health))
            .unwrap_or(Fx::ZERO)
    };
    // A decided match is decided on rounds alone (see `match_decision`).
    let decided = g.match_over != 0;
    let key = |p: usize| (g.wins[p], if decided { Fx::ZERO } else { health(p) });
    let best = (0..players).filter(|p| candidate(*p)).map(key).max()?;
    let mut leaders = (0..players).filter(|p| candidate(*p) && key(*p) == best);
    let first = leaders.next()?;
    if leaders.next().is_some() { None } else { Some(first) }
}
