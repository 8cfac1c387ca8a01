"""`--table-format iceberg` end to end on real-shaped payloads (tests/real_shaped.py): two syncs make Apache Iceberg
tables that two independent readers (pyiceberg and DuckDB, from each table's metadata file alone) find with the
columns, types and rows of the lake contract as modelled in plain Python (tests/lake_model.py); each table holds one
snapshot per run that wrote to it, naming the run, and the discarded values and dropped duplicates are recorded as
in the Parquet lake; a sync in the other format is refused and loses nothing; a user deletion removes the users' rows
in one snapshot a table naming the deletion, and a compaction merges files and expires the snapshots that still
named the deleted rows' files."""
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from iceberg_readers import comparable, duckdb_rows, pyiceberg_table
from lake_model import Lake as Model
from real_shaped import RUN1, RUN2, _event

pytestmark = [pytest.mark.spark]

CLI = str(Path(sys.executable).with_name("segment-lake"))
# Iceberg's types (pyiceberg's names) as the contract's
TYPES = {"string": "string", "long": "bigint", "decimal(38, 6)": "decimal(38,6)", "timestamptz": "timestamp",
         "boolean": "boolean"}
DISCARD_KEYS = ("table_name", "column_name", "message_id", "received_at", "value", "reason")
DELETED_USER = "user_7"
# a second file in an hour of the first run's, which a compaction merges
LATE = {"late.json": [_event("track", "late-1", "2024-03-04T10:30:00Z", userId="user_8812", event="Order Completed",
                             properties={"revenue": 3})]}


def run(*args, cwd):
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=600)


# the days Segment delivered each run's files (the input's day folders)
DAYS = ("1709510400000", "1709683200000")  # 2024-03-04, 2024-03-06


def write_input(root: Path, day: str, files: dict) -> dict[str, list[str]]:
    """Files of one delivery day below the source's input folder; the lines of every file of that day (a run reads
    those it has not read yet, a replay all of them), by the name the sync reports."""
    folder = root / "input" / day
    folder.mkdir(parents=True, exist_ok=True)
    for name, events in files.items():
        (folder / name).write_text("".join(json.dumps(event) + "\n" for event in events))
    return {str(file): file.read_text().splitlines() for file in sorted(folder.iterdir())}


def new_run(lake: Path, runs: list[str]) -> str:
    """The run id of the newest report, which must be a new run's."""
    reports = sorted((lake / "segment-data/reports").rglob("report.json"))
    runs.append(json.loads(reports[-1].read_text().splitlines()[0])["run_id"])
    assert len(set(runs)) == len(runs)
    return runs[-1]


def snapshots(folder: Path) -> list:
    return pyiceberg_table(folder).snapshots()


