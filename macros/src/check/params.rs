//! The rules of one parameter (or argument-struct field), by kind: its
//! type, its `#[bounded]` keys, its bounds, lengths, pattern and default.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, Ident, LitStr};

use crate::diag::{Errors, at, did_you_mean};
use crate::model::{ArgModel, Charset, DefaultLit, Num, Spec};
use crate::parse::{BoundedAttr, ForbiddenKind, Kind, Param};
use crate::rules::Rule;

use super::pattern;

/// Words that say "this string is a file-system location", matched
/// against each part of a name (split on `_`, on case changes and on
/// digits: `fname`, `out_file`, `inputFilePath`, `file2`, `LOGDIR`).
/// Plurals and the common joined forms are listed, since a part is matched
/// whole (`profile` is not `file`).
pub(super) const PATH_WORDS: &[&str] = &[
    // path
    "path",
    "paths",
    "pathname",
    "pathnames",
    "filepath",
    "filepaths",
    "fpath",
    "dirpath",
    "fullpath",
    "abspath",
    "relpath",
    "basepath",
    "rootpath",
    "inpath",
    "outpath",
    // directory
    "dir",
    "dirs",
    "dirname",
    "dirnames",
    "directory",
    "directories",
    "folder",
    "folders",
    "subdir",
    "subdirs",
    "basedir",
    "rootdir",
    "workdir",
    "cwd",
    "tmpdir",
    "tempdir",
    "outdir",
    "indir",
    "logdir",
    "datadir",
    "homedir",
    "srcdir",
    "destdir",
    "dstdir",
    "mountpoint",
    // file
    "file",
    "files",
    "filename",
    "filenames",
    "fname",
    "fnames",
    "basename",
    "infile",
    "outfile",
    "logfile",
    "datafile",
    "tmpfile",
    "tempfile",
    "srcfile",
    "dstfile",
    "destfile",
    "inputfile",
    "outputfile",
    "symlink",
    "symlinks",
    "glob",
];

/// Words refused only as the whole name: alone they mean a place to read
/// from or write to, while as one part among others they usually do not
/// (`src_lang`, `dst_port`, `source`, `target` and `location_name` stay
/// allowed; `src_file` is refused for `file`).
pub(super) const PATH_WHOLE_NAMES: &[&str] = &["location", "src", "dst", "dest"];

