//! Procedural macros of hardened-mcp. Use them through `hardened_mcp::prelude`.
//!
//! Each macro is a pipeline: `parse` (attributes and signatures → typed
//! declarations, darling/syn), `check` (the safety rules → the checked
//! `model`, or compile errors, all of them collected; every rule has an id
//! in `rules`), `emit` (schema, parser, revalidation, rmcp routes). The
//! entry points in `tools`, `enums` and `output` read in that order.
//! On errors the item is still emitted, stripped of our attributes, so IDEs
//! keep working. Generated code reaches the runtime only through
//! `::hardened_mcp::__private::v1`.

use proc_macro::TokenStream;

mod check;
mod diag;
mod emit;
mod enums;
mod model;
mod output;
mod parse;
mod rules;
mod tools;

/// Turns the `#[hardened_tool]` methods of an impl block into hardened MCP
/// tools and generates `hardened_tool_router()`, `try_hardened_tool_router()`
/// and `hardened_tool_router_set()` (renamed with `router = name`).
///
/// See `docs/attributes.md` for every key.
#[proc_macro_attribute]
pub fn hardened_tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    tools::hardened_tools(attr.into(), item.into()).into()
}

/// Marks a method of a `#[hardened_tools]` impl block as a tool. Only
/// meaningful there: on its own it is an error.
#[proc_macro_attribute]
pub fn hardened_tool(_attr: TokenStream, item: TokenStream) -> TokenStream {
    diag::outside_hardened_tools("hardened_tool", item.into()).into()
}

/// Declares the bounds of a tool parameter. Only meaningful on parameters
/// of a `#[hardened_tool]` method (or fields of a derive); on its own it is
/// an error.
#[proc_macro_attribute]
pub fn bounded(_attr: TokenStream, item: TokenStream) -> TokenStream {
    diag::outside_hardened_tools("bounded", item.into()).into()
}

/// Derives `ToolEnum` (and the argument parser) for a unit-variant enum:
/// tokens are the variant names in `snake_case`, or
/// `#[tool_enum(rename = "…")]`.
#[proc_macro_derive(ToolEnum, attributes(tool_enum))]
pub fn derive_tool_enum(item: TokenStream) -> TokenStream {
    enums::derive(item.into()).into()
}

/// Derives `HardenedArgs` for a struct whose named fields carry
/// `#[bounded(...)]` (same keys and rules as tool parameters; doc comments
/// become descriptions). Take it in a tool as `#[args] args: MyArgs`.
/// `#[hardened_args(check(<condition>, "<reason>"), ..)]` on the struct
/// adds rules over its fields (and `self`'s methods), held to the rules of
/// a tool's `check(..)` and run wherever the struct is validated: every
/// tool that takes it, and every answer parsed into it.
#[proc_macro_derive(HardenedArgs, attributes(bounded, hardened_args))]
pub fn derive_hardened_args(item: TokenStream) -> TokenStream {
    tools::derive_args(item.into()).into()
}

/// Derives what a tool's result type needs (`Serialize` and `JsonSchema`,
/// reached through `hardened_mcp`, so the server needs no direct
/// dependency on serde or schemars). Put it on the struct or enum that
/// `Output<T>` carries; `#[serde(..)]` and `#[schemars(..)]` attributes
/// work as usual.
#[proc_macro_attribute]
pub fn tool_output(attr: TokenStream, item: TokenStream) -> TokenStream {
    output::tool_output(attr.into(), item.into()).into()
}
