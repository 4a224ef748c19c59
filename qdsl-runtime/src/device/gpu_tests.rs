//! Device-field tests that need a GPU: ignored where there is none (see `crate::testing`).
//! Run them on the GPU machine: `cargo test -p qdsl-runtime --lib device::gpu_tests`.
//!
//! The references are independent of the generated kernels: the CPU image and decode of
//! [`super::reference`] (qdsl-core's formats, record by record) and plain f64 sums.

use super::reference::{decode_image, encode_image};
use super::*;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::format::{Compression, FermionFormat, LinkFormat, LinkSign, LinkStorage};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::Real;

use crate::testing::gpu;

fn lattice() -> Lattice {
    Lattice::new([4, 4, 4, 6]).unwrap()
}

fn bits<T: Real>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| Real::to_f64(*x).to_bits()).collect()
}

fn check_fermion<T: Real>(gpu: &Gpu, layout: SpinorLayout, format: FermionFormat, seed: u64) {
    let field = ColourSpinorField::<T>::gaussian(layout, seed);
    let dev = DeviceField::from_spinor(gpu, &field, format).unwrap();
    let host: Vec<f64> = field
        .data()
        .iter()
        .flat_map(|z| [Real::to_f64(z.re), Real::to_f64(z.im)])
        .collect();
    let want = encode_image(dev.layout(), &host).unwrap();
    assert!(
        dev.image(gpu).unwrap() == want,
        "{format} {}: device bytes differ from the CPU image",
        T::NAME
    );
    let back = dev.to_spinor::<T>(gpu, layout).unwrap();
    let cpu = decode_image::<T>(dev.layout(), &want).unwrap();
    let got: Vec<T> = back.data().iter().flat_map(|z| [z.re, z.im]).collect();
    assert_eq!(
        bits(&got),
        bits(&cpu),
        "{format} {}: decode differs",
        T::NAME
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn fermion_fields_encode_and_decode_bit_for_bit_like_the_core() {
    let (gpu, _dir) = gpu();
    let wilson = SpinorLayout::wilson(lattice(), SiteSubset::Full);
    let staggered = SpinorLayout::staggered(lattice(), SiteSubset::Single(Parity::Odd));
    for (i, f) in FermionFormat::ALL.into_iter().enumerate() {
        if DeviceFormat::Fermion(f).stored_real().is_err() {
            continue;
        }
        check_fermion::<f64>(&gpu, wilson, f, i as u64);
        check_fermion::<f32>(&gpu, wilson, f, 100 + i as u64);
        check_fermion::<f64>(&gpu, staggered, f, 200 + i as u64);
        check_fermion::<f32>(&gpu, staggered, f, 300 + i as u64);
    }
}

fn check_gauge<T: Real>(gpu: &Gpu, format: LinkFormat, seed: u64) {
    let g = GaugeField::<T>::random(lattice(), seed);
    let dev = DeviceField::from_gauge(gpu, &g, format).unwrap();
    let host: Vec<f64> = g
        .links()
        .iter()
        .flat_map(|u| u.to_reals().map(|x| Real::to_f64(x)))
        .collect();
    let want = encode_image(dev.layout(), &host).unwrap();
    assert!(
        dev.image(gpu).unwrap() == want,
        "{}: device bytes differ from the CPU image",
        format.name()
    );
    let back = dev.to_gauge::<T>(gpu, lattice()).unwrap();
    let got: Vec<T> = back.links().iter().flat_map(|u| u.to_reals()).collect();
    assert_eq!(
        bits(&got),
        bits(&decode_image::<T>(dev.layout(), &want).unwrap()),
        "{}",
        format.name()
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn gauge_fields_encode_and_decode_bit_for_bit_like_the_core() {
    let (gpu, _dir) = gpu();
    for (i, s) in LinkStorage::ALL.into_iter().enumerate() {
        for c in [Compression::Full, Compression::Recon12] {
            check_gauge::<f64>(&gpu, LinkFormat::new(s, c), i as u64);
            check_gauge::<f32>(&gpu, LinkFormat::new(s, c), 50 + i as u64);
        }
    }
}

/// Recon 8 on the GPU against qdsl-core's `LinkFormat` round trip of the same links
/// (encode, then decode in T): equal to 64 unit roundoffs of T per real, the only
/// differences being the roundings of atan2, sin and cos (no two math libraries agree
/// bit for bit; a wrong reconstruction differs by O(1)).
fn check_recon8<T: Real>(gpu: &Gpu, storage: LinkStorage, seed: u64) {
    let format = LinkFormat::new(storage, Compression::Recon8);
    let g = GaugeField::<T>::random(lattice(), seed);
    let dev = DeviceField::from_gauge(gpu, &g, format).unwrap();
    assert_eq!(dev.layout().stored_reals, 8);
    let back = dev.to_gauge::<T>(gpu, lattice()).unwrap();
    let tol = 64.0 * Real::to_f64(T::epsilon()) / 2.0;
    let mut bytes = vec![0u8; format.bytes_per_link()];
    for (i, (link, got)) in g.links().iter().zip(back.links()).enumerate() {
        format.encode(link, LinkSign::Plus, &mut bytes).unwrap();
        let cpu = format.decode::<T>(&bytes, LinkSign::Plus).unwrap();
        let diff = Real::to_f64((*got - cpu).max_abs_component());
        assert!(
            diff <= tol,
            "{} {}: link {i} differs from the CPU round trip by {diff:e} > {tol:e}",
            format.name(),
            T::NAME
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn recon8_gauge_fields_round_trip_like_the_core() {
    let (gpu, _dir) = gpu();
    for (i, s) in LinkStorage::ALL.into_iter().enumerate() {
        check_recon8::<f64>(&gpu, s, 100 + i as u64);
        check_recon8::<f32>(&gpu, s, 200 + i as u64);
    }
}

/// Link 7 = site 1, μ = 3 multiplied by i: unitary, but det = i³·1 = −i, so the recon-8
/// upload fails and names it.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn a_non_su3_link_is_refused_by_recon8_by_name() {
    let (gpu, _dir) = gpu();
    let mut g = GaugeField::<f64>::random(lattice(), 7);
    let link = &mut g.links_mut()[7];
    *link = link.scale_complex(qdsl_core::Complex::new(0.0, 1.0));
    let format = LinkFormat::new(LinkStorage::F32, Compression::Recon8);
    let e = DeviceField::from_gauge(&gpu, &g, format).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("not SU(3)"), "{text}");
    assert!(text.contains("link 7 (site 1, μ = 3)"), "{text}");
    assert!(text.contains("|det V − 1| = 1.414e0"), "{text}");
    // The same field with recon 18 is stored as it is.
    assert!(DeviceField::from_gauge(
        &gpu,
        &g,
        LinkFormat::new(LinkStorage::F32, Compression::Full)
    )
    .is_ok());
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn norms_and_dots_match_f64_sums_of_the_decoded_values() {
    let (gpu, _dir) = gpu();
    let layout = SpinorLayout::wilson(lattice(), SiteSubset::Full);
    for f in [
        FermionFormat::F64,
        FermionFormat::F32,
        FermionFormat::FIXED16,
        FermionFormat::BF16,
    ] {
        let x = ColourSpinorField::<f64>::gaussian(layout, 1);
        let y = ColourSpinorField::<f64>::gaussian(layout, 2);
        let dx = DeviceField::from_spinor(&gpu, &x, f).unwrap();
        let dy = DeviceField::from_spinor(&gpu, &y, f).unwrap();
        let hx = dx.to_spinor::<f64>(&gpu, layout).unwrap();
        let hy = dy.to_spinor::<f64>(&gpu, layout).unwrap();
        let norm: f64 = hx.data().iter().map(|z| z.norm_sqr()).sum();
        let dot = hx
            .data()
            .iter()
            .zip(hy.data())
            .map(|(a, b)| a.conj() * b)
            .sum::<qdsl_core::Complex<f64>>();
        let gn = dx.norm2(&gpu).unwrap();
        let gd = dx.dot(&dy, &gpu).unwrap();
        assert!((gn - norm).abs() <= 1e-13 * norm, "{f}: {gn} vs {norm}");
        assert!((gd - dot).norm() <= 1e-13 * norm, "{f}: {gd} vs {dot}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn errors_name_what_went_wrong() {
    let (gpu, _dir) = gpu();
    let (free, total) = gpu.backend().memory().unwrap();
    let e = gpu.alloc::<u8>("a test field", total * 2).unwrap_err();
    match &e {
        DeviceError::OutOfMemory {
            requested, free: f, ..
        } => {
            assert_eq!(*requested, total * 2);
            assert!(*f <= total && free <= total);
        }
        other => panic!("expected out of memory, got {other}"),
    }
    assert!(e.to_string().contains("bytes requested"), "{e}");
    // A value beyond f16's range is an overflow reported by the encode kernel.
    let layout = SpinorLayout::staggered(lattice(), SiteSubset::Full);
    let mut x = ColourSpinorField::<f64>::gaussian(layout, 3);
    x.data_mut()[5].re = 1e6;
    let e = DeviceField::from_spinor(&gpu, &x, FermionFormat::F16).unwrap_err();
    assert!(e.to_string().contains("beyond the format's range"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn the_tuner_times_real_launches_with_device_events() {
    use crate::tune::{launch_candidates, Candidate, TuneKey, TuneSource, Tuner};
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    use qdsl_core::dsl::Geometry;
    let (gpu, dir) = gpu();
    let src = "extern \"C\" __global__ void qdsl_test_copy(const float4* x, float4* y, int n) {\n    \
               for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i];\n}\n";
    let f = gpu.function("qdsl_test_copy", src, &[]).unwrap();
    let n = 1usize << 20;
    let x = gpu.alloc::<f32>("x", 4 * n).unwrap();
    let mut y = gpu.alloc::<f32>("y", 4 * n).unwrap();
    let limits = gpu.launch_limits().unwrap();
    assert!(
        limits.max_block >= 1024 && limits.shared_per_sm >= 48 * 1024,
        "{limits:?}"
    );
    let candidates: Vec<Candidate> = launch_candidates([n, 1, 1], &Geometry::per_site(0), &limits)
        .into_iter()
        .map(Candidate::launch)
        .collect();
    let tuner =
        Tuner::new(&dir.path().join("tunecache.tsv"), gpu.fingerprint("test")).with_enabled(true);
    let key = TuneKey::new("qdsl_test_copy", 0, 0, n, "f32", &gpu.device_key());
    let ni = n as i32;
    let mut run = |c: &Candidate| {
        gpu.time_us(2, 5, || {
            let cfg = LaunchConfig {
                grid_dim: (c.launch.grid[0], 1, 1),
                block_dim: (c.launch.block[0], 1, 1),
                shared_mem_bytes: c.launch.shared_bytes,
            };
            let mut b = gpu.backend().stream().launch_builder(&f);
            b.arg(&x).arg(&mut y).arg(&ni);
            // SAFETY: (const float4*, float4*, int) with n float4 elements each.
            unsafe { b.launch(cfg) }
                .map(|_| ())
                .map_err(super::gpu::driver("launching the copy"))
        })
    };
    let first = tuner.tune(&key, &candidates, &mut run).unwrap();
    assert_eq!(first.source, TuneSource::Measured);
    let t = first.time_us.unwrap();
    // 32 MiB moved (16 MiB read + 16 MiB written): between 1 µs and 100 ms on any GPU.
    assert!(t > 1.0 && t < 1e5, "{t} µs");
    let again = tuner.tune(&key, &candidates, &mut run).unwrap();
    assert_eq!((again.source, again.best), (TuneSource::Cache, first.best));
}
