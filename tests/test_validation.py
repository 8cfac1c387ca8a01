"""Every bad input fails at construction with one line naming the value and the fix."""
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.constructs


@dataclass(frozen=True)
class Brought:
    """A piece as the props see one: the name and ARN of a RoleRef, or an IamRole; the ARN of a KeyRef, or a KmsKey."""

    arn: str
    name: str = "brought"

SUBNET = "subnet-0123456789abcdef0"


@pytest.fixture(autouse=True, scope="module")
def _constructs():
    """The constructs, imported as the first test here runs rather than at collection: every xdist worker collects
    every module, and importing the AWS provider costs about 16 CPU-s. The cases below name them when called."""
    global SECURITY, BootstrapAction, DataLakeBucketProps, DataLakeConfigError, DataLakeRolesProps, EmrClusterProps, \
        EmrSecurityProps, GlueCatalogProps, LakeLifecycleProps, ManagedScaling, ReplayClusterProps, \
        SegmentDataLakeProps, SegmentS3DestinationProps, SegmentSource, WorkloadDeliveryProps, validation
    from segment_data_lake import (
        BootstrapAction,
        DataLakeBucketProps,
        DataLakeConfigError,
        DataLakeRolesProps,
        EmrClusterProps,
        EmrSecurityProps,
        GlueCatalogProps,
        LakeLifecycleProps,
        ManagedScaling,
        ReplayClusterProps,
        SegmentDataLakeProps,
        SegmentS3DestinationProps,
        SegmentSource,
        WorkloadDeliveryProps,
        validation,
    )
    SECURITY = EmrSecurityProps(subnet_id=SUBNET)


def props(**overrides):
    base = dict(bucket=DataLakeBucketProps(bucket_name="lake-bucket", manage_lifecycle=True),
                access=DataLakeRolesProps(external_ids=["ws1"]),
                cluster=EmrClusterProps(security=SECURITY),
                sources=[SegmentSource(source_id="abc123", slug="web")])
    base.update(overrides)
    return SegmentDataLakeProps(**base)


