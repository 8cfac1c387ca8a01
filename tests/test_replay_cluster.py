"""The replay cluster: a template in the bucket that is the lake cluster's RunJobFlow request (same roles,
security configuration, release of the app) with one replay step and no life after it, the policy that
starts it, and `segment-lake replay-on-emr`, which starts it on EMR (moto's server here). Terraform validate
and the policy scan cover it through the complete example (test_terraform, test_policy_scan)."""
import json
import re
from datetime import date

import pytest
from aws_calls import ACCOUNT, run_job_flow_authorizations
from iam_evaluator import Request, allowed
from role_policies import policy_document
from stack_helpers import named, only, policy, resolve, resources, statement

from segment_lake.cli import main
from segment_lake.errors import InvalidSettings
from segment_lake.replay_on_emr import replay_request
from segment_lake.settings import ReplayWindow
from segment_lake_contract import REPLAY_TEMPLATES_PREFIX

pytestmark = [pytest.mark.constructs, pytest.mark.aws]

SOURCE = "Kq8dV1bX2c"  # acme_web in examples/complete


def _template(stack: dict) -> dict:
    return json.loads(named(stack, "aws_s3_object", "Replay")["content"])


def _as_name(reference: str) -> str:
    """``${type.x.arn}`` -> ``${type.x.name}``: the cluster names its roles by ARN, RunJobFlow by name."""
    return re.sub(r"\.arn\}$", ".name}", reference)


def test_the_replay_cluster_is_the_lake_cluster_with_one_replay_step_and_no_life_after_it(synthesized):
    stack = synthesized.stacks["complete"]
    cluster = only(stack, "aws_emr_cluster")
    request = _template(stack)["run_job_flow"]
    ec2 = cluster["ec2_attributes"]
    instances = request["Instances"]
    assert request["SecurityConfiguration"] == cluster["security_configuration"]
    assert request["ServiceRole"] == _as_name(cluster["service_role"])
    assert "AutoScalingRole" not in request and "autoscaling_role" not in cluster  # managed scaling needs none
    assert request["JobFlowRole"] == _as_name(ec2["instance_profile"])
    assert (instances["Ec2SubnetId"], instances["EmrManagedMasterSecurityGroup"],
            instances["EmrManagedSlaveSecurityGroup"], instances["ServiceAccessSecurityGroup"]) == (
        ec2["subnet_id"], ec2["emr_managed_master_security_group"], ec2["emr_managed_slave_security_group"],
        ec2["service_access_security_group"])
    assert (request["ReleaseLabel"], request["LogUri"]) == (cluster["release_label"], cluster["log_uri"])
    assert request["Configurations"] == json.loads(cluster["configurations_json"])
    assert [group["InstanceType"] for group in instances["InstanceGroups"]] == [
        cluster["master_instance_group"]["instance_type"], cluster["core_instance_group"]["instance_type"],
        named(stack, "aws_emr_instance_group", "Emr")["instance_type"]]
    tags = {tag["Key"]: tag["Value"] for tag in request["Tags"]}
    assert tags == {**cluster["tags"], "segment-lake-role": "replay"} and tags["vendor"] == "segment"
    # the lake cluster is protected and kept alive; the replay cluster ends with its step, however it ends
    assert cluster["termination_protection"] and cluster["keep_job_flow_alive_when_no_steps"]
    assert instances["KeepJobFlowAliveWhenNoSteps"] is False and instances["TerminationProtected"] is False
    assert request["ManagedScalingPolicy"]["ComputeLimits"]["MaximumCapacityUnits"] == 20  # the example's own
    assert "Steps" not in request  # added with the window


def test_each_sources_replay_step_runs_the_schedules_release_and_options(synthesized):
    stack = synthesized.stacks["complete"]
    sources = _template(stack)["sources"]
    schedules = [json.loads(s["target"]["input"])["Steps"][0] for s in stack["resource"]["aws_scheduler_schedule"].values()
                 if s["name"] != "segment-lake.compact-complete"]
    assert set(sources) == {"Kq8dV1bX2c", "Zt4mN8pQ1r"} and len(schedules) == 2
    for scheduled in schedules:
        args = scheduled["HadoopJarStep"]["Args"]
        source_id = args[args.index("--source-id") + 1]
        step = sources[source_id]["step"]
        sync_at = args.index("sync")
        # the same launcher, step script and bundle: the release the schedules run
        # (a scheduled sync that finds its source busy leaves it to the next tick; a replay waits for it)
        assert args[-2:] == ["--if-busy", "skip"]
        assert step["HadoopJarStep"]["Args"] == [*args[:sync_at], "replay", *args[sync_at + 1:-2], "--wait-for-lock", "180"]
        assert step["HadoopJarStep"]["Jar"] == scheduled["HadoopJarStep"]["Jar"]
        assert step["ActionOnFailure"] == "TERMINATE_CLUSTER" and scheduled["ActionOnFailure"] == "CONTINUE"


