//! Signed inputs and the evidence they make of equivocation.
//!
//! Every peer signs its own input with the Ed25519 half of its per-match
//! [`Identity`](super::Identity). Signing every frame would cost a signature a frame and 64
//! bytes a frame on the wire; instead the frames form a hash chain — the *head* at frame `f` is
//! BLAKE3 over the head at the frame before, `f` and the input of `f` — and one signature over
//! the head at the last frame of a message covers every frame up to it. GGRS sends one input
//! message a frame, so a peer signs about once a frame (whatever its number of remotes) and a
//! receiver verifies once per message that brings new frames.
//!
//! A run of frames with the head before them and the signature at its end is a
//! [`SignedInputs`]: anyone holding the signer's [`PublicIdentity`] can check it, offline. Two
//! valid runs that give different inputs for the same frame are an [`Equivocation`]: the
//! signer sent different inputs for its player to different peers, and the two runs prove it.
//!
//! No cryptography is implemented here: `ed25519-dalek` signs and verifies, `blake3` hashes.

use super::identity::{Identity, PublicIdentity};
use core::fmt;
use serde::{Deserialize, Serialize};

/// The context of the input hash chain (domain separation from every other BLAKE3 use).
const CHAIN_CONTEXT: &[u8] = b"rollback_abilities 2026-11 input chain";

/// The context of a signed chain head.
const SIGN_CONTEXT: &[u8] = b"rollback_abilities 2026-11 signed inputs";

/// The head of a chain before its first frame.
pub(crate) const GENESIS: [u8; 32] = [0; 32];

/// The most frames one [`SignedInputs`] decoded with [`Equivocation::from_bytes`] may hold.
pub const MAX_SIGNED_FRAMES: usize = 512;

/// The chain head at `frame`, from the head before it and its input.
pub(crate) fn chain_step(before: &[u8; 32], frame: i32, input: &[u8]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(CHAIN_CONTEXT);
    h.update(before);
    h.update(&frame.to_le_bytes());
    h.update(&u32::try_from(input.len()).unwrap_or(u32::MAX).to_le_bytes());
    h.update(input);
    *h.finalize().as_bytes()
}

/// What a peer signs: "my input chain's head at `frame` is `head`".
pub(crate) fn statement(frame: i32, head: &[u8; 32]) -> Vec<u8> {
    let mut m = Vec::with_capacity(SIGN_CONTEXT.len() + 36);
    m.extend_from_slice(SIGN_CONTEXT);
    m.extend_from_slice(&frame.to_le_bytes());
    m.extend_from_slice(head);
    m
}

/// A run of a peer's input frames with its signature: frames `first` to
/// `first + inputs.len() - 1`, the chain head before them, and the peer's Ed25519 signature of
/// the head at the last frame. Each input is the GGRS encoding of the peer's players' inputs at
/// that frame (bincode of the game's input type, one after another in ascending player order).
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SignedInputs {
    /// The frame of the first input (a frame of the GGRS session the peers played in).
    pub first: i32,
    /// The chain head before `first` (all zeros when `first` is the peer's first frame).
    pub before: [u8; 32],
    /// The inputs, one per frame from `first` on.
    pub inputs: Vec<Vec<u8>>,
    /// The signature of the head at the last frame.
    #[serde(with = "signature_serde")]
    pub signature: [u8; 64],
}

impl fmt::Debug for SignedInputs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignedInputs")
            .field("first", &self.first)
            .field("frames", &self.inputs.len())
            .finish_non_exhaustive()
    }
}

impl SignedInputs {
    /// `inputs` from frame `first` on, after a chain whose head is `before`, signed by
    /// `identity` (what a peer sends of its own input).
    pub fn sign(identity: &Identity, first: i32, before: [u8; 32], inputs: Vec<Vec<u8>>) -> Self {
        let mut s = SignedInputs { first, before, inputs, signature: [0; 64] };
        if let Some((last, head)) = s.head() {
            s.signature = identity.sign(&statement(last, &head));
        }
        s
    }

    /// The last frame (`None` for a run without frames).
    pub fn last(&self) -> Option<i32> {
        let n = i32::try_from(self.inputs.len()).ok()?;
        if n == 0 {
            return None;
        }
        self.first.checked_add(n - 1)
    }

    /// The input at `frame`, if the run holds it.
    pub fn input_at(&self, frame: i32) -> Option<&[u8]> {
        let k = usize::try_from(frame.checked_sub(self.first)?).ok()?;
        self.inputs.get(k).map(Vec::as_slice)
    }

    /// The last frame and the chain head there (`None` for a run without frames).
    pub fn head(&self) -> Option<(i32, [u8; 32])> {
        let last = self.last()?;
        let mut head = self.before;
        for (k, input) in self.inputs.iter().enumerate() {
            head = chain_step(&head, self.first.wrapping_add(k as i32), input);
        }
        Some((last, head))
    }

    /// Whether `identity` signed these inputs (after the chain head `before`).
    pub fn verifies(&self, identity: &PublicIdentity) -> bool {
        match self.head() {
            Some((last, head)) => identity.verifies(&statement(last, &head), &self.signature),
            None => false,
        }
    }
}

