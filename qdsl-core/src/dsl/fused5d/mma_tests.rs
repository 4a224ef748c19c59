//! The tensor-core M5⁻¹ ([`super::mma`]) against a dense f64 inversion of the
//! s-operator and against the O(Ls) sweep, within the stated f16/bf16 bound; its
//! misuse refused; its plan and source.

use super::mma::{apply_chiral_mma, error_bound, M5invMode};
use super::*;
use crate::dsl::kernel_ir::{RowReach, Stmt};
use crate::dsl::mma::Operand;
use crate::dsl::variant::StorageFormat;
use crate::field::{ColourSpinorField, SiteSubset, SpinorLayout};
use crate::lattice::{Lattice5D, Parity};

type C = Complex<f64>;

/// Möbius M5 = α + β S written out (α = b (4 − M5) + 1, β = c (4 − M5) − 1; S₊ from
/// s − 1, S₋ from s + 1, −m_f across the wall), per chirality row-major.
fn m5(ls: usize, b5: f64, c5: f64, height: f64, mass: f64) -> [Vec<f64>; 2] {
    let (alpha, beta) = (b5 * (4.0 - height) + 1.0, c5 * (4.0 - height) - 1.0);
    let mut plus = vec![0.0; ls * ls];
    let mut minus = vec![0.0; ls * ls];
    for s in 0..ls {
        plus[s * ls + s] = alpha;
        minus[s * ls + s] = alpha;
        if s > 0 {
            plus[s * ls + s - 1] = beta;
        } else {
            plus[ls - 1] = -mass * beta;
        }
        if s + 1 < ls {
            minus[s * ls + s + 1] = beta;
        } else {
            minus[s * ls] = -mass * beta;
        }
    }
    [plus, minus]
}

/// The inverse of a dense n × n matrix by Gauss–Jordan elimination with partial
/// pivoting, in f64.
fn inverse(a: &[f64], n: usize) -> Vec<f64> {
    let mut m = a.to_vec();
    let mut inv: Vec<f64> = (0..n * n)
        .map(|k| if k / n == k % n { 1.0 } else { 0.0 })
        .collect();
    for col in 0..n {
        let p = (col..n)
            .max_by(|&i, &j| m[i * n + col].abs().total_cmp(&m[j * n + col].abs()))
            .unwrap();
        for k in 0..n {
            m.swap(col * n + k, p * n + k);
            inv.swap(col * n + k, p * n + k);
        }
        let d = m[col * n + col];
        for k in 0..n {
            m[col * n + k] /= d;
            inv[col * n + k] /= d;
        }
        for r in (0..n).filter(|&r| r != col) {
            let f = m[r * n + col];
            for k in 0..n {
                m[r * n + k] -= f * m[col * n + k];
                inv[r * n + k] -= f * inv[col * n + k];
            }
        }
    }
    inv
}

fn matrices(ls: usize, plus: &[f64], minus: &[f64]) -> ChiralMatrices {
    ChiralMatrices::from_fn(
        ls,
        |s, t| C::new(plus[s * ls + t], 0.0),
        |s, t| C::new(minus[s * ls + t], 0.0),
    )
}

/// A field of Ls slices on a 4⁴ parity whose sites span 24 decades (1e−12 … 1e12), well
/// beyond f16's range: only the scaling keeps them.
fn field(ls: usize) -> ColourSpinorField<f32> {
    let layout = SpinorLayout::domain_wall(
        Lattice5D::new([4, 4, 4, 4], ls).unwrap(),
        SiteSubset::Single(Parity::Even),
    );
    let g = ColourSpinorField::<f64>::gaussian(layout, 7);
    let per_slice = layout.sites_per_slice();
    let data: Vec<Complex<f32>> = g
        .data()
        .iter()
        .enumerate()
        .map(|(k, z)| {
            let site = (k / 12) % per_slice;
            let scale = 10f64.powi((site % 25) as i32 - 12);
            Complex::new((z.re * scale) as f32, (z.im * scale) as f32)
        })
        .collect();
    ColourSpinorField::from_data(layout, data).unwrap()
}

