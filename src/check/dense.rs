//! The `qdsl check` rows of the dense-link kernels (the multigrid coarse hop and the
//! coarse operator with its site matrix): every supported variant (output parity or the
//! full lattice, xpay, the time boundary, f64 and f32) on random dense links (and site
//! matrices) and a random source, GPU against the generated CPU code
//! ([`apply_cpu_dense`]) on the same rounded inputs.

use super::reference::apply_cpu_dense;
use super::report::{bound, relative_error, CheckRow, Outcome};
use super::run::random_spinors;
use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::ir::{FieldShape, Role};
use qdsl_core::dsl::lower::lower;
use qdsl_core::dsl::variant::StorageFormat;
use qdsl_core::dsl::Variant;
use qdsl_core::field::{ColourSpinorField, DenseKind, DenseLinkField};
use qdsl_core::lattice::Lattice;
use qdsl_core::{Complex, Real};
use qdsl_kernels::catalog::StencilEntry;
use qdsl_runtime::device::{DeviceField, Gpu};
use qdsl_runtime::operator::device::{device_spinor, output_sites, DeviceStencil, StencilArgs};
use qdsl_runtime::operator::DeviceXpay;
use qdsl_runtime::tune::LaunchConfig;

/// The xpay factors of the check: out = a·x + b·D φ.
const XPAY: (f64, f64) = (0.75, -0.375);

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn as_c64<T: Real>(f: &ColourSpinorField<T>) -> Vec<Complex<f64>> {
    f.data()
        .iter()
        .map(|z| Complex::new(z.re.to_f64(), z.im.to_f64()))
        .collect()
}

