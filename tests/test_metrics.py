"""A sync's figures as CloudWatch metrics of its source (metrics.py): what they are, that a sync against the local
endpoint writes them, and that an unreachable CloudWatch fails no sync."""
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from lake_events import write_run1

from segment_lake.catalog.local import LocalCatalog
from segment_lake.errors import InvalidSettings
from segment_lake.metrics import cloudwatch_client, metric_data
from segment_lake.report import RunResult
from segment_lake.settings import SyncSettings
from segment_lake.sync import Sync
from segment_lake_contract import METRICS_DIMENSION, METRICS_NAMESPACE

pytestmark = [pytest.mark.spark, pytest.mark.aws]

START = datetime(2024, 1, 2, 3, 0, tzinfo=UTC)


def test_the_metrics_are_the_reports_figures_its_duration_and_freshness():
    run = RunResult("src1", "r1", "db", START, row_count=7, duplicate_count=2, rejected_count=1,
                    discarded_value_count=3, newest_received_at=START - timedelta(minutes=10))
    data = metric_data(run, START + timedelta(seconds=90))
    assert {d["MetricName"]: d["Value"] for d in data} == {
        "SyncsFinished": 1, "SyncsFailed": 0, "Rows": 7, "Duplicates": 2, "Rejected": 1, "DiscardedValues": 3,
        "DurationSeconds": 90.0, "FreshnessSeconds": 690.0}
    assert all(d["Dimensions"] == [{"Name": METRICS_DIMENSION, "Value": "src1"}] for d in data)
    failed = RunResult("src1", "r2", "db", START, status="failed")  # read nothing: no freshness
    assert {d["MetricName"]: d["Value"] for d in metric_data(failed, START)} == {
        "SyncsFinished": 0, "SyncsFailed": 1, "Rows": 0, "Duplicates": 0, "Rejected": 0, "DiscardedValues": 0,
        "DurationSeconds": 0.0}
    # a replay's outcome is counted apart: the no-sync alarm watches the scheduled syncs alone
    replayed = RunResult("src1", "r3", "db", START, replay=("2024-01-01", "2024-01-02"))
    assert {d["MetricName"]: d["Value"] for d in metric_data(replayed, START)} == {
        "ReplaysFinished": 1, "ReplaysFailed": 0, "Rows": 0, "Duplicates": 0, "Rejected": 0, "DiscardedValues": 0,
        "DurationSeconds": 0.0}
    with pytest.raises(InvalidSettings, match="invalid CloudWatch namespace ':lake'"):
        SyncSettings(source_id="src1", input_uri="in", lake_uri="lake", metrics_namespace=":lake")


# a source of this module's own: other tests' syncs write metrics of theirs (src1's) to the same local endpoint
SOURCE = "metricsrc1"


def _sync(spark, tmp_path, client, said, database):
    write_run1(tmp_path / "input", SOURCE)
    settings = SyncSettings(source_id=SOURCE, input_uri=f"{tmp_path}/input/segment-logs/{SOURCE}",
                            lake_uri=f"{tmp_path}/lake", glue_database=database, metrics_namespace=METRICS_NAMESPACE)
    return Sync(spark, settings, LocalCatalog(spark), progress=said.append, metrics=client).run()


def test_a_sync_writes_its_metrics_to_cloudwatch(spark, tmp_path, aws_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDWATCH", aws_endpoint)
    said: list[str] = []
    result = _sync(spark, tmp_path, cloudwatch_client("us-east-1"), said, "metrics_written")
    assert "metrics: 8 written to CloudWatch namespace SegmentDataLake" in said
    cloudwatch = boto3.client("cloudwatch", endpoint_url=aws_endpoint, region_name="us-east-1")
    listed = cloudwatch.list_metrics(Namespace=METRICS_NAMESPACE,
                                     Dimensions=[{"Name": METRICS_DIMENSION, "Value": SOURCE}])["Metrics"]
    assert {m["MetricName"] for m in listed} >= {"SyncsFinished", "Rows", "FreshnessSeconds", "DurationSeconds"}
    rows = cloudwatch.get_metric_statistics(
        Namespace=METRICS_NAMESPACE, MetricName="Rows", Dimensions=[{"Name": METRICS_DIMENSION, "Value": SOURCE}],
        StartTime=result.finish_time - timedelta(minutes=5), EndTime=result.finish_time + timedelta(minutes=5),
        Period=60, Statistics=["Sum"])["Datapoints"]
    assert sum(point["Sum"] for point in rows) == result.row_count > 0


def test_an_unreachable_cloudwatch_is_reported_and_fails_no_sync(spark, tmp_path, aws_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDWATCH", "http://127.0.0.1:9")  # nothing listens there (credentials: aws_endpoint)
    said: list[str] = []
    result = _sync(spark, tmp_path, cloudwatch_client("us-east-1"), said, "metrics_unreachable")
    assert result.status == "finished" and result.row_count > 0
    [line] = [line for line in said if line.startswith("metrics:")]
    assert line.startswith("metrics: could not write 8 metrics to CloudWatch namespace SegmentDataLake: ")
