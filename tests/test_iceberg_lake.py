"""`--table-format iceberg` end to end: a sync of the sample events makes Apache Iceberg tables that an independent
reader (pyiceberg, from each table's metadata file alone) finds with the same rows and values as the Parquet lake of
the same events; each table holds one snapshot naming the run, and the next sync commits nothing."""
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from lake_events import write_run1
from pyiceberg.table import StaticTable

pytestmark = [pytest.mark.spark]

CLI = str(Path(sys.executable).with_name("segment-lake"))


def run(*args, cwd):
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def iceberg_table(folder: Path) -> StaticTable:
    """A table as its newest metadata file describes it."""
    return StaticTable.from_metadata(str(max((folder / "metadata").glob("*.metadata.json"))))


def parquet_rows(folder: Path) -> list[dict]:
    """A Parquet lake table's rows, its partition keys taken from the folder names as Hive does."""
    rows = []
    for file in sorted(folder.rglob("*.parquet")):
        keys = dict(part.split("=", 1) for part in file.relative_to(folder).parent.parts)
        rows += [{**row, **keys} for row in pq.read_table(file).to_pylist()]
    return rows


def comparable(rows: list[dict]) -> list[str]:
    """Rows as sorted JSON, timestamps as UTC instants whatever their Parquet type."""
    def value(v):
        return v.astimezone().timestamp() if hasattr(v, "astimezone") else v
    return sorted(json.dumps({k: value(v) for k, v in row.items()}, sort_keys=True, default=str) for row in rows)


def test_an_iceberg_lake_holds_the_parquet_lakes_rows_one_commit_a_table_and_run(tmp_path):
    write_run1(tmp_path / "input", "src1")
    common = ["sync", "--source-id", "src1", "--input", "input/segment-logs/src1"]
    parquet = run(*common, "--lake", "parquet", cwd=tmp_path)
    assert parquet.returncode == 0, parquet.stderr[-3000:]
    first = run(*common, "--lake", "iceberg", "--table-format", "iceberg", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "synced src1: read 19, landed 11, duplicates 1, rejected 7" in first.stdout
    run_id = json.loads(next((tmp_path / "iceberg/segment-data/reports").rglob("report.json")).read_text()
                        .splitlines()[0])["run_id"]

    tables = tmp_path / "parquet/segment-data/data/src1"
    names = sorted(p.name for p in tables.iterdir())
    assert len(names) >= 5
    for name in names:
        table = iceberg_table(tmp_path / "iceberg/segment-data/data/src1" / name)
        assert [s.summary["segment-run-id"] for s in table.snapshots()] == [run_id], name
        assert [f.name for f in table.schema().fields][-2:] == ["day", "hr"]
        assert comparable(table.scan().to_arrow().to_pylist()) == comparable(parquet_rows(tables / name)), name

    again = run(*common, "--lake", "iceberg", "--table-format", "iceberg", cwd=tmp_path)
    assert again.returncode == 0 and "read 0, landed 0" in again.stdout, again.stderr[-2000:]
    # a reader's command opens the lake with Iceberg without being told
    counted = run("sql", "--lake", "iceberg", "select count(*) from src1.identify", cwd=tmp_path)
    assert counted.returncode == 0, counted.stderr[-2000:]
    assert counted.stdout.splitlines()[-1] == str(len(parquet_rows(tables / "segment_type=identify"))) != "0"
