//! Per-match identities: what a peer announces in the session [`Handshake`](super::Handshake)
//! so that only the match's members can speak for one another.
//!
//! Each peer makes a fresh [`Identity`] for every match from the operating system's randomness
//! (outside the simulation: nothing of it reaches a world). Its public half, a
//! [`PublicIdentity`], travels in the handshake. From two members' identities each derives the
//! same pairwise keys ([`Identity::link`]): X25519 Diffie-Hellman, then BLAKE3's key derivation
//! over the shared secret and both public keys, one key per direction. The guard tags every
//! datagram with a keyed BLAKE3 hash under the key of its direction and a counter
//! ([`Link::seal`], [`Link::open`]), so a datagram without a valid tag did not come from the
//! member, whatever its source address says. The Ed25519 half signs the peer's own inputs.
//!
//! No cryptography is implemented here: `x25519-dalek`, `ed25519-dalek` and `blake3` do it.

use core::fmt;
use serde::{Deserialize, Serialize};

/// The context string of the pairwise datagram keys (BLAKE3 key derivation).
const LINK_CONTEXT: &str = "rollback_abilities 2026-11 guard datagram key";

/// Bytes of a datagram's tag (a truncated keyed BLAKE3 hash: 128 bits).
pub(crate) const TAG_LEN: usize = 16;

/// A peer's secret identity for one match: an X25519 key (pairwise datagram keys) and an
/// Ed25519 key (signatures over its inputs). Make a new one for every match
/// ([`Identity::generate`]); announce [`Identity::public`] in the handshake. A clone holds
/// the same secrets (a rejoining program's joiner signs its claim with its slot's identity).
#[derive(Clone)]
pub struct Identity {
    agree: x25519_dalek::StaticSecret,
    sign: ed25519_dalek::SigningKey,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secrets.
        f.debug_struct("Identity").field("public", &self.public()).finish()
    }
}

/// The public half of an [`Identity`], announced in the session handshake: each member's key
/// for agreeing on pairwise datagram keys, and its key for verifying its signed inputs.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PublicIdentity {
    /// The X25519 public key.
    pub agree: [u8; 32],
    /// The Ed25519 verifying key.
    pub verify: [u8; 32],
}

impl fmt::Debug for PublicIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = |b: &[u8]| b.iter().take(6).map(|x| format!("{x:02x}")).collect::<String>();
        write!(f, "PublicIdentity(agree {}…, verify {}…)", hex(&self.agree), hex(&self.verify))
    }
}

/// The operating system gave no randomness for a new [`Identity`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityError(pub String);

impl fmt::Display for IdentityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no randomness for a match identity: {}", self.0)
    }
}

impl std::error::Error for IdentityError {}

impl Identity {
    /// A fresh identity from the operating system's randomness (in a browser, the page's
    /// `crypto.getRandomValues`).
    pub fn generate() -> Result<Identity, IdentityError> {
        let mut seed = [0u8; 64];
        getrandom::getrandom(&mut seed).map_err(|e| IdentityError(e.to_string()))?;
        let mut agree = [0u8; 32];
        let mut sign = [0u8; 32];
        agree.copy_from_slice(&seed[..32]);
        sign.copy_from_slice(&seed[32..]);
        Ok(Identity::from_secrets(agree, sign))
    }

    /// The identity with these secret keys (an X25519 scalar and an Ed25519 seed). Whoever knows
    /// them can speak for this peer: use [`Identity::generate`] for a match.
    pub fn from_secrets(agree: [u8; 32], sign: [u8; 32]) -> Identity {
        Identity {
            agree: x25519_dalek::StaticSecret::from(agree),
            sign: ed25519_dalek::SigningKey::from_bytes(&sign),
        }
    }

    /// The secret keys, as [`Identity::from_secrets`] takes them back: an X25519 scalar and an
    /// Ed25519 seed. Keep them only where a crashed or reloaded program of the same player can
    /// read them again (a file only that user reads, a tab's `sessionStorage`) and for no longer
    /// than the match: whoever holds them can claim the player's slot back ([`rejoin`]).
    ///
    /// ```
    /// use rollback_abilities::session::Identity;
    /// let id = Identity::from_secrets([7; 32], [9; 32]);
    /// let (agree, sign) = id.secrets();
    /// assert_eq!(Identity::from_secrets(agree, sign).public(), id.public());
    /// ```
    ///
    /// [`rejoin`]: super::rejoin
    pub fn secrets(&self) -> ([u8; 32], [u8; 32]) {
        (self.agree.to_bytes(), self.sign.to_bytes())
    }

