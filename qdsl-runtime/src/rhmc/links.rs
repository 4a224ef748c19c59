//! The smeared links of asqtad and HISQ with what the backward sweep needs, and the
//! pull-back of a gradient with respect to the fat and long links to the thin links
//! (the chain rule of [`qdsl_core::dsl::paths::fermion_force`] through each stage).

use super::RhmcError;
use qdsl_core::dsl::paths::fermion_force::{pullback, pullback_polar_u3};
use qdsl_core::dsl::paths::{LinkPaths, PathPlan};
use qdsl_core::field::GaugeField;
use qdsl_kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong, Fat7, HisqFat};

/// An improved staggered action: its smeared links from the thin ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StaggeredSmearing {
    /// Asqtad: F = [`AsqtadFat`](U'), L = [`AsqtadLong`](U') with tadpole factor u0
    /// (U' the links with the staggered phases folded in).
    Asqtad {
        /// The tadpole factor.
        u0: f64,
    },
    /// HISQ: V = [`Fat7`](U'), W = V(V†V)^{−1/2}, X = [`HisqFat`](W) + (ε/8) W,
    /// L = (1 + ε) [`AsqtadLong`](W).
    Hisq {
        /// The Naik-term ε.
        epsilon_naik: f64,
    },
}

/// The links of one configuration through the smearing: the phased thin links, the
/// intermediate levels (HISQ) and the fat and long links the operator uses.
#[derive(Clone, Debug)]
pub struct SmearedLinks {
    /// U' (phases and the antiperiodic time boundary folded in).
    pub phased: GaugeField<f64>,
    /// HISQ only: (V = fat7(U'), W = its U(3) projection).
    pub levels: Option<(GaugeField<f64>, GaugeField<f64>)>,
    /// The one-hop links.
    pub fat: GaugeField<f64>,
    /// The three-hop links.
    pub long: GaugeField<f64>,
}

fn plan<K: LinkPaths>() -> Result<PathPlan, RhmcError> {
    Ok(K::plan()?)
}

impl StaggeredSmearing {
    /// The smeared links of thin links `u` (without phases).
    pub fn links(&self, u: &GaugeField<f64>) -> Result<SmearedLinks, RhmcError> {
        let phased = fold_staggered_phases(u);
        match *self {
            StaggeredSmearing::Asqtad { u0 } => Ok(SmearedLinks {
                fat: AsqtadFat::smear_cpu(&phased, u0)?,
                long: AsqtadLong::smear_cpu(&phased, u0)?,
                phased,
                levels: None,
            }),
            StaggeredSmearing::Hisq { epsilon_naik } => {
                let v = Fat7::smear_cpu(&phased, 1.0)?;
                let mut w = v.clone();
                for (i, link) in w.links_mut().iter_mut().enumerate() {
                    *link = link
                        .polar_u3()
                        .map_err(|error| RhmcError::Projection { link: i, error })?;
                }
                let mut fat = HisqFat::smear_cpu(&w, 1.0)?;
                let mut long = AsqtadLong::smear_cpu(&w, 1.0)?;
                qdsl_kernels::add_naik_epsilon(&mut fat, &mut long, &w, epsilon_naik);
                Ok(SmearedLinks {
                    phased,
                    levels: Some((v, w)),
                    fat,
                    long,
                })
            }
        }
    }

    /// The gradient with respect to the phased thin links U' of a function whose
    /// gradients with respect to the fat and long links are `grad_fat`, `grad_long`.
    pub fn pullback(
        &self,
        links: &SmearedLinks,
        grad_fat: &GaugeField<f64>,
        grad_long: &GaugeField<f64>,
    ) -> Result<GaugeField<f64>, RhmcError> {
        match (*self, &links.levels) {
            (StaggeredSmearing::Asqtad { u0 }, _) => {
                let mut g = pullback(&plan::<AsqtadFat>()?, &links.phased, u0, grad_fat)?;
                let g_long = pullback(&plan::<AsqtadLong>()?, &links.phased, u0, grad_long)?;
                for (a, b) in g.links_mut().iter_mut().zip(g_long.links()) {
                    *a += *b;
                }
                Ok(g)
            }
            (StaggeredSmearing::Hisq { epsilon_naik }, Some((v, w))) => {
                // X = HisqFat(W) + (ε/8) W, L = (1 + ε) Long(W).
                let mut g_w = pullback(&plan::<HisqFat>()?, w, 1.0, grad_fat)?;
                let g_long = pullback(&plan::<AsqtadLong>()?, w, 1.0, grad_long)?;
                for ((a, f), l) in g_w
                    .links_mut()
                    .iter_mut()
                    .zip(grad_fat.links())
                    .zip(g_long.links())
                {
                    *a += f.scale(epsilon_naik / 8.0) + l.scale(1.0 + epsilon_naik);
                }
                let mut g_v = g_w.clone();
                for (i, g) in g_v.links_mut().iter_mut().enumerate() {
                    *g = pullback_polar_u3(&v.links()[i], &g_w.links()[i])
                        .map_err(|error| RhmcError::Projection { link: i, error })?;
                }
                Ok(pullback(&plan::<Fat7>()?, &links.phased, 1.0, &g_v)?)
            }
            (StaggeredSmearing::Hisq { .. }, None) => Err(RhmcError::Links(
                "HISQ links without their fat7 and projected levels".into(),
            )),
        }
    }
}

/// The pull-back of the fat- and long-link gradients to the phased thin links U' through
/// a smearing, wherever it runs (the host: [`StaggeredSmearing`]; the GPU:
/// [`super::GpuSmearingPullback`]).
pub trait SmearingPullback {
    /// The smearing it differentiates.
    fn smearing(&self) -> StaggeredSmearing;

    /// Ĝ with dS = Σ Re tr[Ĝ† dU'] for the gradients `grad_fat`, `grad_long` with respect
    /// to the fat and long links of thin links `u` (without phases), whose host levels
    /// are `links`.
    fn pullback(
        &self,
        u: &GaugeField<f64>,
        links: &SmearedLinks,
        grad_fat: &GaugeField<f64>,
        grad_long: &GaugeField<f64>,
    ) -> Result<GaugeField<f64>, RhmcError>;
}

impl SmearingPullback for StaggeredSmearing {
    fn smearing(&self) -> StaggeredSmearing {
        *self
    }

    fn pullback(
        &self,
        _u: &GaugeField<f64>,
        links: &SmearedLinks,
        grad_fat: &GaugeField<f64>,
        grad_long: &GaugeField<f64>,
    ) -> Result<GaugeField<f64>, RhmcError> {
        StaggeredSmearing::pullback(self, links, grad_fat, grad_long)
    }
}
