//! The safety rules: every signature the design says must not compile is
//! refused here with a compile error carrying the reason and the fix. All
//! violations of an item are collected; a tool with none becomes a
//! [`ToolModel`] for `expand`.

use syn::spanned::Spanned;
use syn::{Expr, LitStr};

mod arith;
mod body;
mod params;
mod pattern;
mod pure;
mod refs;

use body::{Place, scan_body, scan_expr};
use params::{check_param, eval_num};
use pure::check_pure;
use refs::{check_cost_casts, check_refs};

use crate::diag::{Errors, at};
use crate::model::{ArgModel, Confirm, Num, ToolModel};
use crate::parse::{Kind, Param, ToolAttr, ToolFn};
use crate::rules::Rule;

/// `scopes = "a b"`: space-separated RFC 6749 scope tokens, at least one,
/// none twice.
fn scopes(lit: Option<&LitStr>, errors: &mut Errors) -> Vec<String> {
    let Some(lit) = lit else {
        return Vec::new();
    };
    let text = lit.value();
    let mut out: Vec<String> = Vec::new();
    for token in text.split(' ').filter(|t| !t.is_empty()) {
        let valid = token
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b));
        if !valid {
            errors.rule(
                Rule::ScopesNotAScopeToken,
                lit.span(),
                format!("`{}` is not an OAuth scope", token.escape_default()),
                "scopes are RFC 6749 scope tokens: printable ASCII without space, `\"` or `\\`, \
                 compared exactly against the access token's scopes",
                "write the scopes separated by single spaces, e.g. `scopes = \"heat:read heat:write\"`",
            );
            return Vec::new();
        }
        if out.iter().any(|s| s == token) {
            errors.rule(
                Rule::ScopesRepeated,
                lit.span(),
                format!("scope `{token}` is listed twice"),
                "a list with repeats usually hides a typo in the scope meant",
                "list each scope once",
            );
            return Vec::new();
        }
        out.push(token.to_owned());
    }
    if out.is_empty() {
        errors.rule(
            Rule::ScopesEmpty,
            lit.span(),
            "`scopes` is empty",
            "an empty list would declare that the tool needs nothing, which omitting the key already says",
            "name at least one scope, or remove `scopes`",
        );
    }
    out
}

/// A positive limit literal: an integer up to `u32::MAX` (`concurrency`),
/// or a number up to 1e9 (`timeout_s`, seconds: about 31 years).
fn positive(e: &Option<Expr>, key: &str, integer: bool, errors: &mut Errors) -> Option<f64> {
    let e = e.as_ref()?;
    let (rule, cap, cap_text) = if integer {
        (
            Rule::NonPositiveConcurrency,
            f64::from(u32::MAX),
            "4_294_967_295",
        )
    } else {
        (Rule::NonPositiveTimeout, 1e9, "1e9")
    };
    match eval_num(e) {
        Some(Num::Int(i)) if i > 0 && (i as f64) <= cap => Some(i as f64),
        Some(Num::Float(f)) if !integer && f.is_finite() && f > 0.0 && f <= cap => Some(f),
        _ => {
            errors.rule(
                rule,
                e.span(),
                format!(
                    "`{key}` must be a positive {} literal of at most {cap_text}",
                    if integer { "integer" } else { "finite" }
                ),
                "limits are fixed at compile time; a zero, negative, non-finite or absurdly large \
                 limit limits nothing",
                format!("write e.g. `{key} = {}`", if integer { "4" } else { "30" }),
            );
            None
        }
    }
}

/// `confirm_above` (a finite literal at least zero and below `max_cost`:
/// at or above it, the ceiling refuses first and nothing is ever asked) or
/// `confirm`, not both.
fn confirm(a: &ToolAttr, max_cost: Option<f64>, errors: &mut Errors) -> Confirm {
    let Some(e) = &a.confirm_above else {
        return if a.confirm.is_present() {
            Confirm::Always
        } else {
            Confirm::Never
        };
    };
    if a.confirm.is_present() {
        errors.rule(
            Rule::ConfirmAbove,
            a.confirm.span(),
            "`confirm` and `confirm_above` on one tool",
            "`confirm` asks before every call, `confirm_above` only above a cost: one tool has one rule",
            "keep one of them",
        );
        return Confirm::Never;
    }
    match (eval_num(e).map(Num::as_f64), max_cost) {
        (Some(v), Some(max)) if v.is_finite() && v >= 0.0 && v < max => Confirm::Above(v),
        (Some(_), None) => Confirm::Never,
        _ => {
            errors.rule(
                Rule::ConfirmAbove,
                e.span(),
                "`confirm_above` must be a finite numeric literal, at least zero and below `max_cost`",
                "it is compared with the estimated cost, in the tool's units; at or above the \
                 ceiling, the ceiling refuses the call first and nothing is ever asked",
                "write e.g. `confirm_above = 1e6` (below `max_cost`), or `confirm` to ask every time",
            );
            Confirm::Never
        }
    }
}

