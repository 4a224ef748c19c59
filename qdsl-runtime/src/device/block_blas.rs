//! Block inner products on tensor cores: c_ij = ⟨a_i, b_j⟩ = Σ_x conj(a_i(x)) b_j(x) of
//! two sets of complex vectors in device memory, with the `mma_tile!` kernels of
//! [`qdsl_kernels::block_blas`] (f64 DMMA, 3×TF32, bf16, 3×BF16), launched through the
//! one launcher and tuned through the one `Tunable` ([`super::tuned`]): the tile kernel's
//! grid (its knob space), then the kernel adding the blocks' partials in a fixed order;
//! and the block axpy y_j += Σ_i x_i A_ij ([`BlockAxpy`], `block_axpy_<mode>`).

use super::gpu::driver;
use super::kernel::{load_program, Args, DeviceElem, LoadedKernel};
use super::tuned::tuned_launch;
use super::{DeviceError, Gpu};
use crate::tune::{FirstUse, LaunchConfig, Tuner};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use qdsl_core::dsl::mma::{self, Input, MmaPlan, MmaVariant};
use qdsl_core::dsl::KernelProgram;
use qdsl_core::Complex;
use qdsl_kernels::block_blas::BlockBlasMode;

/// A device buffer of vectors.
pub type VectorBuffer<T> = CudaSlice<T>;

/// A real type vectors are stored in on the device (f32 or f64).
pub trait VectorReal: DeviceElem + DeviceRepr + ValidAsZeroBits + Copy {
    /// The kernels' input precision.
    const INPUT: Input;
}

impl VectorReal for f32 {
    const INPUT: Input = Input::F32;
}

impl VectorReal for f64 {
    const INPUT: Input = Input::F64;
}

/// A set of `count` complex vectors of `len` components in one device buffer: vector i
/// is the interleaved (re, im) reals `[i · stride, i · stride + 2 len)`.
pub struct VectorSet<'a, T> {
    /// The buffer.
    pub values: &'a CudaSlice<T>,
    /// Vectors.
    pub count: usize,
    /// Complex components of each.
    pub len: usize,
    /// Reals from one vector to the next (at least 2 len).
    pub stride: usize,
}

// A view: copied whatever T is (a derive would ask T: Copy).
impl<T> Clone for VectorSet<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for VectorSet<'_, T> {}

impl<T> VectorSet<'_, T> {
    fn check(&self, what: &str) -> Result<(), DeviceError> {
        let need = self.count.saturating_sub(1) * self.stride + 2 * self.len;
        if self.stride < 2 * self.len || self.values.len() < need {
            return Err(DeviceError::Shape(format!(
                "{what}: {} vectors of {} complex values with stride {} need {need} reals and \
                 a stride of at least {}, found a buffer of {}",
                self.count,
                self.len,
                self.stride,
                2 * self.len,
                self.values.len()
            )));
        }
        Ok(())
    }
}

/// `count` copies of the host vector `host` one after another in a new device buffer
/// (stride `host.len()`), the first real of copy i replaced by `first(i)`: bench data
/// of any size from one host vector.
pub fn upload_copies<T: VectorReal>(
    gpu: &Gpu,
    host: &[T],
    count: usize,
    first: impl Fn(usize) -> T,
) -> Result<VectorBuffer<T>, DeviceError> {
    let mut buf = gpu.alloc::<T>("vectors", count * host.len())?;
    let mut copy = host.to_vec();
    let stream = gpu.backend().stream();
    for i in 0..count {
        if let Some(x) = copy.first_mut() {
            *x = first(i);
        }
        let mut slot = buf.slice_mut(i * host.len()..(i + 1) * host.len());
        stream
            .memcpy_htod(&copy, &mut slot)
            .map_err(driver("uploading vectors"))?;
    }
    Ok(buf)
}

