//! What a tuning result is valid for: the [`TuneKey`] of one kernel launch, and the
//! [`Fingerprint`] of the software and device that the whole cache was measured with.

/// Replaces tabs, carriage returns and newlines (the TSV's separators) by spaces, and
/// trims.
pub fn clean(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ").trim().to_string()
}

/// The key of one tuning decision: (kernel, variant hash, source hash, volume, formats,
/// device). The source hash is the variant's own generated source, so a change of the
/// emitter's output for any variant invalidates that variant's tuning (and only it).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TuneKey {
    /// Kernel name.
    pub kernel: String,
    /// Stable hash of the kernel variant (`Variant::stable_hash`).
    pub variant_hash: u64,
    /// FNV-1a hash of the variant's generated source (`source_hash`).
    pub source_hash: u64,
    /// Sites the kernel runs over.
    pub volume: usize,
    /// Storage formats, e.g. "spinor=f32 gauge=f32 recon=12".
    pub formats: String,
    /// Device name and architecture, e.g. "NVIDIA H100 80GB HBM3 sm_90".
    pub device: String,
}

impl TuneKey {
    /// A key; separators in the strings become spaces ([`clean`]).
    pub fn new(
        kernel: &str,
        variant_hash: u64,
        source_hash: u64,
        volume: usize,
        formats: &str,
        device: &str,
    ) -> Self {
        Self {
            kernel: clean(kernel),
            variant_hash,
            source_hash,
            volume,
            formats: clean(formats),
            device: clean(device),
        }
    }
}

/// The source hash of a tune key: FNV-1a of the kernel's generated source text.
pub fn source_hash(source: &str) -> u64 {
    qdsl_core::dsl::variant::fnv1a(source.as_bytes())
}

/// What a tune cache was measured with. A cache whose fingerprint differs from the
/// running program's is stale: it is re-tuned (with a warning).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    /// The qdsl-runtime crate version.
    pub crate_version: String,
    /// A hash of the code generator (changes whenever generated code may change).
    pub codegen_hash: String,
    /// GPU name.
    pub gpu_name: String,
    /// GPU architecture, `sm_XY`.
    pub sm: String,
    /// Driver version.
    pub driver_version: String,
    /// NVRTC version.
    pub nvrtc_version: String,
}

impl Fingerprint {
    /// The names of the fields, in header order.
    pub const FIELDS: [&'static str; 6] = [
        "crate_version",
        "codegen_hash",
        "gpu_name",
        "sm",
        "driver_version",
        "nvrtc_version",
    ];

    /// A fingerprint with this crate's version; separators in the strings become spaces.
    pub fn new(
        codegen_hash: &str,
        gpu_name: &str,
        sm: &str,
        driver_version: &str,
        nvrtc_version: &str,
    ) -> Self {
        Self {
            crate_version: env!("CARGO_PKG_VERSION").to_string(),
            codegen_hash: clean(codegen_hash),
            gpu_name: clean(gpu_name),
            sm: clean(sm),
            driver_version: clean(driver_version),
            nvrtc_version: clean(nvrtc_version),
        }
    }

    /// The field values in the order of [`Self::FIELDS`].
    pub fn values(&self) -> [&str; 6] {
        [
            &self.crate_version,
            &self.codegen_hash,
            &self.gpu_name,
            &self.sm,
            &self.driver_version,
            &self.nvrtc_version,
        ]
    }
}
