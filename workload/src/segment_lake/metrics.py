"""Metrics: a run's figures as CloudWatch metrics of its source, so that an alarm can tell a failing or silent source
from a quiet one. Written after the run's report, finished or failed; a metric that cannot be written is said, and
never fails the sync (the report holds the same figures)."""
from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from segment_lake_contract import (
    METRICS_DIMENSION,
    REPLAYS_FAILED,
    REPLAYS_FINISHED,
    SYNCS_FAILED,
    SYNCS_FINISHED,
)

from .report import RunResult

# a replay's outcome is counted as ReplaysFinished/ReplaysFailed
OUTCOMES = {SYNCS_FINISHED: REPLAYS_FINISHED, SYNCS_FAILED: REPLAYS_FAILED}
# CloudWatch metric -> (the run's figure, its unit)
FIGURES: dict[str, tuple[Callable[[RunResult], float], str]] = {
    SYNCS_FINISHED: (lambda run: int(run.status == "finished"), "Count"),
    SYNCS_FAILED: (lambda run: int(run.status != "finished"), "Count"),
    "Rows": (lambda run: run.row_count, "Count"),
    "Duplicates": (lambda run: run.duplicate_count, "Count"),
    "Rejected": (lambda run: run.rejected_count, "Count"),
    "DiscardedValues": (lambda run: run.discarded_value_count, "Count"),
}


def metric_data(run: RunResult, finished: datetime) -> list[dict]:
    """The run's metrics (PutMetricData's MetricData), at ``finished``: its outcome (as a sync's or a replay's), the
    counts, its duration and, when it read an event, its freshness: the seconds from the newest receivedAt it read
    to its end."""
    dimensions = [{"Name": METRICS_DIMENSION, "Value": run.source_id}]

    def datum(name: str, value: float, unit: str) -> dict:
        return {"MetricName": name, "Dimensions": dimensions, "Timestamp": finished, "Value": value, "Unit": unit}

    data = [datum(OUTCOMES.get(name, name) if run.replay else name, figure(run), unit)
            for name, (figure, unit) in FIGURES.items()]
    data.append(datum("DurationSeconds", (finished - run.start_time).total_seconds(), "Seconds"))
    if run.newest_received_at is not None:
        data.append(datum("FreshnessSeconds", max(0.0, (finished - run.newest_received_at).total_seconds()), "Seconds"))
    return data


def put_metrics(client, namespace: str, run: RunResult, progress: Callable[[str], None]) -> None:
    """Writes the run's metrics with ``client`` (CloudWatch's); a failure is said, not raised."""
    data = metric_data(run, run.finish_time or datetime.now(UTC))
    try:
        client.put_metric_data(Namespace=namespace, MetricData=data)
    except Exception as error:  # noqa: BLE001 - the sync's outcome stands; its report has the same figures
        progress(f"metrics: could not write {len(data)} metrics to CloudWatch namespace {namespace}: {error}")
        return
    progress(f"metrics: {len(data)} written to CloudWatch namespace {namespace}")


def cloudwatch_client(region: str | None):
    """CloudWatch's client: a few quick retries, so that an unreachable endpoint costs seconds, not minutes."""
    import boto3
    from botocore.config import Config

    return boto3.client("cloudwatch", region_name=region, config=Config(
        connect_timeout=5, read_timeout=10, retries={"mode": "standard", "max_attempts": 3}))
