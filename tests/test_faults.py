"""Faults of the Glue and S3 APIs, served by a proxy in front of the local endpoint: throttling, 5xx and slow answers
are retried with backoff and the run lands everything; AccessDenied ends the run with insufficient_permissions naming
the action and the resource; a table gone mid-run fails the run and the re-run repairs the catalog; Glue's
table-version limit never refuses the sync's updates."""
import json

import pytest
from botocore.exceptions import ClientError
from fault_proxy import FaultProxy
from lake_events import RUN1_COUNTS, RUN2_COUNTS, write_run1, write_run2
from sync_harness import Lake

from segment_lake.catalog.glue import GlueCatalog
from segment_lake.errors import InsufficientPermissions, classify

pytestmark = [pytest.mark.spark, pytest.mark.aws]


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


def s3_lake_through(proxy, spark, s3a, tmp_path, bucket, name):
    """A lake on S3 whose bucket Spark's s3a reaches through ``proxy`` (a per-bucket endpoint), with Glue."""
    s3 = s3a(bucket)
    spark.sparkContext._jsc.hadoopConfiguration().set(f"fs.s3a.bucket.{bucket}.endpoint", proxy.start())
    write_run1(tmp_path / "input", "src1")
    for path in (tmp_path / "input").rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), bucket, str(path.relative_to(tmp_path / "input")))
    return Lake(spark, GlueCatalog(region="us-east-1"), "s3", f"s3a://{bucket}", f"s3a://{bucket}/segment-logs/src1",
                "src1", name)


def test_s3_throttling_5xx_and_slow_answers_are_retried(spark, s3a, tmp_path, monkeypatch, proxy, aws_endpoint):
    monkeypatch.setenv("SEGMENT_LAKE_GLUE_ENDPOINT", aws_endpoint)
    plan = {"S3.PUT": ["5xx", "throttle", "5xx"], "S3.GET": ["slow", "throttle", "5xx"], "S3.HEAD": ["throttle", "5xx"],
            "S3.DELETE": ["5xx"]}
    proxy.plan = {action: list(faults) for action, faults in plan.items()}
    lake = s3_lake_through(proxy, spark, s3a, tmp_path, "s3-faults", "s3_faults_retried")
    result = lake.sync()
    assert {k: getattr(result, k) for k in RUN1_COUNTS} == RUN1_COUNTS
    assert sorted(proxy.served) == sorted((action, fault) for action, faults in plan.items() for fault in faults)
    ids = [r["message_id"] for r in lake.rows("track_order_completed")]
    assert len(ids) == len(set(ids)) == 3


def test_an_s3_403_names_the_action_and_the_object_and_a_rerun_lands_everything(spark, s3a, tmp_path, monkeypatch,
                                                                                 proxy, aws_endpoint):
    monkeypatch.setenv("SEGMENT_LAKE_GLUE_ENDPOINT", aws_endpoint)
    proxy.plan = {"S3.PUT /s3-denied/segment-data/data/": ["denied"] * 30}  # the data files may not be published
    lake = s3_lake_through(proxy, spark, s3a, tmp_path, "s3-denied", "s3_faults_denied")
    with pytest.raises(InsufficientPermissions, match="CopyObject"):  # publish copies each staged file into place
        lake.sync()
    [report] = lake.storage.list_files(lake.layout.reports)
    source = json.loads(lake.storage.read_text(report.uri).splitlines()[0])
    assert (source["status"], source["error_code"]) == ("failed", "insufficient_permissions")
    assert source["error"].startswith("access denied to s3:GetObject and s3:PutObject (CopyObject) on "
                                      "segment-data/data/src1/")
    assert source["error"].endswith(": Access Denied; give the EMR instance role s3:GetObject and s3:PutObject on the "
                                    "lake bucket's objects (and the use of their KMS key)")

    proxy.plan = {}  # the permission granted: the redo lands everything once
    rerun = lake.sync()
    assert {k: getattr(rerun, k) for k in RUN1_COUNTS} == RUN1_COUNTS
    ids = [r["message_id"] for r in lake.rows("track_order_completed")]
    assert len(ids) == len(set(ids)) == 3


def test_a_table_at_glues_version_limit_still_takes_new_columns(spark, tmp_path, monkeypatch, proxy, glue_client):
    url = proxy.start()
    lake = lake_through(url, spark, tmp_path, monkeypatch, "faults_versions")
    lake.sync()
    write_run2(tmp_path / "input", "src1")  # new columns: the tables are updated
    proxy.plan = {"AWSGlue.UpdateTable": ["version_limit"] * 10}
    second = lake.sync()
    assert {k: getattr(second, k) for k in RUN2_COUNTS} == RUN2_COUNTS
    assert proxy.served and set(proxy.served) == {("AWSGlue.UpdateTable", "version_limit skipped")}


def test_a_table_gone_mid_run_fails_the_run_clearly_and_the_rerun_repairs_it(spark, tmp_path, monkeypatch, proxy,
                                                                             glue_client):
    url = proxy.start()
    lake = lake_through(url, spark, tmp_path, monkeypatch, "faults_gone")
    lake.sync()
    write_run2(tmp_path / "input", "src1")
    proxy.plan = {"AWSGlue.GetTable": ["notfound"]}  # dropped by someone between the run's listing and its update
    with pytest.raises(ClientError):
        lake.sync()
    [failed] = [r for r in lake.storage.list_files(lake.layout.reports)
                if json.loads(lake.storage.read_text(r.uri).splitlines()[0])["status"] == "failed"]
    source = json.loads(lake.storage.read_text(failed.uri).splitlines()[0])
    assert source["error_code"] == "internal" and source["error"].startswith("EntityNotFoundException: ")
    rerun = lake.sync()
    assert {k: getattr(rerun, k) for k in RUN2_COUNTS} == RUN2_COUNTS
    for table in rerun.tables:
        assert lake.columns(table.table_name) is not None


@pytest.mark.parametrize("text,expected", [
    ("java.nio.file.AccessDeniedException: segment-data/x/: PUT 0-byte object on segment-data/x/: "
     "com.amazonaws.services.s3.model.AmazonS3Exception: Access Denied (Service: Amazon S3; Status Code: 403",
     "access denied to s3:PutObject (PUT 0-byte object) on segment-data/x/: Access Denied; give the EMR instance role "
     "s3:PutObject on the lake bucket's objects"),
    ("java.nio.file.AccessDeniedException: s3a://b/k: getFileStatus on s3a://b/k: "
     "com.amazonaws.services.s3.model.AmazonS3Exception: Forbidden (Service: Amazon S3; Status Code: 403",
     "access denied to s3:GetObject (getFileStatus) on s3a://b/k: Forbidden; give the EMR instance role s3:GetObject "
     "on the lake bucket's objects"),
])
def test_an_s3a_denial_names_the_action_it_needs(text, expected):
    assert classify(RuntimeError(text)) == ("insufficient_permissions", expected)