/// A block inner product ready to run: the variant's kernels loaded, the tile kernel's
/// launch chosen, the partial and result buffers allocated. [`Self::queue`] runs it on
/// the GPU's stream, [`Self::result`] reads c.
pub struct BlockInner {
    /// The mode.
    pub mode: BlockBlasMode,
    /// The plan (variant, kernel names).
    pub plan: MmaPlan,
    program: KernelProgram,
    tile: LoadedKernel,
    reduce: LoadedKernel,
    launch: LaunchConfig,
    work: [usize; 3],
    blocks: u32,
    partial: CudaSlice<f64>,
    c: CudaSlice<f64>,
    len: usize,
}

fn shape(e: impl std::fmt::Display) -> DeviceError {
    DeviceError::Shape(e.to_string())
}

impl BlockInner {
    /// The block inner product of `a` (m vectors) and `b` (n vectors, of the same
    /// length) in `mode`: the mode's default variant for (m, n) ([`BlockBlasMode::default_variant`]),
    /// its launch from `tuner` (a cached winner of a full tuning, else the default:
    /// [`mma::cuda::MAX_BLOCKS`] blocks, at most one per k-tile).
    pub fn new<T: VectorReal>(
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        mode: BlockBlasMode,
        a: VectorSet<'_, T>,
        b: VectorSet<'_, T>,
    ) -> Result<Self, DeviceError> {
        a.check("a")?;
        b.check("b")?;
        if a.len != b.len {
            return Err(shape(format!(
                "a has vectors of {} components, b of {}",
                a.len, b.len
            )));
        }
        let v: MmaVariant = mode
            .default_variant(a.count, b.count, T::INPUT)
            .map_err(shape)?;
        let plan = mma::plan(&mode.spec(), &v).map_err(shape)?;
        if let Some(why) = mma::cuda::check_launch(&plan, 2 * a.len, a.stride, b.stride) {
            return Err(shape(format!("{}: {why}", plan.name)));
        }
        let mut program = mma::cuda::program(&plan);
        program.options = super::codegen::options();
        let mut kernels = load_program(gpu, &program)?.into_iter();
        let (Some(tile), Some(reduce)) = (kernels.next(), kernels.next()) else {
            return Err(shape(format!(
                "{} defines fewer than two kernels",
                program.name
            )));
        };
        let k_tiles = 2 * a.len / v.tile_k;
        let work = [k_tiles * plan.threads(), 1, 1];
        let geometry = tile.interface.geometry;
        // At most one block per k-tile and MAX_BLOCKS in all, whatever the tuner picks.
        let max_blocks = geometry.grid(work, geometry.default_block())[0];
        let partial = gpu.alloc::<f64>(
            "block inner product partials",
            max_blocks as usize * plan.partial_len(),
        )?;
        let c = gpu.alloc::<f64>("block inner products", 2 * v.m * v.n)?;
        let mut me = BlockInner {
            mode,
            plan,
            program,
            tile,
            reduce,
            launch: LaunchConfig::default_of(&geometry, work),
            work,
            blocks: 0,
            partial,
            c,
            len: a.len,
        };
        me.allow_shared()?;
        let program = me.program.clone();
        let tile = me.tile.clone();
        let launch = tuned_launch(
            gpu,
            tuner,
            (&program).into(),
            &tile,
            &format!("{} m={} n={}", mode.name(), v.m, v.n),
            work,
            FirstUse::CachedOnly,
            |cfg| me.queue_tile(gpu, cfg, a, b),
        )?;
        me.launch = launch;
        Ok(me)
    }

    /// Sets the opt-in attribute where the tile kernel's shared memory is beyond 48 KiB.
    fn allow_shared(&self) -> Result<(), DeviceError> {
        allow_shared(&self.tile)
    }

