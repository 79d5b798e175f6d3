#!/usr/bin/env python3
"""End to end with the official MCP Python SDK (pinned in requirements.txt).

Drives the example `solver-server` binary over stdio or over streamable HTTP
with bearer tokens: lists the tools and checks each schema, runs a short
simulation to completion with progress notifications, reads its status, log,
result and plot, and sends the hostile classes (bool for a number, numeric
string, NaN-like string, unknown key, traversal handle, oversized values).
Every result, success or error, is validated against the tool's advertised
output schema; no response may contain the canary placed in hostile input; over
HTTP, a missing or wrong token gets 401 and one caller cannot see another's
runs. The tokens must appear neither in responses nor in the server's log.

Both protocol eras: `--era legacy` (the `initialize` handshake, 2025-11-25,
HTTP sessions) and `--era modern` (2026-07-28: `server/discover`, per-request
metadata, no handshake, no HTTP session).

Run by `examples/solver-server/tests/e2e_python_sdk.rs`; by hand:

    target/mcp-venv/bin/python tests/python/test_e2e.py \
        --server target/debug/solver-server --solver target/debug/heat1d --transport stdio --era modern

Exit status 0 when every check holds; each failed check is printed.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import math
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
from jsonschema import Draft202012Validator

import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

CANARY = "CANARYpy8Kd"
TOOLS = {
    "heat_start", "heat_solve", "heat_sweep", "heat_status", "heat_wait", "heat_log",
    "heat_result", "heat_plot", "heat_sweep_plot", "heat_cancel", "heat_delete", "heat_list",
}
RUN_TOOLS = [
    "heat_status", "heat_wait", "heat_log", "heat_result", "heat_plot", "heat_sweep_plot",
    "heat_cancel", "heat_delete",
]
HANDLE = re.compile(r"^heat_[A-Za-z0-9_-]{22,80}$")
UNKNOWN_HANDLE = "heat_" + "A" * 30
# Upper bound of the whole script, against hangs only.
BUDGET_S = 150


class Failed(AssertionError):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        raise Failed(what)


def small_run(cells: int = 64, steps: int = 2000) -> dict[str, Any]:
    dx = 1.0 / cells
    return {"cells": cells, "steps": steps, "length": 1.0, "diffusivity": 1.0, "dt": 0.4 * dx * dx}


class Driver:
    """One client session plus the checks every call goes through."""

    def __init__(self, session: ClientSession, label: str, secrets_: list[str],
                 person: Person | None = None, era: str = "legacy"):
        self.s = session
        self.label = label
        self.secrets = secrets_
        # Answers what the server asks, when the session has a person.
        self.person = person
        self.era = era
        self.tools: dict[str, Any] = {}
        self.validators: dict[str, Draft202012Validator] = {}

    def _scan(self, tool: str, result: Any) -> str:
        wire = result.model_dump_json(by_alias=True)
        check(CANARY not in wire, f"{self.label}: {tool} echoed the canary: {wire[:400]}")
        for s in self.secrets:
            check(s not in wire, f"{self.label}: {tool} response contains a bearer token")
        return wire

    async def list_tools(self) -> None:
        listed = await self.s.list_tools()
        self.tools = {t.name: t for t in listed.tools}
        check(set(self.tools) == TOOLS, f"{self.label}: tools listed: {sorted(self.tools)}")
        for name, tool in self.tools.items():
            schema = tool.input_schema
            Draft202012Validator.check_schema(schema)
            check(schema.get("type") == "object", f"{name}: input root type")
            check(schema.get("additionalProperties") is False, f"{name}: additionalProperties")
            for key, prop in schema.get("properties", {}).items():
                kind = prop.get("type")
                if kind in ("integer", "number"):
                    check(("minimum" in prop or "exclusiveMinimum" in prop) and "maximum" in prop,
                          f"{name}.{key} unbounded: {prop}")
                elif kind == "string":
                    check("enum" in prop or "maxLength" in prop, f"{name}.{key} unbounded string: {prop}")
                else:
                    raise Failed(f"{name}.{key}: unexpected type {kind}")
            out = tool.output_schema
            check(out is not None and out.get("type") == "object", f"{name}: output schema")
            Draft202012Validator.check_schema(out)
            self.validators[name] = Draft202012Validator(out)
            check(bool(tool.description), f"{name}: no description")
        start = self.tools["heat_start"].input_schema
        check(start["properties"]["cells"]["maximum"] == 200_000, "heat_start.cells maximum")
        check(start["properties"]["dt"]["exclusiveMinimum"] == 0, "heat_start.dt exclusiveMinimum")
        check("m^2/s" in json.dumps(start["properties"]["diffusivity"]), "units visible in the schema")
        check(set(start["required"]) == {"cells", "steps", "length", "diffusivity", "dt"}, "heat_start.required")

    async def call(self, tool: str, args: Any, **kw: Any) -> Any:
        if self.person is not None:
            r = await self.person.call(self.s, self.era, tool, args, **kw)
        else:
            r = await self.s.call_tool(tool, args, **kw)
        self._scan(tool, r)
        return r

    async def ok(self, tool: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
        r = await self.call(tool, args, **kw)
        check(not r.is_error, f"{self.label}: {tool} failed: {r.model_dump_json()[:400]}")
        errors = [e.message for e in self.validators[tool].iter_errors(r.structured_content)]
        check(not errors, f"{self.label}: {tool} result violates its output schema: {errors}")
        return r.structured_content["data"]

    async def err(self, tool: str, args: Any) -> tuple[str, str]:
        r = await self.call(tool, args)
        check(r.is_error is True, f"{self.label}: {tool} accepted {str(args)[:200]}")
        e = (r.structured_content or {}).get("error")
        check(isinstance(e, dict), f"{self.label}: {tool}: no structured error")
        kind, message = e.get("kind"), e.get("message")
        check(isinstance(kind, str) and isinstance(message, str), f"{tool}: error fields")
        texts = [c.text for c in r.content if getattr(c, "type", None) == "text"]
        check(texts == [message], f"{self.label}: {tool}: text content differs from error.message")
        errors = [e.message for e in self.validators[tool].iter_errors(r.structured_content)]
        check(not errors, f"{self.label}: {tool} error result violates its output schema: {errors}")
        return kind, message


async def simulate(d: Driver) -> str:
    """A run from start to delete; returns nothing but raises on any failed check."""
    started = await d.ok("heat_start", small_run(cells=400, steps=200_000))
    handle = started["run_handle"]
    check(bool(HANDLE.match(handle)), f"handle shape: {handle!r}")
    check(abs(started["courant"] - 0.4) < 1e-12, "courant number")

    progress: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    waited = await d.ok("heat_wait", {"run": handle, "seconds": 60}, progress_callback=on_progress)
    check(waited["state"] == "succeeded", f"wait: {waited}")
    # The run lasts long enough (seconds in a debug build) for heat_wait to see it move.
    check(len(progress) >= 1, "no progress notification while waiting")
    check(all(t == 200_000 for _, t in progress), f"progress totals: {progress[:3]}")
    check([p for p, _ in progress] == sorted(p for p, _ in progress), "progress is monotonic")
    print(f"{d.label}: {len(progress)} progress notifications")

    status = await d.ok("heat_status", {"run": handle})
    check(status["state"] == "succeeded" and status["exit_code"] == 0, f"status: {status}")

    result = await d.ok("heat_result", {"run": handle, "max_points": 401})
    check(result["cells"] == 400 and result["steps"] == 200_000, "result shape")
    t = result["t_final"]
    worst = max(abs(p["u"] - math.exp(-math.pi ** 2 * t) * math.sin(math.pi * p["x"])) for p in result["profile"])
    check(worst < 1e-4, f"error against the exact solution: {worst}")
    check(abs(result["max_error"] - worst) < 1e-9, "reported max_error matches ours")
    small = await d.ok("heat_result", {"run": handle, "max_points": 10})
    check(small["decimated"] is True and len(small["profile"]) <= 10, "decimation")

    log = await d.ok("heat_log", {"run": handle, "stream": "stdout", "lines": 3})
    check("untrusted" in log["log"]["notice"].lower(), "untrusted notice on the log")
    check(len(log["log"]["data"]) <= 3, "lines honoured")

    plot = await d.call("heat_plot", {"run": handle})
    images = [c for c in plot.content if getattr(c, "type", None) == "image"]
    check(len(images) == 1 and images[0].mime_type == "image/png", "plot image content")
    check(base64.b64decode(images[0].data)[:8] == b"\x89PNG\r\n\x1a\n", "PNG signature")

    listed = await d.ok("heat_list", {})
    check({"run_handle": handle, "state": "succeeded"} in listed["runs"], "own run listed, with its state")
    return handle


async def hostile(d: Driver) -> None:
    """The bad classes: each refused with a structured error echoing nothing."""
    def w(k: str, v: Any) -> dict[str, Any]:
        a = small_run(steps=100)
        a[k] = v
        return a

    cases: list[tuple[str, str, Any]] = [
        ("bool for number", "heat_start", w("cells", True)),
        ("bool for float", "heat_start", w("dt", False)),
        ("numeric string", "heat_start", w("cells", "64")),
        ("numeric string canary", "heat_start", w("steps", f"1{CANARY}")),
        ("NaN-like string", "heat_start", w("dt", "NaN")),
        ("Infinity string", "heat_start", w("length", "Infinity")),
        ("null", "heat_start", w("steps", None)),
        ("unknown key", "heat_start", w(CANARY, 1)),
        ("unknown key with value", "heat_start", w(f"path_{CANARY}", f"../../{CANARY}")),
        ("bad enum", "heat_start", w("boundary", CANARY)),
        ("oversized mesh", "heat_start", w("cells", 10 ** 12)),
        ("oversized steps", "heat_start", w("steps", 10 ** 30)),
        ("cost above ceiling", "heat_start",
         {"cells": 200_000, "steps": 10_000_000, "length": 1000.0, "diffusivity": 1e-9, "dt": 1e-3}),
        ("unstable step", "heat_start", w("dt", 1.0)),
        ("float for integer", "heat_start", w("cells", 64.5)),
        ("sweep start >= stop", "heat_sweep",
         {"cells": 32, "steps": 10, "length": 1.0, "dt": 1e-5,
          "diffusivity_start": 1.0, "diffusivity_stop": 0.5, "points": 3}),
        ("oversized tail", "heat_log", {"run": UNKNOWN_HANDLE, "lines": 10 ** 9}),
        ("oversized max_points", "heat_result", {"run": UNKNOWN_HANDLE, "max_points": 10 ** 6}),
        ("oversized handle", "heat_status", {"run": "heat_" + "A" * 100_000}),
    ]
    for cls, tool, args in cases:
        await d.err(tool, args)

    traversal = [
        "../../etc/passwd", "/etc/shadow", f"heat_../../{CANARY}", "heat_" + "../" * 10 + "etc",
        f"heat_{CANARY}%2e%2e%2f{'A' * 20}", "", "heat_\u0000" + "A" * 22,
    ]
    for tool in RUN_TOOLS:
        kinds = set()
        for h in traversal:
            kind, message = await d.err(tool, {"run": h})
            check("etc" not in message and "/" not in message.replace("n/a", ""), f"{tool}: {message}")
            kinds.add(kind)
        check(len(kinds) == 1, f"{tool}: traversal handles give different error kinds: {kinds}")
        unknown = await d.err(tool, {"run": UNKNOWN_HANDLE})
        check(unknown[0] == "unknown_run", f"{tool}: unknown handle kind {unknown}")
        await d.err(tool, {"run": 42})
    # Still serving.
    await d.ok("heat_list", {})


async def start(session: ClientSession, era: str) -> None:
    """Opens the session in `era`: `legacy` is the `initialize` handshake
    (2025-11-25); `modern` is 2026-07-28 (`server/discover`, then every
    request carries its version and client info, no handshake, no HTTP
    session)."""
    if era == "modern":
        found = await session.discover()
        check("2026-07-28" in found.supported_versions, f"versions: {found.supported_versions}")
    else:
        await session.initialize()


async def with_budget(label: str, f: Callable[[], Awaitable[None]]) -> None:
    with anyio.fail_after(BUDGET_S):
        await f()
    print(f"ok: {label}")


# ---- stdio -------------------------------------------------------------------


async def run_stdio(server: str, solver: str, era: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        params = StdioServerParameters(
            command=server,
            args=["serve", "--run-root", str(Path(tmp) / "runs"), "--solver", solver],
            env={"RUST_LOG": "warn"},
        )
        with open(Path(tmp) / "stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await start(session, era)
                    d = Driver(session, f"stdio {era}", [])
                    await d.list_tools()
                    handle = await simulate(d)
                    await hostile(d)
                    deleted = await d.ok("heat_delete", {"run": handle})
                    check(deleted["outcome"] == "deleted", "delete")
                    gone = await d.err("heat_status", {"run": handle})
                    never = await d.err("heat_status", {"run": UNKNOWN_HANDLE})
                    check(gone == never, "a deleted run answers like one that never existed")


# ---- approvals -----------------------------------------------------------------


class Person:
    """The person behind the client: answers the server's questions (an
    elicitation in a 2025-11-25 session, an input-required result in the
    2026-07-28 era), approving or not as told."""

    def __init__(self) -> None:
        self.approve = True
        self.asked: list[str] = []

    def _answer(self, message: str) -> types.ElicitResult:
        self.asked.append(message)
        if self.approve:
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        return self._answer(params.message)

    async def call(self, session: ClientSession, era: str, tool: str, args: Any, **kw: Any) -> Any:
        """Calls `tool`, answering what the server asks on the way (in a
        2025-11-25 session the SDK calls back this person itself)."""
        if era == "legacy":
            return await session.call_tool(tool, args, **kw)
        r = await session.call_tool(tool, args, allow_input_required=True, **kw)
        while isinstance(r, types.InputRequiredResult):
            answers = {k: self._answer(q.params.message) for k, q in (r.input_requests or {}).items()}
            r = await session.call_tool(tool, args, input_responses=answers, request_state=r.request_state,
                                        allow_input_required=True, **kw)
        return r


def costly_run() -> dict[str, Any]:
    """Above the server's approval threshold (1e8 cell-steps): 2000 x 60000."""
    return small_run(cells=2000, steps=60_000)


