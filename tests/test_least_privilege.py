"""Least privilege, proven: every S3 and Glue call of every command the EMR nodes run (four syncs: new tables, new
columns and duplicates, a late file, nothing new; a replay, a compaction, suppress, delete-users, state reset and history) is
recorded on S3 with Glue, from botocore's events and from the local endpoint's side for Spark's s3a, and
evaluated against the EMR instance role's synthesized policies by an IAM policy evaluator (tests/iam_evaluator.py).
No command may need anything the role lacks, and the role may hold no S3 or Glue action no command uses unless
docs/constructs.md says which part of EMR needs it. And nothing secret reaches the logs or the reports."""
import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
from aws_calls import REGION, botocore_calls, s3_request_calls
from fault_proxy import FaultProxy
from iam_evaluator import Request, allowed
from lake_events import write_run1, write_run2
from role_policies import permissions, role_id
from stack_helpers import resources

from segment_lake import cli
from segment_lake_contract import METRICS_NAMESPACE

pytestmark = [pytest.mark.constructs, pytest.mark.spark, pytest.mark.aws]

BUCKET = "my-company-segment-data-lake"  # the bucket of the project's own stack (main.py)
NODE_ROLE = "SegmentEMRInstanceProfileRole"
CONSTRUCTS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "constructs.md"
# Granted for a part of EMR other than the lake's commands; each is explained in docs/constructs.md's table of the nodes'
# permissions.
EXPLAINED = {
    "s3:GetBucketLocation": "EMRFS",
    "s3:ListBucketMultipartUploads": "multipart",
    "s3:ListMultipartUploadParts": "multipart",
    "s3:AbortMultipartUpload": "multipart",
    "glue:GetPartition": "metastore",
    "glue:CreatePartition": "metastore",
    "glue:UpdatePartition": "metastore",
}
LAKE = ["--lake", f"s3a://{BUCKET}", "--source-id", "src1"]
# the database of main.py's source (web_app), which the policies name
CATALOG = ["--source-slug", "web_app", "--catalog", "glue", "--aws-region", REGION]
SYNC = ["--input", f"s3a://{BUCKET}/segment-logs/src1", *LAKE, *CATALOG]
# Each command as the nodes run it (a step of run-sync.sh), in an order that gives each something to do.
COMMANDS = [
    ("sync", ["sync", *SYNC]),
    ("sync", ["sync", *SYNC]),  # run 2's files: new columns and duplicates
    ("sync", ["sync", *SYNC]),  # a late file: a second file in a partition, for the compaction to merge
    ("sync", ["sync", *SYNC]),  # nothing new
    ("replay", ["replay", *SYNC, "--from", "2024-01-02", "--to", "2024-01-02"]),
    ("compact", ["compact", *LAKE, *CATALOG, "--older-than", "0"]),
    ("suppress", ["suppress", "add", *LAKE, "--user-id", "u9"]),
    ("delete-users", ["delete-users", *LAKE, "--user-id", "u2"]),
    ("state reset", ["state", "reset", *LAKE]),
    ("history", ["history", *LAKE]),
]


def _s3_and_glue(documents: list[dict]) -> set[str]:
    return {action for document in documents for statement in document["Statement"] if statement["Effect"] == "Allow"
            for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
            if action.startswith(("s3:", "glue:"))}


