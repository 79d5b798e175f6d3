#!/usr/bin/env python3
"""End to end with the official MCP Python SDK against `spice-server` (stdio).

Lists the tools and checks every schema is bounded and closed; runs the
three templates through the real ngspice and checks each against its
analytic answer (RC cutoff 1/(2*pi*R*C), series-RLC resonance
1/(2*pi*sqrt(L*C)), RC rise time R*C*ln 9, the clipper's diode equation);
fetches the plot; sends hostile classes (bool and strings for numbers, NaN,
out-of-bounds values, unknown keys, netlist directives through the template
and a title, traversal handles), each refused with a structured error that
echoes nothing. Every result, success or error, is validated against the
tool's advertised output schema.

Run by `examples/spice-server/tests/e2e_python_sdk.rs`; by hand:

    target/mcp-venv/bin/python tests/python/test_spice_e2e.py --server target/debug/spice-server

Prints `ok: stdio` when every check holds.
"""

from __future__ import annotations

import argparse
import base64
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from jsonschema import Draft202012Validator

from mcp import ClientSession, StdioServerParameters, stdio_client

CANARY = "CANARYsp1ce"
TOOLS = {"spice_ac", "spice_tran", "spice_op", "spice_plot", "spice_status", "spice_log",
         "spice_list", "spice_delete"}
BUDGET_S = 150


class Failed(AssertionError):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        raise Failed(what)


