//! Path specs written as text in the tests ("+nu +mu -nu"), shared by the tests of the
//! pull-backs and the gather plan.

use super::spec::{Dir, PathSpec, PathTerm, Step};

/// A path written as "+nu +mu -nu" (names mu, nu, rho, sigma).
pub(crate) fn path(text: &str) -> Vec<Step> {
    text.split_whitespace()
        .map(|s| {
            let (forward, name) = s.split_at(1);
            let dir = match name {
                "mu" => Dir::Mu,
                "nu" => Dir::Free(0),
                "rho" => Dir::Free(1),
                _ => Dir::Free(2),
            };
            Step {
                dir,
                forward: forward == "+",
            }
        })
        .collect()
}

/// A spec `name` writing `fat` from `terms` (coefficient, path text).
pub(crate) fn spec(name: &str, terms: &[(f64, &str)]) -> PathSpec {
    PathSpec {
        name: name.into(),
        output: "fat".into(),
        free_names: ["nu", "rho", "sigma"].map(String::from).to_vec(),
        terms: terms
            .iter()
            .enumerate()
            .map(|(i, (c, p))| PathTerm {
                name: format!("t{i}"),
                coeff: *c,
                steps: path(p),
            })
            .collect(),
    }
}
