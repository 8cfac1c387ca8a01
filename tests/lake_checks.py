"""What must hold of a source's lake after any crash and a re-run, checked from the files (and the catalog when
given): every accepted event once, nothing pending or locked, every input file processed, the reports balanced,
and the catalog's tables and partitions those the files hold."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import Counter
from pathlib import Path


def harness_arguments(doc: str, trials: int | None, events: int, work: str) -> argparse.Namespace:
    """A harness's command line (--trials, --events, --seed, --work; None trials: all), its work folder emptied, and
    the sync app importable from the checkout."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--trials", type=int, default=trials, help=f"default {trials or 'all'}")
    parser.add_argument("--events", type=int, default=events)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path(work))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workload" / "src"))
    return args


def crash_points_main(doc: str, name: str, run_trials) -> int:
    """The command of a harness whose ``run_trials(spark, work, trials, events, seed)`` dies at each write of one
    command (``name``, e.g. "deletion crash points"): prints the summary."""
    args = harness_arguments(doc, trials=None, events=3000, work=f".cache/{name.replace(' ', '-')}")
    from segment_lake.session import build_session

    spark = build_session(name, f"file://{args.work.resolve()}/metastore-lake")
    print(json.dumps(run_trials(spark, args.work.resolve(), args.trials, args.events, args.seed)))
    return 0


def lake_events(lake: Path, source: str) -> Counter:
    """(table, message_id, received_at) of every row in the source's table files, counted; read with pyarrow, not the
    engine that wrote them (and not a Spark query per table: 10-30 a trial)."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    from parquet_reader import FORMAT

    found: Counter = Counter()
    schema = pa.schema([("message_id", pa.string()), ("received_at", pa.timestamp("us"))])
    for table in sorted((lake / "segment-data" / "data" / source).glob("segment_type=*")):
        rows = ds.dataset(str(table), format=FORMAT, schema=schema).to_table().to_pylist()
        found.update((table.name, row["message_id"], row["received_at"]) for row in rows)
    return found


def _reports(lake: Path) -> list[list[dict]]:
    return [[json.loads(line) for line in path.read_text().splitlines()]
            for path in sorted((lake / "segment-data" / "reports").rglob("report.json"))]


def check_lake(lake: Path, source: str, input_dir: Path, catalog=None, database: str | None = None) -> Counter:
    """Asserts the invariants; returns the events (see ``lake_events``) for comparison with a reference."""
    events = lake_events(lake, source)
    assert events and max(events.values()) == 1, f"{sum(c - 1 for c in events.values())} events doubled"

    state = lake / "segment-data" / "state" / source
    assert not (state / "pending.json").exists(), "a run is still pending"
    assert not (state / "lock.json").exists(), "the lock was left behind"
    assert not list((lake / "segment-stage").rglob("*.parquet")), "staged files were left behind"
    processed = set()
    for file in (state / "processed").glob("*.json"):
        processed.update(json.loads(file.read_text())["files"])
    assert {Path(p.split(":", 1)[1]).resolve() for p in processed} == set(input_dir.resolve().rglob("*.gz"))

    finished = [lines for lines in _reports(lake) if lines[0]["status"] == "finished"]
    for source_line, *tables in finished:
        assert source_line["read_count"] == (source_line["row_count"] + source_line["duplicate_count"]
                                             + source_line["rejected_count"]
                                             + source_line.get("suppressed_count", 0)), source_line
        assert source_line["row_count"] == sum(t["row_count"] for t in tables), source_line
    reported = sum(lines[0]["row_count"] for lines in finished)
    assert reported == sum(events.values()), f"the reports count {reported} rows, the lake has {sum(events.values())}"

    if catalog is not None:
        from parquet_reader import file_schemas

        for table_dir in sorted((lake / "segment-data" / "data" / source).glob("segment_type=*")):
            table = table_dir.name.split("=", 1)[1]
            on_disk = {tuple(part.split("=", 1)[1] for part in f.parent.relative_to(table_dir).parts)
                       for f in table_dir.rglob("*.parquet")}
            columns = catalog.tables_columns(database, [table])[table]
            assert columns is not None, f"table {table} has files and no catalog entry"
            file_columns = {name for schema in file_schemas(f"file://{table_dir}").values() for name in schema.names}
            assert file_columns <= {name for name, _ in columns}, f"{table}: columns missing from the catalog"
            assert catalog.partitions(database, table) == on_disk, f"{table}: the catalog's partitions differ"
    return events
