"""The EMR cluster, its security configuration, security groups and managed scaling."""
import json

from stack_helpers import named, only, resources

GLUE_FACTORY = "com.amazonaws.glue.catalog.metastore.AWSGlueDataCatalogHiveClientFactory"


def configurations(cluster):
    return {c["Classification"]: c for c in json.loads(cluster["configurations_json"])}


def test_cluster_defaults(lake):
    cluster = only(lake, "aws_emr_cluster")
    assert cluster["name"] == "segment-data-lake"
    assert cluster["release_label"] == "emr-7.13.0"
    assert cluster["applications"] == ["Hadoop", "Hive", "Spark"]
    assert cluster["log_uri"] == "s3://my-company-segment-data-lake/logs/"
    assert cluster["master_instance_group"] == {
        "instance_type": "m5.xlarge", "instance_count": 1,
        "ebs_config": [{"size": 64, "type": "gp3", "volumes_per_instance": 1}]}
    assert cluster["core_instance_group"]["instance_count"] == 2
    assert cluster["core_instance_group"]["instance_type"] == "m5.xlarge"
    assert cluster["core_instance_group"]["ebs_config"][0]["type"] == "gp3"
    assert cluster["termination_protection"] is False
    assert cluster["keep_job_flow_alive_when_no_steps"] is True
    assert "key_name" not in cluster["ec2_attributes"]
    task = only(lake, "aws_emr_instance_group")
    assert task["instance_count"] == 2 and task["instance_type"] == "m5.xlarge"
    assert task["ebs_config"] == [{"size": 64, "type": "gp3", "volumes_per_instance": 1}]


def test_scaling_drift_is_ignored(lake):
    assert only(lake, "aws_emr_cluster")["lifecycle"] == {"ignore_changes": ["core_instance_group[0].instance_count"]}
    assert only(lake, "aws_emr_instance_group")["lifecycle"] == {"ignore_changes": ["instance_count"]}


def test_managed_scaling_defaults_and_overrides(synthesized):
    limits = only(synthesized.stacks["segment-data-lake"], "aws_emr_managed_scaling_policy")["compute_limits"][0]
    assert limits == {"unit_type": "Instances", "minimum_capacity_units": 2, "maximum_capacity_units": 8,
                      "maximum_ondemand_capacity_units": 8, "maximum_core_capacity_units": 2}
    complete = only(synthesized.stacks["complete"], "aws_emr_managed_scaling_policy")["compute_limits"][0]
    assert complete["maximum_capacity_units"] == 12 and complete["maximum_ondemand_capacity_units"] == 4


def test_glue_metastore_python_and_history_cleaner(lake):
    confs = configurations(only(lake, "aws_emr_cluster"))
    assert confs["hive-site"]["Properties"]["hive.metastore.client.factory.class"] == GLUE_FACTORY
    assert confs["spark-hive-site"]["Properties"]["hive.metastore.client.factory.class"] == GLUE_FACTORY
    export = confs["spark-env"]["Configurations"][0]
    assert export["Classification"] == "export" and export["Properties"]["PYSPARK_PYTHON"] == "python3.11"
    spark = confs["spark-defaults"]["Properties"]
    assert spark["spark.history.fs.cleaner.enabled"] == "true" and spark["spark.history.fs.cleaner.maxAge"] == "7d"


def test_vendor_tag_is_always_present(synthesized):
    for name, stack in synthesized.stacks.items():
        for cluster in resources(stack, "aws_emr_cluster").values():
            assert cluster["tags"]["vendor"] == "segment", name
            assert cluster["tags"]["for-use-with-amazon-emr-managed-policies"] == "true"
    assert only(synthesized.stacks["complete"], "aws_emr_cluster")["tags"]["env"] == "prod"


def test_security_configuration_requires_imdsv2_and_encrypts(lake):
    cluster = only(lake, "aws_emr_cluster")
    security = only(lake, "aws_emr_security_configuration")
    assert cluster["security_configuration"].startswith("${aws_emr_security_configuration.")
    document = json.loads(security["configuration"])
    assert document["InstanceMetadataServiceConfiguration"]["MinimumInstanceMetadataServiceVersion"] == 2
    at_rest = document["EncryptionConfiguration"]["AtRestEncryptionConfiguration"]
    assert at_rest["LocalDiskEncryptionConfiguration"]["EncryptionKeyProviderType"] == "AwsKms"
    assert at_rest["S3EncryptionConfiguration"]["EncryptionMode"] == "SSE-KMS"
    assert document["EncryptionConfiguration"]["EnableInTransitEncryption"] is False
    key = only(lake, "aws_kms_key")
    assert key["enable_key_rotation"] is True
    assert json.loads(key["policy"])["Statement"][0]["Principal"]["AWS"].endswith(":root")


