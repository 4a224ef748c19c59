//! openQCD gauge files (the "universal format" of openQCD's `export_cnfg`).
//!
//! Facts, from openQCD's `modules/archive/archive.c` (notes on `export_cnfg`) and
//! `modules/uflds/plaq_sum.c`, and Grid's `Grid/parallelIO/OpenQcdIO.h`:
//!
//! * openQCD's directions are μ' = 0 (time), 1, 2, 3 (x, y, z); its lattice sizes
//!   N0 (time), N1, N2, N3. qdsl's direction μ = x, y, z, t is μ' = μ + 1 mod 4 there.
//! * Header: 4 int32 N0, N1, N2, N3, then one double: the average plaquette
//!   `plaq_sum_dble / (6 N0 N1 N2 N3)`, where `plaq_sum_dble` is the sum of Re tr U(p)
//!   over all unoriented plaquettes. This is ⟨Re tr U_□⟩, **3 for unit links**, i.e.
//!   3 P in qdsl's normalisation (Grid divides it by N_c = 3 for the same reason).
//! * Then, for each odd point x (x0 + x1 + x2 + x3 odd) in the order of the index
//!   `x3 + N3 x2 + N2 N3 x1 + N1 N2 N3 x0` (x0 slowest, x3 fastest), the 8 links
//!   U(x,0), U(x−0̂,0), U(x,1), U(x−1̂,1), U(x,2), U(x−2̂,2), U(x,3), U(x−3̂,3), each a
//!   3×3 complex matrix, row-major `[re, im]` (openQCD's `su3_dble`). Every link of the
//!   lattice is attached to exactly one odd point.
//! * Integers and doubles are little-endian, whatever the machine.
//! * `import_cnfg` accepts the file if the recomputed average plaquette agrees with the
//!   header to `√(6V) ε` (ε = 2⁻⁵²); qdsl allows [`PLAQUETTE_TOLERANCE_UNITS`] times that.
//!
//! Configurations with open boundary conditions (openQCD's boundary type 0) store the
//! time links U(x,0) of the last time slice x0 = N0 − 1 as zero. A file whose time links
//! on that slice are *all* exactly zero is read as such: those links are exempt from the
//! unitarity requirement, every other link is held to it, and the file's checks include
//! [`super::Check::OpenTimeBoundary`]. A zero (or otherwise non-unitary) link anywhere
//! else, or a last slice with only some time links zero, is [`IoError::NonUnitary`]
//! naming the link. The recorded plaquette is verified as for any file (the zero links
//! contribute Re tr 0, as openQCD's omission of those plaquettes does).

use super::bytes::{decode_real, encode_real, read_file, write_file, ByteOrder, Bytes, Precision};
use super::{
    check_links_except, check_observable, exact_payload, lattice_from_header, Check, GaugeFile,
    GaugeFileFormat, IoError, ReadOptions,
};
use crate::field::GaugeField;
use crate::gauge::plaquette;
use crate::lattice::{Coords, Lattice};
use crate::math::ColourMatrix;
use crate::Real;
use std::path::Path;

/// Bytes of the header: 4 int32 and one f64.
pub const HEADER_BYTES: u64 = 24;
/// Bytes of one stored link (18 f64).
const LINK_BYTES: usize = 144;

/// Tolerance on the recorded plaquette, in units of `√(6V) ε · max(3, |recorded|)`:
/// openQCD's own check allows `√(6V) ε` (its plaquettes lie in [−3, 3]) with its
/// compensated sums; qdsl sums in a different order, and the `|recorded|` scale covers
/// non-unitary fields.
pub const PLAQUETTE_TOLERANCE_UNITS: f64 = 64.0;

/// Bytes a file for `lattice` holds: the header, then V/2 odd points × 8 links.
pub(crate) fn file_bytes(lattice: &Lattice) -> u64 {
    HEADER_BYTES + (lattice.half_volume() as u64) * 8 * LINK_BYTES as u64
}

