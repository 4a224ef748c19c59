//! What a generated kernel is, besides its text: a [`CompiledKernel`] carries its source
//! together with its interface — the entry name, every parameter in signature order with
//! what binds to it ([`KernelParam`]), its launch geometry and the hash of its source.
//! The emitter that prints the signature returns this list, so the argument order is
//! written down once: the runtime's launcher binds by walking it.

use super::variant::fnv1a;

/// One parameter of a generated stencil kernel, in the order of its signature:
///
/// ```text
/// f_<field> for every field in declaration order (the output non-const), each
///   colour-spinor field followed by norm_<field> when stored in fixed point, each
///   compressed long field (long recon 13/9) by phase_<field>, and by scale_<field>,
///   each fixed-point gauge field with a global link scale by scale_<field>,
/// [xpay_x, [norm_xpay_x], xpay_a, xpay_b] (xpay only; a, b in the compute type),
/// L0, L1, L2, L3, n_out,
/// stride_<field> for every field in declaration order,
/// [stride_xpay_x]                     (xpay only)
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KernelParam {
    /// The output field's chunk pointer `f_<name>`.
    Output(String),
    /// The chunk pointer `f_<name>` of input `index` (inputs counted in declaration order).
    Input {
        /// Field name.
        name: String,
        /// Position among the inputs.
        index: usize,
    },
    /// `norm_<name>`, the per-site f32 norms of the fixed-point output field.
    OutputNorm(String),
    /// `norm_<name>`, the per-site f32 norms of fixed-point input `index`.
    InputNorm {
        /// Field name.
        name: String,
        /// Position among the inputs.
        index: usize,
    },
    /// `phase_<name>`, the phases t = arg(det W)/π of the compressed long field `long`
    /// (position among the compressed long fields, L = c·W); recon 13 and 9 only.
    LongPhase {
        /// Field name.
        name: String,
        /// Position among the compressed long fields.
        long: usize,
    },
    /// `scale_<name>`, the scale c of the compressed long field `long` (compute type).
    LongScale {
        /// Field name.
        name: String,
        /// Position among the compressed long fields.
        long: usize,
    },
    /// `scale_<name>`, the global scale s of the fixed-point gauge field at input `index`
    /// stored as s·q/Q ([`crate::dsl::variant::LinkScale::Global`]; compute type).
    LinkScale {
        /// Field name.
        name: String,
        /// Position among the inputs.
        index: usize,
    },
    /// `xpay_x`, the chunk pointer of x in out = a·x + b·D ψ.
    XpayX,
    /// `norm_xpay_x`, the per-site norms of a fixed-point x.
    XpayNorm,
    /// `xpay_a` (compute type).
    XpayA,
    /// `xpay_b` (compute type).
    XpayB,
    /// `L<mu>`, the lattice extent in direction μ.
    Extent(usize),
    /// `n_out`, the number of output sites.
    NOut,
    /// `stride_<name>` of the output field, in chunk units.
    OutputStride(String),
    /// `stride_<name>` of input `index`, in chunk units.
    InputStride {
        /// Field name.
        name: String,
        /// Position among the inputs.
        index: usize,
    },
    /// `stride_xpay_x`.
    XpayStride,
}

impl KernelParam {
    /// The parameter's name in the generated source.
    pub fn cuda_name(&self) -> String {
        match self {
            KernelParam::Output(n) | KernelParam::Input { name: n, .. } => format!("f_{n}"),
            KernelParam::OutputNorm(n) | KernelParam::InputNorm { name: n, .. } => {
                format!("norm_{n}")
            }
            KernelParam::LongPhase { name, .. } => format!("phase_{name}"),
            KernelParam::LongScale { name, .. } | KernelParam::LinkScale { name, .. } => {
                format!("scale_{name}")
            }
            KernelParam::XpayX => "xpay_x".into(),
            KernelParam::XpayNorm => "norm_xpay_x".into(),
            KernelParam::XpayA => "xpay_a".into(),
            KernelParam::XpayB => "xpay_b".into(),
            KernelParam::Extent(mu) => format!("L{mu}"),
            KernelParam::NOut => "n_out".into(),
            KernelParam::OutputStride(n) | KernelParam::InputStride { name: n, .. } => {
                format!("stride_{n}")
            }
            KernelParam::XpayStride => "stride_xpay_x".into(),
        }
    }
}

