//! `#[tool_output]`: the derives an output type needs, through the
//! runtime's re-exports, so that a server needs no direct dependency on
//! serde or schemars.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Item;

use crate::diag::Errors;
use crate::emit::hm;
use crate::rules::Rule;

/// Adds `Serialize` and `JsonSchema` derives (with their `crate` paths set
/// to the runtime's re-exports) to a struct or enum.
pub fn tool_output(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    if !attr.is_empty() {
        errors.rule(
            Rule::ToolOutputWithArguments,
            syn::spanned::Spanned::span(&attr),
            "`#[tool_output]` takes no arguments",
            "it only adds the `Serialize` and `JsonSchema` derives an output type needs",
            "write `#[tool_output]`; `#[serde(..)]` and `#[schemars(..)]` attributes go on the type as usual",
        );
    }
    let parsed: Item = match syn::parse2(item.clone()) {
        Ok(i) => i,
        Err(e) => {
            let mut out = item;
            out.extend(e.to_compile_error());
            return out;
        }
    };
    if !matches!(parsed, Item::Struct(_) | Item::Enum(_)) {
        errors.rule(
            Rule::ToolOutputOnAFunction,
            syn::spanned::Spanned::span(&parsed),
            "`#[tool_output]` goes on a struct or an enum",
            "it derives the serialisation and the output schema of a tool's result type",
            "put it on the type that `Output<T>` carries",
        );
    }
    if !errors.is_empty() {
        let errs = errors.into_tokens();
        return quote!(#item #errs);
    }
    let hm = hm();
    let serde_path = format!("{hm}::serde").replace(' ', "");
    let schemars_path = format!("{hm}::schemars").replace(' ', "");
    quote! {
        #[derive(#hm::Serialize, #hm::JsonSchema)]
        #[serde(crate = #serde_path)]
        #[schemars(crate = #schemars_path)]
        #item
    }
}
