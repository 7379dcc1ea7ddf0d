//! Replays: confirmed inputs plus the initial state, per-frame checksums and keyframe
//! snapshots, in a versioned binary file with an integrity check (F-NET-08, `docs/replays.md`).
//!
//! # File format (version 7, little-endian)
//!
//! ```text
//! magic "RBAREPLY" | u32 version | u32 header length | header (RON text, see ReplayHeader)
//! | u64 initial snapshot length | initial snapshot bytes (the state before the first frame)
//! | u32 frame count | per frame, from the first on: inputs (players × input size bytes)
//!   + input statuses (players bytes: 0 confirmed, 1 disconnected, 2 predicted)
//!   + u64 checksum after the frame
//! | u32 keyframe count | per keyframe: u32 frame + u64 length + snapshot bytes (state before that frame)
//! | u64 xxh3-64 of every byte before it
//! ```
//!
//! Versions differ only in the snapshot layout inside the initial state and the keyframes, so
//! a file of another version is refused rather than misread: version 2 (0.1 after the
//! `ActiveEffect` hot/cold split) added the `effect_timers` and `effect_origins` columns, the
//! `entity_wake` column and a shorter entity record; version 3 made `effect_origins` a
//! world-wide pool (records only for effects not applied by their target to itself), with the
//! pool's length in the header and each `ActiveEffect` pointing at its record; version 4 gave
//! the stored-spec pool a high-water mark in the header (its last word, zero before), past
//! which the pool's records must be zero; version 5 added the extension header and the
//! `entity_time` (hitstop, time scale) and `input_buffers` columns; version 6 added each
//! frame's input statuses (what [`World::input_status`] reads in the step: a game may branch
//! on a player being disconnected); version 7 added the header's `first_frame`: a replay
//! recorded by a peer that joined a running match starts at the frame it joined at, its
//! initial state the state before that frame. Version 5 and 6 files are still read, starting
//! at frame 0 (version 5 with every status `Confirmed`, what they replayed with).
//!
//! A replay is bound to its content (hash), hooks (signature hash), world configuration,
//! input size and crate version; loading it anywhere else is a typed error, as are truncated,
//! corrupted and foreign files.

use crate::bytes::Reader;
use crate::content::error::ron_message;
use crate::debug::{DumpError, FieldDiff, WorldDump, diff_dumps};
use crate::num::Frame;
use crate::world::{FrameInputs, Game, InputStatus, SnapshotError, World, WorldConfig};
use core::fmt;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The magic bytes.
pub const MAGIC: &[u8; 8] = b"RBAREPLY";
/// The format version this build writes (it reads this one and [`OLDEST_READABLE_VERSION`]
/// on).
pub const FORMAT_VERSION: u32 = 7;
/// The oldest format version this build reads: version 5, the same layout without input
/// statuses (read as every player `Confirmed`) and starting at frame 0, as version 6 does.
pub const OLDEST_READABLE_VERSION: u32 = 5;

