//! Gauge-file I/O against the real configurations in `tests/data` (written by MILC,
//! Chroma, tmLQCD, openQCD and PyQUDA; values recorded by those codes are in
//! `tests/data/README.md`), and write → read round trips for every format and option.

use qdsl::core::field::GaugeField;
use qdsl::core::gauge::plaquette;
use qdsl::core::io::lime::{find_record, parse_lime};
use qdsl::core::io::lime_gauge::{write_lime_gauge, LimeWriteOptions};
use qdsl::core::io::milc::{write_milc, MilcWriteOptions};
use qdsl::core::io::nersc::{write_nersc, NerscWriteOptions};
use qdsl::core::io::openqcd::write_openqcd;
use qdsl::core::io::{
    read_gauge, unitarity_limit, ByteOrder, Check, GaugeFile, GaugeFileFormat, IoError,
    LimeFlavour, MilcLegacyVersion, NerscStorage, Precision, ReadOptions, UnitarityCheck,
};
mod common;

use common::{data, TempDir};
use std::path::Path;

/// The smeared-link files (not SU(3)) among the samples.
fn is_smeared(rel: &str) -> bool {
    rel.ends_with("fat.l8") || rel.ends_with("long.l8")
}

fn read_sample(rel: &str) -> GaugeFile {
    let options = if is_smeared(rel) {
        ReadOptions::smeared_links()
    } else {
        ReadOptions::default()
    };
    read_gauge(data(rel), &options).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn has_checksum(f: &GaugeFile) -> bool {
    f.checks.iter().any(|c| {
        matches!(
            c,
            Check::MilcChecksum { .. } | Check::NerscChecksum(_) | Check::ScidacChecksum { .. }
        )
    })
}

/// A checksum verified, or for openQCD files (which have none) the header plaquette.
fn has_verified_record(f: &GaugeFile) -> bool {
    has_checksum(f)
        || (f.format == GaugeFileFormat::OpenQcd
            && f.checks
                .iter()
                .any(|c| matches!(c, Check::Observable { .. })))
}

/// Largest |Δ| over all real components of all links.
fn max_link_difference(a: &GaugeField<f64>, b: &GaugeField<f64>) -> f64 {
    assert_eq!(a.lattice(), b.lattice());
    a.links()
        .iter()
        .zip(b.links())
        .flat_map(|(u, v)| {
            let (u, v) = (u.to_reals(), v.to_reals());
            (0..18).map(move |i| (u[i] - v[i]).abs())
        })
        .fold(0.0, f64::max)
}

#[test]
fn every_sample_file_reads_with_its_format_recognised_by_content() {
    let expected: [(&str, GaugeFileFormat, Precision, [usize; 4]); 9] = [
        (
            "openqcd/gauge.bc_0.bin",
            GaugeFileFormat::OpenQcd,
            Precision::Double,
            [4; 4],
        ),
        (
            "milc/lat.sample.l4444",
            GaugeFileFormat::Milc,
            Precision::Single,
            [4; 4],
        ),
        (
            "milc/lat.sample.l4444.ildg",
            GaugeFileFormat::Lime(LimeFlavour::Ildg),
            Precision::Single,
            [4; 4],
        ),
        (
            "milc/lat.sample.l8",
            GaugeFileFormat::Lime(LimeFlavour::Scidac),
            Precision::Single,
            [8; 4],
        ),
        (
            "milc/fat.l8",
            GaugeFileFormat::Lime(LimeFlavour::Scidac),
            Precision::Single,
            [8; 4],
        ),
        (
            "milc/long.l8",
            GaugeFileFormat::Lime(LimeFlavour::Scidac),
            Precision::Single,
            [8; 4],
        ),
        (
            "tmlqcd/conf.48",
            GaugeFileFormat::Lime(LimeFlavour::Ildg),
            Precision::Double,
            [4, 4, 4, 8],
        ),
        (
            "chroma/t_nersc.cfg",
            GaugeFileFormat::Nersc(NerscStorage::TwoRow),
            Precision::Single,
            [4; 4],
        ),
        (
            "pyquda/weak_field.lime",
            GaugeFileFormat::Lime(LimeFlavour::Ildg),
            Precision::Double,
            [4, 4, 4, 8],
        ),
    ];
    let mut listed = 0;
    for (rel, format, precision, dims) in expected {
        let f = read_sample(rel);
        assert_eq!(f.format, format, "{rel}");
        assert_eq!(f.precision, precision, "{rel}");
        assert_eq!(f.field.lattice().dims(), dims, "{rel}");
        assert!(
            has_verified_record(&f),
            "{rel}: no checksum verified: {:?}",
            f.checks
        );
        listed += 1;
    }
    // Every gauge file in tests/data is one of those listed (MILC's colour vectors
    // `ksvector.*` are fermion files, read in io_fermion_files.rs).
    let mut on_disk = 0;
    for dir in std::fs::read_dir(data("")).unwrap() {
        let dir = dir.unwrap().path();
        if dir.is_dir() {
            on_disk += std::fs::read_dir(dir)
                .unwrap()
                .filter(|f| {
                    !f.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .starts_with("ksvector.")
                })
                .count();
        }
    }
    assert_eq!(on_disk, listed);
}

#[test]
fn milc_plaquettes_match_milc_printout() {
    // MILC: ss = 1.794675, st = 1.774426 for the 4⁴ sample, in both of its files.
    for rel in ["milc/lat.sample.l4444", "milc/lat.sample.l4444.ildg"] {
        let p = plaquette(&read_sample(rel).field);
        assert!(
            (p.spatial - 1.794675).abs() < 1e-6,
            "{rel}: ss = {}",
            p.spatial
        );
        assert!(
            (p.temporal - 1.774426).abs() < 1e-6,
            "{rel}: st = {}",
            p.temporal
        );
        assert!((p.average - (1.794675 + 1.774426) / 6.0).abs() < 1e-6);
    }
    // MILC: ss = 2.6203978710714737, st = 2.6214473754080179 (as f64 literals below).
    let p = plaquette(&read_sample("milc/lat.sample.l8").field);
    assert!(
        (p.spatial - 2.6203978710714737).abs() < 1e-6,
        "ss = {}",
        p.spatial
    );
    assert!(
        (p.temporal - 2.621447375408018).abs() < 1e-6,
        "st = {}",
        p.temporal
    );
}

#[test]
fn milc_binary_and_ildg_files_hold_the_same_links() {
    let bin = read_sample("milc/lat.sample.l4444");
    let ildg = read_sample("milc/lat.sample.l4444.ildg");
    assert_eq!(bin.byte_order, ByteOrder::Little);
    assert_eq!(ildg.byte_order, ByteOrder::Big);
    let d = max_link_difference(&bin.field, &ildg.field);
    assert!(d <= f32::EPSILON as f64, "max difference {d}");
}

#[test]
fn tmlqcd_plaquette_and_scidac_checksum_match_recorded_values() {
    let f = read_sample("tmlqcd/conf.48");
    let p = plaquette(&f.field).average;
    assert!((p - 0.63500557222887).abs() < 1e-12, "P = {p}");
    assert!(f.checks.contains(&Check::ScidacChecksum {
        suma: 0x1c23_1a18,
        sumb: 0x003c_553b
    }));
    assert!(f
        .metadata_value("xlf-info")
        .unwrap()
        .contains("plaquette = 6.350056e-01"));
}

#[test]
fn chroma_nersc_header_checksum_plaquette_and_link_trace_are_verified() {
    let f = read_sample("chroma/t_nersc.cfg");
    assert_eq!(f.byte_order, ByteOrder::Big);
    assert!(f.checks.contains(&Check::NerscChecksum(0x7179_38df)));
    for (name, value) in [("PLAQUETTE", 0.0382422893), ("LINK_TRACE", 0.4630322094)] {
        let found = f.checks.iter().find_map(|c| match c {
            Check::Observable {
                name: n,
                recorded,
                computed,
                ..
            } if n == name => Some((*recorded, *computed)),
            _ => None,
        });
        let (recorded, computed) = found.unwrap_or_else(|| panic!("{name} not verified"));
        assert_eq!(recorded, value);
        // The header prints 10 decimals of a value computed from f32 links.
        assert!((computed - value).abs() < 1e-8, "{name}: {computed}");
    }
    assert_eq!(f.metadata_value("CHECKSUM"), Some("717938df"));
}

#[test]
fn pyquda_weak_field_is_near_unit_and_unitary() {
    let f = read_sample("pyquda/weak_field.lime");
    let p = plaquette(&f.field).average;
    assert!((p - 0.9948).abs() < 1e-3, "P = {p}");
    let worst = f
        .field
        .links()
        .iter()
        .map(|u| u.unitarity_deviation())
        .fold(0.0, f64::max);
    assert!(worst < 1e-13, "‖U†U − 1‖ = {worst}");
}

#[test]
fn fat_and_long_links_read_only_without_the_unitarity_check() {
    for rel in ["milc/fat.l8", "milc/long.l8"] {
        match read_gauge(data(rel), &ReadOptions::default()) {
            Err(IoError::NonUnitary {
                deviation,
                tolerance,
                ..
            }) => assert!(deviation > tolerance),
            other => panic!("{rel}: expected NonUnitary, got {other:?}"),
        }
        let f = read_sample(rel);
        assert!(f.checks.iter().any(|c| matches!(
            c,
            Check::Links {
                tolerance: None,
                ..
            }
        )));
        assert!(f.metadata_value("scidac-record-xml").is_some());
    }
}

#[test]
fn ambiguous_nersc_floating_point_picks_the_byte_order_that_checks_out() {
    let dir = TempDir::new("ambiguous");
    let field = read_sample("chroma/t_nersc.cfg").field;
    for order in [ByteOrder::Big, ByteOrder::Little] {
        let path = dir.file("amb.cfg");
        let options = NerscWriteOptions {
            precision: Precision::Single,
            byte_order: order,
            storage: NerscStorage::TwoRow,
            extra_header: vec![],
        };
        write_nersc(&path, &field, &options).unwrap();
        let text = std::fs::read(&path).unwrap();
        let explicit = if order == ByteOrder::Big {
            "IEEE32BIG"
        } else {
            "IEEE32LITTLE"
        };
        let relabelled = replace_once(&text, explicit.as_bytes(), b"IEEE32");
        std::fs::write(&path, relabelled).unwrap();
        let f = read_gauge(&path, &ReadOptions::default()).unwrap();
        assert_eq!(f.byte_order, order);
        assert_eq!(f.metadata_value("FLOATING_POINT"), Some("IEEE32"));
        assert_eq!(max_link_difference(&f.field, &field), 0.0);
    }
}

fn replace_once(data: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let i = data
        .windows(from.len())
        .position(|w| w == from)
        .expect("pattern present");
    [&data[..i], to, &data[i + from.len()..]].concat()
}

/// Our writers reproduce the other codes' bytes where the format leaves no freedom.
#[test]
fn writers_reproduce_payloads_and_checksums_of_other_codes() {
    let dir = TempDir::new("reproduce");
    // MILC: the whole file, header included (same time stamp, byte order).
    let milc = read_sample("milc/lat.sample.l4444");
    let path = dir.file("milc");
    let options = MilcWriteOptions {
        byte_order: ByteOrder::Little,
        time_stamp: milc.metadata_value("time_stamp").unwrap().to_string(),
    };
    write_milc(&path, &milc.field, &options).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(data("milc/lat.sample.l4444")).unwrap()
    );

    // Chroma's NERSC payload and CHECKSUM (two rows, IEEE32BIG).
    let nersc = read_sample("chroma/t_nersc.cfg");
    let options = NerscWriteOptions {
        precision: Precision::Single,
        byte_order: ByteOrder::Big,
        storage: NerscStorage::TwoRow,
        extra_header: vec![],
    };
    write_nersc(&path, &nersc.field, &options).unwrap();
    let ours = std::fs::read(&path).unwrap();
    let theirs = std::fs::read(data("chroma/t_nersc.cfg")).unwrap();
    assert_eq!(ours[ours.len() - 49152..], theirs[theirs.len() - 49152..]);
    assert!(String::from_utf8_lossy(&ours).contains("CHECKSUM = 717938df\n"));

    // ILDG binary data and SciDAC checksums of MILC (f32) and tmLQCD (f64).
    for (rel, precision) in [
        ("milc/lat.sample.l4444.ildg", Precision::Single),
        ("tmlqcd/conf.48", Precision::Double),
    ] {
        let f = read_sample(rel);
        let options = LimeWriteOptions {
            precision,
            ..LimeWriteOptions::default()
        };
        write_lime_gauge(&path, &f.field, &options).unwrap();
        let ours = std::fs::read(&path).unwrap();
        let theirs = std::fs::read(data(rel)).unwrap();
        let (ours_r, theirs_r) = (
            parse_lime(&ours, &path).unwrap(),
            parse_lime(&theirs, &path).unwrap(),
        );
        let binary = |r| find_record(r, "ildg-binary-data").unwrap().data;
        assert_eq!(binary(&ours_r), binary(&theirs_r), "{rel}");
        let sums = |c: &[Check]| {
            c.iter()
                .find(|c| matches!(c, Check::ScidacChecksum { .. }))
                .cloned()
        };
        assert_eq!(
            sums(&read_gauge(&path, &ReadOptions::default()).unwrap().checks),
            sums(&f.checks),
            "{rel}"
        );
    }
}