/// The parts of a name, lowercased: split on `_`, before an uppercase
/// letter that follows a lowercase one or precedes one (`XMLFile` is
/// `xml`, `file`), and between letters and digits.
pub(super) fn name_parts(name: &str) -> Vec<String> {
    let name = name.strip_prefix("r#").unwrap_or(name);
    let chars: Vec<char> = name.chars().collect();
    let mut parts = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        let boundary = match prev {
            None => false,
            Some(p) => {
                (p.is_lowercase() && c.is_uppercase())
                    || (p.is_uppercase()
                        && c.is_uppercase()
                        && next.is_some_and(char::is_lowercase))
                    || (p.is_ascii_digit() != c.is_ascii_digit() && p != '_' && c != '_')
            }
        };
        if c == '_' || boundary {
            if !cur.is_empty() {
                parts.push(std::mem::take(&mut cur));
            }
            if c == '_' {
                continue;
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    parts
}

/// The part of `name` that makes it path-like, if any.
pub(super) fn path_word(name: &str) -> Option<String> {
    let words: Vec<String> = name_parts(name)
        .into_iter()
        .filter(|p| !p.chars().all(|c| c.is_ascii_digit()))
        .collect();
    if let [only] = words.as_slice()
        && PATH_WHOLE_NAMES.contains(&only.as_str())
    {
        return Some(only.clone());
    }
    words.into_iter().find(|p| PATH_WORDS.contains(&p.as_str()))
}

/// Reads a numeric literal (`5`, `-1`, `2e9`, `1_000`).
pub(super) fn eval_num(e: &Expr) -> Option<Num> {
    match e {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => i.base10_parse::<i128>().ok().map(Num::Int),
            syn::Lit::Float(f) => f.base10_parse::<f64>().ok().map(Num::Float),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => match eval_num(&u.expr)? {
            Num::Int(i) => i.checked_neg().map(Num::Int),
            Num::Float(f) => Some(Num::Float(-f)),
        },
        Expr::Paren(p) => eval_num(&p.expr),
        Expr::Group(g) => eval_num(&g.expr),
        _ => None,
    }
}

pub(super) fn int_range(t: &str) -> (i128, i128) {
    match t {
        "u8" => (0, u8::MAX.into()),
        "u16" => (0, u16::MAX.into()),
        "u32" => (0, u32::MAX.into()),
        "u64" | "usize" => (0, u64::MAX.into()),
        "i8" => (i8::MIN.into(), i8::MAX.into()),
        "i16" => (i16::MIN.into(), i16::MAX.into()),
        "i32" => (i32::MIN.into(), i32::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    }
}

pub(super) const WHY_UNBOUNDED: &str = "tool arguments are written by a model and are untrusted; an unbounded \
     number lets one call request unbounded work, memory or output";

/// Reads and checks one bound of a numeric parameter.
pub(super) fn bound(
    e: &Option<Expr>,
    kind: &Kind,
    key: &str,
    pname: &str,
    errors: &mut Errors,
) -> Option<Num> {
    let e = e.as_ref()?;
    let Some(n) = eval_num(e) else {
        errors.rule(
            Rule::NonLiteralBound,
            e.span(),
            format!("`{key}` of `{pname}` must be a numeric literal"),
            "bounds are written into the schema at compile time and checked against the type; \
             an arbitrary expression cannot be",
            format!("write a literal, e.g. `{key} = 10`"),
        );
        return None;
    };
    match (kind, n) {
        (Kind::Int(_), Num::Float(_)) => {
            errors.rule(
                Rule::FractionalIntegerBound,
                e.span(),
                format!("`{key}` of integer parameter `{pname}` is not an integer"),
                "a fractional bound on an integer is out of the parameter's type; the schema and the \
                 check would round differently",
                format!("write an integer literal for `{key}`"),
            );
            None
        }
        (Kind::Int(t), Num::Int(i)) => {
            let (lo, hi) = int_range(t);
            if i < lo || i > hi {
                errors.rule(
                    Rule::OutOfTypeBound,
                    e.span(),
                    format!("`{key} = {i}` is outside the range of `{t}` ({lo}..={hi})"),
                    "a bound the type cannot hold is meaningless and hides an error in the declaration",
                    format!("use a bound within {lo}..={hi}, or a wider integer type"),
                );
                return None;
            }
            Some(n)
        }
        (Kind::Float(t), n) => {
            let f = n.as_f64();
            let limit = if *t == "f32" {
                f64::from(f32::MAX)
            } else {
                f64::MAX
            };
            if !f.is_finite() || f.abs() > limit {
                errors.rule(
                    Rule::NonFiniteBound,
                    e.span(),
                    format!("`{key}` of `{pname}` is not a finite `{t}`"),
                    "a non-finite or out-of-type bound does not bound anything",
                    format!("write a finite literal that fits `{t}`"),
                );
                return None;
            }
            Some(Num::Float(f))
        }
        _ => Some(n),
    }
}

pub(super) fn usize_key(
    e: &Option<Expr>,
    key: &str,
    pname: &str,
    errors: &mut Errors,
) -> Option<usize> {
    let e = e.as_ref()?;
    match eval_num(e) {
        Some(Num::Int(i)) if i >= 0 && i <= i128::from(u32::MAX) => Some(i as usize),
        _ => {
            errors.rule(
                Rule::LengthNotAnInteger,
                e.span(),
                format!("`{key}` of `{pname}` must be a non-negative integer literal"),
                "lengths and item counts are written into the schema at compile time",
                format!("write e.g. `{key} = 64`"),
            );
            None
        }
    }
}

/// The parameter named by `same_len_as = other` (its existence and kind
/// are checked once every parameter is known: [`check_same_len_targets`]).
fn other_array(e: &Option<Expr>, pname: &str, errors: &mut Errors) -> Option<Ident> {
    let e = e.as_ref()?;
    if let Expr::Path(p) = e
        && p.qself.is_none()
        && let Some(id) = p.path.get_ident()
    {
        return Some(id.clone());
    }
    errors.rule(
        Rule::SameLenAsTarget,
        e.span(),
        format!("`same_len_as` of `{pname}` must name another array parameter"),
        "the rule compares this array's length with another argument's, which it names",
        "write the other parameter's name: `same_len_as = b`",
    );
    None
}

/// Every `same_len_as = other` names another array parameter (or field)
/// of the same tool (or struct): a `Vec`, or an `Option` of one.
pub(crate) fn check_same_len_targets(models: &[ArgModel], errors: &mut Errors) {
    for m in models {
        let pname = m.key();
        for (key, target) in [
            ("same_len_as", &m.spec.same_len_as),
            ("items(same_len_as)", &m.spec.rows_same_len_as),
        ] {
            let Some(target) = target else { continue };
            let found = models.iter().find(|o| &o.ident == target);
            let problem = match found {
                None => "is not a parameter here",
                Some(o) if o.ident == m.ident => "is this parameter itself",
                Some(o) if !matches!(o.kind.base(), Kind::Vec(_)) => "is not an array",
                Some(_) => continue,
            };
            errors.rule(
                Rule::SameLenAsTarget,
                target.span(),
                format!("`{key} = {target}` on `{pname}`: `{target}` {problem}"),
                "the rule compares this array's length with another array argument's",
                "name another `Vec` parameter (or field) of the same tool (or struct)",
            );
        }
    }
}

/// Which `#[bounded]` keys apply to a kind.
pub(super) fn allowed_keys(kind: &Kind) -> Vec<&'static str> {
    let mut v = vec!["description"];
    match kind {
        Kind::Int(_) => v.extend([
            "min",
            "max",
            "exclusive_min",
            "exclusive_max",
            "units",
            "default",
            "header",
        ]),
        Kind::Float(_) => v.extend([
            "min",
            "max",
            "exclusive_min",
            "exclusive_max",
            "units",
            "default",
            "finite",
            "header",
        ]),
        Kind::Bool | Kind::Named => v.extend(["default", "header"]),
        Kind::Str => v.extend([
            "min_len", "max_len", "pattern", "charset", "default", "header",
        ]),
        Kind::Vec(inner) => {
            v.extend(["max_items", "min_items", "same_len_as"]);
            let scalar = match &**inner {
                Kind::Vec(row) => {
                    v.extend(["items", "rectangular", "max_total"]);
                    row
                }
                other => other,
            };
            v.extend(
                allowed_keys(scalar)
                    .into_iter()
                    .filter(|k| !matches!(*k, "default" | "description" | "header")),
            );
        }
        Kind::Option(inner) => return allowed_keys(inner),
        _ => v.clear(),
    }
    v
}

pub(super) fn present_keys(b: &BoundedAttr) -> Vec<(&'static str, Span)> {
    let mut v = Vec::new();
    let mut e = |k: &'static str, x: &Option<Expr>| {
        if let Some(x) = x {
            v.push((k, x.span()));
        }
    };
    e("min", &b.min);
    e("max", &b.max);
    e("exclusive_min", &b.exclusive_min);
    e("exclusive_max", &b.exclusive_max);
    e("default", &b.default);
    e("min_len", &b.min_len);
    e("max_len", &b.max_len);
    e("max_items", &b.max_items);
    e("min_items", &b.min_items);
    e("max_total", &b.max_total);
    e("same_len_as", &b.same_len_as);
    let mut s = |k: &'static str, x: &Option<LitStr>| {
        if let Some(x) = x {
            v.push((k, x.span()));
        }
    };
    s("units", &b.units);
    s("pattern", &b.pattern);
    s("charset", &b.charset);
    s("description", &b.description);
    s("header", &b.header);
    if b.finite.is_present() {
        v.push(("finite", b.finite.span()));
    }
    if b.rectangular.is_present() {
        v.push(("rectangular", b.rectangular.span()));
    }
    if let Some(rows) = &b.items {
        let span = rows
            .max_items
            .as_ref()
            .or(rows.min_items.as_ref())
            .or(rows.same_len_as.as_ref())
            .map_or_else(Span::call_site, |e| e.span());
        v.push(("items", span));
    }
    v
}