/// qdsl's direction of openQCD's direction μ'.
fn qdsl_mu(mu_openqcd: usize) -> usize {
    (mu_openqcd + 3) % 4
}

/// The odd points in file order as qdsl coordinates `[x, y, z, t]` = `[x1, x2, x3, x0]`.
fn odd_points(lattice: &Lattice) -> impl Iterator<Item = Coords> + '_ {
    let [n1, n2, n3, n0] = lattice.dims();
    (0..n0).flat_map(move |x0| {
        (0..n1).flat_map(move |x1| {
            (0..n2).flat_map(move |x2| {
                (0..n3)
                    .filter(move |x3| (x0 + x1 + x2 + x3) % 2 == 1)
                    .map(move |x3| [x1, x2, x3, x0])
            })
        })
    })
}

/// The 8 (site, μ) pairs stored at an odd point, in file order.
fn links_at(lattice: &Lattice, c: Coords) -> [(Coords, usize); 8] {
    let mut out = [(c, 0); 8];
    for mu_o in 0..4 {
        let mu = qdsl_mu(mu_o);
        out[2 * mu_o] = (c, mu);
        out[2 * mu_o + 1] = (lattice.shift(c, mu, -1).0, mu);
    }
    out
}

/// The header's plaquette for a field: ⟨Re tr U_□⟩ = 3 P.
fn header_plaquette(field: &GaugeField<f64>) -> f64 {
    3.0 * plaquette(field).average
}

/// Reads an openQCD file: checks the header against the file size, the links (see
/// [`ReadOptions`]) and the recorded plaquette.
pub fn read_openqcd(path: impl AsRef<Path>, options: &ReadOptions) -> Result<GaugeFile, IoError> {
    let path = path.as_ref();
    decode(&read_file(path)?, path, options)
}

/// The lattice of an openQCD header.
pub(crate) fn header_lattice(b: Bytes<'_, '_>) -> Result<Lattice, IoError> {
    let mut n = [0i64; 4];
    for (i, x) in n.iter_mut().enumerate() {
        *x = b.i32(4 * i as u64, ByteOrder::Little, "openQCD header (N0..N3)")? as i64;
    }
    // [N0, N1, N2, N3] → [Lx, Ly, Lz, Lt].
    lattice_from_header(
        [n[1], n[2], n[3], n[0]],
        "openQCD header N1, N2, N3, N0",
        b.path,
    )
}

/// Decodes the bytes of an openQCD file.
pub(crate) fn decode(
    data: &[u8],
    path: &Path,
    options: &ReadOptions,
) -> Result<GaugeFile, IoError> {
    let b = Bytes::new(data, path);
    let lattice = header_lattice(b)?;
    let recorded = b.f64(16, ByteOrder::Little, "openQCD header plaquette")?;
    let expected = file_bytes(&lattice) - HEADER_BYTES;
    let payload = exact_payload(b, HEADER_BYTES, expected, &lattice, "openQCD payload")?;

    let mut field = GaugeField::unit(lattice);
    let mut links = payload.chunks_exact(LINK_BYTES);
    for c in odd_points(&lattice) {
        for (site, mu) in links_at(&lattice, c) {
            // The payload holds exactly 8 links per odd point (checked above).
            let Some(raw) = links.next() else { break };
            let mut r = [0.0f64; 18];
            for (x, chunk) in r.iter_mut().zip(raw.chunks_exact(8)) {
                *x = decode_real(chunk, Precision::Double, ByteOrder::Little);
            }
            *field.link_mut(lattice.cb_index(site), mu) = ColourMatrix::from_reals(&r);
        }
    }
    let mut checks = Vec::new();
    let open = has_open_time_boundary(&field);
    let lt = lattice.dims()[3];
    check_links_except(
        &field,
        options.unitarity,
        Precision::Double,
        path,
        &mut checks,
        |c, mu| open && is_open_boundary_link(c, mu, lt),
    )?;
    if open {
        checks.push(Check::OpenTimeBoundary {
            zero_links: lattice.volume() / lt,
        });
    }
    let n_plaquettes = 6.0 * lattice.volume() as f64;
    let tolerance =
        PLAQUETTE_TOLERANCE_UNITS * n_plaquettes.sqrt() * f64::EPSILON * recorded.abs().max(3.0);
    check_observable(
        "openQCD plaquette ⟨Re tr U_p⟩",
        recorded,
        header_plaquette(&field),
        tolerance,
        path,
        &mut checks,
    )?;
    let [lx, ly, lz, lt] = lattice.dims();
    Ok(GaugeFile {
        path: path.to_path_buf(),
        field,
        format: GaugeFileFormat::OpenQcd,
        precision: Precision::Double,
        byte_order: ByteOrder::Little,
        metadata: vec![
            ("N0 N1 N2 N3".to_string(), format!("{lt} {lx} {ly} {lz}")),
            ("plaquette".to_string(), format!("{recorded:e}")),
        ],
        checks,
    })
}

