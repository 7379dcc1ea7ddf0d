//! Fuzz oracles: the logic of the fuzz targets in `fuzz/`, kept in the kit (a library, on the
//! crate's public API) so that `cargo test` replays every committed corpus and regression input
//! (see `fuzz/README.md`) and so that a game built on this crate can fuzz its own content and
//! inputs the same way.
//!
//! Every function takes arbitrary bytes and either returns or panics. A panic is a finding:
//! either the crate panicked on input it must accept (a decode boundary or [`World::step`]), or an
//! oracle's assertion failed (a rollback changed a checksum, the cue presenter broke its
//! contract). None of them allocates without bound, reads files or uses the clock.
//!
//! | target | what it feeds | what must hold |
//! |---|---|---|
//! | [`content`] | RON text | [`Content::from_ron_str`] returns a typed error or content whose hash is stable; a world built on valid content steps without panicking |
//! | [`replay`] | replay bytes (optionally resealed) | [`Replay::decode`] returns a typed error or a replay whose canonical re-encoding decodes back to it; a decoded replay's `verify`, `bisect` and `seek` on a duel world return |
//! | [`scenario`] | scenario RON text | [`Scenario::from_str`] returns a typed error or a scenario; a short valid one runs in plain mode |
//! | [`step_inputs`] | raw network bytes | reinterpreted as each game's `Pod` input (duel, arena, scenario game) with any input status and any input count, stepping never panics |
//! | [`determinism`] | inputs, rollback depth, seed | [`RollbackDriver`](rollback_abilities::session::RollbackDriver) at random depths gives the straight run's checksum every frame |
//! | [`session`] | datagrams from a hostile peer | injected into a live 3-player GGRS match (raw bytes, or GGRS and departure-protocol messages with the impersonated peer's real session number): no peer panics, GGRS never fails an assertion, the honest peers keep advancing and confirm the same frames |
//! | [`presenter`] | inputs, prediction lag and rollback schedule | [`PresenterLog::check_invariants`] holds and the reconciled log equals the straight run's |
//!
//! ```
//! // Every target accepts any bytes.
//! for (name, target) in rollback_abilities_kit::fuzz::TARGETS {
//!     target(b"");
//!     target(&[0xff; 64]);
//!     let _ = name;
//! }
//! ```

use crate::arena::{Arena, ArenaGame, ArenaSpec};
use crate::duel::{self, Duel};
use ggrs::{Message, NonBlockingSocket};
use rollback_abilities::Content;
use rollback_abilities::InputStatus;
use rollback_abilities::num::Frame;
use rollback_abilities::present::{CueDirector, PresenterLog};
use rollback_abilities::replay::{Recorder, Replay};
use rollback_abilities::scenario::{Mode, RunOptions, Scenario, ScenarioGame, ScenarioInput};
use rollback_abilities::session::{
    Determinism, EmulatedSocket, Equivocation, LocalMatch, MatchConfig, NetConditions, PeerAddr,
    PublicIdentity, SessionEvent, SignedInputs, SpectatorPolicy, forge, late_spectator,
    message_from_bytes, message_to_bytes,
};
use rollback_abilities::{AbilityDefId, AttrSetId, EffectDefId};
use rollback_abilities::{Game, Hooks, SnapshotRing, World, WorldConfig};
use std::sync::Arc;

/// A fuzz target: takes arbitrary bytes, never panics (a panic is a finding).
pub type Target = fn(&[u8]);

/// The fuzz targets by name (the names of the binaries in `fuzz/fuzz_targets/` and of the corpus
/// folders `fuzz/corpus/<name>/` and `fuzz/regressions/<name>/`).
pub const TARGETS: &[(&str, Target)] = &[
    ("content", content),
    ("replay", replay),
    ("scenario", scenario),
    ("step_inputs", step_inputs),
    ("determinism", determinism),
    ("presenter", presenter),
    ("session", session),
];

/// Runs the target called `name` on `data`; `false` if there is no such target.
pub fn run(name: &str, data: &[u8]) -> bool {
    match TARGETS.iter().find(|(n, _)| *n == name) {
        Some((_, f)) => {
            f(data);
            true
        }
        None => false,
    }
}

/// The small content of the scenario-game targets: a persistent ability cue (Sprint, held), a
/// burst cue (Strike, with a cost), an ability with a cooldown and a cue (Focus), a stacking
/// periodic effect with a persistent cue (Burn) and an infinite periodic one (Regen).
pub const FUZZ_CONTENT: &str = r#"(
    tags: ["Ability.Movement.Sprint", "Ability.Attack.Strike", "Ability.Skill.Burn",
           "GameplayCue.Sprint", "GameplayCue.Hit", "GameplayCue.Burn", "Cooldown.Burn",
           "State.Burning"],
    attribute_sets: { "Vitals": (attributes: {
        "Stamina": (default: 1000, min: Const(0)),
        "Health": (default: 500, min: Const(0), max: Const(500)),
    }) },
    effects: {
        "StrikeCost": (modifiers: [(attribute: "Stamina", op: Add, magnitude: Scalable(coef: -1))],
                       cues: [(tag: "GameplayCue.Hit")]),
        "Burn": (duration: Frames(40), period: Frames(7),
                 modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -3))],
                 granted_tags: ["State.Burning"], stacking: (kind: ByTarget, limit: 3),
                 cues: [(tag: "GameplayCue.Burn")]),
        "BurnCooldown": (duration: Frames(25), granted_tags: ["Cooldown.Burn"]),
        "Regen": (duration: Infinite, period: Frames(5),
                  modifiers: [(attribute: "Stamina", op: Add, magnitude: Scalable(coef: 1))]),
    },
    abilities: {
        "Sprint": (tags: ["Ability.Movement.Sprint"], input: 0, end_on_release: true,
                   cues: ["GameplayCue.Sprint"]),
        "Strike": (tags: ["Ability.Attack.Strike"], input: 1, cost: "StrikeCost",
                   end_after: Frames(1)),
        "Focus": (tags: ["Ability.Skill.Burn"], input: 2, cooldown: "BurnCooldown",
                  activation_owned_tags: ["State.Burning"], end_after: Frames(12),
                  cues: ["GameplayCue.Burn"]),
    },
)"#;

