"""The monthly compute cost of a lake by events a day and cluster mode, and its catalog and S3 request costs by event
types: the arithmetic behind the README's tables.

Throughput: the sync's first runs of `make bench` (bench/results/<date>.json), fitted as a fixed cost plus a time per
event and scaled per vCPU: an estimate, not a measurement on EMR. Everything else is an input below, named as an
assumption or a published price. `python tools/cost_table.py` prints the table; tests/test_readme.py checks that the
README holds this output.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "results" / "2026-11-23.json"
# the S3 + Glue case of `make bench` (bench/round_trips.py): requests counted per published file
ROUND_TRIPS = Path(__file__).resolve().parents[1] / "bench" / "results" / "2026-11-26-round-trips.json"
# Assumptions (not measured here: this machine has no AWS account)
EMR_START_MINUTES = 8.0  # RunJobFlow to the first step running, billed
EMR_END_MINUTES = 1.0  # the last step's end to the instances' termination, billed
YARN_STEP_SECONDS = 30.0  # a step's launcher, the release's install check and spark-submit on YARN
WORKER_VCPUS_OF_SINGLE_NODE = 3  # of an m5.xlarge's 4 vCPUs, one left to the OS, HDFS and YARN
COMPACTION_SHARE = 0.5  # a daily compaction rewrites the day's files: assumed half a sync of the day's events
SPOT_DISCOUNT = 0.6  # Spot at 40% of the On-Demand EC2 price (EMR's own fee is not discounted)
# us-east-1 On-Demand prices per m5.xlarge hour, as AWS publishes them (EC2 Linux; EMR's fee), quoted 2026-11-24
EC2_HOUR, EMR_HOUR = 0.192, 0.048
HOURS_A_MONTH, DAYS_A_MONTH = 730, 730 / 24
TICKS_A_DAY = 12  # schedule_expression rate(2 hours)
VOLUMES = (1_000_000, 10_000_000, 100_000_000, 1_000_000_000)
# Glue Data Catalog, us-east-1, as AWS publishes it (quoted 2026-11-26): the first million objects stored and the first
# million requests a month are free; then $1 per 100,000 objects a month and $1 per million requests
GLUE_FREE_OBJECTS, GLUE_PER_100K_OBJECTS = 1_000_000, 1.00
GLUE_FREE_REQUESTS, GLUE_PER_MILLION_REQUESTS = 1_000_000, 1.00
# S3 Standard requests, us-east-1: PUT, COPY, POST and LIST $0.005 per 1,000; GET and HEAD $0.0004 per 1,000
S3_WRITE_PER_1000, S3_READ_PER_1000 = 0.005, 0.0004
HOURS_A_TICK = 24 // TICKS_A_DAY  # each tick adds this many hourly partitions to a table with events every hour
EVENT_TYPES = (50, 1000)
CATALOG_EVENTS_A_DAY = 10_000_000  # enough for every event type to have events every hour


def throughput(path: Path = BENCH) -> tuple[float, float]:
    """(fixed seconds, events a second per vCPU) of the sync's first runs at the two largest sizes of the bench."""
    runs = sorted((r["events"], r["seconds"], r["cores"]) for r in json.loads(path.read_text())["records"]
                  if r["tool"] == "sync" and r["run"] == "first" and r["case"].startswith("size-"))
    (small, small_s, cores), (large, large_s, _) = runs[-2], runs[-1]
    per_event = (large_s - small_s) / (large - small)
    return small_s - per_event * small, 1 / per_event / cores


@dataclass(frozen=True)
class Cluster:
    """A cluster of m5.xlarge nodes: On-Demand ones (master and core) and Spot task nodes."""

    on_demand: int
    spot: int = 0

    @property
    def hourly(self) -> float:
        return self.on_demand * (EC2_HOUR + EMR_HOUR) + self.spot * (EC2_HOUR * (1 - SPOT_DISCOUNT) + EMR_HOUR)

    @property
    def worker_vcpus(self) -> int:
        nodes = self.on_demand - 1 + self.spot  # the master runs the driver
        return nodes * 4 if nodes else WORKER_VCPUS_OF_SINGLE_NODE


def sync_seconds(events: float, vcpus: int, fixed: float, rate: float) -> float:
    return YARN_STEP_SECONDS + fixed + events / (rate * vcpus)


def transient_month(events_a_day: int, cluster: Cluster, fixed: float, rate: float) -> tuple[float, float]:
    """(dollars a month, minutes a tick's cluster lives) of a transient cluster per tick and one compaction a day."""
    tick = sync_seconds(events_a_day / TICKS_A_DAY, cluster.worker_vcpus, fixed, rate) / 60
    compaction = COMPACTION_SHARE * sync_seconds(events_a_day, cluster.worker_vcpus, fixed, rate) / 60
    overhead = EMR_START_MINUTES + EMR_END_MINUTES
    minutes_a_day = TICKS_A_DAY * (overhead + tick) + overhead + compaction
    return minutes_a_day / 60 * cluster.hourly * DAYS_A_MONTH, overhead + tick


