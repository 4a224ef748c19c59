//! Smeared links, each written once as a `link_paths!` spec: asqtad fat and long (Naik)
//! links, fat7, and the second HISQ level (coefficients of MILC, tadpole factor
//! u0^(−(length − 1)) per path); [`hisq_links`] chains fat7, the U(3) projection and the
//! second level ([`hisq_chain`]: the chain written once, for the host here and the
//! device in the runtime, over [`HisqStages`]).
//! The input links carry the staggered phases and the antiperiodic time boundary
//! ([`fold_staggered_phases`]), as in MILC.

use qdsl_core::dsl::paths::LinkPaths;
use qdsl_core::dsl::DslError;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Coords;
use qdsl_core::math::MatrixError;
use qdsl_core::real::Real;
use qdsl_macros::link_paths;

link_paths! {
    /// Asqtad fat links (MILC): F_μ(x) = 5/8 U_μ(x) − 1/(16u0²) Σ 3-staples
    /// + 1/(64u0⁴) Σ 5-staples − 1/(384u0⁶) Σ 7-staples − 1/(16u0⁴) Σ Lepage,
    /// summed over the distinct transverse directions ν, ρ, σ and both orientations of each
    /// (1 + 6 + 24 + 48 + 6 = 85 paths). Unit links: 5/8 + 3/(8u0²) + 1/(8u0⁶).
    pub asqtad_fat(u: Gauge) -> fat {
        one_link: 5/8 * [+mu];
        staple3: -1/16 * [+nu, +mu, -nu];
        staple5: 1/64 * [+nu, +rho, +mu, -rho, -nu];
        staple7: -1/384 * [+nu, +rho, +sigma, +mu, -sigma, -rho, -nu];
        lepage: -1/16 * [+nu, +nu, +mu, -nu, -nu];
    }
}

link_paths! {
    /// Asqtad long (Naik) links: L_μ(x) = −1/(24u0²) U_μ(x) U_μ(x+μ̂) U_μ(x+2μ̂).
    pub asqtad_long(u: Gauge) -> long {
        naik: -1/24 * [+mu, +mu, +mu];
    }
}

link_paths! {
    /// Fat7 (the first HISQ level): V_μ(x) = 1/8 U_μ(x) − 1/(16u0²) Σ 3-staples
    /// + 1/(64u0⁴) Σ 5-staples − 1/(384u0⁶) Σ 7-staples. Unit links at u0 = 1:
    /// 1/8 + 6/16 + 24/64 + 48/384 = 1.
    pub fat7(u: Gauge) -> fat {
        one_link: 1/8 * [+mu];
        staple3: -1/16 * [+nu, +mu, -nu];
        staple5: 1/64 * [+nu, +rho, +mu, -rho, -nu];
        staple7: -1/384 * [+nu, +rho, +sigma, +mu, -sigma, -rho, -nu];
    }
}

link_paths! {
    /// The second HISQ level on the U(3)-projected fat7 links W (MILC, QUDA):
    /// X_μ(x) = W_μ(x) − 1/16 Σ 3-staples + 1/64 Σ 5-staples − 1/384 Σ 7-staples
    /// − 2/16 Σ Lepage (the one-link 1 = 1/8 as in fat7 + 2 · 3/8 for the doubled Lepage
    /// term + 1/8 for the Naik term). Unit links with phases: 9/8.
    pub hisq_fat(u: Gauge) -> fat {
        one_link: 1 * [+mu];
        staple3: -1/16 * [+nu, +mu, -nu];
        staple5: 1/64 * [+nu, +rho, +mu, -rho, -nu];
        staple7: -1/384 * [+nu, +rho, +sigma, +mu, -sigma, -rho, -nu];
        lepage: -2/16 * [+nu, +nu, +mu, -nu, -nu];
    }
}

/// Why [`hisq_links`] failed: a spec error, or a fat7 link the U(3) projection rejects.
#[derive(Debug, Clone, PartialEq)]
pub enum SmearError {
    /// The spec could not be lowered or run.
    Spec(DslError),
    /// The U(3) projection W = V(V†V)^(−1/2) of the fat7 link at checkerboard index
    /// `cb`, direction `mu` failed.
    Projection {
        /// Checkerboard index of the link.
        cb: usize,
        /// Direction of the link.
        mu: usize,
        /// Why.
        error: MatrixError,
    },
}

