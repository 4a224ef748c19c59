//! The variants the catalog's `stencil!` kernels are checked over: every value of every
//! knob (see `generated_manifest`'s doc for the design of the space).
#![allow(dead_code)]

use qdsl_core::dsl::variant::{
    DirichletBlocks, LinkScale, LongRecon, OutputSites, Recon, StorageFormat, TimeBoundary,
};
use qdsl_core::dsl::Variant;
use qdsl_core::lattice::Parity;

pub const SITES: [OutputSites; 3] = [
    OutputSites::Parity(Parity::Even),
    OutputSites::Parity(Parity::Odd),
    OutputSites::Full,
];
const BOUNDARIES: [TimeBoundary; 2] = [TimeBoundary::Periodic, TimeBoundary::Antiperiodic];

/// Two settings of the boolean knobs: the default, and every one of them flipped.
fn two_settings(base: Variant) -> [Variant; 2] {
    [
        base,
        Variant {
            sites: OutputSites::Parity(Parity::Odd),
            dagger: true,
            xpay: true,
            boundary: TimeBoundary::Antiperiodic,
            ..base
        },
    ]
}

/// The variants every `stencil!` kernel is listed for (see the module doc).
pub fn variant_space() -> Vec<Variant> {
    let mut out = Vec::new();
    for format in StorageFormat::EVERY {
        for recon in Recon::EVERY {
            for sites in SITES {
                for dagger in [false, true] {
                    for xpay in [false, true] {
                        for boundary in BOUNDARIES {
                            out.push(Variant {
                                sites,
                                dagger,
                                xpay,
                                spinor: format,
                                gauge: format,
                                recon,
                                boundary,
                                ..Variant::default()
                            });
                        }
                    }
                }
            }
        }
    }
    for spinor in StorageFormat::EVERY {
        for gauge in StorageFormat::EVERY.into_iter().filter(|&g| g != spinor) {
            for recon in Recon::EVERY {
                out.extend(two_settings(Variant {
                    spinor,
                    gauge,
                    recon,
                    ..Variant::default()
                }));
            }
        }
    }
    let walls = Some(DirichletBlocks {
        block: [2, 4, 4, 8],
    });
    for format in [
        StorageFormat::F64,
        StorageFormat::F32,
        StorageFormat::Fixed16,
    ] {
        for recon in [Recon::R18, Recon::R12] {
            out.extend(two_settings(Variant {
                spinor: format,
                gauge: format,
                recon,
                dirichlet: walls,
                ..Variant::default()
            }));
        }
    }
    for long_recon in [LongRecon::R13, LongRecon::R12, LongRecon::R9] {
        for format in StorageFormat::EVERY {
            for recon in [Recon::R18, Recon::R12] {
                out.extend(two_settings(Variant {
                    spinor: format,
                    gauge: format,
                    recon,
                    long_recon,
                    ..Variant::default()
                }));
            }
        }
    }
    for gauge in [StorageFormat::Fixed16, StorageFormat::Fixed8] {
        for spinor in StorageFormat::EVERY {
            for long_recon in [LongRecon::R18, LongRecon::R12] {
                out.extend(two_settings(Variant {
                    spinor,
                    gauge,
                    long_recon,
                    link_scale: LinkScale::Global,
                    ..Variant::default()
                }));
            }
        }
    }
    // Packed spinors (spinor-only formats) beside links in every format, recon 18 and 12.
    for spinor in [StorageFormat::Packed20, StorageFormat::Packed30] {
        for gauge in StorageFormat::EVERY {
            for recon in [Recon::R18, Recon::R12] {
                out.extend(two_settings(Variant {
                    spinor,
                    gauge,
                    recon,
                    ..Variant::default()
                }));
            }
        }
    }
    out
}
