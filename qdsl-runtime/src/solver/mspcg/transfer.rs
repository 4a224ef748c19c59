//! [`Transfer`]: the map T from 5D fields of Ls slices to 5D fields of a reduced L̂s,
//! for the reduced-Ls preconditioner of MSPCG ([`super::ReducedLs`]).
//!
//! # The map
//!
//! T acts on spin × s and is trivial in colour and site-local (so it commutes with the
//! gauge links, with gauge transformations and with the block projections P_s):
//!
//! (T x)_{ŝ}(site)_{α c} = Σ_{s=0}^{Ls−1} Σ_{β=0}^{3} t_{ŝ s, α β} x_s(site)_{β c},
//! (T† y)_s(site)_{β c} = Σ_{ŝ=0}^{L̂s−1} Σ_α conj(t_{ŝ s, α β}) y_{ŝ}(site)_{α c},
//!
//! one complex 4 × 4 spin matrix t_{ŝ s} per pair (ŝ, s). Two forms ([`TransferForm`]):
//!
//! * [`TransferForm::Spin`]: t_{ŝ s} any 4 × 4 complex matrix — the 16 complex parameters
//!   per pair of the spin form, which is the general map on spin × s that is trivial in
//!   colour (any such map has exactly these L̂s · Ls · 16 entries). A map that mixes
//!   colours would not be gauge covariant, so a T trained on one configuration could not
//!   carry over to another: it is not offered.
//! * [`TransferForm::Chiral`]: t_{ŝ s} = a_{ŝ s} P₊ + b_{ŝ s} P₋ (P± = (1 ± γ5)/2,
//!   γ5 = diag(1, 1, −1, −1)): 2 complex parameters per pair, the restricted form that
//!   keeps the chiral structure of the domain-wall fifth dimension.
//!
//! # The gradient
//!
//! For a real function χ²(t) whose variation is δχ² = 2 Re Σ_{ŝ s α β} G_{ŝ s, α β}
//! δt_{ŝ s, α β} (the form [`super::training`] produces: G a sum of outer products
//! Σ_{site, c} conj(y_{ŝ α c}) g_{s β c}, [`Transfer::accumulate_outer`]), the real
//! gradient with respect to the real and imaginary parts of a parameter θ that enters
//! t linearly, δt = E_θ δθ, is
//!
//! ∂χ²/∂Re θ = 2 Re Σ G·E_θ,  ∂χ²/∂Im θ = −2 Im Σ G·E_θ
//!
//! ([`Transfer::project_gradient`]); the parameters are exposed as a real vector
//! (re, im of each θ in order, [`Transfer::params`]).
//!
//! # The file
//!
//! [`Transfer::save`] writes a text file: a header (`qdsl-transfer 1`, the form, Ls,
//! L̂s, μ and free `key value` notes such as the action's parameters) and one line
//! `ŝ s k re im` per complex parameter; [`Transfer::load`] reads it back and reports
//! every mismatch as an error naming the file, the expected and the found value.

use qdsl_core::field::{ColourSpinorField, SpinorLayout};
use qdsl_core::{Complex, Real};
use rayon::prelude::*;
use std::fmt;
use std::path::{Path, PathBuf};

type C64 = Complex<f64>;

/// A 4 × 4 complex spin matrix, row α, column β.
pub type SpinMatrix = [[C64; 4]; 4];

const ZERO: C64 = C64 { re: 0.0, im: 0.0 };
const SPIN_ZERO: SpinMatrix = [[ZERO; 4]; 4];
const MAGIC: &str = "qdsl-transfer 1";

/// The parametrisation of the transfer (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferForm {
    /// A general 4 × 4 complex spin matrix per pair (ŝ, s): 16 parameters per pair.
    Spin,
    /// a P₊ + b P₋ per pair: 2 parameters per pair.
    Chiral,
}

impl TransferForm {
    /// Complex parameters per pair (ŝ, s).
    pub fn params_per_pair(self) -> usize {
        match self {
            Self::Spin => 16,
            Self::Chiral => 2,
        }
    }

