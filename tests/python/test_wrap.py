#!/usr/bin/env python3
"""The guide's wrap-a-solver server (`poisson-server`, docs/guide.md,
"Wrap an external solver") driven by the official MCP Python SDK over
stdio: start a run of the Python script solver, follow it (status, wait
with progress notifications), read its typed result and its log, cancel a
long run, and refuse hostile calls with fixed errors.

Run by `examples/wrap-solver/tests/clients.rs`; by hand:

    target/mcp-venv/bin/python tests/python/test_wrap.py --server target/debug/poisson-server

Prints `ok: wrap` when every check holds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile

import anyio
from jsonschema import Draft202012Validator

from mcp import ClientSession, StdioServerParameters, stdio_client

CANARY = "CANARYp01s"
BUDGET_S = 100


class Failed(AssertionError):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        raise Failed(what)


async def main(server: str) -> None:
    with anyio.fail_after(BUDGET_S):
        await session(server)


async def session(server: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        params = StdioServerParameters(command=server, args=["--run-root", f"{tmp}/runs"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                tools = {t.name: t for t in (await s.list_tools()).tools}
                expected = {"poisson_start", "poisson_solve", "poisson_status", "poisson_wait",
                            "poisson_log", "poisson_result", "poisson_list", "poisson_cancel",
                            "poisson_delete"}
                check(set(tools) == expected, f"tools: {sorted(tools)}")

                async def ok(tool: str, args: dict, **kw) -> dict:
                    r = await s.call_tool(tool, args, **kw)
                    check(not r.is_error, f"{tool}: {r}")
                    Draft202012Validator(tools[tool].output_schema).validate(r.structured_content)
                    return r.structured_content["data"]

                async def refused(tool: str, args: dict) -> dict:
                    r = await s.call_tool(tool, args)
                    check(r.is_error, f"{tool} accepted {args}")
                    text = str(r.model_dump())
                    check(CANARY not in text, f"{tool} echoed the caller: {text}")
                    return r.structured_content["error"]

                started = await ok("poisson_start", {"n": 24, "tolerance": 1e-10, "max_iterations": 20000})
                run = started["run_handle"]
                seen = []

                async def on_progress(done: float, total: float | None, message: str | None) -> None:
                    seen.append((done, total, message))

                done = await ok("poisson_wait", {"run": run, "seconds": 60}, progress_callback=on_progress)
                check(done["state"] == "succeeded", f"wait: {done}")
                check(all(m == "sweeps" for (_, _, m) in seen), f"progress unit: {seen}")
                status = await ok("poisson_status", {"run": run})
                check(status["state"] == "succeeded" and status["exit_code"] == 0, f"status: {status}")
                result = (await ok("poisson_result", {"run": run}))["result"]
                check(result["converged"] and result["max_error"] < 1e-2, f"result: {result}")
                log = await ok("poisson_log", {"run": run, "from_line": 0, "lines": 5})
                check("untrusted text" in log["log"]["notice"], f"log framing: {log['log']}")
                check(log["log"]["data"][0].startswith("argv0=/sandbox/bin/poisson executable=/usr/bin/python3"),
                      f"what the interpreter sees: {log['log']['data']}")
                listed = await ok("poisson_list", {})
                check({"run_handle": run, "state": "succeeded"} in listed["runs"], f"list: {listed}")

                long = (await ok("poisson_start", {"n": 2000, "tolerance": 1e-14, "max_iterations": 100000}))["run_handle"]
                check((await ok("poisson_cancel", {"run": long}))["outcome"] == "cancelled", "cancel")
                st = await ok("poisson_wait", {"run": long, "seconds": 30})
                check(st["state"] == "cancelled", f"after cancel: {st}")
                no_result = await refused("poisson_result", {"run": long})
                check(no_result["kind"] == "rejected", f"result of a cancelled run: {no_result}")

                for name, tool, args, kind in [
                    ("NaN tolerance", "poisson_start", {"n": 8, "tolerance": float("nan"), "max_iterations": 1}, None),
                    ("cost over the ceiling", "poisson_start", {"n": 2000, "tolerance": 1e-6, "max_iterations": 1_000_000}, "cost_exceeded"),
                    ("unknown key", "poisson_start", {"n": 8, "tolerance": 1e-6, "max_iterations": 1, CANARY: 1}, "invalid_arguments"),
                    ("foreign handle", "poisson_status", {"run": "run_" + CANARY + "AAAAAAAAAAAA"}, None),
                    ("path in a handle", "poisson_log", {"run": "../../etc/passwd"}, "invalid_arguments"),
                ]:
                    e = await refused(tool, args)
                    check(kind is None or e["kind"] == kind, f"{name}: {e}")
                gone = await ok("poisson_delete", {"run": run})
                check(gone["outcome"] == "deleted", f"delete: {gone}")
                after = await refused("poisson_status", {"run": run})
                check(after["kind"] == "unknown_run", f"deleted run: {after}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    a = ap.parse_args()
    try:
        anyio.run(main, a.server)
    except Failed as e:
        print(f"FAILED: {e}")
        sys.exit(1)
    print("ok: wrap")
