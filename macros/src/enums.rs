//! `#[derive(ToolEnum)]`: a unit-variant enum as a fixed set of tokens.

use darling::FromMeta;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields, Ident, LitStr};

use crate::diag::Errors;
use crate::rules::Rule;

#[derive(Debug, Default, FromMeta)]
#[darling(default)]
struct VariantAttr {
    rename: Option<LitStr>,
    /// The word written into solver decks for the variant, when the
    /// solver's format names it otherwise than callers do.
    deck: Option<LitStr>,
}

/// `#[tool_enum(output)]` on the enum: it also appears in tool outputs.
#[derive(Debug, Default, FromMeta)]
#[darling(default)]
struct EnumAttr {
    output: bool,
}

/// The text of the `///` doc comments among `attrs`, lines joined by a
/// space; `None` when there is none.
fn doc_of(attrs: &[syn::Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .filter(|l| !l.is_empty())
        .collect();
    (!lines.is_empty()).then(|| lines.join(" "))
}

fn opt_str(s: Option<&String>) -> TokenStream {
    match s {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

/// `CamelCase` → `snake_case`.
fn snake(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `#[derive(ToolEnum)]`: parse, check, emit.
pub fn derive(item: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let declared = read(&input, &mut errors);
    match check(declared, &mut errors) {
        Some(model) if errors.is_empty() => emit(&model),
        _ => errors.into_tokens(),
    }
}

/// An enum as written: its attributes read, nothing judged yet.
struct Declared<'a> {
    ident: &'a Ident,
    generic: bool,
    output: bool,
    doc: Option<String>,
    /// `None` when the item is not an enum.
    variants: Option<Vec<DeclaredVariant<'a>>>,
}

struct DeclaredVariant<'a> {
    ident: &'a Ident,
    unit: bool,
    token: String,
    /// The deck word (`#[tool_enum(deck = "..")]`), else the token.
    deck: Option<String>,
    doc: Option<String>,
}

/// The checked enum: distinct, plain tokens, one per unit variant.
struct EnumModel<'a> {
    ident: &'a Ident,
    output: bool,
    doc: Option<String>,
    tokens: Vec<String>,
    /// What each variant writes into a deck (its token unless renamed).
    deck_words: Vec<String>,
    variants: Vec<&'a Ident>,
    docs: Vec<Option<String>>,
}

/// Parse: the `#[tool_enum(..)]` attributes of the enum and its variants.
fn read<'a>(input: &'a DeriveInput, errors: &mut Errors) -> Declared<'a> {
    let mut enum_attr = EnumAttr::default();
    for a in input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("tool_enum"))
    {
        match EnumAttr::from_meta(&a.meta) {
            Ok(x) => enum_attr = x,
            Err(e) => errors.darling(e, "tool_enum"),
        }
    }
    let variants = match &input.data {
        Data::Enum(data) => Some(
            data.variants
                .iter()
                .map(|v| {
                    let mut attr = VariantAttr::default();
                    for a in v.attrs.iter().filter(|a| a.path().is_ident("tool_enum")) {
                        match VariantAttr::from_meta(&a.meta) {
                            Ok(x) => attr = x,
                            Err(e) => errors.darling(e, "tool_enum"),
                        }
                    }
                    DeclaredVariant {
                        ident: &v.ident,
                        unit: matches!(v.fields, Fields::Unit),
                        token: attr
                            .rename
                            .as_ref()
                            .map_or_else(|| snake(&v.ident.to_string()), LitStr::value),
                        deck: attr.deck.as_ref().map(LitStr::value),
                        doc: doc_of(&v.attrs),
                    }
                })
                .collect(),
        ),
        _ => None,
    };
    Declared {
        ident: &input.ident,
        generic: !input.generics.params.is_empty(),
        output: enum_attr.output,
        doc: doc_of(&input.attrs),
        variants,
    }
}

