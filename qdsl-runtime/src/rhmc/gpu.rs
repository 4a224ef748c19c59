//! The smearing part of the fermion force on the GPU ([`GpuSmearingPullback`]): the
//! pull-back of the fat- and long-link gradients to the thin links by the generated
//! pullback kernels — asqtad's two smearings, or HISQ's whole chain with the U(3)
//! projection's derivative ([`GpuHisqForce`]) — in f64, as the host's
//! [`StaggeredSmearing::pullback`] computes it.

use super::links::{SmearedLinks, SmearingPullback, StaggeredSmearing};
use super::RhmcError;
use crate::device::Gpu;
use crate::smear::{GpuHisqForce, GpuPullback, SmearGpuError};
use qdsl_core::field::GaugeField;
use qdsl_kernels::{AsqtadFat, AsqtadLong};

/// The compiled pullback kernels of one smearing.
enum Kernels {
    /// The fat- and long-link pullbacks.
    Asqtad(Box<[GpuPullback<f64>; 2]>),
    /// The whole HISQ chain.
    Hisq(Box<GpuHisqForce<f64>>),
}

/// The pull-back through a [`StaggeredSmearing`] on a GPU, in f64.
pub struct GpuSmearingPullback<'a> {
    gpu: &'a Gpu,
    smearing: StaggeredSmearing,
    kernels: Kernels,
}

impl<'a> GpuSmearingPullback<'a> {
    /// Compiles the kernels of `smearing` on `gpu`.
    pub fn new(gpu: &'a Gpu, smearing: StaggeredSmearing) -> Result<Self, RhmcError> {
        let kernels = match smearing {
            StaggeredSmearing::Asqtad { .. } => Kernels::Asqtad(Box::new([
                GpuPullback::new::<AsqtadFat>(gpu)?,
                GpuPullback::new::<AsqtadLong>(gpu)?,
            ])),
            StaggeredSmearing::Hisq { .. } => Kernels::Hisq(Box::new(GpuHisqForce::new(gpu)?)),
        };
        Ok(Self {
            gpu,
            smearing,
            kernels,
        })
    }
}

impl SmearingPullback for GpuSmearingPullback<'_> {
    fn smearing(&self) -> StaggeredSmearing {
        self.smearing
    }

    /// Asqtad: the two pullbacks from U' (the host's phased links); HISQ: the whole
    /// chain from `u` (phases folded in on the way up, as the host does).
    fn pullback(
        &self,
        u: &GaugeField<f64>,
        links: &SmearedLinks,
        grad_fat: &GaugeField<f64>,
        grad_long: &GaugeField<f64>,
    ) -> Result<GaugeField<f64>, RhmcError> {
        match (&self.kernels, self.smearing) {
            (Kernels::Asqtad(kernels), StaggeredSmearing::Asqtad { u0 }) => {
                let [fat, long] = &**kernels;
                let mut g = fat
                    .pullback(self.gpu, &links.phased, u0, grad_fat)
                    .map_err(SmearGpuError::from)?;
                let g_long = long
                    .pullback(self.gpu, &links.phased, u0, grad_long)
                    .map_err(SmearGpuError::from)?;
                for (a, b) in g.links_mut().iter_mut().zip(g_long.links()) {
                    *a += *b;
                }
                Ok(g)
            }
            (Kernels::Hisq(force), StaggeredSmearing::Hisq { epsilon_naik }) => {
                Ok(force.pullback(self.gpu, u, epsilon_naik, grad_fat, grad_long)?)
            }
            _ => Err(RhmcError::Links(format!(
                "GPU pullback kernels compiled for another smearing than {:?}",
                self.smearing
            ))),
        }
    }
}
