//! The knobs of a `link_paths!` kernel besides its precision (the real type `T`, f32 or
//! f64, of [`super::cuda::emit_with`] and [`super::cpu::smear`]): how the input links are
//! stored ([`PathKnobs::input`]) and how the output is written ([`PathKnobs::output`]).
//!
//! **Input, recon 12 + phase.** The thin links a smearing reads are unitary but not always
//! special unitary: staggered phases and the antiperiodic boundary make L = s·V with
//! s = ±1, and the HISQ level-2 input W is in U(3). For any unitary L with rows a, b, c,
//! c = det L · conj(a × b), so a record of 14 reals (rows 0 and 1, row-major (re, im),
//! then λ = det L / |det L| as (re, im)) rebuilds every such link:
//!
//! ```text
//! x_k = a_i·b_j − a_j·b_i,   (i, j, k) = (1, 2, 0), (2, 0, 1), (0, 1, 2)
//! c_k = λ · conj(x_k)
//! ```
//!
//! computed in `T` in exactly this order (complex products expanded as
//! (p.re·q.re − p.im·q.im, p.re·q.im + p.im·q.re)), on the host by [`decode_link`] and in
//! the kernel by `load_link` of [`crate::dsl::emit::cuda::library::LINK12`]. λ costs 2 reals per link over QUDA's
//! recon 12 (which recomputes the staggered sign from the coordinates) and makes the
//! format independent of the phase convention. Recon 8 is not offered: its sin/cos and
//! square roots are not reproducible between host and device.
//!
//! **Output.** A smeared link F_μ = Σ_t c_t Σ P_t is a general 3 × 3 complex matrix, not
//! unitary, so the only output compression of a `link_paths!` spec is recon 18; asking
//! for another is an [`DslError::UnsupportedVariant`] at run time (the spec itself never
//! names an output compression, so there is nothing for the macro to reject).

use crate::dsl::variant::Recon;
use crate::dsl::DslError;
use crate::field::GaugeField;
use crate::format::SuCheck;
use crate::math::ColourMatrix;
use crate::real::Real;
use num_complex::Complex;

/// Reals of one recon-12 + phase input record: rows 0 and 1 (12 reals) and λ (2 reals).
pub const RECON12_PHASE_REALS: usize = 14;

/// Largest ‖L†L − 1‖ of an input link accepted for recon 12 + phase (the tolerance of the
/// gauge formats' SU(3) check, [`SuCheck::DEFAULT_TOLERANCE`]).
pub const UNITARITY_TOLERANCE: f64 = SuCheck::DEFAULT_TOLERANCE;

/// How the GPU evaluates a spec: which of the two plans of the same tree runs. The
/// default is [`PlanKind::Staged`] (asqtad 11× the first one-kernel kernels on an H100 at
/// 32⁴; its scratch, the fields of one link direction, is 453 MB there in f32); the
/// runtime falls back to the tree, with a message, where the scratch does not fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PlanKind {
    /// One kernel, one thread per link, every sub-staple recomputed in registers inside
    /// each enclosing wrap ([`super::tree`]): no scratch.
    Tree,
    /// The inner staple levels stored once per site as fields by their own kernels and
    /// read back by the wraps around them ([`super::staged`]): fewer products, scratch
    /// memory (one link direction μ at a time) and, per μ, one launch per level.
    #[default]
    Staged,
}

impl PlanKind {
    /// `"tree"` or `"staged"`.
    pub fn name(self) -> &'static str {
        match self {
            PlanKind::Tree => "tree",
            PlanKind::Staged => "staged",
        }
    }
}

/// How a `link_paths!` kernel reads its links and writes its output, and which GPU plan
/// computes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PathKnobs {
    /// Storage of the input links: [`Recon::R18`] (18 reals) or [`Recon::R12`] (rows 0
    /// and 1 plus the phase λ = det L, [`RECON12_PHASE_REALS`] reals).
    pub input: Recon,
    /// Storage of the output links: [`Recon::R18`] only (smeared links are not unitary).
    pub output: Recon,
    /// The GPU plan: [`PlanKind::Tree`] (one kernel) or [`PlanKind::Staged`] (fields).
    pub plan: PlanKind,
}

impl Default for PathKnobs {
    /// Both sides uncompressed, the default plan ([`PlanKind::Staged`]).
    fn default() -> Self {
        PathKnobs {
            input: Recon::R18,
            output: Recon::R18,
            plan: PlanKind::default(),
        }
    }
}

impl PathKnobs {
    /// Knobs with the input links stored as `input`, the output uncompressed, the
    /// default plan.
    pub fn with_input(input: Recon) -> Self {
        PathKnobs {
            input,
            ..Self::default()
        }
    }

    /// These knobs with the GPU plan `plan`.
    pub fn with_plan(self, plan: PlanKind) -> Self {
        PathKnobs { plan, ..self }
    }

