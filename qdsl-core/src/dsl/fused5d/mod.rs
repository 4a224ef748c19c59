//! `fused5d!`: chains of 5D domain-wall operators fused into one kernel.
//!
//! A [`Chain`] is a product of operators on a 5D field ψ(x, s), s = 0 … Ls − 1, written
//! as in a paper and applied right to left, e.g. `M5inv * Dw * Mphi`:
//!
//! (M5⁻¹ D_w M_φ ψ)(x, s) = Σ_s' M5⁻¹(s, s') Σ_y D_w(x, y) Σ_s'' M_φ(s', s'') ψ(y, s'').
//!
//! The pieces ([`PieceOp`]):
//! * the hop (`Dw`, a `stencil!` spec bound in the chain's header): a 4D stencil acting on
//!   every slice alike, diagonal in s; at most one per kernel (a second hop needs the
//!   first one's values at the neighbours: a grid-wide barrier);
//! * s-local operators ([`SOp`]), each O = P₊ A₊ + P₋ A₋ with A± Ls × Ls matrices
//!   (P± = (1 ± γ5)/2, qdsl's γ5 = diag(1, 1, −1, −1)): `M5` (= `M5mob`) = α + β S,
//!   `Mphi` (= `M5pre`) = b + c S, `M5inv` = M5⁻¹ (dense), and the adjoint of each
//!   (`.dagger()`). The matrices are kernel parameters bound by name
//!   ([`crate::dsl::KernelParam::ChiralMatrices`], [`ChiralMatrices`]): constant b5, c5,
//!   per-slice (zMöbius) b_s, c_s and Shamir are values of the same kernel. `M5` and
//!   `Mphi` (and their adjoints) are sparse: the kernel reads the entries (s, s) and
//!   (s, s ± 1 mod Ls) of their rows only (the wall's −m_f sits in the corners).
//!
//! Pieces right of the hop act on its source (each neighbour's s-column formed in
//! shared memory, QUDA's Dslash4pre fused into the hop), pieces left of it on its
//! accumulator. A chain may also name an s-local piece for the xpay operand:
//! out = a · (X x) + b · (chain ψ) (QUDA's Dslash4·xpay·M5mob: X = M5).
//!
//! [`plan`] lowers a chain to the kernel IR ([`crate::dsl::kernel_ir`]), [`cpu`] runs the
//! same chain on host fields (the reference of the generated CUDA).

pub mod cpu;
pub mod mma;
pub mod plan;

use super::variant::Variant;
use super::DslError;
use num_complex::Complex;

pub use mma::{M5invMode, MMA_MAX_LS};
pub use plan::{compile, frame_ir, kernel_ir, kernel_name};

/// An s-local operator: O = P₊ A₊ + P₋ A₋, A± Ls × Ls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SOp {
    /// M5 = α + β S (QUDA's M5mob / Dslash5).
    M5,
    /// M_φ = b + c S (QUDA's Dslash4pre / M5pre).
    MPhi,
    /// M5⁻¹, dense in s.
    M5Inv,
}

impl SOp {
    /// The spec's name of the operator.
    pub fn name(self) -> &'static str {
        match self {
            SOp::M5 => "M5",
            SOp::MPhi => "Mphi",
            SOp::M5Inv => "M5inv",
        }
    }

    /// Whether a row of A± has nonzero entries at s and s ± 1 (mod Ls) only.
    pub fn is_sparse(self) -> bool {
        !matches!(self, SOp::M5Inv)
    }

    /// The operator a spec's piece name stands for: `M5`, `M5mob`, `Mphi`, `M5pre`,
    /// `M5inv`.
    pub fn from_name(name: &str) -> Option<SOp> {
        match name {
            "M5" | "M5mob" => Some(SOp::M5),
            "Mphi" | "M5pre" => Some(SOp::MPhi),
            "M5inv" => Some(SOp::M5Inv),
            _ => None,
        }
    }
}

/// An s-local piece: the operator, or its adjoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SPiece {
    /// The operator.
    pub op: SOp,
    /// O† instead of O.
    pub dagger: bool,
}

