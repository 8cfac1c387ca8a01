"""The effect of `segment-lake compact` on a generated lake: data files and query time before and after.

    python bench/compaction_effect.py [--events 200000] [--days 2] [--date-partition day] [--s3] [--work DIR]

Generates --days of events (one gzip file per hour), syncs them in two-hour slices as the schedule would (12 syncs a
day), then reads every table of the source from its folder (Spark, local mode: rows, users, first and last event)
three times before and three times after compacting with the CLI, and prints one JSON line: the data files, the
median seconds to read all tables, and the compaction's own time. The lake is on the local disk, or with --s3 in a
bucket of moto's S3 server on 127.0.0.1 (s3a, the catalog in its Glue), where every file costs requests as on S3.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).with_name("segment-lake"))
SOURCE = "src0001"
BUCKET = "compaction-effect"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--days", type=int, default=2)
    parser.add_argument("--date-partition", default="day")
    parser.add_argument("--s3", action="store_true", help="the lake in moto's S3 on 127.0.0.1 (default: local disk)")
    parser.add_argument("--work", type=Path, default=REPO / ".cache" / "compaction-effect")
    parser.add_argument("--query-seconds", metavar="LAKE", help=argparse.SUPPRESS)  # one measurement
    args = parser.parse_args()
    if args.query_seconds:
        print(json.dumps(_measure(args.query_seconds)))
        return 0
    shutil.rmtree(args.work, ignore_errors=True)
    generated, inputs = args.work / "generated", args.work / "input"
    lake, naming = f"file://{(args.work / 'lake').resolve()}", []
    if args.s3:
        server = _s3_endpoint()
        lake, naming = f"s3a://{BUCKET}/", ["--catalog", "glue", "--aws-region", "us-east-1"]
    subprocess.run([CLI, "generate", "--output", str(generated), "--events", str(args.events), "--days",
                    str(args.days), "--files-per-hour", "1", "--seed", "3"], check=True, capture_output=True)
    root = generated / "segment-logs" / SOURCE
    files = sorted(root.rglob("*.gz"))  # <day>/<n>.gz: in the order they were received
    naming += ["--source-id", SOURCE, "--lake", lake, "--date-partition", args.date_partition]
    for start in range(0, len(files), 2):  # a sync every two hours of files
        for file in files[start:start + 2]:
            target = inputs / file.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(file, target)
        subprocess.run([CLI, "sync", *naming, "--input", str(inputs.resolve())], check=True, capture_output=True)
    before = _query(lake)
    started = time.monotonic()
    compacted = subprocess.run([CLI, "compact", *naming, "--older-than", "0"], check=True, capture_output=True, text=True)
    seconds = time.monotonic() - started
    after = _query(lake)
    if args.s3:
        server.stop()
    print(json.dumps({"lake": "s3 (moto, 127.0.0.1)" if args.s3 else "local disk", "events": args.events,
                      "days": args.days, "syncs": (len(files) + 1) // 2, "date_partition": args.date_partition,
                      "files_before": before["files"], "files_after": after["files"],
                      "query_seconds_before": before["seconds"], "query_seconds_after": after["seconds"],
                      "query_speedup": round(before["seconds"] / after["seconds"], 2),
                      "compact_seconds": round(seconds, 1), "compact_output": compacted.stdout.strip().splitlines()[0]}))
    return 0


def _s3_endpoint():
    """moto's S3 and Glue on a free port of 127.0.0.1, with the bucket; the CLI's processes find it in the environment."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    jars = REPO / ".cache" / "jars"
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
                      AWS_ENDPOINT_URL=endpoint, SEGMENT_LAKE_GLUE_ENDPOINT=endpoint,
                      SEGMENT_LAKE_SPARK_JARS=f"{jars}/hadoop-aws-3.3.1.jar,{jars}/aws-java-sdk-bundle-1.11.901.jar")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=BUCKET)
    return server


def _query(lake: str) -> dict:
    """Measured in a Spark of its own, started afresh as a reader's would be."""
    measured = subprocess.run([sys.executable, __file__, "--query-seconds", lake], check=True, capture_output=True,
                              text=True)
    return json.loads(measured.stdout.strip().splitlines()[-1])


def _measure(lake: str) -> dict:
    """The source's data files, and the median of three reads of every table (rows, users, first and last event)."""
    sys.path.insert(0, str(REPO / "workload" / "src"))
    from segment_lake.session import build_session
    from segment_lake.storage import HadoopStorage
    from segment_lake.uris import join

    spark = build_session("compaction effect", lake, local_catalog=False)
    storage = HadoopStorage(spark)
    data = join(lake, "segment-data", "data", SOURCE)
    tables = [join(data, name) for name in storage.list_folders(data)]
    times = []
    for _ in range(3):
        started = time.monotonic()
        for table in tables:
            spark.read.parquet(table).selectExpr("count(*)", "count(DISTINCT anonymous_id)", "min(received_at)",
                                                 "max(received_at)").collect()
        times.append(time.monotonic() - started)
    files = sum(1 for info in storage.list_files(data) if info.uri.endswith(".parquet"))
    return {"files": files, "seconds": round(statistics.median(times), 2)}


if __name__ == "__main__":
    sys.exit(main())
