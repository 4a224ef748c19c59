//! A portable, counter-based random generator: Philox-4x32-10.
//!
//! Philox (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3",
//! SC 2011; the Random123 library) is a keyed bijection of a 128-bit counter: the
//! i-th random block of a stream is `philox(key, counter_i)`, computed without any
//! state carried from block i − 1. qdsl gives every lattice object its own stream:
//!
//! * key = the user's 64-bit seed, as the words `[seed mod 2³², seed / 2³²]`;
//! * counter = `[block, domain, index mod 2³², index / 2³²]`, where `domain` says what
//!   is being generated ([`StreamDomain`]: gauge links, gauge transformations, fermion
//!   fields, …), `index` says which object (the lexicographic link or site index) and
//!   `block` counts the 128-bit blocks drawn from that stream.
//!
//! The number a link or a site receives therefore depends only on (seed, domain, index,
//! position in its stream): never on the number of threads, the order in which sites
//! are visited, or the storage layout. Floating-point results are equally portable:
//! uniforms are exact dyadic fractions of the integer output, and the Gaussian
//! transform uses only correctly rounded IEEE 754 operations (+ − × ÷ √; its own
//! logarithm, sine and cosine in the private `portable_math` module).

use super::portable_math;
use num_complex::Complex;

/// Multipliers of the Philox-4x32 round function (Random123 `PHILOX_M4x32_0/1`).
const PHILOX_M: [u32; 2] = [0xD251_1F53, 0xCD9E_8D57];
/// Weyl increments of the Philox-4x32 key schedule (golden ratio and √3 − 1, in 2⁻³²).
const PHILOX_W: [u32; 2] = [0x9E37_79B9, 0xBB67_AE85];
/// Number of rounds (Philox-4x32-10: the Random123 default, "Crush-resistant" with margin).
const PHILOX_ROUNDS: usize = 10;
/// 2⁻⁵³: the spacing of the uniforms built from 53 random bits.
const TWO_POW_MINUS_53: f64 = 1.0 / 9_007_199_254_740_992.0;

/// The Philox-4x32-10 block function keyed by two 32-bit words.
///
/// One round maps the counter (c₀, c₁, c₂, c₃) with key (k₀, k₁) to
///
/// (hi(M₁c₂) ⊕ c₁ ⊕ k₀, lo(M₁c₂), hi(M₀c₀) ⊕ c₃ ⊕ k₁, lo(M₀c₀)),
///
/// where hi/lo are the upper/lower 32 bits of the 64-bit product; between rounds the
/// key is bumped by the Weyl sequence (k₀, k₁) += (W₀, W₁) mod 2³². Ten rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Philox4x32 {
    key: [u32; 2],
}

impl Philox4x32 {
    /// The generator with key words `[k₀, k₁]` (Random123's key order).
    pub fn new(key: [u32; 2]) -> Self {
        Self { key }
    }

    /// The generator keyed by a 64-bit seed: k₀ = seed mod 2³², k₁ = ⌊seed / 2³²⌋.
    pub fn from_seed(seed: u64) -> Self {
        Self::new([seed as u32, (seed >> 32) as u32])
    }

    /// The 128-bit output block for `counter` (words in Random123's order).
    pub fn block(&self, counter: [u32; 4]) -> [u32; 4] {
        let mut c = counter;
        let mut k = self.key;
        for round in 0..PHILOX_ROUNDS {
            if round > 0 {
                k = [
                    k[0].wrapping_add(PHILOX_W[0]),
                    k[1].wrapping_add(PHILOX_W[1]),
                ];
            }
            let p0 = u64::from(PHILOX_M[0]) * u64::from(c[0]);
            let p1 = u64::from(PHILOX_M[1]) * u64::from(c[2]);
            c = [
                (p1 >> 32) as u32 ^ c[1] ^ k[0],
                p1 as u32,
                (p0 >> 32) as u32 ^ c[3] ^ k[1],
                p0 as u32,
            ];
        }
        c
    }
}