    /// The name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Self::Spin => "spin",
            Self::Chiral => "chiral",
        }
    }

    /// The form of a name ([`Self::name`]).
    pub fn from_name(name: &str) -> Result<Self, String> {
        match name {
            "spin" => Ok(Self::Spin),
            "chiral" => Ok(Self::Chiral),
            other => Err(format!(
                "transfer form {other:?}: expected \"spin\" (16 parameters per pair) or \"chiral\" (2)"
            )),
        }
    }

    /// E_k: the spin matrix multiplying parameter k of a pair.
    fn basis(self, k: usize) -> SpinMatrix {
        let mut e = SPIN_ZERO;
        match self {
            Self::Spin => e[k / 4][k % 4] = C64::new(1.0, 0.0),
            Self::Chiral => {
                // k = 0: P₊ = diag(1, 1, 0, 0); k = 1: P₋ = diag(0, 0, 1, 1).
                e[2 * k][2 * k] = C64::new(1.0, 0.0);
                e[2 * k + 1][2 * k + 1] = C64::new(1.0, 0.0);
            }
        }
        e
    }
}

impl fmt::Display for TransferForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The transfer training starts from (and an untrained solve uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferStart {
    /// [`Transfer::averaging`].
    Averaging,
    /// [`Transfer::walls`].
    Walls,
}

impl TransferStart {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Averaging => "averaging",
            Self::Walls => "walls",
        }
    }

    /// From its name.
    pub fn from_name(name: &str) -> Result<Self, String> {
        match name {
            "averaging" => Ok(Self::Averaging),
            "walls" => Ok(Self::Walls),
            other => Err(format!(
                "transfer start {other:?}: expected \"averaging\" or \"walls\""
            )),
        }
    }

    /// The transfer for Ls → L̂s in `form`.
    pub fn transfer(
        self,
        ls: usize,
        ls_hat: usize,
        form: TransferForm,
    ) -> Result<Transfer, TransferError> {
        match self {
            Self::Averaging => Transfer::averaging(ls, ls_hat, form),
            Self::Walls => Transfer::walls(ls, ls_hat, form),
        }
    }
}

/// Why a transfer cannot be used or read.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// Bad sizes.
    #[error("a transfer needs 1 ≤ L̂s ≤ Ls, found Ls {ls} and L̂s {ls_hat}")]
    Sizes {
        /// Ls.
        ls: usize,
        /// L̂s.
        ls_hat: usize,
    },
    /// A field's fifth dimension is not the one the transfer maps.
    #[error("{which} field has Ls {found}, the transfer expects {expected}")]
    FieldLs {
        /// "input" or "output".
        which: &'static str,
        /// Expected Ls.
        expected: usize,
        /// Found Ls.
        found: usize,
    },
    /// The file cannot be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file's content is not what was expected.
    #[error("{}: line {line}: expected {expected}, found {found:?}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// 1-based line number (0: the end of the file).
        line: usize,
        /// What was expected.
        expected: String,
        /// What was found.
        found: String,
    },
}

/// The transfer T (module docs): one spin matrix per pair (ŝ, s), built from the
/// form's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Transfer {
    ls: usize,
    ls_hat: usize,
    form: TransferForm,
    /// Complex parameters, pair-major: index (ŝ · Ls + s) · n + k.
    theta: Vec<C64>,
    /// t_{ŝ s}, index ŝ · Ls + s (derived from θ).
    t: Vec<SpinMatrix>,
}

impl Transfer {
    /// The starting point of training: block averaging of the fifth dimension,
    /// t_{ŝ s} = √(L̂s/Ls) · 1 if s lies in the ŝ-th of L̂s equal parts of 0..Ls, else 0
    /// (T T† = 1 when L̂s divides Ls).
    pub fn averaging(ls: usize, ls_hat: usize, form: TransferForm) -> Result<Self, TransferError> {
        if ls_hat == 0 || ls_hat > ls {
            return Err(TransferError::Sizes { ls, ls_hat });
        }
        let n = form.params_per_pair();
        let mut theta = vec![ZERO; ls_hat * ls * n];
        let w = (ls_hat as f64 / ls as f64).sqrt();
        for s in 0..ls {
            let s_hat = s * ls_hat / ls;
            let pair = (s_hat * ls + s) * n;
            match form {
                TransferForm::Spin => {
                    for a in 0..4 {
                        theta[pair + 5 * a] = C64::new(w, 0.0);
                    }
                }
                TransferForm::Chiral => {
                    theta[pair] = C64::new(w, 0.0);
                    theta[pair + 1] = C64::new(w, 0.0);
                }
            }
        }
        Self::from_theta(ls, ls_hat, form, theta)
    }