/// Reads bytes from the front of the fuzz input; past the end every read gives zeros, so any
/// input is a complete description.
#[derive(Debug)]
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    fn new(data: &'a [u8]) -> Bytes<'a> {
        Bytes { data, at: 0 }
    }

    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at = self.at.saturating_add(1);
        b
    }

    fn u64(&mut self) -> u64 {
        (0..8).fold(0u64, |acc, _| (acc << 8) | u64::from(self.u8()))
    }

    fn fill(&mut self, out: &mut [u8]) {
        for b in out {
            *b = self.u8();
        }
    }

    fn exhausted(&self) -> bool {
        self.at >= self.data.len()
    }

    /// A `Pod` value made of the next `size_of::<T>()` bytes (any bytes are a valid value).
    fn pod<T: bytemuck::Pod>(&mut self) -> T {
        let mut v = T::zeroed();
        self.fill(bytemuck::bytes_of_mut(&mut v));
        v
    }
}

/// A scenario-game world on [`FUZZ_CONTENT`]: two fighters bound to players 0 and 1 with every
/// ability granted, `Regen` on both and `Burn` (40 frames) on the second, and a spare slot for a
/// third player.
///
/// # Panics
///
/// Never: the embedded content is valid (the crate's tests run every target).
pub fn fuzz_world(seed: u64) -> World<ScenarioGame> {
    let content = match Content::from_ron_str(FUZZ_CONTENT) {
        Ok(c) => Arc::new(c),
        Err(e) => panic!("the fuzz content is invalid: {e}"),
    };
    let config = WorldConfig { seed, players: 3, max_entities: 8, ..WorldConfig::default() };
    let mut w = match World::new(content.clone(), &Hooks::new(), config) {
        Ok(w) => w,
        Err(e) => panic!("the fuzz world cannot be built: {e}"),
    };
    populate(&mut w, &content, 2);
    let ents: Vec<_> = w.entities().collect();
    for (name, target) in [("Regen", 0), ("Regen", 1), ("Burn", 1)] {
        if let (Ok(def), Some(e)) = (content.effect(name), ents.get(target)) {
            let spec = w.make_spec(def, 1, ents[0]);
            let _ = w.apply_effect(spec, *e);
        }
    }
    w
}

/// Spawns `n` actors with every attribute set and ability of the content, bound to players.
fn populate<G: Game>(w: &mut World<G>, content: &Content, n: usize) {
    let sets: Vec<AttrSetId> =
        (0..content.attr_set_defs().len().min(64)).map(|i| AttrSetId(i as u16)).collect();
    for p in 0..n {
        let Ok(e) = w.spawn_actor(&sets) else { return };
        if p < w.players() {
            w.bind_player(p, e);
        }
        for a in 0..content.ability_defs().len().min(16) {
            let _ = w.grant_ability(e, AbilityDefId(a as u16), 1);
        }
    }
}

/// Content parsing: any text gives a typed error or content. Valid content freezes to the same
/// hash twice, and a world on it (every attribute set, ability and effect used) steps 16 frames
/// with inputs taken from the text.
pub fn content(data: &[u8]) {
    let Ok(text) = core::str::from_utf8(data) else { return };
    let Ok(first) = Content::from_ron_str(text) else { return };
    match Content::from_ron_str(text) {
        Ok(second) => assert_eq!(first.hash(), second.hash(), "content hash is not stable"),
        Err(e) => panic!("content froze once and then failed: {e}"),
    }
    let content = Arc::new(first);
    let config = WorldConfig { players: 2, max_entities: 4, ..WorldConfig::default() };
    // Content naming functions needs hooks: that is a typed `WorldError`, not a finding.
    let Ok(mut w) = World::<ScenarioGame>::new(content.clone(), &Hooks::new(), config) else {
        return;
    };
    populate(&mut w, &content, 2);
    let ents: Vec<_> = w.entities().collect();
    for (i, e) in ents.iter().enumerate() {
        for d in 0..content.effect_defs().len().min(32) {
            let spec = w.make_spec(EffectDefId(d as u16), 1, ents[(i + 1) % ents.len()]);
            let _ = w.apply_effect(spec, *e);
        }
    }
    let mut b = Bytes::new(data);
    for _ in 0..16 {
        let inputs = [b.pod::<ScenarioInput>(), b.pod::<ScenarioInput>()];
        w.step(&inputs);
    }
}

/// Replay parsing: [`Replay::decode`] on the bytes after the first; if the first byte is odd,
/// the last 8 bytes are first replaced by the integrity checksum of the rest ("resealed"), so
/// the fuzzer reaches the structure behind the integrity check, as a deliberate tamperer
/// would. A decoded replay is verified, bisected and sought on a duel world.
pub fn replay(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else { return };
    let mut bytes = rest.to_vec();
    if flags & 1 == 1 && bytes.len() >= 8 {
        let n = bytes.len() - 8;
        let sum = twox_hash::XxHash3_64::oneshot(&bytes[..n]);
        bytes[n..].copy_from_slice(&sum.to_le_bytes());
    }
    let Ok(r) = Replay::decode(&bytes) else { return };
    // Re-encoding is canonical: the header is RON text, so equivalent spellings (comments,
    // spacing, raw identifiers) decode to the same replay and re-encode in one canonical form,
    // which decodes back to the same replay and re-encodes to itself.
    let canonical = r.encode();
    match Replay::decode(&canonical) {
        Ok(again) => {
            assert!(again == r, "a re-encoded replay decodes differently");
            assert!(again.encode() == canonical, "re-encoding is not canonical");
        }
        Err(e) => panic!("a re-encoded replay does not decode: {e}"),
    }
    // Bound the work: a replay announcing millions of frames is legal but slow.
    if r.frames.len() > 2_000 {
        return;
    }
    let players = usize::from(r.header.players).clamp(2, duel::MAX_FIGHTERS);
    let Ok(mut w) = duel::try_new_world(r.header.seed, players) else { return };
    let _ = r.verify(&mut w);
    let _ = r.bisect(&mut w);
    let _ = r.seek(&mut w, u32::from(flags >> 1));
    let _ = r.seek(&mut w, 0);
}

/// Scenario parsing: [`Scenario::from_str`] on any text gives a typed error or a scenario; a
/// valid scenario of at most 64 frames then runs in plain mode (its expectations may fail, it
/// must not panic). Content paths resolve against a directory that does not exist.
pub fn scenario(data: &[u8]) {
    let Ok(text) = core::str::from_utf8(data) else { return };
    let base = std::path::Path::new("/nonexistent-fuzz-dir");
    let Ok(s) = Scenario::from_str(text, "fuzz.ron", Some(base)) else { return };
    if s.frames > 64 || s.world.max_entities > 64 || s.world.max_tasks > 1024 {
        return;
    }
    let options = RunOptions { modes: Some(vec![Mode::Plain]), ..RunOptions::default() };
    let _ = rollback_abilities::scenario::run(&s, &options);
}