/// What a random stream generates: the `domain` word of the Philox counter.
///
/// Different domains give independent numbers for the same seed and index (a random
/// gauge transformation made with seed 5 is unrelated to the gauge field made with seed
/// 5). The numeric tags ([`StreamDomain::tag`]) are part of the reproducibility contract:
/// changing one changes every field generated in that domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamDomain {
    /// Haar-random ("hot") gauge links; index = link index 4 · lex(x) + μ. Tag 1.
    GaugeLinks,
    /// Weak-field gauge links near 1; index = link index 4 · lex(x) + μ. Tag 2.
    WeakGaugeLinks,
    /// Random gauge transformations g(x); index = lex(x). Tag 3.
    GaugeTransform,
    /// Gaussian colour-spinor fields; index = s · V + lex(x). Tag 4.
    Fermion,
    /// Heatbath link updates; index = sweep · 4V + 4 · lex(x) + μ. Tag 5.
    Heatbath,
    /// HMC momenta P_μ(x); index = trajectory · 4V + 4 · lex(x) + μ. Tag 6.
    HmcMomenta,
    /// HMC Metropolis accept/reject; index = trajectory. Tag 7.
    HmcAccept,
    /// Free for applications: tag 2¹⁶ + n.
    User(u16),
}

impl StreamDomain {
    /// The counter word c₁ of this domain.
    pub fn tag(self) -> u32 {
        match self {
            StreamDomain::GaugeLinks => 1,
            StreamDomain::WeakGaugeLinks => 2,
            StreamDomain::GaugeTransform => 3,
            StreamDomain::Fermion => 4,
            StreamDomain::Heatbath => 5,
            StreamDomain::HmcMomenta => 6,
            StreamDomain::HmcAccept => 7,
            StreamDomain::User(n) => 0x1_0000 + u32::from(n),
        }
    }
}

/// One stream of random numbers: the Philox blocks for counters
/// `[b, domain, index mod 2³², index / 2³²]`, b = 0, 1, 2, …, read word by word.
///
/// A stream holds 2³² blocks (2³⁴ words); drawing more wraps around to block 0. The
/// draws never depend on anything but (seed, domain, index) and the number of words
/// already taken from this stream.
#[derive(Clone, Debug)]
pub struct RandomStream {
    philox: Philox4x32,
    domain: u32,
    index: u64,
    block: u32,
    buffer: [u32; 4],
    next_word: usize,
}

impl RandomStream {
    /// The stream of object `index` in `domain` for `seed`.
    pub fn new(seed: u64, domain: StreamDomain, index: u64) -> Self {
        Self {
            philox: Philox4x32::from_seed(seed),
            domain: domain.tag(),
            index,
            block: 0,
            buffer: [0; 4],
            next_word: 4,
        }
    }

    /// The next 32 random bits: the words of block 0 in order (c₀ first), then block 1, …
    pub fn next_u32(&mut self) -> u32 {
        if self.next_word == 4 {
            self.buffer = self.philox.block([
                self.block,
                self.domain,
                self.index as u32,
                (self.index >> 32) as u32,
            ]);
            self.block = self.block.wrapping_add(1);
            self.next_word = 0;
        }
        let w = self.buffer[self.next_word];
        self.next_word += 1;
        w
    }

    /// The next 64 random bits: two words w₀ then w₁, combined as w₀ · 2³² + w₁.
    pub fn next_u64(&mut self) -> u64 {
        let hi = u64::from(self.next_u32());
        (hi << 32) | u64::from(self.next_u32())
    }

