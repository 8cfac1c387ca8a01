"""SegmentDataLake: every part of a customer's data lake, composed."""
from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from cdktf import TerraformOutput, TerraformStack
from constructs import Construct

from segment_lake import contract

from . import validation
from .account import AwsAccount
from .bucket import DataLakeBucket, DataLakeBucketProps
from .emr import DataLakeCluster, EmrClusterProps
from .emr_security import EmrSecurity
from .glue import GlueCatalog
from .iam import DataLakeRoles, DataLakeRolesProps
from .schedule import DEFAULT_SCHEDULE, SyncSchedules
from .sources import SegmentSource, validate_sources
from .workload import WorkloadDelivery


@dataclass(frozen=True)
class SegmentDataLakeProps:
    """Props of :class:`SegmentDataLake`.

    :param bucket: the lake bucket (existing by default).
    :param access: external ids, vendor principals, role name suffix.
    :param cluster: the EMR cluster (subnet, sizes, scaling, security).
    :param sources: the Segment sources to sync, each on its own schedule.
    :param schedule_expression: how often each source syncs (``rate(2 hours)``: 12 a day).
    :param create_glue_databases: create each source's Glue database here rather
        than letting the first sync create it.
    :param lake_formation: grant Lake Formation permissions on the databases to the
        EMR instance role and the vendor role, plus ``lake_formation_role_arns``; needs
        ``create_glue_databases`` (a grant needs its database), and the deploying principal
        must be a Lake Formation administrator.
    :param lake_formation_role_arns: more IAM role ARNs to grant.
    :param schedule_kms_key_arn: KMS key encrypting the schedules (AWS-owned key by default).
    :param workspace_id: the Segment workspace whose sources these are, passed to every sync for its
        reports (default: the external id, when ``access`` has exactly one; required with several).
    :param tags: tags for every resource; ``vendor=segment`` is always added.
    """

    bucket: DataLakeBucketProps
    access: DataLakeRolesProps
    cluster: EmrClusterProps
    sources: Sequence[SegmentSource]
    schedule_expression: str = DEFAULT_SCHEDULE
    create_glue_databases: bool = False
    lake_formation: bool = False
    lake_formation_role_arns: Sequence[str] = ()
    schedule_kms_key_arn: str | None = None
    workspace_id: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.workspace_id is None and len(self.access.external_ids) != 1:
            validation.fail(f"access has {len(self.access.external_ids)} external ids: set workspace_id to the Segment "
                            f"workspace whose sources these are, e.g. workspace_id={self.access.external_ids[0]!r}")
        if self.workspace_id is not None and self.workspace_id not in self.access.external_ids:
            validation.fail(f"workspace_id {self.workspace_id!r} is not among access.external_ids: Segment assumes the "
                            f"vendor role with the workspace id as external id, so list it there")
        validate_sources(self.sources)
        validation.schedule_expression(self.schedule_expression)
        validation.role_arns(self.lake_formation_role_arns, "lake_formation_role_arns")
        validation.tags(self.tags)
        if self.lake_formation and not self.create_glue_databases:
            validation.fail("lake_formation=True grants on the sources' Glue databases, which must exist first: "
                            "set create_glue_databases=True")
        if self.lake_formation_role_arns and not self.lake_formation:
            validation.fail("lake_formation_role_arns is set but lake_formation is False: set lake_formation=True to grant them")