/// One writer configuration of the round-trip test.
#[derive(Debug, Clone)]
enum Writer {
    Milc(ByteOrder),
    Nersc(NerscWriteOptions),
    Lime(LimeWriteOptions),
    OpenQcd,
}

impl Writer {
    fn all() -> Vec<Writer> {
        let mut all = vec![
            Writer::Milc(ByteOrder::Little),
            Writer::Milc(ByteOrder::Big),
            Writer::OpenQcd,
        ];
        for precision in [Precision::Single, Precision::Double] {
            for byte_order in [ByteOrder::Big, ByteOrder::Little] {
                for storage in [NerscStorage::TwoRow, NerscStorage::Full] {
                    all.push(Writer::Nersc(NerscWriteOptions {
                        precision,
                        byte_order,
                        storage,
                        extra_header: vec![("ENSEMBLE_ID".into(), "qdsl-test".into())],
                    }));
                }
            }
            for flavour in [LimeFlavour::Ildg, LimeFlavour::Scidac] {
                all.push(Writer::Lime(LimeWriteOptions {
                    flavour,
                    precision,
                    date: Some("Thu Jan  1 00:00:00 1970 UTC".into()),
                    lfn: Some("lfn://qdsl/test".into()),
                    ..LimeWriteOptions::default()
                }));
            }
        }
        all
    }

