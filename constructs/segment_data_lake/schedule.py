"""EventBridge Scheduler schedules that submit a sync step per source."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from constructs import Construct

from . import policy_documents, validation
from .account import AwsAccount
from .aws import (
    IamPolicy,
    IamRole,
    IamRolePolicyAttachment,
    SchedulerSchedule,
    SchedulerScheduleFlexibleTimeWindow,
    SchedulerScheduleTarget,
    SchedulerScheduleTargetRetryPolicy,
)
from .scan_marks import mark
from .sources import SegmentSource
from .tagging import with_vendor_tag

DEFAULT_SCHEDULE = "rate(2 hours)"


def sync_step_args(source: SegmentSource, bucket_name: str, step_entry: str, region: str,
                   workspace_id: str | None = None) -> list[str]:
    """The ``spark-submit`` command of one sync of ``source``; ``workspace_id`` goes into its reports."""
    args = [
        "spark-submit", "--master", "yarn", "--deploy-mode", "client", step_entry,
        "sync",
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


def add_job_flow_steps_input(cluster_id: str, source: SegmentSource, bucket_name: str, step_entry: str,
                             region: str, workspace_id: str | None = None) -> str:
    """The AddJobFlowSteps request the schedule sends (EMR API field names)."""
    return json.dumps({
        "JobFlowId": cluster_id,
        "Steps": [{
            "Name": f"segment-lake sync {source.slug} ({source.source_id})",
            # A failed sync is retried by the next run; the cluster keeps serving other sources.
            "ActionOnFailure": "CONTINUE",
            "HadoopJarStep": {"Jar": "command-runner.jar",
                              "Args": sync_step_args(source, bucket_name, step_entry, region, workspace_id)},
        }],
    })


class SyncSchedules(Construct):
    """One schedule per source and the role the schedules use, which may only
    add steps to this cluster.

    Attributes: ``role``, ``policy``, ``schedules`` (dict source id to ``SchedulerSchedule``).
    ``workspace_id`` (the Segment workspace) is passed to every sync, which copies it into its reports.
    """

    def __init__(self, scope: Construct, id: str, *, sources: Sequence[SegmentSource], cluster_id: str,
                 cluster_arn: str, bucket_name: str, step_entry: str,
                 schedule_expression: str = DEFAULT_SCHEDULE, name_suffix: str = "",
                 kms_key_arn: str | None = None, tags: Mapping[str, str] | None = None,
                 account: AwsAccount | None = None, workspace_id: str | None = None) -> None:
        super().__init__(scope, id)
        validation.schedule_expression(schedule_expression)
        account = AwsAccount.of(self, account)
        role_tags = with_vendor_tag(tags)
        self.role = IamRole(
            self, "Role", name=f"SegmentDataLakeSchedulerRole{name_suffix}",
            description="Used by EventBridge Scheduler to submit data lake sync steps",
            assume_role_policy=policy_documents.render_json("scheduler-trust", account_id=account.account_id),
            tags=role_tags,
        )
        self.policy = IamPolicy(self, "Policy", name=f"SegmentDataLakeSchedulerPolicy{name_suffix}",
                                policy=policy_documents.render_json("scheduler-permissions", cluster_arn=cluster_arn),
                                tags=role_tags)
        IamRolePolicyAttachment(self, "PolicyAttachment", role=self.role.name, policy_arn=self.policy.arn)
        self.schedules: dict[str, SchedulerSchedule] = {}
        for source in sources:
            self.schedules[source.source_id] = SchedulerSchedule(
                self, f"Sync-{source.source_id}",
                name=f"segment-lake-{source.slug}{name_suffix}"[:64],
                description=f"Sync Segment source {source.slug} into the data lake",
                schedule_expression=schedule_expression,
                flexible_time_window=SchedulerScheduleFlexibleTimeWindow(mode="OFF"),
                kms_key_arn=kms_key_arn,
                target=SchedulerScheduleTarget(
                    arn=f"arn:{account.partition}:scheduler:::aws-sdk:emr:addJobFlowSteps",
                    role_arn=self.role.arn,
                    input=add_job_flow_steps_input(cluster_id, source, bucket_name, step_entry, account.region,
                                                   workspace_id),
                    # The next scheduled run picks up whatever a missed one left.
                    retry_policy=SchedulerScheduleTargetRetryPolicy(
                        maximum_retry_attempts=2, maximum_event_age_in_seconds=3600),
                ),
            )
            mark(self.schedules[source.source_id], "sync_schedule")