class SegmentDataLake(Construct):
    """Bucket lifecycle, IAM roles, EMR cluster, workload delivery, schedules and Glue databases.

    The consuming stack owns the AWS provider. Attributes: ``account``,
    ``bucket``, ``roles``, ``security``, ``cluster``, ``workload``,
    ``schedules``, ``catalog``, ``outputs`` (name to ``TerraformOutput``).
    """

    def __init__(self, scope: Construct, id: str, *, props: SegmentDataLakeProps) -> None:
        super().__init__(scope, id)
        self.props = props
        tags = dict(props.tags)
        self.account = AwsAccount(self, "Account")
        self.bucket = DataLakeBucket(self, "Bucket", props=_with_tags(props.bucket, tags),
                                     partition=self.account.partition)
        cluster_props = _with_tags(props.cluster, tags)
        self.security = EmrSecurity(
            self, "Security", subnet_id=cluster_props.subnet_id, name=cluster_props.name, tags=cluster_props.tags,
            cluster_kms_key_arn=cluster_props.cluster_kms_key_arn,
            in_transit_certificate_s3_uri=cluster_props.in_transit_certificate_s3_uri, account=self.account,
        )
        self.roles = DataLakeRoles(self, "Roles", props=_with_tags(props.access, tags),
                                   bucket_arn=self.bucket.bucket_arn,
                                   cluster_key_arn=self.security.cluster_key_arn, account=self.account,
                                   bucket_kms_key_arn=props.bucket.kms_key_arn)
        self.workload = WorkloadDelivery(self, "Workload", bucket_name=self.bucket.bucket_name)
        self.cluster = DataLakeCluster(self, "Emr", props=cluster_props, roles=self.roles, security=self.security,
                                       bucket_name=self.bucket.bucket_name,
                                       bootstrap_actions=[self.workload.bootstrap_action])
        self.schedules = SyncSchedules(
            self, "Schedules", sources=props.sources, cluster_id=self.cluster.cluster_id,
            cluster_arn=self.cluster.cluster_arn, bucket_name=self.bucket.bucket_name,
            step_entry=self.workload.step_entry, schedule_expression=props.schedule_expression,
            name_suffix=props.access.name_suffix, kms_key_arn=props.schedule_kms_key_arn, tags=tags,
            account=self.account, workspace_id=props.workspace_id or props.access.external_ids[0],
        )
        grantees = [self.roles.emr_instance_role.arn, self.roles.vendor_role.arn, *props.lake_formation_role_arns]
        self.catalog = GlueCatalog(self, "Glue", sources=props.sources, create_databases=props.create_glue_databases,
                                   lake_formation_role_arns=grantees if props.lake_formation else (),
                                   account=self.account)
        self.outputs = self._outputs()

    def _outputs(self) -> dict[str, TerraformOutput]:
        """What a user enters in each source's Data Lakes settings (see the README)."""
        roles = self.roles
        values = {
            "aws_region": (self.account.region, "AWS Region of the bucket and the cluster"),
            "emr_cluster_id": (self.cluster.cluster_id, "EMR Cluster ID"),
            "glue_catalog_id": (self.account.account_id, "Glue Catalog ID (the AWS account id)"),
            "s3_bucket": (self.bucket.bucket_name, "S3 Bucket"),
            "segment_vendor_role_arn": (roles.vendor_role.arn, "IAM Role ARN Segment assumes"),
            "glue_database_names": (self.catalog.database_names, "Glue database of each source"),
            "emr_instance_profile_name": (roles.emr_instance_profile.name, "EMR instance profile"),
            "emr_instance_profile_role_arn": (roles.emr_instance_role.arn, "Role of the EMR nodes"),
            "emr_service_role_name": (roles.emr_service_role.name, "EMR service role"),
            "emr_autoscaling_role_name": (roles.emr_autoscaling_role.name, "EMR autoscaling role"),
        }
        outputs = {name: TerraformOutput(self, name, value=value, description=description)
                   for name, (value, description) in values.items()}
        # One lake in a stack names its outputs plainly (emr_cluster_id); with several, every lake's
        # names start with its construct id (prod_emr_cluster_id, staging_emr_cluster_id), so none is lost.
        lakes = _LAKES_BY_STACK.setdefault(TerraformStack.of(self), [])
        lakes.append(self)
        for lake in lakes:
            prefix = f"{contract.slug(lake.node.id)}_" if len(lakes) > 1 else ""
            for name, output in (outputs if lake is self else lake.outputs).items():
                output.override_logical_id(prefix + name)
        return outputs


# The lakes of each stack, for naming their outputs (weak: a stack's lakes go with it).
_LAKES_BY_STACK: weakref.WeakKeyDictionary[TerraformStack, list[SegmentDataLake]] = weakref.WeakKeyDictionary()


def _with_tags(props, tags: Mapping[str, str]):
    """``props`` with the lake-wide tags under its own."""
    return replace(props, tags={**tags, **props.tags}) if tags else props
