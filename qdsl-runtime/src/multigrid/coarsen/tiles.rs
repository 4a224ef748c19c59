//! The coarse links through the tensor-core tiles of `qdsl_kernels::multigrid`: the
//! operands of Y_c = V†UV laid out as the batched products take them, and the products
//! run on the CPU path of the tiles (what the tensor core rounds emulated). The layout is
//! the one a device construction stages; the reference ([`super::coarsen`]) checks it.
//!
//! For direction μ and link Y (Y⁺ or Y⁻), product p = the coarse site X (checkerboard
//! index) takes, over the face sites z of X (z_μ mod b_μ = b_μ − 1, in the block's site
//! order) and their N_f components r, the rows
//!
//! a_i = (V(z)_{r i})_{z, r},   b_j = (UV(z)_{r j})_{z, r},   UV(z) = Y_μ(z) V(z + μ̂),
//!
//! of K = 2 · faces · N_f reals (interleaved re, im), so c_ij = Σ conj(a_i) b_j =
//! (V†UV)_ij = Y_c,μ(X)_ij.

use super::super::dense::{mul_add, C, ZERO};
use super::super::{CoarsenError, DenseOperator, Prolongator};
use super::cpu::check_fit;
use qdsl_core::dsl::mma::{Input, MmaTile, MmaVariant};
use qdsl_core::field::DenseLinkField;
use qdsl_kernels::multigrid::{CoarseVuvBf16x3, CoarseVuvF64};

/// The tiles' precision mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TileMode {
    /// f64 DMMA (`coarse_vuv_f64`), f64 operands.
    F64,
    /// 3×BF16 (`coarse_vuv_bf16x3`), f32 operands.
    Bf16x3,
}

/// The operands of all coarse sites' products for direction μ and link `y` (A rows then
/// B rows per product, one product after another) and K, the reals per row.
pub fn face_operands(
    op: &DenseOperator,
    p: &Prolongator,
    y: &DenseLinkField<f64>,
    mu: usize,
) -> (Vec<f64>, Vec<f64>, usize) {
    let (fine, nf, nc2) = (*op.lattice(), op.n(), 2 * p.n_vectors());
    let b = p.block_dims();
    let (mut a_rows, mut b_rows) = (Vec::new(), Vec::new());
    let mut k = 0;
    for xc in 0..p.coarse_lattice().volume() {
        let face: Vec<usize> = p
            .block_sites(xc)
            .iter()
            .copied()
            .filter(|&cb| fine.coords_of_cb(cb)[mu] % b[mu] == b[mu] - 1)
            .collect();
        k = 2 * face.len() * nf;
        let uvs: Vec<Vec<C>> = face
            .iter()
            .map(|&cb| {
                let w = fine.cb_index(fine.shift(fine.coords_of_cb(cb), mu, 1).0);
                let mut uv = vec![ZERO; nf * nc2];
                mul_add(&mut uv, y.link(cb, mu), p.v(w), (nf, nf, nc2));
                uv
            })
            .collect();
        for (rows, mats) in [
            (
                &mut a_rows,
                face.iter().map(|&cb| p.v(cb).to_vec()).collect::<Vec<_>>(),
            ),
            (&mut b_rows, uvs),
        ] {
            for col in 0..nc2 {
                for m in &mats {
                    for r in 0..nf {
                        let z = m[r * nc2 + col];
                        rows.extend([z.re, z.im]);
                    }
                }
            }
        }
    }
    (a_rows, b_rows, k)
}

/// The coarse links (Y⁺_c, Y⁻_c) from the tiles' CPU path in `mode`. An error if P does
/// not fit M, 2N_v is not the tiles' 48, or a face's K is not a multiple of the tile
/// depth.
pub fn coarse_links_by_tiles(
    op: &DenseOperator,
    p: &Prolongator,
    mode: TileMode,
) -> Result<(DenseLinkField<f64>, DenseLinkField<f64>), CoarsenError> {
    check_fit(op, p)?;
    let nc2 = 2 * p.n_vectors();
    if nc2 != 48 {
        return Err(CoarsenError::Shape(format!(
            "the V†UV tiles take 2N_v = 48, found {nc2}"
        )));
    }
    let coarse = *p.coarse_lattice();
    let (input, tile_k, warps) = match mode {
        TileMode::F64 => (Input::F64, 32, 4),
        TileMode::Bf16x3 => (Input::F32, 32, 6),
    };
    let v = MmaVariant {
        m: nc2,
        n: nc2,
        input,
        tile_k,
        warps,
        stages: 2,
    };
    let mut yf = DenseLinkField::zeros(coarse, nc2)?;
    let mut yb = DenseLinkField::zeros(coarse, nc2)?;
    for mu in 0..4 {
        for (src, dst) in [(&op.yf, &mut yf), (&op.yb, &mut yb)] {
            let (a, b, k) = face_operands(op, p, src, mu);
            let run = match mode {
                TileMode::F64 => CoarseVuvF64::batched_inner_cpu,
                TileMode::Bf16x3 => CoarseVuvBf16x3::batched_inner_cpu,
            };
            let c = run(&v, &a, &b, k, coarse.volume())
                .map_err(|e| CoarsenError::Shape(e.to_string()))?;
            for xc in 0..coarse.volume() {
                let m = &c[xc * nc2 * nc2 * 2..(xc + 1) * nc2 * nc2 * 2];
                for (z, re_im) in dst.link_mut(xc, mu).iter_mut().zip(m.chunks(2)) {
                    *z = C::new(re_im[0], re_im[1]);
                }
            }
        }
    }
    Ok((yf, yb))
}
