//! Parsing: attributes (darling) and signatures (syn) → a typed model of
//! each tool. Parsing reports malformed attributes; the safety rules live
//! in `check`.

use darling::FromMeta;
use darling::util::Flag;
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, Ident, ImplItemFn, LitStr, Meta, Pat, PathArguments,
    ReturnType, Token, Type,
};

use crate::diag::Errors;
use crate::rules::Rule;

/// An expression kept exactly as written (darling would parse the
/// contents of a string literal as an expression).
fn raw_expr(meta: &Meta) -> darling::Result<Option<Expr>> {
    match meta {
        Meta::NameValue(nv) => Ok(Some(nv.value.clone())),
        _ => Err(darling::Error::custom("expected `key = value`").with_span(meta)),
    }
}

/// `#[hardened_tools(router = name)]`.
#[derive(Debug, Default, FromMeta)]
#[darling(default)]
pub struct ToolsAttr {
    /// Name of the generated router function.
    pub router: Option<Ident>,
}

/// One `check(<expr>, "<reason>")` rule.
#[derive(Debug, Clone)]
pub struct Check {
    pub expr: Expr,
    pub reason: LitStr,
}

impl FromMeta for Check {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let Meta::List(list) = item else {
            return Err(darling::Error::custom(
                "expected `check(<condition>, \"<reason shown to the caller>\")`",
            )
            .with_span(item));
        };
        let parsed = list.parse_args_with(|input: syn::parse::ParseStream<'_>| {
            let expr: Expr = input.parse()?;
            input.parse::<Token![,]>()?;
            let reason: LitStr = input.parse()?;
            let _ = input.parse::<Option<Token![,]>>()?;
            Ok(Check { expr, reason })
        });
        parsed.map_err(darling::Error::from)
    }
}

/// `task` (the tool may run as an MCP task), `task = "required"` (it
/// runs only as one), or the list form `task(required, detached)` (either
/// word optional; `detached`: the task is the whole body, not the job run
/// it starts); where it was written, for the `jobs` gate.
#[derive(Debug, Clone, Copy)]
pub struct TaskAttr {
    pub required: bool,
    pub detached: bool,
    pub span: Span,
}

const TASK_FORMS: &str = "`task` is written alone (a client that takes tasks gets one), as \
     `task = \"required\"` (the tool runs only as a task), or as `task(detached)` / \
     `task(required, detached)` (the task is the whole body)";

impl FromMeta for TaskAttr {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let (mut required, mut detached) = (false, false);
        match item {
            Meta::Path(_) => {}
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) if s.value() == "required" => required = true,
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) if s.value() == "optional" => {}
                other => {
                    return Err(darling::Error::custom(TASK_FORMS).with_span(other));
                }
            },
            Meta::List(list) => {
                let words = list.parse_args_with(
                    syn::punctuated::Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated,
                )?;
                for w in words {
                    let slot = match w.to_string().as_str() {
                        "required" => &mut required,
                        "detached" => &mut detached,
                        _ => return Err(darling::Error::custom(TASK_FORMS).with_span(&w)),
                    };
                    if *slot {
                        return Err(darling::Error::duplicate_field(&w.to_string()).with_span(&w));
                    }
                    *slot = true;
                }
            }
        }
        Ok(Self {
            required,
            detached,
            span: item.span(),
        })
    }
}

/// `#[hardened_args(check(..), ..)]` on a `HardenedArgs` struct: rules
/// over its fields, run wherever the struct is validated.
#[derive(Debug, Default, FromMeta)]
#[darling(default)]
pub struct ArgsAttr {
    #[darling(multiple)]
    pub check: Vec<Check>,
}

/// `annotations(read_only, destructive, idempotent, open_world)`; each key
/// is a flag or `= bool`.
#[derive(Debug, Default, Clone, FromMeta)]
#[darling(default)]
pub struct Annotations {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
    pub title: Option<LitStr>,
}

