"""Transient clusters: no cluster between syncs. Each scheduled tick starts one EMR cluster for that tick's steps
(every source's sync, or every source's compaction), which EMR terminates when the last step ends.

Terraform creates no cluster here (one that ends itself would be created again by every apply): the schedules
send RunJobFlow requests that this construct renders from the lake cluster's settings (cluster_request.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from constructs import Construct

from . import validation
from .account import AwsAccount
from .bucket import LakeBucket
from .cluster_request import ClusterIdentity, ClusterSize, run_job_flow_request
from .emr import EmrClusterProps, ManagedScaling
from .emr_security import EmrSecurity
from .iam import DataLakeRoles
from .scan_marks import mark


@dataclass(frozen=True)
class TransientClusterProps:
    """Sizes of the clusters ``cluster_mode="transient"`` starts. Everything else (release, instance types, EBS,
    configurations, bootstrap actions, network, security, roles, tags) is the lake cluster's
    (:class:`EmrClusterProps`).

    :param core_instance_count: core nodes (default 0: a single-node cluster, whose master node runs the steps;
        enough for a source of about 100M events a day: the README's cost table).
    :param task_instance_count: task nodes (default 0; on Spot with the cluster's ``task_spot_price``); needs core
        nodes.
    :param managed_scaling: EMR managed scaling limits (default none: a cluster that lives for minutes is sized at
        its start); needs core nodes.
    """

    core_instance_count: int = 0
    task_instance_count: int = 0
    managed_scaling: ManagedScaling | None = None

    def __post_init__(self) -> None:
        validation.at_least(self.core_instance_count, 0, "transient core_instance_count")
        validation.at_least(self.task_instance_count, 0, "transient task_instance_count")
        if self.core_instance_count == 0 and (self.task_instance_count or self.managed_scaling):
            validation.fail("a transient cluster without core nodes (core_instance_count=0) runs on its master node "
                            "alone, with no task nodes or managed scaling: set core_instance_count to 1 or more")
        if self.managed_scaling is not None:
            validation.not_above(self.core_instance_count, self.managed_scaling.maximum_core_units,
                                 "transient core_instance_count", "managed scaling maximum_core_units")


class TransientClusters(Construct):
    """The RunJobFlow requests with which the schedules start the lake's transient clusters; the security
    configuration, key and groups every cluster of the lake runs in (its own :class:`EmrSecurity` unless one is
    given), and the nodes' use of the cluster's key.

    Attributes: ``props`` (the lake cluster's), ``transient``, ``security``, ``identity`` (:class:`ClusterIdentity`),
    ``pass_role_values`` (the roles a cluster is started with), ``prerequisites`` (what must exist before a cluster
    starts: the roles' policy attachments and the groups' rules), ``run_job_flow(role, steps)``.
    """

    def __init__(self, scope: Construct, id: str, *, props: EmrClusterProps, transient: TransientClusterProps,
                 roles: DataLakeRoles, bucket: LakeBucket, security: EmrSecurity | None = None,
                 account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        self.props, self.transient = props, transient
        self.security = security or EmrSecurity(self, "Security", props=props.security_props(), account=account)
        roles.grant_key_use("ClusterKey", self.security.cluster_key_arn)
        self.prerequisites = [*roles.attachments, *self.security.network_rules]
        self.identity = ClusterIdentity.of(roles, self.security)
        self.pass_role_values = roles.pass_role_values()
        self._bucket_name = bucket.bucket_name
        for group in (self.security.master_security_group, self.security.core_task_security_group,
                      self.security.service_access_security_group):
            if group is not None:  # created here, attached only by the requests
                mark(group, "transient_cluster_security_group")

    def cluster_name(self, role: str) -> str:
        """The name of the clusters started for ``role`` (``sync`` or ``compact``): what alerts match them by."""
        return f"{self.props.name}-{role}".replace(" ", "-")[:256]

    def run_job_flow(self, role: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
        """The RunJobFlow request of a cluster that runs ``steps`` (one after another) and ends."""
        size = ClusterSize(self.cluster_name(role), self.transient.core_instance_count,
                           self.transient.task_instance_count, self.transient.managed_scaling, role=role)
        return run_job_flow_request(self.props, size, self.identity, self._bucket_name, steps)
