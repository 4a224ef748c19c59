//! MILC's RHMC rational-function files (`ks_imp_rhmc`'s `rationals.*`): plain text, `#`
//! starting a comment, one `key value…` per line:
//!
//! ```text
//! n_pseudo N                 (older files: nphi N)
//! then per pseudofermion, optionally `naik_term_mass ε` and `precision P`, and three
//! functions with tags MD (molecular dynamics, x^(−nf/4)), GR (heatbath, x^(nf/8)) and
//! FA (action, x^(−nf/8)):
//!   y_TAG y₁ … y_k           the powers' numerators   } f(x) = Π_j (x + 4m_j²)^(y_j/z_j)
//!   z_TAG z₁ … z_k           the powers' denominators }
//!   m_TAG m₁ … m_k           the masses               }
//!   order_TAG n
//!   res_TAG α₀, then α₁ … α_n   (n + 1 lines)
//!   pole_TAG (unused), then β₁ … β_n (n + 1 lines)
//! ```
//!
//! r(x) = α₀ + Σ_i α_i/(x + β_i) approximates f, x being the massless M†M (the masses are
//! in f; [`PartialFraction::in_shifted_variable`] re-expresses r for an operator with
//! the mass term included).

use super::PartialFraction;
use std::fmt::Write as _;

/// One function of a file: f(x) = Π_j (x + 4m_j²)^(y_j/z_j) and its approximation.
#[derive(Clone, Debug, PartialEq)]
pub struct MilcRational {
    /// y_j.
    pub y: Vec<i64>,
    /// z_j.
    pub z: Vec<i64>,
    /// m_j.
    pub m: Vec<f64>,
    /// r(x).
    pub function: PartialFraction,
}

impl MilcRational {
    /// f(x) = Π_j (x + 4m_j²)^(y_j/z_j), the function approximated.
    pub fn target(&self, x: f64) -> f64 {
        self.y
            .iter()
            .zip(&self.z)
            .zip(&self.m)
            .map(|((y, z), m)| (x + 4.0 * m * m).powf(*y as f64 / *z as f64))
            .product()
    }
}

/// One pseudofermion's functions.
#[derive(Clone, Debug, PartialEq)]
pub struct MilcPseudofermion {
    /// `naik_term_mass`, if given.
    pub naik_term_mass: Option<f64>,
    /// `precision`, if given (informational).
    pub precision: Option<i64>,
    /// Molecular dynamics (force).
    pub md: MilcRational,
    /// Gaussian random heatbath.
    pub gr: MilcRational,
    /// Fermion action.
    pub fa: MilcRational,
}

/// A malformed file: the line (1-based; 0 for the end of the file), what was expected and
/// what was found.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("rational-function file, line {line}: expected {expected}, found {found}")]
pub struct MilcRationalError {
    /// 1-based line number (0: end of file).
    pub line: usize,
    /// What was expected.
    pub expected: String,
    /// What was found.
    pub found: String,
}

/// The non-comment lines as (line number, key, values).
struct Lines<'a> {
    items: Vec<(usize, &'a str, Vec<&'a str>)>,
    next: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let items = text
            .lines()
            .enumerate()
            .filter_map(|(i, l)| {
                let l = l.split('#').next().unwrap_or("");
                let mut words = l.split_whitespace();
                words.next().map(|k| (i + 1, k, words.collect()))
            })
            .collect();
        Self { items, next: 0 }
    }

    fn peek_key(&self) -> Option<&'a str> {
        self.items.get(self.next).map(|i| i.1)
    }

    /// The values of the next line, which must have key `key`.
    fn expect(&mut self, key: &str) -> Result<(usize, Vec<&'a str>), MilcRationalError> {
        match self.items.get(self.next) {
            Some((line, k, v)) if *k == key => {
                self.next += 1;
                Ok((*line, v.clone()))
            }
            Some((line, k, _)) => Err(MilcRationalError {
                line: *line,
                expected: format!("`{key}`"),
                found: format!("`{k}`"),
            }),
            None => Err(MilcRationalError {
                line: 0,
                expected: format!("`{key}`"),
                found: "the end of the file".into(),
            }),
        }
    }

    fn values<T: std::str::FromStr>(&mut self, key: &str) -> Result<Vec<T>, MilcRationalError> {
        let (line, v) = self.expect(key)?;
        v.iter()
            .map(|w| {
                w.parse().map_err(|_| MilcRationalError {
                    line,
                    expected: format!("numbers after `{key}`"),
                    found: format!("`{w}`"),
                })
            })
            .collect()
    }

    fn one<T: std::str::FromStr>(&mut self, key: &str) -> Result<T, MilcRationalError> {
        let line = self.items.get(self.next).map_or(0, |i| i.0);
        let mut v = self.values(key)?;
        if v.len() != 1 {
            return Err(MilcRationalError {
                line,
                expected: format!("one value after `{key}`"),
                found: format!("{}", v.len()),
            });
        }
        Ok(v.remove(0))
    }
}

