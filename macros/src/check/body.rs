//! The scan of a tool body, and of its `check(..)` and `cost` expressions:
//! direct file-system, process, network, environment and shell use (a
//! guard rail, not proof).
//!
//! A macro sees tokens, not types, so the scan works on three things it can
//! see: paths (`std::fs::read`, `File::open`, `use std::fs`), the names of
//! methods that only file-system or socket types have (`.exists()`,
//! `.metadata()`, `.to_socket_addrs()`, whatever the receiver), and
//! literals and macros (`"sh"`, `include_str!`, `env!`). Names too common to
//! refuse on any receiver are listed in [`ALLOWED_METHODS`] with the reason.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Expr, LitStr};

use crate::diag::{At, Errors, at};
use crate::rules::Rule;

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

/// Methods that only file-system types have (`Path`, `PathBuf`, camino's
/// `Utf8Path`, `DirEntry`, cap-std's `Dir`): each touches the file system
/// through a path. Refused on any receiver, since the receiver's type is
/// unknown to a macro, and as paths (`Path::exists`, `.map(Path::is_file)`).
pub(super) const FS_METHODS: &[&str] = &[
    "exists",
    "try_exists",
    "is_file",
    "is_dir",
    "is_symlink",
    "metadata",
    "symlink_metadata",
    "read_dir",
    "read_link",
    "canonicalize",
    "open_ambient_dir",
    "ambient_authority",
];

/// Method names that file-system types have too but that are deliberately
/// not refused on an unknown receiver, with the reason. None of them
/// reaches a file without a handle that a refused route opened first.
#[cfg_attr(not(test), allow(dead_code))]
pub(super) const ALLOWED_METHODS: &[(&str, &str)] = &[
    (
        "open",
        "`RunRoot::open` and many non-file types; `OpenOptions::open` needs an `OpenOptions`, refused",
    ),
    (
        "create",
        "`RunRoot::create` makes a run; `File::create` is refused as a path",
    ),
    (
        "read_to_string",
        "`io::Read` on any reader; a file must be opened first",
    ),
    (
        "read",
        "`io::Read`, locks, caches; a file must be opened first",
    ),
    (
        "write",
        "`io::Write`, locks, buffers; a file must be opened first",
    ),
    (
        "remove",
        "`RunDir::remove`, maps, sets; `fs::remove_file` is refused as a path",
    ),
    (
        "join, file_name, extension, parent, components, display, starts_with",
        "pure path manipulation: no file is touched",
    ),
];

/// Crates whose whole purpose is the file system.
const FS_CRATES: &[&str] = &[
    "fs_err",
    "fs_extra",
    "walkdir",
    "glob",
    "tempfile",
    "cap_std",
    "cap_tempfile",
    "cap_async_std",
    "async_fs",
];

/// Modules that a `fs` segment after them makes file-system modules
/// (`std::fs`, `tokio::fs`, `std::os::unix::fs`, …).
const FS_PARENTS: &[&str] = &[
    "std",
    "tokio",
    "async_std",
    "smol",
    "unix",
    "windows",
    "wasi",
    "linux",
];

/// File-system types whose every use opens or creates by path.
const FS_TYPES: &[&str] = &["OpenOptions", "DirBuilder", "WalkDir"];

/// Functions of `File` that open by path.
const FILE_OPENS: &[&str] = &["open", "create", "create_new", "options", "open_buffered"];

/// Socket types and name resolution.
const NET_ITEMS: &[&str] = &[
    "TcpStream",
    "TcpListener",
    "TcpSocket",
    "UdpSocket",
    "UnixStream",
    "UnixListener",
    "UnixDatagram",
    "lookup_host",
    "ToSocketAddrs",
    "to_socket_addrs",
];

/// Raw system-call crates, and what their items reach.
const SYS_CRATES: &[&str] = &["libc", "nix", "rustix"];
const SYS_PROCESS: &[&str] = &[
    "system",
    "fork",
    "vfork",
    "execv",
    "execve",
    "execvp",
    "execvpe",
    "fexecve",
    "posix_spawn",
    "posix_spawnp",
    "popen",
    "process",
    "unistd",
];
const SYS_FS: &[&str] = &[
    "fs", "fcntl", "open", "openat", "openat2", "creat", "fopen", "stat", "lstat", "fstatat",
    "unlink", "unlinkat", "rename", "renameat", "mkdir", "mkdirat", "rmdir", "symlink", "readlink",
    "chmod", "chown", "truncate", "opendir",
];
const SYS_NET: &[&str] = &[
    "net",
    "socket",
    "connect",
    "bind",
    "listen",
    "sendto",
    "getaddrinfo",
];