/// Check: the rules of a tool enum.
fn check<'a>(d: Declared<'a>, errors: &mut Errors) -> Option<EnumModel<'a>> {
    let ident = d.ident;
    if d.generic {
        errors.rule(
            Rule::ToolEnumGeneric,
            ident.span(),
            "`ToolEnum` cannot be derived for a generic enum",
            "a tool enum is a fixed set of tokens written into the schema",
            "remove the generic parameters",
        );
    }
    let Some(declared) = d.variants else {
        errors.rule(
            Rule::ToolEnumNotAnEnum,
            ident.span(),
            "`ToolEnum` can only be derived for enums",
            "a tool enum is a fixed set of tokens",
            "use `#[derive(ToolEnum)]` on a unit-variant `enum`",
        );
        return None;
    };
    let mut m = EnumModel {
        ident,
        output: d.output,
        doc: d.doc,
        tokens: Vec::new(),
        deck_words: Vec::new(),
        variants: Vec::new(),
        docs: Vec::new(),
    };
    for v in &declared {
        if !v.unit {
            errors.rule(
                Rule::ToolEnumWithData,
                v.ident.span(),
                format!("variant `{}` carries data", v.ident),
                "a tool enum maps each caller token to one fixed variant; data in a variant would be \
                 an unbounded, unchecked argument",
                "make every variant a unit variant, and declare other values as bounded parameters",
            );
            continue;
        }
        let token = &v.token;
        let plain = |word: &str| {
            (1..=64).contains(&word.len())
                && word
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        };
        if !plain(token) {
            errors.rule(
                Rule::ToolEnumInvalidToken,
                v.ident.span(),
                format!("invalid token `{token}`"),
                "tokens are written into solver inputs and schemas; they must be plain identifiers",
                "rename to 1..=64 characters of A-Z a-z 0-9 _ - .",
            );
        }
        if let Some(word) = v.deck.as_ref().filter(|w| !plain(w)) {
            errors.rule(
                Rule::ToolEnumInvalidToken,
                v.ident.span(),
                format!("invalid deck word `{word}`"),
                "a deck word is written into solver inputs; it must be a plain identifier",
                "write `deck = \"...\"` with 1..=64 characters of A-Z a-z 0-9 _ - .",
            );
        }
        if m.tokens.contains(token) {
            errors.rule(
                Rule::ToolEnumDuplicateToken,
                v.ident.span(),
                format!("duplicate token `{token}`"),
                "one token must map to exactly one variant",
                "rename one of the variants with `#[tool_enum(rename = \"...\")]`",
            );
        }
        m.deck_words
            .push(v.deck.clone().unwrap_or_else(|| token.clone()));
        m.tokens.push(token.clone());
        m.variants.push(v.ident);
        m.docs.push(v.doc.clone());
    }
    if declared.is_empty() {
        errors.rule(
            Rule::ToolEnumEmpty,
            ident.span(),
            "`ToolEnum` needs at least one variant",
            "an enum without tokens accepts no value",
            "add the variants",
        );
    }
    Some(m)
}

/// Emit: the `ToolEnum`, argument and `DeckToken` impls (and, with
/// `#[tool_enum(output)]`, `Serialize` and `JsonSchema`).
fn emit(m: &EnumModel<'_>) -> TokenStream {
    let (ident, tokens, variants, docs) = (m.ident, &m.tokens, &m.variants, &m.docs);
    let deck_words = &m.deck_words;
    let hm = crate::emit::hm();
    let doc = opt_str(m.doc.as_ref());
    let token_docs = docs.iter().map(|d| opt_str(d.as_ref()));
    // In outputs, the same tokens: serialized as the token, described as
    // the enum of tokens (inline, with the enum's doc).
    let output = m.output.then(|| {
        let name = ident.to_string();
        quote! {
            #[automatically_derived]
            impl #hm::Serialize for #ident {
                fn serialize<__S: #hm::serde::Serializer>(
                    &self,
                    serializer: __S,
                ) -> ::core::result::Result<__S::Ok, __S::Error> {
                    serializer.serialize_str(<Self as #hm::ToolEnum>::token(*self))
                }
            }
            #[automatically_derived]
            impl #hm::JsonSchema for #ident {
                fn inline_schema() -> bool {
                    true
                }
                fn schema_name() -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(#name)
                }
                fn json_schema(_: &mut #hm::schemars::SchemaGenerator) -> #hm::schemars::Schema {
                    #hm::enum_output_schema::<Self>()
                }
            }
        }
    });
    quote! {
        #output
        #[automatically_derived]
        impl #hm::DeckToken for #ident {
            fn token(&self) -> &'static str {
                match self {
                    #(Self::#variants => #deck_words,)*
                }
            }
        }
        #[automatically_derived]
        impl #hm::ToolEnum for #ident {
            const TOKENS: &'static [&'static str] = &[#(#tokens),*];
            const DOC: ::core::option::Option<&'static str> = #doc;
            const TOKEN_DOCS: &'static [::core::option::Option<&'static str>] = &[#(#token_docs),*];
            fn from_token(token: &str) -> ::core::option::Option<Self> {
                match token {
                    #(#tokens => ::core::option::Option::Some(Self::#variants),)*
                    _ => ::core::option::Option::None,
                }
            }
            fn token(self) -> &'static str {
                match self {
                    #(Self::#variants => #tokens,)*
                }
            }
        }
        #[automatically_derived]
        impl #hm::Arg for #ident {
            type Spec = #hm::NamedSpec;
            type Seen<'a> = Self;
            fn seen(&self) -> Self {
                *self
            }
            fn parse(
                value: &#hm::Value,
                _spec: &#hm::NamedSpec,
                name: &'static str,
            ) -> ::core::result::Result<Self, #hm::ArgError> {
                #hm::enum_parse::<Self>(value, name)
            }
            fn check(&self, _spec: &#hm::NamedSpec, _name: &'static str) -> ::core::result::Result<(), #hm::ArgError> {
                ::core::result::Result::Ok(())
            }
            fn schema(spec: &#hm::NamedSpec) -> #hm::Map<::std::string::String, #hm::Value> {
                #hm::enum_schema::<Self>(spec)
            }
            fn titles() -> &'static [::core::option::Option<&'static str>] {
                <Self as #hm::ToolEnum>::TOKEN_DOCS
            }
            fn absent(
                spec: &#hm::NamedSpec,
                name: &'static str,
            ) -> ::core::option::Option<::core::result::Result<Self, #hm::ArgError>> {
                #hm::enum_absent::<Self>(spec, name)
            }
        }
    }
}
