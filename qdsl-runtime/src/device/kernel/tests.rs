//! Binding arguments by name, on the CPU: fake buffers stand for device memory (only
//! [`check`] runs; nothing is launched).

use super::*;
use qdsl_core::dsl::{Geometry, ParamDecl};

/// A buffer of `Elem` that is never dereferenced.
struct Fake(Elem);

impl ReadBuffer for Fake {
    fn elem(&self) -> Elem {
        self.0
    }
    fn address<'s>(&'s self, _: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        (0, SyncOnDrop::Sync(None))
    }
}

impl WriteBuffer for Fake {
    fn elem(&self) -> Elem {
        self.0
    }
    fn address_mut<'s>(&'s mut self, _: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        (0, SyncOnDrop::Sync(None))
    }
}

/// `axpy(const float* x, float* y, float* norms_or_null, float a, int n)`.
fn axpy() -> KernelInterface {
    KernelInterface {
        name: "axpy".into(),
        params: vec![
            ParamDecl::new("x", ParamKind::read(Elem::F32)),
            ParamDecl::new("y", ParamKind::write(Elem::F32)),
            ParamDecl::new("norms", ParamKind::write(Elem::F32).or_null()),
            ParamDecl::new("a", ParamKind::F32),
            ParamDecl::new("n", ParamKind::I32),
        ],
        geometry: Geometry::linear(),
    }
}

/// Buffers that outlive the arguments.
static X: Fake = Fake(Elem::F32);
static X64: Fake = Fake(Elem::F64);

