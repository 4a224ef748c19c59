//! Fermion files: MILC's SciDAC colour vectors (`tests/data/milc/ksvector.*`) read with
//! their recorded checksums, written back byte for byte, converted to qdsl's own format;
//! bad input gives errors naming the file, record, expected and found value; truncated
//! and corrupted copies never make a reader panic, and payload damage fails the checksum.

use qdsl::core::field::ColourSpinorField;
use qdsl::core::io::checksum::scidac_checksum;
use qdsl::core::io::fermion::FERMION_COLOURS;
use qdsl::core::io::lime::parse_lime;
use qdsl::core::io::scidac_fermion::write_scidac_fermion;
use qdsl::core::io::{
    read_fermion, write_fermion, Check, FermionFileFormat, FermionKind, FermionWriteOptions,
    IoError, Precision,
};
use qdsl::core::lattice::Lattice;
mod common;

use common::{data, sample, TempDir};
use std::path::Path;

/// MILC's three colour-vector files with their recorded (suma, sumb) and record XML.
const KSVECTORS: [(&str, u32, u32, &str); 3] = [
    (
        "milc/ksvector.src.sample.l8",
        0x18c1_75b6,
        0xadc0_f9ee,
        "source color vector field",
    ),
    (
        "milc/ksvector.ans.Minv.sample.l8",
        0xc343_3914,
        0x14c1_77b1,
        "answer = M^-1 source",
    ),
    (
        "milc/ksvector.ans.MdaggerMinv.sample.l8",
        0x125e_4fb4,
        0x7cd4_ec7e,
        "answer = (MdaggerM)^-1 source",
    ),
];

/// The byte range of the payload of the first LIME record of `type_name`.
fn lime_payload(bytes: &[u8], type_name: &str) -> std::ops::Range<usize> {
    let records = parse_lime(bytes, Path::new("sample")).unwrap();
    let r = records.iter().find(|r| r.type_name == type_name).unwrap();
    let start = r.data_offset() as usize;
    start..start + r.data.len()
}

/// The big-endian f32 at byte `offset`, decoded by hand.
fn be_f32(bytes: &[u8], offset: usize) -> f64 {
    f32::from_be_bytes(bytes[offset..offset + 4].try_into().unwrap()) as f64
}

#[test]
fn milc_colour_vectors_are_read_with_their_recorded_checksums() {
    let lattice = Lattice::hypercubic(8).unwrap();
    for (rel, suma, sumb, record_xml) in KSVECTORS {
        let file = read_fermion(data(rel)).unwrap();
        assert_eq!(file.format, FermionFileFormat::Scidac);
        assert_eq!(file.kind, FermionKind::ColourVector);
        assert_eq!(file.precision, Precision::Single);
        assert_eq!(file.columns.len(), 1);
        assert_eq!(*file.lattice(), lattice);
        assert_eq!(file.checks, vec![Check::ScidacChecksum { suma, sumb }]);
        assert_eq!(file.metadata_value("scidac-record-xml"), Some(record_xml));
        let file_xml = file.metadata_value("scidac-file-xml").unwrap();
        assert!(file_xml.contains("inv_arg.mass 0.1"), "{file_xml}");
        assert!(file_xml.contains("time: antiperiodic"), "{file_xml}");

        // Every component against the raw bytes: lexicographic site r, colour a at byte
        // 24 r + 8 a of the payload (x fastest), stored in the field by coordinates.
        let bytes = sample(rel);
        let payload = lime_payload(&bytes, "scidac-binary-data");
        let psi = &file.columns[0];
        for (r, x) in lattice.sites_lex().enumerate() {
            for a in 0..FERMION_COLOURS {
                let at = payload.start + 24 * r + 8 * a;
                let z = psi.get(0, x, 0, a).unwrap();
                assert_eq!((z.re, z.im), (be_f32(&bytes, at), be_f32(&bytes, at + 4)));
            }
        }
    }
}

