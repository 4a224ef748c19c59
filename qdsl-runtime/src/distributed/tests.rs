//! The distributed host hop against the single-process one, bit for bit, and the halo
//! exchange over threads against the in-place reference exchange.

use super::{exchange_halos, DistributedHop};
use crate::comm::{run_ranks, CommConfig, Communicator};
use crate::operator::cpu::{hop_variant, HostHop, StaggeredLinks, WilsonLinks};
use qdsl_core::dsl::paths::LinkPaths;
use qdsl_core::dsl::variant::{TimeBoundary, Variant};
use qdsl_core::field::distributed::{exchange_in_place, face_len, gather, scatter, scatter_all};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::lattice::decomposition::{NAIK_DEPTH, ONE_HOP_DEPTH};
use qdsl_core::lattice::{
    BoundaryConditions, Decomposition, ExtendedLattice, HaloShape, Lattice, Lattice5D, Parity,
    ProcessGrid,
};
use qdsl_kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong};

/// Grids cutting one direction (t, and x), two (z, t) and all four.
const GRIDS: [[usize; 4]; 4] = [[1, 1, 1, 2], [2, 1, 1, 1], [1, 1, 2, 2], [2, 2, 2, 2]];

fn data(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/milc")
        .join(name)
}

fn extended(global: Lattice, grid: [usize; 4], depth: usize) -> ExtendedLattice {
    let dec =
        Decomposition::with_halo_depth(global, ProcessGrid::new(grid).unwrap(), depth).unwrap();
    ExtendedLattice::new(dec, depth).unwrap()
}

/// K ψ on the decomposed lattice: every rank (a thread) takes its part of the links
/// (halos exchanged, periodic), builds its hop with `make`, takes its part of ψ and
/// applies the distributed hop; the parts are gathered.
fn distributed<H: HostHop<Real = f64>>(
    ext: ExtendedLattice,
    links: &[&GaugeField<f64>],
    make: impl Fn(Vec<GaugeField<f64>>) -> H + Sync,
    variant: &Variant,
    psi: &ColourSpinorField<f64>,
) -> ColourSpinorField<f64> {
    let size = ext.decomposition().size();
    let parts = run_ranks(size, CommConfig::default(), |mut comm| {
        let rank = comm.rank();
        let periodic = BoundaryConditions::periodic();
        let local: Vec<GaugeField<f64>> = links
            .iter()
            .map(|u| {
                let mut part = scatter(*u, &ext, rank).unwrap();
                exchange_halos(
                    &mut comm,
                    &mut part,
                    &ext,
                    HaloShape::Faces,
                    &periodic,
                    "links",
                )
                .unwrap();
                part
            })
            .collect();
        let hop = DistributedHop::new(ext, make(local)).unwrap();
        let mut src = scatter(psi, &ext, rank).unwrap();
        let qdsl_core::dsl::variant::OutputSites::Parity(p) = variant.sites else {
            panic!("one-parity variant expected")
        };
        let mut out = ColourSpinorField::zeros(src.layout().with_subset(SiteSubset::Single(p)));
        hop.apply(&mut comm, variant, &mut out, &mut src).unwrap();
        out
    });
    gather(&parts, &ext).unwrap()
}

/// The single-process K ψ.
fn single<H: HostHop<Real = f64>>(
    hop: &H,
    variant: &Variant,
    psi: &ColourSpinorField<f64>,
) -> ColourSpinorField<f64> {
    let qdsl_core::dsl::variant::OutputSites::Parity(p) = variant.sites else {
        panic!("one-parity variant expected")
    };
    let mut out = ColourSpinorField::zeros(psi.layout().with_subset(SiteSubset::Single(p)));
    hop.apply(variant, &mut out, psi, None).unwrap();
    out
}

