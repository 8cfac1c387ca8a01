"""The EMR cluster that runs the sync, with managed scaling."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from constructs import Construct

from segment_lake_contract import LOGS_PREFIX

from . import validation
from .account import AwsAccount
from .aws import (
    EmrCluster,
    EmrClusterBootstrapAction,
    EmrClusterCoreInstanceGroup,
    EmrClusterCoreInstanceGroupEbsConfig,
    EmrClusterEc2Attributes,
    EmrClusterMasterInstanceGroup,
    EmrClusterMasterInstanceGroupEbsConfig,
    EmrInstanceGroup,
    EmrInstanceGroupEbsConfig,
    EmrManagedScalingPolicy,
    EmrManagedScalingPolicyComputeLimits,
    TerraformResourceLifecycle,
)
from .bucket import LakeBucket
from .emr_security import DEFAULT_NAME, EmrSecurity, EmrSecurityProps
from .iam import DataLakeRoles
from .scan_marks import mark
from .tagging import EMR_MANAGED_POLICY_TAG, VENDOR_TAG, with_vendor_tag

GLUE_METASTORE_FACTORY = "com.amazonaws.glue.catalog.metastore.AWSGlueDataCatalogHiveClientFactory"
SYNC_PYTHON = "python3.11"


@dataclass(frozen=True)
class ManagedScaling:
    """EMR managed scaling limits, in instances.

    :param minimum_units: the cluster never shrinks below this.
    :param maximum_units: the cluster never grows above this.
    :param maximum_on_demand_units: at most this many units are On-Demand.
    :param maximum_core_units: at most this many units are core nodes (the rest are task nodes).
    """

    minimum_units: int = 2
    maximum_units: int = 8
    maximum_on_demand_units: int = 8
    maximum_core_units: int = 2

    def __post_init__(self) -> None:
        for name in ("minimum_units", "maximum_units", "maximum_on_demand_units", "maximum_core_units"):
            validation.at_least(getattr(self, name), 1, f"managed scaling {name}")
        validation.not_above(self.minimum_units, self.maximum_units, "managed scaling minimum_units", "maximum_units")
        validation.not_above(self.maximum_on_demand_units, self.maximum_units,
                             "managed scaling maximum_on_demand_units", "maximum_units")
        validation.not_above(self.maximum_core_units, self.maximum_units,
                             "managed scaling maximum_core_units", "maximum_units")


@dataclass(frozen=True)
class BootstrapAction:
    """A script EMR runs on every node when it starts.

    :param name: name of the action.
    :param path: ``s3://`` URI of the script.
    :param args: arguments of the script.
    """

    name: str
    path: str
    args: Sequence[str] = ()

    def __post_init__(self) -> None:
        validation.matches(self.path, r"s3://[^/]+/.+", "bootstrap action path", "use the s3:// URI of a script")


# gp3's baseline, written out: EMR reads iops and throughput back, and an unset one would be a diff.
GP3_IOPS = 3000
GP3_THROUGHPUT_MIB = 125


@dataclass(frozen=True)
class EmrClusterProps:
    """Props of :class:`DataLakeCluster`.

    :param security: where the cluster runs and what guards it (:class:`EmrSecurityProps`): its subnet (a private
        subnet needs a NAT gateway or VPC endpoints for S3, Glue, EMR, STS, KMS and CloudWatch, see
        ``examples/complete``, and every subnet the tag ``for-use-with-amazon-emr-managed-policies=true``), its KMS
        key, security configuration and EMR-managed security groups, each created unless brought. Its ``name``
        defaults to the cluster's, and it gets the cluster's tags under its own.
    :param name: cluster name.
    :param release_label: EMR release (Spark 3.5): ``emr-7.1.0`` or newer, the first with Python 3.11.
    :param master_instance_type: instance type of the master node.
    :param core_instance_type: instance type of the core nodes.
    :param task_instance_type: instance type of the task nodes.
    :param core_instance_count: initial core nodes (managed scaling changes it; Terraform ignores that drift).
    :param task_instance_count: initial task nodes (same).
    :param task_spot_price: the task nodes as Spot instances, bidding at most this many USD an hour per node
        (e.g. ``"0.192"``, m5.xlarge's On-Demand price in us-east-1: Spot's discount, never more than On-Demand);
        None (default): On-Demand. Task nodes hold no data, so a reclaimed one costs only its tasks' retries.
        Changing it creates a new task group (not a new cluster); EMR cannot remove an instance group, so the old
        one stays, resized to 0.
    :param ebs_volume_size_gb: gp3 EBS size per node.
    :param ebs_volume_type: EBS type, ``gp3`` by default.
    :param ebs_iops: provisioned IOPS per volume (gp3: 3000 by default, its baseline; io1: required).
    :param ebs_throughput_mib: gp3 throughput per volume in MiB/s (125 by default, its baseline).
    :param managed_scaling: EMR managed scaling limits.
    :param key_name: EC2 key pair for SSH to the nodes (none by default).
    :param additional_master_security_group_ids: extra security groups for the master node.
    :param additional_core_task_security_group_ids: extra security groups for core and task nodes.
    :param termination_protection: protect the cluster from termination. EMR refuses to terminate a protected
        cluster, so ``terraform destroy`` (or a change that replaces the cluster) fails on it: set it to False and
        apply first.
    :param extra_applications: applications besides Hadoop, Hive and Spark.
    :param extra_configurations: EMR configuration classifications added to the defaults.
    :param step_concurrency_level: steps that may run at once (1 runs syncs one after another).
    :param bootstrap_actions: scripts run on every node at start (none by default: each sync step
        brings its release of the app, so the cluster is the same for every release). Changing them
        replaces the cluster.
    :param tags: tags of the cluster; ``vendor=segment`` is always set and cannot be overridden.
    """

    security: EmrSecurityProps
    name: str = DEFAULT_NAME
    release_label: str = "emr-7.13.0"
    master_instance_type: str = "m5.xlarge"
    core_instance_type: str = "m5.xlarge"
    task_instance_type: str = "m5.xlarge"
    core_instance_count: int = 2
    task_instance_count: int = 2
    task_spot_price: str | None = None
    ebs_volume_size_gb: int = 64
    ebs_volume_type: str = "gp3"
    ebs_iops: int | None = None
    ebs_throughput_mib: int | None = None
    managed_scaling: ManagedScaling = field(default_factory=ManagedScaling)
    key_name: str | None = None
    additional_master_security_group_ids: Sequence[str] = ()
    additional_core_task_security_group_ids: Sequence[str] = ()
    termination_protection: bool = False
    extra_applications: Sequence[str] = ()
    extra_configurations: Sequence[Mapping[str, Any]] = ()
    step_concurrency_level: int = 1
    bootstrap_actions: Sequence[BootstrapAction] = ()
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.security, EmrSecurityProps):
            validation.fail(f"security {self.security!r} is not an EmrSecurityProps: pass "
                            f"security=EmrSecurityProps(subnet_id=...)")
        validation.cluster_name(self.name)
        validation.release_label(self.release_label)
        for role in ("master", "core", "task"):
            validation.matches(getattr(self, f"{role}_instance_type"), r"[a-z][a-z0-9-]*\.[a-z0-9]+",
                               f"{role} instance type", "use an EC2 instance type such as m5.xlarge")
        validation.at_least(self.core_instance_count, 1, "core_instance_count")
        validation.at_least(self.task_instance_count, 1, "task_instance_count")
        if self.task_spot_price is not None:
            validation.matches(self.task_spot_price, r"\d{1,3}(\.\d{1,4})?", "task_spot_price",
                               "use a price in USD an hour, such as '0.192'")
        validation.at_least(self.ebs_volume_size_gb, 15, "ebs_volume_size_gb")
        validation.one_of(self.ebs_volume_type, ("gp3", "gp2", "io1", "st1", "sc1"), "EBS volume type")
        if self.ebs_volume_type == "gp3":
            validation.at_least(_or(self.ebs_iops, GP3_IOPS), GP3_IOPS, "ebs_iops")
            validation.at_least(_or(self.ebs_throughput_mib, GP3_THROUGHPUT_MIB), GP3_THROUGHPUT_MIB, "ebs_throughput_mib")
        elif self.ebs_volume_type == "io1" and self.ebs_iops is None:
            validation.fail("ebs_volume_type 'io1' needs ebs_iops: set the provisioned IOPS per volume")
        elif self.ebs_throughput_mib is not None or (self.ebs_iops is not None and self.ebs_volume_type != "io1"):
            validation.fail(f"ebs_volume_type {self.ebs_volume_type!r} takes no ebs_iops or ebs_throughput_mib: "
                            f"remove them, or use gp3")
        validation.at_least(self.step_concurrency_level, 1, "step_concurrency_level")
        validation.not_above(self.core_instance_count, self.managed_scaling.maximum_core_units,
                             "core_instance_count", "managed scaling maximum_core_units")
        for app in self.extra_applications:
            if app.lower() in ("hadoop", "hive", "spark"):
                validation.fail(f"extra application {app!r} is always installed: remove it from extra_applications")
        for conf in self.extra_configurations:
            if not isinstance(conf, Mapping) or not conf.get("Classification"):
                validation.fail(f"extra configuration {conf!r} has no 'Classification': "
                                f"use EMR's {{'Classification': ..., 'Properties': {{...}}}} form")
        validation.tags(self.tags)
        if "vendor" in self.tags and self.tags["vendor"] != VENDOR_TAG["vendor"]:
            validation.fail(f"tag vendor={self.tags['vendor']!r} would hide the cluster from Segment: remove the 'vendor' tag")

    def security_props(self) -> EmrSecurityProps:
        """``security``, named after the cluster unless it names itself, with the cluster's tags under its own."""
        return replace(self.security, name=self.security.name or self.name, tags={**self.tags, **self.security.tags})

    def ebs(self) -> dict[str, Any]:
        """One EBS volume per node, every attribute EMR reads back written out."""
        gp3 = self.ebs_volume_type == "gp3"
        return {"size": self.ebs_volume_size_gb, "type": self.ebs_volume_type, "volumes_per_instance": 1,
                "iops": _or(self.ebs_iops, GP3_IOPS if gp3 else None),
                "throughput": _or(self.ebs_throughput_mib, GP3_THROUGHPUT_MIB if gp3 else None)}


