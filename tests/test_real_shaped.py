"""Real-shaped payloads (tests/real_shaped.py) through two syncs, every column of every landed row and
every discarded value checked against the rules of docs/lake-format.md as modelled in plain Python (tests/lake_model.py);
on Iceberg tables too, in a run whose Spark opens with Iceberg (test_contract_on_iceberg.py)."""
import json

import pytest
from iceberg_readers import spark_with_iceberg
from lake_model import Lake as Model
from real_shaped import RUN1, RUN2
from sync_harness import Lake

from segment_lake.catalog.local import LocalCatalog

pytestmark = pytest.mark.spark


def _lines(files):
    return {name: [json.dumps(event) for event in events] for name, events in files.items()}


def _lake(spark, root, name):
    return Lake(spark, LocalCatalog(spark), "local", f"file://{root}/{name}", f"file://{root}/input", "realShaped",
                name, table_format="iceberg" if spark_with_iceberg() else "parquet")


@pytest.fixture(scope="module")
def synced(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("real-shaped")
    lake = _lake(spark, root, "two_runs")
    model, results = Model(), []
    for number, run in enumerate((RUN1, RUN2)):
        folder = root / "input" / f"run{number}"
        folder.mkdir(parents=True)
        for name, lines in _lines(run).items():
            (folder / name).write_text("".join(line + "\n" for line in lines))
        results.append(lake.sync())
        model.sync({str(folder / name): lines for name, lines in _lines(run).items()}, results[-1].run_id)
    return lake, model, results, root


def test_the_tables_and_their_columns_follow_the_rules(synced):
    lake, model, _, _ = synced
    assert sorted(model.columns) == ["alias", "group", "identify", "page", "screen", "track_order_completed",
                                     "track_product_viewed", "track_subscription_renewed"]
    for table, columns in model.columns.items():
        assert lake.columns(table) == columns, table


def test_every_column_of_every_landed_row_follows_the_rules(synced):
    lake, model, _, _ = synced
    for table in model.columns:
        landed, expected = lake.rows(table), model.table_rows(table)
        assert [r["message_id"] for r in landed] == [r["message_id"] for r in expected], table
        for got, want in zip(landed, expected, strict=True):
            assert set(got) == set(want)  # every column of the table, nulls included
            assert got == want, (table, {k: (got[k], want[k]) for k in want if got[k] != want[k]})


def test_every_discarded_value_follows_the_rules(synced):
    lake, model, _, _ = synced

    def key(d):
        return (d["table_name"], d["column_name"], d["message_id"], d["received_at"], d["value"])
    landed = {key(d): d["reason"] for d in lake.discards()}
    assert sorted(landed) == sorted(key(d) for d in model.discards)
    assert {key(d): d["reason"] for d in model.discards} == landed


def test_every_dropped_duplicate_is_recorded_with_the_event_it_repeats(synced):
    lake, model, results, _ = synced
    recorded = [{**d, "file": d["file"].removeprefix("file://")} for d in lake.duplicates()]
    assert sorted(recorded, key=str) == sorted(model.duplicates, key=str)
    assert [r.duplicate_count for r in results] == [sum(d["run_id"] == r.run_id for d in recorded) for r in results]
    assert sum(r.row_count for r in results) == sum(len(rows) for rows in model.rows.values())


def test_one_run_over_all_the_files_lands_the_same_events(synced, spark):
    lake, model, _, root = synced
    together = _lake(spark, root, "one_run")
    assert together.sync().duplicate_count == 2
    for table in model.columns:
        assert ([(r["message_id"], r["received_at"]) for r in together.rows(table)]
                == [(r["message_id"], r["received_at"]) for r in lake.rows(table)])