/// `#[hardened_tool(...)]`.
#[derive(Debug, Default, FromMeta)]
#[darling(default)]
pub struct ToolAttr {
    #[darling(with = raw_expr)]
    pub max_cost: Option<Expr>,
    pub units: Option<LitStr>,
    #[darling(with = raw_expr)]
    pub cost: Option<Expr>,
    #[darling(multiple)]
    pub check: Vec<Check>,
    #[darling(with = raw_expr)]
    pub timeout_s: Option<Expr>,
    #[darling(with = raw_expr)]
    pub concurrency: Option<Expr>,
    pub name: Option<LitStr>,
    pub description: Option<LitStr>,
    pub annotations: Option<Annotations>,
    /// OAuth scopes a caller's access token must grant, space-separated.
    pub scopes: Option<LitStr>,
    /// The tool may run as an MCP task (a client that takes tasks gets
    /// one), or, with `= "required"`, runs only as one.
    pub task: Option<TaskAttr>,
    /// Ask the person to approve a call whose estimated cost is above this.
    #[darling(with = raw_expr)]
    pub confirm_above: Option<Expr>,
    /// Ask the person to approve every call.
    pub confirm: Flag,
    /// Client capabilities every call needs, space-separated.
    pub asks: Option<LitStr>,
}

/// `#[bounded(...)]`.
#[derive(Debug, Default, Clone, FromMeta)]
#[darling(default)]
pub struct BoundedAttr {
    #[darling(with = raw_expr)]
    pub min: Option<Expr>,
    #[darling(with = raw_expr)]
    pub max: Option<Expr>,
    #[darling(with = raw_expr)]
    pub exclusive_min: Option<Expr>,
    #[darling(with = raw_expr)]
    pub exclusive_max: Option<Expr>,
    pub finite: Flag,
    pub units: Option<LitStr>,
    #[darling(with = raw_expr)]
    pub default: Option<Expr>,
    #[darling(with = raw_expr)]
    pub min_len: Option<Expr>,
    #[darling(with = raw_expr)]
    pub max_len: Option<Expr>,
    pub pattern: Option<LitStr>,
    pub charset: Option<LitStr>,
    #[darling(with = raw_expr)]
    pub max_items: Option<Expr>,
    #[darling(with = raw_expr)]
    pub min_items: Option<Expr>,
    /// An array of arrays: every row as long as the first.
    pub rectangular: Flag,
    /// An array of arrays: most items in all its rows together.
    #[darling(with = raw_expr)]
    pub max_total: Option<Expr>,
    /// As many items as another array parameter.
    #[darling(with = raw_expr)]
    pub same_len_as: Option<Expr>,
    /// An array of arrays: the bounds of each row.
    pub items: Option<RowsAttr>,
    pub description: Option<LitStr>,
    /// SEP-2243: the argument is mirrored in the `Mcp-Param-{header}`
    /// request header, which the HTTP transport checks against the body.
    pub header: Option<LitStr>,
}

/// `items(min_items = .., max_items = .., same_len_as = ..)`: the rows of
/// an array of arrays.
#[derive(Debug, Default, Clone, FromMeta)]
#[darling(default)]
pub struct RowsAttr {
    #[darling(with = raw_expr)]
    pub min_items: Option<Expr>,
    #[darling(with = raw_expr)]
    pub max_items: Option<Expr>,
    /// Each row as long as another array parameter.
    #[darling(with = raw_expr)]
    pub same_len_as: Option<Expr>,
}

/// Integer types the framework can bound (they fit in `i128`, and JSON
/// numbers hold them).
pub const INT_TYPES: &[&str] = &[
    "u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize",
];