/// Every argument of [`axpy`], then `spoil` applied.
fn check_with(spoil: impl FnOnce(&mut Args<'static>)) -> Result<(), BindError> {
    let x = &X;
    let y: &'static mut Fake = Box::leak(Box::new(Fake(Elem::F32)));
    let mut a = Args::new();
    a.read("x", x)
        .write("y", y)
        .write_or_null("norms", None)
        .real("a", 2.0)
        .count("n", 1000);
    spoil(&mut a);
    check(&axpy(), &a)
}

#[test]
fn complete_arguments_of_the_right_kinds_bind() {
    assert_eq!(check_with(|_| {}), Ok(()));
}

#[test]
fn a_missing_argument_names_kernel_and_parameter() {
    let x = Fake(Elem::F32);
    let mut a = Args::new();
    a.read("x", &x)
        .real("a", 2.0)
        .int("n", 3)
        .set("norms", Arg::Null);
    let e = check(&axpy(), &a).unwrap_err();
    assert_eq!(
        e,
        BindError::Missing {
            kernel: "axpy".into(),
            param: "y".into(),
            expected: "a written F32 buffer".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "axpy: no argument for parameter y (a written F32 buffer)"
    );
}

#[test]
fn an_extra_argument_is_named_with_the_parameters() {
    let e = check_with(|a| {
        a.int("stride", 4);
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "axpy: argument stride is not a parameter of the kernel (parameters: x, y, norms, a, n)"
    );
}

#[test]
fn mistyped_arguments_name_what_was_expected_and_found() {
    let mistyped = |e: BindError, param: &str| {
        assert!(
            matches!(&e, BindError::Mistyped { param: p, .. } if p == param),
            "{e}"
        );
        e.to_string()
    };
    let e = check_with(|a| {
        a.real("x", 1.0);
    });
    assert_eq!(
        mistyped(e.unwrap_err(), "x"),
        "axpy: parameter x takes a read-only F32 buffer, found the real 1"
    );
    let e = check_with(|a| {
        a.int("n", 1i64 << 40);
    });
    assert_eq!(
        mistyped(e.unwrap_err(), "n"),
        "axpy: parameter n takes a 32-bit integer, found the integer 1099511627776, beyond 32 bits"
    );
    let e = check_with(|a| {
        a.int("a", 2);
    });
    assert_eq!(
        mistyped(e.unwrap_err(), "a"),
        "axpy: parameter a takes an f32 real, found the integer 2"
    );
    let e = check_with(|a| {
        a.set("x", Arg::Null);
    });
    assert_eq!(
        mistyped(e.unwrap_err(), "x"),
        "axpy: parameter x takes a read-only F32 buffer, found null"
    );
    // The element type and the access count too.
    let e = check_with(|a| {
        a.read("x", &X64);
    });
    assert_eq!(
        mistyped(e.unwrap_err(), "x"),
        "axpy: parameter x takes a read-only F32 buffer, found a read-only F64 buffer"
    );
    let e = check_with(|a| {
        a.read("y", &X);
    });
    assert_eq!(
        mistyped(e.unwrap_err(), "y"),
        "axpy: parameter y takes a written F32 buffer, found a read-only F32 buffer"
    );
}

/// Every hand-written program's declared parameters are its source's signature, in
/// order (read back from the text independently of the declarations).
#[test]
fn the_declared_interfaces_match_the_sources() {
    use crate::device::codegen::{conversion_program, reduction_program, Direction};
    use crate::device::{DeviceFormat, DeviceLayout, HostReal};
    use crate::solver::device::blas_source::blas_program;
    use qdsl_core::dsl::variant::StorageFormat;
    use qdsl_core::format::{Compression, LinkFormat};
    let mut programs = Vec::new();
    let fermions: Vec<DeviceLayout> = StorageFormat::EVERY
        .iter()
        .filter_map(|f| DeviceLayout::new(DeviceFormat::Fermion(f.fermion_format()), 24, 64).ok())
        .collect();
    assert!(fermions.len() >= 4);
    for l in &fermions {
        for host in [HostReal::F64, HostReal::F32] {
            for dir in [Direction::Encode, Direction::Decode] {
                programs.push(conversion_program(l, host, dir).unwrap());
            }
        }
        programs.push(reduction_program(l).unwrap());
        for x in &fermions {
            programs.push(blas_program(l, x).unwrap());
        }
    }
    let link = LinkFormat::new(StorageFormat::F32.link_storage(), Compression::Full);
    let links = DeviceLayout::new(DeviceFormat::Link(link), 0, 64).unwrap();
    programs.push(conversion_program(&links, HostReal::F64, Direction::Encode).unwrap());
    for p in &programs {
        assert!(!p.kernels.is_empty(), "{}", p.name);
        assert_eq!(p.signature_mismatches(), Vec::<String>::new(), "{}", p.name);
    }
}

/// The link-path, gauge-force and projection programs: every declared interface is its
/// source's signature, for f32 and f64, both input-link storages and both GPU plans.
#[test]
fn the_smearing_interfaces_match_the_sources() {
    use crate::smear::{force_program, projection_program};
    use qdsl_core::dsl::paths::cuda::program;
    use qdsl_core::dsl::paths::{GaugeAction, LinkPaths, PathKnobs, PlanKind};
    use qdsl_core::dsl::variant::Recon;
    use qdsl_kernels::{AsqtadFat, AsqtadLong, Fat7, HisqFat, SymanzikGauge, WilsonGauge};
    let r12 = PathKnobs::with_input(Recon::R12);
    let knobs = [
        PathKnobs::default().with_plan(PlanKind::Tree),
        r12.with_plan(PlanKind::Tree),
        PathKnobs::default(),
        r12,
    ];
    let trees = [
        AsqtadFat::tree().unwrap(),
        AsqtadLong::tree().unwrap(),
        Fat7::tree().unwrap(),
        HisqFat::tree().unwrap(),
    ];
    let mut programs = Vec::new();
    for tree in &trees {
        for k in &knobs {
            programs.push(program::<f32>(tree, k, "p32").unwrap());
            programs.push(program::<f64>(tree, k, "p64").unwrap());
        }
    }
    for plan in [
        WilsonGauge::force_plan().unwrap(),
        SymanzikGauge::force_plan().unwrap(),
    ] {
        programs.push(force_program::<f32>(&plan).unwrap());
        programs.push(force_program::<f64>(&plan).unwrap());
    }
    programs.push(projection_program::<f32>().unwrap());
    programs.push(projection_program::<f64>().unwrap());
    programs.push(crate::smear::gpu_pullback_program::<AsqtadFat, f32>().unwrap());
    programs.push(crate::smear::gpu_pullback_program::<HisqFat, f64>().unwrap());
    programs.push(crate::smear::projection_pullback_program::<f32>().unwrap());
    programs.push(crate::smear::projection_pullback_program::<f64>().unwrap());
    for p in &programs {
        assert!(!p.kernels.is_empty(), "{}", p.name);
        assert_eq!(p.signature_mismatches(), Vec::<String>::new(), "{}", p.name);
    }
    // One smearing kernel and its layout rewrite per tree-plan smearing program (and the
    // encoding kernel with recon 12); the staged asqtad fat program adds its two passes
    // (5- and 3-staple levels, each with `mu`), and the fields `f` and `mu0`, `nmu` to
    // the root kernel, the passes and the root taking the box of sites they compute
    // (4 + 4); one kernel per force program (the staples inside).
    assert_eq!(programs[0].kernels.len(), 2);
    assert_eq!(programs[2].kernels.len(), 3);
    assert_eq!(programs[4].kernels.len(), 4);
    assert_eq!(programs[4].kernels[0].params.len(), 2 + 5 + 1 + 4 + 8);
    assert_eq!(programs[4].kernels[2].params.len(), 3 + 5 + 2 + 4 + 8);
    assert_eq!(programs[trees.len() * 2 * knobs.len()].kernels.len(), 1);
    assert_eq!(programs[0].kernels[0].params.len(), 2 + 5 + 4);
}

/// The launcher's interface of every catalog stencil (f64 and f32, plain and xpay):
/// the parameter names are the signature's, reals in the compute type.
#[test]
fn the_stencil_interfaces_match_the_sources() {
    use crate::operator::device::stencil_interface;
    use qdsl_core::dsl::variant::{OutputSites, StorageFormat, Variant};
    use qdsl_core::lattice::Parity;
    let mut checked = 0;
    for entry in qdsl_kernels::catalog::stencils() {
        for spinor in [StorageFormat::F64, StorageFormat::F32] {
            for xpay in [false, true] {
                let v = Variant {
                    spinor,
                    gauge: spinor,
                    xpay,
                    sites: OutputSites::Parity(Parity::Even),
                    ..Variant::default()
                };
                if !(entry.supports)(&v) {
                    continue;
                }
                let Ok(k) = (entry.compiled)(&v) else {
                    continue;
                };
                let iface = stencil_interface(&k, &v);
                let names: Vec<String> = iface.params.iter().map(|p| p.name.clone()).collect();
                assert_eq!(names, k.signature_names(), "{} {v}", entry.name);
                let real = if spinor == StorageFormat::F64 {
                    ParamKind::F64
                } else {
                    ParamKind::F32
                };
                for p in iface.params.iter().filter(|p| p.name.starts_with("xpay_a")) {
                    assert_eq!(p.kind, real, "{} {v}", entry.name);
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 8, "only {checked} variants checked");
}

/// `index3(int* out, int nx, int ny, int nz, int scale)`: out[x + nx (y + ny z)] =
/// scale · (x + 1000 y + 1000000 z) over a 3-D index space.
const INDEX3: &str = "extern \"C\" __global__ void index3(int* out, int nx, int ny, int nz, int scale) {\n    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y, z = blockIdx.z * blockDim.z + threadIdx.z;\n    if (x < nx && y < ny && z < nz) out[x + nx * (y + ny * z)] = scale * (x + 1000 * y + 1000000 * z);\n}\n";

fn index3_program() -> qdsl_core::dsl::KernelProgram {
    use qdsl_core::dsl::{BlockShape, KernelProgram};
    KernelProgram {
        name: "index3".into(),
        source: INDEX3.into(),
        options: Vec::new(),
        kernels: vec![KernelInterface {
            name: "index3".into(),
            params: vec![
                ParamDecl::new("out", ParamKind::write(Elem::I32)),
                ParamDecl::new("nx", ParamKind::I32),
                ParamDecl::new("ny", ParamKind::I32),
                ParamDecl::new("nz", ParamKind::I32),
                ParamDecl::new("scale", ParamKind::I32),
            ],
            geometry: Geometry {
                block: BlockShape::Tunable(3),
                ..Geometry::linear()
            },
        }],
    }
}

#[test]
fn the_index3_interface_matches_its_source() {
    assert_eq!(
        index3_program().signature_mismatches(),
        Vec::<String>::new()
    );
}

/// The launcher covers a 3-D index space with 1-, 2- and 3-D blocks (every item written
/// once with its coordinates), and refuses a missing argument before launching.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn the_launcher_covers_one_to_three_dimensional_index_spaces() {
    let (gpu, _dir) = crate::testing::gpu();
    let kernel = load_program(&gpu, &index3_program()).unwrap().remove(0);
    let (nx, ny, nz) = (37usize, 9usize, 5usize);
    let expected: Vec<i32> = (0..nz)
        .flat_map(|z| (0..ny).flat_map(move |y| (0..nx).map(move |x| (x, y, z))))
        .map(|(x, y, z)| 3 * (x + 1000 * y + 1_000_000 * z) as i32)
        .collect();
    for block in [[64, 1, 1], [8, 4, 1], [4, 4, 2]] {
        let mut out = gpu.alloc::<i32>("the index field", nx * ny * nz).unwrap();
        let mut args = Args::new();
        args.write("out", &mut out)
            .count("nx", nx)
            .count("ny", ny)
            .count("nz", nz)
            .int("scale", 3);
        kernel.launch(&gpu, [nx, ny, nz], block, args).unwrap();
        let got = gpu.backend().stream().clone_dtoh(&out).unwrap();
        assert_eq!(got, expected, "block {block:?}");
    }
    let mut out = gpu.alloc::<i32>("the index field", 1).unwrap();
    let mut args = Args::new();
    args.write("out", &mut out)
        .int("nx", 1)
        .int("ny", 1)
        .int("nz", 1);
    let e = kernel.launch(&gpu, [1, 1, 1], [1, 1, 1], args).unwrap_err();
    assert!(
        e.to_string()
            .contains("index3: no argument for parameter scale"),
        "{e}"
    );
}