#[test]
fn written_scidac_vectors_are_byte_identical_to_milcs_payload() {
    let dir = TempDir::new("fermion-rewrite");
    for (rel, suma, sumb, _) in KSVECTORS {
        let original = read_fermion(data(rel)).unwrap();
        let path = dir.file("rewritten.lime");
        let options = FermionWriteOptions {
            precision: Precision::Single,
            info: "rewritten".to_string(),
        };
        write_scidac_fermion(&path, &original.columns, &options).unwrap();
        let ours = std::fs::read(&path).unwrap();
        let theirs = sample(rel);
        assert_eq!(
            ours[lime_payload(&ours, "scidac-binary-data")],
            theirs[lime_payload(&theirs, "scidac-binary-data")]
        );
        let again = read_fermion(&path).unwrap();
        assert_eq!(again.columns, original.columns);
        assert_eq!(again.checks, vec![Check::ScidacChecksum { suma, sumb }]);

        // qdsl's own format, f32 and f64: the same values back.
        for precision in [Precision::Single, Precision::Double] {
            let path = dir.file("converted.qdsl");
            let options = FermionWriteOptions {
                precision,
                ..FermionWriteOptions::default()
            };
            write_fermion(&path, FermionFileFormat::Qdsl, &original.columns, &options).unwrap();
            let converted = read_fermion(&path).unwrap();
            assert_eq!(converted.format, FermionFileFormat::Qdsl);
            assert_eq!(converted.columns, original.columns);
        }
    }
}

/// `data` with the first occurrence of `from` replaced by `to`.
fn replace_once(data: &[u8], from: &str, to: &str) -> Vec<u8> {
    let i = data
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .unwrap_or_else(|| panic!("{from:?} not in file"));
    [&data[..i], to.as_bytes(), &data[i + from.len()..]].concat()
}

/// The error of reading `bytes` as a file named `name`; asserts that it names the file
/// and contains each of `needles`.
fn read_error(dir: &TempDir, name: &str, bytes: &[u8], needles: &[&str]) -> IoError {
    let path = dir.put(name, bytes);
    let e = read_fermion(&path).expect_err("read succeeded");
    let msg = e.to_string();
    assert!(
        msg.contains(&path.display().to_string()),
        "file not named: {msg}"
    );
    for n in needles {
        assert!(msg.contains(n), "{n:?} missing from: {msg}");
    }
    e
}

#[test]
fn bad_scidac_vectors_name_the_record_expected_and_found() {
    let dir = TempDir::new("fermion-bad");
    let src = sample("milc/ksvector.src.sample.l8");
    // Declared typesize of a Dirac fermion for a colour vector.
    read_error(
        &dir,
        "typesize",
        &replace_once(&src, "<typesize>24<", "<typesize>96<"),
        &[
            "<typesize>",
            "scidac-private-record-xml",
            "expected 24",
            "found 96",
        ],
    );
    // Double precision declared, single stored.
    read_error(
        &dir,
        "precision",
        &replace_once(&src, "<precision>F<", "<precision>D<"),
        &["<typesize>", "expected 48", "found 24"],
    );
    // Lattice dimensions that do not fit the payload.
    read_error(
        &dir,
        "dims",
        &replace_once(&src, "<dims>8 8 8 8 <", "<dims>8 8 8 4 <"),
        &["scidac-binary-data", "needs 49152 bytes, found 98304"],
    );
    // An unknown precision letter.
    read_error(
        &dir,
        "letter",
        &replace_once(&src, "<precision>F<", "<precision>Q<"),
        &["<precision>", "found \"Q\"", "F, S, D"],
    );
    // A changed recorded checksum.
    let e = read_error(
        &dir,
        "checksum",
        &replace_once(&src, "<suma>18c175b6<", "<suma>18c175b7<"),
        &["scidac-checksum", "18c175b7", "18c175b6"],
    );
    assert!(matches!(e, IoError::ChecksumMismatch { .. }));
    // Neither a LIME file nor a qdsl field.
    read_error(&dir, "text", b"hello", &["fermion file", "68 65 6c 6c 6f"]);
    // A gauge configuration is not a fermion file.
    read_error(
        &dir,
        "gauge",
        &sample("milc/lat.sample.l8"),
        &["binary record of datatype ColorVector or DiracFermion"],
    );
    // A NaN in the payload with a matching checksum: named by site and component.
    let payload = lime_payload(&src, "scidac-binary-data");
    let mut nan = src.clone();
    let at = payload.start + 24 * 9 + 8 * 2 + 4; // site 9 = (1, 1, 0, 0), colour 2, im
    nan[at..at + 4].copy_from_slice(&f32::NAN.to_be_bytes());
    let sums = scidac_checksum(&nan[payload.clone()], 24);
    let nan = replace_once(
        &replace_once(&nan, "<suma>18c175b6<", &format!("<suma>{:x}<", sums.mod29)),
        "<sumb>adc0f9ee<",
        &format!("<sumb>{:x}<", sums.mod31),
    );
    read_error(
        &dir,
        "nan",
        &nan,
        &[
            "component 2",
            "[1, 1, 0, 0]",
            "lexicographic site 9",
            "finite",
            "NaN",
        ],
    );
}