/// HTTP client crates.
const NET_CRATES: &[&str] = &["reqwest", "ureq", "surf", "attohttpc", "isahc", "curl"];

/// Crates that start processes.
const PROCESS_CRATES: &[&str] = &["duct", "subprocess", "xshell"];

/// What `std::env` offers that reads or changes the process's state.
const ENV_FUNCTIONS: &[&str] = &[
    "var",
    "var_os",
    "vars",
    "vars_os",
    "set_var",
    "remove_var",
    "args",
    "args_os",
    "current_dir",
    "set_current_dir",
    "current_exe",
    "home_dir",
    "temp_dir",
];

/// The process's standard streams that carry the stdio transport's
/// messages, as the items that reach them (`std::io::stdout`,
/// `tokio::io::stdin`, `io::Stdout`, ..): refused after an `io` segment.
const STDIO_ITEMS: &[&str] = &[
    "stdout",
    "stdin",
    "Stdout",
    "Stdin",
    "StdoutLock",
    "StdinLock",
];

/// The same streams as the raw system-call crates name them.
const SYS_STDIO: &[&str] = &["STDOUT_FILENO", "STDIN_FILENO", "stdout", "stdin"];

/// Macros that write to standard output.
const STDOUT_MACROS: &[&str] = &["print", "println"];

/// Where the scanned code is: its text in the messages.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    Body,
    Check,
    Cost,
}

impl Place {
    fn subject(self) -> &'static str {
        match self {
            Place::Body => "tool bodies",
            Place::Check => "`check(..)` conditions",
            Place::Cost => "`cost` expressions",
        }
    }

    /// What the place adds to the safety reason.
    fn extra(self) -> &'static str {
        match self {
            Place::Body => "",
            Place::Check | Place::Cost => {
                "; `check(..)` and `cost` run on every call, before anything else"
            }
        }
    }
}

/// What a refused route reaches.
#[derive(Clone, Copy)]
pub(super) enum Reach {
    Fs,
    Process,
    Net,
    Env,
    Stdio,
}

/// Paths, methods, literals and macros a tool body must not use.
pub(super) struct BodyScan<'a> {
    errors: &'a mut Errors,
    place: Place,
}

fn is_env_path(segs: &[String]) -> bool {
    let pair = segs.windows(2).any(|w| {
        (w[0] == "std" && w[1] == "env") || (w[0] == "env" && ENV_FUNCTIONS.contains(&&*w[1]))
    });
    // Crates that read `.env` files into the environment, or read it.
    let crate_read = segs.len() > 1
        && segs
            .first()
            .is_some_and(|f| matches!(f.as_str(), "dotenv" | "dotenvy" | "envy"));
    // `std::env::consts::OS` and the like are compile-time constants.
    (pair && !segs.iter().any(|s| s == "consts")) || crate_read
}

