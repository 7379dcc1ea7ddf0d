//! XXH3-64 (default secret, seed 0) computed while copying: the hash a snapshot save's one pass
//! gives each subsystem.
//!
//! twox-hash computes the same hash ([`twox_hash::XxHash3_64`]) faster over bytes already in
//! place, but a save must also copy them, and done one after the other the copy and the hash add
//! up (about twice a memcpy of the same bytes). Here each 64-byte stripe is loaded once, stored
//! to the destination and accumulated while it is in registers, and the lines a kilobyte ahead
//! in both slices are prefetched, so the copy's memory traffic overlaps the hash's arithmetic.
//! On x86-64 the stripes are accumulated with SSE2 (part of every x86-64 CPU, so there is no
//! run-time selection); elsewhere with plain integer code. The input's first bytes are kept:
//! XXH3 hashes inputs of at most 240 bytes with other algorithms, and those are handed to
//! twox-hash whole. The unit tests hold every length up to a few blocks, split at many points,
//! against twox-hash.

use twox_hash::XxHash3_64;

/// XXH3's default secret (the specification's `kSecret`; a test checks it against
/// twox-hash's).
const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];

/// Bytes accumulated at a time.
const STRIPE: usize = 64;
/// Stripes in a block, after which the accumulators are scrambled: (secret length − 64) / 8.
const STRIPES: usize = (SECRET.len() - STRIPE) / 8;
/// Bytes in a block.
const BLOCK: usize = STRIPE * STRIPES;
/// The longest input XXH3 hashes with its short-input algorithms.
const SHORT: usize = 240;
/// How far ahead of the block being copied its slices' lines are prefetched.
const AHEAD: usize = 1024;
/// Cache line size the prefetches step by.
const LINE: usize = 64;

const PRIME32_1: u64 = 0x9E37_79B1;
const PRIME32_2: u64 = 0x85EB_CA77;
const PRIME32_3: u64 = 0xC2B2_AE3D;
const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;

/// The accumulators before any stripe.
const INITIAL: [u64; 8] =
    [PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1];

/// Eight little-endian words of the secret from byte `at`.
const fn words(at: usize) -> [u64; 8] {
    let mut w = [0; 8];
    let mut i = 0;
    while i < 8 {
        let mut b = [0; 8];
        let mut j = 0;
        while j < 8 {
            b[j] = SECRET[at + 8 * i + j];
            j += 1;
        }
        w[i] = u64::from_le_bytes(b);
        i += 1;
    }
    w
}

/// The keys of each stripe of a block: stripe `j` uses the secret from byte `8 j`.
const KEYS: [[u64; 8]; STRIPES] = {
    let mut k = [[0; 8]; STRIPES];
    let mut j = 0;
    while j < STRIPES {
        k[j] = words(8 * j);
        j += 1;
    }
    k
};
/// The scramble's key: the secret's last 64 bytes.
const SCRAMBLE: [u64; 8] = words(SECRET.len() - STRIPE);
/// The last stripe's key.
const LAST: [u64; 8] = words(SECRET.len() - STRIPE - 7);
/// The final merge's key.
const MERGE: [u64; 8] = words(11);

/// Accumulates one stripe.
#[inline(always)]
fn accumulate(acc: &mut [u64; 8], stripe: &[u8; STRIPE], key: &[u64; 8]) {
    let (words, _) = stripe.as_chunks::<8>();
    for (i, (w, k)) in words.iter().zip(key).enumerate() {
        let x = u64::from_le_bytes(*w);
        let v = x ^ k;
        acc[i ^ 1] = acc[i ^ 1].wrapping_add(x);
        acc[i] = acc[i].wrapping_add((v & 0xFFFF_FFFF) * (v >> 32));
    }
}

/// The scramble after each block.
#[inline(always)]
fn scramble(acc: &mut [u64; 8]) {
    for (a, k) in acc.iter_mut().zip(&SCRAMBLE) {
        *a = ((*a ^ (*a >> 47)) ^ k).wrapping_mul(PRIME32_1);
    }
}

