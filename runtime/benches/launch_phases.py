#!/usr/bin/env python3
"""Where a sandboxed launch spends its time, from a system-wide trace.

Reads `perf script` output of a run of the sandbox bench and prints, for
the launches of one variant, the median of each phase between the
server's fork of the monitor and the next launch's fork. Phases are cut at
kernel events only (forks, execs, exits and three system calls), so the
trace costs each launch a few events, not one per system call.

    B=$(cargo bench --profile release -p hardened-mcp --features sandbox \
          --bench sandbox --no-run --message-format=json 2>/dev/null |
        python3 -c 'import sys,json
    for l in sys.stdin:
        m=json.loads(l)
        if m.get("executable") and m["target"]["name"]=="sandbox": print(m["executable"])')
    F='id == 56 || id == 166 || id == 317'
    perf record -o /tmp/launch.data -a \
        -e raw_syscalls:sys_enter --filter "$F" -e raw_syscalls:sys_exit --filter "$F" \
        -e sched:sched_process_fork,sched:sched_process_exit,sched:sched_process_exec \
        -- "$B" --bench 'spawn_wait_true/sandbox_full$' --profile-time 3
    perf script -i /tmp/launch.data -F comm,pid,tid,cpu,time,event,trace |
        python3 runtime/benches/launch_phases.py

(56: clone, 166: umount2, 317: seccomp on x86-64.) The bench's process is
the one that `exec`s `.../deps/sandbox-*`; a launch is a child of it whose
tree `exec`s the solver (the network-namespace pool's children exec
nothing and are left out).
"""

import collections
import re
import statistics
import sys

CLONE, UMOUNT2, SECCOMP = 56, 166, 317
LINE = re.compile(r"^\s*(\S.*?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$")


def events(stream):
    for line in stream:
        m = LINE.match(line)
        if m:
            _, pid, tid, _, t, event, rest = m.groups()
            yield float(t), int(pid), int(tid), event, rest


def main():
    evs = list(events(sys.stdin))
    bench = next(p for t, p, _, e, r in evs if e == "sched:sched_process_exec" and "/deps/sandbox" in r)
    parent, forked, execd, exited = {}, {}, {}, {}
    # Per process: system call spans [(nr, enter, exit)].
    calls = collections.defaultdict(list)
    entered = {}
    for t, pid, tid, e, rest in evs:
        if e == "sched:sched_process_fork":
            child = int(re.search(r"child_pid=(\d+)", rest).group(1))
            parent[child], forked[child] = pid, t
        elif e == "sched:sched_process_exec" and pid != bench:
            execd.setdefault(pid, t)
        elif e == "sched:sched_process_exit" and pid == tid:
            exited.setdefault(pid, t)
        elif e == "raw_syscalls:sys_enter":
            entered[tid] = (int(rest.split()[1]), t)
        elif e == "raw_syscalls:sys_exit" and tid in entered:
            nr, t0 = entered.pop(tid)
            calls[pid].append((nr, t0, t))

    def top(p):
        while parent.get(p) not in (bench, None):
            p = parent[p]
        return p

    launches = []
    for solver in execd:
        monitor = top(solver)
        if parent.get(monitor) == bench and solver in exited:
            launches.append((forked[monitor], monitor, solver))
    launches.sort()
    phases = collections.defaultdict(list)
    for (fork, monitor, solver), (next_fork, _, _) in zip(launches[5:-5], launches[6:-4]):
        init = parent[solver] if parent[solver] != monitor else None
        phases["server fork -> solver exec (head)"].append(execd[solver] - fork)
        phases["solver exec -> solver exit (the solver's own run)"].append(exited[solver] - execd[solver])
        phases["solver exit -> next launch's fork (tail)"].append(next_fork - exited[solver])
        phases["launch to launch"].append(next_fork - fork)
        seccomp = sum(b - a for nr, a, b in calls[solver] if nr == SECCOMP)
        phases["  solver: seccomp()"].append(seccomp)
        if init is None:
            phases["  monitor start -> solver clone"].append(forked[solver] - fork)
        else:
            phases["  server fork -> init clone (monitor)"].append(forked[init] - fork)
            umount = [(a, b) for nr, a, b in calls[init] if nr == UMOUNT2]
            if umount:
                phases["  init clone -> umount2 (the view)"].append(umount[0][0] - forked[init])
                phases["  umount2 (old root detached)"].append(umount[0][1] - umount[0][0])
                phases["  umount2 -> solver clone"].append(forked[solver] - umount[0][1])
        phases["  solver clone -> exec (hardening)"].append(execd[solver] - forked[solver])
    print(f"{len(launches)} launches, medians:")
    for name, values in phases.items():
        print(f"  {name:52s} {statistics.median(values) * 1e3:7.3f} ms")


if __name__ == "__main__":
    main()