/// A rejoin-protocol message with field values read from `b`: any kind, attempt, slot, frame
/// near `current`, size, digest, member list, nonce and chunk, and a claim proof or an offer's
/// signature made with member 1's own key (`identity`: a dishonest member), made up, or empty.
fn rejoin_message(
    b: &mut Bytes<'_>,
    current: i32,
    identity: &rollback_abilities::session::Identity,
) -> rollback_abilities::session::rejoin::RejoinMsg {
    use rollback_abilities::session::rejoin::{Claim, RejoinMsg, WireAddress, sign_offer};
    let frame = |b: &mut Bytes<'_>| current.saturating_add(i32::from(b.u8() as i8)).max(0) as u32;
    // Attempts are small numbers in practice: mostly a few, sometimes anything.
    let attempt = |b: &mut Bytes<'_>| match b.u8() % 4 {
        0 => b.u64(),
        n => u64::from(n) << 16 | u64::from(b.u8() % 4),
    };
    let slots = |b: &mut Bytes<'_>| -> Vec<u16> {
        (0..b.u8() % 6).map(|_| u16::from(b.u8() % 5)).collect()
    };
    let channel = |b: &mut Bytes<'_>| u32::from(b.u8() % 4);
    let nonce = |b: &mut Bytes<'_>| {
        let mut n = [0u8; 16];
        b.fill(&mut n);
        n
    };
    // A slot's address, a stranger's, or bytes that are no address (too long, too).
    let address = |b: &mut Bytes<'_>| match b.u8() % 4 {
        0 => {
            let mut at = vec![0u8; usize::from(b.u8() % 40)];
            b.fill(&mut at);
            at
        }
        _ => PeerAddr(u16::from(b.u8() % 7)).to_wire(),
    };
    match b.u8() % 12 {
        0 => RejoinMsg::Join {
            slot: u16::from(b.u8() % 5),
            content_hash: b.u64(),
            hooks_hash: b.u64(),
            snapshot_len: b.u64() as u32,
        },
        1 if b.u8().is_multiple_of(2) => {
            RejoinMsg::Challenge { slot: u16::from(b.u8() % 5), nonce: nonce(b) }
        }
        1 => {
            let claim = Claim {
                slot: u16::from(b.u8() % 5),
                nonce: nonce(b),
                content_hash: b.u64(),
                hooks_hash: b.u64(),
                snapshot_len: b.u64() as u32,
            };
            let proof = match b.u8() % 3 {
                0 => claim.prove(identity),
                1 => {
                    let mut p = vec![0u8; usize::from(b.u8() % 80)];
                    b.fill(&mut p);
                    p
                }
                _ => Vec::new(),
            };
            RejoinMsg::Claim { slot: claim.slot, nonce: claim.nonce, proof }
        }
        2 if b.u8().is_multiple_of(2) => {
            let (attempt, joiner) = (attempt(b), u16::from(b.u8() % 5));
            RejoinMsg::Pause { attempt, joiner, at: address(b) }
        }
        2 => RejoinMsg::Paused {
            attempt: attempt(b),
            channel: channel(b),
            out: slots(b),
            last_input: frame(b),
        },
        3 if b.u8().is_multiple_of(2) => RejoinMsg::Busy { attempt: attempt(b) },
        3 => RejoinMsg::Coordinator { slot: u16::from(b.u8() % 5), at: address(b) },
        4 => RejoinMsg::Switch { attempt: attempt(b), frame: frame(b) },
        5 => RejoinMsg::Captured { attempt: attempt(b), frame: frame(b), checksum: b.u64() },
        6 => {
            let (attempt, channel, frame) = (attempt(b), channel(b), frame(b));
            let (len, digest, checksum) = (b.u64() as u32, b.u64(), b.u64());
            let members = slots(b);
            let (content_hash, hooks_hash) = (b.u64(), b.u64());
            // An address per member (sometimes one too many), and the joiner's.
            let named = members.len() + usize::from(b.u8().is_multiple_of(8));
            let addrs = (0..named).map(|_| address(b)).collect();
            let at = address(b);
            let offer = RejoinMsg::Offer {
                attempt,
                channel,
                frame,
                len,
                digest,
                checksum,
                members,
                content_hash,
                hooks_hash,
                addrs,
                at,
                nonce: nonce(b),
                signature: Vec::new(),
            };
            // Signed by member 1 for some joiner, made up, or unsigned.
            match b.u8() % 3 {
                0 => sign_offer(offer, u16::from(b.u8() % 5), identity),
                1 => {
                    let mut o = offer;
                    if let RejoinMsg::Offer { signature, .. } = &mut o {
                        signature.resize(usize::from(b.u8() % 80), 0);
                        b.fill(signature);
                    }
                    o
                }
                _ => offer,
            }
        }
        7 => {
            let mut bytes = vec![0u8; usize::from(b.u8())];
            b.fill(&mut bytes);
            RejoinMsg::Chunk { attempt: attempt(b), index: u32::from(b.u8() % 8), bytes }
        }
        8 => {
            RejoinMsg::Have { attempt: attempt(b), chunks: u32::from(b.u8()), held: b.u64() as u32 }
        }
        9 => RejoinMsg::Loaded { attempt: attempt(b) },
        10 => RejoinMsg::Go {
            attempt: attempt(b),
            channel: channel(b),
            frame: frame(b),
            members: slots(b),
        },
        _ => RejoinMsg::Abort { attempt: attempt(b) },
    }
}