def _or(value: int | None, default: int | None) -> int | None:
    return default if value is None else value


def default_configurations() -> list[dict[str, Any]]:
    """Glue as the Hive and Spark metastore, Python 3.11 for PySpark, bounded Spark history."""
    glue = {"hive.metastore.client.factory.class": GLUE_METASTORE_FACTORY}
    return [
        {"Classification": "hive-site", "Properties": glue},
        {"Classification": "spark-hive-site", "Properties": glue},
        {"Classification": "spark-env", "Properties": {}, "Configurations": [
            {"Classification": "export", "Properties": {"PYSPARK_PYTHON": SYNC_PYTHON, "PYSPARK_DRIVER_PYTHON": SYNC_PYTHON}},
        ]},
        {"Classification": "spark-defaults", "Properties": {
            # Without the cleaner, event logs of 12 syncs a day fill the master's disk.
            "spark.history.fs.cleaner.enabled": "true",
            "spark.history.fs.cleaner.maxAge": "7d",
            "spark.history.fs.cleaner.interval": "1d",
        }},
        {"Classification": "yarn-site", "Properties": {
            "yarn.log-aggregation-enable": "true",
            "yarn.log-aggregation.retain-seconds": "604800",
        }},
    ]


# EMR's own Apache Iceberg on the cluster's Spark, for sources whose table_format is iceberg
ICEBERG_CONFIGURATION = {"Classification": "iceberg-defaults", "Properties": {"iceberg.enabled": "true"}}