def test_the_launcher_may_start_only_tagged_clusters_passing_only_the_lake_roles(synthesized):
    stack = synthesized.stacks["complete"]
    document = policy(named(stack, "aws_iam_policy", "Replay/LauncherPolicy"))
    start = statement(document, "StartOnlyClustersTaggedForTheLake")
    assert start["Action"] == "elasticmapreduce:RunJobFlow"
    assert start["Condition"] == {"StringEquals": {"aws:RequestTag/vendor": "segment"}}
    # RunJobFlow passes the service role to EMR and the instance profile's role to EC2: each to its service only
    launcher = [policy_document(stack, "SegmentDataLakeReplayLauncherPolicy-complete")]
    role = f"arn:aws:iam::{ACCOUNT}:role/"
    for name, service in (("SegmentEMRServiceRole-complete", "elasticmapreduce.amazonaws.com"),
                          ("SegmentEMRInstanceProfileRole-complete", "ec2.amazonaws.com")):
        for to in ("elasticmapreduce.amazonaws.com", "ec2.amazonaws.com", "application-autoscaling.amazonaws.com"):
            request = Request("iam:PassRole", role + name, {"iam:PassedToService": to})
            assert allowed(launcher, request) == (to == service), request
    for tags, expected in (({"aws:RequestTag/vendor": "segment"}, True), ({}, False)):
        assert allowed(launcher, Request("elasticmapreduce:RunJobFlow", "*", tags)) == expected
    read = statement(document, "ReadTheReplayClusterTemplates")
    assert read["Resource"].endswith(f"/{REPLAY_TEMPLATES_PREFIX}*")
    assert {"replay_cluster_template_uri", "replay_launcher_policy_arn"} <= set(stack["output"])
    # the lakes without the option have neither
    assert not any("Replay" in key for key in synthesized.stacks["segment-data-lake"]["resource"]["aws_s3_object"])


def test_a_replay_request_is_a_valid_run_job_flow_request(synthesized):
    from botocore.session import get_session
    from botocore.validate import validate_parameters

    template = resolve(synthesized.stacks["complete"], _template(synthesized.stacks["complete"]))
    request = replay_request(template, SOURCE, ReplayWindow(date(2024, 1, 2), date(2024, 1, 5)))
    validate_parameters(request, get_session().get_service_model("emr").operation_model("RunJobFlow").input_shape)
    assert request["Steps"][0]["HadoopJarStep"]["Args"][-4:] == ["--from", "2024-01-02", "--to", "2024-01-05"]
    assert request["Name"] == "segment-data-lake-complete-replay acme_web 2024-01-02..2024-01-05"
    with pytest.raises(InvalidSettings, match="source 'nope' is not among the lake's sources .Kq8dV1bX2c, Zt4mN8pQ1r."):
        replay_request(template, "nope", ReplayWindow(date(2024, 1, 2), date(2024, 1, 5)))


