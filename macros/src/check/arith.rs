//! `check(..)` conditions keep the parameters' native types (unlike `cost`,
//! where integers are `f64`), so integer arithmetic in them could wrap in
//! release builds (`a * b <= 100` passing with a product far above 100) or
//! panic inside the validator in debug builds. This rule refuses the
//! operations that can: an arithmetic operator or negation with an operand
//! that may be an integer, `pow`/`abs` on one, and `sum`/`product` not
//! computed in a float. What may be an integer is read from the syntax and
//! the parameters' kinds; a value returned by the author's own function has
//! the type the author gave it and is not second-guessed.

use syn::visit::Visit;
use syn::{BinOp, Expr, ExprBinary, ExprMethodCall, ExprUnary, Lit, Type, UnOp};

use crate::diag::{At, Errors};
use crate::parse::Kind;
use crate::rules::Rule;

/// The parameters a condition can name, with their kinds.
pub struct Scope<'a> {
    pub params: Vec<(String, &'a Kind)>,
}

impl Scope<'_> {
    fn kind(&self, name: &str) -> Option<&Kind> {
        self.params.iter().find(|(n, _)| n == name).map(|(_, k)| *k)
    }

    /// Whether `e` may evaluate to an integer.
    fn may_be_int(&self, e: &Expr) -> bool {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Int(i) => !matches!(i.suffix(), "f32" | "f64"),
                _ => false,
            },
            Expr::Path(p) => p
                .path
                .get_ident()
                .and_then(|id| self.kind(&id.to_string()))
                .is_some_and(|k| matches!(k, Kind::Int(_))),
            Expr::Paren(p) => self.may_be_int(&p.expr),
            Expr::Group(g) => self.may_be_int(&g.expr),
            Expr::Reference(r) => self.may_be_int(&r.expr),
            Expr::Unary(u) => self.may_be_int(&u.expr),
            Expr::Binary(b) if is_arith(&b.op) => {
                self.may_be_int(&b.left) || self.may_be_int(&b.right)
            }
            Expr::Cast(c) => !is_float_type(&c.ty),
            Expr::Index(i) => match &*i.expr {
                Expr::Path(p) => p
                    .path
                    .get_ident()
                    .and_then(|id| self.kind(&id.to_string()))
                    .is_some_and(
                        |k| matches!(k, Kind::Vec(inner) if matches!(**inner, Kind::Int(_))),
                    ),
                _ => false,
            },
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                matches!(name.as_str(), "len" | "count")
                    || (self.may_be_int(&m.receiver) && !returns_non_number(&name))
            }
            _ => false,
        }
    }
}

/// Methods of an integer whose result is not a number to do arithmetic on.
fn returns_non_number(method: &str) -> bool {
    method.starts_with("is_")
        || method.starts_with("checked_")
        || matches!(
            method,
            "cmp" | "partial_cmp" | "eq" | "ne" | "lt" | "le" | "gt" | "ge"
        )
}

fn is_arith(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::Add(_)
            | BinOp::Sub(_)
            | BinOp::Mul(_)
            | BinOp::Div(_)
            | BinOp::Rem(_)
            | BinOp::Shl(_)
            | BinOp::Shr(_)
            | BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
    )
}

fn is_float_type(ty: &Type) -> bool {
    match ty {
        Type::Paren(p) => is_float_type(&p.elem),
        Type::Group(g) => is_float_type(&g.elem),
        Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "f64" || s.ident == "f32"),
        _ => false,
    }
}

const WHY: &str = "integer arithmetic wraps silently in release builds and panics in debug builds, so \
                   a condition such as `a * b <= 100` can pass with a product far above 100, or \
                   crash the validator";
const FIX: &str = "compare in `f64` (`f64::from(a) * f64::from(b) <= 100.0`), or with checked \
                   arithmetic (`a.checked_mul(b).is_some_and(|p| p <= 100)`)";

struct Arith<'a, 'b> {
    scope: &'a Scope<'b>,
    errors: &'a mut Errors,
}