/// The name a macro is invoked by (the last segment of its path).
pub(super) fn macro_name(m: &syn::Macro) -> String {
    m.path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

/// What a path reaches, if it is a refused route.
pub(super) fn path_reach(segs: &[String]) -> Option<Reach> {
    let first = segs.first().map(String::as_str)?;
    let has = |names: &[&str]| segs.iter().any(|s| names.contains(&s.as_str()));
    let after = |parents: &[&str], child: &str| {
        segs.windows(2)
            .any(|w| parents.contains(&w[0].as_str()) && w[1] == child)
    };
    let sys = SYS_CRATES.contains(&first) && segs.len() > 1;
    let command = segs.iter().any(|s| s == "Command");
    if command
        || after(FS_PARENTS, "process")
        || (first == "process" && segs.len() > 1)
        || (PROCESS_CRATES.contains(&first) && segs.len() > 1)
        || (sys && has(SYS_PROCESS))
    {
        return Some(Reach::Process);
    }
    let file_open = segs
        .windows(2)
        .any(|w| w[0] == "File" && FILE_OPENS.contains(&w[1].as_str()));
    let fs_method = segs.len() > 1
        && segs
            .last()
            .is_some_and(|l| FS_METHODS.contains(&l.as_str()));
    if after(FS_PARENTS, "fs")
        || (first == "fs" && segs.len() > 1)
        || (FS_CRATES.contains(&first) && segs.len() > 1)
        || has(FS_TYPES)
        || file_open
        || fs_method
        || has(&["open_ambient_dir", "ambient_authority"])
        || (sys && has(SYS_FS))
    {
        return Some(Reach::Fs);
    }
    if has(NET_ITEMS) || (NET_CRATES.contains(&first) && segs.len() > 1) || (sys && has(SYS_NET)) {
        return Some(Reach::Net);
    }
    if is_env_path(segs) {
        return Some(Reach::Env);
    }
    if segs
        .windows(2)
        .any(|w| w[0] == "io" && STDIO_ITEMS.contains(&w[1].as_str()))
        || (sys && has(SYS_STDIO))
    {
        return Some(Reach::Stdio);
    }
    None
}

impl BodyScan<'_> {
    fn refuse(&mut self, reach: Reach, span: At, what: &str) {
        let subject = self.place.subject();
        let extra = self.place.extra();
        let (rule, why, fix) = match reach {
            Reach::Fs => (
                Rule::FsInBody,
                format!(
                    "a file reached from a tool by path escapes the run root (no confinement: `../`, \
                     absolute paths and symlinks reach any file the server can){extra}; this check \
                     is a guard rail, not proof"
                ),
                "touch files through the `RunDir` of a run handle (`run.read_bounded(..)`, \
                 `run.write_atomic(..)`), never by path",
            ),
            Reach::Process => (
                Rule::ProcessInBody,
                format!(
                    "a process started from a tool escapes the sandbox (no allowlist, no limits, no \
                     kill of the process tree){extra}; this check is a guard rail, not proof"
                ),
                "launch solvers through `hardened_mcp::sandbox` with an argument vector",
            ),
            Reach::Net => (
                Rule::NetInBody,
                format!(
                    "a connection opened from a tool reaches any address the server can (internal \
                     services, the cloud metadata endpoint: server-side request forgery), outside \
                     the sandbox that denies solvers the network{extra}; this check is a guard \
                     rail, not proof"
                ),
                "build network clients once in the server, for a fixed allowlist of destinations, \
                 and call them through a method of the server; never connect to a caller-chosen \
                 address",
            ),
            Reach::Env => (
                Rule::EnvInBody,
                format!(
                    "the server's environment holds its secrets (API keys, tokens) and its \
                     configuration; a value read in a tool can end up in a result, a log or a \
                     solver input, and changing it changes every call{extra}; this check is a \
                     guard rail, not proof"
                ),
                "read configuration once at startup into the server's own fields (never returned \
                 to callers); solvers get only the environment the sandbox sets",
            ),
            Reach::Stdio => (
                Rule::StdioInBody,
                format!(
                    "over the stdio transport the server's standard output carries its messages \
                     to the client and its standard input the client's: a line printed from a tool \
                     corrupts the stream (the client drops the session or misreads a message), a \
                     read takes the client's next message{extra}; this check is a guard rail, not \
                     proof"
                ),
                "log with `tracing` (it writes to standard error) and return text in the tool's \
                 output",
            ),
        };
        self.errors.rule(
            rule,
            span,
            format!("{subject} must not use `{what}`"),
            &why,
            fix,
        );
    }

    fn path(&mut self, segs: &[String], span: At) {
        if let Some(reach) = path_reach(segs) {
            self.refuse(reach, span, &segs.join("::"));
        }
    }
}

impl<'ast> Visit<'ast> for BodyScan<'_> {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.path(&segs, at(p));
        syn::visit::visit_path(self, p);
    }
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let name = m.method.to_string();
        if FS_METHODS.contains(&name.as_str()) {
            self.refuse(Reach::Fs, At::Span(m.method.span()), &format!(".{name}()"));
        } else if NET_ITEMS.contains(&name.as_str()) {
            self.refuse(Reach::Net, At::Span(m.method.span()), &format!(".{name}()"));
        }
        syn::visit::visit_expr_method_call(self, m);
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
            let subject = self.place.subject();
            self.errors.rule(
                Rule::ShellInBody,
                s.span(),
                format!("{subject} must not name a shell"),
                "a shell interprets its input as code; solvers run from an argument vector, never \
                 through a shell; this check is a guard rail, not proof",
                "launch the solver executable itself through `hardened_mcp::sandbox` with an argument vector",
            );
        }
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        let name = macro_name(m);
        match name.as_str() {
            // Compile-time reads: a file of the build machine, or one of its
            // environment variables, baked into the binary and returned.
            "include_str" | "include_bytes" | "include" => {
                self.refuse(Reach::Fs, at(&m.path), &format!("{name}!"));
                return;
            }
            // In `check(..)` and `cost` the purity rule refuses every
            // macro with an effect, these included: one error, not two.
            n if STDOUT_MACROS.contains(&n) => {
                if self.place == Place::Body {
                    self.refuse(Reach::Stdio, at(&m.path), &format!("{name}!"));
                }
                return;
            }
            "env" | "option_env" => {
                let var = m.parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                );
                let cargo = var.ok().and_then(|a| a.into_iter().next()).is_some_and(|e| {
                    matches!(&e, Expr::Lit(l) if matches!(&l.lit, syn::Lit::Str(s) if s.value().starts_with("CARGO_")))
                });
                // `env!("CARGO_PKG_VERSION")` names the build, not a secret.
                if !cargo {
                    self.refuse(Reach::Env, at(&m.path), &format!("{name}!"));
                }
                return;
            }
            _ => {}
        }
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

