//! Every generated stencil kernel waits on its grid dependency (programmatic dependent
//! launch) exactly once, after its index arithmetic and before it touches any field: the
//! runtime launches stencils as dependents of the kernel before them, so a load, store or
//! prefetch above the wait could read data that kernel has not written yet.

use qdsl_core::dsl::Variant;
use qdsl_kernels::catalog::stencils;

const WAIT: &str = "qdsl_grid_dependency_wait();";

/// Whether `text` names a kernel parameter that points at device memory (`f_<field>`,
/// `norm_<field>`, `phase_<field>`, `xpay_x`) or a memory helper.
fn touches_memory(text: &str) -> Option<&str> {
    let tokens = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    tokens.into_iter().find(|t| {
        t.starts_with("f_")
            || t.starts_with("norm_")
            || t.starts_with("phase_")
            || *t == "xpay_x"
            || t.starts_with("load")
            || t.starts_with("store")
            || *t == "prefetch_l2"
            || *t == "__ldcs"
    })
}

#[test]
fn every_kernel_waits_once_before_touching_memory() {
    let mut checked = 0;
    for k in stencils() {
        let name = &k.name;
        for v in Variant::all() {
            let Ok(src) = (k.cuda)(&v) else { continue };
            let body_start = src
                .find("extern \"C\" __global__")
                .and_then(|s| src[s..].find("\n{\n").map(|b| s + b + 3))
                .unwrap_or_else(|| panic!("{name} {v:?}: no kernel body"));
            let body = &src[body_start..];
            assert_eq!(body.matches(WAIT).count(), 1, "{name} {v:?}: one wait");
            let before = &body[..body.find(WAIT).unwrap()];
            if let Some(t) = touches_memory(before) {
                panic!("{name} {v:?}: `{t}` before the grid dependency wait:\n{before}");
            }
            // The wait is not at the very top: the index arithmetic overlaps.
            assert!(before.contains("const int i = "), "{name} {v:?}");
            checked += 1;
        }
    }
    assert!(checked > 300, "only {checked} variants generated");
}

#[test]
fn the_scanner_sees_a_load_above_the_wait() {
    assert_eq!(
        touches_memory("const int i = 0;\nload<3>(r, f_psi, n, s);"),
        Some("load")
    );
    assert_eq!(
        touches_memory("const real c = norm_psi[n];"),
        Some("norm_psi")
    );
    assert_eq!(touches_memory("const int cb = parity * half + idx;"), None);
}
