use super::*;
use crate::dsl::kernel_ir::{RowDest, RowReach, Stmt};
use crate::dsl::variant::StorageFormat;

fn piece(op: PieceOp, dagger: bool, ls: Option<usize>) -> Piece {
    Piece { op, dagger, ls }
}

fn chain(pieces: Vec<Piece>) -> Chain {
    Chain {
        name: "test_chain".into(),
        doc: String::new(),
        hop_name: Some("Dw".into()),
        ls: None,
        pieces,
        xpay: None,
        m5inv: Vec::new(),
        zmobius: false,
    }
}

fn s(op: SOp) -> PieceOp {
    PieceOp::S(op)
}

#[test]
fn a_second_hop_is_refused_at_that_piece() {
    let c = chain(vec![
        piece(PieceOp::Hop, false, None),
        piece(s(SOp::M5Inv), false, None),
        piece(PieceOp::Hop, false, None),
    ]);
    let e = c.validate().unwrap_err();
    assert_eq!(e.piece, Some(2));
    assert!(e.reason.contains("second hop"), "{}", e.reason);
}

#[test]
fn an_ls_mismatch_is_refused_at_the_piece_that_differs() {
    let c = chain(vec![
        piece(s(SOp::M5Inv), false, Some(12)),
        piece(PieceOp::Hop, false, None),
        piece(s(SOp::MPhi), false, Some(8)),
    ]);
    let e = c.validate().unwrap_err();
    assert_eq!(e.piece, Some(2));
    assert!(
        e.reason.contains("Ls = 8") && e.reason.contains("Ls = 12"),
        "{}",
        e.reason
    );
    let header = Chain {
        ls: Some(8),
        ..chain(vec![piece(s(SOp::M5Inv), false, Some(12))])
    };
    assert_eq!(header.validate().unwrap_err().piece, Some(0));
    assert_eq!(
        chain(vec![piece(s(SOp::M5), false, Some(12))]).fixed_ls(),
        Some(12)
    );
}

#[test]
fn pieces_apply_right_to_left_on_either_side_of_the_hop() {
    // M5inv† * M5inv * Dw * Mphi * M5: M5 then Mphi on the source; M5inv then M5inv† on
    // the result.
    let c = chain(vec![
        piece(s(SOp::M5Inv), true, None),
        piece(s(SOp::M5Inv), false, None),
        piece(PieceOp::Hop, false, None),
        piece(s(SOp::MPhi), false, None),
        piece(s(SOp::M5), false, None),
    ]);
    let sp = |op, dagger| SPiece { op, dagger };
    assert_eq!(
        c.source_pieces(),
        vec![sp(SOp::M5, false), sp(SOp::MPhi, false)]
    );
    assert_eq!(
        c.result_pieces(),
        vec![sp(SOp::M5Inv, false), sp(SOp::M5Inv, true)]
    );
    assert_eq!(c.describe(), "M5inv.dagger() * M5inv * Dw * Mphi * M5");
    assert_eq!(sp(SOp::M5Inv, true).param_name(), "chiral_m5inv_dagger");
    assert_eq!(SOp::from_name("M5pre"), Some(SOp::MPhi));
    assert_eq!(SOp::from_name("M5mob"), Some(SOp::M5));
    assert_eq!(SOp::from_name("M6"), None);
}

#[test]
fn variants_are_checked_against_the_chain() {
    let c = Chain {
        hop_name: None,
        ..chain(vec![piece(s(SOp::MPhi), false, Some(8))])
    };
    let v = |ls, dagger| FusedVariant {
        variant: Variant {
            dagger,
            ..Variant::default()
        },
        ls,
        m5inv: Default::default(),
    };
    assert!(c.check(&v(8, false)).is_ok());
    assert!(matches!(
        c.check(&v(12, false)),
        Err(DslError::UnsupportedVariant { knob: "ls", .. })
    ));
    assert!(matches!(
        c.check(&v(8, true)),
        Err(DslError::UnsupportedVariant { knob: "dagger", .. })
    ));
}

