//! Emission: from the checked model to code — argument specs (one `static`
//! per argument, read by the parser, the checks and the schema alike), the
//! revalidation function, the prologue of each tool method, the router
//! functions, and the `HardenedArgs` impl.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::Type;

use crate::model::{ArgModel, Confirm, DefaultLit, Num, Spec, ToolModel};
use crate::parse::{Kind, ToolsAttr};

/// The error of a `RunDir` parameter in a server without the run root
/// (raised by the runtime's `needs_runs!` gate, which knows the feature).
const RUNS_GATE: &str = "a `RunDir` parameter needs the run root: enable the `runs` feature of hardened-mcp (`features = [\"runs\"]`)";
/// The error of a `task` tool in a server without solver jobs.
const JOBS_GATE: &str = "a `task` tool is served as an MCP task by solver jobs: enable the `jobs` feature of hardened-mcp (`features = [\"jobs\"]`)";

/// The one path through which generated code reaches the runtime.
pub(crate) fn hm() -> TokenStream {
    quote!(::hardened_mcp::__private::v1)
}

fn names(m: &ToolModel) -> (syn::Ident, String) {
    (format_ident!("validate_{}", m.ident), m.name.clone())
}

/// The statement prepended to a tool body: revalidate the arguments.
pub(crate) fn validate_call(m: &ToolModel) -> TokenStream {
    let (vname, _) = names(m);
    let args = m.params.iter().filter(|p| is_arg(p)).map(|p| {
        let id = &p.ident;
        quote!(&#id)
    });
    let e = syn::Ident::new("__hardened_err", Span::mixed_site());
    quote! {
        if let ::core::result::Result::Err(#e) = Self::#vname(#(#args),*) {
            return ::core::result::Result::Err(#e);
        }
    }
}

fn is_arg(p: &ArgModel) -> bool {
    !matches!(p.kind, Kind::Context | Kind::RunDir)
}

fn int_tokens(i: i128) -> TokenStream {
    let lit = Literal::i128_suffixed(i.unsigned_abs() as i128);
    if i < 0 { quote!(-#lit) } else { quote!(#lit) }
}

fn f64_tokens(f: f64) -> TokenStream {
    let lit = Literal::f64_suffixed(f.abs());
    if f < 0.0 { quote!(-#lit) } else { quote!(#lit) }
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> TokenStream) -> TokenStream {
    match v {
        Some(v) => {
            let t = f(v);
            quote!(::core::option::Option::Some(#t))
        }
        None => quote!(::core::option::Option::None),
    }
}

fn opt_str(v: &Option<String>) -> TokenStream {
    opt(v.as_deref(), |s| quote!(#s))
}

fn doc_tokens(
    description: &Option<String>,
    units: &Option<String>,
    header: &Option<String>,
) -> TokenStream {
    let hm = hm();
    let d = opt_str(description);
    let u = opt_str(units);
    let h = opt_str(header);
    quote!(#hm::Doc { description: #d, units: #u, header: #h })
}

/// The spec of a scalar kind.
fn scalar_spec(kind: &Kind, spec: &Spec, doc: TokenStream) -> TokenStream {
    let hm = hm();
    match kind {
        Kind::Int(_) => {
            let i = |n: Option<Num>| {
                opt(n, |n| match n {
                    Num::Int(i) => int_tokens(i),
                    Num::Float(f) => int_tokens(f as i128),
                })
            };
            let (a, b, c, d) = (
                i(spec.min),
                i(spec.max),
                i(spec.exclusive_min),
                i(spec.exclusive_max),
            );
            let def = i(match spec.default {
                Some(DefaultLit::Num(n)) => Some(n),
                _ => None,
            });
            quote!(#hm::IntSpec { min: #a, max: #b, exclusive_min: #c, exclusive_max: #d, default: #def, doc: #doc })
        }
        Kind::Float(_) => {
            let f = |n: Option<Num>| opt(n, |n| f64_tokens(n.as_f64()));
            let (a, b, c, d) = (
                f(spec.min),
                f(spec.max),
                f(spec.exclusive_min),
                f(spec.exclusive_max),
            );
            let def = f(match spec.default {
                Some(DefaultLit::Num(n)) => Some(n),
                _ => None,
            });
            quote!(#hm::FloatSpec { min: #a, max: #b, exclusive_min: #c, exclusive_max: #d, default: #def, doc: #doc })
        }
        Kind::Bool => {
            let def = opt(
                match spec.default {
                    Some(DefaultLit::Bool(b)) => Some(b),
                    _ => None,
                },
                |b| quote!(#b),
            );
            quote!(#hm::BoolSpec { default: #def, doc: #doc })
        }
        Kind::Str => {
            let usz = |n: Option<usize>| {
                opt(n, |n| {
                    let l = Literal::usize_suffixed(n);
                    quote!(#l)
                })
            };
            let (a, b) = (usz(spec.min_len), usz(spec.max_len));
            let pat = opt(
                spec.pattern.as_ref().map(|p| p.as_str()),
                |p| quote!(#hm::Pattern::new(#p)),
            );
            let cs = opt(spec.charset, |c| {
                let v = syn::Ident::new(c.variant(), Span::call_site());
                quote!(#hm::Charset::#v)
            });
            let def = opt(
                match &spec.default {
                    Some(DefaultLit::Str(s)) => Some(s.as_str()),
                    _ => None,
                },
                |s| quote!(#s),
            );
            quote!(#hm::StrSpec { min_len: #a, max_len: #b, pattern: #pat, charset: #cs, default: #def, doc: #doc })
        }
        _ => {
            let def = opt(
                match &spec.default {
                    Some(DefaultLit::Str(s)) => Some(s.as_str()),
                    _ => None,
                },
                |s| quote!(#s),
            );
            quote!(#hm::NamedSpec { default: #def, doc: #doc })
        }
    }
}

/// The spec expression of a parameter (its `Arg::Spec`).
fn spec_tokens(p: &ArgModel) -> TokenStream {
    let hm = hm();
    match p.kind.base() {
        Kind::Vec(inner) => {
            let item_spec = Spec {
                default: None,
                description: None,
                ..p.spec.clone()
            };
            let counts = |min: Option<usize>, max: Option<usize>| {
                let min = Literal::usize_suffixed(min.unwrap_or(0));
                let max = Literal::usize_suffixed(max.unwrap_or(0));
                quote!(min_items: #min, max_items: #max)
            };
            let (cell_kind, nested) = match &**inner {
                Kind::Vec(cell) => (&**cell, true),
                scalar => (scalar, false),
            };
            let cell = scalar_spec(
                cell_kind,
                &item_spec,
                doc_tokens(&None, &p.spec.units, &None),
            );
            // An array of arrays: the rows' spec around the cells'.
            let item = if nested {
                let (min, max) = p.spec.rows.unwrap_or((None, 0));
                let rows = counts(min, Some(max));
                let none = doc_tokens(&None, &None, &None);
                quote!(#hm::VecSpec { #rows, rectangular: false, max_total: #hm::Option::None, item: #cell, doc: #none })
            } else {
                cell
            };
            let outer = counts(p.spec.min_items, p.spec.max_items);
            let rectangular = p.spec.rectangular;
            let max_total = opt(p.spec.max_total, |n| {
                let l = Literal::usize_suffixed(n);
                quote!(#l)
            });
            let doc = doc_tokens(&p.spec.description, &None, &None);
            quote!(#hm::VecSpec { #outer, rectangular: #rectangular, max_total: #max_total, item: #item, doc: #doc })
        }
        k => scalar_spec(
            k,
            &p.spec,
            doc_tokens(&p.spec.description, &p.spec.units, &p.spec.header),
        ),
    }
}

/// The static holding the spec of argument `p`: named by the argument,
/// and by `owner` (the tool's position in its impl block) where several
/// tools share one scope. Hygienic (mixed-site), so never visible to the
/// user's code.
fn spec_ident(owner: Option<usize>, p: &ArgModel) -> syn::Ident {
    let name = match owner {
        Some(t) => format!("__hardened_spec_{t}_{}", p.key()),
        None => format!("__hardened_spec_{}", p.key()),
    };
    syn::Ident::new(&name, Span::mixed_site())
}

/// The concrete type of a parameter's spec (what `<T as Arg>::Spec` is
/// for its kind). Statics are declared with it, not with the projection,
/// so that a type that is not an argument kind is not reported at the
/// static's initializer as well.
fn spec_ty(p: &ArgModel) -> TokenStream {
    let hm = hm();
    fn scalar(k: &Kind, hm: &TokenStream) -> TokenStream {
        match k {
            Kind::Int(_) => quote!(#hm::IntSpec),
            Kind::Float(_) => quote!(#hm::FloatSpec),
            Kind::Bool => quote!(#hm::BoolSpec),
            Kind::Str => quote!(#hm::StrSpec),
            _ => quote!(#hm::NamedSpec),
        }
    }
    match p.kind.base() {
        Kind::RunDir => quote!(#hm::StrSpec),
        Kind::Vec(inner) => match &**inner {
            Kind::Vec(cell) => {
                let cell = scalar(cell, &hm);
                quote!(#hm::VecSpec<#hm::VecSpec<#cell>>)
            }
            item => {
                let item = scalar(item, &hm);
                quote!(#hm::VecSpec<#item>)
            }
        },
        k => scalar(k, &hm),
    }
}

// Every use of a parameter's `Arg` impl below is a qualified path
// `<T as Arg>::..`, never a call of a generic function bounded by `Arg`:
// when `T` is not an argument kind, all uses then produce one identical
// error at `T` (deduplicated by the compiler), instead of one per use with
// notes naming internal functions.

/// `<T as Arg>::item`, located at `T` (with the macro's hygiene): an
/// unsatisfied `T: Arg` is reported at the parameter's type, not at
/// `#[hardened_tools]`.
fn arg_fn(ty: &impl ToTokens, item: &str) -> TokenStream {
    let hm = hm();
    let sp = Span::call_site().located_at(syn::spanned::Spanned::span(ty));
    let item = syn::Ident::new(item, sp);
    quote::quote_spanned!(sp=> <#ty as #hm::Arg>::#item)
}

/// `&spec`, spanned at `T` itself: checking it against `<T as Arg>::Spec`
/// then reports an unsatisfied `T: Arg` exactly like the `T` in
/// [`arg_fn`], and the compiler shows it once. (The static is an item, so
/// the name resolves at the call site whatever its span.)
fn spec_ref(ty: &impl ToTokens, spec: &syn::Ident) -> TokenStream {
    let at = syn::spanned::Spanned::span(ty);
    let mut spec = spec.clone();
    spec.set_span(at);
    quote::quote_spanned!(at=> &#spec)
}

/// `Result<T, ArgError>`: parses the argument in `slot`, or its absent
/// value, or a missing-argument error (as `take`).
fn take_tokens(ty: &impl ToTokens, slot: &syn::Ident, spec: &syn::Ident, key: &str) -> TokenStream {
    let hm = hm();
    let v = syn::Ident::new("__hardened_value", Span::mixed_site());
    let (parse, absent) = (arg_fn(ty, "parse"), arg_fn(ty, "absent"));
    let r = spec_ref(ty, spec);
    quote! {
        match #slot {
            #hm::Option::Some(#v) => #parse(#v, #r, #key),
            #hm::Option::None => #hm::Option::unwrap_or_else(
                #absent(#r, #key),
                || #hm::Result::Err(#hm::ArgError::missing(#key)),
            ),
        }
    }
}

/// Adds the spec fault of one argument, if any, to `faults` (a `&mut Vec`).
fn self_test_tokens(
    ty: &impl ToTokens,
    faults: TokenStream,
    key: &str,
    spec: &syn::Ident,
) -> TokenStream {
    let hm = hm();
    let f = syn::Ident::new("__hardened_fault", Span::mixed_site());
    let self_test = arg_fn(ty, "self_test");
    let r = spec_ref(ty, spec);
    quote! {
        if let #hm::Result::Err(#f) = #self_test(#r) {
            #hm::Vec::push(#faults, (#key, #f));
        }
    }
}

/// `.property(..)` of an `InputSchema` builder for one argument.
fn schema_tokens(ty: &impl ToTokens, key: &str, spec: &syn::Ident) -> TokenStream {
    let hm = hm();
    let (schema, absent, titles) = (
        arg_fn(ty, "schema"),
        arg_fn(ty, "absent"),
        arg_fn(ty, "titles"),
    );
    let r = spec_ref(ty, spec);
    quote! {
        .property(
            #key,
            #schema(#r),
            #hm::Option::is_none(&#absent(#r, #key)),
        )
        .titles(#key, #titles())
    }
}

/// Parameters that come from the argument object (all but the context).
fn is_wire(p: &ArgModel) -> bool {
    !matches!(p.kind, Kind::Context)
}

/// The type a parameter is parsed as: a run handle is parsed as a string.
fn wire_ty(p: &ArgModel) -> TokenStream {
    match p.kind {
        Kind::RunDir => quote!(::std::string::String),
        _ => {
            let ty = &p.ty;
            quote!(#ty)
        }
    }
}

/// One `static` per argument with a spec (every parameter but the context
/// and an `#[args]` struct), for the parser, the schema, the startup
/// checks and the validator alike. `owner` as in [`spec_ident`].
fn spec_statics<'a>(
    owner: Option<usize>,
    params: impl IntoIterator<Item = &'a ArgModel>,
) -> TokenStream {
    let hm = hm();
    let mut out = TokenStream::new();
    for p in params {
        if matches!(p.kind, Kind::Args | Kind::Context) {
            continue;
        }
        let id = spec_ident(owner, p);
        let ty = spec_ty(p);
        let spec = match p.kind {
            Kind::RunDir => quote!(#hm::run_handle_spec()),
            _ => spec_tokens(p),
        };
        out.extend(quote! {
            #[allow(non_upper_case_globals)]
            static #id: #ty = #spec;
        });
        // A token default or header on a named type: an enum's only.
        if matches!(p.kind.base(), Kind::Named)
            && (p.spec.default.is_some() || p.spec.header.is_some())
        {
            let t = &p.ty;
            let sp = Span::call_site().located_at(syn::spanned::Spanned::span(t));
            let item = syn::Ident::new("TAKES_TOKEN", sp);
            out.extend(quote::quote_spanned!(sp=> const _: () = <#t as #hm::TakesToken>::#item;));
        }
    }
    out
}

/// `let id = ..;`: a parameter rebound as `check(..)` and `cost` see it:
/// a number or bool by value; a named type as its `Arg::Seen` says (an
/// enum by value, a record by reference), through a path spanned at the
/// type so that a type that is no argument kind is reported there once.
fn rebind(id: &syn::Ident, ty: &Type, kind: &Kind) -> TokenStream {
    if matches!(kind.base(), Kind::Named) {
        let seen = arg_fn(ty, "seen");
        quote!(let #id = #seen(#id);)
    } else {
        quote!(let #id: #ty = *#id;)
    }
}

/// The shape rules between `p` and another array argument
/// (`same_len_as`), each a `Result<(), ArgError>` expression; `at` gives
/// the expression of an argument by its identifier (a reference).
fn shape_rules(p: &ArgModel, at: impl Fn(&syn::Ident) -> TokenStream) -> Vec<TokenStream> {
    let hm = hm();
    let key = p.key();
    let this = at(&p.ident);
    let rule = |target: &syn::Ident, f: &str| {
        let other = at(target);
        let name = target.to_string();
        let other_key = name.strip_prefix("r#").unwrap_or(&name);
        let f = syn::Ident::new(f, Span::call_site());
        quote!(#hm::#f(#this, #key, #other, #other_key))
    };
    let mut out = Vec::new();
    if let Some(t) = &p.spec.same_len_as {
        out.push(rule(t, "same_len"));
    }
    if let Some(t) = &p.spec.rows_same_len_as {
        out.push(rule(t, "rows_same_len"));
    }
    out
}

/// The extra impl block. With `failed`, the router functions are stubs so
/// that the compile errors already reported are not buried under
/// follow-on "function not found" errors.
pub(crate) fn generate(
    attr: &ToolsAttr,
    self_ty: &Type,
    models: &[ToolModel],
    failed: bool,
) -> TokenStream {
    let hm = hm();
    let router = attr
        .router
        .clone()
        .unwrap_or_else(|| format_ident!("hardened_tool_router"));
    let try_router = format_ident!("try_{}", router);
    let set = format_ident!("{}_set", router);

    let statics = models
        .iter()
        .enumerate()
        .map(|(t, m)| spec_statics(Some(t), &m.params));
    let validators = models.iter().enumerate().map(|(t, m)| validator(t, m));
    let decls: Vec<TokenStream> = if failed {
        Vec::new()
    } else {
        models
            .iter()
            .enumerate()
            .map(|(t, m)| decl(self_ty, t, m))
            .collect()
    };
    let set_body = if failed {
        quote!(::core::unreachable!(
            "hardened-mcp: this impl block has compile errors"
        ))
    } else {
        quote!(#hm::ToolSet::new(::std::vec![#(#decls),*]))
    };
    let doc_set = format!(
        "The hardened tools of this impl block (generated by `#[hardened_tools]`), before the \
         startup checks. Use [`Self::{router}`] to serve them."
    );
    let doc_try = "Builds the rmcp tool router of the hardened tools, or reports every startup \
                   fault (secret-like output fields, invalid patterns, bad defaults), naming tool \
                   and field.";
    let doc_router = format!(
        "The rmcp tool router of the hardened tools; merge it with `+` and serve it with \
         `#[tool_handler(router = ...)]`.\n\n# Panics\n\nAt startup, with the message of \
         [`Self::{try_router}`], if a declaration must not be served."
    );
    // Inside an anonymous const: the spec statics, declared once for all
    // the functions below, stay out of the user's scope.
    quote! {
        const _: () = {
        #(#statics)*

        impl #self_ty {
            #(#validators)*

            #[doc = #doc_set]
            pub fn #set() -> #hm::ToolSet<Self> {
                #set_body
            }

            #[doc = #doc_try]
            pub fn #try_router() -> #hm::Result<#hm::ToolRouter<Self>, #hm::RouterError> {
                Self::#set().into_router()
            }

            #[doc = #doc_router]
            #[track_caller]
            pub fn #router() -> #hm::ToolRouter<Self> {
                #hm::router_or_panic(Self::#try_router())
            }
        }
        };
    }
}

/// What the validator and the estimate share: the parameters (by
/// reference), the rebinding of `Copy` ones by value, and, inside `cost`
/// only, integer parameters as `f64`.
struct CostParts {
    params: Vec<TokenStream>,
    rebinds: Vec<TokenStream>,
    as_f64: Vec<TokenStream>,
}

fn cost_parts(m: &ToolModel) -> CostParts {
    let hm = hm();
    let params = m
        .params
        .iter()
        .filter(|p| is_arg(p))
        .map(|p| {
            let id = &p.ident;
            let ty = &p.ty;
            quote!(#id: &#ty)
        })
        .collect();
    let rebinds: Vec<TokenStream> = m
        .params
        .iter()
        .filter(|p| is_arg(p) && p.kind.is_copy())
        .map(|p| rebind(&p.ident, &p.ty, &p.kind))
        .collect();
    // Inside `cost` only, integer parameters are `f64`: an estimate written
    // over them saturates to infinity (refused) instead of wrapping in
    // release builds; `check` rules above keep the native types. The new
    // binding is spanned at the call site: the expression (written by the
    // user) still resolves to it, and clippy does not take the user's
    // `cells as f64` for a cast of a local declared `f64` in their code.
    let f64_ty = quote!(::core::primitive::f64);
    let as_f64: Vec<TokenStream> = m
        .params
        .iter()
        .filter(|p| is_arg(p))
        .filter_map(|p| {
            let id = &p.ident;
            let mut new_id = id.clone();
            new_id.set_span(Span::call_site());
            match &p.kind {
                Kind::Int(_) => Some(quote!(let #new_id: #f64_ty = #id as #f64_ty;)),
                Kind::Option(k) if matches!(**k, Kind::Int(_)) => {
                    let v = syn::Ident::new("__hardened_i", Span::mixed_site());
                    Some(quote! {
                        let #new_id: #hm::Option<#f64_ty> =
                            #hm::Option::map(#id, |#v| #v as #f64_ty);
                    })
                }
                _ => None,
            }
        })
        .collect();
    CostParts {
        params,
        rebinds,
        as_f64,
    }
}

/// The lints the generated functions over the parameters allow: they take
/// every parameter by reference (used or not), and `cost` converts to
/// `f64` on purpose.
fn cost_lints() -> TokenStream {
    quote! {
        #[allow(
            unused_variables,
            clippy::too_many_arguments,
            clippy::ptr_arg,
            clippy::trivially_copy_pass_by_ref,
            clippy::cast_lossless,
            clippy::cast_precision_loss
        )]
    }
}

/// The estimate of a tool that asks for approval above a cost: the `cost`
/// expression over the validated arguments, as the validator evaluates it.
fn estimate(m: &ToolModel, name: &syn::Ident) -> TokenStream {
    let CostParts {
        params,
        rebinds,
        as_f64,
    } = cost_parts(m);
    let cost = &m.cost;
    let lints = cost_lints();
    quote! {
        #lints
        fn #name(#(#params),*) -> ::core::primitive::f64 {
            #(#rebinds)*
            #(#as_f64)*
            #cost
        }
    }
}

/// `pub fn validate_<tool>(&args...)`: the revalidation step.
fn validator(t: usize, m: &ToolModel) -> TokenStream {
    let hm = hm();
    let (vname, name) = names(m);
    let CostParts {
        params,
        rebinds,
        as_f64,
    } = cost_parts(m);
    // Each argument's check, as a `Result<(), ArgError>` expression.
    let checks: Vec<TokenStream> = m
        .params
        .iter()
        .filter(|p| is_arg(p))
        .map(|p| {
            let id = &p.ident;
            let ty = &p.ty;
            let key = p.key();
            let s = spec_ident(Some(t), p);
            match p.kind {
                Kind::Args => quote!(<#ty as #hm::HardenedArgs>::validate(#id)),
                _ => {
                    let (check, r) = (arg_fn(ty, "check"), spec_ref(ty, &s));
                    quote!(#check(#id, #r, #key))
                }
            }
        })
        .chain(
            m.params
                .iter()
                .filter(|p| is_arg(p))
                .flat_map(|p| shape_rules(p, |id| quote!(#id))),
        )
        .collect();
    let conditions: Vec<&syn::Expr> = m.checks.iter().map(|c| &c.expr).collect();
    let reasons: Vec<&syn::LitStr> = m.checks.iter().map(|c| &c.reason).collect();
    let cost = &m.cost;
    let max = f64_tokens(m.max_cost);
    let units = &m.units;
    let cost_id = syn::Ident::new("__hardened_cost", Span::mixed_site());
    let ok_id = syn::Ident::new("__hardened_ok", Span::mixed_site());
    let f64_ty = quote!(::core::primitive::f64);
    let doc = format!(
        "Revalidates the arguments of the `{name}` tool: every declared bound, every `check(..)` \
         rule, then the cost ceiling ({} {units}). The tool runs it again on every call, so direct \
         calls that bypass the protocol are checked too.",
        m.max_cost
    );
    // Two passes over the same checks, in the same order. The first only
    // asks whether everything holds: with the spec statics folded into it,
    // it is the comparisons a careful author would write by hand, small
    // enough to be inlined into the tool's prologue. Only when something
    // fails does the second, out of line (`cold`), find the first failure
    // and build its error. `check(..)` and `cost` are pure (a compile-time
    // rule), so evaluating them again there changes nothing.
    let lints = cost_lints();
    quote! {
        #[doc = #doc]
        #[inline]
        #lints
        #[allow(clippy::nonminimal_bool)]
        pub fn #vname(#(#params),*) -> #hm::Result<(), #hm::ToolError> {
            let #ok_id: ::core::primitive::bool = #(#hm::Result::is_ok(&#checks) &&)* {
                #(#rebinds)*
                #((#conditions) &&)* {
                    let #cost_id: #f64_ty = {
                        #(#as_f64)*
                        #cost
                    };
                    #hm::cost_within(#cost_id, #max)
                }
            };
            if #ok_id {
                #hm::Result::Ok(())
            } else {
                #hm::cold(|| -> #hm::Result<(), #hm::ToolError> {
                    #(#checks?;)*
                    #(#rebinds)*
                    #(#hm::rule(#conditions, #reasons)?;)*
                    let #cost_id: #f64_ty = {
                        #(#as_f64)*
                        #cost
                    };
                    #hm::check_cost(#cost_id, #max, #units)
                })
            }
        }
    }
}

/// One `ToolDecl` expression: specs, parser, check and call entries.
fn decl(self_ty: &Type, t: usize, m: &ToolModel) -> TokenStream {
    let hm = hm();
    let (vname, name) = names(m);
    let args: Vec<&ArgModel> = m.params.iter().filter(|p| is_wire(p)).collect();
    let vars: Vec<syn::Ident> = (0..args.len())
        .map(|i| syn::Ident::new(&format!("__hardened_a{i}"), Span::mixed_site()))
        .collect();
    let slots: Vec<syn::Ident> = (0..args.len())
        .map(|i| syn::Ident::new(&format!("__hardened_s{i}"), Span::mixed_site()))
        .collect();
    let keys: Vec<String> = args.iter().map(|p| p.key()).collect();
    let tys: Vec<TokenStream> = args.iter().map(|p| wire_ty(p)).collect();
    let specs: Vec<syn::Ident> = args.iter().map(|p| spec_ident(Some(t), p)).collect();

    let obj = syn::Ident::new("__hardened_obj", Span::mixed_site());
    let k = syn::Ident::new("__hardened_k", Span::mixed_site());
    let v = syn::Ident::new("__hardened_v", Span::mixed_site());
    let parse_fn = syn::Ident::new("__hardened_parse", Span::mixed_site());
    let check_fn = syn::Ident::new("__hardened_check", Span::mixed_site());
    let call_fn = syn::Ident::new("__hardened_call", Span::mixed_site());
    let meta = syn::Ident::new("__HARDENED_META", Span::mixed_site());
    let limiter = syn::Ident::new("__HARDENED_LIMITER", Span::mixed_site());
    let svc = syn::Ident::new("__hardened_service", Span::mixed_site());
    let ctx = syn::Ident::new("__hardened_ctx", Span::mixed_site());
    let raw = syn::Ident::new("__hardened_args", Span::mixed_site());
    let faults = syn::Ident::new("__hardened_faults", Span::mixed_site());

    let groups: Vec<&Type> = args
        .iter()
        .filter(|p| matches!(p.kind, Kind::Args))
        .map(|p| &p.ty)
        .collect();
    // One `#[args]` struct alone is the whole argument object.
    let struct_form = match groups.as_slice() {
        [st] if args.len() == 1 => Some(*st),
        _ => None,
    };
    let takes: Vec<TokenStream> = (0..args.len())
        .map(|i| match args[i].kind {
            Kind::Args => {
                let ty = &tys[i];
                quote!(<#ty as #hm::HardenedArgs>::parse_part(#obj))
            }
            _ => take_tokens(&tys[i], &slots[i], &specs[i], &keys[i]),
        })
        .collect();
    // Groups beside other arguments: the tool's keys are theirs and its
    // own, each declared once (a constant, so a shared key fails the build).
    let all_keys = syn::Ident::new("__HARDENED_KEYS", Span::mixed_site());
    let own_keys: Vec<&String> = args
        .iter()
        .zip(&keys)
        .filter(|(p, _)| !matches!(p.kind, Kind::Args))
        .map(|(_, k)| k)
        .collect();
    let keys_decl = match (groups.is_empty(), struct_form) {
        (false, None) => {
            let at = args
                .iter()
                .find(|p| matches!(p.kind, Kind::Args))
                .map_or_else(Span::call_site, |p| syn::spanned::Spanned::span(&p.ty));
            let n_own = own_keys.len();
            quote::quote_spanned! {at=>
                static #all_keys: [&str; #(<#groups as #hm::HardenedArgs>::KEYS.len() +)* #n_own] =
                    #hm::concat_keys(&[#(<#groups as #hm::HardenedArgs>::KEYS,)* &[#(#own_keys,)*]]);
                const _: () = ::hardened_mcp::__private::v1::assert_distinct_keys(&#all_keys);
            }
        }
        _ => quote!(),
    };
    // The keys a call may hold, and (with groups) the arm that leaves a
    // group's keys to the group.
    let (declared, group_keys) = match groups.is_empty() {
        true => (quote!(&[#(#keys,)*]), quote!()),
        false => {
            let other = syn::Ident::new("__hardened_other", Span::mixed_site());
            (
                quote!(&#all_keys),
                quote!(#other if #all_keys.contains(&#other) => {}),
            )
        }
    };
    let slot_vars: Vec<&syn::Ident> = args
        .iter()
        .zip(&slots)
        .filter(|(p, _)| !matches!(p.kind, Kind::Args))
        .map(|(_, s)| s)
        .collect();
    let (arguments, parse) = if let Some(st) = struct_form {
        (
            quote!(<#st as #hm::HardenedArgs>::KEYS),
            quote! {
                fn #parse_fn(#obj: &#hm::JsonObject) -> #hm::Result<(#st,), #hm::ArgError> {
                    #hm::Result::Ok((<#st as #hm::HardenedArgs>::parse(#obj)?,))
                }
            },
        )
    } else {
        let parse = quote! {
            #[allow(clippy::type_complexity)]
            fn #parse_fn(#obj: &#hm::JsonObject) -> #hm::Result<(#(#tys,)*), #hm::ArgError> {
                #(let mut #slot_vars: #hm::Option<&#hm::Value> = #hm::Option::None;)*
                for (#k, #v) in #obj {
                    match #k.as_str() {
                        #(#own_keys => #slot_vars = #hm::Option::Some(#v),)*
                        #group_keys
                        _ => return #hm::Result::Err(#hm::ArgError::unknown_argument_of(#declared)),
                    }
                }
                #(let #vars: #tys = #takes?;)*
                #hm::Result::Ok((#(#vars,)*))
            }
        };
        (declared, parse)
    };

    let validated: Vec<&syn::Ident> = args
        .iter()
        .zip(&vars)
        .filter(|(p, _)| is_arg(p))
        .map(|(_, v)| v)
        .collect();
    let check = quote! {
        fn #check_fn(#obj: &#hm::JsonObject) -> #hm::Result<(), #hm::ToolError> {
            let (#(#vars,)*) = #parse_fn(#obj)?;
            <#self_ty>::#vname(#(&#validated),*)
        }
    };
    // Run handles are resolved through the server's run root, for this
    // caller, before the body runs.
    let resolves = args
        .iter()
        .zip(&vars)
        .filter(|(p, _)| matches!(p.kind, Kind::RunDir))
        .map(|(p, v)| {
            // Through the `runs` gate, spanned at the parameter's type: a
            // server without the run root gets one error there.
            let at = syn::spanned::Spanned::span(&p.ty);
            quote::quote_spanned! {at=>
                #hm::needs_runs! {
                    { ::core::compile_error!(#RUNS_GATE); }
                    let #v = match #hm::HasRunRoot::run_root(#svc).resolve(&#v, #ctx.caller()) {
                        #hm::Result::Ok(d) => d,
                        #hm::Result::Err(e) => return #hm::ToolError::from(e).into_call_tool_result(),
                    };
                }
            }
        });

    // The method call, in declared parameter order.
    let mut arg_iter = vars.iter();
    let call_args: Vec<TokenStream> = m
        .params
        .iter()
        .map(|p| match p.kind {
            Kind::Context => quote!(::core::clone::Clone::clone(&#ctx)),
            _ => {
                let v = arg_iter.next();
                quote!(#v)
            }
        })
        .collect();
    // A tool that asks for approval: revalidate, estimate, ask; then the
    // body (which revalidates again, as on every call).
    let est_fn = syn::Ident::new("__hardened_estimate", Span::mixed_site());
    let (estimate_fn, approval) = if m.confirm == Confirm::Never {
        (TokenStream::new(), TokenStream::new())
    } else {
        (
            estimate(m, &est_fn),
            quote! {
                <#self_ty>::#vname(#(&#validated),*)?;
                #hm::approve(&#meta, &#ctx, #est_fn(#(&#validated),*)).await?;
            },
        )
    };
    let method = &m.ident;
    let output = &m.output;
    let invoke = if m.is_async {
        quote!(#svc.#method(#(#call_args),*).await)
    } else {
        quote!(#svc.#method(#(#call_args),*))
    };
    let call = quote! {
        fn #call_fn<'a>(
            #svc: &'a #self_ty,
            #raw: #hm::Option<#hm::JsonObject>,
            #ctx: #hm::ToolContext,
        ) -> #hm::BoxFuture<'a, #hm::CallToolResult> {
            #hm::Box::pin(async move {
                static #limiter: #hm::OnceLock<#hm::ConcurrencyLimiter> = #hm::OnceLock::new();
                let #obj = #raw.unwrap_or_default();
                let (#(#vars,)*) = match #parse_fn(&#obj) {
                    #hm::Result::Ok(v) => v,
                    #hm::Result::Err(e) => return #hm::ToolError::from(e).into_call_tool_result(),
                };
                #(#resolves)*
                #hm::run::<#output, _>(&#meta, &#limiter, &#ctx, async { #approval #invoke }).await
            })
        }
    };

    let timeout = opt(m.timeout_s, f64_tokens);
    let conc = opt(m.concurrency, |n| {
        let l = Literal::usize_suffixed(n);
        quote!(#l)
    });
    let max = f64_tokens(m.max_cost);
    let scopes = &m.scopes;
    let task = match m.task {
        None => quote!(#hm::TaskSupport::Never),
        Some(t) if t.required => quote!(#hm::TaskSupport::Required),
        Some(_) => quote!(#hm::TaskSupport::Optional),
    };
    let detached = m.task.is_some_and(|t| t.detached);
    // A `task` tool needs the jobs capability: one error at `task` without it.
    let task_gate = m.task.map(|t| {
        let at = t.span;
        quote::quote_spanned!(at=> #hm::needs_jobs! { { ::core::compile_error!(#JOBS_GATE); } })
    });
    let units = &m.units;
    let description = &m.description;
    let confirm = match m.confirm {
        Confirm::Never => quote!(#hm::Confirm::Never),
        Confirm::Always => quote!(#hm::Confirm::Always),
        Confirm::Above(v) => {
            let v = f64_tokens(v);
            quote!(#hm::Confirm::Above(#v))
        }
    };
    let asks = m.asks.iter().map(|a| match a.as_str() {
        "sampling" => quote!(#hm::ClientNeed::Sampling),
        "roots" => quote!(#hm::ClientNeed::Roots),
        _ => quote!(#hm::ClientNeed::Elicitation),
    });
    let annotations = match &m.annotations {
        Some(a) => {
            let b = |v: Option<bool>| opt(v, |b| quote!(#b));
            let (r, d, i, o) = (
                b(a.read_only),
                b(a.destructive),
                b(a.idempotent),
                b(a.open_world),
            );
            let title = opt(
                a.title.as_ref(),
                |t| quote!(::std::string::String::from(#t)),
            );
            quote!(#hm::Option::Some(#hm::annotations(#r, #d, #i, #o, #title)))
        }
        None => quote!(#hm::Option::None),
    };
    let schema_args = args.iter().map(|p| {
        let ty = wire_ty(p);
        let key = p.key();
        let s = spec_ident(Some(t), p);
        match p.kind {
            Kind::Args => quote!(.with::<#ty>()),
            _ => schema_tokens(&ty, &key, &s),
        }
    });
    let self_tests = args.iter().map(|p| {
        let ty = wire_ty(p);
        let key = p.key();
        let s = spec_ident(Some(t), p);
        match p.kind {
            Kind::Args => quote!(<#ty as #hm::HardenedArgs>::spec_faults(&mut #faults);),
            _ => self_test_tokens(&ty, quote!(&mut #faults), &key, &s),
        }
    });

    quote! {{
        #keys_decl
        static #meta: #hm::ToolMeta = #hm::ToolMeta {
            name: #name,
            max_cost: #max,
            units: #units,
            timeout_s: #timeout,
            concurrency: #conc,
            scopes: &[#(#scopes),*],
            task: #task,
            detached: #detached,
            arguments: #arguments,
            confirm: #confirm,
            asks: &[#(#asks),*],
        };
        #task_gate
        #parse
        #check
        #estimate_fn
        #call
        let mut #faults = #hm::Vec::new();
        #(#self_tests)*
        #hm::ToolDecl {
            meta: &#meta,
            description: #hm::describe(#description, &#meta),
            input_schema: #hm::InputSchema::new() #(#schema_args)* .finish(#max, #units),
            output_schema: #hm::output_schema_of::<#output>(),
            annotations: #annotations,
            spec_faults: #faults,
            call: #call_fn,
            check: #check_fn,
        }
    }}
}

/// The `HardenedArgs` impl of a checked argument struct: the same specs,
/// parser, checks and schema as flat tool parameters.
pub(crate) fn args_impl(
    ident: &syn::Ident,
    models: &[ArgModel],
    rules: &[crate::parse::Check],
) -> TokenStream {
    let hm = hm();
    let statics = spec_statics(None, models);
    let idents: Vec<&syn::Ident> = models.iter().map(|p| &p.ident).collect();
    let keys: Vec<String> = models.iter().map(|p| p.key()).collect();
    let tys: Vec<&Type> = models.iter().map(|p| &p.ty).collect();
    let specs: Vec<syn::Ident> = models.iter().map(|p| spec_ident(None, p)).collect();
    let slots: Vec<syn::Ident> = (0..models.len())
        .map(|i| syn::Ident::new(&format!("__hardened_s{i}"), Span::mixed_site()))
        .collect();
    let obj = syn::Ident::new("__hardened_obj", Span::mixed_site());
    let k = syn::Ident::new("__hardened_k", Span::mixed_site());
    let v = syn::Ident::new("__hardened_v", Span::mixed_site());
    let b = syn::Ident::new("__hardened_b", Span::mixed_site());
    let faults = syn::Ident::new("__hardened_faults", Span::mixed_site());
    let takes: Vec<TokenStream> = (0..models.len())
        .map(|i| take_tokens(tys[i], &slots[i], &specs[i], &keys[i]))
        .collect();
    let checks = tys.iter().map(|t| arg_fn(t, "check"));
    let shapes: Vec<TokenStream> = models
        .iter()
        .flat_map(|p| shape_rules(p, |id| quote!(&self.#id)))
        .collect();
    let spec_refs = tys.iter().zip(&specs).map(|(t, s)| spec_ref(t, s));
    let schemas = (0..models.len()).map(|i| schema_tokens(tys[i], &keys[i], &specs[i]));
    let self_tests =
        (0..models.len()).map(|i| self_test_tokens(tys[i], quote!(#faults), &keys[i], &specs[i]));
    // Its fields read from an object: every other key refused (the whole
    // object), or left to the tool that takes it among other arguments.
    let by_slots = |others: TokenStream| {
        quote! {
            #(let mut #slots: #hm::Option<&#hm::Value> = #hm::Option::None;)*
            for (#k, #v) in #obj {
                match #k.as_str() {
                    #(#keys => #slots = #hm::Option::Some(#v),)*
                    _ => #others,
                }
            }
            #hm::Result::Ok(Self {
                #(#idents: #takes?,)*
            })
        }
    };
    let strict = by_slots(
        quote!(return #hm::Result::Err(#hm::ArgError::unknown_argument_of(&[#(#keys,)*]))),
    );
    let part = by_slots(quote!({}));
    // The struct's own rules, over its fields (scalars by value, as in a
    // tool's checks) once every field holds its bounds.
    let struct_rules = if rules.is_empty() {
        quote!()
    } else {
        let conditions = rules.iter().map(|c| &c.expr);
        let reasons = rules.iter().map(|c| &c.reason);
        let rebinds = models.iter().filter(|p| p.kind.is_copy()).map(|p| {
            let line = rebind(&p.ident, &p.ty, &p.kind);
            quote!(#[allow(unused_variables)] #line)
        });
        quote! {
            #[allow(unused_variables)]
            let Self { #(#idents),* } = self;
            #(#rebinds)*
            #(#hm::rule(#conditions, #reasons)?;)*
        }
    };
    quote! {
        // The spec statics, once, out of the user's scope.
        const _: () = {
        #statics

        #[automatically_derived]
        impl #hm::HardenedArgs for #ident {
            const KEYS: &'static [&'static str] = &[#(#keys,)*];
            fn parse(#obj: &#hm::JsonObject) -> #hm::Result<Self, #hm::ArgError> {
                #strict
            }
            fn parse_part(#obj: &#hm::JsonObject) -> #hm::Result<Self, #hm::ArgError> {
                #part
            }
            fn validate(&self) -> #hm::Result<(), #hm::ArgError> {
                #(#checks(&self.#idents, #spec_refs, #keys)?;)*
                #(#shapes?;)*
                #struct_rules
                #hm::Result::Ok(())
            }
            fn schema(#b: #hm::InputSchema) -> #hm::InputSchema {
                #b #(#schemas)*
            }
            fn spec_faults(#faults: &mut #hm::Vec<(&'static str, &'static str)>) {
                #(#self_tests)*
            }
        }

        // The struct as one argument (a record): a parameter or field of
        // its own, or an array's items.
        #[automatically_derived]
        impl #hm::Arg for #ident {
            type Spec = #hm::NamedSpec;
            type Seen<'a> = &'a Self;
            fn seen(&self) -> &Self {
                self
            }
            fn parse(
                value: &#hm::Value,
                _spec: &#hm::NamedSpec,
                name: &'static str,
            ) -> #hm::Result<Self, #hm::ArgError> {
                #hm::record_parse::<Self>(value, name)
            }
            fn check(&self, _spec: &#hm::NamedSpec, name: &'static str) -> #hm::Result<(), #hm::ArgError> {
                #hm::record_check(self, name)
            }
            fn schema(spec: &#hm::NamedSpec) -> #hm::Map<::std::string::String, #hm::Value> {
                #hm::record_schema::<Self>(spec)
            }
            fn absent(
                _spec: &#hm::NamedSpec,
                _name: &'static str,
            ) -> #hm::Option<#hm::Result<Self, #hm::ArgError>> {
                #hm::Option::None
            }
            fn self_test(spec: &#hm::NamedSpec) -> #hm::Result<(), &'static str> {
                #hm::record_self_test::<Self>(spec)
            }
        }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Errors;
    use syn::ItemImpl;

    fn expand(src: &str) -> String {
        let item: ItemImpl = syn::parse_str(src).unwrap_or_else(|e| panic!("{e}"));
        let mut item = item;
        let mut errors = Errors::default();
        let (gen_tokens, _) =
            crate::tools::tools_impl(&ToolsAttr::default(), &mut item, &mut errors);
        assert!(errors.is_empty(), "{}", errors.into_tokens());
        format!("{} {}", quote!(#item), gen_tokens)
    }

    const SRC: &str = r#"
        impl Heat {
            /// Start a run.
            #[hardened_tool(max_cost = 2e9, units = "cell-steps", cost = cells as f64 * steps as f64,
                            check(courant <= 0.5, "courant too large"), timeout_s = 5, concurrency = 2)]
            async fn heat(&self, ctx: ToolContext,
                #[bounded(min = 8, max = 200_000)] cells: u32,
                #[bounded(min = 1, max = 10)] steps: u64,
                #[bounded(min = 0.0, max = 0.5, units = "1")] courant: f64,
                #[bounded(max_len = 8, charset = "identifier", default = "x")] label: String,
                #[bounded(max_items = 4, min = -1.0, max = 1.0)] weights: Vec<f64>,
                boundary: Option<Boundary>,
            ) -> Result<Output<Started>, ToolError> { todo!() }
        }
    "#;

    /// The compile errors of an expansion that must fail.
    fn errors_of(src: &str) -> String {
        let mut item: ItemImpl = syn::parse_str(src).unwrap_or_else(|e| panic!("{e}"));
        let mut errors = Errors::default();
        let _ = crate::tools::tools_impl(&ToolsAttr::default(), &mut item, &mut errors);
        assert!(!errors.is_empty(), "expected errors for {src}");
        errors.into_tokens().to_string()
    }

    fn tool_with(attr: &str, params: &str) -> String {
        format!(
            "impl S {{ #[hardened_tool(max_cost = 10, units = \"calls\", {attr})] \
             async fn t(&self, {params}) -> Result<Output<u32>, ToolError> {{ todo!() }} }}"
        )
    }

    #[test]
    fn cost_sees_integer_parameters_as_f64_and_checks_see_native_types() {
        let a = expand(SRC);
        let f = ":: core :: primitive :: f64";
        let cells = format!("let cells : {f} = cells as {f} ;");
        let steps = format!("let steps : {f} = steps as {f} ;");
        let rule = a.find("courant <= 0.5").expect("the check is generated");
        let (c, s) = (a.find(&cells).expect(&cells), a.find(&steps).expect(&steps));
        let cost = a.find("cells as f64 * steps as f64").expect("the cost");
        // Checks run first, on native types; the f64 views are scoped to
        // the block of the cost expression.
        assert!(rule < c && c < s && s < cost, "{a}");
        assert!(a.contains("let cells : u32 = * cells ;"));
        assert!(
            !a.contains(&format!("let courant : {f}")),
            "floats stay as declared"
        );
        assert!(!a.contains(&format!("let label : {f}")));
        // An optional integer is seen as an optional f64.
        let o = expand(&tool_with(
            "cost = n.unwrap_or(1.0)",
            "#[bounded(min = 1, max = 9)] n: Option<u64>",
        ));
        assert!(
            o.contains(&format!(
                "let n : :: hardened_mcp :: __private :: v1 :: Option < {f} >"
            )),
            "{o}"
        );
    }

    #[test]
    fn check_and_cost_are_held_to_the_body_rules_and_must_be_pure() {
        let p = "#[bounded(min = 1, max = 9)] n: u32";
        let e = errors_of(&tool_with(
            "cost = 1.0, check(std::fs::metadata(\"/etc/shadow\").is_ok(), \"r\")",
            p,
        ));
        assert!(
            e.contains("`check(..)` conditions must not use `std::fs::metadata`"),
            "{e}"
        );
        assert!(e.contains("run on every call, before anything else"), "{e}");
        assert_eq!(e.matches("compile_error").count(), 1, "{e}");
        let e = errors_of(&tool_with(
            "cost = { CALLS.fetch_add(1, Ordering::Relaxed); 1.0 }",
            p,
        ));
        assert!(
            e.contains("`cost` has a side effect (`.fetch_add(..)`)"),
            "{e}"
        );
        let e = errors_of(&tool_with(
            "cost = 1.0, check(std::env::var(\"KEY\").is_ok(), \"r\")",
            p,
        ));
        assert!(e.contains("must not use `std::env::var`"), "{e}");
        let e = errors_of(&tool_with(
            "cost = 1.0, check({ println!(\"x\"); n < 5 }, \"r\")",
            p,
        ));
        assert!(
            e.contains("`check(..)` has a side effect (the macro `println!`)"),
            "{e}"
        );
        // Pure conditions and helper calls on parameters still expand.
        expand(&tool_with(
            "cost = f64::from(n) * 2.0, check(n < 5 && helper(n), \"r\")",
            p,
        ));
    }

    #[test]
    fn integer_casts_in_cost_are_refused() {
        let params =
            "#[bounded(min = 1, max = 9)] cells: u32, #[bounded(min = 1, max = 9)] steps: u64";
        for (cost, ty) in [
            ("(cells as u64 * steps) as f64", "u64"),
            ("f64::from(cells as u32)", "u32"),
            ("(cells as ::core::primitive::usize) as f64", "usize"),
            ("[1.0, (steps as i128) as f64][1]", "i128"),
        ] {
            let e = errors_of(&tool_with(&format!("cost = {cost}"), params));
            assert!(
                e.contains(&format!("`cost` casts to the integer type `{ty}`")),
                "{e}"
            );
            assert!(e.contains("wraps silently in release builds"), "{e}");
            assert!(e.contains("integer parameters are already `f64`"), "{e}");
        }
        // f64 as f64, and integer casts in checks, are fine.
        expand(&tool_with(
            "cost = cells as f64 * steps as f64, check((cells as u64) < steps, \"r\")",
            params,
        ));
        expand(&tool_with("cost = cells * steps", params));
    }

    #[test]
    fn unknown_and_duplicate_keys_say_why_and_keep_the_suggestion() {
        let e = errors_of(&tool_with(
            "cost = 1.0",
            "#[bounded(min = 1, maxx = 2)] n: u32",
        ));
        assert!(
            e.contains("Unknown field: `maxx`. Did you mean `max`?"),
            "{e}"
        );
        assert!(e.contains("= note: an unknown key declares nothing"), "{e}");
        assert!(e.contains("the keys of `#[bounded(...)]`"), "{e}");
        let e = errors_of(&tool_with(
            "cost = 1.0, timeout = 5",
            "#[bounded(min = 1, max = 2)] n: u32",
        ));
        assert!(e.contains("Did you mean `timeout_s`?"), "{e}");
        assert!(e.contains("the keys of `#[hardened_tool(...)]`"), "{e}");
        let e = errors_of(&tool_with(
            "cost = 1.0",
            "#[bounded(min = 1, min = 0, max = 2)] n: u32",
        ));
        assert!(e.contains("Duplicate field `min`"), "{e}");
        assert!(
            e.contains("= note: two values of one key could disagree"),
            "{e}"
        );
        assert!(e.contains("keep one `min` in `#[bounded(...)]`"), "{e}");
        // Other darling errors keep darling's text first, one each, with
        // the reason and where the forms are listed.
        let e = errors_of(&tool_with(
            "cost = 1.0, name = 5",
            "#[bounded(min = 1, max = 2)] n: u32",
        ));
        assert!(
            e.contains("Unexpected type `int`\\n  = note: a setting that cannot be read"),
            "{e}"
        );
        assert!(e.contains("the keys of `#[hardened_tool(...)]`"), "{e}");
        assert_eq!(e.matches("compile_error").count(), 1, "{e}");
    }

    #[test]
    fn expansion_is_deterministic() {
        let a = expand(SRC);
        let b = expand(SRC);
        assert_eq!(a, b);
        assert!(a.contains("validate_heat"));
        assert!(a.contains(":: hardened_mcp :: __private :: v1"));
    }

    #[test]
    fn generated_code_uses_only_the_private_path() {
        let derive_args = crate::tools::derive_args(
            syn::parse_str(
                "struct Grid { #[bounded(min = 2, max = 100)] nx: u32, \
                 #[bounded(max_len = 8, pattern = \"^[a-z]+$\")] label: String }",
            )
            .unwrap(),
        );
        let derive_enum = crate::enums::derive(
            syn::parse_str("enum Mode { Fast, #[tool_enum(rename = \"slow\")] Careful }").unwrap(),
        );
        let output = crate::output::tool_output(
            TokenStream::new(),
            syn::parse_str("struct Report { cells: u32 }").unwrap(),
        );
        for (what, code) in [
            ("#[hardened_tools]", expand(SRC)),
            ("derive(HardenedArgs)", derive_args.to_string()),
            ("derive(ToolEnum)", derive_enum.to_string()),
            ("#[tool_output]", output.to_string()),
        ] {
            assert!(!code.contains("compile_error"), "{what}: {code}");
            // Every absolute path starts at the versioned private module,
            // `core` or `std`: nothing else of the runtime, and no crate
            // the user may not depend on.
            let tokens: Vec<&str> = code.split_whitespace().collect();
            let mut roots = 0;
            for (i, t) in tokens.iter().enumerate() {
                let prev = i.checked_sub(1).map(|j| tokens[j]);
                let leading = *t == "::"
                    && !prev.is_some_and(|p| {
                        p.ends_with(|c: char| {
                            c.is_alphanumeric() || c == '_' || c == '>' || c == ')'
                        })
                    });
                if !leading {
                    continue;
                }
                roots += 1;
                let rest = tokens[i + 1..].join(" ");
                assert!(
                    rest.starts_with("hardened_mcp :: __private :: v1 ::")
                        || rest.starts_with("core ::")
                        || rest.starts_with("std ::"),
                    "{what}: {}",
                    &rest[..rest.len().min(80)]
                );
            }
            assert!(
                roots > 0,
                "{what}: no absolute path seen, the check saw nothing"
            );
            // Derived impls say so (lints and coverage skip them).
            if what.starts_with("derive") {
                assert!(code.contains("automatically_derived"), "{what}");
            }
        }
    }
}