    fn write(&self, path: &Path, field: &GaugeField<f64>) {
        match self {
            Writer::Milc(byte_order) => {
                let o = MilcWriteOptions {
                    byte_order: *byte_order,
                    time_stamp: "now".into(),
                };
                write_milc(path, field, &o)
            }
            Writer::Nersc(o) => write_nersc(path, field, o),
            Writer::Lime(o) => write_lime_gauge(path, field, o),
            Writer::OpenQcd => write_openqcd(path, field),
        }
        .unwrap_or_else(|e| panic!("{self:?}: {e}"))
    }

    fn precision(&self) -> Precision {
        match self {
            Writer::Milc(_) => Precision::Single,
            Writer::Nersc(o) => o.precision,
            Writer::Lime(o) => o.precision,
            Writer::OpenQcd => Precision::Double,
        }
    }

    fn two_rows(&self) -> bool {
        matches!(self, Writer::Nersc(o) if o.storage == NerscStorage::TwoRow)
    }
}

/// The field a reader must return after `writer` stored `field`: the stored precision's
/// rounding of every stored real (and, with two rows, a rebuilt third row, compared
/// separately).
fn check_read_back(writer: &Writer, field: &GaugeField<f64>, back: &GaugeField<f64>) {
    let rounded: GaugeField<f64> = match writer.precision() {
        Precision::Single => field.cast::<f32>().cast(),
        Precision::Double => field.clone(),
    };
    let stored_reals = if writer.two_rows() { 12 } else { 18 };
    for (u, v) in rounded.links().iter().zip(back.links()) {
        let (u, v) = (u.to_reals(), v.to_reals());
        assert_eq!(u[..stored_reals], v[..stored_reals], "{writer:?}");
        for i in stored_reals..18 {
            // Row 2 rebuilt from rounded rows 0 and 1 of an SU(3) link.
            assert!(
                (u[i] - v[i]).abs() < 100.0 * writer.precision().epsilon(),
                "{writer:?}"
            );
        }
    }
}

