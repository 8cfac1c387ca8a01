"""Compaction: each closed partition's small files become as few as the target size allows, with the same rows; a
reader of the catalog sees every row once throughout, crashes included; the partitions end in their own folders,
where later syncs add to them."""
import json
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import compaction_crash_points
import pytest
from crash_points import SMALL
from lake_events import event
from sync_harness import Lake, make_catalog

from segment_lake.catalog import same_location
from segment_lake.compaction import (
    Compaction,
    CompactionJournal,
    Merge,
    StateCompaction,
    TableCompaction,
    compaction_report,
    files_wanted,
    partition_end,
)
from segment_lake.deletion import Journal, UserDeletion
from segment_lake.errors import InvalidSettings
from segment_lake.landed_index import Generation, IndexCompaction, current_generation, day_of_folder, window
from segment_lake.settings import ReplayWindow
from segment_lake.state import SourceState
from segment_lake.sync import Sync
from segment_lake_contract import DATE_PARTITIONS

pytestmark = [pytest.mark.spark, pytest.mark.aws]

CLI = str(Path(sys.executable).with_name("segment-lake"))


def _write(folder: Path, name: str, events: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(e) + "\n" for e in events))


def test_partition_times_sizes_journal_and_locations():
    assert partition_end("day_hour", ("2024-01-02", "03")) == datetime(2024, 1, 2, 4, tzinfo=UTC)
    assert partition_end("year_month_day", ("2024", "02", "29")) == datetime(2024, 3, 1, tzinfo=UTC)
    assert partition_end("day", ("__HIVE_DEFAULT_PARTITION__",)) is None
    assert (files_wanted(0, 256), files_wanted(256, 256), files_wanted(257, 256)) == (1, 1, 2)
    journal = CompactionJournal("c1", "src", "db", ("day", "hr"), "2024-05-01T00:00:00+00:00", (
        Merge("page", ("2024-01-02", "03"), "file:/l/p", "file:/s/p", ("a.parquet", "b.parquet"),
              (("part-c1-00000.snappy.parquet", 123),), 9),),
        StateCompaction(2, IndexCompaction(3, 9, 4, "2024-04-23T00:00:00+00:00")), 40)
    assert CompactionJournal.from_json(journal.to_json()) == journal
    # an unfinished journal written before the index's figures were grouped still finishes, with the same figures
    flat = {"processed_lists_merged": 2, "landed_runs_merged": 3, "landed_ids_before": 9, "landed_ids_after": 4,
            "landed_horizon": "2024-04-23T00:00:00+00:00"}
    assert StateCompaction.from_dict(flat) == journal.state
    old = json.loads(journal.to_json())
    del old["data_files"]
    old["state"] = flat
    report = compaction_report(CompactionJournal.from_json(json.dumps(old)), datetime(2024, 5, 1, tzinfo=UTC))
    assert (report.files_before, report.files_after, report.state) == (None, None, journal.state)  # not counted then
    # a partition whose merged files were gone keeps its files: it is not counted as merged
    lost = compaction_report(journal, datetime(2024, 5, 1, tzinfo=UTC), ("page 2024-01-02/03",))
    assert (lost.partitions_compacted, lost.merged_files_before, lost.files_after, lost.tables) == (0, 0, 40, {})
    assert report.partitions_compacted == 1 and report.merged_files_before == 2
    assert same_location("s3://b/x/day=1/", "s3a://b/x/day=1") and same_location("file:/l/a%20b", "file:///l/a b")
    assert not same_location("s3://b/x/day=1", "s3://b/x/day=10")