/// The capabilities of `asks = ".."`: `elicitation`, `sampling`, `roots`,
/// each once.
fn asks(lit: Option<&LitStr>, errors: &mut Errors) -> Vec<String> {
    let Some(lit) = lit else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    let text = lit.value();
    for token in text.split_whitespace() {
        if !["elicitation", "sampling", "roots"].contains(&token) || out.iter().any(|t| t == token)
        {
            errors.rule(
                Rule::AsksUnknown,
                lit.span(),
                format!(
                    "`asks` lists `{token}`, which is not a client capability or is listed twice"
                ),
                "a call from a client that did not declare each capability listed is refused \
                 before anything runs; the names are the specification's",
                "list each of `elicitation`, `sampling`, `roots` at most once, space-separated",
            );
            continue;
        }
        out.push(token.to_owned());
    }
    if out.is_empty() && text.split_whitespace().next().is_none() {
        errors.rule(
            Rule::AsksUnknown,
            lit.span(),
            "`asks` is empty",
            "an empty list would declare that the tool needs nothing, which omitting the key already says",
            "name a capability (`asks = \"elicitation\"`), or remove `asks`",
        );
    }
    out
}

/// Refuses the same `x-mcp-header` on two arguments (header names compare
/// without case).
fn check_header_names(args: &[ArgModel], errors: &mut Errors) {
    let mut seen: Vec<(String, &ArgModel)> = Vec::new();
    for a in args {
        let Some(h) = &a.spec.header else { continue };
        let key = h.to_ascii_lowercase();
        if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
            errors.rule(
                Rule::HeaderName,
                a.ident.span(),
                format!(
                    "`{}` and `{}` are both mirrored in the header `Mcp-Param-{h}`",
                    first.ident, a.ident
                ),
                "one request header cannot carry two arguments: the transport could not tell \
                 which one it must match",
                "give each argument its own `header` name",
            );
        } else {
            seen.push((key, a));
        }
    }
}

/// Checks one tool; `None` when any rule is violated (errors recorded).
/// Checks the fields of a `#[derive(HardenedArgs)]` struct.
pub fn struct_fields(params: &[Param], errors: &mut Errors) -> Vec<ArgModel> {
    let mut out = Vec::new();
    for p in params {
        if matches!(p.kind, Kind::Context | Kind::RunDir) {
            errors.rule(
                Rule::ArgsStructContextField,
                at(&p.ty),
                format!("field `{}` cannot be part of an argument struct", p.ident),
                "the context and run handles are resolved by the route, not parsed from the arguments",
                "take them as separate tool parameters (`ctx: ToolContext`), or run handles as flat parameters",
            );
            continue;
        }
        if let Some(m) = check_param(p, errors) {
            out.push(m);
        }
    }
    check_header_names(&out, errors);
    params::check_same_len_targets(&out, errors);
    out
}

/// The `check(..)` rules of an argument struct (`#[hardened_args]`): the
/// rules of a tool's checks, over the struct's fields (and `self`).
pub fn struct_checks(models: &[ArgModel], checks: &[crate::parse::Check], errors: &mut Errors) {
    let names: Vec<String> = models.iter().map(|m| m.ident.to_string()).collect();
    let scope = arith::Scope {
        params: models
            .iter()
            .map(|m| (m.ident.to_string(), &m.kind))
            .collect(),
    };
    for c in checks {
        refs::check_names(&c.expr, "check", &names, "a field of this struct", errors);
        arith::check_condition(&c.expr, &scope, errors);
        scan_expr(&c.expr, Place::Check, errors);
        check_pure(&c.expr, "`check(..)`", errors);
    }
}