#[test]
fn write_read_write_round_trips_are_bit_identical_for_every_format_and_option() {
    let dir = TempDir::new("roundtrip");
    let field = read_sample("tmlqcd/conf.48").field;
    for (i, writer) in Writer::all().into_iter().enumerate() {
        let first = dir.file(&format!("w{i}-a"));
        let second = dir.file(&format!("w{i}-b"));
        writer.write(&first, &field);
        // Read back by content detection, with the default (strict) checks.
        let back = read_gauge(&first, &ReadOptions::default())
            .unwrap_or_else(|e| panic!("{writer:?}: {e}"));
        assert!(
            has_checksum(&back) || matches!(writer, Writer::OpenQcd),
            "{writer:?}: {:?}",
            back.checks
        );
        assert_eq!(back.precision, writer.precision());
        check_read_back(&writer, &field, &back.field);
        writer.write(&second, &back.field);
        assert_eq!(
            std::fs::read(&first).unwrap(),
            std::fs::read(&second).unwrap(),
            "{writer:?}"
        );
        let again = read_gauge(&second, &ReadOptions::default()).unwrap();
        assert_eq!(again.field, back.field, "{writer:?}");
    }
}

#[test]
fn non_unitary_links_round_trip_in_every_full_matrix_format() {
    let dir = TempDir::new("smeared");
    let fat = read_sample("milc/fat.l8").field;
    let options = ReadOptions {
        unitarity: UnitarityCheck::Off,
        ..ReadOptions::default()
    };
    for (i, writer) in Writer::all()
        .into_iter()
        .filter(|w| !w.two_rows())
        .enumerate()
    {
        let path = dir.file(&format!("fat{i}"));
        writer.write(&path, &fat);
        let back = read_gauge(&path, &options).unwrap_or_else(|e| panic!("{writer:?}: {e}"));
        check_read_back(&writer, &fat, &back.field);
    }
}