fn read_function(lines: &mut Lines, tag: &str) -> Result<MilcRational, MilcRationalError> {
    let y = lines.values(&format!("y_{tag}"))?;
    let z: Vec<i64> = lines.values(&format!("z_{tag}"))?;
    let m: Vec<f64> = lines.values(&format!("m_{tag}"))?;
    if z.len() != y.len() || m.len() != y.len() || z.contains(&0) {
        return Err(MilcRationalError {
            line: lines
                .items
                .get(lines.next.saturating_sub(1))
                .map_or(0, |i| i.0),
            expected: format!("as many y_{tag}, z_{tag}, m_{tag} values, every z non-zero"),
            found: format!("{}, {}, {} values", y.len(), z.len(), m.len()),
        });
    }
    let order: usize = lines.one(&format!("order_{tag}"))?;
    let res = (0..=order)
        .map(|_| lines.one(&format!("res_{tag}")))
        .collect::<Result<Vec<f64>, _>>()?;
    let poles = (0..=order)
        .map(|_| lines.one(&format!("pole_{tag}")))
        .collect::<Result<Vec<f64>, _>>()?;
    Ok(MilcRational {
        y,
        z,
        m,
        function: PartialFraction {
            norm: res[0],
            residues: res[1..].to_vec(),
            shifts: poles[1..].to_vec(),
        },
    })
}

/// Parses a rational-function file's text.
pub fn parse(text: &str) -> Result<Vec<MilcPseudofermion>, MilcRationalError> {
    let mut lines = Lines::new(text);
    let count: usize = match lines.peek_key() {
        Some("nphi") => lines.one("nphi")?,
        _ => lines.one("n_pseudo")?,
    };
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let naik_term_mass = match lines.peek_key() {
            Some("naik_term_mass") => Some(lines.one("naik_term_mass")?),
            _ => None,
        };
        let precision = match lines.peek_key() {
            Some("precision") => Some(lines.one("precision")?),
            _ => None,
        };
        out.push(MilcPseudofermion {
            naik_term_mass,
            precision,
            md: read_function(&mut lines, "MD")?,
            gr: read_function(&mut lines, "GR")?,
            fa: read_function(&mut lines, "FA")?,
        });
    }
    if let Some((line, key, _)) = lines.items.get(lines.next) {
        return Err(MilcRationalError {
            line: *line,
            expected: "the end of the file".into(),
            found: format!("`{key}`"),
        });
    }
    Ok(out)
}

fn write_function(s: &mut String, tag: &str, f: &MilcRational) {
    let join = |v: Vec<String>| v.join(" ");
    let _ = writeln!(s, "\n# Rational function for {tag}");
    let _ = writeln!(
        s,
        "y_{tag} {}",
        join(f.y.iter().map(|v| v.to_string()).collect())
    );
    let _ = writeln!(
        s,
        "z_{tag} {}",
        join(f.z.iter().map(|v| v.to_string()).collect())
    );
    let _ = writeln!(
        s,
        "m_{tag} {}",
        join(f.m.iter().map(|v| format!("{v:e}")).collect())
    );
    let _ = writeln!(s, "order_{tag} {}\n", f.function.order());
    let _ = writeln!(s, "res_{tag} {:.17e}", f.function.norm);
    for a in &f.function.residues {
        let _ = writeln!(s, "res_{tag} {a:.17e}");
    }
    // The first pole line is a placeholder MILC's readers skip.
    let _ = writeln!(s, "\npole_{tag} 99.9");
    for b in &f.function.shifts {
        let _ = writeln!(s, "pole_{tag} {b:.17e}");
    }
}