CASES = [
    # (callable, expected message)
    (lambda: DataLakeRolesProps(external_ids=[]), "external_ids is empty: pass your Segment workspace id(s)"),
    (lambda: DataLakeRolesProps(external_ids=[""]), "invalid external id '': use 2-1224 characters"),
    (lambda: DataLakeRolesProps(external_ids=["bad id!"]), "invalid external id 'bad id!'"),
    (lambda: DataLakeRolesProps(external_ids=["ws1", "ws1"]), "external_ids ['ws1', 'ws1'] repeats a value"),
    (lambda: DataLakeRolesProps(external_ids=["ws1"], vendor_principals=[]), "vendor_principals is empty"),
    (lambda: DataLakeRolesProps(external_ids=["ws1"], vendor_principals=["segment"]),
     "invalid vendor_principals entry 'segment': use an IAM role, user or account root ARN"),
    (lambda: DataLakeRolesProps(external_ids=["ws1"], name_suffix="-has space"), "invalid name suffix '-has space'"),
    (lambda: DataLakeBucketProps(bucket_name="My_Bucket"), "invalid S3 bucket name 'My_Bucket': use 3-63 lowercase"),
    (lambda: DataLakeBucketProps(bucket_name="ab"), "invalid S3 bucket name 'ab'"),
    (lambda: DataLakeBucketProps(bucket_name="a..b"), "invalid S3 bucket name 'a..b': remove adjacent dots"),
    (lambda: DataLakeBucketProps(bucket_name="192.168.1.10"),
     "invalid S3 bucket name '192.168.1.10': use a name, not an IP address"),
    (lambda: DataLakeBucketProps(bucket_name="xn--lake"), "invalid S3 bucket name 'xn--lake': avoid the prefixes"),
    (lambda: LakeLifecycleProps(stage_expiration_days=0),
     "stage_expiration_days is 0: it must be a whole number of at least 1"),
    (lambda: LakeLifecycleProps(abort_incomplete_multipart_days=-1),
     "abort_incomplete_multipart_days is -1"),
    (lambda: DataLakeBucketProps(bucket_name="lake-bucket", kms_key=Brought("arn:aws:kms:us-east-1:123456789012:key/abc")),
     "kms_key is set for an existing bucket"),
    (lambda: EmrSecurityProps(subnet_id="subnet-nope"), "invalid subnet id 'subnet-nope'"),
    (lambda: EmrClusterProps(security=SECURITY, release_label="7.13.0"),
     "unknown EMR release label format '7.13.0': use emr-MAJOR.MINOR.PATCH"),
    (lambda: EmrClusterProps(security=SECURITY, release_label="emr-5.36.0"), "EMR release 'emr-5.36.0' is too old"),
    # no python3.11 before emr-7.1.0
    (lambda: EmrClusterProps(security=SECURITY, release_label="emr-6.15.0"), "EMR release 'emr-6.15.0' is too old"),
    (lambda: EmrClusterProps(security=SECURITY, release_label="emr-7.0.0"), "EMR release 'emr-7.0.0' is too old"),
    (lambda: EmrClusterProps(security=SECURITY, core_instance_count=0),
     "core_instance_count is 0: it must be a whole number of at least 1"),
    (lambda: EmrClusterProps(security=SECURITY, task_instance_count=0), "task_instance_count is 0"),
    (lambda: EmrClusterProps(security=SECURITY, core_instance_count=3),
     "core_instance_count (3) is greater than managed scaling maximum_core_units (2)"),
    (lambda: EmrClusterProps(security=SECURITY, ebs_volume_size_gb=10),
     "ebs_volume_size_gb is 10: it must be a whole number of at least 15"),
    (lambda: EmrClusterProps(security=SECURITY, ebs_volume_type="magnetic"), "unknown EBS volume type 'magnetic'"),
    (lambda: EmrClusterProps(security=SECURITY, master_instance_type="large"), "invalid master instance type 'large'"),
    (lambda: EmrClusterProps(security=SECURITY, tags={"vendor": "acme"}),
     "tag vendor='acme' would hide the cluster from Segment"),
    (lambda: EmrClusterProps(security=SECURITY, extra_applications=["Spark"]), "extra application 'Spark' is always installed"),
    (lambda: EmrClusterProps(security=SECURITY, extra_configurations=[{"Properties": {}}]), "has no 'Classification'"),
    (lambda: EmrSecurityProps(subnet_id=SUBNET, in_transit_certificate_s3_uri="certs.zip"),
     "invalid in-transit certificate URI 'certs.zip'"),
    (lambda: ManagedScaling(minimum_units=9), "managed scaling minimum_units (9) is greater than maximum_units (8)"),
    (lambda: ManagedScaling(maximum_on_demand_units=10), "maximum_on_demand_units (10) is greater than maximum_units (8)"),
    (lambda: ManagedScaling(maximum_core_units=9), "maximum_core_units (9) is greater than maximum_units (8)"),
    (lambda: ManagedScaling(minimum_units=0), "managed scaling minimum_units is 0"),
    (lambda: SegmentSource(source_id="", slug="web"), "invalid source id ''"),
    (lambda: SegmentSource(source_id="abc-123", slug="web"), "invalid source id 'abc-123'"),
    (lambda: SegmentSource(source_id="abc", slug="Web App"), "invalid source slug 'Web App'"),
    (lambda: SegmentSource(source_id="abc", slug="web", date_partition="hourly"),
     "unknown date partition 'hourly': use one of day_hour, year_month_day_hour, year_month_day, day"),
    (lambda: SegmentSource(source_id="abc", slug="web", glue_database="My-DB"), "invalid Glue database name 'My-DB'"),
    (lambda: SegmentSource(source_id="abc", slug="web", table_prefix="Ios-"), "invalid table prefix 'Ios-'"),
    (lambda: props(sources=[]), "sources is empty"),
    (lambda: props(sources=[SegmentSource(source_id="a1", slug="web"), SegmentSource(source_id="a1", slug="ios")]),
     "source id 'a1' is used by two sources: list each source once"),
    (lambda: props(sources=[SegmentSource(source_id="a1", slug="web"), SegmentSource(source_id="a2", slug="web")]),
     "source slug 'web' is used by two sources: give each source its own slug"),
    (lambda: DataLakeRolesProps(external_ids="ws123"), "external_ids='ws123' is a string: pass a list, external_ids=['ws123']"),
    (lambda: props(sources=[SegmentSource(source_id="a1", slug="web", glue_database="shared"),
                            SegmentSource(source_id="a2", slug="ios", glue_database="shared")]),
     "sources web (prefix ''), ios (prefix '') share Glue database 'shared': give each a distinct non-empty table_prefix"),
    (lambda: props(sources=[SegmentSource(source_id="a1", slug="web", glue_database="shared", table_prefix="x_"),
                            SegmentSource(source_id="a2", slug="ios", glue_database="shared", table_prefix="x_")]),
     "share Glue database 'shared'"),
    (lambda: props(sources=[SegmentSource(source_id="a1", slug="web", glue_database="shared", table_prefix="x"),
                            SegmentSource(source_id="a2", slug="ios", glue_database="shared", table_prefix="x_")]),
     "share Glue database 'shared'"),
    (lambda: props(schedule_expression="every 2 hours"), "invalid schedule expression 'every 2 hours'"),
    (lambda: props(lake_formation=True, lake_formation_readers=[Brought("SegmentEMRInstanceProfile")]),
     "invalid lake_formation_readers entry 'SegmentEMRInstanceProfile': Lake Formation needs an IAM role ARN"),
    (lambda: props(lake_formation_readers=[Brought("arn:aws:iam::123456789012:role/analyst")]),
     "lake_formation_readers is set but lake_formation is False"),
    (lambda: props(lake_formation=True), "lake_formation=True grants on the sources' Glue databases, which must exist "
                                         "first: set create_glue_databases=True"),
    (lambda: props(tags={"aws:owner": "x"}), "invalid tag key 'aws:owner'"),
    (lambda: props(sync_runner="emr"), "unknown sync_runner 'emr': use one of self, segment"),
    (lambda: props(sync_runner="segment", bundle_path=Path("app.zip")),
     "bundle_path is set but sync_runner is 'segment'"),
    (lambda: props(sync_runner="segment", replay_cluster=ReplayClusterProps()),
     "replay_cluster is set but sync_runner is 'segment'"),
    (lambda: props(replay_cluster=ReplayClusterProps(task_instance_count=0)),
     "replay cluster task_instance_count"),
    (lambda: EmrClusterProps(security=SECURITY, ebs_iops=1000), "ebs_iops"),
    (lambda: EmrClusterProps(security=SECURITY, ebs_volume_type="io1"), "ebs_volume_type 'io1' needs ebs_iops"),
    (lambda: EmrClusterProps(security=SECURITY, ebs_volume_type="gp2", ebs_throughput_mib=250),
     "ebs_volume_type 'gp2' takes no ebs_iops or ebs_throughput_mib"),
    (lambda: EmrClusterProps(security=SECURITY, bootstrap_actions=[BootstrapAction("x", "/opt/x.sh")]),
     "invalid bootstrap action path '/opt/x.sh'"),
    (lambda: EmrSecurityProps(subnet_id="sg-1"), "invalid subnet id 'sg-1'"),
    (lambda: GlueCatalogProps(sources=[SegmentSource(source_id="a1", slug="web")], lake_formation=True),
     "lake_formation=True grants on the sources' Glue databases"),
    (lambda: SegmentS3DestinationProps(workspace_id="bad id!"), "invalid external id 'bad id!'"),
    (lambda: WorkloadDeliveryProps(bundle_path=Path("/nowhere/app.zip")),
     "sync app bundle '/nowhere/app.zip' does not exist: pass the path of one built by `make bundle`"),
    (lambda: WorkloadDeliveryProps(bundle_path=Path(__file__)),
     "is not a sync app bundle (no run-sync.sh): build it with `make bundle`"),
]


