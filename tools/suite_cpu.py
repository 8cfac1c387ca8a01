"""Where the suite's CPU goes: a pytest plugin that writes each test's wall and CPU seconds, of the worker's whole
process tree (the commands a test starts, and their JVMs, which outlive their Python parent and are reparented away:
a sampler follows them until they end), one JSONL file per xdist worker; and a report of them.

    PYTHONPATH=tools PYTEST_ADDOPTS="-p suite_cpu" SUITE_CPU_OUT=/tmp/suite-cpu make test
    python tools/suite_cpu.py /tmp/suite-cpu        # the tests and modules that use the most CPU
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

TICK = os.sysconf("SC_CLK_TCK")
SAMPLE_SECONDS = 0.5


def _processes() -> dict[int, tuple[int, int, str, int, str]]:
    """Every process: its parent, its CPU ticks and its children's it reaped, its start time (with the pid, its
    identity), its own ticks alone, and its command name."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    line = stat.read()
            except OSError:
                continue
            name, fields = line[line.index("(") + 1:line.rindex(")")], line.rsplit(")", 1)[1].split()
            found[int(entry)] = (int(fields[1]), sum(map(int, fields[11:15])), fields[19],
                                 int(fields[11]) + int(fields[12]), name)
    return found


class TreeCpu:
    """The CPU seconds of a process and its descendants, those that left the tree alive (orphans) included."""

    def __init__(self, root: int) -> None:
        self.root, self.lock = root, threading.Lock()
        self.members: dict[tuple[int, str], int] = {}
        self.orphans: dict[tuple[int, str], int] = {}
        # the split of the tree's ticks: the worker's Python alone, its own Spark JVM (a java child of the worker),
        # and the rest (the commands the tests start, their JVMs included); and every other JVM seen
        self.split = {"python": 0, "spark": 0, "commands": 0}
        self.jvms: set[tuple[int, str]] = set()
        threading.Thread(target=self._follow, daemon=True).start()

    def _sample(self) -> int:
        procs = _processes()
        children: dict[int, list[int]] = {}
        for pid, (parent, *_) in procs.items():
            children.setdefault(parent, []).append(pid)
        tree, stack = set(), [self.root]
        while stack:
            pid = stack.pop()
            tree.add(pid)
            stack += children.get(pid, [])
        tree &= procs.keys()
        with self.lock:
            own = procs[self.root][3] if self.root in procs else 0
            workers_jvm = {pid for pid in children.get(self.root, []) if procs[pid][4] == "java"}
            spark = sum(procs[pid][1] for pid in workers_jvm)
            self.jvms |= {(pid, procs[pid][2]) for pid in tree - workers_jvm if procs[pid][4] == "java"}
            for pid in tree:
                self.members[(pid, procs[pid][2])] = procs[pid][1]
            for key in [key for key in self.members if key[0] not in tree]:
                del self.members[key]
                if key[0] in procs and procs[key[0]][2] == key[1]:  # alive elsewhere: orphaned
                    self.orphans[key] = procs[key[0]][1]
                # otherwise it ended in the tree, and its parent's reaped ticks hold it
            for key in self.orphans:
                if key[0] in procs and procs[key[0]][2] == key[1]:
                    self.orphans[key] = procs[key[0]][1]
            total = sum(procs[pid][1] for pid in tree) + sum(self.orphans.values())
            self.split = {"python": own, "spark": spark, "commands": total - own - spark}
            return total

    def _follow(self) -> None:
        while True:
            time.sleep(SAMPLE_SECONDS)
            self._sample()

    def seconds(self) -> float:
        return self._sample() / TICK


_TREE: TreeCpu | None = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _TREE
    _TREE = _TREE or TreeCpu(os.getpid())
    wall, cpu = time.time(), _TREE.seconds()
    split, jvms = dict(_TREE.split), len(_TREE.jvms)
    yield
    folder = Path(os.environ.get("SUITE_CPU_OUT", "suite-cpu"))
    folder.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with (folder / f"{worker}.jsonl").open("a") as out:
        row = {"test": item.nodeid, "wall": round(time.time() - wall, 2), "cpu": round(_TREE.seconds() - cpu, 2),
               "worker": worker, "jvms": len(_TREE.jvms) - jvms}
        row.update({part: round((_TREE.split[part] - split[part]) / TICK, 2) for part in split})
        out.write(json.dumps(row) + "\n")


def report(folder: Path, top: int = 30) -> list[str]:
    rows = [json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in path.read_text().splitlines()]
    modules: dict[str, Counter] = {}
    for row in rows:
        modules.setdefault(row["test"].split("::")[0], Counter()).update(
            {part: row.get(part, 0) for part in ("cpu", "python", "spark", "commands", "jvms")})
    lines = [f"{len(rows)} tests, {sum(r['cpu'] for r in rows):.0f} CPU-s, {sum(r['wall'] for r in rows):.0f} s "
             f"of the workers' time", "", "CPU-s  wall-s  python  spark  commands  JVMs  test"]
    lines += [f"{r['cpu']:6.0f} {r['wall']:7.0f} {r.get('python', 0):7.0f} {r.get('spark', 0):6.0f} "
              f"{r.get('commands', 0):9.0f} {r.get('jvms', 0):5d}  {r['test']}"
              for r in sorted(rows, key=lambda r: -r["cpu"])[:top]]
    lines += ["", "CPU-s  python  spark  commands  JVMs  module"]
    lines += [f"{m['cpu']:6.0f} {m['python']:7.0f} {m['spark']:6.0f} {m['commands']:9.0f} {m['jvms']:5d}  {module}"
              for module, m in sorted(modules.items(), key=lambda item: -item[1]["cpu"])[:top]]
    return lines


if __name__ == "__main__":
    print("\n".join(report(Path(sys.argv[1] if len(sys.argv) > 1 else "suite-cpu"))))