def _old_partition_files(lake: Lake, table: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for uri in lake.data_files(table):
        folder = "/".join(uri.rsplit("/", 3)[1:3])
        counts[folder] = counts.get(folder, 0) + 1
    return counts


def _reader(spark, lake: Lake, table: str) -> list[tuple]:
    """What a reader of the catalog sees (Spark SQL through the table's partition locations)."""
    spark.sql(f"REFRESH TABLE {lake.database}.{table}")
    return sorted(tuple(row) for row in spark.sql(f"SELECT * FROM {lake.database}.{table}").collect())


def test_compact_merges_closed_partitions_of_several_syncs_row_exact(spark, tmp_path):
    old_day = tmp_path / "input" / "1704153600000"
    recent = datetime.now(UTC) - timedelta(hours=1)
    recent_day = tmp_path / "input" / str(int(recent.replace(hour=0, minute=0, second=0, microsecond=0).timestamp() * 1000))
    at = recent.strftime("%Y-%m-%dT%H:%M:%SZ")
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input", "cmp1", "compaction_db")
    for n in range(3):  # three syncs: three files in each partition
        _write(old_day, f"{n}.json", [
            event("page", f"p{n}a", f"2024-01-02T01:0{n}:00Z", userId="u1", properties={"count": n}),
            event("page", f"p{n}b", f"2024-01-02T02:0{n}:00Z", userId="u2"),
            event("identify", f"i{n}", f"2024-01-02T01:1{n}:00Z", userId=f"u{n}",
                  traits={"plan": "pro"} if n == 2 else {}),  # a new column in the third sync's file only
        ])
        _write(recent_day, f"{n}.json", [event("page", f"r{n}", at, userId="u3")])
        lake.sync()
    before = {table: _reader(spark, lake, table) for table in ("page", "identify")}
    files_before = {table: _old_partition_files(lake, table) for table in ("page", "identify")}
    assert files_before["page"]["day=2024-01-02/hr=01"] == 3 and files_before["identify"]["day=2024-01-02/hr=01"] == 3
    recent_folder = f"day={recent:%Y-%m-%d}/hr={recent:%H}"
    assert files_before["page"][recent_folder] == 3

    report = Compaction(spark, lake.storage, lake.catalog, lake.layout, lake.database, "", "day_hour",
                        progress=lambda line: None).run(24, 256)

    assert {table: _reader(spark, lake, table) for table in before} == before  # every row, once, same values
    assert _old_partition_files(lake, "page") == {"day=2024-01-02/hr=01": 1, "day=2024-01-02/hr=02": 1,
                                                  recent_folder: 3}  # the open partition is left alone
    assert _old_partition_files(lake, "identify") == {"day=2024-01-02/hr=01": 1}
    assert (report.partitions_compacted, report.merged_files_before, report.merged_files_after) == (3, 9, 3)
    assert report.files_before - report.files_after == 6 and report.rows == 9
    assert report.tables["page"] == TableCompaction(partitions=2, files_before=6, files_after=2)
    merged = lake.data_files("identify")[0]
    assert "traits_plan" in lake.storage.parquet_footer(merged)[0].fieldNames()  # the union of the files' columns
    report_file = Path(lake.layout.compaction_report(report.compaction_id).removeprefix("file://"))
    assert json.loads(report_file.read_text())["rows"] == 9
    state = SourceState(lake.storage, lake.layout.state)
    assert not lake.storage.exists(state.compaction_uri) and not lake.storage.exists(state.compaction_stage_uri)
    locations = lake.catalog.partition_locations(lake.database, "page")
    assert all(same_location(location, f"{lake.location('page')}/day={v[0]}/hr={v[1]}") for v, location in
               locations.items())

    # a late event of a compacted hour lands in the partition's folder, visible; compacting again merges it
    _write(old_day, "late.json", [event("page", "late", "2024-01-02T01:59:00Z", userId="u9")])
    lake.sync()
    assert len(_reader(spark, lake, "page")) == len(before["page"]) + 1
    again = Compaction(spark, lake.storage, lake.catalog, lake.layout, lake.database, "", "day_hour",
                       progress=lambda line: None).run(24, 256)
    assert (again.partitions_compacted, again.merged_files_before, again.merged_files_after) == (1, 2, 1)
    assert len(_reader(spark, lake, "page")) == len(before["page"]) + 1
    assert Compaction(spark, lake.storage, lake.catalog, lake.layout, lake.database, "", "day_hour",
                      progress=lambda line: None).run(24, 256).partitions_compacted == 0  # nothing left to merge


def test_day_folders_windows_and_generations():
    ymd = [("year", "yyyy"), ("month", "MM"), ("day", "dd")]
    assert day_of_folder("s3a://b/data/s/segment_type=page/year=2024/month=02/day=29", ymd) == date(2024, 2, 29)
    assert day_of_folder("file:/l/segment_type=page/day=2024-01-02", [("day", "yyyy-MM-dd")]) == date(2024, 1, 2)
    assert day_of_folder("file:/l/segment_type=page/day=__HIVE_DEFAULT_PARTITION__", [("day", "yyyy-MM-dd")]) == date.max
    assert window(0, 86_400_000_000, 7) == (datetime(1969, 12, 25, tzinfo=UTC), datetime(1970, 1, 9, tzinfo=UTC))
    year_one = (datetime(1, 1, 2, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    assert window(year_one, year_one, 7) == (datetime.min.replace(tzinfo=UTC), datetime(1, 1, 9, tzinfo=UTC))
    generation = Generation("c1", ("r1", "r2"), datetime(2024, 1, 2, 3, tzinfo=UTC))
    assert Generation.from_json(generation.to_json()) == generation


@pytest.mark.parametrize("date_partition", ["day_hour", "year_month_day"])
def test_the_sync_state_stops_growing_and_old_windows_still_land_nothing_twice(spark, tmp_path, date_partition):
    """Compacting merges the processed lists and the landed index and drops the ids before the horizon; a late file
    and a replay of the old days are still deduplicated, against the tables."""
    source = tmp_path / "input"
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake", f"file://{source}",
                "cmp3", f"compaction_db3_{date_partition}", date_partition=date_partition)
    days = {"1704153600000": "2024-01-02", "1704240000000": "2024-01-03", "1705881600000": "2024-01-22"}
    for folder, day in days.items():  # a sync per day; the last day is 20 days after the first
        _write(source / folder, "1.json", [event("page", f"{day}-{n}", f"{day}T0{n}:00:00Z", userId=f"u{n}")
                                           for n in range(3)])
        lake.sync()
    state = SourceState(lake.storage, lake.layout.state)
    processed = state.processed_files()

    def index_files() -> list[str]:
        return [f.uri for f in lake.storage.list_files(state.root) if "/landed" in f.uri]

    report = Compaction(spark, lake.storage, lake.catalog, lake.layout, lake.database, "", date_partition,
                        progress=lambda line: None).run(24, 256)
    assert report.state == StateCompaction(processed_lists_merged=3, landed_index=IndexCompaction(
        runs_merged=3, ids_before=9, ids_after=3, horizon="2024-01-14T02:00:00+00:00"))
    assert len(lake.storage.list_files(state.processed_uri)) == 1 and state.processed_files() == processed
    assert state.finished_runs()[0] == 3 and not lake.storage.list_folders(state.landed_uri)
    generation = current_generation(lake.storage, state)
    assert lake.storage.list_folders(state.landed_generations_uri) == [generation.name]

    # a late file in the first day's folder: a redelivery of a compacted-away id, and a new event
    _write(source / "1704153600000", "late.json", [event("page", "2024-01-02-1", "2024-01-02T05:00:00Z", userId="u1"),
                                                   event("page", "late", "2024-01-02T06:00:00Z", userId="u9")])
    late = lake.sync()
    assert (late.row_count, late.duplicate_count) == (1, 1)
    # a replay of the old days, read from the tables, and of the recent one, from the index: nothing twice
    settings = replace(lake.settings(), replay=ReplayWindow(date(2024, 1, 1), date(2024, 1, 31)))
    replay = Sync(spark, settings, lake.catalog, progress=lambda line: None).run()
    assert (replay.read_count, replay.row_count, replay.duplicate_count) == (11, 0, 11)
    assert sorted(r["message_id"] for r in lake.rows("page", keys=[k for k, _ in DATE_PARTITIONS[date_partition]])) == sorted(
        [f"{day}-{n}" for day in days.values() for n in range(3)] + ["late"])
    files_before = index_files()
    again = Compaction(spark, lake.storage, lake.catalog, lake.layout, lake.database, "", date_partition,
                       progress=lambda line: None).run(24, 256)
    # the late sync landed a row; the replay none, so it left no folder
    assert again.state.landed_index.runs_merged == 1 and again.state.landed_index.ids_after == 3
    assert state.finished_runs()[0] == 5 and len(lake.storage.list_files(state.processed_uri)) == 1
    assert current_generation(lake.storage, state).name != generation.name and len(index_files()) <= len(files_before)
    assert lake.storage.list_folders(state.landed_generations_uri) == [current_generation(lake.storage, state).name]


def test_a_compaction_killed_at_any_write_leaves_readers_every_row_once(spark, tmp_path):
    summary = compaction_crash_points.run_trials(spark, tmp_path, trials=3, events=400, seed=7, shape=SMALL)
    assert summary["trials"] == 3 and summary["crash_points"] == 3
    assert summary["files_before"] > summary["files_after"] > 0


def test_deletion_and_compaction_wait_for_each_other(spark, tmp_path):
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input", "cmp2", "compaction_db2")
    state = SourceState(lake.storage, lake.layout.state)
    lake.storage.write_text(state.compaction_uri, CompactionJournal("c1", "cmp2", "compaction_db2", ("day", "hr"),
                                                                    "2024-05-01T00:00:00+00:00").to_json())
    with pytest.raises(InvalidSettings, match="source cmp2 has an unfinished compaction: finish it with"):
        UserDeletion(spark, lake.storage, lake.layout, progress=lambda line: None).run(("u1",), ())
    lake.storage.delete(state.compaction_uri)
    # a compaction first finishes an unfinished deletion: merged away, the deletion's old files would come back
    lake.storage.write_text(state.deletion_uri, Journal("d1", "cmp2", "2024-05-01T00:00:00+00:00", ("u1",), ()).to_json())
    Compaction(spark, lake.storage, lake.catalog, lake.layout, "compaction_db2", "", "day_hour",
               progress=lambda line: None).run(24, 256)
    assert not lake.storage.exists(state.deletion_uri) and lake.storage.exists(lake.layout.deletion_report("d1"))


def test_glue_partitions_move_and_come_back(glue_client):
    from segment_lake.catalog import TableChange
    from segment_lake.catalog.glue import GlueCatalog

    catalog = GlueCatalog(glue_client)
    catalog.ensure_database("compaction_glue")
    partitions = tuple((f"2024-01-{d:02d}", f"{h:02d}") for d in (1, 2) for h in range(60))  # more than one batch
    catalog.register("compaction_glue", [TableChange("page", (("message_id", "string"),), ("day", "hr"), partitions,
                                                     "s3a://bucket/segment-data/data/src/segment_type=page")])
    home = catalog.partition_locations("compaction_glue", "page")
    assert len(home) == 120 and home[("2024-01-02", "07")] == "s3://bucket/segment-data/data/src/segment_type=page/day=2024-01-02/hr=07"
    moved = {values: f"s3a://bucket/stage/{values[0]}/{values[1]}" for values in partitions}
    catalog.set_partition_locations("compaction_glue", "page", ("day", "hr"), moved)
    now = catalog.partition_locations("compaction_glue", "page")
    assert now[("2024-01-01", "59")] == "s3://bucket/stage/2024-01-01/59"
    catalog.set_partition_locations("compaction_glue", "page", ("day", "hr"), home)
    assert catalog.partition_locations("compaction_glue", "page") == home


@pytest.mark.parametrize("args, message", [
    (["--lake", "missing"], "no lake at 'missing': pass the --lake the syncs write to"),
    (["--lake", ".", "--target-file-mb", "0"], "invalid --older-than 24 or --target-file-mb 0"),
])
def test_the_command_refuses_bad_input_in_one_line(tmp_path, args, message):
    result = subprocess.run([CLI, "compact", "--source-id", "src1", *args], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 1
    assert result.stderr.strip().startswith(f"segment-lake: error (invalid_settings): {message}"), result.stderr
