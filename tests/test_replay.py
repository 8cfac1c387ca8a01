"""Replay: the raw events of a window of day folders land again through the sync's engine, and nothing twice."""
import json
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest
from lake_events import event
from sync_harness import Lake, make_catalog

from segment_lake.discover import received_day
from segment_lake.settings import ReplayWindow
from segment_lake.sync import Sync

pytestmark = pytest.mark.spark

DAY1, DAY2, OLD = "1704153600000", "1704240000000", "1672617600000"  # 2024-01-02, 2024-01-03, 2023-01-02


def _write(folder: Path, name: str, events: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(e) + "\n" for e in events))


def test_received_day_is_the_first_day_folder():
    assert received_day(f"{DAY1}/part-1.gz") == date(2024, 1, 2)
    assert received_day(f"x/{OLD}/y/1.gz") == date(2023, 1, 2)
    assert received_day("1704153600001/1.gz") is None and received_day(f"{DAY1}") is None


def test_a_replay_lands_what_the_lake_lacks_and_nothing_twice(spark, tmp_path):
    source = tmp_path / "input"
    _write(source / OLD, "1.json", [event("page", "m0", "2023-01-02T05:00:00Z", userId="u0")])
    _write(source / DAY1, "1.json", [event("page", "m1", "2024-01-02T01:00:00Z", userId="u1"),
                                     event("page", "m2", "2024-01-02T02:00:00Z", userId="u2")])
    _write(source / DAY2, "1.json", [event("page", "m3", "2024-01-03T01:00:00Z", userId="u3")])
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake", f"file://{source}",
                "rep1", "replay_db")
    assert lake.sync().row_count == 4

    def replay(first: date, last: date):
        settings = lake.settings()
        settings = replace(settings, replay=ReplayWindow(first, last))
        return Sync(spark, settings, lake.catalog, progress=lambda line: None).run()

    # a file delivered late into the first day's folder: the replay lands its new event, not the day's old ones
    _write(source / DAY1, "2.json", [event("page", "m4", "2024-01-02T03:00:00Z", userId="u4"),
                                     event("page", "m1", "2024-01-02T01:00:00Z", userId="u1")])
    first = replay(date(2024, 1, 2), date(2024, 1, 2))
    assert (first.read_count, first.row_count, first.duplicate_count) == (4, 1, 3)
    assert sorted(r["message_id"] for r in lake.rows("page")) == ["m0", "m1", "m2", "m3", "m4"]
    line = lake.report(first)[0]
    assert (line["replay"], line["replay_from"], line["replay_to"]) == (True, "2024-01-02", "2024-01-02")
    # the replayed files count as processed: the next sync does not read the late file again
    assert lake.sync().read_count == 0
    # a window a year older than the dedup window: nothing twice
    old = replay(date(2023, 1, 1), date(2023, 1, 31))
    assert (old.read_count, old.row_count, old.duplicate_count) == (1, 0, 1)
    assert sorted(r["message_id"] for r in lake.rows("page")) == ["m0", "m1", "m2", "m3", "m4"]
    assert lake.report(lake.sync())[0]["replay"] is False


def test_a_replay_waits_for_an_unfinished_run_and_says_so(spark, tmp_path):
    import pytest

    from segment_lake.errors import InvalidSettings
    from segment_lake.state import RunManifest, SourceState

    source = tmp_path / "input"
    _write(source / DAY1, "1.json", [event("page", "m1", "2024-01-02T01:00:00Z", userId="u1")])
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake", f"file://{source}",
                "rep2", "replay_db2")
    state = SourceState(lake.storage, lake.layout.state)
    state.begin(RunManifest("20240102T000000Z-deadbeef", (f"file:{source}/{DAY1}/1.json",), "2024-01-02T00:00:00+00:00"))
    settings = replace(lake.settings(), replay=ReplayWindow(date(2024, 1, 2), date(2024, 1, 2)))
    with pytest.raises(InvalidSettings, match="unfinished run 20240102T000000Z-deadbeef: `segment-lake sync` redoes it"):
        Sync(spark, settings, lake.catalog, progress=lambda line: None).run()
    assert lake.sync().run_id == "20240102T000000Z-deadbeef"  # the sync redoes it; then the replay may run
    assert Sync(spark, settings, lake.catalog, progress=lambda line: None).run().duplicate_count == 1
