"""Kills whole sync processes (SIGKILL to the process group: the CLI's Python and Spark's JVM) at seeded random
moments, re-runs until a sync finishes, and checks the lake against one synced without kills: every accepted
event exactly once, nothing pending, every file processed, the reports balanced (lake_checks.py; the catalog is
checked by crash_points.py, in-process).

    python tests/kill_harness.py --trials 30 --events 300000 --seed 1   (make soak)

Prints the trials and the stages the kills hit.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from lake_checks import check_lake, harness_arguments

CLI = str(Path(sys.executable).with_name("segment-lake"))
SOURCE = "src0001"


def _sync(input_dir: Path, lake: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen([CLI, "sync", "--source-id", SOURCE, "--input", str(input_dir), "--lake", str(lake)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)


def _stage(stderr: str) -> str:
    """The stage the run was in when it died: the last one its progress lines named."""
    stages = [line.split("] ", 1)[1].split(":", 1)[0] for line in stderr.splitlines() if "segment-lake: [" in line]
    return stages[-1] if stages else "start-up"


def _until_finished(input_dir: Path, lake: Path, env: dict) -> None:
    """Syncs until one finishes; a killed run's lock is waited out (it expires in seconds here)."""
    for _ in range(60):
        done = subprocess.run([CLI, "sync", "--source-id", SOURCE, "--input", str(input_dir), "--lake", str(lake)],
                              capture_output=True, text=True, env=env)
        if done.returncode == 0:
            return
        if "(source_busy)" not in done.stderr:
            raise AssertionError(f"a re-run failed: {done.stderr[-2000:]}")
        time.sleep(1)
    raise AssertionError("the source stayed locked")


def run_trials(work: Path, trials: int, events: int, seed: int, lock_seconds: int = 3,
               event_names: int | None = None) -> dict:
    """``event_names``: distinct track event names to generate (None: the generator's default)."""
    input_root = work / "input"
    names = [] if event_names is None else ["--event-names", str(event_names)]
    subprocess.run([CLI, "generate", "--output", str(input_root), "--events", str(events), "--seed", str(seed), *names],
                   check=True, capture_output=True)
    input_dir = input_root / "segment-logs" / SOURCE
    env = dict(os.environ, SEGMENT_LAKE_LOCK_SECONDS=str(lock_seconds))
    started = time.monotonic()
    reference = work / "reference"
    subprocess.run([CLI, "sync", "--source-id", SOURCE, "--input", str(input_dir), "--lake", str(reference)],
                   check=True, capture_output=True, env=env)
    duration = time.monotonic() - started
    expected = check_lake(reference, SOURCE, input_dir)
    chooser = random.Random(seed)
    stages: Counter = Counter()
    for trial in range(trials):
        lake = work / f"lake-{trial}"
        kills = 1 + chooser.randrange(2)  # one or two kills before the run that finishes
        for _ in range(kills):
            process = _sync(input_dir, lake, env)
            time.sleep(chooser.uniform(0.5, duration))
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            _, stderr = process.communicate()
            stages[_stage(stderr) if process.returncode == -signal.SIGKILL else "after the end"] += 1
            time.sleep(lock_seconds)  # the killed run's lock expires
        _until_finished(input_dir, lake, env)
        landed = check_lake(lake, SOURCE, input_dir)
        assert landed == expected, (f"trial {trial}: {sum((landed - expected).values())} events too many, "
                                    f"{sum((expected - landed).values())} missing")
    return {"trials": trials, "kills": sum(stages.values()), "events": sum(expected.values()),
            "kill_points": dict(sorted(stages.items()))}


def main() -> int:
    args = harness_arguments(__doc__, trials=30, events=300_000, work=".cache/soak")
    summary = run_trials(args.work, args.trials, args.events, args.seed)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
