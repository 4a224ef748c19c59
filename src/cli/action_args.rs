//! [`ActionArgs`]: the fermion action, its parameters and the time boundary — one
//! definition of the flags, flattened into every command that builds a Dirac operator
//! (`qdsl solve`, `qdsl correlator`). Each command checks that the action gets exactly
//! the parameters it uses (an unused flag is an error naming it).

use crate::app::solve::{Action, FermionBoundary};
use clap::Args;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::gauge::FieldStrengthTrace;

#[derive(Debug, Clone, Args)]
pub struct ActionArgs {
    /// The action: wilson (--kappa), clover (--kappa, --csw), twisted-mass (--kappa,
    /// --mu, optional --csw), staggered (naive, --mass), asqtad (--mass, --u0) or hisq
    /// (--mass, --epsilon-naik). Clover and twisted mass are normalised as
    /// M = (m + 4) + clover + iμγ5 − H/2 with m = 1/(2κ) − 4: (m + 4) × Wilson's
    /// M = 1 − κH at c_sw = μ = 0.
    #[arg(long, default_value = "wilson")]
    pub action: Action,
    /// Hopping parameter κ > 0 (wilson, clover, twisted-mass).
    #[arg(long, allow_negative_numbers = true)]
    pub kappa: Option<f64>,
    /// Quark mass m (staggered, asqtad, hisq; ≥ 0 for solve, > 0 for the propagator of
    /// the correlator).
    #[arg(long, allow_negative_numbers = true)]
    pub mass: Option<f64>,
    /// Tadpole factor u0: asqtad's smearing (default P^(1/4), P the plaquette); the
    /// correlator also divides the thin links of wilson and naive staggered by it
    /// (default 1); hisq has u0 = 1 by construction and accepts only 1.
    #[arg(long, allow_negative_numbers = true)]
    pub u0: Option<f64>,
    /// Clover coefficient c_sw ≥ 0 (clover: required; twisted-mass: default 0).
    #[arg(long, allow_negative_numbers = true)]
    pub csw: Option<f64>,
    /// Twisted mass μ (twisted-mass, required); with --action mobius --solver mspcg
    /// --reduced-ls: μ of the reduced-Ls preconditioner z = (T†K̂T + μ)r (default 0.05 for
    /// training, the transfer file's when reading one).
    #[arg(long, allow_negative_numbers = true)]
    pub mu: Option<f64>,
    /// The clover term's field strength F = (Q − Q†)/8: keep its trace (u(3); QUDA's and
    /// openQCD's convention) or remove it (projected to su(3)); clover and twisted-mass.
    #[arg(long, default_value = "keep")]
    pub clover_trace: FieldStrengthTrace,
    /// Naik-term correction ε of the HISQ links (hisq, default 0).
    #[arg(long, allow_negative_numbers = true)]
    pub epsilon_naik: Option<f64>,
    /// Time boundary of the fermions (space is periodic): periodic or antiperiodic, or
    /// openQCD's open or sf (Schrödinger functional) boundaries for wilson, clover and
    /// twisted-mass: the quark fields vanish on x0 = 0 (and x0 = L_t − 1, open), no hop
    /// crosses the boundary, c_F (--cf) improves the slices next to it.
    #[arg(long, default_value = "antiperiodic")]
    pub boundary: String,
    /// The boundary improvement coefficient c_F of open and sf boundaries (default 1:
    /// unimproved; openQCD's default too).
    #[arg(long, allow_negative_numbers = true)]
    pub cf: Option<f64>,
    /// c_F' at the far boundary x0 = L_t − 1 of sf boundaries (default: --cf; openQCD's
    /// open-SF type sets it apart).
    #[arg(long, allow_negative_numbers = true)]
    pub cf_prime: Option<f64>,
    /// openQCD's SF boundary field at x0 = 0, angles φ1,φ2 (φ3 = −φ1 − φ2): the spatial
    /// links C_k = diag(e^{iφ_a/L_k}) there (sf only, with --sf-phi-prime; default: the
    /// stored links of x0 = 0 serve at both ends).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub sf_phi: Option<Vec<f64>>,
    /// openQCD's SF boundary field at x0 = T, angles φ'1,φ'2: the spatial links C'_k the
    /// clover term of x0 = T − 1 sees (sf only, with --sf-phi).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub sf_phi_prime: Option<Vec<f64>>,
}

/// Two angles from a comma-separated flag value.
fn two_angles(flag: &str, values: &Option<Vec<f64>>) -> Result<Option<[f64; 2]>, String> {
    match values.as_deref() {
        None => Ok(None),
        Some(&[a, b]) => Ok(Some([a, b])),
        Some(other) => Err(format!(
            "{flag} needs two angles φ1,φ2 (φ3 = −φ1 − φ2), found {}",
            other.len()
        )),
    }
}

impl ActionArgs {
    /// The fermion boundary of `--boundary`, `--cf`, `--cf-prime`, `--sf-phi` and
    /// `--sf-phi-prime` ([`FermionBoundary::from_flags`],
    /// [`FermionBoundary::with_sf_angles`]).
    pub fn fermion_boundary(&self) -> Result<FermionBoundary, String> {
        FermionBoundary::from_flags(&self.boundary, self.cf, self.cf_prime)?.with_sf_angles(
            two_angles("--sf-phi", &self.sf_phi)?,
            two_angles("--sf-phi-prime", &self.sf_phi_prime)?,
        )
    }

    /// The time boundary for an operator that has only the wrapping ones (`who` names
    /// it in the error): periodic or antiperiodic; open and sf boundaries, or `--cf`,
    /// are an error.
    pub fn wrapping_boundary(&self, who: &str) -> Result<TimeBoundary, String> {
        match self.fermion_boundary()? {
            FermionBoundary::Wrap(b) => Ok(b),
            FermionBoundary::Open(_) => Err(format!(
                "{who} has periodic or antiperiodic time boundaries only, not {}",
                self.boundary
            )),
        }
    }
}