/// Asserts equal bits in every component (== would let −0 pass for +0).
fn assert_bits_equal(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>, what: &str) {
    assert_eq!(a.layout(), b.layout(), "{what}");
    let bits = |f: &ColourSpinorField<f64>| -> Vec<(u64, u64)> {
        f.data()
            .iter()
            .map(|z| (z.re.to_bits(), z.im.to_bits()))
            .collect()
    };
    let (x, y) = (bits(a), bits(b));
    let first = x.iter().zip(&y).position(|(p, q)| p != q);
    assert!(
        first.is_none(),
        "{what}: first differing component {first:?}"
    );
    assert!(a.norm_sqr() > 0.0, "{what}: a zero result proves nothing");
}

/// The Wilson hop H (both output parities, plain and dagger, antiperiodic time) on a
/// random gauge field: distributed over grids cutting 1, 2 and 4 directions (including
/// t) it equals the single-process generated CPU hop bit for bit.
#[test]
fn distributed_wilson_hop_equals_the_single_process_hop_bit_for_bit() {
    let global = Lattice::new([4, 4, 4, 8]).unwrap();
    let u = GaugeField::<f64>::random(global, 41);
    let reference = WilsonLinks(u.clone());
    for grid in GRIDS {
        let ext = extended(global, grid, ONE_HOP_DEPTH);
        for parity in Parity::BOTH {
            for dagger in [false, true] {
                let v = hop_variant::<f64>(parity, dagger, false, TimeBoundary::Antiperiodic);
                let layout = SpinorLayout::wilson(global, SiteSubset::Single(parity.opposite()));
                let psi = ColourSpinorField::<f64>::gaussian(layout, 42);
                let d = distributed(ext, &[&u], |mut l| WilsonLinks(l.remove(0)), &v, &psi);
                let what = format!("grid {grid:?} {parity:?} dagger {dagger}");
                assert_bits_equal(&d, &single(&reference, &v, &psi), &what);
                if grid[3] > 1 && parity == Parity::Even && !dagger {
                    // With t cut the kernel runs periodic: the antiperiodic sign comes
                    // from the faces alone, and the periodic hop differs.
                    let periodic = hop_variant::<f64>(parity, false, false, TimeBoundary::Periodic);
                    assert_ne!(d, single(&reference, &periodic, &psi), "{what}");
                }
            }
        }
    }
}

/// The 5D Wilson hop (Ls = 3: every s-slice hops in 4D) distributed over t and x·y·z·t.
#[test]
fn distributed_5d_wilson_hop_equals_the_single_process_hop_bit_for_bit() {
    let global = Lattice::new([4, 4, 4, 4]).unwrap();
    let u = GaugeField::<f64>::random(global, 43);
    let reference = WilsonLinks(u.clone());
    let v = hop_variant::<f64>(Parity::Odd, false, false, TimeBoundary::Antiperiodic);
    let five = Lattice5D::new(global.dims(), 3).unwrap();
    let psi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::domain_wall(five, SiteSubset::Single(Parity::Even)),
        44,
    );
    for grid in [[1, 1, 1, 2], [2, 2, 2, 2]] {
        let ext = extended(global, grid, ONE_HOP_DEPTH);
        let d = distributed(ext, &[&u], |mut l| WilsonLinks(l.remove(0)), &v, &psi);
        assert_bits_equal(
            &d,
            &single(&reference, &v, &psi),
            &format!("5D grid {grid:?}"),
        );
    }
}