/// For every real component of every site: the largest error of `got` against the f64
/// product A b of the field's values, in units of its bound
/// γ Σ_s' |A(s, s')| |b(s')| + η max|A| max|b| ([`error_bound`]); and the largest error
/// relative to the column's max |A b| (to see that rounding happened).
fn worst(
    op: Operand,
    a: &[Vec<f64>; 2],
    psi: &ColourSpinorField<f32>,
    got: &ColourSpinorField<f32>,
) -> (f64, f64) {
    let ls = psi.layout().ls();
    let per_slice = psi.layout().sites_per_slice();
    let (gamma, eta) = error_bound(op, ls);
    let (mut in_bound, mut relative) = (0.0f64, 0.0f64);
    let value = |f: &ColourSpinorField<f32>, s: usize, x: usize, c: usize, part: usize| {
        let z = f.data()[(s * per_slice + x) * 12 + c];
        f64::from(if part == 0 { z.re } else { z.im })
    };
    for x in 0..per_slice {
        for c in 0..12 {
            let a = &a[c / 6];
            let max_a = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for part in 0..2 {
                let b: Vec<f64> = (0..ls).map(|s| value(psi, s, x, c, part)).collect();
                let max_b = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let exact: Vec<f64> = (0..ls)
                    .map(|s| (0..ls).map(|t| a[s * ls + t] * b[t]).sum())
                    .collect();
                let max_y = exact.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                for s in 0..ls {
                    let err = (value(got, s, x, c, part) - exact[s]).abs();
                    let scale: f64 = (0..ls).map(|t| (a[s * ls + t] * b[t]).abs()).sum();
                    let bound = gamma * scale + eta * max_a * max_b;
                    in_bound = in_bound.max(err / bound);
                    if max_y > 0.0 {
                        relative = relative.max(err / max_y);
                    }
                }
            }
        }
    }
    (in_bound, relative)
}

/// M5⁻¹ on the tensor cores (rounding emulated) is within the f16 / bf16 bound of the
/// dense f64 inverse of M5 (inverted here by Gauss–Jordan) on a field spanning 24
/// decades, for Ls = 12, 16 and an odd Ls = 5, M5⁻¹ and M5⁻†; its error is that of the
/// format (bf16's above f16's, both far above f32's): the operands are rounded.
#[test]
fn the_tensor_core_inverse_is_within_its_bound_of_the_dense_f64_inverse() {
    for ls in [5, 12, 16] {
        let [p, m] = m5(ls, 1.5, 0.5, 1.8, 0.1);
        let (ip, im) = (inverse(&p, ls), inverse(&m, ls));
        let transpose =
            |a: &[f64]| -> Vec<f64> { (0..ls * ls).map(|k| a[(k % ls) * ls + k / ls]).collect() };
        let psi = field(ls);
        for dagger in [false, true] {
            let a = if dagger {
                [transpose(&ip), transpose(&im)]
            } else {
                [ip.clone(), im.clone()]
            };
            let mats = matrices(ls, &a[0], &a[1]);
            let mut relative = Vec::new();
            for op in [Operand::F16, Operand::Bf16] {
                let got = apply_chiral_mma("test", op, &mats, &psi).unwrap();
                let (in_bound, rel) = worst(op, &a, &psi, &got);
                assert!(
                    in_bound <= 1.0,
                    "Ls {ls}, dagger {dagger}, {op:?}: error {in_bound} of the bound"
                );
                relative.push(rel);
            }
            assert!(
                relative[0] > 1e-5 && relative[1] > relative[0] && relative[1] < 0.1,
                "Ls {ls}: f16 {:e}, bf16 {:e}",
                relative[0],
                relative[1]
            );
        }
    }
}