#[test]
fn a_chain_without_a_hop_plans_one_row_on_the_loaded_column() {
    let c = Chain {
        hop_name: None,
        ..chain(vec![piece(s(SOp::MPhi), false, None)])
    };
    let v = FusedVariant {
        variant: Variant {
            spinor: StorageFormat::F32,
            gauge: StorageFormat::F32,
            ..Variant::default()
        },
        ls: 8,
        m5inv: Default::default(),
    };
    let k = plan::kernel_ir(&c, None, &v).unwrap();
    assert_eq!(k.shared_bytes([8, 8, 1]), 64 * 24 * 4);
    let rows: Vec<&Stmt> = k
        .stages
        .iter()
        .flat_map(|s| &s.body)
        .filter(|s| matches!(s, Stmt::ChiralRow(_)))
        .collect();
    assert!(matches!(
        rows.as_slice(),
        [Stmt::ChiralRow(r)] if r.reach == RowReach::Neighbours && r.dest == RowDest::Accumulator
    ));
    let text = k.to_string();
    assert!(
        text.contains("shared column[thread] <- acc[4]\n  barrier\n"),
        "{text}"
    );
    // Ls = 2: the neighbours s ± 1 coincide, the row is read dense.
    let k2 = plan::kernel_ir(&c, None, &FusedVariant { ls: 2, ..v }).unwrap();
    assert!(k2.to_string().contains("s' = 0..Ls"));
    let src = plan::compile(&c, None, &v).unwrap();
    assert!(src.source.contains("constexpr int LS = 8;"));
    assert!(src.source.contains("const real* __restrict__ chiral_mphi"));
    assert!(!src.source.contains("return;"));
    assert_eq!(src.geometry.shared_per_thread, 24 * 4);
}

#[test]
fn tridiagonal_matrices_are_recognised() {
    let z = Complex::new(0.0, 0.0);
    let one = Complex::new(1.0, 0.0);
    let ls = 6;
    let near = ChiralMatrices::from_fn(
        ls,
        |s, t| if (t + ls - s) % ls <= 1 { one } else { z },
        |s, t| if (s + ls - t) % ls <= 1 { one } else { z },
    );
    assert!(near.is_tridiagonal_periodic());
    let far = ChiralMatrices::from_fn(ls, |_, _| one, |_, _| z);
    assert!(!far.is_tridiagonal_periodic());
    assert_eq!(near.kernel_reals().len(), 4 * ls * ls);
}

/// The kernel's two sweeps from [`ChiralMatrices::sweep_reals`] (p_n = (x_n − e_n
/// p_{n−1})/d_n, Y = p_last w, y_n = p_n + q_n Y, written here as plainly as the CUDA
/// runs them) solve A y = x for a cyclic bidiagonal A of either orientation: A y equals x
/// to rounding, checked by multiplying back with the dense matrix.
#[test]
fn the_sweep_coefficients_solve_cyclic_bidiagonal_systems() {
    let ls = 7;
    let c = |re: f64, im: f64| Complex::new(re, im);
    let diag = |s: usize| c(1.3 + 0.1 * s as f64, 0.2 - 0.05 * s as f64);
    let off = |s: usize| c(-0.4 + 0.03 * s as f64, 0.1 * (s % 3) as f64);
    // P₊ lower (off-diagonal at s − 1, the corner at (0, Ls − 1)), P₋ upper.
    let lower = |s: usize, t: usize| match (s, t) {
        _ if s == t => diag(s),
        _ if t == (s + ls - 1) % ls => off(s),
        _ => c(0.0, 0.0),
    };
    let upper = |s: usize, t: usize| match (s, t) {
        _ if s == t => diag(ls - 1 - s),
        _ if t == (s + 1) % ls => off(ls - 1 - s) * 0.7,
        _ => c(0.0, 0.0),
    };
    let m5_like = ChiralMatrices::from_fn(ls, lower, upper);
    // Its adjoint: P₊ upper, P₋ lower.
    let adjoint = ChiralMatrices::from_fn(ls, |s, t| lower(t, s).conj(), |s, t| upper(t, s).conj());
    for (a, is_adjoint) in [(&m5_like, false), (&adjoint, true)] {
        let w = a.sweep_reals(is_adjoint);
        assert_eq!(w.len(), 2 * (6 * ls + 2));
        for chi in 0..2 {
            let coef = &w[chi * (6 * ls + 2)..];
            let z = |k: usize| c(coef[2 * k], coef[2 * k + 1]);
            let lower = (chi == 0) != is_adjoint;
            let slice = |n: usize| if lower { n } else { ls - 1 - n };
            let x: Vec<Complex<f64>> = (0..ls)
                .map(|s| c(0.3 * s as f64 - 1.0, 0.5 + 0.1 * (s * s) as f64))
                .collect();
            let mut col = x.clone();
            let mut p = c(0.0, 0.0);
            for n in 0..ls {
                let (inv_d, e) = (z(3 * n), z(3 * n + 1));
                let xn = col[slice(n)];
                p = inv_d * if n == 0 { xn } else { xn - e * p };
                col[slice(n)] = p;
            }
            let y_last = p * z(3 * ls);
            for n in 0..ls {
                col[slice(n)] += z(3 * n + 2) * y_last;
            }
            let m = if chi == 0 { &a.plus } else { &a.minus };
            for s in 0..ls {
                let ay: Complex<f64> = (0..ls).map(|t| m[s * ls + t] * col[t]).sum();
                assert!(
                    (ay - x[s]).norm() < 1e-13,
                    "adjoint {is_adjoint}, chirality {chi}, s {s}: {ay} against {}",
                    x[s]
                );
            }
        }
    }
}