@pytest.fixture(scope="module")
def recorded_commands(spark, s3a, aws_endpoint, tmp_path_factory):
    """Runs COMMANDS in this process; returns each command's (action, resource) calls, in order."""
    s3 = s3a(BUCKET)
    staging = tmp_path_factory.mktemp("least-privilege")
    proxy = FaultProxy(aws_endpoint)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    endpoint = proxy.start()
    conf.set(f"fs.s3a.bucket.{BUCKET}.endpoint", endpoint)
    os.environ["SEGMENT_LAKE_GLUE_ENDPOINT"] = aws_endpoint
    os.environ["AWS_ENDPOINT_URL_S3"] = endpoint  # for what a command reads before its session (boto3's own)

    def upload(write):
        write(staging / write.__name__, "src1")
        for path in (staging / write.__name__).rglob("*"):
            if path.is_file():
                s3.upload_file(str(path), BUCKET, str(path.relative_to(staging / write.__name__)))

    boto3.setup_default_session(region_name=REGION)
    recorded = []
    try:
        upload(write_run1)
        for index, (name, argv) in enumerate(COMMANDS):
            if index == 1:
                upload(write_run2)
            if index == 2:
                s3.put_object(Bucket=BUCKET, Key="segment-logs/src1/1704153600000/late.json", Body=json.dumps(
                    {"type": "track", "event": "Order Completed", "messageId": "late1", "userId": "u3",
                     "receivedAt": "2024-01-02T03:30:00.000Z"}).encode())
            proxy.requests.clear()
            with botocore_calls(boto3.DEFAULT_SESSION) as calls:
                code = cli.main(argv)
            assert code == 0, f"{name} failed"
            recorded.append((name, calls + [c for request in proxy.requests for c in s3_request_calls(request)]))
    finally:
        conf.unset(f"fs.s3a.bucket.{BUCKET}.endpoint")
        del os.environ["SEGMENT_LAKE_GLUE_ENDPOINT"], os.environ["AWS_ENDPOINT_URL_S3"]
        proxy.stop()
    return recorded


def test_every_command_the_nodes_run_is_granted_and_every_grant_is_used_or_explained(lake, recorded_commands):
    documents = permissions(lake, NODE_ROLE)
    for name, calls in recorded_commands:
        assert calls, f"{name} made no call"
        refused = sorted({(action, resource) for action, resource in calls
                          if not allowed(documents, Request(action, resource))})
        assert not refused, f"{name}: the EMR instance role lacks {refused[:5]}"
    used = {action for _, calls in recorded_commands for action, _ in calls}
    assert {"glue:BatchUpdatePartition", "glue:UpdateTable", "s3:DeleteObject"} <= used, sorted(used)
    granted = _s3_and_glue(documents)
    unexplained = granted - used - set(EXPLAINED)
    assert not unexplained, f"granted and never used by a command, with no reason in docs/constructs.md: {sorted(unexplained)}"
    assert set(EXPLAINED) <= granted, f"explained but no longer granted: {sorted(set(EXPLAINED) - granted)}"
    assert not set(EXPLAINED) & used, f"the commands use these: {sorted(set(EXPLAINED) & used)}; drop them from EXPLAINED"
    section = CONSTRUCTS_PAGE.read_text().split("### What the EMR nodes may do", 1)[1].split("\n## ", 1)[0]
    for action in granted:
        assert f"`{action}`" in section, f"{action} is not in docs/constructs.md's table of the nodes' permissions"
    # the recorded calls reach nothing outside the lake bucket, and Glue only through its catalog
    assert {r.split(":::", 1)[1].split("/", 1)[0] for _, calls in recorded_commands
            for a, r in calls if a.startswith("s3:")} == {BUCKET}


# The Lake Formation permission each Glue call of the sync needs (Lake Formation's permissions reference), on the
# database or on the table it names; CreateDatabase is not the sync's under Lake Formation: the stack creates them.
LAKE_FORMATION_NEEDS = {
    "glue:GetDatabase": "database DESCRIBE", "glue:CreateTable": "database CREATE_TABLE",
    **dict.fromkeys(["glue:GetTables", "glue:GetTable", "glue:GetPartitions", "glue:GetPartition",
                     "glue:BatchGetPartition"], "table DESCRIBE"),
    **dict.fromkeys(["glue:UpdateTable", "glue:CreatePartition", "glue:BatchCreatePartition", "glue:UpdatePartition",
                     "glue:BatchUpdatePartition"], "table ALTER"),
}


