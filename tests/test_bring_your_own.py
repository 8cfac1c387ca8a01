"""Bring your own: a lake whose bucket, EMR roles and instance profile, security configuration, cluster key and
security groups exist already (examples/bring_your_own) creates none of them, points the cluster at them, and
attaches the lake's policies to the brought roles; the stack
validates and scans clean with the others (test_terraform, test_policy_scan)."""
import inspect
import json
import re

import pytest
from stack_helpers import only, resources

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
    # in the partition and account of the stack's provider
    assert re.fullmatch(r"arn:\$\{data\.aws_partition\.[\w.]+\}:iam::\$\{data\.aws_caller_identity\.[\w.]+\}:role/"
                        r"platform-emr-service", cluster["service_role"])
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
    from segment_data_lake import (
        DataLakeAlerts,
        DataLakeBucket,
        DataLakeConfigError,
        DataLakeRoles,
        DataLakeRolesProps,
        EmrSecurity,
        EmrSecurityProps,
    )
    from segment_data_lake.aws import App, TerraformStack

    stack = TerraformStack(App(), "brought")
    key = EmrSecurity.from_key_arn(stack, "Key", "arn:aws:kms:us-east-1:111122223333:key/k1")
    configuration = EmrSecurity.from_security_configuration_name(stack, "Configuration", "platform")
    with pytest.raises(DataLakeConfigError, match="security configuration 'platform' is brought without "
                                                  "cluster_key: pass the KMS key it encrypts with"):
        EmrSecurityProps(subnet_id="subnet-0a1b2c3d", security_configuration=configuration)
    with pytest.raises(DataLakeConfigError, match="in_transit_certificate_s3_uri sets TLS in a security configuration"):
        EmrSecurityProps(subnet_id="subnet-0a1b2c3d", security_configuration=configuration, cluster_key=key,
                         in_transit_certificate_s3_uri="s3://certs/tls.zip")
    with pytest.raises(DataLakeConfigError, match="invalid KMS key ARN 'alias/platform': use the key's ARN"):
        EmrSecurity.from_key_arn(stack, "Alias", "alias/platform")
    with pytest.raises(DataLakeConfigError, match="security groups sg-0a1b2c3d, sg-0a1b2c3d and sg-0a1b2c3e are not "
                                                  "3 groups"):
        EmrSecurity.from_security_group_ids(stack, "Same", master="sg-0a1b2c3d", core_task="sg-0a1b2c3d",
                                            service_access="sg-0a1b2c3e")
    with pytest.raises(DataLakeConfigError, match="managed_security_groups .* is not an EmrManagedSecurityGroups"):
        EmrSecurityProps(subnet_id="subnet-0a1b2c3d", managed_security_groups=("sg-0a1b2c3d",))
    with pytest.raises(DataLakeConfigError, match="invalid core_task security group id 'default'"):
        EmrSecurity.from_security_group_ids(stack, "Default", master="sg-0a1b2c3d", core_task="default",
                                            service_access="sg-0a1b2c3e")
    with pytest.raises(DataLakeConfigError, match="invalid S3 bucket name 'Acme_Lake'"):
        DataLakeBucket.from_bucket_name(stack, "BadBucket", "Acme_Lake")
    nodes = DataLakeRoles.from_instance_profile_name(stack, "Nodes", "nodes")
    with pytest.raises(DataLakeConfigError, match="emr_instance_profile 'nodes' is brought without its role"):
        DataLakeRolesProps(external_ids=["ws1"], emr_instance_profile=nodes)
    with pytest.raises(DataLakeConfigError, match="invalid role name 'arn:aws:iam::1:role/x': use the name"):
        DataLakeRoles.from_role_name(stack, "Arn", "arn:aws:iam::1:role/x")
    with pytest.raises(DataLakeConfigError, match="emr_service_role 'platform-emr-service' is not a role: pass "
                                                  "DataLakeRoles.from_role_name"):
        DataLakeRolesProps(external_ids=["ws1"], emr_service_role="platform-emr-service")
    with pytest.raises(DataLakeConfigError, match="invalid SNS topic ARN 'platform-oncall'"):
        DataLakeAlerts.from_topic_arn(stack, "Topic", "platform-oncall")


def test_every_brought_piece_has_one_shape():
    """Each is made by a from_*(scope, id, ...) of the construct that would create it, synthesizes nothing, and builds
    its ARN in the partition and account of the stack's provider."""
    import segment_data_lake
    from segment_data_lake import DataLakeBucket, DataLakeRoles
    from segment_data_lake.aws import App, AwsProvider, TerraformOutput, TerraformStack, Testing

    made = {cls.__name__ + "." + name for cls in vars(segment_data_lake).values() if isinstance(cls, type)
            for name in vars(cls) if name.startswith("from_")}
    assert made == {"DataLakeBucket.from_bucket_name", "DataLakeRoles.from_role_name",
                    "DataLakeRoles.from_instance_profile_name", "EmrSecurity.from_key_arn",
                    "EmrSecurity.from_security_configuration_name", "EmrSecurity.from_security_group_ids",
                    "DataLakeAlerts.from_topic_arn"}
    for name in made:
        cls, method = name.split(".")
        assert list(inspect.signature(getattr(getattr(segment_data_lake, cls), method)).parameters)[:2] == [
            "scope", "id"], name
    stack = TerraformStack(App(), "shape")
    AwsProvider(stack, "aws", region="eu-west-1")
    bucket = DataLakeBucket.from_bucket_name(stack, "Bucket", "acme-lake")
    role = DataLakeRoles.from_role_name(stack, "Role", "platform-emr-nodes")
    for ref in (bucket, role):
        assert ref.node.scope is stack and not ref.node.children
    TerraformOutput(stack, "bucket_arn", value=bucket.bucket_arn)
    TerraformOutput(stack, "role_arn", value=role.arn)
    synthesized = json.loads(Testing.synth(stack))
    partition, account = r"\$\{data\.aws_partition\.\w+\.partition\}", r"\$\{data\.aws_caller_identity\.\w+\.account_id\}"
    assert re.fullmatch(f"arn:{partition}:s3:::acme-lake", synthesized["output"]["bucket_arn"]["value"])
    assert re.fullmatch(f"arn:{partition}:iam::{account}:role/platform-emr-nodes",
                        synthesized["output"]["role_arn"]["value"])
    # nothing of the references' own reaches the plan: only the data sources that name the partition and account
    assert "resource" not in synthesized
    assert set(synthesized["data"]) == {"aws_partition", "aws_caller_identity", "aws_region"}