/// Datagrams from a hostile peer fed into a live match: a 3-player match of the duel over the
/// emulated network, every peer behind a [`GuardedSocket`](rollback_abilities::session::GuardedSocket); each
/// tick the data says what the attacker, on player 1's address, sends to player 0 — raw bytes as
/// a UDP datagram would carry them, or input, checksum, quality, acknowledgement, keep-alive and
/// departure-protocol messages with any field values and player 1's real session number,
/// rejoin-protocol messages on the side channel (raw bytes, or any message with any fields,
/// slot claims signed with member 1's own key among them), bytes after the late spectators'
/// prefix (player 0 admits any spectator),
/// relays of input runs signed with player 1's key (made up, a second input for a frame it sent,
/// or with the signature changed) — mostly sealed with player 1's own key (a dishonest member),
/// sometimes unsealed (an off-path attacker on its address), sealed then altered, or sealed and
/// sent twice (the last three must be dropped unread); or bytes decoded as stored equivocation
/// evidence. Then it goes quiet for 300 ticks. No peer may panic, GGRS
/// must never fail inside one, every peer must keep advancing once the attacker is quiet, every
/// equivocation reported must verify under the named member's identity, and
/// players 0 and 2 must confirm the same frames up to the first departure either saw, or both
/// be told of the difference (a desync report: the attacker fed player 0 other inputs for
/// player 1).
pub fn session(data: &[u8]) {
    let mut b = Bytes::new(data);
    let mut m = hostile_match(&mut b);
    let mut attacker = m.network().socket(PeerAddr(1));
    for tick in 0..120u32 {
        attack(&m, &mut attacker, &mut b);
        if let Err(e) = m.tick(scripted_input, &mut [], |_| {}) {
            panic!("tick {tick}: {e}");
        }
    }
    // Then the attacker goes quiet: every peer keeps advancing (a departure the attacker
    // provoked ends within two departure times: the wait, then the agreement).
    let before: Vec<Frame> = m.peers().iter().map(|p| p.runner.world().next_frame()).collect();
    for tick in 0..300u32 {
        if let Err(e) = m.tick(scripted_input, &mut [], |_| {}) {
            panic!("quiet tick {tick}: {e}");
        }
    }
    for (p, b) in m.peers().iter().zip(&before) {
        let now = p.runner.world().next_frame();
        assert!(now > b + 100, "player {} stopped advancing at frame {now}", p.handle);
    }
    equivocations_verify(&m);
    confirmed_frames_agree(&m);
}

/// The match of the [`session`] target: 3 players of the duel over the emulated network (0, 10
/// or 20 % loss, as the first byte says), every peer recording, synchronised.
fn hostile_match(b: &mut Bytes<'_>) -> LocalMatch<Duel> {
    let loss = u32::from(b.u8() % 3) * 10;
    let config = MatchConfig {
        players: 3,
        conditions: NetConditions { loss_percent: loss, jitter_ms: 20, ..NetConditions::PERFECT },
        departure_ticks: 60,
        ..MatchConfig::default()
    };
    let Ok(mut m) = LocalMatch::<Duel>::new(config, |_| duel::new_world(3, 3)) else {
        panic!("a 3-player duel match builds");
    };
    for p in m.peers_mut() {
        p.runner.record(0);
    }
    // Player 0 hosts late spectators, so what the attacker sends after their prefix reaches
    // the host's decoder and its admission.
    m.peers_mut()[0].admit_spectators(SpectatorPolicy::open(2));
    if let Err(e) = m.synchronize() {
        panic!("the match synchronises: {e}");
    }
    m
}

/// The players' input in the [`session`] target: buttons cycling with the frame, a different
/// phase per player.
fn scripted_input(p: usize, f: Frame, _: &World<Duel>) -> duel::Input {
    duel::Input { buttons: ((f + p as u32) % 5) as u8, axis: 0 }
}

/// One tick of the attack in the [`session`] target: up to three messages, as `b` says, from
/// player 1's address to player 0 (none once `b` is exhausted).
fn attack(m: &LocalMatch<Duel>, attacker: &mut EmulatedSocket, b: &mut Bytes<'_>) {
    let current = m.peers()[0].runner.world().next_frame() as i32;
    let magic = m.peers()[0].guard.remote_magic(&PeerAddr(1)).unwrap_or(0);
    let sends = if b.exhausted() { 0 } else { b.u8() % 4 };
    for _ in 0..sends {
        let msg = match b.u8() % 8 {
            0 => raw_datagram(m, attacker, b, current),
            1..=3 => Some(forged_input(b, magic, current)),
            4 => Some(forge::checksum(magic, near(b, current), u128::from(b.u64()))),
            5 if b.u8().is_multiple_of(2) => Some(forge::quality(
                magic,
                i16::from(b.u8() as i8).saturating_mul(300),
                u128::from(b.u64()),
            )),
            // A reply whose stamp this peer may or may not have sent.
            5 => Some(forge::quality_reply(magic, u128::from(b.u64()))),
            6 => Some(forge::ack(magic, near(b, current))),
            _ => guard_message(m, b, magic, current),
        };
        if let Some(msg) = msg {
            send_as_member(m, attacker, b, &msg);
        }
    }
}

/// A frame within 128 of `current`, as `b` says.
fn near(b: &mut Bytes<'_>, current: i32) -> i32 {
    current + i32::from(b.u8() as i8)
}

/// Raw bytes as a UDP datagram would carry them: the GGRS message they decode to, if any; the
/// same bytes go to player 0 on the rejoin protocol's side channel.
fn raw_datagram(
    m: &LocalMatch<Duel>,
    attacker: &EmulatedSocket,
    b: &mut Bytes<'_>,
    current: i32,
) -> Option<Message> {
    let len = usize::from(b.u8());
    let mut raw = vec![0u8; len];
    b.fill(&mut raw);
    // The same bytes on the side channel: raw, read (first byte odd) as the fields of a
    // well-formed rejoin message, or (first byte 2 modulo 4) after the late spectators'
    // prefix, for player 0's spectator host to decode.
    let side = match raw.split_first() {
        Some((first, rest)) if first % 2 == 1 => {
            let identity = m.peers()[1].identity();
            rejoin_message(&mut Bytes::new(rest), current, identity).encode()
        }
        Some((first, rest)) if first % 4 == 2 => [&late_spectator::MAGIC[..], rest].concat(),
        _ => raw.clone(),
    };
    attacker.send_raw(PeerAddr(0), side);
    message_from_bytes(&raw)
}

/// An input message with any connection statuses, frames and bytes.
fn forged_input(b: &mut Bytes<'_>, magic: u16, current: i32) -> Message {
    let n = usize::from(b.u8() % 5);
    let statuses: Vec<(bool, i32)> =
        (0..n).map(|_| (b.u8().is_multiple_of(4), near(b, current))).collect();
    let len = usize::from(b.u8() % 24);
    let mut bytes = vec![0u8; len];
    b.fill(&mut bytes);
    let start = near(b, current);
    forge::input(magic, &statuses, b.u8().is_multiple_of(16), start, near(b, current), bytes)
}

