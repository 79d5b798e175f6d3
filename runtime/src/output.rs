//! Tool outputs: [`Output<T>`] is a tool's success value, returned as
//! `structuredContent` `{ "data": T, "warnings": [...], "artifacts": [...] }`
//! plus one text content holding the same JSON, with an advertised output
//! schema generated from `T` and wrapped the same way. The same schema also
//! admits the error result `{ "error": {...} }` ([`output_schema`]), so every
//! result a tool sends validates against what it advertises.
//!
//! Non-finite floats: serde_json would silently write NaN and ±∞ as `null`,
//! breaking the advertised schema (`"type": "number"`). An output containing
//! a non-finite `f32`/`f64` anywhere is therefore refused as a whole: the
//! caller gets a fixed internal error with a reference id, and the server
//! log gets the tool name under that id. A tool that has no value to report
//! uses `Option<f64>` (`None` is advertised as `null`).

use std::borrow::Cow;
use std::sync::Arc;

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, MetaObject, ResourceContents};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::error::ToolError;
use crate::untrusted::{UNTRUSTED_NOTICE, Untrusted};

/// Whether a property name looks like it holds a secret: the one rule of
/// [`crate::redact::is_secret_like`], shared with log and header redaction.
pub use crate::redact::is_secret_like;

/// A tool's success value with server-authored warnings and artifacts.
#[derive(Debug, Clone, PartialEq)]
pub struct Output<T> {
    data: T,
    warnings: Vec<Cow<'static, str>>,
    artifacts: Vec<Artifact>,
    images: Vec<crate::image::Image>,
    /// Audio, sent after the images.
    audio: Vec<crate::audio::Audio>,
    /// Embedded resources and resource links, sent after the images.
    resources: Vec<ContentBlock>,
    /// Bytes of the embedded resources' contents.
    resource_bytes: usize,
    /// The call ran but did not do what it was asked (`isError`).
    failed: bool,
}

/// The `_meta` key of untrusted text's notice in a resource's contents.
pub const UNTRUSTED_META_KEY: &str = "io.github.hardened-mcp/untrusted";
/// The `_meta` key saying that untrusted text was cut to its limit.
pub const TRUNCATED_META_KEY: &str = "io.github.hardened-mcp/truncated";
/// Most bytes of embedded resources one tool result carries: 4 MiB (a
/// larger content belongs in a resource the result links to).
pub const MAX_EMBEDDED_BYTES: usize = 4 * 1024 * 1024;

/// The contents of a resource: what a resource read answers, and what a
/// tool result or a prompt embeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceBody(Body);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Body {
    Text(String),
    /// Neutralised text, and whether the input was cut.
    Untrusted(String, bool),
    Blob(Vec<u8>),
}

impl ResourceBody {
    /// Text the server authored (its own documentation, a fixed table).
    /// Never put text from outside the server here: use
    /// [`ResourceBody::untrusted`].
    pub fn text(text: impl Into<String>) -> Self {
        Self(Body::Text(text.into()))
    }

    /// Text from outside the server (a solver's output, a file a caller
    /// wrote), already neutralised and bounded by [`Untrusted`]; the
    /// contents carry the fixed notice beside it, and say when the input
    /// was cut ([`TRUNCATED_META_KEY`]).
    pub fn untrusted(text: Untrusted<String>) -> Self {
        let cut = text.is_truncated();
        Self(Body::Untrusted(text.into_data(), cut))
    }

    /// JSON from outside the server, as the server serialized it (every
    /// control character escaped): marked untrusted, never cut.
    #[cfg(feature = "runs")]
    pub(crate) fn untrusted_json(json: String) -> Self {
        Self(Body::Untrusted(json, false))
    }

    /// Binary content, sent base64-encoded.
    pub fn blob(bytes: Vec<u8>) -> Self {
        Self(Body::Blob(bytes))
    }

    pub(crate) fn len(&self) -> usize {
        match &self.0 {
            Body::Text(t) | Body::Untrusted(t, _) => t.len(),
            Body::Blob(b) => b.len(),
        }
    }