class Driver:
    def __init__(self, session: ClientSession):
        self.s = session
        self.validators: dict[str, Draft202012Validator] = {}

    async def list_tools(self) -> None:
        tools = {t.name: t for t in (await self.s.list_tools()).tools}
        check(set(tools) == TOOLS, f"tools listed: {sorted(tools)}")
        for name, tool in tools.items():
            schema = tool.input_schema
            Draft202012Validator.check_schema(schema)
            check(schema.get("additionalProperties") is False, f"{name}: additionalProperties")
            for key, prop in schema.get("properties", {}).items():
                kind = prop.get("type")
                if kind in ("integer", "number"):
                    check("minimum" in prop and "maximum" in prop, f"{name}.{key} unbounded: {prop}")
                else:
                    check(kind == "string" and ("enum" in prop or "pattern" in prop), f"{name}.{key}: {prop}")
            Draft202012Validator.check_schema(tool.output_schema)
            self.validators[name] = Draft202012Validator(tool.output_schema)
        ac = tools["spice_ac"].input_schema["properties"]
        check(ac["template"]["enum"] == ["rc_lowpass", "series_rlc", "diode_clipper"], "template enum")
        check(ac["resistance"].get("x-units") == "ohm", "units in the schema")

    async def call(self, tool: str, args: Any) -> Any:
        r = await self.s.call_tool(tool, args)
        wire = r.model_dump_json(by_alias=True)
        check(CANARY not in wire, f"{tool} echoed the canary: {wire[:300]}")
        check("/etc/passwd" not in wire, f"{tool} echoed a path: {wire[:300]}")
        errors = [e.message for e in self.validators[tool].iter_errors(r.structured_content)]
        check(not errors, f"{tool} result violates its output schema: {errors}")
        return r

    async def ok(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        r = await self.call(tool, args)
        check(not r.is_error, f"{tool} failed: {r.model_dump_json()[:300]}")
        return r.structured_content["data"]

    async def err(self, tool: str, args: Any) -> str:
        r = await self.call(tool, args)
        check(r.is_error is True, f"{tool} accepted {str(args)[:200]}")
        return r.structured_content["error"]["kind"]


def within(got: float, want: float, ratio: float, what: str) -> None:
    check(got / want < ratio and want / got < ratio, f"{what}: {got} vs {want}")


def clipper(amplitude: float, r: float) -> float:
    vt = 1.380649e-23 * 300.15 / 1.602176634e-19
    lo, hi = min(amplitude, 0.0) - 1.0, max(amplitude, 0.0) + 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if (amplitude - mid) / r - 1e-14 * (math.exp(mid / vt) - 1.0) > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


async def simulations(d: Driver) -> None:
    r, c = 1e3, 100e-9
    ac = await d.ok("spice_ac", {"template": "rc_lowpass", "resistance": r, "capacitance": c,
                                 "f_start": 10.0, "f_stop": 1e6, "points_per_decade": 50})
    within(ac["figures"]["f_3db_high"], 1 / (2 * math.pi * r * c), 10 ** (1 / 50), "RC cutoff")
    check("untrusted" in ac["log"]["notice"].lower(), "the log is framed as untrusted")

    l, c2 = 1e-3, 1e-6
    rlc = await d.ok("spice_ac", {"template": "series_rlc", "resistance": 10.0, "inductance": l,
                                  "capacitance": c2, "f_start": 100.0, "f_stop": 1e5, "points_per_decade": 200})
    within(rlc["figures"]["peak_frequency"], 1 / (2 * math.pi * math.sqrt(l * c2)), 10 ** (1 / 200), "RLC resonance")

    tran = await d.ok("spice_tran", {"template": "rc_lowpass", "resistance": r, "capacitance": c,
                                     "t_step": 1e-6, "t_stop": 1e-3})
    within(tran["figures"]["rise_time"], r * c * math.log(9), 1.01, "RC rise time")

    op = await d.ok("spice_op", {"template": "diode_clipper", "resistance": 1e3, "amplitude": 5.0})
    check(abs(op["v_out"] - clipper(5.0, 1e3)) < 1e-4, f"clipper: {op['v_out']}")

    plot = await d.call("spice_plot", {"run": ac["run_handle"]})
    images = [c for c in plot.content if getattr(c, "type", None) == "image"]
    check(len(images) == 1 and base64.b64decode(images[0].data)[:4] == b"\x89PNG", "plot image")
    for done in (ac, rlc, tran, op):
        await d.ok("spice_delete", {"run": done["run_handle"]})
    gone = await d.err("spice_plot", {"run": ac["run_handle"]})
    never = await d.err("spice_plot", {"run": "spice_" + "B" * 30})
    check(gone == never, "a deleted run answers like one that never existed")


async def hostile(d: Driver) -> None:
    base = {"template": "rc_lowpass", "resistance": 1e3, "f_start": 10.0, "f_stop": 1e6}

    def w(k: str, v: Any) -> dict[str, Any]:
        a = dict(base)
        a[k] = v
        return a

    cases: list[tuple[str, Any]] = [
        ("spice_ac", w("resistance", True)),
        ("spice_ac", w("resistance", "1000")),
        ("spice_ac", w("resistance", "NaN")),
        ("spice_ac", w("resistance", 0.0)),
        ("spice_ac", w("resistance", 1e300)),
        ("spice_ac", w("f_start", 1e7)),
        ("spice_ac", w(CANARY, 1)),
        ("spice_ac", w("template", f".control\nshell touch {CANARY}\n.endc")),
        ("spice_ac", w("template", f"rc_lowpass\n.include /etc/passwd {CANARY}")),
        ("spice_ac", w("title", f".include /etc/passwd {CANARY}")),
        ("spice_ac", w("title", f"x\n+ {CANARY}")),
        ("spice_tran", {"template": "rc_lowpass", "resistance": 1e3, "t_step": 1e-15, "t_stop": 1.0}),
        ("spice_plot", {"run": f"../../{CANARY}"}),
        ("spice_plot", {"run": "spice_" + "A" * 30}),
        ("spice_delete", {"run": "/etc/passwd"}),
    ]
    for tool, args in cases:
        await d.err(tool, args)


async def run(server: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        params = StdioServerParameters(command=server, args=["serve", "--run-root", str(Path(tmp) / "runs")],
                                       env={"RUST_LOG": "warn", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        with open(Path(tmp) / "stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    d = Driver(session)
                    await d.list_tools()
                    await simulations(d)
                    await hostile(d)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True)
    a = ap.parse_args()

    async def go() -> None:
        with anyio.fail_after(BUDGET_S):
            await run(os.path.abspath(a.server))

    try:
        anyio.run(go)
    except Failed as e:
        print(f"FAILED: {e}")
        return 1
    print("ok: stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
