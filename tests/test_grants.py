"""SegmentDataLake.grant_read and grant_read_write, judged by IAM's evaluation of the policies that
examples/bring_your_own attaches to its analysts' and data team's roles: what each may read and change, and what
stays out of reach."""
import json
from dataclasses import replace

import pytest
from aws_calls import ACCOUNT, REGION
from iam_evaluator import Request, allowed, key_allows
from role_policies import permissions, resolve, trust
from stack_helpers import resources

pytestmark = pytest.mark.constructs

BUCKET = "arn:aws:s3:::acme-platform-data-lake"
GLUE = f"arn:aws:glue:{REGION}:{ACCOUNT}"
TABLE = f"{BUCKET}/segment-data/data/Kq8dV1bX2c/segment_type=identify/day=2024-01-02/hr=03/part-x.snappy.parquet"


def glue(action: str, database: str, table: str | None = None) -> list[Request]:
    """A Glue call on a table (or a database) is authorized on the catalog, the database and the table."""
    resources = [f"{GLUE}:catalog", f"{GLUE}:database/{database}"] + ([f"{GLUE}:table/{database}/{table}"]
                                                                       if table else [])
    return [Request(action, resource) for resource in resources]


def may(documents, requests) -> bool:
    return all(allowed(documents, request) for request in requests)


def cluster_key(stack: dict) -> str:
    """The cluster's key, with which EMRFS encrypts every file the sync writes: the one the example brings."""
    assert resources(stack, "aws_kms_key") == {}
    return f"arn:aws:kms:us-west-2:{ACCOUNT}:key/8d3f1c2a-5b6e-4f70-9a81-2c3d4e5f6a7b"


def test_a_reader_reads_the_lakes_tables_and_reports_and_nothing_else(synthesized):
    stack = synthesized.stacks["bring-your-own"]
    reader = permissions(stack, "acme-lake-analysts")
    assert may(reader, [Request("s3:GetObject", TABLE),
                        Request("s3:GetObject", f"{BUCKET}/segment-data/reports/source_id=Kq8dV1bX2c/day=2024-01-02/"
                                                f"run_id=r1/report.json"),
                        Request("s3:GetObject", f"{BUCKET}/segment-data/state/Kq8dV1bX2c/duplicates/part-r1-0.parquet"),
                        Request("s3:GetBucketLocation", BUCKET), Request("kms:Decrypt", cluster_key(stack)),
                        # a folder looked up as a key, as s3a does before listing it
                        Request("s3:GetObject", f"{BUCKET}/segment-data/reports"),
                        Request("s3:ListBucket", BUCKET, {"s3:prefix": "segment-data/data/Kq8dV1bX2c/segment_type=identify/"})])
    assert may(reader, glue("glue:GetTable", "acme_web", "identify") + glue("glue:GetPartitions", "acme_web", "identify")
               + glue("glue:GetTable", "__segment_datalake", "sync_reports"))
    for denied in ([Request("s3:PutObject", TABLE)], [Request("s3:DeleteObject", TABLE)],
                   [Request("s3:GetObject", f"{BUCKET}/segment-logs/Kq8dV1bX2c/1704153600000/a.gz")],  # raw events
                   [Request("s3:GetObject", f"{BUCKET}/segment-data/state/Kq8dV1bX2c/pending.json")],
                   [Request("kms:GenerateDataKey", cluster_key(stack))],
                   glue("glue:UpdateTable", "acme_web", "identify"), glue("glue:GetTable", "finance", "salaries")):
        assert not may(reader, denied), denied


def test_a_writer_changes_the_lake_but_not_the_raw_events_the_app_or_other_databases(synthesized):
    stack = synthesized.stacks["bring-your-own"]
    writer = permissions(stack, "acme-lake-data-team")
    assert may(writer, [Request("s3:PutObject", TABLE), Request("s3:DeleteObject", TABLE),
                        Request("s3:PutObject", f"{BUCKET}/segment-data/state/Kq8dV1bX2c/compaction.json"),
                        Request("s3:PutObject", f"{BUCKET}/segment-stage/Kq8dV1bX2c/run/x.parquet"),
                        Request("s3:ListBucket", BUCKET),  # a missing key is a 404, not a 403, only to one who lists
                        Request("kms:Decrypt", cluster_key(stack)), Request("kms:GenerateDataKey", cluster_key(stack))])
    assert may(writer, glue("glue:UpdateTable", "acme_web", "identify")
               + glue("glue:BatchUpdatePartition", "__segment_datalake", "sync_reports"))
    for denied in ([Request("s3:PutObject", f"{BUCKET}/segment-logs/Kq8dV1bX2c/1704153600000/a.gz")],
                   [Request("s3:PutObject", f"{BUCKET}/segment-lake-app/abc/segment-lake-app.zip")],
                   [Request("s3:PutObject", f"{BUCKET}/segment-lake-replay/lake.json")],
                   [Request("s3:DeleteBucket", BUCKET)], [Request("s3:PutBucketPolicy", BUCKET)],
                   glue("glue:CreateDatabase", "finance"), glue("glue:DeleteTable", "acme_web", "identify"),
                   glue("glue:UpdateTable", "finance", "salaries")):
        assert not may(writer, denied), denied


