"""The sync against AWS's round trips: a lake on S3 with the Glue catalog, both moto's servers (one process each)
behind a proxy that holds every request for a fixed latency and counts requests by operation (tests/fault_proxy.py).

    python bench/round_trips.py [--events 20000] [--names 1000] [--latency-ms 40]   (make bench runs it too)
    python bench/round_trips.py --table-format iceberg   (make bench: Iceberg tables in Glue, Iceberg's own Glue catalog)

A first sync lands two hours of ``--events`` events over ``--names`` event names (every table new); an hourly sync then
lands the next two hours (every table known, new hours). Each run reports its wall time, its stages' times (the
sync's own progress lines), its requests by operation, the S3 requests of its publish stage per published file, and
how long the catalog's registration alone takes for as many tables (new, then known with a new hour) on 16 threads
and on one (a Parquet lake's). With ``--table-format iceberg`` the syncs write Iceberg tables, whose catalog calls
Iceberg's GlueCatalog makes (the jar make setup writes, named in SEGMENT_LAKE_ICEBERG_GLUE_JAR).
Writes bench/results/<date>-round-trips.json (tools/cost_table.py reads its requests per file), or
<date>-round-trips-iceberg.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fault_proxy import FaultProxy  # noqa: E402
from run import CLI, ROOT, SOURCE, generated  # noqa: E402

BUCKET = "bench-lake"
STAGE_LINE = re.compile(r"^segment-lake: \[ *[\d.]+s\] (\w+): (.*?)(?: \((\d+\.\d)s\))?$")
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def moto_server():
    """moto's server in a process of its own (so that its CPU is not the proxy's or the sync's)."""
    port = free_port()
    server = subprocess.Popen([str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **CREDENTIALS})
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()


def upload(s3, folder: Path, window: int) -> None:
    """The window's files, named apart from the other window's (both are generated with the same names)."""
    for path in sorted(folder.rglob("*.gz")):
        s3.upload_file(str(path), BUCKET, f"segment-logs/{SOURCE}/{path.parent.name}/w{window}-{path.name}")


