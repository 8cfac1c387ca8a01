"""Suppressed users: the list kept in the lake, and the sync leaving out (and counting) their new events."""
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from lake_events import event
from sync_harness import Lake, make_catalog

from segment_lake.state import SourceState
from segment_lake.storage import HadoopStorage
from segment_lake.suppression import Suppressed, SuppressionList

pytestmark = pytest.mark.spark

CLI = str(Path(sys.executable).with_name("segment-lake"))


def test_the_list_adds_each_id_once_and_removes_it(spark, tmp_path):
    listed = SuppressionList(HadoopStorage(spark), f"file://{tmp_path}/suppressed.json")
    assert not listed.read()
    when = datetime(2024, 5, 1, tzinfo=UTC)
    assert listed.add(["u1", "u2"], ["a1"], when) == 3
    assert listed.add(["u1"], [], when) == 0
    assert listed.read() == Suppressed({"u1": when.isoformat(), "u2": when.isoformat()}, {"a1": when.isoformat()})
    assert listed.remove(["u2", "nobody"], ["a1"]) == 2
    assert listed.read() == Suppressed({"u1": when.isoformat()}, {})


def _write(folder: Path, name: str, events: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(e) + "\n" for e in events))


def test_the_sync_leaves_out_and_counts_the_events_of_suppressed_users(spark, tmp_path):
    day = tmp_path / "input" / "1704153600000"
    _write(day, "1.json", [
        event("identify", "m1", "2024-01-02T01:00:00Z", userId="u1", traits={"email": "u1@example.com"}),
        event("track", "m2", "2024-01-02T01:05:00Z", event="Signed Up", userId="u1"),
        event("page", "m3", "2024-01-02T01:10:00Z", anonymousId="a1"),
        event("page", "m4", "2024-01-02T01:15:00Z", userId=42),  # a number: matched by its text
        event("page", "m5", "2024-01-02T01:20:00Z", userId="u2", anonymousId="a2"),
        event("page", "m5", "2024-01-02T01:21:00Z", userId="u2", anonymousId="a2"),  # a duplicate
    ])
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input", "supp1", "suppression_db")
    storage = HadoopStorage(spark)
    listed = SuppressionList(storage, SourceState(storage, lake.layout.state).suppressed_uri)
    listed.add(["u1", "42"], ["a1"])
    first = lake.sync()
    assert (first.read_count, first.suppressed_count, first.duplicate_count, first.row_count) == (6, 4, 1, 1)
    assert [r["message_id"] for r in lake.rows("page")] == ["m5"]
    assert lake.columns("identify") is None and lake.columns("track_signed_up") is None  # no table for them
    source_line = lake.report(first)[0]
    assert source_line["suppressed_count"] == 4
    assert source_line["read_count"] == (source_line["row_count"] + source_line["duplicate_count"]
                                         + source_line["rejected_count"] + source_line["suppressed_count"])
    # no longer suppressed: their new events land again (the ones left out stay out: the files were processed)
    listed.remove(["u1"], [])
    _write(day, "2.json", [event("identify", "m6", "2024-01-02T02:00:00Z", userId="u1"),
                           event("page", "m7", "2024-01-02T02:00:00Z", anonymousId="a1")])
    second = lake.sync()
    assert (second.read_count, second.suppressed_count, second.row_count) == (2, 1, 1)
    assert [r["message_id"] for r in lake.rows("identify")] == ["m6"]


def test_the_command_lists_adds_and_removes(tmp_path):
    (tmp_path / "lake").mkdir()

    def suppress(*args):
        return subprocess.run([CLI, "suppress", *args, "--source-id", "src1", "--lake", "lake"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)

    added = suppress("add", "--user-id", "u1", "--user-id", "u2", "--anonymous-id", "a1")
    assert added.returncode == 0, added.stderr[-2000:]
    lines = added.stdout.splitlines()
    assert lines[0] == "added 3 of 3 ids"
    assert [line.split("\t")[:2] for line in lines[1:]] == [["user id", "u1"], ["user id", "u2"], ["anonymous id", "a1"]]
    removed = suppress("remove", "--user-id", "u2", "--user-id", "u9")
    assert removed.stdout.splitlines()[0] == "removed 1 of 2 ids (the others were not listed)"
    nothing = suppress("add")
    assert nothing.returncode == 1
    assert nothing.stderr.strip() == ("segment-lake: error (invalid_settings): suppress add needs at least one "
                                      "--user-id or --anonymous-id")
    assert not (tmp_path / "lake" / "segment-data" / "state" / "src1" / "lock.json").exists()
