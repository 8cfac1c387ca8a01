"""Test only: moto's server for the deploy rehearsal (test_deploy_rehearsal), in a process of its own, patched
where moto 5.2.5 lacks or gets wrong a call that Terraform's AWS provider 5.100.0 makes for the lake's stacks.
``moto_server(log)`` runs it: ``python moto_gaps.py`` serves on a free port of 127.0.0.1, prints the port, and
serves until its stdin closes, so that it cannot outlive the test that started it.

Each patch, with the moto limitation it covers:

- EMR ListInstanceFleets: not implemented (moto answers 500, which the SDK retries for minutes). The provider
  reads a cluster's fleets on every refresh; the lake's clusters use instance groups, so the answer is
  AWS's for such a cluster: no fleets.
- EMR GetAutoTerminationPolicy: not implemented; read on every refresh of a cluster. The lake's clusters set
  no auto-termination policy, so the answer is AWS's then: no policy.
- EMR PutManagedScalingPolicy, GetManagedScalingPolicy, RemoveManagedScalingPolicy: not implemented. The patch
  keeps each cluster's policy as put, so a refresh reads back what was applied; removal forgets it.
- EMR AddInstanceGroups: moto adds the groups but answers without InstanceGroupIds (its reply uses a key the
  response shape lacks, so it serializes to {}); the provider then panics (index out of range,
  instance_group.go:206) creating aws_emr_instance_group. The patch answers the new groups' ids.
- EMR RunJobFlow/DescribeCluster: moto drops ScaleDownBehavior, so every plan would replace the cluster
  (scale_down_behavior forces replacement). The patch keeps it on the cluster, where DescribeCluster reads it.
- EMR ListInstanceGroups: moto drops an EBS volume's Throughput, so every plan would replace the cluster
  (ebs_config of the master and core groups forces replacement). The patch answers it.
- EMR region: moto's EMR reads the region from the host name only (elasticmapreduce.<region>.amazonaws.com);
  behind a custom endpoint it falls back to us-east-1, so a us-west-2 stack's cluster gets a us-east-1 ARN
  that flows into the policies, and a client of the stack's region does not find it. The patch falls back to
  the region the request was signed for, as moto's other services do.
- EC2 CreateFlowLogs to S3: moto looks up the whole destination after the ARN's last colon as a bucket name,
  so a destination with a prefix (arn:aws:s3:::bucket/logs/vpc-flow/) is refused as a missing bucket. The
  patch checks the bucket alone and keeps the full destination on the flow log.
- EC2 RevokeSecurityGroupIngress/Egress by rule id: for a rule already gone moto answers
  InvalidPermission.NotFound where AWS answers InvalidSecurityGroupRuleId.NotFound, the code the provider
  skips. Deleting the EMR-managed security groups (revoke_rules_on_delete) revokes each rule from both of
  the groups it joins, concurrently, so one of the two finds it gone. The patch answers as AWS does.
- EC2 DescribeSecurityGroupRules: moto answers a rule that references another group without its description
  (it reads the description of address ranges only), so every plan would set the description of the lake's
  rules between the EMR-managed groups again. The patch answers the referenced group's description.
- S3 bucket policies: with its IAM checks off (the default) moto still evaluates a bucket policy's statements
  on object calls, but not their conditions: a conditional Deny (the lake's DenyRequestsWithoutTls, on
  aws:SecureTransport) denies every object call, so the provider cannot upload, read or delete the lake's
  objects. The patch leaves bucket policies unevaluated, like every other policy in this server.
- Lake Formation RevokePermissions: moto accepts revoking permissions the principal does not hold, where AWS
  answers InvalidInputException "No permissions revoked"; the provider revokes until it gets that answer and
  fails with "empty retryable error received". The patch answers as AWS does.
- Lake Formation RegisterResource: moto drops HybridAccessEnabled (DescribeResource answers without it), so every
  plan would replace the registration of the lake bucket (hybrid_access_enabled forces replacement). The patch
  keeps it on the resource, where DescribeResource and ListResources read it.
- IAM AWS-managed policies (AmazonEMRServicePolicy_v2, which the lake attaches to its EMR service role) exist
  in moto only with MOTO_IAM_LOAD_MANAGED_POLICIES=true, which this process sets before moto loads.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# the services the lake's stacks' resources and data sources call
SERVICES = ("cloudwatch", "ec2", "emr", "events", "glue", "iam", "kms", "lakeformation", "s3", "scheduler", "sns", "sts")


def provider_override(endpoint: str, state: Path) -> dict:
    """An override.tf.json that points a stack's AWS provider at ``endpoint`` (test credentials, path-style S3, few
    SDK retries so that a failing call fails at once) and keeps its state in ``state``."""
    return {"terraform": {"backend": {"local": {"path": str(state)}}},
            "provider": {"aws": {"access_key": "testing", "secret_key": "testing", "skip_credentials_validation": True,
                                 "skip_metadata_api_check": True, "s3_use_path_style": True, "max_retries": 2,
                                 "endpoints": [dict.fromkeys(SERVICES, endpoint)]}}}


@contextmanager
def moto_server(log: Path) -> Iterator[str]:
    """A patched moto server in a process of its own, writing to ``log``; yields its endpoint."""
    with log.open("w") as errors:
        process = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=errors, text=True)
    try:
        port = process.stdout.readline().strip()
        assert port.isdigit(), f"moto did not start:\n{log.read_text()[-3000:]}"
        yield f"http://127.0.0.1:{port}"
    finally:
        process.stdin.close()
        process.wait(timeout=30)


def patch() -> None:
    from moto.core.responses import ActionResult, BaseResponse, EmptyResult
    from moto.ec2.exceptions import InvalidSecurityGroupRuleIdNotFoundError
    from moto.ec2.models.flow_logs import FlowLogsBackend
    from moto.ec2.models.security_groups import SecurityGroupBackend, SecurityGroupRule
    from moto.emr.models import InstanceGroup
    from moto.emr.responses import ElasticMapReduceResponse
    from moto.iam.access_control import PermissionResult
    from moto.lakeformation.exceptions import InvalidInput
    from moto.lakeformation.models import LakeFormationBackend, Permission, Resource
    from moto.lakeformation.responses import LakeFormationResponse
    from moto.s3.models import FakeBucket

    missing = ("list_instance_fleets", "get_auto_termination_policy", "put_managed_scaling_policy",
               "get_managed_scaling_policy", "remove_managed_scaling_policy")
    assert not any(hasattr(ElasticMapReduceResponse, name) for name in missing), "moto has EMR calls this patches: drop them"
    scaling: dict[str, dict] = {}  # cluster id -> ManagedScalingPolicy

    def list_instance_fleets(self):
        self.backend.describe_cluster(self._get_param("ClusterId"))
        return ActionResult({"InstanceFleets": []})

    def get_auto_termination_policy(self):
        self.backend.describe_cluster(self._get_param("ClusterId"))
        return EmptyResult()

    def put_managed_scaling_policy(self):
        cluster = self.backend.describe_cluster(self._get_param("ClusterId"))
        scaling[cluster.id] = self._get_param("ManagedScalingPolicy")
        return EmptyResult()

    def get_managed_scaling_policy(self):
        cluster = self.backend.describe_cluster(self._get_param("ClusterId"))
        return ActionResult({"ManagedScalingPolicy": scaling[cluster.id]} if cluster.id in scaling else {})

    def remove_managed_scaling_policy(self):
        scaling.pop(self.backend.describe_cluster(self._get_param("ClusterId")).id, None)
        return EmptyResult()

    def add_instance_groups(self):
        cluster = self.backend.describe_cluster(self._get_param("JobFlowId"))
        groups = self.backend.add_instance_groups(cluster.id, self._get_param("InstanceGroups", []))
        return ActionResult({"JobFlowId": cluster.id, "InstanceGroupIds": [group.id for group in groups],
                             "ClusterArn": cluster.arn})

    run_job_flow = ElasticMapReduceResponse.run_job_flow

    def run_job_flow_keeping_scale_down(self):
        before = set(self.backend.clusters)
        result = run_job_flow(self)
        for cluster_id in set(self.backend.clusters) - before:
            self.backend.clusters[cluster_id].scale_down_behavior = self._get_param("ScaleDownBehavior")
        return result

    ebs_block_devices = InstanceGroup.ebs_block_devices.fget

    def ebs_block_devices_with_throughput(self):
        devices = ebs_block_devices(self)
        specs = [config["volume_specification"] for config in self.ebs_configuration["ebs_block_device_configs"]
                 for _ in range(config.get("volumes_per_instance", 0))] if self.ebs_configuration else []
        for device, spec in zip(devices, specs, strict=True):
            device["VolumeSpecification"]["Throughput"] = spec.get("throughput")
        return devices

    InstanceGroup.ebs_block_devices = property(ebs_block_devices_with_throughput)

    emr_region = ElasticMapReduceResponse.get_region_from_url

    def get_region_from_url(self, request, full_url):
        if any(regex.search(self.parsed_url.netloc) for regex in self.emr_region_regex):
            return emr_region(self, request, full_url)
        return BaseResponse.get_region_from_url(self, request, full_url)

    for function in (list_instance_fleets, get_auto_termination_policy, put_managed_scaling_policy,
                     get_managed_scaling_policy, remove_managed_scaling_policy, add_instance_groups,
                     get_region_from_url):
        setattr(ElasticMapReduceResponse, function.__name__, function)
    ElasticMapReduceResponse.run_job_flow = run_job_flow_keeping_scale_down

    create_flow_logs = FlowLogsBackend.create_flow_logs

    def create_flow_logs_with_prefix(self, resource_type, resource_ids, traffic_type, deliver_logs_permission_arn,
                                     log_destination_type, log_destination, *args, **kwargs):
        bucket_arn = log_destination.split("/", 1)[0] if log_destination_type == "s3" and log_destination else log_destination
        created, unsuccessful = create_flow_logs(self, resource_type, resource_ids, traffic_type, deliver_logs_permission_arn,
                                                 log_destination_type, bucket_arn, *args, **kwargs)
        for flow_log in created:
            flow_log.log_destination = log_destination
        return created, unsuccessful

    FlowLogsBackend.create_flow_logs = create_flow_logs_with_prefix

    def revoking_known_rule_ids(direction: str):
        revoke = getattr(SecurityGroupBackend, f"revoke_security_group_{direction}")

        def revoke_rules(self, group_name_or_id, *args, security_rule_ids=None, vpc_id=None, **kwargs):
            group = self.get_security_group_by_name_or_id(group_name_or_id, vpc_id)
            held = {rule.id for rule in getattr(group, f"{direction}_rules", ())}
            for rule_id in security_rule_ids or ():
                if group is not None and rule_id not in held:
                    raise InvalidSecurityGroupRuleIdNotFoundError(rule_id)
            return revoke(self, group_name_or_id, *args, security_rule_ids=security_rule_ids, vpc_id=vpc_id, **kwargs)

        return revoke_rules

    for direction in ("ingress", "egress"):
        setattr(SecurityGroupBackend, f"revoke_security_group_{direction}", revoking_known_rule_ids(direction))

    SecurityGroupRule.description = property(lambda self: self.ip_range.get("Description")
                                             or (self.source_group or {}).get("Description"))

    FakeBucket.get_permission = lambda self, action, resource: PermissionResult.NEUTRAL

    revoke_permissions = LakeFormationBackend.revoke_permissions

    def revoke_held_permissions(self, catalog_id, principal, resource, permissions_to_revoke,
                                permissions_with_grant_options_to_revoke):
        wanted = Permission(principal, resource, [], [])
        held = next((p for p in getattr(self.grants.get(catalog_id), "permissions", ()) if p.equal_principal_and_resouce(wanted)),
                    None)
        revoking = set(permissions_to_revoke or ()) | set(permissions_with_grant_options_to_revoke or ())
        if held is None or not revoking & (set(held.permissions) | set(held.permissions_with_grant_options)):
            raise InvalidInput("No permissions revoked. Grantee has no permissions and no grantable permissions on resource")
        revoke_permissions(self, catalog_id, principal, resource, permissions_to_revoke,
                           permissions_with_grant_options_to_revoke)

    LakeFormationBackend.revoke_permissions = revoke_held_permissions

    register_resource = LakeFormationResponse.register_resource

    def register_resource_keeping_hybrid_access(self):
        result = register_resource(self)
        registered = self.lakeformation_backend.resources[self._get_param("ResourceArn")]
        registered.hybrid_access_enabled = bool(self._get_param("HybridAccessEnabled"))
        return result

    LakeFormationResponse.register_resource = register_resource_keeping_hybrid_access
    resource_dict = Resource.to_dict
    Resource.to_dict = lambda self: {**resource_dict(self), "HybridAccessEnabled": getattr(self, "hybrid_access_enabled", False)}


if __name__ == "__main__":
    os.environ["MOTO_IAM_LOAD_MANAGED_POLICIES"] = "true"
    patch()
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    print(server.get_host_and_port()[1], flush=True)
    sys.stdin.read()
