"""EventBridge Scheduler schedules that run the lake's steps: each source's sync (every ``schedule_expression``) and
each source's compaction (daily by default), on the always-on cluster (AddJobFlowSteps, a schedule per source's
sync) or on a transient cluster started for each tick's steps (RunJobFlow, one schedule for every source)."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from constructs import Construct

import segment_data_lake_policies as policies

from . import validation
from .account import AwsAccount
from .aws import (
    IamPolicy,
    IamRole,
    IamRolePolicyAttachment,
    SchedulerSchedule,
    SchedulerScheduleFlexibleTimeWindow,
    SchedulerScheduleGroup,
    SchedulerScheduleTarget,
    SchedulerScheduleTargetRetryPolicy,
    TerraformResource,
)
from .bucket import LakeBucket
from .emr import DataLakeCluster
from .refs import IKey
from .scan_marks import mark
from .sources import SegmentSource, validate_sources
from .steps import step, step_command
from .tagging import with_vendor_tag
from .transient_clusters import TransientClusters
from .workload import WorkloadDelivery

DEFAULT_SCHEDULE = "rate(2 hours)"
# 03:15 UTC every day: compact merges the partitions that ended a day before (its --older-than, 24 hours)
DEFAULT_COMPACTION_SCHEDULE = "cron(15 3 * * ? *)"
@dataclass(frozen=True)
class SyncSchedulesProps:
    """Props of :class:`SyncSchedules`.

    :param sources: the Segment sources.
    :param schedule_expression: how often each source syncs (``rate(2 hours)``: 12 a day).
    :param compaction_schedule_expression: when every source's ``segment-lake compact`` runs (daily at 03:15 UTC
        by default), in the same cluster mode as the syncs; None: no scheduled compaction.
    :param workspace_id: the Segment workspace, passed to every sync, which copies it into its reports.
    :param name_suffix: appended to the role, policy and schedule names, e.g. ``-prod``.
    :param kms_key: KMS key encrypting the schedules (a ``KmsKey`` of the stack, or :meth:`EmrSecurity.from_key_arn`;
        default: an AWS-owned key).
    :param tags: tags of the role and policy; ``vendor=segment`` is always added.
    """

    sources: Sequence[SegmentSource]
    schedule_expression: str = DEFAULT_SCHEDULE
    compaction_schedule_expression: str | None = DEFAULT_COMPACTION_SCHEDULE
    workspace_id: str | None = None
    name_suffix: str = ""
    kms_key: IKey | None = None
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate_sources(self.sources)
        validation.schedule_expression(self.schedule_expression)
        if self.compaction_schedule_expression is not None:
            validation.schedule_expression(self.compaction_schedule_expression)
        validation.name_suffix(self.name_suffix)
        validation.tags(self.tags)


class SyncSchedules(Construct):
    """The lake's schedules, in a schedule group of its own, and the role they use: only Scheduler may assume it,
    for a schedule of that group (``aws:SourceArn``). On the always-on cluster (a :class:`DataLakeCluster`) there is
    one sync schedule per source and the role may only add steps to that cluster; with transient clusters (a
    :class:`TransientClusters`) one schedule starts a cluster with every source's sync step, and the role may only
    start clusters tagged as the lake's sync or compaction clusters, passing the lake's two EMR roles each to its
    service. The compaction schedule runs every source's ``compact`` step the same way. The role also decrypts
    with the schedules' key, if they have one.

    Attributes: ``group``, ``role``, ``policy``, ``schedules`` (dict: a source id, ``"sync"`` for the transient
    clusters' sync schedule, or ``"compact"``, to its ``SchedulerSchedule``), ``steps`` (dict of the same keys to
    the EMR steps each schedule's request carries).

    A ``rate(...)`` schedule fires as soon as it is created, so every schedule is created after what its first tick
    uses: its role's policy, the cluster's ``prerequisites`` (the roles' policies, the network rules), the bucket's
    policy, and ``after`` (for example the Lake Formation grants of the roles that run the sync).
    """

    def __init__(self, scope: Construct, id: str, *, props: SyncSchedulesProps,
                 cluster: DataLakeCluster | TransientClusters, bucket: LakeBucket, workload: WorkloadDelivery,
                 account: AwsAccount | None = None, after: Sequence[TerraformResource] = ()) -> None:
        super().__init__(scope, id)
        self.props = props
        account = AwsAccount.of(self, account)
        role_tags = with_vendor_tag(props.tags)
        name_suffix = props.name_suffix
        transient = isinstance(cluster, TransientClusters)
        # Scheduler names the group as the source of its role's use: a group of the lake's own keeps every
        # other schedule of the account from using the role.
        self.group = SchedulerScheduleGroup(self, "Group", name=f"segment-lake{name_suffix}", tags=role_tags)
        self.role = IamRole(
            self, "Role", name=f"SegmentDataLakeSchedulerRole{name_suffix}",
            description=("Used by EventBridge Scheduler to start the data lake's transient clusters" if transient
                         else "Used by EventBridge Scheduler to submit data lake sync steps"),
            assume_role_policy=policies.render_json("scheduler-trust", account_id=account.account_id,
                                                            schedule_group_arn=self.group.arn),
            tags=role_tags,
        )
        if transient:
            document = policies.render("scheduler-transient-permissions", partition=account.partition,
                                               region=account.region, account_id=account.account_id,
                                               **cluster.pass_role_values)
        else:
            document = policies.render("scheduler-permissions", cluster_arn=cluster.cluster_arn)
        if props.kms_key:  # Scheduler decrypts a schedule's target with its key, as the role
            document["Statement"].append({"Sid": "DecryptTheSchedulesWithTheirKey", "Effect": "Allow",
                                          "Action": "kms:Decrypt", "Resource": props.kms_key.arn})
        self.policy = IamPolicy(self, "Policy", name=f"SegmentDataLakeSchedulerPolicy{name_suffix}",
                                policy=json.dumps(document, indent=2), tags=role_tags)
        self._attachment = IamRolePolicyAttachment(self, "PolicyAttachment", role=self.role.name,
                                                   policy_arn=self.policy.arn)
        self._account, self._cluster = account, cluster
        self._after = list(dict.fromkeys([self._attachment, *cluster.prerequisites,
                                          *filter(None, [getattr(bucket, "policy", None)]), *after]))

        def steps(command: str) -> list[dict[str, Any]]:
            return [step(command, source, workload.step_jar, workload.step_args(
                step_command(command, source, bucket.bucket_name, account.region, props.workspace_id)))
                for source in props.sources]

        self.schedules: dict[str, SchedulerSchedule] = {}
        self.steps: dict[str, list[dict[str, Any]]] = {}
        if transient:
            self._schedule("sync", "Sync", f"segment-lake.sync{name_suffix}", props.schedule_expression,
                           "Start a cluster that syncs every Segment source of the data lake", steps("sync"))
        else:
            for source, sync in zip(props.sources, steps("sync"), strict=True):
                self._schedule(source.source_id, f"Sync-{source.source_id}", f"segment-lake-{source.slug}{name_suffix}",
                               props.schedule_expression, f"Sync Segment source {source.slug} into the data lake", [sync])
        if props.compaction_schedule_expression is not None:
            self._schedule("compact", "Compact", f"segment-lake.compact{name_suffix}",
                           props.compaction_schedule_expression,
                           "Compact the small files of every Segment source of the data lake", steps("compact"))

    def _schedule(self, key: str, id: str, name: str, expression: str, description: str,
                  steps: list[dict[str, Any]]) -> None:
        """A schedule sending ``steps`` to the always-on cluster, or starting a transient cluster that runs them."""
        cluster, partition = self._cluster, self._account.partition
        if isinstance(cluster, TransientClusters):
            api, request = "runJobFlow", cluster.run_job_flow(key, steps)  # key: "sync" or "compact"
        else:
            api, request = "addJobFlowSteps", {"JobFlowId": cluster.cluster_id, "Steps": steps}
        self.steps[key] = steps
        self.schedules[key] = SchedulerSchedule(
            self, id, name=name[:64], description=description, group_name=self.group.name,
            schedule_expression=expression,
            flexible_time_window=SchedulerScheduleFlexibleTimeWindow(mode="OFF"),
            kms_key_arn=self.props.kms_key.arn if self.props.kms_key else None,
            target=SchedulerScheduleTarget(
                arn=f"arn:{partition}:scheduler:::aws-sdk:emr:{api}", role_arn=self.role.arn,
                input=json.dumps(request),
                # The next scheduled run picks up whatever a missed one left.
                retry_policy=SchedulerScheduleTargetRetryPolicy(maximum_retry_attempts=2, maximum_event_age_in_seconds=3600),
            ),
            # a schedule that fires before its role may add steps (or start clusters), or before the cluster may
            # reach AWS and the lake, loses that run
            depends_on=self._after,
        )
        mark(self.schedules[key], "sync_schedule")