def table() -> str:
    fixed, rate = throughput()
    always_on, smallest = Cluster(5), Cluster(2)
    single, spot = Cluster(1), Cluster(2, spot=4)
    lines = ["| events a day | always-on, Segment's sizes (1 master, 2 core, 2 task) | always-on, smallest (1 master, "
             "1 core) | transient, one node (default) | transient, 1 master + 1 core + 4 Spot task | a tick's "
             "cluster lives (one node) |",
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for events in VOLUMES:
        one_node, lives = transient_month(events, single, fixed, rate)
        with_spot, _ = transient_month(events, spot, fixed, rate)
        lines.append(f"| {events:,} | ${always_on.hourly * HOURS_A_MONTH:,.0f} | ${smallest.hourly * HOURS_A_MONTH:,.0f} | "
                     f"${one_node:,.2f} | ${with_spot:,.2f} | {lives:.1f} min |")
    lines.append("")
    lines.append(f"Inputs: the sync's first runs in `{BENCH.relative_to(BENCH.parents[2])}` fit as {fixed:.1f} s fixed "
                 f"plus {rate:,.0f} events a second per vCPU (an estimate scaled from this machine's 2 cores); "
                 f"{TICKS_A_DAY} syncs a day and one compaction (assumed to cost {COMPACTION_SHARE:g} of a sync of the "
                 f"day's events); assumed: {EMR_START_MINUTES:g} min from RunJobFlow to the first step and "
                 f"{EMR_END_MINUTES:g} min to terminate, both billed, {YARN_STEP_SECONDS:g} s per step for the launcher "
                 f"and spark-submit, {WORKER_VCPUS_OF_SINGLE_NODE} of a single node's 4 vCPUs for Spark, Spot at "
                 f"{1 - SPOT_DISCOUNT:.0%} of On-Demand; prices: m5.xlarge in us-east-1 On-Demand, EC2 "
                 f"${EC2_HOUR:.3f} and EMR ${EMR_HOUR:.3f} an hour (AWS's published prices, quoted 2026-11-24), "
                 f"{HOURS_A_MONTH} hours a month.")
    return "\n".join(lines)


def s3_requests_per_file(path: Path = ROUND_TRIPS) -> tuple[float, float]:
    """(write-class, read-class) S3 requests per published file of the hourly sync in the S3 + Glue bench case, all
    stages included."""
    hourly = next(r for r in json.loads(path.read_text())["records"] if r["run"] == "hourly")
    reads = sum(n for op, n in hourly["s3_requests"].items() if op in ("s3:GetObject", "s3:HeadObject", "s3:HeadBucket"))
    writes = sum(hourly["s3_requests"].values()) - reads
    return writes / hourly["published_files"], reads / hourly["published_files"]


def catalog_table() -> str:
    """Glue's objects, storage and requests and S3's requests by event types, at 12 syncs a day (a table and an hour
    of events is one partition and one file)."""
    writes, reads = s3_requests_per_file()
    lines = [f"| event types ({CATALOG_EVENTS_A_DAY:,} events a day) | partitions | Glue objects after a year | Glue "
             "storage in month 12 | Glue requests a month | S3 requests a month |",
             "| ---: | --- | ---: | ---: | ---: | ---: |"]
    for types in EVENT_TYPES:
        for projected in (False, True):
            # projected (--partition-projection): one object a table, no request for a new hour
            objects = types + (0 if projected else types * 24 * 365)
            storage = max(0, objects - GLUE_FREE_OBJECTS) / 100_000 * GLUE_PER_100K_OBJECTS
            # a sync: one GetTables page per 100 tables, one BatchCreatePartition per table, a few for the database
            # and its report
            requests = DAYS_A_MONTH * TICKS_A_DAY * (types / 100 + (0 if projected else types) + 4)
            glue = max(0, requests - GLUE_FREE_REQUESTS) / 1_000_000 * GLUE_PER_MILLION_REQUESTS
            files = DAYS_A_MONTH * TICKS_A_DAY * types * HOURS_A_TICK
            s3 = files * (writes * S3_WRITE_PER_1000 + reads * S3_READ_PER_1000) / 1000
            lines.append(f"| {types:,} | {'projected' if projected else 'in Glue'} | {objects:,} | ${storage:,.2f} | "
                         f"{requests:,.0f} (${glue:,.2f}) | {files * (writes + reads):,.0f} (${s3:,.2f}) |")
    lines.append("")
    lines.append(f"Inputs: every event type has events every hour (one partition and one file a table and hour; "
                 f"projected: the tables carry Athena's partition projection instead, `--partition-projection`, read "
                 f"by Athena only: docs/lake-format.md, Partition projection); "
                 f"{TICKS_A_DAY} syncs a day; S3 requests a published file as the hourly sync of "
                 f"`{ROUND_TRIPS.relative_to(ROUND_TRIPS.parents[2])}` counted them: {writes:.2f} PUT, COPY, POST or "
                 f"LIST and {reads:.2f} GET or HEAD, every stage included; prices, us-east-1 as AWS publishes them "
                 f"(quoted 2026-11-26): Glue storage ${GLUE_PER_100K_OBJECTS:g} per 100,000 objects a month past the "
                 f"first {GLUE_FREE_OBJECTS:,}, requests ${GLUE_PER_MILLION_REQUESTS:g} per million past the first "
                 f"{GLUE_FREE_REQUESTS:,} a month; S3 ${S3_WRITE_PER_1000} per 1,000 PUT, COPY, POST or LIST and "
                 f"${S3_READ_PER_1000} per 1,000 GET or HEAD. Glue's storage grows each month by 730 partitions a "
                 f"table: the column is month 12's bill, and it rises by about ${EVENT_TYPES[-1] * 730 / 100_000:.2f} "
                 f"a month after, at {EVENT_TYPES[-1]:,} event types.")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(table() + "\n\n" + catalog_table() + "\n")
