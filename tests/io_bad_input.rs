//! Bad gauge files: each defect gives its own error, naming the file and what was
//! expected and found; randomly corrupted and truncated copies of every real file never
//! make a reader panic, and corrupted payloads are caught by the format's checksum.

use qdsl::core::field::GaugeField;
use qdsl::core::io::lime::parse_lime;
use qdsl::core::io::lime_gauge::{read_lime_gauge, write_lime_gauge, LimeWriteOptions};
use qdsl::core::io::milc::{read_milc, write_milc, MilcWriteOptions};
use qdsl::core::io::nersc::{read_nersc, write_nersc, NerscWriteOptions};
use qdsl::core::io::openqcd::{read_openqcd, write_openqcd};
use qdsl::core::io::{read_gauge, Check, ChecksumPolicy, IoError, ReadOptions};
use qdsl::core::lattice::GeometryError;
mod common;

use common::{data, sample, TempDir};
use std::path::{Path, PathBuf};

/// `data` with the first occurrence of `from` replaced by `to`.
fn replace_once(data: &[u8], from: &str, to: &str) -> Vec<u8> {
    let from = from.as_bytes();
    let i = data
        .windows(from.len())
        .position(|w| w == from)
        .unwrap_or_else(|| panic!("{:?} not in file", String::from_utf8_lossy(from)));
    [&data[..i], to.as_bytes(), &data[i + from.len()..]].concat()
}