/// The tensor-core M5⁻¹ against the SIMT sweep (the O(Ls) solve of M5 from
/// [`ChiralMatrices::sweep_reals`], run here as the kernel runs it, in f64): within the
/// bound, on every real component.
#[test]
fn the_tensor_core_inverse_agrees_with_the_sweep() {
    let ls = 12;
    let [p, m] = m5(ls, 2.0, 1.0, 1.4, 0.02);
    let m5_mats = matrices(ls, &p, &m);
    let w = m5_mats.sweep_reals(false);
    let psi = field(ls);
    let per_slice = psi.layout().sites_per_slice();
    // The sweep's result, then the dense inverse's columns recovered from it (the sweep of
    // each unit vector): the bound needs |A|.
    let sweep = |chi: usize, x: &[f64]| -> Vec<f64> {
        let coef = &w[chi * (6 * ls + 2)..];
        let slice = |n: usize| if chi == 0 { n } else { ls - 1 - n };
        let mut col = x.to_vec();
        let mut q = 0.0;
        for n in 0..ls {
            let (inv_d, e) = (coef[6 * n], coef[6 * n + 2]);
            let xn = col[slice(n)];
            q = inv_d * if n == 0 { xn } else { xn - e * q };
            col[slice(n)] = q;
        }
        let y_last = q * coef[6 * ls];
        for n in 0..ls {
            col[slice(n)] += coef[6 * n + 4] * y_last;
        }
        col
    };
    let dense = |chi: usize| -> Vec<f64> {
        let mut a = vec![0.0; ls * ls];
        for t in 0..ls {
            let e: Vec<f64> = (0..ls).map(|s| f64::from(u8::from(s == t))).collect();
            for (s, v) in sweep(chi, &e).into_iter().enumerate() {
                a[s * ls + t] = v;
            }
        }
        a
    };
    let a = [dense(0), dense(1)];
    let mats = matrices(ls, &a[0], &a[1]);
    let got = apply_chiral_mma("test", Operand::F16, &mats, &psi).unwrap();
    let (gamma, eta) = error_bound(Operand::F16, ls);
    for x in 0..per_slice {
        for c in 0..12 {
            for part in 0..2 {
                let pick = |z: Complex<f32>| f64::from(if part == 0 { z.re } else { z.im });
                let b: Vec<f64> = (0..ls)
                    .map(|s| pick(psi.data()[(s * per_slice + x) * 12 + c]))
                    .collect();
                let y = sweep(c / 6, &b);
                let ac = &a[c / 6];
                let (max_a, max_b) = (
                    ac.iter().fold(0.0f64, |m, v| m.max(v.abs())),
                    b.iter().fold(0.0f64, |m, v| m.max(v.abs())),
                );
                for s in 0..ls {
                    let scale: f64 = (0..ls).map(|t| (ac[s * ls + t] * b[t]).abs()).sum();
                    // The sweep's own f64 rounding is far below the f16 bound.
                    let bound = gamma * scale + eta * max_a * max_b + 1e-12 * scale;
                    let g = pick(got.data()[(s * per_slice + x) * 12 + c]);
                    assert!(
                        (g - y[s]).abs() <= bound,
                        "site {x}, component {c}, s {s}: {g} against the sweep's {}",
                        y[s]
                    );
                }
            }
        }
    }
}

/// Complex matrices (zMöbius) and an Ls beyond 16 are errors naming the value, never a
/// wrong result.
#[test]
fn complex_matrices_and_large_ls_are_refused() {
    let psi = field(12);
    let complex = ChiralMatrices::from_fn(
        12,
        |s, t| {
            C::new(
                f64::from(u8::from(s == t)),
                if s == 3 && t == 3 { 0.25 } else { 0.0 },
            )
        },
        |s, t| C::new(f64::from(u8::from(s == t)), 0.0),
    );
    let e = apply_chiral_mma("test", Operand::F16, &complex, &psi)
        .unwrap_err()
        .to_string();
    assert!(e.contains("A+(3, 3)") && e.contains("complex"), "{e}");
    let big = ChiralMatrices::from_fn(20, |_, _| C::new(1.0, 0.0), |_, _| C::new(1.0, 0.0));
    let e = apply_chiral_mma("test", Operand::Bf16, &big, &field(20))
        .unwrap_err()
        .to_string();
    assert!(e.contains("Ls = 20"), "{e}");
}

