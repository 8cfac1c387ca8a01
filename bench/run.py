"""`make bench`: the sync against DuckDB on the same generated files, end to end, in one run.

    python bench/run.py [--sizes 250000,1000000,4000000] [--names-case 20000:1000] [--results bench/results]

For each size, `segment-lake generate` writes two 2-hour windows of one source (50 event names).
The sync CLI (JVM start included) lands the first window in a new lake (new tables), then replays
that window (`segment-lake replay`: every event is already landed, so every one is a duplicate),
then lands the second (existing tables, casts); DuckDB (bench/duckdb_equivalent.py) processes the
same files right after each sync (a replay has no DuckDB equivalent: it compares with the first run).
The many-tables case is 20,000 events over 1,000 event names, first run only. The cluster case syncs the first window
of one size twice into new lakes: in local mode (one JVM, as `segment-lake sync` runs) and under spark-submit with
executors in JVMs of their own (`local-cluster`, as on EMR's YARN), and checks that both landed the same counts.
The S3 + Glue case
(bench/round_trips.py) syncs the same source into moto's S3 and Glue at 40 ms a request: a first and an hourly sync.
Every run is a subprocess measured for wall time and the peak RSS of its process tree.

Writes bench/results/<date>.json and <date>.png (time against events, both tools) and prints the
table docs/performance.md shows. Generated input is kept in .cache/bench/ for the next run.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

from measure import measure

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / ".cache" / "bench"
CLI = str(Path(sys.executable).with_name("segment-lake"))
SOURCE = "src0001"
REPLAY_DAY = "2024-01-02"  # the day of the first window (generated below)


def generated(events: int, names: int, window: int) -> Path:
    """The input folder of one 2-hour window (0 or 1) of ``events`` lines over ``names`` event names."""
    folder = DATA / f"e{events}-n{names}-w{window}"
    done = folder / ".complete"
    if not done.exists():
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run([CLI, "generate", "--output", str(folder), "--events", str(events), "--event-names", str(names),
                        "--hours", "2", "--start", f"2024-01-02T{2 * window:02d}", "--seed", str(window + 1)],
                       check=True, stdout=subprocess.DEVNULL)
        done.touch()
    return folder / "segment-logs" / SOURCE


def size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*.gz")) / 2**20


def timed(tool: str, case: str, run: str, events: int, source: Path, command: list[str]) -> dict:
    result = measure(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if result["returncode"] != 0:
        raise SystemExit(f"{tool} failed on {case} {run}: exit code {result['returncode']}")
    cores = len(os.sched_getaffinity(0))
    megabytes = size_mb(source)
    record = {"tool": tool, "case": case, "run": run, "events": events, "seconds": result["seconds"],
              "events_per_s": round(events / result["seconds"]),
              "events_per_s_per_core": round(events / result["seconds"] / cores),
              "input_mb": round(megabytes, 1), "input_mb_per_s": round(megabytes / result["seconds"], 2),
              "peak_rss_mb": result["peak_rss_mb"], "cores": cores}
    print(json.dumps(record), flush=True)
    return record


def case(work: Path, name: str, events: int, names: int, windows: int) -> list[dict]:
    """Sync and DuckDB, alternating, over ``windows`` consecutive windows of the same source."""
    lake, records = work / f"lake-{name}", []
    for window, run in list(enumerate(["first", "second"]))[:windows]:
        source = generated(events, names, window)
        records.append(timed("sync", name, run, events, source, [
            CLI, "sync", "--source-id", SOURCE, "--input", str(source), "--lake", str(lake)]))
        output = work / f"duckdb-{name}-{run}"
        records.append(timed("duckdb", name, run, events, source, [
            sys.executable, str(Path(__file__).with_name("duckdb_equivalent.py")), "--input", str(source),
            "--output", str(output)]))
        shutil.rmtree(output, ignore_errors=True)
        if run == "first" and windows > 1:
            records.append(timed("sync", name, "replay", events, source, [
                CLI, "replay", "--source-id", SOURCE, "--input", str(source), "--lake", str(lake),
                "--from", REPLAY_DAY, "--to", REPLAY_DAY]))
    shutil.rmtree(lake, ignore_errors=True)
    return records


def cluster_case(work: Path, events: int, executors: int = 2, executor_mb: int = 1024) -> list[dict]:
    """The first window of ``events`` synced in local mode and with ``executors`` executor JVMs of one core each."""
    source, records, reports = generated(events, 50, 0), [], {}
    spark_submit = str(Path(sys.executable).with_name("spark-submit"))
    jars = os.environ.get("SEGMENT_LAKE_SPARK_JARS", "")
    entry = str(ROOT / "workload" / "emr" / "step_entry.py")
    import pyspark

    python = f"PYSPARK_PYTHON={sys.executable}"  # the driver and executors' Python, which imports the sync
    for run, launcher in (("local", [CLI]), ("local-cluster", [
            "env", f"SPARK_HOME={Path(pyspark.__file__).parent}", python, f"PYSPARK_DRIVER_PYTHON={sys.executable}",
            spark_submit, "--master", f"local-cluster[{executors},1,{executor_mb + 512}]", "--executor-memory",
            f"{executor_mb}m", "--driver-memory", "2g", *(["--jars", jars] if jars else []), entry])):
        lake = work / f"lake-cluster-{run}"
        records.append(timed("sync", f"cluster-{events}", run, events, source, [
            *launcher, "sync", "--source-id", SOURCE, "--input", str(source), "--lake", str(lake)]))
        [report] = (lake / "segment-data" / "reports").rglob("report.json")
        lines = [json.loads(line) for line in report.read_text().splitlines()]  # the source's, then each table's
        reports[run] = {line["table_name"] or "source": (line["row_count"], line.get("read_count"),
                                                         line.get("duplicate_count"), line.get("rejected_count"))
                        for line in lines}
        shutil.rmtree(lake, ignore_errors=True)
    if reports["local"] != reports["local-cluster"]:
        raise SystemExit(f"local mode and local-cluster landed different counts: {reports}")
    return records


def warm_up(work: Path) -> None:
    """One small sync, not measured: the first local sync records the JVM's class archive as it exits (about 15 s,
    once per java and jars; operations.md, The JVM's start), which every measured command then maps, as a user's
    second and later commands do."""
    source = generated(1000, 50, 0)
    subprocess.run([CLI, "sync", "--source-id", SOURCE, "--input", str(source), "--lake", str(work / "warm-up")],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(work / "warm-up")


def exponent(records: list[dict], tool: str) -> float | None:
    """Least-squares slope of log(seconds) against log(events) over the first runs of the size cases."""
    points = [(math.log(r["events"]), math.log(r["seconds"])) for r in records
              if r["tool"] == tool and r["run"] == "first" and r["case"].startswith("size")]
    if len(points) < 2:
        return None
    mean_x, mean_y = sum(x for x, _ in points) / len(points), sum(y for _, y in points) / len(points)
    return round(sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points), 2)


def plot(records: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    for tool, marker in (("sync", "o"), ("duckdb", "s")):
        for run, style in (("first", "-"), ("second", "--")):
            points = sorted((r["events"], r["seconds"]) for r in records
                            if r["tool"] == tool and r["run"] == run and r["case"].startswith("size"))
            if points:
                axes.plot(*zip(*points, strict=True), style, marker=marker, label=f"{tool}, {run} run")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("events per run")
    axes.set_ylabel("wall seconds, end to end")
    axes.set_title(f"segment-lake sync vs DuckDB, {records[0]['cores']} cores, 50 event names")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def table(records: list[dict]) -> str:
    duck = {(r["case"], r["run"]): r["seconds"] for r in records if r["tool"] == "duckdb"}
    lines = ["| case | run | events | sync s | events/s/core | input MB/s | peak RSS MB | DuckDB s | sync/DuckDB |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in records:
        if r["tool"] == "sync":
            other = duck.get((r["case"], r["run"]))
            lines.append(f"| {r['case']} | {r['run']} | {r['events']:,} | {r['seconds']} | {r['events_per_s_per_core']:,} "
                         f"| {r['input_mb_per_s']} | {r['peak_rss_mb']:,} | {other or '-'} | "
                         f"{round(r['seconds'] / other, 2) if other else ''} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="250000,1000000,4000000", help="events per run, comma-separated")
    parser.add_argument("--names-case", default="20000:1000", help="EVENTS:NAMES of the many-tables case ('' to skip)")
    parser.add_argument("--cluster-case", default="1000000",
                        help="events of the local mode against local-cluster case ('' to skip)")
    parser.add_argument("--round-trips", default="20000:1000:40",
                        help="EVENTS:NAMES:MS of the S3 + Glue case at MS a request ('' to skip)")
    parser.add_argument("--results", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    work = DATA / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    warm_up(work)
    records = []
    for events in (int(size) for size in args.sizes.split(",") if size):
        records += case(work, f"size-{events}", events, 50, windows=2)
    if args.names_case:
        events, names = (int(part) for part in args.names_case.split(":"))
        records += case(work, f"names-{names}", events, names, windows=1)
    if args.cluster_case:
        records += cluster_case(work, int(args.cluster_case))
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    stem = results / date.today().isoformat()
    summary = {"records": records, "exponent": {tool: exponent(records, tool) for tool in ("sync", "duckdb")}}
    stem.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    plot(records, stem.with_suffix(".png"))
    print(table(records))
    first = {r["case"]: r for r in records if r["tool"] == "sync" and r["run"] == "first"}
    for replay in (r for r in records if r["run"] == "replay"):
        print(f"{replay['case']}: replay {replay['seconds']} s and {replay['peak_rss_mb']:,} MB against the first run's "
              f"{first[replay['case']]['seconds']} s and {first[replay['case']]['peak_rss_mb']:,} MB "
              f"({round(replay['seconds'] / first[replay['case']]['seconds'], 2)} times the time)")
    print(f"time ~ events^{summary['exponent']['sync']} (sync), ^{summary['exponent']['duckdb']} (DuckDB); "
          f"written {stem}.json and {stem}.png")
    if args.round_trips:
        from round_trips import run_and_save

        events, names, latency = args.round_trips.split(":")
        run_and_save(int(events), int(names), float(latency), results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