/// `data` with a little-endian u32 stored at `offset`.
fn with_le_u32(data: &[u8], offset: usize, value: u32) -> Vec<u8> {
    let mut d = data.to_vec();
    d[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
    d
}

/// Asserts that the error's message names the file and contains each of `needles`.
fn assert_message(e: &IoError, path: &Path, needles: &[&str]) {
    let msg = e.to_string();
    assert!(
        msg.contains(&path.display().to_string()),
        "file not named: {msg}"
    );
    for n in needles {
        assert!(msg.contains(n), "{n:?} missing from: {msg}");
    }
}

fn read_err(path: &Path) -> IoError {
    match read_gauge(path, &ReadOptions::default()) {
        Ok(f) => panic!("{}: read succeeded ({:?})", path.display(), f.format),
        Err(e) => e,
    }
}

/// Byte range of the payload of the first LIME record of the given type.
fn lime_payload(bytes: &[u8], type_name: &str) -> std::ops::Range<usize> {
    let records = parse_lime(bytes, Path::new("sample")).unwrap();
    let r = records.iter().find(|r| r.type_name == type_name).unwrap();
    let start = r.data_offset() as usize;
    start..start + r.data.len()
}

/// Offset of the NERSC payload (after the END_HEADER line).
fn nersc_payload_start(bytes: &[u8]) -> usize {
    bytes
        .windows(11)
        .position(|w| w == b"END_HEADER\n")
        .unwrap()
        + 11
}

#[test]
fn truncated_files_say_how_many_bytes_were_expected_and_found() {
    let dir = TempDir::new("truncated");
    let milc = sample("milc/lat.sample.l4444");
    let p = dir.put("milc-header", &milc[..50]);
    let e = read_err(&p);
    assert!(
        matches!(
            e,
            IoError::Truncated {
                expected: 96,
                found: 50,
                ..
            }
        ),
        "{e:?}"
    );
    assert_message(&e, &p, &["MILC header", "expected 96 bytes, found 50"]);

    let p = dir.put("milc-payload", &milc[..96 + 1000]);
    let e = read_err(&p);
    assert!(
        matches!(
            e,
            IoError::Truncated {
                offset: 96,
                expected: 73728,
                found: 1000,
                ..
            }
        ),
        "{e:?}"
    );
    assert_message(
        &e,
        &p,
        &[
            "MILC payload",
            "4×4×4×4",
            "expected 73728 bytes, found 1000",
        ],
    );

    let conf = sample("tmlqcd/conf.48");
    let binary = lime_payload(&conf, "ildg-binary-data");
    let p = dir.put("lime", &conf[..binary.start + 1000]);
    let e = read_err(&p);
    assert!(
        matches!(
            e,
            IoError::Truncated {
                expected: 294912,
                found: 1000,
                ..
            }
        ),
        "{e:?}"
    );
    assert_message(
        &e,
        &p,
        &["ildg-binary-data", &format!("offset {}", binary.start)],
    );

    let nersc = sample("chroma/t_nersc.cfg");
    let p = dir.put("nersc", &nersc[..nersc.len() - 4]);
    let e = read_err(&p);
    assert!(
        matches!(
            e,
            IoError::Truncated {
                expected: 49152,
                found: 49148,
                ..
            }
        ),
        "{e:?}"
    );

    let p = dir.put("empty", &[]);
    let e = read_err(&p);
    assert!(matches!(e, IoError::UnknownFormat { .. }), "{e:?}");
    assert_message(&e, &p, &["empty file"]);

    let missing = dir.file("does-not-exist");
    assert!(matches!(
        read_gauge(&missing, &ReadOptions::default()),
        Err(IoError::Os { .. })
    ));
}

#[test]
fn wrong_magic_numbers_are_reported_with_expected_and_found_values() {
    let dir = TempDir::new("magic");
    let mut milc = sample("milc/lat.sample.l4444");
    milc[0] ^= 0x01;
    let p = dir.put("milc", &milc);
    let e = read_milc(&p, &ReadOptions::default()).unwrap_err();
    assert!(matches!(e, IoError::BadMagic { offset: 0, .. }), "{e:?}");
    assert_message(&e, &p, &["20103", "found 0x864e0000"]);
    // Without a known signature, content detection names the first bytes.
    assert_message(&read_err(&p), &p, &["unrecognised", "86 4e 00 00"]);

    let mut lime = sample("milc/lat.sample.l4444.ildg");
    let second = 144 + 152; // the first record's payload is 149 bytes, padded to 152
    lime[second] = 0;
    let p = dir.put("lime", &lime);
    let e = read_err(&p);
    assert!(matches!(e, IoError::BadMagic { offset: 296, .. }), "{e:?}");
    assert_message(
        &e,
        &p,
        &[
            "LIME record header #1",
            "expected 0x456789ab",
            "found 0x006789ab",
        ],
    );

    // Each format's own reader insists on its own signature.
    let e = read_lime_gauge(data("milc/lat.sample.l4444"), &ReadOptions::default()).unwrap_err();
    assert!(matches!(e, IoError::BadMagic { offset: 0, .. }), "{e:?}");
    let e = read_milc(data("tmlqcd/conf.48"), &ReadOptions::default()).unwrap_err();
    assert_message(
        &e,
        &data("tmlqcd/conf.48"),
        &["MILC v5 header", "found 0x456789ab"],
    );

    let nersc = replace_once(
        &sample("chroma/t_nersc.cfg"),
        "BEGIN_HEADER",
        "BEGIN_HEADOR",
    );
    let p = dir.put("nersc", &nersc);
    let e = read_nersc(&p, &ReadOptions::default()).unwrap_err();
    assert!(matches!(e, IoError::BadMagic { .. }), "{e:?}");
    assert_message(&e, &p, &["`BEGIN_HEADER`", "BEGIN_HEADOR"]);
}

#[test]
fn checksum_mismatches_show_recorded_and_computed_sums_in_hex() {
    let dir = TempDir::new("checksum");
    let mut milc = sample("milc/lat.sample.l4444");
    milc[1000] ^= 0x10;
    let p = dir.put("milc", &milc);
    let e = read_err(&p);
    assert!(matches!(e, IoError::ChecksumMismatch { .. }), "{e:?}");
    assert_message(
        &e,
        &p,
        &[
            "sum29",
            "expected sum29 = 02352c05, sum31 = d137321d",
            "computed sum29 = ",
        ],
    );

    let mut nersc = sample("chroma/t_nersc.cfg");
    let at = nersc_payload_start(&nersc) + 7;
    nersc[at] ^= 0x01;
    let p = dir.put("nersc", &nersc);
    let e = read_err(&p);
    assert!(matches!(e, IoError::ChecksumMismatch { .. }), "{e:?}");
    // One byte 3 places from the end of a big-endian word changed by 1 << 8 (or −1 << 8).
    assert_message(&e, &p, &["NERSC CHECKSUM", "expected 717938df"]);

    let mut conf = sample("tmlqcd/conf.48");
    let at = lime_payload(&conf, "ildg-binary-data").start + 12345;
    conf[at] ^= 0x80;
    let p = dir.put("lime", &conf);
    let e = read_err(&p);
    assert!(matches!(e, IoError::ChecksumMismatch { .. }), "{e:?}");
    assert_message(
        &e,
        &p,
        &[
            "scidac-checksum",
            "expected suma = 1c231a18, sumb = 003c553b",
        ],
    );
}

/// With `ChecksumPolicy::Warn` (`--ignore-checksum`) a file whose recorded checksum
/// disagrees is read, and the mismatch is recorded with the expected and computed sums.
#[test]
fn ignored_checksum_mismatches_are_read_and_recorded() {
    let dir = TempDir::new("checksum-ignored");
    let warn = ReadOptions {
        checksum: ChecksumPolicy::Warn,
        ..ReadOptions::default()
    };
    // The lowest byte of a stored real: the links stay unitary to rounding.
    let mut milc = sample("milc/lat.sample.l4444");
    milc[1000] ^= 0x10;
    let mut nersc = sample("chroma/t_nersc.cfg");
    let at = nersc_payload_start(&nersc) + 7;
    nersc[at] ^= 0x01;
    let mut conf = sample("tmlqcd/conf.48");
    let at = lime_payload(&conf, "ildg-binary-data").start + 12343;
    conf[at] ^= 0x80;
    let cases = [
        (milc, "MILC checksum", "sum29 = 02352c05, sum31 = d137321d"),
        (nersc, "NERSC CHECKSUM", "717938df"),
        (conf, "SciDAC checksum", "suma = 1c231a18, sumb = 003c553b"),
    ];
    for (i, (bytes, what_needle, expected_sums)) in cases.into_iter().enumerate() {
        let p = dir.put(&format!("f{i}"), &bytes);
        assert!(matches!(read_err(&p), IoError::ChecksumMismatch { .. }));
        let f = read_gauge(&p, &warn).unwrap_or_else(|e| panic!("{e}"));
        let ignored: Vec<_> = f
            .checks
            .iter()
            .filter_map(|c| match c {
                Check::ChecksumMismatchIgnored {
                    what,
                    expected,
                    computed,
                } => Some((what.clone(), expected.clone(), computed.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(ignored.len(), 1, "{:?}", f.checks);
        let (what, expected, computed) = &ignored[0];
        assert!(what.contains(what_needle), "{what}");
        assert_eq!(expected, expected_sums);
        assert_ne!(computed, expected);
    }
}

/// A MILC file of a pre-v5 format (magic, dims, then `rest`), little-endian.
fn milc_legacy_file(magic: u32, dims: [u32; 4], rest: &[&[u8]]) -> Vec<u8> {
    let mut bytes = magic.to_le_bytes().to_vec();
    for d in dims {
        bytes.extend_from_slice(&d.to_le_bytes());
    }
    for r in rest {
        bytes.extend_from_slice(r);
    }
    bytes
}

/// MILC's pre-v5 files have no checksum: a payload of the wrong size, a site order other
/// than natural and an impossible header size are errors naming the format and field.
#[test]
fn milc_pre_v5_defects_are_named() {
    let dir = TempDir::new("milc-legacy");
    let payload = &sample("milc/lat.sample.l4444")[96..];
    let c = [0u8; 8]; // c1, c2
    let short = milc_legacy_file(59354, [4, 4, 4, 4], &[&c, &payload[..1000]]);
    let p = dir.put("short", &short);
    let e = read_err(&p);
    assert!(matches!(e, IoError::Truncated { .. }), "{e:?}");
    assert_message(
        &e,
        &p,
        &["MILC version 1–4 payload", "expected 73728 bytes"],
    );
    let long = milc_legacy_file(59354, [4, 4, 4, 4], &[&c, payload, &[0; 4]]);
    let p = dir.put("long", &long);
    assert!(matches!(read_err(&p), IoError::SizeMismatch { .. }));
    let dims = milc_legacy_file(59354, [4, 4, 4, 6], &[&c, payload]);
    let p = dir.put("dims", &dims);
    assert_message(
        &read_err(&p),
        &p,
        &[
            "MILC version 1–4 payload of a 4×4×4×6 lattice",
            "expected 110592 bytes",
        ],
    );
    // 1996: header_bytes and order are header fields.
    let (h32, zero) = (32u32.to_le_bytes(), 0u32.to_le_bytes());
    let node_dump = milc_legacy_file(
        53546,
        [4; 4],
        &[&h32, &1u32.to_le_bytes(), &zero, &zero, payload],
    );
    let p = dir.put("order", &node_dump);
    let e = read_err(&p);
    assert!(matches!(e, IoError::Unsupported { .. }), "{e:?}");
    assert_message(
        &e,
        &p,
        &["site order of a MILC 1996 format file", "found \"1\""],
    );
    let tiny = milc_legacy_file(53546, [4; 4], &[&3u32.to_le_bytes(), &zero, payload]);
    let p = dir.put("header-bytes", &tiny);
    assert_message(
        &read_err(&p),
        &p,
        &["header_bytes (offset 20)", "at least 28", "found 3"],
    );
    // Four bytes: the magic alone.
    let p = dir.put("magic-only", &59354u32.to_le_bytes());
    assert!(matches!(read_err(&p), IoError::Truncated { .. }));
}

/// A plaquette or link trace recorded in LIME metadata that disagrees with the links is
/// an error naming the record, the recorded and the computed value.
#[test]
fn lime_metadata_observables_that_disagree_with_the_links_are_rejected() {
    let dir = TempDir::new("lime-observables");
    let conf = sample("tmlqcd/conf.48");
    // tmLQCD's xlf-info "plaquette = 6.350056e-01", changed by 1e-5.
    let p = dir.put(
        "xlf",
        &replace_once(
            &conf,
            "plaquette = 6.350056e-01",
            "plaquette = 6.350156e-01",
        ),
    );
    let e = read_err(&p);
    assert!(matches!(e, IoError::ObservableMismatch { .. }), "{e:?}");
    assert_message(
        &e,
        &p,
        &[
            "`xlf-info` plaquette mismatch",
            "expected 0.6350156",
            "computed 0.63500557",
        ],
    );
    let p = dir.put(
        "xlf-garbage",
        &replace_once(
            &conf,
            "plaquette = 6.350056e-01",
            "plaquette = 6.35005Xe-01",
        ),
    );
    assert_message(
        &read_err(&p),
        &p,
        &["xlf-info", "6.35005Xe-01", "a finite number"],
    );
}

#[test]
fn header_dimensions_that_disagree_with_the_payload_are_rejected() {
    let dir = TempDir::new("dims");
    let milc = sample("milc/lat.sample.l4444");
    // Lt = 2: the file holds twice the payload the header implies.
    let p = dir.put("milc-lt2", &with_le_u32(&milc, 16, 2));
    let e = read_err(&p);
    assert!(
        matches!(
            e,
            IoError::SizeMismatch {
                dims: [4, 4, 4, 2],
                expected: 36864,
                found: 73728,
                ..
            }
        ),
        "{e:?}"
    );
    assert_message(&e, &p, &["needs 36864 bytes, found 73728"]);
    // Lt = 8: half the payload is missing.
    let p = dir.put("milc-lt8", &with_le_u32(&milc, 16, 8));
    let e = read_err(&p);
    assert!(
        matches!(
            e,
            IoError::Truncated {
                expected: 147456,
                found: 73728,
                ..
            }
        ),
        "{e:?}"
    );

    let nersc = replace_once(
        &sample("chroma/t_nersc.cfg"),
        "DIMENSION_4 = 4",
        "DIMENSION_4 = 2",
    );
    let p = dir.put("nersc", &nersc);
    assert!(matches!(
        read_err(&p),
        IoError::SizeMismatch {
            expected: 24576,
            found: 49152,
            ..
        }
    ));

    let conf = replace_once(&sample("tmlqcd/conf.48"), "<lt> 8 </lt>", "<lt> 4 </lt>");
    let p = dir.put("ildg", &conf);
    let e = read_err(&p);
    assert!(
        matches!(
            e,
            IoError::SizeMismatch {
                dims: [4, 4, 4, 4],
                expected: 147456,
                found: 294912,
                ..
            }
        ),
        "{e:?}"
    );
    assert_message(&e, &p, &["ildg-binary-data"]);

    // Two records of one file disagreeing about the lattice.
    let ildg = replace_once(
        &sample("milc/lat.sample.l4444.ildg"),
        "<lt>4</lt>",
        "<lt>2</lt>",
    );
    let p = dir.put("ildg-disagree", &ildg);
    let e = read_err(&p);
    assert!(matches!(e, IoError::BadHeader { .. }), "{e:?}");
    assert_message(
        &e,
        &p,
        &[
            "scidac-private-file-xml",
            "[4, 4, 4, 2]",
            "found [4, 4, 4, 4]",
        ],
    );
}

/// The geometry error inside an [`IoError::BadLattice`].
fn geometry_error(e: &IoError) -> Option<&GeometryError> {
    match e {
        IoError::BadLattice { source, .. } => Some(source),
        _ => None,
    }
}

#[test]
fn absurd_dimensions_are_rejected_before_any_allocation() {
    let dir = TempDir::new("absurd");
    let milc = sample("milc/lat.sample.l4444");
    let mut huge = milc.clone();
    for mu in 0..4 {
        huge = with_le_u32(&huge, 4 + 4 * mu, 1 << 30);
    }
    let p = dir.put("overflow", &huge);
    let e = read_err(&p);
    assert!(
        matches!(
            geometry_error(&e),
            Some(GeometryError::VolumeOverflow { .. })
        ),
        "{e:?}"
    );
    assert_message(
        &e,
        &p,
        &[
            "MILC header dims",
            "[1073741824, 1073741824, 1073741824, 1073741824]",
        ],
    );

    let p = dir.put("negative", &with_le_u32(&milc, 8, (-4i32) as u32));
    let e = read_err(&p);
    assert!(matches!(e, IoError::BadHeader { .. }), "{e:?}");
    assert_message(&e, &p, &["[4, -4, 4, 4]"]);

    let p = dir.put("odd", &with_le_u32(&milc, 4, 3));
    assert!(matches!(
        geometry_error(&read_err(&p)),
        Some(GeometryError::OddExtent { extent: 3, .. })
    ));

    // Valid but enormous (2³⁰ sites, 288 GiB of links): compared with the file size first.
    let mut big = milc.clone();
    for (mu, l) in [512u32, 512, 512, 8].into_iter().enumerate() {
        big = with_le_u32(&big, 4 + 4 * mu, l);
    }
    let p = dir.put("big", &big);
    let e = read_err(&p);
    assert!(
        matches!(
            e,
            IoError::Truncated {
                expected: 309237645312,
                found: 73728,
                ..
            }
        ),
        "{e:?}"
    );

    let nersc = sample("chroma/t_nersc.cfg");
    let p = dir.put(
        "nersc-text",
        &replace_once(&nersc, "DIMENSION_1 = 4", "DIMENSION_1 = four"),
    );
    let e = read_err(&p);
    assert!(matches!(e, IoError::Malformed { .. }), "{e:?}");
    assert_message(&e, &p, &["DIMENSION_1", "expected an integer", "\"four\""]);
    let p = dir.put(
        "nersc-big",
        &replace_once(
            &nersc,
            "DIMENSION_1 = 4",
            "DIMENSION_1 = 100000000000000000",
        ),
    );
    assert!(matches!(
        geometry_error(&read_err(&p)),
        Some(GeometryError::VolumeOverflow { .. })
    ));

    let conf = replace_once(&sample("tmlqcd/conf.48"), "<lx> 4 </lx>", "<lx>-4 </lx>");
    let p = dir.put("ildg-negative", &conf);
    assert!(matches!(read_err(&p), IoError::BadHeader { .. }));
}

/// The 4³×8 tmLQCD configuration, in f64, with one link changed by `edit`.
fn edited_field(edit: impl FnOnce(&mut qdsl::core::math::ColourMatrix<f64>)) -> GaugeField<f64> {
    let mut field = read_gauge(data("tmlqcd/conf.48"), &ReadOptions::default())
        .unwrap()
        .field;
    let cb = field.lattice().cb_index(BAD_SITE);
    edit(field.link_mut(cb, BAD_MU));
    field
}

const BAD_SITE: [usize; 4] = [1, 2, 3, 5];
const BAD_MU: usize = 2;

/// Writes `field` in every format (MILC f32; NERSC, ILDG, openQCD f64) and returns the paths.
fn write_everywhere(dir: &TempDir, field: &GaugeField<f64>) -> Vec<PathBuf> {
    let paths: Vec<PathBuf> = ["milc", "nersc", "ildg", "openqcd"]
        .iter()
        .map(|n| dir.file(n))
        .collect();
    write_milc(&paths[0], field, &MilcWriteOptions::default()).unwrap();
    write_nersc(&paths[1], field, &NerscWriteOptions::default()).unwrap();
    write_lime_gauge(&paths[2], field, &LimeWriteOptions::default()).unwrap();
    write_openqcd(&paths[3], field).unwrap();
    paths
}

#[test]
fn non_unitary_links_are_reported_with_site_direction_and_deviation() {
    let dir = TempDir::new("unitary");
    // Scaling a unitary link by 1.001 gives ‖U†U − 1‖_F = (1.001² − 1) √3 ≈ 3.466e-3.
    let field = edited_field(|u| *u = u.scale(1.001));
    for p in write_everywhere(&dir, &field) {
        let e = read_err(&p);
        match &e {
            IoError::NonUnitary {
                coords,
                mu,
                deviation,
                tolerance,
                ..
            } => {
                assert_eq!((*coords, *mu), (BAD_SITE, BAD_MU), "{}", p.display());
                assert!(
                    (deviation - 0.002001 * 3f64.sqrt()).abs() < 1e-6,
                    "{deviation}"
                );
                assert!(tolerance < deviation);
            }
            other => panic!("{}: expected NonUnitary, got {other:?}", p.display()),
        }
        assert_message(
            &e,
            &p,
            &[
                "U_2(x = [1, 2, 3, 5])",
                "not unitary",
                "expected ‖U†U − 1‖ ≤",
            ],
        );
        // The same file reads once the check is off.
        assert!(read_gauge(&p, &ReadOptions::smeared_links()).is_ok());
    }
}

#[test]
fn nan_in_a_payload_is_reported_with_site_and_direction() {
    let dir = TempDir::new("nan");
    let field = edited_field(|u| u.0[1][0].im = f64::NAN);
    for p in write_everywhere(&dir, &field) {
        let e = read_gauge(&p, &ReadOptions::smeared_links()).unwrap_err();
        assert!(
            matches!(
                e,
                IoError::NonFinite {
                    coords: BAD_SITE,
                    mu: BAD_MU,
                    component: 7,
                    ..
                }
            ),
            "{}: {e:?}",
            p.display()
        );
        assert_message(
            &e,
            &p,
            &["non-finite", "component 7", "NaN", "expected finite"],
        );
    }
}

#[test]
fn unsupported_types_and_malformed_headers_are_named() {
    let dir = TempDir::new("unsupported");
    let nersc = sample("chroma/t_nersc.cfg");
    let cases: [(&str, &str, &[&str]); 4] = [
        (
            "DATATYPE = 4D_SU3_GAUGE",
            "DATATYPE = 4D_SU2_GAUGE",
            &["NERSC DATATYPE", "\"4D_SU2_GAUGE\"", "4D_SU3_GAUGE_3x3"],
        ),
        (
            "FLOATING_POINT = IEEE32BIG",
            "FLOATING_POINT = VAX_F",
            &["FLOATING_POINT", "\"VAX_F\"", "IEEE64LITTLE"],
        ),
        (
            "HDR_VERSION = 1.0",
            "HDR_VERSION 1.0",
            &["NERSC header line", "line 6", "KEY = VALUE"],
        ),
        (
            "CHECKSUM = 717938df",
            "CHECKSUN = 717938df",
            &["missing NERSC header key CHECKSUM"],
        ),
    ];
    for (i, (from, to, needles)) in cases.into_iter().enumerate() {
        let p = dir.put(&format!("nersc{i}"), &replace_once(&nersc, from, to));
        assert_message(&read_err(&p), &p, needles);
    }

    let milc = with_le_u32(&sample("milc/lat.sample.l4444"), 84, 1);
    let p = dir.put("milc-order", &milc);
    let e = read_err(&p);
    assert!(matches!(e, IoError::Unsupported { .. }), "{e:?}");
    assert_message(
        &e,
        &p,
        &[
            "MILC site order",
            "\"1\"",
            "0 (natural lexicographic order)",
        ],
    );

    let scidac = sample("milc/lat.sample.l8");
    let ildg = sample("tmlqcd/conf.48");
    let lime_cases: [(&Vec<u8>, &str, &str, &[&str]); 5] = [
        (
            &scidac,
            "<precision>F</precision>",
            "<precision>Q</precision>",
            &["<precision>", "\"Q\"", "F, S, D"],
        ),
        (
            &ildg,
            "<field> su3gauge </field>",
            "<field> su2gauge </field>",
            &["<field>", "\"su2gauge\""],
        ),
        (
            &ildg,
            "</lx>",
            "</lq>",
            &["malformed XML element <lx>", "</lx>"],
        ),
        (
            &ildg,
            "<suma>0x1c231a18",
            "<suma>0xzc231a18",
            &["<suma>", "hexadecimal", "0xzc231a18"],
        ),
        (
            &ildg,
            "ildg-binary-data",
            "ildg-binary-datx",
            &["missing LIME record `ildg-binary-data`"],
        ),
    ];
    for (i, (file, from, to, needles)) in lime_cases.into_iter().enumerate() {
        let p = dir.put(&format!("lime{i}"), &replace_once(file, from, to));
        assert_message(&read_err(&p), &p, needles);
    }
}

#[test]
fn header_observables_that_disagree_with_the_links_are_rejected() {
    let dir = TempDir::new("observables");
    let nersc = sample("chroma/t_nersc.cfg");
    // Changes of 1e-5, above the f32 tolerance (16 ε ≈ 1.9e-6).
    let p = dir.put(
        "plaq",
        &replace_once(&nersc, "0.0382422893", "0.0382522893"),
    );
    let e = read_err(&p);
    assert!(
        matches!(e, IoError::ObservableMismatch { recorded, .. } if recorded == 0.0382522893),
        "{e:?}"
    );
    assert_message(
        &e,
        &p,
        &[
            "PLAQUETTE mismatch",
            "expected 0.0382522893",
            "computed 0.03824228",
        ],
    );
    let p = dir.put(
        "trace",
        &replace_once(&nersc, "0.4630322094", "0.4630422094"),
    );
    assert_message(&read_err(&p), &p, &["LINK_TRACE mismatch"]);

    let field = read_gauge(data("tmlqcd/conf.48"), &ReadOptions::default())
        .unwrap()
        .field;
    let good = dir.file("good.oqcd");
    write_openqcd(&good, &field).unwrap();
    let mut bytes = std::fs::read(&good).unwrap();
    bytes[16..24].copy_from_slice(&1.9f64.to_le_bytes());
    let p = dir.put("openqcd", &bytes);
    let e = read_err(&p);
    assert!(
        matches!(e, IoError::ObservableMismatch { recorded, .. } if recorded == 1.9),
        "{e:?}"
    );
    // 3 P = 3 × 0.63500557222887.
    assert_message(&e, &p, &["openQCD plaquette", "computed 1.90501671668"]);
    // openQCD files have no magic: wrong dimensions only show against the file size.
    let mut bytes = std::fs::read(&good).unwrap();
    bytes[0..4].copy_from_slice(&4i32.to_le_bytes());
    let p = dir.put("openqcd-dims", &bytes);
    assert!(matches!(read_err(&p), IoError::UnknownFormat { .. }));
    assert!(matches!(
        read_openqcd(&p, &ReadOptions::default()),
        Err(IoError::SizeMismatch {
            dims: [4, 4, 4, 4],
            ..
        })
    ));
}

/// Knuth's MMIX linear congruential generator: deterministic test randomness.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The real files, each with the byte range its checksum covers.
fn fuzz_targets() -> Vec<(&'static str, std::ops::Range<usize>)> {
    let milc = sample("milc/lat.sample.l4444").len();
    let nersc = sample("chroma/t_nersc.cfg");
    let mut targets = vec![
        ("milc/lat.sample.l4444", 96..milc),
        (
            "chroma/t_nersc.cfg",
            nersc_payload_start(&nersc)..nersc.len(),
        ),
    ];
    for (rel, record) in [
        ("milc/lat.sample.l4444.ildg", "ildg-binary-data"),
        ("milc/lat.sample.l8", "scidac-binary-data"),
        ("milc/fat.l8", "scidac-binary-data"),
        ("milc/long.l8", "scidac-binary-data"),
        ("tmlqcd/conf.48", "ildg-binary-data"),
        ("pyquda/weak_field.lime", "ildg-binary-data"),
    ] {
        targets.push((rel, lime_payload(&sample(rel), record)));
    }
    targets
}

/// Reads `path` and fails the test if the reader panics.
fn read_without_panic(path: &Path) -> Result<(), IoError> {
    let options = ReadOptions::smeared_links();
    match std::panic::catch_unwind(|| read_gauge(path, &options)) {
        Ok(result) => result.map(|_| ()),
        Err(_) => panic!("reader panicked on {}", path.display()),
    }
}

#[test]
fn corrupted_and_truncated_copies_never_panic_and_payload_damage_fails_the_checksum() {
    let dir = TempDir::new("fuzz");
    let mut rng = Lcg(0x5eed_0d51);
    for (rel, payload) in fuzz_targets() {
        let original = sample(rel);
        let path = dir.file("copy");
        let mut payload_flips = 0;
        let mut caught = 0;
        for round in 0..200 {
            let mut bytes = original.clone();
            match round % 4 {
                // Truncation anywhere, including 0 bytes and inside headers.
                0 => {
                    let len = if round < 8 {
                        round * 37
                    } else {
                        rng.below(bytes.len())
                    };
                    bytes.truncate(len);
                }
                // A few random bytes anywhere.
                1 => {
                    for _ in 0..1 + rng.below(4) {
                        let i = rng.below(bytes.len());
                        bytes[i] = rng.next() as u8;
                    }
                }
                // One flipped bit in the first 512 bytes (headers, record types, XML).
                2 => {
                    let i = rng.below(512.min(bytes.len()));
                    bytes[i] ^= 1 << rng.below(8);
                }
                // One flipped bit in the payload the checksum covers.
                _ => {
                    let i = payload.start + rng.below(payload.len());
                    bytes[i] ^= 1 << rng.below(8);
                    payload_flips += 1;
                }
            }
            std::fs::write(&path, &bytes).unwrap();
            let result = read_without_panic(&path);
            if round % 4 == 3 && matches!(result, Err(IoError::ChecksumMismatch { .. })) {
                caught += 1;
            }
        }
        // Each checksum changes under any single-bit change of its payload (MILC's rotated
        // XOR and SciDAC's CRC are injective in one word; NERSC's sum moves by ±2^k), so
        // every flip is caught.
        assert_eq!(
            caught, payload_flips,
            "{rel}: {caught} of {payload_flips} payload flips caught"
        );
    }
}
