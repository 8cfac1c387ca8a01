"""Real-shaped payloads (tests/real_shaped.py) through two syncs, every column of every landed row and
every discarded value checked against the README's rules as modelled in plain Python (tests/lake_model.py)."""
import json

import pytest
from lake_model import Lake as Model
from real_shaped import RUN1, RUN2
from sync_harness import Lake
from segment_lake.catalog.local import LocalCatalog


def _lines(files):
    return {name: [json.dumps(event) for event in events] for name, events in files.items()}


@pytest.fixture(scope="module")
def synced(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("real-shaped")
    lake = Lake(spark, LocalCatalog(spark), "local", f"file://{root}/lake", f"file://{root}/input", "realShaped",
                "real_shaped")
    model, results = Model(), []
    for number, run in enumerate((RUN1, RUN2)):
        folder = root / "input" / f"run{number}"
        folder.mkdir(parents=True)
        for name, lines in _lines(run).items():
            (folder / name).write_text("".join(line + "\n" for line in lines))
        model.sync({f"run{number}/{name}": lines for name, lines in _lines(run).items()})
        results.append(lake.sync())
    return lake, model, results


def test_the_tables_and_their_columns_follow_the_rules(synced):
    lake, model, _ = synced
    assert sorted(model.columns) == ["alias", "group", "identify", "page", "screen", "track_order_completed",
                                     "track_product_viewed", "track_subscription_renewed"]
    for table, columns in model.columns.items():
        assert lake.columns(table) == columns, table


def test_every_column_of_every_landed_row_follows_the_rules(synced):
    lake, model, _ = synced
    for table in model.columns:
        landed, expected = lake.rows(table), model.table_rows(table)
        assert [r["message_id"] for r in landed] == [r["message_id"] for r in expected], table
        for got, want in zip(landed, expected):
            assert set(got) == set(want)  # every column of the table, nulls included
            assert got == want, (table, {k: (got[k], want[k]) for k in want if got[k] != want[k]})


def test_every_discarded_value_follows_the_rules(synced):
    lake, model, _ = synced
    def key(d):
        return (d["table_name"], d["column_name"], d["message_id"], d["received_at"], d["value"])
    landed = {key(d): d["reason"] for d in lake.discards()}
    assert sorted(landed) == sorted(key(d) for d in model.discards)
    for discard in model.discards:
        assert discard["reason"] is None or landed[key(discard)] == discard["reason"]


def test_the_reports_count_what_the_model_lands(synced):
    _, model, results = synced
    assert sum(r.row_count for r in results) == sum(len(rows) for rows in model.rows.values())
    assert [r.duplicate_count for r in results] == [1, 1]
    assert [r.rejected_count for r in results] == [0, 0]
