"""Exactly once: a failure after each step of a sync, then a re-run, leaves every accepted event in
the lake exactly once and the processed-file state in agreement with the data."""
import json
from pathlib import Path

import pytest
from lake_events import RUN1_COUNTS, write_run1, write_run2
from recording_environment import Action, Boundaries
from sync_harness import Lake, make_catalog

from segment_lake.state import SourceState
from segment_lake.sync import Sync

pytestmark = [pytest.mark.spark, pytest.mark.aws]


class Crash(RuntimeError):
    pass


def crash(lake: Lake, at: Action, occurrence: int, how: str, says: str) -> Boundaries:
    """The sync's ``occurrence``-th write ``at`` (recording_environment.Action) raises Crash."""
    return Boundaries(lake.lake_uri, occurrence, how, matching=at, error=Crash(says))


def crash_after_first_files_published(lake: Lake) -> Boundaries:
    return crash(lake, Action("move", "data"), 2, "after", "between files")  # two files in the tables, the others staged


def crash_after_data_written(lake: Lake) -> Boundaries:
    # data, discards and landed ids in place, the catalog not yet told: the stage's removal (its second) is next
    return crash(lake, Action("delete", "stage"), 2, "before", "after data")


def crash_after_catalog_updated(lake: Lake) -> Boundaries:
    return crash(lake, Action("write_text", "state/processed"), 1, "before", "after catalog")


def crash_after_state_advanced(lake: Lake) -> Boundaries:
    return crash(lake, Action("write_text", "state/processed"), 1, "after", "after state")


CRASHES = [crash_after_first_files_published, crash_after_data_written, crash_after_catalog_updated,
           crash_after_state_advanced]


