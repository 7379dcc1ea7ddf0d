//! Debugging and determinism tools: world dumps, field-level diffs, desync reports, and the
//! inspector (`showdebug`, F-DBG-01, F-DBG-02, F-DBG-06).
//!
//! A [`WorldDump`] is a snapshot's bytes plus the column table needed to decode them without
//! the game's code. [`diff_dumps`] compares two dumps field by field and names, for every
//! difference, the column and subsystem, the entity, the item (attribute, tag, effect slot,
//! ability slot…), the field and both values — the answer to "we only get the checksums and
//! the frame… then what?".

mod inspect;

pub use inspect::{AbilityView, BoxView, DebugView, EffectView, TagView, TaskView, debug_view};

use crate::content::Content;
use crate::num::Frame;
use crate::world::state::{ColumnInfo, Item, RecordReader, column_item, read_record};
use crate::world::{Game, Snapshot, Subsystem, World};
use core::fmt;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The magic bytes of a dump file.
const DUMP_MAGIC: &[u8; 8] = b"RBADUMP\0";
/// The dump format version.
const DUMP_VERSION: u32 = 1;

/// Why a dump cannot be read or compared.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DumpError {
    /// Reading or writing a file failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's kind of failure.
        kind: std::io::ErrorKind,
        /// The operating system's message.
        message: String,
    },
    /// The file does not start with the dump magic bytes.
    BadMagic,
    /// An unsupported format version.
    UnsupportedVersion(u32),
    /// The file ends early.
    Truncated {
        /// What was being read.
        what: &'static str,
    },
    /// The column table is not UTF-8.
    TableNotUtf8,
    /// The column table is not a valid RON list of columns.
    BadTable {
        /// ron's message, with its position in the table.
        message: String,
    },
    /// The payload announces a length this platform cannot hold.
    TooLarge {
        /// The announced length in bytes.
        len: u64,
    },
    /// The column table does not add up to the payload.
    SizeMismatch {
        /// The bytes the column table describes.
        table: u64,
        /// The bytes of the payload.
        payload: u64,
    },
    /// The two dumps have different column tables (other content or capacities).
    ColumnsDiffer,
    /// The two dumps come from different content.
    ContentDiffers {
        /// The first dump's content hash.
        left: u64,
        /// The second's.
        right: u64,
    },
}

impl DumpError {
    fn io(path: &Path, e: &std::io::Error) -> DumpError {
        DumpError::Io { path: path.to_path_buf(), kind: e.kind(), message: e.to_string() }
    }
}

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DumpError::Io { path, message, .. } => {
                write!(f, "cannot read or write {}: {message}", path.display())
            }
            DumpError::BadMagic => {
                write!(f, "not a rollback_abilities world dump (bad magic bytes)")
            }
            DumpError::UnsupportedVersion(v) => write!(
                f,
                "dump format version {v} is not supported (this build reads version {DUMP_VERSION})"
            ),
            DumpError::Truncated { what } => write!(f, "the dump ends in the middle of its {what}"),
            DumpError::TableNotUtf8 => write!(f, "malformed dump: the column table is not UTF-8"),
            DumpError::BadTable { message } => write!(f, "malformed dump: column table: {message}"),
            DumpError::TooLarge { len } => {
                write!(f, "malformed dump: the payload announces {len} bytes, too large")
            }
            DumpError::SizeMismatch { table, payload } => write!(
                f,
                "malformed dump: the column table describes {table} bytes but the payload has {payload}"
            ),
            DumpError::ColumnsDiffer => write!(
                f,
                "the dumps cannot be compared: their column tables differ (other content or capacities)"
            ),
            DumpError::ContentDiffers { left, right } => write!(
                f,
                "the dumps cannot be compared: content hashes differ ({left:016x} vs {right:016x})"
            ),
        }
    }
}

impl std::error::Error for DumpError {}

crate::located::readable_debug!(DumpError);

/// A snapshot's bytes with the column table that decodes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorldDump {
    /// The content hash of the world.
    pub content_hash: u64,
    /// The frame the state would step next.
    pub frame: Frame,
    /// The columns, in order.
    pub columns: Vec<ColumnInfo>,
    /// The bytes, column after column.
    pub bytes: Vec<u8>,
}

