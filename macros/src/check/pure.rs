//! `check(..)` conditions and the `cost` estimate are pure: they run every
//! time the arguments are validated (by the route before the body, by the
//! body's own revalidation, by `check_arguments`, by direct calls of
//! `validate_<tool>`), including for calls that are then refused, so an
//! effect there happens a number of times no caller can predict. Besides
//! the body's rules (see `body`), this refuses what the syntax shows to be
//! an effect: assignment, `&mut`, `unsafe`, mutating or locking methods on
//! any receiver (statics with interior mutability included), spawning, and
//! macros other than a few pure ones. A helper function the author calls
//! is the author's: its body is not seen (a guard rail, not proof).

use syn::visit::Visit;
use syn::{BinOp, Expr, ExprMethodCall};

use crate::diag::{At, Errors, at};
use crate::rules::Rule;

/// Methods that change their receiver or the world, or wait on a lock:
/// what a static with interior mutability (an atomic, a lock, a
/// concurrent map, a `OnceLock`), a channel or a thread handle offers.
/// Parameters are shared references in the validator, so a mutation of a
/// parameter does not compile anyway; names that are also common pure
/// methods (`take` and `skip` of iterators, `str::replace`) are not listed.
const EFFECT_METHODS: &[&str] = &[
    "push",
    "push_str",
    "push_back",
    "push_front",
    "pop",
    "pop_back",
    "pop_front",
    "insert",
    "remove",
    "clear",
    "extend",
    "append",
    "truncate",
    "drain",
    "retain",
    "set",
    "swap",
    "store",
    "get_or_init",
    "get_mut",
    "borrow_mut",
    "lock",
    "try_lock",
    "read",
    "write",
    "send",
    "try_send",
    "spawn",
    "notify_one",
    "notify_all",
    "flush",
];

/// Method name prefixes of the same kind (`fetch_add`, `compare_exchange`,
/// `set_len`, …).
const EFFECT_PREFIXES: &[&str] = &["fetch_", "compare_exchange", "set_", "write_"];

/// Macros that only compute a value.
const PURE_MACROS: &[&str] = &["matches", "format", "vec", "concat", "stringify"];

fn effect_method(name: &str) -> bool {
    EFFECT_METHODS.contains(&name) || EFFECT_PREFIXES.iter().any(|p| name.starts_with(p))
}

fn compound_assign(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
    )
}

struct Pure<'a> {
    errors: &'a mut Errors,
    what: &'static str,
}

impl Pure<'_> {
    fn refuse(&mut self, span: At, effect: &str) {
        let what = self.what;
        self.errors.rule(
            Rule::SideEffectInCheck,
            span,
            format!("{what} has a side effect ({effect})"),
            "`check(..)` and `cost` run every time the arguments are validated (by the route \
             before the body, again inside the tool, by `check_arguments`, by direct calls), also \
             for calls that are then refused: an effect there happens a number of times no \
             caller can predict, before the arguments are known to be valid",
            "compute the condition or the estimate from the parameters only (comparisons, \
             arithmetic in `f64`, pure helper functions of the parameters); do the effect in the \
             tool body, after validation",
        );
    }
}

impl<'ast> Visit<'ast> for Pure<'_> {
    fn visit_expr(&mut self, e: &'ast Expr) {
        match e {
            Expr::Assign(a) => {
                let eq = &a.eq_token;
                self.refuse(at(eq), "an assignment `=`");
            }
            Expr::Binary(b) if compound_assign(&b.op) => {
                let op = &b.op;
                self.refuse(at(op), &format!("an assignment `{}`", quote::quote!(#op)));
            }
            Expr::Reference(r) if r.mutability.is_some() => {
                let (and, m) = (&r.and_token, &r.mutability);
                self.refuse(
                    At::Tokens(quote::quote!(#and #m)),
                    "a mutable borrow `&mut`",
                );
            }
            Expr::Unsafe(u) => {
                let kw = &u.unsafe_token;
                self.refuse(at(kw), "an `unsafe` block");
            }
            _ => {}
        }
        syn::visit::visit_expr(self, e);
    }

    fn visit_expr_method_call(&mut self, m: &'ast ExprMethodCall) {
        let name = m.method.to_string();
        if effect_method(&name) {
            self.refuse(At::Span(m.method.span()), &format!("`.{name}(..)`"));
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        // `thread::spawn(..)`, `Vec::push(&mut v, ..)`, `AtomicU64::fetch_add(..)`.
        // A path the body's rules refuse (`std::fs::write`) is reported
        // once, by them.
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        if segs.len() > 1
            && segs.last().is_some_and(|l| effect_method(l))
            && super::body::path_reach(&segs).is_none()
        {
            self.refuse(at(&p.path), &format!("`{}`", segs.join("::")));
        }
        syn::visit::visit_expr_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let name = super::body::macro_name(m);
        if !PURE_MACROS.contains(&name.as_str()) {
            self.refuse(at(&m.path), &format!("the macro `{name}!`"));
            return;
        }
        if let Ok(args) =
            m.parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated)
        {
            for a in &args {
                self.visit_expr(a);
            }
        }
    }
}

/// Refuses the side effects of a `check(..)` condition (`what` =
/// "`check(..)`") or of the `cost` expression.
pub(super) fn check_pure(e: &Expr, what: &'static str, errors: &mut Errors) {
    Pure { errors, what }.visit_expr(e);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effects(src: &str) -> usize {
        let mut errors = Errors::default();
        check_pure(&syn::parse_str(src).unwrap(), "`check(..)`", &mut errors);
        assert!(
            errors.fired().iter().all(|r| *r == Rule::SideEffectInCheck),
            "{src}"
        );
        errors.len()
    }

    #[test]
    fn effects_are_refused_and_pure_conditions_are_not() {
        for refused in [
            "{ n += 1; n } < 3",
            "{ x = 2.0; x } < 3.0",
            "CALLS.fetch_add(1, Ordering::Relaxed) < 100",
            "COUNTER.store(1, Ordering::SeqCst) == ()",
            "CACHE.lock().is_ok()",
            "STATE.set(1).is_ok()",
            "LOG.borrow_mut().len() < 3",
            "std::thread::spawn(|| ()).is_finished()",
            "AtomicU64::fetch_add(&C, 1, Ordering::Relaxed) < 3",
            "{ println!(\"{}\", a); a < b }",
            "{ dbg!(a) } < b",
            "{ tracing::info!(\"x\"); true }",
            "{ panic!(\"no\") }",
            "tx.send(a).is_ok()",
            "unsafe { A } < 1",
            "helper(&mut v)",
            "xs.clone().push(1) == ()",
        ] {
            assert!(effects(refused) > 0, "{refused}");
        }
        for allowed in [
            "a < b",
            "start < stop && f64::from(n) * dt <= 10.0",
            "courant(alpha, dt, dx) <= 0.5",
            "xs.iter().all(|x| x.is_finite())",
            "matches!(mode, Mode::Fast) || n < 10",
            "label.len() <= 8 && label.starts_with('a')",
            "xs.iter().copied().fold(0.0, f64::max) < 1.0",
            "{ let s = a + b; s < 10.0 }",
            "f64::from(cells) * f64::from(steps)",
        ] {
            assert_eq!(effects(allowed), 0, "{allowed}");
        }
    }
}