def test_replay_on_emr_starts_the_cluster_and_names_it(synthesized, aws_endpoint, monkeypatch, capsys):
    import boto3

    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_endpoint)
    template = resolve(synthesized.stacks["complete"], _template(synthesized.stacks["complete"]))
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="replay-lake")
    s3.put_object(Bucket="replay-lake", Key=f"{REPLAY_TEMPLATES_PREFIX}lake-replay.json", Body=json.dumps(template))
    command = ["replay-on-emr", "--lake", "s3://replay-lake/", "--source-id", SOURCE, "--from", "2024-01-02",
               "--to", "2024-01-03", "--aws-region", "us-east-1"]
    assert main(command) == 0
    cluster_id = re.match(r"started (j-\w+) ", capsys.readouterr().out).group(1)
    emr = boto3.client("emr", region_name="us-east-1")
    cluster = emr.describe_cluster(ClusterId=cluster_id)["Cluster"]
    assert cluster["Name"] == "segment-data-lake-complete-replay acme_web 2024-01-02..2024-01-03"
    assert cluster["AutoTerminate"] is True and cluster["TerminationProtected"] is False
    assert {"Key": "vendor", "Value": "segment"} in cluster["Tags"]
    assert cluster["SecurityConfiguration"] == template["run_job_flow"]["SecurityConfiguration"]
    steps = emr.list_steps(ClusterId=cluster_id)["Steps"]
    assert len(steps) == 1 and steps[0]["ActionOnFailure"] == "TERMINATE_CLUSTER"
    args = steps[0]["Config"]["Args"]
    assert args == template["sources"][SOURCE]["step"]["HadoopJarStep"]["Args"] + [
        "--from", "2024-01-02", "--to", "2024-01-03"]

    # a second template: the cluster must be named; a dry run prints the request and starts nothing
    s3.put_object(Bucket="replay-lake", Key=f"{REPLAY_TEMPLATES_PREFIX}other.json", Body=json.dumps(template))
    assert main(command) == 1
    assert "s3://replay-lake/ has replay clusters lake-replay, other: pass --cluster-name" in capsys.readouterr().err
    assert main([*command, "--cluster-name", "other", "--dry-run"]) == 0
    sent = json.loads(capsys.readouterr().out)  # the request, as the command sends it
    assert sent["Steps"][0]["HadoopJarStep"]["Args"][-1] == "2024-01-03"
    assert len(emr.list_clusters()["Clusters"]) == 1

    # every call the command makes, as IAM authorizes it, is allowed to the launcher policy, and no more
    stack = synthesized.stacks["complete"]
    launcher = [policy_document(stack, "SegmentDataLakeReplayLauncherPolicy-complete")]
    profiles = {p["name"]: resolve(stack, p["role"]) for p in resources(stack, "aws_iam_instance_profile").values()}
    bucket = resolve(stack, stack["output"]["s3_bucket"]["value"])  # the lake's, where its templates are
    needed = run_job_flow_authorizations(sent, bucket, f"{REPLAY_TEMPLATES_PREFIX}other.json", profiles)
    assert not sent.get("AutoScalingRole") and len(needed) == 6
    refused = [request for request in needed if not allowed(launcher, request)]
    assert not refused, refused
    untagged = {**sent, "Tags": [t for t in sent["Tags"] if t["Key"] != "vendor"]}
    run_untagged = run_job_flow_authorizations(untagged, bucket, "x/other.json", profiles)[2]
    assert not allowed(launcher, run_untagged)


@pytest.mark.parametrize("lake, expected", [
    ("/tmp/lake", "--lake '/tmp/lake' is not in S3: a replay on EMR needs the lake bucket"),
    ("s3://no-template-here/", "no replay cluster template in s3://no-template-here/segment-lake-replay/: deploy"),
])
def test_replay_on_emr_refuses_a_lake_without_a_template(aws_endpoint, monkeypatch, capsys, lake, expected):
    import boto3

    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_endpoint)
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="no-template-here")
    assert main(["replay-on-emr", "--lake", lake, "--source-id", SOURCE, "--from", "2024-01-02", "--to", "2024-01-03",
                 "--aws-region", "us-east-1"]) == 1
    assert expected in capsys.readouterr().err


def test_replay_cluster_props_are_checked_at_construction():
    from segment_data_lake import DataLakeConfigError, EmrClusterProps, EmrSecurityProps, ManagedScaling, ReplayClusterProps

    cluster = EmrClusterProps(security=EmrSecurityProps(subnet_id="subnet-0123456789abcdef0"), name="lake one")
    resolved = ReplayClusterProps().resolved(cluster)
    assert (resolved.name, resolved.core_instance_count, resolved.managed_scaling) == (
        "lake-one-replay", 2, cluster.managed_scaling)
    with pytest.raises(DataLakeConfigError, match=r"core_instance_count \(3\) is greater than "
                                                  r"replay cluster managed_scaling maximum_core_units \(2\)"):
        ReplayClusterProps(core_instance_count=3).resolved(cluster)
    with pytest.raises(DataLakeConfigError, match="replay cluster name"):
        ReplayClusterProps(name="a/b")
    assert ReplayClusterProps(core_instance_count=3, managed_scaling=ManagedScaling(maximum_core_units=4)).resolved(
        cluster).core_instance_count == 3