/// An openQCD file assembled by hand from the layout in openQCD's `archive.c` notes:
/// N0..N3, ⟨Re tr U_p⟩, then the 8 links at each odd point, x0 slowest, x3 fastest.
#[test]
fn openqcd_reader_follows_the_documented_layout() {
    let field = read_sample("tmlqcd/conf.48").field;
    let lat = *field.lattice();
    let [nx, ny, nz, nt] = lat.dims();
    let mut bytes = Vec::new();
    for n in [nt, nx, ny, nz] {
        bytes.extend_from_slice(&(n as i32).to_le_bytes());
    }
    bytes.extend_from_slice(&(3.0 * 0.63500557222887f64).to_le_bytes());
    let link = |c: [usize; 4], mu: usize| field.link_at(c, mu).to_reals();
    for x0 in 0..nt {
        for x1 in 0..nx {
            for x2 in 0..ny {
                for x3 in 0..nz {
                    if (x0 + x1 + x2 + x3) % 2 == 0 {
                        continue;
                    }
                    // openQCD direction 0 is time; its (x0, x1, x2, x3) is qdsl's (t, x, y, z).
                    let here = [x1, x2, x3, x0];
                    let back = [
                        [x1, x2, x3, (x0 + nt - 1) % nt],
                        [(x1 + nx - 1) % nx, x2, x3, x0],
                        [x1, (x2 + ny - 1) % ny, x3, x0],
                        [x1, x2, (x3 + nz - 1) % nz, x0],
                    ];
                    for (k, mu) in [3, 0, 1, 2].into_iter().enumerate() {
                        for c in [here, back[k]] {
                            for x in link(c, mu) {
                                bytes.extend_from_slice(&x.to_le_bytes());
                            }
                        }
                    }
                }
            }
        }
    }
    let dir = TempDir::new("openqcd");
    let path = dir.file("hand.oqcd");
    std::fs::write(&path, &bytes).unwrap();
    let f = read_gauge(&path, &ReadOptions::default()).unwrap();
    assert_eq!(f.format, GaugeFileFormat::OpenQcd);
    assert_eq!(f.field, field);
    // The recorded plaquette (tmLQCD's P, times 3) was verified.
    assert!(f
        .checks
        .iter()
        .any(|c| matches!(c, Check::Observable { .. })));
    // Our writer produces the same bytes, up to the last bits of the computed plaquette.
    write_openqcd(&path, &field).unwrap();
    let ours = std::fs::read(&path).unwrap();
    assert_eq!(ours[..16], bytes[..16]);
    assert_eq!(ours[24..], bytes[24..]);
}