/// Copies one block and accumulates its stripes (without the scramble that follows).
///
/// Within the block, each stripe's products and its words are summed apart (the words of lane
/// `i` go to lane `i ^ 1`) and the sums are added once at the end: the same accumulators, as
/// addition wraps, with one add a lane per stripe instead of an add and a shuffle.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn block(acc: &mut [u64; 8], dst: &mut [u8; BLOCK], src: &[u8; BLOCK]) {
    use safe_arch::{
        add_i64_m128i, bitxor_m128i, load_unaligned_m128i, m128i, mul_widen_u32_odd_m128i,
        shuffle_ai_f32_all_m128i, store_unaligned_m128i,
    };
    let (d, _) = dst.as_chunks_mut::<16>();
    let (s, _) = src.as_chunks::<16>();
    let mut a: [m128i; 4] = core::array::from_fn(|p| m128i::from([acc[2 * p], acc[2 * p + 1]]));
    let mut sums = [m128i::default(); 4];
    for (j, key) in KEYS.iter().enumerate() {
        for p in 0..4 {
            let x = load_unaligned_m128i(&s[4 * j + p]);
            store_unaligned_m128i(&mut d[4 * j + p], x);
            let v = bitxor_m128i(x, m128i::from([key[2 * p], key[2 * p + 1]]));
            // Each 64-bit lane's high half moved down, for the 32 × 32-bit product.
            let high = shuffle_ai_f32_all_m128i::<0b11_11_01_01>(v);
            a[p] = add_i64_m128i(a[p], mul_widen_u32_odd_m128i(v, high));
            sums[p] = add_i64_m128i(sums[p], x);
        }
    }
    for (p, (a, sum)) in a.iter().zip(sums).enumerate() {
        let swapped = shuffle_ai_f32_all_m128i::<0b01_00_11_10>(sum);
        let [lo, hi]: [u64; 2] = add_i64_m128i(*a, swapped).into();
        acc[2 * p] = lo;
        acc[2 * p + 1] = hi;
    }
}