impl std::fmt::Display for SmearError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SmearError::Spec(e) => write!(f, "{e}"),
            SmearError::Projection { cb, mu, error } => write!(
                f,
                "U(3) projection of the fat7 link at checkerboard site {cb}, direction {mu}: {error}"
            ),
        }
    }
}

impl std::error::Error for SmearError {}

impl From<DslError> for SmearError {
    fn from(e: DslError) -> Self {
        SmearError::Spec(e)
    }
}

/// The stages of the HISQ link chain on one backend (host fields here, device buffers
/// in the runtime), each holding its own links: [`hisq_chain`] runs them in the order of
/// the recipe, so that the chain is written once for every backend.
pub trait HisqStages {
    /// Why a stage failed.
    type Error;

    /// V = fat7(U) (u0 = 1) of the thin links, phases and time boundary folded in.
    fn fat7(&mut self) -> Result<(), Self::Error>;

    /// W = V(V†V)^(−1/2), link by link.
    fn project_u3(&mut self) -> Result<(), Self::Error>;

    /// X₀ = [`HisqFat`] of W.
    fn hisq_fat(&mut self) -> Result<(), Self::Error>;

    /// L₀ = [`AsqtadLong`] of W (u0 = 1).
    fn naik(&mut self) -> Result<(), Self::Error>;
}

/// The HISQ link chain: V = fat7(U), W = V(V†V)^(−1/2), X₀ = HisqFat(W),
/// L₀ = AsqtadLong(W); then [`add_naik_epsilon`] gives X and L.
pub fn hisq_chain<S: HisqStages>(stages: &mut S) -> Result<(), S::Error> {
    stages.fat7()?;
    stages.project_u3()?;
    stages.hisq_fat()?;
    stages.naik()
}

/// The Naik-mass correction ε of the HISQ links: X = X₀ + (ε/8) W, L = (1 + ε) L₀.
pub fn add_naik_epsilon<T: Real>(
    fat: &mut GaugeField<T>,
    long: &mut GaugeField<T>,
    w: &GaugeField<T>,
    epsilon_naik: f64,
) {
    let eps = T::from_f64(epsilon_naik / 8.0);
    for (x, wl) in fat.links_mut().iter_mut().zip(w.links()) {
        *x += wl.scale(eps);
    }
    let factor = T::from_f64(1.0 + epsilon_naik);
    for l in long.links_mut() {
        *l = l.scale(factor);
    }
}

/// The ε terms of [`add_naik_epsilon`] as term coefficients of the second level's trees
/// (u0 = 1), so that the device applies them inside the kernels: X = X₀ + (ε/8) W adds
/// ε/8 to the coefficient of `HisqFat`'s one-link term `[+mu]`, L = (1 + ε) L₀ scales
/// every term of `AsqtadLong`. Returns (fat, long) coefficients in term order.
///
/// Errors: `HisqFat` without a one-link term (a spec edit would have broken the recipe).
pub fn naik_epsilon_coefficients(epsilon_naik: f64) -> Result<(Vec<f64>, Vec<f64>), DslError> {
    let fat = HisqFat::spec();
    let one_link = [qdsl_core::dsl::paths::Step {
        dir: qdsl_core::dsl::paths::Dir::Mu,
        forward: true,
    }];
    let k = fat
        .terms
        .iter()
        .position(|t| t.steps == one_link)
        .ok_or_else(|| DslError::InvalidSpec {
            kernel: fat.name.clone(),
            reason:
                "expected a one-link term [+mu] to carry the ε/8 of the Naik correction, found none"
                    .into(),
        })?;
    let mut fat_coeffs = HisqFat::tree()?.coefficients(1.0);
    fat_coeffs[k] += epsilon_naik / 8.0;
    let long_coeffs = AsqtadLong::tree()?
        .coefficients(1.0)
        .into_iter()
        .map(|c| c * (1.0 + epsilon_naik))
        .collect();
    Ok((fat_coeffs, long_coeffs))
}