/// The observables a reader checked, as (name, recorded, computed).
fn observables_checked(f: &GaugeFile) -> Vec<(String, f64, f64)> {
    f.checks
        .iter()
        .filter_map(|c| match c {
            Check::Observable {
                name,
                recorded,
                computed,
                ..
            } => Some((name.clone(), *recorded, *computed)),
            _ => None,
        })
        .collect()
}

/// tmLQCD records P in its `xlf-info` record ("plaquette = 6.350056e-01"); the reader
/// checks it to half a unit in the last printed digit. PyQUDA's and MILC's LIME samples
/// record no observable, so none is checked there.
#[test]
fn lime_metadata_plaquette_is_checked_where_recorded() {
    let checked = observables_checked(&read_sample("tmlqcd/conf.48"));
    assert_eq!(checked.len(), 1, "{checked:?}");
    let (name, recorded, computed) = &checked[0];
    assert_eq!(name, "`xlf-info` plaquette");
    assert_eq!(*recorded, 6.350056e-01);
    assert!((computed - 0.63500557222887).abs() < 1e-12);
    for rel in [
        "pyquda/weak_field.lime",
        "milc/lat.sample.l4444.ildg",
        "milc/lat.sample.l8",
    ] {
        assert!(observables_checked(&read_sample(rel)).is_empty(), "{rel}");
    }
}

/// MILC's usqcdInfo record XML (`<plaq>`, `<linktr>`) and info lines (`gauge.ssplaq`,
/// `gauge.stplaq`, `gauge.nersc_linktr`), written as MILC prints them, are checked
/// against the links.
#[test]
fn milc_usqcd_info_and_info_lines_in_lime_metadata_are_checked() {
    let dir = TempDir::new("lime-observables");
    let field = read_sample("milc/lat.sample.l4444").field;
    let p = plaquette(&field);
    let trace = qdsl::core::gauge::link_trace(&field);
    let record_xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><usqcdInfo><version>1.0</version>\
         <plaq>{:e}</plaq><linktr>{trace:e}</linktr><info>gauge.ssplaq = {:.6}\n\
         gauge.stplaq = {:.6}\ngauge.nersc_linktr = {trace:e}\n</info></usqcdInfo>",
        p.average, p.spatial, p.temporal
    );
    let path = dir.file("milc-info.lime");
    let options = LimeWriteOptions {
        precision: Precision::Single,
        record_xml,
        ..LimeWriteOptions::default()
    };
    write_lime_gauge(&path, &field, &options).unwrap();
    let f = read_gauge(&path, &ReadOptions::default()).unwrap();
    let names: Vec<String> = observables_checked(&f).into_iter().map(|c| c.0).collect();
    assert_eq!(
        names,
        [
            "`scidac-record-xml` <plaq>",
            "`scidac-record-xml` <linktr>",
            "`scidac-record-xml` gauge.ssplaq",
            "`scidac-record-xml` gauge.stplaq",
            "`scidac-record-xml` gauge.nersc_linktr",
        ]
    );
}