/// A message beside GGRS's own: the guards' departure protocol as a liar would speak it, a
/// keep-alive or an introduction; or stored equivocation evidence read back (then `None`: nothing
/// is sent).
fn guard_message(
    m: &LocalMatch<Duel>,
    b: &mut Bytes<'_>,
    magic: u16,
    current: i32,
) -> Option<Message> {
    match b.u8() % 7 {
        // The guards' departure protocol, as a liar would speak it.
        0 => Some(forge::depart(magic, u16::from(b.u8() % 4), near(b, current))),
        1 => {
            let frames = forged_frames(b);
            Some(forge::relay(magic, u16::from(b.u8() % 4), near(b, current), frames))
        }
        2 => {
            let mut raw = vec![0u8; usize::from(b.u8() % 64)];
            b.fill(&mut raw);
            Some(forge::guard_bytes(magic, raw))
        }
        3 => Some(forge::keep_alive(b.u64() as u16)),
        4 => Some(signed_relay(m, b, magic, current)),
        5 => Some(introduction(m, b)),
        _ => {
            stored_evidence(m, b);
            None
        }
    }
}

/// Up to 39 frames of input, all of one length (0 to 3 bytes).
fn forged_frames(b: &mut Bytes<'_>) -> Vec<Vec<u8>> {
    let n = usize::from(b.u8() % 40);
    let len = usize::from(b.u8() % 4);
    (0..n)
        .map(|_| {
            let mut f = vec![0u8; len];
            b.fill(&mut f);
            f
        })
        .collect()
}

/// A run of input signed with member 1's own key, relayed as some player's: genuine-looking for
/// player 1 (made up, or a second input for a frame it sent: an equivocation), a forgery for
/// another, or with a signature or chain head changed.
fn signed_relay(m: &LocalMatch<Duel>, b: &mut Bytes<'_>, magic: u16, current: i32) -> Message {
    let frames = forged_frames(b);
    let mut before = [0u8; 32];
    if b.u8().is_multiple_of(2) {
        b.fill(&mut before);
    }
    let first = near(b, current);
    let mut run = SignedInputs::sign(m.peers()[1].identity(), first, before, frames);
    if b.u8().is_multiple_of(4) {
        run.signature[usize::from(b.u8()) % 64] ^= 1;
    }
    let out: &[u16] = match b.u8() % 3 {
        0 => &[],
        1 => &[1],
        _ => &[2],
    };
    forge::relay_signed(magic, out, u16::from(b.u8() % 4), &run)
}

/// An introduction (what peers started without keys say first): some identity, nonce and
/// echoes, or member 1's own identity.
fn introduction(m: &LocalMatch<Duel>, b: &mut Bytes<'_>) -> Message {
    let identity = if b.u8().is_multiple_of(2) {
        m.peers()[1].identity().public()
    } else {
        let mut agree = [0u8; 32];
        let mut verify = [0u8; 32];
        b.fill(&mut agree);
        b.fill(&mut verify);
        PublicIdentity { agree, verify }
    };
    let mut nonce = [0u8; 16];
    b.fill(&mut nonce);
    let echoes: Vec<[u8; 16]> = (0..b.u8() % 6)
        .map(|_| {
            let mut e = [0u8; 16];
            b.fill(&mut e);
            e
        })
        .collect();
    forge::introduction(identity, nonce, &echoes)
}

/// Stored evidence, as a game would read it back: decoding returns a typed error or evidence
/// whose bytes round-trip, and checking it returns.
fn stored_evidence(m: &LocalMatch<Duel>, b: &mut Bytes<'_>) {
    let mut raw = vec![0u8; usize::from(b.u8())];
    b.fill(&mut raw);
    if let Ok(e) = Equivocation::from_bytes(&raw) {
        let _ = e.verify(&m.peers()[1].identity().public());
        assert_eq!(Equivocation::from_bytes(&e.to_bytes()), Ok(e));
    }
}

/// Sends `msg` to player 0 from player 1's address: mostly as member 1 itself (sealed with its
/// key: the guard reads it); else as an off-path attacker from its address (unsealed), or sealed
/// then altered, or a sealed datagram sent twice (dropped unread, counting toward nobody).
fn send_as_member(
    m: &LocalMatch<Duel>,
    attacker: &mut EmulatedSocket,
    b: &mut Bytes<'_>,
    msg: &Message,
) {
    let victim = PeerAddr(0);
    let sealed = m.peers()[1].guard.seal(msg, &victim);
    match b.u8() % 8 {
        0 => attacker.send_to(msg, &victim),
        1 => {
            let mut raw = message_to_bytes(&sealed);
            if !raw.is_empty() {
                let at = usize::from(b.u8()) % raw.len();
                raw[at] ^= b.u8() | 1;
            }
            if let Some(altered) = message_from_bytes(&raw) {
                attacker.send_to(&altered, &victim);
            }
        }
        2 => {
            attacker.send_to(&sealed, &victim);
            attacker.send_to(&sealed, &victim);
        }
        _ => attacker.send_to(&sealed, &victim),
    }
}

/// Every equivocation a peer of `m` reported names a member and proves it under that member's
/// identity.
fn equivocations_verify(m: &LocalMatch<Duel>) {
    for p in m.peers() {
        for e in p.events() {
            if let SessionEvent::Equivocation { peer, evidence } = e {
                let named =
                    m.peers().iter().find(|q| format!("{:?}", PeerAddr(q.handle as u16)) == *peer);
                let Some(named) = named else { panic!("an equivocation names no member: {peer}") };
                assert!(
                    evidence.verify(&named.identity().public()),
                    "player {}'s evidence against {peer} does not verify: {evidence}",
                    p.handle
                );
            }
        }
    }
}

/// Players 0 and 2 of `m` confirmed the same frames up to the first departure either of them
/// saw (the attacker can make player 0 drop player 1, or the peers drop each other: in P2P any
/// peer can end another's participation), or both were told they differ.
fn confirmed_frames_agree(m: &LocalMatch<Duel>) {
    let sums = |p: usize| -> Vec<u64> {
        m.peers()[p]
            .runner
            .recorder()
            .map_or(Vec::new(), |r| r.replay().frames.iter().map(|f| f.checksum).collect())
    };
    let split = [0, 2]
        .iter()
        .flat_map(|&p| m.peers()[p].events())
        .filter_map(|e| match e {
            SessionEvent::Left { last_frame, .. } => Some(last_frame.map_or(0, |f| f as usize + 1)),
            _ => None,
        })
        .min();
    let (a, c) = (sums(0), sums(2));
    let n = a.len().min(c.len()).min(split.unwrap_or(usize::MAX));
    // An attacker holding player 1's session number can feed player 0 other inputs for player 1
    // than player 2 receives (equivocation, which no peer-to-peer scheme without signatures
    // prevents): then the two must be told, by desync detection.
    if a[..n] != c[..n] {
        let told =
            |p: usize| m.peers()[p].events().iter().any(|e| matches!(e, SessionEvent::Desync(_)));
        assert!(told(0) && told(2), "players 0 and 2 confirmed different frames, untold");
    }
}

