"""Exactly once on an Iceberg lake: a sync dying before or after a table's commit, and a deletion dying before or
after a table's deleting commit, leave after the next sync the rows of a lake that never died, each once
(tests/iceberg_crash_points.py, in a Spark with Iceberg of its own; `make soak` tries every such write)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark]


def test_a_death_at_an_iceberg_commit_loses_and_doubles_nothing(tmp_path):
    harness = Path(__file__).with_name("iceberg_crash_points.py")
    done = subprocess.run([sys.executable, str(harness), "--trials", "2", "--events", "300", "--work", str(tmp_path)],
                          capture_output=True, text=True, timeout=900, cwd=harness.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["covered"] == {f"{step}: {how} {write} catalog": 1 for step, write in
                                  (("sync", "commit_table"), ("deletion", "delete_rows")) for how in ("before", "after")}