/// An ordinary f64 8⁴ file whose links deviate from unitarity by 6.5e-14 (as a tmLQCD
/// file of issue 15 does) is read; the default limit is ε · 256 · √(2 ln 4V).
#[test]
fn f64_links_at_rounding_level_pass_the_volume_scaled_unitarity_limit() {
    let dir = TempDir::new("unitarity-limit");
    let tiled = read_sample("tmlqcd/conf.48")
        .field
        .tiled([2, 2, 2, 1])
        .unwrap();
    assert_eq!(tiled.lattice().dims(), [8; 4]);
    let links = 4 * tiled.lattice().volume();
    let limit = unitarity_limit(Precision::Double, links);
    // U(1 + δ) has ‖U†U − 1‖_F = √3 (2δ + δ²).
    let scaled = |target: f64| {
        let delta = target / (2.0 * 3f64.sqrt());
        let mut u = tiled.clone();
        for l in u.links_mut() {
            *l = l.scale(1.0 + delta);
        }
        u
    };
    let path = dir.file("scaled.lime");
    write_lime_gauge(&path, &scaled(6.5e-14), &LimeWriteOptions::default()).unwrap();
    let f = read_gauge(&path, &ReadOptions::default()).unwrap();
    let found = f.checks.iter().find_map(|c| match c {
        Check::Links {
            max_unitarity_deviation,
            tolerance,
        } => Some((*max_unitarity_deviation, *tolerance)),
        _ => None,
    });
    let (deviation, tolerance) = found.unwrap();
    assert!(deviation > 6e-14 && deviation < 7.5e-14, "{deviation:e}");
    assert_eq!(tolerance, Some(limit));
    // Well above the limit (1e-11): refused, naming the limit.
    write_lime_gauge(&path, &scaled(1e-11), &LimeWriteOptions::default()).unwrap();
    match read_gauge(&path, &ReadOptions::default()) {
        Err(IoError::NonUnitary { tolerance, .. }) => assert_eq!(tolerance, limit),
        other => panic!("expected NonUnitary, got {other:?}"),
    }
    // An explicit tolerance overrides the default.
    let loose = ReadOptions {
        unitarity: UnitarityCheck::Within(1e-10),
        ..ReadOptions::default()
    };
    assert!(read_gauge(&path, &loose).is_ok());
}

