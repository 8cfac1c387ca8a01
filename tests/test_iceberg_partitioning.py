"""`--iceberg-partitioning hours`: Iceberg tables partitioned by the hour of received_at (Iceberg's hidden `hours`
transform), without the date partition's key columns. Real-shaped payloads in two syncs, the second with a late file
in an hour of the first, read by pyiceberg and DuckDB against the lake model less its keys; a scan filtered on
received_at plans only that hour's files. After a compaction, a replay of old days lands nothing twice, and a table
keeps the partitioning it was made with. Its Spark must open with Iceberg:
test_contract_on_iceberg.py runs this module (conftest.ICEBERG_SESSION_MODULES)."""
import json
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse

import pyarrow.parquet as pq
import pytest
from iceberg_readers import comparable, duckdb_rows, pyiceberg_table
from lake_model import Lake as Model
from real_shaped import RUN1, RUN2, _event
from sync_harness import Lake

from segment_lake.catalog.local import LocalCatalog
from segment_lake.compaction import Compaction
from segment_lake.settings import ReplayWindow
from segment_lake.sync import Sync

pytestmark = pytest.mark.spark

KEYS = ("day", "hr")
# a second file in an hour of the first run's
LATE = {"late.json": [_event("track", "late-1", "2024-03-04T10:30:00Z", userId="user_8812", event="Order Completed",
                             properties={"revenue": 3})]}
LATE_HOUR = datetime(2024, 3, 4, 10, tzinfo=UTC)


def hours_since_1970(moment: datetime) -> int:
    return int(moment.timestamp()) // 3600


@pytest.fixture(scope="module")
def synced(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("hidden-hours")
    lake = Lake(spark, LocalCatalog(spark), "local", f"file://{root}/lake", f"file://{root}/input", "hours1",
                "hidden_hours", table_format="iceberg", iceberg_partitioning="hours")
    model = Model()
    for number, files in enumerate((RUN1, {**RUN2, **LATE})):
        folder = root / "input" / f"run{number}"
        folder.mkdir(parents=True)
        lines = {}
        for name, events in files.items():
            (folder / name).write_text("".join(json.dumps(event) + "\n" for event in events))
            lines[str(folder / name)] = (folder / name).read_text().splitlines()
        model.sync(lines, lake.sync().run_id)
    return lake, model


def table_folder(lake: Lake, table: str) -> Path:
    return Path(urlparse(lake.location(table)).path)


def without_keys(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in KEYS} for row in rows]


def test_each_table_is_partitioned_by_the_hour_of_received_at_and_has_no_key_columns(synced):
    lake, model = synced
    for name, columns in model.columns.items():
        table = pyiceberg_table(table_folder(lake, name))
        assert [(f.name, str(f.transform), table.schema().find_column_name(f.source_id))
                for f in table.spec().fields] == [("received_at_hour", "hour", "received_at")], name
        assert [f.name for f in table.schema().fields] == [column for column, _ in columns], name
        assert lake.columns(name) == columns, name  # the catalog's columns: received_at is not taken for a key


def test_every_reader_reads_the_models_rows_without_the_keys(synced):
    lake, model = synced
    names = sorted(model.columns)
    by_duckdb = duckdb_rows([table_folder(lake, name) for name in names])
    for name, read_by_duckdb in zip(names, by_duckdb, strict=True):
        expected = comparable(without_keys(model.table_rows(name)))
        assert comparable(pyiceberg_table(table_folder(lake, name)).scan().to_arrow().to_pylist()) == expected, name
        assert read_by_duckdb == expected, name
        counted = lake.spark.sql(f"SELECT count(*) FROM hidden_hours.`{name}`").first()[0]
        assert counted == len(model.rows[name]), name


def test_each_file_is_in_its_hours_partition_and_folder_and_holds_no_keys(synced):
    lake, model = synced
    for name in model.columns:
        for task in pyiceberg_table(table_folder(lake, name)).scan().plan_files():
            path = Path(urlparse(task.file.file_path).path)
            hour = datetime.strptime(f"{path.parent.parent.name} {path.parent.name}", "day=%Y-%m-%d hr=%H")
            hour = hour.replace(tzinfo=UTC)
            assert task.file.partition[0] == hours_since_1970(hour), path
            assert not set(KEYS) & set(pq.read_schema(path).names), path
            received = pq.read_table(path, columns=["received_at"]).column("received_at").to_pylist()
            assert all(hour <= moment.replace(tzinfo=UTC) < hour + timedelta(hours=1) for moment in received), path


