"""EMR's RunJobFlow request of a cluster of the lake that lives for its steps: a transient sync or compaction
cluster (started by a schedule) or a replay cluster (started by ``segment-lake replay-on-emr``). It has the lake
cluster's release, instance types, EBS, configurations, bootstrap actions, network, security and roles; only its
name, its sizes and its role tag are its own, and EMR ends it when its last step ends."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from segment_lake_contract import LOGS_PREFIX

from .emr import EmrClusterProps, ManagedScaling, default_configurations, merge_configurations
from .emr_security import EmrSecurity
from .iam import DataLakeRoles
from .tagging import EMR_MANAGED_POLICY_TAG, with_vendor_tag

# the tag that tells the lake's clusters apart: always-on has none; "sync", "compact", "replay"
ROLE_TAG = "segment-lake-role"


@dataclass(frozen=True)
class ClusterIdentity:
    """What a cluster of the lake runs as and in: role names and security pieces (Terraform tokens)."""

    service_role: str
    instance_profile: str
    security_configuration: str
    master_security_group: str
    core_task_security_group: str
    service_access_security_group: str | None  # none in a public subnet

    @classmethod
    def of(cls, roles: DataLakeRoles, security: EmrSecurity) -> ClusterIdentity:
        return cls(service_role=roles.emr_service_role.name, instance_profile=roles.emr_instance_profile.name,
                   security_configuration=security.security_configuration_name,
                   master_security_group=security.master_security_group_id,
                   core_task_security_group=security.core_task_security_group_id,
                   service_access_security_group=security.service_access_security_group_id)


@dataclass(frozen=True)
class ClusterSize:
    """A cluster's own name and sizes: no core nodes is a single-node cluster, whose master runs the steps."""

    name: str
    core_instance_count: int
    task_instance_count: int
    managed_scaling: ManagedScaling | None
    role: str


def run_job_flow_request(cluster: EmrClusterProps, size: ClusterSize, identity: ClusterIdentity,
                         bucket_name: str, steps: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """RunJobFlow's request (API field names): the lake cluster's settings, ``size``'s, ``steps`` (if any), and no
    life after them (``KeepJobFlowAliveWhenNoSteps`` false)."""
    ebs = cluster.ebs()
    volume = {"VolumeType": ebs["type"], "SizeInGB": ebs["size"],
              **({"Iops": ebs["iops"]} if ebs["iops"] is not None else {}),
              **({"Throughput": ebs["throughput"]} if ebs["throughput"] is not None else {})}

    def group(role: str, instance_type: str, count: int, spot_price: str | None = None) -> dict[str, Any]:
        market = {"Market": "SPOT", "BidPrice": spot_price} if spot_price else {"Market": "ON_DEMAND"}
        return {"Name": role.lower(), **market, "InstanceRole": role, "InstanceType": instance_type,
                "InstanceCount": count, "EbsConfiguration": {"EbsBlockDeviceConfigs": [
                    {"VolumeSpecification": volume, "VolumesPerInstance": 1}]}}

    groups = [group("MASTER", cluster.master_instance_type, 1)]
    if size.core_instance_count:
        groups.append(group("CORE", cluster.core_instance_type, size.core_instance_count))
    if size.task_instance_count:
        groups.append(group("TASK", cluster.task_instance_type, size.task_instance_count, cluster.task_spot_price))
    instances: dict[str, Any] = {
        "InstanceGroups": groups,
        "Ec2SubnetId": cluster.security.subnet_id,
        "EmrManagedMasterSecurityGroup": identity.master_security_group,
        "EmrManagedSlaveSecurityGroup": identity.core_task_security_group,
        "KeepJobFlowAliveWhenNoSteps": False,
        "TerminationProtected": False,
    }
    if identity.service_access_security_group is not None:
        instances["ServiceAccessSecurityGroup"] = identity.service_access_security_group
    if cluster.additional_master_security_group_ids:
        instances["AdditionalMasterSecurityGroups"] = list(cluster.additional_master_security_group_ids)
    if cluster.additional_core_task_security_group_ids:
        instances["AdditionalSlaveSecurityGroups"] = list(cluster.additional_core_task_security_group_ids)
    if cluster.key_name:
        instances["Ec2KeyName"] = cluster.key_name
    request: dict[str, Any] = {
        "Name": size.name,
        "ReleaseLabel": cluster.release_label,
        "Applications": [{"Name": app} for app in ("Hadoop", "Hive", "Spark", *cluster.extra_applications)],
        "LogUri": f"s3://{bucket_name}/{LOGS_PREFIX}",
        "Instances": instances,
        "Configurations": merge_configurations(default_configurations(), cluster.extra_configurations),
        "ServiceRole": identity.service_role,
        "JobFlowRole": identity.instance_profile,
        "SecurityConfiguration": identity.security_configuration,
        "ScaleDownBehavior": "TERMINATE_AT_TASK_COMPLETION",
        "StepConcurrencyLevel": 1,
        "VisibleToAllUsers": True,
    }
    limits = size.managed_scaling
    if limits is not None:
        request["ManagedScalingPolicy"] = {"ComputeLimits": {
            "UnitType": "Instances", "MinimumCapacityUnits": limits.minimum_units,
            "MaximumCapacityUnits": limits.maximum_units, "MaximumOnDemandCapacityUnits": limits.maximum_on_demand_units,
            "MaximumCoreCapacityUnits": limits.maximum_core_units}}
    request["Tags"] = [{"Key": key, "Value": value} for key, value in
                       sorted(with_vendor_tag(cluster.tags, EMR_MANAGED_POLICY_TAG, {ROLE_TAG: size.role}).items())]
    if cluster.bootstrap_actions:
        request["BootstrapActions"] = [{"Name": b.name, "ScriptBootstrapAction": {"Path": b.path, "Args": list(b.args)}}
                                       for b in cluster.bootstrap_actions]
    if steps:
        request["Steps"] = steps
    return request