@pytest.mark.parametrize("build,message", CASES, ids=[m[:40] for _, m in CASES])
def test_bad_input_is_rejected_with_a_clear_message(build, message):
    with pytest.raises(DataLakeConfigError) as error:
        build()
    text = str(error.value)
    assert message in text
    assert "\n" not in text


def test_good_input_passes():
    lake = props(sources=[SegmentSource(source_id="a1", slug="web-app", table_prefix="web_"),
                          SegmentSource(source_id="a2", slug="ios", glue_database="web_app", table_prefix="ios_")])
    assert lake.sources[0].database == "web_app"


def test_extra_lifecycle_rule_ids_are_checked():
    from segment_data_lake.aws import S3BucketLifecycleConfigurationRule

    with pytest.raises(DataLakeConfigError, match="extra lifecycle rule id 'segment-stage-expiration' is used by the data lake"):
        LakeLifecycleProps(extra_rules=[S3BucketLifecycleConfigurationRule(id="segment-stage-expiration", status="Enabled")])
    with pytest.raises(DataLakeConfigError, match="give every rule a unique non-empty 'id'"):
        LakeLifecycleProps(extra_rules=[
            S3BucketLifecycleConfigurationRule(id="a", status="Enabled"),
            S3BucketLifecycleConfigurationRule(id="a", status="Enabled")])


def test_schedule_expression_forms():
    for good in ("rate(2 hours)", "rate(1 hour)", "cron(0 */2 * * ? *)", "at(2027-01-01T00:00:00)"):
        assert validation.schedule_expression(good) == good


