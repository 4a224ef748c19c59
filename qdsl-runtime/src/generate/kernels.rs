//! The HMC field kernels ([`qdsl_core::gauge::generate::cuda_hmc`]) and the action's
//! trace kernels ([`TermTraces`]) loaded on a GPU, with the sums they feed: a device
//! buffer of per-link values reduced by `hmc_block_sums` to one partial sum per
//! [`SUM_BLOCK`] values, the partials added on the host in index order.

use crate::device::gpu::driver;
use crate::device::kernel::{load_program, Args, LoadedKernel};
use crate::device::{DeviceError, Gpu};
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::paths::cuda::check_extents;
use qdsl_core::dsl::paths::ActionSpec;
use qdsl_core::gauge::generate::cuda_hmc::{hmc_program, SUM_BLOCK};
use qdsl_core::gauge::generate::{GenerateError, TermTraces};
use qdsl_core::lattice::Lattice;

/// Threads per block of the per-link kernels.
pub(super) const BLOCK: [u32; 3] = [128, 1, 1];

/// A device error as a generation error.
pub(super) fn device(e: DeviceError) -> GenerateError {
    GenerateError::Backend(e.to_string())
}

fn find(kernels: &[LoadedKernel], name: &str) -> Result<LoadedKernel, GenerateError> {
    kernels
        .iter()
        .find(|k| k.interface.name == name)
        .cloned()
        .ok_or_else(|| GenerateError::Backend(format!("no kernel {name} in the program")))
}

/// `L0..L3` of `lattice`.
pub(super) fn lattice_args(args: &mut Args<'_>, lattice: &Lattice) {
    for (k, l) in lattice.dims().iter().enumerate() {
        args.count(&format!("L{k}"), *l);
    }
}

/// The kernels of the `hmc_f64` program.
#[derive(Debug)]
pub struct HmcKernels {
    pub(super) momenta: LoadedKernel,
    pub(super) kick: LoadedKernel,
    pub(super) drift: LoadedKernel,
    pub(super) norms: LoadedKernel,
    block_sums: LoadedKernel,
}

impl HmcKernels {
    /// Compiles (or loads from the cache) the program.
    pub fn new(gpu: &Gpu) -> Result<Self, GenerateError> {
        let kernels = load_program(gpu, &hmc_program()).map_err(device)?;
        Ok(Self {
            momenta: find(&kernels, "hmc_momenta")?,
            kick: find(&kernels, "hmc_kick")?,
            drift: find(&kernels, "hmc_drift")?,
            norms: find(&kernels, "hmc_norms")?,
            block_sums: find(&kernels, "hmc_block_sums")?,
        })
    }

    /// Σ_i values_i over the first `n` values: block sums on the device, the partials
    /// added on the host in order (waits for the queued work).
    pub fn sum(&self, gpu: &Gpu, values: &CudaSlice<f64>, n: usize) -> Result<f64, DeviceError> {
        let blocks = n.div_ceil(SUM_BLOCK).max(1);
        let mut partial = gpu.alloc::<f64>("the partial sums", blocks)?;
        let mut args = Args::new();
        args.write("out", &mut partial)
            .read("in", values)
            .count("n", n);
        self.block_sums.launch(
            gpu,
            [blocks * SUM_BLOCK, 1, 1],
            [SUM_BLOCK as u32, 1, 1],
            args,
        )?;
        let host = gpu
            .backend()
            .stream()
            .clone_dtoh(&partial)
            .map_err(driver("copying the partial sums to the host"))?;
        Ok(host.iter().sum())
    }
}

/// The trace kernels of one action's terms: T_t = Σ_{x,μ} Re tr[U_μ(x) Σ_{t,μ}(x)†] on
/// the GPU, hence the action and the loop averages ([`TermTraces`]).
#[derive(Debug)]
pub struct DeviceTraces {
    traces: TermTraces,
    kernels: Vec<(LoadedKernel, Vec<f64>)>,
}

impl DeviceTraces {
    /// Compiles the trace kernel of every term of `action`.
    pub fn new(gpu: &Gpu, action: &ActionSpec) -> Result<Self, GenerateError> {
        let traces = TermTraces::new(action)?;
        let kernels = traces
            .terms
            .iter()
            .map(|t| {
                let program = t.program()?;
                let kernel = find(&load_program(gpu, &program).map_err(device)?, &t.kernel())?;
                Ok((kernel, t.plan.tree.coefficients(1.0)))
            })
            .collect::<Result<Vec<_>, GenerateError>>()?;
        Ok(Self { traces, kernels })
    }

    /// The terms.
    pub fn terms(&self) -> &TermTraces {
        &self.traces
    }

    /// T_t of every term for links `u` (device layout) on `lattice`; `scratch` holds 4V
    /// reals.
    pub fn traces(
        &self,
        gpu: &Gpu,
        sums: &HmcKernels,
        lattice: &Lattice,
        u: &CudaSlice<f64>,
        scratch: &mut CudaSlice<f64>,
    ) -> Result<Vec<f64>, GenerateError> {
        check_extents("the trace kernels", lattice.dims())?;
        let links = 4 * lattice.volume();
        self.kernels
            .iter()
            .map(|(kernel, coeffs)| {
                let mut args = Args::new();
                args.write("out", &mut *scratch).read("u", u);
                for (k, c) in coeffs.iter().enumerate() {
                    args.real(&format!("c{k}"), *c);
                }
                lattice_args(&mut args, lattice);
                kernel
                    .launch(gpu, [links, 1, 1], BLOCK, args)
                    .map_err(device)?;
                sums.sum(gpu, scratch, links).map_err(device)
            })
            .collect()
    }
}

/// The average plaquette P = ⟨Re tr U_P⟩/3 of links on the device: the trace kernel of
/// the Wilson action's plaquette term summed on the device
/// ([`qdsl_core::gauge::generate::TermTrace::loop_average`]).
#[derive(Debug)]
pub struct DevicePlaquette {
    sums: HmcKernels,
    traces: DeviceTraces,
}

impl DevicePlaquette {
    /// Compiles the kernels.
    pub fn new(gpu: &Gpu) -> Result<Self, GenerateError> {
        use qdsl_core::dsl::paths::GaugeAction;
        Ok(Self {
            sums: HmcKernels::new(gpu)?,
            traces: DeviceTraces::new(gpu, &qdsl_kernels::WilsonGauge::spec())?,
        })
    }

    /// P of `u`.
    pub fn plaquette(&self, gpu: &Gpu, u: &super::DeviceGauge) -> Result<f64, GenerateError> {
        let lattice = u.lattice;
        let mut scratch = gpu
            .alloc::<f64>("the reduction scratch", 4 * lattice.volume())
            .map_err(device)?;
        let t = self
            .traces
            .traces(gpu, &self.sums, &lattice, &u.links, &mut scratch)?;
        Ok(self.traces.terms().terms[0].loop_average(lattice.volume(), t[0]))
    }
}