def test_an_iceberg_lake_holds_the_contracts_rows_one_commit_a_table_and_run(tmp_path):
    model, runs = Model(), []
    sync = ["sync", "--source-id", "src1", "--input", "input", "--lake", "lake"]
    for number, files in enumerate((RUN1, {**RUN2, **LATE})):
        lines = write_input(tmp_path, DAYS[number], files)
        if number:  # a source's tables are of one format: the other is refused before anything is written
            refused = run(*sync, cwd=tmp_path)
            assert refused.returncode == 1
            assert refused.stderr.strip().splitlines()[-1].startswith(
                "segment-lake: error (invalid_settings): table src1.") and "in the iceberg format" in refused.stderr
        synced = run(*sync, "--table-format", "iceberg", cwd=tmp_path)  # the refused run's events too: none lost
        assert synced.returncode == 0, synced.stderr[-3000:]
        model.sync(lines, new_run(tmp_path / "lake", runs))
    # (a replay of an Iceberg source: tests/test_iceberg_in_glue.py, and test_iceberg_partitioning.py's old window)

    tables = tmp_path / "lake/segment-data/data/src1"
    assert sorted(p.name for p in tables.iterdir()) == [f"segment_type={name}" for name in sorted(model.columns)]
    folders = [tables / f"segment_type={name}" for name in sorted(model.columns)]
    for name, folder, read_by_duckdb in zip(sorted(model.columns), folders, duckdb_rows(folders), strict=True):
        table = pyiceberg_table(folder)
        committed = [s.summary["segment-run-id"] for s in table.snapshots()]
        assert committed == [run_id for run_id in runs if run_id in model_runs(model, name)], name  # one a run
        assert [(f.name, TYPES[str(f.field_type)]) for f in table.schema().fields] == \
            [*model.columns[name], ("day", "string"), ("hr", "string")], name
        expected = comparable(model.table_rows(name))
        assert comparable(table.scan().to_arrow().to_pylist()) == expected, name
        assert read_by_duckdb == expected, name

    # each run's report adds up, and the runs landed the model's rows
    reports = [[json.loads(line) for line in report.read_text().splitlines()]
               for report in sorted((tmp_path / "lake/segment-data/reports").rglob("report.json"))]
    assert [lines[0]["status"] for lines in reports] == ["finished"] * len(runs)  # the refused run made none
    for source_line, *table_lines in reports:
        assert source_line["read_count"] == (
            source_line["row_count"] + source_line["duplicate_count"] + source_line["rejected_count"]), source_line
        assert source_line["row_count"] == sum(line["row_count"] for line in table_lines)
    assert sum(lines[0]["row_count"] for lines in reports) == sum(map(len, model.rows.values()))

    # the records beside the tables are the Parquet lake's: every discarded value and dropped duplicate
    records = tmp_path / "lake/segment-data"
    discards = pq.read_table(records / "discards/src1").to_pylist()
    assert comparable([{k: d[k] for k in DISCARD_KEYS} for d in discards]) == \
        comparable([{k: d[k] for k in DISCARD_KEYS} for d in model.discards])
    duplicates = pq.read_table(records / "state/src1/duplicates").to_pylist()
    assert comparable([{**d, "file": d["file"].removeprefix("file://")} for d in duplicates]) == \
        comparable(model.duplicates)

    # a deletion: one snapshot naming it in each table that held the user's rows, and the rows gone for every reader
    before = {folder.name: [s.snapshot_id for s in snapshots(folder)] for folder in folders}
    deleted = run("delete-users", "--lake", "lake", "--source-id", "src1", "--user-id", DELETED_USER, cwd=tmp_path)
    assert deleted.returncode == 0, deleted.stderr[-3000:]
    held = {name for name in model.columns if any(r.get("user_id") == DELETED_USER for r in model.rows[name])}
    rows = sum(r.get("user_id") == DELETED_USER for name in held for r in model.rows[name])
    assert held and f"deleted {rows} rows of 1 id from {len(held)} tables" in deleted.stdout, deleted.stdout
    deletion = Path(deleted.stdout.split("report: ")[1].split()[0]).stem
    for name, folder in zip(sorted(model.columns), folders, strict=True):
        after = snapshots(folder)
        assert [s.snapshot_id for s in after[:len(before[folder.name])]] == before[folder.name]
        assert [s.summary.get("segment-deletion-id") for s in after[len(before[folder.name]):]] == \
            ([deletion] if name in held else []), name
        expected = comparable([r for r in model.table_rows(name) if r.get("user_id") != DELETED_USER])
        assert comparable(pyiceberg_table(folder).scan().to_arrow().to_pylist()) == expected, name

    # the files that held the user's rows stay until their snapshots expire: a compaction expires them, and merges
    assert users_files(tables)
    compacted = run("compact", "--lake", "lake", "--source-id", "src1", "--older-than", "0", cwd=tmp_path)
    assert compacted.returncode == 0, compacted.stderr[-2000:]
    assert (f"compact: {len(folders)} Iceberg tables through Iceberg: 2 files merged into 1, "
            in compacted.stdout + compacted.stderr), compacted.stderr[-2000:]
    assert not users_files(tables)
    for name, folder in zip(sorted(model.columns), folders, strict=True):
        table = pyiceberg_table(folder)
        assert len(table.snapshots()) == 1, name
        expected = comparable([r for r in model.table_rows(name) if r.get("user_id") != DELETED_USER])
        assert comparable(table.scan().to_arrow().to_pylist()) == expected, name
        live = [task.file.file_path for task in table.scan().plan_files()]
        assert sorted(p for p in folder.rglob("*.parquet")) == sorted(Path(p.removeprefix("file:")) for p in live)
        assert not (folder / "data").exists()  # Iceberg's own files go to the partition folders too

    # a reader's command opens the lake with Iceberg without being told
    counted = run("sql", "--lake", "lake", "select count(*) from src1.identify", cwd=tmp_path)
    assert counted.returncode == 0, counted.stderr[-2000:]
    assert counted.stdout.splitlines()[-1] == str(sum(r.get("user_id") != DELETED_USER for r in model.rows["identify"]))


def model_runs(model: Model, table: str) -> set[str]:
    """The runs that landed a row of ``table`` in the model (by the kept events' runs)."""
    ids = {row["message_id"] for row in model.rows[table]}
    return {run for message_id, kept in model.kept.items() if message_id in ids for _, run in kept}


def users_files(tables: Path) -> list[Path]:
    """The Parquet files below the tables that hold a row of DELETED_USER."""
    return [file for file in tables.rglob("*.parquet")
            if "user_id" in pq.read_schema(file).names
            and DELETED_USER in pq.read_table(file, columns=["user_id"]).column("user_id").to_pylist()]
