//! [`MobiusParams`]: Ls, the Möbius coefficients b_s, c_s, the domain-wall height M5 and
//! the quark mass m_f, validated once.

use qdsl_core::Complex;

type C = Complex<f64>;

/// What makes a set of Möbius parameters unusable.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MobiusError {
    /// Ls must be at least 2 (the walls s = 0 and s = Ls − 1 are distinct).
    #[error("Ls must be at least 2, found {0}")]
    Ls(usize),
    /// One coefficient list of zMöbius has a length other than Ls.
    #[error("{name} has {found} entries, expected Ls = {expected}")]
    CoefficientCount {
        /// `b5` or `c5`.
        name: &'static str,
        /// Ls.
        expected: usize,
        /// The list's length.
        found: usize,
    },
    /// A parameter is NaN or infinite.
    #[error("{0} is not finite")]
    NotFinite(&'static str),
    /// α_s = b_s (4 − M5) + 1 vanishes: M5 has no inverse.
    #[error("b5[{s}] (4 − M5) + 1 = 0: M5 is singular")]
    SingularDiagonal {
        /// The slice.
        s: usize,
    },
    /// 1 + m_f Π_s k_s vanishes (k_s = −β_s/α_s): M5 has no inverse.
    #[error("1 + m_f Π_s k_s = 0 (k_s = (1 − c_s (4 − M5)) / (b_s (4 − M5) + 1)): M5 is singular")]
    SingularWalls,
    /// The tensor-core M5⁻¹ cannot apply these parameters (complex zMöbius matrices,
    /// Ls > 16).
    #[error("the tensor-core M5⁻¹: {0}")]
    TensorCore(String),
    /// A field an s-operator cannot act on.
    #[error("an s-operator of Ls = {expected_ls} on Wilson spinors (12 components per site) applied to a field of Ls = {found_ls} with {found_site_len} components per site")]
    FieldShape {
        /// The operator's Ls.
        expected_ls: usize,
        /// The field's Ls.
        found_ls: usize,
        /// The field's components per site.
        found_site_len: usize,
    },
}

/// The parameters of the Möbius domain-wall operator (module docs of
/// [`super`]): Ls, b_s and c_s for s = 0 … Ls − 1, the domain-wall height M5 (QUDA's
/// `m5` is −M5) and the quark mass m_f.
#[derive(Clone, Debug, PartialEq)]
pub struct MobiusParams {
    b5: Vec<C>,
    c5: Vec<C>,
    m5: f64,
    mass: f64,
}

impl MobiusParams {
    /// Möbius with constant real b5, c5.
    pub fn mobius(ls: usize, b5: f64, c5: f64, m5: f64, mass: f64) -> Result<Self, MobiusError> {
        let real = |v: f64| vec![C::new(v, 0.0); ls];
        Self::zmobius(real(b5), real(c5), m5, mass)
    }

    /// Shamir's domain wall: b5 = 1, c5 = 0.
    pub fn shamir(ls: usize, m5: f64, mass: f64) -> Result<Self, MobiusError> {
        Self::mobius(ls, 1.0, 0.0, m5, mass)
    }

    /// zMöbius: b_s, c_s given per slice (complex), Ls = their length.
    pub fn zmobius(b5: Vec<C>, c5: Vec<C>, m5: f64, mass: f64) -> Result<Self, MobiusError> {
        let ls = b5.len();
        if ls < 2 {
            return Err(MobiusError::Ls(ls));
        }
        if c5.len() != ls {
            return Err(MobiusError::CoefficientCount {
                name: "c5",
                expected: ls,
                found: c5.len(),
            });
        }
        let finite = |z: &C| z.re.is_finite() && z.im.is_finite();
        if !b5.iter().all(finite) {
            return Err(MobiusError::NotFinite("b5"));
        }
        if !c5.iter().all(finite) {
            return Err(MobiusError::NotFinite("c5"));
        }
        if !m5.is_finite() {
            return Err(MobiusError::NotFinite("M5"));
        }
        if !mass.is_finite() {
            return Err(MobiusError::NotFinite("m_f"));
        }
        let params = Self { b5, c5, m5, mass };
        for s in 0..ls {
            if params.alpha(s).norm() == 0.0 {
                return Err(MobiusError::SingularDiagonal { s });
            }
        }
        if params.wall_denominator().norm() < 1e-300 {
            return Err(MobiusError::SingularWalls);
        }
        Ok(params)
    }

    /// Ls.
    pub fn ls(&self) -> usize {
        self.b5.len()
    }

    /// b_s.
    pub fn b5(&self) -> &[C] {
        &self.b5
    }

    /// c_s.
    pub fn c5(&self) -> &[C] {
        &self.c5
    }

    /// The domain-wall height M5.
    pub fn m5(&self) -> f64 {
        self.m5
    }

    /// The quark mass m_f.
    pub fn mass(&self) -> f64 {
        self.mass
    }

    /// The same parameters with the quark mass `mass`.
    pub fn with_mass(&self, mass: f64) -> Result<Self, MobiusError> {
        Self::zmobius(self.b5.clone(), self.c5.clone(), self.m5, mass)
    }

    /// α_s = b_s (4 − M5) + 1, the diagonal of M5.
    pub fn alpha(&self, s: usize) -> C {
        self.b5[s] * (4.0 - self.m5) + 1.0
    }

    /// β_s = c_s (4 − M5) − 1, the coefficient of S in M5.
    pub fn beta(&self, s: usize) -> C {
        self.c5[s] * (4.0 - self.m5) - 1.0
    }

    /// k_s = −β_s / α_s (QUDA's κ = κ_b/κ_c for constant coefficients).
    pub fn k(&self, s: usize) -> C {
        -self.beta(s) / self.alpha(s)
    }

    /// 1 + m_f Π_s k_s, the denominator of M5⁻¹.
    pub fn wall_denominator(&self) -> C {
        let prod = (0..self.ls()).fold(C::new(1.0, 0.0), |p, s| p * self.k(s));
        prod * self.mass + 1.0
    }

    /// Whether b_s and c_s are real and symmetric under s → Ls − 1 − s: then γ5 R5 D is
    /// Hermitian (R5 the reflection s → Ls − 1 − s).
    pub fn is_reflection_symmetric(&self) -> bool {
        let ls = self.ls();
        self.b5.iter().chain(&self.c5).all(|z| z.im == 0.0)
            && (0..ls)
                .all(|s| self.b5[s] == self.b5[ls - 1 - s] && self.c5[s] == self.c5[ls - 1 - s])
    }
}