/// The improved staggered hop (fat and Naik links, halo depth 3) and the naive one on
/// random links, with the periodic boundary of normal use (signs in the links) and with
/// the antiperiodic knob (the Naik term's three-site hops across the t boundary carry the
/// sign through the faces): bit-identical to one process on every grid.
#[test]
fn distributed_staggered_hops_equal_the_single_process_hops_bit_for_bit() {
    let global = Lattice::new([8, 8, 8, 8]).unwrap();
    let (fat, long) = (
        GaugeField::<f64>::random(global, 51),
        GaugeField::<f64>::random(global, 52),
    );
    let improved = StaggeredLinks::Improved {
        fat: fat.clone(),
        long: long.clone(),
    };
    let naive = StaggeredLinks::Naive(fat.clone());
    let make_improved = |mut l: Vec<GaugeField<f64>>| {
        let long = l.pop().unwrap();
        StaggeredLinks::Improved {
            fat: l.pop().unwrap(),
            long,
        }
    };
    for grid in GRIDS {
        let ext3 = extended(global, grid, NAIK_DEPTH);
        let ext1 = extended(global, grid, ONE_HOP_DEPTH);
        for boundary in [TimeBoundary::Periodic, TimeBoundary::Antiperiodic] {
            for parity in Parity::BOTH {
                let v = hop_variant::<f64>(parity, false, false, boundary);
                let layout = SpinorLayout::staggered(global, SiteSubset::Single(parity.opposite()));
                let chi = ColourSpinorField::<f64>::gaussian(layout, 53);
                let what = format!("grid {grid:?} {boundary:?} {parity:?}");
                let d = distributed(ext3, &[&fat, &long], make_improved, &v, &chi);
                assert_bits_equal(
                    &d,
                    &single(&improved, &v, &chi),
                    &format!("improved {what}"),
                );
                let d = distributed(
                    ext1,
                    &[&fat],
                    |mut l| StaggeredLinks::Naive(l.remove(0)),
                    &v,
                    &chi,
                );
                assert_bits_equal(&d, &single(&naive, &v, &chi), &format!("naive {what}"));
            }
        }
    }
}

/// A real configuration: the Wilson hop on MILC's lat.sample.l8 (antiperiodic time) and
/// the asqtad hop with MILC's own fat.l8 and long.l8 links of it, distributed over grids
/// cutting t, z·t and all four directions: bit-identical to one process.
#[test]
fn distributed_hops_on_milc_lat_sample_l8_equal_the_single_process_hops() {
    let u = read_gauge(data("lat.sample.l8"), &ReadOptions::default())
        .expect("lat.sample.l8")
        .field;
    let read = |n| {
        read_gauge(data(n), &ReadOptions::smeared_links())
            .expect("MILC links")
            .field
    };
    let (fat, long) = (read("fat.l8"), read("long.l8"));
    let global = *u.lattice();
    let wilson = WilsonLinks(u.clone());
    let asqtad = StaggeredLinks::Improved {
        fat: fat.clone(),
        long: long.clone(),
    };
    for grid in [[1, 1, 1, 2], [1, 1, 2, 2], [2, 2, 2, 2]] {
        let v = hop_variant::<f64>(Parity::Even, false, false, TimeBoundary::Antiperiodic);
        let psi = ColourSpinorField::<f64>::gaussian(
            SpinorLayout::wilson(global, SiteSubset::Single(Parity::Odd)),
            61,
        );
        let ext = extended(global, grid, ONE_HOP_DEPTH);
        let d = distributed(ext, &[&u], |mut l| WilsonLinks(l.remove(0)), &v, &psi);
        assert_bits_equal(&d, &single(&wilson, &v, &psi), &format!("Wilson {grid:?}"));

        let v = hop_variant::<f64>(Parity::Odd, false, false, TimeBoundary::Periodic);
        let chi = ColourSpinorField::<f64>::gaussian(
            SpinorLayout::staggered(global, SiteSubset::Single(Parity::Even)),
            62,
        );
        let ext = extended(global, grid, NAIK_DEPTH);
        let make = |mut l: Vec<GaugeField<f64>>| {
            let long = l.pop().unwrap();
            StaggeredLinks::Improved {
                fat: l.pop().unwrap(),
                long,
            }
        };
        let d = distributed(ext, &[&fat, &long], make, &v, &chi);
        assert_bits_equal(&d, &single(&asqtad, &v, &chi), &format!("asqtad {grid:?}"));
    }
}

