//! Kernel launches through `cuLaunchKernelEx`, optionally as *programmatic dependents*
//! (Hopper's programmatic dependent launch, PDL).
//!
//! A kernel launched with the programmatic-stream-serialization attribute may be
//! scheduled while the kernel before it in the stream is still running; it must not touch
//! global memory before `griddepcontrol.wait`, which returns once that kernel has
//! finished and its writes are visible. Every generated stencil kernel calls
//! `qdsl_grid_dependency_wait()` right after its index arithmetic, before any load or
//! store, so the dependent launch changes no result: it only hides the launch latency and
//! the index arithmetic behind the previous kernel's tail (H100, 32⁴: the even-odd Wilson
//! M̂, two hops back to back, 229.5 → 226.4 µs in `qdsl bench`; BENCHMARKS.md). Launched
//! without the attribute, or on GPUs before sm_90, the wait is a no-op.
//!
//! [`KernelArgs`] collects the parameters as `cuLaunchKernelEx` wants them (a pointer to
//! each value) and keeps cudarc's read/write records of the buffers until the launch is
//! queued, like cudarc's own launch builder.

use cudarc::driver::sys::{CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig, CUresult};
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DriverError, LaunchConfig,
    SyncOnDrop,
};
use std::ffi::c_void;

/// The environment switch that turns programmatic dependent launches off (`=0`).
pub const DEPENDENT_LAUNCH_ENV: &str = "QDSL_DEPENDENT_LAUNCH";

/// Whether `QDSL_DEPENDENT_LAUNCH` allows dependent launches (anything but `0`, or unset).
pub fn dependent_launch_enabled() -> bool {
    switch_allows(std::env::var(DEPENDENT_LAUNCH_ENV).ok().as_deref())
}

/// The switch's value → allowed: unset or anything but `0`.
fn switch_allows(value: Option<&str>) -> bool {
    value.is_none_or(|v| v.trim() != "0")
}

/// The 8-byte parameter slot of a 32-bit integer (in its low bytes).
fn slot_i32(v: i32) -> u64 {
    u64::from(v as u32)
}

/// The 8-byte parameter slot of a single-precision real (in its low bytes).
fn slot_f32(v: f32) -> u64 {
    u64::from(v.to_bits())
}

/// The parameters of one kernel launch, in the kernel's order. Each value is held in 8
/// bytes (device pointers, and 32-bit integers and floats in the low bytes: the driver
/// copies as many bytes as the kernel's parameter has, and every supported host is
/// little-endian).
pub struct KernelArgs<'a> {
    stream: &'a CudaStream,
    values: Vec<u64>,
    records: Vec<SyncOnDrop<'a>>,
}

impl<'a> KernelArgs<'a> {
    /// No parameters yet, for a launch on `stream`.
    pub fn new(stream: &'a CudaStream) -> Self {
        Self {
            stream,
            values: Vec::new(),
            records: Vec::new(),
        }
    }

    /// A buffer the kernel reads.
    pub fn read<T>(&mut self, buffer: &'a CudaSlice<T>) -> &mut Self {
        let (ptr, record) = buffer.device_ptr(self.stream);
        self.values.push(ptr);
        self.records.push(record);
        self
    }

    /// A buffer the kernel writes.
    pub fn write<T>(&mut self, buffer: &'a mut CudaSlice<T>) -> &mut Self {
        let (ptr, record) = buffer.device_ptr_mut(self.stream);
        self.values.push(ptr);
        self.records.push(record);
        self
    }

    /// A device address with the record of its use (kept until the launch is queued).
    pub fn pointer(&mut self, address: u64, record: SyncOnDrop<'a>) -> &mut Self {
        self.values.push(address);
        self.records.push(record);
        self
    }

    /// A null pointer.
    pub fn null(&mut self) -> &mut Self {
        self.values.push(0);
        self
    }

    /// A 32-bit integer.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.values.push(slot_i32(v));
        self
    }

    /// A 64-bit integer.
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.values.push(v as u64);
        self
    }

    /// A single-precision real.
    pub fn f32(&mut self, v: f32) -> &mut Self {
        self.values.push(slot_f32(v));
        self
    }

    /// A double-precision real.
    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.values.push(v.to_bits());
        self
    }

    /// Queues `function` with these parameters; `dependent` adds the
    /// programmatic-stream-serialization attribute (only for kernels that wait on their
    /// grid dependency before touching memory, see the module documentation).
    ///
    /// # Safety
    /// The parameters must match the kernel's signature in number, order and type, and
    /// the kernel must stay within the buffers it is given.
    pub unsafe fn launch(
        mut self,
        function: &CudaFunction,
        cfg: LaunchConfig,
        dependent: bool,
    ) -> Result<(), DriverError> {
        self.stream.context().bind_to_thread()?;
        let mut params: Vec<*mut c_void> = self
            .values
            .iter_mut()
            .map(|v| (v as *mut u64).cast::<c_void>())
            .collect();
        // SAFETY: an all-zero attribute is a valid (ignored) attribute; its id and value
        // are set below.
        let mut attribute: CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attribute.id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attribute.value.programmaticStreamSerializationAllowed = 1;
        let config = CUlaunchConfig {
            gridDimX: cfg.grid_dim.0,
            gridDimY: cfg.grid_dim.1,
            gridDimZ: cfg.grid_dim.2,
            blockDimX: cfg.block_dim.0,
            blockDimY: cfg.block_dim.1,
            blockDimZ: cfg.block_dim.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: self.stream.cu_stream(),
            attrs: &mut attribute,
            numAttrs: u32::from(dependent),
        };
        // SAFETY: `params` points at one live value per kernel parameter (the caller's
        // contract), `config` and `attribute` outlive the call.
        let status = unsafe {
            cudarc::driver::sys::cuLaunchKernelEx(
                &config,
                function.cu_function(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        // The buffers' read/write records are taken once the launch is queued.
        drop(self.records);
        match status {
            CUresult::CUDA_SUCCESS => Ok(()),
            e => Err(DriverError(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first `n` bytes of a slot as the driver reads them (from its address).
    fn leading_bytes(slot: &u64, n: usize) -> Vec<u8> {
        // SAFETY: reads n ≤ 8 bytes of a live u64.
        unsafe { std::slice::from_raw_parts((slot as *const u64).cast::<u8>(), n) }.to_vec()
    }

    #[test]
    fn a_32_bit_parameter_is_the_first_four_bytes_of_its_slot() {
        for v in [0, 1, -3, i32::MAX, i32::MIN] {
            let bytes = leading_bytes(&slot_i32(v), 4);
            assert_eq!(i32::from_ne_bytes(bytes.try_into().unwrap()), v);
        }
        for v in [0.0f32, -1.5, 3.25e-7, f32::MAX] {
            let bytes = leading_bytes(&slot_f32(v), 4);
            assert_eq!(f32::from_ne_bytes(bytes.try_into().unwrap()), v);
        }
    }

    #[test]
    fn only_zero_turns_dependent_launches_off() {
        assert!(switch_allows(None));
        assert!(switch_allows(Some("1")));
        assert!(switch_allows(Some("")));
        assert!(!switch_allows(Some("0")));
        assert!(!switch_allows(Some(" 0\n")));
    }
}
