"""The EMR cluster, its security configuration, security groups and managed scaling."""
import json
import os
import subprocess
import sys

import pytest
from conftest import REPO
from stack_helpers import named, only, policy, resolve, resources
from terraform_cli import PLUGIN_DIR, run_terraform

pytestmark = pytest.mark.constructs

GLUE_FACTORY = "com.amazonaws.glue.catalog.metastore.AWSGlueDataCatalogHiveClientFactory"


def configurations(cluster):
    return {c["Classification"]: c for c in json.loads(cluster["configurations_json"])}


def test_cluster_defaults(lake):
    cluster = only(lake, "aws_emr_cluster")
    assert cluster["name"] == "segment-data-lake"
    assert cluster["release_label"] == "emr-7.13.0"
    assert cluster["applications"] == ["Hadoop", "Hive", "Spark"]
    assert cluster["log_uri"] == "s3://my-company-segment-data-lake/logs/"
    gp3 = {"size": 64, "type": "gp3", "volumes_per_instance": 1, "iops": 3000, "throughput": 125}
    assert cluster["master_instance_group"] == {"instance_type": "m5.xlarge", "instance_count": 1, "ebs_config": [gp3]}
    assert cluster["core_instance_group"]["instance_count"] == 2
    assert cluster["core_instance_group"]["instance_type"] == "m5.xlarge"
    assert cluster["core_instance_group"]["ebs_config"] == [gp3]
    assert cluster["scale_down_behavior"] == "TERMINATE_AT_TASK_COMPLETION"
    assert cluster["termination_protection"] is False
    assert cluster["keep_job_flow_alive_when_no_steps"] is True
    assert "key_name" not in cluster["ec2_attributes"]
    task = only(lake, "aws_emr_instance_group")
    assert task["instance_count"] == 2 and task["instance_type"] == "m5.xlarge"
    assert task["ebs_config"] == [{"size": 64, "type": "gp3", "volumes_per_instance": 1, "iops": 3000}]


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
    key = named(lake, "aws_kms_key", "Security/ClusterKey")
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
                if not attributes[key].startswith("${"):
                    continue  # brought by its stack (test_bring_your_own)
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
        DataLakeBucket,
        DataLakeCluster,
        DataLakeRoles,
        DataLakeRolesProps,
        EmrClusterProps,
        EmrSecurityProps,
    )
    from segment_data_lake.aws import AwsProvider

    stack = TerraformStack(Testing.app(), "cluster-alone")
    AwsProvider(stack, "aws", region="us-east-1")
    account = AwsAccount(stack, "Account")
    props = EmrClusterProps(
        security=EmrSecurityProps(subnet_id="subnet-0123456789abcdef0", in_transit_certificate_s3_uri="s3://certs/emr.zip"),
        key_name="ops", termination_protection=True,
        additional_master_security_group_ids=["sg-0aaaaaaaaaaaaaaaa"],
        additional_core_task_security_group_ids=["sg-0bbbbbbbbbbbbbbbb", "sg-0cccccccccccccccc"],
        ebs_volume_size_gb=200, extra_applications=["Livy"],
        extra_configurations=[{"Classification": "spark-defaults", "Properties": {"spark.sql.shuffle.partitions": "64"}}],
        task_instance_type="r5.2xlarge", core_instance_count=1, tags={"vendor": "segment", "cost": "lake"},
        bootstrap_actions=[BootstrapAction("hello", "s3://b/hello.sh", ["a"])])
    bucket = DataLakeBucket.from_bucket_name(stack, "Lake", "cluster-alone-lake")  # its ARN in the stack's partition
    roles = DataLakeRoles(stack, "Roles", props=DataLakeRolesProps(external_ids=["ws1"]), bucket=bucket,
                          glue_databases=["web"], account=account)
    # alone, the cluster brings its own security (key, configuration, groups) and grants its key to the roles
    emr = DataLakeCluster(stack, "Emr", props=props, roles=roles, bucket=bucket, account=account)
    synthesized = json.loads(Testing.synth(stack))
    assert emr.security.props == props.security_props()
    [(key_policy_id, key_policy)] = [(k, p) for k, p in resources(synthesized, "aws_iam_policy").items()
                                     if p["name"] == "SegmentDataLakeClusterKeyPolicy"]
    assert policy(key_policy)["Statement"][0]["Resource"] == "${%s.arn}" % (
        "aws_kms_key." + next(iter(resources(synthesized, "aws_kms_key"))))
    attached = {a["role"] for a in resources(synthesized, "aws_iam_role_policy_attachment").values()
                if a["policy_arn"] == f"${{aws_iam_policy.{key_policy_id}.arn}}"}
    assert len(attached) == 1  # the nodes' role (no vendor role unless Segment runs the syncs)
    assert len(only(synthesized, "aws_emr_cluster")["depends_on"]) == len(roles.attachments) + len(
        emr.security.network_rules)
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
    """Its roles' policies and its groups' rules (that they are all it needs: test_first_tick)."""
    for name, stack in synthesized.stacks.items():
        attachments = {f"aws_iam_role_policy_attachment.{key}" for key in resources(stack, "aws_iam_role_policy_attachment")}
        rules = {f"{rtype}.{key}" for rtype in ("aws_vpc_security_group_egress_rule", "aws_vpc_security_group_ingress_rule")
                 for key in resources(stack, rtype)}
        for cluster in resources(stack, "aws_emr_cluster").values():
            lake = cluster["//"]["metadata"]["path"].rsplit("/Emr/", 1)[0].split("/", 1)[1].replace("/", "_") + "_"
            own = {a for a in attachments if a.split(".")[1].startswith(lake + "Roles_")}
            own |= {r for r in rules if r.split(".")[1].startswith(lake + "Security_")}
            assert own and set(cluster["depends_on"]) == own, name
            assert cluster["list_steps_states"] == ["PENDING", "RUNNING"]


