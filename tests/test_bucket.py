"""The bucket: lifecycle on an existing bucket, secure defaults on a created one."""
import json

import pytest
from stack_helpers import as_list, only, policy, resources

pytestmark = pytest.mark.constructs


def rules_by_id(stack):
    return {rule["id"]: rule for rule in only(stack, "aws_s3_bucket_lifecycle_configuration")["rule"]}


def test_existing_bucket_gets_only_a_lifecycle(lake):
    assert resources(lake, "aws_s3_bucket") == {}
    lifecycle = only(lake, "aws_s3_bucket_lifecycle_configuration")
    assert lifecycle["bucket"] == "my-company-segment-data-lake"


def test_stage_objects_expire_after_14_days_and_multipart_uploads_after_7(lake):
    rules = rules_by_id(lake)
    stage = rules["segment-stage-expiration"]
    assert stage["status"] == "Enabled"
    assert stage["filter"] == [{"prefix": "segment-stage/"}]
    assert stage["expiration"] == [{"days": 14}]
    multipart = rules["abort-incomplete-multipart-uploads"]
    assert multipart["abort_incomplete_multipart_upload"] == [{"days_after_initiation": 7}]
    assert multipart["filter"] == [{"prefix": ""}]
    assert "expire-noncurrent-versions" not in rules  # an existing bucket's versioning is not ours