/// MILC's pre-v5 formats, assembled from the layout of MILC's own readers
/// (`read_v3_gauge_hdr`, `read_1996_gauge_hdr`, `r_serial`): versions 1–4 (28-byte header:
/// magic 59354, dims, c1, c2) in both byte orders, and 1996 (magic 53546, dims,
/// header_bytes, order, descriptor; a 4-byte unused checksum) around the links of MILC's
/// v5 sample hold the same links as the sample.
#[test]
fn milc_pre_v5_files_read_as_milc_reads_them() {
    let dir = TempDir::new("milc-legacy");
    let v5 = read_sample("milc/lat.sample.l4444");
    let bytes = std::fs::read(data("milc/lat.sample.l4444")).unwrap();
    let little = &bytes[96..];
    let big: Vec<u8> = little
        .chunks_exact(4)
        .flat_map(|w| [w[3], w[2], w[1], w[0]])
        .collect();
    let word = |x: u32, order: ByteOrder| match order {
        ByteOrder::Little => x.to_le_bytes(),
        ByteOrder::Big => x.to_be_bytes(),
    };
    for (order, payload) in [(ByteOrder::Little, little), (ByteOrder::Big, &big[..])] {
        let mut file = word(59354, order).to_vec();
        for d in [4, 4, 4, 4] {
            file.extend_from_slice(&word(d, order));
        }
        file.extend_from_slice(&word(7.0f32.to_bits(), order));
        file.extend_from_slice(&word(0.5f32.to_bits(), order));
        file.extend_from_slice(payload);
        let path = dir.file("v3");
        std::fs::write(&path, &file).unwrap();
        let f = read_gauge(&path, &ReadOptions::default()).unwrap();
        assert_eq!(
            f.format,
            GaugeFileFormat::MilcLegacy(MilcLegacyVersion::V1To4)
        );
        assert_eq!(f.format.to_string(), "MILC version 1–4");
        assert_eq!((f.byte_order, f.precision), (order, Precision::Single));
        assert_eq!(f.field, v5.field);
        assert_eq!(f.metadata_value("c1"), Some("7"));
        assert_eq!(f.metadata_value("c2"), Some("0.5"));
        assert!(!has_checksum(&f), "pre-v5 files have no checksum");
    }
    // 1996: a 40-byte header (descriptor "b"), then the unused checksum word.
    let mut file = Vec::new();
    for x in [53546u32, 4, 4, 4, 4, 40, 0, 1] {
        file.extend_from_slice(&x.to_le_bytes());
    }
    file.extend_from_slice(b"b\0\0\0");
    file.extend_from_slice(&0u32.to_le_bytes()); // n_param
    file.extend_from_slice(&0u32.to_le_bytes()); // unused checksum
    file.extend_from_slice(little);
    let path = dir.file("1996");
    std::fs::write(&path, &file).unwrap();
    let f = read_gauge(&path, &ReadOptions::default()).unwrap();
    assert_eq!(f.format.to_string(), "MILC 1996 format");
    assert_eq!(f.field, v5.field);
}

/// qdsl's LIME writer records the plaquette and link trace of the stored links in its
/// `usqcdInfo` record XML; the reader checks them (exactly reproduced), and a changed value
/// is refused.
#[test]
fn qdsl_lime_files_record_plaquette_and_link_trace_that_are_checked() {
    let dir = TempDir::new("qdsl-observables");
    let field = read_sample("tmlqcd/conf.48").field;
    for precision in [Precision::Single, Precision::Double] {
        let path = dir.file("qdsl.lime");
        let options = LimeWriteOptions {
            precision,
            ..LimeWriteOptions::default()
        };
        write_lime_gauge(&path, &field, &options).unwrap();
        let f = read_gauge(&path, &ReadOptions::default()).unwrap();
        let checked = observables_checked(&f);
        let names: Vec<&str> = checked.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(
            names,
            ["`scidac-record-xml` <plaq>", "`scidac-record-xml` <linktr>"]
        );
        for (name, recorded, computed) in &checked {
            assert_eq!(recorded, computed, "{name}");
        }
        assert!((checked[0].1 - plaquette(&field).average).abs() < 1e-6);
        // A recorded plaquette changed in its 5th digit (by 1e-4, above the f32 tolerance
        // 16 ε) is refused.
        let text = std::fs::read(&path).unwrap();
        let at = text.windows(6).position(|w| w == b"<plaq>").unwrap() + 6;
        let mut changed = text.clone();
        changed[at + 5] = if changed[at + 5] == b'9' {
            b'0'
        } else {
            changed[at + 5] + 1
        };
        std::fs::write(&path, &changed).unwrap();
        match read_gauge(&path, &ReadOptions::default()).map(|f| f.checks) {
            Err(IoError::ObservableMismatch { observable, .. }) => {
                assert_eq!(observable, "`scidac-record-xml` <plaq>")
            }
            other => panic!("expected ObservableMismatch, got {other:?}"),
        }
    }
}
