//! The names `cost` and `check` refer to, and the integer casts `cost`
//! must not make.

use syn::visit::Visit;
use syn::{Expr, Ident, Type};

use crate::diag::{At, Errors, did_you_mean};
use crate::parse::INT_TYPES;
use crate::rules::Rule;

/// Single-name paths in an expression (the names it refers to).
pub(super) struct Names(Vec<Ident>);
impl<'ast> Visit<'ast> for Names {
    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if p.qself.is_none()
            && p.path.segments.len() == 1
            && let Some(seg) = p.path.segments.first()
        {
            self.0.push(seg.ident.clone());
        }
        syn::visit::visit_expr_path(self, p);
    }
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    /// The callee of a call (`courant(a, b)`) names a function in scope,
    /// not an argument: only the call's arguments are checked.
    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if !matches!(&*c.func, Expr::Path(_)) {
            self.visit_expr(&c.func);
        }
        for a in &c.args {
            self.visit_expr(a);
        }
    }
}

pub(super) fn check_refs(e: &Expr, what: &str, params: &[String], errors: &mut Errors) {
    check_names(e, what, params, "a parameter of this tool", errors);
}

/// [`check_refs`] for `owner`'s names (`"a field of this struct"`).
pub(super) fn check_names(
    e: &Expr,
    what: &str,
    params: &[String],
    owner: &str,
    errors: &mut Errors,
) {
    let mut n = Names(Vec::new());
    n.visit_expr(e);
    let cands: Vec<&str> = params.iter().map(String::as_str).collect();
    for id in n.0 {
        let s = id.to_string();
        if s.starts_with(|c: char| c.is_uppercase()) || params.contains(&s) || s == "self" {
            continue;
        }
        let hint = did_you_mean(&s, &cands)
            .map(|d| format!("did you mean `{d}`? "))
            .unwrap_or_default();
        let rule = if what == "cost" {
            Rule::CostUnknownParameter
        } else {
            Rule::CheckUnknownParameter
        };
        errors.rule(
            rule,
            id.span(),
            format!("`{what}` refers to `{s}`, which is not {owner}"),
            "cost estimates and checks are evaluated on the validated arguments only",
            format!("{hint}parameters: {}", params.join(", ")),
        );
    }
}

/// Casts to an integer type inside a `cost` expression.
pub(super) struct IntCasts<'a> {
    errors: &'a mut Errors,
}

/// `u64`, `::core::primitive::u64`, …: the integer type a cast names, if any.
pub(super) fn int_cast_target(ty: &Type) -> Option<String> {
    match ty {
        Type::Paren(p) => int_cast_target(&p.elem),
        Type::Group(g) => int_cast_target(&g.elem),
        Type::Path(tp) if tp.qself.is_none() => {
            let name = tp.path.segments.last()?.ident.to_string();
            (INT_TYPES.contains(&name.as_str()) || name == "i128" || name == "u128").then_some(name)
        }
        _ => None,
    }
}

impl<'ast> Visit<'ast> for IntCasts<'_> {
    fn visit_expr_cast(&mut self, c: &'ast syn::ExprCast) {
        if let Some(t) = int_cast_target(&c.ty) {
            let (as_token, ty) = (&c.as_token, &c.ty);
            self.errors.rule(
                Rule::CostIntegerCast,
                At::Tokens(quote::quote!(#as_token #ty)),
                format!("`cost` casts to the integer type `{t}`"),
                "integer arithmetic wraps silently in release builds (no overflow checks), so an \
                 estimate computed in integers can come out small and pass the ceiling; in `f64` it \
                 saturates to infinity and is refused",
                "write the estimate in `f64`, e.g. `cells * steps`: integer parameters are already \
                 `f64` inside `cost`",
            );
        }
        syn::visit::visit_expr_cast(self, c);
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

/// Refuses `as <integer>` anywhere in a `cost` expression.
pub(super) fn check_cost_casts(e: &Expr, errors: &mut Errors) {
    IntCasts { errors }.visit_expr(e);
}
