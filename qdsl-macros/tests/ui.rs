//! Misuse of `stencil!` is reported by the macro, with a clear message at the offending
//! token (tests/ui/*.rs and their .stderr).

#[test]
fn misuse_is_reported_at_the_offending_token() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