/// The exchange through threads fills the same halos as the in-place reference exchange
/// (5D one-parity spinor, antiperiodic time, depth 3; gauge field, periodic).
#[test]
fn exchange_over_threads_equals_the_in_place_exchange() {
    let global = Lattice::new([8, 4, 8, 8]).unwrap();
    let ext = extended(global, [2, 1, 2, 2], NAIK_DEPTH);
    let five = Lattice5D::new(global.dims(), 2).unwrap();
    let psi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::domain_wall(five, SiteSubset::Single(Parity::Odd)),
        71,
    );
    let u = GaugeField::<f64>::random(global, 72);
    let apt = BoundaryConditions::antiperiodic_time();
    let periodic = BoundaryConditions::periodic();
    for shape in [HaloShape::Faces, HaloShape::FacesAndCorners] {
        let mut expected_psi = scatter_all(&psi, &ext).unwrap();
        exchange_in_place(&mut expected_psi, &ext, shape, &apt).unwrap();
        let mut expected_u = scatter_all(&u, &ext).unwrap();
        exchange_in_place(&mut expected_u, &ext, shape, &periodic).unwrap();
        let got = run_ranks(
            ext.decomposition().size(),
            CommConfig::default(),
            |mut comm| {
                let rank = comm.rank();
                let mut p = scatter(&psi, &ext, rank).unwrap();
                exchange_halos(&mut comm, &mut p, &ext, shape, &apt, "psi").unwrap();
                let mut v = scatter(&u, &ext, rank).unwrap();
                exchange_halos(&mut comm, &mut v, &ext, shape, &periodic, "u").unwrap();
                (p, v)
            },
        );
        for (rank, (p, v)) in got.into_iter().enumerate() {
            assert_eq!(p, expected_psi[rank], "rank {rank} {shape:?}");
            assert_eq!(v, expected_u[rank], "rank {rank} {shape:?}");
        }
    }
}

/// Extended-volume smearing (Shi et al.): the thin links of MILC's lat.sample.l8, phases
/// folded in, exchanged once with faces and corners of depth 2 (the Lepage term and the
/// Naik link reach two sites; 7-staples reach diagonally), then the generated CPU asqtad
/// fat and long links computed on each rank's extended lattice with no further
/// communication. The gathered interiors equal the single-process links bit for bit on
/// grids cutting t, z·t and all four directions, and MILC's own fat.l8 and long.l8 to
/// f32 rounding (u0 = 0.502). With faces only (no corners) the fat links differ: the
/// staples need the corners.
#[test]
fn extended_volume_smearing_reproduces_milc_fat_and_long_links() {
    let u = read_gauge(data("lat.sample.l8"), &ReadOptions::default())
        .expect("lat.sample.l8")
        .field;
    let read = |n| {
        read_gauge(data(n), &ReadOptions::smeared_links())
            .expect("MILC links")
            .field
    };
    let (milc_fat, milc_long) = (read("fat.l8"), read("long.l8"));
    let u0 = 0.502;
    let v = fold_staggered_phases(&u);
    let single_fat = AsqtadFat::smear_cpu(&v, u0).unwrap();
    let single_long = AsqtadLong::smear_cpu(&v, u0).unwrap();
    let rel = |a: &GaugeField<f64>, b: &GaugeField<f64>| {
        let (mut d, mut m) = (0.0f64, 0.0f64);
        for (x, y) in a.links().iter().zip(b.links()) {
            d = d.max((*x - *y).max_abs_component());
            m = m.max(y.max_abs_component());
        }
        d / m
    };
    let global = *u.lattice();
    let smear = |ext: ExtendedLattice, shape: HaloShape| {
        let parts = run_ranks(
            ext.decomposition().size(),
            CommConfig::default(),
            |mut comm| {
                let mut part = scatter(&v, &ext, comm.rank()).unwrap();
                let periodic = BoundaryConditions::periodic();
                exchange_halos(&mut comm, &mut part, &ext, shape, &periodic, "thin links").unwrap();
                (
                    AsqtadFat::smear_cpu(&part, u0).unwrap(),
                    AsqtadLong::smear_cpu(&part, u0).unwrap(),
                )
            },
        );
        let (fat, long): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
        (gather(&fat, &ext).unwrap(), gather(&long, &ext).unwrap())
    };
    for grid in [[1, 1, 1, 2], [1, 1, 2, 2], [2, 2, 2, 2]] {
        let ext = extended(global, grid, 2);
        let (fat, long) = smear(ext, HaloShape::FacesAndCorners);
        assert!(fat == single_fat, "fat links, grid {grid:?}");
        assert!(long == single_long, "long links, grid {grid:?}");
        assert!(
            rel(&fat, &milc_fat) < 2e-6,
            "{grid:?}: {:e}",
            rel(&fat, &milc_fat)
        );
        assert!(
            rel(&long, &milc_long) < 2e-6,
            "{grid:?}: {:e}",
            rel(&long, &milc_long)
        );
    }
    let (fat, _) = smear(extended(global, [1, 1, 2, 2], 2), HaloShape::Faces);
    assert!(
        rel(&fat, &single_fat) > 1e-3,
        "faces alone cannot give the staples"
    );
}