    /// Checks the knobs for kernel `kernel`: the input recon 18 or 12, the output recon 18.
    pub fn validate(&self, kernel: &str) -> Result<(), DslError> {
        let unsupported = |knob, reason: String| DslError::UnsupportedVariant {
            kernel: kernel.to_string(),
            knob,
            reason,
        };
        if self.input == Recon::R8 {
            return Err(unsupported(
                "input compression",
                "expected recon18 or recon12 (+ phase) thin links, found recon8 (not reproducible between host and device)".into(),
            ));
        }
        if self.output != Recon::R18 {
            return Err(unsupported(
                "output compression",
                format!(
                    "a smeared link Σ c·paths is a general 3×3 matrix, not unitary: expected recon18, found {}",
                    recon_name(self.output)
                ),
            ));
        }
        Ok(())
    }

    /// Reals per input link record: 18, or [`RECON12_PHASE_REALS`] for recon 12.
    pub fn input_reals(&self) -> usize {
        match self.input {
            Recon::R12 => RECON12_PHASE_REALS,
            _ => 18,
        }
    }

    /// A short tag for names and reports: `""` for uncompressed input and the tree plan,
    /// else `"in_recon12"` and/or `"staged"` joined by `_`.
    pub fn tag(&self) -> &'static str {
        match (self.input, self.plan) {
            (Recon::R12, PlanKind::Tree) => "in_recon12",
            (Recon::R12, PlanKind::Staged) => "in_recon12_staged",
            (_, PlanKind::Staged) => "staged",
            (_, PlanKind::Tree) => "",
        }
    }
}

/// "recon18", "recon12" or "recon8".
fn recon_name(r: Recon) -> &'static str {
    match r {
        Recon::R18 => "recon18",
        Recon::R12 => "recon12",
        Recon::R8 => "recon8",
    }
}

/// The 14-real record of a unitary link `l`: rows 0 and 1, then λ = det L / |det L|
/// (computed in f64, rounded to `T`). Errors when ‖L†L − 1‖ exceeds
/// [`UNITARITY_TOLERANCE`] or a component is not finite (the message gives the found
/// deviation; the caller adds the link's position).
pub fn encode_link<T: Real>(l: &ColourMatrix<T>) -> Result<[T; RECON12_PHASE_REALS], String> {
    let l64 = l.cast::<f64>();
    let deviation = l64.unitarity_deviation();
    // A NaN deviation (non-finite link) fails too.
    if deviation.is_nan() || deviation > UNITARITY_TOLERANCE {
        return Err(format!(
            "expected a unitary link (‖L†L − 1‖ ≤ {UNITARITY_TOLERANCE:e}), found ‖L†L − 1‖ = {deviation:e}"
        ));
    }
    let det = l64.determinant();
    let lambda = det / det.norm();
    let reals = l.to_reals();
    let mut out = [T::zero(); RECON12_PHASE_REALS];
    out[..12].copy_from_slice(&reals[..12]);
    out[12] = T::from_f64(lambda.re);
    out[13] = T::from_f64(lambda.im);
    Ok(out)
}

/// The link of a 14-real record (module docs: row 2 = λ · conj(row 0 × row 1), in `T`,
/// in the kernel's order).
pub fn decode_link<T: Real>(p: &[T; RECON12_PHASE_REALS]) -> ColourMatrix<T> {
    let a = [0, 1, 2].map(|k| Complex::new(p[2 * k], p[2 * k + 1]));
    let b = [0, 1, 2].map(|k| Complex::new(p[6 + 2 * k], p[6 + 2 * k + 1]));
    let lambda = Complex::new(p[12], p[13]);
    let c = [(1, 2), (2, 0), (0, 1)].map(|(i, j)| lambda * (a[i] * b[j] - a[j] * b[i]).conj());
    ColourMatrix([a, b, c])
}

/// The input records of links `u` as the kernel of `knobs` reads them: link 4·cb + μ at
/// reals [`PathKnobs::input_reals`]·(4·cb + μ) ... Errors name the link that is not
/// unitary (recon 12) or the unsupported knob.
pub fn encode_links<T: Real>(
    u: &GaugeField<T>,
    knobs: &PathKnobs,
    kernel: &str,
) -> Result<Vec<T>, DslError> {
    knobs.validate(kernel)?;
    let mut out = Vec::with_capacity(u.links().len() * knobs.input_reals());
    for (i, l) in u.links().iter().enumerate() {
        match knobs.input {
            Recon::R12 => out.extend(encode_link(l).map_err(|detail| DslError::Storage {
                kernel: kernel.to_string(),
                field: format!(
                    "input link at checkerboard site {}, direction {}",
                    i / 4,
                    i % 4
                ),
                format: "recon12 + phase".into(),
                detail,
            })?),
            _ => out.extend(l.to_reals()),
        }
    }
    Ok(out)
}