    /// A second handle on the same secrets (the guard keeps one to sign this peer's inputs).
    pub(crate) fn duplicate(&self) -> Identity {
        Identity { agree: self.agree.clone(), sign: self.sign.clone() }
    }

    /// What this peer announces in the handshake.
    pub fn public(&self) -> PublicIdentity {
        PublicIdentity {
            agree: x25519_dalek::PublicKey::from(&self.agree).to_bytes(),
            verify: self.sign.verifying_key().to_bytes(),
        }
    }

    /// The pairwise keys between this peer and `remote` (both derive the same two, each using
    /// one to send and the other to receive). `None` when the remote's key is of low order (the
    /// shared secret would be predictable).
    pub(crate) fn link(&self, remote: &PublicIdentity) -> Option<Link> {
        self.link_on(remote, 0)
    }

    /// [`Identity::link`] for session channel `channel` (see [`rejoin`](super::rejoin)): each
    /// session a rejoin starts between the same identities has its own keys, so a datagram of
    /// one session is never read in another, whatever channel its carrier says it is on.
    /// Channel 0 has [`Identity::link`]'s keys.
    pub(crate) fn link_on(&self, remote: &PublicIdentity, channel: u32) -> Option<Link> {
        let shared = self.agree.diffie_hellman(&x25519_dalek::PublicKey::from(remote.agree));
        if !shared.was_contributory() {
            return None;
        }
        let local = self.public();
        let key = |from: &PublicIdentity, to: &PublicIdentity| {
            let mut material = Vec::with_capacity(32 * 5);
            material.extend_from_slice(shared.as_bytes());
            for id in [from, to] {
                material.extend_from_slice(&id.agree);
                material.extend_from_slice(&id.verify);
            }
            if channel != 0 {
                material.extend_from_slice(&channel.to_le_bytes());
            }
            blake3::derive_key(LINK_CONTEXT, &material)
        };
        Some(Link {
            send: key(&local, remote),
            receive: key(remote, &local),
            sent: 0,
            newest: 0,
            window: 0,
        })
    }

    /// This peer's Ed25519 signature of `message`, which [`PublicIdentity::verifies`] checks
    /// under the identity it announced (a claim only this member can make, such as taking its
    /// slot back).
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        use ed25519_dalek::Signer as _;
        self.sign.sign(message).to_bytes()
    }
}

impl PublicIdentity {
    /// Whether `signature` is this identity's Ed25519 signature of `message`.
    pub fn verifies(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        let Ok(key) = ed25519_dalek::VerifyingKey::from_bytes(&self.verify) else {
            return false;
        };
        key.verify_strict(message, &ed25519_dalek::Signature::from_bytes(signature)).is_ok()
    }
}

/// Counters a receiver remembers behind the newest (a datagram older than that is refused).
const REPLAY_WINDOW: u64 = 64;

/// The pairwise datagram keys between two members, and the counters that make every datagram
/// count once.
pub(crate) struct Link {
    send: [u8; 32],
    receive: [u8; 32],
    /// The counter of the last datagram sealed.
    sent: u64,
    /// The newest counter opened, and a bit for each of the [`REPLAY_WINDOW`] before it (bit
    /// `k`: counter `newest - k` was opened).
    newest: u64,
    window: u64,
}

impl Link {
    /// `payload` with the next counter and its tag appended: `payload ‖ counter ‖ tag`.
    pub(crate) fn seal(&mut self, mut payload: Vec<u8>) -> Vec<u8> {
        self.sent = self.sent.saturating_add(1);
        payload.extend_from_slice(&self.sent.to_le_bytes());
        let tag = blake3::keyed_hash(&self.send, &payload);
        payload.extend_from_slice(&tag.as_bytes()[..TAG_LEN]);
        payload
    }