/// Replaces every projected halo site of `psi` (as the Wilson spec reads its halos,
/// [`qdsl_core::dsl::halo_spin::HaloProjections`]) by χ = ½ R (1 ± γ_μ) ψ — what a
/// projected face's unpack stores — with the host reference of the face kernels.
fn project_halos(
    psi: &mut ColourSpinorField<f64>,
    ext: &ExtendedLattice,
    halos: &qdsl_core::dsl::halo_spin::HaloProjections,
) -> usize {
    use qdsl_core::dsl::halo_spin::{project_site, reconstruct_half_site};
    use qdsl_core::field::distributed::SiteField;
    use qdsl_core::lattice::Side;
    let mut projected = 0;
    for mu in 0..4 {
        for side in Side::BOTH {
            let Some(p) = halos.halo(mu, side) else {
                continue;
            };
            let plan = p.plan();
            for c in ext.halo_slab(mu, side, HaloShape::Faces) {
                let Some(i) = psi.index_of(c) else { continue };
                for s in 0..SiteField::slices(psi) {
                    let site = psi.site_elems_mut(s, i);
                    let reals: [f64; 24] = std::array::from_fn(|k| {
                        if k % 2 == 0 {
                            site[k / 2].re
                        } else {
                            site[k / 2].im
                        }
                    });
                    let chi = reconstruct_half_site(&project_site(&reals, &plan), &plan);
                    for (k, z) in site.iter_mut().enumerate() {
                        *z = qdsl_core::Complex::new(chi[2 * k], chi[2 * k + 1]);
                    }
                    projected += 1;
                }
            }
        }
    }
    projected
}

/// CPU emulation of spin-projected faces: the halos exchanged, then each replaced by the
/// halved reconstruction of its half spinor (what the device unpack stores), and the
/// generated CPU Wilson hop run unchanged on the extended lattice — bit-identical to the
/// single-process hop (both parities, plain and dagger with its opposite projectors,
/// antiperiodic t, grids cutting 1, 2 and 4 directions; 4D and 5D). With the dagger's
/// projections applied to the plain hop the result differs: the projections matter.
#[test]
fn spin_projected_halos_give_the_single_process_wilson_hop_bit_for_bit() {
    use qdsl_core::dsl::halo_spin::HaloProjections;
    use qdsl_core::dsl::Stencil;
    let global = Lattice::new([4, 4, 4, 8]).unwrap();
    let u = GaugeField::<f64>::random(global, 45);
    let reference = WilsonLinks(u.clone());
    let five = Lattice5D::new(global.dims(), 2).unwrap();
    for grid in GRIDS {
        let ext = extended(global, grid, ONE_HOP_DEPTH);
        for parity in Parity::BOTH {
            for dagger in [false, true] {
                let v = hop_variant::<f64>(parity, dagger, false, TimeBoundary::Antiperiodic);
                let subset = SiteSubset::Single(parity.opposite());
                for layout in [
                    SpinorLayout::wilson(global, subset),
                    SpinorLayout::domain_wall(five, subset),
                ] {
                    let psi = ColourSpinorField::<f64>::gaussian(layout, 46);
                    let run = |halo_dagger: bool| {
                        let halos =
                            HaloProjections::of(&qdsl_kernels::WilsonHop::ir(), halo_dagger);
                        let size = ext.decomposition().size();
                        let parts = run_ranks(size, CommConfig::default(), |mut comm| {
                            let rank = comm.rank();
                            let mut links = scatter(&u, &ext, rank).unwrap();
                            let periodic = BoundaryConditions::periodic();
                            exchange_halos(
                                &mut comm,
                                &mut links,
                                &ext,
                                HaloShape::Faces,
                                &periodic,
                                "links",
                            )
                            .unwrap();
                            let mut src = scatter(&psi, &ext, rank).unwrap();
                            exchange_halos(
                                &mut comm,
                                &mut src,
                                &ext,
                                HaloShape::Faces,
                                &BoundaryConditions::antiperiodic_time(),
                                "psi",
                            )
                            .unwrap();
                            let n = project_halos(&mut src, &ext, &halos);
                            assert!(n > 0, "some halo sites are projected");
                            let mut kv = v;
                            if grid[3] > 1 {
                                kv.boundary = TimeBoundary::Periodic;
                            }
                            let mut out = ColourSpinorField::zeros(
                                src.layout().with_subset(SiteSubset::Single(parity)),
                            );
                            WilsonLinks(links).apply(&kv, &mut out, &src, None).unwrap();
                            super::zero_halo_sites(&mut out, &ext);
                            out
                        });
                        gather(&parts, &ext).unwrap()
                    };
                    let what = format!(
                        "grid {grid:?} {parity:?} dagger {dagger} Ls {}",
                        layout.ls()
                    );
                    let expected = single(&reference, &v, &psi);
                    assert_bits_equal(&run(dagger), &expected, &what);
                    assert_ne!(
                        run(!dagger),
                        expected,
                        "{what}: wrong projectors must differ"
                    );
                }
            }
        }
    }
}