/// An `x-mcp-header` name: 1 to 64 ASCII letters, digits and `-`.
pub(super) fn is_header_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
}

pub(super) fn check_param(p: &Param, errors: &mut Errors) -> Option<ArgModel> {
    if p.attr_failed {
        return None;
    }
    let pname = p.ident.to_string();
    let before = errors_len(errors);
    let base = p.kind.base().clone();
    let ty_span = p.ty.span();

    match &p.kind {
        Kind::Context | Kind::RunDir | Kind::Args => {
            if let Some((_, span)) = &p.bounded {
                errors.rule(
                    Rule::BoundedOnUnboundableType,
                    *span,
                    format!("`#[bounded]` cannot bound {}", p.kind.describe()),
                    "the parameter is not a model-written argument; bounds on it would never be checked",
                    "remove `#[bounded]` from this parameter",
                );
            }
            return (errors_len(errors) == before).then(|| ArgModel {
                ident: p.ident.clone(),
                ty: p.ty.clone(),
                kind: p.kind.clone(),
                spec: Spec::default(),
            });
        }
        _ => {}
    }

    // Forbidden and unsupported types, also inside Option / Vec.
    let mut k = &p.kind;
    while let Kind::Option(i) | Kind::Vec(i) = k {
        k = i;
    }
    match k {
        Kind::Forbidden(ForbiddenKind::Path) => {
            errors.rule(
                Rule::PathParameter,
                at(&p.ty),
                format!("parameter `{pname}` takes a file-system path"),
                "a model-written path can name any file the server can reach (`../`, absolute paths, \
                 symlinks); tools select state through opaque run handles only",
                "take a run handle instead: `run: RunDir` (resolved inside the run root before the body runs)",
            );
            return None;
        }
        Kind::Forbidden(ForbiddenKind::Untyped) => {
            errors.rule(
                Rule::UntypedJson,
                at(&p.ty),
                format!("parameter `{pname}` is untyped JSON"),
                "an untyped value or map has no schema, no bounds and accepts any key; nothing about it \
                 can be checked",
                "declare typed, bounded parameters (or one `#[derive(...)]` argument struct per tool)",
            );
            return None;
        }
        Kind::Unsupported | Kind::Context | Kind::RunDir | Kind::Args => {
            errors.rule(
                Rule::UnsupportedType,
                at(&p.ty),
                format!("`#[bounded]` cannot describe the type of parameter `{pname}`"),
                "only integers (up to 64 bits), f32/f64, bool, String, unit enums deriving ToolEnum, \
                 Vec and Option of those have a schema and strict checks",
                "use one of the supported kinds (see docs/attributes.md)",
            );
            return None;
        }
        _ => {}
    }
    if !shape_ok(&p.kind) {
        errors.rule(
            Rule::NestedContainer,
            at(&p.ty),
            format!("nested container in parameter `{pname}`"),
            "beyond an array of arrays, nested arrays and optionals have no set of bounds to \
             declare and check",
            "use scalars or records (`#[derive(HardenedArgs)]` structs), a Vec of them, a Vec \
             of such Vecs (`items(max_items = ..)` bounds the rows), or an Option of one of \
             those; an item that may be left out is a record with an `Option` field",
        );
        return None;
    }

    // Path-named strings.
    if (matches!(base, Kind::Str) || matches!(&base, Kind::Vec(i) if matches!(**i, Kind::Str)))
        && let Some(word) = path_word(&pname)
    {
        {
            let why = if word == pname.to_ascii_lowercase() {
                String::new()
            } else {
                format!(" (`{word}`)")
            };
            errors.rule(
                Rule::PathNamedString,
                p.ident.span(),
                format!("string parameter `{pname}` is named like a file-system path{why}"),
                "a caller-chosen file or directory name is a path traversal waiting to happen; run \
                 state is selected by opaque run handles, files by fixed server-side names",
                "take `run: RunDir` (a run handle) and use fixed file names inside it",
            );
        }
    }

    let empty = BoundedAttr::default();
    let (b, b_span) = match &p.bounded {
        Some((b, s)) => (b, *s),
        None => (&empty, ty_span),
    };

    // Keys that do not apply.
    let allowed = allowed_keys(&p.kind);
    for (key, span) in present_keys(b) {
        let span = p
            .key_spans
            .iter()
            .find(|(k, _)| k == key)
            .map_or(span, |(_, s)| *s);
        if !allowed.contains(&key) {
            errors.rule(
                Rule::KeyDoesNotApply,
                span,
                format!(
                    "`{key}` does not apply to {} parameter (`{pname}`)",
                    p.kind.describe()
                ),
                "a bound the parameter's kind cannot have would be silently ignored",
                format!(
                    "remove `{key}`; {} accepts: {}",
                    p.kind.describe(),
                    allowed.join(", ")
                ),
            );
        }
    }

    let scalar = match &base {
        Kind::Vec(i) => match &**i {
            Kind::Vec(j) => (**j).clone(),
            k => k.clone(),
        },
        k => k.clone(),
    };
    let mut spec = Spec {
        units: b.units.as_ref().map(LitStr::value),
        description: b.description.as_ref().map(LitStr::value),
        ..Spec::default()
    };
    if let Some(h) = &b.header
        && allowed.contains(&"header")
    {
        let name = h.value();
        if is_header_name(&name) {
            spec.header = Some(name);
        } else {
            errors.rule(
                Rule::HeaderName,
                h.span(),
                format!("`header = {name:?}` on `{pname}` is not a header name"),
                "the argument travels in the HTTP header `Mcp-Param-{header}` (SEP-2243), whose \
                 name must be a token a client can send and the transport can compare",
                "use 1 to 64 ASCII letters, digits and `-` (`header = \"Region\"`)",
            );
        }
    }

    let arg = Declared {
        p,
        b,
        b_span,
        pname: &pname,
    };
    match &scalar {
        Kind::Int(_) | Kind::Float(_) => {
            check_numeric(&arg, &scalar, &allowed, &mut spec, errors);
        }
        Kind::Str => check_string(&arg, &mut spec, errors),
        _ => {}
    }

    if let Kind::Vec(inner) = &base {
        let (min, max) = item_counts(&b.min_items, &b.max_items, &p.ty, &pname, false, errors);
        spec.min_items = min;
        spec.max_items = max;
        if matches!(**inner, Kind::Vec(_)) {
            let rows = b.items.clone().unwrap_or_default();
            let (min, max) = item_counts(
                &rows.min_items,
                &rows.max_items,
                &p.ty,
                &pname,
                true,
                errors,
            );
            spec.rows = max.map(|max| (min, max));
            spec.rectangular = b.rectangular.is_present();
            spec.max_total = usize_key(&b.max_total, "max_total", &pname, errors);
            spec.rows_same_len_as = other_array(&rows.same_len_as, &pname, errors);
        }
        spec.same_len_as = other_array(&b.same_len_as, &pname, errors);
    }

    // Default.
    if let Some(d) = &b.default
        && allowed.contains(&"default")
    {
        spec.default = check_default(d, &scalar, &spec, &pname, errors);
    }

    (errors_len(errors) == before).then(|| ArgModel {
        ident: p.ident.clone(),
        ty: p.ty.clone(),
        kind: p.kind.clone(),
        spec,
    })
}

