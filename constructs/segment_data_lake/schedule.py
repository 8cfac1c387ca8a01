"""EventBridge Scheduler schedules that submit a sync step per source."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from constructs import Construct

from . import policy_documents, validation
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
)
from .bucket import LakeBucket
from .emr import DataLakeCluster
from .scan_marks import mark
from .sources import SegmentSource, validate_sources
from .tagging import with_vendor_tag
from .workload import WorkloadDelivery

DEFAULT_SCHEDULE = "rate(2 hours)"


def sync_command(source: SegmentSource, bucket_name: str, region: str, workspace_id: str | None = None,
                 command: str = "sync") -> list[str]:
    """The ``segment-lake`` command of one sync of ``source`` (or of a ``replay``, which takes the same
    options); ``workspace_id`` goes into its reports."""
    args = [
        command,
        "--source-id", source.source_id,
        "--source-slug", source.slug,
        "--input", f"s3://{bucket_name}/segment-logs/{source.source_id}/",
        "--lake", f"s3://{bucket_name}/",
        "--glue-database", source.database,
        "--date-partition", source.date_partition,
        "--catalog", "glue",
        "--aws-region", region,
    ]
    if source.table_prefix:
        args += ["--table-prefix", source.table_prefix]
    if workspace_id:
        args += ["--workspace-id", workspace_id]
    return args


def add_job_flow_steps_input(cluster_id: str, source: SegmentSource, jar: str, args: Sequence[str]) -> str:
    """The AddJobFlowSteps request the schedule sends (EMR API field names)."""
    return json.dumps({
        "JobFlowId": cluster_id,
        "Steps": [{
            "Name": f"segment-lake sync {source.slug} ({source.source_id})",
            # A failed sync is retried by the next run; the cluster keeps serving other sources.
            "ActionOnFailure": "CONTINUE",
            "HadoopJarStep": {"Jar": jar, "Args": list(args)},
        }],
    })


@dataclass(frozen=True)
class SyncSchedulesProps:
    """Props of :class:`SyncSchedules`.

    :param sources: the Segment sources, one schedule each.
    :param schedule_expression: how often each source syncs (``rate(2 hours)``: 12 a day).
    :param workspace_id: the Segment workspace, passed to every sync, which copies it into its reports.
    :param name_suffix: appended to the role, policy and schedule names, e.g. ``-prod``.
    :param kms_key_arn: KMS key encrypting the schedules (AWS-owned key by default).
    :param tags: tags of the role and policy; ``vendor=segment`` is always added.
    """

    sources: Sequence[SegmentSource]
    schedule_expression: str = DEFAULT_SCHEDULE
    workspace_id: str | None = None
    name_suffix: str = ""
    kms_key_arn: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate_sources(self.sources)
        validation.schedule_expression(self.schedule_expression)
        validation.name_suffix(self.name_suffix)
        validation.tags(self.tags)


class SyncSchedules(Construct):
    """One schedule per source, in a schedule group of the lake's own, and the role the schedules use: only
    Scheduler may assume it, for a schedule of that group (``aws:SourceArn``), and it may only add steps to this
    cluster (and decrypt with the schedules' key, if they have one).

    Attributes: ``group``, ``role``, ``policy``, ``schedules`` (dict source id to ``SchedulerSchedule``).
    ``workspace_id`` (the Segment workspace) is passed to every sync, which copies it into its reports.
    """

    def __init__(self, scope: Construct, id: str, *, props: SyncSchedulesProps, cluster: DataLakeCluster,
                 bucket: LakeBucket, workload: WorkloadDelivery, account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        self.props = props
        account = AwsAccount.of(self, account)
        role_tags = with_vendor_tag(props.tags)
        name_suffix = props.name_suffix
        # Scheduler names the group as the source of its role's use: a group of the lake's own keeps every
        # other schedule of the account from using the role.
        self.group = SchedulerScheduleGroup(self, "Group", name=f"segment-lake{name_suffix}", tags=role_tags)
        self.role = IamRole(
            self, "Role", name=f"SegmentDataLakeSchedulerRole{name_suffix}",
            description="Used by EventBridge Scheduler to submit data lake sync steps",
            assume_role_policy=policy_documents.render_json("scheduler-trust", account_id=account.account_id,
                                                            schedule_group_arn=self.group.arn),
            tags=role_tags,
        )
        document = policy_documents.render("scheduler-permissions", cluster_arn=cluster.cluster_arn)
        if props.kms_key_arn:  # Scheduler decrypts a schedule's target with its key, as the role
            document["Statement"].append({"Sid": "DecryptTheSchedulesWithTheirKey", "Effect": "Allow",
                                          "Action": "kms:Decrypt", "Resource": props.kms_key_arn})
        self.policy = IamPolicy(self, "Policy", name=f"SegmentDataLakeSchedulerPolicy{name_suffix}",
                                policy=json.dumps(document, indent=2), tags=role_tags)
        attachment = IamRolePolicyAttachment(self, "PolicyAttachment", role=self.role.name, policy_arn=self.policy.arn)
        self.schedules: dict[str, SchedulerSchedule] = {}
        for source in props.sources:
            self.schedules[source.source_id] = SchedulerSchedule(
                self, f"Sync-{source.source_id}",
                name=f"segment-lake-{source.slug}{name_suffix}"[:64],
                description=f"Sync Segment source {source.slug} into the data lake",
                group_name=self.group.name,
                schedule_expression=props.schedule_expression,
                flexible_time_window=SchedulerScheduleFlexibleTimeWindow(mode="OFF"),
                kms_key_arn=props.kms_key_arn,
                target=SchedulerScheduleTarget(
                    arn=f"arn:{account.partition}:scheduler:::aws-sdk:emr:addJobFlowSteps",
                    role_arn=self.role.arn,
                    input=add_job_flow_steps_input(cluster.cluster_id, source, workload.step_jar, workload.step_args(
                        sync_command(source, bucket.bucket_name, account.region, props.workspace_id))),
                    # The next scheduled run picks up whatever a missed one left.
                    retry_policy=SchedulerScheduleTargetRetryPolicy(
                        maximum_retry_attempts=2, maximum_event_age_in_seconds=3600),
                ),
                # a schedule that fires before its role may add steps loses that run
                depends_on=[attachment],
            )
            mark(self.schedules[source.source_id], "sync_schedule")