    fn queue_tile<T: VectorReal>(
        &mut self,
        gpu: &Gpu,
        cfg: &LaunchConfig,
        a: VectorSet<'_, T>,
        b: VectorSet<'_, T>,
    ) -> Result<(), DeviceError> {
        let g = &self.tile.interface.geometry;
        let blocks = g.grid_tuned(self.work, g.block(cfg.block), cfg.grid[0])[0];
        if blocks as usize * self.plan.partial_len() > self.partial.len() {
            return Err(shape(format!(
                "{}: {blocks} blocks' partials do not fit the buffer",
                self.plan.name
            )));
        }
        self.blocks = blocks;
        let mut args = Args::new();
        args.read("a", a.values)
            .read("b", b.values)
            .write("partial", &mut self.partial)
            .count("lda", a.stride)
            .count("ldb", b.stride)
            .count("k_tiles", 2 * self.len / self.plan.variant.tile_k);
        self.tile.launch_with(gpu, self.work, cfg, args)
    }

    /// Queues the product of `a` and `b` (the sets it was made for, or sets of the same
    /// shapes) on the GPU's stream: the tile kernel, then the partials' sum into c.
    pub fn queue<T: VectorReal>(
        &mut self,
        gpu: &Gpu,
        a: VectorSet<'_, T>,
        b: VectorSet<'_, T>,
    ) -> Result<(), DeviceError> {
        a.check("a")?;
        b.check("b")?;
        let v = self.plan.variant;
        if (a.count, b.count, a.len, b.len) != (v.m, v.n, self.len, self.len) || T::INPUT != v.input
        {
            return Err(shape(format!(
                "{}: made for {} × {} vectors of {} {} components, given {} × {} of {} and {}",
                self.plan.name,
                v.m,
                v.n,
                self.len,
                v.input.name(),
                a.count,
                b.count,
                a.len,
                b.len
            )));
        }
        let launch = self.launch;
        self.queue_tile(gpu, &launch, a, b)?;
        let mut args = Args::new();
        args.read("partial", &self.partial)
            .write("c", &mut self.c)
            .count("blocks", self.blocks as usize);
        self.reduce.launch_default(gpu, [v.m * v.n, 1, 1], args)
    }

    /// c (m × n, row-major) after the queued product.
    pub fn result(&self, gpu: &Gpu) -> Result<Vec<Complex<f64>>, DeviceError> {
        let host = gpu
            .backend()
            .stream()
            .clone_dtoh(&self.c)
            .map_err(driver("reading the block inner products"))?;
        Ok(host.chunks(2).map(|z| Complex::new(z[0], z[1])).collect())
    }

    /// The tile kernel's launch.
    pub fn launch(&self) -> LaunchConfig {
        self.launch
    }

    /// Useful flops of one product: 8 m n L (L complex components; four real products
    /// of 2 flops each per complex one), not counting the split modes' extra MMAs.
    pub fn flops(&self) -> f64 {
        self.plan.flops(2 * self.len)
    }

    /// Bytes one product must move at least: both sets read once.
    pub fn bytes(&self) -> f64 {
        let v = self.plan.variant;
        ((v.m + v.n) * 2 * self.len * v.input.bytes()) as f64
    }
}

/// Sets the opt-in attribute where a kernel's dynamic shared memory is beyond 48 KiB.
fn allow_shared(k: &LoadedKernel) -> Result<(), DeviceError> {
    let bytes = k.interface.geometry.shared_fixed;
    if bytes > 48 * 1024 {
        k.function
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
            .map_err(driver(format!(
                "allowing shared memory for {}",
                k.interface.name
            )))?;
    }
    Ok(())
}

/// A block axpy y_j += Σ_i x_i A_ij ready to run (`block_axpy_<mode>`, the
/// `complex_axpy` tiles): the variant's kernel loaded, A (m × n complex) on the device.
pub struct BlockAxpy {
    /// The mode.
    pub mode: BlockBlasMode,
    /// The plan (variant, kernel name).
    pub plan: MmaPlan,
    kernel: LoadedKernel,
    coef: CudaSlice<f64>,
    len: usize,
}