@pytest.fixture(scope="module")
def provider_schema(tmp_path_factory) -> dict:
    """The schema of hashicorp/aws 5.100.0, as `terraform providers schema` prints it (offline, from the mirror)."""
    folder = tmp_path_factory.mktemp("schema")
    (folder / "main.tf.json").write_text(json.dumps(
        {"terraform": {"required_providers": {"aws": {"source": "hashicorp/aws", "version": "5.100.0"}}}}))
    init = run_terraform(["init", "-backend=false", "-input=false", f"-plugin-dir={PLUGIN_DIR}"], folder)
    assert init.returncode == 0, init.stderr
    schema = run_terraform(["providers", "schema", "-json"], folder)
    assert schema.returncode == 0, schema.stderr
    return json.loads(schema.stdout)["provider_schemas"]["registry.terraform.io/hashicorp/aws"]["resource_schemas"]


def _unset_in_set_blocks(block: dict, config, path: str) -> list[str]:
    """Attributes of set-nested blocks that ``config`` leaves out. A set element is identified by all its
    values: one the provider reads back (EBS iops, throughput) but the config omits is a new element,
    so a diff on every plan, and a replacement where the block forces one."""
    missing = []
    for name, nested in block.get("block_types", {}).items():
        for element in config.get(name) or []:
            if nested["nesting_mode"] == "set":
                missing += [f"{path}{name}.{attr}" for attr, spec in nested["block"]["attributes"].items()
                            if not (spec.get("computed") and not spec.get("optional")) and element.get(attr) is None]
            missing += _unset_in_set_blocks(nested["block"], element, f"{path}{name}.")
    return missing


def test_the_cluster_block_has_the_shape_the_provider_reads_back(synthesized, provider_schema):
    # Optional and computed on the cluster: left out, Terraform keeps what AWS chose, so no diff.
    left_to_aws = {"id", "tags_all", "step", "subnet_ids"}
    for name, stack in synthesized.stacks.items():
        for rtype in ("aws_emr_cluster", "aws_emr_instance_group"):
            block = provider_schema[rtype]["block"]
            for resource in resources(stack, rtype).values():
                config = {k: ([v] if isinstance(v, dict) else v) for k, v in resource.items()}
                assert _unset_in_set_blocks(block, config, "") == [], (name, rtype)
                if rtype == "aws_emr_cluster":
                    unset = [attr for attr, spec in block["attributes"].items()
                             if spec.get("optional") and spec.get("computed") and attr not in left_to_aws
                             and attr not in resource]
                    unset += [f"ec2_attributes.{attr}" for attr, spec in
                              block["block_types"]["ec2_attributes"]["block"]["attributes"].items()
                              if spec.get("optional") and spec.get("computed") and attr not in left_to_aws
                              and attr not in resource["ec2_attributes"]]
                    assert unset == [], (name, unset)
                    # EMR returns "Properties": {} for a classification without properties
                    def classifications(confs):
                        for conf in confs:
                            yield conf
                            yield from classifications(conf.get("Configurations", []))
                    assert all("Properties" in c for c in classifications(json.loads(resource["configurations_json"])))


