"""`--table-format iceberg` end to end: a sync of the sample events makes Apache Iceberg tables that two independent
readers (pyiceberg and DuckDB, from each table's metadata file alone) find with the same rows and values as the
Parquet lake of the same events; each table holds one snapshot per run that wrote to it, naming the run; a sync in the
other format is refused and loses nothing."""
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from iceberg_readers import comparable, duckdb_rows, pyiceberg_table
from lake_events import write_run1, write_run2

pytestmark = [pytest.mark.spark]

CLI = str(Path(sys.executable).with_name("segment-lake"))


def run(*args, cwd):
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def parquet_rows(folder: Path) -> list[dict]:
    """A Parquet lake table's rows, its partition keys taken from the folder names as Hive does."""
    rows = []
    for file in sorted(folder.rglob("*.parquet")):
        keys = dict(part.split("=", 1) for part in file.relative_to(folder).parent.parts)
        rows += [{**row, **keys} for row in pq.read_table(file).to_pylist()]
    return rows


def test_an_iceberg_lake_holds_the_parquet_lakes_rows_one_commit_a_table_and_run(tmp_path):
    write_run1(tmp_path / "input", "src1")
    common = ["sync", "--source-id", "src1", "--input", "input/segment-logs/src1"]

    def sync_both():
        parquet = run(*common, "--lake", "parquet", cwd=tmp_path)
        assert parquet.returncode == 0, parquet.stderr[-3000:]
        iceberg = run(*common, "--lake", "iceberg", "--table-format", "iceberg", cwd=tmp_path)
        assert iceberg.returncode == 0, iceberg.stderr[-3000:]
        return iceberg.stdout

    assert "synced src1: read 19, landed 11, duplicates 1, rejected 7" in sync_both()
    # a source's tables are of one format: the other is refused before anything is written, and nothing is lost
    write_run2(tmp_path / "input", "src1")
    refused = run(*common, "--lake", "iceberg", cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1].startswith(
        "segment-lake: error (invalid_settings): table src1.") and "in the iceberg format" in refused.stderr
    assert "synced src1: read 8, landed 6, duplicates 2" in sync_both()
    runs = [json.loads(report.read_text().splitlines()[0])["run_id"]
            for report in sorted((tmp_path / "iceberg/segment-data/reports").rglob("report.json"))]
    assert len(runs) == 2

    tables = tmp_path / "parquet/segment-data/data/src1"
    names = sorted(p.name for p in tables.iterdir())
    assert len(names) >= 5
    folders = [tmp_path / "iceberg/segment-data/data/src1" / name for name in names]
    for name, folder, read_by_duckdb in zip(names, folders, duckdb_rows(folders), strict=True):
        table = pyiceberg_table(folder)
        committed = [s.summary["segment-run-id"] for s in table.snapshots()]
        assert committed and set(committed) <= set(runs) and len(set(committed)) == len(committed), name
        columns = [f.name for f in table.schema().fields]
        assert columns[-2:] == ["day", "hr"]
        # the Parquet lake's rows as a reader of the table sees them: a column its file lacks is null
        expected = parquet_rows(tables / name)
        assert set().union(*expected) <= set(columns), name
        expected = [{column: row.get(column) for column in columns} for row in expected]
        assert comparable(table.scan().to_arrow().to_pylist()) == comparable(expected), name
        assert read_by_duckdb == comparable(expected), name

    # until they handle Iceberg tables: a compaction leaves them as they are, a deletion is refused and changes nothing
    snapshots = {name: [s.snapshot_id for s in pyiceberg_table(tmp_path / "iceberg/segment-data/data/src1" / name)
                        .snapshots()] for name in names}
    compacted = run("compact", "--lake", "iceberg", "--source-id", "src1", "--older-than", "0", cwd=tmp_path)
    assert compacted.returncode == 0, compacted.stderr[-2000:]
    assert f"{len(names)} Iceberg tables left as they are" in compacted.stdout + compacted.stderr
    deleted = run("delete-users", "--lake", "iceberg", "--source-id", "src1", "--user-id", "u1", cwd=tmp_path)
    assert deleted.returncode == 1 and deleted.stderr.strip().splitlines()[-1].startswith(
        "segment-lake: error (invalid_settings): delete-users does not handle Iceberg tables yet"), deleted.stderr
    assert snapshots == {name: [s.snapshot_id for s in pyiceberg_table(tmp_path / "iceberg/segment-data/data/src1" / name)
                                .snapshots()] for name in names}

    # a reader's command opens the lake with Iceberg without being told
    counted = run("sql", "--lake", "iceberg", "select count(*) from src1.identify", cwd=tmp_path)
    assert counted.returncode == 0, counted.stderr[-2000:]
    assert counted.stdout.splitlines()[-1] == str(len(parquet_rows(tables / "segment_type=identify"))) != "0"