#[test]
fn bad_qdsl_fields_name_the_header_key_expected_and_found() {
    let dir = TempDir::new("fermion-bad-qdsl");
    let lattice = Lattice::new([2, 2, 2, 2]).unwrap();
    let v = ColourSpinorField::<f64>::gaussian(FermionKind::DiracFermion.layout(lattice), 5);
    let path = dir.file("good.qdsl");
    write_fermion(
        &path,
        FermionFileFormat::Qdsl,
        &[v],
        &FermionWriteOptions::default(),
    )
    .unwrap();
    let good = std::fs::read(&path).unwrap();
    read_error(
        &dir,
        "kind",
        &replace_once(&good, "\"dirac-fermion\"", "\"wilson-thing\""),
        &["\"kind\"", "wilson-thing", "dirac-fermion"],
    );
    read_error(
        &dir,
        "columns",
        &replace_once(&good, "\"columns\":1", "\"columns\":2"),
        &["\"payload_bytes\"", "expected 6144", "found 3072"],
    );
    read_error(
        &dir,
        "truncated",
        &good[..good.len() - 1],
        &["truncated payload", "expected 3072 bytes, found 3071"],
    );
    read_error(
        &dir,
        "longer",
        &[good.as_slice(), b"x"].concat(),
        &["longer than the header implies"],
    );
    read_error(
        &dir,
        "lattice",
        &replace_once(&good, "[2,2,2,2]", "[2,2,2,3]"),
        &["\"lattice\"", "[2, 2, 2, 3]"],
    );
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

#[test]
fn corrupted_and_truncated_fermion_files_never_panic_and_payload_damage_fails_the_checksum() {
    let dir = TempDir::new("fermion-fuzz");
    let mut targets: Vec<(Vec<u8>, std::ops::Range<usize>)> = KSVECTORS
        .iter()
        .map(|(rel, ..)| {
            let bytes = sample(rel);
            let payload = lime_payload(&bytes, "scidac-binary-data");
            (bytes, payload)
        })
        .collect();
    // MILC's source converted to qdsl's format (payload: everything after the header).
    let qdsl = dir.file("src.qdsl");
    let src = read_fermion(data(KSVECTORS[0].0)).unwrap();
    write_fermion(
        &qdsl,
        FermionFileFormat::Qdsl,
        &src.columns,
        &FermionWriteOptions::default(),
    )
    .unwrap();
    let bytes = std::fs::read(&qdsl).unwrap();
    let start = bytes.len() - 4096 * 48;
    targets.push((bytes.clone(), start..bytes.len()));
    // A 12-column Dirac propagator (one labelled record per column), f32.
    let lattice = Lattice::new([2, 2, 2, 4]).unwrap();
    let columns: Vec<_> = (0..12)
        .map(|k| ColourSpinorField::<f64>::gaussian(FermionKind::DiracFermion.layout(lattice), k))
        .collect();
    let prop = dir.file("prop.lime");
    let options = FermionWriteOptions {
        precision: Precision::Single,
        ..FermionWriteOptions::default()
    };
    write_scidac_fermion(&prop, &columns, &options).unwrap();
    let bytes = std::fs::read(&prop).unwrap();
    let records = parse_lime(&bytes, &prop).unwrap();
    let binary = records
        .iter()
        .filter(|r| r.type_name == "scidac-binary-data")
        .nth(5)
        .unwrap();
    let start = binary.data_offset() as usize;
    targets.push((bytes.clone(), start..start + binary.data.len()));

    let mut rng = Lcg(0xfe4a_1005);
    let path = dir.file("copy");
    for (original, payload) in targets {
        let (mut flips, mut caught) = (0, 0);
        for round in 0..200 {
            let mut bytes = original.clone();
            match round % 4 {
                0 => {
                    let len = if round < 8 {
                        round * 41
                    } else {
                        rng.below(bytes.len())
                    };
                    bytes.truncate(len);
                }
                1 => {
                    for _ in 0..1 + rng.below(4) {
                        let i = rng.below(bytes.len());
                        bytes[i] = rng.next() as u8;
                    }
                }
                2 => {
                    let i = rng.below(payload.start.min(bytes.len()));
                    bytes[i] ^= 1 << rng.below(8);
                }
                _ => {
                    let i = payload.start + rng.below(payload.len());
                    bytes[i] ^= 1 << rng.below(8);
                    flips += 1;
                }
            }
            std::fs::write(&path, &bytes).unwrap();
            let result = std::panic::catch_unwind(|| read_fermion(&path))
                .unwrap_or_else(|_| panic!("reader panicked (round {round})"));
            if round % 4 == 3 && matches!(result, Err(IoError::ChecksumMismatch { .. })) {
                caught += 1;
            }
        }
        assert_eq!(caught, flips, "{caught} of {flips} payload flips caught");
    }
}