/// Why a replay cannot be read, written or used.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplayError {
    /// Reading or writing the file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's kind of failure.
        kind: std::io::ErrorKind,
        /// The operating system's message.
        message: String,
    },
    /// The file is empty (0 bytes).
    Empty,
    /// The file does not start with the replay magic bytes.
    BadMagic,
    /// The file was written by another format version.
    UnsupportedVersion {
        /// The file's version.
        found: u32,
    },
    /// The file ends before a part it announces.
    Truncated {
        /// The part being read.
        what: &'static str,
        /// Where the file ends: its length in bytes.
        offset: usize,
    },
    /// The integrity check failed (the file was altered or damaged).
    Corrupted {
        /// The checksum stored in the file.
        stored: u64,
        /// The checksum of the bytes.
        computed: u64,
    },
    /// The header (RON text) is not UTF-8.
    HeaderNotUtf8,
    /// The header is not a valid replay header.
    BadHeader {
        /// The 1-based line in the header text.
        line: usize,
        /// The 1-based column in the header text.
        col: usize,
        /// What is wrong.
        message: String,
    },
    /// A part announces a length this platform cannot hold.
    TooLarge {
        /// The part.
        what: &'static str,
        /// The announced length in bytes.
        len: u64,
    },
    /// Bytes follow the end of a well-formed replay.
    TrailingBytes {
        /// The part they follow.
        after: &'static str,
        /// How many.
        count: usize,
    },
    /// The replay was recorded with other content.
    ContentMismatch {
        /// The replay's content hash.
        replay: u64,
        /// This content's hash.
        content: u64,
    },
    /// The replay was recorded with other registered functions.
    HooksMismatch,
    /// The replay's inputs have another size than this game's.
    InputSizeMismatch {
        /// Bytes per player input in the replay.
        replay: u32,
        /// Bytes per player input in this game.
        game: u32,
    },
    /// The replay was recorded with another world configuration (capacities or players).
    ConfigMismatch {
        /// The replay's configuration.
        replay: WorldConfig,
        /// This world's.
        world: WorldConfig,
    },
    /// A snapshot in the replay (the initial state, or the keyframe of a frame) cannot be
    /// loaded into this world.
    Snapshot {
        /// The keyframe's frame, or `None` for the initial state.
        keyframe: Option<Frame>,
        /// Why.
        error: SnapshotError,
    },
    /// A keyframe cannot be compared with the re-simulated state of its frame.
    Keyframe {
        /// The keyframe's frame.
        frame: Frame,
        /// Why.
        error: DumpError,
    },
    /// A frame's input status byte is none of the recorded statuses.
    BadInputStatus {
        /// The frame.
        frame: Frame,
        /// The player.
        player: usize,
        /// The byte.
        value: u8,
    },
    /// Frames in a recording must be consecutive.
    FrameGap {
        /// The frame expected.
        expected: Frame,
        /// The frame given.
        got: Frame,
    },
    /// The initial state is not the state before the replay's first frame.
    FirstFrameMismatch {
        /// The header's first frame.
        header: Frame,
        /// The frame the initial state is before.
        state: Frame,
    },
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Io { path, message, .. } => {
                write!(f, "cannot read or write the replay {}: {message}", path.display())
            }
            ReplayError::Empty => write!(f, "the file is empty (0 bytes): not a replay file"),
            ReplayError::BadMagic => write!(
                f,
                "not a rollback_abilities replay (the file does not start with \"RBAREPLY\")"
            ),
            ReplayError::UnsupportedVersion { found } => write!(
                f,
                "replay format version {found} is not supported: this build reads versions {OLDEST_READABLE_VERSION} to {FORMAT_VERSION} (re-record it, or use the crate version that wrote it)"
            ),
            ReplayError::Truncated { what, offset } => {
                write!(
                    f,
                    "the replay ends at byte {offset}, in the middle of its {what} (the file is incomplete)"
                )
            }
            ReplayError::Corrupted { stored, computed } => write!(
                f,
                "the replay's integrity check failed (stored {stored:016x}, computed {computed:016x}): the file was modified or damaged"
            ),
            ReplayError::HeaderNotUtf8 => write!(f, "the replay header is invalid: not UTF-8"),
            ReplayError::BadHeader { line, col, message } => {
                write!(f, "the replay header is invalid: {line}:{col}: {message}")
            }
            ReplayError::TooLarge { what, len } => {
                write!(
                    f,
                    "the replay's {what} announces {len} bytes, more than this platform can hold"
                )
            }
            ReplayError::TrailingBytes { after, count } => {
                write!(
                    f,
                    "the replay header is invalid: {count} unexpected bytes after the {after}"
                )
            }
            ReplayError::ContentMismatch { replay, content } => write!(
                f,
                "the replay was recorded with content {replay:016x} but this content hashes to {content:016x}: load the content it was recorded with"
            ),
            ReplayError::HooksMismatch => {
                write!(f, "the replay was recorded with other registered functions (hooks)")
            }
            ReplayError::InputSizeMismatch { replay, game } => write!(
                f,
                "the replay does not fit this world: inputs are {replay} bytes in the replay but {game} bytes in this game"
            ),
            ReplayError::ConfigMismatch { replay, world } => write!(
                f,
                "the replay does not fit this world: the replay's world configuration {replay:?} differs from this world's {world:?}"
            ),
            ReplayError::Snapshot { keyframe, error } => {
                write!(f, "the replay does not fit this world: ")?;
                match keyframe {
                    None => write!(f, "its initial state: {error}"),
                    Some(k) => write!(f, "its keyframe at frame {k}: {error}"),
                }
            }
            ReplayError::Keyframe { frame, error } => {
                write!(f, "the replay's keyframe at frame {frame} cannot be compared: {error}")
            }
            ReplayError::BadInputStatus { frame, player, value } => write!(
                f,
                "the replay's input status of player {player} at frame {frame} is {value}, which is no input status"
            ),
            ReplayError::FrameGap { expected, got } => {
                write!(f, "frames must be consecutive: expected {expected}, got {got}")
            }
            ReplayError::FirstFrameMismatch { header, state } => write!(
                f,
                "the replay's initial state is the state before frame {state}, but its header says \
                 it starts at frame {header}"
            ),
        }
    }
}