/// Proof that a peer sent two different inputs for its players at the same frame: two runs of
/// inputs it signed ([`SignedInputs`]) that both hold `frame` with different inputs there. An
/// honest peer signs one chain of inputs, so only the holder of the identity's secret can have
/// made both. Reported once per peer as
/// [`SessionEvent::Equivocation`](super::SessionEvent::Equivocation); store it
/// ([`Equivocation::to_bytes`]), show it (`Display`) and check it offline with the peer's
/// [`PublicIdentity`] ([`Equivocation::verify`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Equivocation {
    /// The players behind the peer.
    pub players: Vec<usize>,
    /// The identity the peer announced in the handshake (the key both runs verify under).
    pub identity: PublicIdentity,
    /// The frame with two inputs (a frame of the GGRS session the runs were signed in).
    pub frame: i32,
    /// One run of signed inputs holding `frame`.
    pub one: SignedInputs,
    /// Another, with a different input at `frame`.
    pub other: SignedInputs,
}

/// Why bytes are not an [`Equivocation`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvidenceError {
    /// What is wrong, and where.
    pub what: String,
}

impl fmt::Display for EvidenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not equivocation evidence: {}", self.what)
    }
}

impl std::error::Error for EvidenceError {}

impl Equivocation {
    /// Whether this proves that `identity` signed two different inputs at [`Equivocation::frame`]:
    /// both runs verify under it, both hold the frame, and their inputs there differ.
    pub fn verify(&self, identity: &PublicIdentity) -> bool {
        let (Some(a), Some(b)) = (self.one.input_at(self.frame), self.other.input_at(self.frame))
        else {
            return false;
        };
        a != b && self.one.verifies(identity) && self.other.verifies(identity)
    }

    /// The evidence as bytes (bincode), for storing or sending.
    pub fn to_bytes(&self) -> Vec<u8> {
        bincode1::serialize(self).unwrap_or_default()
    }

    /// Evidence from [`Equivocation::to_bytes`]: bounded by the bytes given, each run at most
    /// [`MAX_SIGNED_FRAMES`] frames. Decoding does not verify: call [`Equivocation::verify`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Equivocation, EvidenceError> {
        use bincode1::Options as _;
        let e: Equivocation = bincode1::DefaultOptions::new()
            .with_fixint_encoding()
            .with_limit(bytes.len() as u64 + 16)
            .deserialize(bytes)
            .map_err(|e| EvidenceError { what: format!("at byte 0..{}: {e}", bytes.len()) })?;
        for (name, run) in [("one", &e.one), ("other", &e.other)] {
            if run.inputs.len() > MAX_SIGNED_FRAMES {
                return Err(EvidenceError {
                    what: format!(
                        "run `{name}` holds {} frames, more than {MAX_SIGNED_FRAMES}",
                        run.inputs.len()
                    ),
                });
            }
        }
        Ok(e)
    }
}

impl fmt::Display for Equivocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = |b: Option<&[u8]>| {
            b.map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>())
                .unwrap_or_else(|| "-".into())
        };
        write!(
            f,
            "players {:?} (identity {:?}) signed two inputs for frame {}: {} and {}",
            self.players,
            self.identity,
            self.frame,
            hex(self.one.input_at(self.frame)),
            hex(self.other.input_at(self.frame)),
        )
    }
}

/// A signature as a sequence of 64 bytes (serde derives arrays up to 32 only).
pub(crate) mod signature_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(sig: &[u8; 64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(sig.iter())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 64], D::Error> {
        let v: Vec<u8> = Vec::deserialize(d)?;
        v.try_into().map_err(|v: Vec<u8>| {
            serde::de::Error::invalid_length(v.len(), &"a 64-byte Ed25519 signature")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &Identity, first: i32, inputs: &[u8]) -> SignedInputs {
        SignedInputs::sign(id, first, GENESIS, inputs.iter().map(|b| vec![*b]).collect())
    }

    #[test]
    fn a_signed_run_verifies_under_its_signer_only_and_not_once_changed() {
        let a = Identity::from_secrets([1; 32], [2; 32]);
        let b = Identity::from_secrets([3; 32], [4; 32]);
        let s = run(&a, 5, &[1, 2, 3]);
        assert!(s.verifies(&a.public()));
        assert!(!s.verifies(&b.public()));
        let mut changed = s.clone();
        changed.inputs[0][0] = 9;
        assert!(!changed.verifies(&a.public()));
        let mut moved = s.clone();
        moved.first = 6;
        assert!(!moved.verifies(&a.public()));
        let mut empty = s;
        empty.inputs.clear();
        assert!(!empty.verifies(&a.public()));
    }

    #[test]
    fn evidence_verifies_only_with_two_different_signed_inputs_at_its_frame() {
        let a = Identity::from_secrets([1; 32], [2; 32]);
        let e = Equivocation {
            players: vec![1],
            identity: a.public(),
            frame: 6,
            one: run(&a, 5, &[1, 2, 3]),
            other: run(&a, 5, &[1, 7, 3]),
        };
        assert!(e.verify(&a.public()));
        assert_eq!(Equivocation::from_bytes(&e.to_bytes()), Ok(e.clone()));
        // The same input at the frame is no equivocation; a frame outside a run neither.
        assert!(!Equivocation { frame: 5, ..e.clone() }.verify(&a.public()));
        assert!(!Equivocation { frame: 9, ..e.clone() }.verify(&a.public()));
        let b = Identity::from_secrets([3; 32], [4; 32]);
        assert!(!e.verify(&b.public()));
        let mut tampered = e.clone();
        tampered.other.inputs[1][0] = 8;
        assert!(!tampered.verify(&a.public()));
        assert!(Equivocation::from_bytes(&e.to_bytes()[..40]).is_err());
    }
}