    pub(crate) fn into_contents(self, uri: &str, mime_type: &str) -> ResourceContents {
        match self.0 {
            Body::Text(text) => ResourceContents::text(text, uri).with_mime_type(mime_type),
            Body::Untrusted(text, cut) => {
                let mut meta = serde_json::Map::new();
                meta.insert(UNTRUSTED_META_KEY.into(), Value::from(UNTRUSTED_NOTICE));
                if cut {
                    meta.insert(TRUNCATED_META_KEY.into(), Value::Bool(true));
                }
                ResourceContents::text(text, uri)
                    .with_mime_type(mime_type)
                    .with_meta(MetaObject(meta))
            }
            Body::Blob(bytes) => {
                ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(bytes), uri)
                    .with_mime_type(mime_type)
            }
        }
    }
}

/// Something a tool produced that the caller can fetch later (a run's file,
/// a plot), named by server-authored text and an opaque run handle.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Artifact {
    /// A fixed, server-authored name (`"temperature.csv"`).
    pub name: Cow<'static, str>,
    /// The run handle it belongs to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Its media type (`"text/csv"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_type: Option<Cow<'static, str>>,
    /// Its size in bytes, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

impl Artifact {
    /// An artifact with a fixed name.
    pub fn new(name: &'static str) -> Self {
        Self {
            name: Cow::Borrowed(name),
            run: None,
            media_type: None,
            bytes: None,
        }
    }

    /// The run handle it lives under.
    pub fn in_run(mut self, run: impl Into<String>) -> Self {
        self.run = Some(run.into());
        self
    }

    /// Its media type.
    pub fn with_media_type(mut self, media_type: &'static str) -> Self {
        self.media_type = Some(Cow::Borrowed(media_type));
        self
    }

    /// Its size.
    pub fn with_bytes(mut self, bytes: u64) -> Self {
        self.bytes = Some(bytes);
        self
    }
}

/// A warning text authored by the server (never caller or solver text).
///
/// Built from a `&'static str`, or with [`ServerText::formatted`] for text
/// the server composes from its own values (counts, declared limits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerText(Cow<'static, str>);

impl ServerText {
    /// Text the server composed itself. Never pass caller or solver text.
    pub fn formatted(text: String) -> Self {
        Self(Cow::Owned(text))
    }
}

impl From<&'static str> for ServerText {
    fn from(s: &'static str) -> Self {
        Self(Cow::Borrowed(s))
    }
}

/// The wire shape of an [`Output`].
#[derive(Serialize)]
struct Envelope<'a, T> {
    /// The tool's result.
    data: &'a T,
    /// Server-authored warnings about the result.
    warnings: &'a [Cow<'static, str>],
    /// Produced artifacts.
    artifacts: &'a [Artifact],
}

/// The schema of the wire shape: the advertised output schema.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct EnvelopeSchema<T> {
    /// The tool's result.
    data: T,
    /// Server-authored warnings about the result.
    warnings: Vec<String>,
    /// Produced artifacts.
    artifacts: Vec<Artifact>,
}

impl<T> Output<T> {
    /// A result with no warnings and no artifacts.
    pub fn new(data: T) -> Self {
        Self {
            data,
            warnings: Vec::new(),
            artifacts: Vec::new(),
            images: Vec::new(),
            audio: Vec::new(),
            resources: Vec::new(),
            resource_bytes: 0,
            failed: false,
        }
    }

    /// Marks the result a failure (`isError: true`) that keeps its data:
    /// the call ran but did not do what it was asked (a solver run that
    /// failed or hit a limit), and the model reads how from the data. A
    /// refusal or a fault is a [`ToolError`] instead.
    pub fn failed(mut self) -> Self {
        self.failed = true;
        self
    }

    /// Whether the result is marked a failure ([`Output::failed`]).
    pub fn is_failure(&self) -> bool {
        self.failed
    }

    /// Embeds a resource's contents (at `uri`, of `mime_type`), sent as MCP
    /// resource content after the images. A result embeds at most
    /// [`MAX_EMBEDDED_BYTES`] (beyond, it is refused as an internal
    /// error): link larger contents with [`Output::with_resource_link`].
    pub fn with_resource(
        mut self,
        uri: impl Into<String>,
        mime_type: &str,
        body: ResourceBody,
    ) -> Self {
        self.resource_bytes = self.resource_bytes.saturating_add(body.len());
        let contents = body.into_contents(&uri.into(), mime_type);
        self.resources.push(ContentBlock::resource(contents));
        self
    }

