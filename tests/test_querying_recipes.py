"""The querying docs' DuckDB and pyarrow recipes (docs/querying.md, "DuckDB and pyarrow"), run as the docs write
them against a lake of the sample events: they read the rows, days and timestamps the catalog's Spark reads."""
import re
import shutil
from collections import defaultdict
from pathlib import Path

import duckdb
import pytest
from sync_harness import Lake, make_catalog

pytestmark = [pytest.mark.spark]

REPO = Path(__file__).resolve().parents[1]
SOURCE = "Kq8dV1bX2c"  # the sample events' source, as `make demo` lands it in .demo/lake
SECTION = (REPO / "docs" / "querying.md").read_text().split("## DuckDB and pyarrow", 1)[1].split("\n## ", 1)[0]


def _recipe(language: str, lake: Path) -> str:
    """The section's one code block in ``language``, pointed at ``lake`` instead of the demo's."""
    [code] = re.findall(rf"```{language}\n(.*?)```", SECTION, re.S)
    assert ".demo/lake" in code
    return code.replace(".demo/lake", str(lake))


@pytest.fixture(scope="module")
def sample_lake(spark, tmp_path_factory):
    work = tmp_path_factory.mktemp("recipes")
    shutil.copytree(REPO / "workload" / "samples" / "segment-logs", work / "input" / "segment-logs")
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{work}/lake",
                f"file://{work}/input/segment-logs/{SOURCE}", SOURCE, "recipes")
    lake.sync()
    return work / "lake", lake.rows("track_order_completed")


def test_the_duckdb_recipe_counts_the_orders_and_revenue_of_each_day(sample_lake):
    path, orders = sample_lake
    by_day = defaultdict(list)
    for row in orders:
        by_day[row["day"]].append(row["properties_revenue"])
    found = duckdb.sql(_recipe("sql", path)).fetchall()
    assert len(found) >= 2  # the samples span two days
    assert found == [(day, len(values), sum(v for v in values if v is not None) if any(v is not None for v in values) else None)
                     for day, values in sorted(by_day.items())]


def test_the_pyarrow_recipe_reads_every_row_with_its_timestamps_and_partition_keys(sample_lake):
    path, orders = sample_lake
    namespace: dict = {}
    exec(_recipe("python", path), namespace)
    table = namespace["table"]
    read = sorted(table.select(["message_id", "received_at", "timestamp", "day", "hr"]).to_pylist(),
                  key=lambda r: (r["message_id"], str(r["received_at"])))
    assert read == [{key: row[key] for key in ("message_id", "received_at", "timestamp", "day", "hr")}
                    for row in orders]
