//! The tool body scan: direct process, file-system and shell use (a guard
//! rail, not proof).

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Expr, LitStr};

use crate::diag::{At, Errors, at};
use crate::rules::Rule;

/// Paths and literals a tool body must not use (guard rail, not proof).
pub(super) struct BodyScan<'a> {
    errors: &'a mut Errors,
}

pub(super) const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "/bin/sh",
    "/bin/bash",
    "/usr/bin/env",
    "cmd.exe",
    "powershell",
];

impl BodyScan<'_> {
    fn path(&mut self, segs: &[String], span: At) {
        let pairs = segs.windows(2).any(|w| {
            matches!(
                (w[0].as_str(), w[1].as_str()),
                ("std" | "tokio" | "async_std", "fs" | "process")
            )
        });
        let first = segs.first().map(String::as_str);
        let fs_like = matches!(first, Some("fs" | "process")) && segs.len() > 1;
        let command = segs.iter().any(|s| s == "Command");
        if pairs || fs_like || command {
            let rule = if !command && segs.iter().any(|s| s == "fs") {
                Rule::FsInBody
            } else {
                Rule::ProcessInBody
            };
            self.errors.rule(
                rule,
                span,
                format!("tool bodies must not use `{}` directly", segs.join("::")),
                "processes and files reached from a tool body escape the sandbox (no allowlist, no \
                 limits, no kill of the process tree) and the run root (no confinement); this check \
                 is a guard rail, not proof",
                "launch solvers through `hardened_mcp::sandbox` and touch files through the `RunDir` \
                 of a run handle",
            );
        }
    }
}

impl<'ast> Visit<'ast> for BodyScan<'_> {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.path(&segs, at(p));
        syn::visit::visit_path(self, p);
    }
    fn visit_use_tree(&mut self, t: &'ast syn::UseTree) {
        fn flat(t: &syn::UseTree, pre: &mut Vec<String>, out: &mut Vec<(Vec<String>, Span)>) {
            match t {
                syn::UseTree::Path(p) => {
                    pre.push(p.ident.to_string());
                    flat(&p.tree, pre, out);
                    pre.pop();
                }
                syn::UseTree::Name(n) => {
                    let mut v = pre.clone();
                    v.push(n.ident.to_string());
                    out.push((v, n.ident.span()));
                }
                syn::UseTree::Rename(r) => {
                    let mut v = pre.clone();
                    v.push(r.ident.to_string());
                    out.push((v, r.ident.span()));
                }
                syn::UseTree::Glob(g) => out.push((pre.clone(), g.span())),
                syn::UseTree::Group(g) => g.items.iter().for_each(|i| flat(i, pre, out)),
            }
        }
        let mut out = Vec::new();
        flat(t, &mut Vec::new(), &mut out);
        for (segs, span) in out {
            self.path(&segs, At::Span(span));
        }
    }
    fn visit_lit_str(&mut self, s: &'ast LitStr) {
        if SHELLS.contains(&s.value().as_str()) {
            self.errors.rule(
                Rule::ShellInBody,
                s.span(),
                "tool bodies must not name a shell",
                "a shell interprets its input as code; solvers run from an argument vector, never \
                 through a shell; this check is a guard rail, not proof",
                "launch the solver executable itself through `hardened_mcp::sandbox` with an argument vector",
            );
        }
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        // Look into macro bodies that parse as expressions (format!, vec!, …).
        if let Ok(args) =
            m.parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated)
        {
            for a in &args {
                self.visit_expr(a);
            }
        }
    }
}

/// Scans a tool body for direct process, file-system and shell use.
pub(super) fn scan_body(block: &syn::Block, errors: &mut Errors) {
    BodyScan { errors }.visit_block(block);
}