/// Scans a tool body for direct file-system, process, network,
/// environment and shell use.
pub(super) fn scan_body(block: &syn::Block, errors: &mut Errors) {
    BodyScan {
        errors,
        place: Place::Body,
    }
    .visit_block(block);
}

/// Holds a `check(..)` condition or the `cost` expression to the body's
/// rules.
pub(super) fn scan_expr(e: &Expr, place: Place, errors: &mut Errors) {
    BodyScan { errors, place }.visit_expr(e);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fired(src: &str) -> Vec<Rule> {
        let block: syn::Block = syn::parse_str(&format!("{{ {src} }}")).unwrap();
        let mut errors = Errors::default();
        scan_body(&block, &mut errors);
        errors.fired().to_vec()
    }

    #[test]
    fn every_route_to_the_file_system_is_refused() {
        for src in [
            "std::fs::read(\"/etc/passwd\");",
            "let _ = std::path::Path::new(\"/etc/passwd\").exists();",
            "let p = std::path::Path::new(\"/etc/passwd\"); let _ = p.exists();",
            "let p = PathBuf::from(x); p.try_exists();",
            "p.is_file(); ",
            "p.is_dir();",
            "p.is_symlink();",
            "p.metadata();",
            "p.symlink_metadata();",
            "p.read_dir();",
            "p.read_link();",
            "p.canonicalize();",
            "let ok = xs.iter().any(|q| q.exists());",
            "let v: Vec<_> = xs.iter().filter(|p| Path::is_file(p)).collect();",
            "xs.iter().map(Path::exists);",
            "File::open(\"/etc/shadow\");",
            "std::fs::File::create(\"x\");",
            "File::create_new(\"x\");",
            "OpenOptions::new().read(true).open(\"x\");",
            "DirBuilder::new().create(\"x\");",
            "use std::fs;",
            "use std::fs::File;",
            "fs::read_to_string(\"x\");",
            "tokio::fs::read(\"x\").await;",
            "async_std::fs::read(\"x\");",
            "std::os::unix::fs::symlink(\"a\", \"b\");",
            "use std::os::unix::fs::PermissionsExt;",
            "fs_err::read(\"x\");",
            "walkdir::WalkDir::new(\".\");",
            "glob::glob(\"*.txt\");",
            "tempfile::tempdir();",
            "cap_std::fs::Dir::open_ambient_dir(\"/\", cap_std::ambient_authority());",
            "Dir::open_ambient_dir(\"/\", a);",
            "let s = include_str!(\"/etc/passwd\");",
            "let b = include_bytes!(\"secret.key\");",
            "let t = format!(\"{}\", p.exists());",
        ] {
            assert!(fired(src).contains(&Rule::FsInBody), "{src}");
        }
    }

    #[test]
    fn pure_path_manipulation_and_run_dirs_are_allowed() {
        for src in [
            "let p = std::path::Path::new(\"a\").join(\"b\");",
            "let n = p.file_name(); let e = p.extension(); let q = p.parent();",
            "let s = p.display().to_string(); let b = p.starts_with(\"a\");",
            "let (h, run) = self.runs.create(ctx.caller())?;",
            "let r = run.read_bounded(&NAME, 10)?; run.write_atomic(&NAME, b\"x\")?;",
            "let m = self.map.remove(&k); let o = ctx.caller();",
            "let v = env!(\"CARGO_PKG_VERSION\");",
            "let os = std::env::consts::OS;",
            "let ip: std::net::IpAddr = \"127.0.0.1\".parse().unwrap();",
            "let exists_flag = self.flags.contains(&k);",
        ] {
            assert_eq!(fired(src), Vec::<Rule>::new(), "{src}");
        }
    }

    #[test]
    fn processes_sockets_and_the_environment_are_refused() {
        for (src, rule) in [
            ("std::process::Command::new(\"ls\");", Rule::ProcessInBody),
            ("Command::new(\"ls\");", Rule::ProcessInBody),
            (
                "std::os::unix::process::CommandExt::exec(c);",
                Rule::ProcessInBody,
            ),
            ("duct::cmd(\"ls\", [\"a\"]);", Rule::ProcessInBody),
            ("libc::system(cmd);", Rule::ProcessInBody),
            ("nix::unistd::fork();", Rule::ProcessInBody),
            ("libc::open(p, 0);", Rule::FsInBody),
            ("rustix::fs::openat(d, p, f, m);", Rule::FsInBody),
            ("nix::fcntl::open(p, f, m);", Rule::FsInBody),
            ("libc::socket(2, 1, 0);", Rule::NetInBody),
            ("std::net::TcpStream::connect(a);", Rule::NetInBody),
            ("TcpStream::connect(a);", Rule::NetInBody),
            ("tokio::net::UdpSocket::bind(a);", Rule::NetInBody),
            ("UnixStream::connect(p);", Rule::NetInBody),
            ("tokio::net::lookup_host(h);", Rule::NetInBody),
            ("(host, 80).to_socket_addrs();", Rule::NetInBody),
            ("reqwest::get(url);", Rule::NetInBody),
            ("std::env::var(\"API_KEY\");", Rule::EnvInBody),
            ("use std::env;", Rule::EnvInBody),
            ("env::var_os(\"TOKEN\");", Rule::EnvInBody),
            ("std::env::vars();", Rule::EnvInBody),
            ("dotenvy::var(\"API_KEY\");", Rule::EnvInBody),
            ("std::env::set_current_dir(d);", Rule::EnvInBody),
            ("let k = env!(\"API_KEY\");", Rule::EnvInBody),
            ("let k = option_env!(\"TOKEN\");", Rule::EnvInBody),
            ("let s = \"/bin/sh\";", Rule::ShellInBody),
        ] {
            assert!(fired(src).contains(&rule), "{src}: {:?}", fired(src));
        }
    }

    #[test]
    fn the_standard_streams_are_refused_and_standard_error_is_not() {
        for src in [
            "println!(\"{}\", x);",
            "print!(\"progress\");",
            "std::println!(\"x\");",
            "let t = async { println!(\"x\") };",
            "let o = std::io::stdout();",
            "std::io::stdout().lock().write_all(b\"x\");",
            "io::stdout().flush();",
            "let mut l = String::new(); std::io::stdin().read_line(&mut l);",
            "use std::io::stdout;",
            "use std::io::{stdin, Read};",
            "tokio::io::stdout().write_all(b\"x\").await;",
            "let r = tokio::io::stdin();",
            "let h: std::io::StdoutLock<'_> = o;",
            "libc::write(libc::STDOUT_FILENO, p, n);",
            "writeln!(std::io::stdout(), \"x\");",
            "let ok = xs.iter().all(|x| { print!(\"{x}\"); true });",
        ] {
            assert!(
                fired(src).contains(&Rule::StdioInBody),
                "{src}: {:?}",
                fired(src)
            );
        }
        // Standard error is the server's log stream; names that merely
        // look alike reach no stream.
        for src in [
            "eprintln!(\"x\");",
            "dbg!(x);",
            "std::io::stderr().write_all(b\"x\");",
            "tracing::info!(\"x\");",
            "let stdout = out.clone(); stdout.len();",
            "let s = format!(\"{}\", stdin_lines);",
            "writeln!(buf, \"x\");",
            "self.stdout_log.snapshot();",
            "let t = o.stdout.total_bytes;",
        ] {
            assert!(
                !fired(src).contains(&Rule::StdioInBody),
                "{src}: {:?}",
                fired(src)
            );
        }
    }

    #[test]
    fn allowed_method_names_are_not_refused_names() {
        for (names, why) in ALLOWED_METHODS {
            assert!(!why.is_empty());
            for n in names.split(", ") {
                assert!(!FS_METHODS.contains(&n), "{n}");
            }
        }
    }
}