/// M5⁻¹ on the result is solved in place from M5's matrices (M5⁻† from M5†'s); the next
/// piece reads the solved column without a store, and a solve that ends the chain is
/// loaded back into the accumulator.
#[test]
fn m5_inverse_is_a_solve_of_m5_on_the_column() {
    let v = FusedVariant {
        variant: Variant {
            spinor: StorageFormat::F32,
            gauge: StorageFormat::F32,
            ..Variant::default()
        },
        ls: 12,
        m5inv: Default::default(),
    };
    let no_hop = |pieces| Chain {
        hop_name: None,
        ..chain(pieces)
    };
    let c = no_hop(vec![
        piece(s(SOp::MPhi), false, None),
        piece(s(SOp::M5Inv), false, None),
    ]);
    let m5 = SPiece {
        op: SOp::M5,
        dagger: false,
    };
    let mphi = SPiece {
        op: SOp::MPhi,
        dagger: false,
    };
    assert_eq!(c.kernel_matrices(M5invMode::Sweep), vec![m5, mphi]);
    let k = plan::kernel_ir(&c, None, &v).unwrap();
    let body: Vec<&Stmt> = k.stages.iter().flat_map(|s| &s.body).collect();
    let solve = body
        .iter()
        .position(|s| matches!(s, Stmt::ChiralSolve(r) if r.matrix == "chiral_m5" && !r.dagger))
        .expect("a solve of M5");
    assert!(matches!(body[solve + 1], Stmt::ChiralRow(r) if r.matrix == "chiral_mphi"));
    assert!(!body.iter().any(|s| matches!(s, Stmt::SharedLoadAcc { .. })));
    let src = plan::compile(&c, None, &v).unwrap();
    assert!(src.source.contains("const real* __restrict__ chiral_m5,"));
    assert!(!src.source.contains("chiral_m5inv"));

    let c = no_hop(vec![piece(s(SOp::M5Inv), true, None)]);
    assert_eq!(
        c.kernel_matrices(M5invMode::Sweep),
        vec![SPiece {
            op: SOp::M5,
            dagger: true
        }]
    );
    let k = plan::kernel_ir(&c, None, &v).unwrap();
    let body: Vec<&Stmt> = k.stages.iter().flat_map(|s| &s.body).collect();
    assert!(matches!(body.last(), Some(Stmt::SharedLoadAcc { .. })));
    assert!(body
        .iter()
        .any(|s| matches!(s, Stmt::ChiralSolve(r) if r.matrix == "chiral_m5_dagger" && r.dagger)));
}
