//! [`GpuSmearer`]: one `link_paths!` plan compiled for one precision, run on the GPU.
//!
//! For each direction μ the schedule fills node buffers N_i (one 3 × 3 matrix per site)
//! with path products P(x), staples W_s(x) N(x + ŝ) W_s(x + nμ̂)† and sums N_a + N_b,
//! then accumulates F_μ(x) = Σ_t c_t u0^(−(L_t − 1)) N_t(x) into the output links.
//! Gauge fields travel in the host [`GaugeField`] layout (18 reals per link, link
//! `4·cb + μ`), which is what the emitted kernels read and write; with the input knob
//! recon 12 ([`PathKnobs`]) the thin links are uploaded as 14-real records (rows 0 and 1,
//! λ = det L) and rebuilt inline by the kernels.

use crate::backend::Backend;
use crate::device::gpu::driver;
use crate::device::{DeviceError, Gpu};
use cudarc::driver::ValidAsZeroBits;
use cudarc::driver::{
    CudaFunction, CudaModule, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg,
};
use qdsl_core::dsl::paths::cuda::{buffer_count, emit_with, schedule, Launch, ACCUMULATE_WIDTH};
use qdsl_core::dsl::paths::knobs::encode_links;
use qdsl_core::dsl::paths::{LinkPaths, PathKnobs, PathPlan};
use qdsl_core::dsl::DslError;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;
use qdsl_core::math::ColourMatrix;
use qdsl_core::Real;
use qdsl_kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong};
use std::sync::Arc;

/// Threads per block of the smearing kernels (one thread per site).
const BLOCK: u32 = 128;

/// Reals per link or per node-buffer site (3 × 3 complex).
pub(super) const REALS: usize = 18;

/// A real type the GPU kernels take: f32 or f64.
pub trait GpuReal: Real + DeviceRepr + ValidAsZeroBits {}
impl GpuReal for f32 {}
impl GpuReal for f64 {}