    /// A starting point that keeps the domain walls: the chiral projections that carry
    /// the 4D quark q = P₋ψ(0) + P₊ψ(Ls−1) go whole to the reduced walls
    /// (t_{0 0} ∋ P₋, t_{L̂s−1 Ls−1} ∋ P₊, weight 1), and the rest of each chirality,
    /// s = 1…Ls−1 for P₋ and s = 0…Ls−2 for P₊, is block-averaged over the other L̂s − 1
    /// reduced slices (weights 1/√(part size)), so T T† = 1 when L̂s − 1 divides Ls − 1.
    /// Needs L̂s ≥ 2.
    pub fn walls(ls: usize, ls_hat: usize, form: TransferForm) -> Result<Self, TransferError> {
        if ls_hat < 2 || ls_hat > ls {
            return Err(TransferError::Sizes { ls, ls_hat });
        }
        let n = form.params_per_pair();
        let mut theta = vec![ZERO; ls_hat * ls * n];
        // (s, ŝ) pairs of one chirality: its wall slice whole, the bulk averaged.
        let chirality = |wall: usize, wall_hat: usize| -> Vec<(usize, usize, f64)> {
            let bulk: Vec<usize> = (0..ls).filter(|&s| s != wall).collect();
            let bulk_hat: Vec<usize> = (0..ls_hat).filter(|&h| h != wall_hat).collect();
            let part = |i: usize| i * bulk_hat.len() / bulk.len();
            let mut out = vec![(wall, wall_hat, 1.0)];
            for (i, &s) in bulk.iter().enumerate() {
                let size = (0..bulk.len()).filter(|&j| part(j) == part(i)).count();
                out.push((s, bulk_hat[part(i)], 1.0 / (size as f64).sqrt()));
            }
            out
        };
        // Spin basis indices (diagonal entries) of P₊ (α = 0, 1) and P₋ (α = 2, 3); in the
        // chiral form k = 0 is P₊ and k = 1 is P₋.
        let sectors = [
            (chirality(ls - 1, ls_hat - 1), [0usize, 1], 0usize),
            (chirality(0, 0), [2, 3], 1),
        ];
        for (pairs, spins, k) in sectors {
            for (s, s_hat, w) in pairs {
                let pair = (s_hat * ls + s) * n;
                match form {
                    TransferForm::Spin => {
                        for a in spins {
                            theta[pair + 5 * a] = C64::new(w, 0.0);
                        }
                    }
                    TransferForm::Chiral => theta[pair + k] = C64::new(w, 0.0),
                }
            }
        }
        Self::from_theta(ls, ls_hat, form, theta)
    }

    /// The same map times a real factor f (T†K̂T scales by f² for a homogeneous K̂).
    pub fn scale(&mut self, f: f64) {
        self.theta.iter_mut().for_each(|z| *z *= f);
        self.rebuild();
    }

    /// A transfer from its complex parameters (pair-major, [`Self::theta`]).
    pub fn from_theta(
        ls: usize,
        ls_hat: usize,
        form: TransferForm,
        theta: Vec<C64>,
    ) -> Result<Self, TransferError> {
        if ls_hat == 0 || ls_hat > ls {
            return Err(TransferError::Sizes { ls, ls_hat });
        }
        assert_eq!(theta.len(), ls_hat * ls * form.params_per_pair());
        let mut out = Self {
            ls,
            ls_hat,
            form,
            theta,
            t: vec![SPIN_ZERO; ls_hat * ls],
        };
        out.rebuild();
        Ok(out)
    }

