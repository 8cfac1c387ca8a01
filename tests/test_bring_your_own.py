"""Bring your own: a lake whose bucket, EMR roles and instance profile, security configuration, cluster key and
security groups exist already (examples/bring_your_own) creates none of them, points the cluster at them, and
attaches the lake's policies to the brought roles; the stack
validates and scans clean with the others (test_terraform, test_policy_scan)."""
import pytest
from stack_helpers import only, resources

from segment_data_lake import DataLakeBucket, DataLakeConfigError, DataLakeRolesProps, EmrClusterProps, EmrManagedSecurityGroups

pytestmark = pytest.mark.constructs


def test_a_brought_bucket_and_roles_are_used_and_not_created(synthesized):
    stack = synthesized.stacks["bring-your-own"]
    for rtype in ("aws_s3_bucket", "aws_s3_bucket_lifecycle_configuration", "aws_s3_bucket_policy",
                  "aws_iam_instance_profile", "aws_emr_security_configuration", "aws_security_group", "aws_kms_key",
                  "aws_sns_topic", "aws_sns_topic_policy"):
        assert resources(stack, rtype) == {}, rtype
    created_roles = {role["name"] for role in resources(stack, "aws_iam_role").values()}
    assert not any(name.startswith("SegmentEMR") for name in created_roles), created_roles  # the others: the lake's
    cluster = only(stack, "aws_emr_cluster")
    assert cluster["service_role"].endswith(":role/platform-emr-service")
    assert cluster["ec2_attributes"]["instance_profile"].endswith(":instance-profile/platform-emr-nodes")
    assert cluster["security_configuration"] == "platform-emr-encrypted"
    assert [cluster["ec2_attributes"][key] for key in ("emr_managed_master_security_group",
                                                       "emr_managed_slave_security_group",
                                                       "service_access_security_group")] == [
        "sg-0a1b2c3d4e5f60001", "sg-0a1b2c3d4e5f60002", "sg-0a1b2c3d4e5f60003"]
    # the brought key is the one the nodes may use (the brought configuration encrypts with it)
    key_use = [p for p in resources(stack, "aws_iam_policy").values() if "ClusterKey" in p["name"]]
    assert len(key_use) == 1 and ":key/8d3f1c2a-5b6e-4f70-9a81-2c3d4e5f6a7b" in key_use[0]["policy"]
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
    # the lake's alerts go to the platform's topic
    assert stack["output"]["alerts_topic_arn"]["value"].endswith(":platform-oncall")
    assert {t["arn"] for t in resources(stack, "aws_cloudwatch_event_target").values()} == {
        stack["output"]["alerts_topic_arn"]["value"]}


def test_bringing_needs_names_and_the_profiles_role():
    with pytest.raises(DataLakeConfigError, match="security configuration 'platform' is brought without "
                                                  "cluster_kms_key_arn: pass the KMS key it encrypts with"):
        EmrClusterProps(subnet_id="subnet-0a1b2c3d", security_configuration_name="platform")
    with pytest.raises(DataLakeConfigError, match="in_transit_certificate_s3_uri sets TLS in a security configuration"):
        EmrClusterProps(subnet_id="subnet-0a1b2c3d", security_configuration_name="platform",
                        cluster_kms_key_arn="arn:aws:kms:us-east-1:111122223333:key/k1",
                        in_transit_certificate_s3_uri="s3://certs/tls.zip")
    with pytest.raises(DataLakeConfigError, match="invalid cluster_kms_key_arn 'alias/platform': use the key's ARN"):
        EmrClusterProps(subnet_id="subnet-0a1b2c3d", cluster_kms_key_arn="alias/platform")
    with pytest.raises(DataLakeConfigError, match="security groups sg-0a1b2c3d, sg-0a1b2c3d and sg-0a1b2c3e are not "
                                                  "3 groups"):
        EmrManagedSecurityGroups(master="sg-0a1b2c3d", core_task="sg-0a1b2c3d", service_access="sg-0a1b2c3e")
    with pytest.raises(DataLakeConfigError, match="managed_security_groups .* is not an EmrManagedSecurityGroups"):
        EmrClusterProps(subnet_id="subnet-0a1b2c3d", managed_security_groups=("sg-0a1b2c3d",))
    with pytest.raises(DataLakeConfigError, match="invalid core_task security group id 'default'"):
        EmrManagedSecurityGroups(master="sg-0a1b2c3d", core_task="default", service_access="sg-0a1b2c3e")
    assert DataLakeBucket.from_bucket_name("acme-lake", partition="aws-cn").bucket_arn == "arn:aws-cn:s3:::acme-lake"
    assert DataLakeBucket.from_bucket_name("acme-lake").in_partition("aws-us-gov").bucket_arn == (
        "arn:aws-us-gov:s3:::acme-lake")
    with pytest.raises(DataLakeConfigError, match="invalid S3 bucket name 'Acme_Lake'"):
        DataLakeBucket.from_bucket_name("Acme_Lake")
    with pytest.raises(DataLakeConfigError, match="emr_instance_profile_name 'nodes' is brought without its role"):
        DataLakeRolesProps(external_ids=["ws1"], emr_instance_profile_name="nodes")
    with pytest.raises(DataLakeConfigError, match="invalid emr_service_role_name 'arn:aws:iam::1:role/x': use the name"):
        DataLakeRolesProps(external_ids=["ws1"], emr_service_role_name="arn:aws:iam::1:role/x")