/// The reach of the smearing paths: asqtad's fat links (Lepage: two sites) and long
/// links (the Naik link reads U(x + 2μ̂)) 2, fat7 (staples of one site per direction) 1,
/// HISQ's second level 2 (so HISQ's two levels 3: the Naik halo). A halo shallower than
/// the reach is refused naming the spec and both numbers.
#[test]
fn smearing_paths_reach_two_sites_for_asqtad_and_shallow_halos_are_refused() {
    use super::smear::{check_smearing_depth, path_reach};
    use qdsl_kernels::{Fat7, HisqFat};
    assert_eq!(path_reach(&AsqtadFat::spec()), 2);
    assert_eq!(path_reach(&AsqtadLong::spec()), 2);
    assert_eq!(path_reach(&Fat7::spec()), 1);
    assert_eq!(path_reach(&HisqFat::spec()), 2);
    let global = Lattice::new([4, 4, 4, 8]).unwrap();
    let shallow = extended(global, [1, 1, 1, 2], ONE_HOP_DEPTH);
    let e = check_smearing_depth(&shallow, &[Fat7::spec(), AsqtadFat::spec()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&AsqtadFat::spec().name) && e.contains("reach 2") && e.contains("1 deep"),
        "{e}"
    );
    assert!(check_smearing_depth(&shallow, &[Fat7::spec()]).is_ok());
    assert!(check_smearing_depth(
        &extended(global, [1, 1, 1, 2], NAIK_DEPTH),
        &[AsqtadFat::spec()]
    )
    .is_ok());
}