fn chain_of(pieces: Vec<Piece>, modes: Vec<M5invMode>) -> Chain {
    Chain {
        name: "tc_chain".into(),
        doc: String::new(),
        hop_name: None,
        ls: None,
        pieces,
        xpay: None,
        m5inv: modes,
        zmobius: false,
    }
}

fn m5inv(dagger: bool, ls: Option<usize>) -> Piece {
    Piece {
        op: PieceOp::S(SOp::M5Inv),
        dagger,
        ls,
    }
}

/// The header's modes are checked at the mode: the tensor cores with Ls > 16, with
/// zMöbius coefficients, any mode but the sweep without an M5⁻¹ on the result; a variant
/// outside the list, with Ls > 16 or f64 spinors is refused.
#[test]
fn misuse_of_the_mode_is_refused_at_the_mode() {
    let tc = vec![M5invMode::Sweep, M5invMode::MmaF16];
    let e = chain_of(vec![m5inv(false, Some(24))], tc.clone())
        .validate()
        .unwrap_err();
    assert_eq!(e.mode, Some(1));
    assert!(e.reason.contains("Ls = 24"), "{}", e.reason);
    let zmobius = Chain {
        zmobius: true,
        ..chain_of(vec![m5inv(false, None)], tc.clone())
    };
    let e = zmobius.validate().unwrap_err();
    assert_eq!(e.mode, Some(1));
    assert!(e.reason.contains("zMöbius"), "{}", e.reason);
    let mphi = Piece {
        op: PieceOp::S(SOp::MPhi),
        dagger: false,
        ls: None,
    };
    let e = chain_of(vec![mphi], vec![M5invMode::Dense])
        .validate()
        .unwrap_err();
    assert_eq!(e.mode, Some(0));
    let e = chain_of(
        vec![m5inv(false, None)],
        vec![M5invMode::Dense, M5invMode::Dense],
    )
    .validate()
    .unwrap_err();
    assert_eq!(e.mode, Some(1));

    let c = chain_of(vec![m5inv(false, None)], tc);
    let v = |ls, m5inv, spinor| FusedVariant {
        variant: Variant {
            spinor,
            gauge: StorageFormat::F32,
            ..Variant::default()
        },
        ls,
        m5inv,
    };
    assert!(c
        .check(&v(16, M5invMode::MmaF16, StorageFormat::F32))
        .is_ok());
    for bad in [
        v(20, M5invMode::MmaF16, StorageFormat::F32),
        v(12, M5invMode::MmaF16, StorageFormat::F64),
        v(12, M5invMode::MmaBf16, StorageFormat::F32),
    ] {
        assert!(
            matches!(
                c.check(&bad),
                Err(DslError::UnsupportedVariant { knob: "m5inv", .. })
            ),
            "{bad:?}"
        );
    }
    // A chain without a list takes the SIMT modes.
    let plain = chain_of(vec![m5inv(false, None)], Vec::new());
    assert!(plain
        .check(&v(12, M5invMode::Dense, StorageFormat::F32))
        .is_ok());
    assert!(plain
        .check(&v(12, M5invMode::MmaF16, StorageFormat::F32))
        .is_err());
}