impl std::error::Error for ReplayError {}

crate::located::readable_debug!(ReplayError);

impl ReplayError {
    pub(crate) fn io(path: &Path, e: &std::io::Error) -> ReplayError {
        ReplayError::Io { path: path.to_path_buf(), kind: e.kind(), message: e.to_string() }
    }
}

/// Whether a replay recorded with configuration `a` can be played in a world built with `b`:
/// every capacity and the player count must match (the seed is the replay's own).
fn same_layout(a: &WorldConfig, b: &WorldConfig) -> bool {
    WorldConfig { seed: 0, ..*a } == WorldConfig { seed: 0, ..*b }
}

/// What a replay is bound to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayHeader {
    /// The crate version that wrote it.
    pub crate_version: String,
    /// The content hash.
    pub content_hash: u64,
    /// xxh3-64 of the hooks signature.
    pub hooks_hash: u64,
    /// Frames per second.
    pub tick_rate: u16,
    /// The session seed.
    pub seed: u64,
    /// Players per frame.
    pub players: u16,
    /// The world's capacities.
    pub config: WorldConfig,
    /// Bytes per player input.
    pub input_size: u32,
    /// Frames between keyframes (0: none).
    pub keyframe_interval: u32,
    /// The replay's first frame: 0, or the frame a peer that joined a running match joined at
    /// (absent in version 5 and 6 headers: 0).
    #[serde(default)]
    pub first_frame: Frame,
}

impl ReplayHeader {
    /// The header a world would write, starting at its next frame.
    pub fn of<G: Game>(world: &World<G>, keyframe_interval: u32) -> ReplayHeader {
        ReplayHeader {
            crate_version: env!("CARGO_PKG_VERSION").to_string(),
            content_hash: world.content().hash(),
            hooks_hash: twox_hash::XxHash3_64::oneshot(world.hooks_signature().as_bytes()),
            tick_rate: world.content().settings().tick_rate.0,
            seed: world.seed(),
            players: world.players() as u16,
            config: *world.config(),
            input_size: core::mem::size_of::<G::Input>() as u32,
            keyframe_interval,
            first_frame: world.next_frame(),
        }
    }

    /// Checks that a world can play this replay.
    pub fn check<G: Game>(&self, world: &World<G>) -> Result<(), ReplayError> {
        let mine = ReplayHeader::of(world, self.keyframe_interval);
        if self.content_hash != mine.content_hash {
            return Err(ReplayError::ContentMismatch {
                replay: self.content_hash,
                content: mine.content_hash,
            });
        }
        if self.hooks_hash != mine.hooks_hash {
            return Err(ReplayError::HooksMismatch);
        }
        if self.input_size != mine.input_size {
            return Err(ReplayError::InputSizeMismatch {
                replay: self.input_size,
                game: mine.input_size,
            });
        }
        if !same_layout(&self.config, &mine.config) {
            return Err(ReplayError::ConfigMismatch { replay: self.config, world: mine.config });
        }
        Ok(())
    }
}