/// Network input bytes into `step`: the first byte picks a game (duel with 2–4 fighters, the
/// reference arena, the scenario game); then, frame after frame, a byte gives the number of
/// inputs (fewer or more than the players), a byte per input its GGRS status, and the raw bytes
/// become the game's `Pod` input. Stepping must never panic.
pub fn step_inputs(data: &[u8]) {
    let mut b = Bytes::new(data);
    match b.u8() % 5 {
        0..=2 => {
            let n = 2 + usize::from(data.first().copied().unwrap_or(0) % 3);
            let mut w = duel::new_world(b.u64(), n);
            feed::<Duel>(&mut w, &mut b);
        }
        3 => {
            let mut a = Arena::new(ArenaSpec { entities: 4, ..ArenaSpec::default() });
            feed::<ArenaGame>(&mut a.world, &mut b);
        }
        _ => {
            let mut w = fuzz_world(b.u64());
            feed::<ScenarioGame>(&mut w, &mut b);
        }
    }
}

fn feed<G: Game>(w: &mut World<G>, b: &mut Bytes<'_>) {
    let mut inputs: Vec<(G::Input, InputStatus)> = Vec::new();
    for _ in 0..600 {
        if b.exhausted() {
            break;
        }
        inputs.clear();
        let n = usize::from(b.u8() % 8);
        for _ in 0..n {
            let status = match b.u8() % 3 {
                0 => InputStatus::Confirmed,
                1 => InputStatus::Predicted,
                _ => InputStatus::Disconnected,
            };
            inputs.push((b.pod::<G::Input>(), status));
        }
        w.step(&inputs);
    }
}

/// A game the oracles can run: a world builder and per-frame inputs.
trait Subject: Game {
    fn build(seed: u64, players: usize) -> World<Self>;
}

impl Subject for Duel {
    fn build(seed: u64, players: usize) -> World<Duel> {
        duel::new_world(seed, players)
    }
}

impl Subject for ArenaGame {
    fn build(seed: u64, _players: usize) -> World<ArenaGame> {
        Arena::new(ArenaSpec { entities: 4, seed, ..ArenaSpec::default() }).world
    }
}

impl Subject for ScenarioGame {
    fn build(seed: u64, _players: usize) -> World<ScenarioGame> {
        fuzz_world(seed)
    }
}

/// Per-frame inputs from the fuzz bytes: each player's input changes when a control byte has
/// its high bit set (then new raw bytes follow) and is held otherwise, so buttons are held for
/// stretches as real players hold them.
fn input_table<G: Game>(b: &mut Bytes<'_>, frames: usize, players: usize) -> Vec<Vec<G::Input>> {
    let mut current = vec![G::Input::default(); players];
    let mut table = Vec::with_capacity(frames);
    for _ in 0..frames {
        for c in current.iter_mut() {
            if b.u8() & 0x80 != 0 {
                *c = b.pod::<G::Input>();
            }
        }
        table.push(current.clone());
    }
    table
}

/// The determinism oracle: arbitrary inputs for up to 200 frames of a game (duel, arena,
/// scenario game), stepped straight and under [`RollbackDriver`](rollback_abilities::session::RollbackDriver) with a random depth of
/// `1..=max_depth` (both from the bytes) after every frame: every frame's checksum, and the
/// final snapshot bytes, equal the straight run's.
pub fn determinism(data: &[u8]) {
    let mut b = Bytes::new(data);
    let game = b.u8();
    match game % 3 {
        0 => determinism_on::<Duel>(&mut b, 2 + usize::from(game / 3 % 3)),
        1 => determinism_on::<ArenaGame>(&mut b, 2),
        _ => determinism_on::<ScenarioGame>(&mut b, 2),
    }
}

fn determinism_on<G: Subject>(b: &mut Bytes<'_>, players: usize) {
    let max_depth = 1 + u32::from(b.u8() % 16);
    let seed = b.u64();
    let frames = 8 + usize::from(b.u8()) % 192;
    let table = input_table::<G>(b, frames, players);
    // The arena starts after its warm-up frames: the table is indexed from the first frame.
    let start = G::build(seed, players).next_frame();
    let r = Determinism { max_depth, seed }.check(
        || G::build(seed, players),
        frames as u32,
        &mut |frame, buf| buf.extend_from_slice(&table[(frame - start) as usize]),
        &mut |_| {},
    );
    if let Err(failure) = r {
        panic!("rollback changed the simulation: {failure}");
    }
}

/// The presenter oracle: a duel (or the scenario game) whose remote players' inputs arrive late
/// by a lag of 0–7 frames that changes every frame (predicted meanwhile by repeating their last
/// confirmed input, as GGRS does), with extra rollbacks of 0–7 frames mixed in, all from the
/// bytes. After every batch a [`CueDirector`] reconciles into a [`PresenterLog`]. The log keeps
/// the presenter contract ([`PresenterLog::check_invariants`]: no double play, every cancel
/// matches a play, persistent cues balanced), and once everything is confirmed its reconciled
/// view and the final checksum equal the straight run's — persistent instances born and gone
/// inside one rollback batch included, which are presented late once confirmed (late, never
/// lost: `docs/cues.md`, section 5).
pub fn presenter(data: &[u8]) {
    let mut b = Bytes::new(data);
    let game = b.u8();
    match game % 2 {
        0 => presenter_on::<Duel>(&mut b, 2 + usize::from(game / 2 % 3)),
        _ => presenter_on::<ScenarioGame>(&mut b, 2),
    }
}

/// The prediction window of [`presenter`].
const WINDOW: usize = 8;

