//! [`GpuSmearer`]: one `link_paths!` plan compiled for one precision, run on the GPU.
//!
//! For each direction μ the schedule fills node buffers N_i (one 3 × 3 matrix per site)
//! with path products P(x), staples W_s(x) N(x + ŝ) W_s(x + nμ̂)† and sums N_a + N_b,
//! then accumulates F_μ(x) = Σ_t c_t u0^(−(L_t − 1)) N_t(x) into the output links.
//! Gauge fields travel in the host [`GaugeField`] layout (18 reals per link, link
//! `4·cb + μ`), which is what the emitted kernels read and write; with the input knob
//! recon 12 ([`PathKnobs`]) the thin links are uploaded as 14-real records (rows 0 and 1,
//! λ = det L) and rebuilt inline by the kernels.

use crate::device::gpu::driver;
use crate::device::kernel::{load_program, Args, DeviceElem, LoadedKernel};
use crate::device::tuned::{tuned_launch, ProgramRef, Source};
use crate::device::{DeviceError, Gpu};
use crate::tune::{FirstUse, LaunchConfig, Tuner};
use cudarc::driver::ValidAsZeroBits;
use cudarc::driver::{CudaSlice, DeviceRepr};
use qdsl_core::dsl::paths::cuda::{buffer_count, schedule, Launch, ACCUMULATE_WIDTH};
use qdsl_core::dsl::paths::knobs::encode_links;
use qdsl_core::dsl::paths::{LinkPaths, PathKnobs, PathPlan};
use qdsl_core::dsl::{DslError, KernelProgram};
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;
use qdsl_core::math::ColourMatrix;
use qdsl_core::Real;
use qdsl_kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong};

/// Threads per block of the smearing kernels (one thread per site).
pub(super) const BLOCK: [u32; 3] = [128, 1, 1];

/// Reals per link or per node-buffer site (3 × 3 complex).
pub(super) const REALS: usize = 18;

/// A real type the GPU kernels take: f32 or f64.
pub trait GpuReal: Real + DeviceRepr + ValidAsZeroBits + DeviceElem {}
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
    /// The name of the program the kernels come from (the tune keys' variant).
    program: String,
    /// FNV-1a of the program's source (the tune keys' source hash).
    source_hash: u64,
    path: LoadedKernel,
    staple: LoadedKernel,
    staple_pair: LoadedKernel,
    sum: LoadedKernel,
    accumulate: LoadedKernel,
    _real: std::marker::PhantomData<T>,
}

/// The kernel `name` among `kernels`, or an error naming the program.
pub(super) fn find(
    kernels: &[LoadedKernel],
    name: &str,
    program: &str,
) -> Result<LoadedKernel, DeviceError> {
    kernels
        .iter()
        .find(|k| k.interface.name == name)
        .cloned()
        .ok_or_else(|| DeviceError::Shape(format!("{program} declares no kernel {name}")))
}