/// Extended-volume smearing through the module's steps (one exchange of faces and
/// corners, the generated CPU asqtad kernels on the extended lattice, the interior
/// kept): on random links with the Naik halo (depth 3) and with the minimal one (2),
/// cutting t and z·t, the gathered links equal the single-lattice ones bit for bit, the
/// parts hold zeros outside the interior, and the cost counts the halo received.
#[test]
fn extended_volume_smearing_steps_give_the_single_lattice_links() {
    use super::smear::{exchange_thin_links, interior_part, ExtendedSmearCost};
    let global = Lattice::new([4, 4, 8, 8]).unwrap();
    let v = fold_staggered_phases(&GaugeField::<f64>::random(global, 61));
    let u0 = 0.9;
    let single_fat = AsqtadFat::smear_cpu(&v, u0).unwrap();
    let single_long = AsqtadLong::smear_cpu(&v, u0).unwrap();
    for (grid, depth) in [([1, 1, 1, 2], NAIK_DEPTH), ([1, 1, 2, 2], 2)] {
        let ext = extended(global, grid, depth);
        let parts = run_ranks(ext.decomposition().size(), CommConfig::default(), |comm| {
            let comm = super::SharedComm::new(comm);
            let mut part = scatter(&v, &ext, comm.rank()).unwrap();
            let bytes = exchange_thin_links(&comm, &mut part, &ext).unwrap();
            let fat = interior_part(AsqtadFat::smear_cpu(&part, u0).unwrap(), &ext).unwrap();
            let long = interior_part(AsqtadLong::smear_cpu(&part, u0).unwrap(), &ext).unwrap();
            (fat, long, bytes)
        });
        let cost = ExtendedSmearCost::of(&ext);
        assert!(cost.work_ratio() > 1.0 && cost.halo_sites > 0, "{grid:?}");
        for (rank, (fat, _, bytes)) in parts.iter().enumerate() {
            assert_eq!(*bytes, cost.halo_bytes::<f64>(), "rank {rank}");
            assert_eq!(
                *fat,
                scatter(&single_fat, &ext, rank).unwrap(),
                "rank {rank} {grid:?}"
            );
        }
        let fat: Vec<_> = parts.iter().map(|p| p.0.clone()).collect();
        let long: Vec<_> = parts.iter().map(|p| p.1.clone()).collect();
        assert!(
            gather(&fat, &ext).unwrap() == single_fat,
            "fat {grid:?} depth {depth}"
        );
        assert!(
            gather(&long, &ext).unwrap() == single_long,
            "long {grid:?} depth {depth}"
        );
    }
}

/// The host exchange of spin-projected faces (what the CPU distributed Wilson and
/// clover blocks send): on every grid, 4D and 5D (Ls = 2), plain and dagger projectors,
/// antiperiodic t, the halos equal the CPU emulation's (a whole exchange, then each
/// projected halo replaced by ½ R (1 ± γ_μ) ψ) bit for bit, the interior untouched, and
/// each rank sends half the numbers of the whole exchange.
#[test]
fn projected_host_exchange_equals_the_emulation_and_sends_half() {
    use super::exchange_projected_halos;
    use qdsl_core::dsl::halo_spin::HaloProjections;
    use qdsl_core::dsl::Stencil;
    let global = Lattice::new([4, 4, 4, 8]).unwrap();
    let five = Lattice5D::new(global.dims(), 2).unwrap();
    let apt = BoundaryConditions::antiperiodic_time();
    for grid in GRIDS {
        let ext = extended(global, grid, ONE_HOP_DEPTH);
        for dagger in [false, true] {
            let halos = HaloProjections::of(&qdsl_kernels::WilsonHop::ir(), dagger);
            for layout in [
                SpinorLayout::wilson(global, SiteSubset::Single(Parity::Odd)),
                SpinorLayout::domain_wall(five, SiteSubset::Single(Parity::Even)),
            ] {
                let psi = ColourSpinorField::<f64>::gaussian(layout, 47);
                let size = ext.decomposition().size();
                let ranks = run_ranks(size, CommConfig::default(), |mut comm| {
                    let rank = comm.rank();
                    let mut emulated = scatter(&psi, &ext, rank).unwrap();
                    exchange_halos(&mut comm, &mut emulated, &ext, HaloShape::Faces, &apt, "w")
                        .unwrap();
                    let whole: usize = (0..4)
                        .filter(|&mu| grid[mu] > 1)
                        .map(|mu| 2 * face_len(&emulated, &ext, HaloShape::Faces, mu))
                        .sum();
                    project_halos(&mut emulated, &ext, &halos);
                    let mut got = scatter(&psi, &ext, rank).unwrap();
                    let sent =
                        exchange_projected_halos(&mut comm, &mut got, &ext, &apt, &halos, "p")
                            .unwrap();
                    (got, emulated, sent, whole)
                });
                for (rank, (got, emulated, sent, whole)) in ranks.iter().enumerate() {
                    let what = format!(
                        "grid {grid:?} dagger {dagger} Ls {} rank {rank}",
                        layout.ls()
                    );
                    assert!(got == emulated, "{what}");
                    assert_eq!(2 * sent, *whole, "{what}");
                }
            }
        }
    }
}