    fn rebuild(&mut self) {
        let n = self.form.params_per_pair();
        let basis: Vec<SpinMatrix> = (0..n).map(|k| self.form.basis(k)).collect();
        for (pair, t) in self.t.iter_mut().enumerate() {
            *t = SPIN_ZERO;
            for (k, e) in basis.iter().enumerate() {
                let th = self.theta[pair * n + k];
                for a in 0..4 {
                    for b in 0..4 {
                        t[a][b] += th * e[a][b];
                    }
                }
            }
        }
    }

    /// Ls of the input of T.
    pub fn ls(&self) -> usize {
        self.ls
    }

    /// L̂s of the output of T.
    pub fn ls_hat(&self) -> usize {
        self.ls_hat
    }

    /// The form.
    pub fn form(&self) -> TransferForm {
        self.form
    }

    /// The complex parameters θ, pair-major ((ŝ · Ls + s) · n + k).
    pub fn theta(&self) -> &[C64] {
        &self.theta
    }

    /// t_{ŝ s}.
    pub fn matrix(&self, s_hat: usize, s: usize) -> &SpinMatrix {
        &self.t[s_hat * self.ls + s]
    }

    /// The parameters as a real vector (re, im of each θ in order).
    pub fn params(&self) -> Vec<f64> {
        self.theta.iter().flat_map(|z| [z.re, z.im]).collect()
    }

    /// Sets the parameters from a real vector ([`Self::params`]).
    pub fn set_params(&mut self, p: &[f64]) {
        assert_eq!(p.len(), 2 * self.theta.len());
        for (z, c) in self.theta.iter_mut().zip(p.chunks_exact(2)) {
            *z = C64::new(c[0], c[1]);
        }
        self.rebuild();
    }

    fn check(
        &self,
        layout: &SpinorLayout,
        expected: usize,
        which: &'static str,
    ) -> Result<(), TransferError> {
        if layout.ls() != expected {
            return Err(TransferError::FieldLs {
                which,
                expected,
                found: layout.ls(),
            });
        }
        Ok(())
    }

    /// out = T x: `x` with Ls slices, `out` with L̂s slices on the same 4D sites.
    pub fn apply<T: Real>(
        &self,
        out: &mut ColourSpinorField<T>,
        x: &ColourSpinorField<T>,
    ) -> Result<(), TransferError> {
        self.check(x.layout(), self.ls, "input")?;
        self.check(out.layout(), self.ls_hat, "output")?;
        let slice = x.layout().sites_per_slice() * 12;
        let src = x.data();
        out.data_mut()
            .par_chunks_mut(slice)
            .enumerate()
            .for_each(|(s_hat, dst)| {
                let mats: Vec<&SpinMatrix> = (0..self.ls).map(|s| self.matrix(s_hat, s)).collect();
                spin_combine(dst, src, slice, &mats, false);
            });
        Ok(())
    }

    /// out = T† y: `y` with L̂s slices, `out` with Ls slices.
    pub fn apply_dagger<T: Real>(
        &self,
        out: &mut ColourSpinorField<T>,
        y: &ColourSpinorField<T>,
    ) -> Result<(), TransferError> {
        self.check(y.layout(), self.ls_hat, "input")?;
        self.check(out.layout(), self.ls, "output")?;
        let slice = y.layout().sites_per_slice() * 12;
        let src = y.data();
        out.data_mut()
            .par_chunks_mut(slice)
            .enumerate()
            .for_each(|(s, dst)| {
                let mats: Vec<&SpinMatrix> = (0..self.ls_hat)
                    .map(|s_hat| self.matrix(s_hat, s))
                    .collect();
                spin_combine(dst, src, slice, &mats, true);
            });
        Ok(())
    }

