//! [`FullSource`]: the sources η of the full system M ψ = η, on every site.

use super::SolveError;
use qdsl_core::field::{ColourSpinorField, RandomStream, SpinorLayout, StreamDomain};
use qdsl_core::io::read_fermion;
use qdsl_core::lattice::Coords;
use qdsl_core::Complex;
use std::path::PathBuf;

/// The random stream domain of Z2 noise (`StreamDomain::User(1)`): part of the
/// reproducibility contract of [`FullSource::Z2`].
const Z2_STREAM: u16 = 1;

/// A source on every site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FullSource {
    /// δ_{x, site} δ_{σ, spin} δ_{a, colour}.
    Point {
        /// The source site x₀.
        site: Coords,
        /// The spin component (0 for staggered fields).
        spin: usize,
        /// The colour component.
        colour: usize,
    },
    /// 1 on every site of time slice `t` for one spin and colour component.
    Wall {
        /// The time slice.
        t: usize,
        /// The spin component.
        spin: usize,
        /// The colour component.
        colour: usize,
    },
    /// Z2 noise: every component an independent real ±1 (the site x draws its components,
    /// spin-major, from the stream of (seed, lex(x))).
    Z2 {
        /// Seed of the random streams.
        seed: u64,
    },
    /// Gaussian noise: [`ColourSpinorField::gaussian`] (its even sites are the even-site
    /// source of the same seed).
    Gaussian {
        /// Seed of the random streams.
        seed: u64,
    },
    /// The one column of a fermion file (SciDAC or qdsl format, see
    /// [`qdsl_core::io::fermion`]).
    File(PathBuf),
}

impl FullSource {
    /// The source on `layout` (a full-lattice layout, see [`super::full_layout`]).
    pub fn build(&self, layout: SpinorLayout) -> Result<ColourSpinorField<f64>, SolveError> {
        let one = Complex::new(1.0, 0.0);
        Ok(match self {
            FullSource::Point { site, spin, colour } => {
                ColourSpinorField::point_source(layout, 0, *site, *spin, *colour)?
            }
            FullSource::Wall { t, spin, colour } => {
                // Checks t, the spin and the colour against the layout.
                layout.checked_offset(0, [0, 0, 0, *t], *spin, *colour)?;
                ColourSpinorField::from_fn(layout, |_, x, s, a| {
                    if x[3] == *t && s == *spin && a == *colour {
                        one
                    } else {
                        Complex::new(0.0, 0.0)
                    }
                })
            }
            FullSource::Z2 { seed } => {
                let mut site = None;
                let mut stream = RandomStream::new(*seed, StreamDomain::User(Z2_STREAM), 0);
                ColourSpinorField::from_fn(layout, |s, x, _, _| {
                    let index = layout.lex5_index(s, x);
                    if site != Some(index) {
                        site = Some(index);
                        stream = RandomStream::new(*seed, StreamDomain::User(Z2_STREAM), index);
                    }
                    let sign = if stream.next_u32() & 1 == 0 {
                        1.0
                    } else {
                        -1.0
                    };
                    Complex::new(sign, 0.0)
                })
            }
            FullSource::Gaussian { seed } => ColourSpinorField::gaussian(layout, *seed),
            FullSource::File(path) => {
                let file = read_fermion(path).map_err(|e| SolveError::SourceFile(e.to_string()))?;
                let shape = |found: String| {
                    SolveError::SourceFile(format!(
                        "{}: expected one field of layout {layout}, found {found}",
                        path.display()
                    ))
                };
                let count = file.columns.len();
                let (Some(column), 1) = (file.columns.into_iter().next(), count) else {
                    return Err(shape(format!("{count} columns")));
                };
                if *column.layout() != layout {
                    return Err(shape(column.layout().to_string()));
                }
                column
            }
        })
    }

    /// A one-line description for the summary.
    pub fn describe(&self) -> String {
        match self {
            FullSource::Point { site, spin, colour } => {
                format!("point at {site:?}, spin {spin}, colour {colour}")
            }
            FullSource::Wall { t, spin, colour } => {
                format!("wall at t = {t}, spin {spin}, colour {colour}")
            }
            FullSource::Z2 { seed } => format!("Z2 noise, seed {seed}"),
            FullSource::Gaussian { seed } => format!("Gaussian noise, seed {seed}"),
            FullSource::File(path) => format!("file {}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::field::SiteSubset;
    use qdsl_core::lattice::Lattice;

    fn layout() -> SpinorLayout {
        SpinorLayout::wilson(Lattice::new([2, 2, 2, 4]).unwrap(), SiteSubset::Full)
    }

    #[test]
    fn wall_and_point_sources_sit_where_asked() {
        let wall = FullSource::Wall {
            t: 2,
            spin: 1,
            colour: 2,
        }
        .build(layout())
        .unwrap();
        assert_eq!(wall.norm_sqr(), 8.0);
        assert_eq!(
            wall.get(0, [1, 0, 1, 2], 1, 2).unwrap(),
            Complex::new(1.0, 0.0)
        );
        let bad = FullSource::Wall {
            t: 4,
            spin: 0,
            colour: 0,
        };
        assert!(bad.build(layout()).is_err());
        let point = FullSource::Point {
            site: [1, 1, 0, 3],
            spin: 3,
            colour: 0,
        }
        .build(layout())
        .unwrap();
        assert_eq!(point.norm_sqr(), 1.0);
    }

    #[test]
    fn z2_noise_is_plus_or_minus_one_and_reproducible() {
        let z2 = FullSource::Z2 { seed: 7 }.build(layout()).unwrap();
        assert!(z2.data().iter().all(|z| z.im == 0.0 && z.re.abs() == 1.0));
        let positive = z2.data().iter().filter(|z| z.re > 0.0).count();
        assert!(positive > 140 && positive < 244, "{positive} of 384");
        assert_eq!(z2, FullSource::Z2 { seed: 7 }.build(layout()).unwrap());
        assert_ne!(z2, FullSource::Z2 { seed: 8 }.build(layout()).unwrap());
    }

    #[test]
    fn missing_source_files_are_named() {
        let e = FullSource::File(PathBuf::from("/nonexistent/src.lime"))
            .build(layout())
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/src.lime"), "{e}");
    }
}