/// Whether U_μ(x) is a time link of the last time slice x0 = L_t − 1 (`lt` = L_t): the
/// links openQCD stores as zero with open boundaries.
fn is_open_boundary_link(c: Coords, mu: usize, lt: usize) -> bool {
    mu == 3 && c[3] + 1 == lt
}

/// Whether every time link of the last time slice is exactly zero (openQCD's open
/// boundary conditions).
pub fn has_open_time_boundary(field: &GaugeField<f64>) -> bool {
    let lattice = field.lattice();
    let lt = lattice.dims()[3];
    (0..lattice.volume()).all(|cb| {
        let c = lattice.coords_of_cb(cb);
        c[3] + 1 != lt || *field.link(cb, 3) == ColourMatrix::zero()
    })
}

/// Writes a field in openQCD's exported format (little-endian f64), with the header
/// plaquette ⟨Re tr U_□⟩ = 3 P computed from the field (in a fixed summation order, so
/// that the same field always gives the same bytes).
pub fn write_openqcd<T: Real>(
    path: impl AsRef<Path>,
    field: &GaugeField<T>,
) -> Result<(), IoError> {
    let path = path.as_ref();
    let lattice = *field.lattice();
    let mut out = Vec::with_capacity(file_bytes(&lattice) as usize);
    let [lx, ly, lz, lt] = lattice.dims();
    for n in [lt, lx, ly, lz] {
        // Extents fit i32: the volume does (Lattice::new).
        out.extend_from_slice(&(n as u32).to_le_bytes());
    }
    let plaq = header_plaquette(&field.cast::<f64>());
    out.extend_from_slice(&plaq.to_le_bytes());
    for c in odd_points(&lattice) {
        for (site, mu) in links_at(&lattice, c) {
            for x in field.link_at(site, mu).to_reals() {
                encode_real(x.to_f64(), Precision::Double, ByteOrder::Little, &mut out);
            }
        }
    }
    write_file(path, &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN_FILE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/openqcd/gauge.bc_0.bin"
    );

    /// openQCD's own file with open boundaries (tests/data/README.md): read with the
    /// default unitarity check, the 64 zero links recognised, the recorded plaquette
    /// verified.
    #[test]
    fn openqcd_open_boundary_file_reads_with_its_zero_links_recognised() {
        let file = read_openqcd(OPEN_FILE, &ReadOptions::default()).unwrap();
        assert_eq!(file.field.lattice().dims(), [4, 4, 4, 4]);
        assert!(has_open_time_boundary(&file.field));
        assert!(file
            .checks
            .contains(&Check::OpenTimeBoundary { zero_links: 64 }));
        let plaquette = file.checks.iter().find_map(|c| match c {
            Check::Observable {
                recorded, computed, ..
            } => Some((*recorded, *computed)),
            _ => None,
        });
        let (recorded, computed) = plaquette.expect("the header plaquette is checked");
        assert_eq!(recorded, -0.0027247910219612096);
        assert!((recorded - computed).abs() < 1e-14, "{computed}");
        // Every other link is held to the f64 limit (and is unitary to rounding).
        let links = file.checks.iter().find_map(|c| match c {
            Check::Links {
                max_unitarity_deviation,
                tolerance,
            } => Some((*max_unitarity_deviation, *tolerance)),
            _ => None,
        });
        let (deviation, tolerance) = links.unwrap();
        assert!(deviation < 1e-14 && tolerance.is_some(), "{deviation:e}");
    }

    /// A zero link anywhere but the last slice's time links, or a last slice with only
    /// some of them zero, is an error naming the link.
    #[test]
    fn stray_zero_links_are_errors_naming_the_link() {
        let field = read_openqcd(OPEN_FILE, &ReadOptions::default())
            .unwrap()
            .field;
        let dir = std::env::temp_dir().join(format!("qdsl-openqcd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lat = *field.lattice();
        let cases: [(Coords, usize); 2] = [
            // A spatial link on the last slice.
            ([1, 2, 3, 3], 0),
            // A time link on slice 1.
            ([0, 1, 0, 1], 3),
        ];
        for (k, (c, mu)) in cases.into_iter().enumerate() {
            let mut bad = field.clone();
            *bad.link_mut(lat.cb_index(c), mu) = ColourMatrix::zero();
            let path = dir.join(format!("stray{k}.bin"));
            write_openqcd(&path, &bad).unwrap();
            match read_openqcd(&path, &ReadOptions::default()) {
                Err(IoError::NonUnitary {
                    coords,
                    mu: found_mu,
                    path: p,
                    ..
                }) => {
                    assert_eq!((coords, found_mu), (c, mu));
                    assert_eq!(p, path);
                }
                other => panic!("expected NonUnitary at {c:?} μ={mu}, got {other:?}"),
            }
        }
        // One time link of the last slice made unitary again: no longer the open
        // pattern, so the first zero one is reported.
        let mut partial = field.clone();
        *partial.link_mut(lat.cb_index([0, 0, 0, 3]), 3) = ColourMatrix::identity();
        let path = dir.join("partial.bin");
        write_openqcd(&path, &partial).unwrap();
        let err = read_openqcd(&path, &ReadOptions::default()).unwrap_err();
        match &err {
            IoError::NonUnitary { coords, mu, .. } => {
                assert_eq!((coords[3], *mu), (3, 3), "{err}");
                assert_ne!(*coords, [0, 0, 0, 3]);
            }
            other => panic!("expected NonUnitary, got {other:?}"),
        }
        assert!(err.to_string().contains("partial.bin"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn odd_points_cover_every_link_once_in_openqcd_order() {
        let lat = Lattice::new([2, 4, 2, 6]).unwrap();
        let pts: Vec<Coords> = odd_points(&lat).collect();
        assert_eq!(pts.len(), lat.half_volume());
        // First odd point: x0 = x1 = x2 = 0, x3 = 1, i.e. qdsl [0, 0, 1, 0].
        assert_eq!(pts[0], [0, 0, 1, 0]);
        // Then x2 (qdsl y) advances before x1 (qdsl x): next is x2 = 1, x3 = 0.
        assert_eq!(pts[1], [0, 1, 0, 0]);
        let mut seen = vec![0u8; 4 * lat.volume()];
        for c in &pts {
            let stored = links_at(&lat, *c);
            // U(x,0) is openQCD's time link: qdsl μ = 3.
            assert_eq!(stored[0], (*c, 3));
            assert_eq!(stored[2], (*c, 0));
            for (s, mu) in stored {
                seen[4 * lat.lex_index(s) + mu] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
    }
}
