#!/usr/bin/env python3
"""Replicas: several `solver-server` processes over one run root, as one server.

Starts `--replicas` (default 3) `solver-server serve --http` processes on
loopback sharing one run root (and, with `--launcher slurm`, the local
Slurm cluster), then drives them with the official MCP Python SDK, one
session per replica, in one protocol era:

- a run started through the first replica is seen (status, list), waited
  for and read (result) through the others;
- a run started through one is cancelled through another, and reads as
  cancelled through a third; a run deleted through one is unknown to all;
- the caller's quota of runs held at once (`--max-runs`) holds across the
  replicas, and another caller cannot tell the caller's runs exist;
- the replica that follows a long run is killed with SIGKILL mid-run: with
  local runs the others report the run `interrupted` (never unknown), with
  Slurm the job runs on and another replica follows it to `succeeded`;
- no bearer token appears in any replica's log.

Run by `examples/solver-server/tests/replicas.rs`; by hand:

    target/mcp-venv/bin/python tests/python/test_replicas.py \\
        --server target/debug/solver-server --solver target/debug/heat1d --era modern

Exit status 0 when every check holds; the failed check is printed.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_e2e import (  # noqa: E402
    UNKNOWN_HANDLE,
    Driver,
    Failed,
    HttpServer,
    Person,
    check,
    session_for,
    small_run,
)

# Upper bound of the whole script, against hangs only.
BUDGET_S = 400
MAX_RUNS = 3


class Replica(HttpServer):
    """One `serve --http` process over the shared root."""

    def __init__(self, server: str, solver: str, tmp: Path, root: Path, tokens: dict[str, str],
                 index: int, launcher: str):
        own = tmp / f"replica-{index}"
        own.mkdir()
        super().__init__(server, solver, tmp, tokens, root=root, log_dir=own, rust_log="info",
                         extra=("--launcher", launcher, "--max-runs", str(MAX_RUNS)), wait=False)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def long_run() -> dict:
    # Seconds of solver time: long enough to kill its replica mid-run.
    return small_run(cells=1000, steps=1_900_000)


async def state_through(d: Driver, handle: str) -> str:
    return (await d.ok("heat_status", {"run": handle}))["state"]


async def until_state(d: Driver, handle: str, wanted: set[str], within_s: float) -> str:
    deadline = time.monotonic() + within_s
    while True:
        state = await state_through(d, handle)
        if state in wanted or time.monotonic() > deadline:
            return state
        await anyio.sleep(0.2)


TERMINAL = {"succeeded", "failed", "timed_out", "cancelled", "interrupted"}


async def wait_end(d: Driver, handle: str, within_s: float) -> dict:
    """`heat_wait` (at most 60 s a call) until the run ends or `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        waited = await d.ok("heat_wait", {"run": handle, "seconds": 60})
        if waited["state"] in TERMINAL or time.monotonic() > deadline:
            return waited


def failure_in(e: BaseException) -> Failed | None:
    """The check that failed, inside the task groups' exception groups."""
    if isinstance(e, Failed):
        return e
    for inner in getattr(e, "exceptions", ()):
        found = failure_in(inner)
        if found is not None:
            return found
    return None


async def drive(replicas: list[Replica], toks: dict[str, str], era: str, launcher: str) -> None:
    secrets_ = list(toks.values())
    async with AsyncExitStack() as stack:
        # Alice approves her long runs (above the server's 1e8 cell-steps).
        a = [await session_for(stack, r.url, toks["alice"], f"alice@{i}", secrets_, era, Person())
             for i, r in enumerate(replicas)]
        bob = await session_for(stack, replicas[-1].url, toks["bob"], "bob", secrets_, era)
        first, second, third = a[0], a[1], a[-1]

        # Started through one, seen, waited for and read through the others.
        started = await first.ok("heat_start", small_run(cells=200, steps=50_000))
        h1 = started["run_handle"]
        state = await state_through(second, h1)
        check(state in ("queued", "running", "succeeded"), f"seen through another replica: {state}")
        listed = await third.ok("heat_list", {})
        check(any(r["run_handle"] == h1 for r in listed["runs"]), "listed through another replica")
        waited = await wait_end(third, h1, 120)
        check(waited["state"] == "succeeded", f"waited through another replica: {waited}")
        result = await second.ok("heat_result", {"run": h1, "max_points": 11})
        check(result["cells"] == 200 and result["steps"] == 50_000, f"result: {result}")

        # Another caller cannot tell that alice's runs exist, on any replica.
        check(await bob.err("heat_status", {"run": h1})
              == await bob.err("heat_status", {"run": UNKNOWN_HANDLE}), "a foreign run shows")

        # Cancelled through another replica than the one that follows it.
        h2 = (await first.ok("heat_start", long_run()))["run_handle"]
        check(await until_state(second, h2, {"running"}, 60) == "running", "the long run runs")
        t0 = time.monotonic()
        cancelled = await third.ok("heat_cancel", {"run": h2})
        print(f"measured: a cancel through another replica answered in {time.monotonic() - t0:.2f} s")
        check(cancelled.get("outcome") == "cancelled", f"cancel through another replica: {cancelled}")
        check(await until_state(second, h2, {"cancelled"}, 15) == "cancelled",
              "cancelled, as a third replica reads it")

        # Deleted through one: unknown through all.
        await second.ok("heat_delete", {"run": h1})
        await third.ok("heat_delete", {"run": h2})
        for d in a:
            check(await d.err("heat_status", {"run": h1})
                  == await d.err("heat_status", {"run": UNKNOWN_HANDLE}), f"{d.label}: a deleted run shows")

        # One caller's quota of runs held at once, across the replicas.
        held = []
        for i in range(MAX_RUNS):
            held.append((await a[i % len(a)].ok("heat_start", small_run(steps=100)))["run_handle"])
        for d in a:
            kind, _ = await d.err("heat_start", small_run(steps=100))
            check(kind == "quota_exceeded", f"{d.label}: a run past the quota: {kind}")
        # Another caller's quota is its own.
        bobs = (await bob.ok("heat_start", small_run(steps=100)))["run_handle"]
        for h in held:
            await wait_end(third, h, 60)
            await second.ok("heat_delete", {"run": h})
        await bob.ok("heat_delete", {"run": bobs})

        # The replica that follows a run is killed mid-run.
        h3 = (await first.ok("heat_start", long_run()))["run_handle"]
        check(await until_state(second, h3, {"running"}, 60) == "running", "the run to orphan runs")
        replicas[0].kill()
        killed_at = time.monotonic()
        if launcher == "slurm":
            # The job runs on; another replica follows it to its end.
            waited = await wait_end(second, h3, 240)
            check(waited["state"] == "succeeded", f"the orphaned job, through a replica: {waited}")
            print(f"measured: the orphaned job followed to its end {time.monotonic() - killed_at:.2f} s after the kill")
            result = await third.ok("heat_result", {"run": h3, "max_points": 11})
            check(result["steps"] == 1_900_000, f"the orphaned job's result: {result}")
        else:
            # The run died with its server: reported, never unknown.
            state = await until_state(second, h3, {"interrupted"}, 30)
            check(state == "interrupted", f"the orphaned local run, through a replica: {state}")
            print(f"measured: reported interrupted {time.monotonic() - killed_at:.2f} s after the kill")
            check(await state_through(third, h3) == "interrupted", "the same through a third")
        listed = await third.ok("heat_list", {})
        check(any(r["run_handle"] == h3 for r in listed["runs"]), "the orphaned run is listed")
        await second.ok("heat_delete", {"run": h3})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True)
    ap.add_argument("--solver", required=True)
    ap.add_argument("--era", choices=["legacy", "modern"], default="modern")
    ap.add_argument("--launcher", choices=["local", "slurm"], default="local")
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--tmp", help="where the shared run root goes (on disk for Slurm)")
    a = ap.parse_args()
    server, solver = os.path.abspath(a.server), os.path.abspath(a.solver)
    toks = {"alice": secrets.token_urlsafe(32), "bob": secrets.token_urlsafe(32)}
    label = f"{a.replicas} replicas {a.launcher} {a.era}"
    with tempfile.TemporaryDirectory(dir=a.tmp) as tmp_s:
        tmp = Path(tmp_s)
        root = tmp / "runs"
        replicas: list[Replica] = []
        try:
            # Started together on a fresh root: the root is made once,
            # whoever wins, and every replica serves.
            for i in range(a.replicas):
                replicas.append(Replica(server, solver, tmp, root, toks, i, a.launcher))
            for r in replicas:
                r.wait_ready()

            async def go() -> None:
                with anyio.fail_after(BUDGET_S):
                    await drive(replicas, toks, a.era, a.launcher)

            anyio.run(go)
        except BaseException as e:  # noqa: BLE001 - the check inside the groups
            failed = failure_in(e)
            if failed is None:
                raise
            print(f"FAILED: {failed}", file=sys.stderr)
            for r in replicas:
                print(f"--- {r.stderr_path} ---\n{r.log()[-3000:]}", file=sys.stderr)
            return 1
        finally:
            for r in replicas:
                if r.proc.poll() is None:
                    r.stop()
        for r in replicas:
            log = r.log()
            for t in toks.values():
                if t in log:
                    print("FAILED: a bearer token appears in a replica's log", file=sys.stderr)
                    return 1
    print(f"ok: {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