/// The text of a rational-function file (`n_pseudo` header; every value to 17 digits,
/// so that [`parse`] gives the same numbers back).
pub fn write(pseudofermions: &[MilcPseudofermion]) -> String {
    let mut s = format!("n_pseudo {}\n", pseudofermions.len());
    for p in pseudofermions {
        if let Some(e) = p.naik_term_mass {
            let _ = writeln!(s, "\nnaik_term_mass {e:e}");
        }
        if let Some(prec) = p.precision {
            let _ = writeln!(s, "precision {prec}");
        }
        write_function(&mut s, "MD", &p.md);
        write_function(&mut s, "GR", &p.gr);
        write_function(&mut s, "FA", &p.fa);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// r(x) = 1/(x + 4m²) written exactly (α₀ = 0, α₁ = 1, β₁ = 4m²), with MILC's pole
    /// placeholder and comments.
    const FILE: &str = "\
n_pseudo 1
# a comment
naik_term_mass 0.
y_MD -4 0
z_MD 4 4
m_MD 0.1 1.0
order_MD 1
res_MD 0.0
res_MD 1.0
pole_MD 99.9
pole_MD 0.04   # f = (x + 4 * 0.1^2)^(-4/4), exactly
y_GR 1 0
z_GR 8 8
m_GR 0.1 1.0
order_GR 0
res_GR 2.5
pole_GR 99.9
y_FA -1 0
z_FA 8 8
m_FA 0.1 1.0
order_FA 0
res_FA 0.5
pole_FA 99.9
";

    #[test]
    fn parses_and_evaluates() {
        let p = parse(FILE).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].naik_term_mass, Some(0.0));
        let md = &p[0].md;
        assert_eq!(md.y, vec![-4, 0]);
        assert_eq!(md.function.order(), 1);
        // r(x) = 1/(x + 0.04) = f(x) exactly.
        for x in [0.0, 0.96, 7.5] {
            assert!((md.function.eval(x) / md.target(x) - 1.0).abs() < 1e-15);
        }
        assert!((md.target(0.96) - 1.0).abs() < 1e-15);
        // In y = x + 0.04 (an operator with the mass term): r = 1/y.
        let r = md.function.in_shifted_variable(0.04);
        assert!((r.eval(0.5) - 2.0).abs() < 1e-15);
        assert_eq!(p[0].gr.function.order(), 0);
        assert!((p[0].gr.function.eval(7.0) - 2.5).abs() < 1e-15);
    }

    #[test]
    fn write_then_parse_gives_the_same_functions() {
        let mut p = parse(FILE).unwrap();
        p[0].md.function = PartialFraction {
            norm: 0.123_456_789_012_345_67,
            residues: vec![1.0 / 3.0, 2e-7],
            shifts: vec![1e-5, 0.7],
        };
        let again = parse(&write(&p)).unwrap();
        assert_eq!(again, p);
    }

    #[test]
    fn errors_name_line_expected_and_found() {
        let bad = FILE.replace("order_MD 1", "order_MD x");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.line, 7);
        assert!(e.to_string().contains("`x`"), "{e}");
        let short = FILE.replace("pole_FA 99.9\n", "");
        assert_eq!(parse(&short).unwrap_err().found, "the end of the file");
        let wrong = FILE.replace("z_GR", "q_GR");
        let e = parse(&wrong).unwrap_err();
        assert_eq!(
            (e.expected.as_str(), e.found.as_str()),
            ("`z_GR`", "`q_GR`")
        );
        let extra = format!("{FILE}y_MD 1\n");
        assert_eq!(parse(&extra).unwrap_err().expected, "the end of the file");
    }
}