def test_a_new_release_of_the_app_changes_the_steps_never_the_cluster(tmp_path):
    """Two releases of the sync app: the cluster resolves to the same configuration (nothing of the release
    reaches it), the schedules change in place (same names, new step), the release objects are new."""
    from cdktf import App
    from conftest import load_module

    app_copy = tmp_path / "segment_lake"
    import shutil
    shutil.copytree(REPO / "workload" / "src" / "segment_lake", app_copy, ignore=shutil.ignore_patterns("__pycache__"))
    with (app_copy / "cli.py").open("a") as cli:
        cli.write("\n# the next release\n")
    bundles = {"current": REPO / "constructs" / "segment_data_lake" / "app" / "segment-lake-app.zip",
               "next": tmp_path / "next.zip"}
    build = subprocess.run([sys.executable, str(REPO / "workload" / "emr" / "build_bundle.py"), "--wheels",
                            str(REPO / ".cache" / "emr-wheels"), "--app", str(app_copy), "--output", str(bundles["next"])],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    main = load_module(REPO / "main.py", "app_release_check")
    stacks = {}
    for release, bundle in bundles.items():
        app = App(outdir=str(tmp_path / release))
        main.DataLakeStack(app, "lake", {**os.environ, "SEGMENT_LAKE_BUNDLE": str(bundle)})
        app.synth()
        stacks[release] = json.loads((tmp_path / release / "stacks" / "lake" / "cdk.tf.json").read_text())
    current, following = stacks["current"], stacks["next"]

    def cluster(stack):
        [(name, config)] = resources(stack, "aws_emr_cluster").items()
        return name, resolve(stack, {k: v for k, v in config.items() if k != "//"})

    assert cluster(current) == cluster(following)
    # nothing else changes either: not what the cluster refers to (security configuration, groups, roles, key)
    release_parts = {"aws_s3_object", "aws_scheduler_schedule"}
    assert {t: r for t, r in current["resource"].items() if t not in release_parts} == {
        t: r for t, r in following["resource"].items() if t not in release_parts}
    keys = {release: sorted(o["key"] for o in resources(stack, "aws_s3_object").values()) for release, stack in stacks.items()}
    assert keys["current"] != keys["next"] and all(k.startswith("segment-lake-app/") for k in keys["next"])
    old, new = resources(current, "aws_scheduler_schedule"), resources(following, "aws_scheduler_schedule")
    assert old.keys() == new.keys()
    for name in old:
        assert old[name]["name"] == new[name]["name"]
        assert resolve(current, old[name]["target"]["input"]) != resolve(following, new[name]["target"]["input"])


def test_stateful_resources_keep_their_addresses(lake):
    """Terraform addresses come from construct paths: a moved construct would destroy and re-create what it
    holds (a cluster key scheduled for deletion can no longer decrypt what it encrypted)."""
    expected = {  # as the release before the step delivery (55b1a22) synthesized them
        # (and, added since, the alerts topic's key)
        "aws_kms_key": ["SegmentDataLake_Alerts_TopicKey_6205D323", "SegmentDataLake_Security_ClusterKey_4B733975"],
        "aws_emr_security_configuration": ["SegmentDataLake_Security_SecurityConfiguration_C49A4C17"],
        "aws_security_group": ["SegmentDataLake_Security_CoreTask_3DAC14C8", "SegmentDataLake_Security_Master_D153589C",
                               "SegmentDataLake_Security_ServiceAccess_C4EAF9E8"],
        "aws_emr_cluster": ["SegmentDataLake_Emr_Cluster_F04A0A9D"],
        "aws_emr_instance_group": ["SegmentDataLake_Emr_TaskGroup_F8DA7898"],
        # (the autoscaling role and, where this module runs the syncs, the vendor role are gone)
        "aws_iam_role": ["SegmentDataLake_Roles_EmrInstanceRole_288F892D", "SegmentDataLake_Roles_EmrServiceRole_9E37C84F",
                         "SegmentDataLake_S3Destination_Role_72558781", "SegmentDataLake_Schedules_Role_6959C0F9"],
        # (and, added since, the compaction schedule)
        "aws_scheduler_schedule": ["SegmentDataLake_Schedules_Compact_4A1FEC34",
                                   "SegmentDataLake_Schedules_Sync-9aQ1bC2dE3_B61226FA"],
    }
    assert {rtype: sorted(resources(lake, rtype)) for rtype in expected} == expected