def test_main_rejects_malformed_settings():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("app_main", Path(__file__).resolve().parents[1] / "main.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit, match="SEGMENT_SOURCES='abc': write comma-separated source_id:slug pairs"):
        module.sources_from("abc")
    assert [s.slug for s in module.sources_from("a1:web, a2:ios")] == ["web", "ios"]
    # a public subnet, as the plan's check asks (private_subnet=False)
    assert module.flag({"SEGMENT_LAKE_PRIVATE_SUBNET": "0"}, "SEGMENT_LAKE_PRIVATE_SUBNET", True) is False
    assert module.flag({}, "SEGMENT_LAKE_PRIVATE_SUBNET", True) is True
    with pytest.raises(SystemExit, match="SEGMENT_LAKE_PRIVATE_SUBNET='no': use 1 or 0"):
        module.flag({"SEGMENT_LAKE_PRIVATE_SUBNET": "no"}, "SEGMENT_LAKE_PRIVATE_SUBNET", True)


@pytest.mark.parametrize("slug,prefix", [("ios_prod", "ios"), ("web-app", "web_"), ("a-b_c--d", ""), ("x9", "p_q")])
def test_the_constructs_name_databases_and_tables_as_the_sync_does(slug, prefix):
    from segment_lake.settings import SyncSettings

    source = SegmentSource(source_id="Src1", slug=slug, table_prefix=prefix)
    settings = SyncSettings(source_id="Src1", input_uri="in", lake_uri="lake", source_slug=slug, table_prefix=prefix)
    assert (source.database, source.table_name_prefix) == (settings.database, settings.table_name_prefix)


def test_the_first_release_with_python_3_11_is_accepted():
    assert EmrClusterProps(security=SECURITY, release_label="emr-7.1.0").release_label == "emr-7.1.0"


def test_the_workspace_of_the_syncs_is_one_of_the_external_ids():
    two = DataLakeRolesProps(external_ids=["ws1", "ws2"])
    with pytest.raises(DataLakeConfigError, match="access has 2 external ids: set workspace_id"):
        props(access=two)
    with pytest.raises(DataLakeConfigError, match="workspace_id 'ws3' is not among access.external_ids"):
        props(access=two, workspace_id="ws3")
    assert props(access=two, workspace_id="ws2").workspace_id == "ws2"


def test_with_segment_running_the_syncs_there_are_no_schedules_and_no_bundle():
    import json

    from cdktf import TerraformStack, Testing
    from stack_helpers import resources

    from segment_data_lake import DataLakeOutputs, SegmentDataLake
    from segment_data_lake.aws import AwsProvider

    stack = TerraformStack(Testing.app(), "segment-runs")
    AwsProvider(stack, "aws", region="us-east-1")
    lake = SegmentDataLake(stack, "Lake", props=props(sync_runner="segment", s3_destination=False))
    DataLakeOutputs(stack, "Outputs", lakes=[lake])
    synthesized = json.loads(Testing.synth(stack))
    assert lake.schedules is None and lake.workload is None and lake.s3_destination is None
    assert resources(synthesized, "aws_scheduler_schedule") == {} and resources(synthesized, "aws_s3_object") == {}
    assert resources(synthesized, "aws_emr_cluster") and synthesized["output"]["sync_runner"]["value"] == "segment"
    assert "s3_destination_role_arn" not in synthesized["output"]
    assert {"emr_cluster_id", "segment_vendor_role_arn", "glue_catalog_id", "s3_bucket"} <= set(synthesized["output"])


def test_outputs_need_a_lake_and_a_name_of_its_own_for_each():
    from cdktf import TerraformStack, Testing

    from segment_data_lake import DataLakeOutputs, SegmentDataLake
    from segment_data_lake.aws import AwsProvider

    stack = TerraformStack(Testing.app(), "outputs")
    AwsProvider(stack, "aws", region="us-east-1")
    with pytest.raises(DataLakeConfigError, match=r"DataLakeOutputs needs at least one lake: pass lakes=\[lake\]"):
        DataLakeOutputs(stack, "None", lakes=[])
    first = SegmentDataLake(stack, "prod-lake", props=props(s3_destination=False))
    second = SegmentDataLake(stack, "Prod_Lake", props=props(s3_destination=False))
    with pytest.raises(DataLakeConfigError, match=r"lakes \['prod-lake', 'Prod_Lake'\] give their outputs the same names"):
        DataLakeOutputs(stack, "Clash", lakes=[first, second])
    DataLakeOutputs(stack, "First", lakes=[first])
    with pytest.raises(DataLakeConfigError, match=r"outputs/First already names outputs .*pass every lake of the stack"):
        DataLakeOutputs(stack, "Second", lakes=[second])


def test_a_step_script_terraform_would_misread_is_refused(tmp_path):
    import zipfile

    bundle = tmp_path / "app.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("run-sync.sh", 'root="${ROOT:-/mnt}"\n')
        archive.writestr("step_entry.py", "")
        archive.writestr("site/segment_lake/cli.py", "")
        archive.writestr("site/segment_lake_contract.py", "")
    with pytest.raises(DataLakeConfigError, match="run-sync.sh in .* holds '\\$\\{' or '%\\{', which Terraform would read"):
        WorkloadDeliveryProps(bundle_path=bundle)