def test_a_filter_on_received_at_plans_only_its_hours_files(synced):
    lake, model = synced
    table = pyiceberg_table(table_folder(lake, "track_order_completed"))
    every = list(table.scan().plan_files())
    late = list(table.scan(row_filter=f"received_at >= '{LATE_HOUR.isoformat()}' AND "
                                      f"received_at < '{(LATE_HOUR + timedelta(hours=1)).isoformat()}'").plan_files())
    assert len(late) == 2 < len(every)  # the first run's file of the hour and the late one
    assert {task.file.partition[0] for task in late} == {hours_since_1970(LATE_HOUR)}
    rows = [r for r in model.rows["track_order_completed"] if r["day"] == "2024-03-04" and r["hr"] == "10"]
    counted = lake.spark.sql("SELECT count(*) FROM hidden_hours.track_order_completed WHERE received_at >= "
                             "TIMESTAMP '2024-03-04 10:00:00' AND received_at < TIMESTAMP '2024-03-04 11:00:00'")
    assert counted.first()[0] == len(rows) == 2


def write(folder: Path, name: str, events: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(e) + "\n" for e in events))


def test_after_a_compaction_an_old_replay_lands_nothing_twice_and_a_table_keeps_its_partitioning(spark, tmp_path):
    """A compaction merges an hour's two files into a folder Iceberg names for the hour and removes the old ones; the
    landed index then forgets the first days, so a replay of them reads the ids from the tables' folders, the hour's
    too. Then a run with the other setting: each table keeps the partitioning (and file columns) it was made with."""
    source = tmp_path / "input"
    lake = Lake(spark, LocalCatalog(spark), "local", f"file://{tmp_path}/lake", f"file://{source}", "hours2",
                "hidden_hours_replay", table_format="iceberg", iceberg_partitioning="hours")
    days = {"1704153600000": "2024-01-02", "1704240000000": "2024-01-03", "1705881600000": "2024-01-22"}
    for delivered, day in days.items():  # a sync a day; the last day is 20 days after the first
        write(source / delivered, "1.json", [_event("page", f"{day}-{n}", f"{day}T0{n}:00:00Z", userId=f"u{n}")
                                         for n in range(3)])
        lake.sync()
    write(source / "1704153600000", "late.json", [_event("page", "late", "2024-01-02T01:30:00Z", userId="u9")])
    assert lake.sync().row_count == 1  # a second file in the hour 2024-01-02 01
    Compaction(spark, lake.storage, lake.catalog, lake.layout, lake.database, "", "day_hour",
               progress=lambda line: None).run(0, 256)
    page = table_folder(lake, "page")
    merged = list((page / "received_at_hour=2024-01-02-01").glob("*.parquet"))
    assert len(merged) == 1 and not list((page / "day=2024-01-02/hr=01").glob("*.parquet"))
    landed = sorted([f"{day}-{n}" for day in days.values() for n in range(3)] + ["late"])

    replay = Sync(spark, replace(lake.settings(), replay=ReplayWindow(date(2024, 1, 1), date(2024, 1, 31))),
                  lake.catalog, progress=lambda line: None).run()
    assert (replay.read_count, replay.row_count, replay.duplicate_count) == (10, 0, 10)
    assert sorted(r["message_id"] for r in lake.rows("page")) == landed

    # the other setting: a new table takes it, each table made before keeps its own
    keys = replace(lake, iceberg_partitioning="keys")
    write(source / "1705968000000", "1.json", [_event("page", "p-23", "2024-01-23T00:00:00Z", userId="u1"),
                                               _event("identify", "i-23", "2024-01-23T00:00:01Z", userId="u1")])
    keys.sync()
    write(source / "1706054400000", "1.json", [_event("identify", "i-24", "2024-01-24T00:00:00Z", userId="u2")])
    lake.sync()
    identify = pyiceberg_table(table_folder(lake, "identify"))
    assert [str(f.transform) for f in identify.spec().fields] == ["identity", "identity"]
    assert [str(f.transform) for f in pyiceberg_table(page).spec().fields] == ["hour"]
    for table, keys_inside in ((page, False), (table_folder(lake, "identify"), True)):
        for file in table.rglob("*.parquet"):
            assert (set(KEYS) <= set(pq.read_schema(file).names)) is keys_inside, file
    assert [r["message_id"] for r in lake.rows("identify")] == ["i-23", "i-24"]
    assert sorted(r["message_id"] for r in lake.rows("page")) == sorted([*landed, "p-23"])