/// `L0`..`L3` of `lattice`.
pub(super) fn lattice_args(args: &mut Args<'_>, lattice: &Lattice) {
    for (k, l) in lattice.dims().iter().enumerate() {
        args.count(&format!("L{k}"), *l);
    }
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
        let name = match knobs.tag() {
            "" => format!("{}_{}", plan.spec.name, T::NAME),
            tag => format!("{}_{}_{tag}", plan.spec.name, T::NAME),
        };
        let program = qdsl_core::dsl::paths::cuda::program::<T>(&plan, &knobs, &name)?;
        let kernels = load_program(gpu, &program)?;
        let mut smearer = Self::from_kernels(plan, &kernels, &program)?;
        smearer.knobs = knobs;
        Ok(smearer)
    }

    /// The smearer of `plan` whose five kernels are among `kernels` (loaded from
    /// `program`, which contains [`qdsl_core::dsl::paths::cuda::emit`]'s kernels for
    /// `plan`, links uncompressed, possibly with more after them).
    pub fn from_kernels(
        plan: PathPlan,
        kernels: &[LoadedKernel],
        program: &KernelProgram,
    ) -> Result<Self, DeviceError> {
        let name = plan.spec.name.clone();
        let load = |kernel: &str| find(kernels, &format!("{name}_{kernel}"), &program.name);
        Ok(Self {
            path: load("path")?,
            staple: load("staple")?,
            staple_pair: load("staple_pair")?,
            sum: load("sum")?,
            accumulate: load("accumulate")?,
            launches: schedule(&plan),
            program: program.name.clone(),
            source_hash: program.source_hash(),
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
    /// links of `bufs.input` with tadpole factor `u0` (no synchronisation; each kernel's
    /// default launch).
    pub fn enqueue(
        &self,
        gpu: &Gpu,
        bufs: &mut SmearBuffers<T>,
        u0: f64,
    ) -> Result<(), DeviceError> {
        self.enqueue_with(gpu, None, bufs, u0)
    }

    /// [`Self::enqueue`] with each kernel's launch from `tuner` ([`crate::device::tuned`];
    /// under the launch policy a cached winner or the default). Timing reruns a launch:
    /// the path, staple and sum kernels only rewrite their node buffer; accumulate is
    /// timed on a scratch output, since it adds to the links.
    pub fn enqueue_with(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        bufs: &mut SmearBuffers<T>,
        u0: f64,
    ) -> Result<(), DeviceError> {
        let lattice = bufs.lattice;
        let volume = lattice.volume();
        let sites = [volume, 1, 1];
        let mut path_index = 0;
        for launch in &self.launches {
            match launch {
                Launch::Path { out, steps } => {
                    let d_steps = bufs.steps.get(path_index).ok_or_else(|| {
                        DeviceError::Shape(format!("path launch {path_index} has no step buffer"))
                    })?;
                    path_index += 1;
                    let out = bufs.nodes.get_mut(*out).ok_or_else(|| {
                        DeviceError::Shape(format!("path launch writes missing node {out}"))
                    })?;
                    let input = &bufs.input;
                    let mut go = |cfg: &LaunchConfig| {
                        let mut args = Args::new();
                        lattice_args(&mut args, &lattice);
                        args.write("out", &mut *out)
                            .read("u", input)
                            .read("steps", d_steps)
                            .count("nsteps", steps.len());
                        // out holds V·18 reals, u 4·V·18, steps nsteps codes.
                        self.path.launch_with(gpu, sites, cfg, args)
                    };
                    let cfg = self.tuned(gpu, tuner, &self.path, sites, &mut go)?;
                    go(&cfg)?;
                }
                Launch::Staple {
                    out,
                    inner,
                    mu,
                    n,
                    step: (d, o),
                } => {
                    let (dst, earlier) = split_nodes(&mut bufs.nodes, *out, &[*inner])?;
                    let input = &bufs.input;
                    let mut go = |cfg: &LaunchConfig| {
                        let mut args = Args::new();
                        lattice_args(&mut args, &lattice);
                        args.write("out", &mut *dst)
                            .read("inner", &earlier[*inner])
                            .read("u", input);
                        staple_args(&mut args, *mu, *n, *d, *o);
                        self.staple.launch_with(gpu, sites, cfg, args)
                    };
                    let cfg = self.tuned(gpu, tuner, &self.staple, sites, &mut go)?;
                    go(&cfg)?;
                }
                Launch::StaplePair {
                    out,
                    inners: [i0, i1],
                    mu,
                    n,
                    step: (d, o),
                } => {
                    let (dst, earlier) = split_nodes(&mut bufs.nodes, *out, &[*i0, *i1])?;
                    let input = &bufs.input;
                    let mut go = |cfg: &LaunchConfig| {
                        let mut args = Args::new();
                        lattice_args(&mut args, &lattice);
                        args.write("out", &mut *dst)
                            .read("inner0", &earlier[*i0])
                            .read("inner1", &earlier[*i1])
                            .read("u", input);
                        staple_args(&mut args, *mu, *n, *d, *o);
                        self.staple_pair.launch_with(gpu, sites, cfg, args)
                    };
                    let cfg = self.tuned(gpu, tuner, &self.staple_pair, sites, &mut go)?;
                    go(&cfg)?;
                }
                Launch::Sum { out, a, b: second } => {
                    let (dst, earlier) = split_nodes(&mut bufs.nodes, *out, &[*a, *second])?;
                    let reals = [volume * REALS, 1, 1];
                    let mut go = |cfg: &LaunchConfig| {
                        let mut args = Args::new();
                        args.write("out", &mut *dst)
                            .read("a", &earlier[*a])
                            .read("b", &earlier[*second])
                            .count("nreals", volume * REALS);
                        // All three hold nreals = V·18 reals.
                        self.sum.launch_with(gpu, reals, cfg, args)
                    };
                    let cfg = self.tuned(gpu, tuner, &self.sum, reals, &mut go)?;
                    go(&cfg)?;
                }
                Launch::Accumulate { mu, terms, first } => {
                    let (nodes, coeffs) = accumulate_args::<T>(terms, u0)?;
                    let node_buffers = &bufs.nodes;
                    let go = |cfg: &LaunchConfig, links: &mut CudaSlice<T>| {
                        let mut args = Args::new();
                        lattice_args(&mut args, &lattice);
                        args.write("links", links);
                        for (k, &node) in nodes.iter().enumerate() {
                            let buffer = node_buffers.get(node).ok_or_else(|| {
                                DeviceError::Shape(format!("accumulate reads missing node {node}"))
                            })?;
                            args.read(&format!("n{k}"), buffer);
                        }
                        for (k, c) in coeffs.iter().enumerate() {
                            args.real(&format!("c{k}"), Real::to_f64(*c));
                        }
                        args.count("count", terms.len())
                            .count("mu", *mu)
                            .int("first", i32::from(*first));
                        // links hold 4·V·18 reals, each node V·18; the kernel reads only
                        // the first `count` nodes.
                        self.accumulate.launch_with(gpu, sites, cfg, args)
                    };
                    let mut scratch: Option<CudaSlice<T>> = None;
                    let cfg = self.tuned(gpu, tuner, &self.accumulate, sites, |cfg| {
                        if scratch.is_none() {
                            scratch = Some(gpu.alloc::<T>("scratch links", 4 * volume * REALS)?);
                        }
                        match scratch.as_mut() {
                            Some(links) => go(cfg, links),
                            None => Err(DeviceError::Shape("no scratch links to tune on".into())),
                        }
                    })?;
                    go(&cfg, &mut bufs.output)?;
                }
            }
        }
        Ok(())
    }

    /// The launch of `kernel` over `work` from `tuner` (see [`Self::enqueue_with`]),
    /// timing candidates through `time`.
    fn tuned(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        kernel: &LoadedKernel,
        work: [usize; 3],
        time: impl FnMut(&LaunchConfig) -> Result<(), DeviceError>,
    ) -> Result<LaunchConfig, DeviceError> {
        let program = ProgramRef {
            name: &self.program,
            source: Source::Hash(self.source_hash),
        };
        tuned_launch(
            gpu,
            tuner,
            program,
            kernel,
            T::NAME,
            work,
            FirstUse::CachedOnly,
            time,
        )
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
        self.smear_with(gpu, None, u, u0)
    }

    /// [`Self::smear`] with the kernels' launches from `tuner`.
    pub fn smear_with(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        u: &GaugeField<T>,
        u0: f64,
    ) -> Result<GaugeField<T>, DeviceError> {
        let mut bufs = self.buffers(gpu, u.lattice())?;
        self.upload(gpu, &mut bufs, u)?;
        self.enqueue_with(gpu, tuner, &mut bufs, u0)?;
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

/// `mu`, `n`, `d`, `o` of a staple launch: direction, displacement, step (d, o).
fn staple_args(args: &mut Args<'_>, mu: usize, n: usize, d: usize, o: isize) {
    args.count("mu", mu)
        .count("n", n)
        .count("d", d)
        .int("o", o as i64);
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
        let length = i32::try_from(length)
            .map_err(|_| DeviceError::Shape(format!("path length {length} exceeds 32 bits")))?;
        coeffs[k] = T::from_f64(coeff / u0.powi(length - 1));
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
