//! The generated sources compile (NVRTC) and assemble (ptxas, which checks the inline
//! PTX conversions) for sm_90, for every supported format; skipped where NVRTC is absent.

use super::*;
use crate::jit::{ptxas, Arch};
use qdsl_core::format::{FermionFormat, LinkFormat, LinkStorage};

/// Every supported (format, fermion reals) pair: Wilson and staggered fermions, links.
fn layouts() -> Vec<DeviceLayout> {
    let mut out = Vec::new();
    for f in FermionFormat::ALL {
        for reals in [24, 6] {
            if let Ok(l) = DeviceLayout::new(DeviceFormat::Fermion(f), reals, 64) {
                out.push(l);
            }
        }
    }
    for s in LinkStorage::ALL {
        for c in Compression::ALL {
            out.push(DeviceLayout::new(DeviceFormat::Link(LinkFormat::new(s, c)), 0, 64).unwrap());
        }
    }
    out
}

/// Every conversion (both directions, both host types) and reduction kernel of
/// [`layouts`], as (kernel name, source).
fn conversion_and_reduction_sources() -> Vec<(String, String)> {
    let mut sources = Vec::new();
    for l in layouts() {
        for h in [HostReal::F64, HostReal::F32] {
            for d in [Direction::Encode, Direction::Decode] {
                sources.push((
                    conversion_name(&l, h, d),
                    conversion_source(&l, h, d).unwrap(),
                ));
            }
        }
        if let DeviceFormat::Fermion(_) = l.format {
            sources.push((reduction_name(&l), reduction_source(&l).unwrap()));
        }
    }
    sources
}

/// The manifest of the runtime's generated kernels (the catalog's are in qdsl-kernels'
/// `generated_manifest`): every conversion, reduction and BLAS kernel with its source
/// length and FNV-1a hash, so that a change to any of them shows up in review.
#[test]
fn manifest_of_every_runtime_kernel() {
    use crate::solver::device::blas_source::{blas_name, blas_source};
    let mut sources = conversion_and_reduction_sources();
    let fermions: Vec<DeviceLayout> = layouts()
        .into_iter()
        .filter(|l| matches!(l.format, DeviceFormat::Fermion(_)))
        .collect();
    for y in &fermions {
        for x in fermions.iter().filter(|x| x.host_reals == y.host_reals) {
            if let Ok(src) = blas_source(y, x) {
                sources.push((blas_name(y, x), src));
            }
        }
    }
    let mut manifest = String::new();
    for (name, src) in &sources {
        writeln!(
            manifest,
            "{name} {} bytes, fnv {:016x}",
            src.len(),
            qdsl_core::dsl::variant::fnv1a(src.as_bytes())
        )
        .unwrap();
    }
    insta::assert_snapshot!("runtime_kernel_manifest", manifest);
}

#[test]
fn names_are_distinct_and_readable() {
    let l = DeviceLayout::new(
        DeviceFormat::Link(LinkFormat::new(LinkStorage::F16, Compression::Recon12)),
        0,
        8,
    )
    .unwrap();
    assert_eq!(
        conversion_name(&l, HostReal::F32, Direction::Decode),
        "qdsl_decode_f16_recon12_18_f32"
    );
    let mut names = std::collections::HashSet::new();
    for l in layouts() {
        for h in [HostReal::F64, HostReal::F32] {
            for d in [Direction::Encode, Direction::Decode] {
                assert!(names.insert(conversion_name(&l, h, d)));
            }
        }
    }
    // Fermions: 8 formats × 2 site sizes; links: 6 storages × 3 compressions.
    assert_eq!(names.len(), (8 * 2 + 6 * 3) * 4);
}

#[test]
fn constants_are_exact_bit_patterns() {
    assert_eq!(
        constant(1.0, HostReal::F64),
        "__longlong_as_double(0x3ff0000000000000ULL)"
    );
    assert_eq!(constant(0.5, HostReal::F32), "__int_as_float(0x3f000000)");
    // fl(1/32767) in f32 is 0x38000100 (2^-15 · (1 + 2^-15 + …) rounded): computed by hand
    // as the f32 nearest 3.0518509e-5.
    assert_eq!(
        constant(
            f64::from(FixedWidth::Bits16.inv_max::<f32>()),
            HostReal::F32
        ),
        "__int_as_float(0x38000100)"
    );
}

