//! Every rule the macros enforce, by the id that names its compile-fail
//! fixture (`tests/ui/compile-fail/<id>.rs`) and its row in
//! `docs/compile-errors.md`. Each diagnostic is raised with its rule
//! ([`crate::diag::Errors::rule`]), so a new rule is a new variant here,
//! and the test below fails until it has both a fixture and a row.

macro_rules! rules {
    ($($(#[$doc:meta])* $variant:ident => $id:literal,)*) => {
        /// One rule of the macros.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Rule {
            $($(#[$doc])* $variant,)*
        }

        impl Rule {
            /// Every rule.
            #[cfg(test)]
            pub const ALL: &[Rule] = &[$(Rule::$variant,)*];

            /// The id of the rule's fixture and catalog row.
            #[cfg(test)]
            pub fn id(self) -> &'static str {
                match self {
                    $(Rule::$variant => $id,)*
                }
            }
        }
    };
}

rules! {
    // Attributes.
    /// `#[hardened_tool]` or `#[bounded]` outside `#[hardened_tools]`.
    OutsideHardenedTools => "outside-hardened-tools",
    /// A key no attribute of ours has.
    UnknownKey => "unknown-key",
    /// A key written twice.
    DuplicateKey => "duplicate-key",
    /// A value of the wrong form (darling's and syn's own message).
    MalformedValue => "malformed-value",
    /// Two `#[bounded]` on one parameter or field.
    DuplicateBounded => "duplicate-bounded",
    /// `#[hardened_tools]` on a trait impl or a generic impl.
    ToolsOnNonInherentImpl => "tools-on-non-inherent-impl",
    /// `#[hardened_tools]` without a `#[hardened_tool]` method.
    ToolsWithoutTools => "tools-without-tools",
    // Tools.
    /// `task` on a tool without a `ToolContext` parameter.
    TaskWithoutContext => "task-without-context",
    /// No `max_cost`, `units` or `cost`.
    MissingCost => "missing-cost",
    /// `max_cost` zero, negative, non-finite or not a literal.
    NonPositiveMaxCost => "non-positive-max-cost",
    /// `units` blank.
    EmptyUnits => "empty-units",
    /// `header` that is not a header name, or the same header on two
    /// parameters of one tool.
    HeaderName => "header-name",
    /// `confirm_above` not a finite literal at least zero and below
    /// `max_cost`, or beside `confirm`.
    ConfirmAbove => "confirm-above",
    /// An `asks` token that is not a client capability a tool can ask, or
    /// one listed twice.
    AsksUnknown => "asks-unknown",
    /// `timeout_s` zero, negative, non-finite or above 1e9.
    NonPositiveTimeout => "non-positive-timeout",
    /// `concurrency` zero, negative, fractional or above `u32::MAX`.
    NonPositiveConcurrency => "non-positive-concurrency",
    /// A tool name MCP does not allow.
    InvalidToolName => "invalid-tool-name",
    /// A tool without `&self`.
    ToolWithoutRefSelf => "tool-without-ref-self",
    /// A tool not returning `Result<Output<T>, ToolError>`.
    BadReturnType => "bad-return-type",
    /// Two `ToolContext` parameters.
    SeveralToolContexts => "several-tool-contexts",
    /// A `scopes` token that is not an OAuth scope.
    ScopesNotAScopeToken => "scopes-not-a-scope-token",
    /// A scope listed twice.
    ScopesRepeated => "scopes-repeated",
    /// `scopes = ""`.
    ScopesEmpty => "scopes-empty",
    /// `cost` names something that is not a parameter.
    CostUnknownParameter => "cost-unknown-parameter",
    /// `check` names something that is not a parameter.
    CheckUnknownParameter => "check-unknown-parameter",
    /// `as <integer>` inside `cost`.
    CostIntegerCast => "cost-integer-cast",
    /// Integer arithmetic inside `check`.
    CheckIntegerArithmetic => "check-integer-arithmetic",
    /// An assignment, `&mut`, a mutating or locking call or an effectful
    /// macro inside `check` or `cost`.
    SideEffectInCheck => "side-effect-in-check",
    /// `std::fs`, `File::open`, `Path` methods that touch the file system,
    /// `include_str!` and the like in a tool body, `check` or `cost`.
    FsInBody => "fs-in-body",
    /// `std::process`, `Command` and the like in a tool body.
    ProcessInBody => "process-in-body",
    /// A shell named in a tool body.
    ShellInBody => "shell-in-body",
    /// Sockets, name resolution or an HTTP client crate in a tool body.
    NetInBody => "net-in-body",
    /// `std::env` reads and changes, `env!` of a non-Cargo variable, in a
    /// tool body.
    EnvInBody => "env-in-body",
    /// `print!`, `println!`, the process's standard output or input
    /// (`std::io::stdout`, `tokio::io::stdin`, ..) in a tool body.
    StdioInBody => "stdio-in-body",
    // Parameters.
    /// A parameter that is not a plain name.
    ParameterNotAPlainName => "parameter-not-a-plain-name",
    /// `#[bounded]` on a context, run handle or argument struct.
    BoundedOnUnboundableType => "bounded-on-unboundable-type",
    /// `PathBuf`, `Path`, `OsString`, `OsStr`.
    PathParameter => "path-parameter",
    /// `serde_json::Value` and maps.
    UntypedJson => "untyped-json",
    /// A type no argument kind describes.
    UnsupportedType => "unsupported-type",
    /// `Vec<Vec<_>>`, `Option<Option<_>>`, `Vec<Option<_>>`.
    NestedContainer => "nested-container",
    /// A free-text string named like a path.
    PathNamedString => "path-named-string",
    /// A `#[bounded]` key that does not apply to the kind.
    KeyDoesNotApply => "key-does-not-apply",
    /// A number without `#[bounded]`.
    UnboundedNumber => "unbounded-number",
    /// A number with one bound only.
    OneSidedBound => "one-sided-bound",
    /// `min` with `exclusive_min`, or `max` with `exclusive_max`.
    TwoBoundsOnOneSide => "two-bounds-on-one-side",
    /// A lower bound above the upper one.
    MinAboveMax => "min-above-max",
    /// A bound that is not a numeric literal.
    NonLiteralBound => "non-literal-bound",
    /// A fractional bound on an integer.
    FractionalIntegerBound => "fractional-integer-bound",
    /// A bound outside the parameter's type.
    OutOfTypeBound => "out-of-type-bound",
    /// A non-finite bound on a float.
    NonFiniteBound => "non-finite-bound",
    /// `min_len`, `max_len` or `max_items` not a non-negative integer.
    LengthNotAnInteger => "length-not-an-integer",
    /// A string without `max_len`.
    UnboundedString => "unbounded-string",
    /// `min_len` above `max_len`.
    MinLenAboveMaxLen => "min-len-above-max-len",
    /// A pattern that does not parse.
    InvalidPattern => "invalid-pattern",
    /// A pattern Rust and ECMA-262 read differently.
    PatternDialect => "pattern-dialect",
    /// A charset name that does not exist.
    UnknownCharset => "unknown-charset",
    /// A `Vec` without `max_items`.
    UnboundedVec => "unbounded-vec",
    /// `min_items` above `max_items`, on an array or its rows.
    MinItemsAboveMaxItems => "min-items-above-max-items",
    /// `same_len_as` naming no other array parameter of the tool.
    SameLenAsTarget => "same-len-as-target",
    /// A `default` of the wrong type.
    DefaultNotALiteral => "default-not-a-literal",
    /// A `default` outside the declared range.
    DefaultOutOfRange => "default-out-of-range",
    /// A `default` outside the declared lengths.
    DefaultOutOfLength => "default-out-of-length",
    // Derives.
    /// `#[derive(HardenedArgs)]` on something else than a struct with
    /// named fields.
    ArgsDeriveNotANamedStruct => "args-derive-not-a-named-struct",
    /// A `ToolContext` or `RunDir` field in an argument struct.
    ArgsStructContextField => "args-struct-context-field",
    /// `ToolEnum` on a generic enum.
    ToolEnumGeneric => "tool-enum-generic",
    /// `ToolEnum` on a struct or union.
    ToolEnumNotAnEnum => "tool-enum-not-an-enum",
    /// A `ToolEnum` variant with data.
    ToolEnumWithData => "tool-enum-with-data",
    /// A token that is not a plain identifier.
    ToolEnumInvalidToken => "tool-enum-invalid-token",
    /// Two variants with one token.
    ToolEnumDuplicateToken => "tool-enum-duplicate-token",
    /// A `ToolEnum` without variants.
    ToolEnumEmpty => "tool-enum-empty",
    /// `#[tool_output(..)]` with arguments.
    ToolOutputWithArguments => "tool-output-with-arguments",
    /// `#[tool_output]` on a function or another item.
    ToolOutputOnAFunction => "tool-output-on-a-function",
}

#[cfg(test)]
mod tests {
    use super::Rule;
    use std::collections::BTreeSet;
    use std::path::Path;

    /// Rules reported by rustc through the types the macros generate: they
    /// have fixtures and rows too.
    const TYPE_RULES: &[&str] = &[
        "not-an-argument-kind",
        "cost-not-f64",
        "record-default-or-header",
        "args-key-shared",
    ];

    /// Fixtures that show several rules at once.
    const COMBINED: &[&str] = &["several-errors"];

    fn workspace() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap_or_else(|| Path::new("."))
    }

    fn fixtures() -> BTreeSet<String> {
        let dir = workspace().join("tests/ui/compile-fail");
        std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.strip_suffix(".rs").map(str::to_owned)
            })
            .collect()
    }

    fn catalog_rows() -> BTreeSet<String> {
        let path = workspace().join("docs/compile-errors.md");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once("` |").map(|(id, _)| id.to_owned()))
            .collect()
    }

    fn ids() -> Vec<&'static str> {
        Rule::ALL
            .iter()
            .map(|r| r.id())
            .chain(TYPE_RULES.iter().copied())
            .collect()
    }

    #[test]
    fn every_rule_has_a_fixture_with_its_stderr_and_a_catalog_row() {
        let fixtures = fixtures();
        let rows = catalog_rows();
        let dir = workspace().join("tests/ui/compile-fail");
        let mut missing = Vec::new();
        for id in ids() {
            if !fixtures.contains(id) || !dir.join(format!("{id}.stderr")).exists() {
                missing.push(format!("fixture tests/ui/compile-fail/{id}.rs (+ .stderr)"));
            }
            if !rows.contains(id) {
                missing.push(format!("row `{id}` in docs/compile-errors.md"));
            }
        }
        assert!(missing.is_empty(), "missing:\n{}", missing.join("\n"));
    }

    #[test]
    fn every_fixture_and_row_belongs_to_a_rule() {
        let ids = ids();
        // A fixture is `<id>.rs`, or `<id>-<variant>.rs` for another case of
        // the same rule.
        let owned = |name: &str| {
            COMBINED.contains(&name)
                || ids.iter().any(|id| {
                    name == *id || name.strip_prefix(id).is_some_and(|v| v.starts_with('-'))
                })
        };
        let stray: Vec<String> = fixtures()
            .into_iter()
            .chain(catalog_rows())
            .filter(|n| !owned(n))
            .collect();
        assert!(stray.is_empty(), "fixtures or rows of no rule: {stray:?}");
    }

    #[test]
    fn ids_are_unique_kebab_case() {
        let ids = ids();
        let set: BTreeSet<_> = ids.iter().collect();
        assert_eq!(set.len(), ids.len());
        for id in ids {
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{id}"
            );
        }
    }
}
