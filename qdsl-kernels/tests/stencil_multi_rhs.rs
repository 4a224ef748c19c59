//! Many right-hand sides in one kernel: N sources are the N slices of a 5D field with no
//! s-coupling, and the `slices = block` knob ([`Slices::InBlock`]) puts them inside the
//! thread block so that the sources of a site read its links together.
//!
//! * CPU: the batched hop on N sources equals N separate one-source hops bit for bit
//!   (the same arithmetic per source), for the Wilson, naive and improved staggered hops
//!   and the clover term, f64 and f32, with and without the knob.
//! * CUDA: the knob changes exactly the slice index line (and the name and variant
//!   comment) of every catalog stencil, and gives the kernel a 2-D block whose y extent
//!   is a tuned divisor of Ls; without it every source is what it was.

mod stencil_support;

use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::kernel_ir::FifthIndex;
use qdsl_core::dsl::variant::{OutputSites, Recon, Slices, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{BlockShape, Extents, Stencil, Variant};
use qdsl_core::field::{CloverField, ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::Real;
use qdsl_kernels::{CloverApply, ImprovedStaggeredHop, NaiveStaggeredHop, WilsonHop};
use stencil_support::random_gauge;

/// Sources batched in the tests.
const N: usize = 4;

fn lattice() -> Lattice {
    Lattice::new([4, 2, 2, 4]).unwrap()
}

/// The layout of `ls` slices of `subset` with `spins` spins.
fn layout(ls: usize, subset: SiteSubset, spins: usize) -> SpinorLayout {
    SpinorLayout::new(lattice(), ls, subset, spins, 3).unwrap()
}

/// Source `s` of a batched field, as a one-source field.
fn source<T: Real>(f: &ColourSpinorField<T>, s: usize) -> ColourSpinorField<T> {
    let l = f.layout();
    let l4 = SpinorLayout::new(*l.lattice(), 1, l.subset(), l.nspin(), l.ncolour()).unwrap();
    ColourSpinorField::from_fn(l4, |_, x, sp, a| f.get(s, x, sp, a).unwrap())
}

/// One hop of a test: `out = K ψ` (or a·x + b·K ψ) for `variant`.
type Hop<'a, T> =
    dyn Fn(&Variant, &mut ColourSpinorField<T>, &ColourSpinorField<T>, Option<Xpay<'_, T>>) + 'a;

/// Applies `hop` to N sources at once (with and without the slices-in-block knob) and to
/// each source alone, and asserts the results are identical, for odd output, dagger
/// and xpay.
fn batched_equals_separate<T: Real>(name: &str, spins: usize, hop: &Hop<'_, T>) {
    let (out_sub, in_sub) = (
        SiteSubset::Single(Parity::Odd),
        SiteSubset::Single(Parity::Even),
    );
    let psi = ColourSpinorField::<f64>::gaussian(layout(N, in_sub, spins), 91).cast::<T>();
    let x = ColourSpinorField::<f64>::gaussian(layout(N, out_sub, spins), 92).cast::<T>();
    for dagger in [false, true] {
        for xpay in [false, true] {
            let base = Variant {
                sites: OutputSites::Parity(Parity::Odd),
                dagger,
                xpay,
                spinor: storage::<T>(),
                gauge: storage::<T>(),
                boundary: TimeBoundary::Antiperiodic,
                ..Variant::default()
            };
            let (a, b) = (T::from_f64(0.75), T::from_f64(-0.25));
            for slices in [Slices::Grid, Slices::InBlock] {
                let v = Variant { slices, ..base };
                let mut out = ColourSpinorField::<T>::zeros(layout(N, out_sub, spins));
                hop(&v, &mut out, &psi, xpay.then_some(Xpay { a, x: &x, b }));
                for s in 0..N {
                    let (psi_s, x_s) = (source(&psi, s), source(&x, s));
                    let mut want = ColourSpinorField::<T>::zeros(layout(1, out_sub, spins));
                    hop(
                        &base,
                        &mut want,
                        &psi_s,
                        xpay.then_some(Xpay { a, x: &x_s, b }),
                    );
                    let got = source(&out, s);
                    assert!(
                        got.data() == want.data(),
                        "{name} {v}: source {s} differs from its one-source hop"
                    );
                }
            }
        }
    }
}

fn storage<T: Real>() -> StorageFormat {
    if T::BYTES == 8 {
        StorageFormat::F64
    } else {
        StorageFormat::F32
    }
}

fn wilson<T: Real>(
    u: &GaugeField<T>,
) -> impl Fn(&Variant, &mut ColourSpinorField<T>, &ColourSpinorField<T>, Option<Xpay<'_, T>>) + '_ {
    move |v, out, psi, xpay| WilsonHop.apply_cpu(v, out, psi, u, xpay).unwrap()
}

/// The Wilson hop: batched = separate, f64 and f32.
#[test]
fn wilson_hop_on_n_sources_equals_n_single_hops() {
    let u = random_gauge(lattice(), 93);
    batched_equals_separate::<f64>("wilson_hop", 4, &wilson(&u));
    batched_equals_separate::<f32>("wilson_hop", 4, &wilson(&u.cast::<f32>()));
}

/// The naive and improved staggered hops (general complex links: smeared links are not
/// unitary): batched = separate, f64 and f32.
#[test]
fn staggered_hops_on_n_sources_equal_n_single_hops() {
    let fat = random_gauge(lattice(), 94);
    let long = random_gauge(lattice(), 95);
    fn both<T: Real>(fat: &GaugeField<T>, long: &GaugeField<T>) {
        batched_equals_separate::<T>("naive_staggered_hop", 1, &|v, out, psi, xpay| {
            NaiveStaggeredHop.apply_cpu(v, out, psi, fat, xpay).unwrap()
        });
        batched_equals_separate::<T>("improved_staggered_hop", 1, &|v, out, psi, xpay| {
            ImprovedStaggeredHop
                .apply_cpu(v, out, psi, fat, long, xpay)
                .unwrap()
        });
    }
    both::<f64>(&fat, &long);
    both::<f32>(&fat.cast(), &long.cast());
}

/// The clover term A(x) ψ(x) of the clover operator's diagonal (4D clover field shared by
/// the sources): batched = separate, on the even sites.
#[test]
fn clover_term_on_n_sources_equals_n_single_applications() {
    let sub = SiteSubset::Single(Parity::Even);
    let psi = ColourSpinorField::<f64>::gaussian(layout(N, sub, 4), 96);
    let mut a = CloverField::<f64>::zeros(lattice(), sub);
    for (k, r) in a.data_mut().iter_mut().enumerate() {
        *r = ((k * 53 % 97) as f64) / 40.0 - 1.2;
    }
    for slices in [Slices::Grid, Slices::InBlock] {
        let v = Variant {
            slices,
            ..Variant::default()
        };
        let mut out = ColourSpinorField::<f64>::zeros(layout(N, sub, 4));
        CloverApply.apply_cpu(&v, &mut out, &psi, &a, None).unwrap();
        for s in 0..N {
            let mut want = ColourSpinorField::<f64>::zeros(layout(1, sub, 4));
            CloverApply
                .apply_cpu(&Variant::default(), &mut want, &source(&psi, s), &a, None)
                .unwrap();
            assert!(source(&out, s).data() == want.data(), "{v}: source {s}");
        }
    }
}

/// The knob's CUDA: for every catalog stencil that generates the variant, the source
/// with the slices in the block differs from the grid-row source in exactly three lines
/// (the kernel name comment and signature carry the variant hash, the variant comment
/// names the knob), the slice index, which becomes blockIdx.y · blockDim.y + threadIdx.y,
/// and what the slices in the block bring with them: the z-band sweep order (its budget
/// define and the map from the sweep index to the site) and the links on the cached path
/// (`load<N>` instead of the streaming `load<N, true>`). The band order is taken out of
/// the block source, and a link load compares equal without its streaming flag.
fn without_band_order(src: &str) -> String {
    let mut out = Vec::new();
    let mut skip = 0usize;
    let mut in_band = false;
    for line in src.lines() {
        let t = line.trim_start();
        if t.starts_with("#ifndef QDSL_BAND_SITES") {
            skip = 3;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        if t.starts_with("// Sweep order: bands of B z-planes") {
            in_band = true;
        }
        if in_band {
            if t == "}" {
                in_band = false;
            }
            continue;
        }
        let line = line.replace("const int i_sweep = ", "const int i = ");
        let line = line.replace("if (i_sweep >= n_out)", "if (i >= n_out)");
        out.push(line);
    }
    out.join("\n")
}

/// (See [`without_band_order`].)
#[test]
fn slices_in_block_change_only_the_slice_index() {
    let grid = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        ..Variant::default()
    };
    let block = Variant {
        slices: Slices::InBlock,
        ..grid
    };
    let (mut compared, mut banded) = (0, 0);
    for entry in qdsl_kernels::catalog::stencils() {
        let (Ok(a), Ok(b)) = ((entry.cuda)(&grid), (entry.cuda)(&block)) else {
            continue;
        };
        // Every stencil printed from the kernel IR sweeps in bands (the dense coarse
        // stencils have their own printer, without).
        banded += usize::from(b.contains("int band_b = L2;"));
        let b = without_band_order(&b);
        let differing: Vec<(&str, &str)> = a
            .lines()
            .zip(b.lines())
            .filter(|(x, y)| x.replace(", true>(g", ">(g") != *y)
            .collect();
        assert_eq!(a.lines().count(), b.lines().count(), "{}", entry.name);
        let s5: Vec<_> = differing
            .iter()
            .filter(|(x, _)| x.contains("const int s5"))
            .collect();
        assert_eq!(s5.len(), 1, "{}: {differing:#?}", entry.name);
        assert!(
            s5[0]
                .1
                .contains("const int s5 = blockIdx.y * blockDim.y + threadIdx.y;"),
            "{}: {}",
            entry.name,
            s5[0].1
        );
        for (x, y) in differing
            .iter()
            .filter(|(x, _)| !x.contains("const int s5"))
        {
            let hash_or_variant = y.contains("slices=block") || {
                let name = |l: &str| l.replace(|c: char| c.is_ascii_hexdigit(), "");
                name(x) == name(y)
            };
            assert!(hash_or_variant, "{}: {x} → {y}", entry.name);
        }
        compared += 1;
    }
    assert!(compared >= 5, "only {compared} stencils compared");
    assert!(banded + 2 >= compared, "{banded} of {compared} in z-bands");
}

/// The knob's launch geometry: a tunable 2-D block, sites along x, along y the divisors
/// of Ls (whole slices per block), by default all of them; the grid-row variant keeps
/// its 1-D block. The kernel IR records where s5 comes from.
#[test]
fn slices_in_block_tune_block_y_over_the_divisors_of_ls() {
    let grid = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        ..Variant::default()
    };
    let block = Variant {
        slices: Slices::InBlock,
        ..grid
    };
    let g = WilsonHop::compiled(&grid).unwrap().geometry;
    assert_eq!(g.block, BlockShape::Tunable(1));
    let b = WilsonHop::compiled(&block).unwrap().geometry;
    assert_eq!(b.block, BlockShape::Tunable(2));
    let launch = b.knobs.launch;
    assert_eq!(launch.block[1], Extents::Divisors { max: 32 });
    assert_eq!(launch.block[1].values(12), vec![1, 2, 3, 4, 6, 12]);
    assert_eq!(launch.default_block, [32, 0, 1]);
    // Register caps stay compile knobs.
    assert_eq!(b.knobs.compile, g.knobs.compile);
    assert_eq!(FifthIndex::of(Slices::InBlock), FifthIndex::BlockY);
    assert_eq!(FifthIndex::of(Slices::Grid), FifthIndex::GridY);
}