def merge_configurations(defaults: Sequence[Mapping[str, Any]], extra: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Extra classifications add to (and override properties of) the defaults. Every classification has
    ``Properties`` (EMR returns ``{}`` for none, and a missing one would be a diff on every plan)."""
    merged = {conf["Classification"]: dict(conf) for conf in defaults}
    for conf in extra:
        base = merged.setdefault(conf["Classification"], {"Classification": conf["Classification"]})
        if "Properties" in conf:
            base["Properties"] = {**base.get("Properties", {}), **conf["Properties"]}
        if "Configurations" in conf:
            base["Configurations"] = [*base.get("Configurations", []), *conf["Configurations"]]
    return [_with_properties(conf) for conf in merged.values()]


def _with_properties(conf: Mapping[str, Any]) -> dict[str, Any]:
    nested = {"Configurations": [_with_properties(c) for c in conf["Configurations"]]} if "Configurations" in conf else {}
    return {"Classification": conf["Classification"], "Properties": dict(conf.get("Properties", {})), **nested}


class DataLakeCluster(Construct):
    """The EMR cluster: master, core and task groups, managed scaling, Glue metastore.

    It creates its own :class:`EmrSecurity` (key, security configuration, groups) from ``props`` unless
    one is given, and grants ``roles`` the use of the cluster's key.

    Attributes: ``cluster``, ``cluster_id``, ``cluster_arn``, ``task_group``,
    ``managed_scaling_policy``, ``security`` (:class:`EmrSecurity`), ``prerequisites`` (what the cluster waits for:
    its roles' policy attachments and its groups' rules).
    """

    def __init__(self, scope: Construct, id: str, *, props: EmrClusterProps, roles: DataLakeRoles, bucket: LakeBucket,
                 security: EmrSecurity | None = None, account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        self.props = props
        self.security = security or EmrSecurity(self, "Security", props=props.security_props(), account=account)
        roles.grant_key_use("ClusterKey", self.security.cluster_key_arn)
        security = self.security
        self.prerequisites = [*roles.attachments, *security.network_rules]
        ebs = props.ebs()
        self.cluster = EmrCluster(
            self, "Cluster",
            name=props.name,
            release_label=props.release_label,
            applications=["Hadoop", "Hive", "Spark", *props.extra_applications],
            log_uri=f"s3://{bucket.bucket_name}/{LOGS_PREFIX}",
            service_role=roles.emr_service_role.arn,
            security_configuration=security.security_configuration_name,
            termination_protection=props.termination_protection,
            keep_job_flow_alive_when_no_steps=True,
            # EMR's default, written out: the attribute forces a new cluster if it ever differs.
            scale_down_behavior="TERMINATE_AT_TASK_COMPLETION",
            step_concurrency_level=props.step_concurrency_level,
            ec2_attributes=EmrClusterEc2Attributes(
                subnet_id=props.security.subnet_id,
                instance_profile=roles.emr_instance_profile.arn,
                emr_managed_master_security_group=security.master_security_group_id,
                emr_managed_slave_security_group=security.core_task_security_group_id,
                service_access_security_group=security.service_access_security_group_id,
                additional_master_security_groups=",".join(props.additional_master_security_group_ids) or None,
                additional_slave_security_groups=",".join(props.additional_core_task_security_group_ids) or None,
                key_name=props.key_name,
            ),
            master_instance_group=EmrClusterMasterInstanceGroup(
                instance_type=props.master_instance_type, instance_count=1,
                ebs_config=[EmrClusterMasterInstanceGroupEbsConfig(**ebs)]),
            core_instance_group=EmrClusterCoreInstanceGroup(
                instance_type=props.core_instance_type, instance_count=props.core_instance_count,
                ebs_config=[EmrClusterCoreInstanceGroupEbsConfig(**ebs)]),
            bootstrap_action=[EmrClusterBootstrapAction(name=b.name, path=b.path, args=list(b.args))
                              for b in props.bootstrap_actions] or None,
            configurations_json=json.dumps(merge_configurations(default_configurations(), props.extra_configurations), indent=2),
            tags=with_vendor_tag(props.tags, EMR_MANAGED_POLICY_TAG),
            # Only the queued and running steps are read into the state, not every step the schedules ever ran.
            list_steps_states=["PENDING", "RUNNING"],
            # The nodes and EMR need their policies attached, and the nodes their way out, before the cluster starts.
            depends_on=self.prerequisites,
            # Managed scaling resizes the groups; that is not drift to undo.
            lifecycle=TerraformResourceLifecycle(ignore_changes=["core_instance_group[0].instance_count"]),
        )
        if security.master_security_group is None:  # brought: checkov cannot read their rules here
            mark(self.cluster, "cluster_with_brought_security_groups")
        self.cluster_id = self.cluster.id
        self.cluster_arn = self.cluster.arn
        self.task_group = EmrInstanceGroup(
            self, "TaskGroup", cluster_id=self.cluster.id, name="task", instance_type=props.task_instance_type,
            instance_count=props.task_instance_count, bid_price=props.task_spot_price,
            # The provider has no throughput here: the task group's volumes get gp3's baseline.
            ebs_config=[EmrInstanceGroupEbsConfig(**{k: v for k, v in ebs.items() if k != "throughput"})],
            lifecycle=TerraformResourceLifecycle(ignore_changes=["instance_count"]),
        )
        limits = props.managed_scaling
        self.managed_scaling_policy = EmrManagedScalingPolicy(
            self, "ManagedScaling", cluster_id=self.cluster.id,
            compute_limits=[EmrManagedScalingPolicyComputeLimits(
                unit_type="Instances",
                minimum_capacity_units=limits.minimum_units,
                maximum_capacity_units=limits.maximum_units,
                maximum_ondemand_capacity_units=limits.maximum_on_demand_units,
                maximum_core_capacity_units=limits.maximum_core_units,
            )],
        )