pub(super) fn check_default(
    d: &Expr,
    kind: &Kind,
    spec: &Spec,
    pname: &str,
    errors: &mut Errors,
) -> Option<DefaultLit> {
    let lit = match (kind, d) {
        (Kind::Int(_) | Kind::Float(_), e) => {
            bound(&Some(e.clone()), kind, "default", pname, errors).map(DefaultLit::Num)
        }
        (
            Kind::Bool,
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Bool(b),
                ..
            }),
        ) => Some(DefaultLit::Bool(b.value)),
        (
            Kind::Str | Kind::Named,
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }),
        ) => Some(DefaultLit::Str(s.value())),
        _ => {
            errors.rule(
                Rule::DefaultNotALiteral,
                d.span(),
                format!("`default` of `{pname}` is not a literal of its type"),
                "the default is written into the schema and checked at compile time",
                "write a literal of the parameter's type (an enum default is its token, e.g. `\"periodic\"`)",
            );
            return None;
        }
    }?;
    if let DefaultLit::Num(n) = lit {
        let v = n.as_f64();
        let out = spec.min.is_some_and(|m| v < m.as_f64())
            || spec.max.is_some_and(|m| v > m.as_f64())
            || spec.exclusive_min.is_some_and(|m| v <= m.as_f64())
            || spec.exclusive_max.is_some_and(|m| v >= m.as_f64());
        if out {
            errors.rule(
                Rule::DefaultOutOfRange,
                d.span(),
                format!("`default` of `{pname}` is outside its declared range"),
                "the default would be refused by the parameter's own check on every call that omits it",
                "choose a default within [min, max]",
            );
            return None;
        }
    }
    if let (DefaultLit::Str(s), Kind::Str) = (&lit, kind) {
        let n = s.chars().count();
        if spec.max_len.is_some_and(|m| n > m) || spec.min_len.is_some_and(|m| n < m) {
            errors.rule(
                Rule::DefaultOutOfLength,
                d.span(),
                format!("`default` of `{pname}` violates its length bounds"),
                "the default would be refused by the parameter's own check",
                "choose a default within [min_len, max_len]",
            );
            return None;
        }
    }
    Some(lit)
}