impl SPiece {
    /// The operator whose solve applies this piece on the GPU: M5 for M5⁻¹, M5† for
    /// M5⁻† ((M5⁻¹)† = (M5†)⁻¹); any other piece is itself.
    pub fn solve_operand(self) -> SPiece {
        match self.op {
            SOp::M5Inv => SPiece {
                op: SOp::M5,
                dagger: self.dagger,
            },
            _ => self,
        }
    }

    /// The name of its matrices in a kernel's signature: `chiral_<op>[_dagger]`.
    pub fn param_name(self) -> String {
        let dagger = if self.dagger { "_dagger" } else { "" };
        format!("chiral_{}{dagger}", self.op.name().to_lowercase())
    }
}

impl std::fmt::Display for SPiece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dagger = if self.dagger { ".dagger()" } else { "" };
        write!(f, "{}{dagger}", self.op.name())
    }
}

/// What a piece of a chain is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PieceOp {
    /// The chain's 4D hop (its `stencil!` spec is bound in the header).
    Hop,
    /// An s-local operator.
    S(SOp),
}

/// One factor of the product.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    /// What it is.
    pub op: PieceOp,
    /// Its adjoint instead.
    pub dagger: bool,
    /// The Ls it is written for (`M5inv<12>`), if given.
    pub ls: Option<usize>,
}

/// A chain: the product `pieces[0] * pieces[1] * …` applied right to left, with an
/// optional s-local piece on the xpay operand.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Chain {
    /// Snake-case name.
    pub name: String,
    /// The spec's doc comment (the operator's equation).
    pub doc: String,
    /// The name the header binds the hop to (e.g. `Dw`), if the chain has a hop.
    pub hop_name: Option<String>,
    /// Ls fixed by the spec (`ls = 12`), or a knob ([`FusedVariant::ls`]).
    pub ls: Option<usize>,
    /// The factors, left to right as written.
    pub pieces: Vec<Piece>,
    /// The s-local piece applied to the xpay operand: out = a · (X x) + b · (chain ψ).
    pub xpay: Option<SPiece>,
    /// The ways the spec's header (`m5inv = [sweep, dense, mma_f16, mma_bf16]`) lets a
    /// variant apply M5⁻¹ (M5⁻†) to the hop's result ([`FusedVariant::m5inv`]); empty:
    /// the SIMT ones ([`Chain::m5inv_modes`]).
    pub m5inv: Vec<M5invMode>,
    /// The header declares complex per-slice coefficients (`coeffs = complex`: zMöbius),
    /// which the tensor-core M5⁻¹ (real matrices) cannot apply.
    pub zmobius: bool,
}

/// A malformed chain: the piece at fault (its position in [`Chain::pieces`]; `None`:
/// the chain as a whole) and why. The macro reports it at that piece's token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainError {
    /// The piece at fault.
    pub piece: Option<usize>,
    /// The header's `m5inv` mode at fault (its position in [`Chain::m5inv`]).
    pub mode: Option<usize>,
    /// Why.
    pub reason: String,
}

impl Piece {
    /// The s-local piece, `None` for the hop.
    pub fn s_piece(&self) -> Option<SPiece> {
        match self.op {
            PieceOp::S(op) => Some(SPiece {
                op,
                dagger: self.dagger,
            }),
            PieceOp::Hop => None,
        }
    }
}

impl Chain {
    /// Checks the chain: at least one piece, at most one hop, every written Ls equal (and
    /// at least 2).
    pub fn validate(&self) -> Result<(), ChainError> {
        let at = |piece, reason: String| ChainError {
            piece,
            mode: None,
            reason,
        };
        if self.pieces.is_empty() {
            return Err(at(None, "the chain has no pieces".into()));
        }
        let mut hops = self
            .pieces
            .iter()
            .enumerate()
            .filter(|(_, p)| p.op == PieceOp::Hop);
        if let (Some(_), Some((second, _))) = (hops.next(), hops.next()) {
            return Err(at(
                Some(second),
                "a second hop in one kernel: a hop needs the previous hop's values at its \
                 neighbours, which only a grid-wide barrier (another kernel) provides; split \
                 the chain into two `fused5d!` specs"
                    .into(),
            ));
        }
        if self.hop_name.is_none() && self.pieces.iter().any(|p| p.op == PieceOp::Hop) {
            return Err(at(
                None,
                "a hop piece without a hop bound in the header".into(),
            ));
        }
        let mut ls = self.ls.map(|l| (l, "the header's `ls`".to_string()));
        if let Some((l, _)) = ls {
            if l < 2 {
                return Err(at(None, format!("Ls must be at least 2, found {l}")));
            }
        }
        for (k, p) in self.pieces.iter().enumerate() {
            let Some(l) = p.ls else { continue };
            match &ls {
                Some((expected, from)) if *expected != l => {
                    return Err(at(
                        Some(k),
                        format!("Ls mismatch: this piece is written for Ls = {l}, {from} for Ls = {expected}"),
                    ))
                }
                Some(_) => {}
                None if l < 2 => {
                    return Err(at(Some(k), format!("Ls must be at least 2, found {l}")))
                }
                None => ls = Some((l, format!("piece {} (`{}`)", k + 1, self.describe_piece(p)))),
            }
        }
        self.validate_m5inv_modes()
    }