/// What a parameter is, by its type.
#[derive(Debug, Clone)]
pub enum Kind {
    /// `ToolContext`: not an argument.
    Context,
    /// `RunDir`: a run handle, resolved before the body runs.
    RunDir,
    /// `#[args] a: T` with `T: HardenedArgs`: the whole argument object.
    Args,
    Int(&'static str),
    Float(&'static str),
    Bool,
    Str,
    /// Any other named type: a `ToolEnum`, or (as an array's items) a
    /// record, an argument struct.
    Named,
    Vec(Box<Kind>),
    Option(Box<Kind>),
    /// A type that must never be a tool parameter; the string says which.
    Forbidden(ForbiddenKind),
    /// A type we cannot describe (references, tuples, i128, …).
    Unsupported,
}

#[derive(Debug, Clone, Copy)]
pub enum ForbiddenKind {
    /// `PathBuf`, `Path`, `OsString`, `OsStr`.
    Path,
    /// `serde_json::Value`, maps.
    Untyped,
}

impl Kind {
    pub fn of(ty: &Type) -> Kind {
        let Type::Path(tp) = ty else {
            if let Type::Reference(r) = ty {
                return match Kind::of(&r.elem) {
                    k @ Kind::Forbidden(_) => k,
                    _ => Kind::Unsupported,
                };
            }
            return Kind::Unsupported;
        };
        if tp.qself.is_some() {
            return Kind::Unsupported;
        }
        let Some(last) = tp.path.segments.last() else {
            return Kind::Unsupported;
        };
        let name = last.ident.to_string();
        let inner = || match &last.arguments {
            PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
                GenericArgument::Type(t) => Some(t.clone()),
                _ => None,
            }),
            _ => None,
        };
        if let Some(t) = INT_TYPES.iter().find(|t| **t == name) {
            return Kind::Int(t);
        }
        match name.as_str() {
            "f32" => Kind::Float("f32"),
            "f64" => Kind::Float("f64"),
            "bool" => Kind::Bool,
            "String" => Kind::Str,
            "ToolContext" => Kind::Context,
            "RunDir" => Kind::RunDir,
            "PathBuf" | "Path" | "OsString" | "OsStr" => Kind::Forbidden(ForbiddenKind::Path),
            "Value" | "Map" | "HashMap" | "BTreeMap" | "IndexMap" | "JsonObject" => {
                Kind::Forbidden(ForbiddenKind::Untyped)
            }
            "i128" | "u128" | "str" | "char" | "Box" | "Rc" | "Arc" | "Cow" => Kind::Unsupported,
            "Vec" => match inner() {
                Some(t) => Kind::Vec(Box::new(Kind::of(&t))),
                None => Kind::Unsupported,
            },
            "Option" => match inner() {
                Some(t) => Kind::Option(Box::new(Kind::of(&t))),
                None => Kind::Unsupported,
            },
            _ if last.arguments.is_empty() => Kind::Named,
            _ => Kind::Unsupported,
        }
    }

    /// The kind after removing `Option`.
    pub fn base(&self) -> &Kind {
        match self {
            Kind::Option(k) => k.base(),
            k => k,
        }
    }

    /// A value of this kind is `Copy` (rebound by value for expressions).
    pub fn is_copy(&self) -> bool {
        match self {
            Kind::Int(_) | Kind::Float(_) | Kind::Bool | Kind::Named => true,
            Kind::Option(k) => k.is_copy(),
            _ => false,
        }
    }

    pub fn describe(&self) -> &'static str {
        match self {
            Kind::Context => "the tool context",
            Kind::RunDir => "a run handle",
            Kind::Args => "an argument struct",
            Kind::Int(_) => "an integer",
            Kind::Float(_) => "a float",
            Kind::Bool => "a bool",
            Kind::Str => "a string",
            Kind::Named => "an enum",
            Kind::Vec(_) => "a Vec",
            Kind::Option(k) => k.describe(),
            Kind::Forbidden(_) | Kind::Unsupported => "this type",
        }
    }
}

/// One parameter of a tool method.
#[derive(Debug)]
pub struct Param {
    pub ident: Ident,
    pub ty: Type,
    pub kind: Kind,
    pub bounded: Option<(BoundedAttr, Span)>,
    /// `#[bounded]` did not parse (already reported): no further rules.
    pub attr_failed: bool,
    /// The span of each key written in `#[bounded(...)]`.
    pub key_spans: Vec<(String, Span)>,
}

