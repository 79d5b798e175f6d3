#!/usr/bin/env python3
"""The quickstart's server (`beam-server`, docs/quickstart.md) driven by the
official MCP Python SDK over stdio, as a desktop client would start it.

Checks what a newcomer's first session sees: `initialize` names the server
and carries its instructions; both tools are listed with bounded, closed
input schemas and output schemas; each tool answers a real call with the
textbook value; an out-of-range value, an unknown key and an unknown tool
name are each refused with a fixed, structured error that echoes nothing
the client sent. The server logs at trace level the whole time (on
stderr): every stdout line must still be a JSON-RPC message.

Both protocol eras: `--era legacy` (the `initialize` handshake, 2025-11-25)
and `--era modern` (2026-07-28: `server/discover`, then per-request
metadata, no handshake).

Run by `examples/quickstart/tests/clients.rs`; by hand:

    target/mcp-venv/bin/python tests/python/test_quickstart.py --server target/debug/beam-server --era modern

Prints `ok: quickstart <era>` when every check holds.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import anyio
from jsonschema import Draft202012Validator

from mcp import ClientSession, StdioServerParameters, stdio_client

CANARY = "CANARYb3am"
BUDGET_S = 60


class Failed(AssertionError):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        raise Failed(what)


async def session_checks(session: ClientSession, era: str) -> None:
    if era == "modern":
        # 2026-07-28: no handshake; `server/discover`, then every request
        # carries its protocol version and client info itself.
        found = await session.discover()
        check("2026-07-28" in found.supported_versions, f"versions: {found.supported_versions}")
        check("point load" in (found.instructions or ""), f"instructions: {found.instructions}")
    else:
        init = await session.initialize()
        check(init.server_info.name == "beam", f"server name: {init.server_info.name}")
        check("point load" in (init.instructions or ""), f"instructions: {init.instructions}")

    tools = {t.name: t for t in (await session.list_tools()).tools}
    check(set(tools) == {"beam_deflection", "beam_stress"}, f"tools: {sorted(tools)}")
    validators = {}
    for name, tool in tools.items():
        schema = tool.input_schema
        Draft202012Validator.check_schema(schema)
        check(schema.get("additionalProperties") is False, f"{name}: closed")
        for key, prop in schema["properties"].items():
            check("enum" in prop or ("minimum" in prop and "maximum" in prop), f"{name}.{key}: {prop}")
        check("Estimated cost per call: at most 1 evaluations" in (tool.description or ""), f"{name}: {tool.description}")
        Draft202012Validator.check_schema(tool.output_schema)
        validators[name] = Draft202012Validator(tool.output_schema)
    support = tools["beam_deflection"].input_schema["properties"]["support"]
    check(support["enum"] == ["simply_supported", "cantilever"], f"support: {support}")

    async def call(tool: str, args: dict):
        r = await session.call_tool(tool, args)
        wire = r.model_dump_json(by_alias=True)
        check(CANARY not in wire, f"{tool} echoed the canary: {wire[:300]}")
        if tool in validators:
            errors = [e.message for e in validators[tool].iter_errors(r.structured_content)]
            check(not errors, f"{tool}: result off its schema: {errors}")
        return r

    # A cantilever 2 m long, 1 kN at the tip, steel, I = 1000 cm^4:
    # P L^3 / (3 E I) = 1000 * 8 / (3 * 200e9 * 1e-5) m = 1.3333 mm.
    r = await call("beam_deflection", {"support": "cantilever", "length_m": 2, "load_n": 1000,
                                       "modulus_gpa": 200, "inertia_cm4": 1000})
    check(not r.is_error, f"deflection failed: {r}")
    check(abs(r.structured_content["data"]["deflection_mm"] - 4 / 3) < 1e-9, f"{r.structured_content}")
    # Simply supported, 2 m, 1 kN, 50 x 100 mm: (P L / 4) / (b h^2 / 6) = 6 MPa.
    r = await call("beam_stress", {"length_m": 2, "load_n": 1000, "width_mm": 50, "height_mm": 100})
    check(not r.is_error, f"stress failed: {r}")
    check(abs(r.structured_content["data"]["stress_mpa"] - 6.0) < 1e-9, f"{r.structured_content}")

    refused = [
        ("beam_stress", {"length_m": 2, "load_n": -5, "width_mm": 50, "height_mm": 100}, "invalid_arguments"),
        ("beam_stress", {"length_m": 2, "load_n": 5, "width_mm": 50, "height_mm": 100, CANARY: 1}, "invalid_arguments"),
        ("beam_deflection", {"support": CANARY, "length_m": 2, "load_n": 1, "modulus_gpa": 200,
                             "inertia_cm4": 1}, "invalid_arguments"),
        (f"beam_{CANARY}", {"length_m": 2}, "unknown_tool"),
    ]
    for tool, args, kind in refused:
        r = await call(tool, args)
        check(r.is_error, f"{tool} {args}: accepted")
        err = (r.structured_content or {}).get("error", {})
        check(err.get("kind") == kind, f"{tool}: kind {err}")
    # The unknown-argument refusal names the declared arguments (server text).
    r = await call("beam_stress", {"length_m": 2, "load_n": 5, "width_mm": 50, "height_mm": 100, CANARY: 1})
    check("width_mm" in r.content[0].text, f"declared names listed: {r.content[0].text}")


async def run(server: str, era: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        params = StdioServerParameters(command=server, args=[],
                                       env={"RUST_LOG": "trace", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        log = Path(tmp) / "stderr.log"
        with open(log, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session_checks(session, era)
        text = log.read_text(errors="replace")
        check("TRACE" in text or "DEBUG" in text, "the server logged at trace level on stderr")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--era", choices=["legacy", "modern"], default="legacy")
    a = p.parse_args()

    async def go() -> None:
        with anyio.fail_after(BUDGET_S):
            await run(os.path.abspath(a.server), a.era)

    try:
        anyio.run(go)
    except Failed as e:
        print(f"FAILED: {e}")
        return 1
    print(f"ok: quickstart {a.era}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