impl BlockAxpy {
    /// The block axpy of m vectors x into n vectors y (of `len` components, stored as T)
    /// with the m × n matrix `a` (row-major) in `mode`'s default variant.
    pub fn new<T: VectorReal>(
        gpu: &Gpu,
        mode: BlockBlasMode,
        (m, n, len): (usize, usize, usize),
        a: &[Complex<f64>],
    ) -> Result<Self, DeviceError> {
        if a.len() != m * n {
            return Err(shape(format!(
                "block axpy: A of {m} × {n} = {} values, found {}",
                m * n,
                a.len()
            )));
        }
        let v = mode.default_axpy_variant(m, n, T::INPUT).map_err(shape)?;
        let plan = mma::plan(&mode.axpy_spec(), &v).map_err(shape)?;
        let mut program = mma::axpy::program(&plan);
        program.options = super::codegen::options();
        let kernel = load_program(gpu, &program)?
            .into_iter()
            .next()
            .ok_or_else(|| shape(format!("{} defines no kernel", program.name)))?;
        allow_shared(&kernel)?;
        let reals: Vec<f64> = a.iter().flat_map(|z| [z.re, z.im]).collect();
        let coef = gpu
            .backend()
            .stream()
            .clone_htod(&reals)
            .map_err(driver("uploading the block axpy's matrix"))?;
        Ok(Self {
            mode,
            plan,
            kernel,
            coef,
            len,
        })
    }

    /// Queues y_j += Σ_i x_i A_ij on the GPU's stream: `x` the m vectors, `y` the n
    /// vectors (stride `ldy` reals).
    pub fn queue<T: VectorReal>(
        &self,
        gpu: &Gpu,
        x: VectorSet<'_, T>,
        y: &mut CudaSlice<T>,
        ldy: usize,
    ) -> Result<(), DeviceError> {
        x.check("x")?;
        let v = self.plan.variant;
        let need = (v.n - 1) * ldy + 2 * self.len;
        if (x.count, x.len) != (v.m, self.len)
            || T::INPUT != v.input
            || ldy < 2 * self.len
            || y.len() < need
        {
            return Err(shape(format!(
                "{}: made for {} x vectors and {} y vectors of {} {} components (y: {need} reals                  at a stride of at least {}), given {} of {}, y of {} reals at stride {ldy}",
                self.plan.name,
                v.m,
                v.n,
                self.len,
                v.input.name(),
                2 * self.len,
                x.count,
                x.len,
                y.len()
            )));
        }
        let steps = self.len.div_ceil(v.tile_k);
        let mut args = Args::new();
        args.read("x", x.values)
            .write("y", y)
            .read("coef", &self.coef)
            .count("len", self.len)
            .count("ldx", x.stride)
            .count("ldy", ldy);
        self.kernel.launch_default(gpu, [steps * 32, 1, 1], args)
    }

    /// Useful flops of one axpy: 8 m n L.
    pub fn flops(&self) -> f64 {
        let v = self.plan.variant;
        8.0 * (v.m * v.n * self.len) as f64
    }

    /// Bytes one axpy must move at least: x read, y read and written.
    pub fn bytes(&self) -> f64 {
        let v = self.plan.variant;
        ((v.m + 2 * v.n) * 2 * self.len * v.input.bytes()) as f64
    }
}

/// c = ⟨a_i, b_j⟩ (m × n, row-major) in `mode`, run once on the GPU and read back.
pub fn block_inner<T: VectorReal>(
    gpu: &Gpu,
    tuner: Option<&Tuner>,
    mode: BlockBlasMode,
    a: VectorSet<'_, T>,
    b: VectorSet<'_, T>,
) -> Result<Vec<Complex<f64>>, DeviceError> {
    let mut op = BlockInner::new(gpu, tuner, mode, a, b)?;
    op.queue(gpu, a, b)?;
    op.result(gpu)
}

#[cfg(test)]
mod tests;
