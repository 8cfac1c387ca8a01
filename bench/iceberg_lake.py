"""Issue 39's bench rows: the sync writing Apache Iceberg tables (`--table-format iceberg`) against the same sync
writing Parquet, on the same generated files, side by side in one run (the CLI, JVM start included; local mode, the
embedded catalog).

    python bench/iceberg_lake.py [--events 1000000] [--names-case 20000:1000]

Two cases, each format into a new lake of its own, the formats alternating: ``--events`` events over 50 event names
in two 2-hour windows (new tables, then known tables with new hours), and the many-tables case (``EVENTS:NAMES``,
first window only). For each run: wall time and peak RSS of the process tree, and what the catalog must hold and
take: a Parquet lake's catalog partitions (one per table and hour, each a catalog object and part of a catalog call)
against an Iceberg lake's commits (one per table and run) and the metadata files they wrote.
Writes bench/results/<date>-iceberg.json and prints the rows docs/performance.md shows.
"""
from __future__ import annotations

import argparse
import json
import shutil
from datetime import date
from pathlib import Path

from run import CLI, ROOT, SOURCE, generated, timed, warm_up


def catalog_load(lake: Path) -> dict:
    """What the run's tables ask of a catalog: Hive-style partitions (folders of a Parquet table), or Iceberg commits
    (snapshots of the newest metadata file) and metadata files (without a local disk's checksum files)."""
    tables = sorted((lake / "segment-data" / "data" / SOURCE).glob("segment_type=*"))
    iceberg = [t for t in tables if (t / "metadata").is_dir()]
    if not iceberg:
        return {"tables": len(tables), "catalog_partitions": sum(len(list(t.glob("*=*/*=*"))) for t in tables)}
    commits = sum(len(json.loads(max((t / "metadata").glob("*.metadata.json")).read_text()).get("snapshots", []))
                  for t in iceberg)
    return {"tables": len(tables), "catalog_partitions": 0, "iceberg_commits": commits,
            "metadata_files": sum(1 for t in iceberg for f in (t / "metadata").glob("*") if f.suffix != ".crc")}


def sync(work: Path, case: str, run: str, events: int, source: Path, table_format: str) -> dict:
    lake = work / f"lake-{case}-{table_format}"
    record = timed(f"sync {table_format}", case, run, events, source, [
        CLI, "sync", "--source-id", SOURCE, "--input", str(source), "--lake", str(lake),
        "--table-format", table_format])
    record.update(table_format=table_format, **catalog_load(lake))
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--names-case", default="20000:1000", help="EVENTS:NAMES of the many-tables case")
    parser.add_argument("--results", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    work = ROOT / ".cache" / "bench-iceberg"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    warm_up(work)
    names_events, names = (int(part) for part in args.names_case.split(":"))
    records = []
    for case, events, names_count, windows in ((f"{args.events}", args.events, 50, ("first", "second")),
                                               (f"{names}-tables", names_events, names, ("first",))):
        for window, run in enumerate(windows):
            source = generated(events, names_count, window)
            for table_format in ("parquet", "iceberg"):
                records.append(sync(work, case, run, events, source, table_format))
    shutil.rmtree(work, ignore_errors=True)
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{date.today()}-iceberg.json").write_text(json.dumps(records, indent=1))
    print("| case | run | format | seconds | peak RSS MB | catalog partitions | Iceberg commits | metadata files |")
    for r in records:
        print(f"| {r['case']} | {r['run']} | {r['table_format']} | {r['seconds']} | {r['peak_rss_mb']} | "
              f"{r['catalog_partitions']} | {r.get('iceberg_commits', '')} | {r.get('metadata_files', '')} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