impl WorldDump {
    /// Dumps a world's current state.
    pub fn of_world<G: Game>(world: &World<G>) -> WorldDump {
        WorldDump {
            content_hash: world.content().hash(),
            frame: world.next_frame(),
            columns: world.state.column_table(),
            bytes: world.state_bytes(),
        }
    }

    /// Dumps a snapshot of a world.
    pub fn of_snapshot<G: Game>(world: &World<G>, snap: &Snapshot<G>, frame: Frame) -> WorldDump {
        WorldDump {
            content_hash: world.content().hash(),
            frame,
            columns: snap.state.column_table(),
            bytes: snap.to_bytes(),
        }
    }

    /// The binary encoding (little-endian): magic, version, content hash, frame, column table
    /// (as RON text), payload.
    pub fn encode(&self) -> Vec<u8> {
        let table = ron::to_string(&self.columns).unwrap_or_default();
        let mut out = Vec::with_capacity(self.bytes.len() + table.len() + 40);
        out.extend_from_slice(DUMP_MAGIC);
        out.extend_from_slice(&DUMP_VERSION.to_le_bytes());
        out.extend_from_slice(&self.content_hash.to_le_bytes());
        out.extend_from_slice(&self.frame.to_le_bytes());
        out.extend_from_slice(&(table.len() as u32).to_le_bytes());
        out.extend_from_slice(table.as_bytes());
        out.extend_from_slice(&(self.bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.bytes);
        out
    }

    /// Decodes [`WorldDump::encode`]'s bytes.
    pub fn decode(b: &[u8]) -> Result<WorldDump, DumpError> {
        let mut r = crate::bytes::Reader::new(b);
        let magic = r.bytes(8).map_err(|_| DumpError::Truncated { what: "magic bytes" })?;
        if magic != DUMP_MAGIC {
            return Err(DumpError::BadMagic);
        }
        let version = r.u32().map_err(|_| DumpError::Truncated { what: "version" })?;
        if version != DUMP_VERSION {
            return Err(DumpError::UnsupportedVersion(version));
        }
        let content_hash = r.u64().map_err(|_| DumpError::Truncated { what: "header" })?;
        let frame = r.u32().map_err(|_| DumpError::Truncated { what: "header" })?;
        let tlen = r.u32().map_err(|_| DumpError::Truncated { what: "column table" })? as usize;
        let table = r.bytes(tlen).map_err(|_| DumpError::Truncated { what: "column table" })?;
        let table = core::str::from_utf8(table).map_err(|_| DumpError::TableNotUtf8)?;
        let columns: Vec<ColumnInfo> =
            ron::from_str(table).map_err(|e| DumpError::BadTable { message: e.to_string() })?;
        let blen = r.u64().map_err(|_| DumpError::Truncated { what: "payload length" })?;
        let blen = usize::try_from(blen).map_err(|_| DumpError::TooLarge { len: blen })?;
        let bytes = r.bytes(blen).map_err(|_| DumpError::Truncated { what: "payload" })?.to_vec();
        let total: u64 =
            columns.iter().map(|c| u64::from(c.record_size) * u64::from(c.count)).sum();
        if total != bytes.len() as u64 {
            return Err(DumpError::SizeMismatch { table: total, payload: bytes.len() as u64 });
        }
        Ok(WorldDump { content_hash, frame, columns, bytes })
    }

    /// Writes the dump to a file.
    pub fn write(&self, path: &Path) -> Result<(), DumpError> {
        std::fs::write(path, self.encode()).map_err(|e| DumpError::io(path, &e))
    }

    /// Reads a dump file.
    pub fn read(path: &Path) -> Result<WorldDump, DumpError> {
        let b = std::fs::read(path).map_err(|e| DumpError::io(path, &e))?;
        WorldDump::decode(&b)
    }
}

/// One difference between two dumps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldDiff {
    /// The column.
    pub column: String,
    /// Its subsystem.
    pub subsystem: Subsystem,
    /// The record index in the column.
    pub record: u32,
    /// The entity slot the record belongs to (per-entity columns).
    pub entity: Option<u32>,
    /// What the record is (an attribute's name, a tag's name, an effect slot…).
    pub item: String,
    /// The field that differs.
    pub field: String,
    /// The value in the first dump.
    pub left: String,
    /// The value in the second dump.
    pub right: String,
}

