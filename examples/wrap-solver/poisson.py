#!/usr/bin/python3
"""A plain Python solver, as a scientist would write it: the 1-D Poisson
problem -u'' = pi^2 sin(pi x) on [0, 1], u(0) = u(1) = 0, by Gauss-Seidel
sweeps until the update falls below the tolerance.

    poisson.py <input.deck> <result.json>

It reports progress as `PROGRESS <done> <total>` lines on stdout (the
framework's progress protocol) and writes its result as JSON.
"""
import json
import math
import sys


def main() -> int:
    deck_path, result_path = sys.argv[1], sys.argv[2]
    # The deck: `key = value` lines, written by the server from validated values.
    with open(deck_path) as f:
        deck = dict(line.split(" = ", 1) for line in f.read().splitlines() if line)
    n, tol, max_it = int(deck["n"]), float(deck["tolerance"]), int(deck["max_iterations"])
    # What the interpreter sees in the sandbox's view (shown in the log).
    print(f"argv0={sys.argv[0]} executable={sys.executable}", file=sys.stderr)
    h = 1.0 / n
    x = [i * h for i in range(n + 1)]
    f = [math.pi ** 2 * math.sin(math.pi * xi) for xi in x]
    u = [0.0] * (n + 1)
    every = max(1, max_it // 100)
    change, it = math.inf, 0
    while it < max_it and change > tol:
        it += 1
        change = 0.0
        for i in range(1, n):
            new = 0.5 * (u[i - 1] + u[i + 1] + h * h * f[i])
            change = max(change, abs(new - u[i]))
            u[i] = new
        if it % every == 0:
            print(f"PROGRESS {it} {max_it}", flush=True)
    residual = max(
        (abs((2 * u[i] - u[i - 1] - u[i + 1]) / (h * h) - f[i]) for i in range(1, n)),
        default=0.0,
    )
    result = {
        "iterations": it,
        "residual": residual,
        "max_error": max(abs(u[i] - math.sin(math.pi * x[i])) for i in range(n + 1)),
        "converged": change <= tol,
    }
    with open(result_path, "w") as out:
        json.dump(result, out)
    print(f"done after {it} sweeps", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
