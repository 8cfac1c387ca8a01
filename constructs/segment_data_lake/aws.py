"""Every import from CDKTF and its prebuilt AWS provider, in one place: from cdktf and cdktf-cdktf-provider-aws, or
from their community fork CDK Terrain (cdktn and cdktn-provider-aws), whose classes have the same names.

Which one: ``SEGMENT_LAKE_CDK=cdktf|cdktn`` if set; else the one the app already imported (``from cdktn import App``
before importing these constructs; both imported is refused); else cdktf when installed, otherwise cdktn. Importing
cdktf's provider loads all of its submodules (about 20 s); cdktn's loads them lazily.
"""
import importlib
import importlib.util
import os
import sys

CDKS = {"cdktf": "cdktf_cdktf_provider_aws", "cdktn": "cdktn_provider_aws"}


def _chosen() -> str:
    chosen = os.environ.get("SEGMENT_LAKE_CDK")
    if chosen:
        if chosen not in CDKS:
            raise ImportError(f"SEGMENT_LAKE_CDK={chosen!r}: use cdktf or cdktn")
        return chosen
    imported = [cdk for cdk in CDKS if cdk in sys.modules]
    if len(imported) == 2:
        raise ImportError("both cdktf and cdktn are imported: set SEGMENT_LAKE_CDK=cdktf or cdktn to the one your app "
                          "builds its stacks with")
    if imported:
        return imported[0]
    return "cdktf" if importlib.util.find_spec("cdktf") else "cdktn"


CDK = _chosen()
_core = importlib.import_module(CDK)
CORE = ("App", "AssetType", "LocalBackend", "Postcondition", "Precondition", "TerraformAsset", "TerraformIterator",
        "TerraformOutput", "TerraformResource", "TerraformResourceLifecycle", "TerraformStack", "Testing", "Token")
# provider module -> its classes, each a name or (name, the name it has here)
PROVIDER = {
    "cloudwatch_event_rule": ("CloudwatchEventRule",),
    "cloudwatch_event_target": ("CloudwatchEventTarget",),
    "cloudwatch_metric_alarm": (
        "CloudwatchMetricAlarm",
        "CloudwatchMetricAlarmMetricQuery",
        "CloudwatchMetricAlarmMetricQueryMetric",
    ),
    "data_aws_caller_identity": ("DataAwsCallerIdentity",),
    "data_aws_partition": ("DataAwsPartition",),
    "data_aws_region": ("DataAwsRegion",),
    "data_aws_route_tables": ("DataAwsRouteTables", "DataAwsRouteTablesFilter",),
    "data_aws_security_group": ("DataAwsSecurityGroup",),
    "data_aws_vpc_security_group_rule": ("DataAwsVpcSecurityGroupRule",),
    "data_aws_vpc_security_group_rules": ("DataAwsVpcSecurityGroupRules", "DataAwsVpcSecurityGroupRulesFilter",),
    "data_aws_subnet": ("DataAwsSubnet",),
    "default_security_group": ("DefaultSecurityGroup",),
    "emr_cluster": (
        "EmrCluster",
        "EmrClusterBootstrapAction",
        "EmrClusterCoreInstanceGroup",
        "EmrClusterCoreInstanceGroupEbsConfig",
        "EmrClusterEc2Attributes",
        "EmrClusterMasterInstanceGroup",
        "EmrClusterMasterInstanceGroupEbsConfig",
    ),
    "emr_instance_group": ("EmrInstanceGroup", "EmrInstanceGroupEbsConfig",),
    "emr_managed_scaling_policy": ("EmrManagedScalingPolicy", "EmrManagedScalingPolicyComputeLimits",),
    "emr_security_configuration": ("EmrSecurityConfiguration",),
    "flow_log": ("FlowLog",),
    "glue_catalog_database": ("GlueCatalogDatabase",),
    "iam_instance_profile": ("IamInstanceProfile",),
    "iam_policy": ("IamPolicy",),
    "iam_role": ("IamRole",),
    "iam_role_policy_attachment": ("IamRolePolicyAttachment",),
    "kms_key": ("KmsKey",),
    "lakeformation_permissions": (
        "LakeformationPermissions",
        "LakeformationPermissionsDatabase",
        "LakeformationPermissionsDataLocation",
        "LakeformationPermissionsTable",
    ),
    "lakeformation_resource": ("LakeformationResource",),
    "provider": ("AwsProvider",),
    "route_table": ("RouteTable",),
    "route_table_association": ("RouteTableAssociation",),
    "s3_bucket": ("S3Bucket",),
    "s3_bucket_lifecycle_configuration": (
        "S3BucketLifecycleConfiguration",
        "S3BucketLifecycleConfigurationRule",
        "S3BucketLifecycleConfigurationRuleAbortIncompleteMultipartUpload",
        "S3BucketLifecycleConfigurationRuleExpiration",
        "S3BucketLifecycleConfigurationRuleFilter",
        "S3BucketLifecycleConfigurationRuleNoncurrentVersionExpiration",
    ),
    "s3_bucket_ownership_controls": ("S3BucketOwnershipControls", "S3BucketOwnershipControlsRule",),
    "s3_bucket_policy": ("S3BucketPolicy",),
    "s3_bucket_public_access_block": ("S3BucketPublicAccessBlock",),
    "s3_bucket_server_side_encryption_configuration": (
        ("S3BucketServerSideEncryptionConfigurationA", "S3BucketServerSideEncryptionConfiguration"),
        ("S3BucketServerSideEncryptionConfigurationRuleA", "S3BucketServerSideEncryptionConfigurationRule"),
        ("S3BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultA", "S3EncryptionByDefault"),
    ),
    "s3_bucket_versioning": (
        ("S3BucketVersioningA", "S3BucketVersioning"),
        "S3BucketVersioningVersioningConfiguration",
    ),
    "s3_object": ("S3Object",),
    "scheduler_schedule": (
        "SchedulerSchedule",
        "SchedulerScheduleFlexibleTimeWindow",
        "SchedulerScheduleTarget",
        "SchedulerScheduleTargetRetryPolicy",
    ),
    "scheduler_schedule_group": ("SchedulerScheduleGroup",),
    "security_group": ("SecurityGroup", "SecurityGroupEgress", "SecurityGroupIngress",),
    "sns_topic": ("SnsTopic",),
    "sns_topic_policy": ("SnsTopicPolicy",),
    "subnet": ("Subnet",),
    "vpc": ("Vpc",),
    "vpc_endpoint": ("VpcEndpoint",),
    "vpc_security_group_egress_rule": ("VpcSecurityGroupEgressRule",),
    "vpc_security_group_ingress_rule": ("VpcSecurityGroupIngressRule",),
}
globals().update({name: getattr(_core, name) for name in CORE})
for _module, _names in PROVIDER.items():
    _loaded = importlib.import_module(f"{CDKS[CDK]}.{_module}")
    for _name in _names:
        _name, _alias = _name if isinstance(_name, tuple) else (_name, _name)
        globals()[_alias] = getattr(_loaded, _name)

__all__ = [*CORE, *(n[1] if isinstance(n, tuple) else n for names in PROVIDER.values() for n in names)]
