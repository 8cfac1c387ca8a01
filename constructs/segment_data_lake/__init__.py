"""CDKTF constructs for a self-hosted Segment Data Lake on AWS.

``SegmentDataLake`` composes the smaller constructs, each usable alone.
"""
from .account import AwsAccount
from .alerts import DataLakeAlerts, DataLakeAlertsProps
from .bucket import BucketRef, DataLakeBucket, DataLakeBucketProps, LakeBucket, LakeLifecycle, LakeLifecycleProps
from .data_lake import DataLakeOutputs, SegmentDataLake, SegmentDataLakeProps
from .emr import BootstrapAction, DataLakeCluster, EmrClusterProps, ManagedScaling
from .emr_security import EmrSecurity, EmrSecurityProps
from .glue import GlueCatalog, GlueCatalogProps
from .iam import SEGMENT_PRINCIPALS, SEGMENT_PRODUCTION_ROLE, DataLakeRoles, DataLakeRolesProps
from .refs import (
    EmrManagedSecurityGroups,
    IInstanceProfile,
    IKey,
    InstanceProfileRef,
    IRole,
    ITopic,
    KeyRef,
    RoleRef,
    SecurityConfigurationRef,
    TopicRef,
)
from .replay_cluster import ReplayCluster, ReplayClusterProps
from .s3_destination import SEGMENT_S3_INTEGRATION_ROLE, SegmentS3Destination, SegmentS3DestinationProps
from .schedule import SyncSchedules, SyncSchedulesProps
from .sources import DATE_PARTITIONS, SegmentSource
from .transient_clusters import TransientClusterProps, TransientClusters
from .validation import DataLakeConfigError
from .workload import WorkloadDelivery, WorkloadDeliveryProps

__all__ = [
    "AwsAccount", "BootstrapAction", "BucketRef", "DATE_PARTITIONS", "DataLakeAlerts", "DataLakeAlertsProps",
    "DataLakeBucket", "DataLakeBucketProps", "DataLakeCluster", "DataLakeConfigError", "DataLakeOutputs",
    "DataLakeRoles", "DataLakeRolesProps", "EmrClusterProps", "EmrManagedSecurityGroups", "EmrSecurity",
    "EmrSecurityProps", "GlueCatalog", "GlueCatalogProps", "IInstanceProfile", "IKey", "IRole", "ITopic",
    "InstanceProfileRef", "KeyRef", "LakeBucket", "LakeLifecycle", "LakeLifecycleProps", "ManagedScaling",
    "ReplayCluster", "ReplayClusterProps", "RoleRef", "SEGMENT_PRINCIPALS", "SEGMENT_PRODUCTION_ROLE",
    "SEGMENT_S3_INTEGRATION_ROLE", "SecurityConfigurationRef", "SegmentDataLake", "SegmentDataLakeProps",
    "SegmentS3Destination", "SegmentS3DestinationProps", "SegmentSource", "SyncSchedules", "SyncSchedulesProps",
    "TopicRef", "TransientClusterProps", "TransientClusters", "WorkloadDelivery", "WorkloadDeliveryProps",
]