impl fmt::Display for FieldDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.column, self.subsystem.name())?;
        if let Some(e) = self.entity {
            write!(f, " entity slot {e}")?;
        }
        write!(f, " {} .{}: {} ≠ {}", self.item, self.field, self.left, self.right)
    }
}

/// Flattens a serialisable record into `(field path, value)` pairs.
fn fields<T: Serialize>(v: &T) -> Vec<(String, String)> {
    let text = ron::to_string(v).unwrap_or_default();
    match ron::from_str::<ron::Value>(&text) {
        Ok(value) => {
            let mut out = Vec::new();
            flatten("", &value, &mut out);
            out
        }
        Err(_) => vec![(String::new(), text)],
    }
}

fn flatten(prefix: &str, v: &ron::Value, out: &mut Vec<(String, String)>) {
    match v {
        ron::Value::Map(m) => {
            for (k, val) in m.iter() {
                let key = match k {
                    ron::Value::String(s) => s.clone(),
                    other => ron::to_string(other).unwrap_or_default(),
                };
                let p = if prefix.is_empty() { key } else { format!("{prefix}.{key}") };
                flatten(&p, val, out);
            }
        }
        ron::Value::Seq(s) => {
            for (i, val) in s.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), val, out);
            }
        }
        other => {
            // Fixed-point numbers serialise as `(bits: n)`: show them as decimals.
            let bits = match other {
                ron::Value::Number(ron::Number::I64(b)) => Some(*b),
                ron::Value::Number(ron::Number::I32(b)) => Some(i64::from(*b)),
                ron::Value::Number(ron::Number::U32(b)) => Some(i64::from(*b)),
                ron::Value::Number(ron::Number::U64(b)) => i64::try_from(*b).ok(),
                _ => None,
            };
            if let (Some(field), Some(bits)) = (prefix.strip_suffix(".bits"), bits) {
                out.push((
                    field.to_string(),
                    crate::num::to_decimal(crate::num::Fx::from_bits(bits)),
                ));
                return;
            }
            out.push((prefix.to_string(), ron::to_string(other).unwrap_or_default()))
        }
    }
}

/// Decodes a record as the column table says its column is shown.
struct FieldDecoder;

impl RecordReader for FieldDecoder {
    type Out = Vec<(String, String)>;

    fn fields<T: bytemuck::Pod + Serialize>(&self, rec: &[u8]) -> Self::Out {
        if rec.len() != core::mem::size_of::<T>() {
            return vec![(String::new(), hex(rec))];
        }
        fields(&bytemuck::pod_read_unaligned::<T>(rec))
    }

    fn fixed(&self, rec: &[u8]) -> Self::Out {
        match <[u8; 8]>::try_from(rec) {
            Ok(b) => vec![(
                "value".into(),
                crate::num::to_decimal(crate::num::Fx::from_bits(i64::from_le_bytes(b))),
            )],
            Err(_) => self.bytes(rec),
        }
    }

    fn count(&self, rec: &[u8]) -> Self::Out {
        match <[u8; 2]>::try_from(rec) {
            Ok(b) => vec![("count".into(), u16::from_le_bytes(b).to_string())],
            Err(_) => self.bytes(rec),
        }
    }

    fn bytes(&self, rec: &[u8]) -> Self::Out {
        vec![("bytes".into(), hex(rec))]
    }
}