@pytest.mark.parametrize("crash", CRASHES, ids=[c.__name__ for c in CRASHES])
@pytest.mark.parametrize("kind", ["local", "glue"])
def test_rerun_after_a_crash_lands_everything_exactly_once(crash, kind, spark, glue_client, tmp_path):
    name = f"crash_{kind}_{crash.__name__}"[:60]
    lake = Lake(spark, make_catalog(kind, spark, glue_client), kind, f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input/segment-logs/src1", "src1", name)
    write_run1(tmp_path / "input", "src1")

    with pytest.raises(Crash):
        lake.sync(crash(lake))
    [failed_report] = lake.storage.list_files(lake.layout.reports)
    source_line = json.loads(lake.storage.read_text(failed_report.uri).splitlines()[0])
    assert source_line["status"] == "failed" and source_line["error_code"] == "internal"
    assert source_line["error"].startswith("Crash: after") or source_line["error"].startswith("Crash: between")

    rerun = lake.sync()
    state = SourceState(lake.storage, lake.layout.state)
    assert state.pending() is None
    assert len(state.processed_files()) == 2
    if crash is crash_after_state_advanced:
        # the crashed run had finished its work: the re-run only cleared the manifest
        assert rerun.read_count == 0
    else:
        assert {k: getattr(rerun, k) for k in RUN1_COUNTS} == RUN1_COUNTS
    ids = [r["message_id"] for r in lake.rows("track_order_completed")]
    assert sorted(ids) == ["m1", "m10", "m2"]
    assert sorted(r["message_id"] for r in lake.rows("identify")) == ["m11", "m3"]
    assert len(lake.discards()) == 4
    assert len(lake.rejected()) == 7
    assert [d["message_id"] for d in lake.duplicates()] == ["m3"]  # recorded once, whatever the crash left
    for table in ("identify", "track_order_completed"):
        # one file per partition: the crashed attempt's files were replaced, not kept beside
        files = lake.data_files(table)
        partitions = {f.rsplit("/", 1)[0] for f in files}
        assert len(files) == len(partitions)

    # a later run still dedups against the recovered one
    write_run2(tmp_path / "input", "src1")
    later = lake.sync()
    assert later.duplicate_count == 2 and later.row_count == 6
    assert sum(d["run_id"] == later.run_id for d in lake.duplicates()) == 2
    assert sorted(r["message_id"] for r in lake.rows("track_order_completed")) == ["m1", "m10", "m2", "m22"]
    reports = lake.storage.list_files(lake.layout.reports)
    statuses = [json.loads(lake.storage.read_text(r.uri).splitlines()[0])["status"] for r in reports]
    # the failed attempt's report stays: beside its redo's report (as attempt-<time>.json, so the history shows
    # every attempt), or apart when the re-run only cleared its manifest
    assert sorted(statuses) == ["failed", "finished", "finished"]
    attempts = [r.uri for r in reports if r.uri.rsplit("/", 1)[1].startswith("attempt-")]
    assert len(attempts) == (0 if crash is crash_after_state_advanced else 1), attempts


@pytest.mark.parametrize("removed", [["b.json.gz"], ["a.json", "b.json.gz"]], ids=["one file", "every file"])
def test_a_redo_drops_files_removed_since_and_never_blocks_the_source(removed, spark, tmp_path):
    """The crashed run's files are removed before the redo (by hand, or by a lifecycle rule): the redo lands
    what is left and says what it dropped; with nothing left the source moves on to new files."""
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input/segment-logs/src1", "src1", f"redo_missing_{len(removed)}")
    write_run1(tmp_path / "input", "src1")
    with pytest.raises(Crash):
        lake.sync(crash_after_data_written(lake))  # the run's files are in the tables, its state not advanced
    for name in removed:
        next((tmp_path / "input").rglob(name)).unlink()
    write_run2(tmp_path / "input", "src1")  # a new file arrives meanwhile

    said = []
    runs = [Sync(spark, lake.settings(), lake.catalog, progress=said.append).run()]
    [dropped] = [line for line in said if "no longer exist" in line]
    assert all(name in dropped for name in removed), dropped
    if "a.json" not in removed:  # the redo lands a.json alone; the next sync takes the new file
        assert runs[0].read_count == 9
        runs.append(lake.sync())
    assert runs[-1].read_count == 8  # c.json
    state = SourceState(lake.storage, lake.layout.state)
    assert state.pending() is None
    assert {Path(f).name for f in state.processed_files()} == {"a.json", "c.json"} - set(removed)
    # exactly once: what the runs landed is in the lake, each event once, nothing of the crashed attempt beyond
    # it (m3 lands twice by design: its second coming is more than 7 days after the first)
    tables = {t.table_name for run in runs for t in run.tables}
    events = [(row["message_id"], row["received_at"]) for table in tables for row in lake.rows(table)]
    assert len(events) == len(set(events)) == sum(run.row_count for run in runs)


def test_state_show_and_reset_drop_an_unfinished_run_without_doubling_anything(spark, tmp_path, capsys):
    from segment_lake import cli

    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input/segment-logs/src1", "src1", "state_reset")
    write_run1(tmp_path / "input", "src1")
    with pytest.raises(Crash):
        lake.sync(crash_after_data_written(lake))  # the attempt's files are in the tables
    state = SourceState(lake.storage, lake.layout.state)
    run_id = state.pending().run_id
    assert lake.data_files("track_order_completed")

    assert cli.main(["state", "show", "--source-id", "src1", "--lake", f"{tmp_path}/lake"]) == 0
    shown = capsys.readouterr().out
    assert f"src1: unfinished run: {run_id}, started " in shown and ", 2 files (0.0 MB): the next sync redoes it" in shown
    assert "src1: finished runs: 0" in shown

    assert cli.main(["state", "reset", "--source-id", "src1", "--lake", f"{tmp_path}/lake"]) == 0
    assert f"dropped unfinished run {run_id}" in capsys.readouterr().out
    assert state.pending() is None and lake.data_files("track_order_completed") == []
    assert not lake.storage.exists(state.landed_run_uri(run_id))

    rerun = lake.sync()  # a new run over the same files: everything once
    assert rerun.run_id != run_id and {k: getattr(rerun, k) for k in RUN1_COUNTS} == RUN1_COUNTS
    ids = [r["message_id"] for r in lake.rows("track_order_completed")]
    assert len(ids) == len(set(ids))
    assert cli.main(["state", "reset", "--source-id", "src1", "--lake", f"{tmp_path}/lake"]) == 0
    assert "no unfinished run: nothing to reset" in capsys.readouterr().out
    assert cli.main(["state", "show", "--source-id", "src1", "--lake", f"{tmp_path}/nowhere"]) == 1
    assert "no lake at" in capsys.readouterr().err
