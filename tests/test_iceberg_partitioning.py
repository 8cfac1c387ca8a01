"""`--iceberg-partitioning hours`: Iceberg tables partitioned by the hour of received_at (Iceberg's hidden `hours`
transform), without the date partition's key columns. Real-shaped payloads in two syncs, the second with a late file
in an hour of the first, read by pyiceberg and DuckDB against the lake model less its keys; a scan filtered on
received_at plans only that hour's files; a compaction merges the late file's hour. Its Spark must open with Iceberg:
test_contract_on_iceberg.py runs this module (conftest.ICEBERG_SESSION_MODULES)."""
import json
from datetime import UTC, datetime, timedelta
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

pytestmark = pytest.mark.spark

KEYS = ("day", "hr")
# a second file in an hour of the first run's, which a compaction merges
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


def folder(lake: Lake, table: str) -> Path:
    return Path(urlparse(lake.location(table)).path)


def without_keys(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in KEYS} for row in rows]


def test_each_table_is_partitioned_by_the_hour_of_received_at_and_has_no_key_columns(synced):
    lake, model = synced
    for name, columns in model.columns.items():
        table = pyiceberg_table(folder(lake, name))
        assert [(f.name, str(f.transform), table.schema().find_column_name(f.source_id))
                for f in table.spec().fields] == [("received_at_hour", "hour", "received_at")], name
        assert [f.name for f in table.schema().fields] == [column for column, _ in columns], name
        assert lake.columns(name) == columns, name  # the catalog's columns: received_at is not taken for a key


def test_every_reader_reads_the_models_rows_without_the_keys(synced):
    lake, model = synced
    names = sorted(model.columns)
    by_duckdb = duckdb_rows([folder(lake, name) for name in names])
    for name, read_by_duckdb in zip(names, by_duckdb, strict=True):
        expected = comparable(without_keys(model.table_rows(name)))
        assert comparable(pyiceberg_table(folder(lake, name)).scan().to_arrow().to_pylist()) == expected, name
        assert read_by_duckdb == expected, name
        counted = lake.spark.sql(f"SELECT count(*) FROM hidden_hours.`{name}`").first()[0]
        assert counted == len(model.rows[name]), name


def test_each_file_is_in_its_hours_partition_and_folder_and_holds_no_keys(synced):
    lake, model = synced
    for name in model.columns:
        for task in pyiceberg_table(folder(lake, name)).scan().plan_files():
            path = Path(urlparse(task.file.file_path).path)
            hour = datetime.strptime(f"{path.parent.parent.name} {path.parent.name}", "day=%Y-%m-%d hr=%H")
            hour = hour.replace(tzinfo=UTC)
            assert task.file.partition[0] == hours_since_1970(hour), path
            assert not set(KEYS) & set(pq.read_schema(path).names), path
            received = pq.read_table(path, columns=["received_at"]).column("received_at").to_pylist()
            assert all(hour <= moment.replace(tzinfo=UTC) < hour + timedelta(hours=1) for moment in received), path


def test_a_filter_on_received_at_plans_only_its_hours_files(synced):
    lake, model = synced
    table = pyiceberg_table(folder(lake, "track_order_completed"))
    every = list(table.scan().plan_files())
    late = list(table.scan(row_filter=f"received_at >= '{LATE_HOUR.isoformat()}' AND "
                                      f"received_at < '{(LATE_HOUR + timedelta(hours=1)).isoformat()}'").plan_files())
    assert len(late) == 2 < len(every)  # the first run's file of the hour and the late one
    assert {task.file.partition[0] for task in late} == {hours_since_1970(LATE_HOUR)}
    rows = [r for r in model.rows["track_order_completed"] if r["day"] == "2024-03-04" and r["hr"] == "10"]
    counted = lake.spark.sql("SELECT count(*) FROM hidden_hours.track_order_completed WHERE received_at >= "
                             "TIMESTAMP '2024-03-04 10:00:00' AND received_at < TIMESTAMP '2024-03-04 11:00:00'")
    assert counted.first()[0] == len(rows) == 2


def test_a_compaction_merges_an_hours_files_and_keeps_the_rows(synced):
    """Last: it changes the lake."""
    lake, model = synced
    progress = []
    Compaction(lake.spark, lake.storage, lake.catalog, lake.layout, lake.database, "", "day_hour",
               progress=progress.append).run(0, 256)
    assert any("2 files merged into 1" in line for line in progress), progress
    table = pyiceberg_table(folder(lake, "track_order_completed"))
    assert len(table.snapshots()) == 1
    late = [task for task in table.scan().plan_files() if task.file.partition[0] == hours_since_1970(LATE_HOUR)]
    assert len(late) == 1
    for name in model.columns:
        expected = comparable(without_keys(model.table_rows(name)))
        assert comparable(pyiceberg_table(folder(lake, name)).scan().to_arrow().to_pylist()) == expected, name