def test_created_bucket_has_secure_defaults(synthesized):
    stack = synthesized.stacks["complete"]
    bucket = only(stack, "aws_s3_bucket")
    assert bucket["bucket"] == "acme-segment-data-lake-complete"
    assert bucket["tags"]["vendor"] == "segment"
    block = only(stack, "aws_s3_bucket_public_access_block")
    assert all(block[k] is True for k in ("block_public_acls", "block_public_policy", "ignore_public_acls",
                                          "restrict_public_buckets"))
    assert only(stack, "aws_s3_bucket_ownership_controls")["rule"]["object_ownership"] == "BucketOwnerEnforced"
    encryption = only(stack, "aws_s3_bucket_server_side_encryption_configuration")["rule"][0]
    assert encryption["apply_server_side_encryption_by_default"]["sse_algorithm"] == "AES256"
    assert only(stack, "aws_s3_bucket_versioning")["versioning_configuration"]["status"] == "Enabled"
    tls = policy(only(stack, "aws_s3_bucket_policy"))["Statement"][0]
    assert tls["Effect"] == "Deny" and tls["Principal"] == "*"
    assert tls["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert as_list(tls["Resource"])[1].endswith("/*")


def test_a_flow_log_into_the_lake_bucket_waits_for_it_and_its_delivery_grant_stays(synthesized):
    stack = synthesized.stacks["complete"]
    flow_log = only(stack, "aws_flow_log")
    assert flow_log["log_destination"].startswith("${aws_s3_bucket.")  # a reference: created after the bucket
    statements = {s["Sid"]: s for s in policy(only(stack, "aws_s3_bucket_policy"))["Statement"]}
    assert set(statements) == {"DenyRequestsWithoutTls", "AWSLogDeliveryWrite", "AWSLogDeliveryAclCheck"}
    write = statements["AWSLogDeliveryWrite"]
    assert write["Principal"] == {"Service": "delivery.logs.amazonaws.com"} and write["Action"] == "s3:PutObject"
    assert "/logs/vpc-flow/AWSLogs/" in write["Resource"]


def test_a_brought_bucket_keeps_its_lifecycle_rules_unless_the_user_chooses():
    from segment_data_lake import DataLakeBucket, DataLakeBucketProps, DataLakeConfigError
    from segment_data_lake.aws import AwsProvider, TerraformStack, Testing

    with pytest.raises(DataLakeConfigError, match="bucket 'lake-bucket' exists already .create_bucket=False.: set "
                                                  "manage_lifecycle=True to replace its lifecycle rules"):
        DataLakeBucketProps(bucket_name="lake-bucket")
    with pytest.raises(DataLakeConfigError, match="a created bucket gets the lake's lifecycle rules"):
        DataLakeBucketProps(bucket_name="lake-bucket", create_bucket=True, manage_lifecycle=False)
    stack = TerraformStack(Testing.app(), "bucket-left-alone")
    AwsProvider(stack, "aws", region="us-east-1")
    bucket = DataLakeBucket(stack, "Bucket", partition="aws",
                            props=DataLakeBucketProps(bucket_name="lake-bucket", manage_lifecycle=False))
    assert bucket.lifecycle is None
    assert resources(json.loads(Testing.synth(stack)), "aws_s3_bucket_lifecycle_configuration") == {}


def test_extra_policy_statements_are_checked():
    from segment_data_lake import DataLakeBucketProps, DataLakeConfigError

    with pytest.raises(DataLakeConfigError, match="give each a 'Sid' and an 'Effect'"):
        DataLakeBucketProps(bucket_name="lake-bucket", create_bucket=True, extra_policy_statements=[{"Effect": "Allow"}])
    with pytest.raises(DataLakeConfigError, match="extra_policy_statements is set for an existing bucket"):
        DataLakeBucketProps(bucket_name="lake-bucket", manage_lifecycle=True,
                            extra_policy_statements=[{"Sid": "A", "Effect": "Allow"}])


def test_created_bucket_configures_stage_days_and_expires_old_versions(synthesized):
    rules = rules_by_id(synthesized.stacks["complete"])
    assert rules["segment-stage-expiration"]["expiration"] == [{"days": 7}]
    assert rules["expire-noncurrent-versions"]["noncurrent_version_expiration"] == [{"noncurrent_days": 30}]


def test_standalone_bucket_with_extra_rules_and_kms():
    from cdktf import TerraformStack, Testing

    from segment_data_lake import DataLakeBucket, DataLakeBucketProps, EmrSecurity, LakeLifecycleProps
    from segment_data_lake.aws import (
        AwsProvider,
        S3BucketLifecycleConfigurationRule,
        S3BucketLifecycleConfigurationRuleExpiration,
        S3BucketLifecycleConfigurationRuleFilter,
    )

    stack = TerraformStack(Testing.app(), "bucket-alone")
    AwsProvider(stack, "aws", region="us-east-1")
    archive = S3BucketLifecycleConfigurationRule(
        id="expire-exports", status="Enabled", filter=[S3BucketLifecycleConfigurationRuleFilter(prefix="exports/")],
        expiration=[S3BucketLifecycleConfigurationRuleExpiration(days=90)])
    bucket = DataLakeBucket(stack, "Bucket", partition="aws", props=DataLakeBucketProps(
        bucket_name="lake-alone", create_bucket=True,
        lifecycle=LakeLifecycleProps(extra_rules=[archive], abort_incomplete_multipart_days=3),
        kms_key=EmrSecurity.from_key_arn(stack, "Key", "arn:aws:kms:us-east-1:123456789012:key/abc")))
    synthesized = json.loads(Testing.synth(stack))
    rules = rules_by_id(synthesized)
    assert rules["expire-exports"]["filter"] == [{"prefix": "exports/"}]
    assert rules["abort-incomplete-multipart-uploads"]["abort_incomplete_multipart_upload"] == [
        {"days_after_initiation": 3}]
    by_default = only(synthesized, "aws_s3_bucket_server_side_encryption_configuration")["rule"][0]
    assert by_default["apply_server_side_encryption_by_default"] == {
        "sse_algorithm": "aws:kms", "kms_master_key_id": "arn:aws:kms:us-east-1:123456789012:key/abc"}
    assert by_default["bucket_key_enabled"] is True
    assert bucket.bucket is not None and bucket.lifecycle is not None


def test_main_py_asks_for_the_choice_when_it_is_given_a_bucket():
    from conftest import REPO, load_module

    app = load_module(REPO / "main.py", "main_for_the_lifecycle_choice")
    with pytest.raises(SystemExit, match="SEGMENT_LAKE_BUCKET=acme-lake exists already: set "
                                         "SEGMENT_LAKE_MANAGE_LIFECYCLE=1 to replace its lifecycle rules"):
        app.manage_lifecycle({"SEGMENT_LAKE_BUCKET": "acme-lake"})
    assert app.manage_lifecycle({"SEGMENT_LAKE_BUCKET": "acme-lake", "SEGMENT_LAKE_MANAGE_LIFECYCLE": "0"}) is False
    assert app.manage_lifecycle({"SEGMENT_LAKE_BUCKET": "acme-lake", "SEGMENT_LAKE_MANAGE_LIFECYCLE": "1"}) is True
    assert app.manage_lifecycle({}) is True  # main.py's placeholder bucket, so that it synthesizes out of the box
    assert app.manage_lifecycle({"SEGMENT_LAKE_CREATE_BUCKET": "1", "SEGMENT_LAKE_BUCKET": "acme-lake"}) is None