/// The HISQ stages on host fields: the generated CPU code of the specs.
struct HostHisq<T: Real> {
    /// U (phases folded in), then V, then W.
    links: GaugeField<T>,
    /// X₀ once [`HisqStages::hisq_fat`] ran (unit links before).
    fat: GaugeField<T>,
    /// L₀ once [`HisqStages::naik`] ran (unit links before).
    long: GaugeField<T>,
}

impl<T: Real> HisqStages for HostHisq<T> {
    type Error = SmearError;

    fn fat7(&mut self) -> Result<(), SmearError> {
        self.links = Fat7::smear_cpu(&self.links, 1.0)?;
        Ok(())
    }

    fn project_u3(&mut self) -> Result<(), SmearError> {
        for (i, link) in self.links.links_mut().iter_mut().enumerate() {
            *link = link.polar_u3().map_err(|error| SmearError::Projection {
                cb: i / 4,
                mu: i % 4,
                error,
            })?;
        }
        Ok(())
    }

    fn hisq_fat(&mut self) -> Result<(), SmearError> {
        self.fat = HisqFat::smear_cpu(&self.links, 1.0)?;
        Ok(())
    }

    fn naik(&mut self) -> Result<(), SmearError> {
        self.long = AsqtadLong::smear_cpu(&self.links, 1.0)?;
        Ok(())
    }
}

/// HISQ fat and long links (X, L) of thin links `u` without phases (MILC's recipe):
/// phases and the time boundary folded in, V = fat7(U) (u0 = 1), W = V(V†V)^(−1/2) link
/// by link, then X = [`HisqFat`] of W + (ε/8) W and L = (1 + ε) [`AsqtadLong`] of W (u0 = 1;
/// the ε terms are the Naik-mass correction of the one-link and Naik paths): the stages
/// of [`hisq_chain`] on host fields, then [`add_naik_epsilon`]. Unit links give
/// X = 9/8 + ε/8 and L = −(1 + ε)/24, times the phases.
pub fn hisq_links<T: Real>(
    u: &GaugeField<T>,
    epsilon_naik: f64,
) -> Result<(GaugeField<T>, GaugeField<T>), SmearError> {
    let lattice = *u.lattice();
    let mut host = HostHisq {
        links: fold_staggered_phases(u),
        fat: GaugeField::unit(lattice),
        long: GaugeField::unit(lattice),
    };
    hisq_chain(&mut host)?;
    add_naik_epsilon(&mut host.fat, &mut host.long, &host.links, epsilon_naik);
    Ok((host.fat, host.long))
}

/// MILC's staggered phase η_μ(x): η_x = (−1)^t, η_y = (−1)^(t+x), η_z = (−1)^(t+x+y),
/// η_t = 1 ([`qdsl_core::lattice::staggered_phase`]).
pub fn staggered_phase(c: Coords, mu: usize) -> f64 {
    f64::from(qdsl_core::lattice::staggered_phase(c, mu))
}

/// The links with the staggered phases and the antiperiodic time boundary folded in:
/// U'_μ(x) = η_μ(x) U_μ(x), times −1 for μ = t on the last time slice.
pub fn fold_staggered_phases<T: Real>(u: &GaugeField<T>) -> GaugeField<T> {
    let lat = *u.lattice();
    GaugeField::from_fn(lat, |c, mu| {
        let boundary = if mu == 3 && c[3] + 1 == lat.extent(3) {
            -1.0
        } else {
            1.0
        };
        u.link_at(c, mu)
            .scale(T::from_f64(staggered_phase(c, mu) * boundary))
    })
}

/// Asqtad fat and long links (F, L) of thin links `u` without phases, the way MILC
/// builds them: phases and the time boundary folded in first, then [`AsqtadFat`] and
/// [`AsqtadLong`] with tadpole factor `u0`.
pub fn asqtad_links<T: Real>(
    u: &GaugeField<T>,
    u0: f64,
) -> Result<(GaugeField<T>, GaugeField<T>), DslError> {
    let v = fold_staggered_phases(u);
    Ok((
        AsqtadFat::smear_cpu(&v, u0)?,
        AsqtadLong::smear_cpu(&v, u0)?,
    ))
}
