use super::*;
use crate::device::codegen::{conversion_program, reduction_program, Direction};
use crate::device::kernel::{load_program, Args};
use crate::device::{DeviceField, DeviceFormat, DeviceLayout, HostReal};
use crate::solver::device::blas_source::blas_program;
use crate::tune::{launch_candidates, TunePolicy, TuneSource};
use qdsl_core::dsl::{
    BlockShape, Elem, Extents, Geometry, KernelInterface, KernelProgram, LaunchSpace, ParamDecl,
    ParamKind,
};
use qdsl_core::field::{ColourSpinorField, SiteSubset, SpinorLayout};
use qdsl_core::format::FermionFormat;
use qdsl_core::lattice::Lattice;

fn fermion(format: FermionFormat, sites: usize) -> DeviceLayout {
    DeviceLayout::new(DeviceFormat::Fermion(format), 24, sites).unwrap()
}

#[test]
fn the_key_names_the_kernel_its_program_and_its_own_source() {
    let layout = fermion(FermionFormat::F32, 4096);
    let program = reduction_program(&layout).unwrap();
    let key = kernel_key(
        (&program).into(),
        &program.kernels[0].name,
        [4096, 1, 1],
        "f32",
        "GPU sm_90",
    );
    assert!(key.kernel.ends_with("_partial"), "{key:?}");
    assert_eq!(key.variant_hash, fnv1a(program.name.as_bytes()));
    assert_eq!(key.source_hash, fnv1a(program.source.as_bytes()));
    assert_eq!(key.volume, 4096);
    // A given hash is the same key.
    let hashed = ProgramRef {
        name: &program.name,
        source: Source::Hash(program.source_hash()),
    };
    let again = kernel_key(hashed, &key.kernel, [4096, 1, 1], "f32", "GPU sm_90");
    assert_eq!(again, key);
    // Another format is another program: another variant and source hash.
    let other = reduction_program(&fermion(FermionFormat::F64, 4096)).unwrap();
    let k2 = kernel_key(
        (&other).into(),
        &other.kernels[0].name,
        [4096, 1, 1],
        "f64",
        "GPU sm_90",
    );
    assert_ne!(
        (k2.variant_hash, k2.source_hash),
        (key.variant_hash, key.source_hash)
    );
}

#[test]
fn the_vector_kernels_declare_their_knob_spaces() {
    let y = fermion(FermionFormat::FIXED16, 4096);
    let x = fermion(FermionFormat::F32, 4096);
    let limits = crate::tune::LaunchLimits::H100;
    let work = [4096, 1, 1];
    // BLAS and conversions: 1-D blocks, default 256 (their untuned launch), no
    // throttling, no compile knobs.
    for program in [
        blas_program(&y, &x).unwrap(),
        conversion_program(&y, HostReal::F64, Direction::Encode).unwrap(),
    ] {
        let g = program.kernels[0].geometry;
        assert_eq!(g.default_block(), [256, 1, 1], "{}", program.name);
        assert!(!g.knobs.launch.throttle && !g.knobs.compile.register_caps);
        let c = launch_candidates(work, &g, &limits);
        assert_eq!(c[0].block, [256, 1, 1]);
        assert_eq!(c.len(), 10, "{}: one per block extent", program.name);
        assert!(c.iter().all(|l| l.shared_bytes == 0));
    }
    // The reduction's partial pass: its block is fixed by the source, its grid is the
    // knob; the default is the most partials (as before tuning existed).
    let program = reduction_program(&y).unwrap();
    let partial = program.kernels[0].geometry;
    let grids: Vec<u32> = launch_candidates([1 << 20, 1, 1], &partial, &limits)
        .iter()
        .map(|l| l.grid[0])
        .collect();
    assert_eq!(grids, vec![1024, 64, 128, 256, 512]);
    // The final pass has nothing to tune.
    let fin = program.kernels[1].geometry;
    assert_eq!(launch_candidates([1, 1, 1], &fin, &limits).len(), 1);
}