    /// The payload of a sealed datagram, if its tag is valid under the receiving key and its
    /// counter was not opened before (nor lies more than 64 behind the newest).
    pub(crate) fn open<'a>(&mut self, sealed: &'a [u8]) -> Option<&'a [u8]> {
        let body_len = sealed.len().checked_sub(TAG_LEN)?;
        let (body, tag) = sealed.split_at(body_len);
        let expected = blake3::keyed_hash(&self.receive, body);
        // `blake3::Hash` compares in constant time; compare the truncated tags the same way.
        let mut full = [0u8; 32];
        full[..TAG_LEN].copy_from_slice(tag);
        full[TAG_LEN..].copy_from_slice(&expected.as_bytes()[TAG_LEN..]);
        if blake3::Hash::from(full) != expected {
            return None;
        }
        let payload_len = body.len().checked_sub(8)?;
        let (payload, counter) = body.split_at(payload_len);
        let counter = u64::from_le_bytes(counter.try_into().ok()?);
        if counter == 0 {
            return None;
        }
        if counter > self.newest {
            let shift = counter - self.newest;
            self.window = if shift >= REPLAY_WINDOW { 0 } else { self.window << shift };
            self.window |= 1;
            self.newest = counter;
            return Some(payload);
        }
        let behind = self.newest - counter;
        if behind >= REPLAY_WINDOW || self.window & (1 << behind) != 0 {
            return None;
        }
        self.window |= 1 << behind;
        Some(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Identity, Identity) {
        (Identity::from_secrets([1; 32], [2; 32]), Identity::from_secrets([3; 32], [4; 32]))
    }

    #[test]
    fn both_ends_derive_the_same_keys_one_per_direction() {
        let (a, b) = pair();
        let mut ab = a.link(&b.public()).unwrap();
        let mut ba = b.link(&a.public()).unwrap();
        let sealed = ab.seal(b"hello".to_vec());
        assert_eq!(ba.open(&sealed), Some(&b"hello"[..]));
        // A datagram reflected back to its sender does not open (the other direction's key).
        let back = ab.seal(b"again".to_vec());
        assert_eq!(ab.open(&back), None);
        assert_eq!(ba.open(&back), Some(&b"again"[..]));
    }

    #[test]
    fn a_changed_bit_a_replay_or_an_outsiders_key_is_refused() {
        let (a, b) = pair();
        let c = Identity::from_secrets([5; 32], [6; 32]);
        let mut ab = a.link(&b.public()).unwrap();
        let mut ba = b.link(&a.public()).unwrap();
        let mut cb = c.link(&b.public()).unwrap();
        let sealed = ab.seal(vec![7; 40]);
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 1;
            assert_eq!(ba.open(&bad), None, "bit flipped in byte {i}");
        }
        assert!(ba.open(&sealed).is_some());
        assert_eq!(ba.open(&sealed), None, "a replay");
        assert_eq!(ba.open(&cb.seal(vec![7; 40])), None, "an outsider's key");
        assert_eq!(ba.open(&[]), None);
        assert_eq!(ba.open(&[0; TAG_LEN]), None);
    }

    #[test]
    fn reordered_datagrams_open_within_the_window_once() {
        let (a, b) = pair();
        let mut ab = a.link(&b.public()).unwrap();
        let mut ba = b.link(&a.public()).unwrap();
        let sealed: Vec<Vec<u8>> = (0..100u8).map(|k| ab.seal(vec![k])).collect();
        assert!(ba.open(&sealed[70]).is_some());
        assert!(ba.open(&sealed[10]).is_some(), "60 behind the newest: inside the window");
        assert!(ba.open(&sealed[10]).is_none(), "twice");
        assert!(ba.open(&sealed[5]).is_none(), "65 behind the newest: outside the window");
        assert!(ba.open(&sealed[99]).is_some());
        assert!(ba.open(&sealed[98]).is_some());
    }

    #[test]
    fn a_low_order_public_key_gives_no_link() {
        let (a, _) = pair();
        let zero = PublicIdentity { agree: [0; 32], verify: [0; 32] };
        assert!(a.link(&zero).is_none());
    }

    #[test]
    fn signatures_verify_under_the_announced_key_only() {
        let (a, b) = pair();
        let sig = a.sign(b"frames 0..=9");
        assert!(a.public().verifies(b"frames 0..=9", &sig));
        assert!(!a.public().verifies(b"frames 0..=8", &sig));
        assert!(!b.public().verifies(b"frames 0..=9", &sig));
    }

    #[test]
    fn generated_identities_differ() {
        let a = Identity::generate().unwrap();
        let b = Identity::generate().unwrap();
        assert_ne!(a.public(), b.public());
        assert!(a.link(&b.public()).is_some());
    }
}
