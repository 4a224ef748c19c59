//! [`DeviceContext`]: what every device vector and operator of one solve shares — the
//! GPU, the tuner, the BLAS status word and the sticky error.
//!
//! # Errors of infallible vector methods
//!
//! [`SolverField`](crate::solver::SolverField)'s `norm_sqr`, `zeros_like`, `scale` and
//! `set_zero` cannot return errors, and a driver failure must not panic. The scheme:
//!
//! * the FIRST failure of any vector or operator of the context is recorded here
//!   ([`DeviceContext::error`]), with its message; later ones are dropped;
//! * while an error is recorded, `norm_sqr` and `dot` return NaN (a reduction of a
//!   vector that may hold garbage), so the solver stops with a NaN breakdown at its
//!   next reduction instead of reporting success;
//! * a vector whose allocation failed (`zeros_like`) holds no memory: every fallible
//!   operation on it returns the recorded error, the infallible ones do nothing;
//! * the caller reads the cause with [`DeviceContext::error`] after the solve (`qdsl
//!   solve` turns it into its error message).
//!
//! Format errors of BLAS kernels (f16 overflow, NaN given to fixed point) accumulate in
//! a device status word that every reduction reads (reductions synchronise anyway), and
//! are recorded the same way.

use super::blas_source::blas_program;
use crate::device::codegen::{conversion_program, reduction_program, Direction};
use crate::device::gpu::driver;
use crate::device::{DeviceError, DeviceLayout, Gpu, HostReal};
use crate::tune::Tuner;
use cudarc::driver::CudaSlice;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// The GPU, tuner, BLAS status word and sticky error shared by a solve's device
/// vectors and operators (see the module doc).
pub struct DeviceContext {
    /// Shared with the context's [`DeviceContext::rank_local`] twins.
    gpu: Arc<Gpu>,
    tuner: Arc<Tuner>,
    status: Mutex<CudaSlice<i32>>,
    error: Mutex<Option<String>>,
    /// One rank of a decomposed lattice: how this rank's partial sums become global.
    global_sum: Option<GlobalSum>,
}

/// The global sum of one rank's partial sums in a distributed solve: `(operation,
/// partials)` → the element-wise sum over ranks, added in rank order on every rank
/// (the same bits everywhere, every run); an error names the failed collective.
pub type GlobalSum = Box<dyn Fn(&str, &[f64]) -> Result<Vec<f64>, String> + Send + Sync>;

impl fmt::Debug for DeviceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceContext")
            .field("gpu", &self.gpu.device_key())
            .field("error", &self.error())
            .finish()
    }
}

/// Locks a mutex whose holder may have panicked (the data hold no invariant).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl DeviceContext {
    /// A context on `gpu`, launching operators with `tuner`.
    pub fn new(gpu: Gpu, tuner: Tuner) -> Result<Arc<Self>, DeviceError> {
        Self::on(Arc::new(gpu), Arc::new(tuner), None)
    }

    fn on(
        gpu: Arc<Gpu>,
        tuner: Arc<Tuner>,
        global_sum: Option<GlobalSum>,
    ) -> Result<Arc<Self>, DeviceError> {
        let status = gpu.alloc::<i32>("the BLAS status word", 1)?;
        Ok(Arc::new(Self {
            gpu,
            tuner,
            status: Mutex::new(status),
            error: Mutex::new(None),
            global_sum,
        }))
    }

    /// A context on the same GPU (and stream) and tuner whose sums stay this rank's (no
    /// global sum), with its own status word and recorded error: for work on a rank's
    /// own sites alone, such as the inner solves of a block preconditioner whose blocks
    /// never straddle two ranks. On one GPU it is an equivalent context.
    pub fn rank_local(&self) -> Result<Arc<Self>, DeviceError> {
        Self::on(Arc::clone(&self.gpu), Arc::clone(&self.tuner), None)
    }

    /// The context of one rank of a decomposed lattice: the vectors' norms and dot
    /// products (their halo sites zero, so the local sums are the interior's) are made
    /// global through `global_sum` (e.g. [`crate::distributed::device::global_sum`]).
    pub fn distributed(
        gpu: Gpu,
        tuner: Tuner,
        global_sum: GlobalSum,
    ) -> Result<Arc<Self>, DeviceError> {
        Self::on(Arc::new(gpu), Arc::new(tuner), Some(global_sum))
    }

    /// The global sums of this rank's `partials` (the partials themselves on one GPU).
    pub fn global(&self, operation: &str, partials: Vec<f64>) -> Result<Vec<f64>, DeviceError> {
        match &self.global_sum {
            None => Ok(partials),
            Some(sum) => sum(operation, &partials).map_err(|message| DeviceError::Driver {
                what: format!("global sum ({operation})"),
                message,
            }),
        }
    }

    /// The GPU.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The tuner of operator launches.
    pub fn tuner(&self) -> &Tuner {
        &self.tuner
    }

    /// The first failure recorded since the context was made (or last cleared).
    pub fn error(&self) -> Option<String> {
        lock(&self.error).clone()
    }

    /// Takes the recorded failure out, clearing it.
    pub fn take_error(&self) -> Option<String> {
        lock(&self.error).take()
    }

    /// Records `e` unless a failure is already recorded.
    pub fn record(&self, e: &dyn fmt::Display) {
        let mut slot = lock(&self.error);
        if slot.is_none() {
            *slot = Some(e.to_string());
        }
    }

    /// Compiles and loads, in parallel, the kernels the device vectors of `layouts` use
    /// (BLAS between every pair, reductions, encoding from and decoding to f64 host
    /// fields), so that a solve's first iterations find them loaded: first-use set-up.
    /// Kernels a format does not have are left out (their use reports that); a failed
    /// compilation is an error.
    pub fn preload_vector_kernels(&self, layouts: &[DeviceLayout]) -> Result<(), DeviceError> {
        let mut distinct: Vec<DeviceLayout> = Vec::new();
        for l in layouts {
            if !distinct.contains(l) {
                distinct.push(*l);
            }
        }
        let mut programs = Vec::new();
        for y in &distinct {
            programs.extend(distinct.iter().filter_map(|x| blas_program(y, x).ok()));
            programs.extend(reduction_program(y).ok());
            for dir in [Direction::Encode, Direction::Decode] {
                programs.extend(conversion_program(y, HostReal::F64, dir).ok());
            }
        }
        self.gpu.preload_programs(&programs)
    }

    /// The BLAS status word (kernels OR their status bits into it).
    pub(crate) fn status(&self) -> MutexGuard<'_, CudaSlice<i32>> {
        lock(&self.status)
    }

    /// Reads and clears the BLAS status word, recording a non-zero one as a failure;
    /// then whether the context is healthy (no failure recorded).
    pub(crate) fn check(&self) -> bool {
        let stream = self.gpu.backend().stream();
        let mut status = self.status();
        match stream.clone_dtoh(&*status) {
            Ok(bits) => {
                let bits = bits.first().copied().unwrap_or(0);
                if bits != 0 {
                    self.record(&format!(
                        "a device BLAS kernel reported status bits {bits:#x} ({})",
                        crate::device::field::describe_status(bits as u32)
                    ));
                    if let Err(e) = stream.memset_zeros(&mut *status) {
                        self.record(&driver("clearing the BLAS status word")(e));
                    }
                }
            }
            Err(e) => self.record(&driver("reading the BLAS status word")(e)),
        }
        self.error().is_none()
    }
}
