// The official MCP TypeScript SDK client (pinned in package.json) driving
// one tool of a server over stdio or streamable HTTP as an MCP task
// (2025-11-25 protocol):
// `client.experimental.tasks.callToolStream` creates the task, polls
// `tasks/get`, and reads `tasks/result`, validating the result against the
// tool's output schema. Then a second task is cancelled with `tasks/cancel`
// and `tasks/list` must show both.
//
//   node ts_task.mjs <label> '<plan JSON>' <server> [args...]
//   node ts_task.mjs <label> '<plan JSON>' http://127.0.0.1:<port>/mcp [<bearer token>]
//
// <plan JSON>: {"tool", "arguments", "long_arguments"}. Prints one JSON
// line `{"ok": true, "result": <structuredContent>, "statuses": [...]}`,
// then `ok: <label>`, and exits 0 when everything holds; bounded by its
// own deadline.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const DEADLINE_MS = 120_000;

function fail(what) {
  process.stdout.write(`FAILED: ${what}\n`);
  process.exit(1);
}

const timer = setTimeout(() => fail(`no result within ${DEADLINE_MS} ms`), DEADLINE_MS);
const [label, spec, command, ...args] = process.argv.slice(2);
if (!label || !spec || !command) fail("usage: ts_task.mjs <label> '<plan JSON>' <server> [args...]");
const plan = JSON.parse(spec);

const overHttp = command.startsWith("http://");
const headers = overHttp && args[0] ? { Authorization: `Bearer ${args[0]}` } : {};
const transport = overHttp
  ? new StreamableHTTPClientTransport(new URL(command), { requestInit: { headers } })
  : new StdioClientTransport({ command, args, stderr: "ignore" });
const client = new Client({ name: "ts-task-e2e", version: "1.0.0" }, { capabilities: {} });
await client.connect(transport);

const caps = client.getServerCapabilities();
if (!caps?.tasks?.requests?.tools?.call) fail(`server declares no task support: ${JSON.stringify(caps)}`);
const { tools } = await client.listTools();
const tool = tools.find((t) => t.name === plan.tool);
if (tool?.execution?.taskSupport !== "optional") fail(`${plan.tool} is not a task tool: ${JSON.stringify(tool)}`);

// The task, to its result.
const statuses = [];
let taskId;
let result;
const stream = client.experimental.tasks.callToolStream({ name: plan.tool, arguments: plan.arguments });
for await (const message of stream) {
  if (message.type === "taskCreated") taskId = message.task.taskId;
  else if (message.type === "taskStatus") statuses.push(message.task.status);
  else if (message.type === "result") result = message.result;
  else if (message.type === "error") fail(`task error: ${message.error}`);
}
if (!taskId) fail("no task was created");
if (!result?.structuredContent) fail(`no structured result: ${JSON.stringify(result)}`);
const got = await client.experimental.tasks.getTask(taskId);
if (got.status !== "completed") fail(`tasks/get after the result: ${JSON.stringify(got)}`);

// A second task, cancelled.
const long = client.experimental.tasks.callToolStream({ name: plan.tool, arguments: plan.long_arguments });
let longId;
for await (const message of long) {
  if (message.type === "taskCreated") {
    longId = message.task.taskId;
    const cancelled = await client.experimental.tasks.cancelTask(longId);
    if (cancelled.taskId !== longId) fail(`tasks/cancel answered ${JSON.stringify(cancelled)}`);
  } else if (message.type === "result") fail("the cancelled task gave a result");
  else if (message.type === "error") break;
}
const listed = await client.experimental.tasks.listTasks();
const ids = listed.tasks.map((t) => t.taskId);
if (!ids.includes(taskId) || !ids.includes(longId)) fail(`tasks/list: ${JSON.stringify(listed)}`);
const longState = listed.tasks.find((t) => t.taskId === longId).status;
if (longState !== "cancelled") fail(`the cancelled task is ${longState}`);

// An unknown task id is refused.
let refused = false;
try {
  await client.experimental.tasks.getTask("run_AAAAAAAAAAAAAAAAAAAAAA");
} catch {
  refused = true;
}
if (!refused) fail("an unknown task id was answered");

await client.close();
clearTimeout(timer);
process.stdout.write(`${JSON.stringify({ ok: true, result: result.structuredContent, statuses })}\n`);
process.stdout.write(`ok: ${label}\n`);
process.exit(0);
