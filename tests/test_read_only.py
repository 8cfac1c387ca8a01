"""An analyst who may only read a shared local lake can query it: sql opens a copy of the catalog (Derby would wait
for minutes to write its lock files in the lake), and history and state show read the files as they are. Run as this
user with the lake made read-only; as root, without the capabilities that let root write anyway."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lake_events import write_run1

pytestmark = pytest.mark.spark

CLI = str(Path(sys.executable).with_name("segment-lake"))
# root writes whatever the modes say unless it drops these
AS_READER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []


def test_a_reader_without_write_access_queries_the_lake(tmp_path):
    write_run1(tmp_path / "input", "src1")
    synced = subprocess.run([CLI, "sync", "--source-id", "src1", "--input", "input/segment-logs/src1", "--lake", "lake"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert synced.returncode == 0, synced.stderr[-2000:]
    subprocess.run(["chmod", "-R", "a-w", "lake"], cwd=tmp_path, check=True)
    try:
        probe = subprocess.run([*AS_READER, "touch", "lake/x"], cwd=tmp_path, capture_output=True, text=True)
        assert probe.returncode != 0, "the test's reader may write the lake"

        def read(*args):
            return subprocess.run([*AS_READER, CLI, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)

        query = read("sql", "--lake", "lake", "select count(*) from src1.identify")
        assert query.returncode == 0, query.stderr[-2000:]
        assert query.stdout.splitlines() == ["count(1)", "2"]
        assert query.stderr.splitlines() == [
            "segment-lake: this user may not write the lake's catalog: querying a copy of it, as of now"]
        history = read("history", "--lake", "lake")
        assert history.returncode == 0 and history.stdout.splitlines()[-1].startswith(
            "finished over the last 30 days: 1 of 1 syncs"), history.stderr[-2000:]
        state = read("state", "show", "--source-id", "src1", "--lake", "lake")
        assert state.returncode == 0 and "src1: unfinished run: none" in state.stdout, state.stderr[-2000:]
    finally:
        subprocess.run(["chmod", "-R", "u+w", "lake"], cwd=tmp_path, check=True)