pub(super) fn is_scalar(k: &Kind) -> bool {
    matches!(
        k,
        Kind::Int(_) | Kind::Float(_) | Kind::Bool | Kind::Str | Kind::Named
    )
}

pub(super) fn shape_ok(k: &Kind) -> bool {
    fn array(k: &Kind) -> bool {
        match k {
            Kind::Vec(i) => match &**i {
                Kind::Vec(j) => is_scalar(j),
                other => is_scalar(other),
            },
            k => is_scalar(k),
        }
    }
    match k {
        Kind::Option(i) => array(i),
        k => array(k),
    }
}

/// The item floor and ceiling of an array (`rows` false) or of its rows:
/// both item counts, the ceiling required, the floor not above it.
fn item_counts(
    min: &Option<Expr>,
    max: &Option<Expr>,
    ty: &syn::Type,
    pname: &str,
    rows: bool,
    errors: &mut Errors,
) -> (Option<usize>, Option<usize>) {
    let min_n = usize_key(min, "min_items", pname, errors);
    let max_n = usize_key(max, "max_items", pname, errors);
    let (subject, missing, declare) = if rows {
        (
            format!("the rows of `{pname}`"),
            format!("the rows of Vec parameter `{pname}` have no `max_items`"),
            format!(
                "declare `#[bounded(max_items = .., items(max_items = ..))] {pname}: Vec<Vec<..>>`"
            ),
        )
    } else {
        (
            format!("`{pname}`"),
            format!("Vec parameter `{pname}` has no `max_items`"),
            format!("declare `#[bounded(max_items = ..)] {pname}: Vec<..>`"),
        )
    };
    if max.is_none() {
        errors.rule(
            Rule::UnboundedVec,
            at(ty),
            missing,
            "an unbounded array lets one call request unbounded work and memory",
            declare,
        );
    }
    if let (Some(lo), Some(hi), Some(e)) = (min_n, max_n, min.as_ref())
        && lo > hi
    {
        errors.rule(
            Rule::MinItemsAboveMaxItems,
            e.span(),
            format!("`min_items` ({lo}) of {subject} is above its `max_items` ({hi})"),
            "no array satisfies both counts: every call would be refused",
            "lower `min_items` or raise `max_items`",
        );
    }
    (min_n, max_n)
}

