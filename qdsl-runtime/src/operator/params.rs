//! The parameter list of a generated CUDA kernel, as data: which argument goes where.
//!
//! The CUDA emitter ([`qdsl_core::dsl::emit::cuda`]) declares, in order:
//!
//! ```text
//! f_<field> for every field in declaration order (the output non-const), each
//!   colour-spinor field followed by norm_<field> when stored in fixed point, each
//!   compressed long field (long recon 13/9) by phase_<field>, scale_<field>,
//! [xpay_x, [norm_xpay_x], xpay_a, xpay_b] (xpay only; a, b in the compute type),
//! L0, L1, L2, L3, n_out,
//! stride_<field> for every field in declaration order,
//! [stride_xpay_x]                     (xpay only)
//! ```
//!
//! [`kernel_params`] returns that list for a spec and a variant; the device launcher
//! binds arguments by walking it, so the binding order is written down once.

use qdsl_core::dsl::ir::{FieldShape, Role};
use qdsl_core::dsl::long_links::is_long;
use qdsl_core::dsl::variant::{LongRecon, StorageFormat};
use qdsl_core::dsl::{Ir, Variant};

/// One parameter of a generated kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// (position among the compressed long fields; L = c·W, see
    /// [`crate::device::long_links`]); recon 13 and 9 only.
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
            KernelParam::LongScale { name, .. } => format!("scale_{name}"),
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

/// The parameters of `variant` of the spec `ir`, in the order of the kernel's signature
/// (see the module docs).
pub fn kernel_params(ir: &Ir, variant: &Variant) -> Vec<KernelParam> {
    let mut pointers = Vec::new();
    let mut strides = Vec::new();
    let mut index = 0;
    let mut long = 0;
    // Colour-spinor fields in fixed point carry per-site norms.
    let fixed = matches!(
        variant.spinor,
        StorageFormat::Fixed16 | StorageFormat::Fixed8
    );
    for f in &ir.fields {
        let norm = fixed && matches!(f.shape, FieldShape::Spinor { .. });
        if f.role == Role::Out {
            pointers.push(KernelParam::Output(f.name.clone()));
            if norm {
                pointers.push(KernelParam::OutputNorm(f.name.clone()));
            }
            strides.push(KernelParam::OutputStride(f.name.clone()));
        } else {
            pointers.push(KernelParam::Input {
                name: f.name.clone(),
                index,
            });
            if norm {
                pointers.push(KernelParam::InputNorm {
                    name: f.name.clone(),
                    index,
                });
            }
            if let Some(c) = variant
                .long_recon
                .compression()
                .filter(|_| is_long(ir, &f.name))
            {
                let name = f.name.clone();
                if c.stores_phase() {
                    pointers.push(KernelParam::LongPhase {
                        name: name.clone(),
                        long,
                    });
                }
                pointers.push(KernelParam::LongScale { name, long });
                long += 1;
            }
            strides.push(KernelParam::InputStride {
                name: f.name.clone(),
                index,
            });
            index += 1;
        }
    }
    let mut params = pointers;
    if variant.xpay {
        params.push(KernelParam::XpayX);
        if fixed {
            params.push(KernelParam::XpayNorm);
        }
        params.extend([KernelParam::XpayA, KernelParam::XpayB]);
    }
    params.extend((0..4).map(KernelParam::Extent));
    params.push(KernelParam::NOut);
    params.extend(strides);
    if variant.xpay {
        params.push(KernelParam::XpayStride);
    }
    params
}

/// The number of compressed long fields of `variant` of `ir` (0 for long recon 18).
pub fn long_count(ir: &Ir, variant: &Variant) -> usize {
    if variant.long_recon == LongRecon::R18 {
        return 0;
    }
    ir.fields.iter().filter(|f| is_long(ir, &f.name)).count()
}

