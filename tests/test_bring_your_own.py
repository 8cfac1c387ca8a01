"""Bring your own: a lake whose bucket, EMR roles and instance profile exist already (examples/bring_your_own)
creates none of them, points the cluster at them, and attaches the lake's policies to the brought roles; the stack
validates and scans clean with the others (test_terraform, test_policy_scan)."""
import pytest
from stack_helpers import only, resources

from segment_data_lake import DataLakeBucket, DataLakeConfigError, DataLakeRolesProps

pytestmark = pytest.mark.constructs


def test_a_brought_bucket_and_roles_are_used_and_not_created(synthesized):
    stack = synthesized.stacks["bring-your-own"]
    for rtype in ("aws_s3_bucket", "aws_s3_bucket_lifecycle_configuration", "aws_s3_bucket_policy",
                  "aws_iam_instance_profile"):
        assert resources(stack, rtype) == {}, rtype
    created_roles = {role["name"] for role in resources(stack, "aws_iam_role").values()}
    assert not any(name.startswith("SegmentEMR") for name in created_roles), created_roles  # the others: the lake's
    cluster = only(stack, "aws_emr_cluster")
    assert cluster["service_role"].endswith(":role/platform-emr-service")
    assert cluster["ec2_attributes"]["instance_profile"].endswith(":instance-profile/platform-emr-nodes")
    attached = {}
    for attachment in resources(stack, "aws_iam_role_policy_attachment").values():
        attached.setdefault(attachment["role"], []).append(attachment["policy_arn"])
    assert len(attached["platform-emr-nodes"]) == 2  # the nodes' policy and the cluster key's use
    # passing the nodes' role, to EC2 only; the managed policy the brought role has is not the stack's to detach
    assert len(attached["platform-emr-service"]) == 1
    assert not any("AmazonEMRServicePolicy_v2" in arn for arn in attached["platform-emr-service"])
    # the app goes into the brought bucket, which the outputs name
    assert all(o["bucket"] == "acme-platform-data-lake" for o in resources(stack, "aws_s3_object").values())
    assert stack["output"]["s3_bucket"]["value"] == "acme-platform-data-lake"


def test_bringing_needs_names_and_the_profiles_role():
    assert DataLakeBucket.from_bucket_name("acme-lake", partition="aws-cn").bucket_arn == "arn:aws-cn:s3:::acme-lake"
    assert DataLakeBucket.from_bucket_name("acme-lake").in_partition("aws-us-gov").bucket_arn == (
        "arn:aws-us-gov:s3:::acme-lake")
    with pytest.raises(DataLakeConfigError, match="invalid S3 bucket name 'Acme_Lake'"):
        DataLakeBucket.from_bucket_name("Acme_Lake")
    with pytest.raises(DataLakeConfigError, match="emr_instance_profile_name 'nodes' is brought without its role"):
        DataLakeRolesProps(external_ids=["ws1"], emr_instance_profile_name="nodes")
    with pytest.raises(DataLakeConfigError, match="invalid emr_service_role_name 'arn:aws:iam::1:role/x': use the name"):
        DataLakeRolesProps(external_ids=["ws1"], emr_service_role_name="arn:aws:iam::1:role/x")