/// ‖gpu − cpu‖/‖cpu‖ of `v` of the dense kernel `entry` on `lat`, computed in T (the
/// variant's storage precision): random links and site matrices (seeds
/// `seed + 100 + k`, one per dense field in declaration order), a Gaussian source
/// (`seed`) and xpay x (`seed + 1`).
pub fn compare_dense<T: Real>(
    gpu: &Gpu,
    entry: &StencilEntry,
    v: &Variant,
    lat: Lattice,
    seed: u64,
) -> Result<f64, String> {
    let ir = (entry.ir)();
    let lowered = lower(&ir).map_err(err)?;
    let n = lowered
        .dense
        .ok_or_else(|| format!("{} has no dense links", ir.name))?;
    let (out_layout, src, x) = random_spinors::<T>(&lowered, v, lat, seed)?;
    let links = ir
        .fields
        .iter()
        .filter(|f| matches!(f.shape, FieldShape::Gauge { .. }))
        .zip(seed + 100..)
        .map(|(f, seed)| {
            let kind = if f.shape.is_site_matrix() {
                DenseKind::SiteMatrix
            } else {
                DenseKind::Links
            };
            DenseLinkField::<f64>::random_of(kind, lat, n, seed).map(|y| y.cast::<T>())
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    let (a, b) = XPAY;
    // CPU reference.
    let mut cpu = ColourSpinorField::<T>::zeros(out_layout);
    let xpay = v.xpay.then_some(Xpay {
        a: T::from_f64(a),
        x: &x,
        b: T::from_f64(b),
    });
    let refs: Vec<&DenseLinkField<T>> = links.iter().collect();
    apply_cpu_dense(&ir.name, v, &mut cpu, &src, &refs, xpay).map_err(err)?;
    // GPU.
    let kernel = (entry.compiled)(v).map_err(err)?;
    let info = (entry.info)(v).map_err(err)?;
    let stencil = DeviceStencil::new(gpu, ir.clone(), v, kernel, info).map_err(err)?;
    let d_src = DeviceField::from_spinor(gpu, &src, v.spinor.fermion_format()).map_err(err)?;
    let d_x = DeviceField::from_spinor(gpu, &x, v.spinor.fermion_format()).map_err(err)?;
    let d_links = links
        .iter()
        .map(|y| DeviceField::from_dense_links(gpu, y, v.gauge))
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    let n_out = output_sites(v, &lat);
    let mut d_out =
        device_spinor(gpu, v.spinor, 2 * lowered.nspin * lowered.ncolour, n_out).map_err(err)?;
    let mut next_link = d_links.iter();
    let mut inputs: Vec<&DeviceField> = Vec::new();
    for f in ir.fields.iter().filter(|f| f.role != Role::Out) {
        match f.shape {
            FieldShape::Gauge { .. } => {
                inputs.push(next_link.next().ok_or("more link fields than data")?)
            }
            _ => inputs.push(&d_src),
        }
    }
    let xp = DeviceXpay { a, x: &d_x, b };
    stencil
        .launch(
            gpu,
            &lat,
            stencil.untuned(LaunchConfig::default_for(n_out)),
            StencilArgs::new(&mut d_out, &inputs).xpay(v.xpay.then_some(&xp)),
        )
        .map_err(err)?;
    let gpu_out = d_out.to_spinor::<T>(gpu, out_layout).map_err(err)?;
    Ok(relative_error(&as_c64(&gpu_out), &as_c64(&cpu)))
}

/// The variants of a dense kernel that `qdsl check` runs: every catalog variant its
/// knobs accept (f64 and f32 storage only).
pub fn dense_variants(entry: &StencilEntry) -> Vec<Variant> {
    let ir = (entry.ir)();
    Variant::all()
        .into_iter()
        .filter(|v| ir.knobs.check(&ir.name, v).is_ok())
        .filter(|v| matches!(v.spinor, StorageFormat::F64 | StorageFormat::F32))
        .collect()
}

/// One row per [`dense_variants`] of the dense kernel `entry` on random fields on the
/// lattice `dims` (one failed row when `dims` is no lattice).
pub fn check_dense_kernel(
    gpu: &Gpu,
    entry: &StencilEntry,
    dims: [usize; 4],
    seed: u64,
) -> Vec<CheckRow> {
    let lat = match Lattice::new(dims) {
        Ok(lat) => lat,
        Err(e) => {
            return vec![CheckRow {
                kernel: entry.name.clone(),
                variant: "-".into(),
                data: "random".into(),
                outcome: Outcome::Failed(e.to_string()),
            }]
        }
    };
    dense_variants(entry)
        .into_iter()
        .map(|v| {
            let result = match v.spinor {
                StorageFormat::F64 => compare_dense::<f64>(gpu, entry, &v, lat, seed),
                _ => compare_dense::<f32>(gpu, entry, &v, lat, seed),
            };
            let outcome = match result {
                Ok(error) => Outcome::Compared {
                    error,
                    bound: bound(v.spinor),
                },
                Err(e) => Outcome::Failed(e),
            };
            CheckRow {
                kernel: entry.name.clone(),
                variant: v.canonical(),
                data: "random".into(),
                outcome,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::dsl::variant::OutputSites;
    use qdsl_runtime::testing::gpu;

    fn catalog_entry(name: &str) -> StencilEntry {
        qdsl_kernels::catalog::stencils()
            .into_iter()
            .find(|e| e.name == name)
            .unwrap()
    }

    fn coarse_hop() -> StencilEntry {
        catalog_entry("coarse_hop")
    }

    /// Every check row of `entry` on 4³ × 6 (seed 17): 24 rows, each compared and
    /// within its bound.
    fn assert_rows_pass(gpu: &Gpu, entry: &StencilEntry) {
        let rows = check_dense_kernel(gpu, entry, [4, 4, 4, 6], 17);
        assert_eq!(rows.len(), 24);
        for r in &rows {
            assert!(
                matches!(r.outcome, Outcome::Compared { .. }) && !r.outcome.is_failure(),
                "{} {}: {:?}",
                r.kernel,
                r.variant,
                r.outcome
            );
            eprintln!("{} {}: {:?}", r.kernel, r.variant, r.outcome);
        }
    }

    /// GPU: random 48 × 48 links uploaded and downloaded again are the same field,
    /// exactly, in f64 and in f32 (f32 data stored as f32).
    #[test]
    #[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
    fn dense_links_round_trip_through_the_device() {
        let (gpu, _dir) = gpu();
        let lat = Lattice::new([2, 2, 2, 4]).unwrap();
        let y = DenseLinkField::<f64>::random(lat, 48, 3).unwrap();
        let d = DeviceField::from_dense_links(&gpu, &y, StorageFormat::F64).unwrap();
        assert_eq!(
            d.to_dense_links::<f64>(&gpu, lat, 48, DenseKind::Links)
                .unwrap(),
            y
        );
        let y32 = y.cast::<f32>();
        let d = DeviceField::from_dense_links(&gpu, &y32, StorageFormat::F32).unwrap();
        assert_eq!(
            d.to_dense_links::<f32>(&gpu, lat, 48, DenseKind::Links)
                .unwrap(),
            y32
        );
        // A site-matrix field: one record per site; read back as links it is refused.
        let x = DenseLinkField::<f64>::random_of(DenseKind::SiteMatrix, lat, 48, 4).unwrap();
        let d = DeviceField::from_dense_links(&gpu, &x, StorageFormat::F64).unwrap();
        assert_eq!(
            d.to_dense_links::<f64>(&gpu, lat, 48, DenseKind::SiteMatrix)
                .unwrap(),
            x
        );
        assert!(d
            .to_dense_links::<f64>(&gpu, lat, 48, DenseKind::Links)
            .is_err());
    }

    /// GPU: every supported variant of the coarse hop (24: parities and the full
    /// lattice, xpay, both boundaries, f64 and f32) on random fields on 4³ × 6 agrees
    /// with the generated CPU code within 64 u of its precision (u = 2⁻⁵³, 2⁻²⁴).
    #[test]
    #[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
    fn coarse_hop_on_the_device_matches_the_cpu_code() {
        let (gpu, _dir) = gpu();
        assert_rows_pass(&gpu, &coarse_hop());
    }

    /// GPU: every supported variant of the coarse operator X − D_c (the same 24 as the
    /// hop; the source covers the whole lattice) on a random site matrix X and random
    /// links on 4³ × 6 agrees with the generated CPU code within 64 u of its precision.
    #[test]
    #[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
    fn coarse_op_on_the_device_matches_the_cpu_code() {
        let (gpu, _dir) = gpu();
        assert_rows_pass(&gpu, &catalog_entry("coarse_op"));
    }

    /// The device shapes a launch of the coarse operator expects are those of the
    /// uploaded fields: the site matrix `xm` one record of 2 · 48² reals per site (the
    /// layout [`qdsl_runtime::device::dense::dense_link_layout`] gives a site-matrix field), the links
    /// four, the source the whole lattice (read at x and x ± μ̂).
    #[test]
    fn coarse_op_expects_one_site_matrix_record_per_site() {
        use qdsl_runtime::device::dense::dense_link_layout;
        use qdsl_runtime::operator::device::expected_shapes;
        let lat = Lattice::new([4, 4, 4, 6]).unwrap();
        let v = Variant::default();
        let shapes = expected_shapes(&(catalog_entry("coarse_op").ir)(), &v, &lat).unwrap();
        let shape = |name: &str| shapes.iter().find(|(n, _)| n == name).unwrap().1;
        for (name, kind) in [("xm", DenseKind::SiteMatrix), ("yf", DenseKind::Links)] {
            let layout = dense_link_layout(48, kind, lat.volume(), v.gauge).unwrap();
            let s = shape(name);
            assert_eq!(
                (s.subs, s.reals, s.sites),
                (kind.per_site(), 4608, lat.volume())
            );
            assert_eq!(
                (layout.subs, layout.host_reals, layout.sites),
                (s.subs, s.reals, s.sites)
            );
        }
        assert_eq!(shape("phi").sites, lat.volume());
    }

    /// The coarse hop's check rows: 3 output site sets × xpay × 2 boundaries × {f64,
    /// f32} = 24 variants, never dagger, always recon 18 and the same spinor and link
    /// format.
    #[test]
    fn coarse_hop_rows_cover_every_supported_variant() {
        assert_eq!(
            dense_variants(&catalog_entry("coarse_op")),
            dense_variants(&coarse_hop())
        );
        let vs = dense_variants(&coarse_hop());
        assert_eq!(vs.len(), 24);
        assert!(vs.iter().all(|v| !v.dagger && v.spinor == v.gauge));
        assert!(vs.iter().any(|v| v.xpay && v.sites == OutputSites::Full));
        for f in [StorageFormat::F64, StorageFormat::F32] {
            assert_eq!(vs.iter().filter(|v| v.spinor == f).count(), 12);
        }
    }
}
