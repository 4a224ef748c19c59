//! Tuned launches of the loaded kernels that are not generated stencils — BLAS,
//! reductions, format conversions, link paths — through the one [`Tunable`]
//! interface: [`KernelTuning`] is any [`LoadedKernel`] on its arguments, its
//! candidates enumerated from the kernel's knob space (its interface's geometry), its
//! key the kernel's name, the program's name (the variant: formats, precision, knobs),
//! the program's source hash, the work, the formats and the device.
//!
//! [`tuned_launch`] asks the tuner once per (program, kernel, work) in a process and
//! remembers the answer ([`Tuner::remembered`]), so a kernel launched every iteration
//! costs a map lookup. Under the default launch policy these kernels are not timed on
//! first use ([`FirstUse::CachedOnly`], see [`crate::tune::tunable`]): a winner a full
//! tuning saved, or the default launch.

use super::gpu::{DeviceError, Gpu};
use super::kernel::LoadedKernel;
use crate::tune::{
    Candidate, FirstUse, LaunchConfig, LaunchLimits, Tunable, TuneError, TuneKey, Tuner,
};
use qdsl_core::dsl::variant::fnv1a;
use qdsl_core::dsl::{Geometry, KernelProgram};

impl From<TuneError> for DeviceError {
    fn from(e: TuneError) -> Self {
        DeviceError::Driver {
            what: "tuning a kernel".into(),
            message: e.to_string(),
        }
    }
}

/// The program a tuned kernel belongs to: its name (which names the variant: formats,
/// precision, knobs) and its source, hashed only when the tuner is asked.
#[derive(Clone, Copy, Debug)]
pub struct ProgramRef<'a> {
    /// The program's name.
    pub name: &'a str,
    /// Its source text, or the text's hash ([`KernelProgram::source_hash`]).
    pub source: Source<'a>,
}

/// A program's source, or its hash.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// The text.
    Text(&'a str),
    /// FNV-1a of the text.
    Hash(u64),
}

impl ProgramRef<'_> {
    /// FNV-1a of the source.
    pub fn source_hash(&self) -> u64 {
        match self.source {
            Source::Text(t) => fnv1a(t.as_bytes()),
            Source::Hash(h) => h,
        }
    }
}

impl<'a> From<&'a KernelProgram> for ProgramRef<'a> {
    fn from(p: &'a KernelProgram) -> Self {
        ProgramRef {
            name: &p.name,
            source: Source::Text(&p.source),
        }
    }
}

/// The tune key of kernel `kernel` of `program` over `work` on `device`: the kernel's
/// name, the hash of the program's name as the variant hash, the hash of the program's
/// own source, the work items, `formats`.
pub fn kernel_key(
    program: ProgramRef<'_>,
    kernel: &str,
    work: [usize; 3],
    formats: &str,
    device: &str,
) -> TuneKey {
    TuneKey::new(
        kernel,
        fnv1a(program.name.as_bytes()),
        program.source_hash(),
        work.iter().product(),
        formats,
        device,
    )
}

/// A loaded kernel on its arguments, as the tuner sees it: `run` queues one launch with
/// a candidate's launch on the GPU's stream (on scratch outputs where the kernel is not
/// idempotent: timing runs it several times).
pub struct KernelTuning<'a, F> {
    gpu: &'a Gpu,
    kernel: &'a LoadedKernel,
    key: TuneKey,
    work: [usize; 3],
    first_use: FirstUse,
    run: F,
}

impl<'a, F> KernelTuning<'a, F>
where
    F: FnMut(&LaunchConfig) -> Result<(), DeviceError>,
{
    /// `kernel` of `program` over `work`, key formats `formats`, timed through `run`.
    pub fn new(
        gpu: &'a Gpu,
        program: ProgramRef<'_>,
        kernel: &'a LoadedKernel,
        formats: &str,
        work: [usize; 3],
        first_use: FirstUse,
        run: F,
    ) -> Self {
        Self {
            gpu,
            key: kernel_key(
                program,
                &kernel.interface.name,
                work,
                formats,
                &gpu.device_key(),
            ),
            kernel,
            work,
            first_use,
            run,
        }
    }
}

impl<F> Tunable for KernelTuning<'_, F>
where
    F: FnMut(&LaunchConfig) -> Result<(), DeviceError>,
{
    type Error = DeviceError;

    fn tune_key(&self) -> TuneKey {
        self.key.clone()
    }

    fn work(&self) -> [usize; 3] {
        self.work
    }

    fn geometry(&self) -> Geometry {
        self.kernel.interface.geometry
    }

    fn limits(&self) -> Result<LaunchLimits, DeviceError> {
        self.gpu.launch_limits()
    }

    fn first_use(&self) -> FirstUse {
        self.first_use
    }

    fn time_us(&mut self, c: &Candidate) -> Result<f64, DeviceError> {
        let run = &mut self.run;
        self.gpu.time_us(1, 5, || run(&c.launch))
    }
}

/// The launch of `kernel` (of `program`) over `work`: remembered by the tuner (the
/// source is not even hashed then), else
/// [`Tuner::tune_kernel`] of its [`KernelTuning`] (`formats` in the key, `run` timing
/// a candidate), remembered. Without a tuner: the default launch.
#[allow(clippy::too_many_arguments)]
pub fn tuned_launch<F>(
    gpu: &Gpu,
    tuner: Option<&Tuner>,
    program: ProgramRef<'_>,
    kernel: &LoadedKernel,
    formats: &str,
    work: [usize; 3],
    first_use: FirstUse,
    run: F,
) -> Result<LaunchConfig, DeviceError>
where
    F: FnMut(&LaunchConfig) -> Result<(), DeviceError>,
{
    let geometry = &kernel.interface.geometry;
    let Some(tuner) = tuner else {
        return Ok(LaunchConfig::default_of(geometry, work));
    };
    let name = &kernel.interface.name;
    if let Some(l) = tuner.remembered(program.name, name, work) {
        return Ok(l);
    }
    let mut tuning = KernelTuning::new(gpu, program, kernel, formats, work, first_use, run);
    let launch = tuner.tune_kernel(&mut tuning)?.best.launch;
    tuner.remember(program.name, name, work, launch);
    Ok(launch)
}

#[cfg(test)]
mod tests;
