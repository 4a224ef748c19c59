//! What the kernel IR must express for `fused5d!` and `mma_tile!` (issue 14): a kernel
//! built by hand from IR nodes, with the fifth index s5 inside the block (threadIdx.y),
//! a shared-memory buffer sized from the block, and a barrier between two stages. The
//! toy computes out_s(x) = ½ (ψ_{s+1}(x) − ψ_{s−1}(x)) (s periodic in Ls = blockDim.y):
//! stage 1 stores each thread's ψ_s(x) to shared memory, a barrier, stage 2 reads the
//! neighbouring slices back — the shape of QUDA's fused domain-wall kernel (4D hop,
//! then s-local stages on shared memory). Printed as text and as CUDA, and compiled by
//! NVRTC.

mod nvrtc;

use qdsl_core::dsl::emit::cuda;
use qdsl_core::dsl::ir::{FieldDecl, FieldShape, Hop, Ir, Role, SpinOp, Term};
use qdsl_core::dsl::kernel_ir::{
    plan, Bounds, FifthIndex, KernelIr, Load, LoadAt, Reads, Scaling, SharedBuffer, Stage,
    StageKind, Stmt, Value,
};
use qdsl_core::dsl::lower::lower;
use qdsl_core::dsl::variant::StorageFormat;
use qdsl_core::dsl::Variant;

/// The toy kernel: the frame (fields, parameters, library, epilogue) planned from a
/// one-field spec, the prologue, shared buffer and stages written as IR.
fn fused_toy() -> KernelIr {
    let spinor = FieldShape::Spinor {
        nspin: 4,
        ncolour: 3,
    };
    let decl = |name: &str, role| FieldDecl {
        name: name.into(),
        shape: spinor,
        role,
    };
    let ir = Ir {
        name: "fused_toy".into(),
        doc: " out_s(x) = 1/2 (psi_{s+1}(x) - psi_{s-1}(x)), s periodic in blockDim.y".into(),
        fields: vec![decl("out", Role::Out), decl("psi", Role::In)],
        terms: vec![Term {
            output: "out".into(),
            coeff: 1.0,
            spin: SpinOp::Identity,
            links: Vec::new(),
            source: "psi".into(),
            hop: Hop { mu: 0, steps: 0 },
        }],
        knobs: Default::default(),
    };
    let variant = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        ..Variant::default()
    };
    let mut k = plan(&lower(&ir).unwrap(), &variant).unwrap();
    k.prologue.fifth = FifthIndex::ThreadY;
    k.prologue.bounds = Bounds::WholeBlocks;
    k.shared = vec![SharedBuffer {
        name: "slices".into(),
        elems_per_thread: 24,
    }];
    let own = Stage {
        kind: StageKind::Custom("own slice to shared memory".into()),
        body: vec![
            Stmt::Load(Load {
                value: Value::Source,
                field: "psi".into(),
                at: LoadAt::Site {
                    site: "io",
                    dest: "r",
                },
                reads: Reads::Once,
                scaling: Scaling::Applied,
            }),
            Stmt::SharedStore {
                buffer: "slices".into(),
                src: "r",
                reals: 24,
            },
        ],
        barrier: true,
    };
    let neighbours = Stage {
        kind: StageKind::Custom("neighbouring slices".into()),
        body: vec![
            Stmt::SharedLoad {
                buffer: "slices".into(),
                dest: "rp",
                reals: 24,
                dy: 1,
            },
            Stmt::SharedLoad {
                buffer: "slices".into(),
                dest: "rm",
                reals: 24,
                dy: -1,
            },
            Stmt::AddReals {
                src: "rp",
                coeff: 0.5,
                spins: 4,
            },
            Stmt::AddReals {
                src: "rm",
                coeff: -0.5,
                spins: 4,
            },
        ],
        barrier: false,
    };
    k.stages = vec![own, neighbours];
    k
}

/// The IR prints its stages with the barrier, the buffer and s5's origin; the CUDA has
/// s5 = threadIdx.y, the dynamic shared buffer, one `__syncthreads()` between the store
/// and the loads, and no early return (every thread reaches the barrier).
#[test]
fn fifth_index_in_the_block_shared_memory_and_a_barrier_print() {
    let k = fused_toy();
    // 24 f32 per thread: a block of 32 sites × Ls = 8 takes 32 · 8 · 24 · 4 bytes.
    assert_eq!(k.shared_bytes([32, 8, 1]), 32 * 8 * 24 * 4);
    let text = k.to_string();
    for want in [
        "shared slices: 24 reals per thread of the block",
        "s5 = ThreadY, bounds WholeBlocks",
        "stage own slice to shared memory:\n  load Source r <- psi[io] (reads Once, scale Applied)\n  shared slices[thread] <- r[24]\n  barrier\n",
        "stage neighbouring slices:\n  rp[24] <- shared slices[s5 +1]\n  rm[24] <- shared slices[s5 -1]\n",
    ] {
        assert!(text.contains(want), "{want}\nmissing from\n{text}");
    }
    let compiled = cuda::print(&k);
    assert_eq!(compiled.geometry.shared_per_thread, 24 * 4);
    let src = compiled.source;
    assert!(src.contains("const int s5 = threadIdx.y;"));
    assert!(src.contains("extern __shared__ real qdsl_shared[];"));
    assert!(!src.contains("return;"), "no early return before a barrier");
    let store = src
        .find("slices[k * block_threads + ")
        .expect("shared store");
    let barrier = src.find("__syncthreads();").expect("barrier");
    let load = src
        .find("(threadIdx.y + blockDim.y + 1) % blockDim.y")
        .expect("load");
    assert!(
        store < barrier && barrier < load,
        "store, barrier, load in order"
    );
    assert_eq!(src.matches("__syncthreads();").count(), 1);
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn the_fused_toy_compiles_with_nvrtc() {
    let tc = nvrtc::Toolchain::load();
    let k = fused_toy();
    let compiled = cuda::print(&k);
    tc.compile_checked(
        &compiled.source,
        "fused_toy",
        "sm_90",
        std::slice::from_ref(&compiled.name),
        true,
    );
}