/// How a kernel is launched: threads along x over the output sites (one thread per site),
/// grid rows along y over the fifth-dimension slices of 5D fields, and the dynamic shared
/// memory a block of `threads` threads needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchGeometry {
    /// Dynamic shared memory per thread of a block, in bytes (0: none).
    pub shared_bytes_per_thread: u32,
}

impl LaunchGeometry {
    /// One thread per output site, no shared memory: every `stencil!` kernel.
    pub const SITE_PER_THREAD: LaunchGeometry = LaunchGeometry {
        shared_bytes_per_thread: 0,
    };

    /// The grid of a launch over `sites` output sites per slice and `slices` slices, in
    /// blocks of `block` threads: (⌈sites / block⌉, slices, 1).
    pub fn grid(&self, sites: usize, slices: usize, block: u32) -> (u32, u32, u32) {
        let blocks = sites.div_ceil(block.max(1) as usize);
        (
            u32::try_from(blocks).unwrap_or(u32::MAX),
            u32::try_from(slices.max(1)).unwrap_or(u32::MAX),
            1,
        )
    }

    /// The dynamic shared memory of a block of `block` threads.
    pub fn shared_bytes(&self, block: u32) -> u32 {
        self.shared_bytes_per_thread.saturating_mul(block)
    }
}

/// A generated kernel with its interface: what the launcher needs besides the GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledKernel {
    /// The `extern "C"` entry name.
    pub name: String,
    /// The CUDA C++ source.
    pub source: String,
    /// The parameters in signature order, each saying what binds to it.
    pub params: Vec<KernelParam>,
    /// How it is launched.
    pub geometry: LaunchGeometry,
}

impl CompiledKernel {
    /// FNV-1a of the source: the tune key's part that changes with the generated code.
    pub fn source_hash(&self) -> u64 {
        fnv1a(self.source.as_bytes())
    }

    /// The parameter names of the `extern "C"` signature of [`Self::source`], read from
    /// the text (independent of [`Self::params`]): `const real xpay_a` → `xpay_a`.
    pub fn signature_names(&self) -> Vec<String> {
        let head = format!("extern \"C\" __global__ void {}(", self.name);
        let Some(start) = self.source.find(&head) else {
            return Vec::new();
        };
        let rest = &self.source[start + head.len()..];
        let end = rest.find(')').unwrap_or(rest.len());
        rest[..end]
            .split(',')
            .filter_map(|p| p.split_whitespace().last())
            .map(str::to_string)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_covers_every_site_of_every_slice() {
        let g = LaunchGeometry::SITE_PER_THREAD;
        assert_eq!(g.grid(1000, 1, 128), (8, 1, 1));
        assert_eq!(g.grid(1024, 12, 128), (8, 12, 1));
        // A 4D launch is one slice, whatever the caller passed for it.
        assert_eq!(g.grid(1, 0, 32), (1, 1, 1));
        assert_eq!(g.shared_bytes(256), 0);
        let staged = LaunchGeometry {
            shared_bytes_per_thread: 96,
        };
        assert_eq!(staged.shared_bytes(128), 96 * 128);
    }

    #[test]
    fn signature_names_are_read_from_the_text() {
        let k = CompiledKernel {
            name: "k".into(),
            source: "// k\nextern \"C\" __global__ void k(\n    float* __restrict__ f_out,\n    \
                     const int L0, const int L1,\n    const int n_out)\n{\n}\n"
                .into(),
            params: vec![],
            geometry: LaunchGeometry::SITE_PER_THREAD,
        };
        assert_eq!(k.signature_names(), ["f_out", "L0", "L1", "n_out"]);
        assert_eq!(k.source_hash(), fnv1a(k.source.as_bytes()));
    }
}
