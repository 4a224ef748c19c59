//! Test fixtures: the Wilson and tree-level Symanzik actions as specs built by hand (the
//! library's own definitions are `link_paths!` specs in qdsl-kernels, which this crate
//! cannot depend on; the root crate's tests run the generators on those).

use super::action_terms;
use crate::dsl::paths::{ActionSpec, Dir, PathTerm, Step};

fn loop_term(name: &str, coeff: f64, steps: &[(usize, bool)]) -> PathTerm {
    PathTerm {
        name: name.into(),
        coeff,
        steps: steps
            .iter()
            .map(|&(k, forward)| Step {
                dir: Dir::Free(k),
                forward,
            })
            .collect(),
    }
}

fn plaquette(coeff: f64) -> PathTerm {
    loop_term(
        "plaquette",
        coeff,
        &[(0, true), (1, true), (0, false), (1, false)],
    )
}

fn rectangle(coeff: f64) -> PathTerm {
    let steps = [
        (0, true),
        (0, true),
        (1, true),
        (0, false),
        (0, false),
        (1, false),
    ];
    loop_term("rectangle", coeff, &steps)
}

fn spec(name: &str, terms: Vec<PathTerm>) -> ActionSpec {
    ActionSpec {
        name: name.into(),
        free_names: vec!["mu".into(), "nu".into()],
        terms,
    }
}

/// S = β Σ (1 − Re tr U_□/3).
pub fn wilson() -> ActionSpec {
    spec("wilson", vec![plaquette(1.0)])
}

/// c₀ = 5/3 plaquettes, c₁ = −1/12 rectangles.
pub fn symanzik() -> ActionSpec {
    spec(
        "symanzik",
        vec![plaquette(5.0 / 3.0), rectangle(-1.0 / 12.0)],
    )
}

/// The Symanzik plaquette term alone.
pub fn plaquette_only() -> ActionSpec {
    action_terms(&symanzik(), &["plaquette"]).unwrap()
}

/// The Symanzik rectangle term alone.
pub fn rectangle_only() -> ActionSpec {
    action_terms(&symanzik(), &["rectangle"]).unwrap()
}