    /// G_{ŝ s, α β} += Σ_{site, c} conj(y_{ŝ}(site)_{α c}) g_s(site)_{β c} for every pair:
    /// `grad` indexed like the matrices (ŝ · Ls + s), `y` with L̂s slices, `g` with Ls.
    pub fn accumulate_outer(
        &self,
        grad: &mut [SpinMatrix],
        y: &ColourSpinorField<f64>,
        g: &ColourSpinorField<f64>,
    ) -> Result<(), TransferError> {
        self.check(y.layout(), self.ls_hat, "reduced")?;
        self.check(g.layout(), self.ls, "full")?;
        assert_eq!(grad.len(), self.t.len());
        let slice = g.layout().sites_per_slice() * 12;
        let (yd, gd) = (y.data(), g.data());
        grad.par_iter_mut().enumerate().for_each(|(pair, acc)| {
            let (s_hat, s) = (pair / self.ls, pair % self.ls);
            let ys = &yd[s_hat * slice..(s_hat + 1) * slice];
            let gs = &gd[s * slice..(s + 1) * slice];
            for (ysite, gsite) in ys.chunks_exact(12).zip(gs.chunks_exact(12)) {
                for a in 0..4 {
                    for b in 0..4 {
                        let mut sum = ZERO;
                        for c in 0..3 {
                            sum += ysite[3 * a + c].conj() * gsite[3 * b + c];
                        }
                        acc[a][b] += sum;
                    }
                }
            }
        });
        Ok(())
    }

    /// The real gradient (module docs) of a χ² with δχ² = 2 Re Σ G δt, from G
    /// ([`Self::accumulate_outer`]), in the order of [`Self::params`].
    pub fn project_gradient(&self, grad: &[SpinMatrix]) -> Vec<f64> {
        let n = self.form.params_per_pair();
        let basis: Vec<SpinMatrix> = (0..n).map(|k| self.form.basis(k)).collect();
        let mut out = Vec::with_capacity(2 * self.theta.len());
        for g in grad {
            for e in &basis {
                let mut ge = ZERO;
                for a in 0..4 {
                    for b in 0..4 {
                        ge += g[a][b] * e[a][b];
                    }
                }
                out.push(2.0 * ge.re);
                out.push(-2.0 * ge.im);
            }
        }
        out
    }