def test_every_glue_call_the_nodes_make_is_granted_by_lake_formation(synthesized, recorded_commands):
    """The same calls, judged against the Lake Formation grants of main.py's stack governed by Lake Formation."""
    stack = synthesized.stacks["lake-formation"]
    principal = f"${{aws_iam_role.{role_id(stack, NODE_ROLE)}.arn}}"
    grants = [g for g in resources(stack, "aws_lakeformation_permissions").values() if g["principal"] == principal]
    held = {("database", g["database"]["name"], p) for g in grants if "database" in g for p in g["permissions"]}
    held |= {("table", g["table"]["database_name"], p) for g in grants if g.get("table", {}).get("wildcard")
             for p in g["permissions"]}
    created = {database["name"] for database in resources(stack, "aws_glue_catalog_database").values()}
    registered = [r["arn"] for r in resources(stack, "aws_lakeformation_resource").values()]
    needed = set()
    for _, calls in recorded_commands:
        for action, resource in calls:
            if not action.startswith("glue:"):
                continue
            assert action in LAKE_FORMATION_NEEDS or action == "glue:CreateDatabase", f"{action}: which permission?"
            level, permission = LAKE_FORMATION_NEEDS.get(action, "database CREATE").split()
            if f":{level}/" not in resource:  # each call is recorded on the catalog, its database and its table
                continue
            database = resource.split(f":{level}/", 1)[1].split("/", 1)[0]
            if action == "glue:CreateDatabase":
                assert database in created, f"the sync would create {database}, which Lake Formation cannot grant on"
            else:
                needed.add((level, database, permission))
            if action == "glue:CreateTable":
                needed.add(("location", "bucket", "DATA_LOCATION_ACCESS"))
    assert {("database", "web_app", "CREATE_TABLE"), ("table", "__segment_datalake", "ALTER")} <= needed
    locations = [g for g in grants if "data_location" in g]
    if locations and [g["data_location"]["arn"] for g in locations] == registered:
        held.add(("location", "bucket", "DATA_LOCATION_ACCESS"))
    assert not needed - held, f"Lake Formation grants the node role none of {sorted(needed - held)}"
    assert not {permission for _, _, permission in held} & {"ALL", "DROP"}, "granted more than the sync uses"


def test_nothing_secret_is_printed_or_reported(tmp_path, aws_endpoint, s3a):
    s3 = s3a("secrets-lake")
    write_run1(tmp_path / "input", "src1")
    for path in (tmp_path / "input").rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), "secrets-lake", str(path.relative_to(tmp_path / "input")))
    secrets = {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLESECRETID01", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRET",
               "AWS_SESSION_TOKEN": "FwoGZXIvYXdzEXAMPLESESSIONTOKEN"}
    env = dict(os.environ, AWS_ENDPOINT_URL=aws_endpoint, SEGMENT_LAKE_GLUE_ENDPOINT=aws_endpoint, **secrets)
    cli = str(Path(sys.executable).with_name("segment-lake"))
    base = [cli, "sync", "--source-id", "src1", "--input", "s3a://secrets-lake/segment-logs/src1",
            "--lake", "s3a://secrets-lake", "--catalog", "glue", "--aws-region", REGION, "--verbose"]
    finished = subprocess.run(base, capture_output=True, text=True, env=env, timeout=600)
    assert finished.returncode == 0, finished.stderr[-2000:]
    failed = subprocess.run([*base[:5], "s3a://secrets-lake/segment-logs/no-such-source", *base[6:]],
                            capture_output=True, text=True, env=env, timeout=600)
    assert failed.returncode == 1 and "(invalid_settings)" in failed.stderr
    reports = [s3.get_object(Bucket="secrets-lake", Key=o["Key"])["Body"].read().decode()
               for o in s3.list_objects_v2(Bucket="secrets-lake", Prefix="segment-data/")["Contents"]
               if not o["Key"].endswith(".parquet")]
    assert reports
    for text in [finished.stdout, finished.stderr, failed.stdout, failed.stderr, *reports]:
        for name, secret in secrets.items():
            assert secret not in text and secret[-8:] not in text, f"{name} was printed"