def test_a_lake_formation_reader_queries_from_athena_opted_in_or_not(lake_formation_stack):
    """What Athena calls for a query of one table, as its documentation lists it, judged against the synthesized
    policies: a principal not opted in to Lake Formation (hybrid mode) is judged by IAM alone, its own calls to S3,
    Glue and KMS; an opted-in one asks Lake Formation for credentials (GetDataAccess), and Lake Formation reads as
    the role the bucket is registered with, which must read the table's files and decrypt them with the cluster's
    key (whose policy leaves its use to IAM)."""
    stack = lake_formation_stack
    bucket, key = "arn:aws:s3:::acme-lake", f"arn:aws:kms:{REGION}:{ACCOUNT}:key/"
    [cluster_key] = [name for name, k in resources(stack, "aws_kms_key").items() if "ClusterKey" in name]
    table_file = f"{bucket}/segment-data/data/src0001/segment_type=identify/day=2024-01-02/hr=03/part-0.parquet"
    catalog = glue("glue:GetDatabase", "web") + glue("glue:GetTable", "web", "identify") + glue(
        "glue:GetPartitions", "web", "identify")
    files = [Request("s3:GetBucketLocation", bucket), Request("s3:ListBucket", bucket),
             Request("s3:GetObject", table_file), Request("kms:Decrypt", key + cluster_key)]
    reader = permissions(stack, "acme-readers")
    assert may(reader, catalog + files)  # not opted in: IAM alone
    assert may(reader, catalog + [Request("lakeformation:GetDataAccess")])  # opted in
    registration = permissions(stack, "SegmentDataLakeLakeFormationRole")
    assert may(registration, files[1:])
    assert not may(registration, [Request("s3:GetObject", f"{bucket}/segment-logs/src0001/1704153600000/a.gz")])
    assert allowed([trust(stack, "SegmentDataLakeLakeFormationRole")],
                   Request("sts:AssumeRole", principal="lakeformation.amazonaws.com"))
    # the key's policy and each role's own, together, as KMS judges them
    key_policy = json.loads(resolve(stack, resources(stack, "aws_kms_key")[cluster_key]["policy"]))
    decrypt = Request("kms:Decrypt", key + cluster_key)
    for role, documents in (("acme-readers", reader), ("SegmentDataLakeLakeFormationRole", registration)):
        assert key_allows(key_policy, documents, replace(decrypt, principal=f"arn:aws:iam::{ACCOUNT}:role/{role}"))
    assert not key_allows(key_policy, [], replace(decrypt, principal=f"arn:aws:iam::{ACCOUNT}:role/acme-other"))
    [location] = resources(stack, "aws_lakeformation_resource").values()
    assert location["role_arn"].startswith("${aws_iam_role.") and "use_service_linked_role" not in location
    assert location["hybrid_access_enabled"] is True


@pytest.fixture(scope="module")
def lake_formation_stack() -> dict:
    """A one-source lake under Lake Formation, and a reader role given grant_read."""
    from cdktf import App, TerraformStack, Testing
    from stack_helpers import small_lake_props

    from segment_data_lake import SegmentDataLake
    from segment_data_lake.aws import AwsProvider, IamRole

    stack = TerraformStack(App(), "lake-formation-reader")
    AwsProvider(stack, "aws", region=REGION)
    lake = SegmentDataLake(stack, "Lake", props=small_lake_props(create_glue_databases=True, lake_formation=True))
    readers = IamRole(stack, "Readers", name="acme-readers", assume_role_policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}}]}))
    lake.grant_read("Readers", readers)
    return json.loads(Testing.synth(stack))
