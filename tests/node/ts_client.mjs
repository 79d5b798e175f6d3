// The official MCP TypeScript SDK client (pinned in package.json) driving
// one server over stdio. Fails on any warning the SDK or its validator
// (ajv, with ajv-formats, as the SDK configures it) prints while it
// compiles and applies the advertised schemas, e.g. `unknown format
// "uint64" ignored in schema`.
//
//   node ts_client.mjs <label> '<calls JSON>' <server> [args...]
//
// <calls JSON>: {"tools": [names], "calls": [{"tool", "arguments",
// "expect": "ok" | "<error kind>", "asked"?: bool}], "person"?: "approve" |
// "decline"}. With "person", the client declares elicitation and its person
// answers every question (approve: accept with {"approve": true}); "asked"
// says whether a call must (true) or must not (false) have put a question. Every tool listed must be named in
// "tools"; every input and output schema is compiled with the SDK's own
// validator; each call's result is validated by the SDK against the output
// schema (it does so for every result that is not an error). Prints
// `ok: <label>` and exits 0 when everything holds; bounded by its own
// deadline.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const DEADLINE_MS = 120_000;
const warnings = [];
for (const level of ["warn", "error", "log", "info", "debug"]) {
  console[level] = (...args) => warnings.push(`console.${level}: ${args.map(String).join(" ")}`);
}
process.on("warning", (w) => warnings.push(`process warning: ${w.name}: ${w.message}`));

function fail(what) {
  process.stdout.write(`FAILED: ${what}\n`);
  process.exit(1);
}

const timer = setTimeout(() => fail(`no result within ${DEADLINE_MS} ms`), DEADLINE_MS);

const [label, spec, command, ...args] = process.argv.slice(2);
if (!label || !spec || !command) fail("usage: ts_client.mjs <label> '<calls JSON>' <server> [args...]");
const plan = JSON.parse(spec);

// The formats JSON Schema 2020-12 defines; anything else is a warning in
// strict validators, or ignored.
const STANDARD_FORMATS = new Set([
  "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname",
  "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template",
  "json-pointer", "relative-json-pointer", "regex",
]);

function formats(schema, path, out) {
  if (Array.isArray(schema)) {
    schema.forEach((s, i) => formats(s, `${path}/${i}`, out));
  } else if (schema && typeof schema === "object") {
    for (const [k, v] of Object.entries(schema)) {
      if (k === "format" && typeof v === "string" && !STANDARD_FORMATS.has(v)) out.push(`${path}: format "${v}"`);
      formats(v, `${path}/${k}`, out);
    }
  }
}

const transport = new StdioClientTransport({
  command,
  args,
  env: { PATH: process.env.PATH ?? "/usr/bin:/bin", RUST_LOG: "warn" },
  stderr: "ignore",
});
const client = new Client(
  { name: "hardened-mcp-ts-test", version: "0.1.0" },
  plan.person ? { capabilities: { elicitation: {} } } : undefined,
);
const questions = [];
if (plan.person) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    questions.push(request.params.message);
    return plan.person === "approve"
      ? { action: "accept", content: { approve: true } }
      : { action: "decline" };
  });
}
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  const expected = [...plan.tools].sort();
  if (JSON.stringify(names) !== JSON.stringify(expected)) fail(`tools ${names} != ${expected}`);

  // Compile every schema with the SDK's validator, as a strict client would.
  const validator = new AjvJsonSchemaValidator();
  const nonstandard = [];
  for (const t of tools) {
    validator.getValidator(t.inputSchema);
    formats(t.inputSchema, `${t.name}.inputSchema`, nonstandard);
    if (!t.outputSchema) fail(`${t.name}: no output schema`);
    validator.getValidator(t.outputSchema);
    formats(t.outputSchema, `${t.name}.outputSchema`, nonstandard);
  }
  if (nonstandard.length) fail(`non-standard formats: ${nonstandard.join("; ")}`);

  for (const call of plan.calls) {
    // callTool validates structuredContent against the tool's output schema
    // and throws when it does not match.
    const before = questions.length;
    const r = await client.callTool({ name: call.tool, arguments: call.arguments });
    const kind = r.isError ? r.structuredContent?.error?.kind : "ok";
    if (kind !== call.expect) fail(`${call.tool}: expected ${call.expect}, got ${kind}: ${JSON.stringify(r).slice(0, 400)}`);
    if (call.asked !== undefined && (questions.length > before) !== call.asked) {
      fail(`${call.tool}: asked ${questions.length > before}, expected ${call.asked}`);
    }
  }
  await client.close();
} catch (e) {
  fail(`${e?.name}: ${e?.message}`);
}
clearTimeout(timer);
if (warnings.length) fail(`warnings:\n${warnings.join("\n")}`);
process.stdout.write(`ok: ${label}\n`);
process.exit(0);