fn presenter_on<G: Subject>(b: &mut Bytes<'_>, players: usize) {
    let seed = b.u64();
    let frames = 8 + usize::from(b.u8()) % 240;
    let table = input_table::<G>(b, frames, players);
    let schedule: Vec<u8> = (0..frames).map(|_| b.u8()).collect();

    // The straight run: every frame confirmed at once.
    let mut plain = G::build(seed, players);
    // Frame numbers of the table's rows (the duel and the scenario game start at frame 0).
    let base = plain.next_frame();
    let fr = |i: usize| base + i as Frame;
    let mut director = CueDirector::new().with_log_capacity(0);
    let mut plain_log = PresenterLog::default();
    for (f, inputs) in table.iter().enumerate() {
        plain.step(inputs);
        director.ingest(plain.output());
        plain_log.at(fr(f));
        director.reconcile(&plain, Some(fr(f)), &mut plain_log);
    }
    if let Err(e) = plain_log.check_invariants() {
        panic!("straight run broke the presenter contract: {e}");
    }

    // Player 0 is local; the others' inputs are known for frames before `known`.
    let predicted = |f: usize, known: usize| -> Vec<G::Input> {
        (0..players)
            .map(|p| {
                if f < known || p == 0 {
                    table[f][p]
                } else if known > 0 {
                    table[known - 1][p]
                } else {
                    G::Input::default()
                }
            })
            .collect()
    };
    let mut w = G::build(seed, players);
    let mut ring = SnapshotRing::new(&w, WINDOW + 2);
    let mut director = CueDirector::new().with_log_capacity(0);
    let mut log = PresenterLog::default();
    let mut used: Vec<Vec<G::Input>> = Vec::with_capacity(frames);
    let mut known = 0usize;
    let simulate = |w: &mut World<G>,
                    ring: &mut SnapshotRing<G>,
                    used: &mut Vec<Vec<G::Input>>,
                    director: &mut CueDirector,
                    f: usize,
                    known: usize| {
        ring.save(w);
        let inputs = predicted(f, known);
        w.step(&inputs);
        director.ingest(w.output());
        if f < used.len() {
            used[f] = inputs;
        } else {
            used.push(inputs);
        }
    };
    for (f, s) in schedule.iter().enumerate().take(frames) {
        simulate(&mut w, &mut ring, &mut used, &mut director, f, known);
        let old_known = known;
        let lag = usize::from(s % WINDOW as u8);
        known = known.max((f + 1).saturating_sub(lag));
        let extra = usize::from((s >> 3) % WINDOW as u8);
        let mispredicted = (old_known..known).find(|g| used[*g] != table[*g]);
        let extra_from = (extra > 0).then(|| (f + 1).saturating_sub(extra).max(old_known));
        let from = match (mispredicted, extra_from) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(from) = from {
            assert!(ring.load(&mut w, fr(from)), "the ring lost frame {from}");
            director.rewound_to(fr(from));
            for g in from..=f {
                simulate(&mut w, &mut ring, &mut used, &mut director, g, known);
            }
        }
        log.at(fr(f));
        director.reconcile(&w, known.checked_sub(1).map(fr), &mut log);
    }
    // Everything arrives.
    let last = frames - 1;
    if let Some(from) = (known..frames).find(|g| used[*g] != table[*g]) {
        assert!(ring.load(&mut w, fr(from)), "the ring lost frame {from}");
        director.rewound_to(fr(from));
        for g in from..frames {
            simulate(&mut w, &mut ring, &mut used, &mut director, g, frames);
        }
    }
    log.at(fr(last));
    director.reconcile(&w, Some(fr(last)), &mut log);
    if let Err(e) = log.check_invariants() {
        panic!("presenter contract broken under rollback: {e}");
    }
    assert_eq!(w.checksum(), plain.checksum(), "final checksum differs from the straight run");
    let (got, want) = (log.reconciled(), plain_log.reconciled());
    if got != want {
        let key = want
            .iter()
            .find(|c| !got.contains(c))
            .or_else(|| got.iter().find(|c| !want.contains(c)))
            .map(|c| c.key());
        let calls = |l: &PresenterLog| -> Vec<String> {
            l.calls
                .iter()
                .filter(|(_, c)| Some(c.key()) == key)
                .map(|(at, c)| format!("@{at} {c:?}"))
                .collect()
        };
        panic!(
            "reconciled cue log differs at {key:?}: straight run {:#?}, under rollback {:#?}",
            calls(&plain_log),
            calls(&log)
        );
    }
}