    /// Links a resource the client can read (`resources/read`): a run's
    /// file instead of its bytes. `uri` and `name` are server-made (a URI
    /// the server's resources answer).
    pub fn with_resource_link(
        mut self,
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: &str,
    ) -> Self {
        let link = rmcp::model::Resource::new(uri, name).with_mime_type(mime_type);
        self.resources.push(ContentBlock::ResourceLink(link));
        self
    }

    /// Adds a server-authored warning.
    pub fn with_warning(mut self, warning: impl Into<ServerText>) -> Self {
        self.warnings.push(warning.into().0);
        self
    }

    /// Adds an artifact.
    pub fn with_artifact(mut self, artifact: Artifact) -> Self {
        self.artifacts.push(artifact);
        self
    }

    /// Adds an image, sent as MCP image content after the text content.
    /// [`Image`](crate::image::Image) has already checked it is a PNG within
    /// the size ceilings; its bytes do not enter the structured result.
    pub fn with_image(mut self, image: crate::image::Image) -> Self {
        self.images.push(image);
        self
    }

    /// Adds audio, sent as MCP audio content after the images.
    /// [`Audio`](crate::audio::Audio) has already checked it is a PCM WAV
    /// file within the size ceiling; its bytes do not enter the structured
    /// result.
    pub fn with_audio(mut self, audio: crate::audio::Audio) -> Self {
        self.audio.push(audio);
        self
    }

    /// The images.
    pub fn images(&self) -> &[crate::image::Image] {
        &self.images
    }

    /// The result value.
    pub fn data(&self) -> &T {
        &self.data
    }

    /// The warnings.
    pub fn warnings(&self) -> &[Cow<'static, str>] {
        &self.warnings
    }

    /// The artifacts.
    pub fn artifacts(&self) -> &[Artifact] {
        &self.artifacts
    }

    /// The result value, dropping warnings and artifacts.
    pub fn into_data(self) -> T {
        self.data
    }
}

impl<T: Serialize> Output<T> {
    /// The structured value: `{ "data", "warnings", "artifacts" }`.
    ///
    /// Fails (with a logged internal error) when the data holds a non-finite
    /// float or cannot be serialized.
    pub fn to_structured(&self, tool: &'static str) -> Result<Value, ToolError> {
        let env = Envelope {
            data: &self.data,
            warnings: &self.warnings,
            artifacts: &self.artifacts,
        };
        if let Err(e) = env.serialize(finite::Probe) {
            return Err(ToolError::internal(format_args!(
                "tool `{tool}` returned an output that cannot be sent: {e}"
            )));
        }
        serde_json::to_value(&env).map_err(|e| {
            ToolError::internal(format_args!(
                "tool `{tool}` returned an output that cannot be serialized: {e}"
            ))
        })
    }

    /// The MCP result: structured content plus the same JSON as text.
    pub fn into_call_tool_result(self, tool: &'static str) -> Result<CallToolResult, ToolError> {
        let value = self.to_structured(tool)?;
        if self.resource_bytes > MAX_EMBEDDED_BYTES {
            return Err(ToolError::internal(format_args!(
                "tool `{tool}` embedded {} bytes of resources: at most {MAX_EMBEDDED_BYTES}",
                self.resource_bytes
            )));
        }
        let mut content = vec![ContentBlock::text(value.to_string())];
        content.extend(
            self.images
                .into_iter()
                .map(crate::image::Image::into_content),
        );
        content.extend(
            self.audio
                .into_iter()
                .map(crate::audio::Audio::into_content),
        );
        content.extend(self.resources);
        let mut r = if self.failed {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        r.structured_content = Some(value);
        Ok(r)
    }
}

/// The advertised output schema of a tool returning `Output<T>`: draft
/// 2020-12, generated by schemars for what `T` serializes to.
///
/// The root is a closed object that is exactly one of two shapes: the
/// success envelope (`data`, `warnings`, `artifacts`) or the error result
/// (`error`, see [`ToolError::json_schema`]). Every result a tool sends,
/// success or error, validates against it; clients that check
/// `structuredContent` of error results against the output schema too
/// accept ours.
pub fn output_schema<T: JsonSchema>() -> Arc<JsonObject> {
    let Value::Object(mut m) = root_schema::<EnvelopeSchema<T>>() else {
        return Arc::new(JsonObject::new());
    };
    m.remove("title");
    let success = m
        .remove("required")
        .unwrap_or_else(|| serde_json::json!(["data", "warnings", "artifacts"]));
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        props.insert("error".into(), ToolError::json_schema());
    }
    m.insert("additionalProperties".into(), Value::Bool(false));
    m.insert(
        "oneOf".into(),
        serde_json::json!([{ "required": success }, { "required": ["error"] }]),
    );
    Arc::new(m)
}

