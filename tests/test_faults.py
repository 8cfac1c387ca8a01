"""Faults of the Glue API, served by a proxy in front of the local endpoint: throttling, 5xx and slow answers are
retried with backoff and the run lands everything; AccessDenied ends the run with insufficient_permissions naming
the action and the resource, and a re-run repairs the catalog."""
import json

import pytest
from botocore.exceptions import ClientError
from fault_proxy import FaultProxy
from lake_events import RUN1_COUNTS, write_run1
from sync_harness import Lake

from segment_lake.catalog.glue import GlueCatalog


@pytest.fixture
def proxy(aws_endpoint):
    proxy = FaultProxy(aws_endpoint)
    yield proxy
    proxy.stop()


def lake_through(proxy_url, spark, tmp_path, monkeypatch, name):
    monkeypatch.setenv("SEGMENT_LAKE_GLUE_ENDPOINT", proxy_url)
    write_run1(tmp_path / "input", "src1")
    return Lake(spark, GlueCatalog(region="us-east-1"), "glue", f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input/segment-logs/src1", "src1", name)


def test_throttling_5xx_and_slow_answers_are_retried(spark, tmp_path, monkeypatch, proxy, glue_client):
    url = proxy.start()
    # five faults in a row on the one CreateDatabase call: more than boto3's default retries (4) would survive
    plan = {"AWSGlue.CreateDatabase": ["throttle", "5xx", "throttle", "5xx", "throttle"],
            "AWSGlue.GetTables": ["slow", "throttle"], "AWSGlue.CreateTable": ["5xx", "throttle"],
            "AWSGlue.BatchCreatePartition": ["throttle"]}
    proxy.plan = {action: list(faults) for action, faults in plan.items()}
    lake = lake_through(url, spark, tmp_path, monkeypatch, "faults_retried")
    result = lake.sync()
    assert {k: getattr(result, k) for k in RUN1_COUNTS} == RUN1_COUNTS
    assert sorted(proxy.served) == sorted((action, fault) for action, faults in plan.items() for fault in faults)
    tables = {t["Name"] for t in glue_client.get_tables(DatabaseName="faults_retried")["TableList"]}
    assert {t.table_name for t in result.tables} <= tables


def test_access_denied_names_the_action_and_a_rerun_repairs_the_catalog(spark, tmp_path, monkeypatch, proxy, glue_client):
    url = proxy.start()
    proxy.plan = {"AWSGlue.CreateTable": ["denied"]}
    lake = lake_through(url, spark, tmp_path, monkeypatch, "faults_denied")
    with pytest.raises(ClientError):
        lake.sync()
    [report] = lake.storage.list_files(lake.layout.reports)
    source = json.loads(lake.storage.read_text(report.uri).splitlines()[0])
    assert source["status"] == "failed" and source["error_code"] == "insufficient_permissions"
    assert source["error"].startswith("access denied to CreateTable: User: arn:aws:sts::123456789012:assumed-role/")
    assert "is not authorized to perform: glue:CreateTable on resource: arn:aws:glue:" in source["error"]

    rerun = lake.sync()  # the permission granted: the redo completes the catalog
    assert {k: getattr(rerun, k) for k in RUN1_COUNTS} == RUN1_COUNTS
    tables = {t["Name"] for t in glue_client.get_tables(DatabaseName="faults_denied")["TableList"]}
    assert {t.table_name for t in rerun.tables} <= tables
    ids = [r["message_id"] for r in lake.rows("track_order_completed")]
    assert len(ids) == len(set(ids))
