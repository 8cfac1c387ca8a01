"""Least privilege, proven: every S3 and Glue call of a sync on S3 with Glue (three runs: new tables, new columns and
duplicates, nothing new) is recorded, from botocore's events and from the local endpoint's side for Spark's s3a,
and evaluated against the EMR instance role's synthesized policies with moto's IAM policy evaluator. The sync may
need nothing the role lacks, and the role may hold no S3 or Glue action the sync never uses unless the README
says which part of EMR needs it. And nothing secret reaches the logs or the reports."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
from aws_calls import ACCOUNT, REGION, botocore_calls, s3_request_calls
from fault_proxy import FaultProxy
from lake_events import write_run1, write_run2
from moto.iam.access_control import IAMPolicy, PermissionResult
from stack_helpers import resources
from sync_harness import Lake

from segment_lake.catalog.glue import GlueCatalog

BUCKET = "my-company-segment-data-lake"  # the bucket of the project's own stack (main.py)
README = Path(__file__).resolve().parents[1] / "README.md"
# Granted for a part of EMR other than the sync; each is explained in the README's table of the nodes' permissions.
EXPLAINED = {
    "s3:GetBucketLocation": "EMRFS",
    "s3:ListBucketMultipartUploads": "multipart",
    "s3:ListMultipartUploadParts": "multipart",
    "s3:AbortMultipartUpload": "multipart",
    "glue:GetDatabases": "metastore",
    "glue:GetPartition": "metastore",
    "glue:GetPartitions": "metastore",
    "glue:CreatePartition": "metastore",
    "glue:UpdatePartition": "metastore",
    "glue:GetUserDefinedFunctions": "metastore",
}
_TOKENS = {r"\$\{data\.aws_partition\.[^}]+\.partition\}": "aws", r"\$\{data\.aws_region\.[^}]+\.name\}": REGION,
           r"\$\{data\.aws_caller_identity\.[^}]+\.account_id\}": ACCOUNT}


def instance_policies(stack: dict) -> list[dict]:
    """The policy documents attached to the EMR instance role, with the account, region and partition filled in."""
    [role_id] = [key for key, role in resources(stack, "aws_iam_role").items()
                 if role["//"]["metadata"]["path"].endswith("/EmrInstanceRole")]
    policy_ids = [re.search(r"aws_iam_policy\.([^.]+)\.arn", attachment["policy_arn"])[1]
                  for attachment in resources(stack, "aws_iam_role_policy_attachment").values()
                  if f"aws_iam_role.{role_id}." in attachment["role"]]
    documents = []
    for policy_id in policy_ids:
        text = resources(stack, "aws_iam_policy")[policy_id]["policy"]
        for token, value in _TOKENS.items():
            text = re.sub(token, value, text)
        documents.append(json.loads(text))
    return documents


def granted_actions(documents: list[dict]) -> set[str]:
    return {action for document in documents for statement in document["Statement"] if statement["Effect"] == "Allow"
            for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
            if action.startswith(("s3:", "glue:"))}


def permitted(documents: list[dict], action: str, resource: str) -> bool:
    results = [IAMPolicy(json.dumps(document)).is_action_permitted(action, resource) for document in documents]
    return PermissionResult.DENIED not in results and PermissionResult.PERMITTED in results


@pytest.fixture
def recorded_sync(spark, s3a, aws_endpoint, tmp_path, monkeypatch):
    """Three syncs of one source on S3 with Glue; returns the (action, resource) of every call they made."""
    s3 = s3a(BUCKET)
    proxy = FaultProxy(aws_endpoint)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set(f"fs.s3a.bucket.{BUCKET}.endpoint", proxy.start())
    monkeypatch.setenv("SEGMENT_LAKE_GLUE_ENDPOINT", aws_endpoint)

    def upload(write):
        staging = tmp_path / write.__name__
        write(staging, "src1")
        for path in staging.rglob("*"):
            if path.is_file():
                s3.upload_file(str(path), BUCKET, str(path.relative_to(staging)))

    boto3.setup_default_session(region_name=REGION)
    try:
        with botocore_calls(boto3.DEFAULT_SESSION) as calls:
            lake = Lake(spark, GlueCatalog(region=REGION), "s3", f"s3a://{BUCKET}", f"s3a://{BUCKET}/segment-logs/src1",
                        "src1", "least_privilege")
            upload(write_run1)
            results = [lake.sync()]
            upload(write_run2)
            results += [lake.sync(), lake.sync()]
    finally:
        conf.unset(f"fs.s3a.bucket.{BUCKET}.endpoint")
        proxy.stop()
    assert [r.status for r in results] == ["finished"] * 3 and results[1].duplicate_count and results[1].tables
    s3a_calls = [call for request in proxy.requests for call in s3_request_calls(request)]
    assert s3a_calls and any(a == "glue:UpdateTable" for a, _ in calls)
    return calls + s3a_calls


def test_every_call_of_a_sync_is_granted_and_every_grant_is_used_or_explained(lake, recorded_sync):
    documents = instance_policies(lake)
    refused = sorted({(action, resource) for action, resource in recorded_sync
                      if not permitted(documents, action, resource)})
    assert not refused, f"the EMR instance role lacks {refused[:5]}"
    used = {action for action, _ in recorded_sync}
    granted = granted_actions(documents)
    unexplained = granted - used - set(EXPLAINED)
    assert not unexplained, f"granted and never used by the sync, with no reason in the README: {sorted(unexplained)}"
    assert set(EXPLAINED) <= granted, f"explained but no longer granted: {sorted(set(EXPLAINED) - granted)}"
    assert not set(EXPLAINED) & used, f"the sync uses these: {sorted(set(EXPLAINED) & used)}; drop them from EXPLAINED"
    section = README.read_text().split("### What the EMR nodes may do", 1)[1].split("\n## ", 1)[0]
    for action in granted:
        assert f"`{action}`" in section, f"{action} is not in the README's table of the nodes' permissions"
    # the recorded calls reach nothing outside the lake bucket, and Glue only through its catalog
    assert {r.split(":::", 1)[1].split("/", 1)[0] for a, r in recorded_sync if a.startswith("s3:")} == {BUCKET}


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