/// `index2(int* out, int nx, int ny, int scale)`: out[x + nx y] = scale · (x + 1000 y)
/// over a 2-D index space.
const INDEX2: &str = "extern \"C\" __global__ void index2(int* out, int nx, int ny, int scale) {\n    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;\n    if (x < nx && y < ny) out[x + nx * y] = scale * (x + 1000 * y);\n}\n";

/// [`INDEX2`] with a 2-D launch space: x in warp multiples up to 256, y in powers of two
/// up to 8 (as sites × fifth-dimension slices), default [32, 4].
fn index2_program() -> KernelProgram {
    KernelProgram {
        name: "index2".into(),
        source: INDEX2.into(),
        options: Vec::new(),
        kernels: vec![KernelInterface {
            name: "index2".into(),
            params: vec![
                ParamDecl::new("out", ParamKind::write(Elem::I32)),
                ParamDecl::new("nx", ParamKind::I32),
                ParamDecl::new("ny", ParamKind::I32),
                ParamDecl::new("scale", ParamKind::I32),
            ],
            geometry: Geometry::linear().with_tunable_block(
                2,
                LaunchSpace::planar(
                    Extents::Multiples {
                        step: 32,
                        min: 32,
                        max: 256,
                    },
                    Extents::PowersOfTwo { min: 1, max: 8 },
                    [32, 4],
                ),
            ),
        }],
    }
}

#[test]
fn the_index2_interface_matches_its_source() {
    let p = index2_program();
    assert_eq!(p.signature_mismatches(), Vec::<String>::new());
    assert_eq!(p.kernels[0].geometry.block, BlockShape::Tunable(2));
}

fn tuner(dir: &std::path::Path, gpu: &Gpu, policy: TunePolicy) -> Tuner {
    Tuner::new(&dir.join("tune.tsv"), gpu.fingerprint("test"))
        .with_policy(policy)
        .with_progress(false)
}

/// A 2-D kernel tuned from its knob space: every candidate is within the device's
/// limits and a whole number of warps, the winner (read back from the cache by a new
/// tuner under the launch policy) writes every item, and the cache holds 2-D rows.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn a_two_dimensional_kernel_is_tuned_from_its_knob_space() {
    let (gpu, dir) = crate::testing::gpu();
    let program = index2_program();
    let kernel = load_program(&gpu, &program).unwrap().remove(0);
    let (nx, ny) = (100_000usize, 12usize);
    let work = [nx, ny, 1];
    let mut out = gpu.alloc::<i32>("the index field", nx * ny).unwrap();
    let mut run = |cfg: &LaunchConfig| {
        let mut args = Args::new();
        args.write("out", &mut out)
            .count("nx", nx)
            .count("ny", ny)
            .int("scale", 3);
        kernel.launch_with(&gpu, work, cfg, args)
    };
    let full = tuner(dir.path(), &gpu, TunePolicy::Full);
    let mut tuning = KernelTuning::new(
        &gpu,
        (&program).into(),
        &kernel,
        "i32",
        work,
        FirstUse::CachedOnly,
        &mut run,
    );
    let candidates = tuning.launches().unwrap();
    let limits = gpu.launch_limits().unwrap();
    assert!(candidates.iter().any(|c| c.block[1] > 1));
    assert!(candidates
        .iter()
        .all(|c| c.threads() <= limits.max_block && c.threads() % 32 == 0 && c.block[1] <= 8));
    let tuned = full.tune_kernel(&mut tuning).unwrap();
    assert_eq!(tuned.source, TuneSource::Measured);
    assert!(candidates.contains(&tuned.best.launch));
    // A new process under the launch policy: the cached winner, untimed.
    let launch = tuner(dir.path(), &gpu, TunePolicy::Launch);
    let cfg = tuned_launch(
        &gpu,
        Some(&launch),
        (&program).into(),
        &kernel,
        "i32",
        work,
        FirstUse::CachedOnly,
        |_| -> Result<(), DeviceError> { panic!("a cached kernel is not timed") },
    )
    .unwrap();
    assert_eq!(cfg, tuned.best.launch);
    assert_eq!(launch.remembered("index2", "index2", work), Some(cfg));
    // The winner writes every item.
    run(&cfg).unwrap();
    let got = gpu.backend().stream().clone_dtoh(&out).unwrap();
    let expected: Vec<i32> = (0..ny)
        .flat_map(|y| (0..nx).map(move |x| 3 * (x + 1000 * y) as i32))
        .collect();
    assert_eq!(got, expected, "{cfg}");
    let text = std::fs::read_to_string(dir.path().join("tune.tsv")).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("index2\t") && l.contains("x4\t")),
        "{text}"
    );
}