/// The links the kernel of `knobs` actually reads: `u` itself for recon 18, every link
/// rebuilt from its record for recon 12 (the CPU emulation of the device's rounding, so
/// that a CPU smearing of the result compares like with like with the GPU's).
pub fn emulate_input<T: Real>(
    u: &GaugeField<T>,
    knobs: &PathKnobs,
    kernel: &str,
) -> Result<GaugeField<T>, DslError> {
    let records = encode_links(u, knobs, kernel)?;
    let mut out = u.clone();
    if knobs.input == Recon::R12 {
        for (link, rec) in out
            .links_mut()
            .iter_mut()
            .zip(records.chunks_exact(RECON12_PHASE_REALS))
        {
            let mut p = [T::zero(); RECON12_PHASE_REALS];
            p.copy_from_slice(rec);
            *link = decode_link(&p);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::Lattice;

    fn random_links() -> GaugeField<f64> {
        GaugeField::random(Lattice::new([4, 4, 4, 4]).unwrap(), 5)
    }

    /// Every SU(3) link times s = ±1 and every U(3) link e^{iφ}·V is rebuilt from its 14
    /// reals to f64 rounding, and the stored phase is det L: s for the signed links
    /// (−1 exactly representable), e^{3iφ} for the U(3) ones.
    #[test]
    fn unitary_links_are_rebuilt_from_rows_and_phase() {
        let u = random_links();
        for (i, v) in u.links().iter().enumerate().take(64) {
            let phi = 0.3 + 0.1 * i as f64;
            for (l, det) in [
                (*v, Complex::new(1.0, 0.0)),
                (v.scale(-1.0), Complex::new(-1.0, 0.0)),
                (
                    v.scale_complex(Complex::from_polar(1.0, phi)),
                    Complex::from_polar(1.0, 3.0 * phi),
                ),
            ] {
                let rec = encode_link(&l).unwrap();
                assert!(
                    (Complex::new(rec[12], rec[13]) - det).norm() < 1e-13,
                    "link {i}"
                );
                let back = decode_link(&rec);
                assert_eq!(back.0[0], l.0[0], "rows 0 and 1 are stored exactly");
                assert_eq!(back.0[1], l.0[1]);
                assert!((back - l).max_abs_component() < 1e-14, "link {i}");
            }
        }
    }

    /// Row 2 follows the hand-written formula for one concrete unitary matrix: the
    /// permutation matrix rows e1, e2 (det = +1 ⇒ row 2 = e0), times i (det = −i).
    #[test]
    fn row_two_of_a_permutation_matrix() {
        let z = Complex::new(0.0, 0.0);
        let one = Complex::new(1.0, 0.0);
        let p = ColourMatrix([[z, one, z], [z, z, one], [one, z, z]]);
        let rec = encode_link(&p).unwrap();
        assert_eq!(decode_link(&rec).0[2], [one, z, z]);
        let ip = p.scale_complex(Complex::new(0.0, 1.0));
        let rec = encode_link(&ip).unwrap();
        assert!((Complex::new(rec[12], rec[13]) - Complex::new(0.0, -1.0)).norm() < 1e-15);
        assert_eq!(decode_link(&rec).0[2], [Complex::new(0.0, 1.0), z, z]);
    }

    /// A non-unitary link (a smeared link, 2·V) is refused with its position; recon 8
    /// input and a compressed output are refused for any spec.
    #[test]
    fn knob_values_that_do_not_apply_are_errors() {
        let mut u = random_links();
        *u.link_mut(3, 2) = u.link(3, 2).scale(2.0);
        let e = encode_links(&u, &PathKnobs::with_input(Recon::R12), "k").unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("site 3, direction 2") && text.contains("unitary"),
            "{text}"
        );
        assert!(encode_links(&u, &PathKnobs::default(), "k").is_ok());
        let r8 = PathKnobs::with_input(Recon::R8).validate("k").unwrap_err();
        assert!(r8.to_string().contains("recon8"), "{r8}");
        let out = PathKnobs {
            output: Recon::R12,
            ..PathKnobs::default()
        };
        let e = out.validate("asqtad_fat").unwrap_err().to_string();
        assert!(
            e.contains("not unitary") && e.contains("found recon12"),
            "{e}"
        );
    }

    /// The f32 emulation changes only row 2 and stays within a few f32 ulps of the link.
    #[test]
    fn f32_emulation_is_within_rounding() {
        let u = random_links().cast::<f32>();
        let e = emulate_input(&u, &PathKnobs::with_input(Recon::R12), "k").unwrap();
        let mut changed = 0;
        for (a, b) in e.links().iter().zip(u.links()) {
            assert_eq!(a.0[0], b.0[0]);
            assert_eq!(a.0[1], b.0[1]);
            let d = (*a - *b).max_abs_component();
            assert!(d < 8.0 * f32::EPSILON, "{d:e}");
            changed += usize::from(d > 0.0);
        }
        assert!(changed > 0, "f32 rebuilding must round somewhere");
    }
}
