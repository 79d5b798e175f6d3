//! The entry points over tool declarations, each read as its pipeline:
//! parse (attributes and signatures into `parse` types), check (the rules:
//! a `model` value, or compile errors, all of them), emit (code).

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{ImplItem, ItemImpl};

use crate::check;
use crate::diag::Errors;
use crate::emit;
use crate::parse::{self, ToolsAttr};
use crate::rules::Rule;

/// Entry point of `#[hardened_tools]`.
pub fn hardened_tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let tools_attr = match darling::ast::NestedMeta::parse_meta_list(attr) {
        Ok(list) => match <ToolsAttr as darling::FromMeta>::from_list(&list) {
            Ok(a) => a,
            Err(e) => {
                errors.darling(e, "hardened_tools");
                ToolsAttr::default()
            }
        },
        Err(e) => {
            errors.malformed(e.span(), &e.to_string(), "hardened_tools");
            ToolsAttr::default()
        }
    };
    let mut item_impl: ItemImpl = match syn::parse2(item.clone()) {
        Ok(i) => i,
        Err(e) => {
            let mut out = item;
            out.extend(e.to_compile_error());
            return out;
        }
    };
    let (generated, models) = tools_impl(&tools_attr, &mut item_impl, &mut errors);
    let _ = models;
    let errs = errors.into_tokens();
    quote! {
        #item_impl
        #generated
        #errs
    }
}

/// Parses and checks every tool of an impl block, prepends the revalidation
/// to each tool method, and emits the extra impl block. Returns the extra impl block
/// (empty when any error was found) and the number of tools.
pub fn tools_impl(
    attr: &ToolsAttr,
    item_impl: &mut ItemImpl,
    errors: &mut Errors,
) -> (TokenStream, usize) {
    if item_impl.trait_.is_some() || !item_impl.generics.params.is_empty() {
        errors.rule(
            Rule::ToolsOnNonInherentImpl,
            Span::call_site(),
            "`#[hardened_tools]` goes on a non-generic inherent impl block",
            "the generated routes name the concrete server type",
            "write `#[hardened_tools] impl MyServer { ... }`",
        );
    }
    let mut models = Vec::new();
    let mut tool_count = 0;
    for item in &mut item_impl.items {
        let ImplItem::Fn(f) = item else { continue };
        if !parse::is_tool(f) {
            continue;
        }
        tool_count += 1;
        let t = parse::tool_fn(f, errors);
        if let Some(m) = check::tool(&t, &f.block, errors) {
            let prologue = emit::validate_call(&m);
            let block = &f.block;
            f.block = syn::parse_quote!({ #prologue #block });
            models.push(m);
        }
    }
    if tool_count == 0 {
        errors.rule(
            Rule::ToolsWithoutTools,
            Span::call_site(),
            "`#[hardened_tools]` found no `#[hardened_tool]` method",
            "the generated router would serve no tools",
            "mark the tool methods with `#[hardened_tool(max_cost = .., units = \"..\", cost = ..)]`",
        );
    }
    let self_ty = &item_impl.self_ty;
    (
        emit::generate(attr, self_ty, &models, !errors.is_empty()),
        tool_count,
    )
}

/// `#[derive(HardenedArgs)]`: the same rules, specs and parser as flat tool
/// parameters, for the named fields of one argument struct.
pub fn derive_args(item: TokenStream) -> TokenStream {
    let input: syn::DeriveInput = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let ident = &input.ident;
    let fields = match &input.data {
        syn::Data::Struct(syn::DataStruct {
            fields: syn::Fields::Named(f),
            ..
        }) if input.generics.params.is_empty() => f,
        _ => {
            errors.rule(
                Rule::ArgsDeriveNotANamedStruct,
                ident.span(),
                "`HardenedArgs` can only be derived for a non-generic struct with named fields",
                "each field is one named argument of the tool's argument object",
                "declare `struct Args { #[bounded(..)] name: Type, .. }`",
            );
            return errors.into_tokens();
        }
    };
    let mut checks = Vec::new();
    for attr in input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("hardened_args"))
    {
        match <parse::ArgsAttr as darling::FromMeta>::from_meta(&attr.meta) {
            Ok(a) => checks.extend(a.check),
            Err(e) => errors.darling(e, "hardened_args"),
        }
    }
    let params = parse::struct_fields(fields, &mut errors);
    let models = check::struct_fields(&params, &mut errors);
    check::struct_checks(&models, &checks, &mut errors);
    if !errors.is_empty() {
        return errors.into_tokens();
    }
    emit::args_impl(ident, &models, &checks)
}
