"""Run a command and measure its wall time and the peak RSS of its whole process tree.

    python bench/measure.py -- COMMAND [ARGS...]

Samples /proc every 100 ms (Linux), summing the resident memory of the command and all its
descendants (the CLI's Python and Spark's JVM). Prints one JSON line on stderr.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(parent, []).append(int(name))
    return tree


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process has used so far."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _tree(root: int) -> list[int]:
    tree, pids, todo = _children(), [], [root]
    while todo:
        pids.append(todo.pop())
        todo.extend(tree.get(pids[-1], []))
    return pids


def measure(command: list[str], **popen) -> dict:
    """Runs ``command``; returns its exit code, wall seconds, peak tree RSS in MB and the CPU seconds
    the tree used (as last sampled: CPU time is steadier than wall time on a shared host)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, **popen)
    peak, cpu = 0, {}
    while process.poll() is None:
        pids = _tree(process.pid)
        peak = max(peak, sum(_rss_bytes(pid) for pid in pids))
        cpu.update((pid, _cpu_seconds(pid)) for pid in pids)
        time.sleep(0.1)
    return {"returncode": process.returncode, "seconds": round(time.perf_counter() - start, 2),
            "peak_rss_mb": round(peak / 2**20), "cpu_seconds": round(sum(cpu.values()), 1)}


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    result = measure(args)
    print(json.dumps(result), file=sys.stderr)
    sys.exit(result["returncode"])
