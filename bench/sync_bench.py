"""Throughput of one sync in Spark local mode on synthetic Segment events.

    python bench/sync_bench.py [--events 200000] [--files 8] [--cores 2]

Each run's events arrive within two hours, as a scheduled sync every 2 hours sees them (so each table gets two
hour partitions per run). Prints events per second overall and per core for the first run (new tables) and a
second run over as many new events (existing tables); Spark's start-up is not counted.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

EVENT_NAMES = ["Order Completed", "Product Viewed", "Product Added", "Checkout Started", "Signed Up"]


def synthetic_event(rng: random.Random, n: int, day: int) -> dict:
    kind = rng.choice(["track"] * 6 + ["identify", "page", "screen", "group"])
    moment = f"2024-01-{day:02d}T{10 + rng.randrange(2):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}.{n % 1000:03d}Z"
    event = {"type": kind, "messageId": f"msg-{day}-{n}", "receivedAt": moment, "timestamp": moment, "sentAt": moment,
             "anonymousId": f"anon-{rng.randrange(50_000)}", "userId": f"user-{rng.randrange(20_000)}",
             "context": {"library": {"name": "analytics.js", "version": "4.1.0"}, "ip": "203.0.113.7",
                         "page": {"url": f"https://shop.example/p/{rng.randrange(500)}", "title": "Product"},
                         "userAgent": "Mozilla/5.0 (X11; Linux x86_64)"},
             "integrations": {"All": True}, "channel": "client", "version": 2}
    if kind == "track":
        event["event"] = rng.choice(EVENT_NAMES)
        event["properties"] = {"productId": f"sku-{rng.randrange(5000)}", "price": round(rng.uniform(1, 500), 2),
                               "quantity": rng.randrange(1, 5), "currency": "EUR", "tags": ["a", "b"]}
    elif kind in ("identify", "group"):
        event["traits"] = {"email": f"u{n}@example.com", "plan": rng.choice(["free", "pro"]), "logins": n % 97}
    else:
        event["name"] = "Home"
        event["properties"] = {"path": "/", "referrer": ""}
    return event


def write_input(folder: Path, events: int, files: int, day: int, seed: int) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    per_file = events // files
    for index in range(files):
        with gzip.open(folder / f"part-{index:03d}.json.gz", "wt") as out:
            for n in range(index * per_file, (index + 1) * per_file):
                out.write(json.dumps(synthetic_event(rng, n, day)) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    os.environ["SEGMENT_LAKE_CORES"] = str(args.cores)
    os.environ.setdefault("SEGMENT_LAKE_SHUFFLE_PARTITIONS", str(args.cores * 4))

    from segment_lake.catalog.local import LocalCatalog
    from segment_lake.session import build_session
    from segment_lake.settings import SyncSettings
    from segment_lake.sync import Sync

    with tempfile.TemporaryDirectory(prefix="segment-lake-bench-") as tmp:
        root = Path(tmp)
        spark = build_session("segment-lake bench", f"file://{root}/lake")
        settings = SyncSettings(source_id="bench", input_uri=str(root / "input"), lake_uri=str(root / "lake"),
                                source_slug="bench")
        for run, day in (("first run (new tables)", 2), ("second run (existing tables)", 3)):
            write_input(root / "input" / f"day{day}", args.events, args.files, day, seed=day)
            started = time.perf_counter()
            result = Sync(spark, settings, LocalCatalog(spark), progress=lambda line: None).run()
            seconds = time.perf_counter() - started
            rate = result.read_count / seconds
            print(f"{run}: {result.read_count} events, {len(result.tables)} tables in {seconds:.1f} s: "
                  f"{rate:,.0f} events/s, {rate / args.cores:,.0f} events/s per core ({args.cores} cores)")
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