fn decode_fields(column: &str, rec: &[u8]) -> Vec<(String, String)> {
    read_record(column, rec, &FieldDecoder).unwrap_or_else(|| FieldDecoder.bytes(rec))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn item_name(col: &ColumnInfo, record: u32, content: Option<&Content>) -> String {
    let within = if col.per_entity > 0 { record % col.per_entity } else { record };
    match (column_item(&col.name), content) {
        (Item::Attribute, Some(c)) => {
            format!("attribute {}", c.attr_name(crate::id::AttrId(within as u16)))
        }
        (Item::Tag, Some(c)) => format!("tag {}", c.tags().name(crate::id::TagId(within as u16))),
        (Item::Called(what), _) => format!("{what} {within}"),
        (Item::Attribute | Item::Tag | Item::Indexed, _) => format!("{}[{within}]", col.name),
    }
}

/// Compares two dumps field by field. `content` (the content both come from) names
/// attributes and tags; without it items are numbered.
pub fn diff_dumps(
    a: &WorldDump,
    b: &WorldDump,
    content: Option<&Content>,
) -> Result<Vec<FieldDiff>, DumpError> {
    if a.columns != b.columns {
        return Err(DumpError::ColumnsDiffer);
    }
    if a.content_hash != b.content_hash {
        return Err(DumpError::ContentDiffers { left: a.content_hash, right: b.content_hash });
    }
    let mut out = Vec::new();
    let mut at = 0usize;
    for col in &a.columns {
        let size = col.record_size as usize;
        let len = size * col.count as usize;
        let (ca, cb) = (&a.bytes[at..at + len], &b.bytes[at..at + len]);
        at += len;
        if ca == cb || size == 0 {
            continue;
        }
        for r in 0..col.count as usize {
            let (ra, rb) = (&ca[r * size..(r + 1) * size], &cb[r * size..(r + 1) * size]);
            if ra == rb {
                continue;
            }
            let (fa, fb) = (decode_fields(&col.name, ra), decode_fields(&col.name, rb));
            let entity = (col.per_entity > 0).then(|| r as u32 / col.per_entity);
            let item = item_name(col, r as u32, content);
            for ((field, va), (_, vb)) in fa.iter().zip(fb.iter()) {
                if va != vb {
                    out.push(FieldDiff {
                        column: col.name.clone(),
                        subsystem: col.subsystem,
                        record: r as u32,
                        entity,
                        item: item.clone(),
                        field: field.clone(),
                        left: va.clone(),
                        right: vb.clone(),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// What a peer writes when GGRS detects a desync: where, which subsystems, the local state and
/// the confirmed inputs leading to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesyncReport {
    /// The frame whose checksums differ (the state saved before stepping it).
    pub frame: Frame,
    /// The local packed checksum.
    pub local_checksum: u128,
    /// The remote packed checksum.
    pub remote_checksum: u128,
    /// The remote peer.
    pub peer: String,
    /// Subsystems whose digests differ.
    pub differing_subsystems: Vec<Subsystem>,
    /// The local state at that frame, if it was still kept.
    pub local_dump: Option<WorldDump>,
    /// Confirmed inputs up to that frame: (frame, each player's input bytes).
    pub confirmed_inputs: Vec<(Frame, Vec<Vec<u8>>)>,
}

impl fmt::Display for DesyncReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let subs: Vec<&str> = self.differing_subsystems.iter().map(|s| s.name()).collect();
        write!(
            f,
            "desync at frame {} with {}: local {:032x}, remote {:032x}, differing subsystems [{}]",
            self.frame,
            self.peer,
            self.local_checksum,
            self.remote_checksum,
            subs.join(", ")
        )
    }
}

impl DesyncReport {
    /// Writes `desync-<frame>.txt` (the report) and `desync-<frame>.dump` (the local state)
    /// into a directory; returns the report's path.
    pub fn write_to_dir(&self, dir: &Path) -> Result<PathBuf, DumpError> {
        std::fs::create_dir_all(dir).map_err(|e| DumpError::io(dir, &e))?;
        let report = dir.join(format!("desync-{}.txt", self.frame));
        let mut text = format!("{self}\n\nconfirmed inputs (frame: player bytes…):\n");
        for (f, players) in &self.confirmed_inputs {
            let p: Vec<String> = players.iter().map(|b| hex(b)).collect();
            text.push_str(&format!("{f}: {}\n", p.join(" ")));
        }
        if let Some(d) = &self.local_dump {
            let dump = dir.join(format!("desync-{}.dump", self.frame));
            d.write(&dump)?;
            text.push_str(&format!("\nlocal state: {}\n", dump.display()));
        }
        std::fs::write(&report, text).map_err(|e| DumpError::io(&report, &e))?;
        Ok(report)
    }
}