/// Why smearing on the GPU failed.
#[derive(Debug, thiserror::Error)]
pub enum SmearGpuError {
    /// The spec could not be lowered or emitted.
    #[error("link_paths! spec: {0}")]
    Spec(#[from] DslError),
    /// Compiling, allocating, copying or launching failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The U(3) projection W = V(V†V)^(−1/2) rejected the link at checkerboard index
    /// `cb`, direction `mu` (not finite, or g₂/g₀ at or below the singularity threshold).
    #[error("U(3) projection of the fat7 link at checkerboard site {cb}, direction {mu}: singular or not finite")]
    Projection {
        /// Checkerboard index of the link.
        cb: usize,
        /// Direction of the link.
        mu: usize,
    },
}

/// The four kernels of a plan, compiled for real type `T`.
#[derive(Debug)]
pub struct GpuSmearer<T> {
    plan: PathPlan,
    knobs: PathKnobs,
    launches: Vec<Launch>,
    path: CudaFunction,
    staple: CudaFunction,
    staple_pair: CudaFunction,
    sum: CudaFunction,
    accumulate: CudaFunction,
    _real: std::marker::PhantomData<T>,
}

pub(super) fn int(x: usize, what: &str) -> Result<i32, DeviceError> {
    i32::try_from(x)
        .map_err(|_| DeviceError::Shape(format!("{what} = {x} exceeds the kernels' 32-bit index")))
}

pub(super) fn config(n: usize) -> Result<LaunchConfig, DeviceError> {
    let blocks = u32::try_from(n.div_ceil(BLOCK as usize).max(1))
        .map_err(|_| DeviceError::Shape(format!("{n} threads exceed the grid limit")))?;
    Ok(LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// Compiles `source` as `program` for the GPU's architecture (PTX cached by the JIT) and
/// loads the module.
pub fn load_module(gpu: &Gpu, program: &str, source: &str) -> Result<Arc<CudaModule>, DeviceError> {
    let arch = gpu
        .backend()
        .device()
        .map(|d| d.arch)
        .ok_or_else(|| DeviceError::NoGpu("the backend has no device".into()))?;
    let ptx = gpu
        .jit()
        .compile(program, source, arch, &[])
        .map_err(DeviceError::from)?;
    gpu.backend()
        .context()
        .load_module(cudarc::nvrtc::Ptx::from_src(ptx.ptx))
        .map_err(driver(format!("loading the module of {program}")))
}

impl<T: GpuReal> GpuSmearer<T> {
    /// Compiles the kernels of spec `S` for `T` (the PTX is cached by the JIT). The module
    /// is loaded here rather than through [`Gpu::function`] because the f32 and f64
    /// programs share kernel names.
    pub fn new<S: LinkPaths>(gpu: &Gpu) -> Result<Self, SmearGpuError> {
        Self::with_knobs::<S>(gpu, PathKnobs::default())
    }

    /// Compiles the kernels of spec `S` for `T` reading the input links as `knobs` says
    /// (recon 18, or recon 12 + phase); errors for knob values that do not apply.
    pub fn with_knobs<S: LinkPaths>(gpu: &Gpu, knobs: PathKnobs) -> Result<Self, SmearGpuError> {
        let plan = S::plan()?;
        let source = emit_with::<T>(&plan, &knobs)?;
        let program = match knobs.tag() {
            "" => format!("{}_{}", plan.spec.name, T::NAME),
            tag => format!("{}_{}_{tag}", plan.spec.name, T::NAME),
        };
        let module = load_module(gpu, &program, &source)?;
        let mut smearer = Self::from_module(plan, &module, &program)?;
        smearer.knobs = knobs;
        Ok(smearer)
    }

    /// The smearer of `plan` whose four kernels live in `module` (compiled from a source
    /// that contains [`qdsl_core::dsl::paths::cuda::emit`]'s kernels for `plan`, links
    /// uncompressed, possibly with more after them).
    pub fn from_module(
        plan: PathPlan,
        module: &Arc<CudaModule>,
        program: &str,
    ) -> Result<Self, DeviceError> {
        let name = plan.spec.name.clone();
        let load = |kernel: &str| {
            let full = format!("{name}_{kernel}");
            module
                .load_function(&full)
                .map_err(driver(format!("finding {full} in {program}")))
        };
        Ok(Self {
            path: load("path")?,
            staple: load("staple")?,
            staple_pair: load("staple_pair")?,
            sum: load("sum")?,
            accumulate: load("accumulate")?,
            launches: schedule(&plan),
            plan,
            knobs: PathKnobs::default(),
            _real: std::marker::PhantomData,
        })
    }

    /// The plan this smearer runs.
    pub fn plan(&self) -> &PathPlan {
        &self.plan
    }

    /// How the kernels read the input links.
    pub fn knobs(&self) -> &PathKnobs {
        &self.knobs
    }

    /// Device memory for the input links, the output links and the node buffers of a
    /// lattice, zeroed.
    pub fn buffers(&self, gpu: &Gpu, lat: &Lattice) -> Result<SmearBuffers<T>, DeviceError> {
        let links = 4 * lat.volume() * REALS;
        let input = 4 * lat.volume() * self.knobs.input_reals();
        let nodes = buffer_count(&self.plan);
        let stream = gpu.backend().stream();
        let steps = self
            .launches
            .iter()
            .filter_map(|l| match l {
                Launch::Path { steps, .. } => Some(step_codes(steps)),
                _ => None,
            })
            .map(|codes| {
                stream
                    .clone_htod(&codes)
                    .map_err(driver("copying path steps to the GPU"))
            })
            .collect::<Result<_, _>>()?;
        Ok(SmearBuffers {
            lattice: *lat,
            steps,
            input: gpu.alloc::<T>("the thin links", input)?,
            output: gpu.alloc::<T>("the smeared links", links)?,
            nodes: (0..nodes)
                .map(|_| gpu.alloc::<T>("a node buffer", lat.volume() * REALS))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Copies `u` (phases already folded in) into `bufs.input`, encoded as the knobs say
    /// (a link that recon 12 + phase cannot hold, one not unitary, is a
    /// [`DeviceError::Conversion`] naming it).
    pub fn upload(
        &self,
        gpu: &Gpu,
        bufs: &mut SmearBuffers<T>,
        u: &GaugeField<T>,
    ) -> Result<(), DeviceError> {
        if *u.lattice() != bufs.lattice {
            return Err(DeviceError::Shape(format!(
                "links on {} given, buffers allocated for {}",
                u.lattice(),
                bufs.lattice
            )));
        }
        let name = &self.plan.spec.name;
        let host: Vec<T> =
            encode_links(u, &self.knobs, name).map_err(|e| DeviceError::Conversion {
                kernel: format!("the input encoding of {name}"),
                problems: e.to_string(),
            })?;
        gpu.backend()
            .stream()
            .memcpy_htod(&host, &mut bufs.input)
            .map_err(driver("copying the thin links to the GPU"))
    }

    /// Queues the whole schedule on the GPU's stream: `bufs.output` becomes the smeared
    /// links of `bufs.input` with tadpole factor `u0` (no synchronisation).
    pub fn enqueue(
        &self,
        gpu: &Gpu,
        bufs: &mut SmearBuffers<T>,
        u0: f64,
    ) -> Result<(), DeviceError> {
        let stream = gpu.backend().stream();
        let dims = bufs.lattice.dims();
        let [l0, l1, l2, l3] = [
            int(dims[0], "L0")?,
            int(dims[1], "L1")?,
            int(dims[2], "L2")?,
            int(dims[3], "L3")?,
        ];
        let volume = bufs.lattice.volume();
        let sites = config(volume)?;
        let reals = config(volume * REALS)?;
        let nreals = int(volume * REALS, "node reals")?;
        let name = &self.plan.spec.name;
        let launch_err = |k: &str| driver(format!("launching {name}_{k}"));
        let mut path_index = 0;
        for launch in &self.launches {
            match launch {
                Launch::Path { out, steps } => {
                    let d_steps = bufs.steps.get(path_index).ok_or_else(|| {
                        DeviceError::Shape(format!("path launch {path_index} has no step buffer"))
                    })?;
                    path_index += 1;
                    let n = int(steps.len(), "path length")?;
                    let mut b = stream.launch_builder(&self.path);
                    b.arg(&mut bufs.nodes[*out])
                        .arg(&bufs.input)
                        .arg(d_steps)
                        .arg(&n);
                    b.arg(&l0).arg(&l1).arg(&l2).arg(&l3);
                    // SAFETY: (real* out, const real* u, const int* steps, int nsteps,
                    // int L0..L3); out holds V·18 reals, u 4·V·18, steps nsteps codes.
                    unsafe { b.launch(sites) }.map_err(launch_err("path"))?;
                }
                Launch::Staple {
                    out,
                    inner,
                    mu,
                    n,
                    step: (d, o),
                } => {
                    let (mu, n, d, o) = (
                        int(*mu, "mu")?,
                        int(*n, "displacement")?,
                        int(*d, "step direction")?,
                        *o as i32,
                    );
                    let (dst, earlier) = split_nodes(&mut bufs.nodes, *out, &[*inner])?;
                    let mut b = stream.launch_builder(&self.staple);
                    b.arg(dst).arg(&earlier[*inner]).arg(&bufs.input);
                    b.arg(&mu).arg(&n).arg(&d).arg(&o);
                    b.arg(&l0).arg(&l1).arg(&l2).arg(&l3);
                    // SAFETY: (real* out, const real* inner, const real* u, int mu, int n,
                    // int d, int o, int L0..L3); node buffers hold V·18 reals.
                    unsafe { b.launch(sites) }.map_err(launch_err("staple"))?;
                }
                Launch::StaplePair {
                    out,
                    inners: [i0, i1],
                    mu,
                    n,
                    step: (d, o),
                } => {
                    let (mu, n, d, o) = (
                        int(*mu, "mu")?,
                        int(*n, "displacement")?,
                        int(*d, "step direction")?,
                        *o as i32,
                    );
                    let (dst, earlier) = split_nodes(&mut bufs.nodes, *out, &[*i0, *i1])?;
                    let mut b = stream.launch_builder(&self.staple_pair);
                    b.arg(dst).arg(&earlier[*i0]).arg(&earlier[*i1]);
                    b.arg(&bufs.input);
                    b.arg(&mu).arg(&n).arg(&d).arg(&o);
                    b.arg(&l0).arg(&l1).arg(&l2).arg(&l3);
                    // SAFETY: (real* out, const real* inner0, const real* inner1,
                    // const real* u, int mu, int n, int d, int o, int L0..L3); node
                    // buffers hold V·18 reals.
                    unsafe { b.launch(sites) }.map_err(launch_err("staple_pair"))?;
                }
                Launch::Sum { out, a, b: second } => {
                    let (dst, earlier) = split_nodes(&mut bufs.nodes, *out, &[*a, *second])?;
                    let mut b = stream.launch_builder(&self.sum);
                    b.arg(dst).arg(&earlier[*a]).arg(&earlier[*second]);
                    b.arg(&nreals);
                    // SAFETY: (real* out, const real* a, const real* b, int nreals); all
                    // three hold nreals = V·18 reals.
                    unsafe { b.launch(reals) }.map_err(launch_err("sum"))?;
                }
                Launch::Accumulate { mu, terms, first } => {
                    let (nodes, coeffs) = accumulate_args::<T>(terms, u0)?;
                    let count = int(terms.len(), "accumulated terms")?;
                    let (mu, first) = (int(*mu, "mu")?, i32::from(*first));
                    let mut b = stream.launch_builder(&self.accumulate);
                    b.arg(&mut bufs.output);
                    for &node in &nodes {
                        let buffer = bufs.nodes.get(node).ok_or_else(|| {
                            DeviceError::Shape(format!("accumulate reads missing node {node}"))
                        })?;
                        b.arg(buffer);
                    }
                    for c in &coeffs {
                        b.arg(c);
                    }
                    b.arg(&count).arg(&mu).arg(&first);
                    b.arg(&l0).arg(&l1).arg(&l2).arg(&l3);
                    // SAFETY: (real* links, const real* n0..n7, real c0..c7, int count,
                    // int mu, int first, int L0..L3); links hold 4·V·18 reals, each node
                    // V·18; the kernel reads only the first `count` nodes.
                    unsafe { b.launch(sites) }.map_err(launch_err("accumulate"))?;
                }
            }
        }
        Ok(())
    }

    /// Copies `bufs.output` back into a host gauge field.
    pub fn download(
        &self,
        gpu: &Gpu,
        bufs: &SmearBuffers<T>,
    ) -> Result<GaugeField<T>, DeviceError> {
        download_links(gpu, &bufs.output, bufs.lattice, "the smeared links")
    }

    /// The smeared links of `u` (phases already folded in) with tadpole factor `u0`:
    /// upload, run the schedule, download.
    pub fn smear(
        &self,
        gpu: &Gpu,
        u: &GaugeField<T>,
        u0: f64,
    ) -> Result<GaugeField<T>, DeviceError> {
        let mut bufs = self.buffers(gpu, u.lattice())?;
        self.upload(gpu, &mut bufs, u)?;
        self.enqueue(gpu, &mut bufs, u0)?;
        self.download(gpu, &bufs)
    }
}

/// Copies a device buffer of links (host layout, 18 reals per link) into a host field;
/// `what` names it in errors.
pub fn download_links<T: GpuReal>(
    gpu: &Gpu,
    links: &CudaSlice<T>,
    lattice: Lattice,
    what: &str,
) -> Result<GaugeField<T>, DeviceError> {
    let host = gpu
        .backend()
        .stream()
        .clone_dtoh(links)
        .map_err(driver(format!("copying {what} to the host")))?;
    let mut field = GaugeField::<T>::unit(lattice);
    for (link, reals) in field.links_mut().iter_mut().zip(host.chunks_exact(REALS)) {
        let mut r = [T::zero(); REALS];
        r.copy_from_slice(reals);
        *link = ColourMatrix::from_reals(&r);
    }
    Ok(field)
}

/// Device memory of one smearing run: input and output links, node buffers.
#[derive(Debug)]
pub struct SmearBuffers<T> {
    pub(super) lattice: Lattice,
    pub(super) input: CudaSlice<T>,
    pub(super) output: CudaSlice<T>,
    nodes: Vec<CudaSlice<T>>,
    /// The step codes of each `Path` launch, in schedule order.
    steps: Vec<CudaSlice<i32>>,
}

/// The node buffers and coefficients c_k u0^(−(L_k − 1)) of one accumulate launch,
/// padded to [`ACCUMULATE_WIDTH`] with the first node and coefficient 0 (never read: the
/// kernel stops at `count`). Errors for an empty or over-long group.
fn accumulate_args<T: Real>(
    terms: &[(usize, f64, usize)],
    u0: f64,
) -> Result<([usize; ACCUMULATE_WIDTH], [T; ACCUMULATE_WIDTH]), DeviceError> {
    if terms.is_empty() || terms.len() > ACCUMULATE_WIDTH {
        return Err(DeviceError::Shape(format!(
            "expected 1 to {ACCUMULATE_WIDTH} terms per accumulate launch, found {}",
            terms.len()
        )));
    }
    let mut nodes = [terms[0].0; ACCUMULATE_WIDTH];
    let mut coeffs = [T::zero(); ACCUMULATE_WIDTH];
    for (k, &(node, coeff, length)) in terms.iter().enumerate() {
        nodes[k] = node;
        coeffs[k] = T::from_f64(coeff / u0.powi(int(length, "path length")? - 1));
    }
    Ok((nodes, coeffs))
}

/// The kernel's step codes `2·d + (o < 0)` of concrete steps (d, o).
fn step_codes(steps: &[(usize, isize)]) -> Vec<i32> {
    steps
        .iter()
        .map(|&(d, o)| 2 * d as i32 + i32::from(o < 0))
        .collect()
}

/// Node buffer `out` (written) and the buffers before it (read): a plan's node reads
/// only earlier nodes, which is checked against `reads`.
fn split_nodes<'a, T>(
    nodes: &'a mut [CudaSlice<T>],
    out: usize,
    reads: &[usize],
) -> Result<(&'a mut CudaSlice<T>, &'a [CudaSlice<T>]), DeviceError> {
    if out >= nodes.len() || reads.iter().any(|&r| r >= out) {
        return Err(DeviceError::Shape(format!(
            "node {out} of {} reads nodes {reads:?}: expected only earlier nodes",
            nodes.len()
        )));
    }
    let (earlier, rest) = nodes.split_at_mut(out);
    Ok((&mut rest[0], earlier))
}

/// Asqtad fat and long links (F, L) of thin links `u` without phases, on the GPU: the
/// phases and the antiperiodic time boundary folded in on the host, then [`AsqtadFat`]
/// and [`AsqtadLong`] with tadpole factor `u0` (what `qdsl_kernels::asqtad_links` does
/// on the CPU).
pub fn asqtad_links_gpu<T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<T>,
    u0: f64,
) -> Result<(GaugeField<T>, GaugeField<T>), SmearGpuError> {
    let v = fold_staggered_phases(u);
    let fat = GpuSmearer::<T>::new::<AsqtadFat>(gpu)?.smear(gpu, &v, u0)?;
    let long = GpuSmearer::<T>::new::<AsqtadLong>(gpu)?.smear(gpu, &v, u0)?;
    Ok((fat, long))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The step codes are the emitter's documented `2·d + (o < 0)`: +x → 0, −x → 1,
    /// +t → 6, −z → 5; and the schedule of the asqtad long links is one 3-step path
    /// (+μ, +μ, +μ) per μ, coded 2μ three times.
    #[test]
    fn step_codes_follow_the_emitter() {
        assert_eq!(
            step_codes(&[(0, 1), (0, -1), (3, 1), (2, -1)]),
            [0, 1, 6, 5]
        );
        let paths: Vec<Vec<i32>> = schedule(&AsqtadLong::plan().unwrap())
            .iter()
            .filter_map(|l| match l {
                Launch::Path { steps, .. } => Some(step_codes(steps)),
                _ => None,
            })
            .collect();
        assert_eq!(paths, [[0, 0, 0], [2, 2, 2], [4, 4, 4], [6, 6, 6]]);
    }
}