def sync(run: str, s3_proxy: FaultProxy, glue_proxy: FaultProxy, events: int, table_format: str) -> dict:
    """One sync through the proxies; its stages' times and requests."""
    for proxy in (s3_proxy, glue_proxy):
        proxy.operations.clear()
        proxy.timeline.clear()
    env = {**os.environ, **CREDENTIALS, "AWS_ENDPOINT_URL_S3": s3_proxy.url, "SEGMENT_LAKE_GLUE_ENDPOINT": glue_proxy.url}
    if table_format == "iceberg":
        env["SEGMENT_LAKE_ICEBERG_JARS"] = glue_jar()
    started = time.time()
    process = subprocess.Popen([CLI, "sync", "--source-id", SOURCE, "--input", f"s3a://{BUCKET}/segment-logs/{SOURCE}",
                                "--lake", f"s3a://{BUCKET}", "--catalog", "glue", "--aws-region", "us-east-1",
                                "--table-format", table_format],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = [(time.time(), line.rstrip("\n")) for line in process.stderr]
    if process.wait() != 0:
        raise SystemExit(f"the {run} sync failed:\n" + "\n".join(line for _, line in lines[-20:]))
    seconds = round(time.time() - started, 1)
    stages, marks = {}, {}
    for at, line in lines:
        found = STAGE_LINE.match(line)
        if found:
            marks.setdefault(found[1], []).append(at)
            if found[3]:
                stages[found[1]] = float(found[3])
    publish = marks["publish"][0] - stages["publish"], marks["publish"][-1]  # its window, from the sync's own timing
    published = [op for at, op in s3_proxy.timeline if publish[0] <= at <= publish[1]]
    copies = published.count("s3:CopyObject")
    record = {"case": "s3-glue", "table_format": table_format, "run": run, "events": events, "seconds": seconds,
              "stages": stages,
              "s3_requests": dict(s3_proxy.operations), "glue_requests": dict(glue_proxy.operations),
              "publish_s3_requests": dict(Counter(published)), "published_files": copies,
              "publish_requests_per_file": round(len(published) / copies, 2) if copies else None,
              "catalog_and_publish_seconds": round(stages.get("catalog", 0) + stages["publish"], 1)}
    print(json.dumps(record), flush=True)
    return record


def glue_jar() -> str:
    jar = os.environ.get("SEGMENT_LAKE_ICEBERG_GLUE_JAR") or str(ROOT / ".cache/jars/iceberg-glue-runtime-1.9.0.jar")
    if not os.path.isfile(jar):
        raise SystemExit(f"{jar} is missing: run `make setup` (Iceberg's Glue catalog for local Spark)")
    return jar


def catalog_alone(glue_proxy: FaultProxy, names: int, threads: int) -> list[dict]:
    """The catalog stage's registration without Spark beside it: ``names`` new tables with an hour each, then the
    next hour of each (known tables, no new column), on ``threads`` threads."""
    from segment_lake.catalog import TableChange, TableInfo
    from segment_lake.catalog.glue import GlueCatalog

    os.environ["SEGMENT_LAKE_GLUE_ENDPOINT"] = glue_proxy.url
    catalog, database = GlueCatalog(region="us-east-1", threads=threads), f"catalog_alone_{threads}"
    catalog.ensure_database(database)
    columns = tuple((f"c{i}", "string") for i in range(20))
    records = []
    for run, hour, known in (("first", "00", False), ("hourly", "01", True)):
        changes = [TableChange(f"t{i:04d}", columns, ("day", "hr"), (("2024-01-02", hour),),
                               f"s3a://{BUCKET}/segment-data/data/catalog/t{i:04d}") for i in range(names)]
        glue_proxy.operations.clear()
        started = time.time()
        catalog.register(database, changes, {change.table: TableInfo(list(columns), change.location) if known else None
                                             for change in changes})
        record = {"case": "catalog-alone", "run": run, "tables": names, "threads": threads,
                  "seconds": round(time.time() - started, 1), "glue_requests": dict(glue_proxy.operations)}
        print(json.dumps(record), flush=True)
        records.append(record)
    return records


def case(events: int, names: int, latency_ms: float, table_format: str = "parquet") -> list[dict]:
    import boto3

    os.environ.update(CREDENTIALS)  # moto's, for this process's own uploads too
    with moto_server() as s3_url, moto_server() as glue_url:
        s3_proxy, glue_proxy = FaultProxy(s3_url, latency=latency_ms / 1000), FaultProxy(glue_url, latency=latency_ms / 1000)
        s3_proxy.url, glue_proxy.url = s3_proxy.start(), glue_proxy.start()
        try:
            s3 = boto3.client("s3", endpoint_url=s3_url, **{"region_name": "us-east-1"})
            s3.create_bucket(Bucket=BUCKET)
            records = []
            for window, run in enumerate(("first", "hourly")):
                upload(s3, generated(events, names, window), window)
                records.append(sync(run, s3_proxy, glue_proxy, events, table_format))
            for threads in (16, 1) if table_format == "parquet" else ():  # the Parquet lake's registration
                records += catalog_alone(glue_proxy, names, threads)
        finally:
            s3_proxy.stop()
            glue_proxy.stop()
    return records


def table(records: list[dict], latency_ms: float) -> str:
    lines = [f"| sync ({latency_ms:g} ms a request) | wall s | write s | publish s | catalog s | Glue requests "
             "| S3 requests | publish S3 requests per file |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in (r for r in records if r["case"] == "s3-glue"):
        lines.append(f"| {r['run']} | {r['seconds']} | {r['stages']['write']} | {r['stages']['publish']} | "
                     f"{r['stages'].get('catalog', 0)} | {sum(r['glue_requests'].values()):,} | "
                     f"{sum(r['s3_requests'].values()):,} | {r['publish_requests_per_file']} |")
    lines += ["", "| sync | Glue requests by operation |", "|---|---|"]
    for r in (r for r in records if r["case"] == "s3-glue"):
        lines.append(f"| {r['table_format']}, {r['run']} | "
                     + ", ".join(f"{op.split(':')[1]} {n:,}" for op, n in sorted(r["glue_requests"].items())) + " |")
    lines += ["", f"| the catalog's registration alone ({latency_ms:g} ms a request) | threads | s | Glue requests |",
              "|---|---:|---:|---:|"]
    for r in (r for r in records if r["case"] == "catalog-alone"):
        lines.append(f"| {r['tables']:,} tables, {r['run']} | {r['threads']} | {r['seconds']} | "
                     f"{sum(r['glue_requests'].values()):,} |")
    return "\n".join(lines)


def run_and_save(events: int, names: int, latency_ms: float, results: Path, table_format: str = "parquet") -> list[dict]:
    records = case(events, names, latency_ms, table_format)
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{date.today().isoformat()}-round-trips{'' if table_format == 'parquet' else '-' + table_format}.json"
    path.write_text(json.dumps({"latency_ms": latency_ms, "names": names, "records": records}, indent=1) + "\n")
    print(table(records, latency_ms))
    print(f"written {path}")
    return records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--names", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=40)
    parser.add_argument("--table-format", choices=("parquet", "iceberg"), default="parquet")
    parser.add_argument("--results", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    run_and_save(args.events, args.names, args.latency_ms, Path(args.results), args.table_format)
    return 0


if __name__ == "__main__":
    sys.exit(main())