impl<'ast> Visit<'ast> for Arith<'_, '_> {
    fn visit_expr_binary(&mut self, b: &'ast ExprBinary) {
        if is_arith(&b.op) && (self.scope.may_be_int(&b.left) || self.scope.may_be_int(&b.right)) {
            let op = &b.op;
            self.errors.rule(
                Rule::CheckIntegerArithmetic,
                At::Tokens(quote::quote!(#op)),
                format!("`check` does integer arithmetic (`{}`)", quote::quote!(#op)),
                WHY,
                FIX,
            );
        }
        syn::visit::visit_expr_binary(self, b);
    }

    fn visit_expr_unary(&mut self, u: &'ast ExprUnary) {
        let literal = matches!(&*u.expr, Expr::Lit(_));
        if matches!(u.op, UnOp::Neg(_)) && !literal && self.scope.may_be_int(&u.expr) {
            let op = &u.op;
            self.errors.rule(
                Rule::CheckIntegerArithmetic,
                At::Tokens(quote::quote!(#op)),
                "`check` negates an integer",
                "negating the smallest value of a signed integer type overflows: it wraps in \
                 release builds and panics in debug builds",
                "compare in `f64` (`-f64::from(a)`), or use `a.checked_neg()`",
            );
        }
        syn::visit::visit_expr_unary(self, u);
    }

    fn visit_expr_method_call(&mut self, m: &'ast ExprMethodCall) {
        let name = m.method.to_string();
        let int_receiver = self.scope.may_be_int(&m.receiver);
        let float_turbofish = m.turbofish.as_ref().is_some_and(|t| {
            t.args
                .iter()
                .any(|a| matches!(a, syn::GenericArgument::Type(ty) if is_float_type(ty)))
        });
        let refused = match name.as_str() {
            "pow" | "abs" => int_receiver,
            "sum" | "product" => !float_turbofish,
            _ => false,
        };
        if refused {
            let method = &m.method;
            self.errors.rule(
                Rule::CheckIntegerArithmetic,
                method.span(),
                format!("`check` calls `{name}` on integers"),
                WHY,
                if matches!(name.as_str(), "sum" | "product") {
                    "compute it in `f64`: `.map(|&v| f64::from(v)).sum::<f64>()`, or fold with \
                     `checked_add`/`checked_mul`"
                } else {
                    FIX
                },
            );
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if let Ok(args) =
            m.parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated)
        {
            for a in &args {
                self.visit_expr(a);
            }
        }
    }
}

/// Refuses the integer operations of a `check(..)` condition that can
/// overflow.
pub fn check_condition(e: &Expr, scope: &Scope<'_>, errors: &mut Errors) {
    Arith { scope, errors }.visit_expr(e);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_of(src: &str) -> usize {
        let (int, float, vec_int) = (
            Kind::Int("u32"),
            Kind::Float("f64"),
            Kind::Vec(Box::new(Kind::Int("u32"))),
        );
        let scope = Scope {
            params: vec![
                ("a".into(), &int),
                ("b".into(), &int),
                ("x".into(), &float),
                ("xs".into(), &vec_int),
            ],
        };
        let mut errors = Errors::default();
        check_condition(&syn::parse_str(src).unwrap(), &scope, &mut errors);
        assert!(
            errors
                .fired()
                .iter()
                .all(|r| *r == Rule::CheckIntegerArithmetic),
            "{src}"
        );
        errors.len()
    }

    #[test]
    fn integer_arithmetic_is_refused_and_float_or_checked_arithmetic_is_not() {
        for refused in [
            "a * b <= 100",
            "a + 1 <= b",
            "(a - b) < 5",
            "a << 2 < 8",
            "-a < 0",
            "a.pow(2) < 9",
            "xs.len() * 2 <= 10",
            "xs[0] + xs[1] < 10",
            "xs.iter().sum::<u32>() < 10",
            "xs.iter().copied().sum() < 10u32",
            "(a as u64) * 3 < 10",
        ] {
            assert!(errors_of(refused) > 0, "{refused}");
        }
        for allowed in [
            "a < b",
            "a <= 100 && b >= 1",
            "f64::from(a) * f64::from(b) <= 100.0",
            "(a as f64) * 2.0 < x",
            "x * 2.0 - 1.0 < 3.0",
            "-x < 0.0",
            "a.checked_mul(b).is_some_and(|p| p <= 100)",
            "courant(x, a, b) <= 0.5",
            "xs.iter().map(|&v| f64::from(v)).sum::<f64>() < 10.0",
            "-1 < 0",
            "1f64 + x < 2.0",
        ] {
            assert_eq!(errors_of(allowed), 0, "{allowed}");
        }
    }
}