/// A reduction tuned over its grid: the tuned norm and dot equal the untuned ones to
/// f64 rounding (another grid sums in another order) and the f64 sums of the decoded
/// values; the partial pass's rows are in the cache, one per grid size.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn a_reduction_is_tuned_over_its_grid() {
    let (gpu, dir) = crate::testing::gpu();
    // 32³×16: 2048 blocks of 256 sites, so every grid size of the knob space (64 …
    // 1024) is a distinct candidate.
    let lattice = Lattice::new([32, 32, 32, 16]).unwrap();
    let layout = SpinorLayout::wilson(lattice, SiteSubset::Full);
    let x = ColourSpinorField::<f64>::gaussian(layout, 1);
    let y = ColourSpinorField::<f64>::gaussian(layout, 2);
    let dx = DeviceField::from_spinor(&gpu, &x, FermionFormat::F32).unwrap();
    let dy = DeviceField::from_spinor(&gpu, &y, FermionFormat::F32).unwrap();
    let hx = dx.to_spinor::<f64>(&gpu, layout).unwrap();
    let hy = dy.to_spinor::<f64>(&gpu, layout).unwrap();
    let norm: f64 = hx.data().iter().map(|z| z.norm_sqr()).sum();
    let dot = hx
        .data()
        .iter()
        .zip(hy.data())
        .map(|(a, b)| a.conj() * b)
        .sum::<qdsl_core::Complex<f64>>();
    let full = tuner(dir.path(), &gpu, TunePolicy::Full);
    let tuned_norm = dx.norm2_with(&gpu, Some(&full)).unwrap();
    let tuned_dot = dx.dot_with(&dy, &gpu, Some(&full)).unwrap();
    // 2²⁴ f64 terms summed in another order: a few 1e−13 relative on the H100 (the
    // bound n·ε is 2e−9); f32 rounding of a term would show at 1e−7.
    assert!(
        (tuned_norm - norm).abs() <= 1e-11 * norm,
        "{tuned_norm} vs {norm}"
    );
    assert!(
        (tuned_dot - dot).norm() <= 1e-11 * norm,
        "{tuned_dot} vs {dot}"
    );
    let program = reduction_program(dx.layout()).unwrap();
    let partial = &program.kernels[0].name;
    let sites = dx.layout().sites;
    let cfg = full
        .remembered(&program.name, partial, [sites, 1, 1])
        .unwrap();
    assert_eq!(cfg.block, [256, 1, 1]);
    assert!([64, 128, 256, 512, 1024].contains(&cfg.grid[0]), "{cfg}");
    let text = std::fs::read_to_string(dir.path().join("tune.tsv")).unwrap();
    let grids: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{partial}\t")))
        .map(|l| l.split('\t').nth(8).unwrap())
        .collect();
    assert_eq!(grids.len(), 5, "{text}");
    // The launch policy uses the cached grid, untimed, and sums to the same value.
    let launch = tuner(dir.path(), &gpu, TunePolicy::Launch);
    let again = dx.norm2_with(&gpu, Some(&launch)).unwrap();
    assert_eq!(again.to_bits(), tuned_norm.to_bits());
    assert_eq!(
        launch.remembered(&program.name, partial, [sites, 1, 1]),
        Some(cfg)
    );
}