/// The draft 2020-12 schema of what `T` serializes to, as the output
/// schemas are generated.
pub(crate) fn root_schema<T: JsonSchema>() -> Value {
    schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// Every secret-like property name anywhere in a schema (nested objects,
/// `$defs`, array items), as JSON-pointer-like paths.
pub fn secret_like_properties(schema: &JsonObject) -> Vec<String> {
    fn walk(v: &Value, path: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    let p = format!("{path}/{k}");
                    if k == "properties"
                        && let Value::Object(props) = child
                    {
                        for (name, sub) in props {
                            let pp = format!("{p}/{name}");
                            if is_secret_like(name) {
                                out.push(pp.clone());
                            }
                            walk(sub, &pp, out);
                        }
                        continue;
                    }
                    walk(child, &p, out);
                }
            }
            Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    walk(child, &format!("{path}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&Value::Object(schema.clone()), "", &mut out);
    out
}

mod finite {
    //! A serializer that writes nothing and fails on a non-finite float.
    use serde::ser::{self, Serialize};
    use std::fmt;

    #[derive(Debug)]
    pub(super) struct NonFinite(String);

    impl fmt::Display for NonFinite {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(&self.0)
        }
    }
    impl std::error::Error for NonFinite {}
    impl ser::Error for NonFinite {
        fn custom<T: fmt::Display>(msg: T) -> Self {
            Self(msg.to_string())
        }
    }

    pub(super) struct Probe;

    type R = Result<(), NonFinite>;

    fn float(v: f64) -> R {
        if v.is_finite() {
            Ok(())
        } else {
            Err(NonFinite("a non-finite float (NaN or infinity)".into()))
        }
    }

    macro_rules! ok {
        ($($f:ident($t:ty)),*) => {$(fn $f(self, _: $t) -> R { Ok(()) })*};
    }

    impl ser::Serializer for Probe {
        type Ok = ();
        type Error = NonFinite;
        type SerializeSeq = Probe;
        type SerializeTuple = Probe;
        type SerializeTupleStruct = Probe;
        type SerializeTupleVariant = Probe;
        type SerializeMap = Probe;
        type SerializeStruct = Probe;
        type SerializeStructVariant = Probe;
        ok!(
            serialize_bool(bool),
            serialize_i8(i8),
            serialize_i16(i16),
            serialize_i32(i32),
            serialize_i64(i64),
            serialize_i128(i128),
            serialize_u8(u8),
            serialize_u16(u16),
            serialize_u32(u32),
            serialize_u64(u64),
            serialize_u128(u128),
            serialize_char(char),
            serialize_str(&str),
            serialize_bytes(&[u8]),
            serialize_unit_struct(&'static str)
        );
        fn serialize_f32(self, v: f32) -> R {
            float(f64::from(v))
        }
        fn serialize_f64(self, v: f64) -> R {
            float(v)
        }
        fn serialize_none(self) -> R {
            Ok(())
        }
        fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> R {
            v.serialize(self)
        }
        fn serialize_unit(self) -> R {
            Ok(())
        }
        fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> R {
            Ok(())
        }
        fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, v: &T) -> R {
            v.serialize(self)
        }
        fn serialize_newtype_variant<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            v: &T,
        ) -> R {
            v.serialize(self)
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Probe, NonFinite> {
            Ok(Probe)
        }
        fn serialize_tuple(self, _: usize) -> Result<Probe, NonFinite> {
            Ok(Probe)
        }
        fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Probe, NonFinite> {
            Ok(Probe)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Probe, NonFinite> {
            Ok(Probe)
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Probe, NonFinite> {
            Ok(Probe)
        }
        fn serialize_struct(self, _: &'static str, _: usize) -> Result<Probe, NonFinite> {
            Ok(Probe)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Probe, NonFinite> {
            Ok(Probe)
        }
    }

    macro_rules! compound {
        ($($tr:ident :: $m:ident),*) => {$(
            impl ser::$tr for Probe {
                type Ok = ();
                type Error = NonFinite;
                fn $m<T: ?Sized + Serialize>(&mut self, v: &T) -> R { v.serialize(Probe) }
                fn end(self) -> R { Ok(()) }
            }
        )*};
    }
    compound!(
        SerializeSeq::serialize_element,
        SerializeTuple::serialize_element,
        SerializeTupleStruct::serialize_field,
        SerializeTupleVariant::serialize_field
    );

    impl ser::SerializeMap for Probe {
        type Ok = ();
        type Error = NonFinite;
        fn serialize_key<T: ?Sized + Serialize>(&mut self, k: &T) -> R {
            k.serialize(Probe)
        }
        fn serialize_value<T: ?Sized + Serialize>(&mut self, v: &T) -> R {
            v.serialize(Probe)
        }
        fn end(self) -> R {
            Ok(())
        }
    }
    impl ser::SerializeStruct for Probe {
        type Ok = ();
        type Error = NonFinite;
        fn serialize_field<T: ?Sized + Serialize>(&mut self, _: &'static str, v: &T) -> R {
            v.serialize(Probe)
        }
        fn end(self) -> R {
            Ok(())
        }
    }
    impl ser::SerializeStructVariant for Probe {
        type Ok = ();
        type Error = NonFinite;
        fn serialize_field<T: ?Sized + Serialize>(&mut self, _: &'static str, v: &T) -> R {
            v.serialize(Probe)
        }
        fn end(self) -> R {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn resources_follow_the_text_embedded_or_linked_within_a_ceiling() {
        let out = Output::new(1_u32)
            .with_resource("lab://units", "text/plain", ResourceBody::text("m, s"))
            .with_resource(
                "lab://log",
                "text/plain",
                ResourceBody::untrusted(Untrusted::text("\u{1b}[2Jhi")),
            )
            .with_resource_link("lab://runs/x/result", "result", "application/json");
        let r = serde_json::to_value(out.into_call_tool_result("t").unwrap()).unwrap();
        let content = r["content"].as_array().unwrap();
        assert_eq!(content.len(), 4);
        assert_eq!(content[1]["type"], "resource");
        assert_eq!(content[1]["resource"]["text"], "m, s");
        assert_eq!(content[2]["resource"]["text"], "␛[2Jhi");
        assert_eq!(
            content[2]["resource"]["_meta"][UNTRUSTED_META_KEY],
            UNTRUSTED_NOTICE
        );
        assert_eq!(content[3]["type"], "resource_link");
        assert_eq!(content[3]["uri"], "lab://runs/x/result");
        let too_much = Output::new(1_u32).with_resource(
            "lab://big",
            "application/octet-stream",
            ResourceBody::blob(vec![0; MAX_EMBEDDED_BYTES + 1]),
        );
        assert!(matches!(
            too_much.into_call_tool_result("t"),
            Err(ToolError::Internal(_))
        ));
    }

    #[derive(Serialize, JsonSchema)]
    struct R {
        x: f64,
        y: Option<f32>,
        v: Vec<f64>,
    }

    #[test]
    fn finite_output_is_wrapped() {
        let out = Output::new(R {
            x: 1.5,
            y: None,
            v: vec![2.0],
        })
        .with_warning("coarse mesh");
        let r = out.into_call_tool_result("t").unwrap();
        assert_eq!(
            r.structured_content,
            Some(json!({"data": {"x": 1.5, "y": null, "v": [2.0]},
                "warnings": ["coarse mesh"], "artifacts": []}))
        );
        let text = r.content[0].as_text().unwrap().text.clone();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            r.structured_content.unwrap()
        );
    }

    #[test]
    fn non_finite_output_is_refused_everywhere() {
        for r in [
            R {
                x: f64::NAN,
                y: None,
                v: vec![],
            },
            R {
                x: 0.0,
                y: Some(f32::INFINITY),
                v: vec![],
            },
            R {
                x: 0.0,
                y: None,
                v: vec![1.0, f64::NEG_INFINITY],
            },
        ] {
            let e = Output::new(r).into_call_tool_result("t").unwrap_err();
            assert!(matches!(e, ToolError::Internal(_)), "{e:?}");
        }
    }

    #[test]
    fn every_result_validates_against_the_output_schema() {
        use crate::args::{ArgError, ArgErrorCode, Bound};
        use crate::concurrency::Ceiling;

        let schema = Value::Object((*output_schema::<R>()).clone());
        let v = jsonschema::draft202012::new(&schema).unwrap();
        let ok = Output::new(R {
            x: 1.0,
            y: Some(2.0),
            v: vec![3.0],
        })
        .with_warning("w")
        .into_call_tool_result("t")
        .unwrap();
        let ok = ok.structured_content.unwrap();
        assert!(v.is_valid(&ok), "{ok}");
        let errors = [
            ToolError::InvalidArguments(ArgError::new(
                ArgErrorCode::AboveMaximum,
                "x",
                Some(Bound::Float(1.0)),
            )),
            ToolError::InvalidArguments(ArgError::unknown_argument()),
            ToolError::InvalidArguments(ArgError::check_failed("lo must be below hi")),
            ToolError::CostExceeded {
                ceiling: 2e9,
                units: "cell-steps",
            },
            ToolError::Busy(Ceiling::CallerRuns),
            ToolError::Busy(Ceiling::ServerCalls),
            ToolError::Timeout,
            ToolError::Cancelled,
            ToolError::UnknownRun,
            ToolError::NotFound,
            ToolError::UnknownTool,
            ToolError::InsufficientScope,
            ToolError::QuotaExceeded(crate::error::Quota::Runs),
            ToolError::rejected("no result yet"),
            ToolError::internal("detail"),
            ToolError::AwaitingInput,
            ToolError::ClientCannotAnswer(crate::error::ClientNeed::Sampling),
            ToolError::MalformedAnswer,
            ToolError::AnswerRefused {
                question: "age",
                error: ArgError::new(ArgErrorCode::AboveMaximum, "age", Some(Bound::Int(150))),
            },
            ToolError::NoAnswer,
            ToolError::NotApproved,
        ];
        let mut kinds = std::collections::BTreeSet::new();
        for e in errors {
            kinds.insert(e.kind());
            let r = e.into_call_tool_result().structured_content.unwrap();
            assert!(v.is_valid(&r), "{r}");
        }
        assert_eq!(kinds.len(), ToolError::KINDS.len(), "every kind covered");
        // The two shapes are exclusive, and both are closed.
        let mut both = ok.clone();
        both["error"] = json!({"kind": "internal", "message": "m"});
        assert!(!v.is_valid(&both));
        let mut extra = ok;
        extra["note"] = json!("x");
        assert!(!v.is_valid(&extra));
        assert!(!v.is_valid(&json!({"error": {"kind": "oops", "message": "m"}})));
        assert!(!v.is_valid(&json!({"error": {"kind": "internal"}})));
    }

    #[test]
    fn output_schema_wraps_data() {
        let s = output_schema::<R>();
        assert_eq!(s["type"], "object");
        assert_eq!(
            s["oneOf"],
            json!([{"required": ["data", "warnings", "artifacts"]}, {"required": ["error"]}])
        );
        assert_eq!(s["additionalProperties"], false);
        assert!(secret_like_properties(&s).is_empty());
    }

    #[test]
    fn secret_like_names() {
        for n in [
            "token",
            "access_token",
            "apiKey",
            "API_KEY",
            "api-key",
            "Password",
            "client_secret",
            "SessionCookie",
            "authorization",
            "credentials",
            "apikeys",
        ] {
            assert!(is_secret_like(n), "{n}");
        }
        for n in [
            "tokenizer",
            "steps",
            "courant",
            "keyframe",
            "author",
            "secretary_count",
        ] {
            assert!(!is_secret_like(n), "{n}");
        }
    }
}