/// Seed inputs for a target's corpus: valid files and well-formed byte strings that reach
/// deep into each target (the fuzzer mutates from there). `fuzz/README.md` says how the
/// committed corpora were made from these.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    match target {
        "session" => vec![
            Vec::new(),
            // One RLE byte [0x80] with a continuation bit and nothing after it, every tick.
            [0u8].iter().chain([1u8, 1, 1, 1, 1, 0x80].iter().cycle().take(600)).copied().collect(),
            // Forged "player 2 left" notices, checksum lies and bursts of raw bytes.
            (0..900u32).map(|i| (i.wrapping_mul(0x9E37_79B9) >> 24) as u8).collect(),
            // Every kind of rejoin message on the side channel, three of each with small field
            // values (claims signed with member 1's key among them), one a tick.
            {
                let mut s = vec![0u8];
                for kind in 0..12u8 {
                    for v in 0..3u8 {
                        let mut raw = vec![1, kind, v];
                        raw.extend((0..48u8).map(|i| i.wrapping_mul(29).wrapping_add(kind ^ v)));
                        s.extend([1, 0, raw.len() as u8]);
                        s.extend(raw);
                        s.push(3);
                    }
                }
                s
            },
        ],
        "content" => vec![
            FUZZ_CONTENT.as_bytes().to_vec(),
            duel::CONTENT_RON.as_bytes().to_vec(),
            b"()".to_vec(),
            b"(tags: [\"A.B\", \"A.C\"])".to_vec(),
        ],
        "replay" => {
            let mut out = Vec::new();
            for (players, frames, keyframes) in [(2usize, 24u32, 8u32), (3, 12, 0)] {
                let mut w = duel::new_world(7, players);
                let mut rec = Recorder::new(&w, keyframes);
                for f in 0..frames {
                    let inputs: Vec<duel::Input> =
                        (0..players).map(|p| duel::bot_input(&w, p, f, 3)).collect();
                    w.step(&inputs);
                    let _ = rec.push(f, &inputs, w.checksum());
                    if rec.keyframe_due(w.next_frame()) {
                        rec.keyframe(&w);
                    }
                }
                let bytes = rec.finish().encode();
                out.push([&[0u8][..], &bytes].concat());
                out.push([&[1u8][..], &bytes].concat());
            }
            out
        }
        "scenario" => vec![
            format!(
                "Scenario(name: \"fuzz\", content: Inline(r#\"{FUZZ_CONTENT}\"#), players: 2, \
                 frames: 40, entities: {{ \"a\": (attribute_sets: [\"Vitals\"], abilities: \
                 [(ability: \"Sprint\"), (ability: \"Focus\")], player: 0), \"b\": \
                 (attribute_sets: [\"Vitals\"], player: 1) }}, script: [(frame: 2, do: \
                 Press(player: 0, input: 0)), (frame: 9, do: Tap(player: 0, input: 2)), \
                 (frame: 20, do: Release(player: 0, input: 0))], expect: [(frame: 39, that: \
                 Attribute(on: \"a\", attribute: \"Stamina\", current: 1000))])"
            )
            .into_bytes(),
        ],
        "step_inputs" => vec![
            vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 2, 0, 0x1f, 0x40, 0, 0x04, 0x80],
            vec![3, 2, 0, 0x1f, 1, 0x03, 2, 2, 0, 0xff, 2, 0x10],
            vec![4, 9, 9, 9, 9, 9, 9, 9, 9, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0],
        ],
        "determinism" | "presenter" => {
            let mut out = Vec::new();
            for game in 0u8..3 {
                let mut s = vec![game, 7, 1, 2, 3, 4, 5, 6, 7, 8, 120];
                for f in 0..400u32 {
                    s.push(if f % 5 == 0 { 0x80 } else { 0 });
                    s.push((f * 37 % 256) as u8);
                    s.push((f % 3) as u8);
                }
                out.push(s);
            }
            out
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Bytes, message_from_bytes, rejoin_message};
    use rollback_abilities::session::rejoin::{MAX_ADDRESS_BYTES, RejoinMsg, WireAddress};
    use rollback_abilities::session::{Identity, PeerAddr};

    /// An attempt of the generator's small form: `1 << 16`.
    const ATTEMPT: [u8; 2] = [1, 0];

    /// The generator's bytes of an address: slot-like address `PeerAddr(p)` (`p` < 7).
    fn addr(p: u8) -> Vec<u8> {
        vec![1, p]
    }

    /// Rejoin-message fields ([`rejoin_message`]'s bytes) for the `session` corpus seeds, named
    /// by what they exercise.
    fn seeds() -> Vec<(&'static str, Vec<u8>)> {
        let u64_be = |v: u64| v.to_be_bytes().to_vec();
        // A selective acknowledgement: prefix 2, chunks 3, 5, 8 and 10 held after the hole.
        let have = [vec![8], ATTEMPT.to_vec(), vec![2], u64_be(0b1010_0101)].concat();
        // A Pause (the guard byte even) naming slot 1 at an address no slot started at.
        let pause = [vec![2, 0], ATTEMPT.to_vec(), vec![1], addr(5)].concat();
        // An offer to members 0 and 1, member 1 at a new address, the joiner at another.
        let offer = |addrs: Vec<u8>| {
            [
                vec![6],
                ATTEMPT.to_vec(),
                vec![1, 0],
                u64_be(2000),
                u64_be(7),
                u64_be(9),
                vec![2, 0, 1],
                u64_be(11),
                u64_be(12),
                vec![1],
                addrs,
            ]
            .concat()
        };
        let moved = offer([addr(0), addr(5), addr(6)].concat());
        // The same offer with one address longer than any address.
        let long = offer([addr(0), vec![0, 33], vec![0xA5; 33], addr(6)].concat());
        // A member's word (the guard byte odd) that coordinator 0 is at a new address.
        let redirect = [vec![3, 1, 0], addr(5)].concat();
        vec![
            ("seed-rejoin-coordinator-at-a-new-address", redirect),
            ("seed-rejoin-have-with-holes", have),
            ("seed-rejoin-pause-at-a-new-address", pause),
            ("seed-rejoin-offer-names-a-moved-member", moved),
            ("seed-rejoin-offer-with-an-oversized-address", long),
        ]
    }

    /// A `session` input: no loss, then one tick of one raw datagram whose first byte (odd)
    /// makes the side channel read the rest as a rejoin message's fields; then quiet.
    fn input(fields: &[u8]) -> Vec<u8> {
        let raw = [&[1u8][..], fields].concat();
        [vec![0, 1, 0, raw.len() as u8], raw].concat()
    }

    /// The `session` corpus seeds exercising the rejoin messages' newer fields are made here:
    /// each decodes to the message it is named for, and the committed file holds its bytes.
    /// `WRITE_FUZZ_SEEDS=1 cargo test -p rollback_abilities_kit --lib fuzz::tests` writes them.
    #[test]
    fn session_rejoin_seeds_are_committed() {
        let identity = Identity::generate().unwrap();
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/session");
        for (name, fields) in seeds() {
            let raw = [&[1u8][..], &fields].concat();
            assert!(message_from_bytes(&raw).is_none(), "{name}: also a GGRS message");
            let msg = rejoin_message(&mut Bytes::new(&fields), 100, &identity);
            let wire = msg.encode();
            match (name, &msg, RejoinMsg::decode(&wire)) {
                (_, RejoinMsg::Have { chunks: 2, held: 0b1010_0101, .. }, Ok(_)) => {}
                (_, RejoinMsg::Coordinator { slot: 0, at }, Ok(_)) => {
                    assert_eq!(at, &PeerAddr(5).to_wire());
                }
                (_, RejoinMsg::Pause { joiner: 1, at, .. }, Ok(_)) => {
                    assert_eq!(at, &PeerAddr(5).to_wire());
                }
                (
                    "seed-rejoin-offer-names-a-moved-member",
                    RejoinMsg::Offer { addrs, at, .. },
                    Ok(_),
                ) => {
                    assert_eq!(addrs, &[PeerAddr(0).to_wire(), PeerAddr(5).to_wire()]);
                    assert_eq!(at, &PeerAddr(6).to_wire());
                }
                (_, RejoinMsg::Offer { addrs, .. }, Err(_)) => {
                    assert!(addrs[1].len() > MAX_ADDRESS_BYTES);
                }
                other => panic!("{name}: {other:?}"),
            }
            let path = dir.join(name);
            if std::env::var_os("WRITE_FUZZ_SEEDS").is_some() {
                std::fs::write(&path, input(&fields)).unwrap();
            }
            assert_eq!(std::fs::read(&path).ok(), Some(input(&fields)), "{name}");
        }
    }
}