    /// Writes the transfer, μ and the notes (`key value` lines, e.g. the action's
    /// parameters) to `path` (module docs).
    pub fn save(
        &self,
        path: &Path,
        mu: f64,
        notes: &[(String, String)],
    ) -> Result<(), TransferError> {
        let mut text = format!(
            "{MAGIC}\nform {}\nls {}\nls_hat {}\nmu {mu:.17e}\n",
            self.form, self.ls, self.ls_hat
        );
        for (k, v) in notes {
            text.push_str(&format!("note {k} {v}\n"));
        }
        let n = self.form.params_per_pair();
        for (i, z) in self.theta.iter().enumerate() {
            let (pair, k) = (i / n, i % n);
            text.push_str(&format!(
                "{} {} {k} {:.17e} {:.17e}\n",
                pair / self.ls,
                pair % self.ls,
                z.re,
                z.im
            ));
        }
        std::fs::write(path, text).map_err(|source| TransferError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Reads a transfer written by [`Self::save`]: the transfer, μ and the notes.
    pub fn load(path: &Path) -> Result<LoadedTransfer, TransferError> {
        let text = std::fs::read_to_string(path).map_err(|source| TransferError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let err = |line: usize, expected: String, found: &str| TransferError::Format {
            path: path.to_path_buf(),
            line,
            expected,
            found: found.to_string(),
        };
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
        let mut next = |expected: &str| {
            lines
                .next()
                .ok_or_else(|| err(0, expected.to_string(), "the end of the file"))
        };
        let (no, magic) = next(MAGIC)?;
        if magic != MAGIC {
            return Err(err(no, format!("{MAGIC:?}"), magic));
        }
        let mut field = |key: &str| -> Result<(usize, String), TransferError> {
            let (no, line) = next(&format!("\"{key} VALUE\""))?;
            match line.split_once(' ') {
                Some((k, v)) if k == key => Ok((no, v.trim().to_string())),
                _ => Err(err(no, format!("\"{key} VALUE\""), line)),
            }
        };
        let (no, form) = field("form")?;
        let form = TransferForm::from_name(&form).map_err(|e| err(no, e, &form))?;
        let mut size = |key: &str| -> Result<usize, TransferError> {
            let (no, v) = field(key)?;
            v.parse::<usize>()
                .map_err(|_| err(no, format!("{key}: a positive integer"), &v))
        };
        let ls = size("ls")?;
        let ls_hat = size("ls_hat")?;
        if ls_hat == 0 || ls_hat > ls {
            return Err(err(
                0,
                format!("1 ≤ ls_hat ≤ ls (ls {ls})"),
                &ls_hat.to_string(),
            ));
        }
        let (no, mu_text) = field("mu")?;
        let mu = mu_text
            .parse::<f64>()
            .ok()
            .filter(|m| m.is_finite())
            .ok_or_else(|| err(no, "mu: a finite number".into(), &mu_text))?;
        let n = form.params_per_pair();
        let count = ls_hat * ls * n;
        let mut notes = Vec::new();
        let mut theta = Vec::with_capacity(count);
        for (no, line) in lines {
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix("note ") {
                let (k, v) = rest.split_once(' ').unwrap_or((rest, ""));
                notes.push((k.to_string(), v.to_string()));
                continue;
            }
            let i = theta.len();
            if i == count {
                return Err(err(
                    no,
                    format!("{count} parameters ({form} form, ls {ls}, ls_hat {ls_hat}), no more"),
                    line,
                ));
            }
            let (pair, k) = (i / n, i % n);
            let expected = format!("\"{} {} {k} RE IM\"", pair / ls, pair % ls);
            let parts: Vec<&str> = line.split_whitespace().collect();
            let index_ok = parts.len() == 5
                && parts[0] == (pair / ls).to_string()
                && parts[1] == (pair % ls).to_string()
                && parts[2] == k.to_string();
            let value = |t: &str| t.parse::<f64>().ok().filter(|v| v.is_finite());
            match (
                index_ok,
                parts.get(3).and_then(|t| value(t)),
                parts.get(4).and_then(|t| value(t)),
            ) {
                (true, Some(re), Some(im)) => theta.push(C64::new(re, im)),
                _ => return Err(err(no, expected, line)),
            }
        }
        if theta.len() != count {
            return Err(err(
                0,
                format!("{count} parameters ({form} form, ls {ls}, ls_hat {ls_hat})"),
                &format!("{} parameters", theta.len()),
            ));
        }
        Ok(LoadedTransfer {
            transfer: Self::from_theta(ls, ls_hat, form, theta)?,
            mu,
            notes,
        })
    }
}

/// A transfer read from a file, with the μ it was trained with and its notes.
#[derive(Clone, Debug)]
pub struct LoadedTransfer {
    /// T.
    pub transfer: Transfer,
    /// μ of the training.
    pub mu: f64,
    /// The `note key value` lines.
    pub notes: Vec<(String, String)>,
}

/// dst = Σ_j m_j src_j (or Σ_j m_j† src_j) per site, src_j the j-th slice of `src`
/// (slices of `slice` components, 12 per site, spin-major).
fn spin_combine<T: Real>(
    dst: &mut [Complex<T>],
    src: &[Complex<T>],
    slice: usize,
    mats: &[&SpinMatrix],
    dagger: bool,
) {
    for (site, out) in dst.chunks_exact_mut(12).enumerate() {
        let mut acc = [ZERO; 12];
        for (j, m) in mats.iter().enumerate() {
            let x = &src[j * slice + site * 12..j * slice + site * 12 + 12];
            for a in 0..4 {
                for b in 0..4 {
                    let w = if dagger { m[b][a].conj() } else { m[a][b] };
                    if w == ZERO {
                        continue;
                    }
                    for c in 0..3 {
                        let v = x[3 * b + c];
                        acc[3 * a + c] += w * C64::new(v.re.to_f64(), v.im.to_f64());
                    }
                }
            }
        }
        for (o, a) in out.iter_mut().zip(acc) {
            *o = Complex::new(T::from_f64(a.re), T::from_f64(a.im));
        }
    }
}