/// The number of input fields (non-output fields) of a spec.
pub fn input_count(ir: &Ir) -> usize {
    ir.fields.iter().filter(|f| f.role != Role::Out).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::dsl::Stencil;
    use qdsl_kernels::{ImprovedStaggeredHop, NaiveStaggeredHop, WilsonHop};

    /// The parameter names declared in the `extern "C"` signature of generated source,
    /// read from the text (independent of [`kernel_params`]).
    fn signature_names(source: &str) -> Vec<String> {
        let start = source.find("extern \"C\" __global__").expect("a kernel");
        let open = start + source[start..].find('(').expect("(");
        let close = open + source[open..].find(')').expect(")");
        source[open + 1..close]
            .split(',')
            .map(|p| p.trim().rsplit(' ').next().unwrap_or("").to_string())
            .collect()
    }

    fn check<S: Stencil>() {
        // The catalog variants, and each narrow format with and without xpay.
        let narrow = StorageFormat::EVERY
            .into_iter()
            .filter(|f| !f.is_native())
            .flat_map(|f| {
                [false, true].map(|xpay| Variant {
                    spinor: f,
                    gauge: f,
                    xpay,
                    ..Variant::default()
                })
            });
        let long = [StorageFormat::F32, StorageFormat::Fixed16]
            .into_iter()
            .flat_map(|f| {
                [LongRecon::R13, LongRecon::R12, LongRecon::R9].map(|long_recon| Variant {
                    spinor: f,
                    gauge: f,
                    long_recon,
                    ..Variant::default()
                })
            });
        for v in Variant::all()
            .into_iter()
            .chain(narrow)
            .chain(long)
            .filter(|v| S::supports(v))
        {
            let source = S::cuda_source(&v).expect("source");
            let names: Vec<String> = kernel_params(&S::ir(), &v)
                .iter()
                .map(KernelParam::cuda_name)
                .collect();
            assert_eq!(names, signature_names(&source), "{} {v}", S::ir().name);
        }
    }

    /// The parameter plan matches the signature the emitter actually writes, for every
    /// supported variant of every catalog kernel (with and without xpay).
    #[test]
    fn plan_matches_the_generated_signatures() {
        check::<WilsonHop>();
        check::<NaiveStaggeredHop>();
        check::<ImprovedStaggeredHop>();
    }

    /// Hand-written plan of the improved staggered hop with xpay.
    #[test]
    fn improved_staggered_xpay_plan_by_hand() {
        let v = Variant {
            xpay: true,
            ..Variant::default()
        };
        let names: Vec<String> = kernel_params(&ImprovedStaggeredHop::ir(), &v)
            .iter()
            .map(KernelParam::cuda_name)
            .collect();
        let want = [
            "f_out",
            "f_chi",
            "f_fat",
            "f_long",
            "xpay_x",
            "xpay_a",
            "xpay_b",
            "L0",
            "L1",
            "L2",
            "L3",
            "n_out",
            "stride_out",
            "stride_chi",
            "stride_fat",
            "stride_long",
            "stride_xpay_x",
        ];
        assert_eq!(names, want);
        assert_eq!(input_count(&ImprovedStaggeredHop::ir()), 3);
    }

    /// Hand-written plan of the improved staggered hop with long recon 9: the long
    /// pointer is followed by its phases and scale; the fat field is untouched.
    #[test]
    fn improved_staggered_long_recon_plan_by_hand() {
        let v = Variant {
            long_recon: LongRecon::R9,
            ..Variant::default()
        };
        let ir = ImprovedStaggeredHop::ir();
        let names: Vec<String> = kernel_params(&ir, &v)
            .iter()
            .map(KernelParam::cuda_name)
            .collect();
        let want = [
            "f_out",
            "f_chi",
            "f_fat",
            "f_long",
            "phase_long",
            "scale_long",
            "L0",
            "L1",
            "L2",
            "L3",
            "n_out",
            "stride_out",
            "stride_chi",
            "stride_fat",
            "stride_long",
        ];
        assert_eq!(names, want);
        assert_eq!(long_count(&ir, &v), 1);
        assert_eq!(long_count(&ir, &Variant::default()), 0);
        assert_eq!(long_count(&WilsonHop::ir(), &v), 0);
    }

    /// Hand-written plan of the Wilson hop in fixed16 with xpay: every colour-spinor
    /// pointer (out, ψ, x) is followed by its norms, the gauge field has none.
    #[test]
    fn wilson_fixed16_xpay_plan_by_hand() {
        let v = Variant {
            spinor: StorageFormat::Fixed16,
            gauge: StorageFormat::Fixed16,
            xpay: true,
            ..Variant::default()
        };
        let names: Vec<String> = kernel_params(&WilsonHop::ir(), &v)
            .iter()
            .map(KernelParam::cuda_name)
            .collect();
        let want = [
            "f_out",
            "norm_out",
            "f_psi",
            "norm_psi",
            "f_u",
            "xpay_x",
            "norm_xpay_x",
            "xpay_a",
            "xpay_b",
            "L0",
            "L1",
            "L2",
            "L3",
            "n_out",
            "stride_out",
            "stride_psi",
            "stride_u",
            "stride_xpay_x",
        ];
        assert_eq!(names, want);
    }
}