def test_a_spark_reader_under_grant_read_reads_the_tables_and_reports(spark, recorded_commands, aws_endpoint):
    """What a reader asks of the lake the commands left (Spark through s3a, recorded on the endpoint's side; the Glue
    calls of a query engine finding a table and its partitions), judged against the policy that grant_read attaches
    to a role of main.py's lake."""
    from cdktf import Testing
    from conftest import APPS, load_module

    from segment_data_lake.aws import IamRole

    app = load_module(APPS["segment-data-lake"], "app_reader")
    stack = app.DataLakeStack(Testing.app(), "reader", {})
    analyst = IamRole(stack, "Analyst", name="lake-analyst", assume_role_policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"AWS": "arn:aws:iam::123456789012:root"}}]}))
    stack.lake.grant_read("Analyst", analyst)
    documents = permissions(json.loads(Testing.synth(stack)), "lake-analyst")

    proxy = FaultProxy(aws_endpoint)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set(f"fs.s3a.bucket.{BUCKET}.endpoint", proxy.start())
    cached = conf.get("fs.s3a.impl.disable.cache")
    conf.set("fs.s3a.impl.disable.cache", "true")  # the commands' s3a client spoke to their own proxy
    try:
        with botocore_calls(boto3.DEFAULT_SESSION) as calls:
            glue = boto3.client("glue", endpoint_url=aws_endpoint, region_name=REGION)
            location = glue.get_table(DatabaseName="web_app", Name="identify")["Table"]["StorageDescriptor"]["Location"]
            glue.get_partitions(DatabaseName="web_app", TableName="identify")
            rows = spark.read.parquet(location.replace("s3://", "s3a://", 1)).count()
            reports = spark.read.json(f"s3a://{BUCKET}/segment-data/reports/").count()
        calls += [c for request in proxy.requests for c in s3_request_calls(request)]
    finally:
        conf.unset(f"fs.s3a.bucket.{BUCKET}.endpoint")
        if cached is None:
            conf.unset("fs.s3a.impl.disable.cache")
        else:
            conf.set("fs.s3a.impl.disable.cache", cached)
        proxy.stop()
    assert rows > 0 and reports > 0
    assert {"s3:GetObject", "s3:ListBucket", "glue:GetTable", "glue:GetPartitions"} <= {a for a, _ in calls}
    refused = sorted({(action, resource) for action, resource in calls if not allowed(documents, Request(action, resource))})
    assert not refused, f"grant_read lacks {refused[:5]}"


def test_the_syncs_metrics_are_granted_in_their_namespace_only(lake, aws_endpoint, monkeypatch):
    """On EMR the sync writes its metrics (metrics.py) in METRICS_NAMESPACE: the call it makes, recorded with its
    namespace (the condition key), is allowed to the nodes' role; the same call in another namespace is not."""
    from datetime import UTC, datetime

    from segment_lake.metrics import cloudwatch_client, put_metrics
    from segment_lake.report import RunResult

    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDWATCH", aws_endpoint)
    client, calls = cloudwatch_client(REGION), []
    client.meta.events.register("before-parameter-build.cloudwatch", lambda params, model, **_: calls.append(
        Request(f"cloudwatch:{model.name}", "*", {"cloudwatch:namespace": params["Namespace"]})))
    said: list[str] = []
    put_metrics(client, METRICS_NAMESPACE, RunResult("src1", "r1", "web_app", datetime.now(UTC)), said.append)
    assert said == [f"metrics: 7 written to CloudWatch namespace {METRICS_NAMESPACE}"]
    documents = permissions(lake, NODE_ROLE)
    assert [c.action for c in calls] == ["cloudwatch:PutMetricData"]
    assert all(allowed(documents, call) for call in calls)
    elsewhere = [Request(c.action, c.resource, {"cloudwatch:namespace": "Billing"}) for c in calls]
    assert not any(allowed(documents, call) for call in elsewhere)
