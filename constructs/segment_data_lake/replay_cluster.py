"""A temporary EMR cluster for a replay: the lake cluster's roles, security configuration, sizes and app
release, started on demand by ``segment-lake replay-on-emr`` and terminated by EMR when its one step ends.

Terraform creates no cluster here (a cluster that terminates itself would be re-created by every apply):
it writes the cluster's RunJobFlow request, with each source's replay step, to the bucket as a template,
and a policy an operator needs to start it. The regular cluster and its schedules are untouched.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from constructs import Construct

import segment_data_lake_policies as policies
import segment_lake_contract as contract

from . import validation
from .account import AwsAccount
from .aws import IamPolicy, S3Object
from .bucket import LakeBucket
from .cluster_request import ClusterIdentity, ClusterSize, run_job_flow_request
from .emr import DataLakeCluster, EmrClusterProps, ManagedScaling
from .iam import DataLakeRoles
from .sources import SegmentSource, validate_sources
from .steps import step, step_command
from .tagging import with_vendor_tag
from .transient_clusters import TransientClusters
from .workload import WorkloadDelivery


@dataclass(frozen=True)
class ReplayClusterProps:
    """Props of :class:`ReplayCluster`. Everything else (release, instance types, EBS, configurations,
    bootstrap actions, network, security, roles, tags) is the lake cluster's.

    :param name: name of the replay clusters (default: the lake cluster's name with ``-replay``); also
        names the template, ``segment-lake-replay/<name>.json``.
    :param core_instance_count: core nodes (default: the lake cluster's).
    :param task_instance_count: task nodes at start (default: the lake cluster's).
    :param managed_scaling: scaling limits (default: the lake cluster's); a long backfill may want more.
    """

    name: str | None = None
    core_instance_count: int | None = None
    task_instance_count: int | None = None
    managed_scaling: ManagedScaling | None = None

    def __post_init__(self) -> None:
        if self.name is not None:
            validation.matches(self.name, r"[\w.-]{1,200}", "replay cluster name", "use letters, digits, '.', '-' or '_'")
        for count in ("core_instance_count", "task_instance_count"):
            if getattr(self, count) is not None:
                validation.at_least(getattr(self, count), 1, f"replay cluster {count}")

    def resolved(self, cluster: EmrClusterProps) -> ReplayClusterProps:
        """These props with every default taken from the lake cluster's."""
        scaling = self.managed_scaling or cluster.managed_scaling
        core = _or(self.core_instance_count, min(cluster.core_instance_count, scaling.maximum_core_units))
        validation.not_above(core, scaling.maximum_core_units, "replay cluster core_instance_count",
                             "replay cluster managed_scaling maximum_core_units")
        return ReplayClusterProps(name=self.name or f"{cluster.name}-replay"[:200].replace(" ", "-"),
                                  core_instance_count=core,
                                  task_instance_count=_or(self.task_instance_count, cluster.task_instance_count),
                                  managed_scaling=scaling)


def _or(value, default):
    return default if value is None else value


def replay_template(request: dict[str, Any], steps: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The template ``segment-lake replay-on-emr`` reads: the request and, per source id, its slug and its
    replay step without the window (``--from``/``--to`` are appended to the step's arguments)."""
    return {"format": contract.REPLAY_TEMPLATE_FORMAT, "run_job_flow": request,
            "sources": {source_id: {"slug": slug, "step": step} for source_id, (slug, step) in steps.items()}}


class ReplayCluster(Construct):
    """The template of a temporary replay cluster, in the bucket, and the policy that lets an operator start one.

    Start one with ``segment-lake replay-on-emr --lake s3://<bucket>/ --source-id ID --from DAY --to DAY``.
    Attributes: ``props`` (resolved), ``template`` (dict, Terraform tokens inside), ``template_object``,
    ``template_uri``, ``launcher_policy`` (attach it to whoever starts replays).
    """

    def __init__(self, scope: Construct, id: str, *, props: ReplayClusterProps,
                 cluster: DataLakeCluster | TransientClusters,
                 roles: DataLakeRoles, workload: WorkloadDelivery, sources: Sequence[SegmentSource],
                 bucket: LakeBucket, workspace_id: str | None = None, account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        validate_sources(sources)
        account = AwsAccount.of(self, account)
        bucket_name, bucket_arn = bucket.bucket_name, bucket.bucket_arn
        self.props = props = props.resolved(cluster.props)
        steps = {}
        for source in sources:
            # replay-on-emr names the step again, with its window; the cluster exists for this step only
            steps[source.source_id] = (source.slug, step(
                "replay", source, workload.step_jar, workload.step_args(
                    step_command("replay", source, bucket_name, account.region, workspace_id)),
                action_on_failure="TERMINATE_CLUSTER"))
        size = ClusterSize(props.name, props.core_instance_count, props.task_instance_count, props.managed_scaling,
                           role="replay")
        request = run_job_flow_request(cluster.props, size, ClusterIdentity.of(roles, cluster.security), bucket_name)
        self.template = replay_template(request, steps)
        key = f"{contract.REPLAY_TEMPLATES_PREFIX}{props.name}.json"
        self.template_object = S3Object(self, "Template", bucket=bucket_name, key=key,
                                        content=json.dumps(self.template, indent=2), content_type="application/json")
        self.template_uri = f"s3://{bucket_name}/{key}"
        document = policies.render(
            "replay-launcher-permissions", bucket_arn=bucket_arn, template_prefix=contract.REPLAY_TEMPLATES_PREFIX,
            partition=account.partition, region=account.region, account_id=account.account_id,
            **roles.pass_role_values())
        if bucket.kms_key_arn:  # the template is encrypted with the bucket's key
            document["Statement"].append({"Sid": "ReadTheTemplateWithTheBucketKey", "Effect": "Allow",
                                          "Action": "kms:Decrypt", "Resource": bucket.kms_key_arn})
        self.launcher_policy = IamPolicy(
            self, "LauncherPolicy", name=f"SegmentDataLakeReplayLauncherPolicy{roles.props.name_suffix}",
            description="Start and follow replay clusters of the Segment data lake (segment-lake replay-on-emr)",
            policy=json.dumps(document, indent=2), tags=with_vendor_tag(roles.props.tags))