pub(super) fn errors_len(e: &Errors) -> usize {
    e.len()
}

/// One parameter being checked, with its `#[bounded]` attribute (an empty
/// one when it has none) and where to point.
#[derive(Clone, Copy)]
struct Declared<'a> {
    p: &'a Param,
    b: &'a BoundedAttr,
    b_span: Span,
    pname: &'a str,
}

/// The rules of a numeric parameter: both bounds, of its type, not twice
/// on one side, a non-empty range.
fn check_numeric(
    arg: &Declared<'_>,
    scalar: &Kind,
    allowed: &[&str],
    spec: &mut Spec,
    errors: &mut Errors,
) {
    let Declared {
        p,
        b,
        b_span,
        pname,
    } = *arg;
    if allowed.contains(&"min") {
        spec.min = bound(&b.min, scalar, "min", pname, errors);
        spec.max = bound(&b.max, scalar, "max", pname, errors);
        spec.exclusive_min = bound(&b.exclusive_min, scalar, "exclusive_min", pname, errors);
        spec.exclusive_max = bound(&b.exclusive_max, scalar, "exclusive_max", pname, errors);
    }
    let has_lo = b.min.is_some() || b.exclusive_min.is_some();
    let has_hi = b.max.is_some() || b.exclusive_max.is_some();
    if p.bounded.is_none() {
        errors.rule(
            Rule::UnboundedNumber,
            at(&p.ty),
            format!("numeric parameter `{pname}` has no `#[bounded]`"),
            WHY_UNBOUNDED,
            format!("declare its range: `#[bounded(min = .., max = ..)] {pname}: ..`"),
        );
    } else if !has_lo || !has_hi {
        errors.rule(
            Rule::OneSidedBound,
            b_span,
            format!("numeric parameter `{pname}` needs both a lower and an upper bound"),
            WHY_UNBOUNDED,
            "add the missing `min`/`exclusive_min` or `max`/`exclusive_max`",
        );
    }
    if b.min.is_some() && b.exclusive_min.is_some() {
        errors.rule(
            Rule::TwoBoundsOnOneSide,
            b_span,
            format!("`{pname}` declares both `min` and `exclusive_min`"),
            "two lower bounds make the declaration ambiguous",
            "keep one of them",
        );
    }
    if b.max.is_some() && b.exclusive_max.is_some() {
        errors.rule(
            Rule::TwoBoundsOnOneSide,
            b_span,
            format!("`{pname}` declares both `max` and `exclusive_max`"),
            "two upper bounds make the declaration ambiguous",
            "keep one of them",
        );
    }
    let lo = spec.min.or(spec.exclusive_min);
    let hi = spec.max.or(spec.exclusive_max);
    if let (Some(lo), Some(hi)) = (lo, hi) {
        let strict = spec.exclusive_min.is_some() || spec.exclusive_max.is_some();
        let empty = if strict {
            lo.as_f64() >= hi.as_f64()
        } else {
            lo.as_f64() > hi.as_f64()
        };
        let bad = match (lo, hi) {
            (Num::Int(a), Num::Int(b)) => {
                if strict {
                    a >= b
                } else {
                    a > b
                }
            }
            _ => empty,
        };
        if bad {
            let span = [&b.min, &b.exclusive_min]
                .into_iter()
                .flatten()
                .next()
                .map_or(b_span, |e| e.span());
            errors.rule(
                Rule::MinAboveMax,
                span,
                format!("the range of `{pname}` is empty (lower bound above upper bound)"),
                "no value can satisfy it, so the tool could never be called; it is a typo",
                "swap or correct `min` and `max`",
            );
        }
    }
}

