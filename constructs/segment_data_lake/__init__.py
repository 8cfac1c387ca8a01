"""CDKTF constructs for a self-hosted Segment Data Lake on AWS.

``SegmentDataLake`` composes the smaller constructs, each usable alone.
"""
from .account import AwsAccount
from .bucket import DataLakeBucket, DataLakeBucketProps
from .data_lake import SegmentDataLake, SegmentDataLakeProps
from .emr import BootstrapAction, DataLakeCluster, EmrClusterProps, ManagedScaling
from .emr_security import EmrSecurity
from .glue import GlueCatalog
from .iam import SEGMENT_PRODUCTION_ROLE, DataLakeRoles, DataLakeRolesProps
from .schedule import SyncSchedules
from .sources import DATE_PARTITIONS, SegmentSource
from .validation import DataLakeConfigError
from .workload import WorkloadDelivery

__all__ = [
    "AwsAccount", "BootstrapAction", "DATE_PARTITIONS", "DataLakeBucket", "DataLakeBucketProps", "DataLakeCluster",
    "DataLakeConfigError", "DataLakeRoles", "DataLakeRolesProps", "EmrClusterProps", "EmrSecurity", "GlueCatalog",
    "ManagedScaling", "SEGMENT_PRODUCTION_ROLE", "SegmentDataLake", "SegmentDataLakeProps", "SegmentSource",
    "SyncSchedules", "WorkloadDelivery",
]