#[test]
fn recon12_source_spells_the_cross_product() {
    let l = DeviceLayout::new(
        DeviceFormat::Link(LinkFormat::new(LinkStorage::F32, Compression::Recon12)),
        0,
        8,
    )
    .unwrap();
    let src = conversion_source(&l, HostReal::F64, Direction::Decode).unwrap();
    // c_0 = conj(a_1 b_2 − a_2 b_1): a_1 = r[2], r[3]; b_2 = r[10], r[11].
    assert!(src.contains("pr = r[2] * r[10] - r[3] * r[11]"), "{src}");
    assert!(src.contains("qr = r[4] * r[8] - r[5] * r[9]"));
    assert!(src.contains("r[13] = -(pi - qi);"));
}

/// Recon 8 stores [arg v00/π, arg v20/π, v01, v02, v10]: v00 = r[0], r[1]; v20 = r[12],
/// r[13]; v01 = r[2..4] (row-major, (re, im) per element), and checks SU(3) on encode.
#[test]
fn recon8_sources_spell_the_parametrisation() {
    for s in [LinkStorage::F32, LinkStorage::FIXED16] {
        let l = DeviceLayout::new(
            DeviceFormat::Link(LinkFormat::new(s, Compression::Recon8)),
            0,
            8,
        )
        .unwrap();
        assert_eq!(l.stored_reals, 8);
        let enc = conversion_source(&l, HostReal::F64, Direction::Encode).unwrap();
        assert!(enc.contains("p[0] = atan2(r[1], r[0]) / pi;"), "{enc}");
        assert!(enc.contains("p[1] = atan2(r[13], r[12]) / pi;"));
        assert!(enc.contains("for (int k = 2; k < 8; k++) p[k] = r[k];"));
        assert!(enc.contains("*bad |= QDSL_NOT_SU3"));
        assert!(enc.contains(&format!("#define QDSL_NOT_SU3 {STATUS_NOT_SU3}")));
        // π by its bits: 0x400921fb54442d18 in f64, 0x40490fdb in f32.
        assert!(enc.contains("0x400921fb54442d18"));
        let dec = conversion_source(&l, HostReal::F32, Direction::Decode).unwrap();
        assert!(dec.contains("qdsl_recon8_rebuild(r);"), "{dec}");
        assert!(dec.contains("0x40490fdb"));
        assert!(dec.contains("sqrtf(fmaxf(one - r2, zero))"));
        // v11 = −(conj(v20)·conj(v02) + A·v01)/r².
        assert!(dec.contains(
            "v11 = qdsl_scale(qdsl_neg(qdsl_add(qdsl_mul(qdsl_cj(v20), qdsl_cj(v02)), qdsl_mul(a, v01))), inv);"
        ));
        assert!(!dec.contains("atan2"));
    }
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn every_conversion_and_reduction_compiles_and_assembles_for_sm_90() {
    let root = tempfile::tempdir().unwrap();
    let jit = crate::testing::jit(root.path());
    let have_ptxas = ptxas::find_ptxas().is_some();
    if !have_ptxas {
        eprintln!("ptxas not found: compiling only");
    }
    let opts: Vec<String> = OPTIONS.iter().map(|s| s.to_string()).collect();
    let sources = conversion_and_reduction_sources();
    // Compile all, then assemble all PTX in one ptxas call per program.
    for (name, src) in &sources {
        let ptx = jit
            .compile(name, src, Arch::SM_90, &opts)
            .unwrap_or_else(|e| panic!("{e}\n{src}"));
        if have_ptxas {
            let reports =
                ptxas::report(&ptx.ptx, Arch::SM_90).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!reports.is_empty(), "{name}");
            for r in &reports {
                assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{name}: {r:?}");
            }
        }
    }
}