pub fn tool(t: &ToolFn, body: &syn::Block, errors: &mut Errors) -> Option<ToolModel> {
    let before = errors.len();
    let a = &t.attr;

    let mut missing = Vec::new();
    if a.max_cost.is_none() {
        missing.push("max_cost = <ceiling>");
    }
    if a.units.is_none() {
        missing.push("units = \"<what the cost counts>\"");
    }
    if a.cost.is_none() {
        missing.push("cost = <f64 estimate over the parameters>");
    }
    if !missing.is_empty() && !t.attr_failed {
        errors.rule(
            Rule::MissingCost,
            t.attr_span,
            format!("tool `{}` does not declare its cost ceiling", t.ident),
            "every tool must estimate its work from the validated arguments and refuse calls above a \
             hard ceiling before anything is allocated or launched",
            format!("add {}", missing.join(", ")),
        );
    }
    let max_cost = match &a.max_cost {
        Some(e) => match eval_num(e) {
            Some(n) if n.as_f64().is_finite() && n.as_f64() > 0.0 => Some(n.as_f64()),
            _ => {
                errors.rule(
                    Rule::NonPositiveMaxCost,
                    e.span(),
                    "`max_cost` must be a positive finite numeric literal",
                    "the ceiling is advertised in the schema and compared with the estimate",
                    "write e.g. `max_cost = 2e9`",
                );
                None
            }
        },
        None => None,
    };
    if let Some(u) = &a.units
        && u.value().trim().is_empty()
    {
        errors.rule(
            Rule::EmptyUnits,
            u.span(),
            "`units` must name what the cost counts",
            "the model reads the ceiling with its units to size its requests",
            "write e.g. `units = \"cell-steps\"`",
        );
    }
    let timeout_s = positive(&a.timeout_s, "timeout_s", false, errors);
    let concurrency = positive(&a.concurrency, "concurrency", true, errors).map(|f| f as usize);
    let scopes = scopes(a.scopes.as_ref(), errors);
    let confirm = confirm(a, max_cost, errors);
    let asks = asks(a.asks.as_ref(), errors);

    let name = a
        .name
        .as_ref()
        .map_or_else(|| t.ident.to_string(), LitStr::value);
    if name.is_empty()
        || name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        let span = a.name.as_ref().map_or(t.sig_span, LitStr::span);
        errors.rule(
            Rule::InvalidToolName,
            span,
            format!("invalid tool name `{name}`"),
            "MCP tool names are 1 to 64 characters of A-Z a-z 0-9 _ - .",
            "choose a name of that form with `name = \"...\"`",
        );
    }

    if !t.has_self_ref {
        errors.rule(
            Rule::ToolWithoutRefSelf,
            t.sig_span,
            format!("tool `{}` must take `&self`", t.ident),
            "routes call tools on the shared server value",
            "declare the method as `fn (&self, ...)`",
        );
    }

    let output = match &t.output {
        Some(o) => Some(o.clone()),
        None => {
            errors.rule(
                Rule::BadReturnType,
                t.ret_span,
                format!("tool `{}` must return `Result<Output<T>, ToolError>`", t.ident),
                "outputs are wrapped with warnings and artifacts and checked against the advertised \
                 schema; errors are mapped to fixed texts that never echo input",
                "return `Result<Output<T>, ToolError>` with `T: Serialize + JsonSchema`",
            );
            None
        }
    };

    let mut params = Vec::new();
    let mut contexts = 0;
    for p in &t.params {
        if let Kind::Context = p.kind {
            contexts += 1;
            if contexts > 1 {
                errors.rule(
                    Rule::SeveralToolContexts,
                    p.ty.span(),
                    "more than one `ToolContext` parameter",
                    "one context describes one call",
                    "keep one `ToolContext` parameter",
                );
            }
        }
        if let Some(m) = check_param(p, errors) {
            params.push(m);
        }
    }

    check_header_names(&params, errors);
    params::check_same_len_targets(&params, errors);

    if a.task.is_some_and(|t| !t.detached) && contexts == 0 {
        errors.rule(
            Rule::TaskWithoutContext,
            t.ident.span(),
            "a `task` tool without a `ToolContext` parameter",
            "the offer to answer with a task reaches the body through its context; without one \
             the tool can never be a task",
            "add `ctx: ToolContext` and run the job with `self.jobs.run(&ctx, ..)`, or declare \
             `task(detached)` to make the whole body the task",
        );
    }

    let names: Vec<String> = t
        .params
        .iter()
        .filter(|p| !matches!(p.kind, Kind::Context | Kind::RunDir))
        .map(|p| p.ident.to_string())
        .collect();
    if let Some(c) = &a.cost {
        check_refs(c, "cost", &names, errors);
        check_cost_casts(c, errors);
        scan_expr(c, Place::Cost, errors);
        check_pure(c, "`cost`", errors);
    }
    let scope = arith::Scope {
        params: t
            .params
            .iter()
            .map(|p| (p.ident.to_string(), &p.kind))
            .collect(),
    };
    for c in &a.check {
        check_refs(&c.expr, "check", &names, errors);
        arith::check_condition(&c.expr, &scope, errors);
        scan_expr(&c.expr, Place::Check, errors);
        check_pure(&c.expr, "`check(..)`", errors);
    }
    scan_body(body, errors);

    if errors.len() != before {
        return None;
    }
    let description = match &a.description {
        Some(d) => d.value(),
        None => t.doc.clone(),
    };
    Some(ToolModel {
        ident: t.ident.clone(),
        name,
        description,
        max_cost: max_cost?,
        units: a.units.as_ref()?.value(),
        cost: a.cost.clone()?,
        checks: a.check.clone(),
        timeout_s,
        concurrency,
        scopes,
        task: a.task,
        confirm,
        asks,
        annotations: a.annotations.clone(),
        params,
        output: output?,
        is_async: t.is_async,
    })
}
