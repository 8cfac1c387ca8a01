"""Every import from the prebuilt AWS provider, in one place.

Importing the provider loads all of its submodules (about 20 s), and a move
to another provider package (for example CDK Terrain's) only touches this file.
"""
from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from cdktf_cdktf_provider_aws.data_aws_partition import DataAwsPartition
from cdktf_cdktf_provider_aws.data_aws_region import DataAwsRegion
from cdktf_cdktf_provider_aws.data_aws_subnet import DataAwsSubnet
from cdktf_cdktf_provider_aws.default_security_group import DefaultSecurityGroup
from cdktf_cdktf_provider_aws.emr_cluster import (
    EmrCluster,
    EmrClusterBootstrapAction,
    EmrClusterCoreInstanceGroup,
    EmrClusterCoreInstanceGroupEbsConfig,
    EmrClusterEc2Attributes,
    EmrClusterMasterInstanceGroup,
    EmrClusterMasterInstanceGroupEbsConfig,
)
from cdktf_cdktf_provider_aws.emr_instance_group import EmrInstanceGroup, EmrInstanceGroupEbsConfig
from cdktf_cdktf_provider_aws.emr_managed_scaling_policy import (
    EmrManagedScalingPolicy,
    EmrManagedScalingPolicyComputeLimits,
)
from cdktf_cdktf_provider_aws.emr_security_configuration import EmrSecurityConfiguration
from cdktf_cdktf_provider_aws.flow_log import FlowLog
from cdktf_cdktf_provider_aws.glue_catalog_database import GlueCatalogDatabase
from cdktf_cdktf_provider_aws.iam_instance_profile import IamInstanceProfile
from cdktf_cdktf_provider_aws.iam_policy import IamPolicy
from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.iam_role_policy_attachment import IamRolePolicyAttachment
from cdktf_cdktf_provider_aws.kms_key import KmsKey
from cdktf_cdktf_provider_aws.lakeformation_permissions import (
    LakeformationPermissions,
    LakeformationPermissionsDatabase,
    LakeformationPermissionsDataLocation,
    LakeformationPermissionsTable,
)
from cdktf_cdktf_provider_aws.lakeformation_resource import LakeformationResource
from cdktf_cdktf_provider_aws.provider import AwsProvider
from cdktf_cdktf_provider_aws.route_table import RouteTable
from cdktf_cdktf_provider_aws.route_table_association import RouteTableAssociation
from cdktf_cdktf_provider_aws.s3_bucket import S3Bucket
from cdktf_cdktf_provider_aws.s3_bucket_lifecycle_configuration import (
    S3BucketLifecycleConfiguration,
    S3BucketLifecycleConfigurationRule,
    S3BucketLifecycleConfigurationRuleAbortIncompleteMultipartUpload,
    S3BucketLifecycleConfigurationRuleExpiration,
    S3BucketLifecycleConfigurationRuleFilter,
    S3BucketLifecycleConfigurationRuleNoncurrentVersionExpiration,
)
from cdktf_cdktf_provider_aws.s3_bucket_ownership_controls import (
    S3BucketOwnershipControls,
    S3BucketOwnershipControlsRule,
)
from cdktf_cdktf_provider_aws.s3_bucket_policy import S3BucketPolicy
from cdktf_cdktf_provider_aws.s3_bucket_public_access_block import S3BucketPublicAccessBlock
from cdktf_cdktf_provider_aws.s3_bucket_server_side_encryption_configuration import (
    S3BucketServerSideEncryptionConfigurationA as S3BucketServerSideEncryptionConfiguration,
)
from cdktf_cdktf_provider_aws.s3_bucket_server_side_encryption_configuration import (
    S3BucketServerSideEncryptionConfigurationRuleA as S3BucketServerSideEncryptionConfigurationRule,
)
from cdktf_cdktf_provider_aws.s3_bucket_server_side_encryption_configuration import (
    S3BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultA as S3EncryptionByDefault,
)
from cdktf_cdktf_provider_aws.s3_bucket_versioning import (
    S3BucketVersioningA as S3BucketVersioning,
)
from cdktf_cdktf_provider_aws.s3_bucket_versioning import (
    S3BucketVersioningVersioningConfiguration,
)
from cdktf_cdktf_provider_aws.s3_object import S3Object
from cdktf_cdktf_provider_aws.scheduler_schedule import (
    SchedulerSchedule,
    SchedulerScheduleFlexibleTimeWindow,
    SchedulerScheduleTarget,
    SchedulerScheduleTargetRetryPolicy,
)
from cdktf_cdktf_provider_aws.scheduler_schedule_group import SchedulerScheduleGroup
from cdktf_cdktf_provider_aws.security_group import SecurityGroup, SecurityGroupEgress, SecurityGroupIngress
from cdktf_cdktf_provider_aws.subnet import Subnet
from cdktf_cdktf_provider_aws.vpc import Vpc
from cdktf_cdktf_provider_aws.vpc_endpoint import VpcEndpoint

__all__ = [name for name in dir() if name[0].isupper()]