async def run_approvals(server: str, solver: str, era: str) -> None:
    """A costly run asks the person and runs when approved, never when
    declined; a small one does not ask; deleting asks (--confirm-delete)."""
    with tempfile.TemporaryDirectory() as tmp:
        params = StdioServerParameters(
            command=server,
            args=["serve", "--run-root", str(Path(tmp) / "runs"), "--solver", solver, "--confirm-delete"],
            env={"RUST_LOG": "warn"},
        )
        person = Person()
        with open(Path(tmp) / "stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, elicitation_callback=person) as session:
                    await start(session, era)
                    d = Driver(session, f"approvals {era}", [], person, era)
                    await d.list_tools()
                    r = await d.call("heat_start", costly_run())
                    check(r.is_error is not True, f"approved run failed: {r.model_dump_json()[:400]}")
                    check(len(person.asked) == 1, f"asked {person.asked}")
                    check("cell-steps" in person.asked[0] and "120000000" in person.asked[0],
                          f"the question shows the estimate and its units: {person.asked[0]}")
                    handle = r.structured_content["data"]["run_handle"]
                    r = await d.call("heat_start", small_run(steps=10))
                    check(r.is_error is not True and len(person.asked) == 1, "a small run is not asked about")
                    person.approve = False
                    r = await d.call("heat_start", costly_run())
                    check(r.is_error is True and r.structured_content["error"]["kind"] == "not_approved",
                          f"a declined run: {r.model_dump_json()[:400]}")
                    listed = await d.ok("heat_list", {})
                    check(len(listed["runs"]) == 2, f"the declined run never started: {listed}")
                    person.approve = True
                    asked = len(person.asked)
                    r = await d.call("heat_delete", {"run": handle})
                    check(r.is_error is not True and len(person.asked) == asked + 1, "deleting asks")
                    check("Delete" in person.asked[-1], f"the delete question: {person.asked[-1]}")


# ---- HTTP --------------------------------------------------------------------


class HttpServer:
    """`solver-server serve --http 127.0.0.1:0` with a tokens file; stopped on exit."""

    def __init__(self, server: str, solver: str, tmp: Path, tokens: dict[str, str], *,
                 root: Path | None = None, extra: tuple[str, ...] = (), log_dir: Path | None = None,
                 rust_log: str = "debug", wait: bool = True):
        """`root` defaults to `tmp/runs`, the log to `tmp`; several servers may
        share `tmp` (one tokens file) with a `log_dir` each. `wait=False`
        starts the process only: call `wait_ready` before using `url`."""
        tokens_file = tmp / "tokens"
        if not tokens_file.exists():
            tokens_file.write_text("".join(f"{c}={t}\n" for c, t in tokens.items()))
            tokens_file.chmod(0o600)
        self.stderr_path = (log_dir or tmp) / "server-stderr.log"
        self._stderr = open(self.stderr_path, "w+b")
        self.url = ""
        self.proc = subprocess.Popen(
            [server, "serve", "--http", "127.0.0.1:0", "--tokens-file", str(tokens_file),
             "--run-root", str(root or tmp / "runs"), "--solver", solver, *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RUST_LOG": rust_log},
        )
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        self.url = self._wait_for_endpoint()

    def _wait_for_endpoint(self) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = self.stderr_path.read_text(errors="replace")
            m = re.search(r"MCP endpoint (http://127\.0\.0\.1:\d+/mcp)", text)
            if m:
                return m.group(1)
            if self.proc.poll() is not None:
                raise Failed(f"server exited at start: {text[-2000:]}")
            time.sleep(0.05)
        raise Failed("server printed no endpoint within 30 s")

    def log(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()


async def session_for(
    stack: AsyncExitStack, url: str, token: str, label: str, toks: list[str], era: str,
    person: Person | None = None,
) -> Driver:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    await stack.enter_async_context(client)
    read, write = await stack.enter_async_context(streamable_http_client(url, http_client=client))
    session = await stack.enter_async_context(ClientSession(read, write, elicitation_callback=person))
    await start(session, era)
    d = Driver(session, f"{label} {era}", toks, person, era)
    await d.list_tools()
    return d


async def unauthenticated(url: str, toks: list[str]) -> None:
    init = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": CANARY, "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(timeout=10) as c:
        bodies = []
        for auth in (None, f"Bearer {CANARY}", "Bearer", f"Basic {CANARY}", f"Bearer {toks[0]}x"):
            h = dict(headers)
            if auth is not None:
                h["Authorization"] = auth
            r = await c.post(url, json=init, headers=h)
            check(r.status_code == 401, f"auth {auth!r}: status {r.status_code}")
            check(CANARY not in r.text and all(t not in r.text for t in toks), "401 body echoes")
            bodies.append(r.text)
        check(len(set(bodies)) == 1, "401 bodies differ between missing and wrong tokens")
        # Right token, wrong Host: refused.
        h = dict(headers, Authorization=f"Bearer {toks[0]}", Host="evil.example")
        r = await c.post(url, json=init, headers=h)
        check(r.status_code in (400, 403, 421), f"wrong Host: status {r.status_code}")
        # Oversized body: refused before it is parsed.
        big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"A" * (16 << 20) + b'"}}'
        h = dict(headers, Authorization=f"Bearer {toks[0]}")
        try:
            r = await c.post(url, content=big, headers=h)
            check(r.status_code == 413, f"oversized body: status {r.status_code}")
        except httpx2.TransportError:
            pass  # The server may close the connection mid-upload; also a refusal.


async def run_http(server: str, solver: str, era: str) -> None:
    tok_a, tok_b = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    toks = [tok_a, tok_b]
    with tempfile.TemporaryDirectory() as tmp_s:
        srv = HttpServer(server, solver, Path(tmp_s), {"alice": tok_a, "bob": tok_b})
        try:
            await unauthenticated(srv.url, toks)
            async with AsyncExitStack() as stack:
                a = await session_for(stack, srv.url, tok_a, "http alice", toks, era)
                b = await session_for(stack, srv.url, tok_b, "http bob", toks, era)
                handle = await simulate(a)
                await hostile(a)
                # Bob sees alice's run exactly as a run that never existed.
                for tool in RUN_TOOLS:
                    foreign = await b.err(tool, {"run": handle})
                    never = await b.err(tool, {"run": UNKNOWN_HANDLE})
                    check(foreign == never, f"{tool}: a foreign run is distinguishable: {foreign} vs {never}")
                check(all(r["run_handle"] != handle for r in (await b.ok("heat_list", {}))["runs"]),
                      "bob lists alice's run")
                # ...and alice's run survived bob's attempts.
                st = await a.ok("heat_status", {"run": handle})
                check(st["state"] == "succeeded", "alice's run after bob's delete attempt")
                await a.ok("heat_delete", {"run": handle})
        finally:
            srv.stop()
        log = srv.log()
        check("MCP endpoint" in log, "server log captured")
        for t in toks:
            check(t not in log, "a bearer token appears in the server log")


class SdkWarnings(logging.Handler):
    """Collects the SDK's own warnings: a compliant server causes none."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True)
    ap.add_argument("--solver", required=True)
    ap.add_argument("--transport", choices=["stdio", "http", "all"], default="all")
    ap.add_argument("--era", choices=["legacy", "modern"], default="legacy")
    a = ap.parse_args()
    a.server, a.solver = os.path.abspath(a.server), os.path.abspath(a.solver)

    async def go() -> None:
        if a.transport in ("stdio", "all"):
            await with_budget(f"stdio {a.era}", lambda: run_stdio(a.server, a.solver, a.era))
            await with_budget(f"approvals {a.era}", lambda: run_approvals(a.server, a.solver, a.era))
        if a.transport in ("http", "all"):
            await with_budget(f"http {a.era}", lambda: run_http(a.server, a.solver, a.era))

    warnings = SdkWarnings()
    logging.getLogger("mcp").addHandler(warnings)
    try:
        anyio.run(go)
        check(not warnings.seen, f"the MCP SDK logged warnings: {warnings.seen[:5]}")
    except Failed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
