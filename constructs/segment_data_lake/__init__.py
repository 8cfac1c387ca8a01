"""CDKTF constructs for a self-hosted Segment Data Lake on AWS.

``SegmentDataLake`` composes the smaller constructs, each usable alone.
"""
from .account import AwsAccount
from .alerts import DataLakeAlerts, DataLakeAlertsProps
from .bucket import DataLakeBucket, DataLakeBucketProps, LakeBucket, LakeBucketRef
from .data_lake import DataLakeOutputs, SegmentDataLake, SegmentDataLakeProps
from .emr import BootstrapAction, DataLakeCluster, EmrClusterProps, ManagedScaling
from .emr_security import EmrManagedSecurityGroups, EmrSecurity, EmrSecurityProps
from .glue import GlueCatalog, GlueCatalogProps
from .iam import SEGMENT_PRINCIPALS, SEGMENT_PRODUCTION_ROLE, DataLakeRoles, DataLakeRolesProps, ExistingIamResource
from .replay_cluster import ReplayCluster, ReplayClusterProps
from .s3_destination import SEGMENT_S3_INTEGRATION_ROLE, SegmentS3Destination, SegmentS3DestinationProps
from .schedule import SyncSchedules, SyncSchedulesProps
from .sources import DATE_PARTITIONS, SegmentSource
from .transient_clusters import TransientClusterProps, TransientClusters
from .validation import DataLakeConfigError
from .workload import WorkloadDelivery, WorkloadDeliveryProps

__all__ = [
    "AwsAccount", "BootstrapAction", "DATE_PARTITIONS", "DataLakeAlerts", "DataLakeAlertsProps", "DataLakeBucket",
    "DataLakeBucketProps", "DataLakeCluster", "DataLakeConfigError", "DataLakeOutputs", "DataLakeRoles",
    "DataLakeRolesProps", "EmrClusterProps", "EmrManagedSecurityGroups", "EmrSecurity", "EmrSecurityProps",
    "ExistingIamResource", "GlueCatalog", "GlueCatalogProps", "LakeBucket", "LakeBucketRef", "ManagedScaling",
    "ReplayCluster", "ReplayClusterProps", "SEGMENT_PRINCIPALS", "SEGMENT_PRODUCTION_ROLE", "SEGMENT_S3_INTEGRATION_ROLE",
    "SegmentDataLake", "SegmentDataLakeProps", "SegmentS3Destination", "SegmentS3DestinationProps", "SegmentSource",
    "SyncSchedules", "SyncSchedulesProps", "TransientClusterProps", "TransientClusters", "WorkloadDelivery",
    "WorkloadDeliveryProps",
]