def test_security_groups_are_own_and_open_to_nobody(synthesized):
    for name, stack in synthesized.stacks.items():
        for cluster in resources(stack, "aws_emr_cluster").values():
            lake = cluster["//"]["metadata"]["path"].rsplit("/Emr/", 1)[0]  # the cluster's own lake
            attributes = cluster["ec2_attributes"]
            for key, part in (("emr_managed_master_security_group", "Master"),
                              ("emr_managed_slave_security_group", "CoreTask"),
                              ("service_access_security_group", "ServiceAccess")):
                group = named(stack, "aws_security_group", f"{lake}/Security/{part}")
                assert part in attributes[key] and lake.split("/")[-1] in attributes[key]
                assert group["revoke_rules_on_delete"] is True
                assert "ingress" not in group and "egress" not in group
        for group in resources(stack, "aws_security_group").values():
            for rule in group.get("ingress", []):
                assert "0.0.0.0/0" not in (rule.get("cidr_blocks") or []), (name, rule)


def test_cluster_options_are_wired():
    from cdktf import TerraformStack, Testing

    from segment_data_lake import (
        AwsAccount,
        BootstrapAction,
        DataLakeCluster,
        DataLakeRoles,
        DataLakeRolesProps,
        EmrClusterProps,
        EmrSecurity,
    )
    from segment_data_lake.aws import AwsProvider

    stack = TerraformStack(Testing.app(), "cluster-alone")
    AwsProvider(stack, "aws", region="us-east-1")
    account = AwsAccount(stack, "Account")
    props = EmrClusterProps(
        subnet_id="subnet-0123456789abcdef0", key_name="ops", termination_protection=True,
        additional_master_security_group_ids=["sg-0aaaaaaaaaaaaaaaa"],
        additional_core_task_security_group_ids=["sg-0bbbbbbbbbbbbbbbb", "sg-0cccccccccccccccc"],
        in_transit_certificate_s3_uri="s3://certs/emr.zip", ebs_volume_size_gb=200, extra_applications=["Livy"],
        extra_configurations=[{"Classification": "spark-defaults", "Properties": {"spark.sql.shuffle.partitions": "64"}}],
        task_instance_type="r5.2xlarge", core_instance_count=1, tags={"vendor": "segment", "cost": "lake"})
    security = EmrSecurity(stack, "Security", subnet_id=props.subnet_id, name=props.name, tags=props.tags,
                           in_transit_certificate_s3_uri=props.in_transit_certificate_s3_uri, account=account)
    roles = DataLakeRoles(stack, "Roles", props=DataLakeRolesProps(external_ids=["ws1"]),
                          bucket_arn="arn:aws:s3:::b", cluster_key_arn=security.cluster_key_arn, account=account)
    DataLakeCluster(stack, "Emr", props=props, roles=roles, security=security, bucket_name="b",
                    bootstrap_actions=[BootstrapAction("hello", "s3://b/hello.sh", ["a"])])
    synthesized = json.loads(Testing.synth(stack))
    cluster = only(synthesized, "aws_emr_cluster")
    assert cluster["ec2_attributes"]["key_name"] == "ops"
    assert cluster["ec2_attributes"]["additional_master_security_groups"] == "sg-0aaaaaaaaaaaaaaaa"
    assert cluster["ec2_attributes"]["additional_slave_security_groups"] == "sg-0bbbbbbbbbbbbbbbb,sg-0cccccccccccccccc"
    assert cluster["termination_protection"] is True
    assert cluster["applications"] == ["Hadoop", "Hive", "Spark", "Livy"]
    assert cluster["core_instance_group"]["ebs_config"][0]["size"] == 200
    assert cluster["bootstrap_action"] == [{"name": "hello", "path": "s3://b/hello.sh", "args": ["a"]}]
    assert cluster["tags"]["cost"] == "lake"
    spark = configurations(cluster)["spark-defaults"]["Properties"]
    assert spark["spark.sql.shuffle.partitions"] == "64" and spark["spark.history.fs.cleaner.enabled"] == "true"
    assert only(synthesized, "aws_emr_instance_group")["instance_type"] == "r5.2xlarge"
    document = json.loads(only(synthesized, "aws_emr_security_configuration")["configuration"])
    assert document["EncryptionConfiguration"]["EnableInTransitEncryption"] is True
    assert document["EncryptionConfiguration"]["InTransitEncryptionConfiguration"]["TLSCertificateConfiguration"] == {
        "CertificateProviderType": "PEM", "S3Object": "s3://certs/emr.zip"}


def test_the_cluster_waits_for_its_policies_and_keeps_no_step_history(synthesized):
    for name, stack in synthesized.stacks.items():
        attachments = {f"aws_iam_role_policy_attachment.{key}" for key in resources(stack, "aws_iam_role_policy_attachment")}
        for cluster in resources(stack, "aws_emr_cluster").values():
            lake = cluster["//"]["metadata"]["path"].rsplit("/Emr/", 1)[0].split("/", 1)[1]
            own = {a for a in attachments if a.split(".")[1].startswith(lake.replace("/", "_") + "_Roles_")}
            assert own and set(cluster["depends_on"]) == own, name
            assert cluster["list_steps_states"] == ["PENDING", "RUNNING"]