    /// The header's `m5inv` modes: each at most once, and a mode other than the sweep
    /// only where M5⁻¹ acts on the hop's result; the tensor-core modes only for real
    /// coefficients (no `coeffs = complex`) and Ls ≤ [`MMA_MAX_LS`].
    fn validate_m5inv_modes(&self) -> Result<(), ChainError> {
        let at = |mode, reason: String| ChainError {
            piece: None,
            mode: Some(mode),
            reason,
        };
        let solved = self.result_pieces().iter().any(|p| p.op == SOp::M5Inv);
        for (k, &m) in self.m5inv.iter().enumerate() {
            if self.m5inv[..k].contains(&m) {
                return Err(at(k, format!("`{}` is listed twice", m.name())));
            }
            if m != M5invMode::Sweep && !solved {
                return Err(at(
                    k,
                    format!(
                        "`{}`: the chain applies no M5inv to the hop's result, so there is no \
                         M5inv for the knob to choose how to apply",
                        m.name()
                    ),
                ));
            }
            if m.operand().is_some() {
                if self.zmobius {
                    return Err(at(
                        k,
                        format!(
                            "`{}`: the tensor-core M5inv multiplies real Ls × Ls matrices, and \
                             `coeffs = complex` (zMöbius) makes M5inv complex; use `sweep` or `dense`",
                            m.name()
                        ),
                    ));
                }
                if let Some(l) = self.fixed_ls().filter(|&l| l > MMA_MAX_LS) {
                    return Err(at(
                        k,
                        format!(
                            "`{}` supports Ls up to {MMA_MAX_LS} (one m16n8k16 tile in s), the \
                             chain has Ls = {l}",
                            m.name()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The `m5inv` modes a variant may take: the header's list, or the SIMT ones (only
    /// the sweep, the default, where no M5⁻¹ acts on the hop's result).
    pub fn m5inv_modes(&self) -> Vec<M5invMode> {
        if !self.m5inv.is_empty() {
            self.m5inv.clone()
        } else if self.result_pieces().iter().any(|p| p.op == SOp::M5Inv) {
            M5invMode::SIMT.to_vec()
        } else {
            vec![M5invMode::Sweep]
        }
    }

    /// The Ls the spec fixes, if any (the header's or a piece's).
    pub fn fixed_ls(&self) -> Option<usize> {
        self.ls.or_else(|| self.pieces.iter().find_map(|p| p.ls))
    }

    /// The position of the hop in [`Self::pieces`].
    pub fn hop_position(&self) -> Option<usize> {
        self.pieces.iter().position(|p| p.op == PieceOp::Hop)
    }

    /// The hop piece's dagger.
    pub fn hop_dagger(&self) -> bool {
        self.hop_position().is_some_and(|h| self.pieces[h].dagger)
    }

    /// The s-local pieces acting on the hop's source, in application order (right to
    /// left); empty without a hop.
    pub fn source_pieces(&self) -> Vec<SPiece> {
        match self.hop_position() {
            Some(h) => self.pieces[h + 1..]
                .iter()
                .rev()
                .filter_map(Piece::s_piece)
                .collect(),
            None => Vec::new(),
        }
    }

    /// The s-local pieces acting on the hop's result (or, without a hop, on ψ), in
    /// application order.
    pub fn result_pieces(&self) -> Vec<SPiece> {
        let end = self.hop_position().unwrap_or(self.pieces.len());
        self.pieces[..end]
            .iter()
            .rev()
            .filter_map(Piece::s_piece)
            .collect()
    }

    /// Every distinct s-local piece (the chain's, then the xpay operand's), in
    /// application order: the matrices a kernel of the chain takes.
    pub fn matrices(&self) -> Vec<SPiece> {
        let mut all = self.source_pieces();
        all.extend(self.result_pieces());
        all.extend(self.xpay);
        let mut distinct: Vec<SPiece> = Vec::new();
        for p in all {
            if !distinct.contains(&p) {
                distinct.push(p);
            }
        }
        distinct
    }

    /// The matrices a GPU kernel of the chain takes, each once: [`Self::matrices`], with
    /// the sweep ([`M5invMode::Sweep`]) every M5⁻¹ (or M5⁻†) acting on the hop's result
    /// replaced by M5 (M5†), which the kernel solves in O(Ls) per site
    /// ([`crate::dsl::kernel_ir::ChiralSolve`]) instead of applying the dense inverse's
    /// rows in O(Ls²) (the other modes take the dense inverse itself).
    pub fn kernel_matrices(&self, mode: M5invMode) -> Vec<SPiece> {
        if mode != M5invMode::Sweep {
            return self.matrices();
        }
        let solved = self.result_pieces();
        let mut distinct: Vec<SPiece> = Vec::new();
        for p in self.matrices() {
            let p = if p.op == SOp::M5Inv && solved.contains(&p) {
                p.solve_operand()
            } else {
                p
            };
            if !distinct.contains(&p) {
                distinct.push(p);
            }
        }
        // A piece needed both solved and as a dense row keeps its dense matrices too.
        for p in self.source_pieces().into_iter().chain(self.xpay) {
            if !distinct.contains(&p) {
                distinct.push(p);
            }
        }
        distinct
    }

    fn describe_piece(&self, p: &Piece) -> String {
        let name = match p.op {
            PieceOp::Hop => self.hop_name.clone().unwrap_or_else(|| "hop".into()),
            PieceOp::S(op) => op.name().into(),
        };
        let dagger = if p.dagger { ".dagger()" } else { "" };
        format!("{name}{dagger}")
    }

    /// The product as written, e.g. `M5inv * Dw * Mphi`, and the xpay piece.
    pub fn describe(&self) -> String {
        let product: Vec<String> = self.pieces.iter().map(|p| self.describe_piece(p)).collect();
        let mut s = product.join(" * ");
        if let Some(x) = self.xpay {
            s.push_str(&format!(", xpay operand through {x}"));
        }
        s
    }
}

/// One variant of a chain's kernel: the stencil knobs ([`Variant`]: output sites,
/// xpay, formats, recon, boundary; the hop's dagger is the spec's) and Ls, a compile-time
/// constant of the kernel (blockDim.y = Ls).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FusedVariant {
    /// The stencil knobs.
    pub variant: Variant,
    /// Ls.
    pub ls: usize,
    /// How M5⁻¹ (M5⁻†) acting on the hop's result is applied (one of the chain's
    /// [`Chain::m5inv_modes`]).
    pub m5inv: M5invMode,
}

impl FusedVariant {
    /// The variant with Ls and the sweep for M5⁻¹.
    pub fn new(variant: Variant, ls: usize) -> Self {
        Self {
            variant,
            ls,
            m5inv: M5invMode::Sweep,
        }
    }

    /// The canonical text of the variant (with `ls=<Ls>`, and `m5inv=<mode>` unless the
    /// sweep).
    pub fn canonical(&self) -> String {
        let mode = match self.m5inv {
            M5invMode::Sweep => String::new(),
            m => format!(" m5inv={}", m.name()),
        };
        format!("{} ls={}{mode}", self.variant.canonical(), self.ls)
    }
}

impl Chain {
    /// Checks a variant against the chain: Ls (at least 2, the spec's where it fixes one),
    /// the dagger knob (off: daggers are written per piece), xpay present when the chain
    /// names an xpay piece, no Dirichlet walls where pieces act on the hop's source (a
    /// barrier inside a term skipped by some threads of a block), 4-spin 3-colour fields.
    pub fn check(&self, v: &FusedVariant) -> Result<(), DslError> {
        let unsupported = |knob, reason: String| DslError::UnsupportedVariant {
            kernel: self.name.clone(),
            knob,
            reason,
        };
        self.validate().map_err(|e| DslError::InvalidSpec {
            kernel: self.name.clone(),
            reason: e.reason,
        })?;
        // A box of sites (a decomposed lattice's interior or exterior): the launcher
        // runs whole blocks of a box whose map pairs sites (an even extent along x or
        // y), so every thread of a block has a site and reaches every barrier.
        if v.variant.region == crate::dsl::variant::Region::SubBox && self.hop_position().is_none()
        {
            return Err(unsupported(
                "region",
                "a box of sites is for chains with a hop (the s-local chains cover the parity)"
                    .into(),
            ));
        }
        if v.ls < 2 {
            return Err(unsupported(
                "ls",
                format!("Ls must be at least 2, found {}", v.ls),
            ));
        }
        if let Some(l) = self.fixed_ls() {
            if l != v.ls {
                return Err(unsupported(
                    "ls",
                    format!(
                        "the spec is written for Ls = {l}, the variant has Ls = {}",
                        v.ls
                    ),
                ));
            }
        }
        if v.variant.dagger {
            return Err(unsupported(
                "dagger",
                "a fused chain writes its daggers per piece (`Dw.dagger()`, `Mphi.dagger()`)"
                    .into(),
            ));
        }
        if !self.m5inv_modes().contains(&v.m5inv) {
            return Err(unsupported(
                "m5inv",
                format!(
                    "the spec applies M5inv as {}, not `{}` (list it in the header's `m5inv = [...]`)",
                    self.m5inv_modes()
                        .iter()
                        .map(|m| format!("`{}`", m.name()))
                        .collect::<Vec<_>>()
                        .join(", "),
                    v.m5inv.name()
                ),
            ));
        }
        if v.m5inv.operand().is_some() {
            if v.ls > MMA_MAX_LS {
                return Err(unsupported(
                    "m5inv",
                    format!(
                        "`{}` supports Ls up to {MMA_MAX_LS} (one m16n8k16 tile in s), the variant has Ls = {}",
                        v.m5inv.name(),
                        v.ls
                    ),
                ));
            }
            if v.variant.spinor.compute() == crate::dsl::variant::StorageFormat::F64 {
                return Err(unsupported(
                    "m5inv",
                    format!(
                        "`{}` is a sloppy M5inv for f32 compute; f64 spinors take `sweep` or `dense`",
                        v.m5inv.name()
                    ),
                ));
            }
        }
        if let Some(p) = self.xpay.filter(|_| !v.variant.xpay) {
            return Err(unsupported(
                "xpay",
                format!("the chain applies {p} to the xpay operand: xpay must be on"),
            ));
        }
        if v.variant.dirichlet.is_some() && !self.source_pieces().is_empty() {
            return Err(unsupported(
                "dirichlet",
                "pieces acting on the hop's source need every thread of a block at each term's barriers".into(),
            ));
        }
        Ok(())
    }
}

/// The matrices of an s-local operator O = P₊ A₊ + P₋ A₋ for one Ls: A₊ and A₋,
/// row-major (s, s'). In a kernel they are one array of 4 Ls² reals in the compute type,
/// `[chirality (P₊, P₋)][s][s'][re, im]` ([`Self::kernel_reals`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ChiralMatrices {
    /// Ls.
    pub ls: usize,
    /// A₊, row-major.
    pub plus: Vec<Complex<f64>>,
    /// A₋, row-major.
    pub minus: Vec<Complex<f64>>,
}

impl ChiralMatrices {
    /// The matrices with entries `plus(s, s')`, `minus(s, s')`.
    pub fn from_fn(
        ls: usize,
        plus: impl Fn(usize, usize) -> Complex<f64>,
        minus: impl Fn(usize, usize) -> Complex<f64>,
    ) -> Self {
        let all = |f: &dyn Fn(usize, usize) -> Complex<f64>| {
            (0..ls * ls).map(|k| f(k / ls, k % ls)).collect()
        };
        Self {
            ls,
            plus: all(&plus),
            minus: all(&minus),
        }
    }

    /// The kernel parameter's reals: `[P₊ then P₋][s][s'][re, im]`.
    pub fn kernel_reals(&self) -> Vec<f64> {
        self.plus
            .iter()
            .chain(&self.minus)
            .flat_map(|z| [z.re, z.im])
            .collect()
    }

    /// The coefficients of the in-place O(Ls) solve A y = x of
    /// [`crate::dsl::kernel_ir::ChiralSolve`] for A cyclic bidiagonal, per chirality
    /// (P₊ then P₋), in the sweep's order n: the slice s_n = n when the off-diagonal sits
    /// at s − 1 ("lower": P₊ of M5, P₋ of its `adjoint` M5†), else s_n = Ls − 1 − n (the
    /// off-diagonal at s + 1), with d_n = A(s_n, s_n) and e_n = A(s_n, s_{n−1}):
    ///
    /// [1/d_n, e_n, q_n] for n = 0 … Ls − 1, then w = 1/(1 − q_{Ls−1}),
    /// q₀ = −e₀/d₀,  q_n = −(e_n/d_n) q_{n−1},
    ///
    /// each complex as (re, im): 6 Ls + 2 reals per chirality, computed once in f64 here so
    /// that the kernel's sweeps are multiply-adds only: p_n = (x_n − e_n p_{n−1})/d_n,
    /// Y = p_{Ls−1} w, y_n = p_n + q_n Y.
    pub fn sweep_reals(&self, adjoint: bool) -> Vec<f64> {
        let ls = self.ls;
        let mut out = Vec::with_capacity(2 * (6 * ls + 2));
        for (chi, a) in [&self.plus, &self.minus].into_iter().enumerate() {
            let lower = (chi == 0) != adjoint;
            let slice = |n: usize| if lower { n } else { ls - 1 - n };
            let mut q = Complex::new(0.0, 0.0);
            for n in 0..ls {
                let (s, prev) = (slice(n), slice((n + ls - 1) % ls));
                let (d, e) = (a[s * ls + s], a[s * ls + prev]);
                let inv_d = d.inv();
                q = if n == 0 { -e * inv_d } else { -e * inv_d * q };
                for z in [inv_d, e, q] {
                    out.extend([z.re, z.im]);
                }
            }
            let w = (Complex::new(1.0, 0.0) - q).inv();
            out.extend([w.re, w.im]);
        }
        out
    }

    /// Whether every row has nonzero entries at s and s ± 1 (mod Ls) only (what a
    /// sparse piece's kernel reads).
    pub fn is_tridiagonal_periodic(&self) -> bool {
        let ls = self.ls;
        let near = |s: usize, t: usize| {
            let d = (t + ls - s) % ls;
            d == 0 || d == 1 || d == ls - 1
        };
        (0..ls * ls).all(|k| {
            near(k / ls, k % ls)
                || (self.plus[k].norm_sqr() == 0.0 && self.minus[k].norm_sqr() == 0.0)
        })
    }
}

#[cfg(test)]
mod mma_tests;
#[cfg(test)]
mod tests;

/// A kernel defined by a `fused5d!` spec: the macro generates a unit struct implementing
/// it (and an inherent `apply_cpu`, [`cpu::apply`] with the hop's generated CPU code).
pub trait Fused5d {
    /// The chain.
    fn chain() -> Chain;

    /// The spec of the hop the chain binds, if it has one.
    fn hop() -> Option<super::Ir>;

    /// The lowered hop.
    fn lowered_hop() -> Result<Option<super::lower::Lowered>, DslError> {
        Self::hop().map(|ir| super::lower::lower(&ir)).transpose()
    }

    /// The kernel IR of a variant after the passes.
    fn kernel_ir(v: &FusedVariant) -> Result<super::kernel_ir::KernelIr, DslError> {
        plan::kernel_ir(&Self::chain(), Self::lowered_hop()?.as_ref(), v)
    }

    /// The variant's kernel with its interface.
    fn compiled(v: &FusedVariant) -> Result<super::CompiledKernel, DslError> {
        plan::compile(&Self::chain(), Self::lowered_hop()?.as_ref(), v)
    }

    /// The CUDA source of a variant.
    fn cuda_source(v: &FusedVariant) -> Result<String, DslError> {
        Self::compiled(v).map(|k| k.source)
    }

    /// The `extern "C"` name of a variant's kernel.
    fn kernel_name(v: &FusedVariant) -> String {
        plan::kernel_name(&Self::chain(), v)
    }
}