/// The knob picks the stage: the sweep solves M5, `dense` reads M5⁻¹'s rows, the tensor
/// cores multiply M5⁻¹ in place (its matrices a parameter, the HMMA instruction of the
/// operand type in the source, the kernel's name and canonical text telling the mode).
#[test]
fn the_mode_picks_the_stage_and_the_matrices() {
    let modes = M5invMode::ALL.to_vec();
    let c = chain_of(vec![m5inv(true, None), m5inv(false, None)], modes);
    let v = |m5inv| FusedVariant {
        variant: Variant {
            spinor: StorageFormat::F32,
            gauge: StorageFormat::F32,
            ..Variant::default()
        },
        ls: 12,
        m5inv,
    };
    let body = |mode| -> Vec<Stmt> {
        plan::kernel_ir(&c, None, &v(mode))
            .unwrap()
            .stages
            .into_iter()
            .flat_map(|s| s.body)
            .collect()
    };
    let sp = |dagger| SPiece {
        op: SOp::M5Inv,
        dagger,
    };
    assert_eq!(
        c.kernel_matrices(M5invMode::MmaF16),
        vec![sp(false), sp(true)]
    );
    let solves = |b: &[Stmt]| {
        b.iter()
            .filter(|s| matches!(s, Stmt::ChiralSolve(_)))
            .count()
    };
    let rows = |b: &[Stmt]| {
        b.iter()
            .filter(|s| matches!(s, Stmt::ChiralRow(r) if r.reach == RowReach::Dense))
            .count()
    };
    let mmas = |b: &[Stmt]| {
        b.iter()
            .filter_map(|s| match s {
                Stmt::ChiralMma(r) => Some((r.matrix.clone(), r.operand)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let sweep = body(M5invMode::Sweep);
    assert_eq!(
        (solves(&sweep), rows(&sweep), mmas(&sweep).len()),
        (2, 0, 0)
    );
    let dense = body(M5invMode::Dense);
    assert_eq!(
        (solves(&dense), rows(&dense), mmas(&dense).len()),
        (0, 2, 0)
    );
    let tc = body(M5invMode::MmaBf16);
    assert_eq!((solves(&tc), rows(&tc)), (0, 0));
    assert_eq!(
        mmas(&tc),
        vec![
            ("chiral_m5inv".to_string(), Operand::Bf16),
            ("chiral_m5inv_dagger".to_string(), Operand::Bf16)
        ]
    );
    let src = plan::compile(&c, None, &v(M5invMode::MmaF16))
        .unwrap()
        .source;
    assert!(src.contains("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
    assert!(src.contains("qdsl_block_scale"));
    assert!(src.contains("__syncwarp()"));
    assert!(src.contains("const real* __restrict__ chiral_m5inv,"));
    assert!(!src.contains("chiral_m5,"));
    assert_ne!(
        plan::kernel_name(&c, &v(M5invMode::MmaF16)),
        plan::kernel_name(&c, &v(M5invMode::MmaBf16))
    );
    assert!(v(M5invMode::MmaF16)
        .canonical()
        .ends_with("ls=12 m5inv=mma_f16"));
    assert!(v(M5invMode::Sweep).canonical().ends_with("ls=12"));
}

/// The chain's CPU path applies the tensor-core M5⁻¹ of the mode (the emulation), the
/// dense product otherwise.
#[test]
fn the_chain_on_the_cpu_emulates_the_mode() {
    let ls = 12;
    let c = chain_of(vec![m5inv(false, None)], M5invMode::ALL.to_vec());
    let [p, m] = m5(ls, 1.5, 0.5, 1.8, 0.1);
    let inv = matrices(ls, &inverse(&p, ls), &inverse(&m, ls));
    let psi = field(ls);
    let run = |mode| {
        let v = FusedVariant {
            variant: Variant {
                spinor: StorageFormat::F32,
                gauge: StorageFormat::F32,
                sites: crate::dsl::variant::OutputSites::Parity(Parity::Even),
                ..Variant::default()
            },
            ls,
            m5inv: mode,
        };
        let mut out = ColourSpinorField::zeros(*psi.layout());
        cpu::apply(&c, &v, &|_| inv.clone(), None, &mut out, &psi, None).unwrap();
        out
    };
    let expected = apply_chiral_mma("test", Operand::F16, &inv, &psi).unwrap();
    assert_eq!(run(M5invMode::MmaF16).data(), expected.data());
    let dense = cpu::apply_chiral("test", &inv, &psi).unwrap();
    assert_eq!(run(M5invMode::Dense).data(), dense.data());
    assert_ne!(expected.data(), dense.data());
}
