//! Compile-time rules of the macros (trybuild): every signature that must
//! not compile fails with its reason and fix; every supported kind compiles
//! and its router builds.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/compile-fail/*.rs");
    t.pass("ui/compile-pass/*.rs");
}