/// [`block`] in plain integer code.
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
#[inline(always)]
fn block_portable(acc: &mut [u64; 8], dst: &mut [u8; BLOCK], src: &[u8; BLOCK]) {
    dst.copy_from_slice(src);
    let mut sums = [0u64; 8];
    let (stripes, _) = src.as_chunks::<STRIPE>();
    for (stripe, key) in stripes.iter().zip(&KEYS) {
        let (words, _) = stripe.as_chunks::<8>();
        for (i, (w, k)) in words.iter().zip(key).enumerate() {
            let x = u64::from_le_bytes(*w);
            let v = x ^ k;
            sums[i] = sums[i].wrapping_add(x);
            acc[i] = acc[i].wrapping_add((v & 0xFFFF_FFFF) * (v >> 32));
        }
    }
    for i in 0..8 {
        acc[i] = acc[i].wrapping_add(sums[i ^ 1]);
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
use block_portable as block;

/// Asks for the cache line holding `src[at]` (to read) and `dst[at]` (to write), if in bounds.
#[inline(always)]
fn prefetch(dst: &[u8], src: &[u8], at: usize) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    if let (Some(d), Some(s)) = (dst.get(at), src.get(at)) {
        safe_arch::prefetch_t0(s);
        safe_arch::prefetch_et0(d);
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = (dst, src, at);
}

/// A streaming XXH3-64 (default secret, seed 0) fed by copies: [`CopyHasher::copy`] copies a
/// slice and hashes it; [`CopyHasher::finish`] is the hash of everything copied, as
/// [`twox_hash::XxHash3_64::oneshot`] of the concatenation.
pub(crate) struct CopyHasher {
    acc: [u64; 8],
    /// Stripes accumulated in the current block.
    in_block: usize,
    /// Bytes hashed so far.
    total: usize,
    /// The first bytes hashed (all of them while the input is short).
    head: [u8; SHORT],
    /// The bytes after the last stripe accumulated (1 to 64 once anything was hashed): held
    /// back, as the input's last stripe is accumulated differently.
    tail: [u8; STRIPE],
    tail_len: usize,
    /// The last stripe accumulated (the input's last 64 bytes begin in it when the tail is
    /// shorter than a stripe).
    last: [u8; STRIPE],
}

impl CopyHasher {
    /// A hasher that has hashed nothing.
    pub(crate) fn new() -> CopyHasher {
        CopyHasher {
            acc: INITIAL,
            in_block: 0,
            total: 0,
            head: [0; SHORT],
            tail: [0; STRIPE],
            tail_len: 0,
            last: [0; STRIPE],
        }
    }

    /// Copies `src` into `dst` (as far as the shorter goes) and hashes the bytes copied.
    pub(crate) fn copy(&mut self, dst: &mut [u8], src: &[u8]) {
        let n = dst.len().min(src.len());
        let (mut dst, mut src) = (&mut dst[..n], &src[..n]);
        if n == 0 {
            return;
        }
        if self.total < SHORT {
            let k = (SHORT - self.total).min(n);
            self.head[self.total..self.total + k].copy_from_slice(&src[..k]);
        }
        self.total += n;
        if self.tail_len > 0 {
            let k = (STRIPE - self.tail_len).min(src.len());
            let (s, src_rest) = src.split_at(k);
            let (d, dst_rest) = dst.split_at_mut(k);
            d.copy_from_slice(s);
            self.tail[self.tail_len..self.tail_len + k].copy_from_slice(s);
            self.tail_len += k;
            (dst, src) = (dst_rest, src_rest);
            if src.is_empty() {
                return;
            }
            // More follows the full tail: it is an ordinary stripe.
            let tail = self.tail;
            self.one(&tail);
            self.tail_len = 0;
        }
        // Every whole stripe but one that would end the input: at least a byte stays behind.
        let whole = (src.len() - 1) / STRIPE * STRIPE;
        let (s, src_rest) = src.split_at(whole);
        let (d, dst_rest) = dst.split_at_mut(whole);
        self.stripes(d, s);
        dst_rest.copy_from_slice(src_rest);
        self.tail[..src_rest.len()].copy_from_slice(src_rest);
        self.tail_len = src_rest.len();
    }

    /// Accumulates one stripe, and scrambles after a block's last.
    fn one(&mut self, stripe: &[u8; STRIPE]) {
        accumulate(&mut self.acc, stripe, &KEYS[self.in_block]);
        self.last = *stripe;
        self.in_block += 1;
        if self.in_block == STRIPES {
            scramble(&mut self.acc);
            self.in_block = 0;
        }
    }

    /// Copies and accumulates whole stripes (`src.len()` a multiple of [`STRIPE`]).
    fn stripes(&mut self, dst: &mut [u8], src: &[u8]) {
        let mut at = 0;
        // Single stripes up to a block boundary.
        while self.in_block != 0 && at < src.len() {
            let Some(s) = src[at..].first_chunk::<STRIPE>() else { break };
            dst[at..at + STRIPE].copy_from_slice(s);
            self.one(s);
            at += STRIPE;
        }
        // Whole blocks, with the accumulators in registers.
        let blocks = (src.len() - at) / BLOCK;
        if blocks > 0 {
            let mut acc = self.acc;
            for _ in 0..blocks {
                for line in (at + AHEAD..at + AHEAD + BLOCK).step_by(LINE) {
                    prefetch(dst, src, line);
                }
                let (Some(d), Some(s)) =
                    (dst[at..].first_chunk_mut::<BLOCK>(), src[at..].first_chunk::<BLOCK>())
                else {
                    break;
                };
                block(&mut acc, d, s);
                scramble(&mut acc);
                at += BLOCK;
            }
            self.acc = acc;
            if let Some(last) = src[..at].last_chunk::<STRIPE>() {
                self.last = *last;
            }
        }
        // The stripes after the last whole block.
        while let Some(s) = src[at..].first_chunk::<STRIPE>() {
            dst[at..at + STRIPE].copy_from_slice(s);
            self.one(s);
            at += STRIPE;
        }
    }

    /// The hash of everything copied.
    pub(crate) fn finish(&self) -> u64 {
        if self.total <= SHORT {
            return XxHash3_64::oneshot(&self.head[..self.total]);
        }
        let mut acc = self.acc;
        // The input's last 64 bytes: the end of the last stripe accumulated, then the tail.
        let t = self.tail_len;
        let mut last = [0; STRIPE];
        last[..STRIPE - t].copy_from_slice(&self.last[t..]);
        last[STRIPE - t..].copy_from_slice(&self.tail[..t]);
        accumulate(&mut acc, &last, &LAST);
        let mut h = (self.total as u64).wrapping_mul(PRIME64_1);
        for (a, k) in acc.as_chunks::<2>().0.iter().zip(MERGE.as_chunks::<2>().0) {
            let m = u128::from(a[0] ^ k[0]) * u128::from(a[1] ^ k[1]);
            h = h.wrapping_add(m as u64 ^ (m >> 64) as u64);
        }
        h ^= h >> 37;
        h = h.wrapping_mul(0x1656_6791_9E37_79F9);
        h ^ (h >> 32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that look random (a multiplicative hash of the index).
    fn bytes(n: usize, salt: u32) -> Vec<u8> {
        (0..n as u32)
            .map(|i| (i.wrapping_add(salt).wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect()
    }

    /// Copies `data` in the pieces that `cuts` (ascending offsets) make and checks the copy and
    /// the hash against twox-hash's one-shot over the whole.
    fn check(data: &[u8], cuts: &[usize]) {
        let mut h = CopyHasher::new();
        let mut out = vec![0xA5; data.len()];
        let mut at = 0;
        for &cut in cuts.iter().chain([&data.len()]) {
            let cut = cut.clamp(at, data.len());
            h.copy(&mut out[at..cut], &data[at..cut]);
            at = cut;
        }
        assert_eq!(h.finish(), XxHash3_64::oneshot(data), "{} bytes cut at {cuts:?}", data.len());
        assert!(out == data, "{} bytes cut at {cuts:?}: the copy differs", data.len());
    }

    #[test]
    fn the_secret_is_twox_hashs_default() {
        let secret = twox_hash::xxhash3_64::SecretBuffer::default().into_secret();
        assert_eq!(&SECRET, secret);
    }

    #[test]
    fn every_length_in_one_piece_hashes_as_twox_hash() {
        let data = bytes(4 * BLOCK + 3 * STRIPE + 1, 7);
        for n in 0..=data.len() {
            check(&data[..n], &[]);
        }
        let big = bytes(40_000, 3);
        check(&big, &[]);
    }

    #[test]
    fn pieces_hash_as_the_whole() {
        let data = bytes(3 * BLOCK + 200, 11);
        let lens = (0..=300)
            .chain([1023, 1024, 1025, 1087, 1088, 1089, 2047, 2048, 2049, 2111, 3000, 3272]);
        let cuts = [1, 7, 63, 64, 65, 100, 128, 200, 239, 240, 241, 256, 300, 1000, 1024, 1025];
        for n in lens {
            let data = &data[..n];
            // Empty pieces, single bytes and every split of one cut.
            check(data, &[0, 0, 1, 1]);
            for &a in &cuts {
                check(data, &[a]);
                for b in [a + 1, a + 63, a + 64, a + 65, a + 500, a + 1024] {
                    check(data, &[a, b]);
                }
            }
        }
        // A stripe at a time and a byte at a time.
        let steps: Vec<usize> = (STRIPE..data.len()).step_by(STRIPE).collect();
        check(&data, &steps);
        let steps: Vec<usize> = (1..1300).collect();
        check(&data[..1300], &steps);
    }

    #[test]
    fn the_portable_block_matches_the_one_in_use() {
        let src = bytes(BLOCK, 5);
        let src: &[u8; BLOCK] = src.as_slice().try_into().unwrap();
        for seed in [0u64, 1, u64::MAX, 0x0123_4567_89AB_CDEF] {
            let start: [u64; 8] =
                core::array::from_fn(|i| seed.rotate_left(8 * i as u32) ^ i as u64);
            let (mut a, mut b) = (start, start);
            let (mut da, mut db) = ([0; BLOCK], [0; BLOCK]);
            block(&mut a, &mut da, src);
            block_portable(&mut b, &mut db, src);
            assert_eq!(a, b);
            assert!(da == *src && db == *src);
            // And both are the stripes one by one.
            let mut c = start;
            for (stripe, key) in src.as_chunks::<STRIPE>().0.iter().zip(&KEYS) {
                accumulate(&mut c, stripe, key);
            }
            assert_eq!(a, c);
        }
    }
}
