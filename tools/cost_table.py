"""The monthly compute cost of a lake by events a day and cluster mode: the arithmetic behind the README's table.

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


if __name__ == "__main__":
    sys.stdout.write(table() + "\n")