/// The span of each `key` in `#[attr(key = .., key, key(..))]`.
fn key_spans(meta: &Meta) -> Vec<(String, Span)> {
    let Meta::List(list) = meta else {
        return Vec::new();
    };
    darling::ast::NestedMeta::parse_meta_list(list.tokens.clone())
        .map(|items| {
            items
                .iter()
                .filter_map(|m| match m {
                    darling::ast::NestedMeta::Meta(m) => {
                        let p = m.path();
                        p.get_ident().map(|i| (i.to_string(), i.span()))
                    }
                    darling::ast::NestedMeta::Lit(_) => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One `#[hardened_tool]` method.
#[derive(Debug)]
pub struct ToolFn {
    pub attr: ToolAttr,
    /// `#[hardened_tool]` did not parse (already reported).
    pub attr_failed: bool,
    pub attr_span: Span,
    pub ident: Ident,
    pub doc: String,
    pub params: Vec<Param>,
    /// `T` of `Result<Output<T>, ToolError>`, if the return type has that shape.
    pub output: Option<Type>,
    pub ret_span: Span,
    pub is_async: bool,
    pub has_self_ref: bool,
    pub sig_span: Span,
}

fn is_attr(a: &Attribute, name: &str) -> bool {
    a.path().segments.last().is_some_and(|s| s.ident == name)
}

/// Whether a method carries `#[hardened_tool]`.
pub fn is_tool(f: &ImplItemFn) -> bool {
    f.attrs.iter().any(|a| is_attr(a, "hardened_tool"))
}

fn doc_of(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for a in attrs {
        if let Meta::NameValue(nv) = &a.meta
            && nv.path.is_ident("doc")
            && let Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            let v = s.value();
            lines.push(v.strip_prefix(' ').unwrap_or(&v).trim_end().to_owned());
        }
    }
    lines.join("\n").trim().to_owned()
}

/// Reads a tool method into the model and strips our attributes from it.
pub fn tool_fn(f: &mut ImplItemFn, errors: &mut Errors) -> ToolFn {
    let mut attr = ToolAttr::default();
    let mut attr_failed = false;
    let mut attr_span = f.sig.ident.span();
    let mut kept = Vec::new();
    for a in std::mem::take(&mut f.attrs) {
        if is_attr(&a, "hardened_tool") {
            attr_span = a.path().span();
            match &a.meta {
                Meta::Path(_) => {}
                m => match ToolAttr::from_meta(m) {
                    Ok(v) => attr = v,
                    Err(e) => {
                        attr_failed = true;
                        errors.darling(e, "hardened_tool");
                    }
                },
            }
        } else {
            kept.push(a);
        }
    }
    f.attrs = kept;
    let doc = doc_of(&f.attrs);

    let mut params = Vec::new();
    let mut has_self_ref = false;
    for input in f.sig.inputs.iter_mut() {
        match input {
            FnArg::Receiver(r) => {
                has_self_ref = r.reference.is_some() && r.mutability.is_none();
            }
            FnArg::Typed(pt) => {
                let mut is_args = false;
                let mut bounded_attrs = Vec::new();
                let mut kept = Vec::new();
                for a in std::mem::take(&mut pt.attrs) {
                    if a.path().is_ident("args") {
                        is_args = true;
                    } else if is_attr(&a, "bounded") {
                        bounded_attrs.push(a);
                    } else {
                        kept.push(a);
                    }
                }
                let BoundedRead {
                    bounded,
                    attr_failed,
                    key_spans: spans,
                } = read_bounded(&bounded_attrs, errors);
                pt.attrs = kept;
                let ident = match &*pt.pat {
                    Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                        pi.ident.clone()
                    }
                    other => {
                        errors.rule(
                            Rule::ParameterNotAPlainName,
                            crate::diag::at(other),
                            "tool parameters must be plain names",
                            "the name is the argument's key in the schema; a pattern has no one \
                             name",
                            "write `cells: u32` and destructure in the body",
                        );
                        Ident::new("__hardened_invalid", other.span())
                    }
                };
                params.push(Param {
                    ident,
                    kind: if is_args {
                        Kind::Args
                    } else {
                        Kind::of(&pt.ty)
                    },
                    ty: (*pt.ty).clone(),
                    bounded,
                    attr_failed,
                    key_spans: spans,
                });
            }
        }
    }

    let (output, ret_span) = match &f.sig.output {
        ReturnType::Default => (None, f.sig.ident.span()),
        ReturnType::Type(_, ty) => (output_of(ty), ty.span()),
    };

    ToolFn {
        attr,
        attr_failed,
        attr_span,
        ident: f.sig.ident.clone(),
        doc,
        params,
        output,
        ret_span,
        is_async: f.sig.asyncness.is_some(),
        has_self_ref,
        sig_span: f.sig.ident.span(),
    }
}

fn single_arg(args: &PathArguments) -> Vec<&Type> {
    match args {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `T` from `Result<Output<T>, ToolError>`.
fn output_of(ty: &Type) -> Option<Type> {
    let Type::Path(tp) = ty else { return None };
    let last = tp.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let args = single_arg(&last.arguments);
    let [ok, err] = args.as_slice() else {
        return None;
    };
    let Type::Path(err) = err else { return None };
    if err.path.segments.last()?.ident != "ToolError" {
        return None;
    }
    let Type::Path(ok) = ok else { return None };
    let ok_last = ok.path.segments.last()?;
    if ok_last.ident != "Output" {
        return None;
    }
    match single_arg(&ok_last.arguments).as_slice() {
        [t] => Some((*t).clone()),
        _ => None,
    }
}

/// What the `#[bounded]` attributes of one parameter or field declare.
struct BoundedRead {
    bounded: Option<(BoundedAttr, Span)>,
    /// An attribute did not parse (already reported): no further rules.
    attr_failed: bool,
    key_spans: Vec<(String, Span)>,
}

/// Reads the `#[bounded]` attributes of one parameter or struct field, the
/// same way for both: one is read, a second is refused.
fn read_bounded<'a>(
    attrs: impl IntoIterator<Item = &'a syn::Attribute>,
    errors: &mut Errors,
) -> BoundedRead {
    let mut read = BoundedRead {
        bounded: None,
        attr_failed: false,
        key_spans: Vec::new(),
    };
    for a in attrs {
        let span = a.path().span();
        let parsed = match &a.meta {
            Meta::Path(_) => Ok(BoundedAttr::default()),
            m => BoundedAttr::from_meta(m),
        };
        match parsed {
            Ok(_) if read.bounded.is_some() => errors.rule(
                Rule::DuplicateBounded,
                span,
                "duplicate `#[bounded]` attribute",
                "two declarations of one argument's bounds could disagree, and only one would \
                 be enforced",
                "merge the keys into one `#[bounded(...)]`",
            ),
            Ok(b) => {
                read.key_spans = key_spans(&a.meta);
                read.bounded = Some((b, span));
            }
            Err(e) => {
                errors.darling(e, "bounded");
                read.attr_failed = true;
            }
        }
    }
    read
}

/// Reads the fields of a `#[derive(HardenedArgs)]` struct as parameters
/// (doc comments become descriptions) and strips nothing (derive helpers
/// stay on the item).
pub fn struct_fields(fields: &syn::FieldsNamed, errors: &mut Errors) -> Vec<Param> {
    let mut out = Vec::new();
    for f in &fields.named {
        let Some(ident) = f.ident.clone() else {
            continue;
        };
        let BoundedRead {
            mut bounded,
            attr_failed,
            key_spans: spans,
        } = read_bounded(f.attrs.iter().filter(|a| is_attr(a, "bounded")), errors);
        if let Some((b, span)) = &mut bounded
            && b.description.is_none()
        {
            let d = doc_of(&f.attrs);
            if !d.is_empty() {
                b.description = Some(LitStr::new(&d, *span));
            }
        }
        out.push(Param {
            ident,
            kind: Kind::of(&f.ty),
            ty: f.ty.clone(),
            bounded,
            attr_failed,
            key_spans: spans,
        });
    }
    out
}
