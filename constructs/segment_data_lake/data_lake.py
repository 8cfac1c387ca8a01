"""SegmentDataLake: every part of a customer's data lake, composed."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from constructs import Construct

import segment_data_lake_policies as policies
import segment_lake_contract as contract

from . import validation
from .account import AwsAccount
from .alerts import DataLakeAlerts, DataLakeAlertsProps
from .aws import IamPolicy, IamRolePolicyAttachment, TerraformOutput, TerraformStack
from .bucket import BucketRef, DataLakeBucket, DataLakeBucketProps
from .emr import ICEBERG_CONFIGURATION, DataLakeCluster, EmrClusterProps
from .emr_security import EmrSecurity
from .glue import GlueCatalog, GlueCatalogProps
from .iam import DataLakeRoles, DataLakeRolesProps, glue_arns, object_arns
from .refs import IKey, IRole
from .replay_cluster import ReplayCluster, ReplayClusterProps
from .s3_destination import SegmentS3Destination, SegmentS3DestinationProps
from .schedule import DEFAULT_COMPACTION_SCHEDULE, DEFAULT_SCHEDULE, SyncSchedules, SyncSchedulesProps
from .sources import SegmentSource, validate_sources
from .tagging import with_vendor_tag
from .transient_clusters import TransientClusterProps, TransientClusters
from .workload import WorkloadDelivery, WorkloadDeliveryProps

SYNC_RUNNERS = ("self", "segment")
CLUSTER_MODES = ("always_on", "transient")


@dataclass(frozen=True)
class SegmentDataLakeProps:
    """Props of :class:`SegmentDataLake`.

    :param bucket: the lake bucket: its props (an existing bucket by default, whose lifecycle rules this module
        manages; or one it creates), or a bucket brought as it is (:meth:`DataLakeBucket.from_bucket_name`).
    :param access: external ids, vendor principals, role name suffix.
    :param cluster: the EMR cluster (subnet, sizes, scaling, security); with ``cluster_mode="transient"``, what
        every transient cluster is made of.
    :param sources: the Segment sources to sync.
    :param cluster_mode: ``"always_on"`` (default): one EMR cluster that runs between syncs, with managed scaling,
        as Segment's module provisions it (about $876 a month with the default sizes). ``"transient"``: no cluster
        between syncs; each tick of the schedule starts a cluster that runs every source's sync and ends
        (:class:`TransientClusters`; about $16 a month at 10M events a day: the README's cost table);
        ``sync_runner="self"`` only.
    :param transient_cluster: sizes of the transient clusters (default: a single node).
    :param schedule_expression: how often each source syncs (``rate(2 hours)``: 12 a day).
    :param compaction_schedule_expression: when every source's ``segment-lake compact`` runs, in the same cluster
        mode (daily at 03:15 UTC by default); None: never on a schedule. ``"self"`` only.
    :param alerts: the alerts topic, rules and alarms (:class:`DataLakeAlerts`; on by default); None: none.
        ``"self"`` only (Segment's app shows the health of the syncs it runs).
    :param create_glue_databases: create each source's Glue database here rather
        than letting the first sync create it.
    :param lake_formation: govern the lake with Lake Formation: register the bucket (hybrid access mode),
        create the sync reports' database, and grant the roles that run the sync (the EMR instance role, the
        vendor role) what it uses: ``DATA_LOCATION_ACCESS`` on the bucket, ``CREATE_TABLE`` and ``DESCRIBE``
        on the lake's databases, ``ALTER`` and ``DESCRIBE`` on their tables (and ``DROP``, the vendor role);
        needs ``create_glue_databases``, and the deploying principal must be a Lake Formation administrator.
    :param lake_formation_readers: roles that read the lake (``IamRole`` or :meth:`DataLakeRoles.from_role_name`):
        ``DESCRIBE`` on its databases, ``SELECT`` and ``DESCRIBE`` on their tables (Lake Formation's grants only:
        :meth:`grant_read` gives a role IAM's permissions too).
    :param lake_formation_register_bucket: with ``lake_formation``, register the bucket with Lake Formation;
        False when it is registered already.
    :param lake_formation_registration_role: the role the bucket is registered with (default: a new one that
        may read and write ``segment-data/`` with the lake's keys: :class:`GlueCatalogProps`).
    :param create_reports_database: with ``lake_formation``, create ``__segment_datalake`` (one per account:
        False for a second lake in the account, or where it exists).
    :param schedule_kms_key: KMS key encrypting the schedules (a ``KmsKey`` of the stack, or
        :meth:`EmrSecurity.from_key_arn`; default: an AWS-owned key).
    :param workspace_id: the Segment workspace whose sources these are, passed to every sync for its
        reports and trusted by the S3 destination role (default: the external id, when ``access`` has
        exactly one; required with several).
    :param sync_runner: who runs the syncs. ``"self"`` (default): this module's schedules run the bundled
        sync on the cluster, and Segment's Data Lakes destination must stay off. ``"segment"``: no
        schedules and no bundle; enter the outputs in Segment's Data Lakes settings and Segment runs them.
    :param s3_destination: create the role Segment's AWS S3 destination assumes to write ``segment-logs/``
        (:class:`SegmentS3Destination`).
    :param bundle_path: the sync app's bundle (default: the one shipped in this package); ``"self"`` only.
    :param replay_cluster: also write the template of a temporary replay cluster and the policy to start
        one (:class:`ReplayCluster`; none by default); ``"self"`` only.
    :param tags: tags for every resource; ``vendor=segment`` is always added.
    """

    bucket: DataLakeBucketProps | BucketRef
    access: DataLakeRolesProps
    cluster: EmrClusterProps
    sources: Sequence[SegmentSource]
    cluster_mode: str = "always_on"
    transient_cluster: TransientClusterProps = field(default_factory=TransientClusterProps)
    schedule_expression: str = DEFAULT_SCHEDULE
    compaction_schedule_expression: str | None = DEFAULT_COMPACTION_SCHEDULE
    alerts: DataLakeAlertsProps | None = field(default_factory=DataLakeAlertsProps)
    create_glue_databases: bool = False
    lake_formation: bool = False
    lake_formation_readers: Sequence[IRole] = ()
    lake_formation_register_bucket: bool = True
    lake_formation_registration_role: IRole | None = None
    create_reports_database: bool = True
    schedule_kms_key: IKey | None = None
    workspace_id: str | None = None
    sync_runner: str = "self"
    s3_destination: bool = True
    bundle_path: Path | None = None
    replay_cluster: ReplayClusterProps | None = None
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validation.one_of(self.sync_runner, SYNC_RUNNERS, "sync_runner")
        validation.one_of(self.cluster_mode, CLUSTER_MODES, "cluster_mode")
        if self.sync_runner == "segment" and self.cluster_mode == "transient":
            validation.fail("cluster_mode is 'transient' but sync_runner is 'segment', which runs its syncs on one "
                            "cluster by its id: set cluster_mode='always_on' or sync_runner='self'")
        iceberg = [source.source_id for source in self.sources if source.table_format == "iceberg"]
        if self.sync_runner == "segment" and iceberg:
            validation.fail(f"source {iceberg[0]} has table_format 'iceberg' but sync_runner is 'segment', whose syncs "
                            "write Segment's Parquet layout only: set sync_runner='self' or table_format='parquet'")
        if self.sync_runner == "segment" and self.bundle_path is not None:
            validation.fail("bundle_path is set but sync_runner is 'segment', which runs Segment's own sync: "
                            "remove bundle_path or set sync_runner='self'")
        if self.sync_runner == "self" and self.access.vendor_role:
            validation.fail("access.vendor_role is True but sync_runner is 'self': Segment runs nothing, so no role for "
                            "it is created; remove vendor_role (SegmentDataLake sets it from sync_runner)")
        if self.sync_runner == "segment" and self.replay_cluster is not None:
            validation.fail("replay_cluster is set but sync_runner is 'segment', whose syncs Segment runs (and "
                            "replays only through its support): remove replay_cluster or set sync_runner='self'")
        if self.replay_cluster is not None:
            self.replay_cluster.resolved(self.cluster)
        if self.workspace_id is None and len(self.access.external_ids) != 1:
            validation.fail(f"access has {len(self.access.external_ids)} external ids: set workspace_id to the Segment "
                            f"workspace whose sources these are, e.g. workspace_id={self.access.external_ids[0]!r}")
        if self.workspace_id is not None and self.workspace_id not in self.access.external_ids:
            validation.fail(f"workspace_id {self.workspace_id!r} is not among access.external_ids: Segment assumes the "
                            f"vendor role with the workspace id as external id, so list it there")
        validate_sources(self.sources)
        validation.tags(self.tags)
        self.schedule_props()
        self.catalog_props()
        if self.alerts is not None and self.sync_runner == "self":
            self.alerts.window_seconds(self.schedule_expression)

    @property
    def workspace(self) -> str:
        """The Segment workspace id: ``workspace_id``, or the one external id."""
        return self.workspace_id or self.access.external_ids[0]

    def schedule_props(self) -> SyncSchedulesProps:
        return SyncSchedulesProps(sources=self.sources, schedule_expression=self.schedule_expression,
                                  compaction_schedule_expression=self.compaction_schedule_expression,
                                  workspace_id=self.workspace, name_suffix=self.access.name_suffix,
                                  kms_key=self.schedule_kms_key, tags=self.tags)

    def catalog_props(self) -> GlueCatalogProps:
        return GlueCatalogProps(sources=self.sources, create_glue_databases=self.create_glue_databases,
                                lake_formation=self.lake_formation, lake_formation_readers=self.lake_formation_readers,
                                register_bucket=self.lake_formation_register_bucket,
                                create_reports_database=self.create_reports_database,
                                registration_role=self.lake_formation_registration_role,
                                name_suffix=self.access.name_suffix)


class SegmentDataLake(Construct):
    """Bucket lifecycle, IAM roles, EMR cluster, workload delivery, schedules, Glue databases and the
    role of Segment's S3 destination.

    The consuming stack owns the AWS provider. Attributes: ``account``, ``bucket``, ``roles``,
    ``security``, ``cluster`` (a :class:`DataLakeCluster`, or :class:`TransientClusters`), ``workload``,
    ``schedules`` and ``alerts`` (``None`` when Segment runs the syncs),
    ``replay_cluster`` (or ``None``),
    ``catalog``, ``s3_destination`` (or ``None``). Its outputs: :class:`DataLakeOutputs`.
    """

    def __init__(self, scope: Construct, id: str, *, props: SegmentDataLakeProps) -> None:
        super().__init__(scope, id)
        self.props = props
        tags = dict(props.tags)
        self.account = AwsAccount(self, "Account")
        self.bucket = (props.bucket if isinstance(props.bucket, BucketRef)
                       else DataLakeBucket(self, "Bucket", props=_with_tags(props.bucket, tags),
                                           partition=self.account.partition))
        databases = list(dict.fromkeys(source.database for source in props.sources))
        self.roles = DataLakeRoles(
            self, "Roles", props=_with_tags(replace(props.access, vendor_role=props.sync_runner == "segment"), tags),
            bucket=self.bucket, glue_databases=databases, account=self.account)
        self.s3_destination = None
        if props.s3_destination:
            self.s3_destination = SegmentS3Destination(
                self, "S3Destination", bucket=self.bucket, props=SegmentS3DestinationProps(
                    workspace_id=props.workspace, name_suffix=props.access.name_suffix, tags=tags))
        if self.bucket.kms_key_arn:
            self.roles.grant_key_use("BucketKey", self.bucket.kms_key_arn)
            if self.s3_destination:
                self.s3_destination.grant_key_use(self.bucket.kms_key_arn)
        cluster_props = _with_tags(props.cluster, tags)
        if any(source.table_format == "iceberg" for source in props.sources):  # first: an extra one may override it
            cluster_props = replace(cluster_props, extra_configurations=(
                ICEBERG_CONFIGURATION, *cluster_props.extra_configurations))
        # Created here, not by the cluster, so that its key and groups keep the addresses they always had.
        self.security = EmrSecurity(self, "Security", props=cluster_props.security_props(), account=self.account)
        if props.cluster_mode == "transient":
            self.cluster = TransientClusters(self, "Emr", props=cluster_props, transient=props.transient_cluster,
                                             roles=self.roles, security=self.security, bucket=self.bucket,
                                             account=self.account)
        else:
            self.cluster = DataLakeCluster(self, "Emr", props=cluster_props, roles=self.roles, security=self.security,
                                           bucket=self.bucket, account=self.account)
        self.catalog = GlueCatalog(self, "Glue", props=props.catalog_props(), bucket=self.bucket, account=self.account,
                                   key_arns=[self.security.cluster_key_arn, *filter(None, [self.bucket.kms_key_arn])])
        if props.lake_formation:
            self.catalog.grant_sync("EmrInstanceRole", self.roles.emr_instance_role)
            if self.roles.vendor_role:
                self.catalog.grant_sync("VendorRole", self.roles.vendor_role, drop_tables=True)
        self.workload = self.schedules = self.replay_cluster = self.alerts = None
        if props.sync_runner == "self":
            self.workload = WorkloadDelivery(self, "Workload", props=WorkloadDeliveryProps(
                bundle_path=props.bundle_path), bucket=self.bucket)
            self.schedules = SyncSchedules(self, "Schedules", props=props.schedule_props(), cluster=self.cluster,
                                           bucket=self.bucket, workload=self.workload, account=self.account,
                                           after=self.catalog.sync_prerequisites)
            if props.replay_cluster is not None:
                self.replay_cluster = ReplayCluster(
                    self, "Replay", props=props.replay_cluster, cluster=self.cluster, roles=self.roles,
                    workload=self.workload, sources=props.sources, bucket=self.bucket,
                    workspace_id=props.workspace, account=self.account)
            if props.alerts is not None:
                self.alerts = DataLakeAlerts(
                    self, "Alerts", props=_with_tags(props.alerts, tags), sources=props.sources,
                    schedule_expression=props.schedule_expression, cluster=self.cluster,
                    name_suffix=props.access.name_suffix, replay=self.replay_cluster, account=self.account)

    def grant_read(self, id: str, role: IRole) -> IamPolicy:
        """Lets ``role`` read the lake: its tables, discarded values, duplicates' records and sync reports in the
        bucket, and the lake's databases in the Glue catalog (decrypting with the cluster's key and the bucket's; with
        ``lake_formation``, Lake Formation's ``SELECT`` and ``lakeformation:GetDataAccess`` too, so that Athena
        answers it whether or not it is opted in to Lake Formation). ``role``: an ``IamRole`` of the stack, or one made
        elsewhere (:meth:`DataLakeRoles.from_role_name`, a ``DataAwsIamRole``). Returns the policy attached to it."""
        folders = [contract.TABLES_PREFIX, contract.DISCARDS_PREFIX, contract.REPORTS_PREFIX,
                   f"{contract.STATE_PREFIX}*/{contract.DUPLICATES_FOLDER}/"]
        if self.props.lake_formation:
            self.catalog.grant_read(id, role)
        # s3a and EMRFS look up a table's folder as a key (HEAD segment-data/reports) before listing it
        folder_keys = [f"{self.bucket.bucket_arn}/{folder.rstrip('/')}" for folder in folders]
        return self._grant(id, role, "lake-read",
                           read_objects=[*object_arns(self.bucket.bucket_arn, folders), *folder_keys])

    def grant_read_write(self, id: str, role: IRole) -> IamPolicy:
        """Lets ``role`` read and write what the sync writes (``segment-data/`` and ``segment-stage/``) and change
        the tables and partitions of the lake's databases: what the lake's commands (``segment-lake compact``,
        ``delete-users``, ``state reset``) need when run from outside the cluster (with the cluster's key and the
        bucket's; with ``lake_formation``, the sync's Lake Formation grants). Returns the policy attached to it."""
        folders = [contract.DATA_PREFIX, contract.STAGE_PREFIX]
        if self.props.lake_formation:
            self.catalog.grant_sync(id, role)
        folder_keys = [f"{self.bucket.bucket_arn}/{folder.rstrip('/')}" for folder in folders]
        return self._grant(id, role, "lake-read-write",
                           write_objects=[*object_arns(self.bucket.bucket_arn, folders), *folder_keys])

    def _grant(self, id: str, role: IRole, template: str, **values) -> IamPolicy:
        """The policy of ``template``, with the use of the keys the lake's files are encrypted with (the cluster's,
        with which EMRFS encrypts every file the sync writes, and the bucket's), attached to ``role``. ListBucket is
        on the whole bucket: S3 answers a missing key with 404, which the commands expect, only to a principal that
        may list it (otherwise 403)."""
        document = policies.render(
            template, bucket_arn=self.bucket.bucket_arn,
            glue_resources=glue_arns(self.account.arn_parts, self.roles.databases),
            key_arns=[self.security.cluster_key_arn, *filter(None, [self.bucket.kms_key_arn])], **values)
        if self.props.lake_formation:
            # a principal opted in to Lake Formation reads through credentials Lake Formation vends it
            document["Statement"].append(policies.render("lake-formation-data-access")["Statement"][0])
        policy = IamPolicy(self, f"{id}Policy", name=f"SegmentDataLake{id}{self.props.access.name_suffix}",
                           policy=json.dumps(document, indent=2), tags=with_vendor_tag(self.props.tags))
        IamRolePolicyAttachment(self, f"{id}PolicyAttachment", role=role.name, policy_arn=policy.arn)
        return policy

    def output_values(self) -> dict[str, tuple[object, str]]:
        """What a user enters in each source's Data Lakes settings, and what else the lake exposes, by output name:
        (value, description). :class:`DataLakeOutputs` makes them Terraform outputs (docs/constructs.md)."""
        roles = self.roles
        cluster_id = {"emr_cluster_id": (self.cluster.cluster_id, "EMR Cluster ID")} if isinstance(
            self.cluster, DataLakeCluster) else {}  # transient clusters have none to enter anywhere
        values = {
            "aws_region": (self.account.region, "AWS Region of the bucket and the cluster"),
            **cluster_id,
            "glue_catalog_id": (self.account.account_id, "Glue Catalog ID (the AWS account id)"),
            "s3_bucket": (self.bucket.bucket_name, "S3 Bucket"),
            "glue_database_names": (self.catalog.database_names, "Glue database of each source"),
            "emr_instance_profile_name": (roles.emr_instance_profile.name, "EMR instance profile"),
            "emr_instance_profile_role_arn": (roles.emr_instance_role.arn, "Role of the EMR nodes"),
            "emr_service_role_name": (roles.emr_service_role.name, "EMR service role"),
            "sync_runner": (self.props.sync_runner, "Who runs the syncs: 'self' (this module's schedules; keep "
                                                     "Segment's Data Lakes destination off) or 'segment'"),
        }
        if self.alerts:
            values["alerts_topic_arn"] = (self.alerts.topic_arn, "SNS topic of the lake's alerts: subscribe to it")
        if roles.vendor_role:
            values["segment_vendor_role_arn"] = (roles.vendor_role.arn, "IAM Role ARN Segment assumes")
        if self.s3_destination:
            values["s3_destination_role_arn"] = (self.s3_destination.role_arn,
                                                 "IAM Role ARN to enter in Segment's AWS S3 destination settings")
        if self.replay_cluster:
            values["replay_cluster_template_uri"] = (self.replay_cluster.template_uri,
                                                     "Template of the replay cluster (segment-lake replay-on-emr)")
            values["replay_launcher_policy_arn"] = (self.replay_cluster.launcher_policy.arn,
                                                    "Policy to attach to whoever starts replays on EMR")
        return values


class DataLakeOutputs(Construct):
    """The Terraform outputs of one or several lakes (their :meth:`SegmentDataLake.output_values`), made where the app
    says. One lake's outputs have plain names (``emr_cluster_id``); with several, each lake's start with the slug of
    its construct id (``prod_emr_cluster_id``, ``staging_emr_cluster_id``), so none is lost.

    Attribute: ``outputs`` (output name to ``TerraformOutput``).
    """

    def __init__(self, scope: Construct, id: str, *, lakes: Sequence[SegmentDataLake]) -> None:
        super().__init__(scope, id)
        if not lakes:
            validation.fail("DataLakeOutputs needs at least one lake: pass lakes=[lake]")
        prefixes = [f"{contract.slug(lake.node.id)}_" if len(lakes) > 1 else "" for lake in lakes]
        if len(set(prefixes)) != len(prefixes):
            validation.fail(f"lakes {[lake.node.id for lake in lakes]!r} give their outputs the same names: give each "
                            f"lake a construct id of its own")
        names = {prefix + name for lake, prefix in zip(lakes, prefixes, strict=True) for name in lake.output_values()}
        others = [c for c in TerraformStack.of(self).node.find_all() if isinstance(c, DataLakeOutputs) and c is not self]
        for other in others:
            taken = names & set(getattr(other, "outputs", ()))  # (one refused while being built has none)
            if taken:
                validation.fail(f"{other.node.path} already names outputs {sorted(taken)[:3]}: pass "
                                f"every lake of the stack to one DataLakeOutputs, which names each lake's outputs apart")
        self.outputs: dict[str, TerraformOutput] = {}
        for lake, prefix in zip(lakes, prefixes, strict=True):
            for name, (value, description) in lake.output_values().items():
                output = TerraformOutput(self, prefix + name, value=value, description=description)
                output.override_logical_id(prefix + name)
                self.outputs[prefix + name] = output


def _with_tags(props, tags: Mapping[str, str]):
    """``props`` with the lake-wide tags under its own."""
    return replace(props, tags={**tags, **props.tags}) if tags else props