/// One recorded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayFrame {
    /// Every player's input bytes, concatenated.
    pub inputs: Vec<u8>,
    /// Every player's input status in the frame ([`World::input_status`]): `Disconnected` from
    /// the frame the survivors agreed a player left. A confirmed frame's input is the player's
    /// real one, so a prediction that proved right is recorded as `Confirmed`.
    pub statuses: Vec<InputStatus>,
    /// The world checksum after stepping the frame (0: not recorded).
    pub checksum: u64,
}

/// A replay in memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    /// What it is bound to.
    pub header: ReplayHeader,
    /// The state before the first frame ([`ReplayHeader::first_frame`]).
    pub initial: Vec<u8>,
    /// The first frame, the one after it, … ([`Replay::frame`] looks one up by its number).
    pub frames: Vec<ReplayFrame>,
    /// Keyframes: (frame, state before that frame).
    pub keyframes: Vec<(Frame, Vec<u8>)>,
}

impl Replay {
    /// Encodes the replay.
    pub fn encode(&self) -> Vec<u8> {
        let header = ron::to_string(&self.header).unwrap_or_default();
        let mut out = Vec::with_capacity(self.initial.len() + self.frames.len() * 16 + 256);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&(self.initial.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.initial);
        out.extend_from_slice(&(self.frames.len() as u32).to_le_bytes());
        let players = usize::from(self.header.players);
        for f in &self.frames {
            out.extend_from_slice(&f.inputs);
            out.extend((0..players).map(|p| {
                status_byte(f.statuses.get(p).copied().unwrap_or(InputStatus::Confirmed))
            }));
            out.extend_from_slice(&f.checksum.to_le_bytes());
        }
        out.extend_from_slice(&(self.keyframes.len() as u32).to_le_bytes());
        for (frame, bytes) in &self.keyframes {
            out.extend_from_slice(&frame.to_le_bytes());
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        let sum = twox_hash::XxHash3_64::oneshot(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Decodes a replay, checking magic, version, integrity and structure.
    pub fn decode(b: &[u8]) -> Result<Replay, ReplayError> {
        let mut r = Reader::new(b);
        // The file ends (at its length) inside the part being read.
        let t = |what| move |_| ReplayError::Truncated { what, offset: b.len() };
        if b.is_empty() {
            return Err(ReplayError::Empty);
        }
        // A file shorter than the magic is cut short only if what it holds is its start.
        if b.len() < MAGIC.len() && !MAGIC.starts_with(b) {
            return Err(ReplayError::BadMagic);
        }
        let magic = r.bytes(8).map_err(t("magic bytes"))?;
        if magic != MAGIC {
            return Err(ReplayError::BadMagic);
        }
        let version = r.u32().map_err(t("version"))?;
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(ReplayError::UnsupportedVersion { found: version });
        }
        // Version 5 frames carry no input statuses.
        let with_statuses = version >= 6;
        // Does the announced structure fit the file? A cut file does not; a damaged one does
        // but fails the integrity check.
        let hlen = r.u32().map_err(t("header length"))? as usize;
        let header_bytes = r.bytes(hlen).map_err(t("header"))?;
        match Self::structure_len(b, hlen, with_statuses) {
            None => {
                return Err(ReplayError::Truncated {
                    what: "frames or keyframes",
                    offset: b.len(),
                });
            }
            Some(n) if n + 8 > b.len() => {
                return Err(ReplayError::Truncated { what: "integrity check", offset: b.len() });
            }
            Some(n) => {
                let mut stored = [0u8; 8];
                stored.copy_from_slice(&b[n..n + 8]);
                let stored = u64::from_le_bytes(stored);
                let computed = twox_hash::XxHash3_64::oneshot(&b[..n]);
                if stored != computed {
                    return Err(ReplayError::Corrupted { stored, computed });
                }
                if n + 8 != b.len() {
                    return Err(ReplayError::TrailingBytes {
                        after: "integrity check",
                        count: b.len() - n - 8,
                    });
                }
            }
        }
        let body = &b[..b.len() - 8];
        let mut r2 = Reader::new(body);
        let _ = r2.bytes(16 + hlen);
        let header_text =
            core::str::from_utf8(header_bytes).map_err(|_| ReplayError::HeaderNotUtf8)?;
        let header: ReplayHeader =
            ron::from_str(header_text).map_err(|e: ron::error::SpannedError| {
                ReplayError::BadHeader {
                    line: e.span.start.line,
                    col: e.span.start.col,
                    message: ron_message(&e.code),
                }
            })?;
        let ilen = r2.u64().map_err(t("initial snapshot length"))?;
        let ilen = usize::try_from(ilen)
            .map_err(|_| ReplayError::TooLarge { what: "initial snapshot", len: ilen })?;
        let initial = r2.bytes(ilen).map_err(t("initial snapshot"))?.to_vec();
        let count = r2.u32().map_err(t("frame count"))?;
        if header.first_frame.checked_add(count).is_none() {
            return Err(ReplayError::TooLarge { what: "frame count", len: u64::from(count) });
        }
        let n = count as usize;
        let per = usize::from(header.players) * header.input_size as usize;
        let players = usize::from(header.players);
        let mut frames = Vec::with_capacity(n.min(1 << 20));
        for frame in 0..n {
            let inputs = r2.bytes(per).map_err(t("frame inputs"))?.to_vec();
            let statuses = if with_statuses {
                let bytes = r2.bytes(players).map_err(t("frame input statuses"))?;
                let mut statuses = Vec::with_capacity(players);
                for (player, &value) in bytes.iter().enumerate() {
                    statuses.push(status_of_byte(value).ok_or(ReplayError::BadInputStatus {
                        frame: header.first_frame.saturating_add(frame as Frame),
                        player,
                        value,
                    })?);
                }
                statuses
            } else {
                vec![InputStatus::Confirmed; players]
            };
            let checksum = r2.u64().map_err(t("frame checksum"))?;
            frames.push(ReplayFrame { inputs, statuses, checksum });
        }
        let k = r2.u32().map_err(t("keyframe count"))? as usize;
        let mut keyframes = Vec::with_capacity(k.min(1 << 16));
        for _ in 0..k {
            let frame = r2.u32().map_err(t("keyframe"))?;
            let len = r2.u64().map_err(t("keyframe length"))?;
            let len = usize::try_from(len)
                .map_err(|_| ReplayError::TooLarge { what: "keyframe", len })?;
            keyframes.push((frame, r2.bytes(len).map_err(t("keyframe snapshot"))?.to_vec()));
        }
        if r2.offset() != body.len() {
            return Err(ReplayError::TrailingBytes {
                after: "keyframes",
                count: body.len() - r2.offset(),
            });
        }
        Ok(Replay { header, initial, frames, keyframes })
    }

    /// The byte length the announced structure would need (None if it cannot be parsed).
    fn structure_len(b: &[u8], hlen: usize, with_statuses: bool) -> Option<usize> {
        let mut r = Reader::new(b);
        r.bytes(16 + hlen).ok()?;
        let header_text = core::str::from_utf8(b.get(16..16 + hlen)?).ok()?;
        let header: ReplayHeader = ron::from_str(header_text).ok()?;
        let ilen = usize::try_from(r.u64().ok()?).ok()?;
        r.bytes(ilen).ok()?;
        let n = r.u32().ok()? as usize;
        let players = usize::from(header.players);
        let per =
            players * header.input_size as usize + if with_statuses { players } else { 0 } + 8;
        r.bytes(n.checked_mul(per)?).ok()?;
        let k = r.u32().ok()?;
        for _ in 0..k {
            r.u32().ok()?;
            let len = usize::try_from(r.u64().ok()?).ok()?;
            r.bytes(len).ok()?;
        }
        Some(r.offset())
    }

    /// Writes the replay to a file (only after encoding fully: nothing is written on failure).
    pub fn write(&self, path: &Path) -> Result<(), ReplayError> {
        std::fs::write(path, self.encode()).map_err(|e| ReplayError::io(path, &e))
    }

    /// Reads a replay file.
    pub fn read(path: &Path) -> Result<Replay, ReplayError> {
        let b = std::fs::read(path).map_err(|e| ReplayError::io(path, &e))?;
        Replay::decode(&b)
    }

    /// The number of frames.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// The first frame (0, or the frame a peer that joined a running match joined at).
    pub fn first_frame(&self) -> Frame {
        self.header.first_frame
    }

    /// The frame after the last one (the first frame plus the number of frames).
    pub fn end_frame(&self) -> Frame {
        self.header.first_frame.saturating_add(self.frames.len() as Frame)
    }

    /// The frames, by number: `first_frame()..end_frame()`.
    pub fn frame_numbers(&self) -> core::ops::Range<Frame> {
        self.first_frame()..self.end_frame()
    }

    /// A frame's record, by frame number (`None` outside [`Replay::frame_numbers`]).
    pub fn frame(&self, frame: Frame) -> Option<&ReplayFrame> {
        self.frames.get(frame.checked_sub(self.header.first_frame)? as usize)
    }

    /// Whether the replay has no frames.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The inputs of a frame, decoded.
    pub fn inputs<G: Game>(&self, frame: Frame) -> Vec<G::Input> {
        let size = core::mem::size_of::<G::Input>();
        self.frame(frame)
            .map(|f| {
                f.inputs
                    .chunks_exact(size.max(1))
                    .map(bytemuck::pod_read_unaligned::<G::Input>)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The input statuses of a frame (every player `Confirmed` outside the replay's frames).
    pub fn statuses(&self, frame: Frame) -> Vec<InputStatus> {
        let players = usize::from(self.header.players);
        let recorded = self.frame(frame).map_or(&[][..], |f| &f.statuses[..]);
        (0..players).map(|p| recorded.get(p).copied().unwrap_or_default()).collect()
    }

    /// The inputs of a frame with their statuses, as the match stepped them: what
    /// [`Replay::verify`], [`Replay::seek`] and [`Replay::bisect`] step a world with (a game's
    /// systems that read [`World::input_status`] see what they saw in the match).
    pub fn frame_inputs<G: Game>(&self, frame: Frame) -> Vec<(G::Input, InputStatus)> {
        self.inputs::<G>(frame).into_iter().zip(self.statuses(frame)).collect()
    }

    /// Loads the replay's initial state (the state before its first frame) into a world built
    /// with the same content, hooks and configuration.
    pub fn start<G: Game>(&self, world: &mut World<G>) -> Result<(), ReplayError> {
        self.header.check(world)?;
        world
            .load_bytes(&self.initial)
            .map_err(|error| ReplayError::Snapshot { keyframe: None, error })?;
        if world.next_frame() != self.header.first_frame {
            return Err(ReplayError::FirstFrameMismatch {
                header: self.header.first_frame,
                state: world.next_frame(),
            });
        }
        Ok(())
    }

    /// Moves a world to the state before `frame` (clamped to the replay's frames) using the
    /// nearest keyframe at or before it and re-simulating the rest (seek).
    pub fn seek<G: Game>(&self, world: &mut World<G>, frame: Frame) -> Result<(), ReplayError> {
        self.seek_with(world, frame, |_| {})
    }

    /// [`Replay::seek`] re-running a per-frame script (see [`Replay::verify_with`]).
    pub fn seek_with<G: Game>(
        &self,
        world: &mut World<G>,
        frame: Frame,
        mut script: impl FnMut(&mut World<G>),
    ) -> Result<(), ReplayError> {
        self.header.check(world)?;
        let target = frame.clamp(self.first_frame(), self.end_frame());
        let before_start = world.next_frame() < self.first_frame();
        match self.keyframes.iter().rev().find(|(f, _)| *f <= target) {
            Some((f, bytes)) if world.next_frame() > target || world.next_frame() < *f => {
                world
                    .load_bytes(bytes)
                    .map_err(|error| ReplayError::Snapshot { keyframe: Some(*f), error })?;
            }
            None if world.next_frame() > target || before_start => self.start(world)?,
            _ => {}
        }
        while world.next_frame() < target {
            let inputs = self.frame_inputs::<G>(world.next_frame());
            world.step_with(&inputs, &mut script);
        }
        Ok(())
    }

    /// Re-simulates the whole replay headless and compares every recorded checksum; on a
    /// divergence, names the first divergent frame, simulates the diverged world on to the
    /// first keyframe after it and diffs that keyframe (left) against the world (right) field
    /// by field.
    pub fn verify<G: Game>(&self, world: &mut World<G>) -> Result<Verification, ReplayError> {
        self.verify_with(world, |_| {})
    }

    /// [`Replay::verify`] for a match that also ran a per-frame script (see
    /// [`World::step_with`]): the scenario runner's direct operations are not inputs, so
    /// re-simulation runs the same script again.
    pub fn verify_with<G: Game>(
        &self,
        world: &mut World<G>,
        mut script: impl FnMut(&mut World<G>),
    ) -> Result<Verification, ReplayError> {
        self.start(world)?;
        let mut first_divergence = None;
        for (f, recorded) in self.frame_numbers().zip(&self.frames) {
            let inputs = self.frame_inputs::<G>(f);
            world.step_with(&inputs, &mut script);
            let want = recorded.checksum;
            if want != 0 && world.checksum() != want && first_divergence.is_none() {
                first_divergence = Some(f);
                break;
            }
        }
        let mut diffs = Vec::new();
        let mut diff_frame = None;
        if let Some(div) = first_divergence {
            // The first keyframe after the divergence: simulate on from the diverged state up
            // to it (loading nothing: the keyframe is what it is compared with) and diff.
            if let Some((kf, bytes)) = self.keyframes.iter().find(|(k, _)| *k > div) {
                self.seek_by_simulation(world, *kf, &mut script);
                let mine = WorldDump::of_world(world);
                let theirs = WorldDump {
                    content_hash: mine.content_hash,
                    frame: *kf,
                    columns: mine.columns.clone(),
                    bytes: bytes.clone(),
                };
                diffs = diff_dumps(&theirs, &mine, Some(world.content()))
                    .map_err(|error| ReplayError::Keyframe { frame: *kf, error })?;
                diff_frame = Some(*kf);
            }
        }
        Ok(Verification { frames: self.frames.len() as Frame, first_divergence, diff_frame, diffs })
    }

    /// Finds the first divergent frame by bisection over keyframes (for replays recorded
    /// without per-frame checksums): the first keyframe whose re-simulated state differs.
    pub fn bisect<G: Game>(&self, world: &mut World<G>) -> Result<Option<Frame>, ReplayError> {
        self.bisect_with(world, |_| {})
    }

    /// [`Replay::bisect`] re-running a per-frame script (see [`Replay::verify_with`]).
    pub fn bisect_with<G: Game>(
        &self,
        world: &mut World<G>,
        mut script: impl FnMut(&mut World<G>),
    ) -> Result<Option<Frame>, ReplayError> {
        self.start(world)?;
        let kfs: Vec<&(Frame, Vec<u8>)> = self.keyframes.iter().collect();
        let mut matches = |world: &mut World<G>, i: usize| -> Result<bool, ReplayError> {
            self.start(world)?;
            self.seek_by_simulation(world, kfs[i].0, &mut script);
            Ok(world.state_bytes() == kfs[i].1)
        };
        let (mut lo, mut hi) = (0usize, kfs.len());
        // Invariant: keyframes before lo match, keyframes at or after hi differ.
        while lo < hi {
            let mid = (lo + hi) / 2;
            if matches(world, mid)? {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(kfs.get(lo).map(|k| k.0))
    }

    fn seek_by_simulation<G: Game>(
        &self,
        world: &mut World<G>,
        target: Frame,
        script: &mut impl FnMut(&mut World<G>),
    ) {
        while world.next_frame() < target.min(self.end_frame()) {
            let inputs = self.frame_inputs::<G>(world.next_frame());
            world.step_with(&inputs, &mut *script);
        }
    }
}

/// An input status's byte in the file.
fn status_byte(s: InputStatus) -> u8 {
    match s {
        InputStatus::Confirmed => 0,
        InputStatus::Disconnected => 1,
        InputStatus::Predicted => 2,
    }
}

/// The input status of a byte in the file (`None`: no status).
fn status_of_byte(b: u8) -> Option<InputStatus> {
    match b {
        0 => Some(InputStatus::Confirmed),
        1 => Some(InputStatus::Disconnected),
        2 => Some(InputStatus::Predicted),
        _ => None,
    }
}

/// The outcome of [`Replay::verify`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verification {
    /// Frames in the replay.
    pub frames: Frame,
    /// The first frame whose checksum after stepping differs, if any.
    pub first_divergence: Option<Frame>,
    /// The keyframe the field diff was taken at.
    pub diff_frame: Option<Frame>,
    /// Field-level differences (recorded vs re-simulated) at that keyframe.
    pub diffs: Vec<FieldDiff>,
}

impl Verification {
    /// Whether every checksum matched.
    pub fn is_ok(&self) -> bool {
        self.first_divergence.is_none()
    }
}

/// Records a replay from confirmed inputs.
#[derive(Clone, Debug)]
pub struct Recorder<G: Game> {
    replay: Replay,
    _game: core::marker::PhantomData<fn() -> G>,
}

impl<G: Game> Recorder<G> {
    /// Starts recording from a world's current state (the state before its next frame, the
    /// replay's first frame: 0 in a new match, F for a peer that joined a running match at F).
    pub fn new(world: &World<G>, keyframe_interval: u32) -> Recorder<G> {
        Recorder {
            replay: Replay {
                header: ReplayHeader::of(world, keyframe_interval),
                initial: world.state_bytes(),
                frames: Vec::new(),
                keyframes: Vec::new(),
            },
            _game: core::marker::PhantomData,
        }
    }

    /// The next frame to record.
    pub fn next_frame(&self) -> Frame {
        self.replay.end_frame()
    }

    /// Records a frame's confirmed inputs and the checksum after it (0: unknown). `inputs` is
    /// what the frame was stepped with ([`FrameInputs`]: plain inputs, or inputs with their
    /// statuses as a session delivers them); as in [`World::step`], a player beyond the list
    /// has the default input, `Disconnected`. A `Predicted` status is recorded as `Confirmed`
    /// (the frame is confirmed: the prediction was right). Frames must come in order; others
    /// are ignored (and reported).
    pub fn push<F: FrameInputs<G::Input> + ?Sized>(
        &mut self,
        frame: Frame,
        inputs: &F,
        checksum_after: u64,
    ) -> Result<(), ReplayError> {
        if frame != self.next_frame() {
            return Err(ReplayError::FrameGap { expected: self.next_frame(), got: frame });
        }
        let players = usize::from(self.replay.header.players);
        let mut bytes = Vec::with_capacity(players * core::mem::size_of::<G::Input>());
        let mut statuses = Vec::with_capacity(players);
        for p in 0..players {
            let (i, s) = if p < inputs.players() {
                inputs.input(p)
            } else {
                (G::Input::default(), InputStatus::Disconnected)
            };
            bytes.extend_from_slice(bytemuck::bytes_of(&i));
            statuses.push(match s {
                InputStatus::Predicted => InputStatus::Confirmed,
                s => s,
            });
        }
        self.replay.frames.push(ReplayFrame { inputs: bytes, statuses, checksum: checksum_after });
        Ok(())
    }

    /// Records a keyframe: the state of `world` (before its next frame).
    pub fn keyframe(&mut self, world: &World<G>) {
        let f = world.next_frame();
        if self.replay.keyframes.last().is_none_or(|(k, _)| *k < f) {
            self.replay.keyframes.push((f, world.state_bytes()));
        }
    }

    /// Records a keyframe from snapshot bytes (the state before `frame`).
    pub fn keyframe_bytes(&mut self, frame: Frame, bytes: Vec<u8>) {
        if self.replay.keyframes.last().is_none_or(|(k, _)| *k < frame) {
            self.replay.keyframes.push((frame, bytes));
        }
    }

    /// Whether a keyframe is due before `frame`.
    pub fn keyframe_due(&self, frame: Frame) -> bool {
        let i = self.replay.header.keyframe_interval;
        i > 0
            && frame > self.replay.header.first_frame
            && frame.is_multiple_of(i)
            && self.replay.keyframes.last().is_none_or(|(k, _)| *k < frame)
    }

    /// The replay so far.
    pub fn replay(&self) -> &Replay {
        &self.replay
    }

    /// Finishes the recording.
    pub fn finish(self) -> Replay {
        self.replay
    }
}
