"""cluster_mode="transient": no cluster between syncs. The schedule's RunJobFlow request is the always-on
cluster's settings with the same steps and no life after them; moto's EMR (127.0.0.1) starts it as sent; the
scheduler's role may send it and nothing more. Terraform validate, the scan and the deploy rehearsal cover the
stack (test_terraform, test_policy_scan, test_deploy_rehearsal: the "transient" stack, main.py's in that mode)."""
import json
import re

import pytest
from aws_calls import ACCOUNT, REGION
from iam_evaluator import Request, allowed
from role_policies import permissions
from stack_helpers import named, only, resolve, resources, small_lake_props

pytestmark = [pytest.mark.constructs, pytest.mark.aws]

SCHEDULER_ROLE = "SegmentDataLakeSchedulerRole"


def _schedules(stack: dict) -> dict[str, dict]:
    """Schedule name -> (target API, its request)."""
    return {s["name"]: (s["target"]["arn"].rsplit(":", 1)[1], json.loads(s["target"]["input"]))
            for s in resources(stack, "aws_scheduler_schedule").values()}


def test_a_transient_lake_has_no_cluster_and_its_schedules_start_one_per_tick(synthesized):
    stack = synthesized.stacks["transient"]
    assert not resources(stack, "aws_emr_cluster") and not resources(stack, "aws_emr_managed_scaling_policy")
    assert "emr_cluster_id" not in stack["output"]  # nothing to enter anywhere
    schedules = _schedules(stack)
    assert set(schedules) == {"segment-lake.sync", "segment-lake.compact"}
    api, request = schedules["segment-lake.sync"]
    assert api == "runJobFlow"
    assert request["Instances"]["KeepJobFlowAliveWhenNoSteps"] is False  # EMR ends it after its last step
    assert request["Instances"]["TerminationProtected"] is False
    assert [g["InstanceRole"] for g in request["Instances"]["InstanceGroups"]] == ["MASTER"]  # one node by default
    assert "ManagedScalingPolicy" not in request
    tags = {t["Key"]: t["Value"] for t in request["Tags"]}
    assert tags["vendor"] == "segment" and tags["segment-lake-role"] == "sync"
    assert named(stack, "aws_scheduler_schedule", "Schedules/Sync")["schedule_expression"] == "rate(2 hours)"
    assert named(stack, "aws_scheduler_schedule", "Schedules/Compact")["schedule_expression"] == "cron(15 3 * * ? *)"


def test_the_transient_cluster_is_the_always_on_clusters_settings_with_the_same_steps(synthesized):
    always_on, transient = synthesized.stacks["segment-data-lake"], synthesized.stacks["transient"]
    cluster = only(always_on, "aws_emr_cluster")
    _, request = _schedules(transient)["segment-lake.sync"]
    # main.py made both stacks with the same construct ids: references name the same resources
    assert request["ReleaseLabel"] == cluster["release_label"] and request["LogUri"] == cluster["log_uri"]
    assert request["SecurityConfiguration"] == cluster["security_configuration"]
    assert request["ServiceRole"] == re.sub(r"\.arn\}$", ".name}", cluster["service_role"])
    assert request["JobFlowRole"] == re.sub(r"\.arn\}$", ".name}", cluster["ec2_attributes"]["instance_profile"])
    ec2, instances = cluster["ec2_attributes"], request["Instances"]
    assert (instances["Ec2SubnetId"], instances["EmrManagedMasterSecurityGroup"],
            instances["EmrManagedSlaveSecurityGroup"], instances["ServiceAccessSecurityGroup"]) == (
        ec2["subnet_id"], ec2["emr_managed_master_security_group"], ec2["emr_managed_slave_security_group"],
        ec2["service_access_security_group"])
    assert request["Configurations"] == json.loads(cluster["configurations_json"])
    assert instances["InstanceGroups"][0]["InstanceType"] == cluster["master_instance_group"]["instance_type"]
    tags = {t["Key"]: t["Value"] for t in request["Tags"]}
    assert tags == {**cluster["tags"], "segment-lake-role": "sync"}
    # the steps: the always-on schedules' (one schedule per source there), the same release and arguments
    always_on_steps = [step for name, (api, sent) in _schedules(always_on).items() if name != "segment-lake.compact"
                       for step in sent["Steps"]]
    assert request["Steps"] == always_on_steps and len(always_on_steps) == 1
    assert _schedules(transient)["segment-lake.compact"][1]["Steps"] == _schedules(always_on)["segment-lake.compact"][1][
        "Steps"]