    /// A uniform number in [0, 1): k · 2⁻⁵³ with k the upper 53 bits of
    /// [`next_u64`](Self::next_u64) (exact; every value a multiple of 2⁻⁵³).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * TWO_POW_MINUS_53
    }

    /// A uniform number in (0, 1]: (k + 1) · 2⁻⁵³ with the same k as
    /// [`uniform`](Self::uniform) (never 0, so its logarithm is finite).
    pub fn uniform_open_closed(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * TWO_POW_MINUS_53
    }

    /// A standard exponential number, −ln u with u ∈ (0, 1] from
    /// [`uniform_open_closed`](Self::uniform_open_closed) (qdsl's portable logarithm:
    /// the same bits on every machine). Density e^{−y} on [0, ∞).
    pub fn exponential(&mut self) -> f64 {
        -portable_math::ln(self.uniform_open_closed())
    }

    /// Two independent standard normal numbers (mean 0, variance 1) by the Box–Muller
    /// transform: with u₁ ∈ (0, 1] then u₂ ∈ [0, 1) drawn in that order,
    ///
    /// r = √(−2 ln u₁),  (z₁, z₂) = (r cos 2πu₂, r sin 2πu₂).
    ///
    /// The logarithm, cosine and sine are qdsl's own, built from correctly rounded IEEE
    /// operations only, so the result is the same on every machine.
    pub fn gaussian_pair(&mut self) -> (f64, f64) {
        let u1 = self.uniform_open_closed();
        let u2 = self.uniform();
        let r = (-2.0 * portable_math::ln(u1)).sqrt();
        let (sin, cos) = portable_math::sin_cos_turns(u2);
        (r * cos, r * sin)
    }

    /// A complex Gaussian z = z₁ + i z₂ from one [`gaussian_pair`](Self::gaussian_pair):
    /// unit variance per real component, so E|z|² = 2.
    pub fn gaussian_complex(&mut self) -> Complex<f64> {
        let (re, im) = self.gaussian_pair();
        Complex::new(re, im)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Random123 known-answer vectors for Philox-4x32-10 (file `tests/kat_vectors`
    /// of the Random123 distribution, lines `philox4x32 10 …`): counter, key, output.
    #[test]
    fn philox_matches_random123_known_answers() {
        let kat: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
            (
                [0; 4],
                [0; 2],
                [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
            ),
            (
                [0xffffffff; 4],
                [0xffffffff; 2],
                [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
            ),
            (
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0],
                [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
            ),
        ];
        for (counter, key, expected) in kat {
            assert_eq!(Philox4x32::new(key).block(counter), expected);
        }
        assert_eq!(
            Philox4x32::from_seed(0x299f31d0_a4093822),
            Philox4x32::new([0xa4093822, 0x299f31d0])
        );
    }

    /// The first draws of one stream, pinned to values computed by an independent
    /// Python implementation of Philox-4x32-10 (checked itself against the vectors
    /// above) and of the conversions documented on each method, the Gaussians with
    /// 40-digit arithmetic (mpmath):
    ///
    /// ```text
    /// seed = 0x0123456789abcdef, key = [0x89abcdef, 0x01234567], domain Fermion (4), index 7
    /// block 0 = philox([0, 4, 7, 0], key) = 84306911 c2a4e333 10d5b8f1 f2ce6aba
    /// block 1 = philox([1, 4, 7, 0], key) = 0df28860 93c7cb12 08dd1d9a 12faf953
    /// uniform             = ((w0 << 32 | w1) >> 11) / 2^53     = 0.5163636844978501
    /// uniform_open_closed = (((w2 << 32 | w3) >> 11) + 1) / 2^53 = 0.06576114565796742
    /// gaussian pairs: u1 = (w0,w1) as (0,1], u2 = (w2,w3) as [0,1); then w4..w7
    ///   1.0529777666175841453, 0.46165540904915112739,
    ///   2.3555578145802114064, 0.52068895531113958365
    /// ```
    #[test]
    fn stream_draws_are_pinned() {
        let seed = 0x0123_4567_89ab_cdef;
        let mut s = RandomStream::new(seed, StreamDomain::Fermion, 7);
        let words: Vec<u32> = (0..8).map(|_| s.next_u32()).collect();
        assert_eq!(words, PINNED_WORDS);
        let mut s = RandomStream::new(seed, StreamDomain::Fermion, 7);
        assert_eq!(s.uniform(), PINNED_UNIFORM[0]);
        assert_eq!(s.uniform_open_closed(), PINNED_UNIFORM[1]);
        let mut s = RandomStream::new(seed, StreamDomain::Fermion, 7);
        let (g1, g2) = s.gaussian_pair();
        let (g3, g4) = s.gaussian_pair();
        for (g, e) in [g1, g2, g3, g4].into_iter().zip(PINNED_GAUSSIAN) {
            assert!((g - e).abs() <= 1e-15 * e.abs().max(1.0), "{g} vs {e}");
        }
    }

    /// See [`stream_draws_are_pinned`].
    const PINNED_WORDS: [u32; 8] = [
        0x84306911, 0xc2a4e333, 0x10d5b8f1, 0xf2ce6aba, 0x0df28860, 0x93c7cb12, 0x08dd1d9a,
        0x12faf953,
    ];
    /// See [`stream_draws_are_pinned`].
    const PINNED_UNIFORM: [f64; 2] = [0.516_363_684_497_850_1, 0.065_761_145_657_967_42];
    /// See [`stream_draws_are_pinned`].
    const PINNED_GAUSSIAN: [f64; 4] = [
        1.052_977_766_617_584_1,
        0.461_655_409_049_151_14,
        2.355_557_814_580_211_4,
        0.520_688_955_311_139_6,
    ];

    #[test]
    fn streams_differ_by_seed_domain_and_index() {
        let first = |seed, domain, index| RandomStream::new(seed, domain, index).next_u64();
        let base = first(1, StreamDomain::GaugeLinks, 0);
        assert_ne!(base, first(2, StreamDomain::GaugeLinks, 0));
        assert_ne!(base, first(1, StreamDomain::GaugeTransform, 0));
        assert_ne!(base, first(1, StreamDomain::GaugeLinks, 1));
        assert_ne!(base, first(1, StreamDomain::GaugeLinks, 1 << 32));
        assert_ne!(
            first(1, StreamDomain::User(0), 3),
            first(1, StreamDomain::User(1), 3)
        );
        assert_eq!(base, first(1, StreamDomain::GaugeLinks, 0));
    }

    #[test]
    fn uniform_and_gaussian_moments() {
        let n = 200_000;
        let mut s = RandomStream::new(42, StreamDomain::User(9), 0);
        let (mut sum, mut sum2, mut min, mut max) = (0.0, 0.0, 1.0f64, 0.0f64);
        for _ in 0..n {
            let u = s.uniform();
            assert!((0.0..1.0).contains(&u));
            let v = s.uniform_open_closed();
            assert!(v > 0.0 && v <= 1.0);
            sum += u;
            sum2 += u * u;
            min = min.min(u);
            max = max.max(u);
        }
        let mean = sum / n as f64;
        let var = sum2 / n as f64 - mean * mean;
        // Uniform: mean 1/2 (σ/√n ≈ 6.5e-4), variance 1/12 ≈ 0.08333.
        assert!((mean - 0.5).abs() < 4e-3, "{mean}");
        assert!((var - 1.0 / 12.0).abs() < 2e-3, "{var}");
        assert!(min < 1e-4 && max > 1.0 - 1e-4);

        let (mut m1, mut m2, mut m4, mut cross) = (0.0, 0.0, 0.0, 0.0);
        for _ in 0..n / 2 {
            let (a, b) = s.gaussian_pair();
            m1 += a + b;
            m2 += a * a + b * b;
            m4 += a.powi(4) + b.powi(4);
            cross += a * b;
        }
        let n = n as f64;
        // Standard normal: mean 0, variance 1, fourth moment 3, pair uncorrelated.
        assert!((m1 / n).abs() < 0.015, "{}", m1 / n);
        assert!((m2 / n - 1.0).abs() < 0.02, "{}", m2 / n);
        assert!((m4 / n - 3.0).abs() < 0.15, "{}", m4 / n);
        assert!((cross / (n / 2.0)).abs() < 0.02, "{}", cross / n);
    }
}