/// The rules of a string parameter: a `max_len`, consistent lengths, a
/// pattern both dialects read alike, a known charset.
fn check_string(arg: &Declared<'_>, spec: &mut Spec, errors: &mut Errors) {
    let Declared {
        p,
        b,
        b_span,
        pname,
    } = *arg;
    spec.min_len = usize_key(&b.min_len, "min_len", pname, errors);
    spec.max_len = usize_key(&b.max_len, "max_len", pname, errors);
    if let Some(p) = &b.pattern {
        match pattern::check(&p.value()) {
            Ok(checked) => spec.pattern = Some(checked),
            Err(pattern::Fault::Syntax) => errors.rule(
                Rule::InvalidPattern,
                p.span(),
                format!("the `pattern` of `{pname}` is not a valid regular expression"),
                "an invalid pattern cannot be advertised in the schema nor checked; it \
                     would refuse every value",
                "fix the regular expression (Rust `regex` syntax that is also valid \
                     ECMA-262), anchored with `^…$`",
            ),
            Err(pattern::Fault::Dialect(r)) => errors.rule(
                Rule::PatternDialect,
                p.span(),
                format!(
                    "the `pattern` of `{pname}` uses `{}`, which clients read differently",
                    r.construct
                ),
                &format!(
                    "the server checks the pattern with Rust's `regex`; the schema \
                         advertises it to clients, which read it as ECMA-262: {}",
                    r.why
                ),
                r.fix,
            ),
        }
    }
    if spec.max_len.is_none() && b.max_len.is_none() {
        errors.rule(
            Rule::UnboundedString,
            at(&p.ty),
            format!("string parameter `{pname}` has no `max_len`"),
            "an unbounded string lets one call push megabytes into parsing, logs and solver \
                 inputs",
            format!(
                "declare `#[bounded(max_len = ..)] {pname}: String` (and a `charset` or \
                     `pattern`), or use a `#[derive(ToolEnum)]` enum for fixed choices"
            ),
        );
    }
    if let (Some(a), Some(z)) = (spec.min_len, spec.max_len)
        && a > z
    {
        errors.rule(
            Rule::MinLenAboveMaxLen,
            b.min_len.as_ref().map_or(b_span, |e| e.span()),
            format!("`min_len` of `{pname}` is above its `max_len`"),
            "no string can satisfy it, so the tool could never be called",
            "swap or correct `min_len` and `max_len`",
        );
    }
    if let Some(cs) = &b.charset {
        let v = cs.value();
        if let Some(c) = Charset::named(&v) {
            spec.charset = Some(c);
        } else {
            let names = Charset::names();
            let hint = did_you_mean(&v, &names)
                .map(|d| format!("did you mean `{d}`? "))
                .unwrap_or_default();
            errors.rule(
                Rule::UnknownCharset,
                cs.span(),
                format!("unknown charset `{v}`"),
                "a charset is a fixed, named allowlist of characters",
                format!("{hint}known charsets: {}", names.join(", ")),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_parts_on_underscores_case_and_digits() {
        assert_eq!(name_parts("input_file_path"), ["input", "file", "path"]);
        assert_eq!(name_parts("inputFilePath"), ["input", "file", "path"]);
        assert_eq!(name_parts("XMLFile"), ["xml", "file"]);
        assert_eq!(name_parts("file2"), ["file", "2"]);
        assert_eq!(name_parts("r#file"), ["file"]);
        assert_eq!(name_parts("__dir__"), ["dir"]);
        assert_eq!(name_parts("LOGDIR"), ["logdir"]);
    }

    #[test]
    fn path_like_names_are_found_by_their_parts() {
        for name in [
            "path",
            "dir",
            "file",
            "filename",
            "file_name",
            "fname",
            "fpath",
            "filepath",
            "file_path",
            "dirname",
            "dir_name",
            "directory",
            "folder",
            "working_dir",
            "workdir",
            "work_dir",
            "cwd",
            "pathname",
            "location",
            "out_file",
            "input_path",
            "config_file",
            "file_kind",
            "path_prefix",
            "inputFile",
            "outputDir",
            "file2",
            "r#file",
            "files",
            "src",
            "dst",
            "dest",
            "src_file",
            "dst_dir",
            "logfile",
            "outdir",
            "base_name_dir",
            "basename",
            "tmpdir",
            "glob",
            "LOG_DIR",
            "mountpoint",
        ] {
            assert!(path_word(name).is_some(), "{name}");
        }
    }

    #[test]
    fn ordinary_names_are_not_path_like() {
        // The string parameters of the workspace's examples and tests, and
        // words that merely contain a path word.
        for name in [
            "label",
            "text",
            "name",
            "word",
            "slug",
            "code",
            "tag",
            "tags",
            "names",
            "note",
            "detail",
            "s",
            "profile",
            "profile_name",
            "filter",
            "direction",
            "dirty",
            "pathos",
            "source",
            "target",
            "src_lang",
            "dst_port",
            "location_name",
            "title",
            "mode",
            "species",
            "formula",
            "unit",
            "token_kind",
            "defile",
            "reconcile",
            "run_label",
        ] {
            assert_eq!(path_word(name), None, "{name}");
        }
    }
}