def test_emr_starts_the_request_as_the_schedule_sends_it(synthesized, aws_endpoint):
    """The request, its stack references resolved (computed ids replaced by moto's kind of value), is valid for
    botocore's RunJobFlow and starts a cluster on moto's EMR with its steps, tags and auto-termination."""
    import boto3
    from botocore.session import get_session
    from botocore.validate import validate_parameters

    stack = synthesized.stacks["transient"]
    emr = boto3.client("emr", region_name=REGION, endpoint_url=aws_endpoint)
    # what apply would have made: the security configuration (named by its prefix) and the groups' ids
    configuration = only(stack, "aws_emr_security_configuration")
    created = emr.create_security_configuration(Name=f"{configuration['name_prefix']}20261125",
                                                SecurityConfiguration=json.dumps({"InstanceMetadataServiceConfiguration": {
                                                    "MinimumInstanceMetadataServiceVersion": 2}}))["Name"]
    computed = {"aws_emr_security_configuration": lambda _: created,
                "aws_security_group": lambda group: f"sg-{sum(map(ord, group)):017x}"}
    for name in ("segment-lake.sync", "segment-lake.compact"):
        sent = json.loads(re.sub(r"\$\{(\w+)\.(\w+)\.(?:id|name)\}", lambda m: computed[m[1]](m[2]),
                                 json.dumps(resolve(stack, _schedules(stack)[name][1]))))
        validate_parameters(sent, get_session().get_service_model("emr").operation_model("RunJobFlow").input_shape)
        cluster_id = emr.run_job_flow(**sent)["JobFlowId"]
        cluster = emr.describe_cluster(ClusterId=cluster_id)["Cluster"]
        assert cluster["Name"] == f"segment-data-lake-{name.rsplit('.', 1)[1]}"
        assert cluster["AutoTerminate"] is True and cluster["TerminationProtected"] is False
        assert {"Key": "vendor", "Value": "segment"} in cluster["Tags"]
        assert cluster["ReleaseLabel"] == "emr-7.13.0" and cluster["SecurityConfiguration"] == sent["SecurityConfiguration"]
        steps = emr.list_steps(ClusterId=cluster_id)["Steps"]
        assert [s["Name"] for s in steps] == [s["Name"] for s in sent["Steps"]]
        assert all(s["ActionOnFailure"] == "CONTINUE" for s in steps)  # one source's failure leaves the others
        emr.terminate_job_flows(JobFlowIds=[cluster_id])


def _run_job_flow(request: dict, profile_roles: dict[str, str]) -> list[Request]:
    """What IAM authorizes for Scheduler sending ``request`` as the scheduler's role: RunJobFlow with its tags, the
    tags set on the new cluster, and each role passed to its service."""
    tags = {f"aws:RequestTag/{t['Key']}": t["Value"] for t in request["Tags"]}
    tags["aws:TagKeys"] = [t["Key"] for t in request["Tags"]]
    role = f"arn:aws:iam::{ACCOUNT}:role/"
    return [Request("elasticmapreduce:RunJobFlow", "*", tags),
            Request("elasticmapreduce:AddTags", f"arn:aws:elasticmapreduce:{REGION}:{ACCOUNT}:cluster/j-TICK", tags),
            Request("iam:PassRole", role + request["ServiceRole"], {"iam:PassedToService": "elasticmapreduce.amazonaws.com"}),
            Request("iam:PassRole", role + profile_roles[request["JobFlowRole"]],
                    {"iam:PassedToService": "ec2.amazonaws.com"})]


def test_the_scheduler_may_start_the_lakes_clusters_and_nothing_else(synthesized):
    stack = synthesized.stacks["transient"]
    documents = permissions(stack, SCHEDULER_ROLE)
    profiles = {p["name"]: resolve(stack, p["role"]) for p in resources(stack, "aws_iam_instance_profile").values()}
    for name in ("segment-lake.sync", "segment-lake.compact"):
        needed = _run_job_flow(resolve(stack, _schedules(stack)[name][1]), profiles)
        refused = [request for request in needed if not allowed(documents, request)]
        assert not refused, refused
    _, request = _schedules(stack)["segment-lake.sync"]
    request = resolve(stack, request)
    run, _, service_role, node_role = _run_job_flow(request, profiles)
    # a cluster not tagged as the lake's sync or compaction cluster (a replay's, or anyone's) is refused
    for tags in ({**run.context, "aws:RequestTag/segment-lake-role": "replay"},
                 {k: v for k, v in run.context.items() if k != "aws:RequestTag/vendor"}):
        assert not allowed(documents, Request(run.action, "*", tags))
    # each role goes to its service only; no other role; no steps added to clusters that run
    for passed, wrong in ((service_role, "ec2.amazonaws.com"), (node_role, "elasticmapreduce.amazonaws.com")):
        assert not allowed(documents, Request(passed.action, passed.resource, {"iam:PassedToService": wrong}))
    assert not allowed(documents, Request("iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/Admin",
                                          {"iam:PassedToService": "ec2.amazonaws.com"}))
    assert not allowed(documents, Request("elasticmapreduce:AddJobFlowSteps",
                                          f"arn:aws:elasticmapreduce:{REGION}:{ACCOUNT}:cluster/j-ANY"))
    assert not allowed(documents, Request("elasticmapreduce:TerminateJobFlows",
                                          f"arn:aws:elasticmapreduce:{REGION}:{ACCOUNT}:cluster/j-ANY"))


def test_transient_props_are_checked_at_construction():
    from segment_data_lake import DataLakeConfigError, EmrClusterProps, EmrSecurityProps, ManagedScaling, TransientClusterProps

    with pytest.raises(DataLakeConfigError, match="runs on its master node alone, with no task nodes or managed "
                                                  "scaling: set core_instance_count to 1 or more"):
        TransientClusterProps(task_instance_count=2)
    with pytest.raises(DataLakeConfigError, match="transient core_instance_count"):
        TransientClusterProps(core_instance_count=3, managed_scaling=ManagedScaling(maximum_core_units=2))
    with pytest.raises(DataLakeConfigError, match="cluster_mode is 'transient' but sync_runner is 'segment', which runs "
                                                  "its syncs on one cluster by its id"):
        small_lake_props(cluster_mode="transient", sync_runner="segment")
    with pytest.raises(DataLakeConfigError, match="cluster_mode"):
        small_lake_props(cluster_mode="serverless")
    with pytest.raises(DataLakeConfigError, match="task_spot_price"):
        EmrClusterProps(security=EmrSecurityProps(subnet_id="subnet-0123456789abcdef0"), task_spot_price="cheap")
    assert TransientClusterProps(core_instance_count=2, task_instance_count=4).task_instance_count == 4
